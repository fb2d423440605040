/* Bad input to the NPT entry points (seed 004): every error path
 * returns a status with a readable mf_last_error(), never a crash. Rank 0 and
 * other non-positive sizes, mismatched tensor shapes, null pointers, bad
 * dtypes, overflowing or int-exceeding sizes, bad chunk options and too small
 * budgets; for the optimized entries, the references and the formulas.
 * Validation happens before any memory is touched, so the pointers here are
 * small dummies (a missed check would crash the forked test).
 */
#include "mf_test.h"

#include "memfix/npt.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const mf_npt_shape good = { 2, 3, 5, 7, 4 };
static float dummy[4]; /* a non-null pointer for arguments that must not be read */
#define P ((void *)dummy)

/* A shape with dim 'which' (0 batch .. 4 rank) set to 'value'. */
static mf_npt_shape with_dim(int which, int64_t value)
{
    mf_npt_shape s = good;
    int64_t *d[5] = { &s.batch, &s.seq, &s.d_model, &s.d_ffn, &s.rank };
    *d[which] = value;
    return s;
}

static mf_status fwd(mf_npt_shape s)
{
    return mf_npt_forward(mf_test_ctx(), MF_DTYPE_F32, s, P, P, P, P, P, NULL, P, NULL);
}
static mf_status bwd(mf_npt_shape s)
{
    return mf_npt_backward(mf_test_ctx(), MF_DTYPE_F32, s, P, P, P, P, P, P, P, P, P, P, P, P, NULL);
}
static mf_status ref_fwd(mf_npt_shape s)
{
    return mf_ref_npt_forward(mf_test_ctx(), MF_DTYPE_F32, s, P, P, P, P, P, NULL, P);
}
static mf_status ref_bwd(mf_npt_shape s)
{
    return mf_ref_npt_backward(mf_test_ctx(), MF_DTYPE_F32, s, P, P, P, P, P, P, P, P, P, P, P, P);
}

/* _i: dim (5) x value {0, -1}: rank 0 first of all. */
START_TEST(test_nonpositive_sizes)
{
    const int which = 4 - _i / 2; /* rank, d_ffn, d_model, seq, batch */
    const mf_npt_shape s = with_dim(which, (_i % 2) ? -1 : 0);
    MF_ASSERT_STATUS(fwd(s), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(bwd(s), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(ref_fwd(s), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(ref_bwd(s), MF_ERR_INVALID_SIZE);
    ck_assert_uint_eq(mf_npt_factored_forward_scratch_ceiling(MF_DTYPE_F32, s, NULL), SIZE_MAX);
    ck_assert_uint_eq(mf_npt_factored_backward_scratch_ceiling(MF_DTYPE_F32, s, NULL), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_npt_forward_scratch_bytes(s), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_npt_backward_scratch_bytes(s), SIZE_MAX);
    ck_assert_uint_eq(mf_npt_delta_w_bytes(MF_DTYPE_F32, s), SIZE_MAX);
}
END_TEST

START_TEST(test_rank_zero_message)
{
    MF_ASSERT_STATUS(fwd(with_dim(4, 0)), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "rank"));
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "mf_npt_forward"));
    MF_ASSERT_STATUS(ref_bwd(with_dim(4, 0)), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "rank"));
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "mf_ref_npt_backward"));
}
END_TEST

