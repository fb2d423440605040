// Must NOT compile: a __global__ function called like a host function, without a launch configuration. nvcc rejects
// it ("a __global__ function call must be configured"); host mode rejects it too (the rewriter turns the call into
// one of a deleted function named after that message). Built by the test cudahost.unconfigured_call (and
// cudahost.unconfigured_call.nvcc), which pass when the build fails with that message.
#include <cuda_runtime.h>

__global__ void set_one(int *p) { *p = 1; }

int main() {
  int *d = nullptr;
  cudaMalloc(&d, sizeof(int));
  set_one(d);  // error: no <<<grid, block>>>
  cudaFree(d);
  return 0;
}
