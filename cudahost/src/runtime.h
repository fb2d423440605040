// The cudahost runtime API's internals, shared by its files: the allocation table, the streams and events, the
// call counters and the checks of memory and copies (runtime.cpp), used by the memory (runtime_memory.cpp), stream
// and event (runtime_stream.cpp) and device (runtime_device.cpp) functions. Included by those files only.
#ifndef CUDAHOST_SRC_RUNTIME_H
#define CUDAHOST_SRC_RUNTIME_H

#include "internal.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

namespace cudahost {
namespace internal {
// The runtime's names, shared by its files only (brought into internal below, as an unnamed namespace's are).
namespace rt {

enum class Kind { Device, Managed, Pinned, Registered, Symbol };

struct Alloc {
    size_t size;
    Kind kind;
};

// The runtime's state (runtime.cpp says what each holds); g_mu guards the tables and the byte counts.
extern std::mutex &g_mu;
extern std::map<uintptr_t, Alloc> &g_allocs;
extern size_t g_device_bytes;
extern std::set<void *> &g_streams;
extern std::set<void *> &g_events;
extern std::unordered_map<const void *, int> &g_max_smem;
extern size_t g_pinned_bytes;
extern size_t g_device_peak, g_pinned_peak;

// Runtime call counters (cudahost/counters.h).
enum Counter {
    kMalloc,
    kFree,
    kMallocAsync,
    kFreeAsync,
    kMallocHost,
    kFreeHost,
    kDeviceSync,
    kStreamSync,
    kEventSync,
    kMemcpySync,
    kNumCounters
};
extern std::atomic<unsigned long long> g_counts[kNumCounters];
inline void count(Counter c) { g_counts[c].fetch_add(1, std::memory_order_relaxed); }
extern thread_local cudaError_t t_last;
extern thread_local int t_device;

struct Event {
    unsigned flags = 0;
    bool recorded = false;
    std::chrono::steady_clock::time_point t;
};
struct Stream {
    unsigned flags = 0;
    int priority = 0;
};

// The allocation containing p; with one_past_end, p == end counts too (a kernel argument may be an end pointer).
// Call with g_mu held.
const std::pair<const uintptr_t, Alloc> *find_alloc(const void *p, bool one_past_end = false);
void free_alloc(void *p, size_t size);
cudaError_t do_malloc(void **ptr, size_t size, Kind kind, const char *api);
cudaError_t do_free(void *p, bool host_api, const char *api);
cudaError_t check_copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind, const char *api);
cudaError_t copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind, const char *api);
Event *event_of(cudaEvent_t e);

} // namespace rt
using namespace rt;
} // namespace internal

namespace ci = internal;
} // namespace cudahost

#endif
