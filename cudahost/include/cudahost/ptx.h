// cudahost/ptx.h: host-mode emulation of the inline PTX instructions that cudahost-rewrite translates (the table
// "Inline PTX" in cudahost/README.md), and of the __cvta_* address-space conversions.
//
// cudahost-rewrite turns each `asm [volatile] ("template" : outputs : inputs : clobbers);` inside a function into a
// block of C++: every operand becomes a local "register" holding its bits (constraint "r"/"f" 32 bits, "h" 16,
// "l"/"d" 64, "n" an immediate), every instruction of the template a call of the functions below, and the outputs
// are written back. An instruction outside the set is a compile-time error naming it.
//
// Warp-collective instructions (.sync.aligned: mma, ldmatrix, stmatrix, movmatrix) meet every lane of the warp once
// (cudahost::detail::warp_collective_): the last lane to arrive computes the whole warp's results in one pass. A
// divergent or partial warp is reported as a launch error naming the kernel, the block and the lane.
//
// Shared-state-space addresses (.shared operands, cvta.to.shared, __cvta_generic_to_shared) are 32-bit values, as on
// a GPU: host mode maps them to and from generic pointers through a table of 16 MiB windows (smem_encode_ /
// smem_decode_); arithmetic on them is as on a GPU within one shared array. A value that was not made by such a
// conversion is reported when used.
#ifndef CUDAHOST_PTX_H
#define CUDAHOST_PTX_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cudahost/bits.h"

namespace cudahost {
namespace detail {
// Every lane of the calling warp must call this with the same (what, file, line); the last to arrive calls
// fn(io, arg) with the 32 lanes' io pointers (index = lane), then every lane returns.
void warp_collective_(const char *what, const char *file, int line, void *io,
                      void (*fn)(void *const *io, void *arg), void *arg);
// The same for the 128 threads of a warpgroup (warps 4g..4g+3; wgmma.*): io has 128 entries (thread index % 128).
void warpgroup_collective_(const char *what, const char *file, int line, void *io,
                           void (*fn)(void *const *io, void *arg), void *arg);
void **thread_ext_();    // a per-CUDA-thread pointer slot (kept across blocks)
void **warpgroup_ext_(); // a per-warpgroup pointer slot of the running block's worker (kept across blocks)
void dyn_smem_range_(void **base, size_t *size); // the running block's dynamic shared memory
unsigned thread_linear_();                       // the calling thread's linear index in its block
unsigned long block_serial_();                   // changes with every block a worker runs
} // namespace detail

namespace ptx {

// ---- shared-state-space addresses --------------------------------------------------------------------------------
uint32_t smem_encode_(const void *p);
void *smem_decode_(uint64_t a, const char *file, int line);

// ---- register bits -----------------------------------------------------------------------------------------------
// An asm operand's value as the bits of a PTX register of type R (uint16_t, uint32_t or uint64_t).
template <class R, class T> inline R bits(const T &v)
{
    if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
        return (R)v;
    } else if constexpr (std::is_pointer_v<T>) {
        return (R)(uintptr_t)v;
    } else {
        R r = 0;
        std::memcpy((void *)&r, (const void *)&v, sizeof(T) < sizeof(R) ? sizeof(T) : sizeof(R));
        return r;
    }
}
// Writes a register's bits back to an output operand.
template <class T, class R> inline void set(T &dst, R b)
{
    if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
        dst = (T)b;
    } else if constexpr (std::is_pointer_v<T>) {
        dst = (T)(uintptr_t)b;
    } else {
        std::memcpy((void *)&dst, (const void *)&b, sizeof(T) < sizeof(R) ? sizeof(T) : sizeof(R));
    }
}

// ---- warp-level matrix instructions ------------------------------------------------------------------------------
enum mma_type : int { t_f16 = 0, t_bf16, t_tf32, t_f32 };
// mma.sync.aligned.m16n8k{4,8,16}.row.col.<dtype>.<ab>.<ab>.<ctype>: d, a, b, c as the PTX ISA's register vectors
// (f32 accumulators: 4 registers; f16: 2 .f16x2 registers).
void mma_sync_(const char *what, const char *file, int line, int k, int ab, int ctype, int dtype, uint32_t *d,
               const uint32_t *a, const uint32_t *b, const uint32_t *c);
// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 r, [addr]
void ldmatrix_(const char *what, const char *file, int line, int num, bool trans, uint32_t *r, uint64_t addr);
// stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 [addr], r
void stmatrix_(const char *what, const char *file, int line, int num, bool trans, const uint32_t *r,
               uint64_t addr);
// movmatrix.sync.aligned.m8n8.trans.b16 d, a
uint32_t movmatrix_(const char *what, const char *file, int line, uint32_t a);

