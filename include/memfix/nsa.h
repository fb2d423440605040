/* memfix nsa: Native Sparse Attention, three masked dense branches vs a fused
 * block-sparse kernel.
 *
 * Source: seed document 001_8c71c68d431e0a4d.txt ("NSA M7C Memory Diagnostic
 * Report"): a 125M NSA model (12 query heads, 2 KV groups, head dim 64) ran out
 * of memory at sequence 4096 and was cut to 1024; its selected branch was
 * "standard SDPA with block gathering" and the document blames the O(S^2)
 * attention elements per head. Configuration as the seed's: l=32, d=16,
 * l'=64, n=16, w=512, phi = "avg" (mean pooling). The branch equations follow
 * the NSA paper (arXiv 2502.11089, equations 7-10) as the seed states them.
 *
 * Math (per batch b, query token t < S, query head h < Hq, KV group
 * g = h / (Hq/Hk); scale = cfg.scale, 0 meaning 1/sqrt(D))
 * -----------------------------------------------------------------------
 * Compression: nc = S >= l ? (S - l)/d + 1 : 0 compressed blocks;
 *   kc[j] = mean_{s in [j*d, j*d+l)} k[s],  vc[j] likewise (phi = mean);
 *   bf16 storage: kc, vc are bf16 tensors, as every tensor of a bf16 model
 *   (the seed's compressed branch ran FlashAttention, bf16 inputs only): the
 *   mean accumulated in double in s order, divided by l, then rounded once to
 *   bf16 (via float, nearest even; gradients straight through the rounding);
 *   visible to t iff j*d + l - 1 <= t (the block ends at or before t);
 *   pc[t,j] = softmax_j(scale * q[t].kc[j]) over the visible j;
 *   o_cmp[t] = sum_j pc[t,j] vc[j]; no visible block -> o_cmp[t] = 0.
 * Selection (per t and KV group g, shared by the group's heads): nb = ceil(S/l')
 *   selection blocks, block i covers tokens [i*l', (i+1)*l');
 *   imp[t,i] = sum_{h in g} sum_{j visible, j overlaps block i} pc_h[t,j]
 *     (j overlaps block i iff j*d < (i+1)*l' and j*d + l > i*l'; each
 *      overlapping compressed block counted once);
 *   candidates: blocks with i*l' <= t; block 0, block t/l' and block t/l' - 1
 *   are forced (importance +inf); the n candidates of highest importance are
 *   selected, ties to the lower index; fewer than n candidates -> all.
 *   o_slc[t] = softmax attention of q[t] over the tokens s <= t of the
 *   selected blocks (always non-empty: the block of t is forced).
 * Sliding window: o_win[t] = softmax attention over s in (t - w, t].
 * Output: o[t] = g_cmp[t] o_cmp[t] + g_slc[t] o_slc[t] + g_win[t] o_win[t].
 * lse (per t and head, three floats: cmp, slc, win) = log sum exp of the
 * branch's visible scaled scores (-inf for an empty compression branch).
 * sel (per t and KV group, n int32) = the selected block indices in
 * increasing order, -1 padding when fewer than n were candidates.
 *
 * Layouts (row-major, contiguous): q (B,S,Hq,D); k, v (B,S,Hk,D); gates
 * g_cmp, g_slc, g_win (B,S,Hq); out (B,S,Hq,D) float; lse (B,S,Hq,3) float;
 * sel (B,S,Hk,n) int32. q, k, v and the gates share one storage dtype,
 * MF_DTYPE_F32 or MF_DTYPE_BF16; arithmetic is fp32 in the optimized code and
 * double in the reference. Hq must be a multiple of Hk; l and l' multiples of d.
 *
 * Non-finite values: NaN/Inf in v, or in a compressed vc, of a key that a
 * query's branch does not see, but which shares a tile or stage with keys it
 * does see, meets a zero weight in the optimized products (p = 0, ds = 0); the
 * reference never reads it. Whether 0 * NaN is formed there depends on the
 * tiling and is not specified, as in memfix/attention.h.
 *
 * Memory (scratch = bytes beyond the caller's inputs and outputs)
 * ---------------------------------------------------------------
 * Reference (host scratch, exact: the broken code's dense masked branches):
 *   mf_ref_nsa_forward_scratch_bytes =
 *       8 * B*Hq*S*(nc + 2*S)     compression scores S x nc, selected and
 *                                 sliding scores S x S per head (double)
 *     + 8 * B*Hk*S*nb             block importances (double)
 *     + 8 * 2*B*Hk*nc*D           compressed k and v (double)
 *     + 1 * B*Hk*S*nb             the selection mask
 *     + S                         one row's branch mask
 *   mf_ref_nsa_backward_scratch_bytes = the forward's (peak: the forward's block
 *     is held while the backward's is allocated)
 *     + 8 * (4*B*S*Hk*D           k, v as doubles, the dk and dv accumulators
 *            + 2*B*Hk*nc*D        the dkc and dvc accumulators
 *            + 4*D)               q, g*dout, o and dq rows
 * Fused (device scratch, upper bound):
 *   mf_nsa_forward_scratch_ceiling = 4 * 2*B*Hk*nc*D   (compressed k and v in fp32;
 *                                    the bf16 tensor-core compression kernel keeps
 *                                    them in bf16, half of it: an upper bound)
 *                                  + (nc > 0) * (8 * B*S*Hk + 8 + 4 * B*Hk)
 *                                    (the compression kernel's certificate: the
 *                                    list of tokens to rank again, at most every
 *                                    (b, t, KV group), its count, max |kc| per
 *                                    (b, KV group); the bf16 tensor-core path)
 *                                  + 4 * B*S*Hk*n      (the selection, held by the
 *                                    bf16 tensor-core path when sel is NULL)
 *   mf_nsa_backward_scratch_ceiling = max(4 * 4*B*Hk*nc*D  (kc, vc and their
 *     gradient accumulators dkc, dvc, fp32; bf16 D <= 64 holds kc, vc in bf16:
 *     12*B*Hk*nc*D), the forward's without the selection term): a forward then
 *     a backward peak at it
 *   The per-query statistics (lse, 12*B*S*Hq bytes) and the selected indices
 *   (4*B*S*Hk*n bytes), which a backward needs, are caller outputs.
 * So the fused code's memory is linear in S, the reference's quadratic.
 * Formula functions return SIZE_MAX for a size <= 0 or on size_t overflow.
 *
 * Variants
 * --------
 *   MF_NSA_FUSED. Forward: compressed k/v pooled once by a separate kernel
 *   (f32 storage: fp32 means; bf16: the spec's bf16 values above, bit for
 *   bit); then
 *   - f32 storage, or bf16 with D not in {16, 32, 64, 128} or q/k/v not
 *     16-byte aligned: one thread block (128 threads) per (b, t, KV group)
 *     loops over the group's heads: the compression branch with a chunked
 *     online softmax over the compressed keys, the block importances of t
 *     recomputed from the compression lse, 1024 candidate blocks per tile, each
 *     tile merged into the running top n by parallel ranking (shared memory
 *     independent of S; n <= MF_NSA_MAX_N_SEL), then the selected and sliding
 *     branches, online softmax over only their keys; SIMT, fp32 throughout;
 *   - bf16, D in {16, 32, 64, 128}, aligned: everything on the tensor cores
 *     (mma.sync m16n8k16, bf16 in, fp32 accumulate, ldmatrix fed from shared
 *     tiles). Compression branch and importances (D <= 64 and n <= 32; else
 *     the SIMT kernel above): FlashAttention over the compressed keys, one CTA
 *     per (b, KV group, min(32, 128/G) tokens) whose 128 rows are the tokens'
 *     heads, causal at compressed-block granularity; a second pass over the
 *     same key tiles gives p = exp(s - lse), summed per (token, block) in a
 *     fixed order and merged into each token's running top n by ranking. kc
 *     and vc are bf16 (the spec's), staged by cp.async straight into the mma
 *     tiles: the scores are fp32 sums of exact products, so the scores, lse
 *     and importances are as accurate as fp32 SIMT ones; P is rounded to bf16
 *     once for P V (l sums the fp32 p), so o_cmp carries that rounding as the
 *     selected and sliding branches do. The selection is certified: per token the kernel keeps the smallest selected non-forced
 *     importance and the largest dropped one, and lists a token whose margin
 *     is within the importances' stated error bound (docs/nsa.md
 *     "Precision"); nsa_recheck_kernel then ranks the listed tokens again in
 *     double as the reference does (scores on the bf16 kc in scratch, softmax,
 *     importances, top n)
 *     and rewrites their sel rows before the next kernel reads them, so the
 *     selection is the reference's, ties included. MF_NSA_RECHECK=all in
 *     the environment (a testing aid; another non-empty value is
 *     MF_ERR_INVALID_ARGUMENT) lists every token and leaves sel to the
 *     fallback alone. The SIMT kernel (f32, D = 128, n > 32)
 *     keeps its fp32 ranking without a certificate. Selected
 *     and sliding branches, query-blocked: one CTA per (b, KV group,
 *     min(32, 128/G) consecutive tokens) whose 128 rows hold the tokens' heads
 *     (G <= 2: min(32, 64/G) tokens, 64 rows, as the backward);
 *     each 16-key K/V tile of the union of the tokens' selected blocks (merged
 *     from their sorted sel lists) and of the union of their windows is staged
 *     once per CTA (cp.async, double-buffered) and multiplied by every row
 *     with a per-row mask (the row's token selected the block; s <= t; the
 *     window's t - w < s); P rounded to bf16 before P V as a bf16 kernel does
 *     (l sums the fp32 p), in all three branches: each branch's o moves by
 *     at most 2^-8 max|v| (bf16's unit roundoff), far less in practice
 *     (tolerance row nsa.out.bf16).
 *     On a cc 9.0 GPU (a build with sm_90 gets this file's sm_90a code) both
 *     bf16 forward kernels run on warpgroup MMA instead (wgmma.mma_async: each
 *     128-row CTA as two m64 warpgroups; nsa_wg_cmp_kernel with 64-key kc/vc
 *     tiles, nsa_wg_fwd_kernel with the same K/V stages; the two warpgroups
 *     scheduled ping-pong through named barriers): the same products,
 *     outputs, certificate and tolerances. MF_NSA_MMA_PATH=auto (default:
 *     wgmma where it runs, mma.sync elsewhere and in host mode), sync or wgmma
 *     (forced; where it cannot run MF_ERR_BACKEND_UNAVAILABLE; host mode
 *     emulates it) picks them per process; another value is
 *     MF_ERR_INVALID_ARGUMENT.
 *   Backward, FlashAttention-2 style from the forward's saved lse and sel: per
 *   branch, o recomputed (for dg and Delta = gate dout.o), p = exp(s - lse)
 *   over the keys of the saved sel, ds = p (gate dout.v - Delta), dq in
 *   registers, dk/dv (and the compressed dkc/dvc, spread back through the mean
 *   pooling) accumulated in fp32 by atomicAdd, since the group's heads share
 *   their selected blocks and neighbouring queries' blocks and windows hit the
 *   same keys: not bitwise deterministic, so `memfix verify`'s determinism
 *   defense would reject it as a candidate. f32 (or bf16 not eligible as
 *   above): SIMT, one thread block per (b, t, KV group). bf16, D in {16, 32,
 *   64, 128}, aligned (dout too): the selected and sliding branches on the
 *   tensor cores (S, dP, dQ, dK, dV products on mma.sync, dS and gate*P
 *   rounded to bf16: tolerance row nsa.grad.bf16), query-blocked (one CTA
 *   per (b, KV group, min(32, 64/G) tokens), each K/V stage
 *   of the tokens' union of selections and windows loaded once per CTA, dk/dv
 *   added once per (key, column) and CTA); for
 *   D <= 64 the compression branch's too (one CTA per (b, KV group,
 *   min(16, 64/G) tokens), 64 rows, bf16 kc/vc tiles, dkc/dvc
 *   added per warp and 16-key tile); D = 128: that branch SIMT.
 *   docs/nsa.md: the design against the S = 65536 target (6x dense attention):
 *   projected 3.1-3.6x on the wgmma kernels (not measured). At D = 64 every
 *   kernel of the ratio, the dense baseline included, is bound by issuing its
 *   per-score softmax instructions. The spec's two compression passes (an
 *   importance needs each head's final lse) issue 5588 exponentials per query
 *   and head against dense attention's 32768: at most 5.86x at an equal cost
 *   per exponential. 6x is not met by design; docs/nsa.md ("Status against
 *   the 6x target") says why and what would change it.
 */
