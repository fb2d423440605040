// Fused linear cross-entropy, the forward kernels (lse and row losses): f32 on the SIMT
// tile, bf16 on mma.sync and on wgmma (sm_90a).
#pragma once

#include "common.cuh"
#include "tile_simt.cuh"
#include "tile_mma.cuh"
#include "tile_wgmma.cuh"

namespace MF_NS {
namespace cce {

// ---- forward: lse and row losses, logits in registers only ----------------------
// mf-budget: regs<=128 smem<=20480 stack<=0 spill=0  (sm_90: f32 106 regs 20480 B)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ce_fused_fwd_kernel(const T *__restrict__ hidden, const T *__restrict__ weight,
                        const T *__restrict__ bias, const int64_t *__restrict__ labels, FusedParams p)
{
    __shared__ Smem<T> sm;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)blockIdx.x * kBM;
    // This lane's two rows: fragment rows g and g + 8 of the warp's 16.
    int ys[2];
    float m[2], l[2], sum_s[2], s_y[2];
    fwd_init(labels, p, row0 + (size_t)(warp * 16 + g), ys, m, l, sum_s, s_y);
    float acc[1][kNFrag][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kBN) {
        logits_tile<T>(acc, sm, hidden, weight, p.N, p.D, p.V, row0, v0);
        fwd_tile(acc, v0 + (size_t)(2 * t), bias, p, ys, m, l, sum_s, s_y);
    }
    fwd_quad_sums(l, sum_s, s_y);
    MF_UNROLL
    for (int h = 0; h < 2; ++h) {
        const size_t row = row0 + (size_t)(warp * 16 + g + 8 * h);
        if (t == 0 && row < p.N) fwd_store_row(p, row, m[h], l[h], ys[h] >= 0, s_y[h], sum_s[h]);
    }
}

// ---- bf16 forward: lse and row losses ----------------------------------------------
// Each warp keeps an online (max, sum-exp, sum of logits, target logit) for its
// 4 rows per lane over its 64-column half of every tile; the two halves (wn = 0,
// 1) are combined once at the end, the vocabulary-split combine in miniature.
// mf-budget: regs<=255 smem<=45056 stack<=0 spill=0  (sm_90: see docs/cross_entropy.md)
__global__ void __launch_bounds__(kTcThreads, 1)
    ce_fused_fwd_mma_kernel(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                            const bf16 *__restrict__ bias, const int64_t *__restrict__ labels, FusedParams p,
                            int vec)
{
    __shared__ __align__(16) TcStage st[2];
    __shared__ float part[4][2][kTcBM]; // (m, l, sum_s, s_y) x column half x row
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3, wm = warp & 3, wn = warp >> 2;
    const size_t row0 = (size_t)blockIdx.x * kTcBM;
    int ys[4]; // this lane's rows: r = 2 mt + h -> 32 wm + 16 mt + 8 h + g
    float m[4], l[4], sum_s[4], s_y[4];
    fwd_init(labels, p, row0 + (size_t)(32 * wm + g), ys, m, l, sum_s, s_y);
    float acc[2][8][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kTcBN) {
        tc_logits_tile(acc, st, hidden, weight, p.N, p.D, p.V, row0, v0, vec != 0);
        fwd_tile(acc, v0 + (size_t)(64 * wn + 2 * t), bias, p, ys, m, l, sum_s, s_y);
    }
    fwd_quad_sums(l, sum_s, s_y);
    if (t == 0) {
        MF_UNROLL
        for (int r = 0; r < 4; ++r) {
            const int rr = 32 * wm + 8 * r + g;
            part[0][wn][rr] = m[r];
            part[1][wn][rr] = l[r];
            part[2][wn][rr] = sum_s[r];
            part[3][wn][rr] = s_y[r];
        }
    }
    __syncthreads();
    const size_t row = row0 + (size_t)tid;
    if (tid >= kTcBM || row >= p.N) return;
    const float m0 = part[0][0][tid], m1 = part[0][1][tid], mm = nan_max(m0, m1);
    float lsum = 0.0f; // the halves' sum-exps rebased to the joint max
    if (m0 != -INFINITY) lsum += part[1][0][tid] * expf(m0 - mm);
    if (m1 != -INFINITY) lsum += part[1][1][tid] * expf(m1 - mm);
    fwd_store_row(p, row, mm, lsum, row_target(labels, row, p) >= 0, part[3][0][tid] + part[3][1][tid],
                  part[2][0][tid] + part[2][1][tid]);
}

// ---- bf16 forward on wgmma: lse and row losses --------------------------------------
// A thread's 2 rows (16 w + g, + 8 of its warpgroup's 64) over all 256 columns of every
// 256-column tile (m64n256k16, 128 accumulators): the online statistics need only the quad
// (fwd_tile), no column-half combine.
// mf-budget: regs<=255 smem<=0 stack<=0 spill=0  (sm_90a: 254 regs; dynamic smem kWgFwdSmem = 99,328 B)
__global__ void __launch_bounds__(kTcThreads, 1)
    ce_fused_fwd_wgmma_kernel(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                              const bf16 *__restrict__ bias, const int64_t *__restrict__ labels,
                              FusedParams p, int vec)
{
#if MF_WGMMA_CODE
    extern __shared__ __align__(16) unsigned char ce_tc_smem[];
    unsigned char *smem = wg_align_1024(ce_tc_smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)blockIdx.x * kTcBM;
    const size_t rbase = row0 + (size_t)(64 * (warp >> 2) + 16 * (warp & 3) + g);
    int ys[2]; // rows rbase, rbase + 8
    float m[2], l[2], sum_s[2], s_y[2];
    fwd_init(labels, p, rbase, ys, m, l, sum_s, s_y);
    float acc[1][kWgFwdBN / 8][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kWgFwdBN) {
        wg_logits_tile<kWgFwdBN>(acc, smem, hidden, weight, p.N, p.D, p.V, row0, v0, vec != 0);
        fwd_tile(acc, v0 + (size_t)(2 * t), bias, p, ys, m, l, sum_s, s_y);
    }
    fwd_quad_sums(l, sum_s, s_y);
    MF_UNROLL
    for (int h = 0; h < 2; ++h) {
        const size_t row = rbase + (size_t)(8 * h);
        if (t == 0 && row < p.N) fwd_store_row(p, row, m[h], l[h], ys[h] >= 0, s_y[h], sum_s[h]);
    }
#else
    (void)hidden, (void)weight, (void)bias, (void)labels, (void)p, (void)vec;
    __trap(); // no sm_90a code: the launcher never picks this kernel
#endif
}

} // namespace cce
} // namespace MF_NS
