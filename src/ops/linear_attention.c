/* mf_linear_attention_*: argument validation, backend dispatch, the memory
 * ceilings and the registry entry of the linear attention fix (seed document
 * 003; see include/memfix/linear_attention.h, reference/linear_attention.c,
 * optimized/linear_attention.cu). */
#include "memfix/linear_attention.h"

#include "linear_attention.cuh"
#include "memfix/check.h"
#include "memfix/plan.h"
#include "memfix/registry.h"
#include "mf_internal.h"
#include "op_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel entries (optimized/linear_attention.cuh): mf_host_* from cudahost,
 * mf_cuda_* from nvcc. Arguments are validated before the call. */

int mf_linear_attention_chunk_valid(int64_t chunk)
{
    return chunk >= MF_LINEAR_ATTENTION_MIN_CHUNK && chunk <= MF_LINEAR_ATTENTION_MAX_CHUNK &&
           (chunk & (chunk - 1)) == 0;
}

/* ---- memory ceilings (include/memfix/linear_attention.h) ------------------------------ */
size_t mf_linear_attention_scratch_ceiling(int causal, int backward, int64_t B, int64_t H, int64_t N,
                                           int64_t D, int64_t Dv)
{
    if (B <= 0 || H <= 0 || N <= 0 || D <= 0 || Dv <= 0) return SIZE_MAX;
    /* causal: chunk states, one per 512 rows, of D*(Dv+1) floats (exact for the bf16
     * tensor-core path; the fp32 path keeps only a z of D floats per 256 rows, fewer
     * since Dv >= 1); bidirectional backward: a z of D floats per 256 rows plus the total z */
    const size_t bh = (size_t)B * (size_t)H, ce = causal ? 512 : 256;
    const size_t nc = (size_t)N / ce + ((size_t)N % ce != 0);
    size_t x, y;
    if (!mf_size_mul(bh, causal ? nc : nc + 1, &x) || !mf_size_mul(x, (size_t)D, &x)) return SIZE_MAX;
    if (causal && !mf_size_mul(x, (size_t)Dv + 1, &x)) return SIZE_MAX;
    if (!mf_size_mul(x, sizeof(float), &x)) return SIZE_MAX;
    if (!backward) return causal ? x : 0; /* bidirectional: state slices in shared memory */
    /* den_n and dd_n: 2 floats per position */
    if (!mf_size_mul(bh, (size_t)N, &y) || !mf_size_mul(y, 2 * sizeof(float), &y) || !mf_size_add(x, y, &x))
        return SIZE_MAX;
    return x;
}

/* ---- validation and dispatch ------------------------------------------------------------- */

static mf_status check_common(const char *func, mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk,
                              int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv, int has_state)
{
    if (ctx == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "ctx is NULL");
    MF_TRY(mf_check_bhnd_args(func, dtype, causal, B, H, N, D, Dv));
    if (D > MF_LINEAR_ATTENTION_MAX_HEAD_DIM || Dv > MF_LINEAR_ATTENTION_MAX_HEAD_DIM)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "the kernels support D, Dv <= %d (got D=%lld Dv=%lld)",
                            MF_LINEAR_ATTENTION_MAX_HEAD_DIM, (long long)D, (long long)Dv);
    if (causal && !mf_linear_attention_chunk_valid(chunk))
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "chunk must be a power of two in [%d, %d] (got %lld)",
                            MF_LINEAR_ATTENTION_MIN_CHUNK, MF_LINEAR_ATTENTION_MAX_CHUNK, (long long)chunk);
    if (!causal && has_state)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "a recurrent state (or its gradient) needs causal == 1");
    MF_TRY(mf_check_bhnd_bytes(func, dtype, B, H, N, D, Dv, "dq/dk bytes (B*H*N*D*4)"));
    size_t bytes;
    MF_TRY(mf_dims_product(func, "row statistics (B*H*N*8)", &bytes, 4, B, H, N, (int64_t)8));
    return MF_OK;
}

mf_status mf_linear_attention_forward(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B,
                                      int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                      const void *k, const void *v, const mf_linear_attention_state *state,
                                      float *out)
{
    MF_TRY(check_common(__func__, ctx, dtype, causal, chunk, B, H, N, D, Dv,
                        mf_linear_attention_state_any(state)));
    /* The operands (the state's optional), then their extents before any launch
     * (the products fit: check_common). */
    const size_t rows = (size_t)B * (size_t)H * (size_t)N, es = mf_dtype_size(dtype);
    const size_t heads = (size_t)B * (size_t)H, kv = heads * (size_t)D * (size_t)Dv * 4,
                 z = heads * (size_t)D * 4;
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const mf_linear_attention_state st = state != NULL ? *state : (mf_linear_attention_state){ 0 };
    const mf_op_extent ext[] = { { "q", q, nqk * es, 1 },
                                 { "k", k, nqk * es, 1 },
                                 { "v", v, nv * es, 1 },
                                 { "out", out, nv * 4, 1 },
                                 { "state->initial_kv", st.initial_kv, kv, 0 },
                                 { "state->initial_z", st.initial_z, z, 0 },
                                 { "state->final_kv", st.final_kv, kv, 0 },
                                 { "state->final_z", st.final_z, z, 0 } };
    MF_TRY(mf_op_check_required(__func__, ext, MF_OP_N_EXTENTS(ext)));
    MF_TRY(mf_op_check_extents(__func__, ctx, ext, MF_OP_N_EXTENTS(ext)));
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "linear attention", &is_cuda));
    mf_linear_attention_forward_fn *fn = mf_host_linear_attention_forward;
#ifdef MF_HAVE_CUDA
    if (is_cuda) fn = mf_cuda_linear_attention_forward;
#endif
    return fn(ctx, dtype, causal, chunk, B, H, N, D, Dv, q, k, v, state, out);
}

mf_status mf_linear_attention_backward(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B,
                                       int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                       const void *k, const void *v, const float *out, const void *dout,
                                       const mf_linear_attention_state *state,
                                       const mf_linear_attention_state_grad *grad, float *dq, float *dk,
                                       float *dv)
{
    MF_TRY(check_common(__func__, ctx, dtype, causal, chunk, B, H, N, D, Dv,
                        mf_linear_attention_state_any(state) || mf_linear_attention_state_grad_any(grad)));
    /* The operands (the state's and its gradient's optional), then their extents
     * before any launch (the products fit: check_common). */
    const size_t rows = (size_t)B * (size_t)H * (size_t)N, es = mf_dtype_size(dtype);
    const size_t heads = (size_t)B * (size_t)H, kv = heads * (size_t)D * (size_t)Dv * 4,
                 z = heads * (size_t)D * 4;
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const mf_linear_attention_state st = state != NULL ? *state : (mf_linear_attention_state){ 0 };
    const mf_linear_attention_state_grad gr = grad != NULL ? *grad : (mf_linear_attention_state_grad){ 0 };
    const mf_op_extent ext[] = { { "q", q, nqk * es, 1 },
                                 { "k", k, nqk * es, 1 },
                                 { "v", v, nv * es, 1 },
                                 { "out", out, nv * 4, 1 },
                                 { "dout", dout, nv * es, 1 },
                                 { "dq", dq, nqk * 4, 1 },
                                 { "dk", dk, nqk * 4, 1 },
                                 { "dv", dv, nv * 4, 1 },
                                 { "state->initial_kv", st.initial_kv, kv, 0 },
                                 { "state->initial_z", st.initial_z, z, 0 },
                                 { "grad->d_final_kv", gr.d_final_kv, kv, 0 },
                                 { "grad->d_final_z", gr.d_final_z, z, 0 },
                                 { "grad->d_initial_kv", gr.d_initial_kv, kv, 0 },
                                 { "grad->d_initial_z", gr.d_initial_z, z, 0 } };
    MF_TRY(mf_op_check_required(__func__, ext, MF_OP_N_EXTENTS(ext)));
    if (state != NULL && (state->final_kv != NULL || state->final_z != NULL))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT,
                "the backward pass reads only state->initial_kv/initial_z; final_kv/final_z must be NULL");
    MF_TRY(mf_op_check_extents(__func__, ctx, ext, MF_OP_N_EXTENTS(ext)));
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "linear attention", &is_cuda));
    mf_linear_attention_backward_fn *fn = mf_host_linear_attention_backward;
