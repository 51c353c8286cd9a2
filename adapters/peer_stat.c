/* The statistical check of a peer on a plan whose draws cannot be handed
 * over (gaussian noise's values, dropout's masks; docs/peers.md,
 * Equivalence). The peer draws its own noise, so its batches cannot equal
 * the reference's; what must hold is that its output differs from the
 * reference's only as much as two honest draws of the noise differ. sluice
 * computes the reference R and two more samples R2 and R3 of the same
 * pipeline with only those draws keyed anew (sl_export_rekeyed): every
 * exported decision, the order and every deterministic op are identical.
 * Then per f32 field, over every value of every batch, the residual
 * e = P - R (P the peer's batch) and the null residual e0 = R2 - R3 are
 * independent and, when the peer did the same work, identically
 * distributed; their means and mean squares must agree within k standard
 * errors. A field no draw reaches (e0 all zero), and every field that is
 * not f32, must be bitwise equal. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "sluice/records/export.h"

void sl__moments_add(sl__moments *m, double x)
{
    double x2 = x * x;
    m->n += 1.0;
    m->sum += x;
    m->sum2 += x2;
    m->sum4 += x2 * x2;
}

bool sl__residuals_agree(const sl__moments *e, const sl__moments *e0, double k, char *why, size_t size)
{
    if (e->n < 2 || e0->n != e->n) {
        snprintf(why, size, "too few values to compare (%.0f)", e->n);
        return false;
    }
    double n = e->n;
    /* Under the hypothesis both residuals have mean 0, so the raw second
     * moment is the variance; the standard error of a mean square is
     * sqrt((E x^4 - (E x^2)^2) / n), estimated from the samples. */
    double mean = e->sum / n, mean0 = e0->sum / n;
    double sq = e->sum2 / n, sq0 = e0->sum2 / n;
    double se_mean = sqrt(sq / n + sq0 / n);
    double var4 = fmax(e->sum4 / n - sq * sq, 0.0), var4_0 = fmax(e0->sum4 / n - sq0 * sq0, 0.0);
    double se_sq = sqrt(var4 / n + var4_0 / n);
    if (!(fabs(mean - mean0) <= k * se_mean)) {
        snprintf(why, size, "its residual's mean %.4g is %.1f standard errors from the reference's %.4g", mean,
                 se_mean > 0 ? fabs(mean - mean0) / se_mean : INFINITY, mean0);
        return false;
    }
    if (!(fabs(sq - sq0) <= k * se_sq)) {
        snprintf(why, size,
                 "its residual's spread (rms %.4g) is %.1f standard errors from that of two reference draws "
                 "(rms %.4g)",
                 sqrt(sq), se_sq > 0 ? fabs(sq - sq0) / se_sq : INFINITY, sqrt(sq0));
        return false;
    }
    return true;
}

typedef struct stat_state {
    const sl_pipeline *pipelines[3]; /* R, R2, R3 */
    sl_batch *batches[3];
    sl__moments e[SL_MAX_FIELDS], e0[SL_MAX_FIELDS];
    int64_t differing[SL_MAX_FIELDS]; /* values of P != R, for fields no draw reaches */
} stat_state;

