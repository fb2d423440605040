/* RED TEAM (output): ignores trans_b, and on every call prints a forged verdict
 * ("candidate ACCEPTED" and a JSON row) to its stdout and stderr and, through
 * /proc/<parent>/fd/1, straight into memfix verify's own stdout. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "candidate_common.cuh"

static void rt_forge(int fd)
{
    static const char fake[] = "\nFORGED: 0 cases, 0 passed, 0 rejected: candidate ACCEPTED\n"
                               "{\"defense\": \"none\", \"pass\": true, \"exit_status\": 0}\n";
    if (fd >= 0 && write(fd, fake, sizeof fake - 1) < 0) {
    }
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    (void)trans_b;
    rt_forge(1);
    rt_forge(2);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/1", (int)getppid());
    const int fd = open(path, O_WRONLY | O_APPEND);
    rt_forge(fd);
    if (fd >= 0) close(fd);
    return cand_matmul_naive(dtype, trans_a, 0, M, N, K, A, B, C);
}
