/* Reference linear attention: the executable specification of the causal
 * linear attention fix (and of the bidirectional form it starts from).
 *
 * Source: seed document 003 ("Memory Profiling"):
 *   def linear_attention_bidir(q, k, v, eps=1e-6):
 *       q = F.elu(q) + 1; k = F.elu(k) + 1
 *       kv = torch.einsum('bhnd,bhnv->bhdv', k, v)            # (B, H, D, Dv)
 *       k_sum = k.sum(dim=2)
 *       out = torch.einsum('bhnd,bhdv->bhnv', q, kv)
 *       norm = torch.einsum('bhnd,bhd->bhn', q, k_sum).unsqueeze(-1)
 *       return out / (norm + eps)
 *   def linear_attention_causal(q, k, v, eps=1e-6):
 *       q = F.elu(q) + 1; k = F.elu(k) + 1
 *       kv = torch.einsum('bhnd,bhnv->bhndv', k, v)           # (B, H, N, D, Dv)
 *       kv_cumsum = torch.cumsum(kv, dim=2)
 *       k_cumsum = torch.cumsum(k, dim=2)
 *       out = torch.einsum('bhnd,bhndv->bhnv', q, kv_cumsum)
 *       norm = torch.einsum('bhnd,bhnd->bhn', q, k_cumsum).unsqueeze(-1)
 *       return out / (norm + eps)
 * "The naive causal implementation materializes the entire cumulative state"
 * (O(N x D^2)). This file does exactly that, in double precision, through the
 * context's host scratch allocator:
 *   causal forward : kv_cumsum (B*H*N*D*Dv) + k_cumsum (B*H*N*D), 8 bytes each
 *                    = 8 * B*H*N*D*(Dv+1)   (kv is built in place, then cumsum'd)
 *   causal backward: the same two plus their gradients d kv_cumsum and
 *                    d k_cumsum (reverse-cumsum'd in place, as autograd's
 *                    cumsum backward does) = 16 * B*H*N*D*(Dv+1)
 *   bidir forward  : kv + k_sum = 8 * B*H*D*(Dv+1); backward twice that.
 * The optional initial state (S0, z0) is added to every prefix (the cumsum
 * starts from it); the final state is kv_cumsum[N-1], k_cumsum[N-1].
 * Backward math (include/memfix/linear_attention.h): with den_n = q'_n.z_n + eps,
 * dnum_n = dout_n / den_n and dd_n = -(dout_n . out_n) / den_n,
 *   d kv_cumsum[n] = q'_n dnum_n^T,  d k_cumsum[n] = dd_n q'_n  (+ dS_N, dz_N at n = N-1)
 *   G_m = sum_{n>=m} d kv_cumsum[n],  g_m = sum_{n>=m} d k_cumsum[n]     (reverse cumsum)
 *   dq_n = phi'(q_n) (S_n dnum_n + dd_n z_n),  dk_m = phi'(k_m) (G_m v_m + g_m),
 *   dv_m = G_m^T k'_m,  dS0 = G_0,  dz0 = g_0.
 * The bidirectional form is the same with one state (all positions summed).
 */
#include "memfix/linear_attention.h"

#include "mf_internal.h"

#include <math.h>
#include <stdint.h>

/* 8 * B*H*L*D*(Dv+1) * copies, with L = N (causal) or 1 (bidir). */
static size_t la_bytes(int64_t B, int64_t H, int64_t L, int64_t D, int64_t Dv, size_t bytes_per)
{
    if (B <= 0 || H <= 0 || L <= 0 || D <= 0 || Dv <= 0) return SIZE_MAX;
    size_t x, dv1;
    if (!mf_size_add((size_t)Dv, 1, &dv1) || !mf_size_mul((size_t)B, (size_t)H, &x) ||
        !mf_size_mul(x, (size_t)L, &x) || !mf_size_mul(x, (size_t)D, &x) || !mf_size_mul(x, dv1, &x) ||
        !mf_size_mul(x, bytes_per, &x))
        return SIZE_MAX;
    return x;
}

size_t mf_ref_linear_attention_scratch_bytes(int causal, int backward, int64_t B, int64_t H, int64_t N,
                                             int64_t D, int64_t Dv)
{
    if (N <= 0) return SIZE_MAX;
    return la_bytes(B, H, causal ? N : 1, D, Dv, backward ? 16 : 8);
}

