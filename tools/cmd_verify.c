/* `memfix verify`: a candidate kernel from a shared library against the
 * reference, with defenses against a kernel that only looks right
 * (include/memfix/verify.h, docs/verify.md).
 *
 *   memfix verify --op OP --lib PATH --symbol NAME [--backend auto|host|cuda] [--json]
 *                 [--seed S] [--cases N] [--list-cases] [--case ID] [--large] [--dump DIR]
 */
#define _POSIX_C_SOURCE 200809L
#include "memfix_cli.h"

#include "memfix/memfix.h"
#include "memfix/registry.h"
#include "memfix/verify.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- cases: --seed, --cases, --list-cases, --case, --large, --dump ---------- */
enum { MF_VERIFY_DEFAULT_CASES = 4, MF_VERIFY_MAX_CASES = 1000 };

typedef struct case_opts {
    uint64_t seed;
    int seed_given;
    int n_random;
    int list;
    const char *case_id;
    int large;
    const char *dump_dir;
} case_opts;

/* A fresh seed: the time and the process id, mixed. */
static uint64_t fresh_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) % 1000000000000ull; /* 12 digits: easy to type back */
}

/* 1: argv[*i] was a case option (consumed, with its value); 0: not one; -1: a usage error (printed). */
static int case_option(int argc, char **argv, int *i, case_opts *o, FILE *err)
{
    enum { OPT_LIST, OPT_LARGE, OPT_SEED, OPT_CASES, OPT_CASE, OPT_DUMP, N_OPTS };
    static const mf_cli_opt opts[N_OPTS] = { { "--list-cases", 0 }, { "--large", 0 }, { "--seed", 1 },
                                             { "--cases", 1 },      { "--case", 1 },  { "--dump", 1 } };
    const char *v;
    const int k = mf_cli_option(argc, argv, i, opts, N_OPTS, &v);
    if (k == OPT_LIST) return o->list = 1;
    if (k == OPT_LARGE) return o->large = 1;
    if (k == OPT_SEED) {
        char *end = NULL;
        if (v != NULL) o->seed = strtoull(v, &end, 10);
        if (v == NULL || end == v || *end != '\0' || v[0] == '-') {
            fprintf(err, "memfix verify: --seed needs a non-negative integer\n");
            return -1;
        }
        o->seed_given = 1;
        return 1;
    }
    if (k == OPT_CASES) {
        char *end = NULL;
        const long n = v == NULL ? -1 : strtol(v, &end, 10);
        if (v == NULL || end == v || *end != '\0' || n < 0 || n > MF_VERIFY_MAX_CASES) {
            fprintf(err, "memfix verify: --cases needs a count in [0, %d]\n", MF_VERIFY_MAX_CASES);
            return -1;
        }
        o->n_random = (int)n;
        return 1;
    }
    if (k == OPT_CASE || k == OPT_DUMP) {
        if (v == NULL) {
            fprintf(err, "memfix verify: %s\n",
                    k == OPT_CASE ? "--case needs a case id (see --list-cases)" : "--dump needs a directory");
            return -1;
        }
        if (k == OPT_CASE)
            o->case_id = v;
        else
            o->dump_dir = v;
        return 1;
    }
    return 0;
}

