// Micro-benchmarks of host execution mode (not a test): per-thread, per-barrier, per-shuffle and per-launch costs,
// and a 256^3 SGEMM with 16x16 shared-memory tiles.   Run: bin/cudahost_bench
#include <cuda_runtime.h>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <vector>

__global__ void empty_k(float *p)
{
    if (p && threadIdx.x == 1u << 30) p[0] = 1;
}
__global__ void write_k(float *p) { p[blockIdx.x * blockDim.x + threadIdx.x] = 1.f; }
__global__ void sync_k(float *p, int iters)
{
    __shared__ float s[1024];
    float acc = 0;
    for (int i = 0; i < iters; i++) {
        s[threadIdx.x] = (float)i;
        __syncthreads();
        acc += s[(threadIdx.x + 1) & 255];
        __syncthreads();
    }
    p[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__global__ void shfl_k(float *p, int iters)
{
    float v = (float)threadIdx.x;
    for (int i = 0; i < iters; i++) v += __shfl_xor_sync(0xffffffffu, v, 1 + (i & 15));
    p[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
#define TILE 16
__global__ void sgemm(int n, const float *A, const float *B, float *C)
{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0;
    for (int t = 0; t < n; t += TILE) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

// bf16 GEMM on tensor cores (inline PTX: ldmatrix + mma.sync.m16n8k16, as in programs/mma_ldmatrix_gemm.cu, B
// row-major): block tile 64x64, k-step 16, 4 warps of 32x32.
#include <cuda_bf16.h>
#include <stdint.h>
__global__ void __launch_bounds__(128)
    bgemm_mma(int n, const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C)
{
    __shared__ __align__(16) __nv_bfloat16 As[64][24];
    __shared__ __align__(16) __nv_bfloat16 Bs[16][72];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = (warp >> 1) * 32,
              wn = (warp & 1) * 32;
    const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
    float acc[2][4][4] = {};
    for (int k0 = 0; k0 < n; k0 += 16) {
        *(uint4 *)&As[tid >> 1][(tid & 1) * 8] =
            *(const uint4 *)&A[(size_t)(m0 + (tid >> 1)) * n + k0 + (tid & 1) * 8];
        *(uint4 *)&Bs[tid >> 3][(tid & 7) * 8] =
            *(const uint4 *)&B[(size_t)(k0 + (tid >> 3)) * n + n0 + (tid & 7) * 8];
        __syncthreads();
        uint32_t a[2][4], b[4][2];
        for (int i = 0; i < 2; i++)
            asm volatile(
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                : "r"((uint32_t)__cvta_generic_to_shared(&As[wm + i * 16 + (lane & 15)][(lane >> 4) * 8])));
        for (int j = 0; j < 4; j += 2)
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(b[j][0]), "=r"(b[j][1]), "=r"(b[j + 1][0]), "=r"(b[j + 1][1])
                         : "r"((uint32_t)__cvta_generic_to_shared(
                             &Bs[((lane >> 3) & 1) * 8 + (lane & 7)][wn + j * 8 + (lane >> 4) * 8])));
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++)
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                             "{%4,%5,%6,%7}, {%8,%9}, "
                             "{%0,%1,%2,%3};\n"
                             : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                             : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]),
                               "r"(b[j][1]));
        __syncthreads();
    }
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < 4; q++)
                C[(size_t)(m0 + wm + i * 16 + g + (q >> 1) * 8) * n + n0 + wn + j * 8 + 2 * t + (q & 1)] =
                    acc[i][j][q];
}

// one mma.sync after another (the accumulators chain them): the cost of one emulated mma.sync per warp
__global__ void mma_k(float *p, int iters)
{
    float c[4] = { 0.f, 0.f, 0.f, 0.f };
    uint32_t a = 0x3f803f80u + threadIdx.x, b = 0x3f803f80u;
    for (int i = 0; i < iters; i++)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a), "r"(b));
    p[blockIdx.x * blockDim.x + threadIdx.x] = c[0] + c[1] + c[2] + c[3];
}

