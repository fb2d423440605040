// NSA pooling: the compressed keys and values (nsa_pool_kernel: the mean over each
// compressed block, in the storage type the compression kernels read) and max |kc| per
// KV group (nsa_kmax_kernel: the bound the selection certificate starts from).
#pragma once

#include "common.cuh"

namespace MF_NS {

// ---- pooling: kc[b][g][j][c] = mean_{s in [j*d, j*d+l)} k[b][s][g][c] ----------
// f32 storage: an fp32 mean. bf16 storage: the spec's bf16 kc/vc (reference/nsa.c
// step 1): the mean in double (sum in s order, divided by l), rounded once by
// mf_bf16_from_f64, bit-identical to the reference's; stored as KC: bf16 for the
// tensor-core compression kernels, fp32 (the same value, exact) for the SIMT ones.
// mf-budget: regs<=40 smem<=0 spill=0
template <typename T, typename KC>
__global__ void __launch_bounds__(256)
    nsa_pool_kernel(const T *__restrict__ k, const T *__restrict__ v, KC *__restrict__ kc,
                    KC *__restrict__ vc, NsaShape sh, size_t total)
{
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const size_t c = e % sh.D, j = (e / sh.D) % sh.nc, g = (e / (sh.D * sh.nc)) % sh.Hk;
        const size_t b = e / (sh.D * sh.nc * sh.Hk);
        if constexpr (sizeof(T) == 2) { // bf16: the reference's double mean, rounded once to bf16
            double sk = 0.0, sv = 0.0;  // (sums only, in s order: nothing to contract into an fma)
            for (size_t s = j * sh.d; s < j * sh.d + sh.l; ++s) {
                const size_t at = ((b * sh.S + s) * sh.Hk + g) * sh.D + c;
                sk += (double)to_f32(k[at]);
                sv += (double)to_f32(v[at]);
            }
            // (a bf16 value: exact in float, and from_f32's rounding to bf16 keeps it)
            kc[e] = from_f32<KC>((float)mf_bf16_bits_to_f64(mf_bf16_from_f64(sk / (double)sh.l)));
            vc[e] = from_f32<KC>((float)mf_bf16_bits_to_f64(mf_bf16_from_f64(sv / (double)sh.l)));
        } else {
            float sk = 0.0f, sv = 0.0f;
            for (size_t s = j * sh.d; s < j * sh.d + sh.l; ++s) {
                const size_t at = ((b * sh.S + s) * sh.Hk + g) * sh.D + c;
                sk += to_f32(k[at]);
                sv += to_f32(v[at]);
            }
            kc[e] = from_f32<KC>(sk / (float)sh.l);
            vc[e] = from_f32<KC>(sv / (float)sh.l);
        }
    }
}

// max |kc| of each (b, KV group) (kmax[b Hk + g], NaN if any kc is NaN): the
// bound of the compression kernel's score error (nsa_mma_cmp_kernel's
// certificate). One block per (b, g).
// mf-budget: regs<=40 smem<=1024 spill=0  (sm_90 measured: regs 25, smem 512)
__global__ void __launch_bounds__(kThreads)
    nsa_kmax_kernel(const __nv_bfloat16 *__restrict__ kc, float *__restrict__ kmax, NsaShape sh)
{
    __shared__ float red[kThreads];
    const size_t per = sh.nc * sh.D;
    for (size_t bg = blockIdx.x; bg < sh.B * sh.Hk; bg += gridDim.x) {
        float m = 0.0f;
        for (size_t e = threadIdx.x; e < per; e += kThreads) m = nan_max(fabsf(to_f32(kc[bg * per + e])), m);
        m = block_max_n<kThreads>(m, red);
        if (threadIdx.x == 0) kmax[bg] = m; // block_max_n ends with a barrier: red is free again
    }
}

} // namespace MF_NS
