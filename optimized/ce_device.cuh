// Device helpers shared by the cross-entropy kernels of optimized/cross_entropy.cu
// (chunked) and optimized/cross_entropy_fused.cu (fused): the row target, the
// label pre-pass, the final loss reduction and the per-logit formulas of
// include/memfix/cross_entropy.h. One definition, so the two variants cannot
// drift apart.
//
// Included after "mf_cuda.h" and "mf_device.cuh"; like them, everything is
// inline inside namespace MF_NS (the nvcc and host builds define no shared symbol).
#ifndef MEMFIX_CE_DEVICE_CUH
#define MEMFIX_CE_DEVICE_CUH

#include <cstddef>
#include <cstdint>

namespace MF_NS {

// The target of row i. shift_len == 0: labels[i]. shift_len = T > 0: the next
// label of the same sequence of length T, none (ignore) for its last row.
__device__ __forceinline__ int64_t ce_target(const int64_t *labels, size_t i, int64_t shift_len,
                                             int64_t ignore_index)
{
    if (shift_len == 0) return labels[i];
    if ((int64_t)(i % (size_t)shift_len) == shift_len - 1) return ignore_index;
    return labels[i + 1];
}

// The label pre-pass of one block of kThreads threads (a power of two):
// counters[0] = rows whose target is not ignore_index, counters[1] = the first
// row whose target is outside [0, vocab) (n_rows if none). valid_sh and bad_sh:
// kThreads entries of the caller's shared memory.
template <unsigned kThreads>
__device__ __forceinline__ void
ce_count_rows(const int64_t *__restrict__ labels, size_t n_rows, int64_t shift_len, int64_t ignore_index,
              int64_t vocab, int64_t *__restrict__ counters, int64_t *valid_sh, int64_t *bad_sh)
{
    const unsigned t = threadIdx.x;
    int64_t valid = 0, bad = (int64_t)n_rows;
    for (size_t i = t; i < n_rows; i += kThreads) {
        const int64_t y = ce_target(labels, i, shift_len, ignore_index);
        if (y == ignore_index) continue;
        if (y < 0 || y >= vocab) {
            if ((int64_t)i < bad) bad = (int64_t)i;
        } else {
            ++valid;
        }
    }
    valid_sh[t] = valid;
    bad_sh[t] = bad;
    __syncthreads();
    for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
        if (t < s) {
            valid_sh[t] += valid_sh[t + s];
            if (bad_sh[t + s] < bad_sh[t]) bad_sh[t] = bad_sh[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        counters[0] = valid_sh[0];
        counters[1] = bad_sh[0];
    }
}

// loss[0] = scale * sum of row_loss (in double, fixed order: deterministic) by
// one block of kThreads threads; scale = 1 / n_valid (counters[0], read on the
// device) for the mean, else 1. sh: kThreads doubles of shared memory.
template <unsigned kThreads>
__device__ __forceinline__ void ce_reduce_losses(const float *__restrict__ row_loss, size_t n_rows,
                                                 const int64_t *__restrict__ counters, int mean,
                                                 float *__restrict__ loss, double *sh)
{
    const unsigned t = threadIdx.x;
    double acc = 0.0;
    for (size_t i = t; i < n_rows; i += kThreads) acc += (double)row_loss[i];
    sh[t] = acc;
    __syncthreads();
    for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        __syncthreads();
    }
    if (t == 0) {
        double scale = 1.0;
        if (mean) scale = counters[0] > 0 ? 1.0 / (double)counters[0] : 0.0; // PyTorch: NaN
        loss[0] = (float)(sh[0] * scale);
    }
}

// A valid row's loss from its lse, target logit s_y and logit sum sum_s:
// lse - (1 - eps) s_y - eps / V sum_s + lambda lse^2.
__device__ __forceinline__ float ce_row_loss(float lse, float s_y, float sum_s, float eps, size_t vocab,
                                             float lambda)
{
    return lse - (1.0f - eps) * s_y - eps / (float)vocab * sum_s + lambda * lse * lse;
}

// The upstream gradient of a valid row i: grad_loss (NULL = 1; per row for
// reduction none) times 1 / n_valid for the mean (n_valid = counters[0] > 0:
// this row is valid).
__device__ __forceinline__ float ce_row_grad(const float *grad_loss, int grad_per_row, int mean,
                                             const int64_t *counters, size_t i)
{
    const float up = grad_loss == nullptr ? 1.0f : grad_loss[grad_per_row ? i : 0];
    return mean ? up * (float)(1.0 / (double)counters[0]) : up;
}

// dL/dz of one logit before the row's upstream factor: s its softcapped logit,
// zl = 1 + 2 lambda lse, smooth = eps / V; the target's logit also gets
// -(1 - eps); softcapping multiplies by its derivative 1 - (s / cap)^2.
__device__ __forceinline__ float ce_dlogit(float s, float lse, float zl, float smooth, bool is_target,
                                           float eps, float cap)
{
    float d = expf(s - lse) * zl - smooth;
    if (is_target) d -= 1.0f - eps;
    if (cap > 0.0f) {
        const float u = s / cap;
        d *= 1.0f - u * u;
    }
    return d;
}

} // namespace MF_NS

#endif
