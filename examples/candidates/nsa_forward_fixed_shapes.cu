/* CHEATING (random cases): correct only on the shapes of nsa's fixed cases,
 * which it detects; on any other shape it drops the compressed branch's gate
 * (the flaw of nsa_forward_ungated_cmp). Accepted by the fixed cases alone
 * (--cases 0); rejected by equivalence on the random cases. */
#include "nsa_common.cuh"

CAND_EXPORT mf_status nsa_forward_candidate(NSA_FWD_SIGNATURE)
{
    (void)ctx;
    static const int64_t known[][5] = { { 1, 45, 2, 1, 8 },
                                        { 1, 77, 6, 1, 64 },
                                        { 1, 50, 12, 2, 64 },
                                        { 2, 20, 2, 2, 16 },
                                        { 2, 70, 4, 2, 16 } };
    int fixed = 0;
    for (unsigned i = 0; i < sizeof known / sizeof known[0]; i++)
        fixed |= known[i][0] == B && known[i][1] == S && known[i][2] == Hq && known[i][3] == Hk &&
                 known[i][4] == D;
    return nsa_c_forward(dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, out, lse, sel,
                         fixed ? NSA_OK : NSA_UNGATED_CMP);
}
