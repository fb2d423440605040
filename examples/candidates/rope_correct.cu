/* A correct rope candidate (see rope_common.cuh): one thread per rotated pair,
 * the angle in double per thread, no table and no scratch.
 * memfix verify --op rope accepts it. */
#include "rope_common.cuh"

CAND_EXPORT mf_status rope_candidate(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                     const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx;
    return rope_impl(cfg, dir, t, pos, 0);
}
