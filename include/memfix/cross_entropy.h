/* memfix cross_entropy: linear cross-entropy (lm_head + loss) without the logits.
 *
 * Source: seed document 000_15d34a4d5aa90e13.txt, bug 1. A 4B model
 * (hidden size D = 2560: the document's "+640 MB for hidden states" is
 * 131072 x 2560 bf16 = 640 MiB) at 131,072 tokens with a 151,936-token
 * vocabulary materializes 131072 x 151936 bf16 logits = 37.09 GiB ("37.09 GB"
 * in the document; the exact value is 39,829,110,784 bytes = 37.09375 GiB), and
 * F.cross_entropy adds fp32 intermediates of the same shape (~74 GiB). The
 * document's chunked loss fixes the forward pass only; this op fixes forward
 * and backward.
 *
 * Math (matches PyTorch's F.cross_entropy on hidden @ W^T + bias)
 * ---------------------------------------------------------------
 *   z[i,j]  = sum_d hidden[i,d] * W[j,d] + bias[j]         i < N, j < V
 *   s[i,j]  = softcap > 0 ? softcap * tanh(z[i,j] / softcap) : z[i,j]
 *   lse[i]  = log sum_j exp(s[i,j])
 *   y[i]    = target of row i: labels[i], or with shift_labels the next label
 *             in the same sequence (labels[i+1]; the last position of each
 *             sequence of length seq_len has no target and is ignored)
 *   valid i : y[i] != ignore_index
 *   loss[i] = valid ? lse[i] - (1-eps) s[i,y] - (eps/V) sum_j s[i,j]
 *                     + z_loss * lse[i]^2
 *                   : 0
 *   reduction mean: sum_i loss[i] / n_valid   (0 when n_valid == 0, see below)
 *             sum : sum_i loss[i]
 *             none: loss[i] per row (N floats; ignored rows 0)
 * Backward, with g[i] = upstream gradient (mean: g/n_valid, sum: g, none: g[i];
 * 0 for ignored rows), p = exp(s - lse):
 *   dL/ds[i,j] = g[i] * (p[i,j] (1 + 2 z_loss lse[i]) - eps/V - (1-eps)[j == y[i]])
 *   dL/dz      = dL/ds * (1 - (s/softcap)^2)       (softcap > 0)
 *   grad_hidden = dL/dz . W        grad_W = dL/dz^T . hidden     grad_bias = sum_i dL/dz[i,:]
 *
 * Differences from PyTorch, on purpose:
 *   - every row ignored with reduction mean: PyTorch returns NaN (0/0); memfix
 *     returns loss 0 and zero gradients (a batch of padding must not poison
 *     the optimizer state);
 *   - ignored rows get an exact zero gradient even when their logits are NaN
 *     (PyTorch's log_softmax backward would spread the NaN);
 *   - a used label outside [0, V) that is not ignore_index returns
 *     MF_ERR_OUT_OF_RANGE instead of a device-side assert (the optimized
 *     variants find it on the device without waiting for it, and the next
 *     synchronizing call of the context reports it: mf_context_synchronize,
 *     mf_buffer_download; the outputs are then unspecified; the reference
 *     returns it from the call);
 *   - a +inf logit gives lse NaN (torch.logsumexp: +inf); loss and gradient
 *     are NaN as in PyTorch (exp(inf - inf)).
 * Non-finite logits otherwise follow PyTorch (optimized and reference alike):
 * a NaN logit makes the row's lse, loss and gradient NaN (the max propagates
 * NaN); every logit of a row -inf gives lse = -inf (torch.logsumexp), loss
 * NaN and gradient NaN (F.cross_entropy: log_softmax is -inf - -inf); the
 * target's logit alone -inf gives loss +inf with a finite gradient. Ignored
 * rows stay exactly 0 (above).
 *
 * dtypes: hidden, W and bias are f32 or bf16 (the same dtype); labels are
 * int64; loss, lse and every gradient are f32. All accumulation is fp32 in the
 * optimized code (logits tiles are fp32 even for bf16 inputs: bf16 accumulation
 * drifts at large vocabularies), double in the reference. With bf16 inputs the
 * gradient tile dL/dz is rounded to bf16 (relative 2^-8) before the two
 * gradient GEMMs, because cuBLAS multiplies operands of one type (Liger-Kernel
 * does the same); the products still accumulate in fp32 into fp32 gradients.
 * The loss and lse never see that rounding.
 *
 * Memory formulas (bytes; N rows, V vocabulary, C chunk rows)
 * -----------------------------------------------------------
 *   logits as the old code held them:  N * V * sizeof(dtype)
 *       131072 x 151936 bf16 -> 39,829,110,784 B = 37.09 GiB (the document's figure)
 *   reference (host scratch, exact):
 *       forward  : N * V * 8                 (all logits, double)
 *       backward : N * V * 8 + N * V * 8     (all logits and the N x V gradient, double)
 *   optimized "chunked" (device scratch, upper bound, exact for the call that
 *   needs the most: forward or fused forward+backward with mean/sum):
 *       C * V * 4 + 4 * N + 16
 *       (one fp32 logits/gradient tile; per-row losses before the reduction;
 *        two int64 counters.) The cuBLAS workspace is allocated with the
 *       context (mf_context_options.cublas_workspace_bytes) and is not part of
 *       the call's scratch. With a caller budget B and the logits it replaces
 *       L = N * V * sizeof(dtype), the tile is sized against B' = min(B, L):
 *       C = min(N, max_chunk_rows, floor((B' - 4N - 16) / (4V)))   (at least 1)
 *   so the chunked variant never takes more scratch than the naive logits
 *   (bf16: C <= N/2; f32: C < N), except when L cannot hold one fp32 row plus
 *   4N + 16 bytes (C = 1; e.g. N = 1): then it exceeds L by at most 4N + 16 + 4V - L.
 *   plan_info.capped_by_logits says when B > L (the naive layout was already
 *   smaller than the budget); `memfix plan` prints it. For a fixed C the
 *   scratch grows by 4 bytes per row, never by V per row.
 *   Seed threshold (verify_chunked_loss.py): with B = 10 GiB, V = 151936,
 *   N = 4096's bf16 logits (1.16 GiB) are below the budget, which the document
 *   answers by not chunking; memfix caps the tile at them (C = 2047, three chunks,
 *   scratch <= the logits). N = 40000 is chunked against the budget (C = 17667,
 *   three chunks) as in the document. The document chunked when bf16 logits
 *   exceeded 10 GB; memfix sizes the fp32 tile against the budget instead, so
 *   the switch point differs (17,667 rows vs ~35,300).
 *
 * Variants
 * --------
 * MF_CE_VARIANT_CHUNKED (default): cuBLAS logits tile per chunk in device
 * scratch, one block per row, cuBLAS accumulation of the gradients (above).
 * Both variants count the valid labels on the device and read 1/n_valid there
 * (no host copy, no synchronisation before the launches).
 *
 * MF_CE_VARIANT_FUSED (Cut Cross-Entropy class, optimized/cross_entropy_fused.cu):
 * the logits never reach global memory. bf16 inputs: one CTA (8 warps) per
 * 128-row block streams 128-column vocabulary tiles, z = hidden . W_tile^T on
 * mma.sync.m16n8k16 (bf16 inputs, fp32 accumulation) fed by ldmatrix from a
 * cp.async double-buffered pipeline over D, or on sm_90a by two warpgroups'
 * wgmma.mma_async from 128B-swizzled shared memory (m64n256k16: 128 x 256 tiles
 * in the forward, m64n128k16 in the backward's recompute; opts->mma_path;
 * there the backward's gradient products are wgmma.m64n64k16 too, the same bf16
 * G and fp32 sums in the same k order); f32 inputs: one CTA (4 warps) per
 * 64-row block, 64-column tiles, fp32 FMAs (SIMT, so the f32 tolerance rows
 * apply unchanged). Bias and softcap in registers, online max / sum-exp,
 * target logit and smoothing sum on the fly; the forward writes lse and the
 * row losses only. The backward recomputes each tile, forms dL/dz in
 * registers from the saved lse (every option above), keeps it in shared memory
 * (bf16 inputs: rounded to bf16, the mma's operand precision, like the chunked
 * variant's tile; f32: fp32) and accumulates with fp32 accumulators:
 *   grad_hidden  += G . W_tile     the CTA owns its rows: plain read-modify-
 *                                  write in vocabulary order, DETERMINISTIC
 *   grad_W_tile  += G^T . hidden   fp32 atomicAdd, one per CTA and element:
 *   grad_bias    += colsum(G)      the order of the row blocks is not fixed, so
 *                                  the last bits may differ run to run (more
 *                                  than one row block: N > 128 bf16, N > 64 f32;
 *                                  bf16 grad_bias: 4 atomics per CTA, one per
 *                                  32-row warp strip, even for one block; 8 on
 *                                  the wgmma path, one per 16-row warp strip)
 * The label count for the mean stays on the device (the kernels read
 * 1/n_valid there); the out-of-range check is a deferred check of the context
 * (no read-back, no synchronization in the call: on a bad label the next
 * synchronizing call returns MF_ERR_OUT_OF_RANGE and the outputs are
 * unspecified).
 * scratch_budget and max_chunk_rows are ignored.
 *   Scratch (device, upper bound, exact for fused forward+backward with
 *   mean/sum and lse == NULL):
 *       8 * N + 16      (N fp32 row losses, N fp32 lse, two int64 counters)
 *   independent of V, D and any budget: 1,048,592 B (1.0 MiB) at seed 000's
 *   N = 131,072. Forward alone: 4N + 16 (mean/sum) or 16 (none); backward
 *   alone: 16.
 *   Gradient filtering (opts->grad_filter = f > 0, off by default): a tile of
 *   a row block contributes nothing when every |dL/dz[i,j]| < f * |g_i|, g_i
 *   being row i's gradient scale (the upstream gradient, times 1/n_valid for
 *   mean). The threshold is relative, as Cut Cross-Entropy's filter on the
 *   softmax: without smoothing, z-loss or softcap dL/dz[i,j] / g_i = p[i,j] -
 *   [j == y_i], so a tile is skipped iff it holds no target and every softmax
 *   value in it is below f (CCE's bf16 choice: f = 2^-12), whatever the
 *   reduction or N. Error per element, bounded by the skipped terms:
 *       |d grad_hidden[i,:]| <= f * |g_i| * V * max|W|
 *       |d grad_W[j,:]|      <= f * sum_i |g_i| * max|hidden|
 *       |d grad_bias[j]|     <= f * sum_i |g_i|
 *   (tests/equivalence/test_cross_entropy_equiv.c checks the bound for sum and
 *   mean, that tiles were skipped, and that a tile holding a target is kept).
 *   The loss and lse are never filtered.
 *   Gradient dtypes: fp32 outputs (grad_hidden N x D, grad_W V x D, grad_bias
 *   V); at seed 000's shape fp32 grad_hidden + grad_W cost 1.25 GiB + 1.45 GiB
 *   (2.7 GiB), caller buffers, not scratch. bf16 gradient outputs are not
 *   offered: grad_W's atomic accumulation needs fp32 (bf16 atomics would round
 *   every partial sum to 8 bits).
 */
