/* Bad input to every public matmul function returns a status and a readable
 * message, never a crash: null pointers, zero and negative sizes, overflowing
 * size products, out-of-range variant and dtype enums, the cuBLAS int limit;
 * plus the formula functions and the registry entry's argument checks. */
#include "mf_test.h"

#include "memfix/matmul.h"
#include "memfix/registry.h"

#include <check.h>
#include <stdint.h>
#include <string.h>

#define BIG ((int64_t)1 << 40)

/* Small valid device buffers (validation must fail before they are touched). */
static void *d_a, *d_b, *d_c;
static void buffers_setup(void)
{
    mf_test_setup();
    ck_assert_int_eq(mf_buffer_alloc(mf_test_ctx(), 256, &d_a), MF_OK);
    ck_assert_int_eq(mf_buffer_alloc(mf_test_ctx(), 256, &d_b), MF_OK);
    ck_assert_int_eq(mf_buffer_alloc(mf_test_ctx(), 256, &d_c), MF_OK);
}
static void buffers_teardown(void)
{
    mf_buffer_free(mf_test_ctx(), d_c);
    mf_buffer_free(mf_test_ctx(), d_b);
    mf_buffer_free(mf_test_ctx(), d_a);
    mf_test_teardown();
}

/* The last error names what was wrong. */
#define ASSERT_MSG_HAS(text)                                                                                 \
    ck_assert_msg(strstr(mf_last_error(), (text)) != NULL, "message '%s' lacks '%s'", mf_last_error(), (text))

static mf_status mm(mf_matmul_variant v, mf_dtype dt, int64_t M, int64_t N, int64_t K)
{
    return mf_matmul(mf_test_ctx(), v, dt, 0, 0, M, N, K, d_a, d_b, (float *)d_c);
}

START_TEST(test_null_pointers)
{
    mf_context *ctx = mf_test_ctx();
    float *c = (float *)d_c;
    MF_ASSERT_STATUS(mf_matmul(NULL, MF_MATMUL_TILED, MF_DTYPE_F32, 0, 0, 2, 2, 2, d_a, d_b, c),
                     MF_ERR_NULL_POINTER);
    ASSERT_MSG_HAS("ctx");
    MF_ASSERT_STATUS(mf_matmul(ctx, MF_MATMUL_TILED, MF_DTYPE_F32, 0, 0, 2, 2, 2, NULL, d_b, c),
                     MF_ERR_NULL_POINTER);
    ASSERT_MSG_HAS("A is NULL");
    MF_ASSERT_STATUS(mf_matmul(ctx, MF_MATMUL_NAIVE, MF_DTYPE_F32, 0, 0, 2, 2, 2, d_a, NULL, c),
                     MF_ERR_NULL_POINTER);
    ASSERT_MSG_HAS("B is NULL");
    MF_ASSERT_STATUS(mf_matmul(ctx, MF_MATMUL_CUBLAS, MF_DTYPE_BF16, 1, 1, 2, 2, 2, d_a, d_b, NULL),
                     MF_ERR_NULL_POINTER);
    ASSERT_MSG_HAS("C is NULL");

    float h[4] = { 1, 2, 3, 4 }, out[4];
    MF_ASSERT_STATUS(mf_ref_matmul(NULL, MF_DTYPE_F32, 0, 0, 2, 2, 1, h, h, out), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_matmul(ctx, MF_DTYPE_F32, 0, 0, 2, 2, 1, NULL, h, out), MF_ERR_NULL_POINTER);
    ASSERT_MSG_HAS("A_host");
    MF_ASSERT_STATUS(mf_ref_matmul(ctx, MF_DTYPE_F32, 0, 0, 2, 2, 1, h, NULL, out), MF_ERR_NULL_POINTER);
    ASSERT_MSG_HAS("B_host");
    MF_ASSERT_STATUS(mf_ref_matmul(ctx, MF_DTYPE_F32, 0, 0, 2, 2, 1, h, h, NULL), MF_ERR_NULL_POINTER);
    ASSERT_MSG_HAS("C_host");
}
END_TEST

