// Optimized attention: exact softmax attention without the N x N matrix.
//
// Seed document 003 ("Memory Profiling"): standard_attention materializes
// scores = q k^T / sqrt(d) (B x H x N x N; "Standard attention memory scales
// O(n^2) - The attention matrix dominates"). The fix here is FlashAttention's:
// walk the keys tile by tile with an online softmax (a running max m and sum l
// per query row, the output accumulator rescaled by exp(m_old - m_new) whenever
// the max grows), keep one 16 x 16 score tile in shared memory, and store only
// lse = m + log l per row for the backward pass, which recomputes every
// probability tile from q, k and lse (see include/memfix/attention.h).
//
// Kernels (all blocks of kThreads = 128 threads, tiles of kTile = 16 rows):
//   attn_fwd_kernel   one block per (b, h, query tile): out, lse
//   attn_delta_kernel Delta[i] = dout_i . out_i (one thread per row)
//   attn_dkdv_kernel  one block per (b, h, key tile), loops over query tiles
//   attn_dq_kernel    one block per (b, h, query tile), loops over key tiles
// Shared memory per block is static and sized for D, Dv <= 128 (about 35 KiB);
// rows are padded by one float so that the column-strided reads of the dot
// products fall into distinct banks. Causal key tiles above the diagonal are
// skipped in every kernel. The only device scratch is Delta (4*B*H*N bytes).
// Each block loops over its work items with a stride of gridDim.x; loop bounds
// depend on blockIdx and kernel arguments only, so every thread of a block
// reaches every __syncthreads.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "attention.cuh"

#include <cuda_bf16.h>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace MF_NS {

constexpr int kTile = MF_ATTENTION_TILE;         // 16 queries / keys per tile
constexpr int kMaxD = MF_ATTENTION_MAX_HEAD_DIM; // 128
constexpr int kPad = kMaxD + 1;                  // padded row length in shared memory
constexpr int kThreads = 128;
constexpr int kAcc = kTile * kMaxD / kThreads; // 16 accumulator elements per thread

// Stage rows [row0, row0 + kTile) of an (N x width) matrix into tile[kTile][kPad]
// as fp32 (times 'mul'); rows at or beyond N are zero.
template <typename T>
__device__ __forceinline__ void load_tile(float (*tile)[kPad], const T *__restrict__ src, size_t row0,
                                          size_t N, int width, float mul)
{
    for (int e = threadIdx.x; e < kTile * width; e += blockDim.x) {
        const int r = e / width, c = e % width;
        const size_t i = row0 + (size_t)r;
        tile[r][c] = i < N ? to_f32(src[i * (size_t)width + (size_t)c]) * mul : 0.0f;
    }
}

__device__ __forceinline__ float dot_rows(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int d = 0; d < n; ++d) s += a[d] * b[d];
    return s;
}

// Is key j visible to query i (both inside the sequence, and j <= i if causal)?
__device__ __forceinline__ bool visible(size_t i, size_t j, size_t N, int causal)
{
    return i < N && j < N && (!causal || j <= i);
}

