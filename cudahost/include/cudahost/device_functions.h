/* cudahost/device_functions.h: host-mode definitions of CUDA device functions.
 *
 * Included by cudahost/cudahost.h after NVIDIA's cuda_runtime.h, cuda_fp16.h and cuda_bf16.h. With __CUDACC__
 * undefined those headers declare none of the device-side functions below (atomics, the fast-math and
 * rounding-mode intrinsics, the bit-manipulation intrinsics, CUDA's extra math functions and min/max overloads,
 * and part of the fp16/bf16 API), so host mode defines them here with CUDA's signatures.
 *
 * Semantics:
 *  - Atomics are real atomic read-modify-writes (GCC __atomic builtins, sequentially consistent): blocks run
 *    concurrently on worker OS threads, and ThreadSanitizer sees them as atomics. Floating-point and 16-bit
 *    atomics are compare-and-swap loops on the bit pattern. Shared memory uses the same functions.
 *  - _rn intrinsics are the IEEE operation; _rz/_ru/_rd are exact directed roundings of the correctly rounded
 *    result (error-free transformations), not fesetround.
 *  - The fast approximate intrinsics (__expf, __sinf, __fdividef, ...) return the accurate libm value; a GPU
 *    returns an approximation, so tests need a tolerance anyway.
 *  - fp16/bf16 arithmetic rounds once, to nearest even (fma through round-to-odd in double).
 * Only functions that CUDA 13's headers leave undeclared in host mode are defined here: redefining one that
 * NVIDIA already provides would not compile, and the cudahost test suite includes every header together.
 */
#ifndef CUDAHOST_DEVICE_FUNCTIONS_H
#define CUDAHOST_DEVICE_FUNCTIONS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmath>
#include <cfloat>
#include <climits>
#include <limits>

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "cudahost/bits.h"

#define CUDAHOST_DF_ inline __attribute__((always_inline))

