/* Reference RoPE: the executable specification of the RoPE fix.
 *
 * Source: seed document 000 ("Memory Profiling Report"), bug #2 "RoPE Cache
 * Device Mismatch". The model's rotary embedding cached cos/sin tables and
 * regenerated them when a sequence outgrew the cache:
 *
 *     t = torch.arange(seq_len, dtype=self.inv_freq.dtype)   # created on the CPU
 *     freqs = torch.outer(t, self.inv_freq)                  # inv_freq on CUDA
 *
 * i.e. the positions were built on the host. This file is that old flow, kept
 * on the host end to end (so it runs) and in double precision (so it is the
 * yardstick), materializing what it materialized:
 *   1. t = arange(L) on the host, L = (largest position used) + 1   (8*L bytes)
 *   2. inv_freq[i] = base^(-2i/rd), i < rd/2                       (8*rd/2 bytes)
 *   3. freqs[s][i] = (t[s] / scaling) * inv_freq[i]; the HF tables
 *        emb = cat(freqs, freqs)           (GPT-NeoX / HF rotate_half layout)
 *        emb = repeat_interleave(freqs, 2) (GPT-J interleaved layout)
 *        cos_cached = cos(emb), sin_cached = sin(emb)             (2 * 8*L*rd bytes)
 *   4. the HF apply, per token (b, t) at position p and head h:
 *        forward   y  = x * cos[p] + rotate(x) * sin[p]
 *        backward  dx = dy * cos[p] + rotate^T(dy * sin[p])   (the transpose of
 *                  the forward map: rotate is linear with rotate^T = -rotate)
 *      where rotate = rotate_half:       (x1, x2) -> (-x2, x1)  on the halves,
 *            rotate = rotate_every_two:  (x[2i], x[2i+1]) -> (-x[2i+1], x[2i]);
 *      features rd .. Dh-1 are copied (partial rotary).
 * All scratch comes from the context's host scratch allocator, so the measured
 * peak is exactly mf_ref_rope_scratch_bytes(L, rd) = 8*(L + rd/2 + 2*L*rd)
 * (include/memfix/rope.h). Outputs are the double results rounded once to fp32.
 * Positions come from the caller as integers (an offset or int32/int64 ids on
 * the host), never through a floating-point dtype.
 */
#include "memfix/rope.h"

#include "mf_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

size_t mf_ref_rope_scratch_bytes(int64_t table_len, int64_t rotary_dim)
{
    if (table_len <= 0 || rotary_dim <= 0 || (rotary_dim % 2) != 0) return SIZE_MAX;
    size_t tab, both, elems, bytes;
    if (!mf_size_mul((size_t)table_len, (size_t)rotary_dim, &tab) || !mf_size_mul(tab, 2, &both) ||
        !mf_size_add(both, (size_t)table_len, &elems) ||
        !mf_size_add(elems, (size_t)rotary_dim / 2, &elems) || !mf_size_mul(elems, sizeof(double), &bytes))
        return SIZE_MAX;
    return bytes;
}

/* Position of token (b, t). */
static int64_t ref_position(const mf_rope_positions *pos, size_t b, size_t t)
{
    if (pos->kind == MF_ROPE_POS_OFFSET) return pos->offset + (int64_t)t;
    const size_t e = b * (size_t)pos->batch_stride + t;
    if (pos->kind == MF_ROPE_POS_I32) return (int64_t)((const int32_t *)pos->ids)[e];
    return ((const int64_t *)pos->ids)[e];
}

/* Largest position, and the range check of explicit HOST ids (the public
 * entry points check device ids on the device). */
static mf_status ref_max_position(const char *func, const mf_rope_positions *pos, int64_t batch,
                                  int64_t seq_len, int64_t *max_pos)
{
    if (pos->kind == MF_ROPE_POS_OFFSET) {
        *max_pos = pos->offset + seq_len - 1;
        return MF_OK;
    }
    const int is32 = pos->kind == MF_ROPE_POS_I32;
    const size_t esize = is32 ? 4 : 8;
    const size_t rows = pos->batch_stride == 0 ? 1 : (size_t)batch;
    int64_t mx = -1;
    for (size_t r = 0; r < rows; ++r) {
        const char *row = (const char *)pos->ids + r * (size_t)pos->batch_stride * esize;
        for (size_t i = 0; i < (size_t)seq_len; ++i) {
            const int64_t p = is32 ? (int64_t)((const int32_t *)row)[i] : ((const int64_t *)row)[i];
            if (p < 0 || p > MF_ROPE_MAX_POSITION)
                return mf_set_error(MF_ERR_OUT_OF_RANGE, func, __FILE__, __LINE__,
                                    "position id %lld at (b=%zu, t=%zu) is outside [0, MF_ROPE_MAX_POSITION]",
                                    (long long)p, r, i);
            if (p > mx) mx = p;
        }
    }
    *max_pos = mx;
    return MF_OK;
}

/* Rotates one head row x (Dh floats) into y with the table rows c, s (rd
 * doubles each). Reads both features of a pair before writing either, so
 * y == x (in place) is fine. */
