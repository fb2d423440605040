/* WRONG (timeout): an endless loop in host code on the case M=17 N=33 K=19
 * ta=0 tb=0 (a correct kernel otherwise). verify used to hang forever; the worker is now
 * killed after --timeout seconds and that case is rejected by `timeout`. */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    volatile int spin = K == 19 && !trans_a && !trans_b;
    while (spin) {
    }
    return cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
}
