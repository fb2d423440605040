/* Equivalence of every optimized matmul variant with the reference
 * (seed 002: the 16x16 shared-memory tiled matmul fix).
 *
 * For each variant, a sweep over edge shapes (1x1x1, sizes that are not
 * multiples of the 16x16 tile, tall and skinny, a thin K = 4096 reduction,
 * an exact multiple of the tile), all four transpose combinations, fp32 and
 * bf16: seeded inputs, the reference on the host, the variant on the test
 * backend into an output pre-filled with NaN, MF_ASSERT_CLOSE with the op's
 * tolerance row. Every device buffer carries a NaN guard region after its
 * data: the guard after C must stay untouched (a write past M*N fails), and a
 * read past the end of A or B brings a NaN into the result (even where the
 * stray value is multiplied by a zero-padded tile entry). Shapes are small so
 * that host execution mode (~10 ns per GPU thread) keeps the suite fast; the
 * grid-cap case (> 65535 row tiles) is tagged slow.
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/matmul.h"
#include "memfix/registry.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
    int64_t M, N, K;
} shape;

static const shape shapes[] = {
    { 1, 1, 1 },    /* degenerate */
    { 17, 33, 19 }, /* one past the tile in M, N, K */
    { 31, 1, 47 },  /* a single output column, K across 3 partial tiles */
    { 1000, 3, 5 }, /* tall and skinny */
    { 3, 1000, 7 }, /* short and wide */
    { 4, 5, 4096 }, /* thin K = 4096 reduction (256 K tiles) */
    { 48, 32, 64 }, /* exact multiples of the tile */
    { 2, 70, 33 },  /* N spans 5 column tiles, M less than a tile */
};
#define N_SHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))
#define N_TRANS 4
#define N_DTYPES 2
#define GUARD 64 /* NaN elements after every buffer */

static const mf_dtype dtypes[N_DTYPES] = { MF_DTYPE_F32, MF_DTYPE_BF16 };

static const char *tol_name(mf_dtype dt)
{
    return dt == MF_DTYPE_BF16 ? "matmul.out.bf16" : "matmul.out.f32";
}

/* n seeded values in [-1, 1) followed by GUARD NaNs. */
static void *make_input(mf_dtype dt, size_t n, uint64_t seed)
{
    const size_t es = mf_dtype_size(dt);
    void *p = malloc((n + GUARD) * es);
    ck_assert_ptr_nonnull(p);
    mf_test_fill_uniform(dt, p, n, seed, -1.0f, 1.0f);
    mf_test_fill_nan(dt, (char *)p + n * es, GUARD); /* guard NaNs after the data */
    return p;
}

/* Runs one configuration; C is NaN-filled and followed by a NaN guard.
 * Writes the variant's output to got (M*N floats) and the reference's to ref. */
