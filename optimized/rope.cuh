/* The kernel entries of optimized/rope.cu: the one declaration, included by
 * rope.cu (so the compiler checks each definition against it) and by
 * src/ops/rope.c (which validates the arguments and checks the positions
 * first). mf_host_* are built by cudahost, mf_cuda_* by nvcc (mf_cuda.h).
 * The fused entry has mf_rope_fused's type (include/memfix/rope.h), which is
 * also a `memfix verify --op rope` candidate's. */
#ifndef MEMFIX_OPTIMIZED_ROPE_CUH
#define MEMFIX_OPTIMIZED_ROPE_CUH

#include "memfix/rope.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills table[capacity][rotary_dim/2][2] (cos, sin) for positions 0..capacity-1. */
typedef mf_status mf_rope_cache_build_fn(mf_context *ctx, float *table, int64_t capacity,
                                         const mf_rope_config *cfg);
/* Rotates like the fused entry, reading cos/sin from a table of 'capacity'
 * positions that covers every position of pos. */
typedef mf_status mf_rope_cache_apply_fn(mf_context *ctx, const float *table, int64_t capacity,
                                         const mf_rope_config *cfg, mf_rope_direction dir,
                                         const mf_rope_tensors *t, const mf_rope_positions *pos);

/* The range check of explicit ids, on the device and without waiting: sets
 * *first_bad (device) to -1 and then to the first token b*T + t whose id is
 * outside [0, MF_ROPE_MAX_POSITION], if any (atomicMin). The caller hands
 * first_bad to the context's deferred checks. */
typedef mf_status mf_rope_check_ids_fn(mf_context *ctx, const mf_rope_positions *pos, int64_t batch,
                                       int64_t seq_len, int64_t *first_bad);

mf_rope_fused_fn mf_host_rope_fused, mf_cuda_rope_fused;
mf_rope_check_ids_fn mf_host_rope_check_ids, mf_cuda_rope_check_ids;
mf_rope_cache_build_fn mf_host_rope_cache_build, mf_cuda_rope_cache_build;
mf_rope_cache_apply_fn mf_host_rope_cache_apply, mf_cuda_rope_cache_apply;

#ifdef __cplusplus
}
#endif
#endif /* MEMFIX_OPTIMIZED_ROPE_CUH */
