/* memfix test harness: see mf_test.h. */
#define _POSIX_C_SOURCE 200809L
#include "mf_test.h"
#include "testbed/testbed.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MF_FIXTURES_DIR
#error "MF_FIXTURES_DIR must be defined (tests/CMakeLists.txt does it)"
#endif
#ifndef MF_TEST_DUMP_DIR_DEFAULT
#define MF_TEST_DUMP_DIR_DEFAULT "test-dumps"
#endif

/* ---- backend and fixture context -------------------------------------------------- */
mf_backend mf_test_backend(void)
{
    const char *b = getenv("MF_TEST_BACKEND");
    if (b == NULL || b[0] == '\0' || strcmp(b, "host") == 0) return MF_BACKEND_HOST;
    if (strcmp(b, "cuda") == 0) return MF_BACKEND_CUDA;
    fprintf(stderr, "mf_test: MF_TEST_BACKEND='%s' is not host or cuda; using host\n", b);
    return MF_BACKEND_HOST;
}

static mf_context *mf_test_context;

mf_context *mf_test_ctx(void) { return mf_test_context; }

void mf_test_setup(void)
{
    mf_context *ctx = NULL;
    mf_backend b = mf_test_backend();
    mf_status s = mf_context_create(&ctx, b);
    ck_assert_msg(s == MF_OK, "mf_context_create(%s) failed: %s: %s", mf_backend_name(b), mf_status_name(s),
                  mf_last_error());
    mf_test_context = ctx;
}

void mf_test_teardown(void)
{
    mf_context_destroy(mf_test_context);
    mf_test_context = NULL;
}

/* ---- test cases that need an optional device path -------------------------------- */
typedef struct case_need {
    const char *tcase, *what;
    mf_test_available_fn available;
    char tag[80];
} case_need;
static case_need g_needs[8];
static int g_n_needs;

TCase *mf_test_tcase_needing(const char *name, mf_test_available_fn available, const char *what)
{
    TCase *tc = tcase_create(name);
    if (g_n_needs < (int)(sizeof g_needs / sizeof g_needs[0]) && available != NULL) {
        case_need *n = &g_needs[g_n_needs++];
        *n = (case_need){ name, what != NULL ? what : name, available, { 0 } };
        snprintf(n->tag, sizeof n->tag, "needs_%s", name);
        tcase_set_tags(tc, n->tag);
    } else {
        fprintf(stderr, "mf_test_tcase_needing(%s): no availability check (NULL, or more than 8 cases)\n",
                name);
    }
    return tc;
}

/* 1 available, 0 unavailable, -1 the check failed (said on stderr). In a child process: CUDA must not be
 * initialised in the process that forks the tests. */
static int need_probe(const case_need *n)
{
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        mf_context *ctx = NULL;
        int yes = 0;
        mf_status st = mf_context_create(&ctx, mf_test_backend());
        if (st == MF_OK) st = n->available(ctx, &yes);
        if (st != MF_OK)
            fprintf(stderr, "mf_test: checking %s: %s: %s\n", n->what, mf_status_name(st), mf_last_error());
        mf_context_destroy(ctx);
        fflush(NULL);
        _exit(st != MF_OK ? 2 : yes ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        fprintf(stderr, "mf_test: could not check %s\n", n->what);
        return -1;
    }
    return WEXITSTATUS(status) == 0;
}

/* Leaves out the selected test cases whose path is unavailable: MF_TEST_SKIP when CK_RUN_CASE named one of
 * them, 1 when a check failed, else 0. */
static int exclude_unavailable(void)
{
    const char *run = getenv("CK_RUN_CASE");
    const char *excl0 = getenv("CK_EXCLUDE_TAGS");
    char excl[1024];
    snprintf(excl, sizeof excl, "%s", excl0 != NULL ? excl0 : "");
    int n_left_out = 0, run_left_out = 0;
    for (int i = 0; i < g_n_needs; i++) {
        const case_need *n = &g_needs[i];
        if (run != NULL && *run != '\0' && strcmp(run, n->tcase) != 0) continue;
        const int yes = need_probe(n);
        if (yes < 0) return 1;
        if (yes) continue;
        printf("SKIP: test case %s: %s is not available on this %s device\n", n->tcase, n->what,
               mf_backend_name(mf_test_backend()));
        const size_t len = strlen(excl);
        snprintf(excl + len, sizeof excl - len, "%s%s", len ? " " : "", n->tag);
        n_left_out++;
        if (run != NULL && strcmp(run, n->tcase) == 0) run_left_out = 1;
    }
    if (run_left_out) return MF_TEST_SKIP;
    if (n_left_out) setenv("CK_EXCLUDE_TAGS", excl, 1);
    return 0;
}

