/* cudahost/src/cublas.cpp: the cuBLAS subset host mode provides, computed on the CPU by OpenBLAS.
 *
 * Every function is defined under its cudahost_ name (cudahost/cublas_rename.h) with the signature NVIDIA's
 * <cublas_v2.h> declares, so host-mode code that calls cuBLAS links unchanged and can coexist with libcublas.
 *
 * Provided: handle create/destroy, stream, workspace, math mode, pointer mode, atomics mode, version/property,
 * status name/string; Sgemm, SgemmBatched, SgemmStridedBatched, GemmEx, GemmBatchedEx, GemmStridedBatchedEx
 * (and the _64 forms). Matrices are column-major as in cuBLAS. GemmEx accepts A/B in CUDA_R_32F, CUDA_R_16BF or
 * CUDA_R_16F (both the same type), C in CUDA_R_32F or the inputs' 16-bit type, with compute type
 * CUBLAS_COMPUTE_32F (and its _PEDANTIC / _FAST_16F / _FAST_16BF / _FAST_TF32 variants, all computed in fp32) and
 * float alpha/beta. 16-bit inputs are converted to fp32 tile by tile and multiplied by cblas_sgemm; a 16-bit C is
 * accumulated in fp32 and rounded to nearest even once. beta == 0 never reads C (it may hold NaN garbage).
 * Arguments are validated as cuBLAS does: a null handle is CUBLAS_STATUS_NOT_INITIALIZED; a bad operation,
 * negative size, too small leading dimension or negative batch count is CUBLAS_STATUS_INVALID_VALUE; an
 * unsupported type combination is CUBLAS_STATUS_NOT_SUPPORTED. Calls run synchronously on the calling thread,
 * after the handle's stream has drained.
 */
#include "cudahost/cublas_rename.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cblas.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <utility>
#include <new>
#include <vector>

/* The host-mode runtime's stream synchronization (weak: this file also links without the runtime). */
/* (uncounted: the library's own drain is not a synchronization of the caller; cudahost/counters.h) */
extern "C" cudaError_t cudahost_stream_drain_(cudaStream_t stream) __attribute__((weak));
extern "C" void openblas_set_num_threads(int num_threads) __attribute__((weak));

struct cublasContext {
    cudaStream_t stream;
    void *workspace;
    size_t workspace_bytes;
    cublasMath_t math_mode;
    cublasPointerMode_t pointer_mode;
    cublasAtomicsMode_t atomics_mode;
};

namespace {

constexpr int64_t kTileMN = 512; /* tile of C converted/accumulated at once (16-bit operands) */
constexpr int64_t kTileK = 512;

void drain_stream(cublasHandle_t h)
{
    if (cudahost_stream_drain_) (void)cudahost_stream_drain_(h->stream);
}

bool valid_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

enum class Elem { F32, BF16, F16 };

bool elem_of(cudaDataType t, Elem *e)
{
    switch (t) {
    case CUDA_R_32F: *e = Elem::F32; return true;
    case CUDA_R_16BF: *e = Elem::BF16; return true;
    case CUDA_R_16F: *e = Elem::F16; return true;
    default: return false;
    }
}

size_t elem_size(Elem e) { return e == Elem::F32 ? 4 : 2; }

float load(const void *p, Elem e, size_t i)
{
    switch (e) {
    case Elem::F32: return static_cast<const float *>(p)[i];
    case Elem::BF16: return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    default: return __half2float(static_cast<const __half *>(p)[i]);
    }
}

void store(void *p, Elem e, size_t i, float v)
{
    switch (e) {
    case Elem::F32: static_cast<float *>(p)[i] = v; break;
    case Elem::BF16: static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v); break;
    default: static_cast<__half *>(p)[i] = __float2half_rn(v); break;
    }
}

bool compute_is_32f(cublasComputeType_t c)
{
    return c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC || c == CUBLAS_COMPUTE_32F_FAST_16F ||
           c == CUBLAS_COMPUTE_32F_FAST_16BF || c == CUBLAS_COMPUTE_32F_FAST_TF32;
}

CBLAS_TRANSPOSE cblas_op(cublasOperation_t op) { return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans; }

