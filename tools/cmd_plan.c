/* `memfix plan`: memory arithmetic for a configuration, before launching a job.
 * The numbers come from include/memfix/plan.h (src/plan/plan.c), which takes
 * every per-fix row, and the options beyond the model's shape, from the
 * registered ops' descriptors. */
#define _POSIX_C_SOURCE 200809L
#include "memfix_cli.h"

#include "memfix/attention.h"
#include "memfix/linear_attention.h"
#include "memfix/memfix.h"
#include "memfix/plan.h"
#include "memfix/registry.h"

#include <cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Calls fn for every registered op's plan parameter, in registry order. */
static void for_each_param(void (*fn)(const mf_plan_param_spec *spec, void *arg), void *arg)
{
    size_t n = 0;
    const mf_op_desc *const *ops = mf_registry(&n);
    for (size_t i = 0; i < n; i++) {
        const mf_op_plan *p = ops[i] ? ops[i]->plan : NULL;
        for (int k = 0; p != NULL && k < p->n_params; k++) fn(&p->params[k], arg);
    }
}

static void help_param(const mf_plan_param_spec *spec, void *arg)
{
    char opt[64];
    snprintf(opt, sizeof opt, "%s %s", spec->option, spec->arg);
    if (strlen(opt) > 18) /* the option on a line of its own, its help under it */
        fprintf((FILE *)arg, "  %s\n  %-18s %s\n", opt, "", spec->help);
    else
        fprintf((FILE *)arg, "  %-18s %s\n", opt, spec->help);
}

void mf_cli_plan_help(FILE *out)
{
    fprintf(out, "usage: memfix plan [--preset NAME] [model and step options] [--json]\n"
                 "       memfix plan --list-presets\n"
                 "\n"
                 "Memory arithmetic for a decoder-only transformer training step, per GPU, from\n"
                 "the same formula functions the memory tests assert:\n"
                 "  - per fix, the bytes of the big intermediate the naive code materializes and\n"
                 "    the optimized implementation's scratch ceiling, as each registered op plans\n"
                 "    it (some only when their option below asks);\n"
                 "  - parameters, gradients and AdamW states (mixed precision: 12 bytes of fp32\n"
                 "    master weights and moments per parameter for bf16, 8 for fp32), sharded by\n"
                 "    ZeRO stage 1/2/3 over --dp GPUs;\n"
                 "  - activations per layer (Korthikanti et al. 2022's count, generalized) with\n"
                 "    standard or tiled attention, with and without full checkpointing;\n"
                 "  - logits and loss: naive (logits + F.cross_entropy's fp32 copy) vs chunked vs fused;\n"
                 "  - three totals: naive (standard attention, no checkpointing, naive loss),\n"
                 "    optimized (tiled, checkpointing, the smallest loss) and as configured.\n"
                 "A preset fills every option; options given after it override its values.\n"
                 "One integer option may take a comma-separated list (a sweep): the plan once per\n"
                 "value, as one table (--json: one object with a \"plans\" array), e.g.\n"
                 "  memfix plan --preset 000 --seq 4096,40000,131072 --ce-budget 10737418240\n"
                 "Figures that correct a seed document's are marked \"corrected\" with what the\n"
                 "document says; a fix whose optimized scratch exceeds the naive bytes is flagged.\n"
                 "Bytes are exact; GiB = 2^30 bytes.\n"
                 "\n"
                 "options:\n"
                 "  --preset NAME      a seed document's case (see --list-presets)\n"
                 "  --list-presets     list the presets and exit\n"
                 "  --layers N  --d-model N  --d-ffn N  --heads N\n"
                 "  --kv-heads N       key/value heads (default: heads)\n"
                 "  --head-dim N       (default: d-model / heads)\n"
                 "  --vocab N          vocabulary\n"
                 "  --max-positions N  learned position embeddings (default 0: RoPE)\n"
                 "  --tied 0|1         tied input/output embeddings\n"
                 "  --gated 0|1        SwiGLU MLP (3 matrices) instead of GELU (2)\n"
                 "  --bias 0|1         biases on the linear layers\n"
                 "  --layernorm 0|1    LayerNorm (weight and bias) instead of RMSNorm\n"
                 "  --qk-norm 0|1      per-head RMSNorm of q and k (Qwen3)\n"
                 "  --dropout 0|1      count dropout masks in the activations\n"
                 "  --batch N          micro-batch sequences per GPU\n"
                 "  --seq N            tokens per sequence\n"
                 "  --dtype f32|bf16   weights, gradients and activations\n"
                 "  --dp N             data-parallel degree (GPUs)\n"
                 "  --zero 0..3        ZeRO stage: 1 shards optimizer states, 2 + gradients,\n"
                 "                     3 + weights\n"
                 "  --attention tiled|standard\n"
                 "                     how the step keeps attention (default tiled: the\n"
                 "                     logsumexp; standard: the N x N softmax output per layer)\n"
                 "  --ckpt 0|1         full activation checkpointing (default 0)\n"
                 "  --loss naive|chunked|fused\n"
                 "                     the step's loss (default naive: the logits and\n"
                 "                     F.cross_entropy's fp32 copy)\n"
                 "  --gpu-mem SIZE     does the step, as configured by the three options above,\n"
                 "                     fit one GPU of SIZE, and if not, which changes make it fit\n"
                 "                     (in order of cost: tiled attention, the fused loss,\n"
                 "                     checkpointing, ZeRO and more GPUs, a smaller micro-batch,\n"
                 "                     a shorter sequence), each with the total it gives. SIZE:\n"
                 "                     bytes, or a number with a unit: 80GB (80 x 10^9), 80GiB or\n"
                 "                     80G (80 x 2^30); B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, K,\n"
                 "                     M, G, T, any case. An \"80 GB\" A100 or H100 has 80 GiB\n"
                 "                     (81,920 MiB): --gpu-mem 80GiB; nvidia-smi's memory.total\n"
                 "                     is in MiB: --gpu-mem 143771MiB for an H200\n");
    for_each_param(help_param, out);
    fprintf(out, "  --json             print one JSON object instead of tables\n"
                 "  -h, --help         this help\n"
                 "\n"
                 "exit status: 0 success, 2 usage error or invalid configuration.\n");
}

