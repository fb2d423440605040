/* memfix verify: a candidate kernel against the reference, with defenses
 * (include/memfix/verify.h; the command is tools/cmd_verify.c). Knows no op:
 * the targets are the registry's (mf_op_desc.verify_targets).
 *
 * A target's run_case (src/ops/<op>.c) runs a built-in case exactly as
 * `memfix report` does, calling in place of the optimized entry a guard of the
 * candidate's type, which lists the call's buffers (mf_tb_buffer) and hands
 * them to mf_tb_guard: that copies the inputs into guarded buffers, calls the
 * candidate (mf_tb_candidate()) twice and checks guard bands, inputs, hidden
 * allocations and determinism, then hands the first result back to run_case,
 * which compares it with the reference and checks the scratch ceiling. The
 * defense that rejects a case comes from the guards or from the case's
 * mf_failure kind, never from its message. */
#define _GNU_SOURCE /* dlinfo, memfd-free socketpair, strsignal */
#include "memfix/verify.h"

#include "memfix/check.h"
#include "mf_backend.h"
#include "mf_internal.h"
#include "testbed.h"
#include "mem_defense.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef MF_HAVE_HOST_KERNELS

enum { GUARD_BYTES = 1024 }; /* a multiple of 256: the candidate's pointers keep cudaMalloc's alignment */

struct iso_session;

/* The state of one guarded call (thread-local: one verification per thread). */
typedef struct verify_state {
    void (*candidate)(void);
    char defense[MF_VERIFY_DEFENSE_MAX];
    char reason[256];
    int all_zero;        /* the candidate's output was all zeros */
    char dump_stem[200]; /* --dump: "<dir>/<target>-<case id>" of this case's inputs; "" when not dumping */
    /* measured by guarded_call: the tracked scratch peak of the calls and the fastest call's time (the first
     * call of a fresh worker pays its start-up: thread pool, first launch) */
    size_t peak;
    double first_seconds;
    int n_timed;
    /* mf_verify_lib: the worker session, the thread order of this run, the candidate's and memfix's times */
    struct iso_session *iso;
    int sched;
    double cand_seconds, own_seconds;
    /* mf_verify_lib, host backend: the worker's peak RSS growth during a request beyond its own copies of the
     * call's buffers, measured by memfix from /proc (the worst request of the case); checked against the
     * case's ceiling by run_once (iso_memory_verdict) */
    int mem_measured;
    size_t mem_excess, mem_growth, mem_allow;
} verify_state;
static _Thread_local verify_state *g_state;

typedef mf_status (*mem_info_fn)(size_t *, size_t *);
typedef mf_status (*dev_sync_fn)(void);

static mem_info_fn backend_mem_info(mf_context *ctx)
{
#ifdef MF_HAVE_CUDA
    if (mf_context_backend(ctx) == MF_BACKEND_CUDA) return mf_cuda_mem_get_info;
#endif
    (void)ctx;
    return mf_host_mem_get_info;
}

static dev_sync_fn backend_sync(mf_context *ctx)
{
#ifdef MF_HAVE_CUDA
    if (mf_context_backend(ctx) == MF_BACKEND_CUDA) return mf_cuda_device_synchronize;
#endif
    (void)ctx;
    return mf_host_device_synchronize;
}

/* Slack of the hidden-allocation check: allocator rounding in host mode; on a
 * GPU cudaMemGetInfo moves in pages of up to 2 MiB. */
static size_t hidden_slack(mf_context *ctx)
{
    return mf_context_backend(ctx) == MF_BACKEND_CUDA ? ((size_t)2 << 20) : (size_t)4096;
}

static mf_status reject(const char *defense, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static mf_status reject(const char *defense, const char *fmt, ...)
{
    verify_state *s = g_state;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
    snprintf(s->defense, sizeof s->defense, "%s", defense);
    return mf_set_error(MF_ERR_MISMATCH, "memfix verify", __FILE__, __LINE__, "%s: %s", defense, s->reason);
}

/* ---- guarded buffers --------------------------------------------------------------- */
typedef mf_tb_guarded guarded;

/* Byte i of a guard band: varied (a write of almost any byte changes it) and a NaN
 * wherever it is read as data: the byte pairs (lo, hi) at even offsets are bf16 NaNs
 * (hi & 0x7f == 0x7f, lo >= 0x81) and two pairs an f32 NaN, so a candidate that reads
 * past an input's end (a padded tile multiplying it by zero included) carries a NaN
 * into its result instead of finite garbage, as the suites' NaN guards do
 * (MF_TB_GUARD). Element sizes are even, so a trailing band keeps the parity. */
static unsigned char canary(size_t i)
{
    const unsigned m = (unsigned)(i * 151u + (i >> 8) * 7u);
    return (i & 1) ? (unsigned char)((m & 0x80u) | 0x7fu) : (unsigned char)(0x81u + m % 0x7fu);
}

static size_t page_bytes(void)
{
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* data == NULL: an output, pre-filled with NaNs of out_dtype (bf16 NaN 0x7fc0).
 * An input in host execution mode is paged (testbed.h): its first byte on a page
 * boundary and the allocation padded to the end of its last page, so that the
 * input-write defense can make every byte of it read-only (mem_defense.c). */
static mf_status guarded_make_dt(mf_context *ctx, guarded *g, const char *name, const void *data,
                                 size_t bytes, mf_dtype out_dtype)
{
    memset(g, 0, sizeof *g);
    g->name = name;
    g->bytes = bytes;
    if (bytes > SIZE_MAX / 4) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "%s: %zu bytes", name, bytes);
    const size_t total = bytes + 2 * (size_t)GUARD_BYTES;
    const size_t page = page_bytes();
    const int paged = data != NULL && mf_context_backend(ctx) == MF_BACKEND_HOST;
    /* paged: up to a page to align base + GUARD, then the guard, the data's whole pages, the trailing guard */
    const size_t alloc_bytes =
        paged ? page + 2 * (size_t)GUARD_BYTES + (bytes + page - 1) / page * page : total;
    g->image = (unsigned char *)malloc(total);
    if (g->image == NULL) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "host image of %zu bytes for %s", total, name);
    for (size_t i = 0; i < GUARD_BYTES; i++) {
        g->image[i] = canary(i);
        g->image[GUARD_BYTES + bytes + i] = canary(i + GUARD_BYTES);
    }
    if (data != NULL)
        memcpy(g->image + GUARD_BYTES, data, bytes);
    else if (out_dtype == MF_DTYPE_BF16)
        for (size_t i = 0; i + 2 <= bytes; i += 2) {
            g->image[GUARD_BYTES + i] = 0xc0; /* little-endian 0x7fc0 */
            g->image[GUARD_BYTES + i + 1] = 0x7f;
        }
    else
        mf_fill_nan_f32((float *)(void *)(g->image + GUARD_BYTES), bytes / sizeof(float));
    void *p = NULL;
    MF_TRY(mf_buffer_alloc(ctx, alloc_bytes, &p));
    g->alloc = (unsigned char *)p;
    g->base = g->alloc;
    if (paged) {
        g->base += (page - ((uintptr_t)g->alloc + GUARD_BYTES) % page) % page;
        g->paged = 1;
    }
    return mf_buffer_upload(ctx, g->base, g->image, total);
}

static mf_status guarded_make(mf_context *ctx, guarded *g, const char *name, const void *data, size_t bytes)
{
    return guarded_make_dt(ctx, g, name, data, bytes, MF_DTYPE_F32);
}

static void *guarded_ptr(const guarded *g) { return g->base + GUARD_BYTES; }

static void guarded_free(mf_context *ctx, guarded *g)
{
    if (g->alloc != NULL) mf_buffer_free(ctx, g->alloc);
    free(g->image);
    memset(g, 0, sizeof *g);
}

/* Downloads the whole buffer into 'tmp' (bytes + 2 guards) and checks the guards
 * (is_output: the interior is not compared) or everything (inputs). */
static mf_status guarded_check(mf_context *ctx, const guarded *g, unsigned char *tmp, int is_input)
{
    const size_t total = g->bytes + 2 * (size_t)GUARD_BYTES;
    MF_TRY(mf_buffer_download(ctx, tmp, g->base, total));
    for (size_t i = 0; i < GUARD_BYTES; i++)
        if (tmp[i] != g->image[i])
            return reject("guard-band", "wrote before %s: byte %lld relative to its start changed", g->name,
                          (long long)i - GUARD_BYTES);
    for (size_t i = GUARD_BYTES + g->bytes; i < total; i++)
        if (tmp[i] != g->image[i])
            return reject("guard-band", "wrote past the end of %s (%zu bytes): byte %zu changed", g->name,
                          g->bytes, i - GUARD_BYTES);
    if (is_input)
        for (size_t i = GUARD_BYTES; i < GUARD_BYTES + g->bytes; i++)
            if (tmp[i] != g->image[i])
                return reject("input-mutation", "changed input %s (byte %zu of %zu; inputs are read-only)",
                              g->name, i - GUARD_BYTES, g->bytes);
    return MF_OK;
}

/* ---- the hidden-allocation sampler -------------------------------------------------- */
typedef struct sampler {
    pthread_t thread;
    atomic_int stop;
    atomic_int started;
    mem_info_fn info;
    size_t max_used;
    int running;
} sampler;

static void sample(sampler *s)
{
    size_t f = 0, t = 0;
    if (s->info(&f, &t) == MF_OK && t >= f && t - f > s->max_used) s->max_used = t - f;
}

