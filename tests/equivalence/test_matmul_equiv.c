/* Equivalence of every optimized matmul variant with the reference
 * (seed 002: the 16x16 shared-memory tiled matmul fix).
 *
 * The shapes are the op's built-in cases (src/ops/matmul.c: 1x1x1, sizes that
 * are not multiples of the 16x16 tile, tall and skinny, a thin K = 4096
 * reduction, exact tile multiples, each with all four transpose combinations
 * in fp32 and bf16), run through the testbed as `memfix report` runs them:
 * seeded inputs, the reference on the host, the variant on the test backend
 * into an output pre-filled with NaN, every buffer followed by a NaN guard (a
 * write past C fails, a read past A or B brings a NaN into the result), the
 * op's tolerance row. One TCase per variant, one Check test per case. Here
 * stay the op's own properties: a wrong transpose is detected, and the
 * grid-cap case (> 65535 row tiles, tagged slow).
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/matmul.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

/* One matmul of seeded inputs: the variant's output into got, the reference's into ref (M*N floats each). */
static void run_matmul(mf_matmul_variant v, mf_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K,
                       uint64_t seed, float *got, float *ref)
{
    mf_context *ctx = mf_test_ctx();
    const size_t m = (size_t)M, n = (size_t)N, k = (size_t)K, es = mf_dtype_size(dt);
    void *a = mf_test_make_input(dt, m * k, seed, -1.0f, 1.0f);
    void *b = mf_test_make_input(dt, k * n, seed ^ 0x9e3779b97f4a7c15ull, -1.0f, 1.0f);
    mf_fill_nan_f32(ref, m * n);
    MF_ASSERT_OK(mf_ref_matmul(ctx, dt, ta, tb, M, N, K, a, b, ref));
    void *d_a = mf_test_dev_upload(ctx, a, m * k * es), *d_b = mf_test_dev_upload(ctx, b, k * n * es);
    float *d_c = mf_test_dev_nan(ctx, m * n);
    MF_ASSERT_OK(mf_matmul(ctx, v, dt, ta, tb, M, N, K, d_a, d_b, d_c));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    MF_ASSERT_OK(mf_buffer_download(ctx, got, d_c, m * n * sizeof(float)));
    MF_ASSERT_OK(mf_buffer_free(ctx, d_c));
    MF_ASSERT_OK(mf_buffer_free(ctx, d_b));
    MF_ASSERT_OK(mf_buffer_free(ctx, d_a));
    free(b);
    free(a);
}

/* The comparison can fail: the tiled result for trans_a = 1 compared against a
 * reference computed with trans_a = 0 (a square, non-symmetric A) must not pass. */
START_TEST(test_wrong_transpose_is_detected)
{
    const size_t mn = 17 * 17;
    float *got = malloc(mn * sizeof(float)), *ref_t = malloc(mn * sizeof(float));
    float *ref_n = malloc(mn * sizeof(float)), *dummy = malloc(mn * sizeof(float));
    ck_assert(got && ref_t && ref_n && dummy);
    run_matmul(MF_MATMUL_TILED, MF_DTYPE_F32, 1, 0, 17, 17, 17, 42, got, ref_t);
    MF_ASSERT_CLOSE(got, ref_t, mn, "matmul.out.f32");
    run_matmul(MF_MATMUL_TILED, MF_DTYPE_F32, 0, 0, 17, 17, 17, 42, dummy, ref_n);
    mf_compare_result r;
    ck_assert_int_eq(mf_compare_f32(got, ref_n, mn, mf_tolerance_get("matmul.out.f32"), NULL, &r), MF_OK);
    ck_assert_msg(!r.pass, "a transposed result passed against the untransposed reference");
    free(dummy);
    free(ref_n);
    free(ref_t);
    free(got);
}
END_TEST

/* More row tiles than gridDim.y allows (65535): the launchers cap the grid and
 * the kernels' blocks stride over the remaining tiles. 65537 row tiles, so
 * blocks 0 and 1 each take a second tile. */
START_TEST(test_grid_y_cap)
{
    const mf_matmul_variant v = _i == 0 ? MF_MATMUL_NAIVE : MF_MATMUL_TILED;
    const int64_t M = (int64_t)65535 * MF_MATMUL_TILE + 17;
    const size_t mn = (size_t)M * 2;
    float *got = malloc(mn * sizeof(float)), *ref = malloc(mn * sizeof(float));
    ck_assert(got && ref);
    run_matmul(v, MF_DTYPE_F32, 1, 0, M, 2, 3, 7, got, ref);
    MF_ASSERT_CLOSE(got, ref, mn, "matmul.out.f32");
    free(ref);
    free(got);
}
END_TEST

static Suite *matmul_equiv_suite(void)
{
    Suite *s = suite_create("matmul_equiv");
    mf_test_add_op_cases(s, "matmul"); /* TCases naive, tiled, cublas */
    TCase *tc = tcase_create("checks");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_wrong_transpose_is_detected);
    suite_add_tcase(s, tc);
    /* ~16.8M GPU threads: a few seconds in host mode. Registered separately with
     * the slow label (tests/matmul.cmake); the default registration excludes the
     * Check tag "slow" (CK_EXCLUDE_TAGS). */
    tc = tcase_create("grid_cap");
    tcase_set_tags(tc, "slow");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_grid_y_cap, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(matmul_equiv_suite()); }