static void list_presets(FILE *out)
{
    size_t n = 0;
    const mf_plan_preset *p = mf_plan_presets(&n);
    for (size_t i = 0; i < n; i++) fprintf(out, "  %-9s %s\n", p[i].name, p[i].summary);
}

static int parse_i64(const char *s, int64_t *out)
{
    if (s == NULL || *s == '\0') return 0;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') return 0;
    *out = (int64_t)v;
    return 1;
}

/* Prints root (then frees it): MF_CLI_OK, or MF_CLI_UNAVAILABLE when it cannot be printed. */
static int print_json(cJSON *root, FILE *out)
{
    return mf_cli_print_json(out, root) ? MF_CLI_OK : MF_CLI_UNAVAILABLE;
}

static void add_bytes(cJSON *o, const char *key, size_t b)
{
    if (b == SIZE_MAX)
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddNumberToObject(o, key, (double)b);
}

/* ---- the seed 003 sweep -------------------------------------------------------------- */
static int attention_sweep(const mf_plan_preset *p, const mf_plan_config *cfg, int json, FILE *out, FILE *err)
{
#ifdef MF_HAVE_HOST_KERNELS
    const int64_t B = cfg->batch, H = cfg->heads, D = mf_plan_head_dim(cfg);
    const size_t e = 2; /* fp16, as the document */
    cJSON *arr = json ? cJSON_CreateArray() : NULL;
    if (!json) {
        fprintf(out, "attention memory (seed 003's theoretical_memory, fp16, B=%lld H=%lld D=%lld), bytes:\n",
                (long long)B, (long long)H, (long long)D);
        fprintf(out, "%6s  %14s  %14s  %14s  %12s  %16s  %14s  %12s  %14s\n", "N", "inputs", "std scores",
                "std peak", "bidir state", "causal cumsum", "causal peak", "tiled bwd", "chunked bwd");
    }
    for (int64_t N = 512; N <= 8192; N *= 2) {
        mf_attention_memory_row r;
        mf_status s = mf_attention_theoretical_memory(B, H, N, D, e, &r);
        if (s != MF_OK) {
            fprintf(err, "memfix plan: %s\n", mf_last_error());
            cJSON_Delete(arr);
            return MF_CLI_USAGE;
        }
        size_t tiled = mf_attention_tiled_backward_scratch_ceiling(B, H, N);
        size_t chunked = mf_linear_attention_scratch_ceiling(1, 1, B, H, N, D, D);
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(arr, o);
            cJSON_AddNumberToObject(o, "seq_len", (double)N);
            add_bytes(o, "inputs", r.inputs);
            add_bytes(o, "standard_scores", r.standard_scores);
            add_bytes(o, "standard_peak", r.standard_peak);
            add_bytes(o, "linear_bidir_state", r.linear_bidir_state);
            add_bytes(o, "linear_bidir_peak", r.linear_bidir_peak);
            add_bytes(o, "linear_causal_state", r.linear_causal_state);
            add_bytes(o, "linear_causal_peak", r.linear_causal_peak);
            add_bytes(o, "tiled_backward_ceiling", tiled);
            add_bytes(o, "linear_chunked_backward_ceiling", chunked);
        } else {
            fprintf(out, "%6lld  %14zu  %14zu  %14zu  %12zu  %16zu  %14zu  %12zu  %14zu\n", (long long)N,
                    r.inputs, r.standard_scores, r.standard_peak, r.linear_bidir_state, r.linear_causal_state,
                    r.linear_causal_peak, tiled, chunked);
        }
    }
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "preset", p->name);
        cJSON_AddNumberToObject(root, "batch", (double)B);
        cJSON_AddNumberToObject(root, "heads", (double)H);
        cJSON_AddNumberToObject(root, "head_dim", (double)D);
        cJSON_AddNumberToObject(root, "elem_bytes", (double)e);
        cJSON_AddItemToObject(root, "attention", arr);
        return print_json(root, out);
    } else if (B == 4 && H == 8 && D == 64) {
        fprintf(out,
                "\nThe document's prose says the bidirectional KV state is \"2 MB\" and the causal\n"
                "cumulative state at N=8192 \"17 GB\"; its own formula gives %zu B (0.26 MB) and\n"
                "2,147,483,648 B (2.1 GB). The N=8192 scores, 4.3 GB, are right.\n",
                (size_t)B * (size_t)H * (size_t)D * (size_t)D * e);
    }
    return MF_CLI_OK;
#else
    (void)p;
    (void)cfg;
    (void)json;
    (void)out;
    fprintf(err, "memfix plan: the attention sweep needs the op formulas of a build with kernels\n");
    return MF_CLI_UNAVAILABLE;
#endif
}

