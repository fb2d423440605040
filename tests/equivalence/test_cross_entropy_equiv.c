/* Equivalence of the chunked linear cross-entropy (optimized/cross_entropy.cu)
 * with the full-logits reference (reference/cross_entropy.c); seed 000, bug 1.
 *
 * Every case: seeded inputs, the reference forward (loss, lse) and backward
 * (grad_hidden, grad_weight, grad_bias) on the host, then on the test backend
 *   (a) the fused forward+backward call, and
 *   (b) the forward call saving lse, then the backward call from that lse,
 * each into outputs pre-filled with NaN, compared with the op's tolerance rows.
 * The chunk size is forced through the planner: the scratch budget is exactly
 * the ceiling for the wanted chunk, and the test asserts the plan picked it.
 * Shapes are small: host execution mode costs ~10 ns per GPU thread.
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/cross_entropy.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ce_spec {
    int64_t n, d, v;
    int64_t chunk; /* 0: default budget (one chunk at these sizes) */
    mf_dtype dtype;
    mf_ce_reduction red;
    int shift;
    int64_t seq_len;
    int bias;
    float eps, z, cap;
    int all_ignored;
    int64_t nan_row; /* -1: none; else hidden[nan_row][1] = NaN */
    int only_grad_weight;
    int null_upstream; /* pass grad_loss = NULL (means 1) to the optimized calls */
} ce_spec;

/* The variant under test: the "chunked" TCase runs MF_CE_VARIANT_CHUNKED, the
 * "fused" TCase the same tests on MF_CE_VARIANT_FUSED (set by its fixture, in
 * the forked test process). */
static mf_ce_variant g_variant = MF_CE_VARIANT_CHUNKED;
static void fused_setup(void)
{
    g_variant = MF_CE_VARIANT_FUSED;
    mf_test_setup();
}

static ce_spec base_spec(void)
{
    ce_spec s;
    memset(&s, 0, sizeof s);
    s.n = 24;
    s.d = 16;
    s.v = 200;
    s.chunk = 10;
    s.dtype = MF_DTYPE_F32;
    s.red = MF_CE_REDUCTION_MEAN;
    s.nan_row = -1;
    return s;
}

static const char *loss_tol(mf_dtype dt)
{
    return dt == MF_DTYPE_BF16 ? "cross_entropy.loss.bf16" : "cross_entropy.loss.f32";
}
static const char *grad_tol(mf_dtype dt)
{
    return dt == MF_DTYPE_BF16 ? "cross_entropy.grad.bf16" : "cross_entropy.grad.f32";
}

static float *download(mf_context *ctx, const float *d, size_t n)
{
    return mf_test_dev_fetch(ctx, d, n, 0, "download");
}

typedef struct ce_outputs {
    float *loss, *lse, *gh, *gw, *gb; /* host copies */
} ce_outputs;

static void free_outputs(ce_outputs *o)
{
    free(o->loss);
    free(o->lse);
    free(o->gh);
    free(o->gw);
    free(o->gb);
    memset(o, 0, sizeof *o);
}

static void compare_all(const ce_spec *s, const ce_outputs *got, const ce_outputs *ref, size_t n_loss,
                        int check_lse)
{
    const size_t n = (size_t)s->n, d = (size_t)s->d, v = (size_t)s->v;
    MF_ASSERT_CLOSE(got->loss, ref->loss, n_loss, loss_tol(s->dtype));
    if (check_lse) MF_ASSERT_CLOSE(got->lse, ref->lse, n, loss_tol(s->dtype));
    if (!s->only_grad_weight) MF_ASSERT_CLOSE(got->gh, ref->gh, n * d, grad_tol(s->dtype));
    MF_ASSERT_CLOSE(got->gw, ref->gw, v * d, grad_tol(s->dtype));
    if (s->bias && !s->only_grad_weight) MF_ASSERT_CLOSE(got->gb, ref->gb, v, grad_tol(s->dtype));
}

