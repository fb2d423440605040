/* mf_matmul: argument validation, backend dispatch, the memory ceilings and the
 * registry entry of the matmul fix (seed document 002; see
 * include/memfix/matmul.h, reference/matmul.c, optimized/matmul.cu). */
#include "memfix/matmul.h"

#include "memfix/check.h"
#include "memfix/registry.h"
#include "matmul.cuh"
#include "mf_internal.h"
#include "testbed/testbed.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel entries (optimized/matmul.cuh): mf_host_* from cudahost, mf_cuda_*
 * from nvcc. Arguments are validated before the call. */
static const char *const matmul_variant_names[MF_MATMUL_N_VARIANTS] = { "naive", "tiled", "cublas" };

const char *mf_matmul_variant_name(mf_matmul_variant v)
{
    if ((int)v < 0 || (int)v >= MF_MATMUL_N_VARIANTS) return NULL;
    return matmul_variant_names[v];
}

/* ---- memory ceilings (include/memfix/matmul.h) -------------------------------- */
static int shape_valid(int64_t M, int64_t N, int64_t K) { return M > 0 && N > 0 && K > 0; }

/* One thread per output, operands read from global memory: no scratch. */
size_t mf_matmul_naive_scratch_ceiling(int64_t M, int64_t N, int64_t K)
{
    return shape_valid(M, N, K) ? 0 : SIZE_MAX;
}
/* Tiles in on-chip shared memory (2*16*17 floats per block): no global scratch. */
size_t mf_matmul_tiled_scratch_ceiling(int64_t M, int64_t N, int64_t K)
{
    return shape_valid(M, N, K) ? 0 : SIZE_MAX;
}
/* cublasGemmEx reads bf16 directly and works in the context's (baseline) workspace. */
size_t mf_matmul_cublas_scratch_ceiling(int64_t M, int64_t N, int64_t K)
{
    return shape_valid(M, N, K) ? 0 : SIZE_MAX;
}
size_t mf_matmul_scratch_ceiling(mf_matmul_variant variant, int64_t M, int64_t N, int64_t K)
{
    switch (variant) {
    case MF_MATMUL_NAIVE: return mf_matmul_naive_scratch_ceiling(M, N, K);
    case MF_MATMUL_TILED: return mf_matmul_tiled_scratch_ceiling(M, N, K);
    case MF_MATMUL_CUBLAS: return mf_matmul_cublas_scratch_ceiling(M, N, K);
    }
    return SIZE_MAX;
}

/* ---- the public entry ---------------------------------------------------------- */
mf_status mf_matmul(mf_context *ctx, mf_matmul_variant variant, mf_dtype dtype, int trans_a, int trans_b,
                    int64_t M, int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    MF_CHECK_ALL_NOT_NULL(ctx, A, B, C);
    if ((int)variant < 0 || (int)variant >= MF_MATMUL_N_VARIANTS)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT,
                "variant %d is not MF_MATMUL_NAIVE (0), MF_MATMUL_TILED (1) or MF_MATMUL_CUBLAS (2)",
                (int)variant);
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16)
        MF_FAIL(MF_ERR_DTYPE, "dtype %d is not MF_DTYPE_F32 or MF_DTYPE_BF16", (int)dtype);
    MF_CHECK_POSITIVE(M);
    MF_CHECK_POSITIVE(N);
    MF_CHECK_POSITIVE(K);
    size_t bytes;
    const int64_t esize = (int64_t)mf_dtype_size(dtype);
    MF_TRY(mf_dims_product(__func__, "A bytes (M*K*dtype size)", &bytes, 3, M, K, esize));
    MF_TRY(mf_dims_product(__func__, "B bytes (K*N*dtype size)", &bytes, 3, K, N, esize));
    MF_TRY(mf_dims_product(__func__, "C bytes (M*N*4)", &bytes, 3, M, N, (int64_t)4));
    if (variant == MF_MATMUL_CUBLAS && (M > INT_MAX || N > INT_MAX || K > INT_MAX))
        MF_FAIL(MF_ERR_INVALID_SIZE, "the cublas variant needs M, N, K <= INT_MAX (got M=%lld N=%lld K=%lld)",
                (long long)M, (long long)N, (long long)K);
    /* Extents before any launch (the products fit: checked above). */
    MF_TRY(mf_check_device_extent(__func__, ctx, A, (size_t)M * (size_t)K * (size_t)esize, "A"));
    MF_TRY(mf_check_device_extent(__func__, ctx, B, (size_t)K * (size_t)N * (size_t)esize, "B"));
    MF_TRY(mf_check_device_extent(__func__, ctx, C, (size_t)M * (size_t)N * 4, "C"));

    mf_matmul_kernel_fn *fn = NULL;
    switch (mf_context_backend(ctx)) {
    case MF_BACKEND_HOST: {
        static mf_matmul_kernel_fn *const host[MF_MATMUL_N_VARIANTS] = { mf_host_matmul_naive,
                                                                         mf_host_matmul_tiled,
                                                                         mf_host_matmul_cublas };
        fn = host[variant];
        break;
    }
    case MF_BACKEND_CUDA: {
#ifdef MF_HAVE_CUDA
        static mf_matmul_kernel_fn *const cuda[MF_MATMUL_N_VARIANTS] = { mf_cuda_matmul_naive,
                                                                         mf_cuda_matmul_tiled,
                                                                         mf_cuda_matmul_cublas };
        fn = cuda[variant];
        break;
#else
        MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "memfix was built without the CUDA backend");
#endif
    }
    default: break;
    }
    if (fn == NULL)
        MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "the context's backend %d has no matmul",
                (int)mf_context_backend(ctx));
    return fn(ctx, dtype, trans_a != 0, trans_b != 0, M, N, K, A, B, C);
}

