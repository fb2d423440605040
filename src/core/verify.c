/* memfix verify: a candidate kernel against the reference, with defenses
 * (include/memfix/verify.h; the command is tools/cmd_verify.c).
 *
 * The op's hook (mf_<op>_verify_case, in src/ops/<op>.c) runs a built-in case
 * exactly as `memfix report` does, calling an entry function in place of the
 * optimized variant. memfix verify passes a guard function of the same
 * signature (verify_matmul_guard) which copies the inputs into guarded
 * buffers, calls the candidate twice and checks guard bands, inputs, hidden
 * allocations and determinism, then hands the first result back to the hook,
 * which compares it with the reference and checks the scratch ceiling. The
 * guards of the other targets describe their buffers as a gspec list and go
 * through guard_generic (optional buffers may be NULL). A target is an op, or
 * "op.entry" for an op verified one entry point at a time (targets[] below). */
#define _POSIX_C_SOURCE 200809L
#include "memfix/verify.h"

#include "memfix/check.h"
#include "mf_backend.h"
#include "mf_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef MF_HAVE_HOST_KERNELS

enum { GUARD_BYTES = 1024 }; /* a multiple of 256: the candidate's pointers keep cudaMalloc's alignment */

/* The state of one guarded call (thread-local: one verification per thread). */
typedef struct verify_state {
    mf_matmul_candidate_fn matmul;
    mf_cross_entropy_forward_candidate_fn ce_forward;
    mf_rope_candidate_fn rope;
    mf_cross_entropy_backward_candidate_fn ce_backward;
    mf_attention_forward_candidate_fn attn_fwd;
    mf_attention_backward_candidate_fn attn_bwd;
    mf_npt_forward_candidate_fn npt_fwd;
    mf_npt_backward_candidate_fn npt_bwd;
    mf_linear_attention_forward_candidate_fn la_fwd;
    mf_linear_attention_backward_candidate_fn la_bwd;
    char defense[MF_VERIFY_DEFENSE_MAX];
    char reason[256];
    int all_zero; /* the candidate's output was all zeros */
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
typedef struct guarded {
    const char *name;
    unsigned char *base;  /* device: [guard][bytes][guard] */
    unsigned char *image; /* host: what base must hold (guards exact; interior = the data) */
    size_t bytes;
} guarded;

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
typedef mf_status (*call_fn)(mf_context *ctx, const void *args, guarded *bufs);

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
    sampler_start(&smp, info);
    mf_clear_error();
    mf_status s = call(ctx, args, bufs);
    mf_status sync = backend_sync(ctx)();
    if (sync == MF_OK) sync = mf_context_synchronize(ctx);
    const size_t max_used = sampler_stop(&smp);
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

/* ---- the generic guard ----------------------------------------------------------------- */
/* One buffer of a guarded call: an input (copied from dev) or an output
 * (NaN-filled, of dtype; copied back to dev after the checks). */
typedef struct gspec {
    const char *name;
    const void *dev;
    size_t bytes;
    mf_dtype dtype; /* outputs: the NaN pattern */
} gspec;

/* Guarded copies of sp[0..n_in) (inputs) and sp[n_in..n) (outputs), the
 * candidate called twice through 'call' with every check, then the first run's
 * outputs uploaded to the hook's buffers. NULL buffers (optional inputs and
 * outputs not given) are skipped: bufs[i].base stays NULL and the candidate
 * gets NULL (gptr). */
static mf_status guard_generic(mf_context *ctx, const gspec *sp, int n_in, int n, call_fn call, const void *args,
                               guarded *bufs)
{
    memset(bufs, 0, sizeof(guarded) * (size_t)n);
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

static void *gptr(guarded *bufs, int i) { return bufs[i].base != NULL ? guarded_ptr(&bufs[i]) : NULL; }

/* ---- matmul ------------------------------------------------------------------------ */
typedef struct matmul_args {
    mf_dtype dtype;
    int trans_a, trans_b;
    int64_t M, N, K;
} matmul_args;

static mf_status matmul_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const matmul_args *a = (const matmul_args *)args;
    return g_state->matmul(ctx, a->dtype, a->trans_a, a->trans_b, a->M, a->N, a->K, guarded_ptr(&bufs[0]),
                           guarded_ptr(&bufs[1]), (float *)guarded_ptr(&bufs[2]));
}

/* The entry the matmul hook calls in place of the variant (mf_matmul_candidate_fn). */
static mf_status verify_matmul_guard(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                     int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    const size_t es = mf_dtype_size(dtype);
    const size_t a_bytes = (size_t)M * (size_t)K * es, b_bytes = (size_t)K * (size_t)N * es;
    const size_t c_bytes = (size_t)M * (size_t)N * sizeof(float);
    const matmul_args args = {dtype, trans_a, trans_b, M, N, K};
    guarded bufs[3];
    memset(bufs, 0, sizeof bufs);
    void *ha = malloc(a_bytes), *hb = malloc(b_bytes), *hc = malloc(c_bytes);
    mf_status s = MF_OK;
    if (ha == NULL || hb == NULL || hc == NULL) {
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host copies of A, B, C");
        goto done;
    }
    if ((s = mf_buffer_download(ctx, ha, A, a_bytes)) != MF_OK || (s = mf_buffer_download(ctx, hb, B, b_bytes)) != MF_OK ||
        (s = guarded_make(ctx, &bufs[0], "A", ha, a_bytes)) != MF_OK ||
        (s = guarded_make(ctx, &bufs[1], "B", hb, b_bytes)) != MF_OK ||
        (s = guarded_make(ctx, &bufs[2], "C", NULL, c_bytes)) != MF_OK)
        goto done;
    if ((s = guarded_twice(ctx, matmul_call, &args, bufs, 2, 3, hc, c_bytes)) != MF_OK) goto done;
    s = mf_buffer_upload(ctx, C, hc, c_bytes);
done:
    for (int i = 0; i < 3; i++) guarded_free(ctx, &bufs[i]);
    free(hc);
    free(hb);
    free(ha);
    return s;
}

/* ---- cross_entropy forward ----------------------------------------------------------- */
typedef struct ce_args {
    int64_t n_rows, hidden_dim, vocab;
    mf_dtype dtype;
    int has_bias;
    const mf_cross_entropy_options *opts;
} ce_args;

/* bufs: hidden, weight, labels, [bias], loss, lse */
static mf_status ce_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const ce_args *a = (const ce_args *)args;
    const int nb = a->has_bias;
    return g_state->ce_forward(ctx, a->n_rows, a->hidden_dim, a->vocab, a->dtype, guarded_ptr(&bufs[0]),
                               guarded_ptr(&bufs[1]), nb ? guarded_ptr(&bufs[3]) : NULL,
                               (const int64_t *)guarded_ptr(&bufs[2]), a->opts, (float *)guarded_ptr(&bufs[3 + nb]),
                               (float *)guarded_ptr(&bufs[4 + nb]));
}

