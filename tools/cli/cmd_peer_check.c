/* `sluice peer-check`: is a loader of one's own bitwise on a scenario, and
 * if not, where does it first differ (sluice/adapters/peer_check.h, docs/peers.md
 * "Bring your own loader"). */
#include <stdio.h>

#include "cli.h"
#include "sluice/adapters/peer_check.h"
#include "sluice/bench/scenario.h"

typedef struct peer_check_args {
    sl__variant_args variant;
    const char *script;
} peer_check_args;

static const sl__option peer_check_options[] = {
    SL__VARIANT_OPTIONS(peer_check_args, variant, "its variant (default: its first)"),
};

const sl__command_spec sl__peer_check_spec = {
    .name = "peer-check",
    .synopsis = "sluice peer-check SCRIPT|peer:NAME --scenario ID [--variant V] [options]",
    .about = "Runs the Python loader SCRIPT (written with peers/sluice_peer.py; copy\n"
             "peers/template_peer.py), or the built-in peer peer:NAME with its own Python\n"
             "and arguments, on the variant's batches under the peer protocol, as\n"
             "`sluice bench --adapters peer:SCRIPT` does, and holds every batch to sluice's\n"
             "reference. Says whether it is bitwise (or within the scenario's tolerance, or\n"
             "statistically equivalent where the plan's draws are not handed over) and, if\n"
             "not, the first batch, field, row and value that differ, with both numbers.\n"
             "Exit status 0 when equivalent, 1 when not, 2 on a usage error.\n"
             "SLUICE_PYTHON names the Python that runs a SCRIPT (default /usr/bin/python3).",
    .options = peer_check_options,
    .noptions = SL__COUNT(peer_check_options),
    SL__OPERAND(peer_check_args, script),
};

int sl__cmd_peer_check(int argc, char **argv)
{
    peer_check_args parsed = {0};
    sl__variant_args_init(&parsed.variant);
    sl__cli cli = sl__options_parse(&sl__peer_check_spec, argc, argv, &parsed);
    sl__variant_args args = parsed.variant;
    const char *script = parsed.script;
    if (!script || !args.scenario)
        sl__cli_usage_error(&cli, "say the loader SCRIPT and --scenario ID");
    const sl_scenario *scenario = NULL;
    const sl_variant *variant = NULL;
    sl_err err = {0};
    sl_peer_check_result result;
    sl_scenario_instance *instance = sl__cli_instantiate(&cli, &args, true, &scenario, &variant, &err);
    sl_status st = instance
                       ? sl_peer_check(instance->pipeline, script, args.batches, scenario->tolerance, &result, &err)
                       : SL_EINVAL;
    sl_scenario_instance_free(instance);
    if (st != SL_OK) {
        sl__cli_error("peer-check", "%s on %s/%s: %s", script, scenario->id, variant->name, err.msg);
        return SL__EXIT_FAILED;
    }
    bool equivalent = result.first_batch < 0 && result.equivalence[0] && result.equivalence[0] != 'm';
    printf("%s on %s/%s (%s, %lld batches): %s%s%s\n", script, scenario->id, variant->name,
           sl_profile_get(args.profile)->name, (long long)args.batches,
           equivalent ? result.equivalence : "NOT equivalent", result.framework[0] ? "; framework " : "",
           result.framework);
    if (!equivalent)
        printf("  first difference: %s\n", result.detail);
    else
        printf("  median latency %.1f µs per batch (timing: %s)\n", result.median_latency_ns / 1e3, result.timing);
    if (equivalent && result.largest_difference > 0.0)
        printf("  largest difference from the reference %.3g\n", result.largest_difference);
    return equivalent ? SL__EXIT_OK : SL__EXIT_FAILED;
}
