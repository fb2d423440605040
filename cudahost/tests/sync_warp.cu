// Barriers and warp functions: __syncthreads and __syncthreads_count/_and/_or, __syncwarp, every shuffle
// (__shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync) with the default width and sub-warp widths,
// in full warps and in a partial last warp (blockDim not a multiple of 32) with its mask, votes (__ballot_sync,
// __any_sync, __all_sync, __activemask). Each result is recomputed on the host from CUDA's definitions.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

// the mask of the threads that exist in the warp of thread t (partial last warp)
__host__ __device__ inline unsigned warp_mask(unsigned t, unsigned block) {
  unsigned first = t & ~31u, count = block - first < 32u ? block - first : 32u;
  return count == 32u ? 0xFFFFFFFFu : ((1u << count) - 1u);
}

// multi-phase barrier use: a running prefix sum in shared memory (Hillis-Steele), plus the counting barriers
__global__ void barriers(const int *in, int *scan, int *counts) {
  __shared__ int buf[2][512];
  const int t = threadIdx.x, n = blockDim.x;
  int cur = 0;
  buf[cur][t] = in[blockIdx.x * n + t];
  __syncthreads();
  for (int off = 1; off < n; off <<= 1) {
    int v = buf[cur][t];
    if (t >= off) v += buf[cur][t - off];
    buf[1 - cur][t] = v;
    cur = 1 - cur;
    __syncthreads();
  }
  scan[blockIdx.x * n + t] = buf[cur][t];
  const int v = in[blockIdx.x * n + t];
  const int c = __syncthreads_count(v % 3 == 0);
  const int a = __syncthreads_and(v >= 0);
  const int a2 = __syncthreads_and(v % 2 == 0);
  const int o = __syncthreads_or(v == 7);
  const int o2 = __syncthreads_or(v < -1000);
  if (t == 0) {
    int *r = counts + 5 * blockIdx.x;
    r[0] = c;
    r[1] = a != 0;
    r[2] = a2 != 0;
    r[3] = o != 0;
    r[4] = o2 != 0;
  }
}

// shuffles of every kind, for width w in {32, 16, 8, 4, 2}; out has 4 * 5 ints per thread
__global__ void shuffles(const int *in, int *out) {
  const unsigned t = threadIdx.x;
  const unsigned mask = warp_mask(t, blockDim.x);
  const int v = in[blockIdx.x * blockDim.x + t];
  int *o = out + (blockIdx.x * blockDim.x + t) * 20;
  int k = 0;
  for (int w = 32; w >= 2; w >>= 1) {
    o[k++] = __shfl_sync(mask, v, 3, w);           // lane 3 of each w-segment
    o[k++] = __shfl_up_sync(mask, v, 1 + w / 8, w);
    o[k++] = __shfl_down_sync(mask, v, 1 + w / 16, w);
    o[k++] = __shfl_xor_sync(mask, v, w / 2, w);
  }
}

// a warp-shuffle reduction of floats and doubles; __syncwarp between shared-memory phases
__global__ void warp_reduce(const float *in, float *fout, double *dout) {
  __shared__ float stage[64];
  const unsigned t = threadIdx.x;
  float v = in[blockIdx.x * blockDim.x + t];
  double d = (double)v * 0.5;
  for (int off = 16; off > 0; off >>= 1) {
    v += __shfl_down_sync(0xFFFFFFFFu, v, off);
    d += __shfl_xor_sync(0xFFFFFFFFu, d, off);
  }
  stage[t] = v;
  __syncwarp();
  if ((t & 31u) == 0) fout[blockIdx.x * 2 + t / 32] = stage[t];
  __syncwarp();
  if ((t & 31u) == 5) dout[blockIdx.x * 2 + t / 32] = d;
}

