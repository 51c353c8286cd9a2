/* Sources: the memory source, .npy export, the mmap, pread, eager and
 * streaming file sources and concatenations, which must hand back exactly
 * the bytes the memory source holds, from any number of threads, and refuse
 * bad files and bad reads by name. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sluice/core/npy.h"
#include "sluice/source/source.h"

#include "support.h"

static char tmpdir[64];

static void make_tmpdir(void)
{
    test_tmpdir_create(tmpdir, sizeof tmpdir, "src");
}

static void remove_tmpdir(void)
{
    test_tmpdir_remove(tmpdir);
}

TestSuite(sources, .init = make_tmpdir, .fini = remove_tmpdir);

/* Three fields of different dtypes and ranks over ROWS rows, filled with a
 * pattern where every byte position differs from its neighbours. */
#define ROWS 37

typedef struct fixture {
    sl_schema schema;
    void *data[3];
    size_t bytes[3];
} fixture;

static void set_field(sl_schema *s, int f, const char *name, sl_dtype dtype, int rank, int64_t d0, int64_t d1,
                      int64_t d2)
{
    snprintf(s->fields[f].name, SL_NAME_MAX, "%s", name);
    s->fields[f].dtype = dtype;
    s->fields[f].shape = (sl_shape){.rank = rank, .dims = {d0, d1, d2}};
}

static void make_fixture(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->schema.nfields = 3;
    set_field(&fx->schema, 0, "image", SL_U8, 3, 4, 5, 3);
    set_field(&fx->schema, 1, "label", SL_I32, 0, 0, 0, 0);
    set_field(&fx->schema, 2, "features", SL_F32, 1, 7, 0, 0);
    /* Bytes per row, worked out by hand: 4*5*3 u8, one i32, 7 f32. */
    static const size_t row_bytes[3] = {60, 4, 28};
    for (int f = 0; f < 3; f++) {
        fx->bytes[f] = row_bytes[f] * ROWS;
        unsigned char *p = malloc(fx->bytes[f]);
        for (size_t i = 0; i < fx->bytes[f]; i++)
            p[i] = (unsigned char)((i * 131 + (size_t)f * 17 + (i >> 8)) & 0xff);
        fx->data[f] = p;
    }
}

static void free_fixture(fixture *fx)
{
    for (int f = 0; f < 3; f++)
        free(fx->data[f]);
}

