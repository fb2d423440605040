// cudahost runtime API: the CUDA runtime functions of host execution mode (renamed cudahost_<name>; the signatures
// are NVIDIA's, checked by including the toolkit's headers through cudahost.h).
#include "internal.h"

#include "cudahost/counters.h"

#include <cuda_profiler_api.h>

#include <pthread.h>
#include <unistd.h>

#include <new>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

namespace cudahost {
namespace internal {
namespace {

enum class Kind { Device, Managed, Pinned, Registered, Symbol };

const char *kind_name(Kind k)
{
    switch (k) {
    case Kind::Device: return "device memory (cudaMalloc)";
    case Kind::Managed: return "managed memory (cudaMallocManaged)";
    case Kind::Pinned: return "pinned host memory (cudaMallocHost/cudaHostAlloc)";
    case Kind::Registered: return "registered host memory (cudaHostRegister)";
    default: return "a device symbol";
    }
}

struct Alloc {
    size_t size;
    Kind kind;
};

// Never destroyed (pool threads and atexit handlers may still use them); reachable for leak checkers.
std::mutex &g_mu = *new std::mutex; // guards everything below
std::map<uintptr_t, Alloc> &g_allocs = *new std::map<uintptr_t, Alloc>;
size_t g_device_bytes = 0;
std::set<void *> &g_streams = *new std::set<void *>;
std::set<void *> &g_events = *new std::set<void *>;
std::unordered_map<const void *, int> &g_max_smem =
    *new std::unordered_map<const void *, int>; // kernel -> opt-in
std::atomic<int> g_sticky{ 0 };
size_t g_pinned_bytes = 0;                   // cudaMallocHost/cudaHostAlloc bytes live (under g_mu)
size_t g_device_peak = 0, g_pinned_peak = 0; // peaks since the last cudahostResetCallCounts (under g_mu)

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
std::atomic<unsigned long long> g_counts[kNumCounters];
inline void count(Counter c) { g_counts[c].fetch_add(1, std::memory_order_relaxed); }
thread_local cudaError_t t_last = cudaSuccess;
thread_local int t_device = 0;

// After fork() in a multi-threaded parent, g_mu may be held by a thread that does not exist in the child.
void atfork_child() { new (&g_mu) std::mutex; }
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, &atfork_child);

struct Event {
    unsigned flags = 0;
    bool recorded = false;
    std::chrono::steady_clock::time_point t;
};
struct Stream {
    unsigned flags = 0;
    int priority = 0;
};

size_t parse_size(const char *s, size_t dflt)
{
    if (!s || !*s) return dflt;
    char *end = nullptr;
    double v = std::strtod(s, &end);
    if (end == s || v < 0) return dflt;
    std::string suf(end);
    double mul = 1;
    if (!suf.empty()) {
        char c = (char)(suf[0] | 0x20);
        mul = c == 'k'   ? 1024.0
              : c == 'm' ? 1048576.0
              : c == 'g' ? 1073741824.0
              : c == 't' ? 1099511627776.0
                         : 1;
    }
    return (size_t)(v * mul);
}

// The allocation containing p; with one_past_end, p == end counts too (a kernel argument may be an end pointer).
// Call with g_mu held.
const std::pair<const uintptr_t, Alloc> *find_alloc(const void *p, bool one_past_end = false)
{
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = g_allocs.upper_bound(a);
    if (it == g_allocs.begin()) return nullptr;
    --it;
    if (a >= it->first &&
        (a < it->first + it->second.size || (one_past_end && a == it->first + it->second.size)))
        return &*it;
    return nullptr;
}

// Allocations get kTail bytes of padding, so that a one-past-the-end pointer (a legitimate kernel argument) can
// never be the start of an unrelated host allocation (allocators without redzones place blocks back to back). ASan's
// allocator has redzones (and reports heap-buffer-overflow right past the requested size): no padding there.
#if defined(CUDAHOST_ASAN)
constexpr size_t kTail = 0;
#else
constexpr size_t kTail = 64;
#endif

void *alloc_filled(size_t size)
{
    void *p = nullptr;
    if (size > SIZE_MAX - kTail || posix_memalign(&p, 256, size + kTail ? size + kTail : 1) != 0)
        return nullptr;
    // garbage: NaN for floats and doubles, -1 for integers (a GPU's fresh memory is not zero either);
    // CUDAHOST_MALLOC_FILL=zero zero-fills instead, to compare a run against it
    static const int fill = [] {
        const char *e = std::getenv("CUDAHOST_MALLOC_FILL");
        if (!e || !*e || !std::strcmp(e, "poison")) return 0xff;
        if (!std::strcmp(e, "zero")) return 0;
        std::fprintf(stderr, "cudahost: CUDAHOST_MALLOC_FILL=%s is not poison or zero; using poison\n", e);
        return 0xff;
    }();
    std::memset(p, fill, size);
    return p;
}

void free_alloc(void *p, size_t size)
{
    (void)size;
    std::free(p);
}

cudaError_t do_malloc(void **ptr, size_t size, Kind kind, const char *api)
{
    if (!ptr) return record(cudaErrorInvalidValue);
    *ptr = nullptr;
    if (cudaError_t s = sticky()) return record(s);
    bool counts = kind == Kind::Device || kind == Kind::Managed;
    if (size == 0) return cudaSuccess;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        if (counts && (size > device_memory() || g_device_bytes > device_memory() - size)) {
            std::fprintf(
                stderr,
                "cudahost: %s(%zu bytes) fails: %zu of %zu device bytes in use (CUDAHOST_DEVICE_MEMORY)\n",
                api, size, g_device_bytes, device_memory());
            return record(cudaErrorMemoryAllocation);
        }
    }
    void *p = alloc_filled(size);
    if (!p) return record(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> lk(g_mu);
    g_allocs[reinterpret_cast<uintptr_t>(p)] = Alloc{ size, kind };
    if (counts) g_device_bytes += size;
    if (kind == Kind::Pinned) g_pinned_bytes += size;
    g_device_peak = std::max(g_device_peak, g_device_bytes);
    g_pinned_peak = std::max(g_pinned_peak, g_pinned_bytes);
    *ptr = p;
    return cudaSuccess;
}

cudaError_t do_free(void *p, bool host_api, const char *api)
{
    if (!p) return cudaSuccess;
    std::unique_lock<std::mutex> lk(g_mu);
    auto it = g_allocs.find(reinterpret_cast<uintptr_t>(p));
    if (it == g_allocs.end() || it->second.kind == Kind::Symbol || it->second.kind == Kind::Registered) {
        lk.unlock();
        std::fprintf(
            stderr,
            "cudahost: %s(%p): not the start of a live allocation (double free, or a host pointer?)\n", api,
            p);
        return record(cudaErrorInvalidValue);
    }
    bool is_host = it->second.kind == Kind::Pinned;
    if (is_host != host_api) {
        Kind k = it->second.kind;
        lk.unlock();
        std::fprintf(stderr, "cudahost: %s(%p): the pointer is %s\n", api, p, kind_name(k));
        return record(cudaErrorInvalidValue);
    }
    if (it->second.kind == Kind::Device || it->second.kind == Kind::Managed)
        g_device_bytes -= it->second.size;
    if (it->second.kind == Kind::Pinned) g_pinned_bytes -= it->second.size;
    size_t size = it->second.size;
    g_allocs.erase(it);
    lk.unlock();
    free_alloc(p, size);
    return cudaSuccess;
}

enum class Side { Host, Device, Any };

// Checks that [p, p+n) is on the given side and inside its allocation when tracked.
bool check_range(const void *p, size_t n, Side side, const char *api, const char *what)
{
    std::lock_guard<std::mutex> lk(g_mu);
    auto a = find_alloc(p);
    bool dev = a && (a->second.kind == Kind::Device || a->second.kind == Kind::Managed ||
                     a->second.kind == Kind::Symbol);
    bool host_ok = !a || a->second.kind != Kind::Device;
    if (side == Side::Device && !dev) {
        std::fprintf(stderr, "cudahost: %s: %s pointer %p is not device memory (%s)\n", api, what, p,
                     a ? kind_name(a->second.kind)
                       : "not inside any live cudaMalloc/cudaMallocManaged allocation");
        return false;
    }
    if (side == Side::Host && !host_ok) {
        std::fprintf(stderr, "cudahost: %s: %s pointer %p is device memory, but the copy kind says host\n",
                     api, what, p);
        return false;
    }
    if (a && a->second.kind != Kind::Symbol) {
        uintptr_t off = reinterpret_cast<uintptr_t>(p) - a->first;
        if (n > a->second.size - off) {
            std::fprintf(stderr,
                         "cudahost: %s: %s range of %zu bytes at %p overruns its %zu-byte allocation at %p\n",
                         api, what, n, p, a->second.size, reinterpret_cast<void *>(a->first));
            return false;
        }
    }
    return true;
}

cudaError_t check_copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind, const char *api)
{
    if (n == 0) return cudaSuccess;
    if (!dst || !src) {
        std::fprintf(stderr, "cudahost: %s: null %s pointer\n", api, dst ? "source" : "destination");
        return cudaErrorInvalidValue;
    }
    Side ds, ss;
    switch (kind) {
    case cudaMemcpyHostToHost:
        ds = Side::Host;
        ss = Side::Host;
        break;
    case cudaMemcpyHostToDevice:
        ds = Side::Device;
        ss = Side::Host;
        break;
    case cudaMemcpyDeviceToHost:
        ds = Side::Host;
        ss = Side::Device;
        break;
    case cudaMemcpyDeviceToDevice:
        ds = Side::Device;
        ss = Side::Device;
        break;
    case cudaMemcpyDefault:
        ds = Side::Any;
        ss = Side::Any;
        break;
    default:
        std::fprintf(stderr, "cudahost: %s: invalid cudaMemcpyKind %d\n", api, (int)kind);
        return cudaErrorInvalidMemcpyDirection;
    }
    if (!check_range(dst, n, ds, api, "destination")) return cudaErrorInvalidValue;
    if (!check_range(src, n, ss, api, "source")) return cudaErrorInvalidValue;
    return cudaSuccess;
}

cudaError_t copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind, const char *api)
{
    if (cudaError_t s = sticky()) return record(s);
    cudaError_t e = check_copy(dst, src, n, kind, api);
    if (e) return record(e);
    if (n) std::memmove(dst, src, n);
    return cudaSuccess;
}

