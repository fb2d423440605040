/* memfix test harness for Check suites.
 *
 *   static void setup(void) ...  or use the provided fixture:
 *   TCase *tc = tcase_create("matmul");
 *   tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
 *   ... in a test: mf_context *ctx = mf_test_ctx();
 *   MF_ASSERT_CLOSE(got, ref, n, "matmul.f32");
 *   MF_ASSERT_STATUS(mf_matmul(NULL, ...), MF_ERR_NULL_POINTER);
 *   int main(void) { return mf_test_run(matmul_suite()); }
 *
 * Rules: CUDA must not be touched in main() or in unchecked fixtures (Check
 * forks each test; CUDA does not survive a fork after initialisation). The
 * backend comes from MF_TEST_BACKEND (host|cuda; default host), set by
 * mf_add_check_test for the .host/.cuda registrations. mf_test_run returns 77
 * (CTest: skipped) when the backend is cuda and no device is present. */
#ifndef MF_TEST_H
#define MF_TEST_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "memfix/check.h"
#include "memfix/memfix.h"
#include "memfix/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MF_TEST_SKIP 77

/* MF_TEST_BACKEND=host|cuda (default host). Anything else: host, with a
 * warning on stderr. */
mf_backend mf_test_backend(void);
/* The context made by mf_test_setup for the current test (NULL outside one). */
mf_context *mf_test_ctx(void);
/* Checked fixture: creates / destroys mf_test_ctx() on mf_test_backend(). */
void mf_test_setup(void);
void mf_test_teardown(void);

/* Runs the suite (CK_FORK unless CK_FORK=no in the environment) and frees it.
 * Returns MF_TEST_SKIP when the backend is cuda and no device is present
 * (probed in a forked child), 0 when every test passed, 1 otherwise. */
int mf_test_run(Suite *s);
/* A Check test case that needs an optional device path ('what' names it), which
 * 'available' (e.g. mf_cross_entropy_wgmma_available) reports on a context of
 * mf_test_backend(): tcase_create(name) tagged "needs_<name>". Before running the
 * suite, mf_test_run asks it (in a forked child, only when the run selects the case)
 * and, where the path is unavailable, prints "SKIP: test case ..." and leaves the case
 * out (CK_EXCLUDE_TAGS; Check 0.15 has no CK_EXCLUDE_CASES); when CK_RUN_CASE selected
 * that case it returns MF_TEST_SKIP. At most 8 per program. */
typedef mf_status (*mf_test_available_fn)(mf_context *ctx, int *available);
TCase *mf_test_tcase_needing(const char *name, mf_test_available_fn available, const char *what);

/* The comparison behind MF_ASSERT_CLOSE: looks up 'tol_name', compares with
 * mf_compare_f32, and on failure writes a dump file named after the test case,
 * the tolerance and the line into mf_test_dump_dir(). Returns 1 on pass; on
 * failure 0 with a readable report (verdict, worst index, dump path) in msg. */
int mf_test_check_close(const float *got, const float *ref, size_t n, const char *tol_name, const char *file,
                        int line, char *msg, size_t msg_cap);
/* $MF_TEST_DUMP_DIR, else the build tree's test-dumps/ (created on demand). */
const char *mf_test_dump_dir(void);

#define MF_ASSERT_CLOSE(got, ref, n, tol_name)                                                               \
    do {                                                                                                     \
        char mf_close_msg_[1024];                                                                            \
        int mf_close_ok_ = mf_test_check_close((got), (ref), (n), (tol_name), __FILE__, __LINE__,            \
                                               mf_close_msg_, sizeof mf_close_msg_);                         \
        ck_assert_msg(mf_close_ok_, "%s", mf_close_msg_);                                                    \
    } while (0)

/* Asserts the status; for a failure status also that mf_last_error() says why. */
#define MF_ASSERT_STATUS(expr, expected)                                                                     \
    do {                                                                                                     \
        mf_clear_error();                                                                                    \
        mf_status mf_as_got_ = (expr);                                                                       \
        mf_status mf_as_exp_ = (expected);                                                                   \
        ck_assert_msg(mf_as_got_ == mf_as_exp_, "%s returned %s, expected %s (last error: '%s')", #expr,     \
                      mf_status_name(mf_as_got_), mf_status_name(mf_as_exp_), mf_last_error());              \
        if (mf_as_exp_ != MF_OK)                                                                             \
            ck_assert_msg(mf_last_error()[0] != '\0', "%s returned %s with an empty error message", #expr,   \
                          mf_status_name(mf_as_got_));                                                       \
    } while (0)

