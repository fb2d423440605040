/* Memory of the NPT fix (seed 004): the formulas of
 * include/memfix/npt.h and the scratch the reference and the factored kernel
 * actually take through the context's tracked allocators.
 *
 *   - the formulas at the document's shapes: the 4D delta_w of batch 4, seq 512,
 *     d_model 4096, d_ffn 11008 in fp32 is 92,341,796,864 elements = 344 GiB
 *     (the document says "~448 GB"; the computed value is asserted);
 *   - the optimized peak <= its ceiling < the reference's peak at the same
 *     shape, forward and backward, fp32 and bf16; the reference's peak is its
 *     formula exactly;
 *   - scaling: at two token counts the kernel grows with the tokens times the
 *     rank only (and not at all with a fixed chunk), the reference with
 *     tokens x d_model x d_ffn; widening d_model and d_ffn leaves the fp32
 *     kernel's scratch unchanged;
 *   - a scratch budget bounds the measured peak;
 *   - every case `memfix report` runs has a reference above the ceiling.
 * The measured cases are the op's built-in cases (src/ops/npt.c), run through
 * the testbed as `memfix report` runs them (equivalence asserted too).
 */
#include "mf_test.h"

#include "memfix/npt.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>

/* ---- formulas at the document's shapes (nothing allocated) ------------------- */
START_TEST(test_document_shapes_formula)
{
    /* 004_96b9c85fa124076d.txt: batch 4, seq 512, d_model 4096, d_ffn 11008; rank 16 ("Memory: ~32 KB
     * (for rank=16)"). */
    const mf_npt_shape doc = { 4, 512, 4096, 11008, 16 };
    /* The document says "~448 GB" for this tensor; its own shapes give
     * 4*512*4096*11008 = 92,341,796,864 elements, x 4 bytes = 344 GiB. */
    const size_t elements = (size_t)92341796864ull;
    ck_assert_uint_eq((size_t)4 * 512 * 4096 * 11008, elements);
    ck_assert_uint_eq(mf_npt_delta_w_bytes(MF_DTYPE_F32, doc), elements * 4);
    ck_assert_uint_eq(mf_npt_delta_w_bytes(MF_DTYPE_F32, doc), (size_t)344 << 30);
    ck_assert_uint_eq(mf_npt_delta_w_bytes(MF_DTYPE_F32, doc), (size_t)369367187456ull);
    ck_assert_uint_eq(mf_npt_delta_w_bytes(MF_DTYPE_BF16, doc), (size_t)172 << 30);
    /* The reference keeps delta_w in fp32: exactly the document's tensor forward,
     * delta_w and its gradient backward. */
    ck_assert_uint_eq(mf_ref_npt_forward_scratch_bytes(doc), (size_t)344 << 30);
    ck_assert_uint_eq(mf_ref_npt_backward_scratch_bytes(doc), (size_t)688 << 30);
    /* The document's per-token delta ("~180 MB per token", one token of batch 1):
     * 4096 * 11008 * 4 = 180,355,072 bytes. */
    const mf_npt_shape one = { 1, 1, 4096, 11008, 16 };
    ck_assert_uint_eq(mf_npt_delta_w_bytes(MF_DTYPE_F32, one), (size_t)180355072ull);
    /* The factored kernel at the document's shapes: T = 2048 tokens fit one chunk
     * (default 4096); forward u (fp32) and v: 2048 * 16 * 8 = 256 KiB. The
     * document's "~32 KB" modulation is batch 1: 512 * 16 * 4 bytes. */
    ck_assert_uint_eq(mf_npt_factored_forward_scratch_ceiling(MF_DTYPE_F32, doc, NULL),
                      (size_t)2048 * 16 * 8);
    ck_assert_uint_eq((size_t)512 * 16 * 4, (size_t)32 << 10);
    ck_assert_uint_eq(mf_npt_factored_backward_scratch_ceiling(MF_DTYPE_F32, doc, NULL),
                      (size_t)2048 * 16 * 16);
    ck_assert_uint_eq(mf_npt_factored_backward_scratch_ceiling(MF_DTYPE_BF16, doc, NULL),
                      (size_t)2048 * 16 * 12 + (size_t)(4096 + 11008) * 16 * 4);
    /* > 400x (the document's claim): here over a million times less. */
    ck_assert_uint_gt(mf_ref_npt_forward_scratch_bytes(doc) /
                          mf_npt_factored_forward_scratch_ceiling(MF_DTYPE_F32, doc, NULL),
                      (size_t)1000000);
}
END_TEST

