/* The example native-sparse-attention candidates (mf_nsa_forward_candidate_fn
 * and mf_nsa_backward_candidate_fn, include/memfix/nsa.h): naive, written
 * independently of optimized/nsa.cu (which fuses the branches with online
 * softmax and, for bf16, tensor cores). Here every score is recomputed in
 * double by the thread that needs it, two-pass softmax, no scratch:
 *   forward   one thread per (b, t, KV group): compression branch and block
 *             importances block by block, the top n kept while streaming, then the
 *             selected and sliding branches; writes out, lse, sel;
 *   backward  one thread per query row (dq and the three gate gradients), then
 *             one thread per key row (dk, dv: the direct selected/sliding terms
 *             and the compressed blocks' terms spread through the mean pooling),
 *             so every output has one writer: deterministic.
 * Limits of these examples: D <= 128, n <= 64, Hq/Hk <= 16 (any S and l'). 'flaw' selects the
 * wrong examples' mistake. */
#ifndef MF_NSA_COMMON_CUH
#define MF_NSA_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "memfix/nsa.h"
#include "memfix/verify.h"

#define CAND_EXPORT extern "C" __attribute__((visibility("default")))
#define NSA_C_MAX_DIM 128
#define NSA_C_MAX_BLOCKS 64 /* n_sel: the selected blocks a query keeps (any number of blocks) */
#define NSA_C_MAX_GROUP 16
#define NSA_C_THREADS 64

enum { NSA_OK = 0, NSA_UNGATED_CMP = 1, NSA_NO_POOL_GRAD = 2, NSA_SEL_BY_RANK = 3 };

/* The shape and configuration, as plain values for the kernels. */
typedef struct nsa_c_shape {
    int64_t B, S, Hq, Hk, D, G, nc, l, d, ls, n, w;
    double scale;
    int bf16;
} nsa_c_shape;

__device__ __forceinline__ double nsa_ld(const void *p, int bf16, size_t i)
{
    if (bf16) return (double)__uint_as_float((unsigned)((const uint16_t *)p)[i] << 16);
    return (double)((const float *)p)[i];
}

/* compressed blocks visible to query t: those ending at or before t */
__device__ __forceinline__ int64_t nsa_nvis(const nsa_c_shape *s, int64_t t)
{
    if (t + 1 < s->l) return 0;
    const int64_t n = (t + 1 - s->l) / s->d + 1;
    return n < s->nc ? n : s->nc;
}

/* the mean of k (or v) over compressed block j of group g, into out[D]; bf16
 * storage: rounded once to bf16 (via float, nearest even), as the spec's
 * compressed keys and values are bf16 tensors there */
__device__ void nsa_pool(const nsa_c_shape *s, const void *kv, int64_t b, int64_t g, int64_t j, double *out)
{
    for (int64_t c = 0; c < s->D; c++) {
        double a = 0.0;
        for (int64_t u = j * s->d; u < j * s->d + s->l; u++)
            a += nsa_ld(kv, s->bf16, (size_t)(((b * s->S + u) * s->Hk + g) * s->D + c));
        out[c] = a / (double)s->l;
        if (s->bf16 && out[c] == out[c]) {
            unsigned x = __float_as_uint((float)out[c]);
            x += 0x7fffu + ((x >> 16) & 1u);
            out[c] = (double)__uint_as_float(x & 0xffff0000u);
        }
    }
}

/* q row . (key row of k at token u, group g) * scale */
__device__ double nsa_dot_tok(const nsa_c_shape *s, const void *q, size_t qrow, const void *k, int64_t b,
                              int64_t u, int64_t g)
{
    double a = 0.0;
    const size_t kr = (size_t)((b * s->S + u) * s->Hk + g) * (size_t)s->D;
    for (int64_t c = 0; c < s->D; c++)
        a += nsa_ld(q, s->bf16, qrow * (size_t)s->D + (size_t)c) * nsa_ld(k, s->bf16, kr + (size_t)c);
    return a * s->scale;
}