// ---- forward ------------------------------------------------------------------
// mf-budget: regs<=72 smem<=26624 spill=0 sm_80:regs<=80  (sm_90 measured: regs 64 smem 26048; sm_80: regs 78, still 6 blocks per SM as its shared memory allows)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attn_fwd_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                    float *__restrict__ out, float *__restrict__ lse, size_t N, int D, int Dv, int causal,
                    float scale, size_t n_tiles, size_t total)
{
    __shared__ float Qs[kTile][kPad]; // scaled query tile
    __shared__ float Ks[kTile][kPad];
    __shared__ float Vs[kTile][kPad];
    __shared__ float Ss[kTile][kTile + 1]; // scores, then probabilities
    __shared__ float row_m[kTile], row_l[kTile], row_alpha[kTile];
    const int tid = threadIdx.x;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item / n_tiles, q0 = (item % n_tiles) * kTile;
        const T *qg = q + g * N * (size_t)D;
        const T *kg = k + g * N * (size_t)D;
        const T *vg = v + g * N * (size_t)Dv;
        load_tile(Qs, qg, q0, N, D, scale);
        if (tid < kTile) {
            row_m[tid] = -INFINITY;
            row_l[tid] = 0.0f;
        }
        float acc[kAcc];
        for (int a = 0; a < kAcc; ++a) acc[a] = 0.0f;
        // Causal: keys beyond the tile's last query are never visible.
        const size_t k_end = causal ? (q0 + kTile < N ? q0 + kTile : N) : N;
        for (size_t k0 = 0; k0 < k_end; k0 += kTile) {
            __syncthreads(); // Q staged / the previous key tile fully consumed
            load_tile(Ks, kg, k0, N, D, 1.0f);
            load_tile(Vs, vg, k0, N, Dv, 1.0f);
            __syncthreads();
            for (int e = tid; e < kTile * kTile; e += blockDim.x) {
                const int r = e / kTile, s = e % kTile;
                Ss[r][s] = visible(q0 + r, k0 + s, N, causal) ? dot_rows(Qs[r], Ks[s], D) : -INFINITY;
            }
            __syncthreads();
            if (tid < kTile) { // online softmax, one thread per query row
                const float m_old = row_m[tid];
                float mx = m_old;
                for (int s = 0; s < kTile; ++s) { // NaN-propagating max (fmaxf drops NaN)
                    const float x = Ss[tid][s];
                    mx = (x != x || x > mx) ? x : mx;
                }
                float alpha = 1.0f, l = row_l[tid];
                if (mx == -INFINITY) { // nothing visible yet (padding rows)
                    for (int s = 0; s < kTile; ++s) Ss[tid][s] = 0.0f;
                } else {
                    alpha = expf(m_old - mx); // 0 when m_old is -inf
                    float sum = 0.0f;
                    for (int s = 0; s < kTile; ++s) {
                        const float p = expf(Ss[tid][s] - mx); // 0 for masked entries
                        Ss[tid][s] = p;
                        sum += p;
                    }
                    l = l * alpha + sum;
                }
                row_m[tid] = mx;
                row_l[tid] = l;
                row_alpha[tid] = alpha;
            }
            __syncthreads();
            for (int a = 0; a < kAcc; ++a) {
                const int e = tid + a * kThreads;
                if (e < kTile * Dv) {
                    const int r = e / Dv, c = e % Dv;
                    float o = acc[a] * row_alpha[r];
                    for (int s = 0; s < kTile; ++s) o += Ss[r][s] * Vs[s][c];
                    acc[a] = o;
                }
            }
        }
        // row_l / row_m were last written before the final barrier of the loop.
        float *og = out + g * N * (size_t)Dv;
        for (int a = 0; a < kAcc; ++a) {
            const int e = tid + a * kThreads;
            if (e < kTile * Dv) {
                const int r = e / Dv, c = e % Dv;
                const size_t i = q0 + (size_t)r;
                if (i < N) og[i * (size_t)Dv + (size_t)c] = acc[a] / row_l[r];
            }
        }
        if (lse != nullptr && tid < kTile && q0 + (size_t)tid < N)
            lse[g * N + q0 + (size_t)tid] = row_m[tid] + logf(row_l[tid]);
        __syncthreads(); // before the next item overwrites Qs and the row statistics
    }
}

// ---- backward ------------------------------------------------------------------
// Delta[row] = sum_c dout[row, c] * out[row, c]
// mf-budget: regs<=40 smem<=0 spill=0  (sm_90 measured: regs 30 smem 0)
template <typename T>
__global__ void attn_delta_kernel(const T *__restrict__ dout, const float *__restrict__ out,
                                  float *__restrict__ delta, size_t rows, int Dv)
{
    for (size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x; row < rows;
         row += (size_t)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int c = 0; c < Dv; ++c)
            s += to_f32(dout[row * (size_t)Dv + (size_t)c]) * out[row * (size_t)Dv + (size_t)c];
        delta[row] = s;
    }
}

