// Optimized native sparse attention: the three NSA branches fused, without
// score matrices or gathered keys (include/memfix/nsa.h has the math).
//
// Seed document 001_8c71c68d431e0a4d.txt: the NSA model's selected branch was
// "standard SDPA with block gathering" and its O(S^2) attention elements per
// head ran sequence 4096 out of memory. Here no score row is ever stored:
//   nsa_pool_kernel  compressed k and v (mean over [j*d, j*d+l)): fp32 for f32
//                    storage; bf16 storage: the double mean rounded once to bf16
//                    (the spec's, reference/nsa.c), kept in bf16 scratch for the
//                    tensor-core compression kernels (4*B*Hk*nc*D bytes), in fp32
//                    for the SIMT ones (8*B*Hk*nc*D)
//   nsa_fwd_kernel   one block (kThreads) per (b, t, KV group), looping over the
//                    group's heads:
//     1. compression: online softmax over the visible compressed keys, in
//        chunks of kThreads scores (one chunk of probabilities in shared memory);
//     2. block importances of t, 1024 candidate blocks per tile: one thread
//        per block, recomputing the probabilities of its overlapping compressed
//        blocks from the compression lse, summed over the group's heads;
//     3. each tile merged into the running top n by parallel ranking (an entry
//        stays iff fewer than n entries beat it; forced blocks have +inf; ties
//        to the lower index): shared memory independent of S;
//     4. the selected blocks' tokens <= t and the window (t-w, t]: online
//        softmax over those keys only, chunk by chunk.
// Backward (nsa_bwd_kernel, same grid): per branch, o recomputed, then
// p = exp(scale q.k - lse) from the forward's saved lse over the same keys
// (the saved sel), ds = p (g dout.v - g dout.o); dq in registers, dk/dv and
// the compressed dkc/dvc by atomicAdd; nsa_unpool_kernel spreads dkc/dvc back
// through the mean pooling. Scratch: kc, vc, dkc, dvc.
// bf16 (D in {16, 32, 64, 128}): step 4 runs on the tensor cores
// (nsa_mma_fwd_kernel below, query-blocked: one CTA per (b, KV group, up to 32
// tokens) loads each K/V tile of the tokens' union of selected blocks and
// windows once; nsa_wg_fwd_kernel: the same on wgmma, two m64 warpgroups per
// 128-row CTA, for MF_NSA_MMA_PATH=wgmma / sm_90a), and for D <= 64, n <= 32 steps 1-3 too
// (nsa_mma_cmp_kernel: bf16 kc tiles by cp.async straight into the mma staging;
// the products of bf16 q and kc are exact, so the scores that decide the
// selection are fp32 sums of the reference's own products); otherwise steps 1-3
// stay SIMT. On the wgmma path (MF_NSA_MMA_PATH: auto on a cc 9.0 GPU with this
// file's sm_90a code, or wgmma; host mode emulates it) nsa_wg_cmp_kernel runs
// steps 1-3 instead: the same CTAs as two m64 warpgroups, 64-key kc/vc tiles (both wgmma
// kernels schedule their two warpgroups ping-pong through named barriers, mf_bar.cuh). Backward, bf16 with
// D in {16, 32, 64, 128}: the selected and sliding branches on the tensor cores
// (nsa_mma_bwd_kernel, query-blocked like nsa_mma_fwd_kernel), and for D <= 64
// the compression branch too (nsa_mma_cmp_bwd_kernel, query-blocked like
// nsa_mma_cmp_kernel); D = 128: the compression branch SIMT (nsa_bwd_kernel, branches 1). Each block loops over
// its work items with a stride of gridDim.x; loop bounds depend on blockIdx
// and kernel arguments only, so every thread reaches every __syncthreads.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"
#include "mf_wgmma.cuh"
#include "mf_bar.cuh"
#include "nsa.cuh"

#include <cuda_bf16.h>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace MF_NS {

constexpr int kThreads = 128;
constexpr int kMaxD = MF_NSA_MAX_HEAD_DIM;
constexpr int kMaxG = MF_NSA_MAX_GROUP;
constexpr int kMaxSel = MF_NSA_MAX_N_SEL; // n of the running top-n list
constexpr int kTile = 1024;               // candidate blocks per importance tile
static_assert(kMaxD <= kThreads, "one thread per output column");

struct NsaShape {
    size_t B, S, Hq, Hk, D, G, nc, nb;
    size_t l, d, ls, n, w;
    // pass 2 of the compression kernels (nsa_cmp): the selection blocks at or after a range's end
    // that compressed blocks before it overlap (j < iend l' / d covers tokens up to
    // iend l' - d + l - 1: blocks iend .. iend + (l - d - 1) / l'; none when l = d)
    size_t carry;
    float scale;
    double
        scale_ref; // the reference's scale in double (cfg.scale, or 1/sqrt(D) in double): nsa_recheck_kernel
};

// ---- pooling: kc[b][g][j][c] = mean_{s in [j*d, j*d+l)} k[b][s][g][c] ----------
// f32 storage: an fp32 mean. bf16 storage: the spec's bf16 kc/vc (reference/nsa.c
// step 1): the mean in double (sum in s order, divided by l), rounded once by
// mf_bf16_from_f64, bit-identical to the reference's; stored as KC: bf16 for the
// tensor-core compression kernels, fp32 (the same value, exact) for the SIMT ones.
// mf-budget: regs<=40 smem<=0 spill=0
template <typename T, typename KC>
__global__ void __launch_bounds__(256)
    nsa_pool_kernel(const T *__restrict__ k, const T *__restrict__ v, KC *__restrict__ kc,
                    KC *__restrict__ vc, NsaShape sh, size_t total)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const size_t c = e % sh.D, j = (e / sh.D) % sh.nc, g = (e / (sh.D * sh.nc)) % sh.Hk;
        const size_t b = e / (sh.D * sh.nc * sh.Hk);
        if constexpr (sizeof(T) == 2) { // bf16: the reference's double mean, rounded once to bf16
            double sk = 0.0, sv = 0.0;  // (sums only, in s order: nothing to contract into an fma)
            for (size_t s = j * sh.d; s < j * sh.d + sh.l; ++s) {
                const size_t at = ((b * sh.S + s) * sh.Hk + g) * sh.D + c;
                sk += (double)to_f32(k[at]);
                sv += (double)to_f32(v[at]);
            }
            // (a bf16 value: exact in float, and from_f32's rounding to bf16 keeps it)
            kc[e] = from_f32<KC>((float)mf_bf16_bits_to_f64(mf_bf16_from_f64(sk / (double)sh.l)));
            vc[e] = from_f32<KC>((float)mf_bf16_bits_to_f64(mf_bf16_from_f64(sv / (double)sh.l)));
        } else {
            float sk = 0.0f, sv = 0.0f;
            for (size_t s = j * sh.d; s < j * sh.d + sh.l; ++s) {
                const size_t at = ((b * sh.S + s) * sh.Hk + g) * sh.D + c;
                sk += to_f32(k[at]);
                sv += to_f32(v[at]);
            }
            kc[e] = from_f32<KC>(sk / (float)sh.l);
            vc[e] = from_f32<KC>(sv / (float)sh.l);
        }
    }
}

