// Host execution mode's stand-in for the toolkit's <cooperative_groups/reduce.h>: cg::reduce and the operators are
// in cudahost/cooperative_groups.h. With nvcc, the toolkit's header is used.
#if defined(__CUDACC__)
#include_next <cooperative_groups/reduce.h>
#else
#include "cudahost/cooperative_groups.h"
#endif
