/* mf_attention_*: argument validation, backend dispatch, memory formulas, the
 * document's theoretical memory table and the registry entry of the attention
 * fix (seed document 003; see include/memfix/attention.h, reference/attention.c,
 * optimized/attention.cu). */
#include "memfix/attention.h"

#include "attention.cuh"
#include "memfix/check.h"
#include "memfix/plan.h"
#include "memfix/registry.h"
#include "mf_internal.h"
#include "op_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel entries (optimized/attention.cuh): mf_host_* from cudahost,
 * mf_cuda_* from nvcc. Arguments are validated before the call. */

static const char *const attention_variant_names[MF_ATTENTION_N_VARIANTS] = { "tiled" };

const char *mf_attention_variant_name(mf_attention_variant v)
{
    if ((int)v < 0 || (int)v >= MF_ATTENTION_N_VARIANTS) return NULL;
    return attention_variant_names[v];
}

/* ---- memory formulas ---------------------------------------------------------------- */
size_t mf_attention_tiled_forward_scratch_ceiling(int64_t B, int64_t H, int64_t N)
{
    return (B > 0 && H > 0 && N > 0) ? 0 : SIZE_MAX;
}
/* Delta: one float per query row. */
size_t mf_attention_tiled_backward_scratch_ceiling(int64_t B, int64_t H, int64_t N)
{
    if (B <= 0 || H <= 0 || N <= 0) return SIZE_MAX;
    size_t x;
    if (!mf_size_mul((size_t)B, (size_t)H, &x) || !mf_size_mul(x, (size_t)N, &x) ||
        !mf_size_mul(x, sizeof(float), &x))
        return SIZE_MAX;
    return x;
}

static int mul_all(size_t *out, size_t a, size_t b, size_t c, size_t d, size_t e)
{
    size_t x;
    if (!mf_size_mul(a, b, &x) || !mf_size_mul(x, c, &x) || !mf_size_mul(x, d, &x) || !mf_size_mul(x, e, &x))
        return 0;
    *out = x;
    return 1;
}

mf_status mf_attention_theoretical_memory(int64_t B, int64_t H, int64_t N, int64_t D, size_t elem_bytes,
                                          mf_attention_memory_row *out)
{
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
static mf_status check_common(const char *func, mf_context *ctx, mf_attention_variant variant, mf_dtype dtype,
                              int causal, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv)
{
    if (ctx == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "ctx is NULL");
    if ((int)variant < 0 || (int)variant >= MF_ATTENTION_N_VARIANTS)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "variant %d is not MF_ATTENTION_TILED (0)", (int)variant);
    MF_TRY(mf_check_bhnd_args(func, dtype, causal, B, H, N, D, Dv));
    if (D > MF_ATTENTION_MAX_HEAD_DIM || Dv > MF_ATTENTION_MAX_HEAD_DIM)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "the tiled kernels support D, Dv <= %d (got D=%lld Dv=%lld)",
                            MF_ATTENTION_MAX_HEAD_DIM, (long long)D, (long long)Dv);
    MF_TRY(mf_check_bhnd_bytes(func, dtype, B, H, N, D, Dv, "dq/dk bytes (B*H*N*D*4)"));
    return MF_OK;
}

mf_status mf_attention_forward(mf_context *ctx, mf_attention_variant variant, mf_dtype dtype, int causal,
                               int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                               const void *k, const void *v, float *out, float *lse)
{
    MF_TRY(check_common(__func__, ctx, variant, dtype, causal, B, H, N, D, Dv));
    /* The operands (lse optional), then their extents before any launch (the
     * products fit: check_common). */
    const size_t rows = (size_t)B * (size_t)H * (size_t)N, es = mf_dtype_size(dtype);
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const mf_op_extent ext[] = { { "q", q, nqk * es, 1 },
                                 { "k", k, nqk * es, 1 },
                                 { "v", v, nv * es, 1 },
                                 { "out", out, nv * 4, 1 },
                                 { "lse", lse, rows * 4, 0 } };
    MF_TRY(mf_op_check_required(__func__, ext, MF_OP_N_EXTENTS(ext)));
    MF_TRY(mf_op_check_extents(__func__, ctx, ext, MF_OP_N_EXTENTS(ext)));
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "attention", &is_cuda));
    mf_attention_forward_kernel_fn *fn = mf_host_attention_tiled_forward;
#ifdef MF_HAVE_CUDA
    if (is_cuda) fn = mf_cuda_attention_tiled_forward;
#endif
    return fn(ctx, dtype, causal, B, H, N, D, Dv, q, k, v, out, lse);
}

