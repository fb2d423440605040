/* WRONG (selection): out and lse are right and sel holds the right blocks, but
 * listed by importance (forced blocks first) instead of in increasing order as
 * include/memfix/nsa.h specifies. memfix's backward, fed this sel, gives the
 * right gradients (the order of the blocks only reorders sums): only the exact
 * comparison of sel with the reference's rejects it. */
#include "nsa_common.cuh"

CAND_EXPORT mf_status nsa_forward_candidate(NSA_FWD_SIGNATURE)
{
    (void)ctx;
    return nsa_c_forward(dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, out, lse, sel,
                         NSA_SEL_BY_RANK);
}
