/* `memfix`: run the registered fixes and report equivalence and memory.
 *
 *   memfix --help
 *   memfix report [--op NAME] [--backend auto|host|cuda] [--json]
 *
 * Subcommands live in one dispatch table (mf_cli_commands); plan, verify and
 * bench are added there. */
#define _POSIX_C_SOURCE 200809L
#include "memfix_cli.h"

#include "memfix/check.h"
#include "memfix/memfix.h"
#include "memfix/registry.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mf_cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv, FILE *out, FILE *err); /* argv[0] is the command name */
    void (*help)(FILE *out);
} mf_cli_command;

/* ---- report ------------------------------------------------------------------------- */
static void report_help(FILE *out)
{
    fprintf(out, "usage: memfix report [--op NAME] [--backend auto|host|cuda] [--json]\n"
                 "\n"
                 "Runs, for every registered fix (or only NAME), the reference and each\n"
                 "optimized variant on the fix's built-in cases, compares the outputs with the\n"
                 "fix's tolerance, and measures scratch memory through the context's tracked\n"
                 "allocators. One line per compared quantity of each (variant, case):\n"
                 "  compared (the output), tolerance row (its row in src/core/tolerance.c),\n"
                 "  max abs err, budget used (max over elements of |got-ref| / (atol +\n"
                 "  rtol*|ref|); 100%% is the limit); on the case's first line: op, variant,\n"
                 "  backend, dtype, verdict, ref peak (reference host scratch bytes), opt peak\n"
                 "  (optimized device scratch bytes), ceiling (the op header's formula at that\n"
                 "  shape, bytes) and case (the full case, every option).\n"
                 "A row passes when the outputs are equivalent AND opt peak <= ceiling.\n"
                 "\n"
                 "options:\n"
                 "  --op NAME         only this fix (see the list below)\n"
                 "  --backend B       auto (default: CUDA when a device is present, else host\n"
                 "                    execution mode), host, or cuda\n"
                 "  --json            print a JSON array of objects with the keys op, variant,\n"
                 "                    backend, dtype, shape, max_abs_err, max_rel_err, atol, rtol,\n"
                 "                    pass, ref_peak_bytes, opt_peak_bytes, ceiling_bytes (atol,\n"
                 "                    rtol: the loosest row), budget_used (the worst share; null\n"
                 "                    on a NaN/Inf mismatch) and outputs: per quantity name,\n"
                 "                    tolerance, atol, rtol, max_abs_err, budget_used, pass\n"
                 "  -h, --help        this help\n"
                 "\n"
                 "exit status: 0 every row passed, 1 some row failed, 2 usage error or unknown\n"
                 "op, 3 the backend is unavailable.\n"
                 "\n"
                 "registered fixes:\n");
    size_t n = 0;
    const mf_op_desc *const *ops = mf_registry(&n);
    if (n == 0) fprintf(out, "  (none: this build has no optimized kernels)\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  %-16s %s\n", ops[i]->name, ops[i]->summary ? ops[i]->summary : "");
        fprintf(out, "  %-16s variants:", "");
        for (int v = 0; v < ops[i]->n_variants; v++) fprintf(out, " %s", ops[i]->variants[v]);
        fprintf(out, "; %d built-in cases (report runs %d)\n", ops[i]->n_cases, mf_op_report_cases(ops[i]));
    }
}

int mf_cli_option(int argc, char **argv, int *i, const mf_cli_opt *opts, size_t n, const char **value)
{
    const char *a = argv[*i];
    *value = NULL;
    for (size_t k = 0; k < n; k++) {
        const size_t len = opts[k].name != NULL ? strlen(opts[k].name) : 0;
        if (len == 0 || strncmp(a, opts[k].name, len) != 0) continue;
        if (a[len] == '\0' && !opts[k].takes_value) return (int)k;
        if (!opts[k].takes_value || (a[len] != '\0' && a[len] != '=')) continue;
        if (a[len] == '=')
            *value = a + len + 1;
        else if (*i + 1 < argc)
            *value = argv[++*i];
        return (int)k;
    }
    return -1;
}

