// cudahost execution engine: the grid's blocks over a persistent worker pool; the threads of a block as user-level
// fibers on the worker that runs the block, with barrier semantics for __syncthreads and the warp operations.
//
// Scheduling within a block (one OS thread, cooperative):
//   * threads start in linear order (reverse with CUDAHOST_THREAD_ORDER=reverse, a seeded permutation per block with
//     CUDAHOST_THREAD_ORDER=random:SEED);
//   * a thread that finishes without blocking hands its fiber (its stack) to the next unstarted thread, so a kernel
//     without barriers runs its threads as plain calls, with no context switch;
//   * a thread that blocks (barrier, warp operation, __nanosleep) switches directly to the next runnable thread:
//     a released one from the ready queue, else a fresh fiber for the next unstarted thread;
//   * when no thread can run and some are still alive, no barrier can complete: the deadlock is reported with the
//     kernel, the block and the threads' indices, the block is abandoned and the launch fails (sticky error).
//
// This file: the fibers, the scheduler, the worker pool, the watchdog and the launch; engine_sync.cpp holds the
// barriers and warp operations, engine_diag.cpp the diagnostics, engine.h what they share.
#include "engine.h"

#include <sys/mman.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CUDAHOST_VALGRIND 1
#endif

// ---- builtins ----------------------------------------------------------------------------------------------------
__thread uint3 threadIdx CUDAHOST_TLS_;
__thread uint3 blockIdx CUDAHOST_TLS_;
__thread uint3 blockDim CUDAHOST_TLS_;
__thread uint3 gridDim CUDAHOST_TLS_;
namespace cudahost {
__thread void *dyn_smem_base_ CUDAHOST_TLS_;
}

// ---- context switch ----------------------------------------------------------------------------------------------
#if defined(CUDAHOST_ASM_SWITCH)
// Saves the callee-saved registers on the current stack, stores the stack pointer in *save_sp, loads new_sp and
// restores the registers saved there. A new fiber's stack is prepared so that the final `ret` enters the trampoline,
// which calls r13(r12).
asm(R"(
  .pushsection .text
  .globl cudahost_ctx_switch
  .hidden cudahost_ctx_switch
  .type cudahost_ctx_switch,@function
  .p2align 4
cudahost_ctx_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cudahost_ctx_switch,.-cudahost_ctx_switch
  .globl cudahost_ctx_trampoline
  .hidden cudahost_ctx_trampoline
  .type cudahost_ctx_trampoline,@function
  .p2align 4
cudahost_ctx_trampoline:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size cudahost_ctx_trampoline,.-cudahost_ctx_trampoline
  .popsection
)");
#endif

