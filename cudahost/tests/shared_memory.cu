// Shared memory and launch configuration: static __shared__ arrays, extern __shared__ declared at block scope
// and at file scope (several kernels sharing one declaration, different element types), dynamic sizes, the
// 48 KiB default dynamic limit and the cudaFuncSetAttribute opt-in, and the configuration errors a GPU reports
// through cudaGetLastError: too many threads per block, too much shared memory, a zero-sized grid or block.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#include "check.h"

extern __shared__ float file_scope_smem[];  // one declaration, used by two kernels

// block reduction with a static __shared__ array: out[block] = sum of in[block * 256 .. +256)
__global__ void reduce_static(const float *in, float *out) {
  __shared__ float s[256];
  __shared__ int marker;  // a second static variable in the same kernel
  const int t = threadIdx.x;
  if (t == 0) marker = blockIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = (marker == (int)blockIdx.x) ? s[0] : -1.0f;
}

// reverse each block's segment through dynamic shared memory declared inside the kernel
__global__ void reverse_dynamic(const int *in, int *out, int n) {
  extern __shared__ int tile[];
  const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  if (base + t < n) tile[t] = in[base + t];
  __syncthreads();
  const int count = min((int)blockDim.x, n - base);
  if (t < count) out[base + t] = tile[count - 1 - t];
}

// file-scope extern __shared__: two arrays carved out of one dynamic buffer
__global__ void carve_file_scope(const float *in, float *out, int per_block) {
  float *a = file_scope_smem;
  float *b = file_scope_smem + per_block;
  const int t = threadIdx.x;
  a[t] = in[blockIdx.x * per_block + t];
  b[t] = 2.0f * a[t];
  __syncthreads();
  out[blockIdx.x * per_block + t] = a[per_block - 1 - t] + b[t];
}

