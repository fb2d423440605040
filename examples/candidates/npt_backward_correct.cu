/* A correct NPT backward candidate (see npt_common.cuh): one thread per
 * gradient element, sums in double, no scratch.
 * memfix verify --op npt.backward accepts it. */
#include "npt_common.cuh"

CAND_EXPORT mf_status npt_backward_candidate(NPT_BWD_SIGNATURE)
{
    (void)ctx, (void)opts;
    return npt_backward(dtype, shape, h, W, A, B, m, grad_out, grad_h, grad_W, grad_A, grad_B, grad_m,
                        grad_bias, NPT_OK);
}
