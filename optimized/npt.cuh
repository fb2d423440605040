/* The kernel entries of optimized/npt.cu (the factored variant): the one
 * declaration, included by npt.cu (so the compiler checks each definition
 * against it) and by src/ops/npt.c (which validates the arguments and resolves
 * the token chunk first). mf_host_* are built by cudahost, mf_cuda_* by nvcc
 * (mf_cuda.h). chunk: tokens per chunk (mf_npt_resolve_chunk, >= 1). */
#ifndef MEMFIX_OPTIMIZED_NPT_CUH
#define MEMFIX_OPTIMIZED_NPT_CUH

#include "memfix/npt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef mf_status mf_npt_factored_forward_fn(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape,
                                             int64_t chunk, const void *h, const void *W, const void *A,
                                             const void *B, const void *m, const void *bias, void *out);
typedef mf_status mf_npt_factored_backward_fn(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape,
                                              int64_t chunk, const void *h, const void *W, const void *A,
                                              const void *B, const void *m, const void *grad_out,
                                              void *grad_h, void *grad_W, void *grad_A, void *grad_B,
                                              void *grad_m, void *grad_bias);

mf_npt_factored_forward_fn mf_host_npt_factored_forward, mf_cuda_npt_factored_forward;
mf_npt_factored_backward_fn mf_host_npt_factored_backward, mf_cuda_npt_factored_backward;

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_NPT_CUH */
