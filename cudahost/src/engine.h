// The cudahost execution engine's internals, shared by its files: a block's threads, warps, barriers and fibers
// (Worker), the context switch, and what the scheduler (engine.cpp), the barriers and warp operations
// (engine_sync.cpp) and the diagnostics (engine_diag.cpp) call of each other. Included by those files only.
#ifndef CUDAHOST_SRC_ENGINE_H
#define CUDAHOST_SRC_ENGINE_H

#include "internal.h"

#include <atomic>
#include <string>

#if defined(CUDAHOST_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(CUDAHOST_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

// The hand-written context switch is for x86-64; elsewhere (or with -DCUDAHOST_USE_UCONTEXT) swapcontext is used.
#if defined(__x86_64__) && !defined(CUDAHOST_USE_UCONTEXT)
#define CUDAHOST_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

#if defined(CUDAHOST_ASM_SWITCH)
extern "C" void cudahost_ctx_switch(void **save_sp, void *new_sp);
extern "C" void cudahost_ctx_trampoline();
#endif

namespace cudahost {
// The engine's names, shared by its files only (brought into cudahost below, as an unnamed namespace's are).
namespace engine {

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

extern __thread Worker *tls_worker CUDAHOST_TLS_;
extern __thread ThreadRec *tls_thread CUDAHOST_TLS_;
extern __thread Fiber *tls_fiber CUDAHOST_TLS_;

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

inline void rq_push(Worker *w, int idx)
{
    int pos = w->rq_head + w->rq_n;
    if (pos >= ci::kMaxThreadsPerBlock) pos -= ci::kMaxThreadsPerBlock;
    w->rq[pos] = idx;
    w->rq_n++;
}

// A blocked thread becomes runnable.
inline void release(Worker *w, int idx)
{
    rq_push(w, idx);
    w->th[idx].state = TS_READY;
}

// engine.cpp: the scheduler
void schedule_next(Worker *w, Fiber *from, bool idle);
// engine_sync.cpp: warp operations and barriers
bool warp_has_runnable(Worker *w, int warp, int self);
void complete_activemask(Worker *w, int warp, int self);
void warp_lane_exited(Worker *w, int warp);
void complete_barrier(Worker *w, int waiters_to_release);
void nbar_lane_exited(Worker *w, int warp);
// engine_diag.cpp: diagnostics (CUDAHOST_WARP_CHECK=error|warn|off|strict)
enum { WC_OFF = 0, WC_WARN, WC_ERROR, WC_STRICT };
std::string fmt_tid(const ThreadRec &t);
int warp_check_mode();
void warp_undefined_read(Worker *w, int warp, unsigned l, int src, unsigned em);
void warp_exited_in_mask(Worker *w, int warp, unsigned em);
void report_deadlock(Worker *w);

// A lane stops being runnable (it blocks or exits): lanes waiting in __activemask may now form their group.
inline void lane_idle(Worker *w, int warp)
{
    if (__builtin_expect(w->warps[warp].am != 0, 0) && !warp_has_runnable(w, warp, -1))
        complete_activemask(w, warp, -1);
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

inline void block_wait(Worker *w, ThreadRec *t, unsigned char why)
{
    t->state = TS_BLOCKED;
    t->wait = why;
    if (why != W_ACTIVEMASK) lane_idle(w, t->warp);
    schedule_next(w, t->fiber, false);
    t->state = TS_RUNNING;
    t->wait = W_NONE;
}

} // namespace engine
using namespace engine;
} // namespace cudahost

#endif