bool stream_ok(cudaStream_t s)
{
    if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return true;
    std::lock_guard<std::mutex> lk(g_mu);
    return g_streams.count(s) != 0;
}

Event *event_of(cudaEvent_t e)
{
    std::lock_guard<std::mutex> lk(g_mu);
    return g_events.count(e) ? reinterpret_cast<Event *>(e) : nullptr;
}

} // namespace

cudaError_t record(cudaError_t e)
{
    if (e != cudaSuccess) t_last = e;
    return e;
}
void set_sticky(cudaError_t e)
{
    int expected = 0;
    g_sticky.compare_exchange_strong(expected, (int)e);
}
cudaError_t sticky() { return (cudaError_t)g_sticky.load(std::memory_order_relaxed); }
void clear_sticky() { g_sticky.store(0); }

int workers()
{
    static const int n = [] {
        const char *s = std::getenv("CUDAHOST_WORKERS");
        long v = s ? std::strtol(s, nullptr, 10) : 0;
        if (v <= 0) v = (long)std::thread::hardware_concurrency();
        if (v <= 0) v = 1;
        return (int)std::min(v, 1024l);
    }();
    return n;
}

size_t stack_size()
{
#if defined(CUDAHOST_ASAN) || defined(CUDAHOST_TSAN)
    constexpr size_t dflt = 1024 * 1024;
#else
    constexpr size_t dflt = 256 * 1024;
#endif
    static const size_t n = [] {
        size_t v = parse_size(std::getenv("CUDAHOST_STACK_SIZE"), dflt);
        return v < 16384 ? (size_t)16384 : v;
    }();
    return n;
}

bool reverse_order()
{
    static const bool r = [] {
        const char *s = std::getenv("CUDAHOST_THREAD_ORDER");
        return s && std::strcmp(s, "reverse") == 0;
    }();
    return r;
}

