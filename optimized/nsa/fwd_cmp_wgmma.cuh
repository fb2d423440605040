// NSA bf16 forward on sm_90a, compression branch and block importances on wgmma
// (nsa_wg_cmp_kernel): nsa_mma_cmp_kernel's CTAs as two ping-pong warpgroups, with the
// same certificate (fwd_cmp_mma.cuh).
#pragma once

#include "fwd_cmp_mma.cuh"

namespace MF_NS {

// ---- bf16 on sm_90a: the compression branch and importances on warpgroup MMA ----------
// nsa_wg_cmp_kernel<D> (D = 16, 32, 64): nsa_mma_cmp_kernel<D, 8> with its products on
// wgmma (mf_wgmma.cuh), picked by MF_NSA_MMA_PATH (launch_cmp). The same grid, CTAs (128
// rows: (token, head) pairs t0 + r / G, r % G), outputs (out, lse column 0, sel) and
// certificate (flags, nflag for nsa_recheck_kernel). The 256 threads are two warpgroups:
// warpgroup h owns rows 64 h .. 64 h + 63 and its warp w % 4 rows 16 w .. 16 w + 15, the
// rows warp w owns in nsa_mma_cmp_kernel; the m64nN accumulator is the m16n8 fragment per
// 8 columns, so every per-row step (masks, online softmax, epilogue, certificate, pass 2's
// p) is nsa_mma_cmp_kernel's on the same lanes. kc/vc tiles of kKT = 64 compressed keys
// (16 there) by cp.async: pass 1 on FlashAttention-3's schedule (branch: four buffers,
// warpgroup 0 the producer, the two warpgroups ping-pong through named barriers, no CTA
// barrier per tile), pass 2 double-buffered as there with the two warpgroups' scores
// staggered (scores<D, true>), or at the seed's ratios pipelined (S of tile x + 1 under tile
// x's importance additions, pass2_block_sums); per tile and warpgroup:
//   S = Q Kc^T: D / 16 wgmma.m64n64k16 (A = the warpgroup's Q rows, B = the kc tile, both
//     from shared memory, K-major), then the masked online-softmax step on the
//     accumulators (32 per thread: 16 scores of each of the thread's 2 rows);
//   O += P Vc: P rounded to bf16 once as nsa_mma_cmp_kernel, per 16 keys its A fragment
//     from registers (wgmma.m64nDk16, B = the vc tile, MN-major): 4 wgmma;
//   pass 2: the same D / 16 wgmma per tile for the scores, p = 2^(x - lse2) to shared
//     memory (at the seed's ratios their per-block sums, store_block_sums), the
//     importances and the top-n merge as nsa_mma_cmp_kernel.
// Operand layout: the no-swizzle (interleaved) canonical layout for every D: R rows x D
// bf16 stored as [D / 8][R][8], the 16-byte chunk c of row r at byte 16 (c R + r), so each
// 8 x 8 core matrix is 128 contiguous bytes (a conflict-free wgmma read). Kc as K-major B:
// LBO = 16 R (the next 8 of k = D), SBO = 128 (the next 8 keys); the same bytes serve Vc as
// MN-major B: LBO = 128 (the next 8 keys, k), SBO = 16 R (the next 8 of n = D); Q (R =
// 128) as K-major A: LBO = 2048, SBO = 128, warpgroup h from row 64 h. One layout for D =
// 16/32/64 (the swizzled modes need rows of 32/64/128 bytes: a mode per D); cp.async fills
// it with 8 consecutive threads writing one core matrix (128 contiguous bytes, no bank
// conflict) from 8 rows' same 16 bytes (a warp reads 64 contiguous bytes of 8 rows).
// Precision: the same bf16 products (exact in fp32) and fp32 sums as nsa_mma_cmp_kernel:
// a score is D / 16 chained k16 steps, each adding its 16 exact products (wgmma's k16
// step has mma.m16n8k16's contract; host mode sums in k order), so the certificate's dx
// (p_error_bound) holds unchanged, and pass 2's scores are pass 1's instructions. What
// the 64-key tiles change is l's float sum: a lane adds 16 p's of a row per tile (4 with
// 16-key tiles: the bound's per-term 14 2^-24 covers exp2f, 3 additions and the quad's
// 2) over T = ceil(nv / 64) tiles (fewer than the bound's nv / 16 + 2): the bound
// adds the 12 extra additions (kKT / 4 - 4, each 2^-24 relative: positive terms, any
// order) to the bound's l term (p_error_bound<D, kKT>); everything else (p's own rounding, the importance sums
// in any order, the selection threshold) is independent of the tile size.
namespace nsa_wgc {
using nsa_cmp::Cta;
using nsa_cmp::Item;
using nsa_cmp::kNoTile;
constexpr int kW = nsa_cmp::kFwdWarps; // 8 warps: two warpgroups
constexpr int kRows = Cta<kW>::kRows;  // 128
constexpr int kThreadsW = Cta<kW>::kThreads;
constexpr int kKT = 64; // compressed keys per kc/vc tile (the wgmma's N of S = Q Kc^T)
static_assert(nsa_cmp::kSelTile % kKT == 0 || kKT % 16 == 0, "tiles of 16-key multiples");

// The 16-byte chunk c (< R D / 8) of an R x D operand in the interleaved layout: its row r
// and column col, and its element offset. Chunks c .. c + 7 are rows 8 (c / D) .. + 7 of
// chunk (c / 8) % (D / 8): one core matrix.
template <int D, int R> __device__ __forceinline__ int il_chunk(int c, int &r, int &col)
{
    r = (c / D) * 8 + (c & 7);
    const int ch = (c >> 3) % (D / 8);
    col = ch * 8;
    return (ch * R + r) * 8;
}
// Element (r, k) of an R x D operand in the interleaved layout.
template <int R> __device__ __forceinline__ int il_at(int r, int k)
{
    return ((k >> 3) * R + r) * 8 + (k & 7);
}

// Four buffers: pass 1 holds tiles x - 1 .. x + 2 (branch: the lagging warpgroup may still
// read tile x - 1's vc while tile x + 2 lands); pass 2 double-buffers in buffers 0 and 1
// (stage_tile).
constexpr int kBufs = 4;
template <int D> struct Tiles {
    __nv_bfloat16 K[kBufs][kKT * D]; // kc, interleaved [D / 8][kKT][8]
    __nv_bfloat16 V[kBufs][kKT * D]; // vc, the same
};

// Dynamic shared memory of nsa_wg_cmp_kernel<D> (the wgmma operands must be in the
// launch's extern shared memory): nsa_cmp::FwdSmem's fields, Q and the tiles interleaved,
// pass 2's p tile kKT wide.
template <int D> struct FwdSmem {
    static constexpr int kMaxQT = Cta<kW>::kMaxQT;
    alignas(128) __nv_bfloat16 Qs[kRows * D]; // interleaved [D / 8][128][8]
    alignas(128) Tiles<D> tl;
    float Ps[kRows][kKT + 1]; // pass 2: p of one kc tile
    float imp[kMaxQT][nsa_cmp::kSelTile + nsa_cmp::kCarry];
    float top_v[kMaxQT][nsa_cmp::kCmpMaxSel];
    int list[kMaxQT][nsa_cmp::kCmpMaxSel];
    int n_list[kMaxQT];
    float row_eps[kRows];
    float max_rej[kMaxQT];
    float row_lse2[kRows];
};

// cp.async the CTA's 128 q rows into Qs (interleaved); padding rows zero-filled.
template <int D>
__device__ __forceinline__ void stage_q(__nv_bfloat16 *Qs, const __nv_bfloat16 *q, const NsaShape &sh,
                                        const Item &it)
{
    for (int c = threadIdx.x; c < kRows * (D / 8); c += kThreadsW) {
        int r, col;
        const int off = il_chunk<D, kRows>(c, r, col);
        const bool in = (size_t)r < it.nrows;
        const size_t gr = in ? nsa_cmp::row_of(sh, it, (size_t)r) : 0;
        cp_async16(Qs + off, q + gr * D + (size_t)col, in ? 16u : 0u);
    }
}

// cp.async kc rows [k0, k0 + kKT) (and vc's when vcg != nullptr) into buffer buf,
// interleaved; rows at or beyond nk0 zero-filled. Issued by NT threads, tid < NT.
template <int D, int NT = kThreadsW>
__device__ __forceinline__ void issue_tile(Tiles<D> &tl, int buf, const __nv_bfloat16 *kcg,
                                           const __nv_bfloat16 *vcg, size_t k0, size_t nk0,
                                           int tid = (int)threadIdx.x)
{
    constexpr int kChunks = kKT * D / 8;
    MF_UNROLL
    for (int x = 0; x < (kChunks + NT - 1) / NT; ++x) {
        const int c = tid + x * NT;
        if (kChunks % NT != 0 && c >= kChunks) break;
        int r, col;
        const int off = il_chunk<D, kKT>(c, r, col);
        const bool in = k0 + (size_t)r < nk0;
        const size_t at = in ? (k0 + (size_t)r) * D + (size_t)col : 0;
        cp_async16(tl.K[buf] + off, kcg + at, in ? 16u : 0u);
        if (vcg != nullptr) cp_async16(tl.V[buf] + off, vcg + at, in ? 16u : 0u);
    }
}

// nsa_cmp::stage_tile on these tiles: tile k0 current (returned buffer), tile `next`
// started into the other; the landed cp.async writes are fenced for the async proxy
// (wgmma) before the barrier publishes them. A buffer is refilled only after the barrier
// that follows its wgmma's wait (each warpgroup waits for its products before going on).
template <int D>
__device__ __forceinline__ int stage_tile(Tiles<D> &tl, int &cur, const __nv_bfloat16 *kcg,
                                          const __nv_bfloat16 *vcg, size_t k0, bool prefetched, size_t next,
                                          bool next_v, size_t nk0)
{
    const int b = cur ^ 1;
    if (!prefetched) issue_tile<D>(tl, b, kcg, vcg, k0, nk0);
    cp_async_wait_all();
    wg_fence_proxy();
    __syncthreads();
    if (next != kNoTile) issue_tile<D>(tl, cur, kcg, next_v ? vcg : nullptr, next, nk0);
    cur = b;
    return b;
}

// Named barriers (hardware ids 1..4; 0 is __syncthreads). Pass 1: kBarTurn + h is
// warpgroup h's turn to issue its products (256 threads: h syncs, the other arrives);
// kBarLoad publishes warpgroup 0's landed tile among its own 128 threads (kBarLoad + 1:
// warpgroup 1's, with nothing to publish). Pass 2: kBarTurn staggers the two warpgroups'
// scores (scores<D, true>).
enum { kBarTurn = 1, kBarLoad = 3 };

// Issues (no fence, commit or wait) s = Q Kc^T's D / 16 chained m64n64k16 of the
// warpgroup's 64 rows (qa) and the kc tile at ka.
template <int D> __device__ __forceinline__ void issue_s(float (&s)[kKT / 2], uint32_t qa, uint32_t ka)
{
    const uint64_t qd = wg_desc(qa, kRows * 16, 128u, 0), kd = wg_desc(ka, kKT * 16, 128u, 0);
    MF_UNROLL
    for (int kk = 0; kk < D / 16; ++kk)
        wg_mma<kKT>(s, wg_desc_add(qd, (uint32_t)(kk * 2 * kRows * 16)),
                    wg_desc_add(kd, (uint32_t)(kk * 2 * kKT * 16)), kk > 0);
}

// s = Q Kc^T of the warpgroup's 64 rows (qa: the shared address of its row 0 in Qs) and
// the kKT keys of the kc tile at ka: D / 16 chained m64n64k16 (exact bf16 products, fp32
// sums), complete on return. STAGGER (pass 2; every thread of the CTA calls it once per
// tile): warpgroup 1 issues its products only after warpgroup 0 has issued its own
// (kBarTurn: warpgroup 0 arrives, 1 syncs), so warpgroup 0's p tile stores run under
// warpgroup 1's products instead of both warpgroups waiting on the tensor cores at once.
template <int D, bool STAGGER = false>
__device__ __forceinline__ void scores(float (&s)[kKT / 2], uint32_t qa, uint32_t ka)
{
    const int h = (int)(threadIdx.x >> 7);
    if (STAGGER && h == 1) named_bar_sync(kBarTurn, 256);
    wg_fence(); // s was last written by ordinary instructions
    issue_s<D>(s, qa, ka);
    wg_commit();
    if (STAGGER && h == 0) named_bar_arrive(kBarTurn, 256);
    wg_wait<0>();
}

// A tile's key mask for the lane's two rows in 32-bit form: key k0 + c0 + 2 t4 of
// the tile (c0: an accumulator element's column less 2 t4) is visible to row slot i
// iff c0 < lim[i] (row i sees the blocks j < nv[i]), so each score costs one
// compare with a constant; lim is clamped to [-2 t4, KT] (no 64-bit key per score).
template <int KT>
__device__ __forceinline__ void vis_lim(int (&lim)[2], const size_t (&nv)[2], size_t k0, int t4)
{
    MF_UNROLL
    for (int i = 0; i < 2; ++i)
        lim[i] = (nv[i] > k0 ? (nv[i] - k0 < (size_t)KT ? (int)(nv[i] - k0) : KT) : 0) - 2 * t4;
}

// The masked online-softmax step of kc tile x on its scores s (the accumulator layout:
// element 4 f + e is row slot e >> 1, key x kKT + 8 f + 2 t4 + (e & 1)): m, l and corr
// (o's rescale, applied before the tile's P Vc) as nsa_cmp::branch; s is left holding the
// fp32 p (l sums them; pack_p rounds them to bf16 once for P Vc). A tile that every row of
// the warp sees whole (all but the causal frontier's, about one per item) takes the path
// without the per-score compare and select (Item::wmin, warp-uniform, so the branch is too;
// the same values). Padding rows count as seeing it: their scores (zero q) are finite, and
// nothing reads their results (store_rows, row_eps and the importances take real rows only), so
// the warp holding them is not kept on the masked path (it would set its sub-partition's pace).
__device__ __forceinline__ void softmax_tile(float (&s)[kKT / 2], size_t x, const Item &it, float scale_log2,
                                             int t4, float m[2], float l[2], float corr[2])
{
    float mx[2] = { -INFINITY, -INFINITY };
    if ((x + 1) * kKT <= (size_t)it.wmin) {
        MF_UNROLL
        for (int i = 0; i < kKT / 2; ++i) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s[i]);
    } else {
        int lim[2];
        vis_lim<kKT>(lim, it.nv, x * kKT, t4);
        MF_UNROLL
        for (int i = 0; i < kKT / 2; ++i) {
            const int e = i & 3;
            const float xv = 8 * (i >> 2) + (e & 1) < lim[e >> 1] ? s[i] : -INFINITY; // raw (online_max_step)
            s[i] = xv;
            mx[e >> 1] = fmaxf(mx[e >> 1], xv);
        }
    }
    float mu[2];
    online_max_step(m, mx, scale_log2, corr, mu);
    float rs[2] = { 0.0f, 0.0f };
    MF_UNROLL
    for (int i = 0; i < kKT / 2; ++i) {
        const float p = softmax_p(s[i], scale_log2, mu[(i >> 1) & 1]);
        rs[(i >> 1) & 1] += p;
        s[i] = p;
    }
    MF_UNROLL
    for (int r = 0; r < 2; ++r) l[r] = l[r] * corr[r] + quad_sum(rs[r]);
}
// P (fp32 in the accumulator layout) rounded to bf16 once, as the A fragments of the tile's
// kKT / 16 k16 steps.
__device__ __forceinline__ void pack_p(uint32_t (&pa)[kKT / 16][4], const float (&s)[kKT / 2])
{
    MF_UNROLL
    for (int ks = 0; ks < kKT / 16; ++ks) c_to_a(pa[ks], s + 8 * ks, s + 8 * ks + 4);
}

// Pass 1, the compression branch (nsa_cmp::branch on 64-key tiles and wgmma): online
// softmax over the visible kc tiles, o += P Vc with P rounded to bf16 once (as the
// selected and sliding branches). Scheduled as FlashAttention-3's forward: within a
// warpgroup, S of tile x + 1 and P V of tile x are issued together and tile x + 1's
// softmax runs while P V of tile x is on the tensor cores; between the two warpgroups,
// ping-pong: warpgroup h issues its products only on its turn (named barrier kBarTurn + h,
// which the other warpgroup arrives at right after issuing its own), so one warpgroup's
// softmax runs under the other's products instead of both meeting at a CTA barrier per
// tile. Tiles: warpgroup 0 (ahead by half a turn) is the producer: at its turn of
// iteration x it starts tile x + 2 (cp.async, its 128 threads) into the buffer of tile
// x - 2, waits for tile x + 1 and publishes it to its own threads (kBarLoad) before its
// products; its next turn arrival publishes it to warpgroup 1. Buffer safety: warpgroup
// 1 completed P V of tile x - 2 before the arrival that opened warpgroup 0's turn x;
// warpgroup 1 reads tile x + 1 only after warpgroup 0's arrival of turn x. Barrier
// balance per item: kBarTurn (warpgroup 0's) gets nt + 1 syncs and nt + 1 arrivals
// (one before the loop), kBarTurn + 1 nt of each, so no phase is left open. Every
// thread calls it (it holds the barriers); pass 2 starts its tiles in buffers 0 and 1
// after its first CTA barrier.
template <int D>
__device__ __forceinline__ void branch(float (&o)[D / 2], float m[2], float l[2], Tiles<D> &tl, uint32_t qa,
                                       const __nv_bfloat16 *kcg, const __nv_bfloat16 *vcg, const Item &it,
                                       float scale_log2, int lane)
{
    const int t4 = lane & 3, h = (int)(threadIdx.x >> 7), wtid = (int)(threadIdx.x & 127);
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.0f;
    MF_UNROLL
    for (int n = 0; n < D / 2; ++n) o[n] = 0.0f;
    const size_t nt = (it.nk0 + kKT - 1) / kKT; // tiles (CTA-uniform)
    if (nt == 0) return;
    // No branch around the barriers and wgmma below (a wgmma on a path ptxas cannot prove
    // uniform is serialized, C7520, which would undo the overlap): tile nt (past the last)
    // is zero-filled (no global reads), and its S is computed and dropped.
    issue_tile<D>(tl, 0, kcg, vcg, 0, it.nk0);
    issue_tile<D>(tl, 1, kcg, vcg, kKT, it.nk0);
    cp_async_commit();
    cp_async_wait_all();
    wg_fence_proxy();
    __syncthreads(); // tiles 0 and 1 (and Q) landed for every thread
    float s[kKT / 2];
    uint32_t pa[kKT / 16][4]; // P of tile x (bf16 A fragments)
    float corr[2];
    scores<D>(s, qa, smem_u32(tl.K[0]));
    softmax_tile(s, 0, it, scale_log2, t4, m, l, corr);
    pack_p(pa, s);
    if (h == 1) named_bar_arrive(kBarTurn, 256); // warpgroup 0 goes first
    for (size_t x = 0; x < nt; ++x) {
        named_bar_sync(kBarTurn + h, 256); // this warpgroup's turn
        // (both warpgroups run the publishing steps: warpgroup 1 has no copies in flight and
        // its own kBarLoad + 1; a branch here would make ptxas serialize the wgmma, C7520)
        if (h == 0 && x + 2 <= nt)
            issue_tile<D, 128>(tl, (int)((x + 2) % kBufs), kcg, vcg, (x + 2) * kKT, it.nk0, wtid);
        cp_async_commit();
        cp_async_wait_1(); // tile x + 1 (issued a turn ago; tile x + 2 stays in flight)
        wg_fence_proxy();
        named_bar_sync(kBarLoad + h, 128); // ... landed for warpgroup 0's 128 threads
        MF_UNROLL
        for (int i = 0; i < D / 2; ++i) o[i] *= corr[(i >> 1) & 1];
        wg_fence(); // o and pa were written by ordinary instructions
        issue_s<D>(s, qa, smem_u32(tl.K[(x + 1) % kBufs]));
        wg_commit();
        const uint64_t vd = wg_desc(smem_u32(tl.V[x % kBufs]), 128u, kKT * 16, 0);
        MF_UNROLL
        for (int ks = 0; ks < kKT / 16; ++ks)
            wg_mma_ra<D, 1>(o, pa[ks], wg_desc_add(vd, (uint32_t)(ks * 16 * 16)), 1);
        wg_commit();
        named_bar_arrive(kBarTurn + (h ^ 1), 256); // the other warpgroup's turn
        wg_wait<1>();                              // S of tile x + 1
        // at x + 1 = nt every key is masked: m and l unchanged, corr = 1 (no branch: a
        // divergent-looking write of s makes ptxas serialize the wgmma, C7520)
        softmax_tile(s, x + 1, it, scale_log2, t4, m, l, corr);
        wg_wait<0>(); // P V of tile x: o complete, tile x's vc read, pa free
        pack_p(pa, s);
    }
    if (h == 0) named_bar_sync(kBarTurn, 256); // warpgroup 1's last arrival
    cp_async_wait_all();                       // warpgroup 0's last tile, before pass 2 refills its buffer
}
} // namespace nsa_wgc

