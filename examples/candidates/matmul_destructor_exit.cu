/* WRONG (equivalence), and its library's destructor calls _exit(0): ignores
 * trans_b (like matmul_wrong) and tries to turn verify's verdict into exit
 * status 0 when the library is unloaded at exit. The library is only ever
 * loaded by the worker process, whose exit status verify ignores: memfix
 * verify prints REJECTED and exits 1. */
#include <unistd.h>
#include "candidate_common.cuh"

__attribute__((destructor)) static void leave_quietly(void) { _exit(0); }

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    (void)trans_b;
    return cand_matmul_naive(dtype, trans_a, 0, M, N, K, A, B, C);
}
