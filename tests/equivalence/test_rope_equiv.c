/* RoPE (seed 000, bug #2; issue 5): the fused and cache variants against the
 * reference (reference/rope.c) on the context's backend (host execution mode
 * or CUDA): both layouts, GQA, partial rotary, explicit int32/int64 ids and
 * offsets, fp32 and bf16 storage, forward and backward, in place and out of
 * place; the seed's regression (a sequence longer than the cached table);
 * long-context precision at positions 131071 and 1048575; bf16 positions. */
#include "memfix/rope.h"
#include "mf_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_FUSED = 0, V_CACHE = 1 };

typedef struct eq_case {
    int64_t B, T, Hq, Hk, Dh, rd;
    double base, scaling;
    mf_rope_layout layout;
    mf_rope_direction dir;
    mf_dtype dtype;
    mf_rope_pos_kind kind;
    int64_t offset;     /* MF_ROPE_POS_OFFSET */
    const int64_t *ids; /* explicit ids (host, int64; narrowed for I32) */
    int64_t n_ids;      /* elements of ids */
    int64_t batch_stride;
    int in_place;
    int variant;            /* V_FUSED or V_CACHE */
    int64_t cache_capacity; /* initial capacity of the cache variant */
    uint64_t seed;
} eq_case;

static eq_case base_case(int variant)
{
    eq_case c;
    memset(&c, 0, sizeof c);
    c.B = 2;
    c.T = 7;
    c.Hq = 4;
    c.Hk = 2;
    c.Dh = 16;
    c.rd = 16;
    c.base = 10000.0;
    c.scaling = 1.0;
    c.layout = MF_ROPE_HALF;
    c.dir = MF_ROPE_FORWARD;
    c.dtype = MF_DTYPE_F32;
    c.kind = MF_ROPE_POS_OFFSET;
    c.variant = variant;
    c.cache_capacity = 4; /* smaller than most tables below: growth is exercised too */
    c.seed = 0x524f5045u;
    return c;
}

static mf_rope_config case_config(const eq_case *c)
{
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, c->Dh);
    cfg.rotary_dim = c->rd;
    cfg.base = c->base;
    cfg.scaling = c->scaling;
    cfg.layout = c->layout;
    return cfg;
}

/* Runs the case: seeded inputs in [-1, 1), the reference on their fp32 values,
 * the variant on device buffers (outputs pre-filled with NaN unless in place),
 * and compares q and k with the dtype's tolerance row (or 'tol_name'). If
 * 'cache_out' is non-NULL the cache is returned instead of destroyed. */
