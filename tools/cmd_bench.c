/* `memfix bench`: time and measure the scratch of each fix's reference and
 * optimized variants over a size sweep, re-validate after timing, write CSV.
 *
 * Ops with a sweep below (matmul, attention, linear_attention, cross_entropy,
 * npt, rope: forward passes) are timed separately: the reference on the host,
 * the optimized variant on the context's backend. Any other registered op (ops
 * added later without a sweep) is timed through its run_case on its built-in cases,
 * which runs reference and variant together: those rows say so
 * (timed = run_case) and leave ref_ms empty. */
#define _POSIX_C_SOURCE 200809L
#include "memfix_cli.h"

#include "memfix/check.h"
#include "memfix/memfix.h"
#include "memfix/registry.h"
#ifdef MF_HAVE_HOST_KERNELS
#include "memfix/attention.h"
#include "memfix/cross_entropy.h"
#include "memfix/linear_attention.h"
#include "memfix/matmul.h"
#include "memfix/npt.h"
#include "memfix/rope.h"
#endif

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void mf_cli_bench_help(FILE *out)
{
    fprintf(out,
            "usage: memfix bench [--op NAME] [--backend auto|host|cuda] [--sizes N,N,...]\n"
            "                    [--reps N] [--out FILE.csv]\n"
            "\n"
            "For each registered fix (or only NAME), over a small size sweep: times the\n"
            "reference (host, double) and each optimized variant (the context's backend),\n"
            "measures the scratch peak of each through the context's tracked allocators,\n"
            "and re-validates the optimized output of the LAST timed run against the\n"
            "reference (the output buffer is refilled with NaN before the timing loop). A\n"
            "row whose output does not match, or whose scratch exceeds the op header's\n"
            "ceiling, is marked failed.\n"
            "\n"
            "sweeps (size n; forward passes, f32):\n"
            "  matmul            M = N = K = n                       default 32,64,128\n"
            "  attention         causal, B=1 H=2 N=n D=Dv=32         default 64,128,256\n"
            "  linear_attention  causal, chunk 16, B=1 H=2 N=n D=16  default 64,128,256\n"
            "  cross_entropy     N=n rows, D=32, V=512, mean         default 64,128,256\n"
            "  npt               1 x n tokens, 32 x 48, rank 4       default 16,32,64\n"
            "  rope              B=1 T=n Hq=4 Hk=2 Dh=rd=32, half,   default 64,256,1024\n"
            "                    positions 0..n-1 (table length n); fused: angles on the\n"
            "                    fly; cache: each call creates a table of max(n/4,1)\n"
            "                    positions, regrows it on the device to n, applies and\n"
            "                    destroys it (table build included in opt_ms)\n"
            "  other ops         ops without a sweep (none today): their built-in cases,\n"
            "                    timed through run_case (reference and variant together;\n"
            "                    --sizes does not apply)\n"
            "\n"
            "options:\n"
            "  --op NAME         only this fix\n"
            "  --backend B       auto (default), host or cuda\n"
            "  --sizes LIST      comma-separated n values replacing the default sweep\n"
            "  --reps N          timed repetitions per row (default 3; mean reported)\n"
            "  --out FILE        write the CSV there (default: standard output)\n"
            "  -h, --help        this help\n"
            "\n"
            "CSV columns (one header line, one row per op x variant x size):\n"
            "  op, variant, backend   what ran (backend: host or cuda)\n"
            "  timer                  host-wall (host execution mode: CPU wall-clock time\n"
            "                         of the loop), cuda-events (GPU: CUDA events on the\n"
            "                         context's stream around the loop), cuda-wall-sync\n"
            "                         (GPU: wall-clock around the synchronized loop; run_case\n"
            "                         rows, or when events could not be created)\n"
            "  timed                  separate (ref_ms and opt_ms each alone) or run_case\n"
            "                         (opt_ms is reference + variant + comparison)\n"
            "  dtype, shape, size     the problem; size is the sweep's n (run_case rows:\n"
            "                         the case index)\n"
            "  reps                   timed repetitions\n"
            "  ref_ms, opt_ms         mean milliseconds per call (ref_ms empty for run_case)\n"
            "  ref_peak_bytes         reference host scratch peak\n"
            "  opt_peak_bytes         optimized device scratch peak\n"
            "  ceiling_bytes          the op header's formula at the shape\n"
            "  max_abs_err            of the re-validation\n"
            "  status                 ok or failed\n"
            "  message                why it failed, or empty\n"
            "\n"
            "exit status: 0 every row ok, 1 some row failed, 2 usage error, 3 the backend\n"
            "is unavailable or the output file cannot be written.\n"
            "Render charts with ci/plot.sh FILE.csv [OUTDIR] (needs gnuplot).\n");
}