/* Mismatched tensor shapes, as PyTorch-style dims. */
START_TEST(test_mismatched_shapes)
{
    int64_t h[3] = { 2, 3, 5 }, W[2] = { 5, 7 }, A[2] = { 5, 4 }, B[2] = { 4, 7 }, m[3] = { 2, 3, 4 };
    mf_npt_shape s;
    memset(&s, 0, sizeof s);
    MF_ASSERT_OK(mf_npt_shape_from_dims(h, W, A, B, m, &s));
    ck_assert_int_eq(s.batch, 2);
    ck_assert_int_eq(s.seq, 3);
    ck_assert_int_eq(s.d_model, 5);
    ck_assert_int_eq(s.d_ffn, 7);
    ck_assert_int_eq(s.rank, 4);
    struct {
        int64_t *dim;
        int64_t bad;
        const char *names;
    } cases[] = {
        { &W[0], 6, "W" }, { &A[0], 4, "A" }, { &B[0], 3, "B" }, { &B[1], 8, "B" },
        { &m[0], 1, "m" }, { &m[1], 4, "m" }, { &m[2], 5, "m" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const int64_t keep = *cases[i].dim;
        *cases[i].dim = cases[i].bad;
        MF_ASSERT_STATUS(mf_npt_shape_from_dims(h, W, A, B, m, &s), MF_ERR_INVALID_SIZE);
        ck_assert_msg(strstr(mf_last_error(), cases[i].names) != NULL, "message '%s' does not name %s",
                      mf_last_error(), cases[i].names);
        *cases[i].dim = keep;
    }
    /* rank 0 throughout: consistent but not positive */
    A[1] = 0;
    B[0] = 0;
    m[2] = 0;
    MF_ASSERT_STATUS(mf_npt_shape_from_dims(h, W, A, B, m, &s), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_npt_shape_from_dims(NULL, W, A, B, m, &s), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_npt_shape_from_dims(h, W, A, B, m, NULL), MF_ERR_NULL_POINTER);
}
END_TEST

/* _i: which pointer argument of the forward is NULL (ctx, h, W, A, B, m, out). */
START_TEST(test_forward_null_pointers)
{
    void *a[7] = { mf_test_ctx(), P, P, P, P, P, P };
    a[_i] = NULL;
    MF_ASSERT_STATUS(mf_npt_forward((mf_context *)a[0], MF_DTYPE_F32, good, a[1], a[2], a[3], a[4], a[5],
                                    NULL, a[6], NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(
        mf_ref_npt_forward((mf_context *)a[0], MF_DTYPE_F32, good, a[1], a[2], a[3], a[4], a[5], NULL, a[6]),
        MF_ERR_NULL_POINTER);
}
END_TEST

/* _i: which input of the backward is NULL (ctx, h, W, A, B, m, grad_out). */
START_TEST(test_backward_null_pointers)
{
    void *a[7] = { mf_test_ctx(), P, P, P, P, P, P };
    a[_i] = NULL;
    MF_ASSERT_STATUS(mf_npt_backward((mf_context *)a[0], MF_DTYPE_F32, good, a[1], a[2], a[3], a[4], a[5],
                                     a[6], P, P, P, P, P, P, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_npt_backward((mf_context *)a[0], MF_DTYPE_F32, good, a[1], a[2], a[3], a[4], a[5],
                                         a[6], P, P, P, P, P, P),
                     MF_ERR_NULL_POINTER);
}
END_TEST

START_TEST(test_backward_no_gradient_requested)
{
    mf_context *ctx = mf_test_ctx();
    MF_ASSERT_STATUS(
        mf_npt_backward(ctx, MF_DTYPE_F32, good, P, P, P, P, P, P, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        MF_ERR_NULL_POINTER);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "no gradient"));
    MF_ASSERT_STATUS(
        mf_ref_npt_backward(ctx, MF_DTYPE_F32, good, P, P, P, P, P, P, NULL, NULL, NULL, NULL, NULL, NULL),
        MF_ERR_NULL_POINTER);
}
END_TEST

START_TEST(test_bad_dtype)
{
    mf_context *ctx = mf_test_ctx();
    const mf_dtype bad = (mf_dtype)7;
    MF_ASSERT_STATUS(mf_npt_forward(ctx, bad, good, P, P, P, P, P, NULL, P, NULL), MF_ERR_DTYPE);
    MF_ASSERT_STATUS(mf_npt_backward(ctx, bad, good, P, P, P, P, P, P, P, P, P, P, P, P, NULL), MF_ERR_DTYPE);
    MF_ASSERT_STATUS(mf_ref_npt_forward(ctx, bad, good, P, P, P, P, P, NULL, P), MF_ERR_DTYPE);
    MF_ASSERT_STATUS(mf_ref_npt_backward(ctx, bad, good, P, P, P, P, P, P, P, P, P, P, P, P), MF_ERR_DTYPE);
    ck_assert_uint_eq(mf_npt_factored_forward_scratch_ceiling(bad, good, NULL), SIZE_MAX);
    ck_assert_uint_eq(mf_npt_delta_w_bytes(bad, good), SIZE_MAX);
}
END_TEST

/* Size products that overflow size_t, and sizes beyond cuBLAS's int. */
START_TEST(test_overflow_and_int_limits)
{
    const int64_t huge = (int64_t)1 << 40;
    const mf_npt_shape overflow = { huge, huge, 4, 4, 4 }; /* batch*seq = 2^80 */
    MF_ASSERT_STATUS(fwd(overflow), MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(bwd(overflow), MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(ref_fwd(overflow), MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(ref_bwd(overflow), MF_ERR_OVERFLOW);
    /* T*D*F*4 overflows only for the reference's 4D tensor */
    const mf_npt_shape wide = { 1 << 20, 1 << 10, 1 << 16, 1 << 16, 4 };
    MF_ASSERT_STATUS(ref_fwd(wide), MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(ref_bwd(wide), MF_ERR_OVERFLOW);
    ck_assert_uint_eq(mf_ref_npt_forward_scratch_bytes(wide), SIZE_MAX);
    /* T = 2^30 * 4 > INT_MAX tokens: cuBLAS dims are int */
    const mf_npt_shape many = { (int64_t)1 << 30, 4, 8, 8, 4 };
    MF_ASSERT_STATUS(fwd(many), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(bwd(many), MF_ERR_INVALID_SIZE);
    const mf_npt_shape wide_ffn = { 1, 1, 8, (int64_t)1 << 31, 4 };
    MF_ASSERT_STATUS(fwd(wide_ffn), MF_ERR_INVALID_SIZE);
    ck_assert_uint_eq(mf_npt_factored_forward_scratch_ceiling(MF_DTYPE_F32, wide_ffn, NULL), SIZE_MAX);
}
END_TEST

START_TEST(test_bad_options)
{
    mf_context *ctx = mf_test_ctx();
    mf_npt_options o;
    mf_npt_options_init(&o);
    ck_assert_int_eq(o.chunk_tokens, 0);
    ck_assert_uint_eq(o.scratch_budget_bytes, 0);
    mf_npt_options_init(NULL); /* a no-op */
    o.chunk_tokens = -3;
    MF_ASSERT_STATUS(mf_npt_forward(ctx, MF_DTYPE_F32, good, P, P, P, P, P, NULL, P, &o),
                     MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_npt_backward(ctx, MF_DTYPE_F32, good, P, P, P, P, P, P, P, P, P, P, P, P, &o),
                     MF_ERR_INVALID_SIZE);
    /* a budget below one token: forward needs rank*(4+4) = 32 bytes per token */
    mf_npt_options_init(&o);
    o.scratch_budget_bytes = 31;
    MF_ASSERT_STATUS(mf_npt_forward(ctx, MF_DTYPE_F32, good, P, P, P, P, P, NULL, P, &o), MF_ERR_BUDGET);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "budget"));
    o.scratch_budget_bytes = 32;
    int64_t c = 0;
    MF_ASSERT_OK(mf_npt_resolve_chunk(MF_NPT_FORWARD, MF_DTYPE_F32, good, &o, &c));
    ck_assert_int_eq(c, 1);
    /* bf16 backward: the fixed accumulators alone, (5 + 7) * 4 * 4 = 192 bytes, are not enough */
    o.scratch_budget_bytes = 192;
    MF_ASSERT_STATUS(mf_npt_backward(ctx, MF_DTYPE_BF16, good, P, P, P, P, P, P, P, P, P, P, P, P, &o),
                     MF_ERR_BUDGET);
    ck_assert_uint_eq(mf_npt_factored_backward_scratch_ceiling(MF_DTYPE_BF16, good, &o), SIZE_MAX);
    /* resolve_chunk's own arguments */
    MF_ASSERT_STATUS(mf_npt_resolve_chunk(MF_NPT_FORWARD, MF_DTYPE_F32, good, NULL, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_npt_resolve_chunk((mf_npt_pass)5, MF_DTYPE_F32, good, NULL, &c),
                     MF_ERR_INVALID_ARGUMENT);
}
END_TEST

/* Bad pointers (ASan saw npt.cu read past a short buffer): every tensor is
 * checked against the extent the shape needs before any launch, naming it; a
 * freed buffer or a host array is refused without launching (it used to leave
 * a sticky launch error behind), and the process goes on working. */
START_TEST(test_bad_pointers)
{
    mf_context *ctx = mf_test_ctx();
    const size_t T = 6, D = 5, F = 7, R = 4; /* good */
    const size_t sizes[12] = {
        T * D, D * F, D * R, R * F, T * R, F, T * F, T * D, D * F, D * R, R * F, T * R
    };
    void *t[12];
    for (int i = 0; i < 12; i++) {
        float *h = mf_test_nan_host(sizes[i]);
        for (size_t j = 0; j < sizes[i]; j++) h[j] = 0.25f * (float)(j % 7) - 0.5f;
        t[i] = mf_test_dev_upload(ctx, h, sizes[i] * 4);
        free(h);
    }
    void *small = NULL, *freed = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 16, &small));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 16, &freed));
    MF_ASSERT_OK(mf_buffer_free(ctx, freed));
    float host[64] = { 0 };
    MF_ASSERT_STATUS(mf_npt_forward(ctx, MF_DTYPE_F32, good, t[0], t[1], t[2], small, t[4], NULL, t[6], NULL),
                     MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "B is too small"));
    MF_ASSERT_STATUS(mf_npt_forward(ctx, MF_DTYPE_F32, good, t[0], t[1], t[2], t[3], t[4], small, t[6], NULL),
                     MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "bias is too small"));
    MF_ASSERT_STATUS(mf_npt_backward(ctx, MF_DTYPE_F32, good, t[0], t[1], t[2], t[3], t[4], t[6], t[7], t[8],
                                     t[9], t[10], small, NULL, NULL),
                     MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "grad_m is too small"));
    MF_ASSERT_STATUS(mf_npt_forward(ctx, MF_DTYPE_F32, good, freed, t[1], t[2], t[3], t[4], NULL, t[6], NULL),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "h ("));
    MF_ASSERT_STATUS(mf_npt_backward(ctx, MF_DTYPE_F32, good, t[0], t[1], t[2], t[3], t[4], host, t[7], NULL,
                                     NULL, NULL, NULL, NULL, NULL),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "grad_out ("));
    /* Nothing launched, nothing sticky. */
    MF_ASSERT_OK(mf_npt_forward(ctx, MF_DTYPE_F32, good, t[0], t[1], t[2], t[3], t[4], t[5], t[6], NULL));
    MF_ASSERT_OK(mf_npt_backward(ctx, MF_DTYPE_F32, good, t[0], t[1], t[2], t[3], t[4], t[6], t[7], t[8],
                                 t[9], t[10], t[11], NULL, NULL));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    mf_context *fresh = NULL;
    MF_ASSERT_OK(mf_context_create(&fresh, mf_test_backend()));
    mf_context_destroy(fresh);
    for (int i = 0; i < 12; i++) mf_buffer_free(ctx, t[i]);
    mf_buffer_free(ctx, small);
}
END_TEST

