/* WRONG (schedule): thread (0, 0) of each block writes a scale factor (1.0) to
 * shared memory and every thread reads it with no __syncthreads in between. In
 * host mode's forward thread order thread (0, 0) runs first, so every case
 * passes; in reverse or a random order the other threads read the garbage
 * shared memory starts with (NaN in host mode). memfix verify runs every case
 * in forward, reverse and random orders: rejected by `schedule`. */
#include "candidate_common.cuh"

__global__ void race_kernel(int bf16, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                            const void *B, float *C)
{
    __shared__ float scale;
    if (threadIdx.x == 0 && threadIdx.y == 0) scale = 1.0f;
    /* BUG (on purpose): __syncthreads() missing here */
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k++) acc += cand_a(A, bf16, ta, M, K, i, k) * cand_b(B, bf16, tb, K, N, k, j);
    C[(size_t)i * (size_t)N + (size_t)j] = acc * scale;
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    dim3 block(16, 16);
    dim3 grid((unsigned)((N + 15) / 16), (unsigned)((M + 15) / 16));
    race_kernel<<<grid, block>>>(dtype == MF_DTYPE_BF16, trans_a, trans_b, M, N, K, A, B, C);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}
