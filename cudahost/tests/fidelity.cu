// Host-mode fidelity gaps found by running unseen CUDA teaching programs, one check each:
// The argument selects one check (exited_warps, shared_align, null_args, profiler, lerp, fresh_memory; "zero" for
// the fresh-memory check under CUDAHOST_MALLOC_FILL=zero); without one, all run.
//   1. __syncthreads() after whole warps of the block have returned: exited threads do not hold the barrier back;
//   2. __shared__ arrays are aligned to at least 16 bytes (reinterpret_cast<float4*>(shared_array) is common);
//   3. a literal NULL or 0 given for a kernel's pointer parameter;
//   4. cudaProfilerStart / cudaProfilerStop;
//   5. a program's own __device__ lerp (C++20's std::lerp must not clash with it);
//   6. fresh cudaMalloc memory is garbage (0xff bytes) in host mode, zero with CUDAHOST_MALLOC_FILL=zero
//      (argument "zero"); on a GPU its contents are undefined, so that check is host-mode only.
// (A __global__ function called without a launch configuration must not compile: unconfigured_call.cu.)
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

// ---- 1. warps 2 and 3 return before the barrier; warps 0 and 1 exchange through shared memory across it
__global__ void early_exit_warps(const float *in, float *out, int *votes) {
  __shared__ float buf[64];
  const int t = threadIdx.x;
  if (t >= 64) return;  // whole warps exit
  buf[t] = in[blockIdx.x * 64 + t] * 2.0f;
  __syncthreads();
  out[blockIdx.x * 64 + t] = buf[63 - t] + 1.0f;
  __syncthreads();  // a second barrier, with the same two warps
  out[blockIdx.x * 64 + t] += buf[t];
  // the barrier votes count the threads that take part (the 64 that have not exited)
  const int count = __syncthreads_count(t % 3 == 0);
  const int all = __syncthreads_and(t < 64);
  const int any = __syncthreads_or(t == 63);
  if (t == 0) {
    votes[3 * blockIdx.x + 0] = count;
    votes[3 * blockIdx.x + 1] = all;
    votes[3 * blockIdx.x + 2] = any;
  }
}

// ---- 2. alignment of static shared arrays of small element types, and a float4 access through one
__global__ void shared_alignment(const float *in, float *out, unsigned *misaligned) {
  __shared__ char c1[3];
  __shared__ float f[64];
  __shared__ char c2[5];
  __shared__ unsigned short h[10];
  __shared__ float g[64];
  const int t = threadIdx.x;
  if (t == 0) {
    unsigned m = 0;
    m |= ((uintptr_t)f % 16 != 0) << 1;
    m |= ((uintptr_t)g % 16 != 0) << 4;
#ifdef __CUDAHOST__
    // host mode aligns every static shared array to 16 bytes (nvcc's placement of small arrays is its own)
    m |= ((uintptr_t)c1 % 16 != 0) << 0;
    m |= ((uintptr_t)c2 % 16 != 0) << 2;
    m |= ((uintptr_t)h % 16 != 0) << 3;
#endif
    misaligned[blockIdx.x] = m;
    c1[0] = c2[0] = 1;
    h[0] = 1;
  }
  // vectorized load and store through the shared arrays (movaps at -O2 if misaligned would fault)
  if (t < 16) reinterpret_cast<float4 *>(f)[t] = reinterpret_cast<const float4 *>(in)[t];
  __syncthreads();
  if (t < 16) {
    float4 v = reinterpret_cast<float4 *>(f)[15 - t];
    v.x += 1.0f;
    reinterpret_cast<float4 *>(g)[t] = v;
  }
  __syncthreads();
  out[blockIdx.x * 64 + t] = g[t] + (float)(c1[0] + c2[0] + h[0]);
}

// ---- 3. pointer parameters given NULL or 0
__global__ void maybe_null(const float *in, float *out, int *flag, int n) {
  const int t = threadIdx.x;
  if (t < n) out[t] = in ? in[t] : -1.0f;
  if (t == 0 && flag) *flag = 1;
}

// ---- 5. a program's own lerp
__device__ float lerp(float a, float b, float t) { return a + t * (b - a); }
__global__ void use_lerp(float *out) { out[threadIdx.x] = lerp(10.0f, 20.0f, 0.125f * threadIdx.x); }

// ---- 6. fresh allocations
__global__ void read_fresh(const unsigned *p, unsigned *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = p[i];
}

