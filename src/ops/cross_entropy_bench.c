/* memfix bench for the linear cross-entropy fix: the size sweep of each variant (chunked,
 * fused) and the fused variant's target at seed 000's shape (parts of mf_op_cross_entropy). */
#include "memfix/cross_entropy.h"

#include "cross_entropy_registry.h"
#include "memfix/check.h"
#include "memfix/registry.h"
#include "mf_internal.h"
#include "op_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- memfix bench: the size sweep (registry.h) ------------------------------------------- */
enum { CE_BENCH_D = 32, CE_BENCH_V = 512, CE_BENCH_CHUNK = 32 };

/* The variant timed is the variant named: the descriptor's variant index is the
 * mf_ce_variant (chunked 0, fused 1). The chunked variant's budget holds
 * CE_BENCH_CHUNK rows of logits, fewer than the smallest default size: every
 * size chunks, so its scratch stays flat (C*V*4 + 4*N + 16) while the
 * reference's N*V*8 grows with N. The fused variant takes no budget: 8N + 16. */
static void ce_bench_options(int variant, int64_t n, mf_cross_entropy_options *o)
{
    mf_cross_entropy_options_init(o);
    o->variant = (mf_ce_variant)variant;
    if (o->variant == MF_CE_VARIANT_CHUNKED)
        o->scratch_budget = mf_cross_entropy_chunked_scratch_ceiling(n, CE_BENCH_V, CE_BENCH_CHUNK);
}

static mf_status ce_bench_setup(mf_context *ctx, mf_bench_case *c)
{
    const int64_t D = CE_BENCH_D, V = CE_BENCH_V, n = c->n;
    if (c->variant != MF_CE_VARIANT_CHUNKED && c->variant != MF_CE_VARIANT_FUSED)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "cross_entropy has no variant %d", c->variant);
    mf_cross_entropy_options o;
    ce_bench_options(c->variant, n, &o);
    if (o.variant == MF_CE_VARIANT_FUSED)
        snprintf(c->shape, sizeof c->shape, "N=%lld D=%lld V=%lld mean fused (no logits tile)", (long long)n,
                 (long long)D, (long long)V);
    else
        snprintf(c->shape, sizeof c->shape, "N=%lld D=%lld V=%lld mean budget=%zu (C=%d rows)", (long long)n,
                 (long long)D, (long long)V, o.scratch_budget, CE_BENCH_CHUNK);
    /* per call: the logits GEMM 2*N*D*V (the softmax's O(N*V) is left out);
     * hidden and weight read once, the labels, one loss written */
    c->flops = 2.0 * (double)n * (double)D * (double)V;
    c->min_bytes = 4.0 * (double)(n * D + V * D) + 8.0 * (double)n + 4.0;
    mf_status s = MF_OK;
    if (o.variant == MF_CE_VARIANT_FUSED) {
        c->ceiling = mf_cross_entropy_fused_scratch_ceiling(n);
    } else {
        mf_cross_entropy_plan_info info;
        s = mf_cross_entropy_plan(n, V, MF_DTYPE_F32, &o, &info);
        c->ceiling = s == MF_OK ? info.scratch_bytes : SIZE_MAX;
    }
    c->tol = "cross_entropy.loss.f32";
    const float *h = mf_tb_bench_host(c, (size_t)(n * D), 41, &s),
                *w = mf_tb_bench_host(c, (size_t)(V * D), 42, &s);
    int64_t *labels = (int64_t *)mf_tb_bench_alloc(c, (size_t)n * sizeof *labels, &s);
    for (int64_t i = 0; labels && i < n; i++) labels[i] = (i * 7919) % V;
    c->ref_out = mf_tb_bench_host(c, 1, 0, &s);
    mf_tb_bench_dev(ctx, c, h, (size_t)(n * D) * 4, &s);
    mf_tb_bench_dev(ctx, c, w, (size_t)(V * D) * 4, &s);
    mf_tb_bench_dev(ctx, c, labels, (size_t)n * 8, &s);
    c->out_dev = (float *)mf_tb_bench_dev(ctx, c, NULL, 4, &s);
    c->out_n = 1;
    return s;
}

static mf_status ce_bench_reference(mf_context *ctx, mf_bench_case *c)
{
    return mf_ref_cross_entropy_forward(ctx, c->n, CE_BENCH_D, CE_BENCH_V, MF_DTYPE_F32, c->host[0],
                                        c->host[1], NULL, (const int64_t *)c->host[2], NULL, c->ref_out,
                                        NULL);
}

