/* cudahost runtime call counters: how many times each runtime entry point that allocates, frees or
 * synchronizes was called, and the peak bytes of device and pinned host memory, since the last reset.
 * A host-mode extension (no CUDA equivalent): memfix's tests assert that an op call does no cudaMalloc,
 * cudaFree or synchronization in steady state, and memfix verify counts the device and pinned memory a
 * candidate takes behind the context's allocator. Plain C, usable from C and C++; the counters are
 * process-wide (every thread) and updated atomically. Not available in nvcc builds. */
#ifndef CUDAHOST_COUNTERS_H
#define CUDAHOST_COUNTERS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cudahostCallCounts {
    unsigned long long malloc_;      /* cudaMalloc, cudaMallocManaged, cudaMallocPitch */
    unsigned long long free_;        /* cudaFree */
    unsigned long long malloc_async; /* cudaMallocAsync */
    unsigned long long free_async;   /* cudaFreeAsync */
    unsigned long long malloc_host;  /* cudaMallocHost, cudaHostAlloc */
    unsigned long long free_host;    /* cudaFreeHost */
    unsigned long long device_sync;  /* cudaDeviceSynchronize */
    unsigned long long stream_sync;  /* cudaStreamSynchronize (cudaStreamQuery is not counted) */
    unsigned long long event_sync;   /* cudaEventSynchronize */
    unsigned long long memcpy_sync;  /* synchronous copies and sets: cudaMemcpy, cudaMemcpy2D, cudaMemcpyPeer,
                                          cudaMemcpyToSymbol/FromSymbol, cudaMemset, cudaMemset2D */
    size_t device_bytes;             /* device + managed bytes live now (what cudaMemGetInfo counts) */
    size_t device_bytes_peak;        /* their peak since the last cudahostResetCallCounts */
    size_t pinned_bytes;             /* pinned host bytes live now (cudaMallocHost/cudaHostAlloc) */
    size_t pinned_bytes_peak;        /* their peak since the last reset */
} cudahostCallCounts;

/* The counts since the last reset (or since the process started). */
void cudahostGetCallCounts(cudahostCallCounts *out);
/* Every count to 0 and each peak to the bytes live now. */
void cudahostResetCallCounts(void);
/* Synchronizing calls in c (device_sync + stream_sync + event_sync + memcpy_sync). */
static inline unsigned long long cudahostSyncCalls(const cudahostCallCounts *c)
{
    return c->device_sync + c->stream_sync + c->event_sync + c->memcpy_sync;
}

#ifdef __cplusplus
}
#endif
#endif
