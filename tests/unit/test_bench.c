/* memfix bench: a tiny sweep produces a well-formed CSV (the documented header,
 * a row per op x variant x size, ok rows, the host-wall timer label), a failing
 * op's rows are marked failed with exit status 1, and usage errors exit 2/3. */
#define _POSIX_C_SOURCE 200809L
#include "mf_test.h"
#include "mf_internal.h"
#include "memfix/registry.h"
#include "memfix_cli.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const HEADER =
    "op,variant,backend,timer,timed,dtype,shape,size,reps,ref_ms,opt_ms,ref_peak_bytes,opt_peak_bytes,"
    "ceiling_bytes,max_abs_err,status,message,flops,min_bytes,tflops,gbps,peak_tflops,peak_gbps,frac_peak_"
    "flops,"
    "frac_peak_bw";
enum { N_COLS = 25 };

typedef struct {
    int rc;
    char *out, *err;
} run_result;

static run_result run(int argc, const char **argv)
{
    run_result r = { 0, NULL, NULL };
    size_t on = 0, en = 0;
    FILE *out = open_memstream(&r.out, &on), *err = open_memstream(&r.err, &en);
    r.rc = mf_cli_main(argc, (char **)argv, out, err);
    fclose(out);
    fclose(err);
    return r;
}
#define RUN(...)                                                                                             \
    run((int)(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *)),                               \
        (const char *[]){ __VA_ARGS__ })
#define FREE(r) (free((r).out), free((r).err))

/* Splits one CSV line into fields (double-quoted fields may hold commas and
 * doubled quotes). Returns the field count; fields are copied into f[i]. */
static int split_csv(const char *line, char f[][256], int cap)
{
    int n = 0;
    const char *p = line;
    for (;;) {
        ck_assert_int_lt(n, cap);
        size_t k = 0;
        if (*p == '"') {
            p++;
            for (; *p && !(*p == '"' && p[1] != '"'); p++) {
                if (*p == '"') p++;
                if (k < 255) f[n][k++] = *p;
            }
            ck_assert_msg(*p == '"', "unterminated quote in %s", line);
            p++;
        } else {
            for (; *p && *p != ','; p++)
                if (k < 255) f[n][k++] = *p;
        }
        f[n++][k] = '\0';
        if (*p != ',') break;
        p++;
    }
    return n;
}

/* Reads the CSV at path, checks the header and every row's shape; returns the
 * number of rows and counts rows per status. */
static int check_csv(const char *text, int *n_ok, int *n_failed, const char *want_op)
{
    char *copy = strdup(text), *save = NULL;
    char *line = strtok_r(copy, "\n", &save);
    ck_assert_ptr_nonnull(line);
    ck_assert_str_eq(line, HEADER);
    int rows = 0;
    *n_ok = *n_failed = 0;
    static char f[N_COLS + 2][256];
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        int n = split_csv(line, f, N_COLS + 2);
        ck_assert_msg(n == N_COLS, "row %d has %d fields: %s", rows, n, line);
        if (want_op) ck_assert_str_eq(f[0], want_op);
        ck_assert_str_eq(f[2], "host");
        ck_assert_str_eq(f[3], "host-wall");
        ck_assert(strcmp(f[4], "separate") == 0 || strcmp(f[4], "run_case") == 0);
        ck_assert(atof(f[10]) >= 0.0 && f[10][0] != '\0'); /* opt_ms always measured */
        if (strcmp(f[4], "separate") == 0)
            ck_assert(f[9][0] != '\0');
        else
            ck_assert(f[9][0] == '\0'); /* run_case rows: no separate reference time */
        /* the work of a call: stated for every swept row; host mode has no rates or peaks */
        if (strcmp(f[4], "separate") == 0 && strcmp(f[15], "ok") == 0)
            ck_assert_msg(atof(f[17]) > 0 && atof(f[18]) > 0, "no flops/min_bytes: %s", line);
        for (int k = 19; k < N_COLS; k++) ck_assert_msg(f[k][0] == '\0', "host row with a rate: %s", line);
        if (strcmp(f[15], "ok") == 0) {
            (*n_ok)++;
            ck_assert_str_eq(f[16], "");
            /* ok rows: optimized scratch within the ceiling, reference above it */
            ck_assert_uint_le(strtoull(f[12], NULL, 10), strtoull(f[13], NULL, 10));
        } else {
            ck_assert_str_eq(f[15], "failed");
            ck_assert_msg(f[16][0] != '\0', "a failed row without a message: %s", line);
            (*n_failed)++;
        }
        rows++;
    }
    free(copy);
    return rows;
}

