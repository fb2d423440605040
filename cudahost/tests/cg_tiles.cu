// Cooperative groups beyond the warp: tiles larger than a warp (block_tile_memory, tiled_partition<64> and <128>:
// sync, shfl, any, all, reduce), shuffles of 16-byte types (uint4) in warp tiles, inclusive_scan / exclusive_scan
// over warp tiles and over a whole block as one tile (<cooperative_groups/scan.h>), memcpy_async with wait
// (<cooperative_groups/memcpy_async.h>). Every result is recomputed on the host.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cuda/std/type_traits>  // libcu++, which the toolkit's cooperative-groups headers use
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

namespace cg = cooperative_groups;

static_assert(cuda::std::is_same_v<cuda::std::remove_cv_t<const int>, int>, "libcu++ is usable");

constexpr int kBlock = 256;  // 4 tiles of 64, 2 of 128, 8 warps
constexpr int kOut = 12;     // results per thread

template <class T>
struct max_op {
  __device__ T operator()(const T &a, const T &b) const { return a < b ? b : a; }
};

__global__ void big_tiles(const int *in, int *out) {
  __shared__ cg::block_tile_memory<kBlock> scratch;
  cg::thread_block block = cg::this_thread_block(scratch);
  const int t = (int)block.thread_rank();
  const int v = in[blockIdx.x * kBlock + t];
  int *o = out + (blockIdx.x * kBlock + t) * kOut;
  auto t64 = cg::tiled_partition<64>(block);
  auto t128 = cg::tiled_partition<128>(block);
  o[0] = (int)t64.thread_rank();
  o[1] = (int)t64.meta_group_rank();
  o[2] = t64.shfl(v, 5);                              // rank 5 of my 64-tile
  o[3] = t128.shfl(v, (t128.thread_rank() + 77) % 128);  // a rotation across the warps of the tile
  o[4] = t64.any(v == 1000 * 70 + 3);                 // true in the second tile only
  o[5] = t128.all(v > 0);
  o[6] = cg::reduce(t64, v, cg::plus<int>());
  o[7] = cg::reduce(t128, v, max_op<int>());
  // a tile barrier orders shared-memory writes and reads inside the tile
  __shared__ int board[kBlock];
  board[t] = v;
  t64.sync();
  o[8] = board[(t & ~63) + ((t + 1) & 63)];
  o[9] = cg::inclusive_scan(t128, v % 97);
  o[10] = cg::exclusive_scan(t128, v % 89, cg::plus<int>());
  o[11] = cg::inclusive_scan(t64, v % 31, max_op<int>());
}

__global__ void warp_tiles(const uint4 *in, uint4 *out4, int *outs) {
  cg::thread_block block = cg::this_thread_block();
  auto w = cg::tiled_partition<32>(block);
  auto h = cg::tiled_partition<16>(block);
  auto e = cg::tiled_partition<8>(block);
  const int t = (int)block.thread_rank();
  const uint4 v = in[t];
  out4[3 * t + 0] = w.shfl_xor(v, 5);
  out4[3 * t + 1] = h.shfl_xor(v, 8);
  out4[3 * t + 2] = w.shfl(v, 31 - (int)w.thread_rank());
  outs[4 * t + 0] = cg::inclusive_scan(w, (int)(v.x % 1000u));
  outs[4 * t + 1] = cg::exclusive_scan(w, (int)(v.y % 1000u));
  outs[4 * t + 2] = cg::inclusive_scan(e, (int)(v.z % 1000u), max_op<int>());
  outs[4 * t + 3] = cg::exclusive_scan(h, (int)(v.w % 1000u), cg::plus<int>());
}

// memcpy_async: the block copies a tile of global memory into shared memory together, waits, then every thread
// reads an element another thread's share brought in.
__global__ void copy_async(const float *in, float *out) {
  __shared__ float tile[512];
  cg::thread_block block = cg::this_thread_block();
  cg::memcpy_async(block, tile, in + blockIdx.x * 512, sizeof(float) * 512);
  cg::wait(block);
  const int t = (int)block.thread_rank();
  out[blockIdx.x * 512 + t] = tile[511 - t];
  out[blockIdx.x * 512 + 256 + t] = tile[255 - t];
  // element-count form with a warp tile, wait_prior
  __shared__ float part[32];
  auto w = cg::tiled_partition<32>(block);
  if (w.meta_group_rank() == 1) {
    cg::memcpy_async(w, part, (size_t)32, in + blockIdx.x * 512 + 100, (size_t)40);
    cg::wait_prior<0>(w);
    out[2 * 512 + blockIdx.x * 32 + w.thread_rank()] = part[(w.thread_rank() + 1) & 31];
  }
}

