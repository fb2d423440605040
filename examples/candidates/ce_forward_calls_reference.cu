/* WRONG (scratch-ceiling, host memory): right answer, by copying the inputs to
 * the host and calling memfix's own reference, which materializes the N x V
 * logits on the host: the memory the fix exists to avoid. memfix verify counts
 * host scratch and host heap growth during the call against the ceiling. */
#include "ce_forward_common.cuh"

#include <stdlib.h>

static void *to_host(const void *dev, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (h != NULL && bytes && cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        return NULL;
    }
    return h;
}

CAND_EXPORT mf_status ce_forward_candidate(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                           mf_dtype dtype, const void *hidden, const void *weight,
                                           const void *bias, const int64_t *labels,
                                           const mf_cross_entropy_options *opts, float *loss, float *lse)
{
    const size_t es = mf_dtype_size(dtype), n = (size_t)n_rows, d = (size_t)hidden_dim, v = (size_t)vocab;
    const size_t n_loss = opts != NULL && opts->reduction == MF_CE_REDUCTION_NONE ? n : 1;
    void *h = to_host(hidden, n * d * es), *w = to_host(weight, v * d * es);
    void *b = bias != NULL ? to_host(bias, v * es) : NULL;
    int64_t *lab = (int64_t *)to_host(labels, n * sizeof(int64_t));
    float *hl = (float *)malloc(n_loss * sizeof(float)), *hlse = (float *)malloc(n * sizeof(float));
    mf_status s = MF_ERR_OUT_OF_MEMORY;
    if (h && w && lab && hl && hlse && (bias == NULL || b)) {
        s = mf_ref_cross_entropy_forward(ctx, n_rows, hidden_dim, vocab, dtype, h, w, b, lab, opts, hl,
                                         lse != NULL ? hlse : NULL);
        if (s == MF_OK && cudaMemcpy(loss, hl, n_loss * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
            s = MF_ERR_BACKEND;
        if (s == MF_OK && lse != NULL &&
            cudaMemcpy(lse, hlse, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
            s = MF_ERR_BACKEND;
    }
    free(h);
    free(w);
    free(b);
    free(lab);
    free(hl);
    free(hlse);
    return s;
}