/* whether token u (<= t) is a key of branch x (1 selected, 2 window) for t */
__device__ __forceinline__ int nsa_is_key(const nsa_c_shape *s, int x, const int32_t *srow, int64_t t,
                                          int64_t u)
{
    if (u > t) return 0;
    if (x == 2) return t - u < s->w;
    for (int64_t e = 0; e < s->n && e < NSA_C_MAX_BLOCKS && srow[e] >= 0; e++) /* increasing, -1 padded */
        if (srow[e] == (int32_t)(u / s->ls)) return 1;
    return 0;
}

/* o (D doubles) and lse of branch x (1 selected, 2 window) for query row qrow */
__device__ double nsa_attend_tok(const nsa_c_shape *s, int x, const int32_t *srow, const void *q, size_t qrow,
                                 const void *k, const void *v, int64_t b, int64_t t, int64_t g, double *o)
{
    double m = -INFINITY;
    for (int64_t u = 0; u <= t; u++)
        if (nsa_is_key(s, x, srow, t, u)) m = fmax(m, nsa_dot_tok(s, q, qrow, k, b, u, g));
    double sum = 0.0;
    for (int64_t c = 0; c < s->D; c++) o[c] = 0.0;
    for (int64_t u = 0; u <= t; u++) {
        if (!nsa_is_key(s, x, srow, t, u)) continue;
        const double p = exp(nsa_dot_tok(s, q, qrow, k, b, u, g) - m);
        sum += p;
        for (int64_t c = 0; c < s->D; c++)
            o[c] += p * nsa_ld(v, s->bf16, (size_t)((b * s->S + u) * s->Hk + g) * (size_t)s->D + (size_t)c);
    }
    for (int64_t c = 0; c < s->D; c++) o[c] /= sum;
    return m + log(sum);
}

/* compression branch of query row qrow: o (0 when nothing is visible) and lse */
__device__ double nsa_attend_cmp(const nsa_c_shape *s, const void *q, size_t qrow, const void *k,
                                 const void *v, int64_t b, int64_t t, int64_t g, double *o)
{
    const int64_t nv = nsa_nvis(s, t);
    double kc[NSA_C_MAX_DIM], vc[NSA_C_MAX_DIM];
    for (int64_t c = 0; c < s->D; c++) o[c] = 0.0;
    if (nv == 0) return -INFINITY;
    double m = -INFINITY;
    for (int64_t j = 0; j < nv; j++) {
        nsa_pool(s, k, b, g, j, kc);
        double a = 0.0;
        for (int64_t c = 0; c < s->D; c++) a += nsa_ld(q, s->bf16, qrow * (size_t)s->D + (size_t)c) * kc[c];
        m = fmax(m, a * s->scale);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < nv; j++) {
        nsa_pool(s, k, b, g, j, kc);
        nsa_pool(s, v, b, g, j, vc);
        double a = 0.0;
        for (int64_t c = 0; c < s->D; c++) a += nsa_ld(q, s->bf16, qrow * (size_t)s->D + (size_t)c) * kc[c];
        const double p = exp(a * s->scale - m);
        sum += p;
        for (int64_t c = 0; c < s->D; c++) o[c] += p * vc[c];
    }
    for (int64_t c = 0; c < s->D; c++) o[c] /= sum;
    return m + log(sum);
}

