/* memfix plan: exact values of the training-memory model (include/memfix/plan.h)
 * and of the presets that reproduce the seed documents' cases. Where a
 * document's figure disagrees with its own shapes, the computed value is
 * asserted and the comment cites the document. */
#define _POSIX_C_SOURCE 200809L
#include "mf_test.h"
#include "memfix/attention.h"
#include "memfix/cross_entropy.h"
#include "memfix/npt.h"
#include "memfix/plan.h"
#include "memfix/nsa.h"
#include "memfix_cli.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mf_plan_config preset_cfg(const char *name)
{
    const mf_plan_preset *p = mf_plan_preset_find(name);
    ck_assert_msg(p != NULL, "no preset %s", name);
    return p->cfg;
}

static mf_plan_memory plan_of(const mf_plan_config *c)
{
    mf_plan_memory m;
    MF_ASSERT_OK(mf_plan_training_memory(c, &m));
    return m;
}

static const mf_plan_fix_row *fix_row(const mf_plan_fix_row *rows, size_t n, const char *fix)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].fix, fix) == 0) return &rows[i];
    ck_abort_msg("no fix row %s", fix);
    return NULL;
}

/* ---- parameter counts against published models ------------------------------------ */
START_TEST(test_param_counts_published)
{
    mf_plan_config c;
    /* Llama-2-7B: 32 x (4096, 11008), 32 heads, vocab 32000, untied: 6,738,415,616 */
    mf_plan_config_init(&c);
    c.layers = 32, c.d_model = 4096, c.d_ffn = 11008, c.heads = 32, c.vocab = 32000, c.gated_mlp = 1;
    ck_assert_int_eq(mf_plan_param_count(&c), 6738415616LL);
    /* Llama-3-8B: 14336, 8 KV heads, vocab 128256: 8,030,261,248 */
    c.d_ffn = 14336, c.kv_heads = 8, c.vocab = 128256;
    ck_assert_int_eq(mf_plan_param_count(&c), 8030261248LL);
    /* Pythia-70M (GPT-NeoX: LayerNorm, biases, untied, rotary): 70,426,624 */
    mf_plan_config_init(&c);
    c.layers = 6, c.d_model = 512, c.d_ffn = 2048, c.heads = 8, c.vocab = 50304, c.linear_bias = 1,
    c.layernorm = 1;
    ck_assert_int_eq(mf_plan_param_count(&c), 70426624LL);
    /* GPT-2 small's blocks are the same structure: 12 x 768, tied, 1024 learned
     * positions, vocab 50257: 124,439,808 */
    mf_plan_config_init(&c);
    c.vocab = 50257, c.max_positions = 1024, c.tied_embeddings = 1, c.linear_bias = 1, c.layernorm = 1;
    ck_assert_int_eq(mf_plan_param_count(&c), 124439808LL);
}
END_TEST

/* ---- activations: Korthikanti et al.'s sbh(34 + 5as/h) ---------------------------------- */
START_TEST(test_activation_formula_korthikanti)
{
    mf_plan_config c;
    mf_plan_config_init(&c);
    c.layers = 2, c.d_model = 1024, c.d_ffn = 4096, c.heads = 16, c.vocab = 1000, c.seq = 2048, c.batch = 3;
    c.dropout = 1, c.dtype = MF_DTYPE_BF16;
    mf_plan_memory m = plan_of(&c);
    const size_t s = 2048, b = 3, h = 1024, a = 16;
    ck_assert_uint_eq(m.act_layer_standard, s * b * h * 34 + 5 * a * s * s * b);
    /* tiled attention drops the 5as^2b term and keeps the logsumexp */
    ck_assert_uint_eq(m.act_layer_tiled, s * b * h * 34 + 4 * b * a * s);
    /* without dropout: the softmax output alone (2as^2b) and no masks (2sbh) */
    c.dropout = 0;
    m = plan_of(&c);
    ck_assert_uint_eq(m.act_layer_standard, s * b * h * 32 + 2 * a * s * s * b);
#ifdef MF_HAVE_HOST_KERNELS
    /* the scores term is mf_attention_theoretical_memory's standard_scores */
    mf_attention_memory_row row;
    MF_ASSERT_OK(mf_attention_theoretical_memory(3, 16, 2048, 64, 2, &row));
    ck_assert_uint_eq(m.act_layer_standard - m.act_layer_tiled + 4 * b * a * s, row.standard_scores);
#endif
    /* totals: L layers + final norm and LM head inputs; checkpointing keeps the
     * layer inputs and one layer */
    ck_assert_uint_eq(m.act_outside_layers, 2 * 2 * s * b * h);
    ck_assert_uint_eq(m.act_standard, 2 * m.act_layer_standard + m.act_outside_layers);
    ck_assert_uint_eq(m.act_ckpt_tiled, 2 * 2 * s * b * h + m.act_layer_tiled + m.act_outside_layers);
}
END_TEST

