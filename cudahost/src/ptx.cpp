// Host-mode emulation of the warp-level matrix and asynchronous-copy PTX instructions (see cudahost/ptx.h) and of
// the WMMA API's warp-wide operations (see cudahost/wmma.h). Compiled with -O2 in every build: the collective
// computations run once per warp, on the lane that arrives last.
//
// Fragment layouts follow NVIDIA's PTX ISA (version 8.x/9.x), section 9.7.14.5 "Matrix Fragments for mma.m16n8k*":
//   groupID = %laneid >> 2, threadID_in_group = %laneid % 4 (below: g and t);
//   * 9.7.14.5.8, mma.m16n8k16, .f16/.bf16 A (Figure "fragment layout for matrix A with .f16/.bf16 type"):
//       4 .f16x2 registers, elements a0..a7 (low half first);
//       row = g for a0,a1,a4,a5, g+8 for a2,a3,a6,a7; col = 2t + (i&1), +8 for a4..a7.
//     B: 2 .f16x2 registers, b0..b3: row = 2t + (i&1), +8 for b2,b3; col = g.
//   * 9.7.14.5.7, mma.m16n8k8, .f16/.bf16 A: 2 .f16x2 registers, a0..a3: row = g for a0,a1, g+8 for a2,a3;
//       col = 2t + (i&1).   B: 1 .f16x2 register, b0,b1: row = 2t + i; col = g.
//     .tf32 A: 4 .b32 registers a0..a3: row = g for a0,a2, g+8 for a1,a3; col = t for a0,a1, t+4 for a2,a3.
//       B: 2 .b32 registers b0,b1: row = t for b0, t+4 for b1; col = g.
//   * 9.7.14.5.6, mma.m16n8k4, .tf32 A: 2 .b32 registers a0,a1: row = g for a0, g+8 for a1; col = t.
//       B: 1 .b32 register b0: row = t; col = g.
//   * accumulators C/D of all three shapes (f32: 4 registers c0..c3; f16: 2 .f16x2 registers, c0..c3):
//       row = g for c0,c1, g+8 for c2,c3; col = 2t + (i&1).
// ldmatrix / stmatrix (PTX ISA 9.7.14.5.15-16, "Warp-level matrix load/store instruction"): .x1/.x2/.x4 move one,
// two or four 8x8 matrices of 16-bit elements; lanes 8j..8j+7 give the addresses of rows 0..7 of matrix j (16
// contiguous bytes, 16-byte aligned); register j of lane l holds row l/4, columns 2(l%4) and 2(l%4)+1 of matrix j
// (with .trans: the element pair of the transposed matrix, i.e. rows 2(l%4) and 2(l%4)+1 of column l/4).
// movmatrix (9.7.14.5.17): the register of lane l, in that same layout, becomes the transposed matrix's.
// cp.async (9.7.9.25): see cp_async_ below.
#include "internal.h"
#include "cudahost/ptx.h"
#include "cudahost/wmma.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace cudahost {
namespace ptx {

// ---- faults ------------------------------------------------------------------------------------------------------
void fault_(const char *file, int line, const char *what, const char *why)
{
    std::fprintf(stderr, "cudahost: %s:%d: '%s' in block (%u,%u,%u), thread (%u,%u,%u): %s\n", file, line,
                 what, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, why);
    __trap();
}

// ---- shared-state-space addresses: 16 MiB windows ----------------------------------------------------------------
// Slot s (even, >= 2) maps window w (generic address >> 24) and slot s+1 maps w+1, so that arithmetic on an encoded
// address may run past the end of its window into the next one. Slots 0 and 1 are never used: 0..0x1ffffff is not
// a valid encoded address.
namespace {
constexpr int kSlots = 256;
std::atomic<uintptr_t> g_win[kSlots]; // window index + 1; 0 = free
std::mutex &g_win_mu = *new std::mutex;
__thread int t_last_slot = -1;

int find_slot(uintptr_t w)
{
    for (int i = 2; i < kSlots; i += 2) {
        uintptr_t v = g_win[i].load(std::memory_order_acquire);
        if (v == w + 1) return i;
        if (v == 0) break;
    }
    return -1;
}
} // namespace

uint32_t smem_encode_(const void *p)
{
    const uintptr_t a = (uintptr_t)p, w = a >> 24;
    int s = t_last_slot;
    if (s < 0 || g_win[s].load(std::memory_order_relaxed) != w + 1) {
        s = find_slot(w);
        if (s < 0) {
            std::lock_guard<std::mutex> lk(g_win_mu);
            s = find_slot(w);
            if (s < 0) {
                for (int i = 2; i < kSlots; i += 2)
                    if (g_win[i].load(std::memory_order_relaxed) == 0) {
                        g_win[i + 1].store(w + 2, std::memory_order_relaxed);
                        g_win[i].store(w + 1, std::memory_order_release);
                        s = i;
                        break;
                    }
                if (s < 0) {
                    std::fprintf(
                        stderr,
                        "cudahost: too many distinct shared-memory regions converted to shared addresses\n");
                    std::abort();
                }
            }
        }
        t_last_slot = s;
    }
    return ((uint32_t)s << 24) | (uint32_t)(a & 0xffffffu);
}

void *smem_decode_(uint64_t h, const char *file, int line)
{
    uintptr_t v = 0;
    if ((h >> 32) == 0 && (h >> 24) >= 2) v = g_win[h >> 24].load(std::memory_order_acquire);
    if (v == 0) {
        char why[200];
        std::snprintf(
            why, sizeof why,
            "0x%llx is not a shared-state-space address (made by __cvta_generic_to_shared or cvta.to.shared)",
            (unsigned long long)h);
        fault_(file, line, "shared address", why);
    }
    return (void *)(((v - 1) << 24) | (uintptr_t)(h & 0xffffffu));
}

// ---- element conversions -----------------------------------------------------------------------------------------
namespace {
inline float f16_to_f(uint16_t h) { return __half2float(cudahost::bit_cast<__half>(h)); }
inline float bf16_to_f(uint16_t h) { return cudahost::bit_cast<float>((uint32_t)h << 16); }
inline uint16_t f_to_f16(float f) { return cudahost::bit_cast<uint16_t>(__float2half_rn(f)); }
inline float u2f(uint32_t u) { return cudahost::bit_cast<float>(u); }
inline uint32_t f2u(float f) { return cudahost::bit_cast<uint32_t>(f); }
// a tf32 operand: the tensor core reads the upper 19 bits (sign, exponent, 10 mantissa bits)
inline float tf32_to_f(uint32_t u) { return u2f(u & 0xffffe000u); }
inline float half_of(uint32_t reg, int hi, int type)
{
    uint16_t h = (uint16_t)(hi ? reg >> 16 : reg);
    return type == t_bf16 ? bf16_to_f(h) : f16_to_f(h);
}

struct MmaIo {
    const uint32_t *a, *b, *c;
    uint32_t *d;
};
struct MmaArg {
    int k, ab, ctype, dtype;
};

void mma_fn(void *const *io, void *argp)
{
    const MmaArg &arg = *static_cast<const MmaArg *>(argp);
    const int K = arg.k;
    float A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; l++) {
        const MmaIo &x = *static_cast<const MmaIo *>(io[l]);
        const int g = l >> 2, t = l & 3;
        if (arg.ab == t_tf32) {
            if (K == 8) {
                for (int i = 0; i < 4; i++)
                    A[(i == 0 || i == 2) ? g : g + 8][i < 2 ? t : t + 4] = tf32_to_f(x.a[i]);
                B[t][g] = tf32_to_f(x.b[0]);
                B[t + 4][g] = tf32_to_f(x.b[1]);
            } else { // k4
                A[g][t] = tf32_to_f(x.a[0]);
                A[g + 8][t] = tf32_to_f(x.a[1]);
                B[t][g] = tf32_to_f(x.b[0]);
            }
        } else if (arg.ab == t_bf16 && K == 16) { // the common case, unrolled
            A[g][2 * t] = bf16_to_f((uint16_t)x.a[0]);
            A[g][2 * t + 1] = bf16_to_f((uint16_t)(x.a[0] >> 16));
            A[g + 8][2 * t] = bf16_to_f((uint16_t)x.a[1]);
            A[g + 8][2 * t + 1] = bf16_to_f((uint16_t)(x.a[1] >> 16));
            A[g][2 * t + 8] = bf16_to_f((uint16_t)x.a[2]);
            A[g][2 * t + 9] = bf16_to_f((uint16_t)(x.a[2] >> 16));
            A[g + 8][2 * t + 8] = bf16_to_f((uint16_t)x.a[3]);
            A[g + 8][2 * t + 9] = bf16_to_f((uint16_t)(x.a[3] >> 16));
            B[2 * t][g] = bf16_to_f((uint16_t)x.b[0]);
            B[2 * t + 1][g] = bf16_to_f((uint16_t)(x.b[0] >> 16));
            B[2 * t + 8][g] = bf16_to_f((uint16_t)x.b[1]);
            B[2 * t + 9][g] = bf16_to_f((uint16_t)(x.b[1] >> 16));
        } else {
            const int na = K == 16 ? 8 : 4, nb = K == 16 ? 4 : 2;
            for (int i = 0; i < na; i++) {
                int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
                int col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
                A[row][col] = half_of(x.a[i >> 1], i & 1, arg.ab);
            }
            for (int i = 0; i < nb; i++)
                B[2 * t + (i & 1) + (i >= 2 ? 8 : 0)][g] = half_of(x.b[i >> 1], i & 1, arg.ab);
        }
        if (arg.ctype == t_f32) {
            C[g][2 * t] = u2f(x.c[0]);
            C[g][2 * t + 1] = u2f(x.c[1]);
            C[g + 8][2 * t] = u2f(x.c[2]);
            C[g + 8][2 * t + 1] = u2f(x.c[3]);
        } else {
            for (int i = 0; i < 4; i++)
                C[i < 2 ? g : g + 8][2 * t + (i & 1)] = half_of(x.c[i >> 1], i & 1, t_f16);
        }
    }
    float D[16][8];
    if (internal::tensor_core_arith().truncate) {
        for (int r = 0; r < 16; r++)
            for (int n = 0; n < 8; n++)
                D[r][n] = internal::tc_dot_truncate(A[r], 1, &B[0][n], 8, K, C[r][n], arg.ab == t_tf32);
    } else {
        for (int r = 0; r < 16; r++) {
            float acc[8] = { 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f };
            if (K == 16) {
#pragma GCC unroll 16
                for (int kk = 0; kk < 16; kk++)
#pragma GCC unroll 8
                    for (int n = 0; n < 8; n++) acc[n] += A[r][kk] * B[kk][n];
            } else {
                for (int kk = 0; kk < K; kk++)
#pragma GCC unroll 8
                    for (int n = 0; n < 8; n++) acc[n] += A[r][kk] * B[kk][n];
            }
#pragma GCC unroll 8
            for (int n = 0; n < 8; n++) D[r][n] = acc[n] + C[r][n];
        }
    }
    for (int l = 0; l < 32; l++) {
        const MmaIo &x = *static_cast<const MmaIo *>(io[l]);
        const int g = l >> 2, t = l & 3;
        if (arg.dtype == t_f32) {
            for (int i = 0; i < 4; i++) x.d[i] = f2u(D[i < 2 ? g : g + 8][2 * t + (i & 1)]);
        } else {
            for (int j = 0; j < 2; j++) {
                int row = j == 0 ? g : g + 8;
                x.d[j] = (uint32_t)f_to_f16(D[row][2 * t]) | ((uint32_t)f_to_f16(D[row][2 * t + 1]) << 16);
            }
        }
    }
}
} // namespace

