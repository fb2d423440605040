/* Shared helpers of the example matmul candidates (examples/candidates/).
 * Each candidate is one .cu file exporting one extern "C" function with
 * mf_matmul_candidate_fn's signature (include/memfix/<op>.h). The wrong ones
 * start from cand_matmul_naive below and add one flaw each. */
#ifndef MF_CANDIDATE_COMMON_CUH
#define MF_CANDIDATE_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "memfix/memfix.h"
#include "memfix/verify.h"

#define CAND_EXPORT extern "C" __attribute__((visibility("default")))

/* Element idx of a buffer of 'dtype' as float (bf16 is the top half of an fp32). */
__device__ __forceinline__ float cand_load(const void *p, int bf16, size_t idx)
{
    if (bf16) return __uint_as_float((unsigned)((const uint16_t *)p)[idx] << 16);
    return ((const float *)p)[idx];
}
/* op(A)[i][k] and op(B)[k][j] (include/memfix/matmul.h). */
__device__ __forceinline__ float cand_a(const void *A, int bf16, int ta, int64_t M, int64_t K, int64_t i,
                                        int64_t k)
{
    return cand_load(A, bf16, ta ? (size_t)k * (size_t)M + (size_t)i : (size_t)i * (size_t)K + (size_t)k);
}
__device__ __forceinline__ float cand_b(const void *B, int bf16, int tb, int64_t K, int64_t N, int64_t k,
                                        int64_t j)
{
    return cand_load(B, bf16, tb ? (size_t)j * (size_t)K + (size_t)k : (size_t)k * (size_t)N + (size_t)j);
}

/* One thread per output; 'reverse' sums k from K-1 down to 0; 'rows' outputs
 * rows [0, rows) only. */
__global__ void cand_naive_kernel(int bf16, int ta, int tb, int64_t M, int64_t N, int64_t K, int64_t rows,
                                  int reverse, const void *A, const void *B, float *C)
{
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= rows || j >= N) return;
    float acc = 0.0f;
    for (int64_t t = 0; t < K; t++) {
        const int64_t k = reverse ? K - 1 - t : t;
        acc += cand_a(A, bf16, ta, M, K, i, k) * cand_b(B, bf16, tb, K, N, k, j);
    }
    C[(size_t)i * (size_t)N + (size_t)j] = acc;
}

static inline mf_status cand_matmul_naive_ex(mf_dtype dtype, int ta, int tb, int64_t M, int64_t N, int64_t K,
                                             int64_t rows, int reverse, const void *A, const void *B,
                                             float *C)
{
    if (rows <= 0) return MF_OK;
    dim3 block(16, 16);
    dim3 grid((unsigned)((N + 15) / 16), (unsigned)((rows + 15) / 16));
    cand_naive_kernel<<<grid, block>>>(dtype == MF_DTYPE_BF16, ta, tb, M, N, K, rows, reverse, A, B, C);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}

static inline mf_status cand_matmul_naive(mf_dtype dtype, int ta, int tb, int64_t M, int64_t N, int64_t K,
                                          const void *A, const void *B, float *C)
{
    return cand_matmul_naive_ex(dtype, ta, tb, M, N, K, M, 0, A, B, C);
}

#endif
