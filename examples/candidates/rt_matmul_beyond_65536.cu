/* RED TEAM (cases): correct, except that every output element past index
 * 65535 gets 1.0 added: a kernel that only works while the output fits one
 * 64 Ki-element tile. Needs a random case with M*N > 65536. */
#include "candidate_common.cuh"

__global__ void rt_bump(float *C, size_t n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x + 65536;
    if (i < n) C[i] += 1.0f;
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    mf_status s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    const size_t n = (size_t)M * (size_t)N;
    if (s == MF_OK && n > 65536) {
        rt_bump<<<(unsigned)((n - 65536 + 255) / 256), 256>>>(C, n);
        s = cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
    }
    return s;
}