mf_status mf_attention_backward(mf_context *ctx, mf_attention_variant variant, mf_dtype dtype, int causal,
                                int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                const void *k, const void *v, const float *out, const void *dout,
                                const float *lse, float *dq, float *dk, float *dv)
{
    MF_TRY(check_common(__func__, ctx, variant, dtype, causal, B, H, N, D, Dv));
    /* The operands, then their extents before any launch (the products fit:
     * check_common). */
    const size_t rows = (size_t)B * (size_t)H * (size_t)N, es = mf_dtype_size(dtype);
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const mf_op_extent ext[] = { { "q", q, nqk * es, 1 },      { "k", k, nqk * es, 1 },
                                 { "v", v, nv * es, 1 },       { "out", out, nv * 4, 1 },
                                 { "dout", dout, nv * es, 1 }, { "lse", lse, rows * 4, 1 },
                                 { "dq", dq, nqk * 4, 1 },     { "dk", dk, nqk * 4, 1 },
                                 { "dv", dv, nv * 4, 1 } };
    MF_TRY(mf_op_check_required(__func__, ext, MF_OP_N_EXTENTS(ext)));
    MF_TRY(mf_op_check_extents(__func__, ctx, ext, MF_OP_N_EXTENTS(ext)));
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "attention", &is_cuda));
    mf_attention_backward_kernel_fn *fn = mf_host_attention_tiled_backward;
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
    int fwd_only; /* the forward alone (its scratch peak: the memory suite) */
} attention_case;

/* Small shapes (host mode runs them on the CPU): N = 1, N not a multiple of the
 * 16-row tile, causal and not, D != Dv, and the largest head dimension; bf16
 * with D = Dv in {64, 128} runs the tensor-core kernels (attention_mma.cu),
 * N not a multiple of their 128-row blocks. */
static const attention_case attention_cases[] = {
    { 1, 1, 1, 8, 8, 1, MF_DTYPE_F32, 0 },
    { 2, 2, 37, 16, 8, 0, MF_DTYPE_F32, 0 },
    { 2, 2, 37, 16, 8, 1, MF_DTYPE_F32, 0 },
    { 1, 3, 50, 32, 24, 1, MF_DTYPE_BF16, 0 },
    { 1, 2, 33, 8, 40, 0, MF_DTYPE_BF16, 0 },
    { 1, 1, 20, 128, 128, 1, MF_DTYPE_F32, 0 },
    { 1, 2, 77, 64, 64, 1, MF_DTYPE_BF16, 0 },
    { 1, 1, 70, 128, 128, 0, MF_DTYPE_BF16, 0 },
    /* The equivalence suite's (tests/equivalence/test_attention_equiv.c runs
     * every case): N = 1 in bf16, D != Dv and Dv > D, the largest head
     * dimension with N tiny, D = Dv = 1; the tensor-core kernels with N not a
     * multiple of their 256-query / 128-key / 64- or 32-row blocks (nor of 16),
     * several blocks, N = 1, exactly one block, two 256-query forward blocks. */
    { 1, 2, 1, 4, 6, 0, MF_DTYPE_BF16, 0 },
    { 1, 3, 50, 32, 24, 0, MF_DTYPE_BF16, 0 },
    { 1, 2, 64, 32, 32, 1, MF_DTYPE_F32, 0 },
    { 1, 1, 48, 16, 40, 0, MF_DTYPE_F32, 0 },
    { 1, 1, 5, 128, 128, 1, MF_DTYPE_F32, 0 },
    { 1, 1, 3, 128, 96, 0, MF_DTYPE_BF16, 0 },
    { 1, 1, 17, 1, 1, 1, MF_DTYPE_F32, 0 },
    { 1, 2, 77, 64, 64, 0, MF_DTYPE_BF16, 0 },
    { 2, 1, 150, 128, 128, 0, MF_DTYPE_BF16, 0 },
    { 2, 1, 150, 128, 128, 1, MF_DTYPE_BF16, 0 },
    { 1, 1, 1, 64, 64, 1, MF_DTYPE_BF16, 0 },
    { 1, 1, 64, 128, 128, 1, MF_DTYPE_BF16, 0 },
    { 1, 1, 9, 64, 64, 0, MF_DTYPE_BF16, 0 },
    { 1, 1, 300, 64, 64, 1, MF_DTYPE_BF16, 0 },
    { 1, 1, 270, 128, 128, 0, MF_DTYPE_BF16, 0 },
    /* 23-50 (ATTENTION_MEM_ROW0): the memory suite's shapes
     * (tests/memory/test_attention_memory.c), each the forward alone then
     * forward + backward; attention_case_applies keeps them out of the sweeps
     * (mf_test_op_case_unlisted). B=1 H=2 N=40 D=16 Dv=8, causal 0/1, fp32
     * and bf16 (23-30); */
    { 1, 2, 40, 16, 8, 0, MF_DTYPE_F32, 1 },
    { 1, 2, 40, 16, 8, 0, MF_DTYPE_F32, 0 },
    { 1, 2, 40, 16, 8, 0, MF_DTYPE_BF16, 1 },
    { 1, 2, 40, 16, 8, 0, MF_DTYPE_BF16, 0 },
    { 1, 2, 40, 16, 8, 1, MF_DTYPE_F32, 1 },
    { 1, 2, 40, 16, 8, 1, MF_DTYPE_F32, 0 },
    { 1, 2, 40, 16, 8, 1, MF_DTYPE_BF16, 1 },
    { 1, 2, 40, 16, 8, 1, MF_DTYPE_BF16, 0 },
    /* N and 2N, causal fp32, D = Dv = 8 (31-34); */
    { 1, 2, 24, 8, 8, 1, MF_DTYPE_F32, 1 },
    { 1, 2, 24, 8, 8, 1, MF_DTYPE_F32, 0 },
    { 1, 2, 48, 8, 8, 1, MF_DTYPE_F32, 1 },
    { 1, 2, 48, 8, 8, 1, MF_DTYPE_F32, 0 },
    /* the tensor-core path: bf16, D = Dv in {64, 128}, causal 0/1, N = 37 and
     * 74 (not multiples of the 64-row blocks) (35-50). */
    { 1, 2, 37, 64, 64, 0, MF_DTYPE_BF16, 1 },
    { 1, 2, 37, 64, 64, 0, MF_DTYPE_BF16, 0 },
    { 1, 2, 74, 64, 64, 0, MF_DTYPE_BF16, 1 },
    { 1, 2, 74, 64, 64, 0, MF_DTYPE_BF16, 0 },
    { 1, 2, 37, 64, 64, 1, MF_DTYPE_BF16, 1 },
    { 1, 2, 37, 64, 64, 1, MF_DTYPE_BF16, 0 },
    { 1, 2, 74, 64, 64, 1, MF_DTYPE_BF16, 1 },
    { 1, 2, 74, 64, 64, 1, MF_DTYPE_BF16, 0 },
    { 1, 2, 37, 128, 128, 0, MF_DTYPE_BF16, 1 },
    { 1, 2, 37, 128, 128, 0, MF_DTYPE_BF16, 0 },
    { 1, 2, 74, 128, 128, 0, MF_DTYPE_BF16, 1 },
    { 1, 2, 74, 128, 128, 0, MF_DTYPE_BF16, 0 },
    { 1, 2, 37, 128, 128, 1, MF_DTYPE_BF16, 1 },
    { 1, 2, 37, 128, 128, 1, MF_DTYPE_BF16, 0 },
    { 1, 2, 74, 128, 128, 1, MF_DTYPE_BF16, 1 },
    { 1, 2, 74, 128, 128, 1, MF_DTYPE_BF16, 0 },
    /* The last ATTENTION_N_LARGE_CASES (51-53): multi-tile shapes closer to real
     * use, too slow for the suite's sweep in host mode; attention_case_applies
     * keeps them out of it and test_attention_equiv_large (label slow) runs them
     * (mf_test_op_case_unlisted): N = 256 causal fp32 over two heads, N = 200
     * with D = Dv = 128 on the tensor cores, D != Dv bf16 with B = H = 2. */
    { 1, 2, 256, 64, 64, 1, MF_DTYPE_F32, 0 },
    { 1, 1, 200, 128, 128, 0, MF_DTYPE_BF16, 0 },
    { 2, 2, 130, 32, 48, 1, MF_DTYPE_BF16, 0 },
};
/* memfix verify's fixed cases: the first 8 (the rest are the test suite's; its
 * random cases cover D, Dv, causal and dtype). */
