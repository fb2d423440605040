/* memfix attention: standard (materialized scores) vs tiled exact attention.
 *
 * Source: seed document 003_40f96492a408fbef.txt ("Memory Profiling"),
 * function standard_attention:
 *     scores  = q @ k^T / sqrt(d_k)          # B x H x N x N: the big intermediate
 *     weights = softmax(scores, dim=-1)
 *     out     = weights @ v
 * with the usual optional causal mask (key j visible to query i iff j <= i).
 * The fix is FlashAttention-style tiling: exact softmax attention computed
 * tile by tile with an online softmax, never holding the N x N matrix.
 *
 * Math (per batch b < B, head h < H; q, k are N x D, v is N x Dv)
 * ---------------------------------------------------------------
 *   s[i,j]  = (sum_d q[i,d] k[j,d]) / sqrt(D)        (-inf where causal and j > i)
 *   lse[i]  = log sum_j exp(s[i,j])
 *   p[i,j]  = exp(s[i,j] - lse[i])
 *   out[i,c]= sum_j p[i,j] v[j,c]
 * Backward, given dout = dL/dout:
 *   dv[j,c] = sum_i p[i,j] dout[i,c]
 *   dp[i,j] = sum_c dout[i,c] v[j,c]
 *   Delta[i]= sum_j p[i,j] dp[i,j] = sum_c dout[i,c] out[i,c]
 *   ds[i,j] = p[i,j] (dp[i,j] - Delta[i])
 *   dq[i,d] = sum_j ds[i,j] k[j,d] / sqrt(D)
 *   dk[j,d] = sum_i ds[i,j] q[i,d] / sqrt(D)
 *
 * Non-finite values (the same in the tiled kernels and the reference; as
 * PyTorch's softmax and logsumexp do):
 *   - a NaN among a row's visible scores makes that row's out and lse NaN
 *     (the max propagates NaN; fmaxf would drop it);
 *   - every visible score of a row -inf: out NaN (0/0, as F.softmax gives)
 *     and lse = -inf (the log of an empty sum, as torch.logsumexp gives);
 *   - a +inf score: out and lse NaN (exp(inf - inf); torch.logsumexp would
 *     say +inf, but then the backward's p = exp(s - lse) would not be NaN
 *     where F.softmax's gradient is);
 *   - keys the causal mask hides get p = 0 and ds = 0 exactly (masked_fill's
 *     backward), so a NaN row spreads to dk/dv only through visible keys.
 *   NaN/Inf in v or dout, or in rows hidden by the mask, meets a zero weight
 *   in some products; whether 0 * NaN is formed there depends on the tiling
 *   and is not specified.
 *
 * Layouts: q, k are (B, H, N, D), v and dout are (B, H, N, Dv), row-major and
 * contiguous. out, dq, dk, dv are float (fp32) with the shapes of dout, q, k, v;
 * lse is (B, H, N) float (natural log). q, k, v and dout share one storage
 * dtype: MF_DTYPE_F32 (float) or MF_DTYPE_BF16 (bf16 bit patterns: uint16_t on
 * the host, __nv_bfloat16 on the device). All arithmetic is fp32 in the
 * optimized code and double in the reference; bf16 values widen exactly.
 * Limits of the tiled kernels: 1 <= D, Dv <= MF_ATTENTION_MAX_HEAD_DIM (128).
 * Any B, H, N whose byte counts fit size_t (blocks stride over the work items
 * when there are more than a grid holds).
 *
 * Variants
 * --------
 *   MF_ATTENTION_TILED  forward: one block per (b, h, tile of 16 queries);
 *     the query tile, a 16-key tile of k and v, the 16x16 score tile and the
 *     running max / sum live in shared memory; the output accumulator in
 *     registers; online softmax (m, l rescaled per key tile); causal tiles
 *     above the diagonal are skipped. It writes out and lse.
 *     backward: Delta[i] (B*H*N floats of device scratch) from dout and out,
 *     then dk/dv by key tiles (looping over query tiles) and dq by query tiles
 *     (looping over key tiles), both recomputing p tile by tile from q, k and
 *     the stored lse: no atomics, deterministic.
 *   Tensor-core path of MF_ATTENTION_TILED (optimized/attention_mma.cu; the
 *     default wherever it applies): bf16 storage, D == Dv in {64, 128}, and
 *     q, k, v (and dout) 16-byte aligned; everything else (fp32, other head
 *     dims) runs the SIMT kernels above. FlashAttention-2's algorithm on
 *     mma.sync.m16n8k16 (bf16 operands, fp32 accumulators) fed by ldmatrix:
 *     forward, one CTA per 256 queries (32 per warp) with K/V streamed in
 *     blocks by cp.async double buffering, online softmax in registers, P
 *     rounded to bf16 for P V, causal blocks above the diagonal skipped;
 *     backward, Delta precomputed, then one CTA per 128 keys holding dK and dV
 *     in registers
 *     while Q/dO stream by (5 GEMM-equivalents per tile), and dq accumulated
 *     by fp32 atomicAdd into the caller's dq (zeroed first on the stream).
 *     The atomics make dq NOT bitwise deterministic run to run (fp32 addition
 *     order varies); out, lse, dk and dv are deterministic. Its scratch is the
 *     same as the SIMT path's (the formulas below hold for both). Accuracy:
 *     tolerance rows attention.mma.{out,lse,grad}.bf16 (src/core/tolerance.c):
 *     P and dS are rounded to bf16 as mma operands (relative 2^-8 each),
 *     |out error| <= 2^-8 max|v| in the worst case (measured 1.1e-3).
 *     Design and performance argument: docs/attention.md.
 *
 * Memory (scratch = bytes beyond the caller's inputs and outputs; memfix.h)
 * -------------------------------------------------------------------------
 * Reference (host scratch, exact):
 *   forward : mf_ref_attention_forward_scratch_bytes  = 8 * B*H*N*N
 *             (the scores, double, softmaxed in place: the document's
 *              "B x H x N x N" attention matrix)
 *   backward: mf_ref_attention_backward_scratch_bytes = 16 * B*H*N*N
 *             (p and dp, double; ds overwrites dp)
 * Tiled, SIMT and tensor-core paths alike (device scratch, upper bound):
 *   forward : mf_attention_tiled_forward_scratch_ceiling  = 0
 *             (tiles are in on-chip shared memory; lse is a caller output)
 *   backward: mf_attention_tiled_backward_scratch_ceiling = 4 * B*H*N (Delta;
 *             the tensor-core path accumulates dQ in the caller's dq itself)
 * So the tiled scratch grows at most linearly in N, the reference's as N^2.
 * Formula functions return SIZE_MAX for a size <= 0 or on size_t overflow.
 *
 * The document's table (B=4, H=8, D=64, fp16, N = 512..8192) comes from
 * mf_attention_theoretical_memory below, with the true values (see there).
 */