/* ---- what the seed documents say, next to the corrected figure ----------------------- */
/* The note for a figure of a preset whose seed document states a different value
 * (docs/plan.md, "Where the documents' figures disagree with their shapes"), or
 * NULL. 'what': "parameters", "weights", "npt". A preset matches a row naming
 * it exactly or, for a row ending in '*', by that prefix; the first match wins. */
static const struct {
    const char *preset, *what, *note;
} seed_notes[] = {
    { "000", "parameters",
      "corrected: seed 000 says \"3.92B params\"; Qwen3-4B's shapes (d_model 2560 as the seed implies) give "
      "4.02B" },
    { "000", "weights",
      "corrected: seed 000 says \"8.72 GB\" for 3.92B bf16 params, which is 7.84 GB (3.92e9 x 2 B); these "
      "shapes "
      "give 7.49 GiB" },
    { "001*", "parameters",
      "corrected: seed 001 says \"~95.3M parameters\"; its stated dimensions (12 x 768, vocab 50,304, tied; "
      "FFN 4 x "
      "768 assumed) give 111.8M" },
    { "002-10k", "parameters",
      "corrected: seed 002 says \"6 x 11M = 66M\" for the layers and \"~76M params\"; a 512-wide layer with "
      "a 2048 "
      "FFN has 3,152,384, so 29.2M in all" },
    { "002*", "parameters",
      "corrected: seed 002 says \"~200M params\" with a 50K vocabulary and \"6 x 11M\" for the layers; a "
      "layer has "
      "3,152,384, so 70.5M (Pythia-70M's size)" },
    { "004-doc", "npt",
      "corrected: seed 004 says \"~448 GB\" for this shape; 4 x 512 x 4096 x 11008 fp32 is 344 GiB (448 GiB "
      "is d_ffn "
      "14336: preset 004)" },
    { "004", "npt",
      "seed 004's \"~448 GB\" is this shape's figure (448 GiB), not its 4096 x 11008 example's (344 GiB: "
      "preset "
      "004-doc)" },
};

static const char *seed_note(const char *preset, const char *what)
{
    if (preset == NULL) return NULL;
    for (size_t i = 0; i < sizeof seed_notes / sizeof seed_notes[0]; i++) {
        const char *p = seed_notes[i].preset;
        const size_t len = strlen(p);
        const int match = p[len - 1] == '*' ? strncmp(preset, p, len - 1) == 0 : strcmp(preset, p) == 0;
        if (match && strcmp(what, seed_notes[i].what) == 0) return seed_notes[i].note;
    }
    return NULL;
}

/* Why an optimized scratch can exceed the naive bytes it replaces: the op's reason or this. */
static const char *exceeds_reason(const char *why)
{
    return why ? why : "the fix pays off only at larger shapes";
}

static int exceeds_naive(const mf_plan_fix_row *r)
{
    return r->naive_bytes != SIZE_MAX && r->optimized_bytes != SIZE_MAX &&
           r->optimized_bytes > r->naive_bytes;
}

/* ---- model output ---------------------------------------------------------------------- */
/* The names of --attention's and --loss's values, indexed by the enums. */
static const char *const attention_names[] = { "tiled", "standard" };
static const char *const loss_names[] = { "naive", "chunked", "fused" };

/* A struct's fields as --json members, in table order: 'i' an int64_t, 'b'
 * bytes (a size_t; null for SIZE_MAX), 'n' an int, 'f' an int flag (a bool),
 * 'd' an mf_dtype, 'a' an mf_plan_attention, 'l' an mf_plan_loss (their names). */
typedef struct {
    const char *key;
    char kind;
    size_t offset;
} json_field;

static void add_fields(cJSON *o, const void *base, const json_field *fields, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *f = (const char *)base + fields[i].offset;
        int64_t i64;
        size_t bytes;
        int iv;
        mf_dtype dt;
        mf_plan_attention at;
        mf_plan_loss lo;
        switch (fields[i].kind) {
        case 'i':
            memcpy(&i64, f, sizeof i64);
            cJSON_AddNumberToObject(o, fields[i].key, (double)i64);
            break;
        case 'b':
            memcpy(&bytes, f, sizeof bytes);
            add_bytes(o, fields[i].key, bytes);
            break;
        case 'n':
            memcpy(&iv, f, sizeof iv);
            cJSON_AddNumberToObject(o, fields[i].key, iv);
            break;
        case 'f':
            memcpy(&iv, f, sizeof iv);
            cJSON_AddBoolToObject(o, fields[i].key, iv);
            break;
        case 'a':
            memcpy(&at, f, sizeof at);
            cJSON_AddStringToObject(o, fields[i].key, attention_names[at]);
            break;
        case 'l':
            memcpy(&lo, f, sizeof lo);
            cJSON_AddStringToObject(o, fields[i].key, loss_names[lo]);
            break;
        default:
            memcpy(&dt, f, sizeof dt);
            cJSON_AddStringToObject(o, fields[i].key, mf_dtype_name(dt));
            break;
        }
    }
}

/* The model's and the step's options: each one's CLI name and kind (0:
 * int64 field, 1: int flag, no list; 2: bytes > 0; 3: parsed by name among
 * the command's own options: --dtype, --attention, --loss), and its --json
 * "config" member, in the JSON's order. */
typedef struct {
    const char *name;
    int kind;
    size_t offset;
    const mf_plan_param_spec *param; /* an op's parameter instead of a field */
    json_field json;
} plan_opt;

#define OPT(name, kind, jkind, field)                                                                        \
    {                                                                                                        \
        name, kind, offsetof(mf_plan_config, field), NULL,                                                   \
        {                                                                                                    \
#field, jkind, offsetof(mf_plan_config, field)                                                   \
        }                                                                                                    \
    }