#define ATTENTION_N_VERIFY_CASES 8
/* The table's last cases: test_attention_equiv_large's, out of every sweep. */
#define ATTENTION_N_LARGE_CASES 3
/* The memory suite's rows (the forward alone, then forward + backward, per
 * shape), before the large cases, out of every sweep too. */
#define ATTENTION_MEM_ROW0 23
#define ATTENTION_N_MEM_ROWS 28

/* The tensor-core path takes bf16 with D == Dv in {64, 128} (the registry's
 * buffers are aligned): its tolerance rows are attention.mma.*. */
static int attention_case_uses_mma(const attention_case *c)
{
    return c->dtype == MF_DTYPE_BF16 && c->D == c->Dv && (c->D == 64 || c->D == 128);
}
#define ATTENTION_N_CASES ((int)(sizeof(attention_cases) / sizeof(attention_cases[0])))

/* mf_op_desc.case_applies: every case but the memory suite's rows and the last
 * ATTENTION_N_LARGE_CASES (test_attention_memory's and test_attention_equiv_large's,
 * run through mf_test_op_case_unlisted). */
static int attention_case_applies(int variant, int case_index)
{
    (void)variant;
    return case_index >= 0 && case_index < ATTENTION_MEM_ROW0;
}
_Static_assert(ATTENTION_MEM_ROW0 + ATTENTION_N_MEM_ROWS + ATTENTION_N_LARGE_CASES == ATTENTION_N_CASES,
               "the memory rows are followed by the large cases alone");

/* ---- seeded random cases (memfix verify --seed/--cases/--large) ---------- */
/* Random case i of a seed, k = i + seed: causal on odd k, bf16 on k / 2 odd;
 * D from {8, 16, 24, 40, 64, 128} with Dv = D (every other case: the bf16
 * tensor-core path at 64 and 128) or another size; N odd, never a multiple of
 * the 16- or 128-row tiles; outputs > 4096 elements. The large case:
 * B*H*N*N > 2^31 attention scores (the reference materializes them). */
