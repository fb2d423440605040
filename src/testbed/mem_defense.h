/* memfix verify's memory defenses, one call of a candidate:
 *   scratch-guard   device scratch from mf_scratch_alloc gets 256-byte canary
 *                   zones before and after (src/core/context.c), checked when
 *                   freed and after the call;
 *   input-write     in host execution mode each guarded input sits on pages of
 *                   its own (verify_guard.c pages it), read-only during the call
 *                   (mprotect), so every byte of it is protected; a write
 *                   faults, a SIGSEGV handler records it and lets the page be
 *                   written (the call goes on, and is rejected after it);
 *   untracked memory, counted against the ceiling: pinned host memory
 *                   (cudaMallocHost/cudaHostAlloc, cudahost's counters), the
 *                   candidate library's writable segments beyond 64 KiB (static
 *                   __device__ arrays live there in host mode), host scratch
 *                   taken through the context's host allocator (a candidate
 *                   calling the reference) and host heap growth beyond 8 MiB
 *                   of slack (mallinfo2, sampled): added to the device scratch
 *                   peak, so the op's ceiling check sees them. (Untracked
 *                   cudaMalloc is the hidden-allocation defense of verify_guard.c.)
 * mf_tb_memdef_begin before the call, mf_tb_memdef_end right after it (inputs
 * writable again), mf_tb_memdef_charge after verify's own checks. Internal. */
#ifndef MEMFIX_MEM_DEFENSE_H
#define MEMFIX_MEM_DEFENSE_H

#include "testbed.h"

#include <pthread.h>
#include <stdatomic.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MF_TB_MEMDEF_MAX_PROT = 16 };

typedef struct mf_tb_memdef {
    int host;                 /* host execution mode: counters, mprotect and the heap apply */
    size_t dev0, pinned0;     /* cudahost's live bytes before the call */
    size_t heap0;             /* host heap in use before the call */
    _Atomic size_t heap_peak; /* sampled during the call */
    atomic_int stop;
    pthread_t sampler;
    int sampling;
    size_t static_bytes; /* the candidate library's writable segments */
    int n_prot;
    const char *defense; /* set by end: "scratch-guard", "input-write" or "guard-band" (a write on the
                          * protected page after an input's end) */
    char reason[MF_TB_REASON_MAX];
    size_t cur0, peak0; /* the device scratch tracker before the call */
    size_t charge;      /* untracked bytes added to the scratch peak */
    char charge_what[200];
} mf_tb_memdef;

/* Arms the defenses for one call on the guarded buffers (bufs[0..n_in) are
 * inputs; NULL bases skipped) of the candidate 'candidate'. */
void mf_tb_memdef_begin(mf_context *ctx, mf_tb_guarded *bufs, int n_in, void (*candidate)(void),
                        mf_tb_memdef *m);
/* Disarms them; m->defense and m->reason say what was caught (NULL: nothing). */
void mf_tb_memdef_end(mf_context *ctx, mf_tb_memdef *m);
/* Adds m->charge to the context's device scratch peak (the op's ceiling check
 * then counts it). */
void mf_tb_memdef_charge(mf_context *ctx, const mf_tb_memdef *m);

#ifdef __cplusplus
}
#endif
#endif
