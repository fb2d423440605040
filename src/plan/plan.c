/* memfix plan: the memory arithmetic of include/memfix/plan.h (conventions and
 * sources are stated there). Every byte count is exact size_t arithmetic with
 * overflow detection. Per-fix rows, the ops' parameters and the loss's
 * optimized figures come from the registered ops' descriptors (their plan
 * part, in src/ops/<op>.c): no op is named here. */
#include "mf_internal.h"
#include "memfix/plan.h"
#include "memfix/registry.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- checked arithmetic: any overflow (or a SIZE_MAX operand) sets *ovf ---- */
static size_t mul(int *ovf, size_t a, size_t b)
{
    size_t r;
    if (a == SIZE_MAX || b == SIZE_MAX || !mf_size_mul(a, b, &r)) {
        *ovf = 1;
        return SIZE_MAX;
    }
    return r;
}
static size_t mul3(int *ovf, size_t a, size_t b, size_t c) { return mul(ovf, mul(ovf, a, b), c); }
static size_t add(int *ovf, size_t a, size_t b)
{
    size_t r;
    if (a == SIZE_MAX || b == SIZE_MAX || !mf_size_add(a, b, &r)) {
        *ovf = 1;
        return SIZE_MAX;
    }
    return r;
}
static size_t ceil_div(size_t a, size_t b) { return a == SIZE_MAX ? SIZE_MAX : a / b + (a % b != 0); }

void mf_plan_config_init(mf_plan_config *cfg)
{
    static const mf_plan_config small_dense = { .layers = 12,
                                                .d_model = 768,
                                                .d_ffn = 3072,
                                                .heads = 12,
                                                .vocab = 50304,
                                                .batch = 1,
                                                .seq = 1024,
                                                .dtype = MF_DTYPE_BF16,
                                                .dp = 1 };
    if (cfg != NULL) *cfg = small_dense;
}

int64_t mf_plan_kv_heads(const mf_plan_config *c) { return c->kv_heads > 0 ? c->kv_heads : c->heads; }
int64_t mf_plan_head_dim(const mf_plan_config *c)
{
    return c->head_dim > 0 ? c->head_dim : c->heads > 0 ? c->d_model / c->heads : 0;
}

/* ---- the ops' parameters, through the registry ------------------------------------ */
const mf_plan_param_spec *mf_plan_param_find(const char *name)
{
    if (name == NULL) return NULL;
    size_t n = 0;
    const mf_op_desc *const *ops = mf_registry(&n);
    for (size_t i = 0; i < n; i++) {
        const mf_op_plan *p = ops[i] ? ops[i]->plan : NULL;
        for (int k = 0; p != NULL && k < p->n_params; k++)
            if (strcmp(p->params[k].name, name) == 0) return &p->params[k];
    }
    return NULL;
}

int64_t mf_plan_param_get(const mf_plan_config *cfg, const char *name)
{
    const mf_plan_param_spec *spec = mf_plan_param_find(name);
    if (spec == NULL) return 0;
    for (size_t i = 0; cfg != NULL && i < cfg->n_params && i < MF_PLAN_MAX_PARAMS; i++)
        if (cfg->params[i].name != NULL && strcmp(cfg->params[i].name, name) == 0)
            return cfg->params[i].value;
    return spec->dflt;
}

mf_status mf_plan_param_set(mf_plan_config *cfg, const char *name, int64_t value)
{
    MF_CHECK_NOT_NULL(cfg);
    MF_CHECK_NOT_NULL(name);
    const mf_plan_param_spec *spec = mf_plan_param_find(name);
    if (spec == NULL) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "no registered op has a plan parameter '%s'", name);
    size_t i = 0;
    while (i < cfg->n_params && i < MF_PLAN_MAX_PARAMS && strcmp(cfg->params[i].name, name) != 0) i++;
    if (i == MF_PLAN_MAX_PARAMS) MF_FAIL(MF_ERR_OVERFLOW, "more than %d plan parameters", MF_PLAN_MAX_PARAMS);
    if (i == cfg->n_params) cfg->n_params++;
    cfg->params[i].name = spec->name;
    cfg->params[i].value = value;
    return MF_OK;
}

