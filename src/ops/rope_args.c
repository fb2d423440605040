/* RoPE's small public helpers (config and positions constructors, layout names),
 * the argument validation shared by the reference (reference/rope.c) and the
 * public entry points (src/ops/rope.c), and the reference's tolerance row
 * against PyTorch: built into the core library even without the kernels.
 * Declarations: include/memfix/rope.h and op_list.h. */
#include "memfix/check.h"
#include "memfix/rope.h"
#include "mf_internal.h"
#include "op_list.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- small public helpers ------------------------------------------------------ */

void mf_rope_config_init(mf_rope_config *cfg, int64_t head_dim)
{
    if (cfg == NULL) return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->head_dim = head_dim;
    cfg->rotary_dim = head_dim;
    cfg->base = 10000.0;
    cfg->scaling = 1.0;
    cfg->layout = MF_ROPE_HALF;
}

mf_rope_positions mf_rope_positions_offset(int64_t offset)
{
    mf_rope_positions p;
    memset(&p, 0, sizeof(p));
    p.kind = MF_ROPE_POS_OFFSET;
    p.offset = offset;
    return p;
}

mf_rope_positions mf_rope_positions_ids(mf_rope_pos_kind kind, const void *ids, int64_t batch_stride)
{
    mf_rope_positions p;
    memset(&p, 0, sizeof(p));
    p.kind = kind;
    p.ids = ids;
    p.batch_stride = batch_stride;
    return p;
}

const char *mf_rope_layout_name(mf_rope_layout l)
{
    switch (l) {
    case MF_ROPE_HALF: return "half";
    case MF_ROPE_INTERLEAVED: return "interleaved";
    }
    return NULL;
}

/* ---- argument validation ------------------------------------------------------ */
#define ROPE_ERR(status, ...) return mf_set_error((status), func, __FILE__, __LINE__, __VA_ARGS__)

static int ranges_overlap(const void *a, size_t na, const void *b, size_t nb)
{
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a0 < b0 + nb && b0 < a0 + na;
}

mf_status mf_rope_validate_config(const char *func, const mf_rope_config *cfg)
{
    if (cfg == NULL) ROPE_ERR(MF_ERR_NULL_POINTER, "cfg is NULL");
    if (cfg->head_dim <= 0)
        ROPE_ERR(MF_ERR_INVALID_SIZE, "head_dim must be > 0 (got %lld)", (long long)cfg->head_dim);
    if (cfg->rotary_dim <= 0 || (cfg->rotary_dim % 2) != 0)
        ROPE_ERR(MF_ERR_INVALID_SIZE, "rotary_dim must be even and >= 2 (got %lld)",
                 (long long)cfg->rotary_dim);
    if (cfg->rotary_dim > cfg->head_dim)
        ROPE_ERR(MF_ERR_INVALID_SIZE, "rotary_dim %lld exceeds head_dim %lld", (long long)cfg->rotary_dim,
                 (long long)cfg->head_dim);
    if (!isfinite(cfg->base) || !(cfg->base > 0.0))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "base must be finite and > 0 (got %g)", cfg->base);
    if (!isfinite(cfg->scaling) || !(cfg->scaling > 0.0))
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "scaling must be finite and > 0 (got %g)", cfg->scaling);
    if (cfg->layout != MF_ROPE_HALF && cfg->layout != MF_ROPE_INTERLEAVED)
        ROPE_ERR(MF_ERR_INVALID_ARGUMENT, "layout %d is not MF_ROPE_HALF or MF_ROPE_INTERLEAVED",
                 (int)cfg->layout);
    return MF_OK;
}

mf_status mf_rope_validate(const char *func, const mf_rope_config *cfg, mf_rope_direction dir,
                           const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    MF_TRY(mf_rope_validate_config(func, cfg));
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
            ROPE_ERR(MF_ERR_OUT_OF_RANGE,
                     "positions offset + T - 1 = %lld + %lld exceed MF_ROPE_MAX_POSITION",
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

/* ---- the reference against PyTorch float64 (tests/equivalence/test_rope_fixtures.c) ---- */
static const mf_tolerance torch_rows[] = {
    { "rope.torch.f32", 1e-12, 2.4e-7, 1e-13,
      "reference (double tables) vs the HF rotary code run by torch in float64, both rounded to fp32: 1-2 "
      "ulp (2^-23) where the doubles straddle a rounding boundary" },
};
const mf_tolerance_rows mf_rope_torch_tolerances = { torch_rows, MF_COUNT_OF(torch_rows) };
