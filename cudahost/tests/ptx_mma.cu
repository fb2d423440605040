// Inline PTX in host mode, element by element: mma.sync (m16n8k16 / m16n8k8 / m16n8k4; f16, bf16, tf32 inputs; f32
// and f16 accumulators), ldmatrix (.x1/.x2/.x4, with and without .trans), movmatrix, cp.async (cg/ca, 4/8/16
// bytes, src-size zero fill, ignore-src predicate, commit/wait_group/wait_all) and __cvta_generic_to_shared.
// Each lane builds its registers from the PTX ISA's fragment tables (section 9.7.14.5, "Matrix Fragments for
// mma.m16n8k*"; ldmatrix: "Warp-level matrix load instruction") written out here independently of cudahost, and the
// host checks every element. Inputs are small integers: every product and sum is exact, so the comparison is exact.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <cuda_pipeline_primitives.h>

#include <stdint.h>
#include <string.h>

#include "check.h"

__host__ __device__ inline float aval(int r, int c) { return (float)(((r * 7 + c * 3) % 11) - 5); }
__host__ __device__ inline float bval(int r, int c) { return (float)(((r * 5 + c * 9) % 13) - 6); }
__host__ __device__ inline float cval(int r, int c) { return (float)((r * 3 + c) % 7 - 3) * 0.5f; }

__device__ inline uint32_t pack_f16(float lo, float hi) {
  __half2 h = __halves2half2(__float2half_rn(lo), __float2half_rn(hi));
  uint32_t u;
  memcpy(&u, (const void*)&h, 4);
  return u;
}
__device__ inline uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 h = __halves2bfloat162(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
  uint32_t u;
  memcpy(&u, (const void*)&h, 4);
  return u;
}
__device__ inline uint32_t pack(bool bf, float lo, float hi) { return bf ? pack_bf16(lo, hi) : pack_f16(lo, hi); }

// ---- mma.m16n8k16, .f16/.bf16 A and B, f32 C/D (9.7.14.5.8) --------------------------------------------------------
__device__ void k16_regs(bool bf, int lane, uint32_t a[4], uint32_t b[2], float c[4]) {
  const int g = lane >> 2, t = lane & 3;
  for (int j = 0; j < 4; j++) {  // register j holds a_{2j} (low) and a_{2j+1}
    float v[2];
    for (int h = 0; h < 2; h++) {
      int i = 2 * j + h;
      int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
      int col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
      v[h] = aval(row, col);
    }
    a[j] = pack(bf, v[0], v[1]);
  }
  for (int j = 0; j < 2; j++) {
    float v[2];
    for (int h = 0; h < 2; h++) {
      int i = 2 * j + h;
      v[h] = bval(2 * t + (i & 1) + (i >= 2 ? 8 : 0), g);
    }
    b[j] = pack(bf, v[0], v[1]);
  }
  for (int i = 0; i < 4; i++) c[i] = cval(i < 2 ? g : g + 8, 2 * t + (i & 1));
}
__device__ void store_d(float* D, int lane, const float d[4]) {
  const int g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; i++) D[(i < 2 ? g : g + 8) * 8 + 2 * t + (i & 1)] = d[i];
}

__global__ void mma_k16(float* D, int bf) {
  const int lane = threadIdx.x;
  uint32_t a[4], b[2];
  float c[4];
  k16_regs(bf != 0, lane, a, b, c);
  if (bf) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  store_d(D, lane, c);
}

// m16n8k16 with f16 accumulators: C and D are two .f16x2 registers (c0,c1 row g; c2,c3 row g+8)
__global__ void mma_k16_f16acc(float* D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  uint32_t a[4], b[2];
  float c[4];
  k16_regs(false, lane, a, b, c);
  uint32_t c01 = pack_f16(c[0], c[1]), c23 = pack_f16(c[2], c[3]), d01, d23;
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\n"
               : "=r"(d01), "=r"(d23)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c01), "r"(c23));
  __half2 h01, h23;
  memcpy((void*)&h01, &d01, 4);
  memcpy((void*)&h23, &d23, 4);
  D[g * 8 + 2 * t] = __low2float(h01);
  D[g * 8 + 2 * t + 1] = __high2float(h01);
  D[(g + 8) * 8 + 2 * t] = __low2float(h23);
  D[(g + 8) * 8 + 2 * t + 1] = __high2float(h23);
}

