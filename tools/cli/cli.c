/* Argument scanning, value parsing and selection shared by every `sluice`
 * subcommand. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* --- errors and memory ------------------------------------------------------- */

static void print_prefix(const char *command)
{
    if (command != NULL) {
        fprintf(stderr, "sluice %s: ", command);
    } else {
        fputs("sluice: ", stderr);
    }
}

/* Messages quote what the user typed; a control character in it (an
 * escape sequence, a carriage return) would otherwise act on the terminal,
 * so every one is written as \xNN. */
static void print_message(const char *fmt, va_list ap)
{
    char text[8192];
    vsnprintf(text, sizeof text, fmt, ap);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if ((*c < 0x20 && *c != '\n') || *c == 0x7f)
            fprintf(stderr, "\\x%02x", *c);
        else
            fputc(*c, stderr);
    }
}

_Noreturn void sl__cli_usage_error(const sl__cli *cli, const char *fmt, ...)
{
    va_list ap;
    print_prefix(cli->command);
    va_start(ap, fmt);
    print_message(fmt, ap);
    va_end(ap);
    if (cli->command != NULL) {
        fprintf(stderr, "\nsee 'sluice %s --help'\n", cli->command);
    } else {
        fputs("\nsee 'sluice --help'\n", stderr);
    }
    exit(SL__EXIT_USAGE);
}

