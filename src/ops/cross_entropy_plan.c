/* memfix plan for the linear cross-entropy fix: the logits row and the training table's loss
 * (part of mf_op_cross_entropy). */
#include "memfix/cross_entropy.h"

#include "cross_entropy_registry.h"
#include "memfix/plan.h"
#include "mf_internal.h"

#include <stdio.h>

/* ---- memfix plan: the logits vs the chunked loss (seed 000, bug 1); the loss's figures ---- */
static const mf_plan_param_spec ce_plan_params[] = {
    { "ce_budget", "--ce-budget", "BYTES", "scratch budget of the chunked loss (default 1 GiB)",
      MF_PLAN_PARAM_BYTES, (int64_t)MF_CE_DEFAULT_BUDGET },
};
static const char ce_plan_exceeds_why[] = "the logits are too small to hold one fp32 row plus 4N + 16 bytes, "
                                          "so the one-row tile exceeds them (the fused "
                                          "variant's 8N + 16 does not)";

/* The chunk mf_cross_entropy_plan picks for the model's N = b*s rows under the budget. */
static mf_status ce_plan_chunking(const mf_plan_config *cfg, mf_cross_entropy_plan_info *info)
{
    mf_cross_entropy_options ce;
    mf_cross_entropy_options_init(&ce);
    const int64_t budget = mf_plan_param_get(cfg, "ce_budget");
    if (budget > 0) ce.scratch_budget = (size_t)budget;
    return mf_cross_entropy_plan(cfg->batch * cfg->seq, cfg->vocab, cfg->dtype, &ce, info);
}

static mf_status ce_plan_rows(const mf_plan_config *cfg, mf_plan_rows *out)
{
    mf_cross_entropy_plan_info info;
    MF_TRY(ce_plan_chunking(cfg, &info));
    const int64_t N = cfg->batch * cfg->seq;
    char what[64];
    snprintf(what, sizeof what, "fp32 tile, C=%lld rows (%lld chunks%s)", (long long)info.chunk_rows,
             (long long)info.n_chunks, info.capped_by_logits ? ", capped at logits" : "");
    MF_TRY(mf_plan_row_add(
        out, "cross_entropy", "logits N*V*e", mf_cross_entropy_logits_bytes(N, cfg->vocab, cfg->dtype), what,
        mf_cross_entropy_chunked_scratch_ceiling(N, cfg->vocab, info.chunk_rows), "N=%lld V=%lld %s",
        (long long)N, (long long)cfg->vocab, mf_dtype_name(cfg->dtype)));
    out->rows[out->n - 1].exceeds_why = ce_plan_exceeds_why;
    return MF_OK;
}

/* The model's loss: the chunked ceiling at the planned chunk and the fused one. */
static mf_status ce_plan_loss(const mf_plan_config *cfg, mf_plan_memory *m)
{
    mf_cross_entropy_plan_info info;
    MF_TRY(ce_plan_chunking(cfg, &info));
    const int64_t N = cfg->batch * cfg->seq;
    m->loss_fused = mf_cross_entropy_fused_scratch_ceiling(N);
    m->loss_chunk_rows = info.chunk_rows;
    m->loss_capped_by_logits = info.capped_by_logits;
    m->loss_chunked = mf_cross_entropy_chunked_scratch_ceiling(N, cfg->vocab, info.chunk_rows);
    m->loss_exceeds_why = ce_plan_exceeds_why;
    return MF_OK;
}

const mf_op_plan mf_cross_entropy_internal_plan = { 1, ce_plan_params, ce_plan_rows, ce_plan_loss };
