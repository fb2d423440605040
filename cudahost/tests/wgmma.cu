// wgmma (sm_90a warpgroup MMA) in host mode, beyond cudahost/programs/wgmma_gemm.cu: every swizzle mode (none, 32B,
// 64B, 128B) in both majorness of A and B, the widest shape (m64n256k16, 128 accumulators per thread) with
// imm-scale-a = -1, f16 inputs with f16 accumulators (m64n8k16.f16.f16.f16), and two wgmma-groups in flight
// (wait_group 1, then 0) chained on the same accumulators. Each case lays out A (64 x 32) and B (32 x N) in an image
// of shared memory on the host, following the canonical layouts of PTX ISA 9.7.15.5.1 (cudahost/README.md,
// "Warpgroup MMA"), and compares D with a double-precision product. Host-mode test (nvcc builds the file; the wgmma
// path is compiled for sm_90a only, and the program is skipped there).
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#if defined(__CUDAHOST__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HAVE_WGMMA 1
#endif

// one operand's layout: swizzle mode (0 none, 1 128B, 2 64B, 3 32B), MN-major (imm-trans 1) or K-major, and the
// descriptor fields of each of the two k16 steps (byte offsets within the image)
struct Operand {
  int mode, mn_major;
  uint32_t start[2], lbo, sbo;
};

__device__ __forceinline__ uint64_t desc_of(uint32_t smem_base, const Operand& o, int step) {
  const uint32_t a = smem_base + o.start[step];
  return (uint64_t)((a & 0x3ffff) >> 4) | ((uint64_t)((o.lbo & 0x3ffff) >> 4) << 16) |
         ((uint64_t)((o.sbo & 0x3ffff) >> 4) << 32) | ((uint64_t)o.mode << 62);
}

template <int TA, int TB>
__device__ __forceinline__ void mma_n256(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
#if HAVE_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, "
      "0;\nwgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "
      "%28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, "
      "%47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, "
      "%66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, "
      "%85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, "
      "%103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, "
      "%119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, -1, 1, %131, %132;\n}\n"
      :
      "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
      "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
      "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
      "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
      "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
      "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
      "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
      "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
      "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
      "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
      "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
      "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]),
      "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
      "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]),
      "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]),
      "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]),
      "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
      "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]),
      "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB));
#else
  (void)d, (void)da, (void)db, (void)scale_d;
#endif
}
template <int TA, int TB>
__device__ __forceinline__ void mma_f16_n8(uint32_t (&d)[2], uint64_t da, uint64_t db, int scale_d) {
#if HAVE_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\nwgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0, "
      "%1}, %2, %3, p, 1, 1, %5, %6;\n}\n"
      :
      "+r"(d[0]), "+r"(d[1])
      : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB));
#else
  (void)d, (void)da, (void)db, (void)scale_d;
#endif
}
__device__ __forceinline__ void wg_fence() {
#if HAVE_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_commit() {
#if HAVE_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void wg_wait() {
#if HAVE_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

// (row, column) of f32 accumulator element i of thread t
__device__ __forceinline__ void d_pos(int t, int i, int& r, int& c) {
  r = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i % 4) / 2);
  c = 8 * (i / 4) + 2 * (t % 4) + i % 2;
}

extern __shared__ unsigned char wg_img[];

// D (64 x 256) = -A B over two k16 steps, each its own wgmma-group
template <int TA, int TB>
__global__ void wide(const unsigned char* image, int bytes, Operand a, Operand b, float* out) {
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) wg_img[i] = image[i];
  __syncthreads();
  const uint32_t s = (uint32_t)__cvta_generic_to_shared(wg_img);
  float d[128];
  for (int i = 0; i < 128; i++) d[i] = 7.f;  // ignored: scale-d = 0 first
  wg_fence();
  mma_n256<TA, TB>(d, desc_of(s, a, 0), desc_of(s, b, 0), 0);
  wg_commit();
  mma_n256<TA, TB>(d, desc_of(s, a, 1), desc_of(s, b, 1), 1);
  wg_commit();
  wg_wait<1>();
  wg_wait<0>();
  for (int i = 0; i < 128; i++) {
    int r, c;
    d_pos(threadIdx.x, i, r, c);
    out[r * 256 + c] = d[i];
  }
}
// D (64 x 8, f16) = A B (f16 inputs) over two k16 steps in one group
template <int TA, int TB>
__global__ void half8(const unsigned char* image, int bytes, Operand a, Operand b, float* out) {
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) wg_img[i] = image[i];
  __syncthreads();
  const uint32_t s = (uint32_t)__cvta_generic_to_shared(wg_img);
  uint32_t d[2] = {0xffffffffu, 0xffffffffu};
  wg_fence();
  mma_f16_n8<TA, TB>(d, desc_of(s, a, 0), desc_of(s, b, 0), 0);
  mma_f16_n8<TA, TB>(d, desc_of(s, a, 1), desc_of(s, b, 1), 1);
  wg_commit();
  wg_wait<0>();
  for (int i = 0; i < 4; i++) {
    int r, c;
    d_pos(threadIdx.x, i, r, c);
    out[r * 8 + c] = __half2float(__ushort_as_half((unsigned short)(d[i / 2] >> (16 * (i % 2)))));
  }
}