static const plan_opt model_opts[] = {
    OPT("--layers", 0, 'i', layers),
    OPT("--d-model", 0, 'i', d_model),
    OPT("--d-ffn", 0, 'i', d_ffn),
    OPT("--heads", 0, 'i', heads),
    OPT("--kv-heads", 0, 'i', kv_heads),
    OPT("--head-dim", 0, 'i', head_dim),
    OPT("--vocab", 0, 'i', vocab),
    OPT("--max-positions", 0, 'i', max_positions),
    OPT("--tied", 1, 'f', tied_embeddings),
    OPT("--gated", 1, 'f', gated_mlp),
    OPT("--bias", 1, 'f', linear_bias),
    OPT("--layernorm", 1, 'f', layernorm),
    OPT("--qk-norm", 1, 'f', qk_norm),
    OPT("--dropout", 1, 'f', dropout),
    OPT("--batch", 0, 'i', batch),
    OPT("--seq", 0, 'i', seq),
    OPT("--dtype", 3, 'd', dtype),
    OPT("--dp", 0, 'i', dp),
    OPT("--zero", 1, 'n', zero),
    OPT("--attention", 3, 'a', attention),
    OPT("--ckpt", 1, 'f', checkpointing),
    OPT("--loss", 3, 'l', loss),
};
#undef OPT
#define MEM(kind, field)                                                                                     \
    {                                                                                                        \
#field, kind, offsetof(mf_plan_memory, field)                                                        \
    }
static const json_field memory_fields[] = {
    MEM('i', params),
    MEM('i', embedding_params),
    MEM('i', layer_params),
    MEM('b', weights_bytes),
    MEM('b', grads_bytes),
    MEM('b', optimizer_bytes),
    MEM('b', weights_gpu),
    MEM('b', grads_gpu),
    MEM('b', optimizer_gpu),
    MEM('b', act_layer_standard),
    MEM('b', act_layer_tiled),
    MEM('b', act_outside_layers),
    MEM('b', act_standard),
    MEM('b', act_tiled),
    MEM('b', act_ckpt_standard),
    MEM('b', act_ckpt_tiled),
    MEM('b', logits_bytes),
    MEM('b', loss_naive),
    MEM('b', loss_chunked),
    MEM('i', loss_chunk_rows),
    MEM('f', loss_capped_by_logits),
    MEM('b', loss_fused),
    MEM('b', total_naive),
    MEM('b', total_optimized_loss),
    MEM('b', total_optimized),
    MEM('b', loss_configured),
    MEM('b', total),
};
#undef MEM

typedef struct {
    cJSON *obj;
    const mf_plan_config *cfg;
} json_params_arg;

/* An op parameter in --json's config: a bool for a 0|1 flag, else a number. */
static void json_param(const mf_plan_param_spec *spec, void *arg)
{
    const json_params_arg *a = arg;
    const int64_t v = mf_plan_param_get(a->cfg, spec->name);
    if (spec->kind == MF_PLAN_PARAM_FLAG)
        cJSON_AddBoolToObject(a->obj, spec->name, v != 0);
    else
        cJSON_AddNumberToObject(a->obj, spec->name, (double)v);
}

/* fit: memfix plan --gpu-mem's verdict (NULL without the option) */
static cJSON *model_json(const char *preset, const mf_plan_config *c, const mf_plan_memory *m,
                         const mf_plan_fix_row *rows, size_t n_rows, const mf_plan_fit *fit)
{
    cJSON *root = cJSON_CreateObject();
    if (preset)
        cJSON_AddStringToObject(root, "preset", preset);
    else
        cJSON_AddNullToObject(root, "preset");
    cJSON *cfg = cJSON_AddObjectToObject(root, "config");
    mf_plan_config resolved = *c; /* kv_heads and head_dim as used, not 0 */
    resolved.kv_heads = mf_plan_kv_heads(c);
    resolved.head_dim = mf_plan_head_dim(c);
    for (size_t i = 0; i < sizeof model_opts / sizeof model_opts[0]; i++)
        add_fields(cfg, &resolved, &model_opts[i].json, 1);
    json_params_arg jp = { cfg, c };
    for_each_param(json_param, &jp);
    cJSON *mem = cJSON_AddObjectToObject(root, "memory");
    add_fields(mem, m, memory_fields, sizeof memory_fields / sizeof memory_fields[0]);
    mf_cli_plan_fit_json(root, fit);
    cJSON *fixes = cJSON_AddArrayToObject(root, "fixes");
    for (size_t i = 0; i < n_rows; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(fixes, o);
        cJSON_AddStringToObject(o, "fix", rows[i].fix);
        cJSON_AddStringToObject(o, "shape", rows[i].shape);
        cJSON_AddStringToObject(o, "naive", rows[i].naive_what);
        add_bytes(o, "naive_bytes", rows[i].naive_bytes);
        cJSON_AddStringToObject(o, "optimized", rows[i].optimized_what);
        add_bytes(o, "optimized_bytes", rows[i].optimized_bytes);
        cJSON_AddBoolToObject(o, "optimized_exceeds_naive", exceeds_naive(&rows[i]));
        const char *note = strcmp(rows[i].fix, "npt") == 0 ? seed_note(preset, "npt") : NULL;
        if (note) cJSON_AddStringToObject(o, "seed_note", note);
    }
    /* the seed document's figures that the computed values correct */
    cJSON *notes = cJSON_AddObjectToObject(root, "seed_notes");
    static const char *const what[] = { "parameters", "weights", "npt" };
    for (size_t i = 0; i < sizeof what / sizeof what[0]; i++) {
        const char *note = seed_note(preset, what[i]);
        if (note) cJSON_AddStringToObject(notes, what[i], note);
    }
    return root;
}

