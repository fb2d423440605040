/* probe: a float's or double's bits masked with 0xffff0000 (0xffffffffffff0000) through memcpy type punning, the
 * result merged with the unmasked value (one arm of a conditional, a conditional update in a loop): the bf16
 * truncation of kernels and of cudahost's __float_as_uint/__uint_as_float.
 * found: GCC 12.2 (Debian 12.2.0-14) on x86-64 at -O1 and above returns the unmasked value: its splitter rewrites the
 * `and` into a 16-bit store of zero into a copy of the register and drops the copy back. __builtin_bit_cast is
 * miscompiled the same way.
 * workaround: -fno-tree-ter
 *
 * Compiled as C and as C++ by cudahost's CMake configuration and by `cudahost-c++ --self-test`; exits 0 when the
 * compiler computes what the source says, 1 (printing the case) when it does not. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PROBE_NOINLINE __attribute__((noinline))

static inline uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint64_t d2u(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static inline double u2d(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

PROBE_NOINLINE float select_f(int flag, float p) { return flag ? u2f(f2u(p) & 0xffff0000u) : p; }
PROBE_NOINLINE double select_d(int flag, double p) { return flag ? u2d(d2u(p) & 0xffffffffffff0000ull) : p; }
PROBE_NOINLINE float update_f(int flag, float p)
{
    if (flag) p = u2f(f2u(p) & 0xffff0000u);
    return p;
}
PROBE_NOINLINE float loop_f(int n, const float *x)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = x[i];
        if (i & 1) v = u2f(f2u(v) & 0xffff0000u);
        s += v;
    }
    return s;
}

int main(void)
{
    volatile float vf = -1.0040064f;
    volatile double vd = -1.000000123456789;
    volatile int one = 1;
    const float f = vf, tf = u2f(f2u(f) & 0xffff0000u);
    const double d = vd, td = u2d(d2u(d) & 0xffffffffffff0000ull);
    const float x[4] = { f, f, f, f };
    int bad = 0;
    if (f2u(select_f(one, f)) != f2u(tf))
        bad++, printf("select_f: %.9g, expected %.9g\n", (double)select_f(one, f), (double)tf);
    if (d2u(select_d(one, d)) != d2u(td))
        bad++, printf("select_d: %.17g, expected %.17g\n", select_d(one, d), td);
    if (f2u(update_f(one, f)) != f2u(tf))
        bad++, printf("update_f: %.9g, expected %.9g\n", (double)update_f(one, f), (double)tf);
    if (f2u(select_f(0, f)) != f2u(f))
        bad++, printf("select_f(0): %.9g, expected %.9g\n", (double)select_f(0, f), (double)f);
    {
        float want = 0.0f;
        want += f;
        want += tf;
        want += f;
        want += tf;
        float got = loop_f(4, x);
        if (f2u(got) != f2u(want)) bad++, printf("loop_f: %.9g, expected %.9g\n", (double)got, (double)want);
    }
    return bad ? 1 : 0;
}
