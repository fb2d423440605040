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
    int64_t lab[N] = { 1, 2, 3, MF_CE_DEFAULT_IGNORE_INDEX, 4, 5 };
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

#define FWD(ctx_, n_, d_, v_, dt_, h_, w_, lab_, o_, loss_)                                                  \
    mf_cross_entropy_forward((ctx_), (n_), (d_), (v_), (dt_), (h_), (w_), NULL, (lab_), (o_),                \
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
    MF_ASSERT_STATUS(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab, NULL,
                                                       NULL, b.loss, NULL, NULL, NULL, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab, NULL,
                                                       NULL, b.loss, NULL, b.gh, b.gw, b.gb),
                     MF_ERR_NULL_POINTER);
    /* Backward: lse is required. */
    MF_ASSERT_STATUS(mf_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab, NULL, NULL,
                                               NULL, b.gh, b.gw, NULL),
                     MF_ERR_NULL_POINTER);
    /* Reference. */
    float hh[N * D], ww[V * D], loss, gh[N * D];
    int64_t hl[N] = { 1, 2, 3, 4, 5, 6 };
    mf_fill_uniform_f32(hh, N * D, 1, -1.0f, 1.0f);
    mf_fill_uniform_f32(ww, V * D, 2, -1.0f, 1.0f);
    MF_ASSERT_STATUS(
        mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, NULL, ww, NULL, hl, NULL, &loss, NULL),
        MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(
        mf_ref_cross_entropy_forward(NULL, N, D, V, MF_DTYPE_F32, hh, ww, NULL, hl, NULL, &loss, NULL),
        MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(
        mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, hl, NULL, NULL, NULL),
        MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, hl, NULL, NULL,
                                                   NULL, NULL, NULL),
                     MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, NULL, NULL, NULL,
                                                   gh, NULL, NULL),
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
    MF_ASSERT_STATUS(FWD(ctx, N, INT64_MAX / 4, INT64_MAX / 4, MF_DTYPE_BF16, b.h, b.w, lab, NULL, b.loss),
                     MF_ERR_OVERFLOW);
    /* Beyond cuBLAS's int sizes (the bf16 gradient tile has leading dimension 2V). */
    MF_ASSERT_STATUS(FWD(ctx, N, 1, (int64_t)1 << 31, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss),
                     MF_ERR_INVALID_SIZE);
    /* Reference: N x V doubles overflow. */
    float hh[N * D], ww[V * D], loss;
    int64_t hl[N] = { 1, 2, 3, 4, 5, 6 };
    mf_fill_uniform_f32(hh, N * D, 1, -1.0f, 1.0f);
    mf_fill_uniform_f32(ww, V * D, 2, -1.0f, 1.0f);
    MF_ASSERT_STATUS(mf_ref_cross_entropy_forward(ctx, INT64_MAX / 8, 1, INT64_MAX / 8, MF_DTYPE_F32, hh, ww,
                                                  NULL, hl, NULL, &loss, NULL),
                     MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(
        mf_ref_cross_entropy_forward(ctx, N, -1, V, MF_DTYPE_F32, hh, ww, NULL, hl, NULL, &loss, NULL),
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
    MF_ASSERT_STATUS(
        mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, hl, &o, &loss, NULL),
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
#define BAD_OPTION(stmt)                                                                                     \
    do {                                                                                                     \
        mf_cross_entropy_options_init(&o);                                                                   \
        stmt;                                                                                                \
        MF_ASSERT_STATUS(mf_cross_entropy_options_validate(&o), MF_ERR_INVALID_ARGUMENT);                    \
        MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss),                         \
                         MF_ERR_INVALID_ARGUMENT);                                                           \
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
    BAD_OPTION(o.variant = (mf_ce_variant)2);
    BAD_OPTION(o.max_chunk_rows = -2);
    BAD_OPTION(o.grad_filter = -1e-3f);
    BAD_OPTION(o.grad_filter = NAN);
    BAD_OPTION(o.grad_filter = INFINITY);
#undef BAD_OPTION
    /* The fused variant ignores the scratch budget: one too small for a chunked
     * row is fine for it. */
    mf_cross_entropy_options_init(&o);
    o.scratch_budget = 64;
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss), MF_ERR_BUDGET);
    o.variant = MF_CE_VARIANT_FUSED;
    MF_ASSERT_OK(mf_cross_entropy_options_validate(&o));
    MF_ASSERT_OK(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss));
}
END_TEST

