/* No device synchronization inside an op call. In host
 * execution mode, cudahost counts the runtime calls that allocate, free or
 * synchronize (cudahost/counters.h); after a warm-up call, a second call of
 * every op must do none of them:
 *   - the forward pass of every variant of every registered op, through its
 *     `memfix bench` setup (the shapes memfix bench times);
 *   - the backward passes of cross-entropy (chunked and fused), attention
 *     (f32 SIMT and bf16 mma) and linear attention (causal f32 and bf16 mma,
 *     bidirectional);
 *   - rope (fused and cache, forward and backward) with explicit int32 and
 *     int64 position ids: range-checked on the device, never read back.
 * Also: the caching arena keeps peaks exact, trim releases the cache, the
 * cuBLAS workspace default, and a bad label reported by the next
 * synchronization. */
#include "mf_test.h"

#include "cudahost/counters.h"
#include "memfix/attention.h"
#include "memfix/cross_entropy.h"
#include "memfix/linear_attention.h"
#include "memfix/registry.h"
#include "memfix/rope.h"
#include "mf_internal.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The counts of one call of fn(ctx, arg), after a warm-up call. */
typedef mf_status (*op_call)(mf_context *ctx, void *arg);

static void assert_quiet_call(mf_context *ctx, op_call fn, void *arg, const char *what)
{
    MF_ASSERT_OK(fn(ctx, arg)); /* warm-up: fills the scratch cache */
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    cudahostResetCallCounts();
    mf_mem_stats before, after;
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &before));
    MF_ASSERT_OK(fn(ctx, arg));
    cudahostCallCounts c;
    cudahostGetCallCounts(&c);
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &after));
    ck_assert_msg(
        c.malloc_ == 0 && c.free_ == 0 && c.malloc_async == 0 && c.free_async == 0 && c.malloc_host == 0 &&
            c.free_host == 0,
        "%s: second call allocated or freed: cudaMalloc %llu, cudaFree %llu, async %llu/%llu, host %llu/%llu",
        what, c.malloc_, c.free_, c.malloc_async, c.free_async, c.malloc_host, c.free_host);
    ck_assert_msg(cudahostSyncCalls(&c) == 0,
                  "%s: second call synchronized: device %llu, stream %llu, event %llu, sync copies %llu",
                  what, c.device_sync, c.stream_sync, c.event_sync, c.memcpy_sync);
    ck_assert_uint_eq(after.current, before.current); /* every scratch byte given back */
    MF_ASSERT_OK(mf_context_synchronize(ctx));
}

static void assert_quiet_second_call(mf_context *ctx, op_call fn, void *arg, const char *what)
{
    assert_quiet_call(ctx, fn, arg, what);
}

/* ---- every op's forward, through its bench setup -------------------------------------- */
typedef struct bench_arg {
    const mf_bench_sweep *sweep;
    mf_bench_case *c;
} bench_arg;

static mf_status bench_call(mf_context *ctx, void *arg)
{
    bench_arg *b = (bench_arg *)arg;
    return b->sweep->optimized(ctx, b->c);
}

START_TEST(test_every_forward_quiet)
{
    mf_context *ctx = mf_test_ctx();
    size_t n_ops = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    int checked = 0;
    for (size_t i = 0; i < n_ops; i++) {
        const mf_bench_sweep *sw = ops[i]->bench;
        if (sw == NULL || sw->n_sizes == 0) continue;
        for (int v = 0; v < ops[i]->n_variants; v++) {
            mf_bench_case c;
            memset(&c, 0, sizeof c);
            c.variant = v;
            c.n = sw->sizes[0];
            MF_ASSERT_OK(sw->setup(ctx, &c));
            char what[160];
            snprintf(what, sizeof what, "%s/%s (%s)", ops[i]->name, ops[i]->variants[v], c.shape);
            bench_arg b = { sw, &c };
            assert_quiet_call(ctx, bench_call, &b, what);
            for (int k = 0; k < c.n_dev; k++) MF_ASSERT_OK(mf_buffer_free(ctx, c.dev[k]));
            for (int k = 0; k < c.n_host; k++) free(c.host[k]);
            checked++;
        }
    }
    ck_assert_int_ge(checked, 7);
}
END_TEST

