/* Tracked scratch allocators: current, peak, baseline, allocation counts,
 * reset via mf_mem_begin, the counted cuBLAS workspace, bad input. */
#include "mf_test.h"
#include "mf_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

static void stats(mf_mem_space space, mf_mem_stats *st)
{
    MF_ASSERT_OK(mf_mem_stats_get(mf_test_ctx(), space, st));
}

START_TEST(test_workspace_is_counted_baseline)
{
    mf_context *ctx = mf_test_ctx();
    mf_mem_stats st;
    stats(MF_MEM_DEVICE, &st);
    /* the default cuBLAS workspace went through the device scratch allocator... */
    ck_assert_uint_eq(mf_context_cublas_workspace_bytes(ctx), MF_DEFAULT_CUBLAS_WORKSPACE);
    ck_assert_uint_eq(st.current, MF_DEFAULT_CUBLAS_WORKSPACE);
    /* ...and is part of the baseline, not of any measurement */
    ck_assert_uint_eq(st.baseline, MF_DEFAULT_CUBLAS_WORKSPACE);
    ck_assert_uint_eq(st.peak, MF_DEFAULT_CUBLAS_WORKSPACE);
    ck_assert_uint_eq(st.allocations, 0);
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, MF_MEM_DEVICE), 0);
    stats(MF_MEM_HOST, &st);
    ck_assert_uint_eq(st.current, 0);
}
END_TEST

static void check_accounting(mf_mem_space space)
{
    mf_context *ctx = mf_test_ctx();
    mf_mem_stats st0, st;
    stats(space, &st0);
    MF_ASSERT_OK(mf_mem_begin(ctx, space));
    void *a = NULL, *b = NULL, *c = NULL;
    MF_ASSERT_OK(mf_scratch_alloc(ctx, space, 1000, &a));
    MF_ASSERT_OK(mf_scratch_alloc(ctx, space, 3000, &b));
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    stats(space, &st);
    ck_assert_uint_eq(st.current, st0.current + 4000);
    ck_assert_uint_eq(st.peak, st0.current + 4000);
    ck_assert_uint_eq(st.allocations, 2);
    mf_scratch_free(ctx, space, b);
    MF_ASSERT_OK(mf_scratch_alloc(ctx, space, 500, &c));
    stats(space, &st);
    ck_assert_uint_eq(st.current, st0.current + 1500);
    ck_assert_uint_eq(st.peak, st0.current + 4000); /* the peak remembers */
    ck_assert_uint_eq(st.allocations, 3);
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, space), 4000);

    /* reset: new baseline at the live bytes */
    MF_ASSERT_OK(mf_mem_begin(ctx, space));
    stats(space, &st);
    ck_assert_uint_eq(st.baseline, st0.current + 1500);
    ck_assert_uint_eq(st.peak, st.baseline);
    ck_assert_uint_eq(st.allocations, 0);
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, space), 0);
    mf_scratch_free(ctx, space, a);
    mf_scratch_free(ctx, space, c);
    stats(space, &st);
    ck_assert_uint_eq(st.current, st0.current);
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, space), 0); /* frees never go below the baseline */

    /* zero bytes: OK and NULL, not counted */
    void *z = (void *)(uintptr_t)1;
    MF_ASSERT_OK(mf_scratch_alloc(ctx, space, 0, &z));
    ck_assert_ptr_null(z);
    stats(space, &st);
    ck_assert_uint_eq(st.allocations, 0);
    mf_scratch_free(ctx, space, NULL); /* no-op */
}

START_TEST(test_device_accounting) { check_accounting(MF_MEM_DEVICE); }
END_TEST
START_TEST(test_host_accounting) { check_accounting(MF_MEM_HOST); }
END_TEST

START_TEST(test_host_scratch_usable)
{
    mf_context *ctx = mf_test_ctx();
    double *p = NULL;
    void *v = NULL;
    MF_ASSERT_OK(mf_scratch_alloc(ctx, MF_MEM_HOST, 1024 * sizeof(double), &v));
    p = v;
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    for (int i = 0; i < 1024; i++) p[i] = i;
    ck_assert_double_eq(p[1023], 1023.0);
    /* leaked scratch is released by mf_context_destroy (ASan/LSan would tell) */
}
END_TEST