#ifndef MEMFIX_CROSS_ENTROPY_H
#define MEMFIX_CROSS_ENTROPY_H

/* memfix/verify.h names each candidate type's header until this one is included */
#undef mf_cross_entropy_forward_candidate_fn
#undef mf_cross_entropy_backward_candidate_fn

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mf_ce_reduction {
    MF_CE_REDUCTION_MEAN = 0, /* loss: 1 float */
    MF_CE_REDUCTION_SUM = 1,  /* loss: 1 float */
    MF_CE_REDUCTION_NONE = 2  /* loss: N floats; grad_loss: N floats */
} mf_ce_reduction;

typedef enum mf_ce_variant {
    MF_CE_VARIANT_CHUNKED = 0, /* logits tile per chunk in device scratch (cuBLAS) */
    MF_CE_VARIANT_FUSED = 1    /* logits tiles in registers / shared memory only: O(N) scratch */
} mf_ce_variant;

/* FUSED, bf16 inputs: which tensor-core instructions compute the logits tiles
 * (the results agree within the same bf16 tolerance rows: same bf16 operands,
 * fp32 accumulation, products summed in k order per 16 of D).
 *   MF_CE_MMA_AUTO  (default) wgmma where it can run (a cc 9.0 GPU and a build
 *                   holding this library's sm_90a code), mma.sync elsewhere and
 *                   in host execution mode. With AUTO the environment variable
 *                   MF_CE_MMA_PATH=sync|wgmma|auto overrides the choice per
 *                   process (A/B runs without a rebuild; any other value is
 *                   MF_ERR_INVALID_ARGUMENT).
 *   MF_CE_MMA_SYNC  mma.sync.m16n8k16 (sm_80 and later)
 *   MF_CE_MMA_WGMMA wgmma.mma_async (sm_90a warpgroup MMA: H100/H200); where it
 *                   cannot run the call fails with MF_ERR_BACKEND_UNAVAILABLE.
 *                   Whether the sm_90a code runs is probed once per device by
 *                   the first bf16 fused call (a one-thread kernel and a
 *                   read-back): make that call before capturing a CUDA graph
 *                   (during capture an unprobed device takes mma.sync under AUTO
 *                   and fails under WGMMA).
 *                   Host execution mode emulates it (cudahost), so the tests run
 *                   both paths.
 * f32 inputs ignore it (SIMT kernels). */
