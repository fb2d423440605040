// Optimized matmul: the shared-memory tiled matmul fix of seed document 002
// ("Memory Optimization Fixes for Pythia-70M", its issue "Unoptimized CUDA
// Kernels": "Simple matmul kernel without shared memory tiling" -> "shared
// memory tiled matmul with 16x16 tiles", "Coalesced memory access", "Loop
// unrolling with #pragma unroll").
//
//   C[i][j] = sum_k op(A)[i][k] * op(B)[k][j]   (row-major; see include/memfix/matmul.h)
//
// Three variants, each a kernel (or library call), a static launcher and one
// exported entry point MF_FN(matmul_<variant>) (mf_host_* in host execution
// mode, mf_cuda_* under nvcc). The public mf_matmul (src/ops/matmul.c) has
// validated every argument before these run; the launchers still compute grid
// sizes in size_t and check them against the device limits.
//
// None of the variants allocates device scratch: the tiles live in shared
// memory, and cuBLAS uses the context's workspace. The ceilings in matmul.h are
// therefore 0 bytes.
#include "mf_cuda.h"
#include "mf_device.cuh" // to_f32, MF_UNROLL, kMaxGridX/Y, grid_cap
#include "matmul.cuh"

#include <cuda_bf16.h>
#include <climits>
#include <cstddef>
#include <cstdint>

