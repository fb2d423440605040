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
// Kernels (blocks of kThreads = 128, sub-tiles of kSub = 16 positions, state
// slices of kSlice = 32 rows or columns; all shared memory static, ~36 KiB):
//   la_fwd_kernel       (b, h, 32 columns of S): out, the final state
//   la_rowstats_kernel  (b, h): den_n and dd_n = -(dout_n . out_n) / den_n
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
#include "linear_attention.cuh"

#include <cuda_bf16.h>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace MF_NS {

constexpr int kSub = 16;
constexpr int kSlice = 32;
constexpr int kMaxD = MF_LINEAR_ATTENTION_MAX_HEAD_DIM;  // 128
constexpr int kPad = kMaxD + 1;
constexpr int kThreads = 128;
constexpr int kOut = kSub * kSlice / kThreads;  // 4 outputs per thread per sub-tile
constexpr float kEps = (float)MF_LINEAR_ATTENTION_EPS;

// phi(x) = elu(x) + 1 and its derivative (expf, not the approximate __expf).
__device__ __forceinline__ float phi(float x) { return x > 0.0f ? x + 1.0f : expf(x); }
__device__ __forceinline__ float dphi(float x) { return x > 0.0f ? 1.0f : expf(x); }

__device__ __forceinline__ float dot_rows(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int d = 0; d < n; ++d) s += a[d] * b[d];
    return s;
}

// tile[r][c] = f(src[(row0 + r) * width + col0 + c]) for r < kSub, c < tile_cols;
// 0 where row0 + r >= lim or c >= cols. f = phi when PHI, else identity;
// with 'den' non-null the value is divided by den[row0 + r] (dnum = dout / den).
template <typename T, bool PHI, int LD>
__device__ __forceinline__ void load_rows(float (*tile)[LD], const T *__restrict__ src,
                                          size_t row0, size_t lim, int width, int col0, int cols,
                                          int tile_cols, const float *__restrict__ den) {
    for (int e = threadIdx.x; e < kSub * tile_cols; e += blockDim.x) {
        const int r = e / tile_cols, c = e % tile_cols;
        const size_t i = row0 + (size_t)r;
        float x = 0.0f;
        if (i < lim && c < cols) {
            x = to_f32(src[i * (size_t)width + (size_t)(col0 + c)]);
            if (PHI) x = phi(x);
            if (den != nullptr) x /= den[i];
        }
        tile[r][c] = x;
    }
}

struct Dims {
    size_t N;
    int D, Dv, C, causal;
    size_t n_slices, total;
};

static __device__ __forceinline__ size_t chunk_end(size_t c0, const Dims &s) {
    return c0 + (size_t)s.C < s.N ? c0 + (size_t)s.C : s.N;
}

