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
 *   nan-prefill        a NaN where the reference is finite: part of the output
 *                      was never written (outputs are pre-filled with a NaN of
 *                      their own payload, MF_NAN_FILL_*_BITS), or the kernel
 *                      computed a NaN there; the reason counts both;
 *   all-zero           the output is all zeros while the reference is not;
 *   equivalence        the output differs from the reference beyond the op's
 *                      tolerance (src/core/tolerance.c);
 *   scratch-ceiling    its peak device scratch, measured through the context's
 *                      allocator, exceeds the ceiling formula of the op's fix;
 *   rerun              every check passed, but a second sweep over the cases in
 *                      reverse order, with fresh buffers and different inputs,
 *                      failed one (stale buffers or cached results);
 * and, with mf_verify_lib (the candidate in a worker process):
 *   schedule           right in forward thread order, wrong in reverse or a
 *                      seeded random order of host mode (a race in a block);
 *   exit, crash        the worker exited or was killed by a signal in the call;
 *   timeout            no answer within the time limit (the worker is killed);
 *   protocol           the worker's answer was malformed;
 *   sanitizer          a sanitizer-built worker reported an error;
 *   process-memory     host backend: the worker's peak resident memory, read by
 *                      memfix from /proc around each request, grew beyond its
 *                      copies of the buffers + the scratch ceiling + a slack.
 * Limits: with mf_verify a candidate that crashes takes the process with it
 * (mf_verify_lib isolates it; docs/verify.md states its threat model); a hidden
 * allocation freed again within the call is caught only if the sampler sees
 * it (it samples every ~50 us; any allocation alive across a kernel launch in
 * host mode is seen), and on a GPU only above cudaMemGetInfo's granularity. */
#ifndef MEMFIX_VERIFY_H
#define MEMFIX_VERIFY_H

#include "memfix/memfix.h"
#include "memfix/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- candidate signatures ------------------------------------------------------ */
/* Each op's header (include/memfix/<op>.h) declares its candidate types next to
 * the entry points they mirror: the same function types the kernel entries in
 * optimized/<op>.cuh are declared with. The targets are the registry's
 * (mf_op_desc.verify_targets). Include the op's header beside this one:
 *   mf_attention_forward_candidate_fn            memfix/attention.h
 *   mf_attention_backward_candidate_fn           memfix/attention.h
 *   mf_cross_entropy_forward_candidate_fn        memfix/cross_entropy.h
 *   mf_cross_entropy_backward_candidate_fn       memfix/cross_entropy.h
 *   mf_linear_attention_forward_candidate_fn     memfix/linear_attention.h
 *   mf_linear_attention_backward_candidate_fn    memfix/linear_attention.h
 *   mf_matmul_candidate_fn                       memfix/matmul.h
 *   mf_npt_forward_candidate_fn                  memfix/npt.h
 *   mf_npt_backward_candidate_fn                 memfix/npt.h
 *   mf_nsa_forward_candidate_fn                  memfix/nsa.h
 *   mf_nsa_backward_candidate_fn                 memfix/nsa.h
 *   mf_rope_candidate_fn                         memfix/rope.h
 * Without it, a candidate type names its header in the compiler's error
 * ("unknown type name 'mf_matmul_candidate_fn_is_declared_in_memfix_matmul_h'"):
 * each type is a macro of that name until its header is included (the header
 * removes the macro, in either include order). */
#ifndef MEMFIX_ATTENTION_H
#define mf_attention_forward_candidate_fn mf_attention_forward_candidate_fn_is_declared_in_memfix_attention_h
#define mf_attention_backward_candidate_fn                                                                   \
    mf_attention_backward_candidate_fn_is_declared_in_memfix_attention_h
#endif
#ifndef MEMFIX_CROSS_ENTROPY_H
#define mf_cross_entropy_forward_candidate_fn                                                                \
    mf_cross_entropy_forward_candidate_fn_is_declared_in_memfix_cross_entropy_h
#define mf_cross_entropy_backward_candidate_fn                                                               \
    mf_cross_entropy_backward_candidate_fn_is_declared_in_memfix_cross_entropy_h
#endif
#ifndef MEMFIX_LINEAR_ATTENTION_H
#define mf_linear_attention_forward_candidate_fn                                                             \
    mf_linear_attention_forward_candidate_fn_is_declared_in_memfix_linear_attention_h
#define mf_linear_attention_backward_candidate_fn                                                            \
    mf_linear_attention_backward_candidate_fn_is_declared_in_memfix_linear_attention_h
