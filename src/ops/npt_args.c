/* npt's part built even without the kernels: its reference's tolerance rows
 * against PyTorch, which the fixture test compares under in every build
 * (op_list.h). */
#include "memfix/check.h"
#include "op_list.h"

/* ---- the reference against PyTorch float64 (tests/equivalence/test_npt_fixtures.c) ---- */
static const mf_tolerance torch_rows[] = {
    { "npt.torch.f32", 1e-6, 2.4e-7, 1e-12,
      "reference vs torch float64 (seed 004 einsum and factored graphs) rounded to fp32: <= 2 ulp (2^-22) "
      "plus the reference's fp32 storage of delta_w/G (2^-24 each) summed over <= D*F = 234 terms" },
    { "npt.torch.bf16", 1e-6, 3.91e-3, 1.6e-5,
      "reference rounds each output once to bf16 (u = 2^-8 = 3.906e-3 relative) vs torch float64 kept in "
      "fp32; nmse <= u^2 = 1.5e-5" },
};
const mf_tolerance_rows mf_npt_torch_tolerances = { torch_rows, MF_COUNT_OF(torch_rows) };
