/* Equivalence of the factored NPT kernel with the 4D reference (seed 004,
 * issue 6), forward and every gradient.
 *
 * For ranks 1, 8, 16, 64, fp32 and bf16, on shapes that are not multiples of
 * any tile (and one single-token shape): seeded inputs, the reference
 * (reference/npt.c, which materializes delta_w for every token) on the host,
 * the factored kernel (optimized/npt.cu) on the test backend into outputs
 * pre-filled with NaN and followed by a NaN guard region that must survive,
 * then MF_ASSERT_CLOSE per output with the op's tolerance rows. Further cases:
 * several chunk sizes (partial last chunk, one token per chunk, chunk from a
 * scratch budget), subsets of the gradients, the kernel against PyTorch's
 * factored graph (fixtures/npt), the registry's built-in cases, and a wrong
 * modulation that must be detected.
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/npt.h"
#include "memfix/registry.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 37 /* elements of NaN after each output that must survive */

static const int64_t ranks[] = { 1, 8, 16, 64 };
static const mf_dtype dtypes[] = { MF_DTYPE_F32, MF_DTYPE_BF16 };
/* batch, seq, d_model, d_ffn (rank from 'ranks') */
static const int64_t shapes[][4] = {
    { 2, 5, 19, 23 }, /* T = 10, primes */
    { 3, 4, 33, 17 }, /* one past a 32-wide tile in d_model */
    { 1, 1, 7, 5 },   /* a single token */
};
#define N_RANKS 4
#define N_DTYPES 2
#define N_SHAPES 3
#define N_COMBOS (N_RANKS * N_DTYPES * N_SHAPES)

/* Which gradients a backward run requests. */
enum { G_H = 1 << 0, G_W = 1 << 1, G_A = 1 << 2, G_B = 1 << 3, G_M = 1 << 4, G_BIAS = 1 << 5, G_ALL = 0x3f };

typedef struct run_spec {
    mf_npt_pass pass;
    mf_dtype dtype;
    mf_npt_shape shape;
    int bias;  /* forward with a bias */
    int grads; /* backward: mask of requested gradients */
    mf_npt_options opts;
} run_spec;

static const char *const out_names[7] = {
    "out", "grad_h", "grad_W", "grad_A", "grad_B", "grad_m", "grad_bias"
};

static void *make_input(mf_dtype dt, size_t n, uint64_t seed, float scale)
{
    return mf_test_make_input(dt, n, seed, -scale, scale);
}

/* Runs the reference and the kernel on the same seeded inputs and compares
 * every requested output. If 'kernel_m_seed' is non-zero, the kernel gets a
 * different modulation than the reference and the function returns 1 when
 * any output still passed everything (used to show that a wrong m fails). */
