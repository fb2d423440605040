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
#include "internal.h"

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

#if defined(CUDAHOST_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(CUDAHOST_TSAN)
#include <sanitizer/tsan_interface.h>
#endif
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CUDAHOST_VALGRIND 1
#endif

// The hand-written context switch is for x86-64; elsewhere (or with -DCUDAHOST_USE_UCONTEXT) swapcontext is used.
#if defined(__x86_64__) && !defined(CUDAHOST_USE_UCONTEXT)
#define CUDAHOST_ASM_SWITCH 1
#else
#include <ucontext.h>
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
extern "C" void cudahost_ctx_switch(void **save_sp, void *new_sp);
extern "C" void cudahost_ctx_trampoline();
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
namespace {

namespace ci = internal;

enum : unsigned char { TS_UNSTARTED = 0, TS_RUNNING, TS_BLOCKED, TS_READY, TS_DONE };
enum : unsigned char { W_NONE = 0, W_BAR, W_WARP, W_YIELD, W_ACTIVEMASK, W_COLL, W_GROUP, W_WGCOLL, W_NBAR };

struct ThreadRec;

struct Fiber {
    void *sp = nullptr;
    char *mem = nullptr; // mapping (guard page + stack); null for a worker's native context
    size_t mem_size = 0;
    char *stack_lo = nullptr;
    size_t stack_size = 0;
    ThreadRec *cur = nullptr; // the CUDA thread running on this fiber
    int assigned = -1;        // the thread to start when resumed idle
    void *asan_fake = nullptr;
    void *tsan = nullptr;
    unsigned valgrind_id = 0;
    size_t stagger = 0; // stack top offset: spreads the fibers' hot stack lines over the cache sets
#if !defined(CUDAHOST_ASM_SWITCH)
    ucontext_t uc;
#endif
};

struct ThreadRec {
    uint3 tid;
    int index;
    unsigned char state;
    unsigned char wait;
    unsigned short warp, lane;
    Fiber *fiber;
    void *ext =
        nullptr;   // per-thread state of the PTX emulation (cp.async queue), kept across blocks (ptx.cpp)
    int group_key; // W_GROUP: the multi-warp tile barrier waited at (group_key_())
    // W_NBAR: the named barrier waited at; nbar_arrive: an arrive (waits only for the other lanes of its warp);
    // nbar_phase: the phase that released it (set by the thread that completes the phase)
    unsigned char nbar, nbar_arrive;
    unsigned nbar_phase;
};

struct WarpState {
    unsigned arrived, exist, exited;
    // __activemask: the lanes waiting in it
    unsigned am;
    unsigned mask[32];
    int kind[32];
    int param[32];
    int width[32];
    unsigned long long val[32];
    unsigned long long res[32];
    // warp-collective (.aligned) operations (mma.sync, ldmatrix, ...): the lanes waiting, the operation and its site
    unsigned coll_arrived;
    const char *coll_what;
    const char *coll_file;
    int coll_line;
    void *coll_io[32];
    // the call site of each lane's pending warp operation (for diagnostics)
    const char *site_file[32];
    int site_line[32];
};

struct Job {
    const launch_config *cfg;
    void (*body)(void *);
    void *ctx;
    size_t nblocks;
    std::atomic<size_t> next{ 0 };
    int slots = 0;  // helpers still wanted
    int active = 0; // helpers running
    std::atomic<bool> failed{ false };
    std::atomic<int> deadlocks{ 0 };
    std::atomic<bool> asserted{ false };
    std::atomic<int> warp_diags{ 0 };     // undefined warp operations seen (reported once per launch in full)
    std::atomic<size_t> static_smem{ 0 }; // the largest static __shared__ footprint of a block
};

struct Worker {
    Fiber native;
    // Fixed arrays, not std::vector: under TSan the fibers are separate threads and a vector's reallocation (an
    // intercepted memmove) would be reported as a race between them.
    static constexpr int kMaxFibers = 2 * 1024 + 8;
    Fiber **all = nullptr;
    Fiber **free_fibers = nullptr;
    Fiber **used = nullptr;
    int n_all = 0, n_free = 0, n_used = 0;
    // the running block
    Job *job = nullptr;
    size_t block_linear = 0;
    int n = 0, started = 0, live = 0;
    unsigned bx = 1, by = 1, bz = 1;
    uint3 next_tid{ 0, 0, 0 }; // the thread index of the next thread to start
    bool reverse = false, aborted = false;
    bool random = false; // CUDAHOST_THREAD_ORDER=random:SEED
    unsigned long long order_seed = 0;
    int *perm = nullptr;        // random: the start order of the block's threads [1024]
    int *rank = nullptr;        // random: each thread's position in perm [1024]
    ThreadRec *th = nullptr;    // [1024]
    WarpState *warps = nullptr; // [32]
    int *rq = nullptr;          // ready ring [1024]
    int rq_head = 0, rq_n = 0;
    int *bar_waiters = nullptr; // [1024]
    int bar_arrived = 0, bar_acc = 0, bar_result = 0;
    int bar_gone = 0; // threads of warps that have exited as a whole: they no longer hold __syncthreads back
    // barriers of tiles larger than a warp (tiled_partition<64..1024>), by group_key_()
    static constexpr int kGroupKeys = 64;
    int grp_arrived[kGroupKeys];
    unsigned grp_gen[kGroupKeys];
    unsigned char *tile_buf = nullptr; // exchange slots of those tiles' collectives: [5][2][1024][kTileSlot]
    char *smem = nullptr;
    size_t smem_size = 0;
    char tsan_block_start, tsan_block_end, tsan_bar;
    // static __shared__ variables filled with garbage this block (cudahost::shared_fill_)
    static constexpr int kMaxFills = 64;
    void *fill_ptr[kMaxFills];
    unsigned long fill_gen[kMaxFills];
    int n_fill = 0;
    unsigned long block_gen = 0;
    size_t block_static = 0; // static __shared__ bytes this block declared (each rounded to 16)
    // warpgroup-collective operations (wgmma.*): per warpgroup of 128 threads, the threads waiting, the operation,
    // its site and each thread's io pointer; wg_ext: the PTX emulation's state of each warpgroup (kept across blocks)
    struct WgColl {
        int arrived;
        const char *what, *file;
        int line;
        void *io[128];
    };
    WgColl wg[8];
    void *wg_ext[8] = {};
    // named barriers 1..15 and 0 with a thread count (bar.sync / bar.arrive a, b; PTX ISA "bar, barrier"): the
    // count is per warp (a warp arrives when all its non-exited lanes have arrived); a phase is open while
    // expected != 0 (expected: b, or kNbarAll for the whole block)
    static constexpr int kNbars = 16, kNbarAll = -1, kNbarSlots = 4;
    struct NamedBar {
        int expected;        // threads (0: no phase open)
        int warps_arrived;   // warps counted in this phase
        unsigned phase;      // completed phases
        unsigned warps_done; // warps counted in this phase (bit per warp)
        unsigned lanes[32];  // per warp: lanes arrived whose warp is not counted yet
        const char *
            site_file[32]; // per warp: the site of its first lane's arrival (.aligned: the others must match)
        int site_line[32];
        const char *what;
        // TSan: arrivals release into slot[phase % kNbarSlots], waiters acquire the slot of the phase that released
        // them (a slot per phase, so that an arrive-only thread racing ahead into the next phase does not hand its
        // later writes to the previous phase's waiters)
        char slot[kNbarSlots];
    };
    bool site_aligned[kNbars][32] = {};
    NamedBar nbar[kNbars] = {};
    unsigned nbar_open = 0; // barriers with a phase open (bit per barrier)
    unsigned nbar_used = 0; // barriers used by the running block (reset at the next block)
    int warps_gone = 0;     // warps whose threads have all exited
    // watchdog: progress changes at every thread start and fiber switch; busy while a block runs
    std::atomic<unsigned long> progress{ 0 };
    std::atomic<bool> busy{ false };
};

__thread Worker *tls_worker CUDAHOST_TLS_;
__thread ThreadRec *tls_thread CUDAHOST_TLS_;
__thread Fiber *tls_fiber CUDAHOST_TLS_;

std::mutex &g_workers_mu = *new std::mutex;
std::vector<Worker *> &g_workers = *new std::vector<Worker *>; // kept reachable (leak checkers), never freed

#if defined(CUDAHOST_TSAN)
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif

inline void tsan_release(void *a)
{
#if defined(CUDAHOST_TSAN)
    __tsan_release(a);
#else
    (void)a;
#endif
}
inline void tsan_acquire(void *a)
{
#if defined(CUDAHOST_TSAN)
    __tsan_acquire(a);
#else
    (void)a;
#endif
}

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

inline void switch_to(Worker *w, Fiber *from, Fiber *to)
{
#if defined(CUDAHOST_ASAN)
    __sanitizer_start_switch_fiber(&from->asan_fake, to->stack_lo, to->stack_size);
#endif
#if defined(CUDAHOST_TSAN)
    // Fiber-to-fiber switches carry no synchronization: barriers are modelled explicitly (release on arrival, acquire
    // on departure), so TSan sees a missing __syncthreads as a race.
    __tsan_switch_to_fiber(to->tsan,
                           (from == &w->native || to == &w->native) ? 0 : __tsan_switch_to_fiber_no_sync);
#endif
    tls_fiber = to;
    w->progress.store(w->progress.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
#if defined(CUDAHOST_ASM_SWITCH)
    cudahost_ctx_switch(&from->sp, to->sp);
#else
    swapcontext(&from->uc, &to->uc);
#endif
#if defined(CUDAHOST_ASAN)
    __sanitizer_finish_switch_fiber(from->asan_fake, nullptr, nullptr);
#endif
    // resumed as `from`
    tls_fiber = from;
    if (from->cur) {
        tls_thread = from->cur;
        threadIdx = from->cur->tid;
    }
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

inline void rq_push(Worker *w, int idx)
{
    int pos = w->rq_head + w->rq_n;
    if (pos >= ci::kMaxThreadsPerBlock) pos -= ci::kMaxThreadsPerBlock;
    w->rq[pos] = idx;
    w->rq_n++;
}
inline int rq_pop(Worker *w)
{
    int idx = w->rq[w->rq_head];
    if (++w->rq_head == ci::kMaxThreadsPerBlock) w->rq_head = 0;
    w->rq_n--;
    return idx;
}

// A blocked thread becomes runnable.
inline void release(Worker *w, int idx)
{
    rq_push(w, idx);
    w->th[idx].state = TS_READY;
}

// Whether a lane of the warp other than `self` may still run before it blocks or exits.
bool warp_has_runnable(Worker *w, int warp, int self)
{
    int lanes = std::min(32, w->n - warp * 32);
    for (int l = 0; l < lanes; l++) {
        int idx = warp * 32 + l;
        if (l == self) continue;
        bool started = w->random    ? w->rank[idx] < w->started
                       : w->reverse ? idx >= w->n - w->started
                                    : idx < w->started;
        if (!started) return true;
        const ThreadRec &t = w->th[idx];
        if (t.state == TS_RUNNING || t.state == TS_READY || (t.state == TS_BLOCKED && t.wait == W_YIELD))
            return true;
    }
    return false;
}

// __activemask's group forms when no lane of the warp can run any more: every lane has exited, blocks somewhere
// else, or waits in __activemask; the waiting lanes are the active (converged) ones.
// `self` (a lane, or -1) is the calling lane when it completes the group itself: it keeps running.
__attribute__((noinline)) void complete_activemask(Worker *w, int warp, int self)
{
    WarpState &ws = w->warps[warp];
    unsigned m = ws.am;
    ws.am = 0;
    for (unsigned q = m; q; q &= q - 1) {
        unsigned l = (unsigned)__builtin_ctz(q);
        ws.res[l] = m;
    }
    unsigned others = self >= 0 ? m & ~(1u << self) : m;
    if (w->reverse) {
        for (unsigned q = others; q; q &= ~(1u << (31 - __builtin_clz(q))))
            release(w, warp * 32 + 31 - __builtin_clz(q));
    } else {
        for (unsigned q = others; q; q &= q - 1) release(w, warp * 32 + __builtin_ctz(q));
    }
}

// A lane stops being runnable (it blocks or exits): lanes waiting in __activemask may now form their group.
inline void lane_idle(Worker *w, int warp)
{
    if (__builtin_expect(w->warps[warp].am != 0, 0) && !warp_has_runnable(w, warp, -1))
        complete_activemask(w, warp, -1);
}

std::string fmt_tid(const ThreadRec &t)
{
    char b[64];
    std::snprintf(b, sizeof b, "(%u,%u,%u)", t.tid.x, t.tid.y, t.tid.z);
    return b;
}

// ---- undefined warp operations (CUDAHOST_WARP_CHECK=error|warn|off) ----------------------------------------------
enum { WC_OFF = 0, WC_WARN, WC_ERROR, WC_STRICT };
int warp_check_mode()
{
    static const int m = [] {
        const char *s = std::getenv("CUDAHOST_WARP_CHECK");
        if (!s || !*s || !std::strcmp(s, "error")) return (int)WC_ERROR;
        if (!std::strcmp(s, "warn")) return (int)WC_WARN;
        if (!std::strcmp(s, "off")) return (int)WC_OFF;
        if (!std::strcmp(s, "strict")) return (int)WC_STRICT;
        std::fprintf(stderr,
                     "cudahost: CUDAHOST_WARP_CHECK=%s is not one of error, warn, off, strict; using error\n",
                     s);
        return (int)WC_ERROR;
    }();
    return m;
}

const char *warp_kind_name(int k)
{
    switch (k) {
    case detail::wk_sync: return "__syncwarp";
    case detail::wk_shfl_idx: return "__shfl_sync";
    case detail::wk_shfl_up: return "__shfl_up_sync";
    case detail::wk_shfl_down: return "__shfl_down_sync";
    case detail::wk_shfl_xor: return "__shfl_xor_sync";
    case detail::wk_ballot: return "__ballot_sync/__any_sync";
    case detail::wk_match_any: return "__match_any_sync";
    case detail::wk_match_all: return "__match_all_sync/__all_sync";
    default: return "__reduce_*_sync";
    }
}

std::string warp_site(const WarpState &ws, unsigned l)
{
    std::string r = warp_kind_name(ws.kind[l]);
    if (ws.site_file[l]) r += std::string(" at ") + ws.site_file[l] + ":" + std::to_string(ws.site_line[l]);
    return r;
}

// The lanes of a warp operation's mask that take part: those that have not exited (exited threads do not hold a
// *_sync back on a GPU either: "all non-exited threads named in mask must execute the same intrinsic").
inline bool warp_group_ready(const WarpState &ws, unsigned em)
{
    const unsigned live = em & ~ws.exited;
    if ((ws.arrived & live) != live) return false;
    for (unsigned m = live; m; m &= m - 1)
        if (ws.mask[__builtin_ctz(m)] != em) return false;
    return true;
}

// Lane `l` of a completed shuffle reads lane `src`, which does not take part: the value is undefined on a GPU.
__attribute__((noinline)) void warp_undefined_read(Worker *w, int warp, unsigned l, int src, unsigned em)
{
    const int mode = warp_check_mode();
    if (mode == WC_OFF) return;
    const WarpState &ws = w->warps[warp];
    Job *job = w->job;
    if (mode >= WC_ERROR) job->failed.store(true);
    const int k = job->warp_diags.fetch_add(1);
    if (k >= 4) return; // the first ones in full; the count at the end of the launch
    const launch_config *c = job->cfg;
    const ThreadRec &t = w->th[warp * 32 + (int)l];
    const char *why = !((ws.exist >> src) & 1u) ? "does not exist (partial warp)"
                      : !((em >> src) & 1u)     ? "is not in the mask"
                                                : "has exited";
    std::fprintf(
        stderr,
        "cudahost: %s: kernel '%s' (launched at %s:%d), block (%u,%u,%u), warp %d, lane %u (thread %s): %s "
        "with mask 0x%08x reads lane %d, which %s; on a GPU the value is undefined (host mode returns 0xff "
        "bytes)%s\n",
        mode >= WC_ERROR ? "error" : "warning", c->name, c->file, c->line, blockIdx.x, blockIdx.y, blockIdx.z,
        warp, l, fmt_tid(t).c_str(), warp_site(ws, l).c_str(), em, src, why,
        mode >= WC_ERROR
            ? "; the launch fails with cudaErrorLaunchFailure (CUDAHOST_WARP_CHECK=warn only warns)"
            : "");
}

// CUDAHOST_WARP_CHECK=strict: a *_sync whose mask names lanes that have exited (allowed by CUDA, which only requires
// the non-exited lanes of the mask to take part, but often a sign that the mask was meant for a full warp).
__attribute__((noinline)) void warp_exited_in_mask(Worker *w, int warp, unsigned em)
{
    const WarpState &ws = w->warps[warp];
    Job *job = w->job;
    job->failed.store(true);
    if (job->warp_diags.fetch_add(1) >= 4) return;
    const launch_config *c = job->cfg;
    const unsigned l = (unsigned)__builtin_ctz(em & ~ws.exited);
    std::fprintf(stderr,
                 "cudahost: error (CUDAHOST_WARP_CHECK=strict): kernel '%s' (launched at %s:%d), block "
                 "(%u,%u,%u), warp "
                 "%d: %s with mask 0x%08x names lanes 0x%08x that have exited; the launch fails with "
                 "cudaErrorLaunchFailure\n",
                 c->name, c->file, c->line, blockIdx.x, blockIdx.y, blockIdx.z, warp,
                 warp_site(ws, l).c_str(), em, em & ws.exited);
}

// Every live lane named in `em` has arrived: compute all results and release the waiting lanes (all but `self`).
__attribute__((noinline)) void complete_warp_group(Worker *w, int warp, unsigned em, int self)
{
    WarpState &ws = w->warps[warp];
    const unsigned live = em & ~ws.exited;
    if (__builtin_expect(live != em, 0) && warp_check_mode() == WC_STRICT) warp_exited_in_mask(w, warp, em);
    unsigned ballot = 0;
    for (unsigned m = live; m; m &= m - 1) {
        unsigned l = (unsigned)__builtin_ctz(m);
        if (ws.val[l]) ballot |= 1u << l;
    }
    const int first = __builtin_ctz(live);
    unsigned long long red = 0;
    int rk = ws.kind[first];
    if (rk >= detail::wk_red_add) {
        bool init = true;
        for (unsigned m = live; m; m &= m - 1) {
            unsigned l = (unsigned)__builtin_ctz(m);
            unsigned x = (unsigned)ws.val[l];
            unsigned r = (unsigned)red;
            if (init)
                r = x;
            else
                switch (rk) {
                case detail::wk_red_add: r += x; break;
                case detail::wk_red_min_s: r = (unsigned)std::min((int)r, (int)x); break;
                case detail::wk_red_max_s: r = (unsigned)std::max((int)r, (int)x); break;
                case detail::wk_red_min_u: r = std::min(r, x); break;
                case detail::wk_red_max_u: r = std::max(r, x); break;
                case detail::wk_red_and: r &= x; break;
                case detail::wk_red_or: r |= x; break;
                default: r ^= x; break;
                }
            init = false;
            red = r;
        }
    }
    for (unsigned m = live; m; m &= m - 1) {
        unsigned l = (unsigned)__builtin_ctz(m);
        int k = ws.kind[l];
        unsigned long long r = 0;
        int wd = ws.width[l];
        if (wd <= 0 || wd > 32 || (wd & (wd - 1))) wd = 32;
        unsigned seg = l & ~(unsigned)(wd - 1);
        int src = -1;
        switch (k) {
        case detail::wk_sync: break;
        case detail::wk_shfl_idx: src = (int)(seg + ((unsigned)ws.param[l] & (unsigned)(wd - 1))); break;
        case detail::wk_shfl_up: {
            unsigned d = (unsigned)ws.param[l];
            src = (l - seg) >= d ? (int)(l - d) : (int)l;
            break;
        }
        case detail::wk_shfl_down: {
            unsigned d = (unsigned)ws.param[l];
            src = (l - seg) + d < (unsigned)wd ? (int)(l + d) : (int)l;
            break;
        }
        case detail::wk_shfl_xor: {
            unsigned j = l ^ ((unsigned)ws.param[l] & 31u);
            src = j <= seg + (unsigned)wd - 1 ? (int)j : (int)l;
            break;
        }
        case detail::wk_ballot: r = ballot; break;
        case detail::wk_match_any: {
            unsigned mm = 0;
            for (unsigned q = live; q; q &= q - 1) {
                unsigned o = (unsigned)__builtin_ctz(q);
                if (ws.val[o] == ws.val[l]) mm |= 1u << o;
            }
            r = mm;
            break;
        }
        case detail::wk_match_all: {
            bool all = true;
            for (unsigned q = live; q; q &= q - 1) {
                unsigned o = (unsigned)__builtin_ctz(q);
                if (ws.val[o] != ws.val[l]) all = false;
            }
            r = all ? ((1ull << 32) | live) : 0;
            break;
        }
        default: r = red; break;
        }
        if (src >= 0) {
            if ((live >> src) & 1u) {
                r = ws.val[src];
            } else { // a source lane that does not take part: undefined on a GPU
                r = ~0ull;
                warp_undefined_read(w, warp, l, src, em);
            }
        }
        ws.res[l] = r;
    }
    ws.arrived &= ~live;
    unsigned others = self >= 0 ? live & ~(1u << self) : live;
    const int base = warp * 32;
    if (w->reverse) {
        for (unsigned m = others; m; m &= ~(1u << (31 - __builtin_clz(m))))
            release(w, base + 31 - __builtin_clz(m));
    } else {
        for (unsigned m = others; m; m &= m - 1) release(w, base + __builtin_ctz(m));
    }
}

// A lane exited: warp operations whose other named lanes all wait can now complete without it.
__attribute__((noinline)) void warp_lane_exited(Worker *w, int warp)
{
    WarpState &ws = w->warps[warp];
    for (unsigned pending = ws.arrived; pending;) {
        unsigned em = ws.mask[__builtin_ctz(pending)];
        pending &= ~em;
        if (warp_group_ready(ws, em)) {
            tsan_release(&ws);
            complete_warp_group(w, warp, em, -1);
        }
    }
}

void complete_barrier(Worker *w, int waiters_to_release)
{
    w->bar_result = w->bar_acc;
    w->bar_acc = 0;
    w->bar_arrived = 0;
    if (w->reverse)
        for (int i = waiters_to_release - 1; i >= 0; i--) release(w, w->bar_waiters[i]);
    else
        for (int i = 0; i < waiters_to_release; i++) release(w, w->bar_waiters[i]);
}

// ---- named barriers (bar.sync / bar.arrive a, b) ------------------------------------------------------------------
inline int nbar_needed(const Worker *w, const Worker::NamedBar &nb)
{
    return nb.expected == Worker::kNbarAll ? (w->n + 31) / 32 - w->warps_gone : nb.expected / 32;
}

// Phase `a` completes: the sync waiters of the warps counted in it are released (all but `self`, which goes on), and
// the barrier is ready for its next phase. Lanes of a warp not counted yet (a warp whose lanes were still arriving)
// stay for the next phase.
void nbar_complete_phase(Worker *w, int a, int self)
{
    Worker::NamedBar &nb = w->nbar[a];
    const unsigned done = nb.warps_done, ph = nb.phase;
    nb.phase++;
    nb.warps_arrived = 0;
    nb.warps_done = 0;
    bool partial = false;
    for (int k = 0; k < 32 && !partial; k++) partial = nb.lanes[k] != 0;
    if (!partial) {
        nb.expected = 0;
        w->nbar_open &= ~(1u << a);
    }
    auto one = [&](int idx) {
        ThreadRec &o = w->th[idx];
        if (idx != self && o.state == TS_BLOCKED && o.wait == W_NBAR && o.nbar == a && !o.nbar_arrive) {
            o.nbar_phase = ph;
            release(w, idx);
        }
    };
    if (w->reverse) {
        for (unsigned m = done; m; m &= ~(1u << (31 - __builtin_clz(m)))) {
            const int base = (31 - __builtin_clz(m)) * 32;
            for (int l = std::min(31, w->n - 1 - base); l >= 0; l--) one(base + l);
        }
    } else {
        for (unsigned m = done; m; m &= m - 1) {
            const int base = __builtin_ctz(m) * 32;
            for (int l = 0; l < 32 && base + l < w->n; l++) one(base + l);
        }
    }
}

// Every non-exited lane of `warp` has arrived at barrier `a`: the warp counts (its lanes waiting in an arrive go on),
// and the phase completes when enough warps have.
void nbar_count_warp(Worker *w, int a, int warp, int self)
{
    Worker::NamedBar &nb = w->nbar[a];
    nb.lanes[warp] = 0;
    nb.warps_done |= 1u << warp;
    nb.warps_arrived++;
    const int base = warp * 32, lanes = std::min(32, w->n - base);
    for (int i = 0; i < lanes; i++) {
        const int l = w->reverse ? lanes - 1 - i : i, idx = base + l;
        ThreadRec &o = w->th[idx];
        if (idx != self && o.state == TS_BLOCKED && o.wait == W_NBAR && o.nbar == a && o.nbar_arrive)
            release(w, idx);
    }
    if (nb.warps_arrived >= nbar_needed(w, nb)) nbar_complete_phase(w, a, self);
}

// A lane of `warp` exited: a warp whose other lanes all wait at a named barrier (not an .aligned one, which needs
// the whole warp: that stays a deadlock, reported) now counts there; a whole-block phase (no thread count) needs
// one warp less when the warp has exited as a whole.
__attribute__((noinline)) void nbar_lane_exited(Worker *w, int warp)
{
    const WarpState &ws = w->warps[warp];
    for (unsigned m = w->nbar_open; m; m &= m - 1) {
        const int a = __builtin_ctz(m);
        Worker::NamedBar &nb = w->nbar[a];
        if (nb.lanes[warp] != 0 && !w->site_aligned[a][warp] && (nb.lanes[warp] | ws.exited) == ws.exist)
            nbar_count_warp(w, a, warp, -1);
        else if (nb.expected == Worker::kNbarAll && nb.warps_arrived > 0 &&
                 nb.warps_arrived >= nbar_needed(w, nb))
            nbar_complete_phase(w, a, -1);
    }
}

// A thread exited. When its whole warp has, that warp no longer holds __syncthreads back (on a GPU, a barrier
// waits for the warps that have not exited); a barrier the remaining threads all wait at completes.
inline void thread_exited(Worker *w, ThreadRec *t)
{
    WarpState &ws = w->warps[t->warp];
    ws.exited |= 1u << t->lane;
    if (__builtin_expect(ws.arrived != 0, 0)) warp_lane_exited(w, t->warp);
    if (ws.exited == ws.exist) w->warps_gone++;
    if (__builtin_expect(w->nbar_open != 0, 0)) nbar_lane_exited(w, t->warp);
    if (ws.exited == ws.exist) {
        w->bar_gone += __builtin_popcount(ws.exist);
        if (w->bar_arrived > 0 && w->bar_arrived + w->bar_gone == w->n) {
            // (released only when the exit completes the barrier: the waiters acquire when they resume, so a release at
            // every exit would hide the races of the threads that run after the barrier)
            tsan_release(&w->tsan_bar);
            complete_barrier(w, w->bar_arrived);
        }
    }
}

void report_deadlock(Worker *w)
{
    const launch_config *c = w->job->cfg;
    if (w->job->deadlocks.fetch_add(1) > 0) return; // the first block is reported in full, the others counted
    std::string bar, warp, exited, coll, never, wgcoll, named[Worker::kNbars];
    int nbar = 0, nwarp = 0, nexit = 0, ncoll = 0, nnever = 0, nwgcoll = 0, nnamed[Worker::kNbars] = {};
    const WarpState *coll_ws = nullptr;
    const Worker::WgColl *coll_wg = nullptr;
    unsigned listed[ci::kMaxThreadsPerBlock / 32] = {}; // lanes already named as never arriving, per warp
    auto add = [](std::string &s, int &k, const std::string &item) {
        if (k < 16)
            s += (k ? ", " : "") + item;
        else if (k == 16)
            s += ", ...";
        k++;
    };
    for (int i = 0; i < w->n; i++) {
        ThreadRec &t = w->th[i];
        if (t.state == TS_DONE) {
            add(exited, nexit, fmt_tid(t));
        } else if (t.state == TS_BLOCKED && t.wait == W_BAR) {
            add(bar, nbar, fmt_tid(t));
        } else if (t.state == TS_BLOCKED && t.wait == W_WARP) {
            const WarpState &ws = w->warps[t.warp];
            const unsigned em = ws.mask[t.lane];
            char m[32];
            std::snprintf(m, sizeof m, " mask 0x%08x", em);
            add(warp, nwarp, fmt_tid(t) + " " + warp_site(ws, t.lane) + m);
            // the lanes its mask names that never reach this operation: they wait elsewhere
            for (unsigned q = em & ~ws.exited & ~listed[t.warp]; q; q &= q - 1) {
                unsigned l = (unsigned)__builtin_ctz(q);
                if (((ws.arrived >> l) & 1u) && ws.mask[l] == em) continue;
                listed[t.warp] |= 1u << l;
                const ThreadRec &o = w->th[t.warp * 32 + (int)l];
                std::string where =
                    o.wait == W_BAR    ? "waits at __syncthreads"
                    : o.wait == W_NBAR ? "waits at named barrier " + std::to_string((int)o.nbar)
                    : o.wait == W_WARP ? "waits at another warp operation (" + warp_site(ws, l) + ")"
                                       : "waits elsewhere";
                add(never, nnever, "lane " + std::to_string(l) + " " + fmt_tid(o) + " " + where);
            }
        } else if (t.state == TS_BLOCKED && t.wait == W_NBAR) {
            add(named[t.nbar], nnamed[t.nbar],
                fmt_tid(t) +
                    (t.nbar_arrive ? " (in an arrive, waiting for the other lanes of its warp)" : ""));
        } else if (t.state == TS_BLOCKED && t.wait == W_GROUP) {
            add(bar, nbar, fmt_tid(t) + " (tile sync)");
        } else if (t.state == TS_BLOCKED && t.wait == W_COLL) {
            add(coll, ncoll, fmt_tid(t));
            coll_ws = &w->warps[t.warp];
        } else if (t.state == TS_BLOCKED && t.wait == W_WGCOLL) {
            add(wgcoll, nwgcoll, fmt_tid(t));
            coll_wg = &w->wg[t.index / 128];
        }
    }
    unsigned bl = (unsigned)(w->block_linear % c->grid.x);
    unsigned br = (unsigned)(w->block_linear / c->grid.x);
    if (nnever) // not a plain deadlock between barriers: a warp operation's mask names lanes that never arrive
        std::fprintf(
            stderr,
            "cudahost: error: kernel '%s' (launched at %s:%d), block (%u,%u,%u) of a (%u,%u,%u)x(%u,%u,%u) "
            "launch: a warp operation's mask names lanes that never reach it, so it cannot complete\n",
            c->name, c->file, c->line, bl, br % c->grid.y, br / c->grid.y, c->grid.x, c->grid.y, c->grid.z,
            c->block.x, c->block.y, c->block.z);
    else
        std::fprintf(stderr,
                     "cudahost: deadlock in kernel '%s' (launched at %s:%d), block (%u,%u,%u) of a "
                     "(%u,%u,%u)x(%u,%u,%u) "
                     "launch: every live thread waits and no barrier can complete\n",
                     c->name, c->file, c->line, bl, br % c->grid.y, br / c->grid.y, c->grid.x, c->grid.y,
                     c->grid.z, c->block.x, c->block.y, c->block.z);
    if (nbar) std::fprintf(stderr, "  %d thread(s) wait at __syncthreads: %s\n", nbar, bar.c_str());
    for (int a = 0; a < Worker::kNbars; a++) {
        if (!nnamed[a]) continue;
        const Worker::NamedBar &nb = w->nbar[a];
        int arrived = nb.warps_arrived * 32; // as a GPU counts: per warp
        for (int k = 0; k < 32; k++) arrived += __builtin_popcount(nb.lanes[k]);
        char cnt[48];
        if (nb.expected == Worker::kNbarAll)
            std::snprintf(cnt, sizeof cnt, "all %d threads", w->n);
        else
            std::snprintf(cnt, sizeof cnt, "%d threads", nb.expected);
        std::fprintf(stderr, "  %d thread(s) wait at named barrier %d (%s, %d arrived; '%s'): %s\n",
                     nnamed[a], a, cnt, arrived, nb.what ? nb.what : "bar", named[a].c_str());
    }
    if (nwarp)
        std::fprintf(stderr, "  %d thread(s) wait at a warp operation (__syncwarp/__shfl*/vote): %s\n", nwarp,
                     warp.c_str());
    if (nnever)
        std::fprintf(
            stderr,
            "  the mask of a warp operation names lane(s) that never reach it (they wait elsewhere; on a GPU "
            "this is undefined behaviour): %s\n",
            never.c_str());
    if (nexit) std::fprintf(stderr, "  %d thread(s) already exited: %s\n", nexit, exited.c_str());
    if (ncoll)
        std::fprintf(
            stderr,
            "  %d thread(s) wait at the warp-collective '%s' (%s:%d), which needs all 32 lanes of their warp "
            "(.aligned; a divergent or partial warp): %s\n",
            ncoll, coll_ws->coll_what, coll_ws->coll_file, coll_ws->coll_line, coll.c_str());
    if (nwgcoll)
        std::fprintf(
            stderr,
            "  %d thread(s) wait at the warpgroup-collective '%s' (%s:%d), which needs all 128 threads of "
            "their warpgroup (.aligned; a divergent warpgroup): %s\n",
            nwgcoll, coll_wg->what, coll_wg->file, coll_wg->line, wgcoll.c_str());
    std::fprintf(stderr, "  the block is abandoned and the launch fails with cudaErrorLaunchFailure\n");
}

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

inline void block_wait(Worker *w, ThreadRec *t, unsigned char why)
{
    t->state = TS_BLOCKED;
    t->wait = why;
    if (why != W_ACTIVEMASK) lane_idle(w, t->warp);
    schedule_next(w, t->fiber, false);
    t->state = TS_RUNNING;
    t->wait = W_NONE;
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

namespace detail {

unsigned long long warp_op(int kind, unsigned mask, unsigned long long v, int param, int width)
{
    return warp_op_at(kind, mask, v, param, width, nullptr, 0);
}

unsigned long long warp_op_at(int kind, unsigned mask, unsigned long long v, int param, int width,
                              const char *file, int line)
{
    ThreadRec *t = tls_thread;
    if (!t) return v; // called outside a kernel: a single thread
    Worker *w = tls_worker;
    WarpState &ws = w->warps[t->warp];
    const unsigned lane = t->lane, bit = 1u << lane;
    const unsigned em = (mask & ws.exist) | bit;
    tsan_release(&ws);
    ws.mask[lane] = em;
    ws.kind[lane] = kind;
    ws.param[lane] = param;
    ws.width[lane] = width;
    ws.val[lane] = v;
    ws.site_file[lane] = file;
    ws.site_line[lane] = line;
    ws.arrived |= bit;
    if (warp_group_ready(ws, em))
        complete_warp_group(w, t->warp, em, (int)lane);
    else
        block_wait(w, t, W_WARP);
    tsan_acquire(&ws);
    return ws.res[lane];
}

unsigned active_mask()
{
    ThreadRec *t = tls_thread;
    if (!t) return 1u;
    Worker *w = tls_worker;
    WarpState &ws = w->warps[t->warp];
    // Wait until no lane of the warp can run any more; the lanes waiting here are the converged ones (lanes that
    // exited, or block at a barrier or another warp operation, are not active here).
    ws.am |= 1u << t->lane;
    if (!warp_has_runnable(w, t->warp, (int)t->lane)) {
        complete_activemask(w, t->warp, (int)t->lane); // this lane completes the group and continues
    } else {
        block_wait(w, t, W_ACTIVEMASK);
    }
    return (unsigned)ws.res[t->lane];
}

unsigned lane_id() { return tls_thread ? tls_thread->lane : 0u; }

} // namespace detail

namespace {
int block_barrier(int pred)
{
    ThreadRec *t = tls_thread;
    if (!t) return pred != 0;
    Worker *w = tls_worker;
    tsan_release(&w->tsan_bar);
    w->bar_acc += pred != 0;
    w->bar_waiters[w->bar_arrived++] = t->index;
    if (w->bar_arrived + w->bar_gone == w->n) {
        complete_barrier(w, w->bar_arrived - 1); // the last waiter is this thread
    } else {
        block_wait(w, t, W_BAR);
    }
    tsan_acquire(&w->tsan_bar);
    return w->bar_result;
}
} // namespace

// ---- tiles larger than a warp (cooperative groups tiled_partition<64..1024>) ----------------------------------------
namespace detail {
namespace {
int group_key(unsigned first, unsigned count)
{
    // count is a power of two in [64, 1024] and first a multiple of it: one key per (size, tile)
    int s = __builtin_ctz(count) - 6; // 0..4
    static const int base[5] = { 0, 16, 24, 28, 30 };
    return base[s] + (int)(first / count);
}
} // namespace

unsigned group_gen_(unsigned first, unsigned count)
{
    if (!tls_thread) return 0;
    return tls_worker->grp_gen[group_key(first, count)];
}

unsigned group_sync_(unsigned first, unsigned count)
{
    ThreadRec *t = tls_thread;
    if (!t) return 0;
    Worker *w = tls_worker;
    const int key = group_key(first, count);
    tsan_release(&w->grp_gen[key]);
    const unsigned live =
        std::min<unsigned>(count, (unsigned)w->n - std::min<unsigned>(first, (unsigned)w->n));
    if (++w->grp_arrived[key] == (int)live) {
        w->grp_arrived[key] = 0;
        w->grp_gen[key]++;
        const int lo = (int)first, hi = (int)(first + live);
        if (w->reverse) {
            for (int i = hi - 1; i >= lo; i--)
                if (i != t->index && w->th[i].state == TS_BLOCKED && w->th[i].wait == W_GROUP &&
                    w->th[i].group_key == key)
                    release(w, i);
        } else {
            for (int i = lo; i < hi; i++)
                if (i != t->index && w->th[i].state == TS_BLOCKED && w->th[i].wait == W_GROUP &&
                    w->th[i].group_key == key)
                    release(w, i);
        }
    } else {
        t->group_key = key;
        block_wait(w, t, W_GROUP);
    }
    tsan_acquire(&w->grp_gen[key]);
    return w->grp_gen[key];
}

void *tile_scratch_()
{
    Worker *w = tls_worker;
    return w ? w->tile_buf : nullptr;
}
} // namespace detail

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

void __syncthreads() { (void)block_barrier(1); }
int __syncthreads_count(int predicate) { return block_barrier(predicate); }
int __syncthreads_and(int predicate)
{
    return block_barrier(predicate == 0) == 0; // no participating thread voted false
}
int __syncthreads_or(int predicate) { return block_barrier(predicate) != 0; }

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

// ---- warp-collective (.aligned) operations: mma.sync, ldmatrix, stmatrix, movmatrix, WMMA ------------------------
namespace cudahost {
namespace {
// (messages are built in fixed buffers: the failing fiber never returns, so nothing it allocated would be freed)
[[noreturn]] void collective_fail(Worker *w, ThreadRec *t, const char *what, const char *file, int line,
                                  const char *why, bool warpgroup = false)
{
    const launch_config *c = w->job->cfg;
    std::fprintf(
        stderr,
        "cudahost: kernel '%s' (launched at %s:%d): '%s' (%s:%d) is a %s: block (%u,%u,%u), warp %u, lane %u "
        "(thread (%u,%u,%u)): %s; the block is abandoned and the launch fails with cudaErrorLaunchFailure\n",
        c->name, c->file, c->line, what, file, line,
        warpgroup
            ? "warpgroup-collective operation (.aligned) that needs all 128 threads of its warpgroup (4 "
              "aligned warps), converged"
            : "warp-collective operation (.aligned) that needs all 32 lanes of the warp, converged",
        blockIdx.x, blockIdx.y, blockIdx.z, (unsigned)t->warp, (unsigned)t->lane, t->tid.x, t->tid.y,
        t->tid.z, why);
    w->aborted = true;
    switch_to(w, t->fiber, &w->native);
    __builtin_unreachable();
}
struct LaneList {
    char s[100];
    explicit LaneList(unsigned m)
    {
        int n = 0;
        s[0] = 0;
        for (unsigned q = m; q; q &= q - 1)
            n += std::snprintf(s + n, sizeof s - (size_t)n, "%s%d", n ? "," : "", __builtin_ctz(q));
    }
};
// The calling kernel thread of a collective operation; outside a kernel there is no block to fail: abort, naming the call.
ThreadRec *kernel_thread(const char *what, const char *file, int line)
{
    ThreadRec *t = tls_thread;
    if (!t) {
        std::fprintf(stderr, "cudahost: '%s' (%s:%d) called outside a kernel\n", what, file, line);
        std::abort();
    }
    return t;
}

// Whether a collective call at (what, file, line) is another one than the one its group already waits at (w0, f0, l0).
bool other_site(const char *w0, const char *f0, int l0, const char *what, const char *file, int line)
{
    return l0 != line || (w0 != what && std::strcmp(w0, what) != 0) ||
           (f0 != file && std::strcmp(f0, file) != 0);
}
} // namespace

namespace detail {
void warp_collective_(const char *what, const char *file, int line, void *io,
                      void (*fn)(void *const *io, void *arg), void *arg)
{
    ThreadRec *t = kernel_thread(what, file, line);
    Worker *w = tls_worker;
    WarpState &ws = w->warps[t->warp];
    const unsigned bit = 1u << t->lane;
    char why[300];
    if (ws.exist != 0xffffffffu) {
        std::snprintf(why, sizeof why,
                      "the warp has only %d threads (the block's thread count is not a multiple of 32)",
                      __builtin_popcount(ws.exist));
        collective_fail(w, t, what, file, line, why);
    }
    if (ws.exited) {
        std::snprintf(why, sizeof why, "lane(s) %s of the warp have already exited", LaneList(ws.exited).s);
        collective_fail(w, t, what, file, line, why);
    }
    if (ws.coll_arrived == 0) {
        ws.coll_what = what;
        ws.coll_file = file;
        ws.coll_line = line;
    } else if (other_site(ws.coll_what, ws.coll_file, ws.coll_line, what, file, line)) {
        std::snprintf(why, sizeof why, "lane(s) %s of the warp wait at another one, '%s' (%s:%d)",
                      LaneList(ws.coll_arrived).s, ws.coll_what, ws.coll_file, ws.coll_line);
        collective_fail(w, t, what, file, line, why);
    }
    ws.coll_io[t->lane] = io;
    ws.coll_arrived |= bit;
    tsan_release(&ws.coll_io);
    if (ws.coll_arrived != 0xffffffffu) {
        // When no thread of the block can run any more, the missing lanes cannot come: report it here (cheap test
        // first; otherwise a lane that blocks elsewhere later ends in the deadlock report, which names this wait too).
        if (w->rq_n == 0 && w->started >= w->n && !warp_has_runnable(w, t->warp, (int)t->lane)) {
            std::snprintf(
                why, sizeof why,
                "lane(s) %s of the warp cannot reach it (they wait at a barrier or another warp operation)",
                LaneList(~ws.coll_arrived).s);
            collective_fail(w, t, what, file, line, why);
        }
        block_wait(w, t, W_COLL);
    } else {
        // every lane has arrived: this one computes the results of all 32 in one pass, then releases the others
        tsan_acquire(&ws.coll_io);
        fn(ws.coll_io, arg);
        ws.coll_arrived = 0;
        tsan_release(&ws.coll_io);
        const int base = t->warp * 32;
        unsigned others = 0xffffffffu & ~bit;
        if (w->reverse) {
            for (unsigned m = others; m; m &= ~(1u << (31 - __builtin_clz(m))))
                release(w, base + 31 - __builtin_clz(m));
        } else {
            for (unsigned m = others; m; m &= m - 1) release(w, base + __builtin_ctz(m));
        }
    }
    tsan_acquire(&ws.coll_io);
}

// The warpgroup version (wgmma.*, PTX ISA 9.7.15): the 128 threads of warps 4g..4g+3 meet once, the last to arrive
// calls fn with the 128 io pointers (index = thread index within the warpgroup).
void warpgroup_collective_(const char *what, const char *file, int line, void *io,
                           void (*fn)(void *const *io, void *arg), void *arg)
{
    ThreadRec *t = kernel_thread(what, file, line);
    Worker *w = tls_worker;
    const int g = t->index / 128, first = g * 128, me = t->index - first;
    Worker::WgColl &wg = w->wg[g];
    char why[300];
    if (first + 128 > w->n) {
        std::snprintf(
            why, sizeof why,
            "warps %d..%d form a partial warpgroup of %d thread(s) (the block's thread count is not a "
            "multiple of 128)",
            4 * g, 4 * g + 3, w->n - first);
        collective_fail(w, t, what, file, line, why, true);
    }
    for (int k = 0; k < 4; k++)
        if (w->warps[4 * g + k].exited) {
            std::snprintf(why, sizeof why,
                          "warpgroup of warps %d..%d: lane(s) %s of warp %d have already exited", 4 * g,
                          4 * g + 3, LaneList(w->warps[4 * g + k].exited).s, 4 * g + k);
            collective_fail(w, t, what, file, line, why, true);
        }
    if (wg.arrived == 0) {
        wg.what = what;
        wg.file = file;
        wg.line = line;
    } else if (other_site(wg.what, wg.file, wg.line, what, file, line)) {
        std::snprintf(why, sizeof why,
                      "%d thread(s) of the warpgroup (warps %d..%d) wait at another one, '%s' (%s:%d)",
                      wg.arrived, 4 * g, 4 * g + 3, wg.what, wg.file, wg.line);
        collective_fail(w, t, what, file, line, why, true);
    }
    wg.io[me] = io;
    wg.arrived++;
    tsan_release(&wg.io);
    if (wg.arrived != 128) {
        if (w->rq_n == 0 && w->started >= w->n) {
            bool runnable = false;
            for (int k = 0; k < 4 && !runnable; k++)
                runnable = warp_has_runnable(w, 4 * g + k, 4 * g + k == t->warp ? (int)t->lane : -1);
            if (!runnable) {
                std::snprintf(
                    why, sizeof why,
                    "%d of the 128 threads of warps %d..%d cannot reach it (they wait at a barrier or "
                    "another operation)",
                    128 - wg.arrived, 4 * g, 4 * g + 3);
                collective_fail(w, t, what, file, line, why, true);
            }
        }
        block_wait(w, t, W_WGCOLL);
    } else {
        tsan_acquire(&wg.io);
        fn(wg.io, arg);
        wg.arrived = 0;
        tsan_release(&wg.io);
        if (w->reverse) {
            for (int i = first + 127; i >= first; i--)
                if (i != t->index) release(w, i);
        } else {
            for (int i = first; i < first + 128; i++)
                if (i != t->index) release(w, i);
        }
    }
    tsan_acquire(&wg.io);
}
void **warpgroup_ext_() { return tls_thread ? &tls_worker->wg_ext[tls_thread->index / 128] : nullptr; }
void dyn_smem_range_(void **base, size_t *size)
{
    Worker *w = tls_thread ? tls_worker : nullptr;
    *base = w ? w->smem : nullptr;
    *size = w ? w->smem_size : 0;
}

void **thread_ext_() { return tls_thread ? &tls_thread->ext : nullptr; }
unsigned thread_linear_() { return tls_thread ? (unsigned)tls_thread->index : 0u; }
unsigned long block_serial_() { return tls_thread ? tls_worker->block_gen : 0ul; }
} // namespace detail
} // namespace cudahost

// ---- named barriers: bar{.cta}.sync/arrive, barrier{.cta}.sync/arrive{.aligned} a{, b} (PTX ISA "bar, barrier") -----
namespace cudahost {
namespace ptx {
void bar_named_(const char *what, const char *file, int line, int sync, int aligned, uint32_t a, int has_b,
                uint32_t b)
{
    ThreadRec *t = kernel_thread(what, file, line);
    Worker *w = tls_worker;
    const int nwarps = (w->n + 31) / 32;
    char why[300];
    if (a >= (uint32_t)Worker::kNbars) {
        std::snprintf(why, sizeof why, "barrier %u does not exist (a CTA has barriers 0..15)", a);
        fault_(file, line, what, why);
    }
    if (!has_b && !sync) fault_(file, line, what, "an arrive needs a thread count");
    if (has_b && (b == 0 || b % 32 != 0 || b > (uint32_t)nwarps * 32)) {
        std::snprintf(why, sizeof why,
                      "thread count %u of barrier %u: it must be a multiple of 32 from 32 to the block's %d "
                      "thread(s)%s",
                      b, a, nwarps * 32, w->n % 32 ? " (rounded up to whole warps)" : "");
        fault_(file, line, what, why);
    }
    if (a == 0 && !has_b) { // bar.sync 0: __syncthreads, with its exited-warp rules
        __syncthreads();
        return;
    }
    const int expected = has_b ? (int)b : Worker::kNbarAll;
    Worker::NamedBar &nb = w->nbar[a];
    const WarpState &ws = w->warps[t->warp];
    const int warp = t->warp;
    if (aligned && ws.exited) {
        std::snprintf(
            why, sizeof why,
            "lane(s) %s of warp %d have exited: the .aligned form (every bar.*) needs the whole warp",
            LaneList(ws.exited).s, warp);
        fault_(file, line, what, why);
    }
    if (nb.expected != 0 && nb.expected != expected) {
        char was[40], now[40];
        std::snprintf(was, sizeof was,
                      nb.expected == Worker::kNbarAll ? "no thread count" : "thread count %d", nb.expected);
        std::snprintf(now, sizeof now, has_b ? "thread count %u" : "no thread count", b);
        std::snprintf(
            why, sizeof why,
            "barrier %u is used with %s while a phase of it with %s is open (every arrival of a phase must "
            "give the same count)",
            a, now, was);
        fault_(file, line, what, why);
    }
    if ((nb.warps_done >> warp) & 1u) {
        std::snprintf(
            why, sizeof why,
            "warp %d arrives at barrier %u a second time in one phase (%d threads, %d warps counted so "
            "far): more arrivals than the count; on a GPU the phase would complete early",
            warp, a, nb.expected == Worker::kNbarAll ? w->n : nb.expected, nb.warps_arrived);
        fault_(file, line, what, why);
    }
    if (nb.lanes[warp] == 0) {
        nb.site_file[warp] = file;
        nb.site_line[warp] = line;
        w->site_aligned[a][warp] = aligned != 0;
    } else if ((aligned || w->site_aligned[a][warp]) &&
               other_site("", nb.site_file[warp], nb.site_line[warp], "", file, line)) {
        std::snprintf(
            why, sizeof why,
            "lane(s) %s of warp %d arrived at barrier %u at %s:%d: the .aligned form needs the whole "
            "warp at the same instruction",
            LaneList(nb.lanes[warp]).s, warp, a, nb.site_file[warp], nb.site_line[warp]);
        fault_(file, line, what, why);
    }
    if (nb.expected == 0) {
        nb.expected = expected;
        nb.what = what;
        w->nbar_open |= 1u << a;
        w->nbar_used |= 1u << a;
    }
    tsan_release(&nb.slot[nb.phase % Worker::kNbarSlots]); // arrival: release
    nb.lanes[warp] |= 1u << t->lane;
    t->nbar = (unsigned char)a;
    t->nbar_arrive = !sync;
    const unsigned phase = nb.phase;
    if ((nb.lanes[warp] | ws.exited) == ws.exist) nbar_count_warp(w, (int)a, warp, t->index);
    if (!sync) {
        // an arrive waits only for the other lanes of its warp, then goes on (no acquire)
        if ((nb.lanes[warp] >> t->lane) & 1u) block_wait(w, t, W_NBAR);
        return;
    }
    if (nb.phase == phase || ((nb.lanes[warp] >> t->lane) & 1u))
        block_wait(w, t, W_NBAR); // released by the thread that completes the phase (it sets nbar_phase)
    else
        t->nbar_phase = phase;                                  // this arrival completed the phase
    tsan_acquire(&nb.slot[t->nbar_phase % Worker::kNbarSlots]); // departure of a waiter: acquire
}
} // namespace ptx
} // namespace cudahost