// ---- forward: one block per (b, h, 32 columns of S) ----------------------------------
// mf-budget: regs<=88 smem<=37888 spill=0  (sm_90 measured: regs 77 smem 36672)
template <typename T>
__global__ void __launch_bounds__(kThreads)
la_fwd_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
              const float *__restrict__ h0, const float *__restrict__ z0, float *__restrict__ out,
              float *__restrict__ ht, float *__restrict__ zt, Dims s) {
    __shared__ float S[kMaxD][kSlice];  // S[d][cl], columns c0s + cl
    __shared__ float z[kMaxD];
    __shared__ float Qp[kSub][kPad];
    __shared__ float Kp[kSub][kPad];
    __shared__ float Vs[kSub][kSlice + 1];
    __shared__ float A[kSub][kSub + 1];
    __shared__ float den_s[kSub];
    const int tid = threadIdx.x;
    const int D = s.D, Dv = s.Dv;
    for (size_t item = blockIdx.x; item < s.total; item += gridDim.x) {
        const size_t g = item / s.n_slices;
        const int c0s = (int)(item % s.n_slices) * kSlice;
        const int cols = Dv - c0s < kSlice ? Dv - c0s : kSlice;
        const T *qg = q + g * s.N * (size_t)D, *kg = k + g * s.N * (size_t)D;
        const T *vg = v + g * s.N * (size_t)Dv;
        float *og = out + g * s.N * (size_t)Dv;
        const size_t st = g * (size_t)D * (size_t)Dv;
        for (int e = tid; e < D * kSlice; e += blockDim.x) {
            const int d = e / kSlice, cl = e % kSlice;
            S[d][cl] = (h0 != nullptr && cl < cols) ? h0[st + (size_t)d * Dv + (size_t)(c0s + cl)] : 0.0f;
        }
        for (int d = tid; d < D; d += blockDim.x) z[d] = z0 != nullptr ? z0[g * (size_t)D + (size_t)d] : 0.0f;

        // causal: per chunk, outputs (state before the chunk + masked intra-chunk
        // products), then the state update. bidir: phase 0 = the whole state,
        // phase 1 = the outputs from it.
        const int phases = s.causal ? 1 : 2;
        for (int phase = 0; phase < phases; ++phase) {
            const bool do_out = s.causal || phase == 1;
            const bool do_upd = s.causal || phase == 0;
            for (size_t c0 = 0; c0 < s.N; c0 += (size_t)s.C) {
                const size_t c1 = chunk_end(c0, s);
                if (do_out) {
                    for (size_t i0 = c0; i0 < c1; i0 += kSub) {
                        __syncthreads();  // S, z updated; Qp, den_s free
                        load_rows<T, true>(Qp, qg, i0, c1, D, 0, D, D, nullptr);
                        __syncthreads();
                        float acc[kOut];
                        for (int a = 0; a < kOut; ++a) {
                            const int e = tid + a * kThreads, r = e / kSlice, cl = e % kSlice;
                            float x = 0.0f;
                            for (int d = 0; d < D; ++d) x += Qp[r][d] * S[d][cl];
                            acc[a] = x;
                        }
                        float my_den = 0.0f;
                        if (tid < kSub) my_den = dot_rows(Qp[tid], z, D);
                        if (s.causal) {
                            for (size_t j0 = c0; j0 <= i0; j0 += kSub) {
                                __syncthreads();
                                load_rows<T, true>(Kp, kg, j0, c1, D, 0, D, D, nullptr);
                                load_rows<T, false>(Vs, vg, j0, c1, Dv, c0s, cols, kSlice, nullptr);
                                __syncthreads();
                                for (int e = tid; e < kSub * kSub; e += blockDim.x) {
                                    const int r = e / kSub, c = e % kSub;
                                    const size_t i = i0 + (size_t)r, j = j0 + (size_t)c;
                                    A[r][c] = (j <= i && i < c1) ? dot_rows(Qp[r], Kp[c], D) : 0.0f;
                                }
                                __syncthreads();
                                for (int a = 0; a < kOut; ++a) {
                                    const int e = tid + a * kThreads, r = e / kSlice, cl = e % kSlice;
                                    // masked keys (j > i, diagonal sub-tile) are skipped, not
                                    // weighted by 0: 0 * NaN would leak a later v into row i
                                    const int c_end = j0 == i0 ? r + 1 : kSub;
                                    float x = acc[a];
                                    for (int c = 0; c < c_end; ++c) x += A[r][c] * Vs[c][cl];
                                    acc[a] = x;
                                }
                                if (tid < kSub)
                                    for (int c = 0; c < kSub; ++c) my_den += A[tid][c];
                            }
                        }
                        if (tid < kSub) den_s[tid] = my_den + kEps;
                        __syncthreads();
                        for (int a = 0; a < kOut; ++a) {
                            const int e = tid + a * kThreads, r = e / kSlice, cl = e % kSlice;
                            const size_t i = i0 + (size_t)r;
                            if (i < c1 && cl < cols)
                                og[i * (size_t)Dv + (size_t)(c0s + cl)] = acc[a] / den_s[r];
                        }
                    }
                }
                if (do_upd) {
                    for (size_t j0 = c0; j0 < c1; j0 += kSub) {
                        __syncthreads();  // Kp, Vs free; S, z not being read
                        load_rows<T, true>(Kp, kg, j0, c1, D, 0, D, D, nullptr);
                        load_rows<T, false>(Vs, vg, j0, c1, Dv, c0s, cols, kSlice, nullptr);
                        __syncthreads();
                        for (int e = tid; e < D * kSlice; e += blockDim.x) {
                            const int d = e / kSlice, cl = e % kSlice;
                            float x = S[d][cl];
                            for (int c = 0; c < kSub; ++c) x += Kp[c][d] * Vs[c][cl];
                            S[d][cl] = x;
                        }
                        for (int d = tid; d < D; d += blockDim.x) {
                            float x = z[d];
                            for (int c = 0; c < kSub; ++c) x += Kp[c][d];
                            z[d] = x;
                        }
                    }
                }
            }
        }
        __syncthreads();
        if (s.causal && ht != nullptr)
            for (int e = tid; e < D * kSlice; e += blockDim.x) {
                const int d = e / kSlice, cl = e % kSlice;
                if (cl < cols) ht[st + (size_t)d * Dv + (size_t)(c0s + cl)] = S[d][cl];
            }
        if (s.causal && zt != nullptr && c0s == 0)
            for (int d = tid; d < D; d += blockDim.x) zt[g * (size_t)D + (size_t)d] = z[d];
        __syncthreads();  // before the next item reinitialises S and z
    }
}

