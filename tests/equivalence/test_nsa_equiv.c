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
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/nsa.h"
#include "memfix/registry.h"
#include "memfix/verify.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The certified selection's fallback (nsa_recheck_kernel) on every token: with
 * MF_NSA_RECHECK=all the bf16 compression kernel lists every token and leaves
 * sel to the fallback alone, so the cases pass only if its double ranking
 * equals the reference's (sel exactly; out, lse in their rows, as always). The
 * op's bf16 cases on the tensor-core compression kernel (D <= 64, n <= 32, with
 * a compressed block). */
START_TEST(test_recheck_every_token)
{
    static const int bf16_cmp_cases[] = { 1, 7, 8, 13, 16, 20, 28, 29, 30, 31, 32, 33 };
    ck_assert_int_eq(setenv("MF_NSA_RECHECK", "all", 1), 0);
    for (size_t i = 0; i < sizeof bf16_cmp_cases / sizeof bf16_cmp_cases[0]; i++) {
        const mf_case_result r = mf_test_op_case("nsa", 0, bf16_cmp_cases[i]);
        ck_assert_str_eq(r.dtype, "bf16");
    }
    unsetenv("MF_NSA_RECHECK");
}
END_TEST

/* A small bf16 forward run with the environment variable var = value: its status must be
 * want, and a failure's message must name var. */
static void expect_env_forward(const char *var, const char *value, mf_status want)
{
    mf_context *ctx = mf_test_ctx();
    const mf_nsa_config cfg = { 8, 8, 8, 4, 16, 0.0f };
    const int64_t S = 24, Hq = 2, D = 16;
    const size_t nq = (size_t)S * Hq * D, nk = (size_t)S * D;
    void *hq = mf_test_make_input(MF_DTYPE_BF16, nq, 1, -1.0f, 1.0f);
    void *hk = mf_test_make_input(MF_DTYPE_BF16, nk, 2, -1.0f, 1.0f);
    void *hg = mf_test_make_input(MF_DTYPE_BF16, (size_t)S * Hq, 3, 0.1f, 0.9f);
    void *q = mf_test_dev_upload(ctx, hq, nq * 2), *k = mf_test_dev_upload(ctx, hk, nk * 2);
    void *g = mf_test_dev_upload(ctx, hg, (size_t)S * Hq * 2);
    float *out = mf_test_dev_nan(ctx, nq);
    ck_assert_int_eq(setenv(var, value, 1), 0);
    const mf_status st = mf_nsa_forward(ctx, MF_NSA_FUSED, MF_DTYPE_BF16, &cfg, 1, S, Hq, 1, D, q, k, k, g, g,
                                        g, out, NULL, NULL);
    unsetenv(var);
    ck_assert_int_eq(st, want);
    if (want != MF_OK)
        ck_assert_ptr_nonnull(strstr(mf_last_error(), var));
    else
        MF_ASSERT_OK(mf_context_synchronize(ctx));
    mf_buffer_free(ctx, q), mf_buffer_free(ctx, k), mf_buffer_free(ctx, g), mf_buffer_free(ctx, out);
    free(hq), free(hk), free(hg);
}

/* A value other than "all" is refused with a status and a message. */
START_TEST(test_recheck_bad_value) { expect_env_forward("MF_NSA_RECHECK", "some", MF_ERR_INVALID_ARGUMENT); }
END_TEST

/* Ties and near-ties: l = d = l' = 8, so compressed block j is selection
 * block j, and the keys of block i >= 3 repeat those of block i % 3. With n = 4
 * each token selects its three forced blocks and one of the tied twins b,
 * b + 3, b + 6. The selection must be the reference's; out and lse in their rows.
 * - near = 0, exact ties: twins have bitwise-equal importances in double and in
 *   float; the reference and the kernel both take the lower index.
 * - near = 1, near-ties the float sums cannot see: the last key column is
 *   1 + i 2^-7 in block i (exact in bf16, so kc's too) and every q's last
 *   column is 2^-20, so block b + 3's scores exceed block b's by 3 2^-29 (scale
 *   1/4), under half an ulp of a score near 1. In double the later twin wins; in
 *   float the two round to the same score (or the later one an ulp up: the
 *   sums are monotone), so the kernel's own ranking gives the lower index. Only
 *   the certificate (margin at most an ulp: listed) and the fallback in double
 *   give the reference's selection: a kernel that stopped listing near-ties
 *   fails here. */
