// cuBLASLt subset: handle, matmul descriptors, matrix layouts (column and row order, strided batches), preferences,
// the heuristic (one algorithm), cublasLtMatmul for fp32 / bf16 / fp16 inputs with fp32 compute, every transpose
// combination, alpha/beta (beta == 0 over NaN garbage), the BIAS, GELU, GELU_BIAS, GELU_AUX(_BIAS) and RELU_BIAS
// epilogues, the stack-allocated *Init helpers, and CUBLAS_STATUS_NOT_SUPPORTED for what host mode does not provide. Checked
// against a plain triple loop in double on the host (GELU: the tanh approximation cuBLASLt documents).
#include <cublasLt.h>
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

const char *kname[3] = {"f32", "bf16", "f16"};
uint32_t rng_state = 777u;
float frand() { return lcg_uniform(rng_state); }  // uniform in [-1, 1)

// A host matrix of rows x cols (column- or row-major with leading dimension ld, `batch` of them `stride` elements
// apart), mirrored on the device.
struct Mat {
  Kind kind;
  int rows, cols, ld, batch;
  bool row_major;
  long long stride;
  void *host, *dev;
  size_t idx(int b, int i, int j) const {
    return (size_t)b * (size_t)stride + (row_major ? (size_t)i * ld + j : (size_t)i + (size_t)j * ld);
  }
  size_t bytes() const { return (size_t)stride * batch * esize(kind); }
};

Mat make(Kind kind, int rows, int cols, bool row_major, int batch, bool nan_fill) {
  Mat m;
  m.kind = kind;
  m.rows = rows;
  m.cols = cols;
  m.row_major = row_major;
  m.ld = (row_major ? cols : rows) + 2;  // padded
  m.batch = batch;
  m.stride = (long long)m.ld * (row_major ? rows : cols) + 5;
  m.host = malloc(m.bytes());
  if (nan_fill) memset(m.host, 0xff, m.bytes());
  else
    for (size_t i = 0; i < (size_t)m.stride * batch; ++i) put(m.host, kind, i, frand());
  CHECK_CUDA(cudaMalloc(&m.dev, m.bytes()));
  CHECK_CUDA(cudaMemcpy(m.dev, m.host, m.bytes(), cudaMemcpyHostToDevice));
  return m;
}
void drop(Mat &m) {
  free(m.host);
  CHECK_CUDA(cudaFree(m.dev));
}

cublasLtMatrixLayout_t layout(const Mat &m) {
  cublasLtMatrixLayout_t l;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&l, dtype(m.kind), m.rows, m.cols, m.ld));
  if (m.row_major) {
    cublasLtOrder_t order = CUBLASLT_ORDER_ROW;
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order));
  }
  if (m.batch > 1) {
    int32_t b = m.batch;
    int64_t s = m.stride;
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b));
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s));
  }
  return l;
}

