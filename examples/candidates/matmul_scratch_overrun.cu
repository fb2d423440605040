/* WRONG (scratch-guard): right answer, but it stages op(A)'s first row in
 * scratch from mf_scratch_alloc (counted; matmul's ceiling is 0, yet the guard
 * checks first) and writes one float past the end of it. */
#include "candidate_common.cuh"

__global__ void stage_row_kernel(int bf16, int ta, int64_t M, int64_t K, const void *A, float *row)
{
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < K) row[k] = cand_a(A, bf16, ta, M, K, 0, k);
    if (k == K) row[K] = 0.0f; /* one past the end */
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    void *row = NULL;
    mf_status s = mf_scratch_alloc(ctx, MF_MEM_DEVICE, (size_t)K * sizeof(float), &row);
    if (s != MF_OK) return s;
    stage_row_kernel<<<(unsigned)((K + 1 + 127) / 128), 128>>>(dtype == MF_DTYPE_BF16, trans_a, M, K, A,
                                                               (float *)row);
    if (cudaGetLastError() != cudaSuccess) s = MF_ERR_BACKEND;
    if (s == MF_OK) s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (cudaDeviceSynchronize() != cudaSuccess) s = MF_ERR_BACKEND;
    mf_scratch_free(ctx, MF_MEM_DEVICE, row);
    return s;
}