// max |kc| of each (b, KV group) (kmax[b Hk + g], NaN if any kc is NaN): the
// bound of the compression kernel's score error (nsa_mma_cmp_kernel's
// certificate). One block per (b, g).
// mf-budget: regs<=40 smem<=1024 spill=0  (sm_90 measured: regs 25, smem 512)
__global__ void __launch_bounds__(kThreads)
    nsa_kmax_kernel(const __nv_bfloat16 *__restrict__ kc, float *__restrict__ kmax, NsaShape sh)
{
    __shared__ float red[kThreads];
    const size_t per = sh.nc * sh.D;
    for (size_t bg = blockIdx.x; bg < sh.B * sh.Hk; bg += gridDim.x) {
        float m = 0.0f;
        for (size_t e = threadIdx.x; e < per; e += kThreads) m = nan_max(fabsf(to_f32(kc[bg * per + e])), m);
        m = block_max_n<kThreads>(m, red);
        if (threadIdx.x == 0) kmax[bg] = m; // block_max_n ends with a barrier: red is free again
    }
}

// Online softmax state of one query row: every thread holds the same m and l;
// thread c < D holds the output column c.
struct Online {
    float m, l, acc;
};

// Attend keys [s0, s1) of a key matrix (row r at base + r*stride) for the
// query qs (fp32, shared), updating st. Chunks of kThreads keys: one score per
// thread, block max and sum, one chunk of probabilities in p_sh.
template <typename KT>
__device__ __forceinline__ void attend_range(const KT *__restrict__ kb, const KT *__restrict__ vb,
                                             size_t stride, size_t s0, size_t s1, const float *qs, int D,
                                             float scale, Online &st, float *p_sh, float *red)
{
    const int tid = threadIdx.x;
    for (size_t c0 = s0; c0 < s1; c0 += kThreads) {
        const size_t s = c0 + (size_t)tid;
        float x = -INFINITY;
        if (s < s1) {
            const KT *kr = kb + s * stride;
            float dot = 0.0f;
            for (int c = 0; c < D; ++c) dot += qs[c] * to_f32(kr[c]);
            x = dot * scale;
        }
        const float cm = block_max_n<kThreads>(x, red);
        const float mnew = nan_max(st.m, cm);
        const float alpha = st.m == -INFINITY ? 0.0f : expf(st.m - mnew);
        const float p = s < s1 ? expf(x - mnew) : 0.0f;
        p_sh[tid] = p;
        const float ps = block_sum_n<kThreads>(p, red); // its barriers publish p_sh
        st.l = st.l * alpha + ps;
        st.m = mnew;
        if (tid < D) {
            const size_t cnt = s1 - c0 < (size_t)kThreads ? s1 - c0 : (size_t)kThreads;
            float a = st.acc * alpha;
            for (size_t jj = 0; jj < cnt; ++jj) a += p_sh[jj] * to_f32(vb[(c0 + jj) * stride + tid]);
            st.acc = a;
        }
        __syncthreads(); // p_sh consumed before the next chunk
    }
}