/* Runs one spec through the reference and both optimized paths; returns the
 * optimized fused outputs in *fused_out if non-NULL (caller frees). */
static void run_spec(const ce_spec *s, uint64_t seed, ce_outputs *fused_out)
{
    mf_context *ctx = mf_test_ctx();
    const size_t n = (size_t)s->n, d = (size_t)s->d, v = (size_t)s->v;
    const size_t es = mf_dtype_size(s->dtype);
    const size_t n_loss = s->red == MF_CE_REDUCTION_NONE ? n : 1;

    void *h = mf_test_make_input(s->dtype, n * d, seed, -1.0f, 1.0f);
    void *w = mf_test_make_input(s->dtype, v * d, seed + 1, -0.5f, 0.5f);
    void *b = s->bias ? mf_test_make_input(s->dtype, v, seed + 2, -1.0f, 1.0f) : NULL;
    if (s->nan_row >= 0) {
        if (s->dtype == MF_DTYPE_BF16)
            ((uint16_t *)h)[(size_t)s->nan_row * d + 1] = mf_f32_to_bf16(NAN);
        else
            ((float *)h)[(size_t)s->nan_row * d + 1] = NAN;
    }
    float *gl = malloc(n_loss * sizeof(float));
    int64_t *lab = malloc(n * sizeof(int64_t));
    ck_assert(gl && lab);
    if (s->null_upstream)
        for (size_t i = 0; i < n_loss; ++i) gl[i] = 1.0f; /* what NULL means */
    else if (s->red == MF_CE_REDUCTION_NONE)
        mf_fill_uniform_f32(gl, n_loss, seed + 3, -1.5f, 1.5f); /* random upstream, both signs */
    else
        gl[0] = 0.75f;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; ++i) {
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        const uint64_t r = x * 0x2545F4914F6CDD1Dull;
        lab[i] = (s->all_ignored || (r >> 60) < 3) ? MF_CE_DEFAULT_IGNORE_INDEX : (int64_t)((r >> 8) % v);
    }
    if (s->nan_row >= 0) { /* the NaN row must be a valid (non-ignored) row */
        const size_t src = s->shift ? (size_t)s->nan_row + 1 : (size_t)s->nan_row;
        lab[src] = 3;
    }

    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.reduction = s->red;
    o.shift_labels = s->shift;
    o.seq_len = s->seq_len;
    o.label_smoothing = s->eps;
    o.z_loss = s->z;
    o.softcap = s->cap;
    if (s->chunk > 0) o.scratch_budget = mf_cross_entropy_chunked_scratch_ceiling(s->n, s->v, s->chunk);
    o.variant = g_variant;
    size_t ceiling;
    if (g_variant == MF_CE_VARIANT_FUSED) {
        /* O(N): no V, no budget. */
        ceiling = mf_cross_entropy_fused_scratch_ceiling(s->n);
        ck_assert_uint_eq(ceiling, 8 * n + 16);
    } else {
        mf_cross_entropy_plan_info plan;
        MF_ASSERT_OK(mf_cross_entropy_plan(s->n, s->v, s->dtype, &o, &plan));
        int64_t want_chunk = s->chunk > 0 && s->chunk < s->n ? s->chunk : s->n;
        if (s->chunk == 0) { /* default budget: capped at the logits it replaces */
            const size_t logits = mf_cross_entropy_logits_bytes(s->n, s->v, s->dtype);
            ck_assert(plan.capped_by_logits);
            ck_assert_uint_eq(plan.logits_bytes, logits);
            const int64_t rows = (int64_t)((logits - 4 * n - 16) / (4 * v));
            if (rows < want_chunk) want_chunk = rows;
            ck_assert_uint_le(plan.scratch_bytes, logits);
        }
        ck_assert_int_eq(plan.chunk_rows, want_chunk);
        ck_assert_int_eq(plan.n_chunks, (s->n + want_chunk - 1) / want_chunk);
        ceiling = mf_cross_entropy_chunked_scratch_ceiling(s->n, s->v, plan.chunk_rows);
    }

    /* Reference. */
    ce_outputs ref = { 0 };
    ref.loss = malloc(n_loss * sizeof(float));
    ref.lse = malloc(n * sizeof(float));
    ref.gh = malloc(n * d * sizeof(float));
    ref.gw = malloc(v * d * sizeof(float));
    ref.gb = malloc(v * sizeof(float));
    ck_assert(ref.loss && ref.lse && ref.gh && ref.gw && ref.gb);
    mf_fill_nan_f32(ref.gb, v);
    MF_ASSERT_OK(
        mf_ref_cross_entropy_forward(ctx, s->n, s->d, s->v, s->dtype, h, w, b, lab, &o, ref.loss, ref.lse));
    MF_ASSERT_OK(mf_ref_cross_entropy_backward(ctx, s->n, s->d, s->v, s->dtype, h, w, b, lab, &o, gl, ref.gh,
                                               ref.gw, s->bias ? ref.gb : NULL));

    /* Device inputs. */
    void *dh = mf_test_dev_upload(ctx, h, n * d * es), *dw = mf_test_dev_upload(ctx, w, v * d * es);
    void *db = s->bias ? mf_test_dev_upload(ctx, b, v * es) : NULL;
    int64_t *dlab = mf_test_dev_upload(ctx, lab, n * sizeof(int64_t));
    float *dgl = mf_test_dev_upload(ctx, gl, n_loss * sizeof(float));
    const float *up = s->null_upstream ? NULL : dgl;
    const int want_gh = !s->only_grad_weight, want_gb = s->bias && !s->only_grad_weight;

    /* (a) fused forward + backward. */
    float *d_loss = mf_test_dev_nan(ctx, n_loss), *d_lse = mf_test_dev_nan(ctx, n);
    float *d_gh = mf_test_dev_nan(ctx, n * d), *d_gw = mf_test_dev_nan(ctx, v * d),
          *d_gb = mf_test_dev_nan(ctx, v);
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(mf_cross_entropy_forward_backward(ctx, s->n, s->d, s->v, s->dtype, dh, dw, db, dlab, &o, up,
                                                   d_loss, d_lse, want_gh ? d_gh : NULL, d_gw,
                                                   want_gb ? d_gb : NULL));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    const size_t peak_fused = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    ck_assert_msg(peak_fused <= ceiling, "fused scratch %zu > ceiling %zu", peak_fused, ceiling);
    ce_outputs fused = { download(ctx, d_loss, n_loss), download(ctx, d_lse, n), download(ctx, d_gh, n * d),
                         download(ctx, d_gw, v * d), download(ctx, d_gb, v) };
    compare_all(s, &fused, &ref, n_loss, 1);

    /* (b) forward saving lse, then backward from it. */
    float *d_loss2 = mf_test_dev_nan(ctx, n_loss), *d_lse2 = mf_test_dev_nan(ctx, n);
    float *d_gh2 = mf_test_dev_nan(ctx, n * d), *d_gw2 = mf_test_dev_nan(ctx, v * d),
          *d_gb2 = mf_test_dev_nan(ctx, v);
    MF_ASSERT_OK(mf_mem_begin(ctx, MF_MEM_DEVICE));
    MF_ASSERT_OK(
        mf_cross_entropy_forward(ctx, s->n, s->d, s->v, s->dtype, dh, dw, db, dlab, &o, d_loss2, d_lse2));
    MF_ASSERT_OK(mf_cross_entropy_backward(ctx, s->n, s->d, s->v, s->dtype, dh, dw, db, dlab, &o, d_lse2, up,
                                           want_gh ? d_gh2 : NULL, d_gw2, want_gb ? d_gb2 : NULL));
    MF_ASSERT_OK(mf_context_synchronize(ctx));
    const size_t peak_split = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);
    ck_assert_msg(peak_split <= ceiling, "forward/backward scratch %zu > ceiling %zu", peak_split, ceiling);
    ce_outputs split = { download(ctx, d_loss2, n_loss), download(ctx, d_lse2, n),
                         download(ctx, d_gh2, n * d), download(ctx, d_gw2, v * d), download(ctx, d_gb2, v) };
    compare_all(s, &split, &ref, n_loss, 1);

    if (fused_out) {
        *fused_out = fused;
    } else {
        free_outputs(&fused);
    }
    free_outputs(&split);
    free_outputs(&ref);
    void *bufs[] = { dh,   dw,   db,      dlab,   dgl,   d_loss, d_lse, d_gh,
                     d_gw, d_gb, d_loss2, d_lse2, d_gh2, d_gw2,  d_gb2 };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) mf_buffer_free(ctx, bufs[i]);
    free(h);
    free(w);
    free(b);
    free(gl);
    free(lab);
}