/* ---- backward passes ------------------------------------------------------------------- */
enum { CN = 37, CD = 24, CV = 200 };
typedef struct ce_arg {
    void *h, *w, *lse, *gh, *gw, *loss;
    int64_t *lab;
    mf_cross_entropy_options o;
} ce_arg;

static mf_status ce_backward(mf_context *ctx, void *arg)
{
    ce_arg *a = (ce_arg *)arg;
    return mf_cross_entropy_backward(ctx, CN, CD, CV, MF_DTYPE_F32, a->h, a->w, NULL, a->lab, &a->o, a->lse,
                                     NULL, a->gh, a->gw, NULL);
}

static void *dev_uniform(mf_context *ctx, size_t n, uint64_t seed)
{
    float *h = (float *)malloc(n * sizeof(float));
    mf_fill_uniform_f32(h, n, seed, -1.0f, 1.0f);
    void *d = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, n * sizeof(float), &d));
    MF_ASSERT_OK(mf_buffer_upload(ctx, d, h, n * sizeof(float)));
    free(h);
    return d;
}

START_TEST(test_cross_entropy_backward_quiet)
{
    mf_context *ctx = mf_test_ctx();
    ce_arg a;
    memset(&a, 0, sizeof a);
    a.h = dev_uniform(ctx, CN * CD, 1);
    a.w = dev_uniform(ctx, CV * CD, 2);
    int64_t lab[CN];
    for (int i = 0; i < CN; i++) lab[i] = i % 7 == 3 ? -100 : (i * 31) % CV;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof lab, (void **)&a.lab));
    MF_ASSERT_OK(mf_buffer_upload(ctx, a.lab, lab, sizeof lab));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, CN * sizeof(float), &a.lse));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, CN * sizeof(float), &a.loss));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, CN * CD * sizeof(float), &a.gh));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, CV * CD * sizeof(float), &a.gw));
    for (int variant = 0; variant < 2; variant++) {
        mf_cross_entropy_options_init(&a.o);
        a.o.variant = variant ? MF_CE_VARIANT_FUSED : MF_CE_VARIANT_CHUNKED;
        MF_ASSERT_OK(mf_cross_entropy_forward(ctx, CN, CD, CV, MF_DTYPE_F32, a.h, a.w, NULL, a.lab, &a.o,
                                              (float *)a.loss, (float *)a.lse));
        assert_quiet_second_call(ctx, ce_backward, &a,
                                 variant ? "cross_entropy fused backward" : "cross_entropy chunked backward");
    }
}
END_TEST

typedef struct attn_arg {
    mf_dtype dt;
    int64_t D;
    void *q, *k, *v, *dout;
    float *out, *lse, *dq, *dk, *dv;
} attn_arg;
enum { AB = 1, AH = 2, AN = 40 };

static mf_status attn_backward(mf_context *ctx, void *arg)
{
    attn_arg *a = (attn_arg *)arg;
    return mf_attention_backward(ctx, MF_ATTENTION_TILED, a->dt, 1, AB, AH, AN, a->D, a->D, a->q, a->k, a->v,
                                 a->out, a->dout, a->lse, a->dq, a->dk, a->dv);
}