typedef struct bench_row {
    char op[32], variant[32], backend[8], timer[24], timed[12], dtype[8], shape[128];
    long long size;
    int reps;
    double ref_ms, opt_ms; /* NAN: not measured */
    size_t ref_peak, opt_peak, ceiling;
    double max_abs_err;
    int ok;
    char message[200];
} bench_row;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#ifdef MF_HAVE_HOST_KERNELS /* the sweeps below need the ops */
#ifdef MF_HAVE_CUDA
/* CUDA events on the context's stream time the optimized loop on a GPU. The
 * real runtime's functions: host execution mode renames its own (cudahost_*). */
#include <cuda_runtime_api.h>
void *mf_context_stream(mf_context *ctx); /* src/core/mf_internal.h */
#endif

/* Times the optimized loop: CUDA events on a CUDA context (timer
 * "cuda-events"), else wall-clock time around the loop, which the loop ends
 * by synchronizing ("host-wall" in host execution mode; "cuda-wall-sync" if
 * the events could not be created). */
typedef struct {
    double t0;
    int events;
#ifdef MF_HAVE_CUDA
    cudaEvent_t start, stop;
#endif
} loop_timer;

static void loop_timer_start(mf_context *ctx, loop_timer *t)
{
    t->events = 0;
#ifdef MF_HAVE_CUDA
    if (mf_context_backend(ctx) == MF_BACKEND_CUDA && cudaEventCreate(&t->start) == cudaSuccess) {
        if (cudaEventCreate(&t->stop) != cudaSuccess) {
            cudaEventDestroy(t->start);
        } else if (cudaEventRecord(t->start, (cudaStream_t)mf_context_stream(ctx)) != cudaSuccess) {
            cudaEventDestroy(t->start);
            cudaEventDestroy(t->stop);
        } else {
            t->events = 1;
        }
    }
#else
    (void)ctx;
#endif
    t->t0 = now_ms();
}

/* Call after the loop's synchronize. Total milliseconds; names the timer. */
static double loop_timer_stop(mf_context *ctx, loop_timer *t, char *timer, size_t cap)
{
    double wall = now_ms() - t->t0;
    const int cuda = mf_context_backend(ctx) == MF_BACKEND_CUDA;
    snprintf(timer, cap, "%s", cuda ? "cuda-wall-sync" : "host-wall");
#ifdef MF_HAVE_CUDA
    if (t->events) {
        float ms = 0.0f;
        if (cudaEventRecord(t->stop, (cudaStream_t)mf_context_stream(ctx)) == cudaSuccess &&
            cudaEventSynchronize(t->stop) == cudaSuccess &&
            cudaEventElapsedTime(&ms, t->start, t->stop) == cudaSuccess) {
            wall = (double)ms;
            snprintf(timer, cap, "cuda-events");
        }
        cudaEventDestroy(t->start);
        cudaEventDestroy(t->stop);
    }
#endif
    return wall;
}

/* ---- helpers -------------------------------------------------------------------------- */
#define MAX_BUFS 8
typedef struct {
    mf_context *ctx;
    void *dev[MAX_BUFS];
    int n;
} devbufs;

static void *dev_upload(devbufs *d, const void *host, size_t bytes, mf_status *s)
{
    void *p = NULL;
    if (*s != MF_OK) return NULL;
    *s = mf_buffer_alloc(d->ctx, bytes, &p);
    if (*s != MF_OK) return NULL;
    d->dev[d->n++] = p;
    if (host != NULL) *s = mf_buffer_upload(d->ctx, p, host, bytes);
    return p;
}

static void dev_free_all(devbufs *d)
{
    for (int i = 0; i < d->n; i++) mf_buffer_free(d->ctx, d->dev[i]);
    d->n = 0;
}

static float *host_uniform(size_t n, uint64_t seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (x) mf_fill_uniform_f32(x, n, seed, -1.0f, 1.0f);
    return x;
}

/* NaN-fill the device output, so the re-validation sees the last timed run's
 * values and nothing older. */
static mf_status nan_fill(mf_context *ctx, float *dev, size_t n)
{
    float *h = malloc(n * sizeof *h);
    if (h == NULL) return MF_ERR_OUT_OF_MEMORY;
    mf_fill_nan_f32(h, n);
    mf_status s = mf_buffer_upload(ctx, dev, h, n * sizeof *h);
    free(h);
    return s;
}

/* The common tail: compare the downloaded output with the reference's, check
 * the ceiling, fill the verdict. */