int mf_cli_backend(FILE *err, const char *cmd, const char *name, mf_backend *backend)
{
    static const char *const names[] = { "auto", "host", "cuda" };
    static const mf_backend backends[] = { MF_BACKEND_AUTO, MF_BACKEND_HOST, MF_BACKEND_CUDA };
    for (int k = 0; k < 3; k++)
        if (strcmp(name, names[k]) == 0) {
            *backend = backends[k];
            return 1;
        }
    if (err != NULL)
        fprintf(err, "memfix %s: unknown backend '%s' (expected auto, host or cuda)\n", cmd, name);
    return 0;
}

const mf_op_desc *mf_cli_find_op(FILE *err, const char *cmd, const char *name)
{
    const mf_op_desc *op = mf_registry_find(name);
    if (op != NULL) return op;
    size_t n = 0;
    const mf_op_desc *const *ops = mf_registry(&n);
    fprintf(err, "memfix %s: unknown op '%s'; registered ops:", cmd, name);
    if (n == 0) fprintf(err, " (none)");
    for (size_t i = 0; i < n; i++) fprintf(err, "%s %s", i ? "," : "", ops[i]->name);
    fprintf(err, "\n");
    return NULL;
}

void mf_cli_num_cell(char *buf, size_t cap, double x)
{
    if (isinf(x))
        snprintf(buf, cap, x > 0 ? "inf" : "-inf");
    else if (isnan(x))
        snprintf(buf, cap, "nan");
    else
        snprintf(buf, cap, "%.3g", x);
}

const char *mf_cli_error_reason(char *buf, size_t cap)
{
    const char *e = mf_last_error();
    const char *colon = strstr(e, ": "), *loc = strrchr(e, '[');
    if (colon != NULL && strchr(e, ' ') > colon) e = colon + 2; /* "<func>: " */
    size_t len = strlen(e);
    if (loc != NULL && loc > e && loc[-1] == ' ' && e[len - 1] == ']') len = (size_t)(loc - 1 - e);
    snprintf(buf, cap, "%.*s", (int)len, e);
    return buf;
}

const char *mf_cli_bytes_short(char *buf, size_t cap, size_t b)
{
    const double x = (double)b;
    if (b == SIZE_MAX)
        snprintf(buf, cap, "n/a");
    else if (x >= 1024.0 * 1024 * 1024)
        snprintf(buf, cap, "%.2f GiB", x / (1024.0 * 1024 * 1024));
    else if (x >= 1024.0 * 1024)
        snprintf(buf, cap, "%.2f MiB", x / (1024.0 * 1024));
    else if (x >= 1024.0)
        snprintf(buf, cap, "%.2f KiB", x / 1024.0);
    else
        snprintf(buf, cap, "%zu B", b);
    return buf;
}

/* The exact count with the short form beside it ("123456 (120.56 KiB)"); below 1 KiB and n/a as the short form. */
const char *mf_cli_bytes(char *buf, size_t cap, size_t b)
{
    if (b == SIZE_MAX || b < 1024) return mf_cli_bytes_short(buf, cap, b);
    char unit[32];
    snprintf(buf, cap, "%zu (%s)", b, mf_cli_bytes_short(unit, sizeof unit, b));
    return buf;
}

/* The table has one line per compared quantity (an output of the case under
 * its tolerance row); the case's own columns (op, variant, ..., verdict,
 * peaks, the full case) are printed on its first quantity's line only. */
enum { NCOL = 13 };
static const char *const col_names[NCOL] = { "op",       "variant",       "backend",     "dtype",
                                             "compared", "tolerance row", "max abs err", "budget used",
                                             "verdict",  "ref peak",      "opt peak",    "ceiling",
                                             "case" };

