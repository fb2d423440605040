/* memfix rope: rotary position embeddings (RoPE) with positions generated on
 * the device, forward and backward (seed document 000, "Memory Profiling
 * Report", bug #2 "RoPE Cache Device Mismatch": the old code built the
 * position indices with `torch.arange(seq_len, dtype=inv_freq.dtype)` on the
 * CPU while inv_freq lived on the GPU, and crashed only "when sequence length
 * exceeds the cached RoPE embeddings", i.e. when the cos/sin table was
 * regenerated; the fix creates the arange on inv_freq's device).
 *
 * Math
 * ----
 *   half        = rotary_dim / 2
 *   inv_freq[i] = base^(-2i / rotary_dim)                      i < half
 *   theta(p, i) = (p / scaling) * inv_freq[i]                  p = position
 * (scaling is the linear position-interpolation factor; 1.0 = none.) Each pair
 * (x0, x1) of the first rotary_dim features of a head is rotated by theta:
 *   forward   y0 = x0 cos(theta) - x1 sin(theta)
 *             y1 = x1 cos(theta) + x0 sin(theta)
 *   backward  the rotation is orthogonal, so dL/dx = R(-theta) dL/dy: the
 *             same formulas with sin(theta) negated.
 * Pairs: MF_ROPE_HALF (GPT-NeoX / Hugging Face `rotate_half`): pair i is
 *   features (i, i + half); MF_ROPE_INTERLEAVED (GPT-J `rotate_every_two`):
 *   pair i is features (2i, 2i + 1). Features rotary_dim .. head_dim-1 are
 *   passed through unchanged (partial rotary, GPT-NeoX rotary_pct).
 * q has shape (B, T, Hq, Dh) and k (B, T, Hk, Dh), contiguous, row-major;
 * Hq != Hk (grouped-query attention) is fine: both use the positions of their
 * token (b, t).
 *
 * Positions (mf_rope_positions), never stored in a floating-point dtype:
 *   MF_ROPE_POS_OFFSET  token t of every batch is at position offset + t
 *                       (offset = number of tokens already in a KV cache);
 *                       generated on the device from the token index;
 *   MF_ROPE_POS_I32/I64 explicit ids: the position of token (b, t) is
 *                       ids[b * batch_stride + t] (int32 or int64); batch_stride
 *                       0 shares one row of T ids between all batches (HF
 *                       position_ids of shape (1, T)), batch_stride >= T gives
 *                       one row per batch. Any order (packed sequences, gaps).
 * Every position must be in [0, MF_ROPE_MAX_POSITION]. Explicit ids are
 * never read back to the host: they are range-checked on the device and a bad
 * id is reported by the context's next synchronizing call (see "Position
 * checking" below), so no op call synchronizes (memfix.h). Positions stored in
 * bf16 would collide above 256 (bf16(257) == 256: 8 significant bits); fp32
 * positions collide above 2^24. This API takes integers only, and computes
 * every angle in double: (double)p * inv_freq with inv_freq in double, then
 * sin/cos in double (no __sinf/__cosf fast-math intrinsics, which lose all
 * accuracy at the angles of long contexts: theta(1048575, 0) = 1048575 rad),
 * rounded once to fp32. At p = 1048575 an angle from fp32 inv_freq and an fp32
 * product is off by up to ~0.1 rad; the double angle by ~1e-10 rad.
 *
 * Non-finite inputs: a NaN or Inf in q or k reaches the two outputs of its
 * rotation pair (fused, cache and reference alike); features beyond
 * rotary_dim are copied.
 *
 * Storage dtypes: MF_DTYPE_F32 or MF_DTYPE_BF16 (q, k and the outputs share
 * one dtype); the rotation is computed in fp32 (double in the reference).
 *
 * Variants
 * --------
 *   fused (mf_rope_fused)   one launch rotates q and k, computing the angles on
 *       the fly (one sin/cos per token and frequency, reused by all Hq + Hk
 *       heads); no table, no scratch; in place (q_out == q, k_out == k) or out
 *       of place.
 *   cache (mf_rope_cache)   a cos/sin table object created on a context, built
 *       on the device by a kernel that generates the positions 0..capacity-1
 *       itself (the seed's fix: nothing is built on the host or copied up).
 *       When offset positions need a position >= capacity (needed = offset + T,
 *       known on the host), the table is regenerated on the device at
 *       capacity' = max(needed, 2 * capacity) (old table freed first, then the
 *       new one built: the seed's crash path, now a device-only rebuild; always
 *       in fp32 from double angles, never in the storage dtype). Explicit ids
 *       are not read, so they never grow the table: an id >= capacity gets its
 *       angle computed on the fly (same double expression, same result);
 *       mf_rope_cache_reserve(max id + 1) first serves them all from the table.
 *
 * Memory (scratch = bytes beyond the caller's q, k, outputs and position ids)
 * -------------------------------------------------------------------------
 * Reference (mf_ref_rope), exact, with L = table length = max position + 1:
 *     mf_ref_rope_scratch_bytes(L, rd) = 8 * (L + rd/2 + 2 * L * rd)
 *   the old host flow: t = arange(L) (L doubles), inv_freq (rd/2 doubles), and
 *   the HF-style cos and sin tables emb = cat(freqs, freqs) (or
 *   repeat_interleave for GPT-J) of L x rd doubles each, built on the host.
 * Fused, upper bound on device scratch:
 *     mf_rope_fused_scratch_ceiling(...) = MF_ROPE_ID_CHECK_BYTES = 8
 *   the int64 device word of the explicit-id range check (scratch for the
 *   call); exact for checked explicit ids, 0 bytes used for offset positions
 *   and MF_ROPE_NO_POSITION_CHECK.
 * Cache, exact bytes held by a table of 'capacity' positions (device scratch
 * of the context, allocated at create/growth, freed by destroy):
 *     mf_rope_cache_bytes(capacity, rd) = 4 * capacity * rd
 *   (cos and sin, capacity x rd/2 floats each). After serving positions < L
 *   starting from capacity C0 the peak is at most
 *     mf_rope_cache_scratch_ceiling(C0, L, rd)
 *       = mf_rope_cache_bytes(mf_rope_cache_grown_capacity(C0, L), rd)
 *         + MF_ROPE_ID_CHECK_BYTES
 *   where grown_capacity(C0, L) = C0 if L <= C0 else max(L, 2*C0); growth frees
 *   the old table before allocating the new one, so the table is the held
 *   bytes and, with apply's id-check word (checked explicit ids only), the
 *   peak: exact when an explicit-id call runs on a table of grown_capacity;
 *   offset-position calls peak at the table alone (ceiling - 8).
 * At the seed's shape (T = 131072, Dh = rd = 128): reference 269,484,544 bytes
 * (257 MiB of host tables), cache 67,108,872 bytes (64 MiB table + 8), fused 8.
 * Formula functions return SIZE_MAX when an argument is invalid or the byte
 * count overflows size_t.
 *
 * Position checking: explicit ids live in device memory; unless
 * MF_ROPE_NO_POSITION_CHECK is set in mf_rope_positions.flags, the entry
 * points launch a check kernel that stores the first token whose id is
 * negative or > MF_ROPE_MAX_POSITION in a device word (MF_ROPE_ID_CHECK_BYTES
 * of scratch), and hand it to the context's deferred checks (as
 * cross_entropy's bad labels): the call itself returns MF_OK without waiting,
 * and the next synchronizing call of the context (mf_context_synchronize,
 * mf_buffer_download, mf_context_trim) returns MF_ERR_OUT_OF_RANGE with a
 * message naming the function, the id, its index in ids and its token (b, t);
 * the outputs of that call are unspecified (never an out-of-bounds access:
 * the fused kernel reads no table, and the cache kernel computes the angle on
 * the fly for any id outside its table). With the flag set the caller
 * guarantees the range and no check runs (no scratch word).
 */
