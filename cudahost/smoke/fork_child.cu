// A child forked after kernels ran (as Check does for each test) can launch kernels: the worker pool is
// recreated in the child.
#include <cstdio>
#include <unistd.h>
#include <sys/wait.h>
__global__ void k(int *p) { p[blockIdx.x * blockDim.x + threadIdx.x] = 7; }
int main()
{
    int *d;
    cudaMalloc(&d, 64 * 64 * 4);
    k<<<64, 64>>>(d);
    pid_t pid = fork();
    if (pid == 0) {
        k<<<64, 64>>>(d);
        int h = 0;
        cudaMemcpy(&h, d + 4000, 4, cudaMemcpyDeviceToHost);
        _exit(h == 7 && cudaGetLastError() == cudaSuccess ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child: %d\n", WEXITSTATUS(st));
    return WEXITSTATUS(st);
}
