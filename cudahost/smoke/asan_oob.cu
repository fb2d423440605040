// Proof for the ASan configuration: an out-of-bounds global write inside a kernel is reported at this file's line.
#include <cuda_runtime.h>
#include <cstdio>

__global__ void oob_write(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 1.0f; // CUDAHOST_OOB_LINE: no bounds check, the grid has more threads than n
    (void)n;
}

int main()
{
    float *d = nullptr;
    const int n = 100;
    cudaMalloc(&d, n * sizeof(float));
    oob_write<<<1, 128>>>(d, n);
    cudaDeviceSynchronize();
    std::printf("no error detected\n");
    return 0;
}
