/* WRONG (random cases): element 4100 of C (row-major) is off by 1; every output
 * of the fixed cases has at most 3072 elements, every random case more than 4096. */
#include "candidate_common.cuh"

__global__ void cand_poke(float *C) { C[4100] += 1.0f; }

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    mf_status s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (s == MF_OK && M * N > 4100) {
        cand_poke<<<1, 1>>>(C);
        if (cudaGetLastError() != cudaSuccess) s = MF_ERR_BACKEND;
    }
    return s;
}
