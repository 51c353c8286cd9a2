/* Parsing and --help made from a command's option declarations
 * (options.h). */
#include "options.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void *field_of(const sl__option *option, void *args)
{
    return (char *)args + option->offset;
}

/* A choice's words are its argument's, "table|gbench"; the message lists
 * them as today's did: "table or gbench". */
static bool is_choice(const char *words, const char *value)
{
    size_t n = strlen(value);
    for (const char *w = words; *w;) {
        size_t len = strcspn(w, "|");
        if (len == n && strncmp(w, value, n) == 0)
            return true;
        w += len + (w[len] == '|');
    }
    return false;
}

static _Noreturn void not_a_choice(const sl__cli *cli, const sl__option *option, const char *value)
{
    char words[256];
    size_t used = 0;
    for (const char *w = option->arg; *w && used < sizeof words;) {
        size_t len = strcspn(w, "|");
        bool last = w[len] == '\0';
        used += (size_t)snprintf(words + used, sizeof words - used, "%s%.*s",
                                 used == 0 ? ""
                                 : last    ? " or "
                                           : ", ",
                                 (int)len, w);
        w += len + !last;
    }
    sl__cli_usage_error(cli, "option %s: '%s' is not %s", option->name, value, words);
}

static double number_in(const sl__cli *cli, const sl__option *option, const char *text)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !(v >= option->low && v <= option->high))
        sl__cli_usage_error(cli, "option %s: '%s' is not a number in [%g, %g]", option->name, text, option->low,
                            option->high);
    return v;
}

static void store(sl__cli *cli, const sl__option *option, const char *value, void *args)
{
    void *field = field_of(option, args);
    switch (option->kind) {
    case SL__OPTION_FLAG: *(bool *)field = true; break;
    case SL__OPTION_TEXT: *(const char **)field = value; break;
    case SL__OPTION_LIST: {
        sl__text_list *list = field;
        if (list->count >= option->max)
            sl__cli_usage_error(cli, "option %s: at most %" PRId64 " times", option->name, option->max);
        list->values[list->count++] = value;
        break;
    }
    case SL__OPTION_CHOICE:
        if (!is_choice(option->arg, value))
            not_a_choice(cli, option, value);
        *(const char **)field = value;
        break;
    case SL__OPTION_INT: {
        int64_t n = option->word && strcmp(value, option->word) == 0
                        ? option->word_value
                        : sl__cli_int(cli, option->name, value, option->min, option->max);
        if (option->size == sizeof(int))
            *(int *)field = (int)n;
        else
            *(int64_t *)field = n;
        break;
    }
    case SL__OPTION_U64: *(uint64_t *)field = sl__cli_u64(cli, option->name, value); break;
    case SL__OPTION_NUMBER: *(double *)field = number_in(cli, option, value); break;
    case SL__OPTION_PROFILE: *(sl_profile *)field = sl__cli_profile(cli, option->name, value); break;
    case SL__OPTION_CUSTOM: break;
    }
}

/* The declared option the current argument is, reading its value; NULL
 * when it is none of them. */
static const sl__option *match(sl__cli *cli, const sl__command_spec *spec, const char **value)
{
    for (int i = 0; i < spec->noptions; i++) {
        const sl__option *option = &spec->options[i];
        *value = NULL;
        if (option->arg == NULL ? sl__cli_flag(cli, option->name) : sl__cli_option(cli, option->name, value))
            return option;
    }
    return NULL;
}

/* An argument that is not an option: the command's operand, or what its
 * positional handler takes; false when it has no place for it. */
static bool take_positional(sl__cli *cli, const sl__command_spec *spec, const char *arg, void *args)
{
    if (spec->positional)
        return spec->positional(cli, arg, args);
    const char **operand = (const char **)((char *)args + spec->operand_offset);
    if (!spec->takes_operand || *operand)
        return false;
    *operand = arg;
    return true;
}

sl__cli sl__options_parse(const sl__command_spec *spec, int argc, char **argv, void *args)
{
    /* A field of the wrong size would be written past; the check costs
     * nothing beside a command's run, so it is made on every one. */
    if (!sl__options_check(spec))
        exit(SL__EXIT_FAILED);
    sl__cli cli = sl__cli_start(spec, argc, argv);
    while (sl__cli_next(&cli)) {
        const char *value;
        const sl__option *option;
        if (sl__cli_is_help(&cli)) {
            sl__options_print_help(spec, stdout);
            exit(SL__EXIT_OK);
        } else if ((option = match(&cli, spec, &value)) != NULL) {
            store(&cli, option, value, args);
            if (option->handle)
                option->handle(&cli, option, value, args);
        } else if (sl__cli_arg(&cli)[0] == '-' || !take_positional(&cli, spec, sl__cli_arg(&cli), args)) {
            sl__cli_unknown(&cli);
        }
    }
    return cli;
}

