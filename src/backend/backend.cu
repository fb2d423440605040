/* Backend operations over the CUDA runtime and cuBLAS.
 *
 * Compiled twice: by nvcc for the CUDA backend (exports mf_cuda_backend_ops)
 * and by the host compiler through cudahost (exports mf_host_backend_ops),
 * where the same runtime calls run in host execution mode. Each function
 * reports failures through MF_CUDA_CHECK / MF_CUBLAS_CHECK, which record the
 * statement, file and line. */
#include "mf_cuda.h"
#include "mf_backend.h"

namespace MF_NS {

static mf_status device_count(int *out)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* no driver / no device: not sticky, just none */
        *out = 0;
        return MF_OK;
    }
    *out = n;
    return MF_OK;
}

static mf_status device_malloc(void **out, size_t bytes)
{
    *out = NULL;
    cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *out = NULL;
        return mf_set_error(e == cudaErrorMemoryAllocation ? MF_ERR_OUT_OF_MEMORY : MF_ERR_BACKEND, __func__,
                            __FILE__, __LINE__, "cudaMalloc(%zu bytes) failed: %s (%s)", bytes,
                            cudaGetErrorName(e), cudaGetErrorString(e));
    }
    return MF_OK;
}

static mf_status device_free(void *ptr)
{
    MF_CUDA_CHECK(cudaFree(ptr));
    return MF_OK;
}

static mf_status stream_create(void **out)
{
    cudaStream_t s = NULL;
    MF_CUDA_CHECK(cudaStreamCreate(&s));
    *out = (void *)s;
    return MF_OK;
}

static mf_status stream_destroy(void *stream)
{
    MF_CUDA_CHECK(cudaStreamDestroy((cudaStream_t)stream));
    return MF_OK;
}

static mf_status stream_synchronize(void *stream)
{
    MF_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    return MF_OK;
}

static mf_status upload(void *stream, void *dst_dev, const void *src_host, size_t bytes)
{
    cudaStream_t s = (cudaStream_t)stream;
    MF_CUDA_CHECK(cudaMemcpyAsync(dst_dev, src_host, bytes, cudaMemcpyHostToDevice, s));
    /* The caller may reuse src_host as soon as we return. */
    MF_CUDA_CHECK(cudaStreamSynchronize(s));
    return MF_OK;
}

static mf_status download(void *stream, void *dst_host, const void *src_dev, size_t bytes)
{
    cudaStream_t s = (cudaStream_t)stream;
    MF_CUDA_CHECK(cudaMemcpyAsync(dst_host, src_dev, bytes, cudaMemcpyDeviceToHost, s));
    MF_CUDA_CHECK(cudaStreamSynchronize(s));
    return MF_OK;
}

static mf_status memset_(void *stream, void *dst_dev, int byte, size_t bytes)
{
    MF_CUDA_CHECK(cudaMemsetAsync(dst_dev, byte, bytes, (cudaStream_t)stream));
    return MF_OK;
}

static mf_status cublas_create(void **out, void *stream, void *workspace, size_t workspace_bytes)
{
    cublasHandle_t h = NULL;
    *out = NULL;
    MF_CUBLAS_CHECK(cublasCreate(&h));
    cublasStatus_t st = cublasSetStream(h, (cudaStream_t)stream);
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasSetWorkspace(h, workspace, workspace_bytes);
    if (st != CUBLAS_STATUS_SUCCESS) {
        (void)cublasDestroy(h);
        return mf_set_error(MF_ERR_BACKEND, __func__, __FILE__, __LINE__,
                            "cublasSetStream/cublasSetWorkspace(%zu bytes) failed: cublas status %d",
                            workspace_bytes, (int)st);
    }
    *out = (void *)h;
    return MF_OK;
}

static mf_status cublas_destroy(void *handle)
{
    MF_CUBLAS_CHECK(cublasDestroy((cublasHandle_t)handle));
    return MF_OK;
}

static mf_status host_alloc(void **out, size_t bytes)
{
    *out = NULL;
    cudaError_t e = cudaMallocHost(out, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *out = NULL;
        return mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__,
                            "cudaMallocHost(%zu bytes) failed: %s", bytes, cudaGetErrorName(e));
    }
    return MF_OK;
}

static mf_status host_free(void *ptr)
{
    MF_CUDA_CHECK(cudaFreeHost(ptr));
    return MF_OK;
}

static mf_status download_async(void *stream, void *dst_host, const void *src_dev, size_t bytes)
{
    MF_CUDA_CHECK(cudaMemcpyAsync(dst_host, src_dev, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream));
    return MF_OK;
}

} // namespace MF_NS

extern "C" const mf_backend_ops *MF_FN(backend_ops)(void)
{
    static const mf_backend_ops ops = {
#ifdef __CUDAHOST__
        "host",
#else
        "cuda",
#endif
        MF_NS::device_count,
        MF_NS::device_malloc,
        MF_NS::device_free,
        MF_NS::stream_create,
        MF_NS::stream_destroy,
        MF_NS::stream_synchronize,
        MF_NS::upload,
        MF_NS::download,
        MF_NS::memset_,
        MF_NS::cublas_create,
        MF_NS::cublas_destroy,
        MF_NS::host_alloc,
        MF_NS::host_free,
        MF_NS::download_async,
    };
    return &ops;
}

/* memfix verify (src/testbed/verify_guard.c): the device's free and total bytes, to
 * catch a candidate that allocates behind the context's back, and a full device
 * synchronization (a candidate may launch on any stream). Thread-safe. */
extern "C" mf_status MF_FN(mem_get_info)(size_t *free_bytes, size_t *total_bytes)
{
    MF_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
    return MF_OK;
}

#ifdef __CUDAHOST__
/* cudahost's allocation table (cudahost/src/runtime.cpp). */
extern "C" cudaError_t cudahostGetAllocationRange(const void *ptr, void **base, size_t *size);
#endif

/* mf_check_device_extent (src/core/context.c): what the runtime knows of a
 * pointer the context did not allocate. *kind: 0 not device-accessible (freed,
 * a host array), 1 device or managed memory, 2 page-locked host memory;
 * *bytes_after: bytes from ptr to the end of its allocation, SIZE_MAX when the
 * runtime cannot tell (CUDA's runtime API has no range query). Clears any error
 * the query itself raised (older runtimes fail on unregistered pointers). */
extern "C" mf_status MF_FN(pointer_query)(const void *ptr, int *kind, size_t *bytes_after)
{
    *kind = 0;
    *bytes_after = SIZE_MAX;
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        return MF_OK;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: *kind = 1; break;
    case cudaMemoryTypeHost: *kind = 2; break;
    default: *kind = 0; break;
    }
#ifdef __CUDAHOST__
    void *base = NULL;
    size_t size = 0;
    if (*kind != 0 && cudahostGetAllocationRange(ptr, &base, &size) == cudaSuccess)
        *bytes_after = size - (size_t)((const char *)ptr - (const char *)base);
#endif
    return MF_OK;
}

/* The context's default cuBLAS workspace (src/core/context.c) follows the
 * device's compute capability. Host execution mode has no device: 0. */
extern "C" mf_status MF_FN(device_cc_major)(int *major)
{
#ifdef __CUDAHOST__
    *major = 0;
#else
    int dev = 0;
    MF_CUDA_CHECK(cudaGetDevice(&dev));
    MF_CUDA_CHECK(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev));
#endif
    return MF_OK;
}

extern "C" mf_status MF_FN(device_synchronize)(void)
{
    MF_CUDA_CHECK(cudaDeviceSynchronize());
    return MF_OK;
}
