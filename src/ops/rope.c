/* Public RoPE entry points (include/memfix/rope.h): argument validation, the
 * position check, dispatch to the host-mode or CUDA build of
 * optimized/rope.cu, the device cos/sin cache object, the memory formulas and
 * the registry entry mf_op_rope (seed document 000, bug #2). */
#include "memfix/rope.h"

#include "rope.cuh"
#include "memfix/check.h"
#include "memfix/plan.h"
#include "memfix/registry.h"
#include "mf_deferred.h"
#include "mf_internal.h"
#include "op_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernels' entries: optimized/rope.cuh. */

#define ROPE_ERR(status, ...) return mf_set_error((status), func, __FILE__, __LINE__, __VA_ARGS__)

/* ---- memory formulas ---------------------------------------------------------- */
size_t mf_rope_fused_scratch_ceiling(int64_t batch, int64_t seq_len, int64_t heads_q, int64_t heads_k,
                                     int64_t head_dim)
{
    if (batch <= 0 || seq_len <= 0 || heads_q <= 0 || heads_k <= 0 || head_dim <= 0) return SIZE_MAX;
    return MF_ROPE_ID_CHECK_BYTES; /* angles on the fly; the id check's device word */
}

size_t mf_rope_cache_bytes(int64_t capacity, int64_t rotary_dim)
{
    if (capacity <= 0 || rotary_dim <= 0 || (rotary_dim % 2) != 0) return SIZE_MAX;
    size_t elems, bytes;
    /* cos and sin: capacity x rd/2 floats each = capacity x rd floats */
    if (!mf_size_mul((size_t)capacity, (size_t)rotary_dim, &elems) ||
        !mf_size_mul(elems, sizeof(float), &bytes))
        return SIZE_MAX;
    return bytes;
}

int64_t mf_rope_cache_grown_capacity(int64_t capacity, int64_t needed)
{
    if (capacity <= 0 || needed <= 0) return -1;
    if (needed <= capacity) return capacity;
    if (capacity > INT64_MAX / 2) return -1;
    return needed > 2 * capacity ? needed : 2 * capacity;
}

size_t mf_rope_cache_scratch_ceiling(int64_t initial_capacity, int64_t table_len, int64_t rotary_dim)
{
    const int64_t cap = mf_rope_cache_grown_capacity(initial_capacity, table_len);
    if (cap <= 0) return SIZE_MAX;
    const size_t table = mf_rope_cache_bytes(cap, rotary_dim);
    if (table > SIZE_MAX - 1 - MF_ROPE_ID_CHECK_BYTES) return SIZE_MAX;
    return table + MF_ROPE_ID_CHECK_BYTES; /* the table, plus the id check's word during apply */
}

static mf_status check_backend(const char *func, mf_context *ctx)
{
    const mf_backend b = mf_context_backend(ctx);
    if (b == MF_BACKEND_HOST) return MF_OK;
#ifdef MF_HAVE_CUDA
    if (b == MF_BACKEND_CUDA) return MF_OK;
#endif
    ROPE_ERR(MF_ERR_BACKEND_UNAVAILABLE, "backend %s is not built into this library",
             mf_backend_name(b) ? mf_backend_name(b) : "?");
}

/* Extents of q, k, q_out, k_out and the ids before any launch or position check
 * (after mf_rope_validate: the products fit). */
static mf_status check_extents(const char *func, mf_context *ctx, const mf_rope_config *cfg,
                               const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    const size_t tok = (size_t)t->batch * (size_t)t->seq_len;
    const size_t row = (size_t)cfg->head_dim * mf_dtype_size(t->dtype);
    MF_TRY(mf_check_device_extent(func, ctx, t->q, tok * (size_t)t->heads_q * row, "t->q"));
    MF_TRY(mf_check_device_extent(func, ctx, t->k, tok * (size_t)t->heads_k * row, "t->k"));
    MF_TRY(mf_check_device_extent(func, ctx, t->q_out, tok * (size_t)t->heads_q * row, "t->q_out"));
    MF_TRY(mf_check_device_extent(func, ctx, t->k_out, tok * (size_t)t->heads_k * row, "t->k_out"));
    if (pos->kind == MF_ROPE_POS_OFFSET) return MF_OK;
    const size_t ids = pos->batch_stride == 0
                           ? (size_t)t->seq_len
                           : (size_t)(t->batch - 1) * (size_t)pos->batch_stride + (size_t)t->seq_len;
    return mf_check_device_extent(func, ctx, pos->ids, ids * (pos->kind == MF_ROPE_POS_I32 ? 4 : 8),
                                  "pos->ids");
}

/* A deferred check of position ids (mf_deferred.h): row = token
 * b*seq_len + t, the id at ids[b*batch_stride + t], int32 when id_bytes == 4
 * or int64 when 8. */
typedef struct rope_ids_info {
    const void *ids; /* device */
    int id_bytes;
    int64_t seq_len, batch_stride, max_position;
} rope_ids_info;

/* The report of a bad id: MF_ERR_OUT_OF_RANGE naming the id, its index in ids
 * and its token. */
static mf_status rope_bad_id_report(mf_context *ctx, const char *func, int64_t bad_row, const void *info)
{
    const rope_ids_info *bad = (const rope_ids_info *)info;
    const size_t b = (size_t)(bad_row / bad->seq_len), t = (size_t)(bad_row % bad->seq_len);
    const size_t e = b * (size_t)bad->batch_stride + t;
    int64_t id = 0;
    if (bad->id_bytes == 4) {
        int32_t id32 = 0;
        MF_TRY(mf_context_read_device(ctx, &id32, (const int32_t *)bad->ids + e, sizeof id32));
        id = id32;
    } else {
        MF_TRY(mf_context_read_device(ctx, &id, (const int64_t *)bad->ids + e, sizeof id));
    }
    return mf_set_error(
        MF_ERR_OUT_OF_RANGE, func, __FILE__, __LINE__,
        "position id %lld (ids[%zu], token b=%zu t=%zu) is outside [0, %lld]; the outputs are "
        "unspecified (found on the device, reported at the next synchronization of the context)",
        (long long)id, e, b, t, (long long)bad->max_position);
}

/* The range check of explicit ids without waiting: a device word of scratch
 * (MF_ROPE_ID_CHECK_BYTES, from the context's cache in steady state), a
 * kernel that stores the first bad token in it, and a deferred check of the
 * context that reports it at the next synchronization. *word is NULL when
 * there is nothing to check (offset positions, MF_ROPE_NO_POSITION_CHECK);
 * the caller frees it after its launch (stream-ordered reuse). */
static mf_status check_ids(const char *func, mf_context *ctx, const mf_rope_tensors *t,
                           const mf_rope_positions *pos, int64_t **word)
{
    *word = NULL;
    if (pos->kind == MF_ROPE_POS_OFFSET || (pos->flags & MF_ROPE_NO_POSITION_CHECK)) return MF_OK;
    void *p = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_DEVICE, MF_ROPE_ID_CHECK_BYTES, &p));
    mf_status st;
#ifdef MF_HAVE_CUDA
    if (mf_context_backend(ctx) == MF_BACKEND_CUDA)
        st = mf_cuda_rope_check_ids(ctx, pos, t->batch, t->seq_len, (int64_t *)p);
    else
