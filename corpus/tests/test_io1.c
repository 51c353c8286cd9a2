/* IO-1, source back ends: the standard checks for each source, and every
 * source yielding identical batches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

SL_CORPUS_STANDARD_TESTS(io1_memory, "IO-1", "memory")
SL_CORPUS_STANDARD_TESTS(io1_mmap, "IO-1", "mmap")
SL_CORPUS_STANDARD_TESTS(io1_pread, "IO-1", "pread")

Test(io1, every_source_yields_identical_batches)
{
    const char *sources[] = {"memory", "mmap", "pread"};
    run_output out[3];
    for (int s = 0; s < 3; s++) {
        sl_scenario_instance *instance = harness_build("IO-1", sources[s]);
        cr_assert_eq(sl_source_kind_of(instance->source), (sl_source_kind)s, "%s variant reads another source",
                     sources[s]);
        harness_run(instance, "fused", 0, 0, (sl_position){0, 0}, 0, &out[s]);
        sl_scenario_instance_free(instance);
    }
    for (int s = 1; s < 3; s++) {
        cr_assert_eq(out[s].rows, out[0].rows);
        cr_expect_eq(out[s].digest, out[0].digest, "%s differs from memory", sources[s]);
    }
    for (int s = 0; s < 3; s++)
        harness_release(&out[s]);
}

Test(io1, file_sources_clean_up_their_exports)
{
    char dir[64] = "/tmp/sluice-io1-test-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    sl_build_options options;
    sl_build_options_init(&options, SL_PROFILE_CI, 42);
    options.workdir = dir;
    sl_scenario_instance *instance = harness_build_with("IO-1", "pread", &options);
    char workdir[256];
    snprintf(workdir, sizeof workdir, "%s", instance->workdir);
    cr_assert(strncmp(workdir, dir, strlen(dir)) == 0, "work directory %s is outside %s", workdir, dir);
    sl_scenario_instance_free(instance);
    cr_expect_neq(access(workdir, F_OK), 0, "%s still exists after the instance was freed", workdir);
    cr_assert_eq(rmdir(dir), 0);
}