namespace cudahost_detail {

template <class To, class From> CUDAHOST_DF_ To bits_as(const From &v) { return cudahost::bit_cast<To>(v); }

/* ---- atomics ------------------------------------------------------------------------------------------- */
#define CUDAHOST_ATOMIC_ORDER_ __ATOMIC_SEQ_CST

template <class T> CUDAHOST_DF_ T atomic_load(T *p) { return __atomic_load_n(p, CUDAHOST_ATOMIC_ORDER_); }

template <class T> CUDAHOST_DF_ bool atomic_cas(T *p, T *expected, T desired)
{
    return __atomic_compare_exchange_n(p, expected, desired, false, CUDAHOST_ATOMIC_ORDER_,
                                       CUDAHOST_ATOMIC_ORDER_);
}

/* Apply f to the value at p atomically (compare-and-swap loop on the integer representation U of T); returns
 * the old value. */
template <class T, class U, class F> CUDAHOST_DF_ T atomic_update(T *address, F f)
{
    static_assert(sizeof(T) == sizeof(U), "size mismatch");
    typedef U __attribute__((may_alias)) alias_u;
    alias_u *p = reinterpret_cast<alias_u *>(address);
    U old = __atomic_load_n(p, CUDAHOST_ATOMIC_ORDER_);
    for (;;) {
        U desired = bits_as<U>(f(bits_as<T>(old)));
        if (__atomic_compare_exchange_n(p, &old, desired, false, CUDAHOST_ATOMIC_ORDER_,
                                        CUDAHOST_ATOMIC_ORDER_))
            return bits_as<T>(old);
    }
}

/* ---- directed rounding ---------------------------------------------------------------------------------- */
enum rmode { RN, RZ, RU, RD };

/* r is the round-to-nearest result of an operation, err_sign the sign of (exact - r). */
template <class F> CUDAHOST_DF_ F directed(F r, int err_sign, rmode m)
{
    if (err_sign == 0 || std::isnan(r) || m == RN) return r;
    const F inf = std::numeric_limits<F>::infinity();
    if (m == RU && err_sign > 0) return std::nextafter(r, inf);
    if (m == RD && err_sign < 0) return std::nextafter(r, -inf);
    if (m == RZ && ((err_sign > 0 && r < 0) || (err_sign < 0 && r > 0))) return std::nextafter(r, F(0));
    return r;
}

/* r == +-inf from finite operands: overflow. */
template <class F> CUDAHOST_DF_ F overflowed(F r, rmode m)
{
    const F big = std::numeric_limits<F>::max();
    if (m == RZ) return r > 0 ? big : -big;
    if (m == RU) return r > 0 ? r : -big;
    if (m == RD) return r > 0 ? big : r;
    return r;
}

template <class F> CUDAHOST_DF_ int sgn(F v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }

template <class F> CUDAHOST_DF_ F add_r(F a, F b, rmode m)
{
    F s = a + b;
    if (m == RN) return s;
    if (std::isinf(s) && std::isfinite(a) && std::isfinite(b)) return overflowed(s, m);
    if (!std::isfinite(s)) return s;
    F bb = s - a;
    F err = (a - (s - bb)) + (b - bb); /* TwoSum: exact */
    if (s == 0 && err == 0 && m == RD) /* an exact zero sum is -0 in round-down unless both operands are +0 */
        return (a == 0 && b == 0 && !std::signbit(a) && !std::signbit(b)) ? F(0) : -F(0);
    return directed(s, sgn(err), m);
}

template <class F> CUDAHOST_DF_ F mul_r(F a, F b, rmode m)
{
    F p = a * b;
    if (m == RN) return p;
    if (std::isinf(p) && std::isfinite(a) && std::isfinite(b)) return overflowed(p, m);
    if (!std::isfinite(p)) return p;
    if (sizeof(F) == 4) return directed(p, sgn((double)a * (double)b - (double)p), m);
    return directed(p, sgn(std::fma(a, b, -p)), m);
}

template <class F> CUDAHOST_DF_ F div_r(F a, F b, rmode m)
{
    F q = a / b;
    if (m == RN) return q;
    if (std::isinf(q) && std::isfinite(a) && b != 0) return overflowed(q, m);
    if (!std::isfinite(q) || b == 0) return q;
    /* exact - q = (a - q*b) / b */
    int s;
    if (sizeof(F) == 4)
        s = sgn((double)a - (double)q * (double)b);
    else
        s = sgn(std::fma(-q, b, a));
    return directed(q, b < 0 ? -s : s, m);
}

template <class F> CUDAHOST_DF_ F sqrt_r(F a, rmode m)
{
    F r = std::sqrt(a);
    if (m == RN || !std::isfinite(r) || r == 0) return r;
    int s;
    if (sizeof(F) == 4)
        s = sgn((double)a - (double)r * (double)r);
    else
        s = sgn(std::fma(-r, r, a));
    return directed(r, s, m);
}

CUDAHOST_DF_ float fmaf_r(float a, float b, float c, rmode m)
{
    float r = std::fma(a, b, c);
    if (m == RN) return r;
    if (std::isinf(r) && std::isfinite(a) && std::isfinite(b) && std::isfinite(c)) return overflowed(r, m);
    if (!std::isfinite(r)) return r;
    /* sign of a*b + c - r, with a*b exact in double */
    double p = (double)a * (double)b, c2 = (double)c, r2 = (double)r;
    double s1 = p + c2, bb = s1 - p, t1 = (p - (s1 - bb)) + (c2 - bb);
    double s2 = s1 - r2, bb2 = s2 - s1, t2 = (s1 - (s2 - bb2)) + (-r2 - bb2);
    return directed(r, sgn(s2 + (t1 + t2)), m);
}

/* double -> float with a rounding mode (RN is the C conversion). */
CUDAHOST_DF_ float d2f_r(double d, rmode m)
{
    float r = (float)d;
    if (m == RN) return r;
    if (std::isinf(r) && std::isfinite(d)) return overflowed(r, m);
    if (!std::isfinite(r)) return r;
    return directed(r, sgn(d - (double)r), m);
}

/* long double (exact for 64-bit integers on x86-64) -> float/double with a rounding mode. */
template <class F> CUDAHOST_DF_ F ld2_r(long double d, rmode m)
{
    F r = (F)d;
    return directed(r, sgn(d - (long double)r), m);
}

/* Round to an integral value with a mode, then convert saturating (NaN -> 0), as cvt.*.{s,u}{32,64} do. */
template <class I, class F> CUDAHOST_DF_ I f2i_r(F v, rmode m)
{
    if (std::isnan(v)) return 0;
    F t;
    switch (m) {
    case RZ: t = std::trunc(v); break;
    case RU: t = std::ceil(v); break;
    case RD: t = std::floor(v); break;
    default: t = std::nearbyint(v); break;
    }
    const long double lo = (long double)std::numeric_limits<I>::min();
    const long double hi = (long double)std::numeric_limits<I>::max();
    if ((long double)t <= lo) return std::numeric_limits<I>::min();
    if ((long double)t >= hi) return std::numeric_limits<I>::max();
    return (I)t;
}

/* double rounded to odd as a float (exact double -> float -> narrower RNE is then correct). */
CUDAHOST_DF_ float round_odd_f(double d)
{
    float f = (float)d;
    if (std::isfinite(f) && (double)f != d && (bits_as<uint32_t>(f) & 1u) == 0)
        f = std::nextafter(f, d > (double)f ? INFINITY : -INFINITY);
    return f;
}

/* a*b + c exactly rounded to odd in double, when a, b are at most 24-bit significands (p = a*b exact). */
CUDAHOST_DF_ double fma_odd(double a, double b, double c)
{
    double p = a * b;
    double s = p + c;
    if (!std::isfinite(s)) return s;
    double bb = s - p;
    double t = (p - (s - bb)) + (c - bb);
    if (t != 0 && (bits_as<uint64_t>(s) & 1u) == 0) s = std::nextafter(s, t > 0 ? INFINITY : -INFINITY);
    return s;
}

CUDAHOST_DF_ __half h_from_d(double d) { return __float2half_rn(round_odd_f(d)); }
CUDAHOST_DF_ __nv_bfloat16 b_from_d(double d) { return __float2bfloat16_rn(round_odd_f(d)); }
CUDAHOST_DF_ float sat01(float v) { return v > 1.0f ? 1.0f : (v >= 0.0f ? v : 0.0f); } /* NaN -> 0 */

/* erfinv: initial guess (Giles' single-precision polynomial), then Newton steps on erf in double. */
CUDAHOST_DF_ double erfinv_d(double y)
{
    if (std::isnan(y) || y < -1 || y > 1) return NAN;
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    double w = -std::log((1.0 - y) * (1.0 + y)), x;
    if (w < 5.0) {
        w -= 2.5;
        double p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
        x = p * y;
    } else {
        w = std::sqrt(w) - 3.0;
        double p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
        x = p * y;
    }
    const double two_over_sqrtpi = 1.1283791670955126;
    for (int i = 0; i < 3; ++i) {
        double d = two_over_sqrtpi * std::exp(-x * x);
        if (d == 0) break;
        x -= (std::erf(x) - y) / d;
    }
    return x;
}

/* erfcinv(y) = x with erfc(x) = y, 0 <= y <= 2; Newton on erfc for accuracy near y -> 0. */
CUDAHOST_DF_ double erfcinv_d(double y)
{
    if (std::isnan(y) || y < 0 || y > 2) return NAN;
    if (y == 0) return INFINITY;
    if (y == 2) return -INFINITY;
    if (y > 0.0625 && y < 1.9375) return erfinv_d(1.0 - y);
    bool neg = y > 1;
    double yy = neg ? 2.0 - y : y;
    double x = std::sqrt(-std::log(yy)); /* asymptotic start */
    const double two_over_sqrtpi = 1.1283791670955126;
    for (int i = 0; i < 60; ++i) {
        double d = -two_over_sqrtpi * std::exp(-x * x);
        if (d == 0) break;
        double step = (std::erfc(x) - yy) / d;
        x -= step;
        if (std::fabs(step) <= 1e-16 * std::fabs(x)) break;
    }
    return neg ? -x : x;
}

CUDAHOST_DF_ double erfcx_d(double x)
{
    if (x < 10.0) return std::exp(x * x) * std::erfc(x);
    /* asymptotic series: 1/(x sqrt(pi)) * sum_n (-1)^n (2n-1)!! / (2x^2)^n */
    double t = 1.0, sum = 1.0, ix2 = 1.0 / (2.0 * x * x);
    for (int n = 1; n < 16; ++n) {
        t *= -(2.0 * n - 1.0) * ix2;
        sum += t;
    }
    return sum / (x * 1.7724538509055160);
}

CUDAHOST_DF_ double sinpi_d(double x)
{
    if (!std::isfinite(x)) return NAN;
    double r = std::fmod(x, 2.0); /* exact */
    if (r == std::trunc(r)) return std::copysign(0.0, x);
    return std::sin(M_PI * r);
}
CUDAHOST_DF_ double cospi_d(double x)
{
    if (!std::isfinite(x)) return NAN;
    double r = std::fmod(std::fabs(x), 2.0);
    if (r == 0.5 || r == 1.5) return 0.0;
    return std::cos(M_PI * r);
}

} /* namespace cudahost_detail */

/* =========================================================================================================== */
/* Atomic functions (global and shared memory; the _block and _system scopes are the same on the host).       */
/* =========================================================================================================== */

#define CUDAHOST_ATOMIC_SCOPES_(ret, name, params, args)                                                     \
    CUDAHOST_DF_ ret name##_block params { return name args; }                                               \
    CUDAHOST_DF_ ret name##_system params { return name args; }

#define CUDAHOST_ATOMIC_FETCH_(name, T, builtin)                                                             \
    CUDAHOST_DF_ T name(T *address, T val) { return builtin(address, val, CUDAHOST_ATOMIC_ORDER_); }         \
    CUDAHOST_ATOMIC_SCOPES_(T, name, (T * address, T val), (address, val))