int mf_test_run(Suite *s)
{
    if (s == NULL) {
        fprintf(stderr, "mf_test_run: suite is NULL\n");
        return 1;
    }
    /* under ctest --resource-spec-file: the GPU ctest gave this test, before any CUDA call */
    const int ctest_gpu = mf_use_ctest_gpu();
    if (ctest_gpu < 0) {
        fprintf(stderr, "mf_test_run: %s\n", mf_last_error());
        SRunner *sr = srunner_create(s);
        srunner_free(sr);
        return 1;
    }
    if (ctest_gpu > 0)
        printf("mf_test_run: CUDA_VISIBLE_DEVICES=%s (CTest's resource allocation)\n",
               getenv("CUDA_VISIBLE_DEVICES"));
    mf_backend b = mf_test_backend();
    if (b == MF_BACKEND_CUDA && !mf_backend_available(MF_BACKEND_CUDA)) {
        /* srunner_free frees the suite too; make one just to release s. */
        SRunner *sr = srunner_create(s);
        srunner_free(sr);
        printf("SKIP: backend cuda requested (MF_TEST_BACKEND=cuda) but %s\n",
#ifdef MF_HAVE_CUDA
               "no CUDA device is present"
#else
               "memfix was built without CUDA"
#endif
        );
        return MF_TEST_SKIP;
    }
    const int need_rc = exclude_unavailable();
    if (need_rc != 0) {
        SRunner *sr = srunner_create(s);
        srunner_free(sr);
        return need_rc;
    }
    SRunner *sr = srunner_create(s);
    const char *fork_env = getenv("CK_FORK");
    if (fork_env == NULL || strcmp(fork_env, "no") != 0) srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

/* ---- comparison -------------------------------------------------------------------- */
static int mkdir_p(const char *dir)
{
    char buf[PATH_MAX];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof buf) return 0;
    memcpy(buf, dir, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return 0;
        *p = '/';
    }
    return mkdir(buf, 0777) == 0 || errno == EEXIST;
}

const char *mf_test_dump_dir(void)
{
    const char *d = getenv("MF_TEST_DUMP_DIR");
    if (d == NULL || d[0] == '\0') d = MF_TEST_DUMP_DIR_DEFAULT;
    (void)mkdir_p(d);
    return d;
}

static void sanitize(char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
              *s == '-'))
            *s = '_';
}

int mf_test_check_close(const float *got, const float *ref, size_t n, const char *tol_name, const char *file,
                        int line, char *msg, size_t msg_cap)
{
    if (msg == NULL || msg_cap == 0) return 0;
    msg[0] = '\0';
    const mf_tolerance *tol = tol_name ? mf_tolerance_get(tol_name) : NULL;
    if (tol == NULL) {
        snprintf(msg, msg_cap,
                 "unknown tolerance '%s' (add a row to the op's descriptor in src/ops/<op>.c, or a "
                 "reference-vs-PyTorch row to src/ops/<op>_args.c)",
                 tol_name ? tol_name : "(null)");
        return 0;
    }
    const char *base = file ? strrchr(file, '/') : NULL;
    base = base ? base + 1 : (file ? file : "test");
    char name[256];
    const char *tc = tcase_name();
    snprintf(name, sizeof name, "%s_%s_%s_L%d.txt", tc ? tc : "test", base, tol_name, line);
    sanitize(name);
    char dump[PATH_MAX + 256];
    snprintf(dump, sizeof dump, "%s/%s", mf_test_dump_dir(), name);

    mf_compare_result r;
    mf_status s = mf_compare_f32(got, ref, n, tol, dump, &r);
    if (s != MF_OK) {
        snprintf(msg, msg_cap, "mf_compare_f32 could not run: %s: %s", mf_status_name(s), mf_last_error());
        return 0;
    }
    if (r.pass) return 1;
    snprintf(
        msg, msg_cap,
        "outputs differ beyond tolerance '%s' (atol %g, rtol %g, nmse %g): %s; max abs %.3g, max rel %.3g, "
        "nmse %.3g; dump: %s",
        tol->name, tol->atol, tol->rtol, tol->nmse, r.reason, r.max_abs_err, r.max_rel_err, r.nmse, dump);
    return 0;
}