static mf_status validate_params(const mf_plan_config *cfg)
{
    if (cfg->n_params > MF_PLAN_MAX_PARAMS)
        MF_FAIL(MF_ERR_INVALID_SIZE, "n_params %zu exceeds %d", cfg->n_params, MF_PLAN_MAX_PARAMS);
    for (size_t i = 0; i < cfg->n_params; i++) {
        const char *name = cfg->params[i].name;
        const int64_t v = cfg->params[i].value;
        const mf_plan_param_spec *spec = mf_plan_param_find(name);
        if (spec == NULL)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "no registered op has a plan parameter '%s'",
                    name ? name : "(null)");
        if (spec->kind == MF_PLAN_PARAM_FLAG && v != 0 && v != 1)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "%s must be 0 or 1 (got %lld)", name, (long long)v);
        if (v < 0) MF_FAIL(MF_ERR_INVALID_SIZE, "%s must be >= 0 (got %lld)", name, (long long)v);
    }
    return MF_OK;
}

mf_status mf_plan_config_validate(const mf_plan_config *cfg)
{
    MF_CHECK_NOT_NULL(cfg);
#define POS(field)                                                                                           \
    do {                                                                                                     \
        if (cfg->field <= 0)                                                                                 \
            MF_FAIL(MF_ERR_INVALID_SIZE, #field " must be > 0 (got %lld)", (long long)cfg->field);           \
    } while (0)
    POS(layers);
    POS(d_model);
    POS(d_ffn);
    POS(heads);
    POS(vocab);
    POS(batch);
    POS(seq);
    POS(dp);
#undef POS
    if (cfg->kv_heads < 0)
        MF_FAIL(MF_ERR_INVALID_SIZE, "kv_heads must be >= 0 (got %lld)", (long long)cfg->kv_heads);
    if (cfg->head_dim < 0)
        MF_FAIL(MF_ERR_INVALID_SIZE, "head_dim must be >= 0 (got %lld)", (long long)cfg->head_dim);
    if (cfg->max_positions < 0)
        MF_FAIL(MF_ERR_INVALID_SIZE, "max_positions must be >= 0 (got %lld)", (long long)cfg->max_positions);
    if (cfg->head_dim == 0 && cfg->d_model % cfg->heads != 0)
        MF_FAIL(MF_ERR_INVALID_SIZE, "d_model %lld is not a multiple of heads %lld (give head_dim)",
                (long long)cfg->d_model, (long long)cfg->heads);
    if (cfg->heads % mf_plan_kv_heads(cfg) != 0)
        MF_FAIL(MF_ERR_INVALID_SIZE, "heads %lld is not a multiple of kv_heads %lld", (long long)cfg->heads,
                (long long)mf_plan_kv_heads(cfg));
    if (cfg->dtype != MF_DTYPE_F32 && cfg->dtype != MF_DTYPE_BF16)
        MF_FAIL(MF_ERR_DTYPE, "dtype %d is not MF_DTYPE_F32 or MF_DTYPE_BF16", (int)cfg->dtype);
    if (cfg->zero < 0 || cfg->zero > 3)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "zero must be 0..3 (got %d)", cfg->zero);
    const int flags[] = { cfg->tied_embeddings, cfg->gated_mlp, cfg->linear_bias,  cfg->layernorm,
                          cfg->qk_norm,         cfg->dropout,   cfg->checkpointing };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (flags[i] != 0 && flags[i] != 1)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT,
                    "flags (tied_embeddings, gated_mlp, linear_bias, layernorm, qk_norm, "
                    "dropout, checkpointing) must be 0 or 1");
    if (cfg->attention != MF_PLAN_ATTENTION_TILED && cfg->attention != MF_PLAN_ATTENTION_STANDARD)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "attention %d is not MF_PLAN_ATTENTION_TILED or _STANDARD",
                (int)cfg->attention);
    if (cfg->loss != MF_PLAN_LOSS_NAIVE && cfg->loss != MF_PLAN_LOSS_CHUNKED &&
        cfg->loss != MF_PLAN_LOSS_FUSED)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "loss %d is not MF_PLAN_LOSS_NAIVE, _CHUNKED or _FUSED",
                (int)cfg->loss);
    return validate_params(cfg);
}