// ---- backward 1: row statistics, one block per (b, h) ------------------------------------
// den_n = q'_n . z_n + eps, dd_n = -(dout_n . out_n) / den_n. Thread d < D owns z[d]
// (D <= kThreads).
// mf-budget: regs<=40 smem<=17408 spill=0  (sm_90 measured: regs 32 smem 16512)
template <typename T>
__global__ void __launch_bounds__(kThreads)
la_rowstats_kernel(const T *__restrict__ q, const T *__restrict__ k, const float *__restrict__ out,
                   const T *__restrict__ dout, const float *__restrict__ z0, float *__restrict__ den,
                   float *__restrict__ dd, Dims s, size_t bh) {
    __shared__ float Qp[kSub][kPad];
    __shared__ float Kz[kSub][kPad];  // k' rows, then the prefix sums z_n in place
    const int tid = threadIdx.x;
    const int D = s.D, Dv = s.Dv;
    for (size_t g = blockIdx.x; g < bh; g += gridDim.x) {
        const T *qg = q + g * s.N * (size_t)D, *kg = k + g * s.N * (size_t)D;
        float zr = (tid < D && z0 != nullptr) ? z0[g * (size_t)D + (size_t)tid] : 0.0f;
        if (!s.causal) {  // bidir: z is the sum over every position
            for (size_t j0 = 0; j0 < s.N; j0 += kSub) {
                __syncthreads();
                load_rows<T, true>(Kz, kg, j0, s.N, D, 0, D, D, nullptr);
                __syncthreads();
                if (tid < D)
                    for (int r = 0; r < kSub; ++r) zr += Kz[r][tid];
            }
        }
        for (size_t i0 = 0; i0 < s.N; i0 += kSub) {
            __syncthreads();
            load_rows<T, true>(Qp, qg, i0, s.N, D, 0, D, D, nullptr);
            if (s.causal) load_rows<T, true>(Kz, kg, i0, s.N, D, 0, D, D, nullptr);
            __syncthreads();
            if (tid < D)
                for (int r = 0; r < kSub; ++r) {
                    if (s.causal) zr += Kz[r][tid];
                    Kz[r][tid] = zr;
                }
            __syncthreads();
            const size_t i = i0 + (size_t)tid;
            if (tid < kSub && i < s.N) {
                const float dn = dot_rows(Qp[tid], Kz[tid], D) + kEps;
                const size_t row = (g * s.N + i) * (size_t)Dv;
                float x = 0.0f;
                for (int c = 0; c < Dv; ++c) x += to_f32(dout[row + (size_t)c]) * out[row + (size_t)c];
                den[g * s.N + i] = dn;
                dd[g * s.N + i] = -x / dn;
            }
        }
        __syncthreads();
    }
}

