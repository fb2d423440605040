// Smoke test of host execution mode (cudahost's own quick check; the feature suite lives in cudahost/tests).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

#define CHECK(x)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (x);                                                                                \
        if (e_ != cudaSuccess) {                                                                             \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));         \
            std::exit(1);                                                                                    \
        }                                                                                                    \
    } while (0)
#define EXPECT(c)                                                                                            \
    do {                                                                                                     \
        if (!(c)) {                                                                                          \
            std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #c);                            \
            std::exit(1);                                                                                    \
        }                                                                                                    \
    } while (0)

__constant__ float c_scale[4];
__device__ int d_counter;

__global__ void axpy(int n, float a, const float *__restrict__ x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] * c_scale[0] + y[i];
}

namespace ns {
template <class T, int TILE> __global__ void reverse_block(const T *in, T *out)
{
    __shared__ T tile[TILE];
    int t = threadIdx.x;
    tile[t] = in[blockIdx.x * TILE + t];
    __syncthreads();
    out[blockIdx.x * TILE + t] = tile[TILE - 1 - t];
}
} // namespace ns

template <class T> __global__ void dyn_sum(const T *in, T *out, int n)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *s = reinterpret_cast<T *>(smem_raw);
    int t = threadIdx.x;
    s[t] = t < n ? in[t] : T(0);
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) *out = s[0];
}

__global__ void warp_reduce(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    unsigned b = __ballot_sync(0xffffffffu, i < n);
    if ((threadIdx.x & 31) == 0) {
        out[i / 32] = v;
        (void)b;
    }
}

__global__ void counts(int *out)
{
    int c = __syncthreads_count(threadIdx.x % 3 == 0);
    int a = __syncthreads_and(threadIdx.x < 1000);
    int o = __syncthreads_or(threadIdx.x == 5);
    if (threadIdx.x == 0) {
        out[0] = c;
        out[1] = a;
        out[2] = o;
    }
}

__global__ void bad_barrier(int *out)
{
    if (threadIdx.x == 3) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

int main()
{
    const int n = 1000;
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; i++) {
        hx[i] = (float)i;
        hy[i] = 1.f;
    }
    float *dx, *dy;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc((void **)&dy, n * sizeof(float)));
    CHECK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    float sc[4] = { 2.f, 0, 0, 0 };
    CHECK(cudaMemcpyToSymbol(c_scale, sc, sizeof sc));
    axpy<<<(n + 127) / 128, 128>>>(n, 3.f, dx, dy);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hy.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(hy[i] == 6.f * i + 1.f);

    // templates, namespaces, static shared memory
    ns::reverse_block<float, 64><<<4, 64>>>(dx, dy);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hy.data(), dy, 256 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int b = 0; b < 4; b++)
        for (int t = 0; t < 64; t++) EXPECT(hy[b * 64 + t] == hx[b * 64 + 63 - t]);

    // deduced template arguments + dynamic shared memory
    dyn_sum<<<1, 256, 256 * sizeof(float)>>>(dx, dy, 200);
    CHECK(cudaGetLastError());
    float s = 0;
    CHECK(cudaMemcpy(&s, dy, sizeof s, cudaMemcpyDeviceToHost));
    EXPECT(s == 199.f * 200.f / 2.f);

    // warp shuffles and votes
    warp_reduce<<<4, 256>>>(dx, dy, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(hy.data(), dy, 32 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int w = 0; w < 32; w++) {
        float r = 0;
        for (int i = w * 32; i < w * 32 + 32 && i < n; i++) r += hx[i];
        EXPECT(hy[w] == r);
    }

    int *di;
    CHECK(cudaMalloc(&di, 1024 * sizeof(int)));
    counts<<<1, 100>>>(di);
    int hc[3];
    CHECK(cudaMemcpy(hc, di, sizeof hc, cudaMemcpyDeviceToHost));
    EXPECT(hc[0] == 34 && hc[1] == 1 && hc[2] == 1);

    // launch configuration errors
    axpy<<<1, 2048>>>(n, 1.f, dx, dy);
    EXPECT(cudaPeekAtLastError() == cudaErrorInvalidConfiguration);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    EXPECT(cudaGetLastError() == cudaSuccess);
    axpy<<<0, 32>>>(n, 1.f, dx, dy);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    dyn_sum<float><<<1, 32, 64 * 1024>>>(dx, dy, 1);
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
    EXPECT(cudaFuncSetAttribute(dyn_sum<float>, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024) ==
           cudaSuccess);
    dyn_sum<float><<<1, 32, 64 * 1024>>>(dx, dy, 1);
    CHECK(cudaGetLastError());

    size_t fr, tot;
    CHECK(cudaMemGetInfo(&fr, &tot));
    EXPECT(tot - fr == 2 * n * sizeof(float) + 1024 * sizeof(int));

    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventRecord(e0));
    CHECK(cudaEventRecord(e1));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    EXPECT(ms >= 0);
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));

    // deadlock: thread 3 exits before the barrier
    bad_barrier<<<2, 8>>>(di);
    EXPECT(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
    EXPECT(cudaGetLastError() == cudaErrorLaunchFailure);
    CHECK(cudaDeviceReset());
    std::printf("smoke_basic: OK\n");
    return 0;
}
