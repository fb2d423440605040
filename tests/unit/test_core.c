/* Core unit tests: status names and error messages, size helpers, dtypes and
 * bf16, contexts, buffers, and bad input to every core public function. */
#define _POSIX_C_SOURCE 200809L
#include "mf_test.h"
#include "mf_internal.h"
#include "memfix/registry.h"

#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* ---- status and errors ---------------------------------------------------------- */
START_TEST(test_status_names)
{
    ck_assert_str_eq(mf_status_name(MF_OK), "MF_OK");
    ck_assert_str_eq(mf_status_name(MF_ERR_NULL_POINTER), "MF_ERR_NULL_POINTER");
    ck_assert_str_eq(mf_status_name(MF_ERR_OVERFLOW), "MF_ERR_OVERFLOW");
    ck_assert_str_eq(mf_status_name(MF_ERR_BACKEND_UNAVAILABLE), "MF_ERR_BACKEND_UNAVAILABLE");
    ck_assert_str_eq(mf_status_name(MF_ERR_INTERNAL), "MF_ERR_INTERNAL");
    /* every value has a distinct name; out-of-range values do not crash */
    for (int a = MF_OK; a <= MF_ERR_INTERNAL; a++)
        for (int b = a + 1; b <= MF_ERR_INTERNAL; b++)
            ck_assert_str_ne(mf_status_name((mf_status)a), mf_status_name((mf_status)b));
    ck_assert_ptr_nonnull(mf_status_name((mf_status)999));
}
END_TEST

static mf_status failing_function(void) { MF_FAIL(MF_ERR_INVALID_SIZE, "n must be > 0 (got %d)", -3); }

START_TEST(test_error_message_format)
{
    mf_clear_error();
    ck_assert_str_eq(mf_last_error(), "");
    ck_assert_int_eq(failing_function(), MF_ERR_INVALID_SIZE);
    const char *m = mf_last_error();
    /* "failing_function: n must be > 0 (got -3) [tests/unit/test_core.c:NN]" */
    ck_assert_msg(strncmp(m, "failing_function: n must be > 0 (got -3) [", 42) == 0, "got '%s'", m);
    ck_assert_msg(strstr(m, "test_core.c:") != NULL, "no file:line in '%s'", m);
    ck_assert_msg(strstr(m, "[/") == NULL && m[strlen(m) - 1] == ']', "absolute path or bad tail in '%s'", m);
    mf_clear_error();
    ck_assert_str_eq(mf_last_error(), "");
}
END_TEST

START_TEST(test_error_long_message_truncated)
{
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mf_set_error(MF_ERR_INTERNAL, "f", "src/core/x.c", 1, "%s", big);
    ck_assert_uint_gt(strlen(mf_last_error()), 100);
    ck_assert_uint_lt(strlen(mf_last_error()), 2000);
    const char *m = mf_last_error();
    const char *tail = "[src/core/x.c:1]";
    ck_assert_msg(strcmp(m + strlen(m) - strlen(tail), tail) == 0, "location lost: ...%s",
                  m + strlen(m) - 30);
    ck_assert_msg(strncmp(m, "f: xxx", 6) == 0, "%.20s", m);
    /* an empty reason falls back to the status name */
    mf_set_error(MF_ERR_BUDGET, "g", "/abs/path/reference/y.c", 7, "%s", "");
    ck_assert_str_eq(mf_last_error(), "g: MF_ERR_BUDGET [reference/y.c:7]");
}
END_TEST

/* ---- sizes -------------------------------------------------------------------------- */
START_TEST(test_size_helpers)
{
    size_t r = 0;
    ck_assert_int_eq(mf_size_mul(131072, 151936, &r), 1);
    ck_assert_uint_eq(r, (size_t)131072 * 151936); /* > 2^31: size_t math */
    ck_assert_int_eq(mf_size_mul(SIZE_MAX / 2 + 1, 2, &r), 0);
    ck_assert_uint_eq(r, SIZE_MAX);
    ck_assert_int_eq(mf_size_mul(0, SIZE_MAX, &r), 1);
    ck_assert_uint_eq(r, 0);
    ck_assert_int_eq(mf_size_add(SIZE_MAX, 1, &r), 0);
    ck_assert_uint_eq(r, SIZE_MAX);
    ck_assert_int_eq(mf_size_add(2, 3, &r), 1);
    ck_assert_uint_eq(r, 5);
    ck_assert_int_eq(mf_size_mul(2, 3, NULL), 1); /* NULL out tolerated */
}
END_TEST