double gelu_ref(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

struct Case {
  Kind in, out;
  cublasOperation_t ta, tb;
  int m, n, k, batch;
  float alpha, beta;
  cublasLtEpilogue_t epi;
  bool row_major, bias_f32;
};

// One cublasLtMatmul against the double-precision reference; returns the number of wrong elements.
int run_case(cublasLtHandle_t lt, const Case &c) {
  const bool bias_on = (c.epi & CUBLASLT_EPILOGUE_BIAS) != 0;
  Mat A = make(c.in, c.ta == CUBLAS_OP_N ? c.m : c.k, c.ta == CUBLAS_OP_N ? c.k : c.m, c.row_major, c.batch, false);
  Mat B = make(c.in, c.tb == CUBLAS_OP_N ? c.k : c.n, c.tb == CUBLAS_OP_N ? c.n : c.k, c.row_major, c.batch, false);
  Mat C = make(c.out, c.m, c.n, c.row_major, c.batch, c.beta == 0.0f);  // NaN garbage when beta == 0
  Mat D = make(c.out, c.m, c.n, c.row_major, c.batch, true);
  const Kind bias_kind = c.bias_f32 ? F32 : c.out;
  const long long bias_stride = c.m + 3;
  void *bias_h = malloc((size_t)bias_stride * c.batch * esize(bias_kind)), *bias_d = nullptr;
  for (long long i = 0; i < bias_stride * c.batch; ++i) put(bias_h, bias_kind, (size_t)i, frand());
  CHECK_CUDA(cudaMalloc(&bias_d, (size_t)bias_stride * c.batch * esize(bias_kind)));
  CHECK_CUDA(cudaMemcpy(bias_d, bias_h, (size_t)bias_stride * c.batch * esize(bias_kind), cudaMemcpyHostToDevice));

  cublasLtMatmulDesc_t desc;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &c.ta, sizeof c.ta));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &c.tb, sizeof c.tb));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epi, sizeof c.epi));
  if (bias_on) {
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_d, sizeof bias_d));
    if (c.bias_f32) {
      cudaDataType bt = CUDA_R_32F;
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    if (c.batch > 1) {
      int64_t bs = bias_stride;
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bs, sizeof bs));
    }
  }
  // GELU_AUX: the GELU input matrix, D's type and order, leading dimension a multiple of 8
  const bool aux_on = c.epi == CUBLASLT_EPILOGUE_GELU_AUX || c.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  const int64_t aux_ld = ((c.row_major ? c.n : c.m) + 7) / 8 * 8 + 8;
  const int64_t aux_stride = aux_ld * (c.row_major ? c.m : c.n) + 8;
  void *aux_d = nullptr, *aux_h = nullptr;
  if (aux_on) {
    aux_h = malloc((size_t)aux_stride * c.batch * esize(c.out));
    CHECK_CUDA(cudaMalloc(&aux_d, (size_t)aux_stride * c.batch * esize(c.out)));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux_d, sizeof aux_d));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld));
    if (c.batch > 1)
      CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &aux_stride,
                                                  sizeof aux_stride));
  }
  cublasLtMatrixLayout_t la = layout(A), lb = layout(B), lc = layout(C), ld = layout(D);
  cublasLtMatmulPreference_t pref;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws_bytes = 1 << 20;
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                    sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t heur[4];
  int found = 0;
  CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 4, heur, &found));
  int bad = 0;
  if (found < 1 || heur[0].state != CUBLAS_STATUS_SUCCESS || heur[0].workspaceSize > ws_bytes) {
    printf("FAIL heuristic: %d algorithms\n", found);
    ++bad;
  }
  void *ws = nullptr;
  CHECK_CUDA(cudaMalloc(&ws, ws_bytes));
  CHECK_CUBLAS(cublasLtMatmul(lt, desc, &c.alpha, A.dev, la, B.dev, lb, &c.beta, C.dev, lc, D.dev, ld, &heur[0].algo,
                              ws, ws_bytes, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(D.host, D.dev, D.bytes(), cudaMemcpyDeviceToHost));
  if (aux_on) CHECK_CUDA(cudaMemcpy(aux_h, aux_d, (size_t)aux_stride * c.batch * esize(c.out), cudaMemcpyDeviceToHost));
  // tolerances: inputs are exact in every type; fp32 accumulation over k terms of magnitude <= 1, then one rounding
  // to the output type (bf16: 2^-8 relative, fp16: 2^-11)
  const double rtol = c.out == F32 ? 1e-5 : (c.out == BF16 ? 8e-3 : 1e-3);
  const double atol = 1e-5 * c.k + (c.out == F32 ? 1e-6 : 1e-3);
  for (int b = 0; b < c.batch; ++b)
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) {
        double acc = 0.0;
        for (int p = 0; p < c.k; ++p) {
          const double a = get(A.host, c.in, c.ta == CUBLAS_OP_N ? A.idx(b, i, p) : A.idx(b, p, i));
          const double bb = get(B.host, c.in, c.tb == CUBLAS_OP_N ? B.idx(b, p, j) : B.idx(b, j, p));
          acc += a * bb;
        }
        double ref = c.alpha * acc;
        if (c.beta != 0.0f) ref += c.beta * (double)get(C.host, c.out, C.idx(b, i, j));
        if (bias_on) ref += get(bias_h, bias_kind, (size_t)(b * bias_stride + i));
        if (aux_on) {
          const size_t ai = (size_t)b * aux_stride + (c.row_major ? (size_t)i * aux_ld + j : (size_t)i + (size_t)j * aux_ld);
          const double got_aux = get(aux_h, c.out, ai);
          if (!(fabs(got_aux - ref) <= atol + rtol * fabs(ref)) && bad++ < 4)
            printf("FAIL GELU input (aux) batch %d (%d,%d) = %.7g, reference %.7g\n", b, i, j, got_aux, ref);
        }
        if (c.epi == CUBLASLT_EPILOGUE_RELU_BIAS) ref = ref > 0 ? ref : 0;
        if (c.epi == CUBLASLT_EPILOGUE_GELU || c.epi == CUBLASLT_EPILOGUE_GELU_BIAS || aux_on) ref = gelu_ref(ref);
        const double got = get(D.host, c.out, D.idx(b, i, j));
        if (!(fabs(got - ref) <= atol + rtol * fabs(ref)) && bad++ < 4)
          printf("FAIL %s->%s op %d%d epilogue %d%s batch %d D(%d,%d) = %.7g, reference %.7g\n", kname[c.in],
                 kname[c.out], (int)c.ta, (int)c.tb, (int)c.epi, c.row_major ? " row-major" : "", b, i, j, got, ref);
      }
  CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
  CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(la));
  CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(lb));
  CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(lc));
  CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(ld));
  CHECK_CUBLAS(cublasLtMatmulDescDestroy(desc));
  CHECK_CUDA(cudaFree(ws));
  CHECK_CUDA(cudaFree(bias_d));
  free(bias_h);
  if (aux_on) {
    CHECK_CUDA(cudaFree(aux_d));
    free(aux_h);
  }
  drop(A);
  drop(B);
  drop(C);
  drop(D);
  return bad;
}

}  // namespace