/* dtype x reduction x shift, a ragged last chunk (24 = 10 + 10 + 4), with bias. */
START_TEST(test_dtype_reduction_shift)
{
    ce_spec s = base_spec();
    s.dtype = (_i & 1) ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    s.red = (mf_ce_reduction)((_i >> 1) % 3);
    s.shift = _i / 6;
    s.seq_len = s.shift ? 12 : 0;
    s.bias = 1;
    run_spec(&s, 100 + (uint64_t)_i, NULL);
}
END_TEST

/* Label smoothing, z-loss, softcap: each alone, then all together, f32 and bf16. */
START_TEST(test_options)
{
    ce_spec s = base_spec();
    s.n = 21;
    s.v = 257;
    s.chunk = 7;
    s.dtype = (_i & 1) ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const int which = _i / 2;
    if (which == 0 || which == 3) s.eps = 0.1f;
    if (which == 1 || which == 3) s.z = 1e-2f;
    if (which == 2 || which == 3) s.cap = 2.0f; /* small: tanh is far from linear */
    s.shift = which == 3;
    s.red = which == 3 ? MF_CE_REDUCTION_NONE : MF_CE_REDUCTION_MEAN;
    s.bias = which >= 2;
    run_spec(&s, 200 + (uint64_t)_i, NULL);
}
END_TEST