START_TEST(test_dims_product)
{
    size_t r = 0;
    MF_ASSERT_OK(mf_dims_product("t", "logits", &r, 2, (int64_t)131072, (int64_t)151936));
    ck_assert_uint_eq(r, (size_t)131072 * 151936);
    MF_ASSERT_STATUS(mf_dims_product("t", "x", &r, 3, (int64_t)4, (int64_t)0, (int64_t)5),
                     MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "dim 1"));
    MF_ASSERT_STATUS(mf_dims_product("t", "x", &r, 2, (int64_t)-1, (int64_t)5), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_dims_product("t", "x", &r, 3, (int64_t)1 << 40, (int64_t)1 << 40, (int64_t)2),
                     MF_ERR_OVERFLOW);
    ck_assert_uint_eq(r, 0);
    /* a non-positive dim after the overflow is still reported as a size error */
    MF_ASSERT_STATUS(mf_dims_product("t", "x", &r, 3, (int64_t)1 << 40, (int64_t)1 << 40, (int64_t)-2),
                     MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_dims_product("t", "x", NULL, 1, (int64_t)1), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_dims_product("t", "x", &r, 0), MF_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ---- dtypes -------------------------------------------------------------------------- */
static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

START_TEST(test_dtypes)
{
    ck_assert_str_eq(mf_dtype_name(MF_DTYPE_F32), "f32");
    ck_assert_str_eq(mf_dtype_name(MF_DTYPE_BF16), "bf16");
    ck_assert_ptr_null(mf_dtype_name((mf_dtype)7));
    ck_assert_uint_eq(mf_dtype_size(MF_DTYPE_F32), 4);
    ck_assert_uint_eq(mf_dtype_size(MF_DTYPE_BF16), 2);
    ck_assert_uint_eq(mf_dtype_size((mf_dtype)-1), 0);
}
END_TEST

START_TEST(test_bf16_conversion)
{
    ck_assert_uint_eq(mf_f32_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(mf_f32_to_bf16(-2.0f), 0xc000);
    ck_assert_uint_eq(mf_f32_to_bf16(0.0f), 0x0000);
    ck_assert_uint_eq(mf_f32_to_bf16(-0.0f), 0x8000);
    /* round to nearest, ties to even */
    ck_assert_uint_eq(mf_f32_to_bf16(from_bits(0x3f808000)), 0x3f80); /* tie, even stays */
    ck_assert_uint_eq(mf_f32_to_bf16(from_bits(0x3f818000)), 0x3f82); /* tie, odd rounds up */
    ck_assert_uint_eq(mf_f32_to_bf16(from_bits(0x3f808001)), 0x3f81); /* above half */
    ck_assert_uint_eq(mf_f32_to_bf16(from_bits(0x3f807fff)), 0x3f80); /* below half */
    /* Inf stays Inf; the largest finite floats round up to Inf */
    ck_assert_uint_eq(mf_f32_to_bf16(INFINITY), 0x7f80);
    ck_assert_uint_eq(mf_f32_to_bf16(-INFINITY), 0xff80);
    ck_assert_uint_eq(mf_f32_to_bf16(from_bits(0x7f7fffff)), 0x7f80);
    /* NaN stays NaN (including NaNs whose payload is only in the low bits) */
    uint16_t n1 = mf_f32_to_bf16(from_bits(0x7f800001));
    ck_assert_msg((n1 & 0x7f80) == 0x7f80 && (n1 & 0x7f) != 0, "0x%04x is not NaN", n1);
    ck_assert(isnan(mf_bf16_to_f32(mf_f32_to_bf16(nanf("")))));
    ck_assert(isnan(mf_bf16_to_f32(mf_f32_to_bf16(-nanf("")))));
    /* exact round trip of representable values; widening is exact */
    for (uint32_t h = 0; h < 0x10000; h += 7) {
        float f = mf_bf16_to_f32((uint16_t)h);
        ck_assert_uint_eq(bits(f), h << 16);
        if (!isnan(f)) ck_assert_uint_eq(mf_f32_to_bf16(f), h);
    }
    /* arrays */
    float in[3] = { 1.0f, 3.14159f, -7.5f }, back[3];
    uint16_t mid[3];
    mf_f32_to_bf16_array(in, mid, 3);
    mf_bf16_to_f32_array(mid, back, 3);
    ck_assert_float_eq(back[0], 1.0f);
    ck_assert_float_eq_tol(back[1], 3.14159f, 0.0157f);
    ck_assert_float_eq(back[2], -7.5f);
    mf_bf16_to_f32_array(NULL, back, 3); /* NULL is a no-op, not a crash */
    mf_f32_to_bf16_array(in, NULL, 3);
}
END_TEST

/* ---- backends and contexts -------------------------------------------------------------- */
START_TEST(test_backend_names)
{
    ck_assert_str_eq(mf_backend_name(MF_BACKEND_AUTO), "auto");
    ck_assert_str_eq(mf_backend_name(MF_BACKEND_HOST), "host");
    ck_assert_str_eq(mf_backend_name(MF_BACKEND_CUDA), "cuda");
    ck_assert_ptr_nonnull(mf_backend_name((mf_backend)9));
    ck_assert_int_eq(mf_backend_available(MF_BACKEND_HOST), 1);
    ck_assert_int_eq(mf_backend_available(MF_BACKEND_AUTO), 1);
    ck_assert_int_eq(mf_backend_available((mf_backend)9), 0);
}
END_TEST

START_TEST(test_context_host)
{
    mf_context *ctx = NULL;
    MF_ASSERT_OK(mf_context_create(&ctx, MF_BACKEND_HOST));
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(mf_context_backend(ctx), MF_BACKEND_HOST);
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    mf_context_destroy(ctx);
    mf_context_destroy(NULL); /* no-op */
}
END_TEST

START_TEST(test_context_auto)
{
    mf_context *ctx = NULL;
    MF_ASSERT_OK(mf_context_create(&ctx, MF_BACKEND_AUTO));
    mf_backend b = mf_context_backend(ctx);
    ck_assert(b == MF_BACKEND_HOST || b == MF_BACKEND_CUDA);
    ck_assert_int_eq(b == MF_BACKEND_CUDA, mf_backend_available(MF_BACKEND_CUDA));
    mf_context_destroy(ctx);
}
END_TEST

START_TEST(test_context_cuda_without_device)
{
    if (mf_backend_available(MF_BACKEND_CUDA)) return; /* a GPU machine: nothing to show here */
    mf_context *ctx = (mf_context *)(uintptr_t)1;
    MF_ASSERT_STATUS(mf_context_create(&ctx, MF_BACKEND_CUDA), MF_ERR_BACKEND_UNAVAILABLE);
    ck_assert_ptr_null(ctx);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "cuda"));
}
END_TEST

