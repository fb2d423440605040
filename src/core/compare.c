/* The one comparison routine used by every suite and by `memfix report`.
 *
 * Verdict, in this order of precedence:
 *   1. the NaN/Inf pattern of got equals that of ref (class by class: finite,
 *      NaN, +Inf, -Inf); a NaN where ref is finite usually means the output
 *      was never written (outputs are pre-filled with NaN);
 *   2. got is not all zeros while ref has a nonzero entry;
 *   3. every finite pair has |got-ref| <= atol + rtol*|ref|;
 *   4. nmse = sum (got-ref)^2 / max(sum ref^2, DBL_MIN) <= tol->nmse, over
 *      finite pairs (skipped when ref is all zeros: then only 1-3 apply).
 * Error statistics accumulate in double. The reason names an element by its
 * indices on the array's axes when the caller gives them (mf_axes). */
#define _POSIX_C_SOURCE 200809L
#include "mf_internal.h"
#include "memfix/check.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { CLS_FINITE = 0, CLS_NAN = 1, CLS_PINF = 2, CLS_NINF = 3 };

/* Still the outputs' NaN prefill (MF_NAN_FILL_*_BITS; a bf16 one widened to f32): never written, or
 * only accumulated into (a NaN operand's payload propagates on the CPU). */
static int is_prefill(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u == MF_NAN_FILL_F32_BITS || u == (uint32_t)MF_NAN_FILL_BF16_BITS << 16;
}

static int fclass(float x)
{
    if (isnan(x)) return CLS_NAN;
    if (isinf(x)) return x > 0 ? CLS_PINF : CLS_NINF;
    return CLS_FINITE;
}

static const char *class_name(int c)
{
    static const char *const names[] = { "finite", "NaN", "+Inf", "-Inf" };
    return names[c];
}

/* |got-ref| / (atol + rtol*|ref|) for a finite pair; +Inf when the bound is 0
 * and the error is not. */
static double budget_ratio(double err, double bound)
{
    if (bound > 0) return err / bound;
    return err > 0 ? INFINITY : 0.0;
}

/* ---- axes: an element named by its indices ---------------------------------------------- */
enum { AXIS_NAME_MAX = 15 };

/* The k-th name of a->names into name (at most AXIS_NAME_MAX characters); the rank is the number of names.
 * -1 when the names are malformed. */
static int axes_rank(const mf_axes *a, char (*name)[AXIS_NAME_MAX + 1])
{
    int rank = 0;
    const char *p = a->names;
    if (p == NULL) return -1;
    while (*p != '\0') {
        size_t len = 0;
        while (p[len] != '\0' && p[len] != ' ') len++;
        if (len == 0 || len > AXIS_NAME_MAX || rank == MF_AXES_MAX) return -1;
        if (name != NULL) {
            memcpy(name[rank], p, len);
            name[rank][len] = '\0';
        }
        rank++;
        p += len;
        if (*p == ' ') {
            p++;
            if (*p == '\0') return -1; /* a trailing space */
        }
    }
    return rank;
}

size_t mf_axes_count(const mf_axes *a)
{
    if (a == NULL) return 0;
    const int rank = axes_rank(a, NULL);
    if (rank < 0) return 0;
    size_t n = 1;
    for (int k = 0; k < rank; k++) {
        if (a->dim[k] <= 0 || (uint64_t)a->dim[k] > SIZE_MAX / n) return 0;
        n *= (size_t)a->dim[k];
    }
    return n;
}

