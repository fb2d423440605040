/* Checking support shared by the test suites, `memfix report` and `memfix verify`:
 * the tolerance table, the one comparison routine, seeded inputs. */
#ifndef MEMFIX_CHECK_H
#define MEMFIX_CHECK_H

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One row of the tolerance table (src/core/tolerance.c: its own rows, then each
 * registered op's, mf_op_desc.tolerances in src/ops/<op>.c). Each entry carries a
 * one-line justification. Lookup by name, e.g. "matmul.f32", "matmul.bf16". */
typedef struct mf_tolerance {
    const char *name;
    double atol;
    double rtol;
    double nmse;     /* bound on sum((got-ref)^2) / max(sum(ref^2), tiny) */
    const char *why; /* one-line justification */
} mf_tolerance;

MF_API const mf_tolerance *mf_tolerance_get(const char *name); /* NULL if unknown */
MF_API const mf_tolerance *mf_tolerance_table(size_t *count);

/* Why a comparison or a case failed, in the order the comparison checks
 * (mf_failure_name gives the short names "error", "nan-pattern", ...). */
typedef enum mf_failure {
    MF_FAILURE_NONE = 0,       /* passed */
    MF_FAILURE_ERROR,          /* a call returned an error status: nothing compared */
    MF_FAILURE_NONFINITE,      /* the NaN/Inf pattern differs (e.g. NaN pre-fill left unwritten) */
    MF_FAILURE_ALL_ZERO,       /* the output is all zeros while the reference is not */
    MF_FAILURE_TOLERANCE,      /* an entry outside atol + rtol*|ref| */
    MF_FAILURE_NMSE,           /* the normalized MSE exceeds its bound */
    MF_FAILURE_SCRATCH_CEILING /* outputs match, but scratch exceeds the ceiling */
} mf_failure;
MF_API const char *mf_failure_name(mf_failure f);

/* The axes of a compared array, row-major (the last axis varies fastest), so that
 * a comparison names an element in the op's own terms, "(b=0, h=1, row=17,
 * col=3)", rather than by its flat index "[892]". names: the axes' names,
 * outermost first, separated by single spaces ("b h row col"; "" for a scalar,
 * one element); dim[k]: the extent of the k-th axis (> 0). */
#define MF_AXES_MAX 6
typedef struct mf_axes {
    const char *names;
    int64_t dim[MF_AXES_MAX];
} mf_axes;

/* The number of elements of axes a (the product of its extents; 1 for a
 * scalar); 0 when a is NULL or malformed (more than MF_AXES_MAX names, an
 * empty name or one over 15 characters, an extent <= 0, a product over SIZE_MAX). */
MF_API size_t mf_axes_count(const mf_axes *a);
/* Writes element i of an array with axes a into buf (capacity cap, always
 * terminated): "(b=0, h=1, row=17, col=3)", "(scalar)" for a scalar, "[i]"
 * when a is NULL. MF_ERR_INVALID_ARGUMENT (and "[i]") when a is malformed or
 * i >= mf_axes_count(a); MF_ERR_NULL_POINTER for a NULL buf. */
MF_API mf_status mf_axes_format(const mf_axes *a, size_t i, char *buf, size_t cap);

/* Comparison: passes iff the NaN/Inf pattern of got equals that of ref, every
 * |got-ref| <= atol + rtol*|ref| over finite entries, and the normalized MSE is
 * <= nmse. An output that is all zeros while ref is not, or that still holds the
 * NaN pre-fill, fails. */
typedef struct mf_compare_result {
    int pass;
    size_t n;
    size_t n_bad;       /* entries outside atol + rtol*|ref| */
    size_t worst_index; /* index of the largest |got-ref| / (atol + rtol*|ref|) */
    double worst_got, worst_ref;
    double max_abs_err;
    double max_rel_err; /* max |got-ref| / |ref| over entries with ref != 0 */
    double nmse;
    double budget_used_pct;    /* 100 * max over i of |got-ref| / (atol + rtol*|ref|) */
    size_t nonfinite_mismatch; /* entries whose NaN/Inf class differs */
    mf_failure failure;        /* MF_FAILURE_NONE when it passes; else the first failing criterion */
    char worst_at[112];        /* worst_index as mf_axes_format writes it: "(row=3, col=7)", or "[i]" */
    char reason[384];          /* human-readable verdict, naming the element as worst_at does */
} mf_compare_result;

/* Compares n floats. If dump_path is non-NULL and the comparison fails, writes a
 * text dump there (tolerance, summary, and every index with got, ref, error).
 * Returns MF_OK when the comparison ran (check out->pass), an error status on bad
 * arguments (NULL pointers, n == 0, negative/NaN/Inf tolerance bounds).
 * Details: the verdict reason names the first failing criterion in the order
 * NaN/Inf pattern, all-zero output, elementwise bound, NMSE. Entries whose
 * NaN/Inf class differs count in nonfinite_mismatch (not n_bad), and make
 * max_abs_err, max_rel_err and budget_used_pct +Inf with worst_index at the
 * first such entry. The error statistics and the NMSE use finite pairs only;
 * when ref is all zeros the NMSE criterion does not apply (nmse = 0). A dump
 * that cannot be written leaves the verdict unchanged and says so in reason. */
MF_API mf_status mf_compare_f32(const float *got, const float *ref, size_t n, const mf_tolerance *tol,
                                const char *dump_path, mf_compare_result *out);
/* mf_compare_f32 on an array with axes 'axes' (NULL: flat indices): the reason,
 * worst_at and the dump name elements by their indices on those axes.
 * MF_ERR_INVALID_ARGUMENT when mf_axes_count(axes) != n. */
MF_API mf_status mf_compare_f32_axes(const float *got, const float *ref, size_t n, const mf_tolerance *tol,
                                     const mf_axes *axes, const char *dump_path, mf_compare_result *out);

/* Seeded inputs: uniform in [lo, hi) with no zero entries (|x| >= 1e-3*(hi-lo)).
 * Deterministic for a given seed on every platform (splitmix64/xoshiro).
 * Invalid arguments (NULL x, lo >= hi, non-finite bounds) write nothing and
 * set mf_last_error(); n == 0 writes nothing. */
MF_API void mf_fill_uniform_f32(float *x, size_t n, uint64_t seed, float lo, float hi);
/* The same values rounded to bf16 (stored as uint16_t). */
MF_API void mf_fill_uniform_bf16(uint16_t *x, size_t n, uint64_t seed, float lo, float hi);
/* The NaN prefill of outputs: a quiet NaN with a payload of its own, so that a comparison tells an
 * element never written (still this pattern; bf16 0x7fe5 widens to 0x7fe50000) from a NaN the
 * kernel computed (0/0 gives the default NaN: 0x7fffffff on a GPU, 0xffc00000 on x86). */
#define MF_NAN_FILL_F32_BITS 0x7fe5a5a5u
#define MF_NAN_FILL_BF16_BITS 0x7fe5u
/* n copies of the NaN prefill (MF_NAN_FILL_F32_BITS). */
MF_API void mf_fill_nan_f32(float *x, size_t n);
MF_API void mf_bf16_to_f32_array(const uint16_t *in, float *out, size_t n);
MF_API void mf_f32_to_bf16_array(const float *in, uint16_t *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
