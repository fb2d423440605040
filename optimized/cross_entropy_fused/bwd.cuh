// Fused linear cross-entropy, the backward kernels: f32 on the SIMT tile, and the bf16 body
// (recompute, dL/dz, the three gradient products) on mma.sync and on wgmma (sm_90a).
#pragma once

#include "common.cuh"
#include "tile_simt.cuh"
#include "tile_mma.cuh"
#include "tile_wgmma.cuh"

namespace MF_NS {
namespace cce {

// One kBK-wide slice of a gradient product of the f32 backward, for this warp's 16 rows:
// TR false: (G . B)[16 w .., :] with B = the W slice (grad_hidden); TR true: (G^T . B)
// with B = the hidden slice (grad_W); k runs over the 64 columns (rows) of G.
// out(r, col, x) adds x at row r of the 64 and column col of D (c0 = d0 + 2 t).
template <bool TR, typename T, typename Out>
__device__ __forceinline__ void grad_slice(const float (*sg)[kLdg], const T (*b)[kLdk], size_t c0, Out &&out)
{
    static_assert(kBM == kBN, "G is square: k runs over 64 either way");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2;
    float o[1][kBK / 8][4];
    frags_zero(o);
    MF_UNROLL
    for (int kk = 0; kk < kBN; kk += 16) {
        auto A = [&](int r, int k) { return TR ? sg[kk + k][warp * 16 + r] : sg[warp * 16 + r][kk + k]; };
        MF_UNROLL
        for (int f = 0; f < kBK / 8; ++f) {
            auto B = [&](int k, int n) { return to_f32(b[kk + k][f * 8 + n]); };
            mma16816<T>(o[0][f], lane, A, B);
        }
    }
    for_each_frag(o, c0, [&](float &x, int r, size_t col) { out((size_t)(warp * 16 + g + 8 * r), col, x); });
}

// ---- backward: recompute, dL/dz in registers, three gradient products -----------
// mf-budget: regs<=128 smem<=38912 stack<=0 spill=0 sm_80:regs<=152  (sm_90: f32 128 regs 38656 B; sm_80: f32 150 regs, 3 blocks per SM instead of 4)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ce_fused_bwd_kernel(const T *__restrict__ hidden, const T *__restrict__ weight,
                        const T *__restrict__ bias, const int64_t *__restrict__ labels, FusedParams p,
                        float *__restrict__ grad_hidden, float *__restrict__ grad_weight,
                        float *__restrict__ grad_bias)
{
    __shared__ Smem<T> sm;
    __shared__ float sg[kBM][kLdg]; // dL/dz of the tile, fp32
    __shared__ float row_lse[kBM], row_g[kBM];
    __shared__ int row_y[kBM];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)blockIdx.x * kBM;
    bwd_row_stats(labels, p, row0, kBM, row_y, row_g, row_lse); // (visible after logits_tile's first barrier)
    const bool want_gh = grad_hidden != nullptr, want_gw = grad_weight != nullptr;
    float acc[1][kNFrag][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kBN) {
        logits_tile<T>(acc, sm, hidden, weight, p.N, p.D, p.V, row0, v0);
        const int keep =
            dlogit_tile(acc, v0 + (size_t)(2 * t), warp * 16 + g, bias, p, row_y, row_lse, row_g);
        __syncthreads(); // every warp is done reading sm.a / sm.b / sg of the last step
        for_each_frag(acc, (size_t)(2 * t),
                      [&](float &x, int r, size_t c) { sg[warp * 16 + g + 8 * r][c] = x; });
        // Gradient filtering (off when p.filter == 0: every |d| < 0 is false).
        if (!__syncthreads_or(keep)) continue; // also publishes sg
        if (grad_bias != nullptr && tid < kBN && v0 + (size_t)tid < p.V) {
            float s = 0.0f;
            for (int r = 0; r < kBM; ++r) s += sg[r][tid];
            atomicAdd(grad_bias + v0 + tid, s);
        }
        if (!want_gh && !want_gw) continue;
        for (size_t d0 = 0; d0 < p.D; d0 += kBK) {
            __syncthreads(); // the previous slice is consumed
            load_slice(sm, hidden, weight, p.N, p.D, p.V, row0, v0, d0);
            __syncthreads();
            // grad_hidden: rows 16w.. of the block x kBK columns of D, k over the tile's columns
            if (want_gh)
                grad_slice<false>(sg, sm.b, d0 + (size_t)(2 * t), [&](size_t r, size_t col, float x) {
                    const size_t row = row0 + r;
                    if (row < p.N && col < p.D) grad_hidden[row * p.D + col] += x;
                });
            // grad_W: vocabulary rows 16w.. of the tile x kBK columns, k over the block's rows
            if (want_gw)
                grad_slice<true>(sg, sm.a, d0 + (size_t)(2 * t), [&](size_t r, size_t col, float x) {
                    const size_t v = v0 + r;
                    if (v < p.V && col < p.D) atomicAdd(grad_weight + v * p.D + col, x);
                });
        }
    }
}