/* Memory a case may take: $MF_VERIFY_MEMORY_LIMIT (bytes) when set, else the host's available memory. */
static size_t memory_available(void)
{
    const char *lim = getenv("MF_VERIFY_MEMORY_LIMIT");
    if (lim != NULL && lim[0] != '\0') return (size_t)strtoull(lim, NULL, 10);
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

/* --list-cases: the ids and the whole case each stands for. */
static int list_cases(FILE *out, FILE *err, const char *op, const case_opts *o)
{
    size_t n = 0;
    mf_verify_case_ids(op, o->seed, o->n_random, 1, NULL, 0, &n);
    mf_case_id *ids = calloc(n ? n : 1, sizeof *ids);
    if (ids == NULL || mf_verify_case_ids(op, o->seed, o->n_random, 1, ids, n, &n) != MF_OK) {
        fprintf(err, "memfix verify: %s\n", ids == NULL ? "out of memory" : mf_last_error());
        free(ids);
        return MF_CLI_UNAVAILABLE;
    }
    fprintf(out, "%s: seed %llu (random cases g<i> and the large case depend on it)\n", op,
            (unsigned long long)o->seed);
    for (size_t i = 0; i < n; i++) {
        char cid[32], desc[256];
        size_t bytes = 0;
        mf_case_id_format(&ids[i], cid, sizeof cid);
        if (mf_verify_describe(op, &ids[i], desc, sizeof desc, &bytes) != MF_OK)
            snprintf(desc, sizeof desc, "?");
        fprintf(out, "%-6s %s", cid, desc);
        if (ids[i].kind == MF_CASE_LARGE)
            fprintf(out, "  (needs ~%.1f GiB; only with --large)", (double)bytes / (1u << 30));
        fprintf(out, "\n");
    }
    free(ids);
    return MF_CLI_OK;
}

/* 1 if the large case of op fits in memory (80% of what is available); else says why not to 'note'. */
static int large_fits(FILE *note, const char *op, uint64_t seed)
{
    const mf_case_id lid = { MF_CASE_LARGE, 0, seed };
    char desc[256];
    size_t need = 0;
    const size_t avail = memory_available();
    if (!mf_verify_has_generator(op) || mf_verify_describe(op, &lid, desc, sizeof desc, &need) != MF_OK) {
        fprintf(note, "large case skipped: %s has no case generator\n", op);
        return 0;
    }
    if (need > avail / 10 * 8) {
        fprintf(note, "large case skipped: [%s] needs ~%.1f GiB of memory, %.1f GiB available%s\n", desc,
                (double)need / (1u << 30), (double)avail / (1u << 30),
                getenv("MF_VERIFY_MEMORY_LIMIT") ? " (MF_VERIFY_MEMORY_LIMIT)" : "");
        return 0;
    }
    return 1;
}

/* The cases to run; NULL (message printed, *code set) on an error. Prints a
 * skipped large case's reason to 'note'. */
static mf_case_id *select_cases(FILE *note, FILE *err, const char *op, const case_opts *o, size_t *n,
                                int *code)
{
    *code = MF_CLI_USAGE;
    if (o->case_id != NULL) {
        mf_case_id *id = calloc(1, sizeof *id);
        char desc[256];
        if (id == NULL) return NULL;
        if (!mf_case_id_parse(o->case_id, o->seed, id) ||
            mf_verify_describe(op, id, desc, sizeof desc, NULL) != MF_OK) {
            fprintf(err, "memfix verify: no case '%s' for %s (see memfix verify --op %s --list-cases)\n",
                    o->case_id, op, op);
            free(id);
            return NULL;
        }
        if (id->kind == MF_CASE_LARGE && !large_fits(err, op, o->seed)) {
            *code = MF_CLI_UNAVAILABLE;
            free(id);
            return NULL;
        }
        *n = 1;
        return id;
    }
    const int large = o->large && large_fits(note, op, o->seed);
    mf_verify_case_ids(op, o->seed, o->n_random, large, NULL, 0, n);
    mf_case_id *ids = calloc(*n ? *n : 1, sizeof *ids);
    if (ids == NULL || mf_verify_case_ids(op, o->seed, o->n_random, large, ids, *n, n) != MF_OK) {
        fprintf(err, "memfix verify: %s\n", ids == NULL ? "out of memory" : mf_last_error());
        free(ids);
        *code = MF_CLI_UNAVAILABLE;
        return NULL;
    }
    return ids;
}

/* --dump DIR: created if missing; the testbed writes there (MF_VERIFY_DUMP_DIR). */
static int dump_setup(FILE *err, const char *dir)
{
    if (dir == NULL) return 1;
    if (dir[0] == '\0') {
        fprintf(err, "memfix verify: --dump needs a directory\n");
        return 0;
    }
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1;; p++) { /* mkdir -p */
        const char c = *p;
        if (c != '/' && c != '\0') continue;
        *p = '\0';
        if (stat(path, &sb) != 0 && mkdir(path, 0777) != 0) {
            fprintf(err, "memfix verify: cannot create --dump directory '%s'\n", path);
            return 0;
        }
        *p = c;
        if (c == '\0') break;
    }
    if (setenv("MF_VERIFY_DUMP_DIR", dir, 1) != 0) return 0;
    return 1;
}

