/* RoPE memory (seed 000, bug #2): the header's formulas at the
 * document's shape, and measured scratch through the context's tracked
 * allocators, the peaks of the op's memory cases run through the testbed
 * (src/ops/rope.c): the fused path uses none but the explicit-id check's
 * 8-byte word, the cache holds exactly mf_rope_cache_bytes (also across
 * growth), the reference's host tables are exactly mf_ref_rope_scratch_bytes,
 * and optimized <= ceiling < reference at two sizes. */
#include "memfix/rope.h"
#include "mf_test.h"

#include <stdint.h>
#include <stdio.h>
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

/* The memory cases of the op's table (src/ops/rope.c, its last four): B = 1,
 * Hq = 4, Hk = 2, Dh = rd = 16, forward, f32, T tokens at positions 0..T-1 as
 * an offset (the cache starts at T/4 and grows to T) and as explicit int64
 * ids (the id check's device word; the cache created for T positions), at
 * T = 48 and 192. */
#define MEM_CASE0 38

typedef struct mem_run {
    size_t ref_peak, ref_ids_peak, fused_peak, fused_ids_peak, cache_peak, cache_ids_peak;
} mem_run;

/* Case MEM_CASE0 + 2*size + ids of variant v through the testbed (equivalent
 * and opt <= ceiling asserted there: a variant that skipped the work would
 * trivially use no memory), checked to be the shape the formulas are given. */
static mf_case_result mem_case(int v, int size, int ids, int64_t T)
{
    const mf_case_result r = mf_test_op_case("rope", v, MEM_CASE0 + 2 * size + ids);
    char shape[192];
    snprintf(shape, sizeof shape,
             "B=1 T=%lld Hq=4 Hk=2 Dh=16 rd=16 half fwd pos<%lld base=10000 scaling=1 %s", (long long)T,
             (long long)T, ids ? "ids=int64 batch_stride=0 arange" : "offset=0");
    ck_assert_msg(strncmp(r.shape, shape, strlen(shape)) == 0, "case %d is '%s', expected '%s'",
                  MEM_CASE0 + 2 * size + ids, r.shape, shape);
    ck_assert_str_eq(r.dtype, "f32");
    return r;
}

static mem_run measure(int size, int64_t T)
{
    const mf_case_result fo = mem_case(0, size, 0, T), fi = mem_case(0, size, 1, T);
    const mf_case_result co = mem_case(1, size, 0, T), ci = mem_case(1, size, 1, T);
    ck_assert_uint_eq(fo.ceiling_bytes, mf_rope_fused_scratch_ceiling(1, T, 4, 2, 16));
    ck_assert_uint_eq(fi.ceiling_bytes, mf_rope_fused_scratch_ceiling(1, T, 4, 2, 16));
    ck_assert_uint_eq(co.ceiling_bytes, mf_rope_cache_scratch_ceiling(T / 4, T, 16));
    ck_assert_uint_eq(ci.ceiling_bytes, mf_rope_cache_scratch_ceiling(T, T, 16));
    ck_assert_uint_eq(fo.ref_peak_bytes, co.ref_peak_bytes);
    ck_assert_uint_eq(fi.ref_peak_bytes, ci.ref_peak_bytes);
    const mem_run r = { fo.ref_peak_bytes, fi.ref_peak_bytes, fo.opt_peak_bytes,
                        fi.opt_peak_bytes, co.opt_peak_bytes, ci.opt_peak_bytes };
    return r;
}

/* The cache object's scratch over its life (no data compared: the memory cases
 * compare): create holds exactly mf_rope_cache_bytes(capacity), apply
 * grows it to the table of the call's positions and holds
 * mf_rope_cache_size_bytes, destroy gives it back; the optimized paths (fused
 * and cache, offsets and explicit ids) allocate no host scratch. B = 1, T
 * tokens, Hq = 4, Hk = 2, Dh = rd = 16, on NaN buffers. */
