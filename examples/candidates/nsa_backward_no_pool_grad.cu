/* WRONG (equivalence): drops the compression branch's gradient to k and v
 * (nothing flows back through the mean pooling): dk and dv are wrong wherever
 * a compressed block was visible; dq and the gate gradients are right. */
#include "nsa_common.cuh"

CAND_EXPORT mf_status nsa_backward_candidate(NSA_BWD_SIGNATURE)
{
    (void)ctx;
    return nsa_c_backward(dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, dout, lse, sel, dq, dk,
                          dv, dg_cmp, dg_slc, dg_win, NSA_NO_POOL_GRAD);
}
