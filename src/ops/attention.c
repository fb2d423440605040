/* mf_attention_*: argument validation, backend dispatch, memory formulas, the
 * document's theoretical memory table and the registry entry of the attention
 * fix (seed document 003; see include/memfix/attention.h, reference/attention.c,
 * optimized/attention.cu). */
#include "memfix/attention.h"

#include "memfix/check.h"
#include "memfix/registry.h"
#include "memfix/verify.h"
#include "mf_internal.h"
#include "op_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entry points of optimized/attention.cu (mf_host_* via cudahost, mf_cuda_* via
 * nvcc); arguments are validated before the call. */
#define MF_ATTN_FWD_ENTRY(prefix)                                                               \
    mf_status prefix##attention_tiled_forward(mf_context *ctx, mf_dtype dtype, int causal,     \
                                              int64_t B, int64_t H, int64_t N, int64_t D,       \
                                              int64_t Dv, const void *q, const void *k,         \
                                              const void *v, float *out, float *lse)
#define MF_ATTN_BWD_ENTRY(prefix)                                                               \
    mf_status prefix##attention_tiled_backward(                                                 \
        mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D, \
        int64_t Dv, const void *q, const void *k, const void *v, const float *out,              \
        const void *dout, const float *lse, float *dq, float *dk, float *dv)
MF_ATTN_FWD_ENTRY(mf_host_);
MF_ATTN_BWD_ENTRY(mf_host_);
#ifdef MF_HAVE_CUDA
MF_ATTN_FWD_ENTRY(mf_cuda_);
MF_ATTN_BWD_ENTRY(mf_cuda_);
#endif

static const char *const attention_variant_names[MF_ATTENTION_N_VARIANTS] = {"tiled"};

const char *mf_attention_variant_name(mf_attention_variant v) {
    if ((int)v < 0 || (int)v >= MF_ATTENTION_N_VARIANTS) return NULL;
    return attention_variant_names[v];
}

/* ---- memory formulas ---------------------------------------------------------------- */
size_t mf_attention_tiled_forward_scratch_ceiling(int64_t B, int64_t H, int64_t N) {
    return (B > 0 && H > 0 && N > 0) ? 0 : SIZE_MAX;
}
/* Delta: one float per query row. */
size_t mf_attention_tiled_backward_scratch_ceiling(int64_t B, int64_t H, int64_t N) {
    if (B <= 0 || H <= 0 || N <= 0) return SIZE_MAX;
    size_t x;
    if (!mf_size_mul((size_t)B, (size_t)H, &x) || !mf_size_mul(x, (size_t)N, &x) ||
        !mf_size_mul(x, sizeof(float), &x))
        return SIZE_MAX;
    return x;
}

static int mul_all(size_t *out, size_t a, size_t b, size_t c, size_t d, size_t e) {
    size_t x;
    if (!mf_size_mul(a, b, &x) || !mf_size_mul(x, c, &x) || !mf_size_mul(x, d, &x) ||
        !mf_size_mul(x, e, &x))
        return 0;
    *out = x;
    return 1;
}

