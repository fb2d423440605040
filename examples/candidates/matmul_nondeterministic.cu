/* WRONG (determinism): every other call sums K in reverse order, so the result
 * is within tolerance of the reference but its bits change from call to call. */
#include "candidate_common.cuh"

static int calls;

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    return cand_matmul_naive_ex(dtype, trans_a, trans_b, M, N, K, M, calls++ & 1, A, B, C);
}