static void run_case_tol(const eq_case *c, const char *tol_name, mf_rope_cache **cache_out)
{
    mf_context *ctx = mf_test_ctx();
    const mf_rope_config cfg = case_config(c);
    const size_t nq = (size_t)(c->B * c->T * c->Hq * c->Dh), nk = (size_t)(c->B * c->T * c->Hk * c->Dh);
    const size_t n = nq + nk, esize = mf_dtype_size(c->dtype);
    float *x32 = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float)),
          *got = malloc(n * sizeof(float));
    void *x = malloc(n * esize), *raw = malloc(n * esize);
    ck_assert(x32 && ref && got && x && raw);
    if (c->dtype == MF_DTYPE_BF16) {
        mf_fill_uniform_bf16(x, n, c->seed, -1.0f, 1.0f);
        mf_bf16_to_f32_array(x, x32, n);
    } else {
        mf_fill_uniform_f32(x32, n, c->seed, -1.0f, 1.0f);
        memcpy(x, x32, n * sizeof(float));
    }
    mf_fill_nan_f32(ref, n);

    /* host and device position ids */
    int32_t *ids32 = NULL;
    const void *host_ids = c->ids;
    if (c->kind == MF_ROPE_POS_I32) {
        ids32 = malloc((size_t)c->n_ids * sizeof(int32_t));
        ck_assert(ids32 != NULL);
        for (int64_t i = 0; i < c->n_ids; ++i) ids32[i] = (int32_t)c->ids[i];
        host_ids = ids32;
    }
    mf_rope_positions pos = c->kind == MF_ROPE_POS_OFFSET
                                ? mf_rope_positions_offset(c->offset)
                                : mf_rope_positions_ids(c->kind, host_ids, c->batch_stride);

    mf_rope_tensors th = { c->B, c->T, c->Hq, c->Hk, MF_DTYPE_F32, x32, x32 + nq, ref, ref + nq };
    MF_ASSERT_OK(mf_ref_rope(ctx, &cfg, c->dir, &th, &pos));

    void *d_x = NULL, *d_y = NULL, *d_ids = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, n * esize, &d_x));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_x, x, n * esize));
    if (!c->in_place) {
        /* NaN pre-fill of the outputs (0x7fc0 is a bf16 quiet NaN) */
        if (c->dtype == MF_DTYPE_BF16)
            for (size_t i = 0; i < n; ++i) ((uint16_t *)raw)[i] = 0x7fc0u;
        else
            mf_fill_nan_f32(raw, n);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * esize, &d_y));
        MF_ASSERT_OK(mf_buffer_upload(ctx, d_y, raw, n * esize));
    } else {
        d_y = d_x;
    }
    if (c->kind != MF_ROPE_POS_OFFSET) {
        const size_t ib = (size_t)c->n_ids * (c->kind == MF_ROPE_POS_I32 ? 4 : 8);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, ib, &d_ids));
        MF_ASSERT_OK(mf_buffer_upload(ctx, d_ids, host_ids, ib));
        pos.ids = d_ids;
    }
    mf_rope_tensors td = {
        c->B, c->T, c->Hq, c->Hk, c->dtype, d_x, (char *)d_x + nq * esize, d_y, (char *)d_y + nq * esize
    };
    mf_rope_cache *cache = NULL;
    if (c->variant == V_FUSED) {
        MF_ASSERT_OK(mf_rope_fused(ctx, &cfg, c->dir, &td, &pos));
    } else {
        MF_ASSERT_OK(mf_rope_cache_create(ctx, &cfg, c->cache_capacity, &cache));
        MF_ASSERT_OK(mf_rope_cache_apply(cache, c->dir, &td, &pos));
    }
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    MF_ASSERT_OK(mf_buffer_download(ctx, raw, d_y, n * esize));
    if (c->dtype == MF_DTYPE_BF16)
        mf_bf16_to_f32_array(raw, got, n);
    else
        memcpy(got, raw, n * sizeof(float));
    if (tol_name == NULL) tol_name = c->dtype == MF_DTYPE_BF16 ? "rope.out.bf16" : "rope.out.f32";
    MF_ASSERT_CLOSE(got, ref, nq, tol_name);
    MF_ASSERT_CLOSE(got + nq, ref + nq, nk, tol_name);

    if (cache_out != NULL)
        *cache_out = cache;
    else
        mf_rope_cache_destroy(cache);
    if (!c->in_place) mf_buffer_free(ctx, d_y);
    mf_buffer_free(ctx, d_x);
    mf_buffer_free(ctx, d_ids);
    free(ids32);
    free(raw);
    free(x);
    free(got);
    free(ref);
    free(x32);
}

static void run_case(const eq_case *c) { run_case_tol(c, NULL, NULL); }

/* Each test runs for both variants: _i = V_FUSED, V_CACHE (loop tests). */

START_TEST(half_gqa_fwd_bwd)
{
    eq_case c = base_case(_i);
    run_case(&c);
    c.dir = MF_ROPE_BACKWARD;
    c.seed += 1;
    run_case(&c);
}
END_TEST

START_TEST(interleaved_fwd_bwd)
{
    eq_case c = base_case(_i);
    c.layout = MF_ROPE_INTERLEAVED;
    c.Hq = 3;
    c.Hk = 1;
    run_case(&c);
    c.dir = MF_ROPE_BACKWARD;
    c.seed += 1;
    run_case(&c);
}
END_TEST