START_TEST(test_disable_cuda_env)
{
    /* Each Check test is a fresh fork whose probe has not run yet (main()
     * only probes for .cuda runs): MF_DISABLE_CUDA=1 makes CUDA unavailable
     * and AUTO resolve to host, even on a GPU machine. */
    if (mf_test_backend() == MF_BACKEND_CUDA) return;
    setenv("MF_DISABLE_CUDA", "1", 1);
    ck_assert_int_eq(mf_backend_available(MF_BACKEND_CUDA), 0);
    mf_context *ctx = NULL;
    MF_ASSERT_OK(mf_context_create(&ctx, MF_BACKEND_AUTO));
    ck_assert_int_eq(mf_context_backend(ctx), MF_BACKEND_HOST);
    mf_context_destroy(ctx);
    MF_ASSERT_STATUS(mf_context_create(&ctx, MF_BACKEND_CUDA), MF_ERR_BACKEND_UNAVAILABLE);
}
END_TEST

/* CTest's resource allocation, as ctest --resource-spec-file gives it to a test with
 * RESOURCE_GROUPS "gpus:1", becomes the process's CUDA_VISIBLE_DEVICES. */
START_TEST(test_ctest_gpu)
{
    static const char *const vars[] = { "CTEST_RESOURCE_GROUP_COUNT",  "CTEST_RESOURCE_GROUP_0",
                                        "CTEST_RESOURCE_GROUP_0_GPUS", "CTEST_RESOURCE_GROUP_1",
                                        "CTEST_RESOURCE_GROUP_1_GPUS", "CUDA_VISIBLE_DEVICES" };
    char *saved[6];
    for (int i = 0; i < 6; i++) saved[i] = getenv(vars[i]) ? strdup(getenv(vars[i])) : NULL;
    for (int i = 0; i < 6; i++) unsetenv(vars[i]);
    /* not under CTest's allocation: nothing changes */
    ck_assert_int_eq(mf_use_ctest_gpu(), 0);
    ck_assert_ptr_null(getenv("CUDA_VISIBLE_DEVICES"));
    /* one group, a GPU */
    setenv("CTEST_RESOURCE_GROUP_COUNT", "1", 1);
    setenv("CTEST_RESOURCE_GROUP_0", "gpus", 1);
    setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:3,slots:1", 1);
    ck_assert_int_eq(mf_use_ctest_gpu(), 1);
    ck_assert_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "3");
    /* the id as the spec names it: a UUID too */
    setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:GPU-8f2c1e0a-77b1,slots:1", 1);
    ck_assert_int_eq(mf_use_ctest_gpu(), 1);
    ck_assert_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "GPU-8f2c1e0a-77b1");
    /* the "gpus" group among others */
    setenv("CTEST_RESOURCE_GROUP_COUNT", "2", 1);
    setenv("CTEST_RESOURCE_GROUP_0", "licenses", 1);
    setenv("CTEST_RESOURCE_GROUP_1", "gpus", 1);
    setenv("CTEST_RESOURCE_GROUP_1_GPUS", "id:1,slots:1", 1);
    ck_assert_int_eq(mf_use_ctest_gpu(), 1);
    ck_assert_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "1");
    /* groups but no GPU among them */
    setenv("CTEST_RESOURCE_GROUP_COUNT", "1", 1);
    setenv("CUDA_VISIBLE_DEVICES", "7", 1);
    ck_assert_int_eq(mf_use_ctest_gpu(), 0);
    ck_assert_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "7");
    /* malformed: an error that names the variable, CUDA_VISIBLE_DEVICES untouched */
    setenv("CTEST_RESOURCE_GROUP_0", "gpus", 1);
    static const char *const bad[] = { "3", "id:,slots:1", "id:3 4,slots:1", "id:$(x),slots:1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("CTEST_RESOURCE_GROUP_0_GPUS", bad[i], 1);
        ck_assert_int_eq(mf_use_ctest_gpu(), -1);
        ck_assert_ptr_nonnull(strstr(mf_last_error(), "CTEST_RESOURCE_GROUP_0_GPUS"));
        ck_assert_str_eq(getenv("CUDA_VISIBLE_DEVICES"), "7");
    }
    unsetenv("CTEST_RESOURCE_GROUP_0_GPUS");
    ck_assert_int_eq(mf_use_ctest_gpu(), -1);
    setenv("CTEST_RESOURCE_GROUP_COUNT", "two", 1);
    ck_assert_int_eq(mf_use_ctest_gpu(), -1);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "CTEST_RESOURCE_GROUP_COUNT"));
    for (int i = 0; i < 6; i++) {
        if (saved[i])
            setenv(vars[i], saved[i], 1);
        else
            unsetenv(vars[i]);
        free(saved[i]);
    }
}
END_TEST

