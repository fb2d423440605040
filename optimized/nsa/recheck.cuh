// NSA selection fallback (nsa_recheck_kernel): the tokens whose selection the compression
// kernels could not certify, ranked again in double as the reference ranks them.
#pragma once

#include "fwd_cmp_mma.cuh"

namespace MF_NS {

// ---- the selection's fallback: ambiguous tokens ranked in double as the reference -------
// nsa_mma_cmp_kernel lists the (b, t, KV group) whose selection margin it cannot
// certify (flags[0, *nflag): (b S + t) Hk + g). One block per listed token
// (grid-stride; the count is read in device memory: no host synchronization)
// recomputes, in double and in the reference's order of operations
// (reference/nsa.c steps 1-3; kc is the bf16 scratch nsa_pool_kernel wrote, the
// reference's step 1 bit for bit), the compression scores and softmax
// (max, then the sum in j order) of each of the group's heads, the block
// importances (heads, then compressed blocks, in order), forced blocks +inf,
// and the top n (ties to the lower index), and rewrites sel's row before
// nsa_mma_fwd_kernel reads it. Products and sums are explicitly rounded
// (__dmul_rn/__dadd_rn on the GPU: no contraction into fma); exp is the
// device's (within an ulp of the host's). Not hot: a listed token costs
// G (3 nv + overlaps) scores of 2 D flops; bf16 q and kc (the tensor-core path).
namespace nsa_chk {
__device__ __forceinline__ double dadd(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
__device__ __forceinline__ double dmul(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}
// The reference's scaled compression score of head h at token t against block
// j. kc is nsa_pool_kernel's bf16 scratch: the reference's mean (double, in s
// order, / l) rounded by the same mf_bf16_from_f64, so the same values the
// reference multiplies, read instead of pooled again from k (l times fewer loads).
__device__ __forceinline__ double score(const __nv_bfloat16 *__restrict__ q,
                                        const __nv_bfloat16 *__restrict__ kc, const NsaShape &sh, size_t b,
                                        size_t t, size_t h, size_t g, size_t j)
{
    const __nv_bfloat16 *qr = q + ((b * sh.S + t) * sh.Hq + h) * sh.D;
    const __nv_bfloat16 *kr = kc + ((b * sh.Hk + g) * sh.nc + j) * sh.D;
    double acc = 0.0;
    for (size_t c = 0; c < sh.D; ++c)
        acc = dadd(acc, dmul((double)__bfloat162float(qr[c]), (double)__bfloat162float(kr[c])));
    return dmul(acc, sh.scale_ref);
}
} // namespace nsa_chk

// mf-budget: regs<=112 smem<=2048 spill=0  (sm_90 measured: regs 101, smem 1792, stack 0; not hot: ambiguous tokens only; the min-blocks hint 1: without it, when kc was pooled here from k, ptxas capped it at 72 registers and spilled 92 bytes)
__global__ void __launch_bounds__(kThreads, 1)
    nsa_recheck_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ kc,
                       int32_t *__restrict__ sel, const unsigned long long *__restrict__ flags,
                       const unsigned long long *__restrict__ nflag, NsaShape sh)
{
    using nsa_chk::dadd;
    using nsa_chk::score;
    constexpr int kMaxN = nsa_cmp::kCmpMaxSel;
    __shared__ double red[kThreads];
    __shared__ double st_m[kMaxG], st_sum[kMaxG];
    __shared__ double top_v[kMaxN];
    __shared__ size_t top_i[kMaxN];
    const int tid = threadIdx.x;
    const size_t count = *nflag;
    for (size_t e = blockIdx.x; e < count; e += gridDim.x) {
        const size_t code = flags[e], g = code % sh.Hk, t = code / sh.Hk % sh.S, b = code / sh.Hk / sh.S;
        const size_t nv = nsa_cmp::nvis_of(sh, t);
        // per head: the softmax's max, then its sum in j order (one chunk of exponentials at a time)
        for (size_t hh = 0; hh < sh.G; ++hh) {
            const size_t h = g * sh.G + hh;
            double mx = -INFINITY;
            for (size_t j = (size_t)tid; j < nv; j += kThreads) {
                const double x = score(q, kc, sh, b, t, h, g, j);
                if (x != x || x > mx) mx = x;
            }
            red[tid] = mx;
            __syncthreads();
            if (tid == 0) {
                double m = -INFINITY;
                for (int x = 0; x < kThreads; ++x)
                    if (red[x] != red[x] || red[x] > m) m = red[x];
                st_m[hh] = m;
                st_sum[hh] = 0.0;
            }
            __syncthreads();
            for (size_t j0 = 0; j0 < nv; j0 += kThreads) {
                const size_t j = j0 + (size_t)tid;
                red[tid] = j < nv ? exp(score(q, kc, sh, b, t, h, g, j) - st_m[hh]) : 0.0;
                __syncthreads();
                if (tid == 0) {
                    double sum = st_sum[hh];
                    for (size_t x = 0; x < kThreads && j0 + x < nv; ++x) sum = dadd(sum, red[x]);
                    st_sum[hh] = sum;
                }
                __syncthreads();
            }
        }
        // importances of the candidates, kThreads at a time, merged into the top n by thread 0
        const size_t cand = t / sh.ls + 1, last = t / sh.ls;
        size_t ntop = 0; // thread 0's
        for (size_t i0 = 0; i0 < cand; i0 += kThreads) {
            const size_t i = i0 + (size_t)tid;
            double acc = 0.0;
            if (i < cand) {
                const size_t lo = i * sh.ls + 1 > sh.l ? i * sh.ls + 1 - sh.l : 0;
                const size_t ja = (lo + sh.d - 1) / sh.d;     // j d + l > i l'
                size_t jb = ((i + 1) * sh.ls - 1) / sh.d + 1; // j d < (i + 1) l'
                if (jb > nv) jb = nv;
                for (size_t hh = 0; hh < sh.G; ++hh)
                    for (size_t j = ja; j < jb; ++j)
                        acc = dadd(acc,
                                   exp(score(q, kc, sh, b, t, g * sh.G + hh, g, j) - st_m[hh]) / st_sum[hh]);
                if (i == 0 || i == last || i + 1 == last) acc = INFINITY;
            }
            red[tid] = acc;
            __syncthreads();
            if (tid == 0)
                for (size_t u = 0; u < kThreads && i0 + u < cand; ++u) {
                    // the new block's index is above every listed one: it goes after those >= it
                    const double v = red[u];
                    size_t pos = ntop;
                    while (pos > 0 && !(top_v[pos - 1] >= v)) --pos;
                    if (pos >= sh.n) continue;
                    const size_t end = ntop < sh.n ? ntop : sh.n - 1;
                    for (size_t x = end; x > pos; --x) top_v[x] = top_v[x - 1], top_i[x] = top_i[x - 1];
                    top_v[pos] = v;
                    top_i[pos] = i0 + u;
                    if (ntop < sh.n) ++ntop;
                }
            __syncthreads();
        }
        if (tid == 0) { // the selection in increasing block order, -1 padding
            for (size_t x = 1; x < ntop; ++x)
                for (size_t y = x; y > 0 && top_i[y - 1] > top_i[y]; --y) {
                    const size_t z = top_i[y];
                    top_i[y] = top_i[y - 1];
                    top_i[y - 1] = z;
                }
            for (size_t x = 0; x < sh.n; ++x) sel[code * sh.n + x] = x < ntop ? (int32_t)top_i[x] : -1;
        }
        __syncthreads(); // shared statistics reused by the next token
    }
}

} // namespace MF_NS