#ifdef MF_HAVE_CUDA
    if (is_cuda) fn = mf_cuda_linear_attention_backward;
#endif
    return fn(ctx, dtype, causal, chunk, B, H, N, D, Dv, q, k, v, out, dout, state, grad, dq, dk, dv);
}

/* ---- registry entry: built-in cases for `memfix report` -------------------------------------- */
#define LA_N_VARIANTS 2
static const char *const la_variant_names[LA_N_VARIANTS] = { "causal_chunked", "bidirectional" };

/* A fixed row runs for the variants 'only' names (la_case_applies). */
enum { LA_BOTH = 0, LA_CAUSAL = 1, LA_BIDIR = 2 };

typedef struct la_case {
    int64_t B, H, N, D, Dv, chunk;
    mf_dtype dtype;
    int bidirectional; /* generated cases: the variant (fixed rows: 'only') */
    int only;          /* fixed rows: LA_BOTH, or the one variant (LA_CAUSAL, LA_BIDIR) it runs for */
    int state;         /* causal: an initial state and final-state gradients in; the final state and the
                        * initial state's gradients out, compared too */
    int fwd_only;      /* the forward alone (its scratch peak: the memory suite) */
} la_case;

#define C LA_CAUSAL
#define BI LA_BIDIR
#define F32 MF_DTYPE_F32
#define BF16 MF_DTYPE_BF16
/* Rows 0-5 (`memfix report`, memfix verify's fixed cases; every variant, both
 * dtypes, bf16 causal on tensor cores): small shapes, N = 1, N not a multiple of
 * the chunk, every chunk size, D != Dv, and the largest head dimension. The
 * bidirectional variant ignores chunk. The rows after them are the equivalence
 * suite's (tests/equivalence/test_linear_attention_equiv.c) and the memory
 * suite's (tests/memory/test_linear_attention_memory.c), each for the variant
 * 'only' names: { B, H, N, D, Dv, chunk, dtype, -, only, state, fwd_only }. */
static const la_case la_cases[] = {
    { 1, 1, 1, 8, 8, 16, F32, 0, 0, 0, 0 },
    { 2, 2, 37, 16, 8, 16, F32, 0, 0, 0, 0 },
    { 1, 2, 70, 8, 40, 32, BF16, 0, 0, 0, 0 },
    { 1, 1, 100, 32, 24, 64, F32, 0, 0, 0, 0 },
    { 1, 1, 150, 8, 8, 128, BF16, 0, 0, 0, 0 },
    { 1, 1, 20, 128, 128, 16, F32, 0, 0, 0, 0 },
    /* 6-18: causal, every chunk size and edge (the SIMT kernels: bf16 storage) */
    { 1, 2, 1, 4, 6, 64, BF16, 0, C, 0, 0 },    /* N = 1 */
    { 1, 1, 100, 40, 24, 64, F32, 0, C, 0, 0 }, /* C = 64, D > 32 (two row slices) */
    { 1, 1, 20, 16, 16, 128, F32, 0, C, 0, 0 }, /* N < C */
    { 1, 1, 64, 16, 16, 32, F32, 0, C, 0, 0 },  /* N a multiple of C */
    { 1, 1, 5, 128, 128, 16, F32, 0, C, 0, 0 }, /* the largest head dimension */
    { 1, 1, 3, 128, 96, 32, BF16, 0, C, 0, 0 },
    { 1, 1, 33, 1, 1, 16, F32, 0, C, 0, 0 }, /* D = Dv = 1 */
    /* bf16 causal: the tensor-core path (a state per 512 rows, 64-row tiles) */
    { 1, 2, 37, 64, 64, 16, BF16, 0, C, 0, 0 },    /* odd N < one tile */
    { 2, 1, 65, 64, 128, 32, BF16, 0, C, 0, 0 },   /* one row past a tile */
    { 1, 1, 150, 128, 128, 64, BF16, 0, C, 0, 0 }, /* three tiles, ragged */
    { 1, 1, 301, 128, 64, 128, BF16, 0, C, 0, 0 }, /* five tiles of one state chunk, ragged */
    { 1, 1, 531, 32, 48, 64, BF16, 0, C, 0, 0 },   /* two state chunks (scan), ragged */
    { 1, 1, 97, 33, 71, 64, BF16, 0, C, 0, 0 },    /* D, Dv not multiples of 16 */
    /* 19-21: bidirectional */
    { 1, 2, 70, 40, 40, 0, BF16, 0, BI, 0, 0 },
    { 1, 1, 150, 8, 12, 0, F32, 0, BI, 0, 0 },
    { 1, 1, 5, 128, 128, 0, F32, 0, BI, 0, 0 },
    /* 22-28: causal with a recurrent state (S0 in [-1, 1), z0 in [0.5, 2): a
     * normalizer state sums positive feature vectors; final-state gradients in
     * [-0.5, 0.5)): out, final state, dq, dk, dv, d initial state */
    { 1, 2, 37, 16, 8, 16, F32, 0, C, 1, 0 },
    { 2, 1, 50, 40, 36, 32, BF16, 0, C, 1, 0 },
    { 1, 1, 1, 8, 8, 128, F32, 0, C, 1, 0 },
    { 1, 1, 27, 128, 128, 16, F32, 0, C, 1, 0 },   /* D = Dv = 128: 128-term dots of dS_N; ragged chunk */
    { 1, 2, 130, 64, 64, 64, BF16, 0, C, 1, 0 },   /* tensor cores: three tiles and a state */
    { 1, 1, 77, 128, 128, 128, BF16, 0, C, 1, 0 }, /* D = Dv = 128, ragged */
    { 1, 1, 531, 64, 128, 32, BF16, 0, C, 1, 0 },  /* two state chunks: the scans from S0 and dS_N */
    /* 29-56 (LA_MEM_ROWS): the memory suite's shapes, each the forward alone
     * then forward + backward. N within one chunk, both variants; */
    { 1, 2, 40, 16, 8, 16, F32, 0, 0, 0, 1 },
    { 1, 2, 40, 16, 8, 16, F32, 0, 0, 0, 0 },
    { 1, 2, 40, 16, 8, 16, BF16, 0, 0, 0, 1 },
    { 1, 2, 40, 16, 8, 16, BF16, 0, 0, 0, 0 },
    /* bf16 causal (tensor cores), D = Dv = 64 and 128, odd N spanning chunks; */
    { 1, 2, 131, 64, 64, 64, BF16, 0, C, 0, 1 },
    { 1, 2, 131, 64, 64, 64, BF16, 0, C, 0, 0 },
    { 1, 2, 77, 128, 128, 128, BF16, 0, C, 0, 1 },
    { 1, 2, 77, 128, 128, 128, BF16, 0, C, 0, 0 },
    /* N and 2N, fp32 (SIMT) and bf16 (tensor cores: 1 and 2 states of 512 rows); */
    { 1, 2, 40, 16, 12, 16, F32, 0, C, 0, 1 },
    { 1, 2, 40, 16, 12, 16, F32, 0, C, 0, 0 },
    { 1, 2, 80, 16, 12, 16, F32, 0, C, 0, 1 },
    { 1, 2, 80, 16, 12, 16, F32, 0, C, 0, 0 },
    { 1, 2, 400, 16, 12, 64, BF16, 0, C, 0, 1 },
    { 1, 2, 400, 16, 12, 64, BF16, 0, C, 0, 0 },
    { 1, 2, 800, 16, 12, 64, BF16, 0, C, 0, 1 },
    { 1, 2, 800, 16, 12, 64, BF16, 0, C, 0, 0 },
    /* the same shape at C = 16, 64, 128, fp32 and bf16 */
    { 1, 1, 70, 8, 8, 16, F32, 0, C, 0, 1 },
    { 1, 1, 70, 8, 8, 16, F32, 0, C, 0, 0 },
    { 1, 1, 70, 8, 8, 64, F32, 0, C, 0, 1 },
    { 1, 1, 70, 8, 8, 64, F32, 0, C, 0, 0 },
    { 1, 1, 70, 8, 8, 128, F32, 0, C, 0, 1 },
    { 1, 1, 70, 8, 8, 128, F32, 0, C, 0, 0 },
    { 1, 1, 70, 8, 8, 16, BF16, 0, C, 0, 1 },
    { 1, 1, 70, 8, 8, 16, BF16, 0, C, 0, 0 },
    { 1, 1, 70, 8, 8, 64, BF16, 0, C, 0, 1 },
    { 1, 1, 70, 8, 8, 64, BF16, 0, C, 0, 0 },
    { 1, 1, 70, 8, 8, 128, BF16, 0, C, 0, 1 },
    { 1, 1, 70, 8, 8, 128, BF16, 0, C, 0, 0 },
    /* The last LA_N_LARGE_CASES (57-60): many chunks, large heads, too slow for
     * the suites' sweep in host mode; la_case_applies keeps them out of it and
     * test_linear_attention_equiv_large (label slow) runs them, each for the
     * variant 'only' names (mf_test_op_case_unlisted): N = 512 in eight 64-row
     * chunks over two heads, N = 300 with D = Dv = 128 on the tensor cores,
     * D != Dv over 17 chunks of 16 (the last ragged), bidirectional N = 400. */
    { 1, 2, 512, 64, 64, 64, F32, 0, C, 0, 0 },
    { 1, 1, 300, 128, 128, 128, BF16, 0, C, 0, 0 },
    { 1, 1, 257, 48, 80, 16, F32, 0, C, 0, 0 },
    { 1, 2, 400, 64, 64, 0, F32, 0, BI, 0, 0 },
};
#undef C
#undef BI
#undef F32
#undef BF16
#define LA_N_CASES ((int)(sizeof(la_cases) / sizeof(la_cases[0])))
/* `memfix report`'s rows and memfix verify's fixed cases: the first rows, as before the suites' rows */
#define LA_N_REPORT_CASES 6
#define LA_VARIANTS_X_CASES (LA_N_VARIANTS * LA_N_REPORT_CASES)
/* The table's last rows: test_linear_attention_equiv_large's, out of every sweep. */
#define LA_N_LARGE_CASES 4