static void print_model_table(const char *preset, const mf_plan_config *c, const mf_plan_memory *m,
                              const mf_plan_fix_row *rows, size_t n_rows, const mf_plan_fit *fit, FILE *out)
{
    char b1[64], b2[64], label[96], step[96];
    const int64_t kv = mf_plan_kv_heads(c), dh = mf_plan_head_dim(c);
    fprintf(out,
            "plan%s%s: %lld layers, d_model %lld, d_ffn %lld (%s), heads %lld/%lld x %lld, vocab %lld%s\n",
            preset ? " " : "", preset ? preset : "", (long long)c->layers, (long long)c->d_model,
            (long long)c->d_ffn, c->gated_mlp ? "gated" : "2-matrix", (long long)c->heads, (long long)kv,
            (long long)dh, (long long)c->vocab, c->tied_embeddings ? " (tied)" : "");
    fprintf(out, "step per GPU: batch %lld x seq %lld = %lld tokens, %s, dp %lld, ZeRO %d, %s\n\n",
            (long long)c->batch, (long long)c->seq, (long long)(c->batch * c->seq), mf_dtype_name(c->dtype),
            (long long)c->dp, c->zero, mf_cli_plan_step_name(step, sizeof step, c));

    fprintf(out, "per fix: the big intermediate, naive vs optimized (bytes)\n");
    fprintf(out, "  %-16s  %-44s  %-34s  %26s  %-36s  %24s\n", "fix", "shape", "naive materializes", "naive",
            "optimized", "optimized");
    for (size_t i = 0; i < n_rows; i++) {
        fprintf(out, "  %-16s  %-44s  %-34s  %26s  %-36s  %24s\n", rows[i].fix, rows[i].shape,
                rows[i].naive_what, mf_cli_bytes(b1, sizeof b1, rows[i].naive_bytes), rows[i].optimized_what,
                mf_cli_bytes(b2, sizeof b2, rows[i].optimized_bytes));
        const char *note = strcmp(rows[i].fix, "npt") == 0 ? seed_note(preset, "npt") : NULL;
        if (note) fprintf(out, "  %-16s  ^ naive: %s\n", "", note);
        if (exceeds_naive(&rows[i]))
            fprintf(out, "  %-16s  ^ optimized exceeds the naive bytes it replaces here (%.2fx): %s\n", "",
                    (double)rows[i].optimized_bytes / (double)rows[i].naive_bytes,
                    exceeds_reason(rows[i].exceeds_why));
    }

    fprintf(out, "\ntraining memory per GPU (bytes)\n");
    fprintf(out, "  %-44s  %lld (embeddings %lld, per layer %lld)\n", "parameters", (long long)m->params,
            (long long)m->embedding_params, (long long)m->layer_params);
    if (seed_note(preset, "parameters")) fprintf(out, "  %-44s  ^ %s\n", "", seed_note(preset, "parameters"));
#define ROW(label, v) fprintf(out, "  %-44s  %s\n", label, mf_cli_bytes(b1, sizeof b1, v))
#define ROW2(label, whole, gpu)                                                                              \
    fprintf(out, "  %-44s  %s  (unsharded %s)\n", label, mf_cli_bytes(b1, sizeof b1, gpu),                   \
            mf_cli_bytes(b2, sizeof b2, whole))
    ROW2("weights", m->weights_bytes, m->weights_gpu);
    if (seed_note(preset, "weights")) fprintf(out, "  %-44s  ^ %s\n", "", seed_note(preset, "weights"));
    ROW2("gradients", m->grads_bytes, m->grads_gpu);
    ROW2("AdamW states (fp32 m, v [+ master])", m->optimizer_bytes, m->optimizer_gpu);
    ROW("activations, one layer, standard attention", m->act_layer_standard);
    ROW("activations, one layer, tiled attention", m->act_layer_tiled);
    ROW("activations outside the layers", m->act_outside_layers);
    ROW("activations, standard, no checkpointing", m->act_standard);
    ROW("activations, tiled, no checkpointing", m->act_tiled);
    ROW("activations, standard, checkpointing", m->act_ckpt_standard);
    ROW("activations, tiled, checkpointing", m->act_ckpt_tiled);
    ROW("logits (N x V in dtype)", m->logits_bytes);
    ROW("loss, naive (logits + fp32 copy)", m->loss_naive);
    ROW("loss, chunked (fp32 tile + 4N + 16)", m->loss_chunked);
    if (m->loss_capped_by_logits)
        fprintf(
            out,
            "  %-44s  ^ the naive logits are already smaller than the budget: the tile is capped at them\n",
            "");
    ROW("loss, fused (8N + 16: no logits tile)", m->loss_fused);
    ROW("total, naive (standard, no ckpt, naive loss)", m->total_naive);
    snprintf(label, sizeof label, "total, optimized (tiled, ckpt, %s loss)",
             m->total_optimized_loss == m->loss_fused     ? "fused"
             : m->total_optimized_loss == m->loss_chunked ? "chunked"
                                                          : "naive");
    ROW(label, m->total_optimized);
    fprintf(out, "  %-44s  %s\n", "total, as configured", mf_cli_bytes(b1, sizeof b1, m->total));
    fprintf(out, "  %-44s  ^ %s\n", "", step);
#undef ROW
#undef ROW2
    if (fit != NULL) mf_cli_plan_fit_print(out, c, m, fit);
}

