/* Equivalence of the chunked and fused linear cross-entropy
 * (optimized/cross_entropy.cu, optimized/cross_entropy_fused.cu) with the
 * full-logits reference (reference/cross_entropy.c); seed 000, bug 1.
 *
 * The cases are the op's built-in ones (src/ops/cross_entropy_cases.c: the report's
 * five, then the suites': dtype x reduction x shift, label smoothing, z-loss
 * and softcap alone and together, ragged last chunks, a one-row chunk, the
 * default budget capped at the logits, every row ignored, a NaN in hidden,
 * grad_weight only, grad_loss NULL, odd N, D and V with every option, the
 * fused variant's row blocks and vocabulary strips, V = 151,936 on a few rows,
 * and the memory suite's shapes), run through the testbed as `memfix report`
 * runs them: seeded inputs, the reference forward and backward on the host,
 * then on the test backend (a) the fused forward+backward call and (b) the
 * forward saving lse and the backward from it, each into outputs pre-filled
 * with NaN, every output compared with the op's tolerance rows, the scratch
 * peak against the variant's ceiling (the chunked one's budget makes the plan
 * pick exactly the case's chunk, which the case checks). One TCase per variant
 * (chunked, fused); the fused variant's V = 151,936 cases run in their own
 * TCase fused_vocab (ctest registrations of their own, tests/cross_entropy.cmake).
 * Here stay the op's own properties: the loss is informative (a constant output
 * fails), gradient filtering's bound, and under ThreadSanitizer a few fused
 * cases beyond the report's (odd shapes, every row ignored, blocks and strips).
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/cross_entropy.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The descriptor's V = 151,936 cases (src/ops/cross_entropy_cases.c), f32 and bf16. */
#define CE_CASE_VOCAB 47
/* Under ThreadSanitizer (where mf_test_add_op_cases runs the report cases
 * only) the fused TCase also runs: odd N, D, V with every option (f32, bf16 x
 * mean, sum, none), every row ignored (f32, bf16), the row blocks and strips
 * (f32, bf16): the cross-block races of its kernels beyond the report's shapes. */
static const int tsan_fused_cases[] = { 39, 40, 41, 42, 43, 44, 31, 32, 45, 46 };

static float *download(mf_context *ctx, const float *d, size_t n)
{
    return mf_test_dev_fetch(ctx, d, n, 0, "download");
}

/* The fused variant at the document's vocabulary (kept out of its sweep). */
START_TEST(test_fused_vocab)
{
    const mf_case_result r =
        mf_test_op_case_unlisted("cross_entropy", MF_CE_VARIANT_FUSED, CE_CASE_VOCAB + _i);
    ck_assert_msg(strstr(r.shape, "V=151936 ") != NULL, "case %d is not the V = 151,936 one: %s",
                  CE_CASE_VOCAB + _i, r.shape);
}
END_TEST

START_TEST(test_fused_tsan_cases)
{
    mf_test_op_case("cross_entropy", MF_CE_VARIANT_FUSED, tsan_fused_cases[_i]);
}
END_TEST

/* The mean loss of seeded inputs (N = 24, D = 16, V = 200, no ignored rows)
 * through the variant's forward. */
static float forward_loss(mf_ce_variant variant, uint64_t seed)
{
    mf_context *ctx = mf_test_ctx();
    const size_t n = 24, d = 16, v = 200;
    void *h = mf_test_make_input(MF_DTYPE_F32, n * d, seed, -1.0f, 1.0f);
    void *w = mf_test_make_input(MF_DTYPE_F32, v * d, seed + 1, -0.5f, 0.5f);
    int64_t lab[24];
    for (size_t i = 0; i < n; ++i) lab[i] = (int64_t)((i * 37 + seed) % v);
    void *dh = mf_test_dev_upload(ctx, h, n * d * 4), *dw = mf_test_dev_upload(ctx, w, v * d * 4);
    int64_t *dlab = mf_test_dev_upload(ctx, lab, sizeof lab);
    float *d_loss = mf_test_dev_nan(ctx, 1);
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.variant = variant;
    MF_ASSERT_OK(mf_cross_entropy_forward(ctx, (int64_t)n, (int64_t)d, (int64_t)v, MF_DTYPE_F32, dh, dw, NULL,
                                          dlab, &o, d_loss, NULL));
    float *loss = download(ctx, d_loss, 1);
    const float l = loss[0];
    void *bufs[] = { dh, dw, dlab, d_loss };
    for (int k = 0; k < 4; ++k) mf_buffer_free(ctx, bufs[k]);
    free(loss);
    free(h);
    free(w);
    return l;
}