static void attention_generate(const mf_case_id *id, attention_case *c)
{
    mf_tb_rng r = mf_tb_case_rng("attention", id);
    const int k = (int)(((uint64_t)id->index + id->seed) % 4u);
    static const int64_t dims[] = { 8, 16, 24, 40, 64, 128 };
    c->causal = k % 2;
    c->dtype = k / 2 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    c->B = mf_tb_rand_int(&r, 1, 2);
    c->H = mf_tb_rand_int(&r, 1, 3);
    c->D = mf_tb_rand_pick(&r, dims, 6);
    c->Dv = mf_tb_rand_chance(&r, 1, 2) ? c->D : mf_tb_rand_pick(&r, dims, 4);
    c->fwd_only = 0;
    c->N = mf_tb_rand_int(&r, 8, 70) * 2 + 1;
    while (c->B * c->H * c->N * c->Dv <= 4096) c->N += 16;
    if (id->kind == MF_CASE_LARGE) c->B = 1, c->H = 1, c->N = 46345, c->D = c->Dv = 16;
}

static mf_status attention_case_of(const mf_case_id *id, attention_case *c)
{
    if (id->kind == MF_CASE_FIXED) {
        if (id->index < 0 || id->index >= ATTENTION_N_CASES)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "attention: case %d out of range [0, %d)", id->index,
                    ATTENTION_N_CASES);
        *c = attention_cases[id->index];
    } else {
        attention_generate(id, c);
    }
    return MF_OK;
}

static void attention_shape(const attention_case *c, const char *pass, char *buf, size_t cap)
{
    snprintf(buf, cap, "B=%lld H=%lld N=%lld D=%lld Dv=%lld causal=%d %s", (long long)c->B, (long long)c->H,
             (long long)c->N, (long long)c->D, (long long)c->Dv, c->causal, pass);
}

static mf_status attention_verify_id_check(const mf_case_id *id)
{
    if (id->kind == MF_CASE_FIXED && (id->index < 0 || id->index >= ATTENTION_N_VERIFY_CASES))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "attention: verify case %d out of range [0, %d)", id->index,
                ATTENTION_N_VERIFY_CASES);
    return MF_OK;
}

static mf_status attention_describe_pass(const mf_case_id *id, const char *pass, char *buf, size_t cap,
                                         size_t *bytes)
{
    MF_TRY(attention_verify_id_check(id));
    attention_case c;
    MF_TRY(attention_case_of(id, &c));
    char shape[160];
    attention_shape(&c, pass, shape, sizeof shape);
    snprintf(buf, cap, "%s %s", mf_dtype_name(c.dtype), shape);
    const size_t rows = (size_t)(c.B * c.H * c.N);
    /* the reference's N x N scores and probabilities in double; inputs, outputs on both sides */
    *bytes =
        16 * (size_t)(c.B * c.H) * (size_t)c.N * (size_t)c.N + 16 * rows * (size_t)(2 * c.D + 2 * c.Dv + 1);
    return MF_OK;
}

MF_TB_DESCRIBE_PASS(attention_describe_fwd, attention_describe_pass, "fwd=candidate")

MF_TB_DESCRIBE_PASS(attention_describe_bwd, attention_describe_pass, "bwd=candidate")

/* One case: 'variant' through mf_attention_forward and mf_attention_backward
 * (report), or, when 'fwd' or 'bwd' != NULL, that candidate in place of the
 * tiled forward or backward (memfix verify; the other pass stays ours, and
 * every output is compared). A candidate's scratch is measured around its call
 * alone, against the ceiling of its pass. A 'fwd_only' row (the memory
 * suite's) runs, measures and compares the forward alone, against the
 * forward's ceiling. seed_salt != 0 draws other inputs. */
