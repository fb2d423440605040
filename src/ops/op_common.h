/* The backend dispatch shared by the public entry points of src/ops/<op>.c.
 * Internal: not installed. The argument checks shared with the references live
 * in the core (mf_internal.h, src/core/validate.c), which a reference-only
 * build links; the case helpers of the registry entries in the testbed
 * (src/testbed/testbed.h). */
#ifndef MEMFIX_OP_COMMON_H
#define MEMFIX_OP_COMMON_H

#include "mf_internal.h"
#include "testbed/testbed.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- backend dispatch -------------------------------------------------------------- */
/* *is_cuda = 0 for the host backend, 1 for CUDA (when built with it); otherwise
 * MF_ERR_BACKEND_UNAVAILABLE, the message naming func and "<kernels> kernels". */
mf_status mf_op_pick_backend(const char *func, mf_context *ctx, const char *kernels, int *is_cuda);
/* The kernel entry of the picked backend: mf_cuda_<entry> when is_cuda (only
 * in a build with CUDA), else mf_host_<entry>. */
#ifdef MF_HAVE_CUDA
#define MF_OP_ENTRY(is_cuda, entry) ((is_cuda) ? mf_cuda_##entry : mf_host_##entry)
#else
#define MF_OP_ENTRY(is_cuda, entry) ((void)(is_cuda), mf_host_##entry)
#endif

/* One device operand of an entry point: its name in the signature, the
 * pointer, the bytes the kernels touch, and whether it must be given (else
 * NULL means not passed: nothing checked). */
typedef struct mf_op_extent {
    const char *name;
    const void *ptr;
    size_t bytes;
    int required;
} mf_op_extent;
/* MF_ERR_NULL_POINTER "<name> is NULL" for the first required operand that is NULL. */
mf_status mf_op_check_required(const char *func, const mf_op_extent *ops, size_t n);
/* mf_check_device_extent of each operand, in order, before any launch. */
mf_status mf_op_check_extents(const char *func, mf_context *ctx, const mf_op_extent *ops, size_t n);
#define MF_OP_N_EXTENTS(a) (sizeof(a) / sizeof((a)[0]))

#ifdef __cplusplus
}
#endif

#endif
