// Optimized native sparse attention: the three NSA branches fused, without
// score matrices or gathered keys (include/memfix/nsa.h has the math).
//
// Seed document 001_8c71c68d431e0a4d.txt: the NSA model's selected branch was
// "standard SDPA with block gathering" and its O(S^2) attention elements per
// head ran sequence 4096 out of memory. Here no score row is ever stored:
//   nsa_pool_kernel  compressed k and v (mean over [j*d, j*d+l)): fp32 for f32
//                    storage; bf16 storage: the double mean rounded once to bf16
//                    (the spec's, reference/nsa.c), kept in bf16 scratch for the
//                    tensor-core compression kernels (4*B*Hk*nc*D bytes), in fp32
//                    for the SIMT ones (8*B*Hk*nc*D)
//   nsa_fwd_kernel   one block (kThreads) per (b, t, KV group), looping over the
//                    group's heads:
//     1. compression: online softmax over the visible compressed keys, in
//        chunks of kThreads scores (one chunk of probabilities in shared memory);
//     2. block importances of t, 1024 candidate blocks per tile: one thread
//        per block, recomputing the probabilities of its overlapping compressed
//        blocks from the compression lse, summed over the group's heads;
//     3. each tile merged into the running top n by parallel ranking (an entry
//        stays iff fewer than n entries beat it; forced blocks have +inf; ties
//        to the lower index): shared memory independent of S;
//     4. the selected blocks' tokens <= t and the window (t-w, t]: online
//        softmax over those keys only, chunk by chunk.
// Backward (nsa_bwd_kernel, same grid): per branch, o recomputed, then
// p = exp(scale q.k - lse) from the forward's saved lse over the same keys
// (the saved sel), ds = p (g dout.v - g dout.o); dq in registers, dk/dv and
// the compressed dkc/dvc by atomicAdd; nsa_unpool_kernel spreads dkc/dvc back
// through the mean pooling. Scratch: kc, vc, dkc, dvc.
// bf16 (D in {16, 32, 64, 128}): step 4 runs on the tensor cores
// (nsa_mma_fwd_kernel below, query-blocked: one CTA per (b, KV group, up to 32
// tokens) loads each K/V tile of the tokens' union of selected blocks and
// windows once; nsa_wg_fwd_kernel: the same on wgmma, two m64 warpgroups per
// 128-row CTA, for MF_NSA_MMA_PATH=wgmma / sm_90a), and for D <= 64, n <= 32 steps 1-3 too
// (nsa_mma_cmp_kernel: bf16 kc tiles by cp.async straight into the mma staging;
// the products of bf16 q and kc are exact, so the scores that decide the
// selection are fp32 sums of the reference's own products); otherwise steps 1-3
// stay SIMT. On the wgmma path (MF_NSA_MMA_PATH: auto on a cc 9.0 GPU with this
// file's sm_90a code, or wgmma; host mode emulates it) nsa_wg_cmp_kernel runs
// steps 1-3 instead: the same CTAs as two m64 warpgroups, 64-key kc/vc tiles (both wgmma
// kernels schedule their two warpgroups ping-pong through named barriers, mf_bar.cuh). Backward, bf16 with
// D in {16, 32, 64, 128}: the selected and sliding branches on the tensor cores
// (nsa_mma_bwd_kernel, query-blocked like nsa_mma_fwd_kernel), and for D <= 64
// the compression branch too (nsa_mma_cmp_bwd_kernel, query-blocked like
// nsa_mma_cmp_kernel); D = 128: the compression branch SIMT (nsa_bwd_kernel, branches 1). Each block loops over
// its work items with a stride of gridDim.x; loop bounds depend on blockIdx
// and kernel arguments only, so every thread reaches every __syncthreads.
//
// The code is in optimized/nsa/, one file per role, included below in this order; this
// file is the one translation unit (built by nvcc and by host execution mode) and holds
// the exported entries:
//   common.cuh             includes, constants, NsaShape
//   pool.cuh               nsa_pool_kernel, nsa_kmax_kernel
//   fwd_simt.cuh           nsa_fwd_kernel (the SIMT forward)
//   mma_common.cuh         the tensor-core kernels' shared pieces (nsa_mma)
//   fwd_slc_win_mma.cuh    nsa_mma_fwd_kernel (selected and sliding branches, mma.sync)
//   fwd_slc_win_wgmma.cuh  nsa_wg_fwd_kernel (the same on wgmma, sm_90a)
//   fwd_cmp_mma.cuh        nsa_mma_cmp_kernel (compression branch, selection, certificate)
//   fwd_cmp_wgmma.cuh      nsa_wg_cmp_kernel (the same on wgmma, sm_90a)
//   recheck.cuh            nsa_recheck_kernel (uncertified selections ranked in double)
//   bwd_mma.cuh            nsa_mma_bwd_kernel, nsa_mma_cmp_bwd_kernel
//   bwd_simt.cuh           nsa_bwd_kernel, nsa_unpool_kernel
//   launch.cuh             launch_forward, launch_backward, the wgmma probe
#include "nsa/common.cuh"
#include "nsa/pool.cuh"
#include "nsa/fwd_simt.cuh"
#include "nsa/mma_common.cuh"
#include "nsa/fwd_slc_win_mma.cuh"
#include "nsa/fwd_slc_win_wgmma.cuh"
#include "nsa/fwd_cmp_mma.cuh"
#include "nsa/fwd_cmp_wgmma.cuh"
#include "nsa/recheck.cuh"
#include "nsa/bwd_mma.cuh"
#include "nsa/bwd_simt.cuh"
#include "nsa/launch.cuh"

