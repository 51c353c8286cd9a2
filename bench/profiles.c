/* The benchmark profiles of SCENARIOS.md and the defaults of the option
 * structs built from them. */
#include <stddef.h>
#include <strings.h>

#include "sluice/bench/bench.h"
#include "sluice/bench/scenario.h"

/* Indexed by sl_profile. The gpu profile measures the canonical (full) sizes,
 * so its numbers compare directly with the full profile's CPU numbers. */
static const sl_profile_settings profiles[SL_PROFILE_COUNT] = {
    [SL_PROFILE_CI] = {"ci", 3, 20, 3, "cpu", SL_PROFILE_CI},
    [SL_PROFILE_FULL] = {"full", 5, 50, 5, "cpu", SL_PROFILE_FULL},
    [SL_PROFILE_GPU] = {"gpu", 8, 50, 5, "cuda", SL_PROFILE_FULL},
};

const sl_profile_settings *sl_profile_get(sl_profile profile)
{
    if ((int)profile < 0 || profile >= SL_PROFILE_COUNT) {
        return NULL;
    }
    return &profiles[profile];
}

bool sl_profile_parse(const char *name, sl_profile *out)
{
    if (name == NULL) {
        return false;
    }
    for (int i = 0; i < SL_PROFILE_COUNT; i++) {
        if (strcasecmp(name, profiles[i].name) == 0) {
            if (out != NULL) {
                *out = (sl_profile)i;
            }
            return true;
        }
    }
    return false;
}

void sl_build_options_init(sl_build_options *options, sl_profile profile, uint64_t seed)
{
    *options = (sl_build_options){
        .profile = profile,
        .seed = seed,
        .shuffle = true,
        .n_override = 0,
        .batch_override = 0,
        .workdir = NULL,
    };
}

void sl_bench_options_init(sl_bench_options *options, sl_profile profile, uint64_t seed)
{
    *options = (sl_bench_options){
        .profile = profile,
        .seed = seed,
        .repetitions = 0,
        .warmup_batches = -1,
        .measured_batches = 0,
        .workers = 0,
        .kernels = sl_kernels_default(),
    };
}
