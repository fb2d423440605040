// Cooperative groups, block level: this_thread_block() (sync, thread_rank, group_index/thread_index/dim_threads),
// tiled_partition<N> for N = 32, 16, 8, 4 (thread_rank, meta_group_rank/size, shfl, shfl_down, shfl_xor, ballot,
// any, all, sync), cg::reduce with plus/greater, in a 2-D block. Checked against host computations.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <stdio.h>

#include "check.h"

namespace cg = cooperative_groups;

#define NOUT 12

template <unsigned N>
__device__ void tile_ops(const cg::thread_block &block, int v, int *o) {
  cg::thread_block_tile<N> tile = cg::tiled_partition<N>(block);
  o[0] = (int)tile.thread_rank();
  o[1] = (int)tile.meta_group_rank();
  o[2] = (int)tile.meta_group_size();
  o[3] = tile.shfl(v, 1);             // lane 1 of the tile
  o[4] = tile.shfl_down(v, 1);        // last lane keeps its own value
  o[5] = tile.shfl_xor(v, (int)N / 2);
  o[6] = (int)tile.ballot(v % 3 == 0);
  o[7] = tile.any(v == 5);
  o[8] = tile.all(v >= 0);
  tile.sync();
  o[9] = cg::reduce(tile, v, cg::plus<int>());
  o[10] = cg::reduce(tile, v, cg::greater<int>());
  o[11] = (int)tile.size();
}

__global__ void groups(const int *in, int *out, int *block_sums) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ int partial[8];
  const unsigned rank = (unsigned)block.thread_rank();
  const int v = in[blockIdx.x * block.size() + rank];
  int *o = out + (size_t)(blockIdx.x * block.size() + rank) * 4 * NOUT;
  tile_ops<32>(block, v, o);
  tile_ops<16>(block, v, o + NOUT);
  tile_ops<8>(block, v, o + 2 * NOUT);
  tile_ops<4>(block, v, o + 3 * NOUT);
  // block sum: warp reductions then one warp over the partial sums
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int ws = cg::reduce(warp, v, cg::plus<int>());
  if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = ws;
  block.sync();
  if (rank == 0) {
    int s = 0;
    for (unsigned w = 0; w < (block.size() + 31) / 32; ++w) s += partial[w];
    const bool dims_ok = block.group_index().x == blockIdx.x && block.dim_threads().x == blockDim.x &&
                         block.dim_threads().y == blockDim.y && block.thread_index().x == threadIdx.x;
    block_sums[blockIdx.x] = dims_ok ? s : -1;  // -1: the group's index/dimension queries are wrong
  }
}

int main() {
  require_device();
  int fails = 0;
  const dim3 bdim(32, 4);  // 128 threads, 2-D
  const int blocks = 2, per = 128, total = blocks * per;
  int h_in[total], *h_out = new int[total * 4 * NOUT], h_sums[blocks];
  for (int i = 0; i < total; ++i) h_in[i] = (i * 37) % 23;
  int *d_in, *d_out, *d_sums;
  CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
  CHECK_CUDA(cudaMalloc(&d_out, total * 4 * NOUT * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&d_sums, sizeof h_sums));
  CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
  groups<<<blocks, bdim>>>(d_in, d_out, d_sums);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h_out, d_out, total * 4 * NOUT * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(h_sums, d_sums, sizeof h_sums, cudaMemcpyDeviceToHost));
  const int sizes[4] = {32, 16, 8, 4};
  int bad = 0;
  for (int g = 0; g < total; ++g) {
    const int b = g / per, r = g % per;
    for (int k = 0; k < 4; ++k) {
      const int N = sizes[k], lane = r % N, base = b * per + r - lane;
      const int *vals = h_in + base;
      const int v = vals[lane];
      int ballot = 0, any = 0, all = 1, sum = 0, mx = vals[0];
      for (int l = 0; l < N; ++l) {
        ballot |= (vals[l] % 3 == 0) << l;
        any |= vals[l] == 5;
        all &= vals[l] >= 0;
        sum += vals[l];
        mx = vals[l] > mx ? vals[l] : mx;
      }
      const int want[NOUT] = {lane, r / N, per / N, vals[1], lane + 1 < N ? vals[lane + 1] : v, vals[lane ^ (N / 2)],
                              ballot, any, all, sum, mx, N};
      const int *o = h_out + (size_t)g * 4 * NOUT + k * NOUT;
      for (int q = 0; q < NOUT; ++q)
        if ((q == 7 || q == 8 ? (o[q] != 0) != (want[q] != 0) : o[q] != want[q]) && bad < 10) {
          printf("FAIL tile<%d> thread %d (block %d) item %d: %d, expected %d\n", N, r, b, q, o[q], want[q]);
          ++bad;
        }
    }
  }
  fails += bad;
  for (int b = 0; b < blocks; ++b) {
    int s = 0;
    for (int i = 0; i < per; ++i) s += h_in[b * per + i];
    if (h_sums[b] != s) {
      printf("FAIL block %d sum %d, expected %d\n", b, h_sums[b], s);
      ++fails;
    }
  }
  delete[] h_out;
  CHECK_CUDA(cudaFree(d_in));
  CHECK_CUDA(cudaFree(d_out));
  CHECK_CUDA(cudaFree(d_sums));
  return report("coop_groups", fails);
}
