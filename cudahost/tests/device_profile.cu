// The modelled device (CUDAHOST_DEVICE): the properties and attributes it reports, and the shared-memory limits a
// launch and cudaFuncSetAttribute are held to, with the errors a GPU gives (cudaErrorInvalidValue).
//   device_profile a100   the device must be the A100 profile (sm_80: 166,912 B per block, 108 SMs)
//   device_profile h100   the device must be the H100 profile (sm_90: 232,448 B per block, 132 SMs)
//   device_profile        whatever device this is (a GPU): its own limits
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

#define STATIC_BYTES 4096

// 4 KiB of static shared memory; writes the first and last byte of its dynamic shared memory and reads them back.
__global__ void static_and_dynamic(int *out, unsigned dyn_bytes) {
  __shared__ int st[STATIC_BYTES / sizeof(int)];
  extern __shared__ unsigned char dyn[];
  st[threadIdx.x] = (int)threadIdx.x;
  if (threadIdx.x == 0 && dyn_bytes) {
    dyn[0] = 7;
    dyn[dyn_bytes - 1] = 9;
  }
  __syncthreads();
  if (threadIdx.x == 0) out[0] = st[31] + (dyn_bytes ? dyn[0] + dyn[dyn_bytes - 1] : 0);
}

__global__ void dynamic_only(int *out, unsigned dyn_bytes) {
  extern __shared__ unsigned char dyn[];
  if (threadIdx.x == 0) {
    dyn[dyn_bytes - 1] = 5;
    out[0] = dyn[dyn_bytes - 1];
  }
}

#if defined(__CUDAHOST__)
// Host mode learns a kernel's static shared memory from its first block: this one's first launch is over the limit.
__global__ void static_first_launch(int *out) {
  __shared__ int st[STATIC_BYTES / sizeof(int)];
  extern __shared__ unsigned char dyn[];
  st[threadIdx.x] = 1;
  dyn[threadIdx.x] = 2;
  __syncthreads();
  if (threadIdx.x == 0) out[0] = st[0] + dyn[0];
}
#endif

static int expect_error(cudaError_t got, cudaError_t want, const char *what) {
  (void)cudaGetLastError();
  if (got == want) return 0;
  printf("FAIL %s: %s, expected %s\n", what, cudaGetErrorName(got), cudaGetErrorName(want));
  return 1;
}

