/* memfix plan --gpu-mem: sizes parsed exactly or rejected with a message, the
 * configured total, the verdict against one GPU, and the changes that make a
 * step fit (include/memfix/plan.h: their order, each applied on top of the
 * ones before, stopping at the first that fits). */
#define _POSIX_C_SOURCE 200809L
#include "mf_test.h"
#include "memfix/cross_entropy.h"
#include "memfix/plan.h"
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

static size_t states_of(const mf_plan_memory *m) { return m->weights_gpu + m->grads_gpu + m->optimizer_gpu; }

/* Llama-3-8B (8,030,261,248 parameters), bf16, one GPU, sequence s */
static mf_plan_config llama3_8b(int64_t s)
{
    mf_plan_config c;
    mf_plan_config_init(&c);
    c.layers = 32, c.d_model = 4096, c.d_ffn = 14336, c.heads = 32, c.kv_heads = 8, c.vocab = 128256;
    c.gated_mlp = 1, c.seq = s;
    return c;
}

/* ---- sizes ---------------------------------------------------------------------------------- */
START_TEST(test_parse_size)
{
    static const struct {
        const char *text;
        size_t bytes;
    } good[] = {
        { "80GB", 80000000000ULL },
        { "80GiB", 85899345920ULL },
        { "80G", 85899345920ULL },
        { "141GB", 141000000000ULL },
        { "85899345920", 85899345920ULL },
        { "80 GB", 80000000000ULL },
        { "80gb", 80000000000ULL },
        { "80gib", 85899345920ULL },
        { "1.5TB", 1500000000000ULL },
        { "0.5GiB", 536870912ULL },
        { "512B", 512 },
        { "1KB", 1000 },
        { "1K", 1024 },
        { "2MiB", 2097152 },
        { "3M", 3145728 },
        { "1TiB", 1099511627776ULL },
        { "1T", 1099511627776ULL },
        { "1.000001KB", 1000 },
        { "139.8GiB", 150109106995ULL }, /* 139 x 2^30 + 8 x 2^30 / 10, rounded down */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t b = 0;
        MF_ASSERT_OK(mf_plan_parse_size(good[i].text, &b));
        ck_assert_msg(b == good[i].bytes, "%s: %zu, want %zu", good[i].text, b, good[i].bytes);
    }
    static const struct {
        const char *text;
        mf_status status;
        const char *says;
    } bad[] = {
        { "", MF_ERR_INVALID_ARGUMENT, "must start with a digit" },
        { "GB", MF_ERR_INVALID_ARGUMENT, "must start with a digit" },
        { "-80GB", MF_ERR_INVALID_ARGUMENT, "must start with a digit" },
        { " 80GB", MF_ERR_INVALID_ARGUMENT, "must start with a digit" },
        { "80XB", MF_ERR_INVALID_ARGUMENT, "unknown unit 'XB'" },
        { "80GBs", MF_ERR_INVALID_ARGUMENT, "unknown unit 'GBs'" },
        { "80  GB", MF_ERR_INVALID_ARGUMENT, "unknown unit ' GB'" },
        { "1e9", MF_ERR_INVALID_ARGUMENT, "unknown unit 'e9'" },
        { "80,5GB", MF_ERR_INVALID_ARGUMENT, "unknown unit ',5GB'" },
        { "1.", MF_ERR_INVALID_ARGUMENT, "a digit must follow the decimal point" },
        { "1.5", MF_ERR_INVALID_ARGUMENT, "not a whole number of bytes" },
        { "1.5B", MF_ERR_INVALID_ARGUMENT, "not a whole number of bytes" },
        { "1.1234567GB", MF_ERR_INVALID_ARGUMENT, "more than 6 decimals" },
        { "0", MF_ERR_INVALID_SIZE, "zero bytes" },
        { "0GB", MF_ERR_INVALID_SIZE, "zero bytes" },
        { "0.0001KB", MF_ERR_INVALID_SIZE, "zero bytes" },
        { "99999999999999999999", MF_ERR_OVERFLOW, "does not fit" },
        { "99999999999TB", MF_ERR_OVERFLOW, "does not fit" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t b = 7;
        const mf_status s = mf_plan_parse_size(bad[i].text, &b);
        ck_assert_msg(s == bad[i].status, "'%s': %s", bad[i].text, mf_status_name(s));
        ck_assert_msg(strstr(mf_last_error(), bad[i].says) != NULL, "'%s': %s", bad[i].text, mf_last_error());
        ck_assert_uint_eq(b, 0);
    }
    size_t b;
    MF_ASSERT_STATUS(mf_plan_parse_size(NULL, &b), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_plan_parse_size("1GB", NULL), MF_ERR_NULL_POINTER);
}
END_TEST

/* ---- the configured total and the optimized one ------------------------------------------------- */
START_TEST(test_totals)
{
    mf_plan_config c = preset_cfg("000");
    mf_plan_memory m = plan_of(&c);
    const size_t states = states_of(&m);
    /* by default: tiled attention, no checkpointing, the naive loss */
    ck_assert_uint_eq(m.loss_configured, m.loss_naive);
    ck_assert_uint_eq(m.total, states + m.act_tiled + m.loss_naive);
    c.attention = MF_PLAN_ATTENTION_STANDARD;
    c.checkpointing = 1;
    ck_assert_uint_eq(plan_of(&c).total, states + m.act_ckpt_standard + m.loss_naive);
    c.checkpointing = 0;
    ck_assert_uint_eq(plan_of(&c).total, states + m.act_standard + m.loss_naive);
    ck_assert_uint_eq(plan_of(&c).total, m.total_naive);
    c = preset_cfg("000");
    c.checkpointing = 1;
#ifdef MF_HAVE_HOST_KERNELS
    /* the optimized total counts the smallest loss: the fused one, 8N + 16 = 1,048,592 B at
     * N = 131,072, not the chunked 1,073,192,464 B */
    ck_assert_uint_eq(m.loss_chunked, 1073192464ULL);
    ck_assert_uint_eq(m.total_optimized_loss, 1048592ULL);
    ck_assert_uint_eq(m.total_optimized_loss, m.loss_fused);
    ck_assert_uint_eq(m.total_optimized, states + m.act_ckpt_tiled + 1048592ULL);
    c.loss = MF_PLAN_LOSS_FUSED;
    ck_assert_uint_eq(plan_of(&c).total, m.total_optimized);
    c.loss = MF_PLAN_LOSS_CHUNKED;
    ck_assert_uint_eq(plan_of(&c).total, states + m.act_ckpt_tiled + m.loss_chunked);
#else
    /* no loss op: the naive loss is the only one planned */
    ck_assert_uint_eq(m.total_optimized_loss, m.loss_naive);
    c.loss = MF_PLAN_LOSS_FUSED;
    ck_assert_uint_eq(plan_of(&c).total, SIZE_MAX);
#endif
    /* bad settings */
    c = preset_cfg("000");
    c.attention = (mf_plan_attention)2;
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_ARGUMENT);
    c = preset_cfg("000");
    c.loss = (mf_plan_loss)3;
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_ARGUMENT);
    c = preset_cfg("000");
    c.checkpointing = 2;
    MF_ASSERT_STATUS(mf_plan_config_validate(&c), MF_ERR_INVALID_ARGUMENT);
}
END_TEST

