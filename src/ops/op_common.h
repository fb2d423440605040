/* Helpers shared by the registry entries (run_case) of src/ops/<op>.c and by
 * their public entry points' backend dispatch. Internal: not installed. The
 * argument checks shared with the references live in the core
 * (mf_internal.h, src/core/validate.c), which a reference-only build links. */
#ifndef MEMFIX_OP_COMMON_H
#define MEMFIX_OP_COMMON_H

#include "memfix/check.h"
#include "memfix/registry.h"
#include "mf_internal.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- backend dispatch -------------------------------------------------------------- */
/* *is_cuda = 0 for the host backend, 1 for CUDA (when built with it); otherwise
 * MF_ERR_BACKEND_UNAVAILABLE, the message naming func and "<kernels> kernels". */
mf_status mf_op_pick_backend(const char *func, mf_context *ctx, const char *kernels, int *is_cuda);

/* ---- host buffers ------------------------------------------------------------------ */
/* snprintf "%s" into dst (capacity cap), truncating; NULL src gives "". */
void mf_op_copy_msg(char *dst, size_t cap, const char *src);
/* n seeded uniform values in [lo, hi) of dtype (F32 or BF16) into p. */
void mf_op_fill_uniform(mf_dtype dtype, void *p, size_t n, uint64_t seed, float lo, float hi);
/* malloc(n * dtype size) filled by mf_op_fill_uniform; NULL when out of memory. */
void *mf_op_make_input(mf_dtype dtype, size_t n, uint64_t seed, float lo, float hi);
/* n NaNs of dtype into p (bf16 NaN is 0x7fc0), so an unwritten output fails. */
void mf_op_fill_nan(mf_dtype dtype, void *p, size_t n);
/* n values of dtype at src widened to fp32 into dst. */
void mf_op_to_f32(mf_dtype dtype, const void *src, float *dst, size_t n);

/* ---- the case result ----------------------------------------------------------------- */
/* out->variant, out->backend (ctx's) and out->dtype. */
void mf_op_case_labels(mf_case_result *out, mf_context *ctx, const char *variant, mf_dtype dtype);
/* Keeps the worst absolute and relative errors of cmp in out. */
void mf_op_fold_errors(mf_case_result *out, const mf_compare_result *cmp);
/* Compares one output (mf_compare_f32 under tol) and folds its errors into out;
 * the first failing output (while *all_pass) writes "<what>: <reason>" to
 * out->message and clears *all_pass. Returns the comparison's status. */
mf_status mf_op_fold_compare(const float *got, const float *ref, size_t n, const mf_tolerance *tol,
                             const char *what, mf_case_result *out, int *all_pass);
/* The same under the tolerance row "<tol_base>.<dtype name>" (MF_ERR_INTERNAL
 * when src/core/tolerance.c has no such row). */
mf_status mf_op_fold_compare_row(const float *got, const float *ref, size_t n, const char *what,
                                 const char *tol_base, mf_dtype dtype, mf_case_result *out,
                                 int *all_pass);
/* The verdict: out->pass = pass && opt_peak <= ceiling; when only the memory
 * check fails, out->message says so. */
void mf_op_case_verdict(mf_case_result *out, int pass);
/* On a failing status: out->pass = 0 and out->message = the last error. */
void mf_op_case_error(mf_case_result *out, mf_status st);

#ifdef __cplusplus
}
#endif

#endif
