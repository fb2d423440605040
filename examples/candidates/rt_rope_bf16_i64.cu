/* RED TEAM (cases): wrong only for bf16 tensors with int64 position ids (it
 * reads them as int32 pairs); every other combination is right. */
#include "rope_common.cuh"

CAND_EXPORT mf_status rope_candidate(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                     const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx;
    if (t == NULL || pos == NULL) return MF_ERR_NULL_POINTER;
    mf_rope_positions p = *pos;
    if (t->dtype == MF_DTYPE_BF16 && p.kind == MF_ROPE_POS_I64) p.kind = MF_ROPE_POS_I32;
    return rope_impl(cfg, dir, t, &p, 0);
}
