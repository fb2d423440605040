// Optimized RoPE (seed document 000, bug #2 "RoPE Cache Device Mismatch"):
// positions are generated on the device, never built on the host and copied
// up, and every angle is computed in double. Two variants (include/memfix/rope.h):
//
//   fused  rope_rotate_kernel<T, false>: one launch rotates q and k. One thread
//          per (token, frequency i): it computes theta = (p / scaling) *
//          base^(-2i/rd) in double, sin/cos in double, rounds them once to
//          fp32 and rotates pair i of all Hq + Hk heads of its token in fp32.
//          No table, no scratch.
//   cache  rope_cache_build_kernel: the cos/sin table of positions
//          0..capacity-1, each thread generating its own position from its
//          index; rope_rotate_kernel<T, true> then reads cos/sin from the
//          table (and falls back to the on-the-fly angle for a position the
//          table does not cover, which only unchecked ids can reach).
//
// Accuracy: sin/cos are the double-precision library functions (sin(), cos()
// on double; no __sinf/__cosf, which are only accurate for |x| <= pi and give
// garbage at theta = 1048575 rad). The double angle's relative error (~2^-52)
// is ~1e-10 rad at p = 2^20, so the fp32 cos/sin are within half an fp32 ulp
// of the exact values (plus that negligible term) at any long-context
// position; the rotation's fp32 products and sum add a few ulp of
// |x0| + |x1| (tolerance row rope.out.f32). Backward rotates by -theta.
//
// Thread mapping: items of a token are i < rd/2 (rotate pair i in every head)
// followed, when a tensor is written out of place, by Dh - rd pass-through
// items (copy feature rd + c of every head). Consecutive threads touch
// consecutive features of a head row (half layout) or consecutive pairs
// (interleaved), so loads and stores coalesce. All index math is size_t.
#include "rope.cuh"

#include "mf_cuda.h"
#include "mf_device.cuh" // to_f32, from_f32, grid_blocks

#include <cuda_bf16.h>
#include <stdint.h>

