/* The example attention candidates (mf_attention_forward_candidate_fn and
 * mf_attention_backward_candidate_fn, include/memfix/<op>.h): naive, one
 * thread per query row (forward, dq) or per key row (dk, dv), scores recomputed
 * in double and never stored, no scratch. Written independently of
 * optimized/attention.cu (16-row tiles in shared memory, online softmax).
 * 'flaw' selects the wrong examples' mistake. */
#ifndef MF_ATTENTION_COMMON_CUH
#define MF_ATTENTION_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "memfix/attention.h"
#include "memfix/verify.h"

#define CAND_EXPORT extern "C" __attribute__((visibility("default")))
#define ATT_MAX_DIM 128 /* MF_ATTENTION_MAX_HEAD_DIM */
#define ATT_THREADS 64

enum { ATT_OK = 0, ATT_NO_SCALE = 1, ATT_DK_SIGN = 2 };

__device__ __forceinline__ double att_ld(const void *p, int bf16, size_t i)
{
    if (bf16) return (double)__uint_as_float((unsigned)((const uint16_t *)p)[i] << 16);
    return (double)((const float *)p)[i];
}

/* scale * q_i . k_j for the head whose rows start at row0 */
__device__ __forceinline__ double att_score(const void *q, const void *k, int bf16, size_t row0, int64_t i,
                                            int64_t j, int64_t D, double scale)
{
    double s = 0.0;
    for (int64_t e = 0; e < D; e++)
        s += att_ld(q, bf16, (row0 + (size_t)i) * (size_t)D + (size_t)e) *
             att_ld(k, bf16, (row0 + (size_t)j) * (size_t)D + (size_t)e);
    return s * scale;
}

__global__ void att_fwd_kernel(int bf16, int causal, int64_t BH, int64_t N, int64_t D, int64_t Dv,
                               double scale, const void *q, const void *k, const void *v, float *out,
                               float *lse)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= BH * N) return;
    const int64_t i = r % N;
    const size_t row0 = (size_t)(r - i);
    const int64_t last = causal ? i : N - 1;
    double m = -INFINITY;
    for (int64_t j = 0; j <= last; j++) {
        const double s = att_score(q, k, bf16, row0, i, j, D, scale);
        if (s > m) m = s;
    }
    double acc[ATT_MAX_DIM], sum = 0.0;
    for (int64_t e = 0; e < Dv; e++) acc[e] = 0.0;
    for (int64_t j = 0; j <= last; j++) {
        const double p = exp(att_score(q, k, bf16, row0, i, j, D, scale) - m);
        sum += p;
        for (int64_t e = 0; e < Dv; e++)
            acc[e] += p * att_ld(v, bf16, (row0 + (size_t)j) * (size_t)Dv + (size_t)e);
    }
    for (int64_t e = 0; e < Dv; e++) out[(size_t)r * (size_t)Dv + (size_t)e] = (float)(acc[e] / sum);
    if (lse != NULL) lse[r] = (float)(m + log(sum));
}

/* delta_i = dout_i . out_i */
__device__ __forceinline__ double att_delta(const float *out, const void *dout, int bf16, size_t row,
                                            int64_t Dv)
{
    double d = 0.0;
    for (int64_t e = 0; e < Dv; e++)
        d += att_ld(dout, bf16, row * (size_t)Dv + (size_t)e) * (double)out[row * (size_t)Dv + (size_t)e];
    return d;
}

/* dS_ij = P_ij (dout_i . v_j - delta_i), P_ij = exp(s_ij - lse_i) */
__device__ __forceinline__ double att_ds(const void *q, const void *k, const void *v, const void *dout,
                                         const float *lse, int bf16, size_t row0, int64_t i, int64_t j,
                                         int64_t D, int64_t Dv, double scale, double delta, double *p_out)
{
    const double p = exp(att_score(q, k, bf16, row0, i, j, D, scale) - (double)lse[row0 + (size_t)i]);
    double dp = 0.0;
    for (int64_t e = 0; e < Dv; e++)
        dp += att_ld(dout, bf16, (row0 + (size_t)i) * (size_t)Dv + (size_t)e) *
              att_ld(v, bf16, (row0 + (size_t)j) * (size_t)Dv + (size_t)e);
    *p_out = p;
    return p * (dp - delta);
}

__global__ void att_dq_kernel(int bf16, int causal, int64_t BH, int64_t N, int64_t D, int64_t Dv,
                              double scale, const void *q, const void *k, const void *v, const float *out,
                              const void *dout, const float *lse, float *dq)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= BH * N) return;
    const int64_t i = r % N;
    const size_t row0 = (size_t)(r - i);
    const double delta = att_delta(out, dout, bf16, (size_t)r, Dv);
    double acc[ATT_MAX_DIM];
    for (int64_t e = 0; e < D; e++) acc[e] = 0.0;
    for (int64_t j = 0; j <= (causal ? i : N - 1); j++) {
        double p;
        const double ds = att_ds(q, k, v, dout, lse, bf16, row0, i, j, D, Dv, scale, delta, &p);
        for (int64_t e = 0; e < D; e++)
            acc[e] += ds * att_ld(k, bf16, (row0 + (size_t)j) * (size_t)D + (size_t)e);
    }
    for (int64_t e = 0; e < D; e++) dq[(size_t)r * (size_t)D + (size_t)e] = (float)(acc[e] * scale);
}

