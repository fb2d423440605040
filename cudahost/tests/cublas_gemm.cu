// cuBLAS subset: Sgemm, GemmEx (fp32 / bf16 / fp16 inputs, fp32 or 16-bit C), SgemmStridedBatched,
// GemmStridedBatchedEx, SgemmBatched, every transpose combination, padded leading dimensions, beta == 0 over NaN
// garbage, argument validation, handle/stream/workspace/math-mode calls, status names. Checked against a plain
// triple loop in double on the host.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "elem_kind.h"

namespace {

uint32_t rng_state = 12345u;
float frand() { return lcg_uniform(rng_state); }  // uniform in [-1, 1)

// Host matrices (column-major, stored dims rows x cols with leading dimension ld), copied to the device.
struct Mat {
  Kind kind;
  int rows, cols, ld, batch;
  long long stride;
  void *host;
  void *dev;
};

Mat make(Kind kind, int rows, int cols, int ld, int batch, bool nan_fill) {
  Mat m;
  m.kind = kind;
  m.rows = rows;
  m.cols = cols;
  m.ld = ld;
  m.batch = batch;
  m.stride = (long long)ld * cols + 3;  // padded stride
  size_t n = (size_t)m.stride * batch;
  m.host = malloc(n * esize(kind));
  for (size_t i = 0; i < n; ++i) put(m.host, kind, i, nan_fill ? NAN : frand());
  CHECK_CUDA(cudaMalloc(&m.dev, n * esize(kind)));
  CHECK_CUDA(cudaMemcpy(m.dev, m.host, n * esize(kind), cudaMemcpyHostToDevice));
  return m;
}
void release(Mat &m) {
  free(m.host);
  CHECK_CUDA(cudaFree(m.dev));
}

// reference: C = alpha op(A) op(B) + beta C on the host copies, in double
void reference(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const Mat &A,
               const Mat &B, float beta, const Mat &C, int bi, double *out) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        size_t ai = ta == CUBLAS_OP_N ? (size_t)i + (size_t)p * A.ld : (size_t)p + (size_t)i * A.ld;
        size_t bj = tb == CUBLAS_OP_N ? (size_t)p + (size_t)j * B.ld : (size_t)j + (size_t)p * B.ld;
        s += (double)get(A.host, A.kind, ai + bi * A.stride) * (double)get(B.host, B.kind, bj + bi * B.stride);
      }
      size_t ci = (size_t)i + (size_t)j * C.ld + bi * C.stride;
      out[i + (size_t)j * m] = alpha * s + (beta == 0.0f ? 0.0 : beta * (double)get(C.host, C.kind, ci));
    }
}

