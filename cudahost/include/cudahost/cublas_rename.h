/* cudahost/cublas_rename.h: rename every cuBLAS function the host-mode shim (cudahost/src/cublas.cpp) defines.
 *
 * Included before <cublas_v2.h> (cudahost.h includes it first): NVIDIA's declarations are then read under the
 * cudahost_ names, so they still check every signature, and a program can link host-mode objects together with
 * the real libcublas. <cublas_v2.h> maps the legacy names to the _v2 ones (cublasSgemm -> cublasSgemm_v2), so the
 * _v2 names are the ones renamed here.
 */
#ifndef CUDAHOST_CUBLAS_RENAME_H
#define CUDAHOST_CUBLAS_RENAME_H

#if defined(CUBLAS_API_H_) || defined(CUBLAS_V2_H_)
#error "cudahost/cublas_rename.h must be included before <cublas_v2.h> / <cublas_api.h>"
#endif

#define cublasCreate_v2 cudahost_cublasCreate_v2
#define cublasDestroy_v2 cudahost_cublasDestroy_v2
#define cublasGetVersion_v2 cudahost_cublasGetVersion_v2
#define cublasGetProperty cudahost_cublasGetProperty
#define cublasSetStream_v2 cudahost_cublasSetStream_v2
#define cublasGetStream_v2 cudahost_cublasGetStream_v2
#define cublasSetWorkspace_v2 cudahost_cublasSetWorkspace_v2
#define cublasSetMathMode cudahost_cublasSetMathMode
#define cublasGetMathMode cudahost_cublasGetMathMode
#define cublasSetPointerMode_v2 cudahost_cublasSetPointerMode_v2
#define cublasGetPointerMode_v2 cudahost_cublasGetPointerMode_v2
#define cublasSetAtomicsMode cudahost_cublasSetAtomicsMode
#define cublasGetAtomicsMode cudahost_cublasGetAtomicsMode
#define cublasGetStatusString cudahost_cublasGetStatusString
#define cublasGetStatusName cudahost_cublasGetStatusName
#define cublasSgemm_v2 cudahost_cublasSgemm_v2
#define cublasSgemm_v2_64 cudahost_cublasSgemm_v2_64
#define cublasSgemmBatched cudahost_cublasSgemmBatched
#define cublasSgemmStridedBatched cudahost_cublasSgemmStridedBatched
#define cublasSgemmStridedBatched_64 cudahost_cublasSgemmStridedBatched_64
#define cublasGemmEx cudahost_cublasGemmEx
#define cublasGemmEx_64 cudahost_cublasGemmEx_64
#define cublasGemmBatchedEx cudahost_cublasGemmBatchedEx
#define cublasGemmStridedBatchedEx cudahost_cublasGemmStridedBatchedEx
#define cublasGemmStridedBatchedEx_64 cudahost_cublasGemmStridedBatchedEx_64

#endif /* CUDAHOST_CUBLAS_RENAME_H */