CUDAHOST_ATOMIC_FETCH_(atomicAdd, int, __atomic_fetch_add)
CUDAHOST_ATOMIC_FETCH_(atomicAdd, unsigned int, __atomic_fetch_add)
CUDAHOST_ATOMIC_FETCH_(atomicAdd, unsigned long long int, __atomic_fetch_add)
CUDAHOST_ATOMIC_FETCH_(atomicSub, int, __atomic_fetch_sub)
CUDAHOST_ATOMIC_FETCH_(atomicSub, unsigned int, __atomic_fetch_sub)
CUDAHOST_ATOMIC_FETCH_(atomicExch, int, __atomic_exchange_n)
CUDAHOST_ATOMIC_FETCH_(atomicExch, unsigned int, __atomic_exchange_n)
CUDAHOST_ATOMIC_FETCH_(atomicExch, unsigned long long int, __atomic_exchange_n)
CUDAHOST_ATOMIC_FETCH_(atomicAnd, int, __atomic_fetch_and)
CUDAHOST_ATOMIC_FETCH_(atomicAnd, unsigned int, __atomic_fetch_and)
CUDAHOST_ATOMIC_FETCH_(atomicAnd, unsigned long long int, __atomic_fetch_and)
CUDAHOST_ATOMIC_FETCH_(atomicAnd, long long int, __atomic_fetch_and)
CUDAHOST_ATOMIC_FETCH_(atomicOr, int, __atomic_fetch_or)
CUDAHOST_ATOMIC_FETCH_(atomicOr, unsigned int, __atomic_fetch_or)
CUDAHOST_ATOMIC_FETCH_(atomicOr, unsigned long long int, __atomic_fetch_or)
CUDAHOST_ATOMIC_FETCH_(atomicOr, long long int, __atomic_fetch_or)
CUDAHOST_ATOMIC_FETCH_(atomicXor, int, __atomic_fetch_xor)
CUDAHOST_ATOMIC_FETCH_(atomicXor, unsigned int, __atomic_fetch_xor)
CUDAHOST_ATOMIC_FETCH_(atomicXor, unsigned long long int, __atomic_fetch_xor)
CUDAHOST_ATOMIC_FETCH_(atomicXor, long long int, __atomic_fetch_xor)
#undef CUDAHOST_ATOMIC_FETCH_

#define CUDAHOST_ATOMIC_MINMAX_(name, T, better)                                                             \
    CUDAHOST_DF_ T name(T *address, T val)                                                                   \
    {                                                                                                        \
        return cudahost_detail::atomic_update<T, T>(address, [val](T old) { return (better) ? val : old; }); \
    }                                                                                                        \
    CUDAHOST_ATOMIC_SCOPES_(T, name, (T * address, T val), (address, val))
CUDAHOST_ATOMIC_MINMAX_(atomicMin, int, val < old)
CUDAHOST_ATOMIC_MINMAX_(atomicMin, unsigned int, val < old)
CUDAHOST_ATOMIC_MINMAX_(atomicMin, unsigned long long int, val < old)
CUDAHOST_ATOMIC_MINMAX_(atomicMin, long long int, val < old)
CUDAHOST_ATOMIC_MINMAX_(atomicMax, int, val > old)
CUDAHOST_ATOMIC_MINMAX_(atomicMax, unsigned int, val > old)
CUDAHOST_ATOMIC_MINMAX_(atomicMax, unsigned long long int, val > old)
CUDAHOST_ATOMIC_MINMAX_(atomicMax, long long int, val > old)
#undef CUDAHOST_ATOMIC_MINMAX_

/* ((old >= val) ? 0 : (old + 1)) and (((old == 0) || (old > val)) ? val : (old - 1)), as CUDA specifies. */
CUDAHOST_DF_ unsigned int atomicInc(unsigned int *address, unsigned int val)
{
    return cudahost_detail::atomic_update<unsigned int, unsigned int>(
        address, [val](unsigned int old) { return old >= val ? 0u : old + 1u; });
}
CUDAHOST_DF_ unsigned int atomicDec(unsigned int *address, unsigned int val)
{
    return cudahost_detail::atomic_update<unsigned int, unsigned int>(
        address, [val](unsigned int old) { return (old == 0u || old > val) ? val : old - 1u; });
}
CUDAHOST_ATOMIC_SCOPES_(unsigned int, atomicInc, (unsigned int *address, unsigned int val), (address, val))
CUDAHOST_ATOMIC_SCOPES_(unsigned int, atomicDec, (unsigned int *address, unsigned int val), (address, val))

#define CUDAHOST_ATOMIC_CAS_(T)                                                                              \
    CUDAHOST_DF_ T atomicCAS(T *address, T compare, T val)                                                   \
    {                                                                                                        \
        cudahost_detail::atomic_cas(address, &compare,                                                       \
                                    val); /* on failure, compare receives the current value */               \
        return compare;                                                                                      \
    }                                                                                                        \
    CUDAHOST_ATOMIC_SCOPES_(T, atomicCAS, (T * address, T compare, T val), (address, compare, val))
CUDAHOST_ATOMIC_CAS_(int)
CUDAHOST_ATOMIC_CAS_(unsigned int)
CUDAHOST_ATOMIC_CAS_(unsigned long long int)
CUDAHOST_ATOMIC_CAS_(unsigned short int)
#undef CUDAHOST_ATOMIC_CAS_

CUDAHOST_DF_ float atomicAdd(float *address, float val)
{
    return cudahost_detail::atomic_update<float, uint32_t>(address, [val](float old) { return old + val; });
}
CUDAHOST_DF_ double atomicAdd(double *address, double val)
{
    return cudahost_detail::atomic_update<double, uint64_t>(address, [val](double old) { return old + val; });
}
CUDAHOST_DF_ float atomicExch(float *address, float val)
{
    return cudahost_detail::atomic_update<float, uint32_t>(address, [val](float) { return val; });
}
CUDAHOST_ATOMIC_SCOPES_(float, atomicAdd, (float *address, float val), (address, val))
CUDAHOST_ATOMIC_SCOPES_(double, atomicAdd, (double *address, double val), (address, val))
CUDAHOST_ATOMIC_SCOPES_(float, atomicExch, (float *address, float val), (address, val))

