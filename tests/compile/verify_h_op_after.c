/* memfix/verify.h first, then every op's header: every candidate type compiles under its own name. */
#include "memfix/verify.h"
#include "memfix/attention.h"
#include "memfix/cross_entropy.h"
#include "memfix/linear_attention.h"
#include "memfix/matmul.h"
#include "memfix/npt.h"
#include "memfix/nsa.h"
#include "memfix/rope.h"

mf_attention_forward_candidate_fn c0 = 0;
mf_attention_backward_candidate_fn c1 = 0;
mf_cross_entropy_forward_candidate_fn c2 = 0;
mf_cross_entropy_backward_candidate_fn c3 = 0;
mf_linear_attention_forward_candidate_fn c4 = 0;
mf_linear_attention_backward_candidate_fn c5 = 0;
mf_matmul_candidate_fn c6 = 0;
mf_npt_forward_candidate_fn c7 = 0;
mf_npt_backward_candidate_fn c8 = 0;
mf_nsa_forward_candidate_fn c9 = 0;
mf_nsa_backward_candidate_fn c10 = 0;
mf_rope_candidate_fn c11 = 0;