static void finish_row(mf_context *ctx, bench_row *r, const float *dev_out, const float *ref, size_t n,
                       const char *tol_name)
{
    float *got = malloc(n * sizeof *got);
    const mf_tolerance *tol = mf_tolerance_get(tol_name);
    if (got == NULL || tol == NULL) {
        r->ok = 0;
        snprintf(r->message, sizeof r->message, got ? "no tolerance row '%s'" : "out of memory", tol_name);
        free(got);
        return;
    }
    mf_status s = mf_buffer_download(ctx, got, dev_out, n * sizeof *got);
    mf_compare_result cr;
    if (s == MF_OK) s = mf_compare_f32(got, ref, n, tol, NULL, &cr);
    free(got);
    if (s != MF_OK) {
        r->ok = 0;
        snprintf(r->message, sizeof r->message, "%s: %s", mf_status_name(s), mf_last_error());
        return;
    }
    r->max_abs_err = cr.max_abs_err;
    r->ok = cr.pass && r->opt_peak <= r->ceiling;
    if (!cr.pass)
        snprintf(r->message, sizeof r->message, "output after timing does not match the reference: %.140s", cr.reason);
    else if (r->opt_peak > r->ceiling)
        snprintf(r->message, sizeof r->message, "scratch %zu bytes exceeds the ceiling %zu", r->opt_peak,
                 r->ceiling);
}

/* Runs 'call' reps times between mf_mem_begin(DEVICE) and a synchronize:
 * opt_ms is the mean, opt_peak the device scratch peak. */
#define TIME_OPT(ctx, r, reps, call)                                                                           \
    do {                                                                                                       \
        if (s == MF_OK) s = (call); /* warm-up */                                                              \
        if (s == MF_OK) s = mf_context_synchronize(ctx);                                                       \
        if (s == MF_OK) s = nan_fill(ctx, out_dev, out_n);                                                     \
        if (s == MF_OK) s = mf_mem_begin(ctx, MF_MEM_DEVICE);                                                  \
        loop_timer lt_;                                                                                        \
        loop_timer_start(ctx, &lt_);                                                                           \
        for (int rep_ = 0; rep_ < (reps) && s == MF_OK; rep_++) s = (call);                                    \
        if (s == MF_OK) s = mf_context_synchronize(ctx);                                                       \
        (r)->opt_ms = loop_timer_stop(ctx, &lt_, (r)->timer, sizeof (r)->timer) / (reps);                      \
        (r)->opt_peak = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);                                                 \
    } while (0)
/* The reference: reps runs on the host, mean time and host scratch peak. */
#define TIME_REF(ctx, r, reps, call)                                                                           \
    do {                                                                                                       \
        if (s == MF_OK) s = mf_mem_begin(ctx, MF_MEM_HOST);                                                    \
        double t0_ = now_ms();                                                                                 \
        for (int rep_ = 0; rep_ < (reps) && s == MF_OK; rep_++) s = (call);                                    \
        (r)->ref_ms = (now_ms() - t0_) / (reps);                                                               \
        (r)->ref_peak = mf_mem_peak_delta(ctx, MF_MEM_HOST);                                                   \
    } while (0)

/* ---- sweeps ----------------------------------------------------------------------------- */
static mf_status sweep_matmul(mf_context *ctx, int variant, int64_t n, int reps, bench_row *r)
{
    const size_t nn = (size_t)n * (size_t)n;
    snprintf(r->shape, sizeof r->shape, "M=%lld N=%lld K=%lld", (long long)n, (long long)n, (long long)n);
    r->ceiling = mf_matmul_scratch_ceiling((mf_matmul_variant)variant, n, n, n);
    float *A = host_uniform(nn, 11), *B = host_uniform(nn, 12), *ref = malloc(nn * sizeof(float));
    devbufs d = {ctx, {0}, 0};
    mf_status s = (A && B && ref) ? MF_OK : MF_ERR_OUT_OF_MEMORY;
    TIME_REF(ctx, r, reps, mf_ref_matmul(ctx, MF_DTYPE_F32, 0, 0, n, n, n, A, B, ref));
    const void *dA = dev_upload(&d, A, nn * 4, &s), *dB = dev_upload(&d, B, nn * 4, &s);
    float *out_dev = dev_upload(&d, NULL, nn * 4, &s);
    size_t out_n = nn;
    TIME_OPT(ctx, r, reps, mf_matmul(ctx, (mf_matmul_variant)variant, MF_DTYPE_F32, 0, 0, n, n, n, dA, dB, out_dev));
    if (s == MF_OK) finish_row(ctx, r, out_dev, ref, nn, "matmul.out.f32");
    dev_free_all(&d);
    free(A), free(B), free(ref);
    return s;
}