// ---- asynchronous copies -----------------------------------------------------------------------------------------
// cp.async.{ca,cg}.shared.global [dst], [src], cp_size[, src_size]: the source is read when the instruction runs, the
// destination is written when a cp.async.wait_group / wait_all covering its group runs (so reading it before the
// wait shows the garbage that was there).
void cp_async_(const char *file, int line, uint64_t dst, uint64_t src, int cp_size, int src_size);
void cp_async_commit_();
void cp_async_wait_(int n); // cp.async.wait_group n (all but the n most recent committed groups are complete)
void cp_async_wait_all_();  // cp.async.wait_all (commit, then wait_group 0)

// ---- warpgroup-level matrix instructions (sm_90a; src/wgmma.cpp) --------------------------------------------------
// wgmma.fence / commit_group / wait_group N (.sync.aligned): warpgroup-collective.
void wgmma_fence_(const char *what, const char *file, int line);
void wgmma_commit_(const char *what, const char *file, int line);
void wgmma_wait_(const char *what, const char *file, int line, int n);
// wgmma.mma_async.sync.aligned.m64n<n>k16.<dtype>.<ab>.<ab>: warpgroup-collective, asynchronous. a_regs: the 4
// registers of A (A from registers) or nullptr (A from a_desc); nd accumulator registers per thread: their
// addresses (the result is written there by the wgmma.wait_group that covers the operation) and their values now.
void wgmma_mma_async_(const char *what, const char *file, int line, int n, int dtype, int ab,
                      const uint32_t *a_regs, uint64_t a_desc, uint64_t b_desc, int scale_d, int scale_a,
                      int scale_b, int trans_a, int trans_b, int nd, void *const *d_addr,
                      const uint32_t *d_val);

// ---- the few scalar instructions that the idioms around them need ------------------------------------------------
inline uint32_t laneid() { return detail::thread_linear_() & 31u; }
inline uint32_t warpid() { return detail::thread_linear_() >> 5; }
void bar_sync_(); // bar.sync 0 / barrier.sync 0 (= __syncthreads)

// ex2.approx[.ftz].f32 d, a (PTX ISA 9.7.3.21): d = 2^a on the bits of .f32 registers. Special cases as the ISA's
// table: -Inf -> +0, +-0 -> 1, +Inf -> +Inf, NaN -> NaN. Subnormals are kept without .ftz; with .ftz a subnormal a
// is flushed to a zero of its sign first (so 2^a = 1) and a subnormal result to +0 (2^a is never negative).
// Accuracy: the ISA allows 2 ulp from the correctly rounded result on a GPU; host mode computes 2^a in double
// (exp2 is exact at integers, within 1 double ulp elsewhere) and rounds once to float, i.e. within 0.5 ulp plus
// about 2^-29 ulp of 2^a: at least as accurate, so a kernel may come out slightly differently on a GPU.
inline uint32_t ex2_approx_f32_(uint32_t a_bits, bool ftz)
{
    float a = cudahost::bit_cast<float>(a_bits);
    if (ftz && std::fpclassify(a) == FP_SUBNORMAL) a = std::copysign(0.0f, a);
    float d = (float)std::exp2((double)a);
    if (ftz && std::fpclassify(d) == FP_SUBNORMAL) d = 0.0f;
    return cudahost::bit_cast<uint32_t>(d);
}
// Named barriers (src/engine_sync.cpp): bar{.cta}.sync a{, b}, bar{.cta}.arrive a, b, barrier{.cta}.sync{.aligned} a{, b},
// barrier{.cta}.arrive{.aligned} a, b. Barrier a (0..15) completes when b threads (a multiple of 32; has_b 0: the
// whole block) have arrived, counted per warp; sync waits for the completion, arrive does not. Barrier 0 without b
// is __syncthreads. Misuse (a, b out of range, a count that differs within a phase, a warp arriving twice in one
// phase, an .aligned form in a diverged or partly exited warp) is reported as a fault.
void bar_named_(const char *what, const char *file, int line, int sync, int aligned, uint32_t a, int has_b,
                uint32_t b);

// Reports an unusable operand of an emulated instruction (misaligned or not a shared address, ...) as a GPU would
// fault: the block is abandoned, the launch fails with cudaErrorLaunchFailure.
[[noreturn]] void fault_(const char *file, int line, const char *what, const char *why);

} // namespace ptx
} // namespace cudahost

// ---- address-space conversions (sm_20_intrinsics.h declares them only for nvcc) -------------------------------------
inline size_t __cvta_generic_to_shared(const void *p) { return cudahost::ptx::smem_encode_(p); }
inline void *__cvta_shared_to_generic(size_t a)
{
    return cudahost::ptx::smem_decode_(a, "__cvta_shared_to_generic", 0);
}
inline size_t __cvta_generic_to_global(const void *p) { return (size_t)(uintptr_t)p; }
inline void *__cvta_global_to_generic(size_t a) { return (void *)(uintptr_t)a; }

#endif // CUDAHOST_PTX_H
