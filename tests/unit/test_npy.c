/* The .npy writer and reader: round trips, the exact header bytes NumPy's
 * format prescribes, hand-written files from the format description, and
 * refusal of every kind of file sluice cannot read, naming the file. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sluice/core/npy.h"

#include "support.h"

static char tmpdir[64];

static void make_tmpdir(void)
{
    test_tmpdir_create(tmpdir, sizeof tmpdir, "npy");
}

static void remove_tmpdir(void)
{
    test_tmpdir_remove(tmpdir);
}

TestSuite(npy, .init = make_tmpdir, .fini = remove_tmpdir);

static void path_in_tmp(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmpdir, name);
}

static void write_bytes(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    fclose(f);
}

static unsigned char *read_bytes(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*size + 1);
    cr_assert_eq(fread(buf, 1, *size, f), *size);
    fclose(f);
    return buf;
}

/* A version 1.0 file: magic, version, 16-bit header length, the header text
 * as given (the caller pads it), then data. */
static void write_npy_v1(const char *path, const char *header, const void *data, size_t nbytes)
{
    size_t hlen = strlen(header);
    unsigned char *buf = malloc(10 + hlen + nbytes);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hlen & 0xff);
    buf[9] = (unsigned char)(hlen >> 8);
    memcpy(buf + 10, header, hlen);
    if (nbytes)
        memcpy(buf + 10 + hlen, data, nbytes);
    write_bytes(path, buf, 10 + hlen + nbytes);
    free(buf);
}

Test(npy, round_trip_every_dtype_and_rank)
{
    static const int64_t dims[4] = {3, 2, 5, 4};
    for (int dtype = 0; dtype < SL_DTYPE_COUNT; dtype++) {
        for (int rank = 0; rank <= 4; rank++) {
            sl_tensor t = {.dtype = (sl_dtype)dtype, .shape = {.rank = rank}};
            size_t numel = 1;
            for (int d = 0; d < rank; d++) {
                t.shape.dims[d] = dims[d];
                numel *= (size_t)dims[d];
            }
            size_t nbytes = numel * sl_dtype_size(t.dtype);
            unsigned char *data = malloc(nbytes);
            for (size_t i = 0; i < nbytes; i++)
                data[i] = (unsigned char)(i * 37 + 11 + dtype);
            t.data = data;
            char path[128];
            snprintf(path, sizeof path, "%s/%s_r%d.npy", tmpdir, sl_dtype_name(t.dtype), rank);
            sl_err err = {0};
            cr_assert_eq(sl_npy_write(path, &t, &err), SL_OK, "%s", err.msg);

            sl_tensor back;
            cr_assert_eq(sl_npy_load(path, &back, &err), SL_OK, "%s", err.msg);
            cr_assert_eq(back.dtype, t.dtype);
            cr_assert(sl_shape_equal(&back.shape, &t.shape), "rank %d dtype %d shape differs", rank, dtype);
            cr_assert_eq((uintptr_t)back.data % SL_ALIGN, 0, "loaded data is not %d-byte aligned", SL_ALIGN);
            cr_assert_eq(memcmp(back.data, data, nbytes), 0, "rank %d dtype %d data differs", rank, dtype);

            sl_npy_header h;
            cr_assert_eq(sl_npy_read_header(path, &h, &err), SL_OK, "%s", err.msg);
            cr_assert_eq(h.data_bytes, nbytes);
            cr_assert_eq(h.data_offset % 64, 0, "data starts at %zu, not a multiple of 64", h.data_offset);
            size_t file_size;
            free(read_bytes(path, &file_size));
            cr_assert_eq(file_size, h.data_offset + nbytes);
            free(back.data);
            free(data);
        }
    }
}

Test(npy, round_trip_empty_array)
{
    sl_tensor t = {.dtype = SL_F32, .shape = {.rank = 2, .dims = {0, 3}}, .data = NULL};
    char path[128];
    path_in_tmp(path, sizeof path, "empty.npy");
    sl_err err = {0};
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_OK, "%s", err.msg);
    sl_tensor back;
    cr_assert_eq(sl_npy_load(path, &back, &err), SL_OK, "%s", err.msg);
    cr_assert(sl_shape_equal(&back.shape, &t.shape));
    free(back.data);
}

/* The header of a (2, 3) float32 array as the NumPy format description
 * lays it out: magic, version 1.0, little-endian header length, the dict,
 * room for the leading dimension to grow to 21 digits, space padding so the
 * data starts on a 64-byte boundary, and a newline. The dict is 59 bytes,
 * the growth room 20, so 10 + 59 + 20 + 1 = 90 pads to 128. */
