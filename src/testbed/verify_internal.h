/* memfix verify's internals, shared by its files: the state of a guarded call, the buffer layout, the worker
 * session and the wire protocol between memfix and its worker process. verify.c runs the cases and judges
 * them, verify_guard.c makes the guarded call, verify_isolation.c is memfix's side of a worker,
 * verify_worker.c the worker process and the wire, verify_cases.c the case list. Internal. */
#ifndef MEMFIX_VERIFY_INTERNAL_H
#define MEMFIX_VERIFY_INTERNAL_H

#include "memfix/verify.h"

#include "memfix/check.h"
#include "mf_backend.h"
#include "mf_internal.h"
#include "testbed.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef MF_HAVE_HOST_KERNELS

enum { GUARD_BYTES = 1024 }; /* a multiple of 256: the candidate's pointers keep cudaMalloc's alignment */

struct iso_session;

/* The state of one guarded call (thread-local: one verification per thread). */
typedef struct verify_state {
    void (*candidate)(void);
    char defense[MF_VERIFY_DEFENSE_MAX];
    char reason[MF_TB_REASON_MAX];
    int all_zero;        /* the candidate's output was all zeros */
    char dump_stem[200]; /* --dump: "<dir>/<target>-<case id>" of this case's inputs; "" when not dumping */
    /* measured by guarded_call: the tracked scratch peak of the calls and the fastest call's time (the first
     * call of a fresh worker pays its start-up: thread pool, first launch) */
    size_t peak;
    double first_seconds;
    int n_timed;
    /* mf_verify_lib: the worker session, the thread order of this run, the candidate's and memfix's times */
    struct iso_session *iso;
    int sched;
    double cand_seconds, own_seconds;
    int own_tried;         /* memfix's own request of this case was sent (the first thread order) */
    const char *time_note; /* why cand_seconds / own_seconds are missing (mf_verify_row.time_note) */
    /* mf_verify_lib, host backend: the worker's peak RSS growth during a request beyond its own copies of the
     * call's buffers, measured by memfix from /proc (the worst request of the case); checked against the
     * case's ceiling by run_once (mf_vf_iso_memory_verdict) */
    int mem_measured;
    size_t mem_excess, mem_growth, mem_allow;
} verify_state;
extern _Thread_local verify_state *mf_vf_g_state;

typedef mf_tb_guarded guarded;

enum { WIRE_HELLO = 0x4d465648u, WIRE_ACK = 0x4d465641u, WIRE_REQ = 0x4d465651u, WIRE_ANS = 0x4d465652u };
enum { WIRE_NAME = 32, WIRE_AXES = 64, MAX_SCHED = 18, SANITIZER_EXIT = 66 };
enum { ACK_OK = 0, ACK_LOAD = 1, ACK_BACKEND = 2 };

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} wbuf;

typedef struct worker_proc {
    pid_t pid;
    int fd;
    int alive;
} worker_proc;

typedef struct schedule {
    char order[40]; /* CUDAHOST_THREAD_ORDER */
    int workers;    /* CUDAHOST_WORKERS */
    char label[40];
} schedule;

typedef struct iso_session {
    const mf_verify_target *tg;
    const char *lib, *symbol;
    mf_backend backend;
    double timeout_s;  /* --timeout; 0: each limit derived from memfix's time (MF_VERIFY_TIMEOUT_*) */
    int keep_going;    /* run every case after a timeout (else the rest are "not-run") */
    double case_own_s; /* memfix's own round trip on the case being run (its first thread order); NaN: none */
    double limit_s;    /* the limit of the request being waited for, and how it was set */
    char limit_why[160];
    const char *sanitize;
    char worker_path[4096];
    int n_sched;
    schedule sched[MAX_SCHED];
    worker_proc w[MAX_SCHED];
    char load_error[512]; /* the worker refused the library (a usage error) */
    int mem_state;        /* the worker's memory from /proc: 0 not tried yet, 1 measured, -1 unavailable */
    int worker_sanitized; /* the worker is built with a sanitizer: its RSS (shadow, quarantine) is not measured */
    int load_kind;
} iso_session;

/* ---- verify_guard.c: the guarded call ---- */
mf_status mf_vf_reject(const char *defense, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
unsigned char mf_vf_canary(size_t i);
size_t mf_vf_page_bytes(void);
mf_status mf_vf_guarded_make_dt(mf_context *ctx, guarded *g, const char *name, const void *data, size_t bytes,
                                mf_dtype out_dtype);
mf_status mf_vf_guarded_make(mf_context *ctx, guarded *g, const char *name, const void *data, size_t bytes);
void mf_vf_guarded_free(mf_context *ctx, guarded *g);
mf_status mf_vf_image_check(const unsigned char *img, const char *name, const mf_axes *axes, size_t bytes,
                            const unsigned char *data);
mf_status mf_vf_guarded_runs(mf_context *ctx, mf_tb_call_fn call, const void *args, guarded *bufs, int n_in,
                             int n, void *out_host, size_t out_bytes, int runs, unsigned char **images,
                             void *second_host);
void mf_vf_dump_input(const char *name, const void *data, size_t bytes);

/* ---- verify.c: the targets and the case runs ---- */
const mf_verify_target *mf_vf_find_target(const char *name, const mf_op_desc **op_out);
void mf_vf_run_all(mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void),
                   const mf_case_id *ids, int n, iso_session *is, mf_verify_row *rows);

/* ---- verify_isolation.c: memfix's side of the worker ---- */
mf_status mf_vf_iso_guard(mf_context *ctx, const mf_tb_buffer *sp, int n_in, int n, const void *args);
void mf_vf_iso_memory_verdict(verify_state *st, const mf_case_result *r);

/* ---- verify_worker.c: the wire ---- */
void mf_vf_wb_put(wbuf *b, const void *p, size_t n);
void mf_vf_wb_u32(wbuf *b, uint32_t v);
void mf_vf_wb_u64(wbuf *b, uint64_t v);
void mf_vf_wb_str(wbuf *b, const char *s);
double mf_vf_now_s(void);
int mf_vf_io_send(int fd, const void *p, size_t n);
int mf_vf_io_recv(int fd, void *p, size_t n, double deadline);
int mf_vf_io_recv_str(int fd, char *dst, size_t cap, double deadline);

#endif

#endif
