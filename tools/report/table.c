/* The table printer every command's output goes through: columns padded
 * for a terminal, Markdown for summary.md and report.md, HTML for
 * report.html, and the escaping that keeps a record's strings text in
 * both. */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct sl__table {
    int ncols;
    int nrows;
    int capacity;
    char **cells; /* (nrows + 1) x ncols, the header first */
    sl__align *align;
};

sl__table *sl__table_new(int ncols, const char *const *headers, const sl__align *align)
{
    sl__table *table = sl__cli_alloc(sizeof *table);
    *table = (sl__table){.ncols = ncols, .capacity = 16};
    table->cells = sl__cli_alloc((size_t)(table->capacity + 1) * (size_t)ncols * sizeof *table->cells);
    table->align = sl__cli_alloc((size_t)ncols * sizeof *table->align);
    for (int c = 0; c < ncols; c++) {
        table->cells[c] = sl__cli_strdup(headers[c]);
        table->align[c] = align != NULL ? align[c] : SL__LEFT;
    }
    return table;
}

void sl__table_add_row(sl__table *table, const char *const *cells)
{
    if (table->nrows == table->capacity) {
        table->capacity *= 2;
        char **grown = realloc(table->cells, (size_t)(table->capacity + 1) * (size_t)table->ncols * sizeof *grown);
        if (grown == NULL) {
            fputs("sluice: out of memory\n", stderr);
            exit(SL__EXIT_FAILED);
        }
        table->cells = grown;
    }
    table->nrows++;
    for (int c = 0; c < table->ncols; c++) {
        table->cells[table->nrows * table->ncols + c] = sl__cli_strdup(cells[c] != NULL ? cells[c] : "");
    }
}

/* Width on a terminal: UTF-8 continuation bytes take no column, so "µs"
 * lines up with plain ASCII. */
static int text_width(const char *text)
{
    int width = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c != '\0'; c++) {
        width += (*c & 0xC0) != 0x80;
    }
    return width;
}

void sl__table_print(const sl__table *table, FILE *out, int indent)
{
    int *widths = sl__cli_alloc((size_t)table->ncols * sizeof *widths);
    for (int c = 0; c < table->ncols; c++) {
        widths[c] = 0;
        for (int r = 0; r <= table->nrows; r++) {
            int w = text_width(table->cells[r * table->ncols + c]);
            widths[c] = w > widths[c] ? w : widths[c];
        }
    }
    for (int r = 0; r <= table->nrows; r++) {
        /* Blanks are written only when text follows them, so no line ends
         * in padding, whatever cells are empty. */
        int pending = indent;
        for (int c = 0; c < table->ncols; c++) {
            const char *cell = table->cells[r * table->ncols + c];
            int pad = widths[c] - text_width(cell);
            if (table->align[c] == SL__RIGHT) {
                pending += pad;
            }
            if (*cell != '\0') {
                fprintf(out, "%*s%s", pending, "", cell);
                pending = 0;
            }
            if (table->align[c] == SL__LEFT) {
                pending += pad;
            }
            pending += 2;
        }
        fputc('\n', out);
    }
    free(widths);
}

static bool word_character(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

void sl__markdown_escape(FILE *out, const char *text)
{
    const unsigned char *start = (const unsigned char *)text;
    for (const unsigned char *c = start; *c; c++) {
        switch (*c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '|': fputs("\\|", out); break;
        case '_':
            /* Inside a word (checkpoint_bytes) an underscore never starts
             * emphasis, and escaping it would only make the file harder
             * to read. */
            if (c > start && word_character(c[-1]) && word_character(c[1]))
                fputc('_', out);
            else
                fputs("\\_", out);
            break;
        case '\\':
        case '`':
        case '*':
        case '[':
        case ']':
        case '#':
        case '!':
        case '~':
            fputc('\\', out);
            fputc(*c, out);
            break;
        default:
            /* A line break would end the table row; other control
             * characters act on a terminal that shows the file. */
            fputc(*c < 0x20 || *c == 0x7f ? ' ' : *c, out);
        }
    }
}

void sl__table_print_markdown(const sl__table *table, FILE *out)
{
    for (int r = 0; r <= table->nrows; r++) {
        fputc('|', out);
        for (int c = 0; c < table->ncols; c++) {
            fputc(' ', out);
            sl__markdown_escape(out, table->cells[r * table->ncols + c]);
            fputs(" |", out);
        }
        fputc('\n', out);
        if (r == 0) {
            fputc('|', out);
            for (int c = 0; c < table->ncols; c++) {
                fputs(table->align[c] == SL__RIGHT ? " ---: |" : " --- |", out);
            }
            fputc('\n', out);
        }
    }
}

void sl__html_escape(FILE *out, const char *text)
{
    for (const char *c = text; *c; c++) {
        switch (*c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*c, out); break;
        }
    }
}

void sl__table_print_html(const sl__table *table, FILE *out, int class_column)
{
    sl__table_print_html_marked(table, out, class_column, -1, NULL);
}

void sl__table_print_html_marked(const sl__table *table, FILE *out, int class_column, int mark_column,
                                 const char *const *marks)
{
    fputs("<table>\n", out);
    for (int r = 0; r <= table->nrows; r++) {
        const char *cls = r > 0 && class_column >= 0 ? table->cells[r * table->ncols + class_column] : NULL;
        fputs(cls ? "<tr class=\"" : "<tr", out);
        if (cls) {
            sl__html_escape(out, cls);
            fputc('"', out);
        }
        fputc('>', out);
        for (int c = 0; c < table->ncols; c++) {
            const char *tag = r == 0 ? "th" : "td";
            fprintf(out, "<%s%s>", tag, r > 0 && table->align[c] == SL__RIGHT ? " class=\"r\"" : "");
            const char *mark = r > 0 && c == mark_column && marks ? marks[r - 1] : NULL;
            if (mark) {
                fputs("<span class=\"swatch\" style=\"background:", out);
                sl__html_escape(out, mark);
                fputs("\"></span>", out);
            }
            sl__html_escape(out, table->cells[r * table->ncols + c]);
            fprintf(out, "</%s>", tag);
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

void sl__table_free(sl__table *table)
{
    if (table == NULL) {
        return;
    }
    for (int i = 0; i < (table->nrows + 1) * table->ncols; i++) {
        free(table->cells[i]);
    }
    free(table->cells);
    free(table->align);
    free(table);
}
