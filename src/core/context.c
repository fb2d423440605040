/* Contexts, caller buffers and the two tracked scratch allocators.
 *
 * A context owns a backend operations table (host execution mode or CUDA), a
 * stream, a cuBLAS handle and its workspace. Every pointer handed out by
 * mf_buffer_alloc and mf_scratch_alloc is recorded with its size in a small
 * table, so frees are validated, stats are exact and a destroyed context
 * releases whatever its user forgot.
 *
 * Device scratch is a caching arena: a freed block goes back
 * to the context's cache instead of cudaFree (which synchronizes the device),
 * and the next request takes the smallest cached block that holds it, so an op
 * call in steady state does no cudaMalloc, no cudaFree and no synchronization.
 * Reuse is stream-ordered: every op launches on the context's stream, so the
 * kernels of the next user of a block run after those of the last one. The
 * trackers count the bytes requested, exactly as before (peaks and ceilings do
 * not see the cache); the cache is released by mf_context_trim and
 * mf_context_destroy.
 *
 * Data-dependent errors found on the device (an index out of range) are
 * deferred checks (mf_deferred.h): the op enqueues a copy of the device's
 * verdict into a slot of page-locked host memory without waiting, and the next
 * synchronizing call of the context (mf_context_synchronize,
 * mf_buffer_download, mf_context_trim) has the op's report say what it found,
 * as the CUDA runtime reports an asynchronous launch error. */
#define _POSIX_C_SOURCE 200809L
#include "mf_internal.h"
#include "mf_backend.h"
#include "mf_deferred.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- allocation records ----------------------------------------------------- */
typedef struct mf_record {
    void *ptr;
    size_t bytes;
    size_t block; /* device scratch: the bytes of the block behind ptr (cache reuse) */
    void *base;   /* device scratch under the guard: the allocation (ptr - guard); else NULL */
} mf_record;

typedef struct mf_record_set {
    mf_record *items;
    size_t count, cap;
} mf_record_set;

typedef struct mf_tracker {
    mf_record_set live;
    size_t current, peak, baseline, allocations;
} mf_tracker;

/* A pending deferred check (mf_context_defer_check): its op's report and the
 * bytes the report reads. */
enum { MF_DEFERRED_SLOTS = 16, MF_SCRATCH_GUARD = 256 };
typedef struct mf_deferred {
    const char *func;
    int64_t n_rows;
    mf_deferred_report_fn *report;
    union {
        max_align_t align;
        unsigned char bytes[MF_DEFERRED_INFO_BYTES];
    } info;
} mf_deferred;

struct mf_context {
    mf_backend backend; /* resolved: HOST or CUDA */
    const mf_backend_ops *ops;
    void *stream;
    void *cublas;
    void *cublas_workspace;
    size_t cublas_workspace_bytes;
    pthread_mutex_t lock;  /* guards the trackers and the buffer set */
    mf_tracker scratch[2]; /* indexed by mf_mem_space */
    mf_record_set buffers;
    size_t buffer_bytes;
    mf_record_set cache; /* free device scratch blocks (ptr, block) */
    size_t cached_bytes;
    int64_t *deferred_slots; /* page-locked: MF_DEFERRED_SLOTS first-bad-row words */
    mf_deferred deferred[MF_DEFERRED_SLOTS];
    int n_deferred;
    int scratch_guard; /* memfix verify: guard zones around device scratch */
    char guard_violation[320];
};

static int record_add(mf_record_set *set, void *ptr, size_t bytes)
{
    if (set->count == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        mf_record *items = (mf_record *)realloc(set->items, cap * sizeof *items);
        if (items == NULL) return 0;
        set->items = items;
        set->cap = cap;
    }
    set->items[set->count].ptr = ptr;
    set->items[set->count].bytes = bytes;
    set->items[set->count].block = bytes;
    set->items[set->count].base = NULL;
    set->count++;
    return 1;
}

/* Removes ptr; returns its record through *out. 0 if ptr is not recorded. */
static int record_take(mf_record_set *set, const void *ptr, mf_record *out)
{
    for (size_t i = set->count; i-- > 0;) {
        if (set->items[i].ptr == ptr) {
            *out = set->items[i];
            set->items[i] = set->items[set->count - 1];
            set->count--;
            return 1;
        }
    }
    return 0;
}

