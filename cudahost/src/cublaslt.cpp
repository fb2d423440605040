/* cudahost/src/cublaslt.cpp: the cuBLASLt subset host mode provides, on the host GEMM of src/cublas.cpp (OpenBLAS).
 *
 * Every function is defined under its cudahost_ name (cudahost/cublaslt_rename.h) with the signature NVIDIA's
 * <cublasLt.h> declares. The descriptors live inside NVIDIA's semi-opaque structures (cublasLtMatmulDescOpaque_t,
 * ...), so both the *Create functions and the stack-allocated *Init helpers of cublasLt.h work.
 *
 * Provided: cublasLtCreate/Destroy, GetVersion/GetCudartVersion/GetProperty/GetStatusName/GetStatusString; matrix
 * layouts (CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F; CUBLASLT_ORDER_COL or CUBLASLT_ORDER_ROW; batch count and strided
 * batch offset); matmul descriptors (CUBLAS_COMPUTE_32F and its variants with CUDA_R_32F scale, host or device
 * pointer mode, TRANSA/TRANSB N or T, epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS, GELU_AUX,
 * GELU_AUX_BIAS (the GELU input stored to the aux matrix) with a bias of the output's type or fp32, bias batch stride; SM_COUNT_TARGET and FAST_ACCUM accepted and ignored); preferences
 * (every attribute stored; the workspace limit is met, host mode needs none); cublasLtMatmulAlgoGetHeuristic
 * returning one algorithm; cublasLtMatmul: D = epilogue(alpha op(A) op(B) + beta C + bias), computed in fp32 and
 * rounded once to D's type. The GELU epilogue is the tanh approximation, as cuBLASLt's. beta == 0 never reads C.
 * Anything else is CUBLAS_STATUS_NOT_SUPPORTED with a one-line message on stderr naming the attribute.
 */
#include "cudahost/cublas_rename.h"
#include "cudahost/cublaslt_rename.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <new>
#include <utility>
#include <vector>

/* (uncounted: the library's own drain is not a synchronization of the caller; cudahost/counters.h) */
extern "C" cudaError_t cudahost_stream_drain_(cudaStream_t stream) __attribute__((weak));

namespace cudahost {
namespace blas {
cublasStatus_t gemm_f32_out(cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                            float alpha, const void *A, cudaDataType at, int64_t lda, const void *B,
                            cudaDataType bt, int64_t ldb, float *P, int64_t ldp);
} // namespace blas
} // namespace cudahost

struct cublasLtContext {
    int unused;
};

namespace {

constexpr uint32_t kLayoutMagic = 0x4c59544cu, kDescMagic = 0x4353454du, kPrefMagic = 0x46455250u;

struct Layout {
    uint32_t magic;
    uint32_t type; /* cudaDataType */
    int32_t order; /* cublasLtOrder_t */
    int32_t batch;
    uint64_t rows, cols;
    int64_t ld, stride, plane_offset;
};
struct Desc {
    uint32_t magic;
    int32_t compute, scale, pointer_mode, transa, transb, transc, fill;
    uint32_t epilogue;
    int32_t bias_type; /* -1: the output's type */
    int32_t sm_count;
    int8_t fast_accum;
    const void *bias;
    int64_t bias_stride;
    void *aux; /* GELU_AUX: the GELU input, D's type, column-major (row-major if D is) with aux_ld */
    int64_t aux_ld, aux_stride;
    int32_t aux_type;
};
struct Pref {
    uint32_t magic, search_mode;
    uint64_t max_workspace;
    uint32_t reduction_mask, align_a, align_b, align_c, align_d;
    float max_waves;
    uint64_t impl_mask;
};
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t),
              "layout state must fit NVIDIA's opaque struct");
static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t),
              "descriptor state must fit NVIDIA's opaque struct");
static_assert(sizeof(Pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t),
              "preference state must fit NVIDIA's struct");

Layout *L(cublasLtMatrixLayout_t p) { return reinterpret_cast<Layout *>(p->data); }
Desc *D(cublasLtMatmulDesc_t p) { return reinterpret_cast<Desc *>(p->data); }
Pref *P(cublasLtMatmulPreference_t p) { return reinterpret_cast<Pref *>(p->data); }