/* mf_op_desc.case_applies: a row runs for the variants its 'only' names; the
 * last LA_N_LARGE_CASES for none (test_linear_attention_equiv_large runs them
 * through mf_test_op_case_unlisted). */
static int la_case_applies(int variant, int case_index)
{
    if (case_index < 0 || case_index >= LA_N_CASES - LA_N_LARGE_CASES) return 0;
    const int only = la_cases[case_index].only;
    return only == LA_BOTH || only == (variant == 0 ? LA_CAUSAL : LA_BIDIR);
}

/* ---- seeded random cases (memfix verify --seed/--cases/--large) ---------- */
/* Random case i of a seed, k = i + seed: causal with a recurrent state on even
 * k, bidirectional on odd; bf16 on k / 2 odd; chunk from {16, 32, 64, 128}; N
 * odd and not a multiple of the chunk; D, Dv drawn (D != Dv half the time);
 * outputs > 4096 elements. The large case: B*H*N*Dv > 2^31 output elements. */
static void la_generate(const mf_case_id *id, la_case *c)
{
    mf_tb_rng r = mf_tb_case_rng("linear_attention", id);
    const int k = (int)(((uint64_t)id->index + id->seed) % 4u);
    /* head dims up to 32: a straightforward candidate is O(N^2 D Dv) per head */
    static const int64_t dims[] = { 8, 16, 24, 32 }, chunks[] = { 16, 32, 64, 128 };
    memset(c, 0, sizeof *c);
    c->bidirectional = k % 2;
    c->dtype = k / 2 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    c->B = mf_tb_rand_int(&r, 1, 2);
    c->H = mf_tb_rand_int(&r, 1, 3);
    c->D = mf_tb_rand_pick(&r, dims, 4);
    c->Dv = mf_tb_rand_chance(&r, 1, 2) ? c->D : mf_tb_rand_pick(&r, dims, 4);
    c->chunk = mf_tb_rand_pick(&r, chunks, 4);
    c->N = mf_tb_rand_int(&r, 10, 60) * 2 + 1;
    while (c->B * c->H * c->N * c->Dv <= 4096 && c->H < 4) c->H++;
    while (c->B * c->H * c->N * c->Dv <= 4096 || c->N % c->chunk == 0) c->N += 2;
    if (id->kind == MF_CASE_LARGE) c->B = 1, c->H = 8, c->N = 4194319, c->D = c->Dv = 64;
}

static mf_status la_case_of(const mf_case_id *id, la_case *c)
{
    if (id->kind == MF_CASE_FIXED) {
        if (id->index < 0 || id->index >= LA_N_CASES)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "linear_attention: case %d out of range [0, %d)", id->index,
                    LA_N_CASES);
        *c = la_cases[id->index];
    } else {
        la_generate(id, c);
    }
    return MF_OK;
}

/* "B=.. H=.. N=.. D=.. Dv=.. [C=.. ]<what><pass_label>": what is "causal state " or
 * "bidir " for a candidate's case, "state " for a built-in row with a state, else "". */
static void la_shape(const la_case *c, int causal, const char *what, const char *pass_label, char *buf,
                     size_t cap)
{
    if (causal)
        snprintf(buf, cap, "B=%lld H=%lld N=%lld D=%lld Dv=%lld C=%lld %s%s", (long long)c->B,
                 (long long)c->H, (long long)c->N, (long long)c->D, (long long)c->Dv, (long long)c->chunk,
                 what, pass_label);
    else
        snprintf(buf, cap, "B=%lld H=%lld N=%lld D=%lld Dv=%lld %s%s", (long long)c->B, (long long)c->H,
                 (long long)c->N, (long long)c->D, (long long)c->Dv, what, pass_label);
}

/* The verify targets' ids: fixed index i < LA_N_REPORT_CASES causal, then the same rows bidirectional. */
static mf_status la_verify_case_of(const mf_case_id *id, la_case *c, int *variant, mf_case_id *row_id)
{
    *row_id = *id;
    if (id->kind == MF_CASE_FIXED) {
        if (id->index < 0 || id->index >= LA_VARIANTS_X_CASES)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "case %d out of range [0, %d)", id->index, LA_VARIANTS_X_CASES);
        *variant = id->index / LA_N_REPORT_CASES;
        row_id->index = id->index % LA_N_REPORT_CASES;
    }
    MF_TRY(la_case_of(row_id, c));
    if (id->kind != MF_CASE_FIXED) *variant = c->bidirectional;
    return MF_OK;
}

static mf_status la_describe_pass(const mf_case_id *id, const char *pass, char *buf, size_t cap,
                                  size_t *bytes)
{
    la_case c;
    int variant = 0;
    mf_case_id row;
    MF_TRY(la_verify_case_of(id, &c, &variant, &row));
    char shape[160];
    la_shape(&c, variant == 0, variant == 0 ? "causal state " : "bidir ", pass, shape, sizeof shape);
    snprintf(buf, cap, "%s %s", mf_dtype_name(c.dtype), shape);
    const size_t rows = (size_t)(c.B * c.H * c.N);
    *bytes =
        24 * rows * (size_t)(2 * c.D + 2 * c.Dv) + 8 * rows * (size_t)c.D * (size_t)c.Dv / (size_t)c.chunk;
    return MF_OK;
}

MF_TB_DESCRIBE_PASS(la_describe_fwd, la_describe_pass, "fwd=candidate")

MF_TB_DESCRIBE_PASS(la_describe_bwd, la_describe_pass, "bwd=candidate")

