// Fused linear cross-entropy (MF_CE_VARIANT_FUSED, Cut Cross-Entropy class):
// the logits never leave the chip, scratch is O(N) and independent of V.
//
// Seed document 000_15d34a4d5aa90e13.txt, bug 1 (the 37 GiB of logits). The
// chunked variant (cross_entropy.cu) bounds the logits to a budget-sized fp32
// tile in device memory; this variant keeps each logits tile on chip:
//
//   ce_fused_count_kernel    labels: n_valid and the first out-of-range row, in
//                            device memory (the mean's 1/n_valid is read there by
//                            the kernels below: no host copy, no mid-call sync)
//   ce_fused_fwd_mma_kernel  bf16: one CTA (8 warps) per 128-row block; streams
//                            128-column vocabulary tiles, z = hidden_blk . W_tile^T
//                            on mma.sync.m16n8k16 fed by ldmatrix from a cp.async
//                            double-buffered pipeline over D (32-wide slices), the
//                            tile in registers (64 fp32 per lane); bias, softcap,
//                            online max / sum-exp, target logit and smoothing sum
//                            in registers; writes lse[i] and the row loss only
//   ce_fused_bwd_mma_kernel  bf16: the same CTA walk, in strips of 4 tiles (512
//                            columns): recompute z, dL/dz in registers from lse,
//                            G -> shared memory (bf16, 128 x 512), then a second
//                            pass over D: warps 0-3 grad_hidden[blk] += G . W_strip
//                            (registers over the strip, one plain RMW per strip),
//                            warps 4-7 grad_W[tile] += G^T . hidden_blk (atomicAdd);
//                            grad_bias by shuffles + atomicAdd
//   ce_fused_fwd_wgmma_kernel, ce_fused_bwd_wgmma_kernel
//                            bf16 on sm_90a: the same walks with every product on
//                            wgmma.mma_async (the forward's logits: 128 x 256 tiles,
//                            m64n256k16 per warpgroup; the backward's recompute
//                            128 x 128, m64n128k16;
//                            the backward's G . W_strip and G^T . hidden
//                            m64n64k16 from G in a 128B-swizzled canonical layout
//                            and the stage's slices read MN-major)
//   ce_fused_fwd_kernel<float>, ce_fused_bwd_kernel<float>
//                            f32: the same algorithm on 64 x 64 tiles, 4 warps,
//                            fp32 FMAs (SIMT; G kept in fp32)
//   ce_fused_reduce_kernel   loss = sum of row losses (double, fixed order) x scale
//
// Accumulation order (stated in include/memfix/cross_entropy.h): a CTA owns its
// rows of grad_hidden and visits the vocabulary tiles in order, so grad_hidden
// is bitwise deterministic; grad_W and grad_bias receive fp32 atomicAdds, in the
// order the CTAs run (not deterministic in the last bits with several row
// blocks). Sizes, ptxas figures and the performance argument:
// docs/cross_entropy.md. All kernels run in host mode (cudahost/ emulates
// mma.sync, ldmatrix and cp.async).
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"
#include "mf_wgmma.cuh"
#include "ce_device.cuh"
#include "cross_entropy.cuh"

#include <cuda_bf16.h>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace MF_NS {
namespace cce {

constexpr int kThreads = 128; // 4 warps
constexpr int kBM = 64;       // rows per CTA (16 per warp)
constexpr int kBN = 64;       // vocabulary columns per tile
constexpr int kBK = 32;       // slice of D per shared-memory stage
constexpr int kLdk = kBK + 8; // padded shared row (bf16: 80 B, f32: 160 B)
constexpr int kLdg = kBN + 4; // padded shared row of the fp32 gradient tile
constexpr int kNFrag = kBN / 8;
// These 64 x 64 SIMT kernels serve f32 inputs only (bf16: the tensor-core
// kernels further down). No minimum CTAs per SM in __launch_bounds__: any
// minimum made ptxas spill the SIMT backward; without one it needs 128
// registers and no spill. sm_90 figures: docs/cross_entropy.md.

// c (16 x 8, fp32, PTX fragment layout) += A (16 x 16) . B (16 x 8); A(r, k) and
// B(k, n) are read through the functors. groupID g = lane / 4, t = lane % 4:
//   a_i: row g (+8 for i in {2,3,6,7}), col 2t + (i & 1) (+8 for i >= 4)
//   b_i: row 2t + (i & 1) (+8 for i >= 2), col g
//   c_i: row g (+8 for i >= 2), col 2t + (i & 1)
// f32 only: the 16x8x16 product with fp32 FMAs, in k order (the bf16 kernels
// issue the real mma.sync, fed by ldmatrix).
template <typename T, typename FA, typename FB>
__device__ __forceinline__ void mma16816(float c[4], int lane, const FA &A, const FB &B)
{
    const int g = lane >> 2, t = lane & 3;
    MF_UNROLL
    for (int k = 0; k < 16; ++k) { // per element: k in order, one fmaf each
        const float a0 = A(g, k), a1 = A(g + 8, k);
        const float b0 = B(k, 2 * t), b1 = B(k, 2 * t + 1);
        c[0] = fmaf(a0, b0, c[0]);
        c[1] = fmaf(a0, b1, c[1]);
        c[2] = fmaf(a1, b0, c[2]);
        c[3] = fmaf(a1, b1, c[3]);
    }
}

template <typename T> struct Smem {
    T a[kBM][kLdk]; // hidden block slice (rows x kBK)
    T b[kBN][kLdk]; // W tile slice (vocab x kBK)
};

// sm <- hidden[row0 .. +63, k0 .. +31] and W[v0 .. +63, k0 .. +31], zero outside
// [0, N) x [0, D) and [0, V) x [0, D).
template <typename T>
__device__ __forceinline__ void load_slice(Smem<T> &sm, const T *__restrict__ hidden,
                                           const T *__restrict__ weight, size_t N, size_t D, size_t V,
                                           size_t row0, size_t v0, size_t k0)
{
    for (int e = threadIdx.x; e < kBM * kBK; e += kThreads) {
        const int r = e / kBK, k = e % kBK;
        const size_t row = row0 + (size_t)r, col = k0 + (size_t)k;
        sm.a[r][k] = (row < N && col < D) ? hidden[row * D + col] : from_f32<T>(0.0f);
        const size_t v = v0 + (size_t)r;
        sm.b[r][k] = (v < V && col < D) ? weight[v * D + col] : from_f32<T>(0.0f);
    }
}

// acc (this warp's 16 x 64 logits, fragment layout) = hidden[row0 + ., :] .
// W[v0 + ., :]^T, zero outside [0, N) x [0, V). Every thread of the block calls
// it (barriers inside); on return sm.a / sm.b are still being read by other
// warps until the caller's next barrier.
template <typename T>
__device__ __forceinline__ void logits_tile(float (&acc)[1][kNFrag][4], Smem<T> &sm,
                                            const T *__restrict__ hidden, const T *__restrict__ weight,
                                            size_t N, size_t D, size_t V, size_t row0, size_t v0)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    frags_zero(acc);
    for (size_t k0 = 0; k0 < D; k0 += kBK) {
        __syncthreads(); // the previous slice (or the caller's use of sm) is done
        load_slice(sm, hidden, weight, N, D, V, row0, v0, k0);
        __syncthreads();
        const T(*a)[kLdk] = sm.a + warp * 16;
        MF_UNROLL
        for (int kk = 0; kk < kBK; kk += 16) {
            auto A = [&](int r, int k) { return to_f32(a[r][kk + k]); };
            MF_UNROLL
            for (int f = 0; f < kNFrag; ++f) {
                const T(*b)[kLdk] = sm.b + f * 8;
                auto B = [&](int k, int n) { return to_f32(b[n][kk + k]); };
                mma16816<T>(acc[0][f], lane, A, B);
            }
        }
    }
}

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

