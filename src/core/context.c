/* Contexts, caller buffers and the two tracked scratch allocators.
 *
 * A context owns a backend operations table (host execution mode or CUDA), a
 * stream, a cuBLAS handle and its workspace. Every pointer handed out by
 * mf_buffer_alloc and mf_scratch_alloc is recorded with its size in a small
 * table, so frees are validated, stats are exact and a destroyed context
 * releases whatever its user forgot. */
#define _POSIX_C_SOURCE 200809L
#include "mf_internal.h"
#include "mf_backend.h"

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
} mf_record;

typedef struct mf_record_set {
    mf_record *items;
    size_t count, cap;
} mf_record_set;

typedef struct mf_tracker {
    mf_record_set live;
    size_t current, peak, baseline, allocations;
} mf_tracker;

struct mf_context {
    mf_backend backend; /* resolved: HOST or CUDA */
    const mf_backend_ops *ops;
    void *stream;
    void *cublas;
    void *cublas_workspace;
    size_t cublas_workspace_bytes;
    pthread_mutex_t lock; /* guards the trackers and the buffer set */
    mf_tracker scratch[2]; /* indexed by mf_mem_space */
    mf_record_set buffers;
    size_t buffer_bytes;
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
    set->count++;
    return 1;
}

/* Removes ptr; returns its size through *bytes. 0 if ptr is not recorded. */
static int record_remove(mf_record_set *set, const void *ptr, size_t *bytes)
{
    for (size_t i = set->count; i-- > 0;) {
        if (set->items[i].ptr == ptr) {
            *bytes = set->items[i].bytes;
            set->items[i] = set->items[set->count - 1];
            set->count--;
            return 1;
        }
    }
    return 0;
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
    opts->cublas_workspace_bytes = MF_DEFAULT_CUBLAS_WORKSPACE;
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
        for (size_t i = 0; i < dev->count; i++) (void)ctx->ops->device_free(dev->items[i].ptr);
        if (ctx->stream != NULL) (void)ctx->ops->stream_destroy(ctx->stream);
    }
    mf_record_set *host = &ctx->scratch[MF_MEM_HOST].live;
    for (size_t i = 0; i < host->count; i++) free(host->items[i].ptr);
    free(ctx->buffers.items);
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
            MF_FAIL(MF_ERR_BACKEND_UNAVAILABLE,
                    "backend cuda: no CUDA device is present (use host or auto)");
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
    if (s == MF_OK && opts->cublas_workspace_bytes > 0) {
        /* Counted device scratch, then part of every measurement's baseline. */
        s = mf_scratch_alloc(ctx, MF_MEM_DEVICE, opts->cublas_workspace_bytes, &ctx->cublas_workspace);
        if (s == MF_OK) ctx->cublas_workspace_bytes = opts->cublas_workspace_bytes;
    }
    if (s == MF_OK)
        s = ops->cublas_create(&ctx->cublas, ctx->stream, ctx->cublas_workspace,
                               ctx->cublas_workspace_bytes);
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

mf_status mf_context_synchronize(mf_context *ctx)
{
    MF_CHECK_NOT_NULL(ctx);
    return ctx->ops->stream_synchronize(ctx->stream);
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
                             "%s: %zu bytes at offset %zu overrun its %zu-byte allocation", what,
                             bytes, offset, r->bytes);
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
static mf_status check_copy(const char *func, mf_context *ctx, const void *dst,
                            const char *dst_name, const void *src, const char *src_name,
                            size_t bytes, int dev_is_dst)
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
    return ctx->ops->download(ctx->stream, dst_host, src_dev, bytes);
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
static int valid_space(mf_mem_space space)
{
    return space == MF_MEM_DEVICE || space == MF_MEM_HOST;
}

mf_status mf_mem_begin(mf_context *ctx, mf_mem_space space)
{
    MF_CHECK_NOT_NULL(ctx);
    if (!valid_space(space)) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "space %d is not device (0) or host (1)", (int)space);
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
    if (!valid_space(space)) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "space %d is not device (0) or host (1)", (int)space);
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

mf_status mf_scratch_alloc(mf_context *ctx, mf_mem_space space, size_t bytes, void **out)
{
    MF_CHECK_NOT_NULL(out);
    *out = NULL;
    MF_CHECK_NOT_NULL(ctx);
    if (!valid_space(space)) MF_FAIL(MF_ERR_INVALID_ARGUMENT, "space %d is not device (0) or host (1)", (int)space);
    if (bytes == 0) return MF_OK;
    void *p = NULL;
    if (space == MF_MEM_DEVICE) {
        MF_TRY(ctx->ops->device_malloc(&p, bytes));
    } else {
        /* 64-byte aligned, like cudaMalloc's (stronger) guarantee is for device. */
        if (posix_memalign(&p, 64, bytes) != 0 || p == NULL)
            MF_FAIL(MF_ERR_OUT_OF_MEMORY, "host scratch of %zu bytes: allocation failed", bytes);
    }
    pthread_mutex_lock(&ctx->lock);
    mf_tracker *t = &ctx->scratch[space];
    int ok = record_add(&t->live, p, bytes);
    if (ok) {
        t->current += bytes;
        if (t->current > t->peak) t->peak = t->current;
        t->allocations++;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!ok) {
        if (space == MF_MEM_DEVICE)
            (void)ctx->ops->device_free(p);
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
        mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "ctx is NULL (scratch %p leaked)", ptr);
        return;
    }
    if (!valid_space(space)) {
        mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                     "space %d is not device (0) or host (1)", (int)space);
        return;
    }
    size_t bytes = 0;
    pthread_mutex_lock(&ctx->lock);
    mf_tracker *t = &ctx->scratch[space];
    int found = record_remove(&t->live, ptr, &bytes);
    if (found) t->current -= bytes;
    pthread_mutex_unlock(&ctx->lock);
    if (!found) {
        mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                     "%p is not live %s scratch of this context", ptr,
                     space == MF_MEM_DEVICE ? "device" : "host");
        return;
    }
    if (space == MF_MEM_DEVICE)
        (void)ctx->ops->device_free(ptr);
    else
        free(ptr);
}
