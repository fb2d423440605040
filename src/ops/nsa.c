/* mf_nsa_*: argument validation, backend dispatch and the registry entry of
 * the native sparse attention fix (seed document 001; include/memfix/nsa.h,
 * reference/nsa.c, optimized/nsa.cu). The configuration, validation and
 * memory formulas are in src/ops/nsa_args.c (also used by the reference). */
#include "memfix/nsa.h"

#include "memfix/attention.h"
#include "memfix/check.h"
#include "memfix/plan.h"
#include "memfix/registry.h"
#include "mf_internal.h"
#include "nsa.cuh"
#include "op_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const nsa_variant_names[MF_NSA_N_VARIANTS] = { "fused" };

const char *mf_nsa_variant_name(mf_nsa_variant v)
{
    if ((int)v < 0 || (int)v >= MF_NSA_N_VARIANTS) return NULL;
    return nsa_variant_names[v];
}

/* ---- validation and dispatch -------------------------------------------------------- */
/* What both passes check first, reported for func: ctx, the variant, the
 * shape and configuration (mf_nsa_validate), the fused kernels' limits. */
static mf_status nsa_check_call(const char *func, mf_context *ctx, mf_nsa_variant variant, mf_dtype dtype,
                                const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk,
                                int64_t D)
{
    if (ctx == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "ctx is NULL");
    if ((int)variant < 0 || (int)variant >= MF_NSA_N_VARIANTS)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "variant %d is not MF_NSA_FUSED (0)", (int)variant);
    MF_TRY(mf_nsa_validate(func, dtype, cfg, B, S, Hq, Hk, D));
    if (D > MF_NSA_MAX_HEAD_DIM || Hq / Hk > MF_NSA_MAX_GROUP)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "the fused kernel supports D <= %d and Hq/Hk <= %d (got D=%lld Hq/Hk=%lld)",
                            MF_NSA_MAX_HEAD_DIM, MF_NSA_MAX_GROUP, (long long)D, (long long)(Hq / Hk));
    return MF_OK;
}

mf_status mf_nsa_forward(mf_context *ctx, mf_nsa_variant variant, mf_dtype dtype, const mf_nsa_config *cfg,
                         int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q,
                         const void *k, const void *v, const void *g_cmp, const void *g_slc,
                         const void *g_win, float *out, float *lse, int32_t *sel)
{
    MF_TRY(nsa_check_call(__func__, ctx, variant, dtype, cfg, B, S, Hq, Hk, D));
    if (cfg->n_sel > MF_NSA_MAX_N_SEL)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT,
                "the fused forward keeps its top-n list in shared memory: cfg.n_sel (n=%lld) must be <= %d",
                (long long)cfg->n_sel, MF_NSA_MAX_N_SEL);
    MF_CHECK_ALL_NOT_NULL(q, k, v, g_cmp, g_slc, g_win, out);
    /* Extents before any launch (the products fit: mf_nsa_validate). */
    const size_t es = mf_dtype_size(dtype), rq = (size_t)B * (size_t)S * (size_t)Hq;
    const size_t rk = (size_t)B * (size_t)S * (size_t)Hk;
    MF_TRY(mf_check_device_extent(__func__, ctx, q, rq * (size_t)D * es, "q"));
    MF_TRY(mf_check_device_extent(__func__, ctx, k, rk * (size_t)D * es, "k"));
    MF_TRY(mf_check_device_extent(__func__, ctx, v, rk * (size_t)D * es, "v"));
    MF_TRY(mf_check_device_extent(__func__, ctx, g_cmp, rq * es, "g_cmp"));
    MF_TRY(mf_check_device_extent(__func__, ctx, g_slc, rq * es, "g_slc"));
    MF_TRY(mf_check_device_extent(__func__, ctx, g_win, rq * es, "g_win"));
    MF_TRY(mf_check_device_extent(__func__, ctx, out, rq * (size_t)D * 4, "out"));
    MF_TRY(mf_check_device_extent(__func__, ctx, lse, rq * 3 * 4, "lse"));
    MF_TRY(mf_check_device_extent(__func__, ctx, sel, rk * (size_t)cfg->n_sel * 4, "sel"));
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "nsa", &is_cuda));
    mf_nsa_forward_kernel_fn *fn = mf_host_nsa_fused_forward;
#ifdef MF_HAVE_CUDA
    if (is_cuda) fn = mf_cuda_nsa_fused_forward;
#endif
    return fn(ctx, dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, out, lse, sel);
}

mf_status mf_nsa_wgmma_available(mf_context *ctx, int *available)
{
    if (ctx == NULL) MF_FAIL(MF_ERR_NULL_POINTER, "ctx is NULL");
    if (available == NULL) MF_FAIL(MF_ERR_NULL_POINTER, "available is NULL");
    *available = 0;
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "nsa", &is_cuda));
    mf_nsa_wgmma_available_fn *fn = mf_host_nsa_wgmma_available;
#ifdef MF_HAVE_CUDA
    if (is_cuda) fn = mf_cuda_nsa_wgmma_available;
#endif
    return fn(ctx, available);
}

mf_status mf_nsa_backward(mf_context *ctx, mf_nsa_variant variant, mf_dtype dtype, const mf_nsa_config *cfg,
                          int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q,
                          const void *k, const void *v, const void *g_cmp, const void *g_slc,
                          const void *g_win, const void *dout, const float *lse, const int32_t *sel,
                          float *dq, float *dk, float *dv, float *dg_cmp, float *dg_slc, float *dg_win)
{
    MF_TRY(nsa_check_call(__func__, ctx, variant, dtype, cfg, B, S, Hq, Hk, D));
    const void *ptrs[16] = {
        q, k, v, g_cmp, g_slc, g_win, dout, lse, sel, dq, dk, dv, dg_cmp, dg_slc, dg_win
    };
    static const char *const names[15] = { "q",   "k",  "v",  "g_cmp", "g_slc",  "g_win",  "dout",  "lse",
                                           "sel", "dq", "dk", "dv",    "dg_cmp", "dg_slc", "dg_win" };
    const size_t es = mf_dtype_size(dtype), rq = (size_t)B * (size_t)S * (size_t)Hq;
    const size_t rk = (size_t)B * (size_t)S * (size_t)Hk, d = (size_t)D;
    const size_t bytes[15] = { rq * d * es, rk * d * es, rk * d * es,
                               rq * es,     rq * es,     rq * es,
                               rq * d * es, rq * 12,     rk * (size_t)cfg->n_sel * 4,
                               rq * d * 4,  rk * d * 4,  rk * d * 4,
                               rq * 4,      rq * 4,      rq * 4 };
    for (int i = 0; i < 15; i++)
        if (ptrs[i] == NULL) MF_FAIL(MF_ERR_NULL_POINTER, "%s is NULL", names[i]);
    for (int i = 0; i < 15; i++) MF_TRY(mf_check_device_extent(__func__, ctx, ptrs[i], bytes[i], names[i]));
    int is_cuda = 0;
    MF_TRY(mf_op_pick_backend(__func__, ctx, "nsa", &is_cuda));
    mf_nsa_backward_kernel_fn *fn = mf_host_nsa_fused_backward;
#ifdef MF_HAVE_CUDA
    if (is_cuda) fn = mf_cuda_nsa_fused_backward;
#endif
    return fn(ctx, dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, dout, lse, sel, dq, dk, dv,
              dg_cmp, dg_slc, dg_win);
}

/* ---- registry entry: built-in cases for `memfix report` ------------------------------------ */
typedef struct nsa_case {
    int64_t B, S, Hq, Hk, D;
    mf_nsa_config cfg;
    mf_dtype dtype;
    int fwd_only; /* 1: the forward alone, lse and sel NULL (inference; out compared): the memory cases */
} nsa_case;

/* Small shapes (host mode runs them on the CPU), causal by construction: top-n
 * by importance (more candidates than n), Hq/Hk = 6 and D = 64 as the seed's,
 * odd S not a multiple of any block length, S smaller than w and than l' (the
 * seed's configuration), no compressed block at all (S < l). */