mf_status mf_axes_format(const mf_axes *a, size_t i, char *buf, size_t cap)
{
    MF_CHECK_NOT_NULL(buf);
    if (cap == 0) MF_FAIL(MF_ERR_INVALID_SIZE, "cap must be > 0");
    snprintf(buf, cap, "[%zu]", i);
    if (a == NULL) return MF_OK;
    char name[MF_AXES_MAX][AXIS_NAME_MAX + 1];
    const int rank = axes_rank(a, name);
    const size_t n = mf_axes_count(a);
    if (rank < 0 || n == 0)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT,
                "axes '%s': expected up to %d space-separated names of 1 to %d characters, each with an "
                "extent > 0",
                a->names != NULL ? a->names : "(null)", MF_AXES_MAX, AXIS_NAME_MAX);
    if (i >= n) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "element %zu of axes '%s' (%zu elements)", i, a->names, n);
    if (rank == 0) {
        snprintf(buf, cap, "(scalar)");
        return MF_OK;
    }
    size_t idx[MF_AXES_MAX], rest = i;
    for (int k = rank - 1; k >= 0; k--) {
        idx[k] = rest % (size_t)a->dim[k];
        rest /= (size_t)a->dim[k];
    }
    size_t len = 0;
    for (int k = 0; k < rank && len < cap; k++) {
        const int w = snprintf(buf + len, cap - len, "%s%s=%zu%s", k ? ", " : "(", name[k], idx[k],
                               k == rank - 1 ? ")" : "");
        if (w < 0) break;
        len += (size_t)w;
    }
    return MF_OK;
}

/* "b h row col = 2 x 3 x 17 x 4" (the dump's header). */
static void axes_shape(const mf_axes *a, char *buf, size_t cap)
{
    const int rank = axes_rank(a, NULL);
    int len = snprintf(buf, cap, "%s =", rank == 0 ? "(scalar)" : a->names);
    for (int k = 0; k < rank && len >= 0 && (size_t)len < cap; k++)
        len += snprintf(buf + len, cap - (size_t)len, "%s %lld", k ? " x" : "", (long long)a->dim[k]);
    if (rank == 0 && len >= 0 && (size_t)len < cap) snprintf(buf + len, cap - (size_t)len, " 1 element");
}

static void write_dump(const char *path, const float *got, const float *ref, size_t n,
                       const mf_tolerance *tol, const mf_axes *axes, mf_compare_result *r)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        size_t len = strlen(r->reason);
        snprintf(r->reason + len, sizeof r->reason - len, " (dump to %s failed)", path);
        return;
    }
    fprintf(f, "# memfix comparison dump\n");
    fprintf(f, "# tolerance %s: atol=%.9g rtol=%.9g nmse<=%.9g (%s)\n", tol->name ? tol->name : "(unnamed)",
            tol->atol, tol->rtol, tol->nmse, tol->why ? tol->why : "");
    fprintf(f, "# verdict: %s\n", r->pass ? "PASS" : "FAIL");
    fprintf(f, "# reason: %s\n", r->reason);
    fprintf(f, "# n=%zu n_bad=%zu nonfinite_mismatch=%zu\n", r->n, r->n_bad, r->nonfinite_mismatch);
    fprintf(f, "# max_abs_err=%.9g max_rel_err=%.9g nmse=%.9g budget_used=%.3f%%\n", r->max_abs_err,
            r->max_rel_err, r->nmse, r->budget_used_pct);
    fprintf(f, "# worst index %zu %s: got=%.9g ref=%.9g\n", r->worst_index, r->worst_at, r->worst_got,
            r->worst_ref);
    if (axes != NULL) {
        char shape[160];
        axes_shape(axes, shape, sizeof shape);
        fprintf(f, "# axes %s (row-major: index = the flat index)\n", shape);
    }
    /* Small outputs: every index. Large ones: only the flagged entries, at
     * most MF_DUMP_MAX_LINES of them, so a failing multi-million-element
     * comparison does not write hundreds of megabytes. */
    enum { MF_DUMP_MAX_LINES = 65536 };
    const int only_flagged = n > MF_DUMP_MAX_LINES;
    if (only_flagged)
        fprintf(f, "# n > %d: only out-of-tolerance entries are listed (at most %d)\n", MF_DUMP_MAX_LINES,
                MF_DUMP_MAX_LINES);
    fprintf(
        f,
        "# columns: index got ref abs_err bound(atol+rtol*|ref|) budget_pct flag('*' = out of tolerance)\n");
    size_t lines = 0;
    for (size_t i = 0; i < n && lines < MF_DUMP_MAX_LINES; i++) {
        double g = got[i], rf = ref[i];
        int cg = fclass(got[i]), cr = fclass(ref[i]);
        double bound = tol->atol + tol->rtol * fabs(rf);
        if (cg != CLS_FINITE || cr != CLS_FINITE) {
            if (only_flagged && cg == cr) continue;
            fprintf(f, "%zu %.9g %.9g - - - %s\n", i, g, rf, cg != cr ? "*" : "");
            lines++;
            continue;
        }
        double err = fabs(g - rf);
        if (only_flagged && !(err > bound)) continue;
        fprintf(f, "%zu %.9g %.9g %.9g %.9g %.3f %s\n", i, g, rf, err, bound,
                100.0 * budget_ratio(err, bound), err > bound ? "*" : "");
        lines++;
    }
    if (lines == MF_DUMP_MAX_LINES) fprintf(f, "# ... truncated after %d lines\n", MF_DUMP_MAX_LINES);
    fclose(f);
}

