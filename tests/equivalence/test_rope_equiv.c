/* RoPE (seed 000, bug #2): the fused and cache variants against the
 * reference (reference/rope.c) on the context's backend (host execution mode
 * or CUDA).
 *
 * The cases are the op's built-in cases (src/ops/rope.c), run through the
 * testbed as `memfix report` runs them: seeded inputs in [-1, 1), the
 * reference on their fp32 values, the variant on the test backend into
 * outputs pre-filled with NaN and followed by a NaN guard (in place: the
 * output's buffer holds the input), q_out and k_out compared with the dtype's
 * tolerance row. They cover both layouts, GQA, MHA and MQA, partial rotary
 * with an odd head_dim, explicit int32/int64 ids (padded per-batch rows and a
 * shared row) and offsets, bases and scaling, fp32 and bf16 storage, forward
 * and backward, in place and out of place; the seed's regression (a sequence
 * longer than the cached table), a reserved table, unchecked ids beyond the
 * table; long-context precision at positions 131071 and 1048575; bf16 q/k at
 * positions 256 and 257. One TCase per variant (fused, cache); the TCase
 * "reverse" reruns most of them in reverse thread order.
 *
 * Here stay the op's own properties: the cache's growth seen through its
 * measured peak (the seed's regression), reserve, ids that never grow the
 * table; backward inverts forward; an fp32 angle fails the fp32 row at
 * position 1048575 (the precision cases can fail); bf16 positions collide
 * where the API's integer positions do not. */
#include "memfix/rope.h"
#include "mf_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_FUSED = 0, V_CACHE = 1 };

/* The cache-only cases of the op's table (src/ops/rope.c). */
enum { CASE_SEED_OUTGROWN = 34, CASE_SEED_DECODE = 35, CASE_RESERVED = 36, CASE_UNCHECKED_BEYOND = 37 };

/* Case c of the cache variant through the testbed (equivalent, scratch <=
 * ceiling), checked to be the case described by 'shape' (a substring). */
static mf_case_result cache_case(int c, const char *shape)
{
    const mf_case_result r = mf_test_op_case("rope", V_CACHE, c);
    ck_assert_msg(strstr(r.shape, shape) != NULL, "case %d is '%s', expected '%s'", c, r.shape, shape);
    return r;
}

/* The seed's regression (bug #2): the table is created for 8 positions, then
 * a 40-token sequence outgrows it. The old code crashed here (a host arange
 * meeting a device inv_freq); the cache regenerates itself on the device and
 * matches the reference, then grows again for a decode step past its end.
 * The measured device peak is the grown table alone (the old one is freed
 * first): its capacity. */
START_TEST(seed_regression_cache_outgrown)
{
    mf_case_result r = cache_case(CASE_SEED_OUTGROWN, "B=1 T=40 Hq=2 Hk=1 Dh=8 rd=8 half fwd pos<40 ");
    ck_assert_msg(strstr(r.shape, "offset=0 cache0=8") != NULL, "%s", r.shape);
    ck_assert_uint_eq(r.opt_peak_bytes, mf_rope_cache_bytes(40, 8)); /* max(40, 2 * 8) */
    /* A decode step past the table: one token at position 100 (capacity 40 ->
     * max(101, 80) = 101), in place, against the reference. */
    r = cache_case(CASE_SEED_DECODE, "B=1 T=1 Hq=2 Hk=1 Dh=8 rd=8 half fwd pos<101 ");
    ck_assert_msg(strstr(r.shape, "offset=100 in_place cache0=40") != NULL, "%s", r.shape);
    ck_assert_uint_eq(r.opt_peak_bytes, mf_rope_cache_bytes(101, 8));
}
END_TEST

/* One cache object serving a growing sequence: reserve's growth rule, and a
 * reserved table (2 -> 50 positions) applied at positions 47..49 without
 * growing (its peak stays the 50-position table). */
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
    mf_rope_cache_destroy(cache);

    const mf_case_result r = cache_case(CASE_RESERVED, "B=1 T=3 Hq=1 Hk=1 Dh=8 rd=8 half fwd pos<50 ");
    ck_assert_msg(strstr(r.shape, "offset=47 cache0=2 reserve=50") != NULL, "%s", r.shape);
    ck_assert_uint_eq(r.opt_peak_bytes, mf_rope_cache_bytes(50, 8));
}
END_TEST

/* Explicit ids never grow the cache (they are never read back to the host,
 * checked or not): ids beyond its table fall back to on-the-fly angles, never
 * to a read past the table. Here with MF_ROPE_NO_POSITION_CHECK (the explicit
 * id cases cover checked ids beyond a 4-position table): the peak is the
 * 8-position table, no check word. */
