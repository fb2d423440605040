// NSA bf16 tensor-core path: what its query-blocked mma.sync and wgmma kernels share
// (online-softmax accumulators on mma fragments, P as A fragments, the work item).
#pragma once

#include "common.cuh"

namespace MF_NS {

// ---- bf16 tensor-core path: shared pieces --------------------------------------------
// The online-softmax state of a lane's two rows of an m16 tile (Acc: O on the
// accumulator fragments, base-2 running max m and sum l, as FlashAttention-2)
// and P's A fragments for O += P V (p_frags), used by nsa_mma_fwd_kernel and
// nsa_mma_bwd_kernel (the backward's recomputation of o) below.
namespace nsa_mma {
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
__device__ __forceinline__ float bf16_round(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

// Online-softmax state of one lane: rows g and g + 8 of the m16 tile.
template <int D> struct Acc {
    float o[D / 8][4];
    float m[2], l[2];
};

// P (two n8 accumulator tiles c0, c1) as the A fragments of P V: pa = P in
// bf16 (what a bf16 kernel multiplies); SPLIT: P = hi + lo, pa = hi, pl = lo
// (both bf16, ~2^-16 relative), else pl = 0. c0, c1 are overwritten.
template <bool SPLIT>
__device__ __forceinline__ void p_frags(uint32_t pa[4], uint32_t pl[4], float c0[4], float c1[4])
{
    pl[0] = pl[1] = pl[2] = pl[3] = 0u;
    if (SPLIT) {
        float lo[2][4];
        MF_UNROLL
        for (int e = 0; e < 4; ++e) {
            const float h0 = bf16_round(c0[e]), h1 = bf16_round(c1[e]);
            lo[0][e] = c0[e] - h0;
            lo[1][e] = c1[e] - h1;
            c0[e] = h0;
            c1[e] = h1;
        }
        c_to_a(pl, lo[0], lo[1]);
    }
    c_to_a(pa, c0, c1);
}

template <int D> __device__ __forceinline__ void acc_init(Acc<D> &acc)
{
    acc.m[0] = acc.m[1] = -INFINITY;
    acc.l[0] = acc.l[1] = 0.0f;
    MF_UNROLL
    for (int n = 0; n < D / 8; ++n) acc.o[n][0] = acc.o[n][1] = acc.o[n][2] = acc.o[n][3] = 0.0f;
}

// The CTA's work item (b, KV group g, tokens [t0, tend)) of QT tokens; nblk
// = ceil(S / QT) items per (b, g). Both query-blocked kernels decode it here.
struct ItemPos {
    size_t b, g, t0, tend;
};
__device__ __forceinline__ ItemPos item_pos(const NsaShape &sh, size_t item, size_t QT, size_t nblk)
{
    ItemPos p;
    p.g = (item / nblk) % sh.Hk;
    p.b = item / (nblk * sh.Hk);
    p.t0 = (item % nblk) * QT;
    p.tend = p.t0 + QT < sh.S ? p.t0 + QT : sh.S;
    return p;
}
} // namespace nsa_mma

} // namespace MF_NS
