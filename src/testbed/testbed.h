/* The testbed: what runs an op's built-in case for `memfix report`, `memfix
 * verify` and the registry tests. Internal (not installed); used by the ops'
 * descriptors (src/ops/<op>.c) and by memfix verify (src/testbed/verify*.c).
 *
 * A case runs in the order of a CUTLASS testbed: seeded inputs
 * (mf_tb_make_input), the reference on the host with its scratch measured,
 * outputs pre-filled with NaN (mf_tb_fill_nan), the optimized entry or a
 * candidate (through mf_tb_guard) with device scratch measured, every output
 * compared with its tolerance row through mf_tb_compare (the one comparison
 * path), and the verdict (mf_tb_verdict, mf_tb_case_error) with an mf_failure
 * kind that memfix verify maps to a defense. */
#ifndef MEMFIX_TESTBED_H
#define MEMFIX_TESTBED_H

#include "memfix/check.h"
#include "memfix/registry.h"
#include "mf_internal.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host buffers ------------------------------------------------------------------ */
/* snprintf "%s" into dst (capacity cap), truncating; NULL src gives "". */
void mf_tb_copy_msg(char *dst, size_t cap, const char *src);
/* For snprintf's return 'written' into dst (capacity cap): when the text did not fit, its last
 * three characters become "..." so that a cut description says it was cut. */
void mf_tb_mark_cut(char *dst, size_t cap, int written);
/* n seeded uniform values in [lo, hi) of dtype (F32 or BF16) into p. */
void mf_tb_fill_uniform(mf_dtype dtype, void *p, size_t n, uint64_t seed, float lo, float hi);
/* malloc(n * dtype size) filled by mf_tb_fill_uniform; NULL when out of memory. */
void *mf_tb_make_input(mf_dtype dtype, size_t n, uint64_t seed, float lo, float hi);
/* n copies of dtype's NaN prefill (MF_NAN_FILL_*_BITS) into p, so an unwritten output fails. */
void mf_tb_fill_nan(mf_dtype dtype, void *p, size_t n);
/* n values of dtype at src widened to fp32 into dst. */
void mf_tb_to_f32(mf_dtype dtype, const void *src, float *dst, size_t n);

/* ---- the case result ----------------------------------------------------------------- */
/* The start of every run_case: *out zeroed and named after op, then ctx, the
 * variant (in [0, n_variants)) and the case (in [0, n_cases)) checked:
 * MF_ERR_NULL_POINTER or MF_ERR_INVALID_ARGUMENT. */
mf_status mf_tb_case_begin(mf_case_result *out, const char *op, mf_context *ctx, int variant, int n_variants,
                           int case_index, int n_cases);
/* out->variant, out->backend (ctx's) and out->dtype. */
void mf_tb_case_labels(mf_case_result *out, mf_context *ctx, const char *variant, mf_dtype dtype);
/* The tolerance row "<base>.<dtype name>" (e.g. "attention.grad.bf16"); NULL
 * and an MF_ERR_INTERNAL error when src/core/tolerance.c has none. */
const mf_tolerance *mf_tb_tolerance(const char *base, mf_dtype dtype);
/* THE comparison of one output: mf_compare_f32_axes under tol on the output's
 * axes (every compared output has them, so that a reason names its element in
 * the op's own axes, "(b=0, h=1, row=17, col=3)": a NULL axes, or axes that do
 * not hold n elements, is MF_ERR_INTERNAL), the worst absolute and relative
 * errors kept in out; the first failing output (while *all_pass) writes
 * "<what>: <reason>" to out->message, its kind to out->failure, and clears
 * *all_pass. A failing output is dumped (every flagged index) to
 * $MF_TEST_DUMP_DIR/<op>-<variant>-<what>-<shape hash>.txt when that variable is
 * set. Returns the comparison's status (bad arguments). */
mf_status mf_tb_compare(const float *got, const float *ref, size_t n, const mf_tolerance *tol,
                        const mf_axes *axes, const char *what, mf_case_result *out, int *all_pass);
/* The same under the row mf_tb_tolerance(tol_base, dtype). */
mf_status mf_tb_compare_row(const float *got, const float *ref, size_t n, const mf_axes *axes,
                            const char *what, const char *tol_base, mf_dtype dtype, mf_case_result *out,
                            int *all_pass);
/* axes of up to MF_AXES_MAX extents: mf_tb_axes("b h row col", 4, (int64_t[]){ B, H, N, D }) */
mf_axes mf_tb_axes(const char *names, int rank, const int64_t *dim);
/* The element holding byte 'at' of a buffer of 'bytes' bytes with axes a (elements of bytes / count(a)
 * bytes each) as mf_axes_format writes it, "(row=3, col=7)"; "byte <at>" when a is NULL or does not
 * divide bytes. */
