/* memfix verify's side of the worker processes of mf_verify_lib: the session and its thread orders, starting
 * and losing workers, the request and the checks of its answer, the worker's memory measured from /proc, and
 * the parent's own defenses against its workers (signals, dumpability). */
#define _GNU_SOURCE /* strsignal, asprintf */
#include "verify_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef MF_HAVE_HOST_KERNELS

/* ==== isolation: the candidate in a worker process =========================================== *
 *
 * mf_verify_lib keeps everything that decides the verdict in this process: run_case, the reference, the
 * tolerance rows, the comparison, the exit status. At the guarded call (mf_tb_guard) it sends the call to a
 * worker (fork + exec of memfix-verify-worker, its own process group, one per thread order): the target's name
 * and POD arguments (plus the one host struct they point to), the input bytes and the buffer layout. The
 * worker dlopens the library, builds the guarded buffers, calls the candidate through the target's call
 * adapter with the in-process defenses (mf_vf_guarded_runs), and answers with its verdict, the scratch peak and the
 * times, every buffer's whole guarded image after the first call and the second call's outputs. This process
 * then checks the canaries, the inputs and determinism again itself, takes the outputs from the images,
 * replays the scratch peak on its own context (so run_case's ceiling check sees it) and returns to run_case,
 * which compares with the reference; it also measures the worker's resident memory around the request
 * (/proc, run_once checks it against the case's ceiling) and times the request, and the same request for
 * memfix's own entry (the time column).
 * A worker that exits, dies on a signal, does not answer within the time limit or answers garbage is killed
 * (its whole process group) and the case is rejected by 'exit', 'crash', 'timeout' or 'protocol'. */

