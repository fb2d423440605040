/* memfix/verify.h alone: a candidate type names its op's header in the compiler's error
 * (tests/verify.cmake expects "mf_matmul_candidate_fn_is_declared_in_memfix_matmul_h"). */
#include "memfix/verify.h"

mf_matmul_candidate_fn candidate;
