/* memfix verify's memory defenses: src/testbed/mem_defense.h says what each
 * one catches and how. Hooked into verify_guard.c's guarded call. */
#define _GNU_SOURCE
#include "mem_defense.h"

#include "mf_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifdef MF_HAVE_HOST_KERNELS /* the whole file: memfix verify needs the host kernels */
#include "cudahost/counters.h"

enum {
#ifdef MF_COVERAGE_BUILD
    /* a --coverage candidate's .bss also holds its gcov counters (a few KiB per kernel) */
    STATIC_ALLOWANCE = 1 << 20,
#else
    STATIC_ALLOWANCE = 64 << 10, /* a library's own .data/.bss/.got */
#endif
};
static const size_t HEAP_SLACK = (size_t)8 << 20; /* cudahost's per-launch shared memory, stacks, stdio */

/* Under AddressSanitizer or ThreadSanitizer malloc is the sanitizer's (quarantine, shadow,
 * its own statistics): mallinfo2 does not measure the heap, so its growth is not charged. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MF_HEAP_MEASURED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MF_HEAP_MEASURED 0
#endif
#endif
#ifndef MF_HEAP_MEASURED
#define MF_HEAP_MEASURED 1
#endif

/* ---- input-write: read-only input pages and the SIGSEGV handler ---------------------- */
typedef struct prot_range {
    uintptr_t lo, hi; /* whole pages, read-only during the call */
    uintptr_t data;   /* the input's first byte */
    size_t bytes;     /* the input's size: a fault at or past data + bytes is a write past its end */
    const char *name;
    const mf_axes *axes; /* the input's (a write names its element by them) */
} prot_range;
static prot_range g_prot[MF_TB_MEMDEF_MAX_PROT];
static volatile sig_atomic_t g_n_prot;
static volatile sig_atomic_t g_fault_index = -1;
static volatile uintptr_t g_fault_addr;
static struct sigaction g_old_segv;

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
    const uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < g_n_prot; i++) {
        if (a >= g_prot[i].lo && a < g_prot[i].hi) {
            if (g_fault_index < 0) {
                g_fault_index = i;
                g_fault_addr = a;
            }
            /* let the write happen: the call goes on and is rejected after it */
            (void)mprotect((void *)g_prot[i].lo, g_prot[i].hi - g_prot[i].lo, PROT_READ | PROT_WRITE);
            return;
        }
    }
    /* not ours: the previous disposition */
    if (g_old_segv.sa_flags & SA_SIGINFO) {
        if (g_old_segv.sa_sigaction != NULL) {
            g_old_segv.sa_sigaction(sig, si, uc);
            return;
        }
    } else if (g_old_segv.sa_handler != SIG_DFL && g_old_segv.sa_handler != SIG_IGN) {
        g_old_segv.sa_handler(sig);
        return;
    }
    signal(SIGSEGV, SIG_DFL); /* the faulting instruction runs again and kills the process */
}

static void protect_inputs(mf_tb_guarded *bufs, int n_in)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    int n = 0;
    for (int i = 0; i < n_in && n < MF_TB_MEMDEF_MAX_PROT; i++) {
        if (bufs[i].base == NULL || bufs[i].bytes == 0) continue;
        const uintptr_t data = (uintptr_t)mf_tb_ptr(bufs, i);
        uintptr_t lo, hi;
        if (bufs[i].paged && (data & (page - 1)) == 0) {
            /* a paged input (verify_guard.c): its pages hold nothing else, so every byte of it is protected, the
             * partial last page included (the rest of that page is padding and the start of the trailing
             * guard) */
            lo = data;
            hi = (data + bufs[i].bytes + page - 1) & ~(page - 1);
        } else {
            /* only the pages wholly inside the input: nothing else lives there */
            lo = (data + page - 1) & ~(page - 1);
            hi = (data + bufs[i].bytes) & ~(page - 1);
        }
        if (hi <= lo) continue;
        if (mprotect((void *)lo, hi - lo, PROT_READ) != 0) continue;
        g_prot[n] = (prot_range){ lo, hi, data, bufs[i].bytes, bufs[i].name, &bufs[i].axes };
        n++;
    }
    g_fault_index = -1;
    g_n_prot = n;
    if (n == 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_old_segv);
}

