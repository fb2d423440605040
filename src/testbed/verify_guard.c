/* memfix verify's guarded call of a candidate (mf_tb_guard, testbed.h): guard bands around every buffer, the
 * input and determinism checks, the hidden-allocation sampler and the memory defenses of mem_defense.h. Run in
 * this process by mf_verify and in the worker process by mf_verify_lib (verify_worker.c). */
#define _GNU_SOURCE /* sysconf, nanosleep, clock_gettime */
#include "verify_internal.h"

#include "mem_defense.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef MF_HAVE_HOST_KERNELS

_Thread_local verify_state *mf_vf_g_state;

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
mf_status mf_vf_reject(const char *defense, const char *fmt, ...)
{
    verify_state *s = mf_vf_g_state;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
    snprintf(s->defense, sizeof s->defense, "%s", defense);
    return mf_set_error(MF_ERR_MISMATCH, "memfix verify", __FILE__, __LINE__, "%s: %s", defense, s->reason);
}

/* ---- guarded buffers --------------------------------------------------------------- */

/* Byte i of a guard band: varied (a write of almost any byte changes it) and a NaN
 * wherever it is read as data: the byte pairs (lo, hi) at even offsets are bf16 NaNs
 * (hi & 0x7f == 0x7f, lo >= 0x81) and two pairs an f32 NaN, so a candidate that reads
 * past an input's end (a padded tile multiplying it by zero included) carries a NaN
 * into its result instead of finite garbage, as the suites' NaN guards do
 * (MF_TB_GUARD). Element sizes are even, so a trailing band keeps the parity. */
unsigned char mf_vf_canary(size_t i)
{
    const unsigned m = (unsigned)(i * 151u + (i >> 8) * 7u);
    return (i & 1) ? (unsigned char)((m & 0x80u) | 0x7fu) : (unsigned char)(0x81u + m % 0x7fu);
}

size_t mf_vf_page_bytes(void)
{
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* data == NULL: an output, pre-filled with the NaN prefill of out_dtype (MF_NAN_FILL_*_BITS).
 * An input in host execution mode is paged (testbed.h): its first byte on a page
 * boundary and the allocation padded to the end of its last page, so that the
 * input-write defense can make every byte of it read-only (mem_defense.c). */
mf_status mf_vf_guarded_make_dt(mf_context *ctx, guarded *g, const char *name, const void *data, size_t bytes,
                                mf_dtype out_dtype)
{
    memset(g, 0, sizeof *g);
    g->name = name;
    g->bytes = bytes;
    if (bytes > SIZE_MAX / 4) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "%s: %zu bytes", name, bytes);
    const size_t total = bytes + 2 * (size_t)GUARD_BYTES;
    const size_t page = mf_vf_page_bytes();
    const int paged = data != NULL && mf_context_backend(ctx) == MF_BACKEND_HOST;
    /* paged: up to a page to align base + GUARD, then the guard, the data's whole pages, the trailing guard */
    const size_t alloc_bytes =
        paged ? page + 2 * (size_t)GUARD_BYTES + (bytes + page - 1) / page * page : total;
    g->image = (unsigned char *)malloc(total);
    if (g->image == NULL) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "host image of %zu bytes for %s", total, name);
    for (size_t i = 0; i < GUARD_BYTES; i++) {
        g->image[i] = mf_vf_canary(i);
        g->image[GUARD_BYTES + bytes + i] = mf_vf_canary(i + GUARD_BYTES);
    }
    if (data != NULL)
        memcpy(g->image + GUARD_BYTES, data, bytes);
    else
        mf_tb_fill_nan(out_dtype, g->image + GUARD_BYTES,
                       bytes / (out_dtype == MF_DTYPE_BF16 ? sizeof(uint16_t) : sizeof(float)));
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

mf_status mf_vf_guarded_make(mf_context *ctx, guarded *g, const char *name, const void *data, size_t bytes)
{
    return mf_vf_guarded_make_dt(ctx, g, name, data, bytes, MF_DTYPE_F32);
}

static void *guarded_ptr(const guarded *g) { return g->base + GUARD_BYTES; }