// For the staged query tile (Qs, dOs, lse_s, delta_s) and key tile (Ks, Vs):
//   P[r][s]  = exp(scale * q_r . k_s - lse_r)   (0 where not visible)
//   dS[r][s] = P[r][s] * (dout_r . v_s - Delta_r)
__device__ __forceinline__ void prob_tiles(const float (*Qs)[kPad], const float (*Ks)[kPad],
                                           const float (*dOs)[kPad], const float (*Vs)[kPad],
                                           const float *lse_s, const float *delta_s, float (*Ps)[kTile + 1],
                                           float (*dSs)[kTile + 1], size_t q0, size_t k0, size_t N, int D,
                                           int Dv, int causal, float scale)
{
    for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
        const int r = e / kTile, s = e % kTile;
        float p = 0.0f, ds = 0.0f;
        if (visible(q0 + r, k0 + s, N, causal)) {
            p = expf(scale * dot_rows(Qs[r], Ks[s], D) - lse_s[r]);
            ds = p * (dot_rows(dOs[r], Vs[s], Dv) - delta_s[r]);
        }
        Ps[r][s] = p;
        dSs[r][s] = ds;
    }
}

// Stage lse and Delta of rows [q0, q0 + kTile) (0 beyond N; those rows are masked).
__device__ __forceinline__ void load_row_stats(float *lse_s, float *delta_s, const float *__restrict__ lse,
                                               const float *__restrict__ delta, size_t row0, size_t q0,
                                               size_t N)
{
    if (threadIdx.x < kTile) {
        const size_t i = q0 + threadIdx.x;
        lse_s[threadIdx.x] = i < N ? lse[row0 + i] : 0.0f;
        delta_s[threadIdx.x] = i < N ? delta[row0 + i] : 0.0f;
    }
}

// The shared tiles of both backward kernels: the block's own pair (k, v rows for
// attn_dkdv_kernel; q, dout rows and their lse, Delta for attn_dq_kernel) stays staged
// while the other pair streams by.
struct BwdSmem {
    float Qs[kTile][kPad], dOs[kTile][kPad], Ks[kTile][kPad], Vs[kTile][kPad];
    float Ps[kTile][kTile + 1], dSs[kTile][kTile + 1];
    float lse_s[kTile], delta_s[kTile];
};
template <typename T> struct BwdArgs {
    const T *q, *k, *v, *dout;
    const float *lse, *delta;
    size_t N;
    int D, Dv, causal;
    float scale;
};
// Stage the query side (q, dout rows q0.., lse, Delta) or the key side (k, v rows k0..)
// of (b, h) = g.
template <typename T>
__device__ __forceinline__ void stage_side(BwdSmem &sm, const BwdArgs<T> &a, size_t g, bool query_side,
                                           size_t r0)
{
    const size_t qk = g * a.N * (size_t)a.D, vo = g * a.N * (size_t)a.Dv;
    if (query_side) {
        load_tile(sm.Qs, a.q + qk, r0, a.N, a.D, 1.0f);
        load_tile(sm.dOs, a.dout + vo, r0, a.N, a.Dv, 1.0f);
        load_row_stats(sm.lse_s, sm.delta_s, a.lse, a.delta, g * a.N, r0, a.N);
    } else {
        load_tile(sm.Ks, a.k + qk, r0, a.N, a.D, 1.0f);
        load_tile(sm.Vs, a.v + vo, r0, a.N, a.Dv, 1.0f);
    }
}
// One (query tile q0, key tile k0) step: stage the streamed side, then P and dS.
template <typename T>
__device__ __forceinline__ void bwd_step(BwdSmem &sm, const BwdArgs<T> &a, size_t g, bool stream_queries,
                                         size_t q0, size_t k0)
{
    __syncthreads(); // own side staged / the previous streamed tile fully consumed
    stage_side(sm, a, g, stream_queries, stream_queries ? q0 : k0);
    __syncthreads();
    prob_tiles(sm.Qs, sm.Ks, sm.dOs, sm.Vs, sm.lse_s, sm.delta_s, sm.Ps, sm.dSs, q0, k0, a.N, a.D, a.Dv,
               a.causal, a.scale);
    __syncthreads();
}

