/* A correct native-sparse-attention forward candidate (see nsa_common.cuh):
 * one thread per (b, t, KV group), every score recomputed in double, top n by
 * repeated arg-max, no scratch.
 * memfix verify --op nsa.forward accepts it. */
#include "nsa_common.cuh"

CAND_EXPORT mf_status nsa_forward_candidate(NSA_FWD_SIGNATURE)
{
    (void)ctx;
    return nsa_c_forward(dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, out, lse, sel, NSA_OK);
}
