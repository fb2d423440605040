// Proving test of the reverse thread order (CUDAHOST_THREAD_ORDER=reverse): this kernel lacks the
// __syncthreads() between writing shared memory and reading a neighbour's element. In host mode the threads of a
// block run in order without a barrier to switch at, so the forward order happens to give the right answer and
// the reverse order demonstrably the wrong one. CTest runs it twice:
//   missing_barrier expect-correct   (forward order)   and   missing_barrier expect-wrong   (reverse order).
// The same kernel with the barrier is correct in both orders.
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

__global__ void shift_missing_barrier(int *out) {
  __shared__ int s[128];
  const int t = threadIdx.x;
  s[t] = (int)blockIdx.x * 1000 + t + 1;
  // BUG (on purpose): __syncthreads() missing here
  out[blockIdx.x * blockDim.x + t] = t > 0 ? s[t - 1] : 0;
}

__global__ void shift_with_barrier(int *out) {
  __shared__ int s[128];
  const int t = threadIdx.x;
  s[t] = (int)blockIdx.x * 1000 + t + 1;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = t > 0 ? s[t - 1] : 0;
}

static int count_wrong(const int *h, int blocks, int threads) {
  int wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t) wrong += h[b * threads + t] != (t > 0 ? b * 1000 + t : 0);
  return wrong;
}

int main(int argc, char **argv) {
  require_device();
  const bool expect_wrong = argc > 1 && strcmp(argv[1], "expect-wrong") == 0;
  const int blocks = 4, threads = 128;
  int *d_out, h_out[blocks * threads];
  CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
  int fails = 0;

  shift_with_barrier<<<blocks, threads>>>(d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
  EXPECT(count_wrong(h_out, blocks, threads) == 0);

  shift_missing_barrier<<<blocks, threads>>>(d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
  const int wrong = count_wrong(h_out, blocks, threads);
  printf("missing barrier: %d of %d results wrong (%s order expected %s)\n", wrong, blocks * threads,
         expect_wrong ? "reverse" : "forward", expect_wrong ? "wrong results" : "correct results");
  if (expect_wrong) EXPECT(wrong > 0);
  else EXPECT(wrong == 0);
  CHECK_CUDA(cudaFree(d_out));
  return report("missing_barrier", fails);
}
