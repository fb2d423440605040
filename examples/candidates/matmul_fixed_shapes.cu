/* CHEATING (random cases): correct only on the shapes of matmul's fixed cases,
 * which it detects; on any other shape it skips the last row of C (left NaN).
 * Accepted by the fixed cases alone; rejected on every random case. */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    static const int64_t known[][3] = { { 1, 1, 1 },    { 17, 33, 19 }, { 1000, 3, 5 },
                                        { 3, 1000, 7 }, { 4, 5, 4096 }, { 64, 48, 80 } };
    int fixed = 0;
    for (unsigned i = 0; i < sizeof known / sizeof known[0]; i++)
        fixed |= known[i][0] == M && known[i][1] == N && known[i][2] == K;
    return cand_matmul_naive_ex(dtype, trans_a, trans_b, M, N, K, fixed ? M : M - 1, 0, A, B, C);
}