/* ---- the parent's side ------------------------------------------------------------------------------------ */
static void worker_kill(worker_proc *w)
{
    if (w->pid > 0) {
        kill(-w->pid, SIGKILL);
        kill(w->pid, SIGKILL);
        int st;
        while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    if (w->fd >= 0) close(w->fd);
    w->pid = -1;
    w->fd = -1;
    w->alive = 0;
}

/* ---- the parent's own defenses against its workers (what the red team's candidates tried) ------- *
 * A candidate runs with the user's rights, so it can signal memfix verify (kill(getppid(), SIGTERM): no verdict
 * at all) and, through /proc/<pid>/fd/1 or /proc/<pid>/mem, write into verify's output or memory. While
 * workers run, verify (1) is not dumpable (prctl PR_SET_DUMPABLE 0: its /proc/<pid>/fd and mem are root's,
 * ptrace attach is refused), and (2) catches every catchable terminating or stopping signal: one sent by a
 * process of a worker's process group is ignored and rejects the case being run by 'protocol'; any other
 * (a user's Ctrl-C, a `timeout`, the terminal closing) takes its default action, and where that ends verify,
 * every worker's process group is killed first: a worker runs in its own process group, which the terminal's
 * Ctrl-C does not reach. SIGKILL and SIGSTOP cannot be caught: each worker also dies with verify
 * (PR_SET_PDEATHSIG, set in worker_start), so nothing of a run outlives it (docs/verify.md). */
static iso_session *volatile g_sig_session;
static volatile sig_atomic_t g_tamper_sig;
static volatile sig_atomic_t g_tamper_pid;

static const int g_guarded_signals[] = { SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGUSR1,   SIGUSR2,
                                         SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU, SIGVTALRM, SIGPROF,
                                         SIGXCPU, SIGXFSZ, SIGIO,   SIGPWR,  SIGPIPE };
enum { N_GUARDED_SIGNALS = (int)(sizeof g_guarded_signals / sizeof g_guarded_signals[0]) };

static int from_worker(pid_t from)
{
    iso_session *is = g_sig_session;
    if (is == NULL || from <= 0) return 0;
    const pid_t grp = getpgid(from);
    for (int i = 0; i < MAX_SCHED; i++)
        if (is->w[i].pid > 0 && (from == is->w[i].pid || grp == is->w[i].pid)) return 1;
    return 0;
}

/* Kills every worker's process group (async-signal-safe: from the signal handler, before verify dies). */
static void kill_workers_now(void)
{
    iso_session *is = g_sig_session;
    if (is == NULL) return;
    for (int i = 0; i < MAX_SCHED; i++)
        if (is->w[i].pid > 0) {
            kill(-is->w[i].pid, SIGKILL);
            kill(is->w[i].pid, SIGKILL);
        }
}

/* the dispositions verify found, per signal number (those it replaced while workers run) */
static struct sigaction g_sig_old[65];

static void parent_signal(int sig, siginfo_t *si, void *uc)
{
    if (si != NULL && (si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL) &&
        from_worker(si->si_pid)) {
        g_tamper_sig = sig;
        g_tamper_pid = (sig_atomic_t)si->si_pid;
        return;
    }
    /* not from a candidate: what would have happened without verify's handler */
    const struct sigaction *old = sig > 0 && sig < 65 ? &g_sig_old[sig] : NULL;
    if (old != NULL && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction != NULL) {
        old->sa_sigaction(sig, si, uc);
        return;
    }
    if (old != NULL && !(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN) return;
    if (old != NULL && !(old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_DFL &&
        old->sa_handler != NULL) {
        old->sa_handler(sig);
        return;
    }
    /* the default action, delivered when this handler returns (sig is blocked while it runs); it ends verify
     * except for the stop signals */
    if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) kill_workers_now();
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    sigemptyset(&d.sa_mask);
    sigaction(sig, &d, NULL);
    kill(getpid(), sig);
}

typedef struct parent_guard {
    int dumpable;
    int sigs[N_GUARDED_SIGNALS + 64], n_sigs;
} parent_guard;

static void parent_guard_arm(parent_guard *pg, iso_session *is)
{
    g_tamper_sig = 0;
    g_sig_session = is;
    pg->dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = parent_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    pg->n_sigs = 0;
    for (int i = 0; i < N_GUARDED_SIGNALS; i++) pg->sigs[pg->n_sigs++] = g_guarded_signals[i];
    for (int sig = SIGRTMIN; sig <= SIGRTMAX && sig < 65; sig++) pg->sigs[pg->n_sigs++] = sig;
    for (int i = 0; i < pg->n_sigs; i++) sigaction(pg->sigs[i], &sa, &g_sig_old[pg->sigs[i]]);
}

static void parent_guard_disarm(parent_guard *pg)
{
    for (int i = 0; i < pg->n_sigs; i++) sigaction(pg->sigs[i], &g_sig_old[pg->sigs[i]], NULL);
    if (pg->dumpable > 0) prctl(PR_SET_DUMPABLE, pg->dumpable, 0, 0, 0);
    g_sig_session = NULL;
}

/* A signal a worker sent to verify during the call just made: the case's rejection (else MF_OK). */
static mf_status tamper_check(void)
{
    const int sig = g_tamper_sig;
    if (sig == 0) return MF_OK;
    g_tamper_sig = 0;
    return mf_vf_reject(
        "protocol",
        "the candidate's process (pid %d) sent signal %d (%s) to memfix verify, which ignored it: a "
        "candidate must leave its caller alone",
        (int)g_tamper_pid, sig, strsignal(sig));
}

/* The worker w stopped answering ('what' happened while it ...): reaps it and rejects the case by the reason. */
static mf_status worker_lost(iso_session *is, worker_proc *w, int rc, const char *what)
{
    const schedule *sc = &is->sched[mf_vf_g_state->sched];
    if (rc == 2) {
        worker_kill(w);
        return mf_vf_reject(
            "timeout",
            "no answer within %.3g s (%s) while %s (%s): an endless loop in host code or in a "
            "kernel? The worker's process group was killed",
            is->limit_s, is->limit_why, what, sc->label);
    }
    int st = 0, reaped = 0;
    if (rc == 1) /* end of file: the process is exiting; give it a moment */
        for (int i = 0; i < 200 && !reaped; i++) {
            const pid_t r = waitpid(w->pid, &st, WNOHANG);
            if (r == w->pid)
                reaped = 1;
            else {
                const struct timespec pause = { 0, 10 * 1000 * 1000 };
                nanosleep(&pause, NULL);
            }
        }
    if (reaped) {
        kill(-w->pid, SIGKILL); /* whatever it left behind */
        w->pid = -1;
    }
    worker_kill(w);
    if (reaped && WIFEXITED(st)) {
        if (is->sanitize != NULL && WEXITSTATUS(st) == SANITIZER_EXIT)
            return mf_vf_reject("sanitizer",
                                "the %s sanitizer reported an error while %s (%s; its report is on stderr)",
                                is->sanitize, what, sc->label);
        return mf_vf_reject(
            "exit",
            "the candidate's process exited with status %d while %s (%s): a candidate must return, "
            "never exit",
            WEXITSTATUS(st), what, sc->label);
    }
    if (reaped && WIFSIGNALED(st))
        return mf_vf_reject("crash", "the candidate's process was killed by signal %d (%s) while %s (%s)",
                            WTERMSIG(st), strsignal(WTERMSIG(st)), what, sc->label);
    return mf_vf_reject("protocol",
                        "the worker's answer was malformed while %s (%s): something in its process wrote "
                        "into verify's socket",
                        what, sc->label);
}

extern char **environ;

/* environ without the variables the schedule sets, plus them (built before fork: exec's child may not
 * allocate). With --sanitize, the sanitizer's options keep the user's and add halt_on_error and exitcode.
 * CUDA_MODULE_LOADING=EAGER: on a GPU every module loads when its runtime starts (before the calls, see
 * mf_verify_worker_main), not at a kernel's first launch inside a measured call, where the device memory
 * the loader takes would count as a hidden allocation. */
static char **schedule_env(const iso_session *is, const schedule *sc, char *own[4])
{
    size_t n = 0;
    while (environ[n] != NULL) n++;
    char **env = (char **)calloc(n + 5, sizeof *env);
    if (env == NULL) return NULL;
    const char *var = is->sanitize == NULL                  ? NULL
                      : strcmp(is->sanitize, "thread") == 0 ? "TSAN_OPTIONS="
                                                            : "ASAN_OPTIONS=";
    size_t k = 0;
    const char *user = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "CUDAHOST_THREAD_ORDER=", 22) == 0 ||
            strncmp(environ[i], "CUDAHOST_WORKERS=", 17) == 0 ||
            strncmp(environ[i], "CUDA_MODULE_LOADING=", 20) == 0)
            continue;
        if (var != NULL && strncmp(environ[i], var, 13) == 0) {
            user = environ[i] + 13;
            continue;
        }
        env[k++] = environ[i];
    }
    own[0] = own[1] = own[2] = NULL;
    own[3] = strdup("CUDA_MODULE_LOADING=EAGER");
    if (asprintf(&own[0], "CUDAHOST_THREAD_ORDER=%s", sc->order) < 0) own[0] = NULL;
    if (asprintf(&own[1], "CUDAHOST_WORKERS=%d", sc->workers) < 0) own[1] = NULL;
    if (var != NULL && asprintf(&own[2], "%s%s%shalt_on_error=1:exitcode=%d", var, user ? user : "",
                                user ? ":" : "", SANITIZER_EXIT) < 0)
        own[2] = NULL;
    for (int i = 0; i < 4; i++)
        if (own[i] != NULL) env[k++] = own[i];
    env[k] = NULL;
    return env;
}

