/* The harness itself: the comparison must REJECT what a broken kernel
 * produces (all zeros, an unwritten NaN-prefilled output, a NaN pattern
 * mismatch, one element out of tolerance, an NMSE violation), accept a
 * within-tolerance output, and write a dump on failure. Also: seeded fills,
 * fixture readers, MF_ASSERT_* macros and the cuda skip contract. */
#define _POSIX_C_SOURCE 200809L
#include "mf_test.h"
#include "mf_internal.h"
#include "testbed/testbed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 256

static const mf_tolerance tol = { "harness.test", 1e-5, 1e-4, 1e-8, "test row: strict fp32 bounds" };
static float ref[N], got[N];

static void setup_data(void)
{
    mf_fill_uniform_f32(ref, N, 42, -1.0f, 1.0f);
    memcpy(got, ref, sizeof got);
}

static mf_compare_result compare(const float *g, const float *r, const mf_tolerance *t)
{
    mf_compare_result res;
    ck_assert_int_eq(mf_compare_f32(g, r, N, t, NULL, &res), MF_OK);
    return res;
}

START_TEST(test_accepts_exact_and_within_tolerance)
{
    mf_compare_result r = compare(got, ref, &tol);
    ck_assert_msg(r.pass, "%s", r.reason);
    ck_assert_double_eq(r.max_abs_err, 0.0);
    /* every entry perturbed by half its budget: still passes, ~50% budget used */
    for (int i = 0; i < N; i++) got[i] = (float)(ref[i] + 0.5 * (tol.atol + tol.rtol * fabs(ref[i])));
    r = compare(got, ref, &tol);
    ck_assert_msg(r.pass, "%s", r.reason);
    ck_assert_uint_eq(r.n_bad, 0);
    ck_assert_double_gt(r.budget_used_pct, 40.0);
    ck_assert_double_lt(r.budget_used_pct, 60.0);
    ck_assert_double_gt(r.max_abs_err, 0.0);
    ck_assert_double_gt(r.max_rel_err, 0.0);
    ck_assert_ptr_nonnull(strstr(r.reason, "pass"));
}
END_TEST

START_TEST(test_rejects_all_zero_output)
{
    memset(got, 0, sizeof got);
    /* even with a tolerance so loose that each element would pass */
    mf_tolerance loose = { "loose", 10.0, 0.0, 1e9, "loose elementwise bound" };
    mf_compare_result r = compare(got, ref, &loose);
    ck_assert_msg(!r.pass, "all-zero output accepted: %s", r.reason);
    ck_assert_ptr_nonnull(strstr(r.reason, "all zeros"));
    r = compare(got, ref, &tol);
    ck_assert(!r.pass);
}
END_TEST

START_TEST(test_rejects_unwritten_output)
{
    mf_fill_nan_f32(got, N); /* the kernel never wrote its output */
    mf_compare_result r = compare(got, ref, &tol);
    ck_assert(!r.pass);
    ck_assert_uint_eq(r.nonfinite_mismatch, N);
    ck_assert_ptr_nonnull(strstr(r.reason, "never written"));
    /* a partly written output (last row missing) fails as well */
    memcpy(got, ref, sizeof got);
    mf_fill_nan_f32(got + N - 16, 16);
    r = compare(got, ref, &tol);
    ck_assert(!r.pass);
    ck_assert_uint_eq(r.nonfinite_mismatch, 16);
    ck_assert_uint_eq(r.worst_index, N - 16);
    ck_assert(isinf(r.max_abs_err));
}
END_TEST

START_TEST(test_nan_inf_pattern)
{
    /* the same NaN/Inf pattern in both passes */
    ref[3] = nanf("");
    got[3] = nanf("");
    ref[7] = INFINITY;
    got[7] = INFINITY;
    mf_compare_result r = compare(got, ref, &tol);
    ck_assert_msg(r.pass, "%s", r.reason);
    /* -Inf vs +Inf, finite vs Inf, NaN vs Inf: all mismatches */
    got[7] = -INFINITY;
    r = compare(got, ref, &tol);
    ck_assert(!r.pass);
    ck_assert_uint_eq(r.nonfinite_mismatch, 1);
    ck_assert_uint_eq(r.worst_index, 7);
    got[7] = 1e30f;
    ck_assert(!compare(got, ref, &tol).pass);
    got[7] = nanf("");
    ck_assert(!compare(got, ref, &tol).pass);
    /* a NaN where ref expects one is not enough: a finite got there fails */
    got[7] = INFINITY;
    got[3] = 0.0f;
    r = compare(got, ref, &tol);
    ck_assert(!r.pass);
    ck_assert_uint_eq(r.worst_index, 3);
}
END_TEST

