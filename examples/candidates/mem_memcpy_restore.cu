/* WRONG (input-write, written by the runtime): right answer, and A as given
 * when it returns, but it copies B over the start of A with a device-to-device
 * cudaMemcpy (A as a staging buffer) and restores A from a host copy before
 * computing. The write is made by the CUDA runtime (cudahost's memcpy in host
 * mode), not by a kernel: the read-only pages of the input catch it all the
 * same. */
#include "candidate_common.cuh"

#include <stdlib.h>

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    const size_t es = dtype == MF_DTYPE_BF16 ? 2u : 4u;
    const size_t a_bytes = (size_t)M * (size_t)K * es, b_bytes = (size_t)K * (size_t)N * es;
    const size_t n = a_bytes < b_bytes ? a_bytes : b_bytes;
    void *save = malloc(a_bytes ? a_bytes : 1);
    if (save == NULL) return MF_ERR_OUT_OF_MEMORY;
    mf_status s = MF_OK;
    if (cudaMemcpy(save, A, a_bytes, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy((void *)A, B, n, cudaMemcpyDeviceToDevice) != cudaSuccess ||
        cudaMemcpy((void *)A, save, a_bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        s = MF_ERR_BACKEND;
    free(save);
    if (s == MF_OK) s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (cudaDeviceSynchronize() != cudaSuccess) s = MF_ERR_BACKEND;
    return s;
}