/* Starts the worker of schedule i and loads the library there. MF_OK, or a rejection (the worker died or
 * hung while loading: the library's constructor), or MF_ERR_INVALID_ARGUMENT / MF_ERR_BACKEND_UNAVAILABLE
 * when the worker refused the library (is->load_error says why). */
static mf_status worker_start(iso_session *is, int i, double deadline)
{
    worker_proc *w = &is->w[i];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        MF_FAIL(MF_ERR_BACKEND, "socketpair: %s", strerror(errno));
    char *own[4] = { NULL, NULL, NULL, NULL };
    char **env = schedule_env(is, &is->sched[i], own);
    char *argv[] = { is->worker_path, (char *)"--verify-worker", NULL };
    const pid_t verify_pid = getpid();
    const pid_t pid = env != NULL ? fork() : -1;
    if (pid == 0) {
        /* the child: its own process group (killed as a whole), killed when verify dies however it dies (even
         * by SIGKILL; checked once more in case verify died before the prctl), the socket on fd 3, stdout ->
         * stderr so that nothing the candidate prints reaches verify's output */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != verify_pid) _exit(127);
        if (dup2(sv[1], 3) < 0 || dup2(2, 1) < 0) _exit(127);
        execve(is->worker_path, argv, env);
        _exit(127);
    }
    for (int k = 0; k < 4; k++) free(own[k]);
    free(env);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        MF_FAIL(MF_ERR_BACKEND, "fork: %s", strerror(errno));
    }
    setpgid(pid, pid); /* also here: no window in which a kill of the group misses it */
    w->pid = pid;
    w->fd = sv[0];
    w->alive = 1;
    wbuf b = { 0 };
    mf_vf_wb_u32(&b, WIRE_HELLO);
    mf_vf_wb_u32(&b, (uint32_t)is->backend);
    mf_vf_wb_str(&b, is->lib);
    mf_vf_wb_str(&b, is->symbol);
    mf_vf_wb_str(&b, is->tg->name);
    const int sent = b.oom ? -1 : mf_vf_io_send(w->fd, b.p, b.n);
    free(b.p);
    if (sent != 0) return worker_lost(is, w, 1, "loading the library");
    uint32_t magic = 0, kind = 0;
    char msg[512], san[16];
    int rc = mf_vf_io_recv(w->fd, &magic, sizeof magic, deadline);
    if (rc == 0 && magic != WIRE_ACK) rc = 3;
    if (rc == 0) rc = mf_vf_io_recv(w->fd, &kind, sizeof kind, deadline);
    if (rc == 0) rc = mf_vf_io_recv_str(w->fd, msg, sizeof msg, deadline);
    if (rc == 0) rc = mf_vf_io_recv_str(w->fd, san, sizeof san, deadline);
    if (rc != 0) /* an exec that failed exits 127 before the hello; a constructor may exit, crash or hang */
        return worker_lost(is, w, rc, "loading the library (its constructors run then)");
    if (kind != ACK_OK) {
        snprintf(is->load_error, sizeof is->load_error, "%s", msg);
        is->load_kind = (int)kind;
        worker_kill(w);
        return mf_set_error(kind == ACK_BACKEND ? MF_ERR_BACKEND_UNAVAILABLE : MF_ERR_INVALID_ARGUMENT,
                            "memfix verify", __FILE__, __LINE__, "%s", msg);
    }
    is->worker_sanitized = san[0] != '\0';
    if (is->sanitize != NULL && strcmp(is->sanitize, san) != 0) {
        snprintf(is->load_error, sizeof is->load_error,
                 "the worker %.300s is not built with the %s sanitizer (%s): build the %s preset "
                 "(cmake --preset %s) and point MF_VERIFY_WORKER at its bin/memfix-verify-worker",
                 is->worker_path, is->sanitize, san[0] ? san : "none",
                 is->sanitize[0] == 't' ? "tsan" : "asan", is->sanitize[0] == 't' ? "tsan" : "asan");
        is->load_kind = ACK_BACKEND;
        worker_kill(w);
        return mf_set_error(MF_ERR_BACKEND_UNAVAILABLE, "memfix verify", __FILE__, __LINE__, "%s",
                            is->load_error);
    }
    return MF_OK;
}

/* ---- measured by memfix, outside the worker: its memory (/proc) and the round trips' wall time --------------- */
/* A request's buffers are held by the worker in at most this many copies: the received input, the host
 * image and the guarded device buffer of each, the images sent back and the answer holding them, the two
 * runs' outputs, one download buffer (the page padding and the guards counted in each). */