START_TEST(test_matmul_sweep_to_file)
{
    char path[] = "/tmp/mf_bench_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    run_result r = RUN("memfix", "bench", "--op", "matmul", "--backend", "host", "--sizes", "8,20", "--reps",
                       "2", "--csv", "--out", path);
    ck_assert_msg(r.rc == MF_CLI_OK, "rc %d: %s", r.rc, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "6 rows (0 failed, timer host-wall, device host)"));
    FREE(r);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    unlink(path);
    int ok, failed;
    ck_assert_int_eq(check_csv(text, &ok, &failed, "matmul"), 6); /* 3 variants x 2 sizes */
    ck_assert_int_eq(ok, 6);
    ck_assert_ptr_nonnull(strstr(text, "matmul,tiled,host,host-wall,separate,f32,\"M=20 N=20 K=20\",20,2,"));
    /* the reference's scratch is 8(MK + KN + MN) = 9600 bytes at n = 20 */
    ck_assert_ptr_nonnull(strstr(text, ",9600,0,0,"));
}
END_TEST

/* Every registered op at one tiny size (sweeps and run_case rows): all ok. */
START_TEST(test_all_ops_tiny)
{
    run_result r = RUN("memfix", "bench", "--backend", "host", "--sizes", "16", "--reps", "1", "--csv");
    ck_assert_msg(r.rc == MF_CLI_OK, "rc %d: %s", r.rc, r.err);
    int ok, failed;
    int rows = check_csv(r.out, &ok, &failed, NULL);
    ck_assert_int_eq(failed, 0);
    size_t n_ops = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    int expect = 0;
    for (size_t i = 0; i < n_ops; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "\n%s,", ops[i]->name);
        ck_assert_msg(strstr(r.out, needle) != NULL, "no rows for %s", ops[i]->name);
        /* every registered op has a sweep now: one row per variant at the one size */
        expect += ops[i]->n_variants;
    }
    ck_assert_int_eq(rows, expect);
    ck_assert_ptr_null(strstr(r.out, ",run_case,")); /* no op falls back to run_case */
    FREE(r);
}
END_TEST

/* rope is swept like the others: reference and variants timed
 * separately (ref_ms present), exact scratch peaks, outputs re-validated. */
START_TEST(test_rope_sweep)
{
    run_result r = RUN("memfix", "bench", "--op", "rope", "--backend", "host", "--sizes", "16,40", "--reps",
                       "2", "--csv");
    ck_assert_msg(r.rc == MF_CLI_OK, "rc %d: %s", r.rc, r.err);
    int ok, failed;
    ck_assert_int_eq(check_csv(r.out, &ok, &failed, "rope"), 4); /* fused, cache x 2 sizes */
    ck_assert_int_eq(ok, 4);
    ck_assert_ptr_null(strstr(r.out, "run_case"));
    static char f[N_COLS + 2][256];
    char *copy = strdup(r.out), *save = NULL;
    int rows = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "rope,", 5) != 0) continue;
        ck_assert_int_eq(split_csv(line, f, N_COLS + 2), N_COLS);
        ck_assert_str_eq(f[4], "separate");
        ck_assert_str_eq(f[5], "f32");
        ck_assert_msg(f[9][0] != '\0' && atof(f[9]) >= 0.0, "no ref_ms: %s", line);
        const long long n = atoll(f[7]), cap0 = n / 4;
        ck_assert(n == 16 || n == 40);
        /* reference: 8 * (L + rd/2 + 2 * L * rd), L = n, rd = 32 */
        ck_assert_uint_eq(strtoull(f[11], NULL, 10), (unsigned long long)(8 * (n + 16 + 2 * n * 32)));
        /* fused: no scratch; cache: the table regrown from n/4 to max(n, 2 n/4) = n positions;
         * the ceilings add the 8-byte explicit-id check word (offset positions: unused) */
        const unsigned long long want = strcmp(f[1], "cache") == 0 ? (unsigned long long)(4 * n * 32) : 0;
        ck_assert(cap0 < n);
        ck_assert_uint_eq(strtoull(f[12], NULL, 10), want);
        ck_assert_uint_eq(strtoull(f[13], NULL, 10), want + 8);
        ck_assert(f[14][0] != '\0' && atof(f[14]) <= 1e-5); /* re-validated against the reference */
        rows++;
    }
    free(copy);
    ck_assert_int_eq(rows, 4);
    ck_assert_ptr_nonnull(strstr(r.out, "rope,cache,host,host-wall,separate,f32,\"B=1 T=40 Hq=4 Hk=2 "
                                        "Dh=rd=32 half fwd pos<40 cache0=n/4\",40,2,"));
    FREE(r);
}
END_TEST