START_TEST(test_zero_and_negative_sizes)
{
    for (int v = 0; v < MF_MATMUL_N_VARIANTS; ++v) {
        MF_ASSERT_STATUS(mm((mf_matmul_variant)v, MF_DTYPE_F32, 0, 2, 2), MF_ERR_INVALID_SIZE);
        ASSERT_MSG_HAS("M must be > 0");
        MF_ASSERT_STATUS(mm((mf_matmul_variant)v, MF_DTYPE_F32, 2, -1, 2), MF_ERR_INVALID_SIZE);
        ASSERT_MSG_HAS("N must be > 0");
        MF_ASSERT_STATUS(mm((mf_matmul_variant)v, MF_DTYPE_BF16, 2, 2, 0), MF_ERR_INVALID_SIZE);
        ASSERT_MSG_HAS("K must be > 0");
        MF_ASSERT_STATUS(mm((mf_matmul_variant)v, MF_DTYPE_BF16, INT64_MIN, 2, 2), MF_ERR_INVALID_SIZE);
    }
    float h[4] = { 1, 2, 3, 4 }, out[4];
    MF_ASSERT_STATUS(mf_ref_matmul(mf_test_ctx(), MF_DTYPE_F32, 0, 0, -3, 1, 1, h, h, out),
                     MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_ref_matmul(mf_test_ctx(), MF_DTYPE_F32, 0, 0, 1, 0, 1, h, h, out),
                     MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_ref_matmul(mf_test_ctx(), MF_DTYPE_F32, 0, 0, 1, 1, -1, h, h, out),
                     MF_ERR_INVALID_SIZE);
}
END_TEST

START_TEST(test_overflowing_products)
{
    for (int v = 0; v < MF_MATMUL_N_VARIANTS; ++v) {
        /* M*N*4 = 2^82 */
        MF_ASSERT_STATUS(mm((mf_matmul_variant)v, MF_DTYPE_F32, BIG, BIG, 1), MF_ERR_OVERFLOW);
        ASSERT_MSG_HAS("overflow");
        /* M*K*2 = 2^64 for bf16 */
        MF_ASSERT_STATUS(mm((mf_matmul_variant)v, MF_DTYPE_BF16, (int64_t)1 << 32, 1, (int64_t)1 << 31),
                         MF_ERR_OVERFLOW);
        /* K*N*4 overflows */
        MF_ASSERT_STATUS(mm((mf_matmul_variant)v, MF_DTYPE_F32, 1, INT64_MAX, 2), MF_ERR_OVERFLOW);
    }
    float h[4] = { 1, 2, 3, 4 }, out[4];
    MF_ASSERT_STATUS(mf_ref_matmul(mf_test_ctx(), MF_DTYPE_F32, 0, 0, BIG, BIG, 1, h, h, out),
                     MF_ERR_OVERFLOW);
    /* Every buffer fits (A is 2^61 floats = 2^63 bytes) but the reference's
     * double scratch 8*(M*K + K*N + M*N) does not. */
    MF_ASSERT_STATUS(
        mf_ref_matmul(mf_test_ctx(), MF_DTYPE_F32, 0, 0, (int64_t)1 << 30, 1, (int64_t)1 << 31, h, h, out),
        MF_ERR_OVERFLOW);
    ASSERT_MSG_HAS("scratch");
}
END_TEST

START_TEST(test_bad_enums)
{
    MF_ASSERT_STATUS(mm((mf_matmul_variant)3, MF_DTYPE_F32, 2, 2, 2), MF_ERR_INVALID_ARGUMENT);
    ASSERT_MSG_HAS("variant 3");
    MF_ASSERT_STATUS(mm((mf_matmul_variant)-1, MF_DTYPE_F32, 2, 2, 2), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mm(MF_MATMUL_TILED, (mf_dtype)2, 2, 2, 2), MF_ERR_DTYPE);
    ASSERT_MSG_HAS("dtype 2");
    MF_ASSERT_STATUS(mm(MF_MATMUL_NAIVE, (mf_dtype)-7, 2, 2, 2), MF_ERR_DTYPE);
    float h[4] = { 1, 2, 3, 4 }, out[4];
    MF_ASSERT_STATUS(mf_ref_matmul(mf_test_ctx(), (mf_dtype)9, 0, 0, 2, 2, 1, h, h, out), MF_ERR_DTYPE);
    ck_assert_ptr_null(mf_matmul_variant_name((mf_matmul_variant)3));
    ck_assert_ptr_null(mf_matmul_variant_name((mf_matmul_variant)-1));
    ck_assert_str_eq(mf_matmul_variant_name(MF_MATMUL_NAIVE), "naive");
    ck_assert_str_eq(mf_matmul_variant_name(MF_MATMUL_TILED), "tiled");
    ck_assert_str_eq(mf_matmul_variant_name(MF_MATMUL_CUBLAS), "cublas");
}
END_TEST

