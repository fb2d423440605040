// Checker self-test (tests/resources.cmake): the budget is ample except for the
// sm_80 override, which is smaller than what this kernel needs. Checked for sm_80
// the check has to fail with "exceeds its register budget sm_80:regs<=4"; checked
// for sm_90 the override does not apply and the check passes.
// mf-budget: regs<=255 smem<=0 spill=0 sm_80:regs<=4  (a deliberately wrong sm_80 figure)
__global__ void arch_override_kernel(const float *a, const float *b, float *c, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i] + a[n - 1 - i];
}
