/* WRONG (equivalence): ignores the upstream gradient grad_loss (as if it were
 * 1): gradients scaled wrongly on every case (grad_loss is drawn in [0.5, 1.5)). */
#include "ce_backward_common.cuh"

CAND_EXPORT mf_status ce_backward_candidate(CE_BWD_SIGNATURE)
{
    return ce_backward_impl(ctx, n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, labels, opts, lse,
                            grad_loss, grad_hidden, grad_weight, grad_bias, CEB_NO_GRAD_LOSS);
}
