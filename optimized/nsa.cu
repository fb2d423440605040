// Optimized native sparse attention: the three NSA branches fused, without
// score matrices or gathered keys (include/memfix/nsa.h has the math).
//
// Seed document 001_8c71c68d431e0a4d.txt: the NSA model's selected branch was
// "standard SDPA with block gathering" and its O(S^2) attention elements per
// head ran sequence 4096 out of memory. Here no score row is ever stored:
//   nsa_pool_kernel  compressed k and v (mean over [j*d, j*d+l)), fp32, the only
//                    device scratch: 8*B*Hk*nc*D bytes
//   nsa_fwd_kernel   one block (kThreads) per (b, t, KV group), looping over the
//                    group's heads:
//     1. compression: online softmax over the visible compressed keys, in
//        chunks of kThreads scores (one chunk of probabilities in shared memory);
//     2. block importances of t: one thread per candidate selection block,
//        recomputing the probabilities of its overlapping compressed blocks
//        from the compression lse (nb floats of dynamic shared memory), summed
//        over the group's heads;
//     3. top n by parallel ranking (i is selected iff fewer than n candidates
//        beat it; forced blocks have +inf; ties to the lower index);
//     4. the selected blocks' tokens <= t and the window (t-w, t]: online
//        softmax over those keys only, chunk by chunk.
// Backward (nsa_bwd_kernel, same grid): per branch, o recomputed, then
// p = exp(scale q.k - lse) from the forward's saved lse over the same keys
// (the saved sel), ds = p (g dout.v - g dout.o); dq in registers, dk/dv and
// the compressed dkc/dvc by atomicAdd; nsa_unpool_kernel spreads dkc/dvc back
// through the mean pooling. Scratch: kc, vc, dkc, dvc.
// SIMT first version: no tensor cores (mma.sync) yet. Each block loops over
// its work items with a stride of gridDim.x; loop bounds depend on blockIdx
// and kernel arguments only, so every thread reaches every __syncthreads.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "nsa.cuh"

#include <cuda_bf16.h>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace MF_NS {

constexpr int kThreads = 128;
constexpr int kMaxD = MF_NSA_MAX_HEAD_DIM;
constexpr int kMaxG = MF_NSA_MAX_GROUP;
static_assert(kMaxD <= kThreads, "one thread per output column");

struct NsaShape {
    size_t B, S, Hq, Hk, D, G, nc, nb;
    size_t l, d, ls, n, w;
    float scale;
};

// ---- pooling: kc[b][g][j][c] = mean_{s in [j*d, j*d+l)} k[b][s][g][c] ----------
// mf-budget: regs<=40 smem<=0 spill=0
template <typename T>
__global__ void __launch_bounds__(256)
nsa_pool_kernel(const T *__restrict__ k, const T *__restrict__ v, float *__restrict__ kc,
                float *__restrict__ vc, NsaShape sh, size_t total) {
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const size_t c = e % sh.D, j = (e / sh.D) % sh.nc, g = (e / (sh.D * sh.nc)) % sh.Hk;
        const size_t b = e / (sh.D * sh.nc * sh.Hk);
        float sk = 0.0f, sv = 0.0f;
        for (size_t s = j * sh.d; s < j * sh.d + sh.l; ++s) {
            const size_t at = ((b * sh.S + s) * sh.Hk + g) * sh.D + c;
            sk += to_f32(k[at]);
            sv += to_f32(v[at]);
        }
        kc[e] = sk / (float)sh.l;
        vc[e] = sv / (float)sh.l;
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
__device__ __forceinline__ void attend_range(const KT *__restrict__ kb, const KT *__restrict__ vb, size_t stride,
                             size_t s0, size_t s1, const float *qs, int D, float scale, Online &st,
                             float *p_sh, float *red) {
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
        const float ps = block_sum_n<kThreads>(p, red);  // its barriers publish p_sh
        st.l = st.l * alpha + ps;
        st.m = mnew;
        if (tid < D) {
            const size_t cnt = s1 - c0 < (size_t)kThreads ? s1 - c0 : (size_t)kThreads;
            float a = st.acc * alpha;
            for (size_t jj = 0; jj < cnt; ++jj) a += p_sh[jj] * to_f32(vb[(c0 + jj) * stride + tid]);
            st.acc = a;
        }
        __syncthreads();  // p_sh consumed before the next chunk
    }
}


