/* The kernel entries of optimized/cross_entropy.cu (chunked) and
 * optimized/cross_entropy_fused.cu (fused), their argument struct and the
 * label check they enqueue: the one declaration, included by cross_entropy.cu
 * (so the compiler checks the definition against it) and by
 * src/ops/cross_entropy.c, whose public functions validate the arguments, plan
 * the chunks and fill mf_ce_args.
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
/* The label check both entries enqueue, without waiting (src/core/mf_deferred.h;
 * defined in src/ops/cross_entropy.c): *d_first_bad (device) is the first row
 * whose label is outside [0, vocab) and not ignore_index, or n_rows when none;
 * the context's next synchronizing call reports MF_ERR_OUT_OF_RANGE naming
 * func, the row and the label (labels[row + 1] when 'shifted'). */
mf_status mf_cross_entropy_defer_label_check(mf_context *ctx, const char *func, const int64_t *d_first_bad,
                                             const int64_t *labels, int64_t n_rows, int shifted,
                                             int64_t vocab, int64_t ignore_index);
/* Whether the fused kernels' wgmma path can run on ctx's device (mf_cross_entropy_wgmma_available). */
typedef mf_status mf_wgmma_available_fn(mf_context *ctx, int *available);
mf_wgmma_available_fn mf_host_cross_entropy_wgmma_available, mf_cuda_cross_entropy_wgmma_available;

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_CROSS_ENTROPY_CUH */