static sl_source *memory_source(fixture *fx)
{
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&fx->schema, ROWS, fx->data, SL_BORROW, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

static void field_paths(const char *dir, const fixture *fx, char paths[3][256], const char *names[3],
                        const char *path_ptrs[3])
{
    for (int f = 0; f < 3; f++) {
        snprintf(paths[f], 256, "%s/%s.npy", dir, fx->schema.fields[f].name);
        names[f] = fx->schema.fields[f].name;
        path_ptrs[f] = paths[f];
    }
}

/* Exports the fixture to tmpdir/<sub> and opens it as a file source. */
static sl_source *file_source(fixture *fx, sl_source_kind kind, const char *sub)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    sl_source *mem = memory_source(fx);
    sl_err err = {0};
    cr_assert_eq(sl_source_export_npy(mem, dir, &err), SL_OK, "%s", err.msg);
    sl_source_free(mem);
    char paths[3][256];
    const char *names[3], *ptrs[3];
    field_paths(dir, fx, paths, names, ptrs);
    sl_source *src;
    cr_assert_eq(sl_source_file_create(kind, 3, names, ptrs, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

Test(sources, kind_names_round_trip)
{
    static const char *const names[] = {"memory", "mmap", "pread", "cache", "eager", "stream", "concat"};
    cr_assert_eq(SL_SOURCE_KIND_COUNT, sizeof names / sizeof names[0], "a source kind without its name here");
    for (int k = 0; k < SL_SOURCE_KIND_COUNT; k++) {
        cr_assert_str_eq(sl_source_kind_name((sl_source_kind)k), names[k]);
        sl_source_kind parsed;
        cr_assert(sl_source_kind_parse(names[k], &parsed));
        cr_assert_eq(parsed, (sl_source_kind)k);
    }
    sl_source_kind parsed;
    cr_assert_not(sl_source_kind_parse("mmap2", &parsed));
    cr_assert_not(sl_source_kind_parse("", &parsed));
}

Test(sources, memory_source_reads_and_maps_its_buffers)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *src = memory_source(&fx);
    cr_assert_eq(sl_source_kind_of(src), SL_SOURCE_MEMORY);
    cr_assert_eq(sl_source_rows(src), ROWS);
    cr_assert_eq(sl_source_schema(src)->nfields, 3);
    cr_assert_str_eq(sl_source_schema(src)->fields[2].name, "features");
    for (int f = 0; f < 3; f++)
        cr_assert_eq(sl_source_field_bytes(src, f), fx.bytes[f]);
    /* Borrowed buffers are used in place, not copied. */
    cr_assert_eq(sl_source_map(src, 0, 0, fx.bytes[0]), fx.data[0]);
    cr_assert_eq(sl_source_map(src, 2, 28, 28), (char *)fx.data[2] + 28);
    unsigned char row[28];
    sl_err err = {0};
    cr_assert_eq(sl_source_read(src, 2, 5 * 28, 28, row, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(memcmp(row, (char *)fx.data[2] + 5 * 28, 28), 0);
    sl_source_free(src);
    free_fixture(&fx);
}

Test(sources, memory_source_takes_ownership)
{
    /* Run under LeakSanitizer: the buffers must be freed with the source. */
    fixture fx;
    make_fixture(&fx);
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&fx.schema, ROWS, fx.data, SL_TAKE, &src, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_source_map(src, 1, 0, 4), fx.data[1]);
    sl_source_free(src);
}

Test(sources, memory_source_refuses_bad_schemas)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *src = (sl_source *)&fx;
    sl_err err = {0};
    sl_schema dup = fx.schema;
    snprintf(dup.fields[2].name, SL_NAME_MAX, "image");
    cr_assert_eq(sl_source_memory_create(&dup, ROWS, fx.data, SL_TAKE, &src, &err), SL_EINVAL);
    cr_assert_null(src);
    cr_assert_not_null(strstr(err.msg, "'image'"), "%s", err.msg);
    sl_schema none = {.nfields = 0};
    cr_assert_eq(sl_source_memory_create(&none, ROWS, fx.data, SL_BORROW, &src, &err), SL_EINVAL);
    cr_assert_eq(sl_source_memory_create(&fx.schema, -1, fx.data, SL_BORROW, &src, &err), SL_EINVAL);
    void *missing[3] = {fx.data[0], NULL, fx.data[2]};
    cr_assert_eq(sl_source_memory_create(&fx.schema, ROWS, missing, SL_TAKE, &src, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.msg, "'label'"), "%s", err.msg);
    /* A failed create takes nothing: freeing here must not double free. */
    free_fixture(&fx);
}

Test(sources, out_of_range_reads_are_refused)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *sources[5] = {memory_source(&fx), file_source(&fx, SL_SOURCE_MMAP, "m"),
                             file_source(&fx, SL_SOURCE_PREAD, "p"), file_source(&fx, SL_SOURCE_EAGER, "e"),
                             file_source(&fx, SL_SOURCE_STREAM, "s")};
    for (int s = 0; s < 5; s++) {
        sl_source *src = sources[s];
        unsigned char buf[64];
        sl_err err = {0};
        size_t size = fx.bytes[1];
        cr_assert_eq(sl_source_read(src, 1, size - 4, 8, buf, &err), SL_EINVAL);
        cr_assert_not_null(strstr(err.msg, "'label'"), "%s", err.msg);
        char offset[32];
        snprintf(offset, sizeof offset, "offset %zu", size - 4);
        cr_assert_not_null(strstr(err.msg, offset), "%s", err.msg);
        cr_assert_not_null(strstr(err.msg, "8 bytes"), "%s", err.msg);
        /* An offset near SIZE_MAX must not wrap around into range. */
        cr_assert_eq(sl_source_read(src, 1, SIZE_MAX - 2, 4, buf, &err), SL_EINVAL);
        cr_assert_eq(sl_source_read(src, 3, 0, 1, buf, &err), SL_EINVAL);
        cr_assert_eq(sl_source_read(src, -1, 0, 1, buf, &err), SL_EINVAL);
        cr_assert_null(sl_source_map(src, 1, size - 4, 8));
        /* The last bytes, and an empty read at the very end, are fine. */
        cr_assert_eq(sl_source_read(src, 1, size - 4, 4, buf, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(memcmp(buf, (char *)fx.data[1] + size - 4, 4), 0);
        cr_assert_eq(sl_source_read(src, 1, size, 0, buf, &err), SL_OK, "%s", err.msg);
        sl_source_free(src);
    }
    free_fixture(&fx);
}

/* Every row of every field, then random byte ranges: all three back ends
 * return the bytes the fixture was made of. */
static void check_same_bytes(sl_source *src, const fixture *fx)
{
    const sl_schema *schema = sl_source_schema(src);
    cr_assert_eq(schema->nfields, 3);
    cr_assert_eq(sl_source_rows(src), ROWS);
    for (int f = 0; f < 3; f++) {
        cr_assert_str_eq(schema->fields[f].name, fx->schema.fields[f].name);
        cr_assert_eq(schema->fields[f].dtype, fx->schema.fields[f].dtype);
        cr_assert(sl_shape_equal(&schema->fields[f].shape, &fx->schema.fields[f].shape), "field %d shape", f);
        cr_assert_eq(sl_source_field_bytes(src, f), fx->bytes[f]);
    }
    sl_err err = {0};
    unsigned char buf[256];
    for (int f = 0; f < 3; f++) {
        size_t row = fx->bytes[f] / ROWS;
        for (size_t r = 0; r < ROWS; r++) {
            memset(buf, 0xa5, sizeof buf);
            cr_assert_eq(sl_source_read(src, f, r * row, row, buf, &err), SL_OK, "%s", err.msg);
            cr_assert_eq(memcmp(buf, (char *)fx->data[f] + r * row, row), 0, "field %d row %zu differs", f, r);
        }
    }
    uint64_t state = 88172645463325252ull;
    for (int i = 0; i < 2000; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        int f = (int)(state % 3);
        size_t offset = (size_t)(state >> 8) % fx->bytes[f];
        size_t n = (size_t)(state >> 40) % sizeof buf;
        if (n > fx->bytes[f] - offset)
            n = fx->bytes[f] - offset;
        cr_assert_eq(sl_source_read(src, f, offset, n, buf, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(memcmp(buf, (char *)fx->data[f] + offset, n), 0, "field %d [%zu, +%zu) differs", f, offset, n);
        const void *mapped = sl_source_map(src, f, offset, n);
        sl_source_kind kind = sl_source_kind_of(src);
        if (kind == SL_SOURCE_PREAD || kind == SL_SOURCE_STREAM)
            cr_assert_null(mapped);
        else if (kind == SL_SOURCE_CONCAT && !mapped)
            continue; /* a range across two parts has no single view */
        else
            cr_assert(mapped && memcmp(mapped, (char *)fx->data[f] + offset, n) == 0, "map of field %d", f);
    }
}

Test(sources, file_sources_return_identical_bytes)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *mem = memory_source(&fx);
    check_same_bytes(mem, &fx);
    sl_source_free(mem);
    /* The export creates missing directories, nested ones included. */
    sl_source *mm = file_source(&fx, SL_SOURCE_MMAP, "a/b");
    cr_assert_eq(sl_source_kind_of(mm), SL_SOURCE_MMAP);
    check_same_bytes(mm, &fx);
    sl_source *pr = file_source(&fx, SL_SOURCE_PREAD, "c");
    cr_assert_eq(sl_source_kind_of(pr), SL_SOURCE_PREAD);
    check_same_bytes(pr, &fx);
    sl_source *eager = file_source(&fx, SL_SOURCE_EAGER, "d");
    cr_assert_eq(sl_source_kind_of(eager), SL_SOURCE_EAGER);
    check_same_bytes(eager, &fx);
    sl_source *stream = file_source(&fx, SL_SOURCE_STREAM, "e");
    cr_assert_eq(sl_source_kind_of(stream), SL_SOURCE_STREAM);
    check_same_bytes(stream, &fx);
    sl_source_free(mm);
    sl_source_free(pr);
    sl_source_free(eager);
    sl_source_free(stream);
    free_fixture(&fx);
}

/* Exports the fixture to tmpdir/<sub> and opens it as a streaming source. */
static sl_source *stream_source(fixture *fx, const char *sub, int64_t chunk_rows, int cache_chunks)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    sl_source *mem = memory_source(fx);
    sl_err err = {0};
    cr_assert_eq(sl_source_export_npy(mem, dir, &err), SL_OK, "%s", err.msg);
    sl_source_free(mem);
    char paths[3][256];
    const char *names[3], *ptrs[3];
    field_paths(dir, fx, paths, names, ptrs);
    sl_source *src;
    sl_stream_options options = {chunk_rows, cache_chunks};
    cr_assert_eq(sl_source_stream_create(3, names, ptrs, &options, &src, &err), SL_OK, "%s", err.msg);
    return src;
}

static sl_stream_stats stream_stats(const sl_source *src)
{
    sl_stream_stats stats;
    sl_err err = {0};
    cr_assert_eq(sl_source_stream_stats(src, &stats, &err), SL_OK, "%s", err.msg);
    return stats;
}

/* Chunks of 5 rows in 3 slots: reads that cross chunks, evictions, and a
 * last chunk of 2 rows (37 = 7 x 5 + 2). */
Test(sources, stream_source_with_a_small_cache_returns_identical_bytes)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *src = stream_source(&fx, "small", 5, 3);
    check_same_bytes(src, &fx);
    sl_stream_stats stats = stream_stats(src);
    cr_expect_eq(stats.chunk_rows, 5);
    cr_expect_eq(stats.cache_chunks, 3);
    /* 3 slots of 5 rows of every field's 60 + 4 + 28 bytes. */
    cr_expect_eq(stats.cache_bytes, (size_t)3 * 5 * (60 + 4 + 28));
    cr_expect_gt(stats.chunk_loads, 8, "random reads over 8 chunks in 3 slots must evict");
    cr_expect_eq(stats.bypass_reads, 0, "one reader never finds every slot busy");
    sl_source_free(src);
    free_fixture(&fx);
}

/* Read in order, each chunk is loaded once: what the block shuffle's order
 * gives a streaming source. Read twice through two slots, the second pass
 * loads everything again (the least recently used slot goes first). */
Test(sources, stream_source_loads_each_chunk_once_in_order)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *src = stream_source(&fx, "order", 5, 2);
    sl_err err = {0};
    unsigned char row[60];
    for (int pass = 0; pass < 2; pass++)
        for (size_t r = 0; r < ROWS; r++) {
            cr_assert_eq(sl_source_read(src, 0, r * 60, 60, row, &err), SL_OK, "%s", err.msg);
            cr_assert_eq(memcmp(row, (char *)fx.data[0] + r * 60, 60), 0);
        }
    sl_stream_stats stats = stream_stats(src);
    /* 8 chunks per pass, ceil(37 / 5); the other fields were never read. */
    cr_expect_eq(stats.chunk_loads, 16);
    cr_expect_eq(stats.bytes_read, (size_t)2 * 37 * 60);
    cr_expect_eq(stats.bytes_requested, (size_t)2 * 37 * 60);
    cr_expect_eq(stats.hits, 2 * (37 - 8));
    sl_source_free(src);
    free_fixture(&fx);
}

Test(sources, stream_options_and_stats_are_checked)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *mem = memory_source(&fx);
    sl_stream_stats stats;
    sl_err err = {0};
    cr_assert_eq(sl_source_stream_stats(mem, &stats, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.msg, "memory"), "%s", err.msg);
    sl_source_free(mem);
    /* Defaults: 4 MiB of the widest field (60 bytes) per chunk, 16 slots. */
    sl_source *src = file_source(&fx, SL_SOURCE_STREAM, "defaults");
    stats = stream_stats(src);
    cr_expect_eq(stats.chunk_rows, (int64_t)((4u << 20) / 60));
    cr_expect_eq(stats.cache_chunks, 16);
    sl_source_free(src);
    char paths[3][256];
    const char *names[3], *ptrs[3];
    char dir[128];
    snprintf(dir, sizeof dir, "%s/defaults", tmpdir);
    field_paths(dir, &fx, paths, names, ptrs);
    sl_stream_options bad = {-1, 4};
    sl_source *none = NULL;
    cr_assert_eq(sl_source_stream_create(3, names, ptrs, &bad, &none, &err), SL_EINVAL);
    cr_assert_null(none);
    cr_assert_not_null(strstr(err.msg, "chunk_rows"), "%s", err.msg);
    free_fixture(&fx);
}

