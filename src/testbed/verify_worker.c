/* memfix-verify-worker (mf_verify_worker_main): the process that loads a candidate library, gives up its
 * privileges and serves memfix verify's requests with guarded calls; and the wire both sides speak over their
 * socket. */
#define _GNU_SOURCE /* dlinfo */
#include "verify_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef MF_HAVE_HOST_KERNELS

/* ---- the wire --------------------------------------------------------------------------------------------- */
void mf_vf_wb_put(wbuf *b, const void *p, size_t n)
{
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *q = (unsigned char *)realloc(b->p, cap);
        if (q == NULL) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}
void mf_vf_wb_u32(wbuf *b, uint32_t v) { mf_vf_wb_put(b, &v, sizeof v); }
void mf_vf_wb_u64(wbuf *b, uint64_t v) { mf_vf_wb_put(b, &v, sizeof v); }
static void wb_f64(wbuf *b, double v) { mf_vf_wb_put(b, &v, sizeof v); }
void mf_vf_wb_str(wbuf *b, const char *s)
{
    const uint32_t n = s != NULL ? (uint32_t)strlen(s) : 0;
    mf_vf_wb_u32(b, n);
    mf_vf_wb_put(b, s, n);
}

double mf_vf_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 0 when all n bytes were sent */
int mf_vf_io_send(int fd, const void *p, size_t n)
{
    const unsigned char *c = (const unsigned char *)p;
    while (n > 0) {
        const ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 0: all n bytes read; 1: end of file or error; 2: the deadline passed (deadline <= 0: none) */
int mf_vf_io_recv(int fd, void *p, size_t n, double deadline)
{
    unsigned char *c = (unsigned char *)p;
    while (n > 0) {
        if (deadline > 0) {
            const double left = deadline - mf_vf_now_s();
            if (left <= 0) return 2;
            struct pollfd pf = { fd, POLLIN, 0 };
            const int r = poll(&pf, 1, left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1);
            if (r < 0 && errno == EINTR) continue;
            if (r == 0) continue;
            if (r < 0) return 1;
        }
        const ssize_t got = recv(fd, c, n, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 1;
        c += got;
        n -= (size_t)got;
    }
    return 0;
}

/* a string of at most cap-1 bytes (longer: an error) */
int mf_vf_io_recv_str(int fd, char *dst, size_t cap, double deadline)
{
    uint32_t len = 0;
    int r = mf_vf_io_recv(fd, &len, sizeof len, deadline);
    if (r != 0) return r;
    if (len >= cap) return 3;
    if ((r = mf_vf_io_recv(fd, dst, len, deadline)) != 0) return r;
    dst[len] = '\0';
    return 0;
}

/* ---- the worker's side ------------------------------------------------------------------------------------ */
/* A library built for the CUDA runtime (libcudart among its dependencies, or cuda* symbols it does not get
 * from cudahost): a message for the host backend, else NULL. */
static const char *cuda_built(void *handle, char *msg, size_t cap, const char *lib)
{
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0)
        for (struct link_map *m = lm; m != NULL; m = m->l_next)
            if (m->l_name != NULL && strstr(m->l_name, "libcudart") != NULL) {
                snprintf(msg, cap,
                         "'%.300s' is linked against the CUDA runtime (%.200s): it was built with nvcc for a "
                         "GPU. The "
                         "host backend runs candidates built for host execution mode with cudahost-c++ (see "
                         "docs/verify.md); verify this one with --backend cuda on a machine with a GPU",
                         lib, m->l_name);
                return msg;
            }
    return NULL;
}

static int ack(int fd, uint32_t kind, const char *msg)
{
    wbuf b = { 0 };
    mf_vf_wb_u32(&b, WIRE_ACK);
    mf_vf_wb_u32(&b, kind);
    mf_vf_wb_str(&b, msg);
#if defined(__SANITIZE_THREAD__)
    mf_vf_wb_str(&b, "thread");
#elif defined(__SANITIZE_ADDRESS__)
    mf_vf_wb_str(&b, "address");
#else
    mf_vf_wb_str(&b, "");
#endif
    const int r = b.oom ? -1 : mf_vf_io_send(fd, b.p, b.n);
    free(b.p);
    return r;
}

/* One request: returns 0 to go on, 1 to stop (the socket closed). */
static int serve(int fd, mf_context *ctx, const mf_verify_target *tg, void (*candidate)(void))
{
    uint32_t magic = 0, n_in = 0, n = 0, runs = 0, own = 0, has_ptr = 0;
    uint64_t args_size = 0, ptr_bytes = 0;
    if (mf_vf_io_recv(fd, &magic, sizeof magic, 0) != 0 || magic != WIRE_REQ) return 1;
    if (mf_vf_io_recv(fd, &n_in, 4, 0) || mf_vf_io_recv(fd, &n, 4, 0) || mf_vf_io_recv(fd, &runs, 4, 0) ||
        mf_vf_io_recv(fd, &own, 4, 0) || mf_vf_io_recv(fd, &args_size, 8, 0))
        return 1;
    if (n > 64 || n_in > n || args_size != tg->args_size || runs < 1 || runs > 2 || own > 1 ||
        (own && tg->own == NULL))
        return 1;
    void *args = calloc(1, args_size + 16), *ptr = NULL;
    mf_tb_buffer *sp = (mf_tb_buffer *)calloc(n + 1, sizeof *sp);
    guarded *bufs = (guarded *)calloc(n + 1, sizeof *bufs);
    unsigned char **img = (unsigned char **)calloc(n + 1, sizeof *img);
    char(*names)[WIRE_NAME] = (char(*)[WIRE_NAME])calloc(n + 1, WIRE_NAME);
    char(*axes)[WIRE_AXES] = (char(*)[WIRE_AXES])calloc(n + 1, WIRE_AXES);
    int stop = args == NULL || sp == NULL || bufs == NULL || img == NULL || names == NULL || axes == NULL;
    if (!stop) stop = mf_vf_io_recv(fd, args, args_size, 0) != 0 || mf_vf_io_recv(fd, &has_ptr, 4, 0) != 0;
    if (!stop && has_ptr) {
        stop = mf_vf_io_recv(fd, &ptr_bytes, 8, 0) != 0 || ptr_bytes != tg->args_ptr_bytes ||
               (ptr = calloc(1, ptr_bytes + 16)) == NULL || mf_vf_io_recv(fd, ptr, ptr_bytes, 0) != 0;
    }
    if (!stop && tg->args_ptr_bytes > 0)
        memcpy((unsigned char *)args + tg->args_ptr_offset, &ptr, sizeof ptr);
    size_t out_bytes = 0;
    for (uint32_t i = 0; i < n && !stop; i++) {
        uint32_t present = 0, dtype = 0;
        uint64_t bytes = 0;
        stop = mf_vf_io_recv(fd, names[i], WIRE_NAME, 0) || mf_vf_io_recv(fd, &present, 4, 0) ||
               mf_vf_io_recv(fd, &bytes, 8, 0) || mf_vf_io_recv(fd, &dtype, 4, 0) ||
               mf_vf_io_recv(fd, axes[i], WIRE_AXES, 0);
        for (int k = 0; k < MF_AXES_MAX && !stop; k++) {
            uint64_t d = 0;
            stop = mf_vf_io_recv(fd, &d, 8, 0) != 0;
            sp[i].axes.dim[k] = (int64_t)d;
        }
        names[i][WIRE_NAME - 1] = axes[i][WIRE_AXES - 1] = '\0';
        sp[i].axes.names = axes[i];
        sp[i].name = names[i];
        sp[i].bytes = (size_t)bytes;
        sp[i].dtype = (mf_dtype)dtype;
        sp[i].dev = present ? (const void *)1 : NULL; /* a marker: the data follows */
        if (present && i >= n_in) out_bytes += (size_t)bytes;
    }
    verify_state vs;
    memset(&vs, 0, sizeof vs);
    vs.candidate =
        own ? tg->own : candidate; /* own: memfix's entry, timed by the parent beside the candidate */
    mf_vf_g_state = &vs;
    mf_status s = MF_OK;
    for (uint32_t i = 0; i < n && !stop && s == MF_OK; i++) {
        if (sp[i].dev == NULL) continue;
        if (i < n_in) {
            void *h = malloc(sp[i].bytes ? sp[i].bytes : 1);
            if (h == NULL || mf_vf_io_recv(fd, h, sp[i].bytes, 0) != 0)
                stop = 1;
            else
                s = mf_vf_guarded_make(ctx, &bufs[i], sp[i].name, h, sp[i].bytes);
            free(h);
        } else {
            s = mf_vf_guarded_make_dt(ctx, &bufs[i], sp[i].name, NULL, sp[i].bytes, sp[i].dtype);
        }
        bufs[i].axes = sp[i].axes;
    }
    unsigned char *out = (unsigned char *)malloc(out_bytes ? out_bytes : 1);
    unsigned char *second = runs == 2 ? (unsigned char *)malloc(out_bytes ? out_bytes : 1) : NULL;
    if (out == NULL || (runs == 2 && second == NULL)) stop = 1;
    const double own_s = NAN; /* (memfix times its own entry itself: a request of its own) */
    /* the scratch peak from here (memfix's own entry of an earlier request took its own) */
    if (!stop && s == MF_OK) s = mf_mem_begin(ctx, MF_MEM_DEVICE);
    if (!stop && s == MF_OK)
        s = mf_vf_guarded_runs(ctx, tg->call, args, bufs, (int)n_in, (int)n, out, out_bytes, (int)runs, img,
                               second);
    if (!stop) {
        wbuf b = { 0 };
        char defense[MF_VERIFY_DEFENSE_MAX] = { 0 }, reason[MF_TB_REASON_MAX] = { 0 };
        snprintf(defense, sizeof defense, "%s", vs.defense);
        snprintf(reason, sizeof reason, "%s", vs.defense[0] ? vs.reason : mf_last_error());
        mf_vf_wb_u32(&b, WIRE_ANS);
        const int32_t st32 = (int32_t)s;
        mf_vf_wb_put(&b, &st32, sizeof st32);
        mf_vf_wb_put(&b, defense, sizeof defense);
        mf_vf_wb_put(&b, reason, sizeof reason);
        mf_vf_wb_u64(&b, vs.peak);
        wb_f64(&b, vs.first_seconds);
        wb_f64(&b, own_s);
        for (uint32_t i = 0; i < n && s == MF_OK; i++) {
            if (sp[i].dev == NULL) continue;
            mf_vf_wb_u64(&b, bufs[i].bytes + 2 * (uint64_t)GUARD_BYTES);
            mf_vf_wb_put(&b, img[i], bufs[i].bytes + 2 * (size_t)GUARD_BYTES);
        }
        if (s == MF_OK && runs == 2)
            mf_vf_wb_put(&b, second, out_bytes); /* memfix compares the two runs itself */
        stop = b.oom || mf_vf_io_send(fd, b.p, b.n) != 0;
        free(b.p);
    }
    mf_vf_g_state = NULL;
    for (uint32_t i = 0; i < n; i++) {
        mf_vf_guarded_free(ctx, &bufs[i]);
        free(img[i]);
    }
    free(second);
    free(out);
    free(names);
    free(axes);
    free(img);
    free(bufs);
    free(sp);
    free(ptr);
    free(args);
    return stop;
}

/* The worker gives up every capability before it loads the candidate (run as root, memfix verify's
 * non-dumpable state would not keep it out of /proc/<verify>/fd/1 or /proc/<verify>/mem otherwise): the
 * bounding set emptied, no_new_privs (an exec'd program gains none back), then capset to nothing. Errors are
 * ignored: a process without capabilities has nothing to drop. */
static void worker_drop_privileges(void)
{
    for (int c = 0; c < 64; c++) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) != 0) {
    }
}

