/* WRONG (equivalence): grad_h without the modulation, g.W^T + gB.A^T instead
 * of g.W^T + (gB * m).A^T; the other gradients are right. */
#include "npt_common.cuh"

CAND_EXPORT mf_status npt_backward_candidate(NPT_BWD_SIGNATURE)
{
    (void)ctx, (void)opts;
    return npt_backward(dtype, shape, h, W, A, B, m, grad_out, grad_h, grad_W, grad_A, grad_B, grad_m,
                        grad_bias, NPT_NO_MOD);
}
