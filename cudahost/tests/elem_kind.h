// Element kinds of the cuBLAS / cuBLASLt test programs (f32, bf16, f16): size, read and write of element i as
// float, the cudaDataType, and the LCG both programs draw their inputs from. Host code only (compiles with nvcc).
#ifndef CUDAHOST_TESTS_ELEM_KIND_H
#define CUDAHOST_TESTS_ELEM_KIND_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>
#include <stddef.h>
#include <stdint.h>

enum Kind { F32, BF16, F16 };

static inline size_t esize(Kind k) { return k == F32 ? 4 : 2; }
static inline float get(const void *p, Kind k, size_t i) {
  if (k == F32) return static_cast<const float *>(p)[i];
  if (k == BF16) return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  return __half2float(static_cast<const __half *>(p)[i]);
}
static inline void put(void *p, Kind k, size_t i, float v) {
  if (k == F32) static_cast<float *>(p)[i] = v;
  else if (k == BF16) static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
  else static_cast<__half *>(p)[i] = __float2half_rn(v);
}
static inline cudaDataType dtype(Kind k) { return k == F32 ? CUDA_R_32F : (k == BF16 ? CUDA_R_16BF : CUDA_R_16F); }

// Uniform in [-1, 1) from a 32-bit LCG state (each program keeps its own seed).
static inline float lcg_uniform(uint32_t &state) {
  state = state * 1664525u + 1013904223u;
  return (float)((state >> 8) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

#endif