/* --json: the CSV's columns as keys; numbers where measured, null where not;
 * matmul's formulas: 2 n^3 flops, 3 n^2 fp32 values moved. */
START_TEST(test_json)
{
    run_result r = RUN("memfix", "bench", "--op", "matmul", "--backend", "host", "--sizes", "8", "--reps",
                       "1", "--json");
    ck_assert_msg(r.rc == MF_CLI_OK, "rc %d: %s", r.rc, r.err);
    cJSON *arr = cJSON_Parse(r.out);
    ck_assert_msg(cJSON_IsArray(arr), "not a JSON array: %.200s", r.out);
    ck_assert_int_eq(cJSON_GetArraySize(arr), 3); /* 3 variants x 1 size */
    const char *keys[] = { "op",
                           "variant",
                           "backend",
                           "timer",
                           "timed",
                           "dtype",
                           "shape",
                           "size",
                           "reps",
                           "ref_ms",
                           "opt_ms",
                           "ref_peak_bytes",
                           "opt_peak_bytes",
                           "ceiling_bytes",
                           "max_abs_err",
                           "status",
                           "message",
                           "flops",
                           "min_bytes",
                           "tflops",
                           "gbps",
                           "peak_tflops",
                           "peak_gbps",
                           "frac_peak_flops",
                           "frac_peak_bw" };
    for (int i = 0; i < 3; i++) {
        cJSON *o = cJSON_GetArrayItem(arr, i);
        int count = 0;
        for (cJSON *c = o->child; c != NULL; c = c->next) count++;
        ck_assert_int_eq(count, (int)(sizeof keys / sizeof keys[0]));
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            ck_assert_msg(cJSON_GetObjectItemCaseSensitive(o, keys[k]) != NULL, "no key %s", keys[k]);
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "op")->valuestring, "matmul");
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "status")->valuestring, "ok");
        ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "size")->valuedouble, 8);
        ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "flops")->valuedouble, 2.0 * 8 * 8 * 8);
        ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "min_bytes")->valuedouble, 4.0 * 3 * 8 * 8);
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "opt_ms")));
        ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "tflops"))); /* host mode: no rates */
        ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "frac_peak_flops")));
    }
    cJSON_Delete(arr);
    FREE(r);
}
END_TEST

/* The variant timed is the variant named. The chunked rows chunk at every size: their scratch stays
 * flat (the budget's 32 rows of logits) while the reference's N*V*8 grows with N. The fused rows
 * time and measure the fused kernel: no logits tile, 8N + 16 bytes, the fused ceiling. */
