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

/* Argument validation, shared with the public entry points (src/ops/rope.c);
 * defined at the end of this file. The first checks everything but the id
 * values; the second scans the ids (on the host when device_ctx == NULL) for
 * their range and maximum. */
mf_status mf_rope_internal_validate_config(const char *func, const mf_rope_config *cfg);
mf_status mf_rope_internal_validate(const char *func, const mf_rope_config *cfg,
                                    mf_rope_direction dir, const mf_rope_tensors *t,
                                    const mf_rope_positions *pos);
mf_status mf_rope_internal_max_position(const char *func, mf_context *device_ctx,
                                        const mf_rope_positions *pos, int64_t batch,
                                        int64_t seq_len, int64_t *max_pos);

size_t mf_ref_rope_scratch_bytes(int64_t table_len, int64_t rotary_dim) {
    if (table_len <= 0 || rotary_dim <= 0 || (rotary_dim % 2) != 0) return SIZE_MAX;
    size_t tab, both, elems, bytes;
    if (!mf_size_mul((size_t)table_len, (size_t)rotary_dim, &tab) || !mf_size_mul(tab, 2, &both) ||
        !mf_size_add(both, (size_t)table_len, &elems) ||
        !mf_size_add(elems, (size_t)rotary_dim / 2, &elems) ||
        !mf_size_mul(elems, sizeof(double), &bytes))
        return SIZE_MAX;
    return bytes;
}

/* Position of token (b, t). */
static int64_t ref_position(const mf_rope_positions *pos, size_t b, size_t t) {
    if (pos->kind == MF_ROPE_POS_OFFSET) return pos->offset + (int64_t)t;
    const size_t e = b * (size_t)pos->batch_stride + t;
    if (pos->kind == MF_ROPE_POS_I32) return (int64_t)((const int32_t *)pos->ids)[e];
    return ((const int64_t *)pos->ids)[e];
}

/* Rotates one head row x (Dh floats) into y with the table rows c, s (rd
 * doubles each). Reads both features of a pair before writing either, so
 * y == x (in place) is fine. */
static void ref_rotate_row(const float *x, float *y, const double *c, const double *s,
                           size_t rd, size_t dh, mf_rope_layout layout, mf_rope_direction dir) {
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
                      const mf_rope_tensors *t, const mf_rope_positions *pos) {
    MF_CHECK_NOT_NULL(ctx);
    MF_TRY(mf_rope_internal_validate(__func__, cfg, dir, t, pos));
    if (t->dtype != MF_DTYPE_F32)
        MF_FAIL(MF_ERR_DTYPE, "the reference takes MF_DTYPE_F32 host arrays (got %s); widen bf16 first",
                mf_dtype_name(t->dtype) ? mf_dtype_name(t->dtype) : "invalid");
    int64_t max_pos = 0;
    MF_TRY(mf_rope_internal_max_position(__func__, NULL, pos, t->batch, t->seq_len, &max_pos));

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

/* ==== small public helpers and argument validation (also used by src/ops/rope.c;
 * here because the reference is built even without the kernels) ============== */

void mf_rope_config_init(mf_rope_config *cfg, int64_t head_dim) {
    if (cfg == NULL) return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->head_dim = head_dim;
    cfg->rotary_dim = head_dim;
    cfg->base = 10000.0;
    cfg->scaling = 1.0;
    cfg->layout = MF_ROPE_HALF;
}

mf_rope_positions mf_rope_positions_offset(int64_t offset) {
    mf_rope_positions p;
    memset(&p, 0, sizeof(p));
    p.kind = MF_ROPE_POS_OFFSET;
    p.offset = offset;
    return p;
}

mf_rope_positions mf_rope_positions_ids(mf_rope_pos_kind kind, const void *ids, int64_t batch_stride) {
    mf_rope_positions p;
    memset(&p, 0, sizeof(p));
    p.kind = kind;
    p.ids = ids;
    p.batch_stride = batch_stride;
    return p;
}

const char *mf_rope_layout_name(mf_rope_layout l) {
    switch (l) {
    case MF_ROPE_HALF: return "half";
    case MF_ROPE_INTERLEAVED: return "interleaved";
    }
    return NULL;
}



#define ROPE_ERR(status, ...) return mf_set_error((status), func, __FILE__, __LINE__, __VA_ARGS__)

static int ranges_overlap(const void *a, size_t na, const void *b, size_t nb) {
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a0 < b0 + nb && b0 < a0 + na;
}

mf_status mf_rope_internal_validate_config(const char *func, const mf_rope_config *cfg) {
    if (cfg == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "cfg is NULL");
    if (cfg->head_dim <= 0)
        ROPE_ERR(MF_ERR_INVALID_SIZE, "head_dim must be > 0 (got %lld)", (long long)cfg->head_dim);
    if (cfg->rotary_dim <= 0 || (cfg->rotary_dim % 2) != 0)
        ROPE_ERR(MF_ERR_INVALID_SIZE, "rotary_dim must be even and >= 2 (got %lld)",
                 (long long)cfg->rotary_dim);
    if (cfg->rotary_dim > cfg->head_dim)
        ROPE_ERR(MF_ERR_INVALID_SIZE, "rotary_dim %lld exceeds head_dim %lld",
                 (long long)cfg->rotary_dim, (long long)cfg->head_dim);
    if (!isfinite(cfg->base) || !(cfg->base > 0.0))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "base must be finite and > 0 (got %g)", cfg->base);
    if (!isfinite(cfg->scaling) || !(cfg->scaling > 0.0))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "scaling must be finite and > 0 (got %g)", cfg->scaling);
    if (cfg->layout != MF_ROPE_HALF && cfg->layout != MF_ROPE_INTERLEAVED)
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "layout %d is not MF_ROPE_HALF or MF_ROPE_INTERLEAVED",
                 (int)cfg->layout);
    return MF_OK;
}

