/* memfix verify: check a candidate kernel of your own against memfix's
 * reference, on the op's built-in cases, with defenses against a kernel that
 * only looks right (the weaknesses reported against KernelBench).
 *
 * A candidate is a C function with the op's candidate signature below: the
 * op's optimized entry point (e.g. mf_matmul) minus the variant. It receives
 * the context and device pointers of that context's backend, may take device
 * scratch only through mf_scratch_alloc(ctx, MF_MEM_DEVICE, ...), and returns
 * MF_OK or an error status. `memfix verify --op OP --lib PATH --symbol NAME`
 * loads one from a shared library; docs/verify.md shows how to build one for
 * host execution mode and for a GPU.
 *
 * Defenses, in the order they are checked for each case (the name is the row's
 * 'defense' when it rejects the candidate):
 *   error              the candidate returned a status other than MF_OK, or the
 *                      backend reported an error (e.g. a bad launch);
 *   guard-band         it wrote outside a buffer: every input and output lies
 *                      between two 1 KiB canary regions, compared after the call;
 *   input-mutation     it changed an input (every input byte is compared with a
 *                      host copy after the call);
 *   hidden-allocation  the device's used memory (cudaMemGetInfo, sampled by a
 *                      thread during the call and once after it) grew by more
 *                      than the scratch the context's allocator tracked, plus a
 *                      slack (4 KiB in host mode, 2 MiB on a GPU);
 *   determinism        a second call on the same inputs, with the output
 *                      re-filled with NaN, did not give the same bits;
 *   nan-prefill        part of the output was never written (outputs are
 *                      pre-filled with NaN, so it differs from the reference's
 *                      NaN/Inf pattern);
 *   all-zero           the output is all zeros while the reference is not;
 *   equivalence        the output differs from the reference beyond the op's
 *                      tolerance (src/core/tolerance.c);
 *   scratch-ceiling    its peak device scratch, measured through the context's
 *                      allocator, exceeds the ceiling formula of the op's fix;
 *   rerun              every check passed, but a second sweep over the cases in
 *                      reverse order, with fresh buffers and different inputs,
 *                      failed one (stale buffers or cached results).
 * Limits: a candidate that crashes takes the process with it; a hidden
 * allocation freed again within the call is caught only if the sampler sees
 * it (it samples every ~50 us; any allocation alive across a kernel launch in
 * host mode is seen), and on a GPU only above cudaMemGetInfo's granularity. */
#ifndef MEMFIX_VERIFY_H
#define MEMFIX_VERIFY_H

#include "memfix/memfix.h"
#include "memfix/cross_entropy.h"
#include "memfix/attention.h"
#include "memfix/linear_attention.h"
#include "memfix/npt.h"
#include "memfix/rope.h"
#include "memfix/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- candidate signatures ------------------------------------------------------ */
/* matmul (include/memfix/matmul.h): C = op(A) op(B); A holds M*K and B K*N
 * elements of dtype (f32 or bf16 bit patterns), C M*N floats, row-major; all
 * three are device buffers; C must be overwritten (beta = 0). */
typedef mf_status (*mf_matmul_candidate_fn)(mf_context *ctx, mf_dtype dtype, int trans_a,
                                            int trans_b, int64_t M, int64_t N, int64_t K,
                                            const void *A, const void *B, float *C);

/* cross_entropy forward (include/memfix/cross_entropy.h; target "cross_entropy"
 * or "cross_entropy.forward"): the arguments of mf_cross_entropy_forward. hidden N x D, weight V x D, bias V (or NULL) in
 * dtype, labels N int64, all device buffers; opts honoured in full (ignore
 * index, reduction, shift_labels/seq_len, label smoothing, z-loss, softcap);
 * opts->scratch_budget is the ceiling the candidate's scratch must respect.
 * Writes loss (1 float, or N for MF_CE_REDUCTION_NONE) and lse (N floats). */
typedef mf_status (*mf_cross_entropy_forward_candidate_fn)(
    mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab, mf_dtype dtype,
    const void *hidden, const void *weight, const void *bias, const int64_t *labels,
    const mf_cross_entropy_options *opts, float *loss, float *lse);

/* cross_entropy backward (target "cross_entropy.backward"): the arguments of
 * mf_cross_entropy_backward. lse (N floats, the reference forward's) and
 * grad_loss (1 float, or N for MF_CE_REDUCTION_NONE) are device inputs besides
 * the forward's; writes grad_hidden (N x D), grad_weight (V x D) and grad_bias
 * (V, or NULL on cases without a bias), all floats, compared with the
 * reference backward under cross_entropy.grad.<dtype>; same ceiling as the
 * forward. */
typedef mf_status (*mf_cross_entropy_backward_candidate_fn)(
    mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab, mf_dtype dtype,
    const void *hidden, const void *weight, const void *bias, const int64_t *labels,
    const mf_cross_entropy_options *opts, const float *lse, const float *grad_loss,
    float *grad_hidden, float *grad_weight, float *grad_bias);