CUDAHOST_DF_ __half atomicAdd(__half *const address, const __half val)
{
    return cudahost_detail::atomic_update<__half, uint16_t>(address,
                                                            [val](__half old) { return __hadd(old, val); });
}
CUDAHOST_DF_ __half2 atomicAdd(__half2 *const address, const __half2 val)
{
    return cudahost_detail::atomic_update<__half2, uint32_t>(
        address, [val](__half2 old) { return __hadd2(old, val); });
}
CUDAHOST_DF_ __nv_bfloat16 atomicAdd(__nv_bfloat16 *const address, const __nv_bfloat16 val)
{
    return cudahost_detail::atomic_update<__nv_bfloat16, uint16_t>(
        address, [val](__nv_bfloat16 old) { return __hadd(old, val); });
}
CUDAHOST_DF_ __nv_bfloat162 atomicAdd(__nv_bfloat162 *const address, const __nv_bfloat162 val)
{
    return cudahost_detail::atomic_update<__nv_bfloat162, uint32_t>(
        address, [val](__nv_bfloat162 old) { return __hadd2(old, val); });
}
#undef CUDAHOST_ATOMIC_SCOPES_

/* =========================================================================================================== */
/* Loads and stores with cache hints: plain accesses on the host.                                             */
/* =========================================================================================================== */
template <class T> CUDAHOST_DF_ T __ldg(const T *ptr) { return *ptr; }
template <class T> CUDAHOST_DF_ T __ldcg(const T *ptr) { return *ptr; }
template <class T> CUDAHOST_DF_ T __ldca(const T *ptr) { return *ptr; }
template <class T> CUDAHOST_DF_ T __ldcs(const T *ptr) { return *ptr; }
template <class T> CUDAHOST_DF_ T __ldlu(const T *ptr) { return *ptr; }
template <class T> CUDAHOST_DF_ T __ldcv(const T *ptr) { return *ptr; }
template <class T> CUDAHOST_DF_ void __stwb(T *ptr, T value) { *ptr = value; }
template <class T> CUDAHOST_DF_ void __stcg(T *ptr, T value) { *ptr = value; }
template <class T> CUDAHOST_DF_ void __stcs(T *ptr, T value) { *ptr = value; }
template <class T> CUDAHOST_DF_ void __stwt(T *ptr, T value) { *ptr = value; }

/* Profiler triggers: nothing to trigger on the host. */
CUDAHOST_DF_ void __prof_trigger(int) {}

/* =========================================================================================================== */
/* Reinterpretation and integer intrinsics.                                                                   */
/* =========================================================================================================== */
CUDAHOST_DF_ int __float_as_int(float x) { return cudahost_detail::bits_as<int>(x); }
CUDAHOST_DF_ float __int_as_float(int x) { return cudahost_detail::bits_as<float>(x); }
CUDAHOST_DF_ unsigned int __float_as_uint(float x) { return cudahost_detail::bits_as<unsigned int>(x); }
CUDAHOST_DF_ float __uint_as_float(unsigned int x) { return cudahost_detail::bits_as<float>(x); }
CUDAHOST_DF_ long long int __double_as_longlong(double x)
{
    return cudahost_detail::bits_as<long long int>(x);
}
CUDAHOST_DF_ double __longlong_as_double(long long int x) { return cudahost_detail::bits_as<double>(x); }
CUDAHOST_DF_ int __double2hiint(double x) { return (int)(cudahost_detail::bits_as<uint64_t>(x) >> 32); }
CUDAHOST_DF_ int __double2loint(double x) { return (int)(uint32_t)cudahost_detail::bits_as<uint64_t>(x); }
CUDAHOST_DF_ double __hiloint2double(int hi, int lo)
{
    return cudahost_detail::bits_as<double>(((uint64_t)(uint32_t)hi << 32) | (uint64_t)(uint32_t)lo);
}

CUDAHOST_DF_ int __popc(unsigned int x) { return __builtin_popcount(x); }
CUDAHOST_DF_ int __popcll(unsigned long long int x) { return __builtin_popcountll(x); }
CUDAHOST_DF_ int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
CUDAHOST_DF_ int __clzll(long long int x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
CUDAHOST_DF_ int __ffs(int x) { return __builtin_ffs(x); }
CUDAHOST_DF_ int __ffsll(long long int x) { return __builtin_ffsll(x); }
CUDAHOST_DF_ unsigned int __brev(unsigned int x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
    return __builtin_bswap32(x);
}
CUDAHOST_DF_ unsigned long long int __brevll(unsigned long long int x)
{
    return ((unsigned long long)__brev((unsigned int)x) << 32) | __brev((unsigned int)(x >> 32));
}
CUDAHOST_DF_ unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s)
{
    uint64_t v = ((uint64_t)y << 32) | x;
    unsigned int r = 0;
    for (int i = 0; i < 4; ++i) r |= (unsigned int)((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xFFu) << (8 * i);
    return r;
}
CUDAHOST_DF_ unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift)
{
    return (unsigned int)(((((uint64_t)hi << 32) | lo) << (shift & 31u)) >> 32);
}
CUDAHOST_DF_ unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift)
{
    return (unsigned int)(((((uint64_t)hi << 32) | lo) << (shift > 32u ? 32u : shift)) >> 32);
}
CUDAHOST_DF_ unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift)
{
    return (unsigned int)((((uint64_t)hi << 32) | lo) >> (shift & 31u));
}
CUDAHOST_DF_ unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift)
{
    return (unsigned int)((((uint64_t)hi << 32) | lo) >> (shift > 32u ? 32u : shift));
}
/* __mul24/__umul24: product of the low 24 bits (sign-extended for __mul24), low 32 bits of the result. */
CUDAHOST_DF_ int __mul24(int x, int y)
{
    int64_t a = (int64_t)((uint64_t)(uint32_t)x << 40) >> 40,
            b = (int64_t)((uint64_t)(uint32_t)y << 40) >> 40;
    return (int)(uint32_t)(uint64_t)(a * b);
}
CUDAHOST_DF_ unsigned int __umul24(unsigned int x, unsigned int y)
{
    return (unsigned int)((uint64_t)(x & 0xFFFFFFu) * (uint64_t)(y & 0xFFFFFFu));
}
CUDAHOST_DF_ int __mulhi(int x, int y) { return (int)(((int64_t)x * (int64_t)y) >> 32); }
CUDAHOST_DF_ unsigned int __umulhi(unsigned int x, unsigned int y)
{
    return (unsigned int)(((uint64_t)x * (uint64_t)y) >> 32);
}
CUDAHOST_DF_ long long int __mul64hi(long long int x, long long int y)
{
    return (long long int)(((__int128)x * (__int128)y) >> 64);
}
CUDAHOST_DF_ unsigned long long int __umul64hi(unsigned long long int x, unsigned long long int y)
{
    return (unsigned long long int)(((unsigned __int128)x * (unsigned __int128)y) >> 64);
}
CUDAHOST_DF_ int __hadd(int x, int y) { return (int)(((int64_t)x + (int64_t)y) >> 1); }
CUDAHOST_DF_ int __rhadd(int x, int y) { return (int)(((int64_t)x + (int64_t)y + 1) >> 1); }
CUDAHOST_DF_ unsigned int __uhadd(unsigned int x, unsigned int y)
{
    return (unsigned int)(((uint64_t)x + (uint64_t)y) >> 1);
}
CUDAHOST_DF_ unsigned int __urhadd(unsigned int x, unsigned int y)
{
    return (unsigned int)(((uint64_t)x + (uint64_t)y + 1) >> 1);
}
CUDAHOST_DF_ unsigned int __sad(int x, int y, unsigned int z)
{
    return z + (unsigned int)(x > y ? (int64_t)x - y : (int64_t)y - x);
}
CUDAHOST_DF_ unsigned int __usad(unsigned int x, unsigned int y, unsigned int z)
{
    return z + (x > y ? x - y : y - x);
}
CUDAHOST_DF_ int __dp4a(int srcA, int srcB, int c)
{
    int r = c;
    for (int i = 0; i < 4; ++i) r += (int)(int8_t)(srcA >> (8 * i)) * (int)(int8_t)(srcB >> (8 * i));
    return r;
}
CUDAHOST_DF_ unsigned int __dp4a(unsigned int srcA, unsigned int srcB, unsigned int c)
{
    unsigned int r = c;
    for (int i = 0; i < 4; ++i) r += ((srcA >> (8 * i)) & 0xFFu) * ((srcB >> (8 * i)) & 0xFFu);
    return r;
}