#include <time.h>
// CPU time of the process (less sensitive to a loaded machine than wall time; with CUDAHOST_WORKERS=1 it is the
// kernel's time), or wall time with CUDAHOST_BENCH_WALL=1.
static double now()
{
    static const bool wall = std::getenv("CUDAHOST_BENCH_WALL") != nullptr;
    if (wall)
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main()
{
    float *d;
    cudaMalloc(&d, (1 << 22) * sizeof(float));
    // launch overhead
    empty_k<<<1, 1>>>(d);
    double t0 = now();
    for (int i = 0; i < 2000; i++) empty_k<<<1, 1>>>(d);
    double t1 = now();
    std::printf("launch (1x1):            %8.2f us\n", (t1 - t0) / 2000 * 1e6);
    t0 = now();
    for (int i = 0; i < 200; i++) empty_k<<<4, 32>>>(d);
    t1 = now();
    std::printf("launch (4x32):           %8.2f us\n", (t1 - t0) / 200 * 1e6);
    // barrier-free threads
    write_k<<<4096, 1024>>>(d);
    t0 = now();
    write_k<<<4096, 1024>>>(d);
    t1 = now();
    std::printf("barrier-free thread:     %8.2f ns\n", (t1 - t0) / (4096.0 * 1024) * 1e9);
    sync_k<<<16, 256>>>(d, 10);
    t0 = now();
    sync_k<<<64, 256>>>(d, 100);
    t1 = now();
    std::printf("__syncthreads per thread:%8.2f ns\n", (t1 - t0) / (64.0 * 256 * 200) * 1e9);
    t0 = now();
    shfl_k<<<64, 256>>>(d, 100);
    t1 = now();
    const double shfl_ns = (t1 - t0) / (64.0 * 256 * 100) * 1e9;
    std::printf("shuffle per thread:      %8.2f ns\n", shfl_ns);
    t0 = now();
    mma_k<<<64, 256>>>(d, 100);
    t1 = now();
    const double mma_warp_ns = (t1 - t0) / (64.0 * 8 * 100) * 1e9, shfl_warp_ns = 32 * shfl_ns;
    std::printf("mma.sync per warp:       %8.2f ns (%.1f warp-wide shuffles)\n", mma_warp_ns,
                mma_warp_ns / shfl_warp_ns);
    const int n = 256;
    float *A, *B, *C;
    cudaMalloc(&A, n * n * 4);
    cudaMalloc(&B, n * n * 4);
    cudaMalloc(&C, n * n * 4);
    cudaMemset(A, 0, n * n * 4);
    cudaMemset(B, 0, n * n * 4);
    sgemm<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(n, A, B, C);
    t0 = now();
    sgemm<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(n, A, B, C);
    t1 = now();
    const double sgemm_ms = (t1 - t0) * 1e3;
    std::printf("sgemm 256^3 16x16 tiles: %8.2f ms\n", sgemm_ms);
    __nv_bfloat16 *Ab, *Bb;
    cudaMalloc(&Ab, n * n * 2);
    cudaMalloc(&Bb, n * n * 2);
    cudaMemset(Ab, 0, n * n * 2);
    cudaMemset(Bb, 0, n * n * 2);
    bgemm_mma<<<dim3(n / 64, n / 64), 128>>>(n, Ab, Bb, C);
    t0 = now();
    bgemm_mma<<<dim3(n / 64, n / 64), 128>>>(n, Ab, Bb, C);
    t1 = now();
    const double mma_ms = (t1 - t0) * 1e3;
    std::printf(
        "bf16 gemm 256^3 mma.sync: %7.2f ms (%.1fx faster than the SIMT sgemm; %.2f us per mma.sync)\n",
        mma_ms, sgemm_ms / mma_ms, mma_ms * 1e3 / (256.0 * 256 * 256 / (16 * 8 * 16)));
    return cudaGetLastError() != cudaSuccess;
}