Test(npy, header_bytes_match_numpy_format)
{
    float values[6] = {0.5f, -1.0f, 2.25f, 3.0f, 1e-3f, -7.5f};
    sl_tensor t = {.dtype = SL_F32, .shape = {.rank = 2, .dims = {2, 3}}, .data = values};
    char path[128];
    path_in_tmp(path, sizeof path, "header.npy");
    sl_err err = {0};
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_OK, "%s", err.msg);
    size_t size;
    unsigned char *bytes = read_bytes(path, &size);
    cr_assert_eq(size, 128 + sizeof values);
    cr_assert_eq(memcmp(bytes, "\x93NUMPY", 6), 0);
    cr_assert_eq(bytes[6], 1);
    cr_assert_eq(bytes[7], 0);
    cr_assert_eq(bytes[8] | bytes[9] << 8, 118);
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    cr_assert_eq(memcmp(bytes + 10, dict, strlen(dict)), 0, "dict text differs: %.60s", (char *)bytes + 10);
    for (size_t i = 10 + strlen(dict); i < 127; i++)
        cr_assert_eq(bytes[i], ' ', "byte %zu of the header is 0x%02x, not a space", i, bytes[i]);
    cr_assert_eq(bytes[127], '\n');
    cr_assert_eq(memcmp(bytes + 128, values, sizeof values), 0);
    free(bytes);
}

Test(npy, header_dict_for_scalars_vectors_and_bytes)
{
    static const struct {
        sl_dtype dtype;
        int rank;
        int64_t dim0;
        const char *dict;
    } cases[] = {
        {SL_U8, 0, 0, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }"},
        {SL_I64, 1, 5, "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }"},
        {SL_I32, 1, 12345, "{'descr': '<i4', 'fortran_order': False, 'shape': (12345,), }"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sl_tensor t = {.dtype = cases[c].dtype, .shape = {.rank = cases[c].rank, .dims = {cases[c].dim0}}};
        void *data = calloc(1, 12345 * 8);
        t.data = data;
        char path[128];
        path_in_tmp(path, sizeof path, "dict.npy");
        sl_err err = {0};
        cr_assert_eq(sl_npy_write(path, &t, &err), SL_OK, "%s", err.msg);
        size_t size;
        unsigned char *bytes = read_bytes(path, &size);
        bytes[size] = '\0';
        cr_assert_eq(memcmp(bytes + 10, cases[c].dict, strlen(cases[c].dict)), 0, "expected %s, got %.70s",
                     cases[c].dict, (char *)bytes + 10);
        free(bytes);
        free(data);
    }
}

/* When dict, growth room and newline end exactly on a 64-byte boundary,
 * NumPy still adds a full block of padding (its padlen is never 0). Here
 * the dict is 97 bytes and the growth room 20: 10 + 117 + 1 = 128. */
/* The one shape whose header text would end exactly on a 64-byte boundary
 * (numpy then pads a full block) needs 31 digits in five dimensions after a
 * zero, a product numpy cannot allocate (np.empty((0, 10**6, 10**5, 10**5,
 * 10**5, 10**5), 'f4') raises "array is too big"). The writer refuses it, as
 * the reader refuses its header, so no file numpy cannot load is written. */
Test(npy, a_shape_numpy_cannot_allocate_is_not_written)
{
    sl_tensor t = {
        .dtype = SL_F32, .shape = {.rank = 6, .dims = {0, 1000000, 100000, 100000, 100000, 100000}}, .data = NULL};
    char path[128];
    path_in_tmp(path, sizeof path, "unallocatable.npy");
    sl_err err = {0};
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    cr_assert_not_null(strstr(err.msg, "too large to address"), "%s", err.msg);
    cr_assert_eq(access(path, F_OK), -1, "a refused write left %s", path);
}

Test(npy, write_leaves_no_temporary_files)
{
    int32_t v[4] = {1, 2, 3, 4};
    sl_tensor t = {.dtype = SL_I32, .shape = {.rank = 1, .dims = {4}}, .data = v};
    char path[128];
    path_in_tmp(path, sizeof path, "only.npy");
    sl_err err = {0};
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_OK, "overwriting: %s", err.msg);
    DIR *dir = opendir(tmpdir);
    int entries = 0;
    for (struct dirent *e; (e = readdir(dir));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            cr_assert_str_eq(e->d_name, "only.npy");
            entries++;
        }
    closedir(dir);
    cr_assert_eq(entries, 1);
}

