/* Bad input to the attention entry points (optimized and reference): every
 * error path returns its status with a readable message, never crashes.
 * Shapes are single-sourced (q and k share D; v, dout and out share Dv), so a
 * q/k head-dimension mismatch cannot be expressed; the size checks cover
 * zero/negative sizes, D = 0, head dimensions beyond the tiled kernels' 128,
 * and byte counts that overflow size_t. */
#include "mf_test.h"

#include "memfix/attention.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Small valid device buffers (B=1, H=1, N=4, D=Dv=4). */
static void *dq_, *dk_, *dv_, *ddo_;
static float *dout_, *dlse_, *ddq_, *ddk_, *ddv_;

static void setup(void)
{
    mf_test_setup();
    mf_context *ctx = mf_test_ctx();
    void **all[] = { &dq_,           &dk_,           &dv_,          &ddo_, (void **)&dout_, (void **)&dlse_,
                     (void **)&ddq_, (void **)&ddk_, (void **)&ddv_ };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ck_assert_int_eq(mf_buffer_alloc(ctx, 64, all[i]), MF_OK);
        ck_assert_int_eq(mf_buffer_memset(ctx, *all[i], 0, 64), MF_OK);
    }
}
static void teardown(void)
{
    mf_context *ctx = mf_test_ctx();
    void *all[] = { dq_, dk_, dv_, ddo_, dout_, dlse_, ddq_, ddk_, ddv_ };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_buffer_free(ctx, all[i]);
    mf_test_teardown();
}

#define FWD(ctx, var, dt, causal, B, H, N, D, Dv, q, k, v, out, lse)                                         \
    mf_attention_forward(ctx, var, dt, causal, B, H, N, D, Dv, q, k, v, out, lse)
#define BWD(ctx, var, dt, causal, B, H, N, D, Dv, q, k, v, out, dout, lse, dq, dk, dv)                       \
    mf_attention_backward(ctx, var, dt, causal, B, H, N, D, Dv, q, k, v, out, dout, lse, dq, dk, dv)

START_TEST(test_valid_call_succeeds)
{
    mf_context *ctx = mf_test_ctx();
    MF_ASSERT_OK(FWD(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, 1, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_));
    MF_ASSERT_OK(BWD(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, 1, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_,
                     dlse_, ddq_, ddk_, ddv_));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
}
END_TEST

