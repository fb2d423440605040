// The modelled device (CUDAHOST_DEVICE): the limits every launch is checked against, the static shared memory of
// each kernel as its blocks declare it, cudaGetDeviceProperties / cudaDeviceGetAttribute, which report them, and
// the tensor cores' arithmetic (CUDAHOST_MMA_ARITH).
#include "internal.h"

#include <cmath>
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
                                   .bus_width = 5120,
                                   .tc_block16 = 16,
                                   .tc_block_tf32 = 8 };
constexpr device_profile kA100 = { .key = "a100",
                                   .name =
                                       "cudahost (CUDA host execution mode on the CPU, A100 profile: sm_80)",
                                   .major = 8,
                                   .minor = 0,
                                   .smem_optin = 166912,  // 163 KiB
                                   .smem_per_sm = 167936, // 164 KiB
                                   .sms = 108,
                                   .l2_bytes = 40 << 20,
                                   .bus_width = 5120,
                                   .tc_block16 = 8,
                                   .tc_block_tf32 = 4 };

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

// ---- tensor-core arithmetic --------------------------------------------------------------------------------------
// The truncating model follows what public measurements of NVIDIA's tensor cores found (Fasi, Higham, Mikaitis and
// Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ CS 7:e330, 2021, on V100/T4/A100; Khattak and
// Mikaitis, "Accurate models of NVIDIA tensor cores", arXiv 2512.07004, on V100 to B200): products exact; the
// accumulator and a block of products aligned to the largest exponent among them, with the bits shifted out past
// the significand (and a few extra bits, by generation) dropped; an exact sum; the result normalized and truncated
// to fp32. Blocks of 8 products (4 for tf32) on the A100 profile and 16 (8) on the H100 profile. `extra` defaults
// to 0, the least precise member of that family: an error bound that holds for it holds for any number of extra
// bits, which is what a kernel's own bound must survive.
namespace {
tc_arith pick_arith()
{
    tc_arith a{ false, 0 };
    const char *s = std::getenv("CUDAHOST_MMA_ARITH");
    if (!s || !*s || !std::strcmp(s, "fp32")) return a;
    if (!std::strncmp(s, "truncate", 8) && (s[8] == 0 || s[8] == ':')) {
        a.truncate = true;
        if (s[8] == 0) return a;
        char *end = nullptr;
        const long e = std::strtol(s + 9, &end, 10);
        if (end != s + 9 && *end == 0 && e >= 0 && e <= 24) {
            a.extra = (int)e;
            return a;
        }
    }
    std::fprintf(
        stderr,
        "cudahost: CUDAHOST_MMA_ARITH=%s is not fp32, truncate or truncate:N (0 <= N <= 24); using fp32\n",
        s);
    return tc_arith{ false, 0 };
}

// one fused block: t[0] the accumulator, t[1..n-1] exact products (doubles hold them exactly: 16 and 22 significant
// bits for 16-bit and tf32 inputs)
float fused_block(const double *t, int n, int extra)
{
    bool nan = false, pinf = false, ninf = false;
    double big = 0.0, zeros = 0.0;
    for (int i = 0; i < n; i++) {
        if (std::isnan(t[i]))
            nan = true;
        else if (std::isinf(t[i]))
            (t[i] > 0 ? pinf : ninf) = true;
        else
            big = std::fmax(big, std::fabs(t[i]));
        zeros += t[i];
    }
    if (nan || (pinf && ninf)) return NAN;
    if (pinf || ninf) return pinf ? INFINITY : -INFINITY;
    if (big == 0.0) return (float)zeros; // the sign of a sum of zeros, as IEEE addition gives it
    int e;
    std::frexp(big, &e); // big in [2^(e-1), 2^e)
    // the aligned quantum: fp32's 24 bits (and `extra`) below the largest term's leading bit
    const double q = std::ldexp(1.0, e - 24 - extra);
    // Every aligned term is a multiple of q below 2^e; at most 17 of them sum to below 2^(e+5): at most 29 + 24
    // significant bits, so the double sum is exact.
    double s = 0.0;
    for (int i = 0; i < n; i++) s += std::trunc(t[i] / q) * q;
    float f = (float)s; // then toward zero: one step back where rounding to nearest went up in magnitude
    if (std::fabs((double)f) > std::fabs(s)) f = std::nextafter(f, 0.0f);
    return f;
}
} // namespace

const tc_arith &tensor_core_arith()
{
    static const tc_arith a = pick_arith();
    return a;
}

float tc_dot_truncate(const float *a, size_t as, const float *b, size_t bs, int k, float c, bool tf32)
{
    const int block = tf32 ? device().tc_block_tf32 : device().tc_block16;
    const int extra = tensor_core_arith().extra;
    float acc = c;
    for (int k0 = 0; k0 < k; k0 += block) {
        double t[33];
        const int n = k - k0 < block ? k - k0 : block;
        t[0] = acc;
        for (int i = 0; i < n; i++)
            t[1 + i] = (double)a[(size_t)(k0 + i) * as] * (double)b[(size_t)(k0 + i) * bs];
        acc = fused_block(t, n + 1, extra);
    }
    return acc;
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
