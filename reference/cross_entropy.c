/* Reference linear cross-entropy: the old code, which materializes every logit.
 *
 * Source: seed document 000_15d34a4d5aa90e13.txt, bug 1 ("OLD CODE"):
 *
 *     logits = self.lm_head(hidden_states)            # N x V: 37 GB at 131k x 151,936
 *     shift_logits = logits[..., :-1, :].contiguous()
 *     shift_labels = labels[..., 1:].contiguous()
 *     loss = F.cross_entropy(shift_logits.view(-1, V), shift_labels.view(-1),
 *                            ignore_index=-100)
 *
 * This file is the executable specification of include/memfix/cross_entropy.h:
 *   z[i,j]  = sum_d hidden[i,d] W[j,d] + bias[j]
 *   s[i,j]  = softcap > 0 ? softcap tanh(z/softcap) : z
 *   lse[i]  = log sum_j exp(s[i,j])                       (max-subtracted, double)
 *   loss[i] = lse - (1-eps) s[i,y] - eps/V sum_j s[i,j] + z_loss lse^2   (valid rows)
 * reduced by mean over valid rows (0 if none), sum, or none; and its backward
 *   G[i,j]  = g[i] (p (1 + 2 z_loss lse) - eps/V - (1-eps)[j==y]) (1 - (s/softcap)^2)
 *   grad_hidden = G W,  grad_W = G^T hidden,  grad_bias = column sums of G.
 * Like the old code it holds all N x V logits (in double) in the forward, and the
 * N x V logits plus the N x V gradient in the backward, all through the
 * context's host scratch allocator so the cost is measured:
 *   forward N*V*8 bytes, backward 2*N*V*8 bytes (mf_ref_cross_entropy_scratch_bytes).
 * Shifting labels by one within each sequence of length seq_len is the same as
 * the document's slicing: the last position of each sequence has no target.
 */
#include "memfix/cross_entropy.h"
#include "mf_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* One input element as double (f32 or bf16 storage). */
static double ref_load(const void *p, mf_dtype dtype, size_t i)
{
    if (dtype == MF_DTYPE_BF16) return (double)mf_bf16_to_f32(((const uint16_t *)p)[i]);
    return (double)((const float *)p)[i];
}

/* out[r, d] = sum_k G(r, k) x[k, d] in double, k ascending, stored as float:
 * G(r, k) = g[r*g_r + k*g_k] (the N x V gradient of the logits, g_r = V and
 * g_k = 1 for G itself, g_r = 1 and g_k = V for its transpose); x is K x D in
 * the dtype. */
static void ref_grad_product(const double *g, size_t g_r, size_t g_k, size_t rows, size_t K, const void *x,
                             mf_dtype dtype, size_t d_n, float *out)
{
    for (size_t r = 0; r < rows; ++r)
        for (size_t d = 0; d < d_n; ++d) {
            double acc = 0.0;
            for (size_t k = 0; k < K; ++k) acc += g[r * g_r + k * g_k] * ref_load(x, dtype, k * d_n + d);
            out[r * d_n + d] = (float)acc;
        }
}

/* The target of row i: labels[i], or with shift_labels the next label of the
 * same sequence (the last row of each sequence has none: ignore_index). */
static int64_t ref_target(const int64_t *labels, int64_t n_rows, const mf_cross_entropy_options *o, int64_t i)
{
    if (!o->shift_labels) return labels[i];
    int64_t t = o->seq_len > 0 ? o->seq_len : n_rows;
    if (i % t == t - 1) return o->ignore_index;
    return labels[i + 1];
}

/* Shared argument validation for the forward and the backward; counts the
 * valid rows and checks every used label. */
