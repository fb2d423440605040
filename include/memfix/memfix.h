/* memfix public C API: status codes, errors, dtypes, contexts, tracked memory.
 *
 * Every public function validates its arguments and returns an mf_status; on
 * failure a thread-local message (the failing call, the reason, file:line) is
 * available from mf_last_error(). Nothing in the library aborts or exits.
 *
 * Memory model
 * ------------
 * A context owns a backend (host execution mode or CUDA), a stream and a
 * cuBLAS handle. It tracks two kinds of memory:
 *   - buffers: the caller's inputs and outputs (mf_buffer_alloc); counted
 *     separately, never as scratch;
 *   - scratch: every byte an implementation needs beyond its inputs and
 *     outputs. Optimized code allocates device scratch through the context's
 *     device scratch allocator; reference code allocates host scratch through
 *     the context's host scratch allocator. Both track current and peak bytes,
 *     so "this call needed at most X bytes of scratch" is measured the same way.
 * The cuBLAS workspace is allocated from device scratch when the context is
 * created (mf_context_options.cublas_workspace_bytes), so it is counted; it
 * is part of the baseline that mf_mem_begin() records, not of any op. By
 * default it is cuBLAS's recommendation for the device: 32 MiB on sm_90
 * (Hopper), 4 MiB on other GPUs and in host execution mode.
 *
 * No synchronization inside an op call
 * ------------------------------------
 * Device scratch is a caching arena owned by the context: a block freed by an
 * op returns to the context's cache (no cudaFree, which would synchronize the
 * device) and is reused, in the order of the context's stream, by the next
 * request it holds. After a first (warm-up) call, an op call with the same
 * shapes does no cudaMalloc, no cudaFree and no device or stream
 * synchronization: it only enqueues work on the context's stream. The trackers
 * count the bytes requested, so peaks and ceilings do not include the cache;
 * mf_context_trim() gives the cached blocks back (mf_context_destroy does).
 * Scratch used on a stream other than the context's must be ordered after the
 * context's stream by its user (or mf_context_synchronize called first).
 * Data-dependent errors that only the device can see (a cross-entropy label
 * outside [0, V), a RoPE position id outside [0, MF_ROPE_MAX_POSITION]) are reported by the next synchronizing call of the context
 * (mf_context_synchronize, mf_buffer_download, mf_context_trim), as the CUDA
 * runtime reports an asynchronous kernel error; the outputs of the call that
 * met them are unspecified.
 */
#ifndef MEMFIX_MEMFIX_H
#define MEMFIX_MEMFIX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MF_API __attribute__((visibility("default")))
#else
#define MF_API
#endif

/* ---- status and errors -------------------------------------------------- */
typedef enum mf_status {
    MF_OK = 0,
    MF_ERR_NULL_POINTER = 1,        /* a required pointer argument is NULL */
    MF_ERR_INVALID_SIZE = 2,        /* a size is zero or negative, or shapes disagree */
    MF_ERR_OVERFLOW = 3,            /* a size product overflows size_t */
    MF_ERR_INVALID_ARGUMENT = 4,    /* an enum/option value is out of range */
    MF_ERR_DTYPE = 5,               /* unsupported dtype or dtype mismatch */
    MF_ERR_OUT_OF_RANGE = 6,        /* data out of range (e.g. a label outside [0, V)) */
    MF_ERR_BUDGET = 7,              /* a caller-given scratch budget is too small */
    MF_ERR_OUT_OF_MEMORY = 8,       /* an allocation failed */
    MF_ERR_BACKEND_UNAVAILABLE = 9, /* backend not built, or no device present */
    MF_ERR_BACKEND = 10,            /* a CUDA runtime / cuBLAS / launch error */
    MF_ERR_MISMATCH = 11,           /* a comparison against the reference failed */
    MF_ERR_INTERNAL = 12
} mf_status;

MF_API const char *mf_status_name(mf_status s); /* "MF_ERR_NULL_POINTER" */
/* The last error message of this thread, e.g.
 * "mf_matmul: A is NULL [optimized/matmul.cu:123]"; "" when none. */
MF_API const char *mf_last_error(void);
MF_API void mf_clear_error(void);

/* ---- dtypes --------------------------------------------------------------- */
typedef enum mf_dtype {
    MF_DTYPE_F32 = 0,
    MF_DTYPE_BF16 = 1 /* storage only; all accumulation is fp32 (or double in references) */
} mf_dtype;

MF_API const char *mf_dtype_name(mf_dtype d); /* "f32", "bf16"; NULL if invalid */
MF_API size_t mf_dtype_size(mf_dtype d);      /* 4, 2; 0 if invalid */
/* bf16 <-> f32 on the host; round-to-nearest-even, NaN preserved. */
MF_API uint16_t mf_f32_to_bf16(float x);
MF_API float mf_bf16_to_f32(uint16_t x);

/* ---- backends and contexts ------------------------------------------------ */
typedef enum mf_backend {
    MF_BACKEND_AUTO = 0, /* CUDA when built and a device is present, else host */
    MF_BACKEND_HOST = 1, /* host execution mode: the .cu sources run on the CPU */
    MF_BACKEND_CUDA = 2
} mf_backend;

MF_API const char *mf_backend_name(mf_backend b); /* "auto", "host", "cuda" */
/* 1 if the backend can be used in this process now (for CUDA: built in and a
 * device present, probed in a forked child so CUDA is not initialised here). */