/* The axes of a buffer by its name (include/memfix/linear_attention.h's layouts), which a rejection names an
 * element by: q, k, dq, dk (b, h, row, col < D); v, out, dout, dv (col < Dv); the states S (b, h, d, dv) and
 * z (b, h, d) and their gradients. */
static mf_axes la_axes(const char *name, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv)
{
    const char *base = strrchr(name, '>') != NULL ? strrchr(name, '>') + 1 : name; /* "state->final_kv" */
    const size_t len = strlen(base);
    if (len > 3 && strcmp(base + len - 3, "_kv") == 0) return (mf_axes){ "b h d dv", { B, H, D, Dv } };
    if (len > 2 && strcmp(base + len - 2, "_z") == 0) return (mf_axes){ "b h d", { B, H, D } };
    const int qk = strcmp(base, "q") == 0 || strcmp(base, "k") == 0 || strcmp(base, "dq") == 0 ||
                   strcmp(base, "dk") == 0;
    return (mf_axes){ "b h row col", { B, H, N, qk ? D : Dv } };
}

/* mf_tb_compare with the tolerance row of the kernels: bf16 causal runs on tensor
 * cores with bf16 operands ("<base>.bf16_mma", mma != 0), and so may a memfix
 * verify candidate (fla's chunk kernels do). */
static mf_status la_compare_row(const float *got, const float *ref, size_t n, const char *what,
                                const char *tol_base, const la_case *c, int mma, mf_case_result *out,
                                int *all_pass)
{
    char tol_name[64];
    snprintf(tol_name, sizeof tol_name, "%s.%s%s", tol_base, mf_dtype_name(c->dtype),
             c->dtype == MF_DTYPE_BF16 && mma ? "_mma" : "");
    const mf_tolerance *tol = mf_tolerance_get(tol_name);
    if (tol == NULL) MF_FAIL(MF_ERR_INTERNAL, "no tolerance row '%s' in src/core/tolerance.c", tol_name);
    const mf_axes ax = la_axes(what, c->B, c->H, c->N, c->D, c->Dv);
    return mf_tb_compare(got, ref, n, tol, &ax, what, out, all_pass);
}

/* One case of one variant: through mf_linear_attention_forward/backward
 * (report), or, when 'fwd' or 'bwd' != NULL, that candidate in place of the
 * public entry of its pass (memfix verify; a backward candidate gets the
 * reference's out; only the candidate's own outputs are compared). Causal
 * candidate runs, and causal rows with 'state', also carry a recurrent state:
 * an initial state (S0, z0) and final-state gradients in, the final state and
 * the initial state's gradients out, compared too. A 'fwd_only' row runs and
 * compares the forward alone, measured against the forward's ceiling. A
 * candidate's scratch is measured around its call alone against its pass's
 * ceiling. seed_salt != 0 draws other inputs of the same shape. */
