// Fused linear cross-entropy (MF_CE_VARIANT_FUSED, Cut Cross-Entropy class):
// the logits never leave the chip, scratch is O(N) and independent of V.
//
// Seed document 000_15d34a4d5aa90e13.txt, bug 1 (the 37 GiB of logits). The
// chunked variant (cross_entropy.cu) bounds the logits to a budget-sized fp32
// tile in device memory; this variant keeps each 64 x 64 logits tile in
// registers (forward) or registers + 16 KiB of shared memory (backward):
//
//   ce_fused_count_kernel  labels: n_valid and the first out-of-range row, in
//                          device memory (the mean's 1/n_valid is read there by
//                          the kernels below: no host copy, no mid-call sync)
//   ce_fused_fwd_kernel    one CTA per 64-row block; streams 64-column vocabulary
//                          tiles: z = hidden_blk . W_tile^T on mma.sync (bf16) or
//                          fp32 FMAs (f32) over D in 32-wide slices, bias and
//                          softcap in registers, online max / sum-exp per row,
//                          the target logit and the smoothing sum on the fly;
//                          writes lse[i] and the row loss only
//   ce_fused_reduce_kernel loss = sum of row losses (double, fixed order) x scale
//   ce_fused_bwd_kernel    one CTA per 64-row block; for each vocabulary tile:
//                          recompute z as above, dL/dz in registers from lse,
//                          G -> shared memory (fp32), then over D in 32-wide slices
//                            grad_hidden[blk, d] += G . W_tile[:, d]   (plain RMW)
//                            grad_W[tile, d]     += G^T . hidden_blk[:, d] (atomicAdd)
//                            grad_bias[tile]     += column sums of G       (atomicAdd)
//
// Accumulation order (stated in include/memfix/cross_entropy.h): a CTA owns its
// 64 rows of grad_hidden and visits the vocabulary tiles in order, so
// grad_hidden is bitwise deterministic; grad_W and grad_bias receive one fp32
// atomicAdd per CTA per element, in the order the CTAs run (not deterministic
// in the last bits when N > 64).
//
// Warp layout (4 warps, 128 threads): warp w owns rows 16w..16w+15 of the block
// in the logits tile (8 m16n8 fragments = 64 columns, 32 fp32 accumulators per
// lane). The bf16 path issues mma.sync.m16n8k16 (fp32 accumulate) with
// fragments read from shared memory following the PTX ISA tables; the f32 path
// computes the same fragment layout with fp32 FMAs (SIMT, fp32 exact products:
// the existing f32 tolerance rows apply). Both paths run in host mode.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "cross_entropy.cuh"

#include <cuda_bf16.h>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace MF_NS {
namespace cce {

constexpr int kThreads = 128;  // 4 warps
constexpr int kBM = 64;        // rows per CTA (16 per warp)
constexpr int kBN = 64;        // vocabulary columns per tile
constexpr int kBK = 32;        // slice of D per shared-memory stage
constexpr int kLdk = kBK + 8;  // padded shared row (bf16: 80 B, f32: 160 B)
constexpr int kLdg = kBN + 4;  // padded shared row of the fp32 gradient tile
constexpr int kNFrag = kBN / 8;
// Minimum CTAs per SM for __launch_bounds__: bf16 4 (<= 128 registers; with
// no minimum ptxas stopped the forward at 80 registers and spilled), f32 0 =
// unspecified (any minimum made ptxas spill the SIMT backward; without one it
// needs 128 registers and no spill). sm_90 figures: docs/cross_entropy.md.
template <typename T>
constexpr int kMinBlocks = std::is_same<T, __nv_bfloat16>::value ? 4 : 0;

__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }

// Target of row i (see cross_entropy.cu): labels[i], or with a shift of T the
// next label of the sequence, none for its last row.
__device__ __forceinline__ int64_t target(const int64_t *labels, size_t i, int64_t shift_len,
                                          int64_t ignore_index) {
    if (shift_len == 0) return labels[i];
    if ((int64_t)(i % (size_t)shift_len) == shift_len - 1) return ignore_index;
    return labels[i + 1];
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(lo)) |
           ((uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(hi)) << 16);
}