void sl__cli_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    print_prefix(command);
    va_start(ap, fmt);
    print_message(fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void *sl__cli_alloc(size_t size)
{
    void *p = malloc(size > 0 ? size : 1);
    if (p == NULL) {
        fputs("sluice: out of memory\n", stderr);
        exit(SL__EXIT_FAILED);
    }
    return p;
}

char *sl__cli_strdup(const char *text)
{
    size_t n = strlen(text) + 1;
    return memcpy(sl__cli_alloc(n), text, n);
}

void sl__cli_copy(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (size == 0) {
        return;
    }
    n = n < size - 1 ? n : size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* --- scanning ------------------------------------------------------------------ */

sl__cli sl__cli_start(const sl__command_spec *spec, int argc, char **argv)
{
    return (sl__cli){.command = spec ? spec->name : NULL, .spec = spec, .argc = argc, .argv = argv, .index = 0};
}

bool sl__cli_next(sl__cli *cli)
{
    cli->index++;
    return cli->index < cli->argc;
}

const char *sl__cli_arg(const sl__cli *cli)
{
    return cli->argv[cli->index];
}

bool sl__cli_is_help(const sl__cli *cli)
{
    return sl__cli_flag(cli, "--help") || sl__cli_flag(cli, "-h");
}

bool sl__cli_flag(const sl__cli *cli, const char *name)
{
    return strcmp(sl__cli_arg(cli), name) == 0;
}

bool sl__cli_option(sl__cli *cli, const char *name, const char **value)
{
    const char *arg = sl__cli_arg(cli);
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) {
        return false;
    }
    if (arg[n] == '=') {
        *value = arg + n + 1;
    } else if (arg[n] == '\0') {
        /* A following option is never taken as the value: "--profile
         * --quiet" means the value was forgotten, not a profile named
         * "--quiet". */
        if (cli->index + 1 >= cli->argc || strncmp(cli->argv[cli->index + 1], "--", 2) == 0) {
            sl__cli_usage_error(cli, "option %s needs a value", name);
        }
        *value = cli->argv[++cli->index];
    } else {
        return false;
    }
    if (**value == '\0') {
        sl__cli_usage_error(cli, "option %s needs a value", name);
    }
    return true;
}

_Noreturn void sl__cli_unknown(const sl__cli *cli)
{
    const char *arg = sl__cli_arg(cli);
    if (arg[0] == '-') {
        /* "--repetitons=5" is matched on its name alone. */
        char typed[64];
        snprintf(typed, sizeof typed, "%.*s", (int)strcspn(arg, "="), arg);
        const char *names[128] = {"--help"};
        int count = 1;
        for (int i = 0; cli->spec && i < cli->spec->noptions && count < 128; i++)
            names[count++] = cli->spec->options[i].name;
        char hint[96];
        sl__did_you_mean(hint, sizeof hint, typed, names, count);
        sl__cli_usage_error(cli, "unknown option '%s'%s", arg, hint);
    }
    sl__cli_usage_error(cli, "unexpected argument '%s'", arg);
}

/* --- values --------------------------------------------------------------------- */

int64_t sl__cli_int(const sl__cli *cli, const char *option, const char *text, int64_t min, int64_t max)
{
    char *end = NULL;
    errno = 0;
    /* strtoll skips leading space and takes a '+'; --seed never did, and
     * every number on the command line is read the same way: decimal
     * digits, with a '-' only where the option takes negative values (so
     * "-0" is no count of workers). */
    bool digits = (text[0] >= '0' && text[0] <= '9') || (min < 0 && text[0] == '-' && text[1] >= '0' && text[1] <= '9');
    long long value = digits ? strtoll(text, &end, 10) : 0;
    if (!digits || end == text || *end != '\0') {
        sl__cli_usage_error(cli, "option %s: '%s' is not %s", option, text,
                            min < 0 ? "an integer" : "a non-negative integer (decimal digits only)");
    }
    if (errno == ERANGE || value < min || value > max) {
        sl__cli_usage_error(cli, "option %s: %s is out of range; expected %lld to %lld", option, text, (long long)min,
                            (long long)max);
    }
    return (int64_t)value;
}

uint64_t sl__cli_u64(const sl__cli *cli, const char *option, const char *text)
{
    char *end = NULL;
    /* strtoull accepts "-1" and wraps it to 2^64 - 1; a seed of -1 is a
     * mistake, not a request for that number. */
    if (text[0] < '0' || text[0] > '9') {
        sl__cli_usage_error(cli, "option %s: '%s' is not a non-negative integer", option, text);
    }
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (*end != '\0') {
        sl__cli_usage_error(cli, "option %s: '%s' is not a non-negative integer", option, text);
    }
    if (errno == ERANGE) {
        sl__cli_usage_error(cli, "option %s: %s does not fit in 64 bits", option, text);
    }
    return (uint64_t)value;
}

sl_profile sl__cli_profile(const sl__cli *cli, const char *option, const char *text)
{
    sl_profile profile;
    if (!sl_profile_parse(text, &profile)) {
        sl__cli_usage_error(cli, "option %s: unknown profile '%s'; expected ci, full or gpu", option, text);
    }
    return profile;
}

sl__cli_list sl__cli_split(const sl__cli *cli, const char *option, const char *text)
{
    sl__cli_list list = {0};
    int capacity = 1;
    for (const char *c = text; *c != '\0'; c++) {
        capacity += *c == ',';
    }
    list.storage = sl__cli_strdup(text);
    list.items = sl__cli_alloc((size_t)capacity * sizeof *list.items);
    char *item = list.storage;
    for (;;) {
        char *comma = strchr(item, ',');
        if (comma != NULL) {
            *comma = '\0';
        }
        if (*item == '\0') {
            sl__cli_usage_error(cli, "option %s: empty name in list '%s'", option, text);
        }
        list.items[list.count++] = item;
        if (comma == NULL) {
            break;
        }
        item = comma + 1;
    }
    return list;
}

void sl__cli_list_free(sl__cli_list *list)
{
    free(list->items);
    free(list->storage);
    *list = (sl__cli_list){0};
}

/* --- selection ---------------------------------------------------------------- */

/* Writes the valid scenario ids into a usage error. */
static _Noreturn void unknown_scenario(const sl__cli *cli, const char *name)
{
    char ids[1024] = "";
    size_t used = 0;
    const char *names[128] = {"gate", "all"};
    int count = 2;
    for (int s = 0; s < sl_scenario_count() && used < sizeof ids; s++) {
        used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%s", s > 0 ? ", " : "", sl_scenario_at(s)->id);
        if (count < 128)
            names[count++] = sl_scenario_at(s)->id;
    }
    char hint[96];
    sl__did_you_mean(hint, sizeof hint, name, names, count);
    sl__cli_usage_error(cli, "option --scenarios: unknown scenario '%s'%s\nvalid: %s, or 'gate' or 'all'", name, hint,
                        ids);
}

static _Noreturn void unknown_variant(const sl__cli *cli, const sl__selection *selection, const char *name)
{
    char valid[2048] = "";
    size_t used = 0;
    const char *names[256];
    int count = 0;
    for (int s = 0; s < selection->nscenarios && used < sizeof valid; s++) {
        if (selection->variants[s] == 0) {
            continue;
        }
        const sl_scenario *scenario = sl_scenario_at(s);
        used += (size_t)snprintf(valid + used, sizeof valid - used, "\n  %s:", scenario->id);
        for (int v = 0; v < scenario->nvariants && used < sizeof valid; v++) {
            used += (size_t)snprintf(valid + used, sizeof valid - used, " %s", scenario->variants[v].name);
            if (count < 256)
                names[count++] = scenario->variants[v].name;
        }
    }
    char hint[96];
    sl__did_you_mean(hint, sizeof hint, name, names, count);
    sl__cli_usage_error(cli,
                        "option --variants: no selected scenario has a variant '%s'%s\nvariants of the selected "
                        "scenarios:%s",
                        name, hint, valid);
}

static _Noreturn void unknown_adapter(const sl__cli *cli, const char *name)
{
    char names[1024] = "";
    size_t used = 0;
    const char *known[128] = {"all", "peers"};
    int count = 2;
    for (int a = 0; a < sl_adapter_count() && used < sizeof names; a++) {
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", a > 0 ? ", " : "", sl_adapter_at(a)->name);
        if (count < 128)
            known[count++] = sl_adapter_at(a)->name;
    }
    char hint[96];
    sl__did_you_mean(hint, sizeof hint, name, known, count);
    sl__cli_usage_error(cli, "option --adapters: unknown adapter '%s'%s\nvalid: %s", name, hint, names);
}

static uint64_t all_variants(const sl_scenario *scenario)
{
    return scenario->nvariants >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << scenario->nvariants) - 1);
}