static const nsa_case nsa_cases[] = {
    { 1, 45, 2, 1, 8, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32, 0 },
    { 1, 77, 6, 1, 64, { 16, 8, 16, 4, 24, 0.0f }, MF_DTYPE_BF16, 0 },
    { 1, 77, 6, 1, 64, { 16, 8, 16, 4, 24, 0.0f }, MF_DTYPE_F32, 0 },
    { 1, 50, 12, 2, 64, { 32, 16, 64, 16, 512, 0.0f }, MF_DTYPE_F32, 0 },
    { 2, 20, 2, 2, 16, { 32, 16, 64, 16, 512, 0.0f }, MF_DTYPE_BF16, 0 },
    { 2, 70, 4, 2, 16, { 12, 4, 8, 5, 9, 0.0f }, MF_DTYPE_F32, 0 },
    /* ---- the equivalence suite's cases (tests/equivalence/test_nsa_equiv.c; not in `memfix report`) ----
     * many candidate blocks (top 6 of 19), odd S with 9 blocks, the seed's configuration with S < w and
     * S < l', S < l (no compressed block), the largest group with an explicit scale, S = 1 and D = 1, D = 1
     * with d = l and n = 2 < 3 forced blocks, the bf16 tensor cores at D in {16, 32, 64, 128} (G = 16
     * filling the m16 tile; D = 128: 2 warps per CTA), more than 1024 candidate blocks (the top n merged
     * across two tiles of 1024), and more than the bf16 compression kernel's 64-block importance tile */
    { 1, 150, 2, 1, 8, { 8, 4, 8, 6, 20, 0.0f }, MF_DTYPE_F32, 0 },
    { 1, 133, 4, 2, 16, { 16, 8, 16, 5, 40, 0.0f }, MF_DTYPE_BF16, 0 },
    { 1, 61, 6, 1, 64, { 32, 16, 64, 16, 512, 0.0f }, MF_DTYPE_BF16, 0 },
    { 2, 9, 2, 1, 4, { 32, 16, 64, 16, 512, 0.0f }, MF_DTYPE_F32, 0 },
    { 1, 40, 16, 1, 8, { 4, 2, 6, 3, 7, 0.5f }, MF_DTYPE_F32, 0 },
    { 1, 1, 1, 1, 1, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32, 0 },
    { 1, 37, 3, 3, 1, { 4, 4, 4, 2, 5, 0.0f }, MF_DTYPE_BF16, 0 },
    { 1, 40, 16, 1, 32, { 4, 2, 6, 3, 7, 0.5f }, MF_DTYPE_BF16, 0 },
    { 1, 30, 4, 2, 128, { 8, 4, 8, 3, 10, 0.0f }, MF_DTYPE_BF16, 0 },
    { 1, 1100, 2, 1, 4, { 2, 1, 1, 5, 3, 0.0f }, MF_DTYPE_F32, 0 },
    { 1, 300, 2, 1, 16, { 2, 1, 2, 5, 9, 0.0f }, MF_DTYPE_BF16, 0 },
    /* ---- the memory suite's cases (tests/memory/test_nsa_memory.c), cases 17 to 24: the forward
     * alone (lse, sel NULL: the bf16 path's selection in scratch) and forward + backward, fp32 and bf16
     * at one shape, then fp32 at S and 2S (the scaling) */
    { 1, 45, 6, 1, 16, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32, 1 },
    { 1, 45, 6, 1, 16, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_BF16, 1 },
    { 1, 45, 6, 1, 16, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32, 0 },
    { 1, 45, 6, 1, 16, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_BF16, 0 },
    { 1, 48, 2, 1, 8, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32, 1 },
    { 1, 96, 2, 1, 8, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32, 1 },
    { 1, 48, 2, 1, 8, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32, 0 },
    { 1, 96, 2, 1, 8, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_F32, 0 },
    /* ---- more of the equivalence suite's bf16 tensor-core cases: each nsa_mma_fwd_kernel<D, WARPS>
     * instance the cases above leave out (64-row CTAs at G <= 2, 128-row ones at G >= 3): G = 1 with
     * QT capped at 32 tokens and a partial last CTA (71 = 2 * 32 + 7) at D = 64; G = 2 at D = 32; G = 3
     * at D = 128 (128-row CTAs of 32 tokens, 96 rows real; 40 = 32 + 8) */
    { 1, 71, 1, 1, 64, { 16, 8, 16, 4, 24, 0.0f }, MF_DTYPE_BF16, 0 },
    { 1, 45, 4, 2, 32, { 8, 4, 8, 3, 10, 0.0f }, MF_DTYPE_BF16, 0 },
    { 1, 40, 3, 1, 128, { 8, 4, 8, 3, 10, 0.0f }, MF_DTYPE_BF16, 0 },
    /* ---- equivalence, case 28: G = 1 on the bf16 compression kernel's 128-row CTAs, QT capped at 32
     * tokens (32 of 128 rows real), several CTAs per KV group and a partial last one (75 = 32 + 32 + 11),
     * two KV groups, D = 32 */
    { 1, 75, 2, 2, 32, { 8, 4, 8, 4, 16, 0.0f }, MF_DTYPE_BF16, 0 },
    /* ---- equivalence, case 29: the compression kernels' multi-tile paths at D = 64 and G = 6 (case 16's
     * configuration: l = 2, d = 1, l' = 2): 199 compressed blocks, so nsa_wg_cmp_kernel's 64-key tiles wrap
     * its three pass-1 buffers and pass 2 walks several tiles, and 100 selection blocks, more than one
     * 64-block importance tile */
    { 1, 200, 6, 1, 64, { 2, 1, 2, 5, 9, 0.0f }, MF_DTYPE_BF16, 0 },
    /* ---- equivalence, cases 30 and 31: pass 2's ranges of 64 candidate blocks when compressed blocks
     * overlap several blocks past a range's end (l - d >= l'): case 30 (l = 32, d = 1, l' = 4, 75
     * candidate blocks in two ranges) needs 8 such blocks, more than the kernels carry (nsa_cmp::kCarry),
     * so each range re-scores its first tile; case 31 (l = 8, d = 1, l' = 2, 100 blocks) carries exactly
     * kCarry = 4 blocks into the next range */
    { 1, 300, 6, 1, 16, { 32, 1, 4, 5, 9, 0.0f }, MF_DTYPE_BF16, 0 },
    { 1, 200, 6, 1, 32, { 8, 1, 2, 5, 9, 0.0f }, MF_DTYPE_BF16, 0 },
    /* ---- equivalence, cases 32 and 33: the seed's ratios l' = 4 d, l = 2 d, whose importances the
     * compression kernels sum per block in registers (nsa_cmp::store_block_sums) instead of from the p
     * tile: case 32 (l = 2, d = 1, l' = 4) at G = 6 and D = 64 with 299 compressed blocks (five 64-key
     * tiles, nineteen 16-key ones) and 75 candidate blocks in two ranges, a block carried between them;
     * case 33 (l = 8, d = 4, l' = 16) at G = 2, two KV groups, B = 2, D = 32, S = 150, n = 5 of up to 10
     * candidate blocks */
    { 1, 300, 6, 1, 64, { 2, 1, 4, 5, 9, 0.0f }, MF_DTYPE_BF16, 0 },
    { 2, 150, 4, 2, 32, { 8, 4, 16, 5, 12, 0.0f }, MF_DTYPE_BF16, 0 },
    /* ---- equivalence, case 34: the seed's l = 32, d = 16, l' = 64 at D = 64 and G = 6 with more
     * candidate blocks than n (S = 397: 7 blocks; n = 4: block 0, the two local ones and one by
     * importance), so tokens of one warp select different whole 64-key stages that lie before all of
     * them: the selected stream's full, interior stages with token masks that differ between a lane's
     * two rows (nsa_sw::stage_bits' one-mask path) */
    { 1, 397, 6, 1, 64, { 32, 16, 64, 4, 40, 0.0f }, MF_DTYPE_BF16, 0 },
};
#define NSA_N_CASES ((int)(sizeof(nsa_cases) / sizeof(nsa_cases[0])))
#define NSA_N_REPORT_CASES 6 /* `memfix report`: the first six */