static mf_status attention_run_case_impl(mf_context *ctx, int variant, mf_attention_forward_candidate_fn fwd,
                                         mf_attention_backward_candidate_fn bwd, const mf_case_id *id,
                                         uint64_t seed_salt, mf_case_result *out)
{
    MF_TRY(
        mf_tb_case_begin_id(out, "attention", ctx, variant, MF_ATTENTION_N_VARIANTS, id, ATTENTION_N_CASES));
    attention_case cc;
    MF_TRY(attention_case_of(id, &cc));
    const attention_case *c = &cc;
    const int cand = fwd != NULL || bwd != NULL;
    const int fwd_only = !cand && c->fwd_only;
    mf_tb_case_labels(out, ctx, cand ? "candidate" : attention_variant_names[variant], c->dtype);
    attention_shape(c,
                    !cand         ? (fwd_only ? "fwd" : "fwd+bwd")
                    : fwd != NULL ? "fwd=candidate"
                                  : "bwd=candidate",
                    out->shape, sizeof(out->shape));
    const int mma = attention_case_uses_mma(c);
    const mf_tolerance *tol = mf_tolerance_get(mma                         ? "attention.mma.out.bf16"
                                               : c->dtype == MF_DTYPE_BF16 ? "attention.out.bf16"
                                                                           : "attention.out.f32");
    if (tol != NULL) {
        out->atol = tol->atol;
        out->rtol = tol->rtol;
    }
    out->ceiling_bytes = fwd != NULL || fwd_only
                             ? mf_attention_tiled_forward_scratch_ceiling(c->B, c->H, c->N)
                             : mf_attention_tiled_backward_scratch_ceiling(c->B, c->H, c->N);

    const size_t rows = (size_t)(c->B * c->H * c->N);
    const size_t nqk = rows * (size_t)c->D, nv = rows * (size_t)c->Dv;
    const uint64_t seed = mf_tb_case_seed(id, 0x6174746e00000000ull, 8u, seed_salt);
    enum { Q, K, V, DOUT, OUT, LSE, DQ, DK, DV, NT };
    const char *const tol_out = mma ? "attention.mma.out" : "attention.out",
                      *const tol_lse = mma ? "attention.mma.lse" : "attention.lse",
                      *const tol_grad = mma ? "attention.mma.grad" : "attention.grad";
    /* the axes a reason names an element by: q, k, dq, dk (b, h, row, col < D); v, dout, out, dv (col < Dv) */
    const mf_axes aqk = { "b h row col", { c->B, c->H, c->N, c->D } },
                  av = { "b h row col", { c->B, c->H, c->N, c->Dv } },
                  al = { "b h row", { c->B, c->H, c->N } };
    mf_tb_tensor t[NT] = {
        { "q", MF_TB_IN, nqk, -1.5f, 1.5f, NULL, NULL, NULL, NULL, aqk },
        { "k", MF_TB_IN, nqk, -1.5f, 1.5f, NULL, NULL, NULL, NULL, aqk },
        { "v", MF_TB_IN, nv, -1.0f, 1.0f, NULL, NULL, NULL, NULL, av },
        { "dout", MF_TB_IN, nv, -1.0f, 1.0f, NULL, NULL, NULL, NULL, av },
        { "out", MF_TB_OUT, nv, 0.0f, 0.0f, tol_out, NULL, NULL, NULL, av },
        { "lse", MF_TB_OUT, rows, 0.0f, 0.0f, tol_lse, NULL, NULL, NULL, al },
        { "dq", MF_TB_OUT, nqk, 0.0f, 0.0f, tol_grad, NULL, NULL, NULL, aqk },
        { "dk", MF_TB_OUT, nqk, 0.0f, 0.0f, tol_grad, NULL, NULL, NULL, aqk },
        { "dv", MF_TB_OUT, nv, 0.0f, 0.0f, tol_grad, NULL, NULL, NULL, av },
    };
    /* a fwd_only row makes, compares and frees the forward's tensors alone (dq, dk, dv are last) */
    const int nt = fwd_only ? DQ : NT;
    mf_status st = mf_tb_tensors_make(t, nt, c->dtype, seed);
    if (st != MF_OK) goto done;

    if ((st = mf_mem_begin(ctx, MF_MEM_HOST)) != MF_OK ||
        (st = mf_ref_attention_forward(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv, t[Q].host,
                                       t[K].host, t[V].host, t[OUT].host, t[LSE].host)) != MF_OK ||
        (!fwd_only && (st = mf_ref_attention_backward(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv,
                                                      t[Q].host, t[K].host, t[V].host, t[DOUT].host,
                                                      t[DQ].host, t[DK].host, t[DV].host)) != MF_OK))
        goto done;
    out->ref_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    if ((st = mf_tb_tensors_upload(ctx, t, nt, c->dtype)) != MF_OK) goto done;
    const void *d_q = t[Q].dev, *d_k = t[K].dev, *d_v = t[V].dev, *d_do = t[DOUT].dev;
    float *d_out = t[OUT].dev, *d_lse = t[LSE].dev, *d_dq = t[DQ].dev, *d_dk = t[DK].dev, *d_dv = t[DV].dev;
    if (cand) {
        /* the candidate's pass alone is measured */
        const mf_attention_variant tv = MF_ATTENTION_TILED;
        if (fwd != NULL) {
            if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
                (st = fwd(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv, d_q, d_k, d_v, d_out,
                          d_lse)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK)
                goto done;
            out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
            if ((st = mf_attention_backward(ctx, tv, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv, d_q,
                                            d_k, d_v, d_out, d_do, d_lse, d_dq, d_dk, d_dv)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK)
                goto done;
        } else {
            if ((st = mf_attention_forward(ctx, tv, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv, d_q,
                                           d_k, d_v, d_out, d_lse)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK ||
                (st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
                (st = bwd(ctx, c->dtype, c->causal, c->B, c->H, c->N, c->D, c->Dv, d_q, d_k, d_v, d_out, d_do,
                          d_lse, d_dq, d_dk, d_dv)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK)
                goto done;
            out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
        }
    } else {
        if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
            (st = mf_attention_forward(ctx, (mf_attention_variant)variant, c->dtype, c->causal, c->B, c->H,
                                       c->N, c->D, c->Dv, d_q, d_k, d_v, d_out, d_lse)) != MF_OK ||
            (!fwd_only && (st = mf_attention_backward(ctx, (mf_attention_variant)variant, c->dtype, c->causal,
                                                      c->B, c->H, c->N, c->D, c->Dv, d_q, d_k, d_v, d_out,
                                                      d_do, d_lse, d_dq, d_dk, d_dv)) != MF_OK) ||
            (st = mf_context_synchronize(ctx)) != MF_OK)
            goto done;
        out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    }

    st = mf_tb_tensors_verdict(ctx, t, nt, c->dtype, out);

done:
    mf_tb_case_error(out, st);
    mf_tb_tensors_free(ctx, t, nt);
    return st;
}

static mf_status attention_run_case(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    const mf_case_id id = mf_tb_fixed_id(case_index);
    return attention_run_case_impl(ctx, variant, NULL, NULL, &id, 0, out);
}

/* memfix verify (include/memfix/verify.h): the candidate signatures are those
 * of the tiled entry points of optimized/attention.cu. */
static mf_status attention_verify_case(mf_context *ctx, mf_attention_forward_candidate_fn fwd,
                                       mf_attention_backward_candidate_fn bwd, const mf_case_id *id,
                                       uint64_t seed_salt, mf_case_result *out)
{
    if ((fwd == NULL) == (bwd == NULL)) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        MF_FAIL(fwd == NULL ? MF_ERR_NULL_POINTER : MF_ERR_INVALID_ARGUMENT,
                "exactly one of fwd and bwd must be given");
    }
    const mf_status st = attention_verify_id_check(id);
    if (st != MF_OK) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        return st;
    }
    return attention_run_case_impl(ctx, 0, fwd, bwd, id, seed_salt, out);
}

/* ---- memfix verify: the guard of attention (tiled forward / backward) candidates (src/testbed/testbed.h) -------------- */
typedef struct attn_args {
    mf_dtype dtype;
    int causal;
    int64_t B, H, N, D, Dv;
} attn_args;

/* bufs: q, k, v, out, lse */
static mf_status attn_fwd_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const attn_args *a = (const attn_args *)args;
    return ((mf_attention_forward_candidate_fn)mf_tb_candidate())(
        ctx, a->dtype, a->causal, a->B, a->H, a->N, a->D, a->Dv, mf_tb_ptr(bufs, 0), mf_tb_ptr(bufs, 1),
        mf_tb_ptr(bufs, 2), (float *)mf_tb_ptr(bufs, 3), (float *)mf_tb_ptr(bufs, 4));
}

