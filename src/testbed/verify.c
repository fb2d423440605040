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
#define _POSIX_C_SOURCE 200809L
#include "memfix/verify.h"

#include "memfix/check.h"
#include "mf_backend.h"
#include "mf_internal.h"
#include "testbed.h"
#include "mem_defense.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>

#ifdef MF_HAVE_HOST_KERNELS

enum { GUARD_BYTES = 1024 }; /* a multiple of 256: the candidate's pointers keep cudaMalloc's alignment */

/* The state of one guarded call (thread-local: one verification per thread). */
typedef struct verify_state {
    void (*candidate)(void);
    char defense[MF_VERIFY_DEFENSE_MAX];
    char reason[256];
    int all_zero; /* the candidate's output was all zeros */
    char dump_stem[200]; /* --dump: "<dir>/<target>-<case id>" of this case's inputs; "" when not dumping */
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

static unsigned char canary(size_t i) { return (unsigned char)(0x5au ^ (i * 151u + (i >> 8) * 7u)); }

/* data == NULL: an output, pre-filled with NaNs of out_dtype (bf16 NaN 0x7fc0). */
static mf_status guarded_make_dt(mf_context *ctx, guarded *g, const char *name, const void *data, size_t bytes,
                                 mf_dtype out_dtype)
{
    memset(g, 0, sizeof *g);
    g->name = name;
    g->bytes = bytes;
    const size_t total = bytes + 2 * (size_t)GUARD_BYTES;
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
    MF_TRY(mf_buffer_alloc(ctx, total, &p));
    g->base = (unsigned char *)p;
    return mf_buffer_upload(ctx, g->base, g->image, total);
}

static mf_status guarded_make(mf_context *ctx, guarded *g, const char *name, const void *data, size_t bytes)
{
    return guarded_make_dt(ctx, g, name, data, bytes, MF_DTYPE_F32);
}

static void *guarded_ptr(const guarded *g) { return g->base + GUARD_BYTES; }

static void guarded_free(mf_context *ctx, guarded *g)
{
    if (g->base != NULL) mf_buffer_free(ctx, g->base);
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
            return reject("guard-band", "wrote before %s: byte %lld relative to its start changed",
                          g->name, (long long)i - GUARD_BYTES);
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
    const struct timespec pause = {0, 50000}; /* 50 us */
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
    const struct timespec pause = {0, 20000};
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
    mf_status s = call(ctx, args, bufs);
    mf_status sync = backend_sync(ctx)();
    if (sync == MF_OK) sync = mf_context_synchronize(ctx);
    const size_t max_used = sampler_stop(&smp);
    mf_tb_memdef_end(ctx, &md);
    if (md.defense != NULL) return reject(md.defense, "%s", md.reason);
    if (s != MF_OK)
        return reject("error", "the candidate returned %s: %s", mf_status_name(s),
                      mf_last_error()[0] ? mf_last_error() : "(no message)");
    if (sync != MF_OK) return reject("error", "the device reported an error after the call: %s", mf_last_error());

    for (int i = 0; i < n; i++)
        if (bufs[i].base != NULL) MF_TRY(guarded_check(ctx, &bufs[i], tmp, i < n_in)); /* NULL: optional input */

    MF_TRY(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st1));
    const size_t tracked = st1.peak > st0.current ? st1.peak - st0.current : 0;
    const size_t grew = max_used > used0 ? max_used - used0 : 0;
    if (grew > tracked + hidden_slack(ctx))
        return reject("hidden-allocation",
                      "device memory in use grew by %zu bytes during the call, but only %zu bytes of scratch "
                      "went through the context's allocator (mf_scratch_alloc)",
                      grew, tracked);
    mf_tb_memdef_charge(ctx, &md);
    return MF_OK;
}

/* Runs the candidate twice on the same guarded inputs (outputs re-filled with
 * NaN in between), checks each call and that both runs give the same bits;
 * leaves the first run's outputs (bufs[n_in..n), concatenated) in out_host. */