START_TEST(test_cross_entropy_sweep_variants)
{
    if (mf_registry_find("cross_entropy") == NULL) return;
    run_result r = RUN("memfix", "bench", "--op", "cross_entropy", "--backend", "host", "--sizes", "64,256",
                       "--reps", "1", "--json");
    ck_assert_msg(r.rc == MF_CLI_OK, "rc %d: %s", r.rc, r.err);
    cJSON *arr = cJSON_Parse(r.out);
    ck_assert(cJSON_IsArray(arr));
    ck_assert_int_eq(cJSON_GetArraySize(arr), 4); /* chunked, fused x 2 sizes */
    const size_t V = 512;
    int n_fused = 0, n_chunked = 0;
    size_t chunked_at_64 = 0, fused_at_64 = 0;
    for (int i = 0; i < cJSON_GetArraySize(arr); i++) {
        cJSON *o = cJSON_GetArrayItem(arr, i);
        const char *variant = cJSON_GetObjectItemCaseSensitive(o, "variant")->valuestring;
        const char *shape = cJSON_GetObjectItemCaseSensitive(o, "shape")->valuestring;
        const size_t n = (size_t)cJSON_GetObjectItemCaseSensitive(o, "size")->valuedouble;
        const size_t ref = (size_t)cJSON_GetObjectItemCaseSensitive(o, "ref_peak_bytes")->valuedouble;
        const size_t opt = (size_t)cJSON_GetObjectItemCaseSensitive(o, "opt_peak_bytes")->valuedouble;
        const size_t ceiling = (size_t)cJSON_GetObjectItemCaseSensitive(o, "ceiling_bytes")->valuedouble;
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "status")->valuestring, "ok");
        ck_assert_uint_eq(ref, n * V * 8);
        if (strcmp(variant, "fused") == 0) {
            n_fused++;
            ck_assert_msg(opt <= 8 * n + 16, "fused n=%zu: scratch %zu > 8N + 16", n, opt);
            ck_assert_uint_gt(opt, 0); /* the fused kernel's per-row statistics, measured */
            ck_assert_uint_eq(ceiling, 8 * n + 16);
            ck_assert_ptr_nonnull(strstr(shape, "fused"));
            if (n == 64) fused_at_64 = opt;
        } else {
            ck_assert_str_eq(variant, "chunked");
            n_chunked++;
            /* at most 32 rows of fp32 logits plus the per-row 4*N + 16: below every reference size */
            ck_assert_msg(opt <= 32 * V * 4 + 4 * n + 16, "chunked n=%zu: scratch %zu", n, opt);
            ck_assert_uint_gt(opt, 32 * V * 4 - 1); /* a tile of 32 logits rows */
            ck_assert_uint_eq(ceiling, 32 * V * 4 + 4 * n + 16);
            ck_assert_ptr_nonnull(strstr(shape, "C=32 rows"));
            if (n == 64) chunked_at_64 = opt;
        }
    }
    ck_assert_int_eq(n_fused, 2);
    ck_assert_int_eq(n_chunked, 2);
    ck_assert_uint_lt(fused_at_64, chunked_at_64 / 100); /* 528 B vs 65,808 B: not the same kernel */
    cJSON_Delete(arr);
    FREE(r);
}
END_TEST

/* --plot DIR: DIR/bench.csv and the charts of ci/plot.sh (with gnuplot); with
 * no gnuplot on PATH, exit 3 and a message that names it; a missing script too. */
START_TEST(test_plot)
{
    char dir[] = "/tmp/mf_plot_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char charts[64], png[128], csv[128];
    snprintf(charts, sizeof charts, "%s/charts", dir);
    snprintf(png, sizeof png, "%s/matmul_memory.png", charts);
    snprintf(csv, sizeof csv, "%s/bench.csv", charts);
    struct stat st;
    const int have_gnuplot = system("command -v gnuplot >/dev/null 2>&1") == 0;
    if (have_gnuplot) {
        run_result r = RUN("memfix", "bench", "--op", "matmul", "--backend", "host", "--sizes", "8,16",
                           "--reps", "1", "--plot", charts);
        ck_assert_msg(r.rc == MF_CLI_OK, "rc %d: %s", r.rc, r.err);
        ck_assert_ptr_nonnull(
            strstr(r.err, "charts and bench.csv written to")); /* CSV on stdout: note on stderr */
        ck_assert_int_eq(stat(png, &st), 0);
        ck_assert_int_gt((int)st.st_size, 0);
        ck_assert_int_eq(stat(csv, &st), 0);
        FREE(r);
    }
    /* gnuplot missing: a PATH that holds bash alone */
    char bin[96], link[128], cmd[512];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    ck_assert_int_eq(mkdir(bin, 0777), 0);
    snprintf(link, sizeof link, "%s/bash", bin);
    ck_assert_int_eq(symlink("/bin/bash", link), 0);
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "");
    setenv("PATH", bin, 1);
    run_result r = RUN("memfix", "bench", "--op", "matmul", "--backend", "host", "--sizes", "8", "--reps",
                       "1", "--plot", charts);
    setenv("PATH", saved, 1);
    free(saved);
    ck_assert_msg(r.rc == MF_CLI_UNAVAILABLE, "rc %d: %s", r.rc, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "gnuplot is missing"));
    FREE(r);
    /* no plot script */
    setenv("MF_PLOT_SCRIPT", "/nonexistent/plot.sh", 1);
    r = RUN("memfix", "bench", "--op", "matmul", "--backend", "host", "--sizes", "8", "--reps", "1", "--plot",
            charts);
    unsetenv("MF_PLOT_SCRIPT");
    ck_assert_int_eq(r.rc, MF_CLI_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(r.err, "plot script"));
    FREE(r);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- a failing op (registry override): rows marked failed, exit status 1 ------------ */
