// The WMMA API (nvcuda::wmma) in host mode: every emulated shape and type (m16n16k16, m32n8k16, m8n32k16 with
// __half and __nv_bfloat16 inputs, float and __half accumulators; m16n16k8 with tf32), row- and column-major A and B,
// ldm larger than the tile, accumulators loaded and stored in both layouts, fill_fragment, element-wise frag.x[i]
// updates, __float_to_tf32. One warp per tile; checked against a double-precision product of the same (exactly
// representable) inputs.
//
// The element mapping of a fragment is unspecified: `mapping_reliant` reads acc.x[i] as if lane l's element i were
// element (i*32+l) of the row-major tile (host mode's default mapping). It matches in the default run and must not
// with CUDAHOST_WMMA_PERMUTE=1 (argument `expect-permuted`): the CI leg that proves a kernel relying on a mapping
// fails in host mode.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>

#include <string.h>

#include <type_traits>

#include "check.h"

using namespace nvcuda;

static float in_val(int which, int r, int c) { return (float)(((r * (which ? 5 : 7) + c * (which ? 3 : 11)) % 9) - 4); }

template <class T>
__host__ __device__ T conv(float x) {
  return (T)x;
}
template <>
__host__ __device__ __half conv<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__host__ __device__ __nv_bfloat16 conv<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// C (M x N, row or col major, ldc) = A (M x K) * B (K x N) + C0 (loaded in the same layout), then scaled by 2 element
// by element.
template <int M, int N, int K, class TIn, class TStore, class LA, class LB, class TAcc, class TOut>
__global__ void wmma_tile(const TStore* A, const TStore* B, TOut* C, int lda, int ldb, int ldc, int c_row_major) {
  wmma::fragment<wmma::matrix_a, M, N, K, TIn, LA> a;
  wmma::fragment<wmma::matrix_b, M, N, K, TIn, LB> b;
  wmma::fragment<wmma::accumulator, M, N, K, TAcc> acc;
  const wmma::layout_t cl = c_row_major ? wmma::mem_row_major : wmma::mem_col_major;
  wmma::load_matrix_sync(acc, C, ldc, cl);
  wmma::load_matrix_sync(a, A, lda);
  wmma::load_matrix_sync(b, B, ldb);
  wmma::mma_sync(acc, a, b, acc);
  for (int i = 0; i < acc.num_elements; i++) acc.x[i] = acc.x[i] * conv<TAcc>(2.f);
  wmma::store_matrix_sync(C, acc, ldc, cl);
}

// tf32 inputs converted in the fragments with __float_to_tf32
template <class LA, class LB>
__global__ void wmma_tf32(const float* A, const float* B, float* C, int lda, int ldb, int ldc) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, LA> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, LB> b;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.5f);
  wmma::load_matrix_sync(a, A, lda);
  wmma::load_matrix_sync(b, B, ldb);
  for (int i = 0; i < a.num_elements; i++) a.x[i] = wmma::__float_to_tf32(a.x[i]);
  for (int i = 0; i < b.num_elements; i++) b.x[i] = wmma::__float_to_tf32(b.x[i]);
  wmma::mma_sync(acc, a, b, acc);
  wmma::store_matrix_sync(C, acc, ldc, wmma::mem_row_major);
}

// Relies on one element mapping (a bug on a GPU): writes acc.x[i] of lane l to element i*32+l of the tile.
__global__ void mapping_reliant(const __half* A, const __half* B, float* C) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.f);
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  wmma::mma_sync(acc, a, b, acc);
  for (int i = 0; i < acc.num_elements; i++) C[i * 32 + threadIdx.x] = acc.x[i];
}

template <class T>
static void fill(T* h, int rows, int cols, bool row_major, int ld, int which) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) h[row_major ? r * ld + c : c * ld + r] = conv<T>(in_val(which, r, c));
}
static float c0_val(int r, int c) { return (float)((r + 2 * c) % 5) - 2.f; }

template <int M, int N, int K, class TIn, class TStore, class LA, class LB, class TAcc>
static int run_case(const char* name) {
  constexpr bool ar = std::is_same<LA, wmma::row_major>::value, br = std::is_same<LB, wmma::row_major>::value;
  const int lda = (ar ? K : M) + 8, ldb = (br ? N : K) + 8;
  int fails = 0;
  for (int crm = 0; crm < 2; crm++) {
    const int ldc = (crm ? N : M) + 8;  // ldm: a multiple of 16 bytes
    const int na = (ar ? M : K) * lda, nb = (br ? K : N) * ldb, nc = (crm ? M : N) * ldc;
    TStore* hA = (TStore*)calloc(na, sizeof(TStore));
    TStore* hB = (TStore*)calloc(nb, sizeof(TStore));
    TAcc* hC = (TAcc*)calloc(nc, sizeof(TAcc));
    fill(hA, M, K, ar, lda, 0);
    fill(hB, K, N, br, ldb, 1);
    for (int r = 0; r < M; r++)
      for (int c = 0; c < N; c++) hC[crm ? r * ldc + c : c * ldc + r] = conv<TAcc>(c0_val(r, c));
    TStore *dA, *dB;
    TAcc* dC;
    CHECK_CUDA(cudaMalloc(&dA, na * sizeof(TStore)));
    CHECK_CUDA(cudaMalloc(&dB, nb * sizeof(TStore)));
    CHECK_CUDA(cudaMalloc(&dC, nc * sizeof(TAcc)));
    CHECK_CUDA(cudaMemcpy(dA, hA, na * sizeof(TStore), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dB, hB, nb * sizeof(TStore), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dC, hC, nc * sizeof(TAcc), cudaMemcpyHostToDevice));
    wmma_tile<M, N, K, TIn, TStore, LA, LB, TAcc, TAcc><<<1, 32>>>(dA, dB, dC, lda, ldb, ldc, crm);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(hC, dC, nc * sizeof(TAcc), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int r = 0; r < M; r++)
      for (int c = 0; c < N; c++) {
        double ref = c0_val(r, c);
        for (int k = 0; k < K; k++) ref += (double)in_val(0, r, k) * in_val(1, k, c);
        ref *= 2;
        double got = (double)(float)hC[crm ? r * ldc + c : c * ldc + r];
        if (got != ref) {
          if (bad < 4) printf("FAIL %s (C %s-major): C[%d][%d] = %g, expected %g\n", name, crm ? "row" : "col", r, c, got, ref);
          bad++;
        }
      }
    fails += bad != 0;
    free(hA);
    free(hB);
    free(hC);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
  }
  return fails;
}

