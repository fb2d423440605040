/* The harness's backend selection: registered as .host and .cuda. Without a
 * CUDA device the .cuda registration must be reported skipped (exit 77) and
 * must never reach a test body; with MF_TEST_BACKEND=host the fixture context
 * is a host context. */
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

Suite *harness_backend_suite(void)
{
    Suite *s = suite_create("harness_backend");
    TCase *tc = tcase_create("backend");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_fixture_context_matches_backend);
    tcase_add_test(tc, test_cuda_runs_only_with_device);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    int rc = mf_test_run(harness_backend_suite());
    /* Self-check of the skip contract, visible in the test log. */
    if (mf_test_backend() == MF_BACKEND_CUDA && !mf_backend_available(MF_BACKEND_CUDA) &&
        rc != MF_TEST_SKIP) {
        fprintf(stderr, "harness: cuda without a device returned %d, expected %d\n", rc, MF_TEST_SKIP);
        return 1;
    }
    return rc;
}
