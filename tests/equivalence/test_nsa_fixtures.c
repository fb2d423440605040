/* The nsa reference (reference/nsa.c) against PyTorch: the fixtures in
 * fixtures/nsa/ hold seeded inputs and NSA's three branches written from their
 * equations in float64 torch with autograd, rounded to float32
 * (fixtures/nsa/gen_nsa.py): out, lse, the selected block indices, and the
 * gradients dq, dk, dv, dg_cmp, dg_slc, dg_win of the reference backward. Needs no
 * kernels: it also runs in a reference-only build. */
#include "mf_test.h"

#include "memfix/nsa.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const cases[] = {
    "f32_topn_1x45x2x1x8",
    "bf16_gqa6_1x29x6x1x4",
    "f32_seedcfg_2x20x2x2x4",
    "f32_stride_1x50x4x2x6",
};
#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static void read_tensor(const char *name, const char *part, mf_fixture_tensor *t)
{
    mf_test_read_fixture("nsa", name, part, t);
}

START_TEST(test_reference_matches_torch)
{
    const char *name = cases[_i];
    mf_fixture_tensor meta, q, k, v, gc, gs, gw, out, lse, sel;
    read_tensor(name, "meta", &meta);
    ck_assert_int_eq(meta.dtype, MF_FIXTURE_I64);
    ck_assert_uint_eq(meta.count, 11);
    const int64_t *p = (const int64_t *)meta.data;
    const int64_t B = p[0], S = p[1], Hq = p[2], Hk = p[3], D = p[4];
    mf_nsa_config cfg = { p[5], p[6], p[7], p[8], p[9], 0.0f };
    const mf_dtype dt = p[10] ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_fixture_dtype fdt = p[10] ? MF_FIXTURE_BF16 : MF_FIXTURE_F32;
    read_tensor(name, "q", &q);
    read_tensor(name, "k", &k);
    read_tensor(name, "v", &v);
    read_tensor(name, "g_cmp", &gc);
    read_tensor(name, "g_slc", &gs);
    read_tensor(name, "g_win", &gw);
    read_tensor(name, "out", &out);
    read_tensor(name, "lse", &lse);
    read_tensor(name, "sel", &sel);
    const size_t nq = (size_t)(B * S * Hq * D), nkv = (size_t)(B * S * Hk * D);
    const size_t ng = (size_t)(B * S * Hq), ns = (size_t)(B * S * Hk * cfg.n_sel);
    ck_assert_int_eq(q.dtype, fdt);
    ck_assert_int_eq(k.dtype, fdt);
    ck_assert_int_eq(gw.dtype, fdt);
    ck_assert_int_eq(sel.dtype, MF_FIXTURE_I32);
    ck_assert_uint_eq(q.count, nq);
    ck_assert_uint_eq(k.count, nkv);
    ck_assert_uint_eq(v.count, nkv);
    ck_assert_uint_eq(gc.count, ng);
    ck_assert_uint_eq(gs.count, ng);
    ck_assert_uint_eq(gw.count, ng);
    ck_assert_uint_eq(out.count, nq);
    ck_assert_uint_eq(lse.count, 3 * ng);
    ck_assert_uint_eq(sel.count, ns);

    mf_context *ctx = mf_test_ctx();
    float *g_out = mf_test_nan_host(nq), *g_lse = mf_test_nan_host(3 * ng);
    int32_t *g_sel = (int32_t *)malloc(ns * sizeof(int32_t));
    ck_assert_ptr_nonnull(g_sel);
    for (size_t i = 0; i < ns; i++) g_sel[i] = -7;
    MF_ASSERT_OK(mf_ref_nsa_forward(ctx, dt, &cfg, B, S, Hq, Hk, D, q.data, k.data, v.data, gc.data, gs.data,
                                    gw.data, g_out, g_lse, g_sel));
    const int32_t *want_sel = (const int32_t *)sel.data;
    for (size_t i = 0; i < ns; i++)
        ck_assert_msg(g_sel[i] == want_sel[i], "%s: sel[%zu] = %d, torch %d", name, i, g_sel[i], want_sel[i]);
    MF_ASSERT_CLOSE(g_out, (const float *)out.data, nq, "nsa.torch.f32");
    MF_ASSERT_CLOSE(g_lse, (const float *)lse.data, 3 * ng, "nsa.torch.f32");

    /* backward: dq, dk, dv and the gate gradients against autograd */
    mf_fixture_tensor dout, want[6];
    static const char *const gparts[6] = { "dq", "dk", "dv", "dg_cmp", "dg_slc", "dg_win" };
    const size_t gn[6] = { nq, nkv, nkv, ng, ng, ng };
    read_tensor(name, "dout", &dout);
    ck_assert_uint_eq(dout.count, nq);
    float *got[6];
    for (int i = 0; i < 6; i++) {
        read_tensor(name, gparts[i], &want[i]);
        ck_assert_uint_eq(want[i].count, gn[i]);
        got[i] = mf_test_nan_host(gn[i]);
    }
    MF_ASSERT_OK(mf_ref_nsa_backward(ctx, dt, &cfg, B, S, Hq, Hk, D, q.data, k.data, v.data, gc.data, gs.data,
                                     gw.data, dout.data, got[0], got[1], got[2], got[3], got[4], got[5]));
    for (int i = 0; i < 6; i++) {
        MF_ASSERT_CLOSE(got[i], (const float *)want[i].data, gn[i], "nsa.torch.f32");
        free(got[i]);
        mf_fixture_free(&want[i]);
    }
    mf_fixture_free(&dout);

    free(g_out);
    free(g_lse);
    free(g_sel);
    mf_fixture_tensor *all[] = { &meta, &q, &k, &v, &gc, &gs, &gw, &out, &lse, &sel };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_fixture_free(all[i]);
}
END_TEST

static Suite *nsa_fixtures_suite(void)
{
    Suite *s = suite_create("nsa_fixtures");
    TCase *tc = tcase_create("torch");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_reference_matches_torch, 0, N_CASES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(nsa_fixtures_suite()); }
