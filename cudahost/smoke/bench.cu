// Micro-benchmarks of host execution mode (not a test): per-thread, per-barrier, per-shuffle and per-launch costs,
// and a 256^3 SGEMM with 16x16 shared-memory tiles.   Run: bin/cudahost_bench
#include <cuda_runtime.h>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <vector>

__global__ void empty_k(float* p) {
  if (p && threadIdx.x == 1u << 30) p[0] = 1;
}
__global__ void write_k(float* p) { p[blockIdx.x * blockDim.x + threadIdx.x] = 1.f; }
__global__ void sync_k(float* p, int iters) {
  __shared__ float s[1024];
  float acc = 0;
  for (int i = 0; i < iters; i++) {
    s[threadIdx.x] = (float)i;
    __syncthreads();
    acc += s[(threadIdx.x + 1) & 255];
    __syncthreads();
  }
  p[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__global__ void shfl_k(float* p, int iters) {
  float v = (float)threadIdx.x;
  for (int i = 0; i < iters; i++) v += __shfl_xor_sync(0xffffffffu, v, 1 + (i & 15));
  p[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
#define TILE 16
__global__ void sgemm(int n, const float* A, const float* B, float* C) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n; t += TILE) {
    As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[row * n + col] = acc;
}

#include <time.h>
// CPU time of the process (less sensitive to a loaded machine than wall time; with CUDAHOST_WORKERS=1 it is the
// kernel's time), or wall time with CUDAHOST_BENCH_WALL=1.
static double now() {
  static const bool wall = std::getenv("CUDAHOST_BENCH_WALL") != nullptr;
  if (wall) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main() {
  float* d;
  cudaMalloc(&d, (1 << 22) * sizeof(float));
  // launch overhead
  empty_k<<<1, 1>>>(d);
  double t0 = now();
  for (int i = 0; i < 2000; i++) empty_k<<<1, 1>>>(d);
  double t1 = now();
  std::printf("launch (1x1):            %8.2f us\n", (t1 - t0) / 2000 * 1e6);
  t0 = now();
  for (int i = 0; i < 200; i++) empty_k<<<4, 32>>>(d);
  t1 = now();
  std::printf("launch (4x32):           %8.2f us\n", (t1 - t0) / 200 * 1e6);
  // barrier-free threads
  write_k<<<4096, 1024>>>(d);
  t0 = now();
  write_k<<<4096, 1024>>>(d);
  t1 = now();
  std::printf("barrier-free thread:     %8.2f ns\n", (t1 - t0) / (4096.0 * 1024) * 1e9);
  sync_k<<<16, 256>>>(d, 10);
  t0 = now();
  sync_k<<<64, 256>>>(d, 100);
  t1 = now();
  std::printf("__syncthreads per thread:%8.2f ns\n", (t1 - t0) / (64.0 * 256 * 200) * 1e9);
  t0 = now();
  shfl_k<<<64, 256>>>(d, 100);
  t1 = now();
  std::printf("shuffle per thread:      %8.2f ns\n", (t1 - t0) / (64.0 * 256 * 100) * 1e9);
  const int n = 256;
  float *A, *B, *C;
  cudaMalloc(&A, n * n * 4);
  cudaMalloc(&B, n * n * 4);
  cudaMalloc(&C, n * n * 4);
  cudaMemset(A, 0, n * n * 4);
  cudaMemset(B, 0, n * n * 4);
  sgemm<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(n, A, B, C);
  t0 = now();
  sgemm<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(n, A, B, C);
  t1 = now();
  std::printf("sgemm 256^3 16x16 tiles: %8.2f ms\n", (t1 - t0) * 1e3);
  return cudaGetLastError() != cudaSuccess;
}