#ifdef __CUDAHOST__
// ---- host: the canonical layouts --------------------------------------------------------------------------------
// the layout of an R x 32 operand (R = 64 rows of A or N columns of B, K = 32: two k16 steps) at byte `base` of the
// image, for the given swizzle mode and majorness; fills the descriptor fields of both steps
static Operand make_layout(int mode, int mn_major, int R, uint32_t base) {
  Operand o;
  o.mode = mode;
  o.mn_major = mn_major;
  const uint32_t W = mode == 0 ? 0 : mode == 1 ? 128 : mode == 2 ? 64 : 32;
  if (!mn_major && !W) {  // core matrices 8 x 16 B; the 4 along K adjacent (LBO 128), rows of them SBO apart
    o.lbo = 128, o.sbo = 512;
    for (int s = 0; s < 2; s++) o.start[s] = base + 256 * s;
  } else if (!mn_major) {  // rows of W bytes; 8-row atoms SBO = 8 W apart; K beyond W in a second region
    o.lbo = 16, o.sbo = 8 * W;
    for (int s = 0; s < 2; s++) o.start[s] = base + (W >= 64 ? 32 * s : (uint32_t)R * 32 * s);
  } else if (!W) {  // core matrices 8 (k) x 16 B (8 mn); along K LBO = 128 apart, along MN SBO = 4 x 128
    o.lbo = 128, o.sbo = 512;
    for (int s = 0; s < 2; s++) o.start[s] = base + 256 * s;
  } else {  // k rows of W bytes (W/2 mn each): 8 k rows SBO = 8 W apart, the next W/2 mn LBO = 32 W apart
    o.sbo = 8 * W, o.lbo = 32 * W;
    for (int s = 0; s < 2; s++) o.start[s] = base + 16 * W * s;
  }
  return o;
}
// byte offset in the image of element (mn, k) of the operand, k in 0..31
static uint32_t place(const Operand& o, int mn, int k) {
  const int s = k / 16, kk = k % 16;
  const uint32_t W = o.mode == 0 ? 0 : o.mode == 1 ? 128 : o.mode == 2 ? 64 : 32;
  uint32_t off;
  if (!o.mn_major)
    off = W ? (mn % 8) * W + (mn / 8) * o.sbo + kk * 2 : (mn % 8) * 16 + (mn / 8) * o.sbo + (kk % 8) * 2 + (kk / 8) * o.lbo;
  else if (!W)
    off = (mn % 8) * 2 + (mn / 8) * o.sbo + (kk % 8) * 16 + (kk / 8) * o.lbo;
  else
    off = (mn % (W / 2)) * 2 + (mn / (W / 2)) * o.lbo + (kk % 8) * W + (kk / 8) * o.sbo;
  uint32_t a = o.start[s] + off;
  if (W) a ^= ((a >> 7) & (W / 16 - 1)) << 4;  // the image sits at a 1024-byte aligned shared address
  return a;
}

static unsigned short to16(float f, bool bf) {
  if (bf) {
    __nv_bfloat16 h = __float2bfloat16(f);
    return *(unsigned short*)&h;
  }
  __half h = __float2half(f);
  return *(unsigned short*)&h;
}
static float from16(unsigned short u, bool bf) {
  return bf ? __bfloat162float(*(__nv_bfloat16*)&u) : __half2float(*(__half*)&u);
}

static unsigned char* g_dimg;
static float* g_dout;

