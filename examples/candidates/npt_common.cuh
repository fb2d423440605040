/* The example NPT candidates (mf_npt_forward_candidate_fn and
 * mf_npt_backward_candidate_fn, include/memfix/<op>.h): naive, one thread
 * per output element, every sum in double straight from the inputs (h.A and
 * g.B^T recomputed where needed, never stored): no scratch at all, and never
 * the per-token d_model x d_ffn delta. Written independently of
 * optimized/npt.cu (chunked cuBLAS GEMMs). 'flaw' selects the wrong examples'
 * mistake. */
#ifndef MF_NPT_COMMON_CUH
#define MF_NPT_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "memfix/npt.h"
#include "memfix/verify.h"

#define CAND_EXPORT extern "C" __attribute__((visibility("default")))
#define NPT_THREADS 128

enum { NPT_OK = 0, NPT_NO_MOD = 1 };

__device__ __forceinline__ double npt_ld(const void *p, int bf16, size_t i)
{
    if (bf16) return (double)__uint_as_float((unsigned)((const uint16_t *)p)[i] << 16);
    return (double)((const float *)p)[i];
}

/* fp32 -> bf16, round to nearest even */
__device__ __forceinline__ void npt_st(void *p, int bf16, size_t i, double x)
{
    const float f = (float)x;
    if (!bf16) {
        ((float *)p)[i] = f;
        return;
    }
    unsigned u = __float_as_uint(f);
    uint16_t h;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        h = (uint16_t)((u >> 16) | 0x40u);
    else
        h = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    ((uint16_t *)p)[i] = h;
}

typedef struct npt_dims {
    int64_t T, D, F, R;
    int bf16;
} npt_dims;

/* u[t][r] = h[t] . A[:, r] */
__device__ __forceinline__ double npt_u(npt_dims d, const void *h, const void *A, int64_t t, int64_t r)
{
    double s = 0.0;
    for (int64_t k = 0; k < d.D; k++)
        s += npt_ld(h, d.bf16, (size_t)t * (size_t)d.D + (size_t)k) *
             npt_ld(A, d.bf16, (size_t)k * (size_t)d.R + (size_t)r);
    return s;
}

/* gB[t][r] = g[t] . B[r, :] */
__device__ __forceinline__ double npt_gb(npt_dims d, const void *g, const void *B, int64_t t, int64_t r)
{
    double s = 0.0;
    for (int64_t f = 0; f < d.F; f++)
        s += npt_ld(g, d.bf16, (size_t)t * (size_t)d.F + (size_t)f) *
             npt_ld(B, d.bf16, (size_t)r * (size_t)d.F + (size_t)f);
    return s;
}

/* out[t][f] = h[t].W[:, f] + sum_r u[t][r] m[t][r] B[r][f] + bias[f] */
__global__ void npt_fwd_kernel(npt_dims d, int flaw, const void *h, const void *W, const void *A,
                               const void *B, const void *m, const void *bias, void *out)
{
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= d.T * d.F) return;
    const int64_t t = g / d.F, f = g % d.F;
    double acc = bias != NULL ? npt_ld(bias, d.bf16, (size_t)f) : 0.0;
    for (int64_t k = 0; k < d.D; k++)
        acc += npt_ld(h, d.bf16, (size_t)t * (size_t)d.D + (size_t)k) *
               npt_ld(W, d.bf16, (size_t)k * (size_t)d.F + (size_t)f);
    for (int64_t r = 0; r < d.R; r++) {
        const double mod = flaw == NPT_NO_MOD ? 1.0 : npt_ld(m, d.bf16, (size_t)t * (size_t)d.R + (size_t)r);
        acc += npt_u(d, h, A, t, r) * mod * npt_ld(B, d.bf16, (size_t)r * (size_t)d.F + (size_t)f);
    }
    npt_st(out, d.bf16, (size_t)g, acc);
}

enum { NPT_GH, NPT_GW, NPT_GA, NPT_GB, NPT_GM, NPT_GBIAS };

