// Causal linear attention, bf16 on tensor cores: the 64-row tile pieces and kernels, out and
// dq (la_tc_tile_kernel), dk and dv side by side (la_tc_dkdv_kernel).
#pragma once

#include "chunk_state.cuh"
#include "mf_mma.cuh"

namespace MF_NS {

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

} // namespace MF_NS