/* =========================================================================================================== */
/* min/max overloads and the integer min/max functions CUDA declares.                                         */
/* =========================================================================================================== */
#define CUDAHOST_MINMAX_(R, A, B)                                                                            \
    CUDAHOST_DF_ R min(const A a, const B b) { return (R)a < (R)b ? (R)a : (R)b; }                           \
    CUDAHOST_DF_ R max(const A a, const B b) { return (R)a > (R)b ? (R)a : (R)b; }
CUDAHOST_MINMAX_(int, int, int)
CUDAHOST_MINMAX_(unsigned int, unsigned int, unsigned int)
CUDAHOST_MINMAX_(unsigned int, int, unsigned int)
CUDAHOST_MINMAX_(unsigned int, unsigned int, int)
CUDAHOST_MINMAX_(long int, long int, long int)
CUDAHOST_MINMAX_(unsigned long int, unsigned long int, unsigned long int)
CUDAHOST_MINMAX_(unsigned long int, long int, unsigned long int)
CUDAHOST_MINMAX_(unsigned long int, unsigned long int, long int)
CUDAHOST_MINMAX_(long long int, long long int, long long int)
CUDAHOST_MINMAX_(unsigned long long int, unsigned long long int, unsigned long long int)
CUDAHOST_MINMAX_(unsigned long long int, long long int, unsigned long long int)
CUDAHOST_MINMAX_(unsigned long long int, unsigned long long int, long long int)
#undef CUDAHOST_MINMAX_
/* floating-point min/max are fmin/fmax (a NaN operand yields the other one) */
CUDAHOST_DF_ float min(const float a, const float b) { return fminf(a, b); }
CUDAHOST_DF_ double min(const double a, const double b) { return fmin(a, b); }
CUDAHOST_DF_ double min(const float a, const double b) { return fmin((double)a, b); }
CUDAHOST_DF_ double min(const double a, const float b) { return fmin(a, (double)b); }
CUDAHOST_DF_ float max(const float a, const float b) { return fmaxf(a, b); }
CUDAHOST_DF_ double max(const double a, const double b) { return fmax(a, b); }
CUDAHOST_DF_ double max(const float a, const double b) { return fmax((double)a, b); }
CUDAHOST_DF_ double max(const double a, const float b) { return fmax(a, (double)b); }
CUDAHOST_DF_ unsigned int umin(const unsigned int a, const unsigned int b) { return a < b ? a : b; }
CUDAHOST_DF_ unsigned int umax(const unsigned int a, const unsigned int b) { return a > b ? a : b; }
CUDAHOST_DF_ long long int llmin(const long long int a, const long long int b) { return a < b ? a : b; }
CUDAHOST_DF_ long long int llmax(const long long int a, const long long int b) { return a > b ? a : b; }
CUDAHOST_DF_ unsigned long long int ullmin(const unsigned long long int a, const unsigned long long int b)
{
    return a < b ? a : b;
}
CUDAHOST_DF_ unsigned long long int ullmax(const unsigned long long int a, const unsigned long long int b)
{
    return a > b ? a : b;
}

/* =========================================================================================================== */
/* Single- and double-precision intrinsics.                                                                    */
/* =========================================================================================================== */
CUDAHOST_DF_ float __expf(float x) { return expf(x); }
CUDAHOST_DF_ float __exp10f(float x) { return exp10f(x); }
CUDAHOST_DF_ float __logf(float x) { return logf(x); }
CUDAHOST_DF_ float __log2f(float x) { return log2f(x); }
CUDAHOST_DF_ float __log10f(float x) { return log10f(x); }
CUDAHOST_DF_ float __sinf(float x) { return sinf(x); }
CUDAHOST_DF_ float __cosf(float x) { return cosf(x); }
CUDAHOST_DF_ float __tanf(float x) { return tanf(x); }
CUDAHOST_DF_ void __sincosf(float x, float *sptr, float *cptr) { sincosf(x, sptr, cptr); }
CUDAHOST_DF_ float __powf(float x, float y) { return powf(x, y); }
CUDAHOST_DF_ float __fdividef(float x, float y) { return x / y; }
CUDAHOST_DF_ float fdividef(float x, float y) { return x / y; }
CUDAHOST_DF_ float __saturatef(float x) { return cudahost_detail::sat01(x); }
CUDAHOST_DF_ float __frsqrt_rn(float x) { return (float)(1.0 / std::sqrt((double)x)); }

#define CUDAHOST_RMODES_(F)                                                                                  \
    F(rn, cudahost_detail::RN)                                                                               \
    F(rz, cudahost_detail::RZ)                                                                               \
    F(ru, cudahost_detail::RU)                                                                               \
    F(rd, cudahost_detail::RD)
