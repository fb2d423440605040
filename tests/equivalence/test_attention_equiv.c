/* Equivalence of the tiled attention kernels (optimized/attention.cu) with the
 * reference that materializes the N x N scores (reference/attention.c), seed
 * document 003.
 *
 * For each configuration: seeded inputs (q, k in [-1.5, 1.5) so that the
 * softmax is far from uniform, v and dout in [-1, 1)), the reference forward
 * and backward on the host, then the tiled forward and backward on the test
 * backend into outputs pre-filled with NaN and followed by a NaN guard region
 * that must stay untouched. out, lse, dq, dk and dv are compared with the
 * op's tolerance rows. Configurations: N = 1, N not a multiple of the 16-row
 * tile, exact multiples, causal and not, D != Dv, D = Dv = 128 (the maximum)
 * with N tiny, D = 1, fp32 and bf16 storage. Also: the registry's built-in
 * cases pass on the test backend. Shapes are small for host execution mode.
 */
#include "mf_test.h"

#include "memfix/attention.h"
#include "memfix/check.h"
#include "memfix/registry.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct config {
    int64_t B, H, N, D, Dv;
    int causal;
    mf_dtype dtype;
} config;

#ifdef MF_LARGE_SHAPES
/* test_attention_equiv_large (label slow): multi-tile shapes closer to real use. */
static const config configs[] = {
    {1, 2, 256, 64, 64, 1, MF_DTYPE_F32},
    {1, 1, 200, 128, 128, 0, MF_DTYPE_BF16},
    {2, 2, 130, 32, 48, 1, MF_DTYPE_BF16},
};
#else
static const config configs[] = {
    {1, 1, 1, 8, 8, 1, MF_DTYPE_F32},       /* N = 1 */
    {1, 2, 1, 4, 6, 0, MF_DTYPE_BF16},      /* N = 1, bf16 */
    {2, 2, 37, 16, 8, 0, MF_DTYPE_F32},     /* ragged last tile */
    {2, 2, 37, 16, 8, 1, MF_DTYPE_F32},
    {1, 3, 50, 32, 24, 0, MF_DTYPE_BF16},   /* D != Dv, bf16 */
    {1, 3, 50, 32, 24, 1, MF_DTYPE_BF16},
    {1, 2, 64, 32, 32, 1, MF_DTYPE_F32},    /* exact multiple of the tile */
    {1, 1, 48, 16, 40, 0, MF_DTYPE_F32},    /* Dv > D */
    {1, 1, 5, 128, 128, 1, MF_DTYPE_F32},   /* the largest head dimension */
    {1, 1, 3, 128, 96, 0, MF_DTYPE_BF16},
    {1, 1, 17, 1, 1, 1, MF_DTYPE_F32},      /* D = Dv = 1 */
    /* bf16 with D = Dv in {64, 128}: the tensor-core kernels (attention_mma.cu);
     * N not a multiple of their 256-query / 128-key / 64- or 32-row blocks (nor
     * of 16), several blocks. */
    {1, 2, 77, 64, 64, 0, MF_DTYPE_BF16},
    {1, 2, 77, 64, 64, 1, MF_DTYPE_BF16},
    {2, 1, 150, 128, 128, 0, MF_DTYPE_BF16},
    {2, 1, 150, 128, 128, 1, MF_DTYPE_BF16},
    {1, 1, 1, 64, 64, 1, MF_DTYPE_BF16},    /* N = 1 */
    {1, 1, 64, 128, 128, 1, MF_DTYPE_BF16}, /* exactly one block */
    {1, 1, 9, 64, 64, 0, MF_DTYPE_BF16},
    {1, 1, 300, 64, 64, 1, MF_DTYPE_BF16},  /* two 256-query forward blocks */
    {1, 1, 270, 128, 128, 0, MF_DTYPE_BF16},
};
#endif
#define N_CONFIGS ((int)(sizeof(configs) / sizeof(configs[0])))
#define GUARD 32

/* Does the call take the tensor-core path (optimized/attention_mma.cu)? bf16,
 * D == Dv in {64, 128} (the test's buffers are 16-byte aligned). */
static int uses_mma(const config *c) {
    return c->dtype == MF_DTYPE_BF16 && c->D == c->Dv && (c->D == 64 || c->D == 128);
}

/* "attention.<what>.f32" or ".bf16" (same numbers: bf16 is storage only), or
 * "attention.mma.<what>.bf16" for the tensor-core path (bf16 operands). */
static const char *tol(const char *what, const config *c) {
    static char buf[4][64];
    static int slot;
    char *b = buf[slot++ & 3];
    snprintf(b, 64, "attention.%s%s.%s", uses_mma(c) ? "mma." : "", what,
             mf_dtype_name(c->dtype));
    return b;
}



/* A device output of n floats + GUARD, NaN-filled. */
static float *dev_nan(mf_context *ctx, size_t n) { return mf_test_dev_nan(ctx, n + GUARD); }

/* Downloads n + GUARD floats and checks that the guard is still NaN. */
static float *dev_fetch(mf_context *ctx, const float *d, size_t n, const char *what) {
    return mf_test_dev_fetch(ctx, d, n, GUARD, what);
}

