/* A correct NPT forward candidate (see npt_common.cuh): one thread per output,
 * h.W + ((h.A) * m).B + bias summed in double, no scratch.
 * memfix verify --op npt.forward accepts it. */
#include "npt_common.cuh"

CAND_EXPORT mf_status npt_forward_candidate(NPT_FWD_SIGNATURE)
{
    (void)ctx, (void)opts;
    return npt_forward(dtype, shape, h, W, A, B, m, bias, out, NPT_OK);
}
