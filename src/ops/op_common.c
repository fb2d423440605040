/* Helpers shared by src/ops/<op>.c (see op_common.h). */
#include "op_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mf_status mf_op_pick_backend(const char *func, mf_context *ctx, const char *kernels, int *is_cuda) {
    switch (mf_context_backend(ctx)) {
    case MF_BACKEND_HOST: *is_cuda = 0; return MF_OK;
    case MF_BACKEND_CUDA:
#ifdef MF_HAVE_CUDA
        *is_cuda = 1;
        return MF_OK;
#else
        return mf_set_error(MF_ERR_BACKEND_UNAVAILABLE, func, __FILE__, __LINE__,
                            "memfix was built without the CUDA backend");
#endif
    default: break;
    }
    return mf_set_error(MF_ERR_BACKEND_UNAVAILABLE, func, __FILE__, __LINE__,
                        "the context's backend %d has no %s kernels",
                        (int)mf_context_backend(ctx), kernels);
}

void mf_op_copy_msg(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src != NULL ? src : "");
}

void mf_op_fill_uniform(mf_dtype dtype, void *p, size_t n, uint64_t seed, float lo, float hi) {
    if (dtype == MF_DTYPE_BF16)
        mf_fill_uniform_bf16((uint16_t *)p, n, seed, lo, hi);
    else
        mf_fill_uniform_f32((float *)p, n, seed, lo, hi);
}

void *mf_op_make_input(mf_dtype dtype, size_t n, uint64_t seed, float lo, float hi) {
    void *p = malloc(n * mf_dtype_size(dtype));
    if (p == NULL) return NULL;
    mf_op_fill_uniform(dtype, p, n, seed, lo, hi);
    return p;
}

void mf_op_fill_nan(mf_dtype dtype, void *p, size_t n) {
    if (dtype == MF_DTYPE_BF16) {
        for (size_t i = 0; i < n; ++i) ((uint16_t *)p)[i] = 0x7fc0u;
    } else {
        mf_fill_nan_f32((float *)p, n);
    }
}

void mf_op_to_f32(mf_dtype dtype, const void *src, float *dst, size_t n) {
    if (dtype == MF_DTYPE_BF16)
        mf_bf16_to_f32_array((const uint16_t *)src, dst, n);
    else
        memcpy(dst, src, n * sizeof(float));
}

void mf_op_case_labels(mf_case_result *out, mf_context *ctx, const char *variant, mf_dtype dtype) {
    mf_op_copy_msg(out->variant, sizeof(out->variant), variant);
    mf_op_copy_msg(out->backend, sizeof(out->backend), mf_backend_name(mf_context_backend(ctx)));
    mf_op_copy_msg(out->dtype, sizeof(out->dtype), mf_dtype_name(dtype));
}

void mf_op_fold_errors(mf_case_result *out, const mf_compare_result *cmp) {
    if (cmp->max_abs_err > out->max_abs_err) out->max_abs_err = cmp->max_abs_err;
    if (cmp->max_rel_err > out->max_rel_err) out->max_rel_err = cmp->max_rel_err;
}

mf_status mf_op_fold_compare(const float *got, const float *ref, size_t n, const mf_tolerance *tol,
                             const char *what, mf_case_result *out, int *all_pass) {
    mf_compare_result cmp;
    MF_TRY(mf_compare_f32(got, ref, n, tol, NULL, &cmp));
    mf_op_fold_errors(out, &cmp);
    if (!cmp.pass && *all_pass) {
        snprintf(out->message, sizeof(out->message), "%s: %.200s", what, cmp.reason);
        *all_pass = 0;
    }
    return MF_OK;
}

mf_status mf_op_fold_compare_row(const float *got, const float *ref, size_t n, const char *what,
                                 const char *tol_base, mf_dtype dtype, mf_case_result *out,
                                 int *all_pass) {
    char tol_name[64];
    snprintf(tol_name, sizeof tol_name, "%s.%s", tol_base, mf_dtype_name(dtype));
    const mf_tolerance *tol = mf_tolerance_get(tol_name);
    if (tol == NULL) MF_FAIL(MF_ERR_INTERNAL, "no tolerance row '%s' in src/core/tolerance.c", tol_name);
    return mf_op_fold_compare(got, ref, n, tol, what, out, all_pass);
}

void mf_op_case_verdict(mf_case_result *out, int pass) {
    const int mem_ok = out->opt_peak_bytes <= out->ceiling_bytes;
    out->pass = pass && mem_ok;
    if (pass && !mem_ok)
        snprintf(out->message, sizeof(out->message),
                 "scratch %zu bytes exceeds the ceiling of %zu bytes", out->opt_peak_bytes,
                 out->ceiling_bytes);
}

void mf_op_case_error(mf_case_result *out, mf_status st) {
    if (st != MF_OK) {
        out->pass = 0;
        mf_op_copy_msg(out->message, sizeof(out->message), mf_last_error());
    }
}
