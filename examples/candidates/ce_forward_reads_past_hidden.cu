/* WRONG (reads past an input): right in every value it computes, but each row
 * "prefetches" the first 8 elements of the next row and multiplies them by
 * zero, so the last row reads past the end of hidden. On a GPU that is finite
 * garbage times 0 (accepted by a test that only compares outputs); verify
 * puts MF_TB_GUARD NaNs after every input, so 0 x NaN reaches the loss. */
#include "ce_forward_common.cuh"

CAND_EXPORT mf_status ce_forward_candidate(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                           mf_dtype dtype, const void *hidden, const void *weight,
                                           const void *bias, const int64_t *labels,
                                           const mf_cross_entropy_options *opts, float *loss, float *lse)
{
    return ce_forward_impl(ctx, n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, labels, opts, loss,
                           lse, CE_FLAW_READ_PAST);
}
