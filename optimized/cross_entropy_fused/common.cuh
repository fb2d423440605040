// Fused linear cross-entropy, shared by every path: the kernels' parameters, row targets, a
// tile's online softmax statistics and dL/dz, and the label-count and loss-reduce kernels.
#pragma once

#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"
#include "ce_device.cuh"
#include "cross_entropy.cuh"

#include <cstddef>
#include <cstdint>

namespace MF_NS {
namespace cce {

// Bias and softcap applied to a logit in registers.
template <typename T>
__device__ __forceinline__ float apply_bias_cap(float z, const T *bias, size_t j, float cap)
{
    if (bias != nullptr) z += to_f32(bias[j]);
    if (cap > 0.0f) z = cap * tanhf(z / cap);
    return z;
}

struct FusedParams {
    size_t N, D, V;
    int64_t shift_len, ignore_index;
    float eps, lambda, cap;
    float filter;              // backward: skip tiles with every |dL/dz| < filter * row scale (0: off)
    const int64_t *counters;   // [0] n_valid, [1] first bad row (device)
    int mean;                  // reduction mean: scale by 1/n_valid read on the device
    const float *grad_loss;    // NULL = 1
    int grad_per_row;          // reduction none
    const float *lse_in;       // backward
    float *lse_out, *row_loss; // forward (either may be NULL)
};

// A row's target for the kernels: -1 when ignored, padded, or out of range (the
// count kernel reports the latter; the call then fails with MF_ERR_OUT_OF_RANGE).
__device__ __forceinline__ int64_t row_target(const int64_t *labels, size_t i, const FusedParams &p)
{
    if (i >= p.N) return -1;
    const int64_t y = ce_target(labels, i, p.shift_len, p.ignore_index);
    return (y == p.ignore_index || y < 0 || y >= (int64_t)p.V) ? -1 : y;
}

// One vocabulary tile of the forward, shared by the f32 and bf16 kernels: bias and
// softcap applied to the logits in acc (in place), then, for each of the R = 2 MT rows
// this lane holds (ys: their targets), the online max m and sum-exp l, the sum of
// logits and the target logit. c0: this lane's first column.
template <typename T, int MT, int NF>
__device__ __forceinline__ void fwd_tile(float (&acc)[MT][NF][4], size_t c0, const T *bias,
                                         const FusedParams &p, const int (&ys)[2 * MT], float (&m)[2 * MT],
                                         float (&l)[2 * MT], float (&sum_s)[2 * MT], float (&s_y)[2 * MT])
{
    float tmax[2 * MT];
    MF_UNROLL
    for (int r = 0; r < 2 * MT; ++r) tmax[r] = -INFINITY;
    for_each_frag(acc, c0, [&](float &x, int r, size_t j) {
        if (j >= p.V) return;
        const float s = apply_bias_cap(x, bias, j, p.cap);
        x = s;
        tmax[r] = nan_max(tmax[r], s);
        sum_s[r] += s;
        if ((int64_t)j == (int64_t)ys[r]) s_y[r] = s;
    });
    MF_UNROLL
    for (int r = 0; r < 2 * MT; ++r) { // the row's max over the 4 lanes of its quad
        const float m_new = nan_max(m[r], quad_max(tmax[r]));
        // exp(-inf - -inf) would be NaN: an all -inf prefix contributes 0.
        l[r] = m[r] == -INFINITY ? 0.0f : l[r] * expf(m[r] - m_new);
        m[r] = m_new;
    }
    for_each_frag(acc, c0, [&](float &x, int r, size_t j) {
        if (j < p.V && m[r] != -INFINITY) l[r] += expf(x - m[r]);
    });
}

// The start of the forward for the R rows of a lane, row slot r = row rbase + 8 r: their
// targets as int (V <= INT_MAX / 2 is validated; -1 for none) and empty statistics.
template <int R>
__device__ __forceinline__ void fwd_init(const int64_t *labels, const FusedParams &p, size_t rbase,
                                         int (&ys)[R], float (&m)[R], float (&l)[R], float (&sum_s)[R],
                                         float (&s_y)[R])
{
    MF_UNROLL
    for (int r = 0; r < R; ++r) {
        ys[r] = (int)row_target(labels, rbase + (size_t)(8 * r), p);
        m[r] = -INFINITY;
        l[r] = sum_s[r] = s_y[r] = 0.0f;
    }
}

// The end of the forward for the R rows of a lane: l, sum_s and s_y summed over the
// quad (s_y: one lane holds it, the rest 0).
template <int R>
__device__ __forceinline__ void fwd_quad_sums(float (&l)[R], float (&sum_s)[R], float (&s_y)[R])
{
    MF_UNROLL
    for (int r = 0; r < R; ++r) {
        l[r] = quad_sum(l[r]);
        sum_s[r] = quad_sum(sum_s[r]);
        s_y[r] = quad_sum(s_y[r]);
    }
}

// Row 'row''s outputs from its max m and sum-exp l: lse, and the loss when it has a target.
__device__ __forceinline__ void fwd_store_row(const FusedParams &p, size_t row, float m, float l,
                                              bool has_target, float s_y, float sum_s)
{
    const float lse = m == -INFINITY ? -INFINITY : m + logf(l);
    if (p.lse_out != nullptr) p.lse_out[row] = lse;
    if (p.row_loss != nullptr)
        p.row_loss[row] = has_target ? ce_row_loss(lse, s_y, sum_s, p.eps, p.V, p.lambda) : 0.0f;
}

// Row statistics of the backward in shared memory, for the block's rows row0 + tid
// (tid < rows): target (-1: none), upstream gradient, saved lse.
__device__ __forceinline__ void bwd_row_stats(const int64_t *labels, const FusedParams &p, size_t row0,
                                              int rows, int *row_y, float *row_g, float *row_lse)
{
    const int tid = threadIdx.x;
    if (tid >= rows) return;
    const size_t i = row0 + (size_t)tid;
    const int64_t y = row_target(labels, i, p);
    row_y[tid] = (int)y;
    row_g[tid] = y >= 0 ? ce_row_grad(p.grad_loss, p.grad_per_row, p.mean, p.counters, i) : 0.0f;
    row_lse[tid] = i < p.N ? p.lse_in[i] : 0.0f;
}

// dL/dz of a recomputed tile, in place in acc (f32 and bf16 backward): row slot r is
// the block's row rbase + 8 r (row_y, row_lse, row_g: bwd_row_stats), c0 this lane's
// first column. Exact zero for ignored or padded rows, even with NaN logits. Returns
// whether some |dL/dz| >= p.filter x the row's gradient scale row_g (NaN counts as kept).
template <typename T, int MT, int NF>
__device__ __forceinline__ int dlogit_tile(float (&acc)[MT][NF][4], size_t c0, int rbase, const T *bias,
                                           const FusedParams &p, const int *row_y, const float *row_lse,
                                           const float *row_g)
{
    const float smooth = p.eps / (float)p.V;
    int keep = 0;
    for_each_frag(acc, c0, [&](float &x, int r, size_t j) {
        const int rr = rbase + 8 * r, y = row_y[rr];
        float d = 0.0f; // dL/dz over the row's gradient scale: p - y for plain cross-entropy
        if (y >= 0 && j < p.V) {
            const float s = apply_bias_cap(x, bias, j, p.cap);
            const float lse = row_lse[rr];
            d = ce_dlogit(s, lse, 1.0f + 2.0f * p.lambda * lse, smooth, (int64_t)j == (int64_t)y, p.eps,
                          p.cap);
        }
        keep |= !(fabsf(d) < p.filter); // relative to the row's scale, as CCE's softmax threshold
        x = d * row_g[rr];
    });
    return keep;
}

// ---- label pre-pass -------------------------------------------------------------
// One block: counters[0] = rows whose target is not ignore_index, counters[1] =
// the first row whose target is outside [0, V) (N if none).
// mf-budget: regs<=40 smem<=5120 spill=0  (sm_90: 30 regs 4096 B)
__global__ void __launch_bounds__(256)
    ce_fused_count_kernel(const int64_t *__restrict__ labels, size_t n_rows, int64_t shift_len,
                          int64_t ignore_index, int64_t vocab, int64_t *__restrict__ counters)
{
    __shared__ int64_t valid_sh[256];
    __shared__ int64_t bad_sh[256];
    ce_count_rows<256>(labels, n_rows, shift_len, ignore_index, vocab, counters, valid_sh, bad_sh);
}

// ---- loss = scale * sum of row losses; scale = 1/n_valid (mean, read here) or 1 -
// mf-budget: regs<=32 smem<=3072 spill=0  (sm_90: 22 regs 2048 B)
__global__ void __launch_bounds__(256)
    ce_fused_reduce_kernel(const float *__restrict__ row_loss, size_t n_rows,
                           const int64_t *__restrict__ counters, int mean, float *__restrict__ loss)
{
    __shared__ double sh[256];
    ce_reduce_losses<256>(row_loss, n_rows, counters, mean, loss, sh);
}

} // namespace cce
} // namespace MF_NS
