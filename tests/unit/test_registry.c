/* Every registered op's built-in cases, through the registry, the way
 * `memfix report` runs them: each variant of each case must pass (equivalent
 * to the reference AND optimized scratch within the header's ceiling), and
 * every result row must be filled in. One loop test per op, so a failure
 * names the op; the message names the variant, case and reason. */
#include "mf_test.h"
#include "memfix/registry.h"

#include <string.h>

static const mf_op_desc *op_at(int i)
{
    size_t n = 0;
    const mf_op_desc *const *ops = mf_registry(&n);
    ck_assert_int_lt(i, (int)n);
    return ops[i];
}

START_TEST(test_op_cases_pass)
{
    const mf_op_desc *op = op_at(_i);
    ck_assert_int_gt(op->n_variants, 0);
    ck_assert_int_gt(op->n_cases, 0);
    mf_context *ctx = mf_test_ctx();
    for (int v = 0; v < op->n_variants; v++) {
        for (int c = 0; c < mf_op_report_cases(op); c++) { /* the rest: the op's equivalence suite */
            if (!mf_op_case_applies(op, v, c)) continue;
            mf_case_result r;
            memset(&r, 0x5a, sizeof r); /* run_case must fill every field it reports */
            mf_status s = op->run_case(ctx, v, c, &r);
            ck_assert_msg(s == MF_OK, "%s/%s case %d: %s: %s", op->name, op->variants[v], c,
                          mf_status_name(s), mf_last_error());
            ck_assert_msg(memchr(r.op, '\0', sizeof r.op) && strcmp(r.op, op->name) == 0,
                          "%s case %d: op field not filled", op->name, c);
            ck_assert_msg(memchr(r.variant, '\0', sizeof r.variant) &&
                              strcmp(r.variant, op->variants[v]) == 0,
                          "%s case %d: variant field not filled", op->name, c);
            ck_assert_msg(memchr(r.backend, '\0', sizeof r.backend) &&
                              strcmp(r.backend, mf_backend_name(mf_context_backend(ctx))) == 0,
                          "%s case %d: backend field not filled", op->name, c);
            ck_assert_msg(memchr(r.shape, '\0', sizeof r.shape) && r.shape[0] != '\0',
                          "%s case %d: shape field not filled", op->name, c);
            ck_assert_msg(memchr(r.message, '\0', sizeof r.message) != NULL,
                          "%s case %d: message not a string", op->name, c);
            ck_assert_msg(r.pass == 1, "%s/%s case %d (%s %s): FAIL: %s", op->name, op->variants[v], c,
                          r.dtype, r.shape, r.message);
            ck_assert_msg(r.opt_peak_bytes <= r.ceiling_bytes, "%s/%s case %d: scratch %zu > ceiling %zu",
                          op->name, op->variants[v], c, r.opt_peak_bytes, r.ceiling_bytes);
            ck_assert_msg(r.max_abs_err >= 0.0 && r.max_abs_err <= r.atol + r.rtol * 1e30,
                          "%s/%s case %d: max_abs_err not filled", op->name, op->variants[v], c);
        }
    }
}
END_TEST

START_TEST(test_registry_lookup)
{
    size_t n = 0;
    const mf_op_desc *const *ops = mf_registry(&n);
    ck_assert_uint_gt(n, 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_eq(mf_registry_find(ops[i]->name), ops[i]);
        for (size_t j = 0; j < i; j++) ck_assert_str_ne(ops[i]->name, ops[j]->name);
    }
    ck_assert_ptr_null(mf_registry_find("no-such-op"));
}
END_TEST

static Suite *registry_suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("cases");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    size_t n = 0;
    (void)mf_registry(&n); /* no CUDA here: the registry is a static table */
    tcase_add_loop_test(tc, test_op_cases_pass, 0, (int)n);
    tcase_add_test(tc, test_registry_lookup);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(registry_suite()); }
