// NPT per-token weight delta, factored: never forms delta_w.
//
// Source: 004_96b9c85fa124076d.txt, "Efficient Forward Pass":
//     # Old: h @ (W + dW) = h @ W + h @ dW
//     # New: h @ W + (h @ A) * mod @ B  (no full dW needed)
// The reference (reference/npt.c) materializes delta_w = A . diag(m[t]) . B for
// every token (T x d_model x d_ffn); this file computes the same outputs with
// cuBLAS GEMMs, a fused elementwise modulation kernel per pass and small
// bias / column-sum / conversion kernels, holding at most a chunk of c tokens x
// rank intermediates (formulas in include/memfix/npt.h).
//
// Forward, per chunk of tokens [t0, t0 + n):
//   u   = h_c . A                 cuBLAS, fp32 out          (n x r)
//   v   = u * m_c                 modulate_kernel, dtype    (n x r)
//   out = bias (broadcast)        bias_broadcast_kernel     (when bias given)
//   out (+)= v . B                cuBLAS                    (the small term first,
//   out += h_c . W                cuBLAS                     so bf16 rounds it once)
// Backward, per chunk:
//   u = h_c . A, gB = g_c . B^T   cuBLAS, fp32 out
//   grad_m = u * gB, p = gB * m, q = u * m          backward_modulation_kernel
//   grad_h_c = p . A^T + g_c . W^T                  cuBLAS
//   grad_A += h_c^T . p, grad_B += q^T . g_c        cuBLAS, accumulated over chunks
//                                                   (in place for f32, in fp32
//                                                   scratch then converted for bf16)
// and once over all tokens: grad_W = h^T . g (cuBLAS), grad_bias = column sums
// of g (column_sum_kernel).
//
// Row-major GEMMs map onto column-major cuBLAS as C^T = op(B)^T . op(A)^T.
// Accumulation is fp32 (CUBLAS_COMPUTE_32F and float in the kernels).
#include "npt.cuh"

#include "mf_cuda.h"
#include "mf_device.cuh" // to_f32, from_f32, grid_blocks

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

namespace MF_NS {

// ---- kernels -------------------------------------------------------------------
// v[i] = u[i] * m[i] over n = tokens * rank entries (the modulation of the
// factored forward: ((h . A) * m), rounded once to the storage dtype for the
// following GEMM with B).
// mf-budget: regs<=16 smem<=0 spill=0  (sm_90 measured: regs 14 smem 0)
template <typename T>
__global__ void modulate_kernel(const float *__restrict__ u, const T *__restrict__ m, T *__restrict__ v,
                                size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        v[i] = from_f32<T>(u[i] * to_f32(m[i]));
}

// One pass over the chunk's n = tokens * rank entries of u = h.A and gB = g.B^T:
//   grad_m = u * gB, p = gB * m (for grad_h and grad_A), q = u * m (for grad_B).
// Any output may be null when its gradient is not requested.
// mf-budget: regs<=24 smem<=0 spill=0  (sm_90 measured: regs 20 smem 0)
template <typename T>
__global__ void backward_modulation_kernel(const float *__restrict__ u, const float *__restrict__ gb,
                                           const T *__restrict__ m, T *__restrict__ grad_m, T *__restrict__ p,
                                           T *__restrict__ q, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float mi = to_f32(m[i]);
        if (grad_m) grad_m[i] = from_f32<T>(u[i] * gb[i]);
        if (p) p[i] = from_f32<T>(gb[i] * mi);
        if (q) q[i] = from_f32<T>(u[i] * mi);
    }
}

// out[t, f] = bias[f] for rows x cols entries.
// mf-budget: regs<=24 smem<=0 spill=0  (sm_90 measured: regs 20 smem 0)
template <typename T>
__global__ void bias_broadcast_kernel(const T *__restrict__ bias, T *__restrict__ out, size_t rows,
                                      size_t cols)
{
    const size_t n = rows * cols;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = bias[i % cols];
}

// grad_bias[f] = sum_t g[t, f]. A block owns COLS adjacent columns (threadIdx.x,
// coalesced along a row); its ROWS thread rows stride over the tokens; the
// partial sums are reduced in shared memory.
constexpr int kSumCols = 32;
constexpr int kSumRows = 8;

// mf-budget: regs<=32 smem<=2048 spill=0  (sm_90 measured: regs 28 smem 1056)
template <typename T>
__global__ void column_sum_kernel(const T *__restrict__ g, T *__restrict__ out, size_t rows, size_t cols)
{
    __shared__ float partial[kSumRows][kSumCols + 1];
    const size_t col = (size_t)blockIdx.x * kSumCols + threadIdx.x;
    float acc = 0.0f;
    if (col < cols)
        for (size_t r = threadIdx.y; r < rows; r += kSumRows) acc += to_f32(g[r * cols + col]);
    partial[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
        float s = 0.0f;
        for (int y = 0; y < kSumRows; ++y) s += partial[y][threadIdx.x];
        out[col] = from_f32<T>(s);
    }
}

