// Atomics of every type and operation, from many blocks at once (the host runs blocks concurrently on worker
// threads, so lost updates would show) on global memory, and from every thread of a block on shared memory.
// Expected values are order-independent (integer sums, min/max, bit operations, counts) and computed on the host.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "check.h"

struct Results {
  int i_add, i_sub, i_min, i_max, i_and, i_or, i_xor, i_exch_seen, i_cas_count;
  unsigned u_add, u_sub, u_min, u_max, u_and, u_or, u_xor, u_inc, u_dec, u_cas;
  unsigned long long ull_add, ull_min, ull_max, ull_and, ull_or, ull_xor, ull_cas, ull_exch;
  long long ll_min, ll_max, ll_and, ll_or, ll_xor;
  float f_add, f_exch;
  double d_add;
  __half h_add;
  __half2 h2_add;
  __nv_bfloat16 b_add;
  __nv_bfloat162 b2_add;
  unsigned short us_cas;
  int pad;
  int block_add, block_system_add;
};

// value of thread g (global index), deterministic and of mixed sign
__host__ __device__ inline int val(int g) { return (g * 7919) % 1013 - 506; }

__global__ void global_atomics(Results *r, int *exch_hist) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = val(g);
  const unsigned u = (unsigned)(g * 2654435761u);
  atomicAdd(&r->i_add, v);
  atomicSub(&r->i_sub, v);
  atomicMin(&r->i_min, v);
  atomicMax(&r->i_max, v);
  atomicAnd(&r->i_and, ~(1 << (g % 31)));
  atomicOr(&r->i_or, 1 << (g % 29));
  atomicXor(&r->i_xor, v);
  const int old = atomicExch(&r->i_exch_seen, g);  // every value but the last is seen exactly once
  atomicAdd(&exch_hist[old + 1], 1);
  // CAS loop increment: counts exactly once per thread
  int cur = 0, prev;  // a guess: the first failed CAS returns the current value
  do {
    prev = cur;
    cur = atomicCAS(&r->i_cas_count, prev, prev + 1);
  } while (cur != prev);

  atomicAdd(&r->u_add, u >> 8);
  atomicSub(&r->u_sub, 3u);
  atomicMin(&r->u_min, u);
  atomicMax(&r->u_max, u);
  atomicAnd(&r->u_and, ~(1u << (g % 32)));
  atomicOr(&r->u_or, 1u << (g % 17));
  atomicXor(&r->u_xor, u);
  atomicInc(&r->u_inc, 1000u);  // wraps to 0 after 1000
  atomicDec(&r->u_dec, 1000u);
  unsigned ucur = 0u, uprev;
  do {
    uprev = ucur;
    ucur = atomicCAS(&r->u_cas, uprev, uprev + 2u);
  } while (ucur != uprev);

  const unsigned long long big = (unsigned long long)u << 20;
  atomicAdd(&r->ull_add, big);
  atomicMin(&r->ull_min, big + 1);
  atomicMax(&r->ull_max, big);
  atomicAnd(&r->ull_and, ~(1ull << (g % 64)));
  atomicOr(&r->ull_or, 1ull << (g % 61));
  atomicXor(&r->ull_xor, big);
  unsigned long long ccur = 0ull, cprev;
  do {
    cprev = ccur;
    ccur = atomicCAS(&r->ull_cas, cprev, cprev + 5ull);
  } while (ccur != cprev);
  atomicExch(&r->ull_exch, 42ull);
  unsigned short scur = 0, sprev;
  do {
    sprev = scur;
    scur = atomicCAS(&r->us_cas, sprev, (unsigned short)(sprev + 1u));
  } while (scur != sprev);

  const long long sl = (long long)v * 100000000LL;
  atomicMin(&r->ll_min, sl);
  atomicMax(&r->ll_max, sl);
  atomicAnd(&r->ll_and, ~(1ll << (g % 62)));
  atomicOr(&r->ll_or, 1ll << (g % 59));
  atomicXor(&r->ll_xor, sl);

  atomicAdd(&r->f_add, (float)(v % 16));  // small integers: exact in any order
  atomicExch(&r->f_exch, 2.5f);
  atomicAdd(&r->d_add, (double)v * 0.25);
  atomicAdd(&r->h_add, __float2half(1.0f));  // counts up to the block total: exact in fp16 below 2048
  atomicAdd(&r->h2_add, __floats2half2_rn(1.0f, 2.0f));
  atomicAdd(&r->b_add, __float2bfloat16(1.0f));  // exact below 256
  atomicAdd(&r->b2_add, __floats2bfloat162_rn(1.0f, -1.0f));
  atomicAdd_block(&r->block_add, 1);
  atomicAdd_system(&r->block_system_add, 2);
}

// heavy contention on four counters: a lost update (a non-atomic read-modify-write between two worker threads)
// shows as a short total (probabilistic: CTest runs this program with more workers than cores)
__global__ void contention(int *i, unsigned long long *u, float *f, double *d, int reps) {
  for (int r = 0; r < reps; ++r) {
    atomicAdd(i, 1);
    atomicAdd(u, 3ull);
    atomicAdd(f, 1.0f);  // exact: the total stays below 2^24
    atomicAdd(d, 0.5);
  }
}