#endif
        st = mf_host_rope_check_ids(ctx, pos, t->batch, t->seq_len, (int64_t *)p);
    if (st == MF_OK) {
        const rope_ids_info info = { pos->ids, pos->kind == MF_ROPE_POS_I32 ? 4 : 8, t->seq_len,
                                     pos->batch_stride, MF_ROPE_MAX_POSITION };
        st = mf_context_defer_check(ctx, func, (const int64_t *)p, t->batch * t->seq_len, rope_bad_id_report,
                                    &info, sizeof info);
    }
    if (st != MF_OK) {
        mf_scratch_free(ctx, MF_MEM_DEVICE, p);
        return st;
    }
    *word = (int64_t *)p;
    return MF_OK;
}

/* ---- fused ---------------------------------------------------------------------- */
mf_status mf_rope_fused(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                        const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    const char *func = __func__;
    if (ctx == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "ctx is NULL");
    MF_TRY(mf_rope_validate(func, cfg, dir, t, pos));
    MF_TRY(check_backend(func, ctx));
    MF_TRY(check_extents(func, ctx, cfg, t, pos));
    int64_t *word = NULL;
    MF_TRY(check_ids(func, ctx, t, pos, &word));
    mf_status st;
#ifdef MF_HAVE_CUDA
    if (mf_context_backend(ctx) == MF_BACKEND_CUDA)
        st = mf_cuda_rope_fused(ctx, cfg, dir, t, pos);
    else
#endif
        st = mf_host_rope_fused(ctx, cfg, dir, t, pos);
    mf_scratch_free(ctx, MF_MEM_DEVICE, word);
    return st;
}

/* ---- cache ---------------------------------------------------------------------- */
struct mf_rope_cache {
    mf_context *ctx;
    mf_rope_config cfg;
    int64_t capacity;
    float *table; /* device: cos[capacity][rd/2] then sin[capacity][rd/2] */
};

/* Allocates and builds a table of 'capacity' positions; on failure the cache
 * keeps no table (the caller restores or reports). */
static mf_status cache_build(const char *func, mf_rope_cache *c, int64_t capacity)
{
    const size_t bytes = mf_rope_cache_bytes(capacity, c->cfg.rotary_dim);
    if (bytes == SIZE_MAX)
        ROPE_ERR(MF_ERR_OVERFLOW, "cache of %lld positions x rotary_dim %lld overflows size_t",
                 (long long)capacity, (long long)c->cfg.rotary_dim);
    void *p = NULL;
    MF_TRY(mf_scratch_alloc(c->ctx, MF_MEM_DEVICE, bytes, &p));
    mf_status st;
#ifdef MF_HAVE_CUDA
    if (mf_context_backend(c->ctx) == MF_BACKEND_CUDA)
        st = mf_cuda_rope_cache_build(c->ctx, (float *)p, capacity, &c->cfg);
    else
#endif
        st = mf_host_rope_cache_build(c->ctx, (float *)p, capacity, &c->cfg);
    if (st != MF_OK) {
        mf_scratch_free(c->ctx, MF_MEM_DEVICE, p);
        return st;
    }
    c->table = (float *)p;
    c->capacity = capacity;
    return MF_OK;
}

/* Grows to cover positions < needed: the old table is freed first (its
 * contents are regenerated on the device, not copied), so the peak is the new
 * table alone. No wait: the freed block goes back to the context's scratch
 * cache and is reused in stream order, after the kernels that read it. If the
 * new one cannot be built, the old capacity is rebuilt. */
static mf_status cache_grow(const char *func, mf_rope_cache *c, int64_t needed)
{
    if (needed <= c->capacity) return MF_OK;
    const int64_t old_cap = c->capacity;
    const int64_t new_cap = mf_rope_cache_grown_capacity(old_cap, needed);
    if (new_cap <= 0 || mf_rope_cache_bytes(new_cap, c->cfg.rotary_dim) == SIZE_MAX)
        ROPE_ERR(MF_ERR_OVERFLOW, "growing the cache to %lld positions overflows", (long long)needed);
    mf_scratch_free(c->ctx, MF_MEM_DEVICE, c->table);
    c->table = NULL;
    c->capacity = 0;
    mf_status st = cache_build(func, c, new_cap);
    if (st != MF_OK) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", mf_last_error());
        if (cache_build(func, c, old_cap) != MF_OK) {
            c->table = NULL;
            c->capacity = 0;
        }
        return mf_set_error(st, func, __FILE__, __LINE__, "growing the cache to %lld positions: %s",
                            (long long)new_cap, msg);
    }
    return MF_OK;
}

mf_status mf_rope_cache_create(mf_context *ctx, const mf_rope_config *cfg, int64_t capacity,
                               mf_rope_cache **out)
{
    const char *func = __func__;
    if (out == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "out is NULL");
    *out = NULL;
    if (ctx == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "ctx is NULL");
    MF_TRY(mf_rope_validate_config(func, cfg));
    if (capacity <= 0) ROPE_ERR(MF_ERR_INVALID_SIZE, "capacity must be > 0 (got %lld)", (long long)capacity);
    if (capacity - 1 > MF_ROPE_MAX_POSITION)
        ROPE_ERR(MF_ERR_OUT_OF_RANGE, "capacity %lld exceeds MF_ROPE_MAX_POSITION + 1", (long long)capacity);
    MF_TRY(check_backend(func, ctx));
    mf_rope_cache *c = (mf_rope_cache *)calloc(1, sizeof(*c));
    if (c == NULL) ROPE_ERR(MF_ERR_OUT_OF_MEMORY, "cannot allocate the cache object");
    c->ctx = ctx;
    c->cfg = *cfg;
    mf_status st = cache_build(func, c, capacity);
    if (st != MF_OK) {
        free(c);
        return st;
    }
    *out = c;
    return MF_OK;
}

void mf_rope_cache_destroy(mf_rope_cache *cache)
{
    if (cache == NULL) return;
    /* stream-ordered: the block is reused only after the kernels that read it */
    if (cache->table != NULL) mf_scratch_free(cache->ctx, MF_MEM_DEVICE, cache->table);
    free(cache);
}

mf_status mf_rope_cache_reserve(mf_rope_cache *cache, int64_t n_positions)
{
    const char *func = __func__;
    if (cache == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "cache is NULL");
    if (n_positions <= 0)
        ROPE_ERR(MF_ERR_INVALID_SIZE, "n_positions must be > 0 (got %lld)", (long long)n_positions);
    if (n_positions - 1 > MF_ROPE_MAX_POSITION)
        ROPE_ERR(MF_ERR_OUT_OF_RANGE, "n_positions %lld exceeds MF_ROPE_MAX_POSITION + 1",
                 (long long)n_positions);
    if (cache->table == NULL) ROPE_ERR(MF_ERR_OUT_OF_MEMORY, "the cache lost its table in a failed growth");
    return cache_grow(func, cache, n_positions);
}

int64_t mf_rope_cache_capacity(const mf_rope_cache *cache) { return cache == NULL ? -1 : cache->capacity; }

size_t mf_rope_cache_size_bytes(const mf_rope_cache *cache)
{
    if (cache == NULL || cache->table == NULL) return 0;
    return mf_rope_cache_bytes(cache->capacity, cache->cfg.rotary_dim);
}

const mf_rope_config *mf_rope_cache_config(const mf_rope_cache *cache)
{
    return cache == NULL ? NULL : &cache->cfg;
}

