/* cudahost/renames.h: only the renaming macros of host execution mode (CUDA runtime and cuBLAS functions become
   cudahost_<name>), for C and C++ host sources of a host-mode target that call the CUDA runtime or cuBLAS without
   being .cu files. cudahost_target_sources() force-includes it into such sources; cudahost.h includes it too. */
#ifndef CUDAHOST_RENAMES_H
#define CUDAHOST_RENAMES_H
#if __has_include("cudahost/cublas_rename.h")
#include "cudahost/cublas_rename.h"
#endif
#if __has_include("cudahost/cublaslt_rename.h")
#include "cudahost/cublaslt_rename.h"
#endif
#include "cudahost/runtime_rename.h"
#endif