// ---- backward 2: dq, one block per (b, h, 32 rows of S), forward sweep -----------------------
// dq'_n[d] = sum_c S_prev[d][c] dnum_n[c] + dd_n z_prev[d]
//          + sum_{m<=n in chunk} k'_m[d] (v_m . dnum_n + dd_n)
// mf-budget: regs<=96 smem<=37888 spill=0  (sm_90 measured: regs 80 smem 36416)
template <typename T>
__global__ void __launch_bounds__(kThreads)
la_dq_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
             const T *__restrict__ dout, const float *__restrict__ den, const float *__restrict__ dd,
             const float *__restrict__ h0, const float *__restrict__ z0, float *__restrict__ dq,
             Dims s) {
    __shared__ float Sd[kSlice][kPad];  // S[d0 + dl][c]
    __shared__ float zs[kSlice];
    __shared__ float dN[kSub][kPad];    // dnum rows (all Dv columns)
    __shared__ float Vs[kSub][kPad];
    __shared__ float Kd[kSub][kSlice + 1];  // k' rows, columns d0 .. d0 + 31
    __shared__ float Bm[kSub][kSub + 1];
    __shared__ float dd_s[kSub];
    const int tid = threadIdx.x;
    const int D = s.D, Dv = s.Dv;
    for (size_t item = blockIdx.x; item < s.total; item += gridDim.x) {
        const size_t g = item / s.n_slices;
        const int d0 = (int)(item % s.n_slices) * kSlice;
        const int rows = D - d0 < kSlice ? D - d0 : kSlice;
        const T *qg = q + g * s.N * (size_t)D, *kg = k + g * s.N * (size_t)D;
        const T *vg = v + g * s.N * (size_t)Dv, *dog = dout + g * s.N * (size_t)Dv;
        const float *deng = den + g * s.N, *ddg = dd + g * s.N;
        const size_t st = g * (size_t)D * (size_t)Dv;
        for (int e = tid; e < kSlice * Dv; e += blockDim.x) {
            const int dl = e % kSlice, c = e / kSlice;
            Sd[dl][c] = (h0 != nullptr && dl < rows) ? h0[st + (size_t)(d0 + dl) * Dv + (size_t)c] : 0.0f;
        }
        if (tid < kSlice)
            zs[tid] = (z0 != nullptr && tid < rows) ? z0[g * (size_t)D + (size_t)(d0 + tid)] : 0.0f;

        const int phases = s.causal ? 1 : 2;
        for (int phase = 0; phase < phases; ++phase) {
            const bool do_out = s.causal || phase == 1;
            const bool do_upd = s.causal || phase == 0;
            for (size_t c0 = 0; c0 < s.N; c0 += (size_t)s.C) {
                const size_t c1 = chunk_end(c0, s);
                if (do_out) {
                    for (size_t i0 = c0; i0 < c1; i0 += kSub) {
                        __syncthreads();
                        load_rows<T, false>(dN, dog, i0, c1, Dv, 0, Dv, Dv, deng);
                        if (tid < kSub) dd_s[tid] = i0 + (size_t)tid < c1 ? ddg[i0 + (size_t)tid] : 0.0f;
                        __syncthreads();
                        float acc[kOut];
                        for (int a = 0; a < kOut; ++a) {
                            const int e = tid + a * kThreads, r = e / kSlice, dl = e % kSlice;
                            float x = dd_s[r] * zs[dl];
                            for (int c = 0; c < Dv; ++c) x += Sd[dl][c] * dN[r][c];
                            acc[a] = x;
                        }
                        if (s.causal) {
                            for (size_t j0 = c0; j0 <= i0; j0 += kSub) {
                                __syncthreads();
                                load_rows<T, false>(Vs, vg, j0, c1, Dv, 0, Dv, Dv, nullptr);
                                load_rows<T, true>(Kd, kg, j0, c1, D, d0, rows, kSlice, nullptr);
                                __syncthreads();
                                for (int e = tid; e < kSub * kSub; e += blockDim.x) {
                                    const int r = e / kSub, c = e % kSub;
                                    const size_t i = i0 + (size_t)r, j = j0 + (size_t)c;
                                    Bm[r][c] = (j <= i && i < c1) ? dot_rows(dN[r], Vs[c], Dv) + dd_s[r] : 0.0f;
                                }
                                __syncthreads();
                                for (int a = 0; a < kOut; ++a) {
                                    const int e = tid + a * kThreads, r = e / kSlice, dl = e % kSlice;
                                    const int c_end = j0 == i0 ? r + 1 : kSub;  // skip masked keys
                                    float x = acc[a];
                                    for (int c = 0; c < c_end; ++c) x += Bm[r][c] * Kd[c][dl];
                                    acc[a] = x;
                                }
                            }
                        }
                        for (int a = 0; a < kOut; ++a) {
                            const int e = tid + a * kThreads, r = e / kSlice, dl = e % kSlice;
                            const size_t i = i0 + (size_t)r;
                            if (i < c1 && dl < rows) {
                                const size_t idx = i * (size_t)D + (size_t)(d0 + dl);
                                dq[g * s.N * (size_t)D + idx] = dphi(to_f32(qg[idx])) * acc[a];
                            }
                        }
                    }
                }
                if (do_upd) {
                    for (size_t j0 = c0; j0 < c1; j0 += kSub) {
                        __syncthreads();
                        load_rows<T, false>(Vs, vg, j0, c1, Dv, 0, Dv, Dv, nullptr);
                        load_rows<T, true>(Kd, kg, j0, c1, D, d0, rows, kSlice, nullptr);
                        __syncthreads();
                        for (int e = tid; e < kSlice * Dv; e += blockDim.x) {
                            const int dl = e % kSlice, c = e / kSlice;
                            float x = Sd[dl][c];
                            for (int m = 0; m < kSub; ++m) x += Kd[m][dl] * Vs[m][c];
                            Sd[dl][c] = x;
                        }
                        if (tid < kSlice) {
                            float x = zs[tid];
                            for (int m = 0; m < kSub; ++m) x += Kd[m][tid];
                            zs[tid] = x;
                        }
                    }
                }
            }
        }
        __syncthreads();  // before the next item reinitialises Sd and zs
    }
}

