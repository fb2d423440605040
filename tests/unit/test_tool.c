/* The memfix command: in-process with test-only ops (mf_registry_override), and
 * end to end through the built binary (MF_TOOL_PATH) with the real registry. */
#define _POSIX_C_SOURCE 200809L
#include "mf_test.h"
#include "mf_internal.h"
#include "memfix/registry.h"
#include "memfix_cli.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifndef MF_TOOL_PATH
#error "MF_TOOL_PATH must point at the memfix binary"
#endif

/* ---- test-only ops ------------------------------------------------------------------ */
static const char *const two_variants[] = { "good", "bad" };

/* "good" passes both cases; "bad" fails case 1 (equivalence) */
static mf_status fake_run(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->op, sizeof out->op, "fake");
    snprintf(out->variant, sizeof out->variant, "%s", two_variants[variant]);
    snprintf(out->backend, sizeof out->backend, "%s", mf_backend_name(mf_context_backend(ctx)));
    snprintf(out->dtype, sizeof out->dtype, "f32");
    snprintf(out->shape, sizeof out->shape, "n=%d \"quoted\"", 10 + case_index);
    out->atol = 1e-5;
    out->rtol = 1e-4;
    out->ref_peak_bytes = 4096;
    out->opt_peak_bytes = 128;
    out->ceiling_bytes = 256;
    out->max_abs_err = 1e-7;
    out->max_rel_err = 2e-7;
    out->pass = 1;
    /* two compared quantities under different rows, as the testbed records them */
    out->n_outputs = 2;
    snprintf(out->outputs[0].what, sizeof out->outputs[0].what, "loss");
    snprintf(out->outputs[0].tol, sizeof out->outputs[0].tol, "fake.loss.f32");
    out->outputs[0].atol = 1e-6;
    out->outputs[0].max_abs_err = 1e-7;
    out->outputs[0].budget_used = 0.125;
    out->outputs[0].pass = 1;
    snprintf(out->outputs[1].what, sizeof out->outputs[1].what, "grad");
    snprintf(out->outputs[1].tol, sizeof out->outputs[1].tol, "fake.grad.f32");
    out->outputs[1].atol = 1e-5;
    out->outputs[1].rtol = 1e-4;
    out->outputs[1].max_abs_err = 1e-7;
    out->outputs[1].budget_used = 0.0625;
    out->outputs[1].pass = 1;
    if (variant == 1 && case_index == 1) {
        out->pass = 0;
        out->max_abs_err = 0.5;
        out->outputs[1].max_abs_err = 0.5;
        out->outputs[1].budget_used = 4.5;
        out->outputs[1].pass = 0;
        snprintf(out->message, sizeof out->message, "1 of 11 entries outside atol+rtol*|ref|");
    }
    return MF_OK;
}

static mf_status good_run(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    mf_status s = fake_run(ctx, variant, case_index, out);
    snprintf(out->op, sizeof out->op, "goodonly");
    return s;
}

static mf_status broken_run(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    (void)ctx;
    (void)variant;
    (void)case_index;
    memset(out, 0, sizeof *out);
    MF_FAIL(MF_ERR_INTERNAL, "deliberately broken op");
}

static const mf_op_desc fake_op = { "fake", "test-only op", 2, two_variants, 2, fake_run, 0, NULL, NULL, 0,
                                    NULL,   NULL,           0, NULL,         0, NULL };
static const mf_op_desc good_op = { "goodonly", "test-only op that passes",
                                    1,          two_variants,
                                    2,          good_run,
                                    0,          NULL,
                                    NULL,       0,
                                    NULL,       NULL,
                                    0,          NULL,
                                    0,          NULL };
static const mf_op_desc broken_op = { "broken", "test-only op that errors",
                                      1,        two_variants,
                                      1,        broken_run,
                                      0,        NULL,
                                      NULL,     0,
                                      NULL,     NULL,
                                      0,        NULL,
                                      0,        NULL };
static const mf_op_desc *const test_ops[] = { &fake_op, &good_op, &broken_op };

static void use_test_ops(void) { mf_registry_override(test_ops, 3); }
static void restore_ops(void) { mf_registry_override(NULL, 0); }

/* ---- running the CLI in-process -------------------------------------------------------- */
typedef struct {
    int rc;
    char *out, *err;
} cli_run;

static cli_run run_cli(int argc, const char **argv)
{
    cli_run r = { 0, NULL, NULL };
    size_t on = 0, en = 0;
    FILE *out = open_memstream(&r.out, &on), *err = open_memstream(&r.err, &en);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(err);
    r.rc = mf_cli_main(argc, (char **)argv, out, err);
    fclose(out);
    fclose(err);
    return r;
}
#define RUN(...)                                                                                             \
    run_cli((int)(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *)),                           \
            (const char *[]){ __VA_ARGS__ })