enum { MEM_COPIES = 7 };
/* cudahost's launches (per-block shared memory, the fibers' stacks, the thread pool's first start), the
 * allocator's arenas, the worker's small allocations and code pages touched for the first time (the largest
 * growth of the example candidates' workers is ~6 MiB) */
static const size_t MEM_SLACK = (size_t)16 << 20;

/* Resets pid's peak resident set (VmHWM) to its current one (Linux: "5" to /proc/PID/clear_refs); 0 on
 * success. */
static int proc_reset_hwm(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const int ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok ? 0 : -1;
}

/* The "VmRSS:" or "VmHWM:" line of /proc/PID/status in bytes; 0 on success. */
static int proc_vm_bytes(pid_t pid, const char *key, size_t *bytes)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL) return -1;
    int r = -1;
    const size_t k = strlen(key);
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, key, k) == 0) {
            unsigned long long kb = 0;
            if (sscanf(line + k, "%llu", &kb) == 1) {
                *bytes = (size_t)kb * 1024u;
                r = 0;
            }
            break;
        }
    fclose(f);
    return r;
}

/* run_once's check of the memory memfix measured (host backend): the worker's peak RSS growth beyond its
 * own copies of the buffers must stay within the case's scratch ceiling + MEM_SLACK. */
void mf_vf_iso_memory_verdict(verify_state *st, const mf_case_result *r)
{
    if (!st->mem_measured || st->defense[0] != '\0') return;
    size_t limit = 0;
    if (!mf_size_add(r->ceiling_bytes, MEM_SLACK, &limit)) limit = SIZE_MAX;
    if (st->mem_excess > limit)
        (void)mf_vf_reject(
            "process-memory",
            "memory measured outside the candidate (the worker's peak RSS, /proc) grew by %zu bytes "
            "during a call, which exceeds its copies of the buffers (%zu) + the scratch ceiling (%zu) "
            "+ %zu of slack",
            st->mem_growth, st->mem_allow, r->ceiling_bytes, MEM_SLACK);
}

typedef struct answer {
    int32_t status;
    char defense[MF_VERIFY_DEFENSE_MAX], reason[MF_TB_REASON_MAX];
    uint64_t peak;
    double cand, own;
} answer;

/* One answer of the worker: its verdict, then (status MF_OK) every present buffer's image after the first
 * call into img[i] and, with runs == 2, the second run's outputs (out_bytes) into *second. 0, mf_vf_io_recv's
 * codes (3: malformed), or 4: out of memory. */
static int recv_answer(int fd, const mf_tb_buffer *sp, int n_in, int n, int runs, size_t out_bytes,
                       double deadline, answer *a, unsigned char **img, unsigned char **second)
{
    uint32_t magic = 0;
    int rc = mf_vf_io_recv(fd, &magic, sizeof magic, deadline);
    if (rc == 0 && magic != WIRE_ANS) rc = 3;
    if (rc == 0) rc = mf_vf_io_recv(fd, &a->status, sizeof a->status, deadline);
    if (rc == 0) rc = mf_vf_io_recv(fd, a->defense, sizeof a->defense, deadline);
    if (rc == 0) rc = mf_vf_io_recv(fd, a->reason, sizeof a->reason, deadline);
    if (rc == 0) rc = mf_vf_io_recv(fd, &a->peak, sizeof a->peak, deadline);
    if (rc == 0) rc = mf_vf_io_recv(fd, &a->cand, sizeof a->cand, deadline);
    if (rc == 0) rc = mf_vf_io_recv(fd, &a->own, sizeof a->own, deadline);
    a->defense[sizeof a->defense - 1] = a->reason[sizeof a->reason - 1] = '\0';
    for (int i = 0; i < n && rc == 0 && a->status == MF_OK; i++) {
        const int present = sp[i].dev != NULL && (i >= n_in || sp[i].bytes > 0);
        if (!present) continue;
        uint64_t total = 0;
        rc = mf_vf_io_recv(fd, &total, sizeof total, deadline);
        if (rc == 0 && total != sp[i].bytes + 2 * (uint64_t)GUARD_BYTES) rc = 3;
        if (rc == 0 && (img[i] = (unsigned char *)malloc((size_t)total)) == NULL) return 4;
        if (rc == 0) rc = mf_vf_io_recv(fd, img[i], (size_t)total, deadline);
    }
    if (rc == 0 && a->status == MF_OK && runs == 2) {
        if ((*second = (unsigned char *)malloc(out_bytes ? out_bytes : 1)) == NULL) return 4;
        rc = mf_vf_io_recv(fd, *second, out_bytes, deadline);
    }
    return rc;
}

/* ---- the time limit of a request (MF_VERIFY_TIMEOUT_*, include/memfix/verify.h) ---------------------------- */
/* Loading the library (default: MF_VERIFY_TIMEOUT_FALLBACK_S) and memfix's own request (MF_VERIFY_TIMEOUT_OWN_S):
 * --timeout, else 'dflt'. */
