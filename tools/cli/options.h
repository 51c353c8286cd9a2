/* Each command's options, declared once: name, argument, kind, range and
 * help text in one initializer, from which the command's parsing and its
 * --help are both made (as Google Benchmark declares its flags), so that
 * an option cannot be accepted without being listed, nor listed without
 * being accepted. `sluice help --options` prints every declaration, and
 * tests/cli/test_options.sh holds each one to the command's --help and to
 * its parser. CONTRIBUTING.md, "Add an option to a command", says how to
 * add one. */
#ifndef SLUICE_TOOLS_OPTIONS_H
#define SLUICE_TOOLS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sl__cli;

/* What an option's value is, and so how it is read and where it goes. */
typedef enum sl__option_kind {
    SL__OPTION_FLAG,    /* no value: sets a bool to true */
    SL__OPTION_TEXT,    /* any non-empty text: sets a const char * */
    SL__OPTION_INT,     /* a decimal integer in [min, max], or `word`: sets an int or an int64_t */
    SL__OPTION_U64,     /* a decimal unsigned 64-bit integer: sets a uint64_t */
    SL__OPTION_NUMBER,  /* a decimal number in [low, high]: sets a double */
    SL__OPTION_PROFILE, /* ci, full or gpu: sets an sl_profile */
    SL__OPTION_CHOICE,  /* one of the words of `arg` ("table|gbench"): sets a const char * */
    SL__OPTION_LIST,    /* any non-empty text, repeatable: appends to an sl__text_list, at most `max` times */
    SL__OPTION_CUSTOM,  /* nothing is stored: `handle` reads the value (a flag when `arg` is NULL) */
} sl__option_kind;

typedef struct sl__option sl__option;

/* What an SL__OPTION_LIST collects: each value in the order given. */
#define SL__TEXT_LIST_MAX 16
typedef struct sl__text_list {
    const char *values[SL__TEXT_LIST_MAX];
    int count;
} sl__text_list;

/* Called once the value is stored (for SL__OPTION_CUSTOM, instead), with
 * the value (NULL for a flag) and the command's arguments: a check the
 * kind cannot make (a path's length), a second word to take (--compare A
 * B), a value to keep elsewhere. Reports a bad value with
 * sl__cli_usage_error. */
typedef void sl__option_handler(struct sl__cli *cli, const sl__option *option, const char *value, void *args);

struct sl__option {
    const char *name; /* "--workers" */
    const char *arg;  /* the value's name in --help ("N", "DIR", "table|gbench"); NULL for a flag */
    sl__option_kind kind;
    size_t offset, size; /* where the value goes in the command's arguments: SL__AT(type, field) */
    int64_t min, max;    /* SL__OPTION_INT's range; SL__OPTION_LIST's most values (1 to SL__TEXT_LIST_MAX) */
    double low, high;    /* SL__OPTION_NUMBER's range */
    const char *word;    /* SL__OPTION_INT: a word taken instead of a number ("auto") */
    int64_t word_value;  /* ... and the value it stands for */
    sl__option_handler *handle;
    const char *section; /* a heading printed above this option in --help (history's actions); may be NULL */
    const char *help;    /* what --help says; '\n' starts another line, indented under the first */
};

/* The place of a field of the command's arguments struct. */
#define SL__AT(type, field) .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)

/* A command: its usage lines, what it does, its options and what follows
 * them in --help (the exit statuses). */
typedef struct sl__command_spec {
    const char *name;     /* "bench" */
    const char *synopsis; /* "sluice bench [options]"; '\n' between several forms */
    const char *about;    /* the paragraph under the usage lines; may be NULL */
    const sl__option *options;
    int noptions;
    const char *epilogue; /* after the options: notes and the exit statuses; may be NULL */
    /* Takes an argument that is not an option (a records folder, an
     * action); false when the command has no place for it, which is then
     * an error naming it. NULL for a command that takes none. */
    bool (*positional)(struct sl__cli *cli, const char *arg, void *args);
    /* Or, for a command that takes one argument that is not an option (a
     * records folder, a script): where it goes, SL__OPERAND(type, field). */
    bool takes_operand;
    size_t operand_offset;
} sl__command_spec;

/* The command's one operand goes to this const char * field. */
#define SL__OPERAND(type, field) .takes_operand = true, .operand_offset = offsetof(type, field)

#define SL__COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* Reads argv (argv[0] is the command's name) into args by spec, having
 * checked the declaration (a bad one exits 1, naming the option): -h and
 * --help print the help and exit 0; a declared option is read and stored
 * by its kind, then handed to its handler; anything else goes to the
 * positional handler or is an error naming it (exit 2). Returns the
 * scanner, for the checks that need every option read. */
struct sl__cli sl__options_parse(const sl__command_spec *spec, int argc, char **argv, void *args);
/* The --help text made from the declaration. */
void sl__options_print_help(const sl__command_spec *spec, FILE *out);
/* Whether each option is declared well (a name starting "--", an argument
 * exactly when it takes a value, a field the size its kind stores, a
 * range, help, no name twice); false after naming the first fault on
 * stderr. */
bool sl__options_check(const sl__command_spec *spec);

#endif
