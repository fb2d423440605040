// GEMM with hand-loaded mma.sync fragments: every lane reads its own elements of A, B and C straight from global
// memory following the PTX ISA's fragment tables (section 9.7.14.5, "Matrix Fragments for mma.m16n8k16" and
// "mma.m16n8k8"), no ldmatrix, no shared memory.
//   C (M x N, fp32) = A (M x K, row-major) * B (K x N, row-major) + C
// A CPU reference, then three kernels (bf16 and f16 inputs on m16n8k16, tf32 on m16n8k8), one warp per 16 x 8 tile
// of C, then the validation. Needs M a multiple of 16, N of 8 and K of 16.
#include "program_common.cuh"

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

// ---- CPU reference ---------------------------------------------------------------------------------------------
static void gemm_cpu(const float *A, const float *B, const float *C0, float *C, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = C0[i * N + j];
            for (int k = 0; k < K; k++) acc += (double)A[i * K + k] * B[k * N + j];
            C[i * N + j] = (float)acc;
        }
}

// two 16-bit elements in one register, the lower-indexed one in the low half
__device__ inline uint32_t pack2(__nv_bfloat16 lo, __nv_bfloat16 hi)
{
    return (uint32_t)__bfloat16_as_ushort(lo) | ((uint32_t)__bfloat16_as_ushort(hi) << 16);
}
__device__ inline uint32_t pack2(__half lo, __half hi)
{
    return (uint32_t)__half_as_ushort(lo) | ((uint32_t)__half_as_ushort(hi) << 16);
}