// ---- forward: lse and row losses, logits in registers only ----------------------
// mf-budget: regs<=128 smem<=20480 stack<=0 spill=0  (sm_90: f32 106 regs 20480 B)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ce_fused_fwd_kernel(const T *__restrict__ hidden, const T *__restrict__ weight,
                        const T *__restrict__ bias, const int64_t *__restrict__ labels, FusedParams p)
{
    __shared__ Smem<T> sm;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)blockIdx.x * kBM;
    // This lane's two rows: fragment rows g and g + 8 of the warp's 16.
    int ys[2];
    float m[2], l[2], sum_s[2], s_y[2];
    fwd_init(labels, p, row0 + (size_t)(warp * 16 + g), ys, m, l, sum_s, s_y);
    float acc[1][kNFrag][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kBN) {
        logits_tile<T>(acc, sm, hidden, weight, p.N, p.D, p.V, row0, v0);
        fwd_tile(acc, v0 + (size_t)(2 * t), bias, p, ys, m, l, sum_s, s_y);
    }
    fwd_quad_sums(l, sum_s, s_y);
    MF_UNROLL
    for (int h = 0; h < 2; ++h) {
        const size_t row = row0 + (size_t)(warp * 16 + g + 8 * h);
        if (t == 0 && row < p.N) fwd_store_row(p, row, m[h], l[h], ys[h] >= 0, s_y[h], sum_s[h]);
    }
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

// One kBK-wide slice of a gradient product of the f32 backward, for this warp's 16 rows:
// TR false: (G . B)[16 w .., :] with B = the W slice (grad_hidden); TR true: (G^T . B)
// with B = the hidden slice (grad_W); k runs over the 64 columns (rows) of G.
// out(r, col, x) adds x at row r of the 64 and column col of D (c0 = d0 + 2 t).
template <bool TR, typename T, typename Out>
__device__ __forceinline__ void grad_slice(const float (*sg)[kLdg], const T (*b)[kLdk], size_t c0, Out &&out)
{
    static_assert(kBM == kBN, "G is square: k runs over 64 either way");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2;
    float o[1][kBK / 8][4];
    frags_zero(o);
    MF_UNROLL
    for (int kk = 0; kk < kBN; kk += 16) {
        auto A = [&](int r, int k) { return TR ? sg[kk + k][warp * 16 + r] : sg[warp * 16 + r][kk + k]; };
        MF_UNROLL
        for (int f = 0; f < kBK / 8; ++f) {
            auto B = [&](int k, int n) { return to_f32(b[kk + k][f * 8 + n]); };
            mma16816<T>(o[0][f], lane, A, B);
        }
    }
    for_each_frag(o, c0, [&](float &x, int r, size_t col) { out((size_t)(warp * 16 + g + 8 * r), col, x); });
}

// ---- backward: recompute, dL/dz in registers, three gradient products -----------
// mf-budget: regs<=128 smem<=38912 stack<=0 spill=0 sm_80:regs<=152  (sm_90: f32 128 regs 38656 B; sm_80: f32 150 regs, 3 blocks per SM instead of 4)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ce_fused_bwd_kernel(const T *__restrict__ hidden, const T *__restrict__ weight,
                        const T *__restrict__ bias, const int64_t *__restrict__ labels, FusedParams p,
                        float *__restrict__ grad_hidden, float *__restrict__ grad_weight,
                        float *__restrict__ grad_bias)
{
    __shared__ Smem<T> sm;
    __shared__ float sg[kBM][kLdg]; // dL/dz of the tile, fp32
    __shared__ float row_lse[kBM], row_g[kBM];
    __shared__ int row_y[kBM];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)blockIdx.x * kBM;
    bwd_row_stats(labels, p, row0, kBM, row_y, row_g, row_lse); // (visible after logits_tile's first barrier)
    const bool want_gh = grad_hidden != nullptr, want_gw = grad_weight != nullptr;
    float acc[1][kNFrag][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kBN) {
        logits_tile<T>(acc, sm, hidden, weight, p.N, p.D, p.V, row0, v0);
        const int keep =
            dlogit_tile(acc, v0 + (size_t)(2 * t), warp * 16 + g, bias, p, row_y, row_lse, row_g);
        __syncthreads(); // every warp is done reading sm.a / sm.b / sg of the last step
        for_each_frag(acc, (size_t)(2 * t),
                      [&](float &x, int r, size_t c) { sg[warp * 16 + g + 8 * r][c] = x; });
        // Gradient filtering (off when p.filter == 0: every |d| < 0 is false).
        if (!__syncthreads_or(keep)) continue; // also publishes sg
        if (grad_bias != nullptr && tid < kBN && v0 + (size_t)tid < p.V) {
            float s = 0.0f;
            for (int r = 0; r < kBM; ++r) s += sg[r][tid];
            atomicAdd(grad_bias + v0 + tid, s);
        }
        if (!want_gh && !want_gw) continue;
        for (size_t d0 = 0; d0 < p.D; d0 += kBK) {
            __syncthreads(); // the previous slice is consumed
            load_slice(sm, hidden, weight, p.N, p.D, p.V, row0, v0, d0);
            __syncthreads();
            // grad_hidden: rows 16w.. of the block x kBK columns of D, k over the tile's columns
            if (want_gh)
                grad_slice<false>(sg, sm.b, d0 + (size_t)(2 * t), [&](size_t r, size_t col, float x) {
                    const size_t row = row0 + r;
                    if (row < p.N && col < p.D) grad_hidden[row * p.D + col] += x;
                });
            // grad_W: vocabulary rows 16w.. of the tile x kBK columns, k over the block's rows
            if (want_gw)
                grad_slice<true>(sg, sm.a, d0 + (size_t)(2 * t), [&](size_t r, size_t col, float x) {
                    const size_t v = v0 + r;
                    if (v < p.V && col < p.D) atomicAdd(grad_weight + v * p.D + col, x);
                });
        }
    }
}

// ==== bf16: the tensor-core kernels ================================================
// One CTA of 8 warps (256 threads) per 128-row block; the vocabulary streams by in
// 128-column tiles. The logits tile (128 x 128, fp32) lives in registers: warp
// w = 4 wn + wm owns rows 32 wm .. 32 wm + 31 (two m16 tiles) x columns
// 64 wn .. 64 wn + 63 (eight n8 fragments): 64 fp32 accumulators per lane, and
// every fragment it loads from shared memory feeds two (A) or eight (B) mma.sync.
// The operands stream over D in 32-wide slices through two shared stages filled
// by cp.async one slice ahead of use (16-byte copies with zero fill; a D that is
// not a multiple of 8, or an unaligned pointer, takes plain loads instead: the
// same stages, no overlap) and reach the tensor cores through ldmatrix.
// docs/cross_entropy.md has the sizes, ptxas figures and the performance argument.
constexpr int kTcWarps = 8;
constexpr int kTcThreads = 32 * kTcWarps;
constexpr int kTcBM = 128; // rows per CTA
constexpr int kTcBN = 128; // vocabulary columns per tile
constexpr int kTcBK = 32;  // slice of D per stage
constexpr int kTcLdk =
    kTcBK + 8;              // stage row: 80 B (16-byte multiple; 8 rows hit 8 distinct 16-B bank groups)
constexpr int kTcStrip = 4; // backward: vocabulary tiles per strip (512 columns; the wgmma kernel's always)
// The mma.sync backward's strip of S tiles keeps G in shared memory: rows of 128 S + 8
// bf16 (S = 4: 1040 B; S = 3: 784 B; 16-byte multiples, 8 rows hit 8 distinct 16-B bank
// groups). S = 4 needs 175,616 B per block with the static row statistics, more than an
// A100's 166,912 B: the launcher takes S = 3 (142,848 B) where 4 does not fit.
__host__ __device__ constexpr int tc_ldg(int strip) { return kTcBN * strip + 8; }
static_assert(kTcBM == kTcBN, "the scalar stage loader fills both operands in one loop");

typedef __nv_bfloat16 bf16;

struct TcStage {
    bf16 a[kTcBM][kTcLdk]; // hidden[row0 .., k0 .. k0 + 31]
    bf16 b[kTcBN][kTcLdk]; // W[v0 .., k0 .. k0 + 31]
};
constexpr size_t tc_bwd_smem(int strip) { return 2 * sizeof(TcStage) + sizeof(bf16) * kTcBM * tc_ldg(strip); }
constexpr size_t kTcBwdStatic = kTcBM * (2 * sizeof(float) + sizeof(int)); // row_lse, row_g, row_y

