/* Equivalence of the tiled attention kernels (optimized/attention.cu) with the
 * reference that materializes the N x N scores (reference/attention.c), seed
 * document 003.
 *
 * The configurations are the op's built-in cases (src/ops/attention.c: N = 1,
 * N not a multiple of the 16-row tile, exact multiples, causal and not,
 * D != Dv, D = Dv = 128 with N tiny, D = 1, fp32 and bf16 storage, the
 * tensor-core kernels' block edges), run through the testbed as `memfix
 * report` runs them: seeded inputs (q, k in [-1.5, 1.5) so that the softmax is
 * far from uniform, v and dout in [-1, 1)), the reference forward and backward
 * on the host, the tiled forward and backward on the test backend into outputs
 * pre-filled with NaN and followed by a NaN guard, out, lse, dq, dk and dv
 * compared with the op's tolerance rows. Here stay the op's own properties: a
 * common key offset (the tensor-core dq bound), the forward without lse and a
 * NaN input's propagation.
 * MF_LARGE_SHAPES (test_attention_equiv_large, label slow): the descriptor's
 * multi-tile cases that its case_applies keeps out of the sweep, through the
 * same testbed (mf_test_op_case_unlisted).
 */
#include "mf_test.h"

#include "memfix/attention.h"
#include "memfix/check.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 32

#ifdef MF_LARGE_SHAPES
/* test_attention_equiv_large (label slow): the descriptor's last cases
 * (src/ops/attention.c: multi-tile shapes, N up to 256, D up to 128), kept out
 * of the op's sweep by its case_applies and run here through the testbed. */
#define ATTENTION_CASE_LARGE 51
#define ATTENTION_N_LARGE 3
START_TEST(test_large_cases)
{
    static const char *const shapes[ATTENTION_N_LARGE] = { "B=1 H=2 N=256 D=64 Dv=64 causal=1 ",
                                                           "B=1 H=1 N=200 D=128 Dv=128 causal=0 ",
                                                           "B=2 H=2 N=130 D=32 Dv=48 causal=1 " };
    mf_test_op_case_large("attention", ATTENTION_CASE_LARGE, ATTENTION_N_LARGE, _i, MF_ATTENTION_TILED,
                          shapes[_i]);
}
END_TEST
#endif

#ifndef MF_LARGE_SHAPES
/* A common offset c added to every key (k in [c - 1.5, c + 1.5)) shifts each
 * query's scores by the constant q_i . c: out, lse, dk, dv and the exact dq do
 * not change with c (dq_i = scale sum_j dS_ij k_j and sum_j dS_ij = 0). On the
 * tensor-core path two things are checked (docs/attention.md, "A common offset"):
 *  - the backward recomputes P from the stored lse (exp2 of s - lse, never of
 *    an unshifted score): at c = 96 the scores reach |s| of about 100, beyond
 *    fp32 exp's range (88.7), and out, lse, dk, dv still pass their usual rows;
 *  - dq rounds dS to bf16 (rel <= 2^-8: 8 significant bits) as the A operand of
 *    dS K, and Delta comes from the forward's out (P rounded to bf16 there, rel
 *    <= 2^-8, so |Delta error| <= 2^-8 sum_j P_ij |dP_ij|): sum_j dS_ij = 0 then
 *    holds only to 2^-8 (sum_j |dS_ij| + sum_j P_ij |dP_ij|), and that residue
 *    multiplies the common offset (|k_jd| <= |c| + 1.5). The test asserts this
 *    worst-case bound, element by element with P, dP, dS from double-precision
 *    math: |err dq_i| <= the usual row + scale * (|c| + 1.5) * 2^-8 *
 *    (sum_j |dS_ij| + sum_j P_ij |dP_ij|). Measured: 0.022, 0.078 and 0.14 of
 *    it at c = 0, 8, 96; a dS biased by 2^-7 relative before the dQ product
 *    (planted, not committed) fails at c = 96.
 * The fp32 SIMT path has no such term (dS is not rounded). */