/* A ragged last chunk: 45 = 20 + 20 + 5. */
START_TEST(test_ragged_last_chunk)
{
    ce_spec s = base_spec();
    s.n = 45;
    s.chunk = 20;
    s.v = 301;
    s.dtype = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    s.red = MF_CE_REDUCTION_SUM;
    run_spec(&s, 300 + (uint64_t)_i, NULL);
}
END_TEST

/* A chunk of one row: seven chunks, grad_W accumulated over all of them. */
START_TEST(test_chunk_of_one_row)
{
    ce_spec s = base_spec();
    s.n = 7;
    s.chunk = 1;
    s.v = 129;
    s.bias = 1;
    s.dtype = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    run_spec(&s, 400 + (uint64_t)_i, NULL);
}
END_TEST

/* The default 1 GiB budget at a small N: the tile is capped at the logits it
 * replaces (f32: 9 of 10 rows, bf16: 4), never above them. */
START_TEST(test_n_smaller_than_chunk)
{
    ce_spec s = base_spec();
    s.n = 10;
    s.chunk = 0;
    s.v = 1000; /* several 256-thread strides per row */
    s.shift = 1;
    s.dtype = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    run_spec(&s, 500 + (uint64_t)_i, NULL);
}
END_TEST

/* Every position ignored with mean: loss 0 and zero gradients (PyTorch: NaN). */
START_TEST(test_all_ignored)
{
    ce_spec s = base_spec();
    s.all_ignored = 1;
    s.bias = 1;
    s.dtype = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    ce_outputs got;
    run_spec(&s, 600 + (uint64_t)_i, &got);
    ck_assert_msg(got.loss[0] == 0.0f, "loss %g, want exactly 0", (double)got.loss[0]);
    for (int64_t i = 0; i < s.n * s.d; ++i) ck_assert(got.gh[i] == 0.0f);
    for (int64_t i = 0; i < s.v * s.d; ++i) ck_assert(got.gw[i] == 0.0f);
    for (int64_t i = 0; i < s.v; ++i) ck_assert(got.gb[i] == 0.0f);
    free_outputs(&got);
}
END_TEST

