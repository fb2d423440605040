/* Memory of the attention fix (seed document 003): the header's formulas at the
 * document's shapes, measured scratch peaks (reference: host scratch equals
 * its formula exactly; tiled: device scratch within its ceiling, and
 * ceiling < reference), scaling at N and 2N (tiled at most linear, the
 * reference exactly quadratic), and the document's theoretical memory table
 * (B=4, H=8, D=64, fp16, N = 512..8192) with the true values. The bf16
 * tensor-core path (D = Dv = 64, 128) against the same ceilings. Every
 * measurement is one of the op's built-in memory rows run through the testbed
 * (mf_test_op_case_unlisted: outputs compared), the forward alone and forward
 * + backward. */
#include "mf_test.h"

#include "memfix/attention.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>

/* ---- formulas at the document's shape (never allocated) ------------------------ */
START_TEST(test_formulas_at_document_shape)
{
    /* B=4, H=8, N=8192: the reference's double scores are 8*4*8*8192^2 bytes. */
    ck_assert_uint_eq(mf_ref_attention_forward_scratch_bytes(4, 8, 8192), 17179869184ull);
    ck_assert_uint_eq(mf_ref_attention_backward_scratch_bytes(4, 8, 8192), 34359738368ull);
    ck_assert_uint_eq(mf_attention_tiled_forward_scratch_ceiling(4, 8, 8192), 0);
    ck_assert_uint_eq(mf_attention_tiled_backward_scratch_ceiling(4, 8, 8192), 1048576u);
    ck_assert_uint_lt(mf_attention_tiled_backward_scratch_ceiling(4, 8, 8192),
                      mf_ref_attention_forward_scratch_bytes(4, 8, 8192));
    /* Invalid and overflowing shapes. */
    ck_assert_uint_eq(mf_ref_attention_forward_scratch_bytes(0, 8, 8192), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_attention_backward_scratch_bytes(4, -1, 8192), SIZE_MAX);
    ck_assert_uint_eq(mf_attention_tiled_backward_scratch_ceiling(4, 8, 0), SIZE_MAX);
    ck_assert_uint_eq(mf_attention_tiled_forward_scratch_ceiling(4, 8, 0), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_attention_forward_scratch_bytes(1, 1, INT64_C(1) << 31), SIZE_MAX);
}
END_TEST

/* ---- the document's table ---------------------------------------------------------- */
START_TEST(test_document_table_true_values)
{
    const int64_t B = 4, H = 8, D = 64;
    const size_t e = 2; /* fp16 */
    const int64_t ns[] = { 512, 1024, 2048, 4096, 8192 };
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        const int64_t N = ns[t];
        mf_attention_memory_row r;
        MF_ASSERT_OK(mf_attention_theoretical_memory(B, H, N, D, e, &r));
        const size_t n = (size_t)N;
        ck_assert_int_eq(r.seq_len, N);
        ck_assert_uint_eq(r.inputs, 3u * 4u * 8u * n * 64u * 2u);
        ck_assert_uint_eq(r.standard_scores, 4u * 8u * n * n * 2u);
        ck_assert_uint_eq(r.standard_peak, r.inputs + r.standard_scores);
        ck_assert_uint_eq(r.linear_bidir_state, 262144u); /* independent of N */
        ck_assert_uint_eq(r.linear_bidir_peak, r.inputs + 262144u);
        ck_assert_uint_eq(r.linear_causal_state, 4u * 8u * n * 64u * 64u * 2u);
        ck_assert_uint_eq(r.linear_causal_peak, r.inputs + r.linear_causal_state);
        /* "Linear causal can be worse!": the cumsum state is D*D/N times the
         * scores, i.e. worse than standard attention for N < D*D = 4096, equal
         * at 4096, better beyond. */
        if (N < D * D)
            ck_assert_uint_gt(r.linear_causal_state, r.standard_scores);
        else if (N == D * D)
            ck_assert_uint_eq(r.linear_causal_state, r.standard_scores);
        else
            ck_assert_uint_lt(r.linear_causal_state, r.standard_scores);
    }
    mf_attention_memory_row r;
    MF_ASSERT_OK(mf_attention_theoretical_memory(B, H, 8192, D, e, &r));
    /* Document: "4 x 8 x 8192^2 x 2 = 4.3 GB just for attention scores" (right). */
    ck_assert_uint_eq(r.standard_scores, 4294967296ull);
    /* Document: "4 x 8 x 64 x 64 x 2 = 2 MB regardless of N". The product is
     * 262,144 bytes = 0.26 MB: the document's figure is 8x too large. */
    ck_assert_uint_eq(r.linear_bidir_state, 262144u);
    ck_assert_uint_lt(r.linear_bidir_state, 2000000u / 7u);
    /* Document: "4 x 8 x 8192 x 64 x 64 x 2 = 17 GB (worse than standard!)". The
     * product is 2,147,483,648 bytes = 2.1 GB (8x smaller than stated), and at
     * N = 8192 it is half the 4.3 GB of scores, not worse. */
    ck_assert_uint_eq(r.linear_causal_state, 2147483648ull);
    ck_assert_uint_lt(r.linear_causal_state, r.standard_scores);
    /* The document's theoretical_memory prints MB = bytes / 1e6. */
    ck_assert_uint_eq(r.inputs, 100663296u); /* 100.7 MB */
    ck_assert_uint_eq(r.standard_peak, 4395630592ull);
    ck_assert_uint_eq(r.linear_causal_peak, 2248146944ull);

    MF_ASSERT_STATUS(mf_attention_theoretical_memory(4, 8, 8192, 64, 2, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_attention_theoretical_memory(4, 8, 0, 64, 2, &r), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_attention_theoretical_memory(4, 8, 8192, 0, 2, &r), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_attention_theoretical_memory(4, 8, 8192, 64, 0, &r), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_attention_theoretical_memory(INT64_C(1) << 40, 8, INT64_C(1) << 20, 64, 2, &r),
                     MF_ERR_OVERFLOW);
}
END_TEST