static uint64_t gate_variants(const sl_scenario *scenario)
{
    uint64_t mask = 0;
    for (int v = 0; v < scenario->nvariants && v < 64; v++) {
        if (scenario->variants[v].gate) {
            mask |= (uint64_t)1 << v;
        }
    }
    return mask;
}

static void select_scenarios(const sl__cli *cli, const char *text, sl__selection *selection)
{
    sl__cli_list list = sl__cli_split(cli, "--scenarios", text);
    for (int i = 0; i < list.count; i++) {
        const char *name = list.items[i];
        bool all = strcasecmp(name, "all") == 0;
        bool gate = strcasecmp(name, "gate") == 0;
        if (all || gate) {
            for (int s = 0; s < selection->nscenarios; s++) {
                const sl_scenario *scenario = sl_scenario_at(s);
                selection->variants[s] |= all ? all_variants(scenario) : gate_variants(scenario);
            }
            continue;
        }
        const sl_scenario *scenario = sl_scenario_find(name);
        if (scenario == NULL) {
            unknown_scenario(cli, name);
        }
        for (int s = 0; s < selection->nscenarios; s++) {
            if (sl_scenario_at(s) == scenario) {
                selection->variants[s] |= all_variants(scenario);
            }
        }
    }
    sl__cli_list_free(&list);
}

static void filter_variants(const sl__cli *cli, const char *text, sl__selection *selection)
{
    sl__cli_list list = sl__cli_split(cli, "--variants", text);
    uint64_t *kept = sl__cli_alloc((size_t)selection->nscenarios * sizeof *kept);
    memset(kept, 0, (size_t)selection->nscenarios * sizeof *kept);
    for (int i = 0; i < list.count; i++) {
        bool found = false;
        for (int s = 0; s < selection->nscenarios; s++) {
            const sl_scenario *scenario = sl_scenario_at(s);
            if (selection->variants[s] == 0) {
                continue;
            }
            const sl_variant *variant = sl_scenario_variant(scenario, list.items[i]);
            if (variant != NULL) {
                kept[s] |= (uint64_t)1 << (variant - scenario->variants);
                found = true;
            }
        }
        if (!found) {
            unknown_variant(cli, selection, list.items[i]);
        }
    }
    for (int s = 0; s < selection->nscenarios; s++) {
        selection->variants[s] &= kept[s];
    }
    free(kept);
    sl__cli_list_free(&list);
}

