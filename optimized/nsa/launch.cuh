// NSA launchers: the scratch, the choice of kernels (SIMT, mma.sync or wgmma) and the
// launch sequences of the backward (launch_backward) and the forward (launch_forward),
// the wgmma probe and the nsa_wgmma_available entry. nsa.cu's entries call them.
#pragma once

#include "pool.cuh"
#include "fwd_simt.cuh"
#include "fwd_slc_win_wgmma.cuh"
#include "fwd_cmp_wgmma.cuh"
#include "recheck.cuh"
#include "bwd_mma.cuh"
#include "bwd_simt.cuh"

namespace MF_NS {

static bool mma_eligible(const NsaShape &sh, const void *q, const void *k, const void *v);

template <int D>
static mf_status launch_mma_bwd(cudaStream_t stream, const NsaShape &sh, const void *q, const void *k,
                                const void *v, const void *gs, const void *gw, const void *dout,
                                const float *lse, const int32_t *sel, float *dq, float *dk, float *dv,
                                float *dgs, float *dgw)
{
    const __nv_bfloat16 *q16 = static_cast<const __nv_bfloat16 *>(q),
                        *k16 = static_cast<const __nv_bfloat16 *>(k),
                        *v16 = static_cast<const __nv_bfloat16 *>(v),
                        *gs16 = static_cast<const __nv_bfloat16 *>(gs),
                        *gw16 = static_cast<const __nv_bfloat16 *>(gw),
                        *do16 = static_cast<const __nv_bfloat16 *>(dout);
    // query-blocked: 64-row CTAs (b, KV group, QT tokens), as nsa_mma_fwd_kernel's at G <= 2
    const size_t QT = nsa_sw::tokens_per_cta<nsa_sw::kWarps>(sh);
    const size_t nblk = (sh.S + QT - 1) / QT, items = sh.B * sh.Hk * nblk;
    constexpr size_t smem = nsa_sw::bwd_smem_bytes<D>();
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(nsa_mma_bwd_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    nsa_mma_bwd_kernel<D><<<grid_cap(items, kMaxGridX), nsa_sw::kThreadsS, smem, stream>>>(
        q16, k16, v16, gs16, gw16, do16, lse, sel, dq, dk, dv, dgs, dgw, sh, QT, nblk, items);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// Compression branch's backward on the tensor cores (bf16, D <= 64): the CTAs of
// nsa_mma_cmp_kernel (b, KV group, QT tokens).
template <int D>
static void launch_cmp_bwd(cudaStream_t stream, const NsaShape &sh, const void *q, const void *gc,
                           const void *dout, const __nv_bfloat16 *kc, const __nv_bfloat16 *vc,
                           const float *lse, float *dq, float *dkc, float *dvc, float *dgc)
{
    constexpr int W = nsa_cmp::kBwdWarps;
    const size_t QT = nsa_cmp::tokens_per_cta<W>(sh);
    const size_t nblk = (sh.S + QT - 1) / QT, total = sh.B * sh.Hk * nblk;
    nsa_mma_cmp_bwd_kernel<D><<<grid_cap(total, kMaxGridX), nsa_cmp::Cta<W>::kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(gc),
        static_cast<const __nv_bfloat16 *>(dout), kc, vc, lse, dq, dkc, dvc, dgc, sh, QT, nblk, total);
}

// kc, vc pooled from k, v: bf16 (kcb, vcb; the tensor-core compression
// kernels, bf16 storage only) or fp32 (kc, vc). ncd = B Hk nc D > 0.
template <typename T>
static void launch_pool(cudaStream_t stream, const NsaShape &sh, const void *k, const void *v,
                        __nv_bfloat16 *kcb, __nv_bfloat16 *vcb, float *kc, float *vc, size_t ncd)
{
    const T *kt = static_cast<const T *>(k), *vt = static_cast<const T *>(v);
    if constexpr (sizeof(T) == 2) { // no <float, bf16> instance: f32 storage never takes the bf16 path
        if (kcb != nullptr) {
            nsa_pool_kernel<T, __nv_bfloat16>
                <<<grid_blocks(ncd, 256, kMaxGridX), 256, 0, stream>>>(kt, vt, kcb, vcb, sh, ncd);
            return;
        }
    }
    nsa_pool_kernel<T, float><<<grid_blocks(ncd, 256, kMaxGridX), 256, 0, stream>>>(kt, vt, kc, vc, sh, ncd);
}

template <typename T>
static mf_status launch_backward(mf_context *ctx, const NsaShape &sh, const void *q, const void *k,
                                 const void *v, const void *gc, const void *gs, const void *gw,
                                 const void *dout, const float *lse, const int32_t *sel, float *dq, float *dk,
                                 float *dv, float *dgc, float *dgs, float *dgw)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    Scratch scr(ctx);
    float *kc = nullptr, *vc = nullptr, *dkc = nullptr, *dvc = nullptr;
    __nv_bfloat16 *kcb = nullptr, *vcb = nullptr; // bf16 kc, vc of the tensor-core compression kernel
    const size_t ncd = sh.B * sh.Hk * sh.nc * sh.D, nkv = sh.B * sh.S * sh.Hk * sh.D;
    const size_t total = sh.B * sh.S * sh.Hk;
    const bool mma = sizeof(T) == 2 && mma_eligible(sh, q, k, v) && ((uintptr_t)dout & 15u) == 0;
    const bool mma_cmp = mma && sh.D <= 64;
    MF_CUDA_CHECK(cudaMemsetAsync(dk, 0, nkv * sizeof(float), stream));
    MF_CUDA_CHECK(cudaMemsetAsync(dv, 0, nkv * sizeof(float), stream));
    if (ncd > 0) { // dkc, dvc (fp32), then kc, vc (bf16 for the tensor-core kernel, else fp32)
        mf_status st =
            mf_scratch_alloc(ctx, MF_MEM_DEVICE, 2 * ncd * (sizeof(float) + (mma_cmp ? 2 : 4)), &scr.ptr);
        if (st != MF_OK) return st;
        dkc = static_cast<float *>(scr.ptr);
        dvc = dkc + ncd;
        MF_CUDA_CHECK(cudaMemsetAsync(dkc, 0, 2 * ncd * sizeof(float), stream));
        if (mma_cmp) {
            kcb = reinterpret_cast<__nv_bfloat16 *>(dvc + ncd);
            vcb = kcb + ncd;
        } else {
            kc = dvc + ncd;
            vc = kc + ncd;
        }
        launch_pool<T>(stream, sh, k, v, kcb, vcb, kc, vc, ncd);
        MF_LAUNCH_CHECK();
    }
    if (mma_cmp) { // the compression branch on the tensor cores (it writes dq and dg_cmp)
        switch (sh.D) {
        case 16: launch_cmp_bwd<16>(stream, sh, q, gc, dout, kcb, vcb, lse, dq, dkc, dvc, dgc); break;
        case 32: launch_cmp_bwd<32>(stream, sh, q, gc, dout, kcb, vcb, lse, dq, dkc, dvc, dgc); break;
        default: launch_cmp_bwd<64>(stream, sh, q, gc, dout, kcb, vcb, lse, dq, dkc, dvc, dgc); break;
        }
    } else { // SIMT: all three branches, or (bf16, D = 128) the compression branch only
        nsa_bwd_kernel<T><<<grid_cap(total, kMaxGridX), kThreads, 0, stream>>>(
            static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
            static_cast<const T *>(gc), static_cast<const T *>(gs), static_cast<const T *>(gw),
            static_cast<const T *>(dout), kc, vc, lse, sel, dq, dk, dv, dkc, dvc, dgc, dgs, dgw, sh, total,
            mma ? 1 : 3);
    }
    MF_LAUNCH_CHECK();
    if (mma) { // the selected and sliding branches on the tensor cores (same stream: dq written)
        mf_status st;
        switch (sh.D) {
        case 16:
            st = launch_mma_bwd<16>(stream, sh, q, k, v, gs, gw, dout, lse, sel, dq, dk, dv, dgs, dgw);
            break;
        case 32:
            st = launch_mma_bwd<32>(stream, sh, q, k, v, gs, gw, dout, lse, sel, dq, dk, dv, dgs, dgw);
            break;
        case 64:
            st = launch_mma_bwd<64>(stream, sh, q, k, v, gs, gw, dout, lse, sel, dq, dk, dv, dgs, dgw);
            break;
        default:
            st = launch_mma_bwd<128>(stream, sh, q, k, v, gs, gw, dout, lse, sel, dq, dk, dv, dgs, dgw);
            break;
        }
        if (st != MF_OK) return st;
    }
    if (ncd > 0) {
        nsa_unpool_kernel<<<grid_blocks(nkv, 256, kMaxGridX), 256, 0, stream>>>(dkc, dvc, dk, dv, sh, nkv);
        MF_LAUNCH_CHECK();
    }
    return MF_OK;
}

// ---- launcher -----------------------------------------------------------------------
// The bf16 tensor-core path applies to D in {16, 32, 64, 128} with 16-byte
// aligned q, k, v (cp.async chunks); anything else runs the SIMT kernel.
static bool mma_eligible(const NsaShape &sh, const void *q, const void *k, const void *v)
{
    const bool dim = sh.D == 16 || sh.D == 32 || sh.D == 64 || sh.D == 128;
    return dim && (((uintptr_t)q | (uintptr_t)k | (uintptr_t)v) & 15u) == 0;
}

// The selected and sliding branches on the tensor cores: one CTA of WARPS
// warps per (b, KV group, QT tokens), QT * G <= 16 WARPS rows.
// WG: nsa_wg_fwd_kernel (wgmma), else nsa_mma_fwd_kernel; same grid and arguments.
template <int D, int WARPS, bool WG = false>
static mf_status launch_mma_warps(cudaStream_t stream, const NsaShape &sh, const void *q, const void *k,
                                  const void *v, const void *gs, const void *gw, const int32_t *sel,
                                  float *out, float *lse)
{
    const size_t QT = nsa_sw::tokens_per_cta<WARPS>(sh);
    const size_t nblk = (sh.S + QT - 1) / QT, total = sh.B * sh.Hk * nblk;
    constexpr size_t smem = WG ? nsa_wg::fwd_smem_bytes<D, WARPS>() : nsa_sw::fwd_smem_bytes<D, WARPS>();
    const auto kernel = WG ? nsa_wg_fwd_kernel<D, WARPS> : nsa_mma_fwd_kernel<D, WARPS>;
    MF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel<<<grid_cap(total, kMaxGridX), 32 * WARPS, smem, stream>>>(
        static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(k),
        static_cast<const __nv_bfloat16 *>(v), static_cast<const __nv_bfloat16 *>(gs),
        static_cast<const __nv_bfloat16 *>(gw), sel, out, lse, sh, QT, nblk, total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// 128-row CTAs at G >= 3, 64-row ones at G <= 2 (nsa_sw::fwd_warps); wg
// (MF_NSA_MMA_PATH): on wgmma (nsa_wg_fwd_kernel: two warpgroups, or one).
template <int D>
static mf_status launch_mma(cudaStream_t stream, const NsaShape &sh, bool wg, const void *q, const void *k,
                            const void *v, const void *gs, const void *gw, const int32_t *sel, float *out,
                            float *lse)
{
    if (wg && nsa_sw::fwd_warps(sh) == nsa_sw::kFwdWarps)
        return launch_mma_warps<D, nsa_sw::kFwdWarps, true>(stream, sh, q, k, v, gs, gw, sel, out, lse);
    if (wg) return launch_mma_warps<D, nsa_sw::kWarps, true>(stream, sh, q, k, v, gs, gw, sel, out, lse);
    if (nsa_sw::fwd_warps(sh) == nsa_sw::kFwdWarps)
        return launch_mma_warps<D, nsa_sw::kFwdWarps>(stream, sh, q, k, v, gs, gw, sel, out, lse);
    return launch_mma_warps<D, nsa_sw::kWarps>(stream, sh, q, k, v, gs, gw, sel, out, lse);
}

// Compression branch and selection on the tensor cores (bf16, D <= 64): one
// CTA of 8 warps per (b, KV group, QT tokens), QT * G <= 128 rows; dynamic
// shared memory (FwdSmem: 55.8 KB at D = 64).
template <int D>
static mf_status launch_cmp(cudaStream_t stream, const NsaShape &sh, bool wg, const void *q, const void *gc,
                            const __nv_bfloat16 *kc, const __nv_bfloat16 *vc, float *out, float *lse,
                            int32_t *sel, const float *kmax, unsigned long long *flags,
                            unsigned long long *nflag, int flag_all)
{
    constexpr int W = nsa_cmp::kFwdWarps;
    const size_t QT = nsa_cmp::tokens_per_cta<W>(sh);
    const size_t nblk = (sh.S + QT - 1) / QT, total = sh.B * sh.Hk * nblk;
    if (wg) { // MF_NSA_MMA_PATH: the same grid and CTAs on wgmma (sm_90a)
        constexpr size_t wsmem = sizeof(nsa_wgc::FwdSmem<D>);
        MF_CUDA_CHECK(cudaFuncSetAttribute(nsa_wg_cmp_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)wsmem));
        nsa_wg_cmp_kernel<D><<<grid_cap(total, kMaxGridX), nsa_wgc::kThreadsW, wsmem, stream>>>(
            static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(gc), kc, vc, out, lse,
            sel, kmax, flags, nflag, flag_all, sh, QT, nblk, total);
        MF_LAUNCH_CHECK();
        return MF_OK;
    }
    constexpr size_t smem = sizeof(nsa_cmp::FwdSmem<D, W>);
    MF_CUDA_CHECK(cudaFuncSetAttribute(nsa_mma_cmp_kernel<D, W>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)smem));
    nsa_mma_cmp_kernel<D, W><<<grid_cap(total, kMaxGridX), nsa_cmp::Cta<W>::kThreads, smem, stream>>>(
        static_cast<const __nv_bfloat16 *>(q), static_cast<const __nv_bfloat16 *>(gc), kc, vc, out, lse, sel,
        kmax, flags, nflag, flag_all, sh, QT, nblk, total);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// MF_NSA_RECHECK=all (a testing aid): nsa_mma_cmp_kernel lists every token, so
// that nsa_recheck_kernel ranks them all in double. Unset or empty: only the
// tokens whose selection is not certified. Anything else is an error.
static mf_status recheck_all(bool *all)
{
    const char *env = getenv("MF_NSA_RECHECK");
    *all = env != nullptr && strcmp(env, "all") == 0;
    if (env != nullptr && *env != '\0' && !*all)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                            "MF_NSA_RECHECK=%s is not 'all' (or unset)", env);
    return MF_OK;
}

// ---- the wgmma path (sm_90a) ----------------------------------------------------------
// MF_NSA_MMA_PATH=auto|sync|wgmma picks the bf16 forward's tensor-core kernels: auto (the
// default, unset or empty) takes the wgmma kernels on a cc 9.0 GPU running this file's
// sm_90a code and mma.sync elsewhere, host mode included (the portable path); wgmma forces
// them (host mode emulates them; on a GPU without them: MF_ERR_BACKEND_UNAVAILABLE);
// anything else is MF_ERR_INVALID_ARGUMENT. mf_wgmma.cuh, wg_pick.
#if !defined(__CUDAHOST__)
// Set by the probe kernel from the code the driver actually loaded for the device.
__device__ int nsa_wgmma_code_present;
// mf-budget: regs<=16 smem<=0 spill=0  (one thread)
__global__ void nsa_wgmma_probe_kernel()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    nsa_wgmma_code_present = 1;
#else
    nsa_wgmma_code_present = 0;
#endif
}
#endif
#if !defined(__CUDAHOST__) && defined(MF_HAVE_SM90A)
static mf_status nsa_wgmma_probe(int *present)
{
    nsa_wgmma_probe_kernel<<<1, 1>>>();
    MF_LAUNCH_CHECK();
    MF_CUDA_CHECK(cudaMemcpyFromSymbol(present, nsa_wgmma_code_present, sizeof(int)));
    return MF_OK;
}
#else
// host mode: wg_available answers from the modelled device; no sm_90a code: never
static constexpr mf_wg_probe_fn nsa_wgmma_probe = nullptr;
#endif
static std::atomic<int> nsa_wgmma_cache[64];

