/* Memory of the nsa fix (seed 001): the reference's dense masked branches hold
 * B*Hq x S x S scores twice (quadratic in S), the fused forward only the pooled
 * compressed k and v (linear in S), the fused backward those and their
 * gradients. Measured through the context's tracked allocator by the op's
 * memory cases (src/ops/nsa.c, run by the testbed, equivalent to the reference
 * and optimized <= ceiling asserted there): reference == its formula,
 * fused <= ceiling < reference, and at S and 2S the reference grows ~4x, the
 * fused at most 2x (every case's reference above its ceiling:
 * test_nsa_equiv). The formulas at the seed's shapes (001-1k / 001-4k: B=2, Hq=12, Hk=2, D=64). */
#include "mf_test.h"

#include "memfix/nsa.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>

/* The memory cases of the op's table (src/ops/nsa.c, cases 17 to 24), each the
 * forward alone (lse and sel NULL: the bf16 path keeps its selection in
 * scratch) or forward + backward (the backward from the forward's lse, sel):
 * B=1 S=45 Hq=6 Hk=1 D=16 fwd (f32, bf16), fwd+bwd (f32, bf16); then f32
 * B=1 Hq=2 Hk=1 D=8 fwd at S = 48, 96, fwd+bwd at S = 48, 96. All at
 * l=8 d=4 l'=8 n=4 w=16. */
#define MEM_CASE0 17

typedef struct peaks {
    size_t ref, opt, ceiling;
} peaks;

/* Case MEM_CASE0 + k through the testbed, checked to be the shape the
 * formulas are given, its ceiling the header's formula for the pass. */
static peaks measure(int k, const mf_nsa_config *cfg, int64_t B, int64_t S, int64_t Hq, int64_t Hk, int64_t D,
                     mf_dtype dt, int fwd_only)
{
    const mf_case_result c = mf_test_op_case("nsa", MF_NSA_FUSED, MEM_CASE0 + k);
    char shape[192];
    snprintf(shape, sizeof shape,
             "B=%lld S=%lld Hq=%lld Hk=%lld D=%lld l=%lld d=%lld l'=%lld n=%lld w=%lld %s", (long long)B,
             (long long)S, (long long)Hq, (long long)Hk, (long long)D, (long long)cfg->block_cmp,
             (long long)cfg->stride, (long long)cfg->block_sel, (long long)cfg->n_sel, (long long)cfg->window,
             fwd_only ? "fwd lse=sel=NULL" : "fwd+bwd");
    ck_assert_str_eq(c.shape, shape);
    ck_assert_str_eq(c.dtype, mf_dtype_name(dt));
    ck_assert_uint_eq(c.ceiling_bytes, fwd_only ? mf_nsa_forward_scratch_ceiling(cfg, B, S, Hq, Hk, D)
                                                : mf_nsa_backward_scratch_ceiling(cfg, B, S, Hq, Hk, D));
    const peaks p = { c.ref_peak_bytes, c.opt_peak_bytes, c.ceiling_bytes };
    return p;
}

START_TEST(test_measured_within_formulas)
{
    const mf_nsa_config cfg = { 8, 4, 8, 4, 16, 0.0f };
    const int64_t B = 1, S = 45, Hq = 6, Hk = 1, D = 16;
    for (int t = 0; t < 2; t++) {
        const mf_dtype dt = t ? MF_DTYPE_BF16 : MF_DTYPE_F32;
        const peaks f = measure(t, &cfg, B, S, Hq, Hk, D, dt, 1);
        ck_assert_uint_eq(f.ref, mf_ref_nsa_forward_scratch_bytes(&cfg, B, S, Hq, Hk, D));
        ck_assert_uint_le(f.opt, f.ceiling);
        ck_assert_uint_lt(f.ceiling, f.ref);
        ck_assert_uint_gt(f.opt, 0); /* the pooled k/v are measured, not hidden */
        /* forward + backward: the reference's peak is its backward's (the forward's scratch and more) */
        const peaks b = measure(2 + t, &cfg, B, S, Hq, Hk, D, dt, 0);
        ck_assert_uint_eq(b.ref, mf_ref_nsa_backward_scratch_bytes(&cfg, B, S, Hq, Hk, D));
        ck_assert_uint_le(b.opt, b.ceiling);
        ck_assert_uint_lt(b.ceiling, b.ref);
        ck_assert_uint_gt(b.opt, 0);
    }
}
END_TEST