static mf_status verify_ce_guard(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab, mf_dtype dtype,
                                 const void *hidden, const void *weight, const void *bias, const int64_t *labels,
                                 const mf_cross_entropy_options *opts, float *loss, float *lse)
{
    const size_t es = mf_dtype_size(dtype), n = (size_t)n_rows, d = (size_t)hidden_dim, v = (size_t)vocab;
    const size_t n_loss = opts != NULL && opts->reduction == MF_CE_REDUCTION_NONE ? n : 1;
    const size_t in_bytes[4] = {n * d * es, v * d * es, n * sizeof(int64_t), v * es};
    const void *in_dev[4] = {hidden, weight, labels, bias};
    static const char *const in_names[4] = {"hidden", "weight", "labels", "bias"};
    const int n_in = bias != NULL ? 4 : 3;
    const ce_args args = {n_rows, hidden_dim, vocab, dtype, bias != NULL, opts};
    guarded bufs[6];
    memset(bufs, 0, sizeof bufs);
    void *host[4] = {NULL, NULL, NULL, NULL};
    float *out = (float *)malloc((n_loss + n) * sizeof(float));
    mf_status s = out != NULL ? MF_OK
                              : mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host outputs");
    for (int i = 0; i < n_in && s == MF_OK; i++) {
        host[i] = malloc(in_bytes[i]);
        if (host[i] == NULL)
            s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host copy of %s", in_names[i]);
        else if ((s = mf_buffer_download(ctx, host[i], in_dev[i], in_bytes[i])) == MF_OK)
            s = guarded_make(ctx, &bufs[i], in_names[i], host[i], in_bytes[i]);
    }
    if (s == MF_OK) s = guarded_make(ctx, &bufs[n_in], "loss", NULL, n_loss * sizeof(float));
    if (s == MF_OK) s = guarded_make(ctx, &bufs[n_in + 1], "lse", NULL, n * sizeof(float));
    if (s == MF_OK) s = guarded_twice(ctx, ce_call, &args, bufs, n_in, n_in + 2, out, (n_loss + n) * sizeof(float));
    if (s == MF_OK) s = mf_buffer_upload(ctx, loss, out, n_loss * sizeof(float));
    if (s == MF_OK) s = mf_buffer_upload(ctx, lse, out + n_loss, n * sizeof(float));
    for (int i = 0; i < 6; i++) guarded_free(ctx, &bufs[i]);
    for (int i = 0; i < 4; i++) free(host[i]);
    free(out);
    return s;
}