/* The eager source holds its own copy: the files can go once it is open. */
Test(sources, eager_source_needs_its_files_only_to_open)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *src = file_source(&fx, SL_SOURCE_EAGER, "gone");
    for (int f = 0; f < 3; f++) {
        char path[256];
        snprintf(path, sizeof path, "%s/gone/%s.npy", tmpdir, fx.schema.fields[f].name);
        cr_assert_eq(unlink(path), 0);
    }
    check_same_bytes(src, &fx);
    sl_source_free(src);
    free_fixture(&fx);
}

/* The fixture cut at row `cut` into two memory sources over its buffers. */
static void split_fixture(fixture *fx, int64_t cut, sl_source *parts[2])
{
    void *first[3], *second[3];
    for (int f = 0; f < 3; f++) {
        size_t row = fx->bytes[f] / ROWS;
        first[f] = fx->data[f];
        second[f] = (char *)fx->data[f] + (size_t)cut * row;
    }
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&fx->schema, cut, first, SL_BORROW, &parts[0], &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_source_memory_create(&fx->schema, ROWS - cut, second, SL_BORROW, &parts[1], &err), SL_OK, "%s",
                 err.msg);
}

Test(sources, concatenation_reads_its_parts_in_order)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *parts[2];
    split_fixture(&fx, 20, parts);
    sl_source *cat;
    sl_err err = {0};
    cr_assert_eq(sl_source_concat_create(2, parts, SL_TAKE, &cat, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_source_kind_of(cat), SL_SOURCE_CONCAT);
    check_same_bytes(cat, &fx);
    int64_t rows[SL_MAX_PARTS];
    cr_assert_eq(sl_source_parts(cat, rows, SL_MAX_PARTS), 2);
    cr_expect_eq(rows[0], 20);
    cr_expect_eq(rows[1], 17);
    cr_expect_eq(sl_source_part(cat, 1), parts[1]);
    cr_expect_null(sl_source_part(cat, 2));
    /* Views point into the part that holds the bytes: row 25 is row 5 of
     * part 1. */
    cr_expect_eq(sl_source_map(cat, 2, 25 * 28, 28), (char *)fx.data[2] + 25 * 28);
    cr_expect_null(sl_source_map(cat, 2, 19 * 28, 56), "a view across two parts");
    /* A plain source is its own single part. */
    sl_source *mem = memory_source(&fx);
    cr_assert_eq(sl_source_parts(mem, rows, SL_MAX_PARTS), 1);
    cr_expect_eq(rows[0], ROWS);
    cr_expect_eq(sl_source_part(mem, 0), mem);
    cr_expect_null(sl_source_part(mem, 1));
    sl_source_free(mem);
    /* SL_TAKE: the parts go with it (LeakSanitizer checks). */
    sl_source_free(cat);
    free_fixture(&fx);
}

