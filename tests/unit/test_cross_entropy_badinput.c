/* Bad input to the cross-entropy entries (seed 000, bug 1): every error path
 * returns a status with a non-empty mf_last_error(), never a crash. Covers the
 * optimized entries (forward, fused, backward), the reference, the planner and
 * the options: NULL pointers, zero/negative sizes, overflowing sizes, bad
 * dtypes and options, labels out of range, budgets too small. */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/cross_entropy.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { N = 6, D = 4, V = 10 };

typedef struct bufs {
    void *h, *w, *b, *lab, *loss, *lse, *gh, *gw, *gb;
} bufs;

static bufs make_bufs(void)
{
    mf_context *ctx = mf_test_ctx();
    bufs b;
    float hh[N * D], ww[V * D], bb[V];
    mf_fill_uniform_f32(hh, N * D, 1, -1.0f, 1.0f);
    mf_fill_uniform_f32(ww, V * D, 2, -1.0f, 1.0f);
    mf_fill_uniform_f32(bb, V, 3, -1.0f, 1.0f);
    int64_t lab[N] = {1, 2, 3, MF_CE_DEFAULT_IGNORE_INDEX, 4, 5};
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof hh, &b.h));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof ww, &b.w));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof bb, &b.b));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof lab, &b.lab));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, N * sizeof(float), &b.loss));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, N * sizeof(float), &b.lse));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, N * D * sizeof(float), &b.gh));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, V * D * sizeof(float), &b.gw));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, V * sizeof(float), &b.gb));
    MF_ASSERT_OK(mf_buffer_upload(ctx, b.h, hh, sizeof hh));
    MF_ASSERT_OK(mf_buffer_upload(ctx, b.w, ww, sizeof ww));
    MF_ASSERT_OK(mf_buffer_upload(ctx, b.b, bb, sizeof bb));
    MF_ASSERT_OK(mf_buffer_upload(ctx, b.lab, lab, sizeof lab));
    return b;
}

static void set_labels(const bufs *b, const int64_t *lab)
{
    MF_ASSERT_OK(mf_buffer_upload(mf_test_ctx(), b->lab, lab, N * sizeof(int64_t)));
}

#define FWD(ctx_, n_, d_, v_, dt_, h_, w_, lab_, o_, loss_)                                       \
    mf_cross_entropy_forward((ctx_), (n_), (d_), (v_), (dt_), (h_), (w_), NULL, (lab_), (o_),     \
                             (float *)(loss_), NULL)

START_TEST(test_null_pointers)
{
    mf_context *ctx = mf_test_ctx();
    bufs b = make_bufs();
    const int64_t *lab = b.lab;
    MF_ASSERT_OK(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss));
    MF_ASSERT_STATUS(FWD(NULL, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, NULL, b.w, lab, NULL, b.loss), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, NULL, lab, NULL, b.loss), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, NULL, b.loss), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, NULL), MF_ERR_NULL_POINTER);
    /* Fused: all gradients NULL; grad_bias without bias. */
    MF_ASSERT_STATUS(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL,
                                                       lab, NULL, NULL, b.loss, NULL, NULL, NULL,
                                                       NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL,
                                                       lab, NULL, NULL, b.loss, NULL, b.gh, b.gw,
                                                       b.gb),
                     MF_ERR_NULL_POINTER);
    /* Backward: lse is required. */
    MF_ASSERT_STATUS(mf_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab,
                                               NULL, NULL, NULL, b.gh, b.gw, NULL),
                     MF_ERR_NULL_POINTER);
    /* Reference. */
    float hh[N * D], ww[V * D], loss, gh[N * D];
    int64_t hl[N] = {1, 2, 3, 4, 5, 6};
    mf_fill_uniform_f32(hh, N * D, 1, -1.0f, 1.0f);
    mf_fill_uniform_f32(ww, V * D, 2, -1.0f, 1.0f);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, NULL, ww, NULL, hl,
                                                  NULL, &loss, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_forward(NULL, N, D, V, MF_DTYPE_F32, hh, ww, NULL, hl,
                                                  NULL, &loss, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, hl,
                                                  NULL, NULL, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, hl,
                                                   NULL, NULL, NULL, NULL, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, NULL,
                                                   NULL, NULL, gh, NULL, NULL),
                     MF_ERR_NULL_POINTER);
    /* Planner and options. */
    MF_ASSERT_STATUS(mf_cross_entropy_plan(N, V, MF_DTYPE_F32, NULL, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_cross_entropy_options_validate(NULL), MF_ERR_NULL_POINTER);
}
END_TEST

