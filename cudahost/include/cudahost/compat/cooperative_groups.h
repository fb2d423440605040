// Host execution mode's stand-in for the toolkit's <cooperative_groups.h> (this directory precedes the toolkit's
// include directory in host-mode builds). With nvcc, the toolkit's header is used.
#if defined(__CUDACC__)
#include_next <cooperative_groups.h>
#else
#include "cudahost/cooperative_groups.h"
#endif
