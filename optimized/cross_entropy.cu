// Optimized linear cross-entropy: forward and backward without the N x V logits.
//
// Seed document 000_15d34a4d5aa90e13.txt, bug 1: the old code materialized
// hidden @ W^T for all 131,072 tokens (37.09 GiB of bf16 logits plus ~74 GiB of
// fp32 loss intermediates). The document's fix computes the loss in chunks of
// tokens; this file does the same for the forward AND the backward:
//
//   for each chunk of C rows (C from mf_cross_entropy_plan and the caller's budget):
//     1. tile (C x V, fp32, device scratch) = hidden[chunk] . W^T      cublasGemmEx
//     2. one block per row: bias, softcap, max, logsumexp, the row's loss, and
//        (backward) the gradient dL/dz written over the logits in place  ce_row_kernel
//     3. backward: grad_bias += column sums of the tile                  ce_bias_grad_kernel
//        bf16 inputs: the gradient tile narrowed to bf16 in place       ce_tile_to_bf16_kernel
//        grad_hidden[chunk] = tile . W                                  cublasGemmEx
//        grad_W (+)= tile^T . hidden[chunk]   (beta = 0, then 1)        cublasGemmEx
//   the per-row losses are reduced at the end (deterministic, one block).
//
// The math and the options (shift, ignore_index, reductions, label smoothing,
// z-loss, softcapping) are stated in include/memfix/cross_entropy.h; the
// reference is reference/cross_entropy.c. Everything is fp32 (logits tiles,
// softmax, cuBLAS CUBLAS_COMPUTE_32F) except the final loss sum (double).
//
// Device scratch (all through mf_scratch_alloc, so it is measured):
//   2 int64 counters + N floats of per-row losses (forward with mean/sum)
//   + one C x V fp32 tile  <=  mf_cross_entropy_chunked_scratch_ceiling(N, V, C).
// For bf16 inputs the gradient tile is narrowed in place: row r's bf16 values
// occupy the first half of row r's fp32 storage (leading dimension 2V in bf16
// elements), so the bf16 GEMM operands need no second buffer.
#include "mf_cuda.h"
#include "mf_device.cuh"
#include "ce_device.cuh"
#include "cross_entropy.cuh"

#include <cuda_bf16.h>
#include <climits>
#include <cstddef>
#include <cstdint>

