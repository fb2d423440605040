/* WRONG (process-memory): right answer, but it computes C in host code in a
 * 64 MiB workspace it maps itself (mmap, every page touched) and unmaps before
 * returning. No allocator memfix can see from inside the worker is involved
 * (not the context's, not cudahost's, not malloc's heap), so the worker's own
 * measurements report no scratch at all; memfix measures the worker's peak
 * resident memory from outside it (/proc) and rejects the case: matmul's
 * scratch ceiling is 0. */
#include "candidate_common.cuh"

#include <string.h>
#include <sys/mman.h>

static float load_elem(const unsigned char *p, int bf16, size_t i)
{
    if (bf16) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        const uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    float f;
    memcpy(&f, p + 4 * i, 4);
    return f;
}

CAND_EXPORT mf_status matmul_candidate(mf_context *ctx, mf_dtype dtype, int trans_a, int trans_b, int64_t M,
                                       int64_t N, int64_t K, const void *A, const void *B, float *C)
{
    (void)ctx;
    const int bf16 = dtype == MF_DTYPE_BF16;
    const size_t es = bf16 ? 2u : 4u;
    const size_t a_bytes = (size_t)M * (size_t)K * es, b_bytes = (size_t)K * (size_t)N * es;
    const size_t c_bytes = (size_t)M * (size_t)N * sizeof(float);
    size_t ws_bytes = (size_t)64 << 20;
    if (a_bytes + b_bytes + c_bytes > ws_bytes) ws_bytes = a_bytes + b_bytes + c_bytes;
    void *ws = mmap(NULL, ws_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ws == MAP_FAILED) return MF_ERR_OUT_OF_MEMORY;
    memset(ws, 0, ws_bytes); /* "a zeroed accumulation buffer": every page resident */
    unsigned char *ha = (unsigned char *)ws, *hb = ha + a_bytes;
    float *hc = (float *)(void *)(hb + b_bytes + (4 - (a_bytes + b_bytes) % 4) % 4);
    mf_status s = MF_OK;
    if (cudaMemcpy(ha, A, a_bytes, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hb, B, b_bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        s = MF_ERR_BACKEND;
    for (int64_t i = 0; i < M && s == MF_OK; i++)
        for (int64_t j = 0; j < N; j++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                const size_t ia =
                    trans_a ? (size_t)k * (size_t)M + (size_t)i : (size_t)i * (size_t)K + (size_t)k;
                const size_t ib =
                    trans_b ? (size_t)j * (size_t)K + (size_t)k : (size_t)k * (size_t)N + (size_t)j;
                acc += load_elem(ha, bf16, ia) * load_elem(hb, bf16, ib);
            }
            hc[(size_t)i * (size_t)N + (size_t)j] = acc;
        }
    if (s == MF_OK && cudaMemcpy(C, hc, c_bytes, cudaMemcpyHostToDevice) != cudaSuccess) s = MF_ERR_BACKEND;
    munmap(ws, ws_bytes);
    return s;
}