Test(sources, concatenation_refuses_parts_of_other_schemas)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *parts[2];
    split_fixture(&fx, 20, parts);
    sl_schema other = fx.schema;
    other.fields[1].dtype = SL_I64;
    sl_source *odd;
    sl_err err = {0};
    cr_assert_eq(sl_source_memory_create(&other, 10, fx.data, SL_BORROW, &odd, &err), SL_OK, "%s", err.msg);
    sl_source *three[3] = {parts[0], parts[1], odd};
    sl_source *cat = NULL;
    cr_assert_eq(sl_source_concat_create(3, three, SL_TAKE, &cat, &err), SL_EMISMATCH);
    cr_assert_null(cat);
    cr_assert(strstr(err.msg, "part 2") && strstr(err.msg, "'label'"), "%s", err.msg);
    cr_assert_eq(sl_source_concat_create(0, three, SL_BORROW, &cat, &err), SL_EINVAL);
    cr_assert_eq(sl_source_concat_create(SL_MAX_PARTS + 1, three, SL_BORROW, &cat, &err), SL_EINVAL);
    /* Nothing was taken: the parts are still ours. */
    for (int p = 0; p < 3; p++)
        sl_source_free(three[p]);
    free_fixture(&fx);
}

Test(sources, export_writes_one_npy_per_field)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *src = memory_source(&fx);
    sl_err err = {0};
    cr_assert_eq(sl_source_export_npy(src, tmpdir, &err), SL_OK, "%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/image.npy", tmpdir);
    sl_tensor t;
    cr_assert_eq(sl_npy_load(path, &t, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(t.dtype, SL_U8);
    sl_shape expect = {.rank = 4, .dims = {ROWS, 4, 5, 3}};
    cr_assert(sl_shape_equal(&t.shape, &expect));
    cr_assert_eq(memcmp(t.data, fx.data[0], fx.bytes[0]), 0);
    free(t.data);
    snprintf(path, sizeof path, "%s/label.npy", tmpdir);
    sl_npy_header h;
    cr_assert_eq(sl_npy_read_header(path, &h, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(h.dtype, SL_I32);
    cr_assert_eq(h.shape.rank, 1);
    cr_assert_eq(h.shape.dims[0], ROWS);
    sl_source_free(src);
    free_fixture(&fx);
}

Test(sources, pread_export_matches_memory_export)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *pr = file_source(&fx, SL_SOURCE_PREAD, "first");
    char dir[128];
    snprintf(dir, sizeof dir, "%s/second", tmpdir);
    sl_err err = {0};
    cr_assert_eq(sl_source_export_npy(pr, dir, &err), SL_OK, "%s", err.msg);
    sl_source_free(pr);
    for (int f = 0; f < 3; f++) {
        char a[256], b[256];
        snprintf(a, sizeof a, "%s/first/%s.npy", tmpdir, fx.schema.fields[f].name);
        snprintf(b, sizeof b, "%s/second/%s.npy", tmpdir, fx.schema.fields[f].name);
        sl_tensor ta, tb;
        cr_assert_eq(sl_npy_load(a, &ta, &err), SL_OK, "%s", err.msg);
        cr_assert_eq(sl_npy_load(b, &tb, &err), SL_OK, "%s", err.msg);
        cr_assert(sl_shape_equal(&ta.shape, &tb.shape));
        cr_assert_eq(memcmp(ta.data, tb.data, fx.bytes[f]), 0);
        free(ta.data);
        free(tb.data);
    }
    free_fixture(&fx);
}

static void write_array(const char *path, sl_dtype dtype, int rank, int64_t d0, int64_t d1)
{
    sl_tensor t = {.dtype = dtype, .shape = {.rank = rank, .dims = {d0, d1}}};
    t.data = calloc(1, sl_tensor_nbytes(&t) + 1);
    sl_err err = {0};
    cr_assert_eq(sl_npy_write(path, &t, &err), SL_OK, "%s", err.msg);
    free(t.data);
}

Test(sources, mismatched_row_counts_name_both_files)
{
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/x.npy", tmpdir);
    snprintf(b, sizeof b, "%s/y.npy", tmpdir);
    write_array(a, SL_F32, 2, 10, 3);
    write_array(b, SL_I32, 1, 12, 0);
    const char *names[2] = {"x", "y"}, *paths[2] = {a, b};
    static const sl_source_kind file_kinds[] = {SL_SOURCE_MMAP, SL_SOURCE_PREAD, SL_SOURCE_EAGER, SL_SOURCE_STREAM};
    for (size_t k = 0; k < sizeof file_kinds / sizeof file_kinds[0]; k++) {
        sl_source_kind kind = file_kinds[k];
        sl_source *src = NULL;
        sl_err err = {0};
        cr_assert_neq(sl_source_file_create(kind, 2, names, paths, &src, &err), SL_OK);
        cr_assert_null(src);
        cr_assert_not_null(strstr(err.msg, a), "%s", err.msg);
        cr_assert_not_null(strstr(err.msg, b), "%s", err.msg);
        cr_assert_not_null(strstr(err.msg, "10"), "%s", err.msg);
        cr_assert_not_null(strstr(err.msg, "12"), "%s", err.msg);
    }
}

Test(sources, bad_files_and_names_are_refused_by_name)
{
    char good[256], missing[256], corrupt[256], scalar[256];
    snprintf(good, sizeof good, "%s/good.npy", tmpdir);
    snprintf(missing, sizeof missing, "%s/missing.npy", tmpdir);
    snprintf(corrupt, sizeof corrupt, "%s/corrupt.npy", tmpdir);
    snprintf(scalar, sizeof scalar, "%s/scalar.npy", tmpdir);
    write_array(good, SL_U8, 2, 4, 2);
    write_array(scalar, SL_F32, 0, 0, 0);
    FILE *f = fopen(corrupt, "wb");
    fputs("this is not an npy file, not even close to one", f);
    fclose(f);

    struct {
        const char *path;
        const char *name;
        sl_source_kind kind;
        const char *needle;
    } cases[] = {
        {missing, "b", SL_SOURCE_MMAP, missing},
        {corrupt, "b", SL_SOURCE_PREAD, corrupt},
        {scalar, "b", SL_SOURCE_MMAP, scalar},
        {good, "a", SL_SOURCE_PREAD, "'a'"},
        {good, "a_name_that_is_far_too_long_for_a_field", SL_SOURCE_MMAP, "shorter than 32"},
        {good, "b", SL_SOURCE_MEMORY, "eager or stream"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *names[2] = {"a", cases[c].name}, *paths[2] = {good, cases[c].path};
        sl_source *src = NULL;
        sl_err err = {0};
        cr_assert_neq(sl_source_file_create(cases[c].kind, 2, names, paths, &src, &err), SL_OK, "case %zu", c);
        cr_assert_null(src);
        cr_assert_not_null(strstr(err.msg, cases[c].needle), "case %zu: %s", c, err.msg);
    }
}

typedef struct reader_args {
    const sl_source *src;
    const fixture *fx;
    uint64_t seed;
    int mismatches;
    int failures;
} reader_args;

static void *reader(void *arg)
{
    reader_args *a = arg;
    uint64_t state = a->seed;
    unsigned char buf[300];
    for (int i = 0; i < 3000; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        int f = (int)(state % 3);
        size_t offset = (size_t)(state >> 8) % a->fx->bytes[f];
        size_t n = (size_t)(state >> 40) % sizeof buf;
        if (n > a->fx->bytes[f] - offset)
            n = a->fx->bytes[f] - offset;
        sl_err err = {0};
        if (sl_source_read(a->src, f, offset, n, buf, &err) != SL_OK)
            a->failures++;
        else if (memcmp(buf, (char *)a->fx->data[f] + offset, n) != 0)
            a->mismatches++;
    }
    return NULL;
}

/* Eight threads read random ranges of src at once; every read must succeed
 * and return the fixture's bytes. */
/* Eight threads reading random ranges of src at once; returns how many of
 * their reads failed or gave wrong bytes (each thread's count logged). */
static int bad_reads_from_many_threads(sl_source *src, const fixture *fx)
{
    enum { THREADS = 8 };
    pthread_t threads[THREADS];
    reader_args args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t] = (reader_args){.src = src, .fx = fx, .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1)};
        cr_assert_eq(pthread_create(&threads[t], NULL, reader, &args[t]), 0);
    }
    int bad = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        if (args[t].failures || args[t].mismatches)
            cr_log_error("thread %d had %d failed reads and %d wrong ranges", t, args[t].failures, args[t].mismatches);
        bad += args[t].failures + args[t].mismatches;
    }
    return bad;
}

