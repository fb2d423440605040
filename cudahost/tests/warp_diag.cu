// Diagnostics for undefined warp operations, each named with the kernel, the block, the lane and the .cu
// line of the call:
//   1. a shuffle whose source lane is outside its mask (undefined value on a GPU): a sticky launch error, or with
//      CUDAHOST_WARP_CHECK=warn (argument "warn") a warning and a successful launch;
//   2. a shuffle that reads a lane which has exited: the same;
//   3. lanes that exited do not hold a *_sync back (CUDA: "all non-exited threads named in mask must execute the
//      same intrinsic"): no diagnostic, right values; with CUDAHOST_WARP_CHECK=strict (argument "strict") a mask
//      naming exited lanes is an error;
//   4. a *_sync whose mask names lanes that never reach it (they wait at __syncthreads): reported as such (not as a
//      "deadlock"); the launch fails in both modes, since the operation cannot complete.
// Host-mode behaviour (undefined behaviour on a GPU): compiled by nvcc, the program skips (exit 77). The checks name
// the .cu lines of the kernels' calls (the "line N" comments): keep them in sync when editing above main.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

__global__ void out_of_mask(int *out) {
  const int lane = threadIdx.x & 31;
  int v = 100 + lane;
  if (lane < 16) {
    v = __shfl_sync(0x0000ffffu, v, lane + 4);  // line 26: lanes 12..15 read lanes 16..19, outside the mask
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

__global__ void reads_exited(int *out) {
  const int lane = threadIdx.x & 31;
  if (lane >= 16) return;
  int v = 200 + lane;
  v = __shfl_xor_sync(0xffffffffu, v, 16);  // line 35: every lane reads a lane that has exited
  out[threadIdx.x] = v;
}

__global__ void exited_do_not_hold(int *out) {
  const int lane = threadIdx.x & 31;
  if (lane >= 16) return;
  int v = 300 + lane;
  v = __shfl_xor_sync(0xffffffffu, v, 1);  // line 43: only live lanes are read
  v += __reduce_add_sync(0xffffffffu, 1) << 16;  // 16 live lanes take part
  out[threadIdx.x] = v;
}

__global__ void never_reach(int *out) {
  const int lane = threadIdx.x & 31;
  int v = lane;
  if (lane < 16)
    v = __shfl_sync(0xffffffffu, v, 0);  // line 52: lanes 16..31 never get here
  else
    __syncthreads();
  out[threadIdx.x] = v;
}

#ifdef __CUDAHOST__
static char g_report[16384];

// Runs f with stderr captured into g_report; returns the launch's status.
template <class F>
static cudaError_t captured(F f) {
  // redirect the file descriptor only: stderr's FILE stays as it is (unbuffered)
  char path[] = "/tmp/cudahost_warp_diag_XXXXXX";
  const int fd = mkstemp(path);
  fflush(stderr);
  const int saved = dup(2);
  if (fd < 0 || saved < 0 || dup2(fd, 2) < 0) {
    printf("FAIL: cannot capture stderr\n");
    exit(1);
  }
  f();
  cudaError_t e = cudaGetLastError();
  const cudaError_t s = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = s;
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  const ssize_t got = pread(fd, g_report, sizeof g_report - 1, 0);
  g_report[got > 0 ? got : 0] = 0;
  close(fd);
  remove(path);
  printf("---- captured:\n%s", g_report);
  return e;
}

static bool has(const char *s) { return strstr(g_report, s) != nullptr; }
#endif

int main(int argc, char **argv) {
#ifndef __CUDAHOST__
  (void)argc;
  (void)argv;
  printf("SKIP: host-mode diagnostics (undefined behaviour on a GPU)\n");
  return 77;
#else
  const bool warn = argc > 1 && strcmp(argv[1], "warn") == 0;
  const bool strict = argc > 1 && strcmp(argv[1], "strict") == 0;
  int fails = 0;
  int *d, h[128];
  // 1.
  CHECK_CUDA(cudaMalloc(&d, sizeof h));
  cudaError_t e = captured([&] { out_of_mask<<<2, 64>>>(d); });
  EXPECT(warn ? e == cudaSuccess : e == cudaErrorLaunchFailure);
  EXPECT(has(warn ? "warning:" : "error:"));
  EXPECT(has("out_of_mask"));
  EXPECT(has("block (0,0,0)") || has("block (1,0,0)"));
  EXPECT(has("lane 12 ") || has("lane 13 ") || has("lane 14 ") || has("lane 15 "));
  EXPECT(has("__shfl_sync at ") && has("warp_diag.cu:26"));
  EXPECT(has("mask 0x0000ffff reads lane 1") && has("is not in the mask"));
  if (warn) {
    CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int t = 0; t < 12; ++t) EXPECT(h[t] == 100 + t + 4);  // the defined lanes are right
  }
  CHECK_CUDA(cudaDeviceReset());
  // 2.
  CHECK_CUDA(cudaMalloc(&d, sizeof h));
  e = captured([&] { reads_exited<<<1, 32>>>(d); });
  EXPECT(warn ? e == cudaSuccess : e == cudaErrorLaunchFailure);
  EXPECT(has("reads_exited") && has("__shfl_xor_sync at ") && has("warp_diag.cu:35") && has("has exited"));
  CHECK_CUDA(cudaDeviceReset());
  // 3.
  CHECK_CUDA(cudaMalloc(&d, sizeof h));
  e = captured([&] { exited_do_not_hold<<<1, 64>>>(d); });
  if (strict) {
    EXPECT(e == cudaErrorLaunchFailure);
    EXPECT(has("CUDAHOST_WARP_CHECK=strict") && has("names lanes 0xffff0000 that have exited") &&
           has("warp_diag.cu:43"));
  } else {
    EXPECT(e == cudaSuccess);
    EXPECT(g_report[0] == 0);
    CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int t = 0; t < 64; ++t)
      if ((t & 31) < 16) EXPECT(h[t] == (300 + ((t & 31) ^ 1)) + (16 << 16));
  }
  CHECK_CUDA(cudaDeviceReset());
  // 4.
  CHECK_CUDA(cudaMalloc(&d, sizeof h));
  e = captured([&] { never_reach<<<1, 32>>>(d); });
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(has("never_reach") && has("names lanes that never reach it") && !has("deadlock"));
  EXPECT(has("__shfl_sync at ") && has("warp_diag.cu:52") && has("lane 16 ") && has("waits at __syncthreads"));
  CHECK_CUDA(cudaDeviceReset());
  return report(warn ? "warp_diag (warn)" : strict ? "warp_diag (strict)" : "warp_diag", fails);
#endif
}