START_TEST(test_tiled_matches_reference) {
    const config *c = &configs[_i];
    mf_context *ctx = mf_test_ctx();
    const size_t rows = (size_t)(c->B * c->H * c->N);
    const size_t nqk = rows * (size_t)c->D, nv = rows * (size_t)c->Dv;
    const size_t es = mf_dtype_size(c->dtype);
    const uint64_t seed = 0xa77e000000ull + (uint64_t)_i * 16u;
    void *q = mf_test_make_input(c->dtype, nqk, seed, -1.5f, 1.5f);
    void *k = mf_test_make_input(c->dtype, nqk, seed + 1, -1.5f, 1.5f);
    void *v = mf_test_make_input(c->dtype, nv, seed + 2, -1.0f, 1.0f);
    void *dout = mf_test_make_input(c->dtype, nv, seed + 3, -1.0f, 1.0f);

    float *r_out = malloc(nv * 4), *r_lse = malloc(rows * 4), *r_dq = malloc(nqk * 4),
          *r_dk = malloc(nqk * 4), *r_dv = malloc(nv * 4);
    ck_assert(r_out && r_lse && r_dq && r_dk && r_dv);
    mf_fill_nan_f32(r_out, nv);
    mf_fill_nan_f32(r_lse, rows);
    MF_ASSERT_OK(mf_ref_attention_forward(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv,
                                          q, k, v, r_out, r_lse));
    MF_ASSERT_OK(mf_ref_attention_backward(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv,
                                           q, k, v, dout, r_dq, r_dk, r_dv));

    void *d_q = mf_test_dev_upload(ctx, q, nqk * es), *d_k = mf_test_dev_upload(ctx, k, nqk * es);
    void *d_v = mf_test_dev_upload(ctx, v, nv * es), *d_do = mf_test_dev_upload(ctx, dout, nv * es);
    float *d_out = dev_nan(ctx, nv), *d_lse = dev_nan(ctx, rows);
    float *d_dq = dev_nan(ctx, nqk), *d_dk = dev_nan(ctx, nqk), *d_dv = dev_nan(ctx, nv);
    MF_ASSERT_OK(mf_attention_forward(ctx, MF_ATTENTION_TILED, c->dtype, c->causal, c->B, c->H,
                                      c->N, c->D, c->Dv, d_q, d_k, d_v, d_out, d_lse));
    MF_ASSERT_OK(mf_attention_backward(ctx, MF_ATTENTION_TILED, c->dtype, c->causal, c->B, c->H,
                                       c->N, c->D, c->Dv, d_q, d_k, d_v, d_out, d_do, d_lse, d_dq,
                                       d_dk, d_dv));
    MF_ASSERT_OK(mf_context_synchronize(ctx));

    float *g_out = dev_fetch(ctx, d_out, nv, "out"), *g_lse = dev_fetch(ctx, d_lse, rows, "lse");
    float *g_dq = dev_fetch(ctx, d_dq, nqk, "dq"), *g_dk = dev_fetch(ctx, d_dk, nqk, "dk");
    float *g_dv = dev_fetch(ctx, d_dv, nv, "dv");
    MF_ASSERT_CLOSE(g_out, r_out, nv, tol("out", c));
    MF_ASSERT_CLOSE(g_lse, r_lse, rows, tol("lse", c));
    MF_ASSERT_CLOSE(g_dv, r_dv, nv, tol("grad", c));
    MF_ASSERT_CLOSE(g_dq, r_dq, nqk, tol("grad", c));
    MF_ASSERT_CLOSE(g_dk, r_dk, nqk, tol("grad", c));

    void *dev[] = {d_q, d_k, d_v, d_do, d_out, d_lse, d_dq, d_dk, d_dv};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) MF_ASSERT_OK(mf_buffer_free(ctx, dev[i]));
    void *host[] = {q, k, v, dout, r_out, r_lse, r_dq, r_dk, r_dv, g_out, g_lse, g_dq, g_dk, g_dv};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
}
END_TEST

/* Forward without lse (inference) writes the same output. */
START_TEST(test_forward_without_lse) {
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
    float *d_out = dev_nan(ctx, nv);
    MF_ASSERT_OK(mf_attention_forward(ctx, MF_ATTENTION_TILED, MF_DTYPE_F32, 1, B, H, N, D, Dv, d_q,
                                      d_k, d_v, d_out, NULL));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *got = dev_fetch(ctx, d_out, nv, "out");
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

/* The registry's built-in cases (what `memfix report` runs) pass here too. */
START_TEST(test_registry_cases) {
    const mf_op_desc *op = mf_registry_find("attention");
    ck_assert_ptr_nonnull(op);
    for (int vi = 0; vi < op->n_variants; vi++)
        for (int ci = 0; ci < op->n_cases; ci++) {
            mf_case_result r;
            MF_ASSERT_OK(op->run_case(mf_test_ctx(), vi, ci, &r));
            ck_assert_msg(r.pass, "attention %s case %d (%s): %s", r.variant, ci, r.shape, r.message);
            ck_assert_uint_le(r.opt_peak_bytes, r.ceiling_bytes);
            ck_assert_uint_gt(r.ref_peak_bytes, r.ceiling_bytes);
        }
}
END_TEST

static Suite *attention_equiv_suite(void) {
    Suite *s = suite_create("attention_equiv");
    TCase *tc = tcase_create("tiled");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_tiled_matches_reference, 0, N_CONFIGS);
    tcase_add_test(tc, test_forward_without_lse);
    suite_add_tcase(s, tc);
    TCase *reg = tcase_create("registry");
    tcase_add_checked_fixture(reg, mf_test_setup, mf_test_teardown);
    tcase_add_test(reg, test_registry_cases);
    suite_add_tcase(s, reg);
    return s;
}

int main(void) { return mf_test_run(attention_equiv_suite()); }
