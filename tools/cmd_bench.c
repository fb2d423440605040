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
#include "cmd_bench.h"
#include "memfix_cli.h"

#include "memfix/check.h"
#include "memfix/memfix.h"
#include "memfix/registry.h"

#include <cJSON.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void mf_cli_bench_help(FILE *out)
{
    fprintf(out, "usage: memfix bench [--op NAME] [--backend auto|host|cuda] [--sizes N,N,...]\n"
                 "                    [--reps N] [--csv | --json] [--out FILE] [--plot DIR]\n"
                 "       memfix bench --targets [--op NAME] [--backend B] [--reps N] [--small]\n"
                 "                    [--csv | --json] [--out FILE]\n"
                 "\n"
                 "For each registered fix (or only NAME), over a small size sweep: times the\n"
                 "reference (host, double) and each optimized variant (the context's backend),\n"
                 "measures the scratch peak of each through the context's tracked allocators,\n"
                 "and re-validates the optimized output of the LAST timed run against the\n"
                 "reference (the output buffer is refilled with NaN before the timing loop). A\n"
                 "row whose output does not match, or whose scratch exceeds the op header's\n"
                 "ceiling, is marked failed. Prints a table; --csv and --json give the rows\n"
                 "for programs (the columns below).\n"
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
    fprintf(out, "targets (--targets: the performance goals at their full shapes;\n"
                 "on a GPU, ci/gpu.sh prints them; host execution mode runs reduced shapes and\n"
                 "reports met = n/a):\n");
    for (size_t i = 0; i < n_ops; i++)
        for (int k = 0; k < ops[i]->n_bench_targets; k++) {
            const mf_bench_target *t = &ops[i]->bench_targets[k];
            fprintf(out, "  %-17s %s (%s): %s\n", t->name, ops[i]->name,
                    t->kind == MF_BENCH_TARGET_FLOOR ? "ratio = opt_ms / floor_ms, met when <= goal"
                                                     : "ratio = baseline_ms / opt_ms, met when >= goal",
                    t->help);
        }
    fprintf(out, "\n");
    fprintf(out, "options:\n"
                 "  --op NAME         only this fix\n"
                 "  --backend B       auto (default), host or cuda\n"
                 "  --sizes LIST      comma-separated n values replacing the default sweep\n"
                 "  --reps N          timed repetitions per row (default 3; mean reported)\n"
                 "  --csv             CSV instead of the table: one header line, one line per row\n"
                 "  --json            a JSON array, one object per row with the CSV's columns\n"
                 "                    as keys (numbers; null where the CSV cell is empty)\n"
                 "  --out FILE        write the table, CSV or JSON there (default: standard output)\n"
                 "  --plot DIR        also write DIR/bench.csv and draw the charts of ci/plot.sh\n"
                 "                    into DIR (the same script: $MF_PLOT_SCRIPT, else this\n"
                 "                    source tree's ci/plot.sh; needs gnuplot: exit 3 and a\n"
                 "                    message when it is missing)\n"
                 "  --targets         run the targets above instead of the sweeps\n"
                 "  --small           targets at their reduced shapes on a GPU too (a smoke test)\n"
                 "  -h, --help        this help\n"
                 "\n"
                 "target CSV columns (--targets): target, op, source, backend, timer, shape, kind\n"
                 "  (floor or speedup), goal, opt_ms (the optimized call, mean of reps after a\n"
                 "  warm-up), baseline_ms (speedup: the baseline call, timed the same way),\n"
                 "  floor_ms (floor: the floor's FLOPs at peak_tflops), peak_tflops, ratio, met\n"
                 "  (yes, no, or n/a: host execution mode, a reduced shape or an unknown peak),\n"
                 "  status (ok: ran and its check passed; failed), message.\n"
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
                 "  flops, min_bytes       work of one call from the op's formula (its sweep in\n"
                 "                         src/ops/<op>.c; the same for every variant): flops\n"
                 "                         (a multiply-add is 2), bytes every input read once\n"
                 "                         and every output written once; empty for run_case\n"
                 "  tflops, gbps           achieved rates flops/opt_ms and min_bytes/opt_ms on a\n"
                 "                         GPU (timer cuda-events); empty in host execution mode\n"
                 "  peak_tflops, peak_gbps the device's dense bf16 tensor-core peak and HBM\n"
                 "                         bandwidth (a datasheet table for A100/H100/H200;\n"
                 "                         bandwidth from the device's memory clock and bus width\n"
                 "                         otherwise); empty in host execution mode\n"
                 "  frac_peak_flops,       tflops/peak_tflops and gbps/peak_gbps (the fraction\n"
                 "  frac_peak_bw           of the device's peak; f32 sweeps against the bf16\n"
                 "                         tensor-core peak)\n"
                 "\n"
                 "exit status: 0 every row ok, 1 some row failed, 2 usage error, 3 the backend\n"
                 "is unavailable or the output file cannot be written.\n"
                 "Render charts with ci/plot.sh FILE.csv [OUTDIR] (needs gnuplot).\n");
}

/* ---- the device's peak ------------------------------------------------------------------ */
/* Dense (no sparsity) bf16 tensor-core TFLOP/s and HBM GB/s from NVIDIA's
 * datasheets: A100 (A100 Tensor Core GPU datasheet: 312 TFLOP/s; 1,555 GB/s
 * 40GB, 1,935 GB/s 80GB PCIe, 2,039 GB/s 80GB SXM), H100 (H100 Tensor Core
 * GPU datasheet: 1,979 / 1,513 / 1,671 TFLOP/s "with sparsity" for SXM / PCIe
 * / NVL, halved here; 3.35, 2.0 and 3.9 TB/s) and H200 (H200 datasheet: SXM
 * 1,979 and NVL 1,671 TFLOP/s with sparsity, halved; 4.8 TB/s). Matched on
 * the device name (cudaDeviceProp.name), first hit wins. */
typedef struct device_peak {
    const char *name_has, *name_has2; /* both substrings (NULL: none) */
    double tflops, gbps;
} device_peak;

static const device_peak peak_table[] = {
    { "H200", "NVL", 835.5, 4800.0 },  { "H200", NULL, 989.5, 4800.0 }, { "H100", "NVL", 835.5, 3900.0 },
    { "H100", "PCIe", 756.5, 2000.0 }, { "H100", NULL, 989.5, 3350.0 }, { "A100", "40GB", 312.0, 1555.0 },
    { "A100", "PCIE", 312.0, 1935.0 }, { "A100", NULL, 312.0, 2039.0 },
};

/* Peak figures of the context's device: NAN where unknown (host mode). */
static void device_peaks(mf_context *ctx, double *tflops, double *gbps, char *name, size_t cap);

/* The achieved rates of a timed GPU row. */
static void row_rates(bench_row *r)
{
    r->tflops = r->gbps = NAN;
    if (strcmp(r->timer, "cuda-events") != 0 || !(r->opt_ms > 0)) return;
    if (r->flops > 0) r->tflops = r->flops / (r->opt_ms * 1e-3) / 1e12;
    if (r->min_bytes > 0) r->gbps = r->min_bytes / (r->opt_ms * 1e-3) / 1e9;
}

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

static void device_peaks(mf_context *ctx, double *tflops, double *gbps, char *name, size_t cap)
{
    *tflops = *gbps = NAN;
    snprintf(name, cap, "host");
#ifdef MF_HAVE_CUDA
    int dev = 0;
    struct cudaDeviceProp prop;
    if (mf_context_backend(ctx) != MF_BACKEND_CUDA || cudaGetDevice(&dev) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
        return;
    snprintf(name, cap, "%s", prop.name);
    for (size_t i = 0; i < sizeof peak_table / sizeof peak_table[0]; i++) {
        const device_peak *p = &peak_table[i];
        if (strstr(prop.name, p->name_has) && (p->name_has2 == NULL || strstr(prop.name, p->name_has2))) {
            *tflops = p->tflops;
            *gbps = p->gbps;
            return;
        }
    }
    /* not in the table: bandwidth from the memory clock (kHz, double data rate) and bus width (bits) */
    int khz = 0, bits = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess && khz > 0 &&
        bits > 0)
        *gbps = 2.0 * (double)khz * 1e3 * (double)bits / 8.0 / 1e9;
#else
    (void)ctx;
    (void)peak_table;
#endif
}

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
        snprintf(r->message, sizeof r->message, "output after timing does not match the reference: %.140s",
                 cr.reason);
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
    r->flops = c.flops;
    r->min_bytes = c.min_bytes;
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

/* The end of a run's output: MF_CLI_UNAVAILABLE when the JSON could not be printed ('written'
 * 0) or the file not closed, else MF_CLI_FAILED when a row failed, else MF_CLI_OK; with --out, the
 * summary line on out. */
static int finish_output(int written, size_t failed, FILE *csv, FILE *out, FILE *err, const char *out_path,
                         const char *summary)
{
    int rc = failed ? MF_CLI_FAILED : MF_CLI_OK;
    if (!written) {
        fprintf(err, "memfix bench: out of memory printing JSON\n");
        rc = MF_CLI_UNAVAILABLE;
    }
    if (csv != out) {
        if (fclose(csv) != 0) {
            fprintf(err, "memfix bench: writing '%s' failed: %s\n", out_path, strerror(errno));
            rc = MF_CLI_UNAVAILABLE;
        } else {
            fprintf(out, "memfix bench: %s written to %s\n", summary, out_path);
        }
    }
    return rc;
}

/* ---- --targets ------------------------------------------------------------------------- */
/* One call warmed up, then reps calls timed (CUDA events on a GPU); mean ms. */
static mf_status time_target(mf_context *ctx, mf_status (*fn)(mf_context *, mf_bench_target_run *),
                             mf_bench_target_run *t, int reps, double *ms, char *timer, size_t cap)
{
    mf_status s = fn(ctx, t);
    if (s == MF_OK) s = mf_context_synchronize(ctx);
    if (s != MF_OK) return s;
    loop_timer lt;
    loop_timer_start(ctx, &lt);
    for (int rep = 0; rep < reps && s == MF_OK; rep++) s = fn(ctx, t);
    if (s == MF_OK) s = mf_context_synchronize(ctx);
    *ms = loop_timer_stop(ctx, &lt, timer, cap) / reps;
    return s;
}

static void run_target(mf_context *ctx, const mf_op_desc *op, const mf_bench_target *bt, int small, int reps,
                       double peak_tflops, target_row *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->target, sizeof r->target, "%s", bt->name);
    snprintf(r->op, sizeof r->op, "%s", op->name);
    snprintf(r->source, sizeof r->source, "%s", bt->source);
    snprintf(r->backend, sizeof r->backend, "%s", mf_backend_name(mf_context_backend(ctx)));
    r->kind = bt->kind == MF_BENCH_TARGET_FLOOR ? "floor" : "speedup";
    r->goal = bt->goal;
    r->opt_ms = r->base_ms = r->floor_ms = r->ratio = NAN;
    r->peak_tflops = peak_tflops;
    snprintf(r->met, sizeof r->met, "n/a");
    mf_bench_target_run t;
    memset(&t, 0, sizeof t);
    t.small = small;
    mf_clear_error();
    mf_status s = bt->setup(ctx, &t);
    snprintf(r->shape, sizeof r->shape, "%s", t.shape);
    if (s == MF_OK) s = time_target(ctx, bt->run, &t, reps, &r->opt_ms, r->timer, sizeof r->timer);
    if (s == MF_OK && bt->kind == MF_BENCH_TARGET_SPEEDUP) {
        char timer2[24];
        s = bt->baseline != NULL
                ? time_target(ctx, bt->baseline, &t, reps, &r->base_ms, timer2, sizeof timer2)
                : MF_ERR_INTERNAL;
    }
    char why[200] = "";
    if (s == MF_OK) s = bt->check(ctx, &t, why, sizeof why);
    if (s != MF_OK)
        snprintf(r->message, sizeof r->message, "%s: %.200s", mf_status_name(s), mf_last_error());
    else if (why[0] != '\0')
        snprintf(r->message, sizeof r->message, "check after timing: %.200s", why);
    r->ok = s == MF_OK && why[0] == '\0';
    if (r->ok) {
        const int gpu = strcmp(r->timer, "cuda-events") == 0;
        if (bt->kind == MF_BENCH_TARGET_FLOOR) {
            if (peak_tflops > 0 && t.floor_flops > 0) {
                r->floor_ms = t.floor_flops / (peak_tflops * 1e12) * 1e3;
                r->ratio = r->opt_ms / r->floor_ms;
            }
        } else if (r->opt_ms > 0) {
            r->ratio = r->base_ms / r->opt_ms;
        }
        if (gpu && !small && isfinite(r->ratio))
            snprintf(r->met, sizeof r->met, "%s",
                     (bt->kind == MF_BENCH_TARGET_FLOOR ? r->ratio <= bt->goal : r->ratio >= bt->goal)
                         ? "yes"
                         : "no");
    }
    for (int i = 0; i < t.n_dev; i++) mf_buffer_free(ctx, t.dev[i]);
    for (int i = 0; i < t.n_host; i++) free(t.host[i]);
}