#ifndef MEMFIX_NSA_H
#define MEMFIX_NSA_H

/* memfix/verify.h names each candidate type's header until this one is included */
#undef mf_nsa_forward_candidate_fn
#undef mf_nsa_backward_candidate_fn

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mf_nsa_variant { MF_NSA_FUSED = 0 } mf_nsa_variant;
#define MF_NSA_N_VARIANTS 1
/* Largest D of the fused kernel. */
#define MF_NSA_MAX_HEAD_DIM 128
/* Largest Hq/Hk of the fused kernel. */
#define MF_NSA_MAX_GROUP 16
/* Largest n (cfg.n_sel) of the fused forward: its running top-n list lives in
 * shared memory. S itself is unlimited: the importances are ranked 1024
 * candidate blocks at a time. */
#define MF_NSA_MAX_N_SEL 512

typedef struct mf_nsa_config {
    int64_t block_cmp; /* l: compression block length */
    int64_t stride;    /* d: compression stride (divides l and l') */
    int64_t block_sel; /* l': selection block length */
    int64_t n_sel;     /* n: selected blocks per query */
    int64_t window;    /* w: sliding window */
    float scale;       /* 0: 1/sqrt(D) */
} mf_nsa_config;

/* The seed's configuration: l=32, d=16, l'=64, n=16, w=512, scale 1/sqrt(D). */
MF_API mf_nsa_config mf_nsa_config_seed(void);
/* "fused"; NULL for a value out of range. */
MF_API const char *mf_nsa_variant_name(mf_nsa_variant v);

