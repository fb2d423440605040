/* Fallback host backend used ONLY when the cudahost CMake functions are not
 * available (cudahost/ missing from the tree): plain malloc/free, no streams,
 * no cuBLAS. It lets the core, the references and their tests build and run;
 * the optimized kernels are not built in that configuration. The normal build
 * compiles src/backend/backend.cu through cudahost instead. */
#include "mf_internal.h"
#include "mf_backend.h"

#include <stdlib.h>
#include <string.h>

static mf_status stub_device_count(int *out)
{
    *out = 1;
    return MF_OK;
}

static mf_status stub_malloc(void **out, size_t bytes)
{
    *out = malloc(bytes);
    if (*out == NULL) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "malloc(%zu) failed", bytes);
    return MF_OK;
}

static mf_status stub_free(void *ptr)
{
    free(ptr);
    return MF_OK;
}
static mf_status stub_stream_create(void **out)
{
    *out = NULL;
    return MF_OK;
}
static mf_status stub_stream_destroy(void *stream)
{
    (void)stream;
    return MF_OK;
}
static mf_status stub_sync(void *stream)
{
    (void)stream;
    return MF_OK;
}

static mf_status stub_upload(void *stream, void *dst, const void *src, size_t bytes)
{
    (void)stream;
    memcpy(dst, src, bytes);
    return MF_OK;
}

static mf_status stub_memset(void *stream, void *dst, int byte, size_t bytes)
{
    (void)stream;
    memset(dst, byte, bytes);
    return MF_OK;
}

static mf_status stub_cublas_create(void **out, void *stream, void *ws, size_t ws_bytes)
{
    (void)stream;
    (void)ws;
    (void)ws_bytes;
    *out = NULL;
    return MF_OK;
}

static mf_status stub_cublas_destroy(void *handle)
{
    (void)handle;
    return MF_OK;
}

mf_status mf_host_device_cc_major(int *major)
{
    *major = 0;
    return MF_OK;
}

const mf_backend_ops *mf_host_backend_ops(void)
{
    static const mf_backend_ops ops = {
        "host",      stub_device_count, stub_malloc, stub_free,   stub_stream_create, stub_stream_destroy,
        stub_sync,   stub_upload,       stub_upload, stub_memset, stub_cublas_create, stub_cublas_destroy,
        stub_malloc, stub_free,         stub_upload,
    };
    return &ops;
}
