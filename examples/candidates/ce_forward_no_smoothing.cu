/* WRONG (equivalence): ignores opts->label_smoothing (right on every case
 * without smoothing, wrong loss on the others). */
#include "ce_forward_common.cuh"

CAND_EXPORT mf_status ce_forward_candidate(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                           mf_dtype dtype, const void *hidden, const void *weight,
                                           const void *bias, const int64_t *labels,
                                           const mf_cross_entropy_options *opts, float *loss, float *lse)
{
    return ce_forward_impl(ctx, n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, labels, opts, loss,
                           lse, CE_FLAW_NO_SMOOTHING);
}
