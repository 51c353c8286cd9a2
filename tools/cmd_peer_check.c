/* `sluice peer-check`: is a loader of one's own bitwise on a scenario, and
 * if not, where does it first differ (sluice/peer_check.h, docs/peers.md
 * "Bring your own loader"). */
#include <stdio.h>

#include "cli.h"
#include "sluice/peer_check.h"
#include "sluice/scenario.h"

static const char usage[] = "usage: sluice peer-check SCRIPT --scenario ID [--variant V] [options]\n"
                            "\n"
                            "Runs the Python loader SCRIPT (written with peers/sluice_peer.py; copy\n"
                            "peers/template_peer.py) on the variant's batches under the peer protocol, as\n"
                            "`sluice bench --adapters peer:SCRIPT` does, and holds every batch to sluice's\n"
                            "reference. Says whether it is bitwise (or within the scenario's tolerance, or\n"
                            "statistically equivalent where the plan's draws are not handed over) and, if\n"
                            "not, the first batch, field, row and value that differ, with both numbers.\n"
                            "Exit status 0 when equivalent, 1 when not, 2 on a usage error.\n"
                            "SLUICE_PYTHON names the Python that runs it (default /usr/bin/python3).\n"
                            "\n"
                            "options:\n"
                            "  --scenario ID       the scenario (sluice list shows them)\n"
                            "  --variant V         its variant (default: its first)\n"
                            "  --profile ci|full   sizes (default ci)\n"
                            "  --batches N         batches from the start of epoch 0 (default: the profile's\n"
                            "                      warmup + measured batches)\n"
                            "  --seed N            fixture and pipeline seed (default 42)\n"
                            "  -h, --help          show this help\n";

int sl__cmd_peer_check(int argc, char **argv)
{
    const char *script = NULL, *scenario_id = NULL, *variant_name = NULL;
    sl_profile profile = SL_PROFILE_CI;
    uint64_t seed = 42;
    int64_t batches = 0;
    sl__cli cli = sl__cli_start("peer-check", argc, argv);
    const char *value;
    while (sl__cli_next(&cli)) {
        if (sl__cli_is_help(&cli)) {
            fputs(usage, stdout);
            return SL__EXIT_OK;
        } else if (sl__cli_option(&cli, "--scenario", &value)) {
            scenario_id = value;
        } else if (sl__cli_option(&cli, "--variant", &value)) {
            variant_name = value;
        } else if (sl__cli_option(&cli, "--profile", &value)) {
            profile = sl__cli_profile(&cli, "--profile", value);
        } else if (sl__cli_option(&cli, "--batches", &value)) {
            batches = sl__cli_int(&cli, "--batches", value, 1, 1 << 20);
        } else if (sl__cli_option(&cli, "--seed", &value)) {
            seed = sl__cli_u64(&cli, "--seed", value);
        } else if (script == NULL && sl__cli_arg(&cli)[0] != '-') {
            script = sl__cli_arg(&cli);
        } else {
            sl__cli_unknown(&cli);
        }
    }
    if (!script || !scenario_id)
        sl__cli_usage_error(&cli, "say the loader SCRIPT and --scenario ID");
    const sl_scenario *scenario = sl_scenario_find(scenario_id);
    if (!scenario)
        sl__cli_usage_error(&cli, "unknown scenario '%s' (sluice list shows them)", scenario_id);
    const sl_variant *variant = variant_name ? sl_scenario_variant(scenario, variant_name) : &scenario->variants[0];
    if (!variant)
        sl__cli_usage_error(&cli, "scenario %s has no variant '%s'", scenario->id, variant_name);
    const sl_profile_settings *settings = sl_profile_get(profile);
    if (batches == 0)
        batches = settings->warmup_batches + settings->measured_batches;

    sl_build_options build;
    sl_build_options_init(&build, profile, seed);
    sl_scenario_instance *instance = NULL;
    sl_err err = {0};
    sl_peer_check_result result;
    sl_status st = sl_scenario_instantiate(scenario, variant, &build, &instance, &err);
    if (st == SL_OK)
        st = sl_peer_check(instance->pipeline, script, batches, scenario->tolerance, &result, &err);
    sl_scenario_instance_free(instance);
    if (st != SL_OK) {
        sl__cli_error("peer-check", "%s on %s/%s: %s", script, scenario->id, variant->name, err.msg);
        return SL__EXIT_FAILED;
    }
    bool equivalent = result.first_batch < 0 && result.equivalence[0] && result.equivalence[0] != 'm';
    printf("%s on %s/%s (%s, %lld batches): %s%s%s\n", script, scenario->id, variant->name, settings->name,
           (long long)batches, equivalent ? result.equivalence : "NOT equivalent",
           result.framework[0] ? "; framework " : "", result.framework);
    if (!equivalent)
        printf("  first difference: %s\n", result.detail);
    else
        printf("  median latency %.1f µs per batch (timing: %s)\n", result.median_latency_ns / 1e3, result.timing);
    return equivalent ? SL__EXIT_OK : SL__EXIT_FAILED;
}