bool random_order(unsigned long long *seed)
{
    static unsigned long long sd = 0;
    static const bool r = [] {
        const char *s = std::getenv("CUDAHOST_THREAD_ORDER");
        if (!s || std::strncmp(s, "random", 6) != 0 || (s[6] != '\0' && s[6] != ':')) return false;
        sd = s[6] == ':' ? std::strtoull(s + 7, nullptr, 0) : 0ull;
        return true;
    }();
    if (seed) *seed = sd;
    return r;
}

// The first number in the file at path; false when it is missing or holds no number (cgroup "max").
static bool read_number_file(const char *path, size_t *out)
{
    FILE *f = std::fopen(path, "r");
    if (!f) return false;
    unsigned long long v = 0;
    const bool ok = std::fscanf(f, "%llu", &v) == 1;
    std::fclose(f);
    if (ok) *out = (size_t)v;
    return ok;
}

// Bytes this machine can back right now: MemAvailable (/proc/meminfo; else the available pages), capped by what
// the memory cgroup (v2, else v1) still allows this process's group. SIZE_MAX when nothing can be read.
static size_t backable_memory()
{
    size_t avail = SIZE_MAX;
    if (FILE *f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        unsigned long long kb = 0;
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (size_t)kb * 1024;
                break;
            }
        std::fclose(f);
    }
    if (avail == SIZE_MAX) {
        const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) avail = (size_t)pages * (size_t)page;
    }
    size_t limit = 0, used = 0;
    if ((read_number_file("/sys/fs/cgroup/memory.max", &limit) &&
         read_number_file("/sys/fs/cgroup/memory.current", &used)) ||
        (read_number_file("/sys/fs/cgroup/memory/memory.limit_in_bytes", &limit) &&
         read_number_file("/sys/fs/cgroup/memory/memory.usage_in_bytes", &used)))
        avail = std::min(avail, limit > used ? limit - used : 0);
    return avail;
}

// The device size: CUDAHOST_DEVICE_MEMORY when set; else what the machine can back (3/4 of backable_memory() at
// the first query, leaving room for the host side), at most 80 GiB (an H100), at least 64 MiB. Every allocation is
// real host memory filled with garbage, so an 80 GiB default on a smaller machine let allocations that each fit
// but together exceed RAM get the process killed instead of failing with cudaErrorMemoryAllocation.
size_t device_memory()
{
    static const size_t n = [] {
        const size_t cap = (size_t)80 << 30, floor = (size_t)64 << 20;
        const size_t backable = backable_memory();
        const size_t dflt = backable == SIZE_MAX ? cap : std::max(floor, std::min(cap, backable / 4 * 3));
        return parse_size(std::getenv("CUDAHOST_DEVICE_MEMORY"), dflt);
    }();
    return n;
}

bool device_accessible(const void *p)
{
    std::lock_guard<std::mutex> lk(g_mu);
    return find_alloc(p, true) != nullptr;
}

bool valid_stream(cudaStream_t s) { return stream_ok(s); }

int max_dynamic_smem(const void *kaddr)
{
    if (!kaddr)
        // address unknown (deduced template arguments): the opt-in cannot be matched, the device's maximum applies
        return (int)(device().smem_optin - static_smem(kaddr));
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_max_smem.find(kaddr);
    return it == g_max_smem.end() ? (int)kDefaultSmem : std::max(it->second, (int)kDefaultSmem);
}

void synchronize() {}

} // namespace internal

namespace ci = internal;

// ---- launch checks (called by the code the rewriter generates) ---------------------------------------------------
namespace {
thread_local cudaError_t t_launch_status = cudaSuccess;
bool launch_error(cudaError_t e)
{
    t_launch_status = e;
    ci::record(e);
    return false;
}
} // namespace

cudaError_t last_launch_status_() { return t_launch_status; }
void set_launch_status_(cudaError_t e) { t_launch_status = e; }

bool launch_begin_(const launch_config &c)
{
    t_launch_status = cudaSuccess;
    if (ci::in_kernel()) {
        std::fprintf(stderr,
                     "cudahost: kernel '%s' launched from device code (%s:%d): dynamic parallelism is not "
                     "supported in host execution mode\n",
                     c.name, c.file, c.line);
        return launch_error(cudaErrorNotSupported);
    }
    if (cudaError_t s = ci::sticky()) return launch_error(s);
    const dim3 &g = c.grid, &b = c.block;
    if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0 || b.x > 1024 || b.y > 1024 ||
        b.z > 64 || (unsigned long long)b.x * b.y * b.z > (unsigned long long)ci::kMaxThreadsPerBlock ||
        g.x > 2147483647u || g.y > 65535 || g.z > 65535) {
        return launch_error(cudaErrorInvalidConfiguration);
    }
    // Too much shared memory: cudaErrorInvalidValue, as cudaLaunchKernel reports it on a GPU. The dynamic size
    // against the kernel's cudaFuncAttributeMaxDynamicSharedMemorySize (48 KiB without it), static + dynamic
    // against the device's per-block maximum (the static size once a block of the kernel has run).
    const size_t dyn_max = (size_t)ci::max_dynamic_smem(c.kaddr), st = ci::static_smem(c.kaddr);
    const ci::device_profile &dev = ci::device();
    if (c.smem > dyn_max || st + c.smem > dev.smem_optin) {
        std::fprintf(
            stderr,
            "cudahost: kernel '%s' (launched at %s:%d): %zu B of dynamic shared memory + %zu B static is "
            "more than this kernel may use (dynamic: at most %zu B%s; static + dynamic: at most %zu B on "
            "the %s profile); the launch fails with cudaErrorInvalidValue\n",
            c.name, c.file, c.line, c.smem, st, dyn_max,
            dyn_max == ci::kDefaultSmem ? " without cudaFuncAttributeMaxDynamicSharedMemorySize" : "",
            dev.smem_optin, dev.key);
        return launch_error(cudaErrorInvalidValue);
    }
    if (!ci::valid_stream(c.stream)) {
        return launch_error(cudaErrorInvalidResourceHandle);
    }
    return true;
}

