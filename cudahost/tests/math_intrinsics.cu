// Math and integer intrinsics inside a kernel: the fast-math intrinsics (__expf, __logf, __sinf, __cosf,
// __fdividef, __powf, __saturatef, ...), rsqrtf and the CUDA-only math functions (normcdff, erfinvf, sinpif, ...),
// IEEE rounding-mode intrinsics (_rn/_rz/_ru/_rd), conversions with rounding modes, reinterpretations, bit
// intrinsics (__popc, __clz, __ffs, __brev, __byte_perm, __funnelshift_*), high multiplies, __mul24, __ldg and
// the min/max overloads. The host reference is plain C (libm, integer arithmetic); approximate intrinsics get
// the tolerance CUDA documents for them, exact ones are compared bit for bit.
#include <cuda_runtime.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define NF 40  // float results per input
#define NI 32  // integer results per input

__global__ void float_intrinsics(const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = __ldg(in + i);  // in [0.05, 4)
  const float y = in[(i + 1) % n];
  float *o = out + (size_t)i * NF;
  o[0] = __expf(x);
  o[1] = __logf(x);
  o[2] = __sinf(x);
  o[3] = __cosf(x);
  o[4] = __fdividef(x, y);
  o[5] = __powf(x, 1.5f);
  o[6] = __saturatef(x - 1.0f);
  o[7] = rsqrtf(x);
  o[8] = __exp10f(x * 0.25f);
  o[9] = __log2f(x);
  o[10] = __log10f(x);
  o[11] = __tanf(x * 0.25f);
  float s, c;
  __sincosf(x, &s, &c);
  o[12] = s;
  o[13] = c;
  sincosf(x, &s, &c);
  o[14] = s + 2.0f * c;
  o[15] = exp10f(x * 0.5f);
  o[16] = normcdff(x - 2.0f);
  o[17] = erfinvf(x / 4.5f);
  o[18] = sinpif(x);
  o[19] = cospif(x);
  o[20] = __fadd_rn(x, y);
  o[21] = __fmul_rn(x, y);
  o[22] = __fmaf_rn(x, y, -1.0f);
  o[23] = fmaf(x, y, 0.5f);
  o[24] = __fdiv_rn(x, y);
  o[25] = __fsqrt_rn(x);
  o[26] = __frcp_rn(y);
  o[27] = __fadd_rz(x, y * 1e-3f);
  o[28] = __fadd_ru(x, y * 1e-3f);
  o[29] = __fadd_rd(x, y * 1e-3f);
  o[30] = __fmul_rz(x, y);
  o[31] = __fmul_ru(x, y);
  o[32] = __int2float_rn(i * 1000003 + 1);
  o[33] = __uint_as_float(__float_as_uint(x) ^ 0x80000000u);  // negation through the bits
  o[34] = __int_as_float(__float_as_int(y));
  o[35] = max(x, y) - min(x, y);
  o[36] = fminf(x, y) + fmaxf(x, y);
  o[37] = rnorm3df(x, y, 1.0f);
  o[38] = erfcinvf(x / 4.5f);
  o[39] = normcdfinvf(x / 4.5f);
}