mf_status mf_rope_cache_apply(mf_rope_cache *cache, mf_rope_direction dir, const mf_rope_tensors *t,
                              const mf_rope_positions *pos)
{
    const char *func = __func__;
    if (cache == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "cache is NULL");
    MF_TRY(mf_rope_validate(func, &cache->cfg, dir, t, pos));
    if (cache->table == NULL) ROPE_ERR(MF_ERR_OUT_OF_MEMORY, "the cache lost its table in a failed growth");
    MF_TRY(check_extents(func, cache->ctx, &cache->cfg, t, pos));
    /* offset positions: the largest, offset + T - 1, is known on the host; the
     * seed's path, now a device rebuild. Explicit ids are never read back: an
     * id beyond the table gets its angle on the fly (reserve covers them). */
    if (pos->kind == MF_ROPE_POS_OFFSET) MF_TRY(cache_grow(func, cache, pos->offset + t->seq_len));
    int64_t *word = NULL;
    MF_TRY(check_ids(func, cache->ctx, t, pos, &word));
    mf_status st;
#ifdef MF_HAVE_CUDA
    if (mf_context_backend(cache->ctx) == MF_BACKEND_CUDA)
        st = mf_cuda_rope_cache_apply(cache->ctx, cache->table, cache->capacity, &cache->cfg, dir, t, pos);
    else
#endif
        st = mf_host_rope_cache_apply(cache->ctx, cache->table, cache->capacity, &cache->cfg, dir, t, pos);
    mf_scratch_free(cache->ctx, MF_MEM_DEVICE, word);
    return st;
}

/* ---- registry entry (memfix report) ------------------------------------------ */
static const char *const rope_variant_names[2] = { "fused", "cache" };

/* Position modes of a case (rope_case.offset < 0). */
enum { ROPE_IDS_TABLE = -1, ROPE_IDS_GEN = -2, ROPE_IDS_ARANGE = -3 };

typedef struct rope_case {
    int64_t B, T, Hq, Hk, Dh, rd;
    double base, scaling;
    mf_rope_layout layout;
    mf_rope_direction dir;
    mf_dtype dtype;
    /* >= 0: offset positions; ROPE_IDS_TABLE: the n_ids ids below ((B-1)*batch_stride + T, int64 values
     * narrowed for MF_ROPE_POS_I32; padding between rows is never read); ROPE_IDS_GEN: generated ids
     * drawn in [0, id_max) from ids_seed; ROPE_IDS_ARANGE: ids 0..T-1 shared by the batches */
    int64_t offset;
    const int64_t *ids;
    int64_t n_ids;
    mf_rope_pos_kind kind;
    int64_t batch_stride, id_max;
    uint64_t ids_seed;
    /* options of the equivalence suite's cases (0 in the report's and verify's) */
    int in_place;       /* q_out = q, k_out = k (the output buffer holds the input before the call) */
    unsigned pos_flags; /* mf_rope_positions.flags (MF_ROPE_NO_POSITION_CHECK) */
    int64_t cache0;     /* the cache variant's initial capacity; 0: max(L/4, 1) */
    int64_t reserve;    /* the cache variant: mf_rope_cache_reserve(reserve) before apply; 0: none */
    int only;           /* 0: every variant; 1 + v: variant v only (rope_case_applies) */
} rope_case;

/* The shape and the options every case gives. */
#define ROPE_CASE(B_, T_, Hq_, Hk_, Dh_, rd_, base_, scaling_, layout_, dir_, dtype_)                        \
    .B = (B_), .T = (T_), .Hq = (Hq_), .Hk = (Hk_), .Dh = (Dh_), .rd = (rd_), .base = (base_),               \
    .scaling = (scaling_), .layout = MF_ROPE_##layout_, .dir = MF_ROPE_##dir_, .dtype = MF_DTYPE_##dtype_
/* The equivalence suite's base shape: GQA 4/2 heads, B = 2, T = 7 (odd), Dh = rd = 16. */
#define ROPE_EQ(layout_, dir_) ROPE_CASE(2, 7, 4, 2, 16, 16, 1e4, 1.0, layout_, dir_, F32)

static const int64_t rope_ids_report[] = { 131071, 0, 65536, 131000 };
/* Two rows of 7 ids with a batch stride of 9 (padding -7, never read), and one row shared by the batches. */
static const int64_t rope_ids_rows[] = { 5, 0, 33, 33, 2, 17, 9, -7, -7, 1, 2, 3, 100, 0, 64, 8, -7, -7 };
static const int64_t rope_ids_beyond[] = { 3, 500, 1, 77, 2, 4096, 0 };
static const int64_t rope_ids_256[] = { 256, 257 };

/* The report's cases (the first ROPE_N_REPORT_CASES), small shapes fast in
 * host mode: GQA with the rotate_half layout; GPT-J interleaved partial rotary
 * in bf16, backward, decoding at an offset; and explicit ids up to the seed's
 * 131,071 (131072-token context). The cache variant starts at a quarter of the
 * table each case needs, so every case also regrows the table on the device
 * (the seed's crash path). Then the equivalence suite's
 * (tests/equivalence/test_rope_equiv.c runs every case) and the memory
 * suite's (tests/memory/test_rope_memory.c). */
