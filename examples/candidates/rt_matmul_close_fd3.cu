/* RED TEAM (isolation): ignores trans_b; on its second call it puts /dev/null
 * on file descriptor 3 (verify's socket in the worker) and writes a forged
 * "answer" there and to fd 4..7, hoping its verdict is never read. */
#include <fcntl.h>
#include <unistd.h>
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    (void)trans_b;
    static int calls;
    if (++calls == 2) {
        static const unsigned char junk[64] = { 0x52, 0x56, 0x46, 0x4d }; /* "RVFM": the answer's magic */
        for (int fd = 4; fd < 8; fd++)
            if (write(fd, junk, sizeof junk) < 0) {
            }
        const int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 3);
            close(nul);
        }
    }
    return cand_matmul_naive(dtype, trans_a, 0, M, N, K, A, B, C);
}
