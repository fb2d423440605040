/* The `memfix` command, as a library so its tests can drive it in-process.
 * tools/memfix.c is just main() calling mf_cli_main(argc, argv, stdout, stderr).
 *
 * Exit codes: 0 success (every row passed); 1 some row failed; 2 usage error
 * (unknown command, option, backend or op); 3 cannot run (backend unavailable,
 * context creation failed). */
#ifndef MEMFIX_CLI_H
#define MEMFIX_CLI_H

#include "memfix/registry.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MF_CLI_OK = 0, MF_CLI_FAILED = 1, MF_CLI_USAGE = 2, MF_CLI_UNAVAILABLE = 3 };

int mf_cli_main(int argc, char **argv, FILE *out, FILE *err);

/* Option parsing, one helper for every subcommand. An option is a flag
 * ("--json", "-h"; matched exactly) or takes a value ("--name VALUE" or
 * "--name=VALUE"). */
typedef struct mf_cli_opt {
    const char *name; /* NULL: an unused slot, never matched */
    int takes_value;
} mf_cli_opt;

/* Which of opts[0..n) argv[*i] is: its index, or -1 when none. For an option
 * with a value, *value is VALUE ("" for "--name=") and *i moves past a
 * separate VALUE; *value is NULL for a flag and when VALUE is missing
 * (argv[*i] was the last argument). */
int mf_cli_option(int argc, char **argv, int *i, const mf_cli_opt *opts, size_t n, const char **value);

/* --backend's value: 1 and *backend for auto, host or cuda; else 0, and when
 * err != NULL "memfix CMD: unknown backend ..." printed there. */
int mf_cli_backend(FILE *err, const char *cmd, const char *name, mf_backend *backend);

/* --op's value: the registered op, or NULL with "memfix CMD: unknown op
 * 'NAME'; registered ops: ..." printed to err. */
const mf_op_desc *mf_cli_find_op(FILE *err, const char *cmd, const char *name);

/* A number as a table cell: %.3g, or nan, inf, -inf. */
void mf_cli_num_cell(char *buf, size_t cap, double x);
/* mf_last_error()'s reason alone, without the "<function>: " before it and the
 * " [file:line]" after it (for a user's mistake, not the library's). Returns buf. */
const char *mf_cli_error_reason(char *buf, size_t cap);
/* Bytes for people: "1234 (1.15 GiB)" (exact, then KiB/MiB/GiB with 2
 * decimals; "512 B" below 1 KiB), or "1.15 GiB" (_short); "n/a" for SIZE_MAX.
 * Returns buf. */
const char *mf_cli_bytes(char *buf, size_t cap, size_t b);
const char *mf_cli_bytes_short(char *buf, size_t cap, size_t b);
/* A share of a tolerance budget (1.0 = 100%) as a cell: "7.5%", "inf (NaN/Inf or exact)" for a NaN/Inf
 * pattern mismatch or an exactly compared output that differs. */
void mf_cli_budget_cell(char *buf, size_t cap, double used);
/* A scratch ceiling as a cell: its bytes, or "n/a (...)" with the reason for SIZE_MAX. */
void mf_cli_ceiling_cell(char *buf, size_t cap, size_t ceiling);

/* A text table of n rows: ncol columns named names[], numbers right-aligned
 * where right[c], each row's cells filled by cells(rows, i, ...). */
enum { MF_CLI_MAX_COLS = 16, MF_CLI_CELL = 160 };
/* The keys of one mf_case_result in `--json` output (report and verify, in
 * that order; "candidate" after "variant" when candidate != NULL). */
struct cJSON;
void mf_cli_case_json(struct cJSON *o, const mf_case_result *r, const char *candidate);
/* Prints root as indented JSON and a newline, then frees it (NULL: nothing to
 * print). 1 on success, 0 when root is NULL or cannot be printed. */
int mf_cli_print_json(FILE *out, struct cJSON *root);
void mf_cli_print_table(FILE *out, int ncol, const char *const *names, const int *right, size_t n,
                        void (*cells)(const void *rows, size_t i, char (*cells)[MF_CLI_CELL]),
                        const void *rows);

/* memfix plan --gpu-mem's output (tools/cmd_plan_fit.c): the verdict and the
 * changes as text, and as the members gpu_mem, fits, headroom, over,
 * reachable and suggestions of the plan's JSON object (fit NULL: each null,
 * suggestions empty). */
struct mf_plan_config;
struct mf_plan_memory;
struct mf_plan_fit;
void mf_cli_plan_fit_print(FILE *out, const struct mf_plan_config *cfg, const struct mf_plan_memory *m,
                           const struct mf_plan_fit *fit);
void mf_cli_plan_fit_json(struct cJSON *root, const struct mf_plan_fit *fit);
/* "tiled attention, no checkpointing, naive loss": what the configured total counts */
const char *mf_cli_plan_step_name(char *buf, size_t cap, const struct mf_plan_config *cfg);

/* Subcommands in tools/cmd_<name>.c (argv[0] is the command name). */
int mf_cli_plan(int argc, char **argv, FILE *out, FILE *err);
void mf_cli_plan_help(FILE *out);
int mf_cli_bench(int argc, char **argv, FILE *out, FILE *err);
void mf_cli_bench_help(FILE *out);
int mf_cli_verify(int argc, char **argv, FILE *out, FILE *err);
void mf_cli_verify_help(FILE *out);

#ifdef __cplusplus
}
#endif
#endif