// ---- fused forward ------------------------------------------------------------------
// branches == 0 (the bf16 tensor-core path): steps 1-3 only; out = g_cmp o_cmp
// and lse's compression column are written, sel (required) feeds
// nsa_mma_fwd_kernel. (A runtime flag: as a template flag the pruned kernel spilled.)
// mf-budget: regs<=144 smem<=20480 spill=0  (sm_90 measured: regs 134 (f32) / 130 (bf16), smem 19524; without the min-blocks hint ptxas capped it at 64 and spilled)
template <typename T>
__global__ void __launch_bounds__(kThreads, 1)
    nsa_fwd_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                   const T *__restrict__ g_cmp, const T *__restrict__ g_slc, const T *__restrict__ g_win,
                   const float *__restrict__ kc, const float *__restrict__ vc, float *__restrict__ out,
                   float *__restrict__ lse, int32_t *__restrict__ sel, NsaShape sh, size_t total,
                   int branches)
{
    __shared__ float qs[kMaxD];
    __shared__ float p_sh[kThreads];
    __shared__ float red[kThreads];
    __shared__ float ocmp[kMaxG][kMaxD]; // g_cmp * o_cmp per head of the group
    __shared__ float lse_c[kMaxG];
    __shared__ int n_list;
    __shared__ float imp[kTile];     // one tile's importances
    __shared__ float top_v[kMaxSel]; // the running top n: importances
    __shared__ int list[kMaxSel];    //   and block indices, increasing
    __shared__ unsigned char keep[kMaxSel + kTile];
    const int tid = threadIdx.x, D = (int)sh.D;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item % sh.Hk, t = (item / sh.Hk) % sh.S, b = item / (sh.Hk * sh.S);
        const size_t cand = t / sh.ls + 1; // selection blocks starting at or before t
        const size_t nvis =
            t + 1 >= sh.l ? ((t + 1 - sh.l) / sh.d + 1 < sh.nc ? (t + 1 - sh.l) / sh.d + 1 : sh.nc) : 0;
        const float *kcg = kc + (b * sh.Hk + g) * sh.nc * sh.D;
        const float *vcg = vc + (b * sh.Hk + g) * sh.nc * sh.D;
        // 1. compression branch, head by head
        for (size_t hh = 0; hh < sh.G; ++hh) {
            const size_t h = g * sh.G + hh, row = (b * sh.S + t) * sh.Hq + h;
            __syncthreads(); // qs of the previous head consumed
            if (tid < D) qs[tid] = to_f32(q[row * sh.D + tid]);
            __syncthreads();
            Online st = { -INFINITY, 0.0f, 0.0f };
            attend_range(kcg, vcg, sh.D, 0, nvis, qs, D, sh.scale, st, p_sh, red);
            const float lz = nvis > 0 ? st.m + logf(st.l) : -INFINITY;
            if (tid < D) ocmp[hh][tid] = nvis > 0 ? to_f32(g_cmp[row]) * (st.acc / st.l) : 0.0f;
            if (tid == 0) lse_c[hh] = lz;
        }
        // 2-3. importances and top n, kTile candidate blocks at a time (no limit
        // on S): a tile's importances (probabilities recomputed from the
        // compression lse, summed over the group's heads in head order), forced
        // blocks +inf, then the tile merged with the running top n (all of lower
        // index) by ranking: an entry stays iff fewer than n entries of the union
        // beat it (higher importance, or equal and lower index).
        const size_t last = t / sh.ls;
        if (tid == 0) n_list = 0;
        for (size_t i0 = 0; i0 < cand; i0 += kTile) {
            const size_t nt = cand - i0 < (size_t)kTile ? cand - i0 : (size_t)kTile;
            __syncthreads(); // the previous tile merged; n_list published
            for (size_t x = tid; x < nt; x += kThreads) imp[x] = 0.0f;
            for (size_t hh = 0; hh < sh.G && nvis > 0; ++hh) {
                const size_t row = (b * sh.S + t) * sh.Hq + g * sh.G + hh;
                __syncthreads();
                if (tid < D) qs[tid] = to_f32(q[row * sh.D + tid]);
                __syncthreads();
                const float lz = lse_c[hh];
                for (size_t x = tid; x < nt; x += kThreads) {
                    const size_t i = i0 + x;
                    // compressed blocks j overlapping [i*l', (i+1)*l'): j*d < (i+1)*l', j*d + l > i*l'
                    const size_t lo_num = i * sh.ls + 1 > sh.l ? i * sh.ls + 1 - sh.l : 0;
                    const size_t j0 = (lo_num + sh.d - 1) / sh.d;
                    size_t j1 = ((i + 1) * sh.ls - 1) / sh.d + 1;
                    if (j1 > nvis) j1 = nvis;
                    float acc = imp[x];
                    for (size_t j = j0; j < j1; ++j) {
                        const float *kr = kcg + j * sh.D;
                        float dot = 0.0f;
                        for (int c = 0; c < D; ++c) dot += qs[c] * kr[c];
                        acc += expf(dot * sh.scale - lz);
                    }
                    imp[x] = acc;
                }
            }
            for (size_t x = tid; x < nt; x += kThreads) {
                const size_t i = i0 + x;
                if (i == 0 || i == last || i + 1 == last) imp[x] = INFINITY;
            }
            __syncthreads();
            const size_t nl = (size_t)n_list, nu = nl + nt; // union: the top n, then the tile
            for (size_t u = tid; u < nu; u += kThreads) {
                const float xv = u < nl ? top_v[u] : imp[u - nl];
                size_t beat = 0;
                for (size_t u2 = 0; u2 < nu && beat < sh.n; ++u2) {
                    const float y = u2 < nl ? top_v[u2] : imp[u2 - nl];
                    beat += (y > xv || (y == xv && u2 < u)) ? 1u : 0u; // union order = index order
                }
                keep[u] = beat < sh.n ? 1 : 0;
            }
            __syncthreads();
            if (tid == 0) { // in place: entry o <= u; at most n (NaN importances beat nothing)
                int o = 0;
                for (size_t u = 0; u < nu && (size_t)o < sh.n; ++u)
                    if (keep[u]) {
                        top_v[o] = u < nl ? top_v[u] : imp[u - nl];
                        list[o] = u < nl ? list[u] : (int)(i0 + u - nl);
                        ++o;
                    }
                n_list = o;
            }
        }
        __syncthreads();
        if (tid == 0 && sel != nullptr) {
            int32_t *so = sel + ((b * sh.S + t) * sh.Hk + g) * sh.n;
            for (size_t e = 0; e < sh.n; ++e) so[e] = e < (size_t)n_list ? list[e] : -1;
        }
        __syncthreads();
        if (branches == 0) { // the tensor-core kernel adds the selected and sliding branches
            for (size_t hh = 0; hh < sh.G; ++hh) {
                const size_t row = (b * sh.S + t) * sh.Hq + g * sh.G + hh;
                if (tid < D) out[row * sh.D + tid] = ocmp[hh][tid];
                if (lse != nullptr && tid == 0) lse[row * 3 + 0] = lse_c[hh];
            }
            __syncthreads();
            continue;
        }
        // 4. selected and sliding branches over their keys only
        const T *kg = k + (b * sh.S * sh.Hk + g) * sh.D;
        const T *vg = v + (b * sh.S * sh.Hk + g) * sh.D;
        const size_t kstride = sh.Hk * sh.D;
        const size_t w0 = t + 1 > sh.w ? t + 1 - sh.w : 0;
        const int nl = n_list;
        for (size_t hh = 0; hh < sh.G; ++hh) {
            const size_t h = g * sh.G + hh, row = (b * sh.S + t) * sh.Hq + h;
            __syncthreads();
            if (tid < D) qs[tid] = to_f32(q[row * sh.D + tid]);
            __syncthreads();
            Online ss = { -INFINITY, 0.0f, 0.0f };
            for (int e = 0; e < nl; ++e) {
                const size_t i = (size_t)list[e];
                const size_t s0 = i * sh.ls;
                size_t s1 = s0 + sh.ls;
                if (s1 > t + 1) s1 = t + 1;
                attend_range(kg, vg, kstride, s0, s1, qs, D, sh.scale, ss, p_sh, red);
            }
            Online sw = { -INFINITY, 0.0f, 0.0f };
            attend_range(kg, vg, kstride, w0, t + 1, qs, D, sh.scale, sw, p_sh, red);
            if (tid < D)
                out[row * sh.D + tid] = ocmp[hh][tid] + to_f32(g_slc[row]) * (ss.acc / ss.l) +
                                        to_f32(g_win[row]) * (sw.acc / sw.l);
            if (lse != nullptr && tid == 0) {
                lse[row * 3 + 0] = lse_c[hh];
                lse[row * 3 + 1] = ss.m + logf(ss.l);
                lse[row * 3 + 2] = sw.m + logf(sw.l);
            }
        }
        __syncthreads(); // imp/list reused by the next item
    }
}

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

