/* The matmul reference (reference/matmul.c) against PyTorch: the fixtures in
 * fixtures/matmul/ hold seeded inputs and torch.matmul's float64 product
 * rounded to float32 (fixtures/matmul/gen_matmul.py), for fp32 and bf16 inputs
 * and several transpose combinations. Needs no kernels: it also runs in a
 * reference-only build. */
#include "mf_test.h"

#include "memfix/matmul.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const cases[] = {
    "f32_nn_5x7x3",
    "f32_tt_17x9x33",
    "bf16_tn_6x20x40",
    "bf16_nt_3x4x257",
};
#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static void read_tensor(const char *name, const char *part, mf_fixture_tensor *t)
{
    mf_test_read_fixture("matmul", name, part, t);
}

START_TEST(test_reference_matches_torch)
{
    const char *name = cases[_i];
    mf_fixture_tensor meta, a, b, c;
    read_tensor(name, "meta", &meta);
    read_tensor(name, "a", &a);
    read_tensor(name, "b", &b);
    read_tensor(name, "c", &c);
    ck_assert_int_eq(meta.dtype, MF_FIXTURE_I64);
    ck_assert_uint_eq(meta.count, 6);
    const int64_t *p = (const int64_t *)meta.data;
    const int64_t M = p[0], N = p[1], K = p[2];
    const int ta = (int)p[3], tb = (int)p[4];
    const mf_dtype dt = p[5] ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_fixture_dtype fdt = p[5] ? MF_FIXTURE_BF16 : MF_FIXTURE_F32;

    /* Stored layouts as documented in matmul.h. */
    ck_assert_int_eq(a.dtype, fdt);
    ck_assert_int_eq(b.dtype, fdt);
    ck_assert_int_eq(c.dtype, MF_FIXTURE_F32);
    ck_assert_int_eq(a.ndim, 2);
    ck_assert_int_eq(b.ndim, 2);
    ck_assert_int_eq(c.ndim, 2);
    ck_assert_int_eq(a.dims[0], ta ? K : M);
    ck_assert_int_eq(a.dims[1], ta ? M : K);
    ck_assert_int_eq(b.dims[0], tb ? N : K);
    ck_assert_int_eq(b.dims[1], tb ? K : N);
    ck_assert_int_eq(c.dims[0], M);
    ck_assert_int_eq(c.dims[1], N);

    float *got = malloc(c.count * sizeof(float));
    ck_assert_ptr_nonnull(got);
    mf_fill_nan_f32(got, c.count);
    MF_ASSERT_OK(mf_ref_matmul(mf_test_ctx(), dt, ta, tb, M, N, K, a.data, b.data, got));
    MF_ASSERT_CLOSE(got, (const float *)c.data, c.count, "matmul.torch.f32");

    free(got);
    mf_fixture_free(&c);
    mf_fixture_free(&b);
    mf_fixture_free(&a);
    mf_fixture_free(&meta);
}
END_TEST

static Suite *matmul_fixtures_suite(void)
{
    Suite *s = suite_create("matmul_fixtures");
    TCase *tc = tcase_create("torch");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_reference_matches_torch, 0, N_CASES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(matmul_fixtures_suite()); }