static void *sampler_main(void *arg)
{
    sampler *s = (sampler *)arg;
    const struct timespec pause = { 0, 50000 }; /* 50 us */
    sample(s);
    atomic_store(&s->started, 1);
    while (!atomic_load(&s->stop)) {
        sample(s);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void sampler_start(sampler *s, mem_info_fn info)
{
    memset(s, 0, sizeof *s);
    atomic_init(&s->stop, 0);
    atomic_init(&s->started, 0);
    s->info = info;
    sample(s);
    s->running = pthread_create(&s->thread, NULL, sampler_main, s) == 0;
    /* the sampler is running before the candidate is called */
    const struct timespec pause = { 0, 20000 };
    while (s->running && !atomic_load(&s->started)) nanosleep(&pause, NULL);
}

static size_t sampler_stop(sampler *s)
{
    atomic_store(&s->stop, 1);
    if (s->running) pthread_join(s->thread, NULL);
    s->running = 0;
    sample(s);
    return s->max_used;
}

/* ---- one guarded call of a candidate ------------------------------------------------ */
typedef mf_tb_call_fn call_fn;

/* Calls 'call' (the candidate on the guarded buffers), then checks the backend,
 * guards, inputs (bufs[0..n_in)) and hidden allocations; bufs[n_in..n) are outputs. */
static mf_status guarded_call(mf_context *ctx, call_fn call, const void *args, guarded *bufs, int n_in, int n,
                              unsigned char *tmp)
{
    /* the guarded copies were uploaded on the context's stream; the candidate
     * may launch on any stream (of its own runtime, on a GPU) */
    MF_TRY(mf_context_synchronize(ctx));
    MF_TRY(backend_sync(ctx)());
    mem_info_fn info = backend_mem_info(ctx);
    size_t free0 = 0, total0 = 0;
    MF_TRY(info(&free0, &total0));
    const size_t used0 = total0 - free0;
    mf_mem_stats st0, st1;
    MF_TRY(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st0));

    sampler smp;
    mf_tb_memdef md; /* memory defenses: scratch guard, read-only inputs, untracked memory (mem_defense.h) */
    mf_tb_memdef_begin(ctx, bufs, n_in, mf_tb_candidate(), &md);
    sampler_start(&smp, info);
    mf_clear_error();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mf_status s = call(ctx, args, bufs);
    mf_status sync = backend_sync(ctx)();
    if (sync == MF_OK) sync = mf_context_synchronize(ctx);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const size_t max_used = sampler_stop(&smp);
    mf_tb_memdef_end(ctx, &md);
    if (md.defense != NULL) return reject(md.defense, "%s", md.reason);
    const double took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (g_state->n_timed++ == 0 || took < g_state->first_seconds) g_state->first_seconds = took;
    if (s != MF_OK)
        return reject("error", "the candidate returned %s: %s", mf_status_name(s),
                      mf_last_error()[0] ? mf_last_error() : "(no message)");
    if (sync != MF_OK)
        return reject("error", "the device reported an error after the call: %s", mf_last_error());

    for (int i = 0; i < n; i++)
        if (bufs[i].base != NULL)
            MF_TRY(guarded_check(ctx, &bufs[i], tmp, i < n_in)); /* NULL: optional input */

    MF_TRY(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st1));
    const size_t tracked = st1.peak > st0.current ? st1.peak - st0.current : 0;
    if (tracked > g_state->peak) g_state->peak = tracked;
    const size_t grew = max_used > used0 ? max_used - used0 : 0;
    if (grew > tracked + hidden_slack(ctx))
        return reject("hidden-allocation",
                      "device memory in use grew by %zu bytes during the call, but only %zu bytes of scratch "
                      "went through the context's allocator (mf_scratch_alloc)",
                      grew, tracked);
    mf_tb_memdef_charge(ctx, &md);
    /* the peak a worker reports includes the untracked bytes just charged (mem_defense.h) */
    mf_mem_stats st2;
    if (mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st2) == MF_OK && st2.peak > st0.current &&
        st2.peak - st0.current > g_state->peak)
        g_state->peak = st2.peak - st0.current;
    return MF_OK;
}

/* Runs the candidate 'runs' times (1 or 2) on the same guarded inputs (outputs
 * re-filled with NaN in between), checks each call and that both runs give the
 * same bits; leaves the first run's outputs (bufs[n_in..n), concatenated) in
 * out_host and, when images != NULL, every buffer's whole guarded image after
 * the first call in images[i] (NULL for a buffer not given). */
static mf_status guarded_runs(mf_context *ctx, call_fn call, const void *args, guarded *bufs, int n_in, int n,
                              void *out_host, size_t out_bytes, int runs, unsigned char **images,
                              void *second_host)
{
    size_t max_total = 0;
    for (int i = 0; i < n; i++)
        if (bufs[i].bytes + 2 * (size_t)GUARD_BYTES > max_total)
            max_total = bufs[i].bytes + 2 * (size_t)GUARD_BYTES;
    unsigned char *tmp = (unsigned char *)malloc(max_total);
    unsigned char *second = (unsigned char *)malloc(out_bytes ? out_bytes : 1);
    mf_status s = MF_OK;
    if (tmp == NULL || second == NULL) {
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host copies");
        goto done;
    }
    for (int run = 0; run < runs && s == MF_OK; run++) {
        for (int o = n_in; o < n && run == 1 && s == MF_OK; o++)
            if (bufs[o].base != NULL) /* NULL: an optional output not asked for */
                s = mf_buffer_upload(ctx, bufs[o].base, bufs[o].image,
                                     bufs[o].bytes + 2 * (size_t)GUARD_BYTES);
        if (s != MF_OK || (s = guarded_call(ctx, call, args, bufs, n_in, n, tmp)) != MF_OK) break;
        for (int i = 0; i < n && run == 0 && images != NULL && s == MF_OK; i++)
            if (bufs[i].base != NULL) {
                images[i] = (unsigned char *)malloc(bufs[i].bytes + 2 * (size_t)GUARD_BYTES);
                s = images[i] == NULL
                        ? mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "images")
                        : mf_buffer_download(ctx, images[i], bufs[i].base,
                                             bufs[i].bytes + 2 * (size_t)GUARD_BYTES);
            }
        if (s != MF_OK) break;
        unsigned char *dst = run == 0 ? (unsigned char *)out_host : second;
        for (int o = n_in; o < n && s == MF_OK; o++) {
            if (bufs[o].base == NULL) continue;
            s = mf_buffer_download(ctx, dst, guarded_ptr(&bufs[o]), bufs[o].bytes);
            dst += bufs[o].bytes;
        }
    }
    if (s == MF_OK && runs > 1 && second_host != NULL) memcpy(second_host, second, out_bytes);
    if (s == MF_OK && runs > 1 && memcmp(out_host, second, out_bytes) != 0) {
        size_t at = 0;
        const unsigned char *a = (const unsigned char *)out_host;
        while (at < out_bytes && a[at] == second[at]) at++;
        int o = n_in; /* the output holding byte 'at' of the concatenation (NULL outputs hold none) */
        for (; o < n - 1; o++) {
            if (bufs[o].base == NULL) continue;
            if (at < bufs[o].bytes) break;
            at -= bufs[o].bytes;
        }
        s = reject("determinism",
                   "a second call on the same inputs (outputs re-filled with NaN) gave different bits "
                   "(first at byte %zu of %s)",
                   at, bufs[o].name);
    }
    if (s == MF_OK) {
        const float *f = (const float *)out_host;
        int zero = 1;
        for (size_t i = 0; i < out_bytes / sizeof(float) && zero; i++) zero = f[i] == 0.0f;
        g_state->all_zero = zero;
    }
done:
    free(second);
    free(tmp);
    return s;
}

/* ---- memfix verify --dump: a case's inputs (removed again when the case passes) ------------------ */
static void dump_input(const char *name, const void *data, size_t bytes)
{
    if (g_state == NULL || g_state->dump_stem[0] == '\0') return;
    char suffix[64];
    snprintf(suffix, sizeof suffix, "-input-%s.bin", name);
    (void)mf_tb_dump_raw(g_state->dump_stem, suffix, data, bytes);
}

static mf_status iso_guard(mf_context *ctx, const mf_tb_buffer *sp, int n_in, int n, const void *args);

/* ---- the guard (testbed.h) ---------------------------------------------------------------- */
void (*mf_tb_candidate(void))(void) { return g_state != NULL ? g_state->candidate : NULL; }

/* Guarded copies of sp[0..n_in) (inputs) and sp[n_in..n) (outputs), the
 * candidate called twice through 'call' with every check, then the first run's
 * outputs uploaded to the hook's buffers. NULL buffers (optional inputs and
 * outputs not given) are skipped: bufs[i].base stays NULL and the candidate
 * gets NULL (gptr). */
mf_status mf_tb_guard(mf_context *ctx, const mf_tb_buffer *sp, int n_in, int n, mf_tb_call_fn call,
                      const void *args, mf_tb_guarded *bufs)
{
    memset(bufs, 0, sizeof(guarded) * (size_t)n);
    if (g_state != NULL && g_state->iso != NULL) return iso_guard(ctx, sp, n_in, n, args);
    if (g_state == NULL || g_state->candidate == NULL)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "no candidate under verification on this thread (call mf_verify)");
    size_t out_bytes = 0;
    for (int i = n_in; i < n; i++) out_bytes += sp[i].dev != NULL ? sp[i].bytes : 0;
    unsigned char *out = (unsigned char *)malloc(out_bytes ? out_bytes : 1);
    mf_status s = out != NULL
                      ? MF_OK
                      : mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host outputs");
    for (int i = 0; i < n && s == MF_OK; i++) {
        if (i < n_in) {
            if (sp[i].dev == NULL || sp[i].bytes == 0) continue;
            void *h = malloc(sp[i].bytes);
            if (h == NULL) {
                s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host copy of %s",
                                 sp[i].name);
                break;
            }
            s = mf_buffer_download(ctx, h, sp[i].dev, sp[i].bytes);
            if (s == MF_OK) dump_input(sp[i].name, h, sp[i].bytes);
            if (s == MF_OK) s = guarded_make(ctx, &bufs[i], sp[i].name, h, sp[i].bytes);
            free(h);
        } else if (sp[i].dev != NULL) { /* NULL: an optional output not asked for */
            s = guarded_make_dt(ctx, &bufs[i], sp[i].name, NULL, sp[i].bytes, sp[i].dtype);
        }
    }
    if (s == MF_OK) s = guarded_runs(ctx, call, args, bufs, n_in, n, out, out_bytes, 2, NULL, NULL);
    unsigned char *p = out;
    for (int i = n_in; i < n && s == MF_OK; i++) {
        if (sp[i].dev == NULL) continue;
        s = mf_buffer_upload(ctx, (void *)(uintptr_t)sp[i].dev, p, sp[i].bytes);
        p += sp[i].bytes;
    }
    for (int i = 0; i < n; i++) guarded_free(ctx, &bufs[i]);
    free(out);
    return s;
}

void *mf_tb_ptr(mf_tb_guarded *bufs, int i) { return bufs[i].base != NULL ? guarded_ptr(&bufs[i]) : NULL; }

/* ---- the driver -------------------------------------------------------------------- */
/* The target named 'name' among the registered ops' verify targets; NULL if none. */
static const mf_verify_target *find_target(const char *name, const mf_op_desc **op_out)
{
    size_t n_ops = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    for (size_t i = 0; name != NULL && i < n_ops; i++) {
        if (ops[i] == NULL) continue;
        for (int t = 0; t < ops[i]->n_verify_targets; t++)
            if (strcmp(ops[i]->verify_targets[t].name, name) == 0) {
                if (op_out != NULL) *op_out = ops[i];
                return &ops[i]->verify_targets[t];
            }
    }
    return NULL;
}

int mf_verify_supported(const char *op) { return find_target(op, NULL) != NULL; }

static char g_supported[1024];
static pthread_once_t g_supported_once = PTHREAD_ONCE_INIT;

static void list_supported(void)
{
    size_t n_ops = 0, len = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    for (size_t i = 0; i < n_ops; i++)
        for (int t = 0; ops[i] != NULL && t < ops[i]->n_verify_targets; t++) {
            const int w = snprintf(g_supported + len, sizeof g_supported - len, "%s%s", len ? ", " : "",
                                   ops[i]->verify_targets[t].name);
            if (w < 0 || (size_t)w >= sizeof g_supported - len) return;
            len += (size_t)w;
        }
}

const char *mf_verify_supported_ops(void)
{
    pthread_once(&g_supported_once, list_supported);
    return g_supported;
}

int mf_verify_n_cases(const char *op)
{
    const mf_op_desc *desc = NULL;
    const mf_verify_target *t = find_target(op, &desc);
    if (t == NULL) return -1;
    return t->n_cases != NULL ? t->n_cases() : desc->n_cases;
}