/* With many tokens the chunk caps the ceiling: 1M tokens, default chunk. */
START_TEST(test_chunk_caps_the_ceiling)
{
    const mf_npt_shape big = { 64, 16384, 4096, 11008, 64 }; /* T = 1,048,576 */
    int64_t c = 0;
    MF_ASSERT_OK(mf_npt_resolve_chunk(MF_NPT_FORWARD, MF_DTYPE_BF16, big, NULL, &c));
    ck_assert_int_eq(c, MF_NPT_DEFAULT_CHUNK_TOKENS);
    ck_assert_uint_eq(mf_npt_factored_forward_scratch_ceiling(MF_DTYPE_BF16, big, NULL),
                      (size_t)MF_NPT_DEFAULT_CHUNK_TOKENS * 64 * 6);
    /* a budget: the largest chunk that fits */
    mf_npt_options o;
    mf_npt_options_init(&o);
    o.scratch_budget_bytes = (size_t)1 << 20;
    MF_ASSERT_OK(mf_npt_resolve_chunk(MF_NPT_BACKWARD, MF_DTYPE_F32, big, &o, &c));
    ck_assert_int_eq(c, ((int64_t)1 << 20) / (64 * 16));
    ck_assert_uint_le(mf_npt_factored_backward_scratch_ceiling(MF_DTYPE_F32, big, &o),
                      o.scratch_budget_bytes);
}
END_TEST

/* ---- measured peaks ---------------------------------------------------------------- */
/* The memory cases of the op's table (src/ops/npt.c, cases 88..115), each in
 * the order forward f32, forward bf16, backward f32, backward bf16 (the width
 * cases: fp32 forward, backward). */
#define CASE_CEILING 88 /* 2 x 9, 45 x 61, rank 8 */
#define CASE_TOKENS 92  /* 6 then 24 tokens of 23 x 29, rank 16: one chunk, then chunks of 4 */
#define CASE_WIDTH 108  /* 2 x 5, rank 8: 12 x 10 then 48 x 40 */
#define CASE_BUDGET 112 /* 3 x 7, 17 x 19, rank 16: a budget of the ceiling at chunks of 7 + 5 bytes */

typedef struct peaks {
    size_t ref, opt;
} peaks;

static size_t ceiling(mf_npt_pass pass, mf_dtype dt, mf_npt_shape s, const mf_npt_options *o)
{
    return pass == MF_NPT_FORWARD ? mf_npt_factored_forward_scratch_ceiling(dt, s, o)
                                  : mf_npt_factored_backward_scratch_ceiling(dt, s, o);
}

static size_t ref_formula(mf_npt_pass pass, mf_npt_shape s)
{
    return pass == MF_NPT_FORWARD ? mf_ref_npt_forward_scratch_bytes(s)
                                  : mf_ref_npt_backward_scratch_bytes(s);
}

/* Case c of the op through the testbed (equivalent, and opt <= ceiling asserted
 * there: a kernel that skipped the work would trivially use no memory), checked
 * to be the pass, dtype, shape and options given (forward cases have a bias);
 * returns the scratch peaks (host for the reference, device for the kernel).
 * The kernel freed its scratch: the device's current bytes are back where they
 * were. */