void mf_cli_verify_help(FILE *out)
{
    fprintf(out,
            "usage: memfix verify --op OP --lib PATH --symbol NAME [--backend auto|host|cuda]\n"
            "                     [--timeout SEC] [--keep-going] [--orders K] [--sanitize thread|address] "
            "[--json]\n"
            "                     [--seed S] [--cases N] [--list-cases] [--case ID] [--large] [--dump DIR]\n"
            "\n"
            "Loads NAME from the shared library PATH in a separate worker process (never in\n"
            "memfix itself): your kernel, a C function\n"
            "with the op's candidate signature (include/memfix/verify.h; for matmul\n"
            "mf_matmul_candidate_fn, mf_matmul's arguments minus the variant; an op with\n"
            "several entry points is named op.entry, e.g. attention.backward). Runs it on the\n"
            "op's built-in cases like `memfix report` (seeded inputs, the reference, the op's\n"
            "tolerance, scratch measured through the context's allocator against the fix's\n"
            "ceiling) and with defenses against a kernel that only looks right. A row is\n"
            "rejected by the first defense that fails:\n"
            "  error              the candidate returned an error, or the device reported one\n"
            "  guard-band         it wrote into the canary regions around a buffer\n"
            "  input-mutation     it changed an input\n"
            "  hidden-allocation  device memory grew beyond what went through mf_scratch_alloc\n"
            "  determinism        a second call on the same inputs gave different bits\n"
            "  nan-prefill        part of the output (pre-filled with NaN) was never written, or\n"
            "                     the kernel wrote NaN where the reference is finite (the\n"
            "                     reason counts both)\n"
            "  all-zero           the output is all zeros\n"
            "  equivalence        the output differs from the reference beyond the tolerance\n"
            "  scratch-ceiling    tracked device scratch exceeds the fix's ceiling formula\n"
            "  rerun              a second sweep (reverse order, different inputs) failed:\n"
            "                     stale buffers or cached results\n"
            "  schedule           right in forward thread order, wrong in reverse or a random\n"
            "                     order of the threads of a block (a race: a missing barrier)\n"
            "  exit               the candidate's process exited during the call\n"
            "  crash              it was killed by a signal (a segfault, an abort)\n"
            "  timeout            no answer within the time limit (an endless loop; --timeout\n"
            "                     below); the cases after it are not run (not-run) unless\n"
            "                     --keep-going\n"
            "  protocol           its process wrote garbage into verify's socket\n"
            "  sanitizer          --sanitize: the sanitizer reported an error\n"
            "  input-write        it wrote to an input, even if it restored it (host mode:\n"
            "                     every input's pages are read-only during the call)\n"
            "  scratch-guard      it wrote outside a scratch allocation\n"
            "  process-memory     the worker's resident memory, measured by memfix from /proc,\n"
            "                     grew beyond its copies of the buffers + the ceiling + 16 MiB\n"
            "\n"
            "options:\n"
            "  --op OP           the op the candidate implements (supported: %s)\n"
            "  --lib PATH        the shared library (a path; a bare file name in the current\n"
            "                    directory is found too)\n"
            "  --symbol NAME     the candidate's symbol (declare it extern \"C\" in C++/CUDA)\n"
            "  --backend B       auto (default: cuda when a device is present, else host),\n"
            "                    host (a library built with cudahost) or cuda (built with nvcc)\n"
            "  --timeout SEC     time limit of each case in each thread order; the worker's\n"
            "                    process group is killed past it, and the run ends. Default:\n"
            "                    %g x memfix's own time on the case (the round trip of the\n"
            "                    same request for memfix's optimized entry, measured first on\n"
            "                    the same worker), at least %g s (%g s where memfix's time is\n"
            "                    not measured): a slow but correct kernel has room (the\n"
            "                    slowest examples take ~30x), a hang costs about %g s\n"
            "  --keep-going      after a timeout, run the remaining cases anyway\n"
            "  --orders K        random thread orders per case besides forward (2 workers) and\n"
            "                    reverse (1 worker) (default 2; 0 to 16), alternating 1 and 2 workers\n"
            "  --sanitize S      run the candidate in a worker built with ThreadSanitizer\n"
            "                    (thread) or AddressSanitizer (address): the tsan/asan preset's\n"
            "                    memfix-verify-worker (MF_VERIFY_WORKER); build the candidate\n"
            "                    with the same -fsanitize flag\n"
            "  --json            print a JSON array: report's keys plus candidate, defense,\n"
            "                    reason, case (its id), seed, thread_order and the times; on\n"
            "                    an error an object with error and exit_status\n"
            "\n"
            "cases (docs/verify.md \"Cases\"):\n"
            "  --seed S          seed of the random cases (default: a fresh one from the time\n"
            "                    and the process id, printed; pass it again to reproduce)\n"
            "  --cases N         random cases in addition to the fixed ones (default %d;\n"
            "                    matmul 8, rope 16: every combination of their generators):\n"
            "                    odd shapes, outputs beyond 4096 elements, every option\n"
            "  --list-cases      print the case ids and the whole case each stands for, then\n"
            "                    exit (needs only --op)\n"
            "  --case ID         run one case: f<i> (fixed), g<i> (random, with --seed) or\n"
            "                    large\n"
            "  --large           add a case with more than 2^31 elements in the op's big\n"
            "                    dimension product when memory allows (else says why not)\n"
            "  --dump DIR        for a failing case write its inputs, expected and got\n"
            "                    arrays into DIR\n"
            "  -h, --help        this help\n"
            "\n"
            "The table has a line per compared output of each case: its tolerance (atol,\n"
            "rtol), its max abs error and the share of its budget its worst element used\n"
            "(the case's columns on its first line). The last column is the candidate's\n"
            "time over memfix's own kernel on the same case (a warning above 10x, never a\n"
            "rejection), or n/a with the reason.\n"
            "\n"
            "exit status: 0 every case passed, 1 the candidate was rejected, 2 usage error\n"
            "(unknown op, op without candidates, library or symbol not found), 3 the\n"
            "backend is unavailable. See docs/verify.md for building a candidate.\n",
            mf_verify_supported_ops()[0] ? mf_verify_supported_ops() : "none in this build",
            MF_VERIFY_TIMEOUT_MULTIPLE, MF_VERIFY_TIMEOUT_FLOOR_S, MF_VERIFY_TIMEOUT_FALLBACK_S,
            MF_VERIFY_TIMEOUT_FLOOR_S, MF_VERIFY_DEFAULT_CASES);
}

