// Optimized linear attention: the causal form in chunks, without the cumsum.
//
// Seed document 003 ("Memory Profiling"), linear_attention_causal: kv_cumsum =
// cumsum(einsum('bhnd,bhnv->bhndv', k, v), dim=2) materializes B*H*N*D*Dv
// ("The naive causal implementation materializes the entire cumulative
// state"); its first listed fix is "Chunked processing (only keep current
// state)". Here a block walks the sequence in chunks of C positions, keeping
// the running state S (D x Dv; a 32-column or 32-row slice of it per block)
// and the normalizer's D-vector z in shared memory:
//   out_n = (q'_n^T S_prev + sum_{m<=n in chunk} (q'_n . k'_m) v_m^T) / den_n
//   den_n = q'_n . z_prev + sum_{m<=n in chunk} q'_n . k'_m + eps
// (within the chunk the masked C x C products, in 16 x 16 sub-tiles), then
// S += K'_c^T V_c and z += sum k'_m. See include/memfix/linear_attention.h for
// the math of the backward pass, which recomputes the states chunk by chunk.
//
// Two paths. bf16 causal runs on tensor cores in the chunk form (the la_tc_*
// kernels below, with their own description); fp32, and the bidirectional form,
// run these SIMT fp32 kernels (blocks of kThreads = 128, sub-tiles of kSub = 16
// positions, state slices of kSlice = 32 rows or columns; all shared memory
// static, ~36 KiB):
//   la_fwd_kernel       (b, h, 32 columns of S): out, the final state
//   la_rowstats_kernel  (b, h, 64-row tile; shared with the tensor-core path):
//                        den_n and dd_n = -(dout_n . out_n) / den_n
//   la_dq_kernel        (b, h, 32 rows of S): forward sweep carrying S, z
//   la_dk_kernel        (b, h, 32 rows of G): reverse sweep carrying G, g;
//                        also writes the initial state's gradients
//   la_dv_kernel        (b, h, 32 columns of G): reverse sweep carrying G
// The bidirectional form runs the same kernels in two phases: first the full
// state (S, z or G, g) over every position, then the outputs from it with no
// intra-chunk term. Loop bounds depend on blockIdx and kernel arguments only,
// so every thread of a block reaches every __syncthreads.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"
#include "linear_attention.cuh"

#include <cuda_bf16.h>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace MF_NS {

constexpr int kSub = 16;
constexpr int kSlice = 32;
constexpr int kMaxD = MF_LINEAR_ATTENTION_MAX_HEAD_DIM; // 128
constexpr int kPad = kMaxD + 1;
constexpr int kThreads = 128;
constexpr int kOut = kSub * kSlice / kThreads; // 4 outputs per thread per sub-tile
constexpr float kEps = (float)MF_LINEAR_ATTENTION_EPS;

// phi(x) = elu(x) + 1 and its derivative (expf, not the approximate __expf).
__device__ __forceinline__ float phi(float x) { return x > 0.0f ? x + 1.0f : expf(x); }
__device__ __forceinline__ float dphi(float x) { return x > 0.0f ? 1.0f : expf(x); }

__device__ __forceinline__ float dot_rows(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int d = 0; d < n; ++d) s += a[d] * b[d];
    return s;
}

enum { kOpIdent = 0, kOpPhi = 1, kOpDiv = 2, kOpDivR = 3 }; // x, phi(x), x / den[row], x / den[r]
// dst[r][c] = op(src[(row0 + r) * width + col0 + c]) for r < rows, c < padw, rounded to the
// destination type (fp32 tiles of the SIMT kernels, bf16 of the tensor-core ones); 0 where
// row0 + r >= lim or c >= ncols.
template <int OP, typename S, typename Dst, int LD>
__device__ __forceinline__ void stage(Dst (*dst)[LD], const S *__restrict__ src, size_t row0, size_t lim,
                                      int width, int col0, int ncols, int padw, int rows,
                                      const float *__restrict__ den)
{
    for (int e = threadIdx.x; e < rows * padw; e += blockDim.x) {
        const int r = e / padw, c = e % padw;
        const size_t i = row0 + (size_t)r;
        float x = 0.0f;
        if (i < lim && c < ncols) {
            x = to_f32(src[i * (size_t)width + (size_t)(col0 + c)]);
            if (OP == kOpPhi) x = phi(x);
            if (OP == kOpDiv) x /= den[i];
            if (OP == kOpDivR) x /= den[r];
        }
        dst[r][c] = from_f32<Dst>(x);
    }
}

struct Dims {
    size_t N;
    int D, Dv, C, causal;
    size_t n_slices, total;
};

static __device__ __forceinline__ size_t chunk_end(size_t c0, const Dims &s)
{
    return c0 + (size_t)s.C < s.N ? c0 + (size_t)s.C : s.N;
}

// One (b, h) = g's rows of the inputs (row-major: N x D for q and k, N x Dv for v and dout).
template <typename T> struct Heads {
    const T *q, *k, *v, *dout;
    __device__ __forceinline__ Heads(const T *q_, const T *k_, const T *v_, const T *dout_, size_t g,
                                     size_t N, int D, int Dv)
        : q(q_ + g * N * (size_t)D), k(k_ + g * N * (size_t)D), v(v_ + g * N * (size_t)Dv),
          dout(dout_ + g * N * (size_t)Dv)
    {}
};

// A SIMT block's work item: (b, h) = g and the slice s0 .. s0 + n - 1 (n <= kSlice) of the
// 'extent' state rows (D) or columns (Dv) it owns.
struct Slice {
    size_t g;
    int s0, n;
    __device__ __forceinline__ Slice(size_t item, const Dims &s, int extent)
        : g(item / s.n_slices), s0((int)(item % s.n_slices) * kSlice),
          n(extent - s0 < kSlice ? extent - s0 : kSlice)
    {}
};

// fn(sl, hd) for each work item of this block: its slice and (b, h)'s input rows; a barrier
// after each, before the next item reinitialises the block's shared state.
template <typename T, typename Fn>
__device__ __forceinline__ void for_slices(const Dims &s, int extent, const T *q, const T *k, const T *v,
                                           const T *dout, Fn &&fn)
{
    for (size_t item = blockIdx.x; item < s.total; item += gridDim.x) {
        const Slice sl(item, s, extent);
        fn(sl, Heads<T>(q, k, v, dout, sl.g, s.N, s.D, s.Dv));
        __syncthreads();
    }
}

// The block's slice of a D x Dv state (g's matrix at m, NULL: zeros) <-> shared memory:
// COLS: columns s0 .. of every row, sh[d][cl]; else rows s0 .., sh[dl][c]. STORE writes
// the slice's n valid lines back.
template <bool COLS, bool STORE, typename P, int LD>
__device__ __forceinline__ void state_io(float (*sh)[LD], P m, const Slice &sl, int D, int Dv)
{
    const int other = COLS ? D : Dv;
    for (int e = threadIdx.x; e < kSlice * other; e += blockDim.x) {
        const int a = e % kSlice, o = e / kSlice; // a: within the slice
        float &x = COLS ? sh[o][a] : sh[a][o];
        const size_t ix = COLS ? (size_t)o * Dv + (size_t)(sl.s0 + a) : (size_t)(sl.s0 + a) * Dv + (size_t)o;
        if constexpr (STORE) {
            if (a < sl.n) m[ix] = x;
        } else {
            x = (m != nullptr && a < sl.n) ? m[ix] : 0.0f;
        }
    }
}
// v[x] = src[x] (NULL or x >= n: 0) for x < len: the normalizer slices and dd of a sub-tile.
__device__ __forceinline__ void load_vec(float *v, const float *src, int n, int len)
{
    for (int x = threadIdx.x; x < len; x += blockDim.x) v[x] = (src != nullptr && x < n) ? src[x] : 0.0f;
}
// dst[x] = v[x] for x < n: the final normalizer slice.
__device__ __forceinline__ void store_vec(float *dst, const float *v, int n)
{
    for (int x = threadIdx.x; x < n; x += blockDim.x) dst[x] = v[x];
}

// Sub-tiles x = x0, x0 + kSub, .. < x1 of a chunk ending at c1: load(x, c1), then body(x),
// each between barriers (the previous sub-tile is consumed before the load).
template <typename Load, typename Body>
__device__ __forceinline__ void subtiles(size_t x0, size_t x1, size_t c1, Load &&load, Body &&body)
{
    for (size_t x = x0; x < x1; x += kSub) {
        __syncthreads();
        load(x, c1);
        __syncthreads();
        body(x);
    }
}

// The sweep of a SIMT kernel over the chunks c0 .. c1 - 1 (REV: last chunk first). causal:
// per chunk the outputs (out(c0, c1, x) per sub-tile x staged by load_out: the state before
// the chunk plus the intra-chunk term), then the state update (upd() per sub-tile staged by
// load_upd). Bidirectional: phase 0 = the whole state (every chunk's update), phase 1 = the
// outputs from it.
template <bool REV, typename LoadO, typename Out, typename LoadU, typename Upd>
__device__ __forceinline__ void sweep(const Dims &s, LoadO &&load_out, Out &&out, LoadU &&load_upd, Upd &&upd)
{
    const size_t n_chunks = s.N / (size_t)s.C + (s.N % (size_t)s.C != 0);
    const int phases = s.causal ? 1 : 2;
    for (int phase = 0; phase < phases; ++phase) {
        for (size_t ci = 0; ci < n_chunks; ++ci) {
            const size_t c0 = (REV ? n_chunks - 1 - ci : ci) * (size_t)s.C, c1 = chunk_end(c0, s);
            if (s.causal || phase == 1) subtiles(c0, c1, c1, load_out, [&](size_t x) { out(c0, c1, x); });
            if (s.causal || phase == 0) subtiles(c0, c1, c1, load_upd, [&](size_t) { upd(); });
        }
    }
}

