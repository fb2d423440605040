/* The testbed's case helpers (testbed.h): seeded inputs, NaN pre-fill, the one
 * comparison path and the verdict. */
#include "testbed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mf_tb_copy_msg(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src != NULL ? src : "");
}

void mf_tb_mark_cut(char *dst, size_t cap, int written)
{
    if (dst != NULL && cap >= 4 && written >= 0 && (size_t)written >= cap) memcpy(dst + cap - 4, "...", 4);
}

void mf_tb_fill_uniform(mf_dtype dtype, void *p, size_t n, uint64_t seed, float lo, float hi)
{
    if (dtype == MF_DTYPE_BF16)
        mf_fill_uniform_bf16((uint16_t *)p, n, seed, lo, hi);
    else
        mf_fill_uniform_f32((float *)p, n, seed, lo, hi);
}

void *mf_tb_make_input(mf_dtype dtype, size_t n, uint64_t seed, float lo, float hi)
{
    void *p = malloc(n * mf_dtype_size(dtype));
    if (p == NULL) return NULL;
    mf_tb_fill_uniform(dtype, p, n, seed, lo, hi);
    return p;
}

void mf_tb_fill_nan(mf_dtype dtype, void *p, size_t n)
{
    if (dtype == MF_DTYPE_BF16) {
        for (size_t i = 0; i < n; ++i) ((uint16_t *)p)[i] = MF_NAN_FILL_BF16_BITS;
    } else {
        mf_fill_nan_f32((float *)p, n);
    }
}

void mf_tb_to_f32(mf_dtype dtype, const void *src, float *dst, size_t n)
{
    if (dtype == MF_DTYPE_BF16)
        mf_bf16_to_f32_array((const uint16_t *)src, dst, n);
    else
        memcpy(dst, src, n * sizeof(float));
}

mf_status mf_tb_case_begin(mf_case_result *out, const char *op, mf_context *ctx, int variant, int n_variants,
                           int case_index, int n_cases)
{
    MF_CHECK_NOT_NULL(out);
    memset(out, 0, sizeof(*out));
    mf_tb_copy_msg(out->op, sizeof(out->op), op);
    MF_CHECK_NOT_NULL(ctx);
    if (variant < 0 || variant >= n_variants)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "%s: variant %d out of range [0, %d)", op, variant, n_variants);
    if (case_index < 0 || case_index >= n_cases)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "%s: case %d out of range [0, %d)", op, case_index, n_cases);
    return MF_OK;
}

void mf_tb_case_labels(mf_case_result *out, mf_context *ctx, const char *variant, mf_dtype dtype)
{
    mf_tb_copy_msg(out->variant, sizeof(out->variant), variant);
    mf_tb_copy_msg(out->backend, sizeof(out->backend), mf_backend_name(mf_context_backend(ctx)));
    mf_tb_copy_msg(out->dtype, sizeof(out->dtype), mf_dtype_name(dtype));
}

const mf_tolerance *mf_tb_tolerance(const char *base, mf_dtype dtype)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", base, mf_dtype_name(dtype));
    const mf_tolerance *tol = mf_tolerance_get(name);
    if (tol == NULL)
        mf_set_error(MF_ERR_INTERNAL, __func__, __FILE__, __LINE__,
                     "no tolerance row '%s' in src/core/tolerance.c", name);
    return tol;
}

/* The dump file of a failing output under $MF_TEST_DUMP_DIR (set by the test
 * registrations; unset: no dump): <op>-<variant>-<what>-<hash of the shape>.txt. */
/* memfix verify --dump: "<dir>/<target>-<case id>" (mf_tb_set_dump_stem); "" otherwise */
static _Thread_local char g_dump_prefix[400];

void mf_tb_set_dump_stem(const char *stem) { mf_tb_copy_msg(g_dump_prefix, sizeof g_dump_prefix, stem); }

