// Causal linear attention, SIMT fp32 path (and the bidirectional form): the backward kernels,
// dq (forward sweep), dk with the initial state's gradients and dv (reverse sweeps).
#pragma once

#include "common.cuh"

namespace MF_NS {

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

} // namespace MF_NS