static void free_run(cli_run *r)
{
    free(r->out);
    free(r->err);
}

static const char *const json_keys[] = {
    "op",         "variant", "backend", "dtype",          "shape",          "max_abs_err",   "max_rel_err",
    "atol",       "rtol",    "pass",    "ref_peak_bytes", "opt_peak_bytes", "ceiling_bytes", "outputs",
    "budget_used"
};
#define N_KEYS (sizeof json_keys / sizeof json_keys[0])

/* Parses a report's JSON and checks every object has exactly the keys. Returns
 * the number of rows; *n_pass gets the passing ones. */
static int check_report_json(const char *text, int *n_pass)
{
    cJSON *arr = cJSON_Parse(text);
    ck_assert_msg(arr != NULL, "not JSON: %.200s", text);
    ck_assert(cJSON_IsArray(arr));
    int n = cJSON_GetArraySize(arr);
    *n_pass = 0;
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_GetArrayItem(arr, i);
        ck_assert(cJSON_IsObject(o));
        int count = 0;
        for (cJSON *c = o->child; c != NULL; c = c->next) count++;
        ck_assert_int_eq(count, (int)N_KEYS);
        for (size_t k = 0; k < N_KEYS; k++)
            ck_assert_msg(cJSON_GetObjectItemCaseSensitive(o, json_keys[k]) != NULL, "row %d lacks '%s'", i,
                          json_keys[k]);
        for (size_t k = 0; k < 5; k++)
            ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, json_keys[k])));
        ck_assert(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(o, "pass")));
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "atol")));
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "opt_peak_bytes")));
        *n_pass += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "pass"));
    }
    cJSON_Delete(arr);
    return n;
}

/* ---- in-process tests ------------------------------------------------------------------ */
START_TEST(test_help)
{
    cli_run r = RUN("memfix", "--help");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "report"));
    free_run(&r);
    r = RUN("memfix", "report", "--help");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "--backend"));
    ck_assert_ptr_nonnull(strstr(r.out, "ceiling_bytes"));
    ck_assert_ptr_nonnull(strstr(r.out, "fake")); /* lists the registered ops */
    free_run(&r);
    r = RUN("memfix", "help", "report");
    ck_assert_int_eq(r.rc, 0);
    free_run(&r);
    r = RUN("memfix", "--version");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "memfix"));
    free_run(&r);
}
END_TEST

/* An unknown command gets the closest one: misspelt, swapped, a prefix; none
 * for a name far from every command. */
START_TEST(test_did_you_mean)
{
    static const char *const cases[][2] = { { "rpeort", "report" },  { "bnech", "bench" },
                                            { "ver", "verify" },     { "plna", "plan" },
                                            { "reports", "report" }, { "verfy", "verify" } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_run r = RUN("memfix", cases[i][0]);
        ck_assert_int_eq(r.rc, 2);
        char want[64];
        snprintf(want, sizeof want, "did you mean '%s'?", cases[i][1]);
        ck_assert_msg(strstr(r.err, want) != NULL, "'%s': got '%s'", cases[i][0], r.err);
        free_run(&r);
    }
    cli_run r = RUN("memfix", "frobnicate");
    ck_assert_ptr_null(strstr(r.err, "did you mean"));
    ck_assert_ptr_nonnull(strstr(r.err, "commands: report plan bench verify"));
    free_run(&r);
    r = RUN("memfix", "help", "bech");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "did you mean 'bench'?"));
    free_run(&r);
}
END_TEST

START_TEST(test_usage_errors)
{
    cli_run r = RUN("memfix");
    ck_assert_int_eq(r.rc, 2);
    free_run(&r);
    r = RUN("memfix", "frobnicate");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "unknown command"));
    free_run(&r);
    r = RUN("memfix", "report", "--op", "no-such-op");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "unknown op 'no-such-op'"));
    ck_assert_ptr_nonnull(strstr(r.err, "fake")); /* says what exists */
    free_run(&r);
    r = RUN("memfix", "report", "--op");
    ck_assert_int_eq(r.rc, 2);
    free_run(&r);
    r = RUN("memfix", "report", "--backend", "tpu");
    ck_assert_int_eq(r.rc, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "tpu"));
    free_run(&r);
    r = RUN("memfix", "report", "--frobnicate");
    ck_assert_int_eq(r.rc, 2);
    free_run(&r);
    r = RUN("memfix", "help", "nothing");
    ck_assert_int_eq(r.rc, 2);
    free_run(&r);
}
END_TEST