static const char *dump_path(const mf_case_result *out, const char *what, char *buf, size_t cap)
{
    if (g_dump_prefix[0] != '\0') { /* memfix verify --dump: named after the target and the case id */
        const size_t at = strlen(g_dump_prefix) + 1;
        snprintf(buf, cap, "%s-%s.txt", g_dump_prefix, what);
        for (char *p = buf + (at < cap ? at : 0); *p; p++)
            if (*p == '/' || *p == ' ' || *p == '|') *p = '_';
        return buf;
    }
    const char *dir = getenv("MF_TEST_DUMP_DIR");
    if (dir == NULL || dir[0] == '\0') return NULL;
    uint64_t h = 1469598103934665603ull; /* FNV-1a of dtype and shape */
    for (const char *p = out->dtype; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (const char *p = out->shape; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    snprintf(buf, cap, "%s/%s-%s-%s-%016llx.txt", dir, out->op, out->variant, what, (unsigned long long)h);
    for (char *p = buf + strlen(dir) + 1; *p; p++)
        if (*p == '/' || *p == ' ' || *p == '|') *p = '_';
    return buf;
}

int mf_tb_dump_raw(const char *stem, const char *suffix, const void *data, size_t bytes)
{
    char path[640];
    snprintf(path, sizeof path, "%s%s", stem, suffix);
    FILE *f = fopen(path, "wb");
    if (f == NULL) return 0;
    const int ok = fwrite(data, 1, bytes, f) == bytes;
    return fclose(f) == 0 && ok;
}

mf_axes mf_tb_axes(const char *names, int rank, const int64_t *dim)
{
    mf_axes a;
    memset(&a, 0, sizeof a);
    a.names = names;
    for (int k = 0; k < rank && k < MF_AXES_MAX; k++) a.dim[k] = dim[k];
    return a;
}

void mf_tb_element_at(const mf_axes *a, size_t bytes, size_t at, char *buf, size_t cap)
{
    const size_t n = a != NULL && a->names != NULL ? mf_axes_count(a) : 0;
    if (n == 0 || bytes % n != 0 || at >= bytes || mf_axes_format(a, at / (bytes / n), buf, cap) != MF_OK)
        snprintf(buf, cap, "byte %zu", at);
}

mf_status mf_tb_compare(const float *got, const float *ref, size_t n, const mf_tolerance *tol,
                        const mf_axes *axes, const char *what, mf_case_result *out, int *all_pass)
{
    mf_compare_result cmp;
    char path[512];
    if (axes == NULL || axes->names == NULL || mf_axes_count(axes) != n)
        MF_FAIL(MF_ERR_INTERNAL, "output '%s' (%zu elements) is compared without axes that hold it (%s)",
                what, n, axes != NULL && axes->names != NULL ? axes->names : "none given");
    MF_TRY(mf_compare_f32_axes(got, ref, n, tol, axes, dump_path(out, what, path, sizeof path), &cmp));
    if (cmp.max_abs_err > out->max_abs_err) out->max_abs_err = cmp.max_abs_err;
    if (cmp.max_rel_err > out->max_rel_err) out->max_rel_err = cmp.max_rel_err;
    if (out->n_outputs < MF_CASE_MAX_OUTPUTS) {
        mf_output_result *o = &out->outputs[out->n_outputs++];
        mf_tb_copy_msg(o->what, sizeof o->what, what);
        mf_tb_copy_msg(o->tol, sizeof o->tol, tol->name);
        o->atol = tol->atol;
        o->rtol = tol->rtol;
        o->max_abs_err = cmp.max_abs_err;
        o->budget_used = cmp.budget_used_pct / 100.0;
        o->pass = cmp.pass;
        mf_tb_copy_msg(o->worst_at, sizeof o->worst_at, cmp.worst_at);
    }
    if (!cmp.pass && g_dump_prefix[0] != '\0' && dump_path(out, what, path, sizeof path) != NULL) {
        /* memfix verify --dump: the whole expected and got arrays (raw little-endian fp32) beside the
         * flagged-element list */
        char stem[520];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(path) - 4), path);
        (void)mf_tb_dump_raw(stem, ".expected.f32", ref, n * sizeof(float));
        (void)mf_tb_dump_raw(stem, ".got.f32", got, n * sizeof(float));
    }
    if (!cmp.pass && *all_pass) {
        snprintf(out->message, sizeof(out->message), "%.40s: %s", what, cmp.reason);
        out->failure = cmp.failure;
        *all_pass = 0;
    }
    return MF_OK;
}