/* ---- measured peaks ----------------------------------------------------------------- */
typedef struct peaks {
    size_t ref_fwd, ref_bwd, opt_fwd, opt_bwd;
} peaks;

/* The memory rows of the op's table (src/ops/attention.c, rows 23-50, kept out
 * of the sweeps by its case_applies): pair k is row ATTENTION_MEM_ROW0 + 2k (the
 * forward alone) and the next row (forward then backward). */
#define ATTENTION_MEM_ROW0 23

/* Pair k through the testbed (mf_test_op_case_unlisted: outputs compared, and
 * opt <= ceiling asserted there; a kernel that skipped the work would trivially
 * use no memory), checked to be the shape the formulas are given. The forward
 * row gives the forward's peaks; the pair's peaks are the larger of its two
 * passes' (each pass frees its scratch), and each backward needs at least its
 * forward's (asserted: the reference keeps twice the forward's N x N doubles,
 * the kernels Delta against none), so they are the backward's. */
static peaks measure(int k, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv, int causal, mf_dtype dt)
{
    const mf_case_result f =
        mf_test_op_case_unlisted("attention", MF_ATTENTION_TILED, ATTENTION_MEM_ROW0 + 2 * k);
    const mf_case_result a =
        mf_test_op_case_unlisted("attention", MF_ATTENTION_TILED, ATTENTION_MEM_ROW0 + 2 * k + 1);
    char shape[160];
    snprintf(shape, sizeof shape, "B=%lld H=%lld N=%lld D=%lld Dv=%lld causal=%d fwd", (long long)B,
             (long long)H, (long long)N, (long long)D, (long long)Dv, causal);
    ck_assert_str_eq(f.shape, shape);
    snprintf(shape, sizeof shape, "B=%lld H=%lld N=%lld D=%lld Dv=%lld causal=%d fwd+bwd", (long long)B,
             (long long)H, (long long)N, (long long)D, (long long)Dv, causal);
    ck_assert_str_eq(a.shape, shape);
    ck_assert_str_eq(f.dtype, mf_dtype_name(dt));
    ck_assert_str_eq(a.dtype, mf_dtype_name(dt));
    ck_assert_uint_eq(f.ceiling_bytes, mf_attention_tiled_forward_scratch_ceiling(B, H, N));
    ck_assert_uint_eq(a.ceiling_bytes, mf_attention_tiled_backward_scratch_ceiling(B, H, N));
    ck_assert_uint_gt(a.ref_peak_bytes, f.ref_peak_bytes);
    ck_assert_uint_ge(a.opt_peak_bytes, f.opt_peak_bytes);
    const peaks p = { f.ref_peak_bytes, a.ref_peak_bytes, f.opt_peak_bytes, a.opt_peak_bytes };
    return p;
}

