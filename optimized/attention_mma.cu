// Attention on tensor cores: the FlashAttention-2 algorithm on mma.sync (bf16).
//
// Seed document 003 ("Memory Profiling"): standard_attention materializes the
// B x H x N x N scores. Like optimized/attention.cu this file never does, but
// here every product runs on the tensor cores (mma.sync.m16n8k16, bf16 inputs,
// fp32 accumulators), fed by ldmatrix from shared tiles that cp.async fills one
// block ahead of use (double buffering). The math and the non-finite rules are
// those of include/memfix/attention.h; the design and its performance argument
// are in docs/attention.md.
//
// Used by the tiled entry points of optimized/attention.cu for bf16 inputs with
// D == Dv in {64, 128} and 16-byte aligned q, k, v (and dout); everything else
// stays on the SIMT kernels there.
//
// Kernels (256 threads = 8 warps; fragment layouts as PTX ISA 9.7.14.5.8):
//   attn_mma_fwd_kernel<D>   one CTA per (b, h, 256 queries): each warp owns 32
//       query rows (two m16 tiles sharing every K/V fragment), K/V streamed in
//       blocks of 64 keys (32 at D=128); S = Q K^T and O += P V on mma.sync,
//       the online softmax on the accumulator fragments (base 2, row max and sum
//       across the 4 lanes of a quad), P rounded to bf16 and reused as the A
//       fragment of P V without leaving registers. Causal: key blocks above the
//       diagonal are never loaded. Writes out and lse.
//   attn_mma_delta_kernel    Delta[i] = dout_i . out_i, one warp per row.
//   attn_mma_bwd_kernel<D>   one CTA per (b, h, 128 keys): each warp owns 16 keys
//       and keeps their dK and dV rows in fp32 registers while Q, dO, lse and
//       Delta stream by in blocks of BR queries (64 for D=64, 32 for D=128);
//       per block S^T = K Q^T, dP^T = V dO^T, dV += P^T dO, dK += dS^T Q (the
//       A fragments of P^T and dS^T come straight from the accumulators) and
//       dQ += dS K from dS staged in shared memory, added to the caller's fp32
//       dq with atomicAdd (dq is zeroed first). 5 GEMM-equivalents per tile.
//       Causal: query blocks below the diagonal are never loaded.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"
#include "attention.cuh"