START_TEST(test_attention_backward_quiet)
{
    mf_context *ctx = mf_test_ctx();
    for (int bf16 = 0; bf16 < 2; bf16++) {
        attn_arg a;
        memset(&a, 0, sizeof a);
        a.dt = bf16 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
        a.D = 64; /* bf16 at D = 64: the mma.sync kernels */
        const size_t n = (size_t)AB * AH * AN * (size_t)a.D;
        a.q = dev_uniform(ctx, n, 3); /* f32 bytes: enough for bf16 too */
        a.k = dev_uniform(ctx, n, 4);
        a.v = dev_uniform(ctx, n, 5);
        a.dout = dev_uniform(ctx, n, 6);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, (void **)&a.out));
        MF_ASSERT_OK(mf_buffer_alloc(ctx, (size_t)AB * AH * AN * 4, (void **)&a.lse));
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, (void **)&a.dq));
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, (void **)&a.dk));
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, (void **)&a.dv));
        MF_ASSERT_OK(mf_attention_forward(ctx, MF_ATTENTION_TILED, a.dt, 1, AB, AH, AN, a.D, a.D, a.q, a.k,
                                          a.v, a.out, a.lse));
        assert_quiet_second_call(ctx, attn_backward, &a,
                                 bf16 ? "attention backward bf16" : "attention backward f32");
    }
}
END_TEST

typedef struct la_arg {
    mf_dtype dt;
    int causal;
    void *q, *k, *v, *dout;
    float *out, *dq, *dk, *dv;
} la_arg;

static mf_status la_backward(mf_context *ctx, void *arg)
{
    la_arg *a = (la_arg *)arg;
    return mf_linear_attention_backward(ctx, a->dt, a->causal, 16, AB, AH, AN, 64, 64, a->q, a->k, a->v,
                                        a->out, a->dout, NULL, NULL, a->dq, a->dk, a->dv);
}

START_TEST(test_linear_attention_backward_quiet)
{
    mf_context *ctx = mf_test_ctx();
    for (int cfg = 0; cfg < 3; cfg++) { /* f32 causal, bf16 causal (mma), f32 bidirectional */
        la_arg a;
        memset(&a, 0, sizeof a);
        a.dt = cfg == 1 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
        a.causal = cfg < 2;
        const size_t n = (size_t)AB * AH * AN * 64;
        a.q = dev_uniform(ctx, n, 7);
        a.k = dev_uniform(ctx, n, 8);
        a.v = dev_uniform(ctx, n, 9);
        a.dout = dev_uniform(ctx, n, 10);
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, (void **)&a.out));
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, (void **)&a.dq));
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, (void **)&a.dk));
        MF_ASSERT_OK(mf_buffer_alloc(ctx, n * 4, (void **)&a.dv));
        MF_ASSERT_OK(mf_linear_attention_forward(ctx, a.dt, a.causal, 16, AB, AH, AN, 64, 64, a.q, a.k, a.v,
                                                 NULL, a.out));
        char what[64];
        snprintf(what, sizeof what, "linear_attention backward (config %d)", cfg);
        assert_quiet_second_call(ctx, la_backward, &a, what);
    }
}
END_TEST

/* ---- rope with explicit ids: checked on the device, never read back ----------------------- */
enum { RB = 2, RT = 5, RHQ = 2, RHK = 1, RD = 8 };
typedef struct rope_arg {
    mf_rope_config cfg;
    mf_rope_direction dir;
    mf_rope_tensors t;
    mf_rope_positions pos;
    mf_rope_cache *cache; /* NULL: fused */
} rope_arg;

static mf_status rope_call(mf_context *ctx, void *arg)
{
    rope_arg *a = (rope_arg *)arg;
    if (a->cache != NULL) return mf_rope_cache_apply(a->cache, a->dir, &a->t, &a->pos);
    return mf_rope_fused(ctx, &a->cfg, a->dir, &a->t, &a->pos);
}

