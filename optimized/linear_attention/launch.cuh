// Causal linear attention: the launchers (grids, scratch layout and kernel sequence of the
// SIMT and tensor-core paths, forward and backward) behind the entry points.
#pragma once

#include "simt_fwd.cuh"
#include "simt_bwd.cuh"
#include "chunk_state.cuh"
#include "tc_tile.cuh"

namespace MF_NS {

// ---- launchers -----------------------------------------------------------------------------
static size_t slices(int n) { return (size_t)(n / kSlice + (n % kSlice != 0)); }
static dim3 item_grid(size_t total) { return dim3(grid_cap(total, kMaxGridX)); }
static size_t cdiv(size_t a, size_t b) { return a / b + (a % b != 0); }

static Dims make_dims(int causal, int64_t chunk, int64_t N, int64_t D, int64_t Dv)
{
    Dims s;
    s.N = (size_t)N;
    s.D = (int)D;
    s.Dv = (int)Dv;
    // The bidirectional form has no intra-chunk term; its sweep granularity is
    // only a loop step (any multiple of kSub).
    s.C = causal ? (int)chunk : MF_LINEAR_ATTENTION_MAX_CHUNK;
    s.causal = causal;
    s.n_slices = 0;
    s.total = 0;
    return s;
}

// Chunk states every kStateChunk rows holding the D x Dv matrix and z (with_kv: the
// tensor-core path), else z alone every kZChunk rows.
static TcDims make_tc(size_t bh, int64_t N, int64_t D, int64_t Dv, int with_kv)
{
    TcDims t;
    t.N = (size_t)N;
    t.bh = bh;
    t.D = (int)D;
    t.Dv = (int)Dv;
    t.Ce = with_kv ? kStateChunk : kZChunk;
    t.nc = cdiv(t.N, (size_t)t.Ce);
    t.tiles = cdiv(t.N, (size_t)kT);
    t.tiles_w = cdiv(t.N, (size_t)kTw);
    t.E = with_kv ? (int)(D * Dv + D) : (int)D;
    return t;
}

// The tensor-core path: bf16 storage, causal.
static bool use_tc(mf_dtype dtype, int causal) { return dtype == MF_DTYPE_BF16 && causal; }

// Device scratch of one call, in floats (mf_linear_attention_scratch_ceiling bounds it).
static size_t scratch_floats(mf_dtype dtype, int causal, int backward, size_t bh, int64_t N, int64_t D,
                             int64_t Dv)
{
    const bool tc = use_tc(dtype, causal);
    if (!backward && !tc) return 0;
    const TcDims t = make_tc(bh, N, D, Dv, tc);
    size_t n = bh * t.nc * (size_t)t.E;           // chunk states
    if (backward) n += 2 * bh * (size_t)N;        // den_n, dd_n
    if (backward && !causal) n += bh * (size_t)D; // the total z
    return n;
}

static mf_status launch_forward_tc(mf_context *ctx, size_t bh, int64_t N, int64_t D, int64_t Dv,
                                   const bf16 *q, const bf16 *k, const bf16 *v,
                                   const mf_linear_attention_state &st, float *out, float *states)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const TcDims t = make_tc(bh, N, D, Dv, 1);
    la_tc_state_kernel<0>
        <<<item_grid(bh * t.nc), 2 * kThreads, 0, stream>>>(k, v, nullptr, nullptr, states, t);
    MF_LAUNCH_CHECK();
    la_scan_kernel<<<item_grid(cdiv(bh * (size_t)t.E, 256)), 256, 0, stream>>>(
        states, st.initial_kv, st.initial_z, st.final_kv, st.final_z, t, (int)(D * Dv), 0);
    MF_LAUNCH_CHECK();
    const size_t smem = sizeof(TileSmem);
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(la_tc_tile_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    la_tc_tile_kernel<0><<<item_grid(bh * t.tiles_w), 2 * kThreads, smem, stream>>>(
        q, k, v, v /* dout: unused */, nullptr, nullptr, nullptr, states, out, t);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_forward(mf_context *ctx, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N,
                                int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                                const mf_linear_attention_state *state, float *out)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t bh = (size_t)B * (size_t)H;
    Dims s = make_dims(causal, chunk, N, D, Dv);
    s.n_slices = slices(s.Dv);
    s.total = bh * s.n_slices;
    const mf_linear_attention_state none = { nullptr, nullptr, nullptr, nullptr };
    const mf_linear_attention_state &st = state != nullptr ? *state : none;
    la_fwd_kernel<T><<<item_grid(s.total), kThreads, 0, stream>>>(
        static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v), st.initial_kv,
        st.initial_z, out, st.final_kv, st.final_z, s);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

// den_n, dd_n for every form: the chunks' z (from 'states' at zoff when given, else summed
// here into zbuf) and the row statistics kernel.
template <typename T, bool RND>
static mf_status launch_rowstats(cudaStream_t stream, int causal, const TcDims &t, const T *q, const T *k,
                                 const float *out, const T *dout, const float *z0, const float *states,
                                 int zoff, float *zbuf, float *ztot, float *den, float *dd)
{
    if (states == nullptr) {
        la_zsum_kernel<T><<<item_grid(t.bh * t.nc), kThreads, 0, stream>>>(k, zbuf, t);
        MF_LAUNCH_CHECK();
        la_scan_kernel<<<item_grid(cdiv(t.bh * (size_t)t.E, 256)), 256, 0, stream>>>(
            zbuf, nullptr, causal ? z0 : nullptr, nullptr, causal ? nullptr : ztot, t, 0, 0);
        MF_LAUNCH_CHECK();
        states = zbuf;
        zoff = 0;
    }
    la_rowstats_kernel<T, RND><<<item_grid(t.bh * t.tiles), kThreads, 0, stream>>>(
        q, k, out, dout, states, zoff, causal ? nullptr : ztot, den, dd, t);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

static mf_status launch_backward_tc(mf_context *ctx, size_t bh, int64_t N, int64_t D, int64_t Dv,
                                    const bf16 *q, const bf16 *k, const bf16 *v, const float *out,
                                    const bf16 *dout, const mf_linear_attention_state &st,
                                    const mf_linear_attention_state_grad &gr, float *scratch, float *dq,
                                    float *dk, float *dv)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const TcDims t = make_tc(bh, N, D, Dv, 1);
    float *den = scratch, *dd = scratch + bh * (size_t)N, *states = dd + bh * (size_t)N;
    const dim3 sgrid = item_grid(bh * t.nc), tgrid = item_grid(bh * t.tiles);
    const dim3 cgrid = item_grid(cdiv(bh * (size_t)t.E, 256));
    // forward states S_prev, z_prev per chunk; then dq, which also writes den, dd
    la_tc_state_kernel<0><<<sgrid, 2 * kThreads, 0, stream>>>(k, v, nullptr, nullptr, states, t);
    MF_LAUNCH_CHECK();
    la_scan_kernel<<<cgrid, 256, 0, stream>>>(states, st.initial_kv, st.initial_z, nullptr, nullptr, t,
                                              (int)(D * Dv), 0);
    MF_LAUNCH_CHECK();
    const size_t tsmem = sizeof(TileSmem);
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(la_tc_tile_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)tsmem));
    la_tc_tile_kernel<1><<<item_grid(bh * t.tiles_w), 2 * kThreads, tsmem, stream>>>(q, k, v, dout, out, den,
                                                                                     dd, states, dq, t);
    MF_LAUNCH_CHECK();
    // reverse states G_next, g_next per chunk (in the same buffer); then dk, dv
    la_tc_state_kernel<1><<<sgrid, 2 * kThreads, 0, stream>>>(q, dout, den, dd, states, t);
    MF_LAUNCH_CHECK();
    la_scan_kernel<<<cgrid, 256, 0, stream>>>(states, gr.d_final_kv, gr.d_final_z, gr.d_initial_kv,
                                              gr.d_initial_z, t, (int)(D * Dv), 1);
    MF_LAUNCH_CHECK();
    const size_t smem = la_dkdv_smem_bytes();
    MF_CUDA_CHECK(
        cudaFuncSetAttribute(la_tc_dkdv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    la_tc_dkdv_kernel<<<tgrid, 2 * kThreads, smem, stream>>>(q, k, v, dout, den, dd, states, dk, dv, t);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

template <typename T>
static mf_status launch_backward(mf_context *ctx, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N,
                                 int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                                 const float *out, const void *dout, const mf_linear_attention_state *state,
                                 const mf_linear_attention_state_grad *grad, float *scratch, float *dq,
                                 float *dk, float *dv)
{
    cudaStream_t stream = (cudaStream_t)mf_context_stream(ctx);
    const size_t bh = (size_t)B * (size_t)H;
    const T *tq = static_cast<const T *>(q), *tk = static_cast<const T *>(k);
    const T *tv = static_cast<const T *>(v), *tdo = static_cast<const T *>(dout);
    const mf_linear_attention_state none = { nullptr, nullptr, nullptr, nullptr };
    const mf_linear_attention_state &st = state != nullptr ? *state : none;
    const mf_linear_attention_state_grad gnone = { nullptr, nullptr, nullptr, nullptr };
    const mf_linear_attention_state_grad &gr = grad != nullptr ? *grad : gnone;
    float *den = scratch, *dd = scratch + bh * (size_t)N, *zbuf = dd + bh * (size_t)N;
    const TcDims t = make_tc(bh, N, D, Dv, 0);
    float *ztot = zbuf + bh * t.nc * (size_t)t.E;

    mf_status rc = launch_rowstats<T, false>(stream, causal, t, tq, tk, out, tdo, st.initial_z, nullptr, 0,
                                             zbuf, ztot, den, dd);
    if (rc != MF_OK) return rc;
    Dims s = make_dims(causal, chunk, N, D, Dv);
    Dims sd = s; // slices of the D rows
    sd.n_slices = slices(s.D);
    sd.total = bh * sd.n_slices;
    la_dq_kernel<T><<<item_grid(sd.total), kThreads, 0, stream>>>(tq, tk, tv, tdo, den, dd, st.initial_kv,
                                                                  st.initial_z, dq, sd);
    MF_LAUNCH_CHECK();
    la_dk_kernel<T><<<item_grid(sd.total), kThreads, 0, stream>>>(
        tq, tk, tv, tdo, den, dd, gr.d_final_kv, gr.d_final_z, dk, gr.d_initial_kv, gr.d_initial_z, sd);
    MF_LAUNCH_CHECK();
    Dims sv = s; // slices of the Dv columns
    sv.n_slices = slices(s.Dv);
    sv.total = bh * sv.n_slices;
    la_dv_kernel<T><<<item_grid(sv.total), kThreads, 0, stream>>>(tq, tk, tdo, den, gr.d_final_kv, dv, sv);
    MF_LAUNCH_CHECK();
    return MF_OK;
}

} // namespace MF_NS