static mf_status ce_bench_optimized(mf_context *ctx, mf_bench_case *c)
{
    mf_cross_entropy_options o;
    ce_bench_options(c->variant, c->n, &o);
    return mf_cross_entropy_forward(ctx, c->n, CE_BENCH_D, CE_BENCH_V, MF_DTYPE_F32, c->dev[0], c->dev[1],
                                    NULL, (const int64_t *)c->dev[2], &o, c->out_dev, NULL);
}

const mf_bench_sweep mf_cross_entropy_internal_bench = {
    "N=n rows, D=32, V=512, mean;\nchunked: a budget of 32 rows (chunks);\nfused: no budget, 8N + 16 bytes",
    { 64, 128, 256 },
    3,
    ce_bench_setup,
    ce_bench_reference,
    ce_bench_optimized
};

/* ---- memfix bench --targets: the fused CE's goal at seed 000's shape ------------------------- */
/* The fused variant's forward + backward (bf16 inputs, fp32 gradients, sum, no bias, filtering
 * off) at seed 000's N x V x D against the 3-GEMM floor: 3 x 2 N V D FLOPs at the device's dense
 * bf16 peak; goal: within 1.5x. The reduced shape (host execution mode, tests) runs the same
 * calls. check: the loss finite, and for 4 rows (first, last, two between) lse and the row of
 * grad_hidden against a double computation on the host from the same bf16 inputs (tolerance rows
 * cross_entropy.loss.bf16 and .grad.bf16). */
enum { CE_T_ROWS = 4 };

static void ce_target_dims(int small, int64_t *n, int64_t *d, int64_t *v)
{
    *n = small ? 300 : 131072; /* small: odd sizes, two row blocks, several vocabulary tiles */
    *d = small ? 136 : 2560;
    *v = small ? 1000 : 151936;
}

static mf_status ce_target_setup(mf_context *ctx, mf_bench_target_run *t)
{
    int64_t N, D, V;
    ce_target_dims(t->small, &N, &D, &V);
    snprintf(t->shape, sizeof t->shape, "N=%lld D=%lld V=%lld bf16 sum, fused fwd+bwd, fp32 gradients",
             (long long)N, (long long)D, (long long)V);
    t->floor_flops = 3.0 * 2.0 * (double)N * (double)V * (double)D;
    mf_status s = MF_OK;
    void *d;
    mf_tb_target_input(ctx, t, MF_DTYPE_BF16, (size_t)(N * D), 41, -1.0f, 1.0f, &d, &s); /* dev[0] */
    mf_tb_target_input(ctx, t, MF_DTYPE_BF16, (size_t)(V * D), 42, -0.5f, 0.5f, &d, &s); /* dev[1] */
    int64_t *lab = s == MF_OK ? (int64_t *)malloc((size_t)N * sizeof *lab) : NULL;
    if (s == MF_OK && lab == NULL) s = MF_ERR_OUT_OF_MEMORY;
    if (s != MF_OK) return s;
    t->host[t->n_host++] = lab; /* host[2] */
    for (int64_t i = 0; i < N; i++) lab[i] = (int64_t)(((uint64_t)i * 2654435761u) % (uint64_t)V);
    void *dl = mf_tb_target_output(ctx, t, (size_t)N * sizeof *lab, &s); /* dev[2] */
    if (s == MF_OK) s = mf_buffer_upload(ctx, dl, lab, (size_t)N * sizeof *lab);
    mf_tb_target_output(ctx, t, sizeof(float), &s);                   /* dev[3] loss */
    mf_tb_target_output(ctx, t, (size_t)N * sizeof(float), &s);       /* dev[4] lse */
    mf_tb_target_output(ctx, t, (size_t)(N * D) * sizeof(float), &s); /* dev[5] grad_hidden */
    mf_tb_target_output(ctx, t, (size_t)(V * D) * sizeof(float), &s); /* dev[6] grad_weight */
    return s;
}

static mf_status ce_target_run(mf_context *ctx, mf_bench_target_run *t)
{
    int64_t N, D, V;
    ce_target_dims(t->small, &N, &D, &V);
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.variant = MF_CE_VARIANT_FUSED;
    o.reduction = MF_CE_REDUCTION_SUM; /* the same work as mean; gradients of O(1), so the check sees them */
    return mf_cross_entropy_forward_backward(
        ctx, N, D, V, MF_DTYPE_BF16, t->dev[0], t->dev[1], NULL, (const int64_t *)t->dev[2], &o, NULL,
        (float *)t->dev[3], (float *)t->dev[4], (float *)t->dev[5], (float *)t->dev[6], NULL);
}