// ---- fused forward ------------------------------------------------------------------
// mf-budget: regs<=96 smem<=10240 spill=0  (sm_90 measured: regs 72 smem 9808)
template <typename T>
__global__ void __launch_bounds__(kThreads)
nsa_fwd_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
               const T *__restrict__ g_cmp, const T *__restrict__ g_slc, const T *__restrict__ g_win,
               const float *__restrict__ kc, const float *__restrict__ vc, float *__restrict__ out,
               float *__restrict__ lse, int32_t *__restrict__ sel, NsaShape sh, size_t total) {
    __shared__ float qs[kMaxD];
    __shared__ float p_sh[kThreads];
    __shared__ float red[kThreads];
    __shared__ float ocmp[kMaxG][kMaxD];  // g_cmp * o_cmp per head of the group
    __shared__ float lse_c[kMaxG];
    __shared__ int n_list;
    extern __shared__ float dyn[];        // imp[nb], then list[nb] (int)
    float *imp = dyn;
    int *list = reinterpret_cast<int *>(dyn + sh.nb);
    const int tid = threadIdx.x, D = (int)sh.D;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item % sh.Hk, t = (item / sh.Hk) % sh.S, b = item / (sh.Hk * sh.S);
        const size_t cand = t / sh.ls + 1;  // selection blocks starting at or before t
        const size_t nvis = t + 1 >= sh.l ? ((t + 1 - sh.l) / sh.d + 1 < sh.nc ? (t + 1 - sh.l) / sh.d + 1 : sh.nc)
                                          : 0;
        for (size_t i = tid; i < cand; i += kThreads) imp[i] = 0.0f;
        const float *kcg = kc + (b * sh.Hk + g) * sh.nc * sh.D;
        const float *vcg = vc + (b * sh.Hk + g) * sh.nc * sh.D;
        // 1-2. compression branch and the importances, head by head
        for (size_t hh = 0; hh < sh.G; ++hh) {
            const size_t h = g * sh.G + hh, row = (b * sh.S + t) * sh.Hq + h;
            __syncthreads();  // qs of the previous head consumed
            if (tid < D) qs[tid] = to_f32(q[row * sh.D + tid]);
            __syncthreads();
            Online st = {-INFINITY, 0.0f, 0.0f};
            attend_range(kcg, vcg, sh.D, 0, nvis, qs, D, sh.scale, st, p_sh, red);
            const float lz = nvis > 0 ? st.m + logf(st.l) : -INFINITY;
            if (tid < D) ocmp[hh][tid] = nvis > 0 ? to_f32(g_cmp[row]) * (st.acc / st.l) : 0.0f;
            if (tid == 0) lse_c[hh] = lz;
            if (nvis > 0)
                for (size_t i = tid; i < cand; i += kThreads) {
                    // compressed blocks j overlapping [i*l', (i+1)*l'): j*d < (i+1)*l', j*d + l > i*l'
                    const size_t lo_num = i * sh.ls + 1 > sh.l ? i * sh.ls + 1 - sh.l : 0;
                    const size_t j0 = (lo_num + sh.d - 1) / sh.d;
                    size_t j1 = ((i + 1) * sh.ls - 1) / sh.d + 1;
                    if (j1 > nvis) j1 = nvis;
                    float acc = imp[i];
                    for (size_t j = j0; j < j1; ++j) {
                        const float *kr = kcg + j * sh.D;
                        float dot = 0.0f;
                        for (int c = 0; c < D; ++c) dot += qs[c] * kr[c];
                        acc += expf(dot * sh.scale - lz);
                    }
                    imp[i] = acc;
                }
        }
        __syncthreads();
        // 3. top n among the candidates: forced blocks first, then by importance
        const size_t last = t / sh.ls;
        for (size_t i = tid; i < cand; i += kThreads)
            if (i == 0 || i == last || i + 1 == last) imp[i] = INFINITY;
        __syncthreads();
        for (size_t i = tid; i < cand; i += kThreads) {
            size_t beat = 0;
            const float x = imp[i];
            for (size_t i2 = 0; i2 < cand && beat < sh.n; ++i2) {
                const float y = imp[i2];
                beat += (y > x || (y == x && i2 < i)) ? 1u : 0u;
            }
            list[i] = beat < sh.n ? 1 : 0;
        }
        __syncthreads();
        if (tid == 0) {
            int o = 0;
            for (size_t i = 0; i < cand; ++i)
                if (list[i]) list[o++] = (int)i;
            n_list = o;
            if (sel != nullptr) {
                int32_t *so = sel + ((b * sh.S + t) * sh.Hk + g) * sh.n;
                for (size_t e = 0; e < sh.n; ++e) so[e] = e < (size_t)o ? list[e] : -1;
            }
        }
        __syncthreads();
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
            Online ss = {-INFINITY, 0.0f, 0.0f};
            for (int e = 0; e < nl; ++e) {
                const size_t i = (size_t)list[e];
                const size_t s0 = i * sh.ls;
                size_t s1 = s0 + sh.ls;
                if (s1 > t + 1) s1 = t + 1;
                attend_range(kg, vg, kstride, s0, s1, qs, D, sh.scale, ss, p_sh, red);
            }
            Online sw = {-INFINITY, 0.0f, 0.0f};
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
        __syncthreads();  // imp/list reused by the next item
    }
}