MF_API int mf_backend_available(mf_backend b);

/* The GPU CTest's resource allocation gave this process. Under `ctest
 * --resource-spec-file FILE` a test whose RESOURCE_GROUPS asks for "gpus:1"
 * (every cuda-labelled test; ci/gpu.sh on a runner with several GPUs) finds it
 * in its environment: CTEST_RESOURCE_GROUP_COUNT groups, group i's type in
 * CTEST_RESOURCE_GROUP_<i> ("gpus") and its allocation in
 * CTEST_RESOURCE_GROUP_<i>_GPUS ("id:3,slots:1"). mf_use_ctest_gpu sets
 * CUDA_VISIBLE_DEVICES to that id, so the process and those it starts see that
 * GPU alone; call it before the first CUDA call (the test harness and the
 * memfix command do, first thing). Returns 1 when it set it, 0 when CTest gave
 * no GPU (no "gpus" group), -1 when the allocation cannot be read or set
 * (mf_last_error says why; CUDA_VISIBLE_DEVICES is left as it was). */
MF_API int mf_use_ctest_gpu(void);

typedef struct mf_context mf_context;

typedef struct mf_context_options {
    mf_backend backend; /* default MF_BACKEND_AUTO */
    /* default MF_CUBLAS_WORKSPACE_AUTO: MF_CUBLAS_WORKSPACE_SM90 (32 MiB) on an
     * sm_90 device, MF_DEFAULT_CUBLAS_WORKSPACE (4 MiB) on other devices and in
     * host execution mode; any other value is taken as is (0: no workspace) */
    size_t cublas_workspace_bytes;
} mf_context_options;

#define MF_DEFAULT_CUBLAS_WORKSPACE ((size_t)4 << 20)
#define MF_CUBLAS_WORKSPACE_SM90 ((size_t)32 << 20)
#define MF_CUBLAS_WORKSPACE_AUTO ((size_t)-1)

MF_API void mf_context_options_init(mf_context_options *opts);
MF_API mf_status mf_context_create(mf_context **out, mf_backend backend);
MF_API mf_status mf_context_create_ex(mf_context **out, const mf_context_options *opts);
MF_API void mf_context_destroy(mf_context *ctx); /* NULL is a no-op */
/* The resolved backend (never AUTO). */
MF_API mf_backend mf_context_backend(const mf_context *ctx);
/* Waits for the context's stream; reports a deferred device-side error (see
 * "No synchronization inside an op call"). */
MF_API mf_status mf_context_synchronize(mf_context *ctx);
/* Synchronizes, then frees the context's cached scratch blocks (the next op
 * call allocates again). */
MF_API mf_status mf_context_trim(mf_context *ctx);
/* Bytes of device scratch held in the context's cache (not counted as scratch). */
MF_API size_t mf_context_cached_bytes(const mf_context *ctx);

/* ---- caller buffers (device memory of the context's backend) -------------- */
MF_API mf_status mf_buffer_alloc(mf_context *ctx, size_t bytes, void **out);
MF_API mf_status mf_buffer_free(mf_context *ctx, void *ptr); /* NULL is a no-op */
MF_API mf_status mf_buffer_upload(mf_context *ctx, void *dst_dev, const void *src_host, size_t bytes);
MF_API mf_status mf_buffer_download(mf_context *ctx, void *dst_host, const void *src_dev, size_t bytes);
MF_API mf_status mf_buffer_memset(mf_context *ctx, void *dst_dev, int byte, size_t bytes);

/* ---- tracked scratch memory ----------------------------------------------- */
typedef enum mf_mem_space {
    MF_MEM_DEVICE = 0, /* device scratch (optimized implementations) */
    MF_MEM_HOST = 1    /* host scratch (references) */
} mf_mem_space;

typedef struct mf_mem_stats {
    size_t current;     /* bytes live now */
    size_t peak;        /* highest 'current' since the last mf_mem_begin */
    size_t baseline;    /* 'current' at the last mf_mem_begin */
    size_t allocations; /* number of allocations since the last mf_mem_begin */
} mf_mem_stats;

/* Start a measurement: baseline = peak = current, allocations = 0. */
MF_API mf_status mf_mem_begin(mf_context *ctx, mf_mem_space space);
MF_API mf_status mf_mem_stats_get(const mf_context *ctx, mf_mem_space space, mf_mem_stats *out);
/* peak - baseline: the scratch the calls since mf_mem_begin needed at most. */
MF_API size_t mf_mem_peak_delta(const mf_context *ctx, mf_mem_space space);

/* Scratch allocation, for implementations (references use MF_MEM_HOST,
 * optimized code MF_MEM_DEVICE). Zero bytes returns MF_OK and NULL. */
MF_API mf_status mf_scratch_alloc(mf_context *ctx, mf_mem_space space, size_t bytes, void **out);
MF_API void mf_scratch_free(mf_context *ctx, mf_mem_space space, void *ptr);

/* ---- size arithmetic helpers (also used by the ceiling formulas) ---------- */
/* *out = a * b; returns 0 on overflow (and *out = SIZE_MAX), 1 otherwise. */
MF_API int mf_size_mul(size_t a, size_t b, size_t *out);
MF_API int mf_size_add(size_t a, size_t b, size_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MEMFIX_MEMFIX_H */
