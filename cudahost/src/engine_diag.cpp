// cudahost execution engine: its diagnostics. The undefined warp operations (CUDAHOST_WARP_CHECK) and the report
// of a deadlocked block, naming the kernel, the block and where each of its threads waits.
#include "engine.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cudahost {
namespace engine {

std::string fmt_tid(const ThreadRec &t)
{
    char b[64];
    std::snprintf(b, sizeof b, "(%u,%u,%u)", t.tid.x, t.tid.y, t.tid.z);
    return b;
}

// ---- undefined warp operations (CUDAHOST_WARP_CHECK=error|warn|off) ----------------------------------------------
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

} // namespace engine

namespace {

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

} // namespace

namespace engine {

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

} // namespace engine
} // namespace cudahost