/* Convenience: MF_ASSERT_OK(expr) == MF_ASSERT_STATUS(expr, MF_OK). */
#define MF_ASSERT_OK(expr) MF_ASSERT_STATUS(expr, MF_OK)

/* ---- seeded inputs and device round trips ---------------------------------------
 * Each helper fails the current test (ck_assert) when memory or a memfix call
 * fails; the returned buffers are malloc'd (host: free()) or mf_buffer_alloc'd
 * on ctx (device: mf_buffer_free()). bf16 NaN is 0x7fc0. */
/* n seeded uniform values in [lo, hi) of dt (F32 or BF16) into p. */
void mf_test_fill_uniform(mf_dtype dt, void *p, size_t n, uint64_t seed, float lo, float hi);
/* malloc(n * dtype size) filled by mf_test_fill_uniform. */
void *mf_test_make_input(mf_dtype dt, size_t n, uint64_t seed, float lo, float hi);
/* n NaNs of dt into p, so an unwritten output fails. */
void mf_test_fill_nan(mf_dtype dt, void *p, size_t n);
/* malloc'd host buffer of n fp32 NaNs. */
float *mf_test_nan_host(size_t n);
/* n values of dt at src widened to fp32 into dst. */
void mf_test_to_f32(mf_dtype dt, const void *src, float *dst, size_t n);
/* A device buffer of 'bytes' holding a copy of host. */
void *mf_test_dev_upload(mf_context *ctx, const void *host, size_t bytes);
/* A device buffer of n fp32 NaNs. */
float *mf_test_dev_nan(mf_context *ctx, size_t n);
/* The n + guard floats of device buffer d, downloaded into a malloc'd host
 * buffer; asserts that the guard floats after the first n are still NaN
 * ("<what>: write past the end at element i"). */
float *mf_test_dev_fetch(mf_context *ctx, const float *d, size_t n, size_t guard, const char *what);

/* ---- an op's built-in cases, through its descriptor (src/ops/<op>.c) ------------
 * The equivalence and memory suites run the cases that `memfix report` runs,
 * through the same testbed (src/testbed/): seeded inputs, the reference, NaN
 * pre-filled and guarded outputs, the variant, every output compared with its
 * tolerance row, the scratch peaks. */
/* Runs case c of variant v of op (its descriptor's run_case) and fails the
 * current test unless it ran, filled every field of the result and passed
 * (equivalent, and optimized scratch <= ceiling); the message names the op,
 * variant, case, dtype, shape, failure kind and reason. Returns the result
 * (peaks and ceiling for the memory suites). */
mf_case_result mf_test_op_case(const char *op, int variant, int case_index);
/* One TCase per variant of op, named after the variant (the REVERSE tcase of
 * mf_add_op_tests can name one), each a loop test over the op's built-in cases,
 * MF_TEST_CASES_PER_TEST cases per Check test (each forked test costs tens of
 * ms in host mode, far more than a small case): every case of a test runs, and
 * the test fails naming each failing case (index, dtype, shape, failure kind,
 * reason). MF_TEST_CASES_PER_TEST=1 in the environment gives one Check test
 * per case. Under ThreadSanitizer (MF_TEST_SANITIZER=thread, the tsan preset's
 * test environment) only the op's report cases run (mf_op_report_cases). Call
 * it while building the suite (reads the registry only; no CUDA). One op per
 * executable. */
#define MF_TEST_CASES_PER_TEST 8
void mf_test_add_op_cases(Suite *s, const char *op);

/* ---- fixtures (files under the source tree's fixtures/) ------------------------
 * Binary tensor format ("MFT1"), little-endian, written by
 * tests/support/mftensor.py (write_tensor(path, array)):
 *   char     magic[4] = "MFT1"
 *   uint32   dtype    (0 f32, 1 bf16 (raw uint16), 2 i32, 3 i64, 4 f64)
 *   uint32   ndim     (0..8)
 *   uint32   reserved (0)
 *   int64    dims[ndim]
 *   data     prod(dims) elements, row-major, little-endian
 */