void mf_vf_guarded_free(mf_context *ctx, guarded *g)
{
    if (g->alloc != NULL) mf_buffer_free(ctx, g->alloc);
    free(g->image);
    memset(g, 0, sizeof *g);
}

/* The checks of one buffer's whole image img (bytes + 2 guards) against what it must hold: the guards, and for
 * an input (data != NULL) its bytes. Each rejection names the buffer and, by its axes, the element: the one
 * changed, or for a write outside it, its first or last one. Shared by the worker and memfix's process. */
mf_status mf_vf_image_check(const unsigned char *img, const char *name, const mf_axes *axes, size_t bytes,
                            const unsigned char *data)
{
    char el[112];
    for (size_t i = 0; i < GUARD_BYTES; i++)
        if (img[i] != mf_vf_canary(i)) {
            mf_tb_element_at(axes, bytes, 0, el, sizeof el);
            return mf_vf_reject(
                "guard-band",
                "wrote before %s: byte %lld relative to its start (its first element %s) changed", name,
                (long long)i - GUARD_BYTES, el);
        }
    for (size_t i = 0; i < GUARD_BYTES; i++)
        if (img[GUARD_BYTES + bytes + i] != mf_vf_canary(i + GUARD_BYTES)) {
            mf_tb_element_at(axes, bytes, bytes > 0 ? bytes - 1 : 0, el, sizeof el);
            return mf_vf_reject("guard-band",
                                "wrote past the end of %s (%zu bytes, its last element %s): byte %zu changed",
                                name, bytes, el, bytes + i);
        }
    if (data != NULL && memcmp(img + GUARD_BYTES, data, bytes) != 0) {
        size_t at = 0;
        while (data[at] == img[GUARD_BYTES + at]) at++;
        mf_tb_element_at(axes, bytes, at, el, sizeof el);
        return mf_vf_reject("input-mutation",
                            "changed input %s at %s (byte %zu of %zu; inputs are read-only)", name, el, at,
                            bytes);
    }
    return MF_OK;
}

/* Downloads the whole buffer into 'tmp' (bytes + 2 guards) and checks the guards
 * (is_output: the interior is not compared) or everything (inputs). */
static mf_status guarded_check(mf_context *ctx, const guarded *g, unsigned char *tmp, int is_input)
{
    MF_TRY(mf_buffer_download(ctx, tmp, g->base, g->bytes + 2 * (size_t)GUARD_BYTES));
    return mf_vf_image_check(tmp, g->name, &g->axes, g->bytes, is_input ? g->image + GUARD_BYTES : NULL);
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
    if (md.defense != NULL) return mf_vf_reject(md.defense, "%s", md.reason);
    const double took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (mf_vf_g_state->n_timed++ == 0 || took < mf_vf_g_state->first_seconds)
        mf_vf_g_state->first_seconds = took;
    if (s != MF_OK)
        return mf_vf_reject("error", "the candidate returned %s: %s", mf_status_name(s),
                            mf_last_error()[0] ? mf_last_error() : "(no message)");
    if (sync != MF_OK)
        return mf_vf_reject("error", "the device reported an error after the call: %s", mf_last_error());

    for (int i = 0; i < n; i++)
        if (bufs[i].base != NULL)
            MF_TRY(guarded_check(ctx, &bufs[i], tmp, i < n_in)); /* NULL: optional input */

    MF_TRY(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st1));
    const size_t tracked = st1.peak > st0.current ? st1.peak - st0.current : 0;
    if (tracked > mf_vf_g_state->peak) mf_vf_g_state->peak = tracked;
    const size_t grew = max_used > used0 ? max_used - used0 : 0;
    if (grew > tracked + hidden_slack(ctx))
        return mf_vf_reject(
            "hidden-allocation",
            "device memory in use grew by %zu bytes during the call, but only %zu bytes of scratch "
            "went through the context's allocator (mf_scratch_alloc)",
            grew, tracked);
    mf_tb_memdef_charge(ctx, &md);
    /* the peak a worker reports includes the untracked bytes just charged (mem_defense.h) */
    mf_mem_stats st2;
    if (mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st2) == MF_OK && st2.peak > st0.current &&
        st2.peak - st0.current > mf_vf_g_state->peak)
        mf_vf_g_state->peak = st2.peak - st0.current;
    return MF_OK;
}

