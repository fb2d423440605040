// Runtime API: cudaMalloc/Free, cudaMallocHost/FreeHost, cudaMemcpy in every direction (and the direction
// check), cudaMemcpyAsync, cudaMemset(Async), streams, events and cudaEventElapsedTime, device count/properties,
// cudaSetDevice/GetDevice, cudaMemGetInfo against CUDAHOST_DEVICE_MEMORY and cudaErrorMemoryAllocation beyond it,
// fresh allocations filled with garbage, error names and strings, cudaGetLastError/PeekAtLastError.
// CTest runs this program with CUDAHOST_DEVICE_MEMORY=64m (see CMakeLists.txt).
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifdef __CUDAHOST__
#include "cudahost/counters.h"
#endif

__global__ void spin_work(float *v, int n, int reps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = v[i];
  for (int r = 0; r < reps; ++r) x = x * 0.999f + 0.001f;
  v[i] = x;
}

__global__ void add_one(int *v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] += 1;
}

int main() {
  require_device();
  int fails = 0;

  // ---- device queries
  int count = 0, dev = -1;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  EXPECT(count >= 1);
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaGetDevice(&dev));
  EXPECT(dev == 0);
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  EXPECT(prop.warpSize == 32);
  EXPECT(prop.maxThreadsPerBlock == 1024);
  EXPECT(prop.sharedMemPerBlock == 48 * 1024);
  EXPECT(prop.sharedMemPerBlockOptin >= 48 * 1024);
  EXPECT(prop.maxThreadsDim[0] == 1024 && prop.maxThreadsDim[2] == 64);
  EXPECT(prop.multiProcessorCount >= 1);
  EXPECT(strlen(prop.name) > 0);
  int attr = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&attr, cudaDevAttrWarpSize, 0));
  EXPECT(attr == 32);
  EXPECT(cudaSetDevice(count) == cudaErrorInvalidDevice);
  EXPECT(cudaGetLastError() == cudaErrorInvalidDevice);

  // ---- memcpy in every direction, memset
  const int n = 4096;
  int *h_a = (int *)malloc(n * sizeof(int)), *h_b = (int *)malloc(n * sizeof(int));
  for (int i = 0; i < n; ++i) h_a[i] = i * 3 - 7;
  int *d_a, *d_b, *p_h;
  CHECK_CUDA(cudaMalloc(&d_a, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&d_b, n * sizeof(int)));
  CHECK_CUDA(cudaMallocHost(&p_h, n * sizeof(int)));
  EXPECT(((uintptr_t)d_a % 256) == 0 && ((uintptr_t)d_b % 256) == 0);  // cudaMalloc alignment
#ifdef __CUDAHOST__
  // fresh allocations are garbage (not zero), so a read before write shows
  CHECK_CUDA(cudaMemcpy(h_b, d_a, n * sizeof(int), cudaMemcpyDeviceToHost));
  int zeros = 0;
  for (int i = 0; i < n; ++i) zeros += h_b[i] == 0;
  EXPECT(zeros == 0);
  float *d_f;
  float h_f[4];
  CHECK_CUDA(cudaMalloc(&d_f, sizeof h_f));
  CHECK_CUDA(cudaMemcpy(h_f, d_f, sizeof h_f, cudaMemcpyDeviceToHost));
  EXPECT(isnan(h_f[0]) && isnan(h_f[3]));  // fp32 garbage reads as NaN
  CHECK_CUDA(cudaFree(d_f));