// ---- bf16 backward, gradient products on wgmma (sm_90a) ----------------------------
// One strip's products after its G (n_kept kept tiles, kept_tile(k): the k-th one's index in
// the strip) is in shared memory at smem + kWgStagesBytes in the wg_g_off layout. D streams
// in 64-wide slices, per (slice, kept tile) pair (slice-major) a stage holds hidden[row0 ..
// +127, d0 .. +63] and W[tile's 128 v, d0 .. +63] as wg_load_stage lays them out (K-major
// for the logits; read here MN-major: N = d, K = row or v, no re-layout), and
//   warpgroup 0: o[h] (rows 64 h .., 64 of D) += G[rows, tile] . W_tile[:, slice]: A = G K-major
//                (K = v), B = the W slice MN-major; summed over the strip's kept tiles in
//                registers (scale-d 0 on the first), then one plain read-modify-write of
//                grad_hidden per strip and slice (deterministic, as the mma.sync phase);
//   warpgroup 1: o[h] (vocabulary rows 64 h .. of the tile, 64 of D) = G[:, tile]^T . hidden
//                slice: A = G^T MN-major (one 16 KiB G chunk per h, K = row), B = the hidden
//                slice MN-major; fp32 atomicAdd into grad_W.
// 2 x 8 wgmma.m64n64k16 per pair and warpgroup (k = 128 in 8 k16 steps, in k order).
// Every thread calls it; it ends with a barrier (stages and G free on return).
template <typename KeptTile>
__device__ __forceinline__ void
wg_grad_strip(unsigned char *smem, const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
              const FusedParams &p, size_t row0, size_t vs, int n_kept, const KeptTile &kept_tile, bool vec,
              float *__restrict__ grad_hidden, float *__restrict__ grad_weight)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3, wi = warp & 3;
    // The warpgroup from a shuffle: provably warp-uniform for ptxas, so the role branches
    // around the wgmma below are not divergent paths (which serialize wgmma: ptxas C7520).
    const int wg = __shfl_sync(0xffffffffu, warp >> 2, 0);
    const bool mine = wg == 0 ? grad_hidden != nullptr : grad_weight != nullptr;
    const uint32_t gbase = smem_u32(smem + kWgStagesBytes);
    const size_t n_slices = (p.D + kWgBK - 1) / kWgBK;
    const size_t nq = n_slices * (size_t)n_kept;
    wg_load_stage<kTcBN>(smem, hidden, weight, p.N, p.D, p.V, row0, vs + (size_t)(kept_tile(0) * kTcBN), 0,
                         vec);
    cp_async_commit();
    float o[2][32]; // two m64 halves x n64, the wgmma accumulator layout
    for (size_t q = 0; q < nq; ++q) {
        if (q + 1 < nq) { // its stage was released by the last barrier
            const size_t qs = (q + 1) / (size_t)n_kept;
            const int qt = kept_tile((int)((q + 1) % (size_t)n_kept));
            wg_load_stage<kTcBN>(smem + ((q + 1) & 1) * kWgStageBytes, hidden, weight, p.N, p.D, p.V, row0,
                                 vs + (size_t)(qt * kTcBN), qs * kWgBK, vec);
        }
        cp_async_commit();
        cp_async_wait_1();
        wg_fence_proxy(); // this thread's stage writes, before the barrier publishes them to wgmma
        __syncthreads();
        const uint32_t base = smem_u32(smem + (q & 1) * kWgStageBytes);
        const int k = (int)(q % (size_t)n_kept), tile = kept_tile(k);
        const size_t d0 = (q / (size_t)n_kept) * kWgBK;
        if (mine) { // (warpgroup-uniform)
            if (wg == 0) {
                const uint64_t db0 = wg_desc_mn128(base + kWgOperandBytes),
                               ga0 = wg_desc_sw128(gbase + (uint32_t)(2 * tile * kWgOperandBytes));
                wg_fence(); // the accumulators were last touched by ordinary instructions
                MF_UNROLL
                for (int kk = 0; kk < kTcBN / 16; ++kk) { // K = the tile's 128 v: 2 G chunks
                    const uint64_t db = wg_desc_add(db0, 2048u * kk);
                    const uint32_t goff = (uint32_t)((kk >> 2) * kWgOperandBytes) + 32u * (kk & 3);
                    MF_UNROLL
                    for (int h = 0; h < 2; ++h)
                        wg_mma<64, 0, 1>(o[h], wg_desc_add(ga0, goff + 8192u * h), db, k > 0 || kk > 0);
                }
                wg_commit();
                wg_wait_all();
            } else {
                const uint64_t db0 = wg_desc_mn128(base),
                               ga0 = wg_desc_mn128(gbase + (uint32_t)(2 * tile * kWgOperandBytes));
                wg_fence();
                MF_UNROLL
                for (int kk = 0; kk < kTcBM / 16; ++kk) { // K = the block's 128 rows
                    const uint64_t db = wg_desc_add(db0, 2048u * kk);
                    MF_UNROLL
                    for (int h = 0; h < 2; ++h)
                        wg_mma<64, 1, 1>(o[h], wg_desc_add(ga0, (uint32_t)(h * kWgOperandBytes) + 2048u * kk),
                                         db, kk > 0);
                }
                wg_commit();
                wg_wait_all();
            }
            if (wg == 1 || k == n_kept - 1) {
                MF_UNROLL
                for (int h = 0; h < 2; ++h) {
                    MF_UNROLL
                    for (int i = 0; i < 32; ++i) {
                        const int r = 64 * h + 16 * wi + g + 8 * ((i >> 1) & 1);
                        const size_t col = d0 + (size_t)(8 * (i >> 2) + 2 * t + (i & 1));
                        if (col >= p.D) continue;
                        if (wg == 0) {
                            const size_t row = row0 + (size_t)r;
                            if (row < p.N) grad_hidden[row * p.D + col] += o[h][i];
                        } else {
                            const size_t v = vs + (size_t)(tile * kTcBN + r);
                            if (v < p.V) atomicAdd(grad_weight + v * p.D + col, o[h][i]);
                        }
                    }
                }
            }
        }
        __syncthreads(); // stage q & 1 (and, after the last pair, G) is consumed
    }
}

