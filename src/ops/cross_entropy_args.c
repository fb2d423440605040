/* cross_entropy's options and the size of the logits the old code
 * materialized: used by the reference (reference/cross_entropy.c), the
 * optimized entries (src/ops/cross_entropy.c) and memfix plan, so built into the
 * core library even without the kernels (include/memfix/cross_entropy.h); and
 * the reference's tolerance row against PyTorch (op_list.h). */
#include "memfix/check.h"
#include "memfix/cross_entropy.h"
#include "mf_internal.h"
#include "op_list.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- options ---------------------------------------------------------------- */
void mf_cross_entropy_options_init(mf_cross_entropy_options *opts)
{
    if (opts == NULL) return;
    memset(opts, 0, sizeof(*opts));
    opts->ignore_index = MF_CE_DEFAULT_IGNORE_INDEX;
    opts->reduction = MF_CE_REDUCTION_MEAN;
    opts->shift_labels = 0;
    opts->seq_len = 0;
    opts->label_smoothing = 0.0f;
    opts->z_loss = 0.0f;
    opts->softcap = 0.0f;
    opts->variant = MF_CE_VARIANT_CHUNKED;
    opts->scratch_budget = MF_CE_DEFAULT_BUDGET;
    opts->max_chunk_rows = 0;
    opts->grad_filter = 0.0f;
    opts->mma_path = MF_CE_MMA_AUTO;
}

mf_status mf_cross_entropy_options_validate(const mf_cross_entropy_options *opts)
{
    MF_CHECK_NOT_NULL(opts);
    if ((int)opts->reduction < 0 || (int)opts->reduction > (int)MF_CE_REDUCTION_NONE)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->reduction %d is not MEAN (0), SUM (1) or NONE (2)",
                (int)opts->reduction);
    MF_TRY(mf_check_bool(__func__, "opts->shift_labels", opts->shift_labels));
    if (opts->seq_len < 0)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->seq_len must be >= 0 (got %lld)", (long long)opts->seq_len);
    if (!(opts->label_smoothing >= 0.0f && opts->label_smoothing <= 1.0f))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->label_smoothing must be in [0, 1] (got %g)",
                (double)opts->label_smoothing);
    if (!(opts->z_loss >= 0.0f) || isinf(opts->z_loss))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->z_loss must be finite and >= 0 (got %g)",
                (double)opts->z_loss);
    if (!(opts->softcap >= 0.0f) || isinf(opts->softcap))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->softcap must be finite and >= 0, 0 = off (got %g)",
                (double)opts->softcap);
    if ((int)opts->variant != (int)MF_CE_VARIANT_CHUNKED && (int)opts->variant != (int)MF_CE_VARIANT_FUSED)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->variant %d is not CHUNKED (0) or FUSED (1)",
                (int)opts->variant);
    if (!(opts->grad_filter >= 0.0f) || isinf(opts->grad_filter))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->grad_filter must be finite and >= 0, 0 = off (got %g)",
                (double)opts->grad_filter);
    if ((int)opts->mma_path < (int)MF_CE_MMA_AUTO || (int)opts->mma_path > (int)MF_CE_MMA_WGMMA)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->mma_path %d is not AUTO (0), SYNC (1) or WGMMA (2)",
                (int)opts->mma_path);
    if (opts->max_chunk_rows < 0)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "opts->max_chunk_rows must be >= 0 (got %lld)",
                (long long)opts->max_chunk_rows);
    return MF_OK;
}

/* ---- memory formula: the old code's logits ---------------------------------- */
/* N * V * sizeof(dtype), or SIZE_MAX on overflow or non-positive sizes. */
size_t mf_cross_entropy_logits_bytes(int64_t n_rows, int64_t vocab, mf_dtype dtype)
{
    size_t es = mf_dtype_size(dtype);
    if (n_rows <= 0 || vocab <= 0 || es == 0) return SIZE_MAX;
    size_t r;
    if (!mf_size_mul((size_t)n_rows, (size_t)vocab, &r) || !mf_size_mul(r, es, &r)) return SIZE_MAX;
    return r;
}

/* ---- the reference against PyTorch float64 (tests/equivalence/test_cross_entropy_fixtures.c) ---- */
static const mf_tolerance torch_rows[] = {
    { "cross_entropy.torch.f32", 1e-9, 2.4e-7, 1e-13,
      "reference (double) vs the seed's F.cross_entropy + autograd in torch float64, both rounded to fp32: "
      "1-2 ulp (2^-23) where the doubles straddle a rounding boundary" },
};
const mf_tolerance_rows mf_cross_entropy_torch_tolerances = { torch_rows, MF_COUNT_OF(torch_rows) };
