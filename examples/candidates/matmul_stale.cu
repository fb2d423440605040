/* WRONG (rerun): caches the result of the first call per shape on the host and
 * serves it to every later call of that shape, whatever the inputs. Right on
 * the first inputs and deterministic; wrong as soon as the inputs change. */
#include <stdlib.h>
#include <string.h>
#include "candidate_common.cuh"

typedef struct cached {
    int used, dtype, ta, tb;
    int64_t M, N, K;
    float *c;
} cached;
static cached cache[64];

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    const size_t bytes = (size_t)M * (size_t)N * sizeof(float);
    for (int i = 0; i < 64; i++) {
        cached *e = &cache[i];
        if (e->used && e->dtype == (int)dtype && e->ta == trans_a && e->tb == trans_b && e->M == M &&
            e->N == N && e->K == K)
            return cudaMemcpy(C, e->c, bytes, cudaMemcpyHostToDevice) == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
    }
    mf_status s = cand_matmul_naive(dtype, trans_a, trans_b, M, N, K, A, B, C);
    if (s != MF_OK) return s;
    for (int i = 0; i < 64; i++) {
        cached *e = &cache[i];
        if (e->used) continue;
        e->c = (float *)malloc(bytes);
        if (e->c == NULL) break;
        if (cudaMemcpy(e->c, C, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return MF_ERR_BACKEND;
        e->used = 1;
        e->dtype = (int)dtype;
        e->ta = trans_a;
        e->tb = trans_b;
        e->M = M;
        e->N = N;
        e->K = K;
        break;
    }
    return MF_OK;
}