/* The suggestions' common properties: each one's total is its configuration's,
 * the totals never grow, the search stops at the first that fits. */
static void check_ladder(const mf_plan_config *cfg, size_t gpu, const mf_plan_fit *f)
{
    ck_assert_uint_eq(f->gpu_bytes, gpu);
    ck_assert_uint_eq(f->total, plan_of(cfg).total);
    ck_assert_int_eq(f->fits, f->total <= gpu);
    size_t prev = f->total;
    for (size_t i = 0; i < f->n_suggestions; i++) {
        const mf_plan_suggestion *s = &f->suggestions[i];
        ck_assert_uint_eq(s->total, plan_of(&s->cfg).total);
        ck_assert_int_eq(s->fits, s->total <= gpu);
        ck_assert_msg(s->total < prev, "suggestion %zu (%s) does not lower the total", i, s->setting);
        ck_assert_msg(i + 1 == f->n_suggestions || !s->fits, "the search went on after %s fitted",
                      s->setting);
        if (i > 0) ck_assert_int_gt(s->change, f->suggestions[i - 1].change); /* in order of cost */
        ck_assert(s->setting[0] == '-' && s->what[0] != '\0');
        prev = s->total;
    }
    ck_assert_int_eq(f->reachable,
                     f->fits || (f->n_suggestions > 0 && f->suggestions[f->n_suggestions - 1].fits));
}

