/* Memory of the matmul fix (seed 002), measured through the context's tracked
 * allocators and checked against the formulas of include/memfix/matmul.h:
 *   - the reference's host scratch peak equals mf_ref_matmul_scratch_bytes
 *     = 8*(M*K + K*N + M*N) exactly;
 *   - every optimized variant's device scratch peak <= its ceiling (0 bytes:
 *     tiles live in shared memory, cuBLAS works in the context's workspace,
 *     which is in the baseline);
 *   - ceiling < reference, at the same shape, at two sizes (the reference
 *     grows with the shape, the ceilings do not), for fp32 and bf16 (a bf16
 *     path that converted its inputs to fp32 in scratch would fail here).
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/matmul.h"
#include "mf_internal.h" /* mf_context_cublas_workspace_bytes */

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct mem_result {
    size_t ref_peak, opt_peak, ref_formula, ceiling;
} mem_result;

static mem_result measure(mf_matmul_variant v, mf_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K)
{
    mf_context *ctx = mf_test_ctx();
    const size_t m = (size_t)M, n = (size_t)N, k = (size_t)K, es = mf_dtype_size(dt);
    void *a = malloc(m * k * es), *b = malloc(k * n * es);
    float *c = malloc(m * n * sizeof(float));
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    mf_test_fill_uniform(dt, a, m * k, 11, -1.0f, 1.0f);
    mf_test_fill_uniform(dt, b, k * n, 12, -1.0f, 1.0f);
    mf_fill_nan_f32(c, m * n);
    mem_result r;

    MF_ASSERT_STATUS(mf_mem_begin(ctx, MF_MEM_HOST), MF_OK);
    MF_ASSERT_STATUS(mf_ref_matmul(ctx, dt, ta, tb, M, N, K, a, b, c), MF_OK);
    r.ref_peak = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    void *d_a, *d_b, *d_c;
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, m * k * es, &d_a), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, k * n * es, &d_b), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, m * n * sizeof(float), &d_c), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, d_a, a, m * k * es), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, d_b, b, k * n * es), MF_OK);
    MF_ASSERT_STATUS(mf_mem_begin(ctx, MF_MEM_DEVICE), MF_OK);
    MF_ASSERT_STATUS(mf_matmul(ctx, v, dt, ta, tb, M, N, K, d_a, d_b, (float *)d_c), MF_OK);
    MF_ASSERT_STATUS(mf_context_synchronize(ctx), MF_OK);
    r.opt_peak = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);

    /* The measured run also computed the right thing (a variant that skipped
     * the work would trivially use no memory). */
    float *got = malloc(m * n * sizeof(float));
    ck_assert_ptr_nonnull(got);
    MF_ASSERT_STATUS(mf_buffer_download(ctx, got, d_c, m * n * sizeof(float)), MF_OK);
    MF_ASSERT_CLOSE(got, c, m * n, dt == MF_DTYPE_BF16 ? "matmul.out.bf16" : "matmul.out.f32");

    MF_ASSERT_STATUS(mf_buffer_free(ctx, d_c), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_free(ctx, d_b), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_free(ctx, d_a), MF_OK);
    free(got);
    free(c);
    free(b);
    free(a);
    r.ref_formula = mf_ref_matmul_scratch_bytes(M, N, K);
    r.ceiling = mf_matmul_scratch_ceiling(v, M, N, K);
    return r;
}

static void assert_below(const mem_result *r, const char *what)
{
    ck_assert_msg(r->ref_peak == r->ref_formula,
                  "%s: reference scratch peak %zu != formula 8*(MK+KN+MN) = %zu", what, r->ref_peak,
                  r->ref_formula);
    ck_assert_msg(r->opt_peak <= r->ceiling, "%s: optimized scratch %zu > ceiling %zu", what, r->opt_peak,
                  r->ceiling);
    ck_assert_msg(r->ceiling < r->ref_peak, "%s: ceiling %zu is not below the reference's %zu", what,
                  r->ceiling, r->ref_peak);
}

/* _i: variant * 2 + dtype. Two sizes, the second doubling M, N and K. */
START_TEST(test_opt_below_ceiling_below_ref_at_two_sizes)
{
    const mf_matmul_variant v = (mf_matmul_variant)(_i / 2);
    const mf_dtype dt = _i % 2 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mem_result small = measure(v, dt, 0, 0, 40, 24, 56);
    const mem_result large = measure(v, dt, 1, 1, 80, 48, 112);
    assert_below(&small, "40x24x56");
    assert_below(&large, "80x48x112");
    /* Scaling: the reference grows 4x (every term is a product of two dims),
     * the ceiling does not grow at all. */
    ck_assert_uint_eq(large.ref_peak, 4 * small.ref_peak);
    ck_assert_uint_eq(large.ceiling, small.ceiling);
    ck_assert_uint_le(large.opt_peak, small.ceiling);
}
END_TEST

/* The cuBLAS workspace is allocated with the context and is part of the
 * baseline: it is visible as current device scratch before any matmul runs,
 * and a matmul adds nothing on top of it. */
START_TEST(test_cublas_workspace_is_baseline)
{
    mf_context *ctx = mf_test_ctx();
    mf_mem_stats st;
    MF_ASSERT_STATUS(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st), MF_OK);
    const size_t before = st.current;
    const size_t ws = mf_context_cublas_workspace_bytes(ctx);
    ck_assert_uint_gt(ws, 0);
    ck_assert_uint_ge(before, ws);
    const mem_result r = measure(MF_MATMUL_CUBLAS, MF_DTYPE_BF16, 0, 1, 33, 17, 65);
    assert_below(&r, "cublas 33x17x65");
    MF_ASSERT_STATUS(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st), MF_OK);
    ck_assert_uint_eq(st.current, before);
}
END_TEST

/* The formulas at a large shape (never run): an 8192^3 matmul's reference
 * needs 1.5 GiB of double copies, every optimized variant 0 bytes. */
START_TEST(test_formulas_at_scale)
{
    const int64_t s = 8192;
    ck_assert_uint_eq(mf_ref_matmul_scratch_bytes(s, s, s), (size_t)3 * 8 * 8192 * 8192);
    for (int v = 0; v < MF_MATMUL_N_VARIANTS; ++v) {
        ck_assert_uint_eq(mf_matmul_scratch_ceiling((mf_matmul_variant)v, s, s, s), 0);
        ck_assert_uint_lt(mf_matmul_scratch_ceiling((mf_matmul_variant)v, s, s, s),
                          mf_ref_matmul_scratch_bytes(s, s, s));
    }
}
END_TEST

static Suite *matmul_memory_suite(void)
{
    Suite *s = suite_create("matmul_memory");
    TCase *tc = tcase_create("ceilings");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_opt_below_ceiling_below_ref_at_two_sizes, 0, MF_MATMUL_N_VARIANTS * 2);
    tcase_add_test(tc, test_cublas_workspace_is_baseline);
    tcase_add_test(tc, test_formulas_at_scale);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(matmul_memory_suite()); }