Test(sources, pread_source_is_safe_from_many_threads)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *src = file_source(&fx, SL_SOURCE_PREAD, "threads");
    cr_expect_eq(bad_reads_from_many_threads(src, &fx), 0, "reads failed or gave wrong bytes");
    sl_source_free(src);
    free_fixture(&fx);
}

/* Eight threads through two slots of three rows: readers wait on chunks
 * being loaded, evict each other's chunks and read around a full cache, and
 * every byte must still be right. */
Test(sources, stream_source_is_safe_from_many_threads)
{
    fixture fx;
    make_fixture(&fx);
    sl_source *src = stream_source(&fx, "threads", 3, 2);
    cr_expect_eq(bad_reads_from_many_threads(src, &fx), 0, "reads failed or gave wrong bytes");
    sl_source_free(src);
    free_fixture(&fx);
}

/* A file that shrinks under the mmap source used to kill the process with
 * SIGBUS. Now the read that went past the new end fails, naming the file,
 * and so does every read after it (the mapping's tail is void). */
Test(sources, a_mapped_file_that_shrinks_is_an_error_naming_it)
{
    char path[256];
    snprintf(path, sizeof path, "%s/shrinks.npy", tmpdir);
    write_array(path, SL_U8, 2, 64, 4096);
    const char *name = "x";
    const char *paths[1] = {path};
    sl_source *src;
    sl_err err = {0};
    cr_assert_eq(sl_source_file_create(SL_SOURCE_MMAP, 1, &name, paths, &src, &err), SL_OK, "%s", err.msg);
    unsigned char row[4096];
    cr_assert_eq(sl_source_read(src, 0, 0, sizeof row, row, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(truncate(path, 4096), 0);
    /* Row 40 starts 160 KiB into a file that now has 4 KiB. */
    sl_status st = sl_source_read(src, 0, 40 * sizeof row, sizeof row, row, &err);
    cr_assert_eq(st, SL_EIO, "a read past the new end returned %d", st);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, "shrank to 4096 bytes"), "message: %s", err.msg);
    memset(&err, 0, sizeof err);
    cr_assert_eq(sl_source_read(src, 0, 0, sizeof row, row, &err), SL_EIO, "later reads must fail too");
    sl_source_free(src);
}