/* One gradient, one thread per element (include/memfix/npt.h's formulas). */
__global__ void npt_bwd_kernel(npt_dims d, int which, int flaw, const void *h, const void *W, const void *A,
                               const void *B, const void *m, const void *g, void *grad)
{
    const int64_t rows[6] = { d.T, d.D, d.D, d.R, d.T, 1 }, cols[6] = { d.D, d.F, d.R, d.F, d.R, d.F };
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows[which] * cols[which]) return;
    const int64_t a = i / cols[which], b = i % cols[which];
    double acc = 0.0;
    switch (which) {
    case NPT_GH: /* grad_h[t][k] = g[t].W[k, :] + sum_r gB[t][r] m[t][r] A[k][r] */
        for (int64_t f = 0; f < d.F; f++)
            acc += npt_ld(g, d.bf16, (size_t)a * (size_t)d.F + (size_t)f) *
                   npt_ld(W, d.bf16, (size_t)b * (size_t)d.F + (size_t)f);
        for (int64_t r = 0; r < d.R; r++) {
            const double mod =
                flaw == NPT_NO_MOD ? 1.0 : npt_ld(m, d.bf16, (size_t)a * (size_t)d.R + (size_t)r);
            acc += npt_gb(d, g, B, a, r) * mod * npt_ld(A, d.bf16, (size_t)b * (size_t)d.R + (size_t)r);
        }
        break;
    case NPT_GW: /* grad_W[k][f] = sum_t h[t][k] g[t][f] */
        for (int64_t t = 0; t < d.T; t++)
            acc += npt_ld(h, d.bf16, (size_t)t * (size_t)d.D + (size_t)a) *
                   npt_ld(g, d.bf16, (size_t)t * (size_t)d.F + (size_t)b);
        break;
    case NPT_GA: /* grad_A[k][r] = sum_t h[t][k] gB[t][r] m[t][r] */
        for (int64_t t = 0; t < d.T; t++)
            acc += npt_ld(h, d.bf16, (size_t)t * (size_t)d.D + (size_t)a) * npt_gb(d, g, B, t, b) *
                   npt_ld(m, d.bf16, (size_t)t * (size_t)d.R + (size_t)b);
        break;
    case NPT_GB: /* grad_B[r][f] = sum_t u[t][r] m[t][r] g[t][f] */
        for (int64_t t = 0; t < d.T; t++)
            acc += npt_u(d, h, A, t, a) * npt_ld(m, d.bf16, (size_t)t * (size_t)d.R + (size_t)a) *
                   npt_ld(g, d.bf16, (size_t)t * (size_t)d.F + (size_t)b);
        break;
    case NPT_GM: /* grad_m[t][r] = u[t][r] gB[t][r] */
        acc = npt_u(d, h, A, a, b) * npt_gb(d, g, B, a, b);
        break;
    default: /* grad_bias[f] = sum_t g[t][f] */
        for (int64_t t = 0; t < d.T; t++) acc += npt_ld(g, d.bf16, (size_t)t * (size_t)d.F + (size_t)b);
        break;
    }
    npt_st(grad, d.bf16, (size_t)i, acc);
}

static inline mf_status npt_dims_of(mf_dtype dtype, mf_npt_shape s, npt_dims *d)
{
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16) return MF_ERR_DTYPE;
    if (s.batch <= 0 || s.seq <= 0 || s.d_model <= 0 || s.d_ffn <= 0 || s.rank <= 0)
        return MF_ERR_INVALID_SIZE;
    d->T = s.batch * s.seq;
    d->D = s.d_model;
    d->F = s.d_ffn;
    d->R = s.rank;
    d->bf16 = dtype == MF_DTYPE_BF16;
    return MF_OK;
}

static inline unsigned npt_blocks(int64_t n) { return (unsigned)((n + NPT_THREADS - 1) / NPT_THREADS); }

static inline mf_status npt_forward(mf_dtype dtype, mf_npt_shape s, const void *h, const void *W,
                                    const void *A, const void *B, const void *m, const void *bias, void *out,
                                    int flaw)
{
    if (h == NULL || W == NULL || A == NULL || B == NULL || m == NULL || out == NULL)
        return MF_ERR_NULL_POINTER;
    npt_dims d;
    mf_status st = npt_dims_of(dtype, s, &d);
    if (st != MF_OK) return st;
    npt_fwd_kernel<<<npt_blocks(d.T * d.F), NPT_THREADS>>>(d, flaw, h, W, A, B, m, bias, out);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}

static inline mf_status npt_backward(mf_dtype dtype, mf_npt_shape s, const void *h, const void *W,
                                     const void *A, const void *B, const void *m, const void *g, void *grad_h,
                                     void *grad_W, void *grad_A, void *grad_B, void *grad_m, void *grad_bias,
                                     int flaw)
{
    if (h == NULL || W == NULL || A == NULL || B == NULL || m == NULL || g == NULL)
        return MF_ERR_NULL_POINTER;
    npt_dims d;
    mf_status st = npt_dims_of(dtype, s, &d);
    if (st != MF_OK) return st;
    void *outs[6] = { grad_h, grad_W, grad_A, grad_B, grad_m, grad_bias };
    const int64_t n[6] = { d.T * d.D, d.D * d.F, d.D * d.R, d.R * d.F, d.T * d.R, d.F };
    for (int w = 0; w < 6; w++) {
        if (outs[w] == NULL) continue; /* a gradient not asked for */
        npt_bwd_kernel<<<npt_blocks(n[w]), NPT_THREADS>>>(d, w, flaw, h, W, A, B, m, g, outs[w]);
        if (cudaGetLastError() != cudaSuccess) return MF_ERR_BACKEND;
    }
    return MF_OK;
}

#define NPT_FWD_SIGNATURE                                                                                    \
    mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h, const void *W, const void *A,        \
        const void *B, const void *m, const void *bias, void *out, const mf_npt_options *opts
#define NPT_BWD_SIGNATURE                                                                                    \
    mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h, const void *W, const void *A,        \
        const void *B, const void *m, const void *grad_out, void *grad_h, void *grad_W, void *grad_A,        \
        void *grad_B, void *grad_m, void *grad_bias, const mf_npt_options *opts

#endif