START_TEST(test_null_pointers)
{
    mf_context *ctx = mf_test_ctx();
    const mf_attention_variant T = MF_ATTENTION_TILED;
    const mf_dtype F = MF_DTYPE_F32;
    MF_ASSERT_STATUS(FWD(NULL, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, 1, 1, 4, 4, 4, NULL, dk_, dv_, dout_, dlse_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, NULL, dv_, dout_, dlse_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, NULL, dout_, dlse_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, dlse_), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(BWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, NULL, ddq_, ddk_, ddv_),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(BWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, NULL, ddo_, dlse_, ddq_, ddk_, ddv_),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(BWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, NULL, dlse_, ddq_, ddk_, ddv_),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(BWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, dlse_, NULL, ddk_, ddv_),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(BWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, dlse_, ddq_, NULL, ddv_),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(BWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, dlse_, ddq_, ddk_, NULL),
                     MF_ERR_NULL_POINTER);
    /* reference */
    float h[16] = { 0 };
    MF_ASSERT_STATUS(mf_ref_attention_forward(NULL, F, 0, 1, 1, 4, 4, 4, h, h, h, h, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_attention_forward(ctx, F, 0, 1, 1, 4, 4, 4, h, NULL, h, h, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_attention_backward(ctx, F, 0, 1, 1, 4, 4, 4, h, h, h, NULL, h, h, h),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_attention_backward(ctx, F, 0, 1, 1, 4, 4, 4, h, h, h, h, h, h, NULL),
                     MF_ERR_NULL_POINTER);
}
END_TEST

START_TEST(test_bad_sizes)
{
    mf_context *ctx = mf_test_ctx();
    const mf_attention_variant T = MF_ATTENTION_TILED;
    const mf_dtype F = MF_DTYPE_F32;
    const int64_t bad[][5] = {
        { 0, 1, 4, 4, 4 },   { 1, 0, 4, 4, 4 },   { 1, 1, 0, 4, 4 },  { 1, 1, 4, 0, 4 }, /* D = 0 */
        { 1, 1, 4, 4, 0 },   { -1, 1, 4, 4, 4 },  { 1, 1, -4, 4, 4 }, { 1, 1, 4, -2, 4 },
        { 1, 1, 4, 129, 4 }, { 1, 1, 4, 4, 129 }, /* beyond the tiled kernels' 128 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const int64_t *s = bad[i];
        MF_ASSERT_STATUS(FWD(ctx, T, F, 0, s[0], s[1], s[2], s[3], s[4], dq_, dk_, dv_, dout_, dlse_),
                         MF_ERR_INVALID_SIZE);
        MF_ASSERT_STATUS(BWD(ctx, T, F, 1, s[0], s[1], s[2], s[3], s[4], dq_, dk_, dv_, dout_, ddo_, dlse_,
                             ddq_, ddk_, ddv_),
                         MF_ERR_INVALID_SIZE);
        if (s[3] <= 128 && s[4] <= 128) { /* the reference has no head-dimension limit */
            float h[16] = { 0 };
            MF_ASSERT_STATUS(
                mf_ref_attention_forward(ctx, F, 0, s[0], s[1], s[2], s[3], s[4], h, h, h, h, NULL),
                MF_ERR_INVALID_SIZE);
        }
    }
    /* Byte counts that overflow size_t. */
    const int64_t big = INT64_C(1) << 40;
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, big, big, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_), MF_ERR_OVERFLOW);
    float h[16] = { 0 };
    MF_ASSERT_STATUS(mf_ref_attention_forward(ctx, F, 0, big, big, 4, 4, 4, h, h, h, h, NULL),
                     MF_ERR_OVERFLOW);
    /* q/k/v fit, but the reference's N x N scores do not. */
    MF_ASSERT_STATUS(mf_ref_attention_forward(ctx, F, 0, 1, 1, INT64_C(1) << 32, 1, 1, h, h, h, h, NULL),
                     MF_ERR_OVERFLOW);
}
END_TEST

