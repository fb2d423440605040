// bf16 GEMM on Hopper's warpgroup tensor cores (sm_90a): wgmma.mma_async.m64nNk16 with operands in shared memory
// described by 64-bit matrix descriptors, and with A from registers.
//   C (M x N, fp32, row-major) = A (M x K, bf16, row-major) * B (K x N, bf16)
// One warpgroup (128 threads) per CTA computes a 64 x 128 tile of C over K in steps of BK = 64 (four k16 wgmma per
// step, chained on the same accumulators, one wgmma-group per step). Versions (kernel template parameter V):
//   0  A and B K-major (B stored N x K), no swizzle: core matrices of 8 rows x 16 bytes, LBO = 128 (the next 8 k),
//      SBO = 1024 (the next 8 rows)
//   1  A and B K-major, 128-byte swizzle: 128-byte rows (BK = 64 bf16), the 16-byte chunk c of row r stored at
//      chunk c ^ (r % 8); SBO = 1024 (8 rows), the k16 steps advance the start address by 32 bytes
//   2  A K-major 128B-swizzled, B MN-major (imm-trans-b = 1, B stored K x N as in memory) 128B-swizzled: rows of 64 n
//      (128 bytes) for each k, SBO = 1024 (the next 8 k), LBO = 8192 (the next 64 n)
//   3  A from registers (the mma.m16n8k16 A fragment of each warp's 16 rows), B K-major no swizzle, two
//      m64n64k16 per k16 step (the two halves of the tile's N), imm-scale-b = -1: the kernel stores -D
// The first wgmma of every version has scale-d = 0 on accumulators that hold garbage (1e30). Layouts and descriptor
// fields: PTX ISA 9.7.15.5 (matrix descriptor, shared memory matrix layout, register fragments). Needs M a multiple
// of 64, N of 128 and K of 64. Host mode emulates wgmma (cudahost/README.md); nvcc builds it for sm_90a only.
#include "program_common.cuh"

#include <cuda_runtime.h>
#include <cuda_bf16.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__CUDAHOST__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HAVE_WGMMA 1 // device code for sm_90a (or host mode): the wgmma instructions exist
#endif

// ---- CPU reference -----------------------------------------------------------------------------------------------
static void gemm_cpu(const float *A, const float *B, float *C, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++) acc += (double)A[i * K + k] * B[k * N + j];
            C[i * N + j] = (float)acc;
        }
}

// ---- PTX wrappers ------------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// matrix descriptor: start address, LBO and SBO in 16-byte units (14 bits each), swizzle mode in bits 62-63
// (0 none, 1 128B, 2 64B, 3 32B), base offset 0
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t swizzle)
{
    return (uint64_t)((addr & 0x3ffff) >> 4) | ((uint64_t)((lbo & 0x3ffff) >> 4) << 16) |
           ((uint64_t)((sbo & 0x3ffff) >> 4) << 32) | ((uint64_t)swizzle << 62);
}