START_TEST(test_fit_000_on_80gb)
{
    /* seed 000's 4B model at 131,072 tokens on one 80 GB GPU (74.51 GiB): 59.94 GiB of weights,
     * gradients and AdamW states and 438.31 GiB of activations; the fused loss and checkpointing
     * bring it to 95.83 GiB, ZeRO-1 over two GPUs to 73.35 GiB */
    const mf_plan_config c = preset_cfg("000");
    const size_t gpu = 80000000000ULL;
    mf_plan_fit f;
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, gpu, &f));
    check_ladder(&c, gpu, &f);
    ck_assert(!f.fits);
    ck_assert_uint_eq(f.over, f.total - gpu);
    ck_assert_uint_eq(f.headroom, 0);
    ck_assert(f.reachable);
#ifdef MF_HAVE_HOST_KERNELS
    ck_assert_uint_eq(f.n_suggestions, 3);
    ck_assert_int_eq(f.suggestions[0].change, MF_PLAN_CHANGE_LOSS);
    ck_assert_str_eq(f.suggestions[0].setting, "--loss fused");
    ck_assert_int_eq(f.suggestions[1].change, MF_PLAN_CHANGE_CHECKPOINTING);
    ck_assert_str_eq(f.suggestions[1].setting, "--ckpt 1");
    ck_assert_int_eq(f.suggestions[2].change, MF_PLAN_CHANGE_ZERO_DP);
    ck_assert_str_eq(f.suggestions[0].setting, "--loss fused");
    ck_assert_uint_eq(f.suggestions[1].total, 102897803280ULL); /* 95.83 GiB: the optimized total */
    /* the cheapest stage over 2 GPUs: the optimizer states sharded */
    ck_assert_str_eq(f.suggestions[2].setting, "--dp 2 --zero 1");
    ck_assert_uint_eq(f.suggestions[2].total, 78762994704ULL); /* 73.35 GiB */
    ck_assert(f.suggestions[2].fits);
    /* the last total is the optimized one with the optimizer states sharded over two GPUs */
    const mf_plan_memory m = plan_of(&f.suggestions[2].cfg);
    ck_assert_uint_eq(m.optimizer_gpu, m.optimizer_bytes / 2);
    ck_assert_uint_eq(f.suggestions[2].total, states_of(&m) + m.act_ckpt_tiled + m.loss_fused);
    ck_assert_uint_eq(f.suggestions[2].total, m.total_optimized);
#endif
}
END_TEST

START_TEST(test_fit_001_on_80gb)
{
    /* seed 001's 125M NSA model at seq 1024 ran in 59.6 GB on an 80 GB A100: it fits */
    const mf_plan_config c = preset_cfg("001-1k");
    mf_plan_fit f;
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, 80000000000ULL, &f));
    check_ladder(&c, 80000000000ULL, &f);
    ck_assert(f.fits && f.reachable);
    ck_assert_uint_eq(f.n_suggestions, 0);
    ck_assert_uint_eq(f.over, 0);
    ck_assert_uint_eq(f.headroom, 80000000000ULL - f.total);
    ck_assert_uint_lt(f.total, 59600000000ULL);
    /* and exactly at its total it still fits; one byte less does not */
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, f.total, &f));
    ck_assert(f.fits);
    ck_assert_uint_eq(f.headroom, 0);
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, f.total - 1, &f));
    ck_assert(!f.fits);
    ck_assert_uint_eq(f.over, 1);
}
END_TEST