/* ---- cross_entropy backward ------------------------------------------------------------------ */
/* bufs: hidden, weight, bias, labels, lse, grad_loss, grad_hidden, grad_weight, grad_bias */
static mf_status ce_bwd_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const ce_args *a = (const ce_args *)args;
    return g_state->ce_backward(ctx, a->n_rows, a->hidden_dim, a->vocab, a->dtype, gptr(bufs, 0), gptr(bufs, 1),
                                gptr(bufs, 2), (const int64_t *)gptr(bufs, 3), a->opts, (const float *)gptr(bufs, 4),
                                (const float *)gptr(bufs, 5), (float *)gptr(bufs, 6), (float *)gptr(bufs, 7),
                                (float *)gptr(bufs, 8));
}

static mf_status verify_ce_bwd_guard(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                     mf_dtype dtype, const void *hidden, const void *weight, const void *bias,
                                     const int64_t *labels, const mf_cross_entropy_options *opts, const float *lse,
                                     const float *grad_loss, float *grad_hidden, float *grad_weight,
                                     float *grad_bias)
{
    const size_t es = mf_dtype_size(dtype), n = (size_t)n_rows, d = (size_t)hidden_dim, v = (size_t)vocab;
    const size_t n_loss = opts != NULL && opts->reduction == MF_CE_REDUCTION_NONE ? n : 1;
    const gspec sp[9] = {{"hidden", hidden, n * d * es, dtype},
                         {"weight", weight, v * d * es, dtype},
                         {"bias", bias, v * es, dtype},
                         {"labels", labels, n * sizeof(int64_t), MF_DTYPE_F32},
                         {"lse", lse, n * 4, MF_DTYPE_F32},
                         {"grad_loss", grad_loss, n_loss * 4, MF_DTYPE_F32},
                         {"grad_hidden", grad_hidden, n * d * 4, MF_DTYPE_F32},
                         {"grad_weight", grad_weight, v * d * 4, MF_DTYPE_F32},
                         {"grad_bias", grad_bias, v * 4, MF_DTYPE_F32}};
    const ce_args args = {n_rows, hidden_dim, vocab, dtype, bias != NULL, opts};
    guarded bufs[9];
    return guard_generic(ctx, sp, 6, 9, ce_bwd_call, &args, bufs);
}

/* ---- rope (fused signature) ------------------------------------------------------------ */
typedef struct rope_args {
    const mf_rope_config *cfg;
    mf_rope_direction dir;
    mf_rope_tensors t;
    mf_rope_positions pos;
} rope_args;

/* bufs: q, k, ids (NULL for offset positions), q_out, k_out */
static mf_status rope_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const rope_args *a = (const rope_args *)args;
    mf_rope_tensors t = a->t;
    mf_rope_positions pos = a->pos;
    t.q = gptr(bufs, 0);
    t.k = gptr(bufs, 1);
    pos.ids = gptr(bufs, 2);
    t.q_out = gptr(bufs, 3);
    t.k_out = gptr(bufs, 4);
    return g_state->rope(ctx, a->cfg, a->dir, &t, &pos);
}