extern "C" mf_status MF_FN(nsa_wgmma_available)(mf_context *ctx, int *available)
{
    bool yes = false;
    MF_TRY(wg_available((cudaStream_t)mf_context_stream(ctx), nsa_wgmma_cache, nsa_wgmma_probe, &yes));
    *available = yes ? 1 : 0;
    return MF_OK;
}

static mf_status pick_wgmma(cudaStream_t stream, bool *wg)
{
    return wg_pick(stream, 0, "MF_NSA_MMA_PATH", "MF_NSA_MMA_PATH", nsa_wgmma_cache, nsa_wgmma_probe, wg);
}

template <typename T>
static mf_status launch_forward(mf_context *ctx, const NsaShape &sh, const void *q, const void *k,
                                const void *v, const void *gc, const void *gs, const void *gw, float *out,
                                float *lse, int32_t *sel)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const bool mma = sizeof(T) == 2 && mma_eligible(sh, q, k, v);
    bool wg = false; // the bf16 tensor-core kernels on wgmma (MF_NSA_MMA_PATH)
    if (mma) MF_TRY(pick_wgmma(stream, &wg));
    Scratch scr(ctx);
    float *kc = nullptr, *vc = nullptr, *kmax = nullptr;
    __nv_bfloat16 *kcb = nullptr, *vcb = nullptr; // bf16 kc, vc of the tensor-core compression kernel
    unsigned long long *flags = nullptr, *nflag = nullptr;
    const size_t ncd = sh.B * sh.Hk * sh.nc * sh.D;
    const size_t total = sh.B * sh.S * sh.Hk;
    const bool mma_cmp = mma && sh.D <= 64 && sh.n <= (size_t)nsa_cmp::kCmpMaxSel;
    bool flag_all = false;
    if (mma_cmp) MF_TRY(recheck_all(&flag_all));
    // The tensor-core kernel reads the selection: the caller's sel, or scratch.
    const size_t sel_bytes = mma && sel == nullptr ? total * sh.n * sizeof(int32_t) : 0;
    // The compression kernel's certificate (with a compressed block): the list of
    // tokens to rank again (8 bytes each, at most all), its count, max |kc| per (b, g).
    const bool cert = mma_cmp && ncd > 0;
    const size_t cert_bytes = cert ? total * 8 + 8 + sh.B * sh.Hk * sizeof(float) : 0;
    flag_all = flag_all && cert; // no compressed block: every importance is exactly 0, nothing to rank again
    // kc, vc: bf16 for the tensor-core compression kernel (the spec's values), else fp32
    const size_t kc_bytes = 2 * ncd * (mma_cmp ? sizeof(__nv_bfloat16) : sizeof(float));
    if (ncd > 0 || sel_bytes > 0) {
        mf_status st = mf_scratch_alloc(ctx, MF_MEM_DEVICE, kc_bytes + cert_bytes + sel_bytes, &scr.ptr);
        if (st != MF_OK) return st;
        if (mma_cmp) {
            kcb = static_cast<__nv_bfloat16 *>(scr.ptr);
            vcb = kcb + ncd;
        } else {
            kc = static_cast<float *>(scr.ptr);
            vc = kc + ncd;
        }
        unsigned char *at = static_cast<unsigned char *>(scr.ptr) + kc_bytes; // 8-byte aligned: D % 16 == 0
        if (cert) {
            flags = reinterpret_cast<unsigned long long *>(at);
            nflag = flags + total;
            kmax = reinterpret_cast<float *>(nflag + 1);
            at = reinterpret_cast<unsigned char *>(kmax + sh.B * sh.Hk);
        }
        if (sel_bytes > 0) sel = reinterpret_cast<int32_t *>(at);
    }
    if (ncd > 0) {
        launch_pool<T>(stream, sh, k, v, kcb, vcb, kc, vc, ncd);
        MF_LAUNCH_CHECK();
    }
    if (!mma) {
        nsa_fwd_kernel<T><<<grid_cap(total, kMaxGridX), kThreads, 0, stream>>>(
            static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
            static_cast<const T *>(gc), static_cast<const T *>(gs), static_cast<const T *>(gw), kc, vc, out,
            lse, sel, sh, total, 1);
        MF_LAUNCH_CHECK();
        return MF_OK;
    }
    // bf16: compression and selection (on the tensor cores for D <= 64 and
    // n <= nsa_cmp::kCmpMaxSel, else SIMT), then the selected and sliding
    // branches on the tensor cores (same stream: out and sel are ready).
    if (mma_cmp) {
        if (cert) {
            nsa_kmax_kernel<<<grid_cap(sh.B * sh.Hk, kMaxGridX), kThreads, 0, stream>>>(kcb, kmax, sh);
            MF_LAUNCH_CHECK();
            MF_CUDA_CHECK(cudaMemsetAsync(nflag, 0, sizeof(*nflag), stream));
        }
        switch (sh.D) {
        case 16:
            MF_TRY(
                launch_cmp<16>(stream, sh, wg, q, gc, kcb, vcb, out, lse, sel, kmax, flags, nflag, flag_all));
            break;
        case 32:
            MF_TRY(
                launch_cmp<32>(stream, sh, wg, q, gc, kcb, vcb, out, lse, sel, kmax, flags, nflag, flag_all));
            break;
        default:
            MF_TRY(
                launch_cmp<64>(stream, sh, wg, q, gc, kcb, vcb, out, lse, sel, kmax, flags, nflag, flag_all));
            break;
        }
        if (cert) { // the listed tokens ranked again in double (the count stays on the device)
            nsa_recheck_kernel<<<grid_cap(total, 256), kThreads, 0, stream>>>(
                static_cast<const __nv_bfloat16 *>(q), kcb, sel, flags, nflag, sh);
        }
    } else {
        nsa_fwd_kernel<T><<<grid_cap(total, kMaxGridX), kThreads, 0, stream>>>(
            static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v),
            static_cast<const T *>(gc), static_cast<const T *>(gs), static_cast<const T *>(gw), kc, vc, out,
            lse, sel, sh, total, 0);
    }
    MF_LAUNCH_CHECK();
    switch (sh.D) {
    case 16: return launch_mma<16>(stream, sh, wg, q, k, v, gs, gw, sel, out, lse);
    case 32: return launch_mma<32>(stream, sh, wg, q, k, v, gs, gw, sel, out, lse);
    case 64: return launch_mma<64>(stream, sh, wg, q, k, v, gs, gw, sel, out, lse);
    default: return launch_mma<128>(stream, sh, wg, q, k, v, gs, gw, sel, out, lse);
    }
}

} // namespace MF_NS
