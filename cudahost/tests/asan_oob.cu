// Proving test of the AddressSanitizer configuration (registered when MF_SANITIZER=address): a kernel writes one
// element past the end of its cudaMalloc buffer. ASan must stop the program with a report (heap-buffer-overflow,
// or use-after-poison for the poisoned tail of a rounded-up allocation) that names this .cu file and the line of
// the faulty write (CTest matches "asan_oob.cu:<line>"). Without ASan the write lands in the allocation's padding
// and the program exits 0, which CTest does not accept either: the test passes only on the report.
#include <cuda_runtime.h>

#include <stdio.h>

#include "check.h"

__global__ void write_past_end(float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = 1.0f;  // BUG (on purpose): i == n writes past the end (asan_oob.cu line 14)
}

int main() {
  require_device();
  const int n = 100;  // the last block's thread 100 writes out[100]
  float *d_out;
  CHECK_CUDA(cudaMalloc(&d_out, n * sizeof(float)));
  write_past_end<<<2, 64>>>(d_out, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaFree(d_out));
  printf("asan_oob: the out-of-bounds write was not detected\n");
  return 0;
}