#ifndef MEMFIX_ATTENTION_H
#define MEMFIX_ATTENTION_H

/* memfix/verify.h names each candidate type's header until this one is included */
#undef mf_attention_forward_candidate_fn
#undef mf_attention_backward_candidate_fn

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mf_attention_variant { MF_ATTENTION_TILED = 0 } mf_attention_variant;

#define MF_ATTENTION_N_VARIANTS 1
/* Largest D and Dv of the tiled kernels (shared-memory tiles are sized for it). */
#define MF_ATTENTION_MAX_HEAD_DIM 128
/* Queries per tile and keys per tile of the tiled kernels. */
#define MF_ATTENTION_TILE 16

/* "tiled"; NULL for a value out of range. */
MF_API const char *mf_attention_variant_name(mf_attention_variant v);

/* The signatures of the attention kernel entries: mf_attention_forward /
 * mf_attention_backward minus the variant. optimized/attention.cuh declares the
 * tiled variant's entries with them; `memfix verify` candidates (targets
 * "attention.forward" and "attention.backward") are functions of these types.
 * scale = 1/sqrt(D); causal 0/1. Forward: q, k (B,H,N,D), v (B,H,N,Dv) of
 * dtype; writes out (B,H,N,Dv) and lse (B,H,N, natural log of the row's sum of
 * exp(scaled scores)) floats. No scratch (ceiling 0). A forward candidate is
 * followed by memfix's tiled backward, fed the candidate's out and lse: dq, dk,
 * dv are compared too. Backward: also out, lse (memfix's forward's) and dout
 * (dtype); writes dq, dk (B,H,N,D) and dv (B,H,N,Dv) floats. Scratch ceiling:
 * 4*B*H*N bytes (one float per query row, e.g. delta = rowsum(dout * out)). */
typedef mf_status mf_attention_forward_kernel_fn(mf_context *ctx, mf_dtype dtype, int causal, int64_t B,
                                                 int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                                 const void *k, const void *v, float *out, float *lse);
typedef mf_status mf_attention_backward_kernel_fn(mf_context *ctx, mf_dtype dtype, int causal, int64_t B,
                                                  int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q,
                                                  const void *k, const void *v, const float *out,
                                                  const void *dout, const float *lse, float *dq, float *dk,
                                                  float *dv);
typedef mf_attention_forward_kernel_fn *mf_attention_forward_candidate_fn;
typedef mf_attention_backward_kernel_fn *mf_attention_backward_candidate_fn;

