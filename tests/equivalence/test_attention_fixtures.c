/* The attention reference (reference/attention.c) against PyTorch: the fixtures
 * in fixtures/attention/ hold seeded inputs and the seed document's
 * standard_attention (plus its causal variant) run by torch in float64 with
 * autograd, rounded to float32 (fixtures/attention/gen_attention.py): out, lse,
 * dq, dk, dv. Needs no kernels: it also runs in a reference-only build. */
#include "mf_test.h"

#include "memfix/attention.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const cases[] = {
    "f32_full_2x2x7x5x3",      "f32_causal_1x2x19x8x8", "bf16_full_1x1x33x16x4",
    "bf16_causal_2x1x17x4x12", "f32_causal_1x1x1x3x2",
};
#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static void read_tensor(const char *name, const char *part, mf_fixture_tensor *t)
{
    mf_test_read_fixture("attention", name, part, t);
}

START_TEST(test_reference_matches_torch)
{
    const char *name = cases[_i];
    mf_fixture_tensor meta, q, k, v, dout, out, lse, dq, dk, dv;
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
    read_tensor(name, "lse", &lse);
    read_tensor(name, "dq", &dq);
    read_tensor(name, "dk", &dk);
    read_tensor(name, "dv", &dv);
    const size_t nqk = (size_t)(B * H * N * D), nv = (size_t)(B * H * N * Dv), nr = (size_t)(B * H * N);
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
    ck_assert_uint_eq(lse.count, nr);
    ck_assert_uint_eq(dq.count, nqk);
    ck_assert_uint_eq(dk.count, nqk);
    ck_assert_uint_eq(dv.count, nv);

    mf_context *ctx = mf_test_ctx();
    float *g_out = mf_test_nan_host(nv), *g_lse = mf_test_nan_host(nr);
    float *g_dq = mf_test_nan_host(nqk), *g_dk = mf_test_nan_host(nqk), *g_dv = mf_test_nan_host(nv);
    MF_ASSERT_OK(
        mf_ref_attention_forward(ctx, dt, causal, B, H, N, D, Dv, q.data, k.data, v.data, g_out, g_lse));
    MF_ASSERT_CLOSE(g_out, (const float *)out.data, nv, "attention.torch.f32");
    MF_ASSERT_CLOSE(g_lse, (const float *)lse.data, nr, "attention.torch.f32");
    MF_ASSERT_OK(mf_ref_attention_backward(ctx, dt, causal, B, H, N, D, Dv, q.data, k.data, v.data, dout.data,
                                           g_dq, g_dk, g_dv));
    MF_ASSERT_CLOSE(g_dq, (const float *)dq.data, nqk, "attention.torch.f32");
    MF_ASSERT_CLOSE(g_dk, (const float *)dk.data, nqk, "attention.torch.f32");
    MF_ASSERT_CLOSE(g_dv, (const float *)dv.data, nv, "attention.torch.f32");

    free(g_out);
    free(g_lse);
    free(g_dq);
    free(g_dk);
    free(g_dv);
    mf_fixture_tensor *all[] = { &meta, &q, &k, &v, &dout, &out, &lse, &dq, &dk, &dv };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_fixture_free(all[i]);
}
END_TEST

static Suite *attention_fixtures_suite(void)
{
    Suite *s = suite_create("attention_fixtures");
    TCase *tc = tcase_create("torch");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_reference_matches_torch, 0, N_CASES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(attention_fixtures_suite()); }
