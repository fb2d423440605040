/* RED TEAM (hang): correct on its first call, an endless loop in host code on
 * every later one (the determinism call of verify's first case). */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    static int calls;
    if (++calls >= 2)
        for (volatile int spin = 1; spin;) {
        }
    return cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
}
