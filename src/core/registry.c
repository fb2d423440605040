/* The registry of fixes shared by `memfix report`, the suites and later tools.
 * Adding a fix is adding its mf_op_desc (in src/ops/<op>.c) and two lines in
 * the marked list below. */
#include "mf_internal.h"
#include "memfix/registry.h"

#include <string.h>

/* ---- registered ops: op helpers add their declaration and pointer here ----
 * extern const mf_op_desc mf_op_<op>;      (declaration, in the block below)
 * &mf_op_<op>,                              (pointer, in mf_builtin_ops[])
 * Ops exist only when the kernels are built (MF_HAVE_HOST_KERNELS: cudahost
 * present); a reference-only build registers none. */
#ifdef MF_HAVE_HOST_KERNELS
/* declarations: */
extern const mf_op_desc mf_op_matmul;
extern const mf_op_desc mf_op_rope;
extern const mf_op_desc mf_op_cross_entropy;
extern const mf_op_desc mf_op_npt;
extern const mf_op_desc mf_op_attention;
extern const mf_op_desc mf_op_linear_attention;
/* end of declarations */
#endif

static const mf_op_desc *const mf_builtin_ops[] = {
#ifdef MF_HAVE_HOST_KERNELS
    /* pointers: */
    &mf_op_matmul,
    &mf_op_rope,
    &mf_op_cross_entropy,
    &mf_op_npt,
    &mf_op_attention,
    &mf_op_linear_attention,
    /* end of pointers */
#endif
    NULL /* sentinel: keeps the array non-empty; not counted */
};
/* ---- end of registered ops ---------------------------------------------- */

static const mf_op_desc *const *mf_override_ops;
static size_t mf_override_count;

void mf_registry_override(const struct mf_op_desc *const *ops, size_t n)
{
    mf_override_ops = ops;
    mf_override_count = ops ? n : 0;
}

const mf_op_desc *const *mf_registry(size_t *count)
{
    if (mf_override_ops != NULL) {
        if (count) *count = mf_override_count;
        return mf_override_ops;
    }
    if (count) *count = sizeof mf_builtin_ops / sizeof mf_builtin_ops[0] - 1;
    return mf_builtin_ops;
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