/* Runs the candidate 'runs' times (1 or 2) on the same guarded inputs (outputs
 * re-filled with NaN in between), checks each call and that both runs give the
 * same bits; leaves the first run's outputs (bufs[n_in..n), concatenated) in
 * out_host and, when images != NULL, every buffer's whole guarded image after
 * the first call in images[i] (NULL for a buffer not given). */
mf_status mf_vf_guarded_runs(mf_context *ctx, call_fn call, const void *args, guarded *bufs, int n_in, int n,
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
        char el[112];
        mf_tb_element_at(&bufs[o].axes, bufs[o].bytes, at, el, sizeof el);
        s = mf_vf_reject("determinism",
                         "a second call on the same inputs (outputs re-filled with NaN) gave different bits "
                         "(first in %s at %s, byte %zu)",
                         bufs[o].name, el, at);
    }
    if (s == MF_OK) {
        const float *f = (const float *)out_host;
        int zero = 1;
        for (size_t i = 0; i < out_bytes / sizeof(float) && zero; i++) zero = f[i] == 0.0f;
        mf_vf_g_state->all_zero = zero;
    }
done:
    free(second);
    free(tmp);
    return s;
}

/* ---- memfix verify --dump: a case's inputs (removed again when the case passes) ------------------ */
void mf_vf_dump_input(const char *name, const void *data, size_t bytes)
{
    if (mf_vf_g_state == NULL || mf_vf_g_state->dump_stem[0] == '\0') return;
    char suffix[64];
    snprintf(suffix, sizeof suffix, "-input-%s.bin", name);
    (void)mf_tb_dump_raw(mf_vf_g_state->dump_stem, suffix, data, bytes);
}
/* ---- the guard (testbed.h) ---------------------------------------------------------------- */
void (*mf_tb_candidate(void))(void) { return mf_vf_g_state != NULL ? mf_vf_g_state->candidate : NULL; }

/* Guarded copies of sp[0..n_in) (inputs) and sp[n_in..n) (outputs), the
 * candidate called twice through 'call' with every check, then the first run's
 * outputs uploaded to the hook's buffers. NULL buffers (optional inputs and
 * outputs not given) are skipped: bufs[i].base stays NULL and the candidate
 * gets NULL (gptr). */
mf_status mf_tb_guard(mf_context *ctx, const mf_tb_buffer *sp, int n_in, int n, mf_tb_call_fn call,
                      const void *args, mf_tb_guarded *bufs)
{
    memset(bufs, 0, sizeof(guarded) * (size_t)n);
    if (mf_vf_g_state != NULL && mf_vf_g_state->iso != NULL) return mf_vf_iso_guard(ctx, sp, n_in, n, args);
    if (mf_vf_g_state == NULL || mf_vf_g_state->candidate == NULL)
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
            if (s == MF_OK) mf_vf_dump_input(sp[i].name, h, sp[i].bytes);
            if (s == MF_OK) s = mf_vf_guarded_make(ctx, &bufs[i], sp[i].name, h, sp[i].bytes);
            free(h);
        } else if (sp[i].dev != NULL) { /* NULL: an optional output not asked for */
            s = mf_vf_guarded_make_dt(ctx, &bufs[i], sp[i].name, NULL, sp[i].bytes, sp[i].dtype);
        }
        bufs[i].axes = sp[i].axes;
    }
    if (s == MF_OK) s = mf_vf_guarded_runs(ctx, call, args, bufs, n_in, n, out, out_bytes, 2, NULL, NULL);
    unsigned char *p = out;
    for (int i = n_in; i < n && s == MF_OK; i++) {
        if (sp[i].dev == NULL) continue;
        s = mf_buffer_upload(ctx, (void *)(uintptr_t)sp[i].dev, p, sp[i].bytes);
        p += sp[i].bytes;
    }
    for (int i = 0; i < n; i++) mf_vf_guarded_free(ctx, &bufs[i]);
    free(out);
    return s;
}

void *mf_tb_ptr(mf_tb_guarded *bufs, int i) { return bufs[i].base != NULL ? guarded_ptr(&bufs[i]) : NULL; }

#endif