START_TEST(test_cuda_unavailable)
{
    if (mf_backend_available(MF_BACKEND_CUDA)) return;
    cli_run r = RUN("memfix", "report", "--backend", "cuda");
    ck_assert_int_ne(r.rc, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "cuda is not available"));
    free_run(&r);
}
END_TEST

START_TEST(test_table_passing)
{
    cli_run r = RUN("memfix", "report", "--op=goodonly", "--backend=host");
    ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
    const char *cols[] = { "op",          "variant",     "backend", "dtype",    "compared", "tolerance row",
                           "max abs err", "budget used", "verdict", "ref peak", "opt peak", "ceiling",
                           "case" };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) ck_assert_ptr_nonnull(strstr(r.out, cols[i]));
    ck_assert_ptr_nonnull(strstr(r.out, "goodonly"));
    ck_assert_ptr_nonnull(strstr(r.out, "PASS"));
    ck_assert_ptr_nonnull(strstr(r.out, "4096"));
    ck_assert_ptr_null(strstr(r.out, "FAIL"));
    ck_assert_ptr_nonnull(strstr(r.out, "2 rows, 2 passed, 0 failed"));
    /* per compared quantity: its row and the share of its budget, no misleading rel err */
    ck_assert_ptr_nonnull(strstr(r.out, "fake.loss.f32"));
    ck_assert_ptr_nonnull(strstr(r.out, "fake.grad.f32"));
    ck_assert_ptr_nonnull(strstr(r.out, "12.5%"));
    ck_assert_ptr_nonnull(strstr(r.out, "6.25%"));
    ck_assert_ptr_null(strstr(r.out, "max rel err"));
    free_run(&r);
}
END_TEST

START_TEST(test_table_failing)
{
    cli_run r = RUN("memfix", "report", "--op", "fake", "--backend", "host");
    ck_assert_int_eq(r.rc, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "4 rows, 3 passed, 1 failed"));
    ck_assert_ptr_nonnull(strstr(r.out, "FAIL fake/bad"));
    ck_assert_ptr_nonnull(strstr(r.out, "outside atol"));
    ck_assert_ptr_nonnull(strstr(r.out, "grad FAIL")); /* the quantity that failed */
    ck_assert_ptr_nonnull(strstr(r.out, "450%"));
    free_run(&r);
    /* an op whose run_case errors: a failing row with the error, exit 1 */
    r = RUN("memfix", "report", "--op", "broken", "--backend", "host");
    ck_assert_int_eq(r.rc, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "deliberately broken op"));
    free_run(&r);
}
END_TEST

START_TEST(test_json)
{
    cli_run r = RUN("memfix", "report", "--json", "--backend", "host");
    ck_assert_int_eq(r.rc, 1); /* fake/bad and broken fail */
    int n_pass = 0;
    int n = check_report_json(r.out, &n_pass);
    ck_assert_int_eq(n, 4 + 2 + 1);
    ck_assert_int_eq(n_pass, 3 + 2);
    /* strings with quotes are escaped by cJSON, values preserved */
    cJSON *arr = cJSON_Parse(r.out);
    cJSON *o = cJSON_GetArrayItem(arr, 0);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "shape")->valuestring, "n=10 \"quoted\"");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "backend")->valuestring, "host");
    ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "ref_peak_bytes")->valuedouble, 4096);
    cJSON *q = cJSON_GetObjectItemCaseSensitive(o, "outputs");
    ck_assert_int_eq(cJSON_GetArraySize(q), 2);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(q, 0), "name")->valuestring, "loss");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(q, 1), "tolerance")->valuestring,
                     "fake.grad.f32");
    ck_assert_double_eq(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(q, 0), "budget_used")->valuedouble, 0.125);
    ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "budget_used")->valuedouble, 0.125);
    /* fake/bad case 1: the failing quantity says so */
    o = cJSON_GetArrayItem(arr, 3);
    q = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "outputs"), 1);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(q, "pass")));
    ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(o, "budget_used")->valuedouble, 4.5);
    cJSON_Delete(arr);
    free_run(&r);
    r = RUN("memfix", "report", "--json", "--op", "goodonly");
    ck_assert_int_eq(r.rc, 0);
    ck_assert_int_eq(check_report_json(r.out, &n_pass), 2);
    free_run(&r);
}
END_TEST

START_TEST(test_empty_registry)
{
    mf_registry_override(test_ops, 0);
    cli_run r = RUN("memfix", "report", "--json");
    ck_assert_int_eq(r.rc, 0);
    int n_pass;
    ck_assert_int_eq(check_report_json(r.out, &n_pass), 0);
    free_run(&r);
}
END_TEST