static void run_matmul(mf_matmul_variant v, mf_dtype dt, int ta, int tb, const shape *s, uint64_t seed,
                       float *got, float *ref)
{
    mf_context *ctx = mf_test_ctx();
    const size_t m = (size_t)s->M, n = (size_t)s->N, k = (size_t)s->K;
    const size_t es = mf_dtype_size(dt);
    void *a = make_input(dt, m * k, seed);
    void *b = make_input(dt, k * n, seed ^ 0x9e3779b97f4a7c15ull);
    float *c_host = malloc((m * n + GUARD) * sizeof(float));
    ck_assert_ptr_nonnull(c_host);

    mf_fill_nan_f32(ref, m * n);
    MF_ASSERT_STATUS(mf_ref_matmul(ctx, dt, ta, tb, s->M, s->N, s->K, a, b, ref), MF_OK);

    void *d_a = NULL, *d_b = NULL, *d_c = NULL;
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, (m * k + GUARD) * es, &d_a), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, (k * n + GUARD) * es, &d_b), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_alloc(ctx, (m * n + GUARD) * sizeof(float), &d_c), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, d_a, a, (m * k + GUARD) * es), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, d_b, b, (k * n + GUARD) * es), MF_OK);
    mf_fill_nan_f32(c_host, m * n + GUARD);
    MF_ASSERT_STATUS(mf_buffer_upload(ctx, d_c, c_host, (m * n + GUARD) * sizeof(float)), MF_OK);

    MF_ASSERT_STATUS(mf_matmul(ctx, v, dt, ta, tb, s->M, s->N, s->K, d_a, d_b, (float *)d_c), MF_OK);
    MF_ASSERT_STATUS(mf_context_synchronize(ctx), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_download(ctx, c_host, d_c, (m * n + GUARD) * sizeof(float)), MF_OK);
    for (size_t g = 0; g < GUARD; ++g)
        ck_assert_msg(isnan(c_host[m * n + g]),
                      "%s wrote past C: guard element %zu is %g (M=%lld N=%lld K=%lld)",
                      mf_matmul_variant_name(v), g, (double)c_host[m * n + g], (long long)s->M,
                      (long long)s->N, (long long)s->K);
    memcpy(got, c_host, m * n * sizeof(float));

    MF_ASSERT_STATUS(mf_buffer_free(ctx, d_c), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_free(ctx, d_b), MF_OK);
    MF_ASSERT_STATUS(mf_buffer_free(ctx, d_a), MF_OK);
    free(c_host);
    free(b);
    free(a);
}

/* Loop index -> shape; every transpose combination and dtype of that shape in
 * one test (a forked test costs more than these small shapes). A failure
 * names the configuration. */
static void check_shape(mf_matmul_variant v, int shape_index)
{
    const shape *s = &shapes[shape_index];
    const size_t mn = (size_t)s->M * (size_t)s->N;
    float *got = malloc(mn * sizeof(float));
    float *ref = malloc(mn * sizeof(float));
    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_nonnull(ref);
    for (int t = 0; t < N_TRANS; ++t) {
        for (int d = 0; d < N_DTYPES; ++d) {
            const int ta = t & 1, tb = (t >> 1) & 1;
            const mf_dtype dt = dtypes[d];
            const uint64_t seed = 0x6d6d0000ull + (uint64_t)(shape_index * 16 + t * 2 + d);
            run_matmul(v, dt, ta, tb, s, seed, got, ref);
            char msg[1024];
            const int ok =
                mf_test_check_close(got, ref, mn, tol_name(dt), __FILE__, __LINE__, msg, sizeof msg);
            ck_assert_msg(ok, "%s M=%lld N=%lld K=%lld trans_a=%d trans_b=%d %s: %s",
                          mf_matmul_variant_name(v), (long long)s->M, (long long)s->N, (long long)s->K, ta,
                          tb, mf_dtype_name(dt), msg);
        }
    }
    free(ref);
    free(got);
}

START_TEST(test_naive_matches_reference) { check_shape(MF_MATMUL_NAIVE, _i); }
END_TEST

START_TEST(test_tiled_matches_reference) { check_shape(MF_MATMUL_TILED, _i); }
END_TEST

START_TEST(test_cublas_matches_reference) { check_shape(MF_MATMUL_CUBLAS, _i); }
END_TEST

/* The comparison can fail: the tiled result for trans_a = 1 compared against a
 * reference computed with trans_a = 0 (a square, non-symmetric A) must not pass. */
