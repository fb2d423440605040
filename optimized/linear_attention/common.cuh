// Causal linear attention (optimized/linear_attention.cu): the constants, phi, tile staging
// and the SIMT kernels' helpers (work items, state slices, sub-tile products, sweeps).
#pragma once

#include "mf_cuda.h"
#include "mf_device.cuh"
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

} // namespace MF_NS
