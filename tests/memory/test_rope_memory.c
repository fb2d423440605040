/* RoPE memory (seed 000, bug #2; issue 5): the header's formulas at the
 * document's shape, and measured scratch through the context's tracked
 * allocators: the fused path uses none but the explicit-id check's 8-byte
 * word, the cache holds exactly
 * mf_rope_cache_bytes (also across growth), the reference's host tables are
 * exactly mf_ref_rope_scratch_bytes, and optimized <= ceiling < reference at
 * two sizes. */
#include "memfix/rope.h"
#include "mf_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The seed's shape: 131,072-token context; a Qwen3-4B-like attention with
 * head_dim = rotary_dim = 128, 32 query and 8 key/value heads. Formulas only:
 * nothing of this size is allocated. */
START_TEST(formulas_at_seed_shape)
{
    const int64_t T = 131072, D = 128;
    /* reference: 8 * (L + rd/2 + 2*L*rd) = 8 * (131072 + 64 + 33554432) */
    ck_assert_uint_eq(mf_ref_rope_scratch_bytes(T, D), (size_t)269484544u);
    /* cache: 4 * capacity * rd = 64 MiB */
    ck_assert_uint_eq(mf_rope_cache_bytes(T, D), (size_t)67108864u);
    /* the table plus apply's 8-byte id-check word */
    ck_assert_uint_eq(mf_rope_cache_scratch_ceiling(T, T, D), (size_t)67108872u);
    /* fused: the id-check word only */
    ck_assert_uint_eq(MF_ROPE_ID_CHECK_BYTES, 8);
    ck_assert_uint_eq(mf_rope_fused_scratch_ceiling(1, T, 32, 8, D), 8);
    ck_assert(mf_rope_cache_bytes(T, D) < mf_ref_rope_scratch_bytes(T, D));
    /* growth rule: capacity' = max(needed, 2 * capacity) */
    ck_assert_int_eq(mf_rope_cache_grown_capacity(4096, 4096), 4096);
    ck_assert_int_eq(mf_rope_cache_grown_capacity(4096, 4097), 8192);
    ck_assert_int_eq(mf_rope_cache_grown_capacity(4096, T), T);
    ck_assert_uint_eq(mf_rope_cache_scratch_ceiling(4096, T, D),
                      mf_rope_cache_bytes(T, D) + MF_ROPE_ID_CHECK_BYTES);
    /* at 1M positions (1048576 x 128): reference 2 GiB of host tables, cache 512 MiB */
    ck_assert_uint_eq(mf_ref_rope_scratch_bytes(1048576, D), (size_t)8 * (1048576 + 64 + 2 * 1048576 * 128));
    ck_assert_uint_eq(mf_rope_cache_bytes(1048576, D), (size_t)536870912u);
    /* invalid arguments and overflow */
    ck_assert_uint_eq(mf_ref_rope_scratch_bytes(0, D), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_rope_scratch_bytes(T, 7), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_rope_scratch_bytes(INT64_MAX, D), SIZE_MAX);
    ck_assert_uint_eq(mf_rope_cache_bytes(INT64_MAX, D), SIZE_MAX);
    ck_assert_uint_eq(mf_rope_cache_bytes(T, 0), SIZE_MAX);
    ck_assert_uint_eq(mf_rope_fused_scratch_ceiling(0, T, 32, 8, D), SIZE_MAX);
    ck_assert_int_eq(mf_rope_cache_grown_capacity(0, 5), -1);
    ck_assert_int_eq(mf_rope_cache_grown_capacity(INT64_MAX / 2 + 1, INT64_MAX), -1);
    ck_assert_uint_eq(mf_rope_cache_scratch_ceiling(0, T, D), SIZE_MAX);
}
END_TEST

typedef struct mem_run {
    size_t ref_peak, fused_peak, cache_peak, cache_hold, host_in_opt;
    size_t fused_ids_peak, cache_ids_peak; /* explicit int64 ids 0..T-1 (checked on the device) */
} mem_run;

