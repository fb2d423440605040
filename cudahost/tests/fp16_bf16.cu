// fp16 and bf16 device functions in kernels: conversions (round to nearest even, checked bit for bit against a
// host implementation of the rounding), arithmetic operators and intrinsics (__hadd, __hmul, __hfma with a
// single rounding, __hneg, __habs, __hmax, __hmin), comparisons, the 2-element types (__half2,
// __nv_bfloat162: __hadd2, __hmul2, __hfma2, __floats2*, __low2float/__high2float), elementary functions
// (hexp, hsqrt, hrsqrt, ...), conversions to integers with rounding modes, and shuffles of 16-bit values.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define NH 24  // fp16 results per input
#define NB 24  // bf16 results per input

__global__ void half_ops(const float *in, unsigned short *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xf = in[i], yf = in[(i + 1) % n], zf = in[(i + 2) % n];
  const __half x = __float2half_rn(xf), y = __float2half(yf), z = __float2half_rn(zf);
  __half r[NH];
  r[0] = x;
  r[1] = __hadd(x, y);
  r[2] = __hmul(x, y);
  r[3] = __hfma(x, y, z);
  r[4] = x + y;
  r[5] = x * y - z;
  r[6] = __hneg(x);
  r[7] = __habs(x);
  r[8] = __hmax(x, y);
  r[9] = __hmin(x, y);
  r[10] = __hsub(x, y);
  r[11] = __hdiv(x, y);
  r[12] = (x < y) ? x : y;
  r[13] = __heq(x, x) ? __float2half(1.0f) : __float2half(0.0f);
  const __half2 a = __floats2half2_rn(xf, yf), b = __halves2half2(y, z);
  const __half2 f2 = __hfma2(a, b, a), s2 = __hadd2(a, b), m2 = __hmul2(a, b);
  r[14] = __low2half(f2);
  r[15] = __high2half(f2);
  r[16] = __low2half(s2);
  r[17] = __high2half(m2);
  r[18] = hsqrt(__habs(x));
  r[19] = hexp(__hmul(x, __float2half(0.25f)));
  r[20] = __float2half(__half2float(x) * 0.5f);
  r[21] = __int2half_rn(i * 37 - 4000);
  r[22] = __shfl_xor_sync(0xFFFFFFFFu, x, 1);
  r[23] = __float2half_rn((float)__half2int_rn(__hmul(x, __float2half(8.0f))));
  unsigned short *o = out + (size_t)i * NH;
  for (int k = 0; k < NH; ++k) o[k] = __half_as_ushort(r[k]);
}

__global__ void bf16_ops(const float *in, unsigned short *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xf = in[i], yf = in[(i + 1) % n], zf = in[(i + 2) % n];
  const __nv_bfloat16 x = __float2bfloat16_rn(xf), y = __float2bfloat16(yf), z = __float2bfloat16_rn(zf);
  __nv_bfloat16 r[NB];
  r[0] = x;
  r[1] = __hadd(x, y);
  r[2] = __hmul(x, y);
  r[3] = __hfma(x, y, z);
  r[4] = x + y;
  r[5] = __hmul(x, y) - z;
  r[6] = __hneg(x);
  r[7] = __habs(x);
  r[8] = __hmax(x, y);
  r[9] = __hmin(x, y);
  r[10] = __hsub(x, y);
  r[11] = __hdiv(x, y);
  r[12] = (x < y) ? x : y;
  r[13] = __heq(x, x) ? __float2bfloat16(1.0f) : __float2bfloat16(0.0f);
  const __nv_bfloat162 a = __floats2bfloat162_rn(xf, yf), b = __halves2bfloat162(y, z);
  const __nv_bfloat162 f2 = __hfma2(a, b, a), s2 = __hadd2(a, b), m2 = __hmul2(a, b);
  r[14] = __low2bfloat16(f2);
  r[15] = __high2bfloat16(f2);
  r[16] = __low2bfloat16(s2);
  r[17] = __high2bfloat16(m2);
  r[18] = hsqrt(__habs(x));
  r[19] = hexp(__hmul(x, __float2bfloat16(0.25f)));
  r[20] = __float2bfloat16(__bfloat162float(x) * 0.5f);
  r[21] = __float2bfloat16_rn(__low2float(s2) + __high2float(m2));
  r[22] = __shfl_xor_sync(0xFFFFFFFFu, x, 1);
  r[23] = __float2bfloat16_rn((float)__bfloat162int_rn(__hmul(x, __float2bfloat16(8.0f))));
  unsigned short *o = out + (size_t)i * NB;
  for (int k = 0; k < NB; ++k) o[k] = __bfloat16_as_ushort(r[k]);
}