static void tied_case(int near)
{
    mf_context *ctx = mf_test_ctx();
    const mf_nsa_config cfg = { 8, 8, 8, 4, 16, 0.0f };
    const int64_t S = 70, Hq = 2, Hk = 1, D = 16, n = 4;
    const size_t nq = (size_t)S * Hq * D, nk = (size_t)S * Hk * D, rq = (size_t)S * Hq;
    const size_t ns = (size_t)S * Hk * n;
    uint16_t *hq = mf_test_make_input(MF_DTYPE_BF16, nq, 11, -1.5f, 1.5f);
    uint16_t *hk = mf_test_make_input(MF_DTYPE_BF16, nk, 12, -1.5f, 1.5f);
    uint16_t *hv = mf_test_make_input(MF_DTYPE_BF16, nk, 13, -1.0f, 1.0f);
    void *hg = mf_test_make_input(MF_DTYPE_BF16, rq, 14, 0.05f, 0.95f);
    for (size_t s = 24; s < (size_t)S; s++)
        memcpy(hk + s * (size_t)D, hk + (s / 8 % 3 * 8 + s % 8) * (size_t)D, (size_t)D * 2);
    if (near) {
        for (size_t s = 0; s < (size_t)S; s++)
            hk[s * (size_t)D + D - 1] = (uint16_t)(0x3F80u + s / 8);         /* 1 + i 2^-7 */
        for (size_t r = 0; r < rq; r++) hq[r * (size_t)D + D - 1] = 0x3580u; /* 2^-20 */
    }
    float *r_out = mf_test_nan_host(nq), *r_lse = mf_test_nan_host(3 * rq);
    int32_t *r_sel = malloc(ns * sizeof(int32_t));
    ck_assert_ptr_nonnull(r_sel);
    MF_ASSERT_OK(mf_ref_nsa_forward(ctx, MF_DTYPE_BF16, &cfg, 1, S, Hq, Hk, D, hq, hk, hv, hg, hg, hg, r_out,
                                    r_lse, r_sel));
    void *q = mf_test_dev_upload(ctx, hq, nq * 2), *k = mf_test_dev_upload(ctx, hk, nk * 2);
    void *v = mf_test_dev_upload(ctx, hv, nk * 2), *g = mf_test_dev_upload(ctx, hg, rq * 2);
    float *out = mf_test_dev_nan(ctx, nq + 64), *lse = mf_test_dev_nan(ctx, 3 * rq + 64);
    float *sel = mf_test_dev_nan(ctx, ns + 64);
    MF_ASSERT_OK(mf_nsa_forward(ctx, MF_NSA_FUSED, MF_DTYPE_BF16, &cfg, 1, S, Hq, Hk, D, q, k, v, g, g, g,
                                out, lse, (int32_t *)sel));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *g_out = mf_test_dev_fetch(ctx, out, nq, 64, "out"),
          *g_lse = mf_test_dev_fetch(ctx, lse, 3 * rq, 64, "lse");
    float *g_sel = mf_test_dev_fetch(ctx, sel, ns, 64, "sel");
    int32_t gs[70 * 4];
    memcpy(gs, g_sel, sizeof gs);
    for (size_t i = 0; i < ns; i++)
        if (gs[i] != r_sel[i])
            ck_abort_msg("sel[%zu] (t=%zu) = %d, the reference's %d", i, i / (size_t)n, (int)gs[i],
                         (int)r_sel[i]);
    /* the case has teeth: some token selected a non-forced block b over its visible, non-forced twin
     * b + 3 (exact ties: the lower index wins), or b over its non-forced twin b - 3 (near-ties: the
     * later twin wins in double) */
    size_t tied = 0;
    for (size_t t = 0; t < (size_t)S; t++) {
        const size_t last = t / 8;
        for (size_t x = 0; x < (size_t)n; x++) {
            const int32_t b = r_sel[t * (size_t)n + x];
            if (b <= 0 || (size_t)b + 1 >= last) continue; /* padding or forced */
            if (near)
                tied += b >= 4 ? 1u : 0u;
            else
                tied += (size_t)b + 5 <= last && ((size_t)b + 3) * 8 + 7 <= t ? 1u : 0u;
        }
    }
    ck_assert_uint_gt(tied, 0);
    MF_ASSERT_CLOSE(g_out, r_out, nq, "nsa.out.bf16");
    MF_ASSERT_CLOSE(g_lse, r_lse, 3 * rq, "nsa.lse.bf16");
    free(g_out), free(g_lse), free(g_sel), free(r_out), free(r_lse), free(r_sel);
    mf_buffer_free(ctx, q), mf_buffer_free(ctx, k), mf_buffer_free(ctx, v), mf_buffer_free(ctx, g);
    mf_buffer_free(ctx, out), mf_buffer_free(ctx, lse), mf_buffer_free(ctx, sel);
    free(hq), free(hk), free(hv), free(hg);
}

START_TEST(test_tied_importances) { tied_case(0); }
END_TEST

START_TEST(test_near_tied_importances) { tied_case(1); }
END_TEST

