/* A correct attention backward candidate (see attention_common.cuh): dq by one
 * thread per query row, dk and dv by one thread per key row, probabilities
 * recomputed from lse in double, no scratch.
 * memfix verify --op attention.backward accepts it. */
#include "attention_common.cuh"

CAND_EXPORT mf_status attention_backward_candidate(ATT_BWD_SIGNATURE)
{
    (void)ctx;
    return att_backward(dtype, causal, B, H, N, D, Dv, q, k, v, out, dout, lse, dq, dk, dv, ATT_OK);
}