/* A NaN where ref is finite: still the NaN prefill (never written) or one the kernel computed, told apart
 * by the prefill's payload (a bf16 prefill widened to f32 too). */
START_TEST(test_nan_written_or_never_written)
{
    float fill;
    mf_fill_nan_f32(&fill, 1);
    uint32_t bits;
    memcpy(&bits, &fill, sizeof bits);
    ck_assert_uint_eq(bits, MF_NAN_FILL_F32_BITS);
    got[5] = fill;
    mf_compare_result r = compare(got, ref, &tol);
    ck_assert(!r.pass);
    ck_assert_msg(strstr(r.reason, "got NaN (the prefill)") &&
                      strstr(r.reason, "1 never written, 0 written as NaN"),
                  "%s", r.reason);
    got[5] = mf_bf16_to_f32(MF_NAN_FILL_BF16_BITS);
    r = compare(got, ref, &tol);
    ck_assert_msg(strstr(r.reason, "1 never written, 0 written as NaN"), "%s", r.reason);
    volatile float zero = 0.0f;
    got[5] = zero / zero; /* the NaN a kernel's 0/0 computes */
    got[9] = fill;
    r = compare(got, ref, &tol);
    ck_assert_msg(strstr(r.reason, "got NaN (written)") &&
                      strstr(r.reason, "1 never written, 1 written as NaN"),
                  "%s", r.reason);
}
END_TEST

START_TEST(test_rejects_single_element)
{
    size_t k = 117;
    double bound = tol.atol + tol.rtol * fabs(ref[k]);
    got[k] = (float)(ref[k] + 1.5 * bound);
    mf_compare_result r = compare(got, ref, &tol);
    ck_assert_msg(!r.pass, "one element 1.5x over budget accepted: %s", r.reason);
    ck_assert_uint_eq(r.n_bad, 1);
    ck_assert_uint_eq(r.worst_index, k);
    ck_assert_float_eq(r.worst_got, got[k]);
    ck_assert_float_eq(r.worst_ref, ref[k]);
    ck_assert_double_gt(r.budget_used_pct, 140.0);
    ck_assert_double_lt(r.budget_used_pct, 160.0);
    ck_assert_double_eq_tol(r.max_abs_err, fabs((double)got[k] - ref[k]), 1e-12);
    ck_assert_ptr_nonnull(strstr(r.reason, "[117]"));
}
END_TEST

/* Axes name an element in the op's own terms: N = 256 = 2 x 4 x 4 x 8, element 117 is (b=0, h=3, row=2,
 * col=5); each failing criterion's reason names its element that way, and axes that are malformed or do
 * not hold n elements are refused. */