static mf_status verify_rope_guard(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                   const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    const size_t es = mf_dtype_size(t->dtype), tok = (size_t)t->batch * (size_t)t->seq_len;
    const size_t q_bytes = tok * (size_t)t->heads_q * (size_t)cfg->head_dim * es;
    const size_t k_bytes = tok * (size_t)t->heads_k * (size_t)cfg->head_dim * es;
    size_t id_bytes = 0;
    if (pos->kind != MF_ROPE_POS_OFFSET) {
        const size_t rows = pos->batch_stride > 0 ? (size_t)(t->batch - 1) * (size_t)pos->batch_stride : 0;
        id_bytes = (rows + (size_t)t->seq_len) * (pos->kind == MF_ROPE_POS_I32 ? 4u : 8u);
    }
    const gspec sp[5] = {{"q", t->q, q_bytes, t->dtype},
                         {"k", t->k, k_bytes, t->dtype},
                         {"ids", pos->kind != MF_ROPE_POS_OFFSET ? pos->ids : NULL, id_bytes, MF_DTYPE_F32},
                         {"q_out", t->q_out, q_bytes, t->dtype},
                         {"k_out", t->k_out, k_bytes, t->dtype}};
    const rope_args args = {cfg, dir, *t, *pos};
    guarded bufs[5];
    return guard_generic(ctx, sp, 3, 5, rope_call, &args, bufs);
}

/* ---- attention (tiled forward / backward) ------------------------------------------------ */
typedef struct attn_args {
    mf_dtype dtype;
    int causal;
    int64_t B, H, N, D, Dv;
} attn_args;

/* bufs: q, k, v, out, lse */
static mf_status attn_fwd_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const attn_args *a = (const attn_args *)args;
    return g_state->attn_fwd(ctx, a->dtype, a->causal, a->B, a->H, a->N, a->D, a->Dv, gptr(bufs, 0), gptr(bufs, 1),
                             gptr(bufs, 2), (float *)gptr(bufs, 3), (float *)gptr(bufs, 4));
}

static mf_status verify_attn_fwd_guard(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                                       int64_t D, int64_t Dv, const void *q, const void *k, const void *v, float *out,
                                       float *lse)
{
    const size_t es = mf_dtype_size(dtype), rows = (size_t)B * (size_t)H * (size_t)N;
    const gspec sp[5] = {{"q", q, rows * (size_t)D * es, dtype},
                         {"k", k, rows * (size_t)D * es, dtype},
                         {"v", v, rows * (size_t)Dv * es, dtype},
                         {"out", out, rows * (size_t)Dv * 4, MF_DTYPE_F32},
                         {"lse", lse, rows * 4, MF_DTYPE_F32}};
    const attn_args args = {dtype, causal, B, H, N, D, Dv};
    guarded bufs[5];
    return guard_generic(ctx, sp, 3, 5, attn_fwd_call, &args, bufs);
}

/* bufs: q, k, v, out, dout, lse, dq, dk, dv */
static mf_status attn_bwd_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const attn_args *a = (const attn_args *)args;
    return g_state->attn_bwd(ctx, a->dtype, a->causal, a->B, a->H, a->N, a->D, a->Dv, gptr(bufs, 0), gptr(bufs, 1),
                             gptr(bufs, 2), (const float *)gptr(bufs, 3), gptr(bufs, 4),
                             (const float *)gptr(bufs, 5), (float *)gptr(bufs, 6), (float *)gptr(bufs, 7),
                             (float *)gptr(bufs, 8));
}

static mf_status verify_attn_bwd_guard(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                                       int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                                       const float *out, const void *dout, const float *lse, float *dq, float *dk,
                                       float *dv)
{
    const size_t es = mf_dtype_size(dtype), rows = (size_t)B * (size_t)H * (size_t)N;
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const gspec sp[9] = {{"q", q, nqk * es, dtype},          {"k", k, nqk * es, dtype},
                         {"v", v, nv * es, dtype},           {"out", out, nv * 4, MF_DTYPE_F32},
                         {"dout", dout, nv * es, dtype},     {"lse", lse, rows * 4, MF_DTYPE_F32},
                         {"dq", dq, nqk * 4, MF_DTYPE_F32}, {"dk", dk, nqk * 4, MF_DTYPE_F32},
                         {"dv", dv, nv * 4, MF_DTYPE_F32}};
    const attn_args args = {dtype, causal, B, H, N, D, Dv};
    guarded bufs[9];
    return guard_generic(ctx, sp, 6, 9, attn_bwd_call, &args, bufs);
}

/* ---- npt (forward / backward) ------------------------------------------------------------ */
typedef struct npt_args {
    mf_dtype dtype;
    mf_npt_shape shape;
    const mf_npt_options *opts;
} npt_args;

