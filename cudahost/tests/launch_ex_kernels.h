// Kernels and launches in a plain header (.h), included by launch_ex.cu: host mode rewrites included headers too.
#ifndef CUDAHOST_TESTS_LAUNCH_EX_KERNELS_H
#define CUDAHOST_TESTS_LAUNCH_EX_KERNELS_H

#include <cuda_runtime.h>

__global__ void header_fill(int *out, int value) { out[blockIdx.x * blockDim.x + threadIdx.x] = value; }

// a launcher defined in the header, as shared "common.h" headers of teaching repositories do
inline cudaError_t header_launch(int *out, int value, int blocks, int threads) {
  header_fill<<<blocks, threads>>>(out, value);
  return cudaGetLastError();
}

#endif