/* Removes ptr; returns its size through *bytes. 0 if ptr is not recorded. */
static int record_remove(mf_record_set *set, const void *ptr, size_t *bytes)
{
    mf_record r;
    if (!record_take(set, ptr, &r)) return 0;
    *bytes = r.bytes;
    return 1;
}

/* The record whose range [ptr, ptr+bytes) contains p, or NULL. */
static const mf_record *record_containing(const mf_record_set *set, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < set->count; i++) {
        uintptr_t b = (uintptr_t)set->items[i].ptr;
        if (a >= b && a - b < set->items[i].bytes) return &set->items[i];
    }
    return NULL;
}

/* ---- backends ------------------------------------------------------------------ */
const char *mf_backend_name(mf_backend b)
{
    switch (b) {
    case MF_BACKEND_AUTO: return "auto";
    case MF_BACKEND_HOST: return "host";
    case MF_BACKEND_CUDA: return "cuda";
    }
    return "invalid";
}

#ifdef MF_HAVE_CUDA
static pthread_once_t mf_cuda_probe_once = PTHREAD_ONCE_INIT;
static int mf_cuda_probe_result;

/* CUDA cannot be used in a child forked after the parent initialised it, and
 * Check forks every test: so the parent never touches CUDA to ask whether a
 * device exists; a forked child asks and reports through its exit status. */