__global__ void touch_file_scope(float *out) {
  file_scope_smem[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = file_scope_smem[blockDim.x - 1 - threadIdx.x];
}

// uses a large dynamic buffer: writes and reads back every element
__global__ void big_dynamic(unsigned *out, int words) {
  extern __shared__ unsigned big[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) big[i] = (unsigned)i * 2654435761u;
  __syncthreads();
  unsigned acc = 0;
  for (int i = threadIdx.x; i < words; i += blockDim.x) acc += big[words - 1 - i];
  atomicAdd(out, acc);
}

__global__ void noop(int *p) {
  if (p && threadIdx.x == blockDim.x - 1) p[0] = (int)(threadIdx.x + 1);  // one writer: the block's last thread
}

int main() {
  require_device();
  int fails = 0;

  // static shared memory reduction, 8 blocks
  {
    const int blocks = 8, n = blocks * 256;
    float *h_in = (float *)malloc(n * sizeof(float)), h_out[blocks];
    for (int i = 0; i < n; ++i) h_in[i] = (float)((i * 37) % 101) - 50.0f;
    float *d_in, *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_out, blocks * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));
    reduce_static<<<blocks, 256>>>(d_in, d_out);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b) {
      float want = 0;
      for (int i = 0; i < 256; ++i) want += h_in[b * 256 + i];  // small integers: exact in any order
      if (h_out[b] != want) {
        printf("FAIL reduce_static block %d: %g, expected %g\n", b, h_out[b], want);
        ++fails;
      }
    }
    free(h_in);
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
  }

  // dynamic shared memory at block scope, partial last block
  {
    const int n = 1000, threads = 128;
    int h_in[n], h_out[n];
    for (int i = 0; i < n; ++i) h_in[i] = i * 7 + 1;
    int *d_in, *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
    CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    reverse_dynamic<<<(n + threads - 1) / threads, threads, threads * sizeof(int)>>>(d_in, d_out, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      const int base = i / threads * threads, count = (n - base < threads) ? n - base : threads;
      const int want = h_in[base + count - 1 - (i - base)];
      if (h_out[i] != want) {
        printf("FAIL reverse_dynamic[%d] = %d, expected %d\n", i, h_out[i], want);
        ++fails;
        break;
      }
    }
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
  }

  // file-scope extern __shared__ used by two kernels with different sizes
  {
    const int per = 64, blocks = 3, n = per * blocks;
    float h_in[n], h_out[n];
    for (int i = 0; i < n; ++i) h_in[i] = (float)i;
    float *d_in, *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
    CHECK_CUDA(cudaMalloc(&d_out, sizeof h_out));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    carve_file_scope<<<blocks, per, 2 * per * sizeof(float)>>>(d_in, d_out, per);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < per; ++t) {
        float want = h_in[b * per + per - 1 - t] + 2.0f * h_in[b * per + t];
        if (h_out[b * per + t] != want) {
          printf("FAIL carve_file_scope[%d] = %g, expected %g\n", b * per + t, h_out[b * per + t], want);
          ++fails;
          b = blocks;
          break;
        }
      }
    touch_file_scope<<<1, 32, 32 * sizeof(float)>>>(d_out);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, 32 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int t = 0; t < 32; ++t)
      if (h_out[t] != (float)(31 - t)) {
        printf("FAIL touch_file_scope[%d] = %g\n", t, h_out[t]);
        ++fails;
        break;
      }
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
  }

  // the 48 KiB dynamic limit, the opt-in, and launch-configuration errors
  {
    unsigned *d_sum, h_sum = 0;
    CHECK_CUDA(cudaMalloc(&d_sum, sizeof(unsigned)));
    const int words48 = 48 * 1024 / 4;
    unsigned want48 = 0;
    for (int i = 0; i < words48; ++i) want48 += (unsigned)i * 2654435761u;

    // exactly 48 KiB works without opt-in
    CHECK_CUDA(cudaMemset(d_sum, 0, sizeof(unsigned)));
    big_dynamic<<<1, 256, words48 * 4>>>(d_sum, words48);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(&h_sum, d_sum, sizeof h_sum, cudaMemcpyDeviceToHost));
    EXPECT(h_sum == want48);

    // 64 KiB fails without the opt-in, and the error is consumed by cudaGetLastError
    const int words64 = 64 * 1024 / 4;
    big_dynamic<<<1, 256, words64 * 4>>>(d_sum, words64);
    cudaError_t e = cudaPeekAtLastError();
    EXPECT(e == cudaErrorInvalidValue || e == cudaErrorLaunchOutOfResources);
    EXPECT(cudaGetLastError() == e);
    EXPECT(cudaGetLastError() == cudaSuccess);

    // with the opt-in it runs
    CHECK_CUDA(cudaFuncSetAttribute(big_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, words64 * 4));
    unsigned want64 = 0;
    for (int i = 0; i < words64; ++i) want64 += (unsigned)i * 2654435761u;
    CHECK_CUDA(cudaMemset(d_sum, 0, sizeof(unsigned)));
    big_dynamic<<<2, 128, words64 * 4>>>(d_sum, words64);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(&h_sum, d_sum, sizeof h_sum, cudaMemcpyDeviceToHost));
    EXPECT(h_sum == 2u * want64);

    // beyond what any opt-in allows: the attribute call itself fails
    EXPECT(cudaFuncSetAttribute(big_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 20) != cudaSuccess);
    (void)cudaGetLastError();

    // too many threads per block
    noop<<<1, 1025>>>(nullptr);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    noop<<<1, dim3(32, 32, 2)>>>(nullptr);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    noop<<<1, dim3(1, 1, 65)>>>(nullptr);  // blockDim.z is limited to 64
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    // zero-sized grid or block
    noop<<<0, 32>>>(nullptr);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    noop<<<dim3(4, 0, 1), 32>>>(nullptr);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    noop<<<1, 0>>>(nullptr);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    // the maximum block size works
    int *d_flag;
    CHECK_CUDA(cudaMalloc(&d_flag, sizeof(int)));
    CHECK_CUDA(cudaMemset(d_flag, 0, sizeof(int)));
    noop<<<1, 1024>>>(d_flag);
    CHECK_LAUNCH();
    int h_flag = 0;
    CHECK_CUDA(cudaMemcpy(&h_flag, d_flag, sizeof h_flag, cudaMemcpyDeviceToHost));
    EXPECT(h_flag == 1024);
    CHECK_CUDA(cudaFree(d_flag));
    CHECK_CUDA(cudaFree(d_sum));
  }
  return report("shared_memory", fails);
}