static mf_status guarded_twice(mf_context *ctx, call_fn call, const void *args, guarded *bufs, int n_in, int n,
                               void *out_host, size_t out_bytes)
{
    size_t max_total = 0;
    for (int i = 0; i < n; i++)
        if (bufs[i].bytes + 2 * (size_t)GUARD_BYTES > max_total) max_total = bufs[i].bytes + 2 * (size_t)GUARD_BYTES;
    unsigned char *tmp = (unsigned char *)malloc(max_total);
    unsigned char *second = (unsigned char *)malloc(out_bytes ? out_bytes : 1);
    mf_status s = MF_OK;
    if (tmp == NULL || second == NULL) {
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host copies");
        goto done;
    }
    for (int run = 0; run < 2 && s == MF_OK; run++) {
        for (int o = n_in; o < n && run == 1 && s == MF_OK; o++)
            if (bufs[o].base != NULL) /* NULL: an optional output not asked for */
                s = mf_buffer_upload(ctx, bufs[o].base, bufs[o].image, bufs[o].bytes + 2 * (size_t)GUARD_BYTES);
        if (s != MF_OK || (s = guarded_call(ctx, call, args, bufs, n_in, n, tmp)) != MF_OK) break;
        unsigned char *dst = run == 0 ? (unsigned char *)out_host : second;
        for (int o = n_in; o < n && s == MF_OK; o++) {
            if (bufs[o].base == NULL) continue;
            s = mf_buffer_download(ctx, dst, guarded_ptr(&bufs[o]), bufs[o].bytes);
            dst += bufs[o].bytes;
        }
    }
    if (s == MF_OK && memcmp(out_host, second, out_bytes) != 0) {
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
    if (g_state == NULL || g_state->candidate == NULL)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "no candidate under verification on this thread (call mf_verify)");
    size_t out_bytes = 0;
    for (int i = n_in; i < n; i++) out_bytes += sp[i].dev != NULL ? sp[i].bytes : 0;
    unsigned char *out = (unsigned char *)malloc(out_bytes ? out_bytes : 1);
    mf_status s = out != NULL ? MF_OK : mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host outputs");
    for (int i = 0; i < n && s == MF_OK; i++) {
        if (i < n_in) {
            if (sp[i].dev == NULL || sp[i].bytes == 0) continue;
            void *h = malloc(sp[i].bytes);
            if (h == NULL) {
                s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host copy of %s", sp[i].name);
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
    if (s == MF_OK) s = guarded_twice(ctx, call, args, bufs, n_in, n, out, out_bytes);
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

/* ---- cases by id (issue 16 item 3: fixed, random, large) ------------------------------------ */
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
    snprintf(st->dump_stem, sizeof st->dump_stem, "%.120s/%.40s-%s%s", dir, tg->name, cid, salt ? "-rerun" : "");
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

/* The defense of a case that ran and failed its checks: from its failure kind. */
static const char *defense_of(const mf_case_result *r, int all_zero)
{
    if (r->failure == MF_FAILURE_SCRATCH_CEILING) return "scratch-ceiling";
    if (all_zero || r->failure == MF_FAILURE_ALL_ZERO) return "all-zero";
    if (r->failure == MF_FAILURE_NONFINITE) return "nan-prefill";
    return "equivalence";
}

/* One case with every defense; fills row (always). */
static void run_one(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void), const mf_case_id *c,
                    uint64_t salt, mf_verify_row *row)
{
    verify_state st;
    memset(&st, 0, sizeof st);
    st.candidate = candidate;
    g_state = &st;
    memset(row, 0, sizeof *row);
    mf_clear_error();
    dump_begin(tg, c, salt, &st);
    mf_status s = run_case_id(ctx, tg, candidate, c, salt, &row->result);
    mf_case_result *r = &row->result;
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
        if (r->message[0] == '\0') snprintf(r->message, sizeof r->message, "%s: %s", mf_status_name(s), mf_last_error());
    } else if (!r->pass) {
        snprintf(row->defense, sizeof row->defense, "%s", defense_of(r, st.all_zero));
    }
    dump_end(row, &st);
    g_state = NULL;
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
    const int n = (int)n_ids;

    /* Sweep 1: every case in order. */
    for (int c = 0; c < n; c++) run_one(ctx, tg, candidate, &ids[c], 0, &rows[c]);
    /* Sweep 2: the cases that passed, in reverse order, fresh buffers, other inputs. */
    for (int c = n - 1; c >= 0; c--) {
        if (!rows[c].result.pass) continue;
        mf_verify_row again;
        run_one(ctx, tg, candidate, &ids[c], 1, &again);
        if (again.result.pass) continue;
        const int output_check = strcmp(again.defense, "equivalence") == 0 ||
                                 strcmp(again.defense, "nan-prefill") == 0 ||
                                 strcmp(again.defense, "all-zero") == 0;
        char msg[sizeof again.result.message];
        snprintf(msg, sizeof msg, "%s", again.result.message);
        rows[c] = again;
        if (output_check) {
            snprintf(rows[c].defense, sizeof rows[c].defense, "rerun");
            snprintf(rows[c].result.message, sizeof rows[c].result.message,
                     "second sweep (reverse case order, fresh buffers, different inputs): %.180s", msg);
        }
    }
    *n_rows = (size_t)n;
    return MF_OK;
}

/* ---- the case list of a verification (issue 16 item 3) ----------------------------------------- */
int mf_verify_has_generator(const char *op)
{
    const mf_verify_target *tg = find_target(op, NULL);
    return tg != NULL && tg->run_id != NULL && tg->describe != NULL;
}

mf_status mf_verify_case_ids(const char *op, uint64_t seed, int n_random, int large, mf_case_id *ids, size_t cap,
                             size_t *n)
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
    for (int i = 0; i < n_random; i++) ids[k++] = (mf_case_id){MF_CASE_RANDOM, i, seed};
    if (large) ids[k++] = (mf_case_id){MF_CASE_LARGE, 0, seed};
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

mf_status mf_verify_case_ids(const char *op, uint64_t seed, int n_random, int large, mf_case_id *ids, size_t cap,
                             size_t *n)
{
    (void)seed, (void)n_random, (void)large, (void)ids, (void)cap;
    if (n != NULL) *n = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels", op != NULL ? op : "(null)");
}

mf_status mf_verify_describe(const char *op, const mf_case_id *id, char *buf, size_t cap, size_t *bytes)
{
    (void)id;
    if (buf != NULL && cap > 0) buf[0] = '\0';
    if (bytes != NULL) *bytes = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels", op != NULL ? op : "(null)");
}

mf_status mf_verify_ids(mf_context *ctx, const char *op, void (*candidate)(void), const mf_case_id *ids,
                        size_t n_ids, mf_verify_row *rows, size_t cap, size_t *n_rows)
{
    (void)ctx, (void)candidate, (void)ids, (void)n_ids, (void)rows, (void)cap;
    if (n_rows != NULL) *n_rows = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels", op != NULL ? op : "(null)");
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

#endif

/* ---- case ids as text (both builds) ---------------------------------------------------------- */
void mf_case_id_format(const mf_case_id *id, char *buf, size_t cap)
{
    if (buf == NULL || cap == 0) return;
    if (id == NULL) snprintf(buf, cap, "?");
    else if (id->kind == MF_CASE_FIXED) snprintf(buf, cap, "f%d", id->index);
    else if (id->kind == MF_CASE_RANDOM) snprintf(buf, cap, "g%d", id->index);
    else snprintf(buf, cap, "large");
}

int mf_case_id_parse(const char *s, uint64_t seed, mf_case_id *id)
{
    if (s == NULL || id == NULL) return 0;
    if (strcmp(s, "large") == 0) {
        *id = (mf_case_id){MF_CASE_LARGE, 0, seed};
        return 1;
    }
    mf_case_kind kind = MF_CASE_FIXED;
    const char *p = s;
    if (*p == 'f' || *p == 'g') kind = *p++ == 'g' ? MF_CASE_RANDOM : MF_CASE_FIXED;
    if (*p < '0' || *p > '9') return 0;
    char *end = NULL;
    const long v = strtol(p, &end, 10);
    if (end == NULL || *end != '\0' || v < 0 || v > 1000000) return 0;
    *id = (mf_case_id){kind, (int)v, kind == MF_CASE_FIXED ? 0 : seed};
    return 1;
}
