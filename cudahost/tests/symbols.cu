// __device__ and __constant__ variables: initialized definitions, arrays and structs, written and read with
// cudaMemcpyToSymbol / cudaMemcpyFromSymbol (with offsets, and the Async forms), used by kernels, their address
// from cudaGetSymbolAddress, and an out-of-range symbol copy reported as an error.
#include <cuda_runtime.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

struct Params {
  float scale;
  int offset;
  int table[4];
};

__constant__ float c_coeffs[8];
__constant__ Params c_params;
__constant__ int c_initialized[3] = {10, 20, 30};
__device__ int d_counter;
__device__ float d_buffer[64];
static __device__ unsigned d_static_flag = 7u;

__global__ void use_symbols(const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int k = 0; k < 8; ++k) acc += c_coeffs[k] * (float)(k + 1);
  out[i] = in[i] * c_params.scale + (float)(c_params.offset + c_params.table[i % 4]) + acc +
           (float)c_initialized[i % 3] + (float)d_static_flag;
  d_buffer[i % 64] = (float)i;  // every index i % 64 is written by exactly one thread (n == 64)
  atomicAdd(&d_counter, 1);
}

__global__ void read_buffer(float *out) { out[threadIdx.x] = d_buffer[threadIdx.x] * 2.0f; }

int main() {
  require_device();
  int fails = 0;
  const int n = 64;
  float h_coeffs[8];
  for (int k = 0; k < 8; ++k) h_coeffs[k] = 0.5f * k;
  Params p = {2.0f, 3, {1, 2, 3, 4}};
  CHECK_CUDA(cudaMemcpyToSymbol(c_coeffs, h_coeffs, sizeof h_coeffs));
  CHECK_CUDA(cudaMemcpyToSymbol(c_params, &p, sizeof p));
  // overwrite table[2] alone through an offset
  const int t2 = 30;
  CHECK_CUDA(cudaMemcpyToSymbol(c_params, &t2, sizeof t2, offsetof(Params, table) + 2 * sizeof(int)));
  const int zero = 0;
  CHECK_CUDA(cudaMemcpyToSymbolAsync(d_counter, &zero, sizeof zero, 0, cudaMemcpyHostToDevice, 0));
  CHECK_CUDA(cudaDeviceSynchronize());

  float h_in[n], h_out[n];
  for (int i = 0; i < n; ++i) h_in[i] = (float)i - 20.0f;
  float *d_in, *d_out;
  CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
  CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
  CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
  use_symbols<<<2, 32>>>(d_in, d_out, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
  float acc = 0.0f;
  for (int k = 0; k < 8; ++k) acc += h_coeffs[k] * (float)(k + 1);
  const int table[4] = {1, 2, 30, 4}, init[3] = {10, 20, 30};
  for (int i = 0; i < n; ++i) {
    const float want = h_in[i] * 2.0f + (float)(3 + table[i % 4]) + acc + (float)init[i % 3] + 7.0f;
    if (h_out[i] != want) {
      printf("FAIL use_symbols[%d] = %g, expected %g\n", i, h_out[i], want);
      ++fails;
      break;
    }
  }
  int counter = -1;
  CHECK_CUDA(cudaMemcpyFromSymbol(&counter, d_counter, sizeof counter));
  EXPECT(counter == n);
  float buf[64];
  CHECK_CUDA(cudaMemcpyFromSymbol(buf, d_buffer, sizeof buf));
  for (int i = 0; i < 64; ++i) EXPECT(buf[i] == (float)i);
  // from an offset, async
  float tail[4];
  CHECK_CUDA(cudaMemcpyFromSymbolAsync(tail, d_buffer, sizeof tail, 60 * sizeof(float), cudaMemcpyDeviceToHost, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(tail[0] == 60.0f && tail[3] == 63.0f);
  int init_back[3];
  CHECK_CUDA(cudaMemcpyFromSymbol(init_back, c_initialized, sizeof init_back));
  EXPECT(init_back[0] == 10 && init_back[1] == 20 && init_back[2] == 30);

  // the symbol's address is device memory usable with cudaMemcpy and as a kernel argument
  void *addr = nullptr;
  CHECK_CUDA(cudaGetSymbolAddress(&addr, d_buffer));
  EXPECT(addr != nullptr);
  float ones[64];
  for (int i = 0; i < 64; ++i) ones[i] = 1.5f;
  CHECK_CUDA(cudaMemcpy(addr, ones, sizeof ones, cudaMemcpyHostToDevice));
  read_buffer<<<1, 64>>>(d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i) EXPECT(h_out[i] == 3.0f);
  size_t sz = 0;
  CHECK_CUDA(cudaGetSymbolSize(&sz, c_params));
  EXPECT(sz == sizeof(Params));

  // copies beyond the symbol fail with cudaErrorInvalidValue
  float too_many[9] = {0};
  EXPECT(cudaMemcpyToSymbol(c_coeffs, too_many, sizeof too_many) == cudaErrorInvalidValue);
  EXPECT(cudaMemcpyToSymbol(c_coeffs, too_many, sizeof(float), 8 * sizeof(float)) == cudaErrorInvalidValue);
  (void)cudaGetLastError();

  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));
  return report("symbols", fails);
}