__global__ void nsa_c_fwd_kernel(nsa_c_shape s, const void *q, const void *k, const void *v, const void *gc,
                                 const void *gs, const void *gw, float *out, float *lse, int32_t *sel,
                                 int flaw)
{
    const int64_t it = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (it >= s.B * s.S * s.Hk) return;
    const int64_t g = it % s.Hk, t = (it / s.Hk) % s.S, b = it / (s.Hk * s.S);
    const int64_t cand = t / s.ls + 1, last = t / s.ls, nv = nsa_nvis(&s, t);
    double lz[NSA_C_MAX_GROUP], o[NSA_C_MAX_DIM], kc[NSA_C_MAX_DIM];
    for (int64_t hh = 0; hh < s.G; hh++)
        lz[hh] = nsa_attend_cmp(&s, q, (size_t)((b * s.S + t) * s.Hq + g * s.G + hh), k, v, b, t, g, o);
    /* importance of selection block i: the compression probabilities of the
     * group's heads, of every visible compressed block j overlapping it; the
     * first and the two last blocks always taken. Top n kept while streaming
     * over i (ties to the lower index), so any number of blocks fits. */
    const int64_t want = s.n < cand ? s.n : cand;
    double topv[NSA_C_MAX_BLOCKS];
    int32_t topi[NSA_C_MAX_BLOCKS];
    int64_t nt = 0;
    for (int64_t i = 0; i < cand; i++) {
        double imp = 0.0;
        if (i == 0 || i == last || i + 1 == last) {
            imp = INFINITY;
        } else {
            const int64_t lo = i * s.ls - s.l + 1, jlo = lo > 0 ? (lo + s.d - 1) / s.d : 0;
            int64_t jhi = ((i + 1) * s.ls - 1) / s.d;
            if (jhi > nv - 1) jhi = nv - 1;
            for (int64_t hh = 0; hh < s.G; hh++) {
                const size_t row = (size_t)((b * s.S + t) * s.Hq + g * s.G + hh);
                for (int64_t j = jlo; j <= jhi; j++) {
                    nsa_pool(&s, k, b, g, j, kc);
                    double a = 0.0;
                    for (int64_t c = 0; c < s.D; c++)
                        a += nsa_ld(q, s.bf16, row * (size_t)s.D + (size_t)c) * kc[c];
                    imp += exp(a * s.scale - lz[hh]);
                }
            }
        }
        if (nt == want && !(imp > topv[nt - 1])) continue;
        int64_t p = nt < want ? nt : want - 1;
        for (; p > 0 && imp > topv[p - 1]; p--) topv[p] = topv[p - 1], topi[p] = topi[p - 1];
        topv[p] = imp, topi[p] = (int32_t)i;
        if (nt < want) nt++;
    }
    /* listed in increasing order */
    int32_t srow[NSA_C_MAX_BLOCKS];
    const int64_t ns = nt;
    for (int64_t e = 0; e < ns; e++) {
        int64_t p = e;
        for (; p > 0 && srow[p - 1] > topi[e]; p--) srow[p] = srow[p - 1];
        srow[p] = topi[e];
    }
    for (int64_t e = ns; e < s.n && e < NSA_C_MAX_BLOCKS; e++) srow[e] = -1;
    const size_t srow0 = (size_t)((b * s.S + t) * s.Hk + g) * (size_t)s.n;
    if (sel != NULL) /* NSA_SEL_BY_RANK: the same blocks listed by importance, not in increasing order */
        for (int64_t e = 0; e < s.n; e++)
            sel[srow0 + (size_t)e] = e >= ns ? -1 : flaw == NSA_SEL_BY_RANK ? topi[e] : srow[e];
    /* the three branches, gated */
    double acc[NSA_C_MAX_DIM];
    for (int64_t hh = 0; hh < s.G; hh++) {
        const size_t row = (size_t)((b * s.S + t) * s.Hq + g * s.G + hh);
        const double wc = flaw == NSA_UNGATED_CMP ? 1.0 : nsa_ld(gc, s.bf16, row);
        const double l0 = nsa_attend_cmp(&s, q, row, k, v, b, t, g, o);
        for (int64_t c = 0; c < s.D; c++) acc[c] = wc * o[c];
        const double l1 = nsa_attend_tok(&s, 1, srow, q, row, k, v, b, t, g, o);
        for (int64_t c = 0; c < s.D; c++) acc[c] += nsa_ld(gs, s.bf16, row) * o[c];
        const double l2 = nsa_attend_tok(&s, 2, srow, q, row, k, v, b, t, g, o);
        for (int64_t c = 0; c < s.D; c++)
            out[row * (size_t)s.D + (size_t)c] = (float)(acc[c] + nsa_ld(gw, s.bf16, row) * o[c]);
        if (lse != NULL) {
            lse[row * 3] = (float)l0;
            lse[row * 3 + 1] = (float)l1;
            lse[row * 3 + 2] = (float)l2;
        }
    }
}