void mma_sync_(const char *what, const char *file, int line, int k, int ab, int ctype, int dtype, uint32_t *d,
               const uint32_t *a, const uint32_t *b, const uint32_t *c)
{
    MmaIo io{ a, b, c, d };
    MmaArg arg{ k, ab, ctype, dtype };
    detail::warp_collective_(what, file, line, &io, &mma_fn, &arg);
}

// ---- ldmatrix / stmatrix / movmatrix -----------------------------------------------------------------------------
namespace {
struct MatIo {
    unsigned char *row; // this lane's row address (lanes 0 .. 8*num-1)
    uint32_t *r;
};
struct MatArg {
    int num;
    bool trans;
};
void ldmatrix_fn(void *const *io, void *argp)
{
    const MatArg &arg = *static_cast<const MatArg *>(argp);
    for (int m = 0; m < arg.num; m++) {
        uint16_t M[8][8];
        for (int r = 0; r < 8; r++) std::memcpy(M[r], static_cast<const MatIo *>(io[m * 8 + r])->row, 16);
        for (int l = 0; l < 32; l++) {
            const int g = l >> 2, t = l & 3;
            uint16_t lo = arg.trans ? M[2 * t][g] : M[g][2 * t],
                     hi = arg.trans ? M[2 * t + 1][g] : M[g][2 * t + 1];
            static_cast<const MatIo *>(io[l])->r[m] = (uint32_t)lo | ((uint32_t)hi << 16);
        }
    }
}
void stmatrix_fn(void *const *io, void *argp)
{
    const MatArg &arg = *static_cast<const MatArg *>(argp);
    for (int m = 0; m < arg.num; m++) {
        uint16_t M[8][8];
        for (int l = 0; l < 32; l++) {
            const int g = l >> 2, t = l & 3;
            uint32_t v = static_cast<const MatIo *>(io[l])->r[m];
            uint16_t lo = (uint16_t)v, hi = (uint16_t)(v >> 16);
            if (arg.trans) {
                M[2 * t][g] = lo;
                M[2 * t + 1][g] = hi;
            } else {
                M[g][2 * t] = lo;
                M[g][2 * t + 1] = hi;
            }
        }
        for (int r = 0; r < 8; r++) std::memcpy(static_cast<const MatIo *>(io[m * 8 + r])->row, M[r], 16);
    }
}
void movmatrix_fn(void *const *io, void *)
{
    uint16_t M[8][8];
    for (int l = 0; l < 32; l++) {
        const int g = l >> 2, t = l & 3;
        uint32_t v = *static_cast<const MatIo *>(io[l])->r;
        M[g][2 * t] = (uint16_t)v;
        M[g][2 * t + 1] = (uint16_t)(v >> 16);
    }
    for (int l = 0; l < 32; l++) {
        const int g = l >> 2, t = l & 3;
        *static_cast<const MatIo *>(io[l])->r = (uint32_t)M[2 * t][g] | ((uint32_t)M[2 * t + 1][g] << 16);
    }
}
unsigned char *row_address(const char *what, const char *file, int line, int num, uint64_t addr)
{
    if ((int)laneid() >= 8 * num) return nullptr; // this lane's address is not used
    auto *p = static_cast<unsigned char *>(smem_decode_(addr, file, line));
    if ((uintptr_t)p % 16 != 0) fault_(file, line, what, "a row address is not 16-byte aligned");
    return p;
}
} // namespace