#endif
#ifndef MEMFIX_MATMUL_H
#define mf_matmul_candidate_fn mf_matmul_candidate_fn_is_declared_in_memfix_matmul_h
#endif
#ifndef MEMFIX_NPT_H
#define mf_npt_forward_candidate_fn mf_npt_forward_candidate_fn_is_declared_in_memfix_npt_h
#define mf_npt_backward_candidate_fn mf_npt_backward_candidate_fn_is_declared_in_memfix_npt_h
#endif
#ifndef MEMFIX_NSA_H
#define mf_nsa_forward_candidate_fn mf_nsa_forward_candidate_fn_is_declared_in_memfix_nsa_h
#define mf_nsa_backward_candidate_fn mf_nsa_backward_candidate_fn_is_declared_in_memfix_nsa_h
#endif
#ifndef MEMFIX_ROPE_H
#define mf_rope_candidate_fn mf_rope_candidate_fn_is_declared_in_memfix_rope_h
#endif

/* ---- results --------------------------------------------------------------------- */
#define MF_VERIFY_DEFENSE_MAX 24

/* One row per built-in case: the `memfix report` row (variant "candidate",
 * message = the reason it was rejected) and the defense that rejected it. */
typedef struct mf_verify_row {
    mf_case_result result;
    char defense[MF_VERIFY_DEFENSE_MAX]; /* "" when it passed; else a name above */
    /* mf_verify_lib only (NaN otherwise): the round trip of the first thread
     * order's request to the worker for the candidate and for memfix's own
     * optimized entry on the same buffers, timed by memfix, in seconds (a
     * warning column, never a rejection; own_seconds NaN for a target without one). */
    double cand_seconds, own_seconds;
    char schedule[40]; /* the thread order the row's result comes from, e.g. "reverse, 1 worker" */
    /* why the time column has no ratio ("" when it has one): e.g. "not run", "the candidate's call did not
     * complete", "memfix has no entry of this target's type to time" */
    char time_note[64];
} mf_verify_row;

/* ---- isolation: the candidate in a worker process ---------------------- */
/* The time limit of a request to a worker (one case in one thread order: its
 * inputs sent, the candidate's calls, the checks, the answer) when
 * mf_verify_options.timeout_s is 0 (memfix verify without --timeout, which
 * replaces every limit below). memfix first sends the same request for its own
 * optimized entry point (the target's 'own') to the first thread order's
 * worker and times the round trip; the candidate's requests of that case, in
 * every thread order, get MF_VERIFY_TIMEOUT_MULTIPLE times it, and at least
 * MF_VERIFY_TIMEOUT_FLOOR_S. Why these numbers:
 *   - 100x: the slowest correct example candidates (one thread per output, in
 *     double) take up to ~30x memfix's round trip on a case, and the reverse
 *     order and half the random ones run on one cudahost worker instead of two;
 *     100x leaves a correct but slow kernel room on every case, the large one
 *     included (minutes of memfix's time give minutes of limit);
 *   - 10 s: most cases take memfix milliseconds; the floor covers a fresh
 *     worker's start-up and a loaded machine there, and is what a hang on such
 *     a case costs. A hang being judged once (unless keep_going), a candidate
 *     that hangs is rejected by 'timeout' in about the floor plus the cases
 *     run before it;
 *   - 60 s (MF_VERIFY_TIMEOUT_FALLBACK_S): loading the library (its
 *     constructors), and every request of a case where memfix's time is not
 *     measured (a target without an own entry; memfix's request got no
 *     answer): ample for the built-in cases' correct kernels, a minute for a
 *     hang;
 *   - 600 s (MF_VERIFY_TIMEOUT_OWN_S): memfix's own request. The large case
 *     (--large) moves gigabytes through the socket and runs for minutes in
 *     host mode; only a library that sabotages memfix's entry in the worker
 *     can make this request hang, at this cost. */
#define MF_VERIFY_TIMEOUT_MULTIPLE 100.0
#define MF_VERIFY_TIMEOUT_FLOOR_S 10.0
#define MF_VERIFY_TIMEOUT_FALLBACK_S 60.0
#define MF_VERIFY_TIMEOUT_OWN_S 600.0

/* mf_verify_lib runs each candidate call in a child process (fork + exec of
 * memfix-verify-worker, which dlopens the library): the candidate's crashes,
 * exits, hangs and constructors reach only that process. Every case runs in
 * several thread orders of host mode (forward with 2 cudahost workers, reverse
 * with 1, then 'orders' seeded random orders alternating 1 and 2 workers). */