/* Shared argument checks of every gemm entry point. */
cublasStatus_t check_gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                          int64_t n, int64_t k, const void *alpha, int64_t lda, int64_t ldb, const void *beta,
                          int64_t ldc, int64_t batch)
{
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!valid_op(ta) || !valid_op(tb) || m < 0 || n < 0 || k < 0 || batch < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (lda < std::max<int64_t>(1, ta == CUBLAS_OP_N ? m : k)) return CUBLAS_STATUS_INVALID_VALUE;
    if (ldb < std::max<int64_t>(1, tb == CUBLAS_OP_N ? k : n)) return CUBLAS_STATUS_INVALID_VALUE;
    if (ldc < std::max<int64_t>(1, m)) return CUBLAS_STATUS_INVALID_VALUE;
    if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    /* OpenBLAS takes 32-bit sizes */
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX ||
        ldc > INT32_MAX)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return CUBLAS_STATUS_SUCCESS;
}

/* C(i0:i0+mb, j0:j0+nb) = beta * C: zero without reading when beta == 0. */
void scale_c(void *C, Elem ce, int64_t ldc, int64_t i0, int64_t mb, int64_t j0, int64_t nb, float beta)
{
    for (int64_t j = j0; j < j0 + nb; ++j)
        for (int64_t i = i0; i < i0 + mb; ++i) {
            size_t idx = (size_t)i + (size_t)j * (size_t)ldc;
            store(C, ce, idx, beta == 0.0f ? 0.0f : beta * load(C, ce, idx));
        }
}

/* The rows x cols block at (r0, c0) of op(X) in fp32 (X column-major with leading dimension ld), kept in X's
   layout: column-major rows x cols if op is N, cols x rows if T. Returns the block's leading dimension. */
int64_t load_op_tile(float *dst, const void *X, Elem e, int64_t ld, cublasOperation_t op, int64_t r0,
                     int64_t rows, int64_t c0, int64_t cols)
{
    if (op != CUBLAS_OP_N) {
        std::swap(r0, c0);
        std::swap(rows, cols);
    }
    for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < rows; ++r)
            dst[r + c * rows] = load(X, e, (size_t)(r0 + r) + (size_t)(c0 + c) * (size_t)ld);
    return rows;
}

