// Checker self-test (tests/resources.cmake): the second kernel states no
// budget, so the check has to fail with "no mf-budget stated".
// mf-budget: regs<=255 smem<=0 spill=0
template <typename T> __global__ void with_budget_kernel(T *x) { x[threadIdx.x] += T(1); }
template __global__ void with_budget_kernel<float>(float *);

__global__ void without_budget_kernel(float *x) { x[threadIdx.x] *= 2.0f; }
