// Warpgroup MMA (wgmma, sm_90a) helpers shared by the wgmma kernels
// (optimized/cross_entropy_fused.cu, optimized/nsa.cu): the fence / group
// instructions, shared-memory matrix descriptors, the 128-byte swizzle, and
// wgmma.mma_async.m64nNk16 (bf16 in, fp32 accumulate) with A from a descriptor or from
// registers. Each is one inline PTX instruction from the list host
// execution mode emulates (cudahost/README.md, "Warpgroup MMA"); layouts as PTX ISA
// 9.7.15 (wgmma), whose facts these comments restate:
//
// - A warpgroup is the 128 threads of warps 4g .. 4g + 3; every instruction here is
//   warpgroup-collective. mma_async joins the open wgmma-group, commit closes it, and
//   wait<N> completes every committed group but the N most recent: the accumulators may
//   be read (and the shared-memory operands overwritten) only after that wait.
// - Accumulator d of m64nN (N / 2 floats per thread): warp w = warp % 4 of the
//   warpgroup owns rows 16 w .. 16 w + 15 and, per 8-column block f, the mma.m16n8
//   pattern: d[4 f + i] = row 16 w + lane / 4 + 8 (i >> 1), column 8 f + 2 (lane % 4) +
//   (i & 1). So per-row epilogues written for mma.sync m16n8 fragments apply unchanged.
// - A from registers (wg_mma_ra): the warp's 16 rows x 16 k in the mma.m16n8k16 A
//   fragment (a[0..3] as mma_bf16's a), e.g. a P tile converted from the accumulator of a
//   previous product, as FlashAttention-3 does.
// - Shared-memory operands must sit in the launch's `extern __shared__` memory (host mode
//   resolves the descriptor's 18-bit address through it); 128-byte swizzled operands need
//   a 1024-byte aligned base (wg_align_1024). Generic-proxy writes to an operand
//   (st.shared, cp.async after its wait) need wg_fence_proxy() and a barrier before the
//   wgmma that reads them.
//
// MF_WGMMA_CODE is 1 where the instructions exist (host mode; nvcc's sm_90a pass); in the
// other device passes every helper is empty, and kernels built on them must trap there
// and never be launched (wg_available()).
//
// Included after "mf_cuda.h", "mf_device.cuh" and "mf_mma.cuh"; everything is inline
// inside namespace MF_NS.
#ifndef MEMFIX_MF_WGMMA_CUH
#define MEMFIX_MF_WGMMA_CUH

#include <cuda_bf16.h>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__CUDAHOST__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MF_WGMMA_CODE 1
#else
#define MF_WGMMA_CODE 0
#endif

