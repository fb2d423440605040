#!/usr/bin/env bash
# The whole test suite: the default build (plain `cmake -S . -B build/default`, CMake's
# default generator; host execution mode + references, and every .cu compiled and linked
# by nvcc for sm_80 and sm_90 when nvcc exists) and its tests through the default preset,
# then host mode again built with clang (the second host compiler) under ThreadSanitizer,
# then under AddressSanitizer with line coverage from the same build and run (ci/coverage.sh: fails below 90% of reference/,
# optimized/, src/core/, src/ops/, src/testbed/, src/plan/).
# Tests that need a GPU are reported skipped (exit 77) on machines without one.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
jobs="${MF_JOBS:-$(nproc)}"
export CTEST_OUTPUT_ON_FAILURE=1

# Each step's header says how long the run has taken so far (SECONDS: since the script began),
# so a CI log shows where the time goes.
step() { printf '\n==== %s (at %dm%02ds) ====\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

# The default build is the plain one: `cmake -S . -B build/default` with no preset and CMake's default
# generator (Unix Makefiles), as a new user's first build. The `default` preset names no generator and
# sets only the values plain CMake defaults to (RelWithDebInfo, tests on), so configuring it over the
# same tree changes nothing: the build after it must have nothing to do (checked), and its test preset
# runs the tests. One build serves both (a second,
# Makefiles-only build would cost 5 minutes more). Ninja builds the asan, tsan and coverage presets
# below (without nvcc) and ci/gpu.sh's tree (with it).
step "default build (plain cmake -S . -B build/default, default generator)"
cmake -S . -B build/default
cmake --build build/default -j "$jobs"
step "default preset over the same tree (must not rebuild anything)"
cmake --preset default
rebuild="$(cmake --build --preset default -j "$jobs" 2>&1)" || { printf '%s\n' "$rebuild"; exit 1; }
if printf '%s\n' "$rebuild" | grep -E '(Building|Linking) ' >/dev/null; then
  printf '%s\n' "$rebuild"
  echo "ci/test.sh: the default preset rebuilt targets of the plain build: it no longer matches plain cmake" >&2
  exit 1
fi
step "default tests (all labels; cuda-labelled tests skip without a GPU)"
ctest --preset default -j "$jobs"

# The ThreadSanitizer leg is built with clang, the second host compiler (GCC builds the default
# and the ASan/coverage legs): host mode must compute what the source says whatever the compiler,
# so the cudahost tests and every op's equivalence suite run with both, and a difference between
# GCC and clang fails here rather than for a user (cudahost/README.md, "Host-compiler probes").
step "clang tsan build (host execution mode, clang)"
cmake --preset clang-tsan -DMF_VERIFY_EXAMPLES=OFF
cmake --build --preset clang-tsan -j "$jobs"
step "clang tsan tests (label host)"
# TSan looks for races between the worker threads that run a kernel's blocks: the
# cudahost runtime's tests and each op's forward-order equivalence suite run every kernel.
# Left to the default and ASan legs (10-30x slower under TSan, and no new thread
# interleavings to see; the reverse-order ones to the default leg): the reverse-order and
# memory suites (the same kernels again),
# memfix verify, bench and the registry walk (they run the same kernels once more, in
# worker processes; ~40 min of TSan in all). So the leg builds no example candidates either
# (MF_VERIFY_EXAMPLES=OFF: 71 host-mode compiles that only verify's tests use).
ctest --preset clang-tsan -j "$jobs" -L host -LE 'slow|memory|reverse' -E '^test_(verify|bench|registry)'

# AddressSanitizer and line coverage share one build and one run (two -O0
# builds running the same tests would cost 7 minutes more). Every test but the slow and cuda labels, and but
# the ops' reverse-order registrations (the same kernels and host code on the same inputs; an
# out-of-bounds access does not depend on the order of a block's threads except through a race,
# which the default leg's reverse-order tests and TSan look for). cudahost's own reverse-order tests
# stay: they are what reaches its reverse-order code. Coverage fails below 90 %.
step "asan + coverage (ci/coverage.sh with MF_COVERAGE_SANITIZER=address)"
MF_JOBS="$jobs" MF_COVERAGE_SANITIZER=address ci/coverage.sh -E '^test_.*_reverse[.]host$'
step "done"
