// Host code of the driver smoke test (compiled by cudahost-c++ as an ordinary C++ source).
#include <cuda_runtime.h>
#include <cstdio>
void run_a(float *d, int n);
int main()
{
    float *d;
    cudaMalloc(&d, 32 * sizeof(float));
    float h[32];
    for (int i = 0; i < 32; i++) h[i] = 1;
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    run_a(d, 32);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%g %s\n", h[0], cudaGetErrorString(cudaGetLastError()));
    return h[0] != 6.0f;
}