/* Parameter counts in size_t; *ovf on overflow. */
static void count_params(const mf_plan_config *c, int *ovf, size_t *layer, size_t *embed, size_t *total)
{
    const size_t d = (size_t)c->d_model, f = (size_t)c->d_ffn, V = (size_t)c->vocab;
    const size_t qd = mul(ovf, (size_t)c->heads, (size_t)mf_plan_head_dim(c));
    const size_t kvd = mul(ovf, (size_t)mf_plan_kv_heads(c), (size_t)mf_plan_head_dim(c));
    const size_t norm = c->layernorm ? 2 * d : d;
    /* attention: q and o (d x qd each), k and v (d x kvd each) */
    size_t attn = add(ovf, mul3(ovf, 2, d, qd), mul3(ovf, 2, d, kvd));
    size_t mlp = mul3(ovf, c->gated_mlp ? 3 : 2, d, f);
    if (c->linear_bias) {
        attn = add(ovf, attn, add(ovf, add(ovf, qd, mul(ovf, 2, kvd)), d)); /* q, k, v, o biases */
        mlp = add(ovf, mlp, add(ovf, mul(ovf, c->gated_mlp ? 2 : 1, f), d));
    }
    *layer = add(ovf, add(ovf, attn, mlp), mul(ovf, 2, norm));
    if (c->qk_norm) *layer = add(ovf, *layer, mul(ovf, 2, (size_t)mf_plan_head_dim(c)));
    *embed = mul3(ovf, c->tied_embeddings ? 1 : 2, V, d);
    *embed = add(ovf, *embed, mul(ovf, (size_t)c->max_positions, d));
    *total = add(ovf, add(ovf, mul(ovf, (size_t)c->layers, *layer), *embed), norm /* final norm */);
    if (*total > (size_t)INT64_MAX) *ovf = 1;
}

int64_t mf_plan_param_count(const mf_plan_config *cfg)
{
    if (mf_plan_config_validate(cfg) != MF_OK) return -1;
    int ovf = 0;
    size_t layer, embed, total;
    count_params(cfg, &ovf, &layer, &embed, &total);
    return ovf ? -1 : (int64_t)total;
}

/* b*a*s*s*e: the softmax output of standard attention; the same product as
 * mf_attention_theoretical_memory's standard_scores (asserted in test_plan). */
static size_t scores_bytes(int *ovf, size_t b, size_t a, size_t s, size_t e)
{
    return mul(ovf, mul3(ovf, b, a, s), mul(ovf, s, e));
}

size_t mf_plan_product(size_t n, const size_t *factors)
{
    int ovf = 0;
    size_t r = 1;
    for (size_t i = 0; factors != NULL && i < n; i++) r = mul(&ovf, r, factors[i]);
    return ovf || factors == NULL ? SIZE_MAX : r;
}

/* The op whose plan has a loss hook (cross_entropy), or NULL. */
static const mf_op_plan *loss_plan(void)
{
    size_t n = 0;
    const mf_op_desc *const *ops = mf_registry(&n);
    for (size_t i = 0; i < n; i++)
        if (ops[i] != NULL && ops[i]->plan != NULL && ops[i]->plan->loss != NULL) return ops[i]->plan;
    return NULL;
}