// ---- exported entry point (called by src/ops/nsa.c after validation) ---------------------
extern "C" {

static MF_NS::NsaShape nsa_shape(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk,
                                 int64_t D)
{
    MF_NS::NsaShape sh;
    sh.B = (size_t)B;
    sh.S = (size_t)S;
    sh.Hq = (size_t)Hq;
    sh.Hk = (size_t)Hk;
    sh.D = (size_t)D;
    sh.G = sh.Hq / sh.Hk;
    sh.nc = (size_t)mf_nsa_n_compressed(cfg, S);
    sh.nb = (size_t)mf_nsa_n_selection(cfg, S);
    sh.l = (size_t)cfg->block_cmp;
    sh.d = (size_t)cfg->stride;
    sh.ls = (size_t)cfg->block_sel;
    sh.n = (size_t)cfg->n_sel;
    sh.w = (size_t)cfg->window;
    sh.carry = sh.l > sh.d ? (sh.l - sh.d - 1) / sh.ls + 1 : 0;
    sh.scale = cfg->scale > 0.0f ? cfg->scale : (float)(1.0 / std::sqrt((double)D));
    sh.scale_ref = cfg->scale > 0.0f ? (double)cfg->scale : 1.0 / std::sqrt((double)D);
    return sh;
}

MF_API mf_status MF_FN(nsa_fused_forward)(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                                          int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                                          const void *q, const void *k, const void *v, const void *g_cmp,
                                          const void *g_slc, const void *g_win, float *out, float *lse,
                                          int32_t *sel)
{
    const MF_NS::NsaShape sh = nsa_shape(cfg, B, S, Hq, Hk, D);
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_forward<__nv_bfloat16>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, out, lse, sel);
    return MF_NS::launch_forward<float>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, out, lse, sel);
}

MF_API mf_status MF_FN(nsa_fused_backward)(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                                           int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                                           const void *q, const void *k, const void *v, const void *g_cmp,
                                           const void *g_slc, const void *g_win, const void *dout,
                                           const float *lse, const int32_t *sel, float *dq, float *dk,
                                           float *dv, float *dg_cmp, float *dg_slc, float *dg_win)
{
    const MF_NS::NsaShape sh = nsa_shape(cfg, B, S, Hq, Hk, D);
    if (dtype == MF_DTYPE_BF16)
        return MF_NS::launch_backward<__nv_bfloat16>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, dout, lse, sel,
                                                     dq, dk, dv, dg_cmp, dg_slc, dg_win);
    return MF_NS::launch_backward<float>(ctx, sh, q, k, v, g_cmp, g_slc, g_win, dout, lse, sel, dq, dk, dv,
                                         dg_cmp, dg_slc, dg_win);
}

} // extern "C"