int mf_verify_default_cases(const char *op)
{
    const mf_verify_target *t = find_target(op, NULL);
    if (t == NULL) return -1;
    return t->default_cases > 4 ? t->default_cases : 4;
}

/* ---- cases by id (fixed, random, large) ------------------------------------ */
/* One case of target tg by id: run_id where the op has it, else run_case (fixed ids only). */
static mf_status run_case_id(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void),
                             const mf_case_id *id, uint64_t salt, mf_case_result *out)
{
    if (tg->run_id != NULL) return tg->run_id(ctx, candidate, id, salt, out);
    if (id->kind != MF_CASE_FIXED) {
        memset(out, 0, sizeof *out);
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "target '%s' has no case generator", tg->name);
    }
    return tg->run_case(ctx, candidate, id->index, salt, out);
}

/* --dump (MF_VERIFY_DUMP_DIR, set by memfix verify --dump): name this case's dumps after the target and the
 * case id (the second sweep's with "-rerun"). */
static void dump_begin(const mf_verify_target *tg, const mf_case_id *id, uint64_t salt, verify_state *st)
{
    const char *dir = getenv("MF_VERIFY_DUMP_DIR");
    if (dir == NULL || dir[0] == '\0') return;
    char cid[32];
    mf_case_id_format(id, cid, sizeof cid);
    snprintf(st->dump_stem, sizeof st->dump_stem, "%.120s/%.40s-%s%s", dir, tg->name, cid,
             salt ? "-rerun" : "");
    mf_tb_set_dump_stem(st->dump_stem);
}

/* A passing case leaves no dump: its input files are removed. */
static void dump_end(const mf_verify_row *row, verify_state *st)
{
    mf_tb_set_dump_stem(NULL);
    if (st->dump_stem[0] == '\0' || !row->result.pass) return;
    const char *slash = strrchr(st->dump_stem, '/');
    if (slash == NULL) return;
    char dir[200];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - st->dump_stem), st->dump_stem);
    const char *base = slash + 1;
    char pat[240];
    snprintf(pat, sizeof pat, "%s-input-", base);
    DIR *d = opendir(dir);
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, pat, strlen(pat)) != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        (void)remove(path);
    }
    closedir(d);
}

/* ==== isolation: the candidate in a worker process =========================================== *
 *
 * mf_verify_lib keeps everything that decides the verdict in this process: run_case, the reference, the
 * tolerance rows, the comparison, the exit status. At the guarded call (mf_tb_guard) it sends the call to a
 * worker (fork + exec of memfix-verify-worker, its own process group, one per thread order): the target's name
 * and POD arguments (plus the one host struct they point to), the input bytes and the buffer layout. The
 * worker dlopens the library, builds the guarded buffers, calls the candidate through the target's call
 * adapter with the in-process defenses (guarded_runs), and answers with its verdict, the scratch peak and the
 * times, every buffer's whole guarded image after the first call and the second call's outputs. This process
 * then checks the canaries, the inputs and determinism again itself, takes the outputs from the images,
 * replays the scratch peak on its own context (so run_case's ceiling check sees it) and returns to run_case,
 * which compares with the reference; it also measures the worker's resident memory around the request
 * (/proc, run_once checks it against the case's ceiling) and times the request, and the same request for
 * memfix's own entry (the time column).
 * A worker that exits, dies on a signal, does not answer within the time limit or answers garbage is killed
 * (its whole process group) and the case is rejected by 'exit', 'crash', 'timeout' or 'protocol'. */

enum { WIRE_HELLO = 0x4d465648u, WIRE_ACK = 0x4d465641u, WIRE_REQ = 0x4d465651u, WIRE_ANS = 0x4d465652u };
enum { WIRE_NAME = 32, MAX_SCHED = 18, SANITIZER_EXIT = 66 };
enum { ACK_OK = 0, ACK_LOAD = 1, ACK_BACKEND = 2 };

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} wbuf;