/* A NaN in hidden propagates to the (mean) loss, and the gradients carry the
 * reference's NaN pattern (its row of grad_hidden, all of grad_W). */
START_TEST(test_nan_in_hidden)
{
    ce_spec s = base_spec();
    s.nan_row = 13; /* in the second chunk */
    s.dtype = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    ce_outputs got;
    run_spec(&s, 700 + (uint64_t)_i, &got);
    ck_assert_msg(isnan(got.loss[0]), "loss %g, want NaN", (double)got.loss[0]);
    ck_assert(isnan(got.gh[13 * s.d]));
    ck_assert(!isnan(got.gh[0]));
    free_outputs(&got);
}
END_TEST

/* Only grad_weight requested (frozen embeddings); the others stay NULL. */
START_TEST(test_only_grad_weight)
{
    ce_spec s = base_spec();
    s.only_grad_weight = 1;
    s.bias = 1;
    s.red = MF_CE_REDUCTION_SUM;
    run_spec(&s, 800, NULL);
}
END_TEST

/* The loss is not trivially small or constant: it tracks the reference, and a
 * different seed gives a different value (guards against a constant output). */
START_TEST(test_loss_is_informative)
{
    ce_spec s = base_spec();
    ce_outputs a, b;
    run_spec(&s, 900, &a);
    run_spec(&s, 901, &b);
    ck_assert(a.loss[0] > 1.0f && b.loss[0] > 1.0f);
    ck_assert(a.loss[0] != b.loss[0]);
    free_outputs(&a);
    free_outputs(&b);
}
END_TEST

/* grad_loss = NULL means an upstream gradient of 1 (per row for 'none'). */
START_TEST(test_null_upstream)
{
    ce_spec s = base_spec();
    s.null_upstream = 1;
    s.red = (mf_ce_reduction)_i;
    s.bias = 1;
    run_spec(&s, 1000 + (uint64_t)_i, NULL);
}
END_TEST

/* The document's vocabulary, V = 151,936 (a few rows, small D): every row
 * kernel loop runs ~594 strides per thread, the fp32 softmax sums 151,936
 * terms, and grad_W accumulates over three chunks (12 = 5 + 5 + 2). */
START_TEST(test_document_vocabulary)
{
    ce_spec s = base_spec();
    s.n = 12;
    s.d = 8;
    s.v = 151936;
    s.chunk = 5;
    s.shift = 1;
    s.seq_len = 6;
    s.dtype = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    run_spec(&s, 1100 + (uint64_t)_i, NULL);
}
END_TEST

/* Odd N, D and V: a ragged 64-row block (67 = 64 + 3: two CTAs of the fused
 * variant, grad_W accumulated by both), D = 37 and V = 131 not multiples of the
 * 32 / 64 / 16 tile edges; every option on, f32 and bf16. */
START_TEST(test_odd_shapes)
{
    ce_spec s = base_spec();
    s.n = 67;
    s.d = 37;
    s.v = 131;
    s.chunk = 20;
    s.bias = 1;
    s.dtype = (_i & 1) ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    s.red = (mf_ce_reduction)(_i / 2);
    s.eps = 0.05f;
    s.z = 1e-3f;
    s.cap = 5.0f;
    run_spec(&s, 1200 + (uint64_t)_i, NULL);
}
END_TEST