#ifndef MEMFIX_ROPE_H
#define MEMFIX_ROPE_H

/* memfix/verify.h names each candidate type's header until this one is included */
#undef mf_rope_candidate_fn

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mf_rope_layout {
    MF_ROPE_HALF = 0,       /* GPT-NeoX / HF rotate_half: pairs (i, i + rd/2) */
    MF_ROPE_INTERLEAVED = 1 /* GPT-J rotate_every_two: pairs (2i, 2i + 1) */
} mf_rope_layout;

typedef enum mf_rope_direction {
    MF_ROPE_FORWARD = 0, /* y = R(theta) x */
    MF_ROPE_BACKWARD = 1 /* dx = R(-theta) dy */
} mf_rope_direction;

typedef enum mf_rope_pos_kind {
    MF_ROPE_POS_OFFSET = 0, /* position = offset + t, generated on the device */
    MF_ROPE_POS_I32 = 1,    /* explicit int32 ids */
    MF_ROPE_POS_I64 = 2     /* explicit int64 ids */
} mf_rope_pos_kind;

/* Largest accepted position: 2^40 - 1 (exact in double, far beyond any
 * context; keeps (p / scaling) * inv_freq exact to ~1e-4 rad at worst). */
#define MF_ROPE_MAX_POSITION ((int64_t)1099511627775LL)

