/* Reference NPT per-token weight delta: the old code, on the CPU.
 *
 * Source: 004_96b9c85fa124076d.txt. The original Neuro-Plastic
 * Transformer built the rank-r weight delta of every token at once,
 *
 *     delta_w = torch.einsum('bsr,dr,rf->bsdf', modulation, self.A, self.B)
 *     # Shape: (batch_size, seq_len, d_model, d_ffn)
 *
 * and then applied the modulated weight W + delta_w[b, s] to each token's
 * hidden state. This file does exactly that, so it is the executable
 * specification of what the factored kernel (optimized/npt.cu) must compute:
 *
 *   delta_w[t, d, f] = sum_j A[d, j] * m[t, j] * B[j, f]     (all T tokens)
 *   out[t, f]        = bias[f] + sum_d h[t, d] * (W[d, f] + delta_w[t, d, f])
 *
 * The backward is what autograd does for that graph: it keeps delta_w and forms
 * the gradient of the modulated weight of every token,
 *
 *   G[t, d, f]   = h[t, d] * g[t, f]                  (d out / d (W + delta_w[t]))
 *   grad_h[t, d] = sum_f g[t, f] * (W[d, f] + delta_w[t, d, f])
 *   grad_W[d, f] = sum_t G[t, d, f]
 *   grad_m[t, j] = sum_{d,f} G[t, d, f] * A[d, j] * B[j, f]
 *   grad_A[d, j] = sum_{t,f} G[t, d, f] * m[t, j] * B[j, f]
 *   grad_B[j, f] = sum_{t,d} G[t, d, f] * A[d, j] * m[t, j]
 *   grad_bias[f] = sum_t g[t, f]
 *
 * Both 4D tensors (T x d_model x d_ffn) go through the context's host scratch
 * allocator, so the test suites measure what the old approach costs: T*D*F*4
 * bytes forward, twice that backward (formulas in include/memfix/npt.h). They
 * are stored in fp32 whatever the storage dtype; every sum is accumulated in
 * double; outputs are rounded once to the storage dtype.
 */
#include "memfix/npt.h"

#include "mf_internal.h"

#include <stdint.h>

/* ---- element access in the storage dtype ---------------------------------- */
static double load(mf_dtype dt, const void *p, size_t i)
{
    if (dt == MF_DTYPE_F32) return (double)((const float *)p)[i];
    return (double)mf_bf16_to_f32(((const uint16_t *)p)[i]);
}

static void store(mf_dtype dt, void *p, size_t i, double v)
{
    if (dt == MF_DTYPE_F32)
        ((float *)p)[i] = (float)v;
    else
        ((uint16_t *)p)[i] = mf_f32_to_bf16((float)v);
}

/* ---- argument validation ------------------------------------------------- */
/* Every dim > 0 and T = batch*seq without overflow. */
static mf_status check_dims(const char *func, mf_npt_shape s, size_t *T)
{
    const int64_t dims[5] = { s.batch, s.seq, s.d_model, s.d_ffn, s.rank };
    static const char *const names[5] = { "batch", "seq", "d_model", "d_ffn", "rank" };
    MF_TRY(mf_check_dims_positive(func, "shape.", 5, dims, names));
    return mf_dims_product(func, "batch*seq", T, 2, s.batch, s.seq);
}

/* Checks the context, dtype and shape; returns T and T*D*F (elements of one 4D
 * tensor) with overflow detection, including the byte count of the scratch. */
static mf_status check_common(const char *func, mf_context *ctx, mf_dtype dtype, mf_npt_shape s,
                              int n_tensors_4d, size_t *T, size_t *tdf)
{
    if (ctx == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "ctx is NULL");
    MF_TRY(mf_check_dtype_f32_bf16(func, dtype));
    MF_TRY(check_dims(func, s, T));
    size_t bytes = 0;
    if (!mf_size_mul(*T, (size_t)s.d_model, tdf) || !mf_size_mul(*tdf, (size_t)s.d_ffn, tdf) ||
        !mf_size_mul(*tdf, sizeof(float) * (size_t)n_tensors_4d, &bytes))
        return mf_set_error(MF_ERR_OVERFLOW, func, __FILE__, __LINE__,
                            "batch*seq*d_model*d_ffn*4*%d bytes overflows size_t "
                            "(batch=%lld seq=%lld d_model=%lld d_ffn=%lld)",
                            n_tensors_4d, (long long)s.batch, (long long)s.seq, (long long)s.d_model,
                            (long long)s.d_ffn);
    return MF_OK;
}

