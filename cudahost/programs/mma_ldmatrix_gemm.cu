// bf16 GEMM on tensor cores with inline PTX: mma.sync.m16n8k16 fed by ldmatrix from shared memory.
//   C (M x N, fp32, row-major) = A (M x K, bf16, row-major) * B (K x N, bf16)
// B in both layouts: "NT" (B stored as N x K, i.e. column-major: plain ldmatrix gives the B fragment) and "NN"
// (B stored K x N row-major: ldmatrix.trans). A CPU reference, a naive kernel, the two tensor-core kernels, then the
// validation, in that order (teaching style). Fragment layouts: PTX ISA 9.7.14.5.8 (mma.m16n8k16) and ldmatrix.
//
// Block tile 64 x 64, k-step 16, 4 warps in 2 x 2, each warp 32 x 32 = 2 (m16) x 4 (n8) mma tiles.
// Needs M, N multiples of 64 and K a multiple of 16.
#include "program_common.cuh"

#include <cuda_runtime.h>
#include <cuda_bf16.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- CPU reference ---------------------------------------------------------------------------------------------
static void gemm_cpu(const float *A, const float *B, float *C, int M, int N, int K, bool b_col_major)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)A[i * K + k] * (b_col_major ? B[j * K + k] : B[k * N + j]);
            C[i * N + j] = (float)acc;
        }
}

// ---- kernel 0: naive, one thread per output ----------------------------------------------------------------------
__global__ void gemm_naive(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int K,
                           int b_col_major)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M || j >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; k++)
        acc += __bfloat162float(A[(size_t)i * K + k]) *
               __bfloat162float(b_col_major ? B[(size_t)j * K + k] : B[(size_t)k * N + j]);
    C[(size_t)i * N + j] = acc;
}

// ---- PTX wrappers ---------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void mma_bf16_16816(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- kernels 1 and 2: mma.sync + ldmatrix --------------------------------------------------------------------------
constexpr int BM = 64, BN = 64, BK = 16, PAD = 8;

template <bool B_COL_MAJOR>
__global__ void __launch_bounds__(128)
    gemm_mma(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int K)
{
    (void)M; // (the grid covers M)
    __shared__ __align__(16) __nv_bfloat16 As[BM][BK + PAD];
    // NT: Bs[n][k]; NN: Bs[k][n]
    __shared__ __align__(16) __nv_bfloat16 Bs[B_COL_MAJOR ? BN : BK][B_COL_MAJOR ? BK + PAD : BN + PAD];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[2][4][4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 128 threads x 8 elements (16 bytes) = one 64 x 16 tile of A and one of B
        {
            int r = tid >> 1, c = (tid & 1) * 8;
            *(uint4 *)&As[r][c] = *(const uint4 *)&A[(size_t)(m0 + r) * K + k0 + c];
            if (B_COL_MAJOR) {
                *(uint4 *)&Bs[r][c] = *(const uint4 *)&B[(size_t)(n0 + r) * K + k0 + c];
            } else {
                int kr = tid >> 3, nc = (tid & 7) * 8;
                *(uint4 *)&Bs[kr][nc] = *(const uint4 *)&B[(size_t)(k0 + kr) * N + n0 + nc];
            }
        }
        __syncthreads();
        uint32_t af[2][4], bfr[4][2];
        for (int i = 0; i < 2;
             i++) // matrices: rows 0-7/8-15 of k 0-7, then of k 8-15 (= a0a1, a2a3, a4a5, a6a7)
            ldmatrix_x4(af[i], smem_u32(&As[wm + i * 16 + (lane & 15)][(lane >> 4) * 8]));
        for (int j = 0; j < 4;
             j += 2) { // two n8 tiles per ldmatrix.x4: (b0b1, b2b3) of tile j, then of tile j+1
            uint32_t r[4];
            if (B_COL_MAJOR) {
                ldmatrix_x4(r,
                            smem_u32(&Bs[wn + j * 8 + (lane >> 4) * 8 + (lane & 7)][((lane >> 3) & 1) * 8]));
            } else {
                ldmatrix_x4_trans(
                    r, smem_u32(&Bs[((lane >> 3) & 1) * 8 + (lane & 7)][wn + j * 8 + (lane >> 4) * 8]));
            }
            bfr[j][0] = r[0];
            bfr[j][1] = r[1];
            bfr[j + 1][0] = r[2];
            bfr[j + 1][1] = r[3];
        }
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) mma_bf16_16816(acc[i][j], af[i], bfr[j]);
        __syncthreads();
    }
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            const int r = m0 + wm + i * 16 + g, c = n0 + wn + j * 8 + 2 * t;
            C[(size_t)r * N + c] = acc[i][j][0];
            C[(size_t)r * N + c + 1] = acc[i][j][1];
            C[(size_t)(r + 8) * N + c] = acc[i][j][2];
            C[(size_t)(r + 8) * N + c + 1] = acc[i][j][3];
        }
}