mf_status mf_attention_theoretical_memory(int64_t B, int64_t H, int64_t N, int64_t D,
                                          size_t elem_bytes, mf_attention_memory_row *out) {
    MF_CHECK_NOT_NULL(out);
    memset(out, 0, sizeof(*out));
    MF_CHECK_POSITIVE(B);
    MF_CHECK_POSITIVE(H);
    MF_CHECK_POSITIVE(N);
    MF_CHECK_POSITIVE(D);
    if (elem_bytes == 0) MF_FAIL(MF_ERR_INVALID_SIZE, "elem_bytes must be > 0");
    const size_t b = (size_t)B, h = (size_t)H, n = (size_t)N, d = (size_t)D;
    out->seq_len = N;
    /* The document's theoretical_memory(), in bytes instead of MB. */
    if (!mul_all(&out->inputs, 3 * b, h, n, d, elem_bytes) ||
        !mul_all(&out->standard_scores, b, h, n, n, elem_bytes) ||
        !mul_all(&out->linear_bidir_state, b, h, d, d, elem_bytes) ||
        !mul_all(&out->linear_causal_state, b * h, n, d, d, elem_bytes) ||
        !mf_size_add(out->inputs, out->standard_scores, &out->standard_peak) ||
        !mf_size_add(out->inputs, out->linear_bidir_state, &out->linear_bidir_peak) ||
        !mf_size_add(out->inputs, out->linear_causal_state, &out->linear_causal_peak))
        MF_FAIL(MF_ERR_OVERFLOW, "the memory table overflows size_t (B=%lld H=%lld N=%lld D=%lld)",
                (long long)B, (long long)H, (long long)N, (long long)D);
    return MF_OK;
}

/* ---- validation and dispatch ---------------------------------------------------------- */
static mf_status check_common(const char *func, mf_context *ctx, mf_attention_variant variant,
                              mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                              int64_t D, int64_t Dv) {
    if (ctx == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "ctx is NULL");
    if ((int)variant < 0 || (int)variant >= MF_ATTENTION_N_VARIANTS)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "variant %d is not MF_ATTENTION_TILED (0)", (int)variant);
    MF_TRY(mf_check_dtype_f32_bf16(func, dtype));
    MF_TRY(mf_check_bool(func, "causal", causal));
    const int64_t dims[5] = {B, H, N, D, Dv};
    static const char *const names[5] = {"B", "H", "N", "D", "Dv"};
    MF_TRY(mf_check_dims_positive(func, NULL, 5, dims, names));
    if (D > MF_ATTENTION_MAX_HEAD_DIM || Dv > MF_ATTENTION_MAX_HEAD_DIM)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "the tiled kernels support D, Dv <= %d (got D=%lld Dv=%lld)",
                            MF_ATTENTION_MAX_HEAD_DIM, (long long)D, (long long)Dv);
    size_t bytes;
    const int64_t es = (int64_t)mf_dtype_size(dtype);
    MF_TRY(mf_dims_product(func, "q/k bytes (B*H*N*D*dtype size)", &bytes, 5, B, H, N, D, es));
    MF_TRY(mf_dims_product(func, "v bytes (B*H*N*Dv*dtype size)", &bytes, 5, B, H, N, Dv, es));
    MF_TRY(mf_dims_product(func, "dq/dk bytes (B*H*N*D*4)", &bytes, 5, B, H, N, D, (int64_t)4));
    MF_TRY(mf_dims_product(func, "out bytes (B*H*N*Dv*4)", &bytes, 5, B, H, N, Dv, (int64_t)4));
    return MF_OK;
}

typedef mf_status (*attn_fwd_fn)(mf_context *, mf_dtype, int, int64_t, int64_t, int64_t, int64_t,
                                 int64_t, const void *, const void *, const void *, float *,
                                 float *);
typedef mf_status (*attn_bwd_fn)(mf_context *, mf_dtype, int, int64_t, int64_t, int64_t, int64_t,
                                 int64_t, const void *, const void *, const void *, const float *,
                                 const void *, const float *, float *, float *, float *);

