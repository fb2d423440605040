/* WRONG (equivalence): adds the compression branch without its gate g_cmp
 * (o = o_cmp + g_slc o_slc + g_win o_win): out is wrong wherever a compressed
 * block is visible; lse and the selection are right. */
#include "nsa_common.cuh"

CAND_EXPORT mf_status nsa_forward_candidate(NSA_FWD_SIGNATURE)
{
    (void)ctx;
    return nsa_c_forward(dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, out, lse, sel,
                         NSA_UNGATED_CMP);
}
