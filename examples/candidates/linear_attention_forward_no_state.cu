/* WRONG (equivalence): ignores the initial state (S0, z0 taken as zeros), as if
 * every call started a new sequence: right on the bidirectional runs (no
 * state), wrong on the causal ones, which carry a state. */
#include "linear_attention_common.cuh"

CAND_EXPORT mf_status linear_attention_forward_candidate(LA_FWD_SIGNATURE)
{
    (void)ctx, (void)chunk;
    return la_forward(dtype, causal, B, H, N, D, Dv, q, k, v, state, out, LA_NO_INITIAL_STATE);
}
