#!/usr/bin/env bash
# Installs what memfix needs on a Debian machine, only what is missing.
# The CUDA toolkit (nvcc, cuBLAS) is expected at /usr/local/cuda when present;
# without it memfix builds the host backend and references only.
set -euo pipefail

# clang and its sanitizer runtimes: the second host compiler (the clang-tsan leg of ci/test.sh)
pkgs=(build-essential cmake ninja-build pkg-config check libcjson-dev libopenblas-dev lcov gnuplot-nox clang-format
  clang libclang-rt-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "ci/setup.sh: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "ci/setup.sh: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
    fi
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "ci/setup.sh: all packages present"
fi

# Make nvcc visible when the toolkit is installed in the usual place.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "ci/setup.sh: note: nvcc is at /usr/local/cuda/bin (not on PATH); the CMake presets find it there"
fi