START_TEST(test_context_options)
{
    mf_context_options o;
    memset(&o, 0xab, sizeof o);
    mf_context_options_init(&o);
    ck_assert_int_eq(o.backend, MF_BACKEND_AUTO);
    ck_assert_uint_eq(o.cublas_workspace_bytes, MF_CUBLAS_WORKSPACE_AUTO);
    mf_context_options_init(NULL); /* no-op */

    o.backend = MF_BACKEND_HOST;
    o.cublas_workspace_bytes = 12345;
    mf_context *ctx = NULL;
    MF_ASSERT_OK(mf_context_create_ex(&ctx, &o));
    ck_assert_uint_eq(mf_context_cublas_workspace_bytes(ctx), 12345);
    mf_context_destroy(ctx);

    o.cublas_workspace_bytes = 0; /* no workspace: allowed */
    MF_ASSERT_OK(mf_context_create_ex(&ctx, &o));
    mf_mem_stats st;
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    ck_assert_uint_eq(st.current, 0);
    mf_context_destroy(ctx);
}
END_TEST

START_TEST(test_context_bad_input)
{
    mf_context *ctx = NULL;
    MF_ASSERT_STATUS(mf_context_create(NULL, MF_BACKEND_HOST), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_context_create(&ctx, (mf_backend)3), MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(ctx);
    MF_ASSERT_STATUS(mf_context_create(&ctx, (mf_backend)-1), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_context_create_ex(&ctx, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_context_create_ex(NULL, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_context_synchronize(NULL), MF_ERR_NULL_POINTER);
    mf_clear_error();
    ck_assert_int_eq(mf_context_backend(NULL), MF_BACKEND_HOST);
    ck_assert_str_ne(mf_last_error(), "");
    ck_assert_ptr_null(mf_context_stream(NULL));
    ck_assert_ptr_null(mf_context_cublas(NULL));
    /* an absurd workspace fails cleanly (out of memory), not with a crash */
    mf_context_options o;
    mf_context_options_init(&o);
    o.backend = MF_BACKEND_HOST;
    o.cublas_workspace_bytes = SIZE_MAX / 2;
    mf_status s = mf_context_create_ex(&ctx, &o);
    ck_assert_msg(s == MF_ERR_OUT_OF_MEMORY || s == MF_ERR_BACKEND, "got %s", mf_status_name(s));
    ck_assert_ptr_null(ctx);
    ck_assert_str_ne(mf_last_error(), "");
}
END_TEST

/* ---- buffers --------------------------------------------------------------------------- */
START_TEST(test_buffers_roundtrip)
{
    mf_context *ctx = mf_test_ctx();
    float host[64], back[64];
    for (int i = 0; i < 64; i++) host[i] = (float)i * 0.5f - 3.0f;
    void *dev = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof host, &dev));
    ck_assert_ptr_nonnull(dev);
    MF_ASSERT_OK(mf_buffer_upload(ctx, dev, host, sizeof host));
    mf_fill_nan_f32(back, 64);
    MF_ASSERT_OK(mf_buffer_download(ctx, back, dev, sizeof back));
    ck_assert_mem_eq(back, host, sizeof host);
    MF_ASSERT_OK(mf_buffer_memset(ctx, dev, 0, sizeof host));
    MF_ASSERT_OK(mf_buffer_download(ctx, back, dev, sizeof back));
    for (int i = 0; i < 64; i++) ck_assert_float_eq(back[i], 0.0f);
    /* a sub-range of a buffer is fine */
    MF_ASSERT_OK(mf_buffer_upload(ctx, (char *)dev + 16, host, 32));
    /* buffers are not scratch */
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, MF_MEM_DEVICE), 0);
    MF_ASSERT_OK(mf_buffer_free(ctx, dev));
    MF_ASSERT_OK(mf_buffer_free(ctx, NULL));
    /* leaked buffers are released by mf_context_destroy (the teardown; ASan checks) */
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 100, &dev));
}
END_TEST

