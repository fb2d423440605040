// NSA backward on the SIMT cores (nsa_bwd_kernel: every branch off the tensor-core path,
// and the compression branch for bf16 at D = 128) and the pooling's backward
// (nsa_unpool_kernel: dkc, dvc spread back to dk, dv).
#pragma once

#include "fwd_simt.cuh"

namespace MF_NS {

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

} // namespace MF_NS
