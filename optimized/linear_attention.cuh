/* The kernel entries of optimized/linear_attention.cu: the one declaration,
 * included by linear_attention.cu (so the compiler checks each definition
 * against it) and by src/ops/linear_attention.c (which calls them after
 * validating the arguments). mf_host_* are built by cudahost, mf_cuda_* by nvcc
 * (mf_cuda.h). The entries have the public functions' types
 * (include/memfix/linear_attention.h), which are also `memfix verify`
 * candidates'. */
#ifndef MEMFIX_OPTIMIZED_LINEAR_ATTENTION_CUH
#define MEMFIX_OPTIMIZED_LINEAR_ATTENTION_CUH

#include "memfix/linear_attention.h"

#ifdef __cplusplus
extern "C" {
#endif

mf_linear_attention_forward_fn mf_host_linear_attention_forward, mf_cuda_linear_attention_forward;
mf_linear_attention_backward_fn mf_host_linear_attention_backward, mf_cuda_linear_attention_backward;

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_LINEAR_ATTENTION_CUH */
