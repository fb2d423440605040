/* WRONG (scratch-ceiling, untracked pinned memory): right answer, but it takes
 * an 8 MiB workspace with cudaMallocHost (page-locked host memory a kernel can
 * address), behind the context's allocator, and frees it before returning. */
#include "candidate_common.cuh"

/* one float per 4 KiB page: the pages are the workspace's (a few blocks, fast under sanitizers) */
__global__ void touch_kernel(float *ws, size_t n)
{
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 1024;
    if (i < n) ws[i] = 1.0f;
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    const size_t n = (size_t)2 << 20; /* 8 MiB of floats */
    float *ws = NULL;
    if (cudaMallocHost((void **)&ws, n * sizeof(float)) != cudaSuccess) return MF_ERR_OUT_OF_MEMORY;
    touch_kernel<<<(unsigned)((n / 1024 + 255) / 256), 256>>>(ws, n);
    mf_status s = cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
    if (s == MF_OK) s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (cudaDeviceSynchronize() != cudaSuccess) s = MF_ERR_BACKEND;
    cudaFreeHost(ws);
    return s;
}
