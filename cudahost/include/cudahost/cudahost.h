// cudahost/cudahost.h: the compatibility header of host execution mode.
//
// Force-included (-include cudahost/cudahost.h) into every .cu source that cudahost-rewrite has turned into C++.
// Order matters:
//   1. the renaming macros (runtime and cuBLAS functions become cudahost_<name>);
//   2. the CUDA keywords (__global__, __device__, __shared__, ...), defined before the toolkit's crt/host_defines.h,
//      which only defines them when they are not defined yet;
//   3. NVIDIA's own <cuda_runtime.h>, <cuda_fp16.h>, <cuda_bf16.h>, so every function defined by cudahost is
//      checked against NVIDIA's declaration;
//   4. the builtins (threadIdx, blockIdx, blockDim, gridDim, warpSize), barriers, warp shuffles and votes,
//      the launch machinery used by the rewritten <<<...>>> launches, and the C++ convenience templates
//      that NVIDIA's headers only provide to nvcc;
//   5. cudahost/device_functions.h (atomics, math intrinsics, fp16/bf16 device functions).
// Host-mode code sees __CUDAHOST__ defined, __CUDA_ARCH__ and __CUDACC__ undefined.
#ifndef CUDAHOST_CUDAHOST_H
#define CUDAHOST_CUDAHOST_H

#ifndef __cplusplus
/* C translation units of a host-mode program (e.g. compiled by cudahost-c++, which force-includes this header
   everywhere) only need the renames, so that their CUDA runtime calls reach cudahost. */
#include "cudahost/renames.h"
#include <cuda_runtime_api.h>
#else
#if defined(__CUDACC__) || defined(__CUDA_ARCH__)
#error "cudahost/cudahost.h must not be used with nvcc: it is the host execution mode of CUDA sources"
#endif

#ifndef __CUDAHOST__
#define __CUDAHOST__ 1
#endif

// ---- 0. C++20's std::lerp -----------------------------------------------------------------------------------------
// libstdc++'s <math.h> brings std::lerp into the global namespace in C++20 (`using std::lerp;`), where a user's own
// `__device__ float lerp(float, float, float)` (valid CUDA, which compiles as C++17) would clash with it. The
// standard headers are read once here, with std::lerp renamed, and std::lerp is declared again afterwards (so
// std::lerp still works; ::lerp is left to the program).
#define lerp cudahost_std_lerp_
#include <cmath>
#include <math.h>
#undef lerp
namespace std {
constexpr float lerp(float a, float b, float t) noexcept { return cudahost_std_lerp_(a, b, t); }
constexpr double lerp(double a, double b, double t) noexcept { return cudahost_std_lerp_(a, b, t); }
constexpr long double lerp(long double a, long double b, long double t) noexcept
{
    return cudahost_std_lerp_(a, b, t);
}
} // namespace std

// ---- 1. renames --------------------------------------------------------------------------------------------------
#include "cudahost/renames.h"

// ---- 2. keywords -------------------------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
/* per block: a worker runs one block at a time (see README); aligned to 16 bytes at least, as nvcc aligns shared
   arrays, so that reinterpret_cast<float4*>(shared_array) is as well aligned as on a GPU */
#define __shared__ thread_local __attribute__((aligned(16)))
#define __launch_bounds__(...)
#define __cluster_dims__(...)
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif

// ---- 3. the toolkit's headers ------------------------------------------------------------------------------------
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

// ---- 4. builtins -------------------------------------------------------------------------------------------------
#define CUDAHOST_TLS_ __attribute__((tls_model("initial-exec")))
// Per fiber: the scheduler stores the running CUDA thread's values here at every switch.
extern __thread uint3 threadIdx CUDAHOST_TLS_;
extern __thread uint3 blockIdx CUDAHOST_TLS_;
extern __thread uint3 blockDim CUDAHOST_TLS_;
extern __thread uint3 gridDim CUDAHOST_TLS_;
static constexpr int warpSize = 32;