// ---- bf16 backward -----------------------------------------------------------------
// The vocabulary is walked in strips of kStrip 128-column tiles (kWg: kTcStrip). Per tile of a
// strip: recompute the 128 x 128 logits with tc_logits_tile, form dL/dz in
// registers from the saved lse, round it to bf16 into the strip's shared G
// (128 x 512: the mma's operand precision), add its column sums to grad_bias.
// Then stream D once more in 32-wide slices; per slice and kept tile of the strip
// the stages hold the hidden slice and that tile's W slice, and
//   warps 0-3: acc_h[32 w .., d0 ..] += G[32 w .., tile] . W_tile[:, d0 ..]
//              (A = G by ldmatrix, B = the W slice by ldmatrix.trans), summed over
//              the strip's tiles in registers, then added to the caller's
//              grad_hidden by a plain read-modify-write: once per strip, not per
//              tile (the CTA owns its rows and walks strips and tiles in order, so
//              grad_hidden is deterministic);
//   warps 4-7: grad_W[v0 + 32 w' .., d0 ..] += G[:, tile]^T . hidden_blk[:, d0 ..]
//              (A = G^T and B = the hidden slice, both by ldmatrix.trans), fp32
//              atomicAdd: row blocks arrive in the order the CTAs run.
// grad_bias: column sums of the fp32 dL/dz, reduced over the warp's rows by
// shuffles, one atomicAdd per column per 32-row warp strip (4 per CTA).
//
// The body is shared with the wgmma kernel (kWg: the recompute on wgmma, 2 warpgroups x
// 64 rows x 128 columns, stages of kWgStagesBytes; G in the wg_g_off layout and the
// gradient phase by wg_grad_strip). smem: the dynamic shared memory (kWg: 1024-byte
// aligned), stages first, then the strip's G.
// Per-thread accumulator geometry: MT m16 tiles x NF n8 blocks, row slot r = row
// rbase + 8 r of the block, first column cbase of the tile.
template <bool kWg, int kStrip>
__device__ __forceinline__ void tc_bwd_body(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                                            const bf16 *__restrict__ bias, const int64_t *__restrict__ labels,
                                            const FusedParams &p, int vec, float *__restrict__ grad_hidden,
                                            float *__restrict__ grad_weight, float *__restrict__ grad_bias,
                                            unsigned char *smem, float *row_lse, float *row_g, int *row_y)
{
    constexpr int MT = kWg ? 1 : 2, NF = kWg ? 16 : 8, kLdg = tc_ldg(kStrip);
    static_assert(!kWg || kStrip == kTcStrip, "the wgmma G layout (kWgGBytes) holds kTcStrip tiles");
    TcStage *st = reinterpret_cast<TcStage *>(smem);
    bf16(*sg)[kLdg] = reinterpret_cast<bf16(*)[kLdg]>(smem + 2 * sizeof(TcStage)); // !kWg
    unsigned char *wg_g = smem + kWgStagesBytes; // kWg: G in the wg_g_off layout
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3, wm = warp & 3, wn = warp >> 2;
    const int rbase = kWg ? 64 * (warp >> 2) + 16 * (warp & 3) + g : 32 * wm + g;
    const int cbase = kWg ? 2 * t : 64 * wn + 2 * t;
    const size_t row0 = (size_t)blockIdx.x * kTcBM;
    bwd_row_stats(labels, p, row0, kTcBM, row_y, row_g,
                  row_lse); // (visible after the logits tile's first barrier)
    const bool want_gh = grad_hidden != nullptr, want_gw = grad_weight != nullptr;
    const bool is_vec = vec != 0;
    const int role = warp >> 2, wi = warp & 3, q8 = lane >> 3; // role 0: grad_hidden, 1: grad_W
    const size_t n_slices = (p.D + kTcBK - 1) / kTcBK;
    for (size_t vs = 0; vs < p.V; vs += (size_t)kTcBN * kStrip) {
        const size_t left = (p.V - vs + kTcBN - 1) / kTcBN;
        const int n_tiles = left < (size_t)kStrip ? (int)left : kStrip;
        unsigned keep_mask = 0; // tiles of the strip with a |dL/dz| >= filter * row scale
        for (int tt = 0; tt < n_tiles; ++tt) {
            const size_t v0 = vs + (size_t)(tt * kTcBN);
            // Per tile: not live across the gradient phase (the wgmma path's first mma_async
            // reads its accumulators, scale-d 0 or not).
            float acc[MT][NF][4];
            if constexpr (kWg)
                wg_logits_tile<kTcBN>(acc, smem, hidden, weight, p.N, p.D, p.V, row0, v0, is_vec);
            else
                tc_logits_tile(acc, st, hidden, weight, p.N, p.D, p.V, row0, v0, is_vec);
            const int keep = dlogit_tile(acc, v0 + (size_t)cbase, rbase, bias, p, row_y, row_lse, row_g);
            MF_UNROLL
            for (int mt = 0; mt < MT; ++mt) {
                MF_UNROLL
                for (int f = 0; f < NF; ++f) {
                    const int r = rbase + 16 * mt, c = tt * kTcBN + cbase + 8 * f;
                    if constexpr (kWg) {
                        *reinterpret_cast<__nv_bfloat162 *>(wg_g + wg_g_off(r, c)) =
                            __floats2bfloat162_rn(acc[mt][f][0], acc[mt][f][1]);
                        *reinterpret_cast<__nv_bfloat162 *>(wg_g + wg_g_off(r + 8, c)) =
                            __floats2bfloat162_rn(acc[mt][f][2], acc[mt][f][3]);
                    } else {
                        *reinterpret_cast<__nv_bfloat162 *>(&sg[r][c]) =
                            __floats2bfloat162_rn(acc[mt][f][0], acc[mt][f][1]);
                        *reinterpret_cast<__nv_bfloat162 *>(&sg[r + 8][c]) =
                            __floats2bfloat162_rn(acc[mt][f][2], acc[mt][f][3]);
                    }
                }
            }
            if constexpr (kWg) wg_fence_proxy(); // G's generic writes, before wgmma reads them
            // Gradient filtering (off when p.filter == 0: every |d| < 0 is false).
            if (!__syncthreads_or(keep)) continue; // (uniform) also publishes sg
            keep_mask |= 1u << tt;
            if (grad_bias != nullptr) {
                MF_UNROLL
                for (int f = 0; f < NF; ++f) {
                    MF_UNROLL
                    for (int c = 0; c < 2; ++c) {
                        float s = acc[0][f][c] + acc[0][f][c + 2];
                        MF_UNROLL
                        for (int mt = 1; mt < MT; ++mt) {
                            s += acc[mt][f][c];
                            s += acc[mt][f][c + 2];
                        }
                        s += __shfl_xor_sync(0xffffffffu, s, 4);
                        s += __shfl_xor_sync(0xffffffffu, s, 8);
                        s += __shfl_xor_sync(0xffffffffu, s, 16);
                        const size_t j = v0 + (size_t)(cbase + 8 * f + c);
                        if (g == 0 && j < p.V) atomicAdd(grad_bias + j, s);
                    }
                }
            }
        }
        if (keep_mask == 0 || (!want_gh && !want_gw)) continue;
        const int n_kept = __popc(keep_mask);
        // The kept tile of rank k in the strip (registers only: no indexed array).
        auto kept_tile = [&](int k) {
            int tile = 0, seen = 0;
            MF_UNROLL
            for (int b = 0; b < kStrip; ++b) {
                if ((keep_mask >> b) & 1u) {
                    if (seen == k) tile = b;
                    ++seen;
                }
            }
            return tile;
        };
        if constexpr (kWg) {
            wg_grad_strip(smem, hidden, weight, p, row0, vs, n_kept, kept_tile, is_vec,
                          want_gh ? grad_hidden : nullptr, want_gw ? grad_weight : nullptr);
            continue;
        }
        // Pipeline over (slice, kept tile) pairs, slice-major.
        const size_t nq = n_slices * (size_t)n_kept;
        tc_load_stage(st[0], hidden, weight, p.N, p.D, p.V, row0, vs + (size_t)(kept_tile(0) * kTcBN), 0,
                      is_vec);
        cp_async_commit();
        float o[2][4][4] = {}; // 32 rows (grad_hidden) or vocabulary rows (grad_W) x 32 of D
        for (size_t q = 0; q < nq; ++q) {
            if (q + 1 < nq) {
                const size_t qs = (q + 1) / (size_t)n_kept;
                const int qt = kept_tile((int)((q + 1) % (size_t)n_kept));
                tc_load_stage(st[(q + 1) & 1], hidden, weight, p.N, p.D, p.V, row0, vs + (size_t)(qt * kTcBN),
                              qs * kTcBK, is_vec);
            }
            cp_async_commit();
            cp_async_wait_1();
            __syncthreads();
            const TcStage &c = st[q & 1];
            const int k = (int)(q % (size_t)n_kept), tile = kept_tile(k);
            const size_t d0 = (q / (size_t)n_kept) * kTcBK;
            if (role == 0 ? want_gh : want_gw) {
                if (role == 1 || k == 0) frags_zero(o); // grad_hidden sums the strip's tiles; grad_W one tile
                const bf16(*bsrc)[kTcLdk] = role == 0 ? c.b : c.a; // k: vocabulary / rows
                const int gc = tile * kTcBN;                       // the tile's columns in sg
                MF_UNROLL
                for (int kk = 0; kk < kTcBN; kk += 16) {
                    uint32_t a[2][4];
                    MF_UNROLL
                    for (int mt = 0; mt < 2; ++mt) {
                        if (role == 0) // G rows 32 wi + 16 mt .., k = vocabulary
                            ldsm_x4(a[mt], &sg[32 * wi + 16 * mt + (lane & 15)][gc + kk + (lane >> 4) * 8]);
                        else // G^T: vocabulary 32 wi + 16 mt .., k = rows
                            ldsm_x4_t(
                                a[mt],
                                &sg[kk + (lane & 7) + (q8 >> 1) * 8][gc + 32 * wi + 16 * mt + (q8 & 1) * 8]);
                    }
                    MF_UNROLL
                    for (int fp = 0; fp < 2; ++fp) {
                        uint32_t b[4];
                        ldsm_x4_t(b, &bsrc[kk + (lane & 7) + (q8 & 1) * 8][16 * fp + (q8 >> 1) * 8]);
                        MF_UNROLL
                        for (int mt = 0; mt < 2; ++mt) {
                            mma_x2(o[mt][2 * fp], o[mt][2 * fp + 1], a[mt], b);
                        }
                    }
                }
                if (role == 1 || k == n_kept - 1) {
                    for_each_frag(o, d0 + (size_t)(2 * t), [&](float &x, int rs, size_t col) {
                        const int r = 32 * wi + g + 8 * rs;
                        if (col >= p.D) return;
                        if (role == 0) {
                            const size_t row = row0 + (size_t)r;
                            if (row < p.N) grad_hidden[row * p.D + col] += x;
                        } else {
                            const size_t v = vs + (size_t)(tile * kTcBN + r);
                            if (v < p.V) atomicAdd(grad_weight + v * p.D + col, x);
                        }
                    });
                }
            }
            __syncthreads(); // stage q & 1 (and, after the last pair, sg) is consumed
        }
    }
}