/* The loss is not trivially small or constant: a different seed gives a
 * different value (guards against a constant output; the cases compare it with
 * the reference). _i: the variant. */
START_TEST(test_loss_is_informative)
{
    const float a = forward_loss((mf_ce_variant)_i, 900), b = forward_loss((mf_ce_variant)_i, 901);
    ck_assert_msg(a > 1.0f && b > 1.0f, "losses %g, %g: want > 1 (about log V)", (double)a, (double)b);
    ck_assert(a != b);
}
END_TEST

/* Gradient filtering (fused only; off by default): with f = 0.2, a tile is
 * skipped when every |dL/dz| < f times its row's gradient scale g_i (1 for
 * sum, 1/n_valid for mean). The result moves by at most the header's bound
 * (f max g_i V max|W| for grad_hidden, f sum g_i max|hidden| for grad_W and
 * f sum g_i for grad_bias) from the unfiltered call, and does move (tiles were
 * skipped); a tile holding a target is kept (|p - 1| ~ 1 > f), so grad_bias at
 * the targets matches the unfiltered call, with mean too (an absolute threshold
 * would skip every tile there: |dL/dz| <= 1/n_valid < f); the loss is
 * unchanged. _i: bit 0 mean (else sum), bit 1 bf16 (else f32). */
START_TEST(test_grad_filter)
{
    mf_context *ctx = mf_test_ctx();
    const size_t n = 24, d = 16, v = 1000;
    const float f = 0.2f;
    const int mean = _i & 1;
    const mf_dtype dt = (_i & 2) ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const size_t es = mf_dtype_size(dt);
    void *h = mf_test_make_input(dt, n * d, 1300, -1.0f, 1.0f);
    void *w = mf_test_make_input(dt, v * d, 1301, -0.5f, 0.5f);
    void *b = mf_test_make_input(dt, v, 1302, -1.0f, 1.0f);
    int64_t lab[24];
    size_t n_valid = 0;
    for (size_t i = 0; i < n; ++i) {
        lab[i] = i % 5 == 2 ? MF_CE_DEFAULT_IGNORE_INDEX : (int64_t)((i * 37) % 200);
        n_valid += lab[i] != MF_CE_DEFAULT_IGNORE_INDEX;
    }
    void *dh = mf_test_dev_upload(ctx, h, n * d * es), *dw = mf_test_dev_upload(ctx, w, v * d * es);
    void *db = mf_test_dev_upload(ctx, b, v * es);
    int64_t *dlab = mf_test_dev_upload(ctx, lab, sizeof lab);
    float *out[2][4];
    for (int run = 0; run < 2; ++run) {
        mf_cross_entropy_options o;
        mf_cross_entropy_options_init(&o);
        o.variant = MF_CE_VARIANT_FUSED;
        o.reduction = mean ? MF_CE_REDUCTION_MEAN : MF_CE_REDUCTION_SUM;
        o.grad_filter = run ? f : 0.0f;
        float *d_loss = mf_test_dev_nan(ctx, 1), *d_gh = mf_test_dev_nan(ctx, n * d),
              *d_gw = mf_test_dev_nan(ctx, v * d), *d_gb = mf_test_dev_nan(ctx, v);
        MF_ASSERT_OK(mf_cross_entropy_forward_backward(ctx, (int64_t)n, (int64_t)d, (int64_t)v, dt, dh, dw,
                                                       db, dlab, &o, NULL, d_loss, NULL, d_gh, d_gw, d_gb));
        out[run][0] = download(ctx, d_loss, 1);
        out[run][1] = download(ctx, d_gh, n * d);
        out[run][2] = download(ctx, d_gw, v * d);
        out[run][3] = download(ctx, d_gb, v);
        void *bufs[] = { d_loss, d_gh, d_gw, d_gb };
        for (int k = 0; k < 4; ++k) mf_buffer_free(ctx, bufs[k]);
    }
    ck_assert(out[0][0][0] == out[1][0][0]);
    const double g_max = mean ? 1.0 / (double)n_valid : 1.0, g_sum = mean ? 1.0 : (double)n_valid;
    const double bound[4] = { 0.0, (double)f * g_max * (double)v * 0.5, (double)f * g_sum * 1.0,
                              (double)f * g_sum };
    const size_t len[4] = { 1, n * d, v * d, v };
    double moved = 0.0;
    for (int k = 1; k < 4; ++k) {
        for (size_t e = 0; e < len[k]; ++e) {
            const double diff = fabs((double)out[1][k][e] - (double)out[0][k][e]);
            ck_assert_msg(diff <= bound[k] * 1.001, "output %d element %zu moved %g > bound %g", k, e, diff,
                          bound[k]);
            if (diff > moved) moved = diff;
        }
    }
    ck_assert_msg(moved > 0.0, "grad_filter = %g skipped no tile", (double)f);
    for (size_t i = 0; i < n; ++i) { /* the targets' tiles were kept: only the atomics' order differs */
        if (lab[i] == MF_CE_DEFAULT_IGNORE_INDEX) continue;
        const double want = out[0][3][lab[i]], got = out[1][3][lab[i]];
        ck_assert_msg(
            fabs(got - want) <= 1e-6 * (1.0 + fabs(want)),
            "grad_bias[%lld] (row %zu's target) is %g filtered, %g unfiltered: its tile was skipped",
            (long long)lab[i], i, got, want);
        ck_assert_msg(want != 0.0, "grad_bias[%lld] is 0 unfiltered", (long long)lab[i]);
    }
    for (int run = 0; run < 2; ++run)
        for (int k = 0; k < 4; ++k) free(out[run][k]);
    void *bufs[] = { dh, dw, db, dlab };
    for (int k = 0; k < 4; ++k) mf_buffer_free(ctx, bufs[k]);
    free(h);
    free(w);
    free(b);
}
END_TEST

