/* WRONG (input-write): right answer, and A as given when it returns, but it
 * uses A as scratch in between: negates it in place, multiplies, negates the
 * product and restores A. memfix verify write-protects inputs in host mode. */
#include "candidate_common.cuh"

__global__ void negate_kernel(int bf16, void *p, size_t n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (bf16)
        ((uint16_t *)p)[i] ^= 0x8000u;
    else
        ((float *)p)[i] = -((float *)p)[i];
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    const int bf16 = dtype == MF_DTYPE_BF16;
    const size_t na = (size_t)M * (size_t)K, nc = (size_t)M * (size_t)N;
    negate_kernel<<<(unsigned)((na + 255) / 256), 256>>>(bf16, (void *)A, na);
    mf_status s = cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
    if (s == MF_OK) s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (s == MF_OK) {
        negate_kernel<<<(unsigned)((nc + 255) / 256), 256>>>(0, C, nc);
        negate_kernel<<<(unsigned)((na + 255) / 256), 256>>>(bf16, (void *)A, na);
        if (cudaGetLastError() != cudaSuccess) s = MF_ERR_BACKEND;
    }
    if (cudaDeviceSynchronize() != cudaSuccess) s = MF_ERR_BACKEND;
    return s;
}
