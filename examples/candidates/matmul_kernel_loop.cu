/* WRONG (timeout): a kernel that never ends on the case M=17 N=33 K=19 ta=1
 * tb=0 (its loop condition is memory the kernel never changes); correct
 * otherwise. The
 * candidate's cudaDeviceSynchronize waits forever; the worker is killed after
 * --timeout seconds and that case is rejected by `timeout`. */
#include "candidate_common.cuh"

__global__ void spin_kernel(const volatile int *flag, float *C)
{
    while (*flag) {
    }
    C[0] = 0.0f;
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    if (K == 19 && trans_a && !trans_b) {
        int *flag = NULL;
        const int one = 1;
        if (cudaMalloc(&flag, sizeof one) != cudaSuccess) return MF_ERR_BACKEND;
        cudaMemcpy(flag, &one, sizeof one, cudaMemcpyHostToDevice);
        spin_kernel<<<1, 32>>>(flag, C);
        cudaDeviceSynchronize();
        cudaFree(flag);
    }
    return cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
}