/* Writes text, each line after the first indented by indent spaces. */
static void print_indented(FILE *out, const char *text, int indent)
{
    for (const char *line = text;;) {
        size_t len = strcspn(line, "\n");
        fprintf(out, "%.*s\n", (int)len, line);
        if (line[len] == '\0')
            break;
        line += len + 1;
        fprintf(out, "%*s", indent, "");
    }
}

void sl__options_print_help(const sl__command_spec *spec, FILE *out)
{
    fputs("usage: ", out);
    print_indented(out, spec->synopsis, 7);
    if (spec->about) {
        fputc('\n', out);
        print_indented(out, spec->about, 0);
    }
    /* The help column: two spaces past the longest "--name ARG". */
    int column = (int)strlen("-h, --help");
    for (int i = 0; i < spec->noptions; i++) {
        const sl__option *option = &spec->options[i];
        int width = (int)strlen(option->name) + (option->arg ? 1 + (int)strlen(option->arg) : 0);
        column = width > column ? width : column;
    }
    column += 2 + 2;
    fputs("\noptions:\n", out);
    for (int i = 0; i < spec->noptions; i++) {
        const sl__option *option = &spec->options[i];
        if (option->section)
            print_indented(out, option->section, 0);
        int width = fprintf(out, "  %s%s%s", option->name, option->arg ? " " : "", option->arg ? option->arg : "");
        fprintf(out, "%*s", column - width, "");
        print_indented(out, option->help, column);
    }
    fprintf(out, "  %-*s%s\n", column - 2, "-h, --help", "show this help");
    if (spec->epilogue) {
        fputc('\n', out);
        print_indented(out, spec->epilogue, 0);
    }
}

static size_t kind_size(const sl__option *option)
{
    switch (option->kind) {
    case SL__OPTION_FLAG: return sizeof(bool);
    case SL__OPTION_TEXT:
    case SL__OPTION_CHOICE: return sizeof(const char *);
    case SL__OPTION_INT: return option->size == sizeof(int) ? sizeof(int) : sizeof(int64_t);
    case SL__OPTION_U64: return sizeof(uint64_t);
    case SL__OPTION_NUMBER: return sizeof(double);
    case SL__OPTION_PROFILE: return sizeof(sl_profile);
    case SL__OPTION_LIST: return sizeof(sl__text_list);
    case SL__OPTION_CUSTOM: return option->size;
    }
    return 0;
}

static bool fault(const sl__command_spec *spec, const sl__option *option, const char *what)
{
    fprintf(stderr, "sluice %s: option %s is declared badly: %s\n", spec->name, option->name ? option->name : "(null)",
            what);
    return false;
}

bool sl__options_check(const sl__command_spec *spec)
{
    for (int i = 0; i < spec->noptions; i++) {
        const sl__option *o = &spec->options[i];
        if (!o->name || strncmp(o->name, "--", 2) != 0 || strlen(o->name) < 3)
            return fault(spec, o, "its name does not start with --");
        if (o->kind != SL__OPTION_CUSTOM && (o->arg == NULL) != (o->kind == SL__OPTION_FLAG))
            return fault(spec, o, "a flag has no argument and every other kind has one");
        if (o->kind != SL__OPTION_CUSTOM && o->size != kind_size(o))
            return fault(spec, o, "its field is not the size its kind stores");
        if (o->kind == SL__OPTION_CUSTOM && !o->handle)
            return fault(spec, o, "a custom option needs a handler");
        if (o->kind == SL__OPTION_INT && o->min > o->max)
            return fault(spec, o, "its range is empty");
        if (o->kind == SL__OPTION_NUMBER && !(o->low <= o->high))
            return fault(spec, o, "its range is empty");
        if (o->kind == SL__OPTION_LIST && (o->max < 1 || o->max > SL__TEXT_LIST_MAX))
            return fault(spec, o, "a list takes 1 to SL__TEXT_LIST_MAX values");
        if (!o->help || !o->help[0])
            return fault(spec, o, "it has no help");
        for (int j = 0; j < i; j++)
            if (strcmp(spec->options[j].name, o->name) == 0)
                return fault(spec, o, "it is declared twice");
    }
    return true;
}
