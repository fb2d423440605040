/* The registered ops: the one list of ops, one line per op, in `memfix
 * report`'s order. MF_OP(<op>) stands for
 *   - `const mf_op_desc mf_op_<op>`: the op's descriptor (src/ops/<op>.c),
 *     registered where the kernels are built (MF_HAVE_HOST_KERNELS; a
 *     reference-only build registers none);
 *   - `const mf_tolerance_rows mf_<op>_torch_tolerances`: its reference's rows
 *     against PyTorch, "<op>.torch.<dtype>" (src/ops/<op>_args.c), in every
 *     build, as the references and their fixture tests are.
 * src/ops/op_list.c hands both lists to the core (mf_builtin_ops and
 * mf_builtin_tolerances, mf_internal.h), which names no op. Internal: not
 * installed. */
#ifndef MEMFIX_OPS_OP_LIST_H
#define MEMFIX_OPS_OP_LIST_H

#include "mf_internal.h"

#define MF_OP_LIST(MF_OP)                                                                                    \
    MF_OP(matmul)                                                                                            \
    MF_OP(rope)                                                                                              \
    MF_OP(cross_entropy)                                                                                     \
    MF_OP(npt)                                                                                               \
    MF_OP(attention)                                                                                         \
    MF_OP(linear_attention)                                                                                  \
    MF_OP(nsa)

#define MF_OP_DECLARE_TORCH_TOLERANCES(op) extern const mf_tolerance_rows mf_##op##_torch_tolerances;
MF_OP_LIST(MF_OP_DECLARE_TORCH_TOLERANCES)
#undef MF_OP_DECLARE_TORCH_TOLERANCES

#endif /* MEMFIX_OPS_OP_LIST_H */