static void wb_put(wbuf *b, const void *p, size_t n)
{
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *q = (unsigned char *)realloc(b->p, cap);
        if (q == NULL) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void wb_u32(wbuf *b, uint32_t v) { wb_put(b, &v, sizeof v); }
static void wb_u64(wbuf *b, uint64_t v) { wb_put(b, &v, sizeof v); }
static void wb_f64(wbuf *b, double v) { wb_put(b, &v, sizeof v); }
static void wb_str(wbuf *b, const char *s)
{
    const uint32_t n = s != NULL ? (uint32_t)strlen(s) : 0;
    wb_u32(b, n);
    wb_put(b, s, n);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 0 when all n bytes were sent */
static int io_send(int fd, const void *p, size_t n)
{
    const unsigned char *c = (const unsigned char *)p;
    while (n > 0) {
        const ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 0: all n bytes read; 1: end of file or error; 2: the deadline passed (deadline <= 0: none) */
static int io_recv(int fd, void *p, size_t n, double deadline)
{
    unsigned char *c = (unsigned char *)p;
    while (n > 0) {
        if (deadline > 0) {
            const double left = deadline - now_s();
            if (left <= 0) return 2;
            struct pollfd pf = { fd, POLLIN, 0 };
            const int r = poll(&pf, 1, left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1);
            if (r < 0 && errno == EINTR) continue;
            if (r == 0) continue;
            if (r < 0) return 1;
        }
        const ssize_t got = recv(fd, c, n, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 1;
        c += got;
        n -= (size_t)got;
    }
    return 0;
}

/* a string of at most cap-1 bytes (longer: an error) */
static int io_recv_str(int fd, char *dst, size_t cap, double deadline)
{
    uint32_t len = 0;
    int r = io_recv(fd, &len, sizeof len, deadline);
    if (r != 0) return r;
    if (len >= cap) return 3;
    if ((r = io_recv(fd, dst, len, deadline)) != 0) return r;
    dst[len] = '\0';
    return 0;
}

/* ---- the parent's side ------------------------------------------------------------------------------------ */
typedef struct worker_proc {
    pid_t pid;
    int fd;
    int alive;
} worker_proc;

typedef struct schedule {
    char order[40]; /* CUDAHOST_THREAD_ORDER */
    int workers;    /* CUDAHOST_WORKERS */
    char label[40];
} schedule;

typedef struct iso_session {
    const mf_verify_target *tg;
    const char *lib, *symbol;
    mf_backend backend;
    double timeout_s;
    const char *sanitize;
    char worker_path[4096];
    int n_sched;
    schedule sched[MAX_SCHED];
    worker_proc w[MAX_SCHED];
    char load_error[512]; /* the worker refused the library (a usage error) */
    int mem_state;        /* the worker's memory from /proc: 0 not tried yet, 1 measured, -1 unavailable */
    int worker_sanitized; /* the worker is built with a sanitizer: its RSS (shadow, quarantine) is not measured */
    int load_kind;
} iso_session;

static void worker_kill(worker_proc *w)
{
    if (w->pid > 0) {
        kill(-w->pid, SIGKILL);
        kill(w->pid, SIGKILL);
        int st;
        while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    if (w->fd >= 0) close(w->fd);
    w->pid = -1;
    w->fd = -1;
    w->alive = 0;
}

/* ---- the parent's own defenses against its workers (what the red team's candidates tried) ------- *
 * A candidate runs with the user's rights, so it can signal memfix verify (kill(getppid(), SIGTERM): no verdict
 * at all) and, through /proc/<pid>/fd/1 or /proc/<pid>/mem, write into verify's output or memory. While
 * workers run, verify (1) is not dumpable (prctl PR_SET_DUMPABLE 0: its /proc/<pid>/fd and mem are root's,
 * ptrace attach is refused), and (2) catches every catchable terminating or stopping signal: one sent by a
 * process of a worker's process group is ignored and rejects the case being run by 'protocol'; any other
 * (a user's Ctrl-C, a `timeout`, the terminal closing) takes its default action, and where that ends verify,
 * every worker's process group is killed first: a worker runs in its own process group, which the terminal's
 * Ctrl-C does not reach. SIGKILL and SIGSTOP cannot be caught: each worker also dies with verify
 * (PR_SET_PDEATHSIG, set in worker_start), so nothing of a run outlives it (docs/verify.md). */
static iso_session *volatile g_sig_session;
static volatile sig_atomic_t g_tamper_sig;
static volatile sig_atomic_t g_tamper_pid;

static const int g_guarded_signals[] = { SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGUSR1,   SIGUSR2,
                                         SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU, SIGVTALRM, SIGPROF,
                                         SIGXCPU, SIGXFSZ, SIGIO,   SIGPWR,  SIGPIPE };
enum { N_GUARDED_SIGNALS = (int)(sizeof g_guarded_signals / sizeof g_guarded_signals[0]) };

static int from_worker(pid_t from)
{
    iso_session *is = g_sig_session;
    if (is == NULL || from <= 0) return 0;
    const pid_t grp = getpgid(from);
    for (int i = 0; i < MAX_SCHED; i++)
        if (is->w[i].pid > 0 && (from == is->w[i].pid || grp == is->w[i].pid)) return 1;
    return 0;
}

/* Kills every worker's process group (async-signal-safe: from the signal handler, before verify dies). */
static void kill_workers_now(void)
{
    iso_session *is = g_sig_session;
    if (is == NULL) return;
    for (int i = 0; i < MAX_SCHED; i++)
        if (is->w[i].pid > 0) {
            kill(-is->w[i].pid, SIGKILL);
            kill(is->w[i].pid, SIGKILL);
        }
}

/* the dispositions verify found, per signal number (those it replaced while workers run) */
static struct sigaction g_sig_old[65];

static void parent_signal(int sig, siginfo_t *si, void *uc)
{
    if (si != NULL && (si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL) &&
        from_worker(si->si_pid)) {
        g_tamper_sig = sig;
        g_tamper_pid = (sig_atomic_t)si->si_pid;
        return;
    }
    /* not from a candidate: what would have happened without verify's handler */
    const struct sigaction *old = sig > 0 && sig < 65 ? &g_sig_old[sig] : NULL;
    if (old != NULL && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction != NULL) {
        old->sa_sigaction(sig, si, uc);
        return;
    }
    if (old != NULL && !(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN) return;
    if (old != NULL && !(old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_DFL &&
        old->sa_handler != NULL) {
        old->sa_handler(sig);
        return;
    }
    /* the default action, delivered when this handler returns (sig is blocked while it runs); it ends verify
     * except for the stop signals */
    if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) kill_workers_now();
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    sigemptyset(&d.sa_mask);
    sigaction(sig, &d, NULL);
    kill(getpid(), sig);
}

typedef struct parent_guard {
    int dumpable;
    int sigs[N_GUARDED_SIGNALS + 64], n_sigs;
} parent_guard;

static void parent_guard_arm(parent_guard *pg, iso_session *is)
{
    g_tamper_sig = 0;
    g_sig_session = is;
    pg->dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = parent_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    pg->n_sigs = 0;
    for (int i = 0; i < N_GUARDED_SIGNALS; i++) pg->sigs[pg->n_sigs++] = g_guarded_signals[i];
    for (int sig = SIGRTMIN; sig <= SIGRTMAX && sig < 65; sig++) pg->sigs[pg->n_sigs++] = sig;
    for (int i = 0; i < pg->n_sigs; i++) sigaction(pg->sigs[i], &sa, &g_sig_old[pg->sigs[i]]);
}

static void parent_guard_disarm(parent_guard *pg)
{
    for (int i = 0; i < pg->n_sigs; i++) sigaction(pg->sigs[i], &g_sig_old[pg->sigs[i]], NULL);
    if (pg->dumpable > 0) prctl(PR_SET_DUMPABLE, pg->dumpable, 0, 0, 0);
    g_sig_session = NULL;
}

/* A signal a worker sent to verify during the call just made: the case's rejection (else MF_OK). */
static mf_status tamper_check(void)
{
    const int sig = g_tamper_sig;
    if (sig == 0) return MF_OK;
    g_tamper_sig = 0;
    return reject(
        "protocol",
        "the candidate's process (pid %d) sent signal %d (%s) to memfix verify, which ignored it: a "
        "candidate must leave its caller alone",
        (int)g_tamper_pid, sig, strsignal(sig));
}

/* The worker w stopped answering ('what' happened while it ...): reaps it and rejects the case by the reason. */
static mf_status worker_lost(iso_session *is, worker_proc *w, int rc, const char *what)
{
    const schedule *sc = &is->sched[g_state->sched];
    if (rc == 2) {
        worker_kill(w);
        return reject("timeout",
                      "no answer within %g s while %s (%s): an endless loop in host code or in a kernel? "
                      "The worker's process group was killed (--timeout)",
                      is->timeout_s, what, sc->label);
    }
    int st = 0, reaped = 0;
    if (rc == 1) /* end of file: the process is exiting; give it a moment */
        for (int i = 0; i < 200 && !reaped; i++) {
            const pid_t r = waitpid(w->pid, &st, WNOHANG);
            if (r == w->pid)
                reaped = 1;
            else {
                const struct timespec pause = { 0, 10 * 1000 * 1000 };
                nanosleep(&pause, NULL);
            }
        }
    if (reaped) {
        kill(-w->pid, SIGKILL); /* whatever it left behind */
        w->pid = -1;
    }
    worker_kill(w);
    if (reaped && WIFEXITED(st)) {
        if (is->sanitize != NULL && WEXITSTATUS(st) == SANITIZER_EXIT)
            return reject("sanitizer",
                          "the %s sanitizer reported an error while %s (%s; its report is on stderr)",
                          is->sanitize, what, sc->label);
        return reject("exit",
                      "the candidate's process exited with status %d while %s (%s): a candidate must return, "
                      "never exit",
                      WEXITSTATUS(st), what, sc->label);
    }
    if (reaped && WIFSIGNALED(st))
        return reject("crash", "the candidate's process was killed by signal %d (%s) while %s (%s)",
                      WTERMSIG(st), strsignal(WTERMSIG(st)), what, sc->label);
    return reject("protocol",
                  "the worker's answer was malformed while %s (%s): something in its process wrote "
                  "into verify's socket",
                  what, sc->label);
}

extern char **environ;

/* environ without the variables the schedule sets, plus them (built before fork: exec's child may not
 * allocate). With --sanitize, the sanitizer's options keep the user's and add halt_on_error and exitcode.
 * CUDA_MODULE_LOADING=EAGER: on a GPU every module loads when its runtime starts (before the calls, see
 * mf_verify_worker_main), not at a kernel's first launch inside a measured call, where the device memory
 * the loader takes would count as a hidden allocation. */
static char **schedule_env(const iso_session *is, const schedule *sc, char *own[4])
{
    size_t n = 0;
    while (environ[n] != NULL) n++;
    char **env = (char **)calloc(n + 5, sizeof *env);
    if (env == NULL) return NULL;
    const char *var = is->sanitize == NULL                  ? NULL
                      : strcmp(is->sanitize, "thread") == 0 ? "TSAN_OPTIONS="
                                                            : "ASAN_OPTIONS=";
    size_t k = 0;
    const char *user = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "CUDAHOST_THREAD_ORDER=", 22) == 0 ||
            strncmp(environ[i], "CUDAHOST_WORKERS=", 17) == 0 ||
            strncmp(environ[i], "CUDA_MODULE_LOADING=", 20) == 0)
            continue;
        if (var != NULL && strncmp(environ[i], var, 13) == 0) {
            user = environ[i] + 13;
            continue;
        }
        env[k++] = environ[i];
    }
    own[0] = own[1] = own[2] = NULL;
    own[3] = strdup("CUDA_MODULE_LOADING=EAGER");
    if (asprintf(&own[0], "CUDAHOST_THREAD_ORDER=%s", sc->order) < 0) own[0] = NULL;
    if (asprintf(&own[1], "CUDAHOST_WORKERS=%d", sc->workers) < 0) own[1] = NULL;
    if (var != NULL && asprintf(&own[2], "%s%s%shalt_on_error=1:exitcode=%d", var, user ? user : "",
                                user ? ":" : "", SANITIZER_EXIT) < 0)
        own[2] = NULL;
    for (int i = 0; i < 4; i++)
        if (own[i] != NULL) env[k++] = own[i];
    env[k] = NULL;
    return env;
}

/* Starts the worker of schedule i and loads the library there. MF_OK, or a rejection (the worker died or
 * hung while loading: the library's constructor), or MF_ERR_INVALID_ARGUMENT / MF_ERR_BACKEND_UNAVAILABLE
 * when the worker refused the library (is->load_error says why). */
static mf_status worker_start(iso_session *is, int i, double deadline)
{
    worker_proc *w = &is->w[i];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        MF_FAIL(MF_ERR_BACKEND, "socketpair: %s", strerror(errno));
    char *own[4] = { NULL, NULL, NULL, NULL };
    char **env = schedule_env(is, &is->sched[i], own);
    char *argv[] = { is->worker_path, (char *)"--verify-worker", NULL };
    const pid_t verify_pid = getpid();
    const pid_t pid = env != NULL ? fork() : -1;
    if (pid == 0) {
        /* the child: its own process group (killed as a whole), killed when verify dies however it dies (even
         * by SIGKILL; checked once more in case verify died before the prctl), the socket on fd 3, stdout ->
         * stderr so that nothing the candidate prints reaches verify's output */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != verify_pid) _exit(127);
        if (dup2(sv[1], 3) < 0 || dup2(2, 1) < 0) _exit(127);
        execve(is->worker_path, argv, env);
        _exit(127);
    }
    for (int k = 0; k < 4; k++) free(own[k]);
    free(env);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        MF_FAIL(MF_ERR_BACKEND, "fork: %s", strerror(errno));
    }
    setpgid(pid, pid); /* also here: no window in which a kill of the group misses it */
    w->pid = pid;
    w->fd = sv[0];
    w->alive = 1;
    wbuf b = { 0 };
    wb_u32(&b, WIRE_HELLO);
    wb_u32(&b, (uint32_t)is->backend);
    wb_str(&b, is->lib);
    wb_str(&b, is->symbol);
    wb_str(&b, is->tg->name);
    const int sent = b.oom ? -1 : io_send(w->fd, b.p, b.n);
    free(b.p);
    if (sent != 0) return worker_lost(is, w, 1, "loading the library");
    uint32_t magic = 0, kind = 0;
    char msg[512], san[16];
    int rc = io_recv(w->fd, &magic, sizeof magic, deadline);
    if (rc == 0 && magic != WIRE_ACK) rc = 3;
    if (rc == 0) rc = io_recv(w->fd, &kind, sizeof kind, deadline);
    if (rc == 0) rc = io_recv_str(w->fd, msg, sizeof msg, deadline);
    if (rc == 0) rc = io_recv_str(w->fd, san, sizeof san, deadline);
    if (rc != 0) /* an exec that failed exits 127 before the hello; a constructor may exit, crash or hang */
        return worker_lost(is, w, rc, "loading the library (its constructors run then)");
    if (kind != ACK_OK) {
        snprintf(is->load_error, sizeof is->load_error, "%s", msg);
        is->load_kind = (int)kind;
        worker_kill(w);
        return mf_set_error(kind == ACK_BACKEND ? MF_ERR_BACKEND_UNAVAILABLE : MF_ERR_INVALID_ARGUMENT,
                            "memfix verify", __FILE__, __LINE__, "%s", msg);
    }
    is->worker_sanitized = san[0] != '\0';
    if (is->sanitize != NULL && strcmp(is->sanitize, san) != 0) {
        snprintf(is->load_error, sizeof is->load_error,
                 "the worker %.300s is not built with the %s sanitizer (%s): build the %s preset "
                 "(cmake --preset %s) and point MF_VERIFY_WORKER at its bin/memfix-verify-worker",
                 is->worker_path, is->sanitize, san[0] ? san : "none",
                 is->sanitize[0] == 't' ? "tsan" : "asan", is->sanitize[0] == 't' ? "tsan" : "asan");
        is->load_kind = ACK_BACKEND;
        worker_kill(w);
        return mf_set_error(MF_ERR_BACKEND_UNAVAILABLE, "memfix verify", __FILE__, __LINE__, "%s",
                            is->load_error);
    }
    return MF_OK;
}

/* The parent's checks of one buffer's image: the canaries (all) and the data (inputs, against 'data'). */
static mf_status image_check(const unsigned char *img, const char *name, size_t bytes, const void *data)
{
    for (size_t i = 0; i < GUARD_BYTES; i++)
        if (img[i] != canary(i))
            return reject("guard-band", "wrote before %s: byte %lld relative to its start changed", name,
                          (long long)i - GUARD_BYTES);
    for (size_t i = 0; i < GUARD_BYTES; i++)
        if (img[GUARD_BYTES + bytes + i] != canary(i + GUARD_BYTES))
            return reject("guard-band", "wrote past the end of %s (%zu bytes): byte %zu changed", name, bytes,
                          bytes + i);
    if (data != NULL && memcmp(img + GUARD_BYTES, data, bytes) != 0) {
        size_t at = 0;
        while (((const unsigned char *)data)[at] == img[GUARD_BYTES + at]) at++;
        return reject("input-mutation", "changed input %s (byte %zu of %zu; inputs are read-only)", name, at,
                      bytes);
    }
    return MF_OK;
}

/* ---- measured by memfix, outside the worker: its memory (/proc) and the round trips' wall time --------------- */
/* A request's buffers are held by the worker in at most this many copies: the received input, the host
 * image and the guarded device buffer of each, the images sent back and the answer holding them, the two
 * runs' outputs, one download buffer (the page padding and the guards counted in each). */
enum { MEM_COPIES = 7 };
/* cudahost's launches (per-block shared memory, the fibers' stacks, the thread pool's first start), the
 * allocator's arenas, the worker's small allocations and code pages touched for the first time (the largest
 * growth of the example candidates' workers is ~6 MiB) */
static const size_t MEM_SLACK = (size_t)16 << 20;

/* Resets pid's peak resident set (VmHWM) to its current one (Linux: "5" to /proc/PID/clear_refs); 0 on
 * success. */
static int proc_reset_hwm(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const int ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok ? 0 : -1;
}

/* The "VmRSS:" or "VmHWM:" line of /proc/PID/status in bytes; 0 on success. */
static int proc_vm_bytes(pid_t pid, const char *key, size_t *bytes)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL) return -1;
    int r = -1;
    const size_t k = strlen(key);
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, key, k) == 0) {
            unsigned long long kb = 0;
            if (sscanf(line + k, "%llu", &kb) == 1) {
                *bytes = (size_t)kb * 1024u;
                r = 0;
            }
            break;
        }
    fclose(f);
    return r;
}