/* ---- seed 000 ---------------------------------------------------------------------------- */
START_TEST(test_preset_000)
{
    mf_plan_config c = preset_cfg("000");
    mf_plan_memory m = plan_of(&c);
    /* "37.09 GB per GPU (batch=1, seq=131k, vocab=151k, bfloat16)": exactly
     * 131072 x 151936 x 2 = 39,829,110,784 B = 37.09375 GiB */
    ck_assert_uint_eq(m.logits_bytes, 39829110784ULL);
    ck_assert_uint_eq(m.logits_bytes, mf_cross_entropy_logits_bytes(131072, 151936, MF_DTYPE_BF16));
    /* "~74 GB intermediate tensors (float32)" + 37.09 = "Total: 111 GB" */
    ck_assert_uint_eq(m.loss_naive, 39829110784ULL + 79658221568ULL);
    /* Qwen3-4B shapes: 4,022,468,096 parameters. The seed's "3.92B params" and
     * "8.72 GB" for them in bf16 disagree with each other (3.92e9 x 2 = 7.84 GB). */
    ck_assert_int_eq(m.params, 4022468096LL);
    ck_assert_uint_eq(m.weights_bytes, 8044936192ULL);
    ck_assert_uint_eq(m.optimizer_bytes, 12ULL * 4022468096ULL);
    /* hidden states 131072 x 2560 bf16 = 640 MiB ("+640 MB for hidden states") */
    ck_assert_uint_eq(m.act_outside_layers, 2ULL * 640 * 1024 * 1024);
#ifdef MF_HAVE_HOST_KERNELS
    /* the chunked loss in the default 1 GiB budget: C = 1765 rows */
    ck_assert_int_eq(m.loss_chunk_rows, 1765);
    ck_assert_uint_eq(m.loss_chunked, mf_cross_entropy_chunked_scratch_ceiling(131072, 151936, 1765));
    ck_assert_uint_lt(m.loss_chunked, (size_t)1 << 30 | 1);
    /* the fused variant: 8N + 16, no V, no budget, <= 2 MiB */
    ck_assert_uint_eq(m.loss_fused, 8ULL * 131072 + 16);
    ck_assert_uint_le(m.loss_fused, (size_t)2 << 20);
    /* the optimized total counts the smallest loss variant: the fused one */
    ck_assert_uint_eq(m.total_optimized_loss, m.loss_fused);
    ck_assert_uint_eq(m.total_optimized,
                      m.weights_gpu + m.grads_gpu + m.optimizer_gpu + m.act_ckpt_tiled + m.loss_fused);
#endif
    /* ZeRO over 2 GPUs (the seed's recommended FSDP run) */
    c.dp = 2;
    c.zero = 1;
    m = plan_of(&c);
    ck_assert_uint_eq(m.optimizer_gpu, 6ULL * 4022468096ULL);
    ck_assert_uint_eq(m.grads_gpu, 8044936192ULL);
    c.zero = 2;
    m = plan_of(&c);
    ck_assert_uint_eq(m.grads_gpu, 4022468096ULL);
    ck_assert_uint_eq(m.weights_gpu, 8044936192ULL);
    c.zero = 3;
    m = plan_of(&c);
    ck_assert_uint_eq(m.weights_gpu, 4022468096ULL);
    c.dp = 3; /* rounding up: ceil(8044936192 / 3) */
    m = plan_of(&c);
    ck_assert_uint_eq(m.weights_gpu, 2681645398ULL);

    /* per-fix rows: rope at the seed's shape (header: 269,484,544 B reference,
     * 64 MiB cache) */
    mf_plan_fix_row rows[MF_PLAN_MAX_FIX_ROWS];
    size_t n = 0;
    c = preset_cfg("000");
    MF_ASSERT_OK(mf_plan_fixes(&c, rows, &n));
    ck_assert_uint_eq(n, 3); /* cross_entropy, rope, attention: the model has no linear attention */
    ck_assert_uint_eq(fix_row(rows, n, "cross_entropy")->naive_bytes, 39829110784ULL);
    ck_assert_uint_eq(fix_row(rows, n, "rope")->naive_bytes, 269484544ULL);
#ifdef MF_HAVE_HOST_KERNELS
    ck_assert_uint_eq(fix_row(rows, n, "rope")->optimized_bytes, 67108864ULL);
    ck_assert_uint_eq(fix_row(rows, n, "attention")->optimized_bytes, 4ULL * 32 * 131072);
#endif
    ck_assert_uint_eq(fix_row(rows, n, "attention")->naive_bytes, 32ULL * 131072 * 131072 * 2);
}
END_TEST