#define REF_CHECK_PTR(func, p)                                                                               \
    do {                                                                                                     \
        if ((p) == NULL)                                                                                     \
            return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "%s is NULL", #p);            \
    } while (0)

/* delta_w[t, d, f] = sum_j A[d, j] * m[t, j] * B[j, f], for every token. */
static void build_delta_w(mf_dtype dt, size_t T, size_t D, size_t F, size_t R, const void *A, const void *B,
                          const void *m, float *delta_w)
{
    for (size_t t = 0; t < T; ++t)
        for (size_t d = 0; d < D; ++d)
            for (size_t f = 0; f < F; ++f) {
                double acc = 0.0;
                for (size_t j = 0; j < R; ++j)
                    acc += load(dt, A, d * R + j) * load(dt, m, t * R + j) * load(dt, B, j * F + f);
                delta_w[(t * D + d) * F + f] = (float)acc;
            }
}

/* ---- forward ------------------------------------------------------------- */
mf_status mf_ref_npt_forward(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                             const void *W, const void *A, const void *B, const void *m, const void *bias,
                             void *out)
{
    static const char *const fn = "mf_ref_npt_forward";
    size_t T = 0, tdf = 0;
    MF_TRY(check_common(fn, ctx, dtype, shape, 1, &T, &tdf));
    REF_CHECK_PTR(fn, h);
    REF_CHECK_PTR(fn, W);
    REF_CHECK_PTR(fn, A);
    REF_CHECK_PTR(fn, B);
    REF_CHECK_PTR(fn, m);
    REF_CHECK_PTR(fn, out);
    const size_t D = (size_t)shape.d_model, F = (size_t)shape.d_ffn, R = (size_t)shape.rank;

    /* The 4D tensor of the old code: T x D x F. */
    float *delta_w = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST, tdf * sizeof(float), (void **)&delta_w));
    build_delta_w(dtype, T, D, F, R, A, B, m, delta_w);

    /* out[t] = h[t] . (W + delta_w[t]) + bias */
    for (size_t t = 0; t < T; ++t)
        for (size_t f = 0; f < F; ++f) {
            double acc = bias ? load(dtype, bias, f) : 0.0;
            for (size_t d = 0; d < D; ++d)
                acc += load(dtype, h, t * D + d) *
                       (load(dtype, W, d * F + f) + (double)delta_w[(t * D + d) * F + f]);
            store(dtype, out, t * F + f, acc);
        }

    mf_scratch_free(ctx, MF_MEM_HOST, delta_w);
    return MF_OK;
}

/* The gradient of one factor of delta_w[t, d, f] = sum_j A[d, j] * m[t, j] * B[j, f],
 * element (i, j) of grad_m (i = t), grad_A (i = d) or grad_B (i = f): the sum,
 * over the two of t, d, f the factor lacks, of G[t, d, f] times the other two
 * factors (in the order A, m, B), in double, t outermost. */
enum npt_factor { FACTOR_A, FACTOR_M, FACTOR_B };
static double factor_grad(mf_dtype dt, const float *G, const void *A, const void *m, const void *B, size_t T,
                          size_t D, size_t F, size_t R, enum npt_factor which, size_t i, size_t j)
{
    const size_t t0 = which == FACTOR_M ? i : 0, t1 = which == FACTOR_M ? i + 1 : T;
    const size_t d0 = which == FACTOR_A ? i : 0, d1 = which == FACTOR_A ? i + 1 : D;
    const size_t f0 = which == FACTOR_B ? i : 0, f1 = which == FACTOR_B ? i + 1 : F;
    double acc = 0.0;
    for (size_t t = t0; t < t1; ++t)
        for (size_t d = d0; d < d1; ++d)
            for (size_t f = f0; f < f1; ++f) {
                double term = (double)G[(t * D + d) * F + f];
                if (which != FACTOR_A) term *= load(dt, A, d * R + j);
                if (which != FACTOR_M) term *= load(dt, m, t * R + j);
                if (which != FACTOR_B) term *= load(dt, B, j * F + f);
                acc += term;
            }
    return acc;
}