START_TEST(test_sizes)
{
    mf_context *ctx = mf_test_ctx();
    bufs b = make_bufs();
    const int64_t *lab = b.lab;
    MF_ASSERT_STATUS(FWD(ctx, 0, D, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(FWD(ctx, N, 0, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(FWD(ctx, N, D, -3, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss), MF_ERR_INVALID_SIZE);
    /* Overflowing byte counts (never touched: validation comes first). */
    MF_ASSERT_STATUS(FWD(ctx, INT64_MAX / 2, 1024, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss),
                     MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(FWD(ctx, N, INT64_MAX / 4, INT64_MAX / 4, MF_DTYPE_BF16, b.h, b.w, lab, NULL,
                         b.loss),
                     MF_ERR_OVERFLOW);
    /* Beyond cuBLAS's int sizes (the bf16 gradient tile has leading dimension 2V). */
    MF_ASSERT_STATUS(FWD(ctx, N, 1, (int64_t)1 << 31, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss),
                     MF_ERR_INVALID_SIZE);
    /* Reference: N x V doubles overflow. */
    float hh[N * D], ww[V * D], loss;
    int64_t hl[N] = {1, 2, 3, 4, 5, 6};
    mf_fill_uniform_f32(hh, N * D, 1, -1.0f, 1.0f);
    mf_fill_uniform_f32(ww, V * D, 2, -1.0f, 1.0f);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_forward(ctx, INT64_MAX / 8, 1, INT64_MAX / 8,
                                                  MF_DTYPE_F32, hh, ww, NULL, hl, NULL, &loss,
                                                  NULL),
                     MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_forward(ctx, N, -1, V, MF_DTYPE_F32, hh, ww, NULL, hl,
                                                  NULL, &loss, NULL),
                     MF_ERR_INVALID_SIZE);
    /* Planner. */
    mf_cross_entropy_plan_info p;
    MF_ASSERT_STATUS(mf_cross_entropy_plan(0, V, MF_DTYPE_F32, NULL, &p), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_cross_entropy_plan(N, 0, MF_DTYPE_F32, NULL, &p), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_cross_entropy_plan(N, INT64_MAX, MF_DTYPE_F32, NULL, &p), MF_ERR_OVERFLOW);
    /* Shift with a sequence length that does not divide N. */
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.shift_labels = 1;
    o.seq_len = 4;
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, hl, &o,
                                                  &loss, NULL),
                     MF_ERR_INVALID_SIZE);
}
END_TEST

START_TEST(test_dtype_and_options)
{
    mf_context *ctx = mf_test_ctx();
    bufs b = make_bufs();
    const int64_t *lab = b.lab;
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, (mf_dtype)7, b.h, b.w, lab, NULL, b.loss), MF_ERR_DTYPE);
    mf_cross_entropy_options o;
#define BAD_OPTION(stmt)                                                                           \
    do {                                                                                           \
        mf_cross_entropy_options_init(&o);                                                         \
        stmt;                                                                                      \
        MF_ASSERT_STATUS(mf_cross_entropy_options_validate(&o), MF_ERR_INVALID_ARGUMENT);          \
        MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss),               \
                         MF_ERR_INVALID_ARGUMENT);                                                 \
    } while (0)
    BAD_OPTION(o.reduction = (mf_ce_reduction)5);
    BAD_OPTION(o.shift_labels = 2);
    BAD_OPTION(o.seq_len = -1);
    BAD_OPTION(o.label_smoothing = 1.5f);
    BAD_OPTION(o.label_smoothing = NAN);
    BAD_OPTION(o.z_loss = -1e-4f);
    BAD_OPTION(o.softcap = -1.0f);
    BAD_OPTION(o.softcap = INFINITY);
    BAD_OPTION(o.variant = (mf_ce_variant)9);
    BAD_OPTION(o.variant = (mf_ce_variant)1); /* no second variant (yet) */
    BAD_OPTION(o.max_chunk_rows = -2);
