/* Bad input to the attention entry points (optimized and reference): every
 * error path returns its status with a readable message, never crashes.
 * Shapes are single-sourced (q and k share D; v, dout and out share Dv), so a
 * q/k head-dimension mismatch cannot be expressed; the size checks cover
 * zero/negative sizes, D = 0, head dimensions beyond the tiled kernels' 128,
 * and byte counts that overflow size_t. */
#include "mf_test.h"

#include "memfix/attention.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

/* Small valid device buffers (B=1, H=1, N=4, D=Dv=4). */
static void *dq_, *dk_, *dv_, *ddo_;
static float *dout_, *dlse_, *ddq_, *ddk_, *ddv_;

static void setup(void) {
    mf_test_setup();
    mf_context *ctx = mf_test_ctx();
    void **all[] = {&dq_, &dk_, &dv_, &ddo_, (void **)&dout_, (void **)&dlse_, (void **)&ddq_,
                    (void **)&ddk_, (void **)&ddv_};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ck_assert_int_eq(mf_buffer_alloc(ctx, 64, all[i]), MF_OK);
        ck_assert_int_eq(mf_buffer_memset(ctx, *all[i], 0, 64), MF_OK);
    }
}
static void teardown(void) {
    mf_context *ctx = mf_test_ctx();
    void *all[] = {dq_, dk_, dv_, ddo_, dout_, dlse_, ddq_, ddk_, ddv_};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_buffer_free(ctx, all[i]);
    mf_test_teardown();
}

#define FWD(ctx, var, dt, causal, B, H, N, D, Dv, q, k, v, out, lse) \
    mf_attention_forward(ctx, var, dt, causal, B, H, N, D, Dv, q, k, v, out, lse)
#define BWD(ctx, var, dt, causal, B, H, N, D, Dv, q, k, v, out, dout, lse, dq, dk, dv) \
    mf_attention_backward(ctx, var, dt, causal, B, H, N, D, Dv, q, k, v, out, dout, lse, dq, dk, dv)

START_TEST(test_valid_call_succeeds) {
    mf_context *ctx = mf_test_ctx();
    MF_ASSERT_OK(FWD(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, 1, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_));
    MF_ASSERT_OK(BWD(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, 1, 1, 1, 4, 4, 4, dq_, dk_, dv_, dout_,
                     ddo_, dlse_, ddq_, ddk_, ddv_));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
}
END_TEST

START_TEST(test_null_pointers) {
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
    float h[16] = {0};
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

START_TEST(test_bad_sizes) {
    mf_context *ctx = mf_test_ctx();
    const mf_attention_variant T = MF_ATTENTION_TILED;
    const mf_dtype F = MF_DTYPE_F32;
    const int64_t bad[][5] = {
        {0, 1, 4, 4, 4}, {1, 0, 4, 4, 4}, {1, 1, 0, 4, 4}, {1, 1, 4, 0, 4},  /* D = 0 */
        {1, 1, 4, 4, 0}, {-1, 1, 4, 4, 4}, {1, 1, -4, 4, 4}, {1, 1, 4, -2, 4},
        {1, 1, 4, 129, 4}, {1, 1, 4, 4, 129}, /* beyond the tiled kernels' 128 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const int64_t *s = bad[i];
        MF_ASSERT_STATUS(FWD(ctx, T, F, 0, s[0], s[1], s[2], s[3], s[4], dq_, dk_, dv_, dout_, dlse_),
                         MF_ERR_INVALID_SIZE);
        MF_ASSERT_STATUS(BWD(ctx, T, F, 1, s[0], s[1], s[2], s[3], s[4], dq_, dk_, dv_, dout_, ddo_,
                             dlse_, ddq_, ddk_, ddv_),
                         MF_ERR_INVALID_SIZE);
        if (s[3] <= 128 && s[4] <= 128) { /* the reference has no head-dimension limit */
            float h[16] = {0};
            MF_ASSERT_STATUS(mf_ref_attention_forward(ctx, F, 0, s[0], s[1], s[2], s[3], s[4], h, h,
                                                      h, h, NULL),
                             MF_ERR_INVALID_SIZE);
        }
    }
    /* Byte counts that overflow size_t. */
    const int64_t big = INT64_C(1) << 40;
    MF_ASSERT_STATUS(FWD(ctx, T, F, 0, big, big, 4, 4, 4, dq_, dk_, dv_, dout_, dlse_), MF_ERR_OVERFLOW);
    float h[16] = {0};
    MF_ASSERT_STATUS(mf_ref_attention_forward(ctx, F, 0, big, big, 4, 4, 4, h, h, h, h, NULL),
                     MF_ERR_OVERFLOW);
    /* q/k/v fit, but the reference's N x N scores do not. */
    MF_ASSERT_STATUS(mf_ref_attention_forward(ctx, F, 0, 1, 1, INT64_C(1) << 32, 1, 1, h, h, h, h, NULL),
                     MF_ERR_OVERFLOW);
}
END_TEST

START_TEST(test_bad_enums) {
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
    float h[16] = {0};
    MF_ASSERT_STATUS(mf_ref_attention_forward(ctx, (mf_dtype)3, 0, 1, 1, 4, 4, 4, h, h, h, h, NULL),
                     MF_ERR_DTYPE);
    MF_ASSERT_STATUS(mf_ref_attention_backward(ctx, F, 5, 1, 1, 4, 4, 4, h, h, h, h, h, h, h),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(mf_attention_variant_name(MF_ATTENTION_TILED), "tiled");
    ck_assert_ptr_null(mf_attention_variant_name((mf_attention_variant)1));
}
END_TEST

static Suite *attention_badinput_suite(void) {
    Suite *s = suite_create("attention_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_valid_call_succeeds);
    tcase_add_test(tc, test_null_pointers);
    tcase_add_test(tc, test_bad_sizes);
    tcase_add_test(tc, test_bad_enums);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(attention_badinput_suite()); }
