// Proof for the TSan configuration: a missing __syncthreads between shared-memory writes and reads is a data race.
#include <cuda_runtime.h>
#include <cstdio>

__global__ void shift_left(const float *in, float *out)
{
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = in[t]; // CUDAHOST_RACE_WRITE
    // missing __syncthreads() here
    out[t] = s[(t + 1) % 64]; // CUDAHOST_RACE_LINE
}

int main()
{
    float *in, *out;
    cudaMalloc(&in, 64 * sizeof(float));
    cudaMalloc(&out, 64 * sizeof(float));
    cudaMemset(in, 0, 64 * sizeof(float));
    shift_left<<<1, 64>>>(in, out);
    cudaDeviceSynchronize();
    std::printf("done\n");
    return 0;
}
