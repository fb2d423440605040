/* RoPE bad input: every error path returns a status with a readable
 * mf_last_error(), never a crash, and writes nothing; except explicit ids out
 * of range, found on the device and reported by the context's next
 * synchronizing call (no op call waits for the device). */
#include "memfix/rope.h"
#include "mf_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A valid small problem on the test context: B = 2, T = 3, Hq = 2, Hk = 1,
 * Dh = rd = 8, fp32, device buffers (q, k, q_out, k_out, ids). */
typedef struct bad_env {
    mf_context *ctx;
    mf_rope_config cfg;
    mf_rope_tensors t;
    mf_rope_positions pos;
    void *buf;
    float *q_out_dev;
    size_t nq, nk;
} bad_env;

static void env_init(bad_env *e)
{
    memset(e, 0, sizeof *e);
    e->ctx = mf_test_ctx();
    mf_rope_config_init(&e->cfg, 8);
    e->nq = 2 * 3 * 2 * 8;
    e->nk = 2 * 3 * 1 * 8;
    const size_t n = e->nq + e->nk;
    MF_ASSERT_OK(mf_buffer_alloc(e->ctx, 2 * n * sizeof(float) + 64, &e->buf));
    float *host = malloc(2 * n * sizeof(float));
    ck_assert(host != NULL);
    mf_fill_uniform_f32(host, n, 1, -1.0f, 1.0f);
    mf_fill_nan_f32(host + n, n);
    MF_ASSERT_OK(mf_buffer_upload(e->ctx, e->buf, host, 2 * n * sizeof(float)));
    free(host);
    float *d = e->buf;
    e->t = (mf_rope_tensors){ 2, 3, 2, 1, MF_DTYPE_F32, d, d + e->nq, d + n, d + n + e->nq };
    e->q_out_dev = d + n;
    e->pos = mf_rope_positions_offset(0);
}

/* The outputs still hold their NaN pre-fill: a rejected call wrote nothing. */
static void assert_untouched(bad_env *e)
{
    const size_t n = e->nq + e->nk;
    float *h = malloc(n * sizeof(float));
    ck_assert(h != NULL);
    MF_ASSERT_OK(mf_context_synchronize(e->ctx));
    MF_ASSERT_OK(mf_buffer_download(e->ctx, h, e->q_out_dev, n * sizeof(float)));
    for (size_t i = 0; i < n; ++i) ck_assert_msg(isnan(h[i]), "output %zu was written by a rejected call", i);
    free(h);
}

static void env_free(bad_env *e) { mf_buffer_free(e->ctx, e->buf); }

/* fused and reference (host arrays) share the validation; check both */
#define EXPECT_FUSED(env, st)                                                                                \
    MF_ASSERT_STATUS(mf_rope_fused((env)->ctx, &(env)->cfg, MF_ROPE_FORWARD, &(env)->t, &(env)->pos), st)