mf_status mf_attention_forward(mf_context *ctx, mf_attention_variant variant, mf_dtype dtype,
                               int causal, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                               const void *q, const void *k, const void *v, float *out,
                               float *lse) {
    MF_TRY(check_common(__func__, ctx, variant, dtype, causal, B, H, N, D, Dv));
    MF_CHECK_NOT_NULL(q);
    MF_CHECK_NOT_NULL(k);
    MF_CHECK_NOT_NULL(v);
    MF_CHECK_NOT_NULL(out);
    /* Extents before any launch (the products fit: check_common). */
    const size_t rows = (size_t)B * (size_t)H * (size_t)N, es = mf_dtype_size(dtype);
    MF_TRY(mf_check_device_extent(__func__, ctx, q, rows * (size_t)D * es, "q"));
    MF_TRY(mf_check_device_extent(__func__, ctx, k, rows * (size_t)D * es, "k"));
    MF_TRY(mf_check_device_extent(__func__, ctx, v, rows * (size_t)Dv * es, "v"));
    MF_TRY(mf_check_device_extent(__func__, ctx, out, rows * (size_t)Dv * 4, "out"));
    MF_TRY(mf_check_device_extent(__func__, ctx, lse, rows * 4, "lse"));
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "attention", &is_cuda));
    attn_fwd_fn fn = mf_host_attention_tiled_forward;
#ifdef MF_HAVE_CUDA
    if (is_cuda) fn = mf_cuda_attention_tiled_forward;
#endif
    return fn(ctx, dtype, causal, B, H, N, D, Dv, q, k, v, out, lse);
}

mf_status mf_attention_backward(mf_context *ctx, mf_attention_variant variant, mf_dtype dtype,
                                int causal, int64_t B, int64_t H, int64_t N, int64_t D,
                                int64_t Dv, const void *q, const void *k, const void *v,
                                const float *out, const void *dout, const float *lse, float *dq,
                                float *dk, float *dv) {
    MF_TRY(check_common(__func__, ctx, variant, dtype, causal, B, H, N, D, Dv));
    MF_CHECK_NOT_NULL(q);
    MF_CHECK_NOT_NULL(k);
    MF_CHECK_NOT_NULL(v);
    MF_CHECK_NOT_NULL(out);
    MF_CHECK_NOT_NULL(dout);
    MF_CHECK_NOT_NULL(lse);
    MF_CHECK_NOT_NULL(dq);
    MF_CHECK_NOT_NULL(dk);
    MF_CHECK_NOT_NULL(dv);
    /* Extents before any launch (the products fit: check_common). */
    const size_t rows = (size_t)B * (size_t)H * (size_t)N, es = mf_dtype_size(dtype);
    MF_TRY(mf_check_device_extent(__func__, ctx, q, rows * (size_t)D * es, "q"));
    MF_TRY(mf_check_device_extent(__func__, ctx, k, rows * (size_t)D * es, "k"));
    MF_TRY(mf_check_device_extent(__func__, ctx, v, rows * (size_t)Dv * es, "v"));
    MF_TRY(mf_check_device_extent(__func__, ctx, out, rows * (size_t)Dv * 4, "out"));
    MF_TRY(mf_check_device_extent(__func__, ctx, dout, rows * (size_t)Dv * es, "dout"));
    MF_TRY(mf_check_device_extent(__func__, ctx, lse, rows * 4, "lse"));
    MF_TRY(mf_check_device_extent(__func__, ctx, dq, rows * (size_t)D * 4, "dq"));
    MF_TRY(mf_check_device_extent(__func__, ctx, dk, rows * (size_t)D * 4, "dk"));
    MF_TRY(mf_check_device_extent(__func__, ctx, dv, rows * (size_t)Dv * 4, "dv"));
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "attention", &is_cuda));
    attn_bwd_fn fn = mf_host_attention_tiled_backward;
#ifdef MF_HAVE_CUDA
    if (is_cuda) fn = mf_cuda_attention_tiled_backward;
#endif
    return fn(ctx, dtype, causal, B, H, N, D, Dv, q, k, v, out, dout, lse, dq, dk, dv);
}

/* ---- registry entry: built-in cases for `memfix report` ------------------------------------ */
typedef struct attention_case {
    int64_t B, H, N, D, Dv;
    int causal;
    mf_dtype dtype;
} attention_case;

/* Small shapes (host mode runs them on the CPU): N = 1, N not a multiple of the
 * 16-row tile, causal and not, D != Dv, and the largest head dimension; bf16
 * with D = Dv in {64, 128} runs the tensor-core kernels (attention_mma.cu),
 * N not a multiple of their 64-row blocks. */
