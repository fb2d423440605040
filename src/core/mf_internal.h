/* Internal helpers shared by the core, the references and the optimized code.
 * Not installed; not part of the public API. C11 and C++ compatible. */
#ifndef MEMFIX_INTERNAL_H
#define MEMFIX_INTERNAL_H

#include "memfix/memfix.h"
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Record a thread-local error message "<func>: <formatted reason> [file:line]"
 * and return 'status' (so callers can 'return mf_set_error(...)'). */
mf_status mf_set_error(mf_status status, const char *func, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* MF_FAIL(status, "fmt", ...) inside a function: set the error, return status. */
#define MF_FAIL(status, ...) return mf_set_error((status), __func__, __FILE__, __LINE__, __VA_ARGS__)

/* Argument validation. Each returns from the enclosing function on failure. */
#define MF_CHECK_NOT_NULL(p)                                                                                 \
    do {                                                                                                     \
        if ((p) == NULL) MF_FAIL(MF_ERR_NULL_POINTER, "%s is NULL", #p);                                     \
    } while (0)
#define MF_CHECK_POSITIVE(n)                                                                                 \
    do {                                                                                                     \
        if ((n) <= 0) MF_FAIL(MF_ERR_INVALID_SIZE, "%s must be > 0 (got %lld)", #n, (long long)(n));         \
    } while (0)
/* MF_CHECK_NOT_NULL of every argument in order, for an entry point's list of
 * data pointers: the first NULL one fails with "<name> is NULL", the name as
 * written in the list (plain identifiers). */
#define MF_CHECK_ALL_NOT_NULL(...)                                                                           \
    do {                                                                                                     \
        const void *const mf_ptrs_[] = { __VA_ARGS__ };                                                      \
        MF_TRY(mf_check_all_not_null(__func__, __FILE__, __LINE__, #__VA_ARGS__,                             \
                                     sizeof mf_ptrs_ / sizeof mf_ptrs_[0], mf_ptrs_));                       \
    } while (0)
mf_status mf_check_all_not_null(const char *func, const char *file, int line, const char *names, size_t n,
                                const void *const *ptrs);
/* Propagate a failing status (the callee already set the message). */
#define MF_TRY(expr)                                                                                         \
    do {                                                                                                     \
        mf_status mf_try_s_ = (expr);                                                                        \
        if (mf_try_s_ != MF_OK) return mf_try_s_;                                                            \
    } while (0)

/* Shared argument checks (src/core/validate.c). Each returns MF_OK, or sets the
 * thread-local error "<func>: <reason>" and returns the status named below, so
 * every op (public entry point and reference alike) words them the same way. */
/* dtype is MF_DTYPE_F32 or MF_DTYPE_BF16; else MF_ERR_DTYPE
 * "dtype %d is not MF_DTYPE_F32 or MF_DTYPE_BF16". */
mf_status mf_check_dtype_f32_bf16(const char *func, mf_dtype dtype);
/* flag is 0 or 1; else MF_ERR_INVALID_ARGUMENT "<name> must be 0 or 1 (got %d)". */
mf_status mf_check_bool(const char *func, const char *name, int flag);
/* dims[i] > 0 for i < n; else, for the first that is not, MF_ERR_INVALID_SIZE
 * "<prefix><names[i]> must be > 0 (got %lld)" (prefix may be NULL: ""). */
mf_status mf_check_dims_positive(const char *func, const char *prefix, int n, const int64_t *dims,
                                 const char *const *names);
/* Operands shaped as queries, keys and values (q, k: B x H x N x D; v:
 * B x H x N x Dv), with a causal flag: mf_check_dtype_f32_bf16,
 * mf_check_bool("causal") and every dim of B, H, N, D, Dv > 0, in that order. */
mf_status mf_check_bhnd_args(const char *func, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                             int64_t D, int64_t Dv);
/* Their byte sizes fit size_t: q/k and v in the dtype, then B*H*N*D and
 * B*H*N*Dv fp32 values (MF_ERR_OVERFLOW naming the product; 'f32_qk' names the
 * fp32 B*H*N*D product, e.g. "dq/dk bytes (B*H*N*D*4)"). */
mf_status mf_check_bhnd_bytes(const char *func, mf_dtype dtype, int64_t B, int64_t H, int64_t N, int64_t D,
                              int64_t Dv, const char *f32_qk);

/* Before any launch: 'ptr' (a kernel argument named 'name') can hold 'bytes'.
 * NULL ptr or 0 bytes: MF_OK (the caller checks those). Inside a live buffer
 * or device scratch of ctx: MF_ERR_INVALID_SIZE when fewer than 'bytes' are
 * left in it. Otherwise the backend is asked: MF_ERR_INVALID_ARGUMENT when ptr
 * is not live device memory (a freed buffer, a host array: launching would
 * leave a sticky error), MF_ERR_INVALID_SIZE when the runtime knows its
 * allocation and it is too short (host execution mode). src/core/context.c. */
mf_status mf_check_device_extent(const char *func, mf_context *ctx, const void *ptr, size_t bytes,
                                 const char *name);

/* Product of n int64 dims as size_t, with overflow detection. Returns MF_OK
 * or MF_ERR_OVERFLOW / MF_ERR_INVALID_SIZE (with a message naming 'what'). */
/* Each variadic dim must be an int64_t: cast literals, e.g. (int64_t)4. */
mf_status mf_dims_product(const char *func, const char *what, size_t *out, int n, ...);

/* Context internals for implementations (C and .cu): the backend stream and
 * cuBLAS handle as void* (also declared, with their CUDA meaning, in
 * mf_cuda.h) and the size of the counted cuBLAS workspace. NULL/0 for a NULL
 * context. */
void *mf_context_stream(mf_context *ctx);
void *mf_context_cublas(mf_context *ctx);
size_t mf_context_cublas_workspace_bytes(const mf_context *ctx);

/* The default cuBLAS workspace of a context of 'backend' on a device of
 * compute capability 'cc_major' (mf_context_options.cublas_workspace_bytes =
 * MF_CUBLAS_WORKSPACE_AUTO): 32 MiB for CUDA on sm_90, else 4 MiB. */
size_t mf_cublas_workspace_default(mf_backend backend, int cc_major);

/* memfix verify's scratch guard (src/core/context.c): while on, every
 * device mf_scratch_alloc is a fresh allocation with 256-byte canary zones
 * right before and right after the bytes asked for, checked when it is freed;
 * turning it on or off clears the recorded violation.
 * mf_context_scratch_guard_check checks the guarded blocks still live and
 * returns the first violation seen since the guard was turned on (a message),
 * or NULL. */
void mf_context_set_scratch_guard(mf_context *ctx, int on);
const char *mf_context_scratch_guard_check(mf_context *ctx);
/* memfix verify: the tracker's peak becomes max(peak, 'peak') (memory the
 * candidate took behind the allocator, counted against the ceiling). */
void mf_context_raise_scratch_peak(mf_context *ctx, mf_mem_space space, size_t peak);

/* Declares a small function usable from C and from CUDA code (host and
 * device, always inlined there): static MF_HD_INLINE T f(...). */
#if defined(__CUDACC__)
#define MF_HD_INLINE __host__ __device__ __forceinline__
#else
#define MF_HD_INLINE inline
#endif

/* bf16 bits of a double: rounded to float (nearest even), then to bf16 (nearest
 * even, NaN kept quiet), as PyTorch's .to(torch.bfloat16) of a float64 tensor
 * (through float) and mf_f32_to_bf16 do. The double rounding is part of the
 * spec wherever it is used (a reference and a kernel that both call this store
 * bit-identical bf16 values). */
static MF_HD_INLINE uint16_t mf_bf16_from_f64(double x)
{
    const float f = (float)x;
#if defined(__CUDA_ARCH__)
    uint32_t u = __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
#endif
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
/* The value of bf16 bits as a double (exact). */
static MF_HD_INLINE double mf_bf16_bits_to_f64(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
#if defined(__CUDA_ARCH__)
    return (double)__uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
#endif
}

/* Test hook for the registry (src/core/registry.c): when ops != NULL, the
 * registry lists exactly these n ops instead of the built-in list; NULL
 * restores the built-in list. Not thread-safe; tests and tools only. */
struct mf_op_desc;
void mf_registry_override(const struct mf_op_desc *const *ops, size_t n);
/* The ops built into the library (mf_builtin_ops), whatever the override:
 * the tolerance table (src/core/tolerance.c) collects their rows. */
const struct mf_op_desc *const *mf_registry_builtin(size_t *count);

/* What the layer above the core lists (src/ops/op_list.c, from the one list
 * of ops, MF_OP_LIST in src/ops/op_list.h), so that the core names no op:
 *   - mf_builtin_ops: the registered ops' descriptors in `memfix report`'s
 *     order, mf_builtin_ops_count of them (none in a build without the
 *     kernels), then a NULL;
 *   - mf_builtin_tolerances: the tolerance rows the ops hold in every build
 *     (their references against PyTorch), mf_builtin_tolerances_count sets,
 *     in the same order. */
extern const struct mf_op_desc *const mf_builtin_ops[];
extern const size_t mf_builtin_ops_count;
struct mf_tolerance;
typedef struct mf_tolerance_rows {
    const struct mf_tolerance *rows;
    size_t count; /* { rows, MF_COUNT_OF(rows) } for an array */
} mf_tolerance_rows;
extern const mf_tolerance_rows *const mf_builtin_tolerances[];
extern const size_t mf_builtin_tolerances_count;
/* The number of elements of an array. */
#define MF_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

#ifdef __cplusplus
}
#endif

#endif
