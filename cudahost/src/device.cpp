// The modelled device (CUDAHOST_DEVICE): the limits cudaGetDeviceProperties reports and every launch is checked
// against, and the static shared memory of each kernel as its blocks declare it.
#include "internal.h"

#include <cstdio>
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
