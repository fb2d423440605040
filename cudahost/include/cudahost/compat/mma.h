// Host execution mode's stand-in for the toolkit's <mma.h> (the WMMA API, nvcuda::wmma); this directory precedes the
// toolkit's include directory in host-mode builds. With nvcc, the toolkit's header is used.
#if defined(__CUDACC__)
#include_next <mma.h>
#else
#include "cudahost/wmma.h"
#endif
