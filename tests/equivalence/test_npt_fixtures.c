/* The NPT reference against PyTorch (seed 004).
 *
 * fixtures/npt/gen_npt.py runs the document's own code in float64: the old
 * 4D einsum ('bsr,dr,rf->bsdf', then h[b,s] . (W + delta_w[b,s])) and the fix
 * (h @ W + (h @ A) * mod @ B), each with autograd gradients for a given
 * grad_out, on small seeded shapes (f32 ranks 4 and 16, bf16 rank 8). Here the
 * C reference (reference/npt.c) reads the same inputs and must reproduce the
 * output and every gradient of both PyTorch graphs. Needs no kernels.
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/npt.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_INPUTS 7
#define N_OUTPUTS 7
static const char *const input_names[N_INPUTS] = { "h", "W", "A", "B", "m", "bias", "grad_out" };
static const char *const output_names[N_OUTPUTS] = { "out",    "grad_h", "grad_W",   "grad_A",
                                                     "grad_B", "grad_m", "grad_bias" };

typedef struct fixture_case {
    const char *dir;
    mf_dtype dtype;
} fixture_case;

static const fixture_case cases[] = {
    { "f32_small", MF_DTYPE_F32 },
    { "f32_rank16", MF_DTYPE_F32 },
    { "bf16_small", MF_DTYPE_BF16 },
};
#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static const char *path_of(const char *dir, const char *prefix, const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "npt/%s/%s%s.mft", dir, prefix, name);
    return mf_fixture_path(rel);
}

/* Reads the inputs (in the case's storage dtype) and checks that the dims
 * agree with each other through mf_npt_shape_from_dims. */
static mf_npt_shape read_inputs(const fixture_case *c, mf_fixture_tensor in[N_INPUTS])
{
    const mf_fixture_dtype want = c->dtype == MF_DTYPE_F32 ? MF_FIXTURE_F32 : MF_FIXTURE_BF16;
    for (int i = 0; i < N_INPUTS; ++i) {
        ck_assert_msg(mf_fixture_read(path_of(c->dir, "", input_names[i]), &in[i]), "reading %s/%s", c->dir,
                      input_names[i]);
        ck_assert_int_eq(in[i].dtype, want);
    }
    mf_npt_shape s;
    MF_ASSERT_OK(mf_npt_shape_from_dims(in[0].dims, in[1].dims, in[2].dims, in[3].dims, in[4].dims, &s));
    ck_assert_int_eq(in[5].ndim, 1);
    ck_assert_int_eq(in[5].dims[0], s.d_ffn);
    ck_assert_int_eq(in[6].ndim, 3);
    ck_assert_int_eq(in[6].dims[2], s.d_ffn);
    return s;
}

/* Runs the reference forward and backward on fixture case 'ci' and compares
 * the seven results with the PyTorch ones written under 'prefix'. */
static void check_case(int ci, const char *prefix)
{
    const fixture_case *c = &cases[ci];
    mf_context *ctx = mf_test_ctx();
    mf_fixture_tensor in[N_INPUTS];
    const mf_npt_shape s = read_inputs(c, in);
    const size_t es = mf_dtype_size(c->dtype);
    const size_t T = (size_t)(s.batch * s.seq), D = (size_t)s.d_model, F = (size_t)s.d_ffn,
                 R = (size_t)s.rank;
    const size_t n_out[N_OUTPUTS] = { T * F, T * D, D * F, D * R, R * F, T * R, F };
    void *got[N_OUTPUTS];
    for (int k = 0; k < N_OUTPUTS; ++k) {
        got[k] = malloc(n_out[k] * es);
        ck_assert_ptr_nonnull(got[k]);
        memset(got[k], 0xff, n_out[k] * es); /* NaN in f32 and bf16 */
    }
    MF_ASSERT_OK(mf_ref_npt_forward(ctx, c->dtype, s, in[0].data, in[1].data, in[2].data, in[3].data,
                                    in[4].data, in[5].data, got[0]));
    MF_ASSERT_OK(mf_ref_npt_backward(ctx, c->dtype, s, in[0].data, in[1].data, in[2].data, in[3].data,
                                     in[4].data, in[6].data, got[1], got[2], got[3], got[4], got[5], got[6]));
    const char *tol = c->dtype == MF_DTYPE_F32 ? "npt.torch.f32" : "npt.torch.bf16";
    for (int k = 0; k < N_OUTPUTS; ++k) {
        float *want = NULL, *have = NULL;
        size_t n = 0;
        ck_assert_msg(mf_fixture_read_f32(path_of(c->dir, prefix, output_names[k]), &want, &n),
                      "reading %s/%s%s", c->dir, prefix, output_names[k]);
        ck_assert_uint_eq(n, n_out[k]);
        have = malloc(n * sizeof(float));
        ck_assert_ptr_nonnull(have);
        mf_test_to_f32(c->dtype, got[k], have, n);
        MF_ASSERT_CLOSE(have, want, n, tol);
        free(have);
        free(want);
    }
    for (int k = 0; k < N_OUTPUTS; ++k) free(got[k]);
    for (int i = 0; i < N_INPUTS; ++i) mf_fixture_free(&in[i]);
}

/* The document's old code: the 4D einsum and its autograd graph. */
START_TEST(test_reference_matches_torch_einsum) { check_case(_i, "einsum_"); }
END_TEST

/* The document's fix: h @ W + (h @ A) * mod @ B, its autograd graph. */
START_TEST(test_reference_matches_torch_factored) { check_case(_i, "factored_"); }
END_TEST

/* The comparison can fail: the reference without the delta (m = 0) differs
 * from PyTorch's output with it. */
START_TEST(test_missing_delta_is_detected)
{
    const fixture_case *c = &cases[0];
    mf_context *ctx = mf_test_ctx();
    mf_fixture_tensor in[N_INPUTS];
    const mf_npt_shape s = read_inputs(c, in);
    const size_t T = (size_t)(s.batch * s.seq), F = (size_t)s.d_ffn;
    memset(in[4].data, 0, in[4].count * sizeof(float)); /* m = 0: no weight delta */
    float *got = malloc(T * F * sizeof(float)), *want = NULL;
    size_t n = 0;
    ck_assert_ptr_nonnull(got);
    MF_ASSERT_OK(mf_ref_npt_forward(ctx, c->dtype, s, in[0].data, in[1].data, in[2].data, in[3].data,
                                    in[4].data, in[5].data, got));
    ck_assert(mf_fixture_read_f32(path_of(c->dir, "einsum_", "out"), &want, &n));
    mf_compare_result r;
    ck_assert_int_eq(mf_compare_f32(got, want, n, mf_tolerance_get("npt.torch.f32"), NULL, &r), MF_OK);
    ck_assert_msg(!r.pass, "the output without delta_w passed against PyTorch's");
    free(want);
    free(got);
    for (int i = 0; i < N_INPUTS; ++i) mf_fixture_free(&in[i]);
}
END_TEST

static Suite *npt_fixtures_suite(void)
{
    Suite *s = suite_create("npt_fixtures");
    TCase *tc = tcase_create("torch");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_reference_matches_torch_einsum, 0, N_CASES);
    tcase_add_loop_test(tc, test_reference_matches_torch_factored, 0, N_CASES);
    tcase_add_test(tc, test_missing_delta_is_detected);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(npt_fixtures_suite()); }