void mf_tb_element_at(const mf_axes *a, size_t bytes, size_t at, char *buf, size_t cap);
/* The verdict: out->pass = pass && opt_peak <= ceiling; when only the memory
 * check fails, out->message says so and out->failure is MF_FAILURE_SCRATCH_CEILING. */
void mf_tb_verdict(mf_case_result *out, int pass);
/* On a failing status: out->pass = 0, out->failure = MF_FAILURE_ERROR and
 * out->message = the last error. */
void mf_tb_case_error(mf_case_result *out, mf_status st);

/* ---- a case's tensors ---------------------------------------------------------------- */
/* One tensor of a case, listed in a table: an input (seeded on the host,
 * uploaded) or an output (NaN-filled on the host and the device, so an
 * unwritten output fails; compared after the run under the row
 * "<tol>.<dtype>"). Inputs are stored in the case's dtype; an output in f32
 * (MF_TB_OUT) or in the case's dtype: on the device only (MF_TB_OUT_DT: the
 * reference writes f32) or by the reference too (MF_TB_OUT_DT_REF). An
 * output in the case's dtype is NaN-filled with the dtype's NaN and widened
 * to f32 for the comparison. */
typedef enum mf_tb_role { MF_TB_IN = 0, MF_TB_OUT = 1, MF_TB_OUT_DT = 2, MF_TB_OUT_DT_REF = 3 } mf_tb_role;
typedef struct mf_tb_tensor {
    const char *name;
    mf_tb_role role;
    size_t n;        /* elements */
    float lo, hi;    /* inputs: the seeded range [lo, hi) */
    const char *tol; /* outputs: the tolerance row's base, e.g. "attention.out"; NULL: not compared */
    void *host;      /* inputs: the data; outputs: the reference's result */
    float *got;      /* outputs: the device's result, downloaded (and widened) by mf_tb_tensors_compare */
    void *dev;       /* the device buffer */
    mf_axes axes;    /* compared outputs: the op's axes of its n elements ("b h row col"), which the
                      * comparison's reason names an element by */
} mf_tb_tensor;

/* Every tensor's device buffer (and an input's host buffer) carries MF_TB_GUARD
 * NaN elements after its n: a read past the end of an input brings a NaN into
 * the result (even where a padded tile multiplies it by zero), and an output's
 * guard must still be NaN after the run (a write past the end fails, kind
 * MF_FAILURE_NONFINITE). */
#define MF_TB_GUARD 64
/* Host buffers: the k-th input seeded with seed + k, outputs (host and got) NaN
 * (host in its role's dtype, got in f32). */
mf_status mf_tb_tensors_make(mf_tb_tensor *t, int n, mf_dtype dtype, uint64_t seed);
/* Device buffers in table order: inputs uploaded, outputs NaN-filled (with
 * the NaN of the dtype the role stores them in). */
mf_status mf_tb_tensors_upload(mf_context *ctx, mf_tb_tensor *t, int n, mf_dtype dtype);
/* Downloads every output (widened to f32 into got), checks its guard, then
 * compares each (table order, the reference widened to f32) through
 * mf_tb_compare_row. */
mf_status mf_tb_tensors_compare(mf_context *ctx, mf_tb_tensor *t, int n, mf_dtype dtype, mf_case_result *out,
                                int *all_pass);
/* The end of a case's run: every output compared (mf_tb_tensors_compare),
 * then the verdict (mf_tb_verdict). */
mf_status mf_tb_tensors_verdict(mf_context *ctx, mf_tb_tensor *t, int n, mf_dtype dtype, mf_case_result *out);
/* Frees the device and host buffers (NULL-safe). */
void mf_tb_tensors_free(mf_context *ctx, mf_tb_tensor *t, int n);

/* ---- guarded candidate calls (memfix verify) ------------------------------------------ */
/* The longest reason a defense of a guarded call gives (its text names the buffer and the element). */
#define MF_TB_REASON_MAX 384

/* One buffer of a candidate's call: an input (its device bytes are copied into
 * a guarded buffer) or an output (a NaN-filled guarded buffer of dtype, copied
 * back to dev after the checks). dev == NULL: an optional buffer not given. */
