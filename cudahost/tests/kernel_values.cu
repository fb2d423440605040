// Kernels as values, and bit casts that compute what the source says, as a real CUDA program writes them (the same
// file builds with nvcc): a kernel held in a typed function pointer and launched through it, passed to a launching
// template (llm.c dev/cuda's benchmark_kernel style), given to cudaFuncSetAttribute, cudaFuncGetAttributes,
// cudaOccupancyMaxActiveBlocksPerMultiprocessor and cudaLaunchKernel; and a bf16 truncation done with memcpy type
// punning in one arm of a conditional, the form GCC 12 miscompiles at -O1 and above unless cudahost-c++ and the
// CMake build add the probe's workaround (cudahost/probes/).
#include <cuda_runtime.h>
#include <string.h>

#include "check.h"

// The user's own punning, through memcpy (what llm.c and many kernels do), not cudahost's intrinsics.
__device__ __forceinline__ unsigned bits_of(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}
__device__ __forceinline__ float float_of(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
__device__ __noinline__ float maybe_truncate(int flag, float p) {
  return flag ? float_of(bits_of(p) & 0xffff0000u) : p;  // bf16 truncation of p when flag is set
}
__device__ __noinline__ float maybe_truncate_intrinsic(int flag, float p) {
  return flag ? __uint_as_float(__float_as_uint(p) & 0xffff0000u) : p;
}

__global__ void truncate_kernel(const float *x, float *y, int n, int flag) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = maybe_truncate(flag, x[i]) + maybe_truncate_intrinsic(flag, x[i]);
}

__global__ void scale_kernel(float *x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

// Reverses each block's slice through 64 KiB of dynamic shared memory (needs cudaFuncSetAttribute above 48 KiB).
__global__ void reverse_kernel(const float *x, float *y, int n) {
  extern __shared__ float buf[];
  const int per = blockDim.x;
  int i = blockIdx.x * per + threadIdx.x;
  buf[threadIdx.x] = i < n ? x[i] : 0.0f;
  buf[16383 - threadIdx.x] = -1.0f;  // the far end of the 64 KiB buffer
  __syncthreads();
  int r = blockIdx.x * per + (per - 1 - threadIdx.x);
  if (r < n) y[r] = buf[threadIdx.x] + 1.0f + buf[16383 - threadIdx.x];
}

// A launching template, as llm.c dev/cuda's benchmark_kernel takes its kernel.
template <class Kernel, class... Args>
static void launch_repeated(int repeats, Kernel kernel, dim3 grid, dim3 block, size_t smem, Args... args) {
  for (int r = 0; r < repeats; r++) kernel<<<grid, block, smem>>>(args...);
  CHECK_CUDA(cudaGetLastError());
}

int main() {
  require_device();
  const int n = 256;
  float h[n], out[n];
  for (int i = 0; i < n; i++) h[i] = 1.0f + (float)i / 7.0f + 1e-4f;  // low mantissa bits set: truncation shows
  float *dx = nullptr, *dy = nullptr;
  CHECK_CUDA(cudaMalloc(&dx, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dy, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(dx, h, sizeof h, cudaMemcpyHostToDevice));

  // bf16 truncation through memcpy punning and through the intrinsics, both arms of the conditional
  for (int flag = 0; flag <= 1; flag++) {
    truncate_kernel<<<1, n>>>(dx, dy, n, flag);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(out, dy, sizeof out, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) {
      unsigned u;
      memcpy(&u, &h[i], sizeof u);
      u &= 0xffff0000u;
      float t;
      memcpy(&t, &u, sizeof t);
      float want = flag ? t + t : h[i] + h[i];
      bad += out[i] != want;
    }
    if (bad) printf("FAIL: truncate flag=%d: %d of %d wrong (y[1] = %.9g)\n", flag, bad, n, out[1]);
    EXPECT(bad == 0);
  }

  // a typed kernel pointer, launched directly and through a launching template
  void (*scale)(float *, int, float) = scale_kernel;
  CHECK_CUDA(cudaMemcpy(dy, h, sizeof h, cudaMemcpyHostToDevice));
  scale<<<(n + 63) / 64, 64>>>(dy, n, 2.0f);
  CHECK_CUDA(cudaGetLastError());
  launch_repeated(3, scale, dim3((n + 127) / 128), dim3(128), 0, dy, n, 0.5f);
  launch_repeated(1, scale_kernel, dim3(n / 32), dim3(32), 0, dy, n, 4.0f);  // the kernel itself as the argument
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(out, dy, sizeof out, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; i++) bad += out[i] != h[i] * 2.0f * 0.5f * 0.5f * 0.5f * 4.0f;
  EXPECT(bad == 0);

  // cudaLaunchKernel with the typed pointer
  float a = 3.0f;
  int nn = n;
  float *arg_x = dy;
  void *args[] = {&arg_x, &nn, &a};
  CHECK_CUDA(cudaLaunchKernel(scale, dim3(n / 64), dim3(64), args, 0, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(out, dy, sizeof out, cudaMemcpyDeviceToHost));
  bad = 0;
  for (int i = 0; i < n; i++) bad += out[i] != h[i] * 3.0f;
  EXPECT(bad == 0);

  // attributes through a pointer: 64 KiB of dynamic shared memory needs the opt-in, which the launch through the
  // pointer then honours
  void (*rev)(const float *, float *, int) = reverse_kernel;
  const size_t smem = 64 * 1024;
  CHECK_CUDA(cudaFuncSetAttribute(rev, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaFuncAttributes attr;
  CHECK_CUDA(cudaFuncGetAttributes(&attr, rev));
  EXPECT(attr.maxDynamicSharedSizeBytes == (int)smem);
  int blocks = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, rev, 128, smem));
  EXPECT(blocks >= 1);
  launch_repeated(1, rev, dim3(n / 128), dim3(128), smem, (const float *)dx, dy, n);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(out, dy, sizeof out, cudaMemcpyDeviceToHost));
  bad = 0;
  for (int i = 0; i < n; i++) {
    int b = i / 128, t = i % 128;
    bad += out[b * 128 + (127 - t)] != h[i] + 1.0f - 1.0f;
  }
  EXPECT(bad == 0);

  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(dy));
  return report("kernel_values", 0);
}