// ---- backward ---------------------------------------------------------------------------
// Keys [s0, s1) of one branch, probabilities recomputed from the saved lse:
// p = exp(scale q.k - lse), ds = p (do.v - delta); dk and dv (or dkc, dvc)
// accumulate through atomicAdd (several queries share a key), dq in the
// thread of column c (one chunk of ds in shared memory); returns dq updated
// (by value: a reference to the caller's register would need a stack frame).
template <typename KT>
__device__ __noinline__ float bwd_range(const KT *__restrict__ kb, const KT *__restrict__ vb, size_t stride,
                                        float *dkb, float *dvb, size_t s0, size_t s1, const float *qs,
                                        const float *dos, int D, float scale, float lse, float delta,
                                        float dq, float *ds_sh)
{
    const int tid = threadIdx.x;
    for (size_t c0 = s0; c0 < s1; c0 += kThreads) {
        const size_t s = c0 + (size_t)tid;
        float ds = 0.0f;
        if (s < s1) {
            const KT *kr = kb + s * stride;
            const KT *vr = vb + s * stride;
            float dot = 0.0f, dp = 0.0f;
            for (int c = 0; c < D; ++c) {
                dot += qs[c] * to_f32(kr[c]);
                dp += dos[c] * to_f32(vr[c]);
            }
            const float p = expf(dot * scale - lse);
            ds = p * (dp - delta) * scale;
            for (int c = 0; c < D; ++c) {
                atomicAdd(&dvb[s * stride + c], p * dos[c]);
                atomicAdd(&dkb[s * stride + c], ds * qs[c]);
            }
        }
        ds_sh[tid] = ds;
        __syncthreads();
        if (tid < D) {
            const size_t cnt = s1 - c0 < (size_t)kThreads ? s1 - c0 : (size_t)kThreads;
            float a = dq;
            for (size_t jj = 0; jj < cnt; ++jj) a += ds_sh[jj] * to_f32(kb[(c0 + jj) * stride + tid]);
            dq = a;
        }
        __syncthreads();
    }
    return dq;
}

// Keys [s0, s1) of range e of query t's selected branch (x = 1: block srow[e], cut at t;
// false at a -1) or window (x = 2: [w0, t]). The caller loops e over n ranges (x = 1) or 1.
__device__ __forceinline__ bool sw_range(int x, const int32_t *srow, size_t e, size_t ls, size_t w0, size_t t,
                                         size_t &s0, size_t &s1)
{
    s0 = w0;
    s1 = t + 1;
    if (x == 1) {
        const int32_t i = srow[e];
        if (i < 0) return false;
        s0 = (size_t)i * ls;
        s1 = s0 + ls < t + 1 ? s0 + ls : t + 1;
    }
    return true;
}

// One block per (b, t, KV group), looping over the group's heads; per branch:
// o recomputed (online, as the forward), dg = dout.o, delta = g dg, then bwd_range.
// branches = 3: all three; 1 (the bf16 tensor-core path): the compression branch
// only (it writes dq; nsa_mma_bwd_kernel adds the selected and sliding parts).
// Registers (it sits at 128 with no room): bwd_range is a real call (inlined, it
// spilled at 64 registers) and returns dq by value (a reference cost an 8-byte frame);
// the selected and window ranges share one call site of bwd_range and of attend_range;
// the item is split through bt = b S + t; and the minimum of 4 blocks states the
// 128-register target. Without all of them, ptxas picked 72-128 registers and spilled
// the bf16 instance (sm_80: a 24-byte frame, 28
// bytes stored) or used 145-162 with no minimum. sw_range with the loop's end test
// inside it (e < n and the -1 in one condition) spilled again: kernel_resources.nsa.sm_80
// and kernel_resources.nsa check both architectures.
// mf-budget: regs<=136 smem<=4096 stack<=0 spill=0  (measured: regs 128 smem 2048 stack 0 on sm_80 and sm_90, both types)
template <typename T>
__global__ void __launch_bounds__(kThreads, 4)
    nsa_bwd_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                   const T *__restrict__ g_cmp, const T *__restrict__ g_slc, const T *__restrict__ g_win,
                   const T *__restrict__ dout, const float *__restrict__ kc, const float *__restrict__ vc,
                   const float *__restrict__ lse, const int32_t *__restrict__ sel, float *__restrict__ dq,
                   float *dk, float *dv, float *dkc, float *dvc, float *__restrict__ dg_cmp,
                   float *__restrict__ dg_slc, float *__restrict__ dg_win, NsaShape sh, size_t total,
                   int branches)
{
    __shared__ float qs[kMaxD];
    __shared__ float dos[kMaxD];
    __shared__ float p_sh[kThreads];
    __shared__ float red[kThreads];
    const int tid = threadIdx.x, D = (int)sh.D;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        // item = (b S + t) Hk + g; bt = b S + t
        const size_t bt = item / sh.Hk, g = item - bt * sh.Hk, t = bt % sh.S;
        const size_t nvis =
            t + 1 >= sh.l ? ((t + 1 - sh.l) / sh.d + 1 < sh.nc ? (t + 1 - sh.l) / sh.d + 1 : sh.nc) : 0;
        const size_t koff = (item - t * sh.Hk) * sh.D, kstride = sh.Hk * sh.D; // (b S Hk + g) D
        const size_t coff = (bt / sh.S * sh.Hk + g) * sh.nc * sh.D;
        const size_t w0 = t + 1 > sh.w ? t + 1 - sh.w : 0;
        const int32_t *srow = sel + item * sh.n;
        for (size_t hh = 0; hh < sh.G; ++hh) {
            const size_t h = g * sh.G + hh, row = bt * sh.Hq + h;
            __syncthreads();
            if (tid < D) {
                qs[tid] = to_f32(q[row * sh.D + tid]);
                dos[tid] = to_f32(dout[row * sh.D + tid]);
            }
            __syncthreads();
            float dqc = 0.0f;
            for (int x = 0; x < branches; ++x) {
                const float gate = to_f32((x == 0 ? g_cmp : x == 1 ? g_slc : g_win)[row]);
                float *dgo = x == 0 ? dg_cmp : x == 1 ? dg_slc : dg_win;
                if (x == 0 && nvis == 0) {
                    if (tid == 0) dgo[row] = 0.0f;
                    continue;
                }
                // o of the branch
                Online st = { -INFINITY, 0.0f, 0.0f };
                if (x == 0) {
                    attend_range(kc + coff, vc + coff, sh.D, 0, nvis, qs, D, sh.scale, st, p_sh, red);
                } else { // the selected blocks (x = 1) or the window (x = 2): one call site
                    for (size_t e = 0; e < (x == 1 ? sh.n : 1); ++e) {
                        size_t s0, s1;
                        if (!sw_range(x, srow, e, sh.ls, w0, t, s0, s1)) break;
                        attend_range(k + koff, v + koff, kstride, s0, s1, qs, D, sh.scale, st, p_sh, red);
                    }
                }
                const float o = tid < D ? st.acc / st.l : 0.0f;
                const float dg = block_sum_n<kThreads>(tid < D ? dos[tid] * o : 0.0f, red);
                if (tid == 0) dgo[row] = dg;
                // dos scaled by the gate for this branch
                __syncthreads();
                if (tid < D) dos[tid] *= gate;
                __syncthreads();
                const float delta = gate * dg;
                const float lz = lse[row * 3 + (size_t)x];
                if (x == 0) {
                    dqc = bwd_range(kc + coff, vc + coff, sh.D, dkc + coff, dvc + coff, 0, nvis, qs, dos, D,
                                    sh.scale, lz, delta, dqc, p_sh);
                } else { // the selected blocks (x = 1) or the window (x = 2): one call site
                    for (size_t e = 0; e < (x == 1 ? sh.n : 1); ++e) {
                        size_t s0, s1;
                        if (!sw_range(x, srow, e, sh.ls, w0, t, s0, s1)) break;
                        dqc = bwd_range(k + koff, v + koff, kstride, dk + koff, dv + koff, s0, s1, qs, dos, D,
                                        sh.scale, lz, delta, dqc, p_sh);
                    }
                }
                __syncthreads();
                if (tid < D) dos[tid] = to_f32(dout[row * sh.D + tid]);
                __syncthreads();
            }
            if (tid < D) dq[row * sh.D + tid] = dqc;
        }
    }
}

