// Minimal checking helpers of the cudahost test programs (plain C-style: each program exits 0 on success and
// prints what failed). Host code only, so the same test files compile with nvcc.
#ifndef CUDAHOST_TESTS_CHECK_H
#define CUDAHOST_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

static int g_check_failures = 0;

// A failed runtime call ends the test: what follows depends on it.
#define CHECK_CUDA(call)                                                                                  \
  do {                                                                                                    \
    cudaError_t check_err_ = (call);                                                                      \
    if (check_err_ != cudaSuccess) {                                                                      \
      printf("FAIL %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorName(check_err_),      \
             cudaGetErrorString(check_err_));                                                             \
      exit(1);                                                                                            \
    }                                                                                                     \
  } while (0)

#define CHECK_CUBLAS(call)                                                                                \
  do {                                                                                                    \
    int check_st_ = (int)(call);                                                                          \
    if (check_st_ != 0) {                                                                                 \
      printf("FAIL %s:%d: %s -> cuBLAS status %d\n", __FILE__, __LINE__, #call, check_st_);               \
      exit(1);                                                                                            \
    }                                                                                                     \
  } while (0)

// A failed expectation is counted and reported; the test goes on.
#define EXPECT(cond)                                                                                      \
  do {                                                                                                    \
    if (!(cond)) {                                                                                        \
      printf("FAIL %s:%d: expected %s\n", __FILE__, __LINE__, #cond);                                     \
      ++g_check_failures;                                                                                 \
    }                                                                                                     \
  } while (0)

// Launch check: the launch itself (configuration errors) and its execution.
#define CHECK_LAUNCH()                                                                                    \
  do {                                                                                                    \
    CHECK_CUDA(cudaGetLastError());                                                                       \
    CHECK_CUDA(cudaDeviceSynchronize());                                                                  \
  } while (0)

// Without a GPU, cuda-mode builds of these programs have nothing to run on: skip (CTest SKIP_RETURN_CODE 77).
static inline void require_device(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("SKIP: no CUDA device\n");
    exit(77);
  }
}

static inline int report(const char *name, int failures) {
  failures += g_check_failures;
  if (failures) printf("%s: FAILED (%d failures)\n", name, failures);
  else printf("%s: OK\n", name);
  return failures ? 1 : 0;
}

#endif  // CUDAHOST_TESTS_CHECK_H