/* element counts of h, W, A, B, m, bias or grad_out (fwd: F, bwd: T*F) */
static void npt_sizes(mf_npt_shape s, int fwd, size_t n[6])
{
    const size_t T = (size_t)s.batch * (size_t)s.seq, D = (size_t)s.d_model, F = (size_t)s.d_ffn,
                 R = (size_t)s.rank;
    n[0] = T * D, n[1] = D * F, n[2] = D * R, n[3] = R * F, n[4] = T * R, n[5] = fwd ? F : T * F;
}

/* bufs: h, W, A, B, m, bias (may be NULL), out */
static mf_status npt_fwd_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const npt_args *a = (const npt_args *)args;
    return g_state->npt_fwd(ctx, a->dtype, a->shape, gptr(bufs, 0), gptr(bufs, 1), gptr(bufs, 2), gptr(bufs, 3),
                            gptr(bufs, 4), gptr(bufs, 5), gptr(bufs, 6), a->opts);
}

static mf_status verify_npt_fwd_guard(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                                      const void *W, const void *A, const void *B, const void *m, const void *bias,
                                      void *out, const mf_npt_options *opts)
{
    const size_t es = mf_dtype_size(dtype);
    size_t n[6];
    npt_sizes(shape, 1, n);
    const gspec sp[7] = {{"h", h, n[0] * es, dtype},       {"W", W, n[1] * es, dtype}, {"A", A, n[2] * es, dtype},
                         {"B", B, n[3] * es, dtype},       {"m", m, n[4] * es, dtype},
                         {"bias", bias, n[5] * es, dtype}, {"out", out, (size_t)shape.batch * (size_t)shape.seq *
                                                                            (size_t)shape.d_ffn * es, dtype}};
    const npt_args args = {dtype, shape, opts};
    guarded bufs[7];
    return guard_generic(ctx, sp, 6, 7, npt_fwd_call, &args, bufs);
}

/* bufs: h, W, A, B, m, grad_out, grad_h, grad_W, grad_A, grad_B, grad_m, grad_bias */
static mf_status npt_bwd_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const npt_args *a = (const npt_args *)args;
    return g_state->npt_bwd(ctx, a->dtype, a->shape, gptr(bufs, 0), gptr(bufs, 1), gptr(bufs, 2), gptr(bufs, 3),
                            gptr(bufs, 4), gptr(bufs, 5), gptr(bufs, 6), gptr(bufs, 7), gptr(bufs, 8), gptr(bufs, 9),
                            gptr(bufs, 10), gptr(bufs, 11), a->opts);
}

static mf_status verify_npt_bwd_guard(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                                      const void *W, const void *A, const void *B, const void *m,
                                      const void *grad_out, void *grad_h, void *grad_W, void *grad_A, void *grad_B,
                                      void *grad_m, void *grad_bias, const mf_npt_options *opts)
{
    const size_t es = mf_dtype_size(dtype);
    size_t n[6];
    npt_sizes(shape, 0, n);
    const gspec sp[12] = {{"h", h, n[0] * es, dtype},
                          {"W", W, n[1] * es, dtype},
                          {"A", A, n[2] * es, dtype},
                          {"B", B, n[3] * es, dtype},
                          {"m", m, n[4] * es, dtype},
                          {"grad_out", grad_out, n[5] * es, dtype},
                          {"grad_h", grad_h, n[0] * es, dtype},
                          {"grad_W", grad_W, n[1] * es, dtype},
                          {"grad_A", grad_A, n[2] * es, dtype},
                          {"grad_B", grad_B, n[3] * es, dtype},
                          {"grad_m", grad_m, n[4] * es, dtype},
                          {"grad_bias", grad_bias, (size_t)shape.d_ffn * es, dtype}};
    const npt_args args = {dtype, shape, opts};
    guarded bufs[12];
    return guard_generic(ctx, sp, 6, 12, npt_bwd_call, &args, bufs);
}

/* ---- linear_attention (forward / backward, with state) -------------------------------------- */
typedef struct la_args {
    mf_dtype dtype;
    int causal;
    int64_t chunk, B, H, N, D, Dv;
    int has_state, has_grad;
} la_args;

/* bufs: q, k, v, initial_kv, initial_z, out, final_kv, final_z */
static mf_status la_fwd_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const la_args *a = (const la_args *)args;
    const mf_linear_attention_state st = {(const float *)gptr(bufs, 3), (const float *)gptr(bufs, 4),
                                          (float *)gptr(bufs, 6), (float *)gptr(bufs, 7)};
    return g_state->la_fwd(ctx, a->dtype, a->causal, a->chunk, a->B, a->H, a->N, a->D, a->Dv, gptr(bufs, 0),
                           gptr(bufs, 1), gptr(bufs, 2), a->has_state ? &st : NULL, (float *)gptr(bufs, 5));
}

