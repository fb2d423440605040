// Checker self-test (tests/resources.cmake): the budget below is smaller than
// what this kernel needs, so the check has to fail with "exceeds its register
// budget".
// mf-budget: regs<=4 smem<=0 spill=0
__global__ void over_regs_kernel(const float *a, const float *b, float *c, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i] + a[n - 1 - i];
}