/* ---- seeded random cases (memfix verify --seed/--cases/--large) ---------- */
/* Random case i of a seed, k = i + seed: bf16 on odd k, an explicit scale on
 * k / 2 odd (else 1/sqrt(D)); stride d in {1, 2, 4, 8} dividing l and l';
 * n_sel 1..6, window 3..80; GQA groups 1..3; odd S not a multiple of any block;
 * out > 4096 elements. The large case: B*S*Hq*D > 2^31. */
static void nsa_generate(const mf_case_id *id, nsa_case *c)
{
    mf_tb_rng r = mf_tb_case_rng("nsa", id);
    const int k = (int)(((uint64_t)id->index + id->seed) % 4u);
    static const int64_t strides[] = { 1, 2, 4, 8 }, dims[] = { 8, 16, 32, 64 };
    memset(c, 0, sizeof *c);
    c->dtype = k % 2 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    c->cfg.stride = mf_tb_rand_pick(&r, strides, 4);
    c->cfg.block_cmp = c->cfg.stride * mf_tb_rand_int(&r, 1, 3);
    c->cfg.block_sel = c->cfg.stride * mf_tb_rand_int(&r, 1, 4);
    c->cfg.n_sel = mf_tb_rand_int(&r, 1, 6);
    c->cfg.window = mf_tb_rand_int(&r, 3, 80);
    c->cfg.scale = k / 2 ? (float)mf_tb_rand_int(&r, 5, 50) / 100.0f : 0.0f;
    c->B = mf_tb_rand_int(&r, 1, 2);
    c->Hk = mf_tb_rand_int(&r, 1, 2);
    c->Hq = c->Hk * mf_tb_rand_int(&r, 1, 3);
    c->D = mf_tb_rand_pick(&r, dims, 4);
    c->S = mf_tb_rand_int(&r, 10, 65) * 2 + 1;
    while (c->B * c->S * c->Hq * c->D <= 4096) c->S += 16;
    if (id->kind == MF_CASE_LARGE) c->B = 1, c->S = 4194319, c->Hq = 8, c->Hk = 1, c->D = 64;
}

static mf_status nsa_case_of(const mf_case_id *id, nsa_case *c)
{
    if (id->kind == MF_CASE_FIXED) {
        if (id->index < 0 || id->index >= NSA_N_CASES)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "nsa: case %d out of range [0, %d)", id->index, NSA_N_CASES);
        *c = nsa_cases[id->index];
    } else {
        nsa_generate(id, c);
    }
    return MF_OK;
}

static void nsa_shape(const nsa_case *c, const char *pass, char *buf, size_t cap)
{
    char scale[32] = "";
    if (c->cfg.scale > 0.0f) snprintf(scale, sizeof scale, "scale=%g ", (double)c->cfg.scale);
    snprintf(buf, cap, "B=%lld S=%lld Hq=%lld Hk=%lld D=%lld l=%lld d=%lld l'=%lld n=%lld w=%lld %s%s",
             (long long)c->B, (long long)c->S, (long long)c->Hq, (long long)c->Hk, (long long)c->D,
             (long long)c->cfg.block_cmp, (long long)c->cfg.stride, (long long)c->cfg.block_sel,
             (long long)c->cfg.n_sel, (long long)c->cfg.window, scale, pass);
}

static mf_status nsa_describe_pass(const mf_case_id *id, const char *pass, char *buf, size_t cap,
                                   size_t *bytes)
{
    if (id->kind == MF_CASE_FIXED && (id->index < 0 || id->index >= NSA_N_REPORT_CASES))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "nsa: verify case %d out of range [0, %d)", id->index,
                NSA_N_REPORT_CASES);
    nsa_case c;
    MF_TRY(nsa_case_of(id, &c));
    char shape[192];
    nsa_shape(&c, pass, shape, sizeof shape);
    snprintf(buf, cap, "%s %s", mf_dtype_name(c.dtype), shape);
    /* the reference's dense masked S x S scores per query head, in double */
    *bytes = 24 * (size_t)(c.B * c.Hq) * (size_t)c.S * (size_t)c.S +
             24 * (size_t)(c.B * c.S) * (size_t)(c.Hq + 2 * c.Hk) * (size_t)c.D;
    return MF_OK;
}

MF_TB_DESCRIBE_PASS(nsa_describe_fwd, nsa_describe_pass, "fwd=candidate")

/* the backward's case runs the same reference forward and backward (the backward's dense scores as well) */
MF_TB_DESCRIBE_PASS(nsa_describe_bwd, nsa_describe_pass, "bwd=candidate")

/* sel (B, S, Hk, n) as written (got) against the reference's (ref), element by element: the first
 * difference fails the case (when it is the first failing output, its message and kind,
 * MF_FAILURE_TOLERANCE: an exact comparison is a zero tolerance). */
/* The axes of a buffer of the op by its name (include/memfix/nsa.h's layouts): a rejection names an element
 * by them. q, out, dq, dout (b, t, h, d); k, v, dk, dv (b, t, hk, d) over the KV heads; the gates and their
 * gradients (b, t, h); lse (b, t, h, branch: cmp, slc, win); sel (b, t, hk, slot < n). */
static mf_axes nsa_axes(const char *name, int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D, int64_t n)
{
    static const char *const kv[] = { "k", "v", "dk", "dv" }, *const q[] = { "q", "out", "dq", "dout" };
    for (int i = 0; i < 4; i++)
        if (strcmp(name, kv[i]) == 0) return (mf_axes){ "b t hk d", { B, S, Hk, D } };
    for (int i = 0; i < 4; i++)
        if (strcmp(name, q[i]) == 0) return (mf_axes){ "b t h d", { B, S, Hq, D } };
    if (strcmp(name, "lse") == 0) return (mf_axes){ "b t h branch", { B, S, Hq, 3 } };
    if (strcmp(name, "sel") == 0) return (mf_axes){ "b t hk slot", { B, S, Hk, n } };
    return (mf_axes){ "b t h", { B, S, Hq } }; /* g_cmp, g_slc, g_win and their gradients */
}

/* sel compared exactly, recorded as an output of the case (tolerance "exact": any difference fails). */
static void nsa_compare_sel(const nsa_case *c, const int32_t *got, const int32_t *ref, mf_case_result *out,
                            int *all_pass)
{
    const size_t n = (size_t)c->cfg.n_sel, ns = (size_t)(c->B * c->S * c->Hk) * n;
    const mf_axes ax = nsa_axes("sel", c->B, c->S, c->Hq, c->Hk, c->D, c->cfg.n_sel);
    size_t first = ns;
    double worst = 0;
    for (size_t i = 0; i < ns; i++) {
        if (got[i] == ref[i]) continue;
        if (first == ns) first = i;
        const double d = fabs((double)got[i] - (double)ref[i]);
        if (d > worst) worst = d;
    }
    if (out->n_outputs < MF_CASE_MAX_OUTPUTS) {
        mf_output_result *o = &out->outputs[out->n_outputs++];
        snprintf(o->what, sizeof o->what, "sel");
        snprintf(o->tol, sizeof o->tol, "exact");
        o->max_abs_err = worst;
        o->budget_used = first == ns ? 0.0 : INFINITY;
        o->pass = first == ns;
        (void)mf_axes_format(&ax, first == ns ? 0 : first, o->worst_at, sizeof o->worst_at);
    }
    if (first == ns) return;
    if (*all_pass) {
        char at[112];
        (void)mf_axes_format(&ax, first, at, sizeof at);
        out->failure = MF_FAILURE_TOLERANCE;
        snprintf(out->message, sizeof(out->message),
                 "sel: selected block at %s is %d, the reference's %d (top-n compared exactly)", at,
                 (int)got[first], (int)ref[first]);
    }
    *all_pass = 0;
}

