/* Host execution mode's device size (cudahost/README.md, CUDAHOST_DEVICE_MEMORY).
 * Every host-mode allocation is real, garbage-filled host memory, so the device
 * must not claim more than the machine can back: by default cudahost reports 3/4
 * of what /proc/meminfo's MemAvailable (and the memory cgroup) allow, at most
 * 80 GiB; allocations past it fail with cudaErrorMemoryAllocation, which memfix
 * returns as MF_ERR_OUT_OF_MEMORY, instead of the process being killed.
 * Registered twice (tests/host_device.cmake): MF_TEST_DEVICE_SIZE=default (the
 * variable unset) and =64m (CUDAHOST_DEVICE_MEMORY=64m: allocations that each
 * fit but together exceed the device fail, and the process goes on working). */
#define _POSIX_C_SOURCE 200809L /* unsetenv */
#include "mf_test.h"

#include "mf_backend.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mode_64m(void)
{
    const char *m = getenv("MF_TEST_DEVICE_SIZE");
    return m != NULL && strcmp(m, "64m") == 0;
}

/* A /proc/meminfo field in bytes (0 when unreadable). */
static size_t meminfo(const char *field)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL) return 0;
    char line[256];
    size_t bytes = 0, len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0 && line[len] == ':') {
            bytes = (size_t)strtoull(line + len + 1, NULL, 10) * 1024;
            break;
        }
    fclose(f);
    return bytes;
}

START_TEST(test_default_size_is_backable)
{
    mf_context *ctx = mf_test_ctx();
    size_t free_b = 0, total = 0;
    MF_ASSERT_OK(mf_host_mem_get_info(&free_b, &total));
    const size_t avail = meminfo("MemAvailable"), phys = meminfo("MemTotal");
    ck_assert_msg(total > 0 && total <= ((size_t)80 << 30), "device size %zu", total);
    if (avail > 0) {
        /* 3/4 of MemAvailable at the first query: still below it now unless a
         * quarter of the machine's free memory vanished in between. */
        ck_assert_msg(total <= avail && total <= phys,
                      "host-mode device reports %zu bytes, the machine has %zu available (%zu in all)", total,
                      avail, phys);
    }
    ck_assert_msg(free_b <= total, "free %zu > total %zu", free_b, total);
    /* One byte more than the device: refused before any memory is touched. */
    void *p = NULL;
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, total + 1, &p), MF_ERR_OUT_OF_MEMORY);
    ck_assert_ptr_null(p);
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 1 << 20, &p));
    MF_ASSERT_OK(mf_buffer_memset(ctx, p, 0, 1 << 20));
    MF_ASSERT_OK(mf_buffer_free(ctx, p));
}
END_TEST

START_TEST(test_64m_together_exceed)
{
    mf_context *ctx = mf_test_ctx();
    size_t free_b = 0, total = 0;
    MF_ASSERT_OK(mf_host_mem_get_info(&free_b, &total));
    ck_assert_uint_eq(total, (size_t)64 << 20);
    const size_t chunk = (size_t)24 << 20; /* each fits; three do not (plus the cuBLAS workspace) */
    void *a = NULL, *b = NULL, *c = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, chunk, &a));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, chunk, &b));
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, chunk, &c), MF_ERR_OUT_OF_MEMORY);
    ck_assert_ptr_null(c);
    /* Not sticky: after a free the same request succeeds and the device works. */
    MF_ASSERT_OK(mf_buffer_free(ctx, b));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, chunk, &c));
    MF_ASSERT_OK(mf_buffer_memset(ctx, c, 0, chunk));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    MF_ASSERT_OK(mf_buffer_free(ctx, a));
    MF_ASSERT_OK(mf_buffer_free(ctx, c));
    mf_context *other = NULL;
    MF_ASSERT_OK(mf_context_create(&other, MF_BACKEND_HOST));
    mf_context_destroy(other);
}
END_TEST

static Suite *host_device_size_suite(void)
{
    Suite *s = suite_create("host_device_size");
    TCase *tc = tcase_create("device_size");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    if (mode_64m())
        tcase_add_test(tc, test_64m_together_exceed);
    else
        tcase_add_test(tc, test_default_size_is_backable);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!mode_64m()) unsetenv("CUDAHOST_DEVICE_MEMORY"); /* the default is under test */
    return mf_test_run(host_device_size_suite());
}
