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
#include <stdio.h>

/* The memory cases of the op's table (src/ops/matmul.c, its last five):
 * 40x24x56 (f32, bf16), 80x48x112 transposed (f32, bf16), cublas 33x17x65 bf16. */
#define MEM_CASE0 65

typedef struct mem_result {
    size_t ref_peak, opt_peak, ref_formula, ceiling;
} mem_result;

/* Case MEM_CASE0 + k of variant v through the testbed (equivalent and
 * opt <= ceiling asserted there: a variant that skipped the work would
 * trivially use no memory), checked to be the shape the formulas are given. */
static mem_result measure(mf_matmul_variant v, int k, const char *dtype, int64_t M, int64_t N, int64_t K,
                          int ta, int tb)
{
    const mf_case_result c = mf_test_op_case("matmul", (int)v, MEM_CASE0 + k);
    char shape[96];
    snprintf(shape, sizeof shape, "M=%lld N=%lld K=%lld ta=%d tb=%d", (long long)M, (long long)N,
             (long long)K, ta, tb);
    ck_assert_str_eq(c.shape, shape);
    ck_assert_str_eq(c.dtype, dtype);
    ck_assert_uint_eq(c.ceiling_bytes, mf_matmul_scratch_ceiling(v, M, N, K));
    const mem_result r = { c.ref_peak_bytes, c.opt_peak_bytes, mf_ref_matmul_scratch_bytes(M, N, K),
                           c.ceiling_bytes };
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
    const int bf16 = _i % 2;
    const char *dt = bf16 ? "bf16" : "f32";
    const mem_result small = measure(v, bf16, dt, 40, 24, 56, 0, 0);
    const mem_result large = measure(v, 2 + bf16, dt, 80, 48, 112, 1, 1);
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
    const mem_result r = measure(MF_MATMUL_CUBLAS, 4, "bf16", 33, 17, 65, 0, 1);
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