Test(npy, parses_hand_written_v1_file)
{
    /* 10 + 70 = 80 bytes of header; NumPy pads to 64, but the format only
     * requires the newline, and readers must not insist on the padding. */
    const char *header = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }          \n";
    int32_t data[3] = {7, -2, 100000};
    char path[128];
    path_in_tmp(path, sizeof path, "hand.npy");
    write_npy_v1(path, header, data, sizeof data);
    sl_err err = {0};
    sl_npy_header h;
    cr_assert_eq(sl_npy_read_header(path, &h, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(h.dtype, SL_I32);
    cr_assert_eq(h.shape.rank, 1);
    cr_assert_eq(h.shape.dims[0], 3);
    cr_assert_eq(h.data_offset, 10 + strlen(header));
    cr_assert_eq(h.data_bytes, 12);
    sl_tensor t;
    cr_assert_eq(sl_npy_load(path, &t, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(((int32_t *)t.data)[0], 7);
    cr_assert_eq(((int32_t *)t.data)[1], -2);
    cr_assert_eq(((int32_t *)t.data)[2], 100000);
    free(t.data);
}

Test(npy, parses_v2_header_and_other_spellings)
{
    /* Version 2.0 has a 32-bit header length; keys may come in any order and
     * with double quotes, tuples without spaces, u1 with any byte order. */
    const char *header = "{\"shape\":(2,2), \"fortran_order\":False, \"descr\":\"u1\"}\n";
    size_t hlen = strlen(header);
    unsigned char buf[128];
    memcpy(buf, "\x93NUMPY\x02\x00", 8);
    buf[8] = (unsigned char)hlen;
    buf[9] = buf[10] = buf[11] = 0;
    memcpy(buf + 12, header, hlen);
    memcpy(buf + 12 + hlen, "\x01\x02\x03\xff", 4);
    char path[128];
    path_in_tmp(path, sizeof path, "v2.npy");
    write_bytes(path, buf, 12 + hlen + 4);
    sl_err err = {0};
    sl_tensor t;
    cr_assert_eq(sl_npy_load(path, &t, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(t.dtype, SL_U8);
    cr_assert_eq(t.shape.rank, 2);
    cr_assert_eq(t.shape.dims[0], 2);
    cr_assert_eq(t.shape.dims[1], 2);
    cr_assert_eq(((unsigned char *)t.data)[3], 0xff);
    free(t.data);

    static const char *const u1_spellings[] = {"'<u1'", "'|u1'", "'u1'"};
    for (int s = 0; s < 3; s++) {
        char text[128];
        snprintf(text, sizeof text, "{'descr': %s, 'fortran_order': False, 'shape': (1,), }\n", u1_spellings[s]);
        write_npy_v1(path, text, "\x2a", 1);
        sl_npy_header h;
        cr_assert_eq(sl_npy_read_header(path, &h, &err), SL_OK, "%s: %s", u1_spellings[s], err.msg);
        cr_assert_eq(h.dtype, SL_U8);
    }
    write_npy_v1(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", "\0\0\x80\x3f", 4);
    cr_assert_eq(sl_npy_load(path, &t, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(t.shape.rank, 0);
    cr_assert_eq(((float *)t.data)[0], 1.0f);
    free(t.data);
}

/* Writes a file, expects loading it to fail with status and a message that
 * contains the path and `needle`. */
static void expect_refused(const char *name, const void *bytes, size_t size, sl_status status, const char *needle)
{
    char path[128];
    path_in_tmp(path, sizeof path, name);
    write_bytes(path, bytes, size);
    sl_err err = {0};
    sl_tensor t = {.data = NULL};
    cr_assert_eq(sl_npy_load(path, &t, &err), status, "%s: expected status %d, message: %s", name, status, err.msg);
    cr_assert_null(t.data);
    cr_assert_not_null(strstr(err.msg, path), "%s: message does not name the file: %s", name, err.msg);
    cr_assert_not_null(strstr(err.msg, needle), "%s: message lacks '%s': %s", name, needle, err.msg);
    sl_npy_header h;
    cr_assert_eq(sl_npy_read_header(path, &h, &err), status);
}

static void expect_header_refused(const char *name, const char *header, size_t nbytes, const char *needle)
{
    char path[128];
    path_in_tmp(path, sizeof path, name);
    unsigned char *data = calloc(1, nbytes + 1);
    write_npy_v1(path, header, data, nbytes);
    free(data);
    size_t size;
    unsigned char *bytes = read_bytes(path, &size);
    expect_refused(name, bytes, size, SL_EFORMAT, needle);
    free(bytes);
}

Test(npy, refuses_truncated_data)
{
    float v[6] = {0};
    sl_tensor t = {.dtype = SL_F32, .shape = {.rank = 2, .dims = {2, 3}}, .data = v};
    char path[128];
    path_in_tmp(path, sizeof path, "whole.npy");
    sl_err err = {0};
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_OK, "%s", err.msg);
    size_t size;
    unsigned char *bytes = read_bytes(path, &size);
    /* 24 data bytes promised, 4 cut off. */
    expect_refused("cut.npy", bytes, size - 4, SL_EFORMAT, "truncated: expected 24 data bytes, found 20");
    expect_refused("cut_header.npy", bytes, 40, SL_EFORMAT, "truncated");
    expect_refused("tiny.npy", bytes, 5, SL_EFORMAT, "truncated");
    /* Trailing bytes mean the header does not describe the file either. */
    unsigned char *longer = calloc(1, size + 8);
    memcpy(longer, bytes, size);
    expect_refused("long.npy", longer, size + 8, SL_EFORMAT, "found 32");
    free(longer);
    free(bytes);
}

Test(npy, refuses_bad_magic_and_version)
{
    unsigned char bytes[128];
    memset(bytes, ' ', sizeof bytes);
    memcpy(bytes, "\x93NUMPZ\x01\x00\x76\x00", 10);
    expect_refused("magic.npy", bytes, sizeof bytes, SL_EFORMAT, "magic");
    memcpy(bytes, "\x93NUMPY\x03\x00\x74\x00\x00\x00", 12);
    expect_refused("v3.npy", bytes, sizeof bytes, SL_EFORMAT, "version 3.0");
    memcpy(bytes, "\x93NUMPY\x01\x01\x76\x00", 10);
    expect_refused("v11.npy", bytes, sizeof bytes, SL_EFORMAT, "version 1.1");
}

Test(npy, refuses_unsupported_headers)
{
    expect_header_refused("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", 24, "Fortran");
    expect_header_refused("big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24, "big-endian");
    expect_header_refused("c8.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }\n", 24,
                          "unsupported dtype '<c8'");
    expect_header_refused("f8.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }\n", 24,
                          "unsupported dtype");
    expect_header_refused("native.npy", "{'descr': 'f4', 'fortran_order': False, 'shape': (3,), }\n", 12,
                          "little-endian");
    expect_header_refused("open.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)\n", 24,
                          "header not parseable");
    expect_header_refused("notuple.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3), }\n", 12,
                          "header not parseable");
    expect_header_refused("negative.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }\n", 12,
                          "header not parseable");
    expect_header_refused("missing.npy", "{'descr': '<f4', 'shape': (3,), }\n", 12, "missing key");
    expect_header_refused("extra.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}\n", 12,
                          "unexpected key 'x'");
    expect_header_refused("twice.npy", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\n", 12,
                          "appears twice");
    expect_header_refused("rank7.npy", "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1), }\n",
                          1, "more dimensions");
    expect_header_refused("garbage.npy", "not a dict at all\n", 0, "header not parseable");
    /* numpy refuses a shape whose nonzero dimensions overflow even when
     * another dimension is zero (np.empty((0, 2**32, 2**32), 'f4') raises
     * "array is too big"), so the order of the dimensions cannot decide. */
    expect_header_refused("zero-first.npy",
                          "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }\n", 0,
                          "too large to address");
    expect_header_refused("zero-last.npy",
                          "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }\n", 0,
                          "too large to address");
    /* Between 2^63 and 2^64 a product fits size_t but not the int64_t that
     * element counts are (the fuzzer's find: a row of 2^32 x 40000 x 67296
     * elements overflowed sl_shape_numel while a stream sized its rows). */
    expect_header_refused("past-int64.npy",
                          "{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4294967296, 40000, 67296, 0), }\n", 0,
                          "too large to address");
}

Test(npy, missing_file_is_named)
{
    char path[128];
    path_in_tmp(path, sizeof path, "absent.npy");
    sl_err err = {0};
    sl_tensor t;
    cr_assert_eq(sl_npy_load(path, &t, &err), SL_ENOTFOUND);
    cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
}

Test(npy, write_refuses_bad_tensors)
{
    char path[128];
    path_in_tmp(path, sizeof path, "bad.npy");
    sl_err err = {0};
    sl_tensor t = {.dtype = SL_F32, .shape = {.rank = 2, .dims = {2, -1}}, .data = &err};
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
    t.shape = (sl_shape){.rank = 2, .dims = {2, 2}};
    t.data = NULL;
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_EINVAL);
    t.dtype = SL_DTYPE_COUNT;
    t.data = &err;
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_EINVAL);
    cr_assert_eq(access(path, F_OK), -1, "a refused write must not create the file");
}