/* ---- seed 001 ---------------------------------------------------------------------------- */
START_TEST(test_preset_001)
{
    mf_plan_fix_row rows[MF_PLAN_MAX_FIX_ROWS];
    size_t n = 0;
    mf_plan_config c = preset_cfg("001-1k");
    MF_ASSERT_OK(mf_plan_fixes(&c, rows, &n));
    const mf_plan_fix_row *nsa = fix_row(rows, n, "nsa");
    /* micro-batch 2, 12 heads, bf16. At s = 1024 a query sees 63 compressed
     * tokens ((1024-32)/16 + 1), 16 x 64 = 1024 selected and a 512 window:
     * 1599 keys, MORE than dense attention's 1024. */
    ck_assert_uint_eq(nsa->naive_bytes, 2ULL * 12 * 1024 * 1024 * 2);
    ck_assert_uint_eq(nsa->optimized_bytes, 2ULL * 12 * 1024 * 1599 * 2);
    ck_assert_uint_eq(nsa->optimized_bytes, 78594048ULL);
    ck_assert_ptr_nonnull(strstr(nsa->optimized_what, "k=1599 keys/query > N=1024"));
    {
        /* the nsa op's row: the formulas test_nsa_memory asserts */
        const mf_plan_fix_row *op = fix_row(rows, n, "nsa_op");
        const mf_nsa_config nc = mf_nsa_config_seed();
        ck_assert_uint_eq(op->naive_bytes, mf_ref_nsa_backward_scratch_bytes(&nc, 2, 1024, 12, 2, 64));
#ifdef MF_HAVE_HOST_KERNELS
        ck_assert_uint_eq(op->optimized_bytes, mf_nsa_backward_scratch_ceiling(&nc, 2, 1024, 12, 2, 64));
        ck_assert_uint_lt(op->optimized_bytes, op->naive_bytes);
#endif
    }
    /* "4096²: ~16M attention elements per head" is right: 16,777,216 */
    c = preset_cfg("001-4k");
    MF_ASSERT_OK(mf_plan_fixes(&c, rows, &n));
    nsa = fix_row(rows, n, "nsa");
    ck_assert_uint_eq(nsa->naive_bytes / (2ULL * 12 * 2), 16777216ULL);
    ck_assert_uint_eq(nsa->optimized_bytes, 2ULL * 12 * 4096 * (255 + 1024 + 512) * 2);
    {
        const mf_nsa_config nc = mf_nsa_config_seed(); /* l=32 d=16 l'=64 n=16 w=512 */
        ck_assert_uint_eq(mf_nsa_attended_scores_bytes(&nc, 1, 1, 16, 1), 16ULL * (0 + 16 + 16));
        ck_assert_uint_eq(mf_nsa_attended_scores_bytes(&nc, 0, 1, 16, 1), SIZE_MAX);
        ck_assert_uint_eq(mf_nsa_attended_scores_bytes(NULL, 1, 1, 16, 1), SIZE_MAX);
    }
    /* DDP over 2 GPUs without ZeRO: every GPU holds everything */
    mf_plan_memory m = plan_of(&c);
    ck_assert_uint_eq(m.weights_gpu, m.weights_bytes);
    ck_assert_uint_eq(m.optimizer_gpu, m.optimizer_bytes);
    ck_assert_uint_eq(m.logits_bytes, 2ULL * 4096 * 50304 * 2);
}
END_TEST

