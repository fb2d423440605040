// Launch syntax and builtins: <<<grid, block, smem, stream>>> with every argument count, templates with explicit
// and deduced arguments, qualified names (ns::kernel, ns::tmpl<K>, ::ns::kernel), multi-line configurations and argument lists, launches inside
// templates, __device__ helpers with __noinline__ / __forceinline__, 1-D/2-D/3-D grids and blocks with
// threadIdx/blockIdx/blockDim/gridDim and warpSize. Each kernel is checked against a host computation.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

// ---- kernels ---------------------------------------------------------------------------------------------

__device__ __noinline__ int twice(int v) { return 2 * v; }
__device__ __forceinline__ int plus_one(int v) { return v + 1; }
static __device__ __host__ inline int both_sides(int v) { return v * 3; }

__global__ void fill_linear(int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = plus_one(twice(i));
}

// records every builtin of every thread of a 3-D launch
__global__ void record_builtins(int *out) {
  const unsigned bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
  const unsigned block = bx + gridDim.x * (by + gridDim.y * bz);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  int *o = out + 10 * (block * per_block + thread);
  o[0] = threadIdx.x;
  o[1] = threadIdx.y;
  o[2] = threadIdx.z;
  o[3] = blockIdx.x;
  o[4] = blockIdx.y;
  o[5] = blockIdx.z;
  o[6] = blockDim.x * 100 + blockDim.y * 10 + blockDim.z;
  o[7] = gridDim.x * 100 + gridDim.y * 10 + gridDim.z;
  o[8] = warpSize;
  o[9] = both_sides(1);
}

template <typename T, int Scale>
__global__ void scale_kernel(const T *in, T *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * (T)Scale;
}

template <typename T>
__global__ void add_kernel(const T *a, const T *b, T *out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = a[i] + b[i];
}

namespace outer {
namespace inner {
__global__ void negate(int *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = -v[i];
}
template <int K>
__global__ void add_k(int *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] += K;
}
}  // namespace inner
__global__ void square(int *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * v[i];
}
}  // namespace outer

// a host template that launches a template kernel with its own parameter (the rewrite must keep the <T>)
template <typename T>
void launch_add(const T *a, const T *b, T *out, int n, cudaStream_t s) {
  add_kernel<T><<<(n + 63) / 64, 64, 0, s>>>(a, b, out, n);
}

// ---- host ---------------------------------------------------------------------------------------------

static int check_ints(const char *what, const int *got, const int *want, int n) {
  for (int i = 0; i < n; ++i)
    if (got[i] != want[i]) {
      printf("FAIL %s: [%d] = %d, expected %d\n", what, i, got[i], want[i]);
      return 1;
    }
  return 0;
}