/* MHA (Hq == Hk) and MQA (Hk == 1) next to the GQA default. */
START_TEST(head_counts)
{
    eq_case c = base_case(_i);
    c.Hq = c.Hk = 3;
    run_case(&c);
    c.Hq = 8;
    c.Hk = 1;
    c.seed += 1;
    run_case(&c);
}
END_TEST

/* rotary_dim < head_dim: the tail is passed through (also with an odd Dh),
 * out of place (copied) and in place (left alone), both layouts. */
START_TEST(partial_rotary)
{
    for (int layout = 0; layout < 2; ++layout)
        for (int in_place = 0; in_place < 2; ++in_place) {
            eq_case c = base_case(_i);
            c.layout = (mf_rope_layout)layout;
            c.Dh = 13;
            c.rd = 6;
            c.in_place = in_place;
            c.dir = in_place ? MF_ROPE_BACKWARD : MF_ROPE_FORWARD;
            c.seed += (uint64_t)(2 * layout + in_place);
            run_case(&c);
        }
}
END_TEST

START_TEST(in_place)
{
    eq_case c = base_case(_i);
    c.in_place = 1;
    run_case(&c);
    c.layout = MF_ROPE_INTERLEAVED;
    c.dir = MF_ROPE_BACKWARD;
    run_case(&c);
}
END_TEST

/* Non-contiguous explicit ids: int32 with one row per batch (padded stride),
 * int64 with one row shared by every batch (stride 0, HF's (1, T)). */
START_TEST(explicit_ids)
{
    static const int64_t rows[] = { 5, 0, 33, 33,  2, 17, 9, -7, -7, /* padding, never read */
                                    1, 2, 3,  100, 0, 64, 8, -7, -7 };
    eq_case c = base_case(_i);
    c.kind = MF_ROPE_POS_I32;
    c.ids = rows;
    c.n_ids = 18;
    c.batch_stride = 9;
    run_case(&c);
    c.kind = MF_ROPE_POS_I64;
    c.dir = MF_ROPE_BACKWARD;
    run_case(&c);
    c.kind = MF_ROPE_POS_I64;
    c.batch_stride = 0;
    c.n_ids = 7;
    c.dir = MF_ROPE_FORWARD;
    c.layout = MF_ROPE_INTERLEAVED;
    run_case(&c);
}
END_TEST

/* Decoding after a KV cache: one token at offset 37, then a chunk at 250. */
START_TEST(offsets)
{
    eq_case c = base_case(_i);
    c.T = 1;
    c.offset = 37;
    run_case(&c);
    c.T = 5;
    c.offset = 250;
    c.dir = MF_ROPE_BACKWARD;
    run_case(&c);
}
END_TEST

START_TEST(bases_and_scaling)
{
    eq_case c = base_case(_i);
    c.base = 1e6;
    c.offset = 3;
    run_case(&c);
    c.scaling = 4.0;
    c.layout = MF_ROPE_INTERLEAVED;
    run_case(&c);
    c.base = 10000.0;
    c.scaling = 2.5;
    c.dir = MF_ROPE_BACKWARD;
    run_case(&c);
}
END_TEST

START_TEST(bf16_storage)
{
    for (int layout = 0; layout < 2; ++layout)
        for (int dir = 0; dir < 2; ++dir) {
            eq_case c = base_case(_i);
            c.dtype = MF_DTYPE_BF16;
            c.layout = (mf_rope_layout)layout;
            c.dir = (mf_rope_direction)dir;
            c.Dh = 20;
            c.rd = 12; /* partial: the bf16 tail must pass through bit-exactly */
            c.offset = 11;
            c.in_place = dir;
            c.seed += (uint64_t)(2 * layout + dir);
            run_case(&c);
        }
}
END_TEST

/* The seed's regression (bug #2): the table is created for 8 positions, then
 * a 40-token sequence outgrows it. The old code crashed here (a host arange
 * meeting a device inv_freq); the cache regenerates itself on the device and
 * matches the reference, then grows again for a decode step past its end. */