typedef enum mf_ce_mma_path { MF_CE_MMA_AUTO = 0, MF_CE_MMA_SYNC = 1, MF_CE_MMA_WGMMA = 2 } mf_ce_mma_path;

#define MF_CE_DEFAULT_IGNORE_INDEX (-100)
#define MF_CE_DEFAULT_BUDGET ((size_t)1 << 30) /* 1 GiB of device scratch */

typedef struct mf_cross_entropy_options {
    int64_t ignore_index;      /* default -100 */
    mf_ce_reduction reduction; /* default MF_CE_REDUCTION_MEAN */
    int shift_labels;          /* 0 (default) or 1: row i predicts labels[i+1] within its sequence */
    int64_t seq_len;           /* sequence length T when shift_labels (N % T == 0); 0 = N (default) */
    float label_smoothing;     /* eps in [0, 1]; default 0 */
    float z_loss;              /* lambda >= 0 of lambda * lse^2; default 0 */
    float softcap;             /* c >= 0; 0 = off (default) */
    mf_ce_variant variant;     /* default MF_CE_VARIANT_CHUNKED */
    size_t scratch_budget;     /* device scratch bytes the optimized call may use; default 1 GiB */
    int64_t max_chunk_rows;    /* 0 = no limit (default); > 0 caps the chunk (tests, tuning) */
    float grad_filter;         /* FUSED backward: skip a vocabulary tile of a row block (bf16
                                  128 x 128, f32 64 x 64) when every |dL/dz| in it is
                                  below this times its row's gradient scale (plain CE:
                                  every softmax value below it, no target); 0 = off
                                  (default). Error bound in the FUSED section above. */
    mf_ce_mma_path mma_path;   /* FUSED, bf16: MF_CE_MMA_AUTO (default), _SYNC or _WGMMA (above) */
} mf_cross_entropy_options;

