// Checker self-test (tests/resources.cmake): __launch_bounds__(1024, 2) caps
// this kernel at 32 registers while it keeps 64 accumulators live, so ptxas
// must spill; the budget check has to fail with "spills registers".
// mf-budget: regs<=255 smem<=0 stack<=4096 spill=0
__global__ void __launch_bounds__(1024, 2) spill_kernel(const float *in, float *out, int n)
{
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = in[threadIdx.x + i];
    for (int it = 0; it < n; ++it) {
#pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + 1) & 63] + in[it + i];
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += acc[i] * (float)i;
    out[threadIdx.x] = s;
}
