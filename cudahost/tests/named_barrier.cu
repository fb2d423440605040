// Named barriers (bar.sync / bar.arrive a, b and the barrier.* spellings; PTX ISA "bar, barrier"): barrier a of b
// threads completes when b threads (counted per warp) have arrived; sync waits for that, arrive goes on; the barrier
// then resets for its next phase. Blocks of 256 threads (8 warps, two warpgroups):
//   * producer/consumer: warps 0-3 write a shared buffer and arrive; warps 4-7 sync, then read it;
//   * the same without the barrier: right by luck in forward order, wrong in reverse order (argument racy, run with
//     CUDAHOST_THREAD_ORDER=reverse: the test of the test; ThreadSanitizer builds are told not to report that race);
//   * ping-pong: the two warpgroups take turns through barriers 2 and 3 and append to a shared log, which must
//     alternate strictly;
//   * reuse in a loop: a producer/consumer ring with a "full" and an "empty" barrier, and a whole-block barrier;
//   * a sub-block barrier (4, 128) among warps 0-3 while warps 4-7 work alone; a whole-block named barrier (no
//     count) after two warps have exited;
//   * misuse (argument errors, host mode only): a barrier id of 16, a count that is not a multiple of 32, larger than
//     the block or 0, two counts in one phase, a warp arriving twice in one phase, .aligned in a diverged or partly
//     exited warp, and a deadlock (sync with count 256 when only 128 threads arrive), each reported as a launch
//     failure naming the kernel, block and thread.
// The kernels use the helpers of optimized/mf_bar.cuh (register operands) and literal templates (immediates).
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MF_NS nbar_test  // the namespace of memfix's device helpers (src/core/mf_cuda.h defines it there)
#include "../../optimized/mf_bar.cuh"

using nbar_test::named_bar_arrive;
using nbar_test::named_bar_sync;

constexpr int kThreads = 256;

// ---- (1) producer/consumer -------------------------------------------------------------------------------------------
__global__ void producer_consumer(int *out, int use_barrier) {
  __shared__ int buf[128];
  const int t = threadIdx.x;
  if (t < 128) {
    buf[t] = (int)blockIdx.x * 1000 + t + 1;
    if (use_barrier) asm volatile("bar.arrive 1, 256;\n" ::: "memory");
  } else {
    if (use_barrier) named_bar_sync(1, 256);
    const int c = t - 128;
    out[blockIdx.x * 128 + c] = buf[127 - c];  // written by another warp
  }
}

static int count_wrong_pc(const int *h, int blocks) {
  int wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int c = 0; c < 128; ++c) wrong += h[b * 128 + c] != b * 1000 + (127 - c) + 1;
  return wrong;
}

// ---- (2) ping-pong between the two warpgroups ------------------------------------------------------------------------
constexpr int kTurns = 40;
__global__ void ping_pong(int *log_out, unsigned *acc_out) {
  __shared__ int slog[2 * kTurns];
  __shared__ int pos;
  __shared__ unsigned acc[128];
  const int t = threadIdx.x, g = t / 128, j = t % 128;
  if (t == 0) pos = 0;
  if (t < 128) acc[t] = (unsigned)t;
  __syncthreads();
  if (g == 1) named_bar_arrive(2, 256);  // warpgroup 0 goes first
  for (int i = 0; i < kTurns; ++i) {
    named_bar_sync(2 + g, 256);  // wait for this warpgroup's turn
    acc[j] = acc[j] * 3u + (unsigned)(g + 1);  // both warpgroups update the same elements, in turns
    if (j == 0) slog[pos++] = g;
    if (!(g == 1 && i == kTurns - 1)) named_bar_arrive(2 + (g ^ 1), 256);  // hand the turn over
  }
  __syncthreads();
  if (t < 2 * kTurns) log_out[blockIdx.x * 2 * kTurns + t] = t < pos ? slog[t] : -1;
  if (t < 128) acc_out[blockIdx.x * 128 + t] = acc[t];
}

// ---- (3) reuse: a ring of one slot with "full" (7) and "empty" (8) barriers; a whole-block barrier (6) -------------
constexpr int kRounds = 25;
__global__ void ring(int *out) {
  __shared__ int slot[128];
  __shared__ int total[128];
  const int t = threadIdx.x;
  if (t < 128) {  // producers: warps 0-3
    for (int r = 0; r < kRounds; ++r) {
      if (r > 0) asm volatile("barrier.sync 8, 256;\n" ::: "memory");  // the consumers have read the slot
      slot[t] = r * 1000 + t;
      asm volatile("barrier.arrive 7, %0;\n" ::"r"(256) : "memory");  // full
    }
  } else {  // consumers: warps 4-7
    int sum = 0;
    const int c = t - 128;
    for (int r = 0; r < kRounds; ++r) {
      asm volatile("bar.cta.sync 7, 256;\n" ::: "memory");
      sum += slot[(c + r) % 128];  // another warp's element
      if (r < kRounds - 1) asm volatile("barrier.arrive.aligned 8, 256;\n" ::: "memory");  // empty
    }
    total[c] = sum;
  }
  asm volatile("bar.sync 6;\n" ::: "memory");  // the whole block, a named barrier without a count
  if (t < 128) out[blockIdx.x * 128 + t] = total[127 - t];
  // the same barrier again with a count, and barrier.sync.aligned in a loop
  for (int r = 0; r < 3; ++r) asm volatile("barrier.sync.aligned 6, 256;\n" ::: "memory");
}

