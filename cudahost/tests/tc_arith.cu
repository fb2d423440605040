// Tensor-core arithmetic (README "Tensor-core arithmetic"): mma.sync m16n8k16 and wmma m16n16k16 with bf16 inputs
// and f32 accumulators, under the mode and device profile of the environment:
//   CUDAHOST_MMA_ARITH unset / fp32: products exact, summed in fp32 (round to nearest) in k order, then C added;
//   CUDAHOST_MMA_ARITH=truncate[:N]: per block of 16 (H100 profile) or 8 (A100) products, C and the products
//     aligned to the largest exponent, the bits past fp32's 24 (+ N) dropped, the exact sum truncated to fp32.
// Rows with values worked out by hand tell the modes, the block sizes and the final rounding apart; random rows
// with operands over 2^-12 .. 2^12 check the error bound a kernel may rely on: an m16n8k16 step adds its 16
// exact products to C with an error of at most 20 2^-23 of |c| + sum |a_k b_k| in every mode and profile (two
// blocks of 9 terms on the A100 profile, each term truncated by less than 2^-23 of the block's largest and the
// block's sum by less than 2^-23 of itself; the H100 profile's one block of 17: 18 2^-23; fp32: 16 roundings of
// 2^-24). Row 0 errs by 12 2^-23 of its magnitudes when truncating: above 2^-22 per step, a bound an older
// reading of the contract assumed.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <mma.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

using namespace nvcuda;

__device__ inline uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __halves2bfloat162(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
  uint32_t u;
  memcpy(&u, (const void*)&h, 4);
  return u;
}

// D (16 x 8) = A (16 x 16, row major) B (16 x 8, row major) + C, one mma.m16n8k16 (fragments: PTX ISA 9.7.14.5.8)
__global__ void mma16(const float* A, const float* B, const float* C, float* D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  uint32_t a[4], b[2];
  float c[4];
  for (int j = 0; j < 4; j++) {
    float v[2];
    for (int h = 0; h < 2; h++) {
      const int i = 2 * j + h;
      const int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
      v[h] = A[row * 16 + 2 * t + (i & 1) + (i >= 4 ? 8 : 0)];
    }
    a[j] = pack_bf16(v[0], v[1]);
  }
  for (int j = 0; j < 2; j++) {
    float v[2];
    for (int h = 0; h < 2; h++) {
      const int i = 2 * j + h;
      v[h] = B[(2 * t + (i & 1) + (i >= 2 ? 8 : 0)) * 8 + g];
    }
    b[j] = pack_bf16(v[0], v[1]);
  }
  for (int i = 0; i < 4; i++) c[i] = C[(i < 2 ? g : g + 8) * 8 + 2 * t + (i & 1)];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  for (int i = 0; i < 4; i++) D[(i < 2 ? g : g + 8) * 8 + 2 * t + (i & 1)] = c[i];
}

// C (16 x 16, row major) = A (16 x 16) B (16 x 16) + C, bf16 inputs, one wmma m16n16k16
__global__ void wmma16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(acc, C, 16, wmma::mem_row_major);
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  wmma::mma_sync(acc, a, b, acc);
  wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}