// Block-wide barriers (true semantics: every thread of the block must arrive; otherwise a deadlock is reported).
void __syncthreads();
int __syncthreads_count(int predicate);
int __syncthreads_and(int predicate);
int __syncthreads_or(int predicate);

namespace cudahost {
namespace detail {
enum warp_kind : int {
    wk_sync = 0,
    wk_shfl_idx,
    wk_shfl_up,
    wk_shfl_down,
    wk_shfl_xor,
    wk_ballot,
    wk_match_any,
    wk_match_all,
    wk_red_add,
    wk_red_min_s,
    wk_red_max_s,
    wk_red_min_u,
    wk_red_max_u,
    wk_red_and,
    wk_red_or,
    wk_red_xor
};
// A warp-level barrier among the lanes named in mask (limited to lanes that exist in a partial warp), with a
// per-lane 64-bit value exchanged. Returns the lane's result.
unsigned long long warp_op(int kind, unsigned mask, unsigned long long value, int param, int width);
// The same with the call site (the .cu file and line, named in diagnostics of undefined warp operations).
unsigned long long warp_op_at(int kind, unsigned mask, unsigned long long value, int param, int width,
                              const char *file, int line);
unsigned active_mask();
// Tiles larger than a warp (cooperative groups): a barrier of the threads [first, first + count) of the block
// (count a power of two, 64 to 1024), returning how many times it has completed; group_gen_ reads that count.
unsigned group_sync_(unsigned first, unsigned count);
unsigned group_gen_(unsigned first, unsigned count);
// Per-worker exchange slots for those tiles' collectives: [5 tile sizes][2][1024][kTileSlot] bytes.
inline constexpr unsigned kTileSlot = 64;
void *tile_scratch_();
unsigned lane_id();
template <class T> inline unsigned long long to_bits(const T &v)
{
    // (__half and __nv_bfloat16 are not trivially copyable in NVIDIA's host headers, but are plain 16-bit values)
    static_assert(sizeof(T) <= 8, "warp shuffles take values of at most 8 bytes");
    unsigned long long b = 0;
    std::memcpy(&b, static_cast<const void *>(&v), sizeof(T));
    return b;
}
template <class T> inline T from_bits(unsigned long long b)
{
    T v;
    std::memcpy(static_cast<void *>(&v), &b, sizeof(T));
    return v;
}
} // namespace detail
} // namespace cudahost

