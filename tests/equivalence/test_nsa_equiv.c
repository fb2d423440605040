/* Equivalence of the fused NSA forward (optimized/nsa.cu) with the reference
 * that materializes the dense masked branches (reference/nsa.c), seed document
 * 001.
 *
 * For each configuration: seeded inputs (q, k in [-1.5, 1.5) so that the
 * softmaxes are far from uniform, v in [-1, 1), gates in [0.05, 0.95)), the
 * reference on the host, the fused forward on the test backend into outputs
 * pre-filled with NaN and followed by a NaN guard region that must stay
 * untouched. out and lse are compared with the op's tolerance rows, the
 * selected block indices exactly; then the fused backward (from the forward's
 * lse and sel) against the reference backward: dq, dk, dv and the three gate
 * gradients. Configurations: many candidate blocks
 * (top-n by importance), the seed's configuration with S < w and S < l',
 * S < l (no compressed block), odd S, Hq/Hk = 6 with D = 64, the largest
 * group, D = 1, fp32 and bf16 storage (bf16 with D in {16, 32, 64}: the
 * tensor-core branches, G = 16 filling the m16 tile), more than 1024 candidate
 * blocks (the top n merged across importance tiles), and, for the bf16
 * tensor-core compression kernel (D <= 64), more than its 64-block importance
 * tile. Also: the registry's
 * built-in cases.
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/nsa.h"
#include "memfix/registry.h"
#include "memfix/verify.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct config {
    int64_t B, S, Hq, Hk, D;
    mf_nsa_config cfg;
    mf_dtype dtype;
} config;

static const config configs[] = {
    { 1, 150, 2, 1, 8, { 8, 4, 8, 6, 20, 0.0f }, MF_DTYPE_F32 },       /* 19 blocks, top 6 */
    { 1, 133, 4, 2, 16, { 16, 8, 16, 5, 40, 0.0f }, MF_DTYPE_BF16 },   /* odd S, 9 blocks */
    { 1, 61, 6, 1, 64, { 32, 16, 64, 16, 512, 0.0f }, MF_DTYPE_BF16 }, /* seed cfg, S < w, S < l' */
    { 2, 9, 2, 1, 4, { 32, 16, 64, 16, 512, 0.0f }, MF_DTYPE_F32 },    /* S < l: no compressed block */
    { 1, 40, 16, 1, 8, { 4, 2, 6, 3, 7, 0.5f }, MF_DTYPE_F32 },        /* largest group, explicit scale */
    { 1, 1, 1, 1, 1, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32 },         /* S = 1, D = 1 */
    { 1, 37, 3, 3, 1, { 4, 4, 4, 2, 5, 0.0f }, MF_DTYPE_BF16 },        /* D = 1, d = l, n = 2 < 3 forced */
    { 1, 40, 16, 1, 32, { 4, 2, 6, 3, 7, 0.5f }, MF_DTYPE_BF16 }, /* tensor cores: a full m16 tile of heads */
    { 1,
      30,
      4,
      2,
      128,
      { 8, 4, 8, 3, 10, 0.0f },
      MF_DTYPE_BF16 }, /* tensor cores at D = 128 (2 warps per CTA) */
    { 1, 1100, 2, 1, 4, { 2, 1, 1, 5, 3, 0.0f }, MF_DTYPE_F32 },  /* 1100 blocks: two top-n tiles of 1024 */
    { 1, 300, 2, 1, 16, { 2, 1, 2, 5, 9, 0.0f }, MF_DTYPE_BF16 }, /* 150 blocks: three 64-block importance
                                                                     tiles on the tensor cores, 16 tokens/CTA */
};
#define N_CONFIGS ((int)(sizeof(configs) / sizeof(configs[0])))
#define GUARD 32

static const char *tol(const char *what, mf_dtype dt)
{
    static char buf[4][64];
    static int slot;
    char *b = buf[slot++ & 3];
    snprintf(b, 64, "nsa.%s.%s", what, mf_dtype_name(dt));
    return b;
}