/* one thread per query row: dg_x = dout . o_x and dq (p from the saved lse) */
__global__ void nsa_c_dq_kernel(nsa_c_shape s, const void *q, const void *k, const void *v, const void *gc,
                                const void *gs, const void *gw, const void *dout, const float *lse,
                                const int32_t *sel, float *dq, float *dgc, float *dgs, float *dgw)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= s.B * s.S * s.Hq) return;
    const int64_t h = r % s.Hq, t = (r / s.Hq) % s.S, b = r / (s.Hq * s.S), g = h / s.G;
    const size_t row = (size_t)r, D = (size_t)s.D;
    const int32_t *srow = sel + (size_t)((b * s.S + t) * s.Hk + g) * (size_t)s.n;
    double o[NSA_C_MAX_DIM], a[NSA_C_MAX_DIM], kc[NSA_C_MAX_DIM], vc[NSA_C_MAX_DIM];
    for (int64_t c = 0; c < s.D; c++) a[c] = 0.0;
    const void *gate[3] = { gc, gs, gw };
    float *dg[3] = { dgc, dgs, dgw };
    for (int x = 0; x < 3; x++) {
        if (x == 0)
            nsa_attend_cmp(&s, q, row, k, v, b, t, g, o);
        else
            nsa_attend_tok(&s, x, srow, q, row, k, v, b, t, g, o);
        double dgx = 0.0;
        for (int64_t c = 0; c < s.D; c++) dgx += nsa_ld(dout, s.bf16, row * D + (size_t)c) * o[c];
        if (x == 0 && nsa_nvis(&s, t) == 0) dgx = 0.0;
        dg[x][row] = (float)dgx;
        const double gt = nsa_ld(gate[x], s.bf16, row), delta = gt * dgx,
                     lz = (double)lse[row * 3 + (size_t)x];
        const int64_t nkeys = x == 0 ? nsa_nvis(&s, t) : t + 1;
        for (int64_t u = 0; u < nkeys; u++) {
            if (x == 0) {
                nsa_pool(&s, k, b, g, u, kc);
                nsa_pool(&s, v, b, g, u, vc);
            } else {
                if (!nsa_is_key(&s, x, srow, t, u)) continue;
                const size_t kr = (size_t)((b * s.S + u) * s.Hk + g) * D;
                for (int64_t c = 0; c < s.D; c++) {
                    kc[c] = nsa_ld(k, s.bf16, kr + (size_t)c);
                    vc[c] = nsa_ld(v, s.bf16, kr + (size_t)c);
                }
            }
            double sc = 0.0, dp = 0.0;
            for (int64_t c = 0; c < s.D; c++) {
                const double qc = nsa_ld(q, s.bf16, row * D + (size_t)c);
                sc += qc * kc[c];
                dp += gt * nsa_ld(dout, s.bf16, row * D + (size_t)c) * vc[c];
            }
            const double p = exp(sc * s.scale - lz), ds = p * (dp - delta) * s.scale;
            for (int64_t c = 0; c < s.D; c++) a[c] += ds * kc[c];
        }
    }
    for (int64_t c = 0; c < s.D; c++) dq[row * D + (size_t)c] = (float)a[c];
}

/* p and ds of query row 'row' (gate gt, delta, lse lz) against key kr/vr */
__device__ __forceinline__ void nsa_c_pds(const nsa_c_shape *s, const void *q, const void *dout, size_t row,
                                          const double *kr, const double *vr, double gt, double delta,
                                          double lz, double *p, double *ds)
{
    double sc = 0.0, dp = 0.0;
    for (int64_t c = 0; c < s->D; c++) {
        sc += nsa_ld(q, s->bf16, row * (size_t)s->D + (size_t)c) * kr[c];
        dp += gt * nsa_ld(dout, s->bf16, row * (size_t)s->D + (size_t)c) * vr[c];
    }
    *p = exp(sc * s->scale - lz);
    *ds = *p * (dp - delta) * s->scale;
}

