/* Memory of the linear attention fix (seed document 003): the header's formulas
 * at the document's shapes, measured scratch peaks (the cumsum reference holds
 * exactly its formula; the chunked kernels stay within their ceilings, and
 * ceiling < reference for the causal form), scaling at N and 2N (chunked:
 * independent of N apart from the O(N) row statistics; the cumsum reference:
 * linear in N with slope D*(Dv+1) doubles per position), and independence of
 * the chunk size. Every measurement is one of the op's built-in cases run
 * through the testbed (mf_test_op_case: the same run as `memfix report`'s,
 * outputs compared), the forward alone and forward + backward; every causal
 * report row has its ceiling below the reference's peak. */
#include "mf_test.h"

#include "memfix/attention.h"
#include "memfix/linear_attention.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>

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

/* The memory rows of the op's table (src/ops/linear_attention.c, rows 29-56):
 * pair k is row LA_MEM_ROW0 + 2k (the forward alone) and the next row (forward
 * then backward). */
#define LA_MEM_ROW0 29

/* Pair k through the testbed (equivalent, and opt <= ceiling, asserted there:
 * a kernel that skipped the work would trivially use no memory), checked to be
 * the shape the formulas are given. The forward row gives the forward's peaks;
 * the pair's peaks are the larger of its two passes', and each backward needs
 * more than its forward (asserted: the reference keeps twice the forward's
 * cumsum, the kernels the forward's states plus 8 bytes per position), so they
 * are the backward's. */
static peaks measure(int k, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                     mf_dtype dt)
{
    const mf_case_result f = mf_test_op_case("linear_attention", !causal, LA_MEM_ROW0 + 2 * k);
    const mf_case_result a = mf_test_op_case("linear_attention", !causal, LA_MEM_ROW0 + 2 * k + 1);
    char shape[128], c_opt[32] = "";
    if (causal) snprintf(c_opt, sizeof c_opt, "C=%lld ", (long long)chunk);
    snprintf(shape, sizeof shape, "B=%lld H=%lld N=%lld D=%lld Dv=%lld %sfwd", (long long)B, (long long)H,
             (long long)N, (long long)D, (long long)Dv, c_opt);
    ck_assert_str_eq(f.shape, shape);
    snprintf(shape, sizeof shape, "B=%lld H=%lld N=%lld D=%lld Dv=%lld %sfwd+bwd", (long long)B, (long long)H,
             (long long)N, (long long)D, (long long)Dv, c_opt);
    ck_assert_str_eq(a.shape, shape);
    ck_assert_str_eq(f.dtype, mf_dtype_name(dt));
    ck_assert_str_eq(a.dtype, mf_dtype_name(dt));
    ck_assert_uint_eq(f.ceiling_bytes, mf_linear_attention_scratch_ceiling(causal, 0, B, H, N, D, Dv));
    ck_assert_uint_eq(a.ceiling_bytes, mf_linear_attention_scratch_ceiling(causal, 1, B, H, N, D, Dv));
    ck_assert_uint_gt(a.ref_peak_bytes, f.ref_peak_bytes);
    ck_assert_uint_gt(a.opt_peak_bytes, f.opt_peak_bytes);
    const peaks p = { f.ref_peak_bytes, a.ref_peak_bytes, f.opt_peak_bytes, a.opt_peak_bytes };
    return p;
}

/* Shapes: N within one chunk; bf16 causal (tensor cores) with D = Dv = 64 and 128,
 * odd N spanning chunks of C = 64 and C = 128. */
static const struct {
    int64_t N, D, Dv, chunk;
    int pair; /* the first memory pair of the shape: pairs pair (f32), pair + 1 (bf16) for shape 0 */
} mem_shapes[] = { { 40, 16, 8, 16, 0 }, { 131, 64, 64, 64, 2 }, { 77, 128, 128, 128, 3 } };
START_TEST(test_measured_within_formulas)
{
    const int64_t B = 1, H = 2, N = mem_shapes[_i].N, D = mem_shapes[_i].D, Dv = mem_shapes[_i].Dv;
    for (int causal = 0; causal <= 1; causal++)
        for (int t = 0; t < 2; t++) {
            const mf_dtype dt = t ? MF_DTYPE_BF16 : MF_DTYPE_F32;
            if (_i > 0 && !(causal && t)) continue; /* the larger shapes: the tensor-core path */
            const peaks p = measure(mem_shapes[_i].pair + (_i == 0 ? t : 0), causal, mem_shapes[_i].chunk, B,
                                    H, N, D, Dv, dt);
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
    const peaks a = measure(4, 1, 16, B, H, N, D, Dv, MF_DTYPE_F32);
    const peaks b = measure(5, 1, 16, B, H, 2 * N, D, Dv, MF_DTYPE_F32);
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
    const peaks a = measure(6, 1, 64, B, H, N, D, Dv, MF_DTYPE_BF16);
    const peaks b = measure(7, 1, 64, B, H, 2 * N, D, Dv, MF_DTYPE_BF16);
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
    const int k = 8 + 3 * _i; /* pairs 8-10 f32, 11-13 bf16 */
    const peaks p16 = measure(k, 1, 16, B, H, N, D, Dv, dt);
    const peaks p64 = measure(k + 1, 1, 64, B, H, N, D, Dv, dt);
    const peaks p128 = measure(k + 2, 1, 128, B, H, N, D, Dv, dt);
    ck_assert_uint_eq(p16.opt_fwd, p64.opt_fwd);
    ck_assert_uint_eq(p16.opt_bwd, p64.opt_bwd);
    ck_assert_uint_eq(p128.opt_fwd, p64.opt_fwd);
    ck_assert_uint_eq(p128.opt_bwd, p64.opt_bwd);
    ck_assert_uint_le(p16.opt_fwd, mf_linear_attention_scratch_ceiling(1, 0, B, H, N, D, Dv));
    ck_assert_uint_le(p16.opt_bwd, mf_linear_attention_scratch_ceiling(1, 1, B, H, N, D, Dv));
}
END_TEST

/* `memfix report`'s causal rows: ceiling < the cumsum reference's peak at each. */
START_TEST(test_report_rows_ceiling_below_reference)
{
    const mf_op_desc *op = mf_registry_find("linear_attention");
    ck_assert_ptr_nonnull(op);
    for (int c = 0; c < mf_op_report_cases(op); c++) {
        const mf_case_result r = mf_test_op_case("linear_attention", 0, c);
        ck_assert_msg(r.ref_peak_bytes > r.ceiling_bytes, "case %d (%s %s): ceiling %zu >= reference %zu", c,
                      r.dtype, r.shape, r.ceiling_bytes, r.ref_peak_bytes);
    }
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
    tcase_add_test(m, test_report_rows_ceiling_below_reference);
    suite_add_tcase(s, m);
    return s;
}

int main(void) { return mf_test_run(linear_attention_memory_suite()); }