static mf_status attn_fwd_guard(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                                int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                                float *out, float *lse)
{
    const size_t es = mf_dtype_size(dtype), rows = (size_t)B * (size_t)H * (size_t)N;
    const mf_axes aqk = { "b h row col", { B, H, N, D } }, av = { "b h row col", { B, H, N, Dv } },
                  al = { "b h row", { B, H, N } };
    const mf_tb_buffer sp[5] = { { "q", q, rows * (size_t)D * es, dtype, aqk },
                                 { "k", k, rows * (size_t)D * es, dtype, aqk },
                                 { "v", v, rows * (size_t)Dv * es, dtype, av },
                                 { "out", out, rows * (size_t)Dv * 4, MF_DTYPE_F32, av },
                                 { "lse", lse, rows * 4, MF_DTYPE_F32, al } };
    const attn_args args = { dtype, causal, B, H, N, D, Dv };
    mf_tb_guarded bufs[5];
    return mf_tb_guard(ctx, sp, 3, 5, attn_fwd_call, &args, bufs);
}

/* bufs: q, k, v, out, dout, lse, dq, dk, dv */
static mf_status attn_bwd_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const attn_args *a = (const attn_args *)args;
    return ((mf_attention_backward_candidate_fn)mf_tb_candidate())(
        ctx, a->dtype, a->causal, a->B, a->H, a->N, a->D, a->Dv, mf_tb_ptr(bufs, 0), mf_tb_ptr(bufs, 1),
        mf_tb_ptr(bufs, 2), (const float *)mf_tb_ptr(bufs, 3), mf_tb_ptr(bufs, 4),
        (const float *)mf_tb_ptr(bufs, 5), (float *)mf_tb_ptr(bufs, 6), (float *)mf_tb_ptr(bufs, 7),
        (float *)mf_tb_ptr(bufs, 8));
}

static mf_status attn_bwd_guard(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                                int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                                const float *out, const void *dout, const float *lse, float *dq, float *dk,
                                float *dv)
{
    const size_t es = mf_dtype_size(dtype), rows = (size_t)B * (size_t)H * (size_t)N;
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const mf_axes aqk = { "b h row col", { B, H, N, D } }, av = { "b h row col", { B, H, N, Dv } },
                  al = { "b h row", { B, H, N } };
    const mf_tb_buffer sp[9] = {
        { "q", q, nqk * es, dtype, aqk },         { "k", k, nqk * es, dtype, aqk },
        { "v", v, nv * es, dtype, av },           { "out", out, nv * 4, MF_DTYPE_F32, av },
        { "dout", dout, nv * es, dtype, av },     { "lse", lse, rows * 4, MF_DTYPE_F32, al },
        { "dq", dq, nqk * 4, MF_DTYPE_F32, aqk }, { "dk", dk, nqk * 4, MF_DTYPE_F32, aqk },
        { "dv", dv, nv * 4, MF_DTYPE_F32, av }
    };
    const attn_args args = { dtype, causal, B, H, N, D, Dv };
    mf_tb_guarded bufs[9];
    return mf_tb_guard(ctx, sp, 6, 9, attn_bwd_call, &args, bufs);
}

static mf_status attention_forward_verify_id(mf_context *ctx, void (*candidate)(void), const mf_case_id *id,
                                             uint64_t seed_salt, mf_case_result *out)
{
    return attention_verify_case(ctx, candidate != NULL ? attn_fwd_guard : NULL, NULL, id, seed_salt, out);
}

