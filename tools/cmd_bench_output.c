/* `memfix bench`'s output: the readable table (the default), CSV (--csv, and the file
 * --plot hands to ci/plot.sh), JSON (--json), for the sweep rows and the targets' rows. */
#define _POSIX_C_SOURCE 200809L
#include "cmd_bench.h"
#include "memfix_cli.h"

#include <cJSON.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

#define BENCH_CSV_HEADER                                                                                     \
    "op,variant,backend,timer,timed,dtype,shape,size,reps,ref_ms,opt_ms,ref_peak_bytes,opt_peak_bytes,"      \
    "ceiling_bytes,max_abs_err,status,message,flops,min_bytes,tflops,gbps,peak_tflops,peak_gbps,"            \
    "frac_peak_flops,frac_peak_bw"

void mf_cli_bench_write_csv(FILE *f, const bench_row *rows, size_t n)
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
        const double cols[8] = { r->flops > 0 ? r->flops : NAN,
                                 r->min_bytes > 0 ? r->min_bytes : NAN,
                                 r->tflops,
                                 r->gbps,
                                 r->peak_tflops,
                                 r->peak_gbps,
                                 r->tflops / r->peak_tflops,
                                 r->gbps / r->peak_gbps };
        for (int k = 0; k < 8; k++) {
            fputc(',', f);
            csv_num(f, cols[k]);
        }
        fputc('\n', f);
    }
}

static void json_num(cJSON *o, const char *key, double x)
{
    if (isfinite(x))
        cJSON_AddNumberToObject(o, key, x);
    else
        cJSON_AddNullToObject(o, key);
}

static double bytes_num(size_t b) { return b == SIZE_MAX ? NAN : (double)b; }

/* The CSV's columns as keys, one object per row; 0 when out of memory. */
int mf_cli_bench_write_json(FILE *f, const bench_row *rows, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr != NULL && i < n; i++) {
        const bench_row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        if (o == NULL) break;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "op", r->op);
        cJSON_AddStringToObject(o, "variant", r->variant);
        cJSON_AddStringToObject(o, "backend", r->backend);
        cJSON_AddStringToObject(o, "timer", r->timer);
        cJSON_AddStringToObject(o, "timed", r->timed);
        cJSON_AddStringToObject(o, "dtype", r->dtype);
        cJSON_AddStringToObject(o, "shape", r->shape);
        cJSON_AddNumberToObject(o, "size", (double)r->size);
        cJSON_AddNumberToObject(o, "reps", r->reps);
        json_num(o, "ref_ms", r->ref_ms);
        json_num(o, "opt_ms", r->opt_ms);
        json_num(o, "ref_peak_bytes", bytes_num(r->ref_peak));
        json_num(o, "opt_peak_bytes", bytes_num(r->opt_peak));
        json_num(o, "ceiling_bytes", bytes_num(r->ceiling));
        json_num(o, "max_abs_err", r->max_abs_err);
        cJSON_AddStringToObject(o, "status", r->ok ? "ok" : "failed");
        cJSON_AddStringToObject(o, "message", r->message);
        json_num(o, "flops", r->flops > 0 ? r->flops : NAN);
        json_num(o, "min_bytes", r->min_bytes > 0 ? r->min_bytes : NAN);
        json_num(o, "tflops", r->tflops);
        json_num(o, "gbps", r->gbps);
        json_num(o, "peak_tflops", r->peak_tflops);
        json_num(o, "peak_gbps", r->peak_gbps);
        json_num(o, "frac_peak_flops", r->tflops / r->peak_tflops);
        json_num(o, "frac_peak_bw", r->gbps / r->peak_gbps);
    }
    return mf_cli_print_json(f, arr);
}

#ifndef MF_PLOT_SCRIPT_DEFAULT
#define MF_PLOT_SCRIPT_DEFAULT "ci/plot.sh"
#endif

/* --plot DIR: DIR/bench.csv, then the plot script on it (its messages go to
 * err). Returns an exit code: OK, or UNAVAILABLE (no script, no gnuplot, a
 * directory or file that cannot be written, the script failed). */
