/* Bad input to the nsa entry points (fused and reference): every error path
 * returns its status with a readable message, never crashes: NULL pointers,
 * sizes <= 0, Hq not a multiple of Hk, configurations (l or l' not a multiple
 * of d, zero blocks, negative or NaN scale), the fused kernel's limits (D, the
 * group size, the number of selection blocks), byte counts that overflow
 * size_t, bad dtype and variant, too-short and freed device buffers. */
#include "mf_test.h"

#include "memfix/nsa.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Small valid device buffers: B=1, S=4, Hq=2, Hk=1, D=4 (16 floats each is enough). */
enum { NB = 256 };
static void *q_, *k_, *v_, *g_;
static float *out_, *lse_;
static int32_t *sel_;

static void setup(void)
{
    mf_test_setup();
    mf_context *ctx = mf_test_ctx();
    void **all[] = { &q_, &k_, &v_, &g_, (void **)&out_, (void **)&lse_, (void **)&sel_ };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ck_assert_int_eq(mf_buffer_alloc(ctx, NB, all[i]), MF_OK);
        ck_assert_int_eq(mf_buffer_memset(ctx, *all[i], 0, NB), MF_OK);
    }
}
static void teardown(void)
{
    mf_context *ctx = mf_test_ctx();
    void *all[] = { q_, k_, v_, g_, out_, lse_, sel_ };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_buffer_free(ctx, all[i]);
    mf_test_teardown();
}

static const mf_nsa_config CFG = { 4, 2, 4, 2, 3, 0.0f };
#define FUSED(cfg, B, S, Hq, Hk, D)                                                                          \
    mf_nsa_forward(mf_test_ctx(), MF_NSA_FUSED, MF_DTYPE_F32, cfg, B, S, Hq, Hk, D, q_, k_, v_, g_, g_, g_,  \
                   out_, lse_, sel_)

START_TEST(test_valid_call_succeeds)
{
    MF_ASSERT_OK(FUSED(&CFG, 1, 4, 2, 1, 4));
    MF_ASSERT_OK(mf_context_synchronize(mf_test_ctx()));
}
END_TEST

START_TEST(test_null_pointers)
{
    mf_context *ctx = mf_test_ctx();
    const mf_dtype F = MF_DTYPE_F32;
    MF_ASSERT_STATUS(
        mf_nsa_forward(NULL, MF_NSA_FUSED, F, &CFG, 1, 4, 2, 1, 4, q_, k_, v_, g_, g_, g_, out_, NULL, NULL),
        MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FUSED(NULL, 1, 4, 2, 1, 4), MF_ERR_NULL_POINTER);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "cfg"));
    const void *in[6] = { q_, k_, v_, g_, g_, g_ };
    for (int i = 0; i < 7; i++) {
        const void *p[7] = { in[0], in[1], in[2], in[3], in[4], in[5], out_ };
        p[i] = NULL;
        MF_ASSERT_STATUS(mf_nsa_forward(ctx, MF_NSA_FUSED, F, &CFG, 1, 4, 2, 1, 4, p[0], p[1], p[2], p[3],
                                        p[4], p[5], (float *)p[6], NULL, NULL),
                         MF_ERR_NULL_POINTER);
    }
    float h[64];
    for (int i = 0; i < 7; i++) {
        const void *p[7] = { h, h, h, h, h, h, h };
        p[i] = NULL;
        MF_ASSERT_STATUS(mf_ref_nsa_forward(ctx, F, &CFG, 1, 4, 2, 1, 4, p[0], p[1], p[2], p[3], p[4], p[5],
                                            (float *)p[6], NULL, NULL),
                         MF_ERR_NULL_POINTER);
    }
    MF_ASSERT_STATUS(mf_ref_nsa_forward(NULL, F, &CFG, 1, 4, 2, 1, 4, h, h, h, h, h, h, h, NULL, NULL),
                     MF_ERR_NULL_POINTER);
}
END_TEST

