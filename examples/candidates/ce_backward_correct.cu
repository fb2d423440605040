/* A correct cross_entropy backward candidate (see ce_backward_common.cuh): one
 * thread per gradient element, logits and probabilities recomputed in double.
 * memfix verify --op cross_entropy.backward accepts it. */
#include "ce_backward_common.cuh"

CAND_EXPORT mf_status ce_backward_candidate(CE_BWD_SIGNATURE)
{
    return ce_backward_impl(ctx, n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, labels, opts, lse,
                            grad_loss, grad_hidden, grad_weight, grad_bias, CEB_OK);
}
