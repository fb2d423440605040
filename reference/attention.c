/* Reference attention: the executable specification of the attention fix.
 *
 * Source: seed document 003 ("Memory Profiling", standard_attention):
 *     d_k = q.size(-1)
 *     scores = torch.matmul(q, k.transpose(-2, -1)) / (d_k ** 0.5)
 *     weights = F.softmax(scores, dim=-1)
 *     return torch.matmul(weights, v)
 * plus the usual causal mask (scores[i, j] = -inf for j > i) as an option.
 * "Standard attention memory scales O(n^2) - The attention matrix dominates":
 * this file computes attention exactly that way, in double precision, and
 * materializes the B x H x N x N matrix through the context's host scratch
 * allocator, so its measured peak is the formula in include/memfix/attention.h:
 *   forward : 8 * B*H*N*N    the scores, softmaxed in place into the weights
 *   backward: 16 * B*H*N*N   the weights p and dp = dout . v^T (ds in place of dp)
 * Backward (what autograd does through matmul and softmax):
 *   dv = p^T dout;  dp = dout v^T;  ds = p * (dp - rowsum(p * dp));
 *   dq = ds k / sqrt(D);  dk = ds^T q / sqrt(D)
 * The tiled kernels (optimized/attention.cu) never hold the N x N matrix.
 */
#include "memfix/attention.h"

#include "mf_internal.h"

#include <math.h>
#include <stdint.h>

static size_t nn_bytes(int64_t B, int64_t H, int64_t N, size_t copies)
{
    if (B <= 0 || H <= 0 || N <= 0) return SIZE_MAX;
    size_t x;
    if (!mf_size_mul((size_t)B, (size_t)H, &x) || !mf_size_mul(x, (size_t)N, &x) ||
        !mf_size_mul(x, (size_t)N, &x) || !mf_size_mul(x, copies * sizeof(double), &x))
        return SIZE_MAX;
    return x;
}

size_t mf_ref_attention_forward_scratch_bytes(int64_t B, int64_t H, int64_t N)
{
    return nn_bytes(B, H, N, 1);
}
size_t mf_ref_attention_backward_scratch_bytes(int64_t B, int64_t H, int64_t N)
{
    return nn_bytes(B, H, N, 2);
}

/* Element e of a q/k/v/dout buffer of 'dtype', widened to double (exact). */
static double ld(const void *base, mf_dtype dtype, size_t e)
{
    if (dtype == MF_DTYPE_BF16) return (double)mf_bf16_to_f32(((const uint16_t *)base)[e]);
    return (double)((const float *)base)[e];
}

/* Shared argument checks of both passes: dtype, causal, sizes, every buffer's
 * byte size, and the scratch formula. */
static mf_status check_args(const char *func, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                            int64_t D, int64_t Dv, int backward)
{
    MF_TRY(mf_check_bhnd_args(func, dtype, causal, B, H, N, D, Dv));
    MF_TRY(mf_check_bhnd_bytes(func, dtype, B, H, N, D, Dv, "q/k float bytes (B*H*N*D*4)"));
    const size_t need = backward ? mf_ref_attention_backward_scratch_bytes(B, H, N)
                                 : mf_ref_attention_forward_scratch_bytes(B, H, N);
    if (need == SIZE_MAX)
        return mf_set_error(MF_ERR_OVERFLOW, func, __FILE__, __LINE__,
                            "the reference's %s*B*H*N*N scratch overflows size_t (B=%lld H=%lld N=%lld)",
                            backward ? "16" : "8", (long long)B, (long long)H, (long long)N);
    return MF_OK;
}

/* p[i, :] = softmax_j(q_i . k_j / sqrt(D)) over the visible keys (j <= i when
 * causal; masked entries exactly 0) for one (b, h): 'p' is N x N. Returns
 * lse[i] = log sum_j exp(s[i, j]) through 'lse' (N doubles' worth, may be NULL).
 * Non-finite scores (include/memfix/attention.h): a NaN score makes the row's
 * max, p and lse NaN (a plain '>' max would skip it); every visible score -inf
 * gives p = NaN (0/0, as F.softmax) and lse = -inf (log of an empty sum). */
static void softmax_rows(mf_dtype dtype, int causal, size_t N, size_t D, const void *q, const void *k,
                         size_t qk_off, double *p, float *lse)
{
    const double scale = 1.0 / sqrt((double)D);
    for (size_t i = 0; i < N; i++) {
        double *row = p + i * N;
        const size_t visible = causal ? i + 1 : N;
        double m = -INFINITY;
        for (size_t j = 0; j < N; j++) {
            if (j >= visible) {
                row[j] = -INFINITY;
                continue;
            }
            double s = 0.0;
            for (size_t d = 0; d < D; d++)
                s += ld(q, dtype, qk_off + i * D + d) * ld(k, dtype, qk_off + j * D + d);
            row[j] = s * scale;
            if (isnan(row[j]) || row[j] > m) m = row[j]; /* once NaN, stays NaN */
        }
        double sum = 0.0;
        for (size_t j = 0; j < visible; j++) sum += exp(row[j] - m);
        for (size_t j = 0; j < N; j++) row[j] = j < visible ? exp(row[j] - m) / sum : 0.0;
        if (lse != NULL) lse[i] = (float)(m == -INFINITY ? -INFINITY : m + log(sum));
    }
}

