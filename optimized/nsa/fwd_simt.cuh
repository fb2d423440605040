// NSA forward on the SIMT cores: the online-softmax helpers and nsa_fwd_kernel (every
// branch for f32 storage and for bf16 off the tensor-core path; for bf16 with the
// selected and sliding branches on the tensor cores, the compression branch and the
// selection when the tensor-core compression kernel does not apply).
#pragma once

#include "common.cuh"

namespace MF_NS {

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

} // namespace MF_NS