// ---- backward 3: dk (and the initial state's gradients), one block per (b, h, 32 rows
// of G), reverse sweep ------------------------------------------------------------------------
// dk'_m[d] = sum_c G_next[d][c] v_m[c] + g_next[d] + sum_{n>=m in chunk} q'_n[d] (dnum_n . v_m + dd_n)
// mf-budget: regs<=96 smem<=37888 spill=0  (sm_90 measured: regs 79 smem 36416)
template <typename T>
__global__ void __launch_bounds__(kThreads)
la_dk_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
             const T *__restrict__ dout, const float *__restrict__ den, const float *__restrict__ dd,
             const float *__restrict__ dht, const float *__restrict__ dzt, float *__restrict__ dk,
             float *__restrict__ dh0, float *__restrict__ dz0, Dims s) {
    __shared__ float Gd[kSlice][kPad];  // G[d0 + dl][c]
    __shared__ float gs[kSlice];
    __shared__ float Vs[kSub][kPad];
    __shared__ float dN[kSub][kPad];
    __shared__ float Qd[kSub][kSlice + 1];  // q' rows, columns d0 .. d0 + 31
    __shared__ float Bm[kSub][kSub + 1];
    __shared__ float dd_s[kSub];
    const int tid = threadIdx.x;
    const int D = s.D, Dv = s.Dv;
    const size_t n_chunks = s.N / (size_t)s.C + (s.N % (size_t)s.C != 0);
    for (size_t item = blockIdx.x; item < s.total; item += gridDim.x) {
        const size_t g = item / s.n_slices;
        const int d0 = (int)(item % s.n_slices) * kSlice;
        const int rows = D - d0 < kSlice ? D - d0 : kSlice;
        const T *qg = q + g * s.N * (size_t)D, *kg = k + g * s.N * (size_t)D;
        const T *vg = v + g * s.N * (size_t)Dv, *dog = dout + g * s.N * (size_t)Dv;
        const float *deng = den + g * s.N, *ddg = dd + g * s.N;
        const size_t st = g * (size_t)D * (size_t)Dv;
        for (int e = tid; e < kSlice * Dv; e += blockDim.x) {
            const int dl = e % kSlice, c = e / kSlice;
            Gd[dl][c] = (dht != nullptr && dl < rows) ? dht[st + (size_t)(d0 + dl) * Dv + (size_t)c] : 0.0f;
        }
        if (tid < kSlice)
            gs[tid] = (dzt != nullptr && tid < rows) ? dzt[g * (size_t)D + (size_t)(d0 + tid)] : 0.0f;

        const int phases = s.causal ? 1 : 2;
        for (int phase = 0; phase < phases; ++phase) {
            const bool do_out = s.causal || phase == 1;
            const bool do_upd = s.causal || phase == 0;
            for (size_t ci = n_chunks; ci-- > 0;) {  // last chunk first
                const size_t c0 = ci * (size_t)s.C, c1 = chunk_end(c0, s);
                if (do_out) {
                    for (size_t j0 = c0; j0 < c1; j0 += kSub) {
                        __syncthreads();
                        load_rows<T, false>(Vs, vg, j0, c1, Dv, 0, Dv, Dv, nullptr);
                        __syncthreads();
                        float acc[kOut];
                        for (int a = 0; a < kOut; ++a) {
                            const int e = tid + a * kThreads, m = e / kSlice, dl = e % kSlice;
                            float x = gs[dl];
                            for (int c = 0; c < Dv; ++c) x += Gd[dl][c] * Vs[m][c];
                            acc[a] = x;
                        }
                        if (s.causal) {
                            for (size_t i0 = j0; i0 < c1; i0 += kSub) {
                                __syncthreads();
                                load_rows<T, false>(dN, dog, i0, c1, Dv, 0, Dv, Dv, deng);
                                load_rows<T, true>(Qd, qg, i0, c1, D, d0, rows, kSlice, nullptr);
                                if (tid < kSub) dd_s[tid] = i0 + (size_t)tid < c1 ? ddg[i0 + (size_t)tid] : 0.0f;
                                __syncthreads();
                                for (int e = tid; e < kSub * kSub; e += blockDim.x) {
                                    const int r = e / kSub, c = e % kSub;
                                    const size_t i = i0 + (size_t)r, j = j0 + (size_t)c;
                                    Bm[r][c] = (j <= i && i < c1) ? dot_rows(dN[r], Vs[c], Dv) + dd_s[r] : 0.0f;
                                }
                                __syncthreads();
                                for (int a = 0; a < kOut; ++a) {
                                    const int e = tid + a * kThreads, m = e / kSlice, dl = e % kSlice;
                                    const int r_begin = i0 == j0 ? m : 0;  // skip queries i < j
                                    float x = acc[a];
                                    for (int r = r_begin; r < kSub; ++r) x += Bm[r][m] * Qd[r][dl];
                                    acc[a] = x;
                                }
                            }
                        }
                        for (int a = 0; a < kOut; ++a) {
                            const int e = tid + a * kThreads, m = e / kSlice, dl = e % kSlice;
                            const size_t j = j0 + (size_t)m;
                            if (j < c1 && dl < rows) {
                                const size_t idx = j * (size_t)D + (size_t)(d0 + dl);
                                dk[g * s.N * (size_t)D + idx] = dphi(to_f32(kg[idx])) * acc[a];
                            }
                        }
                    }
                }
                if (do_upd) {
                    for (size_t i0 = c0; i0 < c1; i0 += kSub) {
                        __syncthreads();
                        load_rows<T, false>(dN, dog, i0, c1, Dv, 0, Dv, Dv, deng);
                        load_rows<T, true>(Qd, qg, i0, c1, D, d0, rows, kSlice, nullptr);
                        if (tid < kSub) dd_s[tid] = i0 + (size_t)tid < c1 ? ddg[i0 + (size_t)tid] : 0.0f;
                        __syncthreads();
                        for (int e = tid; e < kSlice * Dv; e += blockDim.x) {
                            const int dl = e % kSlice, c = e / kSlice;
                            float x = Gd[dl][c];
                            for (int r = 0; r < kSub; ++r) x += Qd[r][dl] * dN[r][c];
                            Gd[dl][c] = x;
                        }
                        if (tid < kSlice) {
                            float x = gs[tid];
                            for (int r = 0; r < kSub; ++r) x += dd_s[r] * Qd[r][tid];
                            gs[tid] = x;
                        }
                    }
                }
            }
        }
        __syncthreads();
        if (s.causal && dh0 != nullptr)
            for (int e = tid; e < kSlice * Dv; e += blockDim.x) {
                const int dl = e % kSlice, c = e / kSlice;
                if (dl < rows) dh0[st + (size_t)(d0 + dl) * Dv + (size_t)c] = Gd[dl][c];
            }
        if (s.causal && dz0 != nullptr && tid < rows) dz0[g * (size_t)D + (size_t)(d0 + tid)] = gs[tid];
        __syncthreads();
    }
}