namespace cudahost {
namespace engine {
__thread Worker *tls_worker CUDAHOST_TLS_;
__thread ThreadRec *tls_thread CUDAHOST_TLS_;
__thread Fiber *tls_fiber CUDAHOST_TLS_;
} // namespace engine

namespace {

std::mutex &g_workers_mu = *new std::mutex;
std::vector<Worker *> &g_workers = *new std::vector<Worker *>; // kept reachable (leak checkers), never freed

void fiber_entry(void *arg);
#if !defined(CUDAHOST_ASM_SWITCH)
void fiber_entry_uc(unsigned hi, unsigned lo);
#endif

void init_context(Fiber *f)
{
#if defined(CUDAHOST_ASM_SWITCH)
    uintptr_t top = (reinterpret_cast<uintptr_t>(f->stack_lo) + f->stack_size - f->stagger) & ~uintptr_t(15);
    void **sp = reinterpret_cast<void **>(top - 72);
    sp[0] = nullptr;                                // r15
    sp[1] = nullptr;                                // r14
    sp[2] = reinterpret_cast<void *>(&fiber_entry); // r13: entry
    sp[3] = f;                                      // r12: argument
    sp[4] = nullptr;                                // rbx
    sp[5] = nullptr;                                // rbp (ends frame-pointer walks)
    sp[6] = reinterpret_cast<void *>(&cudahost_ctx_trampoline);
    sp[7] = nullptr;
    sp[8] = nullptr;
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack_lo;
    f->uc.uc_stack.ss_size = f->stack_size;
    f->uc.uc_link = nullptr;
    uintptr_t p = reinterpret_cast<uintptr_t>(f);
    makecontext(&f->uc, reinterpret_cast<void (*)()>(&fiber_entry_uc), 2, (unsigned)(p >> 32), (unsigned)p);
#endif
}

#if !defined(CUDAHOST_ASM_SWITCH)
void fiber_entry_uc(unsigned hi, unsigned lo)
{
    fiber_entry(reinterpret_cast<void *>((uintptr_t(hi) << 32) | lo));
}
#endif

Fiber *new_fiber(Worker *w)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t ss = (ci::stack_size() + page - 1) / page * page;
    void *m = mmap(nullptr, ss + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) {
        std::fprintf(stderr, "cudahost: cannot map a %zu-byte fiber stack: %s\n", ss + page,
                     std::strerror(errno));
        std::abort();
    }
    mprotect(m, page,
             PROT_NONE); // guard page: a kernel that overflows its stack faults instead of corrupting
    Fiber *f = new Fiber;
    f->mem = static_cast<char *>(m);
    f->mem_size = ss + page;
    f->stack_lo = f->mem + page;
    f->stack_size = ss;
    {
        // Stacks are page-aligned, so their tops would all fall into the same cache sets: offset each one.
        size_t i = (size_t)w->n_all;
        f->stagger = std::min(ss / 4, (i % 64) * 64 + ((i / 64) % 16) * 4096 + 64);
    }
#if defined(CUDAHOST_TSAN)
    f->tsan = __tsan_create_fiber(0);
#endif
#if defined(CUDAHOST_VALGRIND)
    f->valgrind_id = VALGRIND_STACK_REGISTER(f->stack_lo, f->stack_lo + f->stack_size);
#endif
    init_context(f);
    if (w->n_all >= Worker::kMaxFibers) {
        std::fprintf(stderr, "cudahost: internal error: more than %d fibers on one worker\n",
                     Worker::kMaxFibers);
        std::abort();
    }
    w->all[w->n_all++] = f;
    return f;
}

// Makes an abandoned fiber (its thread was blocked or trapped) fresh again.
void reset_fiber(Fiber *f)
{
#if defined(CUDAHOST_ASAN)
    __asan_unpoison_memory_region(f->stack_lo, f->stack_size);
#endif
#if defined(CUDAHOST_TSAN)
    __tsan_destroy_fiber(f->tsan);
    f->tsan = __tsan_create_fiber(0);
#endif
    f->cur = nullptr;
    f->assigned = -1;
    f->asan_fake = nullptr;
    init_context(f);
}

inline Fiber *get_fiber(Worker *w)
{
    if (w->n_free > 0) return w->free_fibers[--w->n_free];
    return new_fiber(w);
}

inline int take_unstarted(Worker *w)
{
    int i = w->started++;
    int idx = w->reverse ? w->n - 1 - i : i;
    if (w->random) {
        idx = w->perm[i];
        ThreadRec *t = &w->th[idx];
        t->index = idx;
        const unsigned u = (unsigned)idx;
        t->tid = uint3{ u % w->bx, (u / w->bx) % w->by, u / (w->bx * w->by) };
        t->state = TS_UNSTARTED;
        t->wait = W_NONE;
        t->warp = (unsigned short)(idx >> 5);
        t->lane = (unsigned short)(idx & 31);
        return idx;
    }
    ThreadRec *t = &w->th[idx];
    t->index = idx;
    // the thread index advances with the start order (no division per thread)
    t->tid = w->next_tid;
    uint3 &c = w->next_tid;
    if (!w->reverse) {
        if (++c.x == w->bx) {
            c.x = 0;
            if (++c.y == w->by) {
                c.y = 0;
                ++c.z;
            }
        }
    } else {
        if (c.x-- == 0) {
            c.x = w->bx - 1;
            if (c.y-- == 0) {
                c.y = w->by - 1;
                --c.z;
            }
        }
    }
    t->state = TS_UNSTARTED;
    t->wait = W_NONE;
    t->warp = (unsigned short)(idx >> 5);
    t->lane = (unsigned short)(idx & 31);
    return idx;
}

inline int rq_pop(Worker *w)
{
    int idx = w->rq[w->rq_head];
    if (++w->rq_head == ci::kMaxThreadsPerBlock) w->rq_head = 0;
    w->rq_n--;
    return idx;
}

} // namespace