/* One case: the fused forward and backward (report), or 'cand' in place of the
 * forward, or 'bcand' in place of the backward (memfix verify; it is fed our
 * forward's lse and sel). */
static mf_status nsa_run_case_impl(mf_context *ctx, int variant, mf_nsa_forward_candidate_fn cand,
                                   mf_nsa_backward_candidate_fn bcand, const mf_case_id *id,
                                   uint64_t seed_salt, mf_case_result *out)
{
    MF_TRY(mf_tb_case_begin_id(out, "nsa", ctx, variant, MF_NSA_N_VARIANTS, id, NSA_N_CASES));
    nsa_case cc;
    MF_TRY(nsa_case_of(id, &cc));
    const nsa_case *c = &cc;
    mf_tb_case_labels(out, ctx, cand != NULL || bcand != NULL ? "candidate" : nsa_variant_names[variant],
                      c->dtype);
    nsa_shape(c,
              cand != NULL    ? "fwd=candidate"
              : bcand != NULL ? "bwd=candidate"
              : c->fwd_only   ? "fwd lse=sel=NULL"
                              : "fwd+bwd",
              out->shape, sizeof(out->shape));
    const mf_tolerance *tol = mf_tolerance_get(c->dtype == MF_DTYPE_BF16 ? "nsa.out.bf16" : "nsa.out.f32");
    if (tol != NULL) {
        out->atol = tol->atol;
        out->rtol = tol->rtol;
    }
    const size_t rq = (size_t)(c->B * c->S * c->Hq), rk = (size_t)(c->B * c->S * c->Hk);
    const size_t nq = rq * (size_t)c->D, nkv = rk * (size_t)c->D, ns = rk * (size_t)c->cfg.n_sel;
    if (cand != NULL || c->fwd_only)
        out->ceiling_bytes = mf_nsa_forward_scratch_ceiling(&c->cfg, c->B, c->S, c->Hq, c->Hk, c->D);
    else
        out->ceiling_bytes = mf_nsa_backward_scratch_ceiling(&c->cfg, c->B, c->S, c->Hq, c->Hk, c->D);
    const uint64_t seed = mf_tb_case_seed(id, 0x6e73610000000000ull, 16u, seed_salt);
    enum { Q, K, V, GC, GS, GW, DO, OUT, LSE, DQ, DK, DV, DGC, DGS, DGW, SEL, NT };
    /* a forward-only case compares out alone (the other outputs' guards are still checked) */
    const char *const lse_tol = c->fwd_only ? NULL : "nsa.lse", *const grad_tol =
                                                                    c->fwd_only ? NULL : "nsa.grad";
    mf_tb_tensor t[NT] = {
        { "q", MF_TB_IN, nq, -1.5f, 1.5f, NULL, NULL, NULL, NULL, { 0 } },
        { "k", MF_TB_IN, nkv, -1.5f, 1.5f, NULL, NULL, NULL, NULL, { 0 } },
        { "v", MF_TB_IN, nkv, -1.0f, 1.0f, NULL, NULL, NULL, NULL, { 0 } },
        { "g_cmp", MF_TB_IN, rq, 0.05f, 0.95f, NULL, NULL, NULL, NULL, { 0 } },
        { "g_slc", MF_TB_IN, rq, 0.05f, 0.95f, NULL, NULL, NULL, NULL, { 0 } },
        { "g_win", MF_TB_IN, rq, 0.05f, 0.95f, NULL, NULL, NULL, NULL, { 0 } },
        { "dout", MF_TB_IN, nq, -1.0f, 1.0f, NULL, NULL, NULL, NULL, { 0 } },
        { "out", MF_TB_OUT, nq, 0.0f, 0.0f, "nsa.out", NULL, NULL, NULL, { 0 } },
        { "lse", MF_TB_OUT, 3 * rq, 0.0f, 0.0f, lse_tol, NULL, NULL, NULL, { 0 } },
        { "dq", MF_TB_OUT, nq, 0.0f, 0.0f, grad_tol, NULL, NULL, NULL, { 0 } },
        { "dk", MF_TB_OUT, nkv, 0.0f, 0.0f, grad_tol, NULL, NULL, NULL, { 0 } },
        { "dv", MF_TB_OUT, nkv, 0.0f, 0.0f, grad_tol, NULL, NULL, NULL, { 0 } },
        { "dg_cmp", MF_TB_OUT, rq, 0.0f, 0.0f, grad_tol, NULL, NULL, NULL, { 0 } },
        { "dg_slc", MF_TB_OUT, rq, 0.0f, 0.0f, grad_tol, NULL, NULL, NULL, { 0 } },
        { "dg_win", MF_TB_OUT, rq, 0.0f, 0.0f, grad_tol, NULL, NULL, NULL, { 0 } },
        /* int32 indices in an fp32 slot each (NaN-filled, guarded), compared exactly below */
        { "sel", MF_TB_OUT, ns, 0.0f, 0.0f, NULL, NULL, NULL, NULL, { 0 } },
    };
    for (int i = 0; i < NT; i++)
        t[i].axes = nsa_axes(t[i].name, c->B, c->S, c->Hq, c->Hk, c->D, c->cfg.n_sel);
    mf_status st = mf_tb_tensors_make(t, NT, c->dtype, seed);
    if (st != MF_OK) goto done;
    float *const r_lse = c->fwd_only ? NULL : (float *)t[LSE].host;
    int32_t *const r_sel = c->fwd_only ? NULL : (int32_t *)t[SEL].host;

    if ((st = mf_mem_begin(ctx, MF_MEM_HOST)) != MF_OK ||
        (st = mf_ref_nsa_forward(ctx, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D, t[Q].host, t[K].host,
                                 t[V].host, t[GC].host, t[GS].host, t[GW].host, t[OUT].host, r_lse, r_sel)) !=
            MF_OK ||
        (!c->fwd_only && (st = mf_ref_nsa_backward(ctx, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D,
                                                   t[Q].host, t[K].host, t[V].host, t[GC].host, t[GS].host,
                                                   t[GW].host, t[DO].host, t[DQ].host, t[DK].host, t[DV].host,
                                                   t[DGC].host, t[DGS].host, t[DGW].host)) != MF_OK))
        goto done;
    out->ref_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    if ((st = mf_tb_tensors_upload(ctx, t, NT, c->dtype)) != MF_OK) goto done;
    float *const d_lse = c->fwd_only ? NULL : (float *)t[LSE].dev;
    int32_t *const d_sel = c->fwd_only ? NULL : (int32_t *)t[SEL].dev;
    if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK) goto done;
    if (cand != NULL)
        st = cand(ctx, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D, t[Q].dev, t[K].dev, t[V].dev,
                  t[GC].dev, t[GS].dev, t[GW].dev, t[OUT].dev, d_lse, d_sel);
    else
        st = mf_nsa_forward(ctx, (mf_nsa_variant)variant, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D,
                            t[Q].dev, t[K].dev, t[V].dev, t[GC].dev, t[GS].dev, t[GW].dev, t[OUT].dev, d_lse,
                            d_sel);
    if (st != MF_OK || (st = mf_context_synchronize(ctx)) != MF_OK) goto done;
    if (cand != NULL || c->fwd_only) out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    /* the backward (ours, or the candidate), fed the forward's lse and sel */
    if (c->fwd_only) {
        /* inference: no backward */
    } else if (bcand != NULL) {
        if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK) goto done;
        st = bcand(ctx, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D, t[Q].dev, t[K].dev, t[V].dev,
                   t[GC].dev, t[GS].dev, t[GW].dev, t[DO].dev, d_lse, d_sel, t[DQ].dev, t[DK].dev, t[DV].dev,
                   t[DGC].dev, t[DGS].dev, t[DGW].dev);
    } else {
        st = mf_nsa_backward(ctx, MF_NSA_FUSED, c->dtype, &c->cfg, c->B, c->S, c->Hq, c->Hk, c->D, t[Q].dev,
                             t[K].dev, t[V].dev, t[GC].dev, t[GS].dev, t[GW].dev, t[DO].dev, d_lse, d_sel,
                             t[DQ].dev, t[DK].dev, t[DV].dev, t[DGC].dev, t[DGS].dev, t[DGW].dev);
    }
    if (st != MF_OK || (st = mf_context_synchronize(ctx)) != MF_OK) goto done;
    if (bcand != NULL) out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    if (cand == NULL && bcand == NULL && !c->fwd_only)
        out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);

    int pass = 1;
    if ((st = mf_tb_tensors_compare(ctx, t, NT, c->dtype, out, &pass)) != MF_OK) goto done;
    /* The selected blocks, exactly as the reference's top-n (include/memfix/nsa.h: increasing order,
     * -1 padding): of our forward (also the one a backward candidate is fed) and of a forward
     * candidate. The importance gaps are far above fp32 error, so any difference is a defect; a
     * candidate listing the right blocks in another order would pass every tolerance, since our
     * backward fed its sel only reorders sums (examples/candidates/nsa_forward_sel_by_rank.cu). */
    if (!c->fwd_only) nsa_compare_sel(c, (const int32_t *)t[SEL].got, r_sel, out, &pass);
    mf_tb_verdict(out, pass);