/* A used label outside [0, V) that is not ignore_index: MF_ERR_OUT_OF_RANGE from
 * every entry; unused labels (the first of a sequence with shift) are not checked. */
/* A label out of range is found on the device and reported by the next
 * synchronization of the context (include/memfix/memfix.h): the call's status,
 * else mf_context_synchronize's. */
static mf_status synced_status(mf_status st)
{
    return st != MF_OK ? st : mf_context_synchronize(mf_test_ctx());
}
#define SYNCED(call) synced_status(call)

START_TEST(test_labels_out_of_range)
{
    mf_context *ctx = mf_test_ctx();
    bufs b = make_bufs();
    const int64_t *lab = b.lab;
    const int64_t too_big[N] = { 1, 2, V, 3, 4, 5 };
    const int64_t negative[N] = { 1, 2, 3, -5, 4, 5 };
    set_labels(&b, too_big);
    MF_ASSERT_STATUS(SYNCED(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss)),
                     MF_ERR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "outside"));
    MF_ASSERT_STATUS(
        SYNCED(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_BF16, b.h, b.w, NULL, lab, NULL, NULL,
                                                 b.loss, NULL, b.gh, b.gw, NULL)),
        MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_STATUS(SYNCED(mf_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab, NULL,
                                                      b.lse, NULL, b.gh, NULL, NULL)),
                     MF_ERR_OUT_OF_RANGE);
    set_labels(&b, negative);
    MF_ASSERT_STATUS(SYNCED(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss)),
                     MF_ERR_OUT_OF_RANGE);
    /* With ignore_index = -5 the same labels are fine; -100 then is out of range. */
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.ignore_index = -5;
    MF_ASSERT_OK(SYNCED(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss)));
    const int64_t with_100[N] = { 1, 2, 3, -100, 4, 5 };
    set_labels(&b, with_100);
    MF_ASSERT_STATUS(SYNCED(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss)), MF_ERR_OUT_OF_RANGE);
    /* With shift (two sequences of 3), labels[0] and labels[3] are never targets. */
    const int64_t unused_bad[N] = { 999, 2, 3, -7, 4, 5 };
    set_labels(&b, unused_bad);
    mf_cross_entropy_options_init(&o);
    o.shift_labels = 1;
    o.seq_len = 3;
    MF_ASSERT_OK(SYNCED(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss)));
    /* The fused variant reports the same rows from its device-side check. */
    mf_cross_entropy_options fo;
    mf_cross_entropy_options_init(&fo);
    fo.variant = MF_CE_VARIANT_FUSED;
    set_labels(&b, too_big);
    MF_ASSERT_STATUS(SYNCED(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &fo, b.loss)),
                     MF_ERR_OUT_OF_RANGE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "labels[2]"));
    MF_ASSERT_STATUS(
        SYNCED(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_BF16, b.h, b.w, NULL, lab, &fo, NULL,
                                                 b.loss, NULL, b.gh, b.gw, NULL)),
        MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_STATUS(SYNCED(mf_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab, &fo,
                                                      b.lse, NULL, b.gh, NULL, NULL)),
                     MF_ERR_OUT_OF_RANGE);
    set_labels(&b, unused_bad);
    fo.shift_labels = 1;
    fo.seq_len = 3;
    MF_ASSERT_OK(SYNCED(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &fo, b.loss)));
    /* Reference. */
    float hh[N * D], ww[V * D], loss;
    mf_fill_uniform_f32(hh, N * D, 1, -1.0f, 1.0f);
    mf_fill_uniform_f32(ww, V * D, 2, -1.0f, 1.0f);
    MF_ASSERT_STATUS(
        mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, too_big, NULL, &loss, NULL),
        MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_OK(
        mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, unused_bad, &o, &loss, NULL));
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
    MF_ASSERT_STATUS(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab, &o,
                                                       NULL, b.loss, NULL, b.gh, b.gw, NULL),
                     MF_ERR_BUDGET);
    o.scratch_budget = 0;
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss), MF_ERR_BUDGET);
    o.scratch_budget = 4 * V + 4 * N + 16; /* exactly one row: runs, in N chunks */
    MF_ASSERT_OK(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, b.loss));
}
END_TEST