/* ---- fixtures ---------------------------------------------------------------------- */
const char *mf_fixture_path(const char *rel)
{
    static _Thread_local char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s/%s", MF_FIXTURES_DIR, rel ? rel : "");
    return buf;
}

int mf_fixture_read_raw(const char *path, void **data, size_t *bytes)
{
    if (path == NULL || data == NULL || bytes == NULL) {
        fprintf(stderr, "mf_fixture_read_raw: NULL argument\n");
        return 0;
    }
    *data = NULL;
    *bytes = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "mf_fixture: cannot open %s: %s\n", path, strerror(errno));
        return 0;
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf != NULL) {
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (len < cap) break;
        unsigned char *nb = realloc(buf, cap * 2);
        if (nb == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (buf == NULL || err) {
        free(buf);
        fprintf(stderr, "mf_fixture: reading %s failed\n", path);
        return 0;
    }
    *data = buf;
    *bytes = len;
    return 1;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static size_t fixture_elem_size(uint32_t dtype)
{
    switch (dtype) {
    case MF_FIXTURE_F32:
    case MF_FIXTURE_I32: return 4;
    case MF_FIXTURE_BF16: return 2;
    case MF_FIXTURE_I64:
    case MF_FIXTURE_F64: return 8;
    }
    return 0;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

int mf_fixture_read(const char *path, mf_fixture_tensor *out)
{
    if (out == NULL) return 0;
    memset(out, 0, sizeof *out);
    void *raw = NULL;
    size_t bytes = 0;
    if (!mf_fixture_read_raw(path, &raw, &bytes)) return 0;
    const unsigned char *p = raw;
    if (bytes < 16 || memcmp(p, "MFT1", 4) != 0) {
        fprintf(stderr, "mf_fixture: %s is not an MFT1 tensor file\n", path);
        free(raw);
        return 0;
    }
    uint32_t dtype = le32(p + 4), ndim = le32(p + 8);
    size_t esize = fixture_elem_size(dtype);
    if (esize == 0 || ndim > MF_FIXTURE_MAX_DIMS || bytes < 16 + 8 * (size_t)ndim) {
        fprintf(stderr, "mf_fixture: %s: bad header (dtype %u, ndim %u)\n", path, dtype, ndim);
        free(raw);
        return 0;
    }
    size_t count = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        int64_t d = (int64_t)le64(p + 16 + 8 * i);
        if (d < 0 || !mf_size_mul(count, (size_t)d, &count)) {
            fprintf(stderr, "mf_fixture: %s: bad dim %u (%lld)\n", path, i, (long long)d);
            free(raw);
            return 0;
        }
        out->dims[i] = d;
    }
    size_t off = 16 + 8 * (size_t)ndim, need = 0;
    if (!mf_size_mul(count, esize, &need) || bytes - off != need) {
        fprintf(stderr, "mf_fixture: %s: %zu data bytes, expected %zu\n", path, bytes - off, need);
        free(raw);
        return 0;
    }
    void *data = malloc(need ? need : 1);
    if (data == NULL) {
        free(raw);
        return 0;
    }
    memcpy(data, p + off, need);
    if (!host_is_little_endian()) {
        unsigned char *d = data;
        for (size_t i = 0; i < count; i++)
            for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
                unsigned char t = d[i * esize + a];
                d[i * esize + a] = d[i * esize + b];
                d[i * esize + b] = t;
            }
    }
    free(raw);
    out->dtype = (mf_fixture_dtype)dtype;
    out->ndim = (int)ndim;
    out->count = count;
    out->data = data;
    return 1;
}

void mf_fixture_free(mf_fixture_tensor *t)
{
    if (t == NULL) return;
    free(t->data);
    t->data = NULL;
}

static int read_typed(const char *path, mf_fixture_dtype want, void **data, size_t *n)
{
    if (data == NULL || n == NULL) return 0;
    *data = NULL;
    *n = 0;
    mf_fixture_tensor t;
    if (!mf_fixture_read(path, &t)) return 0;
    if (t.dtype != want) {
        fprintf(stderr, "mf_fixture: %s holds dtype %d, expected %d\n", path, (int)t.dtype, (int)want);
        mf_fixture_free(&t);
        return 0;
    }
    *data = t.data;
    *n = t.count;
    return 1;
}

#define MF_FIXTURE_TYPED(fn, ctype, code)                                                                    \
    int fn(const char *path, ctype **data, size_t *n)                                                        \
    {                                                                                                        \
        void *p = NULL;                                                                                      \
        if (data == NULL) return 0;                                                                          \
        int ok = read_typed(path, code, &p, n);                                                              \
        *data = (ctype *)p;                                                                                  \
        return ok;                                                                                           \
    }
MF_FIXTURE_TYPED(mf_fixture_read_f32, float, MF_FIXTURE_F32)
MF_FIXTURE_TYPED(mf_fixture_read_f64, double, MF_FIXTURE_F64)
MF_FIXTURE_TYPED(mf_fixture_read_i32, int32_t, MF_FIXTURE_I32)
MF_FIXTURE_TYPED(mf_fixture_read_i64, int64_t, MF_FIXTURE_I64)
MF_FIXTURE_TYPED(mf_fixture_read_bf16, uint16_t, MF_FIXTURE_BF16)

void mf_test_read_fixture(const char *op, const char *name, const char *part, mf_fixture_tensor *t)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s/%s.%s.mft", op, name, part);
    ck_assert_msg(mf_fixture_read(mf_fixture_path(rel), t), "cannot read fixture %s", rel);
}