int main() {
#ifndef __CUDAHOST__
  require_device();
#endif
  int fails = 0;
  // ---- tiles larger than a warp
  {
    const int blocks = 2, n = blocks * kBlock;
    int *h_in = (int *)malloc(n * sizeof(int)), *h_out = (int *)malloc(n * kOut * sizeof(int));
    for (int i = 0; i < n; ++i) h_in[i] = 1000 * (i % kBlock) + 3 + 7 * (i / kBlock);
    int *d_in, *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_out, n * kOut * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, n * sizeof(int), cudaMemcpyHostToDevice));
    big_tiles<<<blocks, kBlock>>>(d_in, d_out);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, n * kOut * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < kBlock; ++t) {
        const int *v = h_in + b * kBlock;
        const int *o = h_out + (b * kBlock + t) * kOut;
        const int f64 = t & ~63, f128 = t & ~127, r128 = t & 127;
        int sum64 = 0, max128 = v[f128], any64 = 0, all128 = 1, inc = 0, exc = 0, run_max = v[f64] % 31;
        for (int r = 0; r < 64; ++r) {
          sum64 += v[f64 + r];
          any64 |= v[f64 + r] == 70003;
          if (r <= (t & 63) && v[f64 + r] % 31 > run_max) run_max = v[f64 + r] % 31;
        }
        for (int r = 0; r < 128; ++r) {
          if (v[f128 + r] > max128) max128 = v[f128 + r];
          all128 &= v[f128 + r] > 0;
          if (r <= r128) inc += v[f128 + r] % 97;
          if (r < r128) exc += v[f128 + r] % 89;
        }
        const int want[kOut] = {t & 63, t / 64, v[f64 + 5], v[f128 + (r128 + 77) % 128], any64, all128, sum64,
                                max128, v[f64 + ((t + 1) & 63)], inc, exc, run_max};
        for (int k = 0; k < kOut; ++k)
          if (o[k] != want[k] && bad++ < 8)
            printf("FAIL big tiles block %d thread %d result %d: %d, expected %d\n", b, t, k, o[k], want[k]);
      }
    fails += bad;
    free(h_in);
    free(h_out);
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
  }
  // ---- 16-byte shuffles and scans in warp tiles
  {
    const int n = 64;
    uint4 h_in[n], h_out4[3 * n];
    int h_outs[4 * n];
    for (int i = 0; i < n; ++i)
      h_in[i] = make_uint4(11u * i + 1, 0x10000u * i + 7, 0xdead0000u + 3u * i, 4000000000u - 13u * i);
    uint4 *d_in, *d_out4;
    int *d_outs;
    CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
    CHECK_CUDA(cudaMalloc(&d_out4, sizeof h_out4));
    CHECK_CUDA(cudaMalloc(&d_outs, sizeof h_outs));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    warp_tiles<<<1, n>>>(d_in, d_out4, d_outs);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out4, d_out4, sizeof h_out4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_outs, d_outs, sizeof h_outs, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int t = 0; t < n; ++t) {
      const int src[3] = {t ^ 5, t ^ 8, (t & ~31) + 31 - (t & 31)};
      for (int k = 0; k < 3; ++k) {
        const uint4 g = h_out4[3 * t + k], e = h_in[src[k]];
        if ((g.x != e.x || g.y != e.y || g.z != e.z || g.w != e.w) && bad++ < 8)
          printf("FAIL uint4 shuffle %d thread %d: (%u,%u,%u,%u), expected lane %d's\n", k, t, g.x, g.y, g.z, g.w,
                 src[k]);
      }
      int inc = 0, exc = 0, mx = -1, exh = 0;
      for (int r = t & ~31; r <= t; ++r) inc += (int)(h_in[r].x % 1000);
      for (int r = t & ~31; r < t; ++r) exc += (int)(h_in[r].y % 1000);
      for (int r = t & ~7; r <= t; ++r) mx = (int)(h_in[r].z % 1000) > mx ? (int)(h_in[r].z % 1000) : mx;
      for (int r = t & ~15; r < t; ++r) exh += (int)(h_in[r].w % 1000);
      const int want[4] = {inc, exc, mx, exh};
      for (int k = 0; k < 4; ++k)
        if (h_outs[4 * t + k] != want[k] && bad++ < 8)
          printf("FAIL warp-tile scan %d thread %d: %d, expected %d\n", k, t, h_outs[4 * t + k], want[k]);
    }
    fails += bad;
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out4));
    CHECK_CUDA(cudaFree(d_outs));
  }
  // ---- memcpy_async
  {
    const int blocks = 2, n = blocks * 512, nout = 2 * 512 + blocks * 32;
    float *h_in = (float *)malloc(n * sizeof(float)), *h_out = (float *)malloc(nout * sizeof(float));
    for (int i = 0; i < n; ++i) h_in[i] = 0.5f * i - 100.f;
    float *d_in, *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&d_out, nout * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice));
    copy_async<<<blocks, 256>>>(d_in, d_out);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, nout * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
      for (int t = 0; t < 256; ++t) {
        if (h_out[b * 512 + t] != h_in[b * 512 + 511 - t] && bad++ < 8) printf("FAIL memcpy_async %d %d\n", b, t);
        if (h_out[b * 512 + 256 + t] != h_in[b * 512 + 255 - t] && bad++ < 8) printf("FAIL memcpy_async %d %d\n", b, t);
      }
      for (int l = 0; l < 32; ++l)
        if (h_out[2 * 512 + b * 32 + l] != h_in[b * 512 + 100 + ((l + 1) & 31)] && bad++ < 8)
          printf("FAIL memcpy_async (counts) block %d lane %d\n", b, l);
    }
    fails += bad;
    free(h_in);
    free(h_out);
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
  }
  return report("cg_tiles", fails);
}