int mf_cli_bench_plot(const char *dir, const bench_row *rows, size_t n, FILE *out, FILE *err)
{
    const char *script = getenv("MF_PLOT_SCRIPT");
    if (script == NULL || *script == '\0') script = MF_PLOT_SCRIPT_DEFAULT;
    if (strchr(dir, '\'') != NULL || strchr(script, '\'') != NULL) {
        fprintf(err, "memfix bench: --plot: a path with a single quote is not supported\n");
        return MF_CLI_UNAVAILABLE;
    }
    struct stat st;
    if (stat(script, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(err,
                "memfix bench: --plot: the plot script '%s' is missing (set MF_PLOT_SCRIPT to ci/plot.sh)\n",
                script);
        return MF_CLI_UNAVAILABLE;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(err, "memfix bench: --plot: cannot create '%s': %s\n", dir, strerror(errno));
        return MF_CLI_UNAVAILABLE;
    }
    char csv_path[4096], cmd[8400];
    snprintf(csv_path, sizeof csv_path, "%s/bench.csv", dir);
    FILE *f = fopen(csv_path, "w");
    if (f == NULL) {
        fprintf(err, "memfix bench: --plot: cannot write '%s': %s\n", csv_path, strerror(errno));
        return MF_CLI_UNAVAILABLE;
    }
    mf_cli_bench_write_csv(f, rows, n);
    if (fclose(f) != 0) {
        fprintf(err, "memfix bench: --plot: writing '%s' failed\n", csv_path);
        return MF_CLI_UNAVAILABLE;
    }
    snprintf(cmd, sizeof cmd, "bash '%s' '%s' '%s' 2>&1", script, csv_path, dir);
    fflush(out);
    fflush(err);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        fprintf(err, "memfix bench: --plot: cannot run '%s': %s\n", script, strerror(errno));
        return MF_CLI_UNAVAILABLE;
    }
    char line[512];
    while (fgets(line, sizeof line, p) != NULL) fputs(line, err);
    const int status = pclose(p);
    const int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 0) {
        fprintf(out, "memfix bench: charts and bench.csv written to %s\n", dir);
        return MF_CLI_OK;
    }
    if (code == 3)
        fprintf(err,
                "memfix bench: --plot: gnuplot is missing: no charts drawn (Debian/Ubuntu: apt-get install "
                "gnuplot-nox); the rows are in %s\n",
                csv_path);
    else
        fprintf(err, "memfix bench: --plot: '%s' failed (exit %d); the rows are in %s\n", script, code,
                csv_path);
    return MF_CLI_UNAVAILABLE;
}

void mf_cli_bench_write_target_csv(FILE *f, const target_row *rows, size_t n)
{
    fprintf(f, "%s\n", TARGET_CSV_HEADER);
    for (size_t i = 0; i < n; i++) {
        const target_row *r = &rows[i];
        fprintf(f, "%s,%s,%s,%s,%s,", r->target, r->op, r->source, r->backend, r->timer);
        csv_str(f, r->shape);
        fprintf(f, ",%s,", r->kind);
        const double cols[6] = { r->goal, r->opt_ms, r->base_ms, r->floor_ms, r->peak_tflops, r->ratio };
        for (int k = 0; k < 6; k++) {
            csv_num(f, cols[k]);
            fputc(',', f);
        }
        fprintf(f, "%s,%s,", r->met, r->ok ? "ok" : "failed");
        csv_str(f, r->message);
        fputc('\n', f);
    }
}

int mf_cli_bench_write_target_json(FILE *f, const target_row *rows, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr != NULL && i < n; i++) {
        const target_row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        if (o == NULL) break;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "target", r->target);
        cJSON_AddStringToObject(o, "op", r->op);
        cJSON_AddStringToObject(o, "source", r->source);
        cJSON_AddStringToObject(o, "backend", r->backend);
        cJSON_AddStringToObject(o, "timer", r->timer);
        cJSON_AddStringToObject(o, "shape", r->shape);
        cJSON_AddStringToObject(o, "kind", r->kind);
        json_num(o, "goal", r->goal);
        json_num(o, "opt_ms", r->opt_ms);
        json_num(o, "baseline_ms", r->base_ms);
        json_num(o, "floor_ms", r->floor_ms);
        json_num(o, "peak_tflops", r->peak_tflops);
        json_num(o, "ratio", r->ratio);
        cJSON_AddStringToObject(o, "met", r->met);
        cJSON_AddStringToObject(o, "status", r->ok ? "ok" : "failed");
        cJSON_AddStringToObject(o, "message", r->message);
    }
    return mf_cli_print_json(f, arr);
}

/* ---- the readable tables ------------------------------------------------------------------ */
static void ms_cell(char *buf, double ms)
{
    if (isfinite(ms))
        snprintf(buf, MF_CLI_CELL, "%.3g", ms);
    else
        snprintf(buf, MF_CLI_CELL, "-");
}

typedef struct {
    const bench_row *rows;
    int rates; /* GPU rows: the rate columns */
} sweep_table;

enum { SWEEP_COLS = 11, RATE_COLS = 4 };