/* Number of compressed blocks (nc) and selection blocks (nb) for S; -1 on bad input. */
MF_API int64_t mf_nsa_n_compressed(const mf_nsa_config *cfg, int64_t S);
MF_API int64_t mf_nsa_n_selection(const mf_nsa_config *cfg, int64_t S);

/* Validates dtype, configuration and shape (every size > 0, Hq % Hk == 0,
 * l % d == 0, l' % d == 0, every buffer's bytes fit size_t); the error
 * message names 'func'. Used by the reference and the fused entry alike. */
MF_API mf_status mf_nsa_validate(const char *func, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                                 int64_t S, int64_t Hq, int64_t Hk, int64_t D);

/* The kernel entry (optimized/nsa.cuh) and `memfix verify` candidate type:
 * device pointers; lse and sel may be NULL. */
typedef mf_status mf_nsa_forward_kernel_fn(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                                           int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                                           const void *q, const void *k, const void *v, const void *g_cmp,
                                           const void *g_slc, const void *g_win, float *out, float *lse,
                                           int32_t *sel);
typedef mf_nsa_forward_kernel_fn *mf_nsa_forward_candidate_fn;
/* Backward entry: lse and sel are the forward's (required); writes dq, dk, dv,
 * dg_cmp, dg_slc, dg_win (floats, overwritten). */