typedef struct mf_tb_buffer {
    const char *name;
    const void *dev;
    size_t bytes;
    mf_dtype dtype; /* outputs: the NaN pattern */
    mf_axes axes;   /* the op's axes of its elements: a rejection names an element by them ("changed input A
                     * at (row=3, k=1)"); names NULL: by its byte */
} mf_tb_buffer;

/* A guarded buffer: [1 KiB guard][bytes][1 KiB guard] on the device. An input in
 * host execution mode is 'paged': its bytes start on a page boundary and the
 * allocation runs to the end of their last page, so the pages holding the input
 * hold nothing else and can be write-protected whole (mem_defense.c). */
typedef struct mf_tb_guarded {
    const char *name;
    unsigned char *base;  /* device: [guard][bytes][guard] */
    unsigned char *image; /* host: what base must hold (guards exact; interior = the data) */
    size_t bytes;
    unsigned char *alloc; /* the allocation holding base (mf_buffer_free's pointer) */
    int paged;            /* base + 1 KiB is page-aligned, and its pages up to bytes are the buffer's */
    mf_axes axes;         /* the buffer's (mf_tb_buffer.axes) */
} mf_tb_guarded;

/* Calls the candidate on the guarded buffers (mf_tb_ptr(bufs, i) in the order
 * of the mf_tb_buffer list); args: the op's scalars. */
typedef mf_status (*mf_tb_call_fn)(mf_context *ctx, const void *args, mf_tb_guarded *bufs);

/* Guarded copies of sp[0..n_in) (inputs) and sp[n_in..n) (outputs); 'call'
 * twice with every defense (guard bands, input mutation, hidden allocation,
 * determinism); then the first run's outputs uploaded to sp[i].dev. bufs: n
 * entries of scratch. On a rejection the status is MF_ERR_MISMATCH and memfix
 * verify records the defense. */
mf_status mf_tb_guard(mf_context *ctx, const mf_tb_buffer *sp, int n_in, int n, mf_tb_call_fn call,
                      const void *args, mf_tb_guarded *bufs);
/* A target's run_id called with a NULL candidate: *out zeroed (out may be
 * NULL) and MF_ERR_NULL_POINTER "<what> is NULL" reported for func
 * (MF_TB_VERIFY_RUNS). */
mf_status mf_tb_null_candidate(const char *func, const char *what, mf_case_result *out);
/* A target's run_case (mf_verify_target.run_case: built-in case case_index)
 * defined as its run_id on mf_tb_fixed_id(case_index). */
#define MF_TB_RUN_FIXED(name, run_id)                                                                        \
    static mf_status name(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t seed_salt,      \
                          mf_case_result *out)                                                               \
    {                                                                                                        \
        const mf_case_id id = mf_tb_fixed_id(case_index);                                                    \
        return run_id(ctx, candidate, &id, seed_salt, out);                                                  \
    }
/* A target's run_id 'name_id' and run_case 'name' for an op whose guarded
 * case is one expression: name_id(ctx, candidate, id, seed_salt, out) answers
 * MF_ERR_NULL_POINTER for a NULL candidate, else evaluates 'run' (of ctx, id,
 * seed_salt and out: the op's case with its guard as the entry); name is
 * name_id on fixed ids (MF_TB_RUN_FIXED). */