START_TEST(test_bad_enums)
{
    mf_context *ctx = mf_test_ctx();
    const mf_dtype F = MF_DTYPE_F32;
    MF_ASSERT_STATUS(FWD(ctx, (mf_attention_variant)1, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_),
                     MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(FWD(ctx, (mf_attention_variant)-1, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_),
                     MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(FWD(ctx, MF_ATTENTION_TILED, (mf_dtype)7, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_),
                     MF_ERR_DTYPE);
    MF_ASSERT_STATUS(FWD(ctx, MF_ATTENTION_TILED, F, 2, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_),
                     MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(BWD(ctx, MF_ATTENTION_TILED, F, -1, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, dlse_,
                         ddq_, ddk_, ddv_),
                     MF_ERR_INVALID_ARGUMENT);
    float h[16] = { 0 };
    MF_ASSERT_STATUS(mf_ref_attention_forward(ctx, (mf_dtype)3, 0, 1, 1, 4, 4, 4, h, h, h, h, NULL),
                     MF_ERR_DTYPE);
    MF_ASSERT_STATUS(mf_ref_attention_backward(ctx, F, 5, 1, 1, 4, 4, 4, h, h, h, h, h, h, h),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(mf_attention_variant_name(MF_ATTENTION_TILED), "tiled");
    ck_assert_ptr_null(mf_attention_variant_name((mf_attention_variant)1));
}
END_TEST

/* Bad pointers: checked against the shape's extent before any launch, naming
 * the argument; a freed buffer or a host array is refused without launching,
 * so the process goes on working. The fixture's buffers hold 64 bytes
 * (B=H=1, N=4, D=Dv=4 in f32). */
START_TEST(test_bad_pointers)
{
    mf_context *ctx = mf_test_ctx();
    const mf_attention_variant T = MF_ATTENTION_TILED;
    const mf_dtype F = MF_DTYPE_F32;
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, 1, 1, 8, 4, 4, dq_, dk_, dv_, dout_, dlse_), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "q is too small"));
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, (char *)dv_ + 4, dout_, dlse_),
                     MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "v is too small"));
    MF_ASSERT_STATUS(
        BWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, dlse_, ddq_, ddk_, ddv_ + 1),
        MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "dv is too small"));
    void *freed = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 64, &freed));
    MF_ASSERT_OK(mf_buffer_free(ctx, freed));
    float host[16] = { 0 };
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, 1, 1, 4, 4, 4, dq_, freed, dv_, dout_, dlse_),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "k ("));
    MF_ASSERT_STATUS(BWD(ctx, T, F, 1, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, ddo_, host, ddq_, ddk_, ddv_),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "lse ("));
    /* Nothing launched, nothing sticky. */
    MF_ASSERT_OK(FWD(ctx, T, F, 1, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    mf_context *fresh = NULL;
    MF_ASSERT_OK(mf_context_create(&fresh, mf_test_backend()));
    mf_context_destroy(fresh);
}
END_TEST

/* Non-finite scores (include/memfix/attention.h): the tiled kernels and the
 * reference agree, as PyTorch's softmax/logsumexp do. N = 20 spans two query
 * and key tiles. Row 3: q = (-inf, 0, 0, 0) with k[:, 0] > 0, so every score is
 * -inf: out NaN, lse -inf. Row 9: q = (+inf, 0, 0, 0): out and lse NaN. Row 17:
 * a NaN in q, so every score is NaN: out and lse NaN (fmaxf would drop it and
 * give lse -inf). Causal: k row 18 is NaN as well, which only rows 18 and 19
 * see. Every other row stays finite and within tolerance. The backward (not
 * causal: the NaN rows reach every key through visible entries) agrees too. */
enum { NF_N = 20, NF_D = 4 };

static void nonfinite_inputs(int causal, float *q, float *k, float *v, float *dout)
{
    const size_t n = NF_N * NF_D;
    mf_test_fill_uniform(MF_DTYPE_F32, q, n, 71, -1.0f, 1.0f);
    mf_test_fill_uniform(MF_DTYPE_F32, k, n, 72, 0.1f, 1.0f); /* k[:, 0] > 0 */
    mf_test_fill_uniform(MF_DTYPE_F32, v, n, 73, -1.0f, 1.0f);
    mf_test_fill_uniform(MF_DTYPE_F32, dout, n, 74, -1.0f, 1.0f);
    for (int d = 0; d < NF_D; d++) q[3 * NF_D + d] = q[9 * NF_D + d] = 0.0f;
    q[3 * NF_D] = -INFINITY;
    q[9 * NF_D] = INFINITY;
    q[17 * NF_D + 2] = NAN;
    if (causal) k[18 * NF_D + 1] = NAN;
}

static void check_nonfinite_forward(int causal)
{
    mf_context *ctx = mf_test_ctx();
    const size_t n = NF_N * NF_D;
    float q[NF_N * NF_D], k[NF_N * NF_D], v[NF_N * NF_D], dout[NF_N * NF_D];
    nonfinite_inputs(causal, q, k, v, dout);
    float ref_out[NF_N * NF_D], ref_lse[NF_N];
    MF_ASSERT_OK(mf_ref_attention_forward(ctx, MF_DTYPE_F32, causal, 1, 1, NF_N, NF_D, NF_D, q, k, v, ref_out,
                                          ref_lse));
    void *dq = mf_test_dev_upload(ctx, q, sizeof q), *dk = mf_test_dev_upload(ctx, k, sizeof k);
    void *dv = mf_test_dev_upload(ctx, v, sizeof v);
    float *dout_dev = mf_test_dev_nan(ctx, n + 8), *dlse = mf_test_dev_nan(ctx, NF_N + 8);
    MF_ASSERT_OK(mf_attention_forward(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, causal, 1, 1, NF_N, NF_D, NF_D,
                                      dq, dk, dv, dout_dev, dlse));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *out = mf_test_dev_fetch(ctx, dout_dev, n, 8, "out");
    float *lse = mf_test_dev_fetch(ctx, dlse, NF_N, 8, "lse");
    const int rows[] = { 3, 9, 17 };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const int i = rows[r];
        ck_assert_msg(isnan(out[i * NF_D]) && isnan(ref_out[i * NF_D]),
                      "causal=%d row %d: out %g, reference %g (want NaN)", causal, i, out[i * NF_D],
                      ref_out[i * NF_D]);
    }
    ck_assert_msg(lse[3] == -INFINITY && ref_lse[3] == -INFINITY,
                  "causal=%d all -inf row: lse %g, reference %g (want -inf)", causal, lse[3], ref_lse[3]);
    ck_assert_msg(isnan(lse[9]) && isnan(ref_lse[9]), "+inf row: lse %g, reference %g (want NaN)", lse[9],
                  ref_lse[9]);
    ck_assert_msg(isnan(lse[17]) && isnan(ref_lse[17]), "NaN row: lse %g, reference %g (want NaN)", lse[17],
                  ref_lse[17]);
    ck_assert_msg(isfinite(lse[16]) && isfinite(out[16 * NF_D]), "row 16 must stay finite");
    if (causal) ck_assert_msg(isnan(lse[18]) && isfinite(lse[15]), "NaN key 18: rows 18, 19 only");
    /* Every entry: the same NaN/Inf pattern, finite ones within tolerance. */
    MF_ASSERT_CLOSE(out, ref_out, n, "attention.out.f32");
    MF_ASSERT_CLOSE(lse, ref_lse, NF_N, "attention.lse.f32");
    free(out);
    free(lse);
    mf_buffer_free(ctx, dq);
    mf_buffer_free(ctx, dk);
    mf_buffer_free(ctx, dv);
    mf_buffer_free(ctx, dout_dev);
    mf_buffer_free(ctx, dlse);
}

