/* Equivalence of the linear attention kernels (optimized/linear_attention.cu:
 * causal in chunks, on tensor cores for bf16; bidirectional) with the
 * reference that materializes the document's cumsum
 * (reference/linear_attention.c), seed document 003.
 *
 * The configurations are the op's built-in cases (src/ops/linear_attention.c),
 * run through the testbed as `memfix report` runs them, each for the variant
 * it is written for (mf_op_desc.case_applies): seeded inputs (q, k in
 * [-1.5, 1.5) so that both branches of elu(x) + 1 are exercised; v, dout in
 * [-1, 1)), the reference forward and backward on the host, the kernels on the
 * test backend into outputs pre-filled with NaN and followed by a NaN guard,
 * every output compared with its tolerance row (bf16 causal: the tensor-core
 * rows). Causal with every chunk size (16, 32, 64, 128), a ragged last chunk,
 * N = 1, N < C, fp32 and bf16, D != Dv, D = Dv = 128 with N tiny, D = 1, the
 * tensor-core path's tile and state-chunk edges; bidirectional likewise. State:
 * an initial state and final-state gradients against the reference (out, final
 * state, dq, dk, dv, d initial state; up to D = Dv = 128). Here stays the op's
 * own property that is not a case: a sequence processed in two calls (the
 * second starting from the first's final state; backward chaining the second's
 * initial-state gradient into the first) equal to one call
 * (flash-linear-attention issue #494). MF_LARGE_SHAPES
 * (test_linear_attention_equiv_large, label slow): the descriptor's rows with
 * many chunks and large heads that its case_applies keeps out of the sweeps,
 * through the same testbed (mf_test_op_case_unlisted).
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/linear_attention.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 32

#ifdef MF_LARGE_SHAPES
/* test_linear_attention_equiv_large (label slow): the descriptor's last rows
 * (src/ops/linear_attention.c: many chunks, large heads), kept out of the op's
 * sweep by its case_applies and run here through the testbed, each for its
 * variant: three causal_chunked, one bidirectional. */
#define LA_CASE_LARGE 57
#define LA_N_LARGE 4
START_TEST(test_large_cases)
{
    static const int variants[LA_N_LARGE] = { 0, 0, 0, 1 }; /* causal_chunked, bidirectional */
    static const char *const shapes[LA_N_LARGE] = { "B=1 H=2 N=512 D=64 Dv=64 C=64 ",
                                                    "B=1 H=1 N=300 D=128 Dv=128 C=128 ",
                                                    "B=1 H=1 N=257 D=48 Dv=80 C=16 ",
                                                    "B=1 H=2 N=400 D=64 Dv=64 " };
    mf_test_op_case_large("linear_attention", LA_CASE_LARGE, LA_N_LARGE, _i, variants[_i], shapes[_i]);
}
END_TEST
#else
/* Rows [n0, n0 + len) of every (b, h) of a (B, H, N, W) tensor of element size es. */
static void *slice_rows(const void *src, size_t bh, size_t N, size_t W, size_t es, size_t n0, size_t len)
{
    char *dst = malloc(bh * len * W * es);
    ck_assert_ptr_nonnull(dst);
    for (size_t g = 0; g < bh; g++)
        memcpy(dst + g * len * W * es, (const char *)src + (g * N + n0) * W * es, len * W * es);
    return dst;
}

/* One sequence in two calls == one call, on the kernels alone (flash-linear-attention
 * #494): forward with the final state of part 1 as the initial state of part 2;
 * backward of part 2 first, its initial-state gradient fed to part 1 as the
 * final-state gradient. Split points: inside a chunk and at a chunk boundary. */
