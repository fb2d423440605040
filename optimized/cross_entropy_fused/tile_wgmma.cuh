// Fused linear cross-entropy, bf16 on sm_90a: the wgmma tile (constants, 128B-swizzled
// stages, descriptors, the logits tile on wgmma.mma_async).
#pragma once

#include "tile_mma.cuh"
#include "mf_wgmma.cuh"

namespace MF_NS {
namespace cce {

// ==== bf16 on sm_90a: warpgroup MMA (wgmma) =========================================
// The same CTA walk as the mma.sync kernels (128-row blocks, 128-column vocabulary
// tiles, 8 warps), with the logits tile computed by the two warpgroups of the CTA:
// warpgroup wg = warp / 4 owns rows 64 wg .. 64 wg + 63 and all 128 columns, one
// wgmma.mma_async.m64n128k16 per 16 of D (A = hidden rows, B = W rows, both K-major
// in shared memory, read through matrix descriptors). Its accumulator layout: warp
// w = warp % 4 of the warpgroup owns rows 16 w .. 16 w + 15, and per 8-column block
// the mma.m16n8 pattern, so a thread holds acc[0][f][i] = row 16 w + g + 8 (i >> 1),
// column 8 f + 2 t + (i & 1): the epilogue helpers of common.cuh (for_each_frag's
// layout with MT = 1, NF = 16) apply unchanged, and a row's 128 columns sit in the 4
// lanes of one quad (no cross-warp combine). The forward uses 256-column tiles instead
// (wg_logits_tile<256>: m64n256k16, NF = 32, 48 KiB stages); the backward keeps 128
// (its G strip and gradient products need the registers).
// Operands stream over D in 64-wide slices (128-byte rows, the 128-byte swizzle:
// the 16-byte chunk c of row r at chunk c ^ (r % 8)) through two 32 KiB stages of
// dynamic shared memory (1024-byte aligned: the swizzle's period) filled by
// cp.async one slice ahead (plain loads when D % 8 != 0 or a base is unaligned).
// Compiled with a real body where the wgmma instructions exist (sm_90a code, or
// host mode); elsewhere the kernels are stubs that trap, and the launcher never
// picks them (wgmma_available()).
constexpr int kWgBK = 64;                            // slice of D per stage: 128-byte rows
constexpr int kWgOperandBytes = kTcBM * kWgBK * 2;   // one operand of a stage: 16 KiB
constexpr int kWgStageBytes = 2 * kWgOperandBytes;   // hidden slice + W slice
constexpr size_t kWgStagesBytes = 2 * kWgStageBytes; // double-buffered: 64 KiB
constexpr size_t kWgAlign = 1024;                    // slack to align the dynamic smem base
// The forward's vocabulary tiles are 256 wide (m64n256k16: 128 accumulators per thread);
// its stages hold the hidden slice (16 KiB) and a 256-row W slice (32 KiB).
constexpr int kWgFwdBN = 256;
constexpr int kWgFwdStageBytes = kWgOperandBytes + kWgFwdBN * kWgBK * 2; // 48 KiB
constexpr size_t kWgFwdSmem = kWgAlign + 2 * (size_t)kWgFwdStageBytes;
// The backward's strip of G (dL/dz, bf16, 128 rows x kTcStrip * 128 columns) in the wgmma
// canonical layout: 64-column chunks of 128 rows x 128 bytes, 128B-swizzled, 16 KiB each.
constexpr size_t kWgGBytes = (size_t)kTcStrip * (kTcBN / kWgBK) * kWgOperandBytes; // 128 KiB
constexpr size_t kWgBwdSmem = kWgAlign + kWgStagesBytes + kWgGBytes;
static_assert(kTcBM == kTcBN && kTcBM == 128, "two m64 warpgroups x n128");
static_assert(kWgStagesBytes % kWgAlign == 0, "the G strip starts 1024-byte aligned");

// Byte offset of G(r, c) (row r < 128, strip column c) in the strip: chunk c / 64, then as a
// K-major 128B-swizzled operand (K = the vocabulary column).
__device__ __forceinline__ int wg_g_off(int r, int c)
{
    return (c >> 6) * kWgOperandBytes + wg_sw128(r, c & 63);
}

// Descriptor of an MN-major operand (imm-trans 1) stored as rows of 64 MN elements (128 bytes)
// per k, 128B-swizzled: element (mn, k) at (mn % 64) 2 + (k % 8) 128 + (k / 8) SBO, SBO = 1024
// (the next 8 k). LBO is the stride to the next 64 of MN, never used here (every MN-major
// operand is 64 wide: n64 for B, one 16 KiB G chunk for A); set to that chunk stride, 16 KiB.
__device__ __forceinline__ uint64_t wg_desc_mn128(uint32_t addr)
{
    return wg_desc(addr, (uint32_t)kWgOperandBytes, 1024u, 1);
}

// Stage (at st, 1024-byte aligned) <- hidden[row0 .. +127, k0 .. +63] (first 16 KiB) and
// W[v0 .. +BN-1, k0 .. +63] (next BN x 128 bytes), 128B-swizzled K-major, zero outside
// [0, N) x [0, D) and [0, V) x [0, D). vec: cp.async 16-byte chunks (complete at a wait); else
// plain loads. BN = 128: the backward's and the 128-column tiles'; 256: the forward's.
template <int BN>
__device__ __forceinline__ void wg_load_stage(unsigned char *st, const bf16 *__restrict__ hidden,
                                              const bf16 *__restrict__ weight, size_t N, size_t D, size_t V,
                                              size_t row0, size_t v0, size_t k0, bool vec)
{
    const int tid = threadIdx.x;
    if (vec) {
        constexpr int kChunks = kWgBK / 8; // 16-byte chunks per row
        MF_UNROLL
        for (int c = tid; c < (kTcBM + BN) * kChunks; c += kTcThreads) {
            const int r = c / kChunks, kc = c % kChunks;
            const bool is_a = r < kTcBM;
            const int rr = is_a ? r : r - kTcBM;
            const size_t row = (is_a ? row0 : v0) + (size_t)rr, col = k0 + (size_t)(8 * kc);
            const bool in = row < (is_a ? N : V) && col < D;
            const bf16 *src = (is_a ? hidden : weight) + (in ? row * D + col : 0);
            cp_async16(st + (is_a ? 0 : kWgOperandBytes) + wg_sw128(rr, 8 * kc), src, in ? 16u : 0u);
        }
    } else if constexpr (BN == kTcBM) { // one (r, k) of both operands per iteration
        const bf16 zero = __float2bfloat16(0.0f);
        for (int e = tid; e < kTcBM * kWgBK; e += kTcThreads) {
            const int r = e / kWgBK, k = e % kWgBK;
            const size_t col = k0 + (size_t)k, row = row0 + (size_t)r, v = v0 + (size_t)r;
            const int off = wg_sw128(r, k);
            *reinterpret_cast<bf16 *>(st + off) = (row < N && col < D) ? hidden[row * D + col] : zero;
            *reinterpret_cast<bf16 *>(st + kWgOperandBytes + off) =
                (v < V && col < D) ? weight[v * D + col] : zero;
        }
    } else {
        const bf16 zero = __float2bfloat16(0.0f);
        for (int e = tid; e < (kTcBM + BN) * kWgBK; e += kTcThreads) {
            const int r = e / kWgBK, k = e % kWgBK;
            const bool is_a = r < kTcBM;
            const int rr = is_a ? r : r - kTcBM;
            const size_t row = (is_a ? row0 : v0) + (size_t)rr, col = k0 + (size_t)k;
            const bool in = row < (is_a ? N : V) && col < D;
            *reinterpret_cast<bf16 *>(st + (is_a ? 0 : kWgOperandBytes) + wg_sw128(rr, k)) =
                in ? (is_a ? hidden : weight)[row * D + col] : zero;
        }
    }
}

// acc (warpgroup warp / 4's 64 x BN logits: acc[0][f][i] is row 16 w + g + 8 (i >> 1), column
// 8 f + 2 t + (i & 1)) = hidden[row0 + ., :] . W[v0 + ., :]^T, one wgmma.m64nBNk16 per 16 of D
// (BN = 128: the backward's recompute; 256: the forward). smem: the two stages (1024-byte
// aligned). Every thread calls it; it ends with a barrier, so the stages are free on return.
template <int BN>
__device__ __forceinline__ void wg_logits_tile(float (&acc)[1][BN / 8][4], unsigned char *smem,
                                               const bf16 *__restrict__ hidden,
                                               const bf16 *__restrict__ weight, size_t N, size_t D, size_t V,
                                               size_t row0, size_t v0, bool vec)
{
    static_assert(BN == 128 || BN == 256, "m64n128k16 or m64n256k16");
    constexpr int kStage = kWgOperandBytes + BN * kWgBK * 2;
    float(&d)[BN / 2] = reinterpret_cast<float(&)[BN / 2]>(acc);
    const uint32_t a_off = (uint32_t)((threadIdx.x >> 7) * 64 * 128); // the warpgroup's 64 rows
    const size_t n_slices = (D + kWgBK - 1) / kWgBK;
    wg_load_stage<BN>(smem, hidden, weight, N, D, V, row0, v0, 0, vec);
    cp_async_commit();
    for (size_t s = 0; s < n_slices; ++s) {
        if (s + 1 < n_slices) // prefetch: its stage was released by the last barrier
            wg_load_stage<BN>(smem + ((s + 1) & 1) * kStage, hidden, weight, N, D, V, row0, v0,
                              (s + 1) * kWgBK, vec);
        cp_async_commit();
        cp_async_wait_1();
        wg_fence_proxy(); // this thread's stage writes, before the barrier publishes them to wgmma
        __syncthreads();
        const uint32_t base = smem_u32(smem + (s & 1) * kStage);
        const uint64_t da0 = wg_desc_sw128(base + a_off), db0 = wg_desc_sw128(base + kWgOperandBytes);
        wg_fence(); // the accumulators were last written by ordinary instructions
        MF_UNROLL
        for (int kk = 0; kk < kWgBK / 16; ++kk) { // k16 steps: +32 bytes inside the swizzled rows
            const uint64_t da = wg_desc_add(da0, 32u * kk), db = wg_desc_add(db0, 32u * kk);
            if constexpr (BN == 128)
                wg_mma<128>(d, da, db, s > 0 || kk > 0);
            else
                wg_mma<256>(d, da, db, s > 0 || kk > 0);
        }
        wg_commit();
        wg_wait_all();
        __syncthreads(); // stage s & 1 is consumed: the next prefetch may overwrite it
    }
}

} // namespace cce
} // namespace MF_NS