static const rope_case rope_cases[] = {
    { ROPE_CASE(2, 16, 4, 2, 32, 32, 1e4, 1.0, HALF, FORWARD, F32), .offset = 0 },
    { ROPE_CASE(1, 8, 2, 1, 24, 16, 1e6, 1.0, INTERLEAVED, BACKWARD, BF16), .offset = 5 },
    { ROPE_CASE(2, 4, 2, 1, 8, 8, 1e6, 1.0, HALF, FORWARD, F32), .offset = ROPE_IDS_TABLE,
      .ids = rope_ids_report, .n_ids = 4, .kind = MF_ROPE_POS_I64 },
    { ROPE_CASE(1, 12, 3, 3, 16, 12, 1e4, 4.0, HALF, BACKWARD, BF16), .offset = 100 },
    /* 4, 5: rotate_half GQA forward and backward; 6, 7: interleaved (Hq 3, Hk 1) */
    { ROPE_EQ(HALF, FORWARD), .cache0 = 4 },
    { ROPE_EQ(HALF, BACKWARD), .cache0 = 4 },
    { ROPE_CASE(2, 7, 3, 1, 16, 16, 1e4, 1.0, INTERLEAVED, FORWARD, F32), .cache0 = 4 },
    { ROPE_CASE(2, 7, 3, 1, 16, 16, 1e4, 1.0, INTERLEAVED, BACKWARD, F32), .cache0 = 4 },
    /* 8, 9: MHA (Hq == Hk) and MQA (Hk == 1) */
    { ROPE_CASE(2, 7, 3, 3, 16, 16, 1e4, 1.0, HALF, FORWARD, F32), .cache0 = 4 },
    { ROPE_CASE(2, 7, 8, 1, 16, 16, 1e4, 1.0, HALF, FORWARD, F32), .cache0 = 4 },
    /* 10-13: rotary_dim < head_dim with an odd Dh, the tail passed through: out
     * of place forward (copied), in place backward (left alone), both layouts */
    { ROPE_CASE(2, 7, 4, 2, 13, 6, 1e4, 1.0, HALF, FORWARD, F32), .cache0 = 4 },
    { ROPE_CASE(2, 7, 4, 2, 13, 6, 1e4, 1.0, HALF, BACKWARD, F32), .cache0 = 4, .in_place = 1 },
    { ROPE_CASE(2, 7, 4, 2, 13, 6, 1e4, 1.0, INTERLEAVED, FORWARD, F32), .cache0 = 4 },
    { ROPE_CASE(2, 7, 4, 2, 13, 6, 1e4, 1.0, INTERLEAVED, BACKWARD, F32), .cache0 = 4, .in_place = 1 },
    /* 14, 15: in place */
    { ROPE_EQ(HALF, FORWARD), .cache0 = 4, .in_place = 1 },
    { ROPE_EQ(INTERLEAVED, BACKWARD), .cache0 = 4, .in_place = 1 },
    /* 16-18: non-contiguous explicit ids: int32 and int64 with one row per
     * batch (padded stride 9), int64 with one row shared by the batches
     * (stride 0, HF's (1, T)); ids beyond the cache's 4 positions */
    { ROPE_EQ(HALF, FORWARD), .offset = ROPE_IDS_TABLE, .ids = rope_ids_rows, .n_ids = 18,
      .kind = MF_ROPE_POS_I32, .batch_stride = 9, .cache0 = 4 },
    { ROPE_EQ(HALF, BACKWARD), .offset = ROPE_IDS_TABLE, .ids = rope_ids_rows, .n_ids = 18,
      .kind = MF_ROPE_POS_I64, .batch_stride = 9, .cache0 = 4 },
    { ROPE_EQ(INTERLEAVED, FORWARD), .offset = ROPE_IDS_TABLE, .ids = rope_ids_rows, .n_ids = 7,
      .kind = MF_ROPE_POS_I64, .cache0 = 4 },
    /* 19, 20: decoding after a KV cache: one token at offset 37, a chunk of 5 at 250 */
    { ROPE_CASE(2, 1, 4, 2, 16, 16, 1e4, 1.0, HALF, FORWARD, F32), .offset = 37, .cache0 = 4 },
    { ROPE_CASE(2, 5, 4, 2, 16, 16, 1e4, 1.0, HALF, BACKWARD, F32), .offset = 250, .cache0 = 4 },
    /* 21-23: bases and position scaling */
    { ROPE_CASE(2, 7, 4, 2, 16, 16, 1e6, 1.0, HALF, FORWARD, F32), .offset = 3, .cache0 = 4 },
    { ROPE_CASE(2, 7, 4, 2, 16, 16, 1e6, 4.0, INTERLEAVED, FORWARD, F32), .offset = 3, .cache0 = 4 },
    { ROPE_CASE(2, 7, 4, 2, 16, 16, 1e4, 2.5, INTERLEAVED, BACKWARD, F32), .offset = 3, .cache0 = 4 },
    /* 24-27: bf16 storage, partial rotary (the bf16 tail passes through
     * bit-exactly), both layouts, forward out of place, backward in place */
    { ROPE_CASE(2, 7, 4, 2, 20, 12, 1e4, 1.0, HALF, FORWARD, BF16), .offset = 11, .cache0 = 4 },
    { ROPE_CASE(2, 7, 4, 2, 20, 12, 1e4, 1.0, HALF, BACKWARD, BF16), .offset = 11, .cache0 = 4,
      .in_place = 1 },
    { ROPE_CASE(2, 7, 4, 2, 20, 12, 1e4, 1.0, INTERLEAVED, FORWARD, BF16), .offset = 11, .cache0 = 4 },
    { ROPE_CASE(2, 7, 4, 2, 20, 12, 1e4, 1.0, INTERLEAVED, BACKWARD, BF16), .offset = 11, .cache0 = 4,
      .in_place = 1 },
    /* 28-31: long context, positions 131064..131071 (the seed's 131072-token
     * context) and 1048568..1048575 within the fp32 row, also bf16 storage;
     * reference tables of 64 MiB and 128 MiB of host doubles */
    { ROPE_CASE(1, 8, 2, 1, 32, 32, 1e6, 1.0, HALF, FORWARD, F32), .offset = 131064, .cache0 = 1024 },
    { ROPE_CASE(1, 8, 2, 1, 32, 32, 1e6, 1.0, INTERLEAVED, BACKWARD, BF16), .offset = 131064,
      .cache0 = 1024 },
    { ROPE_CASE(1, 8, 2, 1, 8, 8, 1e4, 1.0, HALF, FORWARD, F32), .offset = 1048568, .cache0 = 1024 },
    { ROPE_CASE(1, 8, 2, 1, 8, 8, 1e4, 1.0, INTERLEAVED, BACKWARD, BF16), .offset = 1048568, .cache0 = 1024 },
    /* 32, 33: bf16 q/k at positions 256 and 257 (which bf16 positions would
     * merge), int32 and int64 ids */
    { ROPE_CASE(1, 2, 1, 1, 8, 8, 1e4, 1.0, HALF, FORWARD, BF16), .offset = ROPE_IDS_TABLE,
      .ids = rope_ids_256, .n_ids = 2, .kind = MF_ROPE_POS_I32, .cache0 = 4 },
    { ROPE_CASE(1, 2, 1, 1, 8, 8, 1e4, 1.0, HALF, FORWARD, BF16), .offset = ROPE_IDS_TABLE,
      .ids = rope_ids_256, .n_ids = 2, .kind = MF_ROPE_POS_I64, .cache0 = 4 },
    /* 34, 35 (cache only): the seed's regression (bug #2): a table created for
     * 8 positions outgrown by a 40-token sequence (the old code crashed: a
     * host arange met a device inv_freq); a decode step past a 40-position
     * table, in place (capacity 40 -> max(101, 80) = 101) */
    { ROPE_CASE(1, 40, 2, 1, 8, 8, 1e4, 1.0, HALF, FORWARD, F32), .cache0 = 8, .only = 2 },
    { ROPE_CASE(1, 1, 2, 1, 8, 8, 1e4, 1.0, HALF, FORWARD, F32), .offset = 100, .cache0 = 40, .in_place = 1,
      .only = 2 },
    /* 36 (cache only): a table reserved ahead (2 -> 50 positions) serving positions 47..49 */
    { ROPE_CASE(1, 3, 1, 1, 8, 8, 1e4, 1.0, HALF, FORWARD, F32), .offset = 47, .cache0 = 2, .reserve = 50,
      .only = 2 },
    /* 37 (cache only): unchecked explicit ids (MF_ROPE_NO_POSITION_CHECK) beyond
     * an 8-position table: on-the-fly angles, no growth, no read past the table */
    { ROPE_EQ(HALF, FORWARD), .offset = ROPE_IDS_TABLE, .ids = rope_ids_beyond, .n_ids = 7,
      .kind = MF_ROPE_POS_I64, .pos_flags = MF_ROPE_NO_POSITION_CHECK, .cache0 = 8, .only = 2 },
    /* 38-41: the memory suite's two sizes, B = 1, T = 48 and 192, Hq 4, Hk 2,
     * Dh = rd = 16: positions 0..T-1 as an offset (the cache grows from T/4)
     * and as explicit int64 ids (the id check's word; the cache holds T) */
    { ROPE_CASE(1, 48, 4, 2, 16, 16, 1e4, 1.0, HALF, FORWARD, F32) },
    { ROPE_CASE(1, 48, 4, 2, 16, 16, 1e4, 1.0, HALF, FORWARD, F32), .offset = ROPE_IDS_ARANGE,
      .kind = MF_ROPE_POS_I64, .cache0 = 48 },
    { ROPE_CASE(1, 192, 4, 2, 16, 16, 1e4, 1.0, HALF, FORWARD, F32) },
    { ROPE_CASE(1, 192, 4, 2, 16, 16, 1e4, 1.0, HALF, FORWARD, F32), .offset = ROPE_IDS_ARANGE,
      .kind = MF_ROPE_POS_I64, .cache0 = 192 },
};
#define ROPE_N_CASES ((int)(sizeof(rope_cases) / sizeof(rope_cases[0])))
/* memfix report's rows and memfix verify's fixed cases: the first 4 (the rest
 * are the test suites'; verify's random cases cover the positions, dtypes,
 * directions and layouts). */