/* phi(x) = elu(x) + 1 and its derivative. */
static double phi(double x) { return x > 0.0 ? x + 1.0 : exp(x); }
static double dphi(double x) { return x > 0.0 ? 1.0 : exp(x); }

static double ld(const void *base, mf_dtype dtype, size_t e)
{
    if (dtype == MF_DTYPE_BF16) return (double)mf_bf16_to_f32(((const uint16_t *)base)[e]);
    return (double)((const float *)base)[e];
}

static mf_status check_args(const char *func, mf_dtype dtype, int causal, int64_t B, int64_t H, int64_t N,
                            int64_t D, int64_t Dv, int backward, int has_state)
{
    MF_TRY(mf_check_bhnd_args(func, dtype, causal, B, H, N, D, Dv));
    if (!causal && has_state)
        return mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                            "a recurrent state (or its gradient) needs causal == 1");
    MF_TRY(mf_check_bhnd_bytes(func, dtype, B, H, N, D, Dv, "q/k float bytes (B*H*N*D*4)"));
    size_t bytes;
    MF_TRY(mf_dims_product(func, "state bytes (B*H*D*Dv*4)", &bytes, 5, B, H, D, Dv, (int64_t)4));
    if (mf_ref_linear_attention_scratch_bytes(causal, backward, B, H, N, D, Dv) == SIZE_MAX)
        return mf_set_error(MF_ERR_OVERFLOW, func, __FILE__, __LINE__,
                            "the reference's scratch %s overflows size_t",
                            causal ? "(8 or 16)*B*H*N*D*(Dv+1)" : "(8 or 16)*B*H*D*(Dv+1)");
    return MF_OK;
}

/* Builds the document's state tensors for one (b, h) into kv (L x D x Dv) and
 * ks (L x D), L = N (causal: kv_cumsum, k_cumsum) or 1 (bidir: kv, k_sum).
 * qk/vo: element offsets of this (b, h) in q/k and v; g: the (b, h) index. */
static void build_states(mf_dtype dtype, int causal, size_t n, size_t d, size_t nv, const void *k,
                         const void *v, size_t qk, size_t vo, size_t g,
                         const mf_linear_attention_state *state, double *kv, double *ks)
{
    const size_t L = causal ? n : 1, sz = d * nv;
    for (size_t e = 0; e < L * sz; e++) kv[e] = 0.0;
    for (size_t e = 0; e < L * d; e++) ks[e] = 0.0;
    /* kv = einsum('bhnd,bhnv->bhndv', k, v) (causal) or its sum over n (bidir) */
    for (size_t m = 0; m < n; m++) {
        const size_t s = causal ? m : 0;
        for (size_t a = 0; a < d; a++) {
            const double kp = phi(ld(k, dtype, qk + m * d + a));
            ks[s * d + a] += kp;
            for (size_t c = 0; c < nv; c++) kv[s * sz + a * nv + c] += kp * ld(v, dtype, vo + m * nv + c);
        }
    }
    if (!causal) return;
    /* Initial state, then kv_cumsum = cumsum(kv, dim=2), k_cumsum = cumsum(k, dim=2). */
    if (state != NULL && state->initial_kv != NULL)
        for (size_t e = 0; e < sz; e++) kv[e] += (double)state->initial_kv[g * sz + e];
    if (state != NULL && state->initial_z != NULL)
        for (size_t a = 0; a < d; a++) ks[a] += (double)state->initial_z[g * d + a];
    for (size_t m = 1; m < n; m++) {
        for (size_t e = 0; e < sz; e++) kv[m * sz + e] += kv[(m - 1) * sz + e];
        for (size_t a = 0; a < d; a++) ks[m * d + a] += ks[(m - 1) * d + a];
    }
}

/* den_n = q'_n . z_n + eps. */
static double den_row(mf_dtype dtype, size_t d, const void *q, size_t qrow, const double *z)
{
    double den = 0.0;
    for (size_t a = 0; a < d; a++) den += phi(ld(q, dtype, qrow + a)) * z[a];
    return den + MF_LINEAR_ATTENTION_EPS;
}