START_TEST(test_fused_matches_reference)
{
    const config *c = &configs[_i];
    mf_context *ctx = mf_test_ctx();
    const size_t rq = (size_t)(c->B * c->S * c->Hq), rk = (size_t)(c->B * c->S * c->Hk);
    const size_t nq = rq * (size_t)c->D, nkv = rk * (size_t)c->D, ns = rk * (size_t)c->cfg.n_sel;
    const size_t es = mf_dtype_size(c->dtype);
    const uint64_t seed = 0x45a000000ull + (uint64_t)_i * 16u;
    void *q = mf_test_make_input(c->dtype, nq, seed, -1.5f, 1.5f);
    void *k = mf_test_make_input(c->dtype, nkv, seed + 1, -1.5f, 1.5f);
    void *v = mf_test_make_input(c->dtype, nkv, seed + 2, -1.0f, 1.0f);
    void *gc = mf_test_make_input(c->dtype, rq, seed + 3, 0.05f, 0.95f);
    void *gs = mf_test_make_input(c->dtype, rq, seed + 4, 0.05f, 0.95f);
    void *gw = mf_test_make_input(c->dtype, rq, seed + 5, 0.05f, 0.95f);
    float *r_out = mf_test_nan_host(nq), *r_lse = mf_test_nan_host(3 * rq);
    int32_t *r_sel = malloc(ns * 4);
    ck_assert_ptr_nonnull(r_sel);
    MF_ASSERT_OK(mf_ref_nsa_forward(ctx, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D, q, k, v, gc, gs,
                                    gw, r_out, r_lse, r_sel));

    void *d_q = mf_test_dev_upload(ctx, q, nq * es), *d_k = mf_test_dev_upload(ctx, k, nkv * es);
    void *d_v = mf_test_dev_upload(ctx, v, nkv * es), *d_gc = mf_test_dev_upload(ctx, gc, rq * es);
    void *d_gs = mf_test_dev_upload(ctx, gs, rq * es), *d_gw = mf_test_dev_upload(ctx, gw, rq * es);
    float *d_out = mf_test_dev_nan(ctx, nq + GUARD), *d_lse = mf_test_dev_nan(ctx, 3 * rq + GUARD);
    float *d_sel = mf_test_dev_nan(ctx, ns + GUARD);
    MF_ASSERT_OK(mf_nsa_forward(ctx, MF_NSA_FUSED, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D, d_q,
                                d_k, d_v, d_gc, d_gs, d_gw, d_out, d_lse, (int32_t *)d_sel));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *g_out = mf_test_dev_fetch(ctx, d_out, nq, GUARD, "out");
    float *g_lse = mf_test_dev_fetch(ctx, d_lse, 3 * rq, GUARD, "lse");
    float *g_sel = mf_test_dev_fetch(ctx, d_sel, ns, GUARD, "sel");
    for (size_t i = 0; i < ns; i++) {
        int32_t got;
        memcpy(&got, &g_sel[i], 4);
        ck_assert_msg(got == r_sel[i], "config %d: sel[%zu] = %d, reference %d", _i, i, got, r_sel[i]);
    }
    MF_ASSERT_CLOSE(g_out, r_out, nq, tol("out", c->dtype));
    if (c->dtype == MF_DTYPE_BF16 && c->D % 16 == 0 && c->D <= 128) {
        /* the tensor-core branches round P to bf16 as a bf16 kernel does: out must
         * be off the reference by far more than the fp32 path's 2e-6 somewhere
         * (inside nsa.out.bf16, asserted above) */
        double maxd = 0.0, se = 0.0, sr = 0.0;
        for (size_t i = 0; i < nq; i++) {
            const double d = fabs((double)g_out[i] - (double)r_out[i]);
            maxd = d > maxd ? d : maxd;
            se += d * d;
            sr += (double)r_out[i] * (double)r_out[i];
        }
        fprintf(stderr, "config %d (bf16 on tensor cores): max |out - ref| = %.3g, nmse = %.3g\n", _i, maxd,
                se / sr);
        ck_assert_msg(maxd > 5e-5, "config %d: bf16 out matches the reference to %.3g: P was not rounded", _i,
                      maxd);
    }
    MF_ASSERT_CLOSE(g_lse, r_lse, 3 * rq, tol("lse", c->dtype));

    /* backward from the forward's lse and sel */
    void *dout = mf_test_make_input(c->dtype, nq, seed + 6, -1.0f, 1.0f);
    void *d_do = mf_test_dev_upload(ctx, dout, nq * es);
    const size_t gn[6] = { nq, nkv, nkv, rq, rq, rq };
    float *r_g[6], *d_g[6], *g_g[6];
    for (int i = 0; i < 6; i++) {
        r_g[i] = mf_test_nan_host(gn[i]);
        d_g[i] = mf_test_dev_nan(ctx, gn[i] + GUARD);
    }
    MF_ASSERT_OK(mf_ref_nsa_backward(ctx, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D, q, k, v, gc, gs,
                                     gw, dout, r_g[0], r_g[1], r_g[2], r_g[3], r_g[4], r_g[5]));
    MF_ASSERT_OK(mf_nsa_backward(ctx, MF_NSA_FUSED, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D, d_q,
                                 d_k, d_v, d_gc, d_gs, d_gw, d_do, d_lse, (const int32_t *)d_sel, d_g[0],
                                 d_g[1], d_g[2], d_g[3], d_g[4], d_g[5]));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    static const char *const gname[6] = { "dq", "dk", "dv", "dg_cmp", "dg_slc", "dg_win" };
    for (int i = 0; i < 6; i++) {
        g_g[i] = mf_test_dev_fetch(ctx, d_g[i], gn[i], GUARD, gname[i]);
        if (c->dtype == MF_DTYPE_BF16 && c->D % 16 == 0 &&
            c->D <= 128) { /* measured, for the tolerance row */
            double maxd = 0.0, se = 0.0, sr = 0.0;
            for (size_t e = 0; e < gn[i]; e++) {
                const double d = fabs((double)g_g[i][e] - (double)r_g[i][e]);
                maxd = d > maxd ? d : maxd;
                se += d * d;
                sr += (double)r_g[i][e] * (double)r_g[i][e];
            }
            fprintf(stderr, "config %d (bf16 on tensor cores): %s max |err| = %.3g, nmse = %.3g\n", _i,
                    gname[i], maxd, sr > 0.0 ? se / sr : 0.0);
        }
        MF_ASSERT_CLOSE(g_g[i], r_g[i], gn[i], tol("grad", c->dtype));
        MF_ASSERT_OK(mf_buffer_free(ctx, d_g[i]));
        free(r_g[i]);
        free(g_g[i]);
    }
    MF_ASSERT_OK(mf_buffer_free(ctx, d_do));
    free(dout);

    void *dev[] = { d_q, d_k, d_v, d_gc, d_gs, d_gw, d_out, d_lse, d_sel };
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) MF_ASSERT_OK(mf_buffer_free(ctx, dev[i]));
    void *host[] = { q, k, v, gc, gs, gw, r_out, r_lse, r_sel, g_out, g_lse, g_sel };
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}
END_TEST

