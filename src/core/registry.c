/* The registry of fixes shared by `memfix report`, `memfix verify`, `memfix
 * bench`, the suites and later tools. The core names no op: the one list of
 * ops is MF_OP_LIST in src/ops/op_list.h, handed to the core as mf_builtin_ops
 * (src/ops/op_list.c, mf_internal.h); adding a fix is one line there, for its
 * mf_op_desc in src/ops/<op>.c. */
#include "mf_internal.h"
#include "memfix/registry.h"

#include <string.h>

static const mf_op_desc *const *mf_override_ops;
static size_t mf_override_count;

void mf_registry_override(const struct mf_op_desc *const *ops, size_t n)
{
    mf_override_ops = ops;
    mf_override_count = ops ? n : 0;
}

const mf_op_desc *const *mf_registry_builtin(size_t *count)
{
    if (count) *count = mf_builtin_ops_count;
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
