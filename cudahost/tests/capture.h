// Runs a launch with stderr sent to a file and keeps what host mode printed there (its diagnostics),
// for the cudahost tests that check a misused kernel's report. Host code only; host mode only.
#ifndef CUDAHOST_TESTS_CAPTURE_H
#define CUDAHOST_TESTS_CAPTURE_H

#ifdef __CUDAHOST__
#include <stdio.h>

#include <cuda_runtime.h>

static char g_text[16384]; // what the last capture_launch printed to stderr
static char g_path[64];    // the file stderr goes to (set by the test, e.g. with mkstemp)

// launch() with stderr redirected to g_path; g_text receives what it printed (also echoed to
// stdout). Returns the launch's error, else the synchronization's; the device is reset after.
template <typename Launch> static cudaError_t capture_launch(Launch launch) {
  fflush(stderr);
  if (!freopen(g_path, "w", stderr)) return cudaErrorUnknown;
  launch();
  cudaError_t e = cudaGetLastError();
  cudaError_t s = cudaDeviceSynchronize();
  fflush(stderr);
  FILE *f = fopen(g_path, "r");
  size_t got = f ? fread(g_text, 1, sizeof g_text - 1, f) : 0;
  g_text[got] = 0;
  if (f) fclose(f);
  printf("captured:\n%s\n", g_text);
  cudaDeviceReset();
  return e != cudaSuccess ? e : s;
}

#endif // __CUDAHOST__
#endif
