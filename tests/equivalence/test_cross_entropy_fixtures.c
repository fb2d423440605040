/* The cross-entropy reference against PyTorch (seed 000, bug 1).
 *
 * fixtures/cross_entropy/gen_cross_entropy.py runs the document's own loss code
 * (lm_head, shift by one, F.cross_entropy(..., ignore_index=-100)) and, for the
 * options, the same F.cross_entropy call with label smoothing / reduction plus
 * the softcap and z-loss formulas, in float64, with autograd for the gradients.
 * reference/cross_entropy.c must reproduce the loss and every gradient (row
 * "cross_entropy.torch.f32"). The all_ignored case records PyTorch's NaN (0/0)
 * where memfix, by design, returns 0 with zero gradients.
 * The reference needs no kernels: this suite runs in every build.
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/cross_entropy.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cases[] = { "seed_shift_mean", "bias_smooth_sum", "none_zloss_softcap",
                                     "bf16_shift_mean", "all_ignored" };
#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static mf_fixture_tensor load(const char *name, const char *what)
{
    char rel[256];
    snprintf(rel, sizeof rel, "cross_entropy/%s.%s.mft", name, what);
    mf_fixture_tensor t;
    ck_assert_msg(mf_fixture_read(mf_fixture_path(rel), &t), "cannot read fixture %s", rel);
    return t;
}

static float *load_f32(const char *name, const char *what, size_t expect_n)
{
    mf_fixture_tensor t = load(name, what);
    ck_assert_int_eq(t.dtype, MF_FIXTURE_F32);
    ck_assert_uint_eq(t.count, expect_n);
    return (float *)t.data; /* malloc'd: free() */
}

START_TEST(test_reference_matches_torch)
{
    const char *name = cases[_i];
    mf_context *ctx = mf_test_ctx();
    mf_fixture_tensor meta = load(name, "meta"), params = load(name, "params");
    ck_assert_int_eq(meta.dtype, MF_FIXTURE_I64);
    ck_assert_uint_eq(meta.count, 9);
    ck_assert_int_eq(params.dtype, MF_FIXTURE_F64);
    const int64_t *m = (const int64_t *)meta.data;
    const double *pr = (const double *)params.data;
    const int64_t n = m[0], d = m[1], v = m[2], t = m[4];
    const int shift = (int)m[5], has_bias = (int)m[6];
    const mf_ce_reduction red = (mf_ce_reduction)m[7];
    const mf_dtype dtype = m[8] ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_fixture_dtype fdt = m[8] ? MF_FIXTURE_BF16 : MF_FIXTURE_F32;

    mf_fixture_tensor hidden = load(name, "hidden"), weight = load(name, "weight");
    mf_fixture_tensor labels = load(name, "labels"), bias = { 0 };
    ck_assert_int_eq(hidden.dtype, fdt);
    ck_assert_int_eq(weight.dtype, fdt);
    ck_assert_int_eq(labels.dtype, MF_FIXTURE_I64);
    ck_assert_uint_eq(hidden.count, (size_t)(n * d));
    ck_assert_uint_eq(weight.count, (size_t)(v * d));
    ck_assert_uint_eq(labels.count, (size_t)n);
    if (has_bias) {
        bias = load(name, "bias");
        ck_assert_int_eq(bias.dtype, fdt);
        ck_assert_uint_eq(bias.count, (size_t)v);
    }
    const size_t n_loss = red == MF_CE_REDUCTION_NONE ? (size_t)n : 1;
    float *want_loss = load_f32(name, "loss", n_loss);
    float *grad_loss = load_f32(name, "grad_loss", n_loss);
    float *want_gh = load_f32(name, "grad_hidden", (size_t)(n * d));
    float *want_gw = load_f32(name, "grad_weight", (size_t)(v * d));
    float *want_gb = has_bias ? load_f32(name, "grad_bias", (size_t)v) : NULL;

    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.reduction = red;
    o.shift_labels = shift;
    o.seq_len = t;
    o.label_smoothing = (float)pr[0];
    o.z_loss = (float)pr[1];
    o.softcap = (float)pr[2];

    float *loss = malloc(n_loss * sizeof(float));
    float *gh = malloc((size_t)(n * d) * sizeof(float));
    float *gw = malloc((size_t)(v * d) * sizeof(float));
    float *gb = malloc((size_t)v * sizeof(float));
    ck_assert(loss && gh && gw && gb);
    mf_fill_nan_f32(loss, n_loss);
    mf_fill_nan_f32(gh, (size_t)(n * d));
    mf_fill_nan_f32(gw, (size_t)(v * d));
    mf_fill_nan_f32(gb, (size_t)v);
    const int64_t *lab = (const int64_t *)labels.data;
    MF_ASSERT_OK(mf_ref_cross_entropy_forward(ctx, n, d, v, dtype, hidden.data, weight.data,
                                              has_bias ? bias.data : NULL, lab, &o, loss, NULL));
    MF_ASSERT_OK(mf_ref_cross_entropy_backward(ctx, n, d, v, dtype, hidden.data, weight.data,
                                               has_bias ? bias.data : NULL, lab, &o, grad_loss, gh, gw,
                                               has_bias ? gb : NULL));

    if (strcmp(name, "all_ignored") == 0) {
        /* PyTorch: 0/0 = NaN; memfix: 0 and zero gradients (documented). */
        ck_assert_msg(isnan(want_loss[0]), "torch's all-ignored mean loss is NaN");
        ck_assert_msg(loss[0] == 0.0f, "memfix's all-ignored mean loss is 0, got %g", (double)loss[0]);
        for (int64_t i = 0; i < n * d; ++i) ck_assert(gh[i] == 0.0f && want_gh[i] == 0.0f);
        for (int64_t i = 0; i < v * d; ++i) ck_assert(gw[i] == 0.0f && want_gw[i] == 0.0f);
    } else {
        MF_ASSERT_CLOSE(loss, want_loss, n_loss, "cross_entropy.torch.f32");
        MF_ASSERT_CLOSE(gh, want_gh, (size_t)(n * d), "cross_entropy.torch.f32");
        MF_ASSERT_CLOSE(gw, want_gw, (size_t)(v * d), "cross_entropy.torch.f32");
        if (has_bias) MF_ASSERT_CLOSE(gb, want_gb, (size_t)v, "cross_entropy.torch.f32");
    }

    free(loss);
    free(gh);
    free(gw);
    free(gb);
    free(want_loss);
    free(grad_loss);
    free(want_gh);
    free(want_gw);
    free(want_gb);
    mf_fixture_free(&hidden);
    mf_fixture_free(&weight);
    mf_fixture_free(&labels);
    if (has_bias) mf_fixture_free(&bias);
    mf_fixture_free(&meta);
    mf_fixture_free(&params);
}
END_TEST