static mf_status ref_validate(const char *func, mf_context *ctx, int64_t n_rows, int64_t hidden_dim,
                              int64_t vocab, mf_dtype dtype, const void *hidden, const void *weight,
                              const int64_t *labels, const mf_cross_entropy_options *o, int64_t *n_valid)
{
    if (ctx == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "ctx is NULL");
    if (hidden == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "hidden is NULL");
    if (weight == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "weight is NULL");
    if (labels == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "labels is NULL");
    if (n_rows <= 0 || hidden_dim <= 0 || vocab <= 0)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "sizes must be > 0 (n_rows=%lld hidden_dim=%lld vocab=%lld)", (long long)n_rows,
                            (long long)hidden_dim, (long long)vocab);
    MF_TRY(mf_check_dtype_f32_bf16(func, dtype));
    size_t bytes;
    MF_TRY(mf_dims_product(func, "hidden (N x D x 8)", &bytes, 3, n_rows, hidden_dim, (int64_t)8));
    MF_TRY(mf_dims_product(func, "weight (V x D x 8)", &bytes, 3, vocab, hidden_dim, (int64_t)8));
    MF_TRY(mf_dims_product(func, "logits and gradient (2 x N x V x 8)", &bytes, 4, (int64_t)2, n_rows, vocab,
                           (int64_t)8));
    MF_TRY(mf_cross_entropy_options_validate(o));
    if (o->shift_labels && o->seq_len > 0 && n_rows % o->seq_len != 0)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "n_rows %lld is not a multiple of seq_len %lld", (long long)n_rows,
                            (long long)o->seq_len);
    int64_t count = 0;
    for (int64_t i = 0; i < n_rows; ++i) {
        int64_t y = ref_target(labels, n_rows, o, i);
        if (y == o->ignore_index) continue;
        if (y < 0 || y >= vocab)
            return mf_set_error(MF_ERR_OUT_OF_RANGE, func, __FILE__, __LINE__,
                                "label %lld used by row %lld is outside [0, %lld) and is not "
                                "ignore_index (%lld)",
                                (long long)y, (long long)i, (long long)vocab, (long long)o->ignore_index);
        ++count;
    }
    *n_valid = count;
    return MF_OK;
}

/* logits[i*V + j] = s[i,j] for every row: the N x V materialization. */
static void ref_logits(int64_t n_rows, int64_t hidden_dim, int64_t vocab, mf_dtype dtype, const void *hidden,
                       const void *weight, const void *bias, float softcap, double *logits)
{
    const size_t n = (size_t)n_rows, d_n = (size_t)hidden_dim, v_n = (size_t)vocab;
    for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < v_n; ++j) {
            double z = bias ? ref_load(bias, dtype, j) : 0.0;
            for (size_t d = 0; d < d_n; ++d)
                z += ref_load(hidden, dtype, i * d_n + d) * ref_load(weight, dtype, j * d_n + d);
            if (softcap > 0.0f) z = (double)softcap * tanh(z / (double)softcap);
            logits[i * v_n + j] = z;
        }
    }
}

/* log sum_j exp(s_j), max-subtracted; a NaN anywhere in the row gives NaN. */
static double ref_lse(const double *s, size_t v_n)
{
    double m = -INFINITY;
    for (size_t j = 0; j < v_n; ++j) {
        if (isnan(s[j])) return NAN;
        if (s[j] > m) m = s[j];
    }
    if (m == -INFINITY) return -INFINITY;
    double sum = 0.0;
    for (size_t j = 0; j < v_n; ++j) sum += exp(s[j] - m);
    return m + log(sum);
}

mf_status mf_ref_cross_entropy_forward(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                       mf_dtype dtype, const void *hidden, const void *weight,
                                       const void *bias, const int64_t *labels,
                                       const mf_cross_entropy_options *opts, float *loss, float *lse)
{
    mf_cross_entropy_options defaults;
    if (opts == NULL) {
        mf_cross_entropy_options_init(&defaults);
        opts = &defaults;
    }
    MF_CHECK_NOT_NULL(loss);
    int64_t n_valid = 0;
    MF_TRY(ref_validate(__func__, ctx, n_rows, hidden_dim, vocab, dtype, hidden, weight, labels, opts,
                        &n_valid));

    const size_t n = (size_t)n_rows, v_n = (size_t)vocab;
    double *logits = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST, n * v_n * sizeof(double), (void **)&logits));
    ref_logits(n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, opts->softcap, logits);

    const double eps = opts->label_smoothing, lam = opts->z_loss;
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double *s = logits + i * v_n;
        double row_lse = ref_lse(s, v_n);
        if (lse) lse[i] = (float)row_lse;
        int64_t y = ref_target(labels, n_rows, opts, (int64_t)i);
        double row_loss = 0.0;
        if (y != opts->ignore_index) {
            double sum_s = 0.0;
            for (size_t j = 0; j < v_n; ++j) sum_s += s[j];
            row_loss = row_lse - (1.0 - eps) * s[y] - eps / (double)vocab * sum_s + lam * row_lse * row_lse;
        }
        if (opts->reduction == MF_CE_REDUCTION_NONE) loss[i] = (float)row_loss;
        total += row_loss;
    }
    if (opts->reduction == MF_CE_REDUCTION_SUM) loss[0] = (float)total;
    if (opts->reduction == MF_CE_REDUCTION_MEAN)
        loss[0] = n_valid > 0 ? (float)(total / (double)n_valid) : 0.0f; /* PyTorch: NaN */

    mf_scratch_free(ctx, MF_MEM_HOST, logits);
    return MF_OK;
}