namespace MF_NS {

constexpr int kRopeBlock = 128;

struct RopePositions {
    int kind; // mf_rope_pos_kind
    int64_t offset;
    const void *ids;
    int64_t batch_stride;
};

struct RopeAngles {
    int64_t rotary_dim;
    double base;
    double scaling;
};

template <typename T> __device__ __forceinline__ float rope_load(const T *p, size_t i)
{
    return to_f32(p[i]);
}
template <typename T> __device__ __forceinline__ void rope_store(T *p, size_t i, float v)
{
    p[i] = from_f32<T>(v);
}

// Position of token (b, t): generated from the token index for an offset,
// read as an integer otherwise (never through a floating-point dtype).
__device__ __forceinline__ int64_t rope_position(const RopePositions &pos, size_t b, size_t t)
{
    if (pos.kind == MF_ROPE_POS_OFFSET) return pos.offset + (int64_t)t;
    const size_t e = b * (size_t)pos.batch_stride + t;
    if (pos.kind == MF_ROPE_POS_I32) return (int64_t) static_cast<const int32_t *>(pos.ids)[e];
    return static_cast<const int64_t *>(pos.ids)[e];
}

// cos/sin of theta(p, i) = (p / scaling) * base^(-2i/rd), in double, rounded
// once to fp32. The same expression as reference/rope.c.
__device__ __forceinline__ void rope_cos_sin(const RopeAngles &a, int64_t p, size_t i, float *c, float *s)
{
    const double inv_freq = pow(a.base, -(double)(2 * i) / (double)a.rotary_dim);
    const double theta = ((double)p / a.scaling) * inv_freq;
    *c = (float)cos(theta);
    *s = (float)sin(theta);
}

// Rotates pair (j0, j1) of 'heads' rows starting at row0 (x -> y, may alias).
template <typename T>
__device__ __forceinline__ void rope_rotate_heads(const T *x, T *y, size_t row0, size_t heads, size_t dh,
                                                  size_t j0, size_t j1, float c, float s)
{
    for (size_t h = 0; h < heads; ++h) {
        const size_t base = (row0 + h) * dh;
        const float x0 = rope_load(x, base + j0);
        const float x1 = rope_load(x, base + j1);
        rope_store(y, base + j0, x0 * c - x1 * s);
        rope_store(y, base + j1, x1 * c + x0 * s);
    }
}

template <typename T>
__device__ __forceinline__ void rope_copy_heads(const T *x, T *y, size_t row0, size_t heads, size_t dh,
                                                size_t j)
{
    for (size_t h = 0; h < heads; ++h) {
        const size_t idx = (row0 + h) * dh + j;
        y[idx] = x[idx];
    }
}

// kCached: cos/sin from table (cos block then sin block, capacity x half each).
// mf-budget: regs<=48 smem<=0 stack<=64 spill=0  (sm_90 measured: regs 40 smem 0 stack 40)
template <typename T, bool kCached>
__global__ void rope_rotate_kernel(const T *q, const T *k, T *q_out, T *k_out, size_t n_tokens,
                                   size_t seq_len, size_t heads_q, size_t heads_k, size_t head_dim,
                                   int layout, float sign, RopePositions pos, RopeAngles ang,
                                   const float *table, int64_t capacity, int copy_q, int copy_k)
{
    const size_t rd = (size_t)ang.rotary_dim;
    const size_t half = rd / 2;
    const size_t tail = (copy_q || copy_k) ? head_dim - rd : 0;
    const size_t items = half + tail;
    const size_t total = n_tokens * items;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += stride) {
        const size_t token = g / items;
        const size_t item = g - token * items;
        if (item < half) {
            const size_t b = token / seq_len, t = token - b * seq_len;
            const int64_t p = rope_position(pos, b, t);
            float c, s;
            if (kCached && p >= 0 && p < capacity) {
                const size_t e = (size_t)p * half + item;
                c = table[e];
                s = table[(size_t)capacity * half + e];
            } else {
                rope_cos_sin(ang, p, item, &c, &s);
            }
            s *= sign; // backward: rotation by -theta
            const size_t j0 = layout == MF_ROPE_HALF ? item : 2 * item;
            const size_t j1 = layout == MF_ROPE_HALF ? item + half : 2 * item + 1;
            rope_rotate_heads(q, q_out, token * heads_q, heads_q, head_dim, j0, j1, c, s);
            rope_rotate_heads(k, k_out, token * heads_k, heads_k, head_dim, j0, j1, c, s);
        } else {
            const size_t j = rd + (item - half); // partial rotary: pass-through
            if (copy_q) rope_copy_heads(q, q_out, token * heads_q, heads_q, head_dim, j);
            if (copy_k) rope_copy_heads(k, k_out, token * heads_k, heads_k, head_dim, j);
        }
    }
}

// table[p * half + i] = cos(theta(p, i)), table[capacity * half + p * half + i]
// = sin(theta(p, i)); p generated on the device from the element index.
// mf-budget: regs<=48 smem<=0 stack<=64 spill=0  (sm_90 measured: regs 37 smem 0 stack 40)
__global__ void rope_cache_build_kernel(float *table, size_t capacity, RopeAngles ang)
{
    const size_t half = (size_t)ang.rotary_dim / 2;
    const size_t total = capacity * half;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += stride) {
        const size_t p = g / half;
        const size_t i = g - p * half;
        float c, s;
        rope_cos_sin(ang, (int64_t)p, i, &c, &s);
        table[g] = c;
        table[total + g] = s;
    }
}

// The range check of explicit ids (src/ops/rope.c defers its verdict to the
// context's next synchronization): *first_bad = min token b*T + t whose id is
// outside [0, MF_ROPE_MAX_POSITION]; left at -1 (all bits set, as unsigned the
// largest value) when every id is in range.
// mf-budget: regs<=32 smem<=0 stack<=0 spill=0  (sm_90 measured: regs 18 smem 0 stack 0)
__global__ void rope_check_ids_kernel(RopePositions pos, size_t n_tokens, size_t seq_len,
                                      unsigned long long *first_bad)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x; g < n_tokens; g += stride) {
        const size_t b = g / seq_len, t = g - b * seq_len;
        const int64_t p = rope_position(pos, b, t);
        if (p < 0 || p > MF_ROPE_MAX_POSITION) atomicMin(first_bad, (unsigned long long)g);
    }
}

