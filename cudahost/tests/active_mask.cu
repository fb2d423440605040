// __activemask() in converged code is the whole warp: at the start of a kernel, after a warp shuffle and after
// __syncthreads(), every lane of a full warp must see 0xffffffff (and a partial last warp its existing lanes),
// whatever order host mode runs the threads in; inside a divergent branch it includes the calling lane.
// KNOWN_ISSUES.md #4: after a __syncthreads(), host mode drops the lanes that already ran to completion.
#include <cuda_runtime.h>

#include <stdio.h>

#include "check.h"

// the lanes that exist in the warp of thread t (partial last warp)
__host__ __device__ inline unsigned warp_mask(unsigned t, unsigned block) {
  const unsigned first = t & ~31u, count = block - first < 32u ? block - first : 32u;
  return count == 32u ? 0xFFFFFFFFu : ((1u << count) - 1u);
}

__global__ void record_masks(unsigned *out) {
  const unsigned t = threadIdx.x;
  unsigned *o = out + (blockIdx.x * blockDim.x + t) * 4;
  o[0] = __activemask();
  const int v = __shfl_xor_sync(warp_mask(t, blockDim.x), (int)t, 1);
  o[1] = __activemask() | (0u * (unsigned)v);
  __syncthreads();
  o[2] = __activemask();
  o[3] = 0;
  if (t & 1u) o[3] = __activemask();
}

int main() {
  require_device();
  int fails = 0;
  const int bs = 48;  // one full warp and a partial one of 16 lanes
  unsigned *d_out, h_out[2 * bs * 4];
  CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
  record_masks<<<2, bs>>>(d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
  for (int g = 0; g < 2 * bs; ++g) {
    const int t = g % bs;
    const unsigned exist = warp_mask(t, bs);
    const unsigned *o = h_out + g * 4;
    for (int k = 0; k < 3; ++k)
      if (o[k] != exist && fails < 10) {
        printf("FAIL thread %d: __activemask() %s = %08x, expected %08x\n", t,
               k == 0 ? "at the start" : (k == 1 ? "after a shuffle" : "after __syncthreads"), o[k], exist);
        ++fails;
      }
    if ((t & 1) && (!((o[3] >> (t & 31)) & 1u) || (o[3] & ~exist)) && fails < 10) {
      printf("FAIL thread %d: __activemask() in a branch = %08x\n", t, o[3]);
      ++fails;
    }
  }
  CHECK_CUDA(cudaFree(d_out));
  return report("active_mask", fails);
}