/* ---- seed 002 ---------------------------------------------------------------------------- */
START_TEST(test_preset_002)
{
    mf_plan_config full = preset_cfg("002-full"), capped = preset_cfg("002-10k");
    mf_plan_memory mf = plan_of(&full), mc = plan_of(&capped);
    /* Table "Memory Breakdown (Corrected)": token embeddings 10K x 512 = 5.1M
     * params (5,120,000), position embeddings 128 x 512 = 65K (65,536). Its
     * "Transformer Layers: 6 x 11M = 66M" and "Total: ~76M params -> 304MB"
     * disagree with its own shapes: a 512-wide layer with a 2048 FFN has
     * 3,152,384 parameters, so the capped model has 29,220,864 (116,883,456 B
     * in fp32), and the full-vocabulary one 70,492,160 -- Pythia-70M's size,
     * not the "~200M params" the document gives for a 50K vocabulary. */
    ck_assert_int_eq(mc.layer_params, 3152384);
    ck_assert_int_eq(mc.embedding_params, 2 * 5120000 + 65536);
    ck_assert_int_eq(mc.params, 29220864);
    ck_assert_uint_eq(mc.weights_bytes, 116883456ULL);
    ck_assert_uint_eq(mc.grads_bytes, 116883456ULL);
    ck_assert_uint_eq(mc.optimizer_bytes, 8ULL * 29220864); /* fp32: m and v only */
    ck_assert_int_eq(mf.params, 70492160);
    /* logits at batch 32 x 128: 4096 x V x 4 */
    ck_assert_uint_eq(mf.logits_bytes, 4096ULL * 50304 * 4);
    ck_assert_uint_eq(mc.logits_bytes, 4096ULL * 10000 * 4);
    ck_assert_uint_eq(mf.logits_bytes - mc.logits_bytes, 660340736ULL);
}
END_TEST

/* ---- seed 003 ---------------------------------------------------------------------------- */
START_TEST(test_preset_003)
{
    const mf_plan_preset *p = mf_plan_preset_find("003");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p->kind, MF_PLAN_PRESET_ATTENTION_SWEEP);
    /* through the CLI's JSON: the document's theoretical_memory table */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len), *err = fopen("/dev/null", "w");
    const char *argv[] = { "plan", "--preset", "003", "--json" };
    int rc = mf_cli_plan(4, (char **)argv, out, err);
    fclose(out);
    fclose(err);
#ifndef MF_HAVE_HOST_KERNELS
    ck_assert_int_eq(rc, MF_CLI_UNAVAILABLE); /* the table needs the ops' formulas */
#else
    ck_assert_int_eq(rc, MF_CLI_OK);
    cJSON *root = cJSON_Parse(text);
    ck_assert_ptr_nonnull(root);
    cJSON *rows = cJSON_GetObjectItem(root, "attention");
    ck_assert_int_eq(cJSON_GetArraySize(rows), 5); /* N = 512 .. 8192 */
    cJSON *last = cJSON_GetArrayItem(rows, 4);
    ck_assert_int_eq((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(last, "seq_len")), 8192);
    /* "4 x 8 x 8192^2 x 2 = 4.3 GB": right */
    ck_assert_uint_eq((size_t)cJSON_GetNumberValue(cJSON_GetObjectItem(last, "standard_scores")),
                      4294967296ULL);
    /* "4 x 8 x 64 x 64 x 2 = 2 MB": the product is 262,144 B = 0.26 MB */
    ck_assert_uint_eq((size_t)cJSON_GetNumberValue(cJSON_GetObjectItem(last, "linear_bidir_state")),
                      262144ULL);
    /* "4 x 8 x 8192 x 64 x 64 x 2 = 17 GB": the product is 2,147,483,648 B = 2.1 GB */
    ck_assert_uint_eq((size_t)cJSON_GetNumberValue(cJSON_GetObjectItem(last, "linear_causal_state")),
                      2147483648ULL);
    ck_assert_uint_eq((size_t)cJSON_GetNumberValue(cJSON_GetObjectItem(last, "tiled_backward_ceiling")),
                      mf_attention_tiled_backward_scratch_ceiling(4, 8, 8192));
    cJSON_Delete(root);
#endif
    free(text);
}
END_TEST