#define MF_TB_VERIFY_RUNS(name, name_id, run)                                                                \
    static mf_status name_id(mf_context *ctx, void (*candidate)(void), const mf_case_id *id,                 \
                             uint64_t seed_salt, mf_case_result *out)                                        \
    {                                                                                                        \
        if (candidate == NULL) return mf_tb_null_candidate(#name_id, "candidate", out);                      \
        return run;                                                                                          \
    }                                                                                                        \
    MF_TB_RUN_FIXED(name, name_id)
/* A target's describe (mf_verify_target.describe) for one pass of an op whose
 * describe_pass(id, pass, buf, cap, bytes) describes every pass. */
#define MF_TB_DESCRIBE_PASS(name, describe_pass, pass)                                                       \
    static mf_status name(const mf_case_id *id, char *buf, size_t cap, size_t *bytes)                        \
    {                                                                                                        \
        return describe_pass(id, pass, buf, cap, bytes);                                                     \
    }
/* A target's own entry (mf_verify_target.own): memfix's entry point of the
 * candidate's type, as the registry stores candidates. */
#define MF_TB_OWN(fn) ((void (*)(void))(fn))
/* The device pointer of guarded buffer i (NULL for a buffer not given). */
void *mf_tb_ptr(mf_tb_guarded *bufs, int i);
/* The candidate memfix verify is running on this thread (cast it to the
 * target's candidate type); NULL outside a verification. */
void (*mf_tb_candidate(void))(void);

/* ---- case ids and seeded random cases (src/testbed/cases.c) ------------ */
/* A splitmix64 stream: the one generator of every op's random cases. */
typedef struct mf_tb_rng {
    uint64_t s;
} mf_tb_rng;
/* The stream of a generated case: a function of the target's name, id->seed,
 * id->kind and id->index only. */
mf_tb_rng mf_tb_case_rng(const char *target, const mf_case_id *id);
uint64_t mf_tb_rand_u64(mf_tb_rng *r);
/* Uniform in [lo, hi] (inclusive; lo <= hi). */
int64_t mf_tb_rand_int(mf_tb_rng *r, int64_t lo, int64_t hi);
/* One of the n values of v. */
int64_t mf_tb_rand_pick(mf_tb_rng *r, const int64_t *v, int n);
/* 1 with probability num/den. */
int mf_tb_rand_chance(mf_tb_rng *r, int num, int den);
/* The seed of a case's inputs: base + fixed_index * stride for a fixed case
 * (the values the built-in cases always had), a mix of seed and index else;
 * seed_salt != 0 (verify's second sweep) draws others. */
uint64_t mf_tb_case_seed(const mf_case_id *id, uint64_t base, uint64_t stride, uint64_t seed_salt);
/* run_case's start for a case id: mf_tb_case_begin with a fixed id's index
 * range-checked against n_fixed (random and large ids are not: their
 * generator answers for them). */
mf_status mf_tb_case_begin_id(mf_case_result *out, const char *op, mf_context *ctx, int variant,
                              int n_variants, const mf_case_id *id, int n_fixed);
/* memfix verify --dump: failing outputs of this thread's cases are dumped as
 * <stem>-<output>.{txt,expected.f32,got.f32} (stem "<dir>/<target>-<case id>");
 * "" or NULL: the default ($MF_TEST_DUMP_DIR/<op>-<variant>-<output>-<hash>.txt,
 * flagged elements only, when that variable is set). */
void mf_tb_set_dump_stem(const char *stem);
/* Writes bytes of data to "<stem><suffix>"; 1 on success. */
int mf_tb_dump_raw(const char *stem, const char *suffix, const void *data, size_t bytes);
/* A fixed id. */
mf_case_id mf_tb_fixed_id(int index);

/* ---- memfix bench sweeps (mf_bench_case, registry.h) ------------------------------------ */
/* 'bytes' of host memory kept in c->host[] (freed by memfix bench); NULL (and
 * *s = MF_ERR_OUT_OF_MEMORY) when out of memory or when *s is already an error. */
void *mf_tb_bench_alloc(mf_bench_case *c, size_t bytes, mf_status *s);
/* n uniform floats in [-1, 1) of seed, kept in c->host[] (freed by memfix
 * bench); NULL (and *s = MF_ERR_OUT_OF_MEMORY) when out of memory or when *s
 * is already an error. */
float *mf_tb_bench_host(mf_bench_case *c, size_t n, uint64_t seed, mf_status *s);
/* A device buffer of 'bytes' (a copy of host when non-NULL), kept in c->dev[];
 * NULL when *s is or becomes an error. */
void *mf_tb_bench_dev(mf_context *ctx, mf_bench_case *c, const void *host, size_t bytes, mf_status *s);

/* The buffers of a sweep whose optimized call takes n_in fp32 inputs and
 * writes one fp32 output: input i (n[i] floats) seeded with seed0 + i on the
 * host with its device copy, then c->ref_out (host) and c->out_dev (device)
 * of out_n floats, c->out_n = out_n. Returns the first failing status. */
mf_status mf_tb_bench_io(mf_context *ctx, mf_bench_case *c, int n_in, const size_t *n, uint64_t seed0,
                         size_t out_n);

/* ---- memfix bench --targets (mf_bench_target_run, registry.h) ---------------------------- */
/* An input of n elements of dtype, uniform in [lo, hi) of seed, on the host
 * (kept in t->host[], returned) and its device copy (t->dev[], into *dev).
 * NULL when *s is or becomes an error (out of memory, more than
 * MF_BENCH_MAX_BUFS buffers). */
void *mf_tb_target_input(mf_context *ctx, mf_bench_target_run *t, mf_dtype dtype, size_t n, uint64_t seed,
                         float lo, float hi, void **dev, mf_status *s);
/* A device output of 'bytes' kept in t->dev[]; NULL when *s is or becomes an error. */
void *mf_tb_target_output(mf_context *ctx, mf_bench_target_run *t, size_t bytes, mf_status *s);

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_TESTBED_H */
