// NSA bf16 forward, selected and sliding-window branches on mma.sync (nsa_mma_fwd_kernel):
// query-blocked CTAs that stream the union of their tokens' selected blocks and windows
// (namespace nsa_sw, whose key streams the wgmma forward and the backward reuse).
#pragma once

#include "mma_common.cuh"

namespace MF_NS {

// ---- bf16 tensor-core path: selected and sliding branches, query-blocked --------------
// One CTA (WARPS warps, 16 WARPS rows) per (b, KV group, QT consecutive
// tokens), QT = min(32, 16 WARPS / G): its rows are the (token, head) pairs
// t0 + r / G, r % G (as nsa_mma_cmp_kernel), warp w owning rows 16w..16w+15 as
// one m16 tile. The forward uses 8 warps (128 rows: 21 tokens at G = 6) when
// 64 rows hold fewer than 32 tokens (G >= 3), else 4 (fwd_warps); the
// backward 4. Keys come in 16-key sub-tiles, staged Stage<D> = 4 at a time (64
// keys, as attention_mma.cu's FA2 tiles; 2 at D = 128, which has twice the
// bytes and registers per key): each stage is loaded once per CTA
// (cp.async, double-buffered: the next stage is in flight while the warps
// multiply the current one) and feeds all QT tokens' G heads:
//   selected branch: the union of the QT tokens' selections (each list is
//     increasing, so warp 0 merges them kChunk entries at a time: lane u holds
//     token u's position; the next union block is the warp minimum, its token
//     mask the ballot of the lanes that hold it); sub-tile x of a round is
//     16-key piece x % ntb of union block x / ntb (ntb = ceil(l' / 16); a
//     piece ends at its block's end, so l' need not be a multiple of 16 or
//     64), and a stage takes 4 consecutive sub-tiles, possibly of different
//     blocks, each with its own token mask; row (t, h) sees key s iff its
//     token's bit is set and s <= t;
//   sliding window: the keys [t0 + 1 - w, tend) in 16-key sub-tiles; row t
//     sees s iff t - w < s <= t.
// A warp skips the sub-tiles none of its rows sees (warp-uniform), and the
// whole stage when that is all of them. Per stage and warp: S = Q K^T (D/16 x
// 2 mma.sync per sub-tile), one masked online-softmax step over the stage's
// keys on the accumulator fragments (base 2), P rounded to bf16 as the A
// fragments of O += P V (V by ldmatrix.trans, D/8 mma.sync per sub-tile). A
// row's keys are visited in increasing order as before (stages in order, and
// a stage's keys all at once); a masked key contributes p = 0 exactly, so a
// row's sums are the per-row kernel's except for where the online rescaling
// happens (the stage boundaries), which moves P's bf16 rounding only within
// its 2^-8 bound. Each branch adds gate * o / l to out (written by the
// compression kernel first, same stream) and writes its lse column.
namespace nsa_sw {
// The backward's CTA (and the forward's at G <= 2): 4 warps, 64 rows. The
// helpers below take the CTA's warp count WARPS as a template parameter.
constexpr int kWarps = 4, kThreadsS = 32 * kWarps, kRows = 16 * kWarps;
constexpr int kFwdWarps = 8; // the forward's CTA at G >= 3: 8 warps, 128 rows
constexpr int kMaxQT = 32;   // tokens per CTA: one bit each of a union entry's mask
constexpr int kChunk = 32;   // union entries per merge round (shared memory independent of n)
// 16-key sub-tiles per forward stage: 64 keys, 32 at D = 128 (64 would
// take 32 more registers for S beside its 64 of O)
template <int D> struct Stage {
    static constexpr int value = D == 128 ? 2 : 4;
};

// The sub-tiles of one stage (CTA-uniform): sub-tile j holds the keys
// [k0[j], k0[j] + nk[j]) (nk 0: none) and tm[j] the tokens (bit u: token
// t0 + u) that may see them. A stream's fill(y, st) describes stage y
// (sub-tiles NT y .. NT y + NT - 1; past the stream's end: empty). run_stream
// calls fill once per stage, for its scan and loads, and keeps the result in
// shared memory for the stage's step (stage_bits), so no sub-tile is
// described twice. full: the NT sub-tiles are full and contiguous (keys
// [k0[0], k0[0] + 16 NT)) and share one token mask (tm[0]), which lets
// stage_bits test an interior stage with one key range and one mask instead of
// one per sub-tile; a fill may leave it false.
constexpr int kMaxNT = 4; // Stage<D>::value <= 4
struct SubTiles {
    size_t k0[kMaxNT];
    int nk[kMaxNT];
    unsigned int tm[kMaxNT];
    bool full;
};

// fill(y, st), then whether stage y has a key (CTA-uniform).
template <int NT, typename Fill> __device__ __forceinline__ bool fill_any(Fill &fill, size_t y, SubTiles &st)
{
    fill(y, st);
    bool any = false;
    MF_UNROLL
    for (int j = 0; j < NT; ++j) any = any || st.nk[j] > 0;
    return any;
}

// chunk(c) for this thread's c < N of a CTA of TH threads (c = threadIdx.x +
// TH it): unrolled up to 2 per thread (no loop left in the code); a rolled
// loop beyond (unrolled, every chunk's addresses would stay in registers).
template <int N, int TH, typename F> __device__ __forceinline__ void for_chunks(F chunk)
{
    constexpr int kIt = (N + TH - 1) / TH;
    if constexpr (kIt <= 2) {
        MF_UNROLL
        for (int it = 0; it < kIt; ++it) {
            const int c = (int)threadIdx.x + it * TH;
            if (N % TH == 0 || c < N) chunk(c);
        }
    } else {
        MF_NO_UNROLL
        for (int c = (int)threadIdx.x; c < N; c += TH) chunk(c);
    }
}

// A stage's sub-tiles (st) into the K and V buffers Kb, Vb by cp.async, CTA-wide
// (WARPS warps, blockDim.x = 32 WARPS); sub-tile j in rows 16 j .. 16 j + 15, rows past
// its keys zero-filled. Lay, the buffers' layout: Lay::chunk(c, r, col) places chunk c
// of a sub-tile's 16 D / 8 (8 bf16 of row r from column col), Lay::off(row, col) the byte
// offset of an element; a sub-tile's chunks of K, then of V, are spread over all threads
// (for_chunks). A full stage (st.full: keys k0[0] + 16 j + r of sub-tile j, all present)
// computes each chunk's global address and buffer offset once and steps both by 16 keys
// per sub-tile, without per-sub-tile key counts, 64-bit keys or zero-fill; Lay::off must
// be row 16 j + r's = row r's + row 16 j's - row 0's (true of both layouts: padded rows,
// and the swizzled tile, whose phase repeats every 8 rows).
template <int D, int NT, int WARPS, typename Lay>
__device__ __forceinline__ void load_stage_as(unsigned char *Kb, unsigned char *Vb, const __nv_bfloat16 *kg,
                                              const __nv_bfloat16 *vg, size_t stride, const SubTiles &st)
{
    constexpr int kPer = 2 * D, kTh = 32 * WARPS; // a sub-tile's chunks: 16 rows x D / 8
    // chunk c2 of a sub-tile: V's (isv) after K's, its row r and column col
    auto chunk = [](int c2, bool &isv, int &r, int &col) {
        isv = c2 >= kPer;
        Lay::chunk(isv ? c2 - kPer : c2, r, col);
    };
    if (st.full) { // CTA-uniform
        for_chunks<2 * kPer, kTh>([&](int c2) {
            bool isv;
            int r, col;
            chunk(c2, isv, r, col);
            const __nv_bfloat16 *src = (isv ? vg : kg) + (st.k0[0] + (size_t)r) * stride + (size_t)col;
            unsigned char *dst = (isv ? Vb : Kb) + Lay::off(r, col);
            MF_UNROLL
            for (int j = 0; j < NT; ++j)
                cp_async16(dst + (Lay::off(16 * j, 0) - Lay::off(0, 0)), src + (size_t)(16 * j) * stride,
                           16u);
        });
        return;
    }
    MF_UNROLL
    for (int j = 0; j < NT; ++j) {
        const int nk = st.nk[j];
        const size_t k0 = nk > 0 ? st.k0[j] : 0; // an empty sub-tile zero-fills from key 0
        for_chunks<2 * kPer, kTh>([&](int c2) {
            bool isv;
            int r, col;
            chunk(c2, isv, r, col);
            const bool in = r < nk;
            const size_t at = (k0 + (in ? (size_t)r : 0)) * stride + (size_t)col;
            cp_async16((isv ? Vb : Kb) + Lay::off(16 * j + r, col), (isv ? vg : kg) + at, in ? 16u : 0u);
        });
    }
}

// The mma.sync kernels' stage buffers: 16 NT rows of D + 8 bf16 (the padding spreads
// ldmatrix's rows over the banks), a row's chunks on consecutive threads.
template <int D> struct Padded {
    __device__ __forceinline__ static void chunk(int c, int &r, int &col)
    {
        r = c / (D / 8);
        col = (c % (D / 8)) * 8;
    }
    __device__ __forceinline__ static int off(int row, int col) { return (row * (D + 8) + col) * 2; }
};

template <int D, int NT, int WARPS>
__device__ __forceinline__ void load_stage(__nv_bfloat16 *Ks, __nv_bfloat16 *Vs, const __nv_bfloat16 *kg,
                                           const __nv_bfloat16 *vg, size_t stride, const SubTiles &st)
{
    load_stage_as<D, NT, WARPS, Padded<D>>(reinterpret_cast<unsigned char *>(Ks),
                                           reinterpret_cast<unsigned char *>(Vs), kg, vg, stride, st);
}

// The rows a lane holds (slots i = 0, 1: rows 16 warp + g8 + 8 i of the CTA).
struct Rows {
    size_t t[2]; // token
    int tok[2];  // token index within the CTA (bit of a union mask)
    bool ok[2];  // a real row (padding rows see no key)
};

// The keys the rows of a stream may see, besides a sub-tile's token mask (a
// stream's constants, built once by keys_of): row slot i of the lane sees
// [kl[i], kh[i]) of a sub-tile whose mask holds its token's bit rbit[i] (0 for
// a padding row); the warp's rows (nsa_wg_fwd_kernel: its warpgroup's, the
// span of blk_of) together see [ukl, ukh), each of them at least
// [ikl, ikh) (empty when ikl >= ikh), and wmask holds their tokens.
struct Keys {
    size_t kl[2], kh[2];
    unsigned int rbit[2];
    size_t ukl, ukh, ikl, ikh;
    unsigned int wmask;
    unsigned int pad; // seen's bits of the lane's padding row slots (softmax_step's test)
};

// The lane's visibility bits of a stage (st: its sub-tiles; computed first, so
// that nothing of st stays live across the products; ks: the stream's Keys):
// bit 8 j + 4 i + 2 n + c of seen: row slot i sees key 8 n + 2 t4 + c of
// sub-tile j; bit j of needm: this warp computes sub-tile j (warp-uniform: a
// key of it may be seen by a row of the warp's). An interior stage (every
// sub-tile full and inside [ikl, ikh)) needs only the token masks.
template <int NT>
__device__ __forceinline__ void stage_bits(unsigned int &needm, unsigned int &seen, const SubTiles &st,
                                           const Keys &ks, int lane)
{
    needm = 0u;
    seen = 0u;
    bool inner;
    if (st.full) { // one range for the stage (CTA-uniform)
        inner = st.k0[0] >= ks.ikl && st.k0[0] + (size_t)(16 * NT) <= ks.ikh;
    } else {
        inner = true;
        MF_UNROLL
        for (int j = 0; j < NT; ++j)
            inner = inner && st.nk[j] == 16 && st.k0[j] >= ks.ikl && st.k0[j] + 16 <= ks.ikh;
    }
    if (inner) {       // warp-uniform
        if (st.full) { // one token mask for the stage (SubTiles::full): the bits of sub-tile 0, repeated
            const unsigned int tm = st.tm[0];
            if ((tm & ks.wmask) != 0u) {
                needm = (1u << NT) - 1u;
                seen = (((tm & ks.rbit[0]) != 0u ? 15u : 0u) | ((tm & ks.rbit[1]) != 0u ? 240u : 0u)) *
                       (0xffffffffu >> (32 - 8 * NT) & 0x01010101u);
            }
            return;
        }
        MF_UNROLL
        for (int j = 0; j < NT; ++j) {
            const unsigned int tm = st.tm[j];
            if ((tm & ks.wmask) == 0u) continue;
            needm |= 1u << j;
            MF_UNROLL
            for (int i = 0; i < 2; ++i)
                if ((tm & ks.rbit[i]) != 0u) seen |= 15u << (8 * j + 4 * i);
        }
        return;
    }
    const int t4 = lane & 3;
    MF_UNROLL
    for (int j = 0; j < NT; ++j) {
        const size_t k0 = st.k0[j];
        const int nk = st.nk[j];
        const unsigned int tm = st.tm[j];
        if (nk == 0 || (tm & ks.wmask) == 0u || k0 >= ks.ukh || k0 + (size_t)nk <= ks.ukl) continue;
        needm |= 1u << j;
        MF_UNROLL
        for (int i = 0; i < 2; ++i) {
            if ((tm & ks.rbit[i]) == 0u) continue;
            // the sub-tile's keys [lo, hi) that row slot i sees
            const size_t kl = ks.kl[i], kh = ks.kh[i];
            const int lo = k0 >= kl ? 0 : (kl - k0 < (size_t)nk ? (int)(kl - k0) : nk);
            const int hi = k0 >= kh ? 0 : (kh - k0 < (size_t)nk ? (int)(kh - k0) : nk);
            // as bits (hi <= 16), shifted so that bits c and 8 + c are this lane's keys
            // 2 t4 + c and 8 + 2 t4 + c: seen's bits 2 n + c of (j, i)
            const unsigned int m = ((1u << hi) - (1u << (lo < hi ? lo : hi))) >> (2 * t4);
            seen |= ((m & 3u) | ((m >> 6) & 12u)) << (8 * j + 4 * i);
        }
    }
}

// One masked online-softmax step over a stage's scores s (2 NT n8 accumulator
// tiles of the lane's two rows; seen: stage_bits's bits): s becomes P =
// exp2(scale_log2 s - m) (0 where masked), acc's m, l and O rescaled. Element e
// of n8 tile 2 j + n: row slot e >> 1, key k0_j + 8 n + 2 t4 + (e & 1).
// stage_step's, and nsa_wg_fwd_kernel's on the wgmma accumulators (same layout).
// MASK false: every bit of seen is set (the caller's test), so no score is masked.
template <int D, int NT, bool MASK>
__device__ __forceinline__ void softmax_step_as(nsa_mma::Acc<D> &acc, float (&s)[2 * NT][4],
                                                unsigned int seen, float scale_log2)
{
    float mx[2] = { -INFINITY, -INFINITY };
    MF_UNROLL
    for (int j = 0; j < NT; ++j) MF_UNROLL
    for (int n = 0; n < 2; ++n) MF_UNROLL
    for (int e = 0; e < 4; ++e) {
        // raw scores, masked to -inf; the max by fmaxf and the scale in online_max_step
        // and softmax_p (mf_mma.cuh: NaN still propagates through p)
        const bool on = !MASK || ((seen >> (8 * j + 4 * (e >> 1) + 2 * n + (e & 1))) & 1u) != 0u;
        const float x = on ? s[2 * j + n][e] : -INFINITY;
        s[2 * j + n][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
    }
    float corr[2], mu[2];
    online_max_step(acc.m, mx, scale_log2, corr, mu);
    float rs[2] = { 0.0f, 0.0f };
    MF_UNROLL
    for (int n = 0; n < 2 * NT; ++n) MF_UNROLL
    for (int e = 0; e < 4; ++e) {
        // ex2.approx.ftz: a p below 2^-126 becomes 0; the row's largest term is about 1, so
        // l and O move by less than 2^-126 relative (exp2f would spend 3 more instructions per
        // score keeping such p subnormal)
        const float p = softmax_p(s[n][e], scale_log2, mu[e >> 1]);
        s[n][e] = p;
        rs[e >> 1] += p;
    }
    MF_UNROLL
    for (int r = 0; r < 2; ++r) acc.l[r] = acc.l[r] * corr[r] + quad_sum(rs[r]);
    MF_UNROLL
    for (int n = 0; n < D / 8; ++n) {
        acc.o[n][0] *= corr[0];
        acc.o[n][1] *= corr[0];
        acc.o[n][2] *= corr[1];
        acc.o[n][3] *= corr[1];
    }
}
// The step without per-score masks when every row of the warp sees every key of the
// stage (seen's 8 NT bits all set on every lane: the interior stages), else with them:
// the same values (a set bit keeps the score), about 1.5 instructions per score fewer.
// The test is a vote, so both paths are warp-uniform (ptxas: no divergent write of the
// wgmma accumulators, C7520). D >= 64 only: at D = 32 the second copy of the step took
// the 4-warp nsa_mma_fwd_kernel from 168 to 193 registers, 3 CTAs per SM to 2. pad: bits
// that count as seen for the test (the forward's padding rows, Keys::pad: zero q, results
// never stored, so the warp holding them is not kept on the masked path; 0 in the backward).
template <int D, int NT>
__device__ __forceinline__ void softmax_step(nsa_mma::Acc<D> &acc, float (&s)[2 * NT][4], unsigned int seen,
                                             unsigned int pad, float scale_log2)
{
    constexpr unsigned int kAll = NT == 4 ? 0xffffffffu : (1u << (8 * NT)) - 1u;
    if (D >= 64 && __all_sync(0xffffffffu, ((seen | pad) & kAll) == kAll))
        softmax_step_as<D, NT, false>(acc, s, seen, scale_log2);
    else
        softmax_step_as<D, NT, true>(acc, s, seen, scale_log2);
}

// Stage y for this warp (visibility: stage_bits). S = Q K^T per needed
// sub-tile, one masked online-softmax step over the stage, O += P V (P in
// bf16). Unneeded sub-tiles add nothing (their keys are masked for every row
// of the warp). SPLIT (the backward's recomputation of o): P V as Phi V + Plo V
// with P = Phi + Plo, both bf16 (~2^-16 relative), so that dg = dout . o is not
// moved by P's rounding.
template <int D, int NT, bool SPLIT = false>
__device__ __forceinline__ void stage_step(nsa_mma::Acc<D> &acc, const __nv_bfloat16 *Qw,
                                           const __nv_bfloat16 *Ks, const __nv_bfloat16 *Vs,
                                           const SubTiles &st, const Keys &ks, float scale_log2, int lane)
{
    constexpr int LDS = D + 8;
    unsigned int needm, seen;
    stage_bits<NT>(needm, seen, st, ks, lane);
    if (needm == 0u) return;
    float s[2 * NT][4];
    MF_UNROLL
    for (int n = 0; n < 2 * NT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    MF_UNROLL
    for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t qa[4];
        ldsm_x4(qa, Qw + (lane & 15) * LDS + kk * 16 + (lane >> 4) * 8);
        MF_UNROLL
        for (int j = 0; j < NT; ++j) {
            if (((needm >> j) & 1u) == 0u) continue;
            uint32_t b[4];
            ldsm_x4(b, Ks + (16 * j + (lane >> 4) * 8 + (lane & 7)) * LDS + kk * 16 + ((lane >> 3) & 1) * 8);
            mma_x2(s[2 * j], s[2 * j + 1], qa, b);
        }
    }
    softmax_step<D, NT>(acc, s, seen, SPLIT ? 0u : ks.pad, scale_log2);
    MF_UNROLL
    for (int j = 0; j < NT; ++j) {
        if (((needm >> j) & 1u) == 0u) continue;
        uint32_t pa[4], pl[4];
        nsa_mma::p_frags<SPLIT>(pa, pl, s[2 * j], s[2 * j + 1]); // P in bf16 (split: hi + lo)
        MF_UNROLL
        for (int np = 0; np < D / 16; ++np) {
            uint32_t b[4];
            ldsm_x4_t(b,
                      Vs + (16 * j + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + np * 16 + (lane >> 4) * 8);
            if (SPLIT) mma_x2(acc.o[2 * np], acc.o[2 * np + 1], pl, b);
            mma_x2(acc.o[2 * np], acc.o[2 * np + 1], pa, b);
        }
    }
}

// A padded stage (load_stage's layout): read by ldmatrix, nothing to fence.
template <int N> __device__ __forceinline__ const __nv_bfloat16 *stage_ptr(const __nv_bfloat16 (&t)[N])
{
    return t;
}
template <int N> __device__ __forceinline__ void stage_landed(const __nv_bfloat16 (&)[N]) {}

// The stages y < nst of one key stream, CTA-wide, double-buffered: fill(y, st)
// describes stage y (SubTiles); step(st, Ks, Vs) multiplies it once it has
// landed in Ks, Vs (the forward: stage_step; the backward: its recomputation
// of o, then grad_stage), st read from cache (shared memory: thread 0 stores
// each stage's fill there when it loads the stage). A stage without keys is
// skipped. Every thread calls it with the same nst and fill results
// (CTA-uniform barriers); the caller's barrier precedes it, and it ends with
// one. WARPS: the CTA's warps (they share the loads).
// KT: a stage buffer's type, __nv_bfloat16[16 NT (D + 8)] (load_stage's padded rows) or
// nsa_wg::Tile<D> (the wgmma kernel's canonical layout); stage_ptr and stage_landed
// (the proxy fence the wgmma operands need) are overloaded on it.
template <int D, int NT, int WARPS, typename KT, typename Fill, typename Step>
__device__ __forceinline__ void run_stream(KT *Kt, KT *Vt, const __nv_bfloat16 *kg, const __nv_bfloat16 *vg,
                                           size_t stride, size_t nst, SubTiles (&cache)[2], Fill &fill,
                                           Step step)
{
    static_assert(NT <= kMaxNT, "SubTiles holds kMaxNT sub-tiles");
    SubTiles st;
    size_t y = 0;
    while (y < nst && !fill_any<NT>(fill, y, st)) ++y;
    if (y >= nst) return;
    load_stage<D, NT, WARPS>(Kt[0], Vt[0], kg, vg, stride, st);
    cp_async_commit();
    if (threadIdx.x == 0) cache[0] = st;
    for (int buf = 0; y < nst; buf ^= 1) {
        size_t yn = y + 1;
        while (yn < nst && !fill_any<NT>(fill, yn, st)) ++yn;
        if (yn < nst) { // prefetch stage yn into the other buffer (consumed before the last barrier)
            load_stage<D, NT, WARPS>(Kt[buf ^ 1], Vt[buf ^ 1], kg, vg, stride, st);
            cp_async_commit();
            if (threadIdx.x == 0) cache[buf ^ 1] = st; // read after the barrier of stage yn
            cp_async_wait_1();
        } else {
            cp_async_wait_all();
        }
        stage_landed(Kt[buf]);
        __syncthreads(); // stage y landed for every thread, its cache entry stored
        step(cache[buf], stage_ptr(Kt[buf]), stage_ptr(Vt[buf]));
        __syncthreads(); // stage y consumed (buffers and cache entry) before they are refilled
        y = yn;
    }
}

// out[row] += gate * o / l for the lane's real rows; lse column x.
template <int D>
__device__ __forceinline__ void finish_rows(const nsa_mma::Acc<D> &acc, const Rows &rw, float *out,
                                            float *lse, const __nv_bfloat16 *gate, int x, const NsaShape &sh,
                                            size_t b, size_t g, int lane)
{
    const int t4 = lane & 3;
    MF_UNROLL
    for (int i = 0; i < 2; ++i) {
        if (!rw.ok[i]) continue;
        // row r = 16 warp + lane / 4 + 8 i of the CTA: head r % G of token t
        const size_t r = (size_t)(16 * (threadIdx.x >> 5) + (lane >> 2) + 8 * i);
        const size_t row = (b * sh.S + rw.t[i]) * sh.Hq + g * sh.G + r % sh.G;
        const float w = __bfloat162float(gate[row]) / acc.l[i];
        MF_UNROLL
        for (int n = 0; n < D / 8; ++n) {
            float *o = out + row * D + (size_t)(n * 8 + 2 * t4);
            o[0] += w * acc.o[n][2 * i];
            o[1] += w * acc.o[n][2 * i + 1];
        }
        if (lse != nullptr && t4 == 0) lse[row * 3 + (size_t)x] = acc.m[i] * nsa_mma::kLn2 + logf(acc.l[i]);
    }
}

__device__ __forceinline__ int warp_min_i(int x)
{
    MF_UNROLL
    for (int o = 16; o > 0; o >>= 1) {
        const int y = __shfl_xor_sync(0xffffffffu, x, o);
        x = y < x ? y : x;
    }
    return x;
}

// QT tokens per CTA of WARPS warps (the forward and the backward): all G heads
// of each in the CTA's 16 WARPS rows, at most 32 (one mask bit each).
template <int WARPS> inline size_t tokens_per_cta(const NsaShape &sh)
{
    const size_t qt = (size_t)(16 * WARPS) / sh.G;
    return qt < (size_t)kMaxQT ? qt : (size_t)kMaxQT;
}

// The forward's warps per CTA: 8 (128 rows) when 64 rows hold fewer than
// kMaxQT tokens (G >= 3); at G <= 2 kMaxQT tokens fill at most 64 rows, and a
// 128-row CTA would leave half its warps or more without a row.
inline int fwd_warps(const NsaShape &sh)
{
    return sh.G * (size_t)kMaxQT > (size_t)kRows ? kFwdWarps : kWarps;
}

// One work item (b, KV group g, tokens [t0, tend)) as this lane sees it (the
// forward and the backward): its rows, and this warp's tokens [wt0, wt1]
// (wany: the warp has a real row) with their mask bits wmask.
struct Blk : nsa_mma::ItemPos { // b, g, t0, tend
    size_t ntok, nrows, wt0, wt1;
    bool wany;
    unsigned int wmask;
    Rows rw;
};
// span: the rows the "warp" fields describe, 16 (the warp's) or 64 (its
// warpgroup's: nsa_wg_fwd_kernel, whose skips must be warpgroup-uniform).
__device__ __forceinline__ Blk blk_of(const NsaShape &sh, size_t item, size_t QT, size_t nblk, int warp,
                                      int g8, size_t span = 16)
{
    Blk bk;
    static_cast<nsa_mma::ItemPos &>(bk) = nsa_mma::item_pos(sh, item, QT, nblk);
    bk.ntok = bk.tend - bk.t0;
    bk.nrows = bk.ntok * sh.G;
    MF_UNROLL
    for (int i = 0; i < 2; ++i) {
        const size_t r = (size_t)(16 * warp + g8 + 8 * i);
        bk.rw.ok[i] = r < bk.nrows;
        bk.rw.tok[i] = bk.rw.ok[i] ? (int)(r / sh.G) : 0;
        bk.rw.t[i] = bk.t0 + (size_t)bk.rw.tok[i];
    }
    const size_t wr0 = (size_t)(16 * warp) / span * span, wr1 = wr0 + span < bk.nrows ? wr0 + span : bk.nrows;
    bk.wany = wr0 < bk.nrows;
    bk.wt0 = bk.wany ? bk.t0 + wr0 / sh.G : 0;
    bk.wt1 = bk.wany ? bk.t0 + (wr1 - 1) / sh.G : 0;
    bk.wmask = 0u;
    for (size_t u = bk.wt0 - bk.t0; bk.wany && u <= bk.wt1 - bk.t0; ++u) bk.wmask |= 1u << u;
    return bk;
}

// The Keys of item bk's selected stream (win false: row t sees the keys
// [0, t + 1) of the blocks its token selected) or of its window (win true: the
// keys [t + 1 - w, t + 1)).
__device__ __forceinline__ Keys keys_of(const Blk &bk, size_t w, bool win)
{
    auto first = [&](size_t t) { return win && t + 1 > w ? t + 1 - w : 0; };
    Keys ks;
    MF_UNROLL
    for (int i = 0; i < 2; ++i) {
        const bool ok = bk.rw.ok[i];
        ks.kl[i] = ok ? first(bk.rw.t[i]) : 0;
        ks.kh[i] = ok ? bk.rw.t[i] + 1 : 0;
        ks.rbit[i] = ok ? 1u << bk.rw.tok[i] : 0u;
    }
    ks.pad = (bk.rw.ok[0] ? 0u : 0x0f0f0f0fu) | (bk.rw.ok[1] ? 0u : 0xf0f0f0f0u);
    ks.ukl = first(bk.wt0); // the warp's tokens: [wt0, wt1] (none: wmask 0)
    ks.ukh = bk.wt1 + 1;
    ks.ikl = first(bk.wt1);
    ks.ikh = bk.wt0 + 1;
    ks.wmask = bk.wmask;
    return ks;
}

// The union of a CTA's selections, one merge round at a time, and run_stream's
// stage descriptors (shared memory).
struct Union {
    int ulist[kChunk];          // union blocks of one merge round, increasing
    unsigned int umask[kChunk]; //   and the tokens (bits) that selected each
    int ucnt;
    SubTiles st[2]; // the sub-tiles of the stages in run_stream's two buffers
};

// The selected branch's key stream of item bk: the union of its tokens'
// selections (sel rows, each increasing), merged by warp 0 kChunk entries per
// round (lane u holds token u's next block; the next union block is the warp
// minimum, its token mask the ballot of the lanes holding it), each round's
// ntb-sub-tile pieces streamed by run_stream. step(st, ks, Ks, Vs) multiplies
// a stage (st: its SubTiles; ks: the stream's Keys). CTA-wide (WARPS warps);
// the caller's barrier precedes it.
template <int D, int NT, int WARPS, typename KT, typename Step>
__device__ __forceinline__ void selected_stream(const Blk &bk, const NsaShape &sh, const int32_t *sel,
                                                Union &un, KT *Kt, KT *Vt, const __nv_bfloat16 *kg,
                                                const __nv_bfloat16 *vg, size_t stride, int warp, int lane,
                                                Step step)
{
    const bool mine = warp == 0 && (size_t)lane < bk.ntok; // warp 0, lane = token
    const int32_t *srow = sel + ((bk.b * sh.S + bk.t0 + (mine ? (size_t)lane : 0)) * sh.Hk + bk.g) * sh.n;
    size_t ptr = 0;
    int hv = INT_MAX; // the lane's next selected block (INT_MAX: none left)
    if (mine && sh.n > 0 && srow[0] >= 0) hv = srow[0];
    const size_t ntb = (sh.ls + 15) / 16; // sub-tiles per selection block
    const Keys ks = keys_of(bk, sh.w, false);
    for (;;) {
        __syncthreads(); // the previous round's list is consumed
        if (warp == 0) {
            int cnt = 0;
            while (cnt < kChunk) {
                const int nx = warp_min_i(hv); // warp-uniform
                if (nx == INT_MAX) break;
                const unsigned int bal = __ballot_sync(0xffffffffu, hv == nx);
                if (lane == 0) {
                    un.ulist[cnt] = nx;
                    un.umask[cnt] = bal;
                }
                if (hv == nx) {
                    ++ptr;
                    hv = ptr < sh.n && srow[ptr] >= 0 ? srow[ptr] : INT_MAX;
                }
                ++cnt;
            }
            if (lane == 0) un.ucnt = cnt;
        }
        __syncthreads();
        const int cnt = un.ucnt;
        if (cnt == 0) break;
        // sub-tile x < cnt ntb: piece r = x mod ntb of union block u = x / ntb, one
        // division per stage (the seed's l' = 64: a stage is one block, u = y)
        const size_t ntiles = (size_t)cnt * ntb;
        auto fill = [&](size_t y, SubTiles &st) {
            if (ntb == (size_t)NT) { // a stage is union block y (the seed's l' = 64 at D <= 64)
                const size_t s0 = (size_t)un.ulist[y] * sh.ls;
                // its keys before tend (ls <= 16 NT here; a selected block starts before tend)
                const size_t rem = bk.tend > s0 ? bk.tend - s0 : 0;
                const int nb = rem < sh.ls ? (int)rem : (int)sh.ls;
                const unsigned int tm = un.umask[y];
                MF_UNROLL
                for (int j = 0; j < NT; ++j) {
                    st.k0[j] = s0 + (size_t)(16 * j);
                    st.nk[j] = nb <= 16 * j ? 0 : (nb - 16 * j < 16 ? nb - 16 * j : 16);
                    st.tm[j] = tm;
                }
                st.full = nb == 16 * NT;
                return;
            }
            const size_t x0 = (size_t)NT * y;
            size_t u = x0 / ntb, r = x0 - u * ntb;
            st.full = false; // (stage_bits tests each sub-tile)
            MF_UNROLL
            for (int j = 0; j < NT; ++j) {
                st.k0[j] = 0;
                st.nk[j] = 0;
                st.tm[j] = 0u;
                if (x0 + (size_t)j < ntiles) {
                    const size_t s0 = (size_t)un.ulist[u] * sh.ls,
                                 bend = s0 + sh.ls < bk.tend ? s0 + sh.ls : bk.tend, k0 = s0 + 16 * r;
                    st.k0[j] = k0;
                    st.nk[j] = k0 < bend ? (bend - k0 < 16 ? (int)(bend - k0) : 16) : 0;
                    st.tm[j] = un.umask[u];
                }
                if (++r == ntb) {
                    r = 0;
                    ++u;
                }
            }
        };
        run_stream<D, NT, WARPS>(Kt, Vt, kg, vg, stride, (ntiles + NT - 1) / NT, un.st, fill,
                                 [&](const SubTiles &st, const __nv_bfloat16 *Ks, const __nv_bfloat16 *Vs) {
                                     step(st, ks, Ks, Vs);
                                 });
    }
}

// The sliding window's key stream of item bk: the keys [t0 + 1 - w, tend) in
// 16-key sub-tiles; row t sees s iff t - w < s <= t. step, WARPS and un (its
// stage descriptors only) as selected_stream's.
template <int D, int NT, int WARPS, typename KT, typename Step>
__device__ __forceinline__ void window_stream(const Blk &bk, const NsaShape &sh, Union &un, KT *Kt, KT *Vt,
                                              const __nv_bfloat16 *kg, const __nv_bfloat16 *vg, size_t stride,
                                              Step step)
{
    const size_t wlo = bk.t0 + 1 > sh.w ? bk.t0 + 1 - sh.w : 0, ntiles = (bk.tend - wlo + 15) / 16;
    auto fill = [&](size_t y, SubTiles &st) {
        MF_UNROLL
        for (int j = 0; j < NT; ++j) {
            const size_t k0 = wlo + 16 * ((size_t)NT * y + (size_t)j);
            st.k0[j] = k0;
            st.nk[j] = k0 < bk.tend ? (bk.tend - k0 < 16 ? (int)(bk.tend - k0) : 16) : 0;
            st.tm[j] = 0xffffffffu;
        }
        st.full = st.nk[NT - 1] == 16; // contiguous keys
    };
    const Keys ks = keys_of(bk, sh.w, true);
    run_stream<D, NT, WARPS>(
        Kt, Vt, kg, vg, stride, (ntiles + NT - 1) / NT, un.st, fill,
        [&](const SubTiles &st, const __nv_bfloat16 *Ks, const __nv_bfloat16 *Vs) { step(st, ks, Ks, Vs); });
}

// Dynamic shared memory of nsa_mma_fwd_kernel<D, WARPS>: Q of the 16 WARPS
// rows, two K/V stages of 16 Stage<D> keys, the union round (54.4 KB at D = 64
// with 8 warps, over the 48 KB of static shared memory).
template <int D, int WARPS> constexpr size_t fwd_smem_bytes()
{
    constexpr size_t LDS = D + 8;
    return 16 * WARPS * LDS * 2 + 2 * (2 * 16 * Stage<D>::value * LDS * 2) + sizeof(Union);
}
} // namespace nsa_sw

// mf-budget: regs<=232 smem<=0 spill=0  (sm_90 measured: regs 168/168/225/218 at D = 16/32/64/128 with WARPS = 4, 168/168/215/229 with 8, stack 0; dynamic smem fwd_smem_bytes: 15.4/25.4/45.4/51.4 KB (4 warps), 18.4/30.4/54.4/68.4 KB (8 warps); 64-key stages (32 at D = 128: 188 registers with 16); min 2 CTAs of 4 warps or 1 of 8 per SM: without the hint ptxas capped some at 168 and spilled)
template <int D, int WARPS>
__global__ void __launch_bounds__(32 * WARPS, WARPS == nsa_sw::kWarps ? 2 : 1)
    nsa_mma_fwd_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
                       const __nv_bfloat16 *__restrict__ v, const __nv_bfloat16 *__restrict__ g_slc,
                       const __nv_bfloat16 *__restrict__ g_win, const int32_t *__restrict__ sel,
                       float *__restrict__ out, float *__restrict__ lse, NsaShape sh, size_t QT, size_t nblk,
                       size_t total)
{
    using namespace nsa_sw;
    using nsa_mma::Acc;
    using nsa_mma::acc_init;
    constexpr int LDS = D + 8, NT = Stage<D>::value, ROWS = 16 * WARPS, THREADS = 32 * WARPS;
    extern __shared__ __align__(16) unsigned char nsa_fwd_smem[]; // fwd_smem_bytes<D, WARPS>()
    __nv_bfloat16 *Qs = reinterpret_cast<__nv_bfloat16 *>(nsa_fwd_smem);
    auto Kt = reinterpret_cast<__nv_bfloat16(*)[16 * NT * LDS]>(Qs + ROWS * LDS); // [2] stages
    auto Vt = Kt + 2;
    Union &un = *reinterpret_cast<Union *>(Vt + 2);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g8 = lane >> 2;
    const float scale_log2 = sh.scale * nsa_mma::kLog2e;
    const size_t kstride = sh.Hk * D;
    const __nv_bfloat16 *Qw = Qs + warp * 16 * LDS;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const Blk bk = blk_of(sh, item, QT, nblk, warp, g8);
        const size_t b = bk.b, g = bk.g;
        __syncthreads(); // the previous item's tiles are consumed
        for (int c = tid; c < ROWS * (D / 8); c += THREADS) {
            const int r = c / (D / 8), col = (c % (D / 8)) * 8;
            const bool in = (size_t)r < bk.nrows;
            const size_t gr =
                in ? (b * sh.S + bk.t0 + (size_t)r / sh.G) * sh.Hq + g * sh.G + (size_t)r % sh.G : 0;
            cp_async16(Qs + r * LDS + col, q + gr * D + (size_t)col, in ? 16u : 0u);
        }
        cp_async_wait_all(); // published by the merge round's barriers below
        const __nv_bfloat16 *kg = k + (b * sh.S * sh.Hk + g) * D, *vg = v + (b * sh.S * sh.Hk + g) * D;
        Acc<D> acc;
        auto step = [&](const SubTiles &st, const Keys &ks, const __nv_bfloat16 *Ks,
                        const __nv_bfloat16 *Vs) {
            stage_step<D, NT>(acc, Qw, Ks, Vs, st, ks, scale_log2, lane);
        };
        // selected branch: the union of the tokens' selections, kChunk entries per round
        acc_init(acc);
        selected_stream<D, NT, WARPS>(bk, sh, sel, un, Kt, Vt, kg, vg, kstride, warp, lane, step);
        finish_rows<D>(acc, bk.rw, out, lse, g_slc, 1, sh, b, g, lane);
        // sliding window: keys [t0 + 1 - w, tend)
        acc_init(acc);
        window_stream<D, NT, WARPS>(bk, sh, un, Kt, Vt, kg, vg, kstride, step);
        finish_rows<D>(acc, bk.rw, out, lse, g_win, 2, sh, b, g, lane);
    }
}

} // namespace MF_NS
