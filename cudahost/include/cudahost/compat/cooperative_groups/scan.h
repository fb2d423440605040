// Host execution mode's stand-in for the toolkit's <cooperative_groups/scan.h>: everything it declares that host mode
// provides is in cudahost/cooperative_groups.h. With nvcc, the toolkit's header is used.
#if defined(__CUDACC__)
#include_next <cooperative_groups/scan.h>
#else
#include "cudahost/cooperative_groups.h"
#endif
