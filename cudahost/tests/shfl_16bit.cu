// Warp shuffles of 16-bit floating-point values and pairs: __shfl_*_sync on __half, __nv_bfloat16, __half2 and
// __nv_bfloat162 (CUDA's cuda_fp16.h / cuda_bf16.h define these overloads). Checked against the inputs on the host.
// (KNOWN_ISSUES.md #1, fixed: host mode used to reject __half2 / __nv_bfloat162.)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdio.h>

#include "check.h"

__global__ void shuffle_16bit(const float *in, float *out) {
  const unsigned t = threadIdx.x;
  const float a = in[t], b = in[(t + 7) % 64];
  const __half h = __float2half(a);
  const __nv_bfloat16 bf = __float2bfloat16(a);
  const __half2 h2 = __floats2half2_rn(a, b);
  const __nv_bfloat162 b2 = __floats2bfloat162_rn(a, b);
  float *o = out + t * 6;
  o[0] = __half2float(__shfl_xor_sync(0xFFFFFFFFu, h, 1));
  o[1] = __bfloat162float(__shfl_down_sync(0xFFFFFFFFu, bf, 2));
  const __half2 rh = __shfl_sync(0xFFFFFFFFu, h2, 5);
  const __nv_bfloat162 rb = __shfl_up_sync(0xFFFFFFFFu, b2, 3);
  o[2] = __low2float(rh);
  o[3] = __high2float(rh);
  o[4] = __low2float(rb);
  o[5] = __high2float(rb);
}

int main() {
  require_device();
  int fails = 0;
  float h_in[64], h_out[64 * 6];
  for (int i = 0; i < 64; ++i) h_in[i] = (float)(i * 3 - 50) * 0.5f;  // exact in fp16 and bf16
  float *d_in, *d_out;
  CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
  CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
  CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
  shuffle_16bit<<<1, 64>>>(d_in, d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
  for (int t = 0; t < 64; ++t) {
    const int lane = t & 31, warp0 = t & ~31;
    const int down = lane + 2 < 32 ? t + 2 : t, up = lane >= 3 ? t - 3 : t, idx = warp0 + 5;
    const float want[6] = {h_in[t ^ 1], h_in[down], h_in[idx], h_in[(idx + 7) % 64], h_in[up], h_in[(up + 7) % 64]};
    for (int k = 0; k < 6; ++k)
      if (h_out[t * 6 + k] != want[k]) {
        printf("FAIL shuffle kind %d thread %d: %g, expected %g\n", k, t, h_out[t * 6 + k], want[k]);
        ++fails;
      }
  }
  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));
  return report("shfl_16bit", fails);
}