static mf_status verify_la_fwd_guard(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B,
                                     int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                     const void *v, const mf_linear_attention_state *state, float *out)
{
    const size_t es = mf_dtype_size(dtype), bh = (size_t)B * (size_t)H, rows = bh * (size_t)N;
    const size_t ns = bh * (size_t)D * (size_t)Dv * 4, nz = bh * (size_t)D * 4;
    const mf_linear_attention_state none = {NULL, NULL, NULL, NULL};
    const mf_linear_attention_state *s = state != NULL ? state : &none;
    const gspec sp[8] = {{"q", q, rows * (size_t)D * es, dtype},
                         {"k", k, rows * (size_t)D * es, dtype},
                         {"v", v, rows * (size_t)Dv * es, dtype},
                         {"state->initial_kv", s->initial_kv, ns, MF_DTYPE_F32},
                         {"state->initial_z", s->initial_z, nz, MF_DTYPE_F32},
                         {"out", out, rows * (size_t)Dv * 4, MF_DTYPE_F32},
                         {"state->final_kv", s->final_kv, ns, MF_DTYPE_F32},
                         {"state->final_z", s->final_z, nz, MF_DTYPE_F32}};
    const la_args args = {dtype, causal, chunk, B, H, N, D, Dv, state != NULL, 0};
    guarded bufs[8];
    return guard_generic(ctx, sp, 5, 8, la_fwd_call, &args, bufs);
}

/* bufs: q, k, v, out, dout, initial_kv, initial_z, d_final_kv, d_final_z, dq, dk, dv, d_initial_kv, d_initial_z */
static mf_status la_bwd_call(mf_context *ctx, const void *args, guarded *bufs)
{
    const la_args *a = (const la_args *)args;
    const mf_linear_attention_state st = {(const float *)gptr(bufs, 5), (const float *)gptr(bufs, 6), NULL, NULL};
    const mf_linear_attention_state_grad gr = {(const float *)gptr(bufs, 7), (const float *)gptr(bufs, 8),
                                               (float *)gptr(bufs, 12), (float *)gptr(bufs, 13)};
    return g_state->la_bwd(ctx, a->dtype, a->causal, a->chunk, a->B, a->H, a->N, a->D, a->Dv, gptr(bufs, 0),
                           gptr(bufs, 1), gptr(bufs, 2), (const float *)gptr(bufs, 3), gptr(bufs, 4),
                           a->has_state ? &st : NULL, a->has_grad ? &gr : NULL, (float *)gptr(bufs, 9),
                           (float *)gptr(bufs, 10), (float *)gptr(bufs, 11));
}

static mf_status verify_la_bwd_guard(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B,
                                     int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                     const void *v, const float *out, const void *dout,
                                     const mf_linear_attention_state *state,
                                     const mf_linear_attention_state_grad *grad, float *dq, float *dk, float *dv)
{
    const size_t es = mf_dtype_size(dtype), bh = (size_t)B * (size_t)H, rows = bh * (size_t)N;
    const size_t ns = bh * (size_t)D * (size_t)Dv * 4, nz = bh * (size_t)D * 4;
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const mf_linear_attention_state none = {NULL, NULL, NULL, NULL};
    const mf_linear_attention_state_grad gnone = {NULL, NULL, NULL, NULL};
    const mf_linear_attention_state *s = state != NULL ? state : &none;
    const mf_linear_attention_state_grad *g = grad != NULL ? grad : &gnone;
    const gspec sp[14] = {{"q", q, nqk * es, dtype},
                          {"k", k, nqk * es, dtype},
                          {"v", v, nv * es, dtype},
                          {"out", out, nv * 4, MF_DTYPE_F32},
                          {"dout", dout, nv * es, dtype},
                          {"state->initial_kv", s->initial_kv, ns, MF_DTYPE_F32},
                          {"state->initial_z", s->initial_z, nz, MF_DTYPE_F32},
                          {"grad->d_final_kv", g->d_final_kv, ns, MF_DTYPE_F32},
                          {"grad->d_final_z", g->d_final_z, nz, MF_DTYPE_F32},
                          {"dq", dq, nqk * 4, MF_DTYPE_F32},
                          {"dk", dk, nqk * 4, MF_DTYPE_F32},
                          {"dv", dv, nv * 4, MF_DTYPE_F32},
                          {"grad->d_initial_kv", g->d_initial_kv, ns, MF_DTYPE_F32},
                          {"grad->d_initial_z", g->d_initial_z, nz, MF_DTYPE_F32}};
    const la_args args = {dtype, causal, chunk, B, H, N, D, Dv, state != NULL, grad != NULL};
    guarded bufs[14];
    return guard_generic(ctx, sp, 9, 14, la_bwd_call, &args, bufs);
}

