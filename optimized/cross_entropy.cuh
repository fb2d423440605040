/* The kernel entries of optimized/cross_entropy.cu (chunked) and
 * optimized/cross_entropy_fused.cu (fused) and their argument struct: the
 * one declaration, included by cross_entropy.cu (so the compiler checks the
 * definition against it) and by src/ops/cross_entropy.c, whose public
 * functions validate the arguments, plan the chunks and fill mf_ce_args.
 * mf_host_* is built by cudahost, mf_cuda_* by nvcc (mf_cuda.h). */
#ifndef MEMFIX_OPTIMIZED_CROSS_ENTROPY_CUH
#define MEMFIX_OPTIMIZED_CROSS_ENTROPY_CUH

#include "memfix/cross_entropy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mf_ce_mode {
    MF_CE_MODE_FORWARD = 0,
    MF_CE_MODE_FORWARD_BACKWARD = 1,
    MF_CE_MODE_BACKWARD = 2
} mf_ce_mode;

typedef struct mf_ce_args {
    mf_ce_mode mode;
    int64_t n_rows, hidden_dim, vocab;
    mf_dtype dtype;
    const void *hidden, *weight, *bias;
    const int64_t *labels;
    mf_cross_entropy_options opts; /* validated */
    mf_cross_entropy_plan_info plan;
    const float *grad_loss; /* NULL = 1 */
    const float *lse_in;    /* backward */
    float *loss, *lse_out;
    float *grad_hidden, *grad_weight, *grad_bias;
} mf_ce_args;

typedef mf_status mf_ce_chunked_fn(mf_context *ctx, const mf_ce_args *args);
mf_ce_chunked_fn mf_host_cross_entropy_chunked, mf_cuda_cross_entropy_chunked;
/* optimized/cross_entropy_fused.cu (MF_CE_VARIANT_FUSED); args->plan unused. */
mf_ce_chunked_fn mf_host_cross_entropy_fused, mf_cuda_cross_entropy_fused;
/* Whether the fused kernels' wgmma path can run on ctx's device (mf_cross_entropy_wgmma_available). */
typedef mf_status mf_wgmma_available_fn(mf_context *ctx, int *available);
mf_wgmma_available_fn mf_host_cross_entropy_wgmma_available, mf_cuda_cross_entropy_wgmma_available;

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_CROSS_ENTROPY_CUH */