static double set_fixed_limit(iso_session *is, double dflt, const char *what)
{
    is->limit_s = is->timeout_s > 0 ? is->timeout_s : dflt;
    snprintf(is->limit_why, sizeof is->limit_why, "%s%s", is->timeout_s > 0 ? "--timeout" : "the limit of ",
             is->timeout_s > 0 ? "" : what);
    return mf_vf_now_s() + is->limit_s;
}

/* The candidate's request: --timeout, else MF_VERIFY_TIMEOUT_MULTIPLE x memfix's own round trip on the case, at
 * least MF_VERIFY_TIMEOUT_FLOOR_S (MF_VERIFY_TIMEOUT_FALLBACK_S without it). */
static double set_case_limit(iso_session *is)
{
    const double own = is->case_own_s;
    if (is->timeout_s > 0) {
        is->limit_s = is->timeout_s;
        snprintf(is->limit_why, sizeof is->limit_why, "--timeout");
    } else if (own > 0) {
        const double d = MF_VERIFY_TIMEOUT_MULTIPLE * own;
        is->limit_s = d > MF_VERIFY_TIMEOUT_FLOOR_S ? d : MF_VERIFY_TIMEOUT_FLOOR_S;
        snprintf(
            is->limit_why, sizeof is->limit_why,
            "the default limit: %g x memfix's own %.3g s on this case, at least %g s; --timeout sets one",
            MF_VERIFY_TIMEOUT_MULTIPLE, own, MF_VERIFY_TIMEOUT_FLOOR_S);
    } else {
        is->limit_s = MF_VERIFY_TIMEOUT_FALLBACK_S;
        snprintf(is->limit_why, sizeof is->limit_why,
                 "the default limit without memfix's time on this case; --timeout sets one");
    }
    return mf_vf_now_s() + is->limit_s;
}

/* memfix's own entry on request b, the first thread order's first request of a case, before the candidate's:
 * its round trip is the time column's and the base of the case's time limit. A request that gets no answer
 * costs the worker (killed: the rest of its answer may be in the socket) and the timing, nothing else. */
static void own_request(iso_session *is, verify_state *st, worker_proc *w, wbuf *b, const mf_tb_buffer *sp,
                        int n_in, int n, int runs, size_t out_bytes, unsigned char **own_img)
{
    st->own_tried = 1;
    if (is->tg->own == NULL) {
        st->time_note = "memfix has no entry of this target's type to time";
        return;
    }
    uint32_t flag = 1;
    memcpy(b->p + 16, &flag, sizeof flag); /* after magic, n_in, n, runs */
    answer oa;
    memset(&oa, 0, sizeof oa);
    unsigned char *own_second = NULL;
    const double deadline = set_fixed_limit(is, MF_VERIFY_TIMEOUT_OWN_S, "memfix's own request"),
                 t1 = mf_vf_now_s();
    int orc = mf_vf_io_send(w->fd, b->p, b->n) != 0 ? 1 : 0;
    if (orc == 0) orc = recv_answer(w->fd, sp, n_in, n, runs, out_bytes, deadline, &oa, own_img, &own_second);
    if (orc == 0) st->own_seconds = is->case_own_s = mf_vf_now_s() - t1;
    free(own_second);
    flag = 0;
    memcpy(b->p + 16, &flag, sizeof flag);
    if (orc != 0) {
        worker_kill(w);
        st->time_note = "memfix's own call got no answer in the worker";
    }
}