START_TEST(test_buffers_bad_input)
{
    mf_context *ctx = mf_test_ctx();
    void *dev = (void *)(uintptr_t)1;
    char host[32] = { 0 };
    MF_ASSERT_STATUS(mf_buffer_alloc(NULL, 16, &dev), MF_ERR_NULL_POINTER);
    ck_assert_ptr_null(dev);
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, 16, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, 0, &dev), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, SIZE_MAX, &dev), MF_ERR_OUT_OF_MEMORY);
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 16, &dev));
    MF_ASSERT_STATUS(mf_buffer_upload(NULL, dev, host, 16), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, NULL, host, 16), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, dev, NULL, 16), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, dev, host, 0), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, dev, host, 17), MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, (char *)dev + 8, host, 9), MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_STATUS(mf_buffer_download(NULL, host, dev, 16), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_download(ctx, NULL, dev, 16), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_download(ctx, host, NULL, 16), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_download(ctx, host, dev, 0), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_buffer_download(ctx, host, dev, 32), MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_STATUS(mf_buffer_memset(NULL, dev, 0, 16), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_memset(ctx, NULL, 0, 16), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_memset(ctx, dev, 0, 0), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_buffer_memset(ctx, dev, 256, 16), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_buffer_memset(ctx, dev, -1, 16), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_buffer_memset(ctx, dev, 0, 17), MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_STATUS(mf_buffer_free(NULL, dev), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_buffer_free(ctx, host), MF_ERR_INVALID_ARGUMENT); /* not ours */
    MF_ASSERT_OK(mf_buffer_free(ctx, dev));
    MF_ASSERT_STATUS(mf_buffer_free(ctx, dev), MF_ERR_INVALID_ARGUMENT); /* double free */
}
END_TEST

/* ---- registry and tolerance table ------------------------------------------------------------- */
START_TEST(test_registry)
{
    size_t n = 99;
    const mf_op_desc *const *ops = mf_registry(&n);
    ck_assert_ptr_nonnull(ops);
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(ops[i]);
        ck_assert_ptr_nonnull(ops[i]->name);
        ck_assert_ptr_nonnull(ops[i]->summary);
        ck_assert_ptr_nonnull(ops[i]->run_case);
        ck_assert_int_gt(ops[i]->n_variants, 0);
        ck_assert_int_gt(ops[i]->n_cases, 0);
        for (int v = 0; v < ops[i]->n_variants; v++) ck_assert_ptr_nonnull(ops[i]->variants[v]);
        ck_assert_ptr_eq(mf_registry_find(ops[i]->name), ops[i]);
        for (size_t j = i + 1; j < n; j++) ck_assert_str_ne(ops[i]->name, ops[j]->name);
    }
    mf_clear_error();
    ck_assert_ptr_null(mf_registry_find("no-such-op"));
    ck_assert_str_ne(mf_last_error(), "");
    mf_clear_error();
    ck_assert_ptr_null(mf_registry_find(NULL));
    ck_assert_str_ne(mf_last_error(), "");
    ck_assert_ptr_nonnull(mf_registry(NULL));
}
END_TEST

