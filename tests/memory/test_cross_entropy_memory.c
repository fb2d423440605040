/* Memory of the chunked and fused linear cross-entropy (seed 000, bug 1).
 *
 *  - the header's formulas at the document's shapes (never allocated): the
 *    37.09 GiB of bf16 logits at 131,072 x 151,936, the table's 1.16 / 11.32 GiB,
 *    the hidden states of the 4B model (D = 2560), and the chunked ceiling;
 *  - the seed's threshold test (verify_chunked_loss.py): with a 10 GiB budget,
 *    V = 151,936 and bf16, N = 4,096 runs as one chunk, N = 40,000 is chunked;
 *  - measured through the testbed (the op's memory cases, run as `memfix
 *    report` runs a case: each also equivalent to the reference): optimized
 *    <= ceiling < reference at the same shape, the reference's scratch equals
 *    its formula, and at a fixed chunk the optimized scratch grows by 4 bytes
 *    per row when N doubles while the reference grows by 16 * V bytes per row;
 *    the fused variant's 8N + 16 (4N + 16 forward, 16 backward) at two N and
 *    two V, below the reference and the chunked variant.
 */
#include "mf_test.h"

#include "memfix/check.h"
#include "memfix/cross_entropy.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB ((double)(1u << 30))
#define V_DOC 151936
#define N_DOC 131072
#define D_4B 2560

/* Round to 2 decimals, as the document prints GiB. */
static double gib2(size_t bytes) { return round(bytes / GIB * 100.0) / 100.0; }

START_TEST(test_formula_document_shapes)
{
    /* "37.09 GB per GPU (batch=1, seq=131k, vocab=151k, bfloat16)": the true
     * value is 39,829,110,784 bytes = 37.09375 GiB, which the document rounds. */
    const size_t logits = mf_cross_entropy_logits_bytes(N_DOC, V_DOC, MF_DTYPE_BF16);
    ck_assert_uint_eq(logits, (size_t)39829110784ull);
    ck_assert_uint_eq(logits, (size_t)N_DOC * V_DOC * 2);
    ck_assert(gib2(logits) == 37.09);
    /* "~74 GB intermediate tensors (float32)": one fp32 copy of the logits. */
    ck_assert(gib2(mf_cross_entropy_logits_bytes(N_DOC, V_DOC, MF_DTYPE_F32)) == 74.19);
    /* The results table: 4,096 -> 1.16 GB, 40,000 -> 11.32 GB. */
    ck_assert(gib2(mf_cross_entropy_logits_bytes(4096, V_DOC, MF_DTYPE_BF16)) == 1.16);
    ck_assert(gib2(mf_cross_entropy_logits_bytes(40000, V_DOC, MF_DTYPE_BF16)) == 11.32);
    /* "+640 MB for hidden states": 131072 x 2560 bf16 = 640 MiB, so D = 2560. */
    ck_assert_uint_eq((size_t)N_DOC * D_4B * 2, (size_t)640 << 20);

    /* The reference holds N x V doubles (forward) and twice that (backward). */
    ck_assert_uint_eq(mf_ref_cross_entropy_scratch_bytes(N_DOC, V_DOC, 0), logits * 4);
    ck_assert_uint_eq(mf_ref_cross_entropy_scratch_bytes(N_DOC, V_DOC, 1), logits * 8);

    /* The chunked variant at the document's shape with a 10 GiB budget. */
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.scratch_budget = (size_t)10 << 30;
    mf_cross_entropy_plan_info p;
    MF_ASSERT_OK(mf_cross_entropy_plan(N_DOC, V_DOC, MF_DTYPE_BF16, &o, &p));
    /* C = floor((10 GiB - 4N - 16) / 4V) */
    ck_assert_int_eq(p.chunk_rows,
                     (int64_t)((((size_t)10 << 30) - 4 * (size_t)N_DOC - 16) / (4 * (size_t)V_DOC)));
    ck_assert_int_eq(p.chunk_rows, 17666);
    ck_assert_int_eq(p.n_chunks, 8);
    const size_t ceil = mf_cross_entropy_chunked_scratch_ceiling(N_DOC, V_DOC, p.chunk_rows);
    ck_assert_uint_eq(ceil, p.scratch_bytes);
    ck_assert_uint_eq(ceil, (size_t)p.chunk_rows * V_DOC * 4 + 4 * (size_t)N_DOC + 16);
    ck_assert_uint_le(ceil, o.scratch_budget);
    ck_assert_uint_lt(ceil, logits); /* below the bf16 logits the old code held */

    /* Overflowing or invalid shapes give SIZE_MAX, never a wrapped value. */
    ck_assert_uint_eq(mf_cross_entropy_logits_bytes(INT64_MAX, INT64_MAX, MF_DTYPE_F32), SIZE_MAX);
    ck_assert_uint_eq(mf_cross_entropy_logits_bytes(0, 10, MF_DTYPE_F32), SIZE_MAX);
    ck_assert_uint_eq(mf_ref_cross_entropy_scratch_bytes(INT64_MAX, 3, 1), SIZE_MAX);
    ck_assert_uint_eq(mf_cross_entropy_chunked_scratch_ceiling(10, 10, 0), SIZE_MAX);
    ck_assert_uint_eq(mf_cross_entropy_chunked_scratch_ceiling(INT64_MAX, 2, 2), SIZE_MAX);
}
END_TEST