/* ---- registry entry: built-in cases for `memfix report` -------------------------- */
typedef struct matmul_case {
    int64_t M, N, K;
    int trans_a, trans_b;
    mf_dtype dtype;
} matmul_case;

/* Every transpose combination and dtype of one shape. */
// clang-format off
#define MATMUL_ALL8(M, N, K)                                                                                 \
    { M, N, K, 0, 0, MF_DTYPE_F32 }, { M, N, K, 0, 0, MF_DTYPE_BF16 }, { M, N, K, 1, 0, MF_DTYPE_F32 },      \
    { M, N, K, 1, 0, MF_DTYPE_BF16 }, { M, N, K, 0, 1, MF_DTYPE_F32 }, { M, N, K, 0, 1, MF_DTYPE_BF16 },     \
    { M, N, K, 1, 1, MF_DTYPE_F32 }, { M, N, K, 1, 1, MF_DTYPE_BF16 }
// clang-format on

/* Small shapes (fast in host mode) covering: the degenerate 1x1x1, sizes that
 * are not multiples of the 16x16 tile with every transpose combination, tall
 * and skinny outputs, a thin K = 4096 reduction, and one multi-tile shape. */
static const matmul_case matmul_cases[] = {
    { 1, 1, 1, 0, 0, MF_DTYPE_F32 },
    { 1, 1, 1, 1, 1, MF_DTYPE_BF16 },
    { 17, 33, 19, 0, 0, MF_DTYPE_F32 },
    { 17, 33, 19, 1, 0, MF_DTYPE_F32 },
    { 17, 33, 19, 0, 1, MF_DTYPE_BF16 },
    { 17, 33, 19, 1, 1, MF_DTYPE_BF16 },
    { 1000, 3, 5, 0, 0, MF_DTYPE_F32 },
    { 3, 1000, 7, 0, 1, MF_DTYPE_BF16 },
    { 4, 5, 4096, 0, 0, MF_DTYPE_F32 },
    { 4, 5, 4096, 1, 1, MF_DTYPE_BF16 },
    { 64, 48, 80, 0, 0, MF_DTYPE_BF16 },
    /* The equivalence sweep (tests/equivalence/test_matmul_equiv.c runs every
     * case): the rest of every transpose combination and dtype of 1x1x1, one past
     * the tile (17x33x19), a single output column with K over 3 partial tiles
     * (31x1x47), tall and skinny (1000x3x5), short and wide (3x1000x7), a thin
     * K = 4096 reduction, exact tile multiples (48x32x64), N over 5 column tiles
     * with M below a tile (2x70x33). */
    { 1, 1, 1, 0, 0, MF_DTYPE_BF16 },
    { 1, 1, 1, 1, 0, MF_DTYPE_F32 },
    { 1, 1, 1, 1, 0, MF_DTYPE_BF16 },
    { 1, 1, 1, 0, 1, MF_DTYPE_F32 },
    { 1, 1, 1, 0, 1, MF_DTYPE_BF16 },
    { 1, 1, 1, 1, 1, MF_DTYPE_F32 },
    { 17, 33, 19, 0, 0, MF_DTYPE_BF16 },
    { 17, 33, 19, 1, 0, MF_DTYPE_BF16 },
    { 17, 33, 19, 0, 1, MF_DTYPE_F32 },
    { 17, 33, 19, 1, 1, MF_DTYPE_F32 },
    MATMUL_ALL8(31, 1, 47),
    { 1000, 3, 5, 0, 0, MF_DTYPE_BF16 },
    { 1000, 3, 5, 1, 0, MF_DTYPE_F32 },
    { 1000, 3, 5, 1, 0, MF_DTYPE_BF16 },
    { 1000, 3, 5, 0, 1, MF_DTYPE_F32 },
    { 1000, 3, 5, 0, 1, MF_DTYPE_BF16 },
    { 1000, 3, 5, 1, 1, MF_DTYPE_F32 },
    { 1000, 3, 5, 1, 1, MF_DTYPE_BF16 },
    { 3, 1000, 7, 0, 0, MF_DTYPE_F32 },
    { 3, 1000, 7, 0, 0, MF_DTYPE_BF16 },
    { 3, 1000, 7, 1, 0, MF_DTYPE_F32 },
    { 3, 1000, 7, 1, 0, MF_DTYPE_BF16 },
    { 3, 1000, 7, 0, 1, MF_DTYPE_F32 },
    { 3, 1000, 7, 1, 1, MF_DTYPE_F32 },
    { 3, 1000, 7, 1, 1, MF_DTYPE_BF16 },
    { 4, 5, 4096, 0, 0, MF_DTYPE_BF16 },
    { 4, 5, 4096, 1, 0, MF_DTYPE_F32 },
    { 4, 5, 4096, 1, 0, MF_DTYPE_BF16 },
    { 4, 5, 4096, 0, 1, MF_DTYPE_F32 },
    { 4, 5, 4096, 0, 1, MF_DTYPE_BF16 },
    { 4, 5, 4096, 1, 1, MF_DTYPE_F32 },
    MATMUL_ALL8(48, 32, 64),
    MATMUL_ALL8(2, 70, 33),
    /* The memory suite's shapes (tests/memory/test_matmul_memory.c): two sizes,
     * the second doubling M, N and K, and the cuBLAS workspace case. */
    { 40, 24, 56, 0, 0, MF_DTYPE_F32 },
    { 40, 24, 56, 0, 0, MF_DTYPE_BF16 },
    { 80, 48, 112, 1, 1, MF_DTYPE_F32 },
    { 80, 48, 112, 1, 1, MF_DTYPE_BF16 },
    { 33, 17, 65, 0, 1, MF_DTYPE_BF16 },
};
#define MATMUL_N_CASES ((int)(sizeof(matmul_cases) / sizeof(matmul_cases[0])))
/* memfix verify's built-in cases: the first 11 (the sweep after them is the
 * test suites'; verify's random cases cover the dtype x transpose combinations). */
