/* Memory of the linear attention fix (seed document 003): the header's formulas
 * at the document's shapes, measured scratch peaks (the cumsum reference holds
 * exactly its formula; the chunked kernels stay within their ceilings, and
 * ceiling < reference for the causal form), scaling at N and 2N (chunked:
 * independent of N apart from the O(N) row statistics; the cumsum reference:
 * linear in N with slope D*(Dv+1) doubles per position), and independence of
 * the chunk size. */
#include "mf_test.h"

#include "memfix/attention.h"
#include "memfix/linear_attention.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

START_TEST(test_formulas_at_document_shape)
{
    /* B=4, H=8, N=8192, D=Dv=64 (the document's shapes). The cumsum reference
     * holds kv_cumsum + k_cumsum in doubles: 8 * 4*8*8192*64*65 bytes. */
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(1, 0, 4, 8, 8192, 64, 64), 8724152320ull);
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(1, 1, 4, 8, 8192, 64, 64), 17448304640ull);
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(0, 0, 4, 8, 8192, 64, 64), 1064960u);
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(0, 1, 4, 8, 8192, 64, 64), 2129920u);
    /* chunk states: 4 * B*H*ceil(N/512)*D*(Dv+1) = 4*4*8*16*64*65; the backward
     * adds den_n, dd_n: 8 * B*H*N */
    ck_assert_uint_eq(mf_linear_attention_scratch_ceiling(1, 0, 4, 8, 8192, 64, 64), 8519680u);
    ck_assert_uint_eq(mf_linear_attention_scratch_ceiling(1, 1, 4, 8, 8192, 64, 64), 8519680u + 2097152u);
    ck_assert_uint_eq(mf_linear_attention_scratch_ceiling(0, 0, 4, 8, 8192, 64, 64), 0);
    ck_assert_uint_eq(mf_linear_attention_scratch_ceiling(0, 1, 4, 8, 8192, 64, 64),
                      4u * 32 * 33 * 64 + 2097152u);
    /* 1/1024 of the cumsum reference at this shape */
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(1, 0, 4, 8, 8192, 64, 64),
                      1024 * mf_linear_attention_scratch_ceiling(1, 0, 4, 8, 8192, 64, 64));
    ck_assert_uint_lt(mf_linear_attention_scratch_ceiling(1, 0, 4, 8, 8192, 64, 64),
                      mf_ref_linear_attention_scratch_bytes(1, 0, 4, 8, 8192, 64, 64));
    ck_assert_uint_lt(mf_linear_attention_scratch_ceiling(1, 1, 4, 8, 8192, 64, 64),
                      mf_ref_linear_attention_scratch_bytes(1, 1, 4, 8, 8192, 64, 64));
    /* The reference's kv_cumsum is the document's "Cumulative KV" (B*H*N*D*D
     * elements) in doubles: 4x the fp16 bytes of the table, which are
     * 2,147,483,648 (2.1 GB; the document's prose says "17 GB"). */
    mf_attention_memory_row r;
    MF_ASSERT_OK(mf_attention_theoretical_memory(4, 8, 8192, 64, 2, &r));
    ck_assert_uint_eq(r.linear_causal_state, 2147483648ull);
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(1, 0, 4, 8, 8192, 64, 64),
                      4 * r.linear_causal_state + 8ull * 4 * 8 * 8192 * 64 /* k_cumsum */);
    /* bidir: kv (the document's "KV state", 0.26 MB in fp16, "2 MB" in its prose) */
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(0, 0, 4, 8, 8192, 64, 64),
                      4 * r.linear_bidir_state + 8ull * 4 * 8 * 64 /* k_sum */);
    /* invalid and overflowing shapes */
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(1, 0, 4, 8, 0, 64, 64), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(1, 0, 4, 8, 16, 0, 64), SIZE_MAX);
    ck_assert_uint_eq(mf_linear_attention_scratch_ceiling(1, 1, 4, 8, 16, 64, -1), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_linear_attention_scratch_bytes(1, 1, INT64_C(1) << 30, 1024, 1 << 20, 64, 64),
                      SIZE_MAX);
    ck_assert_int_eq(mf_linear_attention_chunk_valid(16), 1);
    ck_assert_int_eq(mf_linear_attention_chunk_valid(128), 1);
    ck_assert_int_eq(mf_linear_attention_chunk_valid(0), 0);
    ck_assert_int_eq(mf_linear_attention_chunk_valid(8), 0);
    ck_assert_int_eq(mf_linear_attention_chunk_valid(48), 0);
    ck_assert_int_eq(mf_linear_attention_chunk_valid(256), 0);
}
END_TEST