namespace engine {
// Switches from `from` to the next runnable fiber of the block (or back to the worker when the block is over).
void schedule_next(Worker *w, Fiber *from, bool idle)
{
    if (idle) {
        if (kTsan)
            w->used[w->n_used++] = from; // under TSan a fiber (a TSan thread) runs one CUDA thread per block
        else
            w->free_fibers[w->n_free++] = from;
    }
    Fiber *to;
    if (w->rq_n > 0) {
        to = w->th[rq_pop(w)].fiber;
    } else if (w->started < w->n) {
        to = get_fiber(w);
        to->assigned = take_unstarted(w);
    } else if (w->live == 0) {
        to = &w->native;
    } else {
        report_deadlock(w);
        w->aborted = true;
        to = &w->native;
    }
    if (to == from) return;
    switch_to(w, from, to);
}
} // namespace engine

namespace {

inline void run_thread(Worker *w, Fiber *f, int idx)
{
    ThreadRec *t = &w->th[idx];
    w->progress.store(w->progress.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    t->fiber = f;
    t->state = TS_RUNNING;
    f->cur = t;
    tls_thread = t;
    threadIdx = t->tid;
    tsan_acquire(&w->tsan_block_start);
    w->job->body(w->job->ctx);
    tsan_release(&w->tsan_block_end);
    t->state = TS_DONE;
    thread_exited(w, t);
    lane_idle(w, t->warp);
    f->cur = nullptr;
    tls_thread = nullptr;
    w->live--;
}

void fiber_entry(void *arg)
{
    Fiber *f = static_cast<Fiber *>(arg);
#if defined(CUDAHOST_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    tls_fiber = f;
    Worker *w = tls_worker;
    for (;;) {
        int idx = f->assigned;
        for (;;) {
            run_thread(w, f, idx);
            if (!kTsan && w->rq_n == 0 && w->started < w->n) {
                idx = take_unstarted(w); // hand this fiber (its stack) to the next thread: no context switch
                continue;
            }
            break;
        }
        schedule_next(w, f, true);
    }
}

Worker *get_worker()
{
    Worker *w = tls_worker;
    if (w) return w;
    w = new Worker;
    w->th = new ThreadRec[ci::kMaxThreadsPerBlock];
    w->warps = new WarpState[ci::kMaxThreadsPerBlock / 32];
    w->rq = new int[ci::kMaxThreadsPerBlock];
    w->bar_waiters = new int[ci::kMaxThreadsPerBlock];
    w->all = new Fiber *[Worker::kMaxFibers];
    w->free_fibers = new Fiber *[Worker::kMaxFibers];
    w->used = new Fiber *[Worker::kMaxFibers];
    // exchange slots of the collectives of tiles larger than a warp (allocated here, before any fiber uses them)
    w->tile_buf = new unsigned char[5 * 2 * 1024 * detail::kTileSlot];
#if defined(CUDAHOST_ASAN)
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr = nullptr;
        size_t size = 0;
        pthread_attr_getstack(&attr, &addr, &size);
        w->native.stack_lo = static_cast<char *>(addr);
        w->native.stack_size = size;
        pthread_attr_destroy(&attr);
    }
#endif
#if defined(CUDAHOST_TSAN)
    w->native.tsan = __tsan_get_current_fiber();
#endif
    {
        std::lock_guard<std::mutex> lk(g_workers_mu);
        g_workers.push_back(w);
    }
    tls_worker = w;
    return w;
}

void run_block(Worker *w, Job *job, size_t linear)
{
    const launch_config *c = job->cfg;
    w->block_linear = linear;
    w->block_gen++;
    w->block_static = 0;
    unsigned gx = c->grid.x, gy = c->grid.y;
    blockIdx = uint3{ (unsigned)(linear % gx), (unsigned)((linear / gx) % gy),
                      (unsigned)(linear / ((size_t)gx * gy)) };
    w->n = (int)(c->block.x * c->block.y * c->block.z);
    w->started = 0;
    w->live = w->n;
    w->next_tid = w->reverse ? uint3{ w->bx - 1, w->by - 1, w->bz - 1 } : uint3{ 0, 0, 0 };
    if (w->random) {
        // a seeded permutation of the start order, a function of the seed and the block only (Fisher-Yates on splitmix64)
        unsigned long long x = w->order_seed ^ (0x9e3779b97f4a7c15ull * (linear + 1));
        for (int i = 0; i < w->n; i++) w->perm[i] = i;
        for (int i = w->n - 1; i > 0; i--) {
            x += 0x9e3779b97f4a7c15ull;
            unsigned long long z = x;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            z ^= z >> 31;
            const int j = (int)(z % (unsigned long long)(i + 1));
            const int s = w->perm[i];
            w->perm[i] = w->perm[j];
            w->perm[j] = s;
        }
        for (int i = 0; i < w->n; i++) w->rank[w->perm[i]] = i;
    }
    w->rq_head = w->rq_n = 0;
    w->bar_arrived = w->bar_acc = 0;
    w->bar_gone = 0;
    for (int k = 0; k < Worker::kGroupKeys; k++) w->grp_arrived[k] = 0, w->grp_gen[k] = 0;
    for (auto &g : w->wg) g.arrived = 0;
    for (unsigned m = w->nbar_used; m; m &= m - 1) {
        const int a = __builtin_ctz(m);
        Worker::NamedBar &nb = w->nbar[a];
        nb.expected = nb.warps_arrived = 0;
        nb.phase = nb.warps_done = 0;
        for (int k = 0; k < 32; k++) nb.lanes[k] = 0, w->site_aligned[a][k] = false;
    }
    w->nbar_used = w->nbar_open = 0;
    w->warps_gone = 0;
    w->aborted = false;
    int nw = (w->n + 31) / 32;
    for (int i = 0; i < nw; i++) {
        WarpState &ws = w->warps[i];
        ws.arrived = 0;
        ws.exited = 0;
        ws.am = 0;
        ws.coll_arrived = 0;
        int lanes = std::min(32, w->n - i * 32);
        ws.exist = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
    }
    if (w->smem)
        std::memset(w->smem, 0xff, w->smem_size); // garbage: NaN for floats, so read-before-write shows
    if (kTsan) {
        // Under TSan, create the block's fibers here: a fiber created by another fiber would inherit its history
        // (happens-before), which hides the races between the CUDA threads that TSan must see.
        while (w->n_free < w->n) w->free_fibers[w->n_free++] = new_fiber(w);
    }
    tsan_release(&w->tsan_block_start);
    Fiber *f = get_fiber(w);
    f->assigned = take_unstarted(w);
    w->busy.store(true, std::memory_order_relaxed);
    switch_to(w, &w->native, f);
    w->busy.store(false, std::memory_order_relaxed);
    tsan_acquire(&w->tsan_block_end);
    if (w->aborted) {
        job->failed.store(true);
        for (int i = 0; i < w->n; i++) {
            ThreadRec &t = w->th[i];
            if ((t.state == TS_BLOCKED || t.state == TS_RUNNING) && t.fiber) {
                reset_fiber(t.fiber);
                w->free_fibers[w->n_free++] = t.fiber;
                t.state = TS_DONE;
            }
        }
    }
    if (kTsan) {
        for (int i = 0; i < w->n_used; i++) w->free_fibers[w->n_free++] = w->used[i];
        w->n_used = 0;
    }
    tls_thread = nullptr;
}

void run_blocks(Job *job)
{
    Worker *w = get_worker();
    const launch_config *c = job->cfg;
    w->job = job;
    w->bx = c->block.x;
    w->by = c->block.y;
    w->bz = c->block.z;
    w->reverse = ci::reverse_order();
    w->random = ci::random_order(&w->order_seed);
    if (w->random && !w->perm) {
        w->perm = new int[ci::kMaxThreadsPerBlock];
        w->rank = new int[ci::kMaxThreadsPerBlock];
    }
    blockDim = uint3{ c->block.x, c->block.y, c->block.z };
    gridDim = uint3{ c->grid.x, c->grid.y, c->grid.z };
    w->smem_size = c->smem;
    // exact size (ASan sees overflows), 1024-byte aligned: a kernel may declare `extern __shared__ __align__(1024)`
    // for the 128-byte swizzle patterns of wgmma (whose repeating pattern starts at a 1024-byte boundary)
    w->smem = nullptr;
    if (c->smem) {
        void *p = nullptr;
        if (posix_memalign(&p, 1024, c->smem) != 0) p = nullptr;
        w->smem = static_cast<char *>(p);
    }
    dyn_smem_base_ = w->smem;
    for (;;) {
        size_t i = job->next.fetch_add(1, std::memory_order_relaxed);
        if (i >= job->nblocks) break;
        run_block(w, job, i);
    }
    std::free(w->smem);
    w->smem = nullptr;
    dyn_smem_base_ = nullptr;
    w->job = nullptr;
}

// ---- worker pool -------------------------------------------------------------------------------------------------
// Never destroyed: detached pool threads may still wait on them while the process exits.
std::mutex &g_pool_mu = *new std::mutex;
std::condition_variable &g_pool_cv = *new std::condition_variable;
std::condition_variable &g_done_cv = *new std::condition_variable;
Job *g_job = nullptr;
unsigned long g_gen = 0;
int g_pool_size = 0;
std::mutex &g_launch_mu = *new std::mutex;

void pool_main()
{
    unsigned long seen = 0;
    std::unique_lock<std::mutex> lk(g_pool_mu);
    for (;;) {
        g_pool_cv.wait(lk, [&] { return g_gen != seen; });
        seen = g_gen;
        Job *job = g_job;
        if (!job || job->slots <= 0) continue;
        job->slots--;
        job->active++;
        lk.unlock();
        run_blocks(job);
        lk.lock();
        if (--job->active == 0) g_done_cv.notify_all();
    }
}

void ensure_pool(int helpers)
{
    // called with g_launch_mu held
    while (g_pool_size < helpers) {
        std::thread(pool_main).detach();
        g_pool_size++;
    }
}

// ---- watchdog: a thread that spins on another thread of its block never yields (fibers are not preemptive) -------
std::atomic<int> g_watchdog_pid{ 0 };

void watchdog_main(int limit)
{
    std::vector<unsigned long> last;
    std::vector<int> stalled;
    for (;;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        std::lock_guard<std::mutex> lk(g_workers_mu);
        last.resize(g_workers.size(), ~0ul);
        stalled.resize(g_workers.size(), 0);
        for (size_t i = 0; i < g_workers.size(); i++) {
            Worker *w = g_workers[i];
            unsigned long p = w->progress.load(std::memory_order_relaxed);
            if (!w->busy.load(std::memory_order_relaxed) || p != last[i]) {
                last[i] = p;
                stalled[i] = 0;
                continue;
            }
            if (++stalled[i] < limit) continue;
            Job *job = w->job;
            ThreadRec *t = nullptr;
            for (int k = 0; k < w->n && job; k++)
                if (w->th[k].state == TS_RUNNING) t = &w->th[k];
            std::fprintf(
                stderr,
                "cudahost: kernel '%s' (launched at %s:%d): block %zu has run for %d s without any of its "
                "threads "
                "reaching a barrier or finishing%s%s. A thread that spin-waits on another thread of its own "
                "block "
                "never ends in host execution mode (the threads of a block are cooperative fibers): use a "
                "barrier, or __nanosleep() in the loop, which yields. (CUDAHOST_WATCHDOG=<seconds> sets this "
                "limit, 0 disables it.) Aborting.\n",
                job ? job->cfg->name : "?", job ? job->cfg->file : "?", job ? job->cfg->line : 0,
                w->block_linear, limit, t ? "; running thread " : "", t ? fmt_tid(*t).c_str() : "");
            std::abort();
        }
    }
}

void ensure_watchdog()
{
    int pid = (int)getpid();
    if (g_watchdog_pid.load(std::memory_order_relaxed) == pid) return;
    static const int limit = [] {
        const char *s = std::getenv("CUDAHOST_WATCHDOG");
        return s ? (int)std::strtol(s, nullptr, 10) : 60;
    }();
    g_watchdog_pid.store(pid);
    if (limit > 0) std::thread(watchdog_main, limit).detach();
}

// After fork() only the forking thread exists in the child: forget the pool (and the watchdog), and make sure no
// lock is held by a thread that does not exist there.
void atfork_child()
{
    new (&g_pool_mu) std::mutex;
    new (&g_pool_cv) std::condition_variable;
    new (&g_done_cv) std::condition_variable;
    new (&g_launch_mu) std::mutex;
    new (&g_workers_mu) std::mutex;
    g_pool_size = 0;
    g_job = nullptr;
}
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, &atfork_child);

} // namespace