MF_API void mf_cross_entropy_options_init(mf_cross_entropy_options *opts);
/* MF_OK, or MF_ERR_INVALID_ARGUMENT naming the bad field (NaN or out-of-range
 * values, unknown enums). NULL is MF_ERR_NULL_POINTER. */
MF_API mf_status mf_cross_entropy_options_validate(const mf_cross_entropy_options *opts);

/* Whether MF_CE_MMA_WGMMA can run on the context's device: *available = 1 in
 * host execution mode when the device it models is cc 9.0 (cudahost's default
 * H100 profile; CUDAHOST_DEVICE=a100 models cc 8.0; wgmma emulated), and on a GPU when it is cc 9.0 and this build loaded the fused
 * kernels' sm_90a code (the one-thread probe that MF_CE_MMA_AUTO runs once per
 * device; not during CUDA-graph capture, where an unprobed device answers 0);
 * else 0 (where a forced wgmma call returns MF_ERR_BACKEND_UNAVAILABLE).
 * MF_ERR_NULL_POINTER, MF_ERR_BACKEND*. */
MF_API mf_status mf_cross_entropy_wgmma_available(mf_context *ctx, int *available);

/* ---- planner --------------------------------------------------------------- */
typedef struct mf_cross_entropy_plan_info {
    int64_t chunk_rows;   /* C: rows per chunk */
    int64_t n_chunks;     /* ceil(N / C) */
    int chunked;          /* n_chunks > 1 */
    size_t tile_bytes;    /* C * V * 4 */
    size_t fixed_bytes;   /* 4 * N + 16 */
    size_t scratch_bytes; /* tile_bytes + fixed_bytes: the ceiling of the call */
    size_t logits_bytes;  /* N * V * sizeof(dtype): what the naive code materializes */
    int capped_by_logits; /* the budget exceeded logits_bytes: C was sized against them */
} mf_cross_entropy_plan_info;