// The mean pooling's backward: dk[s] += sum over the compressed blocks j that
// contain s of dkc[j] / l (after nsa_bwd_kernel, same stream), dv likewise.
// mf-budget: regs<=40 smem<=0 spill=0
__global__ void __launch_bounds__(256)
    nsa_unpool_kernel(const float *__restrict__ dkc, const float *__restrict__ dvc, float *__restrict__ dk,
                      float *__restrict__ dv, NsaShape sh, size_t total)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const size_t c = e % sh.D, g = (e / sh.D) % sh.Hk, s = (e / (sh.D * sh.Hk)) % sh.S;
        const size_t b = e / (sh.D * sh.Hk * sh.S);
        const size_t j0 = s + 1 > sh.l ? (s + 1 - sh.l + sh.d - 1) / sh.d : 0;
        size_t j1 = s / sh.d + 1;
        if (j1 > sh.nc) j1 = sh.nc;
        float ak = 0.0f, av = 0.0f;
        for (size_t j = j0; j < j1; ++j) {
            const size_t at = ((b * sh.Hk + g) * sh.nc + j) * sh.D + c;
            ak += dkc[at];
            av += dvc[at];
        }
        dk[e] += ak / (float)sh.l;
        dv[e] += av / (float)sh.l;
    }
}

static bool mma_eligible(const NsaShape &sh, const void *q, const void *k, const void *v);

template <int D>
static mf_status launch_mma_bwd(cudaStream_t stream, const NsaShape &sh, const void *q, const void *k,
                                const void *v, const void *gs, const void *gw, const void *dout,
                                const float *lse, const int32_t *sel, float *dq, float *dk, float *dv,
                                float *dgs, float *dgw)
{
    const __nv_bfloat16 *q16 = static_cast<const __nv_bfloat16 *>(q),
                        *k16 = static_cast<const __nv_bfloat16 *>(k),
                        *v16 = static_cast<const __nv_bfloat16 *>(v),
                        *gs16 = static_cast<const __nv_bfloat16 *>(gs),
                        *gw16 = static_cast<const __nv_bfloat16 *>(gw),
                        *do16 = static_cast<const __nv_bfloat16 *>(dout);
    // query-blocked: 64-row CTAs (b, KV group, QT tokens), as nsa_mma_fwd_kernel's at G <= 2
    const size_t QT = nsa_sw::tokens_per_cta<nsa_sw::kWarps>(sh);
    const size_t nblk = (sh.S + QT - 1) / QT, items = sh.B * sh.Hk * nblk;
    constexpr size_t smem = nsa_sw::bwd_smem_bytes<D>();
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(nsa_mma_bwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    nsa_mma_bwd_kernel<D><<<grid_cap(items, kMaxGridX), nsa_sw::kThreadsS, smem, stream>>>(
        q16, k16, v16, gs16, gw16, do16, lse, sel, dq, dk, dv, dgs, dgw, sh, QT, nblk, items);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// Compression branch's backward on the tensor cores (bf16, D <= 64): the CTAs of
// nsa_mma_cmp_kernel (b, KV group, QT tokens).
template <int D>
static void launch_cmp_bwd(cudaStream_t stream, const NsaShape &sh, const void *q, const void *gc,
                           const void *dout, const __nv_bfloat16 *kc, const __nv_bfloat16 *vc,
                           const float *lse, float *dq, float *dkc, float *dvc, float *dgc)
{
    constexpr int W = nsa_cmp::kBwdWarps;
    const size_t QT = nsa_cmp::tokens_per_cta<W>(sh);
    const size_t nblk = (sh.S + QT - 1) / QT, total = sh.B * sh.Hk * nblk;
    nsa_mma_cmp_bwd_kernel<D><<<grid_cap(total, kMaxGridX), nsa_cmp::Cta<W>::kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(gc),
        static_cast<const __nv_bfloat16 *>(dout), kc, vc, lse, dq, dkc, dvc, dgc, sh, QT, nblk, total);
}

// kc, vc pooled from k, v: bf16 (kcb, vcb; the tensor-core compression
// kernels, bf16 storage only) or fp32 (kc, vc). ncd = B Hk nc D > 0.
template <typename T>
static void launch_pool(cudaStream_t stream, const NsaShape &sh, const void *k, const void *v,
                        __nv_bfloat16 *kcb, __nv_bfloat16 *vcb, float *kc, float *vc, size_t ncd)
{
    const T *kt = static_cast<const T *>(k), *vt = static_cast<const T *>(v);
    if constexpr (sizeof(T) == 2) { // no <float, bf16> instance: f32 storage never takes the bf16 path
        if (kcb != nullptr) {
            nsa_pool_kernel<T, __nv_bfloat16>
                <<<grid_blocks(ncd, 256, kMaxGridX), 256, 0, stream>>>(kt, vt, kcb, vcb, sh, ncd);
            return;
        }
    }
    nsa_pool_kernel<T, float><<<grid_blocks(ncd, 256, kMaxGridX), 256, 0, stream>>>(kt, vt, kc, vc, sh, ncd);
}

template <typename T>
static mf_status launch_backward(mf_context *ctx, const NsaShape &sh, const void *q, const void *k,
                                 const void *v, const void *gc, const void *gs, const void *gw,
                                 const void *dout, const float *lse, const int32_t *sel, float *dq, float *dk,
                                 float *dv, float *dgc, float *dgs, float *dgw)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    Scratch scr(ctx);
    float *kc = nullptr, *vc = nullptr, *dkc = nullptr, *dvc = nullptr;
    __nv_bfloat16 *kcb = nullptr, *vcb = nullptr; // bf16 kc, vc of the tensor-core compression kernel
    const size_t ncd = sh.B * sh.Hk * sh.nc * sh.D, nkv = sh.B * sh.S * sh.Hk * sh.D;
    const size_t total = sh.B * sh.S * sh.Hk;
    const bool mma = sizeof(T) == 2 && mma_eligible(sh, q, k, v) && ((uintptr_t)dout & 15u) == 0;
    const bool mma_cmp = mma && sh.D <= 64;
    MF_CUDA_CHECK(cudaMemsetAsync(dk, 0, nkv * sizeof(float), stream));
    MF_CUDA_CHECK(cudaMemsetAsync(dv, 0, nkv * sizeof(float), stream));
    if (ncd > 0) { // dkc, dvc (fp32), then kc, vc (bf16 for the tensor-core kernel, else fp32)
        mf_status st =
            mf_scratch_alloc(ctx, MF_MEM_DEVICE, 2 * ncd * (sizeof(float) + (mma_cmp ? 2 : 4)), &scr.ptr);
        if (st != MF_OK) return st;
        dkc = static_cast<float *>(scr.ptr);
        dvc = dkc + ncd;
        MF_CUDA_CHECK(cudaMemsetAsync(dkc, 0, 2 * ncd * sizeof(float), stream));
        if (mma_cmp) {
            kcb = reinterpret_cast<__nv_bfloat16 *>(dvc + ncd);
            vcb = kcb + ncd;
        } else {
            kc = dvc + ncd;
            vc = kc + ncd;
        }
        launch_pool<T>(stream, sh, k, v, kcb, vcb, kc, vc, ncd);
        MF_LAUNCH_CHECK();
    }
    if (mma_cmp) { // the compression branch on the tensor cores (it writes dq and dg_cmp)
        switch (sh.D) {
        case 16: launch_cmp_bwd<16>(stream, sh, q, gc, dout, kcb, vcb, lse, dq, dkc, dvc, dgc); break;
        case 32: launch_cmp_bwd<32>(stream, sh, q, gc, dout, kcb, vcb, lse, dq, dkc, dvc, dgc); break;
        default: launch_cmp_bwd<64>(stream, sh, q, gc, dout, kcb, vcb, lse, dq, dkc, dvc, dgc); break;
        }
    } else { // SIMT: all three branches, or (bf16, D = 128) the compression branch only
        nsa_bwd_kernel<T><<<grid_cap(total, kMaxGridX), kThreads, 0, stream>>>(
            static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
            static_cast<const T *>(gc), static_cast<const T *>(gs), static_cast<const T *>(gw),
            static_cast<const T *>(dout), kc, vc, lse, sel, dq, dk, dv, dkc, dvc, dgc, dgs, dgw, sh, total,
            mma ? 1 : 3);
    }
    MF_LAUNCH_CHECK();
    if (mma) { // the selected and sliding branches on the tensor cores (same stream: dq written)
        mf_status st;
        switch (sh.D) {
        case 16:
            st = launch_mma_bwd<16>(stream, sh, q, k, v, gs, gw, dout, lse, sel, dq, dk, dv, dgs, dgw);
            break;
        case 32:
            st = launch_mma_bwd<32>(stream, sh, q, k, v, gs, gw, dout, lse, sel, dq, dk, dv, dgs, dgw);
            break;
        case 64:
            st = launch_mma_bwd<64>(stream, sh, q, k, v, gs, gw, dout, lse, sel, dq, dk, dv, dgs, dgw);
            break;
        default:
            st = launch_mma_bwd<128>(stream, sh, q, k, v, gs, gw, dout, lse, sel, dq, dk, dv, dgs, dgw);
            break;
        }
        if (st != MF_OK) return st;
    }
    if (ncd > 0) {
        nsa_unpool_kernel<<<grid_blocks(nkv, 256, kMaxGridX), 256, 0, stream>>>(dkc, dvc, dk, dv, sh, nkv);
        MF_LAUNCH_CHECK();
    }
    return MF_OK;
}