/* One line per compared output (its tolerance, its error and the share of its budget used); the case's own
 * columns (op, ..., verdict, defense, peaks, ceiling, time) on its first output's line only. A case rejected
 * before its outputs were compared has one line, "(none compared)". */
enum { VCOL = 15 };
static const char *const vcol_names[VCOL] = { "op",          "backend", "dtype",         "shape",
                                              "output",      "atol",    "rtol",          "max abs err",
                                              "budget used", "verdict", "defense",       "ref peak",
                                              "opt peak",    "ceiling", "time vs memfix" };

typedef struct vline {
    const mf_verify_row *v;
    int k; /* the output, or -1 for a case that compared none */
} vline;

/* The candidate's time over memfix's own entry's on the same case (NaN when not measured). */
static double time_ratio(const mf_verify_row *v)
{
    return v->cand_seconds > 0 && v->own_seconds > 0 ? v->cand_seconds / v->own_seconds : NAN;
}

static void vline_cells(const vline *l, char (*cells)[MF_CLI_CELL])
{
    const mf_verify_row *v = l->v;
    const mf_case_result *r = &v->result;
    for (int c = 0; c < VCOL; c++) cells[c][0] = '\0';
    if (l->k <= 0) {
        snprintf(cells[0], MF_CLI_CELL, "%s", r->op);
        snprintf(cells[1], MF_CLI_CELL, "%s", r->backend);
        snprintf(cells[2], MF_CLI_CELL, "%s", r->dtype);
        snprintf(cells[3], MF_CLI_CELL, "%.159s", r->shape);
        snprintf(cells[9], MF_CLI_CELL, "%s", r->pass ? "PASS" : "FAIL");
        snprintf(cells[10], MF_CLI_CELL, "%s", v->defense[0] ? v->defense : "-");
        const int ran = strcmp(v->defense, "not-run") != 0;
        snprintf(cells[11], MF_CLI_CELL, ran ? "%zu" : "-", r->ref_peak_bytes);
        snprintf(cells[12], MF_CLI_CELL, ran ? "%zu" : "-", r->opt_peak_bytes);
        if (!ran)
            snprintf(cells[13], MF_CLI_CELL, "-");
        else
            mf_cli_ceiling_cell(cells[13], MF_CLI_CELL, r->ceiling_bytes);
        const double q = time_ratio(v);
        if (isnan(q))
            snprintf(cells[14], MF_CLI_CELL, "n/a (%.120s)", v->time_note[0] ? v->time_note : "not measured");
        else
            snprintf(cells[14], MF_CLI_CELL, "%.2fx%s", q, q > 10.0 ? " (!)" : "");
    }
    if (l->k < 0) {
        snprintf(cells[4], MF_CLI_CELL, "(none compared)");
        for (int c = 5; c <= 8; c++) snprintf(cells[c], MF_CLI_CELL, "-");
        return;
    }
    const mf_output_result *o = &r->outputs[l->k];
    snprintf(cells[4], MF_CLI_CELL, "%s%s", o->what, o->pass ? "" : " FAIL");
    mf_cli_num_cell(cells[5], MF_CLI_CELL, o->atol);
    mf_cli_num_cell(cells[6], MF_CLI_CELL, o->rtol);
    mf_cli_num_cell(cells[7], MF_CLI_CELL, o->max_abs_err);
    mf_cli_budget_cell(cells[8], MF_CLI_CELL, o->budget_used);
}

