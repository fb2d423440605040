#pragma once
template <typename T> __global__ void scale_k(T *p, T s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] *= s;
}
template <typename T> inline void scale(T *p, T s, int n, cudaStream_t st = 0)
{
    scale_k<T><<<(n + 63) / 64, 64, 0, st>>>(p, s, n);
}