static int run_and_compare(const run_spec *rs, uint64_t seed, uint64_t kernel_m_seed)
{
    mf_context *ctx = mf_test_ctx();
    const mf_npt_shape s = rs->shape;
    const mf_dtype dt = rs->dtype;
    const int fwd = rs->pass == MF_NPT_FORWARD;
    const size_t es = mf_dtype_size(dt);
    const size_t T = (size_t)(s.batch * s.seq), D = (size_t)s.d_model, F = (size_t)s.d_ffn,
                 R = (size_t)s.rank;
    /* inputs: h, W, A, B, m, and bias (forward) or grad_out (backward) */
    const size_t in_n[6] = { T * D, D * F, D * R, R * F, T * R, fwd ? F : T * F };
    const float scale[6] = { 1.0f, 0.5f, 0.5f, 0.5f, 1.0f, fwd ? 0.5f : 1.0f };
    void *in[6] = { NULL }, *d_in[6] = { NULL };
    for (int i = 0; i < 6; ++i) {
        if (fwd && i == 5 && !rs->bias) continue;
        in[i] = make_input(dt, in_n[i], seed * 8 + (uint64_t)i, scale[i]);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, in_n[i] * es, &d_in[i]));
        MF_ASSERT_OK(mf_buffer_upload(ctx, d_in[i], in[i], in_n[i] * es));
    }
    if (kernel_m_seed) { /* the kernel sees another modulation */
        void *m2 = make_input(dt, in_n[4], kernel_m_seed, scale[4]);
        MF_ASSERT_OK(mf_buffer_upload(ctx, d_in[4], m2, in_n[4] * es));
        free(m2);
    }

    /* outputs: out (forward) or the six gradients (backward) */
    const size_t out_n[7] = { T * F, T * D, D * F, D * R, R * F, T * R, F };
    int want[7] = { 0 };
    if (fwd)
        want[0] = 1;
    else
        for (int k = 1; k < 7; ++k) want[k] = (rs->grads >> (k - 1)) & 1;
    void *ref[7] = { NULL }, *got[7] = { NULL }, *d_out[7] = { NULL };
    for (int k = 0; k < 7; ++k) {
        if (!want[k]) continue;
        ref[k] = malloc(out_n[k] * es);
        got[k] = malloc((out_n[k] + GUARD) * es);
        ck_assert_ptr_nonnull(ref[k]);
        ck_assert_ptr_nonnull(got[k]);
        mf_test_fill_nan(dt, ref[k], out_n[k]);
        mf_test_fill_nan(dt, got[k], out_n[k] + GUARD);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, (out_n[k] + GUARD) * es, &d_out[k]));
        MF_ASSERT_OK(mf_buffer_upload(ctx, d_out[k], got[k], (out_n[k] + GUARD) * es));
    }

    if (fwd) {
        MF_ASSERT_OK(mf_ref_npt_forward(ctx, dt, s, in[0], in[1], in[2], in[3], in[4], in[5], ref[0]));
        MF_ASSERT_OK(mf_npt_forward(ctx, dt, s, d_in[0], d_in[1], d_in[2], d_in[3], d_in[4], d_in[5],
                                    d_out[0], &rs->opts));
    } else {
        MF_ASSERT_OK(mf_ref_npt_backward(ctx, dt, s, in[0], in[1], in[2], in[3], in[4], in[5], ref[1], ref[2],
                                         ref[3], ref[4], ref[5], ref[6]));
        MF_ASSERT_OK(mf_npt_backward(ctx, dt, s, d_in[0], d_in[1], d_in[2], d_in[3], d_in[4], d_in[5],
                                     d_out[1], d_out[2], d_out[3], d_out[4], d_out[5], d_out[6], &rs->opts));
    }
    MF_ASSERT_OK(mf_context_synchronize(ctx));

    char tol[64];
    snprintf(tol, sizeof tol, "npt.%s.%s", fwd ? "forward" : "backward", mf_dtype_name(dt));
    int any_pass = 0;
    for (int k = 0; k < 7; ++k) {
        if (!want[k]) continue;
        const size_t n = out_n[k];
        MF_ASSERT_OK(mf_buffer_download(ctx, got[k], d_out[k], (n + GUARD) * es));
        float *g32 = malloc((n + GUARD) * sizeof(float)), *r32 = malloc(n * sizeof(float));
        ck_assert_ptr_nonnull(g32);
        ck_assert_ptr_nonnull(r32);
        mf_test_to_f32(dt, got[k], g32, n + GUARD);
        mf_test_to_f32(dt, ref[k], r32, n);
        for (size_t i = 0; i < GUARD; ++i)
            ck_assert_msg(isnan(g32[n + i]), "%s: wrote past the end (guard element %zu is %g)", out_names[k],
                          i, (double)g32[n + i]);
        if (kernel_m_seed) {
            mf_compare_result r;
            ck_assert_int_eq(mf_compare_f32(g32, r32, n, mf_tolerance_get(tol), NULL, &r), MF_OK);
            /* grad_W, grad_bias and grad_m = (h.A) * (g.B^T) do not depend on m */
            if (r.pass && k != 2 && k != 5 && k != 6) any_pass = 1;
        } else {
            char msg[1024];
            const int ok = mf_test_check_close(g32, r32, n, tol, __FILE__, __LINE__, msg, sizeof msg);
            ck_assert_msg(ok, "%s %s %s Bt=%lld S=%lld D=%lld F=%lld r=%lld chunk=%lld: %s",
                          fwd ? "forward" : "backward", mf_dtype_name(dt), out_names[k], (long long)s.batch,
                          (long long)s.seq, (long long)s.d_model, (long long)s.d_ffn, (long long)s.rank,
                          (long long)rs->opts.chunk_tokens, msg);
        }
        free(r32);
        free(g32);
    }
    for (int k = 0; k < 7; ++k) {
        free(ref[k]);
        free(got[k]);
        MF_ASSERT_OK(mf_buffer_free(ctx, d_out[k]));
    }
    for (int i = 0; i < 6; ++i) {
        free(in[i]);
        MF_ASSERT_OK(mf_buffer_free(ctx, d_in[i]));
    }
    return any_pass;
}

