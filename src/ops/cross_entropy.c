/* mf_cross_entropy: options, planner, memory formulas, argument validation and
 * backend dispatch of the chunked linear cross-entropy fix (seed 000, bug 1; see
 * include/memfix/cross_entropy.h, reference/cross_entropy.c, optimized/cross_entropy.cu).
 * Its registry entry: cross_entropy_cases.c (cases, verify targets, tolerances, the
 * descriptor), cross_entropy_bench.c and cross_entropy_plan.c. */
#include "memfix/cross_entropy.h"

#include "cross_entropy.cuh"
#include "memfix/check.h"
#include "memfix/plan.h"
#include "memfix/registry.h"
#include "mf_deferred.h"
#include "mf_internal.h"
#include "op_common.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel entries and their argument struct: optimized/cross_entropy.cuh. */

/* ---- memory formula of the chunked variant (cross_entropy.h) -------------------- */
static size_t mul3(size_t a, size_t b, size_t c)
{
    size_t r;
    if (!mf_size_mul(a, b, &r) || !mf_size_mul(r, c, &r)) return SIZE_MAX;
    return r;
}

/* Fixed (per-row) part of the chunked variant: per-row losses + two int64 counters. */
static size_t chunked_fixed_bytes(int64_t n_rows)
{
    size_t r;
    if (!mf_size_mul((size_t)n_rows, sizeof(float), &r) || !mf_size_add(r, 2 * sizeof(int64_t), &r))
        return SIZE_MAX;
    return r;
}

size_t mf_cross_entropy_chunked_scratch_ceiling(int64_t n_rows, int64_t vocab, int64_t chunk_rows)
{
    if (n_rows <= 0 || vocab <= 0 || chunk_rows <= 0) return SIZE_MAX;
    size_t tile = mul3((size_t)chunk_rows, (size_t)vocab, sizeof(float)), total;
    size_t fixed = chunked_fixed_bytes(n_rows);
    if (tile == SIZE_MAX || fixed == SIZE_MAX || !mf_size_add(tile, fixed, &total)) return SIZE_MAX;
    return total;
}

/* Fused variant: N row losses + N lse (fp32) + two int64 counters. */
size_t mf_cross_entropy_fused_scratch_ceiling(int64_t n_rows)
{
    if (n_rows <= 0) return SIZE_MAX;
    size_t r;
    if (!mf_size_mul((size_t)n_rows, 2 * sizeof(float), &r) || !mf_size_add(r, 2 * sizeof(int64_t), &r))
        return SIZE_MAX;
    return r;
}

/* ---- planner ---------------------------------------------------------------------- */
mf_status mf_cross_entropy_plan(int64_t n_rows, int64_t vocab, mf_dtype dtype,
                                const mf_cross_entropy_options *opts, mf_cross_entropy_plan_info *out)
{
    MF_CHECK_NOT_NULL(out);
    memset(out, 0, sizeof(*out));
    MF_CHECK_POSITIVE(n_rows);
    MF_CHECK_POSITIVE(vocab);
    MF_TRY(mf_check_dtype_f32_bf16(__func__, dtype));
    mf_cross_entropy_options defaults;
    if (opts == NULL) {
        mf_cross_entropy_options_init(&defaults);
        opts = &defaults;
    }
    MF_TRY(mf_cross_entropy_options_validate(opts));
    size_t row_bytes, fixed = chunked_fixed_bytes(n_rows), one_row;
    MF_TRY(mf_dims_product(__func__, "one logits row (V x 4)", &row_bytes, 2, vocab, (int64_t)4));
    if (fixed == SIZE_MAX || !mf_size_add(fixed, row_bytes, &one_row))
        MF_FAIL(MF_ERR_OVERFLOW, "scratch for N = %lld rows overflows size_t", (long long)n_rows);
    if (opts->scratch_budget < one_row)
        MF_FAIL(MF_ERR_BUDGET,
                "scratch budget of %zu bytes cannot hold one row: needs at least %zu bytes "
                "(one fp32 logits row 4*V = %zu, plus 4*N + 16 = %zu for N = %lld)",
                opts->scratch_budget, one_row, row_bytes, fixed, (long long)n_rows);
    /* Never more than the logits it replaces: size the tile against min(B, L). */
    const size_t logits = mf_cross_entropy_logits_bytes(n_rows, vocab, dtype);
    size_t budget = opts->scratch_budget;
    if (logits != SIZE_MAX && logits < budget) {
        budget = logits;
        out->capped_by_logits = 1;
    }
    out->logits_bytes = logits;
    size_t rows = budget >= one_row ? (budget - fixed) / row_bytes : 1; /* L below one row: C = 1 */
    int64_t chunk = n_rows;
    if (rows < (size_t)chunk) chunk = (int64_t)rows;
    if (opts->max_chunk_rows > 0 && opts->max_chunk_rows < chunk) chunk = opts->max_chunk_rows;
    out->chunk_rows = chunk;
    out->n_chunks = (n_rows + chunk - 1) / chunk;
    out->chunked = out->n_chunks > 1;
    out->tile_bytes = (size_t)chunk * row_bytes;
    out->fixed_bytes = fixed;
    out->scratch_bytes = out->tile_bytes + fixed;
    return MF_OK;
}