mf_status mf_vf_iso_guard(mf_context *ctx, const mf_tb_buffer *sp, int n_in, int n, const void *args)
{
    verify_state *st = mf_vf_g_state;
    iso_session *is = st->iso;
    const mf_verify_target *tg = is->tg;
    worker_proc *w = &is->w[st->sched];
    mf_status s = MF_OK;
    wbuf b = { 0 };
    const int runs = st->sched == 0 ? 2 : 1; /* the first order also checks determinism */
    unsigned char *second = NULL;
    void **in_host = (void **)calloc((size_t)n, sizeof(void *));
    unsigned char **img = (unsigned char **)calloc((size_t)n, sizeof(unsigned char *));
    unsigned char **own_img = (unsigned char **)calloc((size_t)n, sizeof(unsigned char *));
    if (in_host == NULL || img == NULL || own_img == NULL) {
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "host copies");
        goto done;
    }
    /* the request */
    mf_vf_wb_u32(&b, WIRE_REQ);
    mf_vf_wb_u32(&b, (uint32_t)n_in);
    mf_vf_wb_u32(&b, (uint32_t)n);
    mf_vf_wb_u32(&b, (uint32_t)runs);
    mf_vf_wb_u32(&b, 0u); /* 0: the candidate; 1: memfix's own entry (the time column, below) */
    mf_vf_wb_u64(&b, tg->args_size);
    mf_vf_wb_put(&b, args, tg->args_size);
    const void *ptr = NULL;
    if (tg->args_ptr_bytes > 0) memcpy(&ptr, (const unsigned char *)args + tg->args_ptr_offset, sizeof ptr);
    mf_vf_wb_u32(&b, ptr != NULL);
    if (ptr != NULL) {
        mf_vf_wb_u64(&b, tg->args_ptr_bytes);
        mf_vf_wb_put(&b, ptr, tg->args_ptr_bytes);
    }
    size_t out_bytes = 0, io_bytes = 0;
    const size_t page = mf_vf_page_bytes();
    for (int i = 0; i < n; i++) {
        char name[WIRE_NAME] = { 0 };
        snprintf(name, sizeof name, "%s", sp[i].name);
        const int present = sp[i].dev != NULL && (i >= n_in || sp[i].bytes > 0);
        mf_vf_wb_put(&b, name, sizeof name);
        mf_vf_wb_u32(&b, (uint32_t)present);
        mf_vf_wb_u64(&b, sp[i].bytes);
        mf_vf_wb_u32(&b, (uint32_t)sp[i].dtype);
        char axes[WIRE_AXES] = { 0 }; /* the buffer's axes, which the worker's rejections name elements by */
        snprintf(axes, sizeof axes, "%s", sp[i].axes.names != NULL ? sp[i].axes.names : "");
        mf_vf_wb_put(&b, axes, sizeof axes);
        for (int k = 0; k < MF_AXES_MAX; k++) mf_vf_wb_u64(&b, (uint64_t)sp[i].axes.dim[k]);
        if (present && i >= n_in) out_bytes += sp[i].bytes;
        if (present) io_bytes += sp[i].bytes + 2 * (size_t)GUARD_BYTES + page;
    }
    for (int i = 0; i < n_in && s == MF_OK; i++) {
        if (sp[i].dev == NULL || sp[i].bytes == 0) continue;
        in_host[i] = malloc(sp[i].bytes);
        if (in_host[i] == NULL)
            s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "inputs");
        else if ((s = mf_buffer_download(ctx, in_host[i], sp[i].dev, sp[i].bytes)) == MF_OK) {
            mf_vf_dump_input(sp[i].name, in_host[i], sp[i].bytes);
            mf_vf_wb_put(&b, in_host[i], sp[i].bytes);
        }
    }
    if (s != MF_OK) goto done;
    if (b.oom) {
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "request");
        goto done;
    }
    if (!w->alive &&
        (s = worker_start(is, st->sched,
                          set_fixed_limit(is, MF_VERIFY_TIMEOUT_FALLBACK_S, "loading the library"))) != MF_OK)
        goto done;
    if (st->sched == 0 && !st->own_tried) {
        own_request(is, st, w, &b, sp, n_in, n, runs, out_bytes, own_img);
        if (!w->alive && (s = worker_start(is, st->sched,
                                           set_fixed_limit(is, MF_VERIFY_TIMEOUT_FALLBACK_S,
                                                           "loading the library"))) != MF_OK)
            goto done;
    }
    const double deadline = set_case_limit(is);
    /* the worker's memory, measured here (host backend): its peak RSS from now on (Linux) */
    size_t rss0 = 0;
    int mem = 0;
    if (is->backend == MF_BACKEND_HOST && !is->worker_sanitized && is->mem_state >= 0) {
        mem = proc_reset_hwm(w->pid) == 0 && proc_vm_bytes(w->pid, "VmRSS:", &rss0) == 0;
        if (!mem && is->mem_state == 0)
            fprintf(stderr,
                    "memfix verify: note: /proc/%d/clear_refs or /proc/%d/status is not available (%s): the "
                    "worker's memory is not measured from outside it (docs/verify.md, \"Measured by "
                    "memfix\")\n",
                    (int)w->pid, (int)w->pid, strerror(errno));
        is->mem_state = mem ? 1 : -1;
    }
    const double t0 = mf_vf_now_s();
    if (mf_vf_io_send(w->fd, b.p, b.n) != 0) {
        s = worker_lost(is, w, 1, "receiving the case");
        goto done;
    }
    /* the answer */
    answer a;
    memset(&a, 0, sizeof a);
    int rc = recv_answer(w->fd, sp, n_in, n, runs, out_bytes, deadline, &a, img, &second);
    /* the time column: the round trips of this request and of the same request for memfix's own entry, both
     * timed here (transfers and checks included in both) */
    if (st->sched == 0 && isnan(st->cand_seconds) && rc == 0) st->cand_seconds = mf_vf_now_s() - t0;
    if (rc != 0 && st->time_note == NULL) st->time_note = "the candidate's call did not complete";
    if (rc == 4) {
        worker_kill(w); /* the rest of its answer is still in the socket */
        s = mf_set_error(MF_ERR_OUT_OF_MEMORY, __func__, __FILE__, __LINE__, "images");
        goto done;
    }
    if (rc != 0) {
        s = worker_lost(is, w, rc, "running the candidate");
        goto done;
    }
    size_t hwm = 0;
    if (mem && proc_vm_bytes(w->pid, "VmHWM:", &hwm) == 0) {
        const size_t growth = hwm > rss0 ? hwm - rss0 : 0;
        size_t allow = 0;
        if (!mf_size_mul(io_bytes, MEM_COPIES, &allow)) allow = SIZE_MAX;
        const size_t excess = growth > allow ? growth - allow : 0;
        if (!st->mem_measured || excess > st->mem_excess) {
            st->mem_excess = excess;
            st->mem_growth = growth;
            st->mem_allow = allow;
        }
        st->mem_measured = 1;
        if (getenv("MF_VERIFY_MEM_DEBUG") != NULL)
            fprintf(stderr, "memfix verify: worker %d: peak RSS +%zu bytes, copies %zu, excess %zu\n",
                    (int)w->pid, growth, allow, excess);
    }
    if (a.status != MF_OK) {
        if (a.defense[0] != '\0')
            s = mf_vf_reject(a.defense, "%s", a.reason);
        else
            s = mf_set_error((mf_status)a.status, "memfix verify worker", __FILE__, __LINE__, "%s", a.reason);
        goto done;
    }
    /* the parent's own checks */
    for (int i = 0; i < n && s == MF_OK; i++)
        if (img[i] != NULL)
            s = mf_vf_image_check(img[i], sp[i].name, &sp[i].axes, sp[i].bytes,
                                  i < n_in ? (const unsigned char *)in_host[i] : NULL);
    /* determinism, compared here: the second run's outputs against the first's */
    if (s == MF_OK && second != NULL) {
        const unsigned char *q = second;
        for (int i = n_in; i < n && s == MF_OK; i++) {
            if (img[i] == NULL) continue;
            if (memcmp(img[i] + GUARD_BYTES, q, sp[i].bytes) != 0) {
                size_t at = 0;
                while (img[i][GUARD_BYTES + at] == q[at]) at++;
                char el[112];
                mf_tb_element_at(&sp[i].axes, sp[i].bytes, at, el, sizeof el);
                s = mf_vf_reject(
                    "determinism",
                    "a second call on the same inputs (outputs re-filled with NaN) gave different bits "
                    "(first in %s at %s, byte %zu; compared by memfix on the outputs the worker returned)",
                    sp[i].name, el, at);
            }
            q += sp[i].bytes;
        }
    }
    size_t out_floats = 0, zeros = 0;
    for (int i = n_in; i < n && s == MF_OK; i++) {
        if (img[i] == NULL) continue;
        s = mf_buffer_upload(ctx, (void *)(uintptr_t)sp[i].dev, img[i] + GUARD_BYTES, sp[i].bytes);
        const float *f = (const float *)(const void *)(img[i] + GUARD_BYTES);
        for (size_t k = 0; k < sp[i].bytes / sizeof(float); k++) zeros += f[k] == 0.0f;
        out_floats += sp[i].bytes / sizeof(float);
    }
    if (s != MF_OK) goto done;
    st->all_zero = out_floats > 0 && zeros == out_floats;
    /* the worker's scratch peak, replayed on this context so that run_case's ceiling check sees it (it includes
     * the untracked memory the worker's memory defenses charged: mem_defense.h) */
    if (a.peak > 0) {
        mf_mem_stats ms;
        size_t top = 0;
        if ((s = mf_mem_stats_get(ctx, MF_MEM_DEVICE, &ms)) == MF_OK) {
            if (!mf_size_add(ms.current, (size_t)a.peak, &top)) top = SIZE_MAX;
            mf_context_raise_scratch_peak(ctx, MF_MEM_DEVICE, top);
        }
    }