__device__ __forceinline__ void wgmma_fence()
{
#if HAVE_WGMMA
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit()
{
#if HAVE_WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void wgmma_wait()
{
#if HAVE_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// generic-proxy shared-memory writes before the async proxy (wgmma) reads them
__device__ __forceinline__ void fence_proxy_async()
{
#if HAVE_WGMMA
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// d (64 x 128 fp32, 64 registers per thread) = A (desc) * B (desc) + (scale_d ? d : 0)
template <int TRANS_A, int TRANS_B>
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t da, uint64_t db, int scale_d)
{
#if HAVE_WGMMA
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "
        "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "
        "%59, %60, %61, %62, %63}, %64, %65, p, %67, %68, %69, %70;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
          "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
          "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
          "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
          "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
          "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
          "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d), "n"(1), "n"(1), "n"(TRANS_A), "n"(TRANS_B));
#else
    (void)d, (void)da, (void)db, (void)scale_d;
#endif
}
// d (64 x 64 fp32, 32 registers per thread) = A (registers) * (SCALE_B * B (desc)) + (scale_d ? d : 0)
template <int SCALE_B>
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t db,
                                                   int scale_d)
{
#if HAVE_WGMMA
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "
        "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, %38, %39, "
        "%40;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
          "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
          "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
          "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(1), "n"(SCALE_B), "n"(0));
#else
    (void)d, (void)a, (void)db, (void)scale_d;
#endif
}

// ---- shared-memory layouts (byte offsets within a 1024-byte aligned tile) -----------------------------------------
constexpr int BM = 64, BN = 128, BK = 64;
// K-major, no swizzle: 8 x 16-byte core matrices, the 8 k-core matrices of 8 rows contiguous (LBO 128, SBO 1024)
__device__ __forceinline__ uint32_t off_k_none(int r, int k)
{
    return (uint32_t)((r / 8) * 1024 + (k / 8) * 128 + (r % 8) * 16 + (k % 8) * 2);
}
// K-major, 128B swizzle: row r at 128 r, its 16-byte chunk c at chunk c ^ (r % 8)
__device__ __forceinline__ uint32_t off_k_sw128(int r, int k)
{
    return (uint32_t)(r * 128 + ((((k / 8) ^ (r % 8)) * 16)) + (k % 8) * 2);
}
// MN-major (B: n contiguous), 128B swizzle: for each 64-n half, k rows of 128 bytes (chunk n/8 ^ k % 8)
__device__ __forceinline__ uint32_t off_mn_sw128(int n, int k)
{
    const int nh = n / 64, nn = n % 64;
    return (uint32_t)(nh * 8192 + k * 128 + (((nn / 8) ^ (k % 8)) * 16) + (nn % 8) * 2);
}

template <int V> __device__ __forceinline__ uint32_t off_a(int r, int k)
{
    return V == 1 || V == 2 ? off_k_sw128(r, k) : off_k_none(r, k);
}
template <int V> __device__ __forceinline__ uint32_t off_b(int n, int k)
{
    return V == 1 ? off_k_sw128(n, k) : V == 2 ? off_mn_sw128(n, k) : off_k_none(n, k);
}

// ---- the kernel --------------------------------------------------------------------------------------------------
template <int V>
__global__ void __launch_bounds__(128)
    gemm_wgmma(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int K)
{
    (void)M; // (the grid covers M)
    extern __shared__ unsigned char smem_raw[];
    // the tiles start at a 1024-byte boundary of the shared state space (the 128B swizzle pattern's period)
    unsigned char *smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    unsigned char *sA = smem, *sB = smem + BM * BK * 2;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    float d[64];
    for (int i = 0; i < 64; i++) d[i] = 1e30f; // garbage: the first wgmma has scale-d = 0
    float(&d0)[32] = *reinterpret_cast<float(*)[32]>(&d[0]);
    float(&d1)[32] = *reinterpret_cast<float(*)[32]>(&d[32]);

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += 128) {
            const int r = e / BK, k = e % BK;
            *reinterpret_cast<__nv_bfloat16 *>(sA + off_a<V>(r, k)) = A[(size_t)(bm + r) * K + k0 + k];
        }
        for (int e = tid; e < BN * BK; e += 128) {
            const int n = e % BN, k = e / BN; // (n fastest: coalesced reads of B's rows)
            *reinterpret_cast<__nv_bfloat16 *>(sB + off_b<V>(n, k)) = B[(size_t)(k0 + k) * N + bn + n];
        }
        __syncthreads();
        fence_proxy_async();
        const uint32_t a0 = smem_u32(sA), b0 = smem_u32(sB);
        if (V == 3) {
            // the A fragments of this warp's 16 rows for the 4 k16 steps (row-major reads of the K-major tile)
            uint32_t af[4][4];
            for (int s = 0; s < 4; s++)
                for (int j = 0; j < 4; j++) {
                    const int r = 16 * warp + g + 8 * (j & 1), k = 16 * s + 2 * q + 8 * (j >> 1);
                    uint16_t lo, hi;
                    memcpy(&lo, sA + off_a<V>(r, k), 2);
                    memcpy(&hi, sA + off_a<V>(r, k + 1), 2);
                    af[s][j] = (uint32_t)lo | ((uint32_t)hi << 16);
                }
            wgmma_fence();
            for (int s = 0; s < 4; s++) {
                const int sd = (k0 > 0 || s > 0) ? 1 : 0;
                wgmma_m64n64k16_rs<-1>(d0, af[s], make_desc(b0 + s * 256, 128, 1024, 0), sd);
                wgmma_m64n64k16_rs<-1>(d1, af[s], make_desc(b0 + 8 * 1024 + s * 256, 128, 1024, 0), sd);
            }
        } else {
            wgmma_fence();
            for (int s = 0; s < 4; s++) {
                const int sd = (k0 > 0 || s > 0) ? 1 : 0;
                uint64_t da, db;
                if (V == 0) {
                    da = make_desc(a0 + s * 256, 128, 1024, 0);
                    db = make_desc(b0 + s * 256, 128, 1024, 0);
                } else {
                    da = make_desc(a0 + s * 32, 16, 1024, 1);
                    db = V == 1 ? make_desc(b0 + s * 32, 16, 1024, 1)
                                : make_desc(b0 + s * 2048, 8192, 1024, 1);
                }
                if (V == 2)
                    wgmma_m64n128k16_ss<0, 1>(d, da, db, sd);
                else
                    wgmma_m64n128k16_ss<0, 0>(d, da, db, sd);
            }
        }
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads(); // the tiles are rewritten next step
    }
    // the accumulator fragment: register i is row 16 warp + g + 8 ((i % 4) / 2), column 8 (i / 4) + 2 q + i % 2 (for
    // version 3: of the N half i / 32)
    for (int i = 0; i < 64; i++) {
        const int ii = V == 3 ? i % 32 : i, half = V == 3 ? i / 32 : 0;
        const int r = 16 * warp + g + 8 * ((ii % 4) / 2), c = 64 * half + 8 * (ii / 4) + 2 * q + ii % 2;
        C[(size_t)(bm + r) * N + bn + c] = V == 3 ? -d[i] : d[i];
    }
}

