// Checker self-test (tests/resources.cmake): the kernel and its budget are in a file this one
// includes from its folder, where the check reads budgets too; the budget is smaller than what
// the kernel needs, so the check has to fail with "exceeds its register budget" (not with "no
// mf-budget stated").
#include "included/over_regs.cuh"