typedef struct report_line {
    const mf_case_result *r;
    int k; /* the quantity, or -1 for a case that compared none */
} report_line;

void mf_cli_budget_cell(char *buf, size_t cap, double used)
{
    if (isnan(used) || isinf(used))
        snprintf(buf, cap, "%s", isinf(used) ? "inf (NaN/Inf or exact)" : "nan");
    else
        snprintf(buf, cap, "%.3g%%", 100.0 * used);
}

void mf_cli_ceiling_cell(char *buf, size_t cap, size_t ceiling)
{
    if (ceiling == SIZE_MAX)
        snprintf(buf, cap, "n/a (the formula rejects this shape or overflows)");
    else
        snprintf(buf, cap, "%zu", ceiling);
}

static void row_cells(const report_line *l, char (*cells)[MF_CLI_CELL])
{
    const mf_case_result *r = l->r;
    const int first = l->k <= 0;
    for (int c = 0; c < NCOL; c++) cells[c][0] = '\0';
    if (first) {
        snprintf(cells[0], MF_CLI_CELL, "%s", r->op);
        snprintf(cells[1], MF_CLI_CELL, "%s", r->variant);
        snprintf(cells[2], MF_CLI_CELL, "%s", r->backend);
        snprintf(cells[3], MF_CLI_CELL, "%s", r->dtype);
        snprintf(cells[8], MF_CLI_CELL, "%s", r->pass ? "PASS" : "FAIL");
        snprintf(cells[9], MF_CLI_CELL, "%zu", r->ref_peak_bytes);
        snprintf(cells[10], MF_CLI_CELL, "%zu", r->opt_peak_bytes);
        mf_cli_ceiling_cell(cells[11], MF_CLI_CELL, r->ceiling_bytes);
        snprintf(cells[12], MF_CLI_CELL, "%.159s", r->shape);
    }
    if (l->k < 0) {
        snprintf(cells[4], MF_CLI_CELL, "(none)");
        mf_cli_num_cell(cells[6], MF_CLI_CELL, r->max_abs_err);
        return;
    }
    const mf_output_result *o = &r->outputs[l->k];
    snprintf(cells[4], MF_CLI_CELL, "%s%s", o->what, o->pass ? "" : " FAIL");
    snprintf(cells[5], MF_CLI_CELL, "%s", o->tol);
    mf_cli_num_cell(cells[6], MF_CLI_CELL, o->max_abs_err);
    mf_cli_budget_cell(cells[7], MF_CLI_CELL, o->budget_used);
}

void mf_cli_print_table(FILE *out, int ncol, const char *const *names, const int *right, size_t n,
                        void (*cells)(const void *rows, size_t i, char (*cells)[MF_CLI_CELL]),
                        const void *rows)
{
    static char cell[MF_CLI_MAX_COLS][MF_CLI_CELL];
    size_t width[MF_CLI_MAX_COLS];
    if (ncol > MF_CLI_MAX_COLS) ncol = MF_CLI_MAX_COLS;
    for (int c = 0; c < ncol; c++) width[c] = strlen(names[c]);
    for (size_t i = 0; i < n; i++) {
        cells(rows, i, cell);
        for (int c = 0; c < ncol; c++)
            if (strlen(cell[c]) > width[c]) width[c] = strlen(cell[c]);
    }
    for (int c = 0; c < ncol; c++)
        fprintf(out, "%s%*s", c ? "  " : "", right[c] ? (int)width[c] : -(int)width[c], names[c]);
    fprintf(out, "\n");
    for (int c = 0; c < ncol; c++) {
        fprintf(out, "%s", c ? "  " : "");
        for (size_t k = 0; k < width[c]; k++) fputc('-', out);
    }
    fprintf(out, "\n");
    for (size_t i = 0; i < n; i++) {
        cells(rows, i, cell);
        for (int c = 0; c < ncol; c++)
            fprintf(out, "%s%*s", c ? "  " : "", right[c] ? (int)width[c] : -(int)width[c], cell[c]);
        fprintf(out, "\n");
    }
}