#define MATMUL_N_VERIFY_CASES 11

/* ---- seeded random cases (memfix verify --seed/--cases/--large) ---------- */
/* Random case i of a seed: the dtype x (ta, tb) combination (i + seed) mod 8, so
 * any 8 consecutive cases hold all eight; odd M, N (not tile multiples) with
 * M*N in (4096, ~40000] so elements past index 4096 are compared, odd K up to
 * 97; every fourth case (i + seed = 0 mod 4), and a quarter of the others, is
 * wide instead: M*N > 2^20 (past index 65536 and 2^20: a kernel right only
 * within one big tile fails) with odd K up to 7. The large case: M*K = 2^31 + 2^17 elements of A (K = 2^15 + 2, M = 65533),
 * N = 1 (its reference is 2^31 multiply-adds). */
static void matmul_generate(const mf_case_id *id, matmul_case *c)
{
    mf_tb_rng r = mf_tb_case_rng("matmul", id);
    const int combo = (int)(((uint64_t)id->index + id->seed) % 8u);
    c->dtype = combo & 4 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    c->trans_a = combo & 1;
    c->trans_b = (combo >> 1) & 1;
    if (id->kind == MF_CASE_LARGE) {
        c->M = 65533, c->K = 32770, c->N = 1;
        return;
    }
    if ((id->index + id->seed) % 4u == 0 || mf_tb_rand_chance(&r, 1, 4)) {
        c->M = mf_tb_rand_int(&r, 512, 600) * 2 + 1;
        c->N = ((int64_t)1 << 20) / c->M + 2 * mf_tb_rand_int(&r, 1, 40) + 1;
        c->N += c->N % 2 == 0;
        c->K = mf_tb_rand_int(&r, 0, 3) * 2 + 1;
        return;
    }
    c->M = mf_tb_rand_int(&r, 16, 150) * 2 + 1;
    const int64_t n_min = 4097 / c->M + 1;
    c->N = mf_tb_rand_int(&r, n_min / 2 + 1, n_min / 2 + 60) * 2 + 1;
    c->K = mf_tb_rand_int(&r, 0, 48) * 2 + 1;
}