#define CUDAHOST_FOPS_(sfx, m)                                                                               \
    CUDAHOST_DF_ float __fadd_##sfx(float x, float y) { return cudahost_detail::add_r(x, y, m); }            \
    CUDAHOST_DF_ float __fsub_##sfx(float x, float y) { return cudahost_detail::add_r(x, -y, m); }           \
    CUDAHOST_DF_ float __fmul_##sfx(float x, float y) { return cudahost_detail::mul_r(x, y, m); }            \
    CUDAHOST_DF_ float __fdiv_##sfx(float x, float y) { return cudahost_detail::div_r(x, y, m); }            \
    CUDAHOST_DF_ float __frcp_##sfx(float x) { return cudahost_detail::div_r(1.0f, x, m); }                  \
    CUDAHOST_DF_ float __fsqrt_##sfx(float x) { return cudahost_detail::sqrt_r(x, m); }                      \
    CUDAHOST_DF_ float __fmaf_##sfx(float x, float y, float z)                                               \
    {                                                                                                        \
        return cudahost_detail::fmaf_r(x, y, z, m);                                                          \
    }                                                                                                        \
    CUDAHOST_DF_ double __dadd_##sfx(double x, double y) { return cudahost_detail::add_r(x, y, m); }         \
    CUDAHOST_DF_ double __dsub_##sfx(double x, double y) { return cudahost_detail::add_r(x, -y, m); }        \
    CUDAHOST_DF_ double __dmul_##sfx(double x, double y) { return cudahost_detail::mul_r(x, y, m); }         \
    CUDAHOST_DF_ double __ddiv_##sfx(double x, double y) { return cudahost_detail::div_r(x, y, m); }         \
    CUDAHOST_DF_ double __drcp_##sfx(double x) { return cudahost_detail::div_r(1.0, x, m); }                 \
    CUDAHOST_DF_ double __dsqrt_##sfx(double x) { return cudahost_detail::sqrt_r(x, m); }                    \
    CUDAHOST_DF_ int __float2int_##sfx(float x) { return cudahost_detail::f2i_r<int>(x, m); }                \
    CUDAHOST_DF_ unsigned int __float2uint_##sfx(float x)                                                    \
    {                                                                                                        \
        return cudahost_detail::f2i_r<unsigned int>(x, m);                                                   \
    }                                                                                                        \
    CUDAHOST_DF_ long long int __float2ll_##sfx(float x)                                                     \
    {                                                                                                        \
        return cudahost_detail::f2i_r<long long int>(x, m);                                                  \
    }                                                                                                        \
    CUDAHOST_DF_ unsigned long long int __float2ull_##sfx(float x)                                           \
    {                                                                                                        \
        return cudahost_detail::f2i_r<unsigned long long int>(x, m);                                         \
    }                                                                                                        \
    CUDAHOST_DF_ int __double2int_##sfx(double x) { return cudahost_detail::f2i_r<int>(x, m); }              \
    CUDAHOST_DF_ unsigned int __double2uint_##sfx(double x)                                                  \
    {                                                                                                        \
        return cudahost_detail::f2i_r<unsigned int>(x, m);                                                   \
    }                                                                                                        \
    CUDAHOST_DF_ long long int __double2ll_##sfx(double x)                                                   \
    {                                                                                                        \
        return cudahost_detail::f2i_r<long long int>(x, m);                                                  \
    }                                                                                                        \
    CUDAHOST_DF_ unsigned long long int __double2ull_##sfx(double x)                                         \
    {                                                                                                        \
        return cudahost_detail::f2i_r<unsigned long long int>(x, m);                                         \
    }                                                                                                        \
    CUDAHOST_DF_ float __double2float_##sfx(double x) { return cudahost_detail::d2f_r(x, m); }               \
    CUDAHOST_DF_ float __int2float_##sfx(int x) { return cudahost_detail::d2f_r((double)x, m); }             \
    CUDAHOST_DF_ float __uint2float_##sfx(unsigned int x) { return cudahost_detail::d2f_r((double)x, m); }   \
    CUDAHOST_DF_ float __ll2float_##sfx(long long int x)                                                     \
    {                                                                                                        \
        return cudahost_detail::ld2_r<float>((long double)x, m);                                             \
    }                                                                                                        \
    CUDAHOST_DF_ float __ull2float_##sfx(unsigned long long int x)                                           \
    {                                                                                                        \
        return cudahost_detail::ld2_r<float>((long double)x, m);                                             \
    }                                                                                                        \
    CUDAHOST_DF_ double __ll2double_##sfx(long long int x)                                                   \
    {                                                                                                        \
        return cudahost_detail::ld2_r<double>((long double)x, m);                                            \
    }                                                                                                        \
    CUDAHOST_DF_ double __ull2double_##sfx(unsigned long long int x)                                         \
    {                                                                                                        \
        return cudahost_detail::ld2_r<double>((long double)x, m);                                            \
    }
CUDAHOST_RMODES_(CUDAHOST_FOPS_)
#undef CUDAHOST_FOPS_
#undef CUDAHOST_RMODES_
CUDAHOST_DF_ float __fmaf_ieee_rn(float x, float y, float z) { return fmaf(x, y, z); }
CUDAHOST_DF_ double __fma_rn(double x, double y, double z) { return fma(x, y, z); }
CUDAHOST_DF_ double __int2double_rn(int x) { return (double)x; }
CUDAHOST_DF_ double __uint2double_rn(unsigned int x) { return (double)x; }

