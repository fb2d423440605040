/* Linear attention's argument helpers shared by the reference and the public
 * entry points, and the reference's tolerance row against PyTorch: built into
 * the core library even without the kernels. Declarations:
 * include/memfix/linear_attention.h and op_list.h. */
#include "memfix/check.h"
#include "memfix/linear_attention.h"
#include "op_list.h"

#include <stddef.h>

int mf_linear_attention_state_any(const mf_linear_attention_state *s)
{
    return s != NULL &&
           (s->initial_kv != NULL || s->initial_z != NULL || s->final_kv != NULL || s->final_z != NULL);
}

int mf_linear_attention_state_grad_any(const mf_linear_attention_state_grad *g)
{
    return g != NULL && (g->d_final_kv != NULL || g->d_final_z != NULL || g->d_initial_kv != NULL ||
                         g->d_initial_z != NULL);
}

/* ---- the reference against PyTorch float64 (tests/equivalence/test_linear_attention_fixtures.c) ---- */
static const mf_tolerance torch_rows[] = {
    { "linear_attention.torch.f32", 1e-12, 2.4e-7, 1e-13,
      "reference (double cumsum) vs the seed's linear_attention_* + autograd in torch float64, both rounded "
      "to fp32: 1-2 ulp (2^-23) where the doubles straddle a rounding boundary" },
};
const mf_tolerance_rows mf_linear_attention_torch_tolerances = { torch_rows, MF_COUNT_OF(torch_rows) };