mf_status mf_ref_cross_entropy_backward(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                        mf_dtype dtype, const void *hidden, const void *weight,
                                        const void *bias, const int64_t *labels,
                                        const mf_cross_entropy_options *opts, const float *grad_loss,
                                        float *grad_hidden, float *grad_weight, float *grad_bias)
{
    mf_cross_entropy_options defaults;
    if (opts == NULL) {
        mf_cross_entropy_options_init(&defaults);
        opts = &defaults;
    }
    if (grad_hidden == NULL && grad_weight == NULL && grad_bias == NULL)
        MF_FAIL(MF_ERR_NULL_POINTER, "grad_hidden, grad_weight and grad_bias are all NULL");
    if (grad_bias != NULL && bias == NULL)
        MF_FAIL(MF_ERR_NULL_POINTER, "grad_bias is given but bias is NULL");
    int64_t n_valid = 0;
    MF_TRY(ref_validate(__func__, ctx, n_rows, hidden_dim, vocab, dtype, hidden, weight, labels, opts,
                        &n_valid));

    const size_t n = (size_t)n_rows, d_n = (size_t)hidden_dim, v_n = (size_t)vocab;
    double *logits = NULL, *grad = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST, n * v_n * sizeof(double), (void **)&logits));
    mf_status st = mf_scratch_alloc(ctx, MF_MEM_HOST, n * v_n * sizeof(double), (void **)&grad);
    if (st != MF_OK) {
        mf_scratch_free(ctx, MF_MEM_HOST, logits);
        return st;
    }
    ref_logits(n_rows, hidden_dim, vocab, dtype, hidden, weight, bias, opts->softcap, logits);

    /* G = dL/dz, row by row. */
    const double eps = opts->label_smoothing, lam = opts->z_loss, cap = opts->softcap;
    for (size_t i = 0; i < n; ++i) {
        const double *s = logits + i * v_n;
        double *g_row = grad + i * v_n;
        int64_t y = ref_target(labels, n_rows, opts, (int64_t)i);
        if (y == opts->ignore_index) {
            memset(g_row, 0, v_n * sizeof(double)); /* exact zero, even for NaN logits */
            continue;
        }
        double g;
        switch (opts->reduction) {
        case MF_CE_REDUCTION_NONE: g = grad_loss ? grad_loss[i] : 1.0; break;
        case MF_CE_REDUCTION_SUM: g = grad_loss ? grad_loss[0] : 1.0; break;
        default: g = (grad_loss ? grad_loss[0] : 1.0) / (double)n_valid; break;
        }
        double row_lse = ref_lse(s, v_n);
        for (size_t j = 0; j < v_n; ++j) {
            double p = exp(s[j] - row_lse);
            double ds =
                p * (1.0 + 2.0 * lam * row_lse) - eps / (double)vocab - ((int64_t)j == y ? 1.0 - eps : 0.0);
            if (cap > 0.0) ds *= 1.0 - (s[j] / cap) * (s[j] / cap);
            g_row[j] = g * ds;
        }
    }

    /* grad_hidden = G W (N x D, sums over the vocabulary j), grad_weight =
     * G^T h (V x D, sums over the rows i). */
    if (grad_hidden) ref_grad_product(grad, v_n, 1, n, v_n, weight, dtype, d_n, grad_hidden);
    if (grad_weight) ref_grad_product(grad, 1, v_n, v_n, n, hidden, dtype, d_n, grad_weight);
    if (grad_bias) {
        for (size_t j = 0; j < v_n; ++j) {
            double acc = 0.0;
            for (size_t i = 0; i < n; ++i) acc += grad[i * v_n + j];
            grad_bias[j] = (float)acc;
        }
    }

    mf_scratch_free(ctx, MF_MEM_HOST, grad);
    mf_scratch_free(ctx, MF_MEM_HOST, logits);
    return MF_OK;
}

/* ---- memory formula: this reference's scratch ------------------------------- */
static size_t mul3(size_t a, size_t b, size_t c)
{
    size_t r;
    if (!mf_size_mul(a, b, &r) || !mf_size_mul(r, c, &r)) return SIZE_MAX;
    return r;
}

size_t mf_ref_cross_entropy_scratch_bytes(int64_t n_rows, int64_t vocab, int backward)
{
    if (n_rows <= 0 || vocab <= 0) return SIZE_MAX;
    return mul3((size_t)n_rows, (size_t)vocab, backward ? 2 * sizeof(double) : sizeof(double));
}
