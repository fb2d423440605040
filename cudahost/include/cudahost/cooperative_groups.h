// cudahost/cooperative_groups.h: the block-level subset of CUDA's cooperative groups for host execution mode
// (NVIDIA's <cooperative_groups.h> declares nothing outside nvcc). Included by cudahost.h; the toolkit's sub-headers
// (<cooperative_groups/reduce.h>, scan.h, memcpy_async.h, details/...) resolve to stand-ins that include this one.
//
// Provided: this_thread_block() and this_thread_block(block_tile_memory&) (sync, thread_rank, num_threads/size,
// group_index, thread_index, group_dim, dim_threads); tiled_partition<N>(parent) for N in {1, 2, 4, 8, 16, 32}
// (sync, thread_rank, num_threads/size, meta_group_rank, meta_group_size, shfl, shfl_up, shfl_down, shfl_xor of any
// trivially copyable type, 16-byte ones such as uint4 included, any, all, ballot, match_any, match_all) and for
// N in {64, 128, 256, 512, 1024}, tiles larger than a warp (sync, ranks, sizes, shfl, any, all: what CUDA provides for
// them; block_tile_memory is accepted and not needed); cg::sync(g); cg::reduce, cg::inclusive_scan and
// cg::exclusive_scan over every tile, with cg::plus/less/greater/bit_and/bit_or/bit_xor or any callable;
// cg::memcpy_async(group, dst, src, bytes), the element-count form, cg::wait(group), cg::wait_prior<N>(group).
// Not provided: grid groups (this_grid().sync()), clusters, coalesced_threads(), dynamic tiled_partition.
#ifndef CUDAHOST_COOPERATIVE_GROUPS_H
#define CUDAHOST_COOPERATIVE_GROUPS_H

#include <cstring>
#include <type_traits>

