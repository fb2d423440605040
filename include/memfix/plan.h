/* memfix plan: memory arithmetic before a job is launched.
 *
 * Two kinds of numbers, both in exact bytes (size_t):
 *
 * 1. Per fix, the naive and optimized bytes of the big intermediate at a
 *    shape: rows that each registered op computes from its own formula
 *    functions, the ones its memory tests assert (the plan part of the op's
 *    descriptor, struct mf_op_plan below, in src/ops/<op>.c). The op also
 *    declares the parameters its rows need beyond the model's shape
 *    (mf_plan_param_spec: `memfix plan` turns each into an option). A build
 *    without kernels registers no ops, hence no rows.
 *
 * 2. A training-memory breakdown for a decoder-only transformer, per GPU.
 *    Conventions (stated so the numbers can be checked by hand):
 *    - Parameters: embedding V*d (+ LM head V*d unless tied) (+ learned
 *      positions P*d); per layer: q and o projections d*(h*dh) each, k and v
 *      d*(kv*dh) each, MLP 3*d*f (gated: SwiGLU) or 2*d*f, biases (optional:
 *      h*dh + 2*kv*dh + d for attention, f + d for the MLP; 2f + d gated), two
 *      norms of d (RMSNorm) or 2d (LayerNorm) each (+ 2*dh with q/k norms),
 *      plus the final norm.
 *      Checks: Llama-2-7B 6,738,415,616; Llama-3-8B 8,030,261,248; Pythia-70M
 *      70,426,624 (tests/unit/test_plan.c).
 *    - Mixed-precision AdamW, as in ZeRO (Rajbhandari et al., 2020, sec. 3.1):
 *      weights and gradients in the training dtype (e bytes each per
 *      parameter); optimizer states m and v in fp32 (8 bytes) plus an fp32
 *      master copy when the dtype is not fp32 (12 bytes in all for bf16).
 *      With data-parallel degree Nd, ZeRO stage 1 shards the optimizer
 *      states, 2 also the gradients, 3 also the weights (ceil(bytes / Nd)).
 *      Activations are never sharded by ZeRO.
 *    - Activations per layer: the term-by-term count of Korthikanti et al.,
 *      "Reducing Activation Recomputation in Large Transformer Models" (2022),
 *      sec. 4.1, generalized to an element size e, GQA, head_dim, d_ffn and a
 *      gated MLP. With s tokens per sequence, b sequences, a heads:
 *        attention: LN input e*sbd, QKV input e*sbd, Q e*sb*a*dh,
 *                   K and V e*sb*kv*dh each, output-projection input e*sb*a*dh,
 *                   + standard: softmax output e*b*a*s^2 (the scores: the
 *                     same B*H*N*N*e as mf_attention_theoretical_memory)
 *                     and, with dropout, its mask b*a*s^2 and output
 *                     e*b*a*s^2, and the attention dropout mask s*b*d;
 *                   + tiled (FlashAttention): the logsumexp 4*b*a*s instead
 *                     of the scores;
 *        MLP:       LN input e*sbd, first-linear input e*sbd, activation
 *                   input and output e*sbf each (gated: gate, up and product,
 *                   3*e*sbf), + dropout mask s*b*d with dropout.
 *      With e = 2, dropout, f = 4d, kv = a, dh = d/a and standard attention
 *      this is exactly Korthikanti's sbd(34 + 5as/d) (asserted in the tests).
 *      Outside the layers: the final norm's input and the LM head's input,
 *      e*sbd each. Full activation checkpointing keeps each layer's input
 *      (e*sbd per layer) plus one layer's activations recomputed during the
 *      backward pass.
 *    - Logits and loss, N = b*s rows: the naive path holds the logits in the
 *      dtype (N*V*e) plus F.cross_entropy's fp32 copy (N*V*4) -- seed 000's
 *      "37.09 GB + ~74 GB = 111 GB"; the optimized figures (chunked, fused)
 *      come from the op whose plan has a loss hook (cross_entropy: its
 *      chunked ceiling at the chunk its planner picks for the budget, and the
 *      fused variant's 8N + 16).
 *    - Totals per GPU: weights + gradients + optimizer states after ZeRO, the
 *      activations and the loss. Three of them: naive (standard attention, no
 *      checkpointing, the naive loss), optimized (tiled attention,
 *      checkpointing, the smallest loss variant) and the step as configured
 *      (cfg->attention, cfg->checkpointing, cfg->loss), which mf_plan_fit_gpu
 *      holds against a GPU's memory.
 *    Not modelled: tensor, sequence and pipeline parallelism, activation
 *    offloading, the CUDA context, library workspaces, the caching
 *    allocator's reserve and fragmentation, temporary buffers of kernels.
 */