/* run_once's check of the memory memfix measured (host backend): the worker's peak RSS growth beyond its
 * own copies of the buffers must stay within the case's scratch ceiling + MEM_SLACK. */
static void iso_memory_verdict(verify_state *st, const mf_case_result *r)
{
    if (!st->mem_measured || st->defense[0] != '\0') return;
    size_t limit = 0;
    if (!mf_size_add(r->ceiling_bytes, MEM_SLACK, &limit)) limit = SIZE_MAX;
    if (st->mem_excess > limit)
        (void)reject(
            "process-memory",
            "memory measured outside the candidate (the worker's peak RSS, /proc) grew by %zu bytes "
            "during a call, which exceeds its copies of the buffers (%zu) + the scratch ceiling (%zu) "
            "+ %zu of slack",
            st->mem_growth, st->mem_allow, r->ceiling_bytes, MEM_SLACK);
}

typedef struct answer {
    int32_t status;
    char defense[MF_VERIFY_DEFENSE_MAX], reason[256];
    uint64_t peak;
    double cand, own;
} answer;

/* One answer of the worker: its verdict, then (status MF_OK) every present buffer's image after the first
 * call into img[i] and, with runs == 2, the second run's outputs (out_bytes) into *second. 0, io_recv's
 * codes (3: malformed), or 4: out of memory. */
static int recv_answer(int fd, const mf_tb_buffer *sp, int n_in, int n, int runs, size_t out_bytes,
                       double deadline, answer *a, unsigned char **img, unsigned char **second)
{
    uint32_t magic = 0;
    int rc = io_recv(fd, &magic, sizeof magic, deadline);
    if (rc == 0 && magic != WIRE_ANS) rc = 3;
    if (rc == 0) rc = io_recv(fd, &a->status, sizeof a->status, deadline);
    if (rc == 0) rc = io_recv(fd, a->defense, sizeof a->defense, deadline);
    if (rc == 0) rc = io_recv(fd, a->reason, sizeof a->reason, deadline);
    if (rc == 0) rc = io_recv(fd, &a->peak, sizeof a->peak, deadline);
    if (rc == 0) rc = io_recv(fd, &a->cand, sizeof a->cand, deadline);
    if (rc == 0) rc = io_recv(fd, &a->own, sizeof a->own, deadline);
    a->defense[sizeof a->defense - 1] = a->reason[sizeof a->reason - 1] = '\0';
    for (int i = 0; i < n && rc == 0 && a->status == MF_OK; i++) {
        const int present = sp[i].dev != NULL && (i >= n_in || sp[i].bytes > 0);
        if (!present) continue;
        uint64_t total = 0;
        rc = io_recv(fd, &total, sizeof total, deadline);
        if (rc == 0 && total != sp[i].bytes + 2 * (uint64_t)GUARD_BYTES) rc = 3;
        if (rc == 0 && (img[i] = (unsigned char *)malloc((size_t)total)) == NULL) return 4;
        if (rc == 0) rc = io_recv(fd, img[i], (size_t)total, deadline);
    }
    if (rc == 0 && a->status == MF_OK && runs == 2) {
        if ((*second = (unsigned char *)malloc(out_bytes ? out_bytes : 1)) == NULL) return 4;
        rc = io_recv(fd, *second, out_bytes, deadline);
    }
    return rc;
}

static mf_status iso_guard(mf_context *ctx, const mf_tb_buffer *sp, int n_in, int n, const void *args)
{
    verify_state *st = g_state;
    iso_session *is = st->iso;
    const mf_verify_target *tg = is->tg;
    const double deadline = now_s() + is->timeout_s;
    worker_proc *w = &is->w[st->sched];
    mf_status s = MF_OK;
    wbuf b = { 0 };
    const int runs = st->sched == 0 ? 2 : 1; /* the first order also checks determinism */
    unsigned char *second = NULL;
    void **in_host = (void **)calloc((size_t)n, sizeof(void *));
    unsigned char **img = (unsigned char **)calloc((size_t)n, sizeof(unsigned char *));
    unsigned char **own_img = (unsigned char **)calloc((size_t)n, sizeof(unsigned char *));
    if (in_host == NULL || img == NULL || own_img == NULL) {
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host copies");
        goto done;
    }
    /* the request */
    wb_u32(&b, WIRE_REQ);
    wb_u32(&b, (uint32_t)n_in);
    wb_u32(&b, (uint32_t)n);
    wb_u32(&b, (uint32_t)runs);
    wb_u32(&b, 0u); /* 0: the candidate; 1: memfix's own entry (the time column, below) */
    wb_u64(&b, tg->args_size);
    wb_put(&b, args, tg->args_size);
    const void *ptr = NULL;
    if (tg->args_ptr_bytes > 0) memcpy(&ptr, (const unsigned char *)args + tg->args_ptr_offset, sizeof ptr);
    wb_u32(&b, ptr != NULL);
    if (ptr != NULL) {
        wb_u64(&b, tg->args_ptr_bytes);
        wb_put(&b, ptr, tg->args_ptr_bytes);
    }
    size_t out_bytes = 0, io_bytes = 0;
    const size_t page = page_bytes();
    for (int i = 0; i < n; i++) {
        char name[WIRE_NAME] = { 0 };
        snprintf(name, sizeof name, "%s", sp[i].name);
        const int present = sp[i].dev != NULL && (i >= n_in || sp[i].bytes > 0);
        wb_put(&b, name, sizeof name);
        wb_u32(&b, (uint32_t)present);
        wb_u64(&b, sp[i].bytes);
        wb_u32(&b, (uint32_t)sp[i].dtype);
        if (present && i >= n_in) out_bytes += sp[i].bytes;
        if (present) io_bytes += sp[i].bytes + 2 * (size_t)GUARD_BYTES + page;
    }
    for (int i = 0; i < n_in && s == MF_OK; i++) {
        if (sp[i].dev == NULL || sp[i].bytes == 0) continue;
        in_host[i] = malloc(sp[i].bytes);
        if (in_host[i] == NULL)
            s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "inputs");
        else if ((s = mf_buffer_download(ctx, in_host[i], sp[i].dev, sp[i].bytes)) == MF_OK) {
            dump_input(sp[i].name, in_host[i], sp[i].bytes);
            wb_put(&b, in_host[i], sp[i].bytes);
        }
    }
    if (s != MF_OK) goto done;
    if (b.oom) {
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "request");
        goto done;
    }
    if (!w->alive && (s = worker_start(is, st->sched, deadline)) != MF_OK) goto done;
    /* the worker's memory, measured here (host backend): its peak RSS from now on (Linux) */
    size_t rss0 = 0;
    int mem = 0;
    if (is->backend == MF_BACKEND_HOST && !is->worker_sanitized && is->mem_state >= 0) {
        mem = proc_reset_hwm(w->pid) == 0 && proc_vm_bytes(w->pid, "VmRSS:", &rss0) == 0;
        if (!mem && is->mem_state == 0)
            fprintf(stderr,
                    "memfix verify: note: /proc/%d/clear_refs or /proc/%d/status is not available (%s): the "
                    "worker's memory is not measured from outside it (docs/verify.md, \"Measured by "
                    "memfix\")\n",
                    (int)w->pid, (int)w->pid, strerror(errno));
        is->mem_state = mem ? 1 : -1;
    }
    const double t0 = now_s();
    if (io_send(w->fd, b.p, b.n) != 0) {
        s = worker_lost(is, w, 1, "receiving the case");
        goto done;
    }
    /* the answer */
    answer a;
    memset(&a, 0, sizeof a);
    int rc = recv_answer(w->fd, sp, n_in, n, runs, out_bytes, deadline, &a, img, &second);
    const double round_trip = now_s() - t0;
    if (rc == 4) {
        worker_kill(w); /* the rest of its answer is still in the socket */
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "images");
        goto done;
    }
    if (rc != 0) {
        s = worker_lost(is, w, rc, "running the candidate");
        goto done;
    }
    size_t hwm = 0;
    if (mem && proc_vm_bytes(w->pid, "VmHWM:", &hwm) == 0) {
        const size_t growth = hwm > rss0 ? hwm - rss0 : 0;
        size_t allow = 0;
        if (!mf_size_mul(io_bytes, MEM_COPIES, &allow)) allow = SIZE_MAX;
        const size_t excess = growth > allow ? growth - allow : 0;
        if (!st->mem_measured || excess > st->mem_excess) {
            st->mem_excess = excess;
            st->mem_growth = growth;
            st->mem_allow = allow;
        }
        st->mem_measured = 1;
        if (getenv("MF_VERIFY_MEM_DEBUG") != NULL)
            fprintf(stderr, "memfix verify: worker %d: peak RSS +%zu bytes, copies %zu, excess %zu\n",
                    (int)w->pid, growth, allow, excess);
    }
    if (a.status != MF_OK) {
        if (a.defense[0] != '\0')
            s = reject(a.defense, "%s", a.reason);
        else
            s = mf_set_error((mf_status)a.status, "memfix verify worker", __FILE__, __LINE__, "%s", a.reason);
        goto done;
    }
    /* the time column: the round trips of this request and of the same request for memfix's own entry, both
     * timed here (transfers and checks included in both) */
    if (st->sched == 0 && isnan(st->cand_seconds)) {
        st->cand_seconds = round_trip;
        if (tg->own != NULL) {
            const uint32_t own_flag = 1;
            memcpy(b.p + 16, &own_flag, sizeof own_flag); /* after magic, n_in, n, runs */
            answer oa;
            memset(&oa, 0, sizeof oa);
            unsigned char *own_second = NULL;
            const double t1 = now_s();
            int orc = io_send(w->fd, b.p, b.n) != 0 ? 1 : 0;
            if (orc == 0)
                orc = recv_answer(w->fd, sp, n_in, n, runs, out_bytes, now_s() + is->timeout_s, &oa, own_img,
                                  &own_second);
            if (orc == 0) st->own_seconds = now_s() - t1;
            free(own_second);
            if (orc != 0) worker_kill(w); /* the next request starts a fresh one; only the timing is lost */
        }
    }
    /* the parent's own checks */
    for (int i = 0; i < n && s == MF_OK; i++)
        if (img[i] != NULL) s = image_check(img[i], sp[i].name, sp[i].bytes, i < n_in ? in_host[i] : NULL);
    /* determinism, compared here: the second run's outputs against the first's */
    if (s == MF_OK && second != NULL) {
        const unsigned char *q = second;
        for (int i = n_in; i < n && s == MF_OK; i++) {
            if (img[i] == NULL) continue;
            if (memcmp(img[i] + GUARD_BYTES, q, sp[i].bytes) != 0) {
                size_t at = 0;
                while (img[i][GUARD_BYTES + at] == q[at]) at++;
                s = reject(
                    "determinism",
                    "a second call on the same inputs (outputs re-filled with NaN) gave different bits "
                    "(first at byte %zu of %s; compared by memfix on the outputs the worker returned)",
                    at, sp[i].name);
            }
            q += sp[i].bytes;
        }
    }
    size_t out_floats = 0, zeros = 0;
    for (int i = n_in; i < n && s == MF_OK; i++) {
        if (img[i] == NULL) continue;
        s = mf_buffer_upload(ctx, (void *)(uintptr_t)sp[i].dev, img[i] + GUARD_BYTES, sp[i].bytes);
        const float *f = (const float *)(const void *)(img[i] + GUARD_BYTES);
        for (size_t k = 0; k < sp[i].bytes / sizeof(float); k++) zeros += f[k] == 0.0f;
        out_floats += sp[i].bytes / sizeof(float);
    }
    if (s != MF_OK) goto done;
    st->all_zero = out_floats > 0 && zeros == out_floats;
    /* the worker's scratch peak, replayed on this context so that run_case's ceiling check sees it (it includes
     * the untracked memory the worker's memory defenses charged: mem_defense.h) */
    if (a.peak > 0) {
        mf_mem_stats ms;
        size_t top = 0;
        if ((s = mf_mem_stats_get(ctx, MF_MEM_DEVICE, &ms)) == MF_OK) {
            if (!mf_size_add(ms.current, (size_t)a.peak, &top)) top = SIZE_MAX;
            mf_context_raise_scratch_peak(ctx, MF_MEM_DEVICE, top);
        }
    }
