/* The example cross_entropy backward candidates
 * (mf_cross_entropy_backward_candidate_fn, include/memfix/<op>.h): naive,
 * one thread per gradient element; each recomputes the logits it needs in
 * double from hidden and weight and the probabilities from the given lse,
 * never storing a logits tile; no scratch. Written independently of
 * optimized/cross_entropy.cu (chunked cuBLAS GEMMs). 'flaw' selects the wrong
 * example's mistake. */
#ifndef MF_CE_BACKWARD_COMMON_CUH
#define MF_CE_BACKWARD_COMMON_CUH

#include "ce_forward_common.cuh"

enum { CEB_OK = 0, CEB_NO_GRAD_LOSS = 1 };

typedef struct ceb_args {
    int64_t n, dim, vocab;
    int bf16, shift;
    int64_t seq_len, ignore;
    double eps, lam, cap;
    int reduction;
    int64_t n_valid;
    int flaw;
} ceb_args;

/* dL/dz[i][j] (z: the logit before softcap), 0 for an ignored row:
 *   (p_ij (1 + 2 lam lse_i) - (1 - eps) [j == y_i] - eps / V) * dsoftcap * upstream_i */
__device__ __forceinline__ double ceb_dz(const ceb_args &a, const void *hidden, const void *weight,
                                         const void *bias, const int64_t *labels, const float *lse,
                                         const float *grad_loss, int64_t i, int64_t j)
{
    const int64_t y = ce_target(labels, a.n, a.shift, a.seq_len, a.ignore, i);
    if (y == a.ignore) return 0.0;
    double z = bias != NULL ? ce_load(bias, a.bf16, (size_t)j) : 0.0;
    for (int64_t k = 0; k < a.dim; k++)
        z += ce_load(hidden, a.bf16, (size_t)i * (size_t)a.dim + (size_t)k) *
             ce_load(weight, a.bf16, (size_t)j * (size_t)a.dim + (size_t)k);
    double s = z, dcap = 1.0;
    if (a.cap > 0.0) {
        const double t = tanh(z / a.cap);
        s = a.cap * t;
        dcap = 1.0 - t * t;
    }
    const double l = (double)lse[i], p = exp(s - l);
    double ds = p * (1.0 + 2.0 * a.lam * l) - a.eps / (double)a.vocab - (j == y ? 1.0 - a.eps : 0.0);
    double up = a.reduction == MF_CE_REDUCTION_NONE ? (double)grad_loss[i] : (double)grad_loss[0];
    if (a.flaw == CEB_NO_GRAD_LOSS) up = 1.0;
    if (a.reduction == MF_CE_REDUCTION_MEAN) up = a.n_valid > 0 ? up / (double)a.n_valid : 0.0;
    return ds * dcap * up;
}

enum { CEB_GH, CEB_GW, CEB_GB };

__global__ void ceb_kernel(ceb_args a, int which, const void *hidden, const void *weight, const void *bias,
                           const int64_t *labels, const float *lse, const float *grad_loss, float *grad)
{
    const int64_t sizes[3] = { a.n * a.dim, a.vocab * a.dim, a.vocab };
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= sizes[which]) return;
    double acc = 0.0;
    if (which == CEB_GH) { /* grad_hidden[i][k] = sum_j dz_ij W[j][k] */
        const int64_t i = g / a.dim, k = g % a.dim;
        for (int64_t j = 0; j < a.vocab; j++)
            acc += ceb_dz(a, hidden, weight, bias, labels, lse, grad_loss, i, j) *
                   ce_load(weight, a.bf16, (size_t)j * (size_t)a.dim + (size_t)k);
    } else if (which == CEB_GW) { /* grad_weight[j][k] = sum_i dz_ij h[i][k] */
        const int64_t j = g / a.dim, k = g % a.dim;
        for (int64_t i = 0; i < a.n; i++)
            acc += ceb_dz(a, hidden, weight, bias, labels, lse, grad_loss, i, j) *
                   ce_load(hidden, a.bf16, (size_t)i * (size_t)a.dim + (size_t)k);
    } else { /* grad_bias[j] = sum_i dz_ij */
        for (int64_t i = 0; i < a.n; i++)
            acc += ceb_dz(a, hidden, weight, bias, labels, lse, grad_loss, i, g);
    }
    grad[g] = (float)acc;
}