/* rope (include/memfix/rope.h): mf_rope_fused's arguments, both directions
 * (dir: forward y = R(theta) x, backward dx = R(-theta) dy). t->q, t->k
 * (read-only), t->q_out, t->k_out (out of place, every element written) and
 * pos->ids (explicit int32/int64 positions; NULL for MF_ROPE_POS_OFFSET) are
 * device buffers; cfg and pos are host structs honoured in full (head_dim,
 * rotary_dim, base, scaling, layout; offset or ids with batch_stride). No
 * scratch: the fused ceiling is 0 bytes. */
typedef mf_status (*mf_rope_candidate_fn)(mf_context *ctx, const mf_rope_config *cfg,
                                          mf_rope_direction dir, const mf_rope_tensors *t,
                                          const mf_rope_positions *pos);

/* attention (include/memfix/attention.h): the tiled entry points, i.e.
 * mf_attention_forward / mf_attention_backward minus the variant; targets
 * "attention.forward" and "attention.backward". scale = 1/sqrt(D); causal 0/1.
 * Forward: q, k (B,H,N,D), v (B,H,N,Dv) of dtype; writes out (B,H,N,Dv) and
 * lse (B,H,N, natural log of the row's sum of exp(scaled scores)) floats.
 * No scratch (ceiling 0). The backward that follows is memfix's tiled one,
 * fed the candidate's out and lse: dq, dk, dv are compared too.
 * Backward: also out, lse (memfix's forward's) and dout (dtype); writes dq, dk
 * (B,H,N,D) and dv (B,H,N,Dv) floats. Scratch ceiling: 4*B*H*N bytes (one
 * float per query row, e.g. delta = rowsum(dout * out)). */
typedef mf_status (*mf_attention_forward_candidate_fn)(mf_context *ctx, mf_dtype dtype, int causal,
                                                       int64_t B, int64_t H, int64_t N, int64_t D,
                                                       int64_t Dv, const void *q, const void *k,
                                                       const void *v, float *out, float *lse);
typedef mf_status (*mf_attention_backward_candidate_fn)(
    mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N, int64_t D,
    int64_t Dv, const void *q, const void *k, const void *v, const float *out, const void *dout,
    const float *lse, float *dq, float *dk, float *dv);

/* npt (include/memfix/npt.h): mf_npt_forward / mf_npt_backward's arguments;
 * targets "npt.forward" and "npt.backward" (each runs the built-in cases of its
 * pass). Every tensor is a device buffer of dtype (f32 or bf16), outputs
 * included; opts is a host struct (opts->chunk_tokens, the token chunk the
 * ceiling is stated for). Forward writes out (T x d_ffn; bias may be NULL).
 * Backward writes grad_h, grad_W, grad_A, grad_B, grad_m, grad_bias (all given,
 * overwritten). Scratch ceiling: mf_npt_factored_forward/backward_scratch_ceiling
 * (dtype, shape, opts): no T x d_model x d_ffn delta. */
typedef mf_status (*mf_npt_forward_candidate_fn)(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape,
                                                 const void *h, const void *W, const void *A,
                                                 const void *B, const void *m, const void *bias,
                                                 void *out, const mf_npt_options *opts);
typedef mf_status (*mf_npt_backward_candidate_fn)(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape,
                                                  const void *h, const void *W, const void *A,
                                                  const void *B, const void *m, const void *grad_out,
                                                  void *grad_h, void *grad_W, void *grad_A,
                                                  void *grad_B, void *grad_m, void *grad_bias,
                                                  const mf_npt_options *opts);

/* linear_attention (include/memfix/linear_attention.h): the arguments of
 * mf_linear_attention_forward / mf_linear_attention_backward; targets
 * "linear_attention.forward" and "linear_attention.backward", each run on every
 * built-in case causal (chunk = the case's C) and then bidirectional
 * (causal = 0, state and grad NULL). Causal runs carry a recurrent state, all
 * float device buffers: forward reads state->initial_kv/initial_z and writes
 * state->final_kv/final_z; backward reads state->initial_kv/initial_z and
 * grad->d_final_kv/d_final_z and writes grad->d_initial_kv/d_initial_z. q, k, v,
 * dout are of dtype; out, dq, dk, dv float. A backward candidate gets memfix's
 * forward's out. The candidate's own outputs are compared: out and the final
 * state (forward); dq, dk, dv and the initial state's gradients (backward).
 * Scratch ceiling: 0 (forward), 8*B*H*N bytes (backward). */
typedef mf_status (*mf_linear_attention_forward_candidate_fn)(
    mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N,
    int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
    const mf_linear_attention_state *state, float *out);
typedef mf_status (*mf_linear_attention_backward_candidate_fn)(
    mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B, int64_t H, int64_t N,
    int64_t D, int64_t Dv, const void *q, const void *k, const void *v, const float *out,
    const void *dout, const mf_linear_attention_state *state,
    const mf_linear_attention_state_grad *grad, float *dq, float *dk, float *dv);