done:
    if (g_tamper_sig != 0) { /* overrides whatever the call gave: the candidate attacked verify */
        mf_clear_error();
        s = tamper_check();
    }
    for (int i = 0; i < n && img != NULL; i++) free(img[i]);
    for (int i = 0; i < n && own_img != NULL; i++) free(own_img[i]);
    for (int i = 0; i < n && in_host != NULL; i++) free(in_host[i]);
    free(second);
    free(own_img);
    free(img);
    free(in_host);
    free(b.p);
    return s;
}

/* ---- the worker's side ------------------------------------------------------------------------------------ */
/* A library built for the CUDA runtime (libcudart among its dependencies, or cuda* symbols it does not get
 * from cudahost): a message for the host backend, else NULL. */
static const char *cuda_built(void *handle, char *msg, size_t cap, const char *lib)
{
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0)
        for (struct link_map *m = lm; m != NULL; m = m->l_next)
            if (m->l_name != NULL && strstr(m->l_name, "libcudart") != NULL) {
                snprintf(msg, cap,
                         "'%.300s' is linked against the CUDA runtime (%.200s): it was built with nvcc for a "
                         "GPU. The "
                         "host backend runs candidates built for host execution mode with cudahost-c++ (see "
                         "docs/verify.md); verify this one with --backend cuda on a machine with a GPU",
                         lib, m->l_name);
                return msg;
            }
    return NULL;
}

static int ack(int fd, uint32_t kind, const char *msg)
{
    wbuf b = { 0 };
    wb_u32(&b, WIRE_ACK);
    wb_u32(&b, kind);
    wb_str(&b, msg);
#if defined(__SANITIZE_THREAD__)
    wb_str(&b, "thread");
#elif defined(__SANITIZE_ADDRESS__)
    wb_str(&b, "address");
#else
    wb_str(&b, "");
#endif
    const int r = b.oom ? -1 : io_send(fd, b.p, b.n);
    free(b.p);
    return r;
}

/* One request: returns 0 to go on, 1 to stop (the socket closed). */
static int serve(int fd, mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void))
{
    uint32_t magic = 0, n_in = 0, n = 0, runs = 0, own = 0, has_ptr = 0;
    uint64_t args_size = 0, ptr_bytes = 0;
    if (io_recv(fd, &magic, sizeof magic, 0) != 0 || magic != WIRE_REQ) return 1;
    if (io_recv(fd, &n_in, 4, 0) || io_recv(fd, &n, 4, 0) || io_recv(fd, &runs, 4, 0) ||
        io_recv(fd, &own, 4, 0) || io_recv(fd, &args_size, 8, 0))
        return 1;
    if (n > 64 || n_in > n || args_size != tg->args_size || runs < 1 || runs > 2 || own > 1 ||
        (own && tg->own == NULL))
        return 1;
    void *args = calloc(1, args_size + 16), *ptr = NULL;
    mf_tb_buffer *sp = (mf_tb_buffer *)calloc(n + 1, sizeof *sp);
    guarded *bufs = (guarded *)calloc(n + 1, sizeof *bufs);
    unsigned char **img = (unsigned char **)calloc(n + 1, sizeof *img);
    char(*names)[WIRE_NAME] = (char(*)[WIRE_NAME])calloc(n + 1, WIRE_NAME);
    int stop = args == NULL || sp == NULL || bufs == NULL || img == NULL || names == NULL;
    if (!stop) stop = io_recv(fd, args, args_size, 0) != 0 || io_recv(fd, &has_ptr, 4, 0) != 0;
    if (!stop && has_ptr) {
        stop = io_recv(fd, &ptr_bytes, 8, 0) != 0 || ptr_bytes != tg->args_ptr_bytes ||
               (ptr = calloc(1, ptr_bytes + 16)) == NULL || io_recv(fd, ptr, ptr_bytes, 0) != 0;
    }
    if (!stop && tg->args_ptr_bytes > 0)
        memcpy((unsigned char *)args + tg->args_ptr_offset, &ptr, sizeof ptr);
    size_t out_bytes = 0;
    for (uint32_t i = 0; i < n && !stop; i++) {
        uint32_t present = 0, dtype = 0;
        uint64_t bytes = 0;
        stop = io_recv(fd, names[i], WIRE_NAME, 0) || io_recv(fd, &present, 4, 0) ||
               io_recv(fd, &bytes, 8, 0) || io_recv(fd, &dtype, 4, 0);
        names[i][WIRE_NAME - 1] = '\0';
        sp[i].name = names[i];
        sp[i].bytes = (size_t)bytes;
        sp[i].dtype = (mf_dtype)dtype;
        sp[i].dev = present ? (const void *)1 : NULL; /* a marker: the data follows */
        if (present && i >= n_in) out_bytes += (size_t)bytes;
    }
    verify_state vs;
    memset(&vs, 0, sizeof vs);
    vs.candidate =
        own ? tg->own : candidate; /* own: memfix's entry, timed by the parent beside the candidate */
    g_state = &vs;
    mf_status s = MF_OK;
    for (uint32_t i = 0; i < n && !stop && s == MF_OK; i++) {
        if (sp[i].dev == NULL) continue;
        if (i < n_in) {
            void *h = malloc(sp[i].bytes ? sp[i].bytes : 1);
            if (h == NULL || io_recv(fd, h, sp[i].bytes, 0) != 0)
                stop = 1;
            else
                s = guarded_make(ctx, &bufs[i], sp[i].name, h, sp[i].bytes);
            free(h);
        } else {
            s = guarded_make_dt(ctx, &bufs[i], sp[i].name, NULL, sp[i].bytes, sp[i].dtype);
        }
    }
    unsigned char *out = (unsigned char *)malloc(out_bytes ? out_bytes : 1);
    unsigned char *second = runs == 2 ? (unsigned char *)malloc(out_bytes ? out_bytes : 1) : NULL;
    if (out == NULL || (runs == 2 && second == NULL)) stop = 1;
    const double own_s = NAN; /* (memfix times its own entry itself: a request of its own) */
    /* the scratch peak from here (memfix's own entry of an earlier request took its own) */
    if (!stop && s == MF_OK) s = mf_mem_begin(ctx, MF_MEM_DEVICE);
    if (!stop && s == MF_OK)
        s = guarded_runs(ctx, tg->call, args, bufs, (int)n_in, (int)n, out, out_bytes, (int)runs, img,
                         second);
    if (!stop) {
        wbuf b = { 0 };
        char defense[MF_VERIFY_DEFENSE_MAX] = { 0 }, reason[256] = { 0 };
        snprintf(defense, sizeof defense, "%s", vs.defense);
        snprintf(reason, sizeof reason, "%s", vs.defense[0] ? vs.reason : mf_last_error());
        wb_u32(&b, WIRE_ANS);
        const int32_t st32 = (int32_t)s;
        wb_put(&b, &st32, sizeof st32);
        wb_put(&b, defense, sizeof defense);
        wb_put(&b, reason, sizeof reason);
        wb_u64(&b, vs.peak);
        wb_f64(&b, vs.first_seconds);
        wb_f64(&b, own_s);
        for (uint32_t i = 0; i < n && s == MF_OK; i++) {
            if (sp[i].dev == NULL) continue;
            wb_u64(&b, bufs[i].bytes + 2 * (uint64_t)GUARD_BYTES);
            wb_put(&b, img[i], bufs[i].bytes + 2 * (size_t)GUARD_BYTES);
        }
        if (s == MF_OK && runs == 2) wb_put(&b, second, out_bytes); /* memfix compares the two runs itself */
        stop = b.oom || io_send(fd, b.p, b.n) != 0;
        free(b.p);
    }
    g_state = NULL;
    for (uint32_t i = 0; i < n; i++) {
        guarded_free(ctx, &bufs[i]);
        free(img[i]);
    }
    free(second);
    free(out);
    free(names);
    free(img);
    free(bufs);
    free(sp);
    free(ptr);
    free(args);
    return stop;
}

/* The worker gives up every capability before it loads the candidate (run as root, memfix verify's
 * non-dumpable state would not keep it out of /proc/<verify>/fd/1 or /proc/<verify>/mem otherwise): the
 * bounding set emptied, no_new_privs (an exec'd program gains none back), then capset to nothing. Errors are
 * ignored: a process without capabilities has nothing to drop. */
static void worker_drop_privileges(void)
{
    for (int c = 0; c < 64; c++) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) != 0) {
    }
}