/* mf_rope_positions.flags */
#define MF_ROPE_NO_POSITION_CHECK 1u

/* Device scratch of the explicit-id range check: one int64 word per call. */
#define MF_ROPE_ID_CHECK_BYTES ((size_t)8)

typedef struct mf_rope_config {
    int64_t head_dim;   /* Dh > 0 */
    int64_t rotary_dim; /* even, 2 <= rotary_dim <= head_dim */
    double base;        /* theta base, finite and > 0 (10000, 1000000) */
    double scaling;     /* linear scaling factor, finite and > 0; 1 = none */
    mf_rope_layout layout;
} mf_rope_config;

/* head_dim = rotary_dim = Dh, base 10000, scaling 1, MF_ROPE_HALF. */
MF_API void mf_rope_config_init(mf_rope_config *cfg, int64_t head_dim);

typedef struct mf_rope_tensors {
    int64_t batch;   /* B > 0 */
    int64_t seq_len; /* T > 0 */
    int64_t heads_q; /* Hq > 0 */
    int64_t heads_k; /* Hk > 0 */
    mf_dtype dtype;  /* storage of q, k, q_out, k_out */
    const void *q;   /* (B, T, Hq, Dh) */
    const void *k;   /* (B, T, Hk, Dh) */
    void *q_out;     /* (B, T, Hq, Dh); == q for in place, must not partially overlap q or k */
    void *k_out;     /* (B, T, Hk, Dh); == k for in place, must not partially overlap q or k */
} mf_rope_tensors;

typedef struct mf_rope_positions {
    mf_rope_pos_kind kind;
    int64_t offset;       /* MF_ROPE_POS_OFFSET: >= 0 */
    const void *ids;      /* MF_ROPE_POS_I32/I64: int32_t / int64_t ids */
    int64_t batch_stride; /* elements between batch rows of ids: 0 (shared) or >= T */
    unsigned flags;       /* MF_ROPE_NO_POSITION_CHECK */
} mf_rope_positions;

/* Convenience initialisers. */
MF_API mf_rope_positions mf_rope_positions_offset(int64_t offset);
MF_API mf_rope_positions mf_rope_positions_ids(mf_rope_pos_kind kind, const void *ids, int64_t batch_stride);

MF_API const char *mf_rope_layout_name(mf_rope_layout l); /* "half", "interleaved" */

/* Argument validation, shared by the reference and the entry points: the
 * error message names 'func'. mf_rope_validate_config checks the
 * configuration; mf_rope_validate the configuration, the direction, the
 * tensors (sizes, dtype, overlaps) and the positions, all but the id values
 * (the reference scans its host ids, the entry points check device ids on the
 * device). */
MF_API mf_status mf_rope_validate_config(const char *func, const mf_rope_config *cfg);
MF_API mf_status mf_rope_validate(const char *func, const mf_rope_config *cfg, mf_rope_direction dir,
                                  const mf_rope_tensors *t, const mf_rope_positions *pos);

/* ---- fused: angles on the fly, no scratch ---------------------------------- */
/* Rotates q and k (device buffers of ctx) into q_out and k_out in one launch.
 * Asynchronous on the context's stream: never waits, allocates nothing in
 * steady state (the id-check word comes from the context's scratch cache).
 * Errors: MF_ERR_NULL_POINTER (ctx, cfg, t, pos, a tensor, ids),
 * MF_ERR_INVALID_SIZE (a size <= 0, rotary_dim odd, < 2 or > head_dim,
 * batch_stride negative or in (0, T)), MF_ERR_OVERFLOW, MF_ERR_INVALID_ARGUMENT
 * (layout, direction, kind, base, scaling, partially overlapping buffers),
 * MF_ERR_DTYPE, MF_ERR_OUT_OF_RANGE (offset < 0 or a position outside
 * [0, MF_ROPE_MAX_POSITION]: offsets at once, explicit ids at the next
 * synchronization), MF_ERR_BACKEND_UNAVAILABLE, MF_ERR_BACKEND. */