START_TEST(test_spaces_are_independent)
{
    mf_context *ctx = mf_test_ctx();
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    void *h = NULL;
    MF_ASSERT_OK(mf_scratch_alloc(ctx, MF_MEM_HOST, 4096, &h));
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, MF_MEM_HOST), 4096);
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, MF_MEM_DEVICE), 0);
    /* freeing into the wrong space is refused (and the bytes stay counted) */
    mf_clear_error();
    mf_scratch_free(ctx, MF_MEM_DEVICE, h);
    ck_assert_str_ne(mf_last_error(), "");
    mf_mem_stats st;
    stats(MF_MEM_HOST, &st);
    ck_assert_uint_eq(st.current, 4096);
    mf_scratch_free(ctx, MF_MEM_HOST, h);
    stats(MF_MEM_HOST, &st);
    ck_assert_uint_eq(st.current, 0);
}
END_TEST

START_TEST(test_buffers_are_not_scratch)
{
    mf_context *ctx = mf_test_ctx();
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    void *b = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 1 << 20, &b));
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, MF_MEM_DEVICE), 0);
    MF_ASSERT_OK(mf_buffer_free(ctx, b));
}
END_TEST

typedef struct {
    mf_context *ctx;
    int ok;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    a->ok = 1;
    for (int i = 0; i < 200; i++) {
        void *x = NULL;
        if (mf_scratch_alloc(a->ctx, MF_MEM_HOST, 64, &x) != MF_OK) a->ok = 0;
        mf_scratch_free(a->ctx, MF_MEM_HOST, x);
    }
    return NULL;
}

START_TEST(test_threads)
{
    mf_context *ctx = mf_test_ctx();
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    pthread_t t[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].ctx = ctx;
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        ck_assert(args[i].ok);
    }
    mf_mem_stats st;
    stats(MF_MEM_HOST, &st);
    ck_assert_uint_eq(st.current, 0);
    ck_assert_uint_eq(st.allocations, 800);
    ck_assert_uint_le(st.peak, 4 * 64);
    ck_assert_uint_ge(st.peak, 64);
}
END_TEST

START_TEST(test_memory_bad_input)
{
    mf_context *ctx = mf_test_ctx();
    mf_mem_stats st;
    void *p = (void *)(uintptr_t)1;
    MF_ASSERT_STATUS(mf_mem_begin(NULL, MF_MEM_HOST), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_mem_begin(ctx, (mf_mem_space)2), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_mem_begin(ctx, (mf_mem_space)-1), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_mem_stats_get(NULL, MF_MEM_HOST, &st), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_mem_stats_get(ctx, MF_MEM_HOST, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_mem_stats_get(ctx, (mf_mem_space)5, &st), MF_ERR_INVALID_ARGUMENT);
    ck_assert_uint_eq(mf_mem_peak_delta(NULL, MF_MEM_HOST), 0);
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, (mf_mem_space)5), 0);
    MF_ASSERT_STATUS(mf_scratch_alloc(NULL, MF_MEM_HOST, 8, &p), MF_ERR_NULL_POINTER);
    ck_assert_ptr_null(p);
    MF_ASSERT_STATUS(mf_scratch_alloc(ctx, MF_MEM_HOST, 8, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_scratch_alloc(ctx, (mf_mem_space)7, 8, &p), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_scratch_alloc(ctx, MF_MEM_HOST, SIZE_MAX, &p), MF_ERR_OUT_OF_MEMORY);
    MF_ASSERT_STATUS(mf_scratch_alloc(ctx, MF_MEM_DEVICE, SIZE_MAX, &p), MF_ERR_OUT_OF_MEMORY);
    /* failed allocations are not counted */
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_HOST, &st));
    ck_assert_uint_eq(st.current, 0);
    /* void frees: record an error, never crash */
    int local = 0;
    mf_clear_error();
    mf_scratch_free(ctx, MF_MEM_HOST, &local);
    ck_assert_str_ne(mf_last_error(), "");
    mf_clear_error();
    mf_scratch_free(NULL, MF_MEM_HOST, &local);
    ck_assert_str_ne(mf_last_error(), "");
    mf_clear_error();
    mf_scratch_free(ctx, (mf_mem_space)9, &local);
    ck_assert_str_ne(mf_last_error(), "");
}
END_TEST

Suite *core_memory_suite(void)
{
    Suite *s = suite_create("core_memory");
    TCase *tc = tcase_create("allocators");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_workspace_is_counted_baseline);
    tcase_add_test(tc, test_device_accounting);
    tcase_add_test(tc, test_host_accounting);
    tcase_add_test(tc, test_host_scratch_usable);
    tcase_add_test(tc, test_spaces_are_independent);
    tcase_add_test(tc, test_buffers_are_not_scratch);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_memory_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(core_memory_suite()); }