static int ring_expected(int c) {
  int s = 0;
  for (int r = 0; r < kRounds; ++r) s += r * 1000 + (c + r) % 128;
  return s;
}

// ---- (4) a sub-block barrier; a whole-block barrier after warps exited ------------------------------------------------
__global__ void sub_block(int *out) {
  __shared__ int a[128];
  __shared__ int b[128];
  const int t = threadIdx.x;
  if (t < 128) {
    a[t] = t * 7 + (int)blockIdx.x;
    named_bar_sync(4, 128);  // warps 0-3 only
    out[blockIdx.x * kThreads + t] = a[127 - t];
  } else {
    // warps 4-7: their own exchange, within each warp
    b[t - 128] = t * 5;
    __syncwarp();
    out[blockIdx.x * kThreads + t] = b[((t - 128) ^ 1)];
  }
}
__global__ void after_exit(int *out) {
  __shared__ int s[kThreads];
  const int t = threadIdx.x;
  if (t >= 192) return;  // warps 6 and 7 exit: the whole-block barrier waits for the other six
  s[t] = t + 1;
  asm volatile("barrier.sync 9;\n" ::: "memory");
  out[t] = s[191 - t];
}

// ---- (5) misuse (host mode) --------------------------------------------------------------------------------------------
__global__ void bad_id(int *out, int id) {
  named_bar_sync(id, 256);
  out[threadIdx.x] = 1;
}
__global__ void bad_count(int *out, int count) {
  named_bar_arrive(1, count);
  out[threadIdx.x] = 1;
}
__global__ void two_counts(int *out) {
  // warps 0-3 arrive with count 256, warps 4-5 sync with count 192 (warps 6-7 exit): neither count is reached, so
  // whichever group comes second meets the other's open phase
  if (threadIdx.x < 128) named_bar_arrive(1, 256);
  else if (threadIdx.x < 192) named_bar_sync(1, 192);
  out[threadIdx.x] = 1;
}
__global__ void arrives_twice(int *out) {
  // block of 64: warp 0 arrives twice at a barrier of 64 threads (warp 1 never comes)
  if (threadIdx.x < 32) {
    named_bar_arrive(1, 64);
    named_bar_arrive(1, 64);
  }
  out[threadIdx.x] = 1;
}
__global__ void diverged(int *out) {
  if (threadIdx.x % 32 < 16) asm volatile("bar.sync 1, 64;\n" ::: "memory");
  else asm volatile("bar.sync 1, 64;\n" ::: "memory");
  out[threadIdx.x] = 1;
}
__global__ void part_exited(int *out) {
  if (threadIdx.x % 32 >= 16) return;
  named_bar_sync(1, 64);
  out[threadIdx.x] = 1;
}
__global__ void too_few(int *out) {
  if (threadIdx.x >= 128) return;  // warps 4-7 exit: only 128 of the 256 threads arrive
  named_bar_sync(1, 256);
  out[threadIdx.x] = 1;
}

#ifdef __CUDAHOST__
#include "capture.h"  // (here, not above: the tsan_race test matches the kernels' line numbers)

static cudaError_t run_and_capture(void (*launch)(int *), int *d) {
  return capture_launch([&] { launch(d); });
}

