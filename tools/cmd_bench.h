/* memfix bench's rows and their writers, shared by tools/cmd_bench.c (the runs) and
 * tools/cmd_bench_output.c (the table, CSV, JSON and charts). Internal to the command. */
#ifndef MEMFIX_CMD_BENCH_H
#define MEMFIX_CMD_BENCH_H

#include <stddef.h>
#include <stdio.h>

typedef struct bench_row {
    char op[32], variant[32], backend[8], timer[24], timed[12], dtype[8], shape[192];
    long long size;
    int reps;
    double ref_ms, opt_ms; /* NAN: not measured */
    size_t ref_peak, opt_peak, ceiling;
    double max_abs_err;
    int ok;
    char message[200];
    double flops, min_bytes;       /* per call; 0: not stated (run_case rows) */
    double tflops, gbps;           /* achieved (GPU rows only), else NAN */
    double peak_tflops, peak_gbps; /* the device's (GPU only), else NAN */
} bench_row;

/* --targets */
typedef struct target_row {
    char target[32], op[32], source[24], backend[8], timer[24], shape[192], met[8];
    const char *kind;
    double goal, opt_ms, base_ms, floor_ms, peak_tflops, ratio; /* NAN: not measured */
    int ok;
    char message[240];
} target_row;

#define TARGET_CSV_HEADER                                                                                    \
    "target,op,source,backend,timer,shape,kind,goal,opt_ms,baseline_ms,floor_ms,peak_tflops,ratio,met,"      \
    "status,"                                                                                                \
    "message"

/* The output format: the readable table (default), --csv, --json. */
typedef enum { BENCH_TABLE = 0, BENCH_CSV, BENCH_JSON } bench_format;

/* One header line and one line per row (the columns of memfix bench --help). */
void mf_cli_bench_write_csv(FILE *f, const bench_row *rows, size_t n);
void mf_cli_bench_write_target_csv(FILE *f, const target_row *rows, size_t n);
/* A JSON array, one object per row with the CSV's columns as keys; 0 when out of memory. */
int mf_cli_bench_write_json(FILE *f, const bench_row *rows, size_t n);
int mf_cli_bench_write_target_json(FILE *f, const target_row *rows, size_t n);
/* The readable table, the default output; 'what' is its first line (backend, timer, device). */
void mf_cli_bench_write_table(FILE *f, const bench_row *rows, size_t n, const char *what);
void mf_cli_bench_write_target_table(FILE *f, const target_row *rows, size_t n, const char *what);
/* --plot DIR: DIR/bench.csv and ci/plot.sh's charts into DIR; an exit code (MF_CLI_OK or
 * MF_CLI_UNAVAILABLE with a message on err). */
int mf_cli_bench_plot(const char *dir, const bench_row *rows, size_t n, FILE *out, FILE *err);

#endif /* MEMFIX_CMD_BENCH_H */