// Stage <- hidden[row0 .. +127, k0 .. +31] and W[v0 .. +127, k0 .. +31], zero
// outside [0, N) x [0, D) and [0, V) x [0, D). vec: D % 8 == 0 and both bases
// 16-byte aligned (cp.async, completes at a wait); else plain loads (complete here).
__device__ __forceinline__ void tc_load_stage(TcStage &st, const bf16 *__restrict__ hidden,
                                              const bf16 *__restrict__ weight, size_t N, size_t D, size_t V,
                                              size_t row0, size_t v0, size_t k0, bool vec)
{
    const int tid = threadIdx.x;
    if (vec) {
        constexpr int kChunks = kTcBK / 8; // 16-byte chunks per stage row
        MF_UNROLL
        for (int c = tid; c < (kTcBM + kTcBN) * kChunks; c += kTcThreads) {
            const int r = c / kChunks, kc = (c % kChunks) * 8;
            const bool is_a = r < kTcBM;
            const int rr = is_a ? r : r - kTcBM;
            const size_t row = (is_a ? row0 : v0) + (size_t)rr, col = k0 + (size_t)kc;
            const bool in = row < (is_a ? N : V) && col < D;
            const bf16 *src = (is_a ? hidden : weight) + (in ? row * D + col : 0);
            cp_async16(is_a ? &st.a[rr][kc] : &st.b[rr][kc], src, in ? 16u : 0u);
        }
    } else {
        const bf16 zero = __float2bfloat16(0.0f);
        for (int e = tid; e < kTcBM * kTcBK; e += kTcThreads) {
            const int r = e / kTcBK, k = e % kTcBK;
            const size_t col = k0 + (size_t)k, row = row0 + (size_t)r, v = v0 + (size_t)r;
            st.a[r][k] = (row < N && col < D) ? hidden[row * D + col] : zero;
            st.b[r][k] = (v < V && col < D) ? weight[v * D + col] : zero;
        }
    }
}

// acc (warp (wm, wn)'s 32 x 64 logits, fragment layout: acc[mt][f][i] is row
// 32 wm + 16 mt + g + 8 (i >> 1), column 64 wn + 8 f + 2 t + (i & 1)) =
// hidden[row0 + ., :] . W[v0 + ., :]^T. Every thread calls it; it ends with a
// barrier, so the stages are free on return.
__device__ __forceinline__ void tc_logits_tile(float (&acc)[2][8][4], TcStage *st,
                                               const bf16 *__restrict__ hidden,
                                               const bf16 *__restrict__ weight, size_t N, size_t D, size_t V,
                                               size_t row0, size_t v0, bool vec)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp & 3, wn = warp >> 2;
    frags_zero(acc);
    const size_t n_slices = (D + kTcBK - 1) / kTcBK;
    tc_load_stage(st[0], hidden, weight, N, D, V, row0, v0, 0, vec);
    cp_async_commit();
    for (size_t s = 0; s < n_slices; ++s) {
        if (s + 1 < n_slices) // prefetch: its stage was released by the last barrier
            tc_load_stage(st[(s + 1) & 1], hidden, weight, N, D, V, row0, v0, (s + 1) * kTcBK, vec);
        cp_async_commit();
        cp_async_wait_1();
        __syncthreads();
        const TcStage &c = st[s & 1];
        MF_UNROLL
        for (int kk = 0; kk < kTcBK; kk += 16) {
            uint32_t a[2][4];
            MF_UNROLL
            for (int mt = 0; mt < 2; ++mt)
                ldsm_x4(a[mt], &c.a[32 * wm + 16 * mt + (lane & 15)][kk + (lane >> 4) * 8]);
            MF_UNROLL
            for (int fp = 0; fp < 4; ++fp) { // two n8 fragments per ldmatrix.x4
                uint32_t b[4];
                ldsm_x4(
                    b, &c.b[64 * wn + 16 * fp + (lane & 7) + ((lane >> 4) << 3)][kk + ((lane >> 3) & 1) * 8]);
                MF_UNROLL
                for (int mt = 0; mt < 2; ++mt) {
                    mma_x2(acc[mt][2 * fp], acc[mt][2 * fp + 1], a[mt], b);
                }
            }
        }
        __syncthreads(); // stage s & 1 is consumed: the next prefetch may overwrite it
    }
}

// ---- bf16 forward: lse and row losses ----------------------------------------------
// Each warp keeps an online (max, sum-exp, sum of logits, target logit) for its
// 4 rows per lane over its 64-column half of every tile; the two halves (wn = 0,
// 1) are combined once at the end, the vocabulary-split combine in miniature.
// mf-budget: regs<=255 smem<=45056 stack<=0 spill=0  (sm_90: see docs/cross_entropy.md)
__global__ void __launch_bounds__(kTcThreads, 1)
    ce_fused_fwd_mma_kernel(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                            const bf16 *__restrict__ bias, const int64_t *__restrict__ labels, FusedParams p,
                            int vec)
{
    __shared__ __align__(16) TcStage st[2];
    __shared__ float part[4][2][kTcBM]; // (m, l, sum_s, s_y) x column half x row
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3, wm = warp & 3, wn = warp >> 2;
    const size_t row0 = (size_t)blockIdx.x * kTcBM;
    int ys[4]; // this lane's rows: r = 2 mt + h -> 32 wm + 16 mt + 8 h + g
    float m[4], l[4], sum_s[4], s_y[4];
    fwd_init(labels, p, row0 + (size_t)(32 * wm + g), ys, m, l, sum_s, s_y);
    float acc[2][8][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kTcBN) {
        tc_logits_tile(acc, st, hidden, weight, p.N, p.D, p.V, row0, v0, vec != 0);
        fwd_tile(acc, v0 + (size_t)(64 * wn + 2 * t), bias, p, ys, m, l, sum_s, s_y);
    }
    fwd_quad_sums(l, sum_s, s_y);
    if (t == 0) {
        MF_UNROLL
        for (int r = 0; r < 4; ++r) {
            const int rr = 32 * wm + 8 * r + g;
            part[0][wn][rr] = m[r];
            part[1][wn][rr] = l[r];
            part[2][wn][rr] = sum_s[r];
            part[3][wn][rr] = s_y[r];
        }
    }
    __syncthreads();
    const size_t row = row0 + (size_t)tid;
    if (tid >= kTcBM || row >= p.N) return;
    const float m0 = part[0][0][tid], m1 = part[0][1][tid], mm = nan_max(m0, m1);
    float lsum = 0.0f; // the halves' sum-exps rebased to the joint max
    if (m0 != -INFINITY) lsum += part[1][0][tid] * expf(m0 - mm);
    if (m1 != -INFINITY) lsum += part[1][1][tid] * expf(m1 - mm);
    fwd_store_row(p, row, mm, lsum, row_target(labels, row, p) >= 0, part[3][0][tid] + part[3][1][tid],
                  part[2][0][tid] + part[2][1][tid]);
}

// ==== bf16 on sm_90a: warpgroup MMA (wgmma) =========================================
// The same CTA walk as the mma.sync kernels (128-row blocks, 128-column vocabulary
// tiles, 8 warps), with the logits tile computed by the two warpgroups of the CTA:
// warpgroup wg = warp / 4 owns rows 64 wg .. 64 wg + 63 and all 128 columns, one
// wgmma.mma_async.m64n128k16 per 16 of D (A = hidden rows, B = W rows, both K-major
// in shared memory, read through matrix descriptors). Its accumulator layout: warp
// w = warp % 4 of the warpgroup owns rows 16 w .. 16 w + 15, and per 8-column block
// the mma.m16n8 pattern, so a thread holds acc[0][f][i] = row 16 w + g + 8 (i >> 1),
// column 8 f + 2 t + (i & 1): the epilogue helpers above (for_each_frag's
// layout with MT = 1, NF = 16) apply unchanged, and a row's 128 columns sit in the 4
// lanes of one quad (no cross-warp combine). The forward uses 256-column tiles instead
// (wg_logits_tile<256>: m64n256k16, NF = 32, 48 KiB stages); the backward keeps 128
// (its G strip and gradient products need the registers).
// Operands stream over D in 64-wide slices (128-byte rows, the 128-byte swizzle:
// the 16-byte chunk c of row r at chunk c ^ (r % 8)) through two 32 KiB stages of
// dynamic shared memory (1024-byte aligned: the swizzle's period) filled by
// cp.async one slice ahead (plain loads when D % 8 != 0 or a base is unaligned).
// Compiled with a real body where the wgmma instructions exist (sm_90a code, or
// host mode); elsewhere the kernels are stubs that trap, and the launcher never
// picks them (wgmma_available()).
constexpr int kWgBK = 64;                            // slice of D per stage: 128-byte rows
constexpr int kWgOperandBytes = kTcBM * kWgBK * 2;   // one operand of a stage: 16 KiB
constexpr int kWgStageBytes = 2 * kWgOperandBytes;   // hidden slice + W slice
constexpr size_t kWgStagesBytes = 2 * kWgStageBytes; // double-buffered: 64 KiB
constexpr size_t kWgAlign = 1024;                    // slack to align the dynamic smem base
// The forward's vocabulary tiles are 256 wide (m64n256k16: 128 accumulators per thread);
// its stages hold the hidden slice (16 KiB) and a 256-row W slice (32 KiB).
constexpr int kWgFwdBN = 256;
constexpr int kWgFwdStageBytes = kWgOperandBytes + kWgFwdBN * kWgBK * 2; // 48 KiB
constexpr size_t kWgFwdSmem = kWgAlign + 2 * (size_t)kWgFwdStageBytes;
// The backward's strip of G (dL/dz, bf16, 128 rows x kTcStrip * 128 columns) in the wgmma
// canonical layout: 64-column chunks of 128 rows x 128 bytes, 128B-swizzled, 16 KiB each.
constexpr size_t kWgGBytes = (size_t)kTcStrip * (kTcBN / kWgBK) * kWgOperandBytes; // 128 KiB
constexpr size_t kWgBwdSmem = kWgAlign + kWgStagesBytes + kWgGBytes;
static_assert(kTcBM == kTcBN && kTcBM == 128, "two m64 warpgroups x n128");
static_assert(kWgStagesBytes % kWgAlign == 0, "the G strip starts 1024-byte aligned");

