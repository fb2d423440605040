// cudahost/wmma.h: the WMMA API (nvcuda::wmma, CUDA's <mma.h>) in host execution mode.
//
// Fragments: matrix_a / matrix_b / accumulator of shapes m16n16k16, m32n8k16 and m8n32k16 with __half or
// __nv_bfloat16 inputs and float or __half accumulators, and m16n16k8 with precision::tf32 inputs and float
// accumulators; num_elements as NVIDIA's header has them (16-bit A/B fragments of some shapes hold every element
// twice or four times, as the hardware's do). fill_fragment, load_matrix_sync, store_matrix_sync (row or column
// major, any ldm), mma_sync, __float_to_tf32.
//
// The mapping of a fragment's elements (frag.x[i] of each lane) to the matrix is unspecified by CUDA. Host mode
// uses: lane l's element i is the matrix element of row-major index p = (i mod d) * 32 + l, where d = rows * cols / 32
// (different from any GPU's). With CUDAHOST_WMMA_PERMUTE=1 it uses p' = (37 p + 11) mod (rows * cols) instead, so a
// kernel that relies on one mapping (reads frag.x[i] as a given row and column) fails in one of the two runs.
// Element-wise operations on frag.x[i] that do not depend on the position are correct under every mapping.
//
// load_matrix_sync and store_matrix_sync check CUDA's requirements (a 256-bit aligned pointer, ldm a multiple of 16
// bytes; a violation is reported as a fault: the block is abandoned, the launch fails) and meet the warp first (__syncwarp), as the "_sync" in their names says;
// mma_sync is a warp-collective operation: all 32 lanes must call it (a divergent or partial warp is a launch error).
#ifndef CUDAHOST_WMMA_H
#define CUDAHOST_WMMA_H

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>
#include "cudahost/source_location.h"

#include "cudahost/bits.h"
#include <type_traits>

#include "cudahost/ptx.h"

namespace cudahost {
namespace wmma_detail {
struct MmaShape {
    int m, n, k, ab, ctype, dtype, na, nb, nc;
};
bool permute();
void mma_(const MmaShape &s, void *d, const void *a, const void *b, const void *c, const char *file,
          int line);

// The row-major index, in a matrix of `size` elements (a power of two), of lane `lane`'s element i of a fragment with
// n elements.
inline int position(int size, int lane, int i, int n)
{
    (void)n;
    const int d = size / 32;
    int p = (i % d) * 32 + lane;
    if (permute()) p = (p * 37 + 11) & (size - 1);
    return p;
}
} // namespace wmma_detail
} // namespace cudahost

#ifndef CUDAHOST_WMMA_NVCUDA_DEFINED
#define CUDAHOST_WMMA_NVCUDA_DEFINED
namespace nvcuda {
namespace wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
} // namespace precision

namespace detail {
template <class T> struct storage {
    using type = T;
};
template <> struct storage<precision::tf32> {
    using type = float;
};
template <class T> constexpr int type_code()
{
    if constexpr (std::is_same_v<T, __half>)
        return cudahost::ptx::t_f16;
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return cudahost::ptx::t_bf16;
    else if constexpr (std::is_same_v<T, precision::tf32>)
        return cudahost::ptx::t_tf32;
    else
        return cudahost::ptx::t_f32;
}
template <class Use, int M, int N, int K> constexpr int rows()
{
    return std::is_same_v<Use, matrix_b> ? K : M;
}
template <class Use, int M, int N, int K> constexpr int cols()
{
    return std::is_same_v<Use, matrix_a> ? K : N;
}
template <class Use, int M, int N, int K, class T> constexpr bool supported()
{
    constexpr bool shape16 =
        (M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16);
    if constexpr (std::is_same_v<Use, accumulator>)
        return (shape16 && (std::is_same_v<T, float> || std::is_same_v<T, __half>)) ||
               (M == 16 && N == 16 && K == 8 && std::is_same_v<T, float>);
    else
        return (shape16 && (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>)) ||
               (M == 16 && N == 16 && K == 8 && std::is_same_v<T, precision::tf32>);
}
// NVIDIA's num_elements (crt/mma.h): 8 for accumulators, 16 for __half inputs, 4 for tf32, the distinct count for
// bf16 inputs.
template <class Use, int M, int N, int K, class T> constexpr int elements()
{
    if constexpr (std::is_same_v<Use, accumulator>)
        return 8;
    else if constexpr (std::is_same_v<T, __half>)
        return 16;
    else if constexpr (std::is_same_v<T, precision::tf32>)
        return 4;
    else
        return rows<Use, M, N, K>() * cols<Use, M, N, K>() / 32;
}
} // namespace detail

template <class T, int size> struct alignas(8) __frag_base {
    enum { num_elements = size };
    enum { num_storage_elements = size };
    typedef T element_type;
    typedef typename detail::storage<T>::type storage_element_type;
    storage_element_type x[size];
};

template <class Use, int m, int n, int k, class T, class Layout = void>
class fragment : public __frag_base<T, detail::elements<Use, m, n, k, T>()> {
    static_assert(
        detail::supported<Use, m, n, k, T>(),
        "cudahost: this WMMA fragment (shape and element type) is not emulated in host execution mode "
        "(see cudahost/README.md)");

  public:
    using cudahost_use = Use;
    using cudahost_type = T;
    using cudahost_layout = Layout;
    static constexpr int cudahost_m = m, cudahost_n = n, cudahost_k = k;
    static constexpr int cudahost_rows = detail::rows<Use, m, n, k>();
    static constexpr int cudahost_cols = detail::cols<Use, m, n, k>();
};