/* ---- seed 004 ---------------------------------------------------------------------------- */
START_TEST(test_preset_004)
{
    mf_plan_fix_row rows[MF_PLAN_MAX_FIX_ROWS];
    size_t n = 0;
    /* the document's example, 4 x 512 x 4096 x 11008 fp32: 369,367,187,456 B =
     * 344 GiB; the document says "~448 GB" */
    mf_plan_config c = preset_cfg("004-doc");
    MF_ASSERT_OK(mf_plan_fixes(&c, rows, &n));
    const mf_plan_fix_row *npt = fix_row(rows, n, "npt");
    ck_assert_uint_eq(npt->naive_bytes, 369367187456ULL);
    mf_npt_shape sh = { 4, 512, 4096, 11008, 16 };
    ck_assert_uint_eq(npt->naive_bytes, mf_npt_delta_w_bytes(MF_DTYPE_F32, sh));
    ck_assert_int_eq(mf_plan_param_count(&c), 6738415616LL);
    /* Llama-3-8B's d_ffn 14336 at the same batch: 481,036,337,152 B = exactly
     * 448 GiB -- the document's "~448 GB" matches this FFN width, not the
     * 11008 it states */
    c = preset_cfg("004");
    MF_ASSERT_OK(mf_plan_fixes(&c, rows, &n));
    npt = fix_row(rows, n, "npt");
    ck_assert_uint_eq(npt->naive_bytes, 481036337152ULL);
    ck_assert_uint_eq(npt->naive_bytes, 448ULL << 30);
    ck_assert_int_eq(mf_plan_param_count(&c), 8030261248LL);
#ifdef MF_HAVE_HOST_KERNELS
    mf_npt_shape sh8 = { 4, 512, 4096, 14336, 16 };
    ck_assert_uint_eq(npt->optimized_bytes, mf_npt_factored_forward_scratch_ceiling(MF_DTYPE_F32, sh8, NULL));
    ck_assert_uint_lt(npt->optimized_bytes, 1ULL << 20);
#endif
}
END_TEST

/* ---- bad input ---------------------------------------------------------------------------- */
START_TEST(test_bad_input)
{
    mf_plan_config c;
    mf_plan_memory m;
    mf_plan_fix_row rows[MF_PLAN_MAX_FIX_ROWS];
    size_t n;
    mf_plan_config_init(&c);
    MF_ASSERT_STATUS(mf_plan_training_memory(NULL, &m), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_plan_training_memory(&c, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_plan_fixes(&c, NULL, &n), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_plan_config_validate(NULL), MF_ERR_NULL_POINTER);
    c.layers = 0;
    MF_ASSERT_STATUS(mf_plan_training_memory(&c, &m), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "layers"));
    ck_assert_int_eq(mf_plan_param_count(&c), -1);
    mf_plan_config_init(&c);
    c.heads = 7; /* 768 % 7 != 0 and no head_dim */
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_SIZE);
    c.head_dim = 64;
    c.kv_heads = 2; /* 7 % 2 != 0 */
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_SIZE);
    mf_plan_config_init(&c);
    c.zero = 4;
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_ARGUMENT);
    mf_plan_config_init(&c);
    c.dtype = (mf_dtype)9;
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_DTYPE);
    mf_plan_config_init(&c);
    /* the ops' parameters: declared by a registered op, checked by its spec's rule */
    MF_ASSERT_STATUS(mf_plan_param_set(&c, "frobnicate", 1), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(mf_plan_param_set(NULL, "nsa", 1), MF_ERR_NULL_POINTER);
    ck_assert_int_eq(mf_plan_param_get(&c, "frobnicate"), 0);
    c.n_params = 1;
    c.params[0].name = "frobnicate";
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_ARGUMENT);
    c.n_params = MF_PLAN_MAX_PARAMS + 1;
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_SIZE);
#ifdef MF_HAVE_HOST_KERNELS
    mf_plan_config_init(&c);
    ck_assert_int_eq(mf_plan_param_get(&c, "ce_budget"), 1LL << 30); /* the spec's default */
    MF_ASSERT_OK(mf_plan_param_set(&c, "nsa", 2));
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "nsa must be 0 or 1"));
    MF_ASSERT_OK(mf_plan_param_set(&c, "nsa", 1)); /* replaces, does not add */
    ck_assert_uint_eq(c.n_params, 1);
    MF_ASSERT_OK(mf_plan_param_set(&c, "npt_rank", -1));
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "npt_rank"));
    ck_assert_ptr_nonnull(mf_plan_param_find("npt_rank"));
    ck_assert_ptr_null(mf_plan_param_find(NULL));
