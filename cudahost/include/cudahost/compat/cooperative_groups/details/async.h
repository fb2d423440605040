// Host execution mode's stand-in for the toolkit's <cooperative_groups/details/async.h> (an implementation header that
// some programs include directly): host mode's cooperative groups are in cudahost/cooperative_groups.h. With nvcc,
// the toolkit's header is used.
#if defined(__CUDACC__)
#include_next <cooperative_groups/details/async.h>
#else
#include "cudahost/cooperative_groups.h"
#endif