// ---- host: round to nearest even from double, by the bits ---------------------------------------------------------
// p: significand bits (11 fp16, 8 bf16), emin: exponent of the smallest normal, emax: exponent of the largest
static double round_to(double v, int p, int emin, int emax) {
  if (v == 0 || isnan(v) || isinf(v)) return v;
  int e;
  frexp(fabs(v), &e);  // |v| = m 2^e, m in [0.5, 1)
  int exp = e - 1;
  if (exp < emin) exp = emin;
  const double ulp = ldexp(1.0, exp - (p - 1));
  const double q = fabs(v) / ulp, fl = floor(q), rem = q - fl;
  double n = fl;
  if (rem > 0.5 || (rem == 0.5 && fmod(fl, 2.0) != 0)) n += 1;
  double r = n * ulp;
  const double maxv = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
  if (r > maxv) r = INFINITY;
  return v < 0 ? -r : r;
}
static double h_round(double v) { return round_to(v, 11, -14, 15); }
static double b_round(double v) { return round_to(v, 8, -126, 127); }
static double h_val(unsigned short bits) {
  const int s = bits >> 15, e = (bits >> 10) & 31, m = bits & 1023;
  double v = e == 0 ? ldexp(m, -24) : (e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25));
  return s ? -v : v;
}
static double b_val(unsigned short bits) {
  const uint32_t u = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

int main() {
  require_device();
  int fails = 0;
  const int n = 256;
  float h_in[n];
  for (int i = 0; i < n; ++i) {
    // mixed magnitudes and signs, many values between representable fp16/bf16 numbers (ties included)
    const float base = (float)((i * 7919) % 1000 - 500) / 97.0f;
    h_in[i] = (i % 5 == 0) ? base * 1e-3f : ((i % 11 == 0) ? 1.0f + (float)(i % 3) / 2048.0f : base);
  }
  float *d_in;
  unsigned short *d_out, *h_out = new unsigned short[n * (NH > NB ? NH : NB)];
  CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
  CHECK_CUDA(cudaMalloc(&d_out, n * (NH > NB ? NH : NB) * sizeof(unsigned short)));
  CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));

  for (int kind = 0; kind < 2; ++kind) {
    const bool is_half = kind == 0;
    const int nr = is_half ? NH : NB;
    if (is_half) half_ops<<<n / 64, 64>>>(d_in, d_out, n);
    else bf16_ops<<<n / 64, 64>>>(d_in, d_out, n);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, n * nr * sizeof(unsigned short), cudaMemcpyDeviceToHost));
    double (*rnd)(double) = is_half ? h_round : b_round;
    double (*val)(unsigned short) = is_half ? h_val : b_val;
    int bad = 0;
    for (int i = 0; i < n; ++i) {
      const double x = rnd(h_in[i]), y = rnd(h_in[(i + 1) % n]), z = rnd(h_in[(i + 2) % n]);
      const double xo = rnd(h_in[i ^ 1]);  // x of lane i ^ 1, for the shuffle
      // reference values; NAN means "not checked bit-exactly" (approximate functions get a tolerance below)
      const double ref[24] = {
          x,
          rnd(x + y),
          rnd(x * y),
          rnd(x * y + z),  // one rounding of the exact value (x*y is exact in double)
          rnd(x + y),
          rnd(rnd(x * y) - z),  // operators: each operation rounds
          -x,
          fabs(x),
          x > y ? x : y,
          x < y ? x : y,
          rnd(x - y),
          rnd(x / y),
          x < y ? x : y,
          1.0,
          rnd(x * y + x),  // __hfma2 low: a.x * b.x + a.x
          rnd(y * z + y),  // high: a.y * b.y + a.y
          rnd(x + y),
          rnd(y * z),
          NAN,  // hsqrt
          NAN,  // hexp
          rnd(x * 0.5),
          is_half ? rnd((double)(i * 37 - 4000)) : rnd((double)(float)(rnd(x + y) + rnd(y * z))),
          xo,
          NAN,  // conversion to int through rn: checked below
      };
      const unsigned short *o = h_out + (size_t)i * nr;
      for (int k = 0; k < nr; ++k) {
        const double g = val(o[k]);
        bool ok;
        if (k == 18) ok = fabs(g - sqrt(fabs(x))) <= (is_half ? 1e-3 : 8e-3) * sqrt(fabs(x));
        else if (k == 19) {
          const double e = exp(rnd(x * 0.25));
          ok = fabs(g - e) <= (is_half ? 1e-3 : 8e-3) * e;
        } else if (k == 23) {
          const double t = rnd(x * 8.0);
          const double fl = floor(t), rem = t - fl;
          const double want = (rem > 0.5 || (rem == 0.5 && fmod(fl, 2.0) != 0)) ? fl + 1 : fl;
          ok = g == rnd(want);
        } else ok = g == ref[k] || (isnan(g) && isnan(ref[k]));
        if (!ok && bad < 10) {
          printf("FAIL %s op %d at i=%d x=%.9g y=%.9g z=%.9g: %.9g (0x%04x), expected %.9g\n",
                 is_half ? "fp16" : "bf16", k, i, x, y, z, g, o[k], ref[k]);
          ++bad;
        }
      }
    }
    fails += bad;
  }
  delete[] h_out;
  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));
  return report("fp16_bf16", fails);
}