START_TEST(test_measured_within_formulas)
{
    const int64_t B = 1, H = 2, N = 40, D = 16, Dv = 8;
    for (int causal = 0; causal <= 1; causal++) {
        for (int t = 0; t < 2; t++) {
            const mf_dtype dt = t ? MF_DTYPE_BF16 : MF_DTYPE_F32;
            const peaks p = measure(2 * causal + t, B, H, N, D, Dv, causal, dt); /* pairs 0-3 */
            /* The reference holds exactly the N x N matrices of its formula. */
            ck_assert_uint_eq(p.ref_fwd, mf_ref_attention_forward_scratch_bytes(B, H, N));
            ck_assert_uint_eq(p.ref_bwd, mf_ref_attention_backward_scratch_bytes(B, H, N));
            /* optimized <= ceiling < reference */
            ck_assert_uint_le(p.opt_fwd, mf_attention_tiled_forward_scratch_ceiling(B, H, N));
            ck_assert_uint_le(p.opt_bwd, mf_attention_tiled_backward_scratch_ceiling(B, H, N));
            ck_assert_uint_lt(mf_attention_tiled_forward_scratch_ceiling(B, H, N), p.ref_fwd);
            ck_assert_uint_lt(mf_attention_tiled_backward_scratch_ceiling(B, H, N), p.ref_bwd);
        }
    }
}
END_TEST

START_TEST(test_scaling_n_and_2n)
{
    const int64_t B = 1, H = 2, D = 8, Dv = 8, N = 24;
    const peaks a = measure(4, B, H, N, D, Dv, 1, MF_DTYPE_F32);
    const peaks b = measure(5, B, H, 2 * N, D, Dv, 1, MF_DTYPE_F32);
    /* standard: exactly quadratic */
    ck_assert_uint_eq(b.ref_fwd, 4 * a.ref_fwd);
    ck_assert_uint_eq(b.ref_bwd, 4 * a.ref_bwd);
    /* tiled: at most linear (and the forward needs none) */
    ck_assert_uint_eq(a.opt_fwd, 0);
    ck_assert_uint_eq(b.opt_fwd, 0);
    ck_assert_uint_le(b.opt_bwd, 2 * a.opt_bwd);
    ck_assert_uint_le(b.opt_bwd, mf_attention_tiled_backward_scratch_ceiling(B, H, 2 * N));
    ck_assert_uint_gt(b.ref_fwd - a.ref_fwd, b.opt_bwd - a.opt_bwd);
}
END_TEST

/* The tensor-core path (bf16, D == Dv in {64, 128}; optimized/attention_mma.cu):
 * the same ceilings (forward 0 bytes; backward Delta only: dQ is accumulated
 * in the caller's dq), at N and 2N with N not a multiple of the 64-row blocks
 * (pairs 6-13: D, then causal, then N). */
START_TEST(test_mma_path_within_formulas)
{
    const int64_t B = 1, H = 2, N = 37;
    const int64_t dims[2] = { 64, 128 };
    for (int di = 0; di < 2; di++)
        for (int causal = 0; causal <= 1; causal++) {
            const int64_t D = dims[di];
            const int k = 6 + 4 * di + 2 * causal;
            const peaks a = measure(k, B, H, N, D, D, causal, MF_DTYPE_BF16);
            const peaks b = measure(k + 1, B, H, 2 * N, D, D, causal, MF_DTYPE_BF16);
            ck_assert_uint_eq(a.ref_fwd, mf_ref_attention_forward_scratch_bytes(B, H, N));
            ck_assert_uint_eq(b.ref_bwd, mf_ref_attention_backward_scratch_bytes(B, H, 2 * N));
            ck_assert_uint_eq(a.opt_fwd, 0);
            ck_assert_uint_eq(b.opt_fwd, 0);
            ck_assert_uint_le(a.opt_bwd, mf_attention_tiled_backward_scratch_ceiling(B, H, N));
            ck_assert_uint_le(b.opt_bwd, mf_attention_tiled_backward_scratch_ceiling(B, H, 2 * N));
            ck_assert_uint_lt(mf_attention_tiled_backward_scratch_ceiling(B, H, N), a.ref_bwd);
            ck_assert_uint_le(b.opt_bwd, 2 * a.opt_bwd);
            ck_assert_uint_eq(b.ref_fwd, 4 * a.ref_fwd);
        }
}
END_TEST

static Suite *attention_memory_suite(void)
{
    Suite *s = suite_create("attention_memory");
    TCase *f = tcase_create("formulas");
    tcase_add_test(f, test_formulas_at_document_shape);
    tcase_add_test(f, test_document_table_true_values);
    suite_add_tcase(s, f);
    TCase *m = tcase_create("measured");
    tcase_add_checked_fixture(m, mf_test_setup, mf_test_teardown);
    tcase_add_test(m, test_measured_within_formulas);
    tcase_add_test(m, test_scaling_n_and_2n);
    tcase_add_test(m, test_mma_path_within_formulas);
    suite_add_tcase(s, m);
    return s;
}

int main(void) { return mf_test_run(attention_memory_suite()); }