START_TEST(test_nonfinite_forward)
{
    check_nonfinite_forward(0);
    check_nonfinite_forward(1);
}
END_TEST

START_TEST(test_nonfinite_backward)
{
    mf_context *ctx = mf_test_ctx();
    const size_t n = NF_N * NF_D;
    float q[NF_N * NF_D], k[NF_N * NF_D], v[NF_N * NF_D], dout[NF_N * NF_D];
    nonfinite_inputs(0, q, k, v, dout);
    float rdq[NF_N * NF_D], rdk[NF_N * NF_D], rdv[NF_N * NF_D];
    MF_ASSERT_OK(mf_ref_attention_backward(ctx, MF_DTYPE_F32, 0, 1, 1, NF_N, NF_D, NF_D, q, k, v, dout, rdq,
                                           rdk, rdv));
    void *dq = mf_test_dev_upload(ctx, q, sizeof q), *dk = mf_test_dev_upload(ctx, k, sizeof k);
    void *dv = mf_test_dev_upload(ctx, v, sizeof v), *ddo = mf_test_dev_upload(ctx, dout, sizeof dout);
    float *o = mf_test_dev_nan(ctx, n), *l = mf_test_dev_nan(ctx, NF_N);
    float *gq = mf_test_dev_nan(ctx, n + 8), *gk = mf_test_dev_nan(ctx, n + 8),
          *gv = mf_test_dev_nan(ctx, n + 8);
    MF_ASSERT_OK(mf_attention_forward(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, 0, 1, 1, NF_N, NF_D, NF_D, dq,
                                      dk, dv, o, l));
    MF_ASSERT_OK(mf_attention_backward(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, 0, 1, 1, NF_N, NF_D, NF_D, dq,
                                       dk, dv, o, ddo, l, gq, gk, gv));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *hq = mf_test_dev_fetch(ctx, gq, n, 8, "dq"), *hk = mf_test_dev_fetch(ctx, gk, n, 8, "dk");
    float *hv = mf_test_dev_fetch(ctx, gv, n, 8, "dv");
    ck_assert_msg(isfinite(hq[0]) && isnan(hq[3 * NF_D]) && isnan(hq[17 * NF_D]),
                  "dq: finite rows stay finite, non-finite rows are NaN");
    MF_ASSERT_CLOSE(hq, rdq, n, "attention.grad.f32");
    MF_ASSERT_CLOSE(hk, rdk, n, "attention.grad.f32");
    MF_ASSERT_CLOSE(hv, rdv, n, "attention.grad.f32");
    free(hq);
    free(hk);
    free(hv);
    void *bufs[] = { dq, dk, dv, ddo, o, l, gq, gk, gv };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) mf_buffer_free(ctx, bufs[i]);
}
END_TEST