#ifndef MEMFIX_PLAN_H
#define MEMFIX_PLAN_H

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parameter an op's plan rows need beyond the model's shape (an NPT rank,
 * the loss's scratch budget, whether to plan NSA), set by name. The op that
 * declares it (its mf_plan_param_spec) gives its default and its rule. */
typedef struct mf_plan_param {
    const char *name; /* "npt_rank": the spec's name (a string that outlives the config) */
    int64_t value;
} mf_plan_param;

#define MF_PLAN_MAX_PARAMS 8

/* How the step computes its attention and its loss (mf_plan_config). */
typedef enum mf_plan_attention {
    MF_PLAN_ATTENTION_TILED = 0,   /* FlashAttention-style: the logsumexp, never the N x N scores */
    MF_PLAN_ATTENTION_STANDARD = 1 /* the softmax output B*H*N*N*e kept per layer */
} mf_plan_attention;

typedef enum mf_plan_loss {
    MF_PLAN_LOSS_NAIVE = 0,   /* the logits and F.cross_entropy's fp32 copy */
    MF_PLAN_LOSS_CHUNKED = 1, /* the chunked linear cross-entropy's ceiling */
    MF_PLAN_LOSS_FUSED = 2    /* the fused linear cross-entropy's ceiling (8N + 16) */
} mf_plan_loss;

typedef struct mf_plan_config {
    /* model */
    int64_t layers;        /* L */
    int64_t d_model;       /* d */
    int64_t d_ffn;         /* f */
    int64_t heads;         /* a: query heads */
    int64_t kv_heads;      /* kv; 0 = heads (multi-head attention) */
    int64_t head_dim;      /* dh; 0 = d_model / heads */
    int64_t vocab;         /* V */
    int64_t max_positions; /* rows of learned position embeddings; 0 = none (RoPE) */
    int tied_embeddings;   /* 1: the LM head shares the embedding matrix */
    int gated_mlp;         /* 1: SwiGLU (3 matrices), 0: GELU MLP (2 matrices) */
    int linear_bias;       /* 1: every linear layer has a bias (except the LM head) */
    int layernorm;         /* 1: LayerNorm (weight and bias), 0: RMSNorm (weight) */
    int qk_norm;           /* 1: RMSNorm of q and k per head (Qwen3): 2*head_dim per layer */
    int dropout;           /* 1: dropout masks are stored (Korthikanti's count) */
    /* training step, per GPU */
    int64_t batch;  /* b: micro-batch sequences per GPU */
    int64_t seq;    /* s: tokens per sequence */
    mf_dtype dtype; /* weights, gradients and activations */
    int64_t dp;     /* data-parallel degree Nd (>= 1) */
    int zero;       /* ZeRO stage 0..3 */
    /* how the step is run: what mf_plan_memory.total counts (zero: tiled
     * attention, no checkpointing, the naive loss) */
    mf_plan_attention attention;
    int checkpointing; /* 1: full activation checkpointing */
    mf_plan_loss loss;
    /* the ops' parameters that were set (mf_plan_param_set); the others take
     * their spec's default */
    size_t n_params;
    mf_plan_param params[MF_PLAN_MAX_PARAMS];
} mf_plan_config;

/* A small dense model: 12 layers, d 768, f 3072, 12 heads, V 50304, b 1,
 * s 1024, bf16, dp 1, ZeRO 0, tiled attention, no checkpointing, the naive
 * loss, everything else 0/off, no op parameter set. */
MF_API void mf_plan_config_init(mf_plan_config *cfg);
/* MF_OK, or MF_ERR_INVALID_SIZE / MF_ERR_INVALID_ARGUMENT naming the field
 * (an op parameter: its spec's rule, or no registered op declaring it). */
MF_API mf_status mf_plan_config_validate(const mf_plan_config *cfg);
MF_API int64_t mf_plan_kv_heads(const mf_plan_config *cfg); /* kv_heads, or heads when 0 */
MF_API int64_t mf_plan_head_dim(const mf_plan_config *cfg); /* head_dim, or d_model / heads when 0 */

/* How an op parameter's value is checked (and shown by --json). */
typedef enum mf_plan_param_kind {
    MF_PLAN_PARAM_COUNT = 0, /* >= 0 */
    MF_PLAN_PARAM_FLAG,      /* 0 or 1 (a JSON bool) */
    MF_PLAN_PARAM_BYTES      /* >= 0; 0 means the default (an option takes > 0) */
} mf_plan_param_kind;

typedef struct mf_plan_param_spec {
    const char *name;   /* "npt_rank": mf_plan_param's name and the --json config key */
    const char *option; /* "--npt-rank" */
    const char *arg;    /* "R": the option's value in --help */
    const char *help;   /* one line (lines after the first indented by 21 spaces) */
    mf_plan_param_kind kind;
    int64_t dflt; /* the value when unset */
} mf_plan_param_spec;

/* The value of the op parameter 'name': the config's, else the declaring
 * op's default; 0 when no registered op declares it. */
MF_API int64_t mf_plan_param_get(const mf_plan_config *cfg, const char *name);
/* Sets (or replaces) an op parameter. MF_ERR_INVALID_ARGUMENT when no
 * registered op declares 'name', MF_ERR_OVERFLOW past MF_PLAN_MAX_PARAMS.
 * The value is checked by mf_plan_config_validate. */
MF_API mf_status mf_plan_param_set(mf_plan_config *cfg, const char *name, int64_t value);
/* The registered op declaring 'name' and its spec; NULL if none. */
MF_API const mf_plan_param_spec *mf_plan_param_find(const char *name);

typedef struct mf_plan_memory {
    /* parameter counts */
    int64_t params;           /* total */
    int64_t embedding_params; /* token (+ position) embeddings + untied LM head */
    int64_t layer_params;     /* one layer */
    /* whole model, replicated (ZeRO 0) */
    size_t weights_bytes;   /* params * e */
    size_t grads_bytes;     /* params * e */
    size_t optimizer_bytes; /* params * (8, or 12 when e < 4) */
    /* per GPU after ZeRO sharding */
    size_t weights_gpu, grads_gpu, optimizer_gpu;
    /* activations per GPU */
    size_t act_layer_standard; /* one layer, scores materialized */
    size_t act_layer_tiled;    /* one layer, tiled attention */
    size_t act_outside_layers; /* final norm input + LM head input */
    size_t act_standard;       /* L layers + outside, no checkpointing */
    size_t act_tiled;
    size_t act_ckpt_standard; /* checkpointing: L layer inputs + one layer + outside */
    size_t act_ckpt_tiled;
    /* logits and loss */
    size_t logits_bytes; /* N * V * e */
    size_t loss_naive;   /* logits + fp32 copy N*V*4 */
    /* filled by the loss op's plan hook (SIZE_MAX / 0 / NULL without one): */
    size_t loss_chunked;          /* the chunked loss's scratch ceiling */
    int64_t loss_chunk_rows;      /* its chunk C */
    int loss_capped_by_logits;    /* the budget exceeded the logits: the chunked tile is capped at them */
    size_t loss_fused;            /* the fused (Cut Cross-Entropy class) ceiling: no tile, no budget */
    const char *loss_exceeds_why; /* why loss_chunked can exceed the logits it replaces */
    /* totals per GPU (states: weights_gpu + grads_gpu + optimizer_gpu) */
    size_t total_naive; /* states + act_standard + loss_naive */
    size_t
        total_optimized_loss; /* the smallest loss variant: loss_fused, else loss_chunked, else loss_naive */
    size_t total_optimized;   /* states + act_ckpt_tiled + total_optimized_loss */
    size_t loss_configured;   /* cfg->loss's term (SIZE_MAX: no loss op plans that variant) */
    size_t total;             /* as configured: states + the activations of cfg->attention and
                                    cfg->checkpointing + loss_configured (SIZE_MAX when that is) */
} mf_plan_memory;

MF_API mf_status mf_plan_training_memory(const mf_plan_config *cfg, mf_plan_memory *out);
MF_API int64_t mf_plan_param_count(const mf_plan_config *cfg); /* -1 on bad config/overflow */

/* ---- does the step fit a GPU, and what would make it fit ------------------------------
 * mf_plan_fit_gpu holds the configured total (mf_plan_memory.total) against
 * gpu_bytes. When it does not fit, it lists changes in order of their cost,
 * each applied on top of the ones before it, until one fits:
 *   1. tiled attention (when standard): the same result, no N x N scores;
 *   2. the fused loss (when another): the same loss, the logits recomputed in
 *      tiles in the backward pass instead of stored;
 *   3. full activation checkpointing: about one more forward pass of compute;
 *   4. ZeRO and data parallelism: the cheapest ZeRO stage at the configured
 *      degree, else at 2, 4, 8, ... GPUs (up to MF_PLAN_FIT_MAX_DP or the
 *      configured degree), that fits; when none does, the cheapest that brings
 *      the weights, gradients and optimizer states under half of the GPU;
 *   5. a smaller micro-batch: the largest that fits (gradient accumulation
 *      keeps the global batch), else 1;
 *   6. a shorter sequence: the largest that fits, rounded down to a multiple
 *      of 1024 when it is at least 1024.
 * A change the configuration already has is skipped; `reachable` says
 * whether the last one fits. */
#define MF_PLAN_FIT_MAX_DP 1024
#define MF_PLAN_MAX_SUGGESTIONS 6

typedef enum mf_plan_change {
    MF_PLAN_CHANGE_ATTENTION = 0,
    MF_PLAN_CHANGE_LOSS,
    MF_PLAN_CHANGE_CHECKPOINTING,
    MF_PLAN_CHANGE_ZERO_DP,
    MF_PLAN_CHANGE_BATCH,
    MF_PLAN_CHANGE_SEQ
} mf_plan_change;

typedef struct mf_plan_suggestion {
    mf_plan_change change;
    char setting[64];   /* the memfix plan options that make the change: "--loss fused", "--dp 2 --zero 3" */
    char what[192];     /* the change and its cost, one line */
    mf_plan_config cfg; /* the configuration with this change and the ones before it */
    size_t total;       /* its per-GPU total (mf_plan_memory.total) */
    int fits;           /* total <= gpu_bytes */
} mf_plan_suggestion;

typedef struct mf_plan_fit {
    size_t gpu_bytes;
    size_t total;    /* the configuration's per-GPU total */
    int fits;        /* total <= gpu_bytes */
    size_t headroom; /* gpu_bytes - total when it fits, else 0 */
    size_t over;     /* total - gpu_bytes when it does not, else 0 */
    size_t n_suggestions;
    mf_plan_suggestion suggestions[MF_PLAN_MAX_SUGGESTIONS];
    int reachable; /* it fits, or the last suggestion does */
} mf_plan_fit;

/* MF_ERR_INVALID_SIZE when gpu_bytes is 0; MF_ERR_INVALID_ARGUMENT when the
 * configured loss variant has no figure in this build (no loss op). */
MF_API mf_status mf_plan_fit_gpu(const mf_plan_config *cfg, size_t gpu_bytes, mf_plan_fit *out);

/* A memory size: whole bytes ("85899345920"), or a number with up to 6
 * decimals and a unit, case-insensitive, optionally after one space: B;
 * KB, MB, GB, TB (powers of 1000); KiB, MiB, GiB, TiB and K, M, G, T
 * (powers of 1024). "80GB" = 80,000,000,000; "80GiB" = "80G" = 85,899,345,920.
 * A fraction of a byte is dropped. MF_ERR_INVALID_ARGUMENT (the message says
 * what is wrong) for anything else, MF_ERR_INVALID_SIZE for 0,
 * MF_ERR_OVERFLOW past SIZE_MAX. */
MF_API mf_status mf_plan_parse_size(const char *text, size_t *bytes);

/* One row of the per-fix table. */
typedef struct mf_plan_fix_row {
    char fix[24]; /* "cross_entropy", "rope", "attention", ... */
    char shape[96];
    char naive_what[64]; /* what the naive code materializes */
    size_t naive_bytes;  /* SIZE_MAX: overflow */
    char optimized_what[64];
    size_t optimized_bytes;  /* SIZE_MAX: n/a or overflow */
    const char *exceeds_why; /* why optimized can exceed naive (NULL: the generic reason) */
} mf_plan_fix_row;

#define MF_PLAN_MAX_FIX_ROWS 16
/* Every registered op's rows for cfg, in registry order: writes at most
 * MF_PLAN_MAX_FIX_ROWS. */
MF_API mf_status mf_plan_fixes(const mf_plan_config *cfg, mf_plan_fix_row *rows, size_t *n_rows);

/* For the ops' plan functions: the rows being filled, a row appended to them
 * (its shape from the printf-style format; it is out->rows[out->n - 1];
 * MF_ERR_OVERFLOW when they are full), and a product of sizes in bytes
 * (SIZE_MAX on overflow or a SIZE_MAX factor). */
typedef struct mf_plan_rows {
    mf_plan_fix_row *rows;
    size_t cap, n;
} mf_plan_rows;
MF_API mf_status mf_plan_row_add(mf_plan_rows *out, const char *fix, const char *naive_what, size_t naive,
                                 const char *optimized_what, size_t optimized, const char *shape_fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 7, 8)))