static mf_status ce_target_check(mf_context *ctx, mf_bench_target_run *t, char *why, size_t cap)
{
    int64_t N, D, V;
    ce_target_dims(t->small, &N, &D, &V);
    const mf_tolerance *tl = mf_tolerance_get("cross_entropy.loss.bf16"),
                       *tg = mf_tolerance_get("cross_entropy.grad.bf16");
    const uint16_t *h = (const uint16_t *)t->host[0], *w = (const uint16_t *)t->host[1];
    const int64_t *lab = (const int64_t *)t->host[2];
    double *z = (double *)malloc((size_t)V * sizeof *z), *hr = (double *)malloc((size_t)D * sizeof *hr),
           *g = (double *)malloc((size_t)D * sizeof *g);
    float *gh = (float *)malloc((size_t)D * sizeof *gh), *rg = (float *)malloc((size_t)D * sizeof *rg);
    mf_status s = tl && tg && z && hr && g && gh && rg ? MF_OK : MF_ERR_OUT_OF_MEMORY;
    float loss = NAN;
    if (s == MF_OK) s = mf_buffer_download(ctx, &loss, t->dev[3], sizeof loss);
    if (s == MF_OK && !isfinite(loss)) snprintf(why, cap, "the loss is not finite (%g)", (double)loss);
    const int64_t rows[CE_T_ROWS] = { 0, N / 3, 2 * N / 3, N - 1 };
    for (int k = 0; k < CE_T_ROWS && s == MF_OK && why[0] == '\0'; k++) {
        const int64_t i = rows[k];
        for (int64_t c = 0; c < D; c++) hr[c] = (double)mf_bf16_to_f32(h[(size_t)i * (size_t)D + (size_t)c]);
        double m = -INFINITY;
        for (int64_t v = 0; v < V; v++) {
            double acc = 0.0;
            const uint16_t *wr = w + (size_t)v * (size_t)D;
            for (int64_t c = 0; c < D; c++) acc += hr[c] * (double)mf_bf16_to_f32(wr[c]);
            z[v] = acc;
            if (acc > m) m = acc;
        }
        double sum = 0.0;
        for (int64_t v = 0; v < V; v++) sum += exp(z[v] - m);
        const double lse = m + log(sum);
        /* sum, grad_loss 1: dL/dz_v = softmax_v - [v == y] */
        for (int64_t c = 0; c < D; c++) g[c] = 0.0;
        for (int64_t v = 0; v < V; v++) {
            const double dz = exp(z[v] - lse) - (v == lab[i] ? 1.0 : 0.0);
            const uint16_t *wr = w + (size_t)v * (size_t)D;
            for (int64_t c = 0; c < D; c++) g[c] += dz * (double)mf_bf16_to_f32(wr[c]);
        }
        float got_lse = NAN;
        const float ref_lse = (float)lse;
        for (int64_t c = 0; c < D; c++) rg[c] = (float)g[c];
        mf_compare_result cl, cg;
        if ((s = mf_buffer_download(ctx, &got_lse, (float *)t->dev[4] + i, sizeof got_lse)) != MF_OK ||
            (s = mf_buffer_download(ctx, gh, (float *)t->dev[5] + (size_t)i * (size_t)D,
                                    (size_t)D * sizeof *gh)) != MF_OK ||
            (s = mf_compare_f32(&got_lse, &ref_lse, 1, tl, NULL, &cl)) != MF_OK ||
            (s = mf_compare_f32(gh, rg, (size_t)D, tg, NULL, &cg)) != MF_OK)
            break;
        if (!cl.pass || !cg.pass)
            snprintf(why, cap, "%s of row %lld vs a double computation: %.150s",
                     cl.pass ? "grad_hidden" : "lse", (long long)i, cl.pass ? cg.reason : cl.reason);
    }
    free(z);
    free(hr);
    free(g);
    free(gh);
    free(rg);
    return s;
}

const mf_bench_target mf_cross_entropy_internal_bench_targets[] = {
    { "ce-000", "seed 000",
      "fused fwd+bwd, bf16, seed 000's N=131072 D=2560 V=151936 (sum, fp32 gradients, no filtering) within "
      "1.5x of the 3-GEMM floor (6 N V D FLOPs at the dense bf16 peak); checked: lse and grad_hidden of 4 "
      "rows against double",
      MF_BENCH_TARGET_FLOOR, 1.5, ce_target_setup, ce_target_run, NULL, ce_target_check },
};