mf_status mf_compare_f32(const float *got, const float *ref, size_t n, const mf_tolerance *tol,
                         const char *dump_path, mf_compare_result *out)
{
    return mf_compare_f32_axes(got, ref, n, tol, NULL, dump_path, out);
}

mf_status mf_compare_f32_axes(const float *got, const float *ref, size_t n, const mf_tolerance *tol,
                              const mf_axes *axes, const char *dump_path, mf_compare_result *out)
{
    MF_CHECK_NOT_NULL(out);
    memset(out, 0, sizeof *out);
    out->failure = MF_FAILURE_ERROR;
    snprintf(out->reason, sizeof out->reason, "comparison did not run");
    MF_CHECK_NOT_NULL(got);
    MF_CHECK_NOT_NULL(ref);
    MF_CHECK_NOT_NULL(tol);
    if (n == 0) MF_FAIL(MF_ERR_INVALID_SIZE, "n must be > 0");
    if (!(tol->atol >= 0) || !(tol->rtol >= 0) || !(tol->nmse >= 0) || isinf(tol->atol) || isinf(tol->rtol) ||
        isinf(tol->nmse))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "tolerance '%s' needs finite atol, rtol, nmse >= 0 (got %g, %g, %g)",
                tol->name ? tol->name : "(unnamed)", tol->atol, tol->rtol, tol->nmse);
    if (axes != NULL && mf_axes_count(axes) != n)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "axes '%s' hold %zu elements, n is %zu",
                axes->names != NULL ? axes->names : "(null)", mf_axes_count(axes), n);

    out->n = n;
    size_t first_class_mismatch = n, unwritten = 0, computed_nan = 0, got_nonzero = 0, ref_nonzero = 0,
           first_ref_nonzero = 0;
    double worst_ratio = -1, sum_err2 = 0, sum_ref2 = 0;
    for (size_t i = 0; i < n; i++) {
        int cg = fclass(got[i]), cr = fclass(ref[i]);
        if (cg != cr) {
            out->nonfinite_mismatch++;
            if (cg == CLS_NAN && cr == CLS_FINITE) {
                if (is_prefill(got[i]))
                    unwritten++;
                else
                    computed_nan++;
            }
            if (first_class_mismatch == n) first_class_mismatch = i;
            continue;
        }
        if (cg != CLS_FINITE) continue; /* same NaN/Inf class: equal by definition */
        double g = got[i], r = ref[i];
        if (g != 0) got_nonzero++;
        if (r != 0 && ref_nonzero++ == 0) first_ref_nonzero = i;
        double err = fabs(g - r);
        double bound = tol->atol + tol->rtol * fabs(r);
        double ratio = budget_ratio(err, bound);
        if (err > bound) out->n_bad++;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            out->worst_index = i;
        }
        if (err > out->max_abs_err) out->max_abs_err = err;
        if (r != 0 && err / fabs(r) > out->max_rel_err) out->max_rel_err = err / fabs(r);
        sum_err2 += err * err;
        sum_ref2 += r * r;
    }
    out->nmse = sum_ref2 > 0 ? sum_err2 / fmax(sum_ref2, DBL_MIN) : 0.0;
    out->budget_used_pct = worst_ratio > 0 ? 100.0 * worst_ratio : 0.0;
    if (out->nonfinite_mismatch > 0) {
        /* A class mismatch has no finite error: it uses more than the whole budget. */
        out->worst_index = first_class_mismatch;
        out->max_abs_err = INFINITY;
        out->max_rel_err = INFINITY;
        out->budget_used_pct = INFINITY;
    }
    out->worst_got = got[out->worst_index];
    out->worst_ref = ref[out->worst_index];

    const size_t w = out->worst_index;
    (void)mf_axes_format(axes, w, out->worst_at, sizeof out->worst_at); /* checked above */
    if (out->nonfinite_mismatch > 0) {
        out->failure = MF_FAILURE_NONFINITE;
        char nan_kinds[128] = "";
        if (unwritten > 0 || computed_nan > 0)
            snprintf(nan_kinds, sizeof nan_kinds,
                     "; NaN where ref is finite: %zu never written, %zu written as NaN", unwritten,
                     computed_nan);
        snprintf(out->reason, sizeof out->reason,
                 "NaN/Inf pattern differs at %zu of %zu entries (first at %s: got %s%s, ref %s)%s",
                 out->nonfinite_mismatch, n, out->worst_at, class_name(fclass(got[w])),
                 fclass(got[w]) == CLS_NAN ? (is_prefill(got[w]) ? " (the prefill)" : " (written)") : "",
                 class_name(fclass(ref[w])), nan_kinds);
    } else if (got_nonzero == 0 && ref_nonzero > 0) {
        out->failure = MF_FAILURE_ALL_ZERO;
        char at[sizeof out->worst_at];
        (void)mf_axes_format(axes, first_ref_nonzero, at, sizeof at);
        snprintf(out->reason, sizeof out->reason,
                 "output is all zeros while ref has %zu nonzero entries (the first at %s: ref %.9g)",
                 ref_nonzero, at, (double)ref[first_ref_nonzero]);
    } else if (out->n_bad > 0) {
        out->failure = MF_FAILURE_TOLERANCE;
        snprintf(out->reason, sizeof out->reason,
                 "%zu of %zu entries outside atol+rtol*|ref|; worst at %s: got %.9g ref %.9g |err| %.3g > "
                 "%.3g (%.1f%% of budget)",
                 out->n_bad, n, out->worst_at, out->worst_got, out->worst_ref,
                 fabs((double)out->worst_got - out->worst_ref), tol->atol + tol->rtol * fabs(out->worst_ref),
                 out->budget_used_pct);
    } else if (out->nmse > tol->nmse) {
        out->failure = MF_FAILURE_NMSE;
        snprintf(out->reason, sizeof out->reason,
                 "normalized MSE %.3g exceeds %.3g (max |err| %.3g; worst at %s: got %.9g ref %.9g)",
                 out->nmse, tol->nmse, out->max_abs_err, out->worst_at, out->worst_got, out->worst_ref);
    } else {
        out->pass = 1;
        snprintf(out->reason, sizeof out->reason,
                 "pass: max |err| %.3g, max rel %.3g, worst at %s at %.1f%% of budget, nmse %.3g <= %.3g",
                 out->max_abs_err, out->max_rel_err, out->worst_at, out->budget_used_pct, out->nmse,
                 tol->nmse);
    }
    if (out->pass) out->failure = MF_FAILURE_NONE;
    if (!out->pass && dump_path != NULL) write_dump(dump_path, got, ref, n, tol, axes, out);
    return MF_OK;
}

const char *mf_failure_name(mf_failure f)
{
    switch (f) {
    case MF_FAILURE_NONE: return "none";
    case MF_FAILURE_ERROR: return "error";
    case MF_FAILURE_NONFINITE: return "nan-pattern";
    case MF_FAILURE_ALL_ZERO: return "all-zero";
    case MF_FAILURE_TOLERANCE: return "tolerance";
    case MF_FAILURE_NMSE: return "nmse";
    case MF_FAILURE_SCRATCH_CEILING: return "scratch-ceiling";
    }
    return "unknown";
}