/* ---- the bf16 forward on wgmma (MF_NSA_MMA_PATH=wgmma; sm_90a, emulated in host mode) ----
 * TCase wgmma runs every bf16 equivalence case (forward and backward; the backward has no
 * wgmma kernel, so it checks the forward's lse and sel it reads) with the forward's
 * tensor-core kernels on wgmma: D in {16, 32, 64, 128}, G = 1 to 16, 64- and 128-row
 * CTAs, partial last CTAs, S < l (no compressed block); case 20: D = 16 at G = 6 (the
 * 128-row nsa_wg_fwd_kernel<16, 8>); case 29: D = 64 with 199 compressed blocks (the
 * compression kernel's tile pipeline wrapping, several importance tiles); cases 30 and 31: pass 2's
 * importance ranges without and with carried blocks; cases 32 and 33: the seed's ratios (l' = 4 d,
 * l = 2 d), importances summed per block in registers (nsa_cmp::store_block_sums); case 34: the
 * seed's l' = 64 with selections that differ within a warp (interior full stages, one token mask). */
static const int wgmma_cases[] = { 1, 4, 7, 8, 12, 13, 14, 16, 25, 26, 27, 28, 20, 29, 30, 31, 32, 33, 34 };

static void wgmma_setup(void)
{
    setenv("MF_NSA_MMA_PATH", "wgmma", 1);
    mf_test_setup();
}

static void wgmma_teardown(void)
{
    mf_test_teardown();
    unsetenv("MF_NSA_MMA_PATH");
    unsetenv("MF_NSA_RECHECK");
}

START_TEST(test_wgmma_cases)
{
    const mf_case_result r = mf_test_op_case("nsa", 0, wgmma_cases[_i]);
    ck_assert_msg(strcmp(r.dtype, "bf16") == 0, "case %d is not a bf16 case (%s)", wgmma_cases[_i], r.dtype);
}
END_TEST

/* The certificate on wgmma: with MF_NSA_RECHECK=all nsa_wg_cmp_kernel lists every token and
 * nsa_recheck_kernel alone writes sel, so these cases pass only if the wgmma kernel's flag
 * list covers every token and out, lse (written by it) stay within their rows; the cases
 * without the variable (test_wgmma_cases) pass only if its own certified selection is the
 * reference's. The bf16 cases on the tensor-core compression kernel (D <= 64, n <= 32). */
static const int wgmma_recheck_cases[] = { 1, 7, 8, 13, 16, 20, 28, 29, 30, 31, 32, 33 };

START_TEST(test_wgmma_recheck_all)
{
    ck_assert_int_eq(setenv("MF_NSA_RECHECK", "all", 1), 0);
    const mf_case_result r = mf_test_op_case("nsa", 0, wgmma_recheck_cases[_i]);
    unsetenv("MF_NSA_RECHECK");
    ck_assert_str_eq(r.dtype, "bf16");
}
END_TEST

/* The knob: a value other than auto, sync or wgmma is refused with a status and a
 * message naming it; sync is accepted. */
START_TEST(test_mma_path_bad_value)
{
    expect_env_forward("MF_NSA_MMA_PATH", "tensorcore", MF_ERR_INVALID_ARGUMENT);
    expect_env_forward("MF_NSA_MMA_PATH", "sync", MF_OK);
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
    TCase *c = tcase_create("certificate");
    tcase_add_checked_fixture(c, mf_test_setup, mf_test_teardown);
    tcase_set_timeout(c, 600);
    tcase_add_test(c, test_recheck_every_token);
    tcase_add_test(c, test_recheck_bad_value);
    tcase_add_test(c, test_tied_importances);
    tcase_add_test(c, test_near_tied_importances);
    tcase_add_test(c, test_mma_path_bad_value);
    suite_add_tcase(s, c);
    /* an A100, or an H100 without the sm_90a code, has no wgmma path: these cases are skipped there */
    TCase *w =
        mf_test_tcase_needing("wgmma", mf_nsa_wgmma_available, "the NSA forward's wgmma path (sm_90a)");
    tcase_add_checked_fixture(w, wgmma_setup, wgmma_teardown);
    tcase_set_timeout(w, 600);
    tcase_add_loop_test(w, test_wgmma_cases, 0, (int)(sizeof wgmma_cases / sizeof wgmma_cases[0]));
    suite_add_tcase(s, w);
    /* a TCase of its own, so that ctest runs it beside the one above (tests/nsa.cmake) */
    TCase *wr = mf_test_tcase_needing("wgmma_recheck", mf_nsa_wgmma_available,
                                      "the NSA forward's wgmma path (sm_90a)");
    tcase_add_checked_fixture(wr, wgmma_setup, wgmma_teardown);
    tcase_set_timeout(wr, 600);
    tcase_add_loop_test(wr, test_wgmma_recheck_all, 0,
                        (int)(sizeof wgmma_recheck_cases / sizeof wgmma_recheck_cases[0]));
    suite_add_tcase(s, wr);
    return s;
}

int main(void) { return mf_test_run(nsa_equiv_suite()); }
