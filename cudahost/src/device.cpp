// The modelled device (CUDAHOST_DEVICE): the limits every launch is checked against, the static shared memory of
// each kernel as its blocks declare it, and cudaGetDeviceProperties / cudaDeviceGetAttribute, which report them.
#include "internal.h"

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <mutex>
#include <strings.h>
#include <unordered_map>

namespace cudahost::internal {
namespace {

// Figures from NVIDIA's CUDA C++ Programming Guide (technical specifications per compute capability) and the
// A100/H100 whitepapers. Per block, the opt-in maximum counts static and dynamic shared memory together.
// (l2_bytes, bus_width: the SXM parts.)
constexpr device_profile kH100 = { .key = "h100",
                                   .name =
                                       "cudahost (CUDA host execution mode on the CPU, H100 profile: sm_90)",
                                   .major = 9,
                                   .minor = 0,
                                   .smem_optin = 232448,  // 227 KiB
                                   .smem_per_sm = 233472, // 228 KiB
                                   .sms = 132,
                                   .l2_bytes = 50 << 20,
                                   .bus_width = 5120 };
constexpr device_profile kA100 = { .key = "a100",
                                   .name =
                                       "cudahost (CUDA host execution mode on the CPU, A100 profile: sm_80)",
                                   .major = 8,
                                   .minor = 0,
                                   .smem_optin = 166912,  // 163 KiB
                                   .smem_per_sm = 167936, // 164 KiB
                                   .sms = 108,
                                   .l2_bytes = 40 << 20,
                                   .bus_width = 5120 };

const device_profile &pick()
{
    const char *s = std::getenv("CUDAHOST_DEVICE");
    if (!s || !*s || !strcasecmp(s, "h100") || !strcasecmp(s, "h200")) return kH100;
    if (!strcasecmp(s, "a100")) return kA100;
    std::fprintf(stderr, "cudahost: CUDAHOST_DEVICE=%s is not one of a100, h100, h200; using h100\n", s);
    return kH100;
}

std::mutex g_static_mu;
// kernel address -> the largest static __shared__ footprint one of its blocks declared (never destroyed: kernels
// may launch from static destructors)
std::unordered_map<const void *, size_t> &g_static = *new std::unordered_map<const void *, size_t>;

} // namespace

const device_profile &device()
{
    static const device_profile &p = pick();
    return p;
}

size_t static_smem(const void *kaddr)
{
    if (!kaddr) return 0;
    std::lock_guard<std::mutex> lk(g_static_mu);
    auto it = g_static.find(kaddr);
    return it == g_static.end() ? 0 : it->second;
}

void note_static_smem(const void *kaddr, size_t bytes)
{
    if (!kaddr || !bytes) return;
    std::lock_guard<std::mutex> lk(g_static_mu);
    size_t &v = g_static[kaddr];
    if (bytes > v) v = bytes;
}

} // namespace cudahost::internal

namespace ci = cudahost::internal;
using cudahost::internal::record;

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (!prop) return record(cudaErrorInvalidValue);
    if (device != 0) return record(cudaErrorInvalidDevice);
    std::memset(prop, 0, sizeof *prop);
    const ci::device_profile &dev = ci::device();
    std::snprintf(prop->name, sizeof prop->name, "%s", dev.name);
    prop->totalGlobalMem = ci::device_memory();
    prop->sharedMemPerBlock = ci::kDefaultSmem;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->memPitch = (size_t)1 << 31;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 65536;
    prop->major = dev.major;
    prop->minor = dev.minor;
    prop->textureAlignment = 512;
    prop->texturePitchAlignment = 32;
    prop->multiProcessorCount = dev.sms;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->asyncEngineCount = 1;
    prop->unifiedAddressing = 1;
    prop->memoryBusWidth = dev.bus_width;
    prop->l2CacheSize = dev.l2_bytes;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->streamPrioritiesSupported = 1;
    prop->globalL1CacheSupported = 1;
    prop->localL1CacheSupported = 1;
    prop->sharedMemPerMultiprocessor = dev.smem_per_sm;
    prop->regsPerMultiprocessor = 65536;
    prop->managedMemory = 1;
    prop->concurrentManagedAccess = 1;
    prop->cooperativeLaunch = 0;
    prop->sharedMemPerBlockOptin = dev.smem_optin;
    prop->maxBlocksPerMultiProcessor = 32;
    prop->reservedSharedMemPerBlock = 1024;
    prop->hostRegisterSupported = 1;
    prop->memoryPoolsSupported = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
    if (!value) return record(cudaErrorInvalidValue);
    if (device != 0) return record(cudaErrorInvalidDevice);
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrTotalConstantMemory: *value = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrUnifiedAddressing: *value = 1; break;
    case cudaDevAttrManagedMemory: *value = 1; break;
    case cudaDevAttrConcurrentManagedAccess: *value = 1; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
    case cudaDevAttrCooperativeLaunch: *value = 0; break;
    case cudaDevAttrMemoryPoolsSupported: *value = 1; break;
    default: *value = 0; break;
    }
    return cudaSuccess;
}