mf_status mf_plan_training_memory(const mf_plan_config *cfg, mf_plan_memory *out)
{
    MF_CHECK_NOT_NULL(out);
    memset(out, 0, sizeof *out);
    MF_TRY(mf_plan_config_validate(cfg));
    int ovf = 0;
    const size_t e = mf_dtype_size(cfg->dtype);
    size_t layer, embed, total;
    count_params(cfg, &ovf, &layer, &embed, &total);
    if (ovf) MF_FAIL(MF_ERR_OVERFLOW, "the parameter count overflows");
    out->params = (int64_t)total;
    out->embedding_params = (int64_t)embed;
    out->layer_params = (int64_t)layer;

    /* weights, gradients, AdamW states (ZeRO's mixed-precision accounting) */
    out->weights_bytes = mul(&ovf, total, e);
    out->grads_bytes = mul(&ovf, total, e);
    out->optimizer_bytes = mul(&ovf, total, e < 4 ? 12 : 8);
    const size_t dp = (size_t)cfg->dp;
    out->weights_gpu = cfg->zero >= 3 ? ceil_div(out->weights_bytes, dp) : out->weights_bytes;
    out->grads_gpu = cfg->zero >= 2 ? ceil_div(out->grads_bytes, dp) : out->grads_bytes;
    out->optimizer_gpu = cfg->zero >= 1 ? ceil_div(out->optimizer_bytes, dp) : out->optimizer_bytes;

    /* activations (Korthikanti et al. 2022, generalized; see plan.h) */
    const size_t s = (size_t)cfg->seq, b = (size_t)cfg->batch, d = (size_t)cfg->d_model,
                 f = (size_t)cfg->d_ffn;
    const size_t a = (size_t)cfg->heads, kv = (size_t)mf_plan_kv_heads(cfg),
                 dh = (size_t)mf_plan_head_dim(cfg);
    const size_t sb = mul(&ovf, s, b), sbd = mul(&ovf, sb, d);
    const size_t e_sbd = mul(&ovf, e, sbd);
    const size_t mask = cfg->dropout ? sbd : 0;                       /* 1-byte dropout masks */
    size_t attn = mul(&ovf, 2, e_sbd);                                /* LN input, QKV input */
    attn = add(&ovf, attn, mul3(&ovf, 2 * e, sb, mul(&ovf, a, dh)));  /* Q, output-proj input */
    attn = add(&ovf, attn, mul3(&ovf, 2 * e, sb, mul(&ovf, kv, dh))); /* K, V */
    attn = add(&ovf, attn, mask);                                     /* attention dropout */
    size_t mlp = mul(&ovf, 2, e_sbd);                                 /* LN input, fc1 input */
    mlp = add(&ovf, mlp, mul3(&ovf, (cfg->gated_mlp ? 3 : 2) * e, sb, f));
    mlp = add(&ovf, mlp, mask);
    size_t scores = scores_bytes(&ovf, b, a, s, e);
    if (cfg->dropout) /* mask (1 byte) and dropout output (e bytes) of the probabilities */
        scores = add(&ovf, scores, add(&ovf, scores_bytes(&ovf, b, a, s, 1), scores_bytes(&ovf, b, a, s, e)));
    const size_t lse = mul3(&ovf, 4, mul(&ovf, b, a), s);
    const size_t base = add(&ovf, attn, mlp);
    out->act_layer_standard = add(&ovf, base, scores);
    out->act_layer_tiled = add(&ovf, base, lse);
    out->act_outside_layers = mul(&ovf, 2, e_sbd);
    const size_t L = (size_t)cfg->layers;
    out->act_standard = add(&ovf, mul(&ovf, L, out->act_layer_standard), out->act_outside_layers);
    out->act_tiled = add(&ovf, mul(&ovf, L, out->act_layer_tiled), out->act_outside_layers);
    const size_t inputs = add(&ovf, mul(&ovf, L, e_sbd), out->act_outside_layers);
    out->act_ckpt_standard = add(&ovf, inputs, out->act_layer_standard);
    out->act_ckpt_tiled = add(&ovf, inputs, out->act_layer_tiled);
    if (ovf) MF_FAIL(MF_ERR_OVERFLOW, "the activation memory overflows size_t");

    /* logits and loss over N = b*s rows */
    const int64_t N = cfg->batch * cfg->seq; /* both validated > 0; the product checked below */
    if (cfg->batch > INT64_MAX / cfg->seq) MF_FAIL(MF_ERR_OVERFLOW, "batch * seq overflows");
    int lovf = 0; /* an overflowing logits count is SIZE_MAX, not an error */
    out->logits_bytes = mul3(&lovf, (size_t)N, (size_t)cfg->vocab, e);
    out->loss_naive = add(&ovf, out->logits_bytes, mul3(&lovf, (size_t)N, (size_t)cfg->vocab, 4));
    out->loss_chunked = SIZE_MAX;
    out->loss_fused = SIZE_MAX;
    const mf_op_plan *lp = loss_plan();
    if (lp != NULL) MF_TRY(lp->loss(cfg, out));

    const size_t states = add(&ovf, add(&ovf, out->weights_gpu, out->grads_gpu), out->optimizer_gpu);
    out->total_naive = add(&ovf, add(&ovf, states, out->act_standard), out->loss_naive);
    /* the smallest loss the ops plan (SIZE_MAX, as unknown, is never the smallest) */
    size_t best = out->loss_naive;
    if (out->loss_chunked < best) best = out->loss_chunked;
    if (out->loss_fused < best) best = out->loss_fused;
    out->total_optimized_loss = best;
    out->total_optimized = add(&ovf, add(&ovf, states, out->act_ckpt_tiled), best);
    /* as configured: an unplanned loss variant (no loss op) leaves the total unknown */
    const int standard = cfg->attention == MF_PLAN_ATTENTION_STANDARD;
    const size_t act = cfg->checkpointing ? (standard ? out->act_ckpt_standard : out->act_ckpt_tiled)
                                          : (standard ? out->act_standard : out->act_tiled);
    out->loss_configured = cfg->loss == MF_PLAN_LOSS_FUSED     ? out->loss_fused
                           : cfg->loss == MF_PLAN_LOSS_CHUNKED ? out->loss_chunked
                                                               : out->loss_naive;
    out->total =
        out->loss_configured == SIZE_MAX ? SIZE_MAX : add(&ovf, add(&ovf, states, act), out->loss_configured);
    if (ovf) MF_FAIL(MF_ERR_OVERFLOW, "the memory totals overflow size_t");
    return MF_OK;
}