/* one thread per key row (b, u, g): dk and dv */
__global__ void nsa_c_dkdv_kernel(nsa_c_shape s, const void *q, const void *k, const void *v, const void *gc,
                                  const void *gs, const void *gw, const void *dout, const float *lse,
                                  const int32_t *sel, const float *dgc, const float *dgs, const float *dgw,
                                  float *dk, float *dv, int flaw)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= s.B * s.S * s.Hk) return;
    const int64_t g = r % s.Hk, u = (r / s.Hk) % s.S, b = r / (s.Hk * s.S);
    const size_t D = (size_t)s.D, kr0 = (size_t)r * D;
    double kr[NSA_C_MAX_DIM], vr[NSA_C_MAX_DIM], ak[NSA_C_MAX_DIM], av[NSA_C_MAX_DIM];
    for (int64_t c = 0; c < s.D; c++) {
        kr[c] = nsa_ld(k, s.bf16, kr0 + (size_t)c);
        vr[c] = nsa_ld(v, s.bf16, kr0 + (size_t)c);
        ak[c] = av[c] = 0.0;
    }
    const void *gate[3] = { gc, gs, gw };
    const float *dg[3] = { dgc, dgs, dgw };
    /* direct keys: selected and window */
    for (int64_t t = u; t < s.S; t++) {
        const int32_t *srow = sel + (size_t)((b * s.S + t) * s.Hk + g) * (size_t)s.n;
        for (int x = 1; x < 3; x++) {
            if (!nsa_is_key(&s, x, srow, t, u)) continue;
            for (int64_t hh = 0; hh < s.G; hh++) {
                const size_t row = (size_t)((b * s.S + t) * s.Hq + g * s.G + hh);
                const double gt = nsa_ld(gate[x], s.bf16, row);
                double p, ds;
                nsa_c_pds(&s, q, dout, row, kr, vr, gt, gt * (double)dg[x][row],
                          (double)lse[row * 3 + (size_t)x], &p, &ds);
                for (int64_t c = 0; c < s.D; c++) {
                    ak[c] += ds * nsa_ld(q, s.bf16, row * D + (size_t)c);
                    av[c] += p * gt * nsa_ld(dout, s.bf16, row * D + (size_t)c);
                }
            }
        }
    }
    /* compressed blocks j containing u: their gradients / l */
    if (flaw != NSA_NO_POOL_GRAD) {
        double kc[NSA_C_MAX_DIM], vc[NSA_C_MAX_DIM];
        const int64_t j0 = u + 1 > s.l ? (u + 1 - s.l + s.d - 1) / s.d : 0;
        for (int64_t j = j0; j <= u / s.d && j < s.nc; j++) {
            nsa_pool(&s, k, b, g, j, kc);
            nsa_pool(&s, v, b, g, j, vc);
            for (int64_t t = j * s.d + s.l - 1; t < s.S; t++)
                for (int64_t hh = 0; hh < s.G; hh++) {
                    const size_t row = (size_t)((b * s.S + t) * s.Hq + g * s.G + hh);
                    const double gt = nsa_ld(gc, s.bf16, row);
                    double p, ds;
                    nsa_c_pds(&s, q, dout, row, kc, vc, gt, gt * (double)dgc[row], (double)lse[row * 3], &p,
                              &ds);
                    for (int64_t c = 0; c < s.D; c++) {
                        ak[c] += ds * nsa_ld(q, s.bf16, row * D + (size_t)c) / (double)s.l;
                        av[c] += p * gt * nsa_ld(dout, s.bf16, row * D + (size_t)c) / (double)s.l;
                    }
                }
        }
    }
    for (int64_t c = 0; c < s.D; c++) {
        dk[kr0 + (size_t)c] = (float)ak[c];
        dv[kr0 + (size_t)c] = (float)av[c];
    }
}

