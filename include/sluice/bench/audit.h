/* Determinism audits: a manifest of digests, per batch, per field and per
 * row, of every scenario, variant and adapter run for several epochs and
 * seeds; and the comparison of two manifests that names the first
 * difference. Two machines, two compilers or two kernel tables agree when
 * their manifests compare equal. The format is in docs/audit.md. */
#ifndef SLUICE_AUDIT_H
#define SLUICE_AUDIT_H

#include <stdint.h>

#include "sluice/adapters/adapter.h"
#include "sluice/bench/scenario.h"
#include "sluice/core/status.h"
#include "sluice/records/record.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SL_AUDIT_VERSION 1

typedef struct sl_audit sl_audit;

/* How the runs of a manifest were made; recorded, and compared only for
 * the reader's information (two audits with other settings still compare
 * batch by batch where their runs meet). */
typedef struct sl_audit_settings {
    int epochs;
    int64_t batches_per_epoch; /* 0: whole epochs */
    int workers;
    int threads;
    char kernels[32]; /* the optimized table's name; "": sl_kernels_default() */
} sl_audit_settings;

sl_audit *sl_audit_new(const sl_audit_settings *settings);
void sl_audit_free(sl_audit *audit);

/* Runs the adapter on the instance (built with `seed`) from the start of
 * epoch 0 for the settings' epochs and batches, and adds the digests of
 * every batch. */
sl_status sl_audit_add_run(sl_audit *audit, const sl_scenario_instance *instance, const sl_adapter *adapter,
                           uint64_t seed, sl_err *err);
int sl_audit_runs(const sl_audit *audit);

sl_status sl_audit_save(const sl_audit *audit, const sl_environment *env, const char *path, sl_err *err);
/* Refuses a file that is not a sluice audit manifest of this version, or
 * that is malformed or truncated, naming the file and the field. */
sl_status sl_audit_load(const char *path, sl_audit **out, sl_err *err);

/* What a comparison found besides its verdict. */
typedef struct sl_audit_comparison {
    int64_t batches; /* batches compared */
    /* Runs whose bits depend on the kernel table (a scenario with a stated
     * tolerance, MM-2, on a table other than the reference: "exact": false
     * in the manifest) that differ: reported, never a failure. */
    int table_dependent;
    char table_dependent_first[SL_ERR_MAX + 96]; /* the first such difference */
} sl_audit_comparison;

/* SL_OK when every run of a is in b with identical digests, every field's
 * and every row's; otherwise SL_EMISMATCH with the first difference in err
 * (scenario, variant, adapter, seed, epoch, batch, field, row), or the first
 * run a has and b lacks. A table-dependent run that differs is counted in
 * result instead (which may be NULL). */
sl_status sl_audit_compare(const sl_audit *a, const sl_audit *b, sl_audit_comparison *result, sl_err *err);

#ifdef __cplusplus
}
#endif

#endif