/* Fused only: several row blocks and vocabulary strips with ragged edges. bf16
 * runs 128-row blocks and 512-column strips of 128-column tiles: N = 133 is two
 * CTAs (the second with 5 rows; grad_W and grad_bias get atomics from both),
 * V = 645 is a full strip plus a strip of two tiles (the last with 5 columns),
 * D = 40 takes cp.async with a ragged last 32-wide slice. f32 (64-row blocks):
 * three CTAs. With label smoothing and bias so every column's gradient counts. */
START_TEST(test_fused_blocks_and_strips)
{
    ce_spec s = base_spec();
    s.n = 133;
    s.d = 40;
    s.v = 645;
    s.chunk = 50;
    s.bias = 1;
    s.eps = 0.1f;
    s.dtype = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    run_spec(&s, 1400 + (uint64_t)_i, NULL);
}
END_TEST

/* Gradient filtering (fused only; off by default): with f = 0.05, tiles of
 * |dL/dz| < f are skipped. The result moves by at most the header's bound
 * (f V max|W| for grad_hidden, f N max|hidden| for grad_W, f N for grad_bias)
 * from the unfiltered call, and does move (tiles were skipped); the loss is
 * unchanged. */
START_TEST(test_grad_filter)
{
    mf_context *ctx = mf_test_ctx();
    const size_t n = 24, d = 16, v = 1000;
    const float f = 5e-2f;
    const mf_dtype dt = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const size_t es = mf_dtype_size(dt);
    void *h = mf_test_make_input(dt, n * d, 1300, -1.0f, 1.0f);
    void *w = mf_test_make_input(dt, v * d, 1301, -0.5f, 0.5f);
    void *b = mf_test_make_input(dt, v, 1302, -1.0f, 1.0f);
    int64_t lab[24];
    for (size_t i = 0; i < n; ++i)
        lab[i] = i % 5 == 2 ? MF_CE_DEFAULT_IGNORE_INDEX : (int64_t)((i * 37) % 200);
    void *dh = mf_test_dev_upload(ctx, h, n * d * es), *dw = mf_test_dev_upload(ctx, w, v * d * es);
    void *db = mf_test_dev_upload(ctx, b, v * es);
    int64_t *dlab = mf_test_dev_upload(ctx, lab, sizeof lab);
    float *out[2][4];
    for (int run = 0; run < 2; ++run) {
        mf_cross_entropy_options o;
        mf_cross_entropy_options_init(&o);
        o.variant = MF_CE_VARIANT_FUSED;
        o.reduction = MF_CE_REDUCTION_SUM;
        o.grad_filter = run ? f : 0.0f;
        float *d_loss = mf_test_dev_nan(ctx, 1), *d_gh = mf_test_dev_nan(ctx, n * d),
              *d_gw = mf_test_dev_nan(ctx, v * d), *d_gb = mf_test_dev_nan(ctx, v);
        MF_ASSERT_OK(mf_cross_entropy_forward_backward(ctx, (int64_t)n, (int64_t)d, (int64_t)v, dt, dh, dw,
                                                       db, dlab, &o, NULL, d_loss, NULL, d_gh, d_gw, d_gb));
        out[run][0] = download(ctx, d_loss, 1);
        out[run][1] = download(ctx, d_gh, n * d);
        out[run][2] = download(ctx, d_gw, v * d);
        out[run][3] = download(ctx, d_gb, v);
        void *bufs[] = { d_loss, d_gh, d_gw, d_gb };
        for (int k = 0; k < 4; ++k) mf_buffer_free(ctx, bufs[k]);
    }
    ck_assert(out[0][0][0] == out[1][0][0]);
    const double bound[4] = { 0.0, (double)f * (double)v * 0.5, (double)f * (double)n * 1.0,
                              (double)f * (double)n };
    const size_t len[4] = { 1, n * d, v * d, v };
    double moved = 0.0;
    for (int k = 1; k < 4; ++k) {
        for (size_t e = 0; e < len[k]; ++e) {
            const double diff = fabs((double)out[1][k][e] - (double)out[0][k][e]);
            ck_assert_msg(diff <= bound[k] * 1.001, "output %d element %zu moved %g > bound %g", k, e, diff,
                          bound[k]);
            if (diff > moved) moved = diff;
        }
    }
    ck_assert_msg(moved > 0.0, "grad_filter = %g skipped no tile", (double)f);
    for (int run = 0; run < 2; ++run)
        for (int k = 0; k < 4; ++k) free(out[run][k]);
    void *bufs[] = { dh, dw, db, dlab };
    for (int k = 0; k < 4; ++k) mf_buffer_free(ctx, bufs[k]);
    free(h);
    free(w);
    free(b);
}
END_TEST