START_TEST(seed_regression_cache_outgrown)
{
    mf_context *ctx = mf_test_ctx();
    eq_case c = base_case(V_CACHE);
    c.B = 1;
    c.T = 40;
    c.Hq = 2;
    c.Hk = 1;
    c.Dh = c.rd = 8;
    c.cache_capacity = 8;
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    mf_rope_cache *cache = NULL;
    run_case_tol(&c, NULL, &cache);
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 40); /* max(40, 2 * 8) */
    ck_assert_uint_eq(mf_rope_cache_size_bytes(cache), mf_rope_cache_bytes(40, 8));
    mf_rope_cache_destroy(cache);

    /* A decode step past the table: one token at position 100 (capacity 40 ->
     * max(101, 80) = 101), in place, against the reference. */
    c.T = 1;
    c.offset = 100;
    c.cache_capacity = 40;
    c.in_place = 1;
    run_case_tol(&c, NULL, &cache);
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 101);
    mf_rope_cache_destroy(cache);
}
END_TEST

/* One cache object serving a growing sequence, call after call. */
START_TEST(cache_reused_and_reserved)
{
    mf_context *ctx = mf_test_ctx();
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 8);
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(ctx, &cfg, 2, &cache));
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 2);
    MF_ASSERT_OK(mf_rope_cache_reserve(cache, 2)); /* no-op */
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 2);
    MF_ASSERT_OK(mf_rope_cache_reserve(cache, 3));
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 4);
    MF_ASSERT_OK(mf_rope_cache_reserve(cache, 50));
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 50);
    ck_assert_int_eq(mf_rope_cache_config(cache)->rotary_dim, 8);

    /* apply with the reserved cache: positions 47..49 are all in the table */
    const size_t n = 3 * 8; /* T = 3 tokens, one head of 8 */
    float x[24], ref[24], got[24], kx[24], kref[24], kgot[24];
    mf_fill_uniform_f32(x, n, 99, -1.0f, 1.0f);
    mf_fill_uniform_f32(kx, n, 100, -1.0f, 1.0f);
    mf_fill_nan_f32(ref, n);
    mf_fill_nan_f32(kref, n);
    mf_fill_nan_f32(got, n);
    mf_fill_nan_f32(kgot, n);
    mf_rope_positions pos = mf_rope_positions_offset(47);
    mf_rope_tensors th = { 1, 3, 1, 1, MF_DTYPE_F32, x, kx, ref, kref };
    MF_ASSERT_OK(mf_ref_rope(ctx, &cfg, MF_ROPE_FORWARD, &th, &pos));
    void *d = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 4 * n * sizeof(float), &d));
    float *dq = d, *dk = (float *)d + n, *dqo = (float *)d + 2 * n, *dko = (float *)d + 3 * n;
    MF_ASSERT_OK(mf_buffer_upload(ctx, dq, x, sizeof x));
    MF_ASSERT_OK(mf_buffer_upload(ctx, dk, kx, sizeof kx));
    MF_ASSERT_OK(mf_buffer_upload(ctx, dqo, got, sizeof got));
    MF_ASSERT_OK(mf_buffer_upload(ctx, dko, kgot, sizeof kgot));
    mf_rope_tensors td = { 1, 3, 1, 1, MF_DTYPE_F32, dq, dk, dqo, dko };
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &td, &pos));
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 50); /* positions 47..49 fit */
    MF_ASSERT_OK(mf_buffer_download(ctx, got, dqo, sizeof got));
    MF_ASSERT_OK(mf_buffer_download(ctx, kgot, dko, sizeof kgot));
    MF_ASSERT_CLOSE(got, ref, n, "rope.out.f32");
    MF_ASSERT_CLOSE(kgot, kref, n, "rope.out.f32");
    mf_buffer_free(ctx, d);
    mf_rope_cache_destroy(cache);
}
END_TEST