START_TEST(test_compare_axes)
{
    const mf_axes ax = { "b h row col", { 2, 4, 4, 8 } };
    char at[112];
    ck_assert_uint_eq(mf_axes_count(&ax), N);
    MF_ASSERT_OK(mf_axes_format(&ax, 117, at, sizeof at));
    ck_assert_str_eq(at, "(b=0, h=3, row=2, col=5)");
    MF_ASSERT_OK(mf_axes_format(&ax, N - 1, at, sizeof at));
    ck_assert_str_eq(at, "(b=1, h=3, row=3, col=7)");
    MF_ASSERT_OK(mf_axes_format(NULL, 117, at, sizeof at));
    ck_assert_str_eq(at, "[117]");
    const mf_axes scalar = { "", { 0 } };
    ck_assert_uint_eq(mf_axes_count(&scalar), 1);
    MF_ASSERT_OK(mf_axes_format(&scalar, 0, at, sizeof at));
    ck_assert_str_eq(at, "(scalar)");
    MF_ASSERT_STATUS(mf_axes_format(&ax, N, at, sizeof at), MF_ERR_INVALID_ARGUMENT);
    ck_assert_str_eq(at, "[256]");
    const mf_axes bad[4] = { { "b  h", { 2, 128 } },
                             { "b h", { 2, 0 } },
                             { "a b c d e f g", { 1, 1, 1, 1, 1, 1 } },
                             { "averyveryverylongname", { 256 } } };
    for (int i = 0; i < 4; i++) {
        ck_assert_uint_eq(mf_axes_count(&bad[i]), 0);
        MF_ASSERT_STATUS(mf_axes_format(&bad[i], 0, at, sizeof at), MF_ERR_INVALID_ARGUMENT);
    }
    mf_compare_result r;
    const mf_axes wrong = { "row col", { 16, 15 } };
    MF_ASSERT_STATUS(mf_compare_f32_axes(got, ref, N, &tol, &wrong, NULL, &r), MF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(mf_last_error(), "hold 240 elements, n is 256") != NULL, "%s", mf_last_error());

    got[117] = ref[117] + 1.0f; /* tolerance */
    MF_ASSERT_OK(mf_compare_f32_axes(got, ref, N, &tol, &ax, NULL, &r));
    ck_assert_int_eq(r.failure, MF_FAILURE_TOLERANCE);
    ck_assert_str_eq(r.worst_at, "(b=0, h=3, row=2, col=5)");
    ck_assert_msg(strstr(r.reason, "worst at (b=0, h=3, row=2, col=5): got") != NULL, "%s", r.reason);
    got[117] = NAN; /* NaN/Inf pattern, a NaN the kernel wrote */
    MF_ASSERT_OK(mf_compare_f32_axes(got, ref, N, &tol, &ax, NULL, &r));
    ck_assert_int_eq(r.failure, MF_FAILURE_NONFINITE);
    ck_assert_msg(strstr(r.reason, "first at (b=0, h=3, row=2, col=5): got NaN (written)") != NULL, "%s",
                  r.reason);
    memset(got, 0, sizeof got); /* all zero: the reference's first nonzero element */
    MF_ASSERT_OK(mf_compare_f32_axes(got, ref, N, &tol, &ax, NULL, &r));
    ck_assert_int_eq(r.failure, MF_FAILURE_ALL_ZERO);
    ck_assert_msg(strstr(r.reason, "the first at (b=0, h=0, row=0, col=0)") != NULL, "%s", r.reason);
    for (size_t i = 0; i < N; i++) got[i] = ref[i] * (1.0f + 2e-5f); /* within every bound, over the NMSE */
    const mf_tolerance tight = { "harness.nmse", 1.0, 1.0, 1e-12, "test row: the NMSE alone" };
    MF_ASSERT_OK(mf_compare_f32_axes(got, ref, N, &tight, &ax, NULL, &r));
    ck_assert_int_eq(r.failure, MF_FAILURE_NMSE);
    ck_assert_msg(strstr(r.reason, "worst at (b=") != NULL, "%s", r.reason);
}
END_TEST

START_TEST(test_rejects_nmse_violation)
{
    /* every element inside its elementwise bound, but the errors are all in
     * one direction and large relative to a tiny signal: NMSE catches it */
    mf_tolerance t = { "nmse.test", 1e-3, 0.0, 1e-6, "elementwise loose, nmse strict" };
    for (int i = 0; i < N; i++) {
        ref[i] = 1e-3f * (float)(i % 7 + 1);
        got[i] = ref[i] + 5e-4f;
    }
    mf_compare_result r = compare(got, ref, &t);
    ck_assert_uint_eq(r.n_bad, 0);
    ck_assert_msg(!r.pass, "NMSE violation accepted: %s", r.reason);
    ck_assert_double_gt(r.nmse, t.nmse);
    ck_assert_ptr_nonnull(strstr(r.reason, "normalized MSE"));
}
END_TEST