START_TEST(null_pointers)
{
    bad_env e;
    env_init(&e);
    MF_ASSERT_STATUS(mf_rope_fused(NULL, &e.cfg, MF_ROPE_FORWARD, &e.t, &e.pos), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_rope_fused(e.ctx, NULL, MF_ROPE_FORWARD, &e.t, &e.pos), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_rope_fused(e.ctx, &e.cfg, MF_ROPE_FORWARD, NULL, &e.pos), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_rope_fused(e.ctx, &e.cfg, MF_ROPE_FORWARD, &e.t, NULL), MF_ERR_NULL_POINTER);
    mf_rope_tensors t0 = e.t;
    e.t.q = NULL;
    EXPECT_FUSED(&e, MF_ERR_NULL_POINTER);
    e.t = t0;
    e.t.k = NULL;
    EXPECT_FUSED(&e, MF_ERR_NULL_POINTER);
    e.t = t0;
    e.t.q_out = NULL;
    EXPECT_FUSED(&e, MF_ERR_NULL_POINTER);
    e.t = t0;
    e.t.k_out = NULL;
    EXPECT_FUSED(&e, MF_ERR_NULL_POINTER);
    e.t = t0;
    e.pos = mf_rope_positions_ids(MF_ROPE_POS_I64, NULL, 0);
    EXPECT_FUSED(&e, MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_ref_rope(NULL, &e.cfg, MF_ROPE_FORWARD, &e.t, &e.pos), MF_ERR_NULL_POINTER);
    /* cache entry points */
    mf_rope_cache *cache = (mf_rope_cache *)&e; /* must be reset to NULL on failure */
    MF_ASSERT_STATUS(mf_rope_cache_create(NULL, &e.cfg, 8, &cache), MF_ERR_NULL_POINTER);
    ck_assert_ptr_null(cache);
    MF_ASSERT_STATUS(mf_rope_cache_create(e.ctx, NULL, 8, &cache), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_rope_cache_create(e.ctx, &e.cfg, 8, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_rope_cache_apply(NULL, MF_ROPE_FORWARD, &e.t, &e.pos), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_rope_cache_reserve(NULL, 8), MF_ERR_NULL_POINTER);
    ck_assert_int_eq(mf_rope_cache_capacity(NULL), -1);
    ck_assert_uint_eq(mf_rope_cache_size_bytes(NULL), 0);
    ck_assert_ptr_null(mf_rope_cache_config(NULL));
    mf_rope_cache_destroy(NULL);  /* no-op */
    mf_rope_config_init(NULL, 8); /* no-op */
    assert_untouched(&e);
    env_free(&e);
}
END_TEST

START_TEST(rotary_dim_and_config)
{
    bad_env e;
    env_init(&e);
    const mf_rope_config c0 = e.cfg;
    e.cfg.rotary_dim = 7; /* odd */
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_ref_rope(e.ctx, &e.cfg, MF_ROPE_FORWARD, &e.t, &e.pos), MF_ERR_INVALID_SIZE);
    e.cfg.rotary_dim = 10; /* > head_dim 8 */
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.cfg.rotary_dim = 0;
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.cfg.rotary_dim = -2;
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.cfg = c0;
    e.cfg.head_dim = 0;
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.cfg = c0;
    e.cfg.base = 0.0;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.cfg.base = NAN;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.cfg.base = INFINITY;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.cfg = c0;
    e.cfg.scaling = 0.0;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.cfg.scaling = -1.0;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.cfg = c0;
    e.cfg.layout = (mf_rope_layout)2;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.cfg = c0;
    MF_ASSERT_STATUS(mf_rope_fused(e.ctx, &e.cfg, (mf_rope_direction)2, &e.t, &e.pos),
                     MF_ERR_INVALID_ARGUMENT);
    /* the cache checks its configuration at create */
    mf_rope_cache *cache = NULL;
    e.cfg.rotary_dim = 9;
    MF_ASSERT_STATUS(mf_rope_cache_create(e.ctx, &e.cfg, 8, &cache), MF_ERR_INVALID_SIZE);
    e.cfg = c0;
    MF_ASSERT_STATUS(mf_rope_cache_create(e.ctx, &e.cfg, 0, &cache), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_rope_cache_create(e.ctx, &e.cfg, MF_ROPE_MAX_POSITION + 2, &cache),
                     MF_ERR_OUT_OF_RANGE);
    ck_assert_ptr_null(cache);
    ck_assert_ptr_null(mf_rope_layout_name((mf_rope_layout)5));
    ck_assert_str_eq(mf_rope_layout_name(MF_ROPE_INTERLEAVED), "interleaved");
    assert_untouched(&e);
    env_free(&e);
}
END_TEST

START_TEST(sizes_dtype_overlap)
{
    bad_env e;
    env_init(&e);
    const mf_rope_tensors t0 = e.t;
    e.t.batch = 0;
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.t = t0;
    e.t.seq_len = -1;
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.t = t0;
    e.t.heads_q = 0;
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.t = t0;
    e.t.heads_k = -3;
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.t = t0;
    e.t.batch = INT64_MAX / 2;
    e.t.seq_len = INT64_MAX / 2;
    EXPECT_FUSED(&e, MF_ERR_OVERFLOW);
    e.t = t0;
    e.t.dtype = (mf_dtype)7;
    EXPECT_FUSED(&e, MF_ERR_DTYPE);
    e.t = t0;
    /* the reference takes fp32 host arrays only */
    e.t.dtype = MF_DTYPE_BF16;
    MF_ASSERT_STATUS(mf_ref_rope(e.ctx, &e.cfg, MF_ROPE_FORWARD, &e.t, &e.pos), MF_ERR_DTYPE);
    e.t = t0;
    /* partial overlaps: q_out shifted by one element into q; k_out over q; q_out over k */
    e.t.q_out = (float *)t0.q + 1;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.t = t0;
    e.t.k_out = (void *)t0.q;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.t = t0;
    e.t.q_out = (void *)t0.k;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.t = t0;
    e.t.k_out = e.t.q_out;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    e.t = t0;
    assert_untouched(&e);
    env_free(&e);
}
END_TEST