START_TEST(test_two_calls_equal_one)
{
    const int64_t B = 1, H = 2, N = 45, D = 12, Dv = 20, C = 16;
    const int64_t splits[2] = { 21, 32 };
    const int64_t split = splits[_i];
    mf_context *ctx = mf_test_ctx();
    const size_t bh = (size_t)(B * H), rows = bh * (size_t)N;
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const size_t ns = bh * (size_t)D * (size_t)Dv, nz = bh * (size_t)D;
    const uint64_t seed = 0x2ca115ull + (uint64_t)_i;
    float *q = mf_test_make_input(MF_DTYPE_F32, nqk, seed, -1.5f, 1.5f);
    float *k = mf_test_make_input(MF_DTYPE_F32, nqk, seed + 1, -1.5f, 1.5f);
    float *v = mf_test_make_input(MF_DTYPE_F32, nv, seed + 2, -1.0f, 1.0f);
    float *dout = mf_test_make_input(MF_DTYPE_F32, nv, seed + 3, -1.0f, 1.0f);

    /* one call */
    float *d_q = mf_test_dev_upload(ctx, q, nqk * 4), *d_k = mf_test_dev_upload(ctx, k, nqk * 4);
    float *d_v = mf_test_dev_upload(ctx, v, nv * 4), *d_do = mf_test_dev_upload(ctx, dout, nv * 4);
    float *d_out = mf_test_dev_nan(ctx, nv + GUARD), *d_ht = mf_test_dev_nan(ctx, ns + GUARD),
          *d_zt = mf_test_dev_nan(ctx, nz + GUARD);
    float *d_dq = mf_test_dev_nan(ctx, nqk + GUARD), *d_dk = mf_test_dev_nan(ctx, nqk + GUARD),
          *d_dv = mf_test_dev_nan(ctx, nv + GUARD);
    mf_linear_attention_state one = { NULL, NULL, d_ht, d_zt };
    MF_ASSERT_OK(
        mf_linear_attention_forward(ctx, MF_DTYPE_F32, 1, C, B, H, N, D, Dv, d_q, d_k, d_v, &one, d_out));
    MF_ASSERT_OK(mf_linear_attention_backward(ctx, MF_DTYPE_F32, 1, C, B, H, N, D, Dv, d_q, d_k, d_v, d_out,
                                              d_do, NULL, NULL, d_dq, d_dk, d_dv));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *o_out = mf_test_dev_fetch(ctx, d_out, nv, GUARD, "out"),
          *o_ht = mf_test_dev_fetch(ctx, d_ht, ns, GUARD, "ht");
    float *o_zt = mf_test_dev_fetch(ctx, d_zt, nz, GUARD, "zt"),
          *o_dq = mf_test_dev_fetch(ctx, d_dq, nqk, GUARD, "dq");
    float *o_dk = mf_test_dev_fetch(ctx, d_dk, nqk, GUARD, "dk"),
          *o_dv = mf_test_dev_fetch(ctx, d_dv, nv, GUARD, "dv");

    /* two calls: parts [0, split) and [split, N) */
    const size_t len[2] = { (size_t)split, (size_t)(N - split) };
    const size_t off[2] = { 0, (size_t)split };
    float *p_ht[2], *p_zt[2], *p_dh0 = mf_test_dev_nan(ctx, ns + GUARD),
                              *p_dz0 = mf_test_dev_nan(ctx, nz + GUARD);
    float *t_out = mf_test_nan_host(nv), *t_dq = mf_test_nan_host(nqk), *t_dk = mf_test_nan_host(nqk),
          *t_dv = mf_test_nan_host(nv);
    float *pq[2], *pk[2], *pv[2], *pdo[2], *pout[2], *pdq[2], *pdk[2], *pdv[2];
    for (int p = 0; p < 2; p++) {
        void *hq = slice_rows(q, bh, (size_t)N, (size_t)D, 4, off[p], len[p]);
        void *hk = slice_rows(k, bh, (size_t)N, (size_t)D, 4, off[p], len[p]);
        void *hv = slice_rows(v, bh, (size_t)N, (size_t)Dv, 4, off[p], len[p]);
        void *hdo = slice_rows(dout, bh, (size_t)N, (size_t)Dv, 4, off[p], len[p]);
        pq[p] = mf_test_dev_upload(ctx, hq, bh * len[p] * (size_t)D * 4);
        pk[p] = mf_test_dev_upload(ctx, hk, bh * len[p] * (size_t)D * 4);
        pv[p] = mf_test_dev_upload(ctx, hv, bh * len[p] * (size_t)Dv * 4);
        pdo[p] = mf_test_dev_upload(ctx, hdo, bh * len[p] * (size_t)Dv * 4);
        free(hq);
        free(hk);
        free(hv);
        free(hdo);
        pout[p] = mf_test_dev_nan(ctx, bh * len[p] * (size_t)Dv + GUARD);
        pdq[p] = mf_test_dev_nan(ctx, bh * len[p] * (size_t)D + GUARD);
        pdk[p] = mf_test_dev_nan(ctx, bh * len[p] * (size_t)D + GUARD);
        pdv[p] = mf_test_dev_nan(ctx, bh * len[p] * (size_t)Dv + GUARD);
        p_ht[p] = mf_test_dev_nan(ctx, ns + GUARD);
        p_zt[p] = mf_test_dev_nan(ctx, nz + GUARD);
    }
    mf_linear_attention_state s1 = { NULL, NULL, p_ht[0], p_zt[0] };
    mf_linear_attention_state s2 = { p_ht[0], p_zt[0], p_ht[1], p_zt[1] };
    MF_ASSERT_OK(mf_linear_attention_forward(ctx, MF_DTYPE_F32, 1, C, B, H, split, D, Dv, pq[0], pk[0], pv[0],
                                             &s1, pout[0]));
    MF_ASSERT_OK(mf_linear_attention_forward(ctx, MF_DTYPE_F32, 1, C, B, H, N - split, D, Dv, pq[1], pk[1],
                                             pv[1], &s2, pout[1]));
    mf_linear_attention_state s2_in = { p_ht[0], p_zt[0], NULL, NULL };
    mf_linear_attention_state_grad g2 = { NULL, NULL, p_dh0, p_dz0 };
    MF_ASSERT_OK(mf_linear_attention_backward(ctx, MF_DTYPE_F32, 1, C, B, H, N - split, D, Dv, pq[1], pk[1],
                                              pv[1], pout[1], pdo[1], &s2_in, &g2, pdq[1], pdk[1], pdv[1]));
    mf_linear_attention_state_grad g1 = { p_dh0, p_dz0, NULL, NULL };
    MF_ASSERT_OK(mf_linear_attention_backward(ctx, MF_DTYPE_F32, 1, C, B, H, split, D, Dv, pq[0], pk[0],
                                              pv[0], pout[0], pdo[0], NULL, &g1, pdq[0], pdk[0], pdv[0]));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    /* Reassemble (B, H, N, .) from the parts. */
    for (int p = 0; p < 2; p++) {
        float *ho = mf_test_dev_fetch(ctx, pout[p], bh * len[p] * (size_t)Dv, GUARD, "part out");
        float *hq = mf_test_dev_fetch(ctx, pdq[p], bh * len[p] * (size_t)D, GUARD, "part dq");
        float *hk = mf_test_dev_fetch(ctx, pdk[p], bh * len[p] * (size_t)D, GUARD, "part dk");
        float *hv = mf_test_dev_fetch(ctx, pdv[p], bh * len[p] * (size_t)Dv, GUARD, "part dv");
        for (size_t g = 0; g < bh; g++) {
            memcpy(t_out + (g * N + off[p]) * Dv, ho + g * len[p] * Dv, len[p] * Dv * 4);
            memcpy(t_dv + (g * N + off[p]) * Dv, hv + g * len[p] * Dv, len[p] * Dv * 4);
            memcpy(t_dq + (g * N + off[p]) * D, hq + g * len[p] * D, len[p] * D * 4);
            memcpy(t_dk + (g * N + off[p]) * D, hk + g * len[p] * D, len[p] * D * 4);
        }
        free(ho);
        free(hq);
        free(hk);
        free(hv);
    }
    float *t_ht = mf_test_dev_fetch(ctx, p_ht[1], ns, GUARD, "ht"),
          *t_zt = mf_test_dev_fetch(ctx, p_zt[1], nz, GUARD, "zt");
    MF_ASSERT_CLOSE(t_out, o_out, nv, "linear_attention.out.f32");
    MF_ASSERT_CLOSE(t_ht, o_ht, ns, "linear_attention.state.f32");
    MF_ASSERT_CLOSE(t_zt, o_zt, nz, "linear_attention.state.f32");
    MF_ASSERT_CLOSE(t_dq, o_dq, nqk, "linear_attention.grad.f32");
    MF_ASSERT_CLOSE(t_dk, o_dk, nqk, "linear_attention.grad.f32");
    MF_ASSERT_CLOSE(t_dv, o_dv, nv, "linear_attention.grad.f32");

    void *dev[] = { d_q, d_k, d_v, d_do, d_out, d_ht, d_zt, d_dq, d_dk, d_dv, p_dh0, p_dz0 };
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) mf_buffer_free(ctx, dev[i]);
    for (int p = 0; p < 2; p++) {
        void *pd[] = { pq[p], pk[p], pv[p], pdo[p], pout[p], pdq[p], pdk[p], pdv[p], p_ht[p], p_zt[p] };
        for (size_t i = 0; i < sizeof pd / sizeof pd[0]; i++) mf_buffer_free(ctx, pd[i]);
    }
    void *host[] = {
        q, k, v, dout, o_out, o_ht, o_zt, o_dq, o_dk, o_dv, t_out, t_dq, t_dk, t_dv, t_ht, t_zt
    };
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}
END_TEST
#endif

static Suite *linear_attention_equiv_suite(void)
{
    Suite *s = suite_create("linear_attention_equiv");
#ifdef MF_LARGE_SHAPES
    TCase *tc = tcase_create("large");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_large_cases, 0, LA_N_LARGE);
    suite_add_tcase(s, tc);
#else
    /* TCases causal_chunked and bidirectional: the built-in cases of each */
    mf_test_add_op_cases(s, "linear_attention");
    /* Under TSan, beyond the report cases: a recurrent state on the SIMT kernels (22) and on the tensor
     * cores across two 512-row state chunks (28: the scans from S0 and from dS_N). */
    static const int tsan_state_cases[] = { 22, 28 };
    mf_test_add_op_cases_tsan(s, "linear_attention", 0, tsan_state_cases, 2);
    /* A second TCase named causal_chunked (Check runs every TCase of the name
     * CK_RUN_CASE gives): the reverse-order registration of the causal cases
     * (tests/linear_attention.cmake) runs the two-call property too. */
    TCase *tc = tcase_create("causal_chunked");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_two_calls_equal_one, 0, 2);
    suite_add_tcase(s, tc);
#endif
    return s;
}

int main(void) { return mf_test_run(linear_attention_equiv_suite()); }
