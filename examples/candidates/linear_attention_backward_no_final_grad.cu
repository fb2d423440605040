/* WRONG (equivalence): ignores the final state's gradients (dS_N, dz_N taken as
 * zeros), dropping whatever the next chunk of the sequence sent back: right on
 * the bidirectional runs, wrong on the causal ones. */
#include "linear_attention_common.cuh"

CAND_EXPORT mf_status linear_attention_backward_candidate(LA_BWD_SIGNATURE)
{
    (void)chunk;
    return la_backward(ctx, dtype, causal, B, H, N, D, Dv, q, k, v, out, dout, state, grad, dq, dk, dv,
                       LA_NO_FINAL_GRAD);
}
