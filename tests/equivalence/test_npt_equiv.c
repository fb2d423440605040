/* Equivalence of the factored NPT kernel with the 4D reference (seed 004),
 * forward and every gradient.
 *
 * The configurations are the op's built-in cases (src/ops/npt.c): ranks 1, 8,
 * 16, 64 in fp32 and bf16 on shapes that are not multiples of any tile (and a
 * single token), forward with and without a bias; chunk sizes (one token per
 * chunk, a partial last chunk, T - 1, T, more than T, the chunk from a scratch
 * budget); subsets of the gradients. Each runs through the testbed as `memfix
 * report` runs it: seeded inputs, the reference (reference/npt.c, which
 * materializes delta_w for every token) on the host, the factored kernel
 * (optimized/npt.cu) on the test backend into outputs pre-filled with NaN and
 * followed by a NaN guard that must survive, every output compared with the
 * op's tolerance rows. Here stay the op's own properties: a scratch budget
 * resolves to the chunk its cases say, the kernel against PyTorch's factored
 * graph (fixtures/npt), the registry's shape of the op, and a wrong modulation
 * that must be detected.
 */
#include "mf_test.h"
#include "testbed/testbed.h"

#include "memfix/check.h"
#include "memfix/npt.h"
#include "memfix/registry.h"
#include "memfix/verify.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The chunking cases' scratch budgets (src/ops/npt.c, cases 64..87: T = 15,
 * 21 x 26, rank 8) are the ceiling of exactly 5 tokens: they resolve to 5. */
START_TEST(test_budget_resolves_to_five_tokens)
{
    const mf_npt_pass pass = _i / 2 ? MF_NPT_BACKWARD : MF_NPT_FORWARD;
    const mf_dtype dt = _i % 2 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_npt_shape s = { 3, 5, 21, 26, 8 };
    mf_npt_options o;
    mf_npt_options_init(&o);
    o.chunk_tokens = 5;
    o.scratch_budget_bytes = pass == MF_NPT_FORWARD ? mf_npt_factored_forward_scratch_ceiling(dt, s, &o)
                                                    : mf_npt_factored_backward_scratch_ceiling(dt, s, &o);
    o.chunk_tokens = 0;
    int64_t c = 0;
    MF_ASSERT_OK(mf_npt_resolve_chunk(pass, dt, s, &o, &c));
    ck_assert_int_eq(c, 5);
    /* the case's row says so: run it (equivalence, scratch <= ceiling) and read its shape */
    const mf_case_result r = mf_test_op_case("npt", 0, 64 + _i * 6 + 5);
    char want[96];
    snprintf(want, sizeof want, "%s Bt=3 S=5 D=21 F=26 r=8%s chunk=5 budget=%zu", _i / 2 ? "bwd" : "fwd",
             _i / 2 ? "" : " bias", o.scratch_budget_bytes);
    ck_assert_str_eq(r.shape, want);
    ck_assert_str_eq(r.dtype, mf_dtype_name(dt));
}
END_TEST

/* The comparison can fail: a candidate that reads h's first T x r values as
 * the modulation (d_model >= rank) must fail out (forward) and every
 * m-dependent gradient (grad_h, grad_A, grad_B), while grad_W, grad_m and
 * grad_bias, which do not depend on m, still pass. As memfix verify runs a
 * candidate (mf_verify_ids: the testbed, its guards and defenses), on the first
 * f32 case of each pass (2 x 7 tokens, 19 x 23, rank 8): rejected by the
 * "equivalence" defense. */
static mf_status fwd_wrong_m(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                             const void *W, const void *A, const void *B, const void *m, const void *bias,
                             void *out, const mf_npt_options *opts)
{
    (void)m;
    return mf_npt_forward(ctx, dtype, shape, h, W, A, B, h, bias, out, opts);
}

static mf_status bwd_wrong_m(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                             const void *W, const void *A, const void *B, const void *m, const void *grad_out,
                             void *grad_h, void *grad_W, void *grad_A, void *grad_B, void *grad_m,
                             void *grad_bias, const mf_npt_options *opts)
{
    (void)m;
    return mf_npt_backward(ctx, dtype, shape, h, W, A, B, h, grad_out, grad_h, grad_W, grad_A, grad_B, grad_m,
                           grad_bias, opts);
}

START_TEST(test_wrong_modulation_is_detected)
{
    const char *target = _i ? "npt.backward" : "npt.forward";
    void (*cand)(void);
    if (_i) {
        mf_npt_backward_candidate_fn f = bwd_wrong_m;
        memcpy(&cand, &f, sizeof cand);
    } else {
        mf_npt_forward_candidate_fn f = fwd_wrong_m;
        memcpy(&cand, &f, sizeof cand);
    }
    const mf_case_id f0 = mf_tb_fixed_id(0);
    mf_verify_row row;
    size_t n = 0;
    MF_ASSERT_OK(mf_verify_ids(mf_test_ctx(), target, cand, &f0, 1, &row, 1, &n));
    ck_assert_uint_eq(n, 1);
    const mf_case_result *r = &row.result;
    ck_assert_str_eq(r->dtype, "f32");
    ck_assert_msg(!r->pass, "a result computed with the wrong modulation passed (%s)", r->shape);
    ck_assert_str_eq(row.defense, "equivalence");
    ck_assert_int_eq(r->n_outputs, _i ? 6 : 1);
    for (int k = 0; k < r->n_outputs; ++k) {
        const char *w = r->outputs[k].what;
        const int m_free = !strcmp(w, "grad_W") || !strcmp(w, "grad_m") || !strcmp(w, "grad_bias");
        ck_assert_msg(r->outputs[k].pass == m_free, "%s %s with the wrong modulation (%s)", w,
                      r->outputs[k].pass ? "passed" : "failed", r->shape);
    }
}
END_TEST