/* Explicit ids never grow the cache (they are never read back to the host,
 * checked or not): ids beyond its table fall back to on-the-fly angles, never
 * to a read past the table. Here with MF_ROPE_NO_POSITION_CHECK (explicit_ids
 * covers checked ids beyond a 4-position table). */
START_TEST(cache_unchecked_ids_beyond_table)
{
    static const int64_t ids[] = { 3, 500, 1, 77, 2, 4096, 0 };
    eq_case c = base_case(V_CACHE);
    c.kind = MF_ROPE_POS_I64;
    c.ids = ids;
    c.n_ids = 7;
    c.batch_stride = 0;
    c.cache_capacity = 8;
    /* run_case_tol uses checked positions; do the unchecked call by hand */
    mf_context *ctx = mf_test_ctx();
    const mf_rope_config cfg = case_config(&c);
    const size_t nq = (size_t)(c.B * c.T * c.Hq * c.Dh), nk = (size_t)(c.B * c.T * c.Hk * c.Dh), n = nq + nk;
    float *x = malloc(n * 4), *ref = malloc(n * 4), *got = malloc(n * 4);
    ck_assert(x && ref && got);
    mf_fill_uniform_f32(x, n, 7, -1.0f, 1.0f);
    mf_fill_nan_f32(ref, n);
    mf_fill_nan_f32(got, n);
    mf_rope_positions pos = mf_rope_positions_ids(MF_ROPE_POS_I64, ids, 0);
    mf_rope_tensors th = { c.B, c.T, c.Hq, c.Hk, MF_DTYPE_F32, x, x + nq, ref, ref + nq };
    MF_ASSERT_OK(mf_ref_rope(ctx, &cfg, MF_ROPE_FORWARD, &th, &pos));
    void *d_x, *d_y, *d_ids;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, &d_x));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, &d_y));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof ids, &d_ids));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_x, x, n * 4));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_y, got, n * 4));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_ids, ids, sizeof ids));
    pos.ids = d_ids;
    pos.flags = MF_ROPE_NO_POSITION_CHECK;
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(ctx, &cfg, 8, &cache));
    mf_rope_tensors td = {
        c.B, c.T, c.Hq, c.Hk, MF_DTYPE_F32, d_x, (float *)d_x + nq, d_y, (float *)d_y + nq
    };
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &td, &pos));
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 8);
    MF_ASSERT_OK(mf_buffer_download(ctx, got, d_y, n * 4));
    MF_ASSERT_CLOSE(got, ref, n, "rope.out.f32");
    mf_rope_cache_destroy(cache);
    mf_buffer_free(ctx, d_ids);
    mf_buffer_free(ctx, d_y);
    mf_buffer_free(ctx, d_x);
    free(got);
    free(ref);
    free(x);
}
END_TEST

/* Backward undoes forward: R(-theta) R(theta) x = x within fp32 rounding. */
START_TEST(backward_inverts_forward)
{
    mf_context *ctx = mf_test_ctx();
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 16);
    cfg.layout = _i == 0 ? MF_ROPE_HALF : MF_ROPE_INTERLEAVED;
    const size_t nq = 2 * 9 * 4 * 16, nk = 2 * 9 * 2 * 16, n = nq + nk;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    ck_assert(x && y);
    mf_fill_uniform_f32(x, n, 31, -1.0f, 1.0f);
    void *d;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, &d));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d, x, n * 4));
    mf_rope_tensors td = { 2, 9, 4, 2, MF_DTYPE_F32, d, (float *)d + nq, d, (float *)d + nq };
    mf_rope_positions pos = mf_rope_positions_offset(1000);
    MF_ASSERT_OK(mf_rope_fused(ctx, &cfg, MF_ROPE_FORWARD, &td, &pos));
    MF_ASSERT_OK(mf_buffer_download(ctx, y, d, n * 4));
    char msg[1024];
    ck_assert_msg(!mf_test_check_close(y, x, n, "rope.out.f32", __FILE__, __LINE__, msg, sizeof msg),
                  "the forward rotation left x unchanged");
    MF_ASSERT_OK(mf_rope_fused(ctx, &cfg, MF_ROPE_BACKWARD, &td, &pos));
    MF_ASSERT_OK(mf_buffer_download(ctx, y, d, n * 4));
    MF_ASSERT_CLOSE(y, x, n, "rope.roundtrip.f32");
    mf_buffer_free(ctx, d);
    free(y);
    free(x);
}
END_TEST