done:
    mf_tb_case_error(out, st);
    mf_tb_tensors_free(ctx, t, NT);
    return st;
}

static mf_status nsa_run_case(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    const mf_case_id id = mf_tb_fixed_id(case_index);
    return nsa_run_case_impl(ctx, variant, NULL, NULL, &id, 0, out);
}

/* ---- memfix verify: the guard of fused-forward candidates (src/testbed/testbed.h) -------- */
typedef struct nsa_args {
    mf_dtype dtype;
    const mf_nsa_config *cfg;
    int64_t B, S, Hq, Hk, D;
} nsa_args;

/* bufs: q, k, v, g_cmp, g_slc, g_win, out, lse, sel */
static mf_status nsa_fwd_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const nsa_args *a = (const nsa_args *)args;
    return ((mf_nsa_forward_candidate_fn)mf_tb_candidate())(
        ctx, a->dtype, a->cfg, a->B, a->S, a->Hq, a->Hk, a->D, mf_tb_ptr(bufs, 0), mf_tb_ptr(bufs, 1),
        mf_tb_ptr(bufs, 2), mf_tb_ptr(bufs, 3), mf_tb_ptr(bufs, 4), mf_tb_ptr(bufs, 5),
        (float *)mf_tb_ptr(bufs, 6), (float *)mf_tb_ptr(bufs, 7), (int32_t *)mf_tb_ptr(bufs, 8));
}

static mf_status nsa_fwd_guard(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                               int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                               const void *v, const void *g_cmp, const void *g_slc, const void *g_win,
                               float *out, float *lse, int32_t *sel)
{
    const size_t es = mf_dtype_size(dtype), rq = (size_t)B * (size_t)S * (size_t)Hq;
    const size_t rk = (size_t)B * (size_t)S * (size_t)Hk;
    mf_tb_buffer sp[9] = { { "q", q, rq * (size_t)D * es, dtype, { 0 } },
                           { "k", k, rk * (size_t)D * es, dtype, { 0 } },
                           { "v", v, rk * (size_t)D * es, dtype, { 0 } },
                           { "g_cmp", g_cmp, rq * es, dtype, { 0 } },
                           { "g_slc", g_slc, rq * es, dtype, { 0 } },
                           { "g_win", g_win, rq * es, dtype, { 0 } },
                           { "out", out, rq * (size_t)D * 4, MF_DTYPE_F32, { 0 } },
                           { "lse", lse, rq * 3 * 4, MF_DTYPE_F32, { 0 } },
                           { "sel", sel, rk * (size_t)cfg->n_sel * 4, MF_DTYPE_F32, { 0 } } };
    for (int i = 0; i < 9; i++) sp[i].axes = nsa_axes(sp[i].name, B, S, Hq, Hk, D, cfg->n_sel);
    const nsa_args args = { dtype, cfg, B, S, Hq, Hk, D };
    mf_tb_guarded bufs[9];
    return mf_tb_guard(ctx, sp, 6, 9, nsa_fwd_call, &args, bufs);
}

MF_TB_VERIFY_RUNS(nsa_forward_verify, nsa_forward_verify_id,
                  nsa_run_case_impl(ctx, 0, nsa_fwd_guard, NULL, id, seed_salt, out))

/* bufs: q, k, v, g_cmp, g_slc, g_win, dout, lse, sel, dq, dk, dv, dg_cmp, dg_slc, dg_win */
static mf_status nsa_bwd_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const nsa_args *a = (const nsa_args *)args;
    return ((mf_nsa_backward_candidate_fn)mf_tb_candidate())(
        ctx, a->dtype, a->cfg, a->B, a->S, a->Hq, a->Hk, a->D, mf_tb_ptr(bufs, 0), mf_tb_ptr(bufs, 1),
        mf_tb_ptr(bufs, 2), mf_tb_ptr(bufs, 3), mf_tb_ptr(bufs, 4), mf_tb_ptr(bufs, 5), mf_tb_ptr(bufs, 6),
        (const float *)mf_tb_ptr(bufs, 7), (const int32_t *)mf_tb_ptr(bufs, 8), (float *)mf_tb_ptr(bufs, 9),
        (float *)mf_tb_ptr(bufs, 10), (float *)mf_tb_ptr(bufs, 11), (float *)mf_tb_ptr(bufs, 12),
        (float *)mf_tb_ptr(bufs, 13), (float *)mf_tb_ptr(bufs, 14));
}

static mf_status nsa_bwd_guard(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                               int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                               const void *v, const void *g_cmp, const void *g_slc, const void *g_win,
                               const void *dout, const float *lse, const int32_t *sel, float *dq, float *dk,
                               float *dv, float *dg_cmp, float *dg_slc, float *dg_win)
{
    const size_t es = mf_dtype_size(dtype), rq = (size_t)B * (size_t)S * (size_t)Hq;
    const size_t rk = (size_t)B * (size_t)S * (size_t)Hk, d = (size_t)D;
    mf_tb_buffer sp[15] = { { "q", q, rq * d * es, dtype, { 0 } },
                            { "k", k, rk * d * es, dtype, { 0 } },
                            { "v", v, rk * d * es, dtype, { 0 } },
                            { "g_cmp", g_cmp, rq * es, dtype, { 0 } },
                            { "g_slc", g_slc, rq * es, dtype, { 0 } },
                            { "g_win", g_win, rq * es, dtype, { 0 } },
                            { "dout", dout, rq * d * es, dtype, { 0 } },
                            { "lse", lse, rq * 3 * 4, MF_DTYPE_F32, { 0 } },
                            { "sel", sel, rk * (size_t)cfg->n_sel * 4, MF_DTYPE_F32, { 0 } },
                            { "dq", dq, rq * d * 4, MF_DTYPE_F32, { 0 } },
                            { "dk", dk, rk * d * 4, MF_DTYPE_F32, { 0 } },
                            { "dv", dv, rk * d * 4, MF_DTYPE_F32, { 0 } },
                            { "dg_cmp", dg_cmp, rq * 4, MF_DTYPE_F32, { 0 } },
                            { "dg_slc", dg_slc, rq * 4, MF_DTYPE_F32, { 0 } },
                            { "dg_win", dg_win, rq * 4, MF_DTYPE_F32, { 0 } } };
    for (int i = 0; i < 15; i++) sp[i].axes = nsa_axes(sp[i].name, B, S, Hq, Hk, D, cfg->n_sel);
    const nsa_args args = { dtype, cfg, B, S, Hq, Hk, D };
    mf_tb_guarded bufs[15];
    return mf_tb_guard(ctx, sp, 9, 15, nsa_bwd_call, &args, bufs);
}