mf_status mf_rope_internal_validate(const char *func, const mf_rope_config *cfg,
                                    mf_rope_direction dir, const mf_rope_tensors *t,
                                    const mf_rope_positions *pos) {
    MF_TRY(mf_rope_internal_validate_config(func, cfg));
    if (dir != MF_ROPE_FORWARD && dir != MF_ROPE_BACKWARD)
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "direction %d is not MF_ROPE_FORWARD or MF_ROPE_BACKWARD",
                 (int)dir);
    if (t == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "tensors is NULL");
    if (pos == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "positions is NULL");
    if (t->q == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "q is NULL");
    if (t->k == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "k is NULL");
    if (t->q_out == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "q_out is NULL");
    if (t->k_out == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "k_out is NULL");
    const size_t esize = mf_dtype_size(t->dtype);
    if (esize == 0) ROPE_ERR(MF_ERR_DTYPE, "dtype %d is not MF_DTYPE_F32 or MF_DTYPE_BF16", (int)t->dtype);
    size_t q_bytes, k_bytes;
    MF_TRY(mf_dims_product(func, "q bytes (B*T*Hq*Dh*dtype size)", &q_bytes, 5, t->batch, t->seq_len,
                           t->heads_q, cfg->head_dim, (int64_t)esize));
    MF_TRY(mf_dims_product(func, "k bytes (B*T*Hk*Dh*dtype size)", &k_bytes, 5, t->batch, t->seq_len,
                           t->heads_k, cfg->head_dim, (int64_t)esize));
    /* outputs: identical to their input (in place) or disjoint from everything else */
    if (t->q_out != t->q && ranges_overlap(t->q_out, q_bytes, t->q, q_bytes))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "q_out partially overlaps q (in place needs q_out == q)");
    if (t->k_out != t->k && ranges_overlap(t->k_out, k_bytes, t->k, k_bytes))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "k_out partially overlaps k (in place needs k_out == k)");
    if (ranges_overlap(t->q_out, q_bytes, t->k, k_bytes))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "q_out overlaps k");
    if (ranges_overlap(t->k_out, k_bytes, t->q, q_bytes))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "k_out overlaps q");
    if (ranges_overlap(t->q_out, q_bytes, t->k_out, k_bytes))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "q_out overlaps k_out");

    switch (pos->kind) {
    case MF_ROPE_POS_OFFSET:
        if (pos->offset < 0)
            ROPE_ERR(MF_ERR_OUT_OF_RANGE, "position offset must be >= 0 (got %lld)", (long long)pos->offset);
        if (pos->offset > MF_ROPE_MAX_POSITION - (t->seq_len - 1))
            ROPE_ERR(MF_ERR_OUT_OF_RANGE, "positions offset + T - 1 = %lld + %lld exceed MF_ROPE_MAX_POSITION",
                     (long long)pos->offset, (long long)(t->seq_len - 1));
        break;
    case MF_ROPE_POS_I32:
    case MF_ROPE_POS_I64: {
        if (pos->ids == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "position ids is NULL");
        if (pos->batch_stride < 0 || (pos->batch_stride > 0 && pos->batch_stride < t->seq_len))
            ROPE_ERR(MF_ERR_INVALID_SIZE, "ids batch_stride must be 0 or >= T = %lld (got %lld)",
                     (long long)t->seq_len, (long long)pos->batch_stride);
        /* the last id read: (B-1)*stride + T-1 must be addressable */
        size_t span;
        if (!mf_size_mul((size_t)(t->batch - 1), (size_t)pos->batch_stride, &span) ||
            !mf_size_add(span, (size_t)t->seq_len, &span) ||
            !mf_size_mul(span, pos->kind == MF_ROPE_POS_I32 ? 4 : 8, &span))
            ROPE_ERR(MF_ERR_OVERFLOW, "position ids extent (B-1)*batch_stride + T overflows size_t");
        if ((pos->flags & ~MF_ROPE_NO_POSITION_CHECK) != 0)
            ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "unknown position flags 0x%x", pos->flags);
        break;
    }
    default:
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "position kind %d is not MF_ROPE_POS_OFFSET, _I32 or _I64",
                 (int)pos->kind);
    }
    return MF_OK;
}