static void mf_cuda_probe(void)
{
    const char *off = getenv("MF_DISABLE_CUDA");
    if (off != NULL && off[0] != '\0' && strcmp(off, "0") != 0) {
        mf_cuda_probe_result = 0;
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        mf_cuda_probe_result = 0;
        return;
    }
    if (pid == 0) {
        int n = 0;
        const mf_backend_ops *ops = mf_cuda_backend_ops();
        if (ops->device_count(&n) != MF_OK) n = 0;
        _exit(n > 0 ? 0 : 1);
    }
    int wstatus = 0;
    pid_t r;
    do {
        r = waitpid(pid, &wstatus, 0);
    } while (r < 0 && errno == EINTR);
    mf_cuda_probe_result = (r == pid && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
}
#endif

int mf_backend_available(mf_backend b)
{
    switch (b) {
    case MF_BACKEND_AUTO:
    case MF_BACKEND_HOST: return 1;
    case MF_BACKEND_CUDA:
#ifdef MF_HAVE_CUDA
        pthread_once(&mf_cuda_probe_once, mf_cuda_probe);
        return mf_cuda_probe_result;
#else
        return 0;
#endif
    }
    return 0;
}

/* ---- contexts ------------------------------------------------------------------ */
void mf_context_options_init(mf_context_options *opts)
{
    if (opts == NULL) return;
    memset(opts, 0, sizeof *opts);
    opts->backend = MF_BACKEND_AUTO;
    opts->cublas_workspace_bytes = MF_CUBLAS_WORKSPACE_AUTO;
}

size_t mf_cublas_workspace_default(mf_backend backend, int cc_major)
{
    /* cuBLAS recommends 32 MiB on Hopper (its sm_90 kernels use more split-K
     * and stream-K workspace), 4 MiB before; host execution mode has none to
     * feed and keeps 4 MiB, so the host-mode baselines stay what they were. */
    return backend == MF_BACKEND_CUDA && cc_major == 9 ? MF_CUBLAS_WORKSPACE_SM90
                                                       : MF_DEFAULT_CUBLAS_WORKSPACE;
}

mf_status mf_context_create(mf_context **out, mf_backend backend)
{
    mf_context_options opts;
    mf_context_options_init(&opts);
    opts.backend = backend;
    return mf_context_create_ex(out, &opts);
}

static void context_release(mf_context *ctx)
{
    /* Best effort: errors while tearing down are recorded but not returned. */
    if (ctx->ops != NULL) {
        if (ctx->cublas != NULL) (void)ctx->ops->cublas_destroy(ctx->cublas);
        if (ctx->stream != NULL) (void)ctx->ops->stream_synchronize(ctx->stream);
        for (size_t i = 0; i < ctx->buffers.count; i++)
            (void)ctx->ops->device_free(ctx->buffers.items[i].ptr);
        mf_record_set *dev = &ctx->scratch[MF_MEM_DEVICE].live;
        for (size_t i = 0; i < dev->count; i++)
            (void)ctx->ops->device_free(dev->items[i].base ? dev->items[i].base : dev->items[i].ptr);
        for (size_t i = 0; i < ctx->cache.count; i++) (void)ctx->ops->device_free(ctx->cache.items[i].ptr);
        if (ctx->deferred_slots != NULL) (void)ctx->ops->host_free(ctx->deferred_slots);
        if (ctx->stream != NULL) (void)ctx->ops->stream_destroy(ctx->stream);
    }
    mf_record_set *host = &ctx->scratch[MF_MEM_HOST].live;
    for (size_t i = 0; i < host->count; i++) free(host->items[i].ptr);
    free(ctx->buffers.items);
    free(ctx->cache.items);
    free(ctx->scratch[MF_MEM_DEVICE].live.items);
    free(ctx->scratch[MF_MEM_HOST].live.items);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

mf_status mf_context_create_ex(mf_context **out, const mf_context_options *opts)
{
    MF_CHECK_NOT_NULL(out);
    *out = NULL;
    MF_CHECK_NOT_NULL(opts);
    mf_backend b = opts->backend;
    if (b != MF_BACKEND_AUTO && b != MF_BACKEND_HOST && b != MF_BACKEND_CUDA)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "backend %d is not auto (0), host (1) or cuda (2)", (int)b);
    if (b == MF_BACKEND_AUTO) b = mf_backend_available(MF_BACKEND_CUDA) ? MF_BACKEND_CUDA : MF_BACKEND_HOST;
    const mf_backend_ops *ops = NULL;
    if (b == MF_BACKEND_CUDA) {
#ifdef MF_HAVE_CUDA
        if (!mf_backend_available(MF_BACKEND_CUDA))
            MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE, "backend cuda: no CUDA device is present (use host or auto)");
        ops = mf_cuda_backend_ops();
#else
        MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE,
                "backend cuda: memfix was built without CUDA (MF_CUDA=OFF or no nvcc)");
#endif
    } else {
        ops = mf_host_backend_ops();
    }

    mf_context *ctx = (mf_context *)calloc(1, sizeof *ctx);
    if (ctx == NULL) MF_FAIL(MF_ERR_OUT_OF_MEMORY, "cannot allocate the context");
    if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
        free(ctx);
        MF_FAIL(MF_ERR_INTERNAL, "pthread_mutex_init failed");
    }
    ctx->backend = b;
    ctx->ops = ops;

    mf_status s = ops->stream_create(&ctx->stream);
    size_t ws = opts->cublas_workspace_bytes;
    if (s == MF_OK && ws == MF_CUBLAS_WORKSPACE_AUTO) {
        int major = 0;
#ifdef MF_HAVE_CUDA
        if (b == MF_BACKEND_CUDA) s = mf_cuda_device_cc_major(&major);
#endif
        ws = mf_cublas_workspace_default(b, major);
    }
    if (s == MF_OK && ws > 0) {
        /* Counted device scratch, then part of every measurement's baseline. */
        s = mf_scratch_alloc(ctx, MF_MEM_DEVICE, ws, &ctx->cublas_workspace);
        if (s == MF_OK) ctx->cublas_workspace_bytes = ws;
    }
    if (s == MF_OK) s = ops->host_alloc((void **)&ctx->deferred_slots, MF_DEFERRED_SLOTS * sizeof(int64_t));
    if (s == MF_OK)
        s = ops->cublas_create(&ctx->cublas, ctx->stream, ctx->cublas_workspace, ctx->cublas_workspace_bytes);
    if (s == MF_OK) s = mf_mem_begin(ctx, MF_MEM_DEVICE);
    if (s == MF_OK) s = mf_mem_begin(ctx, MF_MEM_HOST);
    if (s != MF_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", mf_last_error());
        context_release(ctx);
        MF_FAIL(s, "creating a %s context failed: %s", mf_backend_name(b), msg);
    }
    *out = ctx;
    return MF_OK;
}

void mf_context_destroy(mf_context *ctx)
{
    if (ctx == NULL) return;
    context_release(ctx);
}

mf_backend mf_context_backend(const mf_context *ctx)
{
    /* No status to return: a NULL context reports HOST after recording why. */
    if (ctx == NULL) {
        mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "ctx is NULL");
        return MF_BACKEND_HOST;
    }
    return ctx->backend;
}

/* ---- deferred checks -------------------------------------------------------------- */
/* After a stream synchronization: the first pending check that found a bad
 * row becomes this call's error, in its op's words; every pending check is
 * consumed. */