/* "C FAIL (312% of its budget), lse pass (4%)" */
static void outputs_line(char *buf, size_t cap, const mf_case_result *r)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < r->n_outputs && len < cap; k++) {
        const mf_output_result *q = &r->outputs[k];
        char share[48];
        if (isfinite(q->budget_used))
            snprintf(share, sizeof share, "%.0f%% of its budget", 100.0 * q->budget_used);
        else
            snprintf(share, sizeof share, "%s",
                     strcmp(q->tol, "exact") == 0 ? "differs" : "NaN/Inf pattern differs");
        const int w = snprintf(buf + len, cap - len, "%s%s %s (%s, %s%s%s)", k ? ", " : "", q->what,
                               q->pass ? "pass" : "FAIL", share, q->tol, q->pass ? "" : ", worst at ",
                               q->pass ? "" : q->worst_at);
        if (w < 0) break;
        len += (size_t)w;
    }
}

static void verify_cells(const void *lines, size_t i, char (*cells)[MF_CLI_CELL])
{
    vline_cells(&((const vline *)lines)[i], cells);
}

static void verify_table(FILE *out, const char *symbol, const mf_verify_row *rows, size_t n,
                         const mf_case_id *ids, uint64_t seed)
{
    static const int right[VCOL] = { 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1 };
    fprintf(out, "candidate %s\n", symbol);
    fprintf(out, "seed %llu (reproduce with --seed %llu; one case with --case ID)\n",
            (unsigned long long)seed, (unsigned long long)seed);
    size_t n_lines = 0;
    for (size_t i = 0; i < n; i++)
        n_lines += rows[i].result.n_outputs > 0 ? (size_t)rows[i].result.n_outputs : 1;
    vline *lines = malloc((n_lines ? n_lines : 1) * sizeof *lines);
    if (lines == NULL) {
        fprintf(out, "memfix verify: out of memory printing the table\n");
        return;
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].result.n_outputs == 0) lines[at++] = (vline){ &rows[i], -1 };
        for (int k = 0; k < rows[i].result.n_outputs; k++) lines[at++] = (vline){ &rows[i], k };
    }
    mf_cli_print_table(out, VCOL, vcol_names, right, n_lines, verify_cells, lines);
    free(lines);
    fprintf(out,
            "budget used: max over the output's elements of |got-ref| / (atol + rtol*|ref|); above 100%% "
            "fails\n");
    size_t failed = 0, skipped = 0;
    for (size_t i = 0; i < n; i++) {
        const int nr = strcmp(rows[i].defense, "not-run") == 0;
        skipped += nr;
        failed += !rows[i].result.pass && !nr;
    }
    if (skipped)
        fprintf(
            out,
            "\n%zu cases, %zu passed, %zu rejected, %zu not run (a timeout ends the run; --keep-going): %s\n",
            n, n - failed - skipped, failed, skipped, "candidate REJECTED");
    else
        fprintf(out, "\n%zu cases, %zu passed, %zu rejected: %s\n", n, n - failed, failed,
                failed ? "candidate REJECTED" : "candidate ACCEPTED");
    for (size_t i = 0; i < n; i++) {
        if (rows[i].result.pass || strcmp(rows[i].defense, "not-run") == 0) continue;
        char cid[32];
        mf_case_id_format(&ids[i], cid, sizeof cid);
        fprintf(out, "REJECTED [%s: %s %s] by %s: %s\n", cid, rows[i].result.dtype, rows[i].result.shape,
                rows[i].defense[0] ? rows[i].defense : "?",
                rows[i].result.message[0] ? rows[i].result.message : "(no message)");
        char line[1024];
        outputs_line(line, sizeof line, &rows[i].result);
        if (line[0] != '\0') fprintf(out, "  outputs: %s\n", line);
        if (rows[i].schedule[0] != '\0') fprintf(out, "  thread order: %s\n", rows[i].schedule);
    }
    for (size_t i = 0; i < n; i++) {
        const double q = time_ratio(&rows[i]);
        if (q > 10.0)
            fprintf(out,
                    "WARNING [%s %s]: the candidate took %.1fx the time of memfix's own kernel (%.3g ms vs "
                    "%.3g ms; "
                    "a warning, not a rejection)\n",
                    rows[i].result.dtype, rows[i].result.shape, q, 1e3 * rows[i].cand_seconds,
                    1e3 * rows[i].own_seconds);
    }
}

