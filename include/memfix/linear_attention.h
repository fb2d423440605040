/* memfix linear_attention: bidirectional and causal linear attention; the causal
 * form from the materialized cumsum to chunks.
 *
 * Source: seed document 003_40f96492a408fbef.txt ("Memory Profiling"),
 * functions linear_attention_bidir and linear_attention_causal:
 *     q = F.elu(q) + 1;  k = F.elu(k) + 1
 *     bidir : kv = einsum('bhnd,bhnv->bhdv', k, v); k_sum = k.sum(dim=2)
 *             out = einsum('bhnd,bhdv->bhnv', q, kv) / (einsum(q, k_sum) + eps)
 *     causal: kv = einsum('bhnd,bhnv->bhndv', k, v)       # B x H x N x D x Dv
 *             kv_cumsum = cumsum(kv, dim=2); k_cumsum = cumsum(k, dim=2)
 *             out = einsum('bhnd,bhndv->bhnv', q, kv_cumsum) / (einsum(q, k_cumsum) + eps)
 * eps = 1e-6 (MF_LINEAR_ATTENTION_EPS). The document's "Causal Linear Attention
 * Dilemma": kv_cumsum is B*H*N*D*Dv, worse than standard attention's N^2 once
 * D*Dv > N; its fixes are chunked processing, a recurrent form, a parallel scan
 * with checkpointing. memfix implements the chunked form.
 *
 * Math (per batch b, head h; phi(x) = elu(x) + 1 = x > 0 ? x + 1 : exp(x) > 0)
 * ----------------------------------------------------------------------------
 *   q'_n = phi(q_n), k'_m = phi(k_m)                        (D-vectors)
 *   causal: S_n = S0 + sum_{m<=n} k'_m v_m^T  (D x Dv),  z_n = z0 + sum_{m<=n} k'_m  (D)
 *   bidir : S_n = S   = sum_m k'_m v_m^T,                z_n = z   = sum_m k'_m
 *   den_n = q'_n . z_n + eps,   out_n = (q'_n^T S_n) / den_n             (Dv)
 * (S0, z0): the optional initial state (causal only; zeros when absent). The
 * final state (S_N, z_N) can be returned, so a sequence split in two calls,
 * the second starting from the first's final state, equals one call
 * (flash-linear-attention issue #494 was that property being broken).
 * Backward, given dout_n (and optionally dS_N, dz_N, the final state's
 * gradients):
 *   dnum_n = dout_n / den_n,   dd_n = -(dout_n . out_n) / den_n
 *   G_m = dS_N + sum_{n>=m} q'_n dnum_n^T,  g_m = dz_N + sum_{n>=m} dd_n q'_n  (causal)
 *   G   = sum_n q'_n dnum_n^T,              g   = sum_n dd_n q'_n              (bidir)
 *   dq_n = phi'(q_n) * (S_n dnum_n + dd_n z_n)
 *   dk_m = phi'(k_m) * (G_m v_m + g_m),     dv_m = G_m^T k'_m
 *   dS0 = G_1, dz0 = g_1  (gradients of the initial state)
 *   phi'(x) = x > 0 ? 1 : exp(x)
 *
 * Non-finite inputs (fp32 chunked kernels and reference alike): a NaN or Inf
 * reaches exactly the outputs whose sums above contain it. Causal: a NaN in
 * v_m reaches out_n for n >= m only; one in q_n reaches out_n, dq_n and the
 * dk_m, dv_m of m <= n (through G_m, g_m). The fp32 kernels skip a chunk's
 * masked (m > n) terms instead of weighting them by 0, which would make 0 * NaN.
 * The bf16 tensor-core path (as flash-linear-attention's chunk kernels) zeroes
 * masked scores and multiplies them on an mma tile: a non-finite value there can
 * also reach the earlier rows of its 16- or 32-row mma tile.
 *
 * Layouts: q, k (B,H,N,D); v, dout (B,H,N,Dv); storage dtype MF_DTYPE_F32 or
 * MF_DTYPE_BF16 shared by q, k, v, dout. out, dq, dk, dv are float with the
 * shapes of dout, q, k, v. States are float: S (B,H,D,Dv), z (B,H,D). fp32
 * arithmetic in the optimized code, double in the reference.
 *
 * Optimized variants
 * ------------------
 *   causal, bf16 storage: tensor cores, in flash-linear-attention's chunk form.
 *     A chunk state every 512 rows, out and dq in 128-row tiles (8 warps x 16
 *     rows), dk and dv together in 64-row tiles (8 warps: 4 for dk, 4 for dv);
 *     C (the fp32 path's chunk) does not apply. (1) every chunk's own state
 *     K'_c^T V_c and sum k'_m in parallel
 *     (mma.sync m16n8k16, bf16 operands, phi(k) as hi + lo bf16 so the states
 *     keep fp32 accuracy; fp32 accumulation), (2) an exclusive
 *     scan over chunks in fp32 (from S0, z0; the final state is its total),
 *     (3) every 64-row tile in parallel: Q' S_prev + mask(Q'K'^T) V on tensor
 *     cores, den in fp32. The backward recomputes the states, then den_n, dd_n
 *     (2 floats per position), dq from S_prev (dN S^T + mask(dN V^T + dd) K'),
 *     the reverse states Q'_c^T dN_c, sum dd q' and their reverse scan (from
 *     dS_N, dz_N; dS0, dz0 are its total), and dk, dv from G_next (V G^T +
 *     mask(V dN^T + dd)^T-side Q', K' G + mask(K'Q'^T) dN). phi(q), phi(k) and
 *     dout/den are rounded to bf16 once and used consistently (products, z,
 *     den); states are summed in fp32 and rounded to bf16 only as mma operands.
 *   causal, fp32 storage (chunk C, a power of two in [16, 128]): SIMT fp32; one
 *     block per (b, h, slice of 32 state columns) walks the sequence chunk by
 *     chunk, carrying its D x 32 slice of S and all of z in shared memory:
 *     within a chunk the masked C x C products q'.k'^T (in 16 x 16 sub-tiles),
 *     across chunks the state. N need not be a multiple of C. Backward
 *     recomputes the states chunk by chunk (a forward sweep for dq, reverse
 *     sweeps carrying G and g for dk and dv) instead of storing them.
 *   bidirectional (fp32 and bf16 storage, SIMT): the same kernels in two
 *     phases: first the whole state (S, z for the forward; G, g for the
 *     backward) into the block's shared memory, then every position's output.
 *   Every backward: den_n and dd_n from the chunks' z (summed per 256-row chunk
 *     in parallel and scanned; the tensor-core path's 512-row states) by one
 *     block per (b, h, 64-row tile).
 *
 * Memory (bytes; scratch beyond inputs and outputs, see memfix.h)
 * ---------------------------------------------------------------
 * Reference (host scratch, exact; double):
 *   causal forward : 8 * B*H*N*D*(Dv+1)     kv_cumsum (B,H,N,D,Dv) + k_cumsum (B,H,N,D)
 *   causal backward: 16 * B*H*N*D*(Dv+1)    those two, plus their gradients (the
 *                                            reverse cumsums autograd materializes)
 *   bidir forward  : 8 * B*H*D*(Dv+1)       kv + k_sum
 *   bidir backward : 16 * B*H*D*(Dv+1)      kv, k_sum and their gradients
 * Optimized (device scratch for any C; nc = ceil(N/512), the tensor-core path's
 * state chunks, nz = ceil(N/256), the z chunks of the SIMT paths; exact for the
 * tensor-core path, an upper bound for fp32 storage):
 *   causal forward : 4 * B*H*nc*D*(Dv+1)             the chunk states (bf16 path;
 *                                                      fp32 path: 0)
 *   causal backward: 4 * B*H*nc*D*(Dv+1) + 8*B*H*N    chunk states (fp32 path: only
 *                                                      a z per 256 rows, 4*B*H*nz*D
 *                                                      <= 4*B*H*nc*D*(Dv+1)), den_n, dd_n
 *   bidir forward  : 0                                 state slices in shared memory
 *   bidir backward : 4 * B*H*(nz+1)*D + 8*B*H*N        chunk z sums and the total z,
 *                                                      den_n, dd_n
 * The chunked scratch grows as N/512 * D*(Dv+1) (one state per 512 positions,
 * the price of computing the chunks in parallel) plus 8 bytes per position,
 * while the cumsum reference grows as 8*N*D*(Dv+1): the ceiling is below the
 * reference at every N (4*ceil(N/512) < 8*N), 1/1024 of it at large N. The bidirectional form is the document's
 * memory-efficient baseline, not a fix: its reference is already O(D*Dv), so
 * its backward's O(N) row statistics exceed the reference's 16*B*H*D*(Dv+1)
 * once N is larger than about 2*D*(Dv+1).
 * Formula functions return SIZE_MAX for sizes <= 0 or size_t overflow.
 */
