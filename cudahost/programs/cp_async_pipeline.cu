// Overlapping loads with computation: an SGEMM tile loop fed by cp.async (inline PTX).
//   C (M x N) = A (M x K) * B (K x N), fp32, row-major, any M, N, K (edges zero-filled with cp.async's src-size)
// A CPU reference, then four kernels: naive; shared-memory tiles loaded synchronously; a double-buffered tile loop
// (4-byte cp.async.ca, cp.async.wait_group 1); a 3-stage pipeline (16-byte cp.async.cg, needs K and N multiples of
// 4), then the validation. PTX ISA 9.7.9.25 (cp.async, cp.async.commit_group, cp.async.wait_group).
#include "program_common.cuh"

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TILE 16

// ---- CPU reference ---------------------------------------------------------------------------------------------
static void sgemm_cpu(const float *A, const float *B, float *C, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++) acc += (double)A[i * K + k] * B[k * N + j];
            C[i * N + j] = (float)acc;
        }
}

// ---- cp.async wrappers --------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
// copies src_bytes (0 or 4) and zero-fills the rest of the 4 bytes
__device__ __forceinline__ void cp_async4(void *smem, const void *gmem, int src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
                 "r"(src_bytes));
}
// copies src_bytes (0..16) and zero-fills the rest of the 16 bytes
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
                 "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- kernel 0: naive -------------------------------------------------------------------------------------------
__global__ void sgemm_naive(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; k++) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}