// mf-budget: regs<=88 smem<=35840 spill=0 sm_80:regs<=96  (sm_90 measured: regs 80 smem 35328 stack 0: the accumulator loops are unrolled; sm_80: regs 90, 4 blocks per SM as its shared memory allows)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attn_dkdv_kernel(BwdArgs<T> a, float *__restrict__ dk, float *__restrict__ dv, size_t n_tiles,
                     size_t total)
{
    __shared__ BwdSmem sm;
    const int tid = threadIdx.x, D = a.D, Dv = a.Dv;
    const size_t N = a.N;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item / n_tiles, k0 = (item % n_tiles) * kTile;
        stage_side(sm, a, g, false, k0);
        float acc_dk[kAcc], acc_dv[kAcc]; // registers: every loop over them is unrolled
        MF_UNROLL
        for (int e = 0; e < kAcc; ++e) acc_dk[e] = acc_dv[e] = 0.0f;
        // Causal: queries before the key tile see none of its keys.
        for (size_t q0 = a.causal ? k0 : 0; q0 < N; q0 += kTile) {
            bwd_step(sm, a, g, true, q0, k0);
            MF_UNROLL
            for (int i = 0; i < kAcc; ++i) {
                const int e = tid + i * kThreads;
                if (e < kTile * Dv) { // dv[s][c] += sum_r P[r][s] dout[r][c]
                    const int s = e / Dv, c = e % Dv;
                    float x = acc_dv[i];
                    for (int r = 0; r < kTile; ++r) x += sm.Ps[r][s] * sm.dOs[r][c];
                    acc_dv[i] = x;
                }
                if (e < kTile * D) { // dk[s][d] += sum_r dS[r][s] q[r][d]
                    const int s = e / D, d = e % D;
                    float x = acc_dk[i];
                    for (int r = 0; r < kTile; ++r) x += sm.dSs[r][s] * sm.Qs[r][d];
                    acc_dk[i] = x;
                }
            }
        }
        const size_t qk = g * N * (size_t)D, vo = g * N * (size_t)Dv;
        MF_UNROLL
        for (int i = 0; i < kAcc; ++i) {
            const int e = tid + i * kThreads;
            if (e < kTile * Dv) {
                const size_t j = k0 + (size_t)(e / Dv);
                if (j < N) dv[vo + j * (size_t)Dv + (size_t)(e % Dv)] = acc_dv[i];
            }
            if (e < kTile * D) {
                const size_t j = k0 + (size_t)(e / D);
                if (j < N) dk[qk + j * (size_t)D + (size_t)(e % D)] = acc_dk[i] * a.scale;
            }
        }
        __syncthreads(); // before the next item restages K and V
    }
}

// mf-budget: regs<=96 smem<=35840 spill=0  (sm_90 measured: regs 77 smem 35328)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attn_dq_kernel(BwdArgs<T> a, float *__restrict__ dq, size_t n_tiles, size_t total)
{
    __shared__ BwdSmem sm;
    const int tid = threadIdx.x, D = a.D;
    const size_t N = a.N;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item / n_tiles, q0 = (item % n_tiles) * kTile;
        stage_side(sm, a, g, true, q0);
        float acc[kAcc];
        for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
        const size_t k_end = a.causal ? (q0 + kTile < N ? q0 + kTile : N) : N;
        for (size_t k0 = 0; k0 < k_end; k0 += kTile) {
            bwd_step(sm, a, g, false, q0, k0);
            for (int i = 0; i < kAcc; ++i) {
                const int e = tid + i * kThreads;
                if (e < kTile * D) { // dq[r][d] += sum_s dS[r][s] k[s][d]
                    const int r = e / D, d = e % D;
                    float x = acc[i];
                    for (int s = 0; s < kTile; ++s) x += sm.dSs[r][s] * sm.Ks[s][d];
                    acc[i] = x;
                }
            }
        }
        const size_t qk = g * N * (size_t)D;
        for (int i = 0; i < kAcc; ++i) {
            const int e = tid + i * kThreads;
            if (e < kTile * D) {
                const size_t r = q0 + (size_t)(e / D);
                if (r < N) dq[qk + r * (size_t)D + (size_t)(e % D)] = acc[i] * a.scale;
            }
        }
        __syncthreads(); // before the next item restages Q and dout
    }
}

// ---- launchers ---------------------------------------------------------------------
struct Shape {
    size_t bh, N;
    int D, Dv;
    size_t n_tiles, total;
    float scale;
};

