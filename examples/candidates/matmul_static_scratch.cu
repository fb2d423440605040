/* WRONG (scratch-ceiling, untracked static memory): right answer, but it
 * stages op(B) transposed in a 64 MiB static __device__ array instead of
 * scratch from the context's allocator (matmul needs none). In host mode the
 * array is the library's writable segment, which memfix verify counts. */
#include "candidate_common.cuh"

#define STATIC_FLOATS ((size_t)16 << 20) /* 64 MiB */
__device__ float g_static_scratch[STATIC_FLOATS];

__global__ void stage_bt_kernel(int bf16, int tb, int64_t K, int64_t N, const void *B)
{
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t k = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (j < N && k < K && (size_t)j * (size_t)K + (size_t)k < STATIC_FLOATS)
        g_static_scratch[(size_t)j * (size_t)K + (size_t)k] = cand_b(B, bf16, tb, K, N, k, j);
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    dim3 block(16, 16), grid((unsigned)((N + 15) / 16), (unsigned)((K + 15) / 16));
    stage_bt_kernel<<<grid, block>>>(dtype == MF_DTYPE_BF16, trans_b, K, N, B);
    mf_status s = cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
    if (s == MF_OK) s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (cudaDeviceSynchronize() != cudaSuccess) s = MF_ERR_BACKEND;
    return s;
}
