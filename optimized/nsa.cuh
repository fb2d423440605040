/* The kernel entries of optimized/nsa.cu: the one declaration, included by
 * nsa.cu (so the compiler checks each definition against it) and by
 * src/ops/nsa.c (which calls them after validating the arguments). mf_host_*
 * are built by cudahost, mf_cuda_* by nvcc (mf_cuda.h). The types
 * (include/memfix/nsa.h) are also those of `memfix verify` candidates. */
#ifndef MEMFIX_OPTIMIZED_NSA_CUH
#define MEMFIX_OPTIMIZED_NSA_CUH

#include "memfix/nsa.h"

#ifdef __cplusplus
extern "C" {
#endif

mf_nsa_forward_kernel_fn mf_host_nsa_fused_forward, mf_cuda_nsa_fused_forward;
mf_nsa_backward_kernel_fn mf_host_nsa_fused_backward, mf_cuda_nsa_fused_backward;
/* Whether the forward's wgmma path can run on ctx's device (mf_nsa_wgmma_available). */
typedef mf_status mf_nsa_wgmma_available_fn(mf_context *ctx, int *available);
mf_nsa_wgmma_available_fn mf_host_nsa_wgmma_available, mf_cuda_nsa_wgmma_available;

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_NSA_CUH */
