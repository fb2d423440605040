/* The linear attention reference (reference/linear_attention.c) against
 * PyTorch: the fixtures in fixtures/linear_attention/ hold seeded inputs and the
 * seed document's linear_attention_bidir / linear_attention_causal run by torch
 * in float64 with autograd, rounded to float32
 * (fixtures/linear_attention/gen_linear_attention.py): out, dq, dk, dv; and
 * the recurrent-state option (initial state in, final state out, and their
 * gradients) against the same function with the cumsum started from S0, z0.
 * Also the reference's own consistency: a sequence in two calls (state
 * carried forward, state gradient carried backward) equals one call. Needs no kernels: it also runs in a reference-only build. */
#include "mf_test.h"

#include "memfix/linear_attention.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const cases[] = {
    "f32_bidir_2x2x9x4x3",    "f32_causal_1x2x21x6x5", "bf16_bidir_1x1x17x8x8",
    "bf16_causal_2x1x19x5x7", "f32_causal_1x1x1x3x2",
};
#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static void read_tensor(const char *name, const char *part, mf_fixture_tensor *t)
{
    mf_test_read_fixture("linear_attention", name, part, t);
}

START_TEST(test_reference_matches_torch)
{
    const char *name = cases[_i];
    mf_fixture_tensor meta, q, k, v, dout, out, dq, dk, dv;
    read_tensor(name, "meta", &meta);
    ck_assert_int_eq(meta.dtype, MF_FIXTURE_I64);
    ck_assert_uint_eq(meta.count, 7);
    const int64_t *p = (const int64_t *)meta.data;
    const int64_t B = p[0], H = p[1], N = p[2], D = p[3], Dv = p[4];
    const int causal = (int)p[5];
    const mf_dtype dt = p[6] ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_fixture_dtype fdt = p[6] ? MF_FIXTURE_BF16 : MF_FIXTURE_F32;
    read_tensor(name, "q", &q);
    read_tensor(name, "k", &k);
    read_tensor(name, "v", &v);
    read_tensor(name, "dout", &dout);
    read_tensor(name, "out", &out);
    read_tensor(name, "dq", &dq);
    read_tensor(name, "dk", &dk);
    read_tensor(name, "dv", &dv);
    const size_t nqk = (size_t)(B * H * N * D), nv = (size_t)(B * H * N * Dv);
    ck_assert_int_eq(q.dtype, fdt);
    ck_assert_int_eq(v.dtype, fdt);
    ck_assert_int_eq(dout.dtype, fdt);
    ck_assert_int_eq(q.ndim, 4);
    ck_assert_int_eq(q.dims[3], D);
    ck_assert_int_eq(v.dims[3], Dv);
    ck_assert_uint_eq(q.count, nqk);
    ck_assert_uint_eq(k.count, nqk);
    ck_assert_uint_eq(v.count, nv);
    ck_assert_uint_eq(out.count, nv);
    ck_assert_uint_eq(dq.count, nqk);
    ck_assert_uint_eq(dk.count, nqk);
    ck_assert_uint_eq(dv.count, nv);

    mf_context *ctx = mf_test_ctx();
    float *g_out = mf_test_nan_host(nv);
    float *g_dq = mf_test_nan_host(nqk), *g_dk = mf_test_nan_host(nqk), *g_dv = mf_test_nan_host(nv);
    MF_ASSERT_OK(mf_ref_linear_attention_forward(ctx, dt, causal, B, H, N, D, Dv, q.data, k.data, v.data,
                                                 NULL, g_out));
    MF_ASSERT_CLOSE(g_out, (const float *)out.data, nv, "linear_attention.torch.f32");
    MF_ASSERT_OK(mf_ref_linear_attention_backward(ctx, dt, causal, B, H, N, D, Dv, q.data, k.data, v.data,
                                                  dout.data, NULL, NULL, g_dq, g_dk, g_dv));
    MF_ASSERT_CLOSE(g_dq, (const float *)dq.data, nqk, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(g_dk, (const float *)dk.data, nqk, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(g_dv, (const float *)dv.data, nv, "linear_attention.torch.f32");

    free(g_out);
    free(g_dq);
    free(g_dk);
    free(g_dv);
    mf_fixture_tensor *all[] = { &meta, &q, &k, &v, &dout, &out, &dq, &dk, &dv };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_fixture_free(all[i]);
}
END_TEST

static const char *const state_cases[] = { "state_f32_1x2x13x4x3", "state_bf16_2x1x9x5x6" };
#define N_STATE_CASES ((int)(sizeof(state_cases) / sizeof(state_cases[0])))

START_TEST(test_reference_state_matches_torch)
{
    const char *name = state_cases[_i];
    enum { META, Q, K, V, DOUT, H0, Z0, DHT, DZT, OUT, HT, ZT, DQ, DK, DV, DH0, DZ0, NPARTS };
    static const char *const parts[NPARTS] = { "meta", "q",  "k",  "v",  "dout", "h0", "z0",  "dht", "dzt",
                                               "out",  "ht", "zt", "dq", "dk",   "dv", "dh0", "dz0" };
    mf_fixture_tensor t[NPARTS];
    for (int i = 0; i < NPARTS; i++) read_tensor(name, parts[i], &t[i]);
    ck_assert_uint_eq(t[META].count, 7);
    const int64_t *p = (const int64_t *)t[META].data;
    const int64_t B = p[0], H = p[1], N = p[2], D = p[3], Dv = p[4];
    ck_assert_int_eq(p[5], 1);
    const mf_dtype dt = p[6] ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const size_t nqk = (size_t)(B * H * N * D), nv = (size_t)(B * H * N * Dv);
    const size_t ns = (size_t)(B * H * D * Dv), nz = (size_t)(B * H * D);
    ck_assert_uint_eq(t[Q].count, nqk);
    ck_assert_uint_eq(t[V].count, nv);
    ck_assert_uint_eq(t[H0].count, ns);
    ck_assert_uint_eq(t[Z0].count, nz);

    mf_context *ctx = mf_test_ctx();
    float *out = mf_test_nan_host(nv), *ht = mf_test_nan_host(ns), *zt = mf_test_nan_host(nz);
    float *dq = mf_test_nan_host(nqk), *dk = mf_test_nan_host(nqk), *dv = mf_test_nan_host(nv);
    float *dh0 = mf_test_nan_host(ns), *dz0 = mf_test_nan_host(nz);
    mf_linear_attention_state st = { t[H0].data, t[Z0].data, ht, zt };
    MF_ASSERT_OK(mf_ref_linear_attention_forward(ctx, dt, 1, B, H, N, D, Dv, t[Q].data, t[K].data, t[V].data,
                                                 &st, out));
    mf_linear_attention_state st_in = { t[H0].data, t[Z0].data, NULL, NULL };
    mf_linear_attention_state_grad gr = { t[DHT].data, t[DZT].data, dh0, dz0 };
    MF_ASSERT_OK(mf_ref_linear_attention_backward(ctx, dt, 1, B, H, N, D, Dv, t[Q].data, t[K].data, t[V].data,
                                                  t[DOUT].data, &st_in, &gr, dq, dk, dv));
    MF_ASSERT_CLOSE(out, (const float *)t[OUT].data, nv, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(ht, (const float *)t[HT].data, ns, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(zt, (const float *)t[ZT].data, nz, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(dq, (const float *)t[DQ].data, nqk, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(dk, (const float *)t[DK].data, nqk, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(dv, (const float *)t[DV].data, nv, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(dh0, (const float *)t[DH0].data, ns, "linear_attention.torch.f32");
    MF_ASSERT_CLOSE(dz0, (const float *)t[DZ0].data, nz, "linear_attention.torch.f32");
    float *bufs[] = { out, ht, zt, dq, dk, dv, dh0, dz0 };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    for (int i = 0; i < NPARTS; i++) mf_fixture_free(&t[i]);
}
END_TEST

/* The reference alone: rows [0, 5) then [5, 12) of one (b, h) sequence, the
 * second call starting from the first's final state (and the first's backward
 * taking the second's initial-state gradient) equal the one-call results. The
 * reference's state is held in float between the calls, so the tolerance is
 * the fp32 one of the state rows, not torch's. */
START_TEST(test_reference_two_calls_equal_one)
{
    enum { N = 12, S = 5, D = 3, DV = 4 };
    mf_context *ctx = mf_test_ctx();
    float q[N * D], k[N * D], v[N * DV], dout[N * DV];
    mf_fill_uniform_f32(q, N * D, 41, -1.5f, 1.5f);
    mf_fill_uniform_f32(k, N * D, 42, -1.5f, 1.5f);
    mf_fill_uniform_f32(v, N * DV, 43, -1.f, 1.f);
    mf_fill_uniform_f32(dout, N * DV, 44, -1.f, 1.f);
    float out1[N * DV], dq1[N * D], dk1[N * D], dv1[N * DV];
    MF_ASSERT_OK(mf_ref_linear_attention_forward(ctx, MF_DTYPE_F32, 1, 1, 1, N, D, DV, q, k, v, NULL, out1));
    MF_ASSERT_OK(mf_ref_linear_attention_backward(ctx, MF_DTYPE_F32, 1, 1, 1, N, D, DV, q, k, v, dout, NULL,
                                                  NULL, dq1, dk1, dv1));
    float out2[N * DV], dq2[N * D], dk2[N * D], dv2[N * DV];
    float ht[D * DV], zt[D], dh0[D * DV], dz0[D];
    mf_fill_nan_f32(out2, N * DV);
    mf_fill_nan_f32(dq2, N * D);
    mf_fill_nan_f32(dk2, N * D);
    mf_fill_nan_f32(dv2, N * DV);
    mf_linear_attention_state a = { NULL, NULL, ht, zt };
    MF_ASSERT_OK(mf_ref_linear_attention_forward(ctx, MF_DTYPE_F32, 1, 1, 1, S, D, DV, q, k, v, &a, out2));
    mf_linear_attention_state b = { ht, zt, NULL, NULL };
    MF_ASSERT_OK(mf_ref_linear_attention_forward(ctx, MF_DTYPE_F32, 1, 1, 1, N - S, D, DV, q + S * D,
                                                 k + S * D, v + S * DV, &b, out2 + S * DV));
    mf_linear_attention_state_grad gb = { NULL, NULL, dh0, dz0 };
    MF_ASSERT_OK(mf_ref_linear_attention_backward(ctx, MF_DTYPE_F32, 1, 1, 1, N - S, D, DV, q + S * D,
                                                  k + S * D, v + S * DV, dout + S * DV, &b, &gb, dq2 + S * D,
                                                  dk2 + S * D, dv2 + S * DV));
    mf_linear_attention_state_grad ga = { dh0, dz0, NULL, NULL };
    MF_ASSERT_OK(mf_ref_linear_attention_backward(ctx, MF_DTYPE_F32, 1, 1, 1, S, D, DV, q, k, v, dout, NULL,
                                                  &ga, dq2, dk2, dv2));
    MF_ASSERT_CLOSE(out2, out1, N * DV, "linear_attention.out.f32");
    MF_ASSERT_CLOSE(dq2, dq1, N * D, "linear_attention.grad.f32");
    MF_ASSERT_CLOSE(dk2, dk1, N * D, "linear_attention.grad.f32");
    MF_ASSERT_CLOSE(dv2, dv1, N * DV, "linear_attention.grad.f32");
}
END_TEST

static Suite *linear_attention_fixtures_suite(void)
{
    Suite *s = suite_create("linear_attention_fixtures");
    TCase *tc = tcase_create("torch");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_reference_matches_torch, 0, N_CASES);
    tcase_add_loop_test(tc, test_reference_state_matches_torch, 0, N_STATE_CASES);
    tcase_add_test(tc, test_reference_two_calls_equal_one);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(linear_attention_fixtures_suite()); }