void ldmatrix_(const char *what, const char *file, int line, int num, bool trans, uint32_t *r, uint64_t addr)
{
    MatIo io{ row_address(what, file, line, num, addr), r };
    MatArg arg{ num, trans };
    detail::warp_collective_(what, file, line, &io, &ldmatrix_fn, &arg);
}
void stmatrix_(const char *what, const char *file, int line, int num, bool trans, const uint32_t *r,
               uint64_t addr)
{
    MatIo io{ row_address(what, file, line, num, addr), const_cast<uint32_t *>(r) };
    MatArg arg{ num, trans };
    detail::warp_collective_(what, file, line, &io, &stmatrix_fn, &arg);
}
uint32_t movmatrix_(const char *what, const char *file, int line, uint32_t a)
{
    MatIo io{ nullptr, &a };
    detail::warp_collective_(what, file, line, &io, &movmatrix_fn, nullptr);
    return a;
}

// ---- cp.async ----------------------------------------------------------------------------------------------------
// PTX ISA 9.7.9.25 (cp.async, cp.async.commit_group, cp.async.wait_group / wait_all). Each CUDA thread keeps its own
// queue of copies: the source bytes are read at the cp.async (src_size bytes, the rest of cp_size zero-filled), the
// destination written when a wait covers the copy's group. Copies a thread never waits for are dropped at the end of
// the block (their destination is that block's shared memory).
namespace {
struct CpCopy {
    unsigned char *dst;
    uint32_t size;
    uint32_t group; // 0 = not committed yet
    unsigned char data[16];
};
struct CpState {
    unsigned long serial = 0;
    uint32_t committed = 0;
    std::vector<CpCopy> q;
};
CpState &cp_state()
{
    void **slot = detail::thread_ext_();
    if (!slot) {
        std::fprintf(stderr, "cudahost: cp.async used outside a kernel\n");
        std::abort();
    }
    if (!*slot) *slot = new CpState; // one per thread slot of a worker, kept for the life of the process
    CpState &s = *static_cast<CpState *>(*slot);
    unsigned long serial = detail::block_serial_();
    if (s.serial != serial) {
        s.serial = serial;
        s.committed = 0;
        s.q.clear();
    }
    return s;
}
void cp_complete(CpState &s, uint32_t upto)
{
    size_t keep = 0;
    for (size_t i = 0; i < s.q.size(); i++) {
        CpCopy &c = s.q[i];
        if (c.group != 0 && c.group <= upto)
            std::memcpy(c.dst, c.data, c.size);
        else
            s.q[keep++] = c;
    }
    s.q.resize(keep);
}
} // namespace

