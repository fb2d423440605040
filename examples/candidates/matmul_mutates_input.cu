/* WRONG (input-mutation): right answer, then it zeroes the first element of A
 * (as a kernel reusing an input as scratch would). */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    mf_status s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (s != MF_OK) return s;
    return cudaMemset((void *)A, 0, 2) == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}