/* One shape: B = 1, T tokens at positions 0..T-1, Hq = 4, Hk = 2, Dh = rd = 16. */
static mem_run measure(int64_t T, int64_t cache_capacity)
{
    mf_context *ctx = mf_test_ctx();
    mem_run r;
    memset(&r, 0, sizeof r);
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 16);
    const size_t nq = (size_t)T * 4 * 16, nk = (size_t)T * 2 * 16, n = nq + nk;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    ck_assert(x && y);
    mf_fill_uniform_f32(x, n, 3, -1.0f, 1.0f);
    mf_rope_positions pos = mf_rope_positions_offset(0);

    mf_rope_tensors th = { 1, T, 4, 2, MF_DTYPE_F32, x, x + nq, y, y + nq };
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    MF_ASSERT_OK(mf_ref_rope(ctx, &cfg, MF_ROPE_FORWARD, &th, &pos));
    r.ref_peak = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    void *d = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, 2 * n * 4, &d));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d, x, n * 4));
    mf_rope_tensors td = {
        1, T, 4, 2, MF_DTYPE_F32, d, (float *)d + nq, (float *)d + n, (float *)d + n + nq
    };
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(mf_rope_fused(ctx, &cfg, MF_ROPE_FORWARD, &td, &pos));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    r.fused_peak = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);

    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(ctx, &cfg, cache_capacity, &cache));
    mf_mem_stats st;
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    /* the table right after create: exactly the formula at the initial capacity */
    ck_assert_uint_eq(st.current - st.baseline, mf_rope_cache_bytes(cache_capacity, 16));
    const size_t base0 = st.baseline; /* device scratch before the cache */
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &td, &pos));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    r.cache_peak = st.peak - st.baseline;
    r.cache_hold = st.current - st.baseline;
    ck_assert_uint_eq(r.cache_hold, mf_rope_cache_size_bytes(cache));

    /* explicit ids 0..T-1: the same rotations plus the id check's device word */
    int64_t *ids = malloc((size_t)T * sizeof(int64_t));
    ck_assert(ids != NULL);
    for (int64_t i = 0; i < T; ++i) ids[i] = i;
    void *d_ids = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, (size_t)T * sizeof(int64_t), &d_ids));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d_ids, ids, (size_t)T * sizeof(int64_t)));
    const mf_rope_positions idpos = mf_rope_positions_ids(MF_ROPE_POS_I64, d_ids, 0);
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &td, &idpos));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    r.cache_ids_peak =
        st.peak - st.baseline + mf_rope_cache_size_bytes(cache); /* the table was live before */
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(mf_rope_fused(ctx, &cfg, MF_ROPE_FORWARD, &td, &idpos));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    r.fused_ids_peak = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    mf_buffer_free(ctx, d_ids);
    free(ids);
    mf_rope_cache_destroy(cache);
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    ck_assert_uint_eq(st.current, base0);                /* destroy gives the table back */
    r.host_in_opt = mf_mem_peak_delta(ctx, MF_MEM_HOST); /* no host table on the optimized paths */
    mf_buffer_free(ctx, d);
    free(y);
    free(x);
    return r;
}

/* optimized <= ceiling < reference, at two sizes; the reference's host tables
 * grow with T, the fused path stays at zero (offsets) or its 8-byte id-check
 * word (explicit ids). */
START_TEST(ceilings_two_sizes)
{
    static const int64_t sizes[2] = { 48, 192 };
    mem_run r[2];
    for (int s = 0; s < 2; ++s) {
        const int64_t T = sizes[s], cap0 = T / 4;
        r[s] = measure(T, cap0);
        ck_assert_uint_eq(r[s].ref_peak, mf_ref_rope_scratch_bytes(T, 16)); /* exact */
        ck_assert_uint_eq(r[s].fused_peak, 0); /* offset positions: no check word */
        ck_assert_uint_le(r[s].fused_peak, mf_rope_fused_scratch_ceiling(1, T, 4, 2, 16));
        /* explicit ids: exactly the ceiling, the id-check word */
        ck_assert_uint_eq(r[s].fused_ids_peak, mf_rope_fused_scratch_ceiling(1, T, 4, 2, 16));
        /* growth cap0 -> max(T, 2*cap0) = T: the held table is the table of
         * grown_capacity and the offset call's peak (the old table is freed
         * before the new one); an explicit-id call on it adds the check word:
         * exactly the ceiling */
        ck_assert_uint_eq(r[s].cache_hold, mf_rope_cache_bytes(T, 16));
        ck_assert_uint_eq(r[s].cache_peak + MF_ROPE_ID_CHECK_BYTES,
                          mf_rope_cache_scratch_ceiling(cap0, T, 16));
        ck_assert_uint_eq(r[s].cache_ids_peak, mf_rope_cache_scratch_ceiling(cap0, T, 16));
        ck_assert_uint_lt(mf_rope_cache_scratch_ceiling(cap0, T, 16), r[s].ref_peak);
        ck_assert_uint_lt(mf_rope_fused_scratch_ceiling(1, T, 4, 2, 16), r[s].ref_peak);
        ck_assert_uint_eq(r[s].host_in_opt, 0);
    }
    ck_assert_uint_gt(r[1].ref_peak, 3 * r[0].ref_peak); /* ~linear in T */
    ck_assert_uint_eq(r[1].cache_hold, 4 * r[0].cache_hold);
}
END_TEST

/* Growth keeps exactly one table alive: reserve in steps, the tracked device
 * memory equals mf_rope_cache_bytes(capacity) after every step and its peak
 * never holds two tables. */
START_TEST(cache_growth_holds_one_table)
{
    mf_context *ctx = mf_test_ctx();
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 64);
    cfg.rotary_dim = 32; /* partial: the table depends on rotary_dim only */
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(ctx, &cfg, 10, &cache));
    static const int64_t steps[] = { 5, 11, 21, 100, 150, 1000 };
    static const int64_t caps[] = { 10, 20, 40, 100, 200, 1000 };
    for (int i = 0; i < 6; ++i) {
        MF_ASSERT_OK(mf_rope_cache_reserve(cache, steps[i]));
        ck_assert_int_eq(mf_rope_cache_capacity(cache), caps[i]);
        mf_mem_stats st;
        MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
        ck_assert_uint_eq(st.current - st.baseline, mf_rope_cache_bytes(caps[i], 32));
        ck_assert_uint_eq(st.peak - st.baseline, mf_rope_cache_bytes(caps[i], 32));
    }
    mf_rope_cache_destroy(cache);
}
END_TEST

static Suite *rope_memory_suite(void)
{
    Suite *s = suite_create("rope_memory");
    TCase *tc = tcase_create("memory");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, formulas_at_seed_shape);
    tcase_add_test(tc, ceilings_two_sizes);
    tcase_add_test(tc, cache_growth_holds_one_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(rope_memory_suite()); }
