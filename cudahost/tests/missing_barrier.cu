// Proving test of the reverse thread order (CUDAHOST_THREAD_ORDER=reverse): this kernel lacks the
// __syncthreads() between writing shared memory and reading a neighbour's element. In host mode the threads of a
// block run in order without a barrier to switch at, so the forward order happens to give the right answer and
// the reverse order demonstrably the wrong one. CTest runs it twice:
//   missing_barrier expect-correct   (forward order)   and   missing_barrier expect-wrong   (reverse order),
// and a third time as `missing_barrier random` with CUDAHOST_THREAD_ORDER=random:SEED (the start order is a
// seeded permutation per block, the same at every launch, not the forward one; the missing barrier shows).
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

// The order in which a block's threads start: without barriers host mode runs them one after the other, so the
// counter hands out the start positions.
__global__ void start_order(int *order, int *counter) {
  const int pos = atomicAdd(&counter[blockIdx.x], 1);
  order[blockIdx.x * blockDim.x + pos] = (int)threadIdx.x;
}

// CUDAHOST_THREAD_ORDER=random:SEED: each block starts its threads in a permutation that is not the forward order,
// differs between blocks, and is the same at every launch (a function of the seed and the block).
static int check_random_order(int blocks, int threads) {
  int fails = 0;
  int *d_order, *d_ctr;
  static int a[4 * 128], b[4 * 128];
  CHECK_CUDA(cudaMalloc(&d_order, sizeof a));
  CHECK_CUDA(cudaMalloc(&d_ctr, sizeof(int) * blocks));
  for (int run = 0; run < 2; ++run) {
    CHECK_CUDA(cudaMemset(d_ctr, 0, sizeof(int) * blocks));
    start_order<<<blocks, threads>>>(d_order, d_ctr);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(run == 0 ? a : b, d_order, sizeof a, cudaMemcpyDeviceToHost));
  }
  EXPECT(memcmp(a, b, sizeof a) == 0);  // deterministic for the seed
  int forward = 1, same_blocks = 1;
  for (int bl = 0; bl < blocks; ++bl) {
    int seen[128] = {0};
    for (int t = 0; t < threads; ++t) {
      const int v = a[bl * threads + t];
      EXPECT(v >= 0 && v < threads && !seen[v]);  // a permutation
      if (v >= 0 && v < threads) seen[v] = 1;
      forward &= v == t;
      if (bl > 0) same_blocks &= v == a[t];
    }
  }
  EXPECT(!forward);
  EXPECT(!same_blocks);
  printf("random order: block 0 starts with threads %d %d %d %d\n", a[0], a[1], a[2], a[3]);
  CHECK_CUDA(cudaFree(d_order));
  CHECK_CUDA(cudaFree(d_ctr));
  return fails;
}

static int count_wrong(const int *h, int blocks, int threads) {
  int wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t) wrong += h[b * threads + t] != (t > 0 ? b * 1000 + t : 0);
  return wrong;
}

int main(int argc, char **argv) {
  require_device();
  const bool random_mode = argc > 1 && strcmp(argv[1], "random") == 0;
  const bool expect_wrong = random_mode || (argc > 1 && strcmp(argv[1], "expect-wrong") == 0);
  const int blocks = 4, threads = 128;
  int *d_out, h_out[blocks * threads];
  CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
  int fails = 0;
  if (random_mode) fails += check_random_order(blocks, threads);

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