/* The case of an id: a row of the table or a generated one. */
static mf_status matmul_case_of(const mf_case_id *id, matmul_case *c)
{
    if (id->kind == MF_CASE_FIXED) {
        if (id->index < 0 || id->index >= MATMUL_N_CASES)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "matmul: case %d out of range [0, %d)", id->index,
                    MATMUL_N_CASES);
        *c = matmul_cases[id->index];
    } else {
        matmul_generate(id, c);
    }
    return MF_OK;
}

static void matmul_shape(const matmul_case *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "M=%lld N=%lld K=%lld ta=%d tb=%d", (long long)c->M, (long long)c->N, (long long)c->K,
             c->trans_a, c->trans_b);
}

/* memfix verify's fixed cases are the first MATMUL_N_VERIFY_CASES. */
static mf_status matmul_verify_id_check(const mf_case_id *id)
{
    if (id->kind == MF_CASE_FIXED && (id->index < 0 || id->index >= MATMUL_N_VERIFY_CASES))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "matmul: verify case %d out of range [0, %d)", id->index,
                MATMUL_N_VERIFY_CASES);
    return MF_OK;
}

static mf_status matmul_describe(const mf_case_id *id, char *buf, size_t cap, size_t *bytes)
{
    MF_TRY(matmul_verify_id_check(id));
    matmul_case c = { 0 };
    MF_TRY(matmul_case_of(id, &c));
    char shape[160];
    matmul_shape(&c, shape, sizeof shape);
    snprintf(buf, cap, "%s %s", mf_dtype_name(c.dtype), shape);
    /* host: inputs, reference and result; device: inputs and output, twice (guarded copies) */
    const size_t es = mf_dtype_size(c.dtype), mk = (size_t)c.M * (size_t)c.K, kn = (size_t)c.K * (size_t)c.N,
                 mn = (size_t)c.M * (size_t)c.N;
    *bytes = 3 * ((mk + kn) * es + mn * 4) + 2 * mn * 4;
    return MF_OK;
}

/* One case: 'variant' through mf_matmul (report), or, when 'entry' != NULL, the
 * candidate 'entry' (memfix verify) with the ceiling of the tiled fix. */
static mf_status matmul_run_case_impl(mf_context *ctx, int variant, mf_matmul_kernel_fn *entry,
                                      const mf_case_id *id, uint64_t seed_salt, mf_case_result *out)
{
    if (entry != NULL) variant = MF_MATMUL_TILED;
    MF_TRY(mf_tb_case_begin_id(out, "matmul", ctx, variant, MF_MATMUL_N_VARIANTS, id, MATMUL_N_CASES));
    matmul_case cc;
    MF_TRY(matmul_case_of(id, &cc));
    const matmul_case *c = &cc;
    const mf_matmul_variant v = (mf_matmul_variant)variant;
    mf_tb_copy_msg(out->variant, sizeof(out->variant),
                   entry != NULL ? "candidate" : matmul_variant_names[variant]);
    mf_tb_copy_msg(out->backend, sizeof(out->backend), mf_backend_name(mf_context_backend(ctx)));
    mf_tb_copy_msg(out->dtype, sizeof(out->dtype), mf_dtype_name(c->dtype));
    matmul_shape(c, out->shape, sizeof(out->shape));
    const mf_tolerance *tol = mf_tb_tolerance("matmul.out", c->dtype);
    if (tol == NULL) return MF_ERR_INTERNAL;
    out->atol = tol->atol;
    out->rtol = tol->rtol;
    out->ceiling_bytes = mf_matmul_scratch_ceiling(v, c->M, c->N, c->K);

    const size_t m = (size_t)c->M, n = (size_t)c->N, k = (size_t)c->K;
    const uint64_t seed = mf_tb_case_seed(id, 0x6d61746d756c0000ull, 2u, seed_salt);
    mf_tb_tensor t[3] = {
        { "A", MF_TB_IN, m * k, -1.0f, 1.0f, NULL, NULL, NULL, NULL, { NULL, { 0 } } },
        { "B", MF_TB_IN, k * n, -1.0f, 1.0f, NULL, NULL, NULL, NULL, { NULL, { 0 } } },
        { "C", MF_TB_OUT, m * n, 0.0f, 0.0f, "matmul.out", NULL, NULL, NULL, { "row col", { c->M, c->N } } }
    };
    mf_status st = mf_tb_tensors_make(t, 3, c->dtype, seed);
    if (st != MF_OK) goto done;

    /* The reference, with its host scratch measured. */
    if ((st = mf_mem_begin(ctx, MF_MEM_HOST)) != MF_OK) goto done;
    if ((st = mf_ref_matmul(ctx, c->dtype, c->trans_a, c->trans_b, c->M, c->N, c->K, t[0].host, t[1].host,
                            t[2].host)) != MF_OK)
        goto done;
    out->ref_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    /* The variant on the context's backend, output pre-filled with NaN. */
    if ((st = mf_tb_tensors_upload(ctx, t, 3, c->dtype)) != MF_OK) goto done;
    if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK) goto done;
    if ((st = entry != NULL ? entry(ctx, c->dtype, c->trans_a, c->trans_b, c->M, c->N, c->K, t[0].dev,
                                    t[1].dev, t[2].dev)
                            : mf_matmul(ctx, v, c->dtype, c->trans_a, c->trans_b, c->M, c->N, c->K, t[0].dev,
                                        t[1].dev, t[2].dev)) != MF_OK ||
        (st = mf_context_synchronize(ctx)) != MF_OK)
        goto done;
    out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);

    st = mf_tb_tensors_verdict(ctx, t, 3, c->dtype, out);

