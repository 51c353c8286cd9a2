#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sluice/core/digest.h"

/* The canonical form writes field data as the machine holds it, which is
 * little-endian on every platform sluice targets. A big-endian port would
 * have to byte-swap data here, so it must fail to build until it does. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the canonical batch bytes are little-endian");

struct sl_digest {
    XXH3_state_t *state;
};

sl_digest *sl_digest_new(void)
{
    sl_digest *digest = malloc(sizeof *digest);
    if (!digest)
        return NULL;
    digest->state = XXH3_createState();
    if (!digest->state || XXH3_64bits_reset(digest->state) != XXH_OK) {
        sl_digest_free(digest);
        return NULL;
    }
    return digest;
}

/* Integers of the header are encoded byte by byte so that their form does
 * not depend on the host, even though the data bytes do. */
static void add_i64(XXH3_state_t *state, int64_t value)
{
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)((uint64_t)value >> (8 * i));
    XXH3_64bits_update(state, le, sizeof le);
}

static void add_string(XXH3_state_t *state, const char *s)
{
    /* The NUL ends the name, so "ab"+"c" and "a"+"bc" stay distinct. */
    XXH3_64bits_update(state, s, strlen(s) + 1);
}

void sl_digest_add_batch(sl_digest *digest, const sl_batch *batch)
{
    for (int f = 0; f < batch->schema.nfields; f++) {
        const sl_tensor *t = &batch->fields[f];
        add_string(digest->state, batch->schema.fields[f].name);
        add_string(digest->state, sl_dtype_name(t->dtype));
        add_i64(digest->state, t->shape.rank);
        for (int d = 0; d < t->shape.rank; d++)
            add_i64(digest->state, t->shape.dims[d]);
        XXH3_64bits_update(digest->state, t->data, sl_tensor_nbytes(t));
    }
}

uint64_t sl_digest_value(const sl_digest *digest)
{
    return XXH3_64bits_digest(digest->state);
}

void sl_digest_free(sl_digest *digest)
{
    if (!digest)
        return;
    XXH3_freeState(digest->state);
    free(digest);
}

uint64_t sl_digest_bytes(const void *data, size_t size)
{
    return XXH3_64bits(data, size);
}