START_TEST(test_scaling_s_and_2s)
{
    const mf_nsa_config cfg = { 8, 4, 8, 4, 16, 0.0f };
    const int64_t B = 1, Hq = 2, Hk = 1, D = 8, S = 48;
    const peaks a = measure(4, &cfg, B, S, Hq, Hk, D, MF_DTYPE_F32, 1);
    const peaks b = measure(5, &cfg, B, 2 * S, Hq, Hk, D, MF_DTYPE_F32, 1);
    const peaks a_bwd = measure(6, &cfg, B, S, Hq, Hk, D, MF_DTYPE_F32, 0);
    const peaks b_bwd = measure(7, &cfg, B, 2 * S, Hq, Hk, D, MF_DTYPE_F32, 0);
    /* reference: dominated by the two S x S score matrices: more than 3.5x */
    ck_assert_uint_gt(2 * b.ref, 7 * a.ref);
    /* fused: at most linear */
    ck_assert_uint_le(b.opt, 2 * a.opt + 8 * (size_t)(B * Hk * D));
    ck_assert_uint_le(b.opt, mf_nsa_forward_scratch_ceiling(&cfg, B, 2 * S, Hq, Hk, D));
    ck_assert_uint_gt(b.ref - a.ref, b.opt - a.opt);
    ck_assert_uint_gt(2 * b_bwd.ref, 7 * a_bwd.ref);
    ck_assert_uint_le(b_bwd.opt, 2 * a_bwd.opt + 16 * (size_t)(B * Hk * D));
}
END_TEST

/* The seed's configuration at its two sequence lengths: 12 heads, 2 KV groups,
 * head dim 64, micro batch 2. The dense reference's scores vs the fused
 * kernel's pooled k/v. */
START_TEST(test_formulas_at_seed_shapes)
{
    const mf_nsa_config cfg = mf_nsa_config_seed();
    const int64_t B = 2, Hq = 12, Hk = 2, D = 64;
    for (int64_t S = 1024; S <= 4096; S *= 4) {
        const size_t nc = (size_t)(S - 32) / 16 + 1, nb = (size_t)(S + 63) / 64, s = (size_t)S;
        const size_t want_ref =
            8 * 2 * 12 * s * (nc + 2 * s) + 8 * 2 * 2 * s * nb + 16 * 2 * 2 * nc * 64 + 2 * 2 * s * nb + s;
        ck_assert_uint_eq(mf_ref_nsa_forward_scratch_bytes(&cfg, B, S, Hq, Hk, D), want_ref);
        /* pooled k/v + the certificate (token list, its count, max |kc| per (b, g)) + the bf16 path's
         * selection when the caller passes no sel */
        ck_assert_uint_eq(mf_nsa_forward_scratch_ceiling(&cfg, B, S, Hq, Hk, D),
                          8 * 2 * 2 * nc * 64 + (8 * 2 * s * 2 + 8 + 4 * 2 * 2) + 4 * 2 * s * 2 * 16);
        /* the backward's own (larger here than the forward's with sel given) */
        ck_assert_uint_eq(mf_nsa_backward_scratch_ceiling(&cfg, B, S, Hq, Hk, D), 16 * 2 * 2 * nc * 64);
    }
    /* at S = 4096 the reference's two S x S double matrices alone are 6.4 GB */
    ck_assert_uint_gt(mf_ref_nsa_forward_scratch_bytes(&cfg, B, 4096, Hq, Hk, D), (size_t)6400000000ull);
    ck_assert_uint_eq(mf_ref_nsa_forward_scratch_bytes(&cfg, 0, 4096, Hq, Hk, D), SIZE_MAX);
    ck_assert_uint_eq(mf_nsa_forward_scratch_ceiling(NULL, 1, 4096, Hq, Hk, D), SIZE_MAX);
    /* no compressed block (S < l): no certificate; the backward's ceiling covers the forward's */
    ck_assert_uint_eq(mf_nsa_forward_scratch_ceiling(&cfg, B, 20, Hq, Hk, D), 4 * 2 * 20 * 2 * 16);
    ck_assert_uint_eq(mf_nsa_backward_scratch_ceiling(&cfg, B, 20, Hq, Hk, D), 0);
    /* d = l = l' = 16, D = 16, S = 40: nc = 2, the forward's certificate (8 B S Hk) is above 16 B Hk nc D */
    const mf_nsa_config c16 = { 16, 16, 16, 4, 16, 0.0f };
    ck_assert_uint_eq(mf_nsa_backward_scratch_ceiling(&c16, 1, 40, 2, 1, 16), 8 * 2 * 16 + 8 * 40 + 8 + 4);
    ck_assert_uint_eq(mf_ref_nsa_forward_scratch_bytes(&cfg, INT64_MAX, INT64_MAX, Hq, Hk, D), SIZE_MAX);
}
END_TEST

static Suite *nsa_memory_suite(void)
{
    Suite *s = suite_create("nsa_memory");
    TCase *f = tcase_create("formulas");
    tcase_add_test(f, test_formulas_at_seed_shapes);
    suite_add_tcase(s, f);
    TCase *m = tcase_create("measured");
    tcase_add_checked_fixture(m, mf_test_setup, mf_test_teardown);
    tcase_add_test(m, test_measured_within_formulas);
    tcase_add_test(m, test_scaling_s_and_2s);
    suite_add_tcase(s, m);
    return s;
}

int main(void) { return mf_test_run(nsa_memory_suite()); }