// ---- host --------------------------------------------------------------------------------------------------------
template <int V>
static int run_version(const char *name, const __nv_bfloat16 *dA, const __nv_bfloat16 *dB, float *dC,
                       float *hC, const float *ref, int M, int N, int K)
{
    const size_t smem = (size_t)(BM + BN) * BK * 2 + 1024;
    CUDA_CHECK(cudaFuncSetAttribute(gemm_wgmma<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_CHECK(cudaMemset(dC, 0xff, (size_t)M * N * sizeof(float))); // NaN: an unwritten output fails
    gemm_wgmma<V><<<dim3(N / BN, M / BM), 128, smem>>>(dA, dB, dC, M, N, K);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(hC, dC, (size_t)M * N * sizeof(float), cudaMemcpyDeviceToHost));
    // products of bf16 are exact in fp32; K = 192 fp32 additions of terms below 1
    return validate(name, "C", hC, ref, (size_t)M * N, 1e-4);
}

int main()
{
#ifndef __CUDAHOST__
    if (no_cuda_device()) return 77;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major != 9) {
        printf("wgmma needs an sm_90 GPU\n");
        return 77;
    }
#endif
    const int M = 128, N = 256, K = 192;
    srand(14);
    __nv_bfloat16 *hA = (__nv_bfloat16 *)malloc((size_t)M * K * 2),
                  *hB = (__nv_bfloat16 *)malloc((size_t)K * N * 2);
    float *fA = (float *)malloc((size_t)M * K * 4), *fB = (float *)malloc((size_t)K * N * 4);
    float *ref = (float *)malloc((size_t)M * N * 4), *hC = (float *)malloc((size_t)M * N * 4);
    fill_bf16(hA, fA, (size_t)M * K);
    fill_bf16(hB, fB, (size_t)K * N);
    gemm_cpu(fA, fB, ref, M, N, K);
    __nv_bfloat16 *dA, *dB;
    float *dC;
    CUDA_CHECK(cudaMalloc(&dA, (size_t)M * K * 2));
    CUDA_CHECK(cudaMalloc(&dB, (size_t)K * N * 2));
    CUDA_CHECK(cudaMalloc(&dC, (size_t)M * N * 4));
    CUDA_CHECK(cudaMemcpy(dA, hA, (size_t)M * K * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dB, hB, (size_t)K * N * 2, cudaMemcpyHostToDevice));
    int fails = 0;
    fails += run_version<0>("wgmma SS, K-major, no swizzle", dA, dB, dC, hC, ref, M, N, K);
    fails += run_version<1>("wgmma SS, K-major, 128B swizzle", dA, dB, dC, hC, ref, M, N, K);
    fails += run_version<2>("wgmma SS, B MN-major, 128B swizzle", dA, dB, dC, hC, ref, M, N, K);
    fails += run_version<3>("wgmma RS (A in registers), scale-b -1", dA, dB, dC, hC, ref, M, N, K);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    free(hA);
    free(hB);
    free(fA);
    free(fB);
    free(ref);
    free(hC);
    return verdict(fails);
}