#define ROPE_N_REPORT_CASES 4

static int rope_case_applies(int variant, int case_index)
{
    if (case_index < 0 || case_index >= ROPE_N_CASES) return 0;
    return rope_cases[case_index].only == 0 || rope_cases[case_index].only == variant + 1;
}

/* ---- seeded random cases (memfix verify --seed/--cases/--large) ---------- */
/* Random case i of a seed, k = (i + seed) mod 16: positions cycle over int32
 * ids with a batch_stride > T, int64 ids with a batch_stride > T, an offset,
 * and int32 ids shared by the batches (stride 0) as k mod 4; (dtype,
 * direction) over f32 fwd/bwd, bf16 fwd/bwd as (k / 4 + 3 (k mod 4) + 1) mod 4,
 * so any 4 consecutive cases hold every position kind, every aligned 4 every
 * dtype x direction, and any 16 every position kind x dtype x direction (a
 * kernel wrong only for bf16 with int64 ids, or for the backward with int64
 * ids, fails one of them). Odd T, GQA groups, partial rotary dims,
 * both layouts, B >= 2 for ids, q and k together > 4096 elements. The large
 * case: B*T*Hq*Dh > 2^31. */
static void rope_generate(const mf_case_id *id, rope_case *c)
{
    mf_tb_rng r = mf_tb_case_rng("rope", id);
    const int k16 = (int)(((uint64_t)id->index + id->seed) % 16u), k = k16 % 4,
              dd = (k16 / 4 + 3 * k + 1) % 4;
    static const int64_t heads[] = { 1, 2, 3 }, groups[] = { 1, 2, 4 }, bases[] = { 10000, 500000, 1000000 };
    memset(c, 0, sizeof *c);
    c->dtype = dd >= 2 ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    c->dir = dd % 2 ? MF_ROPE_BACKWARD : MF_ROPE_FORWARD;
    c->layout = mf_tb_rand_chance(&r, 1, 2) ? MF_ROPE_HALF : MF_ROPE_INTERLEAVED;
    c->Hk = mf_tb_rand_pick(&r, heads, 3);
    c->Hq = c->Hk * mf_tb_rand_pick(&r, groups, 3);
    c->Dh = mf_tb_rand_int(&r, 4, 40) * 2;
    c->rd = mf_tb_rand_int(&r, 1, c->Dh / 2) * 2;
    c->base = (double)mf_tb_rand_pick(&r, bases, 3);
    c->scaling = mf_tb_rand_chance(&r, 1, 3) ? 1.0 + (double)mf_tb_rand_int(&r, 1, 7) : 1.0;
    c->B = k == 2 ? mf_tb_rand_int(&r, 1, 3) : mf_tb_rand_int(&r, 2, 3);
    c->T = mf_tb_rand_int(&r, 2, 20) * 2 + 1;
    while (c->B * c->T * (c->Hq + c->Hk) * c->Dh <= 4096) c->T += 8;
    if (id->kind == MF_CASE_LARGE) { /* 2^31 + 2^25 elements of q */
        c->B = 2, c->Hq = 8, c->Hk = 2, c->Dh = 64, c->rd = 64, c->T = 2099200;
    }
    if (k == 2) {
        c->offset = mf_tb_rand_int(&r, 0, 5000);
        return;
    }
    c->offset = -2;
    c->kind = k == 1 ? MF_ROPE_POS_I64 : MF_ROPE_POS_I32;
    c->batch_stride = k == 3 ? 0 : c->T + mf_tb_rand_int(&r, 0, 5);
    c->id_max = mf_tb_rand_chance(&r, 1, 4) ? 131072 : 4096;
    c->ids_seed = mf_tb_rand_u64(&r);
}

static mf_status rope_case_of(const mf_case_id *id, rope_case *c)
{
    if (id->kind == MF_CASE_FIXED) {
        if (id->index < 0 || id->index >= ROPE_N_CASES)
            MF_FAIL(MF_ERR_INVALID_ARGUMENT, "rope: case %d out of range [0, %d)", id->index, ROPE_N_CASES);
        *c = rope_cases[id->index];
    } else {
        rope_generate(id, c);
    }
    return MF_OK;
}

/* The ids of a case's explicit positions: (B-1)*batch_stride + T of them. */
static size_t rope_case_n_ids(const rope_case *c)
{
    return (size_t)(c->batch_stride > 0 ? (c->B - 1) * c->batch_stride : 0) + (size_t)c->T;
}

/* The table length L (largest position + 1) of a fixed case (an upper bound,
 * id_max, for generated ids). */
static int64_t rope_case_len(const rope_case *c)
{
    if (c->offset >= 0) return c->offset + c->T;
    if (c->offset == ROPE_IDS_GEN) return c->id_max;
    if (c->offset == ROPE_IDS_ARANGE) return c->T;
    int64_t m = 0;
    for (int64_t b = 0; b < c->B; ++b)
        for (int64_t t = 0; t < c->T; ++t) {
            const int64_t v = c->ids[b * c->batch_stride + t];
            m = v > m ? v : m;
        }
    return m + 1;
}

/* Explicit ids of a case (NULL for offset positions) in c->kind's width: the
 * table's ids, 0..T-1, or (B-1)*batch_stride + T generated ids; *max_pos the
 * largest. */
static void *rope_case_ids(const rope_case *c, size_t *bytes, int64_t *max_pos)
{
    *bytes = 0;
    if (c->offset >= 0) {
        *max_pos = c->offset + c->T - 1;
        return NULL;
    }
    const size_t n = c->offset == ROPE_IDS_TABLE ? (size_t)c->n_ids : rope_case_n_ids(c);
    const size_t es = c->kind == MF_ROPE_POS_I32 ? 4u : 8u;
    void *p = malloc(n * es);
    if (p == NULL) return NULL;
    mf_tb_rng r = { c->ids_seed };
    for (size_t i = 0; i < n; ++i) {
        const int64_t v = c->offset == ROPE_IDS_TABLE    ? c->ids[i]
                          : c->offset == ROPE_IDS_ARANGE ? (int64_t)i
                                                         : mf_tb_rand_int(&r, 0, c->id_max - 1);
        if (es == 4)
            ((int32_t *)p)[i] = (int32_t)v;
        else
            ((int64_t *)p)[i] = v;
    }
    *max_pos = c->offset == ROPE_IDS_GEN ? 0 : rope_case_len(c) - 1;
    if (c->offset == ROPE_IDS_GEN)
        for (size_t i = 0; i < n; ++i) {
            const int64_t v = es == 4 ? ((int32_t *)p)[i] : ((int64_t *)p)[i];
            *max_pos = v > *max_pos ? v : *max_pos;
        }
    *bytes = n * es;
    return p;
}