static unsigned rope_grid(size_t total)
{
    return grid_blocks(total, kRopeBlock, (size_t)1 << 20); // grid-stride beyond ~134M threads
}

static RopePositions rope_positions_arg(const mf_rope_positions *pos)
{
    RopePositions p;
    p.kind = (int)pos->kind;
    p.offset = pos->offset;
    p.ids = pos->ids;
    p.batch_stride = pos->batch_stride;
    return p;
}

static RopeAngles rope_angles_arg(const mf_rope_config *cfg)
{
    RopeAngles a;
    a.rotary_dim = cfg->rotary_dim;
    a.base = cfg->base;
    a.scaling = cfg->scaling;
    return a;
}

template <typename T, bool kCached>
static mf_status rope_launch(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                             const mf_rope_tensors *t, const mf_rope_positions *pos, const float *table,
                             int64_t capacity)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t n_tokens = (size_t)t->batch * (size_t)t->seq_len;
    const int copy_q = t->q_out != t->q, copy_k = t->k_out != t->k;
    const size_t half = (size_t)cfg->rotary_dim / 2;
    const size_t tail = (copy_q || copy_k) ? (size_t)(cfg->head_dim - cfg->rotary_dim) : 0;
    const size_t total = n_tokens * (half + tail);
    rope_rotate_kernel<T, kCached><<<rope_grid(total), kRopeBlock, 0, stream>>>(
        static_cast<const T *>(t->q), static_cast<const T *>(t->k), static_cast<T *>(t->q_out),
        static_cast<T *>(t->k_out), n_tokens, (size_t)t->seq_len, (size_t)t->heads_q, (size_t)t->heads_k,
        (size_t)cfg->head_dim, (int)cfg->layout, dir == MF_ROPE_BACKWARD ? -1.0f : 1.0f,
        rope_positions_arg(pos), rope_angles_arg(cfg), table, capacity, copy_q, copy_k);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <bool kCached>
static mf_status rope_dispatch(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                               const mf_rope_tensors *t, const mf_rope_positions *pos, const float *table,
                               int64_t capacity)
{
    if (t->dtype == MF_DTYPE_BF16)
        return rope_launch<__nv_bfloat16, kCached>(ctx, cfg, dir, t, pos, table, capacity);
    return rope_launch<float, kCached>(ctx, cfg, dir, t, pos, table, capacity);
}

} // namespace MF_NS

// Arguments are validated by the public functions in src/ops/rope.c.
extern "C" mf_status MF_FN(rope_fused)(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                       const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    return MF_NS::rope_dispatch<false>(ctx, cfg, dir, t, pos, nullptr, 0);
}

extern "C" mf_status MF_FN(rope_check_ids)(mf_context *ctx, const mf_rope_positions *pos, int64_t batch,
                                           int64_t seq_len, int64_t *first_bad)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t n_tokens = (size_t)batch * (size_t)seq_len;
    MF_CUDA_CHECK(cudaMemsetAsync(first_bad, 0xff, sizeof(int64_t), stream));
    MF_NS::rope_check_ids_kernel<<<MF_NS::rope_grid(n_tokens), MF_NS::kRopeBlock, 0, stream>>>(
        MF_NS::rope_positions_arg(pos), n_tokens, (size_t)seq_len,
        reinterpret_cast<unsigned long long *>(first_bad));
    MF_LAUNCH_CHECK();
    return MF_OK;
}

extern "C" mf_status MF_FN(rope_cache_build)(mf_context *ctx, float *table, int64_t capacity,
                                             const mf_rope_config *cfg)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t total = (size_t)capacity * ((size_t)cfg->rotary_dim / 2);
    MF_NS::rope_cache_build_kernel<<<MF_NS::rope_grid(total), MF_NS::kRopeBlock, 0, stream>>>(
        table, (size_t)capacity, MF_NS::rope_angles_arg(cfg));
    MF_LAUNCH_CHECK();
    return MF_OK;
}

extern "C" mf_status MF_FN(rope_cache_apply)(mf_context *ctx, const float *table, int64_t capacity,
                                             const mf_rope_config *cfg, mf_rope_direction dir,
                                             const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    return MF_NS::rope_dispatch<true>(ctx, cfg, dir, t, pos, table, capacity);
}
