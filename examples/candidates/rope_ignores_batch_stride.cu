/* WRONG (random cases): ignores pos->batch_stride, giving every batch the ids of
 * batch 0 (right when the batches share one row of ids, or for offsets; the
 * fixed cases have no per-batch ids). */
#include "rope_common.cuh"

CAND_EXPORT mf_status rope_candidate(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                     const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx;
    if (pos == NULL) return MF_ERR_NULL_POINTER;
    mf_rope_positions p = *pos;
    p.batch_stride = 0;
    return rope_impl(cfg, dir, t, &p, 0);
}