static mf_status sweep_attention(mf_context *ctx, int variant, int64_t n, int reps, bench_row *r)
{
    const int64_t B = 1, H = 2, D = 32;
    const size_t m = (size_t)(B * H * n * D);
    snprintf(r->shape, sizeof r->shape, "causal B=%lld H=%lld N=%lld D=Dv=%lld", (long long)B, (long long)H,
             (long long)n, (long long)D);
    r->ceiling = mf_attention_tiled_forward_scratch_ceiling(B, H, n);
    float *q = host_uniform(m, 21), *k = host_uniform(m, 22), *v = host_uniform(m, 23), *ref = malloc(m * 4);
    devbufs d = {ctx, {0}, 0};
    mf_status s = (q && k && v && ref) ? MF_OK : MF_ERR_OUT_OF_MEMORY;
    TIME_REF(ctx, r, reps, mf_ref_attention_forward(ctx, MF_DTYPE_F32, 1, B, H, n, D, D, q, k, v, ref, NULL));
    const void *dq = dev_upload(&d, q, m * 4, &s), *dk = dev_upload(&d, k, m * 4, &s), *dv = dev_upload(&d, v, m * 4, &s);
    float *out_dev = dev_upload(&d, NULL, m * 4, &s);
    size_t out_n = m;
    TIME_OPT(ctx, r, reps,
             mf_attention_forward(ctx, (mf_attention_variant)variant, MF_DTYPE_F32, 1, B, H, n, D, D, dq, dk, dv,
                                  out_dev, NULL));
    if (s == MF_OK) finish_row(ctx, r, out_dev, ref, m, "attention.out.f32");
    dev_free_all(&d);
    free(q), free(k), free(v), free(ref);
    return s;
}

static mf_status sweep_linear_attention(mf_context *ctx, int variant, int64_t n, int reps, bench_row *r)
{
    const int64_t B = 1, H = 2, D = 16, chunk = 16;
    const int causal = variant == 0; /* variants: causal_chunked, bidirectional */
    const size_t m = (size_t)(B * H * n * D);
    snprintf(r->shape, sizeof r->shape, "%s B=%lld H=%lld N=%lld D=Dv=%lld", causal ? "causal C=16" : "bidir",
             (long long)B, (long long)H, (long long)n, (long long)D);
    r->ceiling = mf_linear_attention_scratch_ceiling(causal, 0, B, H, n, D, D);
    float *q = host_uniform(m, 31), *k = host_uniform(m, 32), *v = host_uniform(m, 33), *ref = malloc(m * 4);
    devbufs d = {ctx, {0}, 0};
    mf_status s = (q && k && v && ref) ? MF_OK : MF_ERR_OUT_OF_MEMORY;
    TIME_REF(ctx, r, reps, mf_ref_linear_attention_forward(ctx, MF_DTYPE_F32, causal, B, H, n, D, D, q, k, v, NULL, ref));
    const void *dq = dev_upload(&d, q, m * 4, &s), *dk = dev_upload(&d, k, m * 4, &s), *dv = dev_upload(&d, v, m * 4, &s);
    float *out_dev = dev_upload(&d, NULL, m * 4, &s);
    size_t out_n = m;
    TIME_OPT(ctx, r, reps,
             mf_linear_attention_forward(ctx, MF_DTYPE_F32, causal, chunk, B, H, n, D, D, dq, dk, dv, NULL, out_dev));
    if (s == MF_OK) finish_row(ctx, r, out_dev, ref, m, "linear_attention.out.f32");
    dev_free_all(&d);
    free(q), free(k), free(v), free(ref);
    return s;
}

