/* Output comparison against the reference, bitwise or within a tolerance. */
#include <math.h>
#include <string.h>

#include "sluice/core/compare.h"

bool sl_values_match(sl_dtype dtype, const void *want, const void *got, size_t count, double tolerance, double *worst,
                     size_t *first)
{
    double largest = 0.0;
    size_t first_bad = count;
    if (dtype != SL_F32 || !(tolerance > 0.0)) {
        size_t size = sl_dtype_size(dtype);
        if (memcmp(want, got, count * size) != 0) {
            largest = 1.0;
            first_bad = 0;
            while (memcmp((const char *)want + first_bad * size, (const char *)got + first_bad * size, size) == 0)
                first_bad++;
        }
    } else {
        const float *w = want, *g = got;
        for (size_t i = 0; i < count; i++) {
            double diff = isnan(w[i]) || isnan(g[i]) ? (isnan(w[i]) && isnan(g[i]) ? 0.0 : INFINITY)
                                                     : fabs((double)g[i] - (double)w[i]);
            if (diff > largest)
                largest = diff;
            if (diff > tolerance && first_bad == count)
                first_bad = i;
        }
    }
    if (worst)
        *worst = largest;
    if (first)
        *first = first_bad;
    return first_bad == count;
}

bool sl_batches_match(const sl_batch *want, const sl_batch *got, double tolerance, double *worst, int *field,
                      size_t *first)
{
    double largest = 0.0;
    bool match = want->count == got->count && want->schema.nfields == got->schema.nfields;
    for (int f = 0; match && f < want->schema.nfields; f++) {
        const sl_tensor *a = &want->fields[f], *b = &got->fields[f];
        if (a->dtype != b->dtype || !sl_shape_equal(&a->shape, &b->shape)) {
            match = false;
            if (field)
                *field = f;
            if (first)
                *first = 0;
            break;
        }
        double field_worst;
        size_t count = sl_tensor_nbytes(a) / sl_dtype_size(a->dtype);
        if (!sl_values_match(a->dtype, a->data, b->data, count, tolerance, &field_worst, first)) {
            match = false;
            if (field)
                *field = f;
        }
        largest = field_worst > largest ? field_worst : largest;
    }
    if (worst)
        *worst = largest;
    return match;
}