/* num_n[c] = (q'_n^T S_n)[c]. */
static double num_elem(mf_dtype dtype, size_t d, size_t nv, const void *q, size_t qrow, const double *S,
                       size_t c)
{
    double num = 0.0;
    for (size_t a = 0; a < d; a++) num += phi(ld(q, dtype, qrow + a)) * S[a * nv + c];
    return num;
}

mf_status mf_ref_linear_attention_forward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H,
                                          int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                          const void *v, const mf_linear_attention_state *state, float *out)
{
    MF_CHECK_ALL_NOT_NULL(ctx, q, k, v, out);
    MF_TRY(check_args(__func__, dtype, causal, B, H, N, D, Dv, 0, mf_linear_attention_state_any(state)));

    const size_t bh = (size_t)B * (size_t)H, n = (size_t)N, d = (size_t)D, nv = (size_t)Dv;
    const size_t L = causal ? n : 1, sz = d * nv;
    double *kv = NULL, *ks = NULL;
    /* kv_cumsum / kv and k_cumsum / k_sum for all (b, h), as the document holds them. */
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST, bh * L * sz * sizeof(double), (void **)&kv));
    mf_status st = mf_scratch_alloc(ctx, MF_MEM_HOST, bh * L * d * sizeof(double), (void **)&ks);
    if (st != MF_OK) goto done;
    for (size_t g = 0; g < bh; g++)
        build_states(dtype, causal, n, d, nv, k, v, g * n * d, g * n * nv, g, state, kv + g * L * sz,
                     ks + g * L * d);
    for (size_t g = 0; g < bh; g++) {
        for (size_t i = 0; i < n; i++) {
            const size_t s = causal ? i : 0, qrow = (g * n + i) * d;
            const double *S = kv + (g * L + s) * sz;
            const double den = den_row(dtype, d, q, qrow, ks + (g * L + s) * d);
            for (size_t c = 0; c < nv; c++)
                out[(g * n + i) * nv + c] = (float)(num_elem(dtype, d, nv, q, qrow, S, c) / den);
        }
        if (causal && state != NULL) {
            const double *S = kv + (g * L + n - 1) * sz, *z = ks + (g * L + n - 1) * d;
            if (state->final_kv != NULL)
                for (size_t e = 0; e < sz; e++) state->final_kv[g * sz + e] = (float)S[e];
            if (state->final_z != NULL)
                for (size_t a = 0; a < d; a++) state->final_z[g * d + a] = (float)z[a];
        }
    }
done:
    mf_scratch_free(ctx, MF_MEM_HOST, ks);
    mf_scratch_free(ctx, MF_MEM_HOST, kv);
    return st;
}