// Byte offset of G(r, c) (row r < 128, strip column c) in the strip: chunk c / 64, then as a
// K-major 128B-swizzled operand (K = the vocabulary column).
__device__ __forceinline__ int wg_g_off(int r, int c)
{
    return (c >> 6) * kWgOperandBytes + wg_sw128(r, c & 63);
}

// Descriptor of an MN-major operand (imm-trans 1) stored as rows of 64 MN elements (128 bytes)
// per k, 128B-swizzled: element (mn, k) at (mn % 64) 2 + (k % 8) 128 + (k / 8) SBO, SBO = 1024
// (the next 8 k). LBO is the stride to the next 64 of MN, never used here (every MN-major
// operand is 64 wide: n64 for B, one 16 KiB G chunk for A); set to that chunk stride, 16 KiB.
__device__ __forceinline__ uint64_t wg_desc_mn128(uint32_t addr)
{
    return wg_desc(addr, (uint32_t)kWgOperandBytes, 1024u, 1);
}

// Stage (at st, 1024-byte aligned) <- hidden[row0 .. +127, k0 .. +63] (first 16 KiB) and
// W[v0 .. +BN-1, k0 .. +63] (next BN x 128 bytes), 128B-swizzled K-major, zero outside
// [0, N) x [0, D) and [0, V) x [0, D). vec: cp.async 16-byte chunks (complete at a wait); else
// plain loads. BN = 128: the backward's and the 128-column tiles'; 256: the forward's.
template <int BN>
__device__ __forceinline__ void wg_load_stage(unsigned char *st, const bf16 *__restrict__ hidden,
                                              const bf16 *__restrict__ weight, size_t N, size_t D, size_t V,
                                              size_t row0, size_t v0, size_t k0, bool vec)
{
    const int tid = threadIdx.x;
    if (vec) {
        constexpr int kChunks = kWgBK / 8; // 16-byte chunks per row
        MF_UNROLL
        for (int c = tid; c < (kTcBM + BN) * kChunks; c += kTcThreads) {
            const int r = c / kChunks, kc = c % kChunks;
            const bool is_a = r < kTcBM;
            const int rr = is_a ? r : r - kTcBM;
            const size_t row = (is_a ? row0 : v0) + (size_t)rr, col = k0 + (size_t)(8 * kc);
            const bool in = row < (is_a ? N : V) && col < D;
            const bf16 *src = (is_a ? hidden : weight) + (in ? row * D + col : 0);
            cp_async16(st + (is_a ? 0 : kWgOperandBytes) + wg_sw128(rr, 8 * kc), src, in ? 16u : 0u);
        }
    } else if constexpr (BN == kTcBM) { // one (r, k) of both operands per iteration
        const bf16 zero = __float2bfloat16(0.0f);
        for (int e = tid; e < kTcBM * kWgBK; e += kTcThreads) {
            const int r = e / kWgBK, k = e % kWgBK;
            const size_t col = k0 + (size_t)k, row = row0 + (size_t)r, v = v0 + (size_t)r;
            const int off = wg_sw128(r, k);
            *reinterpret_cast<bf16 *>(st + off) = (row < N && col < D) ? hidden[row * D + col] : zero;
            *reinterpret_cast<bf16 *>(st + kWgOperandBytes + off) =
                (v < V && col < D) ? weight[v * D + col] : zero;
        }
    } else {
        const bf16 zero = __float2bfloat16(0.0f);
        for (int e = tid; e < (kTcBM + BN) * kWgBK; e += kTcThreads) {
            const int r = e / kWgBK, k = e % kWgBK;
            const bool is_a = r < kTcBM;
            const int rr = is_a ? r : r - kTcBM;
            const size_t row = (is_a ? row0 : v0) + (size_t)rr, col = k0 + (size_t)k;
            const bool in = row < (is_a ? N : V) && col < D;
            *reinterpret_cast<bf16 *>(st + (is_a ? 0 : kWgOperandBytes) + wg_sw128(rr, k)) =
                in ? (is_a ? hidden : weight)[row * D + col] : zero;
        }
    }
}

// acc (warpgroup warp / 4's 64 x BN logits: acc[0][f][i] is row 16 w + g + 8 (i >> 1), column
// 8 f + 2 t + (i & 1)) = hidden[row0 + ., :] . W[v0 + ., :]^T, one wgmma.m64nBNk16 per 16 of D
// (BN = 128: the backward's recompute; 256: the forward). smem: the two stages (1024-byte
// aligned). Every thread calls it; it ends with a barrier, so the stages are free on return.
template <int BN>
__device__ __forceinline__ void wg_logits_tile(float (&acc)[1][BN / 8][4], unsigned char *smem,
                                               const bf16 *__restrict__ hidden,
                                               const bf16 *__restrict__ weight, size_t N, size_t D, size_t V,
                                               size_t row0, size_t v0, bool vec)
{
    static_assert(BN == 128 || BN == 256, "m64n128k16 or m64n256k16");
    constexpr int kStage = kWgOperandBytes + BN * kWgBK * 2;
    float(&d)[BN / 2] = reinterpret_cast<float(&)[BN / 2]>(acc);
    const uint32_t a_off = (uint32_t)((threadIdx.x >> 7) * 64 * 128); // the warpgroup's 64 rows
    const size_t n_slices = (D + kWgBK - 1) / kWgBK;
    wg_load_stage<BN>(smem, hidden, weight, N, D, V, row0, v0, 0, vec);
    cp_async_commit();
    for (size_t s = 0; s < n_slices; ++s) {
        if (s + 1 < n_slices) // prefetch: its stage was released by the last barrier
            wg_load_stage<BN>(smem + ((s + 1) & 1) * kStage, hidden, weight, N, D, V, row0, v0,
                              (s + 1) * kWgBK, vec);
        cp_async_commit();
        cp_async_wait_1();
        wg_fence_proxy(); // this thread's stage writes, before the barrier publishes them to wgmma
        __syncthreads();
        const uint32_t base = smem_u32(smem + (s & 1) * kStage);
        const uint64_t da0 = wg_desc_sw128(base + a_off), db0 = wg_desc_sw128(base + kWgOperandBytes);
        wg_fence(); // the accumulators were last written by ordinary instructions
        MF_UNROLL
        for (int kk = 0; kk < kWgBK / 16; ++kk) { // k16 steps: +32 bytes inside the swizzled rows
            const uint64_t da = wg_desc_add(da0, 32u * kk), db = wg_desc_add(db0, 32u * kk);
            if constexpr (BN == 128)
                wg_mma<128>(d, da, db, s > 0 || kk > 0);
            else
                wg_mma<256>(d, da, db, s > 0 || kk > 0);
        }
        wg_commit();
        wg_wait_all();
        __syncthreads(); // stage s & 1 is consumed: the next prefetch may overwrite it
    }
}