static void report_cells(const void *rows, size_t i, char (*cells)[MF_CLI_CELL])
{
    row_cells(&((const report_line *)rows)[i], cells);
}

static void print_table(FILE *out, const mf_case_result *rows, size_t n)
{
    /* numbers right-aligned, text left-aligned */
    static const int right[NCOL] = { 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 0 };
    size_t n_lines = 0;
    for (size_t i = 0; i < n; i++) n_lines += rows[i].n_outputs > 0 ? (size_t)rows[i].n_outputs : 1;
    report_line *lines = malloc((n_lines ? n_lines : 1) * sizeof *lines);
    if (lines == NULL) {
        fprintf(out, "memfix report: out of memory printing the table\n");
        return;
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].n_outputs == 0) lines[at++] = (report_line){ &rows[i], -1 };
        for (int k = 0; k < rows[i].n_outputs; k++) lines[at++] = (report_line){ &rows[i], k };
    }
    mf_cli_print_table(out, NCOL, col_names, right, n_lines, report_cells, lines);
    free(lines);
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) failed += !rows[i].pass;
    fprintf(out, "\n%zu rows, %zu passed, %zu failed", n, n - failed, failed);
    fprintf(out, "  (bytes: scratch beyond inputs and outputs; ceiling: the op header's formula)\n");
    fprintf(out, "budget used: max over elements of |got-ref| / (atol + rtol*|ref|) under the quantity's\n"
                 "tolerance row (the rows: src/core/tolerance.c); above 100%% fails.\n");
    for (size_t i = 0; i < n; i++)
        if (!rows[i].pass)
            fprintf(out, "FAIL %s/%s [%s %s]: %s\n", rows[i].op, rows[i].variant, rows[i].dtype,
                    rows[i].shape, rows[i].message[0] ? rows[i].message : "(no message)");
}

void mf_cli_case_json(cJSON *o, const mf_case_result *r, const char *candidate)
{
    cJSON_AddStringToObject(o, "op", r->op);
    cJSON_AddStringToObject(o, "variant", r->variant);
    if (candidate != NULL) cJSON_AddStringToObject(o, "candidate", candidate);
    cJSON_AddStringToObject(o, "backend", r->backend);
    cJSON_AddStringToObject(o, "dtype", r->dtype);
    cJSON_AddStringToObject(o, "shape", r->shape);
    /* non-finite errors (a NaN/Inf mismatch, or not compared) have no JSON number: null */
    if (isfinite(r->max_abs_err))
        cJSON_AddNumberToObject(o, "max_abs_err", r->max_abs_err);
    else
        cJSON_AddNullToObject(o, "max_abs_err");
    if (isfinite(r->max_rel_err))
        cJSON_AddNumberToObject(o, "max_rel_err", r->max_rel_err);
    else
        cJSON_AddNullToObject(o, "max_rel_err");
    cJSON_AddNumberToObject(o, "atol", r->atol);
    cJSON_AddNumberToObject(o, "rtol", r->rtol);
    cJSON_AddBoolToObject(o, "pass", r->pass ? 1 : 0);
    cJSON_AddNumberToObject(o, "ref_peak_bytes", (double)r->ref_peak_bytes);
    cJSON_AddNumberToObject(o, "opt_peak_bytes", (double)r->opt_peak_bytes);
    if (r->ceiling_bytes == SIZE_MAX)
        cJSON_AddNullToObject(o, "ceiling_bytes");
    else
        cJSON_AddNumberToObject(o, "ceiling_bytes", (double)r->ceiling_bytes);
    /* per compared quantity: its tolerance row and the share of its budget used */
    cJSON *arr = cJSON_AddArrayToObject(o, "outputs");
    for (int k = 0; arr != NULL && k < r->n_outputs; k++) {
        const mf_output_result *q = &r->outputs[k];
        cJSON *e = cJSON_CreateObject();
        if (e == NULL) break;
        cJSON_AddItemToArray(arr, e);
        cJSON_AddStringToObject(e, "name", q->what);
        cJSON_AddStringToObject(e, "tolerance", q->tol);
        cJSON_AddStringToObject(e, "worst_at", q->worst_at);
        cJSON_AddNumberToObject(e, "atol", q->atol);
        cJSON_AddNumberToObject(e, "rtol", q->rtol);
        if (isfinite(q->max_abs_err))
            cJSON_AddNumberToObject(e, "max_abs_err", q->max_abs_err);
        else
            cJSON_AddNullToObject(e, "max_abs_err");
        /* null: a NaN/Inf pattern mismatch (no finite share) */
        if (isfinite(q->budget_used))
            cJSON_AddNumberToObject(e, "budget_used", q->budget_used);
        else
            cJSON_AddNullToObject(e, "budget_used");
        cJSON_AddBoolToObject(e, "pass", q->pass ? 1 : 0);
    }
    double worst = 0.0;
    for (int k = 0; k < r->n_outputs; k++)
        if (!(r->outputs[k].budget_used <= worst)) worst = r->outputs[k].budget_used;
    if (isfinite(worst))
        cJSON_AddNumberToObject(o, "budget_used", worst);
    else
        cJSON_AddNullToObject(o, "budget_used");
}