// dst[i] = src[i] rounded to the storage dtype (bf16 gradient accumulators).
// mf-budget: regs<=16 smem<=0 spill=0  (sm_90 measured: regs 10 smem 0)
template <typename T>
__global__ void convert_kernel(const float *__restrict__ src, T *__restrict__ dst, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = from_f32<T>(src[i]);
}

// ---- launchers -----------------------------------------------------------------
constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096; // grid-stride loops cover the rest

static unsigned blocks_for(size_t n) { return grid_blocks(n, kThreads, kMaxBlocks); }

template <typename T>
static mf_status launch_modulate(cudaStream_t s, const float *u, const void *m, void *v, size_t n)
{
    modulate_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(u, (const T *)m, (T *)v, n);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_backward_modulation(cudaStream_t s, const float *u, const float *gb, const void *m,
                                            void *grad_m, void *p, void *q, size_t n)
{
    backward_modulation_kernel<T>
        <<<blocks_for(n), kThreads, 0, s>>>(u, gb, (const T *)m, (T *)grad_m, (T *)p, (T *)q, n);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_bias_broadcast(cudaStream_t s, const void *bias, void *out, size_t rows, size_t cols)
{
    bias_broadcast_kernel<T>
        <<<blocks_for(rows * cols), kThreads, 0, s>>>((const T *)bias, (T *)out, rows, cols);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_column_sum(cudaStream_t s, const void *g, void *out, size_t rows, size_t cols)
{
    const dim3 block(kSumCols, kSumRows);
    const dim3 grid((unsigned)((cols + kSumCols - 1) / kSumCols));
    column_sum_kernel<T><<<grid, block, 0, s>>>((const T *)g, (T *)out, rows, cols);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T> static mf_status launch_convert(cudaStream_t s, const float *src, void *dst, size_t n)
{
    convert_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(src, (T *)dst, n);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// Row-major C (M x N) = alpha * op(A) . op(B) + beta * C, op(A) M x K, op(B) K x N;
// lda/ldb/ldc are the row lengths of the stored matrices. Column-major cuBLAS
// sees each stored row-major matrix transposed, so it computes
// C^T = op(B)^T . op(A)^T with the same transpose flags.
static mf_status gemm_rm(cublasHandle_t handle, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                         const void *A, cudaDataType_t a_type, int lda, const void *B, cudaDataType_t b_type,
                         int ldb, float beta, void *C, cudaDataType_t c_type, int ldc)
{
    MF_CUBLAS_CHECK(cublasGemmEx(
        handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B,
        b_type, ldb, A, a_type, lda, &beta, C, c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return MF_OK;
}

// Byte offset of row 'row' of a row-major matrix with 'cols' elements per row.
static inline const void *row_ptr(const void *base, size_t row, size_t cols, size_t es)
{
    return (const char *)base + row * cols * es;
}
static inline void *row_ptr(void *base, size_t row, size_t cols, size_t es)
{
    return (char *)base + row * cols * es;
}

struct Problem {
    cudaStream_t stream;
    cublasHandle_t blas;
    cudaDataType_t type; // CUDA_R_32F or CUDA_R_16BF
    size_t es;           // element size
    bool bf16;
    size_t T, D, F, R, chunk;
};

template <typename T>
static mf_status forward_chunks(const Problem &P, const void *h, const void *W, const void *A, const void *B,
                                const void *m, const void *bias, void *out, float *u, void *v)
{
    const int D = (int)P.D, F = (int)P.F, R = (int)P.R;
    for (size_t t0 = 0; t0 < P.T; t0 += P.chunk) {
        const size_t n = (P.T - t0 < P.chunk) ? P.T - t0 : P.chunk;
        const void *h_c = row_ptr(h, t0, P.D, P.es);
        const void *m_c = row_ptr(m, t0, P.R, P.es);
        void *out_c = row_ptr(out, t0, P.F, P.es);
        // u = h_c . A  (n x r, fp32)
        MF_TRY(gemm_rm(P.blas, false, false, (int)n, R, D, 1.0f, h_c, P.type, D, A, P.type, R, 0.0f, u,
                       CUDA_R_32F, R));
        // v = u * m_c  (n x r, storage dtype)
        MF_TRY(launch_modulate<T>(P.stream, u, m_c, v, n * P.R));
        float beta = 0.0f;
        if (bias) {
            MF_TRY(launch_bias_broadcast<T>(P.stream, bias, out_c, n, P.F));
            beta = 1.0f;
        }
        // out_c (+)= v . B, then out_c += h_c . W
        MF_TRY(gemm_rm(P.blas, false, false, (int)n, F, R, 1.0f, v, P.type, R, B, P.type, F, beta, out_c,
                       P.type, F));
        MF_TRY(gemm_rm(P.blas, false, false, (int)n, F, D, 1.0f, h_c, P.type, D, W, P.type, F, 1.0f, out_c,
                       P.type, F));
    }
    return MF_OK;
}

struct Grads {
    void *h, *W, *A, *B, *m, *bias;
};

struct BackwardScratch {
    float *u, *gb; // n x r fp32
    void *p, *q;   // n x r storage dtype
    float *acc_a;  // d_model x r fp32 (bf16 only)
    float *acc_b;  // r x d_ffn fp32 (bf16 only)
};

template <typename T>
static mf_status backward_chunks(const Problem &P, const void *h, const void *W, const void *A, const void *B,
                                 const void *m, const void *g, const Grads &G, const BackwardScratch &S)
{
    const int D = (int)P.D, F = (int)P.F, R = (int)P.R;
    const bool need_u = G.m || G.B;
    const bool need_gb = G.m || G.h || G.A;
    // Where grad_A / grad_B accumulate over chunks: the output itself (f32) or
    // the fp32 accumulators (bf16), with the storage type of that destination.
    void *dst_a = P.bf16 ? (void *)S.acc_a : G.A;
    void *dst_b = P.bf16 ? (void *)S.acc_b : G.B;
    const cudaDataType_t acc_type = P.bf16 ? CUDA_R_32F : P.type;

    for (size_t t0 = 0; t0 < P.T; t0 += P.chunk) {
        const size_t n = (P.T - t0 < P.chunk) ? P.T - t0 : P.chunk;
        const int ni = (int)n;
        const float beta_acc = (t0 == 0) ? 0.0f : 1.0f;
        const void *h_c = row_ptr(h, t0, P.D, P.es);
        const void *g_c = row_ptr(g, t0, P.F, P.es);
        const void *m_c = row_ptr(m, t0, P.R, P.es);

        if (need_u) // u = h_c . A
            MF_TRY(gemm_rm(P.blas, false, false, ni, R, D, 1.0f, h_c, P.type, D, A, P.type, R, 0.0f, S.u,
                           CUDA_R_32F, R));
        if (need_gb) // gB = g_c . B^T
            MF_TRY(gemm_rm(P.blas, false, true, ni, R, F, 1.0f, g_c, P.type, F, B, P.type, F, 0.0f, S.gb,
                           CUDA_R_32F, R));
        MF_TRY(launch_backward_modulation<T>(P.stream, S.u, S.gb, m_c,
                                             G.m ? row_ptr(G.m, t0, P.R, P.es) : nullptr, S.p, S.q, n * P.R));
        if (G.h) { // grad_h_c = p . A^T + g_c . W^T
            void *gh_c = row_ptr(G.h, t0, P.D, P.es);
            MF_TRY(gemm_rm(P.blas, false, true, ni, D, R, 1.0f, S.p, P.type, R, A, P.type, R, 0.0f, gh_c,
                           P.type, D));
            MF_TRY(gemm_rm(P.blas, false, true, ni, D, F, 1.0f, g_c, P.type, F, W, P.type, F, 1.0f, gh_c,
                           P.type, D));
        }
        if (G.A) // grad_A (+)= h_c^T . p   (d_model x r)
            MF_TRY(gemm_rm(P.blas, true, false, D, R, ni, 1.0f, h_c, P.type, D, S.p, P.type, R, beta_acc,
                           dst_a, acc_type, R));
        if (G.B) // grad_B (+)= q^T . g_c   (r x d_ffn)
            MF_TRY(gemm_rm(P.blas, true, false, R, F, ni, 1.0f, S.q, P.type, R, g_c, P.type, F, beta_acc,
                           dst_b, acc_type, F));
    }
    if (P.bf16 && G.A) MF_TRY(launch_convert<T>(P.stream, S.acc_a, G.A, P.D * P.R));
    if (P.bf16 && G.B) MF_TRY(launch_convert<T>(P.stream, S.acc_b, G.B, P.R * P.F));
    return MF_OK;
}

static Problem make_problem(mf_context *ctx, mf_dtype dtype, mf_npt_shape s, int64_t chunk)
{
    Problem P;
    P.stream = (cudaStream_t)mf_context_stream(ctx);
    P.blas = (cublasHandle_t)mf_context_cublas(ctx);
    P.bf16 = dtype == MF_DTYPE_BF16;
    P.type = P.bf16 ? CUDA_R_16BF : CUDA_R_32F;
    P.es = P.bf16 ? 2 : 4;
    P.T = (size_t)s.batch * (size_t)s.seq;
    P.D = (size_t)s.d_model;
    P.F = (size_t)s.d_ffn;
    P.R = (size_t)s.rank;
    P.chunk = (size_t)chunk < P.T ? (size_t)chunk : P.T;
    return P;
}

// Allocates 'bytes' of device scratch into *p when 'want', else leaves it null.
static mf_status scratch(mf_context *ctx, bool want, size_t bytes, void **p)
{
    *p = nullptr;
    if (!want) return MF_OK;
    return mf_scratch_alloc(ctx, MF_MEM_DEVICE, bytes, p);
}

} // namespace MF_NS

// ---- exported entry points (validated by src/ops/npt.c) ---------------------------
// chunk: tokens per chunk, resolved by mf_npt_resolve_chunk (>= 1).
extern "C" mf_status MF_FN(npt_factored_forward)(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape,
                                                 int64_t chunk, const void *h, const void *W, const void *A,
                                                 const void *B, const void *m, const void *bias, void *out)
{
    using namespace MF_NS;
    const Problem P = make_problem(ctx, dtype, shape, chunk);
    void *u = nullptr, *v = nullptr;
    mf_status st = scratch(ctx, true, P.chunk * P.R * sizeof(float), &u);
    if (st == MF_OK) st = scratch(ctx, true, P.chunk * P.R * P.es, &v);
    if (st == MF_OK)
        st = P.bf16 ? forward_chunks<__nv_bfloat16>(P, h, W, A, B, m, bias, out, (float *)u, v)
                    : forward_chunks<float>(P, h, W, A, B, m, bias, out, (float *)u, v);
    mf_scratch_free(ctx, MF_MEM_DEVICE, v);
    mf_scratch_free(ctx, MF_MEM_DEVICE, u);
    return st;
}

extern "C" mf_status MF_FN(npt_factored_backward)(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape,
                                                  int64_t chunk, const void *h, const void *W, const void *A,
                                                  const void *B, const void *m, const void *grad_out,
                                                  void *grad_h, void *grad_W, void *grad_A, void *grad_B,
                                                  void *grad_m, void *grad_bias)
{
    using namespace MF_NS;
    const Problem P = make_problem(ctx, dtype, shape, chunk);
    const Grads G = { grad_h, grad_W, grad_A, grad_B, grad_m, grad_bias };
    const bool chunked = grad_h || grad_A || grad_B || grad_m;
    const size_t cr = P.chunk * P.R;
    void *buf[6] = { nullptr, nullptr, nullptr, nullptr, nullptr, nullptr };
    mf_status st = MF_OK;
    if (chunked) {
        const bool want[6] = {
            true, true, grad_h || grad_A, grad_B != nullptr, P.bf16 && grad_A, P.bf16 && grad_B
        };
        const size_t bytes[6] = { cr * sizeof(float), cr * sizeof(float),        cr * P.es,
                                  cr * P.es,          P.D * P.R * sizeof(float), P.R * P.F * sizeof(float) };
        for (int i = 0; i < 6 && st == MF_OK; ++i) st = scratch(ctx, want[i], bytes[i], &buf[i]);
        if (st == MF_OK) {
            const BackwardScratch S = { (float *)buf[0], (float *)buf[1], buf[2],
                                        buf[3],          (float *)buf[4], (float *)buf[5] };
            st = P.bf16 ? backward_chunks<__nv_bfloat16>(P, h, W, A, B, m, grad_out, G, S)
                        : backward_chunks<float>(P, h, W, A, B, m, grad_out, G, S);
        }
    }
    // grad_W = h^T . g over all tokens at once (d_model x d_ffn, no scratch).
    if (st == MF_OK && grad_W)
        st = gemm_rm(P.blas, true, false, (int)P.D, (int)P.F, (int)P.T, 1.0f, h, P.type, (int)P.D, grad_out,
                     P.type, (int)P.F, 0.0f, grad_W, P.type, (int)P.F);
    if (st == MF_OK && grad_bias)
        st = P.bf16 ? launch_column_sum<__nv_bfloat16>(P.stream, grad_out, grad_bias, P.T, P.F)
                    : launch_column_sum<float>(P.stream, grad_out, grad_bias, P.T, P.F);
    for (int i = 5; i >= 0; --i) mf_scratch_free(ctx, MF_MEM_DEVICE, buf[i]);
    return st;
}
