/* The tolerance table: ONE table of every numerical tolerance, each row with a
 * one-line justification, assembled from three places:
 *   - the rows below: the harness self-tests;
 *   - the rows each op holds in every build, also without the kernels: its
 *     reference against PyTorch ("<op>.torch.<dtype>", in src/ops/<op>_args.c),
 *     listed by src/ops/op_list.c (mf_builtin_tolerances);
 *   - each registered op's rows, "<op>.<output>.<dtype>" (its optimized path
 *     against its reference), held next to its descriptor in src/ops/<op>.c
 *     (mf_op_desc.tolerances).
 * mf_tolerance_table() lists them all (these rows first, then the ops' rows of
 * every build, then their descriptors' rows, both in registry order) and
 * mf_tolerance_get() looks one up by name.
 *
 * Each row: name, atol, rtol, nmse bound, and a one-line justification. A
 * comparison passes iff the NaN/Inf pattern matches, every
 * |got-ref| <= atol + rtol*|ref|, and sum (got-ref)^2 / sum ref^2 <= nmse.
 * Justify from the arithmetic (accumulation length, storage precision, the
 * reference's double accumulation), never from "it passed". Widening a row
 * until a failing test passes is a defect. */
#include "mf_internal.h"
#include "memfix/check.h"
#include "memfix/registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const mf_tolerance mf_core_tolerances[] = {
    /* ---- harness self-tests (tests/unit/test_harness*.c) ------------------ */
    { "selftest.f32", 1e-5, 1e-4, 1e-8,
      "harness self-test only: fp32 storage of values computed exactly in double, a few ulps of slack" },
    { "selftest.exact", 0.0, 0.0, 0.0, "harness self-test only: bit-exact expectations (copies, fills)" },
};
#define MF_N_CORE_TOLERANCES (sizeof mf_core_tolerances / sizeof mf_core_tolerances[0])

/* The whole table, built once: the rows above, the ops' rows of every build,
 * then each built-in op's descriptor rows. */
static const mf_tolerance *mf_table = mf_core_tolerances;
static size_t mf_table_n = MF_N_CORE_TOLERANCES;
static pthread_once_t mf_table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
    size_t n_ops = 0, n = MF_N_CORE_TOLERANCES;
    const mf_op_desc *const *ops = mf_registry_builtin(&n_ops);
    for (size_t i = 0; i < mf_builtin_tolerances_count; i++) n += mf_builtin_tolerances[i]->count;
    for (size_t i = 0; i < n_ops; i++) n += (size_t)ops[i]->n_tolerances;
    if (n == MF_N_CORE_TOLERANCES) return;
    /* Lives as long as the program (reachable through mf_table). */
    mf_tolerance *all = malloc(n * sizeof *all);
    if (all == NULL) return; /* out of memory: the ops' rows are not found (an error per lookup) */
    memcpy(all, mf_core_tolerances, sizeof mf_core_tolerances);
    size_t k = MF_N_CORE_TOLERANCES;
    for (size_t i = 0; i < mf_builtin_tolerances_count; i++)
        for (size_t j = 0; j < mf_builtin_tolerances[i]->count; j++)
            all[k++] = mf_builtin_tolerances[i]->rows[j];
    for (size_t i = 0; i < n_ops; i++)
        for (int j = 0; j < ops[i]->n_tolerances; j++) all[k++] = ops[i]->tolerances[j];
    mf_table = all;
    mf_table_n = n;
}

const mf_tolerance *mf_tolerance_table(size_t *count)
{
    pthread_once(&mf_table_once, build_table);
    if (count) *count = mf_table_n;
    return mf_table;
}

const mf_tolerance *mf_tolerance_get(const char *name)
{
    if (name == NULL) {
        mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "name is NULL");
        return NULL;
    }
    size_t n = 0;
    const mf_tolerance *t = mf_tolerance_table(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0) return &t[i];
    mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__, "no tolerance named '%s'", name);
    return NULL;
}