static mf_status la_run_case_impl(mf_context *ctx, int variant, mf_linear_attention_forward_candidate_fn fwd,
                                  mf_linear_attention_backward_candidate_fn bwd, const mf_case_id *id,
                                  uint64_t seed_salt, mf_case_result *out)
{
    MF_TRY(mf_tb_case_begin_id(out, "linear_attention", ctx, variant, LA_N_VARIANTS, id, LA_N_CASES));
    la_case cc;
    MF_TRY(la_case_of(id, &cc));
    const la_case *c = &cc;
    const int case_index = id->index;
    const int causal = variant == 0;
    const int cand = fwd != NULL || bwd != NULL, with_state = causal && (cand || c->state);
    const int fwd_only = !cand && c->fwd_only;
    /* bf16 causal: tensor-core rows (bf16 operands), for ours and for candidates alike */
    const int mma = causal;
    const char *pass_label = cand       ? (fwd != NULL ? "fwd=candidate" : "bwd=candidate")
                             : fwd_only ? "fwd"
                                        : "fwd+bwd";
    mf_tb_case_labels(out, ctx, cand ? "candidate" : la_variant_names[variant], c->dtype);
    la_shape(c, causal,
             cand         ? (causal ? "causal state " : "bidir ")
             : with_state ? "state "
                          : "",
             pass_label, out->shape, sizeof(out->shape));
    const mf_tolerance *tol = mf_tolerance_get(
        c->dtype == MF_DTYPE_BF16 ? (mma ? "linear_attention.out.bf16_mma" : "linear_attention.out.bf16")
                                  : "linear_attention.out.f32");
    if (tol != NULL) {
        out->atol = tol->atol;
        out->rtol = tol->rtol;
    }
    out->ceiling_bytes =
        mf_linear_attention_scratch_ceiling(causal, fwd == NULL && !fwd_only, c->B, c->H, c->N, c->D, c->Dv);

    const size_t rows = (size_t)(c->B * c->H * c->N);
    const size_t nqk = rows * (size_t)c->D, nv = rows * (size_t)c->Dv;
    const size_t es = mf_dtype_size(c->dtype);
    const uint64_t seed = mf_tb_case_seed(id, 0x6c696e6100000000ull, 8u, seed_salt);
    mf_status st = MF_OK;
    void *q = mf_tb_make_input(c->dtype, nqk, seed, -1.5f, 1.5f);
    void *k = mf_tb_make_input(c->dtype, nqk, seed + 1, -1.5f, 1.5f);
    void *v = mf_tb_make_input(c->dtype, nv, seed + 2, -1.0f, 1.0f);
    void *dout = mf_tb_make_input(c->dtype, nv, seed + 3, -1.0f, 1.0f);
    const size_t n_host = 2 * (2 * nv + 2 * nqk);
    float *hb = (float *)malloc(n_host * sizeof(float));
    void *d_q = NULL, *d_k = NULL, *d_v = NULL, *d_do = NULL;
    float *d_out = NULL, *d_dq = NULL, *d_dk = NULL, *d_dv = NULL;
    /* Every device output carries MF_TB_GUARD NaNs after its n (as the testbed's
     * tensors do): a write past the end fails the case (MF_FAILURE_NONFINITE). */
    enum { G = MF_TB_GUARD };
    float nan_guard[G], got_guard[G];
    float *const *const o_devp[4] = { &d_out, &d_dq, &d_dk, &d_dv };
    const size_t o_n[4] = { nv, nqk, nqk, nv };
    /* the recurrent state of causal candidate runs: S0, z0, dS_N, dz_N in;
     * S_N, z_N, dS0, dz0 out (host ref, host got, device) */
    const size_t ns = (size_t)(c->B * c->H) * (size_t)c->D * (size_t)c->Dv,
                 nz = (size_t)(c->B * c->H) * (size_t)c->D;
    const size_t st_n[8] = { ns, nz, ns, nz, ns, nz, ns, nz };
    float *st_in[4] = { NULL, NULL, NULL, NULL }, *st_ref[4] = { NULL, NULL, NULL, NULL };
    float *st_got[4] = { NULL, NULL, NULL, NULL },
          *st_dev[8] = { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    mf_linear_attention_state h_st = { NULL, NULL, NULL, NULL }, h_st_in = { NULL, NULL, NULL, NULL };
    mf_linear_attention_state d_st = { NULL, NULL, NULL, NULL }, d_st_in = { NULL, NULL, NULL, NULL };
    mf_linear_attention_state_grad h_gr = { NULL, NULL, NULL, NULL }, d_gr = { NULL, NULL, NULL, NULL };
    if (with_state) {
        static const float lo[4] = { -1.0f, 0.5f, -0.5f, -0.5f }, hi[4] = { 1.0f, 2.0f, 0.5f, 0.5f };
        for (int i = 0; i < 4; i++) {
            st_in[i] = (float *)mf_tb_make_input(MF_DTYPE_F32, st_n[i], seed + 4 + (uint64_t)i, lo[i], hi[i]);
            st_ref[i] = (float *)malloc(st_n[4 + i] * sizeof(float));
            st_got[i] = (float *)malloc(st_n[4 + i] * sizeof(float));
            if (st_in[i] == NULL || st_ref[i] == NULL || st_got[i] == NULL) {
                st = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host state buffers");
                goto done;
            }
            mf_fill_nan_f32(st_ref[i], st_n[4 + i]);
            mf_fill_nan_f32(st_got[i], st_n[4 + i]);
        }
        h_st = (mf_linear_attention_state){ st_in[0], st_in[1], st_ref[0], st_ref[1] };
        h_st_in = (mf_linear_attention_state){ st_in[0], st_in[1], NULL, NULL };
        h_gr = (mf_linear_attention_state_grad){ st_in[2], st_in[3], st_ref[2], st_ref[3] };
    }
    if (q == NULL || k == NULL || v == NULL || dout == NULL || hb == NULL) {
        st = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host buffers for case %d",
                          case_index);
        goto done;
    }
    mf_fill_nan_f32(hb, n_host);
    mf_fill_nan_f32(nan_guard, G);
    float *r_out = hb, *r_dq = r_out + nv, *r_dk = r_dq + nqk, *r_dv = r_dk + nqk;
    float *g_out = r_dv + nv, *g_dq = g_out + nv, *g_dk = g_dq + nqk, *g_dv = g_dk + nqk;

    if ((st = mf_mem_begin(ctx, MF_MEM_HOST)) != MF_OK ||
        (st = mf_ref_linear_attention_forward(ctx, c->dtype, causal, c->B, c->H, c->N, c->D, c->Dv, q, k, v,
                                              with_state ? &h_st : NULL, r_out)) != MF_OK ||
        (!fwd_only &&
         (st = mf_ref_linear_attention_backward(ctx, c->dtype, causal, c->B, c->H, c->N, c->D, c->Dv, q, k, v,
                                                dout, with_state ? &h_st_in : NULL, with_state ? &h_gr : NULL,
                                                r_dq, r_dk, r_dv)) != MF_OK))
        goto done;
    out->ref_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    if ((st = mf_buffer_alloc(ctx, nqk * es, &d_q)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nqk * es, &d_k)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nv * es, &d_v)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, nv * es, &d_do)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, (nv + G) * 4, (void **)&d_out)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, (nqk + G) * 4, (void **)&d_dq)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, (nqk + G) * 4, (void **)&d_dk)) != MF_OK ||
        (st = mf_buffer_alloc(ctx, (nv + G) * 4, (void **)&d_dv)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_q, q, nqk * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_k, k, nqk * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_v, v, nv * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_do, dout, nv * es)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_out, g_out, nv * 4)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_dq, g_dq, nqk * 4)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_dk, g_dk, nqk * 4)) != MF_OK ||
        (st = mf_buffer_upload(ctx, d_dv, g_dv, nv * 4)) != MF_OK)
        goto done;
    for (int i = 0; i < 4; i++) /* the outputs' NaN guards */
        if ((st = mf_buffer_upload(ctx, *o_devp[i] + o_n[i], nan_guard, G * 4)) != MF_OK) goto done;
    if (with_state) {
        for (int i = 0; i < 8 && st == MF_OK; i++) {
            const float *src = i < 4 ? st_in[i] : st_got[i - 4];
            if ((st = mf_buffer_alloc(ctx, (st_n[i] + (i < 4 ? 0 : G)) * 4, (void **)&st_dev[i])) == MF_OK)
                st = mf_buffer_upload(ctx, st_dev[i], src, st_n[i] * 4);
            if (st == MF_OK && i >= 4) st = mf_buffer_upload(ctx, st_dev[i] + st_n[i], nan_guard, G * 4);
        }
        if (st != MF_OK) goto done;
        d_st = (mf_linear_attention_state){ st_dev[0], st_dev[1], st_dev[4], st_dev[5] };
        d_st_in = (mf_linear_attention_state){ st_dev[0], st_dev[1], NULL, NULL };
        d_gr = (mf_linear_attention_state_grad){ st_dev[2], st_dev[3], st_dev[6], st_dev[7] };
    }
    if (cand) {
        const mf_linear_attention_state *sf = with_state ? &d_st : NULL, *sb = with_state ? &d_st_in : NULL;
        const mf_linear_attention_state_grad *gb = with_state ? &d_gr : NULL;
        if (fwd != NULL) { /* the candidate's forward alone, measured */
            if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
                (st = fwd(ctx, c->dtype, causal, c->chunk, c->B, c->H, c->N, c->D, c->Dv, d_q, d_k, d_v, sf,
                          d_out)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK)
                goto done;
            out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
        } else { /* the reference's out (rounded to fp32: the candidate is judged alone, not
                  * with our bf16 tensor-core forward's rounding); its backward, measured */
            (void)sf;
            if ((st = mf_buffer_upload(ctx, d_out, r_out, nv * 4)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK ||
                (st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
                (st = bwd(ctx, c->dtype, causal, c->chunk, c->B, c->H, c->N, c->D, c->Dv, d_q, d_k, d_v,
                          d_out, d_do, sb, gb, d_dq, d_dk, d_dv)) != MF_OK ||
                (st = mf_context_synchronize(ctx)) != MF_OK)
                goto done;
            out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
        }
    } else { /* ours: the forward, then (unless fwd_only) the backward on its out, measured together */
        const mf_linear_attention_state *sf = with_state ? &d_st : NULL, *sb = with_state ? &d_st_in : NULL;
        const mf_linear_attention_state_grad *gb = with_state ? &d_gr : NULL;
        if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK ||
            (st = mf_linear_attention_forward(ctx, c->dtype, causal, c->chunk, c->B, c->H, c->N, c->D, c->Dv,
                                              d_q, d_k, d_v, sf, d_out)) != MF_OK ||
            (!fwd_only && (st = mf_linear_attention_backward(ctx, c->dtype, causal, c->chunk, c->B, c->H,
                                                             c->N, c->D, c->Dv, d_q, d_k, d_v, d_out, d_do,
                                                             sb, gb, d_dq, d_dk, d_dv)) != MF_OK) ||
            (st = mf_context_synchronize(ctx)) != MF_OK)
            goto done;
        out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    }
    for (int i = 0; i < 4 && with_state; i++)
        if ((st = mf_buffer_download(ctx, st_got[i], st_dev[4 + i], st_n[4 + i] * 4)) != MF_OK) goto done;
    if ((st = mf_buffer_download(ctx, g_out, d_out, nv * 4)) != MF_OK ||
        (st = mf_buffer_download(ctx, g_dq, d_dq, nqk * 4)) != MF_OK ||
        (st = mf_buffer_download(ctx, g_dk, d_dk, nqk * 4)) != MF_OK ||
        (st = mf_buffer_download(ctx, g_dv, d_dv, nv * 4)) != MF_OK)
        goto done;

    /* report: every output; a candidate: the outputs of its own pass */
    const int cmp_fwd = !cand || fwd != NULL, cmp_bwd = cand ? bwd != NULL : !fwd_only;
    /* Given a final-state gradient, dk and dv sum Dv- or D-term dots of its
     * O(1) terms (not divided by den; nor ~0 at N = 1): linear_attention.grad_state */
    const char *grad_kv = with_state ? "linear_attention.grad_state" : "linear_attention.grad";
    int pass = 1;
    static const char *const guard_names[8] = { "out",      "dq",      "dk",           "dv",
                                                "final_kv", "final_z", "d_initial_kv", "d_initial_z" };
    for (int i = 0; i < (with_state ? 8 : 4) && pass; i++) {
        const float *d = i < 4 ? *o_devp[i] + o_n[i] : st_dev[i] + st_n[i];
        if ((st = mf_buffer_download(ctx, got_guard, d, G * 4)) != MF_OK) goto done;
        for (size_t g = 0; g < G && pass; g++)
            if (!isnan(got_guard[g])) { /* written past the end */
                pass = 0;
                out->failure = MF_FAILURE_NONFINITE;
                const mf_axes ax = la_axes(guard_names[i], c->B, c->H, c->N, c->D, c->Dv);
                char last[112];
                (void)mf_axes_format(&ax, mf_axes_count(&ax) - 1, last, sizeof last);
                snprintf(out->message, sizeof(out->message),
                         "%s: write past the end: element %zu after its last one %s (%g)", guard_names[i],
                         g + 1, last, (double)got_guard[g]);
            }
    }
    if (cmp_fwd &&
        (st = la_compare_row(g_out, r_out, nv, "out", "linear_attention.out", c, mma, out, &pass)) != MF_OK)
        goto done;
    if (cmp_bwd &&
        ((st = la_compare_row(g_dq, r_dq, nqk, "dq",
                              /* (a built-in row's state makes dq at N = 1 an O(1) gradient) */
                              ((c->N == 1 && !c->state) || c->D == 1) ? "linear_attention.grad_degenerate"
                                                                      : "linear_attention.grad",
                              c, mma, out, &pass)) != MF_OK ||
         (st = la_compare_row(g_dk, r_dk, nqk, "dk",
                              (c->N == 1 && !with_state) ? "linear_attention.grad_degenerate" : grad_kv, c,
                              mma, out, &pass)) != MF_OK ||
         (st = la_compare_row(g_dv, r_dv, nv, "dv", grad_kv, c, mma, out, &pass)) != MF_OK))
        goto done;
    if (with_state) {
        static const char *const names[4] = { "final_kv", "final_z", "d_initial_kv", "d_initial_z" };
        for (int i = cmp_fwd ? 0 : 2; i < (cmp_bwd ? 4 : 2); i++)
            if ((st = la_compare_row(st_got[i], st_ref[i], st_n[4 + i], names[i],
                                     i < 2 ? "linear_attention.state" : "linear_attention.grad", c, mma, out,
                                     &pass)) != MF_OK)
                goto done;
    }
    /* A built-in row's atol and rtol: the largest of its outputs' rows (mf_case_result; a
     * state row's grad_state rows exceed out's). A candidate's stay out's, as memfix verify prints them. */
    for (int i = 0; i < out->n_outputs && !cand; i++) {
        if (out->outputs[i].atol > out->atol) out->atol = out->outputs[i].atol;
        if (out->outputs[i].rtol > out->rtol) out->rtol = out->outputs[i].rtol;
    }
    mf_tb_verdict(out, pass);

done:
    mf_tb_case_error(out, st);
    void *bufs[] = { d_q, d_k, d_v, d_do, d_out, d_dq, d_dk, d_dv };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) mf_buffer_free(ctx, bufs[i]);
    for (int i = 0; i < 8; i++) mf_buffer_free(ctx, st_dev[i]);
    for (int i = 0; i < 4; i++) {
        free(st_in[i]);
        free(st_ref[i]);
        free(st_got[i]);
    }
    free(hb);
    free(dout);
    free(v);
    free(k);
    free(q);
    return st;
}

