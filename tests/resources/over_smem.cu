// Checker self-test (tests/resources.cmake): 2048 bytes of static shared
// memory against a 1024-byte budget: the check has to fail with "exceeds its
// shared-memory budget".
// mf-budget: regs<=255 smem<=1024 spill=0
__global__ void over_smem_kernel(const float *in, float *out)
{
    __shared__ float buf[512];
    buf[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = buf[511 - threadIdx.x];
}
