/* WRONG (equivalence): ignores dir, rotating by +theta in the backward too
 * (the backward is R(-theta) dy: sin negated). Right on the forward cases,
 * wrong on the two backward ones. */
#include "rope_common.cuh"

CAND_EXPORT mf_status rope_candidate(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                     const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx;
    return rope_impl(cfg, dir, t, pos, 1);
}
