/* WRONG (input-write, a small input): right answer, and A as given when it
 * returns, but when A is smaller than a 4 KiB page it is used as scratch in
 * between: negated in place, multiplied, the product negated back and A
 * restored. memfix verify puts each input on pages of its own and makes them
 * all read-only in host mode, so an input smaller than a page is protected too
 * (before, only the pages wholly inside an input were). */
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
    const int cheat = na * (bf16 ? 2u : 4u) < 4096u;
    if (!cheat) return cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
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
