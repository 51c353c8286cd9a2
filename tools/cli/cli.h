/* Helpers shared by the `sluice` subcommands: one argument scanner (driven
 * by each command's option declarations, options.h), one way to parse each
 * kind of value, one usage-error path and one scenario and adapter
 * selection, so every command behaves alike. Tables are table.h's. */
#ifndef SLUICE_TOOLS_CLI_H
#define SLUICE_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "options.h"
#include "sluice/sluice.h"
#include "table.h"

/* Exit statuses of every command. */
#define SL__EXIT_OK     0
#define SL__EXIT_FAILED 1 /* a run, a file or a comparison failed */
#define SL__EXIT_USAGE  2 /* the command line was wrong */

/* The longest output folder a command accepts: a record's path adds the
 * profile and a file name of up to 255 bytes, and all must fit PATH_MAX. */
#define SL__MAX_OUTPUT_DIR 3800

/* The subcommands; argv[0] is the command's name. */
int sl__cmd_bench(int argc, char **argv);
int sl__cmd_list(int argc, char **argv);
int sl__cmd_bless(int argc, char **argv);
int sl__cmd_audit(int argc, char **argv);
int sl__cmd_baseline(int argc, char **argv);
int sl__cmd_check(int argc, char **argv);
int sl__cmd_report(int argc, char **argv);
int sl__cmd_export(int argc, char **argv);
int sl__cmd_peer_check(int argc, char **argv);
int sl__cmd_kernels(int argc, char **argv);
int sl__cmd_history(int argc, char **argv);
int sl__cmd_summary(int argc, char **argv);
int sl__cmd_tune(int argc, char **argv);

/* Their options, declared once (options.h): what each parses and what its
 * --help lists. */
extern const sl__command_spec sl__bench_spec, sl__list_spec, sl__bless_spec, sl__audit_spec, sl__baseline_spec,
    sl__check_spec, sl__report_spec, sl__export_spec, sl__peer_check_spec, sl__kernels_spec, sl__history_spec,
    sl__summary_spec, sl__tune_spec;

/* --- scanning arguments ------------------------------------------------------ */

typedef struct sl__cli {
    const char *command;          /* "bench"; NULL for the top level */
    const sl__command_spec *spec; /* the command's options, which a typo is matched against; NULL for the top level */
    int argc;
    char **argv;
    int index; /* the argument being looked at */
} sl__cli;

/* spec is NULL for the top level, `sluice` itself. */
sl__cli sl__cli_start(const sl__command_spec *spec, int argc, char **argv);
/* Moves to the next argument; false when there is none. */
bool sl__cli_next(sl__cli *cli);
/* The argument being looked at. */
const char *sl__cli_arg(const sl__cli *cli);
/* True for -h and --help. */
bool sl__cli_is_help(const sl__cli *cli);
/* True when the argument is the flag `name`. */
bool sl__cli_flag(const sl__cli *cli, const char *name);
/* True when the argument is option `name`, given as "--name VALUE" or
 * "--name=VALUE"; sets *value. A missing or empty value is a usage error. */
bool sl__cli_option(sl__cli *cli, const char *name, const char **value);
/* Reports the current argument as unknown (a usage error). */
_Noreturn void sl__cli_unknown(const sl__cli *cli);

/* Prints "sluice <command>: <message>" and the pointer to --help on stderr,
 * then exits with SL__EXIT_USAGE. */
