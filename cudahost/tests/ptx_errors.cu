// Misused warp-collective and async-copy instructions are reported, as a GPU fault would be, with the kernel, the
// block and the lane; the launch fails with the sticky cudaErrorLaunchFailure (cleared here by cudaDeviceReset):
//   * mma.sync in a warp of 16 threads (.aligned needs all 32 lanes);
//   * mma.sync reached by half a warp (the other half exited: a divergent warp);
//   * two different collectives met by the lanes of one warp;
//   * ldmatrix with a row address that is not 16-byte aligned, or not a shared-state-space address;
//   * cp.async with a misaligned source;
//   * wmma::load_matrix_sync from a pointer that is not 256-bit aligned;
//   * wgmma (sm_90a, warpgroup-collective) in a partial warpgroup (96 threads), in a warpgroup whose other warps
//     have exited, without a wgmma.fence before the first wgmma.mma_async, and with a descriptor when the launch has
//     no dynamic shared memory; and accumulators read before the covering wgmma.wait_group hold NaN (no fault).
// Host-mode behaviour (on a GPU these kernels are undefined behaviour): skipped when compiled by nvcc. The blocks are
// abandoned mid-kernel, so ThreadSanitizer builds run it with report_bugs=0 (an abandoned fiber never synchronizes).
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
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
  uint32_t addr = global ? ((uint32_t)(uintptr_t)out & 0xffffffu) /* a generic address in slot 0, never a shared one (its whole low 32 bits could name a live slot) */ : (uint32_t)__cvta_generic_to_shared(&s[offset + (threadIdx.x % 8) * 8]);
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

// wgmma.mma_async.m64n8k16 (4 accumulators per thread) on 8 KiB of dynamic shared memory set to zero: A at 0, B at
// 4096, K-major without swizzle (LBO 128, SBO 256)
__device__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ void wg_commit_wait() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ void wg_mma_n8(float d[4], uint32_t smem_a, uint32_t smem_b) {
  const uint64_t da = (uint64_t)((smem_a & 0x3ffff) >> 4) | (8ull << 16) | (16ull << 32);
  const uint64_t db = (uint64_t)((smem_b & 0x3ffff) >> 4) | (8ull << 16) | (16ull << 32);
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(1));
}
extern __shared__ unsigned char wg_smem[];
__global__ void wgmma_partial(float* out) {
  wg_fence();
  out[threadIdx.x] = 1.f;
}
__global__ void wgmma_exited(float* out) {
  if (threadIdx.x >= 64) return;
  wg_fence();
  out[threadIdx.x] = 1.f;
}
// mode 0: no wgmma.fence; 1: reads the accumulators before the wait (out[t] = before, out[128 + t] = after);
// 2: operands in a static __shared__ array (host mode maps descriptors through dynamic shared memory only)
__global__ void wgmma_use(float* out, int mode) {
  __shared__ __align__(16) unsigned char st[64];
  if (mode != 2)
    for (int i = threadIdx.x; i < 8192; i += blockDim.x) wg_smem[i] = 0;
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  float d[4] = {2.f, 2.f, 2.f, 2.f};
  if (mode != 0) wg_fence();
  const uint32_t s = (uint32_t)__cvta_generic_to_shared(mode == 2 ? st : wg_smem);
  wg_mma_n8(d, s, s + 4096);
  out[threadIdx.x] = d[0];
  wg_commit_wait();
  out[128 + threadIdx.x] = d[0];
}

static cudaError_t run_and_capture(void (*launch)(float*, const float*), float* d, const float* src) {
  return capture_launch([&] { launch(d, src); });
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

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float*) { wgmma_partial<<<1, 96>>>(o); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "wgmma_partial") && strstr(g_text, "wgmma.fence.sync.aligned") &&
         strstr(g_text, "warpgroup-collective") && strstr(g_text, "partial warpgroup of 96 thread(s)"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float*) { wgmma_exited<<<1, 128>>>(o); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  // (reached first by the waiting warps: the block's deadlock report names the warpgroup-collective; by an exited
  // warp's neighbours first, in reverse order: reported at the instruction)
  EXPECT(strstr(g_text, "wgmma_exited") && strstr(g_text, "wgmma.fence.sync.aligned") &&
         ((strstr(g_text, "all 128 threads of its warpgroup") && strstr(g_text, "already exited")) ||
          strstr(g_text, "needs all 128 threads of their warpgroup")));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float*) { wgmma_use<<<1, 128, 8192>>>(o, 0); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "wgmma.mma_async") && strstr(g_text, "no wgmma.fence.sync.aligned"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&src, 1024 * sizeof(float)));
  e = run_and_capture([](float* o, const float*) { wgmma_use<<<1, 128>>>(o, 2); }, d, src);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "wgmma.mma_async") && strstr(g_text, "no dynamic shared memory"));

  // accumulators read before the wait: NaN; after it: 0 * 0 + 2 (scale-d 1)
  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMemset(d, 0, 1024 * sizeof(float)));
  wgmma_use<<<1, 128, 8192>>>(d, 1);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  float h[256];
  CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  for (int t = 0; t < 128; t++) {
    EXPECT(isnan(h[t]));
    EXPECT(h[128 + t] == 2.f);
  }
  CHECK_CUDA(cudaFree(d));
  remove(g_path);
  return report("ptx_errors", 0);
#endif
}