static void cache_lifecycle(int64_t T)
{
    mf_context *ctx = mf_test_ctx();
    const int64_t cap0 = T / 4;
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, 16);
    const size_t nq = (size_t)T * 4 * 16, n = (size_t)T * 6 * 16;
    float *d = mf_test_dev_nan(ctx, 2 * n);
    const mf_rope_tensors td = { 1, T, 4, 2, MF_DTYPE_F32, d, d + nq, d + n, d + n + nq };
    int64_t *ids = malloc((size_t)T * sizeof(int64_t));
    ck_assert(ids != NULL);
    for (int64_t i = 0; i < T; ++i) ids[i] = i;
    void *d_ids = mf_test_dev_upload(ctx, ids, (size_t)T * sizeof(int64_t));
    const mf_rope_positions pos = mf_rope_positions_offset(0);
    const mf_rope_positions idpos = mf_rope_positions_ids(MF_ROPE_POS_I64, d_ids, 0);

    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_HOST));
    MF_ASSERT_OK(mf_rope_fused(ctx, &cfg, MF_ROPE_FORWARD, &td, &pos));
    MF_ASSERT_OK(mf_rope_fused(ctx, &cfg, MF_ROPE_FORWARD, &td, &idpos));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    mf_rope_cache *cache = NULL;
    MF_ASSERT_OK(mf_rope_cache_create(ctx, &cfg, cap0, &cache));
    mf_mem_stats st;
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    /* the table right after create: exactly the formula at the initial capacity */
    ck_assert_uint_eq(st.current - st.baseline, mf_rope_cache_bytes(cap0, 16));
    const size_t base0 = st.baseline; /* device scratch before the cache */
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &td, &pos));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    ck_assert_uint_eq(st.current - st.baseline, mf_rope_cache_size_bytes(cache));
    ck_assert_uint_eq(mf_rope_cache_size_bytes(cache), mf_rope_cache_bytes(T, 16));
    ck_assert_uint_eq(st.peak - st.baseline, mf_rope_cache_bytes(T, 16));
    MF_ASSERT_OK(mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &td, &idpos));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    ck_assert_uint_eq(st.peak - st.baseline, mf_rope_cache_scratch_ceiling(cap0, T, 16));
    mf_rope_cache_destroy(cache);
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    ck_assert_uint_eq(st.current, base0);                      /* destroy gives the table back */
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, MF_MEM_HOST), 0); /* no host table on the optimized paths */
    mf_buffer_free(ctx, d_ids);
    mf_buffer_free(ctx, d);
    free(ids);
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
        r[s] = measure(s, T);
        cache_lifecycle(T);
        ck_assert_uint_eq(r[s].ref_peak, mf_ref_rope_scratch_bytes(T, 16)); /* exact */
        ck_assert_uint_eq(r[s].ref_ids_peak, mf_ref_rope_scratch_bytes(T, 16));
        ck_assert_uint_eq(r[s].fused_peak, 0); /* offset positions: no check word */
        ck_assert_uint_le(r[s].fused_peak, mf_rope_fused_scratch_ceiling(1, T, 4, 2, 16));
        /* explicit ids: exactly the ceiling, the id-check word */
        ck_assert_uint_eq(r[s].fused_ids_peak, mf_rope_fused_scratch_ceiling(1, T, 4, 2, 16));
        /* growth cap0 -> max(T, 2*cap0) = T: the offset call's peak is the
         * table of grown_capacity (the old table is freed before the new one);
         * an explicit-id call on a table of T adds the check word: exactly the
         * ceiling */
        ck_assert_uint_eq(r[s].cache_peak, mf_rope_cache_bytes(T, 16));
        ck_assert_uint_eq(r[s].cache_peak + MF_ROPE_ID_CHECK_BYTES,
                          mf_rope_cache_scratch_ceiling(cap0, T, 16));
        ck_assert_uint_eq(r[s].cache_ids_peak, mf_rope_cache_scratch_ceiling(cap0, T, 16));
        ck_assert_uint_lt(mf_rope_cache_scratch_ceiling(cap0, T, 16), r[s].ref_peak);
        ck_assert_uint_lt(mf_rope_fused_scratch_ceiling(1, T, 4, 2, 16), r[s].ref_peak);
    }
    ck_assert_uint_gt(r[1].ref_peak, 3 * r[0].ref_peak); /* ~linear in T */
    ck_assert_uint_eq(r[1].cache_peak, 4 * r[0].cache_peak);
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
