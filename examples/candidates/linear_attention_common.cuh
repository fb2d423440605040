/* The example linear attention candidates (mf_linear_attention_forward_candidate_fn
 * and mf_linear_attention_backward_candidate_fn, include/memfix/<op>.h):
 * naive, one thread per output element, in double, in the quadratic form
 * (out_n = (q'_n S0 + sum_{m<=n} (q'_n . k'_m) v_m) / den_n) instead of a
 * carried state, so never the N x D x Dv cumsum and no state in memory. The
 * backward first stores den_n and dd_n (2 floats per position, the backward's
 * scratch ceiling) through mf_scratch_alloc. Written independently of
 * optimized/linear_attention.cu (chunked state carry in shared memory).
 * 'flaw' selects the wrong examples' mistake. */
#ifndef MF_LINEAR_ATTENTION_COMMON_CUH
#define MF_LINEAR_ATTENTION_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "memfix/linear_attention.h"
#include "memfix/verify.h"

#define CAND_EXPORT extern "C" __attribute__((visibility("default")))
#define LA_THREADS 128

enum { LA_OK = 0, LA_NO_INITIAL_STATE = 1, LA_NO_FINAL_GRAD = 2 };

typedef struct la_dims {
    int64_t BH, N, D, Dv;
    int bf16, causal;
} la_dims;

__device__ __forceinline__ double la_ld(const void *p, int bf16, size_t i)
{
    if (bf16) return (double)__uint_as_float((unsigned)((const uint16_t *)p)[i] << 16);
    return (double)((const float *)p)[i];
}
__device__ __forceinline__ double la_phi(double x) { return x > 0.0 ? x + 1.0 : exp(x); }
__device__ __forceinline__ double la_dphi(double x) { return x > 0.0 ? 1.0 : exp(x); }
/* optional float state element (NULL: zero) */
__device__ __forceinline__ double la_opt(const float *p, size_t i) { return p != NULL ? (double)p[i] : 0.0; }

/* phi(x)[bh, n, d] of q or k */
__device__ __forceinline__ double la_feat(la_dims a, const void *x, int64_t bh, int64_t n, int64_t d)
{
    return la_phi(la_ld(x, a.bf16, ((size_t)bh * (size_t)a.N + (size_t)n) * (size_t)a.D + (size_t)d));
}
/* phi(q_n) . phi(k_m) */
__device__ __forceinline__ double la_qk(la_dims a, const void *q, const void *k, int64_t bh, int64_t n,
                                        int64_t m)
{
    double s = 0.0;
    for (int64_t d = 0; d < a.D; d++) s += la_feat(a, q, bh, n, d) * la_feat(a, k, bh, m, d);
    return s;
}
__device__ __forceinline__ double la_vec(la_dims a, const void *x, int64_t bh, int64_t n, int64_t e)
{
    return la_ld(x, a.bf16, ((size_t)bh * (size_t)a.N + (size_t)n) * (size_t)a.Dv + (size_t)e);
}
/* den_n = phi(q_n) . (z0 + sum_{m <= n (causal) / all m} phi(k_m)) + eps */
__device__ __forceinline__ double la_den(la_dims a, const void *q, const void *k, const float *z0, int64_t bh,
                                         int64_t n)
{
    double s = MF_LINEAR_ATTENTION_EPS;
    for (int64_t d = 0; d < a.D; d++)
        s += la_feat(a, q, bh, n, d) * la_opt(z0, (size_t)bh * (size_t)a.D + (size_t)d);
    const int64_t last = a.causal ? n : a.N - 1;
    for (int64_t m = 0; m <= last; m++) s += la_qk(a, q, k, bh, n, m);
    return s;
}