int mf_verify_worker_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const int fd = 3;
    signal(SIGPIPE, SIG_IGN);
    uint32_t magic = 0, backend = 0;
    char lib[4096], symbol[512], target[128], msg[1024];
    if (io_recv(fd, &magic, 4, 0) != 0 || magic != WIRE_HELLO || io_recv(fd, &backend, 4, 0) != 0 ||
        io_recv_str(fd, lib, sizeof lib, 0) != 0 || io_recv_str(fd, symbol, sizeof symbol, 0) != 0 ||
        io_recv_str(fd, target, sizeof target, 0) != 0) {
        fprintf(stderr, "memfix-verify-worker: run by memfix verify only (no request on fd 3)\n");
        return 2;
    }
    const mf_verify_target *tg = find_target(target, NULL);
    if (tg == NULL || tg->call == NULL) {
        snprintf(msg, sizeof msg, "target '%.100s' cannot run in a worker process", target);
        return ack(fd, ACK_LOAD, msg) == 0 ? 2 : 2;
    }
    mf_context *ctx = NULL;
    if (mf_context_create(&ctx, (mf_backend)backend) != MF_OK) {
        snprintf(msg, sizeof msg, "cannot create a %s context in the worker: %s",
                 mf_backend_name((mf_backend)backend), mf_last_error());
        ack(fd, ACK_BACKEND, msg);
        return 3;
    }
    worker_drop_privileges();
    dlerror();
    void *handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *e = dlerror();
        snprintf(
            msg, sizeof msg, "cannot load '%.300s': %.300s%s", lib, e ? e : "unknown error",
            e && strstr(e, "libcudart")
                ? " (it is linked against the CUDA runtime: built with nvcc for a GPU. The host backend runs "
                  "candidates built with cudahost-c++, see docs/verify.md; use --backend cuda on a GPU)"
            : e && (strstr(e, "undefined symbol") || strstr(e, "static TLS"))
                ? " (a host-mode candidate takes cudahost_* and mf_* from memfix itself: link it without "
                  "libcudahost.a, see docs/verify.md)"
                : "");
        ack(fd, ACK_LOAD, msg);
        return 2;
    }
    if (mf_context_backend(ctx) == MF_BACKEND_HOST && cuda_built(handle, msg, sizeof msg, lib) != NULL) {
        ack(fd, ACK_LOAD, msg);
        return 2;
    }
    dlerror();
    void *sym = dlsym(handle, symbol);
    const char *e = dlerror();
    if (sym == NULL || e != NULL) {
        snprintf(msg, sizeof msg, "no symbol '%.100s' in '%.300s'%s%.200s (declare it extern \"C\")", symbol,
                 lib, e ? ": " : "", e ? e : "");
        ack(fd, ACK_LOAD, msg);
        return 2;
    }
    if (dlsym(handle, "cudahost_cudaMalloc") != NULL) {
        snprintf(msg, sizeof msg,
                 "'%.300s' contains its own copy of the cudahost runtime (libcudahost.a linked in): link the "
                 "candidate "
                 "without cudahost, so that it uses memfix's (see docs/verify.md)",
                 lib);
        ack(fd, ACK_LOAD, msg);
        return 2;
    }
    if (mf_context_backend(ctx) == MF_BACKEND_CUDA) {
        /* The candidate's CUDA runtime (its libcudart.so, or a static one linked in) starts at its first call:
         * cudaFree(NULL) starts it now, and with CUDA_MODULE_LOADING=EAGER (schedule_env) loads its modules,
         * so that the device memory either takes is in use before the first measured call (hidden-allocation
         * check). */
        void *f = dlsym(handle, "cudaFree");
        if (f != NULL) {
            int (*cuda_free)(void *);
            memcpy(&cuda_free, &f, sizeof cuda_free);
            (void)cuda_free(NULL);
        }
        dlerror();
    }
    void (*candidate)(void);
    memcpy(&candidate, &sym, sizeof candidate);
    if (ack(fd, ACK_OK, "") != 0) return 0;
    while (serve(fd, ctx, tg, candidate) == 0) {
    }
    /* the library stays loaded (its destructors and threads); _exit: this process's exit status is nobody's */
    _exit(0);
}

/* ---- the driver of mf_verify_lib ---------------------------------------------------------------------------- */
void mf_verify_options_init(mf_verify_options *o)
{
    if (o == NULL) return;
    memset(o, 0, sizeof *o);
    o->timeout_s = 60.0;
    o->orders = 2;
    o->order_seed = 1;
}

static int is_exec(const char *p) { return p != NULL && p[0] != '\0' && access(p, X_OK) == 0; }

static int find_worker(const mf_verify_options *o, char *out, size_t cap)
{
    const char *env = getenv("MF_VERIFY_WORKER");
    if (is_exec(env)) return snprintf(out, cap, "%s", env), 1;
    if (is_exec(o->worker)) return snprintf(out, cap, "%s", o->worker), 1;
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 64);
    if (len > 0) {
        self[len] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            snprintf(slash + 1, 64, "memfix-verify-worker");
            if (is_exec(self)) return snprintf(out, cap, "%s", self), 1;
        }
    }
    return 0;
}

static void make_schedules(iso_session *is, const mf_verify_options *o)
{
    schedule *s = is->sched;
    int k = 0;
    snprintf(s[k].order, sizeof s[k].order, "forward");
    s[k].workers = 2;
    snprintf(s[k++].label, sizeof s[0].label, "forward order, 2 workers");
    snprintf(s[k].order, sizeof s[k].order, "reverse");
    s[k].workers = 1;
    snprintf(s[k++].label, sizeof s[0].label, "reverse order, 1 worker");
    const int orders = o->orders < 0 ? 0 : o->orders > MAX_SCHED - 2 ? MAX_SCHED - 2 : o->orders;
    for (int r = 0; r < orders; r++, k++) {
        const unsigned long long seed = (unsigned long long)o->order_seed + (unsigned long long)r;
        snprintf(s[k].order, sizeof s[k].order, "random:%llu", seed);
        s[k].workers = r % 2 == 0 ? 1 : 2;
        snprintf(s[k].label, sizeof s[k].label, "random:%llu order, %d worker%s", seed, s[k].workers,
                 s[k].workers > 1 ? "s" : "");
    }
    is->n_sched = k;
}

/* The defense of a case that ran and failed its checks: from its failure kind. */
static const char *defense_of(const mf_case_result *r, int all_zero)
{
    if (r->failure == MF_FAILURE_SCRATCH_CEILING) return "scratch-ceiling";
    if (all_zero || r->failure == MF_FAILURE_ALL_ZERO) return "all-zero";
    if (r->failure == MF_FAILURE_NONFINITE) return "nan-prefill";
    return "equivalence";
}

/* One run of case c (salt) in thread order 'sched' (mf_verify_lib) or in process (is == NULL); fills row. */
static void run_once(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void),
                     const mf_case_id *c, uint64_t salt, iso_session *is, int sched, mf_verify_row *row)
{
    verify_state st;
    memset(&st, 0, sizeof st);
    st.candidate = candidate;
    st.iso = is;
    st.sched = sched;
    st.cand_seconds = st.own_seconds = NAN;
    g_state = &st;
    memset(row, 0, sizeof *row);
    row->cand_seconds = row->own_seconds = NAN;
    mf_clear_error();
    dump_begin(tg, c, salt, &st);
    mf_status s = run_case_id(ctx, tg, candidate, c, salt, &row->result);
    mf_case_result *r = &row->result;
    if (is != NULL) iso_memory_verdict(&st, r); /* the memory memfix measured outside the worker */
    if (st.defense[0] != '\0') {
        r->pass = 0;
        r->failure = MF_FAILURE_ERROR;
        r->max_abs_err = r->max_rel_err = NAN; /* not compared: shown as nan / null */
        snprintf(row->defense, sizeof row->defense, "%s", st.defense);
        snprintf(r->message, sizeof r->message, "%s", st.reason);
    } else if (s != MF_OK) {
        r->pass = 0;
        r->failure = MF_FAILURE_ERROR;
        r->max_abs_err = r->max_rel_err = NAN;
        snprintf(row->defense, sizeof row->defense, "error");
        if (r->message[0] == '\0')
            snprintf(r->message, sizeof r->message, "%s: %s", mf_status_name(s), mf_last_error());
    } else if (!r->pass) {
        snprintf(row->defense, sizeof row->defense, "%s", defense_of(r, st.all_zero));
    }
    row->cand_seconds = st.cand_seconds;
    row->own_seconds = st.own_seconds;
    if (is != NULL) snprintf(row->schedule, sizeof row->schedule, "%s", is->sched[sched].label);
    dump_end(row, &st);
    g_state = NULL;
}

static int output_check(const char *defense)
{
    return strcmp(defense, "equivalence") == 0 || strcmp(defense, "nan-prefill") == 0 ||
           strcmp(defense, "all-zero") == 0;
}

/* One case with every defense and, with workers, in every thread order; fills row (always). */
static void run_one(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void), const mf_case_id *c,
                    uint64_t salt, iso_session *is, mf_verify_row *row)
{
    run_once(ctx, tg, candidate, c, salt, is, 0, row);
    for (int k = 1; is != NULL && salt == 0 && row->result.pass && k < is->n_sched; k++) {
        mf_verify_row other;
        run_once(ctx, tg, candidate, c, salt, is, k, &other);
        if (other.result.pass) continue;
        char msg[sizeof other.result.message];
        snprintf(msg, sizeof msg, "%s", other.result.message);
        const double cand = row->cand_seconds, own = row->own_seconds;
        *row = other;
        row->cand_seconds = cand;
        row->own_seconds = own;
        if (output_check(other.defense)) { /* else the reason names the order already */
            snprintf(row->defense, sizeof row->defense, "schedule");
            char text[2 * sizeof row->result.message];
            snprintf(text, sizeof text,
                     "passed in forward order, failed in %s (a race between threads: a missing "
                     "__syncthreads?): %s",
                     is->sched[k].label, msg);
            mf_tb_copy_msg(row->result.message, sizeof row->result.message, text);
        }
        break;
    }
}

/* Both sweeps over the cases ids[0..n). */
static void run_all(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void),
                    const mf_case_id *ids, int n, iso_session *is, mf_verify_row *rows)
{
    /* Sweep 1: every case in order. */
    for (int c = 0; c < n; c++) run_one(ctx, tg, candidate, &ids[c], 0, is, &rows[c]);
    /* Sweep 2: the cases that passed, in reverse order, fresh buffers, other inputs. */
    for (int c = n - 1; c >= 0; c--) {
        if (!rows[c].result.pass) continue;
        mf_verify_row again;
        run_one(ctx, tg, candidate, &ids[c], 1, is, &again);
        if (again.result.pass) continue;
        char msg[sizeof again.result.message];
        snprintf(msg, sizeof msg, "%s", again.result.message);
        const double cand = rows[c].cand_seconds, own = rows[c].own_seconds;
        rows[c] = again;
        rows[c].cand_seconds = cand;
        rows[c].own_seconds = own;
        if (output_check(again.defense)) {
            snprintf(rows[c].defense, sizeof rows[c].defense, "rerun");
            snprintf(rows[c].result.message, sizeof rows[c].result.message,
                     "second sweep (reverse case order, fresh buffers, different inputs): %.180s", msg);
        }
    }
}

mf_status mf_verify(mf_context *ctx, const char *op, void (*candidate)(void), mf_verify_row *rows, size_t cap,
                    size_t *n_rows)
{
    MF_CHECK_NOT_NULL(n_rows);
    *n_rows = 0;
    MF_CHECK_NOT_NULL(op);
    const int n = mf_verify_n_cases(op);
    if (n < 0)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates (supported: %s)", op,
                mf_verify_supported_ops());
    mf_case_id *ids = (mf_case_id *)calloc((size_t)n + 1, sizeof *ids);
    if (ids == NULL) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "case ids");
    for (int c = 0; c < n; c++) ids[c] = mf_tb_fixed_id(c);
    mf_status s = mf_verify_ids(ctx, op, candidate, ids, (size_t)n, rows, cap, n_rows);
    free(ids);
    return s;
}