namespace MF_NS {

constexpr int kTile = MF_MATMUL_TILE; // 16: tile edge and block edge

// op(A)[i][k] and op(B)[k][j] (see matmul.h for the layouts).
template <typename T>
__device__ __forceinline__ float load_a(const T *A, size_t M, size_t K, int trans_a, size_t i, size_t k)
{
    return to_f32(trans_a ? A[k * M + i] : A[i * K + k]);
}
template <typename T>
__device__ __forceinline__ float load_b(const T *B, size_t N, size_t K, int trans_b, size_t k, size_t j)
{
    return to_f32(trans_b ? B[j * K + k] : B[k * N + j]);
}

// Stages S[r][c] = op(X)[r0 + r][c0 + c] (zero outside op(X), which is R x C;
// X is stored R x C, or C x R when trans) for r, c < kTile, one element per
// thread of a 16x16 block: threadIdx.x runs along X's stored rows, so
// consecutive threads read consecutive elements either way.
template <typename T>
__device__ __forceinline__ void stage_tile(float (*S)[kTile + 1], const T *X, size_t R, size_t C, size_t r0,
                                           size_t c0, int trans, unsigned tx, unsigned ty)
{
    if (!trans) { // X is R x C: tx along c
        const size_t r = r0 + ty, c = c0 + tx;
        S[ty][tx] = (r < R && c < C) ? to_f32(X[r * C + c]) : 0.0f;
    } else { // X is C x R: tx along r
        const size_t c = c0 + ty, r = r0 + tx;
        S[tx][ty] = (r < R && c < C) ? to_f32(X[c * R + r]) : 0.0f;
    }
}

// ---- variant 1: one thread per output (the document's "before") -------------
// Blocks of 16x16 threads; block (bx, by) covers output rows by*16 .. +15 and
// columns bx*16 .. +15; threadIdx.x runs along a row of C so that consecutive
// threads read consecutive elements of B (non-transposed). When the grid had to
// be capped, blocks stride over the remaining tiles.
// mf-budget: regs<=40 smem<=0 spill=0  (sm_90 measured: regs 32 smem 0)
template <typename T>
__global__ void matmul_naive_kernel(const T *__restrict__ A, const T *__restrict__ B, float *__restrict__ C,
                                    size_t M, size_t N, size_t K, int trans_a, int trans_b, size_t row_tiles,
                                    size_t col_tiles)
{
    for (size_t tr = blockIdx.y; tr < row_tiles; tr += gridDim.y) {
        for (size_t tc = blockIdx.x; tc < col_tiles; tc += gridDim.x) {
            const size_t i = tr * kTile + threadIdx.y;
            const size_t j = tc * kTile + threadIdx.x;
            if (i < M && j < N) {
                float acc = 0.0f;
                for (size_t k = 0; k < K; ++k)
                    acc += load_a(A, M, K, trans_a, i, k) * load_b(B, N, K, trans_b, k, j);
                C[i * N + j] = acc;
            }
        }
    }
}

// ---- variant 2: 16x16 shared-memory tiles (the document's fix) --------------
// Each block computes one 16x16 tile of C. For every 16-wide slice of K it
// stages the matching 16x16 tiles of op(A) and op(B) in shared memory (each
// operand element is read from global memory once per block instead of once
// per thread), synchronises, accumulates 16 products per thread from shared
// memory, and synchronises again before the tiles are overwritten.
// Loads are coalesced for both layouts: threadIdx.x runs along the contiguous
// dimension of the stored matrix, and a transposed operand is stored into the
// tile transposed (the +1 column of padding keeps those stores free of shared
// memory bank conflicts). Elements outside M, N or K are staged as 0, so sizes
// that are not multiples of 16 need no special path. The loop bounds depend on
// blockIdx only, so every thread of a block reaches every __syncthreads.
// mf-budget: regs<=40 smem<=3072 spill=0  (sm_90 measured: regs 30 smem 2176)
template <typename T>
__global__ void matmul_tiled_kernel(const T *__restrict__ A, const T *__restrict__ B, float *__restrict__ C,
                                    size_t M, size_t N, size_t K, int trans_a, int trans_b, size_t row_tiles,
                                    size_t col_tiles)
{
    __shared__ float As[kTile][kTile + 1]; // As[r][kk] = op(A)[row0 + r][k0 + kk]
    __shared__ float Bs[kTile][kTile + 1]; // Bs[kk][c] = op(B)[k0 + kk][col0 + c]
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    for (size_t tr = blockIdx.y; tr < row_tiles; tr += gridDim.y) {
        for (size_t tc = blockIdx.x; tc < col_tiles; tc += gridDim.x) {
            const size_t row0 = tr * kTile, col0 = tc * kTile;
            float acc = 0.0f;
            for (size_t k0 = 0; k0 < K; k0 += kTile) {
                stage_tile(As, A, M, K, row0, k0, trans_a, tx, ty); // op(A) is M x K
                stage_tile(Bs, B, K, N, k0, col0, trans_b, tx, ty); // op(B) is K x N
                __syncthreads();                                    // both tiles staged
                MF_UNROLL
                for (int kk = 0; kk < kTile; ++kk) acc += As[ty][kk] * Bs[kk][tx];
                __syncthreads(); // everyone done before the next slice overwrites the tiles
            }
            const size_t i = row0 + ty, j = col0 + tx;
            if (i < M && j < N) C[i * N + j] = acc;
        }
    }
}

// Grid of 16x16 blocks covering an M x N output: x over column tiles, y over
// row tiles, each capped at its limit (the kernels stride over the rest).
static void tile_grid(size_t M, size_t N, size_t *row_tiles, size_t *col_tiles, dim3 *grid)
{
    *row_tiles = M / kTile + (M % kTile != 0);
    *col_tiles = N / kTile + (N % kTile != 0);
    *grid = dim3(grid_cap(*col_tiles, kMaxGridX), grid_cap(*row_tiles, kMaxGridY), 1u);
}

// One launcher for both SIMT kernels: Tiled picks matmul_tiled_kernel, else
// matmul_naive_kernel; the grid, block and stream are the same.
template <typename T, bool Tiled>
static mf_status launch_simt(mf_context *ctx, int trans_a, int trans_b, size_t M, size_t N, size_t K,
                             const void *A, const void *B, float *C)
{
    size_t row_tiles, col_tiles;
    dim3 grid;
    tile_grid(M, N, &row_tiles, &col_tiles, &grid);
    const dim3 block(kTile, kTile, 1);
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const T *a = static_cast<const T *>(A), *b = static_cast<const T *>(B);
    if constexpr (Tiled)
        matmul_tiled_kernel<T>
            <<<grid, block, 0, stream>>>(a, b, C, M, N, K, trans_a, trans_b, row_tiles, col_tiles);
    else
        matmul_naive_kernel<T>
            <<<grid, block, 0, stream>>>(a, b, C, M, N, K, trans_a, trans_b, row_tiles, col_tiles);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// The dtype dispatch of the two SIMT entry points.
template <bool Tiled>
static mf_status matmul_simt(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M, int64_t N,
                             int64_t K, const void *A, const void *B, float *C)
{
    if (dtype == MF_DTYPE_BF16)
        return launch_simt<__nv_bfloat16, Tiled>(ctx, trans_a, trans_b, (size_t)M, (size_t)N, (size_t)K, A, B,
                                                 C);
    return launch_simt<float, Tiled>(ctx, trans_a, trans_b, (size_t)M, (size_t)N, (size_t)K, A, B, C);
}

// ---- variant 3: cuBLAS -------------------------------------------------------
// cuBLAS is column-major. A row-major R x S matrix is, read column-major, its
// S x R transpose, so the row-major product C = op(A) op(B) (M x N) is the
// column-major product C^T = op(B)^T op(A)^T (N x M, ldc = N):
//   op(B)^T: B stored K x N (row-major) reads column-major as N x K = B^T
//            -> CUBLAS_OP_N, ldb = N; B stored N x K reads as K x N, whose
//            transpose is wanted -> CUBLAS_OP_T, ldb = K.
//   op(A)^T: A stored M x K reads as K x M = A^T -> CUBLAS_OP_N, lda = K;
//            A stored K x M reads as M x K -> CUBLAS_OP_T, lda = M.
// bf16 inputs go in as CUDA_R_16BF (no converted copy); products and sums are
// fp32 (CUBLAS_COMPUTE_32F; the default math mode does not use TF32).
static mf_status launch_cublas(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, size_t M, size_t N,
                               size_t K, const void *A, const void *B, float *C)
{
    if (M > (size_t)INT_MAX || N > (size_t)INT_MAX || K > (size_t)INT_MAX)
        return mf_set_error(MF_ERR_INVALID_SIZE, __func__, __FILE__, __LINE__,
                            "cuBLAS needs M, N, K <= INT_MAX (got M=%zu N=%zu K=%zu)", M, N, K);
    cublasHandle_t handle = (cublasHandle_t)mf_context_cublas(ctx);
    if (handle == NULL)
        return mf_set_error(MF_ERR_BACKEND, __func__, __FILE__, __LINE__, "the context has no cuBLAS handle");
    const cudaDataType_t in_type = dtype == MF_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    const int m = (int)N, n = (int)M, k = (int)K;
    const int ldb = trans_b ? (int)K : (int)N;
    const int lda = trans_a ? (int)M : (int)K;
    const float alpha = 1.0f, beta = 0.0f;
    MF_CUBLAS_CHECK(cublasGemmEx(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha, B, in_type, ldb, A,
                                 in_type, lda, &beta, C, CUDA_R_32F, (int)N, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
    return MF_OK;
}

} // namespace MF_NS

// ---- exported entry points (called by mf_matmul after validation) -----------
// Declared in matmul.cuh (mf_matmul_kernel_fn).
extern "C" {

MF_API mf_status MF_FN(matmul_naive)(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                     int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    return MF_NS::matmul_simt<false>(ctx, dtype, trans_a, trans_b, M, N, K, A, B, C);
}

MF_API mf_status MF_FN(matmul_tiled)(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                     int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    return MF_NS::matmul_simt<true>(ctx, dtype, trans_a, trans_b, M, N, K, A, B, C);
}

MF_API mf_status MF_FN(matmul_cublas)(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                      int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    return MF_NS::launch_cublas(ctx, dtype, trans_a, trans_b, (size_t)M, (size_t)N, (size_t)K, A, B, C);
}

} // extern "C"