/* ---- the deferred label check the kernel entries enqueue ---------------------------- */
typedef struct ce_labels_info {
    const int64_t *labels; /* device */
    int64_t vocab, ignore_index;
    int shifted;
} ce_labels_info;

/* The report of a bad label: MF_ERR_OUT_OF_RANGE naming the row and the label
 * (labels[row + 1] when shifted). */
static mf_status ce_bad_label_report(mf_context *ctx, const char *func, int64_t bad_row, const void *info)
{
    const ce_labels_info *bad = (const ce_labels_info *)info;
    const size_t src = bad->shifted ? (size_t)bad_row + 1 : (size_t)bad_row;
    int64_t value = 0;
    MF_TRY(mf_context_read_device(ctx, &value, bad->labels + src, sizeof value));
    return mf_set_error(MF_ERR_OUT_OF_RANGE, func, __FILE__, __LINE__,
                        "label %lld (labels[%zu], the target of row %zu) is outside [0, %lld) and is not "
                        "ignore_index (%lld); the outputs are unspecified (found on the device, reported at "
                        "the next synchronization of the context)",
                        (long long)value, src, (size_t)bad_row, (long long)bad->vocab,
                        (long long)bad->ignore_index);
}

mf_status mf_cross_entropy_defer_label_check(mf_context *ctx, const char *func, const int64_t *d_first_bad,
                                             const int64_t *labels, int64_t n_rows, int shifted,
                                             int64_t vocab, int64_t ignore_index)
{
    const ce_labels_info info = { labels, vocab, ignore_index, shifted };
    return mf_context_defer_check(ctx, func, d_first_bad, n_rows, ce_bad_label_report, &info, sizeof info);
}