/* Tiled forward on ctx's backend. q, k, v: device buffers of 'dtype'
 * ((B,H,N,D), (B,H,N,D), (B,H,N,Dv)); out: (B,H,N,Dv) floats; lse: (B,H,N)
 * floats, or NULL when no backward will follow. causal: 0 or 1.
 * Asynchronous on the context's stream.
 * Errors: MF_ERR_NULL_POINTER (ctx, q, k, v, out), MF_ERR_INVALID_SIZE (a size
 * <= 0, D or Dv > MF_ATTENTION_MAX_HEAD_DIM), MF_ERR_OVERFLOW, MF_ERR_DTYPE,
 * MF_ERR_INVALID_ARGUMENT (variant, causal not 0/1), MF_ERR_BACKEND_UNAVAILABLE,
 * MF_ERR_BACKEND. */
MF_API mf_status mf_attention_forward(mf_context *ctx, mf_attention_variant variant, mf_dtype dtype,
                                      int causal, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                                      const void *q, const void *k, const void *v, float *out, float *lse);

/* Tiled backward. q, k, v, dout: device buffers of 'dtype'; out and lse: the
 * forward's outputs (floats); dq, dk, dv: float outputs (overwritten).
 * Device scratch: at most mf_attention_tiled_backward_scratch_ceiling bytes.
 * Errors: as mf_attention_forward (every pointer required), plus
 * MF_ERR_OUT_OF_MEMORY. */
MF_API mf_status mf_attention_backward(mf_context *ctx, mf_attention_variant variant, mf_dtype dtype,
                                       int causal, int64_t B, int64_t H, int64_t N, int64_t D, int64_t Dv,
                                       const void *q, const void *k, const void *v, const float *out,
                                       const void *dout, const float *lse, float *dq, float *dk, float *dv);

/* The reference (executable specification), host pointers, double arithmetic.
 * Forward materializes the scores (8*B*H*N*N bytes of host scratch); lse may
 * be NULL. Backward is self-contained (recomputes p from q and k; it needs
 * neither out nor lse) and materializes p and dp (16*B*H*N*N bytes). No limit
 * on D or Dv. Errors as above, plus MF_ERR_OUT_OF_MEMORY. */
MF_API mf_status mf_ref_attention_forward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H,
                                          int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                          const void *v, float *out, float *lse);
MF_API mf_status mf_ref_attention_backward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H,
                                           int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                           const void *v, const void *dout, float *dq, float *dk, float *dv);

/* ---- memory formulas (bytes; SIZE_MAX for sizes <= 0 or overflow) ------------ */
MF_API size_t mf_ref_attention_forward_scratch_bytes(int64_t B, int64_t H, int64_t N);
MF_API size_t mf_ref_attention_backward_scratch_bytes(int64_t B, int64_t H, int64_t N);
MF_API size_t mf_attention_tiled_forward_scratch_ceiling(int64_t B, int64_t H, int64_t N);
MF_API size_t mf_attention_tiled_backward_scratch_ceiling(int64_t B, int64_t H, int64_t N);

/* ---- the document's theoretical memory table ---------------------------------
 * theoretical_memory(batch_size, num_heads, seq_len, head_dim, dtype) of the
 * seed document, in bytes (the document prints MB = bytes / 1e6), with
 * e = element bytes (2 for fp16):
 *   inputs              = 3 * B*H*N*D * e
 *   standard_scores     = B*H*N*N * e          standard_peak      = inputs + scores
 *   linear_bidir_state  = B*H*D*D * e          linear_bidir_peak  = inputs + state
 *   linear_causal_state = B*H*N*D*D * e        linear_causal_peak = inputs + state
 * At B=4, H=8, D=64, fp16 the true values are: KV state 262,144 B = 0.26 MB
 * (the document's prose says "2 MB"), cumulative KV at N=8192 2,147,483,648 B
 * = 2.1 GB (the prose says "17 GB"): the prose is 8x off in both; its 4.3 GB
 * for the N=8192 scores is right. tests/memory/test_attention_memory.c asserts
 * the true values. */
typedef struct mf_attention_memory_row {
    int64_t seq_len;
    size_t inputs;
    size_t standard_scores;
    size_t standard_peak;
    size_t linear_bidir_state;
    size_t linear_bidir_peak;
    size_t linear_causal_state;
    size_t linear_causal_peak;
} mf_attention_memory_row;

/* Fills *out for the given shape and element size. MF_ERR_NULL_POINTER,
 * MF_ERR_INVALID_SIZE (a size <= 0, elem_bytes 0), MF_ERR_OVERFLOW. */
MF_API mf_status mf_attention_theoretical_memory(int64_t B, int64_t H, int64_t N, int64_t D,
                                                 size_t elem_bytes, mf_attention_memory_row *out);

#ifdef __cplusplus
}
#endif

#endif /* MEMFIX_ATTENTION_H */
