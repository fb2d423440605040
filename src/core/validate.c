/* Argument checks shared by the public op entry points (src/ops/) and the
 * references (reference/): one wording per check (see mf_internal.h). Part of
 * the core, so a reference-only build (no src/ops) links them too. */
#include "mf_internal.h"

#include <stdint.h>
#include <string.h>

mf_status mf_check_dtype_f32_bf16(const char *func, mf_dtype dtype)
{
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16)
        return mf_set_error(MF_ERR_DTYPE, func, __FILE__, __LINE__,
                            "dtype %d is not MF_DTYPE_F32 or MF_DTYPE_BF16", (int)dtype);
    return MF_OK;
}

mf_status mf_check_bool(const char *func, const char *name, int flag)
{
    if (flag != 0 && flag != 1)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__, "%s must be 0 or 1 (got %d)",
                            name, flag);
    return MF_OK;
}

mf_status mf_check_dims_positive(const char *func, const char *prefix, int n, const int64_t *dims,
                                 const char *const *names)
{
    for (int i = 0; i < n; i++)
        if (dims[i] <= 0)
            return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__, "%s%s must be > 0 (got %lld)",
                                prefix != NULL ? prefix : "", names[i], (long long)dims[i]);
    return MF_OK;
}

mf_status mf_check_bhnd_args(const char *func, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                             int64_t D, int64_t Dv)
{
    MF_TRY(mf_check_dtype_f32_bf16(func, dtype));
    MF_TRY(mf_check_bool(func, "causal", causal));
    const int64_t dims[5] = { B, H, N, D, Dv };
    static const char *const names[5] = { "B", "H", "N", "D", "Dv" };
    return mf_check_dims_positive(func, NULL, 5, dims, names);
}

mf_status mf_check_bhnd_bytes(const char *func, mf_dtype dtype, int64_t B, int64_t H, int64_t N, int64_t D,
                              int64_t Dv, const char *f32_qk)
{
    size_t bytes;
    const int64_t es = (int64_t)mf_dtype_size(dtype);
    MF_TRY(mf_dims_product(func, "q/k bytes (B*H*N*D*dtype size)", &bytes, 5, B, H, N, D, es));
    MF_TRY(mf_dims_product(func, "v bytes (B*H*N*Dv*dtype size)", &bytes, 5, B, H, N, Dv, es));
    MF_TRY(mf_dims_product(func, f32_qk, &bytes, 5, B, H, N, D, (int64_t)4));
    return mf_dims_product(func, "out bytes (B*H*N*Dv*4)", &bytes, 5, B, H, N, Dv, (int64_t)4);
}

mf_status mf_check_all_not_null(const char *func, const char *file, int line, const char *names, size_t n,
                                const void *const *ptrs)
{
    for (size_t i = 0; i < n; i++) {
        if (ptrs[i] != NULL) continue;
        /* the i-th comma-separated name of the list */
        const char *p = names;
        for (size_t k = 0; k < i && p != NULL; k++) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
        while (p != NULL && (*p == ' ' || *p == '\t' || *p == '\n')) p++;
        const size_t len = p == NULL ? 0 : strcspn(p, ", \t\n");
        return mf_set_error(MF_ERR_NULL_POINTER, func, file, line, "%.*s is NULL", (int)len, p ? p : "");
    }
    return MF_OK;
}
