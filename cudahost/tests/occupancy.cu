// Occupancy API used by launchers that size their grids: cudaOccupancyMaxActiveBlocksPerMultiprocessor (and its
// WithFlags form) and cudaOccupancyMaxPotentialBlockSize, templates of cuda_runtime.h that host mode must back.
// KNOWN_ISSUES.md #2: does not link in host mode yet, so CTest builds it at test time (cudahost.occupancy.build).
#include <cuda_runtime.h>

#include <stdio.h>

#include "check.h"

__global__ void small_kernel(float *out) {
  __shared__ float s[128];
  s[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[127 - threadIdx.x];
}

int main() {
  require_device();
  int fails = 0;
  int blocks = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, small_kernel, 128, 0));
  EXPECT(blocks >= 1 && blocks <= 64);
  int blocks2 = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks2, small_kernel, 128, 0,
                                                                    cudaOccupancyDefault));
  EXPECT(blocks2 == blocks);
  int min_grid = 0, block = 0;
  CHECK_CUDA(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, small_kernel, 0, 0));
  EXPECT(block >= 32 && block <= 1024 && block % 32 == 0);
  EXPECT(min_grid >= 1);
  // a block size beyond the device limit gives zero resident blocks or an error, never a positive count
  int none = -1;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&none, small_kernel, 2048, 0);
  EXPECT(e != cudaSuccess || none == 0);
  (void)cudaGetLastError();
  return report("occupancy", fails);
}