/* ---- validation and dispatch ------------------------------------------------------ */
static mf_status ce_run(const char *func, mf_context *ctx, mf_ce_args *a,
                        const mf_cross_entropy_options *opts)
{
    if (ctx == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "ctx is NULL");
    if (a->hidden == NULL)
        return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "hidden is NULL");
    if (a->weight == NULL)
        return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "weight is NULL");
    if (a->labels == NULL)
        return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "labels is NULL");
    if (a->mode != MF_CE_MODE_BACKWARD && a->loss == NULL)
        return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "loss is NULL");
    if (a->mode == MF_CE_MODE_BACKWARD && a->lse_in == NULL)
        return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__,
                            "lse is NULL (pass the lse written by mf_cross_entropy_forward)");
    if (a->mode != MF_CE_MODE_FORWARD) {
        if (a->grad_hidden == NULL && a->grad_weight == NULL && a->grad_bias == NULL)
            return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__,
                                "grad_hidden, grad_weight and grad_bias are all NULL");
        if (a->grad_bias != NULL && a->bias == NULL)
            return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__,
                                "grad_bias is given but bias is NULL");
    }
    if (a->n_rows <= 0 || a->hidden_dim <= 0 || a->vocab <= 0)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "sizes must be > 0 (n_rows=%lld hidden_dim=%lld vocab=%lld)",
                            (long long)a->n_rows, (long long)a->hidden_dim, (long long)a->vocab);
    MF_TRY(mf_check_dtype_f32_bf16(func, a->dtype));
    const int64_t es = (int64_t)mf_dtype_size(a->dtype);
    size_t bytes;
    MF_TRY(
        mf_dims_product(func, "hidden bytes (N x D x dtype size)", &bytes, 3, a->n_rows, a->hidden_dim, es));
    MF_TRY(
        mf_dims_product(func, "weight bytes (V x D x dtype size)", &bytes, 3, a->vocab, a->hidden_dim, es));
    MF_TRY(mf_dims_product(func, "grad_hidden bytes (N x D x 4)", &bytes, 3, a->n_rows, a->hidden_dim,
                           (int64_t)4));
    MF_TRY(mf_dims_product(func, "grad_weight bytes (V x D x 4)", &bytes, 3, a->vocab, a->hidden_dim,
                           (int64_t)4));
    /* The cuBLAS API takes int sizes; the bf16 gradient tile has a leading
     * dimension of 2V (see optimized/cross_entropy.cu). */
    if (a->vocab > INT_MAX / 2 || a->hidden_dim > INT_MAX)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "vocab must be <= %d and hidden_dim <= %d for cuBLAS (got %lld, %lld)",
                            INT_MAX / 2, INT_MAX, (long long)a->vocab, (long long)a->hidden_dim);
    if (opts == NULL) {
        mf_cross_entropy_options_init(&a->opts);
    } else {
        MF_TRY(mf_cross_entropy_options_validate(opts));
        a->opts = *opts;
    }
    if (a->opts.shift_labels && a->opts.seq_len > 0 && a->n_rows % a->opts.seq_len != 0)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "n_rows %lld is not a multiple of seq_len %lld", (long long)a->n_rows,
                            (long long)a->opts.seq_len);
    if (a->opts.variant == MF_CE_VARIANT_CHUNKED) { /* the fused variant ignores the budget */
        MF_TRY(mf_cross_entropy_plan(a->n_rows, a->vocab, a->dtype, &a->opts, &a->plan));
        if (a->plan.chunk_rows > INT_MAX) { /* cuBLAS takes int n: more chunks, never more scratch */
            a->plan.chunk_rows = INT_MAX;
            a->plan.n_chunks = (a->n_rows + a->plan.chunk_rows - 1) / a->plan.chunk_rows;
            a->plan.chunked = 1;
            a->plan.tile_bytes = (size_t)INT_MAX * (size_t)a->vocab * sizeof(float);
            a->plan.scratch_bytes = a->plan.tile_bytes + a->plan.fixed_bytes;
        }
    }
    /* Extents before any launch (the products fit: checked above). */
    const size_t n = (size_t)a->n_rows, d = (size_t)a->hidden_dim, v = (size_t)a->vocab;
    const size_t per_row = a->opts.reduction == MF_CE_REDUCTION_NONE ? n * 4 : 4;
    MF_TRY(mf_check_device_extent(func, ctx, a->hidden, n * d * (size_t)es, "hidden"));
    MF_TRY(mf_check_device_extent(func, ctx, a->weight, v * d * (size_t)es, "weight"));
    MF_TRY(mf_check_device_extent(func, ctx, a->bias, v * (size_t)es, "bias"));
    MF_TRY(mf_check_device_extent(func, ctx, a->labels, n * 8, "labels"));
    MF_TRY(mf_check_device_extent(func, ctx, a->loss, per_row, "loss"));
    MF_TRY(mf_check_device_extent(func, ctx, a->lse_out, n * 4, "lse"));
    MF_TRY(mf_check_device_extent(func, ctx, a->lse_in, n * 4, "lse"));
    MF_TRY(mf_check_device_extent(func, ctx, a->grad_loss, per_row, "grad_loss"));
    MF_TRY(mf_check_device_extent(func, ctx, a->grad_hidden, n * d * 4, "grad_hidden"));
    MF_TRY(mf_check_device_extent(func, ctx, a->grad_weight, v * d * 4, "grad_weight"));
    MF_TRY(mf_check_device_extent(func, ctx, a->grad_bias, v * 4, "grad_bias"));

    int is_cuda = 0;
    const int fused = a->opts.variant == MF_CE_VARIANT_FUSED;
    MF_TRY(mf_op_pick_backend(func, ctx, "cross_entropy", &is_cuda));