START_TEST(positions)
{
    bad_env e;
    env_init(&e);
    e.pos = mf_rope_positions_offset(-1);
    EXPECT_FUSED(&e, MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_STATUS(mf_ref_rope(e.ctx, &e.cfg, MF_ROPE_FORWARD, &e.t, &e.pos), MF_ERR_OUT_OF_RANGE);
    e.pos = mf_rope_positions_offset(MF_ROPE_MAX_POSITION); /* + T - 1 beyond the maximum */
    EXPECT_FUSED(&e, MF_ERR_OUT_OF_RANGE);
    e.pos = mf_rope_positions_offset(INT64_MAX);
    EXPECT_FUSED(&e, MF_ERR_OUT_OF_RANGE);
    e.pos.kind = (mf_rope_pos_kind)9;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);

    assert_untouched(&e); /* the offset errors above are found before any launch */

    /* negative and too-large ids, int32 and int64, in device memory: checked
     * on the device, never read back by the call (MF_OK, no wait); the next
     * synchronization of the context reports the first bad one, once */
    void *d_ids = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(e.ctx, 6 * sizeof(int64_t), &d_ids));
    const int32_t neg32[6] = { 0, 1, 2, 3, -5, 4 };
    MF_ASSERT_OK(mf_buffer_upload(e.ctx, d_ids, neg32, sizeof neg32));
    e.pos = mf_rope_positions_ids(MF_ROPE_POS_I32, d_ids, 3);
    EXPECT_FUSED(&e, MF_OK);
    MF_ASSERT_STATUS(mf_context_synchronize(e.ctx), MF_ERR_OUT_OF_RANGE);
    ck_assert_msg(strstr(mf_last_error(), "mf_rope_fused") != NULL &&
                      strstr(mf_last_error(), "position id -5 (ids[4], token b=1 t=1)") != NULL &&
                      strstr(mf_last_error(), "next synchronization") != NULL,
                  "unexpected message: %s", mf_last_error());
    MF_ASSERT_OK(mf_context_synchronize(e.ctx)); /* reported once */
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(e.ctx, &e.cfg, 4, &cache));
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &e.t, &e.pos));
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 4); /* explicit ids never grow the table */
    float one = 0.0f; /* mf_buffer_download synchronizes: it reports the bad id too */
    MF_ASSERT_STATUS(mf_buffer_download(e.ctx, &one, e.q_out_dev, sizeof one), MF_ERR_OUT_OF_RANGE);
    ck_assert_msg(strstr(mf_last_error(), "mf_rope_cache_apply") != NULL &&
                      strstr(mf_last_error(), "position id -5 (ids[4], token b=1 t=1)") != NULL,
                  "unexpected message: %s", mf_last_error());
    const int64_t neg64[6] = { 0, 1, -1, 3, 4, 5 };
    MF_ASSERT_OK(mf_buffer_upload(e.ctx, d_ids, neg64, sizeof neg64));
    e.pos = mf_rope_positions_ids(MF_ROPE_POS_I64, d_ids, 3);
    EXPECT_FUSED(&e, MF_OK);
    MF_ASSERT_STATUS(mf_context_synchronize(e.ctx), MF_ERR_OUT_OF_RANGE);
    ck_assert_msg(strstr(mf_last_error(), "position id -1 (ids[2], token b=0 t=2)") != NULL,
                  "unexpected message: %s", mf_last_error());
    MF_ASSERT_STATUS(mf_ref_rope(e.ctx, &e.cfg, MF_ROPE_FORWARD, &e.t,
                                 &(mf_rope_positions){ MF_ROPE_POS_I64, 0, neg64, 3, 0 }),
                     MF_ERR_OUT_OF_RANGE);
    /* too large; two bad calls before one synchronization: the first is reported */
    const int64_t big64[6] = { 0, 1, 2, 3, MF_ROPE_MAX_POSITION + 1, 5 };
    MF_ASSERT_OK(mf_buffer_upload(e.ctx, d_ids, big64, sizeof big64));
    EXPECT_FUSED(&e, MF_OK);
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &e.t, &e.pos));
    MF_ASSERT_STATUS(mf_context_synchronize(e.ctx), MF_ERR_OUT_OF_RANGE); /* the first of the two calls */
    ck_assert_msg(strstr(mf_last_error(), "mf_rope_fused") != NULL &&
                      strstr(mf_last_error(),
                             "position id 1099511627776 (ids[4], token b=1 t=1) is outside [0, "
                             "1099511627775]") != NULL,
                  "unexpected message: %s", mf_last_error());
    MF_ASSERT_OK(mf_context_synchronize(e.ctx));
    /* MF_ROPE_NO_POSITION_CHECK: no check runs, nothing is reported */
    e.pos.flags = MF_ROPE_NO_POSITION_CHECK;
    EXPECT_FUSED(&e, MF_OK);
    MF_ASSERT_OK(mf_context_synchronize(e.ctx));
    /* in range: nothing reported */
    const int64_t ok64[6] = { 0, 1, 2, 3, 4, 5 };
    MF_ASSERT_OK(mf_buffer_upload(e.ctx, d_ids, ok64, sizeof ok64));
    e.pos = mf_rope_positions_ids(MF_ROPE_POS_I64, d_ids, 0);
    EXPECT_FUSED(&e, MF_OK);
    MF_ASSERT_OK(mf_context_synchronize(e.ctx));
    /* batch_stride in (0, T) or negative; unknown flags */
    e.pos = mf_rope_positions_ids(MF_ROPE_POS_I64, d_ids, 2);
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.pos = mf_rope_positions_ids(MF_ROPE_POS_I64, d_ids, -3);
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    e.pos = mf_rope_positions_ids(MF_ROPE_POS_I64, d_ids, 3);
    e.pos.flags = 0x80u;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    /* reserve: sizes */
    MF_ASSERT_STATUS(mf_rope_cache_reserve(cache, 0), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_rope_cache_reserve(cache, MF_ROPE_MAX_POSITION + 2), MF_ERR_OUT_OF_RANGE);
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 4);
    mf_rope_cache_destroy(cache);
    mf_buffer_free(e.ctx, d_ids);
    env_free(&e);
}
END_TEST