mf_status mf_tb_compare_row(const float *got, const float *ref, size_t n, const mf_axes *axes,
                            const char *what, const char *tol_base, mf_dtype dtype, mf_case_result *out,
                            int *all_pass)
{
    const mf_tolerance *tol = mf_tb_tolerance(tol_base, dtype);
    if (tol == NULL) return MF_ERR_INTERNAL;
    return mf_tb_compare(got, ref, n, tol, axes, what, out, all_pass);
}

void mf_tb_verdict(mf_case_result *out, int pass)
{
    const int mem_ok = out->opt_peak_bytes <= out->ceiling_bytes;
    out->pass = pass && mem_ok;
    if (pass && !mem_ok) {
        out->failure = MF_FAILURE_SCRATCH_CEILING;
        snprintf(out->message, sizeof(out->message), "scratch %zu bytes exceeds the ceiling of %zu bytes",
                 out->opt_peak_bytes, out->ceiling_bytes);
    }
}

void mf_tb_case_error(mf_case_result *out, mf_status st)
{
    if (st != MF_OK) {
        out->pass = 0;
        out->failure = MF_FAILURE_ERROR;
        mf_tb_copy_msg(out->message, sizeof(out->message), mf_last_error());
    }
}

mf_status mf_tb_null_candidate(const char *func, const char *what, mf_case_result *out)
{
    if (out != NULL) memset(out, 0, sizeof(*out));
    return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "%s is NULL", what);
}

void *mf_tb_bench_alloc(mf_bench_case *c, size_t bytes, mf_status *s)
{
    if (*s != MF_OK) return NULL;
    void *p = c->n_host < MF_BENCH_MAX_BUFS ? malloc(bytes ? bytes : 1) : NULL;
    if (p == NULL) {
        *s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__,
                          "bench host buffer of %zu bytes", bytes);
        return NULL;
    }
    c->host[c->n_host++] = p;
    return p;
}

float *mf_tb_bench_host(mf_bench_case *c, size_t n, uint64_t seed, mf_status *s)
{
    float *x = (float *)mf_tb_bench_alloc(c, n * sizeof *x, s);
    if (x != NULL) mf_fill_uniform_f32(x, n, seed, -1.0f, 1.0f);
    return x;
}

void *mf_tb_bench_dev(mf_context *ctx, mf_bench_case *c, const void *host, size_t bytes, mf_status *s)
{
    void *p = NULL;
    if (*s != MF_OK) return NULL;
    if (c->n_dev >= MF_BENCH_MAX_BUFS) {
        *s = mf_set_error(MF_ERR_INTERNAL, __func__, __FILE__, __LINE__, "more than %d bench device buffers",
                          MF_BENCH_MAX_BUFS);
        return NULL;
    }
    *s = mf_buffer_alloc(ctx, bytes, &p);
    if (*s != MF_OK) return NULL;
    c->dev[c->n_dev++] = p;
    if (host != NULL) *s = mf_buffer_upload(ctx, p, host, bytes);
    return *s == MF_OK ? p : NULL;
}

/* The dtype a tensor is stored in on the device and in its host buffer. */
static mf_dtype tb_dev_dtype(const mf_tb_tensor *t, mf_dtype dtype)
{
    return t->role == MF_TB_OUT ? MF_DTYPE_F32 : dtype;
}

static mf_dtype tb_host_dtype(const mf_tb_tensor *t, mf_dtype dtype)
{
    return t->role == MF_TB_IN || t->role == MF_TB_OUT_DT_REF ? dtype : MF_DTYPE_F32;
}