static mf_status la_run_case(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    const mf_case_id id = mf_tb_fixed_id(case_index);
    return la_run_case_impl(ctx, variant, NULL, NULL, &id, 0, out);
}

/* memfix verify (include/memfix/verify.h): every case causal (with a state),
 * then every case bidirectional. */
static int la_verify_n_cases(void) { return LA_VARIANTS_X_CASES; }

static mf_status linear_attention_verify_case(mf_context *ctx, mf_linear_attention_forward_candidate_fn fwd,
                                              mf_linear_attention_backward_candidate_fn bwd,
                                              const mf_case_id *id, uint64_t seed_salt, mf_case_result *out)
{
    if ((fwd == NULL) == (bwd == NULL)) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        MF_FAIL(fwd == NULL ? MF_ERR_NULL_POINTER : MF_ERR_INVALID_ARGUMENT,
                "exactly one of fwd and bwd must be given");
    }
    la_case c;
    int variant = 0;
    mf_case_id row;
    mf_status s = la_verify_case_of(id, &c, &variant, &row);
    if (s != MF_OK) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        return s;
    }
    return la_run_case_impl(ctx, variant, fwd, bwd, &row, seed_salt, out);
}

/* ---- memfix verify: the guard of linear_attention (forward / backward, with state) candidates (src/testbed/testbed.h) --- */
typedef struct la_args {
    mf_dtype dtype;
    int causal;
    int64_t chunk, B, H, N, D, Dv;
    int has_state, has_grad;
} la_args;

/* bufs: q, k, v, initial_kv, initial_z, out, final_kv, final_z */
static mf_status la_fwd_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const la_args *a = (const la_args *)args;
    const mf_linear_attention_state st = { (const float *)mf_tb_ptr(bufs, 3),
                                           (const float *)mf_tb_ptr(bufs, 4), (float *)mf_tb_ptr(bufs, 6),
                                           (float *)mf_tb_ptr(bufs, 7) };
    return ((mf_linear_attention_forward_candidate_fn)mf_tb_candidate())(
        ctx, a->dtype, a->causal, a->chunk, a->B, a->H, a->N, a->D, a->Dv, mf_tb_ptr(bufs, 0),
        mf_tb_ptr(bufs, 1), mf_tb_ptr(bufs, 2), a->has_state ? &st : NULL, (float *)mf_tb_ptr(bufs, 5));
}

static mf_status la_fwd_guard(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B,
                              int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                              const void *v, const mf_linear_attention_state *state, float *out)
{
    const size_t es = mf_dtype_size(dtype), bh = (size_t)B * (size_t)H, rows = bh * (size_t)N;
    const size_t ns = bh * (size_t)D * (size_t)Dv * 4, nz = bh * (size_t)D * 4;
    const mf_linear_attention_state none = { NULL, NULL, NULL, NULL };
    const mf_linear_attention_state *s = state != NULL ? state : &none;
    mf_tb_buffer sp[8] = { { "q", q, rows * (size_t)D * es, dtype, { 0 } },
                           { "k", k, rows * (size_t)D * es, dtype, { 0 } },
                           { "v", v, rows * (size_t)Dv * es, dtype, { 0 } },
                           { "state->initial_kv", s->initial_kv, ns, MF_DTYPE_F32, { 0 } },
                           { "state->initial_z", s->initial_z, nz, MF_DTYPE_F32, { 0 } },
                           { "out", out, rows * (size_t)Dv * 4, MF_DTYPE_F32, { 0 } },
                           { "state->final_kv", s->final_kv, ns, MF_DTYPE_F32, { 0 } },
                           { "state->final_z", s->final_z, nz, MF_DTYPE_F32, { 0 } } };
    for (int i = 0; i < 8; i++) sp[i].axes = la_axes(sp[i].name, B, H, N, D, Dv);
    const la_args args = { dtype, causal, chunk, B, H, N, D, Dv, state != NULL, 0 };
    mf_tb_guarded bufs[8];
    return mf_tb_guard(ctx, sp, 5, 8, la_fwd_call, &args, bufs);
}

/* bufs: q, k, v, out, dout, initial_kv, initial_z, d_final_kv, d_final_z, dq, dk, dv, d_initial_kv, d_initial_z */
static mf_status la_bwd_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const la_args *a = (const la_args *)args;
    const mf_linear_attention_state st = { (const float *)mf_tb_ptr(bufs, 5),
                                           (const float *)mf_tb_ptr(bufs, 6), NULL, NULL };
    const mf_linear_attention_state_grad gr = { (const float *)mf_tb_ptr(bufs, 7),
                                                (const float *)mf_tb_ptr(bufs, 8),
                                                (float *)mf_tb_ptr(bufs, 12), (float *)mf_tb_ptr(bufs, 13) };
    return ((mf_linear_attention_backward_candidate_fn)mf_tb_candidate())(
        ctx, a->dtype, a->causal, a->chunk, a->B, a->H, a->N, a->D, a->Dv, mf_tb_ptr(bufs, 0),
        mf_tb_ptr(bufs, 1), mf_tb_ptr(bufs, 2), (const float *)mf_tb_ptr(bufs, 3), mf_tb_ptr(bufs, 4),
        a->has_state ? &st : NULL, a->has_grad ? &gr : NULL, (float *)mf_tb_ptr(bufs, 9),
        (float *)mf_tb_ptr(bufs, 10), (float *)mf_tb_ptr(bufs, 11));
}