/* ---- seeded inputs and device round trips ------------------------------------------ */
/* The testbed's helpers (src/testbed/testbed.h): the suites seed and NaN-fill
 * exactly as `memfix report` and `memfix verify` do. */
void mf_test_fill_uniform(mf_dtype dt, void *p, size_t n, uint64_t seed, float lo, float hi)
{
    mf_tb_fill_uniform(dt, p, n, seed, lo, hi);
}

void *mf_test_make_input(mf_dtype dt, size_t n, uint64_t seed, float lo, float hi)
{
    void *p = mf_tb_make_input(dt, n, seed, lo, hi);
    ck_assert_ptr_nonnull(p);
    return p;
}

void mf_test_fill_nan(mf_dtype dt, void *p, size_t n) { mf_tb_fill_nan(dt, p, n); }

float *mf_test_nan_host(size_t n)
{
    float *p = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(p);
    mf_fill_nan_f32(p, n);
    return p;
}

void mf_test_to_f32(mf_dtype dt, const void *src, float *dst, size_t n) { mf_tb_to_f32(dt, src, dst, n); }

void *mf_test_dev_upload(mf_context *ctx, const void *host, size_t bytes)
{
    void *d = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, bytes, &d));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d, host, bytes));
    return d;
}

float *mf_test_dev_nan(mf_context *ctx, size_t n)
{
    float *h = mf_test_nan_host(n);
    float *d = (float *)mf_test_dev_upload(ctx, h, n * sizeof(float));
    free(h);
    return d;
}

float *mf_test_dev_fetch(mf_context *ctx, const float *d, size_t n, size_t guard, const char *what)
{
    float *h = malloc((n + guard) * sizeof(float));
    ck_assert_ptr_nonnull(h);
    MF_ASSERT_OK(mf_buffer_download(ctx, h, d, (n + guard) * sizeof(float)));
    for (size_t i = n; i < n + guard; i++)
        ck_assert_msg(isnan(h[i]), "%s: write past the end at element %zu", what, i);
    return h;
}

/* ---- an op's built-in cases ------------------------------------------------------------ */
/* Runs case c of variant v of op into *r and checks the contract of a result
 * row; 1 when it passed, else 0 with the reason (naming the case) in msg. */