bool check_pointer_arg_(const launch_config &c, int position, const void *p)
{
    if (!p || ci::device_accessible(p)) return true;
    std::fprintf(
        stderr,
        "cudahost: kernel '%s' (launched at %s:%d): argument %d is %p, which is not device memory "
        "(not inside any live cudaMalloc, cudaMallocManaged or cudaMallocHost allocation): a host pointer "
        "passed to a kernel? The launch fails with cudaErrorIllegalAddress.\n",
        c.name, c.file, c.line, position, p);
    return false;
}

void launch_fail_(const launch_config &, cudaError_t e)
{
    ci::set_sticky(e);
    launch_error(e);
}

cudaError_t memcpy_symbol_(void *symbol, size_t symsize, void *buf, size_t count, size_t offset,
                           cudaMemcpyKind kind, bool to_symbol, const char *api)
{
    if (cudaError_t s = ci::sticky()) return ci::record(s);
    if (offset > symsize || count > symsize - offset) {
        std::fprintf(stderr, "cudahost: %s: %zu bytes at offset %zu exceed the %zu-byte symbol\n", api, count,
                     offset, symsize);
        return ci::record(cudaErrorInvalidValue);
    }
    char *s = static_cast<char *>(symbol) + offset;
    cudaMemcpyKind k = kind;
    // the symbol side is device memory: check the other side with the kind's direction
    if (to_symbol) {
        if (k != cudaMemcpyHostToDevice && k != cudaMemcpyDeviceToDevice && k != cudaMemcpyDefault)
            return ci::record(cudaErrorInvalidMemcpyDirection);
        if (count && !buf) return ci::record(cudaErrorInvalidValue);
        if (count) std::memmove(s, buf, count);
    } else {
        if (k != cudaMemcpyDeviceToHost && k != cudaMemcpyDeviceToDevice && k != cudaMemcpyDefault)
            return ci::record(cudaErrorInvalidMemcpyDirection);
        if (count && !buf) return ci::record(cudaErrorInvalidValue);
        if (count) std::memmove(buf, s, count);
    }
    return cudaSuccess;
}

cudaError_t register_symbol_(const void *symbol, size_t size)
{
    std::lock_guard<std::mutex> lk(ci::g_mu);
    uintptr_t a = reinterpret_cast<uintptr_t>(symbol);
    if (!ci::g_allocs.count(a)) ci::g_allocs[a] = ci::Alloc{ size, ci::Kind::Symbol };
    return cudaSuccess;
}

} // namespace cudahost

using namespace cudahost;
using cudahost::internal::record;

// ---- memory ------------------------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    ci::count(ci::kMalloc);
    return ci::do_malloc(devPtr, size, ci::Kind::Device, "cudaMalloc");
}
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int)
{
    ci::count(ci::kMalloc);
    return ci::do_malloc(devPtr, size, ci::Kind::Managed, "cudaMallocManaged");
}
cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    ci::count(ci::kMallocHost);
    return ci::do_malloc(ptr, size, ci::Kind::Pinned, "cudaMallocHost");
}
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int)
{
    ci::count(ci::kMallocHost);
    return ci::do_malloc(pHost, size, ci::Kind::Pinned, "cudaHostAlloc");
}
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    if (!pitch) return record(cudaErrorInvalidValue);
    *pitch = (width + 511) / 512 * 512;
    ci::count(ci::kMalloc);
    return ci::do_malloc(devPtr, *pitch * height, ci::Kind::Device, "cudaMallocPitch");
}
cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    ci::count(ci::kMallocAsync);
    if (!ci::valid_stream(hStream)) return record(cudaErrorInvalidResourceHandle);
    return ci::do_malloc(devPtr, size, ci::Kind::Device, "cudaMallocAsync");
}
cudaError_t cudaFree(void *devPtr)
{
    ci::count(ci::kFree);
    return ci::do_free(devPtr, false, "cudaFree");
}
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    ci::count(ci::kFreeAsync);
    if (!ci::valid_stream(hStream)) return record(cudaErrorInvalidResourceHandle);
    return ci::do_free(devPtr, false, "cudaFreeAsync");
}
cudaError_t cudaFreeHost(void *ptr)
{
    ci::count(ci::kFreeHost);
    return ci::do_free(ptr, true, "cudaFreeHost");
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int)
{
    if (!ptr || !size) return record(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lk(ci::g_mu);
    uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
    if (ci::g_allocs.count(a)) return record(cudaErrorHostMemoryAlreadyRegistered);
    ci::g_allocs[a] = ci::Alloc{ size, ci::Kind::Registered };
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void *ptr)
{
    std::lock_guard<std::mutex> lk(ci::g_mu);
    auto it = ci::g_allocs.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == ci::g_allocs.end() || it->second.kind != ci::Kind::Registered)
        return record(cudaErrorHostMemoryNotRegistered);
    ci::g_allocs.erase(it);
    return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int)
{
    if (!pDevice || !pHost) return record(cudaErrorInvalidValue);
    *pDevice = pHost;
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind)
{
    ci::count(ci::kMemcpySync);
    return ci::copy(dst, src, count, kind, "cudaMemcpy");
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    return ci::copy(dst, src, count, kind, "cudaMemcpyAsync");
}

static cudaError_t memcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                            size_t height, cudaMemcpyKind kind, const char *api)
{
    if (cudaError_t s = ci::sticky()) return record(s);
    if (width > dpitch || width > spitch) return record(cudaErrorInvalidPitchValue);
    if (!width || !height) return cudaSuccess;
    size_t dext = dpitch * (height - 1) + width, sext = spitch * (height - 1) + width;
    // check both extents with the direction of the copy
    if (cudaError_t e = ci::check_copy(dst, dst, dext,
                                       kind == cudaMemcpyHostToDevice   ? cudaMemcpyDeviceToDevice
                                       : kind == cudaMemcpyDeviceToHost ? cudaMemcpyHostToHost
                                                                        : kind,
                                       api))
        return record(e);
    if (cudaError_t e = ci::check_copy(const_cast<void *>(src), src, sext,
                                       kind == cudaMemcpyHostToDevice   ? cudaMemcpyHostToHost
                                       : kind == cudaMemcpyDeviceToHost ? cudaMemcpyDeviceToDevice
                                                                        : kind,
                                       api))
        return record(e);
    for (size_t r = 0; r < height; r++)
        std::memmove(static_cast<char *>(dst) + r * dpitch, static_cast<const char *>(src) + r * spitch,
                     width);
    return cudaSuccess;
}
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, cudaMemcpyKind kind)
{
    ci::count(ci::kMemcpySync);
    return memcpy2d(dst, dpitch, src, spitch, width, height, kind, "cudaMemcpy2D");
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, cudaMemcpyKind kind, cudaStream_t stream)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    return memcpy2d(dst, dpitch, src, spitch, width, height, kind, "cudaMemcpy2DAsync");
}