// builds the image for A (64 x 32) and B (32 x N), runs the kernel, compares with sign * A B
template <class Launch>
static void run_case(const char* name, int amode, int atrans, int bmode, int btrans, int N, bool bf, float sign,
                     double tol, Launch launch) {
  const int bytes = 8192 + 128 * N;  // A at 0 (up to 8 KiB), B at 8192 (up to 128 N bytes: K-major 128B rows)
  unsigned char* img = (unsigned char*)malloc((size_t)bytes);
  memset(img, 0xff, (size_t)bytes);  // NaN where the layout leaves holes
  Operand a = make_layout(amode, atrans, 64, 0), b = make_layout(bmode, btrans, N, 8192);
  float A[64][32], B[32][256];
  for (int m = 0; m < 64; m++)
    for (int k = 0; k < 32; k++) {
      unsigned short u = to16((float)rand() / (float)RAND_MAX * 2.f - 1.f, bf);
      A[m][k] = from16(u, bf);
      memcpy(img + place(a, m, k), &u, 2);
    }
  for (int k = 0; k < 32; k++)
    for (int n = 0; n < N; n++) {
      unsigned short u = to16((float)rand() / (float)RAND_MAX * 2.f - 1.f, bf);
      B[k][n] = from16(u, bf);
      memcpy(img + place(b, n, k), &u, 2);
    }
  CHECK_CUDA(cudaMemcpy(g_dimg, img, (size_t)bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(g_dout, 0xff, 64 * 256 * sizeof(float)));
  launch(g_dimg, bytes, a, b, g_dout);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  static float out[64 * 256];
  CHECK_CUDA(cudaMemcpy(out, g_dout, sizeof out, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int m = 0; m < 64; m++)
    for (int n = 0; n < N; n++) {
      double ref = 0;
      for (int k = 0; k < 32; k++) ref += (double)A[m][k] * B[k][n];
      ref *= sign;
      const double got = out[m * N + n];
      if (!(fabs(got - ref) <= tol + tol * fabs(ref))) {
        if (bad < 3) printf("  %s: D[%d][%d] = %g, reference %g\n", name, m, n, got, ref);
        bad++;
      }
    }
  printf("%-52s %s\n", name, bad ? "FAILED" : "ok");
  EXPECT(bad == 0);
  free(img);
}
#endif

int main() {
#ifndef __CUDAHOST__
  printf("SKIP: host-mode test (wgmma needs an sm_90a build)\n");
  return 77;
#else
  srand(90);
  CHECK_CUDA(cudaMalloc(&g_dimg, 8192 + 128 * 256));
  CHECK_CUDA(cudaMalloc(&g_dout, 64 * 256 * sizeof(float)));
  const size_t smem = 8192 + 128 * 256;  // 40 KiB: no opt-in needed
  auto wide_kk = [&](const unsigned char* i, int n, Operand a, Operand b, float* o) { wide<0, 0><<<1, 128, smem>>>(i, n, a, b, o); };
  auto wide_km = [&](const unsigned char* i, int n, Operand a, Operand b, float* o) { wide<0, 1><<<1, 128, smem>>>(i, n, a, b, o); };
  auto wide_mk = [&](const unsigned char* i, int n, Operand a, Operand b, float* o) { wide<1, 0><<<1, 128, smem>>>(i, n, a, b, o); };
  auto wide_mm = [&](const unsigned char* i, int n, Operand a, Operand b, float* o) { wide<1, 1><<<1, 128, smem>>>(i, n, a, b, o); };
  // (products of bf16/f16 are exact in fp32; 32 terms below 1 summed in fp32)
  run_case("m64n256k16 bf16, A K-major 64B, B N-major 32B", 2, 0, 3, 1, 256, true, -1.f, 1e-5, wide_km);
  run_case("m64n256k16 bf16, A K-major 32B, B K-major 64B", 3, 0, 2, 0, 256, true, -1.f, 1e-5, wide_kk);
  run_case("m64n256k16 bf16, A M-major none, B K-major 32B", 0, 1, 3, 0, 256, true, -1.f, 1e-5, wide_mk);
  run_case("m64n256k16 bf16, A M-major 64B, B N-major 128B", 2, 1, 1, 1, 256, true, -1.f, 1e-5, wide_mm);
  run_case("m64n256k16 bf16, A M-major 32B, B N-major none", 3, 1, 0, 1, 256, true, -1.f, 1e-5, wide_mm);
  run_case("m64n256k16 bf16, A M-major 128B, B K-major 128B", 1, 1, 1, 0, 256, true, -1.f, 1e-5, wide_mk);
  auto h_kk = [&](const unsigned char* i, int n, Operand a, Operand b, float* o) { half8<0, 0><<<1, 128, smem>>>(i, n, a, b, o); };
  auto h_mm = [&](const unsigned char* i, int n, Operand a, Operand b, float* o) { half8<1, 1><<<1, 128, smem>>>(i, n, a, b, o); };
  // (an f16 D is rounded once: half an ulp of values below 16)
  run_case("m64n8k16 f16 -> f16, A K-major none, B K-major none", 0, 0, 0, 0, 8, false, 1.f, 4e-3, h_kk);
  run_case("m64n8k16 f16 -> f16, A M-major 128B, B N-major none", 1, 1, 0, 1, 8, false, 1.f, 4e-3, h_mm);
  CHECK_CUDA(cudaFree(g_dimg));
  CHECK_CUDA(cudaFree(g_dout));
  return report("wgmma", 0);
#endif
}