int main(int argc, char **argv) {
#ifndef __CUDAHOST__
  require_device();
#endif
  // one check per CTest test: the argument names it (none: all of them); "zero" is the fresh-memory check with
  // CUDAHOST_MALLOC_FILL=zero
  const char *only = argc > 1 ? argv[1] : "all";
  const bool zero_fill = strcmp(only, "zero") == 0;
  auto want = [&](const char *name) { return strcmp(only, "all") == 0 || strcmp(only, name) == 0; };
  if (!want("exited_warps") && !want("shared_align") && !want("null_args") && !want("profiler") && !want("lerp") &&
      !want("fresh_memory") && !zero_fill) {
    printf("fidelity: unknown check '%s'\n", only);
    return 2;
  }
  int fails = 0;
  // 1.
  if (want("exited_warps")) {
    float h_in[128], h_out[128];
    for (int i = 0; i < 128; ++i) h_in[i] = 0.25f * i - 3.0f;
    float *d_in, *d_out;
    int *d_votes, h_votes[6];
    CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
    CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
    CHECK_CUDA(cudaMalloc(&d_votes, sizeof h_votes));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    early_exit_warps<<<2, 128>>>(d_in, d_out, d_votes);  // 4 warps per block, 2 of which exit
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_votes, d_votes, sizeof h_votes, cudaMemcpyDeviceToHost));
    for (int b = 0; b < 2; ++b) {
      EXPECT(h_votes[3 * b + 0] == 22);  // t % 3 == 0 for t in [0, 64)
      EXPECT(h_votes[3 * b + 1] == 1);
      EXPECT(h_votes[3 * b + 2] == 1);
    }
    CHECK_CUDA(cudaFree(d_votes));
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 64; ++t) {
        const float want = h_in[b * 64 + 63 - t] * 2.0f + 1.0f + h_in[b * 64 + t] * 2.0f;
        if (h_out[b * 64 + t] != want && fails++ < 5)
          printf("FAIL early-exit warps block %d thread %d: %g, expected %g\n", b, t, h_out[b * 64 + t], want);
      }
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
  }
  // 2.
  if (want("shared_align")) {
    const int blocks = 3;
    float h_in[64], h_out[blocks * 64];
    for (int i = 0; i < 64; ++i) h_in[i] = (float)(3 * i + 1);
    float *d_in, *d_out;
    unsigned *d_mis, h_mis[blocks];
    CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
    CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
    CHECK_CUDA(cudaMalloc(&d_mis, sizeof h_mis));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    shared_alignment<<<blocks, 64>>>(d_in, d_out, d_mis);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_mis, d_mis, sizeof h_mis, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b) {
      if (h_mis[b] != 0) {
        printf("FAIL block %d: shared arrays not 16-byte aligned (bit per array: c1 f c2 h g): 0x%x\n", b, h_mis[b]);
        ++fails;
      }
      for (int t = 0; t < 64; ++t) {
        const int q = t / 4, e = t % 4;
        const float want = h_in[(15 - q) * 4 + e] + (e == 0 ? 1.0f : 0.0f) + 3.0f;
        if (h_out[b * 64 + t] != want && fails++ < 5)
          printf("FAIL float4 shared access block %d thread %d: %g, expected %g\n", b, t, h_out[b * 64 + t], want);
      }
    }
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
    CHECK_CUDA(cudaFree(d_mis));
  }
  // 3.
  if (want("null_args")) {
    float *d_out;
    int *d_flag, h_flag = 0;
    float h_out[32];
    CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
    CHECK_CUDA(cudaMalloc(&d_flag, sizeof(int)));
    CHECK_CUDA(cudaMemset(d_flag, 0, sizeof(int)));
    maybe_null<<<1, 32>>>(NULL, d_out, d_flag, 32);
    CHECK_LAUNCH();
    maybe_null<<<1, 32>>>(0, d_out, 0, 32);
    CHECK_LAUNCH();
    maybe_null<<<1, 32>>>(nullptr, d_out, NULL, 0);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(&h_flag, d_flag, sizeof h_flag, cudaMemcpyDeviceToHost));
    EXPECT(h_flag == 1);
    for (int t = 0; t < 32; ++t) EXPECT(h_out[t] == -1.0f);
    CHECK_CUDA(cudaFree(d_out));
    CHECK_CUDA(cudaFree(d_flag));
  }
  // 4.
  if (want("profiler")) {
    EXPECT(cudaProfilerStart() == cudaSuccess);
    EXPECT(cudaProfilerStop() == cudaSuccess);
  }
  // 5.
  if (want("lerp")) {
    float *d_out, h_out[8];
    CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
    use_lerp<<<1, 8>>>(d_out);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    for (int t = 0; t < 8; ++t) EXPECT(h_out[t] == 10.0f + 1.25f * t);
    CHECK_CUDA(cudaFree(d_out));
  }
  // 6.
#ifdef __CUDAHOST__
  if (want("fresh_memory") || zero_fill) {
    const int n = 1000;
    unsigned *d_fresh, *d_out, h[n];
    CHECK_CUDA(cudaMalloc(&d_fresh, n * sizeof(unsigned)));
    CHECK_CUDA(cudaMalloc(&d_out, n * sizeof(unsigned)));
    read_fresh<<<(n + 255) / 256, 256>>>(d_fresh, d_out, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h, d_out, sizeof h, cudaMemcpyDeviceToHost));
    const unsigned want = zero_fill ? 0u : 0xffffffffu;
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += h[i] != want;
    if (bad) {
      printf("FAIL fresh cudaMalloc memory: %d of %d words differ from 0x%08x (first: 0x%08x)\n", bad, n, want, h[0]);
      ++fails;
    }
    float *d_f, f;
    CHECK_CUDA(cudaMalloc(&d_f, sizeof(float)));
    CHECK_CUDA(cudaMemcpy(&f, d_f, sizeof f, cudaMemcpyDeviceToHost));
    EXPECT(zero_fill ? f == 0.0f : f != f);  // NaN when poisoned
    CHECK_CUDA(cudaFree(d_fresh));
    CHECK_CUDA(cudaFree(d_out));
    CHECK_CUDA(cudaFree(d_f));
  }
#else
  (void)zero_fill;
#endif
  return report("fidelity", fails);
}