static const float key_offsets[] = { 0.0f, 8.0f, 96.0f };
START_TEST(test_mma_key_offset)
{
    const float c_off = key_offsets[_i];
    /* B = H = 1, N = 77, D = Dv = 64, not causal, bf16: the tensor-core path */
    const int64_t cN = 77, cD = 64;
    const mf_dtype dt = MF_DTYPE_BF16;
    mf_context *ctx = mf_test_ctx();
    const size_t N = (size_t)cN, D = (size_t)cD, n = N * D;
    const uint64_t seed = 0x0ff5e7000ull + (uint64_t)_i * 16u;
    void *q = mf_test_make_input(dt, n, seed, -1.5f, 1.5f);
    void *k = mf_test_make_input(dt, n, seed + 1, c_off - 1.5f, c_off + 1.5f);
    void *v = mf_test_make_input(dt, n, seed + 2, -1.0f, 1.0f);
    void *dout = mf_test_make_input(dt, n, seed + 3, -1.0f, 1.0f);
    float *r_out = mf_test_nan_host(n), *r_lse = mf_test_nan_host(N), *r_dq = mf_test_nan_host(n),
          *r_dk = mf_test_nan_host(n), *r_dv = mf_test_nan_host(n);
    MF_ASSERT_OK(mf_ref_attention_forward(ctx, dt, 0, 1, 1, cN, cD, cD, q, k, v, r_out, r_lse));
    MF_ASSERT_OK(mf_ref_attention_backward(ctx, dt, 0, 1, 1, cN, cD, cD, q, k, v, dout, r_dq, r_dk, r_dv));
    void *d_q = mf_test_dev_upload(ctx, q, n * 2), *d_k = mf_test_dev_upload(ctx, k, n * 2);
    void *d_v = mf_test_dev_upload(ctx, v, n * 2), *d_do = mf_test_dev_upload(ctx, dout, n * 2);
    float *d_out = mf_test_dev_nan(ctx, n + GUARD), *d_lse = mf_test_dev_nan(ctx, N + GUARD),
          *d_dq = mf_test_dev_nan(ctx, n + GUARD), *d_dk = mf_test_dev_nan(ctx, n + GUARD),
          *d_dv = mf_test_dev_nan(ctx, n + GUARD);
    MF_ASSERT_OK(
        mf_attention_forward(ctx, MF_ATTENTION_TILED, dt, 0, 1, 1, cN, cD, cD, d_q, d_k, d_v, d_out, d_lse));
    MF_ASSERT_OK(mf_attention_backward(ctx, MF_ATTENTION_TILED, dt, 0, 1, 1, cN, cD, cD, d_q, d_k, d_v, d_out,
                                       d_do, d_lse, d_dq, d_dk, d_dv));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *g_out = mf_test_dev_fetch(ctx, d_out, n, GUARD, "out"),
          *g_lse = mf_test_dev_fetch(ctx, d_lse, N, GUARD, "lse");
    float *g_dq = mf_test_dev_fetch(ctx, d_dq, n, GUARD, "dq"),
          *g_dk = mf_test_dev_fetch(ctx, d_dk, n, GUARD, "dk");
    float *g_dv = mf_test_dev_fetch(ctx, d_dv, n, GUARD, "dv");
    MF_ASSERT_CLOSE(g_out, r_out, n, "attention.mma.out.bf16");
    MF_ASSERT_CLOSE(g_lse, r_lse, N, "attention.mma.lse.bf16");
    MF_ASSERT_CLOSE(g_dv, r_dv, n, "attention.mma.grad.bf16");
    MF_ASSERT_CLOSE(g_dk, r_dk, n, "attention.mma.grad.bf16");

    /* dq: sum_j |dS_ij| in double from the bf16 inputs, then the per-element bound */
    float *fq = malloc(n * 4), *fk = malloc(n * 4), *fv = malloc(n * 4), *fdo = malloc(n * 4);
    double *p = malloc(N * sizeof(double));
    ck_assert(fq && fk && fv && fdo && p);
    mf_test_to_f32(dt, q, fq, n);
    mf_test_to_f32(dt, k, fk, n);
    mf_test_to_f32(dt, v, fv, n);
    mf_test_to_f32(dt, dout, fdo, n);
    const double scale = 1.0 / sqrt((double)D);
    const mf_tolerance *row = mf_tolerance_get("attention.mma.grad.bf16");
    ck_assert(row != NULL);
    double worst = 0.0, worst_row = 0.0; /* largest |err| / bound, / (the row alone) */
    for (size_t i = 0; i < N; i++) {
        double mx = -INFINITY, l = 0.0, delta = 0.0, sabs = 0.0, pabs = 0.0;
        for (size_t j = 0; j < N; j++) {
            double sij = 0.0;
            for (size_t d = 0; d < D; d++) sij += (double)fq[i * D + d] * fk[j * D + d];
            p[j] = sij * scale;
            if (p[j] > mx) mx = p[j];
        }
        for (size_t j = 0; j < N; j++) l += (p[j] = exp(p[j] - mx));
        for (size_t j = 0; j < N; j++) {
            double dp = 0.0;
            for (size_t d = 0; d < D; d++) dp += (double)fdo[i * D + d] * fv[j * D + d];
            p[j] /= l;
            delta += p[j] * dp;
            pabs += p[j] * fabs(dp);
        }
        for (size_t j = 0; j < N; j++) {
            double dp = 0.0;
            for (size_t d = 0; d < D; d++) dp += (double)fdo[i * D + d] * fv[j * D + d];
            sabs += fabs(p[j] * (dp - delta));
        }
        const double grow = scale * (fabs(c_off) + 1.5) * ldexp(sabs + pabs, -8);
        for (size_t d = 0; d < D; d++) {
            const double ref = r_dq[i * D + d], got = g_dq[i * D + d];
            ck_assert_msg(isfinite(got), "dq[%zu][%zu] = %g at key offset %g", i, d, got, c_off);
            const double bound = row->atol + row->rtol * fabs(ref) + grow;
            const double r = fabs(got - ref) / bound;
            if (r > worst) worst = r;
            const double rr = fabs(got - ref) / (row->atol + row->rtol * fabs(ref));
            if (rr > worst_row) worst_row = rr;
            ck_assert_msg(r <= 1.0,
                          "dq[%zu][%zu] = %.8g, reference %.8g: |err| %.3g > bound %.3g "
                          "(row %.3g + offset term %.3g) at key offset %g",
                          i, d, got, ref, fabs(got - ref), bound, bound - grow, grow, c_off);
        }
    }
    fprintf(stderr, "attention mma key offset %g: worst dq |err| / bound = %.3f (/ the row alone: %.3f)\n",
            c_off, worst, worst_row);

    void *dev[] = { d_q, d_k, d_v, d_do, d_out, d_lse, d_dq, d_dk, d_dv };
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) MF_ASSERT_OK(mf_buffer_free(ctx, dev[i]));
    void *host[] = { q,     k,    v,    dout, r_out, r_lse, r_dq, r_dk, r_dv, g_out,
                     g_lse, g_dq, g_dk, g_dv, fq,    fk,    fv,   fdo,  p };
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}
END_TEST