int main() {
#ifndef __CUDAHOST__
  require_device();
#endif
  int fails = 0;
  cublasLtHandle_t lt;
  CHECK_CUBLAS(cublasLtCreate(&lt));
  EXPECT(cublasLtGetVersion() > 0);
  const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  const Case cases[] = {
      // every transpose combination, fp32, alpha/beta
      {F32, F32, N, N, 37, 29, 23, 1, 1.5f, 0.5f, CUBLASLT_EPILOGUE_DEFAULT, false, false},
      {F32, F32, T, N, 37, 29, 23, 1, 1.0f, 0.0f, CUBLASLT_EPILOGUE_DEFAULT, false, false},
      {F32, F32, N, T, 37, 29, 23, 1, -0.75f, 2.0f, CUBLASLT_EPILOGUE_DEFAULT, false, false},
      {F32, F32, T, T, 37, 29, 23, 1, 1.0f, 0.0f, CUBLASLT_EPILOGUE_BIAS, false, false},
      // 16-bit inputs, fp32 compute, 16-bit or fp32 output; the epilogues of llm.c-style programs
      {BF16, BF16, T, N, 48, 40, 64, 1, 1.0f, 0.0f, CUBLASLT_EPILOGUE_BIAS, false, false},
      {BF16, BF16, T, N, 48, 40, 64, 1, 1.0f, 0.0f, CUBLASLT_EPILOGUE_GELU_BIAS, false, false},
      {BF16, F32, N, N, 33, 17, 50, 1, 0.5f, 1.0f, CUBLASLT_EPILOGUE_GELU, false, false},
      {F16, F16, N, T, 31, 45, 26, 1, 1.0f, 0.25f, CUBLASLT_EPILOGUE_RELU_BIAS, false, false},
      {F16, F16, T, T, 16, 16, 16, 1, 2.0f, 0.0f, CUBLASLT_EPILOGUE_GELU_BIAS, false, true},
      // row-major layouts, strided batches with a bias batch stride
      {F32, F32, N, T, 21, 19, 13, 1, 1.0f, 0.5f, CUBLASLT_EPILOGUE_BIAS, true, false},
      {BF16, BF16, T, N, 24, 20, 32, 3, 1.0f, 0.0f, CUBLASLT_EPILOGUE_GELU_BIAS, false, true},
      {F32, F32, N, N, 12, 10, 8, 2, 1.0f, 1.0f, CUBLASLT_EPILOGUE_DEFAULT, true, false},
      // the GELU input kept for the backward pass (llm.c's fused forward)
      {BF16, BF16, T, N, 40, 24, 32, 1, 1.0f, 0.0f, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, false, false},
      {F32, F32, N, N, 13, 11, 9, 2, 1.0f, 0.5f, CUBLASLT_EPILOGUE_GELU_AUX, true, false},
  };
  for (const Case &c : cases) fails += run_case(lt, c);

  // ---- the stack-allocated descriptors of cublasLt.h's *Init helpers; a matmul without an algorithm
  {
    cublasLtMatmulDescOpaque_t desc_s;
    cublasLtMatrixLayoutOpaque_t l_s;
    cublasLtMatmulPreferenceOpaque_t p_s;
    CHECK_CUBLAS(cublasLtMatmulDescInit(&desc_s, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK_CUBLAS(cublasLtMatrixLayoutInit(&l_s, CUDA_R_32F, 4, 4, 4));
    CHECK_CUBLAS(cublasLtMatmulPreferenceInit(&p_s));
    float h[16], *d;
    for (int i = 0; i < 16; ++i) h[i] = (float)(i % 5) - 2.0f;
    CHECK_CUDA(cudaMalloc(&d, 3 * sizeof h));
    CHECK_CUDA(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(d + 16, h, sizeof h, cudaMemcpyHostToDevice));
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasLtMatmul(lt, &desc_s, &one, d, &l_s, d + 16, &l_s, &zero, d + 32, &l_s, d + 32, &l_s, nullptr,
                                nullptr, 0, 0));
    float out[16];
    CHECK_CUDA(cudaMemcpy(out, d + 32, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        float r = 0;
        for (int p = 0; p < 4; ++p) r += h[i + 4 * p] * h[p + 4 * j];
        EXPECT(out[i + 4 * j] == r);
      }
    int32_t got_type = -1;
    size_t written = 0;
    CHECK_CUBLAS(cublasLtMatrixLayoutGetAttribute(&l_s, CUBLASLT_MATRIX_LAYOUT_TYPE, &got_type, sizeof got_type,
                                                  &written));
    EXPECT(got_type == CUDA_R_32F && written == sizeof got_type);
    CHECK_CUDA(cudaFree(d));
  }
  // ---- argument errors and what host mode does not provide
#ifdef __CUDAHOST__
  {
    cublasLtMatmulDesc_t desc;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasLtEpilogue_t dgelu = CUBLASLT_EPILOGUE_DGELU;
    EXPECT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &dgelu, sizeof dgelu) ==
           CUBLAS_STATUS_NOT_SUPPORTED);
    const void *scale = &dgelu;
    EXPECT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale, sizeof scale) ==
           CUBLAS_STATUS_NOT_SUPPORTED);
    const int32_t wrong_size = 0;
    EXPECT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &wrong_size, sizeof wrong_size) ==
           CUBLAS_STATUS_INVALID_VALUE);
    CHECK_CUBLAS(cublasLtMatmulDescDestroy(desc));
    // a 16-bit compute type: the heuristic finds nothing
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_16F, CUDA_R_16F));
    cublasLtMatrixLayout_t l;
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 8, 8, 8));
    cublasLtMatmulPreference_t pref;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulHeuristicResult_t r;
    int found = -1;
    EXPECT(cublasLtMatmulAlgoGetHeuristic(lt, desc, l, l, l, l, pref, 1, &r, &found) == CUBLAS_STATUS_NOT_SUPPORTED);
    EXPECT(found == 0);
    CHECK_CUBLAS(cublasLtMatmulDescDestroy(desc));
    // mismatched shapes
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t l2;
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&l2, CUDA_R_32F, 8, 7, 8));
    EXPECT(cublasLtMatmulAlgoGetHeuristic(lt, desc, l2, l2, l2, l2, pref, 1, &r, &found) ==
           CUBLAS_STATUS_INVALID_VALUE);
    EXPECT(cublasLtMatmulAlgoGetHeuristic(nullptr, desc, l2, l2, l2, l2, pref, 1, &r, &found) ==
           CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK_CUBLAS(cublasLtMatmulDescDestroy(desc));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(l));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(l2));
    CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
  }
#endif
  EXPECT(strcmp(cublasLtGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED") == 0);
  CHECK_CUBLAS(cublasLtDestroy(lt));
  return report("cublaslt", fails);
}