/* ---- backward ------------------------------------------------------------ */
mf_status mf_ref_npt_backward(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                              const void *W, const void *A, const void *B, const void *m,
                              const void *grad_out, void *grad_h, void *grad_W, void *grad_A, void *grad_B,
                              void *grad_m, void *grad_bias)
{
    static const char *const fn = "mf_ref_npt_backward";
    size_t T = 0, tdf = 0;
    MF_TRY(check_common(fn, ctx, dtype, shape, 2, &T, &tdf));
    REF_CHECK_PTR(fn, h);
    REF_CHECK_PTR(fn, W);
    REF_CHECK_PTR(fn, A);
    REF_CHECK_PTR(fn, B);
    REF_CHECK_PTR(fn, m);
    REF_CHECK_PTR(fn, grad_out);
    if (!grad_h && !grad_W && !grad_A && !grad_B && !grad_m && !grad_bias)
        return mf_set_error(MF_ERR_NULL_POINTER, fn, __FILE__, __LINE__,
                            "no gradient requested (every grad_* output is NULL)");
    const size_t D = (size_t)shape.d_model, F = (size_t)shape.d_ffn, R = (size_t)shape.rank;
    const void *g = grad_out;

    /* What autograd keeps and forms for the old graph: delta_w (saved by the
     * forward; recomputed here) and G = d out / d (W + delta_w), both T x D x F. */
    float *delta_w = NULL, *G = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST, tdf * sizeof(float), (void **)&delta_w));
    mf_status st = mf_scratch_alloc(ctx, MF_MEM_HOST, tdf * sizeof(float), (void **)&G);
    if (st != MF_OK) {
        mf_scratch_free(ctx, MF_MEM_HOST, delta_w);
        return st;
    }
    build_delta_w(dtype, T, D, F, R, A, B, m, delta_w);
    for (size_t t = 0; t < T; ++t)
        for (size_t d = 0; d < D; ++d)
            for (size_t f = 0; f < F; ++f)
                G[(t * D + d) * F + f] = (float)(load(dtype, h, t * D + d) * load(dtype, g, t * F + f));

    if (grad_h) /* grad_h[t, d] = sum_f g[t, f] * (W[d, f] + delta_w[t, d, f]) */
        for (size_t t = 0; t < T; ++t)
            for (size_t d = 0; d < D; ++d) {
                double acc = 0.0;
                for (size_t f = 0; f < F; ++f)
                    acc += load(dtype, g, t * F + f) *
                           (load(dtype, W, d * F + f) + (double)delta_w[(t * D + d) * F + f]);
                store(dtype, grad_h, t * D + d, acc);
            }

    if (grad_W) /* grad_W[d, f] = sum_t G[t, d, f] */
        for (size_t d = 0; d < D; ++d)
            for (size_t f = 0; f < F; ++f) {
                double acc = 0.0;
                for (size_t t = 0; t < T; ++t) acc += (double)G[(t * D + d) * F + f];
                store(dtype, grad_W, d * F + f, acc);
            }

    /* the three factors of delta_w[t, d, f]'s j-th term, A[d, j] * m[t, j] * B[j, f] */
    if (grad_m) /* grad_m[t, j] = sum_{d,f} G[t, d, f] * A[d, j] * B[j, f] */
        for (size_t t = 0; t < T; ++t)
            for (size_t j = 0; j < R; ++j)
                store(dtype, grad_m, t * R + j, factor_grad(dtype, G, A, m, B, T, D, F, R, FACTOR_M, t, j));

    if (grad_A) /* grad_A[d, j] = sum_{t,f} G[t, d, f] * m[t, j] * B[j, f] */
        for (size_t d = 0; d < D; ++d)
            for (size_t j = 0; j < R; ++j)
                store(dtype, grad_A, d * R + j, factor_grad(dtype, G, A, m, B, T, D, F, R, FACTOR_A, d, j));

    if (grad_B) /* grad_B[j, f] = sum_{t,d} G[t, d, f] * A[d, j] * m[t, j] */
        for (size_t j = 0; j < R; ++j)
            for (size_t f = 0; f < F; ++f)
                store(dtype, grad_B, j * F + f, factor_grad(dtype, G, A, m, B, T, D, F, R, FACTOR_B, f, j));

    if (grad_bias) /* grad_bias[f] = sum_t g[t, f] */
        for (size_t f = 0; f < F; ++f) {
            double acc = 0.0;
            for (size_t t = 0; t < T; ++t) acc += load(dtype, g, t * F + f);
            store(dtype, grad_bias, f, acc);
        }

    mf_scratch_free(ctx, MF_MEM_HOST, G);
    mf_scratch_free(ctx, MF_MEM_HOST, delta_w);
    return MF_OK;
}