#ifndef MEMFIX_LINEAR_ATTENTION_H
#define MEMFIX_LINEAR_ATTENTION_H

/* memfix/verify.h names each candidate type's header until this one is included */
#undef mf_linear_attention_forward_candidate_fn
#undef mf_linear_attention_backward_candidate_fn

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MF_LINEAR_ATTENTION_EPS 1e-6
#define MF_LINEAR_ATTENTION_MIN_CHUNK 16
#define MF_LINEAR_ATTENTION_MAX_CHUNK 128
/* Largest D and Dv of the optimized kernels. */
#define MF_LINEAR_ATTENTION_MAX_HEAD_DIM 128

/* Both state structs below are the same four buffers: a (kv, z) pair that is
 * read, shape (B,H,D,Dv) and (B,H,D), then a (kv, z) pair that is written.
 * Every field may be NULL. (Local to this header.) */
#define MF_LA_STATE_FIELDS_(in_kv, in_z, out_kv, out_z)                                                      \
    const float *in_kv;                                                                                      \
    const float *in_z;                                                                                       \
    float *out_kv;                                                                                           \
    float *out_z

/* Recurrent state of the causal form (device buffers for the optimized entry
 * points, host buffers for the reference):
 *   initial_kv, initial_z: S0, z0 (NULL: zeros);
 *   final_kv, final_z: outputs S_N, z_N (NULL: not written). */