static cudaError_t memset_impl(void *p, int value, size_t count, const char *api)
{
    if (cudaError_t s = ci::sticky()) return record(s);
    if (!count) return cudaSuccess;
    if (!p) return record(cudaErrorInvalidValue);
    {
        std::lock_guard<std::mutex> lk(ci::g_mu);
        auto a = ci::find_alloc(p);
        if (!a) {
            std::fprintf(stderr, "cudahost: %s: %p is not inside any live device allocation\n", api, p);
            return record(cudaErrorInvalidValue);
        }
        if (a->second.kind != ci::Kind::Symbol &&
            count > a->second.size - (reinterpret_cast<uintptr_t>(p) - a->first)) {
            std::fprintf(stderr, "cudahost: %s: %zu bytes at %p overrun the %zu-byte allocation at %p\n", api,
                         count, p, a->second.size, reinterpret_cast<void *>(a->first));
            return record(cudaErrorInvalidValue);
        }
    }
    std::memset(p, value, count);
    return cudaSuccess;
}
cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    ci::count(ci::kMemcpySync);
    return memset_impl(devPtr, value, count, "cudaMemset");
}
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    return memset_impl(devPtr, value, count, "cudaMemsetAsync");
}
cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    ci::count(ci::kMemcpySync);
    if (width > pitch) return record(cudaErrorInvalidPitchValue);
    for (size_t r = 0; r < height; r++)
        if (cudaError_t e =
                memset_impl(static_cast<char *>(devPtr) + r * pitch, value, width, "cudaMemset2D"))
            return e;
    return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               cudaMemcpyKind kind)
{
    ci::count(ci::kMemcpySync);
    if (!symbol) return record(cudaErrorInvalidSymbol);
    return cudahost::memcpy_symbol_(const_cast<void *>(symbol), offset + count, const_cast<void *>(src),
                                    count, offset, kind, true, "cudaMemcpyToSymbol");
}
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                 cudaMemcpyKind kind)
{
    ci::count(ci::kMemcpySync);
    if (!symbol) return record(cudaErrorInvalidSymbol);
    return cudahost::memcpy_symbol_(const_cast<void *>(symbol), offset + count, dst, count, offset, kind,
                                    false, "cudaMemcpyFromSymbol");
}
cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}
cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                      cudaMemcpyKind kind, cudaStream_t stream)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}
cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    if (!devPtr || !symbol) return record(cudaErrorInvalidSymbol);
    *devPtr = const_cast<void *>(symbol);
    return cudahost::register_symbol_(symbol, 1);
}
cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    if (!size || !symbol) return record(cudaErrorInvalidSymbol);
    std::lock_guard<std::mutex> lk(ci::g_mu);
    auto it = ci::g_allocs.find(reinterpret_cast<uintptr_t>(symbol));
    if (it == ci::g_allocs.end()) return record(cudaErrorInvalidSymbol);
    *size = it->second.size;
    return cudaSuccess;
}

cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, cudaMemLocation, unsigned int,
                                 cudaStream_t stream)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    if (count && !devPtr) return record(cudaErrorInvalidValue);
    return cudaSuccess; // one memory: nothing to move
}
cudaError_t cudaMemAdvise(const void *devPtr, size_t count, cudaMemoryAdvise, cudaMemLocation)
{
    if (count && !devPtr) return record(cudaErrorInvalidValue);
    return cudaSuccess;
}
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    if (dstDevice != 0 || srcDevice != 0) return record(cudaErrorInvalidDevice);
    ci::count(ci::kMemcpySync);
    return ci::copy(dst, src, count, cudaMemcpyDeviceToDevice, "cudaMemcpyPeer");
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    std::lock_guard<std::mutex> lk(ci::g_mu);
    size_t t = ci::device_memory();
    if (total) *total = t;
    if (free) *free = t - std::min(t, ci::g_device_bytes);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes, const void *ptr)
{
    if (!attributes) return record(cudaErrorInvalidValue);
    std::memset(attributes, 0, sizeof *attributes);
    std::lock_guard<std::mutex> lk(ci::g_mu);
    auto a = ci::find_alloc(ptr);
    attributes->device = 0;
    if (!a) {
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->device = -2;
        return cudaSuccess;
    }
    switch (a->second.kind) {
    case ci::Kind::Device:
    case ci::Kind::Symbol: attributes->type = cudaMemoryTypeDevice; break;
    case ci::Kind::Managed: attributes->type = cudaMemoryTypeManaged; break;
    default: attributes->type = cudaMemoryTypeHost; break;
    }
    attributes->devicePointer = const_cast<void *>(ptr);
    attributes->hostPointer = attributes->type == cudaMemoryTypeDevice ? nullptr : const_cast<void *>(ptr);
    return cudaSuccess;
}

// cudahost extension (the runtime API has no equivalent; the driver's is cuMemGetAddressRange): the live allocation
// (cudaMalloc, cudaMallocManaged, cudaMallocHost, a __device__ symbol) that contains ptr, as its start and size.
// cudaErrorInvalidValue when ptr is inside none (freed, or host memory); not recorded as the last error. memfix
// checks a kernel argument's extent with it before launching (src/backend/backend.cu).
extern "C" cudaError_t cudahostGetAllocationRange(const void *ptr, void **base, size_t *size)
{
    std::lock_guard<std::mutex> lk(ci::g_mu);
    auto a = ci::find_alloc(ptr);
    if (!a) return cudaErrorInvalidValue;
    if (base) *base = reinterpret_cast<void *>(a->first);
    if (size) *size = a->second.size;
    return cudaSuccess;
}