namespace MF_NS {

constexpr int kBlock = 256; // threads per block; a power of two (tree reductions)

// Block-wide reductions over the kBlock threads of a block (mf_device.cuh).
__device__ inline float block_sum(float v, float *sh) { return block_sum_n<kBlock>(v, sh); }
__device__ inline float block_max(float v, float *sh) { return block_max_n<kBlock>(v, sh); }

// ---- label pre-pass: count valid rows, find the first bad label ---------------
// One block. counters[0] = number of rows whose target is not ignore_index;
// counters[1] = first row whose target is outside [0, V) (n_rows if none).
// mf-budget: regs<=40 smem<=5120 spill=0  (sm_90 measured: regs 30 smem 4096)
__global__ void ce_count_kernel(const int64_t *__restrict__ labels, size_t n_rows, int64_t shift_len,
                                int64_t ignore_index, int64_t vocab, int64_t *__restrict__ counters)
{
    __shared__ int64_t valid_sh[kBlock];
    __shared__ int64_t bad_sh[kBlock];
    ce_count_rows<kBlock>(labels, n_rows, shift_len, ignore_index, vocab, counters, valid_sh, bad_sh);
}

// ---- the row kernel: one block per row of the chunk ---------------------------
struct RowParams {
    size_t row0; // first global row of the chunk
    size_t ldt;  // tile leading dimension (floats) = V
    int64_t vocab;
    int64_t shift_len; // 0 = no shift
    int64_t ignore_index;
    float eps, lambda, cap;
    const float *lse_in;     // backward-only call: saved lse (else NULL: computed here)
    float *lse_out;          // NULL or N floats
    float *row_loss;         // NULL or N floats (per-row loss; the output itself for 'none')
    int backward;            // write dL/dz over the tile
    const float *grad_loss;  // NULL = 1
    int grad_per_row;        // reduction none: grad_loss[i]; else grad_loss[0]
    const int64_t *counters; // device: [0] n_valid (read here: no host copy), [1] first bad row
    int mean;                // reduction mean: g scaled by 1/n_valid (0 valid rows: no row is scaled)
};

// mf-budget: regs<=40 smem<=2048 spill=0  (sm_90 measured: regs 32 smem 1024)
template <typename T>
__global__ void ce_row_kernel(float *__restrict__ tile, const T *__restrict__ bias,
                              const int64_t *__restrict__ labels, RowParams p)
{
    __shared__ float sh[kBlock];
    const unsigned t = threadIdx.x;
    const size_t r = blockIdx.x;
    const size_t i = p.row0 + r;
    const size_t V = (size_t)p.vocab;
    float *s = tile + r * p.ldt;
    const int64_t y = ce_target(labels, i, p.shift_len, p.ignore_index);
    // An out-of-range target (reported by the call after the launches) is
    // treated as ignored here, so that s[y] is never read out of bounds.
    const bool valid = y != p.ignore_index && y >= 0 && y < p.vocab;

    // Pass 1: z -> s = softcap(z + bias), stored in place; row max and sum of s.
    float m = -INFINITY, sum_s = 0.0f;
    for (size_t j = t; j < V; j += kBlock) {
        float z = s[j];
        if (bias != nullptr) z += to_f32(bias[j]);
        if (p.cap > 0.0f) z = p.cap * tanhf(z / p.cap);
        s[j] = z;
        m = nan_max(m, z);
        sum_s += z;
    }
    m = block_max(m, sh); // ends with a barrier: every s[j] is visible to the block

    float lse;
    if (p.lse_in != nullptr) {
        lse = p.lse_in[i];
    } else {
        float acc = 0.0f;
        for (size_t j = t; j < V; j += kBlock) acc += expf(s[j] - m);
        acc = block_sum(acc, sh);
        // Every logit -inf: the empty sum, lse = log 0 = -inf (m - m would be NaN).
        lse = m == -INFINITY ? -INFINITY : m + logf(acc);
    }
    if (p.eps > 0.0f) sum_s = block_sum(sum_s, sh);
    const float s_y = valid ? s[y] : 0.0f;
    __syncthreads(); // s[y] is read by every thread before pass 2 overwrites it

    if (t == 0) {
        if (p.lse_out != nullptr) p.lse_out[i] = lse;
        if (p.row_loss != nullptr) {
            float loss = 0.0f;
            if (valid) loss = ce_row_loss(lse, s_y, sum_s, p.eps, V, p.lambda);
            p.row_loss[i] = loss;
        }
    }
    if (!p.backward) return;

    // Pass 2: dL/dz in place.
    const float g = valid ? ce_row_grad(p.grad_loss, p.grad_per_row, p.mean, p.counters, i) : 0.0f;
    const float zl = 1.0f + 2.0f * p.lambda * lse;
    const float smooth = p.eps / (float)p.vocab;
    for (size_t j = t; j < V; j += kBlock) {
        if (!valid) { // exact zero, even when the row's logits are NaN
            s[j] = 0.0f;
            continue;
        }
        s[j] = g * ce_dlogit(s[j], lse, zl, smooth, (int64_t)j == y, p.eps, p.cap);
    }
}

// ---- grad_bias += column sums of the gradient tile (fixed order: deterministic)
// mf-budget: regs<=32 smem<=0 spill=0  (sm_90 measured: regs 28 smem 0)
__global__ void ce_bias_grad_kernel(const float *__restrict__ tile, size_t ldt, size_t rows, size_t vocab,
                                    float *__restrict__ grad_bias)
{
    const size_t j = (size_t)blockIdx.x * kBlock + threadIdx.x;
    if (j >= vocab) return;
    float acc = 0.0f;
    for (size_t r = 0; r < rows; ++r) acc += tile[r * ldt + j];
    grad_bias[j] += acc;
}

// ---- narrow the fp32 gradient tile to bf16 in place, one block per row --------
// Row r's bf16 element j lands in bytes [2j, 2j+2) of row r's fp32 storage, i.e.
// inside fp32 element j/2 <= j. The row is walked in slices of kBlock elements:
// every thread reads its element of the slice, the block synchronises, then
// every thread writes. A write of slice k touches fp32 elements < (k+1)*kBlock/2,
// all of which were read in slices <= k, and never an element of a later slice.
// mf-budget: regs<=16 smem<=0 spill=0  (sm_90 measured: regs 14 smem 0)
__global__ void ce_tile_to_bf16_kernel(float *__restrict__ tile, size_t ldt, size_t vocab)
{
    float *row = tile + (size_t)blockIdx.x * ldt;
    __nv_bfloat16 *out = reinterpret_cast<__nv_bfloat16 *>(row);
    for (size_t base = 0; base < vocab; base += kBlock) { // same trip count for all threads
        const size_t j = base + threadIdx.x;
        const float v = j < vocab ? row[j] : 0.0f;
        __syncthreads();
        if (j < vocab) out[j] = from_f32<__nv_bfloat16>(v);
    }
}

// ---- loss = scale * sum of per-row losses (one block, double accumulation) ------
// mf-budget: regs<=32 smem<=3072 spill=0  (sm_90 measured: regs 22 smem 2048)
__global__ void ce_reduce_kernel(const float *__restrict__ row_loss, size_t n_rows,
                                 const int64_t *__restrict__ counters, int mean, float *__restrict__ loss)
{
    __shared__ double sh[kBlock];
    ce_reduce_losses<kBlock>(row_loss, n_rows, counters, mean, loss, sh); // mean of 0 rows: 0
}

// ---- launchers ------------------------------------------------------------------
// Scratch: the RAII holder of mf_device.cuh.

static mf_status launch_row(cudaStream_t stream, mf_dtype dtype, size_t rows, float *tile, const void *bias,
                            const int64_t *labels, const RowParams &p)
{
    if (dtype == MF_DTYPE_BF16)
        ce_row_kernel<__nv_bfloat16><<<(unsigned)rows, kBlock, 0, stream>>>(
            tile, static_cast<const __nv_bfloat16 *>(bias), labels, p);
    else
        ce_row_kernel<float>
            <<<(unsigned)rows, kBlock, 0, stream>>>(tile, static_cast<const float *>(bias), labels, p);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// cuBLAS is column-major: a row-major R x S matrix reads as its S x R transpose.
//   logits (row-major C x V)   = hidden[chunk] (C x D) . W^T (D x V)
//     column-major: tile^T (V x C) = op_T(W^T as D x V) . hidden^T (D x C)
//   grad_hidden (C x D)        = G (C x V) . W (V x D)
//     column-major: gh^T (D x C) = W^T (D x V) . G^T (V x C)
//   grad_W (V x D)             = G^T (V x C) . hidden[chunk] (C x D)
//     column-major: gW^T (D x V) = hidden^T (D x C) . op_T(G^T as V x C)
static mf_status gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                      const void *A, cudaDataType_t at, int lda, const void *B, cudaDataType_t bt, int ldb,
                      float beta, float *C, int ldc)
{
    const float alpha = 1.0f;
    MF_CUBLAS_CHECK(cublasGemmEx(h, ta, tb, m, n, k, &alpha, A, at, lda, B, bt, ldb, &beta, C, CUDA_R_32F,
                                 ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return MF_OK;
}

} // namespace MF_NS

extern "C" mf_status MF_FN(cross_entropy_chunked)(mf_context *ctx, const mf_ce_args *a)
{
    using namespace MF_NS;
    if (ctx == nullptr || a == nullptr)
        return mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "ctx or args is NULL");
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    cublasHandle_t handle = (cublasHandle_t)mf_context_cublas(ctx);
    if (handle == nullptr)
        return mf_set_error(MF_ERR_BACKEND, __func__, __FILE__, __LINE__, "the context has no cuBLAS handle");
    const mf_cross_entropy_options &o = a->opts;
    const size_t N = (size_t)a->n_rows, D = (size_t)a->hidden_dim, V = (size_t)a->vocab;
    const size_t C = (size_t)a->plan.chunk_rows;
    if (C == 0 || C > (size_t)INT_MAX || V > (size_t)INT_MAX / 2 || D > (size_t)INT_MAX)
        return mf_set_error(MF_ERR_INVALID_SIZE, __func__, __FILE__, __LINE__,
                            "chunk %zu, vocab %zu or hidden_dim %zu out of cuBLAS range", C, V, D);
    const bool forward = a->mode != MF_CE_MODE_BACKWARD;
    const bool backward = a->mode != MF_CE_MODE_FORWARD;
    const bool bf16 = a->dtype == MF_DTYPE_BF16;
    const size_t es = bf16 ? 2 : 4;
    const cudaDataType_t in_type = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const int64_t shift_len = o.shift_labels ? (o.seq_len > 0 ? o.seq_len : a->n_rows) : 0;

    // 1. Labels: count valid rows (mean), reject out-of-range ones.
    Scratch counters(ctx);
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, 2 * sizeof(int64_t), &counters.ptr));
    int64_t *d_counters = static_cast<int64_t *>(counters.ptr);
    ce_count_kernel<<<1, kBlock, 0, stream>>>(a->labels, N, shift_len, o.ignore_index, a->vocab, d_counters);
    MF_LAUNCH_CHECK();
    // n_valid stays on the device (the row and reduce kernels read it); the
    // first out-of-range row is read back once, after the launches.
    const bool per_row = o.reduction == MF_CE_REDUCTION_NONE;

    // 2. Scratch: per-row losses (reduced at the end) and the chunk tile.
    Scratch row_loss(ctx), tile_buf(ctx);
    if (forward && !per_row) MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, N * sizeof(float), &row_loss.ptr));
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, C * V * sizeof(float), &tile_buf.ptr));
    float *tile = static_cast<float *>(tile_buf.ptr);
    if (backward && a->grad_bias != nullptr)
        MF_CUDA_CHECK(cudaMemsetAsync(a->grad_bias, 0, V * sizeof(float), stream));

    RowParams p;
    p.row0 = 0;
    p.ldt = V;
    p.vocab = a->vocab;
    p.shift_len = shift_len;
    p.ignore_index = o.ignore_index;
    p.eps = o.label_smoothing;
    p.lambda = o.z_loss;
    p.cap = o.softcap;
    p.lse_in = a->mode == MF_CE_MODE_BACKWARD ? a->lse_in : nullptr;
    p.lse_out = forward ? a->lse_out : nullptr;
    p.row_loss = forward ? (per_row ? a->loss : static_cast<float *>(row_loss.ptr)) : nullptr;
    p.backward = backward;
    p.grad_loss = a->grad_loss;
    p.grad_per_row = per_row;
    p.counters = d_counters;
    p.mean = o.reduction == MF_CE_REDUCTION_MEAN;

    const char *hidden = static_cast<const char *>(a->hidden);
    const int iV = (int)V, iD = (int)D;
    for (size_t row0 = 0; row0 < N; row0 += C) {
        const size_t rows = N - row0 < C ? N - row0 : C;
        const int ir = (int)rows;
        const void *h_chunk = hidden + row0 * D * es;
        // 1. logits tile (fp32) = hidden[chunk] . W^T
        MF_TRY(gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, iV, ir, iD, a->weight, in_type, iD, h_chunk, in_type,
                    iD, 0.0f, tile, iV));
        // 2. per-row softmax statistics, loss, gradient in place
        p.row0 = row0;
        MF_TRY(launch_row(stream, a->dtype, rows, tile, a->bias, a->labels, p));
        if (!backward) continue;
        // 3. gradients of this chunk
        if (a->grad_bias != nullptr) {
            const unsigned blocks = (unsigned)((V + kBlock - 1) / kBlock);
            ce_bias_grad_kernel<<<blocks, kBlock, 0, stream>>>(tile, V, rows, V, a->grad_bias);
            MF_LAUNCH_CHECK();
        }
        cudaDataType_t g_type = CUDA_R_32F;
        int ldg = iV;
        if (bf16) { // cuBLAS needs both operands in one type: narrow G like W and hidden
            ce_tile_to_bf16_kernel<<<(unsigned)rows, kBlock, 0, stream>>>(tile, V, V);
            MF_LAUNCH_CHECK();
            g_type = CUDA_R_16BF;
            ldg = 2 * iV;
        }
        if (a->grad_hidden != nullptr)
            MF_TRY(gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, iD, ir, iV, a->weight, in_type, iD, tile, g_type,
                        ldg, 0.0f, a->grad_hidden + row0 * D, iD));
        if (a->grad_weight != nullptr)
            MF_TRY(gemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, iD, iV, ir, h_chunk, in_type, iD, tile, g_type, ldg,
                        row0 == 0 ? 0.0f : 1.0f, a->grad_weight, iD));
    }

    if (forward && !per_row) {
        ce_reduce_kernel<<<1, kBlock, 0, stream>>>(static_cast<const float *>(row_loss.ptr), N, d_counters,
                                                   p.mean, a->loss);
        MF_LAUNCH_CHECK();
    }
    // The first out-of-range label (counters[1]) is a deferred check of the
    // context: copied to page-locked memory without waiting and reported by
    // the next synchronization (src/ops/cross_entropy.c). No read-back, no sync.
    MF_TRY(mf_cross_entropy_defer_label_check(ctx, __func__, d_counters + 1, a->labels, (int64_t)N,
                                              shift_len != 0, (int64_t)V, o.ignore_index));
    return MF_OK;
}