/* One column-major product C = alpha op(A) op(B) + beta C. Arguments already validated; m, n > 0. */
cublasStatus_t gemm_one(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                        float alpha, const void *A, Elem ae, int64_t lda, const void *B, Elem be, int64_t ldb,
                        float beta, void *C, Elem ce, int64_t ldc)
{
    if (C == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    const bool use_ab = k > 0 && alpha != 0.0f;
    if (use_ab && (A == nullptr || B == nullptr)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!use_ab) {
        scale_c(C, ce, ldc, 0, m, 0, n, beta);
        return CUBLAS_STATUS_SUCCESS;
    }
    if (ae == Elem::F32 && be == Elem::F32 && ce == Elem::F32) {
        float *c = static_cast<float *>(C);
        if (beta == 0.0f) scale_c(C, ce, ldc, 0, m, 0, n, 0.0f); /* C may hold NaN: never multiply it */
        cblas_sgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), (blasint)m, (blasint)n, (blasint)k, alpha,
                    static_cast<const float *>(A), (blasint)lda, static_cast<const float *>(B), (blasint)ldb,
                    beta, c, (blasint)ldc);
        return CUBLAS_STATUS_SUCCESS;
    }
    /* Tiled: convert op(A)/op(B) tiles (in their stored layout) to fp32, accumulate a C tile in fp32. */
    std::vector<float> ta_buf, tb_buf, tc_buf;
    try {
        ta_buf.resize((size_t)kTileMN * kTileK);
        tb_buf.resize((size_t)kTileK * kTileMN);
        tc_buf.resize((size_t)kTileMN * kTileMN);
    } catch (const std::bad_alloc &) {
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    for (int64_t j0 = 0; j0 < n; j0 += kTileMN) {
        const int64_t nb = std::min(kTileMN, n - j0);
        for (int64_t i0 = 0; i0 < m; i0 += kTileMN) {
            const int64_t mb = std::min(kTileMN, m - i0);
            /* C tile in fp32, column-major with leading dimension mb */
            float *tc = tc_buf.data();
            for (int64_t j = 0; j < nb; ++j)
                for (int64_t i = 0; i < mb; ++i)
                    tc[i + j * mb] =
                        beta == 0.0f ? 0.0f
                                     : beta * load(C, ce, (size_t)(i0 + i) + (size_t)(j0 + j) * (size_t)ldc);
            for (int64_t p0 = 0; p0 < k; p0 += kTileK) {
                const int64_t kb = std::min(kTileK, k - p0);
                /* op(A) rows i0.., cols p0..; op(B) rows p0.., cols j0.. */
                float *a = ta_buf.data(), *b = tb_buf.data();
                const int64_t a_ld = load_op_tile(a, A, ae, lda, ta, i0, mb, p0, kb);
                const int64_t b_ld = load_op_tile(b, B, be, ldb, tb, p0, kb, j0, nb);
                cblas_sgemm(CblasColMajor, cblas_op(ta), cblas_op(tb), (blasint)mb, (blasint)nb, (blasint)kb,
                            alpha, a, (blasint)a_ld, b, (blasint)b_ld, 1.0f, tc, (blasint)mb);
            }
            for (int64_t j = 0; j < nb; ++j)
                for (int64_t i = 0; i < mb; ++i)
                    store(C, ce, (size_t)(i0 + i) + (size_t)(j0 + j) * (size_t)ldc, tc[i + j * mb]);
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}

float read_scalar(const void *p) { return *static_cast<const float *>(p); }

/* The checks of the Ex entry points: check_gemm's, then the types. */
cublasStatus_t check_ex(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                        int64_t n, int64_t k, const void *alpha, int64_t lda, int64_t ldb, const void *beta,
                        int64_t ldc, int64_t batch, cudaDataType at, cudaDataType bt, cudaDataType ct,
                        cublasComputeType_t compute, Elem *ae, Elem *be, Elem *ce)
{
    const cublasStatus_t st = check_gemm(handle, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc, batch);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (!compute_is_32f(compute)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!elem_of(at, ae) || !elem_of(bt, be) || !elem_of(ct, ce)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (*ae != *be) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (*ce != Elem::F32 && *ce != *ae) return CUBLAS_STATUS_NOT_SUPPORTED;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t gemm_strided(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                            int64_t m, int64_t n, int64_t k, const void *alpha, const void *A, Elem ae,
                            int64_t lda, long long strideA, const void *B, Elem be, int64_t ldb,
                            long long strideB, const void *beta, void *C, Elem ce, int64_t ldc,
                            long long strideC, int64_t batch)
{
    cublasStatus_t st = check_gemm(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batch);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    drain_stream(handle);
    const float a = read_scalar(alpha), b = read_scalar(beta);
    for (int64_t i = 0; i < batch; ++i) {
        const char *Ai =
            A ? static_cast<const char *>(A) + (ptrdiff_t)(i * strideA) * (ptrdiff_t)elem_size(ae) : nullptr;
        const char *Bi =
            B ? static_cast<const char *>(B) + (ptrdiff_t)(i * strideB) * (ptrdiff_t)elem_size(be) : nullptr;
        char *Ci = C ? static_cast<char *>(C) + (ptrdiff_t)(i * strideC) * (ptrdiff_t)elem_size(ce) : nullptr;
        st = gemm_one(transa, transb, m, n, k, a, Ai, ae, lda, Bi, be, ldb, b, Ci, ce, ldc);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t gemm_batched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                            int64_t m, int64_t n, int64_t k, const void *alpha, const void *const Aarray[],
                            Elem ae, int64_t lda, const void *const Barray[], Elem be, int64_t ldb,
                            const void *beta, void *const Carray[], Elem ce, int64_t ldc, int64_t batch)
{
    cublasStatus_t st = check_gemm(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batch);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    if (Aarray == nullptr || Barray == nullptr || Carray == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    drain_stream(handle);
    const float a = read_scalar(alpha), b = read_scalar(beta);
    for (int64_t i = 0; i < batch; ++i) {
        st = gemm_one(transa, transb, m, n, k, a, Aarray[i], ae, lda, Barray[i], be, ldb, b, Carray[i], ce,
                      ldc);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The handle's settings: a null handle is CUBLAS_STATUS_NOT_INITIALIZED, a null result pointer or a value the
   setter does not take CUBLAS_STATUS_INVALID_VALUE. */
template <typename T> cublasStatus_t get_setting(cublasHandle_t handle, T cublasContext::*field, T *value)
{
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *value = handle->*field;
    return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t set_setting(cublasHandle_t handle, T cublasContext::*field, T value, bool valid)
{
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!valid) return CUBLAS_STATUS_INVALID_VALUE;
    handle->*field = value;
    return CUBLAS_STATUS_SUCCESS;
}

} /* namespace */

/* ---- handle ------------------------------------------------------------------------------------------------ */

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t *handle)
{
    if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    cublasContext *h = new (std::nothrow) cublasContext();
    if (h == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
    h->stream = nullptr;
    h->workspace = nullptr;
    h->workspace_bytes = 0;
    h->math_mode = CUBLAS_DEFAULT_MATH;
    h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    h->atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
#if defined(__SANITIZE_THREAD__)
    /* OpenBLAS's own threads are not instrumented: keep the BLAS on the calling thread under TSan. */
    if (openblas_set_num_threads) openblas_set_num_threads(1);
#endif
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle)
{
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    drain_stream(handle);
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *version = CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetProperty(libraryPropertyType type, int *value)
{
    if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = streamId;
    /* cuBLAS resets a user workspace when the stream changes */
    handle->workspace = nullptr;
    handle->workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
    return get_setting(handle, &cublasContext::stream, streamId);
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                                  size_t workspaceSizeInBytes)
{
    if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    /* cuBLAS requires a workspace aligned to at least 256 bytes */
    if (workspace != nullptr && (reinterpret_cast<uintptr_t>(workspace) % 256u) != 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (workspace == nullptr && workspaceSizeInBytes != 0) return CUBLAS_STATUS_INVALID_VALUE;
    handle->workspace = workspace;
    handle->workspace_bytes = workspaceSizeInBytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    const unsigned base = (unsigned)mode & 0xFu, flags = (unsigned)mode & ~0xFu;
    /* recorded; host mode always computes in full fp32 */
    return set_setting(handle, &cublasContext::math_mode, mode,
                       base <= (unsigned)CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH &&
                           (flags & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) == 0);
}

cublasStatus_t CUBLASWINAPI cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    return get_setting(handle, &cublasContext::math_mode, mode);
}

cublasStatus_t CUBLASWINAPI cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)
{
    /* device memory is host memory here, so both modes read alpha/beta the same way */
    return set_setting(handle, &cublasContext::pointer_mode, mode,
                       mode == CUBLAS_POINTER_MODE_HOST || mode == CUBLAS_POINTER_MODE_DEVICE);
}

cublasStatus_t CUBLASWINAPI cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode)
{
    return get_setting(handle, &cublasContext::pointer_mode, mode);
}

cublasStatus_t CUBLASWINAPI cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode)
{
    return set_setting(handle, &cublasContext::atomics_mode, mode,
                       mode == CUBLAS_ATOMICS_NOT_ALLOWED || mode == CUBLAS_ATOMICS_ALLOWED);
}

cublasStatus_t CUBLASWINAPI cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode)
{
    return get_setting(handle, &cublasContext::atomics_mode, mode);
}

const char *CUBLASWINAPI cublasGetStatusName(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *CUBLASWINAPI cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized (null or destroyed handle)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "the device architecture does not support the operation";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "license error";
    }
    return "unknown cuBLAS status";
}

/* ---- gemm ------------------------------------------------------------------------------------------------- */

cublasStatus_t CUBLASWINAPI cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                              cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                              const float *alpha, const float *A, int64_t lda, const float *B,
                                              int64_t ldb, const float *beta, float *C, int64_t ldc)
{
    return gemm_strided(handle, transa, transb, m, n, k, alpha, A, Elem::F32, lda, 0, B, Elem::F32, ldb, 0,
                        beta, C, Elem::F32, ldc, 0, 1);
}

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k, const float *alpha,
                                           const float *A, int lda, const float *B, int ldb,
                                           const float *beta, float *C, int ldc)
{
    return cublasSgemm_v2_64(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched_64(cublasHandle_t handle, cublasOperation_t transa,
                                                         cublasOperation_t transb, int64_t m, int64_t n,
                                                         int64_t k, const float *alpha, const float *A,
                                                         int64_t lda, long long int strideA, const float *B,
                                                         int64_t ldb, long long int strideB,
                                                         const float *beta, float *C, int64_t ldc,
                                                         long long int strideC, int64_t batchCount)
{
    return gemm_strided(handle, transa, transb, m, n, k, alpha, A, Elem::F32, lda, strideA, B, Elem::F32, ldb,
                        strideB, beta, C, Elem::F32, ldc, strideC, batchCount);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                      cublasOperation_t transb, int m, int n, int k,
                                                      const float *alpha, const float *A, int lda,
                                                      long long int strideA, const float *B, int ldb,
                                                      long long int strideB, const float *beta, float *C,
                                                      int ldc, long long int strideC, int batchCount)
{
    return cublasSgemmStridedBatched_64(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb,
                                        strideB, beta, C, ldc, strideC, batchCount);
}

cublasStatus_t CUBLASWINAPI cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                               cublasOperation_t transb, int m, int n, int k,
                                               const float *alpha, const float *const Aarray[], int lda,
                                               const float *const Barray[], int ldb, const float *beta,
                                               float *const Carray[], int ldc, int batchCount)
{
    return gemm_batched(handle, transa, transb, m, n, k, alpha, reinterpret_cast<const void *const *>(Aarray),
                        Elem::F32, lda, reinterpret_cast<const void *const *>(Barray), Elem::F32, ldb, beta,
                        reinterpret_cast<void *const *>(Carray), Elem::F32, ldc, batchCount);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                            cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                            const void *alpha, const void *A, cudaDataType Atype, int64_t lda,
                                            const void *B, cudaDataType Btype, int64_t ldb, const void *beta,
                                            void *C, cudaDataType Ctype, int64_t ldc,
                                            cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    return cublasGemmStridedBatchedEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype,
                                         ldb, 0, beta, C, Ctype, ldc, 0, 1, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k, const void *alpha,
                                         const void *A, cudaDataType Atype, int lda, const void *B,
                                         cudaDataType Btype, int ldb, const void *beta, void *C,
                                         cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo)
{
    return cublasGemmEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C,
                           Ctype, ldc, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m, int64_t n,
    int64_t k, const void *alpha, const void *A, cudaDataType Atype, int64_t lda, long long int strideA,
    const void *B, cudaDataType Btype, int64_t ldb, long long int strideB, const void *beta, void *C,
    cudaDataType Ctype, int64_t ldc, long long int strideC, int64_t batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    (void)algo;
    Elem ae, be, ce;
    const cublasStatus_t st = check_ex(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,
                                       batchCount, Atype, Btype, Ctype, computeType, &ae, &be, &ce);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    return gemm_strided(handle, transa, transb, m, n, k, alpha, A, ae, lda, strideA, B, be, ldb, strideB,
                        beta, C, ce, ldc, strideC, batchCount);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA, const void *B,
    cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C, cudaDataType Ctype,
    int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    return cublasGemmStridedBatchedEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,
                                         Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount,
                                         computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *const Aarray[], cudaDataType Atype, int lda, const void *const Barray[],
    cudaDataType Btype, int ldb, const void *beta, void *const Carray[], cudaDataType Ctype, int ldc,
    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    (void)algo;
    Elem ae, be, ce;
    const cublasStatus_t st = check_ex(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc,
                                       batchCount, Atype, Btype, Ctype, computeType, &ae, &be, &ce);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    return gemm_batched(handle, transa, transb, m, n, k, alpha, Aarray, ae, lda, Barray, be, ldb, beta,
                        Carray, ce, ldc, batchCount);
}

/* ---- the host GEMM for cuBLASLt (src/cublaslt.cpp) ------------------------------------------------------------ */
namespace cudahost {
namespace blas {
/* P = alpha op(A) op(B), column-major fp32 m x n with leading dimension ldp; A/B in CUDA_R_32F, CUDA_R_16BF or
   CUDA_R_16F (the same type). Arguments already validated by the caller. */
cublasStatus_t gemm_f32_out(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                            float alpha, const void *A, cudaDataType at, int64_t lda, const void *B,
                            cudaDataType bt, int64_t ldb, float *P, int64_t ldp)
{
    Elem ae, be;
    if (!elem_of(at, &ae) || !elem_of(bt, &be) || ae != be) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX ||
        ldp > INT32_MAX)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm_one(ta, tb, m, n, k, alpha, A, ae, lda, B, be, ldb, 0.0f, P, Elem::F32, ldp);
}
} // namespace blas
} // namespace cudahost