/* --targets: every target of the selected ops; exit 1 when one failed to run or its check failed
 * (an unmet goal is reported in 'met', not an error). */
static int run_targets(mf_context *ctx, const mf_op_desc *const *all, size_t n_ops, const mf_op_desc *only,
                       int small, int reps, bench_format format, FILE *csv, FILE *out, FILE *err,
                       const char *out_path)
{
    double peak_tflops, peak_gbps;
    char device[256];
    device_peaks(ctx, &peak_tflops, &peak_gbps, device, sizeof device);
    if (mf_context_backend(ctx) != MF_BACKEND_CUDA) small = 1; /* the full shapes would take days emulated */
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < n_ops; i++)
        if (only == NULL || all[i] == only) cap += (size_t)all[i]->n_bench_targets;
    target_row *rows = calloc(cap ? cap : 1, sizeof *rows);
    if (rows == NULL) {
        fprintf(err, "memfix bench: out of memory\n");
        return MF_CLI_UNAVAILABLE;
    }
    for (size_t i = 0; i < n_ops; i++) {
        if (only != NULL && all[i] != only) continue;
        for (int k = 0; k < all[i]->n_bench_targets; k++)
            run_target(ctx, all[i], &all[i]->bench_targets[k], small, reps, peak_tflops, &rows[n++]);
    }
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) failed += !rows[i].ok;
    char summary[400];
    snprintf(summary, sizeof summary, "%zu targets (%zu failed, device %s%s)", n, failed, device,
             small ? ", reduced shapes" : "");
    int written = 1;
    if (format == BENCH_JSON)
        written = mf_cli_bench_write_target_json(csv, rows, n);
    else if (format == BENCH_CSV)
        mf_cli_bench_write_target_csv(csv, rows, n);
    else {
        char title[440];
        snprintf(title, sizeof title, "memfix bench --targets: %s", summary);
        mf_cli_bench_write_target_table(csv, rows, n, title);
    }
    const int rc = finish_output(written, failed, csv, out, err, out_path, summary);
    if (n == 0) fprintf(err, "memfix bench: no targets registered%s\n", only != NULL ? " for this op" : "");
    for (size_t i = 0; i < n; i++)
        if (!rows[i].ok)
            fprintf(err, "FAIL target %s [%s]: %s\n", rows[i].target, rows[i].shape, rows[i].message);
    free(rows);
    return rc;
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
        if (*end == ',')
            end++;
        else if (*end != '\0')
            return -1;
        s = end;
    }
    return n;
}