/* ---- the bf16 fused kernels on wgmma (sm_90a; emulated in host mode) ---------------
 * TCase fused_wgmma runs a subset of the fused sweep's bf16 cases with
 * MF_CE_MMA_PATH=wgmma (the header's override of MF_CE_MMA_AUTO): the report
 * cases, shift, reduction none, every option, a one-row case, every row ignored,
 * a NaN row, odd N / D / V (D = 37: plain loads) with every option and each
 * reduction, and two row blocks x a full and a ragged strip. Not the V = 151,936
 * case nor the f32 ones (their path is the SIMT kernels either way): the leg costs
 * about what the fused test case costs (~2.5 s idle), a small share of the
 * cross-entropy tests' time (fused_vocab alone: ~30 s). */
static const int wgmma_cases[] = { 1, 3, 10, 12, 24, 28, 32, 34, 40, 42, 44, 46 };

static void wgmma_setup(void)
{
    setenv("MF_CE_MMA_PATH", "wgmma", 1);
    mf_test_setup();
}

static void wgmma_teardown(void)
{
    mf_test_teardown();
    unsetenv("MF_CE_MMA_PATH");
}

START_TEST(test_wgmma_cases)
{
    const mf_case_result r = mf_test_op_case("cross_entropy", MF_CE_VARIANT_FUSED, wgmma_cases[_i]);
    ck_assert_msg(strcmp(r.dtype, "bf16") == 0, "case %d is not a bf16 case (%s)", wgmma_cases[_i], r.dtype);
}
END_TEST