// shared-memory atomics: a histogram per block, then merged into global memory
__global__ void shared_histogram(const int *in, int n, unsigned *hist, float *fsum) {
  __shared__ unsigned local[16];
  __shared__ float lsum;
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  if (threadIdx.x == 0) lsum = 0.0f;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&local[in[i] & 15], 1u);
    atomicAdd(&lsum, (float)(in[i] & 7));
  }
  __syncthreads();
  if (threadIdx.x < 16) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
  if (threadIdx.x == 0) atomicAdd(fsum, lsum);
}

int main() {
  require_device();
  int fails = 0;
  const int blocks = 32, threads = 64, total = blocks * threads;  // 2048 threads

  Results init{};
  init.i_min = 1 << 30;
  init.i_max = -(1 << 30);
  init.i_and = -1;
  init.u_sub = 100000u;
  init.u_min = 0xFFFFFFFFu;
  init.u_and = 0xFFFFFFFFu;
  init.u_dec = 0;
  init.ull_min = ~0ull;
  init.ull_and = ~0ull;
  init.ll_min = 1ll << 62;
  init.ll_max = -(1ll << 62);
  init.ll_and = -1;
  init.i_exch_seen = -1;
  init.h_add = __float2half(0.0f);
  init.h2_add = __floats2half2_rn(0.0f, 0.0f);
  init.b_add = __float2bfloat16(0.0f);
  init.b2_add = __floats2bfloat162_rn(0.0f, 0.0f);

  Results *d_r;
  int *d_hist;
  CHECK_CUDA(cudaMalloc(&d_r, sizeof(Results)));
  CHECK_CUDA(cudaMalloc(&d_hist, (total + 1) * sizeof(int)));
  CHECK_CUDA(cudaMemset(d_hist, 0, (total + 1) * sizeof(int)));

  CHECK_CUDA(cudaMemcpy(d_r, &init, sizeof init, cudaMemcpyHostToDevice));
  global_atomics<<<blocks, threads>>>(d_r, d_hist);
  CHECK_LAUNCH();
  Results r;
  CHECK_CUDA(cudaMemcpy(&r, d_r, sizeof r, cudaMemcpyDeviceToHost));
  int *hist = new int[total + 1];
  CHECK_CUDA(cudaMemcpy(hist, d_hist, (total + 1) * sizeof(int), cudaMemcpyDeviceToHost));

  // host reference
  Results w = init;
  double d_add = 0;
  float f_add = 0;
  for (int g = 0; g < total; ++g) {
    const int v = val(g);
    const unsigned u = (unsigned)(g * 2654435761u);
    w.i_add += v;
    w.i_sub -= v;
    w.i_min = v < w.i_min ? v : w.i_min;
    w.i_max = v > w.i_max ? v : w.i_max;
    w.i_and &= ~(1 << (g % 31));
    w.i_or |= 1 << (g % 29);
    w.i_xor ^= v;
    w.u_add += u >> 8;
    w.u_sub -= 3u;
    w.u_min = u < w.u_min ? u : w.u_min;
    w.u_max = u > w.u_max ? u : w.u_max;
    w.u_and &= ~(1u << (g % 32));
    w.u_or |= 1u << (g % 17);
    w.u_xor ^= u;
    w.u_inc = w.u_inc >= 1000u ? 0u : w.u_inc + 1u;
    w.u_dec = (w.u_dec == 0u || w.u_dec > 1000u) ? 1000u : w.u_dec - 1u;
    const unsigned long long big = (unsigned long long)u << 20;
    w.ull_add += big;
    w.ull_min = big + 1 < w.ull_min ? big + 1 : w.ull_min;
    w.ull_max = big > w.ull_max ? big : w.ull_max;
    w.ull_and &= ~(1ull << (g % 64));
    w.ull_or |= 1ull << (g % 61);
    w.ull_xor ^= big;
    const long long sl = (long long)v * 100000000LL;
    w.ll_min = sl < w.ll_min ? sl : w.ll_min;
    w.ll_max = sl > w.ll_max ? sl : w.ll_max;
    w.ll_and &= ~(1ll << (g % 62));
    w.ll_or |= 1ll << (g % 59);
    w.ll_xor ^= sl;
    f_add += (float)(v % 16);
    d_add += (double)v * 0.25;
  }
  EXPECT(r.i_add == w.i_add);
  EXPECT(r.i_sub == w.i_sub);
  EXPECT(r.i_min == w.i_min);
  EXPECT(r.i_max == w.i_max);
  EXPECT(r.i_and == w.i_and);
  EXPECT(r.i_or == w.i_or);
  EXPECT(r.i_xor == w.i_xor);
  EXPECT(r.i_cas_count == total);
  EXPECT(r.u_add == w.u_add);
  EXPECT(r.u_sub == w.u_sub);
  EXPECT(r.u_min == w.u_min);
  EXPECT(r.u_max == w.u_max);
  EXPECT(r.u_and == w.u_and);
  EXPECT(r.u_or == w.u_or);
  EXPECT(r.u_xor == w.u_xor);
  EXPECT(r.u_inc == w.u_inc);  // inc/dec results do not depend on the order of the calls
  EXPECT(r.u_dec == w.u_dec);
  EXPECT(r.u_cas == 2u * total);
  EXPECT(r.ull_add == w.ull_add);
  EXPECT(r.ull_min == w.ull_min);
  EXPECT(r.ull_max == w.ull_max);
  EXPECT(r.ull_and == w.ull_and);
  EXPECT(r.ull_or == w.ull_or);
  EXPECT(r.ull_xor == w.ull_xor);
  EXPECT(r.ull_cas == 5ull * total);
  EXPECT(r.ull_exch == 42ull);
  EXPECT(r.us_cas == (unsigned short)total);
  EXPECT(r.ll_min == w.ll_min);
  EXPECT(r.ll_max == w.ll_max);
  EXPECT(r.ll_and == w.ll_and);
  EXPECT(r.ll_or == w.ll_or);
  EXPECT(r.ll_xor == w.ll_xor);
  EXPECT(r.f_add == f_add);
  EXPECT(r.f_exch == 2.5f);
  EXPECT(r.d_add == d_add);
  EXPECT(__half2float(r.h_add) == 2048.0f);
  EXPECT(__low2float(r.h2_add) == 2048.0f && __high2float(r.h2_add) == 4096.0f);
  EXPECT(__bfloat162float(r.b_add) == 256.0f);  // bf16 saturates counting at 256 (256 + 1 rounds to 256)
  EXPECT(__low2float(r.b2_add) == 256.0f && __high2float(r.b2_add) == -256.0f);
  EXPECT(r.block_add == total);
  EXPECT(r.block_system_add == 2 * total);
  // atomicExch: the final value is some thread's index; the values returned are -1 and every index but the
  // final one, each exactly once
  {
    int bad = 0;
    EXPECT(r.i_exch_seen >= 0 && r.i_exch_seen < total);
    for (int i = 0; i <= total; ++i) {
      const int want = (i - 1 == r.i_exch_seen) ? 0 : 1;
      if (hist[i] != want) ++bad;
    }
    if (bad) printf("FAIL atomicExch: %d values seen the wrong number of times\n", bad);
    fails += bad != 0;
  }
  delete[] hist;

  // shared-memory atomics
  {
    const int n = 5000;
    int h_in[n];
    unsigned want[16] = {0}, got[16];
    float want_sum = 0, got_sum = 0;
    for (int i = 0; i < n; ++i) {
      h_in[i] = (i * 31 + 7) % 1000;
      want[h_in[i] & 15]++;
      want_sum += (float)(h_in[i] & 7);
    }
    int *d_in;
    unsigned *d_h;
    float *d_s;
    CHECK_CUDA(cudaMalloc(&d_in, sizeof h_in));
    CHECK_CUDA(cudaMalloc(&d_h, sizeof got));
    CHECK_CUDA(cudaMalloc(&d_s, sizeof(float)));
    CHECK_CUDA(cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(d_h, 0, sizeof got));
    CHECK_CUDA(cudaMemset(d_s, 0, sizeof(float)));
    shared_histogram<<<7, 96>>>(d_in, n, d_h, d_s);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(got, d_h, sizeof got, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(&got_sum, d_s, sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT(memcmp(got, want, sizeof want) == 0);
    EXPECT(got_sum == want_sum);
    CHECK_CUDA(cudaFree(d_in));
    CHECK_CUDA(cudaFree(d_h));
    CHECK_CUDA(cudaFree(d_s));
  }

  // contention from many blocks at once
  {
    struct Counters {
      int i;
      unsigned long long u;
      float f;
      double d;
    } h_c = {0, 0, 0.0f, 0.0}, *d_c;
    CHECK_CUDA(cudaMalloc(&d_c, sizeof h_c));
    CHECK_CUDA(cudaMemcpy(d_c, &h_c, sizeof h_c, cudaMemcpyHostToDevice));
    const int cb = 64, ct = 64, reps = 400;
    contention<<<cb, ct>>>(&d_c->i, &d_c->u, &d_c->f, &d_c->d, reps);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(&h_c, d_c, sizeof h_c, cudaMemcpyDeviceToHost));
    const long long ops = (long long)cb * ct * reps;
    EXPECT(h_c.i == ops);
    EXPECT(h_c.u == 3ull * ops);
    EXPECT(h_c.f == (float)ops);
    EXPECT(h_c.d == 0.5 * ops);
    if (h_c.i != ops) printf("  contention: int total %d of %lld\n", h_c.i, ops);
    CHECK_CUDA(cudaFree(d_c));
  }
  CHECK_CUDA(cudaFree(d_r));
  CHECK_CUDA(cudaFree(d_hist));
  return report("atomics", fails);
}
