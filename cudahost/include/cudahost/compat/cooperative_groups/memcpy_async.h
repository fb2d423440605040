// Host execution mode's stand-in for the toolkit's <cooperative_groups/memcpy_async.h>: everything it declares that host mode
// provides is in cudahost/cooperative_groups.h. With nvcc, the toolkit's header is used.
#if defined(__CUDACC__)
#include_next <cooperative_groups/memcpy_async.h>
#else
#include "cudahost/cooperative_groups.h"
#endif