static Suite *cross_entropy_equiv_suite(void)
{
    Suite *s = suite_create("cross_entropy_equiv");
    TCase *tc = tcase_create("chunked");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_dtype_reduction_shift, 0, 12);
    tcase_add_loop_test(tc, test_options, 0, 8);
    tcase_add_loop_test(tc, test_ragged_last_chunk, 0, 2);
    tcase_add_loop_test(tc, test_chunk_of_one_row, 0, 2);
    tcase_add_loop_test(tc, test_n_smaller_than_chunk, 0, 2);
    tcase_add_loop_test(tc, test_all_ignored, 0, 2);
    tcase_add_loop_test(tc, test_nan_in_hidden, 0, 2);
    tcase_add_test(tc, test_only_grad_weight);
    tcase_add_test(tc, test_loss_is_informative);
    tcase_add_loop_test(tc, test_null_upstream, 0, 3);
    tcase_add_loop_test(tc, test_document_vocabulary, 0, 2);
    tcase_add_loop_test(tc, test_odd_shapes, 0, 6);
    suite_add_tcase(s, tc);

    /* The same cases on the fused (Cut Cross-Entropy class) variant. */
    TCase *fu = tcase_create("fused");
    tcase_add_checked_fixture(fu, fused_setup, mf_test_teardown);
    tcase_add_loop_test(fu, test_dtype_reduction_shift, 0, 12);
    tcase_add_loop_test(fu, test_options, 0, 8);
    tcase_add_loop_test(fu, test_ragged_last_chunk, 0, 2);
    tcase_add_loop_test(fu, test_chunk_of_one_row, 0, 2);
    tcase_add_loop_test(fu, test_n_smaller_than_chunk, 0, 2);
    tcase_add_loop_test(fu, test_all_ignored, 0, 2);
    tcase_add_loop_test(fu, test_nan_in_hidden, 0, 2);
    tcase_add_test(fu, test_only_grad_weight);
    tcase_add_test(fu, test_loss_is_informative);
    tcase_add_loop_test(fu, test_null_upstream, 0, 3);
    tcase_add_loop_test(fu, test_odd_shapes, 0, 6);
    tcase_add_loop_test(fu, test_grad_filter, 0, 2);
    tcase_add_loop_test(fu, test_fused_blocks_and_strips, 0, 2);
    suite_add_tcase(s, fu);

    /* The fused variant at the document's vocabulary: its own test case (and
     * ctest registrations, tests/cross_entropy.cmake) because in host mode it
     * costs more than the rest of the fused case together (1187 CTAs of 256
     * emulated threads per pass). */
    TCase *fv = tcase_create("fused_vocab");
    tcase_add_checked_fixture(fv, fused_setup, mf_test_teardown);
    tcase_add_loop_test(fv, test_document_vocabulary, 0, 2);
    suite_add_tcase(s, fv);
    return s;
}

int main(void) { return mf_test_run(cross_entropy_equiv_suite()); }
