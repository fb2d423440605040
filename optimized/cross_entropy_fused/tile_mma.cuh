// Fused linear cross-entropy, bf16 on mma.sync: the tensor-core tile (constants, the
// cp.async stages, the 128 x 128 logits tile by ldmatrix and mma.sync).
#pragma once

#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"

#include <cuda_bf16.h>
#include <cstddef>
#include <cstdint>

namespace MF_NS {
namespace cce {

// ==== bf16: the tensor-core kernels ================================================
// One CTA of 8 warps (256 threads) per 128-row block; the vocabulary streams by in
// 128-column tiles. The logits tile (128 x 128, fp32) lives in registers: warp
// w = 4 wn + wm owns rows 32 wm .. 32 wm + 31 (two m16 tiles) x columns
// 64 wn .. 64 wn + 63 (eight n8 fragments): 64 fp32 accumulators per lane, and
// every fragment it loads from shared memory feeds two (A) or eight (B) mma.sync.
// The operands stream over D in 32-wide slices through two shared stages filled
// by cp.async one slice ahead of use (16-byte copies with zero fill; a D that is
// not a multiple of 8, or an unaligned pointer, takes plain loads instead: the
// same stages, no overlap) and reach the tensor cores through ldmatrix.
// docs/cross_entropy.md has the sizes, ptxas figures and the performance argument.
constexpr int kTcWarps = 8;
constexpr int kTcThreads = 32 * kTcWarps;
constexpr int kTcBM = 128; // rows per CTA
constexpr int kTcBN = 128; // vocabulary columns per tile
constexpr int kTcBK = 32;  // slice of D per stage
constexpr int kTcLdk =
    kTcBK + 8;              // stage row: 80 B (16-byte multiple; 8 rows hit 8 distinct 16-B bank groups)
constexpr int kTcStrip = 4; // backward: vocabulary tiles per strip (512 columns; the wgmma kernel's always)
// The mma.sync backward's strip of S tiles keeps G in shared memory: rows of 128 S + 8
// bf16 (S = 4: 1040 B; S = 3: 784 B; 16-byte multiples, 8 rows hit 8 distinct 16-B bank
// groups). S = 4 needs 175,616 B per block with the static row statistics, more than an
// A100's 166,912 B: the launcher takes S = 3 (142,848 B) where 4 does not fit.
__host__ __device__ constexpr int tc_ldg(int strip) { return kTcBN * strip + 8; }
static_assert(kTcBM == kTcBN, "the scalar stage loader fills both operands in one loop");

typedef __nv_bfloat16 bf16;

struct TcStage {
    bf16 a[kTcBM][kTcLdk]; // hidden[row0 .., k0 .. k0 + 31]
    bf16 b[kTcBN][kTcLdk]; // W[v0 .., k0 .. k0 + 31]
};
constexpr size_t tc_bwd_smem(int strip) { return 2 * sizeof(TcStage) + sizeof(bf16) * kTcBM * tc_ldg(strip); }
constexpr size_t kTcBwdStatic = kTcBM * (2 * sizeof(float) + sizeof(int)); // row_lse, row_g, row_y

// Stage <- hidden[row0 .. +127, k0 .. +31] and W[v0 .. +127, k0 .. +31], zero
// outside [0, N) x [0, D) and [0, V) x [0, D). vec: D % 8 == 0 and both bases
// 16-byte aligned (cp.async, completes at a wait); else plain loads (complete here).
__device__ __forceinline__ void tc_load_stage(TcStage &st, const bf16 *__restrict__ hidden,
                                              const bf16 *__restrict__ weight, size_t N, size_t D, size_t V,
                                              size_t row0, size_t v0, size_t k0, bool vec)
{
    const int tid = threadIdx.x;
    if (vec) {
        constexpr int kChunks = kTcBK / 8; // 16-byte chunks per stage row
        MF_UNROLL
        for (int c = tid; c < (kTcBM + kTcBN) * kChunks; c += kTcThreads) {
            const int r = c / kChunks, kc = (c % kChunks) * 8;
            const bool is_a = r < kTcBM;
            const int rr = is_a ? r : r - kTcBM;
            const size_t row = (is_a ? row0 : v0) + (size_t)rr, col = k0 + (size_t)kc;
            const bool in = row < (is_a ? N : V) && col < D;
            const bf16 *src = (is_a ? hidden : weight) + (in ? row * D + col : 0);
            cp_async16(is_a ? &st.a[rr][kc] : &st.b[rr][kc], src, in ? 16u : 0u);
        }
    } else {
        const bf16 zero = __float2bfloat16(0.0f);
        for (int e = tid; e < kTcBM * kTcBK; e += kTcThreads) {
            const int r = e / kTcBK, k = e % kTcBK;
            const size_t col = k0 + (size_t)k, row = row0 + (size_t)r, v = v0 + (size_t)r;
            st.a[r][k] = (row < N && col < D) ? hidden[row * D + col] : zero;
            st.b[r][k] = (v < V && col < D) ? weight[v * D + col] : zero;
        }
    }
}

// acc (warp (wm, wn)'s 32 x 64 logits, fragment layout: acc[mt][f][i] is row
// 32 wm + 16 mt + g + 8 (i >> 1), column 64 wn + 8 f + 2 t + (i & 1)) =
// hidden[row0 + ., :] . W[v0 + ., :]^T. Every thread calls it; it ends with a
// barrier, so the stages are free on return.
__device__ __forceinline__ void tc_logits_tile(float (&acc)[2][8][4], TcStage *st,
                                               const bf16 *__restrict__ hidden,
                                               const bf16 *__restrict__ weight, size_t N, size_t D, size_t V,
                                               size_t row0, size_t v0, bool vec)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp & 3, wn = warp >> 2;
    frags_zero(acc);
    const size_t n_slices = (D + kTcBK - 1) / kTcBK;
    tc_load_stage(st[0], hidden, weight, N, D, V, row0, v0, 0, vec);
    cp_async_commit();
    for (size_t s = 0; s < n_slices; ++s) {
        if (s + 1 < n_slices) // prefetch: its stage was released by the last barrier
            tc_load_stage(st[(s + 1) & 1], hidden, weight, N, D, V, row0, v0, (s + 1) * kTcBK, vec);
        cp_async_commit();
        cp_async_wait_1();
        __syncthreads();
        const TcStage &c = st[s & 1];
        MF_UNROLL
        for (int kk = 0; kk < kTcBK; kk += 16) {
            uint32_t a[2][4];
            MF_UNROLL
            for (int mt = 0; mt < 2; ++mt)
                ldsm_x4(a[mt], &c.a[32 * wm + 16 * mt + (lane & 15)][kk + (lane >> 4) * 8]);
            MF_UNROLL
            for (int fp = 0; fp < 4; ++fp) { // two n8 fragments per ldmatrix.x4
                uint32_t b[4];
                ldsm_x4(
                    b, &c.b[64 * wn + 16 * fp + (lane & 7) + ((lane >> 4) << 3)][kk + ((lane >> 3) & 1) * 8]);
                MF_UNROLL
                for (int mt = 0; mt < 2; ++mt) {
                    mma_x2(acc[mt][2 * fp], acc[mt][2 * fp + 1], a[mt], b);
                }
            }
        }
        __syncthreads(); // stage s & 1 is consumed: the next prefetch may overwrite it
    }
}

} // namespace cce
} // namespace MF_NS
