// Causal linear attention, SIMT fp32 path (and the bidirectional form): the forward kernel,
// out and the final state.
#pragma once

#include "common.cuh"

namespace MF_NS {

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

} // namespace MF_NS