#undef BAD_OPTION
}
END_TEST

/* A used label outside [0, V) that is not ignore_index: MF_ERR_OUT_OF_RANGE from
 * every entry; unused labels (the first of a sequence with shift) are not checked. */
START_TEST(test_labels_out_of_range)
{
    mf_context *ctx = mf_test_ctx();
    bufs b = make_bufs();
    const int64_t *lab = b.lab;
    const int64_t too_big[N] = {1, 2, V, 3, 4, 5};
    const int64_t negative[N] = {1, 2, 3, -5, 4, 5};
    set_labels(&b, too_big);
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss), MF_ERR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "outside"));
    MF_ASSERT_STATUS(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_BF16, b.h, b.w, NULL,
                                                       lab, NULL, NULL, b.loss, NULL, b.gh, b.gw,
                                                       NULL),
                     MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_STATUS(mf_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab,
                                               NULL, b.lse, NULL, b.gh, NULL, NULL),
                     MF_ERR_OUT_OF_RANGE);
    set_labels(&b, negative);
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss), MF_ERR_OUT_OF_RANGE);
    /* With ignore_index = -5 the same labels are fine; -100 then is out of range. */
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.ignore_index = -5;
    MF_ASSERT_OK(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss));
    const int64_t with_100[N] = {1, 2, 3, -100, 4, 5};
    set_labels(&b, with_100);
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss), MF_ERR_OUT_OF_RANGE);
    /* With shift (two sequences of 3), labels[0] and labels[3] are never targets. */
    const int64_t unused_bad[N] = {999, 2, 3, -7, 4, 5};
    set_labels(&b, unused_bad);
    mf_cross_entropy_options_init(&o);
    o.shift_labels = 1;
    o.seq_len = 3;
    MF_ASSERT_OK(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss));
    /* Reference. */
    float hh[N * D], ww[V * D], loss;
    mf_fill_uniform_f32(hh, N * D, 1, -1.0f, 1.0f);
    mf_fill_uniform_f32(ww, V * D, 2, -1.0f, 1.0f);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL,
                                                  too_big, NULL, &loss, NULL),
                     MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_OK(mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, unused_bad,
                                              &o, &loss, NULL));
}
END_TEST

START_TEST(test_budget_too_small)
{
    mf_context *ctx = mf_test_ctx();
    bufs b = make_bufs();
    const int64_t *lab = b.lab;
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.scratch_budget = 4 * V + 4 * N + 16 - 1; /* one byte short of one row */
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss), MF_ERR_BUDGET);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "budget"));
    MF_ASSERT_STATUS(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL,
                                                       lab, &o, NULL, b.loss, NULL, b.gh, b.gw,
                                                       NULL),
                     MF_ERR_BUDGET);
    o.scratch_budget = 0;
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss), MF_ERR_BUDGET);
    o.scratch_budget = 4 * V + 4 * N + 16; /* exactly one row: runs, in N chunks */
    MF_ASSERT_OK(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss));
}
END_TEST

static Suite *cross_entropy_badinput_suite(void)
{
    Suite *s = suite_create("cross_entropy_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_null_pointers);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_dtype_and_options);
    tcase_add_test(tc, test_labels_out_of_range);
    tcase_add_test(tc, test_budget_too_small);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(cross_entropy_badinput_suite()); }