static int verify_json(FILE *out, FILE *err, const char *symbol, const mf_verify_row *rows, size_t n,
                       const mf_case_id *ids, uint64_t seed)
{
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
    cJSON *arr = cJSON_CreateArray();
    if (arr == NULL) goto oom;
    for (size_t i = 0; i < n; i++) {
        const mf_case_result *r = &rows[i].result;
        cJSON *o = cJSON_CreateObject();
        if (o == NULL) break;
        cJSON_AddItemToArray(arr, o);
        mf_cli_case_json(o, r, symbol);
        if (rows[i].defense[0])
            cJSON_AddStringToObject(o, "defense", rows[i].defense);
        else
            cJSON_AddNullToObject(o, "defense");
        cJSON_AddStringToObject(o, "reason", r->message);
        char cid[32];
        mf_case_id_format(&ids[i], cid, sizeof cid);
        cJSON_AddStringToObject(o, "case", cid);
        cJSON_AddStringToObject(o, "seed", seed_text); /* a string: 64-bit exact */
        if (rows[i].schedule[0])
            cJSON_AddStringToObject(o, "thread_order", rows[i].schedule);
        else
            cJSON_AddNullToObject(o, "thread_order");
        const double secs[3] = { rows[i].cand_seconds, rows[i].own_seconds, time_ratio(&rows[i]) };
        static const char *const keys[3] = { "candidate_seconds", "memfix_seconds", "time_vs_memfix" };
        for (int k = 0; k < 3; k++) {
            if (isfinite(secs[k]))
                cJSON_AddNumberToObject(o, keys[k], secs[k]);
            else
                cJSON_AddNullToObject(o, keys[k]);
        }
        /* why time_vs_memfix is null (the table's "n/a (...)"); null when it is a number */
        if (isfinite(secs[2]))
            cJSON_AddNullToObject(o, "time_note");
        else
            cJSON_AddStringToObject(o, "time_note",
                                    rows[i].time_note[0] ? rows[i].time_note : "not measured");
    }
    char *text = cJSON_Print(arr);
    cJSON_Delete(arr);
    if (text == NULL) goto oom;
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return 1;
oom:
    cJSON_Delete(arr);
    fprintf(err, "memfix verify: out of memory building JSON\n");
    return 0;
}

/* A usage error or an unavailable backend after the options were parsed: the
 * message on err and, with --json, a JSON object on out (--json always prints). */
static int verify_fail(FILE *out, FILE *err, int json, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static int verify_fail(FILE *out, FILE *err, int json, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(err, "memfix verify: %s\n", msg);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        char *text = NULL;
        if (o != NULL && cJSON_AddStringToObject(o, "error", msg) != NULL &&
            cJSON_AddNumberToObject(o, "exit_status", code) != NULL)
            text = cJSON_Print(o);
        if (text != NULL)
            fprintf(out, "%s\n", text);
        else
            fprintf(out, "{\"error\": \"out of memory\", \"exit_status\": %d}\n", code);
        cJSON_free(text);
        cJSON_Delete(o);
    }
    return code;
}

