/* A correct attention forward candidate (see attention_common.cuh): one thread
 * per query row, two passes over the keys (max, then sum and weighted values)
 * in double, no scratch. memfix verify --op attention.forward accepts it. */
#include "attention_common.cuh"

CAND_EXPORT mf_status attention_forward_candidate(ATT_FWD_SIGNATURE)
{
    (void)ctx;
    return att_forward(dtype, causal, B, H, N, D, Dv, q, k, v, out, lse, ATT_OK);
}