// ---- bf16 forward on wgmma: lse and row losses --------------------------------------
// A thread's 2 rows (16 w + g, + 8 of its warpgroup's 64) over all 256 columns of every
// 256-column tile (m64n256k16, 128 accumulators): the online statistics need only the quad
// (fwd_tile), no column-half combine.
// mf-budget: regs<=255 smem<=0 stack<=0 spill=0  (sm_90a: 254 regs; dynamic smem kWgFwdSmem = 99,328 B)
__global__ void __launch_bounds__(kTcThreads, 1)
    ce_fused_fwd_wgmma_kernel(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                              const bf16 *__restrict__ bias, const int64_t *__restrict__ labels,
                              FusedParams p, int vec)
{
#if MF_WGMMA_CODE
    extern __shared__ __align__(16) unsigned char ce_tc_smem[];
    unsigned char *smem = wg_align_1024(ce_tc_smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const size_t row0 = (size_t)blockIdx.x * kTcBM;
    const size_t rbase = row0 + (size_t)(64 * (warp >> 2) + 16 * (warp & 3) + g);
    int ys[2]; // rows rbase, rbase + 8
    float m[2], l[2], sum_s[2], s_y[2];
    fwd_init(labels, p, rbase, ys, m, l, sum_s, s_y);
    float acc[1][kWgFwdBN / 8][4];
    for (size_t v0 = 0; v0 < p.V; v0 += kWgFwdBN) {
        wg_logits_tile<kWgFwdBN>(acc, smem, hidden, weight, p.N, p.D, p.V, row0, v0, vec != 0);
        fwd_tile(acc, v0 + (size_t)(2 * t), bias, p, ys, m, l, sum_s, s_y);
    }
    fwd_quad_sums(l, sum_s, s_y);
    MF_UNROLL
    for (int h = 0; h < 2; ++h) {
        const size_t row = rbase + (size_t)(8 * h);
        if (t == 0 && row < p.N) fwd_store_row(p, row, m[h], l[h], ys[h] >= 0, s_y[h], sum_s[h]);
    }
#else
    (void)hidden, (void)weight, (void)bias, (void)labels, (void)p, (void)vec;
    __trap(); // no sm_90a code: the launcher never picks this kernel
#endif
}

// ---- bf16 backward, gradient products on wgmma (sm_90a) ----------------------------
// One strip's products after its G (n_kept kept tiles, kept_tile(k): the k-th one's index in
// the strip) is in shared memory at smem + kWgStagesBytes in the wg_g_off layout. D streams
// in 64-wide slices, per (slice, kept tile) pair (slice-major) a stage holds hidden[row0 ..
// +127, d0 .. +63] and W[tile's 128 v, d0 .. +63] as wg_load_stage lays them out (K-major
// for the logits; read here MN-major: N = d, K = row or v, no re-layout), and
//   warpgroup 0: o[h] (rows 64 h .., 64 of D) += G[rows, tile] . W_tile[:, slice]: A = G K-major
//                (K = v), B = the W slice MN-major; summed over the strip's kept tiles in
//                registers (scale-d 0 on the first), then one plain read-modify-write of
//                grad_hidden per strip and slice (deterministic, as the mma.sync phase);
//   warpgroup 1: o[h] (vocabulary rows 64 h .. of the tile, 64 of D) = G[:, tile]^T . hidden
//                slice: A = G^T MN-major (one 16 KiB G chunk per h, K = row), B = the hidden
//                slice MN-major; fp32 atomicAdd into grad_W.
// 2 x 8 wgmma.m64n64k16 per pair and warpgroup (k = 128 in 8 k16 steps, in k order).
// Every thread calls it; it ends with a barrier (stages and G free on return).
template <typename KeptTile>
__device__ __forceinline__ void
wg_grad_strip(unsigned char *smem, const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
              const FusedParams &p, size_t row0, size_t vs, int n_kept, const KeptTile &kept_tile, bool vec,
              float *__restrict__ grad_hidden, float *__restrict__ grad_weight)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3, wi = warp & 3;
    // The warpgroup from a shuffle: provably warp-uniform for ptxas, so the role branches
    // around the wgmma below are not divergent paths (which serialize wgmma: ptxas C7520).
    const int wg = __shfl_sync(0xffffffffu, warp >> 2, 0);
    const bool mine = wg == 0 ? grad_hidden != nullptr : grad_weight != nullptr;
    const uint32_t gbase = smem_u32(smem + kWgStagesBytes);
    const size_t n_slices = (p.D + kWgBK - 1) / kWgBK;
    const size_t nq = n_slices * (size_t)n_kept;
    wg_load_stage<kTcBN>(smem, hidden, weight, p.N, p.D, p.V, row0, vs + (size_t)(kept_tile(0) * kTcBN), 0,
                         vec);
    cp_async_commit();
    float o[2][32]; // two m64 halves x n64, the wgmma accumulator layout
    for (size_t q = 0; q < nq; ++q) {
        if (q + 1 < nq) { // its stage was released by the last barrier
            const size_t qs = (q + 1) / (size_t)n_kept;
            const int qt = kept_tile((int)((q + 1) % (size_t)n_kept));
            wg_load_stage<kTcBN>(smem + ((q + 1) & 1) * kWgStageBytes, hidden, weight, p.N, p.D, p.V, row0,
                                 vs + (size_t)(qt * kTcBN), qs * kWgBK, vec);
        }
        cp_async_commit();
        cp_async_wait_1();
        wg_fence_proxy(); // this thread's stage writes, before the barrier publishes them to wgmma
        __syncthreads();
        const uint32_t base = smem_u32(smem + (q & 1) * kWgStageBytes);
        const int k = (int)(q % (size_t)n_kept), tile = kept_tile(k);
        const size_t d0 = (q / (size_t)n_kept) * kWgBK;
        if (mine) { // (warpgroup-uniform)
            if (wg == 0) {
                const uint64_t db0 = wg_desc_mn128(base + kWgOperandBytes),
                               ga0 = wg_desc_sw128(gbase + (uint32_t)(2 * tile * kWgOperandBytes));
                wg_fence(); // the accumulators were last touched by ordinary instructions
                MF_UNROLL
                for (int kk = 0; kk < kTcBN / 16; ++kk) { // K = the tile's 128 v: 2 G chunks
                    const uint64_t db = wg_desc_add(db0, 2048u * kk);
                    const uint32_t goff = (uint32_t)((kk >> 2) * kWgOperandBytes) + 32u * (kk & 3);
                    MF_UNROLL
                    for (int h = 0; h < 2; ++h)
                        wg_mma<64, 0, 1>(o[h], wg_desc_add(ga0, goff + 8192u * h), db, k > 0 || kk > 0);
                }
                wg_commit();
                wg_wait_all();
            } else {
                const uint64_t db0 = wg_desc_mn128(base),
                               ga0 = wg_desc_mn128(gbase + (uint32_t)(2 * tile * kWgOperandBytes));
                wg_fence();
                MF_UNROLL
                for (int kk = 0; kk < kTcBM / 16; ++kk) { // K = the block's 128 rows
                    const uint64_t db = wg_desc_add(db0, 2048u * kk);
                    MF_UNROLL
                    for (int h = 0; h < 2; ++h)
                        wg_mma<64, 1, 1>(o[h], wg_desc_add(ga0, (uint32_t)(h * kWgOperandBytes) + 2048u * kk),
                                         db, kk > 0);
                }
                wg_commit();
                wg_wait_all();
            }
            if (wg == 1 || k == n_kept - 1) {
                MF_UNROLL
                for (int h = 0; h < 2; ++h) {
                    MF_UNROLL
                    for (int i = 0; i < 32; ++i) {
                        const int r = 64 * h + 16 * wi + g + 8 * ((i >> 1) & 1);
                        const size_t col = d0 + (size_t)(8 * (i >> 2) + 2 * t + (i & 1));
                        if (col >= p.D) continue;
                        if (wg == 0) {
                            const size_t row = row0 + (size_t)r;
                            if (row < p.N) grad_hidden[row * p.D + col] += o[h][i];
                        } else {
                            const size_t v = vs + (size_t)(tile * kTcBN + r);
                            if (v < p.V) atomicAdd(grad_weight + v * p.D + col, o[h][i]);
                        }
                    }
                }
            }
        }
        __syncthreads(); // stage q & 1 (and, after the last pair, G) is consumed
    }
}