/* =========================================================================================================== */
/* CUDA math functions that glibc does not have.                                                              */
/* =========================================================================================================== */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 41))
#define CUDAHOST_LIBC_HAS_C23_MATH_ 1 /* sinpi, cospi, rsqrt (and float versions) come from <math.h> */
#endif
#ifndef CUDAHOST_LIBC_HAS_C23_MATH_
CUDAHOST_DF_ float rsqrtf(float x) { return (float)(1.0 / std::sqrt((double)x)); }
CUDAHOST_DF_ double rsqrt(double x) { return 1.0 / std::sqrt(x); }
#endif
CUDAHOST_DF_ float rsqrt(float x) { return rsqrtf(x); }
CUDAHOST_DF_ float rcbrtf(float x) { return (float)(1.0 / std::cbrt((double)x)); }
CUDAHOST_DF_ double rcbrt(double x) { return 1.0 / std::cbrt(x); }
CUDAHOST_DF_ float rcbrt(float x) { return rcbrtf(x); }
#ifndef CUDAHOST_LIBC_HAS_C23_MATH_
CUDAHOST_DF_ float sinpif(float x) { return (float)cudahost_detail::sinpi_d((double)x); }
CUDAHOST_DF_ double sinpi(double x) { return cudahost_detail::sinpi_d(x); }
CUDAHOST_DF_ float cospif(float x) { return (float)cudahost_detail::cospi_d((double)x); }
CUDAHOST_DF_ double cospi(double x) { return cudahost_detail::cospi_d(x); }
#endif
CUDAHOST_DF_ float sinpi(float x) { return sinpif(x); }
CUDAHOST_DF_ float cospi(float x) { return cospif(x); }
CUDAHOST_DF_ void sincospif(float x, float *s, float *c)
{
    *s = sinpif(x);
    *c = cospif(x);
}
CUDAHOST_DF_ void sincospi(double x, double *s, double *c)
{
    *s = sinpi(x);
    *c = cospi(x);
}
CUDAHOST_DF_ void sincos(float x, float *s, float *c) { sincosf(x, s, c); }
CUDAHOST_DF_ void sincospi(float x, float *s, float *c) { sincospif(x, s, c); }
/* modified Bessel functions of the first kind, orders 0 and 1 (C++17 special functions) */
CUDAHOST_DF_ double cyl_bessel_i0(double x) { return std::cyl_bessel_i(0.0, std::fabs(x)); }
CUDAHOST_DF_ double cyl_bessel_i1(double x) { return std::copysign(std::cyl_bessel_i(1.0, std::fabs(x)), x); }
CUDAHOST_DF_ float cyl_bessel_i0f(float x) { return (float)cyl_bessel_i0((double)x); }
CUDAHOST_DF_ float cyl_bessel_i1f(float x) { return (float)cyl_bessel_i1((double)x); }
CUDAHOST_DF_ float erfinvf(float x) { return (float)cudahost_detail::erfinv_d((double)x); }
CUDAHOST_DF_ double erfinv(double x) { return cudahost_detail::erfinv_d(x); }
CUDAHOST_DF_ float erfinv(float x) { return erfinvf(x); }
CUDAHOST_DF_ float erfcinvf(float x) { return (float)cudahost_detail::erfcinv_d((double)x); }
CUDAHOST_DF_ double erfcinv(double x) { return cudahost_detail::erfcinv_d(x); }
CUDAHOST_DF_ float erfcinv(float x) { return erfcinvf(x); }
CUDAHOST_DF_ float erfcxf(float x) { return (float)cudahost_detail::erfcx_d((double)x); }
CUDAHOST_DF_ double erfcx(double x) { return cudahost_detail::erfcx_d(x); }
CUDAHOST_DF_ float erfcx(float x) { return erfcxf(x); }
/* normcdf(x) = erfc(-x / sqrt(2)) / 2; normcdfinv(p) = -sqrt(2) * erfcinv(2p) */
CUDAHOST_DF_ double normcdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752440); }
CUDAHOST_DF_ float normcdff(float x) { return (float)normcdf((double)x); }
CUDAHOST_DF_ float normcdf(float x) { return normcdff(x); }
CUDAHOST_DF_ double normcdfinv(double p)
{
    return -1.41421356237309504880 * cudahost_detail::erfcinv_d(2.0 * p);
}
CUDAHOST_DF_ float normcdfinvf(float p) { return (float)normcdfinv((double)p); }
CUDAHOST_DF_ float normcdfinv(float p) { return normcdfinvf(p); }
CUDAHOST_DF_ float rhypotf(float x, float y) { return (float)(1.0 / std::hypot((double)x, (double)y)); }
CUDAHOST_DF_ double rhypot(double x, double y) { return 1.0 / std::hypot(x, y); }
CUDAHOST_DF_ float norm3df(float a, float b, float c)
{
    return (float)std::hypot((double)a, (double)b, (double)c);
}
CUDAHOST_DF_ double norm3d(double a, double b, double c) { return std::hypot(a, b, c); }
CUDAHOST_DF_ float rnorm3df(float a, float b, float c)
{
    return (float)(1.0 / std::hypot((double)a, (double)b, (double)c));
}
CUDAHOST_DF_ double rnorm3d(double a, double b, double c) { return 1.0 / std::hypot(a, b, c); }
CUDAHOST_DF_ float norm4df(float a, float b, float c, float d)
{
    return (float)std::sqrt((double)a * a + (double)b * b + (double)c * c + (double)d * d);
}
CUDAHOST_DF_ double norm4d(double a, double b, double c, double d)
{
    return std::hypot(std::hypot(a, b), std::hypot(c, d));
}
CUDAHOST_DF_ float rnorm4df(float a, float b, float c, float d) { return 1.0f / norm4df(a, b, c, d); }
CUDAHOST_DF_ double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
CUDAHOST_DF_ float normf(int dim, const float *p)
{
    double s = 0;
    for (int i = 0; i < dim; ++i) s += (double)p[i] * p[i];
    return (float)std::sqrt(s);
}
CUDAHOST_DF_ double norm(int dim, const double *p)
{
    long double s = 0;
    for (int i = 0; i < dim; ++i) s += (long double)p[i] * p[i];
    return (double)std::sqrt(s);
}
CUDAHOST_DF_ float rnormf(int dim, const float *p) { return 1.0f / normf(dim, p); }
CUDAHOST_DF_ double rnorm(int dim, const double *p) { return 1.0 / norm(dim, p); }

/* =========================================================================================================== */
/* fp16 / bf16 device functions NVIDIA's headers keep behind __CUDACC__.                                      */
/* =========================================================================================================== */
#define CUDAHOST_H16_(H, H2, from_d, tofloat)                                                                \
    CUDAHOST_DF_ H __hfma(const H a, const H b, const H c)                                                   \
    {                                                                                                        \
        return from_d(cudahost_detail::fma_odd(tofloat(a), tofloat(b), tofloat(c)));                         \
    }                                                                                                        \
    CUDAHOST_DF_ H __hfma_sat(const H a, const H b, const H c)                                               \
    {                                                                                                        \
        H r = __hfma(a, b, c);                                                                               \
        return from_d(cudahost_detail::sat01(tofloat(r)));                                                   \
    }                                                                                                        \
    CUDAHOST_DF_ H __hfma_relu(const H a, const H b, const H c)                                              \
    {                                                                                                        \
        H r = __hfma(a, b, c);                                                                               \
        float f = tofloat(r);                                                                                \
        return (f < 0.0f) ? from_d(0.0) : r; /* NaN stays NaN */                                             \
    }                                                                                                        \
    CUDAHOST_DF_ H2 __hfma2(const H2 a, const H2 b, const H2 c)                                              \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = __hfma(a.x, b.x, c.x);                                                                         \
        r.y = __hfma(a.y, b.y, c.y);                                                                         \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 __hfma2_sat(const H2 a, const H2 b, const H2 c)                                          \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = __hfma_sat(a.x, b.x, c.x);                                                                     \
        r.y = __hfma_sat(a.y, b.y, c.y);                                                                     \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 __hfma2_relu(const H2 a, const H2 b, const H2 c)                                         \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = __hfma_relu(a.x, b.x, c.x);                                                                    \
        r.y = __hfma_relu(a.y, b.y, c.y);                                                                    \
        return r;                                                                                            \
    }
namespace cudahost_detail {
CUDAHOST_DF_ double h2d(const __half h) { return (double)__half2float(h); }
CUDAHOST_DF_ double b2d(const __nv_bfloat16 h) { return (double)__bfloat162float(h); }
} /* namespace cudahost_detail */
CUDAHOST_H16_(__half, __half2, cudahost_detail::h_from_d, cudahost_detail::h2d)
CUDAHOST_H16_(__nv_bfloat16, __nv_bfloat162, cudahost_detail::b_from_d, cudahost_detail::b2d)
#undef CUDAHOST_H16_