// The call site of a warp intrinsic (default arguments, evaluated where it is called: the .cu line through #line).
#define CUDAHOST_SITE_PARAMS_ , const char *cudahost_f_ = __builtin_FILE(), int cudahost_l_ = __builtin_LINE()
#define CUDAHOST_SITE_ARGS_ , cudahost_f_, cudahost_l_
inline void __syncwarp(unsigned mask = 0xffffffffu CUDAHOST_SITE_PARAMS_)
{
    (void)cudahost::detail::warp_op_at(cudahost::detail::wk_sync, mask, 0, 0, 32 CUDAHOST_SITE_ARGS_);
}
template <class T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32 CUDAHOST_SITE_PARAMS_)
{
    return cudahost::detail::from_bits<T>(cudahost::detail::warp_op_at(cudahost::detail::wk_shfl_idx, mask,
                                                                       cudahost::detail::to_bits(var),
                                                                       srcLane, width CUDAHOST_SITE_ARGS_));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32 CUDAHOST_SITE_PARAMS_)
{
    return cudahost::detail::from_bits<T>(
        cudahost::detail::warp_op_at(cudahost::detail::wk_shfl_up, mask, cudahost::detail::to_bits(var),
                                     (int)delta, width CUDAHOST_SITE_ARGS_));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32 CUDAHOST_SITE_PARAMS_)
{
    return cudahost::detail::from_bits<T>(
        cudahost::detail::warp_op_at(cudahost::detail::wk_shfl_down, mask, cudahost::detail::to_bits(var),
                                     (int)delta, width CUDAHOST_SITE_ARGS_));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32 CUDAHOST_SITE_PARAMS_)
{
    return cudahost::detail::from_bits<T>(cudahost::detail::warp_op_at(cudahost::detail::wk_shfl_xor, mask,
                                                                       cudahost::detail::to_bits(var),
                                                                       laneMask, width CUDAHOST_SITE_ARGS_));
}
inline unsigned __ballot_sync(unsigned mask, int predicate CUDAHOST_SITE_PARAMS_)
{
    return (unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_ballot, mask, predicate != 0, 0,
                                                  32 CUDAHOST_SITE_ARGS_);
}
inline int __any_sync(unsigned mask, int predicate CUDAHOST_SITE_PARAMS_)
{
    return __ballot_sync(mask, predicate CUDAHOST_SITE_ARGS_) != 0;
}
inline int __all_sync(unsigned mask, int predicate CUDAHOST_SITE_PARAMS_)
{
    // every participating lane voted true: compare with the ballot of "true" of the same lanes
    unsigned long long r = cudahost::detail::warp_op_at(cudahost::detail::wk_match_all, mask,
                                                        predicate != 0 ? 1 : 0, 0, 32 CUDAHOST_SITE_ARGS_);
    return (int)((r >> 32) & 1) && (predicate != 0);
}
inline int __uni_sync(unsigned mask, int predicate CUDAHOST_SITE_PARAMS_)
{
    unsigned long long r = cudahost::detail::warp_op_at(cudahost::detail::wk_match_all, mask, predicate != 0,
                                                        0, 32 CUDAHOST_SITE_ARGS_);
    return (int)((r >> 32) & 1);
}
inline unsigned __activemask() { return cudahost::detail::active_mask(); }
template <class T> inline unsigned __match_any_sync(unsigned mask, T value CUDAHOST_SITE_PARAMS_)
{
    return (unsigned)cudahost::detail::warp_op_at(
        cudahost::detail::wk_match_any, mask, cudahost::detail::to_bits(value), 0, 32 CUDAHOST_SITE_ARGS_);
}
template <class T> inline unsigned __match_all_sync(unsigned mask, T value, int *pred CUDAHOST_SITE_PARAMS_)
{
    unsigned long long r = cudahost::detail::warp_op_at(
        cudahost::detail::wk_match_all, mask, cudahost::detail::to_bits(value), 0, 32 CUDAHOST_SITE_ARGS_);
    *pred = (int)((r >> 32) & 1);
    return (unsigned)r;
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v CUDAHOST_SITE_PARAMS_)
{
    return (unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_add, mask, v, 0,
                                                  32 CUDAHOST_SITE_ARGS_);
}
inline int __reduce_add_sync(unsigned mask, int v CUDAHOST_SITE_PARAMS_)
{
    return (int)(unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_add, mask, (unsigned)v, 0,
                                                       32 CUDAHOST_SITE_ARGS_);
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v CUDAHOST_SITE_PARAMS_)
{
    return (unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_min_u, mask, v, 0,
                                                  32 CUDAHOST_SITE_ARGS_);
}
inline int __reduce_min_sync(unsigned mask, int v CUDAHOST_SITE_PARAMS_)
{
    return (int)(unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_min_s, mask, (unsigned)v, 0,
                                                       32 CUDAHOST_SITE_ARGS_);
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned v CUDAHOST_SITE_PARAMS_)
{
    return (unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_max_u, mask, v, 0,
                                                  32 CUDAHOST_SITE_ARGS_);
}
inline int __reduce_max_sync(unsigned mask, int v CUDAHOST_SITE_PARAMS_)
{
    return (int)(unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_max_s, mask, (unsigned)v, 0,
                                                       32 CUDAHOST_SITE_ARGS_);
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned v CUDAHOST_SITE_PARAMS_)
{
    return (unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_and, mask, v, 0,
                                                  32 CUDAHOST_SITE_ARGS_);
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned v CUDAHOST_SITE_PARAMS_)
{
    return (unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_or, mask, v, 0,
                                                  32 CUDAHOST_SITE_ARGS_);
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v CUDAHOST_SITE_PARAMS_)
{
    return (unsigned)cudahost::detail::warp_op_at(cudahost::detail::wk_red_xor, mask, v, 0,
                                                  32 CUDAHOST_SITE_ARGS_);
}