/* The same rules on the bf16 tensor-core path (D = Dv = 64; optimized/attention_mma.cu):
 * N = 300 spans two 256-query forward blocks and three 128-key backward blocks,
 * and row 270 (a NaN in q) lies in the second forward block. Forward causal and
 * not; backward not causal. */
enum { NFM_N = 300, NFM_D = 64 };

static uint16_t *nonfinite_bf16(const float *x, size_t n)
{
    uint16_t *b = malloc(n * sizeof *b);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n; i++) b[i] = mf_f32_to_bf16(x[i]);
    return b;
}

static void check_nonfinite_mma(int causal)
{
    mf_context *ctx = mf_test_ctx();
    const size_t n = (size_t)NFM_N * NFM_D;
    float *f = malloc(4 * n * sizeof *f);
    ck_assert_ptr_nonnull(f);
    float *q = f, *k = f + n, *v = f + 2 * n, *dout = f + 3 * n;
    mf_test_fill_uniform(MF_DTYPE_F32, q, n, 81, -1.0f, 1.0f);
    /* k[:, 0] > 0 (row 3's scores all -inf); the other columns centred on 0: a
     * common offset c in k makes dq = sum_j ds_ij k_j cancel to sum_j ds_ij (k_j - c)
     * (sum_j ds_ij = 0), which the bf16 rounding of dS does not preserve, so the
     * relative error of dq grows with |c| / spread (docs/attention.md). */
    mf_test_fill_uniform(MF_DTYPE_F32, k, n, 82, -1.0f, 1.0f);
    for (int j = 0; j < NFM_N; j++) k[(size_t)j * NFM_D] = 0.1f + 0.9f * fabsf(k[(size_t)j * NFM_D]);
    mf_test_fill_uniform(MF_DTYPE_F32, v, n, 83, -1.0f, 1.0f);
    mf_test_fill_uniform(MF_DTYPE_F32, dout, n, 84, -1.0f, 1.0f);
    for (int d = 0; d < NFM_D; d++) q[3 * NFM_D + d] = q[9 * NFM_D + d] = 0.0f;
    q[3 * NFM_D] = -INFINITY;
    q[9 * NFM_D] = INFINITY;
    q[17 * NFM_D + 2] = NAN;
    q[270 * NFM_D + 5] = NAN;
    if (causal) k[18 * NFM_D + 1] = NAN;
    uint16_t *bq = nonfinite_bf16(q, n), *bk = nonfinite_bf16(k, n), *bv = nonfinite_bf16(v, n),
             *bdo = nonfinite_bf16(dout, n);
    float *r = malloc((5 * n + NFM_N) * sizeof *r);
    ck_assert_ptr_nonnull(r);
    float *r_out = r, *r_lse = r + n, *r_dq = r_lse + NFM_N, *r_dk = r_dq + n, *r_dv = r_dk + n;
    MF_ASSERT_OK(mf_ref_attention_forward(ctx, MF_DTYPE_BF16, causal, 1, 1, NFM_N, NFM_D, NFM_D, bq, bk, bv,
                                          r_out, r_lse));
    void *d_q = mf_test_dev_upload(ctx, bq, n * 2), *d_k = mf_test_dev_upload(ctx, bk, n * 2);
    void *d_v = mf_test_dev_upload(ctx, bv, n * 2), *d_do = mf_test_dev_upload(ctx, bdo, n * 2);
    float *d_out = mf_test_dev_nan(ctx, n + 8), *d_lse = mf_test_dev_nan(ctx, NFM_N + 8);
    MF_ASSERT_OK(mf_attention_forward(ctx, MF_ATTENTION_TILED, MF_DTYPE_BF16, causal, 1, 1, NFM_N, NFM_D,
                                      NFM_D, d_q, d_k, d_v, d_out, d_lse));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *out = mf_test_dev_fetch(ctx, d_out, n, 8, "out");
    float *lse = mf_test_dev_fetch(ctx, d_lse, NFM_N, 8, "lse");
    ck_assert_msg(lse[3] == -INFINITY && r_lse[3] == -INFINITY,
                  "causal=%d all -inf row: lse %g, reference %g (want -inf)", causal, lse[3], r_lse[3]);
    const int nan_rows[] = { 3, 9, 17, 270 };
    for (size_t i = 0; i < sizeof nan_rows / sizeof nan_rows[0]; i++)
        ck_assert_msg(isnan(out[(size_t)nan_rows[i] * NFM_D]), "causal=%d row %d: out %g (want NaN)", causal,
                      nan_rows[i], out[(size_t)nan_rows[i] * NFM_D]);
    ck_assert_msg(isnan(lse[9]) && isnan(lse[17]) && isnan(lse[270]) && isfinite(lse[16]) &&
                      (causal || isfinite(lse[139])),
                  "causal=%d: lse of the +inf / NaN rows NaN, the others finite", causal);
    if (causal) ck_assert_msg(isnan(lse[18]) && isfinite(lse[15]), "NaN key 18: rows >= 18 only");
    MF_ASSERT_CLOSE(out, r_out, n, "attention.mma.out.bf16");
    MF_ASSERT_CLOSE(lse, r_lse, NFM_N, "attention.mma.lse.bf16");
    if (!causal) {
        MF_ASSERT_OK(mf_ref_attention_backward(ctx, MF_DTYPE_BF16, 0, 1, 1, NFM_N, NFM_D, NFM_D, bq, bk, bv,
                                               bdo, r_dq, r_dk, r_dv));
        float *gq = mf_test_dev_nan(ctx, n + 8), *gk = mf_test_dev_nan(ctx, n + 8),
              *gv = mf_test_dev_nan(ctx, n + 8);
        MF_ASSERT_OK(mf_attention_backward(ctx, MF_ATTENTION_TILED, MF_DTYPE_BF16, 0, 1, 1, NFM_N, NFM_D,
                                           NFM_D, d_q, d_k, d_v, d_out, d_do, d_lse, gq, gk, gv));
        MF_ASSERT_OK(mf_context_synchronize(ctx));
        float *hq = mf_test_dev_fetch(ctx, gq, n, 8, "dq"), *hk = mf_test_dev_fetch(ctx, gk, n, 8, "dk");
        float *hv = mf_test_dev_fetch(ctx, gv, n, 8, "dv");
        ck_assert_msg(isfinite(hq[0]) && isnan(hq[3 * NFM_D]) && isnan(hq[270 * NFM_D]),
                      "dq: finite rows stay finite, non-finite rows are NaN");
        MF_ASSERT_CLOSE(hq, r_dq, n, "attention.mma.grad.bf16");
        MF_ASSERT_CLOSE(hk, r_dk, n, "attention.mma.grad.bf16");
        MF_ASSERT_CLOSE(hv, r_dv, n, "attention.mma.grad.bf16");
        free(hq);
        free(hk);
        free(hv);
        mf_buffer_free(ctx, gq);
        mf_buffer_free(ctx, gk);
        mf_buffer_free(ctx, gv);
    }
    free(out);
    free(lse);
    void *bufs[] = { d_q, d_k, d_v, d_do, d_out, d_lse };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) mf_buffer_free(ctx, bufs[i]);
    free(bq);
    free(bk);
    free(bv);
    free(bdo);
    free(r);
    free(f);
}

START_TEST(test_nonfinite_mma)
{
    check_nonfinite_mma(0);
    check_nonfinite_mma(1);
}
END_TEST

static Suite *attention_badinput_suite(void)
{
    Suite *s = suite_create("attention_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_valid_call_succeeds);
    tcase_add_test(tc, test_null_pointers);
    tcase_add_test(tc, test_bad_sizes);
    tcase_add_test(tc, test_bad_enums);
    tcase_add_test(tc, test_bad_pointers);
    tcase_add_test(tc, test_nonfinite_forward);
    tcase_add_test(tc, test_nonfinite_backward);
    tcase_add_test(tc, test_nonfinite_mma);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(attention_badinput_suite()); }