/* A NaN input propagates as in the reference, on the tensor-core path: the
 * running max ignores NaN scores (fmaxf, optimized/mf_mma.cuh online_max_step),
 * so the row must turn NaN through the NaN score's own p (l, O, lse), and a NaN
 * key the causal mask hides from a row must leave that row finite. _i = 0: one
 * NaN in q (row 40: its out and lse NaN, every other row finite); _i = 1: one in
 * k (key 40: rows 40.. NaN, rows 0..39 finite, the key masked for them);
 * N = 77 spans two 64-key blocks, so the NaN meets finite running maxima of
 * earlier blocks, and later blocks meet the NaN row. */
START_TEST(test_mma_nan_propagation)
{
    mf_context *ctx = mf_test_ctx();
    const int64_t N = 77, D = 64;
    const size_t n = (size_t)(N * D), at = 40 * (size_t)D + 3;
    const mf_dtype dt = MF_DTYPE_BF16;
    void *q = mf_test_make_input(dt, n, 0x0a11a0ull, -1.5f, 1.5f);
    void *k = mf_test_make_input(dt, n, 0x0a11a1ull, -1.5f, 1.5f);
    void *v = mf_test_make_input(dt, n, 0x0a11a2ull, -1.0f, 1.0f);
    ((uint16_t *)(_i == 0 ? q : k))[at] = 0x7fc0u; /* bf16 quiet NaN */
    float *ref = mf_test_nan_host(n), *ref_lse = mf_test_nan_host((size_t)N);
    MF_ASSERT_OK(mf_ref_attention_forward(ctx, dt, 1, 1, 1, N, D, D, q, k, v, ref, ref_lse));
    void *d_q = mf_test_dev_upload(ctx, q, n * 2), *d_k = mf_test_dev_upload(ctx, k, n * 2),
         *d_v = mf_test_dev_upload(ctx, v, n * 2);
    float *d_out = mf_test_dev_nan(ctx, n + GUARD), *d_lse = mf_test_dev_nan(ctx, (size_t)N + GUARD);
    MF_ASSERT_OK(
        mf_attention_forward(ctx, MF_ATTENTION_TILED, dt, 1, 1, 1, N, D, D, d_q, d_k, d_v, d_out, d_lse));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *got = mf_test_dev_fetch(ctx, d_out, n, GUARD, "out"),
          *got_lse = mf_test_dev_fetch(ctx, d_lse, (size_t)N, GUARD, "lse");
    for (size_t i = 0; i < (size_t)N; i++) { /* the pattern the reference should have */
        const int nan_row = _i == 0 ? i == 40 : i >= 40;
        ck_assert_msg(isnan(ref_lse[i]) == nan_row, "reference lse[%zu] = %g", i, ref_lse[i]);
        ck_assert_msg(isnan(ref[i * (size_t)D]) == nan_row, "reference out[%zu][0] = %g", i,
                      ref[i * (size_t)D]);
    }
    MF_ASSERT_CLOSE(got, ref, n, "attention.mma.out.bf16"); /* NaN pattern equal, the rest within the row */
    MF_ASSERT_CLOSE(got_lse, ref_lse, (size_t)N, "attention.mma.lse.bf16");
    mf_buffer_free(ctx, d_q);
    mf_buffer_free(ctx, d_k);
    mf_buffer_free(ctx, d_v);
    mf_buffer_free(ctx, d_out);
    mf_buffer_free(ctx, d_lse);
    free(got);
    free(got_lse);
    free(ref);
    free(ref_lse);
    free(q);
    free(k);
    free(v);
}
END_TEST

