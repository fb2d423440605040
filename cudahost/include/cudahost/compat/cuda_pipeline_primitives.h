// Host execution mode's stand-in for the toolkit's <cuda_pipeline_primitives.h>: the __pipeline_* primitives are
// cp.async with commit/wait groups (cudahost/ptx.h), so a kernel that reads a destination before the
// __pipeline_wait_prior that covers it sees the garbage that was there, as it may on a GPU. With nvcc, the toolkit's
// header is used. (__pipeline_arrive_on, an mbarrier operation, is not provided.)
#if defined(__CUDACC__)
#include_next <cuda_pipeline_primitives.h>
#else
#ifndef CUDAHOST_COMPAT_CUDA_PIPELINE_PRIMITIVES_H
#define CUDAHOST_COMPAT_CUDA_PIPELINE_PRIMITIVES_H
#include <cstddef>
#include <cstdint>
#include "cudahost/source_location.h"
#include "cudahost/ptx.h"

static inline void
__pipeline_memcpy_async(void *__restrict__ dst_shared, const void *__restrict__ src_global,
                        size_t size_and_align, size_t zfill = 0,
                        cudahost::source_location loc = cudahost::source_location::current())
{
    cudahost::ptx::cp_async_(loc.file_name(), (int)loc.line(), cudahost::ptx::smem_encode_(dst_shared),
                             (uint64_t)(uintptr_t)src_global, (int)size_and_align,
                             (int)size_and_align -
                                 (int)(zfill <= size_and_align ? zfill : size_and_align + 1));
}
static inline void __pipeline_commit() { cudahost::ptx::cp_async_commit_(); }
static inline void __pipeline_wait_prior(size_t prior) { cudahost::ptx::cp_async_wait_((int)prior); }
#endif
#endif