static inline mf_status nsa_c_setup(mf_dtype dtype, const mf_nsa_config *cfg, int64_t B, int64_t S,
                                    int64_t Hq, int64_t Hk, int64_t D, nsa_c_shape *s)
{
    if (cfg == NULL) return MF_ERR_NULL_POINTER;
    if (dtype != MF_DTYPE_F32 && dtype != MF_DTYPE_BF16) return MF_ERR_DTYPE;
    if (B <= 0 || S <= 0 || Hq <= 0 || Hk <= 0 || D <= 0 || D > NSA_C_MAX_DIM || Hq % Hk != 0 ||
        cfg->block_cmp <= 0 || cfg->stride <= 0 || cfg->block_sel <= 0 || cfg->n_sel <= 0 ||
        cfg->window <= 0 || cfg->n_sel > NSA_C_MAX_BLOCKS || Hq / Hk > NSA_C_MAX_GROUP)
        return MF_ERR_INVALID_SIZE;
    s->B = B, s->S = S, s->Hq = Hq, s->Hk = Hk, s->D = D, s->G = Hq / Hk;
    s->l = cfg->block_cmp, s->d = cfg->stride, s->ls = cfg->block_sel, s->n = cfg->n_sel, s->w = cfg->window;
    s->nc = S >= s->l ? (S - s->l) / s->d + 1 : 0;
    s->scale = cfg->scale > 0.0f ? (double)cfg->scale : 1.0 / sqrt((double)D);
    s->bf16 = dtype == MF_DTYPE_BF16;
    return MF_OK;
}

static inline unsigned nsa_c_blocks(int64_t n) { return (unsigned)((n + NSA_C_THREADS - 1) / NSA_C_THREADS); }

static inline mf_status nsa_c_forward(mf_dtype dtype, const mf_nsa_config *cfg, int64_t B, int64_t S,
                                      int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                                      const void *v, const void *gc, const void *gs, const void *gw,
                                      float *out, float *lse, int32_t *sel, int flaw)
{
    nsa_c_shape s;
    if (q == NULL || k == NULL || v == NULL || gc == NULL || gs == NULL || gw == NULL || out == NULL)
        return MF_ERR_NULL_POINTER;
    mf_status st = nsa_c_setup(dtype, cfg, B, S, Hq, Hk, D, &s);
    if (st != MF_OK) return st;
    nsa_c_fwd_kernel<<<nsa_c_blocks(B * S * Hk), NSA_C_THREADS>>>(s, q, k, v, gc, gs, gw, out, lse, sel,
                                                                  flaw);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}

static inline mf_status nsa_c_backward(mf_dtype dtype, const mf_nsa_config *cfg, int64_t B, int64_t S,
                                       int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                                       const void *v, const void *gc, const void *gs, const void *gw,
                                       const void *dout, const float *lse, const int32_t *sel, float *dq,
                                       float *dk, float *dv, float *dgc, float *dgs, float *dgw, int flaw)
{
    nsa_c_shape s;
    if (q == NULL || k == NULL || v == NULL || gc == NULL || gs == NULL || gw == NULL || dout == NULL ||
        lse == NULL || sel == NULL || dq == NULL || dk == NULL || dv == NULL || dgc == NULL || dgs == NULL ||
        dgw == NULL)
        return MF_ERR_NULL_POINTER;
    mf_status st = nsa_c_setup(dtype, cfg, B, S, Hq, Hk, D, &s);
    if (st != MF_OK) return st;
    nsa_c_dq_kernel<<<nsa_c_blocks(B * S * Hq), NSA_C_THREADS>>>(s, q, k, v, gc, gs, gw, dout, lse, sel, dq,
                                                                 dgc, dgs, dgw);
    if (cudaGetLastError() != cudaSuccess) return MF_ERR_BACKEND;
    /* same stream: the gate gradients (deltas) are written before dk/dv read them */
    nsa_c_dkdv_kernel<<<nsa_c_blocks(B * S * Hk), NSA_C_THREADS>>>(s, q, k, v, gc, gs, gw, dout, lse, sel,
                                                                   dgc, dgs, dgw, dk, dv, flaw);
    return cudaGetLastError() == cudaSuccess ? MF_OK : MF_ERR_BACKEND;
}

#define NSA_FWD_SIGNATURE                                                                                    \
    mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk, \
        int64_t D, const void *q, const void *k, const void *v, const void *g_cmp, const void *g_slc,        \
        const void *g_win, float *out, float *lse, int32_t *sel
#define NSA_BWD_SIGNATURE                                                                                    \
    mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk, \
        int64_t D, const void *q, const void *k, const void *v, const void *g_cmp, const void *g_slc,        \
        const void *g_win, const void *dout, const float *lse, const int32_t *sel, float *dq, float *dk,     \
        float *dv, float *dg_cmp, float *dg_slc, float *dg_win

#endif
