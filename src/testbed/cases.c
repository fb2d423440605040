/* Case ids and the seeded random cases of `memfix verify` (testbed.h).
 * The ops' generators (src/ops/<op>.c) draw from mf_tb_rng, so a
 * generated case is a function of (target, seed, index) only. */
#include "testbed.h"

#include <string.h>

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

mf_tb_rng mf_tb_case_rng(const char *target, const mf_case_id *id)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the target's name */
    for (const char *p = target != NULL ? target : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    mf_tb_rng r = { mix64(
        h ^ mix64(id->seed ^ mix64(((uint64_t)id->kind << 32) ^ (uint64_t)(uint32_t)id->index))) };
    return r;
}

uint64_t mf_tb_rand_u64(mf_tb_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    uint64_t z = r->s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int64_t mf_tb_rand_int(mf_tb_rng *r, int64_t lo, int64_t hi)
{
    if (hi <= lo) return lo;
    const uint64_t span = (uint64_t)(hi - lo) + 1u;
    return lo + (int64_t)(mf_tb_rand_u64(r) % span);
}

int64_t mf_tb_rand_pick(mf_tb_rng *r, const int64_t *v, int n) { return v[mf_tb_rand_int(r, 0, n - 1)]; }

int mf_tb_rand_chance(mf_tb_rng *r, int num, int den) { return mf_tb_rand_int(r, 0, den - 1) < num; }

uint64_t mf_tb_case_seed(const mf_case_id *id, uint64_t base, uint64_t stride, uint64_t seed_salt)
{
    const uint64_t salt = seed_salt * 0x9e3779b97f4a7c15ull;
    if (id->kind == MF_CASE_FIXED) return base + (uint64_t)id->index * stride + salt;
    return base ^ mix64(id->seed + mix64((uint64_t)id->kind * 1000003u + (uint64_t)(uint32_t)id->index)) ^
           salt;
}

mf_status mf_tb_case_begin_id(mf_case_result *out, const char *op, mf_context *ctx, int variant,
                              int n_variants, const mf_case_id *id, int n_fixed)
{
    if (id == NULL) {
        if (out != NULL) memset(out, 0, sizeof *out);
        MF_FAIL(MF_ERR_NULL_POINTER, "case id is NULL");
    }
    if (id->kind == MF_CASE_FIXED)
        return mf_tb_case_begin(out, op, ctx, variant, n_variants, id->index, n_fixed);
    if (id->index < 0 && id->kind == MF_CASE_RANDOM) {
        if (out != NULL) memset(out, 0, sizeof *out);
        MF_FAIL(MF_ERR_INVALID_ARGUMENT, "%s: random case %d out of range", op, id->index);
    }
    return mf_tb_case_begin(out, op, ctx, variant, n_variants, 0, 1);
}

mf_case_id mf_tb_fixed_id(int index)
{
    mf_case_id id = { MF_CASE_FIXED, index, 0 };
    return id;
}