// ---- mma.m16n8k8 .f16/.bf16 (9.7.14.5.7): A 2 regs (a0,a1 row g; a2,a3 row g+8; col 2t+(i&1)); B 1 reg (row 2t+i)
__global__ void mma_k8(float* D, int bf) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  uint32_t a0 = pack(bf != 0, aval(g, 2 * t), aval(g, 2 * t + 1));
  uint32_t a1 = pack(bf != 0, aval(g + 8, 2 * t), aval(g + 8, 2 * t + 1));
  uint32_t b0 = pack(bf != 0, bval(2 * t, g), bval(2 * t + 1, g));
  float c[4];
  for (int i = 0; i < 4; i++) c[i] = cval(i < 2 ? g : g + 8, 2 * t + (i & 1));
  if (bf) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0));
  } else {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0));
  }
  store_d(D, lane, c);
}

// ---- mma.m16n8k8 .tf32 (9.7.14.5.7): A 4 regs (row g for a0,a2, g+8 for a1,a3; col t for a0,a1, t+4 for a2,a3);
// B 2 regs (row t, t+4; col g). ---- and m16n8k4 .tf32 (9.7.14.5.6): A a0 (g,t), a1 (g+8,t); B b0 (t,g).
__global__ void mma_tf32(float* D, int k) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  float c[4];
  for (int i = 0; i < 4; i++) c[i] = cval(i < 2 ? g : g + 8, 2 * t + (i & 1));
  if (k == 8) {
    uint32_t a0 = __float_as_uint(aval(g, t)), a1 = __float_as_uint(aval(g + 8, t));
    uint32_t a2 = __float_as_uint(aval(g, t + 4)), a3 = __float_as_uint(aval(g + 8, t + 4));
    uint32_t b0 = __float_as_uint(bval(t, g)), b1 = __float_as_uint(bval(t + 4, g));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    uint32_t a0 = __float_as_uint(aval(g, t)), a1 = __float_as_uint(aval(g + 8, t));
    uint32_t b0 = __float_as_uint(bval(t, g));
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0));
  }
  store_d(D, lane, c);
}

static int check_mma(const char* name, const float* D, int K) {
  int bad = 0;
  for (int r = 0; r < 16; r++)
    for (int n = 0; n < 8; n++) {
      double ref = cval(r, n);
      for (int k = 0; k < K; k++) ref += (double)aval(r, k) * bval(k, n);
      if ((double)D[r * 8 + n] != ref) {
        if (bad < 5) printf("FAIL %s: D[%d][%d] = %g, expected %g\n", name, r, n, D[r * 8 + n], ref);
        bad++;
      }
    }
  return bad != 0;
}

// ---- ldmatrix: matrix j row r from lane 8j+r; lane l gets (row l/4, cols 2(l%4), 2(l%4)+1) of each matrix ----------
__host__ __device__ inline unsigned short mval(int j, int r, int c) { return (unsigned short)(1000 + j * 64 + r * 8 + c); }

template <int N, bool TRANS>
__global__ void ldmatrix_k(uint32_t* out) {
  __shared__ __align__(16) unsigned short sm[4][8][8];
  const int lane = threadIdx.x;
  for (int i = lane; i < 256; i += 32) sm[i / 64][(i / 8) % 8][i % 8] = mval(i / 64, (i / 8) % 8, i % 8);
  __syncwarp();
  const uint32_t addr = (uint32_t)__cvta_generic_to_shared(&sm[(lane / 8) % N][lane % 8][0]);
  uint32_t v[4] = {0, 0, 0, 0};
  if (N == 1 && !TRANS) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(v[0]) : "r"(addr));
  if (N == 2 && !TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(v[0]), "=r"(v[1]) : "r"(addr));
  if (N == 4 && !TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                 : "r"(addr));
  if (N == 1 && TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(v[0]) : "r"(addr));
  if (N == 2 && TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(v[0]), "=r"(v[1])
                 : "r"(addr));
  if (N == 4 && TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                 : "r"(addr));
  for (int j = 0; j < 4; j++) out[lane * 4 + j] = v[j];
}

static int check_ldmatrix(const char* name, const uint32_t* out, int n, bool trans) {
  int bad = 0;
  for (int l = 0; l < 32; l++)
    for (int j = 0; j < n; j++) {
      const int g = l / 4, t = l % 4;
      unsigned lo = trans ? mval(j, 2 * t, g) : mval(j, g, 2 * t);
      unsigned hi = trans ? mval(j, 2 * t + 1, g) : mval(j, g, 2 * t + 1);
      uint32_t want = lo | (hi << 16);
      if (out[l * 4 + j] != want) {
        if (bad < 5) printf("FAIL %s: lane %d reg %d = 0x%08x, expected 0x%08x\n", name, l, j, out[l * 4 + j], want);
        bad++;
      }
    }
  return bad != 0;
}