// ---- launcher -----------------------------------------------------------------------
// The bf16 tensor-core path applies to D in {16, 32, 64, 128} with 16-byte
// aligned q, k, v (cp.async chunks); anything else runs the SIMT kernel.
static bool mma_eligible(const NsaShape &sh, const void *q, const void *k, const void *v)
{
    const bool dim = sh.D == 16 || sh.D == 32 || sh.D == 64 || sh.D == 128;
    return dim && (((uintptr_t)q | (uintptr_t)k | (uintptr_t)v) & 15u) == 0;
}

// The selected and sliding branches on the tensor cores: one CTA of WARPS
// warps per (b, KV group, QT tokens), QT * G <= 16 WARPS rows.
// WG: nsa_wg_fwd_kernel (wgmma), else nsa_mma_fwd_kernel; same grid and arguments.
template <int D, int WARPS, bool WG = false>
static mf_status launch_mma_warps(cudaStream_t stream, const NsaShape &sh, const void *q, const void *k,
                                  const void *v, const void *gs, const void *gw, const int32_t *sel,
                                  float *out, float *lse)
{
    const size_t QT = nsa_sw::tokens_per_cta<WARPS>(sh);
    const size_t nblk = (sh.S + QT - 1) / QT, total = sh.B * sh.Hk * nblk;
    constexpr size_t smem = WG ? nsa_wg::fwd_smem_bytes<D, WARPS>() : nsa_sw::fwd_smem_bytes<D, WARPS>();
    const auto kernel = WG ? nsa_wg_fwd_kernel<D, WARPS> : nsa_mma_fwd_kernel<D, WARPS>;
    MF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel<<<grid_cap(total, kMaxGridX), 32 * WARPS, smem, stream>>>(
        static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(k),
        static_cast<const __nv_bfloat16 *>(v), static_cast<const __nv_bfloat16 *>(gs),
        static_cast<const __nv_bfloat16 *>(gw), sel, out, lse, sh, QT, nblk, total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// 128-row CTAs at G >= 3, 64-row ones at G <= 2 (nsa_sw::fwd_warps); wg
// (MF_NSA_MMA_PATH): on wgmma (nsa_wg_fwd_kernel: two warpgroups, or one).
template <int D>
static mf_status launch_mma(cudaStream_t stream, const NsaShape &sh, bool wg, const void *q, const void *k,
                            const void *v, const void *gs, const void *gw, const int32_t *sel, float *out,
                            float *lse)
{
    if (wg && nsa_sw::fwd_warps(sh) == nsa_sw::kFwdWarps)
        return launch_mma_warps<D, nsa_sw::kFwdWarps, true>(stream, sh, q, k, v, gs, gw, sel, out, lse);
    if (wg) return launch_mma_warps<D, nsa_sw::kWarps, true>(stream, sh, q, k, v, gs, gw, sel, out, lse);
    if (nsa_sw::fwd_warps(sh) == nsa_sw::kFwdWarps)
        return launch_mma_warps<D, nsa_sw::kFwdWarps>(stream, sh, q, k, v, gs, gw, sel, out, lse);
    return launch_mma_warps<D, nsa_sw::kWarps>(stream, sh, q, k, v, gs, gw, sel, out, lse);
}

// Compression branch and selection on the tensor cores (bf16, D <= 64): one
// CTA of 8 warps per (b, KV group, QT tokens), QT * G <= 128 rows; dynamic
// shared memory (FwdSmem: 55.8 KB at D = 64).
template <int D>
static mf_status launch_cmp(cudaStream_t stream, const NsaShape &sh, bool wg, const void *q, const void *gc,
                            const __nv_bfloat16 *kc, const __nv_bfloat16 *vc, float *out, float *lse,
                            int32_t *sel, const float *kmax, unsigned long long *flags,
                            unsigned long long *nflag, int flag_all)
{
    constexpr int W = nsa_cmp::kFwdWarps;
    const size_t QT = nsa_cmp::tokens_per_cta<W>(sh);
    const size_t nblk = (sh.S + QT - 1) / QT, total = sh.B * sh.Hk * nblk;
    if (wg) { // MF_NSA_MMA_PATH: the same grid and CTAs on wgmma (sm_90a)
        constexpr size_t wsmem = sizeof(nsa_wgc::FwdSmem<D>);
        MF_CUDA_CHECK(cudaFuncSetAttribute(nsa_wg_cmp_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)wsmem));
        nsa_wg_cmp_kernel<D><<<grid_cap(total, kMaxGridX), nsa_wgc::kThreadsW, wsmem, stream>>>(
            static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(gc), kc, vc, out, lse,
            sel, kmax, flags, nflag, flag_all, sh, QT, nblk, total);
        MF_LAUNCH_CHECK();
        return MF_OK;
    }
    constexpr size_t smem = sizeof(nsa_cmp::FwdSmem<D, W>);
    MF_CUDA_CHECK(cudaFuncSetAttribute(nsa_mma_cmp_kernel<D, W>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)smem));
    nsa_mma_cmp_kernel<D, W><<<grid_cap(total, kMaxGridX), nsa_cmp::Cta<W>::kThreads, smem, stream>>>(
        static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(gc), kc, vc, out, lse, sel,
        kmax, flags, nflag, flag_all, sh, QT, nblk, total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// MF_NSA_RECHECK=all (a testing aid): nsa_mma_cmp_kernel lists every token, so
// that nsa_recheck_kernel ranks them all in double. Unset or empty: only the
// tokens whose selection is not certified. Anything else is an error.
static mf_status recheck_all(bool *all)
{
    const char *env = getenv("MF_NSA_RECHECK");
    *all = env != nullptr && strcmp(env, "all") == 0;
    if (env != nullptr && *env != '\0' && !*all)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                            "MF_NSA_RECHECK=%s is not 'all' (or unset)", env);
    return MF_OK;
}

// ---- the wgmma path (sm_90a) ----------------------------------------------------------
// MF_NSA_MMA_PATH=auto|sync|wgmma picks the bf16 forward's tensor-core kernels: auto (the
// default, unset or empty) takes the wgmma kernels on a cc 9.0 GPU running this file's
// sm_90a code and mma.sync elsewhere, host mode included (the portable path); wgmma forces
// them (host mode emulates them; on a GPU without them: MF_ERR_BACKEND_UNAVAILABLE);
// anything else is MF_ERR_INVALID_ARGUMENT. mf_wgmma.cuh, wg_pick.
#if !defined(__CUDAHOST__)
// Set by the probe kernel from the code the driver actually loaded for the device.
__device__ int nsa_wgmma_code_present;
// mf-budget: regs<=16 smem<=0 spill=0  (one thread)
__global__ void nsa_wgmma_probe_kernel()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    nsa_wgmma_code_present = 1;
#else
    nsa_wgmma_code_present = 0;
#endif
}
#endif
#if !defined(__CUDAHOST__) && defined(MF_HAVE_SM90A)
static mf_status nsa_wgmma_probe(int *present)
{
    nsa_wgmma_probe_kernel<<<1, 1>>>();
    MF_LAUNCH_CHECK();
    MF_CUDA_CHECK(cudaMemcpyFromSymbol(present, nsa_wgmma_code_present, sizeof(int)));
    return MF_OK;
}
#else
// host mode: wg_available answers from the modelled device; no sm_90a code: never
static constexpr mf_wg_probe_fn nsa_wgmma_probe = nullptr;
#endif
static std::atomic<int> nsa_wgmma_cache[64];