/* Each step of the ladder, in its order, on configurations that need it. */
START_TEST(test_fit_steps)
{
    mf_plan_fit f;
    /* standard attention first: Llama-3-8B at 8k on 8 GPUs with ZeRO-3 and standard attention */
    mf_plan_config c = llama3_8b(8192);
    c.dp = 8, c.zero = 3, c.attention = MF_PLAN_ATTENTION_STANDARD;
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, 80000000000ULL, &f));
    check_ladder(&c, 80000000000ULL, &f);
    ck_assert_uint_ge(f.n_suggestions, 1);
    ck_assert_int_eq(f.suggestions[0].change, MF_PLAN_CHANGE_ATTENTION);
    ck_assert_str_eq(f.suggestions[0].setting, "--attention tiled");
    ck_assert(f.reachable);

    /* more GPUs: Llama-3-8B at 131,072 tokens needs ZeRO-3 over 8 */
    c = llama3_8b(131072);
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, 80000000000ULL, &f));
    check_ladder(&c, 80000000000ULL, &f);
    ck_assert(f.reachable);
    const mf_plan_suggestion *last = &f.suggestions[f.n_suggestions - 1];
    ck_assert_int_eq(last->change, MF_PLAN_CHANGE_ZERO_DP);
    ck_assert_str_eq(last->setting, "--dp 8 --zero 3");
    mf_plan_config fewer = last->cfg;
    fewer.dp = 4;
    ck_assert_uint_gt(plan_of(&fewer).total, 80000000000ULL); /* 4 GPUs are not enough */

    /* a micro-batch: 32 sequences of 8k over 8 GPUs with ZeRO-3, checkpointing and the fused
     * loss; the states (16 GB) are not the problem, so no more GPUs */
    c = llama3_8b(8192);
    c.batch = 32, c.dp = 8, c.zero = 3, c.checkpointing = 1, c.loss = MF_PLAN_LOSS_FUSED;
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, 80000000000ULL, &f));
    check_ladder(&c, 80000000000ULL, &f);
    ck_assert(f.reachable);
    ck_assert_uint_eq(f.n_suggestions, 1);
    last = &f.suggestions[0];
    ck_assert_int_eq(last->change, MF_PLAN_CHANGE_BATCH);
    ck_assert_int_lt(last->cfg.batch, 32);
    ck_assert_int_eq(last->cfg.dp, 8);
    mf_plan_config bigger = last->cfg;
    bigger.batch++;
    ck_assert_uint_gt(plan_of(&bigger).total, 80000000000ULL); /* the largest micro-batch that fits */

    /* no degree of data parallelism fits a million tokens on its own: ZeRO-3 over the
     * fewest GPUs that bring the states under half of the GPU, then a shorter sequence */
    c = llama3_8b(1048576);
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, 80000000000ULL, &f));
    check_ladder(&c, 80000000000ULL, &f);
    ck_assert(f.reachable);
    ck_assert_uint_eq(f.n_suggestions, 4);
    ck_assert_int_eq(f.suggestions[2].change, MF_PLAN_CHANGE_ZERO_DP);
    ck_assert(!f.suggestions[2].fits);
    ck_assert_str_eq(f.suggestions[2].setting, "--dp 4 --zero 3");
    const mf_plan_memory sharded = plan_of(&f.suggestions[2].cfg);
    ck_assert_uint_le(states_of(&sharded), 40000000000ULL);
    last = &f.suggestions[3];
    ck_assert_int_eq(last->change, MF_PLAN_CHANGE_SEQ);
    ck_assert_int_eq(last->cfg.seq % 1024, 0);
    mf_plan_config longer = last->cfg;
    longer.seq += 1024;
    ck_assert_uint_gt(plan_of(&longer).total, 80000000000ULL); /* the longest multiple of 1024 */

    /* out of reach: the states alone exceed a 1 GiB GPU at any degree up to 1024 */
    c = llama3_8b(1024);
    c.layers = 4000;
    MF_ASSERT_OK(mf_plan_fit_gpu(&c, 1ULL << 30, &f));
    check_ladder(&c, 1ULL << 30, &f);
    ck_assert(!f.reachable);

    /* bad input */
    MF_ASSERT_STATUS(mf_plan_fit_gpu(&c, 0, &f), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_plan_fit_gpu(NULL, 1, &f), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_plan_fit_gpu(&c, 1, NULL), MF_ERR_NULL_POINTER);
    c.layers = 0;
    MF_ASSERT_STATUS(mf_plan_fit_gpu(&c, 1, &f), MF_ERR_INVALID_SIZE);
}
END_TEST

/* ---- the command ------------------------------------------------------------------------------- */
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

START_TEST(test_cli_gpu_mem)
{
    char want[128];
    mf_plan_fit f;
    const mf_plan_config c000 = preset_cfg("000");
    MF_ASSERT_OK(mf_plan_fit_gpu(&c000, 80000000000ULL, &f));

    run_result r = RUN("memfix", "plan", "--preset", "000", "--gpu-mem", "80GB");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "fit on one GPU of 80000000000 (74.51 GiB)"));
    /* the total in bytes, the verdict, every change with its total, the settings together */
    snprintf(want, sizeof want, "as configured (tiled attention, no checkpointing, naive loss): %zu (",
             f.total);
    ck_assert_ptr_nonnull(strstr(r.out, want));
    ck_assert_ptr_nonnull(strstr(r.out, "verdict: does not fit, over by "));
    for (size_t i = 0; i < f.n_suggestions; i++) {
        snprintf(want, sizeof want, "%zu. %-20s total %zu (", i + 1, f.suggestions[i].setting,
                 f.suggestions[i].total);
        ck_assert_msg(strstr(r.out, want) != NULL, "no line '%s' in\n%s", want, r.out);
    }