START_TEST(test_ref_all_zero)
{
    /* a zero reference: elementwise atol decides, NMSE is not applicable */
    memset(ref, 0, sizeof ref);
    memset(got, 0, sizeof got);
    ck_assert(compare(got, ref, &tol).pass);
    got[5] = 1e-6f;
    ck_assert(compare(got, ref, &tol).pass);
    got[5] = 1e-3f;
    ck_assert(!compare(got, ref, &tol).pass);
}
END_TEST

START_TEST(test_zero_tolerance_bound)
{
    mf_tolerance exact = { "exact", 0, 0, 0, "bit exact" };
    mf_compare_result r = compare(got, ref, &exact);
    ck_assert(r.pass);
    got[0] = nextafterf(ref[0], 10.0f);
    r = compare(got, ref, &exact);
    ck_assert(!r.pass);
    ck_assert(isinf(r.budget_used_pct));
}
END_TEST

static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static size_t count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    size_t n = 0;
    int c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

START_TEST(test_dump_written_on_failure)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/harness_dump_%ld.txt", mf_test_dump_dir(), (long)getpid());
    unlink(path);
    mf_compare_result r;
    /* a pass writes nothing */
    ck_assert_int_eq(mf_compare_f32(got, ref, N, &tol, path, &r), MF_OK);
    ck_assert(r.pass);
    ck_assert_int_ne(access(path, F_OK), 0);
    /* a failure writes tolerance, summary, and one line per index */
    got[9] += 1.0f;
    ck_assert_int_eq(mf_compare_f32(got, ref, N, &tol, path, &r), MF_OK);
    ck_assert(!r.pass);
    ck_assert_int_eq(access(path, F_OK), 0);
    ck_assert(file_contains(path, "harness.test"));
    ck_assert(file_contains(path, "atol=1e-05"));
    ck_assert(file_contains(path, "verdict: FAIL"));
    ck_assert(file_contains(path, "worst index 9"));
    size_t lines = count_lines(path);
    ck_assert_uint_ge(lines, N);
    unlink(path);
    /* an unwritable dump path does not change the verdict or the status */
    ck_assert_int_eq(mf_compare_f32(got, ref, N, &tol, "/nonexistent-dir/x/y.txt", &r), MF_OK);
    ck_assert(!r.pass);
    ck_assert_ptr_nonnull(strstr(r.reason, "dump"));
}
END_TEST

START_TEST(test_assert_close_macro)
{
    /* MF_ASSERT_CLOSE's engine: pass, and failure with a report and a dump */
    char msg[1024];
    ck_assert(mf_test_check_close(got, ref, N, "selftest.f32", __FILE__, __LINE__, msg, sizeof msg));
    MF_ASSERT_CLOSE(got, ref, N, "selftest.f32");
    mf_fill_nan_f32(got, N);
    ck_assert(!mf_test_check_close(got, ref, N, "selftest.f32", __FILE__, 4242, msg, sizeof msg));
    ck_assert_ptr_nonnull(strstr(msg, "selftest.f32"));
    char *dump = strstr(msg, "dump: ");
    ck_assert_ptr_nonnull(dump);
    dump += 6;
    ck_assert_msg(access(dump, F_OK) == 0, "dump %s missing", dump);
    ck_assert_ptr_nonnull(strstr(dump, "L4242"));
    unlink(dump);
    /* an unknown tolerance name is a failure, never a silent pass */
    memcpy(got, ref, sizeof got);
    ck_assert(!mf_test_check_close(got, ref, N, "no.such.tolerance", __FILE__, __LINE__, msg, sizeof msg));
    ck_assert_ptr_nonnull(strstr(msg, "unknown tolerance"));
}
END_TEST