/* A mapping that was never touched past the end stays valid: the guard
 * fails only sources whose reads actually hit the missing pages. */
Test(sources, another_mapped_source_is_unaffected_by_a_shrunk_one)
{
    char shrinking[256], intact[256];
    snprintf(shrinking, sizeof shrinking, "%s/a.npy", tmpdir);
    snprintf(intact, sizeof intact, "%s/b.npy", tmpdir);
    write_array(shrinking, SL_U8, 2, 64, 4096);
    write_array(intact, SL_U8, 2, 64, 4096);
    const char *name = "x";
    const char *pa[1] = {shrinking}, *pb[1] = {intact};
    sl_source *a, *b;
    sl_err err = {0};
    cr_assert_eq(sl_source_file_create(SL_SOURCE_MMAP, 1, &name, pa, &a, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(sl_source_file_create(SL_SOURCE_MMAP, 1, &name, pb, &b, &err), SL_OK, "%s", err.msg);
    cr_assert_eq(truncate(shrinking, 0), 0);
    unsigned char row[4096];
    cr_assert_eq(sl_source_read(a, 0, 63 * sizeof row, sizeof row, row, &err), SL_EIO);
    cr_assert_eq(sl_source_read(b, 0, 63 * sizeof row, sizeof row, row, &err), SL_OK, "%s", err.msg);
    sl_source_free(a);
    sl_source_free(b);
}