int mf_cli_verify(int argc, char **argv, FILE *out, FILE *err)
{
    const char *op_name = NULL, *lib = NULL, *symbol = NULL, *backend_name = "auto";
    const char *timeout_text = NULL, *orders_text = NULL, *sanitize = NULL;
    int json = 0, keep_going = 0;
    case_opts copts = { 0, 0, -1, 0, NULL, 0, NULL }; /* n_random -1: the target's default */
    for (int i = 1; i < argc; i++)                    /* --json first: every later error prints JSON too */
        if (strcmp(argv[i], "--json") == 0) json = 1;
    enum {
        OPT_H,
        OPT_HELP,
        OPT_JSON,
        OPT_OP,
        OPT_LIB,
        OPT_SYMBOL,
        OPT_BACKEND,
        OPT_TIMEOUT,
        OPT_ORDERS,
        OPT_SANITIZE,
        OPT_KEEP_GOING,
        N_OPTS
    };
    static const mf_cli_opt opts[N_OPTS] = { { "-h", 0 },         { "--help", 0 },      { "--json", 0 },
                                             { "--op", 1 },       { "--lib", 1 },       { "--symbol", 1 },
                                             { "--backend", 1 },  { "--timeout", 1 },   { "--orders", 1 },
                                             { "--sanitize", 1 }, { "--keep-going", 0 } };
    const char **value_of[N_OPTS] = { NULL,          NULL,          NULL,         &op_name,  &lib, &symbol,
                                      &backend_name, &timeout_text, &orders_text, &sanitize, NULL };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int k, cr;
        if ((cr = case_option(argc, argv, &i, &copts, err)) != 0) {
            if (cr < 0)
                return verify_fail(out, err, json, MF_CLI_USAGE, "bad case option '%s' (see above)", a);
            continue;
        }
        k = mf_cli_option(argc, argv, &i, opts, N_OPTS, &v);
        if (k == OPT_H || k == OPT_HELP) {
            mf_cli_verify_help(out);
            return MF_CLI_OK;
        } else if (k == OPT_JSON) {
            json = 1;
        } else if (k == OPT_KEEP_GOING) {
            keep_going = 1;
        } else if (k < 0) {
            return verify_fail(out, err, json, MF_CLI_USAGE,
                               "unknown argument '%s' (see memfix verify --help)", a);
        } else if (v == NULL) {
            return verify_fail(out, err, json, MF_CLI_USAGE, "%s needs a value", a);
        } else {
            *value_of[k] = v;
        }
    }
    if (!copts.seed_given) copts.seed = fresh_seed();
    if (copts.n_random < 0) { /* the target's: every combination its generator cycles through */
        const int d = op_name != NULL ? mf_verify_default_cases(op_name) : -1;
        copts.n_random = d > 0 ? d : MF_VERIFY_DEFAULT_CASES;
    }
    if (op_name == NULL || ((lib == NULL || symbol == NULL) && !copts.list))
        return verify_fail(out, err, json, MF_CLI_USAGE,
                           "--op, --lib and --symbol are required (see memfix verify --help)");
    mf_verify_options vo;
    mf_verify_options_init(&vo);
    vo.lib = lib;
    vo.symbol = symbol;
    vo.keep_going = keep_going;
    /* the random thread orders follow the seed too: another run, other orders (a race that a fixed set of
     * orders happens to hide is found by some run); --seed S repeats them */
    vo.order_seed = (copts.seed % 1000000000000ull) * 16u + 1u;
#ifdef MF_VERIFY_WORKER_DEFAULT
    vo.worker = MF_VERIFY_WORKER_DEFAULT;