START_TEST(cache_unchecked_ids_beyond_table)
{
    const mf_case_result r =
        cache_case(CASE_UNCHECKED_BEYOND, "B=2 T=7 Hq=4 Hk=2 Dh=16 rd=16 half fwd pos<4097 ");
    ck_assert_msg(strstr(r.shape, "ids=int64 batch_stride=0 unchecked cache0=8") != NULL, "%s", r.shape);
    ck_assert_uint_eq(r.opt_peak_bytes, mf_rope_cache_bytes(8, 16));
}
END_TEST

/* Backward undoes forward: R(-theta) R(theta) x = x within fp32 rounding
 * (_i: the layout), in place at offset 1000; the forward must change x. */
START_TEST(backward_inverts_forward)
{
    mf_context *ctx = mf_test_ctx();
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 16);
    cfg.layout = _i == 0 ? MF_ROPE_HALF : MF_ROPE_INTERLEAVED;
    const size_t nq = 2 * 9 * 4 * 16, nk = 2 * 9 * 2 * 16, n = nq + nk;
    float *x = mf_test_make_input(MF_DTYPE_F32, n, 31, -1.0f, 1.0f), *y = malloc(n * 4);
    ck_assert(y != NULL);
    float *d = mf_test_dev_upload(ctx, x, n * 4);
    mf_rope_tensors td = { 2, 9, 4, 2, MF_DTYPE_F32, d, d + nq, d, d + nq };
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

/* The negative control of the long-context cases: the same rotation with an
 * fp32 angle (fp32 inv_freq times an fp32 position, as torch computes it in
 * fp32) fails rope.out.f32 at position 1048575, so the precision cases can
 * fail. */
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
 * get different rotations (each matches the reference: the op's cases 32 and
 * 33). _i: the variant. */
START_TEST(bf16_positions_collide_api_does_not)
{
    ck_assert_uint_eq(mf_f32_to_bf16(256.0f), mf_f32_to_bf16(257.0f));
    ck_assert(mf_bf16_to_f32(mf_f32_to_bf16(257.0f)) == 256.0f);
    ck_assert(mf_f32_to_bf16(255.0f) != mf_f32_to_bf16(256.0f)); /* exact below 256 */

    mf_context *ctx = mf_test_ctx();
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 8);
    /* the same q row at both positions */
    uint16_t q[16], k[16], out[16];
    mf_fill_uniform_bf16(q, 8, 11, -1.0f, 1.0f);
    memcpy(q + 8, q, 8 * sizeof(uint16_t));
    memcpy(k, q, sizeof q);
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

/* The reverse thread order (tests/rope.cmake registers CK_RUN_CASE=reverse
 * with CUDAHOST_THREAD_ORDER=reverse; the forward registrations exclude the
 * Check tag "reverse"): cases REVERSE_CASE0..REVERSE_CASE1-1 of the op's table
 * (both layouts, head counts, partial rotary, in place, explicit ids, offsets,
 * bases and scaling, bf16) for both variants, REVERSE_PER_TEST per Check test;
 * the long-context cases are the same kernels at larger positions (and seconds
 * of table building), left to the forward order. _i: variant * chunks +
 * chunk. */
enum { REVERSE_CASE0 = 4, REVERSE_CASE1 = 28, REVERSE_PER_TEST = 8 };
#define REVERSE_CHUNKS ((REVERSE_CASE1 - REVERSE_CASE0 + REVERSE_PER_TEST - 1) / REVERSE_PER_TEST)
START_TEST(reverse_order_cases)
{
    const int v = _i / REVERSE_CHUNKS, c0 = REVERSE_CASE0 + (_i % REVERSE_CHUNKS) * REVERSE_PER_TEST;
    for (int c = c0; c < c0 + REVERSE_PER_TEST && c < REVERSE_CASE1; ++c) (void)mf_test_op_case("rope", v, c);
}
END_TEST

static Suite *rope_equiv_suite(void)
{
    Suite *s = suite_create("rope_equiv");
    mf_test_add_op_cases(s, "rope"); /* TCases fused, cache */

    TCase *tcc = tcase_create("cache_props");
    tcase_add_checked_fixture(tcc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tcc, seed_regression_cache_outgrown);
    tcase_add_test(tcc, cache_reused_and_reserved);
    tcase_add_test(tcc, cache_unchecked_ids_beyond_table);
    suite_add_tcase(s, tcc);

    TCase *tcp = tcase_create("properties");
    tcase_add_checked_fixture(tcp, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tcp, backward_inverts_forward, 0, 2);
    tcase_add_test(tcp, long_context_fp32_angle_fails);
    tcase_add_loop_test(tcp, bf16_positions_collide_api_does_not, 0, 2);
    suite_add_tcase(s, tcp);

    TCase *tcr = tcase_create("reverse");
    tcase_set_tags(tcr, "reverse");
    tcase_add_checked_fixture(tcr, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tcr, reverse_order_cases, 0, 2 * REVERSE_CHUNKS);
    tcase_add_loop_test(tcr, backward_inverts_forward, 0, 2);
    suite_add_tcase(s, tcr);
    return s;
}

int main(void) { return mf_test_run(rope_equiv_suite()); }