int mf_verify_worker_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const int fd = 3;
    signal(SIGPIPE, SIG_IGN);
    uint32_t magic = 0, backend = 0;
    char lib[4096], symbol[512], target[128], msg[1024];
    if (mf_vf_io_recv(fd, &magic, 4, 0) != 0 || magic != WIRE_HELLO ||
        mf_vf_io_recv(fd, &backend, 4, 0) != 0 || mf_vf_io_recv_str(fd, lib, sizeof lib, 0) != 0 ||
        mf_vf_io_recv_str(fd, symbol, sizeof symbol, 0) != 0 ||
        mf_vf_io_recv_str(fd, target, sizeof target, 0) != 0) {
        fprintf(stderr, "memfix-verify-worker: run by memfix verify only (no request on fd 3)\n");
        return 2;
    }
    const mf_verify_target *tg = mf_vf_find_target(target, NULL);
    if (tg == NULL || tg->call == NULL) {
        snprintf(msg, sizeof msg, "target '%.100s' cannot run in a worker process", target);
        return ack(fd, ACK_LOAD, msg) == 0 ? 2 : 2;
    }
    mf_context *ctx = NULL;
    if (mf_context_create(&ctx, (mf_backend)backend) != MF_OK) {
        snprintf(msg, sizeof msg, "cannot create a %s context in the worker: %s",
                 mf_backend_name((mf_backend)backend), mf_last_error());
        ack(fd, ACK_BACKEND, msg);
        return 3;
    }
    worker_drop_privileges();
    dlerror();
    void *handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *e = dlerror();
        snprintf(
            msg, sizeof msg, "cannot load '%.300s': %.300s%s", lib, e ? e : "unknown error",
            e && strstr(e, "libcudart")
                ? " (it is linked against the CUDA runtime: built with nvcc for a GPU. The host backend runs "
                  "candidates built with cudahost-c++, see docs/verify.md; use --backend cuda on a GPU)"
            : e && (strstr(e, "undefined symbol") || strstr(e, "static TLS"))
                ? " (a host-mode candidate takes cudahost_* and mf_* from memfix itself: link it without "
                  "libcudahost.a, see docs/verify.md)"
                : "");
        ack(fd, ACK_LOAD, msg);
        return 2;
    }
    if (mf_context_backend(ctx) == MF_BACKEND_HOST && cuda_built(handle, msg, sizeof msg, lib) != NULL) {
        ack(fd, ACK_LOAD, msg);
        return 2;
    }
    dlerror();
    void *sym = dlsym(handle, symbol);
    const char *e = dlerror();
    if (sym == NULL || e != NULL) {
        snprintf(msg, sizeof msg, "no symbol '%.100s' in '%.300s'%s%.200s (declare it extern \"C\")", symbol,
                 lib, e ? ": " : "", e ? e : "");
        ack(fd, ACK_LOAD, msg);
        return 2;
    }
    if (dlsym(handle, "cudahost_cudaMalloc") != NULL) {
        snprintf(msg, sizeof msg,
                 "'%.300s' contains its own copy of the cudahost runtime (libcudahost.a linked in): link the "
                 "candidate "
                 "without cudahost, so that it uses memfix's (see docs/verify.md)",
                 lib);
        ack(fd, ACK_LOAD, msg);
        return 2;
    }
    if (mf_context_backend(ctx) == MF_BACKEND_CUDA) {
        /* The candidate's CUDA runtime (its libcudart.so, or a static one linked in) starts at its first call:
         * cudaFree(NULL) starts it now, and with CUDA_MODULE_LOADING=EAGER (schedule_env) loads its modules,
         * so that the device memory either takes is in use before the first measured call (hidden-allocation
         * check). */
        void *f = dlsym(handle, "cudaFree");
        if (f != NULL) {
            int (*cuda_free)(void *);
            memcpy(&cuda_free, &f, sizeof cuda_free);
            (void)cuda_free(NULL);
        }
        dlerror();
    }
    void (*candidate)(void);
    memcpy(&candidate, &sym, sizeof candidate);
    if (ack(fd, ACK_OK, "") != 0) return 0;
    while (serve(fd, ctx, tg, candidate) == 0) {
    }
    /* the library stays loaded (its destructors and threads); _exit: this process's exit status is nobody's */
    _exit(0);
}

#else /* no host kernels: no ops, so nothing takes candidates */

int mf_verify_worker_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 3;
}

#endif