typedef struct peaks {
    size_t ref_fwd, ref_bwd, opt_fwd, opt_bwd;
} peaks;

static peaks measure(int causal, int64_t chunk, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                     mf_dtype dt)
{
    mf_context *ctx = mf_test_ctx();
    const size_t rows = (size_t)(B * H * N), nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const size_t es = mf_dtype_size(dt);
    void *q = malloc(nqk * es), *k = malloc(nqk * es), *v = malloc(nv * es), *dout = malloc(nv * es);
    float *out = malloc(nv * 4), *dq = malloc(nqk * 4), *dk = malloc(nqk * 4), *dv = malloc(nv * 4);
    ck_assert(q && k && v && dout && out && dq && dk && dv);
    mf_test_fill_uniform(dt, q, nqk, 1, -1.f, 1.f);
    mf_test_fill_uniform(dt, k, nqk, 2, -1.f, 1.f);
    mf_test_fill_uniform(dt, v, nv, 3, -1.f, 1.f);
    mf_test_fill_uniform(dt, dout, nv, 4, -1.f, 1.f);
    peaks p;
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    MF_ASSERT_OK(mf_ref_linear_attention_forward(ctx, dt, causal, B, H, N, D, Dv, q, k, v, NULL, out));
    p.ref_fwd = mf_mem_peak_delta(ctx, MF_MEM_HOST);
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    MF_ASSERT_OK(mf_ref_linear_attention_backward(ctx, dt, causal, B, H, N, D, Dv, q, k, v, dout, NULL, NULL,
                                                  dq, dk, dv));
    p.ref_bwd = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    void *d_q, *d_k, *d_v, *d_do, *d_out, *d_dq, *d_dk, *d_dv;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, nqk * es, &d_q));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, nqk * es, &d_k));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, nv * es, &d_v));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, nv * es, &d_do));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, nv * 4, &d_out));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, nqk * 4, &d_dq));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, nqk * 4, &d_dk));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, nv * 4, &d_dv));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_q, q, nqk * es));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_k, k, nqk * es));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_v, v, nv * es));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_do, dout, nv * es));
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(
        mf_linear_attention_forward(ctx, dt, causal, chunk, B, H, N, D, Dv, d_q, d_k, d_v, NULL, d_out));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    p.opt_fwd = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(mf_linear_attention_backward(ctx, dt, causal, chunk, B, H, N, D, Dv, d_q, d_k, d_v, d_out,
                                              d_do, NULL, NULL, d_dq, d_dk, d_dv));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    p.opt_bwd = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    void *dev[] = { d_q, d_k, d_v, d_do, d_out, d_dq, d_dk, d_dv };
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) MF_ASSERT_OK(mf_buffer_free(ctx, dev[i]));
    void *host[] = { q, k, v, dout, out, dq, dk, dv };
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) free(host[i]);
    return p;
}

/* Shapes: N within one chunk; bf16 causal (tensor cores) with D = Dv = 64 and 128,
 * odd N spanning chunks of C = 64 and C = 128. */
