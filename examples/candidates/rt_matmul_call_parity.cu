/* RED TEAM (calls): correct on odd-numbered calls, ignores trans_b on even ones
 * (a cache keyed on the call count). */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    static unsigned calls;
    const int tb = ++calls % 2 == 0 ? 0 : trans_b;
    return cand_matmul_naive(dtype, trans_a, tb, M, N, K, A, B, C);
}