namespace MF_NS {

__device__ __forceinline__ void wg_fence()
{
#if MF_WGMMA_CODE
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_commit()
{
#if MF_WGMMA_CODE
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Completes every committed group of this warpgroup but the N most recent.
template <int N> __device__ __forceinline__ void wg_wait()
{
    static_assert(N >= 0 && N <= 2, "wg_wait<0..2>");
#if MF_WGMMA_CODE
    if constexpr (N == 0)
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    else if constexpr (N == 1)
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    else
        asm volatile("wgmma.wait_group.sync.aligned 2;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_wait_all() { wg_wait<0>(); }
// Generic-proxy shared-memory writes (stores, completed cp.async) before wgmma's reads
// (async proxy).
__device__ __forceinline__ void wg_fence_proxy()
{
#if MF_WGMMA_CODE
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// The first 1024-byte boundary of the shared state space at or after p (the 128-byte
// swizzle's period).
__device__ __forceinline__ unsigned char *wg_align_1024(unsigned char *p)
{
    return p + ((1024u - (smem_u32(p) & 1023u)) & 1023u);
}

// Byte offset of element (r, k) (k < 64) of an operand stored as 128-byte rows (64 bf16
// of K per row: K-major) with the 128-byte swizzle: 16-byte chunk c of row r at chunk
// c ^ (r % 8). The same formula places an MN-major operand's (k, mn) with r = k.
__device__ __forceinline__ int wg_sw128(int r, int k)
{
    return r * 128 + ((((k >> 3) ^ (r & 7)) << 4) | ((k & 7) << 1));
}

// Shared-memory matrix descriptor (PTX ISA 9.7.15.5.1): start address, leading and
// stride byte offsets (multiples of 16), swizzle 0 none, 1 128-byte, 2 64-byte, 3 32-byte.
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, int swizzle)
{
    return (uint64_t)((addr & 0x3ffffu) >> 4) | ((uint64_t)((lbo & 0x3ffffu) >> 4) << 16) |
           ((uint64_t)((sbo & 0x3ffffu) >> 4) << 32) | ((uint64_t)swizzle << 62);
}
// K-major, 128-byte rows, 128B-swizzled: SBO = 1024 (the next 8 rows), LBO unused (16).
__device__ __forceinline__ uint64_t wg_desc_sw128(uint32_t addr) { return wg_desc(addr, 16u, 1024u, 1); }
// d with its start address advanced by bytes (a multiple of 16): one 32-bit add instead of a
// new descriptor's masks and shifts, for the k16 steps or sub-tiles of one operand. The start
// field (bits 0-13) is address >> 4 of an address below 2^18; a GPU's shared memory (228 KB at
// most) keeps the sum below 2^18, so the add does not carry out of the field. (Host mode's
// addresses are host pointers taken mod 2^18: a carry there lands in the reserved bits 14-15,
// which its decoder masks off, leaving the same address mod 2^18.)
__device__ __forceinline__ uint64_t wg_desc_add(uint64_t d, uint32_t bytes)
{
    return (d & 0xffffffff00000000ull) | (uint64_t)((uint32_t)d + (bytes >> 4));
}

// d (64 x N fp32: this thread's N / 2) = A (64 x 16) . B (16 x N) + (accumulate ? d : 0),
// scales +1. wg_mma: A from descriptor da (TA = 1: MN-major), B from descriptor db (TB = 1:
// MN-major). wg_mma_ra: A from registers (the mma.m16n8k16 A fragment of the warp's 16 rows).
// Written out per N: host mode's translator reads each asm statement and its operands in
// the source text, so neither may come from a macro. The shapes the kernels use: from
// descriptors N = 32, 64, 128, 256; A from registers N = 16, 32, 64, 128 (add another the
// same way).
template <int N, int TA, int TB> struct WgMma;
template <int N, int TB> struct WgMmaRa;
#if MF_WGMMA_CODE
template <int TA, int TB> struct WgMma<32, TA, TB> {
    static __device__ __forceinline__ void run(float (&d)[16], uint64_t da, uint64_t db, int accumulate)
    {
        asm volatile("{\n.reg .pred acc_in;\nsetp.ne.b32 acc_in, %18, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, "
                     "%8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, acc_in, 1, 1, %19, %20;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                       "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                       "+f"(d[14]), "+f"(d[15])
                     : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
    }
};

template <int TA, int TB> struct WgMma<64, TA, TB> {
    static __device__ __forceinline__ void run(float (&d)[32], uint64_t da, uint64_t db, int accumulate)
    {
        asm volatile("{\n.reg .pred acc_in;\nsetp.ne.b32 acc_in, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, "
                     "%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, "
                     "%25, %26, %27, %28, %29, %30, %31}, %32, %33, acc_in, 1, 1, %35, %36;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                       "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                       "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
                       "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
                       "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
    }
};

template <int TA, int TB> struct WgMma<128, TA, TB> {
    static __device__ __forceinline__ void run(float (&d)[64], uint64_t da, uint64_t db, int accumulate)
    {
        asm volatile(
            "{\n.reg .pred acc_in;\nsetp.ne.b32 acc_in, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
            "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, "
            "%29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, "
            "acc_in, "
            "1, 1, %67, %68;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
              "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
              "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
              "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
              "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
              "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
              "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
              "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
    }
};

template <int TA, int TB> struct WgMma<256, TA, TB> {
    static __device__ __forceinline__ void run(float (&d)[128], uint64_t da, uint64_t db, int accumulate)
    {
        asm volatile(
            "{\n.reg .pred acc_in;\nsetp.ne.b32 acc_in, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
            "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, "
            "%29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, "
            "%67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, "
            "%86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, "
            "%104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, "
            "%120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, acc_in, 1, 1, %131, %132;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
              "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
              "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
              "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
              "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
              "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
              "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
              "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]),
              "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
              "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]),
              "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]),
              "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]),
              "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]),
              "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]),
              "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]),
              "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(da), "l"(db), "r"(accumulate), "n"(TA), "n"(TB));
    }
};

template <int TB> struct WgMmaRa<16, TB> {
    static __device__ __forceinline__ void run(float (&d)[8], const uint32_t (&a)[4], uint64_t db,
                                               int accumulate)
    {
        asm volatile("{\n.reg .pred acc_in;\nsetp.ne.b32 acc_in, %13, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, "
                     "{%8, %9, %10, %11}, %12, acc_in, 1, 1, %14;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                       "+f"(d[7])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate), "n"(TB));
    }
};

template <int TB> struct WgMmaRa<32, TB> {
    static __device__ __forceinline__ void run(float (&d)[16], const uint32_t (&a)[4], uint64_t db,
                                               int accumulate)
    {
        asm volatile(
            "{\n.reg .pred acc_in;\nsetp.ne.b32 acc_in, %21, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, "
            "%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, acc_in, 1, 1, %22;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
              "+f"(d[15])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate), "n"(TB));
    }
};

template <int TB> struct WgMmaRa<64, TB> {
    static __device__ __forceinline__ void run(float (&d)[32], const uint32_t (&a)[4], uint64_t db,
                                               int accumulate)
    {
        asm volatile("{\n.reg .pred acc_in;\nsetp.ne.b32 acc_in, %37, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, "
                     "%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, "
                     "%25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, acc_in, 1, 1, %38;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                       "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                       "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
                       "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
                       "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate), "n"(TB));
    }
};

template <int TB> struct WgMmaRa<128, TB> {
    static __device__ __forceinline__ void run(float (&d)[64], const uint32_t (&a)[4], uint64_t db,
                                               int accumulate)
    {
        asm volatile(
            "{\n.reg .pred acc_in;\nsetp.ne.b32 acc_in, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
            "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, "
            "%29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, "
            "%66, %67}, %68, acc_in, 1, 1, %70;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
              "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
              "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
              "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
              "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
              "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
              "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
              "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate), "n"(TB));
    }
};

#endif

template <int N, int TA = 0, int TB = 0>
__device__ __forceinline__ void wg_mma(float (&d)[N / 2], uint64_t da, uint64_t db, int accumulate)
{
#if MF_WGMMA_CODE
    WgMma<N, TA, TB>::run(d, da, db, accumulate);
#else
    (void)d, (void)da, (void)db, (void)accumulate;
#endif
}
template <int N, int TB = 0>
__device__ __forceinline__ void wg_mma_ra(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db,
                                          int accumulate)
{
#if MF_WGMMA_CODE
    WgMmaRa<N, TB>::run(d, a, db, accumulate);
#else
    (void)d, (void)a, (void)db, (void)accumulate;
#endif
}

// ---- host side: may a launcher pick its wgmma kernels? -------------------------------
// Host mode emulates wgmma: yes where the device it models is cc 9.0 (the default; a
// profile of a cc 8.0 device answers no, as an A100 would). CUDA mode needs a cc 9.0 device and the sm_90a code of
// the calling file (built with MF_HAVE_SM90A: src/CMakeLists.txt adds sm_90a code to the
// files with wgmma kernels where the build has sm_90), which `probe` (the file's
// one-thread kernel, launched and read back: which code the driver loaded, since sm_90
// and sm_90a code of the same kernel can both be in the fatbinary) reports in *present.
// `cache` (per file, per device: 0 unknown, 1 no, 2 yes) keeps the answer, so the probe
// runs once per process and device, outside any steady state. While `stream` is being
// captured into a CUDA graph the probe cannot run: an unprobed device answers "no"
// without caching it, so warm up before capture.
typedef mf_status (*mf_wg_probe_fn)(int *present);
static inline mf_status wg_available(cudaStream_t stream, std::atomic<int> (&cache)[64], mf_wg_probe_fn probe,
                                     bool *yes)
{
#if defined(__CUDAHOST__)
    (void)stream, (void)cache, (void)probe;
    int dev = 0, major = 0, minor = 0;
    MF_CUDA_CHECK(cudaGetDevice(&dev));
    MF_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    MF_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    *yes = major == 9 && minor == 0;
    return MF_OK;
#else
    int dev = 0;
    MF_CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= 0 && dev < 64 && cache[dev].load() != 0) {
        *yes = cache[dev].load() == 2;
        return MF_OK;
    }
    int major = 0, minor = 0;
    MF_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    MF_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    int present = 0;
    if (major == 9 && minor == 0 && probe != nullptr) {
        cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
        MF_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
        if (capturing != cudaStreamCaptureStatusNone) {
            *yes = false;
            return MF_OK;
        }
        MF_TRY(probe(&present));
    }
    if (dev >= 0 && dev < 64) cache[dev].store(present ? 2 : 1);
    *yes = present != 0;
    return MF_OK;
#endif
}

// The tensor-core path of a call: `path` (0 auto, 1 mma.sync, 2 wgmma: the values of
// mf_ce_mma_path); with auto, the environment variable `env` ("auto", "sync" or
// "wgmma"; anything else is an error naming it), else wgmma where wg_available() says
// so on a GPU and mma.sync otherwise (host mode's auto stays on mma.sync, the portable
// path). A forced wgmma where it is unavailable is MF_ERR_BACKEND_UNAVAILABLE, whose
// message names `what` (the knob the caller set).
static inline mf_status wg_pick(cudaStream_t stream, int path, const char *env, const char *what,
                                std::atomic<int> (&cache)[64], mf_wg_probe_fn probe, bool *wg)
{
    if (path == 0) {
        const char *e = getenv(env);
        if (e != nullptr && strcmp(e, "sync") == 0)
            path = 1;
        else if (e != nullptr && strcmp(e, "wgmma") == 0)
            path = 2;
        else if (e != nullptr && *e != '\0' && strcmp(e, "auto") != 0)
            return mf_set_error(MF_ERR_INVALID_ARGUMENT, __func__, __FILE__, __LINE__,
                                "%s=%s is not auto, sync or wgmma", env, e);
    }
    bool avail = false;
    if (path != 1) MF_TRY(wg_available(stream, cache, probe, &avail));
#if defined(__CUDAHOST__)
    if (path == 0) avail = false;
#endif
    if (path == 2 && !avail)
        return mf_set_error(MF_ERR_BACKEND_UNAVAILABLE, __func__, __FILE__, __LINE__,
                            "%s = wgmma needs a cc 9.0 GPU and a build with sm_90a code "
                            "(CMAKE_CUDA_ARCHITECTURES containing 90), and its first call on a device "
                            "outside CUDA-graph capture",
                            what);
    *wg = avail;
    return MF_OK;
}

} // namespace MF_NS

#endif