// ---- launch ------------------------------------------------------------------------------------------------------
void launch_run_(const launch_config &c, void (*body)(void *), void *ctx)
{
    std::lock_guard<std::mutex> launch_lock(g_launch_mu);
    ensure_watchdog();
    Job job;
    job.cfg = &c;
    job.body = body;
    job.ctx = ctx;
    job.nblocks = (size_t)c.grid.x * c.grid.y * c.grid.z;
    int helpers = (int)std::min<size_t>((size_t)ci::workers(), job.nblocks) - 1;
    if (helpers > 0) {
        ensure_pool(helpers);
        std::lock_guard<std::mutex> lk(g_pool_mu);
        job.slots = helpers;
        g_job = &job;
        g_gen++;
        g_pool_cv.notify_all();
    }
    // The launching thread runs blocks too (with CUDAHOST_WORKERS=1 everything runs on it).
    Fiber *saved_fiber = tls_fiber;
    run_blocks(&job);
    tls_fiber = saved_fiber;
    if (helpers > 0) {
        std::unique_lock<std::mutex> lk(g_pool_mu);
        job.slots = 0;
        g_done_cv.wait(lk, [&] { return job.active == 0; });
        g_job = nullptr;
    }
    if (int d = job.deadlocks.load(); d > 1)
        std::fprintf(stderr, "cudahost: %d blocks of kernel '%s' (launched at %s:%d) deadlocked in all\n", d,
                     c.name, c.file, c.line);
    if (int d = job.warp_diags.load(); d > 4)
        std::fprintf(stderr,
                     "cudahost: %d undefined warp operations in kernel '%s' (launched at %s:%d) in all\n", d,
                     c.name, c.file, c.line);
    if (job.failed.load()) {
        cudaError_t e = job.asserted.load() ? cudaErrorAssert : cudaErrorLaunchFailure;
        ci::set_sticky(e);
        ci::record(e);
        set_launch_status_(e);
        return;
    }
    // Static shared memory is known once a block has declared it: launch_begin_ checks every later launch up front;
    // a first launch over the device's per-block limit has run already, and fails now, as a GPU would have refused it.
    const size_t st = job.static_smem.load();
    ci::note_static_smem(c.kaddr, st);
    const ci::device_profile &dev = ci::device();
    if (st + c.smem > dev.smem_optin) {
        std::fprintf(
            stderr,
            "cudahost: kernel '%s' (launched at %s:%d): %zu B of static shared memory + %zu B dynamic is "
            "more than the %zu B per block of the %s profile; the launch fails with "
            "cudaErrorInvalidValue (a GPU would not have run it)\n",
            c.name, c.file, c.line, st, c.smem, dev.smem_optin, dev.key);
        ci::record(cudaErrorInvalidValue);
        set_launch_status_(cudaErrorInvalidValue);
    }
}