// c (16 x 8, fp32, PTX fragment layout) += A (16 x 16) . B (16 x 8); A(r, k) and
// B(k, n) are read through the functors. groupID g = lane / 4, t = lane % 4:
//   a_i: row g (+8 for i in {2,3,6,7}), col 2t + (i & 1) (+8 for i >= 4)
//   b_i: row 2t + (i & 1) (+8 for i >= 2), col g
//   c_i: row g (+8 for i >= 2), col 2t + (i & 1)
// bf16: one mma.sync (operands rounded to bf16 to nearest even: exact for bf16
// storage, the intended rounding for the fp32 gradient tile). f32: the same
// 16x8x16 product with fp32 FMAs, in k order.
template <typename T, typename FA, typename FB>
__device__ __forceinline__ void mma16816(float c[4], int lane, const FA &A, const FB &B) {
    const int g = lane >> 2, t = lane & 3;
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
        uint32_t a[4], b[2];
        a[0] = pack_bf16(A(g, 2 * t), A(g, 2 * t + 1));
        a[1] = pack_bf16(A(g + 8, 2 * t), A(g + 8, 2 * t + 1));
        a[2] = pack_bf16(A(g, 2 * t + 8), A(g, 2 * t + 9));
        a[3] = pack_bf16(A(g + 8, 2 * t + 8), A(g + 8, 2 * t + 9));
        b[0] = pack_bf16(B(2 * t, g), B(2 * t + 1, g));
        b[1] = pack_bf16(B(2 * t + 8, g), B(2 * t + 9, g));
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
        MF_UNROLL
        for (int k = 0; k < 16; ++k) {  // per element: k in order, one fmaf each
            const float a0 = A(g, k), a1 = A(g + 8, k);
            const float b0 = B(k, 2 * t), b1 = B(k, 2 * t + 1);
            c[0] = fmaf(a0, b0, c[0]);
            c[1] = fmaf(a0, b1, c[1]);
            c[2] = fmaf(a1, b0, c[2]);
            c[3] = fmaf(a1, b1, c[3]);
        }
    }
}

template <typename T>
struct Smem {
    T a[kBM][kLdk];  // hidden block slice (rows x kBK)
    T b[kBN][kLdk];  // W tile slice (vocab x kBK)
};

// acc (this warp's 16 x 64 logits, fragment layout) = hidden[row0 + ., :] .
// W[v0 + ., :]^T, zero outside [0, N) x [0, V). Every thread of the block calls
// it (barriers inside); on return sm.a / sm.b are still being read by other
// warps until the caller's next barrier.
template <typename T>
__device__ __forceinline__ void logits_tile(float (&acc)[kNFrag][4], Smem<T> &sm,
                                            const T *__restrict__ hidden,
                                            const T *__restrict__ weight, size_t N, size_t D,
                                            size_t V, size_t row0, size_t v0) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    MF_UNROLL
    for (int f = 0; f < kNFrag; ++f) acc[f][0] = acc[f][1] = acc[f][2] = acc[f][3] = 0.0f;
    for (size_t k0 = 0; k0 < D; k0 += kBK) {
        __syncthreads();  // the previous slice (or the caller's use of sm) is done
        for (int e = tid; e < kBM * kBK; e += kThreads) {
            const int r = e / kBK, k = e % kBK;
            const size_t row = row0 + (size_t)r, col = k0 + (size_t)k;
            sm.a[r][k] = (row < N && col < D) ? hidden[row * D + col] : from_f32<T>(0.0f);
            const size_t v = v0 + (size_t)r;
            sm.b[r][k] = (v < V && col < D) ? weight[v * D + col] : from_f32<T>(0.0f);
        }
        __syncthreads();
        const T(*a)[kLdk] = sm.a + warp * 16;
        MF_UNROLL
        for (int kk = 0; kk < kBK; kk += 16) {
            auto A = [&](int r, int k) { return to_f32(a[r][kk + k]); };
            MF_UNROLL
            for (int f = 0; f < kNFrag; ++f) {
                const T(*b)[kLdk] = sm.b + f * 8;
                auto B = [&](int k, int n) { return to_f32(b[n][kk + k]); };
                mma16816<T>(acc[f], lane, A, B);
            }
        }
    }
}