#ifdef MF_HAVE_CUDA
    if (is_cuda) return fused ? mf_cuda_cross_entropy_fused(ctx, a) : mf_cuda_cross_entropy_chunked(ctx, a);
#endif
    return fused ? mf_host_cross_entropy_fused(ctx, a) : mf_host_cross_entropy_chunked(ctx, a);
}

mf_status mf_cross_entropy_wgmma_available(mf_context *ctx, int *available)
{
    if (ctx == NULL) MF_FAIL(MF_ERR_NULL_POINTER, "ctx is NULL");
    if (available == NULL) MF_FAIL(MF_ERR_NULL_POINTER, "available is NULL");
    *available = 0;
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "cross_entropy", &is_cuda));
#ifdef MF_HAVE_CUDA
    if (is_cuda) return mf_cuda_cross_entropy_wgmma_available(ctx, available);
#endif
    return mf_host_cross_entropy_wgmma_available(ctx, available);
}

static void ce_args_init(mf_ce_args *a, mf_ce_mode mode, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                         mf_dtype dtype, const void *hidden, const void *weight, const void *bias,
                         const int64_t *labels)
{
    memset(a, 0, sizeof(*a));
    a->mode = mode;
    a->n_rows = n_rows;
    a->hidden_dim = hidden_dim;
    a->vocab = vocab;
    a->dtype = dtype;
    a->hidden = hidden;
    a->weight = weight;
    a->bias = bias;
    a->labels = labels;
}

/* The gradient inputs and outputs of the passes that run the backward. */
static void ce_args_grads(mf_ce_args *a, const float *grad_loss, float *grad_hidden, float *grad_weight,
                          float *grad_bias)
{
    a->grad_loss = grad_loss;
    a->grad_hidden = grad_hidden;
    a->grad_weight = grad_weight;
    a->grad_bias = grad_bias;
}

mf_status mf_cross_entropy_forward(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                   mf_dtype dtype, const void *hidden, const void *weight, const void *bias,
                                   const int64_t *labels, const mf_cross_entropy_options *opts, float *loss,
                                   float *lse)
{
    mf_ce_args a;
    ce_args_init(&a, MF_CE_MODE_FORWARD, n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, labels);
    a.loss = loss;
    a.lse_out = lse;
    return ce_run(__func__, ctx, &a, opts);
}

mf_status mf_cross_entropy_forward_backward(mf_context *ctx, int64_t n_rows, int64_t hidden_dim,
                                            int64_t vocab, mf_dtype dtype, const void *hidden,
                                            const void *weight, const void *bias, const int64_t *labels,
                                            const mf_cross_entropy_options *opts, const float *grad_loss,
                                            float *loss, float *lse, float *grad_hidden, float *grad_weight,
                                            float *grad_bias)
{
    mf_ce_args a;
    ce_args_init(&a, MF_CE_MODE_FORWARD_BACKWARD, n_rows, hidden_dim, vocab, dtype, hidden, weight, bias,
                 labels);
    ce_args_grads(&a, grad_loss, grad_hidden, grad_weight, grad_bias);
    a.loss = loss;
    a.lse_out = lse;
    return ce_run(__func__, ctx, &a, opts);
}

mf_status mf_cross_entropy_backward(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                    mf_dtype dtype, const void *hidden, const void *weight, const void *bias,
                                    const int64_t *labels, const mf_cross_entropy_options *opts,
                                    const float *lse, const float *grad_loss, float *grad_hidden,
                                    float *grad_weight, float *grad_bias)
{
    mf_ce_args a;
    ce_args_init(&a, MF_CE_MODE_BACKWARD, n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, labels);
    ce_args_grads(&a, grad_loss, grad_hidden, grad_weight, grad_bias);
    a.lse_in = lse;
    return ce_run(__func__, ctx, &a, opts);
}
