/* WRONG (all-zero): writes zeros instead of computing (an output that passes a
 * check with a loose tolerance and a near-zero reference). */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    (void)dtype;
    (void)trans_a;
    (void)trans_b;
    (void)K;
    (void)A;
    (void)B;
    return cudaMemset(C, 0, (size_t)M * (size_t)N * sizeof(float)) == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}
