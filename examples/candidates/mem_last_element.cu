/* WRONG (input-write, the partial last page): right answer, and B as given when
 * it returns, but it overwrites B's last element during the call (a flag kept in
 * an input) and puts it back before returning, on the inputs whose size is not
 * a multiple of the 4 KiB page. memfix verify pads each input to whole pages of
 * its own and makes them all read-only in host mode, so the last partial page is
 * protected too (before, only the pages wholly inside an input were). */
#include "candidate_common.cuh"

/* swaps B's last element (one thread) with *keep: called twice, it restores B */
__global__ void swap_last_kernel(int bf16, void *B, size_t n, uint32_t *keep)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    if (bf16) {
        uint16_t *p = (uint16_t *)B + (n - 1);
        const uint16_t v = *p;
        *p = (uint16_t)*keep;
        *keep = v;
    } else {
        uint32_t *p = (uint32_t *)B + (n - 1);
        const uint32_t v = *p;
        *p = *keep;
        *keep = v;
    }
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    const int bf16 = dtype == MF_DTYPE_BF16;
    const size_t nb = (size_t)K * (size_t)N, bytes = nb * (bf16 ? 2u : 4u);
    if (nb == 0 || bytes % 4096u == 0) return cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    /* the one word it keeps: 4 bytes of tracked scratch would exceed matmul's ceiling of 0, so it lives
     * in the output's first element until the product overwrites it */
    (void)ctx;
    uint32_t *keep = (uint32_t *)(void *)C;
    if (cudaMemset(keep, 0, sizeof *keep) != cudaSuccess) return MF_ERR_BACKEND;
    swap_last_kernel<<<1, 32>>>(bf16, (void *)B, nb, keep);
    swap_last_kernel<<<1, 32>>>(bf16, (void *)B, nb, keep);
    mf_status s = cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
    if (s == MF_OK && cudaDeviceSynchronize() != cudaSuccess) s = MF_ERR_BACKEND;
    if (s == MF_OK) s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (cudaDeviceSynchronize() != cudaSuccess) s = MF_ERR_BACKEND;
    return s;
}