/* whether any page of [lo, hi) is writable now (/proc/self/maps); -1 when it cannot be read */
static int range_writable(uintptr_t lo, uintptr_t hi)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL) return -1;
    char line[512];
    int w = 0;
    while (!w && fgets(line, sizeof line, f) != NULL) {
        unsigned long a, b;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3) continue;
        if ((uintptr_t)b <= lo || (uintptr_t)a >= hi) continue;
        if (perms[1] == 'w') w = 1;
    }
    fclose(f);
    return w;
}

/* The candidate runs in memfix's process: it can install its own SIGSEGV
 * handler or mprotect an input itself, and so write to it without faulting
 * into ours. Checked when disarming (best effort: a candidate that puts both
 * back before returning is not seen here). */
static void check_tampering(mf_tb_memdef *m)
{
    const int n = g_n_prot;
    if (n == 0 || m->defense != NULL) return;
    struct sigaction cur;
    if (sigaction(SIGSEGV, NULL, &cur) == 0 &&
        (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != segv_handler)) {
        m->defense = "input-write";
        snprintf(
            m->reason, sizeof m->reason,
            "changed the SIGSEGV handler during the call (inputs are write-protected and memfix's handler "
            "records writes to them; a candidate's own handler can hide such writes)");
        return;
    }
    if (g_fault_index >= 0) return; /* our handler unprotected the faulting input: reported below */
    for (int i = 0; i < n; i++) {
        if (range_writable(g_prot[i].lo, g_prot[i].hi) == 1) {
            m->defense = "input-write";
            snprintf(m->reason, sizeof m->reason,
                     "changed the protection of input %s during the call (its pages were read-only and are "
                     "writable after it: the candidate called mprotect on an input)",
                     g_prot[i].name);
            return;
        }
    }
}

static void unprotect_inputs(mf_tb_memdef *m)
{
    check_tampering(m);
    const int n = g_n_prot;
    for (int i = 0; i < n; i++)
        (void)mprotect((void *)g_prot[i].lo, g_prot[i].hi - g_prot[i].lo, PROT_READ | PROT_WRITE);
    if (n > 0) sigaction(SIGSEGV, &g_old_segv, NULL);
    g_n_prot = 0;
    const int f = g_fault_index;
    if (f >= 0 && m->defense == NULL) {
        const size_t at = (size_t)(g_fault_addr - g_prot[f].data);
        if (at < g_prot[f].bytes) {
            m->defense = "input-write";
            char el[112];
            mf_tb_element_at(g_prot[f].axes, g_prot[f].bytes, at, el, sizeof el);
            snprintf(
                m->reason, sizeof m->reason,
                "wrote to input %s at %s during the call (byte %zu of %zu; inputs are read-only, even if "
                "restored before returning: the page was write-protected and the write faulted)",
                g_prot[f].name, el, at, g_prot[f].bytes);
        } else {
            m->defense = "guard-band";
            char last[112];
            mf_tb_element_at(g_prot[f].axes, g_prot[f].bytes, g_prot[f].bytes - 1, last, sizeof last);
            snprintf(
                m->reason, sizeof m->reason,
                "wrote past the end of %s (%zu bytes, its last element %s): byte %zu, on the write-protected "
                "page after it",
                g_prot[f].name, g_prot[f].bytes, last, at);
        }
    }
    g_fault_index = -1;
}

/* ---- static arrays: the candidate library's writable PT_LOAD segments ----------------- */
typedef struct phdr_query {
    uintptr_t addr;
    size_t writable;
    int found;
    uintptr_t object; /* dlpi_addr of the object found */
} phdr_query;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    phdr_query *q = (phdr_query *)arg;
    int mine = 0;
    size_t w = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        const uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (q->addr >= lo && q->addr < lo + ph->p_memsz) mine = 1;
        if (ph->p_flags & PF_W) w += ph->p_memsz;
    }
    if (!mine) return 0;
    q->writable = w;
    q->found = 1;
    q->object = (uintptr_t)info->dlpi_addr;
    return 1;
}

static size_t library_static_bytes(void (*candidate)(void))
{
    phdr_query q = { (uintptr_t)candidate, 0, 0, 0 };
    phdr_query self = { (uintptr_t)&library_static_bytes, 0, 0, 0 };
    if (candidate == NULL) return 0;
    dl_iterate_phdr(phdr_cb, &q);
    dl_iterate_phdr(phdr_cb, &self);
    /* a candidate inside memfix's own object (its entry points, a test's in-process candidates)
     * brings no static arrays of its own that can be told apart from memfix's */
    if (!q.found || (self.found && self.object == q.object)) return 0;
    return q.writable;
}