__global__ void att_dkdv_kernel(int bf16, int causal, int64_t BH, int64_t N, int64_t D, int64_t Dv,
                                double scale, double dk_sign, const void *q, const void *k, const void *v,
                                const float *out, const void *dout, const float *lse, float *dk, float *dv)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= BH * N) return;
    const int64_t j = r % N;
    const size_t row0 = (size_t)(r - j);
    double ak[ATT_MAX_DIM], av[ATT_MAX_DIM];
    for (int64_t e = 0; e < D; e++) ak[e] = 0.0;
    for (int64_t e = 0; e < Dv; e++) av[e] = 0.0;
    for (int64_t i = causal ? j : 0; i < N; i++) {
        const double delta = att_delta(out, dout, bf16, row0 + (size_t)i, Dv);
        double p;
        const double ds = att_ds(q, k, v, dout, lse, bf16, row0, i, j, D, Dv, scale, delta, &p);
        for (int64_t e = 0; e < D; e++)
            ak[e] += ds * att_ld(q, bf16, (row0 + (size_t)i) * (size_t)D + (size_t)e);
        for (int64_t e = 0; e < Dv; e++)
            av[e] += p * att_ld(dout, bf16, (row0 + (size_t)i) * (size_t)Dv + (size_t)e);
    }
    for (int64_t e = 0; e < D; e++) dk[(size_t)r * (size_t)D + (size_t)e] = (float)(dk_sign * ak[e] * scale);
    for (int64_t e = 0; e < Dv; e++) dv[(size_t)r * (size_t)Dv + (size_t)e] = (float)av[e];
}

static inline mf_status att_check(mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D,
                                  int64_t Dv)
{
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16) return MF_ERR_DTYPE;
    if (causal != 0 && causal != 1) return MF_ERR_INVALID_ARGUMENT;
    if (B <= 0 || H <= 0 || N <= 0 || D <= 0 || Dv <= 0 || D > ATT_MAX_DIM || Dv > ATT_MAX_DIM)
        return MF_ERR_INVALID_SIZE;
    return MF_OK;
}

static inline unsigned att_blocks(int64_t rows) { return (unsigned)((rows + ATT_THREADS - 1) / ATT_THREADS); }

static inline mf_status att_forward(mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D,
                                    int64_t Dv, const void *q, const void *k, const void *v, float *out,
                                    float *lse, int flaw)
{
    if (q == NULL || k == NULL || v == NULL || out == NULL) return MF_ERR_NULL_POINTER;
    mf_status s = att_check(dtype, causal, B, H, N, D, Dv);
    if (s != MF_OK) return s;
    const double scale = flaw == ATT_NO_SCALE ? 1.0 : 1.0 / sqrt((double)D);
    att_fwd_kernel<<<att_blocks(B * H * N), ATT_THREADS>>>(dtype == MF_DTYPE_BF16, causal, B * H, N, D, Dv,
                                                           scale, q, k, v, out, lse);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}

static inline mf_status att_backward(mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D,
                                     int64_t Dv, const void *q, const void *k, const void *v,
                                     const float *out, const void *dout, const float *lse, float *dq,
                                     float *dk, float *dv, int flaw)
{
    if (q == NULL || k == NULL || v == NULL || out == NULL || dout == NULL || lse == NULL || dq == NULL ||
        dk == NULL || dv == NULL)
        return MF_ERR_NULL_POINTER;
    mf_status s = att_check(dtype, causal, B, H, N, D, Dv);
    if (s != MF_OK) return s;
    const double scale = 1.0 / sqrt((double)D);
    const int bf16 = dtype == MF_DTYPE_BF16;
    att_dq_kernel<<<att_blocks(B * H * N), ATT_THREADS>>>(bf16, causal, B * H, N, D, Dv, scale, q, k, v, out,
                                                          dout, lse, dq);
    if (cudaGetLastError() != cudaSuccess) return MF_ERR_BACKEND;
    att_dkdv_kernel<<<att_blocks(B * H * N), ATT_THREADS>>>(bf16, causal, B * H, N, D, Dv, scale,
                                                            flaw == ATT_DK_SIGN ? -1.0 : 1.0, q, k, v, out,
                                                            dout, lse, dk, dv);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}

#define ATT_FWD_SIGNATURE                                                                                    \
    mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,     \
        const void *q, const void *k, const void *v, float *out, float *lse
#define ATT_BWD_SIGNATURE                                                                                    \
    mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,     \
        const void *q, const void *k, const void *v, const float *out, const void *dout, const float *lse,   \
        float *dq, float *dk, float *dv

#endif