START_TEST(test_bad_sizes_and_config)
{
    mf_context *ctx = mf_test_ctx();
    const int64_t dims[5][5] = {
        { 0, 4, 2, 1, 4 }, { 1, 0, 2, 1, 4 }, { 1, 4, -2, 1, 4 }, { 1, 4, 2, 0, 4 }, { 1, 4, 2, 1, 0 }
    };
    float h[64];
    for (int i = 0; i < 5; i++) {
        const int64_t *d = dims[i];
        MF_ASSERT_STATUS(FUSED(&CFG, d[0], d[1], d[2], d[3], d[4]), MF_ERR_INVALID_SIZE);
        MF_ASSERT_STATUS(mf_ref_nsa_forward(ctx, MF_DTYPE_F32, &CFG, d[0], d[1], d[2], d[3], d[4], h, h, h, h,
                                            h, h, h, NULL, NULL),
                         MF_ERR_INVALID_SIZE);
    }
    MF_ASSERT_STATUS(FUSED(&CFG, 1, 4, 3, 2, 4), MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "multiple of Hk"));
    mf_nsa_config c = CFG;
    c.block_cmp = 5;
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "multiples of"));
    c = CFG;
    c.block_sel = 3;
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_ARGUMENT);
    c = CFG;
    c.n_sel = 0;
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "cfg.n_sel"));
    c = CFG;
    c.window = -1;
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_SIZE);
    c = CFG;
    c.stride = 0;
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_SIZE);
    c = CFG;
    c.scale = -1.0f;
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_ARGUMENT);
    c.scale = NAN;
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_ARGUMENT);
    c.scale = INFINITY;
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_ARGUMENT);
    /* the fused kernel's limits (the reference has none) */
    MF_ASSERT_STATUS(FUSED(&CFG, 1, 1, 1, 1, MF_NSA_MAX_HEAD_DIM + 1), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "D <= 128"));
    MF_ASSERT_STATUS(FUSED(&CFG, 1, 1, MF_NSA_MAX_GROUP + 1, 1, 4), MF_ERR_INVALID_SIZE);
    c = CFG;
    c.n_sel = MF_NSA_MAX_N_SEL + 1; /* the top-n list's shared memory; S itself is unlimited */
    MF_ASSERT_STATUS(FUSED(&c, 1, 4, 2, 1, 4), MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "n_sel (n=513) must be <= 512"));
    /* overflow */
    MF_ASSERT_STATUS(FUSED(&CFG, INT64_MAX / 2, INT64_MAX / 2, 2, 1, 4), MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(mf_ref_nsa_forward(ctx, MF_DTYPE_F32, &CFG, 1, INT64_MAX / 64, 2, 1, 4, h, h, h, h, h, h,
                                        h, NULL, NULL),
                     MF_ERR_OVERFLOW);
    ck_assert_int_eq(mf_nsa_n_compressed(NULL, 4), -1);
    ck_assert_int_eq(mf_nsa_n_selection(&CFG, 0), -1);
    ck_assert_int_eq(mf_nsa_n_compressed(&CFG, 3), 0);
    ck_assert_int_eq(mf_nsa_n_compressed(&CFG, 9), 3);
    ck_assert_int_eq(mf_nsa_n_selection(&CFG, 9), 3);
}
END_TEST

START_TEST(test_bad_enums)
{
    mf_context *ctx = mf_test_ctx();
    MF_ASSERT_STATUS(mf_nsa_forward(ctx, (mf_nsa_variant)1, MF_DTYPE_F32, &CFG, 1, 4, 2, 1, 4, q_, k_, v_, g_,
                                    g_, g_, out_, NULL, NULL),
                     MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_nsa_forward(ctx, MF_NSA_FUSED, (mf_dtype)77, &CFG, 1, 4, 2, 1, 4, q_, k_, v_, g_, g_,
                                    g_, out_, NULL, NULL),
                     MF_ERR_DTYPE);
    float h[64];
    MF_ASSERT_STATUS(
        mf_ref_nsa_forward(ctx, (mf_dtype)77, &CFG, 1, 4, 2, 1, 4, h, h, h, h, h, h, h, NULL, NULL),
        MF_ERR_DTYPE);
    ck_assert_str_eq(mf_nsa_variant_name(MF_NSA_FUSED), "fused");
    ck_assert_ptr_null(mf_nsa_variant_name((mf_nsa_variant)1));
}
END_TEST