// ---- backward 4: dv, one block per (b, h, 32 columns of G), reverse sweep ----------------
// dv_m[c] = sum_d G_next[d][c] k'_m[d] + sum_{n>=m in chunk} (q'_n . k'_m) dnum_n[c]
// mf-budget: regs<=96 smem<=36864 spill=0  (sm_90 measured: regs 79 smem 36096)
template <typename T>
__global__ void __launch_bounds__(kThreads)
la_dv_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ dout,
             const float *__restrict__ den, const float *__restrict__ dht, float *__restrict__ dv,
             Dims s) {
    __shared__ float Gc[kMaxD][kSlice];  // G[d][c0s + cl]
    __shared__ float Kp[kSub][kPad];
    __shared__ float Qp[kSub][kPad];
    __shared__ float dNc[kSub][kSlice + 1];  // dnum rows, columns c0s .. c0s + 31
    __shared__ float A[kSub][kSub + 1];
    const int tid = threadIdx.x;
    const int D = s.D, Dv = s.Dv;
    const size_t n_chunks = s.N / (size_t)s.C + (s.N % (size_t)s.C != 0);
    for (size_t item = blockIdx.x; item < s.total; item += gridDim.x) {
        const size_t g = item / s.n_slices;
        const int c0s = (int)(item % s.n_slices) * kSlice;
        const int cols = Dv - c0s < kSlice ? Dv - c0s : kSlice;
        const T *qg = q + g * s.N * (size_t)D, *kg = k + g * s.N * (size_t)D;
        const T *dog = dout + g * s.N * (size_t)Dv;
        const float *deng = den + g * s.N;
        const size_t st = g * (size_t)D * (size_t)Dv;
        for (int e = tid; e < D * kSlice; e += blockDim.x) {
            const int d = e / kSlice, cl = e % kSlice;
            Gc[d][cl] = (dht != nullptr && cl < cols) ? dht[st + (size_t)d * Dv + (size_t)(c0s + cl)] : 0.0f;
        }

        const int phases = s.causal ? 1 : 2;
        for (int phase = 0; phase < phases; ++phase) {
            const bool do_out = s.causal || phase == 1;
            const bool do_upd = s.causal || phase == 0;
            for (size_t ci = n_chunks; ci-- > 0;) {
                const size_t c0 = ci * (size_t)s.C, c1 = chunk_end(c0, s);
                if (do_out) {
                    for (size_t j0 = c0; j0 < c1; j0 += kSub) {
                        __syncthreads();
                        load_rows<T, true>(Kp, kg, j0, c1, D, 0, D, D, nullptr);
                        __syncthreads();
                        float acc[kOut];
                        for (int a = 0; a < kOut; ++a) {
                            const int e = tid + a * kThreads, m = e / kSlice, cl = e % kSlice;
                            float x = 0.0f;
                            for (int d = 0; d < D; ++d) x += Gc[d][cl] * Kp[m][d];
                            acc[a] = x;
                        }
                        if (s.causal) {
                            for (size_t i0 = j0; i0 < c1; i0 += kSub) {
                                __syncthreads();
                                load_rows<T, true>(Qp, qg, i0, c1, D, 0, D, D, nullptr);
                                load_rows<T, false>(dNc, dog, i0, c1, Dv, c0s, cols, kSlice, deng);
                                __syncthreads();
                                for (int e = tid; e < kSub * kSub; e += blockDim.x) {
                                    const int r = e / kSub, c = e % kSub;
                                    const size_t i = i0 + (size_t)r, j = j0 + (size_t)c;
                                    A[r][c] = (j <= i && i < c1) ? dot_rows(Qp[r], Kp[c], D) : 0.0f;
                                }
                                __syncthreads();
                                for (int a = 0; a < kOut; ++a) {
                                    const int e = tid + a * kThreads, m = e / kSlice, cl = e % kSlice;
                                    const int r_begin = i0 == j0 ? m : 0;  // skip queries i < j
                                    float x = acc[a];
                                    for (int r = r_begin; r < kSub; ++r) x += A[r][m] * dNc[r][cl];
                                    acc[a] = x;
                                }
                            }
                        }
                        for (int a = 0; a < kOut; ++a) {
                            const int e = tid + a * kThreads, m = e / kSlice, cl = e % kSlice;
                            const size_t j = j0 + (size_t)m;
                            if (j < c1 && cl < cols)
                                dv[(g * s.N + j) * (size_t)Dv + (size_t)(c0s + cl)] = acc[a];
                        }
                    }
                }
                if (do_upd) {
                    for (size_t i0 = c0; i0 < c1; i0 += kSub) {
                        __syncthreads();
                        load_rows<T, true>(Qp, qg, i0, c1, D, 0, D, D, nullptr);
                        load_rows<T, false>(dNc, dog, i0, c1, Dv, c0s, cols, kSlice, deng);
                        __syncthreads();
                        for (int e = tid; e < D * kSlice; e += blockDim.x) {
                            const int d = e / kSlice, cl = e % kSlice;
                            float x = Gc[d][cl];
                            for (int r = 0; r < kSub; ++r) x += Qp[r][d] * dNc[r][cl];
                            Gc[d][cl] = x;
                        }
                    }
                }
            }
        }
        __syncthreads();
    }
}