// Compare the device C with the reference; elements outside the m x n window (padding) must be untouched.
int compare(const Mat &C, int m, int n, const double *ref, int bi, double tol, const char *what) {
  size_t total = (size_t)C.stride * C.batch;
  void *got = malloc(total * esize(C.kind));
  CHECK_CUDA(cudaMemcpy(got, C.dev, total * esize(C.kind), cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int j = 0; j < n && bad < 5; ++j)
    for (int i = 0; i < m && bad < 5; ++i) {
      size_t ci = (size_t)i + (size_t)j * C.ld + bi * C.stride;
      double g = get(got, C.kind, ci), r = ref[i + (size_t)j * m];
      if (!(fabs(g - r) <= tol * (1.0 + fabs(r)))) {
        printf("  %s: batch %d C(%d,%d) = %.8g, expected %.8g\n", what, bi, i, j, g, r);
        ++bad;
      }
    }
  // padding rows (ld > m) keep their old value
  for (int j = 0; j < n && bad < 5; ++j)
    for (int i = m; i < C.ld && bad < 5; ++i) {
      size_t ci = (size_t)i + (size_t)j * C.ld + bi * C.stride;
      float g = get(got, C.kind, ci), h = get(C.host, C.kind, ci);
      if (memcmp(&g, &h, sizeof g) != 0 && !(isnan(g) && isnan(h))) {
        printf("  %s: padding C(%d,%d) was overwritten\n", what, i, j);
        ++bad;
      }
    }
  free(got);
  return bad;
}

const cublasOperation_t kOps[3] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
const char *op_name(cublasOperation_t o) { return o == CUBLAS_OP_N ? "N" : (o == CUBLAS_OP_T ? "T" : "C"); }

// One GemmEx / Sgemm / batched case: m x n x k, inputs of kind ab, output kind c, batch count.
int run_case(cublasHandle_t h, int api, Kind ab, Kind ck, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
             int k, float alpha, float beta, int batch) {
  const int arows = ta == CUBLAS_OP_N ? m : k, acols = ta == CUBLAS_OP_N ? k : m;
  const int brows = tb == CUBLAS_OP_N ? k : n, bcols = tb == CUBLAS_OP_N ? n : k;
  Mat A = make(ab, arows, acols, arows + 2, batch, false);
  Mat B = make(ab, brows, bcols, brows + 1, batch, false);
  Mat C = make(ck, m, n, m + 3, batch, beta == 0.0f);  // beta == 0: C holds NaN garbage that must not leak
  cublasStatus_t st = CUBLAS_STATUS_INTERNAL_ERROR;
  switch (api) {
    case 0:  // Sgemm (batch 1)
      st = cublasSgemm(h, ta, tb, m, n, k, &alpha, (const float *)A.dev, A.ld, (const float *)B.dev, B.ld, &beta,
                       (float *)C.dev, C.ld);
      break;
    case 1:  // GemmEx
      st = cublasGemmEx(h, ta, tb, m, n, k, &alpha, A.dev, dtype(ab), A.ld, B.dev, dtype(ab), B.ld, &beta, C.dev,
                        dtype(ck), C.ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      break;
    case 2:  // SgemmStridedBatched
      st = cublasSgemmStridedBatched(h, ta, tb, m, n, k, &alpha, (const float *)A.dev, A.ld, A.stride,
                                     (const float *)B.dev, B.ld, B.stride, &beta, (float *)C.dev, C.ld, C.stride,
                                     batch);
      break;
    case 3:  // GemmStridedBatchedEx
      st = cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &alpha, A.dev, dtype(ab), A.ld, A.stride, B.dev, dtype(ab),
                                      B.ld, B.stride, &beta, C.dev, dtype(ck), C.ld, C.stride, batch,
                                      CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
      break;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  int bad = 0;
  char what[128];
  snprintf(what, sizeof what, "api %d %s%s %dx%dx%d in %d out %d batch %d", api, op_name(ta), op_name(tb), m, n, k,
           (int)ab, (int)ck, batch);
  if (st != CUBLAS_STATUS_SUCCESS) {
    printf("  %s: status %s\n", what, cublasGetStatusName(st));
    bad = 1;
  } else {
    double *ref = (double *)malloc(sizeof(double) * (size_t)m * n);
    // fp32 accumulation over k terms of magnitude <= 1, plus a 16-bit output rounding
    double tol = (ck == F32 ? 1e-5 : (ck == BF16 ? 8e-3 : 1e-3)) * (1.0 + k / 64.0);
    for (int bi = 0; bi < batch && !bad; ++bi) {
      reference(ta, tb, m, n, k, alpha, A, B, beta, C, bi, ref);
      bad += compare(C, m, n, ref, bi, tol, what);
    }
    free(ref);
  }
  release(A);
  release(B);
  release(C);
  return bad;
}

}  // namespace

int main() {
  require_device();
  int fails = 0;
  cublasHandle_t h = nullptr;
  CHECK_CUBLAS(cublasCreate(&h));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUBLAS(cublasSetStream(h, stream));
  cudaStream_t got_stream = nullptr;
  CHECK_CUBLAS(cublasGetStream(h, &got_stream));
  EXPECT(got_stream == stream);
  void *ws = nullptr;
  CHECK_CUDA(cudaMalloc(&ws, 1 << 20));
  CHECK_CUBLAS(cublasSetWorkspace(h, ws, 1 << 20));
  CHECK_CUBLAS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
  cublasMath_t mm = CUBLAS_DEFAULT_MATH;
  CHECK_CUBLAS(cublasGetMathMode(h, &mm));
  EXPECT(mm == CUBLAS_TF32_TENSOR_OP_MATH);
  CHECK_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  CHECK_CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  EXPECT(strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE") == 0);
  EXPECT(cublasGetStatusString(CUBLAS_STATUS_SUCCESS) != nullptr);

  // every transpose combination, every API, every input/output type
  const int shapes[][3] = {{7, 5, 3}, {33, 17, 65}, {1, 1, 1}};
  for (auto &s : shapes)
    for (cublasOperation_t ta : kOps)
      for (cublasOperation_t tb : kOps) {
        fails += run_case(h, 0, F32, F32, ta, tb, s[0], s[1], s[2], 1.5f, 0.0f, 1);
        fails += run_case(h, 0, F32, F32, ta, tb, s[0], s[1], s[2], -0.5f, 2.0f, 1);
        fails += run_case(h, 1, F32, F32, ta, tb, s[0], s[1], s[2], 1.0f, 0.5f, 1);
        fails += run_case(h, 1, BF16, F32, ta, tb, s[0], s[1], s[2], 1.0f, 0.0f, 1);
        fails += run_case(h, 1, BF16, BF16, ta, tb, s[0], s[1], s[2], 0.75f, 1.0f, 1);
        fails += run_case(h, 1, F16, F32, ta, tb, s[0], s[1], s[2], 1.0f, 0.25f, 1);
        fails += run_case(h, 1, F16, F16, ta, tb, s[0], s[1], s[2], 1.0f, 0.0f, 1);
        fails += run_case(h, 2, F32, F32, ta, tb, s[0], s[1], s[2], 1.0f, 0.0f, 3);
        fails += run_case(h, 3, BF16, F32, ta, tb, s[0], s[1], s[2], 2.0f, 0.5f, 2);
        fails += run_case(h, 3, BF16, BF16, ta, tb, s[0], s[1], s[2], 1.0f, 0.0f, 2);
      }
  // shapes larger than one conversion tile (512) on the 16-bit path
  fails += run_case(h, 1, BF16, F32, CUBLAS_OP_T, CUBLAS_OP_N, 520, 9, 600, 1.0f, 0.0f, 1);
  fails += run_case(h, 1, BF16, BF16, CUBLAS_OP_N, CUBLAS_OP_T, 6, 530, 515, 1.0f, 1.0f, 1);
  // k == 0 and alpha == 0: C = beta C
  fails += run_case(h, 1, BF16, F32, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 0, 1.0f, 0.5f, 1);
  fails += run_case(h, 0, F32, F32, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 3, 0.0f, 0.0f, 1);

  // SgemmBatched (pointer arrays)
  {
    const int m = 5, n = 4, k = 3, batch = 2;
    Mat A = make(F32, m, k, m, batch, false), B = make(F32, k, n, k, batch, false), C = make(F32, m, n, m, batch, true);
    const float *Ap[batch], *Bp[batch];
    float *Cp[batch];
    for (int b = 0; b < batch; ++b) {
      Ap[b] = (const float *)A.dev + b * A.stride;
      Bp[b] = (const float *)B.dev + b * B.stride;
      Cp[b] = (float *)C.dev + b * C.stride;
    }
    const float **dAp;
    const float **dBp;
    float **dCp;
    CHECK_CUDA(cudaMalloc((void **)&dAp, sizeof Ap));
    CHECK_CUDA(cudaMalloc((void **)&dBp, sizeof Bp));
    CHECK_CUDA(cudaMalloc((void **)&dCp, sizeof Cp));
    CHECK_CUDA(cudaMemcpy(dAp, Ap, sizeof Ap, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dBp, Bp, sizeof Bp, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dCp, Cp, sizeof Cp, cudaMemcpyHostToDevice));
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dAp, m, dBp, k, &zero, dCp, m, batch));
    double ref[m * n];
    for (int b = 0; b < batch; ++b) {
      reference(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 1.0f, A, B, 0.0f, C, b, ref);
      fails += compare(C, m, n, ref, b, 1e-5, "SgemmBatched");
    }
    CHECK_CUDA(cudaFree(dAp));
    CHECK_CUDA(cudaFree(dBp));
    CHECK_CUDA(cudaFree(dCp));
    release(A);
    release(B);
    release(C);
  }

  // argument validation, as cuBLAS reports it
  {
    float *d;
    CHECK_CUDA(cudaMalloc((void **)&d, 64 * sizeof(float)));
    const float one = 1.0f;
    EXPECT(cublasSgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, d, 2, &one, d, 2) ==
           CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 2, &one, d, 2, d, 2, &one, d, 2) ==
           CUBLAS_STATUS_INVALID_VALUE);
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, -3, &one, d, 2, d, 2, &one, d, 2) ==
           CUBLAS_STATUS_INVALID_VALUE);
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 2, &one, d, 3, d, 2, &one, d, 4) ==
           CUBLAS_STATUS_INVALID_VALUE);  // lda < m
    EXPECT(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 2, 3, &one, d, 2, d, 3, &one, d, 4) ==
           CUBLAS_STATUS_INVALID_VALUE);  // lda < k for op T
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, d, 2, d, 2, &one, d, 2) ==
           CUBLAS_STATUS_INVALID_VALUE);  // ldb < k
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 2, 3, 2, &one, d, 2, d, 2, &one, d, 2) ==
           CUBLAS_STATUS_INVALID_VALUE);  // ldb < n for op T
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 2, 2, &one, d, 3, d, 2, &one, d, 2) ==
           CUBLAS_STATUS_INVALID_VALUE);  // ldc < m
    EXPECT(cublasSgemm(h, (cublasOperation_t)7, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, d, 2, &one, d, 2) ==
           CUBLAS_STATUS_INVALID_VALUE);
    EXPECT(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, 4, d, 2, 4, &one, d, 2, 4,
                                     -1) == CUBLAS_STATUS_INVALID_VALUE);
    EXPECT(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, CUDA_R_32F, 2, d, CUDA_R_16BF, 2, &one, d,
                        CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED);
    EXPECT(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, CUDA_R_32F, 2, d, CUDA_R_32F, 2, &one, d,
                        CUDA_R_32F, 2, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED);
    // m == 0: nothing to do, success
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 2, &one, d, 1, d, 2, &one, d, 1) == CUBLAS_STATUS_SUCCESS);
    CHECK_CUDA(cudaFree(d));
  }
  EXPECT(cublasSetWorkspace(h, (char *)ws + 8, 1024) == CUBLAS_STATUS_INVALID_VALUE);  // misaligned
  CHECK_CUBLAS(cublasDestroy(h));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(ws));
  return report("cublas_gemm", fails);
}
