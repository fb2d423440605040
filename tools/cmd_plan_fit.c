/* `memfix plan --gpu-mem SIZE`: the verdict for one GPU and the changes that make
 * the step fit (mf_plan_fit_gpu, src/plan/plan_fit.c), as text and as --json
 * members. */
#define _POSIX_C_SOURCE 200809L
#include "memfix_cli.h"

#include "memfix/plan.h"

#include <cJSON.h>
#include <stdint.h>
#include <string.h>

static const char *const change_names[] = { "attention", "loss", "checkpointing", "zero_dp", "batch", "seq" };

const char *mf_cli_plan_step_name(char *buf, size_t cap, const mf_plan_config *c)
{
    snprintf(buf, cap, "%s attention, %s, %s loss",
             c->attention == MF_PLAN_ATTENTION_STANDARD ? "standard" : "tiled",
             c->checkpointing ? "checkpointing" : "no checkpointing",
             c->loss == MF_PLAN_LOSS_FUSED     ? "fused"
             : c->loss == MF_PLAN_LOSS_CHUNKED ? "chunked"
                                               : "naive");
    return buf;
}

/* "fits, headroom 7.21 GiB" or "over by 22.70 GiB" */
static const char *verdict(char *buf, size_t cap, size_t total, size_t gpu)
{
    char b[64];
    if (total <= gpu)
        snprintf(buf, cap, "fits, headroom %s", mf_cli_bytes_short(b, sizeof b, gpu - total));
    else
        snprintf(buf, cap, "over by %s", mf_cli_bytes_short(b, sizeof b, total - gpu));
    return buf;
}

void mf_cli_plan_fit_print(FILE *out, const mf_plan_config *cfg, const mf_plan_memory *m,
                           const mf_plan_fit *fit)
{
    char b1[64], b2[64], b3[64], step[96], v[96];
    const size_t states = m->weights_gpu + m->grads_gpu + m->optimizer_gpu; /* each <= total: no overflow */
    const size_t act = fit->total - states - m->loss_configured;
    fprintf(out, "\nfit on one GPU of %s\n", mf_cli_bytes(b1, sizeof b1, fit->gpu_bytes));
    fprintf(out, "  as configured (%s): %s\n", mf_cli_plan_step_name(step, sizeof step, cfg),
            mf_cli_bytes(b1, sizeof b1, fit->total));
    fprintf(out, "    weights + gradients + AdamW states %s, activations %s, loss %s\n",
            mf_cli_bytes_short(b1, sizeof b1, states), mf_cli_bytes_short(b2, sizeof b2, act),
            mf_cli_bytes_short(b3, sizeof b3, m->loss_configured));
    if (fit->fits) {
        fprintf(out, "  verdict: fits, headroom %s (%.1f%% of the GPU)\n",
                mf_cli_bytes(b1, sizeof b1, fit->headroom),
                100.0 * (double)fit->headroom / (double)fit->gpu_bytes);
    } else {
        fprintf(out, "  verdict: does not fit, over by %s\n", mf_cli_bytes(b1, sizeof b1, fit->over));
        if (fit->n_suggestions > 0)
            fprintf(out, "  changes in order of cost, each on top of the ones above it:\n");
        for (size_t i = 0; i < fit->n_suggestions; i++) {
            const mf_plan_suggestion *s = &fit->suggestions[i];
            fprintf(out, "    %zu. %-20s total %-32s %s\n", i + 1, s->setting,
                    mf_cli_bytes(b1, sizeof b1, s->total), verdict(v, sizeof v, s->total, fit->gpu_bytes));
            fprintf(out, "       %s\n", s->what);
        }
        if (fit->reachable && fit->n_suggestions > 1) {
            fprintf(out, "  all together:");
            for (size_t i = 0; i < fit->n_suggestions; i++) fprintf(out, " %s", fit->suggestions[i].setting);
            fprintf(out, "\n");
        } else if (!fit->reachable) {
            fprintf(out,
                    "  none of these changes, nor all of them together, makes the step fit one GPU of this "
                    "size\n");
        }
    }
    fprintf(out, "  not counted: the CUDA context, library workspaces, the caching allocator's reserve and\n"
                 "  fragmentation (leave a margin of a few GiB)\n");
}

static void add_size(cJSON *o, const char *key, size_t b)
{
    if (b == SIZE_MAX)
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddNumberToObject(o, key, (double)b);
}

void mf_cli_plan_fit_json(cJSON *root, const mf_plan_fit *fit)
{
    if (fit == NULL) {
        cJSON_AddNullToObject(root, "gpu_mem");
        cJSON_AddNullToObject(root, "fits");
        cJSON_AddNullToObject(root, "headroom");
        cJSON_AddNullToObject(root, "over");
        cJSON_AddNullToObject(root, "reachable");
        cJSON_AddArrayToObject(root, "suggestions");
        return;
    }
    add_size(root, "gpu_mem", fit->gpu_bytes);
    cJSON_AddBoolToObject(root, "fits", fit->fits);
    add_size(root, "headroom", fit->headroom);
    add_size(root, "over", fit->over);
    cJSON_AddBoolToObject(root, "reachable", fit->reachable);
    cJSON *arr = cJSON_AddArrayToObject(root, "suggestions");
    for (size_t i = 0; arr != NULL && i < fit->n_suggestions; i++) {
        const mf_plan_suggestion *s = &fit->suggestions[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "change", change_names[s->change]);
        cJSON_AddStringToObject(o, "setting", s->setting);
        cJSON_AddStringToObject(o, "what", s->what);
        add_size(o, "total", s->total);
        cJSON_AddBoolToObject(o, "fits", s->fits);
    }
}
