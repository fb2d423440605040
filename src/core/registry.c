/* The registry of fixes shared by `memfix report`, `memfix verify`, `memfix
 * bench`, the suites and later tools: the one list of ops. Adding a fix is
 * adding its mf_op_desc (in src/ops/<op>.c) and one MF_OP line below. */
#include "mf_internal.h"
#include "memfix/registry.h"

#include <string.h>

/* ---- registered ops: one line per op, MF_OP(<op>) for the descriptor
 * `const mf_op_desc mf_op_<op>` defined in src/ops/<op>.c. Ops exist only when
 * the kernels are built (MF_HAVE_HOST_KERNELS: cudahost present); a
 * reference-only build registers none. The order is `memfix report`'s. */
#ifdef MF_HAVE_HOST_KERNELS
#define MF_REGISTERED_OPS(MF_OP)                                                                             \
    MF_OP(matmul)                                                                                            \
    MF_OP(rope)                                                                                              \
    MF_OP(cross_entropy)                                                                                     \
    MF_OP(npt)                                                                                               \
    MF_OP(attention)                                                                                         \
    MF_OP(linear_attention)                                                                                  \
    MF_OP(nsa)
#else
#define MF_REGISTERED_OPS(MF_OP)
#endif

#define MF_OP_DECLARE(op) extern const mf_op_desc mf_op_##op;
MF_REGISTERED_OPS(MF_OP_DECLARE)
#define MF_OP_POINTER(op) &mf_op_##op,

static const mf_op_desc *const mf_builtin_ops[] = {
    MF_REGISTERED_OPS(MF_OP_POINTER) NULL /* sentinel: keeps the array non-empty; not counted */
};
/* ---- end of registered ops ---------------------------------------------- */

static const mf_op_desc *const *mf_override_ops;
static size_t mf_override_count;

void mf_registry_override(const struct mf_op_desc *const *ops, size_t n)
{
    mf_override_ops = ops;
    mf_override_count = ops ? n : 0;
}

const mf_op_desc *const *mf_registry_builtin(size_t *count)
{
    if (count) *count = sizeof mf_builtin_ops / sizeof mf_builtin_ops[0] - 1;
    return mf_builtin_ops;
}

const mf_op_desc *const *mf_registry(size_t *count)
{
    if (mf_override_ops != NULL) {
        if (count) *count = mf_override_count;
        return mf_override_ops;
    }
    return mf_registry_builtin(count);
}

const mf_op_desc *mf_registry_find(const char *name)
{
    if (name == NULL) {
        mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "name is NULL");
        return NULL;
    }
    size_t n = 0;
    const mf_op_desc *const *ops = mf_registry(&n);
    for (size_t i = 0; i < n; i++)
        if (ops[i] != NULL && ops[i]->name != NULL && strcmp(ops[i]->name, name) == 0) return ops[i];
    mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__, "no registered op named '%s'", name);
    return NULL;
}