static Shape make_shape(int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv)
{
    Shape s;
    s.bh = (size_t)B * (size_t)H;
    s.N = (size_t)N;
    s.D = (int)D;
    s.Dv = (int)Dv;
    s.n_tiles = s.N / kTile + (s.N % kTile != 0);
    s.total = s.bh * s.n_tiles;
    s.scale = (float)(1.0 / std::sqrt((double)D));
    return s;
}

static dim3 item_grid(size_t total) { return dim3(grid_cap(total, kMaxGridX)); }

template <typename T>
static mf_status launch_forward(mf_context *ctx, int causal, const Shape &s, const void *q, const void *k,
                                const void *v, float *out, float *lse)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    attn_fwd_kernel<T><<<item_grid(s.total), kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v), out, lse, s.N, s.D,
        s.Dv, causal, s.scale, s.n_tiles, s.total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_backward(mf_context *ctx, int causal, const Shape &s, const void *q, const void *k,
                                 const void *v, const float *out, const void *dout, const float *lse,
                                 float *delta, float *dq, float *dk, float *dv)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const T *tq = static_cast<const T *>(q), *tk = static_cast<const T *>(k);
    const T *tv = static_cast<const T *>(v), *tdo = static_cast<const T *>(dout);
    const size_t rows = s.bh * s.N;
    const size_t row_blocks = rows / 256 + (rows % 256 != 0);
    attn_delta_kernel<T><<<item_grid(row_blocks), 256, 0, stream>>>(tdo, out, delta, rows, s.Dv);
    MF_LAUNCH_CHECK();
    const BwdArgs<T> a = { tq, tk, tv, tdo, lse, delta, s.N, s.D, s.Dv, causal, s.scale };
    attn_dkdv_kernel<T><<<item_grid(s.total), kThreads, 0, stream>>>(a, dk, dv, s.n_tiles, s.total);
    MF_LAUNCH_CHECK();
    attn_dq_kernel<T><<<item_grid(s.total), kThreads, 0, stream>>>(a, dq, s.n_tiles, s.total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

} // namespace MF_NS

// ---- exported entry points (called by src/ops/attention.c after validation) ---------
extern "C" {

MF_API mf_status MF_FN(attention_tiled_forward)(mf_context *ctx, mf_dtype dtype, int causal, int64_t B,
                                                int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                                const void *k, const void *v, float *out, float *lse)
{
    if (MF_FN(attention_mma_applies)(dtype, D, Dv, q, k, v, nullptr))
        return MF_FN(attention_mma_forward)(ctx, causal, B, H, N, D, q, k, v, out, lse);
    const MF_NS::Shape s = MF_NS::make_shape(B, H, N, D, Dv);
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_forward<__nv_bfloat16>(ctx, causal, s, q, k, v, out, lse);
    return MF_NS::launch_forward<float>(ctx, causal, s, q, k, v, out, lse);
}

MF_API mf_status MF_FN(attention_tiled_backward)(mf_context *ctx, mf_dtype dtype, int causal, int64_t B,
                                                 int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                                 const void *k, const void *v, const float *out,
                                                 const void *dout, const float *lse, float *dq, float *dk,
                                                 float *dv)
{
    const MF_NS::Shape s = MF_NS::make_shape(B, H, N, D, Dv);
    // Delta: the only device scratch (mf_attention_tiled_backward_scratch_ceiling), freed
    // when 'scratch' goes out of scope.
    MF_NS::Scratch scratch(ctx);
    const mf_status st = mf_scratch_alloc(ctx, MF_MEM_DEVICE, s.bh * s.N * sizeof(float), &scratch.ptr);
    if (st != MF_OK) return st;
    float *delta = static_cast<float *>(scratch.ptr);
    if (MF_FN(attention_mma_applies)(dtype, D, Dv, q, k, v, dout))
        return MF_FN(attention_mma_backward)(ctx, causal, B, H, N, D, q, k, v, out, dout, lse, delta, dq, dk,
                                             dv);
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_backward<__nv_bfloat16>(ctx, causal, s, q, k, v, out, dout, lse, delta, dq, dk,
                                                     dv);
    return MF_NS::launch_backward<float>(ctx, causal, s, q, k, v, out, dout, lse, delta, dq, dk, dv);
}

} // extern "C"
