// bf16 GEMM with the WMMA API (nvcuda::wmma, m16n16k16, fp32 accumulators):
//   C (M x N, fp32) = alpha * A (M x K, bf16, row-major) * B (K x N, bf16, row-major) + beta * C
// A CPU reference, a naive kernel, two WMMA kernels (one warp per 16x16 tile straight from global memory; a 64x64
// block tile staged in shared memory, 4 warps of 32x32, with an alpha/beta epilogue on the accumulator fragments),
// then the validation. Needs M, N multiples of 64 and K a multiple of 16.
#include "program_common.cuh"

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <mma.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

using namespace nvcuda;

// ---- CPU reference ---------------------------------------------------------------------------------------------
static void gemm_cpu(const float *A, const float *B, float *C, int M, int N, int K, float alpha, float beta)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++) acc += (double)A[i * K + k] * B[k * N + j];
            C[i * N + j] = (float)(alpha * acc + beta * C[i * N + j]);
        }
}

// ---- kernel 0: naive -------------------------------------------------------------------------------------------
__global__ void gemm_naive(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int K,
                           float alpha, float beta)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || j >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; k++)
        acc += __bfloat162float(A[(size_t)i * K + k]) * __bfloat162float(B[(size_t)k * N + j]);
    C[(size_t)i * N + j] = alpha * acc + beta * C[(size_t)i * N + j];
}

// ---- kernel 1: one warp per 16x16 tile, fragments loaded from global memory ----------------------------------------
__global__ void gemm_wmma_warp(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int K,
                               float alpha, float beta)
{
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int tiles_n = N / 16;
    const int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm >= M / 16) return; // whole warps only
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::fill_fragment(acc, 0.f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)tm * 16 * K + k, K);
        wmma::load_matrix_sync(b, B + (size_t)k * N + tn * 16, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    float *Ct = C + (size_t)tm * 16 * N + tn * 16;
    wmma::load_matrix_sync(c, Ct, N, wmma::mem_row_major);
    for (int i = 0; i < c.num_elements; i++)
        c.x[i] = alpha * acc.x[i] + beta * c.x[i]; // same mapping for both
    wmma::store_matrix_sync(Ct, c, N, wmma::mem_row_major);
}

// ---- kernel 2: 64x64 block tile in shared memory, 4 warps of 32x32 --------------------------------------------------
constexpr int BM = 64, BN = 64, BK = 16;
__global__ void __launch_bounds__(128) gemm_wmma_smem(const __nv_bfloat16 *A, const __nv_bfloat16 *B,
                                                      float *C, int M, int N, int K, float alpha, float beta)
{
    (void)M;
    __shared__ __align__(32) __nv_bfloat16 As[BM][BK + 16];
    __shared__ __align__(32) __nv_bfloat16 Bs[BK][BN + 16];
    const int tid = threadIdx.x, warp = tid / 32;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.f);
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += 128)
            As[e / BK][e % BK] = A[(size_t)(m0 + e / BK) * K + k0 + e % BK];
        for (int e = tid; e < BK * BN; e += 128)
            Bs[e / BN][e % BN] = B[(size_t)(k0 + e / BN) * N + n0 + e % BN];
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b[2];
        for (int i = 0; i < 2; i++) wmma::load_matrix_sync(a[i], &As[wm + i * 16][0], BK + 16);
        for (int j = 0; j < 2; j++) wmma::load_matrix_sync(b[j], &Bs[0][wn + j * 16], BN + 16);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        __syncthreads();
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            float *Ct = C + (size_t)(m0 + wm + i * 16) * N + n0 + wn + j * 16;
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
            wmma::load_matrix_sync(c, Ct, N, wmma::mem_row_major);
            for (int q = 0; q < c.num_elements; q++) c.x[q] = alpha * acc[i][j].x[q] + beta * c.x[q];
            wmma::store_matrix_sync(Ct, c, N, wmma::mem_row_major);
        }
}

// ---- inputs, runs and validation (validate(): program_common.cuh) ----------------------------------------------
int main(int argc, char **argv)
{
    const int M = argc > 1 ? atoi(argv[1]) : 128, N = argc > 2 ? atoi(argv[2]) : 64,
              K = argc > 3 ? atoi(argv[3]) : 48;
    const float alpha = 1.5f, beta = -0.5f;
    if (M % BM || N % BN || K % BK) {
        printf("M and N must be multiples of %d, K of %d\n", BM, BK);
        return 2;
    }
    if (no_cuda_device()) return 77;
    float *hA = (float *)malloc(sizeof(float) * M * K), *hB = (float *)malloc(sizeof(float) * K * N);
    float *hC0 = (float *)malloc(sizeof(float) * M * N), *ref = (float *)malloc(sizeof(float) * M * N),
          *got = (float *)malloc(sizeof(float) * M * N);
    __nv_bfloat16 *hAb = (__nv_bfloat16 *)malloc(2 * (size_t)M * K),
                  *hBb = (__nv_bfloat16 *)malloc(2 * (size_t)K * N);
    srand(2024);
    fill_bf16(hAb, hA, (size_t)M * K);
    fill_bf16(hBb, hB, (size_t)K * N);
    for (int i = 0; i < M * N; i++) hC0[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    for (int i = 0; i < M * N; i++) ref[i] = hC0[i];
    gemm_cpu(hA, hB, ref, M, N, K, alpha, beta);
    __nv_bfloat16 *dA, *dB;
    float *dC;
    CUDA_CHECK(cudaMalloc(&dA, 2 * (size_t)M * K));
    CUDA_CHECK(cudaMalloc(&dB, 2 * (size_t)K * N));
    CUDA_CHECK(cudaMalloc(&dC, sizeof(float) * M * N));
    CUDA_CHECK(cudaMemcpy(dA, hAb, 2 * (size_t)M * K, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, hBb, 2 * (size_t)K * N, cudaMemcpyHostToDevice));
    const char *names[3] = { "naive", "wmma, one warp per tile", "wmma, shared-memory tiles" };
    int fails = 0;
    for (int v = 0; v < 3; v++) {
        CUDA_CHECK(cudaMemcpy(dC, hC0, sizeof(float) * M * N, cudaMemcpyHostToDevice));
        if (v == 0) gemm_naive<<<dim3(N / 16, M / 16), dim3(16, 16)>>>(dA, dB, dC, M, N, K, alpha, beta);
        if (v == 1) gemm_wmma_warp<<<(M / 16) * (N / 16) * 32 / 128, 128>>>(dA, dB, dC, M, N, K, alpha, beta);
        if (v == 2) gemm_wmma_smem<<<dim3(N / BN, M / BM), 128>>>(dA, dB, dC, M, N, K, alpha, beta);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got, dC, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
        fails += validate(names[v], "C", got, ref, (size_t)M * N, 1e-3);
    }
    free(hA), free(hB), free(hC0), free(ref), free(got), free(hAb), free(hBb);
    cudaFree(dA), cudaFree(dB), cudaFree(dC);
    return verdict(fails);
}
