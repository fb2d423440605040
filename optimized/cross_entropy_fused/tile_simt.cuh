// Fused linear cross-entropy (optimized/cross_entropy_fused.cu), f32 path: the 64 x 64 SIMT
// tile (its constants, the fp32 16x8x16 product, the shared-memory slice, the logits tile).
#pragma once

#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"

#include <cstddef>
#include <cstdint>

namespace MF_NS {
namespace cce {

constexpr int kThreads = 128; // 4 warps
constexpr int kBM = 64;       // rows per CTA (16 per warp)
constexpr int kBN = 64;       // vocabulary columns per tile
constexpr int kBK = 32;       // slice of D per shared-memory stage
constexpr int kLdk = kBK + 8; // padded shared row (bf16: 80 B, f32: 160 B)
constexpr int kLdg = kBN + 4; // padded shared row of the fp32 gradient tile
constexpr int kNFrag = kBN / 8;
// These 64 x 64 SIMT kernels serve f32 inputs only (bf16: the tensor-core
// kernels, tile_mma.cuh). No minimum CTAs per SM in __launch_bounds__: any
// minimum made ptxas spill the SIMT backward; without one it needs 128
// registers and no spill. sm_90 figures: docs/cross_entropy.md.

// c (16 x 8, fp32, PTX fragment layout) += A (16 x 16) . B (16 x 8); A(r, k) and
// B(k, n) are read through the functors. groupID g = lane / 4, t = lane % 4:
//   a_i: row g (+8 for i in {2,3,6,7}), col 2t + (i & 1) (+8 for i >= 4)
//   b_i: row 2t + (i & 1) (+8 for i >= 2), col g
//   c_i: row g (+8 for i >= 2), col 2t + (i & 1)
// f32 only: the 16x8x16 product with fp32 FMAs, in k order (the bf16 kernels
// issue the real mma.sync, fed by ldmatrix).
template <typename T, typename FA, typename FB>
__device__ __forceinline__ void mma16816(float c[4], int lane, const FA &A, const FB &B)
{
    const int g = lane >> 2, t = lane & 3;
    MF_UNROLL
    for (int k = 0; k < 16; ++k) { // per element: k in order, one fmaf each
        const float a0 = A(g, k), a1 = A(g + 8, k);
        const float b0 = B(k, 2 * t), b1 = B(k, 2 * t + 1);
        c[0] = fmaf(a0, b0, c[0]);
        c[1] = fmaf(a0, b1, c[1]);
        c[2] = fmaf(a1, b0, c[2]);
        c[3] = fmaf(a1, b1, c[3]);
    }
}

template <typename T> struct Smem {
    T a[kBM][kLdk]; // hidden block slice (rows x kBK)
    T b[kBN][kLdk]; // W tile slice (vocab x kBK)
};

// sm <- hidden[row0 .. +63, k0 .. +31] and W[v0 .. +63, k0 .. +31], zero outside
// [0, N) x [0, D) and [0, V) x [0, D).
template <typename T>
__device__ __forceinline__ void load_slice(Smem<T> &sm, const T *__restrict__ hidden,
                                           const T *__restrict__ weight, size_t N, size_t D, size_t V,
                                           size_t row0, size_t v0, size_t k0)
{
    for (int e = threadIdx.x; e < kBM * kBK; e += kThreads) {
        const int r = e / kBK, k = e % kBK;
        const size_t row = row0 + (size_t)r, col = k0 + (size_t)k;
        sm.a[r][k] = (row < N && col < D) ? hidden[row * D + col] : from_f32<T>(0.0f);
        const size_t v = v0 + (size_t)r;
        sm.b[r][k] = (v < V && col < D) ? weight[v * D + col] : from_f32<T>(0.0f);
    }
}

// acc (this warp's 16 x 64 logits, fragment layout) = hidden[row0 + ., :] .
// W[v0 + ., :]^T, zero outside [0, N) x [0, V). Every thread of the block calls
// it (barriers inside); on return sm.a / sm.b are still being read by other
// warps until the caller's next barrier.
template <typename T>
__device__ __forceinline__ void logits_tile(float (&acc)[1][kNFrag][4], Smem<T> &sm,
                                            const T *__restrict__ hidden, const T *__restrict__ weight,
                                            size_t N, size_t D, size_t V, size_t row0, size_t v0)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    frags_zero(acc);
    for (size_t k0 = 0; k0 < D; k0 += kBK) {
        __syncthreads(); // the previous slice (or the caller's use of sm) is done
        load_slice(sm, hidden, weight, N, D, V, row0, v0, k0);
        __syncthreads();
        const T(*a)[kLdk] = sm.a + warp * 16;
        MF_UNROLL
        for (int kk = 0; kk < kBK; kk += 16) {
            auto A = [&](int r, int k) { return to_f32(a[r][kk + k]); };
            MF_UNROLL
            for (int f = 0; f < kNFrag; ++f) {
                const T(*b)[kLdk] = sm.b + f * 8;
                auto B = [&](int k, int n) { return to_f32(b[n][kk + k]); };
                mma16816<T>(acc[0][f], lane, A, B);
            }
        }
    }
}

} // namespace cce
} // namespace MF_NS
