/* Reference native sparse attention: the executable specification of the nsa fix.
 *
 * Source: seed document 001_8c71c68d431e0a4d.txt (NSA M7C memory diagnostic):
 * l=32, d=16, l'=64, n=16, w=512, phi = "avg"; the selected branch was
 * "standard SDPA with block gathering" and the O(S^2) attention elements per
 * head made sequence 4096 run out of memory. This file computes NSA that way:
 * each of the three branches as dense masked attention over the whole
 * sequence, in double precision, with the score matrices of every head held
 * at once through the context's host scratch allocator:
 *   compression scores  B*Hq x S x nc   (nc ~ S/d)
 *   selected scores     B*Hq x S x S    (masked to the selected blocks)
 *   sliding scores      B*Hq x S x S    (masked to the window)
 *   block importances   B*Hk x S x nb, the selection mask B*Hk x S x nb,
 *   compressed k and v  B*Hk x nc x D each, and one row's mask (S bytes)
 * (mf_ref_nsa_forward_scratch_bytes in include/memfix/nsa.h, exact).
 * The math, as include/memfix/nsa.h states it (NSA paper, arXiv 2502.11089,
 * equations 7-10):
 *   kc[j] = mean(k[j*d .. j*d+l-1]), vc likewise (bf16 storage: rounded once to
 *   bf16, see step 1); query t sees j iff j*d+l-1 <= t
 *   pc = softmax(scale q kc^T) over the visible j; o_cmp = pc vc (0 when none)
 *   imp[t,i] = sum over the group's heads and the visible j overlapping block i of pc
 *   selected: blocks 0, t/l', t/l'-1 forced, then the top n by imp among the
 *   blocks with i*l' <= t (ties to the lower index); o_slc = softmax over the
 *   selected blocks' tokens s <= t; o_win = softmax over s in (t-w, t]
 *   o = g_cmp o_cmp + g_slc o_slc + g_win o_win
 */
#include "memfix/nsa.h"

#include "mf_internal.h"

#include <math.h>
#include <stdint.h>

/* Element e of a q/k/v/gate buffer of 'dtype', widened to double (exact). */
static double ld(const void *base, mf_dtype dtype, size_t e)
{
    if (dtype == MF_DTYPE_BF16) return (double)mf_bf16_to_f32(((const uint16_t *)base)[e]);
    return (double)((const float *)base)[e];
}

/* In-place masked softmax of one row of n scores: entries with mask 0 become
 * exactly 0. Returns the row's lse (-inf when nothing is visible, the row
 * then all 0: an empty branch contributes 0). A NaN score makes the row NaN. */
static double softmax_row(double *row, const unsigned char *mask, size_t n)
{
    double m = -INFINITY;
    int any = 0;
    for (size_t j = 0; j < n; j++)
        if (mask[j]) {
            any = 1;
            if (isnan(row[j]) || row[j] > m) m = row[j];
        }
    if (!any) {
        for (size_t j = 0; j < n; j++) row[j] = 0.0;
        return -INFINITY;
    }
    double sum = 0.0;
    for (size_t j = 0; j < n; j++)
        if (mask[j]) sum += exp(row[j] - m);
    for (size_t j = 0; j < n; j++) row[j] = mask[j] ? exp(row[j] - m) / sum : 0.0;
    return m + log(sum);
}

/* Gradients of the backward pass (NULL in the forward). */
typedef struct grads {
    const void *dout;
    float *dq, *dk, *dv, *dg_cmp, *dg_slc, *dg_win;
} grads;

static mf_status backward_pass(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                               int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                               const void *v, const void *g_cmp, const void *g_slc, const void *g_win,
                               const double *pc, const double *ps, const double *pw, const double *kc,
                               const double *vc, const grads *gr);

/* The dense branches (steps 1-4), then the gated sum (forward) or the
 * backward (gr != NULL). */
