/* memfix verify (include/memfix/verify.h, tools/cmd_verify.c): the example
 * candidates of examples/candidates/ loaded with dlopen, as `memfix verify`
 * does. The correct one is accepted on every case; each wrong one is rejected,
 * and only by the defense it was written to trip. Host execution mode only:
 * the candidates are host-mode libraries. */
#define _POSIX_C_SOURCE 200809L
#include "mf_test.h"
#include "memfix/attention.h"
#include "memfix/cross_entropy.h"
#include "memfix/linear_attention.h"
#include "memfix/matmul.h"
#include "memfix/npt.h"
#include "memfix/registry.h"
#include "memfix/rope.h"
#include "memfix/verify.h"
#include "memfix_cli.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MF_CANDIDATE_DIR
#error "MF_CANDIDATE_DIR must name the directory of the host-mode example candidates"
#endif

static void (*load_symbol(const char *lib, const char *symbol))(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/lib%s.so", MF_CANDIDATE_DIR, lib);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen(%s): %s", path, dlerror());
    void *sym = dlsym(h, symbol);
    ck_assert_msg(sym != NULL, "dlsym(%s) in %s: %s", symbol, path, dlerror());
    void (*fn)(void);
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

/* matmul example 'name': examples/candidates/matmul_<name>.cu */
static void (*load_candidate(const char *name))(void)
{
    char lib[256];
    snprintf(lib, sizeof lib, "matmul_%s", name);
    return load_symbol(lib, "matmul_candidate");
}

/* A rejection by a defense that judges elements names the element in the op's own axes: "(row=3, col=7)",
 * "(b=0, h=1, row=17, col=3)" (compare.c, verify_guard.c, mem_defense.c); the others (error, scratch and
 * memory, the worker's exit, crash, timeout, protocol, a replaced SIGSEGV handler) concern no element. */
static void assert_names_element(const char *name, const mf_verify_row *r)
{
    static const char *const by_element[] = { "equivalence", "nan-prefill", "all-zero",       "determinism",
                                              "guard-band",  "rerun",       "input-mutation", "schedule" };
    int judged =
        strcmp(r->defense, "input-write") == 0 && strstr(r->result.message, "wrote to input") != NULL;
    for (size_t k = 0; k < sizeof by_element / sizeof by_element[0]; k++)
        judged |= strcmp(r->defense, by_element[k]) == 0;
    if (!judged) return;
    const char *p = strstr(r->result.message, " (");
    int found = 0;
    for (; p != NULL && !found; p = strstr(p + 1, " (")) {
        const char *q = p + 2;
        while ((*q >= 'a' && *q <= 'z') || *q == '_') q++;
        found = q > p + 2 && *q == '=' && q[1] >= '0' && q[1] <= '9';
    }
    ck_assert_msg(found || strstr(r->result.message, "(scalar)") != NULL,
                  "%s [%s %s]: rejected by %s without naming the element in the op's axes: %s", name,
                  r->result.dtype, r->result.shape, r->defense, r->result.message);
}

/* Verifies 'fn' on 'op'; returns the number of rejected rows and checks that
 * every rejected row names 'defense' (NULL: none may be rejected) and, where
 * the defense judges elements, the element (assert_names_element). */
static size_t verify_fn_expect(const char *op_name, const char *name, void (*fn)(void), const char *defense)
{
    const int n_cases = mf_verify_n_cases(op_name);
    ck_assert_int_gt(n_cases, 0);
    mf_verify_row *rows = calloc((size_t)n_cases, sizeof *rows);
    ck_assert_ptr_nonnull(rows);
    size_t n = 0;
    MF_ASSERT_OK(mf_verify(mf_test_ctx(), op_name, fn, rows, (size_t)n_cases, &n));
    ck_assert_uint_eq(n, (size_t)n_cases);
    /* the registry op: the target's name up to a '.' (attention.backward -> attention) */
    char reg_op[64];
    snprintf(reg_op, sizeof reg_op, "%s", op_name);
    if (strchr(reg_op, '.') != NULL) *strchr(reg_op, '.') = '\0';
    ck_assert_ptr_nonnull(mf_registry_find(reg_op));
    size_t rejected = 0;
    for (size_t i = 0; i < n; i++) {
        const mf_verify_row *r = &rows[i];
        ck_assert_str_eq(r->result.op, reg_op);
        ck_assert_str_eq(r->result.variant, "candidate");
        if (r->result.pass) {
            ck_assert_msg(r->defense[0] == '\0', "%s [%s]: passed with defense '%s'", name, r->result.shape,
                          r->defense);
            continue;
        }
        rejected++;
        ck_assert_msg(defense != NULL, "%s [%s %s] rejected by %s: %s", name, r->result.dtype,
                      r->result.shape, r->defense, r->result.message);
        /* A write to an input is caught as 'input-write' where the input spans a whole
         * write-protected page (host mode), else as 'input-mutation' after the call. */
        const int same = strcmp(r->defense, defense) == 0 ||
                         (strcmp(defense, "input-mutation") == 0 && strcmp(r->defense, "input-write") == 0);
        ck_assert_msg(same, "%s [%s %s]: rejected by '%s', expected '%s': %s", name, r->result.dtype,
                      r->result.shape, r->defense, defense, r->result.message);
        ck_assert_msg(r->result.message[0] != '\0', "%s [%s]: rejected without a reason", name,
                      r->result.shape);
        assert_names_element(name, r);
    }
    free(rows);
    return rejected;
}

static size_t verify_expect(const char *name, const char *defense)
{
    return verify_fn_expect("matmul", name, load_candidate(name), defense);
}

START_TEST(test_correct_accepted) { ck_assert_uint_eq(verify_expect("correct", NULL), 0); }
END_TEST

/* Every case trips these. */
START_TEST(test_mutates_input) { ck_assert_uint_eq(verify_expect("mutates_input", "input-mutation"), 11); }
END_TEST
START_TEST(test_overrun) { ck_assert_uint_eq(verify_expect("overrun", "guard-band"), 11); }
END_TEST
START_TEST(test_all_zero) { ck_assert_uint_eq(verify_expect("all_zero", "all-zero"), 11); }
END_TEST
START_TEST(test_unwritten) { ck_assert_uint_eq(verify_expect("unwritten", "nan-prefill"), 11); }
END_TEST
START_TEST(test_scratch) { ck_assert_uint_eq(verify_expect("scratch", "scratch-ceiling"), 11); }
END_TEST
START_TEST(test_stale) { ck_assert_uint_eq(verify_expect("stale", "rerun"), 11); }
END_TEST

