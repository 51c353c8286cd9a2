/* Per-element decisions drawn by rule: how a random op's decisions (a crop's
 * offsets, a flip, a number of turns, a branch) follow from its one Philox
 * block per element, written once for the host and the device.
 *
 * An op with such decisions describes them as a rule (its key and the bounds
 * or probability of each column); sl__decide computes the columns of one
 * element in one epoch. The CPU executors call it through the op (its rows
 * and its exported decisions), the device draws every row's decisions with
 * it in one launch (decide_rows, kernels/device.h): the same key and counter
 * give the same block anywhere, and the same function gives the same
 * columns, so no per-row decision is computed on the host for the device.
 *
 * Plain C11 and C++ (nvcc) alike: no designated initializers, and of libm
 * only sqrtf, which IEEE 754 rounds correctly on both (nvcc's
 * -prec-sqrt=true). */
#ifndef SLUICE_KERNELS_DECIDE_H
#define SLUICE_KERNELS_DECIDE_H

#include <math.h>
#include <stdint.h>

#include "sluice/core/philox.h"
#include "sluice/kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_decide_kind {
    /* Column j (j < columns) is word j of the block below bound[j]. */
    SL_DECIDE_BELOW = 0,
    /* One column: for each word a < words, bound[a] where word a as a unit
     * float is below p, ORed together, then XORed with invert. */
    SL_DECIDE_BITS,
    /* Four columns, random_resized_crop's box (y, x, h, w) of an image of
     * bound[0] x bound[1]: up to ten attempts, attempt a drawing block a;
     * its words 0 and 1 an area fraction in [lo, hi) and an aspect in
     * [1 / ratio, ratio]; a box that fits takes its origin from words 2
     * and 3; the whole image when none fits (as torchvision). */
    SL_DECIDE_RESIZED_CROP,
} sl_decide_kind;

#define SL_DECIDE_RESIZED_CROP_ATTEMPTS 10
/* The most columns a rule writes: a caller's buffer for one element's
 * decisions holds this many, whatever its rule writes. */
#define SL_DECIDE_MAX_COLUMNS           4

/* One op's rule, and where its columns go in a row of the decision table
 * (first, for the device's table; the host writes from column 0). */
typedef struct sl_decide_rule {
    sl_philox_key key;
    int32_t kind;
    int32_t columns; /* BELOW: columns written; BITS: words read (one column) */
    uint32_t bound[4];
    float p;
    uint32_t invert;
    float lo, hi, ratio; /* RESIZED_CROP */
    int32_t first;
} sl_decide_rule;

SL_HOSTDEV void sl__decide_resized_crop(const sl_decide_rule *rule, int64_t element, int64_t epoch, int32_t *out)
{
    const int32_t in_h = (int32_t)rule->bound[0], in_w = (int32_t)rule->bound[1];
    const float k = (rule->ratio - 1.0f) / (rule->ratio + 1.0f);
    const float image_area = (float)in_h * (float)in_w;
    for (uint32_t attempt = 0; attempt < SL_DECIDE_RESIZED_CROP_ATTEMPTS; attempt++) {
        sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, attempt), rule->key);
        float scale = rule->lo + (rule->hi - rule->lo) * sl_u32_to_unit_float(r.v[0]);
        float t = 2.0f * sl_u32_to_unit_float(r.v[1]) - 1.0f;
        float aspect = (1.0f + k * t) / (1.0f - k * t);
        float area = scale * image_area;
        /* The + 0.5f truncation rounds half up. */
        int32_t w = (int32_t)(sqrtf(area * aspect) + 0.5f);
        int32_t h = (int32_t)(sqrtf(area / aspect) + 0.5f);
        if (w >= 1 && w <= in_w && h >= 1 && h <= in_h) {
            out[0] = (int32_t)sl_u32_below(r.v[2], (uint32_t)(in_h - h + 1));
            out[1] = (int32_t)sl_u32_below(r.v[3], (uint32_t)(in_w - w + 1));
            out[2] = h;
            out[3] = w;
            return;
        }
    }
    out[0] = 0;
    out[1] = 0;
    out[2] = in_h;
    out[3] = in_w;
}

/* Element `element`'s decisions in `epoch`, columns of rule into out
 * (room for SL_DECIDE_MAX_COLUMNS, or for the rule's columns where the
 * compiler cannot see which rule it is). */
SL_HOSTDEV void sl__decide(const sl_decide_rule *rule, int64_t element, int64_t epoch, int32_t *out)
{
    if (rule->kind == SL_DECIDE_RESIZED_CROP) {
        sl__decide_resized_crop(rule, element, epoch, out);
        return;
    }
    sl_philox_ctr r = sl_philox4x32_10(sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, 0), rule->key);
    if (rule->kind == SL_DECIDE_BELOW) {
        for (int j = 0; j < rule->columns; j++)
            out[j] = (int32_t)sl_u32_below(r.v[j], rule->bound[j]);
        return;
    }
    uint32_t bits = 0;
    for (int a = 0; a < rule->columns; a++)
        if (sl_u32_to_unit_float(r.v[a]) < rule->p)
            bits |= rule->bound[a];
    out[0] = (int32_t)(bits ^ rule->invert);
}

/* An element's step of an element-wise chain (sl_ew_step) by rule: the
 * same step for every element (CONST), gaussian_noise's step with the
 * element's counter (NOISE), or a step whose value a is drawn from word 0
 * of the element's block: base.a times (k - 2^23) / 2^23, k its top 24 bits
 * (CENTRED, random_brightness), or lo + (hi - lo) u, u its unit float,
 * clamped to hi (UNIFORM, random_scale). */
typedef enum sl_step_kind {
    SL_STEP_CONST = 0,
    SL_STEP_NOISE,
    SL_STEP_CENTRED,
    SL_STEP_UNIFORM,
} sl_step_kind;

typedef struct sl_step_rule {
    sl_ew_step base; /* the step; its key the op's for a drawn one */
    int32_t kind;
    float lo, hi;
} sl_step_rule;

SL_HOSTDEV void sl__step_for(const sl_step_rule *rule, int64_t element, int64_t epoch, sl_ew_step *out)
{
    *out = rule->base;
    if (rule->kind == SL_STEP_CONST)
        return;
    sl_philox_ctr ctr = sl_philox_ctr_for((uint64_t)element, (uint32_t)epoch, 0);
    if (rule->kind == SL_STEP_NOISE) {
        out->ctr = ctr;
        return;
    }
    uint32_t word = sl_philox4x32_10(ctr, rule->base.key).v[0];
    /* Only noise steps carry a key: a drawn value's step is plain. */
    out->key.v[0] = out->key.v[1] = 0;
    if (rule->kind == SL_STEP_CENTRED) {
        /* 2^-23, exact. */
        out->a = rule->base.a * ((float)((int32_t)(word >> 8) - (1 << 23)) * 1.1920928955078125e-07f);
        return;
    }
    float f = rule->lo + (rule->hi - rule->lo) * sl_u32_to_unit_float(word);
    out->a = f > rule->hi ? rule->hi : f;
}

/* The columns a rule writes. */
SL_HOSTDEV int sl__decide_columns(const sl_decide_rule *rule)
{
    return rule->kind == SL_DECIDE_BITS ? 1 : rule->columns;
}

#ifdef __cplusplus
}
#endif

#endif