static mf_status deferred_flush(mf_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    mf_deferred bad;
    int64_t bad_row = -1;
    for (int i = 0; i < ctx->n_deferred && bad_row < 0; i++)
        if (ctx->deferred_slots[i] >= 0 && ctx->deferred_slots[i] < ctx->deferred[i].n_rows) {
            bad = ctx->deferred[i];
            bad_row = ctx->deferred_slots[i];
        }
    ctx->n_deferred = 0;
    pthread_mutex_unlock(&ctx->lock);
    if (bad_row < 0) return MF_OK;
    return bad.report(ctx, bad.func, bad_row, bad.info.bytes);
}

static mf_status sync_and_flush(mf_context *ctx)
{
    MF_TRY(ctx->ops->stream_synchronize(ctx->stream));
    return deferred_flush(ctx);
}

mf_status mf_context_defer_check(mf_context *ctx, const char *func, const int64_t *d_first_bad,
                                 int64_t n_rows, mf_deferred_report_fn *report, const void *info,
                                 size_t info_bytes)
{
    MF_CHECK_ALL_NOT_NULL(ctx, d_first_bad, report);
    if (info_bytes > MF_DEFERRED_INFO_BYTES || (info_bytes > 0 && info == NULL))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "bad deferred check info (%zu bytes at %p, at most %d)", info_bytes,
                info, (int)MF_DEFERRED_INFO_BYTES);
    mf_deferred d;
    memset(&d, 0, sizeof d);
    d.func = func;
    d.n_rows = n_rows;
    d.report = report;
    if (info_bytes > 0) memcpy(d.info.bytes, info, info_bytes);
    pthread_mutex_lock(&ctx->lock);
    int full = ctx->n_deferred == MF_DEFERRED_SLOTS;
    pthread_mutex_unlock(&ctx->lock);
    /* 16 checks pending without a synchronization in between: wait once */
    if (full) MF_TRY(sync_and_flush(ctx));
    pthread_mutex_lock(&ctx->lock);
    const int k = ctx->n_deferred++;
    ctx->deferred[k] = d;
    ctx->deferred_slots[k] = -1;
    pthread_mutex_unlock(&ctx->lock);
    return ctx->ops->download_async(ctx->stream, &ctx->deferred_slots[k], d_first_bad, sizeof(int64_t));
}

mf_status mf_context_read_device(mf_context *ctx, void *dst_host, const void *src_dev, size_t bytes)
{
    MF_CHECK_ALL_NOT_NULL(ctx, dst_host, src_dev);
    return ctx->ops->download(ctx->stream, dst_host, src_dev, bytes);
}

mf_status mf_context_synchronize(mf_context *ctx)
{
    MF_CHECK_NOT_NULL(ctx);
    return sync_and_flush(ctx);
}

mf_status mf_context_trim(mf_context *ctx)
{
    MF_CHECK_NOT_NULL(ctx);
    MF_TRY(sync_and_flush(ctx)); /* no kernel may still use a cached block */
    pthread_mutex_lock(&ctx->lock);
    mf_record_set cache = ctx->cache;
    memset(&ctx->cache, 0, sizeof ctx->cache);
    ctx->cached_bytes = 0;
    pthread_mutex_unlock(&ctx->lock);
    mf_status s = MF_OK;
    for (size_t i = 0; i < cache.count; i++) {
        mf_status f = ctx->ops->device_free(cache.items[i].ptr);
        if (s == MF_OK) s = f;
    }
    free(cache.items);
    return s;
}