static int print_json(FILE *out, FILE *err, const mf_case_result *rows, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    if (arr == NULL) {
        fprintf(err, "memfix report: out of memory building JSON\n");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (o == NULL) break;
        cJSON_AddItemToArray(arr, o);
        mf_cli_case_json(o, &rows[i], NULL);
    }
    if (!mf_cli_print_json(out, arr)) {
        fprintf(err, "memfix report: out of memory printing JSON\n");
        return 0;
    }
    return 1;
}

int mf_cli_print_json(FILE *out, cJSON *root)
{
    char *text = root != NULL ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (text == NULL) return 0;
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return 1;
}

static int cmd_report(int argc, char **argv, FILE *out, FILE *err)
{
    const char *op_name = NULL, *backend_name = "auto";
    int json = 0;
    enum { OPT_H, OPT_HELP, OPT_JSON, OPT_OP, OPT_BACKEND, N_OPTS };
    static const mf_cli_opt opts[N_OPTS] = {
        { "-h", 0 }, { "--help", 0 }, { "--json", 0 }, { "--op", 1 }, { "--backend", 1 }
    };
    for (int i = 1; i < argc; i++) {
        const char *v;
        const int k = mf_cli_option(argc, argv, &i, opts, N_OPTS, &v);
        if (k == OPT_H || k == OPT_HELP) {
            report_help(out);
            return MF_CLI_OK;
        } else if (k == OPT_JSON) {
            json = 1;
        } else if (k < 0) {
            fprintf(err, "memfix report: unknown argument '%s' (see memfix report --help)\n", argv[i]);
            return MF_CLI_USAGE;
        } else if (v == NULL) {
            fprintf(err, "memfix report: %s needs a value%s\n", opts[k].name,
                    k == OPT_BACKEND ? " (auto, host or cuda)" : "");
            return MF_CLI_USAGE;
        } else if (k == OPT_OP) {
            op_name = v;
        } else {
            backend_name = v;
        }
    }

    mf_backend backend;
    if (!mf_cli_backend(err, "report", backend_name, &backend)) return MF_CLI_USAGE;

    size_t n_ops = 0;
    const mf_op_desc *const *all = mf_registry(&n_ops);
    const mf_op_desc *only = NULL;
    if (op_name != NULL && (only = mf_cli_find_op(err, "report", op_name)) == NULL) return MF_CLI_USAGE;

    if (backend == MF_BACKEND_CUDA && !mf_backend_available(MF_BACKEND_CUDA)) {
        fprintf(err, "memfix report: backend cuda is not available: %s (use --backend host, or auto)\n",
#ifdef MF_HAVE_CUDA
                "no CUDA device is present"
#else
                "this build has no CUDA backend (MF_CUDA=OFF or no nvcc)"
#endif
        );
        return MF_CLI_UNAVAILABLE;
    }
    mf_context *ctx = NULL;
    mf_status s = mf_context_create(&ctx, backend);
    if (s != MF_OK) {
        fprintf(err, "memfix report: cannot create a %s context: %s: %s\n", backend_name, mf_status_name(s),
                mf_last_error());
        return MF_CLI_UNAVAILABLE;
    }

    size_t cap = 0, n = 0;
    for (size_t i = 0; i < n_ops; i++)
        if (only == NULL || all[i] == only)
            cap += (size_t)all[i]->n_variants * (size_t)mf_op_report_cases(all[i]);
    mf_case_result *rows = calloc(cap ? cap : 1, sizeof *rows);
    if (rows == NULL) {
        mf_context_destroy(ctx);
        fprintf(err, "memfix report: out of memory\n");
        return MF_CLI_UNAVAILABLE;
    }
    const char *resolved = mf_backend_name(mf_context_backend(ctx));
    for (size_t i = 0; i < n_ops; i++) {
        const mf_op_desc *op = all[i];
        if (only != NULL && op != only) continue;
        for (int v = 0; v < op->n_variants; v++) {
            for (int c = 0; c < mf_op_report_cases(op); c++) {
                if (!mf_op_case_applies(op, v, c)) continue;
                mf_case_result *r = &rows[n++];
                mf_clear_error();
                s = op->run_case(ctx, v, c, r);
                /* fill what the op left empty, so every row is identifiable */
                if (r->op[0] == '\0') snprintf(r->op, sizeof r->op, "%s", op->name);
                if (r->variant[0] == '\0') snprintf(r->variant, sizeof r->variant, "%s", op->variants[v]);
                if (r->backend[0] == '\0') snprintf(r->backend, sizeof r->backend, "%s", resolved);
                if (r->shape[0] == '\0') snprintf(r->shape, sizeof r->shape, "case %d", c);
                if (s != MF_OK) {
                    r->pass = 0;
                    if (r->message[0] == '\0')
                        snprintf(r->message, sizeof r->message, "%s: %s", mf_status_name(s), mf_last_error());
                }
            }
        }
    }
    mf_context_destroy(ctx);

    int any_failed = 0;
    for (size_t i = 0; i < n; i++) any_failed |= !rows[i].pass;
    int ok = 1;
    if (json)
        ok = print_json(out, err, rows, n);
    else if (n == 0)
        fprintf(out, "no registered fixes in this build (reference-only build: no optimized kernels)\n");
    else
        print_table(out, rows, n);
    free(rows);
    if (!ok) return MF_CLI_UNAVAILABLE;
    return any_failed ? MF_CLI_FAILED : MF_CLI_OK;
}