// Memory fences: the fibers of a block run on one OS thread; blocks run on several, so fences are real fences.
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
long long clock64();
unsigned long long __globaltimer();
// __nanosleep yields to the other threads of the block, so a spin-wait that sleeps makes progress in host mode.
void __nanosleep(unsigned ns);
// Abort the block and fail the launch (sticky cudaErrorLaunchFailure), as a device-side trap does.
[[noreturn]] void __trap();
inline void __brkpt() {}

// ---- launch machinery (the rewriter's target) --------------------------------------------------------------------
// The kernel's address: the kernel itself (decayed to its address) or the launched function pointer's value (a
// typed kernel pointer, a kernel passed to a template) where `&callee` is well-formed (nullptr otherwise, e.g. a template whose arguments are deduced
// from the launch's arguments): used to look up cudaFuncSetAttribute settings and to convert arguments to the
// kernel's parameter types once per launch.
#define CUDAHOST_KADDR(...)                                                                                  \
    ([&](auto cudahost_z_) {                                                                                 \
        (void)cudahost_z_;                                                                                   \
        if constexpr (requires { &__VA_ARGS__; })                                                            \
            return __VA_ARGS__; /* a kernel decays to its address; a pointer is returned as it is */         \
        else                                                                                                 \
            return nullptr;                                                                                  \
    }(0))