#endif
    mf_plan_config_init(&c);
    c.tied_embeddings = 2;
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_ARGUMENT);
    /* overflow: a vocabulary and width whose products exceed size_t */
    mf_plan_config_init(&c);
    c.vocab = INT64_MAX / 2;
    c.d_model = 1 << 20;
    c.heads = 1;
    MF_ASSERT_STATUS(mf_plan_training_memory(&c, &m), MF_ERR_OVERFLOW);
    ck_assert_int_eq(mf_plan_param_count(&c), -1);
    mf_plan_config_init(&c);
    c.seq = INT64_MAX / 2;
    c.batch = 4;
    MF_ASSERT_STATUS(mf_plan_training_memory(&c, &m), MF_ERR_OVERFLOW);
    MF_ASSERT_STATUS(mf_plan_fixes(&c, rows, &n), MF_ERR_OVERFLOW);
    ck_assert_ptr_null(mf_plan_preset_find("nope"));
    ck_assert_ptr_null(mf_plan_preset_find(NULL));
    /* the ops' row helpers: a full table, NULLs, an overflowing product */
    mf_plan_rows out = { rows, 1, 0 };
    MF_ASSERT_OK(mf_plan_row_add(&out, "a", "x", 1, "y", 2, "n=%d", 3));
    ck_assert_str_eq(rows[0].shape, "n=3");
    ck_assert_uint_eq(rows[0].optimized_bytes, 2);
    MF_ASSERT_STATUS(mf_plan_row_add(&out, "b", "x", 1, "y", 2, NULL), MF_ERR_OVERFLOW);
    ck_assert_uint_eq(out.n, 1);
    MF_ASSERT_STATUS(mf_plan_row_add(NULL, "b", "x", 1, "y", 2, NULL), MF_ERR_NULL_POINTER);
    const size_t big[] = { SIZE_MAX / 2, 3 }, small[] = { 6, 7 };
    ck_assert_uint_eq(mf_plan_product(2, big), SIZE_MAX);
    ck_assert_uint_eq(mf_plan_product(2, small), 42);
    ck_assert_uint_eq(mf_plan_product(1, NULL), SIZE_MAX);
}
END_TEST

/* ---- the command ---------------------------------------------------------------------------- */
typedef struct {
    int rc;
    char *out, *err;
} run_result;

static run_result run_plan(int argc, const char **argv)
{
    run_result r = { 0, NULL, NULL };
    size_t on = 0, en = 0;
    FILE *out = open_memstream(&r.out, &on), *err = open_memstream(&r.err, &en);
    r.rc = mf_cli_main(argc, (char **)argv, out, err);
    fclose(out);
    fclose(err);
    return r;
}
#define RUN(...)                                                                                             \
    run_plan((int)(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *)),                          \
             (const char *[]){ __VA_ARGS__ })

START_TEST(test_cli)
{
    run_result r = RUN("memfix", "plan", "--help");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "--preset"));
    free(r.out), free(r.err);

    r = RUN("memfix", "plan", "--list-presets");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    size_t np = 0;
    const mf_plan_preset *p = mf_plan_presets(&np);
    ck_assert_uint_ge(np, 8);
    for (size_t i = 0; i < np; i++) ck_assert_ptr_nonnull(strstr(r.out, p[i].name));
    free(r.out), free(r.err);

    /* table: the exact logits bytes appear */
    r = RUN("memfix", "plan", "--preset", "000");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "39829110784 (37.09 GiB)"));
#ifdef MF_HAVE_HOST_KERNELS
    { /* the fused loss's scratch (<= 2 MiB) on the line after the chunked one */
        const char *ch = strstr(r.out, "loss, chunked");
        ck_assert_ptr_nonnull(ch);
        const char *fu = strstr(ch, "\n  loss, fused");
        ck_assert_ptr_nonnull(fu);
        ck_assert_ptr_eq(fu, strchr(ch, '\n'));
        ck_assert_ptr_nonnull(strstr(fu, "1048592 (1.00 MiB)"));
    }
