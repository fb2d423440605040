// cudahost/cooperative_groups.h: the block-level subset of CUDA's cooperative groups for host execution mode
// (NVIDIA's <cooperative_groups.h> declares nothing outside nvcc). Included by cudahost.h.
//
// Provided: this_thread_block() (sync, thread_rank, num_threads/size, group_index, thread_index, group_dim,
// dim_threads), tiled_partition<N>(block) for N in {1, 2, 4, 8, 16, 32} (sync, thread_rank, num_threads/size,
// meta_group_rank, meta_group_size, shfl, shfl_up, shfl_down, shfl_xor, any, all, ballot, match_any), cg::sync(g),
// cg::reduce(tile, value, op) with cg::plus/less/greater/bit_and/bit_or/bit_xor.
// Not provided: grid groups (this_grid().sync()), clusters, coalesced_threads(), dynamic tiled_partition.
#ifndef CUDAHOST_COOPERATIVE_GROUPS_H
#define CUDAHOST_COOPERATIVE_GROUPS_H

namespace cooperative_groups {

namespace cudahost_detail {
inline unsigned linear_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
}  // namespace cudahost_detail

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

template <unsigned N>
class thread_block_tile {
  static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tiled_partition<N>: N must be a power of 2 up to 32");

 public:
  unsigned mask() const {
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
  template <class T>
  T shfl(T v, int src) const {
    return __shfl_sync(mask(), v, src, (int)N);
  }
  template <class T>
  T shfl_up(T v, unsigned d) const {
    return __shfl_up_sync(mask(), v, d, (int)N);
  }
  template <class T>
  T shfl_down(T v, unsigned d) const {
    return __shfl_down_sync(mask(), v, d, (int)N);
  }
  template <class T>
  T shfl_xor(T v, int m) const {
    return __shfl_xor_sync(mask(), v, m, (int)N);
  }
  int any(int p) const { return __any_sync(mask(), p); }
  int all(int p) const { return __all_sync(mask(), p); }
  unsigned ballot(int p) const {
    unsigned lane = cudahost_detail::linear_tid() & 31u;
    return N == 32 ? __ballot_sync(mask(), p) : (__ballot_sync(mask(), p) >> (lane & ~(N - 1u)));
  }
  template <class T>
  unsigned match_any(T v) const {
    unsigned lane = cudahost_detail::linear_tid() & 31u;
    return N == 32 ? __match_any_sync(mask(), v) : (__match_any_sync(mask(), v) >> (lane & ~(N - 1u)));
  }
};

template <unsigned N, class Parent>
inline thread_block_tile<N> tiled_partition(const Parent&) {
  return thread_block_tile<N>();
}

template <class Group>
inline void sync(const Group& g) {
  g.sync();
}

template <class T>
struct plus {
  T operator()(const T& a, const T& b) const { return a + b; }
};
template <class T>
struct less {
  T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <class T>
struct greater {
  T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
  T operator()(const T& a, const T& b) const { return a & b; }
};
template <class T>
struct bit_or {
  T operator()(const T& a, const T& b) const { return a | b; }
};
template <class T>
struct bit_xor {
  T operator()(const T& a, const T& b) const { return a ^ b; }
};

// Every thread of the tile gets op folded over the tile's values (butterfly order).
template <unsigned N, class T, class Op>
inline T reduce(const thread_block_tile<N>& g, T v, Op op) {
  for (unsigned o = N / 2; o > 0; o >>= 1) v = op(v, g.shfl_xor(v, (int)o));
  return v;
}

}  // namespace cooperative_groups

#endif