static mf_status sweep_cross_entropy(mf_context *ctx, int variant, int64_t n, int reps, bench_row *r)
{
    (void)variant;
    const int64_t D = 32, V = 512;
    snprintf(r->shape, sizeof r->shape, "N=%lld D=%lld V=%lld mean", (long long)n, (long long)D, (long long)V);
    mf_cross_entropy_plan_info info;
    mf_status s = mf_cross_entropy_plan(n, V, MF_DTYPE_F32, NULL, &info);
    r->ceiling = s == MF_OK ? info.scratch_bytes : SIZE_MAX;
    float *h = host_uniform((size_t)(n * D), 41), *w = host_uniform((size_t)(V * D), 42);
    int64_t *labels = malloc((size_t)n * sizeof *labels);
    float ref[1];
    devbufs d = {ctx, {0}, 0};
    if (s == MF_OK && !(h && w && labels)) s = MF_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; labels && i < n; i++) labels[i] = (i * 7919) % V;
    TIME_REF(ctx, r, reps, mf_ref_cross_entropy_forward(ctx, n, D, V, MF_DTYPE_F32, h, w, NULL, labels, NULL, ref, NULL));
    const void *dh = dev_upload(&d, h, (size_t)(n * D) * 4, &s), *dw = dev_upload(&d, w, (size_t)(V * D) * 4, &s);
    const int64_t *dl = dev_upload(&d, labels, (size_t)n * 8, &s);
    float *out_dev = dev_upload(&d, NULL, 4, &s);
    size_t out_n = 1;
    TIME_OPT(ctx, r, reps, mf_cross_entropy_forward(ctx, n, D, V, MF_DTYPE_F32, dh, dw, NULL, dl, NULL, out_dev, NULL));
    if (s == MF_OK) finish_row(ctx, r, out_dev, ref, 1, "cross_entropy.loss.f32");
    dev_free_all(&d);
    free(h), free(w), free(labels);
    return s;
}

static mf_status sweep_npt(mf_context *ctx, int variant, int64_t n, int reps, bench_row *r)
{
    (void)variant;
    mf_npt_shape sh = {1, n, 32, 48, 4};
    const size_t T = (size_t)n, Dm = 32, F = 48, R = 4;
    snprintf(r->shape, sizeof r->shape, "B=1 S=%lld D=%zu F=%zu r=%zu", (long long)n, Dm, F, R);
    r->ceiling = mf_npt_factored_forward_scratch_ceiling(MF_DTYPE_F32, sh, NULL);
    float *h = host_uniform(T * Dm, 51), *W = host_uniform(Dm * F, 52), *A = host_uniform(Dm * R, 53);
    float *Bm = host_uniform(R * F, 54), *m = host_uniform(T * R, 55), *ref = malloc(T * F * 4);
    devbufs d = {ctx, {0}, 0};
    mf_status s = (h && W && A && Bm && m && ref) ? MF_OK : MF_ERR_OUT_OF_MEMORY;
    TIME_REF(ctx, r, reps, mf_ref_npt_forward(ctx, MF_DTYPE_F32, sh, h, W, A, Bm, m, NULL, ref));
    const void *dh = dev_upload(&d, h, T * Dm * 4, &s), *dW = dev_upload(&d, W, Dm * F * 4, &s);
    const void *dA = dev_upload(&d, A, Dm * R * 4, &s), *dB = dev_upload(&d, Bm, R * F * 4, &s);
    const void *dm = dev_upload(&d, m, T * R * 4, &s);
    float *out_dev = dev_upload(&d, NULL, T * F * 4, &s);
    size_t out_n = T * F;
    TIME_OPT(ctx, r, reps, mf_npt_forward(ctx, MF_DTYPE_F32, sh, dh, dW, dA, dB, dm, NULL, out_dev, NULL));
    if (s == MF_OK) finish_row(ctx, r, out_dev, ref, T * F, "npt.forward.f32");
    dev_free_all(&d);
    free(h), free(W), free(A), free(Bm), free(m), free(ref);
    return s;
}

/* A rope call of the cache variant: a table of cap0 positions created on the
 * device, regrown to the call's positions by apply (the seed's crash path,
 * now a device-only rebuild), destroyed again; its peak is exactly
 * mf_rope_cache_scratch_ceiling(cap0, L, rd). */
static mf_status rope_cache_call(mf_context *ctx, const mf_rope_config *cfg, int64_t cap0, const mf_rope_tensors *t,
                                 const mf_rope_positions *pos)
{
    mf_rope_cache *cache = NULL;
    mf_status s = mf_rope_cache_create(ctx, cfg, cap0, &cache);
    if (s == MF_OK) s = mf_rope_cache_apply(cache, MF_ROPE_FORWARD, t, pos);
    mf_rope_cache_destroy(cache);
    return s;
}