void shared_fill_bytes_(void *p, size_t n)
{
    if (!tls_thread) return;
    Worker *w = tls_worker;
    int k = 0;
    while (k < w->n_fill && w->fill_ptr[k] != p) k++;
    if (k == w->n_fill) {
        if (k == Worker::kMaxFills)
            return; // table full: leave the variable as it is (never refill mid-block)
        w->fill_ptr[w->n_fill++] = p;
        w->fill_gen[k] = 0;
    }
    if (w->fill_gen[k] == w->block_gen) return; // another thread of this block got here first
    w->fill_gen[k] = w->block_gen;
    w->block_static += (n + 15) / 16 * 16;
    for (size_t seen = w->job->static_smem.load(std::memory_order_relaxed);
         w->block_static > seen &&
         !w->job->static_smem.compare_exchange_weak(seen, w->block_static, std::memory_order_relaxed);) {
    }
#if defined(CUDAHOST_TSAN)
    // not memset (TSan intercepts it, and would see the fill as a racing write of this CUDA thread)
    volatile unsigned char *b = static_cast<volatile unsigned char *>(p);
    for (size_t i = 0; i < n; i++) b[i] = 0xff;
#else
    std::memset(p, 0xff, n);
#endif
}

namespace internal {
bool in_kernel() { return tls_thread != nullptr; }
} // namespace internal

} // namespace cudahost