// ---- PTX wrapped in macros, as GEMM tutorials write it (qualifiers of ldmatrix in another order, too) -------------
#define LDMATRIX_X2(R0, R1, addr) \
  asm volatile("ldmatrix.sync.aligned.x2.m8n8.shared.b16 {%0, %1}, [%2];\n" : "=r"(R0), "=r"(R1) : "r"(addr))
#define CP_ASYNC_CG(dst, src, bytes) \
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(bytes))
#define CP_ASYNC_COMMIT_GROUP() asm volatile("cp.async.commit_group;\n" ::)
#define CP_ASYNC_WAIT_GROUP(n) asm volatile("cp.async.wait_group %0;\n" ::"n"(n))
#define HMMA16816(RD0, RD1, RA0, RA1, RA2, RA3, RB0, RB1, RC0, RC1)                                        \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};\n" \
               : "=r"(RD0), "=r"(RD1)                                                                     \
               : "r"(RA0), "r"(RA1), "r"(RA2), "r"(RA3), "r"(RB0), "r"(RB1), "r"(RC0), "r"(RC1))

// the two matrices (16-byte rows) come from global memory through cp.async, then ldmatrix.x2
__global__ void macro_ldmatrix_k(const unsigned short* src, uint32_t* out) {
  __shared__ __align__(16) unsigned short sm[2][8][8];
  const int lane = threadIdx.x;
  if (lane < 16) CP_ASYNC_CG((uint32_t)__cvta_generic_to_shared(&sm[lane / 8][lane % 8][0]), src + lane * 8, 16);
  CP_ASYNC_COMMIT_GROUP();
  CP_ASYNC_WAIT_GROUP(0);
  __syncwarp();
  uint32_t r0, r1;
  LDMATRIX_X2(r0, r1, (uint32_t)__cvta_generic_to_shared(&sm[(lane / 8) % 2][lane % 8][0]));
  out[lane * 4] = r0;
  out[lane * 4 + 1] = r1;
  out[lane * 4 + 2] = out[lane * 4 + 3] = 0;
}
__global__ void macro_hmma_k(float* D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  uint32_t a[4], b[2];
  float c[4];
  k16_regs(false, lane, a, b, c);
  uint32_t c01 = pack_f16(c[0], c[1]), c23 = pack_f16(c[2], c[3]), d01, d23;
  HMMA16816(d01, d23, a[0], a[1], a[2], a[3], b[0], b[1], c01, c23);
  __half2 h01, h23;
  memcpy((void*)&h01, &d01, 4);
  memcpy((void*)&h23, &d23, 4);
  D[g * 8 + 2 * t] = __low2float(h01);
  D[g * 8 + 2 * t + 1] = __high2float(h01);
  D[(g + 8) * 8 + 2 * t] = __low2float(h23);
  D[(g + 8) * 8 + 2 * t + 1] = __high2float(h23);
}

// ---- movmatrix: the transposed 8x8 matrix, in the same fragment layout ------------------------------------------
__global__ void movmatrix_k(uint32_t* out) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  uint32_t a = (uint32_t)mval(0, g, 2 * t) | ((uint32_t)mval(0, g, 2 * t + 1) << 16), d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(a));
  out[lane] = d;
}

// ---- cp.async ------------------------------------------------------------------------------------------------------
__global__ void cp_async_k(const float4* src, const float* srcf, float4* out, float* outf, int* early) {
  __shared__ __align__(16) float4 buf[2][32];
  __shared__ __align__(16) float fb[3][32];
  const int lane = threadIdx.x;
  buf[0][lane] = make_float4(-1, -1, -1, -1);
  buf[1][lane] = make_float4(-1, -1, -1, -1);
  fb[0][lane] = fb[1][lane] = fb[2][lane] = -1;
  __syncwarp();  // (a lane's 8-byte copy below lands in its neighbour's element too)
  const uint32_t d0 = (uint32_t)__cvta_generic_to_shared(&buf[0][lane]);
  const uint32_t d1 = (uint32_t)__cvta_generic_to_shared(&buf[1][lane]);
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(d0), "l"(src + lane));
  asm volatile("cp.async.commit_group;\n" ::);
  // zero-fill form: only src-size = 8 bytes are read, the other 8 are zero
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(d1), "l"(src + 32 + lane), "r"(8));
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
  out[lane] = buf[0][lane];  // the first group is complete