size_t mf_context_cached_bytes(const mf_context *ctx)
{
    if (ctx == NULL) return 0;
    mf_context *c = (mf_context *)ctx;
    pthread_mutex_lock(&c->lock);
    size_t n = c->cached_bytes;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void *mf_context_stream(mf_context *ctx) { return ctx ? ctx->stream : NULL; }
void *mf_context_cublas(mf_context *ctx) { return ctx ? ctx->cublas : NULL; }

size_t mf_context_cublas_workspace_bytes(const mf_context *ctx)
{
    return ctx ? ctx->cublas_workspace_bytes : 0;
}

/* ---- caller buffers ------------------------------------------------------------ */
mf_status mf_buffer_alloc(mf_context *ctx, size_t bytes, void **out)
{
    MF_CHECK_NOT_NULL(out);
    *out = NULL;
    MF_CHECK_NOT_NULL(ctx);
    if (bytes == 0) MF_FAIL(MF_ERR_INVALID_SIZE, "bytes must be > 0");
    void *p = NULL;
    MF_TRY(ctx->ops->device_malloc(&p, bytes));
    pthread_mutex_lock(&ctx->lock);
    int ok = record_add(&ctx->buffers, p, bytes);
    if (ok) ctx->buffer_bytes += bytes;
    pthread_mutex_unlock(&ctx->lock);
    if (!ok) {
        (void)ctx->ops->device_free(p);
        MF_FAIL(MF_ERR_OUT_OF_MEMORY, "cannot record a buffer of %zu bytes", bytes);
    }
    *out = p;
    return MF_OK;
}

mf_status mf_buffer_free(mf_context *ctx, void *ptr)
{
    if (ptr == NULL) return MF_OK;
    MF_CHECK_NOT_NULL(ctx);
    size_t bytes = 0;
    pthread_mutex_lock(&ctx->lock);
    int found = record_remove(&ctx->buffers, ptr, &bytes);
    if (found) ctx->buffer_bytes -= bytes;
    pthread_mutex_unlock(&ctx->lock);
    if (!found)
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "%p was not allocated by mf_buffer_alloc on this context", ptr);
    return ctx->ops->device_free(ptr);
}

/* A device range that starts inside a known buffer must end inside it too. */
static mf_status check_range(const char *func, mf_context *ctx, const void *dev, size_t bytes,
                             const char *what)
{
    mf_status s = MF_OK;
    pthread_mutex_lock(&ctx->lock);
    const mf_record *r = record_containing(&ctx->buffers, dev);
    if (r == NULL) r = record_containing(&ctx->scratch[MF_MEM_DEVICE].live, dev);
    if (r != NULL) {
        size_t offset = (size_t)((uintptr_t)dev - (uintptr_t)r->ptr);
        if (bytes > r->bytes - offset) {
            s = mf_set_error(MF_ERR_OUT_OF_RANGE, func, __FILE__, __LINE__,
                             "%s: %zu bytes at offset %zu overrun its %zu-byte allocation", what, bytes,
                             offset, r->bytes);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return s;
}

/* Kernel arguments, before any launch (ops call it from their argument checks;
 * mf_internal.h). A pointer inside a live buffer or device scratch of ctx must
 * have 'bytes' left in it; any other pointer must be live device memory of
 * ctx's backend (a freed buffer or a host array would make the launch fail with
 * a sticky error that poisons the whole process), with 'bytes' left where the
 * runtime can tell (host execution mode). */
mf_status mf_check_device_extent(const char *func, mf_context *ctx, const void *ptr, size_t bytes,
                                 const char *name)
{
    if (ctx == NULL || ptr == NULL || bytes == 0) return MF_OK; /* the caller's own checks */
    pthread_mutex_lock(&ctx->lock);
    const mf_record *r = record_containing(&ctx->buffers, ptr);
    const char *kind = "mf_buffer_alloc buffer";
    if (r == NULL) {
        r = record_containing(&ctx->scratch[MF_MEM_DEVICE].live, ptr);
        kind = "device scratch allocation";
    }
    size_t size = r ? r->bytes : 0, offset = r ? (size_t)((uintptr_t)ptr - (uintptr_t)r->ptr) : 0;
    pthread_mutex_unlock(&ctx->lock);
    if (r == NULL) {
        int where = 1; /* 0 not device memory, 1 device memory, 2 page-locked host memory */
        size_t after = SIZE_MAX;
#ifdef MF_HAVE_CUDA
        if (ctx->backend == MF_BACKEND_CUDA) MF_TRY(mf_cuda_pointer_query(ptr, &where, &after));
#endif
#ifdef MF_HAVE_HOST_KERNELS
        if (ctx->backend == MF_BACKEND_HOST) MF_TRY(mf_host_pointer_query(ptr, &where, &after));
#endif
        if (where == 0)
            return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                                "%s (%p) is not device memory of this %s context: not a live buffer "
                                "or scratch of it, nor a live cudaMalloc allocation (freed? a host "
                                "array?); nothing was launched",
                                name, ptr, mf_backend_name(ctx->backend));
        if (after == SIZE_MAX) return MF_OK; /* the runtime cannot tell its size */
        kind = where == 2 ? "cudaMallocHost allocation" : "cudaMalloc allocation";
        size = after;
        offset = 0;
    }
    if (bytes > size - offset)
        return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__,
                            "%s is too small for this shape: it needs %zu bytes from %p, only %zu "
                            "are left in its %s; nothing was launched",
                            name, bytes, ptr, size - offset, kind);
    return MF_OK;
}