// fn(a, r, l) for the kOut outputs of this thread in a kSub x kSlice sub-tile: element
// e = tid + a kThreads is row r = e / kSlice, slice column l = e % kSlice.
template <typename Fn> __device__ __forceinline__ void for_out(Fn &&fn)
{
    MF_UNROLL
    for (int a = 0; a < kOut; ++a) {
        const int e = (int)threadIdx.x + a * kThreads;
        fn(a, e / kSlice, e % kSlice);
    }
}

// acc[r, l] = init(r, l) + sum_d X[r][d] * S(d, l), S(d, l) = S[d][l] (COLS) or S[l][d]:
// the sub-tile's product with the state before the chunk.
template <bool COLS, int LDX, int LDS, typename Init>
__device__ __forceinline__ void state_acc(float (&acc)[kOut], const float (*X)[LDX], const float (*S)[LDS],
                                          int n, Init &&init)
{
    for_out([&](int a, int r, int l) {
        float x = init(r, l);
        for (int d = 0; d < n; ++d) x += X[r][d] * (COLS ? S[d][l] : S[l][d]);
        acc[a] = x;
    });
}
// M[r][c] = X[r] . Y[c] (+ add[r] when ADD) where query i0 + r sees key j0 + c (j <= i, i < c1),
// else 0: the masked intra-chunk products.
template <bool ADD, int LDM, int LDX, int LDY>
__device__ __forceinline__ void masked_products(float (*M)[LDM], const float (*X)[LDX], const float (*Y)[LDY],
                                                int n, const float *add, size_t i0, size_t j0, size_t c1)
{
    for (int e = threadIdx.x; e < kSub * kSub; e += blockDim.x) {
        const int r = e / kSub, c = e % kSub;
        const size_t i = i0 + (size_t)r, j = j0 + (size_t)c;
        M[r][c] =
            (j <= i && i < c1) ? (ADD ? dot_rows(X[r], Y[c], n) + add[r] : dot_rows(X[r], Y[c], n)) : 0.0f;
    }
}
// acc[r, l] += sum_c M(r, c) Y[c][l]; M(r, c) = M[r][c], or M[c][r] for TR (the key side).
// On the diagonal sub-tile the masked terms are skipped, not weighted by 0: 0 * NaN would
// leak a masked value (c <= r, or c >= r for TR).
template <bool TR, int LDM, int LDY>
__device__ __forceinline__ void intra_acc(float (&acc)[kOut], const float (*M)[LDM], const float (*Y)[LDY],
                                          bool diag)
{
    for_out([&](int a, int r, int l) {
        const int lo = TR && diag ? r : 0, hi = !TR && diag ? r + 1 : kSub;
        float x = acc[a];
        for (int c = lo; c < hi; ++c) x += (TR ? M[c][r] : M[r][c]) * Y[c][l];
        acc[a] = x;
    });
}
// S(d, c) += sum_m X[m][d] Y[m][c] over the block's slice (COLS: S[d][cl] with Y the slice;
// else S[dl][c] with X the slice): the state update by one sub-tile.
template <bool COLS, int LDS, int LDX, int LDY>
__device__ __forceinline__ void state_update(float (*S)[LDS], const float (*X)[LDX], const float (*Y)[LDY],
                                             int other)
{
    for (int e = threadIdx.x; e < kSlice * other; e += blockDim.x) {
        const int a = e % kSlice, o = e / kSlice;
        const int di = COLS ? o : a, ci = COLS ? a : o;
        float &st = COLS ? S[o][a] : S[a][o];
        float x = st;
        for (int m = 0; m < kSub; ++m) x += X[m][di] * Y[m][ci];
        st = x;
    }
}
// z[d] += sum_m w_m X[m][d] (w = 1 when w is NULL) for d < n: the normalizer's update.
template <int LDX>
__device__ __forceinline__ void vec_update(float *z, const float (*X)[LDX], const float *w, int n)
{
    for (int d = threadIdx.x; d < n; d += blockDim.x) {
        float x = z[d];
        for (int m = 0; m < kSub; ++m) x += w != nullptr ? w[m] * X[m][d] : X[m][d];
        z[d] = x;
    }
}
// put(i, r, l, acc) for this thread's outputs of rows i = i0 + r < c1 and slice columns l < n.
template <typename Put>
__device__ __forceinline__ void put_out(const float (&acc)[kOut], size_t i0, size_t c1, int n, Put &&put)
{
    for_out([&](int a, int r, int l) {
        const size_t i = i0 + (size_t)r;
        if (i < c1 && l < n) put(i, r, l, acc[a]);
    });
}

// One intra-chunk step: the masked products M of query sub-tile i0 and key sub-tile j0
// (masked_products), then acc += M Z (TR: M^T Z) (intra_acc).
template <bool ADD, bool TR, int LDM, int LDX, int LDY, int LDZ>
__device__ __forceinline__ void intra_step(float (&acc)[kOut], float (*M)[LDM], const float (*X)[LDX],
                                           const float (*Y)[LDY], int n, const float *add,
                                           const float (*Z)[LDZ], size_t i0, size_t j0, size_t c1)
{
    masked_products<ADD>(M, X, Y, n, add, i0, j0, c1);
    __syncthreads();
    intra_acc<TR>(acc, M, Z, i0 == j0);
}
// dst[i, s0 + l] = dphi(src[i, s0 + l]) acc (rows of width D, g's rows at dst and src):
// dq and dk of the block's slice.
template <typename T>
__device__ __forceinline__ void put_dphi(const float (&acc)[kOut], size_t x0, size_t c1, const Slice &sl,
                                         int D, const T *src, float *dst)
{
    put_out(acc, x0, c1, sl.n, [&](size_t i, int, int l, float x) {
        const size_t idx = i * (size_t)D + (size_t)(sl.s0 + l);
        dst[idx] = dphi(to_f32(src[idx])) * x;
    });
}

// ---- forward: one block per (b, h, 32 columns of S) ----------------------------------
// mf-budget: regs<=88 smem<=37888 spill=0 sm_80:regs<=128  (sm_90 measured: regs 80 smem 36672; sm_80: regs 122, 4 blocks per SM as its shared memory allows)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    la_fwd_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                  const float *__restrict__ h0, const float *__restrict__ z0, float *__restrict__ out,
                  float *__restrict__ ht, float *__restrict__ zt, Dims s)
{
    __shared__ float S[kMaxD][kSlice]; // S[d][cl], columns c0s + cl
    __shared__ float z[kMaxD];
    __shared__ float Qp[kSub][kPad];
    __shared__ float Kp[kSub][kPad];
    __shared__ float Vs[kSub][kSlice + 1];
    __shared__ float A[kSub][kSub + 1];
    __shared__ float den_s[kSub];
    const int tid = threadIdx.x;
    const int D = s.D, Dv = s.Dv;
    for_slices(s, Dv, q, k, v, v /* no dout */, [&](const Slice &sl, const Heads<T> &hd) {
        const size_t st = sl.g * (size_t)D * (size_t)Dv;
        state_io<true, false>(S, h0 != nullptr ? h0 + st : nullptr, sl, D, Dv);
        load_vec(z, z0 != nullptr ? z0 + sl.g * (size_t)D : nullptr, D, D);
        auto load_q = [&](size_t i0, size_t c1) {
            stage<kOpPhi>(Qp, hd.q, i0, c1, D, 0, D, D, kSub, nullptr);
        };
        auto load_kv = [&](size_t j0, size_t c1) {
            stage<kOpPhi>(Kp, hd.k, j0, c1, D, 0, D, D, kSub, nullptr);
            stage<kOpIdent>(Vs, hd.v, j0, c1, Dv, sl.s0, sl.n, kSlice, kSub, nullptr);
        };
        auto out_tile = [&](size_t c0, size_t c1, size_t i0) {
            float acc[kOut];
            state_acc<true>(acc, Qp, S, D, [](int, int) { return 0.0f; });
            float my_den = tid < kSub ? dot_rows(Qp[tid], z, D) : 0.0f;
            if (s.causal)
                subtiles(c0, i0 + 1, c1, load_kv, [&](size_t j0) {
                    intra_step<false, false>(acc, A, Qp, Kp, D, nullptr, Vs, i0, j0, c1);
                    if (tid < kSub)
                        for (int c = 0; c < kSub; ++c) my_den += A[tid][c];
                });
            if (tid < kSub) den_s[tid] = my_den + kEps;
            __syncthreads();
            put_out(acc, i0, c1, sl.n, [&](size_t i, int r, int l, float x) {
                out[(sl.g * s.N + i) * (size_t)Dv + (size_t)(sl.s0 + l)] = x / den_s[r];
            });
        };
        sweep<false>(s, load_q, out_tile, load_kv, [&] {
            state_update<true>(S, Kp, Vs, D);
            vec_update(z, Kp, nullptr, D);
        });
        __syncthreads();
        if (s.causal && ht != nullptr) state_io<true, true>(S, ht + st, sl, D, Dv);
        if (s.causal && zt != nullptr && sl.s0 == 0) store_vec(zt + sl.g * (size_t)D, z, D);
    });
}

// Shared memory of the row-slice kernels (dq, dk): the block's 32 rows of the state (S or
// G, all Dv columns) and of its normalizer (z or g), a dnum and a v sub-tile (all Dv
// columns), a phi sub-tile of the slice's columns (k' for dq, q' for dk), the masked
// products and dd of the dnum sub-tile.
struct RowSmem {
    float St[kSlice][kPad];
    float sv[kSlice];
    float dN[kSub][kPad];
    float Vs[kSub][kPad];
    float P[kSub][kSlice + 1];
    float Bm[kSub][kSub + 1];
    float dd[kSub];
};
// The start of a row-slice item: the state slice and its normalizer from (b, h)'s matrix in
// m and vector in zv (NULL: zeros).
__device__ __forceinline__ void row_init(RowSmem &sm, const Slice &sl, const float *m, const float *zv, int D,
                                         int Dv)
{
    state_io<false, false>(sm.St, m != nullptr ? m + sl.g * (size_t)D * (size_t)Dv : nullptr, sl, D, Dv);
    load_vec(sm.sv, zv != nullptr ? zv + sl.g * (size_t)D + sl.s0 : nullptr, sl.n, kSlice);
}
// The dnum sub-tile i0 (dout / den) and its dd (g's rows at dout, den and dd).
template <typename T>
__device__ __forceinline__ void load_dnum(RowSmem &sm, const T *dout, const float *den, const float *dd,
                                          size_t i0, size_t c1, int Dv)
{
    stage<kOpDiv>(sm.dN, dout, i0, c1, Dv, 0, Dv, Dv, kSub, den);
    load_vec(sm.dd, dd + i0, (int)(c1 - i0), kSub);
}

