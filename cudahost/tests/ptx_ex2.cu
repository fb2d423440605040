// Inline PTX ex2.approx.f32 and ex2.approx.ftz.f32 (d = 2^a, PTX ISA 9.7.3.21) on a table of inputs: the ISA's
// special cases (+-0 -> 1, -Inf -> +0, +Inf -> +Inf, NaN -> NaN), overflow, the subnormal range of the result (kept
// without .ftz, flushed to +0 with .ftz), subnormal inputs, and pseudo-random values. Also the operand forms: "f"
// registers, a .reg .f32 local, float immediates (0f.., 0d..).
//
// Exact cases are compared bit for bit. Elsewhere the result must be within 1 ulp of 2^a computed in long double
// (host mode rounds 2^a once from double: within 0.5 ulp plus about 2^-29 ulp); a GPU may be 2 ulp from the
// correctly rounded result, so built with nvcc the bound is 2.5 ulp.
//
// A subnormal input is flushed to zero by .ftz, but 2^a of a subnormal a rounds to 1 with or without the flush, so
// the input flush cannot be seen here; the result flush can (a = -126.5, -149.5 and the random values below -126).
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define NIN 64  // inputs (the table, then pseudo-random values)
#define NOUT 4  // per input: ex2.approx.f32, ex2.approx.ftz.f32, the .ftz form through a .reg .f32 local, and again

__global__ void ex2_kernel(const float *in, float *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = in[i];
  float d0, d1, d2;
  asm("ex2.approx.f32 %0, %1;" : "=f"(d0) : "f"(x));
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(d1) : "f"(x));
  asm("{\n"
      "  .reg .f32 t;\n"
      "  mov.b32 t, %1;\n"
      "  ex2.approx.ftz.f32 t, t;\n"
      "  mov.b32 %0, t;\n"
      "}\n"
      : "=f"(d2)
      : "f"(x));
  float d3 = x;
  asm("ex2.approx.ftz.f32 %0, %0;" : "+f"(d3));
  out[(size_t)i * NOUT + 0] = d0;
  out[(size_t)i * NOUT + 1] = d1;
  out[(size_t)i * NOUT + 2] = d2;
  out[(size_t)i * NOUT + 3] = d3;
}