START_TEST(test_rope_explicit_ids_quiet)
{
    mf_context *ctx = mf_test_ctx();
    const size_t nq = (size_t)RB * RT * RHQ * RD, nk = (size_t)RB * RT * RHK * RD;
    void *x = dev_uniform(ctx, nq + nk, 11), *y = NULL, *ids = NULL;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, (nq + nk) * sizeof(float), &y));
    const int32_t ids32[RB * RT] = { 0, 7, 3, 300, 2, 9, 1, 0, 4096, 5 };
    const int64_t ids64[RB * RT] = { 0, 7, 3, 300, 2, 9, 1, 0, 4096, 5 };
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof ids64, &ids));
    for (int cfg = 0; cfg < 8; cfg++) { /* int32/int64 x forward/backward x fused/cache */
        const int is64 = cfg & 1, cached = (cfg >> 2) & 1;
        rope_arg a;
        memset(&a, 0, sizeof a);
        mf_rope_config_init(&a.cfg, RD);
        a.dir = (cfg >> 1) & 1 ? MF_ROPE_BACKWARD : MF_ROPE_FORWARD;
        a.t = (mf_rope_tensors){ RB, RT, RHQ, RHK, MF_DTYPE_F32, x, (float *)x + nq, y, (float *)y + nq };
        MF_ASSERT_OK(mf_buffer_upload(ctx, ids, is64 ? (const void *)ids64 : (const void *)ids32,
                                      is64 ? sizeof ids64 : sizeof ids32));
        a.pos = mf_rope_positions_ids(is64 ? MF_ROPE_POS_I64 : MF_ROPE_POS_I32, ids, RT);
        if (cached) MF_ASSERT_OK(mf_rope_cache_create(ctx, &a.cfg, 16, &a.cache)); /* ids up to 4096 */
        char what[80];
        snprintf(what, sizeof what, "rope %s %s int%d ids", cached ? "cache" : "fused",
                 a.dir == MF_ROPE_BACKWARD ? "backward" : "forward", is64 ? 64 : 32);
        assert_quiet_second_call(ctx, rope_call, &a, what);
        mf_rope_cache_destroy(a.cache);
    }
    MF_ASSERT_OK(mf_context_synchronize(ctx)); /* every id in range: nothing deferred */
    MF_ASSERT_OK(mf_buffer_free(ctx, ids));
    MF_ASSERT_OK(mf_buffer_free(ctx, y));
    MF_ASSERT_OK(mf_buffer_free(ctx, x));
}
END_TEST

/* ---- the arena itself ------------------------------------------------------------------ */
START_TEST(test_arena_peaks_and_trim)
{
    mf_context *ctx = mf_test_ctx();
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    void *a = NULL, *b = NULL;
    MF_ASSERT_OK(mf_scratch_alloc(ctx, MF_MEM_DEVICE, 1000, &a));
    mf_scratch_free(ctx, MF_MEM_DEVICE, a);
    ck_assert_uint_eq(mf_context_cached_bytes(ctx), 1024); /* rounded to 256 */
    cudahostResetCallCounts();
    MF_ASSERT_OK(mf_scratch_alloc(ctx, MF_MEM_DEVICE, 900, &b)); /* reuses the cached block */
    cudahostCallCounts c;
    cudahostGetCallCounts(&c);
    ck_assert_uint_eq(c.malloc_, 0);
    ck_assert_ptr_eq(a, b);
    ck_assert_uint_eq(mf_context_cached_bytes(ctx), 0);
    /* the trackers count the bytes asked for, not the blocks */
    ck_assert_uint_eq(mf_mem_peak_delta(ctx, MF_MEM_DEVICE), 1000);
    /* the extent check sees the 900 bytes asked for, not the 1024-byte block */
    MF_ASSERT_STATUS(mf_check_device_extent("t", ctx, b, 901, "b"), MF_ERR_INVALID_SIZE);
    mf_scratch_free(ctx, MF_MEM_DEVICE, b);
    MF_ASSERT_OK(mf_context_trim(ctx));
    ck_assert_uint_eq(mf_context_cached_bytes(ctx), 0);
    MF_ASSERT_STATUS(mf_context_trim(NULL), MF_ERR_NULL_POINTER);
    ck_assert_uint_eq(mf_context_cached_bytes(NULL), 0);
}
END_TEST

