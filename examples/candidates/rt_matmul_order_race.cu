/* RED TEAM (schedule): a race that forward and reverse thread orders both hide.
 * Every thread raises its flag in shared memory with no barrier; thread 10 of
 * each block then reads the flags of threads 3 and 5 and, when exactly one is
 * raised (one ran before it and the other after: never in forward or reverse
 * order, often in a random one), doubles its output. */
#include "candidate_common.cuh"

__global__ void rt_race_kernel(int bf16, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                               const void *B, float *C)
{
    __shared__ int flag[256];
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    flag[t] = 0;
    __syncthreads();
    flag[t] = 1;
    /* BUG (on purpose): __syncthreads() missing here */
    const int odd = t == 10 && (flag[3] ^ flag[5]);
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k++) acc += cand_a(A, bf16, ta, M, K, i, k) * cand_b(B, bf16, tb, K, N, k, j);
    C[(size_t)i * (size_t)N + (size_t)j] = odd ? 2.0f * acc : acc;
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    dim3 block(16, 16);
    dim3 grid((unsigned)((N + 15) / 16), (unsigned)((M + 15) / 16));
    rt_race_kernel<<<grid, block>>>(dtype == MF_DTYPE_BF16, trans_a, trans_b, M, N, K, A, B, C);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}
