// NSA bf16 forward, compression branch and block importances on mma.sync
// (nsa_mma_cmp_kernel: each token's top-n selection), with the selection's certificate
// (p_error_bound, selection_threshold) that lists the tokens nsa_recheck_kernel ranks
// again. The compression backward (bwd_mma.cuh) shares namespace nsa_cmp's tiles and pass 1.
#pragma once

#include "mma_common.cuh"

namespace MF_NS {

// ---- bf16 tensor-core path: compression branch and importances on mma.sync ----------
// One CTA of W warps per (b, KV group, block of QT tokens): its 16 W rows are the
// (token, head) pairs t0 + r / G, r % G (QT = min(4 W, 16 W / G) tokens, so every
// token's G heads are in the CTA), warp w owning rows 16w..16w+15 as one m16
// tile. The forward runs W = 8 (128 rows: 21 tokens at G = 6), the backward
// W = 4 (64 rows). The compressed keys are common to all queries: each tile of
// 16 of them is staged once per CTA and feeds all its rows (FlashAttention over
// kc/vc), so 128 rows halve the kc/vc bytes per token; a row's own products
// and sums do not depend on W (tiles past a row's last visible block add p = 0
// exactly), so both CTA sizes give it the same bits.
// Causal at compressed-block granularity: row t sees j iff j*d + l - 1 <= t.
// Precision: in bf16 storage kc and vc are bf16 tensors (the spec's:
// reference/nsa.c step 1, pooled by nsa_pool_kernel into bf16 scratch), and q is
// bf16, so the scores' products are exact and only their fp32 sum rounds (the
// scores, l and lse as accurate as fp32 SIMT ones); the forward rounds P to
// bf16 once for P Vc (o_cmp carries that rounding, as o_slc and o_win do; the
// backward's recomputation of o_cmp keeps P = hi + lo). The importances'
// selection is certified: tokens within the error bound are listed for
// nsa_recheck_kernel.
//   pass 1: online softmax over the visible kc tiles: out = g_cmp o_cmp, lse
//           column 0; the lse (base 2) goes to shared memory for pass 2.
//   pass 2: per tile of kSelTile candidate blocks, the kc tiles overlapping it
//           again: p = 2^(s - lse) per (row, j) to shared memory, then one thread
//           per (token, block) sums its heads and overlapping j (deterministic
//           order), forced blocks +inf, and the tile is merged into each token's
//           running top n with nsa_fwd_kernel's ranking, a warp per token (merge_tile;
//           n <= kCmpMaxSel).
// Rows beyond S and padding rows (r >= QT*G) are masked (no visible key).
namespace nsa_cmp {
constexpr int kSelTile = 64;   // candidate blocks per importance tile
constexpr int kCmpMaxSel = 32; // the running top n per token (larger n: the SIMT kernel)
// Importance columns past a range's last candidate: the blocks iend .. iend + kCarry - 1 that
// compressed blocks before the next range's first (j < iend l' / d) overlap, carried into the
// next range so that its tiles start at iend l' / d (cand_krange) instead of re-scoring the
// last tile; sh.carry of them (1 at the seed's l = 32, d = 16, l' = 64). A
// configuration that needs more (l - d > kCarry l') re-scores as before.
constexpr int kCarry = 4;
constexpr int kFwdWarps = 8, kBwdWarps = 4; // warps per CTA: nsa_mma_cmp_kernel, nsa_mma_cmp_bwd_kernel

// The CTA geometry of W warps: 16 W rows, at most 4 W tokens (G = 1: a quarter
// of the rows real, as with 16 tokens in 64 rows; the forward's per-token
// lists are sized by it).
template <int W> struct Cta {
    static constexpr int kWarps = W, kThreads = 32 * W, kRows = 16 * W, kMaxQT = 4 * W;
};

// Tokens per CTA of W warps: QT = min(4 W, 16 W / G) (the kernels and their
// launchers): 21 at G = 6 for the forward's 128 rows, 10 for the backward's 64.
template <int W> __host__ __device__ inline size_t tokens_per_cta(const NsaShape &sh)
{
    const size_t qt = (size_t)Cta<W>::kRows / sh.G;
    return qt < (size_t)Cta<W>::kMaxQT ? qt : (size_t)Cta<W>::kMaxQT;
}

// The compressed blocks token t sees: j with j*d + l - 1 <= t (at most nc).
__device__ __forceinline__ size_t nvis_of(const NsaShape &sh, size_t t)
{
    if (t + 1 < sh.l) return 0;
    const size_t nv = (t + 1 - sh.l) / sh.d + 1;
    return nv < sh.nc ? nv : sh.nc;
}

// One work item of a CTA (b, KV group g, tokens [t0, tend)), as both kernels
// see it, and this lane's two rows r = 16 warp + g8 + 8 i.
struct Item : nsa_mma::ItemPos { // b, g, t0, tend
    size_t nrows;                // (tend - t0) G real rows of the CTA's
    size_t nk0;                  // compressed blocks any row of the CTA sees
    size_t coff;                 // (b, g)'s first kc/vc element
    size_t rbase;                // row (b, t0, head g G) of q/out; row r of the CTA: row_of
    size_t nv[2];                // visible blocks of this lane's rows
    unsigned wmin;               // the fewest blocks a real row of the warp sees (32-bit clamped)
};
template <int D>
__device__ __forceinline__ Item item_of(const NsaShape &sh, size_t item, size_t QT, size_t nblk, int warp,
                                        int g8)
{
    Item it;
    static_cast<nsa_mma::ItemPos &>(it) = nsa_mma::item_pos(sh, item, QT, nblk);
    it.nrows = (it.tend - it.t0) * sh.G;
    it.nk0 = nvis_of(sh, it.tend - 1);
    it.coff = (it.b * sh.Hk + it.g) * sh.nc * D;
    it.rbase = (it.b * sh.S + it.t0) * sh.Hq + it.g * sh.G;
    // Tiles that end at or before wmin are interior for the warp: every row sees all their keys
    // (padding rows, r >= nrows, zero-filled and never read, count as seeing all; the clamp to 32
    // bits only lowers it).
    unsigned w = UINT_MAX;
    MF_UNROLL
    for (int i = 0; i < 2; ++i) {
        const size_t r = (size_t)(16 * warp + g8 + 8 * i);
        it.nv[i] = r < it.nrows ? nvis_of(sh, it.t0 + r / sh.G) : 0;
        if (r < it.nrows && it.nv[i] < (size_t)w) w = (unsigned)it.nv[i];
    }
    it.wmin = __reduce_min_sync(0xffffffffu, w);
    return it;
}
// The q/out row (b, t0 + r / G, head g G + r % G) of the CTA's row r < nrows
// (the forward computes it after pass 1, so that it is not live there).
__device__ __forceinline__ size_t row_of(const NsaShape &sh, const Item &it, size_t r)
{
    return it.rbase + r / sh.G * sh.Hq + r % sh.G;
}

// cp.async the 16 W rows of a CTA of W warps of x (q) and, when WITH_Y, of y
// (dout) into Xs, Ys [16 W][D + 8]; row r is (b, t0 + r / G, head g G + r % G);
// padding rows zero-filled. (nsa_mma_bwd_kernel stages its 64 rows here too.)
template <int D, bool WITH_Y, int W = kBwdWarps>
__device__ __forceinline__ void stage_rows(__nv_bfloat16 *Xs, const __nv_bfloat16 *x, __nv_bfloat16 *Ys,
                                           const __nv_bfloat16 *y, const NsaShape &sh, const Item &it)
{
    constexpr int LDS = D + 8;
    for (int c = threadIdx.x; c < Cta<W>::kRows * (D / 8); c += Cta<W>::kThreads) {
        const int r = c / (D / 8), col = (c % (D / 8)) * 8;
        const bool in = (size_t)r < it.nrows;
        const size_t gr = in ? row_of(sh, it, (size_t)r) : 0;
        cp_async16(Xs + r * LDS + col, x + gr * D + (size_t)col, in ? 16u : 0u);
        if (WITH_Y) cp_async16(Ys + r * LDS + col, y + gr * D + (size_t)col, in ? 16u : 0u);
    }
}

// One kc/vc tile of 16 compressed keys: bf16 rows (the spec's bf16 kc/vc, as in
// scratch) copied by cp.async straight into the padded [16][D + 8] staging the
// mma calls read, double-buffered: tile x + 1 lands in one buffer while the
// warps multiply tile x from the other.
template <int D> struct Tiles {
    __nv_bfloat16 K[2][16 * (D + 8)]; // kc
    __nv_bfloat16 V[2][16 * (D + 8)]; // vc
};
constexpr size_t kNoTile = ~(size_t)0;

// cp.async rows [k0, k0 + 16) of kc (and of vc when vcg != nullptr) into buffer
// buf by the CTA's 32 W threads; rows at or beyond nk0 are zero-filled.
template <int D, int W>
__device__ __forceinline__ void issue_tile(Tiles<D> &tl, int buf, const __nv_bfloat16 *kcg,
                                           const __nv_bfloat16 *vcg, size_t k0, size_t nk0)
{
    constexpr int LDS = D + 8, kChunks = 16 * D / 8; // 16-byte chunks (8 bf16) per tensor
    constexpr int kT = Cta<W>::kThreads;
    MF_UNROLL
    for (int x = 0; x < (kChunks + kT - 1) / kT; ++x) {
        const int c = (int)threadIdx.x + x * kT;
        if (kChunks % kT != 0 && c >= kChunks) break;
        const int r = c / (D / 8), col = (c % (D / 8)) * 8;
        const bool in = k0 + (size_t)r < nk0;
        const size_t at = in ? (k0 + (size_t)r) * D + (size_t)col : 0;
        cp_async16(tl.K[buf] + r * LDS + col, kcg + at, in ? 16u : 0u);
        if (vcg != nullptr) cp_async16(tl.V[buf] + r * LDS + col, vcg + at, in ? 16u : 0u);
    }
}

// Makes tile k0 (kc, and vc when WITH_V) the current one and returns its buffer:
// it lands in the buffer after `cur` (cp.async issued here unless the previous
// call prefetched it), and tile `next` (kNoTile: none; vc too when next_v) is
// started into the other buffer, to land while the warps multiply tile k0. One
// CTA barrier: it orders the landing before the products and the previous
// tile's products before the cp.async that overwrites its buffer (a tile not
// prefetched is issued into the buffer whose readers the previous call's
// barrier already ordered).
template <int D, int W, bool WITH_V>
__device__ __forceinline__ int stage_tile(Tiles<D> &tl, int &cur, const __nv_bfloat16 *kcg,
                                          const __nv_bfloat16 *vcg, size_t k0, bool prefetched, size_t next,
                                          bool next_v, size_t nk0)
{
    const int b = cur ^ 1;
    if (!prefetched) issue_tile<D, W>(tl, b, kcg, WITH_V ? vcg : nullptr, k0, nk0);
    cp_async_wait_all();
    __syncthreads();
    if (next != kNoTile) issue_tile<D, W>(tl, cur, kcg, next_v ? vcg : nullptr, next, nk0);
    cur = b;
    return b;
}

// s = Q Kc^T for this warp's 16 rows and the 16 keys of buffer buf: kc is bf16
// (the spec's), so every product is exact and s is their fp32 sum.
template <int D>
__device__ __forceinline__ void scores(float s[2][4], const __nv_bfloat16 *Qw, const Tiles<D> &tl, int buf,
                                       int lane)
{
    constexpr int LDS = D + 8;
    MF_UNROLL
    for (int n = 0; n < 2; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    MF_UNROLL
    for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t qa[4], b[4];
        ldsm_x4(qa, Qw + (lane & 15) * LDS + kk * 16 + (lane >> 4) * 8);
        ldsm_x4(b, tl.K[buf] + ((lane >> 4) * 8 + (lane & 7)) * LDS + kk * 16 + ((lane >> 3) & 1) * 8);
        mma_x2(s[0], s[1], qa, b);
    }
}

// ---- the selection's certificate (docs/nsa.md "Precision") ----
// Bound on the relative error of a row's pass-2 p = 2^(x - lse2) (x = scaled
// base-2 score), from a = scale log2(e) ||q||_1 max|kc| (|x| <= a), relative to
// the exact p of the spec's bf16 kc (the reference's, in double):
//   score: q and kc are bf16, so every product is exact in fp32; the tensor
//     cores' accumulation (D/16 chained k16 steps, each adding its exact products
//     with an error of at most kMmaK16StepErr, 20 2^-23, of the magnitudes summed:
//     truncating alignment, mf_mma.cuh) and the scaling's rounding (a 2^-23): dx,
//     for pass 2's scores and (the same instructions) pass 1's;
//   lse2 = m + log2 l: the exact lse of pass 1's scores is within dx of the
//     true one (1-Lipschitz); l's float sums and ex2's (2^-21 relative each)
//     over the T = nv/16 + 2 tiles and their rescales: relative T 14 2^-24,
//     in log2 1.5 T 14 2^-24; log2f and the additions: 2^-21 (|m| + |log2 l| + 2);
//   p: x - lse2 rounded ((a + |lse2|) 2^-23) and ex2 (2^-21 relative).
// nsa_wg_cmp_kernel's pass 1 forms a p's exponent s c - m as one fma of the raw
// score (softmax_p): one rounding of the exact value where the above counts two
// (the scaling's, in dx, and the subtraction's), so the bound covers it; its
// largest term is 2^(s c - round(s c)), within 2^-24 |m| of 1, so l > 1/2 (for
// |m| <= a below 2^23; beyond, dx > 2 makes every selection uncertain anyway).
// ex2 is ex2.approx.ftz (mf_ex2_ftz, also in online_max_step; 2 ulp): a p or a
// rescale factor whose result would be below 2^-126 becomes 0, off by less
// than 2^-125 absolutely. In l (> 1/2, its largest term about 1) that is under
// 128 nv 2^-125 relative, far inside the 1.01 factor; in an importance,
// selection_threshold's 2^-100 covers it.
// delta = 2 dx + ... is the exponent's error (the score's and the lse's, taken
// as independent: a worst case); 2^delta - 1 <= ln2 delta (1 + delta).
// The 1.01 factors cover the bound's own float rounding (a, qn: <= (D + 2) 2^-24).
// KT: the keys per kc tile (nsa_wg_cmp_kernel's 64: a lane adds KT / 4 p's of a row per
// tile, KT / 4 - 4 more additions per term than the 14 2^-24 above assume).
template <int D, int KT = 16>
__device__ __forceinline__ float p_error_bound(float a, float m, float l, size_t nv)
{
    a *= 1.01f;
    const float dx = a * ((float)(D / 16) * kMmaK16StepErr + 0x1p-23f);
    const float lg = log2f(l);
    const float dl = 1.5f * ((float)(nv / 16 + 2) * 14.0f + (float)(KT / 4 - 4)) * 0x1p-24f;
    const float dr = 0x1p-21f * (fabsf(m) + fabsf(lg) + 2.0f) + (a + fabsf(m + lg)) * 0x1p-23f;
    const float delta = 2.0f * dx + dl + dr;
    return 1.01f * (0.6932f * delta * (1.0f + delta) + 0x1p-21f);
}
// A token's selection is certain when its smallest selected non-forced
// importance mn beats its largest dropped one rej by more than both their error
// bounds: each importance sums at most G ((l' + l)/d + 2) p's, each off by at most
// eps (the largest of the token's rows) relative, plus the float sum's rounding
// (that many times 2^-24), relative to the true value (hence 1 / (1 - eps) <=
// 1.34 for eps < 1/4); 2^-100 covers p's that underflowed or were flushed to
// 0 (each < 2^-125; G ((l' + l)/d + 2) of them stay far below it).
__device__ __forceinline__ float selection_threshold(const NsaShape &sh, float eps, float mn, float rej)
{
    const float e = 1.01f * (eps + (float)(sh.G * ((sh.ls + sh.l) / sh.d + 2)) * 0x1p-24f);
    return (e < 0.25f ? 1.34f * e : INFINITY) * (mn + rej) + 0x1p-100f;
}

// Pass 1 of both kernels, the compression branch: online softmax over the
// visible kc tiles and o += P Vc (vc is bf16, exact). The forward (SPLIT =
// false) rounds P to bf16 once as the A fragments of P Vc, as the selected and
// sliding branches, attention_mma and FlashAttention do (each p off by at most
// 2^-8 relative, so o_cmp by at most 2^-8 max|vc|; l sums the fp32 p, so lse,
// pass 2 and the certificate do not see the rounding); the backward's
// recomputation (SPLIT) multiplies Phi Vc + Plo Vc, P = Phi + Plo both bf16
// (~2^-16 relative), so that dg_cmp = dout . o_cmp and Delta keep fp32
// accuracy. o, m (base 2, scaled) and l are per lane row, as attention_mma's.
// Tile x + 1 is in flight during tile x; the last tile prefetches tile 0 for
// the next pass (kc only, or kc and vc when THEN_V). W: the CTA's warps (all of
// them call it: it holds the tiles' barriers).
template <int D, int W, bool THEN_V, bool SPLIT>
__device__ __forceinline__ void branch(float o[D / 8][4], float m[2], float l[2], Tiles<D> &tl, int &cur,
                                       const __nv_bfloat16 *Qw, const __nv_bfloat16 *kcg,
                                       const __nv_bfloat16 *vcg, const Item &it, float scale_log2, int lane)
{
    constexpr int LDS = D + 8;
    const int t4 = lane & 3;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.0f;
    MF_UNROLL
    for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    for (size_t k0 = 0; k0 < it.nk0; k0 += 16) {
        const bool more = k0 + 16 < it.nk0; // else tile 0 of the next pass (vc too iff THEN_V)
        const int buf =
            stage_tile<D, W, true>(tl, cur, kcg, vcg, k0, k0 > 0, more ? k0 + 16 : 0, more || THEN_V, it.nk0);
        float s[2][4];
        scores<D>(s, Qw, tl, buf, lane);
        // scaled scores and nan_max per score, where nsa_wgc::softmax_tile keeps raw scores
        // (online_max_step, softmax_p): that form costs this loop registers, and at its
        // 128-register cap nsa_mma_cmp_bwd_kernel<64> then spills (8 bytes, per item)
        float mx[2] = { -INFINITY, -INFINITY };
        // The forward's interior tiles (every row of the warp sees all 16 keys: Item::wmin) skip
        // the per-score compare and select, as nsa_wgc::softmax_tile; wmin is warp-uniform, so the
        // branch is too. The backward's recomputation (SPLIT) keeps the masked form:
        // nsa_mma_cmp_bwd_kernel<64> is at its 128-register cap.
        if (!SPLIT && k0 + 16 <= (size_t)it.wmin) {
            MF_UNROLL
            for (int x = 0; x < 8; ++x) {
                float &v = s[x >> 2][x & 3];
                v *= scale_log2;
                mx[(x >> 1) & 1] = nan_max(mx[(x >> 1) & 1], v);
            }
        } else {
            MF_UNROLL
            for (int n = 0; n < 2; ++n) MF_UNROLL
            for (int e = 0; e < 4; ++e) {
                const size_t j = k0 + (size_t)(8 * n + 2 * t4 + (e & 1));
                const float x = j < it.nv[e >> 1] ? s[n][e] * scale_log2 : -INFINITY;
                s[n][e] = x;
                mx[e >> 1] = nan_max(mx[e >> 1], x);
            }
        }
        float corr[2], mu[2];
        online_max_step(m, mx, 1.0f, corr, mu); // mx already scaled
        float rs[2] = { 0.0f, 0.0f };
        MF_UNROLL
        for (int n = 0; n < 2; ++n) MF_UNROLL
        for (int e = 0; e < 4; ++e) {
            const float p = mf_ex2_ftz(s[n][e] - mu[e >> 1]); // (the certificate's ex2, above)
            rs[e >> 1] += p;                                  // l: the fp32 p
            s[n][e] = p;
        }
        MF_UNROLL
        for (int r = 0; r < 2; ++r) l[r] = l[r] * corr[r] + quad_sum(rs[r]);
        uint32_t pa[4], pl[4];
        nsa_mma::p_frags<SPLIT>(pa, pl, s[0], s[1]); // P in bf16 (SPLIT: hi + lo)
        MF_UNROLL
        for (int np = 0; np < D / 16; ++np) {
            MF_UNROLL
            for (int h = 0; h < 2; ++h) {
                o[2 * np + h][0] *= corr[0];
                o[2 * np + h][1] *= corr[0];
                o[2 * np + h][2] *= corr[1];
                o[2 * np + h][3] *= corr[1];
            }
            const int voff = (((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + np * 16 + (lane >> 4) * 8;
            uint32_t bv[4];
            ldsm_x4_t(bv, tl.V[buf] + voff);
            if (SPLIT) mma_x2(o[2 * np], o[2 * np + 1], pl, bv);
            mma_x2(o[2 * np], o[2 * np + 1], pa, bv);
        }
    }
}

// Dynamic shared memory of nsa_mma_cmp_kernel<D, W> (one extern buffer; with
// 128 rows it is past the 48 KB of static shared memory): the rows' Q, the
// kc/vc tiles, pass 2's p tile, the per-token importances and top-n lists
// (kMaxQT tokens), each row's certificate bound and lse.
template <int D, int W> struct FwdSmem {
    static constexpr int kRows = Cta<W>::kRows, kMaxQT = Cta<W>::kMaxQT;
    alignas(16) __nv_bfloat16 Qs[kRows * (D + 8)];
    alignas(16) Tiles<D> tl;
    float Ps[kRows][17];                  // pass 2: p of one kc tile
    float imp[kMaxQT][kSelTile + kCarry]; // a range's candidates, then the carried blocks
    float top_v[kMaxQT][kCmpMaxSel];
    int list[kMaxQT][kCmpMaxSel];
    int n_list[kMaxQT];
    float row_eps[kRows];  // the certificate: relative error bound of each row's p (0: no key)
    float max_rej[kMaxQT]; // the largest importance not selected (evicted or rejected)
    float row_lse2[kRows]; // pass 1's lse of each row, base 2 (+inf: no visible key)
};

// The end of the blocks a range [i0, iend) accumulates: iend, or with carried blocks up to
// sh.carry past it (below cand_max; carried when at most kCarry) when the range is full.
__device__ __forceinline__ size_t range_cap(const NsaShape &sh, size_t iend, size_t cand_max)
{
    if (sh.carry > (size_t)kCarry) return iend;
    return iend + sh.carry < cand_max ? iend + sh.carry : cand_max;
}

// Pass 2 of the compression kernels (nsa_mma_cmp_kernel: KT = 16 keys per kc tile,
// nsa_wg_cmp_kernel: 64), shared by both; SM is the kernel's shared-memory struct (Ps, imp,
// top_v, list, n_list, max_rej, row_eps), NTHREADS its block size. Every thread calls
// each (the barriers inside).
//
// After Ps holds p of the kc tile [k0, k0 + KT): the selection blocks in [i0, icap) that
// the tile's compressed blocks overlap (tokens [k0 d, (k0 + KT - 1) d + l)) gain, per token,
// the p of those blocks summed over the group's heads, in a fixed order; with carried blocks
// (range_cap) also the blocks past iend that the tile overlaps, below cand_max.
template <int KT, int NTHREADS, typename SM>
__device__ __forceinline__ void add_tile_importances(SM &sm, const NsaShape &sh, size_t k0, size_t i0,
                                                     size_t iend, size_t cand_max, size_t ntok, int tid)
{
    auto &imp = sm.imp;
    const auto &Ps = sm.Ps;
    const size_t icap = range_cap(sh, iend, cand_max);
    size_t ib0 = k0 * sh.d / sh.ls, ib1 = ((k0 + KT - 1) * sh.d + sh.l - 1) / sh.ls + 1;
    if (ib0 < i0) ib0 = i0;
    if (ib1 > icap) ib1 = icap;
    const size_t nbt = ib1 > ib0 ? ib1 - ib0 : 0;
    for (size_t e = tid; e < ntok * nbt; e += NTHREADS) {
        const size_t tok = e / nbt, i = ib0 + e % nbt;
        const size_t lo2 = i * sh.ls + 1 > sh.l ? i * sh.ls + 1 - sh.l : 0;
        size_t ja = (lo2 + sh.d - 1) / sh.d, jb = ((i + 1) * sh.ls - 1) / sh.d + 1;
        if (ja < k0) ja = k0;
        if (jb > k0 + KT) jb = k0 + KT;
        float acc = imp[tok][i - i0];
        for (size_t hh = 0; hh < sh.G; ++hh)
            for (size_t j = ja; j < jb; ++j) acc += Ps[tok * sh.G + hh][j - k0];
        imp[tok][i - i0] = acc;
    }
}

// Pass 2's importance sums at the seed's ratios, l' = 4 d and l = 2 d (l = 32, d = 16, l' = 64;
// docs/nsa.md "The compression kernel on a GPU"): compressed block j (tokens [j d, j d + 2 d))
// overlaps selection blocks j / 4 and, when j % 4 = 3, j / 4 + 1, so block i sums the p of
// blocks 4 i - 1 .. 4 i + 3. Instead of the tile's p (KT per row) going to shared memory and
// each (token, block) summing G 5 of them there (add_tile_importances: a chain of 30 shared
// loads at G = 6), each row's p are summed per block in registers and shuffles, and the
// (token, block) sums G per-row block sums (add_block_sums). Carried blocks: sh.carry = 1.
// Tiles start at multiples of 4 compressed blocks (cand_krange: jlo = 4 i0, steps of KT).
__host__ __device__ inline bool block_sums_fit(const NsaShape &sh)
{
    return sh.ls == 4 * sh.d && sh.l == 2 * sh.d;
}
// p holds this lane's KT / 2 p's in the accumulator layout (element 4 f + e: row r0 + 8 (e >> 1),
// key k0 + 8 f + 2 t4 + (e & 1), masked keys 0 or, in nsa_wg_cmp_kernel's pass2_block_sums,
// their p, which only unread importances receive; k0 a multiple of 4: cand_krange). For rows r0 and
// r0 + 8, Ps[r][b] (b <= KT / 4) becomes the sum of the row's p over the tile's keys that overlap
// block k0 / 4 + b: keys 4 b - 1 .. 4 b + 3 of the tile (column KT / 4: key KT - 1 alone, whose
// other block the next tile's column 0 holds). Per 8 keys (f) the quad holds two blocks: lanes
// t4 = 0, 1 keys 8 f .. 8 f + 3 (block 2 f), lanes 2, 3 keys 8 f + 4 .. 8 f + 7 (block 2 f + 1);
// key 8 f + 3 (lane 1) belongs to block 2 f + 1 too, key 8 f + 7 (lane 3) to block 2 f + 2. So
//   block 2 f     = (p[8f] + p[8f+1]) + (p[8f+2] + p[8f+3]) + p[8f-1]    (lane 0 writes it),
//   block 2 f + 1 = (p[8f+4] + p[8f+5]) + (p[8f+6] + p[8f+7]) + p[8f+3]  (lane 2),
// p[-1] = 0 (the previous tile's column KT / 4). Two shuffles per row and 8 keys; every lane
// of the warp calls it. c0: the first column (nsa_wg_cmp_kernel alternates two sets of
// KT / 4 + 1 columns, so that a tile's sums are written while the previous tile's are read).
template <int KT, typename PS>
__device__ __forceinline__ void store_block_sums(PS &Ps, const float (&p)[KT / 2], int r0, int lane,
                                                 int c0 = 0)
{
    constexpr unsigned kAll = 0xffffffffu;
    const int t4 = lane & 3, from = (lane & ~3) | ((t4 + 3) & 3); // the quad's previous lane
    MF_UNROLL
    for (int h = 0; h < 2; ++h) {
        float prev = 0.0f; // lane 0: p of key 8 f - 1 (lane 3's last)
        MF_UNROLL
        for (int f = 0; f < KT / 8; ++f) {
            const float p0 = p[4 * f + 2 * h], p1 = p[4 * f + 2 * h + 1];
            const float pair = p0 + p1;
            const float half = pair + __shfl_xor_sync(kAll, pair, 1);
            // lane 2: p of key 8 f + 3 (lane 1's); lane 0: of key 8 f + 7 (lane 3's, block 2 f + 2);
            // lanes 1 and 3 receive p's they do not use
            const float edge = __shfl_sync(kAll, p1, from);
            if (t4 == 0) Ps[r0 + 8 * h][c0 + 2 * f] = half + prev;
            if (t4 == 2) Ps[r0 + 8 * h][c0 + 2 * f + 1] = half + edge;
            prev = edge;
        }
        if (t4 == 0) Ps[r0 + 8 * h][c0 + KT / 4] = prev;
    }
}
// After store_block_sums' barrier: the blocks k0 / 4 .. k0 / 4 + KT / 4 in [i0, icap) (range_cap;
// k0 / 4 >= i0: cand_krange) gain, per token, their G rows' sums (Ps columns from pc0), heads in
// order.
template <int KT, int NTHREADS, typename SM>
__device__ __forceinline__ void add_block_sums(SM &sm, const NsaShape &sh, size_t k0, size_t i0, size_t iend,
                                               size_t cand_max, size_t ntok, int tid, int pc0 = 0)
{
    auto &imp = sm.imp;
    const auto &Ps = sm.Ps;
    const size_t icap = range_cap(sh, iend, cand_max), ib0 = k0 / 4;
    const int nb = ib0 + KT / 4 < icap ? KT / 4 + 1 : icap > ib0 ? (int)(icap - ib0) : 0;
    const int G = (int)sh.G, c0 = (int)(ib0 - i0), n = (int)ntok * nb;
    for (int e = tid; e < n; e += NTHREADS) {
        const int tok = e / nb, b = e % nb;
        float acc = imp[tok][c0 + b];
        for (int hh = 0; hh < G; ++hh) acc += Ps[tok * G + hh][pc0 + b];
        imp[tok][c0 + b] = acc;
    }
}

// The warp's largest dropped value (pass 2's merge, for max_rej): r is each lane's, -inf
// (none), a value >= +0 (importances are sums of p = 2^x >= +0 from 0.0f: no -0) or NaN.
// NaN if any lane's is (that lane's NaN), else the maximum; values >= +0 order as their bits,
// so one __reduce_max_sync does it.
__device__ __forceinline__ float warp_dropped_max(float r)
{
    constexpr unsigned kAll = 0xffffffffu;
    const unsigned nan = __ballot_sync(kAll, r != r);
    if (nan != 0u) return __shfl_sync(kAll, r, __ffs((int)nan) - 1);
    if (!__any_sync(kAll, r != -INFINITY)) return -INFINITY;
    return __uint_as_float(__reduce_max_sync(kAll, r != -INFINITY ? __float_as_uint(r) : 0u));
}

// The tile of candidates [i0, iend) merged into each token's running top n (tokens t0 ..
// t0 + ntok - 1), with the results of the serial merge it replaces (nsa_fwd_kernel's
// ranking): the union of the token's list (n_list entries, list order) and the tile's
// visible candidates (block order), forced blocks +inf; an entry is kept iff fewer than n
// entries beat it (y beats x: y > x, or y == x and y earlier in the union, i.e. the lower
// block on a tie); the kept entries are compacted in union order, at most n of them; every
// other value except +inf is folded into max_rej.
//
// One CTA barrier (imp complete); then warp w merges tokens w, w + NTHREADS / 32, ... with no
// further CTA barrier: lane x holds list entry x and candidates x and x + 32 in registers.
//   threshold: if the list is full (n entries, no NaN), thr is its minimum, else -inf. A
//     candidate below thr is beaten by all n list entries, so the whole union's ranking
//     rejects it; and it beats no entry that is not below thr (y < thr <= z, or z NaN: neither
//     y > z nor y == z). So every other entry's beat count over the reduced union (the list,
//     then the candidates not below thr, in union order) is its count over the whole union,
//     ties broken by the same union order: the same entries are kept, in the same order. The
//     candidates below thr go to max_rej only (finite: below thr <= +inf, and not NaN).
//   no candidate left (the common case once a list is full): the list stays as it is (each of
//     its nl <= n entries is beaten by at most nl - 1), only max_rej changes.
//   ranking: the reduced union's entries broadcast one by one (shuffles: the list entries,
//     then the kept candidates' ballots bit by bit), each lane counting the beats of its three;
//     the serial count stopped at n, this one counts on (keep = beat < n either way).
//   compaction: the kept entries' places by ballot and popc in union order; a kept entry at
//     place n or later (possible only with NaN entries, which nothing beats) is dropped, as the
//     serial code's o2 < n guard drops it. The list is read into registers and the warp meets
//     (__syncwarp) before any lane overwrites it in place.
//   max_rej: the same maximum; when it is NaN, its bits may be another NaN's than the serial
//     fold's first (the certificate reads only rej != rej).
// n_list, top_v, list and max_rej are published by the caller's next CTA barrier (the next
// range's first line, or certify_and_store's first).
// Work per token and range (projected, not measured): 3 shared loads per lane and about 6 warp
// votes/reductions; with a candidate left, one shuffle and about 15 instructions per reduced-union
// entry (the list's n plus the candidates not below its minimum: at most kCmpMaxSel + kSelTile).
template <int NTHREADS, typename SM>
__device__ __forceinline__ void merge_tile(SM &sm, const NsaShape &sh, size_t t0, size_t i0, size_t iend,
                                           size_t ntok, int tid)
{
    static_assert(NTHREADS % 32 == 0, "whole warps");
    static_assert(kCmpMaxSel <= 32 && kSelTile == 64, "a lane holds one list entry and two candidates");
    constexpr unsigned kAll = 0xffffffffu;
    const auto &imp = sm.imp;
    auto &top_v = sm.top_v;
    auto &list = sm.list;
    auto &n_list = sm.n_list;
    auto &max_rej = sm.max_rej;
    const int n = (int)sh.n;
    __syncthreads();
    MF_NO_UNROLL
    for (size_t e = (size_t)tid; e < ntok * 32; e += NTHREADS) { // warp w: tokens w, w + NTHREADS / 32, ...
        const size_t tok = e / 32;
        const int lane = (int)(e % 32);
        const size_t t = t0 + tok, last = t / sh.ls;
        const int nt = last + 1 > i0 ? (int)(last + 1 - i0 < iend - i0 ? last + 1 - i0 : iend - i0) : 0;
        const int nl = n_list[tok];
        // slot 0: list entry `lane` (union position lane); slots 1, 2: candidates c = lane, lane + 32
        // (union position nl + c)
        float v[3];
        v[0] = lane < nl ? top_v[tok][lane] : 0.0f;
        MF_UNROLL
        for (int s = 1; s < 3; ++s) {
            const int c = lane + 32 * (s - 1);
            const size_t i = i0 + (size_t)c;
            v[s] = c < nt ? (i == 0 || i == last || i + 1 == last ? INFINITY : imp[tok][c]) : 0.0f;
        }
        // the threshold (values >= +0 and +inf order as their bits; a NaN list: -inf)
        float thr = -INFINITY;
        if (nl == n && !__any_sync(kAll, lane < nl && v[0] != v[0]))
            thr = __uint_as_float(__reduce_min_sync(kAll, lane < nl ? __float_as_uint(v[0]) : 0x7f800000u));
        bool in[3];
        in[0] = lane < nl;
        float rej = -INFINITY; // this lane's dropped values' maximum
        MF_UNROLL
        for (int s = 1; s < 3; ++s) {
            const bool vis = lane + 32 * (s - 1) < nt;
            in[s] = vis && !(v[s] < thr);
            if (vis && v[s] < thr) rej = fmaxf(rej, v[s]);
        }
        const unsigned m1 = __ballot_sync(kAll, in[1]), m2 = __ballot_sync(kAll, in[2]);
        if ((m1 | m2) != 0u) {
            // rank the reduced union; u: union positions (their order is the union's)
            const int u[3] = { lane, nl + lane, nl + 32 + lane };
            int beat[3] = { 0, 0, 0 };
            const auto count = [&](float y, int u2) {
                MF_UNROLL
                for (int s = 0; s < 3; ++s) beat[s] += (y > v[s] || (y == v[s] && u2 < u[s])) ? 1 : 0;
            };
            MF_NO_UNROLL
            for (int u2 = 0; u2 < nl; ++u2) count(__shfl_sync(kAll, v[0], u2), u2);
            MF_NO_UNROLL
            for (unsigned m = m1; m != 0u; m &= m - 1u) {
                const int src = __ffs((int)m) - 1;
                count(__shfl_sync(kAll, v[1], src), nl + src);
            }
            MF_NO_UNROLL
            for (unsigned m = m2; m != 0u; m &= m - 1u) {
                const int src = __ffs((int)m) - 1;
                count(__shfl_sync(kAll, v[2], src), nl + 32 + src);
            }
            // compaction in union order
            unsigned kb[3];
            MF_UNROLL
            for (int s = 0; s < 3; ++s) kb[s] = __ballot_sync(kAll, in[s] && beat[s] < n);
            const int id0 = lane < nl ? list[tok][lane] : 0;
            __syncwarp(); // the list read (top_v, list, n_list): lanes overwrite it below
            int base = 0;
            MF_UNROLL
            for (int s = 0; s < 3; ++s) {
                const int o = base + __popc(kb[s] << (31 - lane) << 1); // kept entries on the lanes before
                if (in[s] && (kb[s] >> lane & 1u) && o < n) {
                    top_v[tok][o] = v[s];
                    list[tok][o] = s == 0 ? id0 : (int)(i0 + (size_t)(lane + 32 * (s - 1)));
                } else if (in[s] && v[s] != INFINITY) { // a forced block loses only to forced ones (exact)
                    rej = nan_max(rej, v[s]);
                }
                base += __popc(kb[s]);
            }
            if (lane == 0) n_list[tok] = base < n ? base : n;
        }
        rej = warp_dropped_max(rej);
        if (lane == 0) max_rej[tok] = nan_max(max_rej[tok], rej); // read and written by lane 0 alone
    }
}

// After the last tile: each token's selection certified or listed for nsa_recheck_kernel,
// and its sel row written (rbase: the row of the item's first (token, head)).
template <int NTHREADS, typename SM>
__device__ __forceinline__ void
certify_and_store(SM &sm, const NsaShape &sh, size_t rbase, size_t t0, size_t ntok, unsigned long long *flags,
                  unsigned long long *nflag, int flag_all, int32_t *sel, int tid)
{
    const auto &top_v = sm.top_v;
    const auto &list = sm.list;
    const auto &n_list = sm.n_list;
    const auto &max_rej = sm.max_rej;
    const auto &row_eps = sm.row_eps;
    __syncthreads();
    if (flags != nullptr && (size_t)tid < ntok) { // certify each token's selection, or list it
        const size_t tok = (size_t)tid;
        float eps = 0.0f, mn = INFINITY;
        bool bad = false;
        for (size_t hh = 0; hh < sh.G; ++hh) eps = nan_max(row_eps[tok * sh.G + hh], eps);
        for (int x = 0; x < n_list[tok]; ++x) {
            const float v = top_v[tok][x];
            if (v != v)
                bad = true;
            else if (v != INFINITY)
                mn = fminf(mn, v);
        }
        const float rej = max_rej[tok];
        if (flag_all || bad || rej != rej ||
            (nvis_of(sh, t0 + tok) > 0 && mn != INFINITY && rej != -INFINITY &&
             !(mn - rej > selection_threshold(sh, eps, mn, rej)))) {
            const unsigned long long at = atomicAdd(nflag, 1ull);
            flags[at] = (unsigned long long)(rbase / sh.G + tok * sh.Hk); // (b S + t) Hk + g
        }
    }
    // (MF_NSA_RECHECK=all: nsa_recheck_kernel writes every row, and only it)
    for (size_t e = tid; !flag_all && e < ntok * sh.n; e += NTHREADS) {
        const size_t tok = e / sh.n, x = e % sh.n;
        sel[(rbase / sh.G + tok * sh.Hk) * sh.n + x] = x < (size_t)n_list[tok] ? list[tok][x] : -1;
    }
}
// Pass 1's epilogue of the compression kernels (o: the thread's accumulators in the m16n8
// fragment order, o[4 n + e] for 8-column block n; m, l: base-2 max and sum of its 2 rows):
// pass 2's lse per row in shared memory (p = 0 without a visible key: not held in registers
// there), g_cmp o / l into out, the natural-log lse into column 0 of lse.
template <int D, typename It>
__device__ __forceinline__ void store_rows(const float (&o)[D / 2], const float (&m)[2], const float (&l)[2],
                                           const It &it, const NsaShape &sh, const __nv_bfloat16 *g_cmp,
                                           float *out, float *lse, float *row_lse2, int warp, int g8, int t4)
{
    MF_UNROLL
    for (int i = 0; i < 2; ++i) {
        const bool any = it.nv[i] > 0;
        if (t4 == 0) row_lse2[16 * warp + g8 + 8 * i] = any ? m[i] + log2f(l[i]) : INFINITY;
        const size_t r = (size_t)(16 * warp + g8 + 8 * i);
        if (r >= it.nrows) continue;
        const size_t grow = row_of(sh, it, r);
        const float w = any ? __bfloat162float(g_cmp[grow]) / l[i] : 0.0f;
        MF_UNROLL
        for (int n = 0; n < D / 8; ++n) {
            float *op = out + grow * D + (size_t)(n * 8 + 2 * t4);
            op[0] = w * o[4 * n + 2 * i];
            op[1] = w * o[4 * n + 2 * i + 1];
        }
        if (lse != nullptr && t4 == 0) lse[grow * 3] = any ? m[i] * nsa_mma::kLn2 + logf(l[i]) : -INFINITY;
    }
}

// Pass 2's compressed blocks j overlapping candidates [i0, i0 + kSelTile) (j d + l > i0 l'
// and j d < iend l'), below nk0. With carried blocks (sh.carry <= kCarry) the range
// starts at j = i0 l' / d (KT-aligned: i0 is a multiple of kSelTile and l' of d): the earlier
// j that overlap block i0 .. were scored in the previous range, whose tiles end exactly there,
// and added to its carry columns. Otherwise from the KT-aligned tile holding the first
// overlapping j (that tile scored in both ranges).
template <int KT>
__device__ __forceinline__ void cand_krange(const NsaShape &sh, size_t i0, size_t cand_max, size_t nk0,
                                            size_t &jlo, size_t &jhi)
{
    static_assert(kSelTile % KT == 0, "a range's first tile must be KT-aligned");
    const size_t iend = i0 + kSelTile < cand_max ? i0 + kSelTile : cand_max;
    if (sh.carry <= (size_t)kCarry) {
        jlo = i0 * (sh.ls / sh.d);
    } else {
        const size_t lo_num = i0 * sh.ls + 1 > sh.l ? i0 * sh.ls + 1 - sh.l : 0;
        jlo = (lo_num + sh.d - 1) / sh.d / KT * KT;
    }
    jhi = (iend * sh.ls - 1) / sh.d + 1;
    if (jhi > nk0) jhi = nk0;
}

// A range's importance columns at its start: column c < kCarry takes the carry the previous
// range left in column kSelTile + c (0 before the first: clear_carry), the others 0; the
// carry columns are cleared by the thread that read them.
template <int NTHREADS, int MAXQT, typename SM> __device__ __forceinline__ void start_range(SM &sm, int tid)
{
    auto &imp = sm.imp;
    // rolled: unrolled, nsa_mma_cmp_kernel<32, 8> spilled 24 bytes at its 128 registers
    MF_NO_UNROLL
    for (int e = tid; e < MAXQT * kSelTile; e += NTHREADS) {
        const int tok = e / kSelTile, c = e % kSelTile;
        float v = 0.0f;
        if (c < kCarry) {
            v = imp[tok][kSelTile + c];
            imp[tok][kSelTile + c] = 0.0f;
        }
        imp[tok][c] = v;
    }
}
template <int NTHREADS, int MAXQT, typename SM> __device__ __forceinline__ void clear_carry(SM &sm, int tid)
{
    for (int e = tid; e < MAXQT * kCarry; e += NTHREADS) sm.imp[e / kCarry][kSelTile + e % kCarry] = 0.0f;
}
} // namespace nsa_cmp

// mf-budget: regs<=128 smem<=0 spill=0  (sm_90 measured: regs 122/120/128 at D = 16/32/64 with W = 8 warps (128 rows), P V with P rounded to bf16 once, pass 2's top-n merge a warp per token, carried importances and, at the seed's ratios, importances summed per block in registers (store_block_sums), stack 0; sm_80: 127/128/128, no spill (with P hi + lo D = 64 spilled 56 bytes; a per-warp token loop instead of merge_tile's thread-strided one spilled 8 bytes at D = 64); dynamic smem sizeof(FwdSmem<D, 8>) = 36096/42240/54528 bytes (512 of them the carried importance columns); min 2 CTAs of 256 threads per SM (16 warps), the 128-register cap of the 64-row kernel's 4 CTAs; reading kmax after pass 1 (b, g live through it) spilled 8 bytes at D = 64; 64 rows, static smem: 128/128/128, 20864/24960/33152 bytes; pass 2 reads its lse from shared memory: kept in registers, D = 64 spilled 8 bytes at 168)
template <int D, int W>
__global__ void __launch_bounds__(32 * W, 16 / W)
    nsa_mma_cmp_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ g_cmp,
                       const __nv_bfloat16 *__restrict__ kc, const __nv_bfloat16 *__restrict__ vc,
                       float *__restrict__ out, float *__restrict__ lse, int32_t *__restrict__ sel,
                       const float *__restrict__ kmax, unsigned long long *__restrict__ flags,
                       unsigned long long *__restrict__ nflag, int flag_all, NsaShape sh, size_t QT,
                       size_t nblk, size_t total)
{
    using namespace nsa_cmp;
    using nsa_mma::kLn2;
    using nsa_mma::kLog2e;
    constexpr int LDS = D + 8, kThreadsC = Cta<W>::kThreads, kMaxQT = Cta<W>::kMaxQT;
    extern __shared__ __align__(16) unsigned char nsa_cmp_smem[]; // sizeof(FwdSmem<D, W>)
    FwdSmem<D, W> &sm = *reinterpret_cast<FwdSmem<D, W> *>(nsa_cmp_smem);
    auto &Qs = sm.Qs;
    auto &tl = sm.tl;
    auto &Ps = sm.Ps;
    auto &n_list = sm.n_list;
    auto &row_eps = sm.row_eps;
    auto &max_rej = sm.max_rej;
    auto &row_lse2 = sm.row_lse2;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g8 = lane >> 2, t4 = lane & 3;
    const float scale_log2 = sh.scale * kLog2e;
    const __nv_bfloat16 *Qw = Qs + warp * 16 * LDS;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const Item it = item_of<D>(sh, item, QT, nblk, warp, g8);
        const size_t t0 = it.t0, nk0 = it.nk0;
        const __nv_bfloat16 *kcg = kc + it.coff, *vcg = vc + it.coff;
        __syncthreads(); // the previous item's tiles are consumed
        stage_rows<D, false, W>(Qs, q, nullptr, nullptr, sh, it);
        // the certificate's max |kc| of (b, g), read here: b and g are not kept live through pass 1
        const float km = kmax != nullptr ? kmax[it.b * sh.Hk + it.g] : 0.0f; // null: no compressed block
        cp_async_wait_all();
        // pass 1: the compression branch
        float o[D / 8][4], m[2], l[2];
        int cur = 1; // the tile buffer last used (stage_tile)
        branch<D, W, false, false>(o, m, l, tl, cur, Qw, kcg, vcg, it, scale_log2,
                                   lane); // then pass 2's tile 0 (kc)
        store_rows<D>(reinterpret_cast<const float(&)[D / 2]>(o), m, l, it, sh, g_cmp, out, lse, row_lse2,
                      warp, g8, t4);
        { // the certificate's error bound of each row's pass-2 p (docs/nsa.md "Precision")
            MF_UNROLL
            for (int i = 0; i < 2; ++i) {
                float qn = 0.0f; // ||q||_1 of the row, the quad's four lanes a quarter each
                for (int c = t4; c < D; c += 4) qn += fabsf(__bfloat162float(Qw[(g8 + 8 * i) * LDS + c]));
                qn = quad_sum(qn);
                if (t4 == 0)
                    row_eps[16 * warp + g8 + 8 * i] =
                        it.nv[i] > 0 ? p_error_bound<D>(qn * km * scale_log2, m[i], l[i], it.nv[i]) : 0.0f;
            }
        }
        // pass 2: importances and the running top n of each token
        const size_t tend = t0 + QT < sh.S ? t0 + QT : sh.S, ntok = tend - t0,
                     cand_max = (tend - 1) / sh.ls + 1;
        const bool sums = block_sums_fit(sh); // the seed's ratios: per-block sums in registers
        // the compressed blocks j overlapping candidates [i0, i0 + kSelTile): j*d + l > i0*l' and
        // j*d < iend*l', from a tile-aligned jlo, below nk0
        const auto krange = [&](size_t i0, size_t &jlo, size_t &jhi) {
            cand_krange<16>(sh, i0, cand_max, nk0, jlo, jhi);
        };
        if ((size_t)tid < ntok) n_list[tid] = 0, max_rej[tid] = -INFINITY;
        clear_carry<kThreadsC, kMaxQT>(sm, tid);
        for (size_t i0 = 0; i0 < cand_max; i0 += kSelTile) {
            const size_t iend = i0 + kSelTile < cand_max ? i0 + kSelTile : cand_max;
            __syncthreads(); // the previous tile merged (n_list published), Kt consumed
            start_range<kThreadsC, kMaxQT>(sm, tid);
            size_t jlo, jhi;
            krange(i0, jlo, jhi);
            for (size_t k0 = jlo; k0 < jhi; k0 += 16) {
                // prefetched by the previous call within the range, and range 0's first tile by pass 1's
                // last (a later range's first is loaded here: the next range is not known in registers);
                // its barrier: Ps consumed
                const int buf = stage_tile<D, W, false>(tl, cur, kcg, nullptr, k0, k0 > jlo || i0 == 0,
                                                        k0 + 16 < jhi ? k0 + 16 : kNoTile, false, nk0);
                float s[2][4];
                scores<D>(s, Qw, tl, buf, lane);
                float(&p)[8] = reinterpret_cast<float(&)[8]>(s); // element 4 n + e
                if (sums) {
                    // No mask, as nsa_wg_cmp_kernel's pass2_block_sums: at the seed's ratios a key a row
                    // does not see overlaps only blocks whose importance is never read (there).
                    MF_UNROLL
                    for (int x = 0; x < 8; ++x)
                        p[x] = mf_ex2_ftz(p[x] * scale_log2 - row_lse2[16 * warp + g8 + 8 * ((x >> 1) & 1)]);
                    store_block_sums<16>(Ps, p, 16 * warp + g8, lane);
                } else {
                    MF_UNROLL
                    for (int x = 0; x < 8; ++x) {
                        const int e = x & 3, jj = 8 * (x >> 2) + 2 * t4 + (e & 1),
                                  r = 16 * warp + g8 + 8 * (e >> 1);
                        Ps[r][jj] = k0 + (size_t)jj < it.nv[e >> 1]
                                        ? mf_ex2_ftz(p[x] * scale_log2 - row_lse2[r])
                                        : 0.0f;
                    }
                }
                __syncthreads();
                if (sums)
                    add_block_sums<16, kThreadsC>(sm, sh, k0, i0, iend, cand_max, ntok, tid);
                else
                    add_tile_importances<16, kThreadsC>(sm, sh, k0, i0, iend, cand_max, ntok, tid);
            }
            merge_tile<kThreadsC>(sm, sh, t0, i0, iend, ntok, tid);
        }
        certify_and_store<kThreadsC>(sm, sh, it.rbase, t0, ntok, flags, nflag, flag_all, sel, tid);
    }
}

} // namespace MF_NS
