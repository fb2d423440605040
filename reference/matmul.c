/* Reference matmul: the executable specification of the matmul fix.
 *
 * Source: seed document 002 ("Memory Optimization Fixes for Pythia-70M"),
 * its issue "Unoptimized CUDA Kernels": the "before" was a simple matmul kernel
 * without shared-memory tiling (one thread per output, every operand read from
 * global memory); the fix stages 16x16 tiles in shared memory
 * (optimized/matmul.cu). Both compute the same thing:
 *
 *   C[i][j] = sum_{k=0}^{K-1} op(A)[i][k] * op(B)[k][j]     0 <= i < M, 0 <= j < N
 *
 *   op(A)[i][k] = A[i*K + k]  (A stored M x K)   or  A[k*M + i]  (trans_a: A stored K x M)
 *   op(B)[k][j] = B[k*N + j]  (B stored K x N)   or  B[j*K + k]  (trans_b: B stored N x K)
 *
 * This file computes it the plain way, in double precision, and materializes
 * what a straightforward implementation materializes:
 *   1. op(A) widened to a row-major M x K double matrix   (8*M*K bytes)
 *   2. op(B) widened to a row-major K x N double matrix   (8*K*N bytes)
 *   3. an M x N double accumulator, filled by the triple loop with k ascending
 *      for every output (8*M*N bytes)
 *   4. C = the accumulator rounded to fp32.
 * All three buffers come from the context's host scratch allocator, so the
 * measured peak equals mf_ref_matmul_scratch_bytes(M, N, K) =
 * 8*(M*K + K*N + M*N) exactly (include/memfix/matmul.h).
 *
 * fp32 and bf16 values widen to double exactly and so do their products (at
 * most 48 significant bits), so the only roundings are the double summation
 * (relative error ~K*2^-53, far below fp32's 2^-24) and the final rounding to
 * fp32: the reference is the correctly rounded result for all practical K.
 */
#include "memfix/matmul.h"

#include "mf_internal.h"

#include <stdint.h>

size_t mf_ref_matmul_scratch_bytes(int64_t M, int64_t N, int64_t K)
{
    if (M <= 0 || N <= 0 || K <= 0) return SIZE_MAX;
    size_t mk, kn, mn, elems, bytes;
    if (!mf_size_mul((size_t)M, (size_t)K, &mk) || !mf_size_mul((size_t)K, (size_t)N, &kn) ||
        !mf_size_mul((size_t)M, (size_t)N, &mn) || !mf_size_add(mk, kn, &elems) ||
        !mf_size_add(elems, mn, &elems) || !mf_size_mul(elems, sizeof(double), &bytes))
        return SIZE_MAX;
    return bytes;
}

/* Element e of an A or B buffer of 'dtype', widened to double. */
static double load_elem(const void *base, mf_dtype dtype, size_t e)
{
    if (dtype == MF_DTYPE_BF16) return (double)mf_bf16_to_f32(((const uint16_t *)base)[e]);
    return (double)((const float *)base)[e];
}

mf_status mf_ref_matmul(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M, int64_t N,
                        int64_t K, const void *A_host, const void *B_host, float *C_host)
{
    MF_CHECK_ALL_NOT_NULL(ctx, A_host, B_host, C_host);
    MF_TRY(mf_check_dtype_f32_bf16(__func__, dtype));
    MF_CHECK_POSITIVE(M);
    MF_CHECK_POSITIVE(N);
    MF_CHECK_POSITIVE(K);
    /* Every buffer's byte size, the inputs' in their storage dtype. */
    size_t a_bytes, b_bytes, c_bytes;
    const int64_t esize = (int64_t)mf_dtype_size(dtype);
    MF_TRY(mf_dims_product(__func__, "A bytes (M*K*dtype size)", &a_bytes, 3, M, K, esize));
    MF_TRY(mf_dims_product(__func__, "B bytes (K*N*dtype size)", &b_bytes, 3, K, N, esize));
    MF_TRY(mf_dims_product(__func__, "C bytes (M*N*4)", &c_bytes, 3, M, N, (int64_t)4));
    (void)a_bytes;
    (void)b_bytes;
    (void)c_bytes;
    if (mf_ref_matmul_scratch_bytes(M, N, K) == SIZE_MAX)
        MF_FAIL(MF_ERR_OVERFLOW, "scratch 8*(M*K + K*N + M*N) overflows size_t (M=%lld N=%lld K=%lld)",
                (long long)M, (long long)N, (long long)K);

    const size_t m = (size_t)M, n = (size_t)N, k_dim = (size_t)K;
    void *pa = NULL, *pb = NULL, *pc = NULL;
    mf_status st = mf_scratch_alloc(ctx, MF_MEM_HOST, m * k_dim * sizeof(double), &pa);
    if (st == MF_OK) st = mf_scratch_alloc(ctx, MF_MEM_HOST, k_dim * n * sizeof(double), &pb);
    if (st == MF_OK) st = mf_scratch_alloc(ctx, MF_MEM_HOST, m * n * sizeof(double), &pc);
    if (st != MF_OK) {
        mf_scratch_free(ctx, MF_MEM_HOST, pc);
        mf_scratch_free(ctx, MF_MEM_HOST, pb);
        mf_scratch_free(ctx, MF_MEM_HOST, pa);
        return st;
    }
    double *a = (double *)pa;   /* op(A), M x K */
    double *b = (double *)pb;   /* op(B), K x N */
    double *acc = (double *)pc; /* C in double, M x N */

    /* 1. op(A) as a row-major M x K double matrix. */
    for (size_t i = 0; i < m; ++i)
        for (size_t k = 0; k < k_dim; ++k)
            a[i * k_dim + k] = load_elem(A_host, dtype, trans_a ? k * m + i : i * k_dim + k);

    /* 2. op(B) as a row-major K x N double matrix. */
    for (size_t k = 0; k < k_dim; ++k)
        for (size_t j = 0; j < n; ++j)
            b[k * n + j] = load_elem(B_host, dtype, trans_b ? j * k_dim + k : k * n + j);

    /* 3. The triple loop. Every acc[i][j] receives its K products in k order
     *    0, 1, ..., K-1 (the i-k-j nesting only keeps the rows in cache). */
    for (size_t e = 0; e < m * n; ++e) acc[e] = 0.0;
    for (size_t i = 0; i < m; ++i)
        for (size_t k = 0; k < k_dim; ++k) {
            const double aik = a[i * k_dim + k];
            const double *brow = b + k * n;
            double *crow = acc + i * n;
            for (size_t j = 0; j < n; ++j) crow[j] += aik * brow[j];
        }

    /* 4. Round to the fp32 output. */
    for (size_t e = 0; e < m * n; ++e) C_host[e] = (float)acc[e];

    mf_scratch_free(ctx, MF_MEM_HOST, pc);
    mf_scratch_free(ctx, MF_MEM_HOST, pb);
    mf_scratch_free(ctx, MF_MEM_HOST, pa);
    return MF_OK;
}
