/* The example cross_entropy forward candidates (mf_cross_entropy_forward_candidate_fn,
 * include/memfix/<op>.h): one block per row computes the row's logits on the
 * fly in double (never stored), with a fixed-order block reduction of the
 * (max, sum exp) pairs: deterministic, unlike an atomics-based reduction.
 * 'flaw' selects the wrong examples' flaws (CE_FLAW_*). */
#ifndef MF_CE_FORWARD_COMMON_CUH
#define MF_CE_FORWARD_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "memfix/cross_entropy.h"
#include "memfix/verify.h"

#define CAND_EXPORT extern "C" __attribute__((visibility("default")))
#define CE_THREADS 128
#define CE_FLAW_NO_SMOOTHING 1 /* opts->label_smoothing ignored */
#define CE_FLAW_READ_PAST 2 /* each row prefetches 8 elements of the next row: the last reads past hidden */

__device__ __forceinline__ double ce_load(const void *p, int bf16, size_t idx)
{
    if (bf16) return (double)__uint_as_float((unsigned)((const uint16_t *)p)[idx] << 16);
    return (double)((const float *)p)[idx];
}

/* The target of row i (include/memfix/cross_entropy.h: shift_labels within sequences). */
__device__ __forceinline__ int64_t ce_target(const int64_t *labels, int64_t n, int shift, int64_t seq_len,
                                             int64_t ignore, int64_t i)
{
    if (!shift) return labels[i];
    const int64_t t = seq_len > 0 ? seq_len : n;
    return i % t == t - 1 ? ignore : labels[i + 1];
}

__global__ void ce_row_kernel(int64_t n, int64_t dim, int64_t vocab, int bf16, const void *hidden,
                              const void *weight, const void *bias, const int64_t *labels, int shift,
                              int64_t seq_len, int64_t ignore, double eps, double lam, double cap, int none,
                              int read_past, float *loss, float *lse, float *row_loss)
{
    __shared__ double s_max[CE_THREADS], s_sum[CE_THREADS], s_all[CE_THREADS], s_y[CE_THREADS];
    const int64_t i = blockIdx.x;
    const int tid = threadIdx.x;
    const int64_t y = ce_target(labels, n, shift, seq_len, ignore, i);
    double m = -INFINITY, sum = 0.0, all = 0.0, sy = 0.0;
    for (int64_t j = tid; j < vocab; j += CE_THREADS) {
        double z = bias != NULL ? ce_load(bias, bf16, (size_t)j) : 0.0;
        for (int64_t k = 0; k < dim; k++) {
            z += ce_load(hidden, bf16, (size_t)i * (size_t)dim + (size_t)k) *
                 ce_load(weight, bf16, (size_t)j * (size_t)dim + (size_t)k);
            /* the flaw: a "prefetch" of the next row, masked by a zero factor */
            if (read_past && k < 8)
                z += 0.0 * ce_load(hidden, bf16, (size_t)(i + 1) * (size_t)dim + (size_t)k);
        }
        const double s = cap > 0.0 ? cap * tanh(z / cap) : z;
        if (s > m) {
            sum = sum * exp(m - s) + 1.0;
            m = s;
        } else {
            sum += exp(s - m);
        }
        all += s;
        if (j == y) sy = s;
    }
    s_max[tid] = m;
    s_sum[tid] = sum;
    s_all[tid] = all;
    s_y[tid] = sy;
    __syncthreads();
    for (int stride = CE_THREADS / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            const double m1 = s_max[tid], m2 = s_max[tid + stride];
            const double mm = m1 > m2 ? m1 : m2;
            double s1 = m1 == -INFINITY ? 0.0 : s_sum[tid] * exp(m1 - mm);
            double s2 = m2 == -INFINITY ? 0.0 : s_sum[tid + stride] * exp(m2 - mm);
            s_max[tid] = mm;
            s_sum[tid] = s1 + s2;
            s_all[tid] += s_all[tid + stride];
            s_y[tid] += s_y[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        const double row_lse = s_max[0] + log(s_sum[0]);
        double l = 0.0;
        if (y != ignore)
            l = row_lse - (1.0 - eps) * s_y[0] - eps / (double)vocab * s_all[0] + lam * row_lse * row_lse;
        if (lse != NULL) lse[i] = (float)row_lse;
        if (none)
            loss[i] = (float)l;
        else
            row_loss[i] = (float)l;
    }
}

/* mean / sum over rows, in row order (one thread: deterministic). */
__global__ void ce_reduce_kernel(int64_t n, const int64_t *labels, int shift, int64_t seq_len, int64_t ignore,
                                 int mean, const float *row_loss, float *loss)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double total = 0.0;
    int64_t valid = 0;
    for (int64_t i = 0; i < n; i++) {
        total += (double)row_loss[i];
        valid += ce_target(labels, n, shift, seq_len, ignore, i) != ignore;
    }
    loss[0] = mean ? (valid > 0 ? (float)(total / (double)valid) : 0.0f) : (float)total;
}

static inline mf_status ce_forward_impl(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                        mf_dtype dtype, const void *hidden, const void *weight,
                                        const void *bias, const int64_t *labels,
                                        const mf_cross_entropy_options *opts, float *loss, float *lse,
                                        int flaw)
{
    if (hidden == NULL || weight == NULL || labels == NULL || loss == NULL) return MF_ERR_NULL_POINTER;
    if (n_rows <= 0 || hidden_dim <= 0 || vocab <= 0 || n_rows > 0x7fffffff) return MF_ERR_INVALID_SIZE;
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16) return MF_ERR_DTYPE;
    mf_cross_entropy_options o;
    if (opts != NULL)
        o = *opts;
    else
        mf_cross_entropy_options_init(&o);
    const int none = o.reduction == MF_CE_REDUCTION_NONE;
    void *row_loss = NULL;
    if (!none) {
        mf_status s = mf_scratch_alloc(ctx, MF_MEM_DEVICE, (size_t)n_rows * sizeof(float), &row_loss);
        if (s != MF_OK) return s;
    }
    const double eps = (flaw & CE_FLAW_NO_SMOOTHING) ? 0.0 : (double)o.label_smoothing;
    ce_row_kernel<<<(unsigned)n_rows, CE_THREADS>>>(
        n_rows, hidden_dim, vocab, dtype == MF_DTYPE_BF16, hidden, weight, bias, labels, o.shift_labels,
        o.seq_len, o.ignore_index, eps, (double)o.z_loss, (double)o.softcap, none,
        (flaw & CE_FLAW_READ_PAST) != 0, loss, lse, (float *)row_loss);
    mf_status st = cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
    if (st == MF_OK && !none) {
        ce_reduce_kernel<<<1, 1>>>(n_rows, labels, o.shift_labels, o.seq_len, o.ignore_index,
                                   o.reduction == MF_CE_REDUCTION_MEAN, (const float *)row_loss, loss);
        if (cudaGetLastError() != cudaSuccess) st = MF_ERR_BACKEND;
    }
    if (row_loss != NULL) {
        if (cudaDeviceSynchronize() != cudaSuccess) st = MF_ERR_BACKEND;
        mf_scratch_free(ctx, MF_MEM_DEVICE, row_loss);
    }
    return st;
}

#endif