// ---- kernel 1: shared-memory tiles, synchronous loads ----------------------------------------------------------------
__global__ void sgemm_tiled(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = row < M && k0 + tx < K ? A[(size_t)row * K + k0 + tx] : 0.f;
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

// ---- kernel 2: double buffering with 4-byte cp.async ------------------------------------------------------------------
__device__ __forceinline__ void load_tile4(float (*As)[TILE], float (*Bs)[TILE], const float *A,
                                           const float *B, int M, int N, int K, int row, int col, int k0)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    bool ok = row < M && k0 + tx < K;
    cp_async4(&As[ty][tx], ok ? &A[(size_t)row * K + k0 + tx] : A, ok ? 4 : 0);
    ok = k0 + ty < K && col < N;
    cp_async4(&Bs[ty][tx], ok ? &B[(size_t)(k0 + ty) * N + col] : B, ok ? 4 : 0);
    cp_async_commit();
}
__global__ void sgemm_double_buffer(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][TILE][TILE];
    __shared__ __align__(16) float Bs[2][TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    const int ntiles = (K + TILE - 1) / TILE;
    float acc = 0.f;
    load_tile4(As[0], Bs[0], A, B, M, N, K, row, col, 0);
    for (int t = 0; t < ntiles; t++) {
        if (t + 1 < ntiles) {
            load_tile4(As[(t + 1) & 1], Bs[(t + 1) & 1], A, B, M, N, K, row, col, (t + 1) * TILE);
            cp_async_wait<1>(); // tile t has landed, tile t+1 may still be in flight
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[t & 1][ty][k] * Bs[t & 1][k][tx];
        __syncthreads(); // the buffer is refilled by the next iteration's copies
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

// ---- kernel 3: 3-stage pipeline with 16-byte cp.async.cg ----------------------------------------------------------------
#define STAGES 3
__device__ __forceinline__ void load_tile16(float (*As)[TILE], float (*Bs)[TILE], const float *A,
                                            const float *B, int M, int N, int K, int row0, int col0, int k0)
{
    const int tid = threadIdx.y * TILE + threadIdx.x;
    if (tid < 64) { // A: 16 rows x 4 chunks of 4 floats
        const int r = tid / 4, c = (tid % 4) * 4;
        const int left = K - (k0 + c);
        const bool ok = row0 + r < M && left > 0;
        cp_async16(&As[r][c], ok ? &A[(size_t)(row0 + r) * K + k0 + c] : A,
                   ok ? 4 * (left < 4 ? left : 4) : 0);
    } else if (tid < 128) { // B: 16 rows (k) x 4 chunks
        const int r = (tid - 64) / 4, c = ((tid - 64) % 4) * 4;
        const int left = N - (col0 + c);
        const bool ok = k0 + r < K && left > 0;
        cp_async16(&Bs[r][c], ok ? &B[(size_t)(k0 + r) * N + col0 + c] : B,
                   ok ? 4 * (left < 4 ? left : 4) : 0);
    }
    cp_async_commit(); // every thread commits a group (possibly empty): the group counts stay uniform
}
__global__ void sgemm_pipelined(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(16) float As[STAGES][TILE][TILE];
    __shared__ __align__(16) float Bs[STAGES][TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y, row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    const int ntiles = (K + TILE - 1) / TILE;
    float acc = 0.f;
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ntiles)
            load_tile16(As[s], Bs[s], A, B, M, N, K, row0, col0, s * TILE);
        else
            cp_async_commit();
    }
    for (int t = 0; t < ntiles; t++) {
        cp_async_wait<STAGES - 2>(); // tile t has landed
        __syncthreads();
        const int nt = t + STAGES - 1;
        if (nt < ntiles)
            load_tile16(As[nt % STAGES], Bs[nt % STAGES], A, B, M, N, K, row0, col0, nt * TILE);
        else
            cp_async_commit();
        const int s = t % STAGES;
        for (int k = 0; k < TILE; k++) acc += As[s][ty][k] * Bs[s][k][tx];
    }
    const int row = row0 + ty, col = col0 + tx;
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

// ---- inputs, runs and validation (validate(): program_common.cuh) ----------------------------------------------
int main(int argc, char **argv)
{
    const int M = argc > 1 ? atoi(argv[1]) : 48, N = argc > 2 ? atoi(argv[2]) : 40,
              K = argc > 3 ? atoi(argv[3]) : 52;
    if (no_cuda_device()) return 77;
    float *A = (float *)malloc(4 * (size_t)M * K), *B = (float *)malloc(4 * (size_t)K * N);
    float *ref = (float *)malloc(4 * (size_t)M * N), *got = (float *)malloc(4 * (size_t)M * N);
    srand(99);
    for (int i = 0; i < M * K; i++) A[i] = uniform_pm1();
    for (int i = 0; i < K * N; i++) B[i] = uniform_pm1();
    sgemm_cpu(A, B, ref, M, N, K);
    float *dA, *dB, *dC;
    CUDA_CHECK(cudaMalloc(&dA, 4 * (size_t)M * K));
    CUDA_CHECK(cudaMalloc(&dB, 4 * (size_t)K * N));
    CUDA_CHECK(cudaMalloc(&dC, 4 * (size_t)M * N));
    CUDA_CHECK(cudaMemcpy(dA, A, 4 * (size_t)M * K, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, B, 4 * (size_t)K * N, cudaMemcpyHostToDevice));
    const dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE), block(TILE, TILE);
    const char *names[4] = { "naive", "tiled, synchronous loads", "double buffer, cp.async 4 B",
                             "3 stages, cp.async.cg 16 B" };
    int fails = 0;
    for (int v = 0; v < 4; v++) {
        if (v == 3 && (K % 4 || N % 4)) {
            printf("%-32s skipped (needs K and N multiples of 4)\n", names[v]);
            continue;
        }
        CUDA_CHECK(cudaMemset(dC, 0xff, 4 * (size_t)M * N)); // NaN: an unwritten output fails
        if (v == 0) sgemm_naive<<<grid, block>>>(dA, dB, dC, M, N, K);
        if (v == 1) sgemm_tiled<<<grid, block>>>(dA, dB, dC, M, N, K);
        if (v == 2) sgemm_double_buffer<<<grid, block>>>(dA, dB, dC, M, N, K);
        if (v == 3) sgemm_pipelined<<<grid, block>>>(dA, dB, dC, M, N, K);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(got, dC, 4 * (size_t)M * N, cudaMemcpyDeviceToHost));
        fails += validate(names[v], "C", got, ref, (size_t)M * N, 1e-4);
    }
    free(A), free(B), free(ref), free(got);
    cudaFree(dA), cudaFree(dB), cudaFree(dC);
    return verdict(fails);
}