// ---- kernels 1, 2: m16n8k16 with .bf16 / .f16 inputs ---------------------------------------------------------------
// groupID g = lane >> 2, threadID_in_group t = lane % 4.
// A (16 x 16): a0..a7 in 4 registers; row g for a0,a1,a4,a5 and g+8 for a2,a3,a6,a7; col 2t + (i & 1), +8 for i >= 4.
// B (16 x 8):  b0..b3 in 2 registers; row 2t + (i & 1), +8 for i >= 2; col g.
// C/D (16 x 8): c0..c3; row g for c0,c1 and g+8 for c2,c3; col 2t + (i & 1).
template <class T> __global__ void gemm_m16n8k16(const T *A, const T *B, float *C, int M, int N, int K)
{
    const int lane = threadIdx.x % 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int tm = warp / (N / 8), tn = warp % (N / 8);
    if (tm >= M / 16) return;
    const int g = lane >> 2, t = lane & 3;
    const int r0 = tm * 16, c0 = tn * 8;
    float c[4];
    for (int i = 0; i < 4; i++) c[i] = C[(size_t)(r0 + g + (i >> 1) * 8) * N + c0 + 2 * t + (i & 1)];
    for (int k0 = 0; k0 < K; k0 += 16) {
        uint32_t a[4], b[2];
        for (int j = 0; j < 4; j++) {
            const int i = 2 * j; // a_i (low half) and a_{i+1}
            const int row = r0 + ((i < 2 || (i >= 4 && i < 6)) ? g : g + 8);
            const int col = k0 + 2 * t + (i >= 4 ? 8 : 0);
            a[j] = pack2(A[(size_t)row * K + col], A[(size_t)row * K + col + 1]);
        }
        for (int j = 0; j < 2; j++) {
            const int row = k0 + 2 * t + (j == 1 ? 8 : 0); // b_{2j}: row, b_{2j+1}: row + 1
            b[j] = pack2(B[(size_t)row * N + c0 + g], B[(size_t)(row + 1) * N + c0 + g]);
        }
        if (std::is_same<T, __nv_bfloat16>::value) {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        } else {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    for (int i = 0; i < 4; i++) C[(size_t)(r0 + g + (i >> 1) * 8) * N + c0 + 2 * t + (i & 1)] = c[i];
}

// ---- kernel 3: m16n8k8 with .tf32 inputs (fp32 in memory, the tensor core reads 19 bits) -----------------------------
// A (16 x 8): a0..a3, one per register; row g for a0,a2 and g+8 for a1,a3; col t for a0,a1 and t+4 for a2,a3.
// B (8 x 8):  b0,b1; row t for b0 and t+4 for b1; col g.
__global__ void gemm_m16n8k8_tf32(const float *A, const float *B, float *C, int M, int N, int K)
{
    const int lane = threadIdx.x % 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int tm = warp / (N / 8), tn = warp % (N / 8);
    if (tm >= M / 16) return;
    const int g = lane >> 2, t = lane & 3;
    const int r0 = tm * 16, c0 = tn * 8;
    float c[4];
    for (int i = 0; i < 4; i++) c[i] = C[(size_t)(r0 + g + (i >> 1) * 8) * N + c0 + 2 * t + (i & 1)];
    for (int k0 = 0; k0 < K; k0 += 8) {
        uint32_t a[4], b[2];
        for (int i = 0; i < 4; i++)
            a[i] = __float_as_uint(A[(size_t)(r0 + ((i & 1) ? g + 8 : g)) * K + k0 + (i < 2 ? t : t + 4)]);
        for (int i = 0; i < 2; i++) b[i] = __float_as_uint(B[(size_t)(k0 + (i ? t + 4 : t)) * N + c0 + g]);
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    for (int i = 0; i < 4; i++) C[(size_t)(r0 + g + (i >> 1) * 8) * N + c0 + 2 * t + (i & 1)] = c[i];
}

// ---- inputs, runs and validation (validate(): program_common.cuh) ----------------------------------------------
int main()
{
    const int M = 64, N = 32, K = 64;
    if (no_cuda_device()) return 77;
    float *A = (float *)malloc(4 * M * K), *B = (float *)malloc(4 * K * N), *C0 = (float *)malloc(4 * M * N);
    float *ref = (float *)malloc(4 * M * N), *got = (float *)malloc(4 * M * N);
    __nv_bfloat16 *Ab = (__nv_bfloat16 *)malloc(2 * M * K), *Bb = (__nv_bfloat16 *)malloc(2 * K * N);
    __half *Ah = (__half *)malloc(2 * M * K), *Bh = (__half *)malloc(2 * K * N);
    srand(7);
    // small multiples of 1/8: exact in bf16, f16 and tf32, so every version can be compared with one reference
    for (int i = 0; i < M * K; i++) A[i] = (float)(rand() % 17 - 8) / 8.f;
    for (int i = 0; i < K * N; i++) B[i] = (float)(rand() % 17 - 8) / 8.f;
    for (int i = 0; i < M * N; i++) C0[i] = (float)(rand() % 9 - 4);
    for (int i = 0; i < M * K; i++) Ab[i] = __float2bfloat16(A[i]), Ah[i] = __float2half(A[i]);
    for (int i = 0; i < K * N; i++) Bb[i] = __float2bfloat16(B[i]), Bh[i] = __float2half(B[i]);
    gemm_cpu(A, B, C0, ref, M, N, K);
    void *dA, *dB;
    float *dC;
    CUDA_CHECK(cudaMalloc(&dA, 4 * M * K));
    CUDA_CHECK(cudaMalloc(&dB, 4 * K * N));
    CUDA_CHECK(cudaMalloc(&dC, 4 * M * N));
    const int threads = 128, blocks = (M / 16) * (N / 8) * 32 / threads;
    const char *names[3] = { "m16n8k16 bf16", "m16n8k16 f16", "m16n8k8 tf32" };
    int fails = 0;
    for (int v = 0; v < 3; v++) {
        CUDA_CHECK(cudaMemcpy(dC, C0, 4 * M * N, cudaMemcpyHostToDevice));
        if (v == 0) {
            CUDA_CHECK(cudaMemcpy(dA, Ab, 2 * M * K, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(dB, Bb, 2 * K * N, cudaMemcpyHostToDevice));
            gemm_m16n8k16<__nv_bfloat16>
                <<<blocks, threads>>>((const __nv_bfloat16 *)dA, (const __nv_bfloat16 *)dB, dC, M, N, K);
        } else if (v == 1) {
            CUDA_CHECK(cudaMemcpy(dA, Ah, 2 * M * K, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(dB, Bh, 2 * K * N, cudaMemcpyHostToDevice));
            gemm_m16n8k16<__half><<<blocks, threads>>>((const __half *)dA, (const __half *)dB, dC, M, N, K);
        } else {
            CUDA_CHECK(cudaMemcpy(dA, A, 4 * M * K, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(dB, B, 4 * K * N, cudaMemcpyHostToDevice));
            gemm_m16n8k8_tf32<<<blocks, threads>>>((const float *)dA, (const float *)dB, dC, M, N, K);
        }
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got, dC, 4 * M * N, cudaMemcpyDeviceToHost));
        fails += validate(names[v], "C", got, ref, (size_t)M * N, 1e-5);
    }
    free(A), free(B), free(C0), free(ref), free(got), free(Ab), free(Bb), free(Ah), free(Bh);
    cudaFree(dA), cudaFree(dB), cudaFree(dC);
    return verdict(fails);
}