static const struct {
    int64_t N, D, Dv, chunk;
} mem_shapes[] = { { 40, 16, 8, 16 }, { 131, 64, 64, 64 }, { 77, 128, 128, 128 } };
START_TEST(test_measured_within_formulas)
{
    const int64_t B = 1, H = 2, N = mem_shapes[_i].N, D = mem_shapes[_i].D, Dv = mem_shapes[_i].Dv;
    for (int causal = 0; causal <= 1; causal++)
        for (int t = 0; t < 2; t++) {
            const mf_dtype dt = t ? MF_DTYPE_BF16 : MF_DTYPE_F32;
            if (_i > 0 && !(causal && t)) continue; /* the larger shapes: the tensor-core path */
            const peaks p = measure(causal, mem_shapes[_i].chunk, B, H, N, D, Dv, dt);
            ck_assert_uint_eq(p.ref_fwd, mf_ref_linear_attention_scratch_bytes(causal, 0, B, H, N, D, Dv));
            ck_assert_uint_eq(p.ref_bwd, mf_ref_linear_attention_scratch_bytes(causal, 1, B, H, N, D, Dv));
            ck_assert_uint_le(p.opt_fwd, mf_linear_attention_scratch_ceiling(causal, 0, B, H, N, D, Dv));
            ck_assert_uint_le(p.opt_bwd, mf_linear_attention_scratch_ceiling(causal, 1, B, H, N, D, Dv));
            /* ceiling < reference (at N = 40 also for the bidirectional form:
             * N < 2*D*(Dv+1) = 288) */
            if (causal && t) { /* the tensor-core path holds its chunk states: exactly the ceiling */
                ck_assert_uint_gt(p.opt_fwd, 0);
                ck_assert_uint_eq(p.opt_fwd, mf_linear_attention_scratch_ceiling(causal, 0, B, H, N, D, Dv));
                ck_assert_uint_eq(p.opt_bwd, mf_linear_attention_scratch_ceiling(causal, 1, B, H, N, D, Dv));
            }
            ck_assert_uint_lt(mf_linear_attention_scratch_ceiling(causal, 0, B, H, N, D, Dv), p.ref_fwd);
            ck_assert_uint_lt(mf_linear_attention_scratch_ceiling(causal, 1, B, H, N, D, Dv), p.ref_bwd);
        }
}
END_TEST

START_TEST(test_scaling_n_and_2n)
{
    const int64_t B = 1, H = 2, D = 16, Dv = 12, N = 40;
    const peaks a = measure(1, 16, B, H, N, D, Dv, MF_DTYPE_F32);
    const peaks b = measure(1, 16, B, H, 2 * N, D, Dv, MF_DTYPE_F32);
    /* cumsum reference: linear in N with D*(Dv+1) doubles per position (and
     * per (b, h)), twice that for the backward */
    ck_assert_uint_eq(b.ref_fwd, 2 * a.ref_fwd);
    ck_assert_uint_eq(b.ref_fwd - a.ref_fwd, (size_t)(8 * B * H * N * D * (Dv + 1)));
    ck_assert_uint_eq(b.ref_bwd - a.ref_bwd, (size_t)(16 * B * H * N * D * (Dv + 1)));
    /* chunked fp32: forward needs nothing at any N; the backward grows by its
     * O(N) row statistics (8 bytes per position) and one z per 256 positions,
     * never by D*Dv per position */
    ck_assert_uint_eq(a.opt_fwd, 0);
    ck_assert_uint_eq(b.opt_fwd, 0);
    ck_assert_uint_le(b.opt_bwd - a.opt_bwd, (size_t)(8 * B * H * N + 4 * B * H * D));
    ck_assert_uint_lt(b.opt_bwd - a.opt_bwd, (size_t)(B * H * N * D * Dv));
    ck_assert_uint_le(b.opt_bwd, mf_linear_attention_scratch_ceiling(1, 1, B, H, 2 * N, D, Dv));
}
END_TEST

/* The tensor-core path (bf16 causal) at N and 2N (N = 400: 1 and 2 chunks of 512):
 * one D x (Dv+1) fp32 state per 512 positions, 1/1024 of the cumsum's 8*D*(Dv+1)
 * per position; both exactly the ceiling (one state per 512 positions), the
 * ceiling below the reference at both sizes. */
