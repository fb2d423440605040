/* Memory of the NPT fix (seed 004, issue 6): the formulas of
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
 *   - a scratch budget bounds the measured peak.
 */
#include "mf_test.h"

#include "memfix/npt.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
typedef struct peaks {
    size_t ref, opt;
} peaks;

/* Runs the reference and the kernel once on seeded inputs; returns the scratch
 * peaks (host for the reference, device for the kernel). */
static peaks measure(mf_npt_pass pass, mf_dtype dt, mf_npt_shape s, const mf_npt_options *opts)
{
    mf_context *ctx = mf_test_ctx();
    const int fwd = pass == MF_NPT_FORWARD;
    const size_t es = mf_dtype_size(dt);
    const size_t T = (size_t)(s.batch * s.seq), D = (size_t)s.d_model, F = (size_t)s.d_ffn,
                 R = (size_t)s.rank;
    const size_t in_n[6] = { T * D, D * F, D * R, R * F, T * R, fwd ? F : T * F };
    const size_t out_n[6] = { fwd ? T * F : T * D, D * F, D * R, R * F, T * R, F };
    const int n_out = fwd ? 1 : 6;
    void *in[6], *d_in[6], *out[6] = { NULL }, *d_out[6] = { NULL };
    for (int i = 0; i < 6; ++i) {
        in[i] = malloc(in_n[i] * es);
        ck_assert_ptr_nonnull(in[i]);
        if (dt == MF_DTYPE_F32)
            mf_fill_uniform_f32((float *)in[i], in_n[i], 77 + (uint64_t)i, -1.0f, 1.0f);
        else
            mf_fill_uniform_bf16((uint16_t *)in[i], in_n[i], 77 + (uint64_t)i, -1.0f, 1.0f);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, in_n[i] * es, &d_in[i]));
        MF_ASSERT_OK(mf_buffer_upload(ctx, d_in[i], in[i], in_n[i] * es));
    }
    for (int k = 0; k < n_out; ++k) {
        out[k] = malloc(out_n[k] * es);
        ck_assert_ptr_nonnull(out[k]);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, out_n[k] * es, &d_out[k]));
    }
    peaks p;
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    if (fwd)
        MF_ASSERT_OK(mf_ref_npt_forward(ctx, dt, s, in[0], in[1], in[2], in[3], in[4], in[5], out[0]));
    else
        MF_ASSERT_OK(mf_ref_npt_backward(ctx, dt, s, in[0], in[1], in[2], in[3], in[4], in[5], out[0], out[1],
                                         out[2], out[3], out[4], out[5]));
    p.ref = mf_mem_peak_delta(ctx, MF_MEM_HOST);
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    if (fwd)
        MF_ASSERT_OK(
            mf_npt_forward(ctx, dt, s, d_in[0], d_in[1], d_in[2], d_in[3], d_in[4], d_in[5], d_out[0], opts));
    else
        MF_ASSERT_OK(mf_npt_backward(ctx, dt, s, d_in[0], d_in[1], d_in[2], d_in[3], d_in[4], d_in[5],
                                     d_out[0], d_out[1], d_out[2], d_out[3], d_out[4], d_out[5], opts));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    p.opt = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    mf_mem_stats st;
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    ck_assert_uint_eq(st.current, st.baseline); /* the kernel freed its scratch */
    for (int k = 0; k < n_out; ++k) {
        free(out[k]);
        MF_ASSERT_OK(mf_buffer_free(ctx, d_out[k]));
    }
    for (int i = 0; i < 6; ++i) {
        free(in[i]);
        MF_ASSERT_OK(mf_buffer_free(ctx, d_in[i]));
    }
    return p;
}

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

/* _i: pass (2) x dtype (2). opt <= ceiling < ref, the reference's peak is its
 * formula, and the kernel never holds one token's d_model x d_ffn delta. */
START_TEST(test_optimized_within_ceiling_reference_exceeds)
{
    const mf_npt_pass pass = (_i / 2) ? MF_NPT_BACKWARD : MF_NPT_FORWARD;
    const mf_dtype dt = (_i % 2) ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const mf_npt_shape s = { 2, 9, 45, 61, 8 };
    const peaks p = measure(pass, dt, s, NULL);
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
    const peaks p1 = measure(pass, dt, s1, NULL), p4 = measure(pass, dt, s4, NULL);
    ck_assert_uint_le(p1.opt, ceiling(pass, dt, s1, NULL));
    ck_assert_uint_le(p4.opt, ceiling(pass, dt, s4, NULL));
    ck_assert_uint_lt(ceiling(pass, dt, s4, NULL), p4.ref);
    ck_assert_uint_eq(p4.ref, 4 * p1.ref);
    ck_assert_uint_gt(p4.opt, p1.opt);
    ck_assert_uint_le(p4.opt, 4 * p1.opt);

    mf_npt_options o;
    mf_npt_options_init(&o);
    o.chunk_tokens = 4;
    const peaks c1 = measure(pass, dt, s1, &o), c4 = measure(pass, dt, s4, &o);
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
    const peaks pn = measure(pass, MF_DTYPE_F32, narrow, NULL);
    const peaks pw = measure(pass, MF_DTYPE_F32, wide, NULL);
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
    const peaks p = measure(pass, dt, s, &o);
    ck_assert_uint_le(p.opt, o.scratch_budget_bytes);
    ck_assert_uint_le(p.opt, ceiling(pass, dt, s, &o));
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
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(npt_memory_suite()); }