#ifdef __CUDAHOST__
  early[lane] = buf[1][lane].x != -1.f;  // host mode writes the destination at the wait, not before
#else
  early[lane] = 0;
#endif
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  out[32 + lane] = buf[1][lane];
  // 4- and 8-byte copies; the ignore-src predicate form (a predicate set by setp)
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"((uint32_t)__cvta_generic_to_shared(&fb[0][lane])),
               "l"(srcf + lane));
  if (lane % 2 == 0)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"((uint32_t)__cvta_generic_to_shared(&fb[1][lane])),
                 "l"(srcf + 32 + lane));
  asm volatile(
      "{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %2, 0;\n"
      "  cp.async.ca.shared.global [%0], [%1], 4, p;\n"
      "}\n" ::"r"((uint32_t)__cvta_generic_to_shared(&fb[2][lane])),
      "l"(srcf + lane), "r"(lane & 1));
  asm volatile("cp.async.commit_group;\n" ::);
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  __syncwarp();
  outf[lane] = fb[0][lane];
  outf[32 + lane] = fb[1][lane];
  outf[64 + lane] = fb[2][lane];
}

// the __pipeline_* primitives (cp.async through the toolkit's C API): a 16-byte copy with 4 bytes zero-filled
__global__ void pipeline_k(const float4* src, float4* out) {
  __shared__ __align__(16) float4 buf[2][32];
  const int lane = threadIdx.x;
  __pipeline_memcpy_async(&buf[0][lane], &src[lane], sizeof(float4));
  __pipeline_commit();
  __pipeline_memcpy_async(&buf[1][lane], &src[32 + lane], sizeof(float4), 4);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  out[lane] = buf[0][lane];
  out[32 + lane] = buf[1][lane];
}

// __cvta_generic_to_shared and cvta.to.shared agree, and the address converts back
__global__ void cvta_k(int* ok) {
  __shared__ float s[64];
  extern __shared__ float dyn[];
  const int lane = threadIdx.x;
  uint32_t a = (uint32_t)__cvta_generic_to_shared(&s[lane]), b;
  asm("{ .reg .u64 t;\n cvta.to.shared.u64 t, %1;\n cvt.u32.u64 %0, t; }\n" : "=r"(b) : "l"(&s[lane]));
  uint32_t c = (uint32_t)__cvta_generic_to_shared(&dyn[lane]);
  ok[lane] = a == b && __cvta_shared_to_generic(a) == (void*)&s[lane] && a + 4 == (uint32_t)__cvta_generic_to_shared(&s[lane + 1]) &&
             __cvta_shared_to_generic(c) == (void*)&dyn[lane];
}

int main() {
#ifndef __CUDAHOST__
  require_device();
#endif
  int fails = 0;
  float *dD, hD[128];
  CHECK_CUDA(cudaMalloc(&dD, 128 * sizeof(float)));
  for (int bf = 0; bf < 2; bf++) {
    mma_k16<<<1, 32>>>(dD, bf);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(hD, dD, sizeof hD, cudaMemcpyDeviceToHost));
    fails += check_mma(bf ? "m16n8k16 bf16" : "m16n8k16 f16", hD, 16);
    mma_k8<<<1, 32>>>(dD, bf);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(hD, dD, sizeof hD, cudaMemcpyDeviceToHost));
    fails += check_mma(bf ? "m16n8k8 bf16" : "m16n8k8 f16", hD, 8);
  }
  mma_k16_f16acc<<<1, 32>>>(dD);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(hD, dD, sizeof hD, cudaMemcpyDeviceToHost));
  fails += check_mma("m16n8k16 f16 accumulators", hD, 16);
  for (int k = 4; k <= 8; k += 4) {
    mma_tf32<<<1, 32>>>(dD, k);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(hD, dD, sizeof hD, cudaMemcpyDeviceToHost));
    fails += check_mma(k == 8 ? "m16n8k8 tf32" : "m16n8k4 tf32", hD, k);
  }

  uint32_t *dU, hU[128];
  CHECK_CUDA(cudaMalloc(&dU, sizeof hU));