static int op_case_check(const mf_op_desc *op, int v, int c, mf_case_result *r, char *msg, size_t cap)
{
    mf_context *ctx = mf_test_ctx();
    const char *var = op->variants[v];
    memset(r, 0x5a, sizeof *r); /* run_case must fill every field it reports */
    /* the scratch guard (memfix verify's): canaries around each device scratch allocation, checked
     * when it is freed, so that a kernel writing past its scratch fails here in every leg (the cache
     * and the 256-byte rounding of unguarded scratch would hide it from AddressSanitizer too) */
    mf_context_set_scratch_guard(ctx, 1);
    mf_status s = op->run_case(ctx, v, c, r);
    const char *guard = mf_context_scratch_guard_check(ctx);
    if (guard != NULL && s == MF_OK) {
        snprintf(msg, cap, "%s/%s case %d: scratch guard: %s", op->name, var, c, guard);
        mf_context_set_scratch_guard(ctx, 0);
        return 0;
    }
    mf_context_set_scratch_guard(ctx, 0);
    if (s != MF_OK) {
        snprintf(msg, cap, "%s/%s case %d: %s: %s", op->name, var, c, mf_status_name(s), mf_last_error());
        return 0;
    }
    const char *bad = NULL;
    if (!memchr(r->op, '\0', sizeof r->op) || strcmp(r->op, op->name) != 0)
        bad = "op field not filled";
    else if (!memchr(r->variant, '\0', sizeof r->variant) || strcmp(r->variant, var) != 0)
        bad = "variant field not filled";
    else if (!memchr(r->backend, '\0', sizeof r->backend) ||
             strcmp(r->backend, mf_backend_name(mf_context_backend(ctx))) != 0)
        bad = "backend field not filled";
    else if (!memchr(r->dtype, '\0', sizeof r->dtype) || !memchr(r->shape, '\0', sizeof r->shape) ||
             r->shape[0] == '\0')
        bad = "dtype or shape field not filled";
    else if (!memchr(r->message, '\0', sizeof r->message))
        bad = "message not a string";
    else if (!(r->max_abs_err >= 0.0 && r->max_abs_err <= r->atol + r->rtol * 1e30))
        bad = "max_abs_err not filled";
    if (bad != NULL) {
        snprintf(msg, cap, "%s/%s case %d: %s", op->name, var, c, bad);
        return 0;
    }
    if (r->pass != 1 || r->failure != MF_FAILURE_NONE) {
        snprintf(msg, cap, "%s/%s case %d (%s %s): FAIL (%s): %s", op->name, var, c, r->dtype, r->shape,
                 mf_failure_name(r->failure), r->message);
        return 0;
    }
    if (r->opt_peak_bytes > r->ceiling_bytes) {
        snprintf(msg, cap, "%s/%s case %d (%s %s): scratch %zu > ceiling %zu", op->name, var, c, r->dtype,
                 r->shape, r->opt_peak_bytes, r->ceiling_bytes);
        return 0;
    }
    return 1;
}

mf_case_result mf_test_op_case(const char *op_name, int v, int c)
{
    const mf_op_desc *op = mf_registry_find(op_name);
    ck_assert_msg(op != NULL, "op %s is not registered", op_name);
    ck_assert_msg(v >= 0 && v < op->n_variants && c >= 0 && c < op->n_cases, "%s: no variant %d case %d",
                  op_name, v, c);
    ck_assert_msg(mf_op_case_applies(op, v, c), "%s: case %d does not apply to variant %s", op_name, c,
                  op->variants[v]);
    mf_case_result r;
    char msg[1024];
    const int ok = op_case_check(op, v, c, &r, msg, sizeof msg);
    ck_assert_msg(ok, "%s", msg);
    return r;
}

static const char *op_cases_name; /* set while building the suite, inherited by the forked tests */
static int op_cases_per_test = MF_TEST_CASES_PER_TEST;
static int op_cases_n; /* the cases run: all, or the report cases under ThreadSanitizer */
static mf_test_case_check_fn op_cases_check; /* mf_test_add_op_cases_checked's property, or NULL */

/* _i = variant * tests_per_variant + chunk: every case of the chunk runs (a
 * failure does not hide the next), and the test fails naming each failing case. */
START_TEST(test_op_cases)
{
    const mf_op_desc *op = mf_registry_find(op_cases_name);
    ck_assert_ptr_nonnull(op);
    const int per = op_cases_per_test, chunks = (op_cases_n + per - 1) / per;
    const int v = _i / chunks, c0 = (_i % chunks) * per;
    const int c1 = c0 + per < op_cases_n ? c0 + per : op_cases_n;
    char report[4096] = "", msg[1024];
    int n_fail = 0;
    for (int c = c0; c < c1; c++) {
        if (!mf_op_case_applies(op, v, c)) continue;
        mf_case_result r;
        if (op_case_check(op, v, c, &r, msg, sizeof msg)) {
            char why[400] = "", line[1024];
            if (op_cases_check == NULL || op_cases_check(v, c, &r, why, sizeof why)) continue;
            snprintf(line, sizeof line, "%s/%s case %d (%s %s): %s", op->name, op->variants[v], c, r.dtype,
                     r.shape, why);
            mf_tb_copy_msg(msg, sizeof msg, line);
        }
        n_fail++;
        const size_t len = strlen(report);
        snprintf(report + len, sizeof report - len, "\n  %s", msg);
    }
    ck_assert_msg(n_fail == 0, "%d of cases %d..%d failed:%s", n_fail, c0, c1 - 1, report);
}
END_TEST

/* Whether the tests run under ThreadSanitizer (MF_TEST_SANITIZER=thread, set by the tsan preset's test
 * environment). */
static int under_tsan(void)
{
    const char *san = getenv("MF_TEST_SANITIZER");
    return san != NULL && strcmp(san, "thread") == 0;
}