// ---- streams and events (execution is synchronous) ---------------------------------------------------------------
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    if (!pStream) return record(cudaErrorInvalidValue);
    auto *s = new ci::Stream{ flags, priority };
    std::lock_guard<std::mutex> lk(ci::g_mu);
    ci::g_streams.insert(s);
    *pStream = reinterpret_cast<cudaStream_t>(s);
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *pStream) { return cudaStreamCreateWithPriority(pStream, 0, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return cudaStreamCreateWithPriority(pStream, flags, 0);
}
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    std::lock_guard<std::mutex> lk(ci::g_mu);
    if (!ci::g_streams.erase(stream)) return record(cudaErrorInvalidResourceHandle);
    delete reinterpret_cast<ci::Stream *>(stream);
    return cudaSuccess;
}
static cudaError_t stream_query(cudaStream_t stream)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t s = ci::sticky()) return record(s);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    ci::count(ci::kStreamSync);
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t s = ci::sticky()) return record(s);
    return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t stream) { return stream_query(stream); }
// cuBLAS/cuBLASLt of host mode drain the stream before computing on the host: a stream synchronization that a
// real cuBLAS does not do, so it is not counted (cudahost/counters.h).
extern "C" cudaError_t cudahost_stream_drain_(cudaStream_t stream) { return stream_query(stream); }
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int)
{
    if (!ci::valid_stream(stream) || !ci::event_of(event)) return record(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    if (!fn) return record(cudaErrorInvalidValue);
    fn(userData);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (!event) return record(cudaErrorInvalidValue);
    auto *e = new ci::Event;
    e->flags = flags;
    std::lock_guard<std::mutex> lk(ci::g_mu);
    ci::g_events.insert(e);
    *event = reinterpret_cast<cudaEvent_t>(e);
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, 0); }
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    std::lock_guard<std::mutex> lk(ci::g_mu);
    if (!ci::g_events.erase(event)) return record(cudaErrorInvalidResourceHandle);
    delete reinterpret_cast<ci::Event *>(event);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    ci::Event *e = ci::event_of(event);
    if (!e || !ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    e->t = std::chrono::steady_clock::now();
    e->recorded = true;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    ci::count(ci::kEventSync);
    if (!ci::event_of(event)) return record(cudaErrorInvalidResourceHandle);
    if (cudaError_t s = ci::sticky()) return record(s);
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event)
{
    if (!ci::event_of(event)) return record(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms) return record(cudaErrorInvalidValue);
    ci::Event *a = ci::event_of(start);
    ci::Event *b = ci::event_of(end);
    if (!a || !b || (a->flags & cudaEventDisableTiming) || (b->flags & cudaEventDisableTiming))
        return record(cudaErrorInvalidResourceHandle);
    if (!a->recorded || !b->recorded) return record(cudaErrorInvalidResourceHandle);
    *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
    return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    if (!flags) return record(cudaErrorInvalidValue);
    if (!ci::valid_stream(hStream)) return record(cudaErrorInvalidResourceHandle);
    *flags = (hStream && hStream != cudaStreamLegacy && hStream != cudaStreamPerThread)
                 ? reinterpret_cast<ci::Stream *>(hStream)->flags
                 : 0u;
    return cudaSuccess;
}
cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    if (!priority) return record(cudaErrorInvalidValue);
    if (!ci::valid_stream(hStream)) return record(cudaErrorInvalidResourceHandle);
    *priority = (hStream && hStream != cudaStreamLegacy && hStream != cudaStreamPerThread)
                    ? reinterpret_cast<ci::Stream *>(hStream)->priority
                    : 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (leastPriority) *leastPriority = 0;
    if (greatestPriority) *greatestPriority = -5;
    return cudaSuccess;
}
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                  unsigned int)
{
    if (!ci::valid_stream(stream)) return record(cudaErrorInvalidResourceHandle);
    if (!callback) return record(cudaErrorInvalidValue);
    callback(stream, ci::sticky(), userData);
    return cudaSuccess;
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int)
{
    return cudaEventRecord(event, stream);
}

// ---- errors ------------------------------------------------------------------------------------------------------
cudaError_t cudaGetLastError()
{
    if (cudaError_t s = ci::sticky()) return s;
    cudaError_t e = ci::t_last;
    ci::t_last = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError()
{
    if (cudaError_t s = ci::sticky()) return s;
    return ci::t_last;
}

#define CUDAHOST_ERRORS(X)                                                                                   \
    X(cudaSuccess, "no error")                                                                               \
    X(cudaErrorInvalidValue, "invalid argument")                                                             \
    X(cudaErrorMemoryAllocation, "out of memory")                                                            \
    X(cudaErrorInitializationError, "initialization error")                                                  \
    X(cudaErrorCudartUnloading, "driver shutting down")                                                      \
    X(cudaErrorInvalidConfiguration, "invalid configuration argument")                                       \
    X(cudaErrorInvalidPitchValue, "invalid pitch argument")                                                  \
    X(cudaErrorInvalidSymbol, "invalid device symbol")                                                       \
    X(cudaErrorInvalidHostPointer, "invalid host pointer")                                                   \
    X(cudaErrorInvalidDevicePointer, "invalid device pointer")                                               \
    X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                                  \
    X(cudaErrorMissingConfiguration, "__global__ function call is not configured")                           \
    X(cudaErrorInvalidDeviceFunction, "invalid device function")                                             \
    X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                               \
    X(cudaErrorInvalidDevice, "invalid device ordinal")                                                      \
    X(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version")           \
    X(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device")           \
    X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                             \
    X(cudaErrorSymbolNotFound, "named symbol not found")                                                     \
    X(cudaErrorNotReady, "device not ready")                                                                 \
    X(cudaErrorIllegalAddress, "an illegal memory access was encountered")                                   \
    X(cudaErrorLaunchOutOfResources, "too many resources requested for launch")                              \
    X(cudaErrorLaunchTimeout, "the launch timed out and was terminated")                                     \
    X(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped")   \
    X(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region")         \
    X(cudaErrorAssert, "device-side assert triggered")                                                       \
    X(cudaErrorIllegalInstruction, "an illegal instruction was encountered")                                 \
    X(cudaErrorMisalignedAddress, "misaligned address")                                                      \
    X(cudaErrorLaunchFailure, "unspecified launch failure")                                                  \
    X(cudaErrorCooperativeLaunchTooLarge, "too many blocks in cooperative launch")                           \
    X(cudaErrorNotPermitted, "operation not permitted")                                                      \
    X(cudaErrorNotSupported, "operation not supported")                                                      \
    X(cudaErrorUnknown, "unknown error")

const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
#define CUDAHOST_NAME_CASE(e, s)                                                                             \
    case e: return #e;
        CUDAHOST_ERRORS(CUDAHOST_NAME_CASE)
#undef CUDAHOST_NAME_CASE
    default: return "cudaErrorUnknown";
    }
}
const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
#define CUDAHOST_STRING_CASE(e, s)                                                                           \
    case e: return s;
        CUDAHOST_ERRORS(CUDAHOST_STRING_CASE)
