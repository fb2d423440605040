/* Deferred checks (src/core/context.c): a data-dependent error an op finds on
 * the device (an index out of range, ...) is reported by the context's next
 * synchronizing call (mf_context_synchronize, mf_buffer_download,
 * mf_context_trim), as the CUDA runtime reports an asynchronous launch error,
 * without the op waiting for the device. The core keeps the slots and their
 * order; the op that enqueues a check says what it found (its report). */
#ifndef MEMFIX_CORE_MF_DEFERRED_H
#define MEMFIX_CORE_MF_DEFERRED_H

#include "memfix/memfix.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most bytes of 'info' a check carries to its report. */
enum { MF_DEFERRED_INFO_BYTES = 64 };

/* The report of a check that found row 'bad_row' (0 <= bad_row < its n_rows),
 * called after the context's stream was synchronized, with the check's func
 * and its copy of info: it reads what it names from the device with
 * mf_context_read_device and returns the error (mf_set_error naming func). */
typedef mf_status mf_deferred_report_fn(mf_context *ctx, const char *func, int64_t bad_row, const void *info);

/* Enqueues on the context's stream, without waiting, a copy of *d_first_bad
 * (device: the first bad row of n_rows, or a value outside [0, n_rows) when
 * none) into page-locked memory; the next synchronizing call of the context
 * returns report's status for the first pending check that found a row (and
 * consumes them all). info: info_bytes (<= MF_DEFERRED_INFO_BYTES) bytes for
 * the report, copied. d_first_bad may be freed scratch after this returns (the
 * copy is ordered before any reuse). With 16 checks pending, it synchronizes
 * first (and returns an error found then). */
mf_status mf_context_defer_check(mf_context *ctx, const char *func, const int64_t *d_first_bad,
                                 int64_t n_rows, mf_deferred_report_fn *report, const void *info,
                                 size_t info_bytes);

/* For a report: copies bytes from the device to the host on the context's
 * stream and waits, without reporting deferred checks. */
mf_status mf_context_read_device(mf_context *ctx, void *dst_host, const void *src_dev, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_CORE_MF_DEFERRED_H */
