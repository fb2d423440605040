// What every program here shares (llm.c dev/cuda's common.h): the error check, the device check, seeded bf16
// inputs, the validation against the CPU reference and the final verdict. Included by each program; built by
// nvcc and by host mode alike.
#pragma once

#include <cuda_runtime.h>
#include <cuda_bf16.h>

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_CHECK(call)                                                                                     \
    do {                                                                                                     \
        cudaError_t e_ = (call);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, #call);         \
            exit(1);                                                                                         \
        }                                                                                                    \
    } while (0)

// true (and says so) when there is no CUDA device: the program then exits 77 (skipped)
static inline bool no_cuda_device()
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) return false;
    printf("no CUDA device\n");
    return true;
}

// a value uniform in [-1, 1] from rand() (seed it with srand)
static inline float uniform_pm1() { return (float)rand() / (float)RAND_MAX * 2.f - 1.f; }

// n inputs in bf16 (uniform in [-1, 1]) and the same values in fp32 for the reference
static inline void fill_bf16(__nv_bfloat16 *b, float *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        b[i] = __float2bfloat16(uniform_pm1());
        f[i] = __bfloat162float(b[i]);
    }
}

// 1 when got differs from ref anywhere beyond |got - ref| <= tol + tol |ref| (or is NaN): prints the first few
// differences of the output named 'what' and one line for the version 'name'
static inline int validate(const char *name, const char *what, const float *got, const float *ref, size_t n,
                           double tol)
{
    size_t bad = 0;
    double max_err = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        if (!(e <= tol + tol * fabs(ref[i]))) {
            if (bad < 5) printf("  %s: %s[%zu] = %g, reference %g\n", name, what, i, got[i], ref[i]);
            bad++;
        }
        if (e > max_err || e != e) max_err = e;
    }
    printf("%-34s %s (max abs error %.3g)\n", name, bad ? "FAILED" : "ok", max_err);
    return bad != 0;
}

// the program's exit status after 'fails' failed versions
static inline int verdict(int fails)
{
    printf("%s\n", fails ? "FAILED" : "all versions match the reference");
    return fails != 0;
}