MF_TB_VERIFY_RUNS(nsa_backward_verify, nsa_backward_verify_id,
                  nsa_run_case_impl(ctx, 0, NULL, nsa_bwd_guard, id, seed_salt, out))

/* memfix's own fused kernels in the candidate types: timed beside a candidate in verify's worker (the
 * backward only timed: its atomicAdd accumulation is not verified as a candidate, docs/verify.md). */
static mf_status nsa_own_forward(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                                 int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                                 const void *v, const void *g_cmp, const void *g_slc, const void *g_win,
                                 float *out, float *lse, int32_t *sel)
{
    return mf_nsa_forward(ctx, MF_NSA_FUSED, dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, out,
                          lse, sel);
}

static mf_status nsa_own_backward(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                                  int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                                  const void *v, const void *g_cmp, const void *g_slc, const void *g_win,
                                  const void *dout, const float *lse, const int32_t *sel, float *dq,
                                  float *dk, float *dv, float *dg_cmp, float *dg_slc, float *dg_win)
{
    return mf_nsa_backward(ctx, MF_NSA_FUSED, dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, dout,
                           lse, sel, dq, dk, dv, dg_cmp, dg_slc, dg_win);
}

#define NSA_ARGS_PTR offsetof(nsa_args, cfg), sizeof(mf_nsa_config)
/* memfix verify's built-in cases: the report's (the rest of the table is the test suites') */
static int nsa_verify_n_cases(void) { return NSA_N_REPORT_CASES; }

static const mf_verify_target nsa_targets[] = {
    { "nsa.forward", nsa_forward_verify, nsa_verify_n_cases, nsa_forward_verify_id, nsa_describe_fwd,
      nsa_fwd_call, sizeof(nsa_args), NSA_ARGS_PTR, MF_TB_OWN(nsa_own_forward), 0 },
    { "nsa.backward", nsa_backward_verify, nsa_verify_n_cases, nsa_backward_verify_id, nsa_describe_bwd,
      nsa_bwd_call, sizeof(nsa_args), NSA_ARGS_PTR, MF_TB_OWN(nsa_own_backward), 0 }
};

/* ---- memfix bench: the sweep over S (the seed's configuration, Hq/Hk = 6, D = 64) -------- */
enum { NSA_BENCH_B = 1, NSA_BENCH_HQ = 6, NSA_BENCH_HK = 1, NSA_BENCH_D = 64 };

static mf_status nsa_bench_setup(mf_context *ctx, mf_bench_case *c)
{
    const mf_nsa_config cfg = mf_nsa_config_seed();
    const int64_t S = c->n;
    const size_t rq = (size_t)(NSA_BENCH_B * S * NSA_BENCH_HQ), rk = (size_t)(NSA_BENCH_B * S * NSA_BENCH_HK);
    snprintf(c->shape, sizeof c->shape, "B=%d S=%lld Hq=%d Hk=%d D=%d seed cfg", NSA_BENCH_B, (long long)S,
             NSA_BENCH_HQ, NSA_BENCH_HK, NSA_BENCH_D);
    c->ceiling =
        mf_nsa_forward_scratch_ceiling(&cfg, NSA_BENCH_B, S, NSA_BENCH_HQ, NSA_BENCH_HK, NSA_BENCH_D);
    c->tol = "nsa.out.f32";
    /* useful work: per query and head, its keys (compressed + selected + window,
     * the plan's k) at 2*D + 2*D flops each (q.k and p.v); the bytes: q, k, v,
     * the gates read and out written once, in fp32 */
    {
        const int64_t nc = mf_nsa_n_compressed(&cfg, S);
        double keys = 0.0;
        for (int64_t t = 0; t < S; t++) {
            const int64_t vis = t + 1 >= cfg.block_cmp ? (t + 1 - cfg.block_cmp) / cfg.stride + 1 : 0;
            const int64_t sel = (t / cfg.block_sel + 1) < cfg.n_sel ? t + 1 : cfg.n_sel * cfg.block_sel;
            const int64_t win = t + 1 < cfg.window ? t + 1 : cfg.window;
            keys += (double)(vis < nc ? vis : nc) + (double)(sel < t + 1 ? sel : t + 1) + (double)win;
        }
        c->flops = (double)(NSA_BENCH_B * NSA_BENCH_HQ) * keys * 4.0 * (double)NSA_BENCH_D;
        c->min_bytes =
            4.0 * ((double)rq * NSA_BENCH_D * 2.0 + (double)rk * NSA_BENCH_D * 2.0 + 3.0 * (double)rq);
    }
    const size_t n[6] = { rq * NSA_BENCH_D, rk * NSA_BENCH_D, rk * NSA_BENCH_D, rq, rq, rq };
    return mf_tb_bench_io(ctx, c, 6, n, 41, rq * NSA_BENCH_D);
}

static mf_status nsa_bench_reference(mf_context *ctx, mf_bench_case *c)
{
    const mf_nsa_config cfg = mf_nsa_config_seed();
    return mf_ref_nsa_forward(ctx, MF_DTYPE_F32, &cfg, NSA_BENCH_B, c->n, NSA_BENCH_HQ, NSA_BENCH_HK,
                              NSA_BENCH_D, c->host[0], c->host[1], c->host[2], c->host[3], c->host[4],
                              c->host[5], c->ref_out, NULL, NULL);
}

static mf_status nsa_bench_optimized(mf_context *ctx, mf_bench_case *c)
{
    const mf_nsa_config cfg = mf_nsa_config_seed();
    return mf_nsa_forward(ctx, (mf_nsa_variant)c->variant, MF_DTYPE_F32, &cfg, NSA_BENCH_B, c->n,
                          NSA_BENCH_HQ, NSA_BENCH_HK, NSA_BENCH_D, c->dev[0], c->dev[1], c->dev[2], c->dev[3],
                          c->dev[4], c->dev[5], c->out_dev, NULL, NULL);
}

static const mf_bench_sweep nsa_bench = { "seed config (l=32 d=16 l'=64 n=16 w=512), B=1 S=n Hq=6 Hk=1 D=64",
                                          { 64, 256, 1024 },
                                          3,
                                          nsa_bench_setup,
                                          nsa_bench_reference,
                                          nsa_bench_optimized };

/* ---- memfix plan: NSA's keys per query vs dense scores, then the op's own scratch (seed 001) ---- */
size_t mf_nsa_attended_scores_bytes(const mf_nsa_config *c, int64_t b, int64_t a, int64_t s,
                                    size_t elem_bytes)
{
    if (c == NULL || b <= 0 || a <= 0 || s <= 0 || elem_bytes == 0 || c->block_cmp <= 0 || c->stride <= 0 ||
        c->block_sel <= 0 || c->n_sel <= 0 || c->window <= 0)
        return SIZE_MAX;
    size_t sel;
    if (!mf_size_mul((size_t)c->n_sel, (size_t)c->block_sel, &sel)) return SIZE_MAX;
    if (sel > (size_t)s) sel = (size_t)s;
    const size_t cmp = s < c->block_cmp ? 0 : (size_t)((s - c->block_cmp) / c->stride + 1);
    const size_t win = c->window < s ? (size_t)c->window : (size_t)s;
    size_t keys;
    if (!mf_size_add(cmp, sel, &keys) || !mf_size_add(keys, win, &keys)) return SIZE_MAX;
    const size_t f[] = { (size_t)b, (size_t)a, (size_t)s, keys, elem_bytes };
    return mf_plan_product(5, f);
}

static const mf_plan_param_spec nsa_plan_params[] = {
    { "nsa", "--nsa", "0|1",
      "also plan NSA's attention scores (seed 001's l=32 d=16\n                     l'=64 n=16 w=512)",
      MF_PLAN_PARAM_FLAG, 0 },
};

