// Compiled by cudahost-c++ with the flags nvcc users pass (smoke test cudahost_smoke_driver_nvcc_flags): -std=c++17,
// -arch, -gencode, -lineinfo, --use_fast_math, -Xcompiler, -Xptxas, --expt-relaxed-constexpr, ...
#include <cstdio>

constexpr float twice(float x) { return 2.0f * x; } // called from device code (--expt-relaxed-constexpr)

__global__ void scale(float *x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]) + __expf(0.0f);
}

int main()
{
    const int n = 100;
    float h[n], *d;
    for (int i = 0; i < n; ++i) h[i] = (float)i;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    scale<<<(n + 31) / 32, 32>>>(d, n);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(d);
    for (int i = 0; i < n; ++i)
        if (h[i] != 2.0f * i + 1.0f) {
            std::printf("FAIL x[%d] = %g\n", i, h[i]);
            return 1;
        }
    std::printf("nvcc_flags: OK (C++ %ld)\n", (long)__cplusplus);
    return 0;
}