/* ---- dispatch ------------------------------------------------------------------------- */
static const mf_cli_command mf_cli_commands[] = {
    { "report", "run every fix's built-in cases: equivalence and scratch memory vs ceiling", cmd_report,
      report_help },
    { "plan", "memory arithmetic: per-fix bytes and a training-memory breakdown per GPU", mf_cli_plan,
      mf_cli_plan_help },
    { "bench", "time and measure scratch of reference and optimized over a size sweep (CSV)", mf_cli_bench,
      mf_cli_bench_help },
    { "verify", "check your own kernel (a shared library) against the reference, with defenses",
      mf_cli_verify, mf_cli_verify_help },
};
#define MF_CLI_NCOMMANDS (sizeof mf_cli_commands / sizeof mf_cli_commands[0])

/* The command closest to an unknown name ('rpeort', 'bnech', 'ver'), or NULL:
 * a prefix of a command, or within an edit distance of max(2, len/3)
 * (Levenshtein, adjacent swaps counting once). */
static const char *closest_command(const char *name)
{
    const size_t n = strlen(name);
    const char *best = NULL;
    size_t best_d = n / 3 > 2 ? n / 3 : 2;
    if (n == 0 || n > 32) return NULL;
    for (size_t c = 0; c < MF_CLI_NCOMMANDS; c++) {
        const char *cand = mf_cli_commands[c].name;
        const size_t m = strlen(cand);
        if (strncmp(cand, name, n) == 0) return cand;
        size_t d[34][34];
        for (size_t i = 0; i <= n; i++) d[i][0] = i;
        for (size_t j = 0; j <= m; j++) d[0][j] = j;
        for (size_t i = 1; i <= n; i++)
            for (size_t j = 1; j <= m; j++) {
                size_t v = d[i - 1][j - 1] + (name[i - 1] != cand[j - 1]);
                if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
                if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
                if (i > 1 && j > 1 && name[i - 1] == cand[j - 2] && name[i - 2] == cand[j - 1] &&
                    d[i - 2][j - 2] + 1 < v)
                    v = d[i - 2][j - 2] + 1;
                d[i][j] = v;
            }
        if (d[n][m] <= best_d) {
            best_d = d[n][m];
            best = cand;
        }
    }
    return best;
}

