// Optimized linear attention: the causal form in chunks, without the cumsum.
//
// Seed document 003 ("Memory Profiling"), linear_attention_causal: kv_cumsum =
// cumsum(einsum('bhnd,bhnv->bhndv', k, v), dim=2) materializes B*H*N*D*Dv
// ("The naive causal implementation materializes the entire cumulative
// state"); its first listed fix is "Chunked processing (only keep current
// state)". Here a block walks the sequence in chunks of C positions, keeping
// the running state S (D x Dv; a 32-column or 32-row slice of it per block)
// and the normalizer's D-vector z in shared memory:
//   out_n = (q'_n^T S_prev + sum_{m<=n in chunk} (q'_n . k'_m) v_m^T) / den_n
//   den_n = q'_n . z_prev + sum_{m<=n in chunk} q'_n . k'_m + eps
// (within the chunk the masked C x C products, in 16 x 16 sub-tiles), then
// S += K'_c^T V_c and z += sum k'_m. See include/memfix/linear_attention.h for
// the math of the backward pass, which recomputes the states chunk by chunk.
//
// Two paths. bf16 causal runs on tensor cores in the chunk form (the la_tc_*
// kernels, described in linear_attention/chunk_state.cuh); fp32, and the bidirectional form,
// run these SIMT fp32 kernels (blocks of kThreads = 128, sub-tiles of kSub = 16
// positions, state slices of kSlice = 32 rows or columns; all shared memory
// static, ~36 KiB):
//   la_fwd_kernel       (b, h, 32 columns of S): out, the final state
//   la_rowstats_kernel  (b, h, 64-row tile; shared with the tensor-core path):
//                        den_n and dd_n = -(dout_n . out_n) / den_n
//   la_dq_kernel        (b, h, 32 rows of S): forward sweep carrying S, z
//   la_dk_kernel        (b, h, 32 rows of G): reverse sweep carrying G, g;
//                        also writes the initial state's gradients
//   la_dv_kernel        (b, h, 32 columns of G): reverse sweep carrying G
// The bidirectional form runs the same kernels in two phases: first the full
// state (S, z or G, g) over every position, then the outputs from it with no
// intra-chunk term. Loop bounds depend on blockIdx and kernel arguments only,
// so every thread of a block reaches every __syncthreads.
//
// This file is the translation unit: the kernels and launchers are in linear_attention/
// by role (common.cuh: constants, staging and SIMT helpers; simt_fwd.cuh, simt_bwd.cuh;
// chunk_state.cuh: chunk states, scan, row statistics; tc_tile.cuh: the tensor-core tiles;
// launch.cuh), the exported entry points below.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "mf_mma.cuh"
#include "linear_attention.cuh"

#include <cuda_bf16.h>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "linear_attention/common.cuh"
#include "linear_attention/simt_fwd.cuh"
#include "linear_attention/simt_bwd.cuh"
#include "linear_attention/chunk_state.cuh"
#include "linear_attention/tc_tile.cuh"
#include "linear_attention/launch.cuh"

// ---- exported entry points (called by src/ops/linear_attention.c after validation) ------------
extern "C" {

MF_API mf_status MF_FN(linear_attention_forward)(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk,
                                                 int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                                                 const void *q, const void *k, const void *v,
                                                 const mf_linear_attention_state *state, float *out)
{
    using namespace MF_NS;
    if (!use_tc(dtype, causal)) {
        if (dtype == MF_DTYPE_BF16)
            return launch_forward<bf16>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, state, out);
        return launch_forward<float>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, state, out);
    }
    // the chunk states (mf_linear_attention_scratch_ceiling bounds them), freed when
    // 'scratch' goes out of scope
    const size_t bh = (size_t)B * (size_t)H;
    Scratch scratch(ctx);
    const mf_status st = mf_scratch_alloc(
        ctx, MF_MEM_DEVICE, scratch_floats(dtype, causal, 0, bh, N, D, Dv) * sizeof(float), &scratch.ptr);
    if (st != MF_OK) return st;
    const mf_linear_attention_state none = { nullptr, nullptr, nullptr, nullptr };
    return launch_forward_tc(ctx, bh, N, D, Dv, static_cast<const bf16 *>(q), static_cast<const bf16 *>(k),
                             static_cast<const bf16 *>(v), state != nullptr ? *state : none, out,
                             static_cast<float *>(scratch.ptr));
}

MF_API mf_status MF_FN(linear_attention_backward)(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk,
                                                  int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                                                  const void *q, const void *k, const void *v,
                                                  const float *out, const void *dout,
                                                  const mf_linear_attention_state *state,
                                                  const mf_linear_attention_state_grad *grad, float *dq,
                                                  float *dk, float *dv)
{
    using namespace MF_NS;
    // den_n and dd_n for every position, and the chunk states: the only device scratch
    // (mf_linear_attention_scratch_ceiling bounds it), freed when 'sc' goes out of scope.
    const size_t bh = (size_t)B * (size_t)H;
    Scratch sc(ctx);
    const mf_status st = mf_scratch_alloc(
        ctx, MF_MEM_DEVICE, scratch_floats(dtype, causal, 1, bh, N, D, Dv) * sizeof(float), &sc.ptr);
    if (st != MF_OK) return st;
    float *scratch = static_cast<float *>(sc.ptr);
    if (use_tc(dtype, causal)) {
        const mf_linear_attention_state none = { nullptr, nullptr, nullptr, nullptr };
        const mf_linear_attention_state_grad gnone = { nullptr, nullptr, nullptr, nullptr };
        return launch_backward_tc(ctx, bh, N, D, Dv, static_cast<const bf16 *>(q),
                                  static_cast<const bf16 *>(k), static_cast<const bf16 *>(v), out,
                                  static_cast<const bf16 *>(dout), state != nullptr ? *state : none,
                                  grad != nullptr ? *grad : gnone, scratch, dq, dk, dv);
    }
    if (dtype == MF_DTYPE_BF16)
        return launch_backward<bf16>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, out, dout, state, grad,
                                     scratch, dq, dk, dv);
    return launch_backward<float>(ctx, causal, chunk, B, H, N, D, Dv, q, k, v, out, dout, state, grad,
                                  scratch, dq, dk, dv);
}

} // extern "C"
