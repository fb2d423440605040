// Host-mode emulation of the sm_90a warpgroup-level matrix instructions (see cudahost/ptx.h and the "Inline PTX"
// table of cudahost/README.md): wgmma.fence, wgmma.commit_group, wgmma.wait_group and
// wgmma.mma_async.m64nNk16 with .f16/.bf16 inputs. Facts from NVIDIA's PTX ISA, section 9.7.15 "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate Instructions":
//
// * A warpgroup is 4 consecutive warps whose first warp index is a multiple of 4 (threads 128g .. 128g+127). Every
//   wgmma instruction is .sync.aligned: all 128 threads execute the same instruction, converged. Host mode meets
//   the 128 threads once per instruction (detail::warpgroup_collective_): a partial warpgroup, an exited thread or
//   threads waiting at another instruction are reported and fail the launch.
// * wgmma.mma_async is asynchronous: it is queued in the warpgroup's current wgmma-group; wgmma.commit_group closes
//   the group; wgmma.wait_group N waits until at most N committed groups are pending. Host mode computes each
//   product at the wait_group that covers it, reading shared memory then (the spec forbids modifying the shared
//   operands, and accessing the accumulators, before that wait), and writes the accumulators there. Until then the
//   accumulator registers hold NaN (written when the mma_async statement ends), so a kernel that reads them before
//   the wait computes with NaN. Operations never covered by a wait are dropped at the end of the block.
//   wgmma.mma_async operations that accumulate into the same registers as a pending one (a chain in one group, as
//   the spec allows without a fence) take that one's result as their input C.
// * D (m64nN, f32: N/2 registers per thread; f16: N/4 .f16x2 registers): warp w of the warpgroup owns rows
//   16w..16w+15; within them, each n8 column block j repeats the mma.m16n8 accumulator pattern: with g = lane/4,
//   q = lane%4, f32 element i (register i; for f16, half i%2 of register i/2) is row 16w + g + 8((i%4)/2), column
//   8(i/4) + 2q + i%2.
// * A from registers (m64k16, 4 .f16x2/.bf16x2 registers): warp w's rows 16w.., in the mma.m16n8k16 A pattern.
// * Matrix descriptor (64 bits): bits 0-13 start address >> 4 (of the shared address & 0x3ffff), 16-29 leading
//   dimension byte offset (LBO) >> 4, 32-45 stride dimension byte offset (SBO) >> 4, 49-51 base offset, 62-63
//   swizzle mode (0 none, 1 128B, 2 64B, 3 32B).
// * Shared-memory layouts (imm-trans 0: K-major, 1: MN-major), with 16-byte core-matrix rows, for 16-bit elements
//   at (mn, k) of the MN x 16 operand (W = the swizzle width in bytes, E = W/2 elements):
//     K-major,  no swizzle: (mn%8)*16 + (mn/8)*SBO + (k%8)*2 + (k/8)*LBO
//     K-major,  swizzled:   (mn%8)*W  + (mn/8)*SBO + k*2                       (LBO unused)
//     MN-major, no swizzle: (mn%8)*2  + (mn/8)*SBO + (k%8)*16 + (k/8)*LBO
//     MN-major, swizzled:   (mn%E)*2  + (mn/E)*LBO + (k%8)*W  + (k/8)*SBO
//   added to the start address; a swizzled mode then XORs address bits 4..6 (128B), 4..5 (64B) or 4 (32B) with bits
//   7..9 / 7..8 / 7 of the same address (the repeating pattern is 1024/512/256 bytes; base offset 0).
//
// Not emulated (reported as a fault when used): a non-zero base offset; operands outside the block's dynamic shared
// memory (descriptors must address `extern __shared__` memory: host mode maps the descriptor's 18-bit address
// through it); descriptors, scale-d or immediates that differ between the threads of the warpgroup.
#include "internal.h"
#include "cudahost/ptx.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace cudahost {
namespace ptx {
namespace {

inline float h2f(uint16_t h, int type)
{
    if (type == t_bf16) return cudahost::bit_cast<float>((uint32_t)h << 16);
    return __half2float(cudahost::bit_cast<__half>(h));
}
inline uint16_t f2h(float f) { return cudahost::bit_cast<uint16_t>(__float2half_rn(f)); }

struct WgOp {
    const char *what, *file;
    int line;
    int n, dtype, ab, nd;
    bool a_reg;
    uint64_t a_desc, b_desc;
    int scale_d, scale_a, scale_b, trans_a, trans_b;
    uint32_t group;             // 0: the open group
    std::vector<uint32_t> a;    // A from registers: 128 x 4
    std::vector<void *> addr;   // 128 x nd accumulator addresses
    std::vector<uint32_t> cval; // 128 x nd input values
    std::vector<char> chained;  // 128 x nd: the input is the pending result at that address
};
struct WgState {
    unsigned long serial = 0;
    bool fenced = false;
    uint32_t committed = 0;
    std::vector<WgOp> q;
};
WgState &wg_state()
{
    void **slot = detail::warpgroup_ext_();
    if (!*slot) *slot = new WgState; // one per warpgroup slot of a worker, kept for the life of the process
    WgState &s = *static_cast<WgState *>(*slot);
    unsigned long serial = detail::block_serial_();
    if (s.serial != serial) {
        s.serial = serial;
        s.fenced = false;
        s.committed = 0;
        s.q.clear();
    }
    return s;
}

// (row, column) of f32 accumulator element i of thread t of the warpgroup
inline void d_pos(int t, int i, int &row, int &col)
{
    const int w = t >> 5, l = t & 31, g = l >> 2, q = l & 3, r = i & 3;
    row = 16 * w + g + 8 * (r >> 1);
    col = 8 * (i >> 2) + 2 * q + (r & 1);
}

// An operand in shared memory through its descriptor: the host address of each element.
struct SmemOperand {
    unsigned char *start, *lo, *hi;
    uint32_t lbo, sbo;
    int mode; // 0 none, else the swizzle width in bytes
    bool mn_major;
    const char *what, *file;
    int line;
    unsigned char *at(int mn, int k) const
    {
        size_t off;
        if (!mn_major) {
            off = mode == 0 ? (size_t)(mn % 8) * 16 + (size_t)(mn / 8) * sbo + (size_t)(k % 8) * 2 +
                                  (size_t)(k / 8) * lbo
                            : (size_t)(mn % 8) * (size_t)mode + (size_t)(mn / 8) * sbo + (size_t)k * 2;
        } else if (mode == 0) {
            off =
                (size_t)(mn % 8) * 2 + (size_t)(mn / 8) * sbo + (size_t)(k % 8) * 16 + (size_t)(k / 8) * lbo;
        } else {
            const int e = mode / 2;
            off = (size_t)(mn % e) * 2 + (size_t)(mn / e) * lbo + (size_t)(k % 8) * (size_t)mode +
                  (size_t)(k / 8) * sbo;
        }
        uintptr_t a = (uintptr_t)start + off;
        if (mode) {
            const uintptr_t bits = mode == 128 ? 7 : mode == 64 ? 3 : 1;
            a ^= ((a >> 7) & bits) << 4;
        }
        auto *p = reinterpret_cast<unsigned char *>(a);
        if (p < lo || p + 2 > hi) {
            char why[200];
            std::snprintf(why, sizeof why,
                          "the descriptor's element (%d, %d) lies outside the block's dynamic shared memory "
                          "(offset %lld of %zu bytes)",
                          mn, k, (long long)(p - lo), (size_t)(hi - lo));
            fault_(file, line, what, why);
        }
        return p;
    }
};

SmemOperand decode(const WgOp &op, uint64_t desc, bool mn_major, const char *which)
{
    void *base;
    size_t size;
    detail::dyn_smem_range_(&base, &size);
    char why[260];
    if ((desc >> 49) & 7) {
        std::snprintf(
            why, sizeof why,
            "the %s descriptor's base offset is %d: only base offset 0 is emulated (swizzle patterns "
            "starting at their 1024/512/256-byte boundary)",
            which, (int)((desc >> 49) & 7));
        fault_(op.file, op.line, op.what, why);
    }
    if (!base || size == 0) {
        std::snprintf(
            why, sizeof why,
            "the %s descriptor addresses shared memory, but the launch has no dynamic shared memory "
            "(host mode maps wgmma descriptors through the block's extern __shared__ memory only)",
            which);
        fault_(op.file, op.line, op.what, why);
    }
    const uintptr_t b = (uintptr_t)base;
    const uintptr_t start18 = (uintptr_t)(desc & 0x3fff) << 4;
    SmemOperand s;
    s.lo = static_cast<unsigned char *>(base);
    s.hi = s.lo + size;
    s.start = s.lo + ((start18 - b) & 0x3ffff);
    if (s.start >= s.hi) {
        std::snprintf(why, sizeof why,
                      "the %s descriptor's start address (0x%05llx) is not inside the block's dynamic shared "
                      "memory (host mode maps wgmma descriptors through extern __shared__ memory only)",
                      which, (unsigned long long)start18);
        fault_(op.file, op.line, op.what, why);
    }
    s.lbo = (uint32_t)((desc >> 16) & 0x3fff) << 4;
    s.sbo = (uint32_t)((desc >> 32) & 0x3fff) << 4;
    const int m = (int)(desc >> 62);
    s.mode = m == 0 ? 0 : m == 1 ? 128 : m == 2 ? 64 : 32;
    s.mn_major = mn_major;
    s.what = op.what;
    s.file = op.file;
    s.line = op.line;
    return s;
}

void execute(WgOp &op)
{
    const int N = op.n;
    static thread_local float A[64][16], B[16][256], C[64][256];
    if (op.a_reg) {
        for (int t = 0; t < 128; t++) {
            const int w = t >> 5, l = t & 31, g = l >> 2, q = l & 3;
            for (int e = 0; e < 8; e++) {
                const uint32_t reg = op.a[(size_t)t * 4 + (size_t)(e >> 1)];
                const int row = 16 * w + g + 8 * ((e >> 1) & 1), col = 2 * q + (e & 1) + 8 * (e >> 2);
                A[row][col] = h2f((uint16_t)(e & 1 ? reg >> 16 : reg), op.ab);
            }
        }
    } else {
        SmemOperand s = decode(op, op.a_desc, op.trans_a != 0, "A");
        for (int m = 0; m < 64; m++)
            for (int k = 0; k < 16; k++) {
                uint16_t h;
                std::memcpy(&h, s.at(m, k), 2);
                A[m][k] = h2f(h, op.ab);
            }
    }
    {
        SmemOperand s = decode(op, op.b_desc, op.trans_b != 0, "B");
        for (int n = 0; n < N; n++)
            for (int k = 0; k < 16; k++) {
                uint16_t h;
                std::memcpy(&h, s.at(n, k), 2);
                B[k][n] = h2f(h, op.ab);
            }
    }
    if (op.scale_a < 0)
        for (auto &r : A)
            for (float &v : r) v = -v;
    if (op.scale_b < 0)
        for (int k = 0; k < 16; k++)
            for (int n = 0; n < N; n++) B[k][n] = -B[k][n];
    // the input accumulators
    const int per = op.dtype == t_f32 ? 1 : 2; // f32 elements per register
    for (int t = 0; t < 128; t++)
        for (int i = 0; i < op.nd; i++) {
            const size_t j = (size_t)t * (size_t)op.nd + (size_t)i;
            uint32_t v = op.cval[j];
            if (op.chained[j]) std::memcpy(&v, op.addr[j], 4);
            for (int h = 0; h < per; h++) {
                int row, col;
                d_pos(t, i * per + h, row, col);
                const float f = op.dtype == t_f32 ? cudahost::bit_cast<float>(v)
                                                  : h2f((uint16_t)(h ? v >> 16 : v), t_f16);
                C[row][col] = op.scale_d ? f : 0.f;
            }
        }
    // D = A B + C: products exact in fp32, summed in fp32 in k order, then C added (or the truncating model)
    if (internal::tensor_core_arith().truncate) {
        for (int m = 0; m < 64; m++)
            for (int n = 0; n < N; n++)
                C[m][n] = internal::tc_dot_truncate(A[m], 1, &B[0][n], 256, 16, C[m][n], false);
    } else {
        for (int m = 0; m < 64; m++) {
            float acc[256];
            for (int n = 0; n < N; n++) acc[n] = 0.f;
            for (int k = 0; k < 16; k++) {
                const float a = A[m][k];
                for (int n = 0; n < N; n++) acc[n] += a * B[k][n];
            }
            for (int n = 0; n < N; n++) C[m][n] += acc[n];
        }
    }
    for (int t = 0; t < 128; t++)
        for (int i = 0; i < op.nd; i++) {
            uint32_t v = 0;
            for (int h = 0; h < per; h++) {
                int row, col;
                d_pos(t, i * per + h, row, col);
                if (op.dtype == t_f32)
                    v = cudahost::bit_cast<uint32_t>(C[row][col]);
                else
                    v |= (uint32_t)f2h(C[row][col]) << (16 * h);
            }
            std::memcpy(op.addr[(size_t)t * (size_t)op.nd + (size_t)i], &v, 4);
        }
}

// ---- the collective steps ----------------------------------------------------------------------------------------
struct MmaIo {
    const uint32_t *a_regs;
    uint64_t a_desc, b_desc;
    int scale_d, scale_a, scale_b, trans_a, trans_b;
    void *const *d_addr;
    const uint32_t *d_val;
};
struct MmaArg {
    const char *what, *file;
    int line, n, dtype, ab, nd;
};

void mma_fn(void *const *io, void *argp)
{
    const MmaArg &arg = *static_cast<const MmaArg *>(argp);
    WgState &s = wg_state();
    const MmaIo &x0 = *static_cast<const MmaIo *>(io[0]);
    if (!s.fenced)
        fault_(arg.file, arg.line, arg.what,
               "no wgmma.fence.sync.aligned was executed by the warpgroup before its first wgmma.mma_async "
               "(the PTX "
               "ISA requires one, and one between register accesses and a wgmma.mma_async using those "
               "registers)");
    if ((x0.scale_a != 1 && x0.scale_a != -1) || (x0.scale_b != 1 && x0.scale_b != -1))
        fault_(arg.file, arg.line, arg.what, "imm-scale-a and imm-scale-b must be 1 or -1");
    if ((x0.trans_a != 0 && x0.trans_a != 1) || (x0.trans_b != 0 && x0.trans_b != 1))
        fault_(arg.file, arg.line, arg.what, "imm-trans-a and imm-trans-b must be 0 or 1");
    for (int t = 1; t < 128; t++) {
        const MmaIo &x = *static_cast<const MmaIo *>(io[t]);
        if ((!x0.a_regs && x.a_desc != x0.a_desc) || x.b_desc != x0.b_desc ||
            (x.scale_d != 0) != (x0.scale_d != 0) || x.scale_a != x0.scale_a || x.scale_b != x0.scale_b ||
            x.trans_a != x0.trans_a || x.trans_b != x0.trans_b)
            fault_(arg.file, arg.line, arg.what,
                   "the descriptors, scale-d or immediate operands differ between the threads of the "
                   "warpgroup (host "
                   "mode needs them uniform)");
    }
    WgOp op;
    op.what = arg.what;
    op.file = arg.file;
    op.line = arg.line;
    op.n = arg.n;
    op.dtype = arg.dtype;
    op.ab = arg.ab;
    op.nd = arg.nd;
    op.a_reg = x0.a_regs != nullptr;
    op.a_desc = x0.a_desc;
    op.b_desc = x0.b_desc;
    op.scale_d = x0.scale_d != 0;
    op.scale_a = x0.scale_a;
    op.scale_b = x0.scale_b;
    op.trans_a = x0.trans_a;
    op.trans_b = x0.trans_b;
    op.group = 0;
    if (op.a_reg) {
        op.a.resize(128 * 4);
        for (int t = 0; t < 128; t++)
            std::memcpy(&op.a[(size_t)t * 4], static_cast<const MmaIo *>(io[t])->a_regs, 16);
    }
    const size_t total = (size_t)128 * (size_t)arg.nd;
    op.addr.resize(total);
    op.cval.resize(total);
    op.chained.assign(total, 0);
    for (int t = 0; t < 128; t++) {
        const MmaIo &x = *static_cast<const MmaIo *>(io[t]);
        for (int i = 0; i < arg.nd; i++) {
            const size_t j = (size_t)t * (size_t)arg.nd + (size_t)i;
            op.addr[j] = x.d_addr[i];
            op.cval[j] = x.d_val[i];
            if (op.scale_d)
                for (size_t p = s.q.size(); p-- > 0;)
                    if (s.q[p].nd == arg.nd && s.q[p].addr[j] == op.addr[j]) {
                        op.chained[j] = 1;
                        break;
                    }
        }
    }
    s.q.push_back(std::move(op));
}

struct SimpleArg {
    int kind; // 0 fence, 1 commit, 2 wait
    int n;
    const char *what, *file;
    int line;
};
void simple_fn(void *const *io, void *argp)
{
    (void)io;
    const SimpleArg &arg = *static_cast<const SimpleArg *>(argp);
    WgState &s = wg_state();
    if (arg.kind == 0) {
        s.fenced = true;
    } else if (arg.kind == 1) {
        ++s.committed;
        for (WgOp &op : s.q)
            if (op.group == 0) op.group = s.committed;
    } else {
        if (arg.n < 0 || arg.n > 7) fault_(arg.file, arg.line, arg.what, "wgmma.wait_group takes N in 0..7");
        if ((uint32_t)arg.n >= s.committed) return;
        const uint32_t upto = s.committed - (uint32_t)arg.n;
        size_t keep = 0;
        for (size_t i = 0; i < s.q.size(); i++) {
            if (s.q[i].group != 0 && s.q[i].group <= upto)
                execute(s.q[i]);
            else
                s.q[keep++] = std::move(s.q[i]);
        }
        s.q.resize(keep);
    }
}
void simple(int kind, int n, const char *what, const char *file, int line)
{
    SimpleArg arg{ kind, n, what, file, line };
    int dummy = 0;
    detail::warpgroup_collective_(what, file, line, &dummy, &simple_fn, &arg);
}
} // namespace

void wgmma_fence_(const char *what, const char *file, int line) { simple(0, 0, what, file, line); }
void wgmma_commit_(const char *what, const char *file, int line) { simple(1, 0, what, file, line); }
void wgmma_wait_(const char *what, const char *file, int line, int n) { simple(2, n, what, file, line); }

void wgmma_mma_async_(const char *what, const char *file, int line, int n, int dtype, int ab,
                      const uint32_t *a_regs, uint64_t a_desc, uint64_t b_desc, int scale_d, int scale_a,
                      int scale_b, int trans_a, int trans_b, int nd, void *const *d_addr,
                      const uint32_t *d_val)
{
    MmaIo io{ a_regs, a_desc, b_desc, scale_d, scale_a, scale_b, trans_a, trans_b, d_addr, d_val };
    MmaArg arg{ what, file, line, n, dtype, ab, nd };
    detail::warpgroup_collective_(what, file, line, &io, &mma_fn, &arg);
}

} // namespace ptx
} // namespace cudahost