/* ---- results --------------------------------------------------------------------- */
#define MF_VERIFY_DEFENSE_MAX 24

/* One row per built-in case: the `memfix report` row (variant "candidate",
 * message = the reason it was rejected) and the defense that rejected it. */
typedef struct mf_verify_row {
    mf_case_result result;
    char defense[MF_VERIFY_DEFENSE_MAX]; /* "" when it passed; else a name above */
} mf_verify_row;

/* 1 if 'op' (a verify target: an op name, or "op.entry" for an op with
 * several entry points) takes candidates in this build, else 0. */
MF_API int mf_verify_supported(const char *op);
/* The targets that take candidates, comma-separated ("matmul, cross_entropy, ...");
 * "" in a build without host kernels. */
MF_API const char *mf_verify_supported_ops(void);
/* The number of rows mf_verify writes for target 'op' (its built-in cases);
 * -1 for a target without candidate support. */
MF_API int mf_verify_n_cases(const char *op);

/* Runs 'candidate' (a function of op's candidate signature, cast to
 * void (*)(void)) on every built-in case of 'op' with all defenses, on ctx.
 * rows must hold mf_verify_n_cases(op) rows;
 * *n_rows receives how many were written. Returns MF_OK when the verification
 * ran, whatever the verdicts; MF_ERR_INVALID_ARGUMENT for an op without
 * candidate support, MF_ERR_INVALID_SIZE when cap is too small. */
MF_API mf_status mf_verify(mf_context *ctx, const char *op, void (*candidate)(void),
                           mf_verify_row *rows, size_t cap, size_t *n_rows);

/* The per-op hook (src/ops/<op>.c): runs built-in case 'case_index' exactly as
 * `memfix report` does (seeded inputs, reference, NaN-filled output,
 * comparison, scratch peak vs the fix's ceiling) with the optimized call
 * replaced by 'entry'; no defenses beyond report's. seed_salt != 0 draws
 * different inputs of the same shape. */
MF_API mf_status mf_matmul_verify_case(mf_context *ctx, mf_matmul_candidate_fn entry,
                                       int case_index, uint64_t seed_salt,
                                       mf_case_result *out);

/* The same for the cross_entropy forward: loss and lse against the reference's
 * forward, the ceiling of the chunked variant at the case's chunk size. */
MF_API mf_status mf_cross_entropy_verify_case(mf_context *ctx,
                                              mf_cross_entropy_forward_candidate_fn entry,
                                              int case_index, uint64_t seed_salt,
                                              mf_case_result *out);

/* cross_entropy backward: mf_cross_entropy_forward_backward of report's case
 * replaced by 'entry' (given the reference's lse), gradients compared. */
MF_API mf_status mf_cross_entropy_backward_verify_case(mf_context *ctx,
                                                       mf_cross_entropy_backward_candidate_fn entry,
                                                       int case_index, uint64_t seed_salt,
                                                       mf_case_result *out);

/* rope: mf_rope_fused replaced by 'entry', the fused variant's ceiling (0). */
MF_API mf_status mf_rope_verify_case(mf_context *ctx, mf_rope_candidate_fn entry, int case_index,
                                     uint64_t seed_salt, mf_case_result *out);

/* attention: exactly one of fwd, bwd (the other pass is memfix's tiled one);
 * every output (out, lse, dq, dk, dv) compared; the candidate's scratch is
 * measured around its own call against its pass's ceiling. */
MF_API mf_status mf_attention_verify_case(mf_context *ctx, mf_attention_forward_candidate_fn fwd,
                                          mf_attention_backward_candidate_fn bwd, int case_index,
                                          uint64_t seed_salt, mf_case_result *out);

/* npt: exactly one of fwd, bwd; case_index counts the built-in cases of that
 * pass (0 .. mf_npt_verify_n_cases(pass) - 1). */
MF_API int mf_npt_verify_n_cases(mf_npt_pass pass);
MF_API mf_status mf_npt_verify_case(mf_context *ctx, mf_npt_forward_candidate_fn fwd,
                                    mf_npt_backward_candidate_fn bwd, int case_index,
                                    uint64_t seed_salt, mf_case_result *out);

/* linear_attention: exactly one of fwd, bwd; case_index in
 * [0, mf_linear_attention_verify_n_cases()): the built-in cases causal (with a
 * state), then the same cases bidirectional. */
MF_API int mf_linear_attention_verify_n_cases(void);
MF_API mf_status mf_linear_attention_verify_case(mf_context *ctx,
                                                 mf_linear_attention_forward_candidate_fn fwd,
                                                 mf_linear_attention_backward_candidate_fn bwd,
                                                 int case_index, uint64_t seed_salt,
                                                 mf_case_result *out);

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_VERIFY_H */