START_TEST(test_tolerance_table)
{
    size_t n = 0;
    const mf_tolerance *t = mf_tolerance_table(&n);
    ck_assert_uint_gt(n, 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(t[i].name);
        ck_assert_msg(t[i].why != NULL && strlen(t[i].why) >= 20, "%s: no justification", t[i].name);
        ck_assert_msg(t[i].atol >= 0 && t[i].rtol >= 0 && t[i].nmse >= 0, "%s: negative bound", t[i].name);
        ck_assert_msg(isfinite(t[i].atol) && isfinite(t[i].rtol) && isfinite(t[i].nmse), "%s", t[i].name);
        ck_assert_ptr_eq(mf_tolerance_get(t[i].name), &t[i]);
        for (size_t j = i + 1; j < n; j++) ck_assert_str_ne(t[i].name, t[j].name);
    }
    /* Each registered op's rows (next to its descriptor) are in the one table,
     * named "<op>.", and every op comparing outputs has some. */
    size_t n_ops = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    for (size_t i = 0; i < n_ops; i++) {
        ck_assert_msg(ops[i]->n_tolerances > 0 && ops[i]->tolerances != NULL, "%s: no tolerance rows",
                      ops[i]->name);
        const size_t len = strlen(ops[i]->name);
        for (int j = 0; j < ops[i]->n_tolerances; j++) {
            const mf_tolerance *row = &ops[i]->tolerances[j];
            ck_assert_msg(strncmp(row->name, ops[i]->name, len) == 0 && row->name[len] == '.',
                          "%s's row %s is not named '%s.'", ops[i]->name, row->name, ops[i]->name);
            const mf_tolerance *found = mf_tolerance_get(row->name);
            ck_assert_ptr_nonnull(found);
            ck_assert(found >= t && found < t + n);
            ck_assert(found->atol == row->atol && found->rtol == row->rtol && found->nmse == row->nmse);
            ck_assert_str_eq(found->why, row->why);
        }
    }
    mf_clear_error();
    ck_assert_ptr_null(mf_tolerance_get("no.such.row"));
    ck_assert_str_ne(mf_last_error(), "");
    ck_assert_ptr_null(mf_tolerance_get(NULL));
    ck_assert_ptr_nonnull(mf_tolerance_table(NULL));
}
END_TEST

Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("errors");
    tcase_add_test(tc, test_status_names);
    tcase_add_test(tc, test_error_message_format);
    tcase_add_test(tc, test_error_long_message_truncated);
    suite_add_tcase(s, tc);

    tc = tcase_create("sizes");
    tcase_add_test(tc, test_size_helpers);
    tcase_add_test(tc, test_dims_product);
    suite_add_tcase(s, tc);

    tc = tcase_create("dtypes");
    tcase_add_test(tc, test_dtypes);
    tcase_add_test(tc, test_bf16_conversion);
    suite_add_tcase(s, tc);

    tc = tcase_create("contexts");
    tcase_add_test(tc, test_backend_names);
    tcase_add_test(tc, test_context_host);
    tcase_add_test(tc, test_context_auto);
    tcase_add_test(tc, test_context_cuda_without_device);
    tcase_add_test(tc, test_disable_cuda_env);
    tcase_add_test(tc, test_ctest_gpu);
    tcase_add_test(tc, test_context_options);
    tcase_add_test(tc, test_context_bad_input);
    suite_add_tcase(s, tc);

    tc = tcase_create("buffers");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_buffers_roundtrip);
    tcase_add_test(tc, test_buffers_bad_input);
    suite_add_tcase(s, tc);

    tc = tcase_create("registry");
    tcase_add_test(tc, test_registry);
    tcase_add_test(tc, test_tolerance_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(core_suite()); }