/* Only some cases: K > 1 for a reordered sum; trans_b with a non-square B;
 * an allocation alive long enough for the sampler in at least one case. */
START_TEST(test_nondeterministic) { ck_assert_uint_ge(verify_expect("nondeterministic", "determinism"), 1); }
END_TEST
START_TEST(test_wrong) { ck_assert_uint_ge(verify_expect("wrong", "equivalence"), 4); }
END_TEST
START_TEST(test_hidden_alloc) { ck_assert_uint_ge(verify_expect("hidden_alloc", "hidden-allocation"), 1); }
END_TEST

/* In-process candidates (mf_verify without a shared library): one that rejects
 * its arguments, one that returns without writing C. */
static mf_status refuses(mf_context *ctx, mf_dtype dtype, int ta, int tb, int64_t M, int64_t N, int64_t K,
                         const void *A, const void *B, float *C)
{
    (void)ctx, (void)dtype, (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)B, (void)C;
    return MF_ERR_INVALID_SIZE;
}

static mf_status does_nothing(mf_context *ctx, mf_dtype dtype, int ta, int tb, int64_t M, int64_t N,
                              int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx, (void)dtype, (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)B, (void)C;
    return MF_OK;
}

/* Host execution mode only: device buffers are host memory, so plain C can
 * write just before C, as an underrunning kernel would. */
static mf_status writes_before(mf_context *ctx, mf_dtype dtype, int ta, int tb, int64_t M, int64_t N,
                               int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx, (void)dtype, (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)B;
    C[-1] = 0.0f;
    return MF_OK;
}

/* Host execution mode only: flips A's last byte and flips it back (A unchanged when it returns). Each input
 * has pages of its own, all read-only during the call, so the write faults on every case: A of 4 bytes (f0)
 * and an A whose last page is partial alike. */
static mf_status flips_last_input_byte(mf_context *ctx, mf_dtype dtype, int ta, int tb, int64_t M, int64_t N,
                                       int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx, (void)ta, (void)tb, (void)N, (void)B, (void)C;
    volatile unsigned char *a = (volatile unsigned char *)(uintptr_t)A;
    const size_t last = (size_t)M * (size_t)K * (dtype == MF_DTYPE_BF16 ? 2u : 4u) - 1;
    a[last] ^= 0x80u;
    a[last] ^= 0x80u;
    return MF_OK;
}

/* Host execution mode only: changes the byte right after A (its guard, on A's last page or the next). */
static mf_status writes_after_input(mf_context *ctx, mf_dtype dtype, int ta, int tb, int64_t M, int64_t N,
                                    int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx, (void)ta, (void)tb, (void)N, (void)B, (void)C;
    volatile unsigned char *a = (volatile unsigned char *)(uintptr_t)A;
    a[(size_t)M * (size_t)K * (dtype == MF_DTYPE_BF16 ? 2u : 4u)] ^= 0xffu;
    return MF_OK;
}

static void expect_all(mf_matmul_candidate_fn fn, const char *defense, const char *reason_part)
{
    mf_verify_row rows[32];
    size_t n = 0;
    void (*generic)(void);
    memcpy(&generic, &fn, sizeof generic);
    MF_ASSERT_OK(mf_verify(mf_test_ctx(), "matmul", generic, rows, 32, &n));
    ck_assert_uint_eq(n, (size_t)mf_verify_n_cases("matmul"));
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(rows[i].result.pass, 0);
        ck_assert_str_eq(rows[i].defense, defense);
        ck_assert_msg(strstr(rows[i].result.message, reason_part) != NULL, "[%s] reason '%s' lacks '%s'",
                      rows[i].result.shape, rows[i].result.message, reason_part);
        assert_names_element(defense, &rows[i]);
    }
}

START_TEST(test_in_process_error) { expect_all(refuses, "error", "MF_ERR_INVALID_SIZE"); }
END_TEST
START_TEST(test_in_process_unwritten) { expect_all(does_nothing, "nan-prefill", "NaN where ref is finite"); }
END_TEST

START_TEST(test_in_process_underrun)
{
    ck_assert_int_eq(mf_context_backend(mf_test_ctx()), MF_BACKEND_HOST);
    expect_all(writes_before, "guard-band", "wrote before C: byte -4");
}
END_TEST

/* every byte of every input is write-protected in host mode, whatever its size */
START_TEST(test_in_process_input_write_every_byte)
{
    ck_assert_int_eq(mf_context_backend(mf_test_ctx()), MF_BACKEND_HOST);
    expect_all(flips_last_input_byte, "input-write", "wrote to input A at (");
    expect_all(writes_after_input, "guard-band", "wrote past the end of A");
}
END_TEST

/* cross_entropy forward: examples/candidates/ce_forward_*.cu */
START_TEST(test_ce_correct_accepted)
{
    ck_assert_uint_eq(verify_fn_expect("cross_entropy", "ce_forward_correct",
                                       load_symbol("ce_forward_correct", "ce_forward_candidate"), NULL),
                      0);
}
END_TEST

/* wrong on the two cases with label smoothing */
START_TEST(test_ce_no_smoothing)
{
    ck_assert_uint_eq(verify_fn_expect("cross_entropy", "ce_forward_no_smoothing",
                                       load_symbol("ce_forward_no_smoothing", "ce_forward_candidate"),
                                       "equivalence"),
                      2);
}
END_TEST

static mf_status ce_does_nothing(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                 mf_dtype dtype, const void *hidden, const void *weight, const void *bias,
                                 const int64_t *labels, const mf_cross_entropy_options *opts, float *loss,
                                 float *lse)
{
    (void)ctx, (void)n_rows, (void)hidden_dim, (void)vocab, (void)dtype, (void)hidden, (void)weight,
        (void)bias;
    (void)labels, (void)opts, (void)loss, (void)lse;
    return MF_OK;
}

/* host mode: plain C may touch device buffers; one past the end of lse */
static mf_status ce_overruns_lse(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                 mf_dtype dtype, const void *hidden, const void *weight, const void *bias,
                                 const int64_t *labels, const mf_cross_entropy_options *opts, float *loss,
                                 float *lse)
{
    (void)ctx, (void)hidden_dim, (void)vocab, (void)dtype, (void)hidden, (void)weight, (void)bias;
    (void)labels, (void)opts, (void)loss;
    lse[n_rows] = 0.0f;
    return MF_OK;
}