namespace cudahost {

// A kernel called like an ordinary function, `k(args)`, is rewritten into a call of this deleted function, so that it
// does not compile, as with nvcc ("a __global__ function call must be configured"). Kernels keep their declared type:
// a kernel is a value (a typed function pointer, a template argument) that a launch, cudaLaunchKernel or
// cudaFuncSetAttribute takes as nvcc's do.
template <class K> K &&a_global_function_call_must_be_configured_with_launch_syntax(K &&kernel) = delete;

struct launch_config {
    const void *kaddr;
    const char *name;
    const char *file;
    int line;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
};

// Validates the configuration (records the error and returns false when the launch must not run).
bool launch_begin_(const launch_config &c);
// Reports and records a kernel pointer argument that is not device-accessible; returns false if so.
bool check_pointer_arg_(const launch_config &c, int position, const void *p);
void launch_fail_(const launch_config &c, cudaError_t e);
// The result of the calling host thread's latest launch (for cudaLaunchKernel's return value).
cudaError_t last_launch_status_();
// Runs every thread of the grid: body(ctx) per thread, with the builtins set.
void launch_run_(const launch_config &c, void (*body)(void *), void *ctx);

extern __thread void *dyn_smem_base_ CUDAHOST_TLS_;

// Block-scope `__shared__ T name[...];` is followed (by the rewriter) by `cudahost::shared_fill_(name);`: the first
// thread of each block that reaches the declaration fills the variable with garbage (0xff bytes: NaN for floats).
void shared_fill_bytes_(void *p, size_t n);
template <class T> inline void shared_fill_(T &v)
{
    shared_fill_bytes_(const_cast<void *>(static_cast<const volatile void *>(std::addressof(v))), sizeof(T));
}

// Block-scope `extern __shared__ T name[];` becomes `T* name = cudahost::dyn_smem_ptr<T>();`.
template <class T> inline T *dyn_smem_ptr() { return static_cast<T *>(dyn_smem_base_); }
// Namespace-scope `extern __shared__ T name[];` becomes `#define name (::cudahost::dyn_smem_ptr<T>())`.
// dyn_smem<T> is a pointer-like object reading the running block's dynamic shared memory at every use, for code
// that wants an object (not used by the rewriter).
template <class T> struct dyn_smem {
    T *get() const { return static_cast<T *>(dyn_smem_base_); }
    operator T *() const { return get(); }
    template <class U> explicit operator U *() const { return (U *)get(); }
    T &operator[](std::ptrdiff_t i) const { return get()[i]; }
    T &operator*() const { return *get(); }
    T *operator+(std::ptrdiff_t i) const { return get() + i; }
    T *operator-(std::ptrdiff_t i) const { return get() - i; }
};

namespace detail {
template <class K, class... A> struct launch_args {
    using type = std::tuple<std::decay_t<A>...>;
};
template <class R, class... P, class... A>
requires(sizeof...(P) == sizeof...(A)) struct launch_args<R (*)(P...), A...> {
    using type = std::tuple<std::remove_cv_t<P>...>;
};
template <class R, class... P, class... A>
requires(sizeof...(P) == sizeof...(A)) struct launch_args<R (*)(P...) noexcept, A...> {
    using type = std::tuple<std::remove_cv_t<P>...>;
};
// A kernel argument converted to its parameter's type. A literal NULL or 0 for a pointer parameter (an integer once
// forwarded) becomes a null pointer, as the language converts a null pointer constant; a non-zero integer becomes
// that address, which the launch's pointer check then reports.
template <class P, class A> inline decltype(auto) convert_arg(A &&a)
{
    if constexpr (std::is_pointer_v<P> && std::is_integral_v<std::remove_cvref_t<A>>)
        return a == 0 ? P(nullptr) : reinterpret_cast<P>(static_cast<std::uintptr_t>(a));
    else
        return std::forward<A>(a);
}
template <class Args, class... A, std::size_t... I> inline Args make_args(std::index_sequence<I...>, A &&...a)
{
    return Args(convert_arg<std::tuple_element_t<I, Args>>(std::forward<A>(a))...);
}
template <class K> inline const void *kernel_address(K k)
{
    if constexpr (std::is_pointer_v<K> && std::is_function_v<std::remove_pointer_t<K>>)
        return reinterpret_cast<const void *>(k);
    else
        return nullptr;
}
// The launch's arguments as every thread reads them: one base per argument, so that a thread's call reaches each
// one without a function call. std::apply over the std::tuple costs about ten calls per argument and thread in
// the -O0 builds (the sanitizer and coverage ones), each with its sanitizer checks and gcov counters: memfix
// verify on a matmul candidate with 8 random cases took 35 s under ASan with coverage through std::apply, 13.5 s
// through this.
template <std::size_t I, class T> struct arg_leaf {
    T value;
};
template <class Seq, class... T> struct arg_pack_impl;
template <std::size_t... I, class... T>
struct arg_pack_impl<std::index_sequence<I...>, T...> : arg_leaf<I, T>... {
    explicit arg_pack_impl(const T &...v) : arg_leaf<I, T>{ v }... {}
    // the kernel's by-value parameters copy the arguments for each thread
    template <class F> __attribute__((always_inline)) inline void call(F &f)
    {
        f(static_cast<arg_leaf<I, T> &>(*this).value...);
    }
};
template <class Args> struct arg_pack;
template <class... T> struct arg_pack<std::tuple<T...>> {
    using type = arg_pack_impl<std::index_sequence_for<T...>, T...>;
};
template <class F, class Pack> struct launch_ctx {
    F *fn;
    Pack *args;
};
template <class F, class Pack> void thread_body(void *p)
{
    auto *c = static_cast<launch_ctx<F, Pack> *>(p);
    c->args->call(*c->fn);
}
template <class E> inline bool check_arg(const launch_config &c, int pos, const E &e)
{
    if constexpr (std::is_pointer_v<E> && !std::is_function_v<std::remove_pointer_t<E>>)
        return check_pointer_arg_(c, pos, (const void *)e);
    else
        return true;
}
} // namespace detail

template <class K, class F> struct launcher_ {
    K kaddr;
    F fn;
    launch_config cfg;
    template <class... A> void operator()(A &&...a)
    {
        if (!launch_begin_(cfg)) return;
        using Args = typename detail::launch_args<K, A...>::type;
        // evaluated and converted once per launch, like a GPU's parameter buffer
        Args args = detail::make_args<Args>(std::index_sequence_for<A...>{}, std::forward<A>(a)...);
        bool ok = std::apply(
            [&](const auto &...e) {
                int pos = 0;
                bool all = true;
                ((all = detail::check_arg(cfg, ++pos, e) && all), ...);
                return all;
            },
            args);
        if (!ok) {
            launch_fail_(cfg, cudaErrorIllegalAddress);
            return;
        }
        using Pack = typename detail::arg_pack<Args>::type;
        Pack pack = std::apply([](const auto &...e) { return Pack(e...); }, args);
        detail::launch_ctx<F, Pack> ctx{ &fn, &pack };
        launch_run_(cfg, &detail::thread_body<F, Pack>, &ctx);
    }
};

template <class K, class F>
inline launcher_<K, F> launch_(K kaddr, F fn, const char *name, const char *file, int line, dim3 grid,
                               dim3 block, size_t smem = 0, cudaStream_t stream = 0)
{
    return launcher_<K, F>{
        kaddr, fn, launch_config{ detail::kernel_address(kaddr), name, file, line, grid, block, smem, stream }
    };
}

// Sized symbol copies (the templates below check offset + count against sizeof(symbol)).
cudaError_t memcpy_symbol_(void *symbol, size_t symsize, void *buf, size_t count, size_t offset,
                           cudaMemcpyKind kind, bool to_symbol, const char *api);
cudaError_t register_symbol_(const void *symbol, size_t size);

} // namespace cudahost

