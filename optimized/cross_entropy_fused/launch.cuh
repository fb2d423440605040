// Fused linear cross-entropy: the launchers behind the entry point (the wgmma probe and
// path choice, the mma.sync backward's strip, grids and dynamic shared memory).
#pragma once

#include "fwd.cuh"
#include "bwd.cuh"
#include "mf_wgmma.cuh"

#include <atomic>
#include <cstdint>

namespace MF_NS {
namespace cce {

// ---- launchers ------------------------------------------------------------------
#if !defined(__CUDAHOST__)
// Set by the probe kernel from the code the driver actually loaded for the device.
__device__ int ce_wgmma_code_present;
// mf-budget: regs<=16 smem<=0 spill=0  (one thread)
__global__ void ce_wgmma_probe_kernel()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    ce_wgmma_code_present = 1;
#else
    ce_wgmma_code_present = 0;
#endif
}
#endif

// Whether the wgmma kernels can run here (wg_available in mf_wgmma.cuh): host mode
// emulates wgmma; CUDA mode needs a cc 9.0 device and the sm_90a code of cross_entropy_fused.cu
// (MF_HAVE_SM90A: built with 90a, src/CMakeLists.txt), checked once per device by the
// probe kernel above.
#if !defined(__CUDAHOST__) && defined(MF_HAVE_SM90A)
static mf_status ce_wgmma_probe(int *present)
{
    ce_wgmma_probe_kernel<<<1, 1>>>();
    MF_LAUNCH_CHECK();
    MF_CUDA_CHECK(cudaMemcpyFromSymbol(present, ce_wgmma_code_present, sizeof(int)));
    return MF_OK;
}
#else
// host mode: wg_available answers from the modelled device; no sm_90a code: never
static constexpr mf_wg_probe_fn ce_wgmma_probe = nullptr;
#endif
static std::atomic<int> ce_wgmma_cache[64];

// The bf16 path for a call: opts.mma_path, or with MF_CE_MMA_AUTO the environment
// variable MF_CE_MMA_PATH ("sync" or "wgmma"), else wgmma where available on a GPU
// and mma.sync otherwise (host mode's AUTO stays on mma.sync, the portable path).
extern "C" mf_status MF_FN(cross_entropy_wgmma_available)(mf_context *ctx, int *available)
{
    bool yes = false;
    MF_TRY(wg_available((cudaStream_t)mf_context_stream(ctx), ce_wgmma_cache, ce_wgmma_probe, &yes));
    *available = yes ? 1 : 0;
    return MF_OK;
}

static mf_status pick_wgmma(cudaStream_t stream, const mf_cross_entropy_options &o, bool *wg)
{
    return wg_pick(stream, (int)o.mma_path, "MF_CE_MMA_PATH", "opts->mma_path (or MF_CE_MMA_PATH)",
                   ce_wgmma_cache, ce_wgmma_probe, wg);
}

// f32: the 64 x 64 SIMT kernels; bf16: the 128 x 128 tensor-core kernels.
static bool tc_vec(const mf_ce_args *a)
{ // cp.async's 16-byte chunks fit the layout
    return a->hidden_dim % 8 == 0 && (uintptr_t)a->hidden % 16 == 0 && (uintptr_t)a->weight % 16 == 0;
}

static mf_status launch_fwd(cudaStream_t stream, bool bf16_in, bool wg, const mf_ce_args *a,
                            const FusedParams &p)
{
    if (bf16_in && wg) {
        const unsigned blocks = (unsigned)((p.N + kTcBM - 1) / kTcBM);
        MF_CUDA_CHECK(cudaFuncSetAttribute(ce_fused_fwd_wgmma_kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kWgFwdSmem));
        ce_fused_fwd_wgmma_kernel<<<blocks, kTcThreads, kWgFwdSmem, stream>>>(
            static_cast<const bf16 *>(a->hidden), static_cast<const bf16 *>(a->weight),
            static_cast<const bf16 *>(a->bias), a->labels, p, tc_vec(a) ? 1 : 0);
    } else if (bf16_in) {
        const unsigned blocks = (unsigned)((p.N + kTcBM - 1) / kTcBM);
        ce_fused_fwd_mma_kernel<<<blocks, kTcThreads, 0, stream>>>(
            static_cast<const bf16 *>(a->hidden), static_cast<const bf16 *>(a->weight),
            static_cast<const bf16 *>(a->bias), a->labels, p, tc_vec(a) ? 1 : 0);
    } else {
        const unsigned blocks = (unsigned)((p.N + kBM - 1) / kBM);
        ce_fused_fwd_kernel<float><<<blocks, kThreads, 0, stream>>>(
            static_cast<const float *>(a->hidden), static_cast<const float *>(a->weight),
            static_cast<const float *>(a->bias), a->labels, p);
    }
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// The mma.sync backward's strip (tiles of G kept in shared memory) for the current
// device: 4 where its 175,616 B per block fit (sharedMemPerBlockOptin, queried once per
// device), else 3 (142,848 B: an A100's 166,912 B); MF_ERR_BACKEND_UNAVAILABLE below that.
static std::atomic<int> ce_strip_cache[64];
static mf_status tc_bwd_strip(int *strip)
{
    int dev = 0;
    MF_CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= 0 && dev < 64 && (*strip = ce_strip_cache[dev].load()) != 0) return MF_OK;
    int optin = 0;
    MF_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if ((size_t)optin >= tc_bwd_smem(4) + kTcBwdStatic)
        *strip = 4;
    else if ((size_t)optin >= tc_bwd_smem(3) + kTcBwdStatic)
        *strip = 3;
    else
        return mf_set_error(
            MF_ERR_BACKEND_UNAVAILABLE, __func__, __FILE__, __LINE__,
            "the bf16 fused backward needs %zu B of shared memory per block; device %d allows %d B",
            tc_bwd_smem(3) + kTcBwdStatic, dev, optin);
    if (dev >= 0 && dev < 64) ce_strip_cache[dev].store(*strip);
    return MF_OK;
}

static mf_status launch_bwd(cudaStream_t stream, bool bf16_in, bool wg, const mf_ce_args *a,
                            const FusedParams &p)
{
    if (bf16_in && wg) {
        const unsigned blocks = (unsigned)((p.N + kTcBM - 1) / kTcBM);
        MF_CUDA_CHECK(cudaFuncSetAttribute(ce_fused_bwd_wgmma_kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kWgBwdSmem));
        ce_fused_bwd_wgmma_kernel<<<blocks, kTcThreads, kWgBwdSmem, stream>>>(
            static_cast<const bf16 *>(a->hidden), static_cast<const bf16 *>(a->weight),
            static_cast<const bf16 *>(a->bias), a->labels, p, tc_vec(a) ? 1 : 0, a->grad_hidden,
            a->grad_weight, a->grad_bias);
    } else if (bf16_in) {
        int strip = 0;
        MF_TRY(tc_bwd_strip(&strip));
        const unsigned blocks = (unsigned)((p.N + kTcBM - 1) / kTcBM);
        const bf16 *h = static_cast<const bf16 *>(a->hidden), *w = static_cast<const bf16 *>(a->weight),
                   *b = static_cast<const bf16 *>(a->bias);
        const int vec = tc_vec(a) ? 1 : 0;
        auto *kernel = strip == 4 ? ce_fused_bwd_mma_kernel<4> : ce_fused_bwd_mma_kernel<3>;
        const size_t smem = tc_bwd_smem(strip);
        MF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        kernel<<<blocks, kTcThreads, smem, stream>>>(h, w, b, a->labels, p, vec, a->grad_hidden,
                                                     a->grad_weight, a->grad_bias);
    } else {
        const unsigned blocks = (unsigned)((p.N + kBM - 1) / kBM);
        ce_fused_bwd_kernel<float><<<blocks, kThreads, 0, stream>>>(
            static_cast<const float *>(a->hidden), static_cast<const float *>(a->weight),
            static_cast<const float *>(a->bias), a->labels, p, a->grad_hidden, a->grad_weight, a->grad_bias);
    }
    MF_LAUNCH_CHECK();
    return MF_OK;
}

} // namespace cce
} // namespace MF_NS
