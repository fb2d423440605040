// cudahost runtime API: the device (one, the modelled profile of device.cpp), its limits and reset, the kernels'
// attributes and occupancy, and the launch functions host execution mode refuses or checks.
#include "runtime.h"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace cudahost;
using cudahost::internal::record;

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
