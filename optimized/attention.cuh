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

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_ATTENTION_CUH */