// mf-budget: regs<=224 smem<=0 stack<=0 spill=0  (sm_90a measured: regs 146/153/180 at D = 16/32/64 with pass 1's interior tiles unmasked (by Item::wmin), pass 2's exponentials without a mask, descriptors from a base, pass 1 on the ping-pong schedule, P rounded to bf16 once, pass 2's top-n merge a warp per token, carried importances and, at the seed's ratios, importances summed per block in registers with S of the next tile under the additions (store_block_sums, pass2_block_sums), no spill, stack 0, no C7520 (no serialized wgmma; one injected warpgroup.arrive, C7519, information); dynamic smem sizeof(nsa_wgc::FwdSmem<D>) = 71936/92416/133376 bytes (four tile buffers; 512 bytes of carried importance columns); 1 CTA of 2 warpgroups per SM (at the 128-register cap of 2 CTAs, without the S overlap, D = 64 spilled 584 bytes: S's 32 accumulators beside o's and the item's bookkeeping); the other device passes: the trapping stub)
template <int D>
__global__ void __launch_bounds__(nsa_wgc::kThreadsW, 1)
    nsa_wg_cmp_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ g_cmp,
                      const __nv_bfloat16 *__restrict__ kc, const __nv_bfloat16 *__restrict__ vc,
                      float *__restrict__ out, float *__restrict__ lse, int32_t *__restrict__ sel,
                      const float *__restrict__ kmax, unsigned long long *__restrict__ flags,
                      unsigned long long *__restrict__ nflag, int flag_all, NsaShape sh, size_t QT,
                      size_t nblk, size_t total)
{
#if MF_WGMMA_CODE
    using namespace nsa_cmp;
    using nsa_mma::kLn2;
    using nsa_mma::kLog2e;
    using nsa_wgc::kKT;
    constexpr int kR = nsa_wgc::kRows, kThreadsC = nsa_wgc::kThreadsW, kMaxQT = Cta<nsa_wgc::kW>::kMaxQT;
    extern __shared__ __align__(128) unsigned char nsa_wg_cmp_smem[]; // sizeof(nsa_wgc::FwdSmem<D>)
    nsa_wgc::FwdSmem<D> &sm = *reinterpret_cast<nsa_wgc::FwdSmem<D> *>(nsa_wg_cmp_smem);
    auto &Qs = sm.Qs;
    auto &tl = sm.tl;
    auto &Ps = sm.Ps;
    auto &n_list = sm.n_list;
    auto &row_eps = sm.row_eps;
    auto &max_rej = sm.max_rej;
    auto &row_lse2 = sm.row_lse2;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g8 = lane >> 2, t4 = lane & 3;
    const float scale_log2 = sh.scale * kLog2e;
    const uint32_t qa = smem_u32(Qs) + (uint32_t)((warp >> 2) * 64 * 16); // this warpgroup's Q rows
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const Item it = item_of<D>(sh, item, QT, nblk, warp, g8);
        const size_t t0 = it.t0, nk0 = it.nk0;
        const __nv_bfloat16 *kcg = kc + it.coff, *vcg = vc + it.coff;
        __syncthreads(); // the previous item's tiles and Q are consumed
        nsa_wgc::stage_q<D>(Qs, q, sh, it);
        const float km = kmax != nullptr ? kmax[it.b * sh.Hk + it.g] : 0.0f; // null: no compressed block
        cp_async_wait_all(); // Q (fenced and published by the first tile's barrier)
        // pass 1: the compression branch
        float o[D / 2], m[2], l[2];
        nsa_wgc::branch<D>(o, m, l, tl, qa, kcg, vcg, it, scale_log2, lane);
        int cur = 1; // pass 2's tile buffer last used (nsa_wgc::stage_tile: buffers 0 and 1)
        store_rows<D>(o, m, l, it, sh, g_cmp, out, lse, row_lse2, warp, g8, t4);
        { // the certificate's error bound of each row's pass-2 p
            MF_UNROLL
            for (int i = 0; i < 2; ++i) {
                const int r = 16 * warp + g8 + 8 * i;
                float qn = 0.0f;
                for (int c = t4; c < D; c += 4) qn += fabsf(__bfloat162float(Qs[nsa_wgc::il_at<kR>(r, c)]));
                qn = quad_sum(qn);
                if (t4 == 0)
                    row_eps[r] = it.nv[i] > 0
                                     ? p_error_bound<D, kKT>(qn * km * scale_log2, m[i], l[i], it.nv[i])
                                     : 0.0f;
            }
        }
        // pass 2: importances and the running top n of each token
        const size_t tend = t0 + QT < sh.S ? t0 + QT : sh.S, ntok = tend - t0,
                     cand_max = (tend - 1) / sh.ls + 1;
        const bool sums = block_sums_fit(sh); // the seed's ratios: per-block sums in registers
        // the compressed blocks overlapping candidates [i0, i0 + kSelTile), from a tile-aligned jlo, below nk0
        const auto krange = [&](size_t i0, size_t &jlo, size_t &jhi) {
            cand_krange<kKT>(sh, i0, cand_max, nk0, jlo, jhi);
        };
        // At the seed's ratios (block_sums_fit) a range's tiles [jlo, jhi) are pipelined: S of tile
        // x + 1 is issued right after the barrier that publishes tile x's per-block sums, and runs on
        // the tensor cores while the CTA adds them (add_block_sums); the sums alternate between two
        // sets of Ps columns, so tile x + 1's are written while tile x's may still be read, and one
        // CTA barrier per tile orders everything: tile x + 1's landing (and its publication to the
        // async proxy), every warpgroup's S of tile x complete (its buffer then takes tile x + 2),
        // tile x's sums written, tile x - 1's additions done. Past the range's last tile the S is of
        // a stale buffer and discarded (no branch around the wgmma: C7520).
        const auto pass2_block_sums = [&](size_t jlo, size_t jhi, size_t i0, size_t iend) {
            int buf = nsa_wgc::stage_tile<D>(tl, cur, kcg, nullptr, jlo, false,
                                             jlo + kKT < jhi ? jlo + kKT : kNoTile, false, nk0);
            float s[kKT / 2];
            nsa_wgc::scores<D>(s, qa, smem_u32(tl.K[buf]));
            // the rows' lse in registers: fewer instructions per score in this issue-bound phase
            // (docs/nsa.md). No mask: at the seed's ratios (block_sums_fit: l = 2 d, l' = 4 d) a
            // key j a row t does not see (j d + l - 1 > t, or j past the last compressed block)
            // covers only tokens from t - l + 2 = t - 2 d + 2 > t - l' on, so it overlaps only the
            // blocks t / l' - 1 and t / l' (forced: the merge reads +inf, not imp) and blocks after
            // t / l' (no candidate); its p never reaches an importance that is read. Rows without
            // a visible key (padding rows included) have lse +inf: p = 0.
            const float lse_r[2] = { row_lse2[16 * warp + g8], row_lse2[16 * warp + g8 + 8] };
            for (size_t k0 = jlo; k0 < jhi; k0 += kKT) {
                const int pc0 = (int)((k0 - jlo) / kKT & 1) * (kKT / 2); // this tile's Ps columns
                MF_UNROLL
                for (int x = 0; x < kKT / 2; ++x) s[x] = mf_ex2_ftz(s[x] * scale_log2 - lse_r[(x >> 1) & 1]);
                store_block_sums<kKT>(Ps, s, 16 * warp + g8, lane, pc0);
                cp_async_wait_all();
                wg_fence_proxy();
                __syncthreads();
                if (k0 + 2 * kKT < jhi) nsa_wgc::issue_tile<D>(tl, buf, kcg, nullptr, k0 + 2 * kKT, nk0);
                buf ^= 1;
                wg_fence(); // s was last written by ordinary instructions
                nsa_wgc::issue_s<D>(s, qa, smem_u32(tl.K[buf]));
                wg_commit();
                add_block_sums<kKT, kThreadsC>(sm, sh, k0, i0, iend, cand_max, ntok, tid, pc0);
                wg_wait<0>();
            }
            cur = buf;
        };
        if ((size_t)tid < ntok) n_list[tid] = 0, max_rej[tid] = -INFINITY;
        clear_carry<kThreadsC, kMaxQT>(sm, tid);
        for (size_t i0 = 0; i0 < cand_max; i0 += kSelTile) {
            const size_t iend = i0 + kSelTile < cand_max ? i0 + kSelTile : cand_max;
            __syncthreads(); // the previous tile merged (n_list published), the tiles consumed
            start_range<kThreadsC, kMaxQT>(sm, tid);
            size_t jlo, jhi;
            krange(i0, jlo, jhi);
            if (sums) {
                if (jlo < jhi) pass2_block_sums(jlo, jhi, i0, iend);
            } else {
                for (size_t k0 = jlo; k0 < jhi; k0 += kKT) {
                    const int buf = nsa_wgc::stage_tile<D>(tl, cur, kcg, nullptr, k0, k0 > jlo,
                                                           k0 + kKT < jhi ? k0 + kKT : kNoTile, false, nk0);
                    float s[kKT / 2];
                    nsa_wgc::scores<D, true>(s, qa, smem_u32(tl.K[buf]));
                    MF_UNROLL
                    for (int x = 0; x < kKT / 2; ++x) {
                        const int e = x & 3, jj = 8 * (x >> 2) + 2 * t4 + (e & 1),
                                  r = 16 * warp + g8 + 8 * (e >> 1);
                        const size_t j = k0 + (size_t)jj;
                        Ps[r][jj] = j < it.nv[e >> 1] ? mf_ex2_ftz(s[x] * scale_log2 - row_lse2[r]) : 0.0f;
                    }
                    __syncthreads();
                    add_tile_importances<kKT, kThreadsC>(sm, sh, k0, i0, iend, cand_max, ntok, tid);
                }
            }
            merge_tile<kThreadsC>(sm, sh, t0, i0, iend, ntok, tid);
        }
        certify_and_store<kThreadsC>(sm, sh, it.rbase, t0, ntok, flags, nflag, flag_all, sel, tid);
    }
#else
    (void)q, (void)g_cmp, (void)kc, (void)vc, (void)out, (void)lse, (void)sel, (void)kmax, (void)flags;
    (void)nflag, (void)flag_all, (void)sh, (void)QT, (void)nblk, (void)total;
    __trap(); // no sm_90a code: the launcher never picks this kernel
#endif
}

} // namespace MF_NS
