/* A correct linear attention backward candidate (see linear_attention_common.cuh):
 * den_n and dd_n in 8*B*H*N bytes of scratch (the ceiling), then one thread per
 * gradient element in double; the state's gradients read and written when given.
 * memfix verify --op linear_attention.backward accepts it. */
#include "linear_attention_common.cuh"

CAND_EXPORT mf_status linear_attention_backward_candidate(LA_BWD_SIGNATURE)
{
    (void)chunk;
    return la_backward(ctx, dtype, causal, B, H, N, D, Dv, q, k, v, out, dout, state, grad, dq, dk, dv,
                       LA_OK);
}