// ---- bf16 backward -----------------------------------------------------------------
// The vocabulary is walked in strips of kStrip 128-column tiles (kWg: kTcStrip). Per tile of a
// strip: recompute the 128 x 128 logits with tc_logits_tile, form dL/dz in
// registers from the saved lse, round it to bf16 into the strip's shared G
// (128 x 512: the mma's operand precision), add its column sums to grad_bias.
// Then stream D once more in 32-wide slices; per slice and kept tile of the strip
// the stages hold the hidden slice and that tile's W slice, and
//   warps 0-3: acc_h[32 w .., d0 ..] += G[32 w .., tile] . W_tile[:, d0 ..]
//              (A = G by ldmatrix, B = the W slice by ldmatrix.trans), summed over
//              the strip's tiles in registers, then added to the caller's
//              grad_hidden by a plain read-modify-write: once per strip, not per
//              tile (the CTA owns its rows and walks strips and tiles in order, so
//              grad_hidden is deterministic);
//   warps 4-7: grad_W[v0 + 32 w' .., d0 ..] += G[:, tile]^T . hidden_blk[:, d0 ..]
//              (A = G^T and B = the hidden slice, both by ldmatrix.trans), fp32
//              atomicAdd: row blocks arrive in the order the CTAs run.
// grad_bias: column sums of the fp32 dL/dz, reduced over the warp's rows by
// shuffles, one atomicAdd per column per 32-row warp strip (4 per CTA).
//
// The body is shared with the wgmma kernel (kWg: the recompute on wgmma, 2 warpgroups x
// 64 rows x 128 columns, stages of kWgStagesBytes; G in the wg_g_off layout and the
// gradient phase by wg_grad_strip). smem: the dynamic shared memory (kWg: 1024-byte
// aligned), stages first, then the strip's G.
// Per-thread accumulator geometry: MT m16 tiles x NF n8 blocks, row slot r = row
// rbase + 8 r of the block, first column cbase of the tile.
template <bool kWg, int kStrip>
__device__ __forceinline__ void tc_bwd_body(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                                            const bf16 *__restrict__ bias, const int64_t *__restrict__ labels,
                                            const FusedParams &p, int vec, float *__restrict__ grad_hidden,
                                            float *__restrict__ grad_weight, float *__restrict__ grad_bias,
                                            unsigned char *smem, float *row_lse, float *row_g, int *row_y)
{
    constexpr int MT = kWg ? 1 : 2, NF = kWg ? 16 : 8, kLdg = tc_ldg(kStrip);
    static_assert(!kWg || kStrip == kTcStrip, "the wgmma G layout (kWgGBytes) holds kTcStrip tiles");
    TcStage *st = reinterpret_cast<TcStage *>(smem);
    bf16(*sg)[kLdg] = reinterpret_cast<bf16(*)[kLdg]>(smem + 2 * sizeof(TcStage)); // !kWg
    unsigned char *wg_g = smem + kWgStagesBytes; // kWg: G in the wg_g_off layout
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3, wm = warp & 3, wn = warp >> 2;
    const int rbase = kWg ? 64 * (warp >> 2) + 16 * (warp & 3) + g : 32 * wm + g;
    const int cbase = kWg ? 2 * t : 64 * wn + 2 * t;
    const size_t row0 = (size_t)blockIdx.x * kTcBM;
    bwd_row_stats(labels, p, row0, kTcBM, row_y, row_g,
                  row_lse); // (visible after the logits tile's first barrier)
    const bool want_gh = grad_hidden != nullptr, want_gw = grad_weight != nullptr;
    const bool is_vec = vec != 0;
    const int role = warp >> 2, wi = warp & 3, q8 = lane >> 3; // role 0: grad_hidden, 1: grad_W
    const size_t n_slices = (p.D + kTcBK - 1) / kTcBK;
    for (size_t vs = 0; vs < p.V; vs += (size_t)kTcBN * kStrip) {
        const size_t left = (p.V - vs + kTcBN - 1) / kTcBN;
        const int n_tiles = left < (size_t)kStrip ? (int)left : kStrip;
        unsigned keep_mask = 0; // tiles of the strip with a |dL/dz| >= filter * row scale
        for (int tt = 0; tt < n_tiles; ++tt) {
            const size_t v0 = vs + (size_t)(tt * kTcBN);
            // Per tile: not live across the gradient phase (the wgmma path's first mma_async
            // reads its accumulators, scale-d 0 or not).
            float acc[MT][NF][4];
            if constexpr (kWg)
                wg_logits_tile<kTcBN>(acc, smem, hidden, weight, p.N, p.D, p.V, row0, v0, is_vec);
            else
                tc_logits_tile(acc, st, hidden, weight, p.N, p.D, p.V, row0, v0, is_vec);
            const int keep = dlogit_tile(acc, v0 + (size_t)cbase, rbase, bias, p, row_y, row_lse, row_g);
            MF_UNROLL
            for (int mt = 0; mt < MT; ++mt) {
                MF_UNROLL
                for (int f = 0; f < NF; ++f) {
                    const int r = rbase + 16 * mt, c = tt * kTcBN + cbase + 8 * f;
                    if constexpr (kWg) {
                        *reinterpret_cast<__nv_bfloat162 *>(wg_g + wg_g_off(r, c)) =
                            __floats2bfloat162_rn(acc[mt][f][0], acc[mt][f][1]);
                        *reinterpret_cast<__nv_bfloat162 *>(wg_g + wg_g_off(r + 8, c)) =
                            __floats2bfloat162_rn(acc[mt][f][2], acc[mt][f][3]);
                    } else {
                        *reinterpret_cast<__nv_bfloat162 *>(&sg[r][c]) =
                            __floats2bfloat162_rn(acc[mt][f][0], acc[mt][f][1]);
                        *reinterpret_cast<__nv_bfloat162 *>(&sg[r + 8][c]) =
                            __floats2bfloat162_rn(acc[mt][f][2], acc[mt][f][3]);
                    }
                }
            }
            if constexpr (kWg) wg_fence_proxy(); // G's generic writes, before wgmma reads them
            // Gradient filtering (off when p.filter == 0: every |d| < 0 is false).
            if (!__syncthreads_or(keep)) continue; // (uniform) also publishes sg
            keep_mask |= 1u << tt;
            if (grad_bias != nullptr) {
                MF_UNROLL
                for (int f = 0; f < NF; ++f) {
                    MF_UNROLL
                    for (int c = 0; c < 2; ++c) {
                        float s = acc[0][f][c] + acc[0][f][c + 2];
                        MF_UNROLL
                        for (int mt = 1; mt < MT; ++mt) {
                            s += acc[mt][f][c];
                            s += acc[mt][f][c + 2];
                        }
                        s += __shfl_xor_sync(0xffffffffu, s, 4);
                        s += __shfl_xor_sync(0xffffffffu, s, 8);
                        s += __shfl_xor_sync(0xffffffffu, s, 16);
                        const size_t j = v0 + (size_t)(cbase + 8 * f + c);
                        if (g == 0 && j < p.V) atomicAdd(grad_bias + j, s);
                    }
                }
            }
        }
        if (keep_mask == 0 || (!want_gh && !want_gw)) continue;
        const int n_kept = __popc(keep_mask);
        // The kept tile of rank k in the strip (registers only: no indexed array).
        auto kept_tile = [&](int k) {
            int tile = 0, seen = 0;
            MF_UNROLL
            for (int b = 0; b < kStrip; ++b) {
                if ((keep_mask >> b) & 1u) {
                    if (seen == k) tile = b;
                    ++seen;
                }
            }
            return tile;
        };
        if constexpr (kWg) {
            wg_grad_strip(smem, hidden, weight, p, row0, vs, n_kept, kept_tile, is_vec,
                          want_gh ? grad_hidden : nullptr, want_gw ? grad_weight : nullptr);
            continue;
        }
        // Pipeline over (slice, kept tile) pairs, slice-major.
        const size_t nq = n_slices * (size_t)n_kept;
        tc_load_stage(st[0], hidden, weight, p.N, p.D, p.V, row0, vs + (size_t)(kept_tile(0) * kTcBN), 0,
                      is_vec);
        cp_async_commit();
        float o[2][4][4] = {}; // 32 rows (grad_hidden) or vocabulary rows (grad_W) x 32 of D
        for (size_t q = 0; q < nq; ++q) {
            if (q + 1 < nq) {
                const size_t qs = (q + 1) / (size_t)n_kept;
                const int qt = kept_tile((int)((q + 1) % (size_t)n_kept));
                tc_load_stage(st[(q + 1) & 1], hidden, weight, p.N, p.D, p.V, row0, vs + (size_t)(qt * kTcBN),
                              qs * kTcBK, is_vec);
            }
            cp_async_commit();
            cp_async_wait_1();
            __syncthreads();
            const TcStage &c = st[q & 1];
            const int k = (int)(q % (size_t)n_kept), tile = kept_tile(k);
            const size_t d0 = (q / (size_t)n_kept) * kTcBK;
            if (role == 0 ? want_gh : want_gw) {
                if (role == 1 || k == 0) frags_zero(o); // grad_hidden sums the strip's tiles; grad_W one tile
                const bf16(*bsrc)[kTcLdk] = role == 0 ? c.b : c.a; // k: vocabulary / rows
                const int gc = tile * kTcBN;                       // the tile's columns in sg
                MF_UNROLL
                for (int kk = 0; kk < kTcBN; kk += 16) {
                    uint32_t a[2][4];
                    MF_UNROLL
                    for (int mt = 0; mt < 2; ++mt) {
                        if (role == 0) // G rows 32 wi + 16 mt .., k = vocabulary
                            ldsm_x4(a[mt], &sg[32 * wi + 16 * mt + (lane & 15)][gc + kk + (lane >> 4) * 8]);
                        else // G^T: vocabulary 32 wi + 16 mt .., k = rows
                            ldsm_x4_t(
                                a[mt],
                                &sg[kk + (lane & 7) + (q8 >> 1) * 8][gc + 32 * wi + 16 * mt + (q8 & 1) * 8]);
                    }
                    MF_UNROLL
                    for (int fp = 0; fp < 2; ++fp) {
                        uint32_t b[4];
                        ldsm_x4_t(b, &bsrc[kk + (lane & 7) + (q8 & 1) * 8][16 * fp + (q8 >> 1) * 8]);
                        MF_UNROLL
                        for (int mt = 0; mt < 2; ++mt) {
                            mma_x2(o[mt][2 * fp], o[mt][2 * fp + 1], a[mt], b);
                        }
                    }
                }
                if (role == 1 || k == n_kept - 1) {
                    for_each_frag(o, d0 + (size_t)(2 * t), [&](float &x, int rs, size_t col) {
                        const int r = 32 * wi + g + 8 * rs;
                        if (col >= p.D) return;
                        if (role == 0) {
                            const size_t row = row0 + (size_t)r;
                            if (row < p.N) grad_hidden[row * p.D + col] += x;
                        } else {
                            const size_t v = vs + (size_t)(tile * kTcBN + r);
                            if (v < p.V) atomicAdd(grad_weight + v * p.D + col, x);
                        }
                    });
                }
            }
            __syncthreads(); // stage q & 1 (and, after the last pair, sg) is consumed
        }
    }
}

