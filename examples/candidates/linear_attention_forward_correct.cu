/* A correct linear attention forward candidate (see linear_attention_common.cuh):
 * one thread per output in the quadratic form, in double, no scratch; the
 * initial state read and the final state written when given.
 * memfix verify --op linear_attention.forward accepts it. */
#include "linear_attention_common.cuh"

CAND_EXPORT mf_status linear_attention_forward_candidate(LA_FWD_SIGNATURE)
{
    (void)ctx, (void)chunk;
    return la_forward(dtype, causal, B, H, N, D, Dv, q, k, v, state, out, LA_OK);
}