/* Forward without lse (inference) writes the same output. */
START_TEST(test_forward_without_lse)
{
    mf_context *ctx = mf_test_ctx();
    const int64_t B = 1, H = 2, N = 21, D = 8, Dv = 8;
    const size_t nqk = (size_t)(B * H * N * D), nv = (size_t)(B * H * N * Dv);
    void *q = mf_test_make_input(MF_DTYPE_F32, nqk, 91, -1.5f, 1.5f);
    void *k = mf_test_make_input(MF_DTYPE_F32, nqk, 92, -1.5f, 1.5f);
    void *v = mf_test_make_input(MF_DTYPE_F32, nv, 93, -1.0f, 1.0f);
    float *ref = malloc(nv * 4);
    ck_assert_ptr_nonnull(ref);
    MF_ASSERT_OK(mf_ref_attention_forward(ctx, MF_DTYPE_F32, 1, B, H, N, D, Dv, q, k, v, ref, NULL));
    void *d_q = mf_test_dev_upload(ctx, q, nqk * 4), *d_k = mf_test_dev_upload(ctx, k, nqk * 4),
         *d_v = mf_test_dev_upload(ctx, v, nv * 4);
    float *d_out = mf_test_dev_nan(ctx, nv + GUARD);
    MF_ASSERT_OK(mf_attention_forward(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, 1, B, H, N, D, Dv, d_q, d_k, d_v,
                                      d_out, NULL));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *got = mf_test_dev_fetch(ctx, d_out, nv, GUARD, "out");
    MF_ASSERT_CLOSE(got, ref, nv, "attention.out.f32");
    mf_buffer_free(ctx, d_q);
    mf_buffer_free(ctx, d_k);
    mf_buffer_free(ctx, d_v);
    mf_buffer_free(ctx, d_out);
    free(got);
    free(ref);
    free(q);
    free(k);
    free(v);
}
END_TEST
#endif

static Suite *attention_equiv_suite(void)
{
    Suite *s = suite_create("attention_equiv");
    TCase *tc = tcase_create("tiled");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
#ifdef MF_LARGE_SHAPES
    tcase_add_loop_test(tc, test_large_cases, 0, ATTENTION_N_LARGE);
#else
    mf_test_add_op_cases(s, "attention"); /* TCase tiled: the built-in cases */
    tcase_add_loop_test(tc, test_mma_key_offset, 0, (int)(sizeof key_offsets / sizeof key_offsets[0]));
    tcase_add_test(tc, test_forward_without_lse);
    tcase_add_loop_test(tc, test_mma_nan_propagation, 0, 2);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(attention_equiv_suite()); }