_Noreturn void sl__cli_usage_error(const sl__cli *cli, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "sluice <command>: <message>" on stderr (no exit): for failures that
 * are not the command line's fault. */
void sl__cli_error(const char *command, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* --- values ------------------------------------------------------------------- */

/* A decimal integer in [min, max]; anything else is a usage error naming
 * the option. */
int64_t sl__cli_int(const sl__cli *cli, const char *option, const char *text, int64_t min, int64_t max);
/* A decimal unsigned 64-bit integer (seeds). */
uint64_t sl__cli_u64(const sl__cli *cli, const char *option, const char *text);
sl_profile sl__cli_profile(const sl__cli *cli, const char *option, const char *text);
/* The kernel table a command runs (tools/cli/kernel_choice.c): the one
 * --kernels named (option_value, NULL when the option was not given), else
 * the one the environment variable SLUICE_KERNELS names, else "auto": the
 * tuned table, the cached choice for this CPU and build or a measurement
 * made now and cached (sl_kernels_auto), said in one line on stderr when
 * it measures. An unknown or unsupported name exits 2 with a message
 * naming the option or variable. */
const sl_kernel_table *sl__cli_kernels(const sl__cli *cli, const char *option_value);
/* As sl__cli_kernels for a command that must name a registered table so
 * that another machine can repeat it (an audit): without a name, the
 * CPU's flag-chosen default; "auto" is refused, saying why. */
const sl_kernel_table *sl__cli_pinned_kernels(const sl__cli *cli, const char *option_value);
/* The tuned table, measured or read once per process; NULL, having said
 * why on stderr, when it cannot be had. command names the command in the
 * messages. */
const sl_kernel_table *sl__cli_auto_kernels(const char *command, sl_kernel_tuning *tuning);
/* Whether a name asks for the tuned table ("auto", any case). */
bool sl__cli_is_auto(const char *name);

/* A comma-separated list of non-empty names. */
typedef struct sl__cli_list {
    int count;
    char **items;
    char *storage;
} sl__cli_list;

sl__cli_list sl__cli_split(const sl__cli *cli, const char *option, const char *text);
void sl__cli_list_free(sl__cli_list *list);

/* --- what to run ---------------------------------------------------------------- */

/* Which scenario variants and adapters a command acts on. */
typedef struct sl__selection {
    int nscenarios;
    uint64_t *variants; /* per scenario: bit v set when variant v is selected */
    int nadapters;
    bool *adapters; /* per adapter index */
} sl__selection;

/* scenarios: "ID[,ID...]", where an item may also be "gate" (the gate
 * variants) or "all"; NULL means all. variants: names that filter the
 * variants of those scenarios; NULL keeps them all. adapters: names; NULL or
 * "all" means every adapter. Unknown names are usage errors that list the
 * valid ones. */
void sl__cli_select(const sl__cli *cli, const char *scenarios, const char *variants, const char *adapters,
                    sl__selection *selection);
bool sl__selection_has_variant(const sl__selection *selection, int scenario, int variant);
void sl__selection_free(sl__selection *selection);

/* --- suggestions ---------------------------------------------------------------- */

/* Edits (insert, delete, substitute, swap neighbours) from a to b, ignoring
 * case. */
size_t sl__edit_distance(const char *a, const char *b);
/* The name nearest to typed, when it is near enough to be the same word
 * mistyped (a third of its letters at most); NULL otherwise. */
const char *sl__suggest(const char *typed, const char *const *names, int count);
/* " (did you mean 'X'?)" for the nearest name, or "" when none is near. */
void sl__did_you_mean(char *buf, size_t size, const char *typed, const char *const *names, int count);

/* --- folders written whole (tools/cli/folders.c) --------------------------------- */

/* Where a folder a command writes came from: this build's commit, the host
 * name and CPU model, and the command line (argv[0] is the subcommand). */
typedef struct sl__origin {
    char commit[48];
    char machine[384];
    char command[2048];
    sl_folder_origin view;
} sl__origin;
void sl__cli_origin(int argc, char **argv, sl__origin *out);

/* A baseline's name becomes a folder name under --baseline-dir: letters,
 * digits, '-', '_' and '.', not starting with '.'. `sluice baseline save`
 * and `sluice check` refuse the same names, so a name means one folder to
 * both. */
void sl__cli_baseline_name(const sl__cli *cli, const char *name);
/* Whether a file name is one a baseline folder holds (a record or the
 * manifest): what lets a baseline saved before manifests be replaced. */
bool sl__baseline_file_name(const char *name);

/* --- memory ------------------------------------------------------------------- */

/* Allocation for the command line tool, which has nothing sensible to do when
 * memory runs out but say so and exit. */
void *sl__cli_alloc(size_t size);
char *sl__cli_strdup(const char *text);
/* Bounded copy that always terminates dst, truncating a long src. */
void sl__cli_copy(char *dst, size_t size, const char *src);

/* The options that name one scenario variant's plan, shared by `sluice
 * export` and `sluice peer-check`: --scenario, --variant, --profile,
 * --batches and --seed. */
typedef struct sl__variant_args {
    const char *scenario, *variant;
    sl_profile profile;
    uint64_t seed;
    int64_t batches;
} sl__variant_args;
void sl__variant_args_init(sl__variant_args *args);
/* Those options' declarations (options.h), for a command whose arguments
 * hold an sl__variant_args at `field`; variant_help says what --variant
 * defaults to there. */
/* Laid out by hand: clang-format indents a macro's second initializer on
 * under its first, which hides that they are five of a kind. */
/* clang-format off */
#define SL__VARIANT_OPTIONS(type, field, variant_help)                                                                 \
    {.name = "--scenario", .arg = "ID", .kind = SL__OPTION_TEXT, SL__AT(type, field.scenario),                         \
     .help = "the scenario (sluice list shows them)"},                                                                 \
    {.name = "--variant", .arg = "V", .kind = SL__OPTION_TEXT, SL__AT(type, field.variant),                            \
     .help = variant_help},                                                                                            \
    {.name = "--profile", .arg = "ci|full", .kind = SL__OPTION_PROFILE, SL__AT(type, field.profile),                   \
     .help = "sizes and the batch count of a bench run (default ci)"},                                                 \
    {.name = "--batches", .arg = "N", .kind = SL__OPTION_INT, SL__AT(type, field.batches), .min = 1,                   \
     .max = 1 << 24,                                                                                                   \
     .help = "batches from the start of epoch 0 (default: the profile's\n"                                             \
             "warmup + measured batches, what one bench repetition runs)"},                                            \
    {.name = "--seed", .arg = "N", .kind = SL__OPTION_U64, SL__AT(type, field.seed),                                   \
     .help = "fixture and pipeline seed (default 42)"}
/* clang-format on */

/* Resolves the variant (its first when --variant was not given and
 * first_by_default) and the batch count (the profile's warmup + measured
 * by default), a usage error when either is unknown; builds its instance
 * (NULL with err set when that fails). */
struct sl_scenario_instance;
struct sl_scenario;
struct sl_variant;
struct sl_scenario_instance *sl__cli_instantiate(const sl__cli *cli, sl__variant_args *args, bool first_by_default,
                                                 const struct sl_scenario **scenario, const struct sl_variant **variant,
                                                 sl_err *err);

/* The batch-all-at-once peers of the records against sluice's fastest
 * adapter of each variant, by throughput (peer_tables.c); NULL when there is
 * none. */
struct sl_record;
sl__table *sl__throughput_table(const struct sl_record *records, int count);

#endif