done:
    mf_tb_case_error(out, st);
    mf_tb_tensors_free(ctx, t, 3);
    return st;
}

static mf_status matmul_run_case(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    const mf_case_id id = mf_tb_fixed_id(case_index);
    return matmul_run_case_impl(ctx, variant, NULL, &id, 0, out);
}

/* ---- memfix verify: the guard of matmul candidates (src/testbed/testbed.h) ------------------ */
typedef struct matmul_args {
    mf_dtype dtype;
    int trans_a, trans_b;
    int64_t M, N, K;
} matmul_args;

/* bufs: A, B, C */
static mf_status matmul_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const matmul_args *a = (const matmul_args *)args;
    return ((mf_matmul_candidate_fn)mf_tb_candidate())(ctx, a->dtype, a->trans_a, a->trans_b, a->M, a->N,
                                                       a->K, mf_tb_ptr(bufs, 0), mf_tb_ptr(bufs, 1),
                                                       (float *)mf_tb_ptr(bufs, 2));
}

/* The entry matmul_run_case_impl calls in place of the variant. */
static mf_status matmul_guard(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M, int64_t N,
                              int64_t K, const void *A, const void *B, float *C)
{
    const size_t es = mf_dtype_size(dtype);
    /* A is M x K (K x M with trans_a), B K x N (N x K with trans_b), row-major */
    const mf_tb_buffer sp[3] = {
        { "A", A, (size_t)M * (size_t)K * es, dtype,
          trans_a ? (mf_axes){ "k row", { K, M } } : (mf_axes){ "row k", { M, K } } },
        { "B", B, (size_t)K * (size_t)N * es, dtype,
          trans_b ? (mf_axes){ "col k", { N, K } } : (mf_axes){ "k col", { K, N } } },
        { "C", C, (size_t)M * (size_t)N * sizeof(float), MF_DTYPE_F32, { "row col", { M, N } } }
    };
    const matmul_args args = { dtype, trans_a, trans_b, M, N, K };
    mf_tb_guarded bufs[3];
    return mf_tb_guard(ctx, sp, 2, 3, matmul_call, &args, bufs);
}

/* A candidate's case: the id range-checked (verify's fixed cases are the first MATMUL_N_VERIFY_CASES),
 * then the case with the guard as the entry. */
static mf_status matmul_verify_run(mf_context *ctx, const mf_case_id *id, uint64_t seed_salt,
                                   mf_case_result *out)
{
    const mf_status st = matmul_verify_id_check(id);
    if (st != MF_OK) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        return st;
    }
    return matmul_run_case_impl(ctx, 0, matmul_guard, id, seed_salt, out);
}

MF_TB_VERIFY_RUNS(matmul_verify, matmul_verify_id, matmul_verify_run(ctx, id, seed_salt, out))