/* One bf16 fused forward+backward (sum, bias, smoothing, z-loss, softcap, rows
 * i % 7 == 3 ignored) on the given path; outputs downloaded into out[0..4]:
 * loss, lse, grad_hidden, grad_W, grad_bias. With lse_in (n host floats) the
 * backward alone from that lse instead (out[0], out[1]: NULL). */
static mf_status fused_bf16_run_lse(mf_ce_mma_path path, size_t n, size_t d, size_t v, const float *lse_in,
                                    float *out[5])
{
    mf_context *ctx = mf_test_ctx();
    void *h = mf_test_make_input(MF_DTYPE_BF16, n * d, 1400 + d, -1.0f, 1.0f);
    void *w = mf_test_make_input(MF_DTYPE_BF16, v * d, 1401 + d, -0.5f, 0.5f);
    void *b = mf_test_make_input(MF_DTYPE_BF16, v, 1402 + d, -1.0f, 1.0f);
    int64_t *lab = malloc(n * sizeof *lab);
    ck_assert_ptr_nonnull(lab);
    for (size_t i = 0; i < n; ++i) lab[i] = i % 7 == 3 ? MF_CE_DEFAULT_IGNORE_INDEX : (int64_t)((i * 37) % v);
    void *dh = mf_test_dev_upload(ctx, h, n * d * 2), *dw = mf_test_dev_upload(ctx, w, v * d * 2);
    void *db = mf_test_dev_upload(ctx, b, v * 2);
    int64_t *dlab = mf_test_dev_upload(ctx, lab, n * sizeof *lab);
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.variant = MF_CE_VARIANT_FUSED;
    o.reduction = MF_CE_REDUCTION_SUM;
    o.label_smoothing = 0.1f;
    o.z_loss = 1e-3f;
    o.softcap = 5.0f;
    o.mma_path = path;
    float *d_loss = mf_test_dev_nan(ctx, 1), *d_lse = mf_test_dev_nan(ctx, n),
          *d_gh = mf_test_dev_nan(ctx, n * d), *d_gw = mf_test_dev_nan(ctx, v * d),
          *d_gb = mf_test_dev_nan(ctx, v);
    float *d_lse_in = lse_in != NULL ? mf_test_dev_upload(ctx, lse_in, n * sizeof *lse_in) : NULL;
    const mf_status st =
        lse_in != NULL
            ? mf_cross_entropy_backward(ctx, (int64_t)n, (int64_t)d, (int64_t)v, MF_DTYPE_BF16, dh, dw, db,
                                        dlab, &o, d_lse_in, NULL, d_gh, d_gw, d_gb)
            : mf_cross_entropy_forward_backward(ctx, (int64_t)n, (int64_t)d, (int64_t)v, MF_DTYPE_BF16, dh,
                                                dw, db, dlab, &o, NULL, d_loss, d_lse, d_gh, d_gw, d_gb);
    if (st == MF_OK) {
        out[0] = lse_in != NULL ? NULL : download(ctx, d_loss, 1);
        out[1] = lse_in != NULL ? NULL : download(ctx, d_lse, n);
        out[2] = download(ctx, d_gh, n * d);
        out[3] = download(ctx, d_gw, v * d);
        out[4] = download(ctx, d_gb, v);
    }
    void *bufs[] = { dh, dw, db, dlab, d_loss, d_lse, d_gh, d_gw, d_gb, d_lse_in };
    for (int k = 0; k < 10; ++k)
        if (bufs[k] != NULL) mf_buffer_free(ctx, bufs[k]);
    free(h);
    free(w);
    free(b);
    free(lab);
    return st;
}

static mf_status fused_bf16_run(mf_ce_mma_path path, size_t n, size_t d, size_t v, float *out[5])
{
    return fused_bf16_run_lse(path, n, d, v, NULL, out);
}