START_TEST(test_wrong_transpose_is_detected)
{
    const shape s = { 17, 17, 17 };
    const size_t mn = 17 * 17;
    float *got = malloc(mn * sizeof(float));
    float *ref_t = malloc(mn * sizeof(float));
    float *ref_n = malloc(mn * sizeof(float));
    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_nonnull(ref_t);
    ck_assert_ptr_nonnull(ref_n);
    run_matmul(MF_MATMUL_TILED, MF_DTYPE_F32, 1, 0, &s, 42, got, ref_t);
    MF_ASSERT_CLOSE(got, ref_t, mn, "matmul.out.f32");
    float *dummy = malloc(mn * sizeof(float));
    ck_assert_ptr_nonnull(dummy);
    run_matmul(MF_MATMUL_TILED, MF_DTYPE_F32, 0, 0, &s, 42, dummy, ref_n);
    mf_compare_result r;
    ck_assert_int_eq(mf_compare_f32(got, ref_n, mn, mf_tolerance_get("matmul.out.f32"), NULL, &r), MF_OK);
    ck_assert_msg(!r.pass, "a transposed result passed against the untransposed reference");
    free(dummy);
    free(ref_n);
    free(ref_t);
    free(got);
}
END_TEST

/* More row tiles than gridDim.y allows (65535): the launchers cap the grid and
 * the kernels' blocks stride over the remaining tiles. 65537 row tiles, so
 * blocks 0 and 1 each take a second tile. */
START_TEST(test_grid_y_cap)
{
    const mf_matmul_variant v = _i == 0 ? MF_MATMUL_NAIVE : MF_MATMUL_TILED;
    const shape s = { (int64_t)65535 * MF_MATMUL_TILE + 17, 2, 3 };
    const size_t mn = (size_t)s.M * (size_t)s.N;
    float *got = malloc(mn * sizeof(float));
    float *ref = malloc(mn * sizeof(float));
    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_nonnull(ref);
    run_matmul(v, MF_DTYPE_F32, 1, 0, &s, 7, got, ref);
    MF_ASSERT_CLOSE(got, ref, mn, "matmul.out.f32");
    free(ref);
    free(got);
}
END_TEST

/* The registry's built-in cases (what `memfix report --op matmul` runs) pass
 * for every variant on the test backend. */
START_TEST(test_registry_cases_pass)
{
    const mf_op_desc *op = mf_registry_find("matmul");
    ck_assert_ptr_nonnull(op);
    ck_assert_int_eq(op->n_variants, MF_MATMUL_N_VARIANTS);
    ck_assert_int_ge(op->n_cases, 8);
    for (int v = 0; v < op->n_variants; ++v) {
        ck_assert_str_eq(op->variants[v], mf_matmul_variant_name((mf_matmul_variant)v));
        for (int c = 0; c < op->n_cases; ++c) {
            mf_case_result r;
            MF_ASSERT_STATUS(op->run_case(mf_test_ctx(), v, c, &r), MF_OK);
            ck_assert_msg(r.pass, "matmul %s case %d (%s %s) failed: %s", r.variant, c, r.dtype, r.shape,
                          r.message);
            ck_assert_str_eq(r.op, "matmul");
            ck_assert_uint_gt(r.ref_peak_bytes, r.ceiling_bytes);
            ck_assert_uint_le(r.opt_peak_bytes, r.ceiling_bytes);
        }
    }
}
END_TEST

static Suite *matmul_equiv_suite(void)
{
    Suite *s = suite_create("matmul_equiv");
    const struct {
        const char *name;
        const TTest *fn;
    } variants[] = {
        { "naive", test_naive_matches_reference },
        { "tiled", test_tiled_matches_reference },
        { "cublas", test_cublas_matches_reference },
    };
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); ++i) {
        TCase *tc = tcase_create(variants[i].name);
        tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
        tcase_add_loop_test(tc, variants[i].fn, 0, N_SHAPES);
        suite_add_tcase(s, tc);
    }
    TCase *tc = tcase_create("checks");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_wrong_transpose_is_detected);
    tcase_add_test(tc, test_registry_cases_pass);
    suite_add_tcase(s, tc);
    /* ~16.8M GPU threads: a few seconds in host mode. Registered separately with
     * the slow label (tests/matmul.cmake); the default registration excludes the
     * Check tag "slow" (CK_EXCLUDE_TAGS). */
    tc = tcase_create("grid_cap");
    tcase_set_tags(tc, "slow");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_grid_y_cap, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(matmul_equiv_suite()); }