static mf_status nsa_dense(const char *func, mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg,
                           int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q,
                           const void *k, const void *v, const void *g_cmp, const void *g_slc,
                           const void *g_win, float *out, float *lse, int32_t *sel, const grads *gr)
{
    MF_TRY(mf_nsa_validate(func, dtype, cfg, B, S, Hq, Hk, D));
    const size_t need = mf_ref_nsa_forward_scratch_bytes(cfg, B, S, Hq, Hk, D);
    if (need == SIZE_MAX ||
        (gr != NULL && mf_ref_nsa_backward_scratch_bytes(cfg, B, S, Hq, Hk, D) == SIZE_MAX))
        MF_FAIL(MF_ERR_OVERFLOW,
                "the reference's dense scratch (8*B*Hq*S*(nc+2S) + ...) overflows size_t "
                "(B=%lld S=%lld Hq=%lld)",
                (long long)B, (long long)S, (long long)Hq);

    const size_t b_n = (size_t)B, s_n = (size_t)S, hq = (size_t)Hq, hk = (size_t)Hk, d_n = (size_t)D;
    const size_t grp = hq / hk;
    const size_t l = (size_t)cfg->block_cmp, st = (size_t)cfg->stride, ls = (size_t)cfg->block_sel;
    const size_t nsel = (size_t)cfg->n_sel, w = (size_t)cfg->window;
    const size_t nc = (size_t)mf_nsa_n_compressed(cfg, S), nb = (size_t)mf_nsa_n_selection(cfg, S);
    const double scale = cfg->scale > 0.0f ? (double)cfg->scale : 1.0 / sqrt((double)D);

    /* One host scratch block, carved: the broken code's dense intermediates. */
    unsigned char *base = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST, need, (void **)&base));
    double *pc = (double *)base;                                       /* B*Hq x S x nc */
    double *ps = pc + b_n * hq * s_n * nc;                             /* B*Hq x S x S  */
    double *pw = ps + b_n * hq * s_n * s_n;                            /* B*Hq x S x S  */
    double *imp = pw + b_n * hq * s_n * s_n;                           /* B*Hk x S x nb */
    double *kc = imp + b_n * hk * s_n * nb;                            /* B*Hk x nc x D */
    double *vc = kc + b_n * hk * nc * d_n;                             /* B*Hk x nc x D */
    unsigned char *selm = (unsigned char *)(vc + b_n * hk * nc * d_n); /* B*Hk x S x nb */
    unsigned char *mask = selm + b_n * hk * s_n * nb;                  /* one row's mask, S >= nc entries */