static peaks measure(int c, mf_npt_pass pass, mf_dtype dt, mf_npt_shape s, const mf_npt_options *opts)
{
    mf_mem_stats st;
    MF_ASSERT_OK(mf_mem_stats_get(mf_test_ctx(), MF_MEM_DEVICE, &st));
    const size_t before = st.current;
    const mf_case_result r = mf_test_op_case("npt", 0, c);
    MF_ASSERT_OK(mf_mem_stats_get(mf_test_ctx(), MF_MEM_DEVICE, &st));
    ck_assert_uint_eq(st.current, before);
    int64_t chunk = 0;
    MF_ASSERT_OK(mf_npt_resolve_chunk(pass, dt, s, opts, &chunk));
    char want[192];
    const int fwd = pass == MF_NPT_FORWARD;
    int len = snprintf(want, sizeof want, "%s Bt=%lld S=%lld D=%lld F=%lld r=%lld%s chunk=%lld",
                       fwd ? "fwd" : "bwd", (long long)s.batch, (long long)s.seq, (long long)s.d_model,
                       (long long)s.d_ffn, (long long)s.rank, fwd ? " bias" : "", (long long)chunk);
    if (opts != NULL && opts->scratch_budget_bytes > 0)
        snprintf(want + len, sizeof want - (size_t)len, " budget=%zu", opts->scratch_budget_bytes);
    ck_assert_str_eq(r.shape, want);
    ck_assert_str_eq(r.dtype, mf_dtype_name(dt));
    ck_assert_uint_eq(r.ceiling_bytes, ceiling(pass, dt, s, opts));
    const peaks p = { r.ref_peak_bytes, r.opt_peak_bytes };
    return p;
}

/* _i: pass (2) x dtype (2). opt <= ceiling < ref, the reference's peak is its
 * formula, and the kernel never holds one token's d_model x d_ffn delta. */
START_TEST(test_optimized_within_ceiling_reference_exceeds)
{
    const mf_npt_pass pass = (_i / 2) ? MF_NPT_BACKWARD : MF_NPT_FORWARD;
    const mf_dtype dt = (_i % 2) ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_npt_shape s = { 2, 9, 45, 61, 8 };
    const peaks p = measure(CASE_CEILING + (int)_i, pass, dt, s, NULL);
    const size_t ceil = ceiling(pass, dt, s, NULL);
    ck_assert_uint_gt(p.opt, 0);
    ck_assert_uint_le(p.opt, ceil);
    ck_assert_uint_lt(ceil, p.ref);
    ck_assert_uint_eq(p.ref, ref_formula(pass, s));
    ck_assert_uint_lt(p.opt, (size_t)s.d_model * (size_t)s.d_ffn * 4); /* one token's delta_w */
}
END_TEST

/* _i: pass (2) x dtype (2). Four times the tokens: the kernel's peak grows
 * with the tokens (one chunk) and the reference's by 4x; with a fixed chunk
 * the kernel's peak does not grow at all. */
START_TEST(test_scaling_with_tokens)
{
    const mf_npt_pass pass = (_i / 2) ? MF_NPT_BACKWARD : MF_NPT_FORWARD;
    const mf_dtype dt = (_i % 2) ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_npt_shape s1 = { 1, 6, 23, 29, 16 }, s4 = { 2, 12, 23, 29, 16 };
    const int c = CASE_TOKENS + 4 * (int)_i;
    const peaks p1 = measure(c, pass, dt, s1, NULL), p4 = measure(c + 1, pass, dt, s4, NULL);
    ck_assert_uint_le(p1.opt, ceiling(pass, dt, s1, NULL));
    ck_assert_uint_le(p4.opt, ceiling(pass, dt, s4, NULL));
    ck_assert_uint_lt(ceiling(pass, dt, s4, NULL), p4.ref);
    ck_assert_uint_eq(p4.ref, 4 * p1.ref);
    ck_assert_uint_gt(p4.opt, p1.opt);
    ck_assert_uint_le(p4.opt, 4 * p1.opt);

    mf_npt_options o;
    mf_npt_options_init(&o);
    o.chunk_tokens = 4;
    const peaks c1 = measure(c + 2, pass, dt, s1, &o), c4 = measure(c + 3, pass, dt, s4, &o);
    ck_assert_uint_eq(c1.opt, c4.opt);
    ck_assert_uint_le(c4.opt, ceiling(pass, dt, s4, &o));
    ck_assert_uint_eq(ceiling(pass, dt, s1, &o), ceiling(pass, dt, s4, &o));
}
END_TEST