static const attention_case attention_cases[] = {
    {1, 1, 1, 8, 8, 1, MF_DTYPE_F32},      {2, 2, 37, 16, 8, 0, MF_DTYPE_F32},
    {2, 2, 37, 16, 8, 1, MF_DTYPE_F32},    {1, 3, 50, 32, 24, 1, MF_DTYPE_BF16},
    {1, 2, 33, 8, 40, 0, MF_DTYPE_BF16},   {1, 1, 20, 128, 128, 1, MF_DTYPE_F32},
    {1, 2, 77, 64, 64, 1, MF_DTYPE_BF16},  {1, 1, 70, 128, 128, 0, MF_DTYPE_BF16},
};

/* The tensor-core path takes bf16 with D == Dv in {64, 128} (the registry's
 * buffers are aligned): its tolerance rows are attention.mma.*. */
static int attention_case_uses_mma(const attention_case *c) {
    return c->dtype == MF_DTYPE_BF16 && c->D == c->Dv && (c->D == 64 || c->D == 128);
}
#define ATTENTION_N_CASES ((int)(sizeof(attention_cases) / sizeof(attention_cases[0])))

/* One case: 'variant' through mf_attention_forward and mf_attention_backward
 * (report), or, when 'fwd' or 'bwd' != NULL, that candidate in place of the
 * tiled forward or backward (memfix verify; the other pass stays ours, and
 * every output is compared). A candidate's scratch is measured around its call
 * alone, against the ceiling of its pass. seed_salt != 0 draws other inputs. */