typedef struct mf_linear_attention_state {
    MF_LA_STATE_FIELDS_(initial_kv, initial_z, final_kv, final_z);
} mf_linear_attention_state;

/* Gradients of the state for the causal backward:
 *   d_final_kv, d_final_z: dL/dS_N, dL/dz_N from whatever consumed the final
 *     state (NULL: zeros);
 *   d_initial_kv, d_initial_z: outputs dL/dS0, dL/dz0 (NULL: not written). */
typedef struct mf_linear_attention_state_grad {
    MF_LA_STATE_FIELDS_(d_final_kv, d_final_z, d_initial_kv, d_initial_z);
} mf_linear_attention_state_grad;
#undef MF_LA_STATE_FIELDS_

/* Optimized forward on ctx's backend (device buffers). causal: 0 or 1. chunk:
 * C for the causal form (power of two in [16, 128]); ignored when causal == 0.
 * state: NULL or the causal state (must be NULL or all-NULL when causal == 0).
 * Errors: MF_ERR_NULL_POINTER (ctx, q, k, v, out), MF_ERR_INVALID_SIZE (sizes
 * <= 0, D or Dv > 128, chunk out of range or not a power of two),
 * MF_ERR_OVERFLOW, MF_ERR_DTYPE, MF_ERR_INVALID_ARGUMENT (causal not 0/1, a
 * state with causal == 0), MF_ERR_BACKEND_UNAVAILABLE, MF_ERR_OUT_OF_MEMORY,
 * MF_ERR_BACKEND. */