/* ---- shapes and the reference's memory formulas (include/memfix/npt.h) ----- */
mf_status mf_npt_shape_from_dims(const int64_t h_dims[3], const int64_t W_dims[2], const int64_t A_dims[2],
                                 const int64_t B_dims[2], const int64_t m_dims[3], mf_npt_shape *out)
{
    MF_CHECK_ALL_NOT_NULL(h_dims, W_dims, A_dims, B_dims, m_dims, out);
    mf_npt_shape s = { h_dims[0], h_dims[1], h_dims[2], W_dims[1], A_dims[1] };
    /* (each check names the tensor whose size disagrees and the one it must match) */
    if (W_dims[0] != s.d_model)
        MF_FAIL(MF_ERR_INVALID_SIZE, "W has %lld rows but h has d_model %lld", (long long)W_dims[0],
                (long long)s.d_model);
    if (A_dims[0] != s.d_model)
        MF_FAIL(MF_ERR_INVALID_SIZE, "A has %lld rows but h has d_model %lld", (long long)A_dims[0],
                (long long)s.d_model);
    if (B_dims[0] != s.rank)
        MF_FAIL(MF_ERR_INVALID_SIZE, "B has %lld rows but A has rank %lld columns", (long long)B_dims[0],
                (long long)s.rank);
    if (B_dims[1] != s.d_ffn)
        MF_FAIL(MF_ERR_INVALID_SIZE, "B has %lld columns but W has d_ffn %lld columns", (long long)B_dims[1],
                (long long)s.d_ffn);
    if (m_dims[0] != s.batch || m_dims[1] != s.seq)
        MF_FAIL(MF_ERR_INVALID_SIZE, "m is (%lld, %lld, .) but h is (%lld, %lld, .)", (long long)m_dims[0],
                (long long)m_dims[1], (long long)s.batch, (long long)s.seq);
    if (m_dims[2] != s.rank)
        MF_FAIL(MF_ERR_INVALID_SIZE, "m has rank %lld but A has rank %lld", (long long)m_dims[2],
                (long long)s.rank);
    size_t T = 0;
    MF_TRY(check_dims(__func__, s, &T));
    *out = s;
    return MF_OK;
}

/* T * d_model * d_ffn * elem, or SIZE_MAX. */
static size_t tdf_bytes(mf_npt_shape s, size_t elem)
{
    size_t T = 0, x = 0;
    if (s.batch <= 0 || s.seq <= 0 || s.d_model <= 0 || s.d_ffn <= 0 || s.rank <= 0 || elem == 0)
        return SIZE_MAX;
    if (!mf_size_mul((size_t)s.batch, (size_t)s.seq, &T) || !mf_size_mul(T, (size_t)s.d_model, &x) ||
        !mf_size_mul(x, (size_t)s.d_ffn, &x) || !mf_size_mul(x, elem, &x))
        return SIZE_MAX;
    return x;
}

size_t mf_npt_delta_w_bytes(mf_dtype dtype, mf_npt_shape shape)
{
    return tdf_bytes(shape, mf_dtype_size(dtype));
}

size_t mf_ref_npt_forward_scratch_bytes(mf_npt_shape shape) { return tdf_bytes(shape, sizeof(float)); }

size_t mf_ref_npt_backward_scratch_bytes(mf_npt_shape shape) { return tdf_bytes(shape, 2 * sizeof(float)); }
