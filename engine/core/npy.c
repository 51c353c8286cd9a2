/* NumPy .npy files: a version 1.0 writer and a 1.0/2.0 reader, following
 * numpy/lib/format.py. Only what sluice's dtypes need is accepted; anything
 * else is refused with a message naming the file, never guessed at. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

#include "sluice/core/fileio.h"
#include "sluice/core/npy.h"

/* Array bytes go to and from disk as they lie in memory, and the format
 * says little-endian. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sluice's .npy code assumes a little-endian host"
#endif

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* NumPy pads the header so the data starts on this boundary; readers that
 * map the file then see aligned arrays. */
#define NPY_ALIGN 64

/* Magic, version and a 16-bit header length. */
#define NPY_PRELUDE_V1 10

/* Digits NumPy leaves room for in the leading dimension (len(str(8*2**64-1))). */
#define NPY_GROWTH_DIGITS 21

/* A header is a short dict; anything much longer is corruption, and refusing
 * it early keeps a damaged length field from driving a huge allocation. */
#define NPY_HEADER_MAX (1u << 20)

static const char *const descr_of[SL_DTYPE_COUNT] = {
    [SL_U8] = "|u1",
    [SL_I32] = "<i4",
    [SL_I64] = "<i8",
    [SL_F32] = "<f4",
};

sl_status sl__pread_full(int fd, void *buf, size_t nbytes, off_t offset, const char *path, sl_err *err)
{
    unsigned char *p = buf;
    while (nbytes > 0) {
        ssize_t got = pread(fd, p, nbytes, offset);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return sl_fail(err, SL_EIO, "%s: read of %zu bytes at offset %lld failed: %s", path, nbytes,
                           (long long)offset, strerror(errno));
        }
        if (got == 0)
            return sl_fail(err, SL_EIO, "%s: unexpected end of file at offset %lld (%zu bytes short)", path,
                           (long long)offset, nbytes);
        p += got;
        nbytes -= (size_t)got;
        offset += got;
    }
    return SL_OK;
}

sl_status sl__open_readonly(const char *path, int *fd, sl_err *err)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd >= 0)
        return SL_OK;
    if (errno == ENOENT)
        return sl_fail(err, SL_ENOTFOUND, "%s: no such file", path);
    return sl_fail(err, SL_EIO, "%s: cannot open: %s", path, strerror(errno));
}

/* ---- Writing ---- */

/* The header dict exactly as numpy.save writes it, so files compare equal
 * byte for byte with NumPy's own. */