/* memfix's own tiled matmul in the candidate's type: timed beside a candidate in verify's worker. */
static mf_status matmul_own(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M, int64_t N,
                            int64_t K, const void *A, const void *B, float *C)
{
    return mf_matmul(ctx, MF_MATMUL_TILED, dtype, trans_a, trans_b, M, N, K, A, B, C);
}

static int matmul_verify_n_cases(void) { return MATMUL_N_VERIFY_CASES; }

static const mf_verify_target matmul_targets[] = { { "matmul", matmul_verify, matmul_verify_n_cases,
                                                     matmul_verify_id, matmul_describe, matmul_call,
                                                     sizeof(matmul_args), 0, 0, MF_TB_OWN(matmul_own), 8 } };

/* ---- memfix bench: the size sweep (registry.h) ------------------------------------------- */
static mf_status matmul_bench_setup(mf_context *ctx, mf_bench_case *c)
{
    const int64_t n = c->n;
    const size_t nn = (size_t)n * (size_t)n;
    snprintf(c->shape, sizeof c->shape, "M=%lld N=%lld K=%lld", (long long)n, (long long)n, (long long)n);
    c->ceiling = mf_matmul_scratch_ceiling((mf_matmul_variant)c->variant, n, n, n);
    c->tol = "matmul.out.f32";
    /* per call (any variant): 2*M*N*K; A and B read once, C written once, fp32 */
    c->flops = 2.0 * (double)n * (double)n * (double)n;
    c->min_bytes = 4.0 * 3.0 * (double)nn;
    mf_status s = MF_OK;
    const float *A = mf_tb_bench_host(c, nn, 11, &s), *B = mf_tb_bench_host(c, nn, 12, &s);
    c->ref_out = mf_tb_bench_host(c, nn, 0, &s);
    mf_tb_bench_dev(ctx, c, A, nn * 4, &s);
    mf_tb_bench_dev(ctx, c, B, nn * 4, &s);
    c->out_dev = (float *)mf_tb_bench_dev(ctx, c, NULL, nn * 4, &s);
    c->out_n = nn;
    return s;
}

static mf_status matmul_bench_reference(mf_context *ctx, mf_bench_case *c)
{
    const int64_t n = c->n;
    return mf_ref_matmul(ctx, MF_DTYPE_F32, 0, 0, n, n, n, c->host[0], c->host[1], c->ref_out);
}

static mf_status matmul_bench_optimized(mf_context *ctx, mf_bench_case *c)
{
    const int64_t n = c->n;
    return mf_matmul(ctx, (mf_matmul_variant)c->variant, MF_DTYPE_F32, 0, 0, n, n, n, c->dev[0], c->dev[1],
                     c->out_dev);
}

static const mf_bench_sweep matmul_bench = {
    "M = N = K = n", { 32, 64, 128 }, 3, matmul_bench_setup, matmul_bench_reference, matmul_bench_optimized
};

/* The op's rows of the tolerance table (src/core/tolerance.c assembles the one
 * table): "matmul.<output>.<dtype>", atol, rtol, nmse, one-line justification. */
static const mf_tolerance matmul_tolerances[] = {
    { "matmul.out.f32", 1e-3, 1e-5, 1e-10,
      "fp32 sum of K products vs double: err ~ sqrt(K)*u*max|partial sum| = 64*6e-8*64 = 2.4e-4 at K=4096, "
      "inputs in [-1,1) (measured <= 1.3e-4); atol = 4x that, while one lost product costs ~|a*b| ~ 0.25" },
    { "matmul.out.bf16", 1e-3, 1e-5, 1e-10,
      "bf16 x bf16 products are exact in fp32 (8+8 bit mantissas), so only the fp32 sum of K terms errs: "
      "same K*u bound as matmul.out.f32" },
};

const mf_op_desc mf_op_matmul = {
    "matmul",
    "C = op(A) op(B), fp32/bf16 in, fp32 out: 16x16 shared-memory tiled matmul (seed 002)",
    MF_MATMUL_N_VARIANTS,
    matmul_variant_names,
    MATMUL_N_CASES,
    matmul_run_case,
    1,
    matmul_targets,
    &matmul_bench,
    (int)(sizeof matmul_tolerances / sizeof matmul_tolerances[0]),
    matmul_tolerances,
    NULL,                  /* no plan rows: a matmul is not a memory fix of a model */
    MATMUL_N_VERIFY_CASES, /* report: the first cases; the rest are the equivalence suite's sweep */
    NULL,                  /* case_applies: every case runs for every variant */
    0,
    NULL, /* bench_targets: none */
};