/* ---- the host heap, sampled ----------------------------------------------------------- */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void *heap_sampler(void *arg)
{
    mf_tb_memdef *m = (mf_tb_memdef *)arg;
    const struct timespec pause = { 0, 100000 }; /* 100 us */
    while (!atomic_load(&m->stop)) {
        size_t h = heap_in_use();
        if (h > atomic_load(&m->heap_peak)) atomic_store(&m->heap_peak, h);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

/* ---- the hooks ------------------------------------------------------------------------ */
void mf_tb_memdef_begin(mf_context *ctx, mf_tb_guarded *bufs, int n_in, void (*candidate)(void),
                        mf_tb_memdef *m)
{
    memset(m, 0, sizeof *m);
    m->host = mf_context_backend(ctx) == MF_BACKEND_HOST;
    mf_context_set_scratch_guard(ctx, 1);
    (void)mf_mem_begin(ctx, MF_MEM_HOST); /* host scratch of this call (the reference's is already read) */
    m->static_bytes = library_static_bytes(candidate);
    mf_mem_stats st;
    if (mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st) == MF_OK) {
        m->cur0 = st.current;
        m->peak0 = st.peak;
    }
    if (!m->host) return;
    cudahostResetCallCounts();
    cudahostCallCounts c;
    cudahostGetCallCounts(&c);
    m->dev0 = c.device_bytes;
    m->pinned0 = c.pinned_bytes;
    m->heap0 = heap_in_use();
    atomic_init(&m->heap_peak, m->heap0);
    atomic_init(&m->stop, 0);
    m->sampling = pthread_create(&m->sampler, NULL, heap_sampler, m) == 0;
    protect_inputs(bufs, n_in);
}

void mf_tb_memdef_end(mf_context *ctx, mf_tb_memdef *m)
{
    size_t pinned = 0, dev = 0, heap = 0;
    if (m->host) {
        unprotect_inputs(m);
        atomic_store(&m->stop, 1);
        if (m->sampling) pthread_join(m->sampler, NULL);
        const size_t h = heap_in_use();
        if (h > atomic_load(&m->heap_peak)) atomic_store(&m->heap_peak, h);
        cudahostCallCounts c;
        cudahostGetCallCounts(&c);
        pinned = c.pinned_bytes_peak > m->pinned0 ? c.pinned_bytes_peak - m->pinned0 : 0;
        dev = c.device_bytes_peak > m->dev0 ? c.device_bytes_peak - m->dev0 : 0;
        const size_t hp = atomic_load(&m->heap_peak);
        heap = hp > m->heap0 ? hp - m->heap0 : 0;
    }
    const char *g = mf_context_scratch_guard_check(ctx);
    if (g != NULL && m->defense == NULL) {
        m->defense = "scratch-guard";
        snprintf(m->reason, sizeof m->reason, "%s", g);
    }
    mf_context_set_scratch_guard(ctx, 0);

    /* untracked bytes, counted against the ceiling */
    const size_t host_scratch = mf_mem_peak_delta(ctx, MF_MEM_HOST);
    const size_t statics = m->static_bytes > STATIC_ALLOWANCE ? m->static_bytes - STATIC_ALLOWANCE : 0;
    /* in host mode device, pinned and host scratch memory are heap memory too */
    size_t other = dev + pinned + host_scratch + HEAP_SLACK;
    const size_t heap_extra = MF_HEAP_MEASURED && heap > other ? heap - other : 0;
    m->charge = pinned + statics + host_scratch + heap_extra;
    snprintf(m->charge_what, sizeof m->charge_what,
             "pinned %zu, static %zu, host scratch %zu, host heap %zu bytes", pinned, statics, host_scratch,
             heap_extra);
}

void mf_tb_memdef_charge(mf_context *ctx, const mf_tb_memdef *m)
{
    if (m->charge == 0) return;
    mf_mem_stats st;
    if (mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st) != MF_OK) return;
    /* this call's tracked peak (when it set a new one; else at least the bytes live before it)
     * plus what went around the allocator: an upper bound, not added up over calls */
    size_t peak = st.peak > m->peak0 ? st.peak : m->cur0;
    if (!mf_size_add(peak, m->charge, &peak)) peak = SIZE_MAX;
    mf_context_raise_scratch_peak(ctx, MF_MEM_DEVICE, peak);
}

#endif /* MF_HAVE_HOST_KERNELS */