START_TEST(test_ce_in_process)
{
    mf_cross_entropy_forward_candidate_fn a = ce_does_nothing, b = ce_overruns_lse;
    void (*fa)(void), (*fb)(void);
    memcpy(&fa, &a, sizeof fa);
    memcpy(&fb, &b, sizeof fb);
    ck_assert_uint_eq(verify_fn_expect("cross_entropy", "ce_does_nothing", fa, "nan-prefill"), 5);
    ck_assert_uint_eq(verify_fn_expect("cross_entropy", "ce_overruns_lse", fb, "guard-band"), 5);
}
END_TEST

START_TEST(test_bad_arguments)
{
    mf_context *ctx = mf_test_ctx();
    mf_verify_row rows[16];
    size_t n = 99;
    void (*fn)(void) = load_candidate("correct");
    MF_ASSERT_STATUS(mf_verify(NULL, "matmul", fn, rows, 16, &n), MF_ERR_NULL_POINTER);
    ck_assert_uint_eq(n, 0);
    MF_ASSERT_STATUS(mf_verify(ctx, NULL, fn, rows, 16, &n), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_verify(ctx, "matmul", NULL, rows, 16, &n), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_verify(ctx, "matmul", fn, NULL, 16, &n), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_verify(ctx, "matmul", fn, rows, 16, NULL), MF_ERR_NULL_POINTER);
    MF_ASSERT_STATUS(mf_verify(ctx, "matmul", fn, rows, 2, &n), MF_ERR_INVALID_SIZE);
    MF_ASSERT_STATUS(mf_verify(ctx, "matmul.backward", fn, rows, 16, &n), MF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(mf_last_error(), "takes no candidates") != NULL, "%s", mf_last_error());
    MF_ASSERT_STATUS(mf_verify(ctx, "nosuchop", fn, rows, 16, &n), MF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(mf_verify_supported("matmul"), 1);
    ck_assert_int_eq(mf_verify_supported("matmul.backward"), 0);
    ck_assert_int_eq(mf_verify_n_cases("matmul.backward"), -1);
    ck_assert_int_eq(mf_verify_n_cases(NULL), -1);
    ck_assert_int_eq(mf_verify_n_cases("matmul"), 11); /* the first 11 built-in cases */
    ck_assert_int_eq(mf_verify_supported(NULL), 0);
    mf_case_result r;
    /* every registered target: a NULL candidate is an error, not a crash; and a
     * target's run_case called outside mf_verify has no candidate to guard */
    size_t n_ops = 0;
    const mf_op_desc *const *ops = mf_registry(&n_ops);
    int n_targets = 0;
    for (size_t i = 0; i < n_ops; i++)
        for (int t = 0; t < ops[i]->n_verify_targets; t++, n_targets++) {
            const mf_verify_target *tg = &ops[i]->verify_targets[t];
            ck_assert_int_eq(mf_verify_supported(tg->name), 1);
            MF_ASSERT_STATUS(tg->run_case(ctx, NULL, 0, 0, &r), MF_ERR_NULL_POINTER);
            ck_assert_int_eq(r.pass, 0);
            ck_assert_int_eq(tg->run_case(ctx, fn, 0, 0, &r) == MF_OK && r.pass, 0);
        }
    /* at least the 11 targets of matmul .. linear_attention; a new op's targets
     * are visited by the loop above without editing this test */
    ck_assert_int_ge(n_targets, 11);
    ck_assert_ptr_nonnull(strstr(mf_verify_supported_ops(), "linear_attention.backward"));
    ck_assert_int_eq(mf_verify_supported("attention"), 0); /* attention.forward / attention.backward */
    ck_assert_int_eq(mf_verify_supported("attention.backward"), 1);
    ck_assert_int_eq(mf_verify_n_cases("attention.forward"), 8); /* the first 8 built-in cases */
}
END_TEST

/* cross_entropy backward: examples/candidates/ce_backward_*.cu */
START_TEST(test_ce_backward_candidates)
{
    ck_assert_int_eq(mf_verify_n_cases("cross_entropy.backward"), 5);
    ck_assert_uint_eq(verify_fn_expect("cross_entropy.backward", "ce_backward_correct",
                                       load_symbol("ce_backward_correct", "ce_backward_candidate"), NULL),
                      0);
    /* grad_loss ignored: wrong on every case */
    ck_assert_uint_eq(verify_fn_expect("cross_entropy.backward", "ce_backward_no_grad_loss",
                                       load_symbol("ce_backward_no_grad_loss", "ce_backward_candidate"),
                                       "equivalence"),
                      5);
    /* "cross_entropy.forward" names the same target as "cross_entropy" */
    ck_assert_uint_eq(verify_fn_expect("cross_entropy.forward", "ce_forward_correct",
                                       load_symbol("ce_forward_correct", "ce_forward_candidate"), NULL),
                      0);
}
END_TEST

/* host mode: a backward that overwrites lse (an input) */
static mf_status ce_bwd_writes_lse(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                   mf_dtype dtype, const void *hidden, const void *weight, const void *bias,
                                   const int64_t *labels, const mf_cross_entropy_options *opts,
                                   const float *lse, const float *grad_loss, float *grad_hidden,
                                   float *grad_weight, float *grad_bias)
{
    (void)ctx, (void)n_rows, (void)hidden_dim, (void)vocab, (void)dtype, (void)hidden, (void)weight,
        (void)bias;
    (void)labels, (void)opts, (void)grad_loss, (void)grad_hidden, (void)grad_weight, (void)grad_bias;
    ((float *)(uintptr_t)lse)[n_rows - 1] = 0.0f;
    return MF_OK;
}

START_TEST(test_ce_backward_in_process)
{
    mf_cross_entropy_backward_candidate_fn a = ce_bwd_writes_lse;
    void (*fa)(void);
    memcpy(&fa, &a, sizeof fa);
    ck_assert_uint_eq(verify_fn_expect("cross_entropy.backward", "ce_bwd_writes_lse", fa, "input-mutation"),
                      5);
}
END_TEST

/* rope (fused signature): examples/candidates/rope_*.cu */
START_TEST(test_rope_correct_accepted)
{
    ck_assert_uint_eq(
        verify_fn_expect("rope", "rope_correct", load_symbol("rope_correct", "rope_candidate"), NULL), 0);
}
END_TEST

/* wrong on the two backward cases */
START_TEST(test_rope_ignores_direction)
{
    ck_assert_uint_eq(verify_fn_expect("rope", "rope_ignores_direction",
                                       load_symbol("rope_ignores_direction", "rope_candidate"),
                                       "equivalence"),
                      2);
}
END_TEST

/* host mode: plain C may touch device buffers; writes into k (an input) */
static mf_status rope_writes_k(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                               const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx, (void)cfg, (void)dir, (void)pos;
    ((unsigned char *)(uintptr_t)t->k)[0] ^= 1u;
    return MF_OK;
}

/* writes nothing: the bf16 outputs too are pre-filled with (bf16) NaNs */
static mf_status rope_does_nothing(mf_context *ctx, const mf_rope_config *cfg, mf_rope_direction dir,
                                   const mf_rope_tensors *t, const mf_rope_positions *pos)
{
    (void)ctx, (void)cfg, (void)dir, (void)t, (void)pos;
    return MF_OK;
}

START_TEST(test_rope_in_process)
{
    mf_rope_candidate_fn a = rope_writes_k, b = rope_does_nothing;
    void (*fa)(void), (*fb)(void);
    memcpy(&fa, &a, sizeof fa);
    memcpy(&fb, &b, sizeof fb);
    ck_assert_uint_eq(verify_fn_expect("rope", "rope_writes_k", fa, "input-mutation"), 4);
    ck_assert_uint_eq(verify_fn_expect("rope", "rope_does_nothing", fb, "nan-prefill"), 4);
}
END_TEST

/* attention (tiled forward / backward): examples/candidates/attention_*.cu */
START_TEST(test_attention_correct_accepted)
{
    ck_assert_uint_eq(
        verify_fn_expect("attention.forward", "attention_forward_correct",
                         load_symbol("attention_forward_correct", "attention_forward_candidate"), NULL),
        0);
    ck_assert_uint_eq(
        verify_fn_expect("attention.backward", "attention_backward_correct",
                         load_symbol("attention_backward_correct", "attention_backward_candidate"), NULL),
        0);
}
END_TEST

/* no 1/sqrt(D): every case (N = 1 through lse); dk's sign: every case but N = 1 */
START_TEST(test_attention_wrong)
{
    ck_assert_uint_eq(
        verify_fn_expect("attention.forward", "attention_forward_no_scale",
                         load_symbol("attention_forward_no_scale", "attention_forward_candidate"),
                         "equivalence"),
        (size_t)mf_verify_n_cases("attention.forward"));
    ck_assert_uint_eq(
        verify_fn_expect("attention.backward", "attention_backward_dk_sign",
                         load_symbol("attention_backward_dk_sign", "attention_backward_candidate"),
                         "equivalence"),
        (size_t)mf_verify_n_cases("attention.forward") - 1);
}
END_TEST

/* host mode: a backward that overwrites lse (the forward's output, an input
 * here) and one that takes more than 4*B*H*N bytes of scratch */
static mf_status attn_writes_lse(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                                 int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                                 const float *out, const void *dout, const float *lse, float *dq, float *dk,
                                 float *dv)
{
    (void)ctx, (void)dtype, (void)causal, (void)B, (void)H, (void)N, (void)D, (void)Dv, (void)q, (void)k,
        (void)v;
    (void)out, (void)dout, (void)dq, (void)dk, (void)dv;
    ((float *)(uintptr_t)lse)[0] = 0.0f;
    return MF_OK;
}

static mf_status attn_big_scratch(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H,
                                  int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                  const void *v, const float *out, const void *dout, const float *lse,
                                  float *dq, float *dk, float *dv)
{
    void *p = NULL;
    mf_status s = mf_scratch_alloc(ctx, MF_MEM_DEVICE, (size_t)(B * H * N) * 4 + 64, &p);
    if (s != MF_OK) return s;
    mf_scratch_free(ctx, MF_MEM_DEVICE, p);
    void (*fn)(void) = load_symbol("attention_backward_correct", "attention_backward_candidate");
    mf_attention_backward_candidate_fn ok;
    memcpy(&ok, &fn, sizeof ok);
    return ok(ctx, dtype, causal, B, H, N, D, Dv, q, k, v, out, dout, lse, dq, dk, dv);
}

START_TEST(test_attention_in_process)
{
    mf_attention_backward_candidate_fn a = attn_writes_lse, b = attn_big_scratch;
    void (*fa)(void), (*fb)(void);
    memcpy(&fa, &a, sizeof fa);
    memcpy(&fb, &b, sizeof fb);
    ck_assert_uint_eq(verify_fn_expect("attention.backward", "attn_writes_lse", fa, "input-mutation"),
                      (size_t)mf_verify_n_cases("attention.forward"));
    ck_assert_uint_eq(verify_fn_expect("attention.backward", "attn_big_scratch", fb, "scratch-ceiling"),
                      (size_t)mf_verify_n_cases("attention.forward"));
}
END_TEST

/* npt (forward / backward): examples/candidates/npt_*.cu; three cases per pass */
START_TEST(test_npt_candidates)
{
    ck_assert_int_eq(mf_verify_n_cases("npt.forward"), 3);
    ck_assert_int_eq(mf_verify_n_cases("npt.backward"), 3);
    ck_assert_uint_eq(verify_fn_expect("npt.forward", "npt_forward_correct",
                                       load_symbol("npt_forward_correct", "npt_forward_candidate"), NULL),
                      0);
    ck_assert_uint_eq(verify_fn_expect("npt.backward", "npt_backward_correct",
                                       load_symbol("npt_backward_correct", "npt_backward_candidate"), NULL),
                      0);
    ck_assert_uint_eq(verify_fn_expect("npt.forward", "npt_forward_no_modulation",
                                       load_symbol("npt_forward_no_modulation", "npt_forward_candidate"),
                                       "equivalence"),
                      3);
    ck_assert_uint_eq(verify_fn_expect("npt.backward", "npt_backward_no_modulation",
                                       load_symbol("npt_backward_no_modulation", "npt_backward_candidate"),
                                       "equivalence"),
                      3);
}
END_TEST

/* a forward that takes 64 bytes more scratch than the ceiling at opts' chunk */
static mf_status npt_big_scratch(mf_context *ctx, mf_dtype dtype, mf_npt_shape shape, const void *h,
                                 const void *W, const void *A, const void *B, const void *m, const void *bias,
                                 void *out, const mf_npt_options *opts)
{
    void *p = NULL;
    mf_status s = mf_scratch_alloc(ctx, MF_MEM_DEVICE,
                                   mf_npt_factored_forward_scratch_ceiling(dtype, shape, opts) + 64, &p);
    if (s != MF_OK) return s;
    mf_scratch_free(ctx, MF_MEM_DEVICE, p);
    void (*fn)(void) = load_symbol("npt_forward_correct", "npt_forward_candidate");
    mf_npt_forward_candidate_fn ok;
    memcpy(&ok, &fn, sizeof ok);
    return ok(ctx, dtype, shape, h, W, A, B, m, bias, out, opts);
}

START_TEST(test_npt_in_process)
{
    mf_npt_forward_candidate_fn a = npt_big_scratch;
    void (*fa)(void);
    memcpy(&fa, &a, sizeof fa);
    ck_assert_uint_eq(verify_fn_expect("npt.forward", "npt_big_scratch", fa, "scratch-ceiling"), 3);
    mf_case_result r;
    const mf_verify_target *fwd = &mf_registry_find("npt")->verify_targets[0];
    ck_assert_str_eq(fwd->name, "npt.forward");
    MF_ASSERT_STATUS(fwd->run_case(mf_test_ctx(), fa, 3, 0, &r), MF_ERR_INVALID_ARGUMENT);
    MF_ASSERT_STATUS(fwd->run_case(mf_test_ctx(), NULL, 0, 0, &r), MF_ERR_NULL_POINTER);
}
END_TEST

/* linear_attention (forward / backward with a state): examples/candidates/linear_attention_*.cu;
 * 12 rows: the 6 cases causal with a state, then bidirectional */
#define LA_EXPECT(target, lib, sym, defense, n)                                                              \
    ck_assert_uint_eq(verify_fn_expect(target, lib, load_symbol(lib, sym), defense), n)
START_TEST(test_linear_attention_forward_correct)
{
    ck_assert_int_eq(mf_verify_n_cases("linear_attention.forward"), 12);
    LA_EXPECT("linear_attention.forward", "linear_attention_forward_correct",
              "linear_attention_forward_candidate", NULL, 0);
}
END_TEST
START_TEST(test_linear_attention_backward_correct)
{
    LA_EXPECT("linear_attention.backward", "linear_attention_backward_correct",
              "linear_attention_backward_candidate", NULL, 0);
}
END_TEST
/* the state is ignored: wrong on exactly the six causal rows */
START_TEST(test_linear_attention_forward_no_state)
{
    LA_EXPECT("linear_attention.forward", "linear_attention_forward_no_state",
              "linear_attention_forward_candidate", "equivalence", 6);
}
END_TEST
START_TEST(test_linear_attention_backward_no_final_grad)
{
    LA_EXPECT("linear_attention.backward", "linear_attention_backward_no_final_grad",
              "linear_attention_backward_candidate", "equivalence", 6);
}
END_TEST

/* host mode: a backward that writes into grad->d_final_kv (an input) when given */
static mf_status la_writes_dfinal(mf_context *ctx, mf_dtype dtype, int causal, int64_t chunk, int64_t B,
                                  int64_t H, int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                  const void *v, const float *out, const void *dout,
                                  const mf_linear_attention_state *state,
                                  const mf_linear_attention_state_grad *grad, float *dq, float *dk, float *dv)
{
    void (*fn)(void) =
        load_symbol("linear_attention_backward_correct", "linear_attention_backward_candidate");
    mf_linear_attention_backward_candidate_fn ok;
    memcpy(&ok, &fn, sizeof ok);
    mf_status s = ok(ctx, dtype, causal, chunk, B, H, N, D, Dv, q, k, v, out, dout, state, grad, dq, dk, dv);
    if (s == MF_OK && grad != NULL && grad->d_final_kv != NULL) {
        mf_context_synchronize(ctx);
        ((float *)(uintptr_t)grad->d_final_kv)[0] += 1.0f;
    }
    return s;
}

START_TEST(test_linear_attention_in_process)
{
    mf_linear_attention_backward_candidate_fn a = la_writes_dfinal;
    void (*fa)(void);
    memcpy(&fa, &a, sizeof fa);
    ck_assert_uint_eq(verify_fn_expect("linear_attention.backward", "la_writes_dfinal", fa, "input-mutation"),
                      6);
}
END_TEST

/* memfix's own optimized entry points, as candidates of the targets whose
 * signature they have (or through a wrapper adding the variant), are accepted:
 * verify's cases, ceilings and tolerances agree with report's. */
static mf_status own_attn_fwd(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                              int64_t D, int64_t Dv, const void *q, const void *k, const void *v, float *out,
                              float *lse)
{
    return mf_attention_forward(ctx, MF_ATTENTION_TILED, dtype, causal, B, H, N, D, Dv, q, k, v, out, lse);
}
static mf_status own_attn_bwd(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                              int64_t D, int64_t Dv, const void *q, const void *k, const void *v,
                              const float *out, const void *dout, const float *lse, float *dq, float *dk,
                              float *dv)
{
    return mf_attention_backward(ctx, MF_ATTENTION_TILED, dtype, causal, B, H, N, D, Dv, q, k, v, out, dout,
                                 lse, dq, dk, dv);
}

static void own_expect(const char *target, void (*fn)(void))
{
    ck_assert_uint_eq(verify_fn_expect(target, target, fn, NULL), 0);
}

START_TEST(test_own_entries_accepted)
{
    mf_rope_candidate_fn rope = mf_rope_fused;
    mf_attention_forward_candidate_fn af = own_attn_fwd;
    mf_attention_backward_candidate_fn ab = own_attn_bwd;
    mf_npt_forward_candidate_fn nf = mf_npt_forward;
    mf_npt_backward_candidate_fn nb = mf_npt_backward;
    mf_linear_attention_forward_candidate_fn lf = mf_linear_attention_forward;
    mf_linear_attention_backward_candidate_fn lb = mf_linear_attention_backward;
    mf_cross_entropy_forward_candidate_fn cf = mf_cross_entropy_forward;
    mf_cross_entropy_backward_candidate_fn cb = mf_cross_entropy_backward;
    void (*f[9])(void);
    memcpy(&f[0], &rope, sizeof f[0]);
    memcpy(&f[1], &af, sizeof f[1]);
    memcpy(&f[2], &ab, sizeof f[2]);
    memcpy(&f[3], &nf, sizeof f[3]);
    memcpy(&f[4], &nb, sizeof f[4]);
    memcpy(&f[5], &lf, sizeof f[5]);
    memcpy(&f[6], &lb, sizeof f[6]);
    memcpy(&f[7], &cf, sizeof f[7]);
    memcpy(&f[8], &cb, sizeof f[8]);
    static const char *const targets[9] = { "rope",
                                            "attention.forward",
                                            "attention.backward",
                                            "npt.forward",
                                            "npt.backward",
                                            "linear_attention.forward",
                                            "linear_attention.backward",
                                            "cross_entropy",
                                            "cross_entropy.backward" };
    for (int i = 0; i < 9; i++) own_expect(targets[i], f[i]);
}
END_TEST

/* ---- mf_verify_lib: the candidate in worker processes ------------------------ */
/* Verifies matmul example 'name' through workers; returns the rows rejected,
 * each of which must name 'defense' (NULL: none may be). */
/* lib_expect's options and what it counted besides the rejections */
static int g_keep_going;
static size_t g_not_run;

static size_t lib_expect(const char *name, const char *defense, double timeout_s, int orders)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/libmatmul_%s.so", MF_CANDIDATE_DIR, name);
    mf_verify_options o;
    mf_verify_options_init(&o);
    ck_assert(o.timeout_s == 0 && o.orders == 2); /* 0: the limit derived from memfix's own time */
    o.worker = MF_VERIFY_WORKER_PATH;
    o.lib = path;
    o.symbol = "matmul_candidate";
    o.timeout_s = timeout_s;
    o.orders = orders;
    o.keep_going = g_keep_going;
    g_not_run = 0;
    const int n_cases = mf_verify_n_cases("matmul");
    mf_verify_row *rows = calloc((size_t)n_cases, sizeof *rows);
    ck_assert_ptr_nonnull(rows);
    size_t n = 0, rejected = 0;
    MF_ASSERT_OK(mf_verify_lib(mf_test_ctx(), "matmul", &o, rows, (size_t)n_cases, &n));
    ck_assert_uint_eq(n, (size_t)n_cases);
    for (size_t i = 0; i < n; i++) {
        const mf_verify_row *r = &rows[i];
        if (strcmp(r->defense, "not-run") == 0) { /* after a timeout */
            ck_assert(!r->result.pass && strstr(r->result.message, "--keep-going") != NULL);
            g_not_run++;
            continue;
        }
        ck_assert_msg(r->schedule[0] != '\0', "%s [%s]: no thread order", name, r->result.shape);
        if (r->result.pass) continue;
        rejected++;
        ck_assert_msg(defense != NULL && strcmp(r->defense, defense) == 0, "%s [%s]: rejected by '%s': %s",
                      name, r->result.shape, r->defense, r->result.message);
        ck_assert_msg(r->result.message[0] != '\0', "%s [%s]: rejected without a reason", name,
                      r->result.shape);
        assert_names_element(name, r);
    }
    free(rows);
    return rejected;
}