/* out[bh, n, e]; final_kv[bh, d, e] and final_z[bh, d] by the threads past the outputs */
__global__ void la_fwd_kernel(la_dims a, const void *q, const void *k, const void *v, const float *S0,
                              const float *z0, float *out, float *Sn, float *zn)
{
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t n_out = a.BH * a.N * a.Dv, n_s = a.BH * a.D * a.Dv, n_z = a.BH * a.D;
    if (g < n_out) {
        const int64_t e = g % a.Dv, n = (g / a.Dv) % a.N, bh = g / (a.Dv * a.N);
        double num = 0.0;
        for (int64_t d = 0; d < a.D; d++)
            num += la_feat(a, q, bh, n, d) *
                   la_opt(S0, ((size_t)bh * (size_t)a.D + (size_t)d) * (size_t)a.Dv + (size_t)e);
        for (int64_t m = 0; m <= (a.causal ? n : a.N - 1); m++)
            num += la_qk(a, q, k, bh, n, m) * la_vec(a, v, bh, m, e);
        out[g] = (float)(num / la_den(a, q, k, z0, bh, n));
    } else if (g < n_out + n_s) {
        if (Sn == NULL) return;
        const int64_t i = g - n_out, e = i % a.Dv, d = (i / a.Dv) % a.D, bh = i / (a.Dv * a.D);
        double s = la_opt(S0, (size_t)i);
        for (int64_t m = 0; m < a.N; m++) s += la_feat(a, k, bh, m, d) * la_vec(a, v, bh, m, e);
        Sn[i] = (float)s;
    } else if (g < n_out + n_s + n_z) {
        if (zn == NULL) return;
        const int64_t i = g - n_out - n_s, d = i % a.D, bh = i / a.D;
        double s = la_opt(z0, (size_t)i);
        for (int64_t m = 0; m < a.N; m++) s += la_feat(a, k, bh, m, d);
        zn[i] = (float)s;
    }
}

/* stats[2r] = den_n, stats[2r + 1] = dd_n = -(dout_n . out_n) / den_n */
__global__ void la_stats_kernel(la_dims a, const void *q, const void *k, const float *out, const void *dout,
                                const float *z0, float *stats)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.BH * a.N) return;
    const int64_t n = r % a.N, bh = r / a.N;
    const double den = la_den(a, q, k, z0, bh, n);
    double dot = 0.0;
    for (int64_t e = 0; e < a.Dv; e++)
        dot += la_vec(a, dout, bh, n, e) * (double)out[(size_t)r * (size_t)a.Dv + (size_t)e];
    stats[2 * r] = (float)den;
    stats[2 * r + 1] = (float)(-dot / den);
}

enum { LA_DQ, LA_DK, LA_DV, LA_DS0, LA_DZ0 };