int main(int argc, char **argv) {
  require_device();
  int fails = 0;
  const char *want = argc > 1 ? argv[1] : "";
  cudaDeviceProp p;
  CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
  printf("device: %s, cc %d.%d, %d SMs, %zu B shared per block (opt-in), %zu B per SM\n", p.name, p.major, p.minor,
         p.multiProcessorCount, p.sharedMemPerBlockOptin, p.sharedMemPerMultiprocessor);
  if (!strcmp(want, "a100")) {
    EXPECT(p.major == 8 && p.minor == 0);
    EXPECT(p.sharedMemPerBlockOptin == 166912);
    EXPECT(p.sharedMemPerMultiprocessor == 167936);
    EXPECT(p.multiProcessorCount == 108);
    EXPECT(strstr(p.name, "A100") != NULL);
  } else if (!strcmp(want, "h100")) {
    EXPECT(p.major == 9 && p.minor == 0);
    EXPECT(p.sharedMemPerBlockOptin == 232448);
    EXPECT(p.sharedMemPerMultiprocessor == 233472);
    EXPECT(p.multiProcessorCount == 132);
    EXPECT(strstr(p.name, "H100") != NULL);
  }
  if (*want) {
    EXPECT(p.sharedMemPerBlock == 49152);
    EXPECT(p.regsPerMultiprocessor == 65536);
    EXPECT(p.maxThreadsPerMultiProcessor == 2048);
    EXPECT(p.maxThreadsPerBlock == 1024);
  }
  // the attributes agree with the properties
  int v = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0));
  EXPECT(v == p.major);
  CHECK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMinor, 0));
  EXPECT(v == p.minor);
  CHECK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  EXPECT((size_t)v == p.sharedMemPerBlockOptin);
  CHECK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  EXPECT((size_t)v == p.sharedMemPerMultiprocessor);
  CHECK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
  EXPECT(v == p.multiProcessorCount);
  CHECK_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlock, 0));
  EXPECT((size_t)v == p.sharedMemPerBlock);

  const unsigned optin = (unsigned)p.sharedMemPerBlockOptin;
  int *d_out = NULL;
  CHECK_CUDA(cudaMalloc(&d_out, sizeof(int)));
  int h = 0;

  // dynamic shared memory alone: 48 KiB without the opt-in, the device's maximum with it, never more
  dynamic_only<<<1, 32, 48 * 1024 + 16>>>(d_out, 48 * 1024 + 16);
  fails += expect_error(cudaGetLastError(), cudaErrorInvalidValue, "dynamic 48 KiB + 16 without the opt-in");
  fails += expect_error(cudaFuncSetAttribute(dynamic_only, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin + 1),
                        cudaErrorInvalidValue, "opt-in of the per-block maximum + 1");
  CHECK_CUDA(cudaFuncSetAttribute(dynamic_only, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin));
  dynamic_only<<<1, 32, optin>>>(d_out, optin);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(&h, d_out, sizeof h, cudaMemcpyDeviceToHost));
  EXPECT(h == 5);
  dynamic_only<<<1, 32, optin + 16>>>(d_out, optin + 16);
  fails += expect_error(cudaGetLastError(), cudaErrorInvalidValue, "dynamic: the per-block maximum + 16");

  // static + dynamic: the opt-in is limited to the maximum less the static 4 KiB (host mode knows the static size
  // once a block of the kernel has run, so it runs once first)
  static_and_dynamic<<<1, 32>>>(d_out, 0);
  CHECK_LAUNCH();
  fails += expect_error(cudaFuncSetAttribute(static_and_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)(optin - STATIC_BYTES + 16)),
                        cudaErrorInvalidValue, "opt-in of the maximum less the static size, + 16");
  const unsigned fit = optin - STATIC_BYTES;
  CHECK_CUDA(cudaFuncSetAttribute(static_and_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)fit));
  static_and_dynamic<<<1, 32, fit>>>(d_out, fit);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(&h, d_out, sizeof h, cudaMemcpyDeviceToHost));
  EXPECT(h == 31 + 7 + 9);
  static_and_dynamic<<<1, 32, fit + 16>>>(d_out, fit + 16);
  fails += expect_error(cudaGetLastError(), cudaErrorInvalidValue, "static + dynamic over the per-block maximum");
  // not a sticky error: the device still runs kernels
  CHECK_CUDA(cudaDeviceSynchronize());
  static_and_dynamic<<<1, 32, 1024>>>(d_out, 1024);
  CHECK_LAUNCH();

#if defined(__CUDAHOST__)
  // A kernel whose static size is not known yet at its first launch: it runs, then the launch reports the error a
  // GPU would have given; later launches are refused up front.
  CHECK_CUDA(cudaFuncSetAttribute(static_first_launch, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin));
  static_first_launch<<<1, 32, optin - 1024>>>(d_out);
  fails += expect_error(cudaGetLastError(), cudaErrorInvalidValue, "first launch over the maximum (host mode)");
  static_first_launch<<<1, 32, optin - 1024>>>(d_out);
  fails += expect_error(cudaGetLastError(), cudaErrorInvalidValue, "second launch over the maximum (host mode)");
  cudaFuncAttributes fa;
  CHECK_CUDA(cudaFuncGetAttributes(&fa, static_first_launch));
  EXPECT(fa.sharedSizeBytes == STATIC_BYTES);
  EXPECT(fa.binaryVersion == 10 * p.major + p.minor);
  CHECK_CUDA(cudaDeviceSynchronize());
#endif
  CHECK_CUDA(cudaFree(d_out));
  return report("device_profile", fails);
}
