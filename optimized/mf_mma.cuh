// Tensor-core helpers shared by the mma.sync kernels (optimized/attention_mma.cu,
// optimized/linear_attention.cu, optimized/nsa.cu, optimized/cross_entropy_fused.cu):
// ldmatrix, mma.sync m16n8k16 (bf16 in, fp32 accumulate), bf16 packing and cp.async. Each is one inline PTX instruction
// from the list host execution mode emulates (cudahost/README.md); fragment
// layouts as PTX ISA 9.7.14.5.8 (m16n8k16) and 9.7.9.25.4 (ldmatrix).
//
// Included after "mf_cuda.h" and "mf_device.cuh"; like mf_device.cuh, everything
// is inline inside namespace MF_NS, so the nvcc and host builds define no shared
// symbol.
#ifndef MEMFIX_MF_MMA_CUH
#define MEMFIX_MF_MMA_CUH

#include <cuda_bf16.h>
#include <cstddef>
#include <cstdint>

namespace MF_NS {

// The error of one k16 step on the tensor cores (mma.m16n8k16, or a wgmma's k16): D = C + the sum of 16 exact bf16
// products is off by at most kMmaK16StepErr (|c| + sum |a_k b_k|). NVIDIA states no bound. The measured hardware
// (Fasi et al., "Numerical behavior of NVIDIA tensor cores", 2021; Khattak and Mikaitis, "Accurate models of NVIDIA
// tensor cores", arXiv 2512.07004) aligns C and a block of products to the largest exponent, drops the bits shifted
// out and truncates the sum. The least precise variant, blocks of 8 products with no extra alignment bits: two
// blocks of 9 terms, each term off by less than 2^-23 of its block's largest, each block's sum truncated by less
// than 2^-23 of itself, so 20 2^-23. It also covers fp32 sums rounded to nearest in any order (16 2^-24). cudahost's
// tc_arith test holds its models (CUDAHOST_MMA_ARITH=fp32, truncate) to it.
constexpr float kMmaK16StepErr = 20.0f * 0x1p-23f;

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
// Four 8x8 b16 matrices from shared memory: lane l gives the row address of
// matrix l / 8, row l % 8. ldsm_x4_t transposes each matrix (a row-major B).
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
// c += a (16x16, row) * b (16x8, col), bf16 in, fp32 accumulate
__device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// c0 += a * (columns 0-7 of b), c1 += a * (columns 8-15): the two n8 halves of an
// x4 B fragment (b[0], b[1] and b[2], b[3], as ldmatrix.x4 loads a 16 x 16 B tile).
__device__ __forceinline__ void mma_x2(float c0[4], float c1[4], const uint32_t a[4], const uint32_t b[4])
{
    mma_bf16(c0, a, b[0], b[1]);
    mma_bf16(c1, a, b[2], b[3]);
}
// Two floats as a bf16x2 register: lo in the low half (round to nearest even).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); // .x = lo (low half)
    return (uint32_t)__bfloat16_as_ushort(v.x) | ((uint32_t)__bfloat16_as_ushort(v.y) << 16);
}
// The A fragment of one k16 step from the fp32 C fragments of two adjacent n8
// tiles (c0: columns 0-7, c1: 8-15): the accumulator layout of an m16n8 pair is
// the A layout of m16k16, so a product's result feeds the next product without
// leaving registers (FlashAttention-2's P V).
__device__ __forceinline__ void c_to_a(uint32_t a[4], const float c0[4], const float c1[4])
{
    a[0] = pack_bf16(c0[0], c0[1]);
    a[1] = pack_bf16(c0[2], c0[3]);
    a[2] = pack_bf16(c1[0], c1[1]);
    a[3] = pack_bf16(c1[2], c1[3]);
}
// 16 bytes global -> shared; src_bytes 0 zero-fills (rows beyond the matrix).
// Row reductions over the four lanes of a quad (lanes 4g..4g+3 hold one accumulator row of an m16n8 tile).
__device__ __forceinline__ float quad_max(float x)
{
    x = nan_max(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return nan_max(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
// The same with fmaxf (one FMNMX per step; drops NaN: see online_max_step).
__device__ __forceinline__ float quad_fmax(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Walk an accumulator array acc[MT][NF][4] (MT m16 tiles x NF n8 fragments, PTX C layout:
// element i of fragment f of tile mt is row g + 8 (2 mt + (i >> 1)), column 2 t + 8 f + (i & 1)
// of the warp's tile, g = lane / 4, t = lane % 4) in fragment order: fn(x, r, j) with x the
// element (a reference), r = 2 mt + (i >> 1) the lane's row slot and j = c0 + 8 f + (i & 1)
// (c0: this lane's first column, e.g. tile column + 2 t). Unrolled: r is a constant per call,
// so per-slot arrays indexed by it stay in registers.
template <int MT, int NF, typename Fn>
__device__ __forceinline__ void for_each_frag(float (&acc)[MT][NF][4], size_t c0, Fn &&fn)
{
    MF_UNROLL
    for (int mt = 0; mt < MT; ++mt) {
        MF_UNROLL
        for (int f = 0; f < NF; ++f) {
            MF_UNROLL
            for (int i = 0; i < 4; ++i) fn(acc[mt][f][i], 2 * mt + (i >> 1), c0 + (size_t)(8 * f + (i & 1)));
        }
    }
}
template <typename Acc> __device__ __forceinline__ void frags_zero(Acc &acc)
{
    for_each_frag(acc, 0, [](float &x, int, size_t) { x = 0.0f; });
}

// One online-softmax step for the two accumulator rows (r = 0: row g, r = 1: row g + 8) a lane holds:
// mx[r] is this lane's max, by fmaxf, over the new tile's raw scores (unscaled; masked keys -inf); it is
// reduced over the quad, scaled to the log2 domain and folded into the running max m[r] (of scaled scores).
// Scaling the max instead of every score gives the same m: scale_log2 > 0 and rounding is monotone, so
// round(max s * c) = max round(s * c). corr[r] = 2^(m_old - m_new) rescales the running sum and output; mu[r]
// is what softmax_p subtracts (0 while nothing is visible, m = -inf, which keeps everything at 0 and avoids
// inf - inf). corr is computed with mf_ex2_ftz (one MUFU.EX2 instead of exp2f's four instructions): corr =
// 2^(m_old - m_new) <= 1, and a flushed corr < 2^-126 drops old terms that are each under 2^-126 of the new
// max's term 1, so l and O change by under N 2^-126 relative.
// NaN: fmaxf (one FMNMX) drops a NaN score from the max where nan_max (three instructions per score) kept it.
// The row still turns NaN in the same places: the NaN score's own p = softmax_p(NaN) is NaN, so l, O and
// lse = m + log2 l are NaN (P V carries it to every column), as they were when m itself became NaN. A masked
// key is -inf before the max, NaN or not.
__device__ __forceinline__ void online_max_step(float m[2], const float mx[2], float scale_log2,
                                                float corr[2], float mu[2])
{
    MF_UNROLL
    for (int r = 0; r < 2; ++r) {
        const float mn = fmaxf(m[r], quad_fmax(mx[r]) * scale_log2);
        corr[r] = mn == -INFINITY ? 1.0f : mf_ex2_ftz(m[r] - mn);
        mu[r] = mn == -INFINITY ? 0.0f : mn;
        m[r] = mn;
    }
}
// A raw score's softmax term 2^(s scale_log2 - mu) (mu: online_max_step's), its exponent one fma: one
// rounding where scaling the score first and subtracting took two (FFMA instead of FMUL + FADD per score).
// The row's max term is 2^(s c - round(s c)), within 2^-24 |m| ln 2 relative of 1. -inf (masked) gives 0.
__device__ __forceinline__ float softmax_p(float s, float scale_log2, float mu)
{
    return mf_ex2_ftz(fmaf(s, scale_log2, -mu));
}

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, uint32_t src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
                 "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Wait until at most one group (the newest: the prefetch) is still in flight.
__device__ __forceinline__ void cp_async_wait_1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
// Wait until every cp.async of this thread has landed (committed or not).
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

} // namespace MF_NS

#endif