// ---- backward 2: dq, one block per (b, h, 32 rows of S), forward sweep -----------------------
// dq'_n[d] = sum_c S_prev[d][c] dnum_n[c] + dd_n z_prev[d]
//          + sum_{m<=n in chunk} k'_m[d] (v_m . dnum_n + dd_n)
// mf-budget: regs<=96 smem<=37888 spill=0 sm_80:regs<=128  (sm_90 measured: regs 79 smem 36416; sm_80: regs 122, 4 blocks per SM as its shared memory allows)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    la_dq_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                 const T *__restrict__ dout, const float *__restrict__ den, const float *__restrict__ dd,
                 const float *__restrict__ h0, const float *__restrict__ z0, float *__restrict__ dq, Dims s)
{
    __shared__ RowSmem sm; // St = S[d0 + dl][c], sv = z, P = k' (columns d0 ..)
    const int D = s.D, Dv = s.Dv;
    for_slices(s, D, q, k, v, dout, [&](const Slice &sl, const Heads<T> &hd) {
        const float *deng = den + sl.g * s.N, *ddg = dd + sl.g * s.N;
        row_init(sm, sl, h0, z0, D, Dv);
        auto load_dn = [&](size_t i0, size_t c1) { load_dnum(sm, hd.dout, deng, ddg, i0, c1, Dv); };
        auto load_vk = [&](size_t j0, size_t c1) {
            stage<kOpIdent>(sm.Vs, hd.v, j0, c1, Dv, 0, Dv, Dv, kSub, nullptr);
            stage<kOpPhi>(sm.P, hd.k, j0, c1, D, sl.s0, sl.n, kSlice, kSub, nullptr);
        };
        auto out_tile = [&](size_t c0, size_t c1, size_t i0) {
            float acc[kOut];
            state_acc<false>(acc, sm.dN, sm.St, Dv, [&](int r, int l) { return sm.dd[r] * sm.sv[l]; });
            if (s.causal)
                subtiles(c0, i0 + 1, c1, load_vk, [&](size_t j0) {
                    intra_step<true, false>(acc, sm.Bm, sm.dN, sm.Vs, Dv, sm.dd, sm.P, i0, j0, c1);
                });
            put_dphi(acc, i0, c1, sl, D, hd.q, dq + sl.g * s.N * (size_t)D);
        };
        sweep<false>(s, load_dn, out_tile, load_vk, [&] {
            state_update<false>(sm.St, sm.P, sm.Vs, Dv);
            vec_update(sm.sv, sm.P, nullptr, kSlice);
        });
    });
}

// ---- backward 3: dk (and the initial state's gradients), one block per (b, h, 32 rows
// of G), reverse sweep ------------------------------------------------------------------------
// dk'_m[d] = sum_c G_next[d][c] v_m[c] + g_next[d] + sum_{n>=m in chunk} q'_n[d] (dnum_n . v_m + dd_n)
// mf-budget: regs<=96 smem<=37888 spill=0 sm_80:regs<=128  (sm_90 measured: regs 80 smem 36416; sm_80: regs 123, 4 blocks per SM as its shared memory allows)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    la_dk_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                 const T *__restrict__ dout, const float *__restrict__ den, const float *__restrict__ dd,
                 const float *__restrict__ dht, const float *__restrict__ dzt, float *__restrict__ dk,
                 float *__restrict__ dh0, float *__restrict__ dz0, Dims s)
{
    __shared__ RowSmem sm; // St = G[d0 + dl][c], sv = g, P = q' (columns d0 ..)
    const int D = s.D, Dv = s.Dv;
    for_slices(s, D, q, k, v, dout, [&](const Slice &sl, const Heads<T> &hd) {
        row_init(sm, sl, dht, dzt, D, Dv);
        auto load_v = [&](size_t j0, size_t c1) {
            stage<kOpIdent>(sm.Vs, hd.v, j0, c1, Dv, 0, Dv, Dv, kSub, nullptr);
        };
        auto load_dq = [&](size_t i0, size_t c1) {
            load_dnum(sm, hd.dout, den + sl.g * s.N, dd + sl.g * s.N, i0, c1, Dv);
            stage<kOpPhi>(sm.P, hd.q, i0, c1, D, sl.s0, sl.n, kSlice, kSub, nullptr);
        };
        auto out_tile = [&](size_t, size_t c1, size_t j0) {
            float acc[kOut];
            state_acc<false>(acc, sm.Vs, sm.St, Dv, [&](int, int l) { return sm.sv[l]; });
            if (s.causal)
                subtiles(j0, c1, c1, load_dq, [&](size_t i0) {
                    intra_step<true, true>(acc, sm.Bm, sm.dN, sm.Vs, Dv, sm.dd, sm.P, i0, j0, c1);
                });
            put_dphi(acc, j0, c1, sl, D, hd.k, dk + sl.g * s.N * (size_t)D);
        };
        sweep<true>(s, load_v, out_tile, load_dq, [&] {
            state_update<false>(sm.St, sm.P, sm.dN, Dv);
            vec_update(sm.sv, sm.P, sm.dd, kSlice);
        });
        __syncthreads();
        if (s.causal && dh0 != nullptr)
            state_io<false, true>(sm.St, dh0 + sl.g * (size_t)D * (size_t)Dv, sl, D, Dv);
        if (s.causal && dz0 != nullptr) store_vec(dz0 + sl.g * (size_t)D + sl.s0, sm.sv, sl.n);
    });
}

// ---- backward 4: dv, one block per (b, h, 32 columns of G), reverse sweep ----------------
// dv_m[c] = sum_d G_next[d][c] k'_m[d] + sum_{n>=m in chunk} (q'_n . k'_m) dnum_n[c]
// mf-budget: regs<=96 smem<=36864 spill=0 sm_80:regs<=128  (sm_90 measured: regs 80 smem 36096; sm_80: regs 123, 4 blocks per SM as its shared memory allows)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    la_dv_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ dout,
                 const float *__restrict__ den, const float *__restrict__ dht, float *__restrict__ dv, Dims s)
{
    __shared__ float Gc[kMaxD][kSlice]; // G[d][c0s + cl]
    __shared__ float Kp[kSub][kPad];
    __shared__ float Qp[kSub][kPad];
    __shared__ float dNc[kSub][kSlice + 1]; // dnum rows, columns c0s .. c0s + 31
    __shared__ float A[kSub][kSub + 1];
    const int D = s.D, Dv = s.Dv;
    for_slices(s, Dv, q, k, dout /* no v */, dout, [&](const Slice &sl, const Heads<T> &hd) {
        state_io<true, false>(Gc, dht != nullptr ? dht + sl.g * (size_t)D * (size_t)Dv : nullptr, sl, D, Dv);
        auto load_k = [&](size_t j0, size_t c1) {
            stage<kOpPhi>(Kp, hd.k, j0, c1, D, 0, D, D, kSub, nullptr);
        };
        auto load_qd = [&](size_t i0, size_t c1) {
            stage<kOpPhi>(Qp, hd.q, i0, c1, D, 0, D, D, kSub, nullptr);
            stage<kOpDiv>(dNc, hd.dout, i0, c1, Dv, sl.s0, sl.n, kSlice, kSub, den + sl.g * s.N);
        };
        auto out_tile = [&](size_t, size_t c1, size_t j0) {
            float acc[kOut];
            state_acc<true>(acc, Kp, Gc, D, [](int, int) { return 0.0f; });
            if (s.causal)
                subtiles(j0, c1, c1, load_qd, [&](size_t i0) {
                    intra_step<false, true>(acc, A, Qp, Kp, D, nullptr, dNc, i0, j0, c1);
                });
            put_out(acc, j0, c1, sl.n, [&](size_t j, int, int l, float x) {
                dv[(sl.g * s.N + j) * (size_t)Dv + (size_t)(sl.s0 + l)] = x;
            });
        };
        sweep<true>(s, load_k, out_tile, load_qd, [&] { state_update<true>(Gc, Qp, dNc, D); });
    });
}

// ==== the causal form on tensor cores (bf16 storage), in the chunk form of ==================
// flash-linear-attention: chunk states in parallel, a scan over chunks, then every 64-row
// tile in parallel. Ce = kStateChunk = 512 rows per chunk state, 64-row tiles (4 warps x 16
// rows) for the outputs; the argument C (the fp32 path's chunk) does not apply here:
//   la_tc_state_kernel<0> (b, h, chunk; 8 warps): H_c = K'_c^T V_c and z_c = sum k'_m (the
//                          chunk's own contribution), fp32 into scratch
//   la_tc_state_kernel<1> (same grid): G_c = Q'_c^T dN_c and g_c = sum dd_n q'_n
//   la_scan_kernel        (b, h, element of the D x Dv state and of z): an exclusive
//                          scan over chunks in place (forward or reverse), starting from
//                          the initial state (or dS_N), writing the final one (or dS0)
//   la_tc_tile_kernel<M>  (b, h, 64-row tile): M = 0 out, 1 dq; la_tc_dkdv_kernel (same
//                          grid, 8 warps) M = 2 dk and 3 dv side by side. The tile's
//                          own rows X times the chunk's state (Q' S, dN S^T, V G^T, K' G),
//                          plus the masked intra-chunk products of 32-row tiles of the
//                          same chunk (Q'K'^T)V, (dN V^T + dd)K', (V dN^T + dd)^T-side Q',
//                          (K'Q'^T)dN; every product on mma.sync m16n8k16 (bf16 in, fp32
//                          accumulate) fed by ldmatrix; the masked C fragments are reused
//                          in registers as the A operand of the second product.
//   la_rowstats_kernel    (b, h, 64-row tile; the fp32 and bidirectional paths): den_n =
//                          q'_n . z_n + eps from the chunk's z (prefix within the chunk in
//                          fp32) and dd_n = -(dout_n . out_n) / den_n; the tensor-core path
//                          computes them in la_tc_tile_kernel<1> (tile_rowstats)
// phi(q), phi(k) and dN = dout / den are rounded to bf16 once, when a tile is staged in
// shared memory, and the same rounded values feed the products, z and den, so that out
// is num/den of one consistent set of operands. States are summed and scanned in fp32
// and rounded to bf16 only as mma operands; the final state is the fp32 scan.
constexpr int kT = 64;         // own-tile rows of dk, dv and the row statistics: 4 warps x 16
constexpr int kTw = 128;       // own-tile rows of out and dq: 8 warps x 16
constexpr int kO = 32;         // other-tile rows (and the state's k-slice)
constexpr int kLd = kMaxD + 8; // bf16 row pitch: 272 bytes (16-byte aligned, no ldmatrix conflicts)
// Rows per chunk state of the tensor-core path: a state every 512 rows moves 1/8 of the
// state bytes of one every 64 rows (the chunk form is memory-bound at D = 128:
// docs/linear_attention.md) for ~4x the intra-chunk products of 64-row chunks, which stay
// under the memory time; the tile kernels compute the intra-chunk part of up to 512 rows in
// 64 x 32 mma tiles. The fp32 and bidirectional paths keep only z per chunk (D floats), per
// kZChunk rows.
constexpr int kStateChunk = 512;
constexpr int kZChunk = 256;
typedef __nv_bfloat16 bf16;

