// Device-side helpers shared by the optimized/<op>.cu kernels.
//
// Included after "mf_cuda.h" (which defines MF_NS and declares mf_scratch_*). Every .cu file is compiled
// twice, by nvcc (namespace mf_cuda) and by the host compiler through cudahost
// (namespace mf_host), and both builds live in one library: everything here is
// a macro, or inline / constexpr inside namespace MF_NS, so neither build
// defines a symbol the other also defines.
#ifndef MEMFIX_MF_DEVICE_CUH
#define MEMFIX_MF_DEVICE_CUH

#include <cuda_bf16.h>
#include <cstddef>

// `#pragma unroll` under nvcc; GCC's spelling in host execution mode (the host
// compiler would warn about an unknown pragma).
// MF_NO_UNROLL keeps a loop rolled (a register-tight kernel's bookkeeping loops).
#if defined(__CUDACC__)
#define MF_UNROLL _Pragma("unroll")
#define MF_NO_UNROLL _Pragma("unroll 1")
#else
#define MF_UNROLL _Pragma("GCC unroll 16")
#define MF_NO_UNROLL _Pragma("GCC unroll 1")
#endif

namespace MF_NS {

// Launch limits: gridDim.x and gridDim.y / gridDim.z maxima (sm_80, sm_90).
constexpr size_t kMaxGridX = 2147483647u;
constexpr size_t kMaxGridY = 65535u;

// Storage type <-> fp32. from_f32 rounds to nearest even for bf16.
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

// max that propagates NaN (fmaxf drops it): a NaN input must make the result NaN.
__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || a > b) ? a : b; }

// 2^x with subnormal results flushed to +0 (and a subnormal x read as 0, so 1): one MUFU.EX2 in SASS, where
// exp2f is 4-6 instructions (without ftz it adds a range test and two multiplies to keep subnormal results).
// -Inf gives +0, +Inf +Inf, NaN NaN. A GPU is within 2 ulp of the correctly rounded 2^x (PTX ISA, ex2); host
// mode emulates the instruction with 2^x rounded once from double (cudahost/README.md, Inline PTX), so a
// tolerance must cover the GPU's 2 ulp. Suits softmax terms 2^(s - max) <= 1, where values below 2^-126
// (FLT_MIN) do not matter.
__device__ __forceinline__ float mf_ex2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Block-wide reductions over the kThreads threads of a block (kThreads ==
// blockDim.x, a power of two) through shared memory sh[kThreads]. Every thread
// of the block must call them (they contain __syncthreads); the trailing
// barrier lets the caller reuse 'sh' right away. block_max propagates NaN.
template <unsigned kThreads, typename Op> __device__ inline float block_reduce_n(float v, float *sh, Op op)
{
    const unsigned t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (unsigned s = kThreads / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] = op(sh[t], sh[t + s]);
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads();
    return r;
}
struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct NanMaxOp {
    __device__ float operator()(float a, float b) const { return nan_max(a, b); }
};
template <unsigned kThreads> __device__ inline float block_sum_n(float v, float *sh)
{
    return block_reduce_n<kThreads>(v, sh, SumOp());
}
template <unsigned kThreads> __device__ inline float block_max_n(float v, float *sh)
{
    return block_reduce_n<kThreads>(v, sh, NanMaxOp());
}

// Device scratch given back on every exit path of a launcher: Scratch s(ctx);
// mf_scratch_alloc(ctx, MF_MEM_DEVICE, n, &s.ptr). The block returns to the
// context's caching arena (src/core/context.c) and is reused in stream order,
// so the destructor neither frees device memory nor waits for the device.
struct Scratch {
    mf_context *ctx;
    void *ptr = nullptr;
    explicit Scratch(mf_context *c) : ctx(c) {}
    ~Scratch()
    {
        if (ptr != nullptr) mf_scratch_free(ctx, MF_MEM_DEVICE, ptr);
    }
    Scratch(const Scratch &) = delete;
    Scratch &operator=(const Scratch &) = delete;
};

// A grid dimension of n blocks, capped at 'cap' (kernels loop over the rest
// with a stride of gridDim). n == 0 stays 0.
static inline unsigned grid_cap(size_t n, size_t cap) { return (unsigned)(n < cap ? n : cap); }

// Blocks of 'threads' threads covering n items, at least 1 and at most 'cap'
// (grid-stride loops cover the rest).
static inline unsigned grid_blocks(size_t n, size_t threads, size_t cap)
{
    size_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    return grid_cap(b, cap);
}

} // namespace MF_NS

#endif