/* verify_chunked_loss.py: "Test 1: seq_len=4096, logits=1.16GB, should_chunk=False";
 * "Test 2: seq_len=40000, logits=11.32GB, should_chunk=True". */
START_TEST(test_seed_threshold)
{
    mf_cross_entropy_options o;
    mf_cross_entropy_options_init(&o);
    o.scratch_budget = (size_t)10 << 30;
    mf_cross_entropy_plan_info p;
    MF_ASSERT_OK(mf_cross_entropy_plan(4096, V_DOC, MF_DTYPE_BF16, &o, &p));
    /* The bf16 logits (1.16 GiB) are below the budget: the document does not
     * chunk; memfix caps its fp32 tile at them (header: C = 2047). */
    ck_assert_int_eq(p.capped_by_logits, 1);
    ck_assert_uint_eq(p.logits_bytes, 1244659712u);
    ck_assert_int_eq(p.chunk_rows, 2047);
    ck_assert_int_eq(p.n_chunks, 3);
    ck_assert_uint_le(p.scratch_bytes, p.logits_bytes);
    ck_assert_uint_le(p.scratch_bytes, o.scratch_budget);
    MF_ASSERT_OK(mf_cross_entropy_plan(40000, V_DOC, MF_DTYPE_BF16, &o, &p));
    ck_assert_int_eq(p.chunked, 1);
    ck_assert_int_eq(p.n_chunks, 3);
    ck_assert_int_eq(p.capped_by_logits, 0);
    ck_assert_int_lt(p.chunk_rows, 40000);
    ck_assert_uint_le(p.scratch_bytes, o.scratch_budget);
    /* One byte short of one row fails with a status and a message. */
    o.scratch_budget = 4 * (size_t)V_DOC + 4 * 40000 + 16 - 1;
    MF_ASSERT_STATUS(mf_cross_entropy_plan(40000, V_DOC, MF_DTYPE_BF16, &o, &p), MF_ERR_BUDGET);
    o.scratch_budget += 1;
    MF_ASSERT_OK(mf_cross_entropy_plan(40000, V_DOC, MF_DTYPE_BF16, &o, &p));
    ck_assert_int_eq(p.chunk_rows, 1);
    ck_assert_int_eq(p.n_chunks, 40000);
}
END_TEST

/* The memory cases of the op's table (src/ops/cross_entropy_cases.c, its last 24):
 * N in {48, 96} x V in {300, 900} x f32, bf16, each as fwd+bwd (lse NULL),
 * forward alone and backward alone (from the reference's lse); D = 16, C = 8
 * (the budget is the chunked ceiling at 8 rows), mean. Each runs through the
 * testbed (equivalent, and opt <= ceiling, asserted there: a variant that
 * skipped the work would trivially use no memory). */
#define MEM_CASE0 49
enum { PASS_FWD_BWD = 0, PASS_FWD = 1, PASS_BWD = 2 };

typedef struct measured {
    size_t ref_fwd, ref_bwd, opt_fused, opt_fwd, opt_bwd, ceiling;
} measured;