__global__ void int_intrinsics(const unsigned *in, long long *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned a = in[i], b = in[(i + 7) % n];
  const unsigned long long w = ((unsigned long long)a << 32) | b;
  long long *o = out + (size_t)i * NI;
  o[0] = __popc(a);
  o[1] = __popcll(w);
  o[2] = __clz((int)a);
  o[3] = __clzll((long long)(w >> (a & 63)));
  o[4] = __ffs((int)a);
  o[5] = __ffsll((long long)(w << (b & 63)));
  o[6] = __brev(a);
  o[7] = (long long)__brevll(w);
  o[8] = __byte_perm(a, b, 0x7531);
  o[9] = __byte_perm(a, b, 0x0246);
  o[10] = __funnelshift_l(a, b, b & 63);
  o[11] = __funnelshift_r(a, b, b & 63);
  o[12] = __funnelshift_lc(a, b, b & 63);
  o[13] = __funnelshift_rc(a, b, b & 63);
  o[14] = __umulhi(a, b);
  o[15] = __mulhi((int)a, (int)b);
  o[16] = (long long)__umul64hi(w, w * 3 + 1);
  o[17] = __mul64hi((long long)w, (long long)(w >> 3));
  o[18] = __mul24((int)(a & 0x7FFFFF), (int)(b & 0x7FFFFF));
  o[19] = __umul24(a, b);
  o[20] = __float2int_rn((float)(int)a * 0.5f);  // halfway cases for odd a
  o[21] = __float2int_rz((float)(int)a * 0.3f);
  o[22] = __float2int_ru((float)(int)a * 0.3f);
  o[23] = __float2int_rd((float)(int)a * 0.3f);
  o[24] = __float2uint_rn((float)a);
  o[25] = __float2ll_rn((float)w);
  o[26] = __double2int_rn((double)(int)a * 0.5);
  o[27] = __double_as_longlong(__longlong_as_double((long long)w));
  o[28] = max((int)a, (int)b);
  o[29] = min(a, b);
  o[30] = (long long)max(w, (unsigned long long)b);
  o[31] = __sad((int)a, (int)b, 5u);
}

// ---- host references -------------------------------------------------------------------------------------
static unsigned brev32(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
static unsigned byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned char bytes[8];
  for (int i = 0; i < 4; ++i) {
    bytes[i] = (x >> (8 * i)) & 0xFF;
    bytes[i + 4] = (y >> (8 * i)) & 0xFF;
  }
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)bytes[(s >> (4 * i)) & 7] << (8 * i);
  return r;
}
static int clz64(unsigned long long v) {
  int c = 0;
  for (int i = 63; i >= 0 && !((v >> i) & 1); --i) ++c;
  return c;
}
static int ffs64(unsigned long long v) {
  for (int i = 0; i < 64; ++i)
    if ((v >> i) & 1) return i + 1;
  return 0;
}
static unsigned long long umulhi64(unsigned long long a, unsigned long long b) {
  unsigned long long a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  unsigned long long p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  unsigned long long mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}
static long long mulhi64(long long a, long long b) {
  unsigned long long h = umulhi64((unsigned long long)a, (unsigned long long)b);
  if (a < 0) h -= (unsigned long long)b;
  if (b < 0) h -= (unsigned long long)a;
  return (long long)h;
}

