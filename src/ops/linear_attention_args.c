/* Linear attention's argument helpers shared by the reference and the public
 * entry points: built into the core library even without the kernels.
 * Declarations: linear_attention_args.h. */
#include "linear_attention_args.h"

#include <stddef.h>

int mf_la_state_any(const mf_linear_attention_state *s)
{
    return s != NULL &&
           (s->initial_kv != NULL || s->initial_z != NULL || s->final_kv != NULL || s->final_z != NULL);
}

int mf_la_grad_any(const mf_linear_attention_state_grad *g)
{
    return g != NULL && (g->d_final_kv != NULL || g->d_final_z != NULL || g->d_initial_kv != NULL ||
                         g->d_initial_z != NULL);
}