static mf_status sweep_rope(mf_context *ctx, int variant, int64_t n, int reps, bench_row *r)
{
    const int64_t B = 1, Hq = 4, Hk = 2, Dh = 32, L = n, cap0 = n / 4 > 0 ? n / 4 : 1;
    const int cache = variant == 1; /* variants: fused, cache */
    const size_t nq = (size_t)(B * n * Hq * Dh), nk = (size_t)(B * n * Hk * Dh), m = nq + nk;
    snprintf(r->shape, sizeof r->shape, "B=%lld T=%lld Hq=%lld Hk=%lld Dh=rd=%lld half fwd pos<%lld%s", (long long)B,
             (long long)n, (long long)Hq, (long long)Hk, (long long)Dh, (long long)L, cache ? " cache0=n/4" : "");
    r->ceiling = cache ? mf_rope_cache_scratch_ceiling(cap0, L, Dh) : mf_rope_fused_scratch_ceiling(B, n, Hq, Hk, Dh);
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, Dh); /* rd = Dh, base 1e4, scaling 1, rotate_half */
    const mf_rope_positions pos = mf_rope_positions_offset(0);
    float *x = host_uniform(m, 61), *ref = malloc(m * 4); /* q then k */
    devbufs d = {ctx, {0}, 0};
    mf_status s = (x && ref) ? MF_OK : MF_ERR_OUT_OF_MEMORY;
    if (ref) mf_fill_nan_f32(ref, m);
    const mf_rope_tensors th = {B, n, Hq, Hk, MF_DTYPE_F32, x, x ? x + nq : NULL, ref, ref ? ref + nq : NULL};
    TIME_REF(ctx, r, reps, mf_ref_rope(ctx, &cfg, MF_ROPE_FORWARD, &th, &pos));
    float *dx = dev_upload(&d, x, m * 4, &s);
    float *out_dev = dev_upload(&d, NULL, m * 4, &s);
    size_t out_n = m;
    const mf_rope_tensors td = {B, n, Hq, Hk, MF_DTYPE_F32, dx, dx ? dx + nq : NULL, out_dev,
                                out_dev ? out_dev + nq : NULL};
    TIME_OPT(ctx, r, reps,
             cache ? rope_cache_call(ctx, &cfg, cap0, &td, &pos) : mf_rope_fused(ctx, &cfg, MF_ROPE_FORWARD, &td, &pos));
    if (s == MF_OK) finish_row(ctx, r, out_dev, ref, m, "rope.out.f32");
    dev_free_all(&d);
    free(x), free(ref);
    return s;
}

typedef struct {
    const char *op;
    mf_status (*fn)(mf_context *, int, int64_t, int, bench_row *);
    int64_t sizes[4];
    int n_sizes;
} sweep_desc;

static const sweep_desc sweeps[] = {
    {"matmul", sweep_matmul, {32, 64, 128}, 3},
    {"attention", sweep_attention, {64, 128, 256}, 3},
    {"linear_attention", sweep_linear_attention, {64, 128, 256}, 3},
    {"cross_entropy", sweep_cross_entropy, {64, 128, 256}, 3},
    {"npt", sweep_npt, {16, 32, 64}, 3},
    {"rope", sweep_rope, {64, 256, 1024}, 3},
};

static const sweep_desc *find_sweep(const char *op)
{
    for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++)
        if (strcmp(sweeps[i].op, op) == 0) return &sweeps[i];
    return NULL;
}
#endif /* MF_HAVE_HOST_KERNELS */

/* ---- CSV ---------------------------------------------------------------------------------- */
static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double x)
{
    if (isfinite(x)) fprintf(f, "%.6g", x);
}

static void csv_bytes(FILE *f, size_t b)
{
    if (b != SIZE_MAX) fprintf(f, "%zu", b);
}

#define BENCH_CSV_HEADER                                                                                      \
    "op,variant,backend,timer,timed,dtype,shape,size,reps,ref_ms,opt_ms,ref_peak_bytes,opt_peak_bytes,"      \
    "ceiling_bytes,max_abs_err,status,message"

static void write_csv(FILE *f, const bench_row *rows, size_t n)
{
    fprintf(f, "%s\n", BENCH_CSV_HEADER);
    for (size_t i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        fprintf(f, "%s,%s,%s,%s,%s,%s,", r->op, r->variant, r->backend, r->timer, r->timed, r->dtype);
        csv_str(f, r->shape);
        fprintf(f, ",%lld,%d,", r->size, r->reps);
        csv_num(f, r->ref_ms);
        fputc(',', f);
        csv_num(f, r->opt_ms);
        fputc(',', f);
        csv_bytes(f, r->ref_peak);
        fputc(',', f);
        csv_bytes(f, r->opt_peak);
        fputc(',', f);
        csv_bytes(f, r->ceiling);
        fputc(',', f);
        csv_num(f, r->max_abs_err);
        fprintf(f, ",%s,", r->ok ? "ok" : "failed");
        csv_str(f, r->message);
        fputc('\n', f);
    }
}

static int parse_sizes(const char *s, int64_t *out, int cap)
{
    int n = 0;
    while (*s) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || end == s || v <= 0 || v > (1LL << 24) || n == cap) return -1;
        out[n++] = (int64_t)v;
        if (*end == ',') end++;
        else if (*end != '\0') return -1;
        s = end;
    }
    return n;
}

