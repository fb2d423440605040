/* matmul's part built even without the kernels: its reference's tolerance row
 * against PyTorch, which the fixture test compares under in every build
 * (op_list.h). */
#include "memfix/check.h"
#include "op_list.h"

/* ---- the reference against PyTorch float64 (tests/equivalence/test_matmul_fixtures.c) ---- */
static const mf_tolerance torch_rows[] = {
    { "matmul.torch.f32", 1e-12, 2.4e-7, 1e-13,
      "reference (double sum) vs torch.matmul float64, both rounded to fp32: at most 1-2 ulp (2^-23) where "
      "the double sums straddle a rounding boundary" },
};
const mf_tolerance_rows mf_matmul_torch_tolerances = { torch_rows, MF_COUNT_OF(torch_rows) };