static float bf16_round(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double uniform01(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(g_rng >> 11) * 0x1p-53;
}

int main(void) {
  require_device();
  const char* mode = getenv("CUDAHOST_MMA_ARITH");
  const bool trunc = mode != NULL && strncmp(mode, "truncate", 8) == 0;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int block = prop.major >= 9 ? 16 : 8;  // products per block of the truncating model
  printf("mode %s, %s\n", trunc ? mode : "fp32", prop.name);

  // Hand-worked rows (B = 1 in column 0 unless said otherwise; the other columns check nothing).
  static float A[16 * 16], B[16 * 8], C[16 * 8], D[16 * 8];
  memset(A, 0, sizeof A);
  memset(B, 0, sizeof B);
  memset(C, 0, sizeof C);
  for (int k = 0; k < 16; k++) B[k * 8] = 1.f;
  const float q = 0x1p-23f;
  // row 0: c = 1 + sixteen products of 0.75 2^-23 (exact 1 + 12 2^-23). fp32 sums the products first (exact) and
  // adds c: exact. Truncating with 0 extra bits aligns them to c's quantum 2^-23: each drops to 0, so 1 (an error
  // of 12 2^-23 of the magnitudes); with 1 extra bit each keeps 0.5 2^-23; with 2 or more, all of it.
  C[0] = 1.f;
  for (int k = 0; k < 16; k++) A[0 * 16 + k] = 0.75f * q;
  // row 1: c = 0, eight products of 0.75 2^-23 and then one of 1 (exact 1 + 6 2^-23). One block of 16 aligns all
  // to 1: the small ones drop (no extra bits); blocks of 8 sum the small ones alone (exact, 6 2^-23), then add 1
  // with a quantum of 2^-23: exact. fp32: exact.
  for (int k = 0; k < 8; k++) A[1 * 16 + k] = 0.75f * q;
  A[1 * 16 + 8] = 1.f;
  // row 2: c = 1, one product of 0.75 2^-23 (1.5 2^-24): fp32 rounds 1 + 1.5 2^-24 to nearest, 1 + 2^-23; the
  // truncating model gives 1 (dropped at alignment, or kept and truncated at the end). Row 3: the same negated:
  // toward zero is -1.
  C[2 * 8] = 1.f;
  A[2 * 16] = 0.75f * q;
  C[3 * 8] = -1.f;
  A[3 * 16] = -0.75f * q;

  float *dA, *dB, *dC, *dD;
  CHECK_CUDA(cudaMalloc(&dA, sizeof A));
  CHECK_CUDA(cudaMalloc(&dB, sizeof B));
  CHECK_CUDA(cudaMalloc(&dC, sizeof C));
  CHECK_CUDA(cudaMalloc(&dD, sizeof D));
  CHECK_CUDA(cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dC, C, sizeof C, cudaMemcpyHostToDevice));
  mma16<<<1, 32>>>(dA, dB, dC, dD);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(D, dD, sizeof D, cudaMemcpyDeviceToHost));
  const int extra = trunc && mode[8] == ':' ? atoi(mode + 9) : 0;
  // what is left of 0.75 2^-23 aligned to a quantum of 2^(-23 - extra)
  const float kept = trunc ? floorf(0.75f * (float)(1 << extra)) / (float)(1 << extra) * q : 0.75f * q;
  const float row0 = 1.f + 16 * kept;
  const float row1 = trunc && block == 16 ? 1.f + 8 * kept : 1.f + 6 * q;
  const float row2 = trunc ? 1.f : 1.f + q;
  printf("row 0: %a (expected %a), row 1: %a (%a), row 2: %a (%a), row 3: %a (%a)\n", D[0], row0, D[8], row1,
         D[16], row2, D[24], -row2);
  EXPECT(D[0] == row0);
  EXPECT(D[1 * 8] == row1);
  EXPECT(D[2 * 8] == row2);
  EXPECT(D[3 * 8] == -row2);

  // The same row 0 through wmma (16 x 16 x 16 in one call: the same blocks).
  {
    static __nv_bfloat16 Ah[16 * 16], Bh[16 * 16];
    static float Cw[16 * 16];
    for (int i = 0; i < 256; i++) {
      Ah[i] = __float2bfloat16_rn(i < 16 ? 0.75f * q : 0.f);
      Bh[i] = __float2bfloat16_rn(i % 16 == 0 ? 1.f : 0.f);
      Cw[i] = i == 0 ? 1.f : 0.f;
    }
    __nv_bfloat16 *dAh, *dBh;
    float* dCw;
    CHECK_CUDA(cudaMalloc(&dAh, sizeof Ah));
    CHECK_CUDA(cudaMalloc(&dBh, sizeof Bh));
    CHECK_CUDA(cudaMalloc(&dCw, sizeof Cw));
    CHECK_CUDA(cudaMemcpy(dAh, Ah, sizeof Ah, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dBh, Bh, sizeof Bh, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dCw, Cw, sizeof Cw, cudaMemcpyHostToDevice));
    wmma16<<<1, 32>>>(dAh, dBh, dCw);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(Cw, dCw, sizeof Cw, cudaMemcpyDeviceToHost));
    printf("wmma row 0: %a (expected %a)\n", Cw[0], row0);
    EXPECT(Cw[0] == row0);
    CHECK_CUDA(cudaFree(dAh));
    CHECK_CUDA(cudaFree(dBh));
    CHECK_CUDA(cudaFree(dCw));
  }

  // Random rows: bf16 operands with random signs and magnitudes 2^-12 .. 2^12, C likewise; every column of D
  // against the double sum, relative to |c| + sum |a_k b_k|.
  double worst = 0.0;
  for (int trial = 0; trial < 200; trial++) {
    for (int i = 0; i < 16 * 16; i++)
      A[i] = bf16_round((float)((uniform01() < 0.5 ? -1 : 1) * exp2(24.0 * uniform01() - 12.0)));
    for (int i = 0; i < 16 * 8; i++) {
      B[i] = bf16_round((float)((uniform01() < 0.5 ? -1 : 1) * exp2(24.0 * uniform01() - 12.0)));
      C[i] = (float)((uniform01() < 0.5 ? -1 : 1) * exp2(24.0 * uniform01() - 12.0));
    }
    CHECK_CUDA(cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dC, C, sizeof C, cudaMemcpyHostToDevice));
    mma16<<<1, 32>>>(dA, dB, dC, dD);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(D, dD, sizeof D, cudaMemcpyDeviceToHost));
    for (int r = 0; r < 16; r++)
      for (int n = 0; n < 8; n++) {
        long double exact = C[r * 8 + n], mag = fabsl(exact);
        for (int k = 0; k < 16; k++) {
          const long double p = (long double)A[r * 16 + k] * (long double)B[k * 8 + n];
          exact += p;
          mag += fabsl(p);
        }
        const double rel = (double)(fabsl((long double)D[r * 8 + n] - exact) / mag);
        if (rel > worst) worst = rel;
      }
  }
  printf("random rows: largest error %.3g 2^-23 of the magnitudes summed (bound 20 2^-23)\n", worst * 0x1p23);
  EXPECT(worst <= 20 * 0x1p-23);

  CHECK_CUDA(cudaFree(dA));
  CHECK_CUDA(cudaFree(dB));
  CHECK_CUDA(cudaFree(dC));
  CHECK_CUDA(cudaFree(dD));
  return report("tc_arith", 0);
}