namespace cooperative_groups {

namespace cudahost_detail {
inline unsigned linear_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

// A value of any size through 64-bit warp operations, one word after the other (op maps a word to a word).
template <class T, class Op> inline T by_words(const T &v, Op op)
{
    if constexpr (sizeof(T) <= 8) {
        return ::cudahost::detail::from_bits<T>(op(::cudahost::detail::to_bits(v)));
    } else {
        constexpr size_t n = (sizeof(T) + 7) / 8;
        unsigned long long in[n] = {}, res[n];
        std::memcpy(static_cast<void *>(in), static_cast<const void *>(&v), sizeof(T));
        for (size_t k = 0; k < n; k++) res[k] = op(in[k]);
        T r;
        std::memcpy(static_cast<void *>(&r), static_cast<const void *>(res), sizeof(T));
        return r;
    }
}
} // namespace cudahost_detail

// Scratch memory CUDA needs for tiles larger than a warp on GPUs before sm_80; host mode does not use it.
template <unsigned int MaxBlockSize = 1024> struct alignas(16) block_tile_memory {
  private:
    char unused_[16];
};
namespace experimental {
template <unsigned int TileCommunicationSize = 8, unsigned int MaxBlockSize = 1024>
struct alignas(16) block_tile_memory {
  private:
    char unused_[16];
};
} // namespace experimental

class thread_block {
  public:
    void sync() const { __syncthreads(); }
    unsigned long long thread_rank() const { return cudahost_detail::linear_tid(); }
    unsigned long long num_threads() const { return cudahost_detail::block_threads(); }
    unsigned size() const { return cudahost_detail::block_threads(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
    dim3 dim_threads() const { return group_dim(); }
};

inline thread_block this_thread_block() { return thread_block(); }
template <unsigned int MaxBlockSize> inline thread_block this_thread_block(block_tile_memory<MaxBlockSize> &)
{
    return thread_block();
}
template <unsigned int C, unsigned int MaxBlockSize>
inline thread_block this_thread_block(experimental::block_tile_memory<C, MaxBlockSize> &)
{
    return thread_block();
}

template <unsigned N, class ParentT = void> class thread_block_tile;

// Tiles of up to a warp: the warp intrinsics with the tile's mask and width.
template <unsigned N, class ParentT>
requires(N <= 32) class thread_block_tile<N, ParentT> {
    static_assert(N >= 1 && (N & (N - 1)) == 0, "tiled_partition<N>: N must be a power of 2");

  public:
    unsigned mask() const
    {
        if constexpr (N == 32) {
            return 0xffffffffu;
        } else {
            unsigned lane = cudahost_detail::linear_tid() & 31u;
            return ((1u << N) - 1u) << (lane & ~(N - 1u));
        }
    }
    void sync() const { __syncwarp(mask()); }
    unsigned thread_rank() const { return cudahost_detail::linear_tid() & (N - 1u); }
    static constexpr unsigned long long num_threads() { return N; }
    static constexpr unsigned size() { return N; }
    unsigned long long meta_group_rank() const { return cudahost_detail::linear_tid() / N; }
    unsigned long long meta_group_size() const { return (cudahost_detail::block_threads() + N - 1) / N; }
    template <class T> T shfl(T v, int src CUDAHOST_SITE_PARAMS_) const
    {
        const unsigned m = mask();
        return cudahost_detail::by_words(
            v, [&](unsigned long long w) { return __shfl_sync(m, w, src, (int)N CUDAHOST_SITE_ARGS_); });
    }
    template <class T> T shfl_up(T v, unsigned d CUDAHOST_SITE_PARAMS_) const
    {
        const unsigned m = mask();
        return cudahost_detail::by_words(
            v, [&](unsigned long long w) { return __shfl_up_sync(m, w, d, (int)N CUDAHOST_SITE_ARGS_); });
    }
    template <class T> T shfl_down(T v, unsigned d CUDAHOST_SITE_PARAMS_) const
    {
        const unsigned m = mask();
        return cudahost_detail::by_words(
            v, [&](unsigned long long w) { return __shfl_down_sync(m, w, d, (int)N CUDAHOST_SITE_ARGS_); });
    }
    template <class T> T shfl_xor(T v, int lm CUDAHOST_SITE_PARAMS_) const
    {
        const unsigned m = mask();
        return cudahost_detail::by_words(
            v, [&](unsigned long long w) { return __shfl_xor_sync(m, w, lm, (int)N CUDAHOST_SITE_ARGS_); });
    }
    int any(int p CUDAHOST_SITE_PARAMS_) const { return __any_sync(mask(), p CUDAHOST_SITE_ARGS_); }
    int all(int p CUDAHOST_SITE_PARAMS_) const { return __all_sync(mask(), p CUDAHOST_SITE_ARGS_); }
    unsigned ballot(int p CUDAHOST_SITE_PARAMS_) const
    {
        unsigned lane = cudahost_detail::linear_tid() & 31u;
        unsigned b = __ballot_sync(mask(), p CUDAHOST_SITE_ARGS_);
        return N == 32 ? b : (b >> (lane & ~(N - 1u)));
    }
    template <class T> unsigned match_any(T v CUDAHOST_SITE_PARAMS_) const
    {
        unsigned lane = cudahost_detail::linear_tid() & 31u;
        unsigned r = __match_any_sync(mask(), v CUDAHOST_SITE_ARGS_);
        return N == 32 ? r : (r >> (lane & ~(N - 1u)));
    }
    template <class T> unsigned match_all(T v, int &pred CUDAHOST_SITE_PARAMS_) const
    {
        unsigned lane = cudahost_detail::linear_tid() & 31u;
        unsigned r = __match_all_sync(mask(), v, &pred CUDAHOST_SITE_ARGS_);
        return N == 32 ? r : (r >> (lane & ~(N - 1u)));
    }
};

// Tiles larger than a warp (64 to 1024 threads): a barrier of the tile's threads and an exchange through per-thread
// slots (two sets per tile size, used alternately, so one barrier per collective suffices).
template <unsigned N, class ParentT>
requires(N > 32) class thread_block_tile<N, ParentT> {
    static_assert(N <= 1024 && (N & (N - 1)) == 0, "tiled_partition<N>: N must be a power of 2 up to 1024");
    static unsigned first() { return cudahost_detail::linear_tid() & ~(N - 1u); }
    // Every thread stores v, the tile synchronizes, then f(slot) reads the value of any rank.
    template <class T, class F> static auto gather(const T &v, F f)
    {
        static_assert(sizeof(T) <= ::cudahost::detail::kTileSlot,
                      "values exchanged in a tile are at most 64 bytes");
        const unsigned f0 = first();
        unsigned char *buf = static_cast<unsigned char *>(::cudahost::detail::tile_scratch_());
        // slots per tile size (a thread may run a 128-tile collective while its 64-tile's slots are still read), and two
        // sets per size, alternating with the tile's barrier count
        constexpr unsigned size_class = __builtin_ctz(N) - 6;
        const unsigned set = (size_class * 2u + (::cudahost::detail::group_gen_(f0, N) & 1u)) * 1024u;
        std::memcpy(
            static_cast<void *>(buf + (set + cudahost_detail::linear_tid()) * ::cudahost::detail::kTileSlot),
            static_cast<const void *>(&v), sizeof(T));
        ::cudahost::detail::group_sync_(f0, N);
        return f([&](unsigned rank) {
            T r;
            std::memcpy(static_cast<void *>(&r),
                        static_cast<const void *>(buf + (set + f0 + (rank & (N - 1u))) *
                                                            ::cudahost::detail::kTileSlot),
                        sizeof(T));
            return r;
        });
    }

  public:
    void sync() const { ::cudahost::detail::group_sync_(first(), N); }
    unsigned thread_rank() const { return cudahost_detail::linear_tid() & (N - 1u); }
    static constexpr unsigned long long num_threads() { return N; }
    static constexpr unsigned size() { return N; }
    unsigned long long meta_group_rank() const { return cudahost_detail::linear_tid() / N; }
    unsigned long long meta_group_size() const { return (cudahost_detail::block_threads() + N - 1) / N; }
    template <class T> T shfl(T v, unsigned src) const
    {
        return gather(v, [&](auto read) { return read(src); });
    }
    int any(int p) const
    {
        return gather(p != 0, [&](auto read) {
            for (unsigned r = 0; r < N; r++)
                if (read(r)) return 1;
            return 0;
        });
    }
    int all(int p) const
    {
        return gather(p != 0, [&](auto read) {
            for (unsigned r = 0; r < N; r++)
                if (!read(r)) return 0;
            return 1;
        });
    }
    // op folded over ranks [0, upto) (the collectives below)
    template <class T, class Op> T fold_(const T &v, Op op, unsigned upto) const
    {
        return gather(v, [&](auto read) {
            T acc = read(0);
            for (unsigned r = 1; r < upto; r++) acc = op(acc, read(r));
            return acc;
        });
    }
};

template <unsigned N, class Parent> inline thread_block_tile<N> tiled_partition(const Parent &)
{
    return thread_block_tile<N>();
}

template <class Group> inline void sync(const Group &g) { g.sync(); }

template <class T> struct plus {
    T operator()(const T &a, const T &b) const { return a + b; }
};
template <class T> struct less {
    T operator()(const T &a, const T &b) const { return b < a ? b : a; }
};
template <class T> struct greater {
    T operator()(const T &a, const T &b) const { return a < b ? b : a; }
};
template <class T> struct bit_and {
    T operator()(const T &a, const T &b) const { return a & b; }
};
template <class T> struct bit_or {
    T operator()(const T &a, const T &b) const { return a | b; }
};
template <class T> struct bit_xor {
    T operator()(const T &a, const T &b) const { return a ^ b; }
};

// Every thread of the tile gets op folded over the tile's values (butterfly order within a warp, rank order in larger
// tiles).
template <unsigned N, class P, class T, class Op>
inline std::remove_cvref_t<T> reduce(const thread_block_tile<N, P> &g, T &&val, Op &&op)
{
    using V = std::remove_cvref_t<T>;
    V v = val;
    if constexpr (N <= 32) {
        for (unsigned o = N / 2; o > 0; o >>= 1) v = op(v, g.shfl_xor(v, (int)o));
        return v;
    } else {
        return g.fold_(v, op, N);
    }
}

// Inclusive scan: thread r gets op(x_0, ..., x_r), in rank order.
template <unsigned N, class P, class T, class Op>
inline std::remove_cvref_t<T> inclusive_scan(const thread_block_tile<N, P> &g, T &&val, Op &&op)
{
    using V = std::remove_cvref_t<T>;
    V v = val;
    if constexpr (N <= 32) {
        const unsigned r = g.thread_rank();
        for (unsigned d = 1; d < N; d <<= 1) {
            V o = g.shfl_up(v, d);
            if (r >= d) v = op(o, v);
        }
        return v;
    } else {
        return g.fold_(v, op, g.thread_rank() + 1);
    }
}
template <unsigned N, class P, class T>
inline std::remove_cvref_t<T> inclusive_scan(const thread_block_tile<N, P> &g, T &&val)
{
    return inclusive_scan(g, std::forward<T>(val), plus<std::remove_cvref_t<T>>());
}
// Exclusive scan: thread r gets op(x_0, ..., x_{r-1}); thread 0 gets a value-initialized T (as CUDA's does).
template <unsigned N, class P, class T, class Op>
inline std::remove_cvref_t<T> exclusive_scan(const thread_block_tile<N, P> &g, T &&val, Op &&op)
{
    using V = std::remove_cvref_t<T>;
    V v = val;
    if constexpr (N <= 32) {
        V inc = inclusive_scan(g, v, op);
        V prev = g.shfl_up(inc, 1);
        return g.thread_rank() == 0 ? V{} : prev;
    } else {
        const unsigned r = g.thread_rank();
        V res = g.fold_(v, op, r == 0 ? 1u : r);
        return r == 0 ? V{} : res;
    }
}
template <unsigned N, class P, class T>
inline std::remove_cvref_t<T> exclusive_scan(const thread_block_tile<N, P> &g, T &&val)
{
    return exclusive_scan(g, std::forward<T>(val), plus<std::remove_cvref_t<T>>());
}

// memcpy_async: the group copies `count` bytes together (synchronously here); wait/wait_prior synchronize the group,
// after which every thread sees the data, as after the real asynchronous copy.
template <class Group, class T, class Size>
inline void memcpy_async(const Group &g, T *dst, const T *src, const Size &count)
{
    const size_t n = (size_t)count;
    const size_t parts = (size_t)g.size(), r = (size_t)g.thread_rank();
    const size_t chunk = (n + parts - 1) / parts, lo = r * chunk < n ? r * chunk : n,
                 hi = lo + chunk < n ? lo + chunk : n;
    if (hi > lo)
        std::memcpy(static_cast<char *>(static_cast<void *>(dst)) + lo,
                    static_cast<const char *>(static_cast<const void *>(src)) + lo, hi - lo);
}
template <class Group, class T, class DstLayout, class SrcLayout>
inline void memcpy_async(const Group &g, T *dst, const DstLayout &dst_count, const T *src,
                         const SrcLayout &src_count)
{
    const size_t n = (size_t)dst_count < (size_t)src_count ? (size_t)dst_count : (size_t)src_count;
    memcpy_async(g, dst, src, n * sizeof(T));
}
template <class Group> inline void wait(const Group &g) { g.sync(); }
template <unsigned int Stage, class Group> inline void wait_prior(const Group &g) { g.sync(); }

} // namespace cooperative_groups

#endif