/* cuBLAS takes int dimensions; a larger (valid) size is refused up front. */
START_TEST(test_cublas_int_limit)
{
    MF_ASSERT_STATUS(mm(MF_MATMUL_CUBLAS, MF_DTYPE_F32, (int64_t)1 << 31, 1, 1), MF_ERR_INVALID_SIZE);
    ASSERT_MSG_HAS("INT_MAX");
    MF_ASSERT_STATUS(mm(MF_MATMUL_CUBLAS, MF_DTYPE_BF16, 1, 1, (int64_t)1 << 33), MF_ERR_INVALID_SIZE);
}
END_TEST

START_TEST(test_formulas)
{
    /* 8 * (2*4 + 4*3 + 2*3) */
    ck_assert_uint_eq(mf_ref_matmul_scratch_bytes(2, 3, 4), 208);
    ck_assert_uint_eq(mf_ref_matmul_scratch_bytes(1, 1, 1), 24);
    ck_assert_uint_eq(mf_ref_matmul_scratch_bytes(0, 1, 1), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_matmul_scratch_bytes(1, -1, 1), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_matmul_scratch_bytes(BIG, BIG, 1), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_matmul_scratch_bytes((int64_t)1 << 30, 1, (int64_t)1 << 31), SIZE_MAX);
    for (int v = 0; v < MF_MATMUL_N_VARIANTS; ++v) {
        ck_assert_uint_eq(mf_matmul_scratch_ceiling((mf_matmul_variant)v, 17, 33, 19), 0);
        ck_assert_uint_eq(mf_matmul_scratch_ceiling((mf_matmul_variant)v, 0, 33, 19), SIZE_MAX);
    }
    ck_assert_uint_eq(mf_matmul_naive_scratch_ceiling(5, 6, 7), 0);
    ck_assert_uint_eq(mf_matmul_tiled_scratch_ceiling(5, 6, 7), 0);
    ck_assert_uint_eq(mf_matmul_cublas_scratch_ceiling(5, 6, 7), 0);
    ck_assert_uint_eq(mf_matmul_scratch_ceiling((mf_matmul_variant)3, 5, 6, 7), SIZE_MAX);
}
END_TEST

START_TEST(test_registry_entry_arguments)
{
    const mf_op_desc *op = mf_registry_find("matmul");
    ck_assert_ptr_nonnull(op);
    ck_assert_str_eq(op->name, "matmul");
    ck_assert_int_eq(op->n_variants, 3);
    mf_case_result r;
    MF_ASSERT_STATUS(op->run_case(mf_test_ctx(), 3, 0, &r), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(op->run_case(mf_test_ctx(), -1, 0, &r), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(op->run_case(mf_test_ctx(), 0, op->n_cases, &r), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(op->run_case(mf_test_ctx(), 0, -1, &r), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(op->run_case(NULL, 0, 0, &r), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(op->run_case(mf_test_ctx(), 0, 0, NULL), MF_ERR_NULL_POINTER);
}
END_TEST

/* Bad pointers (issue: SIGSEGV in every variant at M=N=K=2048 with a 16-byte A;
 * a freed buffer or a host array poisoned the whole process with a sticky launch
 * error). Every pointer is checked against the extent the shape needs before
 * any launch, and the message names the argument. */
START_TEST(test_buffer_too_small)
{
    mf_context *ctx = mf_test_ctx();
    void *small = NULL, *big_b = NULL, *big_c = NULL;
    const size_t n = (size_t)2048 * 2048;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 16, &small));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, &big_b));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, &big_c));
    for (int v = 0; v < MF_MATMUL_N_VARIANTS; v++) {
        MF_ASSERT_STATUS(mf_matmul(ctx, (mf_matmul_variant)v, MF_DTYPE_F32, 0, 0, 2048, 2048, 2048, small,
                                   big_b, (float *)big_c),
                         MF_ERR_INVALID_SIZE);
        ASSERT_MSG_HAS("A is too small");
        ASSERT_MSG_HAS("16777216 bytes");
        /* B and C too; a pointer into the middle of a buffer has only the rest. */
        MF_ASSERT_STATUS(mf_matmul(ctx, (mf_matmul_variant)v, MF_DTYPE_BF16, 1, 1, 2048, 2048, 2048, big_b,
                                   (char *)big_c + n * 4 - 4096, (float *)big_b),
                         MF_ERR_INVALID_SIZE);
        ASSERT_MSG_HAS("B is too small");
        MF_ASSERT_STATUS(mf_matmul(ctx, (mf_matmul_variant)v, MF_DTYPE_F32, 0, 0, 2048, 2048, 1, big_b, big_c,
                                   (float *)small),
                         MF_ERR_INVALID_SIZE);
        ASSERT_MSG_HAS("C is too small");
    }
    /* Exactly big enough: runs. */
    MF_ASSERT_OK(mf_matmul(ctx, MF_MATMUL_TILED, MF_DTYPE_F32, 0, 0, 2, 2, 1, small, small, (float *)small));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    /* Live device memory this context did not allocate (another context's
     * buffer): in host mode the runtime knows its size too. */
    mf_context *other = NULL;
    void *foreign = NULL;
    MF_ASSERT_OK(mf_context_create(&other, mf_test_backend()));
    MF_ASSERT_OK(mf_buffer_alloc(other, 16, &foreign));
    if (mf_test_backend() == MF_BACKEND_HOST) {
        MF_ASSERT_STATUS(
            mf_matmul(ctx, MF_MATMUL_NAIVE, MF_DTYPE_F32, 0, 0, 64, 64, 64, foreign, big_b, (float *)big_c),
            MF_ERR_INVALID_SIZE);
        ASSERT_MSG_HAS("cudaMalloc allocation");
    }
    MF_ASSERT_OK(
        mf_matmul(ctx, MF_MATMUL_NAIVE, MF_DTYPE_F32, 0, 0, 2, 2, 1, foreign, foreign, (float *)big_c));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    mf_context_destroy(other);
    mf_buffer_free(ctx, small);
    mf_buffer_free(ctx, big_b);
    mf_buffer_free(ctx, big_c);
}
END_TEST

