/* Memory of the nsa fix (seed 001): the reference's dense masked branches hold
 * B*Hq x S x S scores twice (quadratic in S), the fused forward only the pooled
 * compressed k and v (linear in S). Measured through the context's tracked
 * allocator: reference == its formula, fused <= ceiling < reference, and at
 * S and 2S the reference grows ~4x, the fused at most 2x. The formulas at the
 * seed's shapes (001-1k / 001-4k: B=2, Hq=12, Hk=2, D=64). */
#include "mf_test.h"

#include "memfix/nsa.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct peaks {
    size_t ref, opt, ref_bwd, opt_bwd;
} peaks;

static peaks measure(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                     mf_dtype dt)
{
    mf_context *ctx = mf_test_ctx();
    const size_t rq = (size_t)(B * S * Hq), rk = (size_t)(B * S * Hk), es = mf_dtype_size(dt);
    void *q = mf_test_make_input(dt, rq * (size_t)D, 1, -1.5f, 1.5f);
    void *k = mf_test_make_input(dt, rk * (size_t)D, 2, -1.5f, 1.5f);
    void *v = mf_test_make_input(dt, rk * (size_t)D, 3, -1.0f, 1.0f);
    void *g = mf_test_make_input(dt, rq, 4, 0.1f, 0.9f);
    float *out = mf_test_nan_host(rq * (size_t)D);
    peaks p;
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    MF_ASSERT_OK(mf_ref_nsa_forward(ctx, dt, cfg, B, S, Hq, Hk, D, q, k, v, g, g, g, out, NULL, NULL));
    p.ref = mf_mem_peak_delta(ctx, MF_MEM_HOST);
    void *dq = mf_test_dev_upload(ctx, q, rq * (size_t)D * es);
    void *dk = mf_test_dev_upload(ctx, k, rk * (size_t)D * es);
    void *dv = mf_test_dev_upload(ctx, v, rk * (size_t)D * es);
    void *dg = mf_test_dev_upload(ctx, g, rq * es);
    float *dout = mf_test_dev_nan(ctx, rq * (size_t)D);
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(mf_nsa_forward(ctx, MF_NSA_FUSED, dt, cfg, B, S, Hq, Hk, D, dq, dk, dv, dg, dg, dg, dout,
                                NULL, NULL));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    p.opt = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    /* backward: dout = g (any seeded values), gradients into fresh buffers */
    float *h_lse = mf_test_nan_host(3 * rq);
    int32_t *h_sel = malloc(rk * (size_t)cfg->n_sel * 4);
    float *hg[6];
    const size_t gn[6] = { rq * (size_t)D, rk * (size_t)D, rk * (size_t)D, rq, rq, rq };
    for (int i = 0; i < 6; i++) hg[i] = mf_test_nan_host(gn[i]);
    MF_ASSERT_OK(mf_ref_nsa_forward(ctx, dt, cfg, B, S, Hq, Hk, D, q, k, v, g, g, g, out, h_lse, h_sel));
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    MF_ASSERT_OK(mf_ref_nsa_backward(ctx, dt, cfg, B, S, Hq, Hk, D, q, k, v, g, g, g, q, hg[0], hg[1], hg[2],
                                     hg[3], hg[4], hg[5]));
    p.ref_bwd = mf_mem_peak_delta(ctx, MF_MEM_HOST);
    void *dlse = mf_test_dev_upload(ctx, h_lse, 3 * rq * 4);
    void *dsel = mf_test_dev_upload(ctx, h_sel, rk * (size_t)cfg->n_sel * 4);
    float *dgr[6];
    for (int i = 0; i < 6; i++) dgr[i] = mf_test_dev_nan(ctx, gn[i]);
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(mf_nsa_backward(ctx, MF_NSA_FUSED, dt, cfg, B, S, Hq, Hk, D, dq, dk, dv, dg, dg, dg, dq,
                                 dlse, dsel, dgr[0], dgr[1], dgr[2], dgr[3], dgr[4], dgr[5]));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    p.opt_bwd = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    for (int i = 0; i < 6; i++) {
        MF_ASSERT_OK(mf_buffer_free(ctx, dgr[i]));
        free(hg[i]);
    }
    MF_ASSERT_OK(mf_buffer_free(ctx, dlse));
    MF_ASSERT_OK(mf_buffer_free(ctx, dsel));
    free(h_lse);
    free(h_sel);
    void *dev[] = { dq, dk, dv, dg, dout };
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) MF_ASSERT_OK(mf_buffer_free(ctx, dev[i]));
    free(q);
    free(k);
    free(v);
    free(g);
    free(out);
    return p;
}

