// cudaLaunchKernel with a typed kernel goes through the launch machinery (arguments read with the kernel's
// parameter types); the untyped form is reported as unsupported.
#include <cstdio>
__global__ void fill(float *p, int n, float v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}
int main()
{
    float *d;
    cudaMalloc(&d, 100 * sizeof(float));
    int n = 100;
    float v = 2.5f;
    void *args[] = { &d, &n, &v };
    cudaError_t e = cudaLaunchKernel(fill, dim3(2), dim3(64), args, 0, nullptr);
    float h[100];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    int bad = e != cudaSuccess;
    for (int i = 0; i < n; i++) bad += h[i] != v;
    bad += cudaLaunchKernel(fill, dim3(1), dim3(2048), args, 0, nullptr) != cudaErrorInvalidConfiguration;
    bad += cudaGetLastError() != cudaErrorInvalidConfiguration;
    bad += cudaLaunchKernel((const void *)fill, dim3(2), dim3(64), args, 0, nullptr) != cudaErrorNotSupported;
    std::printf("launch_kernel_api: %s\n", bad ? "FAILED" : "OK");
    return bad != 0;
}