// Bias and softcap applied to a logit in registers.
template <typename T>
__device__ __forceinline__ float apply_bias_cap(float z, const T *bias, size_t j, float cap) {
    if (bias != nullptr) z += to_f32(bias[j]);
    if (cap > 0.0f) z = cap * tanhf(z / cap);
    return z;
}

struct FusedParams {
    size_t N, D, V;
    int64_t shift_len, ignore_index;
    float eps, lambda, cap;
    float filter;               // backward: skip tiles with every |dL/dz| < filter (0: off)
    const int64_t *counters;    // [0] n_valid, [1] first bad row (device)
    int mean;                   // reduction mean: scale by 1/n_valid read on the device
    const float *grad_loss;     // NULL = 1
    int grad_per_row;           // reduction none
    const float *lse_in;        // backward
    float *lse_out, *row_loss;  // forward (either may be NULL)
};

// A row's target for the kernels: -1 when ignored, padded, or out of range (the
// count kernel reports the latter; the call then fails with MF_ERR_OUT_OF_RANGE).
__device__ __forceinline__ int64_t row_target(const int64_t *labels, size_t i, const FusedParams &p) {
    if (i >= p.N) return -1;
    const int64_t y = target(labels, i, p.shift_len, p.ignore_index);
    return (y == p.ignore_index || y < 0 || y >= (int64_t)p.V) ? -1 : y;
}