static void format_dict(const sl_tensor *tensor, char *buf, size_t size)
{
    size_t used =
        (size_t)snprintf(buf, size, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr_of[tensor->dtype]);
    for (int d = 0; d < tensor->shape.rank; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %" PRId64 : "%" PRId64, tensor->shape.dims[d]);
    snprintf(buf + used, size - used, "%s), }", tensor->shape.rank == 1 ? "," : "");
}

static sl_status check_tensor(const char *path, const sl_tensor *tensor, size_t *nbytes, sl_err *err)
{
    if ((unsigned)tensor->dtype >= SL_DTYPE_COUNT)
        return sl_fail(err, SL_EINVAL, "%s: cannot write unknown dtype %d", path, (int)tensor->dtype);
    if (tensor->shape.rank < 0 || tensor->shape.rank > SL_MAX_RANK)
        return sl_fail(err, SL_EINVAL, "%s: cannot write rank %d (0 to %d supported)", path, tensor->shape.rank,
                       SL_MAX_RANK);
    for (int d = 0; d < tensor->shape.rank; d++)
        if (tensor->shape.dims[d] < 0)
            return sl_fail(err, SL_EINVAL, "%s: cannot write negative dimension %" PRId64, path, tensor->shape.dims[d]);
    size_t total = 0;
    if (!sl_shape_bytes_checked(&tensor->shape, 1, sl_dtype_size(tensor->dtype), &total))
        return sl_fail(err, SL_EINVAL, "%s: array is too large to address", path);
    if (total > 0 && !tensor->data)
        return sl_fail(err, SL_EINVAL, "%s: tensor of %zu bytes has no data", path, total);
    *nbytes = total;
    return SL_OK;
}

/* The text between the prelude and the data: the dict, spare spaces that let
 * the leading dimension grow in place to NPY_GROWTH_DIGITS digits, padding to
 * the next NPY_ALIGN boundary and a newline. NumPy (1.23 on) pads the same
 * way, a full block included when the text would end exactly on a boundary,
 * so sluice's files match numpy.save's byte for byte. */
static size_t header_text(const sl_tensor *tensor, char *buf, size_t size)
{
    format_dict(tensor, buf, size);
    size_t len = strlen(buf);
    if (tensor->shape.rank > 0) {
        char first[24];
        size_t digits = (size_t)snprintf(first, sizeof first, "%" PRId64, tensor->shape.dims[0]);
        for (size_t k = digits; k < NPY_GROWTH_DIGITS; k++)
            buf[len++] = ' ';
    }
    size_t pad = NPY_ALIGN - (NPY_PRELUDE_V1 + len + 1) % NPY_ALIGN;
    memset(buf + len, ' ', pad);
    len += pad;
    buf[len++] = '\n';
    return len;
}

sl_status sl_npy_write(const char *path, const sl_tensor *tensor, sl_err *err)
{
    size_t nbytes = 0;
    sl_status st = check_tensor(path, tensor, &nbytes, err);
    if (st != SL_OK)
        return st;
    /* Six 20-digit dimensions, the fixed text, spare room and padding fit. */
    char text[512];
    size_t header_len = header_text(tensor, text, sizeof text);
    size_t header_end = NPY_PRELUDE_V1 + header_len;
    if (nbytes > SIZE_MAX - header_end)
        return sl_fail(err, SL_EINVAL, "%s: array is too large to address", path);
    unsigned char *buf = malloc(header_end + nbytes);
    if (!buf)
        return sl_fail(err, SL_ENOMEM, "%s: cannot allocate %zu bytes to write the array", path, header_end + nbytes);
    memcpy(buf, npy_magic, sizeof npy_magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (unsigned char)(header_len & 0xff);
    buf[9] = (unsigned char)(header_len >> 8);
    memcpy(buf + NPY_PRELUDE_V1, text, header_len);
    if (nbytes > 0)
        memcpy(buf + header_end, tensor->data, nbytes);
    st = sl_write_file_atomic(path, buf, header_end + nbytes, err);
    free(buf);
    return st;
}

/* ---- Reading ---- */

/* A cursor over the header dict, a Python literal such as
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }. Only the
 * literal forms NumPy writes are understood: quoted strings, True/False,
 * tuples of non-negative integers. */
typedef struct cursor {
    const char *p;
    const char *end;
} cursor;

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool eat(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

static bool eat_word(cursor *c, const char *word)
{
    skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, word, n) == 0) {
        c->p += n;
        return true;
    }
    return false;
}

static bool parse_string(cursor *c, char *out, size_t size)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return false;
    char quote = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != quote) {
        if (n + 1 >= size || (unsigned char)*c->p < 0x20)
            return false;
        out[n++] = *c->p++;
    }
    out[n] = '\0';
    return eat(c, quote);
}