struct TcDims {
    size_t N, nc, bh, tiles, tiles_w; // 64-row and kTw-row tiles per (b, h)
    int D, Dv, Ce, E;                 // E = floats per chunk state (D*Dv + D, or D for z only)
};

// phi rounded to the storage type: bf16 (the value the tensor-core path uses everywhere)
// or fp32 (the SIMT path).
template <typename T> __device__ __forceinline__ float phi_r(float x);
template <> __device__ __forceinline__ float phi_r<float>(float x) { return phi(x); }
template <> __device__ __forceinline__ float phi_r<bf16>(float x)
{
    return __bfloat162float(__float2bfloat16_rn(phi(x)));
}

__device__ __forceinline__ int round16(int x) { return (x + 15) & ~15; }

// ---- chunk states: one block of 8 warps per (b, h, chunk) -----------------------------------------
// REV 0: st[c] = K'_c^T V_c (D x Dv) and sum_m k'_m; REV 1: Q'_c^T dN_c and sum_n dd_n q'_n.
// Warp w owns rows 32 (w % 4) .. + 31 and columns 64 (w / 4) .. + 63 of the D x Dv output
// (2 x 8 mma tiles): the phi rows are staged once for both column halves. The phi operand
// enters as hi + lo (two bf16, <= 2^-16 relative) and z is summed from the fp32 phi: the
// states, and the final state the scan returns, keep fp32 accuracy for bf16 v (REV 0).
// mf-budget: regs<=128 smem<=26624 spill=0  (sm_90 measured: regs 118 smem 26112/26240)
template <int REV>
__global__ void __launch_bounds__(2 * kThreads, 2)
    la_tc_state_kernel(const bf16 *__restrict__ a_src, const bf16 *__restrict__ b_src,
                       const float *__restrict__ den, const float *__restrict__ dd, float *__restrict__ st,
                       TcDims s)
{
    __shared__ __align__(16) bf16 As[kO][kLd]; // 32 rows x D: bf16(phi)
    __shared__ __align__(16) bf16 Al[kO][kLd]; // bf16(phi - bf16(phi))
    __shared__ __align__(16) bf16 Bs[kO][kLd]; // 32 rows x Dv (v or dout / den)
    __shared__ float w_s[kO];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int D = s.D, Dv = s.Dv, Dp = round16(D), Dvp = round16(Dv);
    const int col0 = (warp >> 2) * 64; // warp-uniform; no columns when col0 >= Dv
    const int cols = Dv - col0 < 64 ? Dv - col0 : 64, colsp = cols > 0 ? round16(cols) : 0;
    const size_t total = s.bh * s.nc;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item / s.nc, c = item % s.nc;
        const size_t r0 = c * (size_t)s.Ce, r1 = r0 + (size_t)s.Ce < s.N ? r0 + (size_t)s.Ce : s.N;
        const bf16 *ag = a_src + g * s.N * (size_t)D, *bg = b_src + g * s.N * (size_t)Dv;
        const float *deng = REV ? den + g * s.N : nullptr;
        const int m0 = (warp & 3) * 32;
        float acc[2][8][4];
        MF_UNROLL for (int i = 0; i < 2; ++i) MF_UNROLL for (int j = 0; j < 8; ++j)
            MF_UNROLL for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
        float zacc = 0.0f;
        for (size_t j0 = r0; j0 < r1; j0 += kO) {
            __syncthreads(); // As, Bs, w_s free
            for (int e = tid; e < kO * Dp; e += blockDim.x) {
                const int r = e / Dp, d = e % Dp;
                const size_t i = j0 + (size_t)r;
                const float x =
                    (i < r1 && d < D) ? phi(__bfloat162float(ag[i * (size_t)D + (size_t)d])) : 0.0f;
                const bf16 hi = __float2bfloat16_rn(x);
                As[r][d] = hi;
                Al[r][d] = __float2bfloat16_rn(x - __bfloat162float(hi));
            }
            if (REV) {
                stage<kOpDiv>(Bs, bg, j0, r1, Dv, 0, Dv, Dvp, kO, deng);
                if (tid < kO) w_s[tid] = j0 + (size_t)tid < r1 ? dd[g * s.N + j0 + (size_t)tid] : 0.0f;
            } else {
                stage<kOpIdent>(Bs, bg, j0, r1, Dv, 0, Dv, Dvp, kO, nullptr);
            }
            __syncthreads();
            if (col0 == 0 && tid < D) // rows past r1 are staged as 0
                for (int r = 0; r < kO; ++r)
                    zacc +=
                        (REV ? w_s[r] : 1.0f) * (__bfloat162float(As[r][tid]) + __bfloat162float(Al[r][tid]));
            if (m0 < Dp && colsp > 0) {
                MF_UNROLL for (int kk = 0; kk < 2; ++kk)
                {
                    uint32_t a[2][4], al[2][4];
                    // A = (rows x D)^T: As, Al hold it k-major, so ldmatrix.trans
                    MF_UNROLL for (int i = 0; i < 2; ++i)
                    {
                        const int r = kk * 16 + (lane >> 4) * 8 + (lane & 7),
                                  cidx = m0 + i * 16 + ((lane >> 3) & 1) * 8;
                        ldsm_x4_t(a[i], &As[r][cidx]);
                        ldsm_x4_t(al[i], &Al[r][cidx]);
                    }
                    MF_UNROLL for (int nb = 0; nb < 4; ++nb)
                    {
                        if (nb * 16 >= colsp) continue;
                        uint32_t b[4];
                        ldsm_x4_t(b, &Bs[kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)]
                                        [col0 + nb * 16 + (lane >> 4) * 8]);
                        MF_UNROLL for (int i = 0; i < 2; ++i)
                        {
                            if (m0 + i * 16 >= Dp) continue;
                            mma_x2(acc[i][2 * nb], acc[i][2 * nb + 1], a[i], b);
                            mma_x2(acc[i][2 * nb], acc[i][2 * nb + 1], al[i], b);
                        }
                    }
                }
            }
        }
        float *stc = st + (g * s.nc + c) * (size_t)s.E;
        const int gq = lane >> 2, t4 = lane & 3;
        MF_UNROLL for (int i = 0; i < 2; ++i) MF_UNROLL for (int j = 0; j < 8; ++j)
            MF_UNROLL for (int e = 0; e < 4; ++e)
        {
            const int d = m0 + i * 16 + gq + (e >> 1) * 8, cl = j * 8 + 2 * t4 + (e & 1);
            if (d < D && cl < cols) stc[(size_t)d * Dv + (size_t)(col0 + cl)] = acc[i][j][e];
        }
        if (col0 == 0 && tid < D) stc[(size_t)D * Dv + (size_t)tid] = zacc;
    }
}

// ---- z only (fp32 and bidirectional paths): one block per (b, h, chunk) ------------------------
// st[c][d] = sum over the chunk of phi(k_m[d]) (fp32, as the SIMT kernels compute phi).
// mf-budget: regs<=48 smem<=0 spill=0  (sm_90 measured: regs 40)
template <typename T>
__global__ void __launch_bounds__(kThreads)
    la_zsum_kernel(const T *__restrict__ k, float *__restrict__ st, TcDims s)
{
    const int D = s.D;
    const size_t total = s.bh * s.nc;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item / s.nc, c = item % s.nc;
        const size_t r0 = c * (size_t)s.Ce, r1 = r0 + (size_t)s.Ce < s.N ? r0 + (size_t)s.Ce : s.N;
        for (int d = threadIdx.x; d < D; d += blockDim.x) {
            float z = 0.0f;
            for (size_t m = r0; m < r1; ++m) z += phi(to_f32(k[(g * s.N + m) * (size_t)D + (size_t)d]));
            st[(g * s.nc + c) * (size_t)s.E + (size_t)d] = z;
        }
    }
}

