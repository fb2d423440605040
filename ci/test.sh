#!/usr/bin/env bash
# The whole test suite: the default build (host execution mode + references, and
# every .cu compiled and linked by nvcc for sm_80 and sm_90 when nvcc exists),
# a build with CMake's default generator (Unix Makefiles; build only),
# then host mode again under AddressSanitizer and ThreadSanitizer, then line
# coverage (ci/coverage.sh: fails below 90% of reference/, optimized/, src/core/,
# src/ops/).
# Tests that need a GPU are reported skipped (exit 77) on machines without one.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
jobs="${MF_JOBS:-$(nproc)}"
export CTEST_OUTPUT_ON_FAILURE=1

# Each step's header says how long the run has taken so far (SECONDS: since the script began),
# so a CI log shows where the time goes.
step() { printf '\n==== %s (at %dm%02ds) ====\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

step "default build"
cmake --preset default
cmake --build --preset default -j "$jobs"
step "default tests (all labels; cuda-labelled tests skip without a GPU)"
ctest --preset default -j "$jobs"

# Plain `cmake -S . -B build` (no preset) uses the default generator, Unix Makefiles, which
# computes language dialects differently from Ninja: configure and build once with it (no tests
# run; the default preset above already ran them).
step "default-generator build (Unix Makefiles, build/make)"
cmake -S . -B build/make -G "Unix Makefiles"
cmake --build build/make -j "$jobs"

for san in asan tsan; do
  step "$san build (host execution mode)"
  cmake --preset "$san"
  cmake --build --preset "$san" -j "$jobs"
  step "$san tests (label host)"
  if [ "$san" = tsan ]; then
    # TSan looks for races between the worker threads that run a kernel's blocks: the
    # cudahost runtime's tests and each op's forward-order equivalence suite run every kernel.
    # Left to the default and ASan legs (10-30x slower under TSan, and no new thread
    # interleavings to see): the reverse-order and memory suites (the same kernels again),
    # memfix verify, bench and the registry walk (they run the same kernels once more, in
    # worker processes; ~40 min of TSan in all).
    ctest --preset "$san" -j "$jobs" -L host -LE 'slow|memory|reverse' -E '^test_(verify|bench|registry)'
  else
    ctest --preset "$san" -j "$jobs" -L host -LE slow
  fi
done

step "coverage (fails below 90% line coverage of reference/, optimized/, src/core/, src/ops/)"
MF_JOBS="$jobs" ci/coverage.sh
step "done"