cublasStatus_t unsupported(const char *what, long long value, const char *supported)
{
    fprintf(stderr, "cudahost: cuBLASLt: %s = %lld is not supported in host execution mode (supported: %s)\n",
            what, value, supported);
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

bool elem_type(int32_t t) { return t == CUDA_R_32F || t == CUDA_R_16BF || t == CUDA_R_16F; }
size_t elem_bytes(int32_t t) { return t == CUDA_R_32F ? 4 : 2; }
float load(const void *p, int32_t t, size_t i)
{
    if (t == CUDA_R_32F) return static_cast<const float *>(p)[i];
    if (t == CUDA_R_16BF) return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    return __half2float(static_cast<const __half *>(p)[i]);
}
void store(void *p, int32_t t, size_t i, float v)
{
    if (t == CUDA_R_32F)
        static_cast<float *>(p)[i] = v;
    else if (t == CUDA_R_16BF)
        static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
    else
        static_cast<__half *>(p)[i] = __float2half_rn(v);
}
bool compute_32f(int32_t c)
{
    return c == CUBLAS_COMPUTE_32F || c == CUBLAS_COMPUTE_32F_PEDANTIC || c == CUBLAS_COMPUTE_32F_FAST_16F ||
           c == CUBLAS_COMPUTE_32F_FAST_16BF || c == CUBLAS_COMPUTE_32F_FAST_TF32;
}
/* element (i, j) of a layout */
size_t at(const Layout *l, uint64_t i, uint64_t j)
{
    return l->order == CUBLASLT_ORDER_ROW ? (size_t)(i * (uint64_t)l->ld + j)
                                          : (size_t)(i + j * (uint64_t)l->ld);
}

/* setter/getter helpers: the attribute's size must match exactly, as cuBLASLt checks */
template <class T> cublasStatus_t get_val(const void *buf, size_t size, T *out)
{
    if (buf == nullptr || size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(out, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}
template <class T> cublasStatus_t put_val(const T &v, void *buf, size_t size, size_t *written)
{
    if (size == 0 && buf == nullptr) {
        if (written == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
        *written = sizeof(T);
        return CUBLAS_STATUS_SUCCESS;
    }
    if (written) *written = sizeof(T);
    if (buf == nullptr || size < sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, &v, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

void layout_init(Layout *l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld)
{
    memset(l, 0, sizeof *l);
    l->magic = kLayoutMagic;
    l->type = (uint32_t)type;
    l->order = CUBLASLT_ORDER_COL;
    l->batch = 1;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
}
void desc_init(Desc *d, cublasComputeType_t compute, cudaDataType_t scale)
{
    memset(d, 0, sizeof *d);
    d->magic = kDescMagic;
    d->compute = compute;
    d->scale = scale;
    d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    d->transa = d->transb = d->transc = CUBLAS_OP_N;
    d->fill = CUBLAS_FILL_MODE_FULL;
    d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    d->bias_type = -1;
    d->aux_type = -1;
}
void pref_init(Pref *p)
{
    memset(p, 0, sizeof *p);
    p->magic = kPrefMagic;
    p->search_mode = CUBLASLT_SEARCH_BEST_FIT;
    p->reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
    p->align_a = p->align_b = p->align_c = p->align_d = 256;
    p->impl_mask = ~0ull;
}

cublasStatus_t check_layout(const Layout *l, const char *name)
{
    if (l == nullptr || l->magic != kLayoutMagic) return CUBLAS_STATUS_INVALID_VALUE;
    char what[64];
    if (!elem_type((int32_t)l->type)) {
        snprintf(what, sizeof what, "CUBLASLT_MATRIX_LAYOUT_TYPE of %s", name);
        return unsupported(what, l->type, "CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F");
    }
    if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW) {
        snprintf(what, sizeof what, "CUBLASLT_MATRIX_LAYOUT_ORDER of %s", name);
        return unsupported(what, l->order, "CUBLASLT_ORDER_COL, CUBLASLT_ORDER_ROW");
    }
    if (l->plane_offset != 0) {
        snprintf(what, sizeof what, "CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET of %s", name);
        return unsupported(what, l->plane_offset, "0 (real types only)");
    }
    const uint64_t inner = l->order == CUBLASLT_ORDER_ROW ? l->cols : l->rows;
    if (l->batch < 1 || l->ld < 1 || (uint64_t)l->ld < inner) return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* Everything cublasLtMatmul and the heuristic check before computing. */
cublasStatus_t check_matmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                            cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d)
{
    if (h == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (desc == nullptr || D(desc)->magic != kDescMagic || a == nullptr || b == nullptr || c == nullptr ||
        d == nullptr)
        return CUBLAS_STATUS_INVALID_VALUE;
    const Desc *m = D(desc);
    if (!compute_32f(m->compute))
        return unsupported("CUBLASLT_MATMUL_DESC_COMPUTE_TYPE", m->compute,
                           "CUBLAS_COMPUTE_32F and its _FAST_/PEDANTIC forms");
    if (m->scale != CUDA_R_32F) return unsupported("CUBLASLT_MATMUL_DESC_SCALE_TYPE", m->scale, "CUDA_R_32F");
    for (auto [l, n] : { std::pair{ a, "A" }, std::pair{ b, "B" }, std::pair{ c, "C" }, std::pair{ d, "D" } })
        if (cublasStatus_t st = check_layout(L(l), n)) return st;
    const Layout *la = L(a), *lb = L(b), *lc = L(c), *ld = L(d);
    if (la->type != lb->type)
        return unsupported("CUBLASLT_MATRIX_LAYOUT_TYPE of B (differs from A's)", lb->type, "the type of A");
    if (lc->type != ld->type)
        return unsupported("CUBLASLT_MATRIX_LAYOUT_TYPE of C (differs from D's)", lc->type, "the type of D");
    if (ld->type != CUDA_R_32F && ld->type != la->type)
        return unsupported("CUBLASLT_MATRIX_LAYOUT_TYPE of D", ld->type, "CUDA_R_32F or the type of A and B");
    const uint64_t m_ = ld->rows, n_ = ld->cols;
    const uint64_t am = m->transa == CUBLAS_OP_N ? la->rows : la->cols,
                   ak = m->transa == CUBLAS_OP_N ? la->cols : la->rows;
    const uint64_t bk = m->transb == CUBLAS_OP_N ? lb->rows : lb->cols,
                   bn = m->transb == CUBLAS_OP_N ? lb->cols : lb->rows;
    if (am != m_ || bn != n_ || ak != bk || lc->rows != m_ || lc->cols != n_)
        return CUBLAS_STATUS_INVALID_VALUE;
    const int32_t batch = ld->batch;
    for (const Layout *l : { la, lb, lc })
        if (l->batch != batch && l->batch != 1) return CUBLAS_STATUS_INVALID_VALUE;
    if (m->bias_type != -1 && m->bias_type != CUDA_R_32F && (uint32_t)m->bias_type != ld->type)
        return unsupported("CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE", m->bias_type,
                           "the type of D, or CUDA_R_32F");
    const uint32_t e = m->epilogue;
    if ((e & CUBLASLT_EPILOGUE_BIAS) && m->bias == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
        /* the GELU input matrix: D's type, ld >= rows and a multiple of 8, as cuBLASLt requires */
        if (m->aux_type != -1 && (uint32_t)m->aux_type != ld->type)
            return unsupported("CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE", m->aux_type, "the type of D");
        const uint64_t inner = ld->order == CUBLASLT_ORDER_ROW ? n_ : m_;
        if (m->aux == nullptr || m->aux_ld < 1 || (uint64_t)m->aux_ld < inner || m->aux_ld % 8 != 0 ||
            m->aux_stride % 8 != 0)
            return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

float gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

} // namespace

/* ---- handle, versions ------------------------------------------------------------------------------------------ */

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *lightHandle)
{
    if (lightHandle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtContext *h = new (std::nothrow) cublasLtContext();
    if (h == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
    *lightHandle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t lightHandle)
{
    if (lightHandle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    delete lightHandle;
    return CUBLAS_STATUS_SUCCESS;
}

const char *CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) { return cublasGetStatusName(status); }
const char *CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status)
{
    return cublasGetStatusString(status);
}
size_t CUBLASWINAPI cublasLtGetVersion(void) { return CUBLAS_VERSION; }
size_t CUBLASWINAPI cublasLtGetCudartVersion(void) { return CUDART_VERSION; }
cublasStatus_t CUBLASWINAPI cublasLtGetProperty(libraryPropertyType type, int *value)
{
    if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
}

/* ---- matrix layouts -------------------------------------------------------------------------------------------- */

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
                                                              cudaDataType type, uint64_t rows, uint64_t cols,
                                                              int64_t ld)
{
    if (matLayout == nullptr || size < sizeof(cublasLtMatrixLayoutOpaque_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    layout_init(L(matLayout), type, rows, cols, ld);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout, cudaDataType type,
                                                       uint64_t rows, uint64_t cols, int64_t ld)
{
    if (matLayout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtMatrixLayoutOpaque_t *p = new (std::nothrow) cublasLtMatrixLayoutOpaque_t();
    if (p == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
    layout_init(L(p), type, rows, cols, ld);
    *matLayout = p;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout)
{
    delete matLayout; /* null is allowed */
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr,
                                                             const void *buf, size_t sizeInBytes)
{
    if (matLayout == nullptr || L(matLayout)->magic != kLayoutMagic) return CUBLAS_STATUS_INVALID_VALUE;
    Layout *l = L(matLayout);
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return get_val(buf, sizeInBytes, &l->type);
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return get_val(buf, sizeInBytes, &l->order);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return get_val(buf, sizeInBytes, &l->rows);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return get_val(buf, sizeInBytes, &l->cols);
    case CUBLASLT_MATRIX_LAYOUT_LD: return get_val(buf, sizeInBytes, &l->ld);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return get_val(buf, sizeInBytes, &l->batch);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return get_val(buf, sizeInBytes, &l->stride);
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET: return get_val(buf, sizeInBytes, &l->plane_offset);
    default:
        return unsupported("cublasLtMatrixLayoutAttribute_t", attr,
                           "TYPE, ORDER, ROWS, COLS, LD, BATCH_COUNT, STRIDED_BATCH_OFFSET, PLANE_OFFSET");
    }
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr, void *buf,
                                                             size_t sizeInBytes, size_t *sizeWritten)
{
    if (matLayout == nullptr || L(matLayout)->magic != kLayoutMagic) return CUBLAS_STATUS_INVALID_VALUE;
    const Layout *l = L(matLayout);
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return put_val(l->type, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return put_val(l->order, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return put_val(l->rows, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return put_val(l->cols, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_LD: return put_val(l->ld, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return put_val(l->batch, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        return put_val(l->stride, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET: return put_val(l->plane_offset, buf, sizeInBytes, sizeWritten);
    default:
        return unsupported("cublasLtMatrixLayoutAttribute_t", attr,
                           "TYPE, ORDER, ROWS, COLS, LD, BATCH_COUNT, "
                           "STRIDED_BATCH_OFFSET, PLANE_OFFSET");
    }
}

/* ---- matmul descriptors ---------------------------------------------------------------------------------------- */

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                                            cublasComputeType_t computeType,
                                                            cudaDataType_t scaleType)
{
    if (matmulDesc == nullptr || size < sizeof(cublasLtMatmulDescOpaque_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    desc_init(D(matmulDesc), computeType, scaleType);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                                     cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType)
{
    if (matmulDesc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtMatmulDescOpaque_t *p = new (std::nothrow) cublasLtMatmulDescOpaque_t();
    if (p == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
    desc_init(D(p), computeType, scaleType);
    *matmulDesc = p;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    delete matmulDesc;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void *buf, size_t sizeInBytes)
{
    if (matmulDesc == nullptr || D(matmulDesc)->magic != kDescMagic) return CUBLAS_STATUS_INVALID_VALUE;
    Desc *d = D(matmulDesc);
    cublasStatus_t st;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return get_val(buf, sizeInBytes, &d->compute);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return get_val(buf, sizeInBytes, &d->scale);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: {
        int32_t v;
        if ((st = get_val(buf, sizeInBytes, &v))) return st;
        if (v != CUBLASLT_POINTER_MODE_HOST && v != CUBLASLT_POINTER_MODE_DEVICE)
            return unsupported("CUBLASLT_MATMUL_DESC_POINTER_MODE", v, "CUBLASLT_POINTER_MODE_HOST, _DEVICE");
        d->pointer_mode = v;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB: {
        int32_t v;
        if ((st = get_val(buf, sizeInBytes, &v))) return st;
        if (v != CUBLAS_OP_N && v != CUBLAS_OP_T && v != CUBLAS_OP_C) return CUBLAS_STATUS_INVALID_VALUE;
        (attr == CUBLASLT_MATMUL_DESC_TRANSA ? d->transa : d->transb) =
            v == CUBLAS_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_TRANSC: {
        int32_t v;
        if ((st = get_val(buf, sizeInBytes, &v))) return st;
        if (v != CUBLAS_OP_N) return unsupported("CUBLASLT_MATMUL_DESC_TRANSC", v, "CUBLAS_OP_N");
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_FILL_MODE: {
        int32_t v;
        if ((st = get_val(buf, sizeInBytes, &v))) return st;
        if (v != CUBLAS_FILL_MODE_FULL)
            return unsupported("CUBLASLT_MATMUL_DESC_FILL_MODE", v, "CUBLAS_FILL_MODE_FULL");
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
        uint32_t v;
        if ((st = get_val(buf, sizeInBytes, &v))) return st;
        if (v != CUBLASLT_EPILOGUE_DEFAULT && v != CUBLASLT_EPILOGUE_RELU && v != CUBLASLT_EPILOGUE_BIAS &&
            v != CUBLASLT_EPILOGUE_RELU_BIAS && v != CUBLASLT_EPILOGUE_GELU &&
            v != CUBLASLT_EPILOGUE_GELU_BIAS && v != CUBLASLT_EPILOGUE_GELU_AUX &&
            v != CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
            return unsupported("CUBLASLT_MATMUL_DESC_EPILOGUE", v,
                               "DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS, GELU_AUX, GELU_AUX_BIAS");
        d->epilogue = v;
        return CUBLAS_STATUS_SUCCESS;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return get_val(buf, sizeInBytes, &d->bias);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return get_val(buf, sizeInBytes, &d->bias_stride);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return get_val(buf, sizeInBytes, &d->bias_type);
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
        return get_val(buf, sizeInBytes, &d->sm_count);                                     /* a GPU hint */
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: return get_val(buf, sizeInBytes, &d->fast_accum); /* FP8 only */
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return get_val(buf, sizeInBytes, &d->aux);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return get_val(buf, sizeInBytes, &d->aux_ld);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE: return get_val(buf, sizeInBytes, &d->aux_stride);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE: return get_val(buf, sizeInBytes, &d->aux_type);
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER:
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER: {
        /* FP8 scaling: only the default (no pointer) is accepted */
        const void *p;
        if ((st = get_val(buf, sizeInBytes, &p))) return st;
        if (p != nullptr) {
            char what[64];
            snprintf(what, sizeof what, "cublasLtMatmulDescAttributes_t %d (an FP8 scale/amax pointer)",
                     (int)attr);
            return unsupported(what, (long long)(uintptr_t)p, "NULL");
        }
        return CUBLAS_STATUS_SUCCESS;
    }
    default:
        return unsupported(
            "cublasLtMatmulDescAttributes_t", attr,
            "COMPUTE_TYPE, SCALE_TYPE, POINTER_MODE, TRANSA, TRANSB, TRANSC, FILL_MODE, EPILOGUE, "
            "BIAS_POINTER, BIAS_BATCH_STRIDE, BIAS_DATA_TYPE, EPILOGUE_AUX_POINTER, EPILOGUE_AUX_LD, "
            "EPILOGUE_AUX_BATCH_STRIDE, EPILOGUE_AUX_DATA_TYPE, SM_COUNT_TARGET, FAST_ACCUM");
    }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr, void *buf,
                                                           size_t sizeInBytes, size_t *sizeWritten)
{
    if (matmulDesc == nullptr || D(matmulDesc)->magic != kDescMagic) return CUBLAS_STATUS_INVALID_VALUE;
    const Desc *d = D(matmulDesc);
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return put_val(d->compute, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return put_val(d->scale, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: return put_val(d->pointer_mode, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_TRANSA: return put_val(d->transa, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_TRANSB: return put_val(d->transb, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_TRANSC: return put_val(d->transc, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_FILL_MODE: return put_val(d->fill, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return put_val(d->epilogue, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return put_val(d->bias, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
        return put_val(d->bias_stride, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return put_val(d->bias_type, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return put_val(d->aux, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return put_val(d->aux_ld, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
        return put_val(d->aux_stride, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
        return put_val(d->aux_type, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET: return put_val(d->sm_count, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM: return put_val(d->fast_accum, buf, sizeInBytes, sizeWritten);
    default:
        return unsupported("cublasLtMatmulDescAttributes_t", attr, "the attributes SetAttribute accepts");
    }
}

/* ---- preferences ----------------------------------------------------------------------------------------------- */

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                                                  size_t size)
{
    if (pref == nullptr || size < sizeof(cublasLtMatmulPreferenceOpaque_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    pref_init(P(pref));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    cublasLtMatmulPreferenceOpaque_t *p = new (std::nothrow) cublasLtMatmulPreferenceOpaque_t();
    if (p == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
    pref_init(P(p));
    *pref = p;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    delete pref;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 const void *buf, size_t sizeInBytes)
{
    if (pref == nullptr || P(pref)->magic != kPrefMagic) return CUBLAS_STATUS_INVALID_VALUE;
    Pref *p = P(pref);
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: return get_val(buf, sizeInBytes, &p->search_mode);
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return get_val(buf, sizeInBytes, &p->max_workspace);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: return get_val(buf, sizeInBytes, &p->reduction_mask);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return get_val(buf, sizeInBytes, &p->align_a);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return get_val(buf, sizeInBytes, &p->align_b);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return get_val(buf, sizeInBytes, &p->align_c);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return get_val(buf, sizeInBytes, &p->align_d);
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT: return get_val(buf, sizeInBytes, &p->max_waves);
    case CUBLASLT_MATMUL_PREF_IMPL_MASK: return get_val(buf, sizeInBytes, &p->impl_mask);
    default:
        return unsupported("cublasLtMatmulPreferenceAttributes_t", attr,
                           "SEARCH_MODE, MAX_WORKSPACE_BYTES, "
                           "REDUCTION_SCHEME_MASK, MIN_ALIGNMENT_*_BYTES, MAX_WAVES_COUNT, IMPL_MASK");
    }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 void *buf, size_t sizeInBytes,
                                                                 size_t *sizeWritten)
{
    if (pref == nullptr || P(pref)->magic != kPrefMagic) return CUBLAS_STATUS_INVALID_VALUE;
    const Pref *p = P(pref);
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: return put_val(p->search_mode, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        return put_val(p->max_workspace, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
        return put_val(p->reduction_mask, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
        return put_val(p->align_a, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
        return put_val(p->align_b, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
        return put_val(p->align_c, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        return put_val(p->align_d, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT: return put_val(p->max_waves, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_PREF_IMPL_MASK: return put_val(p->impl_mask, buf, sizeInBytes, sizeWritten);
    default:
        return unsupported("cublasLtMatmulPreferenceAttributes_t", attr,
                           "the attributes SetAttribute accepts");
    }
}

/* ---- heuristic: one algorithm, no workspace -------------------------------------------------------------------- */

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount)
{
    if (returnAlgoCount) *returnAlgoCount = 0;
    if (requestedAlgoCount < 1 || heuristicResultsArray == nullptr || returnAlgoCount == nullptr)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (preference == nullptr || P(preference)->magic != kPrefMagic) return CUBLAS_STATUS_INVALID_VALUE;
    if (cublasStatus_t st = check_matmul(lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc)) return st;
    cublasLtMatmulHeuristicResult_t &r = heuristicResultsArray[0];
    memset(&r, 0, sizeof r);
    r.algo.data[0] = 0x6f736f68u; /* "host": the only algorithm */
    r.workspaceSize = 0;
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1.0f;
    *returnAlgoCount = 1;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- matmul ---------------------------------------------------------------------------------------------------- */

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                           const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                                           const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
                                           const void *C, cublasLtMatrixLayout_t Cdesc, void *D_,
                                           cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                                           void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream)
{
    (void)algo;
    (void)workspace;
    (void)workspaceSizeInBytes;
    if (cublasStatus_t st = check_matmul(lightHandle, computeDesc, Adesc, Bdesc, Cdesc, Ddesc)) return st;
    if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (cudahost_stream_drain_) (void)cudahost_stream_drain_(stream);
    const Desc *m = D(computeDesc);
    const Layout *la = L(Adesc), *lb = L(Bdesc), *lc = L(Cdesc), *ld = L(Ddesc);
    const uint64_t M = ld->rows, N = ld->cols;
    const uint64_t K = m->transa == CUBLAS_OP_N ? la->cols : la->rows;
    const float a = *static_cast<const float *>(alpha), b = *static_cast<const float *>(beta);
    if (M == 0 || N == 0) return CUBLAS_STATUS_SUCCESS;
    if (D_ == nullptr || (b != 0.0f && C == nullptr) ||
        (K > 0 && a != 0.0f && (A == nullptr || B == nullptr)))
        return CUBLAS_STATUS_INVALID_VALUE;
    /* a ROW-order matrix is the column-major storage of its transpose: flip its operation */
    const cublasOperation_t ta =
        (m->transa == CUBLAS_OP_N) != (la->order == CUBLASLT_ORDER_ROW) ? CUBLAS_OP_N : CUBLAS_OP_T;
    const cublasOperation_t tb =
        (m->transb == CUBLAS_OP_N) != (lb->order == CUBLASLT_ORDER_ROW) ? CUBLAS_OP_N : CUBLAS_OP_T;
    std::vector<float> prod;
    try {
        prod.resize((size_t)(M * N));
    } catch (const std::bad_alloc &) {
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    const int32_t bias_type = m->bias_type == -1 ? (int32_t)ld->type : m->bias_type;
    const bool has_bias = (m->epilogue & CUBLASLT_EPILOGUE_BIAS) != 0;
    const bool relu = m->epilogue == CUBLASLT_EPILOGUE_RELU || m->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    const bool gelu = m->epilogue == CUBLASLT_EPILOGUE_GELU || m->epilogue == CUBLASLT_EPILOGUE_GELU_BIAS ||
                      m->epilogue == CUBLASLT_EPILOGUE_GELU_AUX ||
                      m->epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    const bool aux =
        m->epilogue == CUBLASLT_EPILOGUE_GELU_AUX || m->epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    Layout aux_layout = *ld; /* the GELU input matrix: D's type and order, its own leading dimension */
    aux_layout.ld = m->aux_ld;
    for (int32_t batch = 0; batch < ld->batch; ++batch) {
        auto off = [&](const Layout *l) {
            return l->batch == 1 ? (size_t)0 : (size_t)(batch * l->stride) * elem_bytes((int32_t)l->type);
        };
        const char *Ab = static_cast<const char *>(A) + (A ? off(la) : 0);
        const char *Bb = static_cast<const char *>(B) + (B ? off(lb) : 0);
        const char *Cb = C ? static_cast<const char *>(C) + off(lc) : nullptr;
        char *Db = static_cast<char *>(D_) + off(ld);
        if (K > 0 && a != 0.0f) {
            cublasStatus_t st = cudahost::blas::gemm_f32_out(
                ta, tb, (int64_t)M, (int64_t)N, (int64_t)K, a, Ab, (cudaDataType)la->type, la->ld, Bb,
                (cudaDataType)lb->type, lb->ld, prod.data(), (int64_t)M);
            if (st != CUBLAS_STATUS_SUCCESS) return st;
        } else {
            std::fill(prod.begin(), prod.end(), 0.0f);
        }
        char *auxb = aux ? static_cast<char *>(m->aux) +
                               (size_t)(batch * m->aux_stride) * elem_bytes((int32_t)ld->type)
                         : nullptr;
        const char *bias = has_bias ? static_cast<const char *>(m->bias) +
                                          (size_t)(batch * m->bias_stride) * elem_bytes(bias_type)
                                    : nullptr;
        for (uint64_t j = 0; j < N; ++j)
            for (uint64_t i = 0; i < M; ++i) {
                float v = prod[i + j * M];
                if (b != 0.0f)
                    v += b * load(Cb, (int32_t)lc->type, at(lc, i, j)); /* beta == 0 never reads C */
                if (bias) v += load(bias, bias_type, (size_t)i);
                if (auxb) store(auxb, (int32_t)ld->type, at(&aux_layout, i, j), v);
                if (relu) v = v > 0.0f ? v : 0.0f;
                if (gelu) v = gelu_tanh(v);
                store(Db, (int32_t)ld->type, at(ld, i, j), v);
            }
    }
    return CUBLAS_STATUS_SUCCESS;
}
