// Named barriers (bar.sync / bar.arrive with a thread count) for warp-specialized kernels:
// producer/consumer handoff of shared-memory tiles between warpgroups and FlashAttention-3
// style ping-pong scheduling. Each helper is one inline PTX instruction from the list host
// execution mode emulates (cudahost/README.md, "Inline PTX"); the facts below restate the
// PTX ISA ("bar, barrier", parallel synchronization instructions):
//
// - A CTA has 16 barriers, id 0..15. Barrier 0 is also __syncthreads(): give the named
//   barriers of a kernel ids 1..15 so they never meet it.
// - nthreads is the number of threads the barrier waits for: a multiple of 32 (the count is
//   per warp: a warp arrives when all its non-exited threads have) and at most the block
//   size. Every arrival of one phase must use the same nthreads.
// - named_bar_sync arrives and waits until nthreads threads have arrived (by sync or by
//   arrive); named_bar_arrive arrives and goes on without waiting. When the count is
//   reached the waiting threads are released and the barrier resets at once, ready for its
//   next phase.
// - Memory: writes made before an arrival (sync or arrive) are visible to the threads that
//   wait at that phase once they are released; an arrive acquires nothing (a producer that
//   arrives must not read what the consumers write later without another barrier).
// - bar.* is .aligned: every thread of a warp executes the same barrier instruction,
//   convergently (call these from warp-uniform code only).
//
// Typical use: producer warps write a tile, then named_bar_arrive(1, P + C); consumer warps
// named_bar_sync(1, P + C), then read it. Ping-pong between warpgroups 0 and 1: warpgroup g
// waits for its turn with named_bar_sync(2 + g, 256) and hands the turn over with
// named_bar_arrive(2 + (g ^ 1), 256).
//
// Included after "mf_cuda.h"; everything is inline inside namespace MF_NS.
#ifndef MEMFIX_MF_BAR_CUH
#define MEMFIX_MF_BAR_CUH

namespace MF_NS {

// Arrive at barrier `id` (0..15) and wait until `nthreads` threads (a multiple of 32) have
// arrived at it in this phase.
__device__ __forceinline__ void named_bar_sync(int id, int nthreads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(nthreads) : "memory");
}

// Arrive at barrier `id` (0..15) of `nthreads` threads and go on without waiting.
__device__ __forceinline__ void named_bar_arrive(int id, int nthreads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(nthreads) : "memory");
}

} // namespace MF_NS

#endif