mf_status mf_tb_tensors_make(mf_tb_tensor *t, int n, mf_dtype dtype, uint64_t seed)
{
    uint64_t k = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].role == MF_TB_IN) {
            t[i].host = mf_tb_make_input(dtype, t[i].n + MF_TB_GUARD, seed + k++, t[i].lo, t[i].hi);
            if (t[i].host != NULL)
                mf_tb_fill_nan(dtype, (char *)t[i].host + t[i].n * mf_dtype_size(dtype), MF_TB_GUARD);
        } else {
            const mf_dtype hd = tb_host_dtype(&t[i], dtype);
            t[i].host = malloc(t[i].n * mf_dtype_size(hd));
            t[i].got = (float *)malloc((t[i].n + MF_TB_GUARD) * sizeof(float));
            if (t[i].host != NULL) mf_tb_fill_nan(hd, t[i].host, t[i].n);
            if (t[i].got != NULL) mf_fill_nan_f32(t[i].got, t[i].n + MF_TB_GUARD);
        }
        if (t[i].host == NULL || (t[i].role != MF_TB_IN && t[i].got == NULL))
            MF_FAIL(MF_ERR_OUT_OF_MEMORY, "host buffer of %zu elements for %s", t[i].n, t[i].name);
    }
    return MF_OK;
}

/* A tensor's device bytes: its elements and the NaN guard after them. */
static size_t tensor_bytes(const mf_tb_tensor *t, mf_dtype dtype)
{
    return (t->n + MF_TB_GUARD) * mf_dtype_size(tb_dev_dtype(t, dtype));
}

mf_status mf_tb_tensors_upload(mf_context *ctx, mf_tb_tensor *t, int n, mf_dtype dtype)
{
    for (int i = 0; i < n; i++) MF_TRY(mf_buffer_alloc(ctx, tensor_bytes(&t[i], dtype), &t[i].dev));
    for (int i = 0; i < n; i++) {
        const mf_dtype dd = tb_dev_dtype(&t[i], dtype);
        if (t[i].role == MF_TB_IN) {
            MF_TRY(mf_buffer_upload(ctx, t[i].dev, t[i].host, tensor_bytes(&t[i], dtype)));
        } else {
            /* got's first bytes hold the dtype's NaNs (data and guard) for the upload, then f32 NaNs again */
            mf_tb_fill_nan(dd, t[i].got, t[i].n + MF_TB_GUARD);
            const mf_status s = mf_buffer_upload(ctx, t[i].dev, t[i].got, tensor_bytes(&t[i], dtype));
            mf_fill_nan_f32(t[i].got, t[i].n + MF_TB_GUARD);
            MF_TRY(s);
        }
    }
    return MF_OK;
}

mf_status mf_tb_tensors_compare(mf_context *ctx, mf_tb_tensor *t, int n, mf_dtype dtype, mf_case_result *out,
                                int *all_pass)
{
    for (int i = 0; i < n; i++) {
        if (t[i].role == MF_TB_IN) continue;
        const mf_dtype dd = tb_dev_dtype(&t[i], dtype);
        const size_t ng = t[i].n + MF_TB_GUARD;
        if (dd == MF_DTYPE_F32) {
            MF_TRY(mf_buffer_download(ctx, t[i].got, t[i].dev, ng * sizeof(float)));
            continue;
        }
        void *raw = malloc(ng * mf_dtype_size(dd));
        if (raw == NULL)
            MF_FAIL(MF_ERR_OUT_OF_MEMORY, "download buffer of %zu elements for %s", t[i].n, t[i].name);
        const mf_status s = mf_buffer_download(ctx, raw, t[i].dev, ng * mf_dtype_size(dd));
        if (s == MF_OK) mf_tb_to_f32(dd, raw, t[i].got, ng);
        free(raw);
        MF_TRY(s);
    }
    for (int i = 0; i < n; i++) {
        if (t[i].role == MF_TB_IN) continue;
        for (size_t g = t[i].n; g < t[i].n + MF_TB_GUARD; g++) {
            if (!isnan(t[i].got[g]) && *all_pass) { /* written past the end */
                *all_pass = 0;
                out->failure = MF_FAILURE_NONFINITE;
                char last[112] = "";
                if (t[i].axes.names != NULL && mf_axes_count(&t[i].axes) == t[i].n)
                    (void)mf_axes_format(&t[i].axes, t[i].n - 1, last, sizeof last);
                snprintf(out->message, sizeof(out->message),
                         "%s: write past the end: element %zu after its last one %s (%g)", t[i].name,
                         g - t[i].n + 1, last[0] ? last : "", (double)t[i].got[g]);
            }
        }
        if (t[i].tol == NULL) continue;
        const mf_dtype hd = tb_host_dtype(&t[i], dtype);
        float *ref = hd == MF_DTYPE_F32 ? (float *)t[i].host : (float *)malloc(t[i].n * sizeof(float));
        if (ref == NULL)
            MF_FAIL(MF_ERR_OUT_OF_MEMORY, "compare buffer of %zu elements for %s", t[i].n, t[i].name);
        if (hd != MF_DTYPE_F32) mf_tb_to_f32(hd, t[i].host, ref, t[i].n);
        const mf_status s =
            mf_tb_compare_row(t[i].got, ref, t[i].n, &t[i].axes, t[i].name, t[i].tol, dtype, out, all_pass);
        if (ref != t[i].host) free(ref);
        MF_TRY(s);
    }
    return MF_OK;
}