// mf-budget: regs<=255 smem<=1536 stack<=0 spill=0  (sm_90: see docs/cross_entropy.md; dynamic smem tc_bwd_smem(4) = 174,080 B, tc_bwd_smem(3) = 141,312 B)
template <int kStrip>
__global__ void __launch_bounds__(kTcThreads, 1)
    ce_fused_bwd_mma_kernel(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                            const bf16 *__restrict__ bias, const int64_t *__restrict__ labels, FusedParams p,
                            int vec, float *__restrict__ grad_hidden, float *__restrict__ grad_weight,
                            float *__restrict__ grad_bias)
{
    extern __shared__ __align__(16) unsigned char ce_tc_smem[];
    __shared__ float row_lse[kTcBM], row_g[kTcBM];
    __shared__ int row_y[kTcBM];
    tc_bwd_body<false, kStrip>(hidden, weight, bias, labels, p, vec, grad_hidden, grad_weight, grad_bias,
                               ce_tc_smem, row_lse, row_g, row_y);
}

// ---- bf16 backward with the recompute on wgmma (sm_90a) ---------------------------
// tc_bwd_body<true>: the logits tile of each strip's tiles by wg_logits_tile (two
// warpgroups x m64n128k16), dL/dz in the wgmma accumulator layout (grad_bias: one
// atomicAdd per column per 16-row warp strip, 8 per CTA), G in the wg_g_off layout, and
// the two gradient products by wg_grad_strip (m64n64k16; the same bf16 operands and k
// order as the mma.sync phase: grad_hidden deterministic, grad_W fp32 atomics).
// mf-budget: regs<=255 smem<=1536 stack<=0 spill=0  (sm_90a: 255 regs; dynamic smem kWgBwdSmem = 197,632 B)
__global__ void __launch_bounds__(kTcThreads, 1)
    ce_fused_bwd_wgmma_kernel(const bf16 *__restrict__ hidden, const bf16 *__restrict__ weight,
                              const bf16 *__restrict__ bias, const int64_t *__restrict__ labels,
                              FusedParams p, int vec, float *__restrict__ grad_hidden,
                              float *__restrict__ grad_weight, float *__restrict__ grad_bias)
{
#if MF_WGMMA_CODE
    extern __shared__ __align__(16) unsigned char ce_tc_smem[];
    __shared__ float row_lse[kTcBM], row_g[kTcBM];
    __shared__ int row_y[kTcBM];
    tc_bwd_body<true, kTcStrip>(hidden, weight, bias, labels, p, vec, grad_hidden, grad_weight, grad_bias,
                                wg_align_1024(ce_tc_smem), row_lse, row_g, row_y);
#else
    (void)hidden, (void)weight, (void)bias, (void)labels, (void)p, (void)vec, (void)grad_hidden;
    (void)grad_weight, (void)grad_bias;
    __trap(); // no sm_90a code: the launcher never picks this kernel
#endif
}

// ---- launchers ------------------------------------------------------------------
#if !defined(__CUDAHOST__)
// Set by the probe kernel from the code the driver actually loaded for the device.
__device__ int ce_wgmma_code_present;
// mf-budget: regs<=16 smem<=0 spill=0  (one thread)
__global__ void ce_wgmma_probe_kernel()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ce_wgmma_code_present = 1;
#else
    ce_wgmma_code_present = 0;
#endif
}
#endif

// Whether the wgmma kernels can run here (wg_available in mf_wgmma.cuh): host mode
// emulates wgmma; CUDA mode needs a cc 9.0 device and the sm_90a code of this file
// (MF_HAVE_SM90A: built with 90a, src/CMakeLists.txt), checked once per device by the
// probe kernel above.
#if !defined(__CUDAHOST__) && defined(MF_HAVE_SM90A)
static mf_status ce_wgmma_probe(int *present)
{
    ce_wgmma_probe_kernel<<<1, 1>>>();
    MF_LAUNCH_CHECK();
    MF_CUDA_CHECK(cudaMemcpyFromSymbol(present, ce_wgmma_code_present, sizeof(int)));
    return MF_OK;
}
#else
// host mode: wg_available answers from the modelled device; no sm_90a code: never
static constexpr mf_wg_probe_fn ce_wgmma_probe = nullptr;
#endif
static std::atomic<int> ce_wgmma_cache[64];

// The bf16 path for a call: opts.mma_path, or with MF_CE_MMA_AUTO the environment
// variable MF_CE_MMA_PATH ("sync" or "wgmma"), else wgmma where available on a GPU
// and mma.sync otherwise (host mode's AUTO stays on mma.sync, the portable path).
extern "C" mf_status MF_FN(cross_entropy_wgmma_available)(mf_context *ctx, int *available)
{
    bool yes = false;
    MF_TRY(wg_available((cudaStream_t)mf_context_stream(ctx), ce_wgmma_cache, ce_wgmma_probe, &yes));
    *available = yes ? 1 : 0;
    return MF_OK;
}

static mf_status pick_wgmma(cudaStream_t stream, const mf_cross_entropy_options &o, bool *wg)
{
    return wg_pick(stream, (int)o.mma_path, "MF_CE_MMA_PATH", "opts->mma_path (or MF_CE_MMA_PATH)",
                   ce_wgmma_cache, ce_wgmma_probe, wg);
}