/* Loop index -> (shape, rank, dtype). */
static run_spec combo(mf_npt_pass pass, int i)
{
    run_spec rs;
    memset(&rs, 0, sizeof rs);
    const int si = i / (N_RANKS * N_DTYPES);
    rs.pass = pass;
    rs.dtype = dtypes[i % N_DTYPES];
    rs.shape.batch = shapes[si][0];
    rs.shape.seq = shapes[si][1];
    rs.shape.d_model = shapes[si][2];
    rs.shape.d_ffn = shapes[si][3];
    rs.shape.rank = ranks[(i / N_DTYPES) % N_RANKS];
    rs.bias = si != 1; /* shape 1 runs without a bias */
    rs.grads = G_ALL;
    mf_npt_options_init(&rs.opts);
    if (si == 0) rs.opts.chunk_tokens = 4; /* T = 10: chunks of 4, 4, 2 */
    return rs;
}

START_TEST(test_forward_matches_reference)
{
    const run_spec rs = combo(MF_NPT_FORWARD, _i);
    run_and_compare(&rs, 0x6e70740000ull + (uint64_t)_i, 0);
}
END_TEST

START_TEST(test_backward_matches_reference)
{
    const run_spec rs = combo(MF_NPT_BACKWARD, _i);
    run_and_compare(&rs, 0x6e70741000ull + (uint64_t)_i, 0);
}
END_TEST

/* Chunk sizes: one token per chunk, a partial last chunk, T - 1, exactly T,
 * more than T, and the chunk derived from a scratch budget of 5 tokens. */
#define N_CHUNKINGS 6
static void chunking_spec(run_spec *rs, int j)
{
    const int64_t T = rs->shape.batch * rs->shape.seq;
    const int64_t chunks[N_CHUNKINGS - 1] = { 1, 3, T - 1, T, T + 5 };
    if (j < N_CHUNKINGS - 1) {
        rs->opts.chunk_tokens = chunks[j];
    } else {
        rs->opts.chunk_tokens = 0;
        rs->opts.scratch_budget_bytes =
            rs->pass == MF_NPT_FORWARD
                ? 5 * (size_t)rs->shape.rank * (4 + mf_dtype_size(rs->dtype))
                : 5 * (size_t)rs->shape.rank * (8 + 2 * mf_dtype_size(rs->dtype)) +
                      (rs->dtype == MF_DTYPE_BF16
                           ? (size_t)(rs->shape.d_model + rs->shape.d_ffn) * (size_t)rs->shape.rank * 4
                           : 0);
        int64_t c = 0;
        MF_ASSERT_OK(mf_npt_resolve_chunk(rs->pass, rs->dtype, rs->shape, &rs->opts, &c));
        ck_assert_int_eq(c, 5);
    }
}

START_TEST(test_chunkings_match_reference)
{
    /* _i: pass (2) x dtype (2) x chunking */
    run_spec rs;
    memset(&rs, 0, sizeof rs);
    rs.pass = (_i / (N_DTYPES * N_CHUNKINGS)) ? MF_NPT_BACKWARD : MF_NPT_FORWARD;
    rs.dtype = dtypes[(_i / N_CHUNKINGS) % N_DTYPES];
    rs.shape = (mf_npt_shape){ 3, 5, 21, 26, 8 }; /* T = 15 */
    rs.bias = 1;
    rs.grads = G_ALL;
    mf_npt_options_init(&rs.opts);
    chunking_spec(&rs, _i % N_CHUNKINGS);
    run_and_compare(&rs, 0x6e70742000ull + (uint64_t)_i, 0);
}
END_TEST