template <class Use, int m, int n, int k, class T, class L, class V>
inline void fill_fragment(fragment<Use, m, n, k, T, L> &f, const V &v)
{
    using S = typename fragment<Use, m, n, k, T, L>::storage_element_type;
    const S s = static_cast<S>(v);
    for (int i = 0; i < f.num_elements; i++) f.x[i] = s;
}

inline float __float_to_tf32(float in)
{
    uint32_t u = cudahost::bit_cast<uint32_t>(in);
    if ((u & 0x7f800000u) !=
        0x7f800000u) { // finite: round to nearest (ties away from zero), 10 mantissa bits
        u += 0x1000u;
        u &= 0xffffe000u;
    }
    return cudahost::bit_cast<float>(u);
}

namespace detail {
// CUDA's requirements for load/store_matrix_sync: a 256-bit aligned pointer, ldm a multiple of 16 bytes.
template <class P>
inline void check_memory(const P *p, unsigned ldm, const char *what, const cudahost::source_location &loc)
{
    if ((uintptr_t)p % 32 != 0)
        cudahost::ptx::fault_(loc.file_name(), (int)loc.line(), what,
                              "the pointer is not 256-bit (32-byte) aligned");
    if ((ldm * sizeof(P)) % 16 != 0)
        cudahost::ptx::fault_(loc.file_name(), (int)loc.line(), what,
                              "ldm is not a multiple of 16 bytes (8 16-bit or 4 32-bit elements)");
}
template <class F, class P> inline void load(F &f, const P *p, unsigned ldm, bool row_major_mem)
{
    constexpr int R = F::cudahost_rows, C = F::cudahost_cols;
    const int lane = (int)cudahost::ptx::laneid();
    for (int i = 0; i < F::num_elements; i++) {
        int pos = cudahost::wmma_detail::position(R * C, lane, i, F::num_elements);
        int r = pos / C, c = pos % C;
        f.x[i] = p[row_major_mem ? (size_t)r * ldm + (size_t)c : (size_t)c * ldm + (size_t)r];
    }
}
} // namespace detail

template <class Use, int m, int n, int k, class T, class L, class P>
requires(!std::is_same_v<Use, accumulator>) inline void load_matrix_sync(
    fragment<Use, m, n, k, T, L> &f, const P *p, unsigned ldm,
    cudahost::source_location loc = cudahost::source_location::current())
{
    static_assert(std::is_same_v<L, row_major> || std::is_same_v<L, col_major>,
                  "load_matrix_sync: a matrix_a/matrix_b fragment needs a row_major or col_major layout");
    detail::check_memory(p, ldm, "nvcuda::wmma::load_matrix_sync", loc);
    __syncwarp();
    detail::load(f, p, ldm, std::is_same_v<L, row_major>);
}
template <int m, int n, int k, class T, class P>
inline void load_matrix_sync(fragment<accumulator, m, n, k, T> &f, const P *p, unsigned ldm, layout_t layout,
                             cudahost::source_location loc = cudahost::source_location::current())
{
    detail::check_memory(p, ldm, "nvcuda::wmma::load_matrix_sync", loc);
    __syncwarp();
    detail::load(f, p, ldm, layout == mem_row_major);
}
template <int m, int n, int k, class T, class P>
inline void store_matrix_sync(P *p, const fragment<accumulator, m, n, k, T> &f, unsigned ldm, layout_t layout,
                              cudahost::source_location loc = cudahost::source_location::current())
{
    using F = fragment<accumulator, m, n, k, T>;
    constexpr int R = F::cudahost_rows, C = F::cudahost_cols;
    detail::check_memory(p, ldm, "nvcuda::wmma::store_matrix_sync", loc);
    __syncwarp();
    const int lane = (int)cudahost::ptx::laneid();
    for (int i = 0; i < F::num_elements; i++) {
        int pos = cudahost::wmma_detail::position(R * C, lane, i, F::num_elements);
        int r = pos / C, c = pos % C;
        p[layout == mem_row_major ? (size_t)r * ldm + (size_t)c : (size_t)c * ldm + (size_t)r] = f.x[i];
    }
}

template <int m, int n, int k, class TD, class TAB, class LA, class LB, class TC>
inline void mma_sync(fragment<accumulator, m, n, k, TD> &d, const fragment<matrix_a, m, n, k, TAB, LA> &a,
                     const fragment<matrix_b, m, n, k, TAB, LB> &b,
                     const fragment<accumulator, m, n, k, TC> &c, bool satf = false,
                     cudahost::source_location loc = cudahost::source_location::current())
{
    (void)satf;
    using FA = fragment<matrix_a, m, n, k, TAB, LA>;
    using FB = fragment<matrix_b, m, n, k, TAB, LB>;
    const cudahost::wmma_detail::MmaShape s{ m,
                                             n,
                                             k,
                                             detail::type_code<TAB>(),
                                             detail::type_code<TC>(),
                                             detail::type_code<TD>(),
                                             FA::num_elements,
                                             FB::num_elements,
                                             8 };
    cudahost::wmma_detail::mma_(s, d.x, a.x, b.x, c.x, loc.file_name(), (int)loc.line());
}

} // namespace wmma
} // namespace nvcuda
#endif

#endif // CUDAHOST_WMMA_H