/* The registry's built-in cases (what `memfix report` runs) pass here too. */
START_TEST(test_registry_cases)
{
    const mf_op_desc *op = mf_registry_find("nsa");
    ck_assert_ptr_nonnull(op);
    for (int vi = 0; vi < op->n_variants; vi++)
        for (int ci = 0; ci < op->n_cases; ci++) {
            mf_case_result r;
            MF_ASSERT_OK(op->run_case(mf_test_ctx(), vi, ci, &r));
            ck_assert_msg(r.pass, "nsa %s case %d (%s): %s", r.variant, ci, r.shape, r.message);
            ck_assert_uint_le(r.opt_peak_bytes, r.ceiling_bytes);
            ck_assert_uint_gt(r.ref_peak_bytes, r.ceiling_bytes);
        }
}
END_TEST

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
    TCase *tc = tcase_create("kernels");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_fused_matches_reference, 0, N_CONFIGS);
    suite_add_tcase(s, tc);
    TCase *reg = tcase_create("registry");
    tcase_add_checked_fixture(reg, mf_test_setup, mf_test_teardown);
    tcase_add_test(reg, test_registry_cases);
    tcase_add_test(reg, test_verify_candidates);
    suite_add_tcase(s, reg);
    return s;
}

int main(void) { return mf_test_run(nsa_equiv_suite()); }