static const char *const fake_variants[] = { "good", "bad" };
static mf_status fake_run(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    (void)ctx;
    memset(out, 0, sizeof *out);
    snprintf(out->dtype, sizeof out->dtype, "f32");
    snprintf(out->shape, sizeof out->shape, "n=%d", case_index);
    out->ref_peak_bytes = 4096;
    out->ceiling_bytes = 256;
    out->pass = !(variant == 1 && case_index == 1);
    if (!out->pass) snprintf(out->message, sizeof out->message, "1 of 11 entries outside atol+rtol*|ref|");
    return MF_OK;
}
static mf_status broken_run(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    (void)ctx, (void)variant, (void)case_index;
    memset(out, 0, sizeof *out);
    MF_FAIL(MF_ERR_INTERNAL, "deliberately broken op");
}
static const mf_op_desc fake_op = { "fake", "test-only", 2,    fake_variants, 2, fake_run, 0, NULL,
                                    NULL,   0,           NULL, NULL,          0, NULL,     0, NULL };
static const mf_op_desc broken_op = { "broken", "test-only", 1,    fake_variants, 1, broken_run, 0, NULL,
                                      NULL,     0,           NULL, NULL,          0, NULL,       0, NULL };
static const mf_op_desc *const test_ops[] = { &fake_op, &broken_op };

START_TEST(test_failed_rows)
{
    mf_registry_override(test_ops, 2);
    run_result r = RUN("memfix", "bench", "--backend", "host", "--reps", "1", "--csv");
    mf_registry_override(NULL, 0);
    ck_assert_int_eq(r.rc, MF_CLI_FAILED);
    int ok, failed;
    ck_assert_int_eq(check_csv(r.out, &ok, &failed, NULL), 5);
    ck_assert_int_eq(ok, 3);
    ck_assert_int_eq(failed, 2);
    ck_assert_ptr_nonnull(strstr(r.out, "fake,bad,host,host-wall,run_case,f32,\"n=1\",1,1,"));
    ck_assert_ptr_nonnull(strstr(r.err, "FAIL fake/bad"));
    ck_assert_ptr_nonnull(strstr(r.err, "deliberately broken op"));
    FREE(r);
    /* only the passing op: exit 0 */
    mf_registry_override(test_ops, 2);
    r = RUN("memfix", "bench", "--op", "fake", "--backend", "host", "--reps", "1");
    mf_registry_override(NULL, 0);
    ck_assert_int_eq(r.rc, MF_CLI_FAILED); /* its "bad" variant fails case 1 */
    /* the table marks the row and says why under it */
    ck_assert_ptr_nonnull(strstr(r.out, "memfix bench: 4 rows (1 failed), device host, timer host-wall"));
    ck_assert_ptr_nonnull(strstr(r.out, "FAILED fake/bad n=1: 1 of 11 entries outside atol+rtol*|ref|"));
    FREE(r);
}
END_TEST

START_TEST(test_usage)
{
    run_result r = RUN("memfix", "bench", "--help");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "host-wall"));
    ck_assert_ptr_nonnull(strstr(r.out, "ceiling_bytes"));
    FREE(r);
    const char *bad[][3] = { { "--reps", "0", NULL },     { "--reps", "x", NULL },
                             { "--sizes", "1,,2", NULL }, { "--sizes", "-4", NULL },
                             { "--op", "nosuch", NULL },  { "--backend", "tpu", NULL },
                             { "--frob", NULL, NULL },    { "--out", NULL, NULL },
                             { "--csv", "--json", NULL } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[4] = { "memfix", "bench", bad[i][0], bad[i][1] };
        r = run(bad[i][1] ? 4 : 3, argv);
        ck_assert_msg(r.rc == MF_CLI_USAGE, "%s %s: rc %d", bad[i][0], bad[i][1] ? bad[i][1] : "", r.rc);
        ck_assert(r.err[0] != '\0');
        FREE(r);
    }
    r = RUN("memfix", "bench", "--op", "matmul", "--sizes", "4", "--out", "/nonexistent-dir/x.csv");
    ck_assert_int_eq(r.rc, MF_CLI_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(r.err, "cannot open"));
    FREE(r);
    if (!mf_backend_available(MF_BACKEND_CUDA)) {
        r = RUN("memfix", "bench", "--backend", "cuda");
        ck_assert_int_eq(r.rc, MF_CLI_UNAVAILABLE);
        FREE(r);
    }
}
END_TEST