typedef struct mf_verify_options {
    const char *lib;      /* the shared library (a path) */
    const char *symbol;   /* the candidate's symbol */
    double timeout_s;     /* per case and thread order, in seconds; the worker is killed past it. 0 (the
                           * default): derived from memfix's own time on the case (MF_VERIFY_TIMEOUT_*) */
    int orders;           /* random thread orders per case (default 2; 0: forward and reverse only) */
    uint64_t order_seed;  /* the first random order's seed (default 1) */
    const char *sanitize; /* NULL, "thread" or "address": a worker built with that sanitizer */
    const char *worker;   /* the worker executable; NULL: $MF_VERIFY_WORKER, else
                           * memfix-verify-worker next to the running executable, else
                           * the build's (MF_VERIFY_WORKER_DEFAULT) */
    /* the cases (fixed, random, large: mf_verify_case_ids); NULL: the target's fixed cases */
    const mf_case_id *ids;
    size_t n_ids;
    /* 0 (default): a case rejected by 'timeout' ends the run (a hang is judged once; the cases not run
     * get the defense "not-run"); 1: every case runs */
    int keep_going;
} mf_verify_options;

MF_API void mf_verify_options_init(mf_verify_options *o);

/* mf_verify with the candidate 'o->symbol' of 'o->lib' run in worker
 * processes. The library is never loaded into the calling process. Returns
 * MF_OK when the verification ran; MF_ERR_INVALID_ARGUMENT when the library or
 * symbol cannot be loaded, or the library is built for another backend (the
 * message says why); MF_ERR_BACKEND_UNAVAILABLE when no worker can be started. */
MF_API mf_status mf_verify_lib(mf_context *ctx, const char *op, const mf_verify_options *o,
                               mf_verify_row *rows, size_t cap, size_t *n_rows);

/* The worker's main (tools/verify_worker.c): serves requests on file
 * descriptor 3 until it is closed. Not for direct use. */
MF_API int mf_verify_worker_main(int argc, char **argv);

/* 1 if 'op' (a verify target of a registered op: an op name, or "op.entry"
 * for an op with several entry points) takes candidates in this build, else 0. */
MF_API int mf_verify_supported(const char *op);
/* The targets that take candidates, comma-separated ("matmul, cross_entropy, ...");
 * "" in a build without host kernels. */
MF_API const char *mf_verify_supported_ops(void);
/* The number of rows mf_verify writes for target 'op' (its built-in cases);
 * -1 for a target without candidate support. */
MF_API int mf_verify_n_cases(const char *op);
/* memfix verify's default number of random cases for target 'op' (--cases):
 * enough for every combination its generator cycles through (matmul 8, rope
 * 16), at least 4; -1 for a target without candidate support. */
MF_API int mf_verify_default_cases(const char *op);

/* Runs 'candidate' (a function of op's candidate signature, cast to
 * void (*)(void)) on every built-in case of 'op' with all defenses, on ctx.
 * rows must hold mf_verify_n_cases(op) rows;
 * *n_rows receives how many were written. Returns MF_OK when the verification
 * ran, whatever the verdicts; MF_ERR_INVALID_ARGUMENT for an op without
 * candidate support, MF_ERR_INVALID_SIZE when cap is too small. */
MF_API mf_status mf_verify(mf_context *ctx, const char *op, void (*candidate)(void), mf_verify_row *rows,
                           size_t cap, size_t *n_rows);

/* ---- cases: fixed, seeded random, large (docs/verify.md "Cases") ---------- */
/* 1 if target 'op' has a seeded random case generator (every built-in target has). */
MF_API int mf_verify_has_generator(const char *op);
/* The cases of a verification: the target's fixed cases ("f0".."f<n-1>"), then
 * n_random random cases of 'seed' ("g0".."g<n_random-1>"), then the large case
 * ("large") when large != 0 (targets without a generator: the fixed ones only).
 * ids == NULL: *n = the count needed. */
MF_API mf_status mf_verify_case_ids(const char *op, uint64_t seed, int n_random, int large, mf_case_id *ids,
                                    size_t cap, size_t *n);
/* The whole case id stands for ("<dtype> <shape>", every option) and an
 * estimate of the host + device bytes a verification of it takes. */
MF_API mf_status mf_verify_describe(const char *op, const mf_case_id *id, char *buf, size_t cap,
                                    size_t *bytes);
/* mf_verify on the cases ids[0..n_ids) (rows: n_ids of them). */
MF_API mf_status mf_verify_ids(mf_context *ctx, const char *op, void (*candidate)(void),
                               const mf_case_id *ids, size_t n_ids, mf_verify_row *rows, size_t cap,
                               size_t *n_rows);
/* "f3", "g0", "large"; and back (a bare number is a fixed id; random and large
 * ids take 'seed'): 1 when s is an id. */
MF_API void mf_case_id_format(const mf_case_id *id, char *buf, size_t cap);
MF_API int mf_case_id_parse(const char *s, uint64_t seed, mf_case_id *id);

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_VERIFY_H */