/* The model's attention pattern at seed 001's configuration (at S = 1024 NSA
 * attends MORE keys per query than dense attention, cmp + n*l' + w = 63 +
 * 1024 + 512 = 1599 > 1024), then the nsa op itself: the dense masked
 * reference's scratch vs the fused kernels' ceiling, the formulas
 * test_nsa_memory asserts. */
static mf_status nsa_plan_rows(const mf_plan_config *cfg, mf_plan_rows *out)
{
    if (!mf_plan_param_get(cfg, "nsa")) return MF_OK; /* not asked for */
    const mf_nsa_config nc = mf_nsa_config_seed();
    const int64_t B = cfg->batch, H = cfg->heads, S = cfg->seq, Dh = mf_plan_head_dim(cfg);
    const int64_t KV = mf_plan_kv_heads(cfg);
    const size_t e = mf_dtype_size(cfg->dtype);
    const size_t keys = mf_nsa_attended_scores_bytes(&nc, 1, 1, S, 1) / (size_t)S;
    char owhat[64];
    snprintf(owhat, sizeof owhat, "k=%zu keys/query %s N=%lld dense", keys,
             keys > (size_t)S    ? ">"
             : keys == (size_t)S ? "="
                                 : "<",
             (long long)S);
    const size_t dense[] = { (size_t)B, (size_t)H, (size_t)S, (size_t)S, e };
    MF_TRY(mf_plan_row_add(out, "nsa", "dense scores B*H*N*N*e (per layer)", mf_plan_product(5, dense), owhat,
                           mf_nsa_attended_scores_bytes(&nc, B, H, S, e),
                           "B=%lld H=%lld N=%lld l=%lld d=%lld l'=%lld n=%lld w=%lld", (long long)B,
                           (long long)H, (long long)S, (long long)nc.block_cmp, (long long)nc.stride,
                           (long long)nc.block_sel, (long long)nc.n_sel, (long long)nc.window));
    out->rows[out->n - 1].exceeds_why = "at this length a query sees more keys through NSA's branches than N";
    return mf_plan_row_add(
        out, "nsa_op", "ref: dense masked branches, double",
        mf_ref_nsa_backward_scratch_bytes(&nc, B, S, H, KV, Dh), "fused: pooled k/v + grads 16*B*Hk*nc*D",
        mf_nsa_backward_scratch_ceiling(&nc, B, S, H, KV, Dh), "fwd+bwd B=%lld Hq=%lld Hk=%lld S=%lld D=%lld",
        (long long)B, (long long)H, (long long)KV, (long long)S, (long long)Dh);
}

static const mf_op_plan nsa_plan = { 1, nsa_plan_params, nsa_plan_rows, NULL };

/* The op's rows of the tolerance table (src/core/tolerance.c assembles the one
 * table): "nsa.<output>.<dtype>", atol, rtol, nmse, one-line justification. */
static const mf_tolerance nsa_tolerances[] = {
    { "nsa.out.f32", 2e-6, 1e-5, 1e-11,
      "fp32 online softmax per branch (scores |s| <= D*1.5^2*scale ~ 18 at D=64: exp relative error ~ "
      "|s|*2^-24 ~ 1e-6) and fp32 sums over <= w or n*l' keys, three gated outputs each <= 1 in magnitude: "
      "1e-5 relative, 2e-6 absolute as attention.out.f32; selection identical (forced blocks, importance "
      "gaps >> fp32 error)" },
    { "nsa.lse.f32", 2e-6, 2e-6, 1e-12,
      "lse = m + log(l) in fp32 per branch, |lse| <= ~20: a few ulp (2^-24) relative, as attention.lse.f32" },
    { "nsa.grad.f32", 5e-6, 1e-5, 1e-10,
      "fp32 p recomputed from the fp32 lse (|s| ~ 18: exp relative error ~ 2e-6), ds and dq sums over <= w + "
      "n*l' keys, dk/dv summed by atomicAdd over the queries that see a key (order-dependent rounding, "
      "sqrt(S)*2^-24 relative): as attention.grad.f32" },
    { "nsa.out.bf16", 6e-3, 1e-5, 2e-5,
      "bf16 tensor-core branches (D in {16,32,64,128}): P rounded to bf16 once before P V in all three "
      "branches (compression too; bf16 kc, vc exact as the spec's), l summed from fp32 p, so each o_branch "
      "is off by sum_j (bf16(p_j) - p_j) v_j / l with |bf16(p) - p| <= 2^-8 p (8 significant bits; the "
      "row's largest p, 1, is exact). Worst case, every rounding maximal and of v's sign (v in [-1,1]): "
      "2^-8 per branch, 3 * 0.95 * 2^-8 = 1.1e-2 gated; the roundings are independent and unbiased (rms "
      "2^-8/sqrt6 of p), so each branch's error is a random sum, ~1.6e-3 * sqrt(sum p^2 v^2) / l: atol "
      "6e-3 = 3 * 0.95 * 2^-9, half the worst case per branch (measured max abs 1.75e-3 over the 14 bf16 "
      "tensor-core cases, as with the compression branch's P split hi+lo: its rounding averages over many "
      "keys; a skipped kc tile: 2.9e-2 to 0.23). nmse: err^2 ~ (2^-8)^2/6 * sum_b g_b^2 sum_j p^2 v^2 / l^2 "
      "against |out|^2 of that sum's "
      "order (zero-mean v): ~2.5e-6, bound 2e-5" },
    { "nsa.lse.bf16", 2e-6, 2e-6, 1e-12,
      "bf16 inputs widened exactly; scores accumulate in fp32 (mma.sync or SIMT; the compressed keys are "
      "the spec's bf16 values, so every product is exact) and l sums fp32 p (the bf16 P only feeds P V): "
      "as nsa.lse.f32" },
    { "nsa.grad.bf16", 1e-2, 1e-2, 1e-5,
      "as attention.mma.grad.bf16: the selected/sliding backward on mma.sync (D in {16,32,64,128}) has one "
      "bf16-rounded factor per gradient sum (dS for dq/dk, gate*P for dv; rel <= 2^-8), and so has the "
      "compression branch's at D <= 64 (nsa_mma_cmp_bwd_kernel; D = 128: SIMT fp32). Worst case: |err| <= "
      "2^-8 x the P mass summed into one row (a key's column over the group's G heads and its queries: ~G) "
      "x max|dout, dp| ~ 2e-2 at G = 16; Delta from o recomputed with P split hi+lo (2^-16); the roundings "
      "are independent and unbiased (rms 2^-8/sqrt6), so the error is a random sum below that: atol 1e-2 is "
      "half the worst case (measured max abs 8.0e-3 for dv at G = 16, 5.7e-3 at G = 6); nmse ~ 2 x "
      "(2^-8)^2/6 = 5.1e-6 (measured <= 1.8e-6), under 1e-5" },
};

/* ---- memfix bench --targets: the fused NSA's goal at S = 65536 ------------------------------- */
/* The fused forward (bf16, out, lse and sel written) at the seed model's attention shape, B = 1,
 * Hq = 12, Hk = 2, D = 64, the seed configuration, S = 65536, against memfix's own dense
 * tensor-core attention forward (causal, bf16, B = 1, H = 12, the same S and D); goal: 6x
 * faster. The reduced shape (host execution mode, tests): S = 333. check: out finite for every
 * token; the first min(S, 256) tokens (a prefix: NSA is causal, so their outputs do not depend
 * on later tokens) against the reference on that prefix: out by nsa.out.bf16, sel exactly. */
enum { NSA_T_HQ = 12, NSA_T_HK = 2, NSA_T_D = 64, NSA_T_PREFIX = 256 };

static int64_t nsa_target_s(int small) { return small ? 333 : 65536; }

