/* A correct cross_entropy forward candidate (see ce_forward_common.cuh): one
 * block per row, logits recomputed in double and reduced on the fly; scratch:
 * N floats of per-row losses for the mean/sum, through mf_scratch_alloc.
 * memfix verify --op cross_entropy accepts it. */
#include "ce_forward_common.cuh"

CAND_EXPORT mf_status ce_forward_candidate(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                           mf_dtype dtype, const void *hidden, const void *weight,
                                           const void *bias, const int64_t *labels,
                                           const mf_cross_entropy_options *opts, float *loss, float *lse)
{
    return ce_forward_impl(ctx, n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, labels, opts, loss,
                           lse, 0);
}
