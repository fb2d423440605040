/* The example rope candidates (mf_rope_candidate_fn, include/memfix/<op>.h):
 * one thread per (token, head, rotated pair) of q and of k, the angle
 * recomputed by each thread in double from the position (no table, no
 * scratch), and one more thread per pass-through feature. Written
 * independently of optimized/rope.cu (which shares one sin/cos between all
 * heads of a token). 'ignore_direction' is the flaw of the wrong example. */
#ifndef MF_ROPE_COMMON_CUH
#define MF_ROPE_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "memfix/rope.h"
#include "memfix/verify.h"

#define CAND_EXPORT extern "C" __attribute__((visibility("default")))

/* An int32 id (a wrong example redefines it before including this header). */
#ifndef ROPE_LOAD_I32
#define ROPE_LOAD_I32(ids, i) ((int64_t)((const int32_t *)(ids))[(i)])
#endif

__device__ __forceinline__ float rope_ld(const void *p, int bf16, size_t i)
{
    if (bf16) return __uint_as_float((unsigned)((const uint16_t *)p)[i] << 16);
    return ((const float *)p)[i];
}

/* fp32 -> bf16, round to nearest even (NaN kept quiet) */
__device__ __forceinline__ void rope_st(void *p, int bf16, size_t i, float x)
{
    if (!bf16) {
        ((float *)p)[i] = x;
        return;
    }
    unsigned u = __float_as_uint(x);
    uint16_t h;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        h = (uint16_t)((u >> 16) | 0x40u);
    else
        h = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    ((uint16_t *)p)[i] = h;
}

/* One tensor (q or k): heads H, items per token = H * (half + pass-through). */
__global__ void rope_naive_kernel(int64_t B, int64_t T, int64_t H, int64_t Dh, int64_t rd, double base,
                                  double scaling, int interleaved, double sign, int bf16, int pos_kind,
                                  int64_t offset, const void *ids, int64_t batch_stride, const void *x,
                                  void *y)
{
    const int64_t half = rd / 2, per_head = half + (Dh - rd);
    const int64_t total = B * T * H * per_head;
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= total) return;
    const int64_t item = g % per_head, head = (g / per_head) % H, tok = g / (per_head * H);
    const int64_t b = tok / T, t = tok % T;
    const size_t row = ((size_t)tok * (size_t)H + (size_t)head) * (size_t)Dh;
    if (item >= half) { /* pass-through feature */
        const size_t f = row + (size_t)(rd + item - half);
        rope_st(y, bf16, f, rope_ld(x, bf16, f));
        return;
    }
    int64_t p;
    if (pos_kind == MF_ROPE_POS_OFFSET)
        p = offset + t;
    else if (pos_kind == MF_ROPE_POS_I32)
        p = ROPE_LOAD_I32(ids, b * batch_stride + t);
    else
        p = ((const int64_t *)ids)[b * batch_stride + t];
    const double inv_freq = pow(base, -2.0 * (double)item / (double)rd);
    const double theta = ((double)p / scaling) * inv_freq;
    const double c = cos(theta), s = sign * sin(theta);
    const size_t i0 = row + (size_t)(interleaved ? 2 * item : item);
    const size_t i1 = row + (size_t)(interleaved ? 2 * item + 1 : item + half);
    const double x0 = rope_ld(x, bf16, i0), x1 = rope_ld(x, bf16, i1);
    rope_st(y, bf16, i0, (float)(x0 * c - x1 * s));
    rope_st(y, bf16, i1, (float)(x1 * c + x0 * s));
}

static inline mf_status rope_launch(const mf_rope_config *cfg, mf_rope_direction dir,
                                    const mf_rope_tensors *t, const mf_rope_positions *pos, int64_t H,
                                    const void *x, void *y, int ignore_direction)
{
    const int64_t per_head = cfg->rotary_dim / 2 + (cfg->head_dim - cfg->rotary_dim);
    const int64_t total = t->batch * t->seq_len * H * per_head;
    const int threads = 128;
    const double sign = (dir == MF_ROPE_BACKWARD && !ignore_direction) ? -1.0 : 1.0;
    rope_naive_kernel<<<(unsigned)((total + threads - 1) / threads), threads>>>(
        t->batch, t->seq_len, H, cfg->head_dim, cfg->rotary_dim, cfg->base, cfg->scaling,
        cfg->layout == MF_ROPE_INTERLEAVED, sign, t->dtype == MF_DTYPE_BF16, (int)pos->kind, pos->offset,
        pos->ids, pos->batch_stride, x, y);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}

static inline mf_status rope_impl(const mf_rope_config *cfg, mf_rope_direction dir, const mf_rope_tensors *t,
                                  const mf_rope_positions *pos, int ignore_direction)
{
    if (cfg == NULL || t == NULL || pos == NULL || t->q == NULL || t->k == NULL || t->q_out == NULL ||
        t->k_out == NULL)
        return MF_ERR_NULL_POINTER;
    if (t->batch <= 0 || t->seq_len <= 0 || t->heads_q <= 0 || t->heads_k <= 0 || cfg->head_dim <= 0 ||
        cfg->rotary_dim < 2 || cfg->rotary_dim % 2 != 0 || cfg->rotary_dim > cfg->head_dim)
        return MF_ERR_INVALID_SIZE;
    if (t->dtype != MF_DTYPE_F32 && t->dtype != MF_DTYPE_BF16) return MF_ERR_DTYPE;
    if (pos->kind != MF_ROPE_POS_OFFSET && pos->ids == NULL) return MF_ERR_NULL_POINTER;
    mf_status s = rope_launch(cfg, dir, t, pos, t->heads_q, t->q, t->q_out, ignore_direction);
    if (s == MF_OK) s = rope_launch(cfg, dir, t, pos, t->heads_k, t->k, t->k_out, ignore_direction);
    return s;
}

#endif