START_TEST(test_cublas_workspace_default)
{
    ck_assert_uint_eq(mf_cublas_workspace_default(MF_BACKEND_CUDA, 9), MF_CUBLAS_WORKSPACE_SM90);
    ck_assert_uint_eq(MF_CUBLAS_WORKSPACE_SM90, (size_t)32 << 20);
    ck_assert_uint_eq(mf_cublas_workspace_default(MF_BACKEND_CUDA, 8), MF_DEFAULT_CUBLAS_WORKSPACE);
    ck_assert_uint_eq(mf_cublas_workspace_default(MF_BACKEND_CUDA, 10), MF_DEFAULT_CUBLAS_WORKSPACE);
    ck_assert_uint_eq(mf_cublas_workspace_default(MF_BACKEND_HOST, 9), MF_DEFAULT_CUBLAS_WORKSPACE);
    /* a default context: the workspace is counted in the baseline */
    mf_context *ctx = mf_test_ctx();
    mf_mem_stats st;
    MF_ASSERT_OK(mf_mem_stats_get(ctx, MF_MEM_DEVICE, &st));
    ck_assert_uint_eq(st.baseline, mf_context_cublas_workspace_bytes(ctx));
    ck_assert_uint_eq(mf_context_cublas_workspace_bytes(ctx), MF_DEFAULT_CUBLAS_WORKSPACE);
}
END_TEST

/* A bad label: the call returns MF_OK without waiting, the next synchronization reports it. */
START_TEST(test_bad_label_deferred)
{
    mf_context *ctx = mf_test_ctx();
    void *h = dev_uniform(ctx, CN * CD, 1), *w = dev_uniform(ctx, CV * CD, 2), *loss = NULL;
    int64_t lab[CN], *dlab = NULL;
    for (int i = 0; i < CN; i++) lab[i] = i % CV;
    lab[5] = CV + 3;
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof lab, (void **)&dlab));
    MF_ASSERT_OK(mf_buffer_upload(ctx, dlab, lab, sizeof lab));
    MF_ASSERT_OK(mf_buffer_alloc(ctx, sizeof(float), &loss));
    for (int variant = 0; variant < 2; variant++) {
        mf_cross_entropy_options o;
        mf_cross_entropy_options_init(&o);
        o.variant = variant ? MF_CE_VARIANT_FUSED : MF_CE_VARIANT_CHUNKED;
        MF_ASSERT_OK(mf_cross_entropy_forward(ctx, CN, CD, CV, MF_DTYPE_F32, h, w, NULL, dlab, &o,
                                              (float *)loss, NULL));
        MF_ASSERT_STATUS(mf_context_synchronize(ctx), MF_ERR_OUT_OF_RANGE);
        ck_assert_ptr_nonnull(strstr(mf_last_error(), "labels[5]"));
        MF_ASSERT_OK(mf_context_synchronize(ctx)); /* reported once */
    }
    /* 20 calls without a synchronization: the 17th waits once and reports it */
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    mf_status last = MF_OK;
    for (int i = 0; i < 20 && last == MF_OK; i++)
        last = mf_cross_entropy_forward(ctx, CN, CD, CV, MF_DTYPE_F32, h, w, NULL, dlab, &o, (float *)loss,
                                        NULL);
    ck_assert_int_eq(last, MF_ERR_OUT_OF_RANGE);
    MF_ASSERT_OK(mf_context_synchronize(ctx));
}
END_TEST

static Suite *no_sync_suite(void)
{
    Suite *s = suite_create("no_sync");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_every_forward_quiet);
    tcase_add_test(tc, test_cross_entropy_backward_quiet);
    tcase_add_test(tc, test_attention_backward_quiet);
    tcase_add_test(tc, test_linear_attention_backward_quiet);
    tcase_add_test(tc, test_rope_explicit_ids_quiet);
    tcase_add_test(tc, test_arena_peaks_and_trim);
    tcase_add_test(tc, test_cublas_workspace_default);
    tcase_add_test(tc, test_bad_label_deferred);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(no_sync_suite()); }