__global__ void la_bwd_kernel(la_dims a, int which, const void *q, const void *k, const void *v,
                              const void *dout, const float *S0, const float *z0, const float *dSN,
                              const float *dzN, const float *stats, float *grad)
{
    const int64_t sizes[5] = { a.BH * a.N * a.D, a.BH * a.N * a.D, a.BH * a.N * a.Dv, a.BH * a.D * a.Dv,
                               a.BH * a.D };
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= sizes[which]) return;
    const int64_t all = a.N - 1;
    double acc = 0.0;
    if (which == LA_DQ) { /* phi'(q_n) (S_n dnum_n + dd_n z_n) */
        const int64_t d = g % a.D, n = (g / a.D) % a.N, bh = g / (a.D * a.N);
        const size_t r = (size_t)bh * (size_t)a.N + (size_t)n;
        const double den = stats[2 * r], dd = stats[2 * r + 1];
        for (int64_t e = 0; e < a.Dv; e++)
            acc += la_opt(S0, ((size_t)bh * (size_t)a.D + (size_t)d) * (size_t)a.Dv + (size_t)e) *
                   la_vec(a, dout, bh, n, e) / den;
        double z = la_opt(z0, (size_t)bh * (size_t)a.D + (size_t)d);
        for (int64_t m = 0; m <= (a.causal ? n : all); m++) {
            double vd = 0.0;
            for (int64_t e = 0; e < a.Dv; e++) vd += la_vec(a, v, bh, m, e) * la_vec(a, dout, bh, n, e);
            const double km = la_feat(a, k, bh, m, d);
            acc += km * vd / den;
            z += km;
        }
        acc += dd * z;
        acc *= la_dphi(la_ld(q, a.bf16, (size_t)g));
    } else if (which == LA_DK) { /* phi'(k_m) (G_m v_m + g_m) */
        const int64_t d = g % a.D, m = (g / a.D) % a.N, bh = g / (a.D * a.N);
        for (int64_t e = 0; e < a.Dv; e++)
            acc += la_opt(dSN, ((size_t)bh * (size_t)a.D + (size_t)d) * (size_t)a.Dv + (size_t)e) *
                   la_vec(a, v, bh, m, e);
        acc += la_opt(dzN, (size_t)bh * (size_t)a.D + (size_t)d);
        for (int64_t n = a.causal ? m : 0; n <= all; n++) {
            const size_t r = (size_t)bh * (size_t)a.N + (size_t)n;
            double vd = 0.0;
            for (int64_t e = 0; e < a.Dv; e++) vd += la_vec(a, v, bh, m, e) * la_vec(a, dout, bh, n, e);
            acc += la_feat(a, q, bh, n, d) * (vd / stats[2 * r] + stats[2 * r + 1]);
        }
        acc *= la_dphi(la_ld(k, a.bf16, (size_t)g));
    } else if (which == LA_DV) { /* G_m^T phi(k_m) */
        const int64_t e = g % a.Dv, m = (g / a.Dv) % a.N, bh = g / (a.Dv * a.N);
        for (int64_t d = 0; d < a.D; d++)
            acc += la_opt(dSN, ((size_t)bh * (size_t)a.D + (size_t)d) * (size_t)a.Dv + (size_t)e) *
                   la_feat(a, k, bh, m, d);
        for (int64_t n = a.causal ? m : 0; n <= all; n++)
            acc += la_qk(a, q, k, bh, n, m) * la_vec(a, dout, bh, n, e) /
                   stats[2 * ((size_t)bh * (size_t)a.N + (size_t)n)];
    } else if (which == LA_DS0) { /* G_1 = dS_N + sum_n phi(q_n) dnum_n^T */
        const int64_t e = g % a.Dv, d = (g / a.Dv) % a.D, bh = g / (a.Dv * a.D);
        acc = la_opt(dSN, (size_t)g);
        for (int64_t n = 0; n < a.N; n++)
            acc += la_feat(a, q, bh, n, d) * la_vec(a, dout, bh, n, e) /
                   stats[2 * ((size_t)bh * (size_t)a.N + (size_t)n)];
    } else { /* g_1 = dz_N + sum_n dd_n phi(q_n) */
        const int64_t d = g % a.D, bh = g / a.D;
        acc = la_opt(dzN, (size_t)g);
        for (int64_t n = 0; n < a.N; n++)
            acc += stats[2 * ((size_t)bh * (size_t)a.N + (size_t)n) + 1] * la_feat(a, q, bh, n, d);
    }
    grad[g] = (float)acc;
}

static inline mf_status la_dims_of(mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D,
                                   int64_t Dv, la_dims *a)
{
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16) return MF_ERR_DTYPE;
    if (causal != 0 && causal != 1) return MF_ERR_INVALID_ARGUMENT;
    if (B <= 0 || H <= 0 || N <= 0 || D <= 0 || Dv <= 0) return MF_ERR_INVALID_SIZE;
    *a = la_dims{ B * H, N, D, Dv, dtype == MF_DTYPE_BF16, causal };
    return MF_OK;
}

static inline unsigned la_blocks(int64_t n) { return (unsigned)((n + LA_THREADS - 1) / LA_THREADS); }

