/* The registry of fixes: the one list of ops. Each op describes itself once
 * (an mf_op_desc in src/ops/<op>.c: its variants, built-in cases and the entry
 * points `memfix verify` takes candidates for); `memfix report`, `memfix
 * verify`, the test suites and later tools iterate it. Adding a fix is adding
 * one mf_op_desc and one MF_OP line in src/core/registry.c. */
#ifndef MEMFIX_REGISTRY_H
#define MEMFIX_REGISTRY_H

#include "memfix/memfix.h"
#include "memfix/check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One compared quantity of a case (an output such as "loss" or "grad_hidden"):
 * the tolerance row it was compared under and how much of that row's budget
 * the worst element used. */
#define MF_CASE_MAX_OUTPUTS 8
typedef struct mf_output_result {
    char what[32];     /* the quantity, e.g. "grad_hidden" */
    char tol[48];      /* the tolerance row's name, e.g. "cross_entropy.grad.bf16" */
    double atol, rtol; /* that row's */
    double max_abs_err;
    double budget_used; /* max over elements of |got-ref| / (atol + rtol*|ref|): 1.0 spends the
                           * whole budget, > 1 fails; +inf on a NaN/Inf pattern mismatch */
    int pass;           /* this quantity's comparison (every criterion of the row) */
    char worst_at[112]; /* its worst element in the output's axes, e.g. "(b=0, h=1, row=17, col=3)" */
} mf_output_result;

/* One row of `memfix report`. */
typedef struct mf_case_result {
    char op[32];
    char variant[32];
    char backend[8];
    char dtype[8];
    char shape[192]; /* the full case, every option: e.g. "M=1 N=1 K=1 ta=0 tb=0" */
    double max_abs_err;
    double max_rel_err;
    double atol;
    double rtol;
    int pass;              /* equivalence and memory (opt <= ceiling) both hold */
    size_t ref_peak_bytes; /* host scratch peak of the reference */
    size_t opt_peak_bytes; /* device scratch peak of the optimized variant */
    size_t ceiling_bytes;  /* the header's formula at this shape */
    mf_failure failure;    /* MF_FAILURE_NONE, or why it failed (no parsing of message) */
    char message[512];     /* why it failed, naming the output and its element, or "" */
    /* Per compared quantity, in comparison order (the testbed's mf_tb_compare
     * fills them; at most MF_CASE_MAX_OUTPUTS kept). max_abs_err, atol and rtol
     * above are the worst over these and stay for compatibility. */
    int n_outputs;
    mf_output_result outputs[MF_CASE_MAX_OUTPUTS];
} mf_case_result;

/* A case of a verify target: a built-in one (the op's fixed
 * table), a seeded random one from the op's generator, or the op's large case.
 * Written "f<index>", "g<index>" and "large" (mf_case_id_format); a generated
 * case is a function of (seed, index) only, so it is reproduced with the same
 * seed. */
typedef enum mf_case_kind { MF_CASE_FIXED = 0, MF_CASE_RANDOM = 1, MF_CASE_LARGE = 2 } mf_case_kind;
typedef struct mf_case_id {
    mf_case_kind kind;
    int index;     /* fixed: the table row; random: the n-th case of seed */
    uint64_t seed; /* random and large: the generator's seed */
} mf_case_id;
struct mf_tb_guarded; /* src/testbed/testbed.h */