START_TEST(test_lib_correct) { ck_assert_uint_eq(lib_expect("correct", NULL, 60, 1), 0); }
END_TEST
/* the worker's exit ends only that case's call: the following cases get a new worker */
START_TEST(test_lib_exit_third)
{
    const size_t r = lib_expect("exit_third", "exit", 60, 0);
    ck_assert_uint_ge(r, 1);
    ck_assert_uint_lt(r, 11);
}
END_TEST
START_TEST(test_lib_tolerance_ctor)
{
    ck_assert_uint_eq(lib_expect("tolerance_ctor", "equivalence", 60, 0), 11);
}
END_TEST
/* f2 hangs: judged once, the 8 fixed cases after it are not run; with keep_going all of them run */
START_TEST(test_lib_host_loop)
{
    g_keep_going = 0;
    ck_assert_uint_eq(lib_expect("host_loop", "timeout", 5, 0), 1);
    ck_assert_uint_eq(g_not_run, 8);
    g_keep_going = 1;
    ck_assert_uint_eq(lib_expect("host_loop", "timeout", 5, 0), 1);
    ck_assert_uint_eq(g_not_run, 0);
    g_keep_going = 0;
}
END_TEST
/* every case but the two M = N = 1 ones, where thread (0, 0) is the only one with an output */
START_TEST(test_lib_smem_race) { ck_assert_uint_eq(lib_expect("smem_race", "schedule", 60, 1), 9); }
END_TEST
START_TEST(test_lib_stale) { ck_assert_uint_eq(lib_expect("stale", "rerun", 60, 0), 11); }
END_TEST