static bool same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Batch k's field f from the peer against R, R2 and R3. */
static bool compare_field(stat_state *s, int f, const sl_tensor *peer, int64_t k, char *why, size_t size)
{
    const sl_tensor *r = &s->batches[0]->fields[f];
    const char *name = s->batches[0]->schema.fields[f].name;
    bool shape_ok = peer->dtype == r->dtype && peer->shape.rank == r->shape.rank;
    for (int d = 0; shape_ok && d < r->shape.rank; d++)
        shape_ok = peer->shape.dims[d] == r->shape.dims[d];
    if (!shape_ok) {
        snprintf(why, size,
                 "batch %" PRId64 " field '%s' is %s rank %d, the reference's %s rank %d (or its dims differ)", k, name,
                 sl_dtype_name(peer->dtype), peer->shape.rank, sl_dtype_name(r->dtype), r->shape.rank);
        return false;
    }
    size_t count = (size_t)sl_shape_numel(&r->shape);
    if (r->dtype != SL_F32) {
        if (memcmp(peer->data, r->data, sl_tensor_nbytes(r)) != 0) {
            snprintf(why, size, "batch %" PRId64 " field '%s' (%s, no draws) differs from the reference's", k, name,
                     sl_dtype_name(r->dtype));
            return false;
        }
        return true;
    }
    const float *p = peer->data, *r1 = r->data;
    const float *r2 = s->batches[1]->fields[f].data, *r3 = s->batches[2]->fields[f].data;
    for (size_t i = 0; i < count; i++) {
        double e = (double)p[i] - (double)r1[i], e0 = (double)r2[i] - (double)r3[i];
        if (!isfinite(e) || !isfinite(e0)) {
            /* A NaN or infinity the pipeline passes through is no draw:
             * the peer must have the reference's bits there. */
            if (!same_bits(p[i], r1[i])) {
                snprintf(why, size, "batch %" PRId64 " field '%s' value %zu is %g where the reference has %g", k, name,
                         i, (double)p[i], (double)r1[i]);
                return false;
            }
            continue;
        }
        sl__moments_add(&s->e[f], e);
        sl__moments_add(&s->e0[f], e0);
        s->differing[f] += !same_bits(p[i], r1[i]);
    }
    return true;
}

sl_status sl__peer_statistical_check(const sl_pipeline *pipeline, const sl__peer_batches *kept, bool *agree, char *why,
                                     size_t size, sl_err *err)
{
    *agree = false;
    stat_state s;
    memset(&s, 0, sizeof s);
    sl_pipeline *rekeyed[2] = {NULL, NULL};
    sl_status st = SL_OK;
    for (int i = 0; i < 2 && !st; i++)
        st = sl_export_rekeyed(pipeline, (uint32_t)(i + 1), &rekeyed[i], err);
    s.pipelines[0] = pipeline;
    s.pipelines[1] = rekeyed[0];
    s.pipelines[2] = rekeyed[1];
    const sl_schema *schema = sl_pipeline_output_schema(pipeline);
    int64_t capacity = sl_pipeline_get_spec(pipeline)->batch_size;
    for (int i = 0; i < 3 && !st; i++)
        st = sl_batch_create(schema, capacity, &s.batches[i], err);
    bool ok = true;
    sl_position pos = {0, 0};
    for (int64_t k = 0; k < kept->count && !st && ok; k++) {
        for (int i = 0; i < 3 && !st; i++)
            st = sl_pipeline_produce(s.pipelines[i], sl_kernels_reference(), pos, s.batches[i], err);
        for (int f = 0; f < schema->nfields && !st && ok; f++)
            ok = compare_field(&s, f, &kept->batches[k]->fields[f], k, why, size);
        pos = sl_position_advance(pipeline, pos, 1);
    }
    for (int f = 0; f < schema->nfields && !st && ok; f++) {
        if (schema->fields[f].dtype != SL_F32)
            continue;
        char detail[256];
        if (s.e0[f].sum2 == 0.0) {
            /* No draw reaches this field: it is deterministic work. */
            if (s.differing[f]) {
                snprintf(why, size,
                         "field '%s', which no draw reaches, differs from the reference's in %" PRId64 " values",
                         schema->fields[f].name, s.differing[f]);
                ok = false;
            }
        } else if (!sl__residuals_agree(&s.e[f], &s.e0[f], SL__PEER_STAT_K, detail, sizeof detail)) {
            snprintf(why, size, "field '%s': %s", schema->fields[f].name, detail);
            ok = false;
        }
    }
    for (int i = 0; i < 3; i++)
        sl_batch_free(s.batches[i]);
    for (int i = 0; i < 2; i++)
        sl_pipeline_free(rekeyed[i]);
    *agree = !st && ok;
    return st;
}
