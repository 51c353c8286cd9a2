/* `sluice list`: what the corpus contains and what each adapter can run, so
 * a person can choose --scenarios, --variants and --adapters, and see in
 * advance which runs would be excluded and why. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct list_args {
    sl_profile profile;
} list_args;

static const sl__option list_options[] = {
    {.name = "--profile",
     .arg = "ci|full|gpu",
     .kind = SL__OPTION_PROFILE,
     SL__AT(list_args, profile),
     .help = "mark which variants run at this profile (default ci)"},
};

const sl__command_spec sl__list_spec = {
    .name = "list",
    .synopsis = "sluice list [options]",
    .about = "Lists the scenarios with their variants, sizes (n elements, batch size) at\n"
             "ci and full size, membership of the gate set and the transforms they need;\n"
             "then the adapters with their back end, availability and transforms; then\n"
             "which adapters would be excluded from which variants, and why; then which\n"
             "kernel table each kernel comes from (the choice measured here by default, or\n"
             "the table SLUICE_KERNELS names).",
    .options = list_options,
    .noptions = SL__COUNT(list_options),
};

/* A variant's transform set, found by building it at a token size: the
 * pipeline (not a second description of it) is the one source of truth, and
 * a couple of batches keep the fixture cheap whatever the variant's real
 * size. */
static sl_status variant_transforms(const sl_scenario *scenario, const sl_variant *variant, sl_transform_set *out,
                                    sl_err *err)
{
    sl_profile profile = variant->n[SL_PROFILE_CI] > 0 ? SL_PROFILE_CI : SL_PROFILE_FULL;
    sl_build_options build;
    sl_build_options_init(&build, profile, 42);
    build.n_override = 2 * sl_variant_batch_size(variant, &build);
    sl_scenario_instance *instance = NULL;
    sl_status status = sl_scenario_instantiate(scenario, variant, &build, &instance, err);
    if (status == SL_OK) {
        *out = sl_pipeline_transforms(instance->pipeline);
        sl_scenario_instance_free(instance);
    }
    return status;
}

static void format_count(char *buf, size_t size, int64_t value)
{
    if (value > 0) {
        snprintf(buf, size, "%lld", (long long)value);
    } else {
        snprintf(buf, size, "-");
    }
}

/* Transform sets of every variant, scenario-major, so the exclusion section
 * does not build anything twice; a variant that fails to build has its error
 * in the message array instead. */
typedef struct corpus_transforms {
    int count;
    sl_transform_set *sets;
    char (*errors)[SL_ERR_MAX];
} corpus_transforms;

static void collect_transforms(corpus_transforms *corpus)
{
    corpus->count = 0;
    for (int s = 0; s < sl_scenario_count(); s++) {
        corpus->count += sl_scenario_at(s)->nvariants;
    }
    corpus->sets = sl__cli_alloc((size_t)corpus->count * sizeof *corpus->sets);
    corpus->errors = sl__cli_alloc((size_t)corpus->count * sizeof *corpus->errors);
    int i = 0;
    for (int s = 0; s < sl_scenario_count(); s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        for (int v = 0; v < scenario->nvariants; v++, i++) {
            sl_err err = {0};
            corpus->sets[i] = 0;
            corpus->errors[i][0] = '\0';
            if (variant_transforms(scenario, &scenario->variants[v], &corpus->sets[i], &err) != SL_OK) {
                sl__cli_copy(corpus->errors[i], sizeof corpus->errors[i], err.msg);
            }
        }
    }
}

static void print_scenarios(const sl_profile_settings *profile, const corpus_transforms *corpus)
{
    const char *size = profile->size_profile == SL_PROFILE_FULL ? "full" : "ci";
    printf("SCENARIOS (n elements and batch size bs at each size; profile %s runs the %s sizes,\n"
           "and a variant without one, shown '-', is skipped there)\n",
           profile->name, size);
    char runs_header[32];
    snprintf(runs_header, sizeof runs_header, "at %s", profile->name);
    const char *const headers[] = {"variant", "gate",    runs_header,  "ci n",   "ci bs",
                                   "full n",  "full bs", "transforms", "summary"};
    static const sl__align align[] = {SL__LEFT,  SL__LEFT,  SL__LEFT, SL__RIGHT, SL__RIGHT,
                                      SL__RIGHT, SL__RIGHT, SL__LEFT, SL__LEFT};
    int i = 0;
    for (int s = 0; s < sl_scenario_count(); s++) {
        const sl_scenario *scenario = sl_scenario_at(s);
        printf("\n%s  %s\n    property: %s\n", scenario->id, scenario->title, scenario->property);
        sl__table *table = sl__table_new(9, headers, align);
        for (int v = 0; v < scenario->nvariants; v++, i++) {
            const sl_variant *variant = &scenario->variants[v];
            char ci_n[24], ci_bs[24], full_n[24], full_bs[24], transforms[256];
            /* A batch size without elements is meaningless, so it shows as
             * absent too. */
            int64_t n_ci = variant->n[SL_PROFILE_CI], n_full = variant->n[SL_PROFILE_FULL];
            format_count(ci_n, sizeof ci_n, n_ci);
            format_count(ci_bs, sizeof ci_bs, n_ci > 0 ? variant->batch_size[SL_PROFILE_CI] : 0);
            format_count(full_n, sizeof full_n, n_full);
            format_count(full_bs, sizeof full_bs, n_full > 0 ? variant->batch_size[SL_PROFILE_FULL] : 0);
            bool runs = variant->n[profile->size_profile == SL_PROFILE_FULL ? SL_PROFILE_FULL : SL_PROFILE_CI] > 0;
            if (corpus->errors[i][0] != '\0') {
                snprintf(transforms, sizeof transforms, "? (cannot build)");
            } else {
                sl_transform_set_format(corpus->sets[i], transforms, sizeof transforms);
            }
            const char *cells[] = {variant->name,
                                   variant->gate ? "yes" : "no",
                                   runs ? "yes" : "no",
                                   ci_n,
                                   ci_bs,
                                   full_n,
                                   full_bs,
                                   transforms,
                                   variant->summary};
            sl__table_add_row(table, cells);
        }
        sl__table_print(table, stdout, 4);
        sl__table_free(table);
    }
}

