/* Seeded synthetic data. The same (spec, seed) gives the same bytes on every
 * machine: every value is a function of (seed, element index) computed with
 * Philox and integer or exactly-rounded float arithmetic only, never libm,
 * whose transcendental functions differ between C libraries. Because each
 * element is generated independently, any slice can be generated alone. */
#ifndef SLUICE_FIXTURES_H
#define SLUICE_FIXTURES_H

#include <stdint.h>

#include "sluice/source.h"
#include "sluice/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_fixture_kind {
    SL_FIXTURE_IMAGES = 0,  /* field "image" u8 [h, w, c] + field "label" i32 [] */
    SL_FIXTURE_TOKENS,      /* field "tokens" i32 []: one stream of `n` tokens */
    SL_FIXTURE_TABULAR,     /* field "features" f32 [features] */
    SL_FIXTURE_FLOATS,      /* field "x" f32 [h, w, c] (c may be 1), and "label" i32 [] when classes > 0 */
    SL_FIXTURE_KIND_COUNT
} sl_fixture_kind;

typedef struct sl_fixture_spec {
    sl_fixture_kind kind;
    int64_t n;              /* elements (images, rows) or tokens (stream) */
    int32_t h, w, c;        /* images and floats */
    int32_t classes;        /* images (>= 1) and floats (0: no labels): labels uniform in [0, classes) */
    int32_t vocab;          /* tokens: ids in [2, vocab); 0 is pad, 1 ends a document */
    int32_t mean_doc_len;   /* tokens: documents have lengths uniform in [1, 2 * mean_doc_len] */
    int32_t features;       /* tabular: columns; column j has its own mean and scale */
} sl_fixture_spec;

const char *sl_fixture_kind_name(sl_fixture_kind kind);

/* Bytes the fixture occupies in memory, all fields together; lets a caller
 * skip a variant that would not fit before allocating anything. */
uint64_t sl_fixture_bytes(const sl_fixture_spec *spec);

/* Generates the fixture into a memory source that owns its buffers. */
sl_status sl_fixture_build(const sl_fixture_spec *spec, uint64_t seed, sl_source **out, sl_err *err);

/* Tabular fixtures draw column j from a distribution with this mean and
 * standard deviation; exposed so tests and scenarios can state expectations
 * independently of the generated data. */
void sl_fixture_tabular_column_params(uint64_t seed, int32_t column, float *mean, float *stddev);

/* Pad and end-of-document token ids of SL_FIXTURE_TOKENS. */
#define SL_TOKEN_PAD 0
#define SL_TOKEN_EOD 1

#ifdef __cplusplus
}
#endif

#endif