// votes; odd lanes only take part in the second group (divergent mask)
__global__ void votes(const int *in, unsigned *out) {
  const unsigned t = threadIdx.x, lane = t & 31u;
  const unsigned mask = warp_mask(t, blockDim.x);
  const int v = in[blockIdx.x * blockDim.x + t];
  unsigned *o = out + (blockIdx.x * blockDim.x + t) * 6;
  o[0] = __ballot_sync(mask, v > 0);
  o[1] = __any_sync(mask, v == 13) ? 1u : 0u;
  o[2] = __all_sync(mask, v > -100) ? 1u : 0u;
  o[3] = __all_sync(mask, v > 0) ? 1u : 0u;
  o[4] = __activemask();
  o[5] = 0;
  if (lane & 1u) {
    const unsigned odd = mask & 0xAAAAAAAAu;
    o[5] = __ballot_sync(odd, v > 0);
  }
}

int main() {
  require_device();
  int fails = 0;

  // ---- barriers
  {
    const int blocks = 3, n = 512;
    int *h_in = (int *)malloc(blocks * n * sizeof(int)), *h_scan = (int *)malloc(blocks * n * sizeof(int));
    int h_counts[blocks * 5];
    for (int i = 0; i < blocks * n; ++i) h_in[i] = (i * 7919) % 23 - (i / n == 1 ? 0 : 3);
    h_in[n + 5] = 7;
    int *d_in, *d_scan, *d_counts;
    CHECK_CUDA(cudaMalloc(&d_in, blocks * n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_scan, blocks * n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_counts, sizeof h_counts));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, blocks * n * sizeof(int), cudaMemcpyHostToDevice));
    barriers<<<blocks, n>>>(d_in, d_scan, d_counts);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_scan, d_scan, blocks * n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_counts, d_counts, sizeof h_counts, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b) {
      int run = 0, c = 0, a = 1, a2 = 1, o = 0, o2 = 0;
      for (int t = 0; t < n; ++t) {
        const int v = h_in[b * n + t];
        run += v;
        if (h_scan[b * n + t] != run && fails < 5) {
          printf("FAIL scan block %d [%d] = %d, expected %d\n", b, t, h_scan[b * n + t], run);
          ++fails;
        }
        c += v % 3 == 0;
        a &= v >= 0;
        a2 &= v % 2 == 0;
        o |= v == 7;
        o2 |= v < -1000;
      }
      const int want[5] = {c, a, a2, o, o2};
      if (memcmp(want, h_counts + 5 * b, sizeof want) != 0) {
        printf("FAIL syncthreads_count/and/or block %d: got %d %d %d %d %d, expected %d %d %d %d %d\n", b,
               h_counts[5 * b], h_counts[5 * b + 1], h_counts[5 * b + 2], h_counts[5 * b + 3], h_counts[5 * b + 4],
               c, a, a2, o, o2);
        ++fails;
      }
    }
    free(h_in);
    free(h_scan);
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_scan));
    CHECK_CUDA(cudaFree(d_counts));
  }

  // ---- shuffles in full warps (64 threads) and with a partial last warp (80 threads: 32 + 32 + 16)
  const int block_sizes[2] = {64, 80};
  for (int bs : block_sizes) {
    const int blocks = 2, total = blocks * bs;
    int *h_in = (int *)malloc(total * sizeof(int)), *h_out = (int *)malloc(total * 20 * sizeof(int));
    for (int i = 0; i < total; ++i) h_in[i] = 1000 * i + 17;
    int *d_in, *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, total * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_out, total * 20 * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, total * sizeof(int), cudaMemcpyHostToDevice));
    shuffles<<<blocks, bs>>>(d_in, d_out);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, total * 20 * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < bs; ++t) {
        const int warp0 = b * bs + (t & ~31);
        const int nlanes = (bs - (t & ~31)) < 32 ? bs - (t & ~31) : 32;
        const int *vals = h_in + warp0;
        const unsigned lane = t & 31;
        const int v = vals[lane];
        const int *o = h_out + (b * bs + t) * 20;
        int k = 0;
        for (int w = 32; w >= 2; w >>= 1, k += 4) {
          const unsigned seg = lane / w * w;
          const unsigned up = 1 + w / 8, down = 1 + w / 16;
          // source lane of each shuffle kind, or -1 where CUDA returns the caller's own value
          const int src[4] = {(int)(seg + 3 % w), lane - seg >= up ? (int)(lane - up) : -1,
                              lane - seg + down < (unsigned)w ? (int)(lane + down) : -1,
                              (int)(seg + ((lane - seg) ^ (unsigned)(w / 2)))};
          for (int q = 0; q < 4; ++q) {
            // a source lane that does not exist (partial warp) gives an undefined value: skip those
            if (src[q] >= nlanes) continue;
            const int want = src[q] < 0 ? v : vals[src[q]];
            if (o[k + q] != want && bad < 5) {
              printf("FAIL shuffle bs %d block %d thread %d width %d kind %d: %d, expected %d\n", bs, b, t, w, q,
                     o[k + q], want);
              ++bad;
            }
          }
        }
      }
    fails += bad;
    free(h_in);
    free(h_out);
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
  }

  // ---- warp reductions of float and double with __syncwarp
  {
    const int blocks = 3, bs = 64, total = blocks * bs;
    float h_in[total], h_f[blocks * 2];
    double h_d[blocks * 2];
    for (int i = 0; i < total; ++i) h_in[i] = (float)((i * 13) % 17) - 8.0f;
    float *d_in, *d_f;
    double *d_d;
    CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
    CHECK_CUDA(cudaMalloc(&d_f, sizeof h_f));
    CHECK_CUDA(cudaMalloc(&d_d, sizeof h_d));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    warp_reduce<<<blocks, bs>>>(d_in, d_f, d_d);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_f, d_f, sizeof h_f, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_d, d_d, sizeof h_d, cudaMemcpyDeviceToHost));
    for (int w = 0; w < blocks * 2; ++w) {
      double s = 0;
      for (int l = 0; l < 32; ++l) s += h_in[w * 32 + l];
      if (h_f[w] != (float)s || h_d[w] != 0.5 * s) {
        printf("FAIL warp_reduce warp %d: %g / %g, expected %g / %g\n", w, h_f[w], h_d[w], s, 0.5 * s);
        ++fails;
      }
    }
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_f));
    CHECK_CUDA(cudaFree(d_d));
  }

  // ---- votes, full and partial warps
  for (int bs : block_sizes) {
    const int blocks = 2, total = blocks * bs;
    int *h_in = (int *)malloc(total * sizeof(int));
    unsigned *h_out = (unsigned *)malloc(total * 6 * sizeof(unsigned));
    for (int i = 0; i < total; ++i) h_in[i] = ((i * 5) % 7) - 2;  // mixed signs
    h_in[bs + 33] = 13;                                           // block 1, second warp only
    int *d_in;
    unsigned *d_out;
    CHECK_CUDA(cudaMalloc(&d_in, total * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&d_out, total * 6 * sizeof(unsigned)));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, total * sizeof(int), cudaMemcpyHostToDevice));
    votes<<<blocks, bs>>>(d_in, d_out);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h_out, d_out, total * 6 * sizeof(unsigned), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < bs; ++t) {
        const unsigned mask = warp_mask(t, bs);
        const int *vals = h_in + b * bs + (t & ~31);
        unsigned ballot = 0, any = 0, all1 = 1, all2 = 1, odd = 0;
        for (int l = 0; l < 32; ++l) {
          if (!(mask >> l & 1u)) continue;
          ballot |= (vals[l] > 0 ? 1u : 0u) << l;
          any |= vals[l] == 13;
          all1 &= vals[l] > -100;
          all2 &= vals[l] > 0;
          if (l & 1) odd |= (vals[l] > 0 ? 1u : 0u) << l;
        }
        const unsigned want[6] = {ballot, any, all1, all2, mask, (t & 1) ? odd : 0u};
        const unsigned *o = h_out + (b * bs + t) * 6;
        for (int q = 0; q < 6; ++q)
          if (q != 4 && o[q] != want[q] && bad < 5) {
            printf("FAIL vote bs %d block %d thread %d kind %d: %08x, expected %08x\n", bs, b, t, q, o[q], want[q]);
            ++bad;
          }
        // __activemask: at least the calling thread, never a thread that does not exist
        if (!((o[4] >> (t & 31)) & 1u) || (o[4] & ~mask)) {
          if (bad < 5) printf("FAIL __activemask bs %d thread %d: %08x\n", bs, t, o[4]);
          ++bad;
        }
      }
    fails += bad;
    free(h_in);
    free(h_out);
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_out));
  }
  return report("sync_warp", fails);
}
