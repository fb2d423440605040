/* Deferred checks of position ids (src/core/context.c), beside
 * mf_context_defer_label_check (mf_internal.h): the same slots, the same
 * reporting by the context's next synchronizing call. */
#ifndef MEMFIX_CORE_MF_DEFERRED_H
#define MEMFIX_CORE_MF_DEFERRED_H

#include "memfix/memfix.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues, without waiting, a copy of *d_first_bad (device: the first token
 * b*seq_len + t of n_tokens whose id ids[b*batch_stride + t], int32 when
 * id_bytes == 4 or int64 when 8, is outside [0, max_position]; -1 or
 * n_tokens when none). The next synchronizing call of the context reports
 * MF_ERR_OUT_OF_RANGE naming func, the id, its index in ids and its token.
 * d_first_bad may be freed scratch after this returns. With 16 checks
 * pending, it synchronizes first (and returns an error found then). */
mf_status mf_context_defer_position_check(mf_context *ctx, const char *func, const int64_t *d_first_bad,
                                          const void *ids, int id_bytes, int64_t n_tokens, int64_t seq_len,
                                          int64_t batch_stride, int64_t max_position);

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_CORE_MF_DEFERRED_H */
