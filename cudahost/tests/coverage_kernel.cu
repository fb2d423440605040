// Coverage proving test (registered when MF_COVERAGE=ON): runs a kernel whose lines must then appear in gcov's
// report of this .cu file with execution counts (check_coverage.cmake). The kernel runs on the worker threads,
// hence -fprofile-update=atomic. The branch on line 14 is taken by exactly 32 threads.
#include <cuda_runtime.h>

#include <stdio.h>

#include "check.h"

__global__ void coverage_probe(int *out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i * 3;
  if (i % 4 == 0) {
    v += 1;  // COVERAGE-PROBE: executed by 32 of the 128 threads
  }
  out[i] = v;
}

int main() {
  require_device();
  int *d_out, h_out[128];
  CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
  coverage_probe<<<4, 32>>>(d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
  int fails = 0;
  for (int i = 0; i < 128; ++i) EXPECT(h_out[i] == i * 3 + (i % 4 == 0));
  CHECK_CUDA(cudaFree(d_out));
  return report("coverage_kernel", fails);
}