// mf-budget: regs<=255 smem<=1536 stack<=0 spill=0  (sm_90: see docs/cross_entropy.md; dynamic smem tc_bwd_smem(4) = 174,080 B, tc_bwd_smem(3) = 141,312 B)
template <int kStrip>
__global__ void __launch_bounds__(kTcThreads, 1)
    ce_fused_bwd_mma_kernel(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                            const bf16 *__restrict__ bias, const int64_t *__restrict__ labels, FusedParams p,
                            int vec, float *__restrict__ grad_hidden, float *__restrict__ grad_weight,
                            float *__restrict__ grad_bias)
{
    extern __shared__ __align__(16) unsigned char ce_tc_smem[];
    __shared__ float row_lse[kTcBM], row_g[kTcBM];
    __shared__ int row_y[kTcBM];
    tc_bwd_body<false, kStrip>(hidden, weight, bias, labels, p, vec, grad_hidden, grad_weight, grad_bias,
                               ce_tc_smem, row_lse, row_g, row_y);
}

// ---- bf16 backward with the recompute on wgmma (sm_90a) ---------------------------
// tc_bwd_body<true>: the logits tile of each strip's tiles by wg_logits_tile (two
// warpgroups x m64n128k16), dL/dz in the wgmma accumulator layout (grad_bias: one
// atomicAdd per column per 16-row warp strip, 8 per CTA), G in the wg_g_off layout, and
// the two gradient products by wg_grad_strip (m64n64k16; the same bf16 operands and k
// order as the mma.sync phase: grad_hidden deterministic, grad_W fp32 atomics).
// mf-budget: regs<=255 smem<=1536 stack<=0 spill=0  (sm_90a: 255 regs; dynamic smem kWgBwdSmem = 197,632 B)
__global__ void __launch_bounds__(kTcThreads, 1)
    ce_fused_bwd_wgmma_kernel(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                              const bf16 *__restrict__ bias, const int64_t *__restrict__ labels,
                              FusedParams p, int vec, float *__restrict__ grad_hidden,
                              float *__restrict__ grad_weight, float *__restrict__ grad_bias)
{
#if MF_WGMMA_CODE
    extern __shared__ __align__(16) unsigned char ce_tc_smem[];
    __shared__ float row_lse[kTcBM], row_g[kTcBM];
    __shared__ int row_y[kTcBM];
    tc_bwd_body<true, kTcStrip>(hidden, weight, bias, labels, p, vec, grad_hidden, grad_weight, grad_bias,
                                wg_align_1024(ce_tc_smem), row_lse, row_g, row_y);
#else
    (void)hidden, (void)weight, (void)bias, (void)labels, (void)p, (void)vec, (void)grad_hidden;
    (void)grad_weight, (void)grad_bias;
    __trap(); // no sm_90a code: the launcher never picks this kernel
#endif
}

} // namespace cce
} // namespace MF_NS