// ---- label pre-pass -------------------------------------------------------------
// One block: counters[0] = rows whose target is not ignore_index, counters[1] =
// the first row whose target is outside [0, V) (N if none).
// mf-budget: regs<=40 smem<=5120 spill=0  (sm_90: 30 regs 4096 B)
__global__ void __launch_bounds__(256)
    ce_fused_count_kernel(const int64_t *__restrict__ labels, size_t n_rows, int64_t shift_len,
                          int64_t ignore_index, int64_t vocab, int64_t *__restrict__ counters) {
    __shared__ int64_t valid_sh[256];
    __shared__ int64_t bad_sh[256];
    const unsigned t = threadIdx.x;
    int64_t valid = 0, bad = (int64_t)n_rows;
    for (size_t i = t; i < n_rows; i += 256) {
        const int64_t y = target(labels, i, shift_len, ignore_index);
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
    for (unsigned s = 128; s > 0; s >>= 1) {
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

// ---- forward: lse and row losses, logits in registers only ----------------------
// mf-budget: regs<=128 smem<=20480 stack<=0 spill=0  (sm_90: f32 128 regs 20480 B, bf16 104 regs 10240 B)
template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocks<T>)
    ce_fused_fwd_kernel(const T *__restrict__ hidden, const T *__restrict__ weight,
                        const T *__restrict__ bias, const int64_t *__restrict__ labels,
                        FusedParams p) {
    __shared__ Smem<T> sm;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)blockIdx.x * kBM;
    // This lane's two rows (fragment rows g and g + 8 of the warp's 16); their
    // targets as int (V <= INT_MAX / 2 is validated), -1 for none.
    int ys[2];
    float m[2], l[2], sum_s[2], s_y[2];
    MF_UNROLL
    for (int h = 0; h < 2; ++h) {
        ys[h] = (int)row_target(labels, row0 + (size_t)(warp * 16 + g + 8 * h), p);
        m[h] = -INFINITY;
        l[h] = 0.0f;
        sum_s[h] = 0.0f;
        s_y[h] = 0.0f;
    }
    float acc[kNFrag][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kBN) {
        logits_tile<T>(acc, sm, hidden, weight, p.N, p.D, p.V, row0, v0);
        float tmax[2] = {-INFINITY, -INFINITY};
        MF_UNROLL
        for (int f = 0; f < kNFrag; ++f) {
            MF_UNROLL
            for (int i = 0; i < 4; ++i) {
                const int h = i >> 1;
                const size_t j = v0 + (size_t)(f * 8 + 2 * t + (i & 1));
                if (j >= p.V) continue;
                const float s = apply_bias_cap(acc[f][i], bias, j, p.cap);
                acc[f][i] = s;
                tmax[h] = nan_max(tmax[h], s);
                sum_s[h] += s;
                if ((int64_t)j == (int64_t)ys[h]) s_y[h] = s;
            }
        }
        MF_UNROLL
        for (int h = 0; h < 2; ++h) {  // row max over the 4 lanes of the group
            tmax[h] = nan_max(tmax[h], __shfl_xor_sync(0xffffffffu, tmax[h], 1));
            tmax[h] = nan_max(tmax[h], __shfl_xor_sync(0xffffffffu, tmax[h], 2));
            const float m_new = nan_max(m[h], tmax[h]);
            // exp(-inf - -inf) would be NaN: an all -inf prefix contributes 0.
            l[h] = m[h] == -INFINITY ? 0.0f : l[h] * expf(m[h] - m_new);
            m[h] = m_new;
        }
        MF_UNROLL
        for (int f = 0; f < kNFrag; ++f) {
            MF_UNROLL
            for (int i = 0; i < 4; ++i) {
                const int h = i >> 1;
                const size_t j = v0 + (size_t)(f * 8 + 2 * t + (i & 1));
                if (j < p.V && m[h] != -INFINITY) l[h] += expf(acc[f][i] - m[h]);
            }
        }
    }
    MF_UNROLL
    for (int h = 0; h < 2; ++h) {
        MF_UNROLL
        for (int o = 1; o <= 2; o <<= 1) {
            l[h] += __shfl_xor_sync(0xffffffffu, l[h], o);
            sum_s[h] += __shfl_xor_sync(0xffffffffu, sum_s[h], o);
            s_y[h] += __shfl_xor_sync(0xffffffffu, s_y[h], o);  // one lane holds it, the rest 0
        }
        const size_t row = row0 + (size_t)(warp * 16 + g + 8 * h);
        if (t != 0 || row >= p.N) continue;
        const float lse = m[h] == -INFINITY ? -INFINITY : m[h] + logf(l[h]);
        if (p.lse_out != nullptr) p.lse_out[row] = lse;
        if (p.row_loss != nullptr) {
            float loss = 0.0f;
            if (ys[h] >= 0)
                loss = lse - (1.0f - p.eps) * s_y[h] - p.eps / (float)p.V * sum_s[h] +
                       p.lambda * lse * lse;
            p.row_loss[row] = loss;
        }
    }
}

// ---- loss = scale * sum of row losses; scale = 1/n_valid (mean, read here) or 1 -
// mf-budget: regs<=32 smem<=3072 spill=0  (sm_90: 22 regs 2048 B)
__global__ void __launch_bounds__(256)
    ce_fused_reduce_kernel(const float *__restrict__ row_loss, size_t n_rows,
                           const int64_t *__restrict__ counters, int mean,
                           float *__restrict__ loss) {
    __shared__ double sh[256];
    const unsigned t = threadIdx.x;
    double acc = 0.0;
    for (size_t i = t; i < n_rows; i += 256) acc += (double)row_loss[i];
    sh[t] = acc;
    __syncthreads();
    for (unsigned s = 128; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        __syncthreads();
    }
    if (t == 0) {
        double scale = 1.0;
        if (mean) scale = counters[0] > 0 ? 1.0 / (double)counters[0] : 0.0;  // PyTorch: NaN
        loss[0] = (float)(sh[0] * scale);
    }
}

// ---- backward: recompute, dL/dz in registers, three gradient products -----------
// mf-budget: regs<=128 smem<=38912 stack<=0 spill=0  (sm_90: f32 128 regs 38912 B, bf16 100 regs 28672 B)
template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocks<T>)
    ce_fused_bwd_kernel(const T *__restrict__ hidden, const T *__restrict__ weight,
                        const T *__restrict__ bias, const int64_t *__restrict__ labels,
                        FusedParams p, float *__restrict__ grad_hidden,
                        float *__restrict__ grad_weight, float *__restrict__ grad_bias) {
    __shared__ Smem<T> sm;
    __shared__ float sg[kBM][kLdg];  // dL/dz of the tile, fp32
    __shared__ float row_lse[kBM], row_g[kBM];
    __shared__ int64_t row_y[kBM];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)blockIdx.x * kBM;
    if (tid < kBM) {
        const size_t i = row0 + (size_t)tid;
        const int64_t y = row_target(labels, i, p);
        float up = 0.0f;
        if (y >= 0) {
            up = p.grad_loss == nullptr ? 1.0f : p.grad_loss[p.grad_per_row ? i : 0];
            if (p.mean) {
                const int64_t n_valid = p.counters[0];  // > 0 here: this row is valid
                up *= (float)(1.0 / (double)n_valid);
            }
        }
        row_y[tid] = y;
        row_g[tid] = up;
        row_lse[tid] = i < p.N ? p.lse_in[i] : 0.0f;
    }
    // (visible after logits_tile's first barrier)
    const float smooth = p.eps / (float)p.V;
    const bool want_gh = grad_hidden != nullptr, want_gw = grad_weight != nullptr;
    float acc[kNFrag][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kBN) {
        logits_tile<T>(acc, sm, hidden, weight, p.N, p.D, p.V, row0, v0);
        int keep = 0;
        MF_UNROLL
        for (int f = 0; f < kNFrag; ++f) {
            MF_UNROLL
            for (int i = 0; i < 4; ++i) {
                const int r = warp * 16 + g + (i >> 1) * 8, c = f * 8 + 2 * t + (i & 1);
                const size_t j = v0 + (size_t)c;
                const int64_t y = row_y[r];
                float d = 0.0f;  // exact zero for ignored or padded rows, even with NaN logits
                if (y >= 0 && j < p.V) {
                    const float s = apply_bias_cap(acc[f][i], bias, j, p.cap);
                    const float lse = row_lse[r];
                    d = expf(s - lse) * (1.0f + 2.0f * p.lambda * lse) - smooth;
                    if ((int64_t)j == y) d -= 1.0f - p.eps;
                    if (p.cap > 0.0f) {
                        const float u = s / p.cap;
                        d *= 1.0f - u * u;
                    }
                    d *= row_g[r];
                }
                keep |= !(fabsf(d) < p.filter);  // NaN is kept
                acc[f][i] = d;
            }
        }
        __syncthreads();  // every warp is done reading sm.a / sm.b / sg of the last step
        MF_UNROLL
        for (int f = 0; f < kNFrag; ++f) {
            MF_UNROLL
            for (int i = 0; i < 4; ++i)
                sg[warp * 16 + g + (i >> 1) * 8][f * 8 + 2 * t + (i & 1)] = acc[f][i];
        }
        // Gradient filtering (off when p.filter == 0: every |d| < 0 is false).
        if (!__syncthreads_or(keep)) continue;  // also publishes sg
        if (grad_bias != nullptr && tid < kBN && v0 + (size_t)tid < p.V) {
            float s = 0.0f;
            for (int r = 0; r < kBM; ++r) s += sg[r][tid];
            atomicAdd(grad_bias + v0 + tid, s);
        }
        if (!want_gh && !want_gw) continue;
        for (size_t d0 = 0; d0 < p.D; d0 += kBK) {
            __syncthreads();  // the previous slice is consumed
            for (int e = tid; e < kBM * kBK; e += kThreads) {
                const int r = e / kBK, k = e % kBK;
                const size_t col = d0 + (size_t)k;
                const size_t row = row0 + (size_t)r, v = v0 + (size_t)r;
                sm.a[r][k] = (row < p.N && col < p.D) ? hidden[row * p.D + col] : from_f32<T>(0.0f);
                sm.b[r][k] = (v < p.V && col < p.D) ? weight[v * p.D + col] : from_f32<T>(0.0f);
            }
            __syncthreads();
            if (want_gh) {  // rows 16w.. of the block x kBK columns of D; k over the tile
                float gh[kBK / 8][4];
                MF_UNROLL
                for (int f = 0; f < kBK / 8; ++f) gh[f][0] = gh[f][1] = gh[f][2] = gh[f][3] = 0.0f;
                MF_UNROLL
                for (int kk = 0; kk < kBN; kk += 16) {
                    auto A = [&](int r, int k) { return sg[warp * 16 + r][kk + k]; };
                    MF_UNROLL
                    for (int f = 0; f < kBK / 8; ++f) {
                        auto B = [&](int k, int n) { return to_f32(sm.b[kk + k][f * 8 + n]); };
                        mma16816<T>(gh[f], lane, A, B);
                    }
                }
                MF_UNROLL
                for (int f = 0; f < kBK / 8; ++f) {
                    MF_UNROLL
                    for (int i = 0; i < 4; ++i) {
                        const size_t row = row0 + (size_t)(warp * 16 + g + (i >> 1) * 8);
                        const size_t col = d0 + (size_t)(f * 8 + 2 * t + (i & 1));
                        if (row < p.N && col < p.D) grad_hidden[row * p.D + col] += gh[f][i];
                    }
                }
            }
            if (want_gw) {  // vocabulary rows 16w.. of the tile x kBK columns; k over the rows
                float gw[kBK / 8][4];
                MF_UNROLL
                for (int f = 0; f < kBK / 8; ++f) gw[f][0] = gw[f][1] = gw[f][2] = gw[f][3] = 0.0f;
                MF_UNROLL
                for (int kk = 0; kk < kBM; kk += 16) {
                    auto A = [&](int r, int k) { return sg[kk + k][warp * 16 + r]; };
                    MF_UNROLL
                    for (int f = 0; f < kBK / 8; ++f) {
                        auto B = [&](int k, int n) { return to_f32(sm.a[kk + k][f * 8 + n]); };
                        mma16816<T>(gw[f], lane, A, B);
                    }
                }
                MF_UNROLL
                for (int f = 0; f < kBK / 8; ++f) {
                    MF_UNROLL
                    for (int i = 0; i < 4; ++i) {
                        const size_t v = v0 + (size_t)(warp * 16 + g + (i >> 1) * 8);
                        const size_t col = d0 + (size_t)(f * 8 + 2 * t + (i & 1));
                        if (v < p.V && col < p.D) atomicAdd(grad_weight + v * p.D + col, gw[f][i]);
                    }
                }
            }
        }
    }
}