// ---- backward ---------------------------------------------------------------------------
// Keys [s0, s1) of one branch, probabilities recomputed from the saved lse:
// p = exp(scale q.k - lse), ds = p (do.v - delta); dk and dv (or dkc, dvc)
// accumulate through atomicAdd (several queries share a key), dq in the
// thread of column c (one chunk of ds in shared memory).
template <typename KT>
__device__ __noinline__ void bwd_range(const KT *__restrict__ kb, const KT *__restrict__ vb, size_t stride,
                          float *dkb, float *dvb, size_t s0, size_t s1, const float *qs,
                          const float *dos, int D, float scale, float lse, float delta, float &dq,
                          float *ds_sh) {
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
}

// One block per (b, t, KV group), looping over the group's heads; per branch:
// o recomputed (online, as the forward), dg = dout.o, delta = g dg, then bwd_range.
// mf-budget: regs<=136 smem<=4096 stack<=16 spill=0  (sm_90 measured: regs 128 smem 2048 stack 8; bwd_range not inlined: inlined, it spilled at 64 registers)
template <typename T>
__global__ void __launch_bounds__(kThreads)
nsa_bwd_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
               const T *__restrict__ g_cmp, const T *__restrict__ g_slc, const T *__restrict__ g_win,
               const T *__restrict__ dout, const float *__restrict__ kc, const float *__restrict__ vc,
               const float *__restrict__ lse, const int32_t *__restrict__ sel, float *__restrict__ dq,
               float *dk, float *dv, float *dkc, float *dvc, float *__restrict__ dg_cmp,
               float *__restrict__ dg_slc, float *__restrict__ dg_win, NsaShape sh, size_t total) {
    __shared__ float qs[kMaxD];
    __shared__ float dos[kMaxD];
    __shared__ float p_sh[kThreads];
    __shared__ float red[kThreads];
    const int tid = threadIdx.x, D = (int)sh.D;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item % sh.Hk, t = (item / sh.Hk) % sh.S, b = item / (sh.Hk * sh.S);
        const size_t nvis = t + 1 >= sh.l ? ((t + 1 - sh.l) / sh.d + 1 < sh.nc ? (t + 1 - sh.l) / sh.d + 1 : sh.nc)
                                          : 0;
        const size_t koff = (b * sh.S * sh.Hk + g) * sh.D, kstride = sh.Hk * sh.D;
        const size_t coff = (b * sh.Hk + g) * sh.nc * sh.D;
        const size_t w0 = t + 1 > sh.w ? t + 1 - sh.w : 0;
        const int32_t *srow = sel + ((b * sh.S + t) * sh.Hk + g) * sh.n;
        for (size_t hh = 0; hh < sh.G; ++hh) {
            const size_t h = g * sh.G + hh, row = (b * sh.S + t) * sh.Hq + h;
            __syncthreads();
            if (tid < D) {
                qs[tid] = to_f32(q[row * sh.D + tid]);
                dos[tid] = to_f32(dout[row * sh.D + tid]);
            }
            __syncthreads();
            float dqc = 0.0f;
            for (int x = 0; x < 3; ++x) {
                const float gate = to_f32((x == 0 ? g_cmp : x == 1 ? g_slc : g_win)[row]);
                float *dgo = x == 0 ? dg_cmp : x == 1 ? dg_slc : dg_win;
                if (x == 0 && nvis == 0) {
                    if (tid == 0) dgo[row] = 0.0f;
                    continue;
                }
                // o of the branch
                Online st = {-INFINITY, 0.0f, 0.0f};
                if (x == 0) {
                    attend_range(kc + coff, vc + coff, sh.D, 0, nvis, qs, D, sh.scale, st, p_sh, red);
                } else if (x == 1) {
                    for (size_t e = 0; e < sh.n; ++e) {
                        const int32_t i = srow[e];
                        if (i < 0) break;
                        const size_t s0 = (size_t)i * sh.ls;
                        const size_t s1 = s0 + sh.ls < t + 1 ? s0 + sh.ls : t + 1;
                        attend_range(k + koff, v + koff, kstride, s0, s1, qs, D, sh.scale, st, p_sh, red);
                    }
                } else {
                    attend_range(k + koff, v + koff, kstride, w0, t + 1, qs, D, sh.scale, st, p_sh, red);
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
                    bwd_range(kc + coff, vc + coff, sh.D, dkc + coff, dvc + coff, 0, nvis, qs, dos, D,
                              sh.scale, lz, delta, dqc, p_sh);
                } else if (x == 1) {
                    for (size_t e = 0; e < sh.n; ++e) {
                        const int32_t i = srow[e];
                        if (i < 0) break;
                        const size_t s0 = (size_t)i * sh.ls;
                        const size_t s1 = s0 + sh.ls < t + 1 ? s0 + sh.ls : t + 1;
                        bwd_range(k + koff, v + koff, kstride, dk + koff, dv + koff, s0, s1, qs, dos, D,
                                  sh.scale, lz, delta, dqc, p_sh);
                    }
                } else {
                    bwd_range(k + koff, v + koff, kstride, dk + koff, dv + koff, w0, t + 1, qs, dos, D,
                              sh.scale, lz, delta, dqc, p_sh);
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
                  float *__restrict__ dv, NsaShape sh, size_t total) {
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

template <typename T>
static mf_status launch_backward(mf_context *ctx, const NsaShape &sh, const void *q, const void *k,
                                 const void *v, const void *gc, const void *gs, const void *gw,
                                 const void *dout, const float *lse, const int32_t *sel, float *dq,
                                 float *dk, float *dv, float *dgc, float *dgs, float *dgw) {
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    Scratch scr(ctx);
    float *kc = nullptr, *vc = nullptr, *dkc = nullptr, *dvc = nullptr;
    const size_t ncd = sh.B * sh.Hk * sh.nc * sh.D, nkv = sh.B * sh.S * sh.Hk * sh.D;
    MF_CUDA_CHECK(cudaMemsetAsync(dk, 0, nkv * sizeof(float), stream));
    MF_CUDA_CHECK(cudaMemsetAsync(dv, 0, nkv * sizeof(float), stream));
    if (ncd > 0) {
        mf_status st = mf_scratch_alloc(ctx, MF_MEM_DEVICE, 4 * ncd * sizeof(float), &scr.ptr);
        if (st != MF_OK) return st;
        kc = static_cast<float *>(scr.ptr);
        vc = kc + ncd;
        dkc = vc + ncd;
        dvc = dkc + ncd;
        MF_CUDA_CHECK(cudaMemsetAsync(dkc, 0, 2 * ncd * sizeof(float), stream));
        nsa_pool_kernel<T><<<grid_blocks(ncd, 256, kMaxGridX), 256, 0, stream>>>(
            static_cast<const T *>(k), static_cast<const T *>(v), kc, vc, sh, ncd);
        MF_LAUNCH_CHECK();
    }
    const size_t total = sh.B * sh.S * sh.Hk;
    nsa_bwd_kernel<T><<<grid_cap(total, kMaxGridX), kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
        static_cast<const T *>(gc), static_cast<const T *>(gs), static_cast<const T *>(gw),
        static_cast<const T *>(dout), kc, vc, lse, sel, dq, dk, dv, dkc, dvc, dgc, dgs, dgw, sh, total);
    MF_LAUNCH_CHECK();
    if (ncd > 0) {
        nsa_unpool_kernel<<<grid_blocks(nkv, 256, kMaxGridX), 256, 0, stream>>>(dkc, dvc, dk, dv, sh, nkv);
        MF_LAUNCH_CHECK();
    }
    return MF_OK;
}

// ---- launcher -----------------------------------------------------------------------
template <typename T>
static mf_status launch_forward(mf_context *ctx, const NsaShape &sh, const void *q, const void *k,
                                const void *v, const void *gc, const void *gs, const void *gw,
                                float *out, float *lse, int32_t *sel) {
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    Scratch scr(ctx);
    float *kc = nullptr, *vc = nullptr;
    const size_t ncd = sh.B * sh.Hk * sh.nc * sh.D;
    if (ncd > 0) {
        mf_status st = mf_scratch_alloc(ctx, MF_MEM_DEVICE, 2 * ncd * sizeof(float), &scr.ptr);
        if (st != MF_OK) return st;
        kc = static_cast<float *>(scr.ptr);
        vc = kc + ncd;
        nsa_pool_kernel<T><<<grid_blocks(ncd, 256, kMaxGridX), 256, 0, stream>>>(
            static_cast<const T *>(k), static_cast<const T *>(v), kc, vc, sh, ncd);
        MF_LAUNCH_CHECK();
    }
    const size_t total = sh.B * sh.S * sh.Hk;
    const size_t dyn = sh.nb * (sizeof(float) + sizeof(int));
    nsa_fwd_kernel<T><<<grid_cap(total, kMaxGridX), kThreads, dyn, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
        static_cast<const T *>(gc), static_cast<const T *>(gs), static_cast<const T *>(gw), kc, vc,
        out, lse, sel, sh, total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

}  // namespace MF_NS

// ---- exported entry point (called by src/ops/nsa.c after validation) ---------------------
extern "C" {

static MF_NS::NsaShape nsa_shape(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk,
                                 int64_t D) {
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
    sh.scale = cfg->scale > 0.0f ? cfg->scale : (float)(1.0 / std::sqrt((double)D));
    return sh;
}

MF_API mf_status MF_FN(nsa_fused_forward)(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                                          int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                                          const void *q, const void *k, const void *v,
                                          const void *g_cmp, const void *g_slc, const void *g_win,
                                          float *out, float *lse, int32_t *sel) {
    const MF_NS::NsaShape sh = nsa_shape(cfg, B, S, Hq, Hk, D);
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_forward<__nv_bfloat16>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, out, lse, sel);
    return MF_NS::launch_forward<float>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, out, lse, sel);
}

MF_API mf_status MF_FN(nsa_fused_backward)(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                                           int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                                           const void *q, const void *k, const void *v,
                                           const void *g_cmp, const void *g_slc, const void *g_win,
                                           const void *dout, const float *lse, const int32_t *sel,
                                           float *dq, float *dk, float *dv, float *dg_cmp,
                                           float *dg_slc, float *dg_win) {
    const MF_NS::NsaShape sh = nsa_shape(cfg, B, S, Hq, Hk, D);
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_backward<__nv_bfloat16>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, dout, lse, sel,
                                                     dq, dk, dv, dg_cmp, dg_slc, dg_win);
    return MF_NS::launch_backward<float>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, dout, lse, sel, dq, dk,
                                         dv, dg_cmp, dg_slc, dg_win);
}

}  // extern "C"