/* ---- end to end: the real binary and the real registry ----------------------------------- */
static int run_tool(const char *args, char **output)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", MF_TOOL_PATH, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (len + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    int st = pclose(p);
    *output = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_binary_help_and_errors)
{
    char *o = NULL;
    ck_assert_int_eq(run_tool("--help", &o), 0);
    ck_assert_ptr_nonnull(strstr(o, "report"));
    free(o);
    ck_assert_int_eq(run_tool("report --help", &o), 0);
    free(o);
    ck_assert_int_eq(run_tool("report --op no-such-op", &o), 2);
    ck_assert_ptr_nonnull(strstr(o, "unknown op"));
    free(o);
    if (!mf_backend_available(MF_BACKEND_CUDA)) {
        ck_assert_int_ne(run_tool("report --backend cuda", &o), 0);
        ck_assert_ptr_nonnull(strstr(o, "not available"));
        free(o);
    }
}
END_TEST

START_TEST(test_binary_json_matmul)
{
    /* `memfix report --json --op matmul` parses with exactly the keys and every
     * matmul row passes on the host backend (the matmul fix's definition of done). */
    if (mf_registry_find("matmul") == NULL) {
        fprintf(stderr, "matmul is not registered in this build: nothing to run\n");
        return;
    }
    char full[1024];
    snprintf(full, sizeof full, "'%s' report --json --op matmul --backend host", MF_TOOL_PATH);
    FILE *p = popen(full, "r"); /* stdout only: the JSON */
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (len + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    int st = pclose(p);
    int n_pass = 0;
    int n = check_report_json(buf, &n_pass);
    const mf_op_desc *op = mf_registry_find("matmul");
    ck_assert_int_eq(n, op->n_variants * mf_op_report_cases(op));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && n_pass == n, "%d of %d rows pass:\n%s", n_pass, n,
                  buf);
    free(buf);
}
END_TEST

/* The real cross-entropy report: the loss and the gradients
 * are compared under different tolerance rows, each row named with the share
 * of its budget (<= 1 on a pass), and the case names every option. */
START_TEST(test_binary_json_cross_entropy)
{
    if (mf_registry_find("cross_entropy") == NULL) {
        fprintf(stderr, "cross_entropy is not registered in this build: nothing to run\n");
        return;
    }
    char full[1024];
    snprintf(full, sizeof full, "'%s' report --json --op cross_entropy --backend host", MF_TOOL_PATH);
    FILE *p = popen(full, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (len + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    pclose(p);
    int n_pass = 0;
    const int n = check_report_json(buf, &n_pass);
    ck_assert_int_gt(n, 0);
    cJSON *arr = cJSON_Parse(buf);
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_GetArrayItem(arr, i);
        const char *shape = cJSON_GetObjectItemCaseSensitive(o, "shape")->valuestring;
        ck_assert_msg(strstr(shape, "seq_len=") && strstr(shape, "ignore_index=-100"), "case '%s'", shape);
        cJSON *q = cJSON_GetObjectItemCaseSensitive(o, "outputs");
        ck_assert_int_ge(cJSON_GetArraySize(q), 2);
        const char *loss_row = NULL, *grad_row = NULL;
        for (int k = 0; k < cJSON_GetArraySize(q); k++) {
            cJSON *e = cJSON_GetArrayItem(q, k);
            const char *name = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
            const char *row = cJSON_GetObjectItemCaseSensitive(e, "tolerance")->valuestring;
            ck_assert_msg(strncmp(row, "cross_entropy.", 14) == 0, "row '%s'", row);
            if (strcmp(name, "loss") == 0) loss_row = row;
            if (strcmp(name, "grad_hidden") == 0) grad_row = row;
            cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "budget_used");
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "pass")))
                ck_assert_msg(cJSON_IsNumber(b) && b->valuedouble >= 0 && b->valuedouble <= 1.0, "%s: %s",
                              name, shape);
        }
        ck_assert_msg(loss_row != NULL && grad_row != NULL && strcmp(loss_row, grad_row) != 0,
                      "loss and grad_hidden rows in '%s'", shape);
    }
    cJSON_Delete(arr);
    ck_assert_int_eq(n_pass, n);
    free(buf);
}
END_TEST

Suite *tool_suite(void)
{
    Suite *s = suite_create("tool");
    TCase *tc = tcase_create("in_process");
    tcase_add_checked_fixture(tc, use_test_ops, restore_ops);
    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_did_you_mean);
    tcase_add_test(tc, test_cuda_unavailable);
    tcase_add_test(tc, test_table_passing);
    tcase_add_test(tc, test_table_failing);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_empty_registry);
    suite_add_tcase(s, tc);

    tc = tcase_create("binary");
    tcase_add_test(tc, test_binary_help_and_errors);
    tcase_add_test(tc, test_binary_json_matmul);
    tcase_add_test(tc, test_binary_json_cross_entropy);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(tool_suite()); }