int main() {
  require_device();
  int fails = 0;
  const int n = 1000;
  int *d_i = nullptr;
  int h_i[n], want[n];
  CHECK_CUDA(cudaMalloc(&d_i, n * sizeof(int)));

  // 1-D, grid and block as plain ints, no smem/stream
  fill_linear<<<(n + 127) / 128, 128>>>(d_i, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_i, d_i, sizeof h_i, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) want[i] = 2 * i + 1;
  fails += check_ints("fill_linear", h_i, want, n);

  // multi-line configuration and arguments, dim3, explicit 0 smem and the default stream
  CHECK_CUDA(cudaMemset(d_i, 0, n * sizeof(int)));
  fill_linear<<<dim3((n + 255) / 256),
                dim3(256, 1, 1),
                0,
                0>>>(d_i,
                     n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_i, d_i, sizeof h_i, cudaMemcpyDeviceToHost));
  fails += check_ints("fill_linear multi-line", h_i, want, n);

  // qualified names: nested namespaces, a namespace template, a fully qualified name
  outer::inner::negate<<<(n + 99) / 100, 100>>>(d_i, n);
  outer::inner::add_k<5><<<(n + 99) / 100, 100>>>(d_i, n);
  ::outer::square<<<(n + 99) / 100, 100>>>(d_i, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_i, d_i, sizeof h_i, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) want[i] = (-(2 * i + 1) + 5) * (-(2 * i + 1) + 5);
  fails += check_ints("qualified names", h_i, want, n);

  // templates: explicit type and non-type arguments; deduced arguments; launch from a host template
  float *d_a, *d_b, *d_c;
  float h_a[n], h_b[n], h_c[n];
  for (int i = 0; i < n; ++i) {
    h_a[i] = 0.5f * i;
    h_b[i] = 1000.0f - i;
  }
  CHECK_CUDA(cudaMalloc(&d_a, sizeof h_a));
  CHECK_CUDA(cudaMalloc(&d_b, sizeof h_b));
  CHECK_CUDA(cudaMalloc(&d_c, sizeof h_c));
  CHECK_CUDA(cudaMemcpy(d_a, h_a, sizeof h_a, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_b, h_b, sizeof h_b, cudaMemcpyHostToDevice));
  scale_kernel<float, 3><<<(n + 31) / 32, 32>>>(d_a, d_c, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_c, d_c, sizeof h_c, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n && fails < 10; ++i)
    if (h_c[i] != 3.0f * h_a[i]) {
      printf("FAIL scale_kernel<float,3>[%d] = %g\n", i, h_c[i]);
      ++fails;
    }
  add_kernel<<<4, 64>>>((const float *)d_a, (const float *)d_b, d_c, n);  // deduced T = float, grid-stride loop
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_c, d_c, sizeof h_c, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n && fails < 10; ++i)
    if (h_c[i] != h_a[i] + h_b[i]) {
      printf("FAIL add_kernel (deduced)[%d] = %g\n", i, h_c[i]);
      ++fails;
    }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMemset(d_c, 0, sizeof h_c));
  launch_add<float>(d_b, d_a, d_c, n, stream);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(h_c, d_c, sizeof h_c, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n && fails < 10; ++i)
    if (h_c[i] != h_a[i] + h_b[i]) {
      printf("FAIL launch_add<float>[%d] = %g\n", i, h_c[i]);
      ++fails;
    }

  // 1-D, 2-D and 3-D grids and blocks: every builtin of every thread
  const dim3 grids[3] = {dim3(3), dim3(2, 3), dim3(2, 2, 3)};
  const dim3 blocks[3] = {dim3(40), dim3(8, 5), dim3(4, 3, 2)};
  for (int c = 0; c < 3; ++c) {
    const dim3 g = grids[c], b = blocks[c];
    const int nb = g.x * g.y * g.z, nt = b.x * b.y * b.z, total = 10 * nb * nt;
    int *d_rec, *h_rec = (int *)malloc(total * sizeof(int));
    CHECK_CUDA(cudaMalloc(&d_rec, total * sizeof(int)));
    CHECK_CUDA(cudaMemset(d_rec, 0xFF, total * sizeof(int)));
    record_builtins<<<g, b, 0, stream>>>(d_rec);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_rec, d_rec, total * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (unsigned bz = 0; bz < g.z; ++bz)
      for (unsigned by = 0; by < g.y; ++by)
        for (unsigned bx = 0; bx < g.x; ++bx)
          for (unsigned tz = 0; tz < b.z; ++tz)
            for (unsigned ty = 0; ty < b.y; ++ty)
              for (unsigned tx = 0; tx < b.x; ++tx) {
                unsigned block = bx + g.x * (by + g.y * bz), thread = tx + b.x * (ty + b.y * tz);
                const int *o = h_rec + 10 * (block * nt + thread);
                int w[10] = {(int)tx, (int)ty, (int)tz, (int)bx, (int)by, (int)bz,
                             (int)(b.x * 100 + b.y * 10 + b.z), (int)(g.x * 100 + g.y * 10 + g.z), 32, 3};
                if (!bad && memcmp(o, w, sizeof w) != 0) {
                  printf("FAIL builtins case %d block (%u,%u,%u) thread (%u,%u,%u): got %d %d %d %d %d %d %d %d %d\n",
                         c, bx, by, bz, tx, ty, tz, o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8]);
                  bad = 1;
                }
              }
    fails += bad;
    free(h_rec);
    CHECK_CUDA(cudaFree(d_rec));
  }
  EXPECT(both_sides(2) == 6);  // __host__ __device__ function callable on the host too

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(d_i));
  CHECK_CUDA(cudaFree(d_a));
  CHECK_CUDA(cudaFree(d_b));
  CHECK_CUDA(cudaFree(d_c));
  return report("launch_syntax", fails);
}
