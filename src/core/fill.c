/* Seeded, platform-independent inputs: splitmix64 seeds xoshiro256**; each
 * value is lo + (hi-lo)*u with u a 24-bit dyadic fraction, computed in double
 * (exact IEEE arithmetic, so every platform draws the same floats). Values
 * with |x| < 1e-3*(hi-lo) are redrawn, so no input is zero: a kernel that
 * skips an input, or multiplies by the wrong one, cannot hide behind zeros. */
#include "mf_internal.h"
#include "memfix/check.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct mf_rng {
    uint64_t s[4];
} mf_rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static void rng_seed(mf_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rng_next(mf_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static float draw(mf_rng *r, double lo, double hi)
{
    double width = hi - lo, eps = 1e-3 * width;
    for (int tries = 0; tries < 64; tries++) {
        double u = (double)(rng_next(r) >> 40) * (1.0 / 16777216.0); /* [0, 1) */
        float v = (float)(lo + width * u);
        if (v >= (float)hi) v = nextafterf((float)hi, (float)lo);
        if (v < (float)lo) v = (float)lo;
        if (fabs((double)v) >= eps) return v;
    }
    /* Unreachable in practice (each draw misses with probability <= 2e-3). */
    return (float)(hi > -lo ? hi - 0.5 * (hi - fmax(lo, eps)) : lo + 0.5 * (fmin(hi, -eps) - lo));
}

static int fill_args_ok(const char *func, const void *x, size_t n, float lo, float hi)
{
    if (x == NULL) {
        mf_set_error(MF_ERR_NULL_POINTER, func, __FILE__, __LINE__, "x is NULL");
        return 0;
    }
    if (n == 0) return 0;
    if (!(isfinite(lo) && isfinite(hi) && lo < hi)) {
        mf_set_error(MF_ERR_INVALID_ARGUMENT, func, __FILE__, __LINE__,
                     "need finite lo < hi (got [%g, %g)); nothing written", (double)lo, (double)hi);
        return 0;
    }
    return 1;
}

void mf_fill_uniform_f32(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    if (!fill_args_ok(__func__, x, n, lo, hi)) return;
    mf_rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = draw(&r, lo, hi);
}

void mf_fill_uniform_bf16(uint16_t *x, size_t n, uint64_t seed, float lo, float hi)
{
    if (!fill_args_ok(__func__, x, n, lo, hi)) return;
    mf_rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = mf_f32_to_bf16(draw(&r, lo, hi));
}

void mf_fill_nan_f32(float *x, size_t n)
{
    if (x == NULL) return;
    const uint32_t bits = MF_NAN_FILL_F32_BITS;
    float qnan;
    memcpy(&qnan, &bits, sizeof qnan);
    for (size_t i = 0; i < n; i++) x[i] = qnan;
}