// ---- exclusive scan over chunks, in place: one thread per (b, h, state element) ------------------
// Elements e < dm are the D x Dv state, the next D are z. Forward: st[c] <- init + sum_{c' < c};
// reverse: st[c] <- init + sum_{c' > c}. fin (optional) gets init + the sum of every chunk.
// mf-budget: regs<=40 smem<=0 spill=0  (sm_90 measured: regs 32)
__global__ void __launch_bounds__(256)
    la_scan_kernel(float *__restrict__ st, const float *__restrict__ init_m, const float *__restrict__ init_z,
                   float *__restrict__ fin_m, float *__restrict__ fin_z, TcDims s, int dm, int rev)
{
    const size_t total = s.bh * (size_t)s.E;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t g = idx / (size_t)s.E;
        const int e = (int)(idx % (size_t)s.E);
        const bool m = e < dm;
        const size_t ie = m ? g * (size_t)dm + (size_t)e : g * (size_t)s.D + (size_t)(e - dm);
        const float *init = m ? init_m : init_z;
        float run = init != nullptr ? init[ie] : 0.0f;
        for (size_t cc = 0; cc < s.nc; ++cc) {
            const size_t c = rev ? s.nc - 1 - cc : cc;
            float *p = st + (g * s.nc + c) * (size_t)s.E + (size_t)e;
            const float x = *p;
            *p = run;
            run += x;
        }
        float *fin = m ? fin_m : fin_z;
        if (fin != nullptr) fin[ie] = run;
    }
}

// ---- row statistics: one block per (b, h, 64-row tile) -----------------------------------------
// den_n = q'_n . z_n + eps with z_n = z_prev(chunk) + sum_{chunk start <= m <= n} k'_m in fp32
// (thread d walks the chunk's rows up to the tile's end), or z_n = zfix (bidirectional: the
// total); dd_n = -(dout_n . out_n) / den_n. RND (tensor-core path): the prefix within the
// chunk from q', k' rounded to bf16 as the products round them (phi_r).
// mf-budget: regs<=96 smem<=33536 spill=0  (sm_90 measured: regs 80 smem 33280)
template <typename T, bool RND>
__global__ void __launch_bounds__(kThreads)
    la_rowstats_kernel(const T *__restrict__ q, const T *__restrict__ k, const float *__restrict__ out,
                       const T *__restrict__ dout, const float *__restrict__ st, int zoff,
                       const float *__restrict__ zfix, float *__restrict__ den, float *__restrict__ dd,
                       TcDims s)
{
    __shared__ float P[kT][kPad];
    __shared__ float den_s[kT];
    const int tid = threadIdx.x, D = s.D, Dv = s.Dv;
    const size_t total = s.bh * s.tiles;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t g = item / s.tiles, i0 = (item % s.tiles) * (size_t)kT;
        const size_t i1 = i0 + (size_t)kT < s.N ? i0 + (size_t)kT : s.N;
        const size_t c = i0 / (size_t)s.Ce, c0 = zfix != nullptr ? i0 : c * (size_t)s.Ce;
        const int rows = (int)(i1 - i0);
        __syncthreads(); // P, den_s free
        for (int d = tid; d < D; d += blockDim.x) {
            float z = zfix != nullptr ? zfix[g * (size_t)D + (size_t)d]
                                      : st[(g * s.nc + c) * (size_t)s.E + (size_t)zoff + (size_t)d];
            for (size_t m = c0; m < i1; ++m) {
                const size_t ix = (g * s.N + m) * (size_t)D + (size_t)d;
                if (zfix == nullptr) z += RND ? phi_r<T>(to_f32(k[ix])) : phi(to_f32(k[ix]));
                if (m >= i0) P[m - i0][d] = (RND ? phi_r<T>(to_f32(q[ix])) : phi(to_f32(q[ix]))) * z;
            }
        }
        __syncthreads();
        {
            const int r = tid >> 1, h = tid & 1; // two threads per row
            float x = 0.0f;
            if (r < rows)
                for (int d = h; d < D; d += 2) x += P[r][d];
            x += __shfl_xor_sync(0xffffffffu, x, 1);
            if (h == 0 && r < rows) den_s[r] = x + kEps;
        }
        __syncthreads();
        for (int cc = tid; cc < Dv; cc += blockDim.x)
            for (int r = 0; r < rows; ++r) {
                const size_t ix = (g * s.N + i0 + (size_t)r) * (size_t)Dv + (size_t)cc;
                P[r][cc] = to_f32(dout[ix]) * out[ix];
            }
        __syncthreads();
        {
            const int r = tid >> 1, h = tid & 1;
            float x = 0.0f;
            if (r < rows)
                for (int cc = h; cc < Dv; cc += 2) x += P[r][cc];
            x += __shfl_xor_sync(0xffffffffu, x, 1);
            if (h == 0 && r < rows) {
                den[g * s.N + i0 + (size_t)r] = den_s[r];
                dd[g * s.N + i0 + (size_t)r] = -x / den_s[r];
            }
        }
    }
}

// ---- the 64-row tiles ----------------------------------------------------------------------------
// MODE 0 out: X = Q' (k = D), state S, other P = K', Y = V, keys m <= n;   out = acc / den
// MODE 1 dq : X = dN (k = Dv), state S^T, P = V, Y = K', m <= n, + dd_n;  dq = dphi(q) (acc + dd z_prev)
// MODE 2 dk : X = V (k = Dv), state G^T, P = dN, Y = Q', n >= m, + dd_n;  dk = dphi(k) (acc + g_next)
// MODE 3 dv : X = K' (k = D), state G, P = Q', Y = dN, n >= m;            dv = acc
// A warp owns 16 rows of the tile and every output column (16 n8 tiles of fp32
// accumulators). Masked entries are zeroed before the C fragment becomes the A operand
// (so a non-finite v or k can reach the other rows of its 16-row mma tile; see the header).
// The warp-level pieces below contain no barrier: la_tc_tile_kernel (modes 0, 1: 4 warps)
// and la_tc_dkdv_kernel (modes 2 and 3 side by side: 8 warps sharing the staged tiles)
// place the barriers around them.

// acc (16 x Wp) += a (the A fragment of one k16 step) * Y[krow .. krow + 15][0 .. Wp)
__device__ __forceinline__ void acc_a_y(float acc[16][4], const uint32_t a[4], const bf16 (*Ys)[kLd],
                                        int krow, int Wp, int lane)
{
    MF_UNROLL for (int nb = 0; nb < 8; ++nb)
    {
        if (nb * 16 >= Wp) continue;
        uint32_t b[4];
        ldsm_x4_t(b, &Ys[krow + ((lane >> 3) & 1) * 8 + (lane & 7)][nb * 16 + (lane >> 4) * 8]);
        mma_x2(acc[2 * nb], acc[2 * nb + 1], a, b);
    }
}
// The state product's k-slice: acc += X[xr .., ks .. ks + 31] * M[0 .. 31][0 .. Wp) (M staged in Ys).
__device__ __forceinline__ void state_slice(float acc[16][4], const bf16 (*Xs)[kLd], int xr, int ks, int Kxp,
                                            const bf16 (*Ys)[kLd], int Wp, int lane)
{
    MF_UNROLL for (int kk = 0; kk < 2; ++kk)
    {
        if (ks + kk * 16 >= Kxp) continue;
        uint32_t a[4];
        ldsm_x4(a, &Xs[xr + (lane & 15)][ks + kk * 16 + (lane >> 4) * 8]);
        acc_a_y(acc, a, Ys, kk * 16, Wp, lane);
    }
}
// M[kk][n] (kk < 32, n < Wp) of the state's k-slice ks, as bf16: TR ? state[n][ks + kk]
// (n < D, along Dv) : state[ks + kk][n]; 0 outside Kx x W. Every thread of the block.
template <bool TR>
__device__ __forceinline__ void stage_state(bf16 (*Ys)[kLd], const float *__restrict__ stc, int ks, int Kx,
                                            int W, int Wp, int Dv)
{
    for (int e = threadIdx.x; e < kO * Wp; e += blockDim.x) {
        const int n = TR ? e / kO : e % Wp, kk = TR ? e % kO : e / Wp, kg2 = ks + kk;
        const bool in = kg2 < Kx && n < W;
        const float x = in ? stc[TR ? (size_t)n * Dv + (size_t)kg2 : (size_t)kg2 * Dv + (size_t)n] : 0.0f;
        Ys[kk][n] = __float2bfloat16_rn(x);
    }
}
// The other 32-row tile j0 of the chunk: sc = X[xr ..] P^T (k = Kxp), masked (m <= n for
// modes 0, 1; n >= m for 2, 3) with the mode's addend, then acc += sc Y. Mode 0 adds the
// masked scores to rsum (the rows' share of den).
template <int MODE>
__device__ __forceinline__ void intra_tile(float acc[16][4], float rsum[2], const bf16 (*Xs)[kLd], int xr,
                                           const bf16 (*Ps)[kLd], int Kxp, const bf16 (*Ys)[kLd], int Wp,
                                           size_t ir0, size_t j0, const float *row_w, const float *col,
                                           int lane)
{
    constexpr bool kLower = MODE == 0 || MODE == 1;
    const int gq = lane >> 2, t4 = lane & 3;
    float sc[4][4];
    MF_UNROLL for (int j = 0; j < 4; ++j) MF_UNROLL for (int e = 0; e < 4; ++e) sc[j][e] = 0.0f;
    for (int kk = 0; kk < Kxp; kk += 16) {
        uint32_t a[4];
        ldsm_x4(a, &Xs[xr + (lane & 15)][kk + (lane >> 4) * 8]);
        MF_UNROLL for (int nb = 0; nb < 2; ++nb)
        {
            uint32_t b[4]; // P rows are the n index: P[n][k] is B^T, plain ldmatrix
            ldsm_x4(b, &Ps[nb * 16 + (lane >> 4) * 8 + (lane & 7)][kk + ((lane >> 3) & 1) * 8]);
            mma_x2(sc[2 * nb], sc[2 * nb + 1], a, b);
        }
    }
    MF_UNROLL for (int j = 0; j < 4; ++j) MF_UNROLL for (int e = 0; e < 4; ++e)
    {
        const size_t row = ir0 + (size_t)(gq + (e >> 1) * 8);
        const int cl = j * 8 + 2 * t4 + (e & 1);
        const size_t cg = j0 + (size_t)cl;
        const bool keep = kLower ? cg <= row : cg >= row;
        float x = sc[j][e];
        if (MODE == 1) x += row_w[gq + (e >> 1) * 8];
        if (MODE == 2) x += col[cl];
        x = keep ? x : 0.0f;
        if (MODE == 0) rsum[e >> 1] += x;
        sc[j][e] = x;
    }
    MF_UNROLL for (int kk = 0; kk < 2; ++kk)
    {
        // the C fragments of score tiles 2kk, 2kk + 1 are the A fragment of k16 step kk
        uint32_t a[4];
        c_to_a(a, sc[2 * kk], sc[2 * kk + 1]);
        acc_a_y(acc, a, Ys, kk * 16, Wp, lane);
    }
}

