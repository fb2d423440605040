/* WRONG (input-write): right answer, A as given when it returns, but it uses A
 * as scratch in between, and hides that from memfix's write-protection: it
 * installs its own SIGSEGV handler, which makes the faulting page writable, then
 * negates A in place, multiplies, negates the product and restores A. memfix
 * verify checks, after the call, that the SIGSEGV handler and the inputs'
 * read-only protection are still its own. */
#include "candidate_common.cuh"

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void unprotect_on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    (void)mprotect((void *)((uintptr_t)si->si_addr & ~(page - 1)), page, PROT_READ | PROT_WRITE);
}

static void negate(int bf16, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (bf16)
            ((uint16_t *)p)[i] ^= 0x8000u;
        else
            ((float *)p)[i] = -((float *)p)[i];
    }
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = unprotect_on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    const int bf16 = dtype == MF_DTYPE_BF16;
    const size_t na = (size_t)M * (size_t)K, nc = (size_t)M * (size_t)N;
    negate(bf16, (void *)A, na);
    mf_status s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (s == MF_OK) negate(0, C, nc);
    negate(bf16, (void *)A, na);
    return s;
}
