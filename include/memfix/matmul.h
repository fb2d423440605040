/* memfix matmul: the shared-memory tiled matmul fix (seed document 002,
 * "Memory Optimization Fixes for Pythia-70M", its issue "Unoptimized CUDA
 * Kernels": "Simple matmul kernel without shared memory tiling" fixed by
 * "shared memory tiled matmul with 16x16 tiles").
 *
 *   C = op(A) . op(B)        C is M x N, row-major, fp32
 *   op(A) = A   (A stored M x K, row-major)   when trans_a == 0
 *         = A^T (A stored K x M, row-major)   when trans_a != 0
 *   op(B) = B   (B stored K x N, row-major)   when trans_b == 0
 *         = B^T (B stored N x K, row-major)   when trans_b != 0
 *   C[i][j] = sum_{k < K} op(A)[i][k] * op(B)[k][j]
 *
 * A and B share one storage dtype: MF_DTYPE_F32 (float) or MF_DTYPE_BF16
 * (bf16 bit patterns, uint16_t on the host / __nv_bfloat16 on the device).
 * Products and sums are fp32 in the optimized variants, double in the
 * reference; C is always fp32. C is overwritten (beta = 0).
 *
 * Variants (mf_matmul_variant):
 *   MF_MATMUL_NAIVE   one thread per output element, every operand read from
 *                     global memory: the document's "before".
 *   MF_MATMUL_TILED   16x16 thread blocks stage 16x16 tiles of op(A) and op(B)
 *                     in shared memory (__syncthreads before and after each
 *                     tile is used): the document's fix. Any M, N, K (partial
 *                     tiles are zero-padded).
 *   MF_MATMUL_CUBLAS  cublasGemmEx (CUDA_R_32F or CUDA_R_16BF inputs, CUDA_R_32F
 *                     output, CUBLAS_COMPUTE_32F) on the context's handle;
 *                     M, N, K must be <= INT_MAX (the int cuBLAS API).
 *
 * Memory (scratch = bytes beyond the caller's A, B, C; see memfix.h)
 * ------------------------------------------------------------------
 * Reference (mf_ref_matmul), exact:
 *     mf_ref_matmul_scratch_bytes(M, N, K) = 8 * (M*K + K*N + M*N)
 *   It materializes op(A) and op(B) as row-major double matrices (the
 *   transposes resolved, bf16 widened) and a double M x N accumulator, then
 *   rounds the accumulator into C.
 * Optimized variants, upper bounds on device scratch:
 *     mf_matmul_naive_scratch_ceiling(M, N, K)  = 0
 *     mf_matmul_tiled_scratch_ceiling(M, N, K)  = 0   (the 2 x 16 x 16 floats
 *       of staged tiles, 2 KiB per block, live in on-chip shared memory, not
 *       in global memory)
 *     mf_matmul_cublas_scratch_ceiling(M, N, K) = 0   (cublasGemmEx reads bf16
 *       directly; cuBLAS works in the context's workspace, which is allocated
 *       when the context is created and belongs to the baseline)
 * So optimized <= ceiling < reference at every valid shape, and the reference
 * grows as M*K + K*N + M*N while every ceiling stays 0.
 * The formula functions return SIZE_MAX when a size is <= 0 or the byte count
 * overflows size_t.
 */
#ifndef MEMFIX_MATMUL_H
#define MEMFIX_MATMUL_H

/* memfix/verify.h names each candidate type's header until this one is included */
#undef mf_matmul_candidate_fn

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mf_matmul_variant {
    MF_MATMUL_NAIVE = 0,
    MF_MATMUL_TILED = 1,
    MF_MATMUL_CUBLAS = 2
} mf_matmul_variant;

#define MF_MATMUL_N_VARIANTS 3
/* Edge of the square tiles (and of the thread blocks) of the tiled variant. */
#define MF_MATMUL_TILE 16

/* "naive", "tiled", "cublas"; NULL for a value out of range. */
MF_API const char *mf_matmul_variant_name(mf_matmul_variant v);

/* The signature of a matmul kernel entry: mf_matmul minus the variant. Each
 * variant of optimized/matmul.cu exports one (declared in optimized/matmul.cuh),
 * and a `memfix verify --op matmul` candidate is a function of this type. */
typedef mf_status mf_matmul_kernel_fn(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                      int64_t N, int64_t K, const void *A, const void *B, float *C);
/* matmul candidate (include/memfix/verify.h): C = op(A) op(B); A holds M*K and
 * B K*N elements of dtype (f32 or bf16 bit patterns), C M*N floats, row-major;
 * all three are device buffers; C must be overwritten (beta = 0). */
typedef mf_matmul_kernel_fn *mf_matmul_candidate_fn;

/* Optimized matmul on ctx's backend. A, B and C are device buffers of ctx
 * (mf_buffer_alloc): A holds M*K and B holds K*N elements of 'dtype', C holds
 * M*N floats. Asynchronous on the context's stream; call
 * mf_context_synchronize() before reading C from the host.
 * Errors: MF_ERR_NULL_POINTER (ctx, A, B, C), MF_ERR_INVALID_SIZE (M, N, K <= 0,
 * or > INT_MAX for MF_MATMUL_CUBLAS), MF_ERR_OVERFLOW (a buffer's byte size
 * overflows size_t), MF_ERR_INVALID_ARGUMENT (variant), MF_ERR_DTYPE (dtype),
 * MF_ERR_BACKEND_UNAVAILABLE (backend not built), MF_ERR_BACKEND (CUDA/cuBLAS). */
MF_API mf_status mf_matmul(mf_context *ctx, mf_matmul_variant variant, mf_dtype dtype, int trans_a,
                           int trans_b, int64_t M, int64_t N, int64_t K, const void *A, const void *B,
                           float *C);

/* The reference (the executable specification): the naive triple loop on the
 * host with double accumulation. A_host, B_host, C_host are host pointers with
 * the same layouts as mf_matmul. Host scratch (exactly
 * mf_ref_matmul_scratch_bytes) comes from mf_scratch_alloc(ctx, MF_MEM_HOST).
 * Same errors as mf_matmul, plus MF_ERR_OUT_OF_MEMORY. */
MF_API mf_status mf_ref_matmul(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                               int64_t N, int64_t K, const void *A_host, const void *B_host, float *C_host);

/* Memory formulas (bytes), see the header comment. */
MF_API size_t mf_ref_matmul_scratch_bytes(int64_t M, int64_t N, int64_t K);
MF_API size_t mf_matmul_naive_scratch_ceiling(int64_t M, int64_t N, int64_t K);
MF_API size_t mf_matmul_tiled_scratch_ceiling(int64_t M, int64_t N, int64_t K);
MF_API size_t mf_matmul_cublas_scratch_ceiling(int64_t M, int64_t N, int64_t K);
/* The ceiling of 'variant'; SIZE_MAX for an invalid variant or shape. */
MF_API size_t mf_matmul_scratch_ceiling(mf_matmul_variant variant, int64_t M, int64_t N, int64_t K);

#ifdef __cplusplus
}
#endif

#endif /* MEMFIX_MATMUL_H */