// Per (b, h, 64-row tile): the rows, chunk and pointers every tile kernel starts from.
struct TileItem {
    size_t g, i0, i1, c0, c1;
    const float *stc;
};
template <int ROWS>
__device__ __forceinline__ TileItem tile_item(size_t item, const float *st, const TcDims &s)
{
    const size_t tiles = ROWS == kT ? s.tiles : s.tiles_w;
    TileItem t;
    t.g = item / tiles;
    t.i0 = (item % tiles) * (size_t)ROWS;
    t.i1 = t.i0 + (size_t)ROWS < s.N ? t.i0 + (size_t)ROWS : s.N;
    const size_t c = t.i0 / (size_t)s.Ce;
    t.c0 = c * (size_t)s.Ce;
    t.c1 = t.c0 + (size_t)s.Ce < s.N ? t.c0 + (size_t)s.Ce : s.N;
    t.stc = st + (t.g * s.nc + c) * (size_t)s.E;
    return t;
}

// ---- out and dq: one block of 8 warps per (b, h, 128-row tile); warp w owns rows 16w .. 16w + 15 --
// 128 rows per block: every staged 32-row tile of K', V (or V, K') and every k-slice of the
// state feeds 8 warps, half the shared-to-L2 traffic per output row of 64-row tiles
// (docs/linear_attention.md). Dynamic shared memory (sizeof(TileSmem)).
struct TileSmem {
    bf16 X[kTw][kLd];
    bf16 P[kO][kLd];
    bf16 Y[kO][kLd];    // also the state's k-slice
    float vec[kMaxD];   // z_prev
    float row[kTw];     // dd of the own rows (1)
    float part[4][kTw]; // (1) the row statistics: q'_n . z_n of 32 columns per warp 0-3
    float den[kTw];     // (1) den of the own rows
};
// The sum of x over the warp's 32 lanes (every lane gets it).
__device__ __forceinline__ float warp_sum(float x)
{
    MF_UNROLL for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}
// MODE 1's row statistics of the own rows (what la_rowstats_kernel does for the fp32 path):
// den_n = q'_n . z_n + eps with z_n = z_prev + sum_{c0 <= m <= n} k'_m summed in fp32 from
// the bf16-rounded phi (thread d of warps 0-3 walks the chunk's rows up to the tile's end;
// q'_n . z_n reduced per warp), and dout_n . out_n (warps 4-7, a row per warp at a time);
// then den and dd_n = -(dout_n . out_n) / den_n are written for the later kernels and dd
// kept in row_s. Every thread of the block; ends with a barrier.
__device__ __forceinline__ void tile_rowstats(TileSmem &sm, const TileItem &it, const bf16 *__restrict__ qg,
                                              const bf16 *__restrict__ kg, const bf16 *__restrict__ dog,
                                              const float *__restrict__ outg, float *deng, float *ddg, int D,
                                              int Dv)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (warp < 4) {
        if (warp * 32 < D) { // warp-uniform
            const int d = warp * 32 + lane;
            float z = d < D ? it.stc[(size_t)D * Dv + (size_t)d] : 0.0f;
            for (size_t m = it.c0; m < it.i1; ++m) {
                const size_t ix = m * (size_t)D + (size_t)d;
                if (d < D) z += phi_r<bf16>(__bfloat162float(kg[ix]));
                if (m >= it.i0) {
                    const float x = warp_sum(d < D ? phi_r<bf16>(__bfloat162float(qg[ix])) * z : 0.0f);
                    if (lane == 0) sm.part[warp][m - it.i0] = x;
                }
            }
        }
    } else {
        for (int r = warp - 4; r < kTw; r += 4) { // warp-uniform
            const size_t row = it.i0 + (size_t)r;
            float x = 0.0f;
            if (row < it.i1)
                for (int c = lane; c < Dv; c += 32)
                    x += __bfloat162float(dog[row * (size_t)Dv + (size_t)c]) *
                         outg[row * (size_t)Dv + (size_t)c];
            x = warp_sum(x);
            if (lane == 0) sm.row[r] = x;
        }
    }
    __syncthreads();
    for (int r = tid; r < kTw; r += blockDim.x) {
        const size_t row = it.i0 + (size_t)r;
        if (row >= it.i1) {
            sm.row[r] = 0.0f;
            continue;
        }
        float dn = 0.0f;
        for (int w = 0; w < 4 && w * 32 < D; ++w) dn += sm.part[w][r];
        dn += kEps;
        const float ddv = -sm.row[r] / dn;
        deng[row] = dn;
        ddg[row] = ddv;
        sm.den[r] = dn;
        sm.row[r] = ddv;
    }
    __syncthreads(); // den_s and row_s visible to the block
}
// mf-budget: regs<=128 smem<=0 spill=0 sm_80:regs<=160  (sm_90 measured: regs 128, 128, no static smem; dynamic 55808 B;
// sm_80: regs 128, 154 for mode 1 with the row statistics folded in: 1 block per SM on an A100)
template <int MODE>
__global__ void __launch_bounds__(2 * kThreads)
    la_tc_tile_kernel(const bf16 *__restrict__ q, const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                      const bf16 *__restrict__ dout, const float *__restrict__ out, float *__restrict__ den,
                      float *__restrict__ dd, const float *__restrict__ st, float *__restrict__ res, TcDims s)
{
    static_assert(MODE == 0 || MODE == 1, "dk and dv run in la_tc_dkdv_kernel");
    extern __shared__ __align__(16) unsigned char la_tile_smem[];
    TileSmem &sm = *reinterpret_cast<TileSmem *>(la_tile_smem);
    bf16(*Xs)[kLd] = sm.X;
    bf16(*Ps)[kLd] = sm.P;
    bf16(*Ys)[kLd] = sm.Y;
    float *vec_s = sm.vec, *row_s = sm.row;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, gq = lane >> 2, t4 = lane & 3;
    const int D = s.D, Dv = s.Dv;
    const int Kx = MODE == 0 ? D : Dv, W = MODE == 0 ? Dv : D;
    const int Kxp = round16(Kx), Wp = round16(W);
    const size_t total = s.bh * s.tiles_w;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const TileItem it = tile_item<kTw>(item, st, s);
        const size_t g = it.g;
        const Heads<bf16> hd(q, k, v, dout, g, s.N, D, Dv);
        float *deng = MODE == 1 ? den + g * s.N : nullptr, *ddg = MODE == 1 ? dd + g * s.N : nullptr;
        const size_t ir0 = it.i0 + (size_t)(warp * 16);
        __syncthreads(); // the previous item is done with shared memory
        if (MODE == 1)
            tile_rowstats(sm, it, hd.q, hd.k, hd.dout, out + g * s.N * (size_t)Dv, deng, ddg, D, Dv);
        if (MODE == 0) stage<kOpPhi>(Xs, hd.q, it.i0, it.i1, D, 0, D, Kxp, kTw, nullptr);
        if (MODE == 1) stage<kOpDivR>(Xs, hd.dout, it.i0, it.i1, Dv, 0, Dv, Kxp, kTw, sm.den);
        for (int d = tid; d < D; d += blockDim.x) vec_s[d] = it.stc[(size_t)D * Dv + (size_t)d];

        float acc[16][4];
        MF_UNROLL for (int j = 0; j < 16; ++j) MF_UNROLL for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;
        const bool rows_live = ir0 < it.i1; // warp-uniform

        // (1) the chunk's state: acc = X (64 x Kx) * M (Kx x W), k-slices of 32
        for (int ks = 0; ks < Kxp; ks += kO) {
            __syncthreads(); // Ys free (and Xs staged, the first time)
            stage_state<MODE == 1>(Ys, it.stc, ks, Kx, W, Wp, Dv);
            __syncthreads();
            if (rows_live) state_slice(acc, Xs, warp * 16, ks, Kxp, Ys, Wp, lane);
        }

        // (2) the earlier 32-row tiles of the chunk, masked: acc += mask(X P^T + add) Y
        float rsum[2] = { 0.0f, 0.0f }; // MODE 0: row sums of the masked scores (den)
        for (size_t j0 = it.c0; j0 < it.i1; j0 += kO) {
            __syncthreads(); // Ps, Ys free
            if (MODE == 0) {
                stage<kOpPhi>(Ps, hd.k, j0, it.i1, D, 0, D, Kxp, kO, nullptr);
                stage<kOpIdent>(Ys, hd.v, j0, it.i1, Dv, 0, Dv, Wp, kO, nullptr);
            } else {
                stage<kOpIdent>(Ps, hd.v, j0, it.i1, Dv, 0, Dv, Kxp, kO, nullptr);
                stage<kOpPhi>(Ys, hd.k, j0, it.i1, D, 0, D, Wp, kO, nullptr);
            }
            __syncthreads();
            // warp-uniform: skip the tiles that the mask removes entirely for this warp
            if (rows_live && j0 <= ir0 + 15)
                intra_tile<MODE>(acc, rsum, Xs, warp * 16, Ps, Kxp, Ys, Wp, ir0, j0, row_s + warp * 16,
                                 nullptr, lane);
        }

        // (3) epilogue
        float dn[2] = { 1.0f, 1.0f };
        if (MODE == 0) { // den = rowsum + q'_n . z_prev + eps (the quad's 4 lanes share a row)
            MF_UNROLL for (int h = 0; h < 2; ++h)
            {
                float x = 0.0f;
                for (int d = t4; d < D; d += 4)
                    x += __bfloat162float(Xs[warp * 16 + gq + h * 8][d]) * vec_s[d];
                x += rsum[h];
                x += __shfl_xor_sync(0xffffffffu, x, 1);
                x += __shfl_xor_sync(0xffffffffu, x, 2);
                dn[h] = x + kEps;
            }
        }
        MF_UNROLL for (int j = 0; j < 16; ++j)
        {
            if (j * 8 >= W) continue;
            MF_UNROLL for (int e = 0; e < 4; ++e)
            {
                const int h = e >> 1, cl = j * 8 + 2 * t4 + (e & 1);
                const size_t row = ir0 + (size_t)(gq + h * 8);
                if (row >= it.i1 || cl >= W) continue;
                const size_t ix = (g * s.N + row) * (size_t)W + (size_t)cl;
                float x = acc[j][e];
                if (MODE == 0) x /= dn[h];
                if (MODE == 1)
                    x = dphi(__bfloat162float(q[ix])) * (x + row_s[warp * 16 + gq + h * 8] * vec_s[cl]);
                res[ix] = x;
            }
        }
    }
}