static bool parse_int(cursor *c, int64_t *out)
{
    skip_space(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return false;
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int digit = *c->p++ - '0';
        if (v > (INT64_MAX - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    /* Python 2 wrote long integers with an L suffix. */
    if (c->p < c->end && *c->p == 'L')
        c->p++;
    *out = v;
    return true;
}

/* A tuple of dimensions: (), (n,), (a, b), (a, b,). A lone (n) is an integer
 * in Python, not a tuple, and NumPy refuses it, so this does too. */
static bool parse_shape(cursor *c, sl_shape *shape, const char **why)
{
    *why = "shape is not a tuple of non-negative integers";
    if (!eat(c, '('))
        return false;
    shape->rank = 0;
    bool trailing_comma = false;
    while (!eat(c, ')')) {
        if (shape->rank > 0 && !trailing_comma)
            return false;
        if (shape->rank == SL_MAX_RANK) {
            *why = "shape has more dimensions than sluice supports";
            return false;
        }
        if (!parse_int(c, &shape->dims[shape->rank]))
            return false;
        shape->rank++;
        trailing_comma = eat(c, ',');
    }
    return shape->rank != 1 || trailing_comma;
}

typedef struct header_fields {
    char descr[16];
    bool fortran_order;
    sl_shape shape;
    unsigned seen; /* bit per key, to find missing and repeated keys */
} header_fields;

enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4 };

static sl_status parse_dict(const char *path, const char *text, size_t len, header_fields *h, sl_err *err)
{
    cursor c = {text, text + len};
    const char *why = "expected a dict";
    memset(h, 0, sizeof *h);
    if (!eat(&c, '{'))
        goto bad;
    while (!eat(&c, '}')) {
        char key[32];
        unsigned bit;
        why = "expected a quoted key";
        if (!parse_string(&c, key, sizeof key))
            goto bad;
        why = "expected ':' after a key";
        if (!eat(&c, ':'))
            goto bad;
        if (strcmp(key, "descr") == 0) {
            bit = KEY_DESCR;
            why = "descr is not a short string";
            if (!parse_string(&c, h->descr, sizeof h->descr))
                goto bad;
        } else if (strcmp(key, "fortran_order") == 0) {
            bit = KEY_FORTRAN;
            why = "fortran_order is not True or False";
            if (eat_word(&c, "True"))
                h->fortran_order = true;
            else if (!eat_word(&c, "False"))
                goto bad;
        } else if (strcmp(key, "shape") == 0) {
            bit = KEY_SHAPE;
            if (!parse_shape(&c, &h->shape, &why))
                goto bad;
        } else {
            return sl_fail(err, SL_EFORMAT, "%s: header not parseable: unexpected key '%s'", path, key);
        }
        if (h->seen & bit)
            return sl_fail(err, SL_EFORMAT, "%s: header not parseable: key '%s' appears twice", path, key);
        h->seen |= bit;
        why = "expected ',' or '}' after a value";
        if (!eat(&c, ',') && !(skip_space(&c), c.p < c.end && *c.p == '}'))
            goto bad;
    }
    skip_space(&c);
    why = "unexpected text after the dict";
    if (c.p != c.end)
        goto bad;
    why = "missing key 'descr', 'fortran_order' or 'shape'";
    if (h->seen != (KEY_DESCR | KEY_FORTRAN | KEY_SHAPE))
        goto bad;
    return SL_OK;
bad:
    return sl_fail(err, SL_EFORMAT, "%s: header not parseable: %s (near offset %td)", path, why, c.p - text);
}

/* Maps a descr to a dtype. Single bytes have no byte order, so any order
 * mark is accepted for u1; wider types must say little-endian explicitly. */
static sl_status parse_descr(const char *path, const char *descr, sl_dtype *out, sl_err *err)
{
    char order = descr[0];
    const char *code = (order == '<' || order == '>' || order == '|' || order == '=') ? descr + 1 : descr;
    if (strcmp(code, "u1") == 0) {
        *out = SL_U8;
        return SL_OK;
    }
    static const struct {
        const char *code;
        sl_dtype dtype;
    } wide[] = {{"i4", SL_I32}, {"i8", SL_I64}, {"f4", SL_F32}};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
        if (strcmp(code, wide[i].code) != 0)
            continue;
        if (order == '<') {
            *out = wide[i].dtype;
            return SL_OK;
        }
        if (order == '>')
            return sl_fail(err, SL_EFORMAT, "%s: big-endian data ('%s') is not supported; save it little-endian", path,
                           descr);
        return sl_fail(err, SL_EFORMAT, "%s: dtype '%s' does not state little-endian byte order", path, descr);
    }
    return sl_fail(err, SL_EFORMAT, "%s: unsupported dtype '%s' (supported: |u1, <i4, <i8, <f4)", path, descr);
}

static sl_status interpret(const char *path, const header_fields *h, sl_npy_header *out, sl_err *err)
{
    sl_status st = parse_descr(path, h->descr, &out->dtype, err);
    if (st != SL_OK)
        return st;
    if (h->fortran_order)
        return sl_fail(err, SL_EFORMAT, "%s: Fortran-order arrays are not supported; save it in C order", path);
    out->shape = h->shape;
    size_t bytes = 0;
    if (!sl_shape_bytes_checked(&h->shape, 1, sl_dtype_size(out->dtype), &bytes))
        return sl_fail(err, SL_EFORMAT, "%s: shape is too large to address", path);
    out->data_bytes = bytes;
    return SL_OK;
}

sl_status sl_npy_read_header_fd(int fd, const char *path, sl_npy_header *out, sl_err *err)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return sl_fail(err, SL_EIO, "%s: cannot stat: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return sl_fail(err, SL_EFORMAT, "%s: not a regular file", path);
    size_t file_size = (size_t)sb.st_size;
    unsigned char pre[12];
    if (file_size < 10)
        return sl_fail(err, SL_EFORMAT, "%s: truncated: %zu bytes is too short for a .npy header", path, file_size);
    sl_status st = sl__pread_full(fd, pre, file_size < sizeof pre ? file_size : sizeof pre, 0, path, err);
    if (st != SL_OK)
        return st;
    if (memcmp(pre, npy_magic, sizeof npy_magic) != 0)
        return sl_fail(err, SL_EFORMAT, "%s: bad magic: not a .npy file", path);
    size_t prelude, header_len;
    if (pre[6] == 1 && pre[7] == 0) {
        prelude = NPY_PRELUDE_V1;
        header_len = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 && pre[7] == 0) {
        if (file_size < 12)
            return sl_fail(err, SL_EFORMAT, "%s: truncated: %zu bytes is too short for a .npy 2.0 header", path,
                           file_size);
        prelude = 12;
        header_len = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    } else {
        return sl_fail(err, SL_EFORMAT, "%s: unsupported .npy version %u.%u (1.0 and 2.0 are supported)", path, pre[6],
                       pre[7]);
    }
    if (header_len > NPY_HEADER_MAX)
        return sl_fail(err, SL_EFORMAT, "%s: header length %zu is implausibly large", path, header_len);
    if (file_size < prelude + header_len)
        return sl_fail(err, SL_EFORMAT, "%s: truncated: header needs %zu bytes, file has %zu", path,
                       prelude + header_len, file_size);
    char *text = malloc(header_len + 1);
    if (!text)
        return sl_fail(err, SL_ENOMEM, "%s: cannot allocate the header", path);
    header_fields fields;
    st = sl__pread_full(fd, text, header_len, (off_t)prelude, path, err);
    if (st == SL_OK)
        st = parse_dict(path, text, header_len, &fields, err);
    free(text);
    if (st != SL_OK)
        return st;
    sl_npy_header h = {0};
    st = interpret(path, &fields, &h, err);
    if (st != SL_OK)
        return st;
    h.data_offset = prelude + header_len;
    size_t found = file_size - h.data_offset;
    if (found < h.data_bytes)
        return sl_fail(err, SL_EFORMAT, "%s: truncated: expected %zu data bytes, found %zu", path, h.data_bytes, found);
    /* Trailing bytes mean the header does not describe the file: refuse
     * rather than serve an array that may belong to something else. */
    if (found > h.data_bytes)
        return sl_fail(err, SL_EFORMAT, "%s: expected %zu data bytes, found %zu (trailing bytes after the array)", path,
                       h.data_bytes, found);
    *out = h;
    return SL_OK;
}

sl_status sl_npy_read_header(const char *path, sl_npy_header *out, sl_err *err)
{
    int fd;
    sl_status st = sl__open_readonly(path, &fd, err);
    if (st != SL_OK)
        return st;
    st = sl_npy_read_header_fd(fd, path, out, err);
    close(fd);
    return st;
}

sl_status sl_npy_load(const char *path, sl_tensor *tensor, sl_err *err)
{
    tensor->data = NULL;
    int fd;
    sl_status st = sl__open_readonly(path, &fd, err);
    if (st != SL_OK)
        return st;
    sl_npy_header h;
    st = sl_npy_read_header_fd(fd, path, &h, err);
    void *data = NULL;
    if (st == SL_OK) {
        data = sl__aligned_alloc(SL_ALIGN, h.data_bytes);
        if (!data)
            st = sl_fail(err, SL_ENOMEM, "%s: cannot allocate %zu bytes for the array", path, h.data_bytes);
    }
    if (st == SL_OK)
        st = sl__pread_full(fd, data, h.data_bytes, (off_t)h.data_offset, path, err);
    close(fd);
    if (st != SL_OK) {
        free(data);
        return st;
    }
    tensor->dtype = h.dtype;
    tensor->shape = h.shape;
    tensor->data = data;
    return SL_OK;
}