/* Non-finite inputs: the factored form and the per-token reference agree on
 * which outputs a NaN reaches. _i: the NaN in 0 h (token 2), 1 m (token 4),
 * 2 W (column 3), 3 B (column 5), 4 A (every output). */
START_TEST(test_nonfinite)
{
    mf_context *ctx = mf_test_ctx();
    const size_t T = 6, D = 5, F = 7, R = 4; /* good */
    float h[6 * 5], W[5 * 7], A[5 * 4], B[4 * 7], m[6 * 4], g[6 * 7];
    mf_fill_uniform_f32(h, T * D, 91, -1.0f, 1.0f);
    mf_fill_uniform_f32(W, D * F, 92, -1.0f, 1.0f);
    mf_fill_uniform_f32(A, D * R, 93, -1.0f, 1.0f);
    mf_fill_uniform_f32(B, R * F, 94, -1.0f, 1.0f);
    mf_fill_uniform_f32(m, T * R, 95, -1.0f, 1.0f);
    mf_fill_uniform_f32(g, T * F, 96, -1.0f, 1.0f);
    float *where[5] = { &h[2 * D + 1], &m[4 * R + 2], &W[1 * F + 3], &B[2 * F + 5], &A[3 * R + 1] };
    *where[_i] = NAN;
    float ro[6 * 7], rgh[6 * 5], rgW[5 * 7], rgA[5 * 4], rgB[4 * 7], rgm[6 * 4];
    MF_ASSERT_OK(mf_ref_npt_forward(ctx, MF_DTYPE_F32, good, h, W, A, B, m, NULL, ro));
    MF_ASSERT_OK(
        mf_ref_npt_backward(ctx, MF_DTYPE_F32, good, h, W, A, B, m, g, rgh, rgW, rgA, rgB, rgm, NULL));
    void *dh = mf_test_dev_upload(ctx, h, sizeof h), *dW = mf_test_dev_upload(ctx, W, sizeof W);
    void *dA = mf_test_dev_upload(ctx, A, sizeof A), *dB = mf_test_dev_upload(ctx, B, sizeof B);
    void *dm = mf_test_dev_upload(ctx, m, sizeof m), *dg = mf_test_dev_upload(ctx, g, sizeof g);
    float *o = mf_test_dev_nan(ctx, T * F + 4), *gh = mf_test_dev_nan(ctx, T * D + 4);
    float *gW = mf_test_dev_nan(ctx, D * F + 4), *gA = mf_test_dev_nan(ctx, D * R + 4);
    float *gB = mf_test_dev_nan(ctx, R * F + 4), *gm = mf_test_dev_nan(ctx, T * R + 4);
    MF_ASSERT_OK(mf_npt_forward(ctx, MF_DTYPE_F32, good, dh, dW, dA, dB, dm, NULL, o, NULL));
    MF_ASSERT_OK(
        mf_npt_backward(ctx, MF_DTYPE_F32, good, dh, dW, dA, dB, dm, dg, gh, gW, gA, gB, gm, NULL, NULL));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *got[6] = {
        mf_test_dev_fetch(ctx, o, T * F, 4, "out"),     mf_test_dev_fetch(ctx, gh, T * D, 4, "grad_h"),
        mf_test_dev_fetch(ctx, gW, D * F, 4, "grad_W"), mf_test_dev_fetch(ctx, gA, D * R, 4, "grad_A"),
        mf_test_dev_fetch(ctx, gB, R * F, 4, "grad_B"), mf_test_dev_fetch(ctx, gm, T * R, 4, "grad_m")
    };
    MF_ASSERT_CLOSE(got[0], ro, T * F, "npt.forward.f32");
    MF_ASSERT_CLOSE(got[1], rgh, T * D, "npt.backward.f32");
    MF_ASSERT_CLOSE(got[2], rgW, D * F, "npt.backward.f32");
    MF_ASSERT_CLOSE(got[3], rgA, D * R, "npt.backward.f32");
    MF_ASSERT_CLOSE(got[4], rgB, R * F, "npt.backward.f32");
    MF_ASSERT_CLOSE(got[5], rgm, T * R, "npt.backward.f32");
    ck_assert_msg(isnan(got[0][_i == 0   ? 2 * F
                               : _i == 1 ? 4 * F
                               : _i == 2 ? 3
                               : _i == 3 ? 5
                                         : 0]),
                  "the NaN must reach the output");
    for (int i = 0; i < 6; i++) free(got[i]);
    void *all[] = { dh, dW, dA, dB, dm, dg, o, gh, gW, gA, gB, gm };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_buffer_free(ctx, all[i]);
}
END_TEST

static Suite *npt_badinput_suite(void)
{
    Suite *s = suite_create("npt_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_nonpositive_sizes, 0, 10);
    tcase_add_test(tc, test_rank_zero_message);
    tcase_add_test(tc, test_mismatched_shapes);
    tcase_add_loop_test(tc, test_forward_null_pointers, 0, 7);
    tcase_add_loop_test(tc, test_backward_null_pointers, 0, 7);
    tcase_add_test(tc, test_backward_no_gradient_requested);
    tcase_add_test(tc, test_bad_dtype);
    tcase_add_test(tc, test_overflow_and_int_limits);
    tcase_add_test(tc, test_bad_options);
    tcase_add_test(tc, test_bad_pointers);
    tcase_add_loop_test(tc, test_nonfinite, 0, 5);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(npt_badinput_suite()); }