done:
    if (g_tamper_sig != 0) { /* overrides whatever the call gave: the candidate attacked verify */
        mf_clear_error();
        s = tamper_check();
    }
    for (int i = 0; i < n && img != NULL; i++) free(img[i]);
    for (int i = 0; i < n && own_img != NULL; i++) free(own_img[i]);
    for (int i = 0; i < n && in_host != NULL; i++) free(in_host[i]);
    free(second);
    free(own_img);
    free(img);
    free(in_host);
    free(b.p);
    return s;
}

/* ---- the driver of mf_verify_lib ---------------------------------------------------------------------------- */
void mf_verify_options_init(mf_verify_options *o)
{
    if (o == NULL) return;
    memset(o, 0, sizeof *o);
    o->timeout_s = 0; /* derived from memfix's own time on each case (MF_VERIFY_TIMEOUT_*) */
    o->orders = 2;
    o->order_seed = 1;
}

static int is_exec(const char *p) { return p != NULL && p[0] != '\0' && access(p, X_OK) == 0; }

static int find_worker(const mf_verify_options *o, char *out, size_t cap)
{
    const char *env = getenv("MF_VERIFY_WORKER");
    if (is_exec(env)) return snprintf(out, cap, "%s", env), 1;
    if (is_exec(o->worker)) return snprintf(out, cap, "%s", o->worker), 1;
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 64);
    if (len > 0) {
        self[len] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            snprintf(slash + 1, 64, "memfix-verify-worker");
            if (is_exec(self)) return snprintf(out, cap, "%s", self), 1;
        }
    }
    return 0;
}

static void make_schedules(iso_session *is, const mf_verify_options *o)
{
    schedule *s = is->sched;
    int k = 0;
    snprintf(s[k].order, sizeof s[k].order, "forward");
    s[k].workers = 2;
    snprintf(s[k++].label, sizeof s[0].label, "forward order, 2 workers");
    snprintf(s[k].order, sizeof s[k].order, "reverse");
    s[k].workers = 1;
    snprintf(s[k++].label, sizeof s[0].label, "reverse order, 1 worker");
    const int orders = o->orders < 0 ? 0 : o->orders > MAX_SCHED - 2 ? MAX_SCHED - 2 : o->orders;
    for (int r = 0; r < orders; r++, k++) {
        const unsigned long long seed = (unsigned long long)o->order_seed + (unsigned long long)r;
        snprintf(s[k].order, sizeof s[k].order, "random:%llu", seed);
        s[k].workers = r % 2 == 0 ? 1 : 2;
        snprintf(s[k].label, sizeof s[k].label, "random:%llu order, %d worker%s", seed, s[k].workers,
                 s[k].workers > 1 ? "s" : "");
    }
    is->n_sched = k;
}