/* ---- long context ------------------------------------------------------------ */

/* Positions 131064..131071 (the seed's 131072-token context) and
 * 1048568..1048575: the error against the double reference stays within the
 * fp32 row, for both variants, both layouts, and bf16 storage. */
START_TEST(long_context_precision)
{
    static const int64_t last[] = { 131071, 1048575 };
    for (int w = 0; w < 2; ++w) {
        eq_case c = base_case(_i);
        c.B = 1;
        c.T = 8;
        c.Hq = 2;
        c.Hk = 1;
        c.Dh = c.rd = w == 0 ? 32 : 8; /* reference tables: 64 MiB and 128 MiB of host doubles */
        c.base = w == 0 ? 1e6 : 1e4;
        c.offset = last[w] - (c.T - 1);
        c.cache_capacity = 1024;
        run_case(&c);
        c.layout = MF_ROPE_INTERLEAVED;
        c.dir = MF_ROPE_BACKWARD;
        c.dtype = MF_DTYPE_BF16;
        run_case(&c);
    }
}
END_TEST

/* The negative control of the row above: the same rotation with an fp32
 * angle (fp32 inv_freq times an fp32 position, as torch computes it in fp32)
 * fails rope.out.f32 at position 1048575, so the precision test can fail. */
START_TEST(long_context_fp32_angle_fails)
{
    mf_context *ctx = mf_test_ctx();
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 8);
    const size_t n = 8;
    float x[8], k[8], ref[8], kref[8], bad[8];
    mf_fill_uniform_f32(x, n, 5, -1.0f, 1.0f);
    mf_fill_uniform_f32(k, n, 6, -1.0f, 1.0f);
    mf_rope_positions pos = mf_rope_positions_offset(1048575);
    mf_rope_tensors th = { 1, 1, 1, 1, MF_DTYPE_F32, x, k, ref, kref };
    MF_ASSERT_OK(mf_ref_rope(ctx, &cfg, MF_ROPE_FORWARD, &th, &pos));
    for (int i = 0; i < 4; ++i) {
        const float inv_freq = 1.0f / powf(10000.0f, (float)(2 * i) / 8.0f);
        const float theta = 1048575.0f * inv_freq;
        const float c = cosf(theta), s = sinf(theta);
        bad[i] = x[i] * c - x[i + 4] * s;
        bad[i + 4] = x[i + 4] * c + x[i] * s;
    }
    char msg[1024];
    ck_assert_msg(!mf_test_check_close(bad, ref, n, "rope.out.f32", __FILE__, __LINE__, msg, sizeof msg),
                  "an fp32 angle at position 1048575 passed the fp32 tolerance: the test could not fail");
}
END_TEST

/* Positions stored in bf16 collide above 256: bf16 keeps 8 significant bits,
 * so 257 rounds (to nearest even) to 256 and 256 and 257 would get the same
 * rotation. The API never stores positions in a floating-point dtype: the ids
 * are int32/int64 (or an int64 offset) and bf16 q/k at positions 256 and 257
 * get different rotations, each matching the reference. */