typedef mf_status mf_linear_attention_forward_fn(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk,
                                                 int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                                                 const void *q, const void *k, const void *v,
                                                 const mf_linear_attention_state *state, float *out);
MF_API mf_linear_attention_forward_fn mf_linear_attention_forward;

/* Optimized backward. out: the forward's output. state: only initial_kv /
 * initial_z are read (the same as the forward's); grad: NULL or the state
 * gradients (causal only). dq, dk, dv overwritten. */
typedef mf_status mf_linear_attention_backward_fn(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk,
                                                  int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                                                  const void *q, const void *k, const void *v,
                                                  const float *out, const void *dout,
                                                  const mf_linear_attention_state *state,
                                                  const mf_linear_attention_state_grad *grad, float *dq,
                                                  float *dk, float *dv);
MF_API mf_linear_attention_backward_fn mf_linear_attention_backward;

/* The two function types above are also those of the kernel entries
 * (optimized/linear_attention.cuh) and of `memfix verify` candidates (targets
 * "linear_attention.forward" and "linear_attention.backward"), each run on
 * every built-in case causal (chunk = the case's C) and then bidirectional
 * (causal = 0, state and grad NULL). Causal runs carry a recurrent state, all
 * float device buffers: forward reads state->initial_kv/initial_z and writes
 * state->final_kv/final_z; backward reads state->initial_kv/initial_z and
 * grad->d_final_kv/d_final_z and writes grad->d_initial_kv/d_initial_z. q, k,
 * v, dout are of dtype; out, dq, dk, dv float. A backward candidate gets the
 * reference's out. The candidate's own outputs are compared: out and the
 * final state (forward); dq, dk, dv and the initial state's gradients
 * (backward); bf16 causal under the tensor-core rows (*.bf16_mma). Scratch
 * ceiling: mf_linear_attention_scratch_ceiling of its pass. */
typedef mf_linear_attention_forward_fn *mf_linear_attention_forward_candidate_fn;
typedef mf_linear_attention_backward_fn *mf_linear_attention_backward_candidate_fn;

/* The reference (host pointers, double arithmetic): exactly the document's
 * einsum/cumsum computation, materializing kv_cumsum and k_cumsum (causal) or
 * kv and k_sum (bidir) in host scratch. Backward is self-contained (it does not
 * need out). No limit on D or Dv. */
MF_API mf_status mf_ref_linear_attention_forward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B,
                                                 int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                                 const void *k, const void *v,
                                                 const mf_linear_attention_state *state, float *out);
MF_API mf_status mf_ref_linear_attention_backward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B,
                                                  int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                                  const void *k, const void *v, const void *dout,
                                                  const mf_linear_attention_state *state,
                                                  const mf_linear_attention_state_grad *grad, float *dq,
                                                  float *dk, float *dv);

/* ---- memory formulas (bytes; SIZE_MAX for sizes <= 0 or overflow) ---------- */
MF_API size_t mf_ref_linear_attention_scratch_bytes(int causal, int backward, int64_t B, int64_t H, int64_t N,
                                                    int64_t D, int64_t Dv);
MF_API size_t mf_linear_attention_scratch_ceiling(int causal, int backward, int64_t B, int64_t H, int64_t N,
                                                  int64_t D, int64_t Dv);

/* 1 when chunk is a valid C (a power of two in [16, 128]), else 0. */
MF_API int mf_linear_attention_chunk_valid(int64_t chunk);

/* 1 when the recurrent state (or its gradient) names any buffer: the call
 * carries a state, which only the causal form takes. NULL: 0. Shared by the
 * reference and the entry points' argument checks. */
MF_API int mf_linear_attention_state_any(const mf_linear_attention_state *s);
MF_API int mf_linear_attention_state_grad_any(const mf_linear_attention_state_grad *g);

#ifdef __cplusplus
}
#endif

#endif /* MEMFIX_LINEAR_ATTENTION_H */
