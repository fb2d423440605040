// Launch and declaration syntax the rewriter must handle (qualified and template callees, explicit template
// arguments with nested angle brackets and parentheses, multi-line configurations, extern __shared__ at namespace
// and block scope with alignment, __noinline__, extern "C" kernels).
#include <cstdio>
extern __shared__ float4 g_smem[];
namespace outer {
namespace inner {
template <class T, int N> __global__ void k(T *p)
{
    if (threadIdx.x == 0 && p) p[0] = (T)N;
}
} // namespace inner
} // namespace outer
template <class T> struct W {
    using type = T;
};
template <class T> __global__ void kw(typename W<T>::type *p)
{
    extern __shared__ alignas(16) char raw[];
    if (p) p[threadIdx.x] = (float)sizeof(raw[0]);
}
__device__ __noinline__ float f1(float x) { return x * 2; }
__global__ void k2(float *p)
{
    float4 *s4 = reinterpret_cast<float4 *>(g_smem);
    float *sf = (float *)g_smem;
    s4[threadIdx.x].x = f1(1.f);
    __syncthreads();
    if (p) p[threadIdx.x] = sf[threadIdx.x * 4] + g_smem[threadIdx.x].x;
}
extern "C" __global__ void kc(int *p)
{
    if (p) *p = 5;
}
int main()
{
    float *d;
    cudaMalloc(&d, 1024);
    outer::inner::k<float, (3 > 2)><<<1, 1>>>(d);
    ::outer::inner::k<W<W<float>>::type::type, 4><<<1, 2>>>(d);
    kw<float><<<1, 4, 64>>>(d);
    k2<<<1, 8, 8 * sizeof(float4)>>>(d);
    int *di;
    cudaMalloc(&di, 4);
    kc<<<1, 1>>>(di);
    float h[8];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    int hi;
    cudaMemcpy(&hi, di, 4, cudaMemcpyDeviceToHost);
    printf("%g %g %d %s\n", h[0], h[1], hi, cudaGetErrorString(cudaGetLastError()));
    return !(h[0] == 4.f && hi == 5);
}