void cp_async_(const char *file, int line, uint64_t dst, uint64_t src, int cp_size, int src_size)
{
    static const char *what = "cp.async";
    if (cp_size != 4 && cp_size != 8 && cp_size != 16) fault_(file, line, what, "cp-size must be 4, 8 or 16");
    if (src_size < 0 || src_size > cp_size)
        fault_(file, line, what, "src-size must be between 0 and cp-size");
    auto *d = static_cast<unsigned char *>(smem_decode_(dst, file, line));
    const auto *sp = reinterpret_cast<const unsigned char *>((uintptr_t)src);
    if ((uintptr_t)d % (unsigned)cp_size != 0)
        fault_(file, line, what, "the shared destination is not aligned to cp-size");
    if ((uintptr_t)sp % (unsigned)cp_size != 0)
        fault_(file, line, what, "the global source is not aligned to cp-size");
    CpState &s = cp_state();
    CpCopy c;
    c.dst = d;
    c.size = (uint32_t)cp_size;
    c.group = 0;
    std::memset(c.data, 0, sizeof c.data);
    if (src_size > 0) std::memcpy(c.data, sp, (size_t)src_size);
    s.q.push_back(c);
}
void cp_async_commit_()
{
    CpState &s = cp_state();
    ++s.committed;
    for (CpCopy &c : s.q)
        if (c.group == 0) c.group = s.committed;
}
void cp_async_wait_(int n)
{
    CpState &s = cp_state();
    if (n < 0) n = 0;
    if ((uint32_t)n >= s.committed) return;
    cp_complete(s, s.committed - (uint32_t)n);
}
void cp_async_wait_all_()
{
    cp_async_commit_();
    cp_async_wait_(0);
}