/* The checks of a copy between host and device, before it starts: ctx, dst and
 * src (named as in func's signature) non-NULL, bytes > 0, and the device side
 * (dev_is_dst: dst, else src) holding 'bytes' in ctx. */
static mf_status check_copy(const char *func, mf_context *ctx, const void *dst, const char *dst_name,
                            const void *src, const char *src_name, size_t bytes, int dev_is_dst)
{
    if (ctx == NULL) return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "ctx is NULL");
    if (dst == NULL)
        return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "%s is NULL", dst_name);
    if (src == NULL)
        return mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "%s is NULL", src_name);
    if (bytes == 0) return mf_set_error(MF_ERR_INVALID_SIZE, func, __FILE__, __LINE__, "bytes must be > 0");
    return dev_is_dst ? check_range(func, ctx, dst, bytes, dst_name)
                      : check_range(func, ctx, src, bytes, src_name);
}

mf_status mf_buffer_upload(mf_context *ctx, void *dst_dev, const void *src_host, size_t bytes)
{
    MF_TRY(check_copy(__func__, ctx, dst_dev, "dst_dev", src_host, "src_host", bytes, 1));
    return ctx->ops->upload(ctx->stream, dst_dev, src_host, bytes);
}

mf_status mf_buffer_download(mf_context *ctx, void *dst_host, const void *src_dev, size_t bytes)
{
    MF_TRY(check_copy(__func__, ctx, dst_host, "dst_host", src_dev, "src_dev", bytes, 0));
    MF_TRY(ctx->ops->download(ctx->stream, dst_host, src_dev, bytes)); /* synchronizes the stream */
    return deferred_flush(ctx);
}

mf_status mf_buffer_memset(mf_context *ctx, void *dst_dev, int byte, size_t bytes)
{
    MF_CHECK_NOT_NULL(ctx);
    MF_CHECK_NOT_NULL(dst_dev);
    if (bytes == 0) MF_FAIL(MF_ERR_INVALID_SIZE, "bytes must be > 0");
    if (byte < 0 || byte > 255) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "byte must be in [0, 255] (got %d)", byte);
    MF_TRY(check_range(__func__, ctx, dst_dev, bytes, "dst_dev"));
    return ctx->ops->memset(ctx->stream, dst_dev, byte, bytes);
}

/* ---- tracked scratch ------------------------------------------------------------ */
static int valid_space(mf_mem_space space) { return space == MF_MEM_DEVICE || space == MF_MEM_HOST; }

mf_status mf_mem_begin(mf_context *ctx, mf_mem_space space)
{
    MF_CHECK_NOT_NULL(ctx);
    if (!valid_space(space))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "space %d is not device (0) or host (1)", (int)space);
    pthread_mutex_lock(&ctx->lock);
    mf_tracker *t = &ctx->scratch[space];
    t->baseline = t->current;
    t->peak = t->current;
    t->allocations = 0;
    pthread_mutex_unlock(&ctx->lock);
    return MF_OK;
}

mf_status mf_mem_stats_get(const mf_context *ctx, mf_mem_space space, mf_mem_stats *out)
{
    MF_CHECK_NOT_NULL(ctx);
    MF_CHECK_NOT_NULL(out);
    if (!valid_space(space))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "space %d is not device (0) or host (1)", (int)space);
    mf_context *c = (mf_context *)ctx; /* the lock is mutable state */
    pthread_mutex_lock(&c->lock);
    const mf_tracker *t = &c->scratch[space];
    out->current = t->current;
    out->peak = t->peak;
    out->baseline = t->baseline;
    out->allocations = t->allocations;
    pthread_mutex_unlock(&c->lock);
    return MF_OK;
}

size_t mf_mem_peak_delta(const mf_context *ctx, mf_mem_space space)
{
    mf_mem_stats st;
    if (mf_mem_stats_get(ctx, space, &st) != MF_OK) return 0;
    return st.peak >= st.baseline ? st.peak - st.baseline : 0;
}