static void print_adapters(const sl_kernel_table *kernels)
{
    static const char *const headers[] = {"adapter", "back end", "kernels", "available", "transforms", "summary"};
    sl__table *table = sl__table_new(6, headers, NULL);
    for (int a = 0; a < sl_adapter_count(); a++) {
        const sl_adapter *adapter = sl_adapter_at(a);
        char reason[256] = "";
        char available[300];
        char transforms[256];
        if (sl_adapter_is_available(adapter, reason, sizeof reason)) {
            snprintf(available, sizeof available, "yes");
        } else {
            snprintf(available, sizeof available, "no: %s", reason);
        }
        sl_transform_set_format(sl_adapter_transforms(adapter), transforms, sizeof transforms);
        const char *cells[] = {adapter->name, adapter->backend, sl_adapter_kernels(adapter, kernels)->name,
                               available,     transforms,       adapter->summary};
        sl__table_add_row(table, cells);
    }
    printf("\nADAPTERS\n\n");
    sl__table_print(table, stdout, 0);
    sl__table_free(table);
}

/* Which table each kernel of the run's table comes from, one row per
 * table: the measured choice for auto, one table throughout for a named
 * one. */
static void print_kernels(const sl_kernel_table *kernels)
{
    static const char *const headers[] = {"table", "kernels"};
    sl__table *table = sl__table_new(2, headers, NULL);
    for (int t = 0; t < sl_kernel_table_count(); t++) {
        char names[1024] = "";
        size_t used = 0;
        for (int e = 0; e < SL_KERNEL_ENTRY_COUNT && used < sizeof names; e++)
            if ((int)kernels->origin[e] == t)
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                         sl_kernel_entry_name(e));
        if (!names[0])
            continue;
        const char *cells[] = {sl_kernel_table_at(t)->name, names};
        sl__table_add_row(table, cells);
    }
    printf("\nKERNELS (%s%s)\n\n", kernels->name,
           kernels->id == SL_TABLE_ASSEMBLED ? ": the choice measured on this machine, 'sluice tune' shows the times"
                                             : "");
    sl__table_print(table, stdout, 0);
    sl__table_free(table);
}

/* Exclusion is decided per variant by the same sl_adapter_supports that
 * sl_bench_run calls, so this list is exactly what a bench run would do. */
static void print_exclusions(const corpus_transforms *corpus)
{
    static const char *const headers[] = {"adapter", "scenario", "variant", "reason"};
    sl__table *table = sl__table_new(4, headers, NULL);
    int rows = 0;
    for (int a = 0; a < sl_adapter_count(); a++) {
        const sl_adapter *adapter = sl_adapter_at(a);
        /* A peer that sluice lists but does not run implements nothing: the
         * ADAPTERS table says why it is unavailable, once, not here per variant. */
        if (sl_adapter_transforms(adapter) == 0)
            continue;
        int i = 0;
        for (int s = 0; s < sl_scenario_count(); s++) {
            const sl_scenario *scenario = sl_scenario_at(s);
            for (int v = 0; v < scenario->nvariants; v++, i++) {
                char reason[SL_ERR_MAX] = "";
                if (corpus->errors[i][0] != '\0') {
                    snprintf(reason, sizeof reason, "unknown: the variant cannot be built: %s", corpus->errors[i]);
                } else if (sl_adapter_supports(adapter, corpus->sets[i], reason, sizeof reason)) {
                    continue;
                }
                const char *cells[] = {adapter->name, scenario->id, scenario->variants[v].name, reason};
                sl__table_add_row(table, cells);
                rows++;
            }
        }
    }
    printf("\nEXCLUSIONS\n\n");
    if (rows == 0) {
        printf("none: every adapter implements every transform of every variant\n");
    } else {
        sl__table_print(table, stdout, 0);
    }
    sl__table_free(table);
}

int sl__cmd_list(int argc, char **argv)
{
    list_args args = {.profile = SL_PROFILE_CI};
    sl__cli cli = sl__options_parse(&sl__list_spec, argc, argv, &args);
    sl_profile profile = args.profile;

    corpus_transforms corpus;
    collect_transforms(&corpus);
    print_scenarios(sl_profile_get(profile), &corpus);
    const sl_kernel_table *kernels = sl__cli_kernels(&cli, NULL);
    print_adapters(kernels);
    print_exclusions(&corpus);
    print_kernels(kernels);
    free(corpus.sets);
    free(corpus.errors);
    return SL__EXIT_OK;
}