START_TEST(test_bad_pointers)
{
    mf_context *ctx = mf_test_ctx();
    const mf_dtype F = MF_DTYPE_F32;
    /* B=1 S=16 Hq=2 Hk=1 D=4: q needs 512 bytes, the buffers hold 256 */
    MF_ASSERT_STATUS(FUSED(&CFG, 1, 16, 2, 1, 4), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "q is too small"));
    MF_ASSERT_STATUS(mf_nsa_forward(ctx, MF_NSA_FUSED, F, &CFG, 1, 4, 2, 1, 4, q_, k_, v_, g_, g_, g_, out_,
                                    lse_, sel_ + 60),
                     MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "sel is too small"));
    void *freed = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 64, &freed));
    MF_ASSERT_OK(mf_buffer_free(ctx, freed));
    MF_ASSERT_STATUS(mf_nsa_forward(ctx, MF_NSA_FUSED, F, &CFG, 1, 4, 2, 1, 4, q_, freed, v_, g_, g_, g_,
                                    out_, NULL, NULL),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "k ("));
    /* backward: NULL, too small, the same validation */
    float *f = (float *)out_;
    MF_ASSERT_STATUS(mf_nsa_backward(ctx, MF_NSA_FUSED, F, &CFG, 1, 4, 2, 1, 4, q_, k_, v_, g_, g_, g_, q_,
                                     lse_, NULL, f, f, f, f, f, f),
                     MF_ERR_NULL_POINTER);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "sel is NULL"));
    MF_ASSERT_STATUS(mf_nsa_backward(ctx, MF_NSA_FUSED, F, &CFG, 1, 4, 2, 1, 4, q_, k_, v_, g_, g_, g_, q_,
                                     lse_, sel_, f, f, f, f, f, f + 60),
                     MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "dg_win is too small"));
    MF_ASSERT_STATUS(mf_nsa_backward(ctx, MF_NSA_FUSED, F, &CFG, 1, 4, 3, 2, 4, q_, k_, v_, g_, g_, g_, q_,
                                     lse_, sel_, f, f, f, f, f, f),
                     MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_nsa_backward(ctx, (mf_nsa_variant)3, F, &CFG, 1, 4, 2, 1, 4, q_, k_, v_, g_, g_, g_,
                                     q_, lse_, sel_, f, f, f, f, f, f),
                     MF_ERR_INVALID_ARGUMENT);
    float h[64];
    MF_ASSERT_STATUS(
        mf_ref_nsa_backward(ctx, F, &CFG, 1, 4, 2, 1, 4, h, h, h, h, h, h, NULL, h, h, h, h, h, h),
        MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_nsa_backward(ctx, F, &CFG, 1, 4, 3, 2, 4, h, h, h, h, h, h, h, h, h, h, h, h, h),
                     MF_ERR_INVALID_ARGUMENT);
    /* Nothing launched, nothing sticky. */
    MF_ASSERT_OK(FUSED(&CFG, 1, 4, 2, 1, 4));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
}
END_TEST

static Suite *nsa_badinput_suite(void)
{
    Suite *s = suite_create("nsa_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_valid_call_succeeds);
    tcase_add_test(tc, test_null_pointers);
    tcase_add_test(tc, test_bad_sizes_and_config);
    tcase_add_test(tc, test_bad_enums);
    tcase_add_test(tc, test_bad_pointers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(nsa_badinput_suite()); }
