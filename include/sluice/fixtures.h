/* Seeded synthetic data. The same (spec, seed) gives the same bytes on every
 * machine: every value is a function of (seed, element index) computed with
 * Philox and integer or exactly-rounded float arithmetic only, never libm,
 * whose transcendental functions differ between C libraries. Because each
 * element is generated independently, any slice can be generated alone. */
#ifndef SLUICE_FIXTURES_H
#define SLUICE_FIXTURES_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/source.h"
#include "sluice/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sl_fixture_kind {
    SL_FIXTURE_IMAGES = 0, /* field "image" u8 [h, w, c] + field "label" i32 [] */
    SL_FIXTURE_TOKENS,     /* field "tokens" i32 []: one stream of `n` tokens */
    SL_FIXTURE_TABULAR,    /* field "features" f32 [features] */
    SL_FIXTURE_FLOATS,     /* field "x" f32 [h, w, c] (c may be 1), and "label" i32 [] when classes > 0 */
    SL_FIXTURE_VOLUMES,    /* field "volume" f32 [d, h, w]: 3D scans with their own intensity level and scale */
    /* field "image" u8 [h, w, c] (c >= 3) + field "text" i32 [seq_capacity]:
     * image-text pairs, each tagged with its element id (see below) */
    SL_FIXTURE_IMAGE_TEXT,
    /* field "wave" f32 [samples] + field "text" i32 [seq_capacity]: speech-like
     * audio at 16 kHz (three tones and noise) with a transcript */
    SL_FIXTURE_AUDIO_TEXT,
    /* DLRM-style rows: field "dense" f32 [features] (non-negative quarter
     * integers with log-uniform magnitudes below 2^22) and field "sparse"
     * i64 [categorical] (raw ids log-uniform in [0, 2^63); column j is
     * missing, SL_FIXTURE_ID_MISSING, with probability (j mod 4) / 10). */
    SL_FIXTURE_SPARSE,
    /* Variable-length text: field "tokens" i32 [max_len] holding `length`
     * ids in [2, vocab) then SL_FIXTURE_NO_TOKEN, and field "length" i32 []
     * uniform in [min_len, max_len]. */
    SL_FIXTURE_SEQUENCES,
    SL_FIXTURE_KIND_COUNT
} sl_fixture_kind;

typedef struct sl_fixture_spec {
    sl_fixture_kind kind;
    int64_t n;       /* elements (images, rows) or tokens (stream) */
    int32_t h, w, c; /* images and floats; volumes use h and w */
    int32_t d;       /* volumes: depth */
    int32_t classes; /* images (>= 1) and floats (0: no labels): labels uniform in [0, classes) */
    int32_t vocab;   /* tokens, sequences: ids in [2, vocab); 0 is pad, 1 ends a document. texts: ids in [3, vocab) */
    int32_t mean_doc_len;     /* tokens: documents, texts: content lengths uniform in [1, 2 * mean_doc_len] */
    int32_t seq_capacity;     /* texts: tokens per element's text field (>= 2 * mean_doc_len + 3) */
    int32_t samples;          /* audio_text: waveform samples per element, at 16 kHz */
    int32_t features;         /* tabular: columns; column j has its own mean and scale. sparse: dense columns */
    int32_t categorical;      /* sparse: categorical id columns */
    int32_t min_len, max_len; /* sequences: lengths uniform in [min_len, max_len]; max_len is the capacity */
} sl_fixture_spec;

const char *sl_fixture_kind_name(sl_fixture_kind kind);

/* Bytes the fixture occupies in memory, all fields together; lets a caller
 * skip a variant that would not fit before allocating anything. */
uint64_t sl_fixture_bytes(const sl_fixture_spec *spec);

/* Generates the fixture into a memory source that owns its buffers. */
sl_status sl_fixture_build(const sl_fixture_spec *spec, uint64_t seed, sl_source **out, sl_err *err);

