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

/* One row of `memfix report`. */
typedef struct mf_case_result {
    char op[32];
    char variant[32];
    char backend[8];
    char dtype[8];
    char shape[128];        /* e.g. "M=1 N=1 K=1 ta=0 tb=0" */
    double max_abs_err;
    double max_rel_err;
    double atol;
    double rtol;
    int pass;               /* equivalence and memory (opt <= ceiling) both hold */
    size_t ref_peak_bytes;  /* host scratch peak of the reference */
    size_t opt_peak_bytes;  /* device scratch peak of the optimized variant */
    size_t ceiling_bytes;   /* the header's formula at this shape */
    mf_failure failure;     /* MF_FAILURE_NONE, or why it failed (no parsing of message) */
    char message[256];      /* why it failed, or "" */
} mf_case_result;

/* An entry point of an op that `memfix verify` takes candidates for. */
typedef struct mf_verify_target {
    const char *name; /* "matmul", or "<op>.<entry>" for an op with several */
    /* Runs built-in case 'case_index' as `memfix report` does, calling
     * 'candidate' (the op's candidate type, cast to void (*)(void)) through the
     * testbed's guards (src/testbed/testbed.h) in place of the optimized
     * entry. seed_salt != 0 draws other inputs of the same shape. Fills *out
     * (always). MF_ERR_NULL_POINTER for a NULL candidate. */
    mf_status (*run_case)(mf_context *ctx, void (*candidate)(void), int case_index,
                          uint64_t seed_salt, mf_case_result *out);
    int (*n_cases)(void); /* NULL: the op's n_cases */
} mf_verify_target;

typedef struct mf_op_desc {
    const char *name;                 /* "matmul" */
    const char *summary;              /* one line, cites the seed document */
    int n_variants;
    const char *const *variants;      /* "naive", "tiled", "cublas" */
    int n_cases;
    /* Runs built-in case 'case_index' for 'variant' on ctx: seeded inputs,
     * the reference on the host, the variant on ctx's backend, mf_compare_f32,
     * and scratch peaks through the context's allocators. Fills *out (always,
     * also on failure). Returns MF_OK when the case ran, whatever its verdict. */
    mf_status (*run_case)(mf_context *ctx, int variant, int case_index, mf_case_result *out);
    int n_verify_targets;                   /* 0: takes no candidates */
    const mf_verify_target *verify_targets; /* a target named like the op answers --op <op> */
} mf_op_desc;

MF_API const mf_op_desc *const *mf_registry(size_t *count);
MF_API const mf_op_desc *mf_registry_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
