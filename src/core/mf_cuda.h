/* Included by every optimized/<op>.cu file. The same .cu source is compiled twice:
 * by nvcc for the CUDA backend and by the host compiler through cudahost
 * (host execution mode, __CUDAHOST__ defined). To let both builds live in one
 * program, kernels go in namespace MF_NS and exported entry points are named
 * with MF_FN(name): mf_host_<name> or mf_cuda_<name>. The public mf_* function
 * (in C, src/ops/) validates arguments and dispatches on the context's backend.
 */
#ifndef MEMFIX_CUDA_H
#define MEMFIX_CUDA_H

#include "mf_internal.h"
#include <cuda_runtime.h>
#include <cublas_v2.h>

#ifdef __CUDAHOST__
#define MF_NS mf_host
#define MF_FN(name) mf_host_##name
#else
#define MF_NS mf_cuda
#define MF_FN(name) mf_cuda_##name
#endif

#ifdef __cplusplus
extern "C" {
#endif
/* Accessors for the context's stream and cuBLAS handle (backend objects). */
void *mf_context_stream(mf_context *ctx); /* a cudaStream_t */
void *mf_context_cublas(mf_context *ctx); /* a cublasHandle_t */
#ifdef __cplusplus
}
#endif

/* One error macro per API family. Each records the failing statement, file and
 * line in the thread-local error and returns MF_ERR_BACKEND from the enclosing
 * function. */
#define MF_CUDA_CHECK(stmt)                                                                                  \
    do {                                                                                                     \
        cudaError_t mf_e_ = (stmt);                                                                          \
        if (mf_e_ != cudaSuccess)                                                                            \
            return mf_set_error(MF_ERR_BACKEND, __func__, __FILE__, __LINE__, "%s failed: %s (%s)", #stmt,   \
                                cudaGetErrorName(mf_e_), cudaGetErrorString(mf_e_));                         \
    } while (0)
/* After every kernel launch: MF_LAUNCH_CHECK(); (reports launch-configuration
 * errors such as too many threads or too much shared memory). */
#define MF_LAUNCH_CHECK() MF_CUDA_CHECK(cudaGetLastError())
#define MF_CUBLAS_CHECK(stmt)                                                                                \
    do {                                                                                                     \
        cublasStatus_t mf_b_ = (stmt);                                                                       \
        if (mf_b_ != CUBLAS_STATUS_SUCCESS)                                                                  \
            return mf_set_error(MF_ERR_BACKEND, __func__, __FILE__, __LINE__, "%s failed: cublas status %d", \
                                #stmt, (int)mf_b_);                                                          \
    } while (0)

#endif