// ---- inputs, runs and validation (validate(): program_common.cuh) ----------------------------------------------
int main(int argc, char **argv)
{
    const int M = argc > 1 ? atoi(argv[1]) : 128, N = argc > 2 ? atoi(argv[2]) : 128,
              K = argc > 3 ? atoi(argv[3]) : 64;
    if (M % BM || N % BN || K % BK) {
        printf("M and N must be multiples of %d, K of %d\n", BM, BK);
        return 2;
    }
    if (no_cuda_device()) return 77;
    // inputs: seeded, rounded to bf16 (the reference sees the same values)
    float *hA = (float *)malloc(sizeof(float) * M * K), *hB = (float *)malloc(sizeof(float) * K * N);
    __nv_bfloat16 *hAb = (__nv_bfloat16 *)malloc(2 * (size_t)M * K),
                  *hBb = (__nv_bfloat16 *)malloc(2 * (size_t)K * N);
    __nv_bfloat16 *hBt = (__nv_bfloat16 *)malloc(2 * (size_t)K * N);
    float *hB_t = (float *)malloc(sizeof(float) * K * N), *ref = (float *)malloc(sizeof(float) * M * N),
          *got = (float *)malloc(sizeof(float) * M * N);
    srand(12345);
    fill_bf16(hAb, hA, (size_t)M * K);
    fill_bf16(hBb, hB, (size_t)K * N);
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++) {
            hBt[n * K + k] = hBb[k * N + n];
            hB_t[n * K + k] = hB[k * N + n];
        }
    __nv_bfloat16 *dA, *dB, *dBt;
    float *dC;
    CUDA_CHECK(cudaMalloc(&dA, 2 * (size_t)M * K));
    CUDA_CHECK(cudaMalloc(&dB, 2 * (size_t)K * N));
    CUDA_CHECK(cudaMalloc(&dBt, 2 * (size_t)K * N));
    CUDA_CHECK(cudaMalloc(&dC, sizeof(float) * M * N));
    CUDA_CHECK(cudaMemcpy(dA, hAb, 2 * (size_t)M * K, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, hBb, 2 * (size_t)K * N, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dBt, hBt, 2 * (size_t)K * N, cudaMemcpyHostToDevice));
    int fails = 0;
    for (int layout = 0; layout < 2; layout++) {
        const bool col = layout == 1;
        gemm_cpu(hA, col ? hB_t : hB, ref, M, N, K, col);
        const __nv_bfloat16 *dBx = col ? dBt : dB;
        for (int version = 0; version < 2; version++) {
            CUDA_CHECK(cudaMemset(dC, 0xff, sizeof(float) * M * N)); // NaN: an unwritten output fails
            if (version == 0) {
                gemm_naive<<<dim3(N / 16, M / 16), dim3(16, 16)>>>(dA, dBx, dC, M, N, K, col);
            } else if (col) {
                gemm_mma<true><<<dim3(N / BN, M / BM), 128>>>(dA, dBx, dC, M, N, K);
            } else {
                gemm_mma<false><<<dim3(N / BN, M / BM), 128>>>(dA, dBx, dC, M, N, K);
            }
            CUDA_CHECK(cudaGetLastError());
            CUDA_CHECK(cudaDeviceSynchronize());
            CUDA_CHECK(cudaMemcpy(got, dC, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
            char name[64];
            snprintf(name, sizeof name, "%s, B %s", version == 0 ? "naive" : "mma.sync + ldmatrix",
                     col ? "col-major (NT)" : "row-major (NN)");
            fails += validate(name, "C", got, ref, (size_t)M * N, 1e-3);
        }
    }
    free(hA), free(hB), free(hAb), free(hBb), free(hBt), free(hB_t), free(ref), free(got);
    cudaFree(dA), cudaFree(dB), cudaFree(dBt), cudaFree(dC);
    return verdict(fails);
}