typedef mf_status mf_nsa_backward_kernel_fn(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                                            int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                                            const void *q, const void *k, const void *v, const void *g_cmp,
                                            const void *g_slc, const void *g_win, const void *dout,
                                            const float *lse, const int32_t *sel, float *dq, float *dk,
                                            float *dv, float *dg_cmp, float *dg_slc, float *dg_win);
typedef mf_nsa_backward_kernel_fn *mf_nsa_backward_candidate_fn;

/* Fused forward on ctx's backend (device buffers). Errors: MF_ERR_NULL_POINTER,
 * MF_ERR_INVALID_SIZE (a size <= 0, D > MF_NSA_MAX_HEAD_DIM, Hq/Hk >
 * MF_NSA_MAX_GROUP), MF_ERR_INVALID_ARGUMENT (variant, Hq % Hk, config,
 * cfg.n_sel > MF_NSA_MAX_N_SEL; no limit on S or ceil(S/l')),
 * MF_ERR_OVERFLOW, MF_ERR_DTYPE, MF_ERR_OUT_OF_MEMORY, MF_ERR_BACKEND*. */
MF_API mf_status mf_nsa_forward(mf_context *ctx, mf_nsa_variant variant, mf_dtype dtype,
                                const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk,
                                int64_t D, const void *q, const void *k, const void *v, const void *g_cmp,
                                const void *g_slc, const void *g_win, float *out, float *lse, int32_t *sel);

