// Driver smoke test: a launch inside a template in a .cuh, launches in macros and over several lines, and
// literals/comments that look like launches.
#include "kern.cuh"
#include <cstdio>
const char *s1 = "kernel<<<1,1>>>(x) /* not a launch */";
const char *s2 = R"x(raw "<<<" )" extern __shared__ float q[]; )x";
char c1 = '<';
int sep = 1'000'000;
// comment k<<<1,1>>>();
/* block
   comment k<<<1,1>>>(); */
#define LAUNCH(k, n) k<<<1, n>>>
void run_a(float *d, int n);
void run_a(float *d, int n)
{
    scale(d, 2.0f, n);
    LAUNCH(scale_k<float>, 32)(d, 1.0f, n);
    scale_k<<<dim3(1), // grid
              dim3(32) /* block */
              >>>(d, 3.0f, 32);
}