/* The three passes of the memory case (n, v, dtype) on variant, checked to be
 * that shape: the reference's scratch of the forward alone and of forward +
 * backward, the variant's scratch of fwd+bwd, forward and backward. */
static measured measure_variant(int64_t n, int64_t v, mf_dtype dt, mf_ce_variant variant)
{
    ck_assert(n == 48 || n == 96);
    ck_assert(v == 300 || v == 900);
    const int base = MEM_CASE0 + (((n == 96) * 2 + (v == 900)) * 2 + (dt == MF_DTYPE_BF16)) * 3;
    static const char *const pass_suffix[3] = { "i%7==3", "i%7==3 fwd", "i%7==3 bwd" };
    mf_case_result r[3];
    char shape[64];
    snprintf(shape, sizeof shape, "N=%lld D=16 V=%lld C=8 mean seq_len=0 ", (long long)n, (long long)v);
    for (int p = 0; p < 3; ++p) {
        r[p] = mf_test_op_case("cross_entropy", (int)variant, base + p);
        ck_assert_msg(strncmp(r[p].shape, shape, strlen(shape)) == 0, "case %d: %s", base + p, r[p].shape);
        const size_t len = strlen(r[p].shape), sl = strlen(pass_suffix[p]);
        ck_assert_msg(len >= sl && strcmp(r[p].shape + len - sl, pass_suffix[p]) == 0, "case %d: %s",
                      base + p, r[p].shape);
        ck_assert_str_eq(r[p].dtype, mf_dtype_name(dt));
    }
    measured m;
    m.ref_fwd = r[PASS_FWD].ref_peak_bytes;
    m.ref_bwd = r[PASS_BWD].ref_peak_bytes; /* forward then backward: the backward's is the larger */
    ck_assert_uint_eq(r[PASS_FWD_BWD].ref_peak_bytes, m.ref_bwd);
    m.opt_fused = r[PASS_FWD_BWD].opt_peak_bytes;
    m.opt_fwd = r[PASS_FWD].opt_peak_bytes;
    m.opt_bwd = r[PASS_BWD].opt_peak_bytes;
    m.ceiling = r[PASS_FWD_BWD].ceiling_bytes;
    const size_t want = variant == MF_CE_VARIANT_FUSED ? mf_cross_entropy_fused_scratch_ceiling(n)
                                                       : mf_cross_entropy_chunked_scratch_ceiling(n, v, 8);
    for (int p = 0; p < 3; ++p) ck_assert_uint_eq(r[p].ceiling_bytes, want);
    return m;
}

static measured measure(int64_t n, int64_t v, mf_dtype dt)
{
    return measure_variant(n, v, dt, MF_CE_VARIANT_CHUNKED);
}

/* optimized <= ceiling < reference, and the reference equals its formula. */
START_TEST(test_measured_against_formulas)
{
    const mf_dtype dt = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const int64_t n = 48, v = 300, chunk = 8;
    measured m = measure(n, v, dt);
    ck_assert_uint_eq(m.ref_fwd, mf_ref_cross_entropy_scratch_bytes(n, v, 0));
    ck_assert_uint_eq(m.ref_bwd, mf_ref_cross_entropy_scratch_bytes(n, v, 1));
    /* The fused call with mean reduction allocates exactly the ceiling's terms. */
    ck_assert_uint_eq(m.opt_fused, m.ceiling);
    ck_assert_uint_le(m.opt_fwd, m.ceiling);
    ck_assert_uint_le(m.opt_bwd, m.ceiling);
    ck_assert_uint_lt(m.ceiling, m.ref_fwd);
    ck_assert_uint_lt(m.ceiling, m.ref_bwd);
    /* Backward keeps only the lse between calls: no per-row loss buffer. */
    ck_assert_uint_eq(m.opt_bwd, (size_t)chunk * v * 4 + 16);
}
END_TEST

/* At a fixed chunk, doubling N adds 4 bytes per row to the optimized scratch
 * (the per-row losses) and 16 * V bytes per row to the reference. */