typedef enum mf_fixture_dtype {
    MF_FIXTURE_F32 = 0,
    MF_FIXTURE_BF16 = 1,
    MF_FIXTURE_I32 = 2,
    MF_FIXTURE_I64 = 3,
    MF_FIXTURE_F64 = 4
} mf_fixture_dtype;

#define MF_FIXTURE_MAX_DIMS 8

typedef struct mf_fixture_tensor {
    mf_fixture_dtype dtype;
    int ndim;
    int64_t dims[MF_FIXTURE_MAX_DIMS];
    size_t count; /* product of dims (1 for ndim 0) */
    void *data;   /* malloc'd; free with mf_fixture_free */
} mf_fixture_tensor;

/* Absolute path of 'rel' under fixtures/ (MF_FIXTURES_DIR); a thread-local
 * buffer, valid until the next call. */
const char *mf_fixture_path(const char *rel);
/* Readers: return 1 on success; on failure 0 with a message on stderr (use
 * with ck_assert). 'path' is a full path (use mf_fixture_path). */
int mf_fixture_read(const char *path, mf_fixture_tensor *out);
void mf_fixture_free(mf_fixture_tensor *t);
/* Typed shortcuts: the file must hold that dtype; *data is malloc'd (free()). */
int mf_fixture_read_f32(const char *path, float **data, size_t *n);
int mf_fixture_read_f64(const char *path, double **data, size_t *n);
int mf_fixture_read_i32(const char *path, int32_t **data, size_t *n);
int mf_fixture_read_i64(const char *path, int64_t **data, size_t *n);
int mf_fixture_read_bf16(const char *path, uint16_t **data, size_t *n);
/* Whole file as bytes (for op-specific formats); *data is malloc'd. */
int mf_fixture_read_raw(const char *path, void **data, size_t *bytes);
/* Reads fixtures/<op>/<name>.<part>.mft into *t, failing the current test
 * ("cannot read fixture <op>/<name>.<part>.mft") when it cannot. */
void mf_test_read_fixture(const char *op, const char *name, const char *part, mf_fixture_tensor *t);

/* Under ThreadSanitizer only (MF_TEST_SANITIZER=thread, where mf_test_add_op_cases runs the report
 * cases alone): a TCase named after variant v that runs op's cases[0..n) too, for kernel paths the
 * report cases do not reach (cases must outlive the suite: a static array). Elsewhere nothing: the
 * sweep runs them. One call per executable. */
void mf_test_add_op_cases_tsan(Suite *s, const char *op, int v, const int *cases, int n);

/* ---- cross_entropy: a case kept out of a variant's sweep ---------------------------
 * mf_test_op_case without the case_applies check: for a case that the op's
 * case_applies keeps out of a variant's TCase in mf_test_add_op_cases because
 * it is too slow to share that test's registration, and that the suite runs
 * in a TCase (and ctest registration) of its own (cross_entropy's fused
 * V = 151,936 cases, fused_vocab). */
mf_case_result mf_test_op_case_unlisted(const char *op, int variant, int case_index);
/* The large shapes (test_<op>_equiv_large, label slow): case first + i of op's first + n cases, the
 * last n, kept out of every variant's sweep (checked), run as variant through the testbed; the case's
 * shape must start with shape (the descriptor and the test agree on which case is which). */
void mf_test_op_case_large(const char *op, int first, int n, int i, int variant, const char *shape);
/* ---- nsa: an op's built-in cases with a property of each result ----
 * mf_test_add_op_cases, where each case that passed is also given to check: 1 when the op's own
 * property of the result holds (e.g. a bf16 path measurably rounds), else 0 with the reason in msg.
 * The property is checked on the run the case already made (no second run). One op per executable. */
typedef int (*mf_test_case_check_fn)(int variant, int case_index, const mf_case_result *r, char *msg,
                                     size_t cap);
void mf_test_add_op_cases_checked(Suite *s, const char *op, mf_test_case_check_fn check);

#ifdef __cplusplus
}
#endif
#endif
