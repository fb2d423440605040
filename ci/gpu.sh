#!/usr/bin/env bash
# What a GPU runner calls: build for this runner's GPU architecture and run the
# cuda-labelled tests (the same suites as host mode, on the device backend).
# Usage: ci/gpu.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
ci/setup.sh
jobs="${MF_JOBS:-$(nproc)}"
arch="${MF_CUDA_ARCH:-native}"   # e.g. 80, 90, or native (the runner's GPU)
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMF_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$arch"
cmake --build build/gpu -j "$jobs"
if ! nvidia-smi >/dev/null 2>&1; then
  echo "ci/gpu.sh: no GPU visible (nvidia-smi failed); the cuda tests will report skipped" >&2
fi
ctest --test-dir build/gpu -L cuda --output-on-failure "$@"