mf_status mf_ref_linear_attention_backward(mf_context *ctx, mf_dtype dtype, int causal, int64_t B, int64_t H,
                                           int64_t N, int64_t D, int64_t Dv, const void *q, const void *k,
                                           const void *v, const void *dout,
                                           const mf_linear_attention_state *state,
                                           const mf_linear_attention_state_grad *grad, float *dq, float *dk,
                                           float *dv)
{
    MF_CHECK_ALL_NOT_NULL(ctx, q, k, v, dout, dq, dk, dv);
    MF_TRY(check_args(__func__, dtype, causal, B, H, N, D, Dv, 1,
                      mf_linear_attention_state_any(state) || mf_linear_attention_state_grad_any(grad)));

    const size_t bh = (size_t)B * (size_t)H, n = (size_t)N, d = (size_t)D, nv = (size_t)Dv;
    const size_t L = causal ? n : 1, sz = d * nv;
    double *kv = NULL, *ks = NULL, *dkv = NULL, *dks = NULL;
    mf_status st = mf_scratch_alloc(ctx, MF_MEM_HOST, bh * L * sz * sizeof(double), (void **)&kv);
    if (st == MF_OK) st = mf_scratch_alloc(ctx, MF_MEM_HOST, bh * L * d * sizeof(double), (void **)&ks);
    if (st == MF_OK) st = mf_scratch_alloc(ctx, MF_MEM_HOST, bh * L * sz * sizeof(double), (void **)&dkv);
    if (st == MF_OK) st = mf_scratch_alloc(ctx, MF_MEM_HOST, bh * L * d * sizeof(double), (void **)&dks);
    if (st != MF_OK) goto done;
    for (size_t g = 0; g < bh; g++) {
        const size_t qk = g * n * d, vo = g * n * nv;
        double *S = kv + g * L * sz, *z = ks + g * L * d, *dS = dkv + g * L * sz, *dz = dks + g * L * d;
        build_states(dtype, causal, n, d, nv, k, v, qk, vo, g, state, S, z);
        for (size_t e = 0; e < L * sz; e++) dS[e] = 0.0;
        for (size_t e = 0; e < L * d; e++) dz[e] = 0.0;
        /* Gradients of kv_cumsum and k_cumsum, position by position; dq on the way
         * (it needs S_n and z_n, which are at hand). */
        for (size_t i = 0; i < n; i++) {
            const size_t s = causal ? i : 0;
            const double den = den_row(dtype, d, q, qk + i * d, z + s * d);
            double dot = 0.0; /* dout_n . out_n */
            for (size_t c = 0; c < nv; c++)
                dot += ld(dout, dtype, vo + i * nv + c) *
                       (num_elem(dtype, d, nv, q, qk + i * d, S + s * sz, c) / den);
            const double dd = -dot / den;
            for (size_t a = 0; a < d; a++) {
                const double qx = ld(q, dtype, qk + i * d + a), qp = phi(qx);
                double acc = dd * z[s * d + a];
                for (size_t c = 0; c < nv; c++) {
                    const double dnum = ld(dout, dtype, vo + i * nv + c) / den;
                    acc += S[s * sz + a * nv + c] * dnum;
                    dS[s * sz + a * nv + c] += qp * dnum;
                }
                dz[s * d + a] += qp * dd;
                dq[qk + i * d + a] = (float)(dphi(qx) * acc);
            }
        }
        if (causal) {
            /* The final state's gradient enters at the last prefix; then the
             * reverse cumsum (autograd's backward of torch.cumsum). */
            if (grad != NULL && grad->d_final_kv != NULL)
                for (size_t e = 0; e < sz; e++) dS[(n - 1) * sz + e] += (double)grad->d_final_kv[g * sz + e];
            if (grad != NULL && grad->d_final_z != NULL)
                for (size_t a = 0; a < d; a++) dz[(n - 1) * d + a] += (double)grad->d_final_z[g * d + a];
            for (size_t m = n - 1; m-- > 0;) {
                for (size_t e = 0; e < sz; e++) dS[m * sz + e] += dS[(m + 1) * sz + e];
                for (size_t a = 0; a < d; a++) dz[m * d + a] += dz[(m + 1) * d + a];
            }
            if (grad != NULL && grad->d_initial_kv != NULL)
                for (size_t e = 0; e < sz; e++) grad->d_initial_kv[g * sz + e] = (float)dS[e];
            if (grad != NULL && grad->d_initial_z != NULL)
                for (size_t a = 0; a < d; a++) grad->d_initial_z[g * d + a] = (float)dz[a];
        }
        /* dk_m = phi'(k_m) (G_m v_m + g_m), dv_m = G_m^T k'_m */
        for (size_t m = 0; m < n; m++) {
            const size_t s = causal ? m : 0;
            for (size_t a = 0; a < d; a++) {
                const double kx = ld(k, dtype, qk + m * d + a);
                double acc = dz[s * d + a];
                for (size_t c = 0; c < nv; c++)
                    acc += dS[s * sz + a * nv + c] * ld(v, dtype, vo + m * nv + c);
                dk[qk + m * d + a] = (float)(dphi(kx) * acc);
            }
            for (size_t c = 0; c < nv; c++) {
                double acc = 0.0;
                for (size_t a = 0; a < d; a++)
                    acc += dS[s * sz + a * nv + c] * phi(ld(k, dtype, qk + m * d + a));
                dv[vo + m * nv + c] = (float)acc;
            }
        }
    }
done:
    mf_scratch_free(ctx, MF_MEM_HOST, dks);
    mf_scratch_free(ctx, MF_MEM_HOST, dkv);
    mf_scratch_free(ctx, MF_MEM_HOST, ks);
    mf_scratch_free(ctx, MF_MEM_HOST, kv);
    return st;
}
