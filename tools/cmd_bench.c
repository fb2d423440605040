/* `memfix bench`: time and measure the scratch of each fix's reference and
 * optimized variants over a size sweep, re-validate after timing, write CSV.
 *
 * Ops whose descriptor has a sweep (mf_op_desc.bench: setup, reference and
 * optimized calls of a forward pass at size n, in src/ops/<op>.c) are timed
 * separately: the reference on the host, the optimized variant on the
 * context's backend. Any other registered op is timed through its run_case on
 * its built-in cases, which runs reference and variant together: those rows
 * say so (timed = run_case) and leave ref_ms empty. */
#define _POSIX_C_SOURCE 200809L
#include "memfix_cli.h"

#include "memfix/check.h"
#include "memfix/memfix.h"
#include "memfix/registry.h"

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
            "sweeps (size n; forward passes, f32):\n");
    size_t n_ops = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    int any_without = 0;
    for (size_t i = 0; i < n_ops; i++) {
        const mf_bench_sweep *sw = ops[i]->bench;
        if (sw == NULL) {
            any_without = 1;
            continue;
        }
        /* the first line of the problem with the op's name, then continuation lines */
        const char *line = sw->help;
        for (int first = 1; line != NULL && *line != '\0'; first = 0) {
            const char *nl = strchr(line, '\n');
            const int len = nl != NULL ? (int)(nl - line) : (int)strlen(line);
            if (first) {
                char sizes[64] = "";
                for (int k = 0, at = 0; k < sw->n_sizes && at < (int)sizeof sizes; k++)
                    at += snprintf(sizes + at, sizeof sizes - (size_t)at, "%s%lld", k ? "," : "",
                                   (long long)sw->sizes[k]);
                fprintf(out, "  %-17s %-35.*s default %s\n", ops[i]->name, len, line, sizes);
            } else {
                fprintf(out, "  %-17s %.*s\n", "", len, line);
            }
            line = nl != NULL ? nl + 1 : NULL;
        }
    }
    fprintf(out,
            "  other ops         ops without a sweep (%s): their built-in cases,\n"
            "                    timed through run_case (reference and variant together;\n"
            "                    --sizes does not apply)\n"
            "\n",
            any_without ? "see memfix report" : "none today");
    fprintf(out,
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

/* One size of an op's sweep: the op's setup, the reference timed (reps runs,
 * host scratch peak), the optimized call timed after a warm-up (device scratch
 * peak; the output NaN-filled before the loop), the last run re-validated. */
static mf_status run_sweep(mf_context *ctx, const mf_bench_sweep *sw, int variant, int64_t n, int reps,
                           bench_row *r)
{
    mf_bench_case c;
    memset(&c, 0, sizeof c);
    c.variant = variant;
    c.n = n;
    c.ceiling = SIZE_MAX;
    mf_status s = sw->setup(ctx, &c);
    snprintf(r->shape, sizeof r->shape, "%s", c.shape);
    r->ceiling = c.ceiling;
    if (s == MF_OK && (c.ref_out == NULL || c.out_dev == NULL || c.tol == NULL)) {
        s = MF_ERR_INTERNAL;
        snprintf(r->message, sizeof r->message, "the sweep's setup left no output");
    }
    if (s == MF_OK) mf_fill_nan_f32(c.ref_out, c.out_n);
    /* the reference: reps runs on the host, mean time and host scratch peak */
    if (s == MF_OK) s = mf_mem_begin(ctx, MF_MEM_HOST);
    const double t0 = now_ms();
    for (int rep = 0; rep < reps && s == MF_OK; rep++) s = sw->reference(ctx, &c);
    r->ref_ms = (now_ms() - t0) / reps;
    r->ref_peak = mf_mem_peak_delta(ctx, MF_MEM_HOST);
    /* the optimized call: a warm-up, then reps runs between mf_mem_begin(DEVICE) and a synchronize */
    if (s == MF_OK) s = sw->optimized(ctx, &c);
    if (s == MF_OK) s = mf_context_synchronize(ctx);
    if (s == MF_OK) s = nan_fill(ctx, c.out_dev, c.out_n);
    if (s == MF_OK) s = mf_mem_begin(ctx, MF_MEM_DEVICE);
    loop_timer lt;
    loop_timer_start(ctx, &lt);
    for (int rep = 0; rep < reps && s == MF_OK; rep++) s = sw->optimized(ctx, &c);
    if (s == MF_OK) s = mf_context_synchronize(ctx);
    r->opt_ms = loop_timer_stop(ctx, &lt, r->timer, sizeof r->timer) / reps;
    r->opt_peak = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    if (s == MF_OK) finish_row(ctx, r, c.out_dev, c.ref_out, c.out_n, c.tol);
    for (int i = 0; i < c.n_dev; i++) mf_buffer_free(ctx, c.dev[i]);
    for (int i = 0; i < c.n_host; i++) free(c.host[i]);
    return s;
}

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
        const mf_bench_sweep *sw = all[i]->bench;
        if (sw) per = (size_t)(n_sizes ? n_sizes : sw->n_sizes);
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
        const mf_bench_sweep *sw = op->bench;
        if (sw) {
            list = n_sizes ? sizes : sw->sizes;
            count = n_sizes ? n_sizes : sw->n_sizes;
        }
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
                    snprintf(r->timed, sizeof r->timed, "separate");
                    snprintf(r->dtype, sizeof r->dtype, "f32");
                    r->size = (long long)list[c];
                    s = run_sweep(ctx, sw, v, list[c], reps, r);
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