static inline mf_status la_forward(mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D,
                                   int64_t Dv, const void *q, const void *k, const void *v,
                                   const mf_linear_attention_state *state, float *out, int flaw)
{
    if (q == NULL || k == NULL || v == NULL || out == NULL) return MF_ERR_NULL_POINTER;
    la_dims a;
    mf_status s = la_dims_of(dtype, causal, B, H, N, D, Dv, &a);
    if (s != MF_OK) return s;
    const mf_linear_attention_state none = { NULL, NULL, NULL, NULL };
    const mf_linear_attention_state *st = state != NULL ? state : &none;
    const float *S0 = flaw == LA_NO_INITIAL_STATE ? NULL : st->initial_kv;
    const float *z0 = flaw == LA_NO_INITIAL_STATE ? NULL : st->initial_z;
    la_fwd_kernel<<<la_blocks(a.BH * (N * Dv + D * Dv + D)), LA_THREADS>>>(a, q, k, v, S0, z0, out,
                                                                           st->final_kv, st->final_z);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}

static inline mf_status la_backward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H,
                                    int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                    const void *v, const float *out, const void *dout,
                                    const mf_linear_attention_state *state,
                                    const mf_linear_attention_state_grad *grad, float *dq, float *dk,
                                    float *dv, int flaw)
{
    if (q == NULL || k == NULL || v == NULL || out == NULL || dout == NULL || dq == NULL || dk == NULL ||
        dv == NULL)
        return MF_ERR_NULL_POINTER;
    la_dims a;
    mf_status s = la_dims_of(dtype, causal, B, H, N, D, Dv, &a);
    if (s != MF_OK) return s;
    const float *S0 = state != NULL ? state->initial_kv : NULL, *z0 = state != NULL ? state->initial_z : NULL;
    const mf_linear_attention_state_grad none = { NULL, NULL, NULL, NULL };
    const mf_linear_attention_state_grad *gr = grad != NULL ? grad : &none;
    const float *dSN = flaw == LA_NO_FINAL_GRAD ? NULL : gr->d_final_kv;
    const float *dzN = flaw == LA_NO_FINAL_GRAD ? NULL : gr->d_final_z;
    void *stats = NULL;
    if ((s = mf_scratch_alloc(ctx, MF_MEM_DEVICE, (size_t)(a.BH * N) * 2 * sizeof(float), &stats)) != MF_OK)
        return s;
    la_stats_kernel<<<la_blocks(a.BH * N), LA_THREADS>>>(a, q, k, out, dout, z0, (float *)stats);
    if (cudaGetLastError() != cudaSuccess) s = MF_ERR_BACKEND;
    float *outs[5] = { dq, dk, dv, gr->d_initial_kv, gr->d_initial_z };
    const int64_t sizes[5] = { a.BH * N * D, a.BH * N * D, a.BH * N * Dv, a.BH * D * Dv, a.BH * D };
    for (int w = 0; w < 5 && s == MF_OK; w++) {
        if (outs[w] == NULL) continue;
        la_bwd_kernel<<<la_blocks(sizes[w]), LA_THREADS>>>(a, w, q, k, v, dout, S0, z0, dSN, dzN,
                                                           (const float *)stats, outs[w]);
        if (cudaGetLastError() != cudaSuccess) s = MF_ERR_BACKEND;
    }
    if (cudaDeviceSynchronize() != cudaSuccess) s = MF_ERR_BACKEND;
    mf_scratch_free(ctx, MF_MEM_DEVICE, stats);
    return s;
}

#define LA_FWD_SIGNATURE                                                                                     \
    mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N, int64_t D,  \
        int64_t Dv, const void *q, const void *k, const void *v, const mf_linear_attention_state *state,     \
        float *out
#define LA_BWD_SIGNATURE                                                                                     \
    mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N, int64_t D,  \
        int64_t Dv, const void *q, const void *k, const void *v, const float *out, const void *dout,         \
        const mf_linear_attention_state *state, const mf_linear_attention_state_grad *grad, float *dq,       \
        float *dk, float *dv

#endif