/* Shard-only generation, for a process that reads a few rows of a large
 * fixture (a rank of a distributed run): sl_fixture_reserve makes a memory
 * source of all spec->n rows that holds none of them yet, in address space
 * that costs no memory until used; sl_fixture_generate_rows generates the
 * rows given (and any that share a memory page with them) with the same
 * bytes sl_fixture_build gives them. Reading a row never generated reads
 * zeros and fails the run that read it, naming the field, rather than
 * passing silently. Only kinds for which sl_fixture_generates_rows is true
 * can do this (floats, the kind DIST-1 and DIST-2 use). */
bool sl_fixture_generates_rows(sl_fixture_kind kind);
sl_status sl_fixture_reserve(const sl_fixture_spec *spec, sl_source **out, sl_err *err);
sl_status sl_fixture_generate_rows(sl_source *source, const sl_fixture_spec *spec, uint64_t seed, const int64_t *ids,
                                   int64_t n, sl_err *err);
/* How many rows of a reserved fixture exist (all of them for any other). */
int64_t sl_fixture_rows_generated(const sl_source *source);

/* Tabular fixtures draw column j from a distribution with this mean and
 * standard deviation; exposed so tests and scenarios can state expectations
 * independently of the generated data. */
void sl_fixture_tabular_column_params(uint64_t seed, int32_t column, float *mean, float *stddev);

/* A volumes fixture's element i is level + scale * (noise + 3 inside a
 * sphere), noise an approximately standard normal value per voxel; level,
 * scale and the sphere are the element's own. Exposed so tests can state
 * expectations (a z-score's conditioning, |mean| / std) independently. */
typedef struct sl_fixture_volume_params {
    float level;       /* in [0, 1000) */
    float scale;       /* in [50, 250) */
    int32_t centre[3]; /* (z, y, x), anywhere in the volume */
    int32_t radius;    /* in [min(d, h, w) / 8, min(d, h, w) / 4], at least 1 */
} sl_fixture_volume_params;

void sl_fixture_volume_params_of(const sl_fixture_spec *spec, uint64_t seed, int64_t element,
                                 sl_fixture_volume_params *out);

/* Pad and end-of-document token ids of SL_FIXTURE_TOKENS, also the pad and
 * end-of-text ids of the text fields. */
#define SL_TOKEN_PAD           0
#define SL_TOKEN_EOD           1
/* A text field's start-of-text token and its first content id. */
#define SL_TOKEN_BOS           2
#define SL_TOKEN_FIRST_CONTENT 3

/* Texts of image_text (and audio_text) fixtures are
 *     [SL_TOKEN_BOS, tag, content (length uniform in [1, 2 mean_doc_len],
 *      ids uniform in [3, vocab)), SL_TOKEN_EOD, SL_TOKEN_PAD ...]
 * where tag = SL_TOKEN_FIRST_CONTENT + element % (vocab - 3) names the
 * element. An image_text image is the images generator's image with its
 * last two channels replaced by constant planes holding the element id's
 * bytes ((element >> 8) & 255, then element & 255): a tag that survives any
 * crop and bilinear resize exactly (a constant image stays constant), so a
 * test can tell which element an augmented image came from. */
/* An audio_text waveform is the sum of three tones, each of an integer
 * frequency uniform in [100, 4000) Hz, an amplitude uniform in [0.05, 0.3)
 * and a phase that is a whole number of 1/16000 turns, plus noise (an
 * Irwin-Hall sum of four uniforms, centred, times 0.01), sampled at 16 kHz
 * and computed in double with sluice's libm-free sine (detmath.h), then
 * rounded to float. */
#define SL_FIXTURE_AUDIO_RATE 16000

static inline int32_t sl_fixture_text_tag(int64_t element, int32_t vocab)
{
    return SL_TOKEN_FIRST_CONTENT + (int32_t)(element % (vocab - SL_TOKEN_FIRST_CONTENT));
}
/* A missing categorical value of SL_FIXTURE_SPARSE (any negative id is
 * missing to hash_ids), and what SL_FIXTURE_SEQUENCES stores past a
 * sequence's length: neither a token nor the pad, so a pipeline that
 * leaves it in place is caught. */
#define SL_FIXTURE_ID_MISSING ((int64_t)-1)
#define SL_FIXTURE_NO_TOKEN   (-1)

#ifdef __cplusplus
}
#endif

#endif