/* A table the device cannot hold: growth fails with MF_ERR_OUT_OF_MEMORY (or
 * a size error), the cache keeps its old table and stays usable. */
START_TEST(cache_growth_too_big)
{
    bad_env e;
    env_init(&e);
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(e.ctx, &e.cfg, 4, &cache));
    mf_clear_error();
    /* 2^40 positions x 8 x 4 bytes = 32 TiB */
    const mf_status st = mf_rope_cache_reserve(cache, MF_ROPE_MAX_POSITION + 1);
    ck_assert_msg(st == MF_ERR_OUT_OF_MEMORY || st == MF_ERR_BACKEND, "got %s", mf_status_name(st));
    ck_assert_str_ne(mf_last_error(), "");
    ck_assert_int_eq(mf_rope_cache_capacity(cache), 4);
    ck_assert_uint_eq(mf_rope_cache_size_bytes(cache), mf_rope_cache_bytes(4, 8));
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &e.t, &e.pos)); /* positions 0..2 */
    mf_rope_cache_destroy(cache);
    env_free(&e);
}
END_TEST

/* Bad pointers: q, k, q_out, k_out and the ids are checked against the extent
 * the shape needs before any launch or position check (MF_ERR_INVALID_SIZE
 * naming the tensor); a freed buffer or a host array is refused without
 * launching, and the process goes on working. */