/* The guard zones' canary bytes (memfix verify's scratch guard). */
static unsigned char guard_byte(size_t i) { return (unsigned char)(0xa5u ^ (i * 97u + (i >> 7) * 13u)); }

/* Device scratch under the guard: [MF_SCRATCH_GUARD canary][bytes][MF_SCRATCH_GUARD canary],
 * a fresh allocation (never the cache), the canaries uploaded (synchronously). */
static mf_status guarded_scratch_alloc(mf_context *ctx, size_t bytes, void **base_out)
{
    const size_t G = MF_SCRATCH_GUARD;
    if (bytes > SIZE_MAX - 2 * G) MF_FAIL(MF_ERR_OVERFLOW, "guarded scratch of %zu bytes", bytes);
    void *base = NULL;
    MF_TRY(ctx->ops->device_malloc(&base, bytes + 2 * G));
    unsigned char canary[MF_SCRATCH_GUARD];
    for (size_t i = 0; i < G; i++) canary[i] = guard_byte(i);
    mf_status s = ctx->ops->upload(ctx->stream, base, canary, G);
    for (size_t i = 0; i < G; i++) canary[i] = guard_byte(i + G);
    if (s == MF_OK) s = ctx->ops->upload(ctx->stream, (unsigned char *)base + G + bytes, canary, G);
    if (s != MF_OK) {
        (void)ctx->ops->device_free(base);
        return s;
    }
    *base_out = base;
    return MF_OK;
}

/* Checks the canaries of a guarded block; the first violation of the context is kept. */
static void guarded_scratch_check(mf_context *ctx, const mf_record *r)
{
    const size_t G = MF_SCRATCH_GUARD;
    unsigned char got[2][MF_SCRATCH_GUARD];
    if (ctx->ops->download(ctx->stream, got[0], r->base, G) != MF_OK ||
        ctx->ops->download(ctx->stream, got[1], (unsigned char *)r->ptr + r->bytes, G) != MF_OK)
        return;
    long long before = 0;
    size_t after = SIZE_MAX;
    for (size_t i = 0; i < G; i++)
        if (got[0][i] != guard_byte(i)) before = (long long)i - (long long)G; /* the nearest changed byte */
    for (size_t i = G; i-- > 0;)
        if (got[1][i] != guard_byte(i + G)) after = i;
    if (before == 0 && after == SIZE_MAX) return;
    pthread_mutex_lock(&ctx->lock);
    if (ctx->guard_violation[0] == '\0') {
        if (after != SIZE_MAX)
            snprintf(
                ctx->guard_violation, sizeof ctx->guard_violation,
                "wrote past the end of a %zu-byte device scratch allocation (mf_scratch_alloc): byte %zu "
                "after its end changed",
                r->bytes, after);
        else
            snprintf(
                ctx->guard_violation, sizeof ctx->guard_violation,
                "wrote before the start of a %zu-byte device scratch allocation (mf_scratch_alloc): byte "
                "%lld relative to its start changed",
                r->bytes, before);
    }
    pthread_mutex_unlock(&ctx->lock);
}

void mf_context_set_scratch_guard(mf_context *ctx, int on)
{
    if (ctx == NULL) return;
    pthread_mutex_lock(&ctx->lock);
    ctx->scratch_guard = on != 0;
    ctx->guard_violation[0] = '\0';
    pthread_mutex_unlock(&ctx->lock);
}

const char *mf_context_scratch_guard_check(mf_context *ctx)
{
    if (ctx == NULL) return NULL;
    pthread_mutex_lock(&ctx->lock);
    mf_record_set live = ctx->scratch[MF_MEM_DEVICE].live;
    mf_record *copy = live.count ? (mf_record *)malloc(live.count * sizeof *copy) : NULL;
    size_t n = copy ? live.count : 0;
    if (n) memcpy(copy, live.items, n * sizeof *copy);
    pthread_mutex_unlock(&ctx->lock);
    for (size_t i = 0; i < n; i++)
        if (copy[i].base != NULL) guarded_scratch_check(ctx, &copy[i]);
    free(copy);
    return ctx->guard_violation[0] ? ctx->guard_violation : NULL;
}