#define Q_AT(b, t, h, c) ld(q, dtype, (((b)*s_n + (t)) * hq + (h)) * d_n + (c))
#define K_AT(b, t, g, c) ld(k, dtype, (((b)*s_n + (t)) * hk + (g)) * d_n + (c))
#define V_AT(b, t, g, c) ld(v, dtype, (((b)*s_n + (t)) * hk + (g)) * d_n + (c))

    /* 1. compressed keys and values: mean pooling (phi = avg), the sum in
     *    double in the order s = j*d .. j*d+l-1, divided by l in double.
     *    bf16 storage: kc and vc are then rounded once to bf16
     *    (mf_bf16_from_f64: double -> float -> bf16, nearest even). bf16
     *    storage means every tensor the model holds is bf16, the compressed
     *    ones included: the seed's BF16 model ran its "Compressed Branch: Uses
     *    Flash Attention for pooled sequences", and FlashAttention takes only
     *    fp16/bf16 inputs, so its pooled keys and values were bf16 tensors (fla's
     *    native-sparse-attention mean pooling also returns the input dtype).
     *    Accumulation stays double. The backward treats the rounding as the
     *    identity (straight-through: dkc reaches dk through the mean unchanged). */
    for (size_t b = 0; b < b_n; b++)
        for (size_t g = 0; g < hk; g++)
            for (size_t j = 0; j < nc; j++)
                for (size_t c = 0; c < d_n; c++) {
                    double sk = 0.0, sv = 0.0;
                    for (size_t s = j * st; s < j * st + l; s++) {
                        sk += K_AT(b, s, g, c);
                        sv += V_AT(b, s, g, c);
                    }
                    double mk = sk / (double)l, mv = sv / (double)l;
                    if (dtype == MF_DTYPE_BF16) {
                        mk = mf_bf16_bits_to_f64(mf_bf16_from_f64(mk));
                        mv = mf_bf16_bits_to_f64(mf_bf16_from_f64(mv));
                    }
                    kc[((b * hk + g) * nc + j) * d_n + c] = mk;
                    vc[((b * hk + g) * nc + j) * d_n + c] = mv;
                }

    /* 2. compression branch: the S x nc scores of every head, masked softmax */
    for (size_t b = 0; b < b_n; b++)
        for (size_t h = 0; h < hq; h++) {
            const size_t g = h / grp;
            for (size_t t = 0; t < s_n; t++) {
                double *row = pc + ((b * hq + h) * s_n + t) * nc;
                for (size_t j = 0; j < nc; j++) {
                    double acc = 0.0;
                    for (size_t c = 0; c < d_n; c++)
                        acc += Q_AT(b, t, h, c) * kc[((b * hk + g) * nc + j) * d_n + c];
                    row[j] = acc * scale;
                    mask[j] = (unsigned char)(j * st + l - 1 <= t);
                }
                const double lz = softmax_row(row, mask, nc);
                if (lse != NULL) lse[((b * s_n + t) * hq + h) * 3 + 0] = (float)lz;
            }
        }

    /* 3. block importances and the top-n selection, per query and KV group */
    for (size_t b = 0; b < b_n; b++)
        for (size_t g = 0; g < hk; g++)
            for (size_t t = 0; t < s_n; t++) {
                double *ir = imp + ((b * hk + g) * s_n + t) * nb;
                unsigned char *sr = selm + ((b * hk + g) * s_n + t) * nb;
                for (size_t i = 0; i < nb; i++) {
                    double acc = 0.0;
                    for (size_t h = g * grp; h < (g + 1) * grp; h++)
                        for (size_t j = 0; j < nc; j++)
                            if (j * st < (i + 1) * ls && j * st + l > i * ls)
                                acc += pc[((b * hq + h) * s_n + t) * nc + j]; /* 0 where not visible */
                    ir[i] = acc;
                    sr[i] = 0;
                }
                const size_t cand = t / ls + 1; /* blocks i with i*l' <= t */
                for (size_t i = 0; i < cand; i++)
                    if (i == 0 || i == t / ls || i + 1 == t / ls) ir[i] = INFINITY;
                /* rank: i is selected iff fewer than n candidates beat it */
                for (size_t i = 0; i < cand; i++) {
                    size_t beat = 0;
                    for (size_t i2 = 0; i2 < cand; i2++)
                        if (ir[i2] > ir[i] || (ir[i2] == ir[i] && i2 < i)) beat++;
                    sr[i] = (unsigned char)(beat < nsel);
                }
                if (sel != NULL) {
                    int32_t *so = sel + ((b * s_n + t) * hk + g) * nsel;
                    size_t o = 0;
                    for (size_t i = 0; i < cand; i++)
                        if (sr[i]) so[o++] = (int32_t)i;
                    while (o < nsel) so[o++] = -1;
                }
            }

    /* 4. selected and sliding branches: dense S x S scores per head, masked */
    for (size_t b = 0; b < b_n; b++)
        for (size_t h = 0; h < hq; h++) {
            const size_t g = h / grp;
            for (size_t t = 0; t < s_n; t++) {
                double *rs = ps + ((b * hq + h) * s_n + t) * s_n;
                double *rw = pw + ((b * hq + h) * s_n + t) * s_n;
                const unsigned char *sr = selm + ((b * hk + g) * s_n + t) * nb;
                for (size_t s = 0; s < s_n; s++) {
                    double acc = 0.0;
                    for (size_t c = 0; c < d_n; c++) acc += Q_AT(b, t, h, c) * K_AT(b, s, g, c);
                    rs[s] = rw[s] = acc * scale;
                    mask[s] = (unsigned char)(s <= t && sr[s / ls]);
                }
                const double l_s = softmax_row(rs, mask, s_n);
                for (size_t s = 0; s < s_n; s++) mask[s] = (unsigned char)(s <= t && s + w > t);
                const double l_w = softmax_row(rw, mask, s_n);
                if (lse != NULL) {
                    lse[((b * s_n + t) * hq + h) * 3 + 1] = (float)l_s;
                    lse[((b * s_n + t) * hq + h) * 3 + 2] = (float)l_w;
                }
            }
        }

    if (gr != NULL) {
        const mf_status bs = backward_pass(ctx, dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, pc,
                                           ps, pw, kc, vc, gr);
        mf_scratch_free(ctx, MF_MEM_HOST, base);
        return bs;
    }
    /* 5. the gated sum of the three branch outputs */
    for (size_t b = 0; b < b_n; b++)
        for (size_t t = 0; t < s_n; t++)
            for (size_t h = 0; h < hq; h++) {
                const size_t g = h / grp, row = (b * s_n + t) * hq + h;
                const double gc = ld(g_cmp, dtype, row), gs = ld(g_slc, dtype, row),
                             gw = ld(g_win, dtype, row);
                const double *rc = pc + ((b * hq + h) * s_n + t) * nc;
                const double *rs = ps + ((b * hq + h) * s_n + t) * s_n;
                const double *rw = pw + ((b * hq + h) * s_n + t) * s_n;
                for (size_t c = 0; c < d_n; c++) {
                    double oc = 0.0, os = 0.0, ow = 0.0;
                    for (size_t j = 0; j < nc; j++) oc += rc[j] * vc[((b * hk + g) * nc + j) * d_n + c];
                    for (size_t s = 0; s < s_n; s++) {
                        const double vv = V_AT(b, s, g, c);
                        os += rs[s] * vv;
                        ow += rw[s] * vv;
                    }
                    out[row * d_n + c] = (float)(gc * oc + gs * os + gw * ow);
                }
            }