/* ---- the driver -------------------------------------------------------------------- */
typedef mf_status (*verify_case_fn)(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                                    mf_case_result *out);

static mf_status matmul_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                             mf_case_result *out)
{
    g_state->matmul = (mf_matmul_candidate_fn)candidate;
    return mf_matmul_verify_case(ctx, verify_matmul_guard, case_index, salt, out);
}

static mf_status ce_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                         mf_case_result *out)
{
    g_state->ce_forward = (mf_cross_entropy_forward_candidate_fn)candidate;
    return mf_cross_entropy_verify_case(ctx, verify_ce_guard, case_index, salt, out);
}

static mf_status ce_bwd_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                             mf_case_result *out)
{
    g_state->ce_backward = (mf_cross_entropy_backward_candidate_fn)candidate;
    return mf_cross_entropy_backward_verify_case(ctx, verify_ce_bwd_guard, case_index, salt, out);
}

static mf_status rope_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                           mf_case_result *out)
{
    g_state->rope = (mf_rope_candidate_fn)candidate;
    return mf_rope_verify_case(ctx, verify_rope_guard, case_index, salt, out);
}

static mf_status attn_fwd_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                               mf_case_result *out)
{
    g_state->attn_fwd = (mf_attention_forward_candidate_fn)candidate;
    return mf_attention_verify_case(ctx, verify_attn_fwd_guard, NULL, case_index, salt, out);
}

static mf_status attn_bwd_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                               mf_case_result *out)
{
    g_state->attn_bwd = (mf_attention_backward_candidate_fn)candidate;
    return mf_attention_verify_case(ctx, NULL, verify_attn_bwd_guard, case_index, salt, out);
}

static mf_status npt_fwd_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                              mf_case_result *out)
{
    g_state->npt_fwd = (mf_npt_forward_candidate_fn)candidate;
    return mf_npt_verify_case(ctx, verify_npt_fwd_guard, NULL, case_index, salt, out);
}

static mf_status npt_bwd_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                              mf_case_result *out)
{
    g_state->npt_bwd = (mf_npt_backward_candidate_fn)candidate;
    return mf_npt_verify_case(ctx, NULL, verify_npt_bwd_guard, case_index, salt, out);
}

static int npt_fwd_n_cases(void) { return mf_npt_verify_n_cases(MF_NPT_FORWARD); }
static int npt_bwd_n_cases(void) { return mf_npt_verify_n_cases(MF_NPT_BACKWARD); }

static mf_status la_fwd_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                             mf_case_result *out)
{
    g_state->la_fwd = (mf_linear_attention_forward_candidate_fn)candidate;
    return mf_linear_attention_verify_case(ctx, verify_la_fwd_guard, NULL, case_index, salt, out);
}

static mf_status la_bwd_case(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t salt,
                             mf_case_result *out)
{
    g_state->la_bwd = (mf_linear_attention_backward_candidate_fn)candidate;
    return mf_linear_attention_verify_case(ctx, NULL, verify_la_bwd_guard, case_index, salt, out);
}

/* The verify targets: "op" or "op.entry" for an op with several entry points. */
typedef struct verify_target {
    const char *name;
    const char *op; /* registry name */
    verify_case_fn fn;
    int (*n_cases)(void); /* NULL: every case of the registry op */
} verify_target;

static const verify_target targets[] = {
    {"matmul", "matmul", matmul_case, NULL},
    {"cross_entropy", "cross_entropy", ce_case, NULL},
    {"cross_entropy.forward", "cross_entropy", ce_case, NULL},
    {"cross_entropy.backward", "cross_entropy", ce_bwd_case, NULL},
    {"rope", "rope", rope_case, NULL},
    {"attention.forward", "attention", attn_fwd_case, NULL},
    {"attention.backward", "attention", attn_bwd_case, NULL},
    {"npt.forward", "npt", npt_fwd_case, npt_fwd_n_cases},
    {"npt.backward", "npt", npt_bwd_case, npt_bwd_n_cases},
    {"linear_attention.forward", "linear_attention", la_fwd_case, mf_linear_attention_verify_n_cases},
    {"linear_attention.backward", "linear_attention", la_bwd_case, mf_linear_attention_verify_n_cases},
};
#define N_TARGETS ((int)(sizeof targets / sizeof targets[0]))

