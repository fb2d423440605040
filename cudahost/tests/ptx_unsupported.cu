// An inline PTX instruction that host mode does not emulate is a compile-time error naming the instruction and its
// line, never a silent no-op. Built at test time; the test passes when the build fails with that message.
#include <cuda_runtime.h>

__global__ void uses_cluster_barrier(float* out) {
  asm volatile("barrier.cluster.arrive;\n" ::: "memory");
  out[threadIdx.x] = 1.f;
}

int main() {
  float* d;
  cudaMalloc(&d, 32 * sizeof(float));
  uses_cluster_barrier<<<1, 32>>>(d);
  return cudaDeviceSynchronize() != cudaSuccess;
}