mf_status mf_plan_row_add(mf_plan_rows *out, const char *fix, const char *naive_what, size_t naive,
                          const char *opt_what, size_t opt, const char *shape_fmt, ...)
{
    MF_CHECK_NOT_NULL(out);
    MF_CHECK_NOT_NULL(out->rows);
    if (out->n >= out->cap)
        MF_FAIL(MF_ERR_OVERFLOW, "no room for the plan row %s (%zu rows)", fix ? fix : "(null)", out->cap);
    mf_plan_fix_row *r = &out->rows[out->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->fix, sizeof r->fix, "%s", fix ? fix : "");
    snprintf(r->naive_what, sizeof r->naive_what, "%s", naive_what ? naive_what : "");
    snprintf(r->optimized_what, sizeof r->optimized_what, "%s", opt_what ? opt_what : "");
    r->naive_bytes = naive;
    r->optimized_bytes = opt;
    if (shape_fmt != NULL) {
        va_list ap;
        va_start(ap, shape_fmt);
        vsnprintf(r->shape, sizeof r->shape, shape_fmt, ap);
        va_end(ap);
    }
    return MF_OK;
}

mf_status mf_plan_fixes(const mf_plan_config *cfg, mf_plan_fix_row *rows, size_t *n_rows)
{
    MF_CHECK_NOT_NULL(rows);
    MF_CHECK_NOT_NULL(n_rows);
    *n_rows = 0;
    MF_TRY(mf_plan_config_validate(cfg));
    if (cfg->batch > INT64_MAX / cfg->seq) MF_FAIL(MF_ERR_OVERFLOW, "batch * seq overflows");
    size_t n_ops = 0;
    mf_plan_rows out = { rows, MF_PLAN_MAX_FIX_ROWS, 0 };
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    for (size_t i = 0; i < n_ops; i++) {
        const mf_op_plan *p = ops[i] ? ops[i]->plan : NULL;
        if (p != NULL && p->rows != NULL) MF_TRY(p->rows(cfg, &out));
    }
    *n_rows = out.n;
    return MF_OK;
}

/* ---- presets: the seed documents' cases ------------------------------------------ */
#define MODEL(L, D, F, A, KV, DH, V, POS, TIED, GATED, BIAS, LN)                                             \
    .layers = L, .d_model = D, .d_ffn = F, .heads = A, .kv_heads = KV, .head_dim = DH, .vocab = V,           \
    .max_positions = POS, .tied_embeddings = TIED, .gated_mlp = GATED, .linear_bias = BIAS, .layernorm = LN
#define STEP(Bt, S, DT, DP) .batch = Bt, .seq = S, .dtype = DT, .dp = DP
/* one op parameter (its op's spec: src/ops/<op>.c) */
#define PARAM(NAME, V) .n_params = 1, .params = { { NAME, V } }
/* the models and steps that two presets share: seed 001's NSA model at seq S,
 * seed 002's Pythia-70M with vocabulary V, seed 004's NPT step */
#define M7C_NSA(S)                                                                                           \
    MODEL(12, 768, 3072, 12, 2, 64, 50304, 0, 1, 0, 0, 1), STEP(2, S, MF_DTYPE_BF16, 2), PARAM("nsa", 1)
#define PYTHIA_70M(V) MODEL(6, 512, 2048, 8, 0, 0, V, 128, 0, 0, 1, 1), STEP(32, 128, MF_DTYPE_F32, 1)
#define NPT_STEP STEP(4, 512, MF_DTYPE_F32, 1), PARAM("npt_rank", 16)