static const verify_target *find_target(const char *op)
{
    for (int i = 0; op != NULL && i < N_TARGETS; i++)
        if (strcmp(op, targets[i].name) == 0) return mf_registry_find(targets[i].op) != NULL ? &targets[i] : NULL;
    return NULL;
}

int mf_verify_supported(const char *op) { return find_target(op) != NULL; }

const char *mf_verify_supported_ops(void) { return "matmul, cross_entropy, cross_entropy.backward, rope, attention.forward, attention.backward, npt.forward, npt.backward, linear_attention.forward, linear_attention.backward"; }

int mf_verify_n_cases(const char *op)
{
    const verify_target *t = find_target(op);
    if (t == NULL) return -1;
    return t->n_cases != NULL ? t->n_cases() : mf_registry_find(t->op)->n_cases;
}

/* One case with every defense; fills row (always). */
static void run_one(mf_context *ctx, verify_case_fn fn, void (*candidate)(void), int c, uint64_t salt,
                    mf_verify_row *row)
{
    verify_state st;
    memset(&st, 0, sizeof st);
    g_state = &st;
    memset(row, 0, sizeof *row);
    mf_clear_error();
    mf_status s = fn(ctx, candidate, c, salt, &row->result);
    mf_case_result *r = &row->result;
    if (st.defense[0] != '\0') {
        r->pass = 0;
        r->max_abs_err = r->max_rel_err = NAN; /* not compared: shown as nan / null */
        snprintf(row->defense, sizeof row->defense, "%s", st.defense);
        snprintf(r->message, sizeof r->message, "%s", st.reason);
    } else if (s != MF_OK) {
        r->pass = 0;
        r->max_abs_err = r->max_rel_err = NAN;
        snprintf(row->defense, sizeof row->defense, "error");
        if (r->message[0] == '\0') snprintf(r->message, sizeof r->message, "%s: %s", mf_status_name(s), mf_last_error());
    } else if (!r->pass) {
        const char *d = "equivalence";
        if (r->opt_peak_bytes > r->ceiling_bytes &&
            (strncmp(r->message, "scratch ", 8) == 0 || strstr(r->message, "exceeds the ceiling") != NULL))
            d = "scratch-ceiling";
        else if (st.all_zero || strstr(r->message, "output is all zeros") != NULL)
            d = "all-zero";
        else if (strstr(r->message, "NaN/Inf pattern") != NULL)
            d = "nan-prefill";
        snprintf(row->defense, sizeof row->defense, "%s", d);
    }
    g_state = NULL;
}

mf_status mf_verify(mf_context *ctx, const char *op, void (*candidate)(void), mf_verify_row *rows, size_t cap,
                    size_t *n_rows)
{
    MF_CHECK_NOT_NULL(n_rows);
    *n_rows = 0;
    MF_CHECK_NOT_NULL(ctx);
    MF_CHECK_NOT_NULL(op);
    MF_CHECK_NOT_NULL(candidate);
    MF_CHECK_NOT_NULL(rows);
    const verify_target *tg = find_target(op);
    if (tg == NULL)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates (supported: %s)", op,
                mf_verify_supported_ops());
    verify_case_fn fn = tg->fn;
    const int n = mf_verify_n_cases(op);
    if (cap < (size_t)n) MF_FAIL(MF_ERR_INVALID_SIZE, "rows holds %zu rows; op '%s' has %d cases", cap, op, n);

    /* Sweep 1: every case in order. */
    for (int c = 0; c < n; c++) run_one(ctx, fn, candidate, c, 0, &rows[c]);
    /* Sweep 2: the cases that passed, in reverse order, fresh buffers, other inputs. */
    for (int c = n - 1; c >= 0; c--) {
        if (!rows[c].result.pass) continue;
        mf_verify_row again;
        run_one(ctx, fn, candidate, c, 1, &again);
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

#else /* no host kernels: no ops, so nothing takes candidates */

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