void mf_test_add_op_cases(Suite *s, const char *op_name)
{
    const mf_op_desc *op = mf_registry_find(op_name);
    if (op == NULL || op->n_cases <= 0) {
        fprintf(stderr, "mf_test_add_op_cases: op %s is not registered or has no cases\n", op_name);
        return;
    }
    const char *env = getenv("MF_TEST_CASES_PER_TEST");
    if (env != NULL && atoi(env) > 0) op_cases_per_test = atoi(env);
    op_cases_name = op->name;
    /* Under ThreadSanitizer (MF_TEST_SANITIZER=thread, set by the tsan preset's
     * test environment) the report cases only: every variant and dtype at small
     * shapes, which is what the races between a kernel's blocks need; the rest of
     * the sweep runs in the default and ASan builds. */
    op_cases_n = under_tsan() ? mf_op_report_cases(op) : op->n_cases;
    const int chunks = (op_cases_n + op_cases_per_test - 1) / op_cases_per_test;
    for (int v = 0; v < op->n_variants; v++) {
        TCase *tc = tcase_create(op->variants[v]);
        tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
        tcase_add_loop_test(tc, test_op_cases, v * chunks, (v + 1) * chunks);
        suite_add_tcase(s, tc);
    }
}

/* ---- under ThreadSanitizer: cases beyond the report's ---------------------------------------- */
static const char *tsan_op_name; /* set while building the suite, inherited by the forked tests */
static int tsan_variant;
static const int *tsan_cases;

START_TEST(test_op_cases_tsan)
{
    const mf_op_desc *op = mf_registry_find(tsan_op_name);
    ck_assert_ptr_nonnull(op);
    mf_case_result r;
    char msg[1024];
    ck_assert_msg(op_case_check(op, tsan_variant, tsan_cases[_i], &r, msg, sizeof msg), "%s", msg);
}
END_TEST

void mf_test_add_op_cases_tsan(Suite *s, const char *op_name, int v, const int *cases, int n)
{
    if (!under_tsan()) return; /* elsewhere the whole sweep runs them */
    const mf_op_desc *op = mf_registry_find(op_name);
    if (op == NULL || v < 0 || v >= op->n_variants) {
        fprintf(stderr, "mf_test_add_op_cases_tsan: op %s has no variant %d\n", op_name, v);
        return;
    }
    tsan_op_name = op->name;
    tsan_variant = v;
    tsan_cases = cases;
    TCase *tc = tcase_create(op->variants[v]);
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_op_cases_tsan, 0, n);
    suite_add_tcase(s, tc);
}

/* ---- cross_entropy: a case kept out of a variant's sweep --------------------------------- */
mf_case_result mf_test_op_case_unlisted(const char *op_name, int v, int c)
{
    const mf_op_desc *op = mf_registry_find(op_name);
    ck_assert_msg(op != NULL, "op %s is not registered", op_name);
    ck_assert_msg(v >= 0 && v < op->n_variants && c >= 0 && c < op->n_cases, "%s: no variant %d case %d",
                  op_name, v, c);
    mf_case_result r;
    char msg[1024];
    const int ok = op_case_check(op, v, c, &r, msg, sizeof msg);
    ck_assert_msg(ok, "%s", msg);
    return r;
}

void mf_test_op_case_large(const char *op_name, int first, int n, int i, int v, const char *shape)
{
    const mf_op_desc *op = mf_registry_find(op_name);
    ck_assert_msg(op != NULL, "op %s is not registered", op_name);
    ck_assert_msg(op->n_cases == first + n, "%s has %d cases, the large ones expected as its last %d from %d",
                  op_name, op->n_cases, n, first);
    const int c = first + i;
    for (int u = 0; u < op->n_variants; u++)
        ck_assert_msg(!mf_op_case_applies(op, u, c), "%s case %d is in variant %d's sweep", op_name, c, u);
    const mf_case_result r = mf_test_op_case_unlisted(op_name, v, c);
    ck_assert_msg(strncmp(r.shape, shape, strlen(shape)) == 0, "%s case %d is not the large one (%s): %s",
                  op_name, c, shape, r.shape);
}

/* ---- nsa: an op's built-in cases with a property of each result ---------------- */
void mf_test_add_op_cases_checked(Suite *s, const char *op_name, mf_test_case_check_fn check)
{
    op_cases_check = check; /* test_op_cases gives it each passing case's result */
    mf_test_add_op_cases(s, op_name);
}