START_TEST(test_scaling_tensor_core)
{
    const int64_t B = 1, H = 2, D = 16, Dv = 12, N = 400;
    const peaks a = measure(1, 64, B, H, N, D, Dv, MF_DTYPE_BF16);
    const peaks b = measure(1, 64, B, H, 2 * N, D, Dv, MF_DTYPE_BF16);
    ck_assert_uint_eq(a.opt_fwd, (size_t)(4 * B * H * 1 * D * (Dv + 1)));
    ck_assert_uint_eq(b.opt_fwd, (size_t)(4 * B * H * 2 * D * (Dv + 1)));
    ck_assert_uint_eq(b.opt_bwd - a.opt_bwd, (size_t)(4 * B * H * D * (Dv + 1) + 8 * B * H * N));
    ck_assert_uint_eq(a.opt_fwd, mf_linear_attention_scratch_ceiling(1, 0, B, H, N, D, Dv));
    ck_assert_uint_eq(b.opt_fwd, mf_linear_attention_scratch_ceiling(1, 0, B, H, 2 * N, D, Dv));
    ck_assert_uint_eq(a.opt_bwd, mf_linear_attention_scratch_ceiling(1, 1, B, H, N, D, Dv));
    ck_assert_uint_eq(b.opt_bwd, mf_linear_attention_scratch_ceiling(1, 1, B, H, 2 * N, D, Dv));
    ck_assert_uint_lt(mf_linear_attention_scratch_ceiling(1, 1, B, H, N, D, Dv), a.ref_bwd);
    ck_assert_uint_lt(mf_linear_attention_scratch_ceiling(1, 0, B, H, N, D, Dv), a.ref_fwd);
    ck_assert_uint_lt(mf_linear_attention_scratch_ceiling(1, 1, B, H, 2 * N, D, Dv), b.ref_bwd);
    ck_assert_uint_lt(mf_linear_attention_scratch_ceiling(1, 0, B, H, 2 * N, D, Dv), b.ref_fwd);
}
END_TEST

/* Chunk states are kept per 512 (z per 256) rows whatever C: every C needs the same scratch,
 * within the ceiling. */
START_TEST(test_chunk_size_independent)
{
    const int64_t B = 1, H = 1, N = 70, D = 8, Dv = 8;
    const mf_dtype dt = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const peaks p16 = measure(1, 16, B, H, N, D, Dv, dt);
    const peaks p64 = measure(1, 64, B, H, N, D, Dv, dt);
    const peaks p128 = measure(1, 128, B, H, N, D, Dv, dt);
    ck_assert_uint_eq(p16.opt_fwd, p64.opt_fwd);
    ck_assert_uint_eq(p16.opt_bwd, p64.opt_bwd);
    ck_assert_uint_eq(p128.opt_fwd, p64.opt_fwd);
    ck_assert_uint_eq(p128.opt_bwd, p64.opt_bwd);
    ck_assert_uint_le(p16.opt_fwd, mf_linear_attention_scratch_ceiling(1, 0, B, H, N, D, Dv));
    ck_assert_uint_le(p16.opt_bwd, mf_linear_attention_scratch_ceiling(1, 1, B, H, N, D, Dv));
}
END_TEST

static Suite *linear_attention_memory_suite(void)
{
    Suite *s = suite_create("linear_attention_memory");
    TCase *f = tcase_create("formulas");
    tcase_add_test(f, test_formulas_at_document_shape);
    suite_add_tcase(s, f);
    TCase *m = tcase_create("measured");
    tcase_add_checked_fixture(m, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(m, test_measured_within_formulas, 0, 3);
    tcase_add_test(m, test_scaling_n_and_2n);
    tcase_add_test(m, test_scaling_tensor_core);
    tcase_add_loop_test(m, test_chunk_size_independent, 0, 2);
    suite_add_tcase(s, m);
    return s;
}

int main(void) { return mf_test_run(linear_attention_memory_suite()); }
