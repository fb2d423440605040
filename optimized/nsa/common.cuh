// NSA (optimized/nsa.cu): the includes, constants and the shape (NsaShape) that
// every file of optimized/nsa/ uses.
#pragma once

#include "mf_cuda.h"
#include "../mf_device.cuh"
#include "../mf_mma.cuh"
#include "../mf_wgmma.cuh"
#include "../mf_bar.cuh"
#include "../nsa.cuh"

#include <cuda_bf16.h>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace MF_NS {

constexpr int kThreads = 128;
constexpr int kMaxD = MF_NSA_MAX_HEAD_DIM;
constexpr int kMaxG = MF_NSA_MAX_GROUP;
constexpr int kMaxSel = MF_NSA_MAX_N_SEL; // n of the running top-n list
constexpr int kTile = 1024;               // candidate blocks per importance tile
static_assert(kMaxD <= kThreads, "one thread per output column");

struct NsaShape {
    size_t B, S, Hq, Hk, D, G, nc, nb;
    size_t l, d, ls, n, w;
    // pass 2 of the compression kernels (nsa_cmp): the selection blocks at or after a range's end
    // that compressed blocks before it overlap (j < iend l' / d covers tokens up to
    // iend l' - d + l - 1: blocks iend .. iend + (l - d - 1) / l'; none when l = d)
    size_t carry;
    float scale;
    double
        scale_ref; // the reference's scale in double (cfg.scale, or 1/sqrt(D) in double): nsa_recheck_kernel
};

} // namespace MF_NS
