/* Bad input to the linear attention entry points (optimized and reference):
 * every error path returns its status with a readable message. Shapes are
 * single-sourced (q and k share D; v, dout and out share Dv), so a q/k
 * mismatch cannot be expressed; the checks cover zero/negative sizes, D = 0,
 * head dimensions beyond 128, chunk sizes 0, out of [16, 128] or not a power
 * of two, a state with the bidirectional form, and size_t overflow. */
#include "mf_test.h"

#include "memfix/linear_attention.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *dq_, *dk_, *dv_, *ddo_;
static float *dout_, *ddq_, *ddk_, *ddv_, *dst_;

static void setup(void)
{
    mf_test_setup();
    mf_context *ctx = mf_test_ctx();
    void **all[] = { &dq_,           &dk_,           &dv_,           &ddo_,         (void **)&dout_,
                     (void **)&ddq_, (void **)&ddk_, (void **)&ddv_, (void **)&dst_ };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ck_assert_int_eq(mf_buffer_alloc(ctx, 256, all[i]), MF_OK);
        ck_assert_int_eq(mf_buffer_memset(ctx, *all[i], 0, 256), MF_OK);
    }
}
static void teardown(void)
{
    mf_context *ctx = mf_test_ctx();
    void *all[] = { dq_, dk_, dv_, ddo_, dout_, ddq_, ddk_, ddv_, dst_ };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_buffer_free(ctx, all[i]);
    mf_test_teardown();
}

#define FWD(ctx, dt, causal, C, B, H, N, D, Dv, q, k, v, st, out)                                            \
    mf_linear_attention_forward(ctx, dt, causal, C, B, H, N, D, Dv, q, k, v, st, out)
#define BWD(ctx, dt, causal, C, B, H, N, D, Dv, q, k, v, out, dout, st, gr, dq, dk, dv)                      \
    mf_linear_attention_backward(ctx, dt, causal, C, B, H, N, D, Dv, q, k, v, out, dout, st, gr, dq, dk, dv)

START_TEST(test_valid_call_succeeds)
{
    mf_context *ctx = mf_test_ctx();
    mf_linear_attention_state st = { dst_, NULL, NULL, NULL };
    MF_ASSERT_OK(FWD(ctx, MF_DTYPE_F32, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, &st, dout_));
    MF_ASSERT_OK(BWD(ctx, MF_DTYPE_F32, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, &st, NULL, ddq_,
                     ddk_, ddv_));
    MF_ASSERT_OK(
        FWD(ctx, MF_DTYPE_BF16, 0, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, dout_)); /* chunk ignored */
    MF_ASSERT_OK(mf_context_synchronize(ctx));
}
END_TEST