using namespace cudahost;

long long clock64()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec; // a 1 GHz "clock"
}
unsigned long long __globaltimer() { return (unsigned long long)clock64(); }

void __nanosleep(unsigned ns)
{
    (void)ns;
    ThreadRec *t = tls_thread;
    if (!t) return;
    Worker *w = tls_worker;
    if (w->rq_n == 0 && w->started >= w->n) {
        // nothing else in this block can run: let other blocks (workers) progress
        w->progress.store(w->progress.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        std::this_thread::yield();
        return;
    }
    // yield: the released threads first, then the next unstarted one, then this one again
    rq_push(w, t->index);
    t->state = TS_BLOCKED;
    t->wait = W_YIELD;
    if (w->rq_n == 1 && w->started < w->n) {
        Fiber *to = get_fiber(w);
        to->assigned = take_unstarted(w);
        switch_to(w, t->fiber, to);
    } else {
        schedule_next(w, t->fiber, false);
    }
    t->state = TS_RUNNING;
    t->wait = W_NONE;
}

// A failed assert() inside a kernel behaves as a device-side assert: the message names the block and thread, the
// block is abandoned and the launch fails with the sticky cudaErrorAssert; outside kernels, glibc's behaviour.
extern "C" [[noreturn]] void __assert_fail(const char *expr, const char *file, unsigned int line,
                                           const char *func) noexcept
{
    ThreadRec *t = tls_thread;
    if (!t) {
        std::fprintf(stderr, "%s: %s:%u: %s: Assertion `%s' failed.\n", program_invocation_short_name, file,
                     line, func ? func : "?", expr);
        std::abort();
    }
    Worker *w = tls_worker;
    std::fprintf(stderr, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file,
                 line, func ? func : "?", blockIdx.x, blockIdx.y, blockIdx.z, t->tid.x, t->tid.y, t->tid.z,
                 expr);
    w->aborted = true;
    w->job->asserted.store(true);
    switch_to(w, t->fiber, &w->native);
    __builtin_unreachable();
}

void __trap()
{
    ThreadRec *t = tls_thread;
    if (!t) {
        std::fprintf(stderr, "cudahost: __trap() called outside a kernel\n");
        std::abort();
    }
    Worker *w = tls_worker;
    const launch_config *c = w->job->cfg;
    std::fprintf(
        stderr,
        "cudahost: kernel '%s' (launched at %s:%d) called __trap() in block (%u,%u,%u), thread (%u,%u,%u); "
        "the block is abandoned and the launch fails with cudaErrorLaunchFailure\n",
        c->name, c->file, c->line, blockIdx.x, blockIdx.y, blockIdx.z, t->tid.x, t->tid.y, t->tid.z);
    w->aborted = true;
    Fiber *f = t->fiber;
    switch_to(w, f, &w->native);
    __builtin_unreachable();
}
