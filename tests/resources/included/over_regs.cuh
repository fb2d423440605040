// The kernel of the included.cu self-test, with a budget it cannot meet.
#pragma once

// mf-budget: regs<=4 smem<=0 spill=0
__global__ void included_over_regs_kernel(const float *a, const float *b, float *c, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i] + a[n - 1 - i];
}