static mf_status attention_backward_verify_id(mf_context *ctx, void (*candidate)(void), const mf_case_id *id,
                                              uint64_t seed_salt, mf_case_result *out)
{
    return attention_verify_case(ctx, NULL, candidate != NULL ? attn_bwd_guard : NULL, id, seed_salt, out);
}

MF_TB_RUN_FIXED(attention_forward_verify, attention_forward_verify_id)

MF_TB_RUN_FIXED(attention_backward_verify, attention_backward_verify_id)

static int attention_verify_n_cases(void) { return ATTENTION_N_VERIFY_CASES; }

/* memfix's own tiled entry points in the candidate types: timed beside a candidate in verify's worker (the
 * time column, and the base of the default time limit). */
static mf_status attn_own_fwd(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                              int64_t D, int64_t Dv, const void *q, const void *k, const void *v, float *out,
                              float *lse)
{
    return mf_attention_forward(ctx, MF_ATTENTION_TILED, dtype, causal, B, H, N, D, Dv, q, k, v, out, lse);
}

static mf_status attn_own_bwd(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                              int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                              const float *out, const void *dout, const float *lse, float *dq, float *dk,
                              float *dv)
{
    return mf_attention_backward(ctx, MF_ATTENTION_TILED, dtype, causal, B, H, N, D, Dv, q, k, v, out, dout,
                                 lse, dq, dk, dv);
}

static const mf_verify_target attention_targets[] = {
    { "attention.forward", attention_forward_verify, attention_verify_n_cases, attention_forward_verify_id,
      attention_describe_fwd, attn_fwd_call, sizeof(attn_args), 0, 0, MF_TB_OWN(attn_own_fwd), 0 },
    { "attention.backward", attention_backward_verify, attention_verify_n_cases, attention_backward_verify_id,
      attention_describe_bwd, attn_bwd_call, sizeof(attn_args), 0, 0, MF_TB_OWN(attn_own_bwd), 0 }
};

/* ---- memfix bench: the size sweep (registry.h) ------------------------------------------- */
enum { ATTN_BENCH_B = 1, ATTN_BENCH_H = 2, ATTN_BENCH_D = 32 };

static mf_status attention_bench_setup(mf_context *ctx, mf_bench_case *c)
{
    const int64_t B = ATTN_BENCH_B, H = ATTN_BENCH_H, D = ATTN_BENCH_D, n = c->n;
    const size_t m = (size_t)(B * H * n * D);
    snprintf(c->shape, sizeof c->shape, "causal B=%lld H=%lld N=%lld D=Dv=%lld", (long long)B, (long long)H,
             (long long)n, (long long)D);
    c->ceiling = mf_attention_tiled_forward_scratch_ceiling(B, H, n);
    c->tol = "attention.out.f32";
    /* per call (any variant): S = QK^T and O = PV over the causal pairs
     * (N(N+1)/2 of them; N^2 without the mask), 2*D + 2*Dv flops each (the
     * softmax's O(N^2) exp/max/sum left out); q, k, v read once, out written
     * once, fp32 */
    const double pairs = (double)n * (double)(n + 1) / 2.0;
    c->flops = (double)(B * H) * pairs * (2.0 * (double)D + 2.0 * (double)D);
    c->min_bytes = 4.0 * (double)m * 4.0;
    const size_t n_in[3] = { m, m, m }; /* q, k, v */
    return mf_tb_bench_io(ctx, c, 3, n_in, 21, m);
}

static mf_status attention_bench_reference(mf_context *ctx, mf_bench_case *c)
{
    return mf_ref_attention_forward(ctx, MF_DTYPE_F32, 1, ATTN_BENCH_B, ATTN_BENCH_H, c->n, ATTN_BENCH_D,
                                    ATTN_BENCH_D, c->host[0], c->host[1], c->host[2], c->ref_out, NULL);
}

static mf_status attention_bench_optimized(mf_context *ctx, mf_bench_case *c)
{
    return mf_attention_forward(ctx, (mf_attention_variant)c->variant, MF_DTYPE_F32, 1, ATTN_BENCH_B,
                                ATTN_BENCH_H, c->n, ATTN_BENCH_D, ATTN_BENCH_D, c->dev[0], c->dev[1],
                                c->dev[2], c->out_dev, NULL);
}

static const mf_bench_sweep attention_bench = {
    "causal, B=1 H=2 N=n D=Dv=32", { 64, 128, 256 },          3,
    attention_bench_setup,         attention_bench_reference, attention_bench_optimized
};

/* ---- memfix plan: standard attention's scores vs tiled, one layer (seed 003) ---- */
static mf_status attention_plan_rows(const mf_plan_config *cfg, mf_plan_rows *out)
{
    const int64_t B = cfg->batch, H = cfg->heads, S = cfg->seq;
    /* b*a*s*s*e: mf_attention_theoretical_memory's standard_scores (test_plan) */
    const size_t scores[] = { (size_t)B, (size_t)H, (size_t)S, (size_t)S, mf_dtype_size(cfg->dtype) };
    return mf_plan_row_add(out, "attention", "scores B*H*N*N*e (per layer)", mf_plan_product(5, scores),
                           "tiled: backward Delta 4*B*H*N",
                           mf_attention_tiled_backward_scratch_ceiling(B, H, S),
                           "B=%lld H=%lld N=%lld D=%lld %s", (long long)B, (long long)H, (long long)S,
                           (long long)mf_plan_head_dim(cfg), mf_dtype_name(cfg->dtype));
}

