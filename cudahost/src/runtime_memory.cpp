// cudahost runtime API: the memory functions (allocation, copies, memset, symbols, pointer attributes) over the
// runtime's allocation table (runtime.cpp).
#include "runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

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