#include <cuda_bf16.h>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace MF_NS {
namespace attn_mma {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kBwdBC = 16 * kWarps; // backward: keys per CTA (16 per warp)
// backward: queries per streamed block (registers: 32 keeps D=128 spill-free)
template <int D> struct BwdRows {
    static constexpr int value = D == 128 ? 32 : 64;
};
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Rows [row0, row0 + ROWS) of an (N x D) bf16 matrix into tile[ROWS][D + 8] by
// cp.async, 16-byte chunks; rows at or beyond N are zero-filled (their source
// address stays inside the matrix: row 0).
template <int ROWS, int D>
__device__ __forceinline__ void load_rows(__nv_bfloat16 *tile, const __nv_bfloat16 *src, size_t row0,
                                          size_t N)
{
    constexpr int kChunks = D / 8, LDS = D + 8;
    for (int c = threadIdx.x; c < ROWS * kChunks; c += kThreads) {
        const int r = c / kChunks, col = (c % kChunks) * 8; // powers of two: shifts
        const size_t i = row0 + (size_t)r;
        const bool in = i < N;
        cp_async16(tile + r * LDS + col, src + (in ? i : 0) * (size_t)D + (size_t)col, in ? 16u : 0u);
    }
}

// ---- forward -------------------------------------------------------------------------
// Each warp owns kFwdMT m16 tiles (32 query rows): every K/V fragment read from
// shared memory feeds both tiles, 32 FLOP per byte (docs/attention.md). Q's A
// fragments are re-read from shared memory per block (holding them would spill).
constexpr int kFwdMT = 2;
constexpr int kFwdBR = 16 * kFwdMT * kWarps; // forward: queries per CTA
template <int D> struct FwdKeys {            // keys per streamed block (registers: S is 32 x BC per warp)
    static constexpr int value = D == 128 ? 32 : 64;
};

template <int D> constexpr size_t fwd_smem_bytes()
{
    return (size_t)(kFwdBR + 4 * FwdKeys<D>::value) * (D + 8) * sizeof(__nv_bfloat16);
}

// mf-budget: regs<=255 smem<=0 spill=0  (sm_90 measured: D=64 regs 221, D=128 regs 255, stack 0; dynamic smem 72 / 102 KiB)
template <int D>
__global__ void __launch_bounds__(kThreads)
    attn_mma_fwd_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
                        const __nv_bfloat16 *__restrict__ v, float *__restrict__ out, float *__restrict__ lse,
                        size_t N, int causal, float scale_log2, size_t n_qblk, size_t total)
{
    constexpr int LDS = D + 8; // 16-byte aligned rows, ldmatrix rows in distinct banks
    constexpr int BC = FwdKeys<D>::value, MT = kFwdMT;
    extern __shared__ __align__(16) unsigned char attn_mma_smem[];
    __nv_bfloat16 *Qs = reinterpret_cast<__nv_bfloat16 *>(attn_mma_smem); // [BR][LDS]
    __nv_bfloat16 *Ks = Qs + kFwdBR * LDS;                                // [2][BC][LDS]
    __nv_bfloat16 *Vs = Ks + 2 * BC * LDS;                                // [2][BC][LDS]
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;

    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t bh = item / n_qblk;
        size_t qb = item % n_qblk;
        if (causal) qb = n_qblk - 1 - qb; // the longest rows first
        const size_t q0 = qb * kFwdBR;
        const __nv_bfloat16 *qg = q + bh * N * D, *kg = k + bh * N * D, *vg = v + bh * N * D;
        // Causal: keys beyond the block's last query are never visible.
        const size_t k_end = causal ? (q0 + kFwdBR < N ? q0 + kFwdBR : N) : N;
        const size_t n_kblk = (k_end + BC - 1) / BC;

        load_rows<kFwdBR, D>(Qs, qg, q0, N);
        load_rows<BC, D>(Ks, kg, 0, N);
        load_rows<BC, D>(Vs, vg, 0, N);
        cp_async_commit();

        float o[MT][D / 8][4];
        float m[MT][2], l[MT][2]; // rows g, g + 8 of each m16 tile
        MF_UNROLL
        for (int mt = 0; mt < MT; ++mt) {
            m[mt][0] = m[mt][1] = -INFINITY;
            l[mt][0] = l[mt][1] = 0.0f;
            MF_UNROLL
            for (int n = 0; n < D / 8; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;
        }
        const int wrow = warp * 16 * MT;              // this warp's first row in the block
        const size_t row_a = q0 + (size_t)(wrow + g); // this lane's first row

        for (size_t jb = 0; jb < n_kblk; ++jb) {
            const size_t k0 = jb * BC;
            if (jb + 1 < n_kblk) { // prefetch the next K/V block into the other buffer
                const int nb = (int)((jb + 1) & 1);
                load_rows<BC, D>(Ks + nb * BC * LDS, kg, k0 + BC, N);
                load_rows<BC, D>(Vs + nb * BC * LDS, vg, k0 + BC, N);
            }
            cp_async_commit(); // (possibly empty: keeps the group count uniform)
            cp_async_wait_1(); // block jb (and Q) landed
            __syncthreads();
            const __nv_bfloat16 *Kb = Ks + (int)(jb & 1) * BC * LDS;
            const __nv_bfloat16 *Vb = Vs + (int)(jb & 1) * BC * LDS;

            // S (32 x BC per warp) = Q K^T; B[k=d][n=key] = K[key][d]: plain ldmatrix.
            float s[MT][BC / 8][4];
            MF_UNROLL
            for (int mt = 0; mt < MT; ++mt) MF_UNROLL
            for (int n = 0; n < BC / 8; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
            MF_UNROLL
            for (int kk = 0; kk < D / 16; ++kk) {
                uint32_t qa[MT][4];
                MF_UNROLL
                for (int mt = 0; mt < MT; ++mt)
                    ldsm_x4(qa[mt], Qs + (wrow + mt * 16 + (lane & 15)) * LDS + kk * 16 + (lane >> 4) * 8);
                MF_UNROLL
                for (int np = 0; np < BC / 16; ++np) {
                    uint32_t b[4];
                    ldsm_x4(b, Kb + (np * 16 + (lane >> 4) * 8 + (lane & 7)) * LDS + kk * 16 +
                                   ((lane >> 3) & 1) * 8);
                    MF_UNROLL
                    for (int mt = 0; mt < MT; ++mt) {
                        mma_x2(s[mt][2 * np], s[mt][2 * np + 1], qa[mt], b);
                    }
                }
            }
            // Scale (base 2), mask, online softmax. Element e of n8 tile n of m-tile
            // mt: row row_a + 16 mt + 8 (e>>1), key k0 + 8n + 2t + (e&1).
            const bool need_mask = k0 + BC > N || (causal && k0 + BC > q0 + 1);
            MF_UNROLL
            for (int mt = 0; mt < MT; ++mt) {
                float mx[2] = { -INFINITY, -INFINITY };
                MF_UNROLL
                for (int n = 0; n < BC / 8; ++n) MF_UNROLL
                for (int e = 0; e < 4; ++e) {
                    float x = s[mt][n][e]; // raw: the scale is in online_max_step and softmax_p
                    if (need_mask) {
                        const size_t j = k0 + (size_t)(8 * n + 2 * t + (e & 1));
                        const size_t i = row_a + (size_t)(16 * mt + 8 * (e >> 1));
                        if (j >= N || (causal && j > i)) x = -INFINITY;
                    }
                    s[mt][n][e] = x;
                    mx[e >> 1] = fmaxf(mx[e >> 1], x); // NaN: see online_max_step
                }
                float corr[2], mu[2];
                online_max_step(m[mt], mx, scale_log2, corr, mu); // corr by mf_ex2_ftz, see below
                // p = 2^(s c - m) (softmax_p: the exponent one FFMA) with one MUFU.EX2: mf_ex2_ftz, where
                // exp2f is four instructions (for x < -126 it squares 2^(x/2) to keep a subnormal result).
                // For x >= -126 both run the same MUFU.EX2 on the same x (bit for bit in CUDA 13 sm_90
                // code); below, p < 2^-126 becomes 0. That is harmless: the row max's own term is 1 (to
                // 2^-24 |m| relative: its exponent is s c - round(s c)), so l >= 1 - that, and each flushed
                // term changes l and O by under 2^-126 relative, far below the fp32 rounding of l (2^-24)
                // and the bf16 rounding of P in P V (2^-9). -inf (masked) gives 0, +inf +inf, NaN NaN,
                // as exp2f.
                float rs[2] = { 0.0f, 0.0f };
                MF_UNROLL
                for (int n = 0; n < BC / 8; ++n) MF_UNROLL
                for (int e = 0; e < 4; ++e) {
                    const float p = softmax_p(s[mt][n][e], scale_log2, mu[e >> 1]); // 0 where masked
                    s[mt][n][e] = p;
                    rs[e >> 1] += p;
                }
                MF_UNROLL
                for (int r = 0; r < 2; ++r) {
                    rs[r] = quad_sum(rs[r]);
                    l[mt][r] = l[mt][r] * corr[r] + rs[r];
                }
                MF_UNROLL
                for (int n = 0; n < D / 8; ++n) {
                    o[mt][n][0] *= corr[0];
                    o[mt][n][1] *= corr[0];
                    o[mt][n][2] *= corr[1];
                    o[mt][n][3] *= corr[1];
                }
            }
            // O += P V: A = P (bf16, from two accumulator tiles), B[k=key][n=c] =
            // V[key][c] (row-major B: ldmatrix.trans), shared by both m-tiles.
            MF_UNROLL
            for (int kk = 0; kk < BC / 16; ++kk) {
                uint32_t pa[MT][4];
                MF_UNROLL
                for (int mt = 0; mt < MT; ++mt) c_to_a(pa[mt], s[mt][2 * kk], s[mt][2 * kk + 1]);
                MF_UNROLL
                for (int np = 0; np < D / 16; ++np) {
                    uint32_t b[4];
                    ldsm_x4_t(b, Vb + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + np * 16 +
                                     (lane >> 4) * 8);
                    MF_UNROLL
                    for (int mt = 0; mt < MT; ++mt) {
                        mma_x2(o[mt][2 * np], o[mt][2 * np + 1], pa[mt], b);
                    }
                }
            }
            __syncthreads(); // buffer jb & 1 is refilled by the next iteration's prefetch
        }
        float *og = out + bh * N * D;
        MF_UNROLL
        for (int mt = 0; mt < MT; ++mt) MF_UNROLL
        for (int r = 0; r < 2; ++r) {
            const size_t i = row_a + (size_t)(16 * mt + 8 * r);
            if (i >= N) continue;
            // l = 0 (every score -inf): 0/0 = NaN as F.softmax; lse = -inf.
            const float inv = 1.0f / l[mt][r];
            MF_UNROLL
            for (int n = 0; n < D / 8; ++n) {
                float2 w;
                w.x = o[mt][n][2 * r] * inv;
                w.y = o[mt][n][2 * r + 1] * inv;
                *reinterpret_cast<float2 *>(og + i * D + (size_t)(n * 8 + 2 * t)) = w;
            }
            if (lse != nullptr && t == 0) lse[bh * N + i] = m[mt][r] * kLn2 + logf(l[mt][r]);
        }
        // The next item's cp.async into Qs starts after the loop's last barrier.
    }
}

// ---- backward ----------------------------------------------------------------------------
// Delta[row] = sum_c dout[row, c] * out[row, c]: one warp per row, coalesced.
// mf-budget: regs<=40 smem<=0 spill=0  (sm_90 measured: regs 31)
__global__ void attn_mma_delta_kernel(const __nv_bfloat16 *__restrict__ dout, const float *__restrict__ out,
                                      float *__restrict__ delta, size_t rows, int Dv)
{
    const int lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * (blockDim.x >> 5);
    for (size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows; row += warps) {
        float s = 0.0f;
        for (int c = lane; c < Dv; c += 32)
            s += __bfloat162float(dout[row * (size_t)Dv + (size_t)c]) * out[row * (size_t)Dv + (size_t)c];
        s += __shfl_xor_sync(0xffffffffu, s, 16);
        s += __shfl_xor_sync(0xffffffffu, s, 8);
        s += __shfl_xor_sync(0xffffffffu, s, 4);
        s += __shfl_xor_sync(0xffffffffu, s, 2);
        s += __shfl_xor_sync(0xffffffffu, s, 1);
        if (lane == 0) delta[row] = s;
    }
}

template <int D> constexpr size_t bwd_smem_bytes()
{
    constexpr int BR = BwdRows<D>::value;
    return (size_t)(2 * kBwdBC + 4 * BR) * (D + 8) * sizeof(__nv_bfloat16) // K, V, Q[2], dO[2]
           + (size_t)BR * (kBwdBC + 8) * sizeof(__nv_bfloat16)             // dS
           + (size_t)4 * BR * sizeof(float);                               // lse[2], Delta[2]
}

// Stage lse (times log2 e) and Delta of query rows [q0, q0 + BR); 0 beyond N
// (those rows are masked).
template <int BR>
__device__ __forceinline__ void load_stats(float *lse_s, float *dl_s, const float *lse_g, const float *dl_g,
                                           size_t q0, size_t N)
{
    for (int r = threadIdx.x; r < BR; r += kThreads) {
        const size_t i = q0 + (size_t)r;
        lse_s[r] = i < N ? lse_g[i] * kLog2e : 0.0f;
        dl_s[r] = i < N ? dl_g[i] : 0.0f;
    }
}

// mf-budget: regs<=255 smem<=0 spill=0  (sm_90 measured: D=64 regs 227, D=128 regs 239, stack 0; dynamic smem 90 / 111 KiB)
template <int D>
__global__ void __launch_bounds__(kThreads)
    attn_mma_bwd_kernel(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
                        const __nv_bfloat16 *__restrict__ v, const __nv_bfloat16 *__restrict__ dout,
                        const float *__restrict__ lse, const float *__restrict__ delta,
                        float *__restrict__ dq, float *__restrict__ dk, float *__restrict__ dv, size_t N,
                        int causal, float scale, float scale_log2, size_t n_kblk, size_t total)
{
    constexpr int BR = BwdRows<D>::value, BC = kBwdBC, LDS = D + 8, LDSS = BC + 8;
    extern __shared__ __align__(16) unsigned char attn_mma_smem[];
    __nv_bfloat16 *Ks = reinterpret_cast<__nv_bfloat16 *>(attn_mma_smem); // [BC][LDS]
    __nv_bfloat16 *Vs = Ks + BC * LDS;                                    // [BC][LDS]
    __nv_bfloat16 *Qs = Vs + BC * LDS;                                    // [2][BR][LDS]
    __nv_bfloat16 *dOs = Qs + 2 * BR * LDS;                               // [2][BR][LDS]
    __nv_bfloat16 *dSs = dOs + 2 * BR * LDS;                              // [BR][LDSS]: dS[query][key]
    float *lse_s = reinterpret_cast<float *>(dSs + BR * LDSS);            // [2][BR]
    float *dl_s = lse_s + 2 * BR;                                         // [2][BR]
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;

    for (size_t item = blockIdx.x; item < total; item += gridDim.x) {
        const size_t bh = item / n_kblk, k0 = (item % n_kblk) * BC;
        const size_t base = bh * N * D;
        const __nv_bfloat16 *qg = q + base, *kg = k + base, *vg = v + base, *dog = dout + base;
        const float *lse_g = lse + bh * N, *dl_g = delta + bh * N;
        // Causal: queries before k0 see none of these keys.
        const size_t ib0 = causal ? k0 / BR : 0, n_qblk = (N + BR - 1) / BR;

        load_rows<BC, D>(Ks, kg, k0, N);
        load_rows<BC, D>(Vs, vg, k0, N);
        load_rows<BR, D>(Qs, qg, ib0 * BR, N);
        load_rows<BR, D>(dOs, dog, ib0 * BR, N);
        cp_async_commit();
        load_stats<BR>(lse_s, dl_s, lse_g, dl_g, ib0 * BR, N);

        float dka[D / 8][4], dva[D / 8][4];
        MF_UNROLL
        for (int n = 0; n < D / 8; ++n) MF_UNROLL
        for (int e = 0; e < 4; ++e) dka[n][e] = dva[n][e] = 0.0f;
        const size_t key_a = k0 + (size_t)(warp * 16 + g); // this lane's first key row

        for (size_t ib = ib0; ib < n_qblk; ++ib) {
            const size_t q0 = ib * BR;
            const int buf = (int)((ib - ib0) & 1);
            if (ib + 1 < n_qblk) { // prefetch the next query block into the other buffers
                const int nb = buf ^ 1;
                load_rows<BR, D>(Qs + nb * BR * LDS, qg, q0 + BR, N);
                load_rows<BR, D>(dOs + nb * BR * LDS, dog, q0 + BR, N);
                load_stats<BR>(lse_s + nb * BR, dl_s + nb * BR, lse_g, dl_g, q0 + BR, N);
            }
            cp_async_commit();
            cp_async_wait_1();
            __syncthreads();
            const __nv_bfloat16 *Qb = Qs + buf * BR * LDS, *dOb = dOs + buf * BR * LDS;
            const float *lse_b = lse_s + buf * BR, *dl_b = dl_s + buf * BR;

            // S^T (16 keys x BR queries per warp) = K Q^T and dP^T = V dO^T:
            // A = K / V rows (ldmatrix), B[k=d][n=query] = Q[query][d] (plain ldmatrix).
            float st[BR / 8][4], dpt[BR / 8][4];
            MF_UNROLL
            for (int n = 0; n < BR / 8; ++n) MF_UNROLL
            for (int e = 0; e < 4; ++e) st[n][e] = dpt[n][e] = 0.0f;
            MF_UNROLL
            for (int kk = 0; kk < D / 16; ++kk) {
                uint32_t ka[4], va[4];
                ldsm_x4(ka, Ks + (warp * 16 + (lane & 15)) * LDS + kk * 16 + (lane >> 4) * 8);
                ldsm_x4(va, Vs + (warp * 16 + (lane & 15)) * LDS + kk * 16 + (lane >> 4) * 8);
                MF_UNROLL
                for (int np = 0; np < BR / 16; ++np) {
                    const int off =
                        (np * 16 + (lane >> 4) * 8 + (lane & 7)) * LDS + kk * 16 + ((lane >> 3) & 1) * 8;
                    uint32_t b[4];
                    ldsm_x4(b, Qb + off);
                    mma_x2(st[2 * np], st[2 * np + 1], ka, b);
                    ldsm_x4(b, dOb + off);
                    mma_x2(dpt[2 * np], dpt[2 * np + 1], va, b);
                }
            }
            // P^T = exp2(S^T * scale log2 e - lse log2 e), dS^T = P^T (dP^T - Delta);
            // both exactly 0 where the key is hidden (causal, or beyond N) or the
            // query is beyond N. Element e of tile n: key key_a + 8*(e>>1), query
            // q0 + 8n + 2t + (e&1).
            const bool need_mask = q0 + BR > N || k0 + BC > N || (causal && k0 + BC > q0 + 1);
            MF_UNROLL
            for (int n = 0; n < BR / 8; ++n) MF_UNROLL
            for (int e = 0; e < 4; ++e) {
                const int qi = 8 * n + 2 * t + (e & 1);
                // mf_ex2_ftz as in the forward: p = 2^(x - lse) <= 1 up to rounding; a flushed p < 2^-126
                // changes dV, dK and dQ by under 2^-126 |dO| or |dP|, far below their bf16/fp32 rounding.
                // Infinite and NaN arguments (an lse of -inf or NaN) give what exp2f gives.
                float p = mf_ex2_ftz(st[n][e] * scale_log2 - lse_b[qi]);
                float ds = p * (dpt[n][e] - dl_b[qi]);
                if (need_mask) {
                    const size_t i = q0 + (size_t)qi, j = key_a + (size_t)(8 * (e >> 1));
                    if (i >= N || j >= N || (causal && j > i)) p = ds = 0.0f;
                }
                st[n][e] = p;
                dpt[n][e] = ds;
                // dS[query][key] for the dQ product (bf16, as its A operand)
                dSs[qi * LDSS + warp * 16 + g + 8 * (e >> 1)] = __float2bfloat16_rn(ds);
            }
            // dV += P^T dO and dK += dS^T Q: A from the accumulators, B[k=query][n=c]
            // = dO[query][c] / Q[query][d] (row-major B: ldmatrix.trans).
            MF_UNROLL
            for (int kk = 0; kk < BR / 16; ++kk) {
                uint32_t pa[4], sa[4];
                c_to_a(pa, st[2 * kk], st[2 * kk + 1]);
                c_to_a(sa, dpt[2 * kk], dpt[2 * kk + 1]);
                MF_UNROLL
                for (int np = 0; np < D / 16; ++np) {
                    const int off =
                        (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + np * 16 + (lane >> 4) * 8;
                    uint32_t b[4];
                    ldsm_x4_t(b, dOb + off);
                    mma_x2(dva[2 * np], dva[2 * np + 1], pa, b);
                    ldsm_x4_t(b, Qb + off);
                    mma_x2(dka[2 * np], dka[2 * np + 1], sa, b);
                }
            }
            __syncthreads(); // dS of every warp staged
            // dQ (BR x D) += scale * dS (BR x BC) K (BC x D): warp w owns the 16 x 32
            // output tile (rows 16 (w / (D/32)), columns 32 (w % (D/32))): BR = 256 / D,
            // so the BR/16 x D/32 tiles are exactly the 8 warps. Per k16 step one dS
            // fragment feeds 4 mma (two ldmatrix.trans of K): 12 KiB of shared reads
            // per warp and block instead of 16 with 16 x 16 tiles (docs/attention.md).
            // fp32 atomics into dq. A = dS[query][key] (ldmatrix), B[k=key][n=d] =
            // K[key][d] (row-major B: ldmatrix.trans).
            static_assert((BR / 16) * (D / 32) == kWarps, "one 16 x 32 dQ tile per warp");
            {
                const int mt = warp / (D / 32), c0 = (warp % (D / 32)) * 32;
                float acc[4][4];
                MF_UNROLL
                for (int n = 0; n < 4; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
                MF_UNROLL
                for (int kk = 0; kk < BC / 16; ++kk) {
                    uint32_t a[4], b[4];
                    ldsm_x4(a, dSs + (mt * 16 + (lane & 15)) * LDSS + kk * 16 + (lane >> 4) * 8);
                    MF_UNROLL
                    for (int h = 0; h < 2; ++h) {
                        ldsm_x4_t(b, Ks + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDS + c0 + h * 16 +
                                         (lane >> 4) * 8);
                        mma_x2(acc[2 * h], acc[2 * h + 1], a, b);
                    }
                }
                float *dqg = dq + base;
                MF_UNROLL
                for (int r = 0; r < 2; ++r) {
                    const size_t i = q0 + (size_t)(mt * 16 + g + 8 * r);
                    if (i >= N) continue;
                    MF_UNROLL
                    for (int n = 0; n < 4; ++n) {
                        float *dst = dqg + i * D + (size_t)(c0 + n * 8 + 2 * t);
                        atomicAdd(dst, acc[n][2 * r] * scale);
                        atomicAdd(dst + 1, acc[n][2 * r + 1] * scale);
                    }
                }
            }
            __syncthreads(); // before the next prefetch refills this block's buffers and dS
        }
        // dK = scale * sum dS^T q, dV = sum P^T dout: this warp's 16 key rows.
        MF_UNROLL
        for (int r = 0; r < 2; ++r) {
            const size_t j = key_a + (size_t)(8 * r);
            if (j >= N) continue;
            MF_UNROLL
            for (int n = 0; n < D / 8; ++n) {
                const size_t at = base + j * D + (size_t)(n * 8 + 2 * t);
                float2 wk, wv;
                wk.x = dka[n][2 * r] * scale;
                wk.y = dka[n][2 * r + 1] * scale;
                wv.x = dva[n][2 * r];
                wv.y = dva[n][2 * r + 1];
                *reinterpret_cast<float2 *>(dk + at) = wk;
                *reinterpret_cast<float2 *>(dv + at) = wv;
            }
        }
    }
}

// ---- launchers ------------------------------------------------------------------------------
template <int D>
static mf_status forward(cudaStream_t stream, int causal, size_t bh, size_t N, const void *q, const void *k,
                         const void *v, float *out, float *lse)
{
    const size_t n_qblk = (N + kFwdBR - 1) / kFwdBR, total = bh * n_qblk;
    const size_t smem = fwd_smem_bytes<D>();
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(attn_mma_fwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const float scale_log2 = (float)(kLog2e / std::sqrt((double)D));
    attn_mma_fwd_kernel<D><<<dim3(grid_cap(total, kMaxGridX)), kThreads, smem, stream>>>(
        static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(k),
        static_cast<const __nv_bfloat16 *>(v), out, lse, N, causal, scale_log2, n_qblk, total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <int D>
static mf_status backward(cudaStream_t stream, int causal, size_t bh, size_t N, const void *q, const void *k,
                          const void *v, const float *out, const void *dout, const float *lse, float *delta,
                          float *dq, float *dk, float *dv)
{
    const size_t rows = bh * N;
    MF_CUDA_CHECK(cudaMemsetAsync(dq, 0, rows * D * sizeof(float), stream));
    const __nv_bfloat16 *tdo = static_cast<const __nv_bfloat16 *>(dout);
    attn_mma_delta_kernel<<<grid_blocks(rows, 8, kMaxGridX), 256, 0, stream>>>(tdo, out, delta, rows, D);
    MF_LAUNCH_CHECK();
    const size_t n_kblk = (N + kBwdBC - 1) / kBwdBC, total = bh * n_kblk;
    const size_t smem = bwd_smem_bytes<D>();
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(attn_mma_bwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const double sc = 1.0 / std::sqrt((double)D);
    attn_mma_bwd_kernel<D><<<dim3(grid_cap(total, kMaxGridX)), kThreads, smem, stream>>>(
        static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(k),
        static_cast<const __nv_bfloat16 *>(v), tdo, lse, delta, dq, dk, dv, N, causal, (float)sc,
        (float)(sc * kLog2e), n_kblk, total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

} // namespace attn_mma
} // namespace MF_NS

// ---- entry points (called by optimized/attention.cu's tiled entry points) -----------------
extern "C" {

// Does the tensor-core path take this call? bf16, D == Dv in {64, 128}, every
// bf16 buffer 16-byte aligned (cp.async moves 16-byte chunks). dout may be NULL
// (forward).
int MF_FN(attention_mma_applies)(mf_dtype dtype, int64_t D, int64_t Dv, const void *q, const void *k,
                                 const void *v, const void *dout)
{
    if (dtype != MF_DTYPE_BF16 || D != Dv || (D != 64 && D != 128)) return 0;
    const uintptr_t bits = (uintptr_t)q | (uintptr_t)k | (uintptr_t)v | (uintptr_t)dout;
    return (bits & 15u) == 0;
}

mf_status MF_FN(attention_mma_forward)(mf_context *ctx, int causal, int64_t B, int64_t H, int64_t N,
                                       int64_t D, const void *q, const void *k, const void *v, float *out,
                                       float *lse)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t bh = (size_t)B * (size_t)H;
    if (D == 64) return MF_NS::attn_mma::forward<64>(stream, causal, bh, (size_t)N, q, k, v, out, lse);
    return MF_NS::attn_mma::forward<128>(stream, causal, bh, (size_t)N, q, k, v, out, lse);
}

// delta: B*H*N floats of device scratch (the caller's).
mf_status MF_FN(attention_mma_backward)(mf_context *ctx, int causal, int64_t B, int64_t H, int64_t N,
                                        int64_t D, const void *q, const void *k, const void *v,
                                        const float *out, const void *dout, const float *lse, float *delta,
                                        float *dq, float *dk, float *dv)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t bh = (size_t)B * (size_t)H;
    if (D == 64)
        return MF_NS::attn_mma::backward<64>(stream, causal, bh, (size_t)N, q, k, v, out, dout, lse, delta,
                                             dq, dk, dv);
    return MF_NS::attn_mma::backward<128>(stream, causal, bh, (size_t)N, q, k, v, out, dout, lse, delta, dq,
                                          dk, dv);
}

} // extern "C"