/* The cache's smallest block holding 'bytes' (taken out of the cache), or NULL. Lock held. */
static void *cache_take(mf_context *ctx, size_t bytes, size_t *block)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < ctx->cache.count; i++) {
        size_t b = ctx->cache.items[i].bytes;
        if (b >= bytes && (best == SIZE_MAX || b < ctx->cache.items[best].bytes)) best = i;
    }
    if (best == SIZE_MAX) return NULL;
    void *p = ctx->cache.items[best].ptr;
    *block = ctx->cache.items[best].bytes;
    ctx->cache.items[best] = ctx->cache.items[--ctx->cache.count];
    ctx->cached_bytes -= *block;
    return p;
}

mf_status mf_scratch_alloc(mf_context *ctx, mf_mem_space space, size_t bytes, void **out)
{
    MF_CHECK_NOT_NULL(out);
    *out = NULL;
    MF_CHECK_NOT_NULL(ctx);
    if (!valid_space(space))
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "space %d is not device (0) or host (1)", (int)space);
    if (bytes == 0) return MF_OK;
    void *p = NULL, *base = NULL;
    size_t block = bytes;
    if (space == MF_MEM_DEVICE) {
        pthread_mutex_lock(&ctx->lock);
        const int guard = ctx->scratch_guard;
        if (!guard) p = cache_take(ctx, bytes, &block);
        pthread_mutex_unlock(&ctx->lock);
        if (guard) {
            MF_TRY(guarded_scratch_alloc(ctx, bytes, &base));
            p = (unsigned char *)base + MF_SCRATCH_GUARD;
        } else if (p == NULL) {
            /* a new block, rounded to 256 bytes so that nearby sizes share it later */
            block = bytes <= SIZE_MAX - 255 ? (bytes + 255) & ~(size_t)255 : bytes;
            MF_TRY(ctx->ops->device_malloc(&p, block));
        }
    } else {
        /* 64-byte aligned, like cudaMalloc's (stronger) guarantee is for device. */
        if (posix_memalign(&p, 64, bytes) != 0 || p == NULL)
            MF_FAIL(MF_ERR_OUT_OF_MEMORY, "host scratch of %zu bytes: allocation failed", bytes);
    }
    pthread_mutex_lock(&ctx->lock);
    mf_tracker *t = &ctx->scratch[space];
    int ok = record_add(&t->live, p, bytes);
    if (ok) {
        t->live.items[t->live.count - 1].block = block;
        t->live.items[t->live.count - 1].base = base;
        t->current += bytes;
        if (t->current > t->peak) t->peak = t->current;
        t->allocations++;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!ok) {
        if (space == MF_MEM_DEVICE)
            (void)ctx->ops->device_free(base ? base : p);
        else
            free(p);
        MF_FAIL(MF_ERR_OUT_OF_MEMORY, "cannot record a scratch allocation of %zu bytes", bytes);
    }
    *out = p;
    return MF_OK;
}

void mf_scratch_free(mf_context *ctx, mf_mem_space space, void *ptr)
{
    if (ptr == NULL) return;
    if (ctx == NULL) {
        mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "ctx is NULL (scratch %p leaked)",
                     ptr);
        return;
    }
    if (!valid_space(space)) {
        mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                     "space %d is not device (0) or host (1)", (int)space);
        return;
    }
    mf_record r;
    pthread_mutex_lock(&ctx->lock);
    mf_tracker *t = &ctx->scratch[space];
    int found = record_take(&t->live, ptr, &r);
    if (found) t->current -= r.bytes;
    int cached = 0;
    if (found && space == MF_MEM_DEVICE && r.base == NULL) {
        /* back to the cache: reused in the stream's order, released by mf_context_trim */
        cached = record_add(&ctx->cache, ptr, r.block);
        if (cached) ctx->cached_bytes += r.block;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!found) {
        mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                     "%p is not live %s scratch of this context", ptr,
                     space == MF_MEM_DEVICE ? "device" : "host");
        return;
    }
    if (cached) return;
    if (space == MF_MEM_DEVICE) {
        if (r.base != NULL) guarded_scratch_check(ctx, &r);
        (void)ctx->ops->device_free(r.base ? r.base : ptr);
    } else {
        free(ptr);
    }
}

void mf_context_raise_scratch_peak(mf_context *ctx, mf_mem_space space, size_t peak)
{
    if (ctx == NULL || !valid_space(space)) return;
    pthread_mutex_lock(&ctx->lock);
    if (peak > ctx->scratch[space].peak) ctx->scratch[space].peak = peak;
    pthread_mutex_unlock(&ctx->lock);
}