// ---- dk and dv: one block of 8 warps per (b, h, tile) ----------------------------------------------
// Warps 0-3 compute dk (mode 2), warps 4-7 dv (mode 3) of the same 64 rows: both read the
// chunk's reverse state G and the later 32-row tiles of dN and Q' of the chunk, which are
// staged once for both (one pass over q, dout and the states instead of two). The own rows
// V (dk) and K' (dv) are staged side by side. Dynamic shared memory (la_dkdv_smem_bytes).
struct DkdvSmem {
    bf16 X[2][kT][kLd]; // [0]: V rows (dk), [1]: K' rows (dv)
    bf16 T[2][kO][kLd]; // [0]: dN (P of dk, Y of dv) or G^T's k-slice; [1]: Q' or G's k-slice
    float g_next[kMaxD];
    float col[kO]; // dd of the other rows
};
// mf-budget: regs<=128 smem<=0 spill=0  (sm_90 measured: regs 128, no static smem; dynamic 52864 B)
__global__ void __launch_bounds__(2 * kThreads)
    la_tc_dkdv_kernel(const bf16 *__restrict__ q, const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                      const bf16 *__restrict__ dout, const float *__restrict__ den,
                      const float *__restrict__ dd, const float *__restrict__ st, float *__restrict__ dk,
                      float *__restrict__ dv, TcDims s)
{
    extern __shared__ __align__(16) unsigned char la_dkdv_smem[];
    DkdvSmem &sm = *reinterpret_cast<DkdvSmem *>(la_dkdv_smem);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, gq = lane >> 2, t4 = lane & 3;
    const int wl = warp & 3, grp = warp >> 2; // grp 0: dk, 1: dv (warp-uniform)
    const int D = s.D, Dv = s.Dv, Dp = round16(D), Dvp = round16(Dv);
    // dk: X = V (k = Dv), P = dN, Y = Q' (W = D); dv: X = K' (k = D), P = Q', Y = dN (W = Dv)
    const int Kxp = grp ? Dp : Dvp, W = grp ? Dv : D, Wp = round16(W);
    const int Kmax = Dp > Dvp ? Dp : Dvp;
    const bf16(*Xs)[kLd] = sm.X[grp];
    const bf16(*Ps)[kLd] = sm.T[grp];
    const bf16(*Ys)[kLd] = sm.T[grp ^ 1];
    float *res = grp ? dv : dk;
    const size_t total = s.bh * s.tiles;
    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const TileItem it = tile_item<kT>(item, st, s);
        const size_t g = it.g;
        const Heads<bf16> hd(q, k, v, dout, g, s.N, D, Dv);
        const float *deng = den + g * s.N, *ddg = dd + g * s.N;
        const size_t ir0 = it.i0 + (size_t)(wl * 16);
        __syncthreads(); // the previous item is done with shared memory
        stage<kOpIdent>(sm.X[0], hd.v, it.i0, it.i1, Dv, 0, Dv, Dvp, kT, nullptr);
        stage<kOpPhi>(sm.X[1], hd.k, it.i0, it.i1, D, 0, D, Dp, kT, nullptr);
        for (int d = tid; d < D; d += blockDim.x) sm.g_next[d] = it.stc[(size_t)D * Dv + (size_t)d];

        float acc[16][4];
        MF_UNROLL for (int j = 0; j < 16; ++j) MF_UNROLL for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;
        const bool rows_live = ir0 < it.i1; // warp-uniform

        // (1) the chunk's reverse state: dk += V G^T, dv += K' G; both k-slices staged per step
        for (int ks = 0; ks < Kmax; ks += kO) {
            __syncthreads();
            stage_state<true>(sm.T[0], it.stc, ks, Dv, D, Dp, Dv);
            stage_state<false>(sm.T[1], it.stc, ks, D, Dv, Dvp, Dv);
            __syncthreads();
            if (rows_live && ks < Kxp) state_slice(acc, Xs, wl * 16, ks, Kxp, sm.T[grp], Wp, lane);
        }

        // (2) the later 32-row tiles of the chunk (n >= m), dN and Q' staged once for both
        float rsum[2] = { 0.0f, 0.0f }; // unused (mode 0 only)
        for (size_t j0 = it.i0; j0 < it.c1; j0 += kO) {
            __syncthreads();
            stage<kOpDiv>(sm.T[0], hd.dout, j0, it.c1, Dv, 0, Dv, Dvp, kO, deng);
            stage<kOpPhi>(sm.T[1], hd.q, j0, it.c1, D, 0, D, Dp, kO, nullptr);
            for (int r = tid; r < kO; r += blockDim.x)
                sm.col[r] = j0 + (size_t)r < it.c1 ? ddg[j0 + (size_t)r] : 0.0f;
            __syncthreads();
            if (!rows_live || j0 + (size_t)(kO - 1) < ir0) continue; // warp-uniform: all masked
            if (grp == 0)
                intra_tile<2>(acc, rsum, Xs, wl * 16, Ps, Kxp, Ys, Wp, ir0, j0, nullptr, sm.col, lane);
            else
                intra_tile<3>(acc, rsum, Xs, wl * 16, Ps, Kxp, Ys, Wp, ir0, j0, nullptr, nullptr, lane);
        }

        // (3) dk = dphi(k) (acc + g_next), dv = acc
        MF_UNROLL for (int j = 0; j < 16; ++j)
        {
            if (j * 8 >= W) continue;
            MF_UNROLL for (int e = 0; e < 4; ++e)
            {
                const int cl = j * 8 + 2 * t4 + (e & 1);
                const size_t row = ir0 + (size_t)(gq + (e >> 1) * 8);
                if (row >= it.i1 || cl >= W) continue;
                const size_t ix = (g * s.N + row) * (size_t)W + (size_t)cl;
                float x = acc[j][e];
                if (grp == 0) x = dphi(__bfloat162float(k[ix])) * (x + sm.g_next[cl]);
                res[ix] = x;
            }
        }
    }
}
static size_t la_dkdv_smem_bytes() { return sizeof(DkdvSmem); }

// ---- launchers -----------------------------------------------------------------------------
static size_t slices(int n) { return (size_t)(n / kSlice + (n % kSlice != 0)); }
static dim3 item_grid(size_t total) { return dim3(grid_cap(total, kMaxGridX)); }
static size_t cdiv(size_t a, size_t b) { return a / b + (a % b != 0); }

static Dims make_dims(int causal, int64_t chunk, int64_t N, int64_t D, int64_t Dv)
{
    Dims s;
    s.N = (size_t)N;
    s.D = (int)D;
    s.Dv = (int)Dv;
    // The bidirectional form has no intra-chunk term; its sweep granularity is
    // only a loop step (any multiple of kSub).
    s.C = causal ? (int)chunk : MF_LINEAR_ATTENTION_MAX_CHUNK;
    s.causal = causal;
    s.n_slices = 0;
    s.total = 0;
    return s;
}

// Chunk states every kStateChunk rows holding the D x Dv matrix and z (with_kv: the
// tensor-core path), else z alone every kZChunk rows.
static TcDims make_tc(size_t bh, int64_t N, int64_t D, int64_t Dv, int with_kv)
{
    TcDims t;
    t.N = (size_t)N;
    t.bh = bh;
    t.D = (int)D;
    t.Dv = (int)Dv;
    t.Ce = with_kv ? kStateChunk : kZChunk;
    t.nc = cdiv(t.N, (size_t)t.Ce);
    t.tiles = cdiv(t.N, (size_t)kT);
    t.tiles_w = cdiv(t.N, (size_t)kTw);
    t.E = with_kv ? (int)(D * Dv + D) : (int)D;
    return t;
}

// The tensor-core path: bf16 storage, causal.
static bool use_tc(mf_dtype dtype, int causal) { return dtype == MF_DTYPE_BF16 && causal; }

// Device scratch of one call, in floats (mf_linear_attention_scratch_ceiling bounds it).
static size_t scratch_floats(mf_dtype dtype, int causal, int backward, size_t bh, int64_t N, int64_t D,
                             int64_t Dv)
{
    const bool tc = use_tc(dtype, causal);
    if (!backward && !tc) return 0;
    const TcDims t = make_tc(bh, N, D, Dv, tc);
    size_t n = bh * t.nc * (size_t)t.E;           // chunk states
    if (backward) n += 2 * bh * (size_t)N;        // den_n, dd_n
    if (backward && !causal) n += bh * (size_t)D; // the total z
    return n;
}