START_TEST(test_scaling_with_n)
{
    const mf_dtype dt = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const int64_t v = 300;
    measured a = measure(48, v, dt);
    measured b = measure(96, v, dt);
    ck_assert_uint_eq(b.opt_fused - a.opt_fused, 4 * 48);
    ck_assert_uint_eq(b.opt_bwd, a.opt_bwd); /* backward: independent of N */
    ck_assert_uint_eq(b.ref_bwd - a.ref_bwd, (size_t)48 * v * 16);
    ck_assert_uint_le(a.opt_fused, a.ceiling);
    ck_assert_uint_le(b.opt_fused, b.ceiling);
}
END_TEST

/* The fused variant (MF_CE_VARIANT_FUSED) at two N and two V: its scratch is
 * exactly the header's terms (fused fwd+bwd, mean, lse NULL: 8N + 16; forward
 * with mean: 4N + 16; backward: 16), the same at both V, linear in N, and below
 * the reference and the chunked variant (chunk 8) at every shape. */
START_TEST(test_fused_two_n_two_v)
{
    const mf_dtype dt = _i ? MF_DTYPE_BF16 : MF_DTYPE_F32;
    const int64_t ns[2] = { 48, 96 }, vs[2] = { 300, 900 };
    measured f[2][2];
    for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) {
            const int64_t n = ns[a], v = vs[b];
            measured m = measure_variant(n, v, dt, MF_CE_VARIANT_FUSED);
            measured c = measure(n, v, dt);
            ck_assert_uint_eq(m.opt_fused, mf_cross_entropy_fused_scratch_ceiling(n));
            ck_assert_uint_eq(m.opt_fused, 8 * (size_t)n + 16);
            ck_assert_uint_eq(m.opt_fwd, 4 * (size_t)n + 16);
            ck_assert_uint_eq(m.opt_bwd, 16);
            ck_assert_uint_lt(m.opt_fused, m.ref_fwd);
            ck_assert_uint_lt(m.opt_fused, m.ref_bwd);
            ck_assert_uint_lt(m.opt_fused, c.opt_fused);
            ck_assert_uint_lt(m.opt_fwd, c.opt_fwd);
            ck_assert_uint_lt(m.opt_bwd, c.opt_bwd);
            f[a][b] = m;
        }
        ck_assert_uint_eq(f[a][0].opt_fused, f[a][1].opt_fused); /* no V term */
        ck_assert_uint_eq(f[a][0].opt_fwd, f[a][1].opt_fwd);
    }
    ck_assert_uint_eq(f[1][0].opt_fused - f[0][0].opt_fused, 8 * (size_t)(ns[1] - ns[0]));
}
END_TEST

/* At seed 000's shape the fused scratch is 1 MiB + 16 B (<= 2 MiB), about
 * 1000x below the chunked variant's default-budget plan. */
START_TEST(test_fused_formula_document_shape)
{
    const size_t f = mf_cross_entropy_fused_scratch_ceiling(N_DOC);
    ck_assert_uint_eq(f, 1048592u);
    ck_assert_uint_le(f, (size_t)2 << 20);
    mf_cross_entropy_plan_info p;
    MF_ASSERT_OK(mf_cross_entropy_plan(N_DOC, V_DOC, MF_DTYPE_BF16, NULL, &p));
    ck_assert_uint_gt(p.scratch_bytes / f, 1000);
    ck_assert_uint_eq(mf_cross_entropy_fused_scratch_ceiling(0), SIZE_MAX);
    ck_assert_uint_eq(mf_cross_entropy_fused_scratch_ceiling(INT64_MAX), SIZE_MAX);
}
END_TEST

static Suite *cross_entropy_memory_suite(void)
{
    Suite *s = suite_create("cross_entropy_memory");
    TCase *tf = tcase_create("formulas");
    tcase_add_test(tf, test_formula_document_shapes);
    tcase_add_test(tf, test_seed_threshold);
    tcase_add_test(tf, test_fused_formula_document_shape);
    suite_add_tcase(s, tf);
    TCase *tc = tcase_create("measured");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_loop_test(tc, test_measured_against_formulas, 0, 2);
    tcase_add_loop_test(tc, test_scaling_with_n, 0, 2);
    tcase_add_loop_test(tc, test_fused_two_n_two_v, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(cross_entropy_memory_suite()); }