#ifdef MF_HAVE_HOST_KERNELS
    ck_assert_ptr_nonnull(strstr(r.out, "fits, headroom"));
    ck_assert_ptr_nonnull(strstr(r.out, "all together: --loss fused --ckpt 1 --dp 2 --zero 1"));
    ck_assert_ptr_nonnull(strstr(r.out, "total, optimized (tiled, ckpt, fused loss)"));
#endif
    free(r.out), free(r.err);

    /* the changes, applied, fit */
    r = RUN("memfix", "plan", "--preset", "000", "--gpu-mem", "80GB", "--loss", "fused", "--ckpt", "1",
            "--dp", "2", "--zero", "1");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
#ifdef MF_HAVE_HOST_KERNELS
    ck_assert_ptr_nonnull(strstr(r.out, "verdict: fits, headroom "));
#endif
    free(r.out), free(r.err);

    r = RUN("memfix", "plan", "--preset", "001-1k", "--gpu-mem", "80GB");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "verdict: fits, headroom "));
    ck_assert_ptr_null(strstr(r.out, "changes in order of cost"));
    free(r.out), free(r.err);

    /* JSON: fits, suggestions with setting and bytes, the optimized total's loss */
    r = RUN("memfix", "plan", "--preset", "000", "--gpu-mem=80GB", "--json");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    cJSON *root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(root, "fits")));
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(root, "gpu_mem")), 80e9);
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(root, "over")), (double)f.over);
    cJSON *sug = cJSON_GetObjectItem(root, "suggestions");
    ck_assert_int_eq(cJSON_GetArraySize(sug), (int)f.n_suggestions);
    for (size_t i = 0; i < f.n_suggestions; i++) {
        cJSON *o = cJSON_GetArrayItem(sug, (int)i);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o, "setting")), f.suggestions[i].setting);
        ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "total")),
                            (double)f.suggestions[i].total);
        ck_assert(cJSON_IsBool(cJSON_GetObjectItem(o, "fits")));
    }
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(sug, (int)f.n_suggestions - 1), "fits")));
    cJSON *mem = cJSON_GetObjectItem(root, "memory");
    const mf_plan_memory m = plan_of(&c000);
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(mem, "total_optimized_loss")),
                        (double)m.total_optimized_loss);
    ck_assert_double_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(mem, "total")), (double)m.total);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "config"), "loss")),
                     "naive");
    cJSON_Delete(root);
    free(r.out), free(r.err);

    r = RUN("memfix", "plan", "--preset", "001-1k", "--gpu-mem", "80GB", "--json");
    root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "fits")));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "suggestions")), 0);
    cJSON_Delete(root);
    free(r.out), free(r.err);

    /* without --gpu-mem: the members are there, null */
    r = RUN("memfix", "plan", "--json");
    root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(root, "fits")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(root, "gpu_mem")));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "suggestions")), 0);
    cJSON_Delete(root);
    free(r.out), free(r.err);

    /* a sweep says per value whether it fits */
    r = RUN("memfix", "plan", "--preset", "000", "--seq", "4096,131072", "--gpu-mem", "80GiB", "--ckpt", "1");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "fit on one GPU of 85899345920 (80.00 GiB)"));
    ck_assert_ptr_nonnull(strstr(r.out, "  fits, headroom "));
    ck_assert_ptr_nonnull(strstr(r.out, "  over by "));
    free(r.out), free(r.err);

    /* out of reach */
    r = RUN("memfix", "plan", "--layers", "4000", "--d-model", "4096", "--heads", "32", "--d-ffn", "14336",
            "--gpu-mem", "1GiB");
    ck_assert_int_eq(r.rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(r.out, "none of these changes, nor all of them together"));
    free(r.out), free(r.err);
}
END_TEST