/* ---- sweeps: one option with a list of values ------------------------------------------ */
#define PLAN_MAX_SWEEP 64

static mf_status set_opt(mf_plan_config *cfg, const plan_opt *o, int64_t v)
{
    if (o->param != NULL) return mf_plan_param_set(cfg, o->param->name, v);
    char *field = (char *)cfg + o->offset;
    if (o->kind == 1) {
        if (v < INT32_MIN || v > INT32_MAX) v = -1; /* rejected by validation */
        int iv = (int)v;
        memcpy(field, &iv, sizeof iv);
    } else {
        memcpy(field, &v, sizeof v);
    }
    return MF_OK;
}

/* `--seq 4096,40000,131072`: the plan once per value, as one table (seed 000's
 * "Sequence Length | Logits Size | Method Used" with our numbers) or one JSON
 * object {"preset", "sweep", "values", "plans": [plan objects]}. */
static int plan_sweep(const char *preset, mf_plan_config cfg, const plan_opt *o, const int64_t *vals,
                      size_t n, size_t gpu_mem, int json, FILE *out, FILE *err)
{
    char b[6][64], step[96];
    cJSON *root = NULL, *plans = NULL;
    if (json) {
        root = cJSON_CreateObject();
        if (preset)
            cJSON_AddStringToObject(root, "preset", preset);
        else
            cJSON_AddNullToObject(root, "preset");
        cJSON_AddStringToObject(root, "sweep", o->name);
        cJSON *v = cJSON_AddArrayToObject(root, "values");
        for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(v, cJSON_CreateNumber((double)vals[i]));
        plans = cJSON_AddArrayToObject(root, "plans");
    } else {
        fprintf(out,
                "plan%s%s: sweep over %s, one row per value (bytes; loss chunked under --ce-budget %s)\n",
                preset ? " " : "", preset ? preset : "", o->name,
                mf_cli_bytes(b[0], sizeof b[0], (size_t)mf_plan_param_get(&cfg, "ce_budget")));
        fprintf(out, "  totals per GPU; as configured: %s%s%s\n",
                mf_cli_plan_step_name(step, sizeof step, &cfg), gpu_mem ? "; fit on one GPU of " : "",
                gpu_mem ? mf_cli_bytes(b[0], sizeof b[0], gpu_mem) : "");
        fprintf(out, "  %12s  %10s  %26s  %-22s  %26s   %26s  %26s  %26s  %26s%s\n", o->name, "tokens",
                "logits (naive)", "loss method", "loss, chunked", "loss, fused", "total, naive",
                "total, optimized", "total, as configured", gpu_mem ? "  fit" : "");
    }
    int exceeded = 0;
    for (size_t i = 0; i < n; i++) {
        mf_plan_memory m;
        mf_plan_fix_row rows[MF_PLAN_MAX_FIX_ROWS];
        size_t n_rows = 0;
        mf_plan_fit fit;
        mf_status s = set_opt(&cfg, o, vals[i]);
        if (s == MF_OK) s = mf_plan_training_memory(&cfg, &m);
        if (s == MF_OK) s = mf_plan_fixes(&cfg, rows, &n_rows);
        if (s == MF_OK && gpu_mem) s = mf_plan_fit_gpu(&cfg, gpu_mem, &fit);
        if (s != MF_OK) {
            fprintf(err, "memfix plan: invalid configuration at %s %lld: %s: %s\n", o->name,
                    (long long)vals[i], mf_status_name(s), mf_last_error());
            cJSON_Delete(root);
            return MF_CLI_USAGE;
        }
        if (json) {
            cJSON_AddItemToArray(plans, model_json(preset, &cfg, &m, rows, n_rows, gpu_mem ? &fit : NULL));
            continue;
        }
        const int64_t tokens = cfg.batch * cfg.seq, C = m.loss_chunk_rows;
        const int64_t chunks = C > 0 ? (tokens + C - 1) / C : 0;
        char method[64];
        if (chunks <= 1)
            snprintf(method, sizeof method, "one chunk");
        else
            snprintf(method, sizeof method, "%s: %lld x %lld", m.loss_capped_by_logits ? "capped" : "chunked",
                     (long long)chunks, (long long)C);
        const int over = m.loss_chunked != SIZE_MAX && m.loss_chunked > m.logits_bytes;
        exceeded |= over;
        char verdict[96] = "";
        if (gpu_mem)
            snprintf(verdict, sizeof verdict, "  %s %s", fit.fits ? "fits, headroom" : "over by",
                     mf_cli_bytes_short(b[5], sizeof b[5], fit.fits ? fit.headroom : fit.over));
        fprintf(out, "  %12lld  %10lld  %26s  %-22s  %26s%s  %26s  %26s  %26s  %26s%s\n", (long long)vals[i],
                (long long)tokens, mf_cli_bytes(b[0], sizeof b[0], m.logits_bytes), method,
                mf_cli_bytes(b[1], sizeof b[1], m.loss_chunked), over ? "*" : " ",
                mf_cli_bytes(b[4], sizeof b[4], m.loss_fused), mf_cli_bytes(b[2], sizeof b[2], m.total_naive),
                mf_cli_bytes(b[3], sizeof b[3], m.total_optimized), mf_cli_bytes(b[5], sizeof b[5], m.total),
                verdict);
    }
    if (json) {
        static const char *const what[] = { "parameters", "weights" };
        cJSON *notes = cJSON_AddObjectToObject(root, "seed_notes");
        for (size_t i = 0; i < sizeof what / sizeof what[0]; i++)
            if (seed_note(preset, what[i]))
                cJSON_AddStringToObject(notes, what[i], seed_note(preset, what[i]));
        return print_json(root, out);
    }
    if (exceeded) {
        mf_plan_memory m;
        const char *why = mf_plan_training_memory(&cfg, &m) == MF_OK ? m.loss_exceeds_why : NULL;
        fprintf(out, "  * the chunked loss's scratch exceeds the logits it replaces: %s\n",
                exceeds_reason(why));
    }
    static const char *const what[] = { "parameters", "weights" };
    for (size_t i = 0; i < sizeof what / sizeof what[0]; i++)
        if (seed_note(preset, what[i])) fprintf(out, "  %s: %s\n", what[i], seed_note(preset, what[i]));
    return MF_CLI_OK;
}

