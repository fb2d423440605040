/* C translation unit of the driver smoke test: its CUDA runtime calls reach cudahost through the renames. */
#include <cuda_runtime_api.h>
int c_alloc(void **p) { return (int)cudaMalloc(p, 16); }
