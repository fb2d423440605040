// Fused linear cross-entropy (MF_CE_VARIANT_FUSED, Cut Cross-Entropy class):
// the logits never leave the chip, scratch is O(N) and independent of V.
//
// Seed document 000_15d34a4d5aa90e13.txt, bug 1 (the 37 GiB of logits). The
// chunked variant (cross_entropy.cu) bounds the logits to a budget-sized fp32
// tile in device memory; this variant keeps each logits tile on chip:
//
//   ce_fused_count_kernel    labels: n_valid and the first out-of-range row, in
//                            device memory (the mean's 1/n_valid is read there by
//                            the kernels below: no host copy, no mid-call sync)
//   ce_fused_fwd_mma_kernel  bf16: one CTA (8 warps) per 128-row block; streams
//                            128-column vocabulary tiles, z = hidden_blk . W_tile^T
//                            on mma.sync.m16n8k16 fed by ldmatrix from a cp.async
//                            double-buffered pipeline over D (32-wide slices), the
//                            tile in registers (64 fp32 per lane); bias, softcap,
//                            online max / sum-exp, target logit and smoothing sum
//                            in registers; writes lse[i] and the row loss only
//   ce_fused_bwd_mma_kernel  bf16: the same CTA walk, in strips of 4 tiles (512
//                            columns): recompute z, dL/dz in registers from lse,
//                            G -> shared memory (bf16, 128 x 512), then a second
//                            pass over D: warps 0-3 grad_hidden[blk] += G . W_strip
//                            (registers over the strip, one plain RMW per strip),
//                            warps 4-7 grad_W[tile] += G^T . hidden_blk (atomicAdd);
//                            grad_bias by shuffles + atomicAdd
//   ce_fused_fwd_wgmma_kernel, ce_fused_bwd_wgmma_kernel
//                            bf16 on sm_90a: the same walks with every product on
//                            wgmma.mma_async (the forward's logits: 128 x 256 tiles,
//                            m64n256k16 per warpgroup; the backward's recompute
//                            128 x 128, m64n128k16;
//                            the backward's G . W_strip and G^T . hidden
//                            m64n64k16 from G in a 128B-swizzled canonical layout
//                            and the stage's slices read MN-major)
//   ce_fused_fwd_kernel<float>, ce_fused_bwd_kernel<float>
//                            f32: the same algorithm on 64 x 64 tiles, 4 warps,
//                            fp32 FMAs (SIMT; G kept in fp32)
//   ce_fused_reduce_kernel   loss = sum of row losses (double, fixed order) x scale
//
// Accumulation order (stated in include/memfix/cross_entropy.h): a CTA owns its
// rows of grad_hidden and visits the vocabulary tiles in order, so grad_hidden
// is bitwise deterministic; grad_W and grad_bias receive fp32 atomicAdds, in the
// order the CTAs run (not deterministic in the last bits with several row
// blocks). Sizes, ptxas figures and the performance argument:
// docs/cross_entropy.md. All kernels run in host mode (cudahost/ emulates
// mma.sync, ldmatrix and cp.async).
//
// This file is the translation unit and holds the entry point; the rest is in
// cross_entropy_fused/ by role: tile_simt.cuh (the f32 tile), common.cuh (parameters, row
// statistics, the count and reduce kernels), tile_mma.cuh and tile_wgmma.cuh (the bf16
// tiles), fwd.cuh, bwd.cuh and launch.cuh.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"
#include "mf_wgmma.cuh"
#include "ce_device.cuh"
#include "cross_entropy.cuh"

#include <cuda_bf16.h>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "cross_entropy_fused/tile_simt.cuh"
#include "cross_entropy_fused/common.cuh"
#include "cross_entropy_fused/tile_mma.cuh"
#include "cross_entropy_fused/tile_wgmma.cuh"
#include "cross_entropy_fused/fwd.cuh"
#include "cross_entropy_fused/bwd.cuh"
#include "cross_entropy_fused/launch.cuh"