// ---- launchers -----------------------------------------------------------------------------
static size_t slices(int n) { return (size_t)(n / kSlice + (n % kSlice != 0)); }
static dim3 item_grid(size_t total) { return dim3(grid_cap(total, kMaxGridX)); }

static Dims make_dims(int causal, int64_t chunk, int64_t N, int64_t D, int64_t Dv) {
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

template <typename T>
static mf_status launch_forward(mf_context *ctx, int causal, int64_t chunk, int64_t B, int64_t H,
                                int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                const void *v, const mf_linear_attention_state *state, float *out) {
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t bh = (size_t)B * (size_t)H;
    Dims s = make_dims(causal, chunk, N, D, Dv);
    s.n_slices = slices(s.Dv);
    s.total = bh * s.n_slices;
    const mf_linear_attention_state none = {nullptr, nullptr, nullptr, nullptr};
    const mf_linear_attention_state &st = state != nullptr ? *state : none;
    la_fwd_kernel<T><<<item_grid(s.total), kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
        st.initial_kv, st.initial_z, out, st.final_kv, st.final_z, s);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_backward(mf_context *ctx, int causal, int64_t chunk, int64_t B, int64_t H,
                                 int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                 const void *v, const float *out, const void *dout,
                                 const mf_linear_attention_state *state,
                                 const mf_linear_attention_state_grad *grad, float *rowstats,
                                 float *dq, float *dk, float *dv) {
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t bh = (size_t)B * (size_t)H;
    const T *tq = static_cast<const T *>(q), *tk = static_cast<const T *>(k);
    const T *tv = static_cast<const T *>(v), *tdo = static_cast<const T *>(dout);
    const mf_linear_attention_state none = {nullptr, nullptr, nullptr, nullptr};
    const mf_linear_attention_state &st = state != nullptr ? *state : none;
    const mf_linear_attention_state_grad gnone = {nullptr, nullptr, nullptr, nullptr};
    const mf_linear_attention_state_grad &gr = grad != nullptr ? *grad : gnone;
    float *den = rowstats, *dd = rowstats + bh * (size_t)N;

    Dims s = make_dims(causal, chunk, N, D, Dv);
    la_rowstats_kernel<T><<<item_grid(bh), kThreads, 0, stream>>>(tq, tk, out, tdo, st.initial_z,
                                                                   den, dd, s, bh);
    MF_LAUNCH_CHECK();
    Dims sd = s;  // slices of the D rows
    sd.n_slices = slices(s.D);
    sd.total = bh * sd.n_slices;
    la_dq_kernel<T><<<item_grid(sd.total), kThreads, 0, stream>>>(
        tq, tk, tv, tdo, den, dd, st.initial_kv, st.initial_z, dq, sd);
    MF_LAUNCH_CHECK();
    la_dk_kernel<T><<<item_grid(sd.total), kThreads, 0, stream>>>(
        tq, tk, tv, tdo, den, dd, gr.d_final_kv, gr.d_final_z, dk, gr.d_initial_kv,
        gr.d_initial_z, sd);
    MF_LAUNCH_CHECK();
    Dims sv = s;  // slices of the Dv columns
    sv.n_slices = slices(s.Dv);
    sv.total = bh * sv.n_slices;
    la_dv_kernel<T><<<item_grid(sv.total), kThreads, 0, stream>>>(tq, tk, tdo, den,
                                                                  gr.d_final_kv, dv, sv);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

}  // namespace MF_NS

// ---- exported entry points (called by src/ops/linear_attention.c after validation) ------------
extern "C" {

MF_API mf_status MF_FN(linear_attention_forward)(mf_context *ctx, mf_dtype dtype, int causal,
                                                 int64_t chunk, int64_t B, int64_t H, int64_t N,
                                                 int64_t D, int64_t Dv, const void *q,
                                                 const void *k, const void *v,
                                                 const mf_linear_attention_state *state,
                                                 float *out) {
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_forward<__nv_bfloat16>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v,
                                                    state, out);
    return MF_NS::launch_forward<float>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, state, out);
}

MF_API mf_status MF_FN(linear_attention_backward)(
    mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N,
    int64_t D, int64_t Dv, const void *q, const void *k, const void *v, const float *out,
    const void *dout, const mf_linear_attention_state *state,
    const mf_linear_attention_state_grad *grad, float *dq, float *dk, float *dv) {
    // den_n and dd_n for every position: the only device scratch
    // (mf_linear_attention_scratch_ceiling = 8 * B*H*N).
    float *rowstats = nullptr;
    mf_status st = mf_scratch_alloc(ctx, MF_MEM_DEVICE, 2 * (size_t)B * (size_t)H * (size_t)N * sizeof(float),
                                    reinterpret_cast<void **>(&rowstats));
    if (st != MF_OK) return st;
    if (dtype == MF_DTYPE_BF16)
        st = MF_NS::launch_backward<__nv_bfloat16>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, out,
                                                   dout, state, grad, rowstats, dq, dk, dv);
    else
        st = MF_NS::launch_backward<float>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, out, dout,
                                           state, grad, rowstats, dq, dk, dv);
    // Freeing device memory waits for the kernels that use it (cudaFree synchronizes).
    mf_scratch_free(ctx, MF_MEM_DEVICE, rowstats);
    return st;
}

}  // extern "C"
