// Causal linear attention in the chunk form: the tensor-core path's description and
// constants, the chunk states (mma.sync), the z-only sums, the scan over chunks and the
// row statistics (den, dd) of the fp32 and bidirectional paths.
#pragma once

#include "common.cuh"
#include "mf_mma.cuh"

namespace MF_NS {

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

} // namespace MF_NS
