// cudahost runtime API: the CUDA runtime functions of host execution mode (renamed cudahost_<name>; the signatures
// are NVIDIA's, checked by including the toolkit's headers through cudahost.h).
//
// This file: the runtime's state, its checks of memory and copies, the configuration (environment), the launch
// checks, the errors and the call counters; the API's memory functions are in runtime_memory.cpp, streams and
// events in runtime_stream.cpp, the device and kernel functions in runtime_device.cpp, what they share in
// runtime.h.
#include "runtime.h"

#include "cudahost/counters.h"

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

std::atomic<int> g_sticky{ 0 };

// After fork() in a multi-threaded parent, g_mu may be held by a thread that does not exist in the child.
void atfork_child() { new (&g_mu) std::mutex; }
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, &atfork_child);

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

bool stream_ok(cudaStream_t s)
{
    if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return true;
    std::lock_guard<std::mutex> lk(g_mu);
    return g_streams.count(s) != 0;
}

} // namespace

namespace rt {

// Never destroyed (pool threads and atexit handlers may still use them); reachable for leak checkers.
std::mutex &g_mu = *new std::mutex; // guards everything below
std::map<uintptr_t, Alloc> &g_allocs = *new std::map<uintptr_t, Alloc>;
size_t g_device_bytes = 0;
std::set<void *> &g_streams = *new std::set<void *>;
std::set<void *> &g_events = *new std::set<void *>;
std::unordered_map<const void *, int> &g_max_smem =
    *new std::unordered_map<const void *, int>; // kernel -> opt-in
size_t g_pinned_bytes = 0;                      // cudaMallocHost/cudaHostAlloc bytes live (under g_mu)
size_t g_device_peak = 0, g_pinned_peak = 0;    // peaks since the last cudahostResetCallCounts (under g_mu)

std::atomic<unsigned long long> g_counts[kNumCounters];
thread_local cudaError_t t_last = cudaSuccess;
thread_local int t_device = 0;

const std::pair<const uintptr_t, Alloc> *find_alloc(const void *p, bool one_past_end)
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

Event *event_of(cudaEvent_t e)
{
    std::lock_guard<std::mutex> lk(g_mu);
    return g_events.count(e) ? reinterpret_cast<Event *>(e) : nullptr;
}

} // namespace rt

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