/* The kernel against PyTorch's factored graph (fixtures/npt, f32 cases),
 * forward and backward at chunks of 2 tokens: the fixture's inputs and
 * outputs in the testbed's tensor table (NaN-filled, guarded outputs; the
 * outputs' reference is PyTorch's), compared under the op's rows. */
static const char *const torch_cases[] = { "f32_small", "f32_rank16" };

START_TEST(test_kernel_matches_torch_factored)
{
    static const char *const names[14] = { "h",      "W",        "A",      "B",        "m",
                                           "bias",   "grad_out", "out",    "grad_h",   "grad_W",
                                           "grad_A", "grad_B",   "grad_m", "grad_bias" };
    mf_context *ctx = mf_test_ctx();
    const char *dir = torch_cases[_i];
    mf_fixture_tensor fx[14];
    mf_tb_tensor t[14];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 14; ++i) {
        char rel[256];
        snprintf(rel, sizeof rel, "npt/%s/%s%s.mft", dir, i < 7 ? "" : "factored_", names[i]);
        ck_assert_msg(mf_fixture_read(mf_fixture_path(rel), &fx[i]), "cannot read fixture %s", rel);
        ck_assert_int_eq(fx[i].dtype, MF_FIXTURE_F32);
        t[i].name = names[i];
        t[i].role = i < 7 ? MF_TB_IN : MF_TB_OUT;
        t[i].n = fx[i].count;
        t[i].tol = i < 7 ? NULL : i == 7 ? "npt.forward" : "npt.backward";
    }
    mf_npt_shape s;
    MF_ASSERT_OK(mf_npt_shape_from_dims(fx[0].dims, fx[1].dims, fx[2].dims, fx[3].dims, fx[4].dims, &s));
    const size_t T = (size_t)(s.batch * s.seq), D = (size_t)s.d_model, F = (size_t)s.d_ffn,
                 R = (size_t)s.rank;
    const size_t want_n[14] = { T * D, D * F, D * R, R * F, T * R, F,     T * F,
                                T * F, T * D, D * F, D * R, R * F, T * R, F };
    /* the outputs' axes (include/memfix/npt.h), which a failing comparison names an element by */
    const mf_axes ax[7] = { { "b s f", { s.batch, s.seq, F } },
                            { "b s d", { s.batch, s.seq, D } },
                            { "d f", { D, F } },
                            { "d r", { D, R } },
                            { "r f", { R, F } },
                            { "b s r", { s.batch, s.seq, R } },
                            { "f", { F } } };
    for (int i = 7; i < 14; ++i) t[i].axes = ax[i - 7];
    /* the tensors (NaN guards, NaN-filled outputs), then the fixture's data in place of the seeded inputs and
     * as the outputs' reference */
    MF_ASSERT_OK(mf_tb_tensors_make(t, 14, MF_DTYPE_F32, 0));
    for (int i = 0; i < 14; ++i) {
        ck_assert_uint_eq(fx[i].count, want_n[i]);
        memcpy(t[i].host, fx[i].data, fx[i].count * sizeof(float));
        mf_fixture_free(&fx[i]);
    }
    MF_ASSERT_OK(mf_tb_tensors_upload(ctx, t, 14, MF_DTYPE_F32));
    mf_npt_options o;
    mf_npt_options_init(&o);
    o.chunk_tokens = 2;
    void *d[14];
    for (int i = 0; i < 14; ++i) d[i] = t[i].dev;
    MF_ASSERT_OK(mf_npt_forward(ctx, MF_DTYPE_F32, s, d[0], d[1], d[2], d[3], d[4], d[5], d[7], &o));
    MF_ASSERT_OK(mf_npt_backward(ctx, MF_DTYPE_F32, s, d[0], d[1], d[2], d[3], d[4], d[6], d[8], d[9], d[10],
                                 d[11], d[12], d[13], &o));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    mf_case_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.op, sizeof r.op, "npt");
    snprintf(r.variant, sizeof r.variant, "torch");
    snprintf(r.dtype, sizeof r.dtype, "f32");
    snprintf(r.shape, sizeof r.shape, "%s", dir);
    int pass = 1;
    MF_ASSERT_OK(mf_tb_tensors_compare(ctx, t, 14, MF_DTYPE_F32, &r, &pass));
    mf_tb_tensors_free(ctx, t, 14);
    ck_assert_int_eq(r.n_outputs, 7);
    ck_assert_msg(pass, "%s vs torch: %s", dir, r.message);
}
END_TEST

/* The registry's view of the op: one variant, report's cases first. */
START_TEST(test_registry_entry)
{
    const mf_op_desc *op = mf_registry_find("npt");
    ck_assert_ptr_nonnull(op);
    ck_assert_int_eq(op->n_variants, 1);
    ck_assert_str_eq(op->variants[0], "factored");
    ck_assert_int_eq(mf_op_report_cases(op), 6);
    ck_assert_int_eq(op->n_cases, 116);
}
END_TEST

static Suite *npt_equiv_suite(void)
{
    Suite *s = suite_create("npt_equiv");
    mf_test_add_op_cases(s, "npt"); /* TCase factored: the built-in cases */
    TCase *tc = tcase_create("checks");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_budget_resolves_to_five_tokens, 0, 4);
    tcase_add_loop_test(tc, test_wrong_modulation_is_detected, 0, 2);
    tcase_add_loop_test(tc, test_kernel_matches_torch_factored, 0, 2);
    tcase_add_test(tc, test_registry_entry);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(npt_equiv_suite()); }