START_TEST(bf16_positions_collide_api_does_not)
{
    ck_assert_uint_eq(mf_f32_to_bf16(256.0f), mf_f32_to_bf16(257.0f));
    ck_assert(mf_bf16_to_f32(mf_f32_to_bf16(257.0f)) == 256.0f);
    ck_assert(mf_f32_to_bf16(255.0f) != mf_f32_to_bf16(256.0f)); /* exact below 256 */

    static const int64_t ids[] = { 256, 257 };
    mf_context *ctx = mf_test_ctx();
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 8);
    /* the same q row at both positions */
    uint16_t q[16], k[16], out[16];
    mf_fill_uniform_bf16(q, 8, 11, -1.0f, 1.0f);
    memcpy(q + 8, q, 8 * sizeof(uint16_t));
    memcpy(k, q, sizeof q);
    for (int kind = MF_ROPE_POS_I32; kind <= MF_ROPE_POS_I64; ++kind) {
        eq_case c = base_case(_i);
        c.B = 1;
        c.T = 2;
        c.Hq = c.Hk = 1;
        c.Dh = c.rd = 8;
        c.dtype = MF_DTYPE_BF16;
        c.kind = (mf_rope_pos_kind)kind;
        c.ids = ids;
        c.n_ids = 2;
        run_case(&c); /* matches the reference at 256 and 257 */
    }
    /* and the two rows differ */
    void *d;
    int32_t ids32[2] = { 256, 257 };
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 3 * sizeof q + sizeof ids32, &d));
    char *b = d;
    MF_ASSERT_OK(mf_buffer_upload(ctx, b, q, sizeof q));
    MF_ASSERT_OK(mf_buffer_upload(ctx, b + sizeof q, k, sizeof k));
    MF_ASSERT_OK(mf_buffer_upload(ctx, b + 3 * sizeof q, ids32, sizeof ids32));
    mf_rope_tensors td = { 1, 2, 1, 1, MF_DTYPE_BF16, b, b + sizeof q, b + 2 * sizeof q, b + sizeof q };
    mf_rope_positions pos = mf_rope_positions_ids(MF_ROPE_POS_I32, b + 3 * sizeof q, 0);
    if (_i == V_FUSED) {
        MF_ASSERT_OK(mf_rope_fused(ctx, &cfg, MF_ROPE_FORWARD, &td, &pos));
    } else {
        mf_rope_cache *cache = NULL;
        MF_ASSERT_OK(mf_rope_cache_create(ctx, &cfg, 300, &cache));
        MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &td, &pos));
        mf_rope_cache_destroy(cache);
    }
    MF_ASSERT_OK(mf_buffer_download(ctx, out, b + 2 * sizeof q, sizeof out));
    ck_assert_msg(memcmp(out, out + 8, 8 * sizeof(uint16_t)) != 0,
                  "positions 256 and 257 produced the same rotation");
    mf_buffer_free(ctx, d);
}
END_TEST

static Suite *rope_equiv_suite(void)
{
    Suite *s = suite_create("rope_equiv");
    TCase *tc = tcase_create("variants");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, half_gqa_fwd_bwd, 0, 2);
    tcase_add_loop_test(tc, interleaved_fwd_bwd, 0, 2);
    tcase_add_loop_test(tc, head_counts, 0, 2);
    tcase_add_loop_test(tc, partial_rotary, 0, 2);
    tcase_add_loop_test(tc, in_place, 0, 2);
    tcase_add_loop_test(tc, explicit_ids, 0, 2);
    tcase_add_loop_test(tc, offsets, 0, 2);
    tcase_add_loop_test(tc, bases_and_scaling, 0, 2);
    tcase_add_loop_test(tc, bf16_storage, 0, 2);
    tcase_add_loop_test(tc, backward_inverts_forward, 0, 2);
    suite_add_tcase(s, tc);

    TCase *tcc = tcase_create("cache");
    tcase_add_checked_fixture(tcc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tcc, seed_regression_cache_outgrown);
    tcase_add_test(tcc, cache_reused_and_reserved);
    tcase_add_test(tcc, cache_unchecked_ids_beyond_table);
    suite_add_tcase(s, tcc);

    TCase *tcl = tcase_create("long_context");
    tcase_add_checked_fixture(tcl, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tcl, long_context_precision, 0, 2);
    tcase_add_test(tcl, long_context_fp32_angle_fails);
    tcase_add_loop_test(tcl, bf16_positions_collide_api_does_not, 0, 2);
    suite_add_tcase(s, tcl);
    return s;
}

int main(void) { return mf_test_run(rope_equiv_suite()); }