#define MAX_SIZES 16

/* The header of the sweep table: what ran where and what the times are. */
static void sweep_title(char *buf, size_t cap, size_t n, size_t failed, const char *timer, const char *device,
                        int reps)
{
    snprintf(buf, cap, "memfix bench: %zu rows (%zu failed), device %s, timer %s (%s), mean of %d rep%s", n,
             failed, device, timer,
             strcmp(timer, "host-wall") == 0 ? "CPU time of host execution mode, not GPU time"
                                             : "GPU time of the optimized call",
             reps, reps == 1 ? "" : "s");
}

int mf_cli_bench(int argc, char **argv, FILE *out, FILE *err)
{
    const char *op_name = NULL, *backend_name = "auto", *out_path = NULL, *plot_dir = NULL;
    int reps = 3, n_sizes = 0, json = 0, csv_out = 0, targets = 0, small = 0;
    int64_t sizes[MAX_SIZES];
    enum {
        OPT_H,
        OPT_HELP,
        OPT_JSON,
        OPT_CSV,
        OPT_TARGETS,
        OPT_SMALL,
        OPT_OP,
        OPT_BACKEND,
        OPT_SIZES,
        OPT_REPS,
        OPT_OUT,
        OPT_PLOT,
        N_OPTS
    };
    static const mf_cli_opt opts[N_OPTS] = { { "-h", 0 },     { "--help", 0 },    { "--json", 0 },
                                             { "--csv", 0 },  { "--targets", 0 }, { "--small", 0 },
                                             { "--op", 1 },   { "--backend", 1 }, { "--sizes", 1 },
                                             { "--reps", 1 }, { "--out", 1 },     { "--plot", 1 } };
    for (int i = 1; i < argc; i++) {
        const char *val;
        const int k = mf_cli_option(argc, argv, &i, opts, N_OPTS, &val);
        if (k == OPT_H || k == OPT_HELP) {
            mf_cli_bench_help(out);
            return MF_CLI_OK;
        }
        if (k == OPT_JSON || k == OPT_CSV || k == OPT_TARGETS || k == OPT_SMALL) {
            *(k == OPT_JSON ? &json : k == OPT_CSV ? &csv_out : k == OPT_TARGETS ? &targets : &small) = 1;
            continue;
        }
        if (k < 0) {
            fprintf(err, "memfix bench: unknown argument '%s' (see memfix bench --help)\n", argv[i]);
            return MF_CLI_USAGE;
        }
        if (val == NULL || *val == '\0') {
            fprintf(err, "memfix bench: %s needs a value\n", opts[k].name);
            return MF_CLI_USAGE;
        }
        if (k == OPT_OP)
            op_name = val;
        else if (k == OPT_BACKEND)
            backend_name = val;
        else if (k == OPT_SIZES) {
            n_sizes = parse_sizes(val, sizes, MAX_SIZES);
            if (n_sizes <= 0) {
                fprintf(
                    err,
                    "memfix bench: --sizes wants up to %d comma-separated integers in [1, 2^24] (got '%s')\n",
                    MAX_SIZES, val);
                return MF_CLI_USAGE;
            }
        } else if (k == OPT_REPS) {
            char *end = NULL;
            long v = strtol(val, &end, 10);
            if (end == val || *end != '\0' || v < 1 || v > 1000) {
                fprintf(err, "memfix bench: --reps wants an integer in [1, 1000] (got '%s')\n", val);
                return MF_CLI_USAGE;
            }
            reps = (int)v;
        } else if (k == OPT_OUT) {
            out_path = val;
        } else {
            plot_dir = val;
        }
    }

    if (targets && (n_sizes > 0 || plot_dir != NULL)) {
        fprintf(err, "memfix bench: --targets runs fixed shapes: --sizes and --plot do not apply\n");
        return MF_CLI_USAGE;
    }
    if (json && csv_out) {
        fprintf(err, "memfix bench: --json and --csv: choose one output format\n");
        return MF_CLI_USAGE;
    }
    const bench_format format = json ? BENCH_JSON : csv_out ? BENCH_CSV : BENCH_TABLE;
    if (small && !targets) {
        fprintf(err, "memfix bench: --small applies to --targets only\n");
        return MF_CLI_USAGE;
    }
    mf_backend backend;
    if (!mf_cli_backend(err, "bench", backend_name, &backend)) return MF_CLI_USAGE;
    size_t n_ops = 0;
    const mf_op_desc *const *all = mf_registry(&n_ops);
    const mf_op_desc *only = NULL;
    if (op_name != NULL && (only = mf_cli_find_op(err, "bench", op_name)) == NULL) return MF_CLI_USAGE;
    if (backend == MF_BACKEND_CUDA && !mf_backend_available(MF_BACKEND_CUDA)) {
        fprintf(
            err,
            "memfix bench: backend cuda is not available (no device, or no CUDA backend in this build)\n");
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
    if (targets) {
        const int trc = run_targets(ctx, all, n_ops, only, small, reps, format, csv, out, err, out_path);
        mf_context_destroy(ctx);
        return trc;
    }
    const mf_backend resolved = mf_context_backend(ctx);
    /* the label of the rows; sweep rows on a GPU say cuda-events when the events worked */
    const char *timer = resolved == MF_BACKEND_CUDA ? "cuda-events" : "host-wall";
    double peak_tflops, peak_gbps;
    char device[256];
    device_peaks(ctx, &peak_tflops, &peak_gbps, device, sizeof device);

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
                r->peak_tflops = peak_tflops;
                r->peak_gbps = peak_gbps;
                row_rates(r);
            }
        }
    }
    mf_context_destroy(ctx);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) failed += !rows[i].ok;
    char summary[400];
    snprintf(summary, sizeof summary, "%zu rows (%zu failed, timer %s, device %s)", n, failed, timer, device);
    int written = 1;
    if (format == BENCH_JSON) {
        written = mf_cli_bench_write_json(csv, rows, n);
    } else if (format == BENCH_CSV) {
        mf_cli_bench_write_csv(csv, rows, n);
    } else {
        char title[512];
        sweep_title(title, sizeof title, n, failed, timer, device, reps);
        mf_cli_bench_write_table(csv, rows, n, title);
    }
    int rc = finish_output(written, failed, csv, out, err, out_path, summary);
    if (plot_dir != NULL) {
        const int prc = mf_cli_bench_plot(plot_dir, rows, n, csv == out ? err : out, err);
        if (prc != MF_CLI_OK) rc = prc;
    }
    for (size_t i = 0; i < n; i++)
        if (!rows[i].ok)
            fprintf(err, "FAIL %s/%s size %lld [%s]: %s\n", rows[i].op, rows[i].variant, rows[i].size,
                    rows[i].shape, rows[i].message);
    free(rows);
    return rc;
}