void bar_sync_() { __syncthreads(); }

} // namespace ptx

// ---- WMMA: the warp-wide mma_sync (cudahost/wmma.h) --------------------------------------------------------------
namespace wmma_detail {
bool permute()
{
    static const bool p = [] {
        const char *s = std::getenv("CUDAHOST_WMMA_PERMUTE");
        return s && *s && std::strcmp(s, "0") != 0;
    }();
    return p;
}

namespace {
struct WmmaIo {
    const void *a, *b, *c;
    void *d;
};
inline float load_elem(const void *x, int i, int type)
{
    switch (type) {
    case ptx::t_f16: {
        __half h;
        std::memcpy((void *)&h, static_cast<const char *>(x) + 2 * i, 2);
        return __half2float(h);
    }
    case ptx::t_bf16: {
        uint16_t h;
        std::memcpy(&h, static_cast<const char *>(x) + 2 * i, 2);
        return ptx::bf16_to_f(h);
    }
    case ptx::t_tf32: {
        uint32_t u;
        std::memcpy(&u, static_cast<const char *>(x) + 4 * i, 4);
        return ptx::tf32_to_f(u);
    }
    default: {
        float f;
        std::memcpy(&f, static_cast<const char *>(x) + 4 * i, 4);
        return f;
    }
    }
}
inline void store_elem(void *x, int i, int type, float v)
{
    if (type == ptx::t_f16) {
        __half h = __float2half_rn(v);
        std::memcpy(static_cast<char *>(x) + 2 * i, (const void *)&h, 2);
    } else {
        std::memcpy(static_cast<char *>(x) + 4 * i, &v, 4);
    }
}
void wmma_fn(void *const *io, void *argp)
{
    const MmaShape &s = *static_cast<const MmaShape *>(argp);
    const int M = s.m, N = s.n, K = s.k;
    float A[32 * 16], B[16 * 32], C[32 * 32];
    // gather: lane l's element i is the fragment's logical element position(...) (row-major index)
    for (int l = 0; l < 32; l++) {
        const WmmaIo &x = *static_cast<const WmmaIo *>(io[l]);
        for (int i = 0; i < s.na; i++) A[position(M * K, l, i, s.na)] = load_elem(x.a, i, s.ab);
        for (int i = 0; i < s.nb; i++) B[position(K * N, l, i, s.nb)] = load_elem(x.b, i, s.ab);
        for (int i = 0; i < s.nc; i++) C[position(M * N, l, i, s.nc)] = load_elem(x.c, i, s.ctype);
    }
    float D[32 * 32];
    if (cudahost::internal::tensor_core_arith().truncate) {
        for (int r = 0; r < M; r++)
            for (int n = 0; n < N; n++)
                D[r * N + n] = cudahost::internal::tc_dot_truncate(&A[r * K], 1, &B[n], (size_t)N, K,
                                                                   C[r * N + n], s.ab == ptx::t_tf32);
    } else {
        for (int r = 0; r < M; r++) {
            float acc[32];
            for (int n = 0; n < N; n++) acc[n] = 0.f;
            for (int kk = 0; kk < K; kk++) {
                const float av = A[r * K + kk];
                for (int n = 0; n < N; n++) acc[n] += av * B[kk * N + n];
            }
            for (int n = 0; n < N; n++) D[r * N + n] = acc[n] + C[r * N + n];
        }
    }
    for (int l = 0; l < 32; l++) {
        const WmmaIo &x = *static_cast<const WmmaIo *>(io[l]);
        for (int i = 0; i < s.nc; i++) store_elem(x.d, i, s.dtype, D[position(M * N, l, i, s.nc)]);
    }
}
} // namespace

void mma_(const MmaShape &s, void *d, const void *a, const void *b, const void *c, const char *file, int line)
{
    WmmaIo io{ a, b, c, d };
    MmaShape arg = s;
    cudahost::detail::warp_collective_("nvcuda::wmma::mma_sync", file, line, &io, &wmma_fn, &arg);
}
} // namespace wmma_detail

} // namespace cudahost