START_TEST(test_null_pointers)
{
    mf_context *ctx = mf_test_ctx();
    const mf_dtype F = MF_DTYPE_F32;
    MF_ASSERT_STATUS(FWD(NULL, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, dout_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, NULL, dk_, dv_, NULL, dout_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, NULL, dv_, NULL, dout_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, NULL, NULL, dout_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(
        BWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, ddo_, NULL, NULL, ddq_, ddk_, ddv_),
        MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(
        BWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, NULL, NULL, NULL, ddq_, ddk_, ddv_),
        MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(
        BWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, NULL, NULL, NULL, ddk_, ddv_),
        MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(
        BWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, NULL, NULL, ddq_, ddk_, NULL),
        MF_ERR_NULL_POINTER);
    float h[64] = { 0 };
    MF_ASSERT_STATUS(mf_ref_linear_attention_forward(NULL, F, 1, 1, 1, 4, 4, 4, h, h, h, NULL, h),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_linear_attention_forward(ctx, F, 1, 1, 1, 4, 4, 4, h, h, h, NULL, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(
        mf_ref_linear_attention_backward(ctx, F, 1, 1, 1, 4, 4, 4, h, h, h, NULL, NULL, NULL, h, h, h),
        MF_ERR_NULL_POINTER);
}
END_TEST

START_TEST(test_bad_sizes_and_chunks)
{
    mf_context *ctx = mf_test_ctx();
    const mf_dtype F = MF_DTYPE_F32;
    const int64_t bad[][5] = {
        { 0, 1, 4, 4, 4 }, { 1, 0, 4, 4, 4 },  { 1, 1, 0, 4, 4 },  { 1, 1, 4, 0, 4 }, /* D = 0 */
        { 1, 1, 4, 4, 0 }, { -3, 1, 4, 4, 4 }, { 1, 1, 4, -1, 4 }, { 1, 1, 4, 129, 4 }, { 1, 1, 4, 4, 200 },
    };
    float h[64] = { 0 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const int64_t *s = bad[i];
        for (int causal = 0; causal <= 1; causal++) {
            MF_ASSERT_STATUS(
                FWD(ctx, F, causal, 16, s[0], s[1], s[2], s[3], s[4], dq_, dk_, dv_, NULL, dout_),
                MF_ERR_INVALID_SIZE);
            MF_ASSERT_STATUS(BWD(ctx, F, causal, 16, s[0], s[1], s[2], s[3], s[4], dq_, dk_, dv_, dout_, ddo_,
                                 NULL, NULL, ddq_, ddk_, ddv_),
                             MF_ERR_INVALID_SIZE);
            if (s[3] <= 128 && s[4] <= 128)
                MF_ASSERT_STATUS(mf_ref_linear_attention_forward(ctx, F, causal, s[0], s[1], s[2], s[3], s[4],
                                                                 h, h, h, NULL, h),
                                 MF_ERR_INVALID_SIZE);
        }
    }
    /* chunk: 0, out of [16, 128], or not a power of two (causal only) */
    const int64_t chunks[] = { 0, -16, 8, 15, 48, 100, 256 };
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        MF_ASSERT_STATUS(FWD(ctx, F, 1, chunks[i], 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, dout_),
                         MF_ERR_INVALID_SIZE);
        MF_ASSERT_STATUS(BWD(ctx, F, 1, chunks[i], 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, NULL, NULL,
                             ddq_, ddk_, ddv_),
                         MF_ERR_INVALID_SIZE);
    }
    const int64_t big = INT64_C(1) << 40;
    MF_ASSERT_STATUS(FWD(ctx, F, 1, 16, big, big, 4, 4, 4, dq_, dk_, dv_, NULL, dout_), MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(mf_ref_linear_attention_forward(ctx, F, 1, big, big, 4, 4, 4, h, h, h, NULL, h),
                     MF_ERR_OVERFLOW);
    /* inputs fit, the reference's B*H*N*D*(Dv+1) doubles do not */
    MF_ASSERT_STATUS(mf_ref_linear_attention_backward(ctx, F, 1, 1, 1, INT64_C(1) << 50, 128, 128, h, h, h, h,
                                                      NULL, NULL, h, h, h),
                     MF_ERR_OVERFLOW);
}
END_TEST

START_TEST(test_bad_enums_and_state)
{
    mf_context *ctx = mf_test_ctx();
    const mf_dtype F = MF_DTYPE_F32;
    MF_ASSERT_STATUS(FWD(ctx, (mf_dtype)9, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, dout_), MF_ERR_DTYPE);
    MF_ASSERT_STATUS(FWD(ctx, F, 2, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, dout_), MF_ERR_INVALID_ARGUMENT);
    /* a state with the bidirectional form */
    mf_linear_attention_state st = { NULL, NULL, dst_, NULL };
    MF_ASSERT_STATUS(FWD(ctx, F, 0, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, &st, dout_), MF_ERR_INVALID_ARGUMENT);
    mf_linear_attention_state_grad gr = { NULL, NULL, NULL, dst_ };
    MF_ASSERT_STATUS(
        BWD(ctx, F, 0, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, NULL, &gr, ddq_, ddk_, ddv_),
        MF_ERR_INVALID_ARGUMENT);
    /* the backward does not write a final state */
    MF_ASSERT_STATUS(
        BWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, &st, NULL, ddq_, ddk_, ddv_),
        MF_ERR_INVALID_ARGUMENT);
    float h[64] = { 0 };
    MF_ASSERT_STATUS(mf_ref_linear_attention_forward(ctx, (mf_dtype)2, 1, 1, 1, 4, 4, 4, h, h, h, NULL, h),
                     MF_ERR_DTYPE);
    mf_linear_attention_state hs = { h, NULL, NULL, NULL };
    MF_ASSERT_STATUS(mf_ref_linear_attention_forward(ctx, F, 0, 1, 1, 4, 4, 4, h, h, h, &hs, h),
                     MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(
        mf_ref_linear_attention_backward(ctx, F, -1, 1, 1, 4, 4, 4, h, h, h, h, NULL, NULL, h, h, h),
        MF_ERR_INVALID_ARGUMENT);
    /* all-NULL state structs are the same as no state, also for bidir */
    mf_linear_attention_state empty = { NULL, NULL, NULL, NULL };
    MF_ASSERT_OK(FWD(ctx, F, 0, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, &empty, dout_));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
}
END_TEST

/* Bad pointers: the fixture's buffers hold 256 bytes (64 floats). Tensors and
 * the state are checked against the shape's extent before any launch, naming
 * the argument; a freed buffer or a host array is refused without launching,
 * and the process goes on working. */
START_TEST(test_bad_pointers)
{
    mf_context *ctx = mf_test_ctx();
    const mf_dtype F = MF_DTYPE_F32;
    MF_ASSERT_STATUS(FWD(ctx, F, 1, 16, 1, 1, 16, 4, 8, dq_, dk_, dv_, NULL, dout_), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "v is too small")); /* q, k: 64 floats fit */
    mf_linear_attention_state st = { NULL, NULL, dst_ + 60, NULL };   /* final_kv: 16 floats, 4 left */
    MF_ASSERT_STATUS(FWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, &st, dout_), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "state->final_kv is too small"));
    mf_linear_attention_state_grad gr = { NULL, NULL, NULL, dst_ + 62 }; /* d_initial_z: 4 floats, 2 left */
    MF_ASSERT_STATUS(
        BWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, NULL, &gr, ddq_, ddk_, ddv_),
        MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "grad->d_initial_z is too small"));
    void *freed = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 64, &freed));
    MF_ASSERT_OK(mf_buffer_free(ctx, freed));
    float host[64] = { 0 };
    MF_ASSERT_STATUS(FWD(ctx, F, 0, 0, 1, 1, 4, 4, 4, dq_, dk_, freed, NULL, dout_), MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "v ("));
    MF_ASSERT_STATUS(
        BWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, host, NULL, NULL, ddq_, ddk_, ddv_),
        MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "dout ("));
    /* Nothing launched, nothing sticky. */
    MF_ASSERT_OK(FWD(ctx, F, 1, 16, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, dout_));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    mf_context *fresh = NULL;
    MF_ASSERT_OK(mf_context_create(&fresh, mf_test_backend()));
    mf_context_destroy(fresh);
}
END_TEST