/* An entry point of an op that `memfix verify` takes candidates for. */
typedef struct mf_verify_target {
    const char *name; /* "matmul", or "<op>.<entry>" for an op with several */
    /* Runs built-in case 'case_index' as `memfix report` does, calling
     * 'candidate' (the op's candidate type, cast to void (*)(void)) through the
     * testbed's guards (src/testbed/testbed.h) in place of the optimized
     * entry. seed_salt != 0 draws other inputs of the same shape. Fills *out
     * (always). MF_ERR_NULL_POINTER for a NULL candidate. */
    mf_status (*run_case)(mf_context *ctx, void (*candidate)(void), int case_index, uint64_t seed_salt,
                          mf_case_result *out);
    int (*n_cases)(void); /* NULL: the op's n_cases */
    /* Cases by id (fixed, random or large; NULL: fixed cases only). run_id runs
     * one like run_case. describe writes the whole case (dtype and every option,
     * as run_id writes out->dtype and out->shape: "<dtype> <shape>") and the
     * host + device bytes it needs (an estimate for --large); it generates
     * nothing big. Both: MF_ERR_INVALID_ARGUMENT for an id out of range. */
    mf_status (*run_id)(mf_context *ctx, void (*candidate)(void), const mf_case_id *id, uint64_t seed_salt,
                        mf_case_result *out);
    mf_status (*describe)(const mf_case_id *id, char *buf, size_t cap, size_t *bytes);
    /* memfix verify's worker process: the candidate runs in a child
     * process, which finds the target by name and calls the candidate through
     * 'call' (the op's call adapter, the one its guard hands to mf_tb_guard)
     * on the arguments the guard passed: 'args_size' bytes, of which the
     * pointer at 'args_ptr_offset' (when args_ptr_bytes > 0) points to a host
     * struct of args_ptr_bytes bytes (options, a config) copied with them.
     * NULL call: the target runs in process only. */
    mf_status (*call)(mf_context *ctx, const void *args, struct mf_tb_guarded *bufs);
    size_t args_size;
    size_t args_ptr_offset, args_ptr_bytes;
    /* memfix's own entry point of the candidate's type (cast to void (*)(void)),
     * timed beside the candidate in the worker; NULL: no timing. */
    void (*own)(void);
    /* memfix verify's default number of random cases (--cases): the cycle
     * of the generator's combinations, so that a default run holds every one
     * (0: the command's default, 4). */
    int default_cases;
} mf_verify_target;

/* One size of an op's `memfix bench` sweep (forward pass, f32). The op's
 * setup fills the shape, the ceiling, the tolerance row of the re-validation,
 * the reference's output buffer (host) and the optimized output (device), and
 * keeps its inputs in host[] / dev[]; memfix bench times reference() and
 * optimized() (the optimized output re-filled with NaN before the loop),
 * re-validates the last run, then frees host[] (free) and dev[]
 * (mf_buffer_free). */
#define MF_BENCH_MAX_BUFS 16
typedef struct mf_bench_case {
    int variant;
    int64_t n;       /* the sweep's size */
    char shape[128]; /* e.g. "M=64 N=64 K=64" */
    size_t ceiling;  /* the header's formula at this shape */
    const char *tol; /* tolerance row of the re-validation, e.g. "matmul.out.f32" */
    float *ref_out;  /* host: the reference's output (one of host[]) */
    float *out_dev;  /* device: the optimized output (one of dev[]) */
    size_t out_n;    /* floats in ref_out and out_dev */
    void *host[MF_BENCH_MAX_BUFS];
    void *dev[MF_BENCH_MAX_BUFS];
    int n_host, n_dev;
    /* The work of one call at this shape, from the op's formula (setup fills
     * them; 0: not stated): floating-point operations (a multiply-add is 2)
     * and the minimum bytes a call must move (every input read once, every
     * output written once). Functions of the problem only, never of the
     * variant, so every variant is measured against the same figures. */
    double flops, min_bytes;
} mf_bench_case;

typedef struct mf_bench_sweep {
    const char *help; /* the problem of size n, for memfix bench --help */
    int64_t sizes[4]; /* the default sweep */
    int n_sizes;
    mf_status (*setup)(mf_context *ctx, mf_bench_case *c);     /* c->variant, c->n set */
    mf_status (*reference)(mf_context *ctx, mf_bench_case *c); /* one reference call (host) */
    mf_status (*optimized)(mf_context *ctx, mf_bench_case *c); /* one optimized call (device) */
} mf_bench_sweep;

/* A performance target, measured by `memfix bench --targets` (ci/gpu.sh on a
 * GPU runner): the optimized call at the target's full shape, timed as a
 * sweep row is (a warm-up, then reps runs), against either
 *   MF_BENCH_TARGET_FLOOR:   a floor of floor_flops at the device's dense bf16
 *                            peak; ratio = opt_ms / floor_ms, met when <= goal;
 *   MF_BENCH_TARGET_SPEEDUP: a baseline call (another memfix op) timed the same
 *                            way; ratio = baseline_ms / opt_ms, met when >= goal.
 * setup (t->small set by bench: 1 = a reduced shape, host execution mode and
 * the tests) allocates inputs and outputs in host[] / dev[] (freed by bench as a
 * sweep's), fills shape and floor_flops; check runs after the timing and
 * validates the last run's outputs (what it compares is in the op's target
 * help): MF_OK with why empty when right, else why says what is wrong. */