static const mf_plan_preset presets[] = {
    /* Seed 000: the "4B model" at 131,072 tokens, vocabulary 151,936. The seed
     * gives only D = 2560 ("+640 MB for hidden states" = 131072 x 2560 bf16)
     * and the vocabulary; the rest is Qwen3-4B's published config (36 layers,
     * 32 query / 8 KV heads of 128, SwiGLU 9728, tied, q/k norms):
     * 4,022,468,096 parameters. The seed's "8.72 GB ... 3.92B params in
     * bfloat16" is not consistent with itself (3.92e9 x 2 B = 7.84 GB); the
     * computed weights are 8,044,936,192 B = 7.49 GiB. Logits:
     * 39,829,110,784 B = 37.09 GiB. */
    { "000",
      "seed 000: 4B model (Qwen3-4B shapes), 131,072 tokens, vocab 151,936, bf16",
      MF_PLAN_PRESET_MODEL,
      { MODEL(36, 2560, 9728, 32, 8, 128, 151936, 0, 1, 1, 0, 0), STEP(1, 131072, MF_DTYPE_BF16, 1),
        .qk_norm = 1 } },
    /* Seed 001: the M7C 125M NSA model: 768 hidden, 12 layers, 12 heads, 2 KV
     * groups, vocabulary 50,304; micro-batch 2 per GPU, 2 GPUs (DDP), bf16; NSA
     * l=32, d=16, l'=64, n=16, w=512 (the nsa op's plan uses the seed's
     * configuration). d_ffn is not stated: 4 x 768 (GPT-2). The
     * seed's "~95.3M parameters" does not follow from the stated dimensions
     * (no FFN width); it is not asserted. */
    { "001-1k",
      "seed 001: 125M NSA model at seq 1024 (2 GPUs, micro-batch 2)",
      MF_PLAN_PRESET_MODEL,
      { M7C_NSA(1024) } },
    { "001-4k",
      "seed 001: 125M NSA model at seq 4096 (the run that went OOM)",
      MF_PLAN_PRESET_MODEL,
      { M7C_NSA(4096) } },
    /* Seed 002: Pythia-70M (6 layers, d 512, 8 heads, d_ffn 2048, LayerNorm,
     * biases, untied head), fp32, batch 32, seq 128, with the seed's learned
     * position embeddings (128 x 512). Full vocabulary: Pythia's 50,304 (the
     * seed says "50K"). */
    { "002-full",
      "seed 002: Pythia-70M, full vocabulary 50,304, fp32, batch 32 x 128",
      MF_PLAN_PRESET_MODEL,
      { PYTHIA_70M(50304) } },
    { "002-10k",
      "seed 002: Pythia-70M, vocabulary capped at 10,000, fp32, batch 32 x 128",
      MF_PLAN_PRESET_MODEL,
      { PYTHIA_70M(10000) } },
    /* Seed 003: the theoretical memory table, B=4, H=8, D=64, fp16, N=512..8192. */
    { "003",
      "seed 003: attention memory at B=4, H=8, D=64, fp16, N = 512..8192",
      MF_PLAN_PRESET_ATTENTION_SWEEP,
      { MODEL(1, 512, 2048, 8, 0, 64, 1, 0, 0, 0, 0, 0), STEP(4, 512, MF_DTYPE_BF16, 1) } },
    /* Seed 004: NPT at Llama-3-8B shapes (d_model 4096, d_ffn 14336), batch 4 x
     * 512, rank 16, fp32 (the seed's example dtype). */
    { "004",
      "seed 004: NPT at Llama-3-8B shapes (4096 x 14336), batch 4 x 512, rank 16, fp32",
      MF_PLAN_PRESET_MODEL,
      { MODEL(32, 4096, 14336, 32, 8, 128, 128256, 0, 0, 1, 0, 0), NPT_STEP } },
    /* Seed 004's own example: 4 x 512 x 4096 x 11008 (Llama-2-7B shapes), fp32:
     * delta_w = 369,367,187,456 B = 344 GiB (the seed says "~448 GB"). */
    { "004-doc",
      "seed 004's example: NPT at 4 x 512 x 4096 x 11008 (Llama-2-7B), rank 16, fp32",
      MF_PLAN_PRESET_MODEL,
      { MODEL(32, 4096, 11008, 32, 0, 0, 32000, 0, 0, 1, 0, 0), NPT_STEP } },
};

const mf_plan_preset *mf_plan_presets(size_t *count)
{
    if (count) *count = sizeof presets / sizeof presets[0];
    return presets;
}

const mf_plan_preset *mf_plan_preset_find(const char *name)
{
    if (name == NULL) return NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}
