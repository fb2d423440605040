/* The RoPE reference (reference/rope.c) against fixtures from PyTorch running
 * the Hugging Face rotary code (LlamaRotaryEmbedding cache with the seed's
 * device-side arange, rotate_half / GPT-J rotate_every_two, GPT-NeoX partial
 * rotary) in float64, forward and autograd backward: fixtures/rope/gen_rope.py.
 * Needs no kernels. */
#include "memfix/rope.h"
#include "mf_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rope_fixture {
    mf_rope_config cfg;
    int64_t B, T, Hq, Hk, offset;
    int64_t *pos;                   /* B x T */
    float *q, *k, *dq_out, *dk_out; /* inputs */
    float *q_out, *k_out, *dq, *dk; /* expected */
    size_t nq, nk;
} rope_fixture;

static float *read_f32(const char *name, const char *key, size_t expect)
{
    char rel[256];
    snprintf(rel, sizeof rel, "rope/%s_%s.bin", name, key);
    float *d = NULL;
    size_t n = 0;
    ck_assert_msg(mf_fixture_read_f32(mf_fixture_path(rel), &d, &n), "cannot read fixture %s", rel);
    ck_assert_msg(n == expect, "%s: %zu elements, expected %zu", rel, n, expect);
    return d;
}

static void load_fixture(const char *name, rope_fixture *f)
{
    memset(f, 0, sizeof *f);
    char rel[256];
    snprintf(rel, sizeof rel, "rope/%s_cfg.bin", name);
    double *cfg = NULL;
    size_t n = 0;
    ck_assert_msg(mf_fixture_read_f64(mf_fixture_path(rel), &cfg, &n), "cannot read %s", rel);
    ck_assert_uint_eq(n, 10);
    mf_rope_config_init(&f->cfg, (int64_t)cfg[0]);
    f->cfg.rotary_dim = (int64_t)cfg[1];
    f->cfg.base = cfg[2];
    f->cfg.scaling = cfg[3];
    f->cfg.layout = cfg[4] == 0.0 ? MF_ROPE_HALF : MF_ROPE_INTERLEAVED;
    f->B = (int64_t)cfg[5];
    f->T = (int64_t)cfg[6];
    f->Hq = (int64_t)cfg[7];
    f->Hk = (int64_t)cfg[8];
    f->offset = (int64_t)cfg[9];
    free(cfg);
    snprintf(rel, sizeof rel, "rope/%s_pos.bin", name);
    ck_assert_msg(mf_fixture_read_i64(mf_fixture_path(rel), &f->pos, &n), "cannot read %s", rel);
    ck_assert_uint_eq(n, (size_t)(f->B * f->T));
    f->nq = (size_t)(f->B * f->T * f->Hq * f->cfg.head_dim);
    f->nk = (size_t)(f->B * f->T * f->Hk * f->cfg.head_dim);
    f->q = read_f32(name, "q", f->nq);
    f->k = read_f32(name, "k", f->nk);
    f->dq_out = read_f32(name, "dq_out", f->nq);
    f->dk_out = read_f32(name, "dk_out", f->nk);
    f->q_out = read_f32(name, "q_out", f->nq);
    f->k_out = read_f32(name, "k_out", f->nk);
    f->dq = read_f32(name, "dq", f->nq);
    f->dk = read_f32(name, "dk", f->nk);
}

static void free_fixture(rope_fixture *f)
{
    free(f->pos);
    free(f->q);
    free(f->k);
    free(f->dq_out);
    free(f->dk_out);
    free(f->q_out);
    free(f->k_out);
    free(f->dq);
    free(f->dk);
}

/* Runs the reference on the fixture's inputs for one direction and position
 * form, and compares q and k outputs with the torch results. */