/* Whether MF_NSA_MMA_PATH=wgmma can run on the context's device: as
 * mf_cross_entropy_wgmma_available (cross_entropy.h), for NSA's wgmma kernels
 * (their own sm_90a code and probe). */
MF_API mf_status mf_nsa_wgmma_available(mf_context *ctx, int *available);

/* Fused backward (device buffers), FlashAttention-style from the forward's
 * saved lse and sel: probabilities recomputed, dk/dv accumulated with
 * atomicAdd (float sums in a non-deterministic order), dkc/dvc spread back
 * through the mean pooling. Device scratch: mf_nsa_backward_scratch_ceiling.
 * Errors as mf_nsa_forward (every pointer required). */
MF_API mf_status mf_nsa_backward(mf_context *ctx, mf_nsa_variant variant, mf_dtype dtype,
                                 const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk,
                                 int64_t D, const void *q, const void *k, const void *v, const void *g_cmp,
                                 const void *g_slc, const void *g_win, const void *dout, const float *lse,
                                 const int32_t *sel, float *dq, float *dk, float *dv, float *dg_cmp,
                                 float *dg_slc, float *dg_win);

/* The reference (host pointers, double arithmetic, dense masked branches);
 * lse and sel may be NULL. No limit on D or Hq/Hk. */
MF_API mf_status mf_ref_nsa_forward(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                                    int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q,
                                    const void *k, const void *v, const void *g_cmp, const void *g_slc,
                                    const void *g_win, float *out, float *lse, int32_t *sel);

/* Reference backward (host pointers, double): gradients of sum(out * dout)
 * with the selection constant (top-n is not differentiated, as in the paper
 * and fla's native-sparse-attention). dout (B,S,Hq,D) of dtype; dq (B,S,Hq,D),
 * dk, dv (B,S,Hk,D), dg_cmp, dg_slc, dg_win (B,S,Hq) floats. It recomputes the
 * dense forward matrices and holds double accumulators:
 * mf_ref_nsa_backward_scratch_bytes. */
MF_API mf_status mf_ref_nsa_backward(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                                     int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q,
                                     const void *k, const void *v, const void *g_cmp, const void *g_slc,
                                     const void *g_win, const void *dout, float *dq, float *dk, float *dv,
                                     float *dg_cmp, float *dg_slc, float *dg_win);

/* ---- memory formulas (bytes; SIZE_MAX on bad input or overflow) ---------------- */
MF_API size_t mf_ref_nsa_backward_scratch_bytes(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq,
                                                int64_t Hk, int64_t D);
MF_API size_t mf_ref_nsa_forward_scratch_bytes(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq,
                                               int64_t Hk, int64_t D);
MF_API size_t mf_nsa_backward_scratch_ceiling(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq,
                                              int64_t Hk, int64_t D);

/* Bytes of NSA's attention scores as `memfix plan` counts them, b*a*s*k*e with
 * k keys per query: the compressed tokens floor((s - l)/d) + 1 (0 when
 * s < l), min(s, n*l') selected and min(s, w) in the window (Yuan et al.,
 * "Native Sparse Attention", 2025, sec. 3). SIZE_MAX on bad input or overflow. */
MF_API size_t mf_nsa_attended_scores_bytes(const mf_nsa_config *cfg, int64_t b, int64_t a, int64_t s,
                                           size_t elem_bytes);
MF_API size_t mf_nsa_forward_scratch_ceiling(const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq,
                                             int64_t Hk, int64_t D);

#ifdef __cplusplus
}
#endif

#endif /* MEMFIX_NSA_H */