typedef enum mf_bench_target_kind {
    MF_BENCH_TARGET_FLOOR = 0,
    MF_BENCH_TARGET_SPEEDUP = 1
} mf_bench_target_kind;

typedef struct mf_bench_target_run {
    int small;          /* set by bench */
    char shape[192];    /* setup fills */
    double floor_flops; /* MF_BENCH_TARGET_FLOOR: the floor's work */
    void *host[MF_BENCH_MAX_BUFS];
    void *dev[MF_BENCH_MAX_BUFS];
    int n_host, n_dev;
} mf_bench_target_run;

typedef struct mf_bench_target {
    const char *name;   /* "ce-000" */
    const char *source; /* the seed document whose shape the target takes (the output's source column) */
    const char *help;   /* what is timed against what, and what check compares */
    mf_bench_target_kind kind;
    double goal;
    mf_status (*setup)(mf_context *ctx, mf_bench_target_run *t);
    mf_status (*run)(mf_context *ctx, mf_bench_target_run *t);      /* the optimized call */
    mf_status (*baseline)(mf_context *ctx, mf_bench_target_run *t); /* SPEEDUP only */
    mf_status (*check)(mf_context *ctx, mf_bench_target_run *t, char *why, size_t cap);
} mf_bench_target;

struct mf_op_plan; /* memfix/plan.h */

typedef struct mf_op_desc {
    const char *name;    /* "matmul" */
    const char *summary; /* one line, cites the seed document */
    int n_variants;
    const char *const *variants; /* "naive", "tiled", "cublas" */
    int n_cases;
    /* Runs built-in case 'case_index' for 'variant' on ctx: seeded inputs,
     * the reference on the host, the variant on ctx's backend, mf_compare_f32,
     * and scratch peaks through the context's allocators. Fills *out (always,
     * also on failure). Returns MF_OK when the case ran, whatever its verdict. */
    mf_status (*run_case)(mf_context *ctx, int variant, int case_index, mf_case_result *out);
    int n_verify_targets;                   /* 0: takes no candidates */
    const mf_verify_target *verify_targets; /* a target named like the op answers --op <op> */
    const mf_bench_sweep *bench;            /* NULL: memfix bench times run_case */
    /* The op's rows of the tolerance table, "<op>.<output>.<dtype>", each with
     * a one-line justification from the arithmetic; mf_tolerance_get and
     * mf_tolerance_table (memfix/check.h) find them through the registry. */
    int n_tolerances;
    const mf_tolerance *tolerances;
    /* `memfix plan`'s rows for a model's shape, the parameters they need and,
     * for the loss op, the loss's figures (memfix/plan.h); NULL: no rows. */
    const struct mf_op_plan *plan;
    /* `memfix report`'s rows (and test_registry's): the first n_report_cases
     * built-in cases; 0: all n_cases. The cases after them are the equivalence
     * suite's (tests/equivalence, through the same run_case). */
    int n_report_cases;
    /* Whether built-in case case_index runs for variant (e.g. a case written
     * for one variant's tiling); NULL: every case runs for every variant.
     * report, test_registry and the equivalence suites skip the others. */
    int (*case_applies)(int variant, int case_index);
    /* `memfix bench --targets`: the op's performance targets (NULL: none). */
    int n_bench_targets;
    const mf_bench_target *bench_targets;
} mf_op_desc;

/* The number of built-in cases `memfix report` runs for op. */
static inline int mf_op_report_cases(const mf_op_desc *op)
{
    return op->n_report_cases > 0 && op->n_report_cases < op->n_cases ? op->n_report_cases : op->n_cases;
}

/* Whether op's built-in case c runs for variant v (mf_op_desc.case_applies). */
static inline int mf_op_case_applies(const mf_op_desc *op, int v, int c)
{
    return op->case_applies == NULL || op->case_applies(v, c);
}

MF_API const mf_op_desc *const *mf_registry(size_t *count);
MF_API const mf_op_desc *mf_registry_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