static mf_status attention_run_case_impl(mf_context *ctx, int variant,
                                         mf_attention_forward_candidate_fn fwd,
                                         mf_attention_backward_candidate_fn bwd, int case_index,
                                         uint64_t seed_salt, mf_case_result *out) {
    MF_CHECK_NOT_NULL(out);
    memset(out, 0, sizeof(*out));
    mf_op_copy_msg(out->op, sizeof(out->op), "attention");
    MF_CHECK_NOT_NULL(ctx);
    if (variant < 0 || variant >= MF_ATTENTION_N_VARIANTS)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "variant %d out of range [0, %d)", variant,
                MF_ATTENTION_N_VARIANTS);
    if (case_index < 0 || case_index >= ATTENTION_N_CASES)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "case %d out of range [0, %d)", case_index,
                ATTENTION_N_CASES);
    const attention_case *c = &attention_cases[case_index];
    const int cand = fwd != NULL || bwd != NULL;
    mf_op_case_labels(out, ctx, cand ? "candidate" : attention_variant_names[variant], c->dtype);
    snprintf(out->shape, sizeof(out->shape), "B=%lld H=%lld N=%lld D=%lld Dv=%lld causal=%d %s",
             (long long)c->B, (long long)c->H, (long long)c->N, (long long)c->D, (long long)c->Dv,
             c->causal, !cand ? "fwd+bwd" : fwd != NULL ? "fwd=candidate" : "bwd=candidate");
    const int mma = attention_case_uses_mma(c);
    const mf_tolerance *tol =
        mf_tolerance_get(mma ? "attention.mma.out.bf16"
                             : c->dtype == MF_DTYPE_BF16 ? "attention.out.bf16" : "attention.out.f32");
    if (tol != NULL) {
        out->atol = tol->atol;
        out->rtol = tol->rtol;
    }
    out->ceiling_bytes = fwd != NULL ? mf_attention_tiled_forward_scratch_ceiling(c->B, c->H, c->N)
                                     : mf_attention_tiled_backward_scratch_ceiling(c->B, c->H, c->N);

    const size_t rows = (size_t)(c->B * c->H * c->N);
    const size_t nqk = rows * (size_t)c->D, nv = rows * (size_t)c->Dv;
    const size_t es = mf_dtype_size(c->dtype);
    const uint64_t seed =
        0x6174746e00000000ull + (uint64_t)case_index * 8u + seed_salt * 0x9e3779b97f4a7c15ull;
    mf_status st = MF_OK;
    void *q = mf_op_make_input(c->dtype, nqk, seed, -1.5f, 1.5f);
    void *k = mf_op_make_input(c->dtype, nqk, seed + 1, -1.5f, 1.5f);
    void *v = mf_op_make_input(c->dtype, nv, seed + 2, -1.0f, 1.0f);
    void *dout = mf_op_make_input(c->dtype, nv, seed + 3, -1.0f, 1.0f);
    /* host results: ref (r_*) and got (g_*), in one block */
    const size_t n_host = 2 * (nv + rows + 2 * nqk + nv);
    float *hb = (float *)malloc(n_host * sizeof(float));
    void *d_q = NULL, *d_k = NULL, *d_v = NULL, *d_do = NULL;
    float *d_out = NULL, *d_lse = NULL, *d_dq = NULL, *d_dk = NULL, *d_dv = NULL;
    if (q == NULL || k == NULL || v == NULL || dout == NULL || hb == NULL) {
        st = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__,
                          "host buffers for case %d", case_index);
        goto done;
    }
    mf_fill_nan_f32(hb, n_host);
    float *r_out = hb, *r_lse = r_out + nv, *r_dq = r_lse + rows, *r_dk = r_dq + nqk, *r_dv = r_dk + nqk;
    float *g_out = r_dv + nv, *g_lse = g_out + nv, *g_dq = g_lse + rows, *g_dk = g_dq + nqk,
          *g_dv = g_dk + nqk;

    if ((st = mf_mem_begin(ctx, MF_MEM_HOST)) != MF_OK ||
        (st = mf_ref_attention_forward(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv, q,
                                       k, v, r_out, r_lse)) != MF_OK ||
        (st = mf_ref_attention_backward(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv,
                                        q, k, v, dout, r_dq, r_dk, r_dv)) != MF_OK)
        goto done;
    out->ref_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    if ((st = mf_buffer_alloc(ctx, nqk * es, &d_q)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nqk * es, &d_k)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nv * es, &d_v)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nv * es, &d_do)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nv * 4, (void **)&d_out)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, rows * 4, (void **)&d_lse)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nqk * 4, (void **)&d_dq)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nqk * 4, (void **)&d_dk)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nv * 4, (void **)&d_dv)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_q, q, nqk * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_k, k, nqk * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_v, v, nv * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_do, dout, nv * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_out, g_out, nv * 4)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_lse, g_lse, rows * 4)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_dq, g_dq, nqk * 4)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_dk, g_dk, nqk * 4)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_dv, g_dv, nv * 4)) != MF_OK)
        goto done;
    if (cand) {
        /* the candidate's pass alone is measured */
        const mf_attention_variant tv = MF_ATTENTION_TILED;
        if (fwd != NULL) {
            if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
                (st = fwd(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv, d_q, d_k, d_v,
                          d_out, d_lse)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK)
                goto done;
            out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
            if ((st = mf_attention_backward(ctx, tv, c->dtype, c->causal, c->B, c->H, c->N, c->D,
                                            c->Dv, d_q, d_k, d_v, d_out, d_do, d_lse, d_dq, d_dk,
                                            d_dv)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK)
                goto done;
        } else {
            if ((st = mf_attention_forward(ctx, tv, c->dtype, c->causal, c->B, c->H, c->N, c->D,
                                           c->Dv, d_q, d_k, d_v, d_out, d_lse)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK ||
                (st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
                (st = bwd(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv, d_q, d_k, d_v,
                          d_out, d_do, d_lse, d_dq, d_dk, d_dv)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK)
                goto done;
            out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
        }
    } else {
        if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
            (st = mf_attention_forward(ctx, (mf_attention_variant)variant, c->dtype, c->causal, c->B,
                                       c->H, c->N, c->D, c->Dv, d_q, d_k, d_v, d_out, d_lse)) != MF_OK ||
            (st = mf_attention_backward(ctx, (mf_attention_variant)variant, c->dtype, c->causal, c->B,
                                        c->H, c->N, c->D, c->Dv, d_q, d_k, d_v, d_out, d_do, d_lse,
                                        d_dq, d_dk, d_dv)) != MF_OK ||
            (st = mf_context_synchronize(ctx)) != MF_OK)
            goto done;
        out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    }
    if ((st = mf_buffer_download(ctx, g_out, d_out, nv * 4)) != MF_OK ||
        (st = mf_buffer_download(ctx, g_lse, d_lse, rows * 4)) != MF_OK ||
        (st = mf_buffer_download(ctx, g_dq, d_dq, nqk * 4)) != MF_OK ||
        (st = mf_buffer_download(ctx, g_dk, d_dk, nqk * 4)) != MF_OK ||
        (st = mf_buffer_download(ctx, g_dv, d_dv, nv * 4)) != MF_OK)
        goto done;

    int pass = 1;
    const char *t_out = mma ? "attention.mma.out" : "attention.out";
    const char *t_lse = mma ? "attention.mma.lse" : "attention.lse";
    const char *t_grad = mma ? "attention.mma.grad" : "attention.grad";
    if ((st = mf_op_fold_compare_row(g_out, r_out, nv, "out", t_out, c->dtype, out, &pass)) != MF_OK ||
        (st = mf_op_fold_compare_row(g_lse, r_lse, rows, "lse", t_lse, c->dtype, out, &pass)) != MF_OK ||
        (st = mf_op_fold_compare_row(g_dq, r_dq, nqk, "dq", t_grad, c->dtype, out, &pass)) != MF_OK ||
        (st = mf_op_fold_compare_row(g_dk, r_dk, nqk, "dk", t_grad, c->dtype, out, &pass)) != MF_OK ||
        (st = mf_op_fold_compare_row(g_dv, r_dv, nv, "dv", t_grad, c->dtype, out, &pass)) != MF_OK)
        goto done;
    mf_op_case_verdict(out, pass);

done:
    mf_op_case_error(out, st);
    void *bufs[] = {d_q, d_k, d_v, d_do, d_out, d_lse, d_dq, d_dk, d_dv};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) mf_buffer_free(ctx, bufs[i]);
    free(hb);
    free(dout);
    free(v);
    free(k);
    free(q);
    return st;
}

static mf_status attention_run_case(mf_context *ctx, int variant, int case_index,
                                    mf_case_result *out) {
    return attention_run_case_impl(ctx, variant, NULL, NULL, case_index, 0, out);
}

/* memfix verify (include/memfix/verify.h): the candidate signatures are those
 * of the tiled entry points of optimized/attention.cu. */
mf_status mf_attention_verify_case(mf_context *ctx, mf_attention_forward_candidate_fn fwd,
                                   mf_attention_backward_candidate_fn bwd, int case_index,
                                   uint64_t seed_salt, mf_case_result *out) {
    if ((fwd == NULL) == (bwd == NULL)) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        MF_FAIL(fwd == NULL ? MF_ERR_NULL_POINTER : MF_ERR_INVALID_ARGUMENT,
                "exactly one of fwd and bwd must be given");
    }
    return attention_run_case_impl(ctx, 0, fwd, bwd, case_index, seed_salt, out);
}

const mf_op_desc mf_op_attention = {
    "attention",
    "softmax(q k^T / sqrt(D)) v, fwd+bwd: tiled online softmax vs materialized N x N scores (seed 003)",
    MF_ATTENTION_N_VARIANTS,
    attention_variant_names,
    ATTENTION_N_CASES,
    attention_run_case,
};