#undef Q_AT
#undef K_AT
#undef V_AT
    mf_scratch_free(ctx, MF_MEM_HOST, base);
    return MF_OK;
}

mf_status mf_ref_nsa_forward(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B, int64_t S,
                             int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k, const void *v,
                             const void *g_cmp, const void *g_slc, const void *g_win, float *out, float *lse,
                             int32_t *sel)
{
    MF_CHECK_ALL_NOT_NULL(ctx, q, k, v, g_cmp, g_slc, g_win, out);
    return nsa_dense(__func__, ctx, dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, out, lse, sel,
                     NULL);
}

/* Backward (what autograd does through the three masked softmaxes and the
 * mean pooling; the selection is a constant). Per head h, query t, branch x
 * with probabilities p_x, keys K_x and values V_x (kc/vc for the compression
 * branch), upstream do_x = g_x[t] dout[t]:
 *   dg_x[t]   = dout[t] . o_x[t]
 *   dV_x[s]  += p_x[t,s] do_x
 *   ds[t,s]   = p_x[t,s] (do_x . V_x[s] - do_x . o_x[t])
 *   dq[t]    += scale sum_s ds[t,s] K_x[s];   dK_x[s] += scale ds[t,s] q[t]
 *   dk[s]    += dkc[j] / l for s in [j*d, j*d+l) (the mean pooling), dv likewise.
 * It recomputes the dense forward matrices (mf_ref_nsa_forward's scratch) and
 * holds double accumulators: mf_ref_nsa_backward_scratch_bytes. */
mf_status mf_ref_nsa_backward(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B, int64_t S,
                              int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k, const void *v,
                              const void *g_cmp, const void *g_slc, const void *g_win, const void *dout,
                              float *dq, float *dk, float *dv, float *dg_cmp, float *dg_slc, float *dg_win)
{
    MF_CHECK_ALL_NOT_NULL(ctx, q, k, v, g_cmp, g_slc, g_win, dout, dq, dk, dv, dg_cmp, dg_slc, dg_win);
    const grads gr = { dout, dq, dk, dv, dg_cmp, dg_slc, dg_win };
    return nsa_dense(__func__, ctx, dtype, cfg, B, S, Hq, Hk, D, q, k, v, g_cmp, g_slc, g_win, NULL, NULL,
                     NULL, &gr);
}

/* One branch's backward for one (b, h, t): keys/values through kat/vat. */
static void branch_backward(const double *prow, size_t n, const double *qrow, const double *dox, size_t d_n,
                            double scale, const double *keys, const double *vals, size_t kv_stride,
                            double *dkeys, double *dvals, double *dqrow, double *orow, double *dg)
{
    for (size_t c = 0; c < d_n; c++) orow[c] = 0.0;
    for (size_t s = 0; s < n; s++)
        if (prow[s] != 0.0)
            for (size_t c = 0; c < d_n; c++) orow[c] += prow[s] * vals[s * kv_stride + c];
    double delta = 0.0;
    for (size_t c = 0; c < d_n; c++) delta += dox[c] * orow[c];
    *dg = delta; /* dout . o_x when dox = dout (the caller scales) */
    for (size_t s = 0; s < n; s++) {
        if (prow[s] == 0.0) continue; /* masked: p = 0, ds = 0 (masked_fill's backward) */
        double dp = 0.0;
        for (size_t c = 0; c < d_n; c++) dp += dox[c] * vals[s * kv_stride + c];
        const double ds = prow[s] * (dp - delta) * scale;
        for (size_t c = 0; c < d_n; c++) {
            dvals[s * kv_stride + c] += prow[s] * dox[c];
            dqrow[c] += ds * keys[s * kv_stride + c];
            dkeys[s * kv_stride + c] += ds * qrow[c];
        }
    }
}