#endif
    free(r.out), free(r.err);

    /* JSON, with options overriding the preset */
    r = RUN("memfix", "plan", "--dp", "2", "--preset=000", "--zero=3", "--json");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    cJSON *root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    cJSON *mem = cJSON_GetObjectItem(root, "memory");
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(mem, "logits_bytes")), 39829110784.0);
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(mem, "weights_gpu")), 4022468096.0);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(root, "preset")), "000");
    ck_assert(cJSON_GetArraySize(cJSON_GetObjectItem(root, "fixes")) == 3);
    cJSON_Delete(root);
    free(r.out), free(r.err);

    /* a custom config (Llama-3-8B) through flags */
    r = RUN("memfix", "plan", "--layers", "32", "--d-model", "4096", "--d-ffn", "14336", "--heads", "32",
            "--kv-heads", "8", "--vocab", "128256", "--gated", "1", "--tied", "0", "--dtype", "bf16", "--seq",
            "8192", "--json");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    mem = cJSON_GetObjectItem(root, "memory");
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(mem, "params")), 8030261248.0);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(root, "preset")));
    cJSON_Delete(root);
    free(r.out), free(r.err);

    /* usage errors */
    r = RUN("memfix", "plan", "--preset", "nope");
    ck_assert_int_eq(r.rc, MF_CLI_USAGE);
    ck_assert_ptr_nonnull(strstr(r.err, "unknown preset 'nope'"));
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--layers", "x");
    ck_assert_int_eq(r.rc, MF_CLI_USAGE);
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--dtype", "f16");
    ck_assert_int_eq(r.rc, MF_CLI_USAGE);
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--zero", "5");
    ck_assert_int_eq(r.rc, MF_CLI_USAGE);
    ck_assert_ptr_nonnull(strstr(r.err, "zero"));
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--frobnicate");
    ck_assert_int_eq(r.rc, MF_CLI_USAGE);
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--seq");
    ck_assert_int_eq(r.rc, MF_CLI_USAGE);
    free(r.out), free(r.err);
}
END_TEST

/* The corrected seed figures say so, next to the figure, with what the document
 * says; an optimized scratch larger than the naive bytes is flagged. */
START_TEST(test_cli_seed_notes_and_exceeds)
{
    run_result r = RUN("memfix", "plan", "--preset", "004-doc");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "369367187456 (344.00 GiB)"));
    ck_assert_ptr_nonnull(strstr(r.out, "^ naive: corrected: seed 004 says \"~448 GB\""));
    /* f32: the 1 GiB budget exceeds the 250 MiB of logits: the chunked tile is
     * capped at them (2 chunks of 2047 rows) and said so; nothing exceeds them */
    ck_assert_ptr_nonnull(strstr(r.out, "fp32 tile, C=2047 rows (2 chunks, capped at logits)"));
    ck_assert_ptr_nonnull(strstr(r.out, "^ the naive logits are already smaller than the budget"));
    ck_assert_ptr_null(strstr(r.out, "exceeds the logits"));
    free(r.out), free(r.err);

    r = RUN("memfix", "plan", "--preset", "000");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    const char *w = strstr(r.out, "\n  weights ");
    ck_assert_ptr_nonnull(w);
    const char *next = strchr(w + 1, '\n');
    ck_assert_ptr_nonnull(
        strstr(next, "^ corrected: seed 000 says \"8.72 GB\" for 3.92B bf16 params, which is 7.84 GB"));
    ck_assert_ptr_nonnull(strstr(r.out, "seed 000 says \"3.92B params\""));
    ck_assert_ptr_null(strstr(r.out, "exceeds the naive")); /* 1 GiB tile vs 37 GiB of logits */
    free(r.out), free(r.err);

    r = RUN("memfix", "plan", "--preset", "001-1k");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "\"~95.3M parameters\""));
    ck_assert_ptr_nonnull(strstr(r.out, "111.8M"));
    /* NSA at 1k sees 1599 keys > 1024: flagged */
    ck_assert_ptr_nonnull(strstr(r.out, "more keys through NSA's branches"));
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--preset", "002-10k");
    ck_assert_ptr_nonnull(strstr(r.out, "\"6 x 11M = 66M\""));
    ck_assert_ptr_nonnull(strstr(r.out, "3,152,384"));
    free(r.out), free(r.err);

    /* no preset: CE's fp32 tile was 196.5 MiB, twice the bf16 logits (98.25 MiB);
     * now it is capped at them: C = 511 rows, 98.06 MiB, said so */
    r = RUN("memfix", "plan");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "103022592 (98.25 MiB)"));
    ck_assert_ptr_nonnull(strstr(r.out, "C=511 rows (3 chunks, capped at logits)     102825488 (98.06 MiB)"));
    ck_assert_ptr_null(strstr(r.out, "206049296 (196.50 MiB)"));
    ck_assert_ptr_nonnull(strstr(r.out, "^ the naive logits are already smaller than the budget"));
    ck_assert_ptr_null(strstr(r.out, "corrected")); /* no preset, no seed figure */
    free(r.out), free(r.err);

    r = RUN("memfix", "plan", "--json");
    cJSON *root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    cJSON *fixes = cJSON_GetObjectItem(root, "fixes");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(fixes, 0), "optimized_exceeds_naive")));
    ck_assert(
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "memory"), "loss_capped_by_logits")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(fixes, 2), "optimized_exceeds_naive")));
    cJSON_Delete(root);
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--preset", "004-doc", "--json");
    root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    ck_assert_ptr_nonnull(
        strstr(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "seed_notes"), "npt")),
               "~448 GB"));
    cJSON_Delete(root);
    free(r.out), free(r.err);
}
END_TEST