static void ref_rotate_row(const float *x, float *y, const double *c, const double *s, size_t rd, size_t dh,
                           mf_rope_layout layout, mf_rope_direction dir)
{
    const size_t half = rd / 2;
    for (size_t i = 0; i < half; ++i) {
        /* the pair (j0, j1) with rotate(x)[j0] = -x[j1], rotate(x)[j1] = x[j0] */
        const size_t j0 = layout == MF_ROPE_HALF ? i : 2 * i;
        const size_t j1 = layout == MF_ROPE_HALF ? i + half : 2 * i + 1;
        const double x0 = (double)x[j0], x1 = (double)x[j1];
        double y0, y1;
        if (dir == MF_ROPE_FORWARD) {
            /* y = x * cos + rotate(x) * sin */
            y0 = x0 * c[j0] + (-x1) * s[j0];
            y1 = x1 * c[j1] + x0 * s[j1];
        } else {
            /* dx = dy * cos + rotate^T(dy * sin); rotate^T(w)[j0] = w[j1], [j1] = -w[j0] */
            y0 = x0 * c[j0] + x1 * s[j1];
            y1 = x1 * c[j1] - x0 * s[j0];
        }
        y[j0] = (float)y0;
        y[j1] = (float)y1;
    }
    for (size_t j = rd; j < dh; ++j) y[j] = x[j]; /* partial rotary: pass-through */
}

mf_status mf_ref_rope(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                      const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    MF_CHECK_NOT_NULL(ctx);
    MF_TRY(mf_rope_validate(__func__, cfg, dir, t, pos));
    if (t->dtype != MF_DTYPE_F32)
        MF_FAIL(MF_ERR_DTYPE, "the reference takes MF_DTYPE_F32 host arrays (got %s); widen bf16 first",
                mf_dtype_name(t->dtype) ? mf_dtype_name(t->dtype) : "invalid");
    int64_t max_pos = 0;
    MF_TRY(ref_max_position(__func__, pos, t->batch, t->seq_len, &max_pos));

    const int64_t L = max_pos + 1;
    if (mf_ref_rope_scratch_bytes(L, cfg->rotary_dim) == SIZE_MAX)
        MF_FAIL(MF_ERR_OVERFLOW, "host tables 8*(L + rd/2 + 2*L*rd) overflow size_t (L=%lld rd=%lld)",
                (long long)L, (long long)cfg->rotary_dim);
    const size_t n_pos = (size_t)L, rd = (size_t)cfg->rotary_dim, half = rd / 2;
    const size_t dh = (size_t)cfg->head_dim;

    void *pt = NULL, *pf = NULL, *pc = NULL, *ps = NULL;
    mf_status st = mf_scratch_alloc(ctx, MF_MEM_HOST, n_pos * sizeof(double), &pt);
    if (st == MF_OK) st = mf_scratch_alloc(ctx, MF_MEM_HOST, half * sizeof(double), &pf);
    if (st == MF_OK) st = mf_scratch_alloc(ctx, MF_MEM_HOST, n_pos * rd * sizeof(double), &pc);
    if (st == MF_OK) st = mf_scratch_alloc(ctx, MF_MEM_HOST, n_pos * rd * sizeof(double), &ps);
    if (st != MF_OK) {
        mf_scratch_free(ctx, MF_MEM_HOST, ps);
        mf_scratch_free(ctx, MF_MEM_HOST, pc);
        mf_scratch_free(ctx, MF_MEM_HOST, pf);
        mf_scratch_free(ctx, MF_MEM_HOST, pt);
        return st;
    }
    double *tpos = (double *)pt;     /* t = arange(L), on the host */
    double *inv_freq = (double *)pf; /* rd/2 */
    double *cos_tab = (double *)pc;  /* L x rd */
    double *sin_tab = (double *)ps;  /* L x rd */

    /* 1. t = arange(L) */
    for (size_t s = 0; s < n_pos; ++s) tpos[s] = (double)s;
    /* 2. inv_freq = 1 / base^(arange(0, rd, 2) / rd) */
    for (size_t i = 0; i < half; ++i) inv_freq[i] = pow(cfg->base, -(double)(2 * i) / (double)rd);
    /* 3. freqs = outer(t / scaling, inv_freq); emb; cos/sin tables */
    for (size_t s = 0; s < n_pos; ++s) {
        double *crow = cos_tab + s * rd, *srow = sin_tab + s * rd;
        for (size_t i = 0; i < half; ++i) {
            const double theta = (tpos[s] / cfg->scaling) * inv_freq[i];
            const double c = cos(theta), sn = sin(theta);
            const size_t j0 = cfg->layout == MF_ROPE_HALF ? i : 2 * i;
            const size_t j1 = cfg->layout == MF_ROPE_HALF ? i + half : 2 * i + 1;
            crow[j0] = c;
            crow[j1] = c;
            srow[j0] = sn;
            srow[j1] = sn;
        }
    }
    /* 4. apply to every head of q and k at the token's position */
    const size_t B = (size_t)t->batch, T = (size_t)t->seq_len;
    const size_t hq = (size_t)t->heads_q, hk = (size_t)t->heads_k;
    const float *q = (const float *)t->q, *k = (const float *)t->k;
    float *qo = (float *)t->q_out, *ko = (float *)t->k_out;
    for (size_t b = 0; b < B; ++b)
        for (size_t tt = 0; tt < T; ++tt) {
            const size_t p = (size_t)ref_position(pos, b, tt);
            const double *c = cos_tab + p * rd, *sn = sin_tab + p * rd;
            const size_t token = b * T + tt;
            for (size_t h = 0; h < hq; ++h) {
                const size_t row = (token * hq + h) * dh;
                ref_rotate_row(q + row, qo + row, c, sn, rd, dh, cfg->layout, dir);
            }
            for (size_t h = 0; h < hk; ++h) {
                const size_t row = (token * hk + h) * dh;
                ref_rotate_row(k + row, ko + row, c, sn, rd, dh, cfg->layout, dir);
            }
        }

    mf_scratch_free(ctx, MF_MEM_HOST, ps);
    mf_scratch_free(ctx, MF_MEM_HOST, pc);
    mf_scratch_free(ctx, MF_MEM_HOST, pf);
    mf_scratch_free(ctx, MF_MEM_HOST, pt);
    return MF_OK;
}
