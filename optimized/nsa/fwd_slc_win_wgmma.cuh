// NSA bf16 forward on sm_90a, selected and sliding-window branches on wgmma
// (nsa_wg_fwd_kernel): nsa_mma_fwd_kernel's CTAs and key streams with the products on
// warpgroup MMA, two warpgroups ping-pong (MF_NSA_MMA_PATH).
#pragma once

#include "fwd_slc_win_mma.cuh"

namespace MF_NS {

// ---- bf16 tensor-core path on sm_90a: selected and sliding branches on wgmma ----------
// nsa_wg_fwd_kernel<D, WARPS>: nsa_mma_fwd_kernel's CTA walk, grid, key streams
// (selected_stream, window_stream, run_stream: the same stages of 16 Stage<D> keys,
// double-buffered by cp.async), masks, online softmax (softmax_step) and outputs, with
// the products on warpgroup MMA. Warpgroup wg = warp / 4 owns the CTA rows 64 wg ..
// 64 wg + 63 (two warpgroups at WARPS = 8, G >= 3; one at WARPS = 4, G <= 2), and per
// stage of NK keys (64; 32 at D = 128):
//   S (64 x NK) = Q K^T: D / 16 wgmma.m64nNKk16, A = the warpgroup's Q rows and B = the
//     K stage, both K-major (K = d) in shared memory;
//   O (64 x D) += P V: one wgmma.m64nDk16 per 16-key sub-tile, A = P from registers
//     (rounded to bf16 once, p_frags: the mma.m16n8k16 A fragment, as the accumulator
//     layout of m64nN per warp is mma.m16n8's C pattern per 8 columns), B = the V stage
//     read MN-major (N = d contiguous, imm-trans-b = 1): the stage as loaded, no transpose.
// Warp w % 4 of a warpgroup holds rows 16 w .. 16 w + 15 of the CTA in the mma.sync
// kernel's fragment layout, so Rows, stage_bits' visibility, softmax_step and
// finish_rows apply unchanged. A warpgroup skips a stage (or a sub-tile's P V) only
// when none of its 64 rows sees a key of it (blk_of with span 64: warpgroup-uniform,
// as every wgmma instruction must be), so it computes S over the whole stage (masked
// keys get p = 0 exactly, as in the mma.sync kernel); a row's sums are the same terms
// in the same order, up to fp32 summation order inside a product.
// Layouts (nsa_wg::off), all rows = keys (K, V) or CTA rows (Q), D columns:
//   D = 64, 128: 64-column slabs of 128-byte rows, 128B-swizzled (wg_sw128: 16-byte
//     chunk c of row r at c ^ (r % 8)), slab s at s R 128 bytes (R rows): K-major
//     descriptors advance 32 bytes per k16 step inside a slab (wg_desc_sw128); V read
//     MN-major with LBO = the slab stride, SBO = 1024 (8 keys);
//   D = 16, 32 (rows of 32 or 64 bytes, under the 128-byte swizzle's row): no swizzle,
//     core matrices of 8 rows x 16 bytes, (r / 8) 16 D + (c / 8) 128 + (r % 8) 16 +
//     (c % 8) 2: K-major LBO = 128, SBO = 16 D; MN-major (V) LBO = 16 D, SBO = 128. The
//     loads put 8 rows' 16-byte chunk on 8 consecutive threads (a warp writes 512
//     contiguous bytes: no bank conflict; wgmma reads whole 128-byte core matrices).
// Dynamic shared memory (fwd_smem_bytes): 1024 bytes of alignment slack, Q (16 WARPS
// x D bf16), 2 K and 2 V stages (NK x D bf16 each, 1024-byte multiples), the union round.
namespace nsa_wg {
using nsa_sw::Stage;

// A K or V stage: NK keys x D bf16 in the layout of off<D>.
template <int D> struct Tile {
    static constexpr int NK = 16 * Stage<D>::value;
    unsigned char b[NK * D * 2];
};

// Byte offset of element (r, c) (c < D) of an operand of R rows (R a multiple of 64 or NK).
template <int D> __device__ __forceinline__ int off(int r, int c, int R)
{
    if constexpr (D >= 64)
        return (c >> 6) * (R * 128) + wg_sw128(r, c & 63);
    else
        return (r >> 3) * (16 * D) + (c >> 3) * 128 + (r & 7) * 16 + (c & 7) * 2;
}

// K-major descriptor (rows = M of A or N of B, K = d) of an operand's first row (addr: its
// shared address, a multiple of 8 rows from the operand's start), and from it (d0) that of
// k16 step kk (R: the operand's rows).
template <int D> __device__ __forceinline__ uint64_t desc_k0(uint32_t addr)
{
    if constexpr (D >= 64)
        return wg_desc_sw128(addr);
    else
        return wg_desc(addr, 128u, 16u * D, 0);
}
template <int D> __device__ __forceinline__ uint64_t desc_k(uint64_t d0, int kk, int R)
{
    return wg_desc_add(d0, D >= 64 ? (uint32_t)((kk >> 2) * R * 128 + 32 * (kk & 3)) : 256u * (uint32_t)kk);
}

// MN-major descriptor of the V stage (addr: its shared address; B of P V: K = key, N = d), and
// from it (d0) that of keys 16 j .. 16 j + 15.
template <int D> __device__ __forceinline__ uint64_t desc_v0(uint32_t addr)
{
    if constexpr (D >= 64)
        return wg_desc(addr, (uint32_t)Tile<D>::NK * 128u, 1024u, 1);
    else
        return wg_desc(addr, 16u * D, 128u, 0);
}
template <int D> __device__ __forceinline__ uint64_t desc_v(uint64_t d0, int j)
{
    return wg_desc_add(d0, D >= 64 ? 2048u * (uint32_t)j : 32u * D * (uint32_t)j);
}

// run_stream's hooks for Tile stages: the wgmma operands' address, and the proxy fence
// between their cp.async writes (after the wait) and the barrier before wgmma reads them.
template <int D> __device__ __forceinline__ const __nv_bfloat16 *stage_ptr(const Tile<D> &t)
{
    return reinterpret_cast<const __nv_bfloat16 *>(t.b);
}
template <int D> __device__ __forceinline__ void stage_landed(const Tile<D> &) { wg_fence_proxy(); }

// The wgmma kernel's stage buffers (Tile, off<D>'s layout). D >= 64: a key row's chunks on
// consecutive threads (the swizzle spreads the writes); D <= 32: chunk c of 8 consecutive
// keys on 8 consecutive threads (at D = 64 with 8 warps nsa_sw::load_stage_as gives
// warpgroup 0 K's chunks, warpgroup 1 V's, one per thread and sub-tile).
template <int D> struct TileLayout {
    __device__ __forceinline__ static void chunk(int c, int &r, int &col)
    {
        constexpr int kC = D / 8;
        r = D >= 64 ? c / kC : (c & 7) + 8 * (c / (8 * kC));
        col = D >= 64 ? (c % kC) * 8 : ((c >> 3) % kC) * 8;
    }
    __device__ __forceinline__ static int off(int row, int col)
    {
        return nsa_wg::off<D>(row, col, Tile<D>::NK);
    }
};

template <int D, int NT, int WARPS>
__device__ __forceinline__ void load_stage(Tile<D> &Ks, Tile<D> &Vs, const __nv_bfloat16 *kg,
                                           const __nv_bfloat16 *vg, size_t stride, const nsa_sw::SubTiles &st)
{
    static_assert(16 * NT == Tile<D>::NK, "a stage is one Tile");
    nsa_sw::load_stage_as<D, NT, WARPS, TileLayout<D>>(Ks.b, Vs.b, kg, vg, stride, st);
}

enum { kBarStagger = 1 }; // named barrier (0 is __syncthreads)

// Stage y for this thread's warpgroup (qa: its first Q row; ka, va: the stage's K and V
// tiles). Visibility as stage_step's; needm is warpgroup-uniform here (blk_of, span 64).
template <int D, int WARPS>
__device__ __forceinline__ void stage_step(nsa_mma::Acc<D> &acc, uint32_t qa, uint32_t ka, uint32_t va,
                                           const nsa_sw::SubTiles &st, const nsa_sw::Keys &ks,
                                           float scale_log2, int lane)
{
    constexpr int NT = Stage<D>::value, NK = 16 * NT;
    unsigned int needm, seen;
    nsa_sw::stage_bits<NT>(needm, seen, st, ks, lane);
    // from a shuffle: provably warp-uniform for ptxas, so the branches around the wgmma
    // below are not divergent paths (which serialize wgmma: ptxas C7520)
    needm = __shfl_sync(0xffffffffu, needm, 0);
    // Two warpgroups (WARPS = 8) start staggered: warpgroup 1 issues its S only after
    // warpgroup 0 has issued its own (named barrier kBarStagger: warpgroup 0 arrives, 1
    // syncs, once per stage, skipped stages included), so their products queue one after
    // the other and one warpgroup's softmax runs under the other's S or P V instead of
    // both softmaxes at once (FlashAttention-3's ping-pong, within run_stream's CTA
    // barriers, which re-align the two every stage).
    const bool wg1 = WARPS == 8 && (threadIdx.x >> 7) == 1, wg0 = WARPS == 8 && !wg1;
    if (wg1) named_bar_sync(kBarStagger, 256);
    if (needm == 0u) {
        if (wg0) named_bar_arrive(kBarStagger, 256);
        return;
    }
    float s[2 * NT][4];
    float(&sd)[NK / 2] = reinterpret_cast<float(&)[NK / 2]>(s);
    float(&od)[D / 2] = reinterpret_cast<float(&)[D / 2]>(acc.o);
    wg_fence(); // s was last touched by ordinary instructions
    const uint64_t qd = desc_k0<D>(qa), kd = desc_k0<D>(ka);
    MF_UNROLL
    for (int kk = 0; kk < D / 16; ++kk)
        wg_mma<NK>(sd, desc_k<D>(qd, kk, 16 * WARPS), desc_k<D>(kd, kk, NK), kk > 0);
    wg_commit();
    if (wg0) named_bar_arrive(kBarStagger, 256);
    wg_wait<0>();
    nsa_sw::softmax_step<D, NT>(acc, s, seen, ks.pad, scale_log2);
    uint32_t pa[NT][4], pl[4];
    MF_UNROLL
    for (int j = 0; j < NT; ++j) nsa_mma::p_frags<false>(pa[j], pl, s[2 * j], s[2 * j + 1]); // P in bf16
    wg_fence(); // O was rescaled by ordinary instructions
    const uint64_t vd = desc_v0<D>(va);
    MF_UNROLL
    for (int j = 0; j < NT; ++j)
        if (((needm >> j) & 1u) != 0u) wg_mma_ra<D, 1>(od, pa[j], desc_v<D>(vd, j), 1);
    wg_commit();
    wg_wait<0>();
}

// Dynamic shared memory of nsa_wg_fwd_kernel<D, WARPS> (see above).
template <int D, int WARPS> constexpr size_t fwd_smem_bytes()
{
    return 1024 + (size_t)16 * WARPS * D * 2 + 4 * sizeof(Tile<D>) + sizeof(nsa_sw::Union);
}
} // namespace nsa_wg

// mf-budget: regs<=255 smem<=0 stack<=0 spill=0  (sm_90a measured: regs 189/221/245/216 at D = 16/32/64/128 with WARPS = 4, 187/197/227/230 with 8, stack 0, no C7520 serialization; dynamic smem nsa_wg::fwd_smem_bytes: 11.4/21.4/41.4/49.4 KB (4 warps), 13.4/25.4/49.4/65.4 KB (8 warps); 1 CTA of 8 warps or 2 of 4 per SM, by registers)
template <int D, int WARPS>
__global__ void __launch_bounds__(32 * WARPS, WARPS == nsa_sw::kWarps ? 2 : 1)
    nsa_wg_fwd_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
                      const __nv_bfloat16 *__restrict__ v, const __nv_bfloat16 *__restrict__ g_slc,
                      const __nv_bfloat16 *__restrict__ g_win, const int32_t *__restrict__ sel,
                      float *__restrict__ out, float *__restrict__ lse, NsaShape sh, size_t QT, size_t nblk,
                      size_t total)
{
#if MF_WGMMA_CODE
    using namespace nsa_sw;
    using nsa_mma::Acc;
    using nsa_mma::acc_init;
    using nsa_wg::Tile;
    constexpr int NT = Stage<D>::value, ROWS = 16 * WARPS, THREADS = 32 * WARPS;
    extern __shared__ __align__(16) unsigned char nsa_wg_fwd_smem[]; // nsa_wg::fwd_smem_bytes<D, WARPS>()
    unsigned char *Qs = wg_align_1024(nsa_wg_fwd_smem);
    Tile<D> *Kt = reinterpret_cast<Tile<D> *>(Qs + ROWS * D * 2); // [2] stages, 1024-byte aligned
    Tile<D> *Vt = Kt + 2;
    Union &un = *reinterpret_cast<Union *>(Vt + 2);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g8 = lane >> 2;
    const float scale_log2 = sh.scale * nsa_mma::kLog2e;
    const size_t kstride = sh.Hk * D;
    const uint32_t qa =
        smem_u32(Qs) + (uint32_t)nsa_wg::off<D>(64 * (warp >> 2), 0, ROWS); // the warpgroup's rows
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const Blk bk = blk_of(sh, item, QT, nblk, warp, g8, 64);
        const size_t b = bk.b, g = bk.g;
        __syncthreads(); // the previous item's tiles are consumed
        for (int c = tid; c < ROWS * (D / 8); c += THREADS) {
            const int r = c / (D / 8), col = (c % (D / 8)) * 8;
            const bool in = (size_t)r < bk.nrows;
            const size_t gr =
                in ? (b * sh.S + bk.t0 + (size_t)r / sh.G) * sh.Hq + g * sh.G + (size_t)r % sh.G : 0;
            cp_async16(Qs + nsa_wg::off<D>(r, col, ROWS), q + gr * D + (size_t)col, in ? 16u : 0u);
        }
        cp_async_wait_all();
        wg_fence_proxy(); // published to wgmma by the merge round's barriers below
        const __nv_bfloat16 *kg = k + (b * sh.S * sh.Hk + g) * D, *vg = v + (b * sh.S * sh.Hk + g) * D;
        Acc<D> acc;
        auto step = [&](const SubTiles &st, const Keys &ks, const __nv_bfloat16 *Ks,
                        const __nv_bfloat16 *Vs) {
            nsa_wg::stage_step<D, WARPS>(acc, qa, smem_u32(Ks), smem_u32(Vs), st, ks, scale_log2, lane);
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
#else
    (void)q, (void)k, (void)v, (void)g_slc, (void)g_win, (void)sel, (void)out, (void)lse, (void)sh, (void)QT,
        (void)nblk, (void)total;
    __trap(); // no sm_90a code: the launcher never picks this kernel (wg_pick)
#endif
}

} // namespace MF_NS
