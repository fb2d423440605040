/* The backend operations table: what the core needs from a CUDA runtime.
 *
 * src/backend/backend.cu is compiled twice and defines one table per build:
 *   mf_host_backend_ops()  host execution mode (cudahost), always built;
 *   mf_cuda_backend_ops()  the real CUDA runtime and cuBLAS, when MF_HAVE_CUDA.
 * Every entry returns MF_OK or a status with the thread-local error set.
 * Pointers to runtime objects travel as void* so the core stays plain C.
 * Internal: not installed, not part of the public API. */
#ifndef MEMFIX_BACKEND_H
#define MEMFIX_BACKEND_H

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mf_backend_ops {
    const char *name; /* "host" or "cuda" */
    /* Number of devices (0 when none). Never used in the parent process for
     * CUDA before a context exists: mf_backend_available probes in a child. */
    mf_status (*device_count)(int *out);
    mf_status (*device_malloc)(void **out, size_t bytes); /* MF_ERR_OUT_OF_MEMORY on failure */
    mf_status (*device_free)(void *ptr);
    mf_status (*stream_create)(void **out);
    mf_status (*stream_destroy)(void *stream);
    mf_status (*stream_synchronize)(void *stream);
    /* Stream-ordered copies; the download synchronizes before returning. */
    mf_status (*upload)(void *stream, void *dst_dev, const void *src_host, size_t bytes);
    mf_status (*download)(void *stream, void *dst_host, const void *src_dev, size_t bytes);
    mf_status (*memset)(void *stream, void *dst_dev, int byte, size_t bytes);
    /* cuBLAS handle bound to 'stream' and to the given workspace (may be NULL/0). */
    mf_status (*cublas_create)(void **out, void *stream, void *workspace, size_t workspace_bytes);
    mf_status (*cublas_destroy)(void *handle);
    /* Page-locked host memory (cudaMallocHost / cudaFreeHost), and a
     * stream-ordered device-to-host copy that does not wait (its destination
     * is valid after the next stream_synchronize): the context's deferred
     * checks (src/core/context.c). */
    mf_status (*host_alloc)(void **out, size_t bytes);
    mf_status (*host_free)(void *ptr);
    mf_status (*download_async)(void *stream, void *dst_host, const void *src_dev, size_t bytes);
} mf_backend_ops;

const mf_backend_ops *mf_host_backend_ops(void);
#ifdef MF_HAVE_CUDA
const mf_backend_ops *mf_cuda_backend_ops(void);
#endif

/* memfix verify (src/testbed/verify_guard.c): cudaMemGetInfo and cudaDeviceSynchronize
 * of each backend (defined in backend.cu; the host pair only with host kernels). */
mf_status mf_host_mem_get_info(size_t *free_bytes, size_t *total_bytes);
mf_status mf_host_device_synchronize(void);
#ifdef MF_HAVE_CUDA
mf_status mf_cuda_mem_get_info(size_t *free_bytes, size_t *total_bytes);
mf_status mf_cuda_device_synchronize(void);
#endif
/* The compute capability's major number of the current device (9 on sm_90;
 * host execution mode reports 0: it has no cuBLAS workspace to size). */
mf_status mf_host_device_cc_major(int *major);
#ifdef MF_HAVE_CUDA
mf_status mf_cuda_device_cc_major(int *major);
#endif
/* mf_check_device_extent (src/core/context.c): is ptr device memory, and how
 * many bytes follow it in its allocation (backend.cu has the details). */
mf_status mf_host_pointer_query(const void *ptr, int *kind, size_t *bytes_after);
#ifdef MF_HAVE_CUDA
mf_status mf_cuda_pointer_query(const void *ptr, int *kind, size_t *bytes_after);
#endif

#ifdef __cplusplus
}
#endif
#endif