/* Subsets of the gradients (NULL outputs are skipped): only the ones that need
 * no chunk loop, only grad_m, only the low-rank factors, only grad_h, and all
 * but grad_W (a frozen W, as in NPT training). */
static const int grad_subsets[] = { G_W | G_BIAS, G_M, G_A | G_B, G_H, G_ALL & ~G_W };
#define N_SUBSETS ((int)(sizeof grad_subsets / sizeof grad_subsets[0]))

START_TEST(test_gradient_subsets_match_reference)
{
    run_spec rs;
    memset(&rs, 0, sizeof rs);
    rs.pass = MF_NPT_BACKWARD;
    rs.dtype = dtypes[_i % N_DTYPES];
    rs.shape = (mf_npt_shape){ 2, 3, 11, 14, 16 };
    rs.grads = grad_subsets[_i / N_DTYPES];
    mf_npt_options_init(&rs.opts);
    rs.opts.chunk_tokens = 4;
    run_and_compare(&rs, 0x6e70743000ull + (uint64_t)_i, 0);
}
END_TEST

/* The comparison can fail: the kernel run with another modulation than the
 * reference must fail for out (forward) and for every m-dependent gradient. */
START_TEST(test_wrong_modulation_is_detected)
{
    run_spec rs;
    memset(&rs, 0, sizeof rs);
    rs.pass = _i ? MF_NPT_BACKWARD : MF_NPT_FORWARD;
    rs.dtype = MF_DTYPE_F32;
    rs.shape = (mf_npt_shape){ 2, 5, 19, 23, 8 };
    rs.bias = 1;
    rs.grads = G_ALL;
    mf_npt_options_init(&rs.opts);
    ck_assert_msg(!run_and_compare(&rs, 0x6e70744000ull, 0x6e70745000ull),
                  "a result computed with the wrong modulation passed");
}
END_TEST

/* The kernel against PyTorch's factored graph (fixtures/npt, f32 cases). */
static const char *const torch_cases[] = { "f32_small", "f32_rank16" };

static const char *fixture(const char *dir, const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "npt/%s/%s.mft", dir, name);
    return mf_fixture_path(rel);
}

