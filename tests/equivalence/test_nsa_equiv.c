/* Equivalence of the fused NSA forward and backward (optimized/nsa.cu) with the
 * reference that materializes the dense masked branches (reference/nsa.c),
 * seed document 001.
 *
 * The configurations are the op's built-in cases (src/ops/nsa.c: the report's
 * six, then this suite's: many candidate blocks (top-n by importance), the
 * seed's configuration with S < w and S < l', S < l (no compressed block), odd
 * S, Hq/Hk = 6 with D = 64, the largest group, D = 1, fp32 and bf16 storage
 * (bf16 with D in {16, 32, 64, 128}: the tensor-core branches, G = 16 filling
 * the m16 tile), more than 1024 candidate blocks (the top n merged across
 * importance tiles), more than the bf16 compression kernel's 64-block
 * importance tile; then the memory suite's), run through the testbed as
 * `memfix report` runs them: seeded inputs (q, k in [-1.5, 1.5) so that the
 * softmaxes are far from uniform, v and dout in [-1, 1), gates in
 * [0.05, 0.95)), the reference forward and backward on the host, the fused
 * forward, then the fused backward from its lse and sel, on the test backend
 * into outputs pre-filled with NaN and followed by a NaN guard; out, lse, dq,
 * dk, dv and the three gate gradients compared with the op's tolerance rows,
 * the selected block indices exactly (the op's run_case).
 *
 * Here stay the op's own properties: of each case's result, the reference's
 * scratch above the ceiling and, on the bf16 tensor-core branches, P rounded to
 * bf16 (out measurably off the reference); and memfix verify accepts the fused
 * forward and rejects one that drops the compression branch's gate.
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/nsa.h"
#include "memfix/registry.h"
#include "memfix/verify.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

/* The op's own properties of every case's result (mf_test_add_op_cases_checked,
 * on the run the case made):
 *  - the reference's scratch is above the fused kernels' ceiling (the fix is
 *    needed at this shape);
 *  - on the bf16 tensor-core branches (D % 16 == 0, D <= 128) P is rounded to
 *    bf16 as a bf16 kernel does: out must be off the reference by far more
 *    than the fp32 path's 2e-6 somewhere (inside nsa.out.bf16, asserted by the
 *    case); every output's measured error is printed (they justify the bf16
 *    tolerance rows). */
static int case_property(int variant, int case_index, const mf_case_result *r, char *msg, size_t cap)
{
    (void)variant;
    if (r->ref_peak_bytes <= r->ceiling_bytes) {
        snprintf(msg, cap, "reference scratch %zu bytes is not above the ceiling of %zu", r->ref_peak_bytes,
                 r->ceiling_bytes);
        return 0;
    }
    long long D = 0;
    if (sscanf(r->shape, "B=%*d S=%*d Hq=%*d Hk=%*d D=%lld", &D) != 1) {
        snprintf(msg, cap, "shape '%s' names no D", r->shape);
        return 0;
    }
    if (strcmp(r->dtype, "bf16") != 0 || D % 16 != 0 || D > 128) return 1;
    for (int o = 0; o < r->n_outputs; o++)
        fprintf(stderr, "nsa case %d (bf16 on tensor cores, %s): %s max |err| = %.3g (%.1f%% of %s)\n",
                case_index, r->shape, r->outputs[o].what, r->outputs[o].max_abs_err,
                100.0 * r->outputs[o].budget_used, r->outputs[o].tol);
    if (r->n_outputs < 1 || strcmp(r->outputs[0].what, "out") != 0 || !(r->outputs[0].max_abs_err > 5e-5)) {
        snprintf(msg, cap, "bf16 out matches the reference to %.3g: P was not rounded",
                 r->n_outputs > 0 ? r->outputs[0].max_abs_err : 0.0);
        return 0;
    }
    return 1;
}

/* memfix verify --op nsa.forward: the fused entry of the test's backend passes
 * every case; a candidate that drops the compression branch's gate (writes
 * out without g_cmp's branch) is rejected. */
mf_nsa_forward_kernel_fn mf_host_nsa_fused_forward;
#ifdef MF_HAVE_CUDA
mf_nsa_forward_kernel_fn mf_cuda_nsa_fused_forward;
#endif
static mf_status no_cmp_candidate(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                                  int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                                  const void *v, const void *g_cmp, const void *g_slc, const void *g_win,
                                  float *out, float *lse, int32_t *sel)
{
    (void)g_cmp;
    return mf_nsa_forward(ctx, MF_NSA_FUSED, dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_win, g_slc, g_win, out,
                          lse, sel);
}

static size_t verify_rejected(void (*fn)(void))
{
    const int n_cases = mf_verify_n_cases("nsa.forward");
    ck_assert_int_gt(n_cases, 0);
    mf_verify_row rows[16];
    ck_assert_int_le(n_cases, 16);
    size_t n = 0, rejected = 0;
    MF_ASSERT_OK(mf_verify(mf_test_ctx(), "nsa.forward", fn, rows, 16, &n));
    ck_assert_uint_eq(n, (size_t)n_cases);
    for (size_t i = 0; i < n; i++) rejected += rows[i].result.pass ? 0u : 1u;
    return rejected;
}

START_TEST(test_verify_candidates)
{
    ck_assert_int_eq(mf_verify_supported("nsa.forward"), 1);
    mf_nsa_forward_kernel_fn *mine = mf_host_nsa_fused_forward;
#ifdef MF_HAVE_CUDA
    if (mf_test_backend() == MF_BACKEND_CUDA) mine = mf_cuda_nsa_fused_forward;
#endif
    ck_assert_uint_eq(verify_rejected((void (*)(void))mine), 0);
    ck_assert_uint_gt(verify_rejected((void (*)(void))no_cmp_candidate), 0);
}
END_TEST

static Suite *nsa_equiv_suite(void)
{
    Suite *s = suite_create("nsa_equiv");
    mf_test_add_op_cases_checked(s, "nsa", case_property); /* TCase fused: the built-in cases */
    TCase *v = tcase_create("verify");
    tcase_add_checked_fixture(v, mf_test_setup, mf_test_teardown);
    tcase_add_test(v, test_verify_candidates);
    suite_add_tcase(s, v);
    return s;
}

int main(void) { return mf_test_run(nsa_equiv_suite()); }