// ---- launchers ------------------------------------------------------------------
struct Scratch {
    mf_context *ctx;
    void *ptr = nullptr;
    explicit Scratch(mf_context *c) : ctx(c) {}
    ~Scratch() {
        if (ptr != nullptr) mf_scratch_free(ctx, MF_MEM_DEVICE, ptr);
    }
    Scratch(const Scratch &) = delete;
    Scratch &operator=(const Scratch &) = delete;
};

template <typename T>
static mf_status launch_fwd(cudaStream_t stream, unsigned blocks, const mf_ce_args *a,
                            const FusedParams &p) {
    ce_fused_fwd_kernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T *>(a->hidden), static_cast<const T *>(a->weight),
        static_cast<const T *>(a->bias), a->labels, p);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_bwd(cudaStream_t stream, unsigned blocks, const mf_ce_args *a,
                            const FusedParams &p) {
    ce_fused_bwd_kernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T *>(a->hidden), static_cast<const T *>(a->weight),
        static_cast<const T *>(a->bias), a->labels, p, a->grad_hidden, a->grad_weight,
        a->grad_bias);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

}  // namespace cce
}  // namespace MF_NS

extern "C" mf_status MF_FN(cross_entropy_fused)(mf_context *ctx, const mf_ce_args *a) {
    using namespace MF_NS::cce;
    if (ctx == nullptr || a == nullptr)
        return mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__,
                            "ctx or args is NULL");
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const mf_cross_entropy_options &o = a->opts;
    const size_t N = (size_t)a->n_rows, D = (size_t)a->hidden_dim, V = (size_t)a->vocab;
    const size_t n_blocks = (N + kBM - 1) / kBM;
    if (n_blocks > MF_NS::kMaxGridX)
        return mf_set_error(MF_ERR_INVALID_SIZE, __func__, __FILE__, __LINE__,
                            "%zu rows need more than %zu blocks", N, (size_t)MF_NS::kMaxGridX);
    const unsigned blocks = (unsigned)n_blocks;
    const bool forward = a->mode != MF_CE_MODE_BACKWARD;
    const bool backward = a->mode != MF_CE_MODE_FORWARD;
    const bool bf16 = a->dtype == MF_DTYPE_BF16;
    const bool per_row = o.reduction == MF_CE_REDUCTION_NONE;
    const int64_t shift_len = o.shift_labels ? (o.seq_len > 0 ? o.seq_len : a->n_rows) : 0;

    // Scratch (mf_cross_entropy_fused_scratch_bytes): counters, row losses
    // (forward with mean/sum), lse (forward+backward without a caller lse).
    Scratch counters(ctx), row_loss(ctx), lse_buf(ctx);
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, 2 * sizeof(int64_t), &counters.ptr));
    int64_t *d_counters = static_cast<int64_t *>(counters.ptr);
    if (forward && !per_row)
        MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, N * sizeof(float), &row_loss.ptr));
    float *lse = a->mode == MF_CE_MODE_BACKWARD ? nullptr : a->lse_out;
    if (a->mode == MF_CE_MODE_FORWARD_BACKWARD && lse == nullptr) {
        MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, N * sizeof(float), &lse_buf.ptr));
        lse = static_cast<float *>(lse_buf.ptr);
    }

    ce_fused_count_kernel<<<1, 256, 0, stream>>>(a->labels, N, shift_len, o.ignore_index,
                                                 a->vocab, d_counters);
    MF_LAUNCH_CHECK();

    FusedParams p;
    p.N = N;
    p.D = D;
    p.V = V;
    p.shift_len = shift_len;
    p.ignore_index = o.ignore_index;
    p.eps = o.label_smoothing;
    p.lambda = o.z_loss;
    p.cap = o.softcap;
    p.filter = o.grad_filter;
    p.counters = d_counters;
    p.mean = o.reduction == MF_CE_REDUCTION_MEAN;
    p.grad_loss = a->grad_loss;
    p.grad_per_row = per_row;
    p.lse_in = nullptr;
    p.lse_out = nullptr;
    p.row_loss = nullptr;

    if (forward) {
        p.lse_out = lse;
        p.row_loss = per_row ? a->loss : static_cast<float *>(row_loss.ptr);
        MF_TRY(bf16 ? launch_fwd<__nv_bfloat16>(stream, blocks, a, p)
                    : launch_fwd<float>(stream, blocks, a, p));
        if (!per_row) {
            ce_fused_reduce_kernel<<<1, 256, 0, stream>>>(static_cast<const float *>(row_loss.ptr),
                                                          N, d_counters, p.mean, a->loss);
            MF_LAUNCH_CHECK();
        }
    }
    if (backward) {
        // grad_W and grad_bias are accumulated with atomics, grad_hidden by its
        // owning CTA: all start from zero.
        if (a->grad_hidden != nullptr)
            MF_CUDA_CHECK(cudaMemsetAsync(a->grad_hidden, 0, N * D * sizeof(float), stream));
        if (a->grad_weight != nullptr)
            MF_CUDA_CHECK(cudaMemsetAsync(a->grad_weight, 0, V * D * sizeof(float), stream));
        if (a->grad_bias != nullptr)
            MF_CUDA_CHECK(cudaMemsetAsync(a->grad_bias, 0, V * sizeof(float), stream));
        p.lse_in = a->mode == MF_CE_MODE_BACKWARD ? a->lse_in : lse;
        p.lse_out = nullptr;
        p.row_loss = nullptr;
        MF_TRY(bf16 ? launch_bwd<__nv_bfloat16>(stream, blocks, a, p)
                    : launch_bwd<float>(stream, blocks, a, p));
    }

    // The first out-of-range label (counters[1]) is a deferred check of the
    // context: copied to page-locked memory without waiting and reported by
    // the next synchronization (src/core/context.c). No read-back, no sync.
    MF_TRY(mf_context_defer_label_check(ctx, __func__, d_counters + 1, a->labels, (int64_t)N,
                                        shift_len != 0, (int64_t)V, o.ignore_index));
    return MF_OK;
}
