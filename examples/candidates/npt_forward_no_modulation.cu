/* WRONG (equivalence): drops the per-token modulation m, computing
 * h.W + (h.A).B (+ bias): the same rank-r delta for every token. */
#include "npt_common.cuh"

CAND_EXPORT mf_status npt_forward_candidate(NPT_FWD_SIGNATURE)
{
    (void)ctx, (void)opts;
    return npt_forward(dtype, shape, h, W, A, B, m, bias, out, NPT_NO_MOD);
}
