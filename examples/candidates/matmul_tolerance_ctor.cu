/* WRONG (equivalence): writes 42 everywhere, and its library's constructor
 * raises memfix's own tolerance rows for matmul (mf_tolerance_get, then
 * mprotect to make the page writable) so that any output compares equal. In
 * verify's own process that was ACCEPTED; the constructor now runs
 * in the worker process, whose tolerance table verify never reads: the
 * comparison happens in memfix verify's process with its own rows. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include "candidate_common.cuh"
#include "memfix/check.h"

__attribute__((constructor)) static void raise_tolerances(void)
{
    static const char *const rows[] = { "matmul.out.f32", "matmul.out.bf16" };
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < 2; i++) {
        mf_tolerance *t = (mf_tolerance *)(uintptr_t)mf_tolerance_get(rows[i]);
        if (t == NULL) continue;
        const uintptr_t start = (uintptr_t)t & ~(page - 1);
        if (mprotect((void *)start, 2 * page, PROT_READ | PROT_WRITE) != 0) continue;
        t->atol = 1e30;
        t->rtol = 1e30;
        t->nmse = 1e30;
    }
}

__global__ void fill42(float *C, size_t n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = 42.0f;
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx, (void)dtype, (void)trans_a, (void)trans_b, (void)K, (void)A, (void)B;
    const size_t n = (size_t)M * (size_t)N;
    fill42<<<(unsigned)((n + 255) / 256), 256>>>(C, n);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}
