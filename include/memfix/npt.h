/* NPT (Neuro-Plastic Transformer) per-token weight delta: the 4D reference and
 * the factored kernel, forward and backward.
 *
 * Source document: 004_96b9c85fa124076d.txt ("NPT Memory Optimization
 * Fix"). The NPT modulates an MLP weight W per token with a rank-r delta. The
 * original code built the delta for every token at once,
 *
 *     delta_w = torch.einsum('bsr,dr,rf->bsdf', modulation, self.A, self.B)
 *     # Shape: (batch_size, seq_len, d_model, d_ffn)
 *
 * and the fix computes the modulated output directly (document section
 * "Efficient Forward Pass"):
 *
 *     # Old: h @ (W + dW) = h @ W + h @ dW
 *     # New: h @ W + (h @ A) * mod @ B  (no full dW needed)
 *
 * Math (row-major tensors; T = batch * seq tokens, t = (b, s)):
 *   inputs   h (batch, seq, d_model)      W (d_model, d_ffn)
 *            A (d_model, rank)            B (rank, d_ffn)
 *            m (batch, seq, rank)  -- the per-token modulation
 *            bias (d_ffn), optional
 *   delta_w[t]  = A . diag(m[t]) . B                       (d_model x d_ffn per token)
 *   out[t]      = h[t] . (W + delta_w[t]) + bias            (d_ffn)
 *               = h[t] . W + ((h[t] . A) * m[t]) . B + bias (factored)
 * Backward, given g = d loss / d out (batch, seq, d_ffn), with u = h.A and
 * gB = g.B^T (both T x rank):
 *   grad_h    = g.W^T + (gB * m).A^T
 *   grad_W    = h^T.g                 (summed over all tokens)
 *   grad_m    = u * gB
 *   grad_A    = h^T.(gB * m)
 *   grad_B    = (u * m)^T.g
 *   grad_bias = sum over tokens of g
 *
 * Non-finite inputs: NaN and Inf propagate through the products above, the same
 * in the factored form and the per-token reference (a NaN in h[t] or m[t]
 * reaches out[t]; one in W[:, f] or B[:, f] column f; one in A every output).
 *
 * Storage dtypes: MF_DTYPE_F32 or MF_DTYPE_BF16; every tensor of one call has
 * the same dtype. Accumulation is fp32 in the optimized code, double in the
 * reference. With bf16 the optimized code stores its rank-r intermediates
 * ((h.A)*m forward; (g.B^T)*m and (h.A)*m backward) in bf16 for the following
 * GEMM, as PyTorch does with bf16 tensors; the reference rounds only its
 * outputs (tolerance rows npt.*.bf16 in src/core/tolerance.c). Outputs must not
 * alias inputs.
 *
 * Memory formulas (bytes; es = element size of the dtype: 4 for f32, 2 for bf16)
 * ---------------------------------------------------------------------------
 * Reference (exact: what reference/npt.c allocates through the host scratch
 * allocator). It keeps delta_w in fp32 whatever the storage dtype, so bf16 runs
 * are compared against a reference that rounds nothing but its outputs:
 *   forward:  T * d_model * d_ffn * 4              (delta_w for all tokens)
 *   backward: 2 * T * d_model * d_ffn * 4          (delta_w and its gradient
 *                                                   h[t] (x) g[t] for all tokens,
 *                                                   as autograd of the old code)
 * The 4D tensor of the document, T * d_model * d_ffn * es (mf_npt_delta_w_bytes):
 * at batch 4, seq 512, d_model 4096, d_ffn 11008 in fp32 it is 92,341,796,864
 * elements = 369,367,187,456 bytes = 344 GiB. (The document says "~448 GB";
 * its own shapes give 344 GiB, and the code uses the computed value.)
 *
 * Optimized "factored" variant (upper bound on device scratch; the cuBLAS
 * workspace belongs to the context). Tokens are processed in chunks of
 *   c = min(T, chunk)
 * where chunk is mf_npt_options.chunk_tokens when > 0; otherwise, when
 * scratch_budget_bytes > 0, the largest chunk whose ceiling fits the budget
 * (MF_ERR_BUDGET if not even one token fits); otherwise
 * MF_NPT_DEFAULT_CHUNK_TOKENS. Per chunk:
 *   forward:  c * rank * (4 + es)        u = h.A (fp32) and v = u * m (dtype)
 *   backward: c * rank * (8 + 2 * es)    u, gB (fp32); gB * m and u * m (dtype)
 *             + (bf16 only) (d_model + d_ffn) * rank * 4
 *                                        fp32 accumulators of grad_A and grad_B
 *                                        across chunks (f32 accumulates in place)
 * No d_model x d_ffn tensor per token is ever formed; grad_W = h^T.g is one
 * GEMM over all tokens straight into the caller's buffer.
 *
 * cuBLAS takes int dimensions: d_model, d_ffn, rank and T must be <= INT_MAX
 * (MF_ERR_INVALID_SIZE otherwise); all index math is size_t.
 */
#ifndef MEMFIX_NPT_H
#define MEMFIX_NPT_H

/* memfix/verify.h names each candidate type's header until this one is included */
#undef mf_npt_forward_candidate_fn
#undef mf_npt_backward_candidate_fn