#undef CUDAHOST_STRING_CASE
    default: return "unrecognized error code";
    }
}

// ---- device ------------------------------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count) return record(cudaErrorInvalidValue);
    *count = 1;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *device)
{
    if (!device) return record(cudaErrorInvalidValue);
    *device = ci::t_device;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device)
{
    if (device != 0) return record(cudaErrorInvalidDevice);
    ci::t_device = device;
    return cudaSuccess;
}
cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }
cudaError_t cudaChooseDevice(int *device, const cudaDeviceProp *)
{
    if (!device) return record(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    if (!pciBusId || len <= 0) return record(cudaErrorInvalidValue);
    if (device != 0) return record(cudaErrorInvalidDevice);
    std::snprintf(pciBusId, (size_t)len, "0000:00:00.0");
    return cudaSuccess;
}
cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (!flags) return record(cudaErrorInvalidValue);
    *flags = cudaDeviceScheduleAuto;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v) return record(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v) return record(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize()
{
    ci::count(ci::kDeviceSync);
    if (cudaError_t s = ci::sticky()) return record(s);
    return cudaSuccess;
}

cudaError_t cudaDeviceReset()
{
    std::lock_guard<std::mutex> lk(ci::g_mu);
    for (auto it = ci::g_allocs.begin(); it != ci::g_allocs.end();) {
        ci::Kind k = it->second.kind;
        if (k == ci::Kind::Device || k == ci::Kind::Managed || k == ci::Kind::Pinned) {
            ci::free_alloc(reinterpret_cast<void *>(it->first), it->second.size);
            it = ci::g_allocs.erase(it);
        } else {
            ++it;
        }
    }
    ci::g_device_bytes = 0;
    ci::g_pinned_bytes = 0;
    ci::g_max_smem.clear();
    for (void *e : ci::g_events) delete static_cast<ci::Event *>(e);
    ci::g_events.clear();
    for (void *st : ci::g_streams) delete static_cast<ci::Stream *>(st);
    ci::g_streams.clear();
    ci::clear_sticky();
    ci::t_last = cudaSuccess;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetLimit(size_t *pValue, cudaLimit limit)
{
    if (!pValue) return record(cudaErrorInvalidValue);
    switch (limit) {
    case cudaLimitStackSize: *pValue = ci::stack_size(); break;
    case cudaLimitPrintfFifoSize: *pValue = 1 << 20; break;
    case cudaLimitMallocHeapSize: *pValue = 8 << 20; break;
    default: *pValue = 0; break;
    }
    return cudaSuccess;
}
cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return cudaSuccess; }
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }

// ---- functions ---------------------------------------------------------------------------------------------------
cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value)
{
    if (!func) return record(cudaErrorInvalidDeviceFunction);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        // At most the device's per-block maximum less the kernel's static shared memory (known once a block of it
        // has run), as on a GPU.
        const ci::device_profile &dev = ci::device();
        const size_t st = ci::static_smem(func);
        if (value < 0 || (size_t)value + st > dev.smem_optin) {
            std::fprintf(
                stderr,
                "cudahost: cudaFuncSetAttribute(MaxDynamicSharedMemorySize, %d): more than the %zu B of "
                "shared memory per block of the %s profile less the kernel's %zu B of static shared "
                "memory (cudaErrorInvalidValue)\n",
                value, dev.smem_optin, dev.key, st);
            return record(cudaErrorInvalidValue);
        }
        std::lock_guard<std::mutex> lk(ci::g_mu);
        ci::g_max_smem[func] = value;
        return cudaSuccess;
    }
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) {
        if (value < -1 || value > 100) return record(cudaErrorInvalidValue);
        return cudaSuccess;
    }
    return cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, const void *func)
{
    if (!attr) return record(cudaErrorInvalidValue);
    if (!func) return record(cudaErrorInvalidDeviceFunction);
    std::memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = 1024;
    attr->numRegs = 32;
    attr->ptxVersion = 10 * ci::device().major + ci::device().minor;
    attr->binaryVersion = attr->ptxVersion;
    attr->sharedSizeBytes = ci::static_smem(func);
    std::lock_guard<std::mutex> lk(ci::g_mu);
    auto it = ci::g_max_smem.find(func);
    attr->maxDynamicSharedSizeBytes = it == ci::g_max_smem.end() ? (int)ci::kDefaultSmem : it->second;
    return cudaSuccess;
}
cudaError_t cudaFuncSetCacheConfig(const void *func, cudaFuncCache)
{
    if (!func) return record(cudaErrorInvalidDeviceFunction);
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                          size_t dynamicSMemSize)
{
    if (!numBlocks || blockSize <= 0) return record(cudaErrorInvalidValue);
    if (!func) return record(cudaErrorInvalidDeviceFunction);
    if (blockSize > ci::kMaxThreadsPerBlock) {
        *numBlocks = 0;
        return cudaSuccess;
    }
    int n = std::min(32, 2048 / blockSize);
    const size_t st = ci::static_smem(func);
    if (dynamicSMemSize + st > ci::device().smem_optin)
        n = 0;
    else if (dynamicSMemSize + st)
        n = std::min<int>(n, (int)(ci::device().smem_per_sm / (dynamicSMemSize + st + 1024)));
    *numBlocks = n;
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
                                                                   int blockSize, size_t dynamicSMemSize,
                                                                   unsigned int)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize);
}
cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, const void *func,
                                                      int numBlocks, int blockSize)
{
    if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0) return record(cudaErrorInvalidValue);
    if (!func) return record(cudaErrorInvalidDeviceFunction);
    size_t per = ci::device().smem_per_sm / (size_t)numBlocks, st = ci::static_smem(func) + 1024;
    per = per > st ? per - st : 0;
    *dynamicSmemSize = std::min<size_t>(per, (size_t)ci::max_dynamic_smem(func));
    return cudaSuccess;
}
cudaError_t cudaLaunchKernel(const void *func, dim3, dim3, void **, size_t, cudaStream_t)
{
    std::fprintf(stderr,
                 "cudahost: cudaLaunchKernel(%p, ...) is not supported in host execution mode: launch with "
                 "kernel<<<grid, block, smem, stream>>>(args)\n",
                 func);
    return record(cudaErrorNotSupported);
}

