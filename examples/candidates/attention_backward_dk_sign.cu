/* WRONG (equivalence): dk with the wrong sign (-dS^T q / sqrt(D)). Caught on
 * every case but N = 1, where dS (and so dk) is zero. */
#include "attention_common.cuh"

CAND_EXPORT mf_status attention_backward_candidate(ATT_BWD_SIGNATURE)
{
    (void)ctx;
    return att_backward(dtype, causal, B, H, N, D, Dv, q, k, v, out, dout, lse, dq, dk, dv, ATT_DK_SIGN);
}