static void sweep_cells(const void *p, size_t i, char (*c)[MF_CLI_CELL])
{
    const sweep_table *t = p;
    const bench_row *r = &t->rows[i];
    char b[64];
    snprintf(c[0], MF_CLI_CELL, "%s", r->op);
    snprintf(c[1], MF_CLI_CELL, "%s", r->variant);
    snprintf(c[2], MF_CLI_CELL, "%lld", r->size);
    ms_cell(c[3], r->ref_ms);
    ms_cell(c[4], r->opt_ms);
    if (isfinite(r->ref_ms) && r->opt_ms > 0)
        snprintf(c[5], MF_CLI_CELL, "%.2fx", r->ref_ms / r->opt_ms);
    else
        snprintf(c[5], MF_CLI_CELL, "-");
    snprintf(c[6], MF_CLI_CELL, "%s",
             r->ref_peak == SIZE_MAX ? "-" : mf_cli_bytes_short(b, sizeof b, r->ref_peak));
    snprintf(c[7], MF_CLI_CELL, "%s",
             r->opt_peak == SIZE_MAX ? "-" : mf_cli_bytes_short(b, sizeof b, r->opt_peak));
    snprintf(c[8], MF_CLI_CELL, "%s",
             r->ceiling == SIZE_MAX ? "-" : mf_cli_bytes_short(b, sizeof b, r->ceiling));
    if (isfinite(r->max_abs_err))
        snprintf(c[9], MF_CLI_CELL, "%.2g", r->max_abs_err);
    else
        snprintf(c[9], MF_CLI_CELL, "-");
    snprintf(c[10], MF_CLI_CELL, "%s", r->ok ? "ok" : "FAILED");
    int k = SWEEP_COLS;
    if (t->rates) {
        const double v[RATE_COLS] = { r->tflops, r->gbps, 100.0 * r->tflops / r->peak_tflops,
                                      100.0 * r->gbps / r->peak_gbps };
        for (int j = 0; j < RATE_COLS; j++, k++)
            if (isfinite(v[j]))
                snprintf(c[k], MF_CLI_CELL, j < 2 ? "%.3g" : "%.1f%%", v[j]);
            else
                snprintf(c[k], MF_CLI_CELL, "-");
    }
    snprintf(c[k], MF_CLI_CELL, "%.159s", r->shape);
}

void mf_cli_bench_write_table(FILE *f, const bench_row *rows, size_t n, const char *what)
{
    static const char *const names[] = { "op",      "variant",       "n",           "ref ms",
                                         "opt ms",  "ref/opt",       "ref scratch", "opt scratch",
                                         "ceiling", "max err",       "status",      "TFLOP/s",
                                         "GB/s",    "% peak FLOP/s", "% peak BW",   "shape" };
    static const int right[] = { 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0 };
    sweep_table t = { rows, 0 };
    for (size_t i = 0; i < n; i++) t.rates |= isfinite(rows[i].tflops) || isfinite(rows[i].gbps);
    const char *nm[SWEEP_COLS + RATE_COLS + 1];
    int rt[SWEEP_COLS + RATE_COLS + 1], ncol = 0;
    for (int c = 0; c < SWEEP_COLS + RATE_COLS + 1; c++) {
        if (!t.rates && c >= SWEEP_COLS && c < SWEEP_COLS + RATE_COLS) continue;
        nm[ncol] = names[c];
        rt[ncol++] = right[c];
    }
    fprintf(f, "%s\n", what);
    fprintf(f, "ref: the reference on the host; opt: the variant; ms: mean per call; scratch: peak bytes;\n"
               "ceiling: the op header's formula; max err: the last timed output against the reference\n\n");
    mf_cli_print_table(f, ncol, nm, rt, n, sweep_cells, &t);
    for (size_t i = 0; i < n; i++)
        if (!rows[i].ok)
            fprintf(f, "FAILED %s/%s n=%lld: %s\n", rows[i].op, rows[i].variant, rows[i].size,
                    rows[i].message);
}

static void target_cells(const void *p, size_t i, char (*c)[MF_CLI_CELL])
{
    const target_row *r = &((const target_row *)p)[i];
    const int floor = strcmp(r->kind, "floor") == 0;
    snprintf(c[0], MF_CLI_CELL, "%s", r->target);
    snprintf(c[1], MF_CLI_CELL, "%s", r->op);
    snprintf(c[2], MF_CLI_CELL, floor ? "<= %gx the floor" : ">= %gx the baseline", r->goal);
    ms_cell(c[3], r->opt_ms);
    ms_cell(c[4], floor ? r->floor_ms : r->base_ms);
    if (isfinite(r->ratio))
        snprintf(c[5], MF_CLI_CELL, "%.3gx", r->ratio);
    else
        snprintf(c[5], MF_CLI_CELL, "-");
    snprintf(c[6], MF_CLI_CELL, "%s", r->met);
    snprintf(c[7], MF_CLI_CELL, "%s", r->ok ? "ok" : "FAILED");
    snprintf(c[8], MF_CLI_CELL, "%.159s", r->shape);
}

void mf_cli_bench_write_target_table(FILE *f, const target_row *rows, size_t n, const char *what)
{
    static const char *const names[] = { "target", "op",  "goal",   "opt ms", "floor/baseline ms",
                                         "ratio",  "met", "status", "shape" };
    static const int right[] = { 0, 0, 0, 1, 1, 1, 0, 0, 0 };
    fprintf(f, "%s\n", what);
    fprintf(
        f,
        "floor: the work's FLOPs at the device's dense bf16 peak (ratio = opt / floor); baseline: another\n"
        "memfix op at the same shape (ratio = baseline / opt); met: n/a in host execution mode or at\n"
        "reduced shapes\n\n");
    mf_cli_print_table(f, 9, names, right, n, target_cells, rows);
    for (size_t i = 0; i < n; i++)
        if (!rows[i].ok) fprintf(f, "FAILED %s: %s\n", rows[i].target, rows[i].message);
}
