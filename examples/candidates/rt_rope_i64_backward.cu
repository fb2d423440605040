/* RED TEAM (cases): the backward with int64 position ids rotates the wrong way;
 * every other combination is right. */
#include "rope_common.cuh"

CAND_EXPORT mf_status rope_candidate(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                     const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx;
    if (pos == NULL) return MF_ERR_NULL_POINTER;
    const int bad = dir == MF_ROPE_BACKWARD && pos->kind == MF_ROPE_POS_I64;
    return rope_impl(cfg, dir, t, pos, bad);
}