int main(int argc, char** argv) {
#ifndef __CUDAHOST__
  require_device();
#endif
  const bool expect_permuted = argc > 1 && strcmp(argv[1], "expect-permuted") == 0;
  int fails = 0;
  using R = wmma::row_major;
  using Cm = wmma::col_major;
  fails += run_case<16, 16, 16, __half, __half, R, R, float>("m16n16k16 f16 RR");
  fails += run_case<16, 16, 16, __half, __half, Cm, Cm, float>("m16n16k16 f16 CC");
  fails += run_case<16, 16, 16, __half, __half, R, Cm, __half>("m16n16k16 f16 RC, f16 accumulator");
  fails += run_case<16, 16, 16, __nv_bfloat16, __nv_bfloat16, R, R, float>("m16n16k16 bf16 RR");
  fails += run_case<16, 16, 16, __nv_bfloat16, __nv_bfloat16, Cm, R, float>("m16n16k16 bf16 CR");
  fails += run_case<32, 8, 16, __half, __half, R, Cm, float>("m32n8k16 f16 RC");
  fails += run_case<32, 8, 16, __nv_bfloat16, __nv_bfloat16, R, R, float>("m32n8k16 bf16 RR");
  fails += run_case<8, 32, 16, __half, __half, Cm, R, float>("m8n32k16 f16 CR");
  fails += run_case<8, 32, 16, __nv_bfloat16, __nv_bfloat16, R, Cm, float>("m8n32k16 bf16 RC");

  // tf32 (inputs that are not tf32-exact are rounded by __float_to_tf32: use exact ones, and one rounding check)
  {
    float hA[16 * 8], hB[8 * 16], hC[256];
    fill(hA, 16, 8, true, 8, 0);
    fill(hB, 8, 16, false, 8, 1);  // column major, ldb = 8
    float *dA, *dB, *dC;
    CHECK_CUDA(cudaMalloc(&dA, sizeof hA));
    CHECK_CUDA(cudaMalloc(&dB, sizeof hB));
    CHECK_CUDA(cudaMalloc(&dC, sizeof hC));
    CHECK_CUDA(cudaMemcpy(dA, hA, sizeof hA, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dB, hB, sizeof hB, cudaMemcpyHostToDevice));
    wmma_tf32<R, Cm><<<1, 32>>>(dA, dB, dC, 8, 8, 16);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(hC, dC, sizeof hC, cudaMemcpyDeviceToHost));
    for (int r = 0; r < 16; r++)
      for (int c = 0; c < 16; c++) {
        double ref = 0.5;
        for (int k = 0; k < 8; k++) ref += (double)in_val(0, r, k) * in_val(1, k, c);
        EXPECT(hC[r * 16 + c] == (float)ref);
      }
#ifdef __CUDAHOST__
    EXPECT(wmma::__float_to_tf32(1.0f + 1.0f / 2048) == 1.0f + 1.0f / 1024);  // half an ulp of tf32 rounds away
    EXPECT(wmma::__float_to_tf32(1.0f + 1.0f / 4096) == 1.0f);
#endif
  }

  // the mapping-reliant kernel: right by accident under host mode's default mapping, wrong when permuted
  {
    __half hA[256], hB[256];
    fill(hA, 16, 16, true, 16, 0);
    fill(hB, 16, 16, true, 16, 1);
    __half *dA, *dB;
    float *dC, hC[256];
    CHECK_CUDA(cudaMalloc(&dA, sizeof hA));
    CHECK_CUDA(cudaMalloc(&dB, sizeof hB));
    CHECK_CUDA(cudaMalloc(&dC, sizeof hC));
    CHECK_CUDA(cudaMemcpy(dA, hA, sizeof hA, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dB, hB, sizeof hB, cudaMemcpyHostToDevice));
    mapping_reliant<<<1, 32>>>(dA, dB, dC);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(hC, dC, sizeof hC, cudaMemcpyDeviceToHost));
    int mismatches = 0;
    for (int r = 0; r < 16; r++)
      for (int c = 0; c < 16; c++) {
        double ref = 0;
        for (int k = 0; k < 16; k++) ref += (double)in_val(0, r, k) * in_val(1, k, c);
        mismatches += hC[r * 16 + c] != (float)ref;
      }
    printf("mapping-reliant kernel: %d of 256 elements differ from the product (%s mapping)\n", mismatches,
           expect_permuted ? "permuted" : "default");
#ifdef __CUDAHOST__
    if (expect_permuted) EXPECT(mismatches > 0);
    else EXPECT(mismatches == 0);
#endif
  }
  return report("wmma_api", fails);
}