/* Largest position, and the range check of explicit ids. Host ids are read in
 * place; device ids (device_ctx != NULL) are copied back in 32 KiB chunks on
 * the stack: no allocation. */
#define ROPE_ID_CHUNK 4096
mf_status mf_rope_internal_max_position(const char *func, mf_context *device_ctx,
                                        const mf_rope_positions *pos, int64_t batch,
                                        int64_t seq_len, int64_t *max_pos) {
    if (pos->kind == MF_ROPE_POS_OFFSET) {
        *max_pos = pos->offset + seq_len - 1;
        return MF_OK;
    }
    const int is32 = pos->kind == MF_ROPE_POS_I32;
    const size_t esize = is32 ? 4 : 8;
    const size_t rows = pos->batch_stride == 0 ? 1 : (size_t)batch;
    int64_t mx = -1;
    int64_t chunk[ROPE_ID_CHUNK];
    for (size_t r = 0; r < rows; ++r) {
        const char *row = (const char *)pos->ids + r * (size_t)pos->batch_stride * esize;
        for (size_t t0 = 0; t0 < (size_t)seq_len; t0 += ROPE_ID_CHUNK) {
            const size_t n = (size_t)seq_len - t0 < ROPE_ID_CHUNK ? (size_t)seq_len - t0 : ROPE_ID_CHUNK;
            const void *src = row + t0 * esize;
            if (device_ctx != NULL) {
                MF_TRY(mf_buffer_download(device_ctx, chunk, src, n * esize));
                src = chunk;
            }
            for (size_t i = 0; i < n; ++i) {
                const int64_t p = is32 ? (int64_t)((const int32_t *)src)[i] : ((const int64_t *)src)[i];
                if (p < 0 || p > MF_ROPE_MAX_POSITION)
                    ROPE_ERR(MF_ERR_OUT_OF_RANGE,
                             "position id %lld at (b=%zu, t=%zu) is outside [0, MF_ROPE_MAX_POSITION]",
                             (long long)p, r, t0 + i);
                if (p > mx) mx = p;
            }
        }
    }
    *max_pos = mx;
    return MF_OK;
}