/* ---- --targets: the performance targets (reduced shapes in host execution mode) ------ */
static const char *const TARGET_HEADER = "target,op,source,backend,timer,shape,kind,goal,opt_ms,baseline_ms,"
                                         "floor_ms,peak_tflops,ratio,met,status,message";

START_TEST(test_targets_host)
{
    run_result r = RUN("memfix", "bench", "--targets", "--backend", "host", "--reps", "1", "--csv");
    ck_assert_msg(r.rc == MF_CLI_OK, "rc %d: %s", r.rc, r.err);
    char *save = NULL, *line = strtok_r(r.out, "\n", &save);
    ck_assert_str_eq(line, TARGET_HEADER);
    static char f[20][256];
    int rows = 0, ce = 0, nsa = 0;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        ck_assert_int_eq(split_csv(line, f, 20), 16);
        ck_assert_str_eq(f[3], "host");
        ck_assert_str_eq(f[4], "host-wall");
        ck_assert_msg(strcmp(f[14], "ok") == 0, "target row not ok: %s", line);
        ck_assert_str_eq(f[13], "n/a"); /* reduced shapes: never met or unmet */
        ck_assert(atof(f[8]) > 0);      /* opt_ms */
        if (strcmp(f[0], "ce-000") == 0) {
            ce++;
            ck_assert_str_eq(f[6], "floor");
            ck_assert(atof(f[7]) == 1.5);
            ck_assert_str_eq(f[10], ""); /* no peak in host mode: no floor, no ratio */
            ck_assert_str_eq(f[12], "");
            ck_assert_ptr_nonnull(strstr(f[5], "N=300 D=136 V=1000"));
        } else if (strcmp(f[0], "nsa-64k") == 0) {
            nsa++;
            ck_assert_str_eq(f[6], "speedup");
            ck_assert(atof(f[7]) == 6.0);
            ck_assert(atof(f[9]) > 0 && atof(f[12]) > 0); /* baseline timed, ratio = baseline / opt */
        }
        rows++;
    }
    ck_assert_int_eq(rows, 2);
    ck_assert_int_eq(ce, 1);
    ck_assert_int_eq(nsa, 1);
    FREE(r);
    r = RUN("memfix", "bench", "--help");
    ck_assert_ptr_nonnull(strstr(r.out, "ce-000"));
    ck_assert_ptr_nonnull(strstr(r.out, "nsa-64k"));
    FREE(r);
    const char *bad[][4] = { { "--targets", "--sizes", "4", NULL },
                             { "--targets", "--plot", "/tmp/x", NULL },
                             { "--small", NULL, NULL, NULL } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[5] = { "memfix", "bench", bad[i][0], bad[i][1], bad[i][2] };
        r = run(bad[i][1] ? (bad[i][2] ? 5 : 4) : 3, argv);
        ck_assert_msg(r.rc == MF_CLI_USAGE, "%s: rc %d", bad[i][0], r.rc);
        ck_assert(r.err[0] != '\0');
        FREE(r);
    }
}
END_TEST

/* A target whose check fails: its row is failed with the check's words, exit status 1. */
static mf_status tgt_setup(mf_context *ctx, mf_bench_target_run *t)
{
    (void)ctx;
    snprintf(t->shape, sizeof t->shape, "tiny");
    t->floor_flops = 1e6;
    return MF_OK;
}
static mf_status tgt_run(mf_context *ctx, mf_bench_target_run *t)
{
    (void)ctx, (void)t;
    return MF_OK;
}
static mf_status tgt_check(mf_context *ctx, mf_bench_target_run *t, char *why, size_t cap)
{
    (void)ctx, (void)t;
    snprintf(why, cap, "deliberately wrong output");
    return MF_OK;
}
static const mf_bench_target tgt_bad[] = {
    { "bad-goal", "seed 999", "test-only", MF_BENCH_TARGET_FLOOR, 1.5, tgt_setup, tgt_run, NULL, tgt_check },
};
static const mf_op_desc target_op = { "tgt", "test-only", 1,    fake_variants, 1, fake_run, 0, NULL,
                                      NULL,  0,           NULL, NULL,          0, NULL,     1, tgt_bad };
