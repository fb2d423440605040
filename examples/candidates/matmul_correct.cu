/* A correct matmul candidate, written differently from optimized/matmul.cu:
 * 32x32 output tiles per 16x16 thread block, each thread accumulating a 2x2
 * register block, with K staged in slices of 8 through shared memory (our
 * kernel uses 16x16 tiles, one output per thread). memfix verify accepts it. */
#include "candidate_common.cuh"

#define CT 32 /* output tile edge */
#define CK 8  /* K slice */

__global__ void correct_kernel(int bf16, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                               const void *B, float *C)
{
    __shared__ float As[CT][CK + 1];
    __shared__ float Bs[CK][CT + 1];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int64_t row0 = (int64_t)blockIdx.y * CT, col0 = (int64_t)blockIdx.x * CT;
    float acc[2][2] = { { 0.0f, 0.0f }, { 0.0f, 0.0f } };
    for (int64_t k0 = 0; k0 < K; k0 += CK) {
        /* 256 threads stage 32x8 of op(A) and 8x32 of op(B): one element each. */
        {
            const int r = tid / CK, c = tid % CK;
            const int64_t gi = row0 + r, gk = k0 + c;
            As[r][c] = (gi < M && gk < K) ? cand_a(A, bf16, ta, M, K, gi, gk) : 0.0f;
        }
        {
            const int r = tid / CT, c = tid % CT;
            const int64_t gk = k0 + r, gj = col0 + c;
            Bs[r][c] = (gk < K && gj < N) ? cand_b(B, bf16, tb, K, N, gk, gj) : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < CK; k++) {
            const float a0 = As[ty][k], a1 = As[ty + 16][k];
            const float b0 = Bs[k][tx], b1 = Bs[k][tx + 16];
            acc[0][0] += a0 * b0;
            acc[0][1] += a0 * b1;
            acc[1][0] += a1 * b0;
            acc[1][1] += a1 * b1;
        }
        __syncthreads();
    }
    for (int di = 0; di < 2; di++)
        for (int dj = 0; dj < 2; dj++) {
            const int64_t i = row0 + ty + 16 * di, j = col0 + tx + 16 * dj;
            if (i < M && j < N) C[(size_t)i * (size_t)N + (size_t)j] = acc[di][dj];
        }
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    if (A == NULL || B == NULL || C == NULL) return MF_ERR_NULL_POINTER;
    if (M <= 0 || N <= 0 || K <= 0) return MF_ERR_INVALID_SIZE;
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16) return MF_ERR_DTYPE;
    const int64_t gx = (N + CT - 1) / CT, gy = (M + CT - 1) / CT;
    if (gy > 65535) return MF_ERR_INVALID_SIZE; /* an example: no grid striding */
    dim3 block(16, 16), grid((unsigned)gx, (unsigned)gy);
    correct_kernel<<<grid, block>>>(dtype == MF_DTYPE_BF16, trans_a, trans_b, M, N, K, A, B, C);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}