START_TEST(test_measured_within_formulas)
{
    const mf_nsa_config cfg = { 8, 4, 8, 4, 16, 0.0f };
    const int64_t B = 1, S = 45, Hq = 6, Hk = 1, D = 16;
    for (int t = 0; t < 2; t++) {
        const mf_dtype dt = t ? MF_DTYPE_BF16 : MF_DTYPE_F32;
        const peaks p = measure(&cfg, B, S, Hq, Hk, D, dt);
        const size_t ceil_b = mf_nsa_forward_scratch_ceiling(&cfg, B, S, Hq, Hk, D);
        ck_assert_uint_eq(p.ref, mf_ref_nsa_forward_scratch_bytes(&cfg, B, S, Hq, Hk, D));
        ck_assert_uint_le(p.opt, ceil_b);
        ck_assert_uint_lt(ceil_b, p.ref);
        ck_assert_uint_gt(p.opt, 0); /* the pooled k/v are measured, not hidden */
        const size_t ceil_bb = mf_nsa_backward_scratch_ceiling(&cfg, B, S, Hq, Hk, D);
        ck_assert_uint_eq(p.ref_bwd, mf_ref_nsa_backward_scratch_bytes(&cfg, B, S, Hq, Hk, D));
        ck_assert_uint_le(p.opt_bwd, ceil_bb);
        ck_assert_uint_lt(ceil_bb, p.ref_bwd);
    }
}
END_TEST

START_TEST(test_scaling_s_and_2s)
{
    const mf_nsa_config cfg = { 8, 4, 8, 4, 16, 0.0f };
    const int64_t B = 1, Hq = 2, Hk = 1, D = 8, S = 48;
    const peaks a = measure(&cfg, B, S, Hq, Hk, D, MF_DTYPE_F32);
    const peaks b = measure(&cfg, B, 2 * S, Hq, Hk, D, MF_DTYPE_F32);
    /* reference: dominated by the two S x S score matrices: more than 3.5x */
    ck_assert_uint_gt(2 * b.ref, 7 * a.ref);
    /* fused: at most linear */
    ck_assert_uint_le(b.opt, 2 * a.opt + 8 * (size_t)(B * Hk * D));
    ck_assert_uint_le(b.opt, mf_nsa_forward_scratch_ceiling(&cfg, B, 2 * S, Hq, Hk, D));
    ck_assert_uint_gt(b.ref - a.ref, b.opt - a.opt);
    ck_assert_uint_gt(2 * b.ref_bwd, 7 * a.ref_bwd);
    ck_assert_uint_le(b.opt_bwd, 2 * a.opt_bwd + 16 * (size_t)(B * Hk * D));
}
END_TEST

/* The seed's configuration at its two sequence lengths: 12 heads, 2 KV groups,
 * head dim 64, micro batch 2. The dense reference's scores vs the fused
 * kernel's pooled k/v. */
START_TEST(test_formulas_at_seed_shapes)
{
    const mf_nsa_config cfg = mf_nsa_config_seed();
    const int64_t B = 2, Hq = 12, Hk = 2, D = 64;
    for (int64_t S = 1024; S <= 4096; S *= 4) {
        const size_t nc = (size_t)(S - 32) / 16 + 1, nb = (size_t)(S + 63) / 64, s = (size_t)S;
        const size_t want_ref =
            8 * 2 * 12 * s * (nc + 2 * s) + 8 * 2 * 2 * s * nb + 16 * 2 * 2 * nc * 64 + 2 * 2 * s * nb + s;
        ck_assert_uint_eq(mf_ref_nsa_forward_scratch_bytes(&cfg, B, S, Hq, Hk, D), want_ref);
        /* pooled k/v + the bf16 path's selection when the caller passes no sel */
        ck_assert_uint_eq(mf_nsa_forward_scratch_ceiling(&cfg, B, S, Hq, Hk, D),
                          8 * 2 * 2 * nc * 64 + 4 * 2 * s * 2 * 16);
        ck_assert_uint_eq(mf_nsa_backward_scratch_ceiling(&cfg, B, S, Hq, Hk, D), 16 * 2 * 2 * nc * 64);
    }
    /* at S = 4096 the reference's two S x S double matrices alone are 6.4 GB */
    ck_assert_uint_gt(mf_ref_nsa_forward_scratch_bytes(&cfg, B, 4096, Hq, Hk, D), (size_t)6400000000ull);
    ck_assert_uint_eq(mf_ref_nsa_forward_scratch_bytes(&cfg, 0, 4096, Hq, Hk, D), SIZE_MAX);
    ck_assert_uint_eq(mf_nsa_forward_scratch_ceiling(NULL, 1, 4096, Hq, Hk, D), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_nsa_forward_scratch_bytes(&cfg, INT64_MAX, INT64_MAX, Hq, Hk, D), SIZE_MAX);
}
END_TEST

static Suite *nsa_memory_suite(void)
{
    Suite *s = suite_create("nsa_memory");
    TCase *f = tcase_create("formulas");
    tcase_add_test(f, test_formulas_at_seed_shapes);
    suite_add_tcase(s, f);
    TCase *m = tcase_create("measured");
    tcase_add_checked_fixture(m, mf_test_setup, mf_test_teardown);
    tcase_add_test(m, test_measured_within_formulas);
    tcase_add_test(m, test_scaling_s_and_2s);
    suite_add_tcase(s, m);
    return s;
}

int main(void) { return mf_test_run(nsa_memory_suite()); }