/* ---- argument parsing ------------------------------------------------------------------- */

#define PLAN_MAX_OPTS (sizeof model_opts / sizeof model_opts[0] + 32)

typedef struct {
    plan_opt *opts;
    size_t n;
} opts_arg;

/* The ops' parameters as options: a 0|1 flag takes one value, bytes > 0. */
static void add_param_opt(const mf_plan_param_spec *spec, void *arg)
{
    opts_arg *a = arg;
    if (a->n == PLAN_MAX_OPTS) return;
    plan_opt o = { spec->option,
                   spec->kind == MF_PLAN_PARAM_FLAG    ? 1
                   : spec->kind == MF_PLAN_PARAM_BYTES ? 2
                                                       : 0,
                   0,
                   spec,
                   { NULL, 0, 0 } }; /* --json lists op parameters through json_param */
    a->opts[a->n++] = o;
}

int mf_cli_plan(int argc, char **argv, FILE *out, FILE *err)
{
    mf_plan_config cfg;
    mf_plan_config_init(&cfg);
    const char *preset_name = NULL;
    const mf_plan_preset *preset = NULL;
    int json = 0;
    const plan_opt *sweep = NULL; /* the option given a list of values, if any */
    int64_t sweep_vals[PLAN_MAX_SWEEP];
    size_t n_sweep = 0;
    plan_opt plan_opts[PLAN_MAX_OPTS];
    opts_arg oa = { plan_opts, sizeof model_opts / sizeof model_opts[0] };
    memcpy(plan_opts, model_opts, sizeof model_opts);
    for_each_param(add_param_opt, &oa);
    /* the command's own options, then the model's and the ops' (kind 3, --dtype: among the own) */
    enum {
        OPT_H,
        OPT_HELP,
        OPT_LIST,
        OPT_PRESET,
        OPT_JSON,
        OPT_DTYPE,
        OPT_ATTENTION,
        OPT_LOSS,
        OPT_GPU_MEM,
        N_OWN
    };
    mf_cli_opt opts[N_OWN + PLAN_MAX_OPTS] = { { "-h", 0 },          { "--help", 0 }, { "--list-presets", 0 },
                                               { "--preset", 1 },    { "--json", 0 }, { "--dtype", 1 },
                                               { "--attention", 1 }, { "--loss", 1 }, { "--gpu-mem", 1 } };
    size_t gpu_mem = 0; /* --gpu-mem; 0: not given */
    for (size_t k = 0; k < oa.n; k++)
        opts[N_OWN + k] = (mf_cli_opt){ plan_opts[k].kind == 3 ? NULL : plan_opts[k].name, 1 };
    const size_t n_opts = N_OWN + oa.n;
    /* the preset first, whatever its position, so options override it */
    for (int i = 1; i < argc; i++) {
        const char *val;
        const int k = mf_cli_option(argc, argv, &i, opts, OPT_PRESET + 1, &val);
        if (k == OPT_H || k == OPT_HELP) {
            mf_cli_plan_help(out);
            return MF_CLI_OK;
        }
        if (k == OPT_LIST) {
            fprintf(out, "presets:\n");
            list_presets(out);
            return MF_CLI_OK;
        }
        if (k == OPT_PRESET) {
            if (val == NULL) {
                fprintf(err, "memfix plan: --preset needs a value\n");
                return MF_CLI_USAGE;
            }
            preset_name = val;
        }
    }
    if (preset_name != NULL) {
        preset = mf_plan_preset_find(preset_name);
        if (preset == NULL) {
            fprintf(err, "memfix plan: unknown preset '%s'; presets:\n", preset_name);
            list_presets(err);
            return MF_CLI_USAGE;
        }
        cfg = preset->cfg;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val;
        const int k = mf_cli_option(argc, argv, &i, opts, n_opts, &val);
        if (k == OPT_PRESET) continue;
        if (k == OPT_JSON) {
            json = 1;
            continue;
        }
        if (k == OPT_DTYPE) {
            if (val == NULL) {
                fprintf(err, "memfix plan: --dtype needs a value (f32 or bf16)\n");
                return MF_CLI_USAGE;
            }
            if (strcmp(val, "f32") == 0 || strcmp(val, "fp32") == 0)
                cfg.dtype = MF_DTYPE_F32;
            else if (strcmp(val, "bf16") == 0)
                cfg.dtype = MF_DTYPE_BF16;
            else {
                fprintf(err, "memfix plan: unknown dtype '%s' (f32 or bf16)\n", val);
                return MF_CLI_USAGE;
            }
            continue;
        }
        if (k == OPT_ATTENTION || k == OPT_LOSS) {
            const char *const *names = k == OPT_ATTENTION ? attention_names : loss_names;
            const int n_names = k == OPT_ATTENTION ? 2 : 3;
            int found = -1;
            for (int j = 0; val != NULL && j < n_names; j++)
                if (strcmp(val, names[j]) == 0) found = j;
            if (found < 0) {
                fprintf(err, "memfix plan: %s needs one of %s (got '%s')\n", opts[k].name,
                        k == OPT_ATTENTION ? "tiled, standard" : "naive, chunked, fused",
                        val ? val : "nothing");
                return MF_CLI_USAGE;
            }
            if (k == OPT_ATTENTION)
                cfg.attention = (mf_plan_attention)found;
            else
                cfg.loss = (mf_plan_loss)found;
            continue;
        }
        if (k == OPT_GPU_MEM) {
            if (val == NULL || *val == '\0') {
                fprintf(err, "memfix plan: --gpu-mem needs a size (e.g. 80GB, 80GiB, 141GB or bytes)\n");
                return MF_CLI_USAGE;
            }
            if (mf_plan_parse_size(val, &gpu_mem) != MF_OK) {
                char why[512];
                fprintf(err, "memfix plan: --gpu-mem: %s\n", mf_cli_error_reason(why, sizeof why));
                return MF_CLI_USAGE;
            }
            continue;
        }
        if (k < 0) {
            fprintf(err, "memfix plan: unknown argument '%s' (see memfix plan --help)\n", a);
            return MF_CLI_USAGE;
        }
        const plan_opt *o = &plan_opts[k - N_OWN];
        int64_t v;
        if (val != NULL && strchr(val, ',') != NULL) { /* a list: sweep this option */
            if (o->kind == 1 || (sweep != NULL && sweep != o)) {
                fprintf(err, "memfix plan: %s\n",
                        o->kind == 1 ? "a 0|1 flag takes one value, not a list"
                                     : "only one option may take a list of values");
                return MF_CLI_USAGE;
            }
            sweep = o;
            n_sweep = 0;
            for (const char *p = val; p != NULL; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
                char item[32];
                const char *comma = strchr(p, ',');
                size_t l = comma ? (size_t)(comma - p) : strlen(p);
                int64_t x;
                if (l == 0 || l >= sizeof item || n_sweep == PLAN_MAX_SWEEP ||
                    (memcpy(item, p, l), item[l] = '\0', !parse_i64(item, &x)) || (o->kind == 2 && x <= 0)) {
                    fprintf(err, "memfix plan: %s needs a list of at most %d integers%s (got '%s')\n",
                            o->name, PLAN_MAX_SWEEP, o->kind == 2 ? " > 0" : "", val);
                    return MF_CLI_USAGE;
                }
                sweep_vals[n_sweep++] = x;
            }
            if (set_opt(&cfg, o, sweep_vals[0]) != MF_OK) {
                fprintf(err, "memfix plan: %s: %s\n", o->name, mf_last_error());
                return MF_CLI_USAGE;
            }
            continue;
        }
        if (val == NULL || !parse_i64(val, &v)) {
            fprintf(err, "memfix plan: %s needs an integer value%s%s%s\n", o->name, val ? " (got '" : "",
                    val ? val : "", val ? "')" : "");
            return MF_CLI_USAGE;
        }
        if (sweep == o) sweep = NULL; /* a later single value replaces the list */
        if (o->kind == 2 && v <= 0) {
            fprintf(err, "memfix plan: %s must be > 0\n", o->name);
            return MF_CLI_USAGE;
        }
        if (set_opt(&cfg, o, v) != MF_OK) {
            fprintf(err, "memfix plan: %s: %s\n", o->name, mf_last_error());
            return MF_CLI_USAGE;
        }
    }
    if (preset != NULL && preset->kind == MF_PLAN_PRESET_ATTENTION_SWEEP) {
        if (mf_plan_config_validate(&cfg) != MF_OK) {
            fprintf(err, "memfix plan: invalid configuration: %s\n", mf_last_error());
            return MF_CLI_USAGE;
        }
        if (sweep != NULL) {
            fprintf(err, "memfix plan: preset %s already sweeps N; it takes no list\n", preset->name);
            return MF_CLI_USAGE;
        }
        if (gpu_mem) {
            fprintf(err,
                    "memfix plan: preset %s is an attention table, not a model: --gpu-mem does not apply\n",
                    preset->name);
            return MF_CLI_USAGE;
        }
        return attention_sweep(preset, &cfg, json, out, err);
    }
    if (sweep != NULL)
        return plan_sweep(preset ? preset->name : NULL, cfg, sweep, sweep_vals, n_sweep, gpu_mem, json, out,
                          err);

    mf_plan_memory m;
    mf_plan_fix_row rows[MF_PLAN_MAX_FIX_ROWS];
    mf_plan_fit fit;
    size_t n_rows = 0;
    mf_status s = mf_plan_training_memory(&cfg, &m);
    if (s == MF_OK) s = mf_plan_fixes(&cfg, rows, &n_rows);
    if (s == MF_OK && gpu_mem) s = mf_plan_fit_gpu(&cfg, gpu_mem, &fit);
    if (s != MF_OK) {
        fprintf(err, "memfix plan: invalid configuration: %s: %s\n", mf_status_name(s), mf_last_error());
        return MF_CLI_USAGE;
    }
    const char *name = preset ? preset->name : NULL;
    if (json) return print_json(model_json(name, &cfg, &m, rows, n_rows, gpu_mem ? &fit : NULL), out);
    print_model_table(name, &cfg, &m, rows, n_rows, gpu_mem ? &fit : NULL, out);
    return MF_CLI_OK;
}
