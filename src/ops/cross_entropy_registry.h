/* The parts of the cross_entropy registry entry (mf_op_cross_entropy, cross_entropy_cases.c)
 * defined in files of their own: memfix bench's sweep and target (cross_entropy_bench.c) and
 * memfix plan's rows (cross_entropy_plan.c). Internal: not installed. */
#ifndef MEMFIX_OPS_CROSS_ENTROPY_REGISTRY_H
#define MEMFIX_OPS_CROSS_ENTROPY_REGISTRY_H

#include "memfix/plan.h"
#include "memfix/registry.h"

extern const mf_bench_sweep mf_cross_entropy_internal_bench;
extern const mf_bench_target mf_cross_entropy_internal_bench_targets[];
extern const mf_op_plan mf_cross_entropy_internal_plan;

#endif /* MEMFIX_OPS_CROSS_ENTROPY_REGISTRY_H */