#define MAX_SIZES 16

int mf_cli_bench(int argc, char **argv, FILE *out, FILE *err)
{
    const char *op_name = NULL, *backend_name = "auto", *out_path = NULL;
    int reps = 3, n_sizes = 0;
    int64_t sizes[MAX_SIZES];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            mf_cli_bench_help(out);
            return MF_CLI_OK;
        }
        const char *names[] = {"--op", "--backend", "--sizes", "--reps", "--out"};
        int k = -1;
        const char *val = NULL;
        for (int j = 0; j < 5 && k < 0; j++) {
            size_t len = strlen(names[j]);
            if (strncmp(a, names[j], len) == 0 && (a[len] == '\0' || a[len] == '=')) {
                k = j;
                val = a[len] == '=' ? a + len + 1 : (i + 1 < argc ? argv[++i] : NULL);
            }
        }
        if (k < 0) {
            fprintf(err, "memfix bench: unknown argument '%s' (see memfix bench --help)\n", a);
            return MF_CLI_USAGE;
        }
        if (val == NULL || *val == '\0') {
            fprintf(err, "memfix bench: %s needs a value\n", names[k]);
            return MF_CLI_USAGE;
        }
        if (k == 0) op_name = val;
        else if (k == 1) backend_name = val;
        else if (k == 2) {
            n_sizes = parse_sizes(val, sizes, MAX_SIZES);
            if (n_sizes <= 0) {
                fprintf(err, "memfix bench: --sizes wants up to %d comma-separated integers in [1, 2^24] (got '%s')\n",
                        MAX_SIZES, val);
                return MF_CLI_USAGE;
            }
        } else if (k == 3) {
            char *end = NULL;
            long v = strtol(val, &end, 10);
            if (end == val || *end != '\0' || v < 1 || v > 1000) {
                fprintf(err, "memfix bench: --reps wants an integer in [1, 1000] (got '%s')\n", val);
                return MF_CLI_USAGE;
            }
            reps = (int)v;
        } else {
            out_path = val;
        }
    }

    mf_backend backend;
    if (strcmp(backend_name, "auto") == 0) backend = MF_BACKEND_AUTO;
    else if (strcmp(backend_name, "host") == 0) backend = MF_BACKEND_HOST;
    else if (strcmp(backend_name, "cuda") == 0) backend = MF_BACKEND_CUDA;
    else {
        fprintf(err, "memfix bench: unknown backend '%s' (expected auto, host or cuda)\n", backend_name);
        return MF_CLI_USAGE;
    }
    size_t n_ops = 0;
    const mf_op_desc *const *all = mf_registry(&n_ops);
    const mf_op_desc *only = NULL;
    if (op_name != NULL && (only = mf_registry_find(op_name)) == NULL) {
        fprintf(err, "memfix bench: unknown op '%s'; registered ops:", op_name);
        for (size_t i = 0; i < n_ops; i++) fprintf(err, "%s %s", i ? "," : "", all[i]->name);
        fprintf(err, "%s\n", n_ops ? "" : " (none)");
        return MF_CLI_USAGE;
    }
    if (backend == MF_BACKEND_CUDA && !mf_backend_available(MF_BACKEND_CUDA)) {
        fprintf(err, "memfix bench: backend cuda is not available (no device, or no CUDA backend in this build)\n");
        return MF_CLI_UNAVAILABLE;
    }
    if (n_ops == 0) {
        fprintf(err, "memfix bench: no registered fixes in this build (reference-only build: no kernels)\n");
        return MF_CLI_UNAVAILABLE;
    }
    FILE *csv = out;
    if (out_path != NULL && (csv = fopen(out_path, "w")) == NULL) {
        fprintf(err, "memfix bench: cannot open '%s' for writing: %s\n", out_path, strerror(errno));
        return MF_CLI_UNAVAILABLE;
    }
    mf_context *ctx = NULL;
    mf_status s = mf_context_create(&ctx, backend);
    if (s != MF_OK) {
        fprintf(err, "memfix bench: cannot create a %s context: %s: %s\n", backend_name, mf_status_name(s),
                mf_last_error());
        if (csv != out) fclose(csv);
        return MF_CLI_UNAVAILABLE;
    }
    const mf_backend resolved = mf_context_backend(ctx);
    /* the label of the rows; sweep rows on a GPU say cuda-events when the events worked */
    const char *timer = resolved == MF_BACKEND_CUDA ? "cuda-events" : "host-wall";

    size_t cap = 0, n = 0;
    for (size_t i = 0; i < n_ops; i++) {
        if (only != NULL && all[i] != only) continue;
        size_t per = (size_t)all[i]->n_cases;
#ifdef MF_HAVE_HOST_KERNELS
        const sweep_desc *sw = find_sweep(all[i]->name);
        if (sw) per = (size_t)(n_sizes ? n_sizes : sw->n_sizes);
#endif
        cap += per * (size_t)all[i]->n_variants;
    }
    bench_row *rows = calloc(cap ? cap : 1, sizeof *rows);
    if (rows == NULL) {
        mf_context_destroy(ctx);
        if (csv != out) fclose(csv);
        fprintf(err, "memfix bench: out of memory\n");
        return MF_CLI_UNAVAILABLE;
    }
    for (size_t i = 0; i < n_ops; i++) {
        const mf_op_desc *op = all[i];
        if (only != NULL && op != only) continue;
        const int64_t *list = NULL;
        int count = op->n_cases;
#ifdef MF_HAVE_HOST_KERNELS
        const sweep_desc *sw = find_sweep(op->name);
        if (sw) {
            list = n_sizes ? sizes : sw->sizes;
            count = n_sizes ? n_sizes : sw->n_sizes;
        }
#endif
        for (int v = 0; v < op->n_variants; v++) {
            for (int c = 0; c < count; c++) {
                bench_row *r = &rows[n++];
                snprintf(r->op, sizeof r->op, "%s", op->name);
                snprintf(r->variant, sizeof r->variant, "%s", op->variants[v]);
                snprintf(r->backend, sizeof r->backend, "%s", mf_backend_name(resolved));
                snprintf(r->timer, sizeof r->timer, "%s", timer);
                r->reps = reps;
                r->ref_ms = r->opt_ms = r->max_abs_err = NAN;
                r->ref_peak = r->opt_peak = r->ceiling = SIZE_MAX;
                mf_clear_error();
                if (list != NULL) {
#ifdef MF_HAVE_HOST_KERNELS
                    snprintf(r->timed, sizeof r->timed, "separate");
                    snprintf(r->dtype, sizeof r->dtype, "f32");
                    r->size = (long long)list[c];
                    s = sw->fn(ctx, v, list[c], reps, r);
#endif
                } else {
                    /* no sweep: time run_case on the built-in case (reference + variant) */
                    snprintf(r->timed, sizeof r->timed, "run_case");
                    r->size = c;
                    mf_case_result res;
                    memset(&res, 0, sizeof res);
                    double t0 = now_ms();
                    int pass = 1;
                    s = MF_OK;
                    for (int rep = 0; rep < reps && s == MF_OK; rep++) {
                        memset(&res, 0, sizeof res);
                        s = op->run_case(ctx, v, c, &res);
                        pass &= res.pass;
                    }
                    r->opt_ms = (now_ms() - t0) / reps;
                    if (resolved == MF_BACKEND_CUDA) snprintf(r->timer, sizeof r->timer, "cuda-wall-sync");
                    snprintf(r->dtype, sizeof r->dtype, "%s", res.dtype);
                    snprintf(r->shape, sizeof r->shape, "%s", res.shape);
                    r->ref_peak = res.ref_peak_bytes;
                    r->opt_peak = res.opt_peak_bytes;
                    r->ceiling = res.ceiling_bytes;
                    r->max_abs_err = res.max_abs_err;
                    r->ok = pass; /* every repetition, the last one included, must pass */
                    if (!pass) snprintf(r->message, sizeof r->message, "%.190s", res.message);
                }
                if (s != MF_OK) {
                    r->ok = 0;
                    snprintf(r->message, sizeof r->message, "%s: %s", mf_status_name(s), mf_last_error());
                }
            }
        }
    }
    mf_context_destroy(ctx);
    write_csv(csv, rows, n);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) failed += !rows[i].ok;
    int rc = failed ? MF_CLI_FAILED : MF_CLI_OK;
    if (csv != out) {
        if (fclose(csv) != 0) {
            fprintf(err, "memfix bench: writing '%s' failed: %s\n", out_path, strerror(errno));
            rc = MF_CLI_UNAVAILABLE;
        } else {
            fprintf(out, "memfix bench: %zu rows (%zu failed, timer %s) written to %s\n", n, failed, timer, out_path);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!rows[i].ok)
            fprintf(err, "FAIL %s/%s size %lld [%s]: %s\n", rows[i].op, rows[i].variant, rows[i].size, rows[i].shape,
                    rows[i].message);
    free(rows);
    return rc;
}
