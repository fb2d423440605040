// Internal interface between the cudahost execution engine (engine*.cpp) and the runtime API (runtime*.cpp).
#ifndef CUDAHOST_SRC_INTERNAL_H
#define CUDAHOST_SRC_INTERNAL_H

#include "cudahost/cudahost.h"

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define CUDAHOST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDAHOST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CUDAHOST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CUDAHOST_TSAN 1
#endif
#endif

namespace cudahost::internal {

// errors: the per-host-thread last error and the process-wide sticky error (a failed launch, as after a GPU fault)
cudaError_t record(cudaError_t e); // records e (if not success) as the last error; returns e
void set_sticky(cudaError_t e);
cudaError_t sticky();
void clear_sticky();

// configuration (environment)
int workers();
size_t stack_size();
bool reverse_order();
// CUDAHOST_THREAD_ORDER=random:SEED: each block starts its threads in a seeded permutation (per block linear index)
bool random_order(unsigned long long *seed);
size_t device_memory();

// The modelled device (device.cpp): CUDAHOST_DEVICE=a100|h100 (h200: h100), h100 by default.
struct device_profile {
    const char *key;
    const char *name;
    int major, minor;
    size_t smem_optin;  // shared memory per block with the opt-in, static and dynamic together
    size_t smem_per_sm; // shared memory per SM
    int sms;
    int l2_bytes;
    int bus_width;
    // tensor cores (CUDAHOST_MMA_ARITH=truncate): products per fused block of an mma / wgmma, 16-bit and tf32 inputs
    int tc_block16, tc_block_tf32;
};
const device_profile &device();

// The tensor cores' arithmetic (device.cpp, cudahost/README.md "Tensor-core arithmetic"). fp32 (the default):
// products exact, summed in fp32 (round to nearest) in k order, then C added. truncate: the hardware's scheme, per
// block of the profile's size: C and the block's exact products aligned to the largest exponent, every bit below
// fp32's 24 (plus `extra`) dropped, summed exactly, the sum truncated (round toward zero) to fp32.
struct tc_arith {
    bool truncate;
    int extra; // alignment bits kept beyond fp32's 24
};
const tc_arith &tensor_core_arith();
// c + sum over i < k of a[i * as] b[i * bs] under the truncating model (tf32: the tf32 block size)
float tc_dot_truncate(const float *a, size_t as, const float *b, size_t bs, int k, float c, bool tf32);
// Static __shared__ bytes of a kernel, learned from the declarations its blocks reached (0 until a block of it ran,
// or for a null address); note_static_smem keeps the largest value seen.
size_t static_smem(const void *kaddr);
void note_static_smem(const void *kaddr, size_t bytes);

// allocations and symbols
bool device_accessible(
    const void *p); // inside a live device/managed/pinned allocation or a registered symbol
bool valid_stream(cudaStream_t s);
int max_dynamic_smem(
    const void *kaddr); // cudaFuncAttributeMaxDynamicSharedMemorySize opt-in (default 48 KiB)

// engine
bool in_kernel();
} // namespace cudahost::internal
namespace cudahost {
void set_launch_status_(cudaError_t e);
}
namespace cudahost::internal {
void synchronize(); // waits for nothing today (launches are synchronous), kept for streams/events

constexpr size_t kDefaultSmem = 48 * 1024; // dynamic shared memory per block without the opt-in
constexpr int kMaxThreadsPerBlock = 1024;

} // namespace cudahost::internal

#endif