/* Elementary functions: evaluated in double, rounded once to the 16-bit format. */
#define CUDAHOST_H16_MATHS_(H, H2, from_d, tofloat)                                                          \
    CUDAHOST_DF_ H hexp(const H a) { return from_d(std::exp(tofloat(a))); }                                  \
    CUDAHOST_DF_ H hexp2(const H a) { return from_d(std::exp2(tofloat(a))); }                                \
    CUDAHOST_DF_ H hexp10(const H a) { return from_d(std::pow(10.0, tofloat(a))); }                          \
    CUDAHOST_DF_ H hlog(const H a) { return from_d(std::log(tofloat(a))); }                                  \
    CUDAHOST_DF_ H hlog2(const H a) { return from_d(std::log2(tofloat(a))); }                                \
    CUDAHOST_DF_ H hlog10(const H a) { return from_d(std::log10(tofloat(a))); }                              \
    CUDAHOST_DF_ H hsqrt(const H a) { return from_d(std::sqrt(tofloat(a))); }                                \
    CUDAHOST_DF_ H hrsqrt(const H a) { return from_d(1.0 / std::sqrt(tofloat(a))); }                         \
    CUDAHOST_DF_ H hrcp(const H a) { return from_d(1.0 / tofloat(a)); }                                      \
    CUDAHOST_DF_ H hsin(const H a) { return from_d(std::sin(tofloat(a))); }                                  \
    CUDAHOST_DF_ H hcos(const H a) { return from_d(std::cos(tofloat(a))); }                                  \
    CUDAHOST_DF_ H htanh(const H a) { return from_d(std::tanh(tofloat(a))); }                                \
    CUDAHOST_DF_ H htanh_approx(const H a) { return htanh(a); }                                              \
    CUDAHOST_DF_ H hceil(const H a) { return from_d(std::ceil(tofloat(a))); }                                \
    CUDAHOST_DF_ H hfloor(const H a) { return from_d(std::floor(tofloat(a))); }                              \
    CUDAHOST_DF_ H htrunc(const H a) { return from_d(std::trunc(tofloat(a))); }                              \
    CUDAHOST_DF_ H hrint(const H a) { return from_d(std::nearbyint(tofloat(a))); }                           \
    CUDAHOST_DF_ H2 h2exp(const H2 a)                                                                        \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hexp(a.x);                                                                                     \
        r.y = hexp(a.y);                                                                                     \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2exp2(const H2 a)                                                                       \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hexp2(a.x);                                                                                    \
        r.y = hexp2(a.y);                                                                                    \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2exp10(const H2 a)                                                                      \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hexp10(a.x);                                                                                   \
        r.y = hexp10(a.y);                                                                                   \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2log(const H2 a)                                                                        \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hlog(a.x);                                                                                     \
        r.y = hlog(a.y);                                                                                     \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2log2(const H2 a)                                                                       \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hlog2(a.x);                                                                                    \
        r.y = hlog2(a.y);                                                                                    \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2log10(const H2 a)                                                                      \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hlog10(a.x);                                                                                   \
        r.y = hlog10(a.y);                                                                                   \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2sqrt(const H2 a)                                                                       \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hsqrt(a.x);                                                                                    \
        r.y = hsqrt(a.y);                                                                                    \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2rsqrt(const H2 a)                                                                      \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hrsqrt(a.x);                                                                                   \
        r.y = hrsqrt(a.y);                                                                                   \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2rcp(const H2 a)                                                                        \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hrcp(a.x);                                                                                     \
        r.y = hrcp(a.y);                                                                                     \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2sin(const H2 a)                                                                        \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hsin(a.x);                                                                                     \
        r.y = hsin(a.y);                                                                                     \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2cos(const H2 a)                                                                        \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hcos(a.x);                                                                                     \
        r.y = hcos(a.y);                                                                                     \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2tanh(const H2 a)                                                                       \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = htanh(a.x);                                                                                    \
        r.y = htanh(a.y);                                                                                    \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2ceil(const H2 a)                                                                       \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hceil(a.x);                                                                                    \
        r.y = hceil(a.y);                                                                                    \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2floor(const H2 a)                                                                      \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hfloor(a.x);                                                                                   \
        r.y = hfloor(a.y);                                                                                   \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2trunc(const H2 a)                                                                      \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = htrunc(a.x);                                                                                   \
        r.y = htrunc(a.y);                                                                                   \
        return r;                                                                                            \
    }                                                                                                        \
    CUDAHOST_DF_ H2 h2rint(const H2 a)                                                                       \
    {                                                                                                        \
        H2 r;                                                                                                \
        r.x = hrint(a.x);                                                                                    \
        r.y = hrint(a.y);                                                                                    \
        return r;                                                                                            \
    }
CUDAHOST_H16_MATHS_(__half, __half2, cudahost_detail::h_from_d, cudahost_detail::h2d)
CUDAHOST_H16_MATHS_(__nv_bfloat16, __nv_bfloat162, cudahost_detail::b_from_d, cudahost_detail::b2d)
#undef CUDAHOST_H16_MATHS_

/* Conversions to integers with a rounding mode (the _rz ones are NVIDIA's). Saturating, NaN -> 0. */
#define CUDAHOST_H16_TOINT_(pfx, H, tofloat, sfx, m)                                                         \
    CUDAHOST_DF_ int pfx##2int_##sfx(const H h) { return cudahost_detail::f2i_r<int>(tofloat(h), m); }       \
    CUDAHOST_DF_ unsigned int pfx##2uint_##sfx(const H h)                                                    \
    {                                                                                                        \
        return cudahost_detail::f2i_r<unsigned int>(tofloat(h), m);                                          \
    }                                                                                                        \
    CUDAHOST_DF_ short int pfx##2short_##sfx(const H h)                                                      \
    {                                                                                                        \
        return cudahost_detail::f2i_r<short int>(tofloat(h), m);                                             \
    }                                                                                                        \
    CUDAHOST_DF_ unsigned short int pfx##2ushort_##sfx(const H h)                                            \
    {                                                                                                        \
        return cudahost_detail::f2i_r<unsigned short int>(tofloat(h), m);                                    \
    }                                                                                                        \
    CUDAHOST_DF_ long long int pfx##2ll_##sfx(const H h)                                                     \
    {                                                                                                        \
        return cudahost_detail::f2i_r<long long int>(tofloat(h), m);                                         \
    }                                                                                                        \
    CUDAHOST_DF_ unsigned long long int pfx##2ull_##sfx(const H h)                                           \
    {                                                                                                        \
        return cudahost_detail::f2i_r<unsigned long long int>(tofloat(h), m);                                \
    }
CUDAHOST_H16_TOINT_(__half, __half, __half2float, rn, cudahost_detail::RN)
CUDAHOST_H16_TOINT_(__half, __half, __half2float, ru, cudahost_detail::RU)
CUDAHOST_H16_TOINT_(__half, __half, __half2float, rd, cudahost_detail::RD)
CUDAHOST_H16_TOINT_(__bfloat16, __nv_bfloat16, __bfloat162float, rn, cudahost_detail::RN)
CUDAHOST_H16_TOINT_(__bfloat16, __nv_bfloat16, __bfloat162float, ru, cudahost_detail::RU)
CUDAHOST_H16_TOINT_(__bfloat16, __nv_bfloat16, __bfloat162float, rd, cudahost_detail::RD)
#undef CUDAHOST_H16_TOINT_

#undef CUDAHOST_DF_
#endif /* CUDAHOST_DEVICE_FUNCTIONS_H */