/* _i: pass (2). Wider d_model and d_ffn: the fp32 kernel's scratch does not
 * change (no d_model x d_ffn term), the reference's grows with their product. */
START_TEST(test_scaling_with_width)
{
    const mf_npt_pass pass = _i ? MF_NPT_BACKWARD : MF_NPT_FORWARD;
    const mf_npt_shape narrow = { 2, 5, 12, 10, 8 }, wide = { 2, 5, 48, 40, 8 };
    const peaks pn = measure(CASE_WIDTH + 2 * (int)_i, pass, MF_DTYPE_F32, narrow, NULL);
    const peaks pw = measure(CASE_WIDTH + 2 * (int)_i + 1, pass, MF_DTYPE_F32, wide, NULL);
    ck_assert_uint_eq(pn.opt, pw.opt);
    ck_assert_uint_eq(pw.ref, 16 * pn.ref);
    ck_assert_uint_le(pw.opt, ceiling(pass, MF_DTYPE_F32, wide, NULL));
}
END_TEST

/* _i: pass (2) x dtype (2). A scratch budget bounds the measured peak. */
START_TEST(test_budget_bounds_peak)
{
    const mf_npt_pass pass = (_i / 2) ? MF_NPT_BACKWARD : MF_NPT_FORWARD;
    const mf_dtype dt = (_i % 2) ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_npt_shape s = { 3, 7, 17, 19, 16 };
    mf_npt_options o;
    mf_npt_options_init(&o);
    o.chunk_tokens = 7; /* a third of the 21 tokens */
    o.scratch_budget_bytes = ceiling(pass, dt, s, &o) + 5;
    o.chunk_tokens = 0; /* now the chunk comes from the budget */
    int64_t c = 0;
    MF_ASSERT_OK(mf_npt_resolve_chunk(pass, dt, s, &o, &c));
    ck_assert_int_eq(c, 7);
    const peaks p = measure(CASE_BUDGET + (int)_i, pass, dt, s, &o);
    ck_assert_uint_le(p.opt, o.scratch_budget_bytes);
    ck_assert_uint_le(p.opt, ceiling(pass, dt, s, &o));
}
END_TEST

/* What `memfix report --op npt` runs: the reference exceeds the ceiling there too. */
START_TEST(test_report_cases_reference_exceeds)
{
    const mf_op_desc *op = mf_registry_find("npt");
    ck_assert_ptr_nonnull(op);
    for (int c = 0; c < mf_op_report_cases(op); ++c) {
        const mf_case_result r = mf_test_op_case("npt", 0, c);
        ck_assert_msg(r.ref_peak_bytes > r.ceiling_bytes, "npt case %d (%s %s): reference %zu <= ceiling %zu",
                      c, r.dtype, r.shape, r.ref_peak_bytes, r.ceiling_bytes);
    }
}
END_TEST

static Suite *npt_memory_suite(void)
{
    Suite *s = suite_create("npt_memory");
    TCase *tc = tcase_create("formulas");
    tcase_add_test(tc, test_document_shapes_formula);
    tcase_add_test(tc, test_chunk_caps_the_ceiling);
    suite_add_tcase(s, tc);

    tc = tcase_create("measured");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_optimized_within_ceiling_reference_exceeds, 0, 4);
    tcase_add_loop_test(tc, test_scaling_with_tokens, 0, 4);
    tcase_add_loop_test(tc, test_scaling_with_width, 0, 2);
    tcase_add_loop_test(tc, test_budget_bounds_peak, 0, 4);
    tcase_add_test(tc, test_report_cases_reference_exceeds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(npt_memory_suite()); }