START_TEST(test_compare_bad_input)
{
    mf_compare_result r;
    MF_ASSERT_STATUS(mf_compare_f32(NULL, ref, N, &tol, NULL, &r), MF_ERR_NULL_POINTER);
    ck_assert(!r.pass);
    MF_ASSERT_STATUS(mf_compare_f32(got, NULL, N, &tol, NULL, &r), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_compare_f32(got, ref, N, NULL, NULL, &r), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_compare_f32(got, ref, N, &tol, NULL, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_compare_f32(got, ref, 0, &tol, NULL, &r), MF_ERR_INVALID_SIZE);
    mf_tolerance bad = tol;
    bad.atol = -1;
    MF_ASSERT_STATUS(mf_compare_f32(got, ref, N, &bad, NULL, &r), MF_ERR_INVALID_ARGUMENT);
    bad = tol;
    bad.rtol = NAN;
    MF_ASSERT_STATUS(mf_compare_f32(got, ref, N, &bad, NULL, &r), MF_ERR_INVALID_ARGUMENT);
    bad = tol;
    bad.nmse = INFINITY;
    MF_ASSERT_STATUS(mf_compare_f32(got, ref, N, &bad, NULL, &r), MF_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_assert_status_macro)
{
    MF_ASSERT_STATUS(mf_context_synchronize(NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_OK(MF_OK);
}
END_TEST

/* ---- seeded fills -------------------------------------------------------------------- */
START_TEST(test_fill_uniform)
{
    enum { M = 100000 };
    float *a = malloc(M * sizeof *a), *b = malloc(M * sizeof *b);
    mf_fill_uniform_f32(a, M, 7, -2.0f, 3.0f);
    mf_fill_uniform_f32(b, M, 7, -2.0f, 3.0f);
    ck_assert_mem_eq(a, b, M * sizeof *a); /* deterministic */
    double sum = 0;
    size_t distinct_hint = 0;
    for (size_t i = 0; i < M; i++) {
        ck_assert(a[i] >= -2.0f && a[i] < 3.0f);
        ck_assert_msg(fabsf(a[i]) >= 1e-3f * 5.0f, "near-zero %g at %zu", a[i], i);
        sum += a[i];
        distinct_hint += i > 0 && a[i] != a[i - 1];
    }
    ck_assert_double_eq_tol(sum / M, 0.5, 0.05); /* uniform mean */
    ck_assert_uint_gt(distinct_hint, M - 100);
    mf_fill_uniform_f32(b, M, 8, -2.0f, 3.0f);
    ck_assert(memcmp(a, b, M * sizeof *a) != 0); /* the seed matters */
    /* cross-platform pin: the first values of seed 1 in [0, 1) */
    mf_fill_uniform_f32(a, 4, 1, 0.0f, 1.0f);
    const uint32_t pinned[4] = { 0x3f33f2afu, 0x3f053b55u, 0x3f12f897u, 0x3ec85c38u };
    for (int i = 0; i < 4; i++) {
        uint32_t u;
        memcpy(&u, &a[i], 4);
        ck_assert_msg(u == pinned[i], "seed 1 value %d is 0x%08x, pinned 0x%08x: fills changed", i, u,
                      pinned[i]);
    }
    /* all-positive and all-negative ranges */
    mf_fill_uniform_f32(a, 1000, 3, 0.0f, 1.0f);
    for (int i = 0; i < 1000; i++) ck_assert(a[i] >= 1e-3f && a[i] < 1.0f);
    mf_fill_uniform_f32(a, 1000, 3, -1.0f, 0.0f);
    for (int i = 0; i < 1000; i++) ck_assert(a[i] <= -1e-3f && a[i] >= -1.0f);
    /* bf16 variant: the same draws rounded */
    uint16_t *h = malloc(1000 * sizeof *h);
    mf_fill_uniform_f32(a, 1000, 11, -1.0f, 1.0f);
    mf_fill_uniform_bf16(h, 1000, 11, -1.0f, 1.0f);
    for (int i = 0; i < 1000; i++) {
        ck_assert_uint_eq(h[i], mf_f32_to_bf16(a[i]));
        ck_assert_float_ne(mf_bf16_to_f32(h[i]), 0.0f);
    }
    /* bad ranges write nothing and record an error */
    mf_fill_nan_f32(a, 4);
    mf_clear_error();
    mf_fill_uniform_f32(a, 4, 1, 1.0f, 1.0f);
    ck_assert(isnan(a[0]));
    ck_assert_str_ne(mf_last_error(), "");
    mf_fill_uniform_f32(a, 4, 1, 0.0f, INFINITY);
    ck_assert(isnan(a[0]));
    mf_fill_uniform_f32(NULL, 4, 1, 0.0f, 1.0f);
    mf_fill_uniform_bf16(NULL, 4, 1, 0.0f, 1.0f);
    mf_fill_nan_f32(NULL, 4);
    free(a);
    free(b);
    free(h);
}
END_TEST

START_TEST(test_fill_nan)
{
    float x[17];
    mf_fill_nan_f32(x, 17);
    for (int i = 0; i < 17; i++) ck_assert(isnan(x[i]));
}
END_TEST

/* ---- fixtures -------------------------------------------------------------------------- */
static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

START_TEST(test_fixture_reader)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fixture_%ld.bin", mf_test_dump_dir(), (long)getpid());
    /* MFT1, f32, 2 dims (2, 3) */
    unsigned char buf[16 + 16 + 24];
    memcpy(buf, "MFT1", 4);
    uint32_t hdr[3] = { 0, 2, 0 };
    memcpy(buf + 4, hdr, 12); /* the test machines are little-endian */
    int64_t dims[2] = { 2, 3 };
    memcpy(buf + 16, dims, 16);
    float vals[6] = { 1, 2, 3, 4, 5, 6.5f };
    memcpy(buf + 32, vals, 24);
    write_bytes(path, buf, sizeof buf);

    float *data = NULL;
    size_t n = 0;
    ck_assert(mf_fixture_read_f32(path, &data, &n));
    ck_assert_uint_eq(n, 6);
    ck_assert_float_eq(data[5], 6.5f);
    free(data);
    mf_fixture_tensor t;
    ck_assert(mf_fixture_read(path, &t));
    ck_assert_int_eq(t.ndim, 2);
    ck_assert_int_eq(t.dims[1], 3);
    ck_assert_int_eq(t.dtype, MF_FIXTURE_F32);
    mf_fixture_free(&t);
    /* wrong dtype, truncated data, bad magic, missing file: 0, no crash */
    int32_t *ints = NULL;
    ck_assert(!mf_fixture_read_i32(path, &ints, &n));
    write_bytes(path, buf, sizeof buf - 4);
    ck_assert(!mf_fixture_read_f32(path, &data, &n));
    buf[0] = 'X';
    write_bytes(path, buf, sizeof buf);
    ck_assert(!mf_fixture_read_f32(path, &data, &n));
    unlink(path);
    ck_assert(!mf_fixture_read_f32(path, &data, &n));
    ck_assert(!mf_fixture_read_f32(NULL, &data, &n));
    /* paths */
    const char *p = mf_fixture_path("matmul/a.bin");
    ck_assert_ptr_nonnull(strstr(p, "fixtures/matmul/a.bin"));
    ck_assert_int_eq(p[0], '/');
}
END_TEST

/* ---- the cuda skip contract --------------------------------------------------------------- */
static int test_body_ran;
START_TEST(test_never_runs) { test_body_ran = 1; }
END_TEST

START_TEST(test_cuda_returns_77_without_device)
{
    if (mf_backend_available(MF_BACKEND_CUDA)) return; /* GPU machine: the contract is moot */
    setenv("MF_TEST_BACKEND", "cuda", 1);
    Suite *s = suite_create("inner");
    TCase *tc = tcase_create("inner");
    tcase_add_test(tc, test_never_runs);
    suite_add_tcase(s, tc);
    ck_assert_int_eq(mf_test_run(s), 77);
    ck_assert_int_eq(test_body_ran, 0);
    setenv("MF_TEST_BACKEND", "host", 1);
    ck_assert_int_eq(mf_test_backend(), MF_BACKEND_HOST);
    setenv("MF_TEST_BACKEND", "bogus", 1);
    ck_assert_int_eq(mf_test_backend(), MF_BACKEND_HOST);
    unsetenv("MF_TEST_BACKEND");
    ck_assert_int_eq(mf_test_backend(), MF_BACKEND_HOST);
    ck_assert_int_eq(mf_test_run(NULL), 1);
}
END_TEST

/* The testbed's guard bands (src/testbed/case.c): an input is followed by NaNs
 * on the device, and a value written past the end of an output fails the case
 * (MF_FAILURE_NONFINITE, naming the element), while the same output without
 * the stray write passes. */
#define TB_N 16
START_TEST(test_testbed_guard_bands)
{
    mf_context *ctx = mf_test_ctx();
    mf_tb_tensor t[2] = {
        { "x", MF_TB_IN, TB_N, -1.0f, 1.0f, NULL, NULL, NULL, NULL, { 0 } },
        { "y", MF_TB_OUT, TB_N, 0.0f, 0.0f, "selftest", NULL, NULL, NULL, { "row col", { 4, 4 } } }
    };
    MF_ASSERT_OK(mf_tb_tensors_make(t, 2, MF_DTYPE_F32, 5));
    memcpy(t[1].host, t[0].host, TB_N * sizeof(float)); /* the "reference": y = x */
    MF_ASSERT_OK(mf_tb_tensors_upload(ctx, t, 2, MF_DTYPE_F32));
    float in[TB_N + MF_TB_GUARD], y[TB_N + 1];
    MF_ASSERT_OK(mf_buffer_download(ctx, in, t[0].dev, sizeof in));
    for (int i = TB_N; i < TB_N + MF_TB_GUARD; i++)
        ck_assert_msg(isnan(in[i]), "input guard %d is %g", i, in[i]);
    memcpy(y, t[0].host, TB_N * sizeof(float));
    y[TB_N] = 0.0f; /* one element past the end */
    MF_ASSERT_OK(mf_buffer_upload(ctx, t[1].dev, y, sizeof y));
    mf_case_result r;
    memset(&r, 0, sizeof r);
    int pass = 1;
    MF_ASSERT_OK(mf_tb_tensors_compare(ctx, t, 2, MF_DTYPE_F32, &r, &pass));
    ck_assert_int_eq(pass, 0);
    ck_assert_int_eq(r.failure, MF_FAILURE_NONFINITE);
    ck_assert_msg(strstr(r.message, "y: write past the end: element 1 after its last one (row=3, col=3)") !=
                      NULL,
                  "%s", r.message);
    y[TB_N] = NAN; /* the guard restored: the same output passes */
    MF_ASSERT_OK(mf_buffer_upload(ctx, t[1].dev, y, sizeof y));
    memset(&r, 0, sizeof r);
    pass = 1;
    MF_ASSERT_OK(mf_tb_tensors_compare(ctx, t, 2, MF_DTYPE_F32, &r, &pass));
    ck_assert_msg(pass == 1, "%s", r.message);
    mf_tb_tensors_free(ctx, t, 2);
}
END_TEST

Suite *harness_suite(void)
{
    Suite *s = suite_create("harness");
    TCase *tc = tcase_create("compare");
    tcase_add_checked_fixture(tc, setup_data, NULL);
    tcase_add_test(tc, test_accepts_exact_and_within_tolerance);
    tcase_add_test(tc, test_rejects_all_zero_output);
    tcase_add_test(tc, test_rejects_unwritten_output);
    tcase_add_test(tc, test_nan_inf_pattern);
    tcase_add_test(tc, test_nan_written_or_never_written);
    tcase_add_test(tc, test_rejects_single_element);
    tcase_add_test(tc, test_compare_axes);
    tcase_add_test(tc, test_rejects_nmse_violation);
    tcase_add_test(tc, test_ref_all_zero);
    tcase_add_test(tc, test_zero_tolerance_bound);
    tcase_add_test(tc, test_dump_written_on_failure);
    tcase_add_test(tc, test_assert_close_macro);
    tcase_add_test(tc, test_compare_bad_input);
    tcase_add_test(tc, test_assert_status_macro);
    suite_add_tcase(s, tc);

    tc = tcase_create("fills");
    tcase_add_test(tc, test_fill_uniform);
    tcase_add_test(tc, test_fill_nan);
    suite_add_tcase(s, tc);

    tc = tcase_create("fixtures");
    tcase_add_test(tc, test_fixture_reader);
    suite_add_tcase(s, tc);

    tc = tcase_create("testbed");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_testbed_guard_bands);
    suite_add_tcase(s, tc);

    tc = tcase_create("skip");
    tcase_add_test(tc, test_cuda_returns_77_without_device);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(harness_suite()); }
