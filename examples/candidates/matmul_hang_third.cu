/* WRONG (timeout): a correct kernel that never returns from every third call (an endless loop in host
 * code). With the default time limit, derived from memfix's own time on the case (at least
 * MF_VERIFY_TIMEOUT_FLOOR_S), and a hang judged once, verify rejects it by `timeout` within seconds and
 * reports the cases after it as not run (test_verify_cli_hang_third.host). */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    static int calls;
    volatile int spin = ++calls % 3 == 0;
    while (spin) {
    }
    return cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
}
