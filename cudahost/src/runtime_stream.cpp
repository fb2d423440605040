// cudahost runtime API: streams and events. Execution is synchronous, so they only check their handles, and
// events record the time.
#include "runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

using namespace cudahost;
using cudahost::internal::record;

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
