/* The registry's lists (mf_internal.h), filled from the one list of ops
 * (op_list.h): the descriptors of the registered ops and the tolerance rows the
 * ops hold in every build. Built even without the kernels (then with no
 * descriptors). */
#include "op_list.h"

#include "memfix/registry.h"

#include <stddef.h>

#ifdef MF_HAVE_HOST_KERNELS
#define MF_OP_DECLARE_DESC(op) extern const mf_op_desc mf_op_##op;
MF_OP_LIST(MF_OP_DECLARE_DESC)
#define MF_OP_DESC(op) &mf_op_##op,
#else
#define MF_OP_DESC(op)
#endif

const mf_op_desc *const mf_builtin_ops[] = {
    MF_OP_LIST(MF_OP_DESC) NULL /* sentinel: keeps the array non-empty; not counted */
};
const size_t mf_builtin_ops_count = MF_COUNT_OF(mf_builtin_ops) - 1;

#define MF_OP_TORCH_TOLERANCES(op) &mf_##op##_torch_tolerances,
const mf_tolerance_rows *const mf_builtin_tolerances[] = { MF_OP_LIST(MF_OP_TORCH_TOLERANCES) };
const size_t mf_builtin_tolerances_count = MF_COUNT_OF(mf_builtin_tolerances);