static void unknown_command(FILE *err, const char *cmd)
{
    const char *guess = closest_command(cmd);
    fprintf(err, "memfix: unknown command '%s'", cmd);
    if (guess != NULL) fprintf(err, "; did you mean '%s'?", guess);
    fprintf(err, " (commands:");
    for (size_t i = 0; i < MF_CLI_NCOMMANDS; i++) fprintf(err, " %s", mf_cli_commands[i].name);
    fprintf(err, "; see memfix --help)\n");
}

static void main_help(FILE *out)
{
    fprintf(out, "usage: memfix <command> [options]\n"
                 "       memfix <command> --help\n"
                 "\n"
                 "memfix: reference kernels and a regression suite for the memory fixes that make\n"
                 "long-context LLM training fit on a GPU. Each fix has a naive C reference (the\n"
                 "executable specification) and optimized CUDA variants; memfix checks that they\n"
                 "agree within a stated tolerance and stay under a stated scratch-memory ceiling.\n"
                 "\n"
                 "commands:\n");
    for (size_t i = 0; i < MF_CLI_NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", mf_cli_commands[i].name, mf_cli_commands[i].summary);
    fprintf(out, "\n"
                 "options:\n"
                 "  -h, --help  this help\n"
                 "  --version   print the version\n"
                 "\n"
                 "environment: CUDAHOST_WORKERS, CUDAHOST_DEVICE_MEMORY (host execution mode),\n"
                 "MF_DISABLE_CUDA=1 (treat the CUDA backend as unavailable).\n");
}

int mf_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
    if (out == NULL) out = stdout;
    if (err == NULL) err = stderr;
    if (argc < 2 || argv == NULL) {
        main_help(err);
        return MF_CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        if (strcmp(cmd, "help") == 0 && argc > 2) {
            for (size_t i = 0; i < MF_CLI_NCOMMANDS; i++)
                if (strcmp(argv[2], mf_cli_commands[i].name) == 0) {
                    mf_cli_commands[i].help(out);
                    return MF_CLI_OK;
                }
            unknown_command(err, argv[2]);
            return MF_CLI_USAGE;
        }
        main_help(out);
        return MF_CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
#ifdef MF_VERSION
        fprintf(out, "memfix %s\n", MF_VERSION);
#else
        fprintf(out, "memfix\n");
#endif
        return MF_CLI_OK;
    }
    for (size_t i = 0; i < MF_CLI_NCOMMANDS; i++)
        if (strcmp(cmd, mf_cli_commands[i].name) == 0)
            return mf_cli_commands[i].run(argc - 1, argv + 1, out, err);
    unknown_command(err, cmd);
    return MF_CLI_USAGE;
}