static mf_status launch_forward_tc(mf_context *ctx, size_t bh, int64_t N, int64_t D, int64_t Dv,
                                   const bf16 *q, const bf16 *k, const bf16 *v,
                                   const mf_linear_attention_state &st, float *out, float *states)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const TcDims t = make_tc(bh, N, D, Dv, 1);
    la_tc_state_kernel<0>
        <<<item_grid(bh * t.nc), 2 * kThreads, 0, stream>>>(k, v, nullptr, nullptr, states, t);
    MF_LAUNCH_CHECK();
    la_scan_kernel<<<item_grid(cdiv(bh * (size_t)t.E, 256)), 256, 0, stream>>>(
        states, st.initial_kv, st.initial_z, st.final_kv, st.final_z, t, (int)(D * Dv), 0);
    MF_LAUNCH_CHECK();
    const size_t smem = sizeof(TileSmem);
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(la_tc_tile_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    la_tc_tile_kernel<0><<<item_grid(bh * t.tiles_w), 2 * kThreads, smem, stream>>>(
        q, k, v, v /* dout: unused */, nullptr, nullptr, nullptr, states, out, t);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_forward(mf_context *ctx, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N,
                                int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                                const mf_linear_attention_state *state, float *out)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t bh = (size_t)B * (size_t)H;
    Dims s = make_dims(causal, chunk, N, D, Dv);
    s.n_slices = slices(s.Dv);
    s.total = bh * s.n_slices;
    const mf_linear_attention_state none = { nullptr, nullptr, nullptr, nullptr };
    const mf_linear_attention_state &st = state != nullptr ? *state : none;
    la_fwd_kernel<T><<<item_grid(s.total), kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v), st.initial_kv,
        st.initial_z, out, st.final_kv, st.final_z, s);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// den_n, dd_n for every form: the chunks' z (from 'states' at zoff when given, else summed
// here into zbuf) and the row statistics kernel.
template <typename T, bool RND>
static mf_status launch_rowstats(cudaStream_t stream, int causal, const TcDims &t, const T *q, const T *k,
                                 const float *out, const T *dout, const float *z0, const float *states,
                                 int zoff, float *zbuf, float *ztot, float *den, float *dd)
{
    if (states == nullptr) {
        la_zsum_kernel<T><<<item_grid(t.bh * t.nc), kThreads, 0, stream>>>(k, zbuf, t);
        MF_LAUNCH_CHECK();
        la_scan_kernel<<<item_grid(cdiv(t.bh * (size_t)t.E, 256)), 256, 0, stream>>>(
            zbuf, nullptr, causal ? z0 : nullptr, nullptr, causal ? nullptr : ztot, t, 0, 0);
        MF_LAUNCH_CHECK();
        states = zbuf;
        zoff = 0;
    }
    la_rowstats_kernel<T, RND><<<item_grid(t.bh * t.tiles), kThreads, 0, stream>>>(
        q, k, out, dout, states, zoff, causal ? nullptr : ztot, den, dd, t);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

static mf_status launch_backward_tc(mf_context *ctx, size_t bh, int64_t N, int64_t D, int64_t Dv,
                                    const bf16 *q, const bf16 *k, const bf16 *v, const float *out,
                                    const bf16 *dout, const mf_linear_attention_state &st,
                                    const mf_linear_attention_state_grad &gr, float *scratch, float *dq,
                                    float *dk, float *dv)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const TcDims t = make_tc(bh, N, D, Dv, 1);
    float *den = scratch, *dd = scratch + bh * (size_t)N, *states = dd + bh * (size_t)N;
    const dim3 sgrid = item_grid(bh * t.nc), tgrid = item_grid(bh * t.tiles);
    const dim3 cgrid = item_grid(cdiv(bh * (size_t)t.E, 256));
    // forward states S_prev, z_prev per chunk; then dq, which also writes den, dd
    la_tc_state_kernel<0><<<sgrid, 2 * kThreads, 0, stream>>>(k, v, nullptr, nullptr, states, t);
    MF_LAUNCH_CHECK();
    la_scan_kernel<<<cgrid, 256, 0, stream>>>(states, st.initial_kv, st.initial_z, nullptr, nullptr, t,
                                              (int)(D * Dv), 0);
    MF_LAUNCH_CHECK();
    const size_t tsmem = sizeof(TileSmem);
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(la_tc_tile_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)tsmem));
    la_tc_tile_kernel<1><<<item_grid(bh * t.tiles_w), 2 * kThreads, tsmem, stream>>>(q, k, v, dout, out, den,
                                                                                     dd, states, dq, t);
    MF_LAUNCH_CHECK();
    // reverse states G_next, g_next per chunk (in the same buffer); then dk, dv
    la_tc_state_kernel<1><<<sgrid, 2 * kThreads, 0, stream>>>(q, dout, den, dd, states, t);
    MF_LAUNCH_CHECK();
    la_scan_kernel<<<cgrid, 256, 0, stream>>>(states, gr.d_final_kv, gr.d_final_z, gr.d_initial_kv,
                                              gr.d_initial_z, t, (int)(D * Dv), 1);
    MF_LAUNCH_CHECK();
    const size_t smem = la_dkdv_smem_bytes();
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(la_tc_dkdv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    la_tc_dkdv_kernel<<<tgrid, 2 * kThreads, smem, stream>>>(q, k, v, dout, den, dd, states, dk, dv, t);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_backward(mf_context *ctx, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N,
                                 int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                                 const float *out, const void *dout, const mf_linear_attention_state *state,
                                 const mf_linear_attention_state_grad *grad, float *scratch, float *dq,
                                 float *dk, float *dv)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t bh = (size_t)B * (size_t)H;
    const T *tq = static_cast<const T *>(q), *tk = static_cast<const T *>(k);
    const T *tv = static_cast<const T *>(v), *tdo = static_cast<const T *>(dout);
    const mf_linear_attention_state none = { nullptr, nullptr, nullptr, nullptr };
    const mf_linear_attention_state &st = state != nullptr ? *state : none;
    const mf_linear_attention_state_grad gnone = { nullptr, nullptr, nullptr, nullptr };
    const mf_linear_attention_state_grad &gr = grad != nullptr ? *grad : gnone;
    float *den = scratch, *dd = scratch + bh * (size_t)N, *zbuf = dd + bh * (size_t)N;
    const TcDims t = make_tc(bh, N, D, Dv, 0);
    float *ztot = zbuf + bh * t.nc * (size_t)t.E;

    mf_status rc = launch_rowstats<T, false>(stream, causal, t, tq, tk, out, tdo, st.initial_z, nullptr, 0,
                                             zbuf, ztot, den, dd);
    if (rc != MF_OK) return rc;
    Dims s = make_dims(causal, chunk, N, D, Dv);
    Dims sd = s; // slices of the D rows
    sd.n_slices = slices(s.D);
    sd.total = bh * sd.n_slices;
    la_dq_kernel<T><<<item_grid(sd.total), kThreads, 0, stream>>>(tq, tk, tv, tdo, den, dd, st.initial_kv,
                                                                  st.initial_z, dq, sd);
    MF_LAUNCH_CHECK();
    la_dk_kernel<T><<<item_grid(sd.total), kThreads, 0, stream>>>(
        tq, tk, tv, tdo, den, dd, gr.d_final_kv, gr.d_final_z, dk, gr.d_initial_kv, gr.d_initial_z, sd);
    MF_LAUNCH_CHECK();
    Dims sv = s; // slices of the Dv columns
    sv.n_slices = slices(s.Dv);
    sv.total = bh * sv.n_slices;
    la_dv_kernel<T><<<item_grid(sv.total), kThreads, 0, stream>>>(tq, tk, tdo, den, gr.d_final_kv, dv, sv);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

} // namespace MF_NS

// ---- exported entry points (called by src/ops/linear_attention.c after validation) ------------
extern "C" {

MF_API mf_status MF_FN(linear_attention_forward)(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk,
                                                 int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                                                 const void *q, const void *k, const void *v,
                                                 const mf_linear_attention_state *state, float *out)
{
    using namespace MF_NS;
    if (!use_tc(dtype, causal)) {
        if (dtype == MF_DTYPE_BF16)
            return launch_forward<bf16>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, state, out);
        return launch_forward<float>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, state, out);
    }
    // the chunk states (mf_linear_attention_scratch_ceiling bounds them), freed when
    // 'scratch' goes out of scope
    const size_t bh = (size_t)B * (size_t)H;
    Scratch scratch(ctx);
    const mf_status st = mf_scratch_alloc(
        ctx, MF_MEM_DEVICE, scratch_floats(dtype, causal, 0, bh, N, D, Dv) * sizeof(float), &scratch.ptr);
    if (st != MF_OK) return st;
    const mf_linear_attention_state none = { nullptr, nullptr, nullptr, nullptr };
    return launch_forward_tc(ctx, bh, N, D, Dv, static_cast<const bf16 *>(q), static_cast<const bf16 *>(k),
                             static_cast<const bf16 *>(v), state != nullptr ? *state : none, out,
                             static_cast<float *>(scratch.ptr));
}

MF_API mf_status MF_FN(linear_attention_backward)(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk,
                                                  int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                                                  const void *q, const void *k, const void *v,
                                                  const float *out, const void *dout,
                                                  const mf_linear_attention_state *state,
                                                  const mf_linear_attention_state_grad *grad, float *dq,
                                                  float *dk, float *dv)
{
    using namespace MF_NS;
    // den_n and dd_n for every position, and the chunk states: the only device scratch
    // (mf_linear_attention_scratch_ceiling bounds it), freed when 'sc' goes out of scope.
    const size_t bh = (size_t)B * (size_t)H;
    Scratch sc(ctx);
    const mf_status st = mf_scratch_alloc(
        ctx, MF_MEM_DEVICE, scratch_floats(dtype, causal, 1, bh, N, D, Dv) * sizeof(float), &sc.ptr);
    if (st != MF_OK) return st;
    float *scratch = static_cast<float *>(sc.ptr);
    if (use_tc(dtype, causal)) {
        const mf_linear_attention_state none = { nullptr, nullptr, nullptr, nullptr };
        const mf_linear_attention_state_grad gnone = { nullptr, nullptr, nullptr, nullptr };
        return launch_backward_tc(ctx, bh, N, D, Dv, static_cast<const bf16 *>(q),
                                  static_cast<const bf16 *>(k), static_cast<const bf16 *>(v), out,
                                  static_cast<const bf16 *>(dout), state != nullptr ? *state : none,
                                  grad != nullptr ? *grad : gnone, scratch, dq, dk, dv);
    }
    if (dtype == MF_DTYPE_BF16)
        return launch_backward<bf16>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, out, dout, state, grad,
                                     scratch, dq, dk, dv);
    return launch_backward<float>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, out, dout, state, grad,
                                  scratch, dq, dk, dv);
}

} // extern "C"
