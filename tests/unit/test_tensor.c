/* Batches: one aligned allocation, shapes that follow the row count, and
 * dtype names that round-trip. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sluice/core/tensor.h"

static sl_schema image_label_schema(void)
{
    sl_schema s = {0};
    s.nfields = 2;
    strcpy(s.fields[0].name, "image");
    s.fields[0].dtype = SL_U8;
    s.fields[0].shape = (sl_shape){3, {4, 5, 3}};
    strcpy(s.fields[1].name, "label");
    s.fields[1].dtype = SL_I32;
    s.fields[1].shape = (sl_shape){0, {0}};
    return s;
}

Test(tensor, batch_layout_and_alignment)
{
    sl_schema s = image_label_schema();
    sl_batch *b;
    sl_err err = {0};
    cr_assert_eq(sl_batch_create(&s, 7, &b, &err), SL_OK, "%s", err.msg);
    cr_expect_eq(b->fields[0].shape.rank, 4);
    cr_expect_eq(b->fields[0].shape.dims[0], 7);
    cr_expect_eq(b->fields[0].shape.dims[3], 3);
    cr_expect_eq(sl_tensor_nbytes(&b->fields[0]), 7u * 60u);
    cr_expect_eq(sl_tensor_nbytes(&b->fields[1]), 7u * 4u);
    cr_expect_eq((uintptr_t)b->fields[0].data % SL_ALIGN, 0u);
    cr_expect_eq((uintptr_t)b->fields[1].data % SL_ALIGN, 0u);
    /* Fields must not overlap: write the whole of each and check both. */
    memset(b->fields[0].data, 0x11, sl_tensor_nbytes(&b->fields[0]));
    memset(b->fields[1].data, 0x22, sl_tensor_nbytes(&b->fields[1]));
    memset(b->element_ids, 0x33, 7 * sizeof(int64_t));
    cr_expect_eq(((uint8_t *)b->fields[0].data)[7 * 60 - 1], 0x11);
    cr_expect_eq(((uint8_t *)b->fields[1].data)[0], 0x22);
    sl_batch_set_count(b, 3);
    cr_expect_eq(b->fields[1].shape.dims[0], 3);
    cr_expect_eq(sl_batch_data_bytes(b), 3u * 60u + 3u * 4u);
    cr_expect_eq(sl_batch_field(b, "label"), &b->fields[1]);
    cr_expect_null(sl_batch_field(b, "missing"));
    sl_batch_free(b);
}

Test(tensor, invalid_batches_are_refused)
{
    sl_schema s = image_label_schema();
    sl_batch *b;
    sl_err err = {0};
    cr_expect_eq(sl_batch_create(&s, 0, &b, &err), SL_EINVAL);
    cr_expect(strstr(err.msg, "capacity") != NULL, "%s", err.msg);
    s.nfields = 0;
    cr_expect_eq(sl_batch_create(&s, 4, &b, &err), SL_EINVAL);
}

Test(tensor, dtype_names_round_trip)
{
    for (int d = 0; d < SL_DTYPE_COUNT; d++) {
        sl_dtype parsed;
        cr_assert(sl_dtype_parse(sl_dtype_name((sl_dtype)d), &parsed));
        cr_expect_eq((int)parsed, d);
    }
    sl_dtype unused;
    cr_expect_not(sl_dtype_parse("f16", &unused));
    cr_expect_eq(sl_dtype_size(SL_I64), 8u);
    char buf[64];
    sl_shape shape = {3, {2, 32, 3}};
    sl_shape_format(&shape, buf, sizeof buf);
    cr_expect_str_eq(buf, "[2, 32, 3]");
}