static mf_status nsa_target_setup(mf_context *ctx, mf_bench_target_run *t)
{
    const int64_t S = nsa_target_s(t->small);
    const mf_nsa_config cfg = mf_nsa_config_seed();
    snprintf(t->shape, sizeof t->shape,
             "B=1 S=%lld Hq=%d Hk=%d D=%d bf16 seed cfg (l=%lld d=%lld l'=%lld n=%lld w=%lld); dense: causal "
             "H=%d",
             (long long)S, NSA_T_HQ, NSA_T_HK, NSA_T_D, (long long)cfg.block_cmp, (long long)cfg.stride,
             (long long)cfg.block_sel, (long long)cfg.n_sel, (long long)cfg.window, NSA_T_HQ);
    const size_t rq = (size_t)S * NSA_T_HQ, rk = (size_t)S * NSA_T_HK;
    mf_status s = MF_OK;
    void *d;
    mf_tb_target_input(ctx, t, MF_DTYPE_BF16, rq * NSA_T_D, 41, -1.0f, 1.0f, &d, &s); /* q: dev[0] */
    mf_tb_target_input(ctx, t, MF_DTYPE_BF16, rk * NSA_T_D, 42, -1.0f, 1.0f, &d, &s); /* k: dev[1] */
    mf_tb_target_input(ctx, t, MF_DTYPE_BF16, rk * NSA_T_D, 43, -1.0f, 1.0f, &d, &s); /* v: dev[2] */
    for (int gI = 0; gI < 3; gI++) /* the gates (sigmoid outputs): dev[3..5] */
        mf_tb_target_input(ctx, t, MF_DTYPE_BF16, rq, 44 + (uint64_t)gI, 0.05f, 0.95f, &d, &s);
    mf_tb_target_output(ctx, t, rq * NSA_T_D * sizeof(float), &s);                    /* out: dev[6] */
    mf_tb_target_output(ctx, t, rq * 3 * sizeof(float), &s);                          /* lse: dev[7] */
    mf_tb_target_output(ctx, t, rk * (size_t)cfg.n_sel * sizeof(int32_t), &s);        /* sel: dev[8] */
    mf_tb_target_input(ctx, t, MF_DTYPE_BF16, rq * NSA_T_D, 51, -1.0f, 1.0f, &d, &s); /* dense k: dev[9] */
    mf_tb_target_input(ctx, t, MF_DTYPE_BF16, rq * NSA_T_D, 52, -1.0f, 1.0f, &d, &s); /* dense v: dev[10] */
    mf_tb_target_output(ctx, t, rq * NSA_T_D * sizeof(float), &s);                    /* dense out: dev[11] */
    mf_tb_target_output(ctx, t, rq * sizeof(float), &s);                              /* dense lse: dev[12] */
    return s;
}

static mf_status nsa_target_run(mf_context *ctx, mf_bench_target_run *t)
{
    const mf_nsa_config cfg = mf_nsa_config_seed();
    return mf_nsa_forward(ctx, MF_NSA_FUSED, MF_DTYPE_BF16, &cfg, 1, nsa_target_s(t->small), NSA_T_HQ,
                          NSA_T_HK, NSA_T_D, t->dev[0], t->dev[1], t->dev[2], t->dev[3], t->dev[4], t->dev[5],
                          (float *)t->dev[6], (float *)t->dev[7], (int32_t *)t->dev[8]);
}

/* Dense causal attention with the NSA q's bytes as its q (B=1, H=12, N=S, D=64: (B,H,N,D)) and keys
 * and values of its own: the same FLOPs whatever the values. */
static mf_status nsa_target_dense(mf_context *ctx, mf_bench_target_run *t)
{
    const int64_t S = nsa_target_s(t->small);
    return mf_attention_forward(ctx, MF_ATTENTION_TILED, MF_DTYPE_BF16, 1, 1, NSA_T_HQ, S, NSA_T_D, NSA_T_D,
                                t->dev[0], t->dev[9], t->dev[10], (float *)t->dev[11], (float *)t->dev[12]);
}

static mf_status nsa_target_check(mf_context *ctx, mf_bench_target_run *t, char *why, size_t cap)
{
    const int64_t S = nsa_target_s(t->small), P = S < NSA_T_PREFIX ? S : NSA_T_PREFIX;
    const mf_nsa_config cfg = mf_nsa_config_seed();
    const size_t rq = (size_t)S * NSA_T_HQ, nout = rq * NSA_T_D, pout = (size_t)P * NSA_T_HQ * NSA_T_D,
                 psel = (size_t)P * NSA_T_HK * (size_t)cfg.n_sel;
    float *out = (float *)malloc(nout * sizeof *out), *ref = (float *)malloc(pout * sizeof *ref);
    int32_t *sel = (int32_t *)malloc(psel * sizeof *sel), *rsel = (int32_t *)malloc(psel * sizeof *rsel);
    const mf_tolerance *tol = mf_tolerance_get("nsa.out.bf16");
    mf_status s = out && ref && sel && rsel && tol ? MF_OK : MF_ERR_OUT_OF_MEMORY;
    if (s == MF_OK) s = mf_buffer_download(ctx, out, t->dev[6], nout * sizeof *out);
    if (s == MF_OK) s = mf_buffer_download(ctx, sel, t->dev[8], psel * sizeof *sel);
    for (size_t i = 0; s == MF_OK && i < nout; i++)
        if (!isfinite(out[i])) {
            snprintf(why, cap, "out[%zu] (token %zu) is not finite (%g)", i, i / (NSA_T_HQ * NSA_T_D),
                     (double)out[i]);
            break;
        }
    if (s == MF_OK && why[0] == '\0')
        s = mf_ref_nsa_forward(ctx, MF_DTYPE_BF16, &cfg, 1, P, NSA_T_HQ, NSA_T_HK, NSA_T_D, t->host[0],
                               t->host[1], t->host[2], t->host[3], t->host[4], t->host[5], ref, NULL, rsel);
    if (s == MF_OK && why[0] == '\0') {
        for (size_t i = 0; i < psel; i++)
            if (sel[i] != rsel[i]) {
                snprintf(why, cap,
                         "sel of token %zu, group %zu, entry %zu: %d, the reference on the prefix has %d",
                         i / (NSA_T_HK * (size_t)cfg.n_sel), i / (size_t)cfg.n_sel % NSA_T_HK,
                         i % (size_t)cfg.n_sel, sel[i], rsel[i]);
                break;
            }
    }
    if (s == MF_OK && why[0] == '\0') {
        mf_compare_result cr;
        if ((s = mf_compare_f32(out, ref, pout, tol, NULL, &cr)) == MF_OK && !cr.pass)
            snprintf(why, cap, "out of the first %lld tokens vs the reference on the prefix: %.150s",
                     (long long)P, cr.reason);
    }
    free(out);
    free(ref);
    free(sel);
    free(rsel);
    return s;
}

static const mf_bench_target nsa_bench_targets[] = {
    { "nsa-64k", "seed 001",
      "fused forward, bf16, B=1 S=65536 Hq=12 Hk=2 D=64, seed configuration, at least 6x faster than "
      "memfix's dense tensor-core attention forward (causal, H=12) at the same S and D; checked: out "
      "finite, the first 256 tokens' out and sel against the reference on that prefix",
      MF_BENCH_TARGET_SPEEDUP, 6.0, nsa_target_setup, nsa_target_run, nsa_target_dense, nsa_target_check },
};

const mf_op_desc mf_op_nsa = {
    "nsa",
    "native sparse attention fwd+bwd: fused compression/top-n selection/window vs dense masked S x S "
    "branches (seed 001)",
    MF_NSA_N_VARIANTS,
    nsa_variant_names,
    NSA_N_CASES,
    nsa_run_case,
    (int)(sizeof nsa_targets / sizeof nsa_targets[0]),
    nsa_targets,
    &nsa_bench,
    (int)(sizeof nsa_tolerances / sizeof nsa_tolerances[0]),
    nsa_tolerances,
    &nsa_plan,
    NSA_N_REPORT_CASES, /* report: the first six (the rest: the equivalence and memory suites') */
    NULL,               /* case_applies: every case runs for every variant */
    1,
    nsa_bench_targets,
};
