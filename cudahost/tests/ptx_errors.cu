// Misused warp-collective and async-copy instructions are reported, as a GPU fault would be, with the kernel, the
// block and the lane; the launch fails with the sticky cudaErrorLaunchFailure (cleared here by cudaDeviceReset):
//   * mma.sync in a warp of 16 threads (.aligned needs all 32 lanes);
//   * mma.sync reached by half a warp (the other half exited: a divergent warp);
//   * two different collectives met by the lanes of one warp;
//   * ldmatrix with a row address that is not 16-byte aligned, or not a shared-state-space address;
//   * cp.async with a misaligned source;
//   * wmma::load_matrix_sync from a pointer that is not 256-bit aligned.
// Host-mode behaviour (on a GPU these kernels are undefined behaviour): skipped when compiled by nvcc. The blocks are
// abandoned mid-kernel, so ThreadSanitizer builds run it with report_bugs=0 (an abandoned fiber never synchronizes).
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include <mma.h>

__device__ void mma(float c[4]) {
  uint32_t a = 0, b = 0;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%4,%4}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a), "r"(b));
}
__global__ void partial_warp(float* out) {
  float c[4] = {0, 0, 0, 0};
  mma(c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = c[0];
}
__global__ void divergent(float* out) {
  float c[4] = {0, 0, 0, 0};
  if (threadIdx.x < 16) mma(c);
  out[threadIdx.x] = c[0];
}
__global__ void mixed(float* out) {
  float c[4] = {0, 0, 0, 0};
  uint32_t r = 0;
  if (threadIdx.x < 16) mma(c);
  else asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %0;\n" : "+r"(r));
  out[threadIdx.x] = c[0] + (float)r;
}
__global__ void ldmatrix_misaligned(float* out, int offset, int global) {
  __shared__ __align__(16) unsigned short s[8 * 8 + 8];
  s[threadIdx.x] = 0;
  s[threadIdx.x + 32] = 0;
  uint32_t addr = global ? (uint32_t)(uintptr_t)out : (uint32_t)__cvta_generic_to_shared(&s[offset + (threadIdx.x % 8) * 8]);
  uint32_t r;
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r) : "r"(addr));
  out[threadIdx.x] = (float)r;
}
__global__ void cp_async_misaligned(const float* src, float* out) {
  __shared__ __align__(16) float s[32 * 4];
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((uint32_t)__cvta_generic_to_shared(&s[threadIdx.x * 4])),
               "l"(src + 1));
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  out[threadIdx.x] = s[threadIdx.x * 4];
}

#ifdef __CUDAHOST__
__global__ void wmma_misaligned(const __half* p, float* out) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> a;
  nvcuda::wmma::load_matrix_sync(a, p + 8, 16);
  out[threadIdx.x] = __half2float(a.x[0]);
}

static char g_text[16384];
static char g_path[64];

static cudaError_t run_and_capture(void (*launch)(float*, const float*), float* d, const float* src) {
  fflush(stderr);
  if (!freopen(g_path, "w", stderr)) return cudaErrorUnknown;
  launch(d, src);
  cudaError_t e = cudaGetLastError();
  cudaError_t s = cudaDeviceSynchronize();
  fflush(stderr);
  FILE* f = fopen(g_path, "r");
  size_t got = f ? fread(g_text, 1, sizeof g_text - 1, f) : 0;
  g_text[got] = 0;
  if (f) fclose(f);
  printf("captured:\n%s\n", g_text);
  cudaDeviceReset();
  return e != cudaSuccess ? e : s;
}
#endif

int main() {
#ifndef __CUDAHOST__
  printf("SKIP: host-mode behaviour\n");
  return 77;
#else
  snprintf(g_path, sizeof g_path, "/tmp/cudahost_ptx_errors_XXXXXX");
  const int fd = mkstemp(g_path);
  if (fd < 0) return 1;
  float *d, *src;
  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  cudaError_t e;

  e = run_and_capture([](float* o, const float*) { partial_warp<<<2, 48>>>(o); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "partial_warp") && strstr(g_text, "mma.sync.aligned.m16n8k16") && strstr(g_text, "only 16 threads") &&
         strstr(g_text, "block (0,0,0), warp 1"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float*) { divergent<<<1, 32>>>(o); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "divergent") && strstr(g_text, "warp-collective") && strstr(g_text, "needs all 32 lanes"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float*) { mixed<<<1, 32>>>(o); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "mixed") && strstr(g_text, "movmatrix") && strstr(g_text, "wait at another one") &&
         (strstr(g_text, "lane 16") || strstr(g_text, "lane(s) 16")));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float*) { ldmatrix_misaligned<<<1, 32>>>(o, 4, 0); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "ldmatrix_misaligned") && strstr(g_text, "not 16-byte aligned"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float*) { ldmatrix_misaligned<<<1, 32>>>(o, 0, 1); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "not a shared-state-space address"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float* s) { cp_async_misaligned<<<1, 32>>>(s, o); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "cp.async") && strstr(g_text, "source is not aligned"));
  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float* s) { wmma_misaligned<<<1, 32>>>((const __half*)s, o); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "load_matrix_sync") && strstr(g_text, "256-bit"));
  remove(g_path);
  return report("ptx_errors", 0);
#endif
}
