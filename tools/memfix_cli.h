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

/* Shared option parsing for the subcommands: "--name VALUE" or "--name=VALUE".
 * Returns the value (advancing *i past a separate VALUE), or NULL when argv[*i]
 * is not that option, or when VALUE is missing (then *missing = 1). */
const char *mf_cli_option_value(int argc, char **argv, int *i, const char *name, int *missing);

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