/* Malformed sizes and settings: exit 2 with a message that names the option and the problem. */
START_TEST(test_cli_gpu_mem_errors)
{
    static const struct {
        const char *opt, *val, *says;
    } bad[] = {
        { "--gpu-mem", "80XB", "--gpu-mem: '80XB' has an unknown unit 'XB'" },
        { "--gpu-mem", "lots", "--gpu-mem: 'lots' is not a size" },
        { "--gpu-mem", "-80GB", "--gpu-mem: '-80GB' is not a size" },
        { "--gpu-mem", "0GB", "--gpu-mem: the size '0GB' is zero bytes" },
        { "--gpu-mem", "1.5", "--gpu-mem: '1.5' is not a whole number of bytes" },
        { "--gpu-mem", "", "--gpu-mem needs a size" },
        { "--gpu-mem", "99999999999999999999", "does not fit in" },
        { "--loss", "smart", "--loss needs one of naive, chunked, fused (got 'smart')" },
        { "--attention", "flash", "--attention needs one of tiled, standard (got 'flash')" },
        { "--ckpt", "2", "checkpointing" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_result r = RUN("memfix", "plan", "--preset", "000", bad[i].opt, bad[i].val);
        ck_assert_msg(r.rc == MF_CLI_USAGE, "%s %s: rc %d", bad[i].opt, bad[i].val, r.rc);
        ck_assert_msg(strstr(r.err, bad[i].says) != NULL, "%s %s: %s", bad[i].opt, bad[i].val, r.err);
        ck_assert_str_eq(r.out, "");
        free(r.out), free(r.err);
    }
    run_result r = RUN("memfix", "plan", "--gpu-mem");
    ck_assert_int_eq(r.rc, MF_CLI_USAGE);
    ck_assert_ptr_nonnull(strstr(r.err, "--gpu-mem needs a size"));
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--preset", "003", "--gpu-mem", "80GB");
    ck_assert_int_eq(r.rc, MF_CLI_USAGE);
    ck_assert_ptr_nonnull(strstr(r.err, "--gpu-mem does not apply"));
    free(r.out), free(r.err);
}
END_TEST

/* Rows only for the fixes the model has: no linear attention in a Llama-like model unless
 * asked, no RoPE row for learned positions. */
START_TEST(test_rows_of_the_model)
{
    mf_plan_fix_row rows[MF_PLAN_MAX_FIX_ROWS];
    size_t n = 0;
    mf_plan_config c = llama3_8b(8192);
    MF_ASSERT_OK(mf_plan_fixes(&c, rows, &n));
    int has_la = 0, has_rope = 0;
    for (size_t i = 0; i < n; i++) {
        has_la |= strcmp(rows[i].fix, "linear_attention") == 0;
        has_rope |= strcmp(rows[i].fix, "rope") == 0;
    }
    ck_assert(!has_la);
#ifdef MF_HAVE_HOST_KERNELS
    ck_assert(has_rope);
    MF_ASSERT_OK(mf_plan_param_set(&c, "linear_attention", 1));
    MF_ASSERT_OK(mf_plan_fixes(&c, rows, &n));
    has_la = 0;
    for (size_t i = 0; i < n; i++) has_la |= strcmp(rows[i].fix, "linear_attention") == 0;
    ck_assert(has_la);
    /* Pythia-70M with the seed's learned positions: no rotary embedding, no rope row */
    c = preset_cfg("002-full");
    MF_ASSERT_OK(mf_plan_fixes(&c, rows, &n));
    for (size_t i = 0; i < n; i++) ck_assert_str_ne(rows[i].fix, "rope");
    ck_assert_uint_eq(n, 2); /* cross_entropy, attention */
    run_result r = RUN("memfix", "plan", "--preset", "000");
    ck_assert_ptr_null(strstr(r.out, "linear_attention"));
    free(r.out), free(r.err);
    r = RUN("memfix", "plan", "--preset", "000", "--linear-attention", "1");
    ck_assert_ptr_nonnull(strstr(r.out, "\n  linear_attention "));
    free(r.out), free(r.err);
#endif
}
END_TEST

Suite *plan_fit_suite(void)
{
    Suite *s = suite_create("plan_fit");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, test_parse_size);
    tcase_add_test(tc, test_totals);
    tcase_add_test(tc, test_fit_000_on_80gb);
    tcase_add_test(tc, test_fit_001_on_80gb);
    tcase_add_test(tc, test_fit_steps);
    tcase_add_test(tc, test_rows_of_the_model);
    suite_add_tcase(s, tc);
    tc = tcase_create("command");
    tcase_add_test(tc, test_cli_gpu_mem);
    tcase_add_test(tc, test_cli_gpu_mem_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(plan_fit_suite()); }