#define LDM(N, T)                                                                       \
  ldmatrix_k<N, T><<<1, 32>>>(dU);                                                      \
  CHECK_LAUNCH();                                                                       \
  CHECK_CUDA(cudaMemcpy(hU, dU, sizeof hU, cudaMemcpyDeviceToHost));                    \
  fails += check_ldmatrix("ldmatrix x" #N " trans=" #T, hU, N, T);
  LDM(1, false) LDM(2, false) LDM(4, false) LDM(1, true) LDM(2, true) LDM(4, true)
  {
    unsigned short hm[128], *dm;
    for (int j = 0; j < 2; j++)
      for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++) hm[j * 64 + r * 8 + c] = mval(j, r, c);
    CHECK_CUDA(cudaMalloc(&dm, sizeof hm));
    CHECK_CUDA(cudaMemcpy(dm, hm, sizeof hm, cudaMemcpyHostToDevice));
    macro_ldmatrix_k<<<1, 32>>>(dm, dU);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(hU, dU, sizeof hU, cudaMemcpyDeviceToHost));
    fails += check_ldmatrix("macro cp.async + ldmatrix x2", hU, 2, false);
    macro_hmma_k<<<1, 32>>>(dD);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(hD, dD, sizeof hD, cudaMemcpyDeviceToHost));
    fails += check_mma("macro HMMA16816", hD, 16);
    cudaFree(dm);
  }
  movmatrix_k<<<1, 32>>>(dU);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(hU, dU, 32 * 4, cudaMemcpyDeviceToHost));
  for (int l = 0; l < 32; l++) {
    const int g = l / 4, t = l % 4;
    uint32_t want = (uint32_t)mval(0, 2 * t, g) | ((uint32_t)mval(0, 2 * t + 1, g) << 16);
    EXPECT(hU[l] == want);
  }

  // cp.async
  float4 hsrc[64], hout[64];
  float hsrcf[64], houtf[96];
  for (int i = 0; i < 64; i++) hsrc[i] = make_float4(i + 0.25f, i + 0.5f, -i - 1.f, i * 2.f + 1);
  for (int i = 0; i < 64; i++) hsrcf[i] = 100.f + i;
  float4 *dsrc, *dout;
  float *dsrcf, *doutf;
  int *dearly, hearly[32];
  CHECK_CUDA(cudaMalloc(&dsrc, sizeof hsrc));
  CHECK_CUDA(cudaMalloc(&dout, sizeof hout));
  CHECK_CUDA(cudaMalloc(&dsrcf, sizeof hsrcf));
  CHECK_CUDA(cudaMalloc(&doutf, sizeof houtf));
  CHECK_CUDA(cudaMalloc(&dearly, sizeof hearly));
  CHECK_CUDA(cudaMemcpy(dsrc, hsrc, sizeof hsrc, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dsrcf, hsrcf, sizeof hsrcf, cudaMemcpyHostToDevice));
  cp_async_k<<<1, 32>>>(dsrc, dsrcf, dout, doutf, dearly);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(houtf, doutf, sizeof houtf, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hearly, dearly, sizeof hearly, cudaMemcpyDeviceToHost));
  for (int l = 0; l < 32; l++) {
    EXPECT(memcmp(&hout[l], &hsrc[l], 16) == 0);
    EXPECT(hout[32 + l].x == hsrc[32 + l].x && hout[32 + l].y == hsrc[32 + l].y && hout[32 + l].z == 0.f &&
           hout[32 + l].w == 0.f);
    EXPECT(hearly[l] == 0);
    EXPECT(houtf[l] == hsrcf[l]);
    EXPECT(houtf[32 + l] == hsrcf[32 + l]);  // even lanes copy 8 bytes: their element and the next lane's
    EXPECT(houtf[64 + l] == ((l & 1) ? 0.f : hsrcf[l]));
  }

  pipeline_k<<<1, 32>>>(dsrc, dout);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
  for (int l = 0; l < 32; l++) {
    EXPECT(memcmp(&hout[l], &hsrc[l], 16) == 0);
    EXPECT(memcmp(&hout[32 + l], &hsrc[32 + l], 12) == 0 && hout[32 + l].w == 0.f);
  }

  int *dok, hok[32];
  CHECK_CUDA(cudaMalloc(&dok, sizeof hok));
  cvta_k<<<1, 32, 64 * sizeof(float)>>>(dok);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(hok, dok, sizeof hok, cudaMemcpyDeviceToHost));
  for (int l = 0; l < 32; l++) EXPECT(hok[l] == 1);
  return report("ptx_mma", fails);
}
