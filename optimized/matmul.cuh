/* The kernel entries of optimized/matmul.cu: the one declaration, included by
 * matmul.cu (so the compiler checks each definition against it) and by
 * src/ops/matmul.c (which calls them after validating the arguments).
 * Every .cu is compiled twice (mf_cuda.h): by cudahost, exporting mf_host_*,
 * and by nvcc, exporting mf_cuda_*. The signature is mf_matmul_kernel_fn
 * (include/memfix/matmul.h), which is also a `memfix verify` candidate's. */
#ifndef MEMFIX_OPTIMIZED_MATMUL_CUH
#define MEMFIX_OPTIMIZED_MATMUL_CUH

#include "memfix/matmul.h"

#ifdef __cplusplus
extern "C" {
#endif

mf_matmul_kernel_fn mf_host_matmul_naive, mf_host_matmul_tiled, mf_host_matmul_cublas;
mf_matmul_kernel_fn mf_cuda_matmul_naive, mf_cuda_matmul_tiled, mf_cuda_matmul_cublas;

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_MATMUL_CUH */
