/* The tolerance table: the ONE place where numerical tolerances live.
 *
 * Each row: name "<op>.<what>.<dtype>", atol, rtol, nmse bound, and a one-line
 * justification. A comparison passes iff the NaN/Inf pattern matches, every
 * |got-ref| <= atol + rtol*|ref|, and sum (got-ref)^2 / sum ref^2 <= nmse.
 * Justify from the arithmetic (accumulation length, storage precision, the
 * reference's double accumulation), never from "it passed". Widening a row
 * until a failing test passes is a defect. */
#include "mf_internal.h"
#include "memfix/check.h"

#include <string.h>

static const mf_tolerance mf_tolerances[] = {
    /* ---- harness self-tests (tests/unit/test_harness*.c) ------------------ */
    {"selftest.f32", 1e-5, 1e-4, 1e-8,
     "harness self-test only: fp32 storage of values computed exactly in double, a few ulps of slack"},
    {"selftest.exact", 0.0, 0.0, 0.0,
     "harness self-test only: bit-exact expectations (copies, fills)"},

    /* ---- op rows: op helpers insert their rows below, one per line group ----
     * {"<op>.<what>.<dtype>", atol, rtol, nmse, "one-line justification"},   */
    {"matmul.out.f32", 1e-3, 1e-5, 1e-10,
     "fp32 sum of K products vs double: err ~ sqrt(K)*u*max|partial sum| = 64*6e-8*64 = 2.4e-4 at K=4096, inputs in [-1,1) (measured <= 1.3e-4); atol = 4x that, while one lost product costs ~|a*b| ~ 0.25"},
    {"matmul.out.bf16", 1e-3, 1e-5, 1e-10,
     "bf16 x bf16 products are exact in fp32 (8+8 bit mantissas), so only the fp32 sum of K terms errs: same K*u bound as matmul.out.f32"},
    {"matmul.torch.f32", 1e-12, 2.4e-7, 1e-13,
     "reference (double sum) vs torch.matmul float64, both rounded to fp32: at most 1-2 ulp (2^-23) where the double sums straddle a rounding boundary"},
    {"rope.out.f32", 1e-6, 1e-6, 1e-12,
     "double angle, cos/sin rounded once to fp32 (2^-24 rel), 2 fp32 products + 1 sum: <= 4*2^-24*(|x0|+|x1|) + ref rounding ~ 4.8e-7 for |x| < 1 at any position; an fp32 angle errs ~4e-6 at p = 64"},
    {"rope.out.bf16", 1e-6, 4e-3, 1.6e-5,
     "the fp32 result (rope.out.f32) rounded to bf16: <= 2^-8*|y| (8 significant bits) plus the fp32 math error; nmse <= (2^-8)^2"},
    {"rope.torch.f32", 1e-12, 2.4e-7, 1e-13,
     "reference (double tables) vs the HF rotary code run by torch in float64, both rounded to fp32: 1-2 ulp (2^-23) where the doubles straddle a rounding boundary"},
    {"rope.roundtrip.f32", 2e-6, 1e-6, 4e-12,
     "backward(forward(x)) vs x: two fp32 rotations, each within rope.out.f32's 4*2^-24*(|x0|+|x1|) with |x|, |y| < sqrt(2)"},
    {"cross_entropy.loss.f32", 2e-6, 2e-6, 1e-11,
     "fp32 logits (D-term fp32 dot, ~1e-7), fp32 max/exp/log over V and a row loss ~ lse ~ log V < 10: a few ulp of 10 (~1e-6); the final sum is double"},
    {"cross_entropy.loss.bf16", 2e-6, 2e-6, 1e-11,
     "same as loss.f32: bf16 inputs are widened exactly and the logits tile, softmax and loss stay fp32 (only the gradient tile is narrowed)"},
    {"cross_entropy.grad.f32", 2e-6, 1e-4, 1e-10,
     "p = exp(s - lse) with lse rounded to fp32 (2 ulp of lse <= 10: 1.9e-6 rel), so sum_j |dG| <= |g|*1.9e-6; times max|W| <= 0.5, |g| <= 1.5: 1.4e-6; rtol: fp32 sums over V or N"},
    {"cross_entropy.grad.bf16", 6e-3, 8e-3, 2e-5,
     "dL/dz narrowed to bf16 (u = 2^-8) for the bf16 GEMMs: |err| <= u * sum |G||x|, dominated by the target term |g| <= 1.5 with |x| <= 1 (5.9e-3); rtol 2u; nmse ~ u^2/3 = 5e-6, x4 for partial cancellation"},
    {"cross_entropy.torch.f32", 1e-9, 2.4e-7, 1e-13,
     "reference (double) vs the seed's F.cross_entropy + autograd in torch float64, both rounded to fp32: 1-2 ulp (2^-23) where the doubles straddle a rounding boundary"},
    {"npt.forward.f32", 1e-5, 1e-5, 1e-10,
     "fp32 sums over K <= d_model + rank ~ 125 terms, partial sums up to ~8: sqrt(K)*u*max|partial| = 11*6e-8*8 ~ 5e-6 (measured <= 1.2e-6); the reference's fp32 delta_w adds < 1e-7"},
    {"npt.forward.bf16", 2e-2, 8e-3, 1e-4,
     "v = (h.A)*m and the partial v.B output are rounded to bf16 (u = 2^-8) before h.W is added, then the output: 2u*|ref| + u*sqrt(rank)*rms(v_j B_jf) ~ 1e-2 at rank 64 (measured 1.6e-2 at |ref| ~ 5); nmse ~ (2u)^2/3 = 2e-5"},
    {"npt.backward.f32", 1e-5, 1e-5, 1e-10,
     "fp32 sums over K <= d_ffn + rank, or over <= 24 tokens: same sqrt(K)*u*max|partial| ~ 5e-6 bound as npt.forward.f32 (measured <= 9.6e-7)"},
    {"npt.backward.bf16", 3e-2, 8e-3, 1e-4,
     "p = gB*m and q = u*m rounded to bf16 (u = 2^-8) feed grad_h/A/B; the partial p.A^T is rounded before g.W^T is added; outputs rounded once: 2u*|ref| + u*sqrt(K)*rms(term) (measured 3.1e-2 at |ref| ~ 5.5, within 48% of the bound)"},
    {"npt.torch.f32", 1e-6, 2.4e-7, 1e-12,
     "reference vs torch float64 (seed 004 einsum and factored graphs) rounded to fp32: <= 2 ulp (2^-22) plus the reference's fp32 storage of delta_w/G (2^-24 each) summed over <= D*F = 234 terms"},
    {"npt.torch.bf16", 1e-6, 3.91e-3, 1.6e-5,
     "reference rounds each output once to bf16 (u = 2^-8 = 3.906e-3 relative) vs torch float64 kept in fp32; nmse <= u^2 = 1.5e-5"},
    {"attention.torch.f32", 1e-12, 2.4e-7, 1e-13,
     "reference (double) vs the seed's standard_attention + autograd in torch float64, both rounded to fp32: 1-2 ulp (2^-23) where the doubles straddle a rounding boundary"},
    {"nsa.torch.f32", 1e-12, 2.4e-7, 1e-13,
     "reference (double, dense masked branches) vs NSA's equations + autograd in torch float64, both rounded to fp32: 1-2 ulp (2^-23) where the doubles straddle a rounding boundary"},
    {"linear_attention.torch.f32", 1e-12, 2.4e-7, 1e-13,
     "reference (double cumsum) vs the seed's linear_attention_* + autograd in torch float64, both rounded to fp32: 1-2 ulp (2^-23) where the doubles straddle a rounding boundary"},
    {"attention.out.f32", 2e-6, 1e-5, 1e-11,
     "fp32 scores (D-term dot, |q|,|k| < 1.5) and expf (2 ulp) give p a relative error ~ sqrt(D)*u*|s| + 2u ~ 2e-6 at D=128; out = sum_j p v with |v| < 1 (measured <= 2.7e-7, nmse <= 2e-13)"},
    {"attention.lse.f32", 2e-6, 2e-6, 1e-12,
     "lse = m + logf(l): the score error (~sqrt(D)*u*|s|) plus ~3 ulp of |lse| <= log N + max|s| (measured <= 1.2e-7)"},
    {"attention.grad.f32", 5e-6, 1e-5, 1e-10,
     "p recomputed from fp32 scores and the stored fp32 lse (rel ~2e-6 at D=128), ds = p (dp - Delta) with fp32 D-/Dv-term dots, summed over N tiles in fp32; entries cancel to ~0 so atol dominates (measured <= 1e-6, nmse <= 2e-13)"},
    {"nsa.out.f32", 2e-6, 1e-5, 1e-11,
     "fp32 online softmax per branch (scores |s| <= D*1.5^2*scale ~ 18 at D=64: exp relative error ~ |s|*2^-24 ~ 1e-6) and fp32 sums over <= w or n*l' keys, three gated outputs each <= 1 in magnitude: 1e-5 relative, 2e-6 absolute as attention.out.f32; selection identical (forced blocks, importance gaps >> fp32 error)"},
    {"nsa.lse.f32", 2e-6, 2e-6, 1e-12,
     "lse = m + log(l) in fp32 per branch, |lse| <= ~20: a few ulp (2^-24) relative, as attention.lse.f32"},
    {"nsa.out.bf16", 2e-6, 1e-5, 1e-11,
     "bf16 storage of q, k, v and the gates only: widened exactly to fp32, the same fp32 arithmetic and fp32 output as nsa.out.f32, so the same bound"},
    {"nsa.lse.bf16", 2e-6, 2e-6, 1e-12,
     "bf16 inputs widened exactly; lse in fp32: same bound as nsa.lse.f32"},
    {"nsa.grad.f32", 5e-6, 1e-5, 1e-10,
     "fp32 p recomputed from the fp32 lse (|s| ~ 18: exp relative error ~ 2e-6), ds and dq sums over <= w + n*l' keys, dk/dv summed by atomicAdd over the queries that see a key (order-dependent rounding, sqrt(S)*2^-24 relative): as attention.grad.f32"},
    {"nsa.grad.bf16", 5e-6, 1e-5, 1e-10,
     "bf16 inputs widened exactly; the fp32 arithmetic of nsa.grad.f32, gradients stored fp32: same bound"},
    {"linear_attention.out.f32", 2e-6, 1e-5, 1e-11,
     "out = num/den with num, den fp32 sums of N*D positive-weighted terms (phi > 0): a weighted mean of v (|v| < 1), rel err ~ (D + log N) u on each (measured <= 3.3e-7)"},
    {"linear_attention.grad.f32", 1e-6, 1e-5, 1e-10,
     "fp32 recomputation of the states and C x C products: dq = S dnum + dd z and dk = G v + g subtract terms of size |dout|/den ~ 0.1-1, so atol ~ 10 u covers the cancellations (measured <= 6e-7); dk, dv given a final-state gradient: grad_state"},
    {"linear_attention.grad_state.f32", 5e-6, 1e-5, 1e-10,
     "dk, dv given a final-state gradient: dv = G k', dk = dphi (G v + g), G, g carry dS_N, dz_N (|.| <= 0.5, not divided by den): D- (Dv-) term fp32 dots of terms rms s = 0.39 cancelling to ~0, err rms ~ u s D/sqrt(6) = 1.2e-6 at D = 128, linear in D (measured 1.0e-6); atol 4x"},
    {"linear_attention.grad_degenerate.f32", 1e-6, 0.0, 1e30,
     "dq, dk where mathematically ~0 (N = 1: out = v q'.k'/(q'.k'+eps); dq at D = 1: q' cancels from num/den): the reference holds eps-level values (~1e-9), nmse is undefined; only |err| <= grad's atol is checked"},
    {"linear_attention.state.f32", 1e-5, 1e-5, 1e-11,
     "S_N = S0 + sum_n k'_n v_n^T in fp32: N terms |k' v| <= 2.5 with both signs cancel, so |err| ~ N u 2.5 ~ 1e-5 at N = 64 (measured 3.3e-6 at N = 50); z_N sums positive terms (rtol)"},
    {"attention.out.bf16", 2e-6, 1e-5, 1e-11,
     "bf16 storage of q, k, v, dout only: widened exactly to fp32, the same fp32 arithmetic and fp32 outputs as attention.out.f32, so the same bound"},
    {"attention.lse.bf16", 2e-6, 2e-6, 1e-12,
     "bf16 inputs widened exactly; lse computed and stored in fp32: same bound as attention.lse.f32"},
    {"attention.grad.bf16", 5e-6, 1e-5, 1e-10,
     "bf16 inputs widened exactly; p, ds and the gradient sums in fp32, gradients stored fp32: same bound as attention.grad.f32"},
    {"linear_attention.out.bf16", 2e-6, 1e-5, 1e-11,
     "bf16 storage of q, k, v, dout only: widened exactly, fp32 arithmetic and fp32 outputs as linear_attention.out.f32, so the same bound"},
    {"linear_attention.grad.bf16", 1e-6, 1e-5, 1e-10,
     "bf16 inputs widened exactly; states, C x C products and gradients in fp32: same bound as linear_attention.grad.f32"},
    {"linear_attention.grad_state.bf16", 5e-6, 1e-5, 1e-10,
     "bf16 inputs widened exactly; the final-state gradient terms summed in fp32 as in linear_attention.grad_state.f32: same bound"},
    {"linear_attention.grad_degenerate.bf16", 1e-6, 0.0, 1e30,
     "bf16 inputs widened exactly; mathematically ~0 gradients as in linear_attention.grad_degenerate.f32: absolute error only"},
    {"linear_attention.state.bf16", 1e-5, 1e-5, 1e-11,
     "bf16 inputs widened exactly; the fp32 state sums of linear_attention.state.f32"},
    /* ---- end of op rows ------------------------------------------------------ */
};

const mf_tolerance *mf_tolerance_table(size_t *count)
{
    if (count) *count = sizeof mf_tolerances / sizeof mf_tolerances[0];
    return mf_tolerances;
}

const mf_tolerance *mf_tolerance_get(const char *name)
{
    if (name == NULL) {
        mf_set_error(MF_ERR_NULL_POINTER, __func__, __FILE__, __LINE__, "name is NULL");
        return NULL;
    }
    for (size_t i = 0; i < sizeof mf_tolerances / sizeof mf_tolerances[0]; i++)
        if (strcmp(mf_tolerances[i].name, name) == 0) return &mf_tolerances[i];
    mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__, "no tolerance named '%s'", name);
    return NULL;
}