#include "memfix/memfix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mf_npt_shape {
    int64_t batch;   /* Bt */
    int64_t seq;     /* S */
    int64_t d_model; /* D */
    int64_t d_ffn;   /* F */
    int64_t rank;    /* r */
} mf_npt_shape;

#define MF_NPT_DEFAULT_CHUNK_TOKENS ((int64_t)4096)

typedef struct mf_npt_options {
    int64_t chunk_tokens;        /* tokens per chunk; 0 = from the budget or the default */
    size_t scratch_budget_bytes; /* used when chunk_tokens == 0; 0 = no budget */
} mf_npt_options;

typedef enum mf_npt_pass { MF_NPT_FORWARD = 0, MF_NPT_BACKWARD = 1 } mf_npt_pass;

/* The shape from PyTorch-style tensor sizes, checking that they agree:
 * h (batch, seq, d_model), W (d_model, d_ffn), A (d_model, rank),
 * B (rank, d_ffn), m (batch, seq, rank). MF_ERR_INVALID_SIZE names the first
 * disagreement (e.g. "A has 17 rows but h has d_model 19"). */
MF_API mf_status mf_npt_shape_from_dims(const int64_t h_dims[3], const int64_t W_dims[2],
                                        const int64_t A_dims[2], const int64_t B_dims[2],
                                        const int64_t m_dims[3], mf_npt_shape *out);

/* chunk_tokens = 0, scratch_budget_bytes = 0. */
MF_API void mf_npt_options_init(mf_npt_options *opts);

/* ---- optimized (device pointers of ctx's backend) -------------------------- */
/* out (batch, seq, d_ffn) = h.W + ((h.A) * m).B (+ bias). bias may be NULL.
 * opts may be NULL (defaults). */
typedef mf_status mf_npt_forward_fn(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                                    const void *W, const void *A, const void *B, const void *m,
                                    const void *bias, void *out, const mf_npt_options *opts);
MF_API mf_npt_forward_fn mf_npt_forward;

/* Gradients of out = h.(W + delta_w) + bias given grad_out. Each grad_* output
 * may be NULL to skip that gradient (e.g. a frozen W), but at least one must be
 * given. Outputs are overwritten, not accumulated into. */
typedef mf_status mf_npt_backward_fn(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                                     const void *W, const void *A, const void *B, const void *m,
                                     const void *grad_out, void *grad_h, void *grad_W, void *grad_A,
                                     void *grad_B, void *grad_m, void *grad_bias, const mf_npt_options *opts);
MF_API mf_npt_backward_fn mf_npt_backward;

/* `memfix verify` candidates (targets "npt.forward" and "npt.backward", each run
 * on the built-in cases of its pass) are functions of these two types. Every
 * tensor is a device buffer of dtype (f32 or bf16), outputs included; opts is a
 * host struct (opts->chunk_tokens, the token chunk the ceiling is stated for).
 * Forward writes out (T x d_ffn; bias may be NULL). Backward writes grad_h,
 * grad_W, grad_A, grad_B, grad_m, grad_bias (all given, overwritten). Scratch
 * ceiling: mf_npt_factored_forward/backward_scratch_ceiling(dtype, shape, opts):
 * no T x d_model x d_ffn delta. */
typedef mf_npt_forward_fn *mf_npt_forward_candidate_fn;
typedef mf_npt_backward_fn *mf_npt_backward_candidate_fn;

/* ---- reference (host pointers; the old code: materializes delta_w) --------- */
MF_API mf_status mf_ref_npt_forward(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                                    const void *W, const void *A, const void *B, const void *m,
                                    const void *bias, void *out);
MF_API mf_status mf_ref_npt_backward(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                                     const void *W, const void *A, const void *B, const void *m,
                                     const void *grad_out, void *grad_h, void *grad_W, void *grad_A,
                                     void *grad_B, void *grad_m, void *grad_bias);

/* ---- memory formulas (see the header comment); SIZE_MAX on invalid input or
 * overflow ------------------------------------------------------------------ */
/* The document's 4D tensor: T * d_model * d_ffn * es. */
MF_API size_t mf_npt_delta_w_bytes(mf_dtype dtype, mf_npt_shape shape);
MF_API size_t mf_ref_npt_forward_scratch_bytes(mf_npt_shape shape);
MF_API size_t mf_ref_npt_backward_scratch_bytes(mf_npt_shape shape);
/* The chunk the optimized variant uses (tokens per chunk, <= T); MF_ERR_BUDGET
 * when the budget cannot hold one token, MF_ERR_INVALID_SIZE on a bad shape. */
MF_API mf_status mf_npt_resolve_chunk(mf_npt_pass pass, mf_dtype dtype, mf_npt_shape shape,
                                      const mf_npt_options *opts, int64_t *chunk_out);
/* Ceiling with the chunk resolved from opts (NULL = defaults). */
MF_API size_t mf_npt_factored_forward_scratch_ceiling(mf_dtype dtype, mf_npt_shape shape,
                                                      const mf_npt_options *opts);
MF_API size_t mf_npt_factored_backward_scratch_ceiling(mf_dtype dtype, mf_npt_shape shape,
                                                       const mf_npt_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_NPT_H */