static mf_status la_bwd_guard(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B,
                              int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                              const void *v, const float *out, const void *dout,
                              const mf_linear_attention_state *state,
                              const mf_linear_attention_state_grad *grad, float *dq, float *dk, float *dv)
{
    const size_t es = mf_dtype_size(dtype), bh = (size_t)B * (size_t)H, rows = bh * (size_t)N;
    const size_t ns = bh * (size_t)D * (size_t)Dv * 4, nz = bh * (size_t)D * 4;
    const size_t nqk = rows * (size_t)D, nv = rows * (size_t)Dv;
    const mf_linear_attention_state none = { NULL, NULL, NULL, NULL };
    const mf_linear_attention_state_grad gnone = { NULL, NULL, NULL, NULL };
    const mf_linear_attention_state *s = state != NULL ? state : &none;
    const mf_linear_attention_state_grad *g = grad != NULL ? grad : &gnone;
    mf_tb_buffer sp[14] = { { "q", q, nqk * es, dtype, { 0 } },
                            { "k", k, nqk * es, dtype, { 0 } },
                            { "v", v, nv * es, dtype, { 0 } },
                            { "out", out, nv * 4, MF_DTYPE_F32, { 0 } },
                            { "dout", dout, nv * es, dtype, { 0 } },
                            { "state->initial_kv", s->initial_kv, ns, MF_DTYPE_F32, { 0 } },
                            { "state->initial_z", s->initial_z, nz, MF_DTYPE_F32, { 0 } },
                            { "grad->d_final_kv", g->d_final_kv, ns, MF_DTYPE_F32, { 0 } },
                            { "grad->d_final_z", g->d_final_z, nz, MF_DTYPE_F32, { 0 } },
                            { "dq", dq, nqk * 4, MF_DTYPE_F32, { 0 } },
                            { "dk", dk, nqk * 4, MF_DTYPE_F32, { 0 } },
                            { "dv", dv, nv * 4, MF_DTYPE_F32, { 0 } },
                            { "grad->d_initial_kv", g->d_initial_kv, ns, MF_DTYPE_F32, { 0 } },
                            { "grad->d_initial_z", g->d_initial_z, nz, MF_DTYPE_F32, { 0 } } };
    for (int i = 0; i < 14; i++) sp[i].axes = la_axes(sp[i].name, B, H, N, D, Dv);
    const la_args args = { dtype, causal, chunk, B, H, N, D, Dv, state != NULL, grad != NULL };
    mf_tb_guarded bufs[14];
    return mf_tb_guard(ctx, sp, 9, 14, la_bwd_call, &args, bufs);
}

static mf_status la_forward_verify_id(mf_context *ctx, void (*candidate)(void), const mf_case_id *id,
                                      uint64_t seed_salt, mf_case_result *out)
{
    return linear_attention_verify_case(ctx, candidate != NULL ? la_fwd_guard : NULL, NULL, id, seed_salt,
                                        out);
}

static mf_status la_backward_verify_id(mf_context *ctx, void (*candidate)(void), const mf_case_id *id,
                                       uint64_t seed_salt, mf_case_result *out)
{
    return linear_attention_verify_case(ctx, NULL, candidate != NULL ? la_bwd_guard : NULL, id, seed_salt,
                                        out);
}

MF_TB_RUN_FIXED(la_forward_verify, la_forward_verify_id)

MF_TB_RUN_FIXED(la_backward_verify, la_backward_verify_id)

/* Each built-in case causal (with a state), then bidirectional. */
static const mf_verify_target la_targets[] = {
    { "linear_attention.forward", la_forward_verify, la_verify_n_cases, la_forward_verify_id, la_describe_fwd,
      la_fwd_call, sizeof(la_args), 0, 0, MF_TB_OWN(mf_linear_attention_forward), 0 },
    { "linear_attention.backward", la_backward_verify, la_verify_n_cases, la_backward_verify_id,
      la_describe_bwd, la_bwd_call, sizeof(la_args), 0, 0, MF_TB_OWN(mf_linear_attention_backward), 0 }
};

/* ---- memfix bench: the size sweep (registry.h) ------------------------------------------- */
enum { LA_BENCH_B = 1, LA_BENCH_H = 2, LA_BENCH_D = 16, LA_BENCH_CHUNK = 16 };

/* variants: causal_chunked (0), bidirectional (1) */
static mf_status la_bench_setup(mf_context *ctx, mf_bench_case *c)
{
    const int64_t B = LA_BENCH_B, H = LA_BENCH_H, D = LA_BENCH_D, n = c->n;
    const int causal = c->variant == 0;
    const size_t m = (size_t)(B * H * n * D);
    snprintf(c->shape, sizeof c->shape, "%s B=%lld H=%lld N=%lld D=Dv=%lld", causal ? "causal C=16" : "bidir",
             (long long)B, (long long)H, (long long)n, (long long)D);
    c->ceiling = mf_linear_attention_scratch_ceiling(causal, 0, B, H, n, D, D);
    c->tol = "linear_attention.out.f32";
    /* per call (causal or not, any algorithm): the recurrent minimum, each
     * token adds k^T v to the D x Dv state (2*D*Dv) and reads q S (2*D*Dv);
     * q, k, v read once, out written once, fp32 */
    c->flops = 4.0 * (double)(B * H * n) * (double)D * (double)D;
    c->min_bytes = 4.0 * (double)m * 4.0;
    const size_t n_in[3] = { m, m, m }; /* q, k, v */
    return mf_tb_bench_io(ctx, c, 3, n_in, 31, m);
}

static mf_status la_bench_reference(mf_context *ctx, mf_bench_case *c)
{
    return mf_ref_linear_attention_forward(ctx, MF_DTYPE_F32, c->variant == 0, LA_BENCH_B, LA_BENCH_H, c->n,
                                           LA_BENCH_D, LA_BENCH_D, c->host[0], c->host[1], c->host[2], NULL,
                                           c->ref_out);
}

static mf_status la_bench_optimized(mf_context *ctx, mf_bench_case *c)
{
    return mf_linear_attention_forward(ctx, MF_DTYPE_F32, c->variant == 0, LA_BENCH_CHUNK, LA_BENCH_B,
                                       LA_BENCH_H, c->n, LA_BENCH_D, LA_BENCH_D, c->dev[0], c->dev[1],
                                       c->dev[2], NULL, c->out_dev);
}

static const mf_bench_sweep la_bench = { "causal, chunk 16, B=1 H=2 N=n D=16",
                                         { 64, 128, 256 },
                                         3,
                                         la_bench_setup,
                                         la_bench_reference,
                                         la_bench_optimized };

/* ---- memfix plan: the causal cumulative state vs the chunked form (seed 003) ---- */
static const mf_plan_param_spec la_plan_params[] = {
    { "linear_attention", "--linear-attention", "0|1",
      "the model has causal linear-attention layers: plan their\n                     cumulative state (seed "
      "003)",
      MF_PLAN_PARAM_FLAG, 0 },
};

/* Only for a model with linear attention (--linear-attention 1). */
static mf_status la_plan_rows(const mf_plan_config *cfg, mf_plan_rows *out)
{
    if (!mf_plan_param_get(cfg, "linear_attention")) return MF_OK; /* not in the model */
    const int64_t B = cfg->batch, H = cfg->heads, S = cfg->seq, Dh = mf_plan_head_dim(cfg);
    const size_t cumsum[] = { (size_t)B,  (size_t)H,  (size_t)S,
                              (size_t)Dh, (size_t)Dh, mf_dtype_size(cfg->dtype) };
    return mf_plan_row_add(out, "linear_attention", "kv cumsum B*H*N*D*D*e (causal)",
                           mf_plan_product(6, cumsum), "chunked: backward 8*B*H*N",
                           mf_linear_attention_scratch_ceiling(1, 1, B, H, S, Dh, Dh),
                           "B=%lld H=%lld N=%lld D=Dv=%lld %s", (long long)B, (long long)H, (long long)S,
                           (long long)Dh, mf_dtype_name(cfg->dtype));
}