// f32: the 64 x 64 SIMT kernels; bf16: the 128 x 128 tensor-core kernels.
static bool tc_vec(const mf_ce_args *a)
{ // cp.async's 16-byte chunks fit the layout
    return a->hidden_dim % 8 == 0 && (uintptr_t)a->hidden % 16 == 0 && (uintptr_t)a->weight % 16 == 0;
}

static mf_status launch_fwd(cudaStream_t stream, bool bf16_in, bool wg, const mf_ce_args *a,
                            const FusedParams &p)
{
    if (bf16_in && wg) {
        const unsigned blocks = (unsigned)((p.N + kTcBM - 1) / kTcBM);
        MF_CUDA_CHECK(cudaFuncSetAttribute(ce_fused_fwd_wgmma_kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kWgFwdSmem));
        ce_fused_fwd_wgmma_kernel<<<blocks, kTcThreads, kWgFwdSmem, stream>>>(
            static_cast<const bf16 *>(a->hidden), static_cast<const bf16 *>(a->weight),
            static_cast<const bf16 *>(a->bias), a->labels, p, tc_vec(a) ? 1 : 0);
    } else if (bf16_in) {
        const unsigned blocks = (unsigned)((p.N + kTcBM - 1) / kTcBM);
        ce_fused_fwd_mma_kernel<<<blocks, kTcThreads, 0, stream>>>(
            static_cast<const bf16 *>(a->hidden), static_cast<const bf16 *>(a->weight),
            static_cast<const bf16 *>(a->bias), a->labels, p, tc_vec(a) ? 1 : 0);
    } else {
        const unsigned blocks = (unsigned)((p.N + kBM - 1) / kBM);
        ce_fused_fwd_kernel<float><<<blocks, kThreads, 0, stream>>>(
            static_cast<const float *>(a->hidden), static_cast<const float *>(a->weight),
            static_cast<const float *>(a->bias), a->labels, p);
    }
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// The mma.sync backward's strip (tiles of G kept in shared memory) for the current
// device: 4 where its 175,616 B per block fit (sharedMemPerBlockOptin, queried once per
// device), else 3 (142,848 B: an A100's 166,912 B); MF_ERR_BACKEND_UNAVAILABLE below that.
static std::atomic<int> ce_strip_cache[64];
static mf_status tc_bwd_strip(int *strip)
{
    int dev = 0;
    MF_CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= 0 && dev < 64 && (*strip = ce_strip_cache[dev].load()) != 0) return MF_OK;
    int optin = 0;
    MF_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if ((size_t)optin >= tc_bwd_smem(4) + kTcBwdStatic)
        *strip = 4;
    else if ((size_t)optin >= tc_bwd_smem(3) + kTcBwdStatic)
        *strip = 3;
    else
        return mf_set_error(
            MF_ERR_BACKEND_UNAVAILABLE, __func__, __FILE__, __LINE__,
            "the bf16 fused backward needs %zu B of shared memory per block; device %d allows %d B",
            tc_bwd_smem(3) + kTcBwdStatic, dev, optin);
    if (dev >= 0 && dev < 64) ce_strip_cache[dev].store(*strip);
    return MF_OK;
}

static mf_status launch_bwd(cudaStream_t stream, bool bf16_in, bool wg, const mf_ce_args *a,
                            const FusedParams &p)
{
    if (bf16_in && wg) {
        const unsigned blocks = (unsigned)((p.N + kTcBM - 1) / kTcBM);
        MF_CUDA_CHECK(cudaFuncSetAttribute(ce_fused_bwd_wgmma_kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kWgBwdSmem));
        ce_fused_bwd_wgmma_kernel<<<blocks, kTcThreads, kWgBwdSmem, stream>>>(
            static_cast<const bf16 *>(a->hidden), static_cast<const bf16 *>(a->weight),
            static_cast<const bf16 *>(a->bias), a->labels, p, tc_vec(a) ? 1 : 0, a->grad_hidden,
            a->grad_weight, a->grad_bias);
    } else if (bf16_in) {
        int strip = 0;
        MF_TRY(tc_bwd_strip(&strip));
        const unsigned blocks = (unsigned)((p.N + kTcBM - 1) / kTcBM);
        const bf16 *h = static_cast<const bf16 *>(a->hidden), *w = static_cast<const bf16 *>(a->weight),
                   *b = static_cast<const bf16 *>(a->bias);
        const int vec = tc_vec(a) ? 1 : 0;
        auto *kernel = strip == 4 ? ce_fused_bwd_mma_kernel<4> : ce_fused_bwd_mma_kernel<3>;
        const size_t smem = tc_bwd_smem(strip);
        MF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        kernel<<<blocks, kTcThreads, smem, stream>>>(h, w, b, a->labels, p, vec, a->grad_hidden,
                                                     a->grad_weight, a->grad_bias);
    } else {
        const unsigned blocks = (unsigned)((p.N + kBM - 1) / kBM);
        ce_fused_bwd_kernel<float><<<blocks, kThreads, 0, stream>>>(
            static_cast<const float *>(a->hidden), static_cast<const float *>(a->weight),
            static_cast<const float *>(a->bias), a->labels, p, a->grad_hidden, a->grad_weight, a->grad_bias);
    }
    MF_LAUNCH_CHECK();
    return MF_OK;
}

} // namespace cce
} // namespace MF_NS

extern "C" mf_status MF_FN(cross_entropy_fused)(mf_context *ctx, const mf_ce_args *a)
{
    using namespace MF_NS;
    using namespace MF_NS::cce;
    if (ctx == nullptr || a == nullptr)
        return mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "ctx or args is NULL");
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const mf_cross_entropy_options &o = a->opts;
    const size_t N = (size_t)a->n_rows, D = (size_t)a->hidden_dim, V = (size_t)a->vocab;
    const size_t n_blocks = (N + kBM - 1) / kBM; // the f32 kernels' (bf16's 128-row blocks: fewer)
    if (n_blocks > MF_NS::kMaxGridX)
        return mf_set_error(MF_ERR_INVALID_SIZE, __func__, __FILE__, __LINE__,
                            "%zu rows need more than %zu blocks", N, (size_t)MF_NS::kMaxGridX);
    const bool forward = a->mode != MF_CE_MODE_BACKWARD;
    const bool backward = a->mode != MF_CE_MODE_FORWARD;
    const bool bf16 = a->dtype == MF_DTYPE_BF16;
    const bool per_row = o.reduction == MF_CE_REDUCTION_NONE;
    const int64_t shift_len = o.shift_labels ? (o.seq_len > 0 ? o.seq_len : a->n_rows) : 0;
    bool wg = false; // bf16: the wgmma kernels (sm_90a) rather than the mma.sync ones
    if (bf16) MF_TRY(pick_wgmma(stream, o, &wg));

    // Scratch (mf_cross_entropy_fused_scratch_bytes): counters, row losses
    // (forward with mean/sum), lse (forward+backward without a caller lse).
    Scratch counters(ctx), row_loss(ctx), lse_buf(ctx);
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, 2 * sizeof(int64_t), &counters.ptr));
    int64_t *d_counters = static_cast<int64_t *>(counters.ptr);
    if (forward && !per_row) MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, N * sizeof(float), &row_loss.ptr));
    float *lse = a->mode == MF_CE_MODE_BACKWARD ? nullptr : a->lse_out;
    if (a->mode == MF_CE_MODE_FORWARD_BACKWARD && lse == nullptr) {
        MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, N * sizeof(float), &lse_buf.ptr));
        lse = static_cast<float *>(lse_buf.ptr);
    }

    ce_fused_count_kernel<<<1, 256, 0, stream>>>(a->labels, N, shift_len, o.ignore_index, a->vocab,
                                                 d_counters);
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
        MF_TRY(launch_fwd(stream, bf16, wg, a, p));
        if (!per_row) {
            ce_fused_reduce_kernel<<<1, 256, 0, stream>>>(static_cast<const float *>(row_loss.ptr), N,
                                                          d_counters, p.mean, a->loss);
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
        MF_TRY(launch_bwd(stream, bf16, wg, a, p));
    }

    // The first out-of-range label (counters[1]) is a deferred check of the
    // context: copied to page-locked memory without waiting and reported by
    // the next synchronization (src/core/context.c). No read-back, no sync.
    MF_TRY(mf_context_defer_label_check(ctx, __func__, d_counters + 1, a->labels, (int64_t)N, shift_len != 0,
                                        (int64_t)V, o.ignore_index));
    return MF_OK;
}
