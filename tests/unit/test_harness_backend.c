/* The harness's backend selection: registered as .host and .cuda. Without a
 * CUDA device the .cuda registration must be reported skipped (exit 77) and
 * must never reach a test body; with MF_TEST_BACKEND=host the fixture context
 * is a host context. Test cases made with mf_test_tcase_needing run only where
 * their path is available: needs_unavailable (a path no device has) is left out
 * with a SKIP line, and a run selecting only it (CK_RUN_CASE=needs_unavailable,
 * registration test_harness_needs.host) returns MF_TEST_SKIP, checked here. */
#include "mf_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_fixture_context_matches_backend)
{
    mf_context *ctx = mf_test_ctx();
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(mf_context_backend(ctx), mf_test_backend());
    /* the fixture's context is usable */
    void *p = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 64, &p));
    MF_ASSERT_OK(mf_buffer_free(ctx, p));
}
END_TEST

START_TEST(test_cuda_runs_only_with_device)
{
    if (mf_test_backend() == MF_BACKEND_CUDA)
        ck_assert_msg(mf_backend_available(MF_BACKEND_CUDA),
                      "a cuda test ran without a device: it must skip");
}
END_TEST

START_TEST(test_unavailable_case_never_runs)
{
    ck_abort_msg("a test case whose path is unavailable ran: mf_test_run must leave it out");
}
END_TEST

START_TEST(test_available_case_runs) { ck_assert_ptr_nonnull(mf_test_ctx()); }
END_TEST

static mf_status path_missing(mf_context *ctx, int *available)
{
    (void)ctx;
    *available = 0;
    return MF_OK;
}

static mf_status path_present(mf_context *ctx, int *available)
{
    (void)ctx;
    *available = 1;
    return MF_OK;
}

Suite *harness_backend_suite(void)
{
    Suite *s = suite_create("harness_backend");
    TCase *tc = tcase_create("backend");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_fixture_context_matches_backend);
    tcase_add_test(tc, test_cuda_runs_only_with_device);
    suite_add_tcase(s, tc);
    TCase *un = mf_test_tcase_needing("needs_unavailable", path_missing, "a path no device has");
    tcase_add_checked_fixture(un, mf_test_setup, mf_test_teardown);
    tcase_add_test(un, test_unavailable_case_never_runs);
    suite_add_tcase(s, un);
    TCase *av = mf_test_tcase_needing("needs_available", path_present, "a path every device has");
    tcase_add_checked_fixture(av, mf_test_setup, mf_test_teardown);
    tcase_add_test(av, test_available_case_runs);
    suite_add_tcase(s, av);
    return s;
}

int main(void)
{
    int rc = mf_test_run(harness_backend_suite());
    const char *run = getenv("CK_RUN_CASE");
    if (run != NULL && strcmp(run, "needs_unavailable") == 0 && mf_backend_available(mf_test_backend())) {
        if (rc != MF_TEST_SKIP) {
            fprintf(stderr, "harness: a run of an unavailable case only returned %d, expected %d\n", rc,
                    MF_TEST_SKIP);
            return 1;
        }
        printf("harness: the unavailable case was skipped (%d), as it must be\n", rc);
        return 0;
    }
    /* Self-check of the skip contract, visible in the test log. */
    if (mf_test_backend() == MF_BACKEND_CUDA && !mf_backend_available(MF_BACKEND_CUDA) &&
        rc != MF_TEST_SKIP) {
        fprintf(stderr, "harness: cuda without a device returned %d, expected %d\n", rc, MF_TEST_SKIP);
        return 1;
    }
    return rc;
}