static const mf_op_desc *const target_ops[] = { &target_op };

START_TEST(test_targets_failed_check)
{
    mf_registry_override(target_ops, 1);
    run_result r = RUN("memfix", "bench", "--targets", "--backend", "host", "--reps", "1", "--csv");
    mf_registry_override(NULL, 0);
    ck_assert_int_eq(r.rc, MF_CLI_FAILED);
    ck_assert_ptr_nonnull(strstr(r.out, "bad-goal,tgt,seed 999,host,host-wall,\"tiny\",floor,1.5,"));
    ck_assert_ptr_nonnull(strstr(r.out, ",n/a,failed,\"check after timing: deliberately wrong output\""));
    ck_assert_ptr_nonnull(strstr(r.err, "FAIL target bad-goal"));
    FREE(r);
    /* the table says the goal in words and why the row failed */
    mf_registry_override(target_ops, 1);
    r = RUN("memfix", "bench", "--targets", "--backend", "host", "--reps", "1");
    mf_registry_override(NULL, 0);
    ck_assert_int_eq(r.rc, MF_CLI_FAILED);
    ck_assert_ptr_nonnull(strstr(r.out, "<= 1.5x the floor"));
    ck_assert_ptr_nonnull(strstr(r.out, "FAILED bad-goal: check after timing: deliberately wrong output"));
    FREE(r);
}
END_TEST

/* The default output is a table for people: a title naming the device and the timer, one
 * header, one line per row with its scratch in KiB/MiB, every variant of the op. */
START_TEST(test_table)
{
    run_result r =
        RUN("memfix", "bench", "--op", "matmul", "--backend", "host", "--sizes", "8,20", "--reps", "1");
    ck_assert_msg(r.rc == MF_CLI_OK, "rc %d: %s", r.rc, r.err);
    ck_assert_ptr_nonnull(
        strstr(r.out, "memfix bench: 6 rows (0 failed), device host, timer host-wall (CPU time"));
    ck_assert_ptr_null(strstr(r.out, "op,variant,")); /* not the CSV */
    const char *head = strstr(r.out, "\nop ");
    ck_assert_ptr_nonnull(head);
    static const char *const cols[] = { "variant", "ref ms",  "opt ms", "ref scratch", "opt scratch",
                                        "ceiling", "max err", "status", "shape" };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) ck_assert_ptr_nonnull(strstr(head, cols[i]));
    int lines = 0;
    for (const char *p = strstr(head + 1, "\nmatmul "); p != NULL; p = strstr(p + 1, "\nmatmul ")) lines++;
    ck_assert_int_eq(lines, 6);
    ck_assert_ptr_nonnull(strstr(r.out, "9.38 KiB")); /* the reference's 9,600 bytes at n = 20 */
    ck_assert_ptr_null(strstr(r.out, "TFLOP/s"));     /* host mode: no rate columns */
    FREE(r);
    /* --out FILE takes the table too */
    char path[] = "/tmp/mf_bench_table_XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    r = RUN("memfix", "bench", "--op", "matmul", "--backend", "host", "--sizes", "8", "--reps", "1", "--out",
            path);
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    FREE(r);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 14];
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    unlink(path);
    ck_assert_ptr_nonnull(strstr(text, "memfix bench: 3 rows (0 failed)"));
}
END_TEST

Suite *bench_suite(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_add_test(tc, test_matmul_sweep_to_file);
    tcase_add_test(tc, test_all_ops_tiny);
    tcase_add_test(tc, test_rope_sweep);
    tcase_add_test(tc, test_failed_rows);
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_cross_entropy_sweep_variants);
    tcase_add_test(tc, test_plot);
    tcase_add_test(tc, test_targets_host);
    tcase_add_test(tc, test_targets_failed_check);
    tcase_add_test(tc, test_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(bench_suite()); }
