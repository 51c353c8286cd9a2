/* The table printer (report/table.c): a table of text cells printed for a
 * terminal, as Markdown or as HTML, and the escaping it uses. */
#ifndef SLUICE_TOOLS_TABLE_H
#define SLUICE_TOOLS_TABLE_H

#include <stdio.h>

typedef enum sl__align { SL__LEFT = 0, SL__RIGHT } sl__align;

typedef struct sl__table sl__table;

sl__table *sl__table_new(int ncols, const char *const *headers, const sl__align *align);
/* Copies the row's ncols cells. */
void sl__table_add_row(sl__table *table, const char *const *cells);
/* Columns padded to their widest cell (in characters, not bytes), each line
 * indented by indent spaces. */
void sl__table_print(const sl__table *table, FILE *out, int indent);
void sl__table_print_markdown(const sl__table *table, FILE *out);
/* As an HTML <table>; the cell in column class_column (or -1) also becomes
 * the row's CSS class, so a report can colour strengths and gaps. */
void sl__table_print_html(const sl__table *table, FILE *out, int class_column);
/* The same with a coloured swatch before the cell of mark_column in each
 * row r (marks[r], a CSS colour; NULL: none), e.g. an adapter's colour. */
void sl__table_print_html_marked(const sl__table *table, FILE *out, int class_column, int mark_column,
                                 const char *const *marks);
/* Writes text escaped for Markdown, table cells included: HTML's special
 * characters as entities, Markdown's (| \ ` * _ [ ] # ! ~) with a
 * backslash, line breaks and other control characters as spaces, so that a
 * record string can neither end a cell nor inject markup or a link. */
void sl__markdown_escape(FILE *out, const char *text);
/* Writes text with &, <, >, " and ' escaped for HTML. */
void sl__html_escape(FILE *out, const char *text);
void sl__table_free(sl__table *table);

#endif
