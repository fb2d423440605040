// cudahost execution engine: where the threads of a block meet. __syncthreads and the tiles larger than a warp,
// the warp operations (__shfl*_sync, votes, __activemask), the warp- and warpgroup-collective (.aligned)
// operations and the named barriers (bar.sync / bar.arrive); a waiting thread blocks its fiber (engine.cpp).
#include "engine.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cudahost {
namespace engine {

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

} // namespace engine

namespace {

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

} // namespace

namespace engine {

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

} // namespace engine

namespace {

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

} // namespace

namespace engine {

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

} // namespace engine

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

} // namespace cudahost

using namespace cudahost;

void __syncthreads() { (void)block_barrier(1); }
int __syncthreads_count(int predicate) { return block_barrier(predicate); }
int __syncthreads_and(int predicate)
{
    return block_barrier(predicate == 0) == 0; // no participating thread voted false
}
int __syncthreads_or(int predicate) { return block_barrier(predicate) != 0; }

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