#endif
    ;
MF_API size_t mf_plan_product(size_t n, const size_t *factors);

/* The plan part of an op's descriptor (mf_op_desc.plan, memfix/registry.h). */
typedef struct mf_op_plan {
    int n_params;
    const mf_plan_param_spec *params;
    /* Appends the op's rows for cfg (validated) with mf_plan_row_add. NULL: no rows. */
    mf_status (*rows)(const mf_plan_config *cfg, mf_plan_rows *out);
    /* Only the op computing the model's loss: fills m's loss_chunked ..
     * loss_exceeds_why for cfg (validated). */
    mf_status (*loss)(const mf_plan_config *cfg, mf_plan_memory *m);
} mf_op_plan;

/* Presets reproducing the seed documents' cases. */
typedef enum mf_plan_preset_kind {
    MF_PLAN_PRESET_MODEL = 0,      /* a config: breakdown + fixes */
    MF_PLAN_PRESET_ATTENTION_SWEEP /* seed 003: B=4, H=8, D=64, fp16, N = 512..8192 */
} mf_plan_preset_kind;

typedef struct mf_plan_preset {
    const char *name; /* "000", "001-1k", ... */
    const char *summary;
    mf_plan_preset_kind kind;
    mf_plan_config cfg; /* MODEL presets */
} mf_plan_preset;

MF_API const mf_plan_preset *mf_plan_presets(size_t *count);
MF_API const mf_plan_preset *mf_plan_preset_find(const char *name); /* NULL if unknown */

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_PLAN_H */