static void select_adapters(const sl__cli *cli, const char *text, sl__selection *selection)
{
    sl__cli_list list = sl__cli_split(cli, "--adapters", text);
    for (int i = 0; i < list.count; i++) {
        /* "all" is sluice's own adapters; "peers" the other loaders, which
         * start a Python framework per run, so they run when asked for. */
        bool all = strcasecmp(list.items[i], "all") == 0;
        if (all || strcasecmp(list.items[i], "peers") == 0) {
            for (int a = 0; a < selection->nadapters; a++) {
                bool peer = strncmp(sl_adapter_at(a)->name, "peer:", 5) == 0;
                selection->adapters[a] |= all ? !peer : peer;
            }
            continue;
        }
        const sl_adapter *adapter = sl_adapter_find(list.items[i]);
        if (adapter == NULL) {
            unknown_adapter(cli, list.items[i]);
        }
        /* A loader of the user's (peer:<path>) joins the registry when it is
         * first named, after the selection was sized. */
        if (sl_adapter_count() > selection->nadapters) {
            selection->adapters =
                realloc(selection->adapters, (size_t)sl_adapter_count() * sizeof *selection->adapters);
            if (selection->adapters == NULL) {
                sl__cli_usage_error(cli, "out of memory");
            }
            memset(selection->adapters + selection->nadapters, 0,
                   (size_t)(sl_adapter_count() - selection->nadapters) * sizeof *selection->adapters);
            selection->nadapters = sl_adapter_count();
        }
        for (int a = 0; a < selection->nadapters; a++) {
            selection->adapters[a] |= sl_adapter_at(a) == adapter;
        }
    }
    sl__cli_list_free(&list);
}

void sl__cli_select(const sl__cli *cli, const char *scenarios, const char *variants, const char *adapters,
                    sl__selection *selection)
{
    selection->nscenarios = sl_scenario_count();
    selection->variants = sl__cli_alloc((size_t)selection->nscenarios * sizeof *selection->variants);
    memset(selection->variants, 0, (size_t)selection->nscenarios * sizeof *selection->variants);
    selection->nadapters = sl_adapter_count();
    selection->adapters = sl__cli_alloc((size_t)selection->nadapters * sizeof *selection->adapters);
    memset(selection->adapters, 0, (size_t)selection->nadapters * sizeof *selection->adapters);

    select_scenarios(cli, scenarios != NULL ? scenarios : "all", selection);
    if (variants != NULL) {
        filter_variants(cli, variants, selection);
    }
    select_adapters(cli, adapters != NULL ? adapters : "all", selection);

    bool any = false;
    for (int s = 0; s < selection->nscenarios; s++) {
        any |= selection->variants[s] != 0;
    }
    if (!any) {
        sl__cli_usage_error(cli, "no scenario variant matches --scenarios %s%s%s",
                            scenarios != NULL ? scenarios : "all", variants != NULL ? " --variants " : "",
                            variants != NULL ? variants : "");
    }
}

bool sl__selection_has_variant(const sl__selection *selection, int scenario, int variant)
{
    return variant < 64 && (selection->variants[scenario] >> variant & 1) != 0;
}

void sl__selection_free(sl__selection *selection)
{
    free(selection->variants);
    free(selection->adapters);
    *selection = (sl__selection){0};
}

void sl__variant_args_init(sl__variant_args *args)
{
    *args = (sl__variant_args){.profile = SL_PROFILE_CI, .seed = 42};
}

sl_scenario_instance *sl__cli_instantiate(const sl__cli *cli, sl__variant_args *args, bool first_by_default,
                                          const sl_scenario **scenario, const sl_variant **variant, sl_err *err)
{
    *scenario = sl_scenario_find(args->scenario);
    if (!*scenario)
        sl__cli_usage_error(cli, "unknown scenario '%s' (sluice list shows them)", args->scenario);
    *variant = args->variant      ? sl_scenario_variant(*scenario, args->variant)
               : first_by_default ? &(*scenario)->variants[0]
                                  : NULL;
    if (!*variant)
        sl__cli_usage_error(cli, "scenario %s has no variant '%s'", (*scenario)->id,
                            args->variant ? args->variant : "");
    const sl_profile_settings *settings = sl_profile_get(args->profile);
    if (args->batches == 0)
        args->batches = settings->warmup_batches + settings->measured_batches;
    sl_build_options build;
    sl_build_options_init(&build, args->profile, args->seed);
    sl_scenario_instance *instance = NULL;
    if (sl_scenario_instantiate(*scenario, *variant, &build, &instance, err) != SL_OK)
        return NULL;
    return instance;
}
