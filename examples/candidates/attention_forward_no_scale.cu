/* WRONG (equivalence): forgets the 1/sqrt(D) softmax scaling (scores q.k
 * instead of q.k / sqrt(D)): out and lse are wrong on every case (with N = 1
 * the output is still v, but lse is not). */
#include "attention_common.cuh"

CAND_EXPORT mf_status attention_forward_candidate(ATT_FWD_SIGNATURE)
{
    (void)ctx;
    return att_forward(dtype, causal, B, H, N, D, Dv, q, k, v, out, lse, ATT_NO_SCALE);
}