/* The case in words; 'cache': the cache variant's options too. */
static void rope_shape(const rope_case *c, int64_t L, int cache, char *buf, size_t cap)
{
    char pos[96], opt[96] = "";
    if (c->offset >= 0)
        snprintf(pos, sizeof pos, "offset=%lld", (long long)c->offset);
    else if (c->offset == ROPE_IDS_GEN)
        snprintf(pos, sizeof pos, "ids=%s batch_stride=%lld ids<%lld",
                 c->kind == MF_ROPE_POS_I32 ? "int32" : "int64", (long long)c->batch_stride,
                 (long long)c->id_max);
    else
        snprintf(pos, sizeof pos, "ids=%s batch_stride=%lld%s",
                 c->kind == MF_ROPE_POS_I32 ? "int32" : "int64", (long long)c->batch_stride,
                 c->offset == ROPE_IDS_ARANGE ? " arange" : "");
    size_t o = 0;
    if (c->pos_flags & MF_ROPE_NO_POSITION_CHECK)
        o += (size_t)snprintf(opt + o, sizeof opt - o, " unchecked");
    if (c->in_place) o += (size_t)snprintf(opt + o, sizeof opt - o, " in_place");
    if (cache && c->cache0 > 0)
        o += (size_t)snprintf(opt + o, sizeof opt - o, " cache0=%lld", (long long)c->cache0);
    if (cache && c->reserve > 0) snprintf(opt + o, sizeof opt - o, " reserve=%lld", (long long)c->reserve);
    const int n = snprintf(
        buf, cap, "B=%lld T=%lld Hq=%lld Hk=%lld Dh=%lld rd=%lld %s %s pos<%lld base=%g scaling=%g %s%s",
        (long long)c->B, (long long)c->T, (long long)c->Hq, (long long)c->Hk, (long long)c->Dh,
        (long long)c->rd, mf_rope_layout_name(c->layout), c->dir == MF_ROPE_FORWARD ? "fwd" : "bwd",
        (long long)L, c->base, c->scaling, pos, opt);
    mf_tb_mark_cut(buf, cap, n);
}

/* memfix verify's fixed cases are the report's. */
static mf_status rope_verify_id_check(const mf_case_id *id)
{
    if (id->kind == MF_CASE_FIXED && (id->index < 0 || id->index >= ROPE_N_REPORT_CASES))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "rope: verify case %d out of range [0, %d)", id->index,
                ROPE_N_REPORT_CASES);
    return MF_OK;
}

static mf_status rope_describe(const mf_case_id *id, char *buf, size_t cap, size_t *bytes)
{
    MF_TRY(rope_verify_id_check(id));
    rope_case c;
    MF_TRY(rope_case_of(id, &c));
    char shape[192];
    const int64_t L = rope_case_len(&c);
    rope_shape(&c, L, 0, shape, sizeof shape);
    snprintf(buf, cap, "%s %s", mf_dtype_name(c.dtype), shape);
    const size_t n = (size_t)(c.B * c.T * (c.Hq + c.Hk) * c.Dh);
    *bytes = n * (3 * 4 + 3 * mf_dtype_size(c.dtype)) + (size_t)L * (size_t)c.rd * 8;
    return MF_OK;
}

/* One case: 'variant' through the public entry points (report, the test
 * suites), or, when 'entry' != NULL, the candidate 'entry' in place of
 * mf_rope_fused (memfix verify) with the fused variant's ceiling. seed_salt
 * != 0 draws other inputs of the same shape. An in-place case uploads the
 * input into the output's (guarded) buffer and rotates it there. */
static mf_status rope_run_case_impl(mf_context *ctx, int variant, mf_rope_candidate_fn entry,
                                    const mf_case_id *id, uint64_t seed_salt, mf_case_result *out)
{
    MF_TRY(mf_tb_case_begin_id(out, "rope", ctx, variant, 2, id, ROPE_N_CASES));
    rope_case cc;
    MF_TRY(rope_case_of(id, &cc));
    const rope_case *c = &cc;
    const int case_index = id->index;
    if (entry != NULL) variant = 0;
    mf_tb_case_labels(out, ctx, entry != NULL ? "candidate" : rope_variant_names[variant], c->dtype);
    int64_t max_pos = 0;
    size_t id_bytes = 0;
    void *ids_host = rope_case_ids(c, &id_bytes, &max_pos);
    if (c->offset < 0 && ids_host == NULL)
        MF_FAIL(MF_ERR_OUT_OF_MEMORY, "rope: host ids of case %d", case_index);
    const int64_t L = max_pos + 1, cap0 = c->cache0 > 0 ? c->cache0 : L / 4 > 0 ? L / 4 : 1;
    rope_shape(c, L, variant == 1, out->shape, sizeof(out->shape));
    const mf_tolerance *tol = mf_tb_tolerance("rope.out", c->dtype);
    if (tol == NULL) {
        free(ids_host);
        return MF_ERR_INTERNAL;
    }
    out->atol = tol->atol;
    out->rtol = tol->rtol;
    out->ceiling_bytes = variant == 0
                             ? mf_rope_fused_scratch_ceiling(c->B, c->T, c->Hq, c->Hk, c->Dh)
                             : mf_rope_cache_scratch_ceiling(cap0, L > c->reserve ? L : c->reserve, c->rd);

    mf_rope_config cfg;
    mf_rope_config_init(&cfg, c->Dh);
    cfg.rotary_dim = c->rd;
    cfg.base = c->base;
    cfg.scaling = c->scaling;
    cfg.layout = c->layout;
    const size_t nq = (size_t)(c->B * c->T * c->Hq * c->Dh), nk = (size_t)(c->B * c->T * c->Hk * c->Dh);
    const size_t n = nq + nk, esize = mf_dtype_size(c->dtype);
    const uint64_t seed = mf_tb_case_seed(id, 0x726f706500000000ull, 2u, seed_salt);
    enum { X, Y, NT }; /* x: q then k; y: q_out then k_out, stored in the case's dtype, compared apart */
    mf_tb_tensor t[NT] = {
        { "x", MF_TB_IN, n, -1.0f, 1.0f, NULL, NULL, NULL, NULL, { 0 } },
        { "q_out|k_out", MF_TB_OUT_DT, n, 0.0f, 0.0f, NULL, NULL, NULL, NULL, { 0 } },
    };
    const mf_axes ax_q = { "b t h d", { c->B, c->T, c->Hq, c->Dh } },
                  ax_k = { "b t h d", { c->B, c->T, c->Hk, c->Dh } };
    float *x32 = NULL; /* the reference's input: x widened */
    void *d_ids = NULL;
    mf_rope_cache *cache = NULL;
    mf_status st = mf_tb_tensors_make(t, NT, c->dtype, seed);
    if (st != MF_OK) goto done;
    if ((x32 = (float *)malloc(n * sizeof(float))) == NULL) {
        st = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host buffers for case %d",
                          case_index);
        goto done;
    }
    mf_tb_to_f32(c->dtype, t[X].host, x32, n);
    mf_rope_positions pos = c->offset >= 0 ? mf_rope_positions_offset(c->offset)
                                           : mf_rope_positions_ids(c->kind, ids_host, c->batch_stride);
    pos.flags = c->pos_flags;

    /* The reference (in f32 on the widened inputs), with its host scratch measured. */
    float *ref = (float *)t[Y].host;
    mf_rope_tensors th = { c->B, c->T, c->Hq, c->Hk, MF_DTYPE_F32, x32, x32 + nq, ref, ref + nq };
    if ((st = mf_mem_begin(ctx, MF_MEM_HOST)) != MF_OK) goto done;
    if ((st = mf_ref_rope(ctx, &cfg, c->dir, &th, &pos)) != MF_OK) goto done;
    out->ref_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_HOST);

    /* The variant, outputs pre-filled with the NaN prefill; in place:
     * the output's buffer holds x (its guard stays NaN). */
    if ((st = mf_tb_tensors_upload(ctx, t, NT, c->dtype)) != MF_OK) goto done;
    if (c->in_place && (st = mf_buffer_upload(ctx, t[Y].dev, t[X].host, n * esize)) != MF_OK) goto done;
    if (c->offset < 0) {
        if ((st = mf_buffer_alloc(ctx, id_bytes, &d_ids)) != MF_OK ||
            (st = mf_buffer_upload(ctx, d_ids, ids_host, id_bytes)) != MF_OK)
            goto done;
        pos.ids = d_ids;
    }
    char *d_y = (char *)t[Y].dev, *d_x = c->in_place ? d_y : (char *)t[X].dev;
    mf_rope_tensors td = { c->B, c->T, c->Hq, c->Hk, c->dtype, d_x, d_x + nq * esize, d_y, d_y + nq * esize };
    if ((st = mf_mem_begin(ctx, MF_MEM_DEVICE)) != MF_OK) goto done;
    if (entry != NULL) {
        st = entry(ctx, &cfg, c->dir, &td, &pos);
    } else if (variant == 0) {
        st = mf_rope_fused(ctx, &cfg, c->dir, &td, &pos);
    } else {
        st = mf_rope_cache_create(ctx, &cfg, cap0, &cache);
        if (st == MF_OK && c->reserve > 0) st = mf_rope_cache_reserve(cache, c->reserve);
        if (st == MF_OK) st = mf_rope_cache_apply(cache, c->dir, &td, &pos);
    }
    if (st != MF_OK || (st = mf_context_synchronize(ctx)) != MF_OK) goto done;
    out->opt_peak_bytes = mf_mem_peak_delta(ctx, MF_MEM_DEVICE);

    int pass = 1; /* the guard of y (after k_out), then q_out and k_out, each on its own axes */
    if ((st = mf_tb_tensors_compare(ctx, t, NT, c->dtype, out, &pass)) != MF_OK ||
        (st = mf_tb_compare_row(t[Y].got, ref, nq, &ax_q, "q_out", "rope.out", c->dtype, out, &pass)) !=
            MF_OK ||
        (st = mf_tb_compare_row(t[Y].got + nq, ref + nq, nk, &ax_k, "k_out", "rope.out", c->dtype, out,
                                &pass)) != MF_OK)
        goto done;
    mf_tb_verdict(out, pass);