#endif
    if (timeout_text != NULL) {
        char *end = NULL;
        vo.timeout_s = strtod(timeout_text, &end);
        if (end == timeout_text || *end != '\0' || !(vo.timeout_s > 0) || vo.timeout_s > 1e6)
            return verify_fail(out, err, json, MF_CLI_USAGE, "--timeout '%s': expected seconds > 0",
                               timeout_text);
    }
    if (orders_text != NULL) {
        char *end = NULL;
        const long k = strtol(orders_text, &end, 10);
        if (end == orders_text || *end != '\0' || k < 0 || k > 16)
            return verify_fail(out, err, json, MF_CLI_USAGE,
                               "--orders '%s': expected 0 to 16 random thread orders", orders_text);
        vo.orders = (int)k;
    }
    if (sanitize != NULL) {
        if (strcmp(sanitize, "thread") != 0 && strcmp(sanitize, "address") != 0)
            return verify_fail(out, err, json, MF_CLI_USAGE, "--sanitize '%s': expected thread or address",
                               sanitize);
        vo.sanitize = sanitize;
    }
    mf_backend backend;
    if (!mf_cli_backend(NULL, "verify", backend_name, &backend))
        return verify_fail(out, err, json, MF_CLI_USAGE, "unknown backend '%s' (expected auto, host or cuda)",
                           backend_name);
    if (!mf_verify_supported(op_name) && mf_registry_find(op_name) == NULL)
        return verify_fail(out, err, json, MF_CLI_USAGE, "unknown op '%s' (supported: %s)", op_name,
                           mf_verify_supported_ops()[0] ? mf_verify_supported_ops() : "none in this build");
    if (!mf_verify_supported(op_name)) {
        /* an op verified one entry point at a time: name its targets */
        char entries[256] = "";
        const char *list = mf_verify_supported_ops();
        const size_t len = strlen(op_name);
        for (const char *p = list; p != NULL && *p != '\0';) {
            const char *end = strchr(p, ',');
            const size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
            if (n > len && strncmp(p, op_name, len) == 0 && p[len] == '.' &&
                strlen(entries) + n + 5 < sizeof entries) {
                if (entries[0] != '\0') strcat(entries, " or ");
                strncat(entries, p, n);
            }
            p = end != NULL ? end + 2 : NULL;
        }
        if (entries[0] != '\0')
            return verify_fail(out, err, json, MF_CLI_USAGE,
                               "op '%s' is verified one entry point at a time: use --op %s", op_name,
                               entries);
        return verify_fail(out, err, json, MF_CLI_USAGE, "op '%s' takes no candidates yet (supported: %s)",
                           op_name, list[0] ? list : "none in this build");
    }
    if (copts.list) return list_cases(out, err, op_name, &copts);
    if (backend == MF_BACKEND_CUDA && !mf_backend_available(MF_BACKEND_CUDA))
        return verify_fail(
            out, err, json, MF_CLI_UNAVAILABLE,
            "backend cuda is not available (no CUDA backend or no device; use --backend host)");
    struct stat sb;
    if (stat(lib, &sb) != 0)
        return verify_fail(out, err, json, MF_CLI_USAGE, "cannot load '%s': %s", lib, strerror(errno));

    /* The library is loaded only by the worker processes (mf_verify_lib), never here. */
    mf_context *ctx = NULL;
    mf_status s = mf_context_create(&ctx, backend);
    if (s != MF_OK)
        return verify_fail(out, err, json, MF_CLI_UNAVAILABLE, "cannot create a %s context: %s: %s",
                           backend_name, mf_status_name(s), mf_last_error());
    size_t cap = 0;
    int code = MF_CLI_USAGE;
    mf_case_id *ids = select_cases(json ? err : out, err, op_name, &copts, &cap, &code);
    if (ids == NULL || !dump_setup(err, copts.dump_dir)) {
        free(ids);
        mf_context_destroy(ctx);
        return verify_fail(out, err, json, ids == NULL ? code : MF_CLI_USAGE, "%s",
                           ids == NULL ? "no cases to run (see above)" : "--dump: no directory");
    }
    vo.ids = ids;
    vo.n_ids = cap;
    mf_verify_row *rows = calloc(cap ? cap : 1, sizeof *rows);
    size_t n = 0;
    if (rows == NULL)
        s = MF_ERR_OUT_OF_MEMORY;
    else
        s = mf_verify_lib(ctx, op_name, &vo, rows, cap, &n);
    mf_context_destroy(ctx);
    if (s != MF_OK) {
        free(rows);
        free(ids);
        if (s == MF_ERR_INVALID_ARGUMENT)
            return verify_fail(out, err, json, MF_CLI_USAGE, "%s", mf_last_error());
        return verify_fail(out, err, json, MF_CLI_UNAVAILABLE, "%s: %s", mf_status_name(s), mf_last_error());
    }
    int failed = n == 0;
    for (size_t i = 0; i < n; i++) failed |= !rows[i].result.pass;
    int ok = 1;
    if (json)
        ok = verify_json(out, err, symbol, rows, n, ids, copts.seed);
    else
        verify_table(out, symbol, rows, n, ids, copts.seed);
    if (copts.dump_dir != NULL && failed)
        fprintf(json ? err : out, "failing cases dumped to %s\n", copts.dump_dir);
    free(rows);
    free(ids);
    if (!ok) return failed ? MF_CLI_FAILED : MF_CLI_UNAVAILABLE;
    return failed ? MF_CLI_FAILED : MF_CLI_OK;
}