/* Bad pointers: every buffer is checked against the extent the shape needs
 * before any launch (MF_ERR_INVALID_SIZE naming it); a freed buffer or a host
 * array is refused (MF_ERR_INVALID_ARGUMENT) without launching, so later calls
 * and new contexts still work. */
START_TEST(test_bad_pointers)
{
    mf_context *ctx = mf_test_ctx();
    bufs b = make_bufs();
    const int64_t *lab = b.lab;
    /* hidden holds N x D floats: N + 1 rows do not fit (labels are checked after). */
    MF_ASSERT_STATUS(FWD(ctx, N, D + 1, V, MF_DTYPE_F32, b.h, b.w, lab, NULL, b.loss), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "hidden is too small"));
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.reduction = MF_CE_REDUCTION_NONE; /* loss: N floats; b.gb holds V = 10 >= N, b.lab 6 int64 */
    float *short_loss = (float *)b.loss + 1;
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, lab, &o, short_loss), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "loss is too small"));
    MF_ASSERT_STATUS(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab, NULL,
                                                       NULL, b.loss, NULL, b.gh, b.gb, NULL),
                     MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "grad_weight is too small"));
    void *freed = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 64, &freed));
    MF_ASSERT_OK(mf_buffer_free(ctx, freed));
    int64_t host_labels[N] = { 0 };
    MF_ASSERT_STATUS(FWD(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, host_labels, NULL, b.loss),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "labels ("));
    MF_ASSERT_STATUS(mf_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, NULL, lab, NULL,
                                               (const float *)freed, NULL, b.gh, NULL, NULL),
                     MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "lse ("));
    /* Nothing launched, nothing sticky. */
    MF_ASSERT_OK(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, b.h, b.w, b.b, lab, NULL, NULL,
                                                   b.loss, b.lse, b.gh, b.gw, b.gb));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    mf_context *fresh = NULL;
    MF_ASSERT_OK(mf_context_create(&fresh, mf_test_backend()));
    mf_context_destroy(fresh);
}
END_TEST

/* Non-finite logits (include/memfix/cross_entropy.h): optimized and reference
 * agree, as PyTorch does. Logits z = hidden . W^T with W[:, 0] > 0: row 0
 * hidden (+inf, 0, 0, 0) -> every logit +inf: lse NaN, loss NaN; row 2
 * (-inf, 0, 0, 0) -> every logit -inf: lse -inf (it was NaN in the optimized
 * code: exp(-inf - -inf)), loss NaN; row 4 has a NaN: lse and loss NaN; row 3
 * is ignored (loss 0); rows 1 and 5 stay finite. The fused backward agrees:
 * grad_hidden rows 0, 2, 4 NaN, others finite. Small chunks (2 rows) so that
 * the non-finite rows fall into different chunks. */