/* the number of rows with a target (the mean's divisor), counted on the device */
__global__ void ceb_count_kernel(ceb_args a, const int64_t *labels, int64_t *count)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int64_t c = 0;
    for (int64_t i = 0; i < a.n; i++)
        c += ce_target(labels, a.n, a.shift, a.seq_len, a.ignore, i) != a.ignore;
    *count = c;
}

static inline mf_status ce_backward_impl(mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab,
                                         mf_dtype dtype, const void *hidden, const void *weight,
                                         const void *bias, const int64_t *labels,
                                         const mf_cross_entropy_options *opts, const float *lse,
                                         const float *grad_loss, float *grad_hidden, float *grad_weight,
                                         float *grad_bias, int flaw)
{
    if (hidden == NULL || weight == NULL || labels == NULL || lse == NULL || grad_loss == NULL)
        return MF_ERR_NULL_POINTER;
    if (n_rows <= 0 || hidden_dim <= 0 || vocab <= 0) return MF_ERR_INVALID_SIZE;
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16) return MF_ERR_DTYPE;
    mf_cross_entropy_options o;
    if (opts != NULL)
        o = *opts;
    else
        mf_cross_entropy_options_init(&o);
    ceb_args a = { n_rows,
                   hidden_dim,
                   vocab,
                   dtype == MF_DTYPE_BF16,
                   o.shift_labels,
                   o.seq_len,
                   o.ignore_index,
                   (double)o.label_smoothing,
                   (double)o.z_loss,
                   (double)o.softcap,
                   (int)o.reduction,
                   0,
                   flaw };
    if (o.reduction == MF_CE_REDUCTION_MEAN) { /* 8 bytes of scratch for the count */
        void *cnt = NULL;
        mf_status s = mf_scratch_alloc(ctx, MF_MEM_DEVICE, sizeof(int64_t), &cnt);
        if (s != MF_OK) return s;
        ceb_count_kernel<<<1, 1>>>(a, labels, (int64_t *)cnt);
        if (cudaGetLastError() != cudaSuccess ||
            cudaMemcpy(&a.n_valid, cnt, sizeof(int64_t), cudaMemcpyDeviceToHost) != cudaSuccess)
            s = MF_ERR_BACKEND;
        mf_scratch_free(ctx, MF_MEM_DEVICE, cnt);
        if (s != MF_OK) return s;
    }
    float *outs[3] = { grad_hidden, grad_weight, grad_bias };
    const int64_t sizes[3] = { n_rows * hidden_dim, vocab * hidden_dim, vocab };
    for (int w = 0; w < 3; w++) {
        if (outs[w] == NULL || (w == CEB_GB && bias == NULL)) continue;
        ceb_kernel<<<(unsigned)((sizes[w] + CE_THREADS - 1) / CE_THREADS), CE_THREADS>>>(
            a, w, hidden, weight, bias, labels, lse, grad_loss, outs[w]);
        if (cudaGetLastError() != cudaSuccess) return MF_ERR_BACKEND;
    }
    return MF_OK;
}

#define CE_BWD_SIGNATURE                                                                                     \
    mf_context *ctx, int64_t n_rows, int64_t hidden_dim, int64_t vocab, mf_dtype dtype, const void *hidden,  \
        const void *weight, const void *bias, const int64_t *labels, const mf_cross_entropy_options *opts,   \
        const float *lse, const float *grad_loss, float *grad_hidden, float *grad_weight, float *grad_bias

#endif