int main() {
  require_device();
  int fails = 0;
  const int n = 256;

  // ---- floating point
  float h_in[n];
  for (int i = 0; i < n; ++i) h_in[i] = 0.05f + 3.9f * (float)((i * 97) % n) / n;
  float *d_in, *d_out, *h_out = new float[n * NF];
  CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
  CHECK_CUDA(cudaMalloc(&d_out, n * NF * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
  float_intrinsics<<<(n + 63) / 64, 64>>>(d_in, d_out, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, n * NF * sizeof(float), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const double x = h_in[i], y = h_in[(i + 1) % n];
    const float xf = h_in[i], yf = h_in[(i + 1) % n];
    const double pi = 3.14159265358979323846;
    // {reference, absolute tolerance, relative tolerance}; tolerance 0 means bit-exact
    const double ref[NF][3] = {
        {exp(x), 0, 2e-6 * (2 + fabs(x))},          // __expf: 2 + floor(|1.173x|) ulp
        {log(x), 2e-6, 1e-6},                        // __logf: 2^-21.41 abs in [0.5, 2], else 3 ulp
        {sin(x), 2e-6, 0},                           // __sinf: 2^-21.41 abs on [-pi, pi]; x < 4
        {cos(x), 2e-6, 0},
        {x / y, 0, 4e-7},                            // __fdividef: 2 ulp
        {pow(x, 1.5), 0, 4e-6 * (1 + fabs(1.5 * log(x)))},
        {x - 1 < 0 ? 0 : (x - 1 > 1 ? 1 : (double)(xf - 1.0f)), 0, 0},
        {1.0 / sqrt(x), 0, 2.5e-7},                  // rsqrtf: 2 ulp
        {pow(10.0, 0.25 * x), 0, 4e-6},
        {log2(x), 2e-6, 1e-6},
        {log10(x), 2e-6, 1e-6},
        {tan(0.25 * x), 0, 4e-6},
        {sin(x), 2e-6, 0},
        {cos(x), 2e-6, 0},
        {sin(x) + 2 * cos(x), 6e-7, 0},
        {pow(10.0, 0.5 * x), 0, 4e-7},
        {0.5 * erfc(-(x - 2) / sqrt(2.0)), 1e-6, 0},
        {0, 0, 0},  // erfinvf: checked through erf below
        {sin(pi * x), 3e-7, 0},
        {cos(pi * x), 3e-7, 0},
        {(double)(xf + yf), 0, 0},
        {(double)(xf * yf), 0, 0},
        {(double)fmaf(xf, yf, -1.0f), 0, 0},
        {(double)fmaf(xf, yf, 0.5f), 0, 0},
        {(double)(xf / yf), 0, 0},
        {(double)sqrtf(xf), 0, 0},
        {(double)(1.0f / yf), 0, 0},
        {0, 0, 0},  // directed additions: checked below
        {0, 0, 0},
        {0, 0, 0},
        {0, 0, 0},
        {0, 0, 0},
        {(double)(float)(i * 1000003 + 1), 0, 0},
        {-x, 0, 0},
        {y, 0, 0},
        {(double)fabsf(xf - yf), 0, 0},
        {(double)(xf + yf), 0, 0},
        {1.0 / sqrt(x * x + y * y + 1), 0, 4e-7},
        {0, 0, 0},  // erfcinvf, normcdfinvf: checked through their inverses below
        {0, 0, 0},
    };
    const float *o = h_out + (size_t)i * NF;
    for (int k = 0; k < NF; ++k) {
      if (k == 17 || (k >= 27 && k <= 31) || k == 38 || k == 39) continue;
      const double r = ref[k][0], atol = ref[k][1], rtol = ref[k][2];
      const bool exact = atol == 0 && rtol == 0;
      const bool ok = exact ? (o[k] == (float)r) : fabs(o[k] - r) <= atol + rtol * fabs(r);
      if (!ok && bad < 10) {
        printf("FAIL float intrinsic %d at x=%.9g y=%.9g: %.9g, expected %.9g\n", k, x, y, o[k], r);
        ++bad;
      }
    }
    // erfinvf(v): erf(result) == v; erfcinvf(v): erfc(result) == v; normcdfinvf(p): normcdf(result) == p
    const double v = (double)(xf / 4.5f);
    if (fabs(erf((double)o[17]) - v) > 2e-6 || fabs(erfc((double)o[38]) - v) > 2e-6 * (1 + v) ||
        fabs(0.5 * erfc(-(double)o[39] / sqrt(2.0)) - v) > 2e-6) {
      if (bad < 10) printf("FAIL erfinvf/erfcinvf/normcdfinvf at %.9g: %.9g %.9g %.9g\n", v, o[17], o[38], o[39]);
      ++bad;
    }
    // directed rounding: rz <= exact <= ru, rd <= exact, one ulp apart at most, rz toward zero (positive here)
    const double sum = x + (double)(yf * 1e-3f), prod = x * y;
    const float rz = o[27], ru = o[28], rd = o[29], mz = o[30], mu = o[31];
    const bool add_ok = rz <= sum && ru >= sum && rd == rz && (ru == rz ? (double)ru == sum : nextafterf(rz, 1e30f) == ru);
    const bool mul_ok = mz <= prod && mu >= prod && (mu == mz ? (double)mu == prod : nextafterf(mz, 1e30f) == mu);
    if ((!add_ok || !mul_ok) && bad < 10) {
      printf("FAIL directed rounding at x=%.9g y=%.9g: add rz %.9g ru %.9g rd %.9g mul rz %.9g ru %.9g\n", x, y, rz,
             ru, rd, mz, mu);
      ++bad;
    }
  }
  fails += bad;
  delete[] h_out;
  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));

  // ---- integer
  unsigned h_u[n];
  uint32_t s = 2463534242u;
  for (int i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    h_u[i] = (i % 17 == 0) ? 0u : s;  // some zeros for __clz/__ffs edge cases
  }
  unsigned *d_u;
  long long *d_o, *h_o = new long long[n * NI];
  CHECK_CUDA(cudaMalloc(&d_u, sizeof h_u));
  CHECK_CUDA(cudaMalloc(&d_o, n * NI * sizeof(long long)));
  CHECK_CUDA(cudaMemcpy(d_u, h_u, sizeof h_u, cudaMemcpyHostToDevice));
  int_intrinsics<<<(n + 127) / 128, 128>>>(d_u, d_o, n);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_o, d_o, n * NI * sizeof(long long), cudaMemcpyDeviceToHost));
  bad = 0;
  for (int i = 0; i < n; ++i) {
    const unsigned a = h_u[i], b = h_u[(i + 7) % n];
    const unsigned long long w = ((unsigned long long)a << 32) | b;
    const unsigned sh = b & 63, shc = sh > 32 ? 32 : sh;
    const unsigned long long cat = ((unsigned long long)b << 32) | a;
    long long want[NI];
    int pc = 0, pcl = 0;
    for (int k = 0; k < 32; ++k) pc += (a >> k) & 1;
    for (int k = 0; k < 64; ++k) pcl += (w >> k) & 1;
    want[0] = pc;
    want[1] = pcl;
    want[2] = clz64(a) - 32;
    want[3] = clz64(w >> (a & 63));
    want[4] = ffs64(a);
    want[5] = ffs64(w << (b & 63));
    want[6] = brev32(a);
    want[7] = (long long)(((unsigned long long)brev32((unsigned)w) << 32) | brev32((unsigned)(w >> 32)));
    want[8] = byte_perm(a, b, 0x7531);
    want[9] = byte_perm(a, b, 0x0246);
    want[10] = (unsigned)((cat << (sh & 31)) >> 32);
    want[11] = (unsigned)(cat >> (sh & 31));
    want[12] = (unsigned)(shc == 32 ? a : (unsigned)((cat << shc) >> 32));
    want[13] = (unsigned)(shc == 32 ? b : (unsigned)(cat >> shc));
    want[14] = (unsigned)(((unsigned long long)a * b) >> 32);
    want[15] = (int)(((long long)(int)a * (long long)(int)b) >> 32);
    want[16] = (long long)umulhi64(w, w * 3 + 1);
    want[17] = mulhi64((long long)w, (long long)(w >> 3));
    want[18] = (int)((long long)(int)(a & 0x7FFFFF) * (int)(b & 0x7FFFFF));
    want[19] = (unsigned)((unsigned long long)(a & 0xFFFFFF) * (b & 0xFFFFFF));
    const float half_a = (float)(int)a * 0.5f, third = (float)(int)a * 0.3f;
    want[20] = (long long)rintf(half_a);  // round half to even
    want[21] = (long long)truncf(third);
    want[22] = (long long)ceilf(third);
    want[23] = (long long)floorf(third);
    want[24] = (float)a >= 4294967296.0f ? 0xFFFFFFFFll : (long long)(unsigned)rintf((float)a);  // saturates
    want[25] = (float)w >= 9.2233720368547758e18f ? 0x7FFFFFFFFFFFFFFFll : (long long)rintf((float)w);
    want[26] = (long long)rint((double)(int)a * 0.5);
    want[27] = (long long)w;
    want[28] = (int)a > (int)b ? (int)a : (int)b;
    want[29] = a < b ? a : b;
    want[30] = (long long)(w > b ? w : b);
    want[31] = 5u + (unsigned)((int)a > (int)b ? (long long)(int)a - (int)b : (long long)(int)b - (int)a);
    const long long *o = h_o + (size_t)i * NI;
    for (int k = 0; k < NI; ++k)
      if (o[k] != want[k] && bad < 10) {
        printf("FAIL int intrinsic %d at a=%08x b=%08x: %llx, expected %llx\n", k, a, b, (unsigned long long)o[k],
               (unsigned long long)want[k]);
        ++bad;
      }
  }
  fails += bad;
  delete[] h_o;
  CHECK_CUDA(cudaFree(d_u));
  CHECK_CUDA(cudaFree(d_o));
  return report("math_intrinsics", fails);
}