#endif
  CHECK_CUDA(cudaMemcpy(d_a, h_a, n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_b, d_a, n * sizeof(int), cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaMemcpy(p_h, d_b, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(h_b, p_h, n * sizeof(int), cudaMemcpyHostToHost));
  EXPECT(memcmp(h_a, h_b, n * sizeof(int)) == 0);
  CHECK_CUDA(cudaMemcpy(d_b, h_a, n * sizeof(int), cudaMemcpyDefault));  // direction inferred
  CHECK_CUDA(cudaMemset(d_b, 0, 16 * sizeof(int)));
  CHECK_CUDA(cudaMemset(d_b + 16, 0x01, 16 * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(h_b, d_b, n * sizeof(int), cudaMemcpyDefault));
  EXPECT(h_b[0] == 0 && h_b[15] == 0 && h_b[16] == 0x01010101 && h_b[31] == 0x01010101 && h_b[32] == h_a[32]);
#ifdef __CUDAHOST__
  // the direction is checked: a host destination with a host-to-device copy, a device source for host-to-host
  EXPECT(cudaMemcpy(h_b, h_a, 16, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  EXPECT(cudaMemcpy(h_b, d_a, 16, cudaMemcpyHostToHost) == cudaErrorInvalidValue);
  EXPECT(cudaMemcpy(d_a, h_a, 16, cudaMemcpyDeviceToDevice) == cudaErrorInvalidValue);
  EXPECT(cudaMemcpy(d_a, h_a, (n + 1) * sizeof(int), cudaMemcpyHostToDevice) == cudaErrorInvalidValue);  // overrun
  EXPECT(cudaMemset(h_b, 0, 16) == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaSuccess);
#endif
  EXPECT(cudaMemcpy(d_a, h_a, 16, (cudaMemcpyKind)42) != cudaSuccess);
  (void)cudaGetLastError();

  // ---- streams, async copies and memset, events
  cudaStream_t s1, s2;
  CHECK_CUDA(cudaStreamCreate(&s1));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMemcpyAsync(d_a, h_a, n * sizeof(int), cudaMemcpyHostToDevice, s1));
  add_one<<<(n + 255) / 256, 256, 0, s1>>>(d_a, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemsetAsync(d_b, 0, n * sizeof(int), s2));
  CHECK_CUDA(cudaMemcpyAsync(h_b, d_a, n * sizeof(int), cudaMemcpyDeviceToHost, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));
  CHECK_CUDA(cudaStreamSynchronize(s2));
  int ok = 1;
  for (int i = 0; i < n; ++i) ok &= h_b[i] == h_a[i] + 1;
  EXPECT(ok);
  CHECK_CUDA(cudaMemcpy(h_b, d_b, n * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(h_b[0] == 0 && h_b[n - 1] == 0);
  EXPECT(cudaStreamQuery(s1) == cudaSuccess);

  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  float *d_w;
  CHECK_CUDA(cudaMalloc(&d_w, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(d_w, 0, n * sizeof(float)));
  CHECK_CUDA(cudaEventRecord(start, s1));
  spin_work<<<(n + 127) / 128, 128, 0, s1>>>(d_w, n, 2000);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(stop, s1));
  CHECK_CUDA(cudaEventSynchronize(stop));
  EXPECT(cudaEventQuery(stop) == cudaSuccess);
  float ms = -1.0f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  EXPECT(ms > 0.0f && ms < 60000.0f);
  float back = 0;
  CHECK_CUDA(cudaMemcpy(&back, d_w + 5, sizeof back, cudaMemcpyDeviceToHost));
  float want = 0;
  for (int r = 0; r < 2000; ++r) want = want * 0.999f + 0.001f;
  EXPECT(back == want);
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(s1));
  CHECK_CUDA(cudaStreamDestroy(s2));
  CHECK_CUDA(cudaDeviceSynchronize());

  // ---- memory accounting
  size_t free0 = 0, total = 0;
  CHECK_CUDA(cudaMemGetInfo(&free0, &total));
  EXPECT(free0 <= total);
#ifdef __CUDAHOST__
  const char *env = getenv("CUDAHOST_DEVICE_MEMORY");
  if (env && strcmp(env, "64m") == 0) {
    size_t free1 = 0;
    EXPECT(total == (size_t)64 << 20);
    // the live allocations of this test: 2 * n ints and n floats
    EXPECT(total - free0 == 2 * n * sizeof(int) + n * sizeof(float));
    void *big = nullptr;
    EXPECT(cudaMalloc(&big, (size_t)65 << 20) == cudaErrorMemoryAllocation);  // beyond the device
    EXPECT(big == nullptr);
    EXPECT(cudaGetLastError() == cudaErrorMemoryAllocation);
    void *fits = nullptr;
    CHECK_CUDA(cudaMalloc(&fits, (size_t)32 << 20));
    CHECK_CUDA(cudaMemGetInfo(&free1, &total));
    EXPECT(free0 - free1 == (size_t)32 << 20);
    void *second = nullptr;
    EXPECT(cudaMalloc(&second, (size_t)40 << 20) == cudaErrorMemoryAllocation);  // 32 + 40 > 64 MiB
    (void)cudaGetLastError();
    CHECK_CUDA(cudaFree(fits));
    CHECK_CUDA(cudaMemGetInfo(&free1, &total));
    EXPECT(free1 == free0);
    EXPECT(prop.totalGlobalMem == (size_t)64 << 20);
  } else {
    printf("note: CUDAHOST_DEVICE_MEMORY is not 64m: the device-size checks are skipped\n");
  }
#endif

  // ---- errors
  EXPECT(strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") == 0);
  EXPECT(strlen(cudaGetErrorString(cudaErrorInvalidValue)) > 0);
  EXPECT(cudaPeekAtLastError() == cudaSuccess);
  CHECK_CUDA(cudaFree(nullptr));

#ifdef __CUDAHOST__
  // ---- call counters (cudahost/counters.h): each counted call once, async copies and queries not at all
  {
    cudahostResetCallCounts();
    cudahostCallCounts c0;
    cudahostGetCallCounts(&c0);
    EXPECT(c0.malloc_ == 0 && c0.free_ == 0 && cudahostSyncCalls(&c0) == 0);
    EXPECT(c0.device_bytes_peak == c0.device_bytes && c0.pinned_bytes_peak == c0.pinned_bytes);
    void *d = nullptr, *h = nullptr, *a = nullptr;
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_CUDA(cudaMalloc(&d, 1 << 20));
    CHECK_CUDA(cudaMallocHost(&h, 3 << 20));
    CHECK_CUDA(cudaMallocAsync(&a, 4096, s));
    CHECK_CUDA(cudaMemcpyAsync(h, d, 64, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamQuery(s));
    CHECK_CUDA(cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemset(d, 0, 64));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaFreeAsync(a, s));
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFreeHost(h));
    CHECK_CUDA(cudaStreamDestroy(s));
    cudahostCallCounts c;
    cudahostGetCallCounts(&c);
    EXPECT(c.malloc_ == 1 && c.free_ == 1 && c.malloc_async == 1 && c.free_async == 1);
    EXPECT(c.malloc_host == 1 && c.free_host == 1);
    EXPECT(c.stream_sync == 1 && c.device_sync == 1 && c.event_sync == 0 && c.memcpy_sync == 2);
    EXPECT(cudahostSyncCalls(&c) == 4);
    EXPECT(c.device_bytes == c0.device_bytes && c.pinned_bytes == c0.pinned_bytes);
    EXPECT(c.device_bytes_peak == c0.device_bytes + (1 << 20) + 4096);
    EXPECT(c.pinned_bytes_peak == c0.pinned_bytes + (3 << 20));
    cudahostResetCallCounts();
    cudahostGetCallCounts(&c);
    EXPECT(c.malloc_ == 0 && c.device_bytes_peak == c.device_bytes);
  }
#endif

  CHECK_CUDA(cudaFree(d_a));
  CHECK_CUDA(cudaFree(d_b));
  CHECK_CUDA(cudaFree(d_w));
  CHECK_CUDA(cudaFreeHost(p_h));
  free(h_a);
  free(h_b);
  return report("runtime_api", fails);
}