static const mf_op_plan attention_plan = { 0, NULL, attention_plan_rows, NULL };

/* The op's rows of the tolerance table (src/core/tolerance.c assembles the one
 * table): "attention.<output>.<dtype>", atol, rtol, nmse, one-line justification. */
static const mf_tolerance attention_tolerances[] = {
    { "attention.out.f32", 2e-6, 1e-5, 1e-11,
      "fp32 scores (D-term dot, |q|,|k| < 1.5) and expf (2 ulp) give p a relative error ~ sqrt(D)*u*|s| + 2u "
      "~ 2e-6 at D=128; out = sum_j p v with |v| < 1 (measured <= 2.7e-7, nmse <= 2e-13)" },
    { "attention.lse.f32", 2e-6, 2e-6, 1e-12,
      "lse = m + logf(l): the score error (~sqrt(D)*u*|s|) plus ~3 ulp of |lse| <= log N + max|s| (measured "
      "<= 1.2e-7)" },
    { "attention.grad.f32", 5e-6, 1e-5, 1e-10,
      "p recomputed from fp32 scores and the stored fp32 lse (rel ~2e-6 at D=128), ds = p (dp - Delta) with "
      "fp32 D-/Dv-term dots, summed over N tiles in fp32; entries cancel to ~0 so atol dominates (measured "
      "<= 1e-6, nmse <= 2e-13)" },
    { "attention.out.bf16", 2e-6, 1e-5, 1e-11,
      "bf16 storage of q, k, v, dout only: widened exactly to fp32, the same fp32 arithmetic and fp32 "
      "outputs as attention.out.f32, so the same bound" },
    { "attention.lse.bf16", 2e-6, 2e-6, 1e-12,
      "bf16 inputs widened exactly; lse computed and stored in fp32: same bound as attention.lse.f32" },
    { "attention.grad.bf16", 5e-6, 1e-5, 1e-10,
      "bf16 inputs widened exactly; p, ds and the gradient sums in fp32, gradients stored fp32: same bound "
      "as attention.grad.f32" },
    { "attention.mma.out.bf16", 2e-3, 1e-5, 1e-5,
      "tensor-core path: P rounded to bf16 (rel <= 2^-8, 8 significant bits; the row's largest p, 1, is "
      "exact) as the A operand of P V, l summed from fp32 P. Worst case, every rounding maximal and of v's "
      "sign: |err| <= 2^-8 sum_j p|v| <= 2^-8 = 3.9e-3 (|v| < 1); the roundings are independent and unbiased "
      "(rms 2^-8/sqrt6 of p), so the error is a random sum far below that: atol 2e-3 is half the worst case "
      "(measured max abs 1.1e-3); nmse ~ (2^-8)^2/6 = 2.5e-6 (measured <= 2.2e-6), under 1e-5" },
    { "attention.mma.lse.bf16", 2e-6, 2e-6, 1e-12,
      "tensor-core path: bf16 x bf16 products are exact in fp32 and S is accumulated in fp32 as in the SIMT "
      "kernels; l from fp32 P: same bound as attention.lse.f32 (measured <= 4.8e-7)" },
    { "attention.mma.grad.bf16", 1e-2, 1e-2, 1e-5,
      "tensor-core path: every gradient sum has one bf16-rounded factor (P for dv, dS for dq/dk; rel <= "
      "2^-8) and Delta inherits out's bf16-P error. Worst case: |err| <= 2^-8 x (column mass of P <= 1 + ln "
      "N ~ 6.5 at N = 256) x max|dout or dp| ~ 2.5e-2; the roundings are independent and unbiased (rms "
      "2^-8/sqrt6), so the error is a random sum far below that: atol 1e-2 is 0.4 of the worst case "
      "(measured max abs 2.9e-3); two independent roundings give nmse ~ 2 x (2^-8)^2/6 = 5.1e-6 for "
      "zero-mean k, q (measured <= 3.0e-6), under 1e-5 (a common offset in k or q grows dq/dk's relative "
      "error: sum_j ds_ij = 0 is not kept by bf16 dS)" },
};

const mf_op_desc mf_op_attention = {
    "attention",
    "softmax(q k^T / sqrt(D)) v, fwd+bwd: tiled online softmax vs materialized N x N scores (seed 003)",
    MF_ATTENTION_N_VARIANTS,
    attention_variant_names,
    ATTENTION_N_CASES,
    attention_run_case,
    2,
    attention_targets,
    &attention_bench,
    (int)(sizeof attention_tolerances / sizeof attention_tolerances[0]),
    attention_tolerances,
    &attention_plan,
    ATTENTION_N_VERIFY_CASES, /* report: the first cases; the rest are the equivalence suite's */
    attention_case_applies,   /* all but the large cases (test_attention_equiv_large) */
    0,
    NULL, /* bench_targets: none */
};