// ---- cudaLaunchKernelEx: the attributes of a cudaLaunchConfig_t ---------------------------------------------------
namespace cudahost {
cudaError_t launch_attrs_check_(const cudaLaunchConfig_t *config, const char *file, int line)
{
    if (config->numAttrs > 0 && !config->attrs) {
        std::fprintf(stderr, "cudahost: cudaLaunchKernelEx at %s:%d: numAttrs is %u but attrs is NULL\n",
                     file, line, config->numAttrs);
        return internal::record(cudaErrorInvalidValue);
    }
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const cudaLaunchAttribute &a = config->attrs[i];
        switch (a.id) {
        // Hints and orderings that mean nothing when blocks run on CPU threads and launches are synchronous:
        case cudaLaunchAttributeIgnore:
        case cudaLaunchAttributeAccessPolicyWindow:    // L2 persistence window
        case cudaLaunchAttributeSynchronizationPolicy: // how a stream waits
        case cudaLaunchAttributeClusterSchedulingPolicyPreference:
        case cudaLaunchAttributeProgrammaticStreamSerialization: // PDL: launches are synchronous already
        case cudaLaunchAttributeProgrammaticEvent:
        case cudaLaunchAttributePriority:
        case cudaLaunchAttributeMemSyncDomainMap:
        case cudaLaunchAttributeMemSyncDomain:
        case cudaLaunchAttributePreferredClusterDimension:
        case cudaLaunchAttributeLaunchCompletionEvent: // the launch has completed when it returns
        case cudaLaunchAttributePreferredSharedMemoryCarveout:
        case cudaLaunchAttributeNvlinkUtilCentricScheduling: break;
        case cudaLaunchAttributeCooperative:
            // every block may run at once only with enough workers; grid groups (grid.sync()) are not provided, so a
            // kernel that needs them does not compile in host mode
            break;
        case cudaLaunchAttributeClusterDimension: {
            const auto &d = a.val.clusterDim;
            if (d.x == 0 || d.y == 0 || d.z == 0 || config->gridDim.x % d.x || config->gridDim.y % d.y ||
                config->gridDim.z % d.z) {
                std::fprintf(
                    stderr,
                    "cudahost: cudaLaunchKernelEx at %s:%d: the grid (%u,%u,%u) is not a multiple of the "
                    "cluster dimension (%u,%u,%u)\n",
                    file, line, config->gridDim.x, config->gridDim.y, config->gridDim.z, d.x, d.y, d.z);
                return internal::record(cudaErrorInvalidValue);
            }
            break; // blocks of a cluster run as ordinary blocks (the cluster API is not provided)
        }
        case cudaLaunchAttributeDeviceUpdatableKernelNode:
            std::fprintf(
                stderr,
                "cudahost: cudaLaunchKernelEx at %s:%d: cudaLaunchAttributeDeviceUpdatableKernelNode is "
                "for graph nodes (CUDA graphs are not emulated)\n",
                file, line);
            return internal::record(cudaErrorNotSupported);
        default:
            std::fprintf(stderr, "cudahost: cudaLaunchKernelEx at %s:%d: unknown launch attribute %d\n", file,
                         line, (int)a.id);
            return internal::record(cudaErrorInvalidValue);
        }
    }
    return cudaSuccess;
}
} // namespace cudahost

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    (void)config;
    (void)args;
    std::fprintf(
        stderr,
        "cudahost: cudaLaunchKernelExC(config, %p, args) is not supported in host execution mode (it "
        "cannot know the kernel's parameter types): call the typed template cudaLaunchKernelEx(config, "
        "kernel, "
        "args...) or launch with kernel<<<grid, block, smem, stream>>>(args)\n",
        func);
    return record(cudaErrorNotSupported);
}

// The profiler's range markers: nothing to profile (run the program under perf or gprof instead).
cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

// ---- call counters (cudahost/counters.h) --------------------------------------------------------------------------
extern "C" void cudahostGetCallCounts(cudahostCallCounts *out)
{
    if (!out) return;
    std::memset(out, 0, sizeof *out);
    out->malloc_ = ci::g_counts[ci::kMalloc].load();
    out->free_ = ci::g_counts[ci::kFree].load();
    out->malloc_async = ci::g_counts[ci::kMallocAsync].load();
    out->free_async = ci::g_counts[ci::kFreeAsync].load();
    out->malloc_host = ci::g_counts[ci::kMallocHost].load();
    out->free_host = ci::g_counts[ci::kFreeHost].load();
    out->device_sync = ci::g_counts[ci::kDeviceSync].load();
    out->stream_sync = ci::g_counts[ci::kStreamSync].load();
    out->event_sync = ci::g_counts[ci::kEventSync].load();
    out->memcpy_sync = ci::g_counts[ci::kMemcpySync].load();
    std::lock_guard<std::mutex> lk(ci::g_mu);
    out->device_bytes = ci::g_device_bytes;
    out->device_bytes_peak = ci::g_device_peak;
    out->pinned_bytes = ci::g_pinned_bytes;
    out->pinned_bytes_peak = ci::g_pinned_peak;
}

extern "C" void cudahostResetCallCounts(void)
{
    for (auto &c : ci::g_counts) c.store(0);
    std::lock_guard<std::mutex> lk(ci::g_mu);
    ci::g_device_peak = ci::g_device_bytes;
    ci::g_pinned_peak = ci::g_pinned_bytes;
}
