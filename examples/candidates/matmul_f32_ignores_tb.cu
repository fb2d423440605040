/* WRONG (random cases): ignores trans_b for f32 only (bf16 is right). The fixed
 * cases have no f32 case with trans_b = 1; the random cases cycle through every
 * dtype x (ta, tb) combination. */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    return cand_matmul_naive(dtype, trans_a, dtype == MF_DTYPE_F32 ? 0 : trans_b, M, N, K, A, B, C);
}
