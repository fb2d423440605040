// A barrier that not every thread of a block reaches must be reported with the block and the threads involved,
// instead of hanging; the launch then fails with cudaErrorLaunchFailure. Host-mode behaviour (on a GPU this kernel
// is undefined behaviour), so the program skips (exit 77) when compiled by nvcc. CTest runs it with a timeout.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

__global__ void divergent_barrier(int *out) {
  // in block 1, only threads 0..7 reach the barrier; threads 8..31 exit
  if (blockIdx.x != 1 || threadIdx.x < 8) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

int main() {
#ifndef __CUDAHOST__
  printf("SKIP: host-mode behaviour\n");
  return 77;
#else
  int fails = 0;
  // the report goes to stderr: capture it in a file to check its contents
  char path[] = "/tmp/cudahost_deadlock_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || !freopen(path, "w", stderr)) {
    printf("FAIL: cannot capture stderr\n");
    return 1;
  }
  int *d_out;
  CHECK_CUDA(cudaMalloc(&d_out, 3 * 32 * sizeof(int)));
  divergent_barrier<<<3, 32>>>(d_out);
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t sync = cudaDeviceSynchronize();
  fflush(stderr);
  FILE *f = fopen(path, "r");
  char report_text[8192] = {0};
  if (f) {
    size_t got = fread(report_text, 1, sizeof report_text - 1, f);
    report_text[got] = 0;
    fclose(f);
  }
  remove(path);
  printf("captured report:\n%s\n", report_text);
  EXPECT(launch == cudaErrorLaunchFailure || sync == cudaErrorLaunchFailure);
  EXPECT(strstr(report_text, "deadlock") != nullptr);
  EXPECT(strstr(report_text, "divergent_barrier") != nullptr);                // the kernel
  EXPECT(strstr(report_text, "block (1,0,0)") != nullptr);                    // the block
  EXPECT(strstr(report_text, "(0,0,0)") != nullptr && strstr(report_text, "(7,0,0)") != nullptr);  // waiting
  EXPECT(strstr(report_text, "(8,0,0)") != nullptr);                         // exited
  EXPECT(strstr(report_text, "__syncthreads") != nullptr);
  return report("deadlock", fails);
#endif
}