/* Chunk size for opts->scratch_budget (opts NULL = defaults). MF_ERR_BUDGET when
 * the budget cannot hold one row (4V + 4N + 16 bytes); MF_ERR_INVALID_SIZE /
 * MF_ERR_OVERFLOW on bad shapes. Shapes only: nothing is allocated. */
MF_API mf_status mf_cross_entropy_plan(int64_t n_rows, int64_t vocab, mf_dtype dtype,
                                       const mf_cross_entropy_options *opts, mf_cross_entropy_plan_info *out);

/* ---- memory formulas (SIZE_MAX on overflow or non-positive sizes) ---------- */
/* N * V * sizeof(dtype): the logits the old code materialized. */
MF_API size_t mf_cross_entropy_logits_bytes(int64_t n_rows, int64_t vocab, mf_dtype dtype);
/* Reference host scratch, exact: N*V*8 (forward), 2*N*V*8 (backward). */
MF_API size_t mf_ref_cross_entropy_scratch_bytes(int64_t n_rows, int64_t vocab, int backward);
/* Optimized chunked variant, upper bound: C*V*4 + 4*N + 16. */
MF_API size_t mf_cross_entropy_chunked_scratch_ceiling(int64_t n_rows, int64_t vocab, int64_t chunk_rows);
/* Optimized fused variant, upper bound: 8*N + 16 (no V, no budget). */
MF_API size_t mf_cross_entropy_fused_scratch_ceiling(int64_t n_rows);

/* ---- optimized entries (device pointers of ctx's backend) ------------------
 * hidden N x D, weight V x D, bias V (or NULL), all row-major in 'dtype';
 * labels N int64. opts NULL = defaults. Gradients are overwritten (not
 * accumulated); any of grad_hidden / grad_weight / grad_bias may be NULL to
 * skip it (grad_bias needs bias), but not all three. */

/* Forward only. loss: 1 float (mean/sum) or N floats (none). lse: N floats of
 * per-row logsumexp for a later mf_cross_entropy_backward, or NULL. */
