/* WRONG (equivalence): ignores trans_b, reading a transposed B as if it were
 * not (right whenever trans_b == 0, wrong numbers otherwise). */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    (void)trans_b;
    return cand_matmul_naive(dtype, trans_a, 0, M, N, K, A, B, C);
}