extern "C" mf_status MF_FN(nsa_wgmma_available)(mf_context *ctx, int *available)
{
    bool yes = false;
    MF_TRY(wg_available((cudaStream_t)mf_context_stream(ctx), nsa_wgmma_cache, nsa_wgmma_probe, &yes));
    *available = yes ? 1 : 0;
    return MF_OK;
}

static mf_status pick_wgmma(cudaStream_t stream, bool *wg)
{
    return wg_pick(stream, 0, "MF_NSA_MMA_PATH", "MF_NSA_MMA_PATH", nsa_wgmma_cache, nsa_wgmma_probe, wg);
}

template <typename T>
static mf_status launch_forward(mf_context *ctx, const NsaShape &sh, const void *q, const void *k,
                                const void *v, const void *gc, const void *gs, const void *gw, float *out,
                                float *lse, int32_t *sel)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const bool mma = sizeof(T) == 2 && mma_eligible(sh, q, k, v);
    bool wg = false; // the bf16 tensor-core kernels on wgmma (MF_NSA_MMA_PATH)
    if (mma) MF_TRY(pick_wgmma(stream, &wg));
    Scratch scr(ctx);
    float *kc = nullptr, *vc = nullptr, *kmax = nullptr;
    __nv_bfloat16 *kcb = nullptr, *vcb = nullptr; // bf16 kc, vc of the tensor-core compression kernel
    unsigned long long *flags = nullptr, *nflag = nullptr;
    const size_t ncd = sh.B * sh.Hk * sh.nc * sh.D;
    const size_t total = sh.B * sh.S * sh.Hk;
    const bool mma_cmp = mma && sh.D <= 64 && sh.n <= (size_t)nsa_cmp::kCmpMaxSel;
    bool flag_all = false;
    if (mma_cmp) MF_TRY(recheck_all(&flag_all));
    // The tensor-core kernel reads the selection: the caller's sel, or scratch.
    const size_t sel_bytes = mma && sel == nullptr ? total * sh.n * sizeof(int32_t) : 0;
    // The compression kernel's certificate (with a compressed block): the list of
    // tokens to rank again (8 bytes each, at most all), its count, max |kc| per (b, g).
    const bool cert = mma_cmp && ncd > 0;
    const size_t cert_bytes = cert ? total * 8 + 8 + sh.B * sh.Hk * sizeof(float) : 0;
    flag_all = flag_all && cert; // no compressed block: every importance is exactly 0, nothing to rank again
    // kc, vc: bf16 for the tensor-core compression kernel (the spec's values), else fp32
    const size_t kc_bytes = 2 * ncd * (mma_cmp ? sizeof(__nv_bfloat16) : sizeof(float));
    if (ncd > 0 || sel_bytes > 0) {
        mf_status st = mf_scratch_alloc(ctx, MF_MEM_DEVICE, kc_bytes + cert_bytes + sel_bytes, &scr.ptr);
        if (st != MF_OK) return st;
        if (mma_cmp) {
            kcb = static_cast<__nv_bfloat16 *>(scr.ptr);
            vcb = kcb + ncd;
        } else {
            kc = static_cast<float *>(scr.ptr);
            vc = kc + ncd;
        }
        unsigned char *at = static_cast<unsigned char *>(scr.ptr) + kc_bytes; // 8-byte aligned: D % 16 == 0
        if (cert) {
            flags = reinterpret_cast<unsigned long long *>(at);
            nflag = flags + total;
            kmax = reinterpret_cast<float *>(nflag + 1);
            at = reinterpret_cast<unsigned char *>(kmax + sh.B * sh.Hk);
        }
        if (sel_bytes > 0) sel = reinterpret_cast<int32_t *>(at);
    }
    if (ncd > 0) {
        launch_pool<T>(stream, sh, k, v, kcb, vcb, kc, vc, ncd);
        MF_LAUNCH_CHECK();
    }
    if (!mma) {
        nsa_fwd_kernel<T><<<grid_cap(total, kMaxGridX), kThreads, 0, stream>>>(
            static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
            static_cast<const T *>(gc), static_cast<const T *>(gs), static_cast<const T *>(gw), kc, vc, out,
            lse, sel, sh, total, 1);
        MF_LAUNCH_CHECK();
        return MF_OK;
    }
    // bf16: compression and selection (on the tensor cores for D <= 64 and
    // n <= nsa_cmp::kCmpMaxSel, else SIMT), then the selected and sliding
    // branches on the tensor cores (same stream: out and sel are ready).
    if (mma_cmp) {
        if (cert) {
            nsa_kmax_kernel<<<grid_cap(sh.B * sh.Hk, kMaxGridX), kThreads, 0, stream>>>(kcb, kmax, sh);
            MF_LAUNCH_CHECK();
            MF_CUDA_CHECK(cudaMemsetAsync(nflag, 0, sizeof(*nflag), stream));
        }
        switch (sh.D) {
        case 16:
            MF_TRY(
                launch_cmp<16>(stream, sh, wg, q, gc, kcb, vcb, out, lse, sel, kmax, flags, nflag, flag_all));
            break;
        case 32:
            MF_TRY(
                launch_cmp<32>(stream, sh, wg, q, gc, kcb, vcb, out, lse, sel, kmax, flags, nflag, flag_all));
            break;
        default:
            MF_TRY(
                launch_cmp<64>(stream, sh, wg, q, gc, kcb, vcb, out, lse, sel, kmax, flags, nflag, flag_all));
            break;
        }
        if (cert) { // the listed tokens ranked again in double (the count stays on the device)
            nsa_recheck_kernel<<<grid_cap(total, 256), kThreads, 0, stream>>>(
                static_cast<const __nv_bfloat16 *>(q), kcb, sel, flags, nflag, sh);
        }
    } else {
        nsa_fwd_kernel<T><<<grid_cap(total, kMaxGridX), kThreads, 0, stream>>>(
            static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
            static_cast<const T *>(gc), static_cast<const T *>(gs), static_cast<const T *>(gw), kc, vc, out,
            lse, sel, sh, total, 0);
    }
    MF_LAUNCH_CHECK();
    switch (sh.D) {
    case 16: return launch_mma<16>(stream, sh, wg, q, k, v, gs, gw, sel, out, lse);
    case 32: return launch_mma<32>(stream, sh, wg, q, k, v, gs, gw, sel, out, lse);
    case 64: return launch_mma<64>(stream, sh, wg, q, k, v, gs, gw, sel, out, lse);
    default: return launch_mma<128>(stream, sh, wg, q, k, v, gs, gw, sel, out, lse);
    }
}

} // namespace MF_NS