static mf_status backward_pass(mf_context *ctx, mf_dtype dtype, const mf_nsa_config *cfg, int64_t B,
                               int64_t S, int64_t Hq, int64_t Hk, int64_t D, const void *q, const void *k,
                               const void *v, const void *g_cmp, const void *g_slc, const void *g_win,
                               const double *pc, const double *ps, const double *pw, const double *kc,
                               const double *vc, const grads *gr)
{
    const size_t b_n = (size_t)B, s_n = (size_t)S, hq = (size_t)Hq, hk = (size_t)Hk, d_n = (size_t)D;
    const size_t grp = hq / hk, l = (size_t)cfg->block_cmp, st = (size_t)cfg->stride;
    const size_t nc = (size_t)mf_nsa_n_compressed(cfg, S);
    const double scale = cfg->scale > 0.0f ? (double)cfg->scale : 1.0 / sqrt((double)D);
    /* double copies of k, v and the accumulators dk, dv, dkc, dvc, plus q/dout/o/dq rows */
    const size_t nkv = b_n * s_n * hk * d_n, ncd = b_n * hk * nc * d_n;
    double *w = NULL;
    MF_TRY(mf_scratch_alloc(ctx, MF_MEM_HOST,
                            mf_ref_nsa_backward_scratch_bytes(cfg, B, S, Hq, Hk, D) -
                                mf_ref_nsa_forward_scratch_bytes(cfg, B, S, Hq, Hk, D),
                            (void **)&w));
    double *kd = w, *vd = kd + nkv, *dkd = vd + nkv, *dvd = dkd + nkv, *dkc = dvd + nkv, *dvc = dkc + ncd;
    double *qrow = dvc + ncd, *dox = qrow + d_n, *orow = dox + d_n, *dqrow = orow + d_n;
    for (size_t e = 0; e < nkv; e++) {
        kd[e] = ld(k, dtype, e);
        vd[e] = ld(v, dtype, e);
        dkd[e] = dvd[e] = 0.0;
    }
    for (size_t e = 0; e < ncd; e++) dkc[e] = dvc[e] = 0.0;
    const size_t kvs = hk * d_n; /* token stride of k/v */
    for (size_t b = 0; b < b_n; b++)
        for (size_t h = 0; h < hq; h++) {
            const size_t g = h / grp;
            for (size_t t = 0; t < s_n; t++) {
                const size_t row = (b * s_n + t) * hq + h;
                for (size_t c = 0; c < d_n; c++) {
                    qrow[c] = ld(q, dtype, row * d_n + c);
                    dqrow[c] = 0.0;
                }
                const double gate[3] = { ld(g_cmp, dtype, row), ld(g_slc, dtype, row),
                                         ld(g_win, dtype, row) };
                float *dg[3] = { gr->dg_cmp, gr->dg_slc, gr->dg_win };
                for (int x = 0; x < 3; x++) {
                    for (size_t c = 0; c < d_n; c++) dox[c] = gate[x] * ld(gr->dout, dtype, row * d_n + c);
                    double dgx = 0.0;
                    if (x == 0) {
                        if (nc > 0)
                            branch_backward(pc + ((b * hq + h) * s_n + t) * nc, nc, qrow, dox, d_n, scale,
                                            kc + (b * hk + g) * nc * d_n, vc + (b * hk + g) * nc * d_n, d_n,
                                            dkc + (b * hk + g) * nc * d_n, dvc + (b * hk + g) * nc * d_n,
                                            dqrow, orow, &dgx);
                    } else {
                        const double *prow = (x == 1 ? ps : pw) + ((b * hq + h) * s_n + t) * s_n;
                        const size_t off = b * s_n * kvs + g * d_n;
                        branch_backward(prow, s_n, qrow, dox, d_n, scale, kd + off, vd + off, kvs, dkd + off,
                                        dvd + off, dqrow, orow, &dgx);
                    }
                    /* dox = g dout, so dox . o = g (dout . o): divide the gate back out */
                    double dgv = 0.0;
                    if (x != 0 || nc > 0)
                        for (size_t c = 0; c < d_n; c++) dgv += ld(gr->dout, dtype, row * d_n + c) * orow[c];
                    dg[x][row] = (float)dgv;
                }
                for (size_t c = 0; c < d_n; c++) gr->dq[row * d_n + c] = (float)dqrow[c];
            }
        }
    /* the mean pooling's backward: each compressed block spreads 1/l to its tokens */
    for (size_t b = 0; b < b_n; b++)
        for (size_t g = 0; g < hk; g++)
            for (size_t j = 0; j < nc; j++)
                for (size_t s = j * st; s < j * st + l; s++)
                    for (size_t c = 0; c < d_n; c++) {
                        const size_t at = ((b * s_n + s) * hk + g) * d_n + c;
                        dkd[at] += dkc[((b * hk + g) * nc + j) * d_n + c] / (double)l;
                        dvd[at] += dvc[((b * hk + g) * nc + j) * d_n + c] / (double)l;
                    }
    for (size_t e = 0; e < nkv; e++) {
        gr->dk[e] = (float)dkd[e];
        gr->dv[e] = (float)dvd[e];
    }
    mf_scratch_free(ctx, MF_MEM_HOST, w);
    return MF_OK;
}