static const mf_op_plan la_plan = { 1, la_plan_params, la_plan_rows, NULL };

/* The op's rows of the tolerance table (src/core/tolerance.c assembles the one
 * table): "linear_attention.<output>.<dtype>", atol, rtol, nmse, one-line justification. */
static const mf_tolerance linear_attention_tolerances[] = {
    { "linear_attention.out.f32", 2e-6, 1e-5, 1e-11,
      "out = num/den with num, den fp32 sums of N*D positive-weighted terms (phi > 0): a weighted mean of v "
      "(|v| < 1), rel err ~ (D + log N) u on each (measured <= 3.3e-7)" },
    { "linear_attention.grad.f32", 1e-6, 1e-5, 1e-10,
      "fp32 recomputation of the states and C x C products: dq = S dnum + dd z and dk = G v + g subtract "
      "terms of size |dout|/den ~ 0.1-1, so atol ~ 10 u covers the cancellations (measured <= 6e-7); dk, dv "
      "given a final-state gradient: grad_state" },
    { "linear_attention.grad_state.f32", 5e-6, 1e-5, 1e-10,
      "dk, dv given a final-state gradient: dv = G k', dk = dphi (G v + g), G, g carry dS_N, dz_N (|.| <= "
      "0.5, not divided by den): D- (Dv-) term fp32 dots of terms rms s = 0.39 cancelling to ~0, err rms ~ u "
      "s D/sqrt(6) = 1.2e-6 at D = 128, linear in D (measured 1.0e-6); atol 4x" },
    { "linear_attention.grad_degenerate.f32", 1e-6, 0.0, 1e30,
      "dq, dk where mathematically ~0 (N = 1: out = v q'.k'/(q'.k'+eps); dq at D = 1: q' cancels from "
      "num/den): the reference holds eps-level values (~1e-9), nmse is undefined; only |err| <= grad's atol "
      "is checked" },
    { "linear_attention.state.f32", 1e-5, 1e-5, 1e-11,
      "S_N = S0 + sum_n k'_n v_n^T in fp32: N terms |k' v| <= 2.5 with both signs cancel, so |err| ~ N u 2.5 "
      "~ 1e-5 at N = 64 (measured 3.3e-6 at N = 50); z_N sums positive terms (rtol)" },
    { "linear_attention.out.bf16", 2e-6, 1e-5, 1e-11,
      "bf16 storage of q, k, v, dout only: widened exactly, fp32 arithmetic and fp32 outputs as "
      "linear_attention.out.f32, so the same bound" },
    { "linear_attention.grad.bf16", 1e-6, 1e-5, 1e-10,
      "bf16 inputs widened exactly; states, C x C products and gradients in fp32: same bound as "
      "linear_attention.grad.f32" },
    { "linear_attention.grad_state.bf16", 5e-6, 1e-5, 1e-10,
      "bf16 inputs widened exactly; the final-state gradient terms summed in fp32 as in "
      "linear_attention.grad_state.f32: same bound" },
    { "linear_attention.grad_degenerate.bf16", 1e-6, 0.0, 1e30,
      "bf16 inputs widened exactly; mathematically ~0 gradients as in linear_attention.grad_degenerate.f32: "
      "absolute error only" },
    { "linear_attention.state.bf16", 1e-5, 1e-5, 1e-11,
      "bf16 inputs widened exactly; the fp32 state sums of linear_attention.state.f32" }, /* bf16 causal linear attention on tensor cores (optimized/linear_attention.cu, la_tc_*):
     * q' = phi(q), k', dout/den, the C x C scores and the states rounded to bf16 (unit roundoff
     * u = 2^-8 = 3.9e-3 relative, 8 significant bits; rms u/sqrt6 = 1.6e-3 per rounding) as mma
     * operands, fp32 accumulation. The 6u below are worst cases (every rounding maximal and of
     * one sign); the roundings are independent and unbiased, so the errors are random sums far
     * below them */
    { "linear_attention.out.bf16_mma", 1.2e-2, 0.0, 1.5e-5,
      "out = sum_m w_m v_m / sum_m w_m, w_m = q'.k'_m sums of positive terms: rounding q', k' moves each w_m "
      "by <= 2u relative, shifting out by <= 2u max|v - out| <= 4u; scores rounded in (QK^T)V and S in Q'S "
      "add <= u max|v| each: worst case 6u = 2.3e-2, atol half of it (measured 2.5e-3); nmse: 4 roundings of "
      "rms u/sqrt6 scaled by |v - out|/|out| ~ 1.7 give ~1.9u^2 = 2.9e-5 per term, above the 1.5e-5 bound, "
      "but "
      "each rounding reaches out through a weighted mean over keys or D terms, which averages the "
      "independent roundings: measured 4.7e-6, 3.2x under the bound" },
    { "linear_attention.grad.bf16_mma", 1.2e-2, 0.0, 1e-4,
      "3 rounded factors per term (e.g. dN, (dN V^T + dd) and q' in dk): <= 3u relative per term over sums "
      "of |terms| <= 2 at these inputs (|grad| <= 1.2): worst case 6u = 2.3e-2, atol half of it (measured "
      "6.9e-3); nmse: dq = S dnum + dd z cancels by kappa ~ 5 (out is a weighted mean of v): 3 (u^2/6) "
      "kappa^2 = 12.5u^2 = 1.9e-4 per term, above the 1e-4 bound, but the roundings average within each sum: "
      "measured 4.8e-5, 2.1x under the bound" },
    { "linear_attention.grad_state.bf16_mma", 6e-2, 0.0, 1e-4,
      "dk, dv given dS_N (not divided by den): D-term dots of G = dS_N + sum q' dnum^T (|.| ~ 0.5) with k' "
      "(<= 2.5), both rounded to bf16 (<= 2u per term, rms u/sqrt3 = 2.25e-3): sigma of a random walk over D "
      "= "
      "128 terms of rms 0.6 is 2.25e-3 * 11.3 * 0.6 = 1.5e-2, atol 6e-2 = 3.9 sigma (|dv| up to 9; measured "
      "4.8e-2 = 3.1 sigma at D = 128); nmse as grad.bf16_mma (measured 7.2e-6)" },
    { "linear_attention.grad_degenerate.bf16_mma", 1.2e-2, 0.0, 1e30,
      "dq, dk where mathematically ~0 (N = 1, or dq at D = 1): rounding leaves u-level residues of the "
      "grad.bf16_mma terms; nmse undefined, only |err| <= grad.bf16_mma's atol" },
    { "linear_attention.state.bf16_mma", 6e-5, 1e-5, 1e-11,
      "S_N = S0 + sum_n k'_n v_n^T with k' = hi + lo (two bf16: relative error <= u^2 = 2^-16 = 1.5e-5, the "
      "product of two independent roundings, rms (u/sqrt6)^2 = 2.5e-6) and bf16 v exact, fp32 accumulation: "
      "a random walk of N <= 201 terms |k'v| <= 2.5 has sigma <= 2.5 * 2.5e-6 * sqrt(200) = 9e-5 at N = 200 "
      "with every |k'v| at its maximum, less at real inputs; atol 6e-5 is not a 4-sigma bound of this model, "
      "it rests on the measurement (2.6e-5 at N = 77, D = 128); z from fp32 phi (rtol as state.f32)" },
};

const mf_op_desc mf_op_linear_attention = {
    "linear_attention",
    "elu+1 linear attention fwd+bwd: causal chunked state carry vs materialized cumsum; bidirectional (seed "
    "003)",
    LA_N_VARIANTS,
    la_variant_names,
    LA_N_CASES,
    la_run_case,
    2,
    la_targets,
    &la_bench,
    (int)(sizeof linear_attention_tolerances / sizeof linear_attention_tolerances[0]),
    linear_attention_tolerances,
    &la_plan,
    LA_N_REPORT_CASES, /* report: the first rows; the rest are the equivalence and memory suites' */
    la_case_applies,   /* the suites' rows: one variant each, or both; the large rows: none */
    0,
    NULL, /* bench_targets: none */
};