// ---- exported entry point (called by src/ops/nsa.c after validation) ---------------------
extern "C" {

static MF_NS::NsaShape nsa_shape(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk,
                                 int64_t D)
{
    MF_NS::NsaShape sh;
    sh.B = (size_t)B;
    sh.S = (size_t)S;
    sh.Hq = (size_t)Hq;
    sh.Hk = (size_t)Hk;
    sh.D = (size_t)D;
    sh.G = sh.Hq / sh.Hk;
    sh.nc = (size_t)mf_nsa_n_compressed(cfg, S);
    sh.nb = (size_t)mf_nsa_n_selection(cfg, S);
    sh.l = (size_t)cfg->block_cmp;
    sh.d = (size_t)cfg->stride;
    sh.ls = (size_t)cfg->block_sel;
    sh.n = (size_t)cfg->n_sel;
    sh.w = (size_t)cfg->window;
    sh.carry = sh.l > sh.d ? (sh.l - sh.d - 1) / sh.ls + 1 : 0;
    sh.scale = cfg->scale > 0.0f ? cfg->scale : (float)(1.0 / std::sqrt((double)D));
    sh.scale_ref = cfg->scale > 0.0f ? (double)cfg->scale : 1.0 / std::sqrt((double)D);
    return sh;
}

MF_API mf_status MF_FN(nsa_fused_forward)(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                                          int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                                          const void *q, const void *k, const void *v, const void *g_cmp,
                                          const void *g_slc, const void *g_win, float *out, float *lse,
                                          int32_t *sel)
{
    const MF_NS::NsaShape sh = nsa_shape(cfg, B, S, Hq, Hk, D);
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_forward<__nv_bfloat16>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, out, lse, sel);
    return MF_NS::launch_forward<float>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, out, lse, sel);
}

MF_API mf_status MF_FN(nsa_fused_backward)(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                                           int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                                           const void *q, const void *k, const void *v, const void *g_cmp,
                                           const void *g_slc, const void *g_win, const void *dout,
                                           const float *lse, const int32_t *sel, float *dq, float *dk,
                                           float *dv, float *dg_cmp, float *dg_slc, float *dg_win)
{
    const MF_NS::NsaShape sh = nsa_shape(cfg, B, S, Hq, Hk, D);
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_backward<__nv_bfloat16>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, dout, lse, sel,
                                                     dq, dk, dv, dg_cmp, dg_slc, dg_win);
    return MF_NS::launch_backward<float>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, dout, lse, sel, dq, dk, dv,
                                         dg_cmp, dg_slc, dg_win);
}

} // extern "C"
