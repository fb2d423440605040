// Cooperative groups (block level) in host execution mode: block sync, 16- and 32-wide tiles, shuffles, reduce.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
namespace cg = cooperative_groups;

__global__ void tile_sums(const int *in, int *out16, int *out32, int *blocksum)
{
    cg::thread_block b = cg::this_thread_block();
    __shared__ int partial[8];
    int v = in[blockIdx.x * blockDim.x + threadIdx.x];
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(b);
    cg::thread_block_tile<32> t32 = cg::tiled_partition<32>(b);
    int s16 = cg::reduce(t16, v, cg::plus<int>());
    int s32 = cg::reduce(t32, v, cg::plus<int>());
    if (t16.thread_rank() == 0) out16[(blockIdx.x * blockDim.x + threadIdx.x) / 16] = s16;
    if (t32.thread_rank() == 0) partial[t32.meta_group_rank()] = s32;
    b.sync();
    if (b.thread_rank() == 0) {
        int s = 0;
        for (unsigned i = 0; i < t32.meta_group_size(); i++) s += partial[i];
        *blocksum = s;
        out32[0] = s32;
    }
}

int main()
{
    const int n = 256;
    int h[n];
    for (int i = 0; i < n; i++) h[i] = i * 7 % 31;
    int *d, *o16, *o32, *bs;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&o16, 16 * sizeof(int));
    cudaMalloc(&o32, sizeof(int));
    cudaMalloc(&bs, sizeof(int));
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    tile_sums<<<1, n>>>(d, o16, o32, bs);
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    int r16[16], r32, rb;
    cudaMemcpy(r16, o16, sizeof r16, cudaMemcpyDeviceToHost);
    cudaMemcpy(&r32, o32, sizeof r32, cudaMemcpyDeviceToHost);
    cudaMemcpy(&rb, bs, sizeof rb, cudaMemcpyDeviceToHost);
    int total = 0, bad = 0;
    for (int t = 0; t < 16; t++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += h[t * 16 + i];
        bad += s != r16[t];
        total += s;
    }
    int s0 = 0;
    for (int i = 0; i < 32; i++) s0 += h[i];
    bad += (r32 != s0) + (rb != total);
    std::printf("coop_groups: %s\n", bad ? "FAILED" : "OK");
    return bad != 0;
}
