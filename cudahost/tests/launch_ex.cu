// Launch forms host mode must translate: cudaLaunchKernelEx with a cudaLaunchConfig_t (and launch attributes that mean
// nothing on a CPU), <<<...>>> inside macro definitions (including a kernel name pasted with ##, and a launch
// continued over several lines), and kernels with launches in included headers (a quoted .h, an angle-bracket .cuh).
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include <launch_ex_angle.cuh>

#include "check.h"
#include "launch_ex_kernels.h"

__global__ void axpb(const float *x, float *y, float a, float b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}

__global__ void count_blocks(int *counter, double scale, float *out) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = (float)(scale * blockIdx.x);
}

#define FILL_KERNEL(name, v) \
  __global__ void name##_kernel(int *out) { out[blockIdx.x * blockDim.x + threadIdx.x] = v; }
FILL_KERNEL(seven, 7)
FILL_KERNEL(nine, 9)

#define LAUNCH(k, g, b, s, st) k<<<g, b, s, st>>>
#define RUN_FILL(name, g, b, out) name##_kernel<<<g, b>>>(out)
#define LAUNCH_LINES(k, g, b) \
  k<<<g,                      \
      b>>>

int main() {
#ifndef __CUDAHOST__
  require_device();
#endif
  int fails = 0;
  const int n = 200;
  float h_x[n], h_y[n];
  for (int i = 0; i < n; ++i) h_x[i] = 0.5f * i - 7.0f;
  float *d_x, *d_y;
  CHECK_CUDA(cudaMalloc(&d_x, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_y, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_x, h_x, sizeof h_x, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));

  // ---- cudaLaunchKernelEx without attributes; arguments converted to the parameter types (int -> float, ...)
  {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((n + 63) / 64);
    cfg.blockDim = dim3(64);
    cfg.stream = stream;
    CHECK_CUDA(cudaLaunchKernelEx(&cfg, axpb, (const float *)d_x, d_y, 3, 0.5, n));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaMemcpy(h_y, d_y, sizeof h_y, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      if (h_y[i] != 3.0f * h_x[i] + 0.5f && fails++ < 5) printf("FAIL cudaLaunchKernelEx y[%d] = %g\n", i, h_y[i]);
  }
  // ---- with attributes (hints that host mode accepts and ignores), dynamic shared memory and a cluster dimension
  {
    cudaLaunchAttribute attrs[4] = {};
    attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[0].val.programmaticStreamSerializationAllowed = 1;
    attrs[1].id = cudaLaunchAttributePriority;
    attrs[1].val.priority = 0;
    attrs[2].id = cudaLaunchAttributeClusterDimension;
    attrs[2].val.clusterDim.x = 2;
    attrs[2].val.clusterDim.y = 1;
    attrs[2].val.clusterDim.z = 1;
    attrs[3].id = cudaLaunchAttributeIgnore;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(6);
    cfg.blockDim = dim3(32);
    cfg.dynamicSmemBytes = 1024;
    cfg.attrs = attrs;
    cfg.numAttrs = 4;
    int *d_counter, h_counter = 0;
    float *d_out, h_out[6 * 32];
    CHECK_CUDA(cudaMalloc(&d_counter, sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
    CHECK_CUDA(cudaMemset(d_counter, 0, sizeof(int)));
    CHECK_CUDA(cudaLaunchKernelEx(&cfg, count_blocks, d_counter, 0.25, d_out));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(&h_counter, d_counter, sizeof h_counter, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    EXPECT(h_counter == 6);
    for (int i = 0; i < 6 * 32; ++i) EXPECT(h_out[i] == 0.25f * (i / 32));
    // a grid that is not a multiple of the cluster dimension is invalid
    cfg.gridDim = dim3(5);
    const cudaError_t e = cudaLaunchKernelEx(&cfg, count_blocks, d_counter, 0.25, d_out);
    EXPECT(e != cudaSuccess);
    (void)cudaGetLastError();
    CHECK_CUDA(cudaFree(d_counter));
    CHECK_CUDA(cudaFree(d_out));
  }
  // ---- launches written in macro definitions, kernels defined by a macro
  {
    int *d_o, h_o[64];
    CHECK_CUDA(cudaMalloc(&d_o, sizeof h_o));
    LAUNCH(seven_kernel, 2, 32, 0, stream)(d_o);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_o, d_o, sizeof h_o, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i) EXPECT(h_o[i] == 7);
    RUN_FILL(nine, 1, 64, d_o);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_o, d_o, sizeof h_o, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i) EXPECT(h_o[i] == 9);
    LAUNCH_LINES(seven_kernel, 4, 16)(d_o);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_o, d_o, sizeof h_o, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i) EXPECT(h_o[i] == 7);
    // ---- a kernel and its launcher in a header
    CHECK_CUDA(header_launch(d_o, 42, 2, 32));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(h_o, d_o, sizeof h_o, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i) EXPECT(h_o[i] == 42);
    header_fill<<<1, 64>>>(d_o, -3);
    CHECK_LAUNCH();
    angle_launch(d_o, 5, 64);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_o, d_o, sizeof h_o, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i) EXPECT(h_o[i] == -15);
    CHECK_CUDA(cudaFree(d_o));
  }
#ifdef __CUDAHOST__
  // ---- the untyped C form cannot know the parameter types in host mode: a clear cudaErrorNotSupported
  {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(1);
    void *args[5] = {&d_x, &d_y, nullptr, nullptr, nullptr};
    EXPECT(cudaLaunchKernelExC(&cfg, (const void *)axpb, args) == cudaErrorNotSupported);
    (void)cudaGetLastError();
  }
#endif
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
  return report("launch_ex", fails);
}