START_TEST(bad_pointers)
{
    bad_env e;
    env_init(&e);
    mf_rope_tensors t0 = e.t;
    /* 8 bytes before the end of the buffer: k_out needs 48 floats */
    e.t.k_out = (char *)e.buf + 2 * (e.nq + e.nk) * sizeof(float) + 64 - 8;
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "t->k_out is too small"));
    e.t = t0;
    void *small = NULL, *freed = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(e.ctx, 8, &small));
    MF_ASSERT_OK(mf_buffer_alloc(e.ctx, 8, &freed));
    MF_ASSERT_OK(mf_buffer_free(e.ctx, freed));
    e.pos = mf_rope_positions_ids(MF_ROPE_POS_I64, small, 3); /* needs (B-1)*3 + 3 = 6 int64 */
    EXPECT_FUSED(&e, MF_ERR_INVALID_SIZE);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "pos->ids is too small"));
    e.pos = mf_rope_positions_offset(0);
    e.t.q = freed;
    EXPECT_FUSED(&e, MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "t->q ("));
    e.t = t0;
    float host[96] = { 0 };
    e.t.q_out = host;
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(e.ctx, &e.cfg, 4, &cache));
    MF_ASSERT_STATUS(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &e.t, &e.pos), MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "t->q_out ("));
    e.t = t0;
    assert_untouched(&e);
    /* Nothing launched, nothing sticky. */
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &e.t, &e.pos));
    MF_ASSERT_OK(mf_rope_fused(e.ctx, &e.cfg, MF_ROPE_FORWARD, &e.t, &e.pos));
    MF_ASSERT_OK(mf_context_synchronize(e.ctx));
    mf_context *fresh = NULL;
    MF_ASSERT_OK(mf_context_create(&fresh, mf_test_backend()));
    mf_context_destroy(fresh);
    mf_rope_cache_destroy(cache);
    mf_buffer_free(e.ctx, small);
    env_free(&e);
}
END_TEST

/* Non-finite inputs: the fused kernel, the cache and the reference agree on
 * where a NaN / Inf lands (the rotation mixes feature i with i + rd/2). */
START_TEST(nonfinite)
{
    bad_env e;
    env_init(&e);
    const size_t n = e.nq + e.nk;
    float *host = malloc(3 * n * sizeof(float));
    ck_assert(host != NULL);
    mf_fill_uniform_f32(host, n, 7, -1.0f, 1.0f);
    host[5] = NAN;              /* q: b0 t0 head 0, feature 5 */
    host[e.nq + 17] = INFINITY; /* k: b0 t2 head 0, feature 1 */
    float *ref = host + n, *got = host + 2 * n;
    mf_rope_tensors th = { 2, 3, 2, 1, MF_DTYPE_F32, host, host + e.nq, ref, ref + e.nq };
    MF_ASSERT_OK(mf_ref_rope(e.ctx, &e.cfg, MF_ROPE_FORWARD, &th, &e.pos));
    MF_ASSERT_OK(mf_buffer_upload(e.ctx, e.buf, host, n * sizeof(float)));
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(e.ctx, &e.cfg, 4, &cache));
    for (int variant = 0; variant < 2; variant++) {
        if (variant == 0)
            MF_ASSERT_OK(mf_rope_fused(e.ctx, &e.cfg, MF_ROPE_FORWARD, &e.t, &e.pos));
        else
            MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &e.t, &e.pos));
        MF_ASSERT_OK(mf_buffer_download(e.ctx, got, e.q_out_dev, n * sizeof(float)));
        ck_assert_msg(isnan(got[5]) && isnan(got[1]) && isfinite(got[0]), "the NaN pairs features 1 and 5");
        MF_ASSERT_CLOSE(got, ref, n, "rope.out.f32");
    }
    mf_rope_cache_destroy(cache);
    free(host);
    env_free(&e);
}
END_TEST

static Suite *rope_badinput_suite(void)
{
    Suite *s = suite_create("rope_badinput");
    TCase *tc = tcase_create("badinput");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, null_pointers);
    tcase_add_test(tc, rotary_dim_and_config);
    tcase_add_test(tc, sizes_dtype_overlap);
    tcase_add_test(tc, positions);
    tcase_add_test(tc, cache_growth_too_big);
    tcase_add_test(tc, bad_pointers);
    tcase_add_test(tc, nonfinite);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(rope_badinput_suite()); }