done:
    mf_tb_case_error(out, st);
    mf_rope_cache_destroy(cache);
    mf_buffer_free(ctx, d_ids);
    mf_tb_tensors_free(ctx, t, NT);
    free(x32);
    free(ids_host);
    return st;
}

static mf_status rope_run_case(mf_context *ctx, int variant, int case_index, mf_case_result *out)
{
    const mf_case_id id = mf_tb_fixed_id(case_index);
    return rope_run_case_impl(ctx, variant, NULL, &id, 0, out);
}

/* ---- memfix verify: the guard of rope (fused signature) candidates (src/testbed/testbed.h) ---------------------------- */
typedef struct rope_args {
    const mf_rope_config *cfg;
    mf_rope_direction dir;
    mf_rope_tensors t;
    mf_rope_positions pos;
} rope_args;

/* bufs: q, k, ids (NULL for offset positions), q_out, k_out */
static mf_status rope_call(mf_context *ctx, const void *args, mf_tb_guarded *bufs)
{
    const rope_args *a = (const rope_args *)args;
    mf_rope_tensors t = a->t;
    mf_rope_positions pos = a->pos;
    t.q = mf_tb_ptr(bufs, 0);
    t.k = mf_tb_ptr(bufs, 1);
    pos.ids = mf_tb_ptr(bufs, 2);
    t.q_out = mf_tb_ptr(bufs, 3);
    t.k_out = mf_tb_ptr(bufs, 4);
    return ((mf_rope_candidate_fn)mf_tb_candidate())(ctx, a->cfg, a->dir, &t, &pos);
}

static mf_status rope_guard(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                            const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    const size_t es = mf_dtype_size(t->dtype), tok = (size_t)t->batch * (size_t)t->seq_len;
    const size_t q_bytes = tok * (size_t)t->heads_q * (size_t)cfg->head_dim * es;
    const size_t k_bytes = tok * (size_t)t->heads_k * (size_t)cfg->head_dim * es;
    size_t id_bytes = 0;
    if (pos->kind != MF_ROPE_POS_OFFSET) {
        const size_t rows = pos->batch_stride > 0 ? (size_t)(t->batch - 1) * (size_t)pos->batch_stride : 0;
        id_bytes = (rows + (size_t)t->seq_len) * (pos->kind == MF_ROPE_POS_I32 ? 4u : 8u);
    }
    /* q, q_out (b, t, h, d); k, k_out over the KV heads; ids (batch rows of batch_stride, then T) */
    const mf_axes aq = { "b t h d", { t->batch, t->seq_len, t->heads_q, cfg->head_dim } },
                  ak = { "b t h d", { t->batch, t->seq_len, t->heads_k, cfg->head_dim } };
    const mf_axes aid = { "id", { (int64_t)(id_bytes / (pos->kind == MF_ROPE_POS_I32 ? 4u : 8u)) } };
    const mf_tb_buffer sp[5] = { { "q", t->q, q_bytes, t->dtype, aq },
                                 { "k", t->k, k_bytes, t->dtype, ak },
                                 { "ids", pos->kind != MF_ROPE_POS_OFFSET ? pos->ids : NULL, id_bytes,
                                   MF_DTYPE_F32, aid },
                                 { "q_out", t->q_out, q_bytes, t->dtype, aq },
                                 { "k_out", t->k_out, k_bytes, t->dtype, ak } };
    const rope_args args = { cfg, dir, *t, *pos };
    mf_tb_guarded bufs[5];
    return mf_tb_guard(ctx, sp, 3, 5, rope_call, &args, bufs);
}

static mf_status rope_verify_case(mf_context *ctx, const mf_case_id *id, uint64_t seed_salt,
                                  mf_case_result *out)
{
    const mf_status st = rope_verify_id_check(id);
    if (st != MF_OK) {
        if (out != NULL) memset(out, 0, sizeof(*out));
        return st;
    }
    return rope_run_case_impl(ctx, 0, rope_guard, id, seed_salt, out);
}

MF_TB_VERIFY_RUNS(rope_verify, rope_verify_id, rope_verify_case(ctx, id, seed_salt, out))

static int rope_verify_n_cases(void) { return ROPE_N_REPORT_CASES; }

