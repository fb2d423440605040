/* RED TEAM (isolation): ignores trans_b, and on its first call sends SIGTERM to
 * its parent process (memfix verify) so that no verdict is ever printed. */
#include <signal.h>
#include <unistd.h>
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    (void)trans_b;
    static int calls;
    if (++calls == 1) kill(getppid(), SIGTERM);
    return cand_matmul_naive(dtype, trans_a, 0, M, N, K, A, B, C);
}
