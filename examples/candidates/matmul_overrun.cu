/* WRONG (guard-band): right answer, but it also writes one float past the end
 * of C (a missing bounds check on a padded tile). */
#include "candidate_common.cuh"

__global__ void overrun_kernel(float *p) { *p = 0.0f; }

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    mf_status s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (s != MF_OK) return s;
    overrun_kernel<<<1, 1>>>(C + (size_t)M * (size_t)N);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}
