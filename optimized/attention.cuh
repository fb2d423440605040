/* The kernel entries of optimized/attention.cu: the one declaration, included
 * by attention.cu (so the compiler checks each definition against it) and by
 * src/ops/attention.c (which calls them after validating the arguments).
 * mf_host_* are built by cudahost, mf_cuda_* by nvcc (mf_cuda.h). The types
 * (include/memfix/attention.h) are also those of `memfix verify` candidates. */
#ifndef MEMFIX_OPTIMIZED_ATTENTION_CUH
#define MEMFIX_OPTIMIZED_ATTENTION_CUH

#include "memfix/attention.h"

#ifdef __cplusplus
extern "C" {
#endif

mf_attention_forward_kernel_fn mf_host_attention_tiled_forward, mf_cuda_attention_tiled_forward;
mf_attention_backward_kernel_fn mf_host_attention_tiled_backward, mf_cuda_attention_tiled_backward;

/* The tensor-core kernels of optimized/attention_mma.cu, called by the tiled
 * entries above when they apply (library-internal, not exported):
 * attention_mma_applies: bf16, D == Dv in {64, 128}, q, k, v (and dout unless
 * NULL) 16-byte aligned. attention_mma_backward takes the caller's Delta
 * scratch (B*H*N floats) and overwrites dq, dk, dv (dq zeroed, then atomics). */
typedef int mf_attention_mma_applies_fn(mf_dtype dtype, int64_t D, int64_t Dv, const void *q, const void *k,
                                        const void *v, const void *dout);
typedef mf_status mf_attention_mma_forward_fn(mf_context *ctx, int causal, int64_t B, int64_t H, int64_t N,
                                              int64_t D, const void *q, const void *k, const void *v,
                                              float *out, float *lse);
typedef mf_status mf_attention_mma_backward_fn(mf_context *ctx, int causal, int64_t B, int64_t H, int64_t N,
                                               int64_t D, const void *q, const void *k, const void *v,
                                               const float *out, const void *dout, const float *lse,
                                               float *delta, float *dq, float *dk, float *dv);
mf_attention_mma_applies_fn mf_host_attention_mma_applies, mf_cuda_attention_mma_applies;
mf_attention_mma_forward_fn mf_host_attention_mma_forward, mf_cuda_attention_mma_forward;
mf_attention_mma_backward_fn mf_host_attention_mma_backward, mf_cuda_attention_mma_backward;

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_ATTENTION_CUH */