// Immediate operands: 2^3 from the .f32 bits 0f40400000 (3.0f), 2^-1 from 0fBF800000 (-1.0f) into a local, and the
// .f64 bits of 1.0 through mov.b64.
__global__ void imm_kernel(float *out, unsigned long long *bits) {
  float a, b;
  asm("ex2.approx.f32 %0, 0f40400000;" : "=f"(a));
  asm("{ .reg .f32 t; ex2.approx.ftz.f32 t, 0fBF800000; mov.b32 %0, t; }" : "=f"(b));
  unsigned long long one;
  asm("mov.b64 %0, 0d3FF0000000000000;" : "=l"(one));
  out[0] = a;
  out[1] = b;
  *bits = one;
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// |got - 2^x| in ulps of the float format at 2^x (subnormals: 2^-149), 2^x in long double.
static double ulp_err(float got, float x) {
  const long double ref = exp2l((long double)x);
  int e;
  frexpl(ref, &e);  // ref = m * 2^e, 0.5 <= m < 1: its ulp is 2^(e-24), at least 2^-149
  const int ue = e - 24 < -149 ? -149 : e - 24;
  return (double)(fabsl((long double)got - ref) / ldexpl(1.0L, ue));
}

#ifdef __CUDAHOST__
static const double kUlp = 1.0;  // host mode: within 0.5 ulp + ~2^-29 ulp
#else
static const double kUlp = 2.5;  // a GPU: 2 ulp from the correctly rounded result (PTX ISA 9.7.3.21)
#endif

// Expectation for one input: exact bits for both forms, or (exact == 0) a ulp bound; NaN when isnan.
struct Case {
  float x;
  int exact;
  uint32_t plain, ftz;  // expected bits (exact cases)
};

int main() {
  require_device();
  const float inf = from_bits(0x7f800000u), nan = from_bits(0x7fc00000u);
  const float sub = from_bits(0x00000123u);   // a positive subnormal input (about 4.1e-43)
  const float nsub = from_bits(0x807fffffu);  // the negative subnormal closest to -FLT_MIN
  const Case table[] = {
      {0.0f, 1, 0x3f800000u, 0x3f800000u},      // 1
      {-0.0f, 1, 0x3f800000u, 0x3f800000u},     // 1
      {1.0f, 1, 0x40000000u, 0x40000000u},      // 2
      {-1.0f, 1, 0x3f000000u, 0x3f000000u},     // 0.5
      {10.0f, 1, 0x44800000u, 0x44800000u},     // 1024
      {0.5f, 0, 0, 0},                          // sqrt(2)
      {127.9f, 0, 0, 0},                        // near FLT_MAX, finite
      {128.0f, 1, 0x7f800000u, 0x7f800000u},    // overflow: +Inf
      {1000.0f, 1, 0x7f800000u, 0x7f800000u},   // +Inf
      {-126.0f, 1, 0x00800000u, 0x00800000u},   // FLT_MIN, normal: kept by both
      {-126.5f, 0, 0, 0x00000000u},             // subnormal: .ftz -> +0 (checked below)
      {-127.0f, 1, 0x00400000u, 0x00000000u},   // 2^-127: subnormal, exact; .ftz -> +0
      {-149.0f, 1, 0x00000001u, 0x00000000u},   // the smallest subnormal; .ftz -> +0
      {-149.5f, 1, 0x00000001u, 0x00000000u},   // 0.71 * 2^-149 rounds to 2^-149; .ftz -> +0
      {-150.0f, 1, 0x00000000u, 0x00000000u},   // exactly half of 2^-149: ties to even, +0
      {-200.0f, 1, 0x00000000u, 0x00000000u},   // +0
      {sub, 1, 0x3f800000u, 0x3f800000u},       // 2^tiny rounds to 1 (.ftz: a flushed to +0, exactly 1)
      {nsub, 1, 0x3f800000u, 0x3f800000u},      // 2^-tiny rounds to 1 (.ftz: a flushed to -0, exactly 1)
      {-inf, 1, 0x00000000u, 0x00000000u},      // +0
      {inf, 1, 0x7f800000u, 0x7f800000u},       // +Inf
      {nan, 0, 0, 0},                           // NaN (checked below)
      {-nan, 0, 0, 0},                          // NaN
  };
  const int ntab = (int)(sizeof table / sizeof table[0]);
  float h_in[NIN];
  for (int i = 0; i < ntab; i++) h_in[i] = table[i].x;
  uint32_t s = 12345u;
  for (int i = ntab; i < NIN; i++) {  // pseudo-random in [-140, 128): normal and subnormal results
    s = s * 1664525u + 1013904223u;
    h_in[i] = -140.0f + 268.0f * (float)(s >> 8) / 16777216.0f;
  }

  float *d_in, *d_out, *d_imm;
  unsigned long long *d_bits;
  CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
  CHECK_CUDA(cudaMalloc(&d_out, NIN * NOUT * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_imm, 2 * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d_bits, sizeof(unsigned long long)));
  CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
  ex2_kernel<<<2, 32>>>(d_in, d_out, NIN);
  CHECK_LAUNCH();
  imm_kernel<<<1, 1>>>(d_imm, d_bits);
  CHECK_LAUNCH();
  float h_out[NIN * NOUT], h_imm[2];
  unsigned long long h_bits = 0;
  CHECK_CUDA(cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(h_imm, d_imm, sizeof h_imm, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&h_bits, d_bits, sizeof h_bits, cudaMemcpyDeviceToHost));

  int failures = 0;
  for (int i = 0; i < NIN; i++) {
    const float x = h_in[i];
    const float *o = h_out + (size_t)i * NOUT;
    for (int k = 0; k < NOUT; k++) {
      const int ftz = k != 0;
      const float got = o[k];
      int ok;
      if (i < ntab && table[i].exact) {
        ok = fbits(got) == (ftz ? table[i].ftz : table[i].plain);
      } else if (isnan(x)) {
        ok = isnan(got);
      } else if (ftz && exp2l((long double)x) < 0x1p-126L) {
        ok = fbits(got) == 0u;  // 2^x below FLT_MIN: .ftz gives +0 (rounding up to FLT_MIN does not happen here)
      } else {
        ok = !isnan(got) && ulp_err(got, x) <= kUlp;
      }
      if (!ok) {
        printf("FAIL: %s(%a) (output %d) = %a (bits 0x%08x), 2^x = %La\n", ftz ? "ex2.approx.ftz.f32" : "ex2.approx.f32",
               (double)x, k, (double)got, fbits(got), exp2l((long double)x));
        failures++;
      }
    }
  }
  if (h_imm[0] != 8.0f) {
    printf("FAIL: ex2.approx.f32 of the immediate 0f40400000 (3.0) = %a, expected 8\n", (double)h_imm[0]);
    failures++;
  }
  if (h_imm[1] != 0.5f) {
    printf("FAIL: ex2.approx.ftz.f32 of the immediate 0fBF800000 (-1.0) = %a, expected 0.5\n", (double)h_imm[1]);
    failures++;
  }
  EXPECT(h_bits == 0x3FF0000000000000ull);

  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));
  CHECK_CUDA(cudaFree(d_imm));
  CHECK_CUDA(cudaFree(d_bits));
  return report("ptx_ex2", failures);
}