mf_status mf_verify_ids(mf_context *ctx, const char *op, void (*candidate)(void), const mf_case_id *ids,
                        size_t n_ids, mf_verify_row *rows, size_t cap, size_t *n_rows)
{
    MF_CHECK_NOT_NULL(n_rows);
    *n_rows = 0;
    MF_CHECK_NOT_NULL(ctx);
    MF_CHECK_NOT_NULL(op);
    MF_CHECK_NOT_NULL(candidate);
    MF_CHECK_NOT_NULL(rows);
    MF_CHECK_NOT_NULL(ids);
    const mf_verify_target *tg = find_target(op, NULL);
    if (tg == NULL)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates (supported: %s)", op,
                mf_verify_supported_ops());
    if (cap < n_ids) MF_FAIL(MF_ERR_INVALID_SIZE, "rows holds %zu rows; %zu cases asked for", cap, n_ids);
    run_all(ctx, tg, candidate, ids, (int)n_ids, NULL, rows);
    *n_rows = n_ids;
    return MF_OK;
}

/* a placeholder candidate in this process: mf_tb_guard sends the calls to the worker */
static void not_called(void) {}

mf_status mf_verify_lib(mf_context *ctx, const char *op, const mf_verify_options *o, mf_verify_row *rows,
                        size_t cap, size_t *n_rows)
{
    MF_CHECK_NOT_NULL(n_rows);
    *n_rows = 0;
    MF_CHECK_NOT_NULL(ctx);
    MF_CHECK_NOT_NULL(op);
    MF_CHECK_NOT_NULL(o);
    MF_CHECK_NOT_NULL(o->lib);
    MF_CHECK_NOT_NULL(o->symbol);
    MF_CHECK_NOT_NULL(rows);
    const mf_verify_target *tg = find_target(op, NULL);
    if (tg == NULL)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates (supported: %s)", op,
                mf_verify_supported_ops());
    if (tg->call == NULL) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "target '%s' cannot run in a worker process", op);
    if (o->sanitize != NULL && strcmp(o->sanitize, "thread") != 0 && strcmp(o->sanitize, "address") != 0)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "sanitize '%s': expected thread or address", o->sanitize);
    if (!(o->timeout_s > 0)) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "timeout %g s: must be > 0", o->timeout_s);
    /* the cases: o->ids (fixed, random, large), else the target's fixed cases */
    const int n_fixed = mf_verify_n_cases(op);
    const size_t n = o->ids != NULL ? o->n_ids : (size_t)n_fixed;
    if (cap < n) MF_FAIL(MF_ERR_INVALID_SIZE, "rows holds %zu rows; %zu cases asked for", cap, n);
    mf_case_id *ids = (mf_case_id *)calloc(n + 1, sizeof *ids);
    if (ids == NULL) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "case ids");
    for (size_t c = 0; c < n; c++) ids[c] = o->ids != NULL ? o->ids[c] : mf_tb_fixed_id((int)c);
    iso_session *is = (iso_session *)calloc(1, sizeof *is);
    if (is == NULL) {
        free(ids);
        MF_FAIL(MF_ERR_OUT_OF_MEMORY, "session");
    }
    is->tg = tg;
    is->lib = o->lib;
    is->symbol = o->symbol;
    is->backend = mf_context_backend(ctx);
    is->timeout_s = o->timeout_s;
    is->sanitize = o->sanitize;
    for (int i = 0; i < MAX_SCHED; i++) is->w[i].pid = is->w[i].fd = -1;
    make_schedules(is, o);
    if (!find_worker(o, is->worker_path, sizeof is->worker_path)) {
        free(is);
        free(ids);
        MF_FAIL(
            MF_ERR_BACKEND_UNAVAILABLE,
            "no memfix-verify-worker found (set MF_VERIFY_WORKER, or keep it next to the memfix executable)");
    }
    /* the library's path as the worker will see it (a bare name: the current directory's file) */
    char path[4096];
    struct stat sb;
    if (strchr(o->lib, '/') == NULL && stat(o->lib, &sb) == 0)
        snprintf(path, sizeof path, "./%s", o->lib);
    else
        snprintf(path, sizeof path, "%s", o->lib);
    is->lib = path;
    /* The first worker answers whether the library loads at all (a usage error, not a verdict). A worker that
     * dies or hangs while loading (the library's constructors) rejects every case instead. */
    verify_state probe;
    memset(&probe, 0, sizeof probe);
    probe.iso = is;
    g_state = &probe;
    parent_guard pg;
    parent_guard_arm(&pg, is);
    mf_status s = worker_start(is, 0, now_s() + is->timeout_s);
    g_state = NULL;
    if (s != MF_OK && is->load_error[0] != '\0') {
        worker_kill(&is->w[0]);
        parent_guard_disarm(&pg);
        free(is);
        free(ids);
        return s;
    }
    mf_clear_error();
    run_all(ctx, tg, not_called, ids, (int)n, is, rows);
    for (int i = 0; i < MAX_SCHED; i++)
        if (is->w[i].pid > 0 || is->w[i].fd >= 0) worker_kill(&is->w[i]);
    parent_guard_disarm(&pg);
    free(is);
    free(ids);
    *n_rows = n;
    return MF_OK;
}

/* ---- the case list of a verification ----------------------------------------- */
int mf_verify_has_generator(const char *op)
{
    const mf_verify_target *tg = find_target(op, NULL);
    return tg != NULL && tg->run_id != NULL && tg->describe != NULL;
}

mf_status mf_verify_case_ids(const char *op, uint64_t seed, int n_random, int large, mf_case_id *ids,
                             size_t cap, size_t *n)
{
    MF_CHECK_NOT_NULL(n);
    *n = 0;
    MF_CHECK_NOT_NULL(op);
    const int n_fixed = mf_verify_n_cases(op);
    if (n_fixed < 0) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates", op);
    if (n_random < 0) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "n_random %d is negative", n_random);
    if (!mf_verify_has_generator(op)) n_random = 0, large = 0;
    const size_t need = (size_t)n_fixed + (size_t)n_random + (large ? 1u : 0u);
    if (ids == NULL || cap < need) {
        *n = need; /* the size to ask for */
        if (ids == NULL) return MF_OK;
        MF_FAIL(MF_ERR_INVALID_SIZE, "ids holds %zu ids; %zu needed", cap, need);
    }
    size_t k = 0;
    for (int i = 0; i < n_fixed; i++) ids[k++] = mf_tb_fixed_id(i);
    for (int i = 0; i < n_random; i++) ids[k++] = (mf_case_id){ MF_CASE_RANDOM, i, seed };
    if (large) ids[k++] = (mf_case_id){ MF_CASE_LARGE, 0, seed };
    *n = k;
    return MF_OK;
}

mf_status mf_verify_describe(const char *op, const mf_case_id *id, char *buf, size_t cap, size_t *bytes)
{
    MF_CHECK_NOT_NULL(op);
    MF_CHECK_NOT_NULL(id);
    MF_CHECK_NOT_NULL(buf);
    if (cap > 0) buf[0] = '\0';
    if (bytes != NULL) *bytes = 0;
    const mf_verify_target *tg = find_target(op, NULL);
    if (tg == NULL) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates", op);
    if (tg->describe == NULL) {
        if (id->kind != MF_CASE_FIXED || id->index < 0 || id->index >= mf_verify_n_cases(op))
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "target '%s': no case %d", op, id->index);
        snprintf(buf, cap, "(built-in case %d)", id->index);
        return MF_OK;
    }
    size_t b = 0;
    MF_TRY(tg->describe(id, buf, cap, &b));
    if (bytes != NULL) *bytes = b;
    return MF_OK;
}

#else /* no host kernels: no ops, so nothing takes candidates */

int mf_verify_has_generator(const char *op)
{
    (void)op;
    return 0;
}

mf_status mf_verify_case_ids(const char *op, uint64_t seed, int n_random, int large, mf_case_id *ids,
                             size_t cap, size_t *n)
{
    (void)seed, (void)n_random, (void)large, (void)ids, (void)cap;
    if (n != NULL) *n = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels",
            op != NULL ? op : "(null)");
}

mf_status mf_verify_describe(const char *op, const mf_case_id *id, char *buf, size_t cap, size_t *bytes)
{
    (void)id;
    if (buf != NULL && cap > 0) buf[0] = '\0';
    if (bytes != NULL) *bytes = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels",
            op != NULL ? op : "(null)");
}

mf_status mf_verify_ids(mf_context *ctx, const char *op, void (*candidate)(void), const mf_case_id *ids,
                        size_t n_ids, mf_verify_row *rows, size_t cap, size_t *n_rows)
{
    (void)ctx, (void)candidate, (void)ids, (void)n_ids, (void)rows, (void)cap;
    if (n_rows != NULL) *n_rows = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels",
            op != NULL ? op : "(null)");
}

int mf_verify_supported(const char *op)
{
    (void)op;
    return 0;
}

const char *mf_verify_supported_ops(void) { return ""; }

int mf_verify_n_cases(const char *op)
{
    (void)op;
    return -1;
}

int mf_verify_default_cases(const char *op)
{
    (void)op;
    return -1;
}

mf_status mf_verify(mf_context *ctx, const char *op, void (*candidate)(void), mf_verify_row *rows, size_t cap,
                    size_t *n_rows)
{
    (void)ctx;
    (void)candidate;
    (void)rows;
    (void)cap;
    if (n_rows != NULL) *n_rows = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels, so no candidates",
            op != NULL ? op : "(null)");
}

void mf_verify_options_init(mf_verify_options *o)
{
    if (o != NULL) memset(o, 0, sizeof *o);
}

mf_status mf_verify_lib(mf_context *ctx, const char *op, const mf_verify_options *o, mf_verify_row *rows,
                        size_t cap, size_t *n_rows)
{
    (void)ctx;
    (void)o;
    (void)rows;
    (void)cap;
    if (n_rows != NULL) *n_rows = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels, so no candidates",
            op != NULL ? op : "(null)");
}

int mf_verify_worker_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 3;
}

#endif

/* ---- case ids as text (both builds) ---------------------------------------------------------- */
void mf_case_id_format(const mf_case_id *id, char *buf, size_t cap)
{
    if (buf == NULL || cap == 0) return;
    if (id == NULL)
        snprintf(buf, cap, "?");
    else if (id->kind == MF_CASE_FIXED)
        snprintf(buf, cap, "f%d", id->index);
    else if (id->kind == MF_CASE_RANDOM)
        snprintf(buf, cap, "g%d", id->index);
    else
        snprintf(buf, cap, "large");
}

int mf_case_id_parse(const char *s, uint64_t seed, mf_case_id *id)
{
    if (s == NULL || id == NULL) return 0;
    if (strcmp(s, "large") == 0) {
        *id = (mf_case_id){ MF_CASE_LARGE, 0, seed };
        return 1;
    }
    mf_case_kind kind = MF_CASE_FIXED;
    const char *p = s;
    if (*p == 'f' || *p == 'g') kind = *p++ == 'g' ? MF_CASE_RANDOM : MF_CASE_FIXED;
    if (*p < '0' || *p > '9') return 0;
    char *end = NULL;
    const long v = strtol(p, &end, 10);
    if (end == NULL || *end != '\0' || v < 0 || v > 1000000) return 0;
    *id = (mf_case_id){ kind, (int)v, kind == MF_CASE_FIXED ? 0 : seed };
    return 1;
}
