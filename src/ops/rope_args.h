/* RoPE argument validation (src/ops/rope_args.c), shared by the reference and
 * the public entry points. The first checks the config; the second everything
 * but the id values; the third scans host ids (the
 * reference's) for their range and maximum. 'func' names the public
 * function in error messages. */
#ifndef MEMFIX_OPS_ROPE_ARGS_H
#define MEMFIX_OPS_ROPE_ARGS_H

#include "memfix/rope.h"

mf_status mf_rope_internal_validate_config(const char *func, const mf_rope_config *cfg);
mf_status mf_rope_internal_validate(const char *func, const mf_rope_config *cfg, mf_rope_direction dir,
                                    const mf_rope_tensors *t, const mf_rope_positions *pos);
mf_status mf_rope_internal_max_position(const char *func, const mf_rope_positions *pos, int64_t batch,
                                        int64_t seq_len, int64_t *max_pos);

#endif /* MEMFIX_OPS_ROPE_ARGS_H */