/* a placeholder candidate in this process: mf_tb_guard sends the calls to the worker */
static void not_called(void) {}

mf_status mf_verify_lib(mf_context *ctx, const char *op, const mf_verify_options *o, mf_verify_row *rows,
                        size_t cap, size_t *n_rows)
{
    MF_CHECK_NOT_NULL(n_rows);
    *n_rows = 0;
    MF_CHECK_NOT_NULL(ctx);
    MF_CHECK_NOT_NULL(op);
    MF_CHECK_NOT_NULL(o);
    MF_CHECK_NOT_NULL(o->lib);
    MF_CHECK_NOT_NULL(o->symbol);
    MF_CHECK_NOT_NULL(rows);
    const mf_verify_target *tg = mf_vf_find_target(op, NULL);
    if (tg == NULL)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "op '%s' takes no candidates (supported: %s)", op,
                mf_verify_supported_ops());
    if (tg->call == NULL) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "target '%s' cannot run in a worker process", op);
    if (o->sanitize != NULL && strcmp(o->sanitize, "thread") != 0 && strcmp(o->sanitize, "address") != 0)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "sanitize '%s': expected thread or address", o->sanitize);
    if (!(o->timeout_s >= 0) || isinf(o->timeout_s))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "timeout %g s: must be > 0 (or 0: derived from memfix's time)",
                o->timeout_s);
    /* the cases: o->ids (fixed, random, large), else the target's fixed cases */
    const int n_fixed = mf_verify_n_cases(op);
    const size_t n = o->ids != NULL ? o->n_ids : (size_t)n_fixed;
    if (cap < n) MF_FAIL(MF_ERR_INVALID_SIZE, "rows holds %zu rows; %zu cases asked for", cap, n);
    mf_case_id *ids = (mf_case_id *)calloc(n + 1, sizeof *ids);
    if (ids == NULL) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "case ids");
    for (size_t c = 0; c < n; c++) ids[c] = o->ids != NULL ? o->ids[c] : mf_tb_fixed_id((int)c);
    iso_session *is = (iso_session *)calloc(1, sizeof *is);
    if (is == NULL) {
        free(ids);
        MF_FAIL(MF_ERR_OUT_OF_MEMORY, "session");
    }
    is->tg = tg;
    is->lib = o->lib;
    is->symbol = o->symbol;
    is->backend = mf_context_backend(ctx);
    is->timeout_s = o->timeout_s;
    is->keep_going = o->keep_going;
    is->sanitize = o->sanitize;
    for (int i = 0; i < MAX_SCHED; i++) is->w[i].pid = is->w[i].fd = -1;
    make_schedules(is, o);
    if (!find_worker(o, is->worker_path, sizeof is->worker_path)) {
        free(is);
        free(ids);
        MF_FAIL(
            MF_ERR_BACKEND_UNAVAILABLE,
            "no memfix-verify-worker found (set MF_VERIFY_WORKER, or keep it next to the memfix executable)");
    }
    /* the library's path as the worker will see it (a bare name: the current directory's file) */
    char path[4096];
    struct stat sb;
    if (strchr(o->lib, '/') == NULL && stat(o->lib, &sb) == 0)
        snprintf(path, sizeof path, "./%s", o->lib);
    else
        snprintf(path, sizeof path, "%s", o->lib);
    is->lib = path;
    /* The first worker answers whether the library loads at all (a usage error, not a verdict). A worker that
     * dies or hangs while loading (the library's constructors) rejects every case instead. */
    verify_state probe;
    memset(&probe, 0, sizeof probe);
    probe.iso = is;
    mf_vf_g_state = &probe;
    parent_guard pg;
    parent_guard_arm(&pg, is);
    is->case_own_s = NAN;
    mf_status s =
        worker_start(is, 0, set_fixed_limit(is, MF_VERIFY_TIMEOUT_FALLBACK_S, "loading the library"));
    mf_vf_g_state = NULL;
    if (s != MF_OK && is->load_error[0] != '\0') {
        worker_kill(&is->w[0]);
        parent_guard_disarm(&pg);
        free(is);
        free(ids);
        return s;
    }
    mf_clear_error();
    mf_vf_run_all(ctx, tg, not_called, ids, (int)n, is, rows);
    for (int i = 0; i < MAX_SCHED; i++)
        if (is->w[i].pid > 0 || is->w[i].fd >= 0) worker_kill(&is->w[i]);
    parent_guard_disarm(&pg);
    free(is);
    free(ids);
    *n_rows = n;
    return MF_OK;
}

#else /* no host kernels: no ops, so nothing takes candidates */

void mf_verify_options_init(mf_verify_options *o)
{
    if (o != NULL) memset(o, 0, sizeof *o);
}

mf_status mf_verify_lib(mf_context *ctx, const char *op, const mf_verify_options *o, mf_verify_row *rows,
                        size_t cap, size_t *n_rows)
{
    (void)ctx;
    (void)o;
    (void)rows;
    (void)cap;
    if (n_rows != NULL) *n_rows = 0;
    MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "op '%s': this build has no optimized kernels, so no candidates",
            op != NULL ? op : "(null)");
}

#endif