static int check_errors() {
  snprintf(g_path, sizeof g_path, "/tmp/cudahost_named_barrier_XXXXXX");
  const int fd = mkstemp(g_path);
  if (fd < 0) return 1;
  int *d;
  cudaError_t e;
  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(int)));
  e = run_and_capture([](int *o) { bad_id<<<1, kThreads>>>(o, 16); }, d);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "bad_id") && strstr(g_text, "bar.sync") && strstr(g_text, "barrier 16 does not exist") &&
         strstr(g_text, "block (0,0,0)"));

  const int counts[3] = {100, 512, 0};
  for (int k = 0; k < 3; ++k) {
    static int count;
    count = counts[k];
    CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(int)));
    e = run_and_capture([](int *o) { bad_count<<<1, kThreads>>>(o, count); }, d);
    EXPECT(e == cudaErrorLaunchFailure);
    EXPECT(strstr(g_text, "bad_count") && strstr(g_text, "bar.arrive") && strstr(g_text, "it must be a multiple of 32 from 32 to the block's 256 thread(s)"));
  }

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(int)));
  e = run_and_capture([](int *o) { two_counts<<<1, kThreads>>>(o); }, d);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "two_counts") && strstr(g_text, "while a phase of it with thread count"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(int)));
  e = run_and_capture([](int *o) { arrives_twice<<<1, 64>>>(o); }, d);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "arrives_twice") && strstr(g_text, "warp 0 arrives at barrier 1 a second time in one phase"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(int)));
  e = run_and_capture([](int *o) { diverged<<<1, 64>>>(o); }, d);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "diverged") && strstr(g_text, "needs the whole warp at the same instruction"));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(int)));
  e = run_and_capture([](int *o) { part_exited<<<1, 64>>>(o); }, d);
  EXPECT(e == cudaErrorLaunchFailure);
  // (in forward order lanes 0..15 arrive before lanes 16..31 exit: the deadlock report names the barrier; in reverse
  // order the exits come first: reported at the instruction)
  EXPECT(strstr(g_text, "part_exited") && (strstr(g_text, "have exited: the .aligned form") ||
                                           strstr(g_text, "wait at named barrier 1 (64 threads, 32 arrived")));

  CHECK_CUDA(cudaMalloc(&d, 1024 * sizeof(int)));
  e = run_and_capture([](int *o) { too_few<<<1, kThreads>>>(o); }, d);
  EXPECT(e == cudaErrorLaunchFailure);
  EXPECT(strstr(g_text, "deadlock") && strstr(g_text, "too_few") && strstr(g_text, "block (0,0,0)") &&
         strstr(g_text, "128 thread(s) wait at named barrier 1 (256 threads, 128 arrived"));
  remove(g_path);
  return 0;
}
#endif

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
#ifdef __CUDAHOST__
  if (strcmp(mode, "errors") == 0) {
    const int fails = check_errors();
    return report("named_barrier errors", fails);
  }
#else
  if (strcmp(mode, "errors") == 0) {
    printf("SKIP: host-mode behaviour\n");
    return 77;
  }
#endif
  require_device();
  const int blocks = 3;
  int fails = 0;
  int *d_out;
  unsigned *d_acc;
  static int h[blocks * kThreads * 2];
  static unsigned hacc[blocks * 128];
  CHECK_CUDA(cudaMalloc(&d_out, sizeof h));
  CHECK_CUDA(cudaMalloc(&d_acc, sizeof hacc));

  if (strcmp(mode, "racy") == 0) {
    // without the barrier: wrong in reverse order (the consumers run first)
    producer_consumer<<<blocks, kThreads>>>(d_out, 0);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpy(h, d_out, sizeof(int) * blocks * 128, cudaMemcpyDeviceToHost));
    const int wrong = count_wrong_pc(h, blocks);
    printf("producer/consumer without the barrier: %d of %d results wrong (expected: some)\n", wrong, blocks * 128);
    EXPECT(wrong > 0);
    return report("named_barrier racy", fails);
  }

  producer_consumer<<<blocks, kThreads>>>(d_out, 1);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h, d_out, sizeof(int) * blocks * 128, cudaMemcpyDeviceToHost));
  EXPECT(count_wrong_pc(h, blocks) == 0);

  ping_pong<<<blocks, kThreads>>>(d_out, d_acc);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h, d_out, sizeof(int) * blocks * 2 * kTurns, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hacc, d_acc, sizeof hacc, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    int bad = 0;
    for (int i = 0; i < 2 * kTurns; ++i) bad += h[b * 2 * kTurns + i] != i % 2;
    EXPECT(bad == 0);
    for (int j = 0; j < 128; ++j) {
      unsigned v = (unsigned)j;
      for (int i = 0; i < kTurns; ++i) v = (v * 3u + 1u) * 3u + 2u;
      EXPECT(hacc[b * 128 + j] == v);
      if (hacc[b * 128 + j] != v) break;
    }
  }

  ring<<<blocks, kThreads>>>(d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h, d_out, sizeof(int) * blocks * 128, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < 128; ++t) {
      EXPECT(h[b * 128 + t] == ring_expected(127 - t));
      if (h[b * 128 + t] != ring_expected(127 - t)) break;
    }

  sub_block<<<blocks, kThreads>>>(d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h, d_out, sizeof(int) * blocks * kThreads, cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < kThreads; ++t) {
      const int want = t < 128 ? (127 - t) * 7 + b : (((t - 128) ^ 1) + 128) * 5;
      EXPECT(h[b * kThreads + t] == want);
      if (h[b * kThreads + t] != want) break;
    }

  after_exit<<<1, kThreads>>>(d_out);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaMemcpy(h, d_out, sizeof(int) * 192, cudaMemcpyDeviceToHost));
  for (int t = 0; t < 192; ++t) {
    EXPECT(h[t] == 192 - t);
    if (h[t] != 192 - t) break;
  }

  CHECK_CUDA(cudaFree(d_out));
  CHECK_CUDA(cudaFree(d_acc));
  return report("named_barrier", fails);
}