static const mf_verify_target rope_targets[] = {
    { "rope", rope_verify, rope_verify_n_cases, rope_verify_id, rope_describe, rope_call, sizeof(rope_args),
      offsetof(rope_args, cfg), sizeof(mf_rope_config), MF_TB_OWN(mf_rope_fused), 16 }
};

/* ---- memfix bench: the size sweep (registry.h) ------------------------------------------- */
enum { ROPE_BENCH_HQ = 4, ROPE_BENCH_HK = 2, ROPE_BENCH_DH = 32 };

/* The rotated tensors of a sweep problem (x: q then k; y: q_out then k_out). */
static mf_rope_tensors rope_bench_tensors(int64_t n, const float *x, float *y)
{
    const size_t nq = (size_t)(n * ROPE_BENCH_HQ * ROPE_BENCH_DH);
    const mf_rope_tensors t = { 1, n, ROPE_BENCH_HQ, ROPE_BENCH_HK, MF_DTYPE_F32, x, x + nq, y, y + nq };
    return t;
}

/* variants: fused (0), cache (1) */
static mf_status rope_bench_setup(mf_context *ctx, mf_bench_case *c)
{
    const int64_t B = 1, Hq = ROPE_BENCH_HQ, Hk = ROPE_BENCH_HK, Dh = ROPE_BENCH_DH, n = c->n, L = n;
    const int64_t cap0 = n / 4 > 0 ? n / 4 : 1;
    const int cache = c->variant == 1;
    const size_t m = (size_t)(B * n * Hq * Dh) + (size_t)(B * n * Hk * Dh);
    snprintf(c->shape, sizeof c->shape, "B=%lld T=%lld Hq=%lld Hk=%lld Dh=rd=%lld half fwd pos<%lld%s",
             (long long)B, (long long)n, (long long)Hq, (long long)Hk, (long long)Dh, (long long)L,
             cache ? " cache0=n/4" : "");
    c->ceiling =
        cache ? mf_rope_cache_scratch_ceiling(cap0, L, Dh) : mf_rope_fused_scratch_ceiling(B, n, Hq, Hk, Dh);
    c->tol = "rope.out.f32";
    /* per call (fused or cache): each rotated pair (x1, x2) -> (x1 c - x2 s,
     * x2 c + x1 s) is 6 flops, 3 per rotated element (the angles' sin/cos left
     * out); q and k read once, q_out and k_out written once, fp32 */
    c->flops = 3.0 * (double)m;
    c->min_bytes = 4.0 * 2.0 * (double)m;
    return mf_tb_bench_io(ctx, c, 1, &m, 61, m); /* x: q then k */
}

static mf_status rope_bench_reference(mf_context *ctx, mf_bench_case *c)
{
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, ROPE_BENCH_DH); /* rd = Dh, base 1e4, scaling 1, rotate_half */
    const mf_rope_positions pos = mf_rope_positions_offset(0);
    const mf_rope_tensors t = rope_bench_tensors(c->n, (const float *)c->host[0], c->ref_out);
    return mf_ref_rope(ctx, &cfg, MF_ROPE_FORWARD, &t, &pos);
}

/* The cache variant: a table of max(n/4, 1) positions created on the device,
 * regrown to the call's positions by apply (the seed's crash path, now a
 * device-only rebuild), destroyed again; its peak is exactly
 * mf_rope_cache_scratch_ceiling(cap0, L, rd). */
static mf_status rope_bench_optimized(mf_context *ctx, mf_bench_case *c)
{
    mf_rope_config cfg;
    mf_rope_config_init(&cfg, ROPE_BENCH_DH);
    const mf_rope_positions pos = mf_rope_positions_offset(0);
    const mf_rope_tensors t = rope_bench_tensors(c->n, (const float *)c->dev[0], c->out_dev);
    if (c->variant == 0) return mf_rope_fused(ctx, &cfg, MF_ROPE_FORWARD, &t, &pos);
    mf_rope_cache *cache = NULL;
    mf_status s = mf_rope_cache_create(ctx, &cfg, c->n / 4 > 0 ? c->n / 4 : 1, &cache);
    if (s == MF_OK) s = mf_rope_cache_apply(cache, MF_ROPE_FORWARD, &t, &pos);
    mf_rope_cache_destroy(cache);
    return s;
}

static const mf_bench_sweep rope_bench = { "B=1 T=n Hq=4 Hk=2 Dh=rd=32, half,\n"
                                           "positions 0..n-1 (table length n); fused: angles on the\n"
                                           "fly; cache: each call creates a table of max(n/4,1)\n"
                                           "positions, regrows it on the device to n, applies and\n"
                                           "destroys it (table build included in opt_ms)",
                                           { 64, 256, 1024 },
                                           3,
                                           rope_bench_setup,
                                           rope_bench_reference,
                                           rope_bench_optimized };

/* ---- memfix plan: host position and cos/sin tables vs the device cache (seed 000, bug 2) ---- */
/* Only for a model with rotary positions (max_positions 0: no learned position embeddings). */
static mf_status rope_plan_rows(const mf_plan_config *cfg, mf_plan_rows *out)
{
    if (cfg->max_positions > 0) return MF_OK; /* learned positions: no RoPE */
    const int64_t S = cfg->seq, Dh = mf_plan_head_dim(cfg);
    return mf_plan_row_add(out, "rope", "host arange + cos/sin (double)", mf_ref_rope_scratch_bytes(S, Dh),
                           "device cos/sin cache (fp32)", mf_rope_cache_bytes(S, Dh),
                           "L=%lld rotary_dim=%lld", (long long)S, (long long)Dh);
}

static const mf_op_plan rope_plan = { 0, NULL, rope_plan_rows, NULL };

/* The op's rows of the tolerance table (src/core/tolerance.c assembles the one
 * table): "rope.<output>.<dtype>", atol, rtol, nmse, one-line justification. */
static const mf_tolerance rope_tolerances[] = {
    { "rope.out.f32", 1e-6, 1e-6, 1e-12,
      "double angle, cos/sin rounded once to fp32 (2^-24 rel), 2 fp32 products + 1 sum: <= "
      "4*2^-24*(|x0|+|x1|) + ref rounding ~ 4.8e-7 for |x| < 1 at any position; an fp32 angle errs ~4e-6 at "
      "p = 64" },
    { "rope.out.bf16", 1e-6, 4e-3, 1.6e-5,
      "the fp32 result (rope.out.f32) rounded to bf16: <= 2^-8*|y| (8 significant bits) plus the fp32 math "
      "error; nmse <= (2^-8)^2" },
    { "rope.roundtrip.f32", 2e-6, 1e-6, 4e-12,
      "backward(forward(x)) vs x: two fp32 rotations, each within rope.out.f32's 4*2^-24*(|x0|+|x1|) with "
      "|x|, |y| < sqrt(2)" },
};

const mf_op_desc mf_op_rope = {
    "rope",
    "RoPE with device-generated positions, double angles: fused (no table) and device cos/sin cache vs "
    "the host-built table (seed 000, bug #2)",
    2,
    rope_variant_names,
    ROPE_N_CASES,
    rope_run_case,
    1,
    rope_targets,
    &rope_bench,
    (int)(sizeof rope_tolerances / sizeof rope_tolerances[0]),
    rope_tolerances,
    &rope_plan,
    ROPE_N_REPORT_CASES, /* report: the first cases; the rest are the test suites' */
    rope_case_applies,   /* the cache-only cases (34-37) */
    0,
    NULL, /* bench_targets: none */
};