typedef mf_status mf_rope_fused_fn(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                   const mf_rope_tensors *t, const mf_rope_positions *pos);
MF_API mf_rope_fused_fn mf_rope_fused;
/* A `memfix verify --op rope` candidate is a function of this type, both
 * directions (dir: forward y = R(theta) x, backward dx = R(-theta) dy). t->q,
 * t->k (read-only), t->q_out, t->k_out (out of place, every element written)
 * and pos->ids (explicit int32/int64 positions; NULL for MF_ROPE_POS_OFFSET)
 * are device buffers; cfg and pos are host structs honoured in full (head_dim,
 * rotary_dim, base, scaling, layout; offset or ids with batch_stride). The
 * fused ceiling, MF_ROPE_ID_CHECK_BYTES (8) of scratch, allows an id check. */
typedef mf_rope_fused_fn *mf_rope_candidate_fn;

/* ---- cache: device-built cos/sin table ------------------------------------ */
typedef struct mf_rope_cache mf_rope_cache;

/* Creates a table of 'capacity' > 0 positions for cfg's rotary_dim, base and
 * scaling (cfg is copied; its head_dim and layout are used by apply), built on
 * the device. The table lives in ctx's device scratch (tracked), until
 * mf_rope_cache_destroy. The cache must not outlive ctx. */
MF_API mf_status mf_rope_cache_create(mf_context *ctx, const mf_rope_config *cfg, int64_t capacity,
                                      mf_rope_cache **out);
MF_API void mf_rope_cache_destroy(mf_rope_cache *cache); /* NULL is a no-op */
/* Grows the table (on the device) so that it covers positions < n_positions;
 * no-op when it already does. Same growth rule as apply. */
MF_API mf_status mf_rope_cache_reserve(mf_rope_cache *cache, int64_t n_positions);
MF_API int64_t mf_rope_cache_capacity(const mf_rope_cache *cache); /* -1 for NULL */
/* Device bytes the table holds now: mf_rope_cache_bytes(capacity, rd). */
MF_API size_t mf_rope_cache_size_bytes(const mf_rope_cache *cache);
MF_API const mf_rope_config *mf_rope_cache_config(const mf_rope_cache *cache);
/* Rotates like mf_rope_fused, reading cos/sin from the table (grown first when
 * offset positions reach capacity; explicit ids beyond it computed on the
 * fly). Never waits. Same errors as mf_rope_fused plus MF_ERR_OUT_OF_MEMORY
 * when growth fails (the cache then keeps its old table). */
MF_API mf_status mf_rope_cache_apply(mf_rope_cache *cache, mf_rope_direction dir, const mf_rope_tensors *t,
                                     const mf_rope_positions *pos);

/* ---- reference (the executable specification) ----------------------------- */
/* The old flow on the host: positions = arange(L) on the host, inv_freq and
 * the cos/sin tables in double (host scratch, exactly
 * mf_ref_rope_scratch_bytes(L, rd), L = max position + 1), applied in double
 * (emb = x * cos + rotate(x) * sin, HF style). t->dtype must be MF_DTYPE_F32
 * (widen bf16 inputs first: exact); q, k, q_out, k_out and pos->ids are HOST
 * pointers; in place allowed. Same errors as mf_rope_fused plus
 * MF_ERR_OUT_OF_MEMORY; ids are always checked. */
MF_API mf_status mf_ref_rope(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                             const mf_rope_tensors *t, const mf_rope_positions *pos);

/* ---- memory formulas (bytes), see the header comment ----------------------- */
MF_API size_t mf_ref_rope_scratch_bytes(int64_t table_len, int64_t rotary_dim);
MF_API size_t mf_rope_fused_scratch_ceiling(int64_t batch, int64_t seq_len, int64_t heads_q, int64_t heads_k,
                                            int64_t head_dim);
MF_API size_t mf_rope_cache_bytes(int64_t capacity, int64_t rotary_dim);
/* -1 on invalid arguments or overflow. */
MF_API int64_t mf_rope_cache_grown_capacity(int64_t capacity, int64_t needed);
MF_API size_t mf_rope_cache_scratch_ceiling(int64_t initial_capacity, int64_t table_len, int64_t rotary_dim);

#ifdef __cplusplus
}
#endif

#endif /* MEMFIX_ROPE_H */