/* D over several 64-wide wgmma slices (the sweep's D <= 40 is one): D = 136
 * (cp.async, a ragged third slice) and D = 150 (plain loads), two row blocks,
 * V = 300 (a ragged tile), through opts.mma_path = WGMMA and = SYNC. The logits
 * are the same fp32 sums in the same k order on both paths (bf16 products exact,
 * summed per k16 step, steps chained in order), so the two agree far inside the
 * bf16 tolerance rows; only the order of the row statistics' and grad_bias's
 * partial sums and of grad_W's atomics differs. The gradient products too: both
 * paths multiply the same bf16 G by bf16 W / hidden, in k16 steps in k order
 * (vocabulary within a tile, then the strip's tiles in order, for grad_hidden;
 * the block's rows for grad_W). _i: 0 (D = 136), 1 (D = 150). */
START_TEST(test_wgmma_matches_sync_deep_d)
{
    const size_t n = 133, d = _i ? 150 : 136, v = 300;
    float *a[5], *s[5];
    MF_ASSERT_OK(fused_bf16_run(MF_CE_MMA_WGMMA, n, d, v, a));
    MF_ASSERT_OK(fused_bf16_run(MF_CE_MMA_SYNC, n, d, v, s));
    const size_t len[5] = { 1, n, n * d, v * d, v };
    const char *name[5] = { "loss", "lse", "grad_hidden", "grad_weight", "grad_bias" };
    for (int k = 0; k < 5; ++k) {
        double amax = 0.0;
        for (size_t e = 0; e < len[k]; ++e) amax = fmax(amax, fabs((double)s[k][e]));
        ck_assert_msg(amax > 0.0, "%s (mma.sync) is all zero", name[k]);
        for (size_t e = 0; e < len[k]; ++e) {
            const double x = a[k][e], y = s[k][e];
            ck_assert_msg(isfinite(x) && fabs(x - y) <= 1e-6 * amax + 1e-5 * fabs(y),
                          "D = %zu: %s[%zu]: wgmma %.9g vs mma.sync %.9g", d, name[k], e, x, y);
        }
        free(a[k]);
        free(s[k]);
    }
}
END_TEST

/* The gradient products alone: both paths' backward from the same saved lse (the
 * mma.sync forward's), D = 136 (three 64-wide slices, the last ragged), V = 1100
 * (three strips, the last a ragged tile), two row blocks. With one lse the two
 * paths' dL/dz, and so G, are the same bf16 values (same logits sums, same
 * formula), and the products sum the same exact bf16 products in fp32 in the
 * same order: in host mode (cudahost emulates both instructions with the same
 * fp32 sums) grad_hidden (deterministic on both) must agree bit for bit, grad_W
 * up to the order of its two row blocks' atomics, grad_bias up to its atomics'
 * order (16-row vs 32-row warp partial sums). On a GPU nothing promises that
 * wgmma and mma.sync sum a k16 step's products alike (the tensor cores' internal
 * alignment of the products is not specified), so there grad_hidden gets the
 * tolerance test_wgmma_matches_sync_deep_d gives every output. Across full
 * forward+backward runs a last-bit lse difference can flip a bf16 rounding of G,
 * so this is where the products themselves are pinned. */
START_TEST(test_wgmma_grad_matches_sync)
{
    const size_t n = 133, d = 136, v = 1100;
    float *f[5], *a[5], *s[5];
    MF_ASSERT_OK(fused_bf16_run(MF_CE_MMA_SYNC, n, d, v, f));
    MF_ASSERT_OK(fused_bf16_run_lse(MF_CE_MMA_WGMMA, n, d, v, f[1], a));
    MF_ASSERT_OK(fused_bf16_run_lse(MF_CE_MMA_SYNC, n, d, v, f[1], s));
    const size_t len[5] = { 0, 0, n * d, v * d, v };
    const char *name[5] = { "", "", "grad_hidden", "grad_weight", "grad_bias" };
    const int hardware = mf_test_backend() == MF_BACKEND_CUDA;
    for (int k = 2; k < 5; ++k) {
        double amax = 0.0;
        for (size_t e = 0; e < len[k]; ++e) amax = fmax(amax, fabs((double)s[k][e]));
        ck_assert_msg(amax > 0.0, "%s (mma.sync) is all zero", name[k]);
        for (size_t e = 0; e < len[k]; ++e) {
            const double x = a[k][e], y = s[k][e];
            const double tol = k != 2     ? 1e-6 * amax + 1e-6 * fabs(y)
                               : hardware ? 1e-6 * amax + 1e-5 * fabs(y)
                                          : 0.0;
            ck_assert_msg(isfinite(x) && fabs(x - y) <= tol, "%s[%zu]: wgmma %.9g vs mma.sync %.9g", name[k],
                          e, x, y);
        }
        free(a[k]);
        free(s[k]);
    }
    for (int k = 0; k < 5; ++k) free(f[k]);
}
END_TEST