START_TEST(test_nonfinite_logits)
{
    mf_context *ctx = mf_test_ctx();
    float hh[N * D], ww[V * D];
    mf_fill_uniform_f32(hh, N * D, 41, -1.0f, 1.0f);
    mf_fill_uniform_f32(ww, V * D, 42, 0.1f, 1.0f); /* W[:, 0] > 0 */
    for (int d = 0; d < D; d++) hh[0 * D + d] = hh[2 * D + d] = 0.0f;
    hh[0 * D] = INFINITY;
    hh[2 * D] = -INFINITY;
    hh[4 * D + 1] = NAN;
    const int64_t lab[N] = { 1, 2, 3, MF_CE_DEFAULT_IGNORE_INDEX, 4, 5 };
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.reduction = MF_CE_REDUCTION_NONE;
    o.max_chunk_rows = 2;

    float ref_loss[N], ref_lse[N], ref_gh[N * D], ref_gw[V * D];
    MF_ASSERT_OK(
        mf_ref_cross_entropy_forward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, lab, &o, ref_loss, ref_lse));
    MF_ASSERT_OK(mf_ref_cross_entropy_backward(ctx, N, D, V, MF_DTYPE_F32, hh, ww, NULL, lab, &o, NULL,
                                               ref_gh, ref_gw, NULL));
    void *h = mf_test_dev_upload(ctx, hh, sizeof hh), *w = mf_test_dev_upload(ctx, ww, sizeof ww);
    void *l = mf_test_dev_upload(ctx, lab, sizeof lab);
    float *loss = mf_test_dev_nan(ctx, N + 4), *lse = mf_test_dev_nan(ctx, N + 4);
    float *gh = mf_test_dev_nan(ctx, N * D + 4), *gw = mf_test_dev_nan(ctx, V * D + 4);
    MF_ASSERT_OK(mf_cross_entropy_forward_backward(ctx, N, D, V, MF_DTYPE_F32, h, w, NULL, l, &o, NULL, loss,
                                                   lse, gh, gw, NULL));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    float *hl = mf_test_dev_fetch(ctx, loss, N, 4, "loss"), *hs = mf_test_dev_fetch(ctx, lse, N, 4, "lse");
    float *hgh = mf_test_dev_fetch(ctx, gh, N * D, 4, "grad_hidden");
    float *hgw = mf_test_dev_fetch(ctx, gw, V * D, 4, "grad_weight");
    ck_assert_msg(hs[2] == -INFINITY && ref_lse[2] == -INFINITY,
                  "every logit -inf: lse %g, reference %g (want -inf)", hs[2], ref_lse[2]);
    ck_assert_msg(isnan(hl[2]) && isnan(ref_loss[2]), "every logit -inf: loss %g, reference %g (want NaN)",
                  hl[2], ref_loss[2]);
    ck_assert_msg(isnan(hs[0]) && isnan(ref_lse[0]) && isnan(hs[4]) && isnan(ref_lse[4]),
                  "+inf / NaN logits: lse %g %g, reference %g %g (want NaN)", hs[0], hs[4], ref_lse[0],
                  ref_lse[4]);
    ck_assert_msg(hl[3] == 0.0f && isfinite(hl[1]) && isfinite(hl[5]), "ignored row 0, others finite");
    ck_assert_msg(isnan(hgh[2 * D]) && isfinite(hgh[1 * D]), "grad_hidden: row 2 NaN, row 1 finite");
    MF_ASSERT_CLOSE(hl, ref_loss, N, "cross_entropy.loss.f32");
    MF_ASSERT_CLOSE(hs, ref_lse, N, "cross_entropy.loss.f32");
    MF_ASSERT_CLOSE(hgh, ref_gh, N * D, "cross_entropy.grad.f32");
    MF_ASSERT_CLOSE(hgw, ref_gw, V * D, "cross_entropy.grad.f32");
    free(hl);
    free(hs);
    free(hgh);
    free(hgw);
    void *all[] = { h, w, l, loss, lse, gh, gw };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) mf_buffer_free(ctx, all[i]);
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
    tcase_add_test(tc, test_bad_pointers);
    tcase_add_test(tc, test_nonfinite_logits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(cross_entropy_badinput_suite()); }