/* The shifted targets really are the document's slicing: with shift, the last
 * row of each sequence contributes nothing (loss 0 in 'none', zero gradient). */
START_TEST(test_shift_ignores_last_row_of_each_sequence)
{
    mf_context *ctx = mf_test_ctx();
    enum { B = 2, T = 3, N = B * T, D = 4, V = 5 };
    float h[N * D], w[V * D], loss[N], gh[N * D], gw[V * D];
    mf_fill_uniform_f32(h, N * D, 11, -1.0f, 1.0f);
    mf_fill_uniform_f32(w, V * D, 12, -1.0f, 1.0f);
    const int64_t labels[N] = { 1, 2, 3, 4, 0, 1 };
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.shift_labels = 1;
    o.seq_len = T;
    o.reduction = MF_CE_REDUCTION_NONE;
    mf_fill_nan_f32(loss, N);
    MF_ASSERT_OK(
        mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, h, w, NULL, labels, &o, loss, NULL));
    MF_ASSERT_OK(mf_ref_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, h, w, NULL, labels, &o, NULL, gh,
                                               gw, NULL));
    for (int s = 0; s < B; ++s) {
        ck_assert(loss[s * T + T - 1] == 0.0f);
        ck_assert(loss[s * T] > 0.0f);
        for (int k = 0; k < D; ++k) ck_assert(gh[(s * T + T - 1) * D + k] == 0.0f);
    }
}
END_TEST

static Suite *cross_entropy_fixtures_suite(void)
{
    Suite *s = suite_create("cross_entropy_fixtures");
    TCase *tc = tcase_create("torch");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_reference_matches_torch, 0, N_CASES);
    tcase_add_test(tc, test_shift_ignores_last_row_of_each_sequence);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(cross_entropy_fixtures_suite()); }
