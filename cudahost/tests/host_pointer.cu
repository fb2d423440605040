// A kernel argument that is a host pointer (not inside any device allocation) must be reported, naming the
// kernel and the argument, and the launch fails instead of running. Host-mode behaviour (a GPU would fault or,
// with HMM, run), so the program skips (exit 77) when compiled by nvcc.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

__global__ void write_all(int n, float *dst, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = value;
}

int main() {
#ifndef __CUDAHOST__
  printf("SKIP: host-mode behaviour\n");
  return 77;
#else
  int fails = 0;
  char path[] = "/tmp/cudahost_hostptr_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || !freopen(path, "w", stderr)) {
    printf("FAIL: cannot capture stderr\n");
    return 1;
  }
  // a device pointer works; a pointer into a device allocation (not its start) works too
  float *d_buf;
  CHECK_CUDA(cudaMalloc(&d_buf, 64 * sizeof(float)));
  write_all<<<1, 32>>>(32, d_buf + 32, 1.0f);
  CHECK_LAUNCH();
  // a host pointer is reported
  float *host = (float *)malloc(64 * sizeof(float));
  for (int i = 0; i < 64; ++i) host[i] = -1.0f;
  write_all<<<2, 32>>>(64, host, 2.0f);
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t sync = cudaDeviceSynchronize();
  fflush(stderr);
  FILE *f = fopen(path, "r");
  char text[4096] = {0};
  if (f) {
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = 0;
    fclose(f);
  }
  remove(path);
  printf("captured report:\n%s\n", text);
  EXPECT(launch != cudaSuccess || sync != cudaSuccess);
  EXPECT(strstr(text, "write_all") != nullptr);
  EXPECT(strstr(text, "argument 2") != nullptr);
  EXPECT(strstr(text, "host pointer") != nullptr);
  int untouched = 1;
  for (int i = 0; i < 64; ++i) untouched &= host[i] == -1.0f;
  EXPECT(untouched);  // the kernel did not run
  free(host);
  return report("host_pointer", fails);
#endif
}