static void check_case(const rope_fixture *f, mf_rope_direction dir, const mf_rope_positions *pos)
{
    mf_context *ctx = mf_test_ctx();
    float *qo = malloc(f->nq * sizeof(float)), *ko = malloc(f->nk * sizeof(float));
    ck_assert(qo != NULL && ko != NULL);
    mf_fill_nan_f32(qo, f->nq);
    mf_fill_nan_f32(ko, f->nk);
    const int fwd = dir == MF_ROPE_FORWARD;
    mf_rope_tensors t = {
        f->B, f->T, f->Hq, f->Hk, MF_DTYPE_F32, fwd ? f->q : f->dq_out, fwd ? f->k : f->dk_out, qo, ko
    };
    MF_ASSERT_OK(mf_ref_rope(ctx, &f->cfg, dir, &t, pos));
    MF_ASSERT_CLOSE(qo, fwd ? f->q_out : f->dq, f->nq, "rope.torch.f32");
    MF_ASSERT_CLOSE(ko, fwd ? f->k_out : f->dk, f->nk, "rope.torch.f32");
    free(qo);
    free(ko);
}

static void check_fixture(const char *name)
{
    rope_fixture f;
    load_fixture(name, &f);
    /* explicit int64 ids, one row per batch */
    mf_rope_positions ids = mf_rope_positions_ids(MF_ROPE_POS_I64, f.pos, f.T);
    check_case(&f, MF_ROPE_FORWARD, &ids);
    check_case(&f, MF_ROPE_BACKWARD, &ids);
    /* the same ids as int32 */
    int32_t *pos32 = malloc((size_t)(f.B * f.T) * sizeof(int32_t));
    ck_assert(pos32 != NULL);
    for (int64_t i = 0; i < f.B * f.T; ++i) pos32[i] = (int32_t)f.pos[i];
    mf_rope_positions ids32 = mf_rope_positions_ids(MF_ROPE_POS_I32, pos32, f.T);
    check_case(&f, MF_ROPE_FORWARD, &ids32);
    free(pos32);
    /* an arange from an offset: the same positions generated, not read */
    if (f.offset >= 0) {
        mf_rope_positions off = mf_rope_positions_offset(f.offset);
        check_case(&f, MF_ROPE_FORWARD, &off);
        check_case(&f, MF_ROPE_BACKWARD, &off);
    }
    free_fixture(&f);
}

START_TEST(fixture_half_gqa) { check_fixture("half_gqa"); }
END_TEST
START_TEST(fixture_half_partial_ids) { check_fixture("half_partial_ids"); }
END_TEST
START_TEST(fixture_interleaved_offset) { check_fixture("interleaved_offset"); }
END_TEST
START_TEST(fixture_interleaved_partial_ids) { check_fixture("interleaved_partial_ids"); }
END_TEST
START_TEST(fixture_half_long) { check_fixture("half_long"); }
END_TEST

/* The comparison can fail: the torch forward output is not the backward one. */
START_TEST(fixture_negative_control)
{
    rope_fixture f;
    load_fixture("half_gqa", &f);
    mf_rope_positions ids = mf_rope_positions_ids(MF_ROPE_POS_I64, f.pos, f.T);
    float *qo = malloc(f.nq * sizeof(float)), *ko = malloc(f.nk * sizeof(float));
    mf_rope_tensors t = { f.B, f.T, f.Hq, f.Hk, MF_DTYPE_F32, f.q, f.k, qo, ko };
    MF_ASSERT_OK(mf_ref_rope(mf_test_ctx(), &f.cfg, MF_ROPE_BACKWARD, &t, &ids));
    char msg[1024];
    ck_assert_msg(
        !mf_test_check_close(qo, f.q_out, f.nq, "rope.torch.f32", __FILE__, __LINE__, msg, sizeof msg),
        "the backward rotation matched the forward fixture");
    free(qo);
    free(ko);
    free_fixture(&f);
}
END_TEST

static Suite *rope_fixtures_suite(void)
{
    Suite *s = suite_create("rope_fixtures");
    TCase *tc = tcase_create("torch");
    tcase_add_checked_fixture(tc, mf_test_setup, mf_test_teardown);
    tcase_add_test(tc, fixture_half_gqa);
    tcase_add_test(tc, fixture_half_partial_ids);
    tcase_add_test(tc, fixture_interleaved_offset);
    tcase_add_test(tc, fixture_interleaved_partial_ids);
    tcase_add_test(tc, fixture_half_long);
    tcase_add_test(tc, fixture_negative_control);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return mf_test_run(rope_fixtures_suite()); }