extern "C" mf_status MF_FN(cross_entropy_fused)(mf_context *ctx, const mf_ce_args *a)
{
    using namespace MF_NS;
    using namespace MF_NS::cce;
    if (ctx == nullptr || a == nullptr)
        return mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "ctx or args is NULL");
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const mf_cross_entropy_options &o = a->opts;
    const size_t N = (size_t)a->n_rows, D = (size_t)a->hidden_dim, V = (size_t)a->vocab;
    const size_t n_blocks = (N + kBM - 1) / kBM; // the f32 kernels' (bf16's 128-row blocks: fewer)
    if (n_blocks > MF_NS::kMaxGridX)
        return mf_set_error(MF_ERR_INVALID_SIZE, __func__, __FILE__, __LINE__,
                            "%zu rows need more than %zu blocks", N, (size_t)MF_NS::kMaxGridX);
    const bool forward = a->mode != MF_CE_MODE_BACKWARD;
    const bool backward = a->mode != MF_CE_MODE_FORWARD;
    const bool bf16 = a->dtype == MF_DTYPE_BF16;
    const bool per_row = o.reduction == MF_CE_REDUCTION_NONE;
    const int64_t shift_len = o.shift_labels ? (o.seq_len > 0 ? o.seq_len : a->n_rows) : 0;
    bool wg = false; // bf16: the wgmma kernels (sm_90a) rather than the mma.sync ones
    if (bf16) MF_TRY(pick_wgmma(stream, o, &wg));

    // Scratch (mf_cross_entropy_fused_scratch_bytes): counters, row losses
    // (forward with mean/sum), lse (forward+backward without a caller lse).
    Scratch counters(ctx), row_loss(ctx), lse_buf(ctx);
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, 2 * sizeof(int64_t), &counters.ptr));
    int64_t *d_counters = static_cast<int64_t *>(counters.ptr);
    if (forward && !per_row) MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, N * sizeof(float), &row_loss.ptr));
    float *lse = a->mode == MF_CE_MODE_BACKWARD ? nullptr : a->lse_out;
    if (a->mode == MF_CE_MODE_FORWARD_BACKWARD && lse == nullptr) {
        MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, N * sizeof(float), &lse_buf.ptr));
        lse = static_cast<float *>(lse_buf.ptr);
    }

    ce_fused_count_kernel<<<1, 256, 0, stream>>>(a->labels, N, shift_len, o.ignore_index, a->vocab,
                                                 d_counters);
    MF_LAUNCH_CHECK();

    FusedParams p;
    p.N = N;
    p.D = D;
    p.V = V;
    p.shift_len = shift_len;
    p.ignore_index = o.ignore_index;
    p.eps = o.label_smoothing;
    p.lambda = o.z_loss;
    p.cap = o.softcap;
    p.filter = o.grad_filter;
    p.counters = d_counters;
    p.mean = o.reduction == MF_CE_REDUCTION_MEAN;
    p.grad_loss = a->grad_loss;
    p.grad_per_row = per_row;
    p.lse_in = nullptr;
    p.lse_out = nullptr;
    p.row_loss = nullptr;

    if (forward) {
        p.lse_out = lse;
        p.row_loss = per_row ? a->loss : static_cast<float *>(row_loss.ptr);
        MF_TRY(launch_fwd(stream, bf16, wg, a, p));
        if (!per_row) {
            ce_fused_reduce_kernel<<<1, 256, 0, stream>>>(static_cast<const float *>(row_loss.ptr), N,
                                                          d_counters, p.mean, a->loss);
            MF_LAUNCH_CHECK();
        }
    }
    if (backward) {
        // grad_W and grad_bias are accumulated with atomics, grad_hidden by its
        // owning CTA: all start from zero.
        if (a->grad_hidden != nullptr)
            MF_CUDA_CHECK(cudaMemsetAsync(a->grad_hidden, 0, N * D * sizeof(float), stream));
        if (a->grad_weight != nullptr)
            MF_CUDA_CHECK(cudaMemsetAsync(a->grad_weight, 0, V * D * sizeof(float), stream));
        if (a->grad_bias != nullptr)
            MF_CUDA_CHECK(cudaMemsetAsync(a->grad_bias, 0, V * sizeof(float), stream));
        p.lse_in = a->mode == MF_CE_MODE_BACKWARD ? a->lse_in : lse;
        p.lse_out = nullptr;
        p.row_loss = nullptr;
        MF_TRY(launch_bwd(stream, bf16, wg, a, p));
    }

    // The first out-of-range label (counters[1]) is a deferred check of the
    // context: copied to page-locked memory without waiting and reported by
    // the next synchronization (src/ops/cross_entropy.c). No read-back, no sync.
    MF_TRY(mf_cross_entropy_defer_label_check(ctx, __func__, d_counters + 1, a->labels, (int64_t)N,
                                              shift_len != 0, (int64_t)V, o.ignore_index));
    return MF_OK;
}