/* Non-finite inputs (include/memfix/linear_attention.h): a NaN reaches exactly
 * the outputs that depend on it, in the chunked kernels as in the reference's
 * cumsum. N = 40 spans three chunks of 16; the NaN sits at position 20, in the
 * middle of the second chunk, so the positions before it in the same chunk
 * (16..19), which the causal mask hides it from, must stay finite: a masked
 * product 0 * NaN would make them NaN. _i: 0 NaN in q, 1 in k, 2 in v. */
enum { LN_N = 40, LN_D = 8 };
START_TEST(test_nonfinite_causal)
{
    mf_context *ctx = mf_test_ctx();
    const size_t n = LN_N * LN_D;
    float q[LN_N * LN_D], k[LN_N * LN_D], v[LN_N * LN_D], dout[LN_N * LN_D];
    mf_test_fill_uniform(MF_DTYPE_F32, q, n, 81, -1.0f, 1.0f);
    mf_test_fill_uniform(MF_DTYPE_F32, k, n, 82, -1.0f, 1.0f);
    mf_test_fill_uniform(MF_DTYPE_F32, v, n, 83, -1.0f, 1.0f);
    mf_test_fill_uniform(MF_DTYPE_F32, dout, n, 84, -1.0f, 1.0f);
    float *which[3] = { q, k, v };
    which[_i][20 * LN_D + 3] = NAN;
    float ro[LN_N * LN_D], rdq[LN_N * LN_D], rdk[LN_N * LN_D], rdv[LN_N * LN_D];
    MF_ASSERT_OK(
        mf_ref_linear_attention_forward(ctx, MF_DTYPE_F32, 1, 1, 1, LN_N, LN_D, LN_D, q, k, v, NULL, ro));
    MF_ASSERT_OK(mf_ref_linear_attention_backward(ctx, MF_DTYPE_F32, 1, 1, 1, LN_N, LN_D, LN_D, q, k, v, dout,
                                                  NULL, NULL, rdq, rdk, rdv));
    for (int i = 16; i < 20; i++)
        ck_assert_msg(isfinite(ro[i * LN_D]), "reference out row %d should not see position 20", i);
    void *dq = mf_test_dev_upload(ctx, q, sizeof q), *dk = mf_test_dev_upload(ctx, k, sizeof k);
    void *dv = mf_test_dev_upload(ctx, v, sizeof v), *ddo = mf_test_dev_upload(ctx, dout, sizeof dout);
    float *o = mf_test_dev_nan(ctx, n + 8), *gq = mf_test_dev_nan(ctx, n + 8),
          *gk = mf_test_dev_nan(ctx, n + 8), *gv = mf_test_dev_nan(ctx, n + 8);
    MF_ASSERT_OK(FWD(ctx, MF_DTYPE_F32, 1, 16, 1, 1, LN_N, LN_D, LN_D, dq, dk, dv, NULL, o));
    MF_ASSERT_OK(
        BWD(ctx, MF_DTYPE_F32, 1, 16, 1, 1, LN_N, LN_D, LN_D, dq, dk, dv, o, ddo, NULL, NULL, gq, gk, gv));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *ho = mf_test_dev_fetch(ctx, o, n, 8, "out"), *hq = mf_test_dev_fetch(ctx, gq, n, 8, "dq");
    float *hk = mf_test_dev_fetch(ctx, gk, n, 8, "dk"), *hv = mf_test_dev_fetch(ctx, gv, n, 8, "dv");
    MF_ASSERT_CLOSE(ho, ro, n, "linear_attention.out.f32");
    MF_ASSERT_CLOSE(hq, rdq, n, "linear_attention.grad.f32");
    MF_ASSERT_CLOSE(hk, rdk, n, "linear_attention.grad.f32");
    MF_ASSERT_CLOSE(hv, rdv, n, "linear_attention.grad.f32");
    free(ho);
    free(hq);
    free(hk);
    free(hv);
    void *all[] = { dq, dk, dv, ddo, o, gq, gk, gv };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_buffer_free(ctx, all[i]);
}
END_TEST

static Suite *linear_attention_badinput_suite(void)
{
    Suite *s = suite_create("linear_attention_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_valid_call_succeeds);
    tcase_add_test(tc, test_null_pointers);
    tcase_add_test(tc, test_bad_sizes_and_chunks);
    tcase_add_test(tc, test_bad_enums_and_state);
    tcase_add_test(tc, test_bad_pointers);
    tcase_add_loop_test(tc, test_nonfinite_causal, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(linear_attention_badinput_suite()); }
