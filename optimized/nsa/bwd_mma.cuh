// NSA bf16 backward on mma.sync: the selected and sliding branches (nsa_mma_bwd_kernel, on
// the forward's key streams, fwd_slc_win_mma.cuh) and the compression branch
// (nsa_mma_cmp_bwd_kernel, on the CTAs and pass 1 of fwd_cmp_mma.cuh).
#pragma once

#include "fwd_slc_win_mma.cuh"
#include "fwd_cmp_mma.cuh"

namespace MF_NS {

namespace nsa_mma {
// A 16-key x 16-column piece of dK (times scale) and dV (ck, cv: two n8
// accumulator tiles, row = key k0 + row, column c0 + col) added to the fp32
// dk, dv rows (row s at s * stride) by atomicAdd; keys past nk are skipped.
__device__ __forceinline__ void add_dkdv(float *dkg, float *dvg, const float ck[2][4], const float cv[2][4],
                                         size_t k0, int nk, size_t stride, int c0, float scale, int lane)
{
    const int g8 = lane >> 2, t4 = lane & 3;
    MF_UNROLL
    for (int i = 0; i < 2; ++i) {
        const int key = g8 + 8 * i;
        if (key >= nk) continue;
        MF_UNROLL
        for (int h = 0; h < 2; ++h) {
            const size_t at = (k0 + (size_t)key) * stride + (size_t)(c0 + h * 8 + 2 * t4);
            atomicAdd(dkg + at, ck[h][2 * i] * scale);
            atomicAdd(dkg + at + 1, ck[h][2 * i + 1] * scale);
            atomicAdd(dvg + at, cv[h][2 * i]);
            atomicAdd(dvg + at + 1, cv[h][2 * i + 1]);
        }
    }
}
} // namespace nsa_mma

// ---- bf16 tensor-core backward: selected and sliding branches, query-blocked ---------
// The 64-row CTAs of nsa_mma_fwd_kernel<D, 4>: one CTA (4 warps, 64 rows) per
// (b, KV group, QT = min(32, 64 / G) consecutive tokens), row r = (token t0 + r / G, head
// r % G), warp w owning rows 16w..16w+15; the same key streams (the union of
// the tokens' selections, merged round by round, and the window [t0 + 1 - w,
// tend)), here in 32-key stages (16 at D = 128; cp.async, double-buffered).
// Q and dO of the 64 rows are staged once per CTA. Shared memory is dynamic
// (bwd_smem_bytes: 46.4 KB at D = 64, 57.4 KB at D = 128). Per branch
// (selected, window):
//   1. o recomputed over the branch's stream (stage_step with P split hi + lo,
//      ~2^-16), dg = dout . o / l, Delta = gate dg (FlashAttention-2's
//      rowsum(dO o) of the gated output), with the forward's lse per row;
//   2. the stream again, per stage (grad_stage): each warp computes S = Q K^T
//      and dP = dO V^T for its m16 rows, P = 2^(S log2e scale - lse log2e),
//      dS = P (gate dP - Delta) (a masked key: P = dS = 0 exactly), dQ += dS K
//      in registers; dS and gate P go to shared memory as bf16 [row][key]
//      (rounded once, as the per-token kernel this replaced); after a barrier the warps
//      share the stage's (16-key sub-tile, 16 columns) pieces of dK += dS^T Q
//      and dV += (gate P)^T dO over the CTA's 64 rows (A = dS^T, (gate P)^T by
//      ldmatrix.trans, B = Q, dO by ldmatrix.trans), added to the fp32 dk, dv
//      with one atomicAdd per (key, column) and CTA (neighbouring CTAs' windows
//      and selections still hit the same keys);
//   3. dq[row] += scale dQ (the compression kernel wrote dq first, same stream).
namespace nsa_sw {
// 16-key sub-tiles per backward stage: 32 keys (D = 128: 16). Registers: 32
// keys already take the D = 64 instance to 234 (64 would add 32 for S and dP).
template <int D> struct BwdStage {
    static constexpr int value = D == 128 ? 1 : 2;
};
// Dynamic shared memory of nsa_mma_bwd_kernel<D>: Q and dO of the 64 rows, two
// K/V stages, the dS and gate P tiles [64][16 NT + 8], the union round.
template <int D> constexpr size_t bwd_smem_bytes()
{
    constexpr size_t NT = BwdStage<D>::value, LDS = D + 8, LDX = 16 * NT + 8;
    return 2 * (kRows * LDS * 2) + 2 * (2 * 16 * NT * LDS * 2) + 2 * (kRows * LDX * 2) + sizeof(Union);
}

// The backward's statistics of the lane's two row slots: lse (base 2), Delta,
// gate (0 for padding rows).
struct RowGrad {
    float lse2[2], delta[2], gate[2];
};

// After the recomputation of o (acc) over branch x's keys: dg = dout . o / l
// (written to dgo), the row's gate, base-2 lse and Delta = gate dg.
template <int D>
__device__ __forceinline__ void row_grad(RowGrad &rg, const nsa_mma::Acc<D> &acc, const Blk &bk,
                                         const __nv_bfloat16 *dOs, const __nv_bfloat16 *gp, const float *lse,
                                         float *dgo, int x, const NsaShape &sh, int warp, int lane)
{
    constexpr int LDS = D + 8;
    const int t4 = lane & 3;
    MF_UNROLL
    for (int i = 0; i < 2; ++i) {
        const int r = 16 * warp + (lane >> 2) + 8 * i; // the CTA's row: head r % G of token t
        float dg = 0.0f;
        MF_UNROLL
        for (int n = 0; n < D / 8; ++n) {
            const __nv_bfloat16 *dr = dOs + r * LDS + n * 8 + 2 * t4;
            dg += __bfloat162float(dr[0]) * acc.o[n][2 * i] + __bfloat162float(dr[1]) * acc.o[n][2 * i + 1];
        }
        dg = quad_sum(dg);
        const bool ok = bk.rw.ok[i];
        const size_t row = (bk.b * sh.S + bk.rw.t[i]) * sh.Hq + bk.g * sh.G + (size_t)r % sh.G;
        dg = ok ? dg / acc.l[i] : 0.0f; // a real row sees its own token: l > 0
        rg.gate[i] = ok ? __bfloat162float(gp[row]) : 0.0f;
        rg.lse2[i] = ok ? lse[row * 3 + (size_t)x] * nsa_mma::kLog2e : 0.0f;
        rg.delta[i] = rg.gate[i] * dg;
        if (ok && t4 == 0) dgo[row] = dg;
    }
}

// Stage y of the backward (CTA-wide, one barrier inside; run_stream's barriers
// around it). Qs, dOs: the CTA's 64 rows; Ss, Ps: [64][16 NT + 8] bf16.
template <int D, int NT>
__device__ __forceinline__ void
grad_stage(float dqa[D / 8][4], const __nv_bfloat16 *Qs, const __nv_bfloat16 *dOs, const __nv_bfloat16 *Ks,
           const __nv_bfloat16 *Vs, __nv_bfloat16 *Ss, __nv_bfloat16 *Ps, const SubTiles &st, const Keys &ks,
           const RowGrad &rg, float scale_log2, float scale, float *dkg, float *dvg, size_t stride, int warp,
           int lane)
{
    constexpr int LDS = D + 8, LDX = 16 * NT + 8;
    const int g8 = lane >> 2, t4 = lane & 3;
    unsigned int needm, seen;
    stage_bits<NT>(needm, seen, st, ks, lane);
    float s[2 * NT][4], dp[2 * NT][4];
    MF_UNROLL
    for (int n = 0; n < 2 * NT; ++n) MF_UNROLL
    for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.0f;
    if (needm != 0u) { // S = Q K^T, dP = dO V^T for the warp's rows
        MF_UNROLL
        for (int kk = 0; kk < D / 16; ++kk) {
            uint32_t qa[4], da[4];
            const int aoff = (16 * warp + (lane & 15)) * LDS + kk * 16 + (lane >> 4) * 8;
            ldsm_x4(qa, Qs + aoff);
            ldsm_x4(da, dOs + aoff);
            MF_UNROLL
            for (int j = 0; j < NT; ++j) {
                if (((needm >> j) & 1u) == 0u) continue;
                uint32_t b[4];
                const int boff =
                    (16 * j + (lane >> 4) * 8 + (lane & 7)) * LDS + kk * 16 + ((lane >> 3) & 1) * 8;
                ldsm_x4(b, Ks + boff);
                mma_x2(s[2 * j], s[2 * j + 1], qa, b);
                ldsm_x4(b, Vs + boff);
                mma_x2(dp[2 * j], dp[2 * j + 1], da, b);
            }
        }
    }
    // element e of n8 tile 2 j + n: row slot i = e >> 1, key 8 n + 2 t4 + (e & 1) of
    // sub-tile j; dp becomes dS, s becomes gate P (a masked key: exactly 0)
    MF_UNROLL
    for (int j = 0; j < NT; ++j) MF_UNROLL
    for (int n = 0; n < 2; ++n) {
        MF_UNROLL
        for (int e = 0; e < 4; ++e) {
            const int i = e >> 1;
            const bool on = ((seen >> (8 * j + 4 * i + 2 * n + (e & 1))) & 1u) != 0u;
            // mf_ex2_ftz as the forward and attention_mma's backward: a flushed p < 2^-126 moves
            // dq, dk, dv and the gate's gradient by under 2^-126 |dO| or |dP|
            const float p = on ? mf_ex2_ftz(s[2 * j + n][e] * scale_log2 - rg.lse2[i]) : 0.0f;
            dp[2 * j + n][e] = on ? p * (rg.gate[i] * dp[2 * j + n][e] - rg.delta[i]) : 0.0f;
            s[2 * j + n][e] = rg.gate[i] * p;
        }
        MF_UNROLL
        for (int i = 0; i < 2; ++i) {
            const int off = (16 * warp + g8 + 8 * i) * LDX + 16 * j + 8 * n + 2 * t4;
            *reinterpret_cast<__nv_bfloat162 *>(Ss + off) =
                __floats2bfloat162_rn(dp[2 * j + n][2 * i], dp[2 * j + n][2 * i + 1]);
            *reinterpret_cast<__nv_bfloat162 *>(Ps + off) =
                __floats2bfloat162_rn(s[2 * j + n][2 * i], s[2 * j + n][2 * i + 1]);
        }
    }
    // dQ += dS K: B[k=key][n=c] = K[key][c] (row-major B: ldmatrix.trans)
    MF_UNROLL
    for (int j = 0; j < NT; ++j) {
        if (((needm >> j) & 1u) == 0u) continue;
        uint32_t sa[4];
        c_to_a(sa, dp[2 * j], dp[2 * j + 1]);
        MF_UNROLL
        for (int np = 0; np < D / 16; ++np) {
            uint32_t b[4];
            ldsm_x4_t(b,
                      Ks + (16 * j + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + np * 16 + (lane >> 4) * 8);
            mma_x2(dqa[2 * np], dqa[2 * np + 1], sa, b);
        }
    }
    __syncthreads(); // the CTA's dS and gate P staged
    // dK += dS^T Q, dV += (gate P)^T dO over the 64 rows, one (sub-tile j, 16
    // columns cg) piece per warp at a time. A = dS^T [key][row]: 8x8 block (R0,
    // C0) of the transpose is the transposed block (C0, R0) of the [row][key]
    // tile (ldmatrix.trans); B[k=row][n=c] = Q[row][c], dO[row][c].
    for (int pc = warp; pc < NT * (D / 16); pc += kWarps) {
        const int j = pc / (D / 16), cg = pc % (D / 16);
        const int nk = st.nk[j];
        if (nk == 0) continue;
        float ck[2][4] = { { 0.0f, 0.0f, 0.0f, 0.0f }, { 0.0f, 0.0f, 0.0f, 0.0f } };
        float cv[2][4] = { { 0.0f, 0.0f, 0.0f, 0.0f }, { 0.0f, 0.0f, 0.0f, 0.0f } };
        MF_UNROLL
        for (int kk = 0; kk < kRows / 16; ++kk) {
            uint32_t dsT[4], pT[4], b[4];
            const int toff = (16 * kk + (lane >> 4) * 8 + (lane & 7)) * LDX + 16 * j + ((lane >> 3) & 1) * 8;
            ldsm_x4_t(dsT, Ss + toff);
            ldsm_x4_t(pT, Ps + toff);
            const int off = (16 * kk + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + cg * 16 + (lane >> 4) * 8;
            ldsm_x4_t(b, Qs + off);
            mma_x2(ck[0], ck[1], dsT, b);
            ldsm_x4_t(b, dOs + off);
            mma_x2(cv[0], cv[1], pT, b);
        }
        nsa_mma::add_dkdv(dkg, dvg, ck, cv, st.k0[j], nk, stride, cg * 16, scale, lane);
    }
}
} // namespace nsa_sw

// mf-budget: regs<=248 smem<=0 spill=0  (sm_90 measured: regs 172/191/216/222 at D = 16/32/64/128, stack 0; dynamic smem 22.4 / 30.4 / 46.4 / 57.4 KB (bwd_smem_bytes); 32-key stages, 16 at D = 128 (64-key ones: 72 KB at D = 64 and 32 more registers for S and dP); min 2 CTAs per SM)
template <int D>
__global__ void __launch_bounds__(nsa_sw::kThreadsS, 2)
    nsa_mma_bwd_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
                       const __nv_bfloat16 *__restrict__ v, const __nv_bfloat16 *__restrict__ g_slc,
                       const __nv_bfloat16 *__restrict__ g_win, const __nv_bfloat16 *__restrict__ dout,
                       const float *__restrict__ lse, const int32_t *__restrict__ sel, float *__restrict__ dq,
                       float *dk, float *dv, float *__restrict__ dg_slc, float *__restrict__ dg_win,
                       NsaShape sh, size_t QT, size_t nblk, size_t total)
{
    using namespace nsa_sw;
    constexpr int LDS = D + 8, NT = BwdStage<D>::value, LDX = 16 * NT + 8;
    extern __shared__ __align__(16) unsigned char nsa_bwd_smem[]; // bwd_smem_bytes<D>()
    __nv_bfloat16 *Qs = reinterpret_cast<__nv_bfloat16 *>(nsa_bwd_smem);
    __nv_bfloat16 *dOs = Qs + kRows * LDS;
    auto Kt = reinterpret_cast<__nv_bfloat16(*)[16 * NT * LDS]>(dOs + kRows * LDS); // [2] stages
    auto Vt = Kt + 2;
    __nv_bfloat16 *Ss = reinterpret_cast<__nv_bfloat16 *>(Vt + 2); // dS [row][key] of a stage
    __nv_bfloat16 *Ps = Ss + kRows * LDX;                          // gate P [row][key]
    Union &un = *reinterpret_cast<Union *>(Ps + kRows * LDX);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, t4 = lane & 3;
    const float scale_log2 = sh.scale * nsa_mma::kLog2e;
    const size_t kstride = sh.Hk * D;
    const __nv_bfloat16 *Qw = Qs + warp * 16 * LDS;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const Blk bk = blk_of(sh, item, QT, nblk, warp, lane >> 2);
        const size_t koff = (bk.b * sh.S * sh.Hk + bk.g) * D;
        __syncthreads(); // the previous item's tiles are consumed
        nsa_cmp::Item it;
        it.nrows = bk.nrows;
        it.rbase = (bk.b * sh.S + bk.t0) * sh.Hq + bk.g * sh.G;
        nsa_cmp::stage_rows<D, true>(Qs, q, dOs, dout, sh, it);
        cp_async_wait_all(); // published by the streams' first barriers
        // branch x (1: selected, 2: window): the stream of its keys, step per stage
        auto walk = [&](int x, auto step) {
            if (x == 1)
                selected_stream<D, NT, kWarps>(bk, sh, sel, un, Kt, Vt, k + koff, v + koff, kstride, warp,
                                               lane, step);
            else
                window_stream<D, NT, kWarps>(bk, sh, un, Kt, Vt, k + koff, v + koff, kstride, step);
        };
        for (int x = 1; x < 3; ++x) {
            RowGrad rg;
            {
                nsa_mma::Acc<D> acc;
                nsa_mma::acc_init(acc);
                walk(x, [&](const SubTiles &st, const Keys &ks, const __nv_bfloat16 *Ks,
                            const __nv_bfloat16 *Vs) {
                    stage_step<D, NT, true>(acc, Qw, Ks, Vs, st, ks, scale_log2, lane);
                });
                row_grad<D>(rg, acc, bk, dOs, x == 1 ? g_slc : g_win, lse, x == 1 ? dg_slc : dg_win, x, sh,
                            warp, lane);
            }
            float dqa[D / 8][4];
            MF_UNROLL
            for (int n = 0; n < D / 8; ++n) dqa[n][0] = dqa[n][1] = dqa[n][2] = dqa[n][3] = 0.0f;
            walk(x,
                 [&](const SubTiles &st, const Keys &ks, const __nv_bfloat16 *Ks, const __nv_bfloat16 *Vs) {
                     grad_stage<D, NT>(dqa, Qs, dOs, Ks, Vs, Ss, Ps, st, ks, rg, scale_log2, sh.scale,
                                       dk + koff, dv + koff, kstride, warp, lane);
                 });
            MF_UNROLL
            for (int i = 0; i < 2; ++i) {
                if (!bk.rw.ok[i]) continue;
                const size_t r = (size_t)(16 * warp + (lane >> 2) + 8 * i);
                float *o = dq + ((bk.b * sh.S + bk.rw.t[i]) * sh.Hq + bk.g * sh.G + r % sh.G) * D;
                MF_UNROLL
                for (int n = 0; n < D / 8; ++n) {
                    o[n * 8 + 2 * t4] += sh.scale * dqa[n][2 * i];
                    o[n * 8 + 2 * t4 + 1] += sh.scale * dqa[n][2 * i + 1];
                }
            }
        }
    }
}

// ---- bf16 tensor-core backward: the compression branch on mma.sync -------------------
// One CTA (4 warps, 64 rows) per (b, KV group, QT tokens), rows and causality as
// nsa_mma_cmp_kernel; every bf16 kc/vc tile is staged once per CTA for its 64
// rows. Per row:
//   1. o_cmp recomputed over the visible kc tiles as the forward's pass 1 but
//      with P split hi + lo (nsa_cmp::branch's SPLIT; the forward rounds P to
//      bf16 once), dg = dout . o / l (dg_cmp), Delta = g_cmp dg, fp32-accurate;
//      nothing read here depends on the forward's rounding of P (lse and sel
//      do not, and out is not read);
//   2. per tile: S = Q Kc^T (the forward's scores: P matches its lse), dP =
//      dO Vc^T, P = 2^(S scale log2e - lse log2e) from the forward's lse column
//      0, dS = P (g_cmp dP - Delta); dQ += dS Kc (dS in bf16) in registers;
//      dKc += dS^T Q and
//      dVc += (g_cmp P)^T dO per warp (A fragments by ldmatrix.trans from a 16 x
//      16 bf16 staging tile: one bf16-rounded factor per sum, as
//      nsa_mma_bwd_kernel), added to the fp32 dkc, dvc with atomicAdd (16 x D
//      per warp and tile, instead of one atomic per (row, key, column)).
// dq[row] = scale dQ is written (this kernel runs first; nsa_mma_bwd_kernel adds
// the selected and sliding parts); rows without a visible block get dq = 0 and
// dg_cmp = 0. nsa_unpool_kernel then spreads dkc, dvc through the mean pooling.
// mf-budget: regs<=128 smem<=34816 spill=0  (sm_90 measured: regs 112/120/128, smem 15360/21504/33792 at D = 16/32/64, stack 0; pass 1 keeps nan_max per score and the scaled scores: with softmax_p D = 64 spilled 8 bytes; min 4 CTAs per SM (16 warps): with bf16 kc/vc tiles and no split it fits without spilling (without a hint D = 32 spilled))
template <int D>
__global__ void __launch_bounds__(nsa_cmp::Cta<nsa_cmp::kBwdWarps>::kThreads, 4)
    nsa_mma_cmp_bwd_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ g_cmp,
                           const __nv_bfloat16 *__restrict__ dout, const __nv_bfloat16 *__restrict__ kc,
                           const __nv_bfloat16 *__restrict__ vc, const float *__restrict__ lse,
                           float *__restrict__ dq, float *dkc, float *dvc, float *__restrict__ dg_cmp,
                           NsaShape sh, size_t QT, size_t nblk, size_t total)
{
    using namespace nsa_cmp;
    using nsa_mma::kLog2e;
    constexpr int LDS = D + 8, LDX = 24, W = kBwdWarps, kWarps = W, kRows = Cta<W>::kRows;
    __shared__ __align__(16) __nv_bfloat16 Qs[kRows * LDS];
    __shared__ __align__(16) __nv_bfloat16 dOs[kRows * LDS];
    __shared__ __align__(16) Tiles<D> tl;
    __shared__ __align__(16) __nv_bfloat16 stage[kWarps][2][16 * LDX]; // dS, g P [row][key]
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g8 = lane >> 2, t4 = lane & 3;
    const float scale_log2 = sh.scale * kLog2e;
    const __nv_bfloat16 *Qw = Qs + warp * 16 * LDS, *dOw = dOs + warp * 16 * LDS;
    __nv_bfloat16 *Ss = stage[warp][0], *Pt = stage[warp][1];
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const Item it = item_of<D>(sh, item, QT, nblk, warp, g8);
        const size_t nk0 = it.nk0, coff = it.coff;
        const __nv_bfloat16 *kcg = kc + coff, *vcg = vc + coff;
        size_t grow[2]; // this lane's rows (0: padding)
        MF_UNROLL
        for (int i = 0; i < 2; ++i) {
            const size_t r = (size_t)(16 * warp + g8 + 8 * i);
            grow[i] = r < it.nrows ? row_of(sh, it, r) : 0;
        }
        __syncthreads(); // the previous item's tiles are consumed
        stage_rows<D, true, W>(Qs, q, dOs, dout, sh, it);
        cp_async_wait_all();
        __syncthreads(); // Q and dO visible to every warp
        // 1. o_cmp recomputed (the forward's pass 1 with P hi + lo), for dg and Delta
        float o[D / 8][4], m[2], l[2];
        int cur = 1; // the tile buffer last used (stage_tile)
        branch<D, W, true, true>(o, m, l, tl, cur, Qw, kcg, vcg, it, scale_log2,
                                 lane); // then pass 2's tile 0
        float gate[2], lse2[2], delta[2];
        MF_UNROLL
        for (int i = 0; i < 2; ++i) {
            const int r = g8 + 8 * i; // row within the warp's tile
            float dg = 0.0f;
            MF_UNROLL
            for (int n = 0; n < D / 8; ++n) {
                const __nv_bfloat16 *dr = dOw + r * LDS + n * 8 + 2 * t4;
                dg += __bfloat162float(dr[0]) * o[n][2 * i] + __bfloat162float(dr[1]) * o[n][2 * i + 1];
            }
            dg = quad_sum(dg);
            const bool any = it.nv[i] > 0;
            dg = any ? dg / l[i] : 0.0f;
            gate[i] = any ? __bfloat162float(g_cmp[grow[i]]) : 0.0f;
            lse2[i] = any ? lse[grow[i] * 3] * kLog2e : 0.0f;
            delta[i] = gate[i] * dg;
            if ((size_t)(16 * warp + r) < it.nrows && t4 == 0) dg_cmp[grow[i]] = dg;
        }
        // 2. the gradients, tile by tile
        float dqa[D / 8][4];
        MF_UNROLL
        for (int n = 0; n < D / 8; ++n) dqa[n][0] = dqa[n][1] = dqa[n][2] = dqa[n][3] = 0.0f;
        for (size_t k0 = 0; k0 < nk0; k0 += 16) {
            // prefetched (tile 0 by pass 1); its barrier: the previous tile and staging consumed
            const int buf = stage_tile<D, W, true>(tl, cur, kcg, vcg, k0, true,
                                                   k0 + 16 < nk0 ? k0 + 16 : kNoTile, true, nk0);
            if (!__any_sync(0xffffffffu, k0 < it.nv[0] || k0 < it.nv[1]))
                continue; // no row of this warp sees the tile
            float s[2][4], dp[2][4] = { { 0.0f, 0.0f, 0.0f, 0.0f }, { 0.0f, 0.0f, 0.0f, 0.0f } };
            scores<D>(s, Qw, tl, buf, lane);
            MF_UNROLL
            for (int kk = 0; kk < D / 16; ++kk) {
                uint32_t da[4], bv[4];
                ldsm_x4(da, dOw + (lane & 15) * LDS + kk * 16 + (lane >> 4) * 8);
                ldsm_x4(bv,
                        tl.V[buf] + ((lane >> 4) * 8 + (lane & 7)) * LDS + kk * 16 + ((lane >> 3) & 1) * 8);
                mma_x2(dp[0], dp[1], da, bv);
            }
            // element e of n8 tile n: row slot e >> 1 (warp row g8 + 8 (e >> 1)), key k0 + 8 n + 2 t4 + (e & 1)
            MF_UNROLL
            for (int n = 0; n < 2; ++n) MF_UNROLL
            for (int e = 0; e < 4; ++e) {
                const int i = e >> 1, r = g8 + 8 * i, j = 8 * n + 2 * t4 + (e & 1);
                const bool ok = k0 + (size_t)j < it.nv[i];
                const float p = ok ? mf_ex2_ftz(s[n][e] * scale_log2 - lse2[i]) : 0.0f; // (as grad_stage's)
                const float ds = ok ? p * (gate[i] * dp[n][e] - delta[i]) : 0.0f;
                dp[n][e] = ds;
                Ss[r * LDX + j] = __float2bfloat16_rn(ds);
                Pt[r * LDX + j] = __float2bfloat16_rn(gate[i] * p);
            }
            // dQ += dS Kc: B[k=key][n=c] = Kc[key][c] (row-major: ldmatrix.trans)
            uint32_t sa[4];
            c_to_a(sa, dp[0], dp[1]);
            MF_UNROLL
            for (int np = 0; np < D / 16; ++np) {
                uint32_t bk[4];
                ldsm_x4_t(bk,
                          tl.K[buf] + (((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + np * 16 + (lane >> 4) * 8);
                mma_x2(dqa[2 * np], dqa[2 * np + 1], sa, bk);
            }
            __syncwarp(); // dS and g P staged
            uint32_t dsT[4], pT[4];
            const int toff = ((lane >> 4) * 8 + (lane & 7)) * LDX + ((lane >> 3) & 1) * 8;
            ldsm_x4_t(dsT, Ss + toff);
            ldsm_x4_t(pT, Pt + toff);
            MF_UNROLL
            for (int np = 0; np < D / 16; ++np) {
                float ck[2][4] = { { 0.0f, 0.0f, 0.0f, 0.0f }, { 0.0f, 0.0f, 0.0f, 0.0f } };
                float cv[2][4] = { { 0.0f, 0.0f, 0.0f, 0.0f }, { 0.0f, 0.0f, 0.0f, 0.0f } };
                const int off = (((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + np * 16 + (lane >> 4) * 8;
                uint32_t bq[4];
                ldsm_x4_t(bq, Qw + off); // B[k=row][n=c] = Q[row][c]
                mma_x2(ck[0], ck[1], dsT, bq);
                ldsm_x4_t(bq, dOw + off);
                mma_x2(cv[0], cv[1], pT, bq);
                MF_UNROLL
                for (int i = 0; i < 2; ++i) {
                    const size_t key = k0 + (size_t)(g8 + 8 * i);
                    if (key >= nk0) continue;
                    MF_UNROLL
                    for (int h = 0; h < 2; ++h) {
                        const size_t at = coff + key * D + (size_t)(np * 16 + h * 8 + 2 * t4);
                        atomicAdd(dkc + at, ck[h][2 * i] * sh.scale);
                        atomicAdd(dkc + at + 1, ck[h][2 * i + 1] * sh.scale);
                        atomicAdd(dvc + at, cv[h][2 * i]);
                        atomicAdd(dvc + at + 1, cv[h][2 * i + 1]);
                    }
                }
            }
        }
        MF_UNROLL
        for (int i = 0; i < 2; ++i) {
            if ((size_t)(16 * warp + g8 + 8 * i) >= it.nrows) continue;
            MF_UNROLL
            for (int n = 0; n < D / 8; ++n) {
                float *op = dq + grow[i] * D + (size_t)(n * 8 + 2 * t4);
                op[0] = sh.scale * dqa[n][2 * i];
                op[1] = sh.scale * dqa[n][2 * i + 1];
            }
        }
    }
}

} // namespace MF_NS
