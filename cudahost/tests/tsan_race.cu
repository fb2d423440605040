// Proving test of the ThreadSanitizer configuration (registered when MF_SANITIZER=thread): a kernel that lacks the
// __syncthreads() between threads writing shared memory and other threads reading it. TSan (with the fiber
// annotations of host mode) must report "data race" pointing at this file. The first phase has its barrier and
// is race-free, so every thread runs on its own fiber by the time the racy phase runs.
#include <cuda_runtime.h>

#include <stdio.h>

#include "check.h"

__global__ void racy_reverse(const float *in, float *out) {
  __shared__ float a[64];
  __shared__ float b[64];
  const int t = threadIdx.x;
  a[t] = in[blockIdx.x * 64 + t];
  __syncthreads();  // correct: a[] is complete before anyone reads it
  b[t] = 2.0f * a[63 - t];
  // BUG (on purpose): __syncthreads() missing here: b[63 - t] is written by another thread
  out[blockIdx.x * 64 + t] = b[63 - t];
}

int main() {
  require_device();
  float h[128];
  for (int i = 0; i < 128; ++i) h[i] = (float)i;
  float *d_in, *d_out;
  CHECK_CUDA(cudaMalloc(&d_in, sizeof h));
  CHECK_CUDA(cudaMalloc(&d_out, sizeof h));
  CHECK_CUDA(cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice));
  racy_reverse<<<2, 64>>>(d_in, d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));
  printf("tsan_race: finished\n");
  return 0;
}