/* The path knob: MF_CE_MMA_PATH is read (a bad value is an error naming it), and
 * a bad opts->mma_path is rejected by validation. */
START_TEST(test_mma_path_knob)
{
    float *out[5];
    setenv("MF_CE_MMA_PATH", "tensorcore", 1);
    const mf_status st = fused_bf16_run(MF_CE_MMA_AUTO, 24, 16, 200, out);
    unsetenv("MF_CE_MMA_PATH");
    ck_assert_int_eq(st, MF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(mf_last_error(), "MF_CE_MMA_PATH") != NULL, "error: %s", mf_last_error());
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    ck_assert_int_eq(o.mma_path, MF_CE_MMA_AUTO);
    o.mma_path = (mf_ce_mma_path)3;
    ck_assert_int_eq(mf_cross_entropy_options_validate(&o), MF_ERR_INVALID_ARGUMENT);
}
END_TEST

static Suite *cross_entropy_equiv_suite(void)
{
    Suite *s = suite_create("cross_entropy_equiv");
    mf_test_add_op_cases(s, "cross_entropy"); /* TCases chunked, fused: the built-in cases */
    TCase *tc = tcase_create("chunked");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_loss_is_informative, MF_CE_VARIANT_CHUNKED, MF_CE_VARIANT_CHUNKED + 1);
    suite_add_tcase(s, tc);

    TCase *fu = tcase_create("fused");
    tcase_add_checked_fixture(fu, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(fu, test_loss_is_informative, MF_CE_VARIANT_FUSED, MF_CE_VARIANT_FUSED + 1);
    tcase_add_loop_test(fu, test_grad_filter, 0, 4);
    const char *san = getenv("MF_TEST_SANITIZER");
    if (san != NULL && strcmp(san, "thread") == 0)
        tcase_add_loop_test(fu, test_fused_tsan_cases, 0,
                            (int)(sizeof tsan_fused_cases / sizeof tsan_fused_cases[0]));
    suite_add_tcase(s, fu);

    /* an A100, or an H100 without the sm_90a code, has no wgmma path: the case is skipped there */
    TCase *fw = mf_test_tcase_needing("fused_wgmma", mf_cross_entropy_wgmma_available,
                                      "the fused kernels' wgmma path (sm_90a)");
    tcase_add_checked_fixture(fw, wgmma_setup, wgmma_teardown);
    tcase_add_loop_test(fw, test_wgmma_cases, 0, (int)(sizeof wgmma_cases / sizeof wgmma_cases[0]));
    tcase_add_loop_test(fw, test_wgmma_matches_sync_deep_d, 0, 2);
    tcase_add_test(fw, test_wgmma_grad_matches_sync);
    tcase_add_loop_test(fw, test_grad_filter, 2, 4); /* bf16: skipped tiles' gradient products */
    tcase_add_test(fw, test_mma_path_knob);
    suite_add_tcase(s, fw);

    /* The fused variant at the document's vocabulary: its own test case (and
     * ctest registrations, tests/cross_entropy.cmake) because in host mode it
     * costs more than the rest of the fused case together (1187 CTAs of 256
     * emulated threads per pass). */
    TCase *fv = tcase_create("fused_vocab");
    tcase_add_checked_fixture(fv, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(fv, test_fused_vocab, 0, 2);
    suite_add_tcase(s, fv);
    return s;
}

int main(void) { return mf_test_run(cross_entropy_equiv_suite()); }