mf_status mf_ref_attention_forward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H,
                                   int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                   const void *v, float *out, float *lse)
{
    MF_CHECK_ALL_NOT_NULL(ctx, q, k, v, out);
    MF_TRY(check_args(__func__, dtype, causal, B, H, N, D, Dv, 0));

    const size_t bh = (size_t)B * (size_t)H, n = (size_t)N, d = (size_t)D, dv = (size_t)Dv;
    /* The B x H x N x N attention matrix, as the document's code holds it. */
    double *p = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST, mf_ref_attention_forward_scratch_bytes(B, H, N), (void **)&p));
    for (size_t g = 0; g < bh; g++)
        softmax_rows(dtype, causal, n, d, q, k, g * n * d, p + g * n * n, lse != NULL ? lse + g * n : NULL);
    /* out = weights @ v */
    for (size_t g = 0; g < bh; g++) {
        const double *pg = p + g * n * n;
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < dv; c++) {
                double acc = 0.0;
                for (size_t j = 0; j < n; j++) acc += pg[i * n + j] * ld(v, dtype, (g * n + j) * dv + c);
                out[(g * n + i) * dv + c] = (float)acc;
            }
    }
    mf_scratch_free(ctx, MF_MEM_HOST, p);
    return MF_OK;
}

mf_status mf_ref_attention_backward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H,
                                    int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                    const void *v, const void *dout, float *dq, float *dk, float *dv)
{
    MF_CHECK_ALL_NOT_NULL(ctx, q, k, v, dout, dq, dk, dv);
    MF_TRY(check_args(__func__, dtype, causal, B, H, N, D, Dv, 1));

    const size_t bh = (size_t)B * (size_t)H, n = (size_t)N, d = (size_t)D, nv = (size_t)Dv;
    const size_t nn = mf_ref_attention_forward_scratch_bytes(B, H, N); /* one N x N double copy */
    const double scale = 1.0 / sqrt((double)d);
    double *p = NULL, *dp = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST, nn, (void **)&p));
    mf_status st = mf_scratch_alloc(ctx, MF_MEM_HOST, nn, (void **)&dp);
    if (st != MF_OK) {
        mf_scratch_free(ctx, MF_MEM_HOST, p);
        return st;
    }
    for (size_t g = 0; g < bh; g++) {
        double *pg = p + g * n * n, *dpg = dp + g * n * n;
        const size_t qk = g * n * d, vo = g * n * nv;
        softmax_rows(dtype, causal, n, d, q, k, qk, pg, NULL);
        /* dv = p^T dout */
        for (size_t j = 0; j < n; j++)
            for (size_t c = 0; c < nv; c++) {
                double acc = 0.0;
                for (size_t i = 0; i < n; i++) acc += pg[i * n + j] * ld(dout, dtype, vo + i * nv + c);
                dv[vo + j * nv + c] = (float)acc;
            }
        /* dp = dout v^T, then ds = p * (dp - sum_j p dp) in place */
        for (size_t i = 0; i < n; i++) {
            double delta = 0.0;
            for (size_t j = 0; j < n; j++) {
                double acc = 0.0;
                for (size_t c = 0; c < nv; c++)
                    acc += ld(dout, dtype, vo + i * nv + c) * ld(v, dtype, vo + j * nv + c);
                dpg[i * n + j] = acc;
                delta += pg[i * n + j] * acc;
            }
            /* masked entries: exactly 0, like masked_fill's backward (0 * NaN would be NaN) */
            const size_t visible = causal ? i + 1 : n;
            for (size_t j = 0; j < n; j++)
                dpg[i * n + j] = j < visible ? pg[i * n + j] * (dpg[i * n + j] - delta) : 0.0;
        }
        /* dq = ds k * scale, dk = ds^T q * scale */
        for (size_t i = 0; i < n; i++)
            for (size_t e = 0; e < d; e++) {
                double acc = 0.0;
                for (size_t j = 0; j < n; j++) acc += dpg[i * n + j] * ld(k, dtype, qk + j * d + e);
                dq[qk + i * d + e] = (float)(acc * scale);
            }
        for (size_t j = 0; j < n; j++)
            for (size_t e = 0; e < d; e++) {
                double acc = 0.0;
                for (size_t i = 0; i < n; i++) acc += dpg[i * n + j] * ld(q, dtype, qk + i * d + e);
                dk[qk + j * d + e] = (float)(acc * scale);
            }
    }
    mf_scratch_free(ctx, MF_MEM_HOST, dp);
    mf_scratch_free(ctx, MF_MEM_HOST, p);
    return MF_OK;
}