START_TEST(test_freed_or_host_pointer_then_process_works)
{
    mf_context *ctx = mf_test_ctx();
    void *freed = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 256, &freed));
    MF_ASSERT_OK(mf_buffer_free(ctx, freed));
    float host[64] = { 0 };
    for (int v = 0; v < MF_MATMUL_N_VARIANTS; v++) {
        MF_ASSERT_STATUS(
            mf_matmul(ctx, (mf_matmul_variant)v, MF_DTYPE_F32, 0, 0, 4, 4, 4, freed, d_b, (float *)d_c),
            MF_ERR_INVALID_ARGUMENT);
        ASSERT_MSG_HAS("A (");
        ASSERT_MSG_HAS("is not device memory");
        MF_ASSERT_STATUS(
            mf_matmul(ctx, (mf_matmul_variant)v, MF_DTYPE_F32, 0, 0, 4, 4, 4, d_a, host, (float *)d_c),
            MF_ERR_INVALID_ARGUMENT);
        ASSERT_MSG_HAS("B (");
        MF_ASSERT_STATUS(mf_matmul(ctx, (mf_matmul_variant)v, MF_DTYPE_F32, 0, 0, 4, 4, 4, d_a, d_b, host),
                         MF_ERR_INVALID_ARGUMENT);
        ASSERT_MSG_HAS("C (");
    }
    /* Nothing was launched, so nothing is sticky: the same context, a new one
     * and every variant still work. */
    float a[16], b[16], c[16];
    for (int i = 0; i < 16; i++) a[i] = b[i] = (float)(i % 5) - 2.0f;
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_a, a, sizeof a));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_b, b, sizeof b));
    for (int v = 0; v < MF_MATMUL_N_VARIANTS; v++) {
        MF_ASSERT_OK(
            mf_matmul(ctx, (mf_matmul_variant)v, MF_DTYPE_F32, 0, 0, 4, 4, 4, d_a, d_b, (float *)d_c));
        MF_ASSERT_OK(mf_buffer_download(ctx, c, d_c, sizeof c));
        ck_assert_float_eq(c[0], a[0] * b[0] + a[1] * b[4] + a[2] * b[8] + a[3] * b[12]);
    }
    mf_context *fresh = NULL;
    MF_ASSERT_OK(mf_context_create(&fresh, mf_test_backend()));
    MF_ASSERT_OK(mf_context_synchronize(fresh));
    mf_context_destroy(fresh);
}
END_TEST

static Suite *matmul_badinput_suite(void)
{
    Suite *s = suite_create("matmul_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, buffers_setup, buffers_teardown);
    tcase_add_test(tc, test_null_pointers);
    tcase_add_test(tc, test_zero_and_negative_sizes);
    tcase_add_test(tc, test_overflowing_products);
    tcase_add_test(tc, test_bad_enums);
    tcase_add_test(tc, test_cublas_int_limit);
    tcase_add_test(tc, test_formulas);
    tcase_add_test(tc, test_registry_entry_arguments);
    tcase_add_test(tc, test_buffer_too_small);
    tcase_add_test(tc, test_freed_or_host_pointer_then_process_works);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(matmul_badinput_suite()); }