mf_status mf_tb_tensors_verdict(mf_context *ctx, mf_tb_tensor *t, int n, mf_dtype dtype, mf_case_result *out)
{
    int pass = 1;
    MF_TRY(mf_tb_tensors_compare(ctx, t, n, dtype, out, &pass));
    mf_tb_verdict(out, pass);
    return MF_OK;
}

void mf_tb_tensors_free(mf_context *ctx, mf_tb_tensor *t, int n)
{
    for (int i = 0; i < n; i++) {
        if (t[i].dev != NULL) mf_buffer_free(ctx, t[i].dev);
        free(t[i].got);
        free(t[i].host);
        t[i].dev = t[i].host = NULL;
        t[i].got = NULL;
    }
}

mf_status mf_tb_bench_io(mf_context *ctx, mf_bench_case *c, int n_in, const size_t *n, uint64_t seed0,
                         size_t out_n)
{
    mf_status s = MF_OK;
    for (int i = 0; i < n_in; i++)
        mf_tb_bench_dev(ctx, c, mf_tb_bench_host(c, n[i], seed0 + (uint64_t)i, &s), n[i] * 4, &s);
    c->ref_out = mf_tb_bench_host(c, out_n, 0, &s);
    c->out_dev = (float *)mf_tb_bench_dev(ctx, c, NULL, out_n * 4, &s);
    c->out_n = out_n;
    return s;
}

void *mf_tb_target_output(mf_context *ctx, mf_bench_target_run *t, size_t bytes, mf_status *s)
{
    void *p = NULL;
    if (*s != MF_OK) return NULL;
    if (t->n_dev >= MF_BENCH_MAX_BUFS) {
        *s = mf_set_error(MF_ERR_INTERNAL, __func__, __FILE__, __LINE__, "more than %d target device buffers",
                          MF_BENCH_MAX_BUFS);
        return NULL;
    }
    if ((*s = mf_buffer_alloc(ctx, bytes ? bytes : 1, &p)) != MF_OK) return NULL;
    t->dev[t->n_dev++] = p;
    return p;
}

void *mf_tb_target_input(mf_context *ctx, mf_bench_target_run *t, mf_dtype dtype, size_t n, uint64_t seed,
                         float lo, float hi, void **dev, mf_status *s)
{
    *dev = NULL;
    if (*s != MF_OK) return NULL;
    if (t->n_host >= MF_BENCH_MAX_BUFS) {
        *s = mf_set_error(MF_ERR_INTERNAL, __func__, __FILE__, __LINE__, "more than %d target host buffers",
                          MF_BENCH_MAX_BUFS);
        return NULL;
    }
    void *h = mf_tb_make_input(dtype, n, seed, lo, hi);
    if (h == NULL) {
        *s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "target input of %zu elements",
                          n);
        return NULL;
    }
    t->host[t->n_host++] = h;
    const size_t bytes = n * mf_dtype_size(dtype);
    if ((*dev = mf_tb_target_output(ctx, t, bytes, s)) == NULL) return NULL;
    if ((*s = mf_buffer_upload(ctx, *dev, h, bytes)) != MF_OK) return NULL;
    return h;
}
