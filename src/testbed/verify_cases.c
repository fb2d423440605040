/* memfix verify's case list: the case ids of a verification, their descriptions, and case ids as text. */
#include "verify_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MF_HAVE_HOST_KERNELS

/* ---- the case list of a verification ----------------------------------------- */
int mf_verify_has_generator(const char *op)
{
    const mf_verify_target *tg = mf_vf_find_target(op, NULL);
    return tg != NULL && tg->run_id != NULL && tg->describe != NULL;
}

mf_status mf_verify_case_ids(const char *op, uint64_t seed, int n_random, int large, mf_case_id *ids,
                             size_t cap, size_t *n)
{
    MF_CHECK_NOT_NULL(n);
    *n = 0;
    MF_CHECK_NOT_NULL(op);
    const int n_fixed = mf_verify_n_cases(op);
    if (n_fixed < 0) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates", op);
    if (n_random < 0) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "n_random %d is negative", n_random);
    if (!mf_verify_has_generator(op)) n_random = 0, large = 0;
    const size_t need = (size_t)n_fixed + (size_t)n_random + (large ? 1u : 0u);
    if (ids == NULL || cap < need) {
        *n = need; /* the size to ask for */
        if (ids == NULL) return MF_OK;
        MF_FAIL(MF_ERR_INVALID_SIZE, "ids holds %zu ids; %zu needed", cap, need);
    }
    size_t k = 0;
    for (int i = 0; i < n_fixed; i++) ids[k++] = mf_tb_fixed_id(i);
    for (int i = 0; i < n_random; i++) ids[k++] = (mf_case_id){ MF_CASE_RANDOM, i, seed };
    if (large) ids[k++] = (mf_case_id){ MF_CASE_LARGE, 0, seed };
    *n = k;
    return MF_OK;
}

mf_status mf_verify_describe(const char *op, const mf_case_id *id, char *buf, size_t cap, size_t *bytes)
{
    MF_CHECK_NOT_NULL(op);
    MF_CHECK_NOT_NULL(id);
    MF_CHECK_NOT_NULL(buf);
    if (cap > 0) buf[0] = '\0';
    if (bytes != NULL) *bytes = 0;
    const mf_verify_target *tg = mf_vf_find_target(op, NULL);
    if (tg == NULL) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates", op);
    if (tg->describe == NULL) {
        if (id->kind != MF_CASE_FIXED || id->index < 0 || id->index >= mf_verify_n_cases(op))
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "target '%s': no case %d", op, id->index);
        snprintf(buf, cap, "(built-in case %d)", id->index);
        return MF_OK;
    }
    size_t b = 0;
    MF_TRY(tg->describe(id, buf, cap, &b));
    if (bytes != NULL) *bytes = b;
    return MF_OK;
}

#else /* no host kernels: no ops, so nothing takes candidates */

int mf_verify_has_generator(const char *op)
{
    (void)op;
    return 0;
}

mf_status mf_verify_case_ids(const char *op, uint64_t seed, int n_random, int large, mf_case_id *ids,
                             size_t cap, size_t *n)
{
    (void)seed, (void)n_random, (void)large, (void)ids, (void)cap;
    if (n != NULL) *n = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels",
            op != NULL ? op : "(null)");
}

mf_status mf_verify_describe(const char *op, const mf_case_id *id, char *buf, size_t cap, size_t *bytes)
{
    (void)id;
    if (buf != NULL && cap > 0) buf[0] = '\0';
    if (bytes != NULL) *bytes = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels",
            op != NULL ? op : "(null)");
}

#endif

/* ---- case ids as text (both builds) ---------------------------------------------------------- */
void mf_case_id_format(const mf_case_id *id, char *buf, size_t cap)
{
    if (buf == NULL || cap == 0) return;
    if (id == NULL)
        snprintf(buf, cap, "?");
    else if (id->kind == MF_CASE_FIXED)
        snprintf(buf, cap, "f%d", id->index);
    else if (id->kind == MF_CASE_RANDOM)
        snprintf(buf, cap, "g%d", id->index);
    else
        snprintf(buf, cap, "large");
}

int mf_case_id_parse(const char *s, uint64_t seed, mf_case_id *id)
{
    if (s == NULL || id == NULL) return 0;
    if (strcmp(s, "large") == 0) {
        *id = (mf_case_id){ MF_CASE_LARGE, 0, seed };
        return 1;
    }
    mf_case_kind kind = MF_CASE_FIXED;
    const char *p = s;
    if (*p == 'f' || *p == 'g') kind = *p++ == 'g' ? MF_CASE_RANDOM : MF_CASE_FIXED;
    if (*p < '0' || *p > '9') return 0;
    char *end = NULL;
    const long v = strtol(p, &end, 10);
    if (end == NULL || *end != '\0' || v < 0 || v > 1000000) return 0;
    *id = (mf_case_id){ kind, (int)v, kind == MF_CASE_FIXED ? 0 : seed };
    return 1;
}