START_TEST(test_lib_bad_arguments)
{
    mf_verify_options o;
    mf_verify_options_init(&o);
    mf_verify_row row;
    size_t n = 7;
    ck_assert_int_eq(mf_verify_lib(mf_test_ctx(), "matmul", &o, &row, 1, &n), MF_ERR_NULL_POINTER);
    ck_assert_uint_eq(n, 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/libmatmul_correct.so", MF_CANDIDATE_DIR);
    o.worker = MF_VERIFY_WORKER_PATH;
    o.lib = path;
    o.symbol = "nosuch";
    mf_verify_row rows[16];
    ck_assert_int_eq(mf_verify_lib(mf_test_ctx(), "matmul", &o, rows, 16, &n), MF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(mf_last_error(), "no symbol 'nosuch'"));
    o.symbol = "matmul_candidate";
    o.timeout_s = -1; /* 0 derives the limit; a negative or infinite one is refused */
    ck_assert_int_eq(mf_verify_lib(mf_test_ctx(), "matmul", &o, rows, 16, &n), MF_ERR_INVALID_ARGUMENT);
    o.timeout_s = INFINITY;
    ck_assert_int_eq(mf_verify_lib(mf_test_ctx(), "matmul", &o, rows, 16, &n), MF_ERR_INVALID_ARGUMENT);
    o.timeout_s = 60;
    o.sanitize = "memory";
    ck_assert_int_eq(mf_verify_lib(mf_test_ctx(), "matmul", &o, rows, 16, &n), MF_ERR_INVALID_ARGUMENT);
    o.sanitize = NULL;
    ck_assert_int_eq(mf_verify_lib(mf_test_ctx(), "matmul", &o, rows, 2, &n), MF_ERR_INVALID_SIZE);
    ck_assert_int_eq(mf_verify_lib(mf_test_ctx(), "nosuch", &o, rows, 16, &n), MF_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ---- the command, in process ---------------------------------------------------------- */
static int cli(const char *const *args, int n, char **out_text, char **err_text)
{
    char *argv[32];
    ck_assert_int_lt(n, 32);
    argv[0] = (char *)"memfix";
    for (int i = 0; i < n; i++) argv[i + 1] = (char *)args[i];
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(out_text, &olen), *err = open_memstream(err_text, &elen);
    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(err);
    int rc = mf_cli_main(n + 1, argv, out, err);
    fclose(out);
    fclose(err);
    return rc;
}

START_TEST(test_cli)
{
    char lib_ok[1024], lib_bad[1024];
    snprintf(lib_ok, sizeof lib_ok, "%s/libmatmul_correct.so", MF_CANDIDATE_DIR);
    snprintf(lib_bad, sizeof lib_bad, "%s/libmatmul_overrun.so", MF_CANDIDATE_DIR);
    char *o = NULL, *e = NULL;
    int rc;
#define RUN(...)                                                                                             \
    do {                                                                                                     \
        const char *a_[] = { __VA_ARGS__ };                                                                  \
        free(o);                                                                                             \
        free(e);                                                                                             \
        o = e = NULL;                                                                                        \
        rc = cli(a_, (int)(sizeof a_ / sizeof a_[0]), &o, &e);                                               \
    } while (0)
    RUN("verify", "--help");
    ck_assert_int_eq(rc, MF_CLI_OK);
    ck_assert_ptr_nonnull(strstr(o, "hidden-allocation"));
    RUN("verify", "--op", "matmul", "--lib", lib_ok, "--symbol", "matmul_candidate", "--backend", "host");
    ck_assert_msg(rc == MF_CLI_OK, "rc %d: %s%s", rc, o, e);
    ck_assert_ptr_nonnull(strstr(o, "candidate ACCEPTED"));
    RUN("verify", "--op=matmul", "--lib", lib_bad, "--symbol=matmul_candidate", "--backend=host", "--json");
    ck_assert_msg(rc == MF_CLI_FAILED, "rc %d: %s%s", rc, o, e);
    ck_assert_ptr_nonnull(strstr(o, "\"defense\":\t\"guard-band\""));
    ck_assert_ptr_nonnull(strstr(o, "\"reason\":\t\"wrote past the end of C"));
    ck_assert_ptr_nonnull(strstr(o, "\"ceiling_bytes\""));
    RUN("verify", "--op", "matmul", "--lib", lib_bad, "--symbol", "matmul_candidate", "--backend", "host");
    ck_assert_int_eq(rc, MF_CLI_FAILED);
    ck_assert_ptr_nonnull(strstr(o, "by guard-band"));
    /* usage errors */
    RUN("verify", "--op", "matmul", "--lib", lib_ok);
    ck_assert_int_eq(rc, MF_CLI_USAGE);
    ck_assert_ptr_nonnull(strstr(e, "required"));
    RUN("verify", "--op", "matmul.backward", "--lib", lib_ok, "--symbol", "matmul_candidate");
    ck_assert_int_eq(rc, MF_CLI_USAGE);
    ck_assert_ptr_nonnull(strstr(e, "unknown op"));
    RUN("verify", "--op", "nosuch", "--lib", lib_ok, "--symbol", "matmul_candidate");
    ck_assert_int_eq(rc, MF_CLI_USAGE);
    RUN("verify", "--op", "attention", "--lib", lib_ok, "--symbol", "matmul_candidate");
    ck_assert_int_eq(rc, MF_CLI_USAGE);
    ck_assert_msg(strstr(e, "use --op attention.forward or attention.backward") != NULL, "%s", e);
    RUN("verify", "--op", "matmul", "--lib", "/nonexistent/libx.so", "--symbol", "matmul_candidate");
    ck_assert_int_eq(rc, MF_CLI_USAGE);
    ck_assert_ptr_nonnull(strstr(e, "cannot load"));
    RUN("verify", "--op", "matmul", "--lib", lib_ok, "--symbol", "no_such_symbol", "--backend", "host");
    ck_assert_int_eq(rc, MF_CLI_USAGE);
    ck_assert_ptr_nonnull(strstr(e, "no symbol 'no_such_symbol'"));
    RUN("verify", "--op", "matmul", "--lib", lib_ok, "--symbol", "matmul_candidate", "--backend", "gpu");
    ck_assert_int_eq(rc, MF_CLI_USAGE);
    RUN("verify", "--op");
    ck_assert_int_eq(rc, MF_CLI_USAGE);
    RUN("verify", "--frobnicate");
    ck_assert_int_eq(rc, MF_CLI_USAGE);
#undef RUN
    free(o);
    free(e);
}
END_TEST

/* The line of text t holding 'key' (a copy, at most cap - 1 characters); "" when none. */
static const char *line_with(const char *t, const char *key, char *buf, size_t cap)
{
    const char *p = t != NULL ? strstr(t, key) : NULL;
    buf[0] = '\0';
    if (p == NULL) return buf;
    const char *b = p, *e = p;
    while (b > t && b[-1] != '\n') b--;
    while (*e != '\0' && *e != '\n') e++;
    snprintf(buf, cap, "%.*s", (int)(e - b), b);
    return buf;
}

/* The text table: a line per compared output with that output's tolerance, error and budget (attention's
 * backward on f1: lse's atol 2e-06 beside lse's error, dk's 5e-06 beside dk's failing error); "n/a" in the
 * time column always with its reason, in the table and in --json (a case that timed out, the cases not run
 * after it). */
START_TEST(test_cli_table)
{
    char lib[1024], line[1024];
    char *o = NULL, *e = NULL;
    snprintf(lib, sizeof lib, "%s/libattention_backward_dk_sign.so", MF_CANDIDATE_DIR);
    const char *a1[] = { "verify",
                         "--op",
                         "attention.backward",
                         "--lib",
                         lib,
                         "--symbol",
                         "attention_backward_candidate",
                         "--backend",
                         "host",
                         "--orders",
                         "0",
                         "--case",
                         "f1" };
    int rc = cli(a1, (int)(sizeof a1 / sizeof a1[0]), &o, &e);
    ck_assert_msg(rc == MF_CLI_FAILED, "rc %d: %s%s", rc, o, e);
    ck_assert_msg(strstr(o, "output") != NULL && strstr(o, "budget used") != NULL, "%s", o);
    static const char *const keys[5] = { " out ", " lse ", " dq ", " dk FAIL ", " dv " };
    static const char *const atol[5] = { " 2e-06 ", " 2e-06 ", " 5e-06 ", " 5e-06 ", " 5e-06 " };
    for (int k = 0; k < 5; k++) {
        line_with(o, keys[k], line, sizeof line);
        ck_assert_msg(strstr(line, atol[k]) != NULL, "no line for%swith its atol%s:\n%s", keys[k], atol[k],
                      o);
        ck_assert_msg(strstr(line, "%") != NULL, "line of%swithout its budget: %s", keys[k], line);
    }
    ck_assert_msg(strstr(line_with(o, " dk FAIL ", line, sizeof line), "e+0") != NULL, "dk's error: %s",
                  line);
    ck_assert_msg(strstr(o, "dk: 2368 of 2368 entries outside") != NULL, "%s", o);
    free(o);
    free(e);
    o = e = NULL;
    snprintf(lib, sizeof lib, "%s/libmatmul_host_loop.so", MF_CANDIDATE_DIR);
    for (int json = 0; json < 2; json++) {
        const char *a2[] = { "verify",
                             "--op",
                             "matmul",
                             "--lib",
                             lib,
                             "--symbol",
                             "matmul_candidate",
                             "--backend",
                             "host",
                             "--orders",
                             "0",
                             "--cases",
                             "0",
                             "--timeout",
                             "1",
                             "--seed",
                             "1",
                             json ? "--json" : "--keep-going" };
        rc = cli(a2, (int)(sizeof a2 / sizeof a2[0]), &o, &e);
        ck_assert_msg(rc == MF_CLI_FAILED, "rc %d: %s%s", rc, o, e);
        if (!json) { /* --keep-going: every case runs, f2 times out, the others have a ratio */
            line_with(o, "M=17 N=33 K=19 ta=0 tb=0", line, sizeof line);
            ck_assert_msg(strstr(line, "n/a (the candidate's call did not complete)") != NULL, "%s", o);
            ck_assert_msg(strstr(line_with(o, "M=1 N=1 K=1 ta=0 tb=0", line, sizeof line), "x") != NULL, "%s",
                          o);
        } else { /* the cases after f2 are not run */
            ck_assert_msg(strstr(o, "\"time_note\":\t\"not run\"") != NULL, "%s", o);
            ck_assert_msg(strstr(o, "\"time_note\":\t\"the candidate's call did not complete\"") != NULL,
                          "%s", o);
            ck_assert_msg(strstr(o, "\"time_note\":\tnull") != NULL, "%s", o);
        }
        free(o);
        free(e);
        o = e = NULL;
    }
    const char *a3[] = {
        "verify",    "--op",   "matmul",   "--lib", lib,       "--symbol", "matmul_candidate",
        "--backend", "host",   "--orders", "0",     "--cases", "0",        "--timeout",
        "1",         "--seed", "1"
    };
    rc = cli(a3, (int)(sizeof a3 / sizeof a3[0]), &o, &e);
    ck_assert_msg(rc == MF_CLI_FAILED, "rc %d: %s%s", rc, o, e);
    line_with(o, "M=17 N=33 K=19 ta=1 tb=0", line, sizeof line); /* f3, after the timeout */
    ck_assert_msg(strstr(line, "not-run") != NULL && strstr(line, "n/a (not run)") != NULL, "%s", o);
    free(o);
    free(e);
}
END_TEST

static Suite *verify_suite(void)
{
    Suite *s = suite_create("verify");
    TCase *tc = tcase_create("candidates");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, test_correct_accepted);
    tcase_add_test(tc, test_mutates_input);
    tcase_add_test(tc, test_overrun);
    tcase_add_test(tc, test_all_zero);
    tcase_add_test(tc, test_unwritten);
    tcase_add_test(tc, test_scratch);
    tcase_add_test(tc, test_stale);
    tcase_add_test(tc, test_nondeterministic);
    tcase_add_test(tc, test_wrong);
    tcase_add_test(tc, test_hidden_alloc);
    tcase_add_test(tc, test_in_process_error);
    tcase_add_test(tc, test_in_process_unwritten);
    tcase_add_test(tc, test_in_process_underrun);
    tcase_add_test(tc, test_in_process_input_write_every_byte);
    tcase_add_test(tc, test_ce_correct_accepted);
    tcase_add_test(tc, test_ce_no_smoothing);
    tcase_add_test(tc, test_ce_in_process);
    tcase_add_test(tc, test_ce_backward_candidates);
    tcase_add_test(tc, test_ce_backward_in_process);
    tcase_add_test(tc, test_rope_correct_accepted);
    tcase_add_test(tc, test_rope_ignores_direction);
    tcase_add_test(tc, test_rope_in_process);
    tcase_add_test(tc, test_attention_correct_accepted);
    tcase_add_test(tc, test_attention_wrong);
    tcase_add_test(tc, test_attention_in_process);
    tcase_add_test(tc, test_npt_candidates);
    tcase_add_test(tc, test_npt_in_process);
    tcase_add_test(tc, test_linear_attention_forward_correct);
    tcase_add_test(tc, test_linear_attention_backward_correct);
    tcase_add_test(tc, test_linear_attention_forward_no_state);
    tcase_add_test(tc, test_linear_attention_backward_no_final_grad);
    tcase_add_test(tc, test_linear_attention_in_process);
    tcase_add_test(tc, test_own_entries_accepted);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    TCase *tlib = tcase_create("isolation");
    tcase_add_checked_fixture(tlib, mf_test_setup, mf_test_teardown);
    tcase_add_test(tlib, test_lib_correct);
    tcase_add_test(tlib, test_lib_exit_third);
    tcase_add_test(tlib, test_lib_tolerance_ctor);
    tcase_add_test(tlib, test_lib_host_loop);
    tcase_add_test(tlib, test_lib_smem_race);
    tcase_add_test(tlib, test_lib_stale);
    tcase_add_test(tlib, test_lib_bad_arguments);
    suite_add_tcase(s, tlib);
    TCase *tcli = tcase_create("cli");
    tcase_add_test(tcli, test_cli);
    tcase_add_test(tcli, test_cli_table);
    suite_add_tcase(s, tcli);
    return s;
}

int main(void) { return mf_test_run(verify_suite()); }