/* Lists for sweeps: seed 000's table (logits, method) in one run. */
START_TEST(test_cli_sweep)
{
    run_result r =
        RUN("memfix", "plan", "--preset", "000", "--seq", "4096,40000,131072", "--ce-budget", "10737418240");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    /* the document: 1.16 GB standard, 11.32 GB chunked, 37.09 GB chunked */
    /* 4096: the logits are below the budget; memfix caps the tile at them */
    ck_assert_ptr_nonnull(strstr(r.out, "1244659712 (1.16 GiB)  capped: 3 x 2047"));
    ck_assert_ptr_nonnull(strstr(r.out, "12154880000 (11.32 GiB)  chunked: 3 x 17667"));
    ck_assert_ptr_nonnull(strstr(r.out, "39829110784 (37.09 GiB)  chunked: 8 x 17666"));
    ck_assert_ptr_null(
        strstr(r.out, "* the chunked loss's scratch exceeds the logits")); /* capped at the logits */
    ck_assert_ptr_nonnull(strstr(r.out, "1048592 (1.00 MiB)"));            /* the fused column at 131072 */
    free(r.out), free(r.err);
    /* one token: the logits cannot hold one fp32 row plus 4N + 16: still flagged */
    r = RUN("memfix", "plan", "--preset", "000", "--seq", "1,2");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(
        strstr(r.out, "exceeds the logits it replaces: the logits are too small to hold one fp32 row"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"8.72 GB\""));
    free(r.out), free(r.err);

    r = RUN("memfix", "plan", "--preset", "000", "--seq=4096,131072", "--json");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    cJSON *root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(root, "sweep")), "--seq");
    cJSON *plans = cJSON_GetObjectItem(root, "plans");
    ck_assert_int_eq(cJSON_GetArraySize(plans), 2);
    cJSON *mem = cJSON_GetObjectItem(cJSON_GetArrayItem(plans, 1), "memory");
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(mem, "logits_bytes")), 39829110784.0);
    cJSON_Delete(root);
    free(r.out), free(r.err);

    /* a list on a 0|1 flag, two lists, a bad item, a list for the 003 sweep */
    const char *bad[][4] = { { "--tied", "0,1", NULL, NULL },      { "--seq", "1,2", "--batch", "3,4" },
                             { "--seq", "1,,2", NULL, NULL },      { "--seq", "1,x", NULL, NULL },
                             { "--ce-budget", "1,0", NULL, NULL }, { "--preset", "003", "--seq", "1,2" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = bad[i][2] ? RUN("memfix", "plan", bad[i][0], bad[i][1], bad[i][2], bad[i][3])
                      : RUN("memfix", "plan", bad[i][0], bad[i][1]);
        ck_assert_msg(r.rc == MF_CLI_USAGE, "case %zu: rc %d", i, r.rc);
        ck_assert_msg(r.err[0] != '\0', "case %zu: no message", i);
        free(r.out), free(r.err);
    }
}
END_TEST

Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("formulas");
    tcase_add_test(tc, test_param_counts_published);
    tcase_add_test(tc, test_activation_formula_korthikanti);
    tcase_add_test(tc, test_preset_000);
    tcase_add_test(tc, test_preset_001);
    tcase_add_test(tc, test_preset_002);
    tcase_add_test(tc, test_preset_003);
    tcase_add_test(tc, test_preset_004);
    tcase_add_test(tc, test_bad_input);
    suite_add_tcase(s, tc);
    tc = tcase_create("command");
    tcase_add_test(tc, test_cli);
    tcase_add_test(tc, test_cli_seed_notes_and_exceeds);
    tcase_add_test(tc, test_cli_sweep);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(plan_suite()); }
