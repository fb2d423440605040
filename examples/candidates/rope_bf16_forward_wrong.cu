/* WRONG (random cases): rotates by -theta in the bf16 forward only (f32 both
 * ways and the bf16 backward are right). The fixed cases have no bf16 forward:
 * rejected by equivalence on the random cases that draw one. */
#include "rope_common.cuh"

CAND_EXPORT mf_status rope_candidate(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                     const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx;
    if (t == NULL) return MF_ERR_NULL_POINTER;
    const int bf16_fwd = t->dtype == MF_DTYPE_BF16 && dir == MF_ROPE_FORWARD;
    return rope_impl(cfg, bf16_fwd ? MF_ROPE_BACKWARD : dir, t, pos, 0);
}