// ---- C++ convenience templates that NVIDIA's headers only declare for nvcc ---------------------------------------
template <class T>
static inline cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t count,
                                             size_t offset = 0, cudaMemcpyKind kind = cudaMemcpyHostToDevice)
{
    return cudahost::memcpy_symbol_((void *)&symbol, sizeof(T), const_cast<void *>(src), count, offset, kind,
                                    true, "cudaMemcpyToSymbol");
}
template <class T>
static inline cudaError_t
cudaMemcpyToSymbolAsync(const T &symbol, const void *src, size_t count, size_t offset = 0,
                        cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t = 0)
{
    return cudahost::memcpy_symbol_((void *)&symbol, sizeof(T), const_cast<void *>(src), count, offset, kind,
                                    true, "cudaMemcpyToSymbolAsync");
}
template <class T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t count, size_t offset = 0,
                                               cudaMemcpyKind kind = cudaMemcpyDeviceToHost)
{
    return cudahost::memcpy_symbol_((void *)&symbol, sizeof(T), dst, count, offset, kind, false,
                                    "cudaMemcpyFromSymbol");
}
template <class T>
static inline cudaError_t
cudaMemcpyFromSymbolAsync(void *dst, const T &symbol, size_t count, size_t offset = 0,
                          cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t = 0)
{
    return cudahost::memcpy_symbol_((void *)&symbol, sizeof(T), dst, count, offset, kind, false,
                                    "cudaMemcpyFromSymbolAsync");
}
template <class T> static inline cudaError_t cudaGetSymbolAddress(void **devPtr, const T &symbol)
{
    if (!devPtr) return cudaErrorInvalidValue;
    *devPtr = (void *)&symbol;
    return cudahost::register_symbol_((const void *)&symbol, sizeof(T));
}
template <class T> static inline cudaError_t cudaGetSymbolSize(size_t *size, const T &)
{
    if (!size) return cudaErrorInvalidValue;
    *size = sizeof(T);
    return cudaSuccess;
}
template <class T> static inline cudaError_t cudaFuncSetAttribute(T *entry, cudaFuncAttribute attr, int value)
{
    return ::cudaFuncSetAttribute(cudahost::detail::kernel_address(entry), attr, value);
}
template <class T> static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, T *entry)
{
    return ::cudaFuncGetAttributes(attr, cudahost::detail::kernel_address(entry));
}
template <class T> static inline cudaError_t cudaFuncSetCacheConfig(T *func, cudaFuncCache cacheConfig)
{
    return ::cudaFuncSetCacheConfig(cudahost::detail::kernel_address(func), cacheConfig);
}
// cudaLaunchKernel with a typed kernel (more specialized than the toolkit's `T*` template): the arguments are read
// from `args` with the kernel's parameter types and the launch goes through the same machinery as <<<...>>>.
// (The untyped C function, `cudaLaunchKernel(const void*, ...)`, cannot know the parameter types and fails with
// cudaErrorNotSupported.)
template <class... P>
static inline cudaError_t cudaLaunchKernel(void (*func)(P...), dim3 gridDim, dim3 blockDim, void **args,
                                           size_t sharedMem = 0, cudaStream_t stream = 0)
{
    if (!func) return cudaErrorInvalidDeviceFunction;
    if (sizeof...(P) > 0 && !args) return cudaErrorInvalidValue;
    auto fn = [func](auto &&...a) { func(a...); };
    auto l = cudahost::launch_(func, fn, "cudaLaunchKernel", __FILE__, __LINE__, gridDim, blockDim, sharedMem,
                               stream);
    [&]<std::size_t... I>(std::index_sequence<I...>) { l(*static_cast<std::remove_cv_t<P> *>(args[I])...); }
    (std::index_sequence_for<P...>{});
    return cudahost::last_launch_status_();
}
// cudaLaunchKernelEx (CUDA 12's typed launch with a cudaLaunchConfig_t). The configuration's grid, block, dynamic
// shared memory and stream are used; its attributes are checked and, where they mean nothing on a CPU, ignored
// (cudahost::launch_attrs_ok_ lists them; README.md, "Launch attributes"). More specialized than the toolkit's
// template, which would call the untyped cudaLaunchKernelExC.
namespace cudahost {
// Validates config->attrs: returns false (and records cudaErrorInvalidValue or cudaErrorNotSupported, with a message)
// for an attribute host mode cannot honour.
cudaError_t launch_attrs_check_(const cudaLaunchConfig_t *config, const char *file, int line);
template <class F, class... P, class... A>
inline cudaError_t launch_ex_(const cudaLaunchConfig_t *config, const void *kaddr, F fn, const char *file,
                              int line, A &&...a)
{
    if (!config) return cudaErrorInvalidValue;
    if (cudaError_t e = launch_attrs_check_(config, file, line)) return e;
    launcher_<const void *, F> l{ kaddr, fn,
                                  launch_config{ kaddr, "cudaLaunchKernelEx", file, line, config->gridDim,
                                                 config->blockDim, config->dynamicSmemBytes,
                                                 config->stream } };
    using Args = std::tuple<std::remove_cv_t<P>...>;
    Args args = detail::make_args<Args>(std::index_sequence_for<A...>{}, std::forward<A>(a)...);
    std::apply([&](auto &...e) { l(e...); }, args);
    return last_launch_status_();
}
} // namespace cudahost
template <class... P, class... A>
requires(sizeof...(P) == sizeof...(A)) static inline cudaError_t
    cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(P...), A &&...args)
{
    if (!kernel) return cudaErrorInvalidDeviceFunction;
    auto fn = [kernel](auto &&...a) { kernel(a...); };
    return cudahost::launch_ex_<decltype(fn), P...>(config, reinterpret_cast<const void *>(kernel), fn,
                                                    __builtin_FILE(), __builtin_LINE(),
                                                    std::forward<A>(args)...);
}

// ---- 5. device functions (atomics, math, fp16/bf16) --------------------------------------------------------------
#if __has_include("cudahost/device_functions.h")
#include "cudahost/device_functions.h"
#endif
#include "cudahost/cooperative_groups.h"
// inline PTX emulation (the targets of cudahost-rewrite's asm translation) and the __cvta_* conversions
#include "cudahost/ptx.h"

#endif // __cplusplus
#endif // CUDAHOST_CUDAHOST_H
