/* WRONG (exit): a correct kernel that calls exit(0) on its third call. Run in
 * verify's own process, it would end memfix with status 0 and no output (the
 * issue-16 report); in the worker process it ends only the worker: the case
 * that made the third call is rejected by `exit`, and verify's exit status
 * is 1. */
#include <stdlib.h>
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    static int calls;
    if (++calls == 3) exit(0);
    return cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
}
