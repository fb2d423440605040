/* WRONG (random cases): reads int32 ids with 8-byte loads, as if they were
 * int64 (id i then combines ids i and i+1); int64 ids and offsets are right.
 * The fixed cases have no int32 ids. */
#define ROPE_LOAD_I32(ids, i)                                                                                \
    ((int64_t)((const int32_t *)(ids))[(i)] | ((int64_t)((const int32_t *)(ids))[(i) + 1] << 32))
#include "rope_common.cuh"

CAND_EXPORT mf_status rope_candidate(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                     const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx;
    return rope_impl(cfg, dir, t, pos, 0);
}