START_TEST(test_kernel_matches_torch_factored)
{
    static const char *const in_names[7] = { "h", "W", "A", "B", "m", "bias", "grad_out" };
    mf_context *ctx = mf_test_ctx();
    const char *dir = torch_cases[_i];
    mf_fixture_tensor in[7];
    void *d_in[7];
    for (int i = 0; i < 7; ++i) {
        ck_assert(mf_fixture_read(fixture(dir, in_names[i]), &in[i]));
        ck_assert_int_eq(in[i].dtype, MF_FIXTURE_F32);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, in[i].count * sizeof(float), &d_in[i]));
        MF_ASSERT_OK(mf_buffer_upload(ctx, d_in[i], in[i].data, in[i].count * sizeof(float)));
    }
    mf_npt_shape s;
    MF_ASSERT_OK(mf_npt_shape_from_dims(in[0].dims, in[1].dims, in[2].dims, in[3].dims, in[4].dims, &s));
    const size_t T = (size_t)(s.batch * s.seq), D = (size_t)s.d_model, F = (size_t)s.d_ffn,
                 R = (size_t)s.rank;
    const size_t out_n[7] = { T * F, T * D, D * F, D * R, R * F, T * R, F };
    void *d_out[7];
    size_t max_n = 0;
    for (int k = 0; k < 7; ++k)
        if (out_n[k] > max_n) max_n = out_n[k];
    float *nan_fill = malloc(max_n * sizeof(float));
    ck_assert_ptr_nonnull(nan_fill);
    for (int k = 0; k < 7; ++k) {
        MF_ASSERT_OK(mf_buffer_alloc(ctx, out_n[k] * sizeof(float), &d_out[k]));
        mf_fill_nan_f32(nan_fill, out_n[k]);
        MF_ASSERT_OK(mf_buffer_upload(ctx, d_out[k], nan_fill, out_n[k] * sizeof(float)));
    }
    free(nan_fill);
    mf_npt_options o;
    mf_npt_options_init(&o);
    o.chunk_tokens = 2;
    MF_ASSERT_OK(mf_npt_forward(ctx, MF_DTYPE_F32, s, d_in[0], d_in[1], d_in[2], d_in[3], d_in[4], d_in[5],
                                d_out[0], &o));
    MF_ASSERT_OK(mf_npt_backward(ctx, MF_DTYPE_F32, s, d_in[0], d_in[1], d_in[2], d_in[3], d_in[4], d_in[6],
                                 d_out[1], d_out[2], d_out[3], d_out[4], d_out[5], d_out[6], &o));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    for (int k = 0; k < 7; ++k) {
        char name[64];
        snprintf(name, sizeof name, "factored_%s", out_names[k]);
        float *want = NULL;
        size_t n = 0;
        ck_assert(mf_fixture_read_f32(fixture(dir, name), &want, &n));
        ck_assert_uint_eq(n, out_n[k]);
        float *got = malloc(n * sizeof(float));
        ck_assert_ptr_nonnull(got);
        MF_ASSERT_OK(mf_buffer_download(ctx, got, d_out[k], n * sizeof(float)));
        char msg[1024];
        const int ok = mf_test_check_close(got, want, n, k == 0 ? "npt.forward.f32" : "npt.backward.f32",
                                           __FILE__, __LINE__, msg, sizeof msg);
        ck_assert_msg(ok, "%s %s vs torch: %s", dir, out_names[k], msg);
        free(got);
        free(want);
        MF_ASSERT_OK(mf_buffer_free(ctx, d_out[k]));
    }
    for (int i = 0; i < 7; ++i) {
        MF_ASSERT_OK(mf_buffer_free(ctx, d_in[i]));
        mf_fixture_free(&in[i]);
    }
}
END_TEST

/* What `memfix report --op npt` runs passes on the test backend. */
START_TEST(test_registry_cases_pass)
{
    const mf_op_desc *op = mf_registry_find("npt");
    ck_assert_ptr_nonnull(op);
    ck_assert_int_eq(op->n_variants, 1);
    ck_assert_str_eq(op->variants[0], "factored");
    ck_assert_int_ge(op->n_cases, 4);
    for (int c = 0; c < op->n_cases; ++c) {
        mf_case_result r;
        MF_ASSERT_OK(op->run_case(mf_test_ctx(), 0, c, &r));
        ck_assert_msg(r.pass, "npt case %d (%s %s) failed: %s", c, r.dtype, r.shape, r.message);
        ck_assert_str_eq(r.op, "npt");
        ck_assert_uint_gt(r.ref_peak_bytes, r.ceiling_bytes);
        ck_assert_uint_le(r.opt_peak_bytes, r.ceiling_bytes);
    }
}
END_TEST

static Suite *npt_equiv_suite(void)
{
    Suite *s = suite_create("npt_equiv");
    TCase *tc = tcase_create("forward");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_forward_matches_reference, 0, N_COMBOS);
    suite_add_tcase(s, tc);

    tc = tcase_create("backward");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_backward_matches_reference, 0, N_COMBOS);
    tcase_add_loop_test(tc, test_gradient_subsets_match_reference, 0, N_SUBSETS * N_DTYPES);
    suite_add_tcase(s, tc);

    tc = tcase_create("chunking");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_chunkings_match_reference, 0, 2 * N_DTYPES * N_CHUNKINGS);
    suite_add_tcase(s, tc);

    tc = tcase_create("checks");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_wrong_modulation_is_detected, 0, 2);
    tcase_add_loop_test(tc, test_kernel_matches_torch_factored, 0, 2);
    tcase_add_test(tc, test_registry_cases_pass);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(npt_equiv_suite()); }