typedef mf_status mf_cross_entropy_forward_fn(mf_context *ctx, int64_t n_rows, int64_t hidden_dim,
                                              int64_t vocab, mf_dtype dtype, const void *hidden,
                                              const void *weight, const void *bias, const int64_t *labels,
                                              const mf_cross_entropy_options *opts, float *loss, float *lse);
MF_API mf_cross_entropy_forward_fn mf_cross_entropy_forward;

/* Fused forward + backward: one pass over the chunks. grad_loss: the upstream
 * gradient (1 float for mean/sum, N floats for none), or NULL for 1. */
MF_API mf_status mf_cross_entropy_forward_backward(mf_context *ctx, int64_t n_rows, int64_t hidden_dim,
                                                   int64_t vocab, mf_dtype dtype, const void *hidden,
                                                   const void *weight, const void *bias,
                                                   const int64_t *labels,
                                                   const mf_cross_entropy_options *opts,
                                                   const float *grad_loss, float *loss, float *lse,
                                                   float *grad_hidden, float *grad_weight, float *grad_bias);

/* Backward from the lse (N floats) saved by mf_cross_entropy_forward with the
 * same inputs and options: recomputes each logits tile, never the whole. */
typedef mf_status mf_cross_entropy_backward_fn(mf_context *ctx, int64_t n_rows, int64_t hidden_dim,
                                               int64_t vocab, mf_dtype dtype, const void *hidden,
                                               const void *weight, const void *bias, const int64_t *labels,
                                               const mf_cross_entropy_options *opts, const float *lse,
                                               const float *grad_loss, float *grad_hidden, float *grad_weight,
                                               float *grad_bias);
MF_API mf_cross_entropy_backward_fn mf_cross_entropy_backward;

/* `memfix verify` candidates are functions of these two types.
 * Forward (target "cross_entropy" or "cross_entropy.forward"): hidden N x D,
 * weight V x D, bias V (or NULL) in dtype, labels N int64, all device buffers;
 * opts honoured in full (ignore index, reduction, shift_labels/seq_len, label
 * smoothing, z-loss, softcap); opts->scratch_budget is the ceiling the
 * candidate's scratch must respect. Writes loss (1 float, or N for
 * MF_CE_REDUCTION_NONE) and lse (N floats).
 * Backward (target "cross_entropy.backward"): lse (N floats, the reference
 * forward's) and grad_loss (1 float, or N for MF_CE_REDUCTION_NONE) are device
 * inputs besides the forward's; writes grad_hidden (N x D), grad_weight (V x D)
 * and grad_bias (V, or NULL on cases without a bias), all floats, compared
 * with the reference backward under cross_entropy.grad.<dtype>; same ceiling
 * as the forward. */
typedef mf_cross_entropy_forward_fn *mf_cross_entropy_forward_candidate_fn;
typedef mf_cross_entropy_backward_fn *mf_cross_entropy_backward_candidate_fn;

/* ---- reference (HOST pointers; scratch via the context's host allocator) ---
 * Same arguments as above. The forward writes lse when non-NULL; the backward
 * recomputes all logits (it takes no lse). opts->variant, scratch_budget and
 * max_chunk_rows are ignored. */
MF_API mf_status mf_ref_cross_entropy_forward(mf_context *ctx, int64_t n_rows, int64_t hidden_dim,
                                              int64_t vocab, mf_dtype dtype, const void *hidden,
                                              const void *weight, const void *bias, const int64_t *labels,
                                              const mf_cross_entropy_options *opts, float *loss, float *lse);
MF_API mf_status mf_ref_cross_entropy_backward(mf_context *ctx, int64_t n_rows, int64_t hidden_dim,
                                               int64_t vocab, mf_dtype dtype, const void *hidden,
                                               const void *weight, const void *bias, const int64_t *labels,
                                               const mf_cross_entropy_options *opts, const float *grad_loss,
                                               float *grad_hidden, float *grad_weight, float *grad_bias);

#ifdef __cplusplus
}
#endif

#endif /* MEMFIX_CROSS_ENTROPY_H */
