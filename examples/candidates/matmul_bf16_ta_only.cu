/* WRONG (random cases): for bf16 with (trans_a = 1, trans_b = 0) reads A as if
 * it were not transposed; right on every other combination (the fixed cases
 * have no bf16 (1, 0) case). */
#include "candidate_common.cuh"

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    const int ta = dtype == MF_DTYPE_BF16 && trans_a && !trans_b ? 0 : trans_a;
    return cand_matmul_naive(dtype, ta, trans_b, M, N, K, A, B, C);
}
