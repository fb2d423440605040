/* Linear attention's argument helpers (src/ops/linear_attention_args.c),
 * shared by the reference (reference/linear_attention.c) and the public entry
 * points (src/ops/linear_attention.c). */
#ifndef MEMFIX_OPS_LINEAR_ATTENTION_ARGS_H
#define MEMFIX_OPS_LINEAR_ATTENTION_ARGS_H

#include "memfix/linear_attention.h"

/* 1 when the recurrent state (or its gradient) names any buffer: the call
 * carries a state, which only the causal form takes. NULL: 0. */
int mf_la_state_any(const mf_linear_attention_state *s);
int mf_la_grad_any(const mf_linear_attention_state_grad *g);

#endif /* MEMFIX_OPS_LINEAR_ATTENTION_ARGS_H */
