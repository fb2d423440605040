#!/usr/bin/env bash
# Line coverage of the C code and of the host-mode kernels (gcov + lcov).
#
# Builds the `coverage` preset (Debug, --coverage -fprofile-update=atomic -O0; -Og with a sanitizer),
# runs the suite except the `slow` and `cuda` labels, captures with lcov, writes
# an HTML report with genhtml to <build>/html and prints a one-line summary.
# Fails when line coverage of the gated sources (reference/, optimized/,
# src/core/, src/ops/, src/testbed/, src/plan/) is below MF_COVERAGE_MIN percent (default 90), and then
# lists the files that drag it down.
#
# Host-mode kernels: cudahost rewrites optimized/*.cu into C++ that keeps #line
# directives to the original .cu, so gcov reports optimized/*.cu lines.
#
# The build uses MF_CUDA=OFF: the nvcc-compiled objects carry no coverage
# instrumentation anyway, and this drops the `#ifdef MF_HAVE_CUDA` dispatch
# branches of src/ops and src/core from the count (they only run on a GPU);
# MF_COVERAGE_CUDA=ON keeps them (e.g. on a GPU runner, with MF_COVERAGE_LABELS).
#
# MF_COVERAGE_SANITIZER=address builds with AddressSanitizer as well: one build and one test run serve
# as ci/test.sh's ASan leg and its coverage (instead of two builds running the same tests). memfix
# verify does not measure a sanitized worker's memory from outside it (its RSS holds the sanitizer's
# shadow), so those lines of src/testbed/verify_isolation.c read uncovered in that report; the default leg runs
# them, and this script without MF_COVERAGE_SANITIZER reports them.
#
# Environment:
#   MF_COVERAGE_SANITIZER  '' (default) or address: build with AddressSanitizer too
#   MF_COVERAGE_BUILD_DIR  build directory (default build/coverage, the preset's; build/coverage-address
#                          with MF_COVERAGE_SANITIZER=address)
#   MF_COVERAGE_MIN        minimum line coverage in percent of the gated sources (90)
#   MF_COVERAGE_CUDA       OFF (default) or ON: build the CUDA backend too
#   MF_COVERAGE_LABELS     ctest label exclusion regex (default '^(slow|cuda)$')
#   MF_JOBS                parallel build and test jobs (default: nproc)
# Usage: ci/coverage.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
jobs="${MF_JOBS:-$(nproc)}"
san="${MF_COVERAGE_SANITIZER:-}"
case "$san" in
  '' | address) ;;
  *) echo "ci/coverage.sh: MF_COVERAGE_SANITIZER must be empty or 'address' (got '$san')" >&2; exit 2 ;;
esac
build="${MF_COVERAGE_BUILD_DIR:-build/coverage${san:+-$san}}"
min="${MF_COVERAGE_MIN:-90}"
cuda="${MF_COVERAGE_CUDA:-OFF}"
exclude_labels="${MF_COVERAGE_LABELS:-^(slow|cuda)$}"
gated=(reference optimized src/core src/ops src/testbed src/plan)

for tool in lcov genhtml; do
  command -v "$tool" >/dev/null 2>&1 || { echo "ci/coverage.sh: '$tool' not found (ci/setup.sh installs lcov)" >&2; exit 2; }
done
# gcov must match the compiler that wrote the .gcno files.
cc="${CC:-gcc}"
gcov_tool=gcov
major="$("$cc" -dumpversion 2>/dev/null | cut -d. -f1 || true)"
if [ -n "$major" ] && command -v "gcov-$major" >/dev/null 2>&1; then gcov_tool="gcov-$major"; fi

step() { printf '\n==== %s ====\n' "$*"; }

step "coverage build ($build, MF_CUDA=$cuda${san:+, MF_SANITIZER=$san})"
cmake --preset coverage -B "$build" -DMF_CUDA="$cuda" -DMF_SANITIZER="$san"
cmake --build "$build" -j "$jobs"

step "coverage tests (excluding labels: $exclude_labels)"
lcov --quiet --zerocounters --directory "$build"
# One host-mode worker thread per test (ctest -j still runs tests side by side): with two, both
# workers run the same kernel code and contend for its atomic gcov counters, which more than
# doubled the CPU time (test_nsa_equiv's fused case: 149 s of CPU with 2 workers, 65 s with 1, same
# coverage). Set CUDAHOST_WORKERS to override.
export CUDAHOST_WORKERS="${CUDAHOST_WORKERS:-1}"
test_rc=0
ctest --test-dir "$build" -j "$jobs" -LE "$exclude_labels" --output-on-failure "$@" || test_rc=$?

step "lcov capture and HTML report"
info="$build/coverage.info"
lcov --quiet --capture --directory "$build" --gcov-tool "$gcov_tool" --output-file "$build/coverage.raw.info" \
     --rc lcov_branch_coverage=0 2> >(grep -v -e 'source file is newer' -e 'displayed only once' -e 'redefined at' >&2)
# Project sources only (not the build tree's generated files, tests, or system headers).
lcov --quiet --extract "$build/coverage.raw.info" \
     "$root/reference/*" "$root/optimized/*" "$root/src/*" "$root/tools/*" "$root/cudahost/src/*" \
     "$root/cudahost/include/*" --output-file "$info"
gate_patterns=()
for d in "${gated[@]}"; do gate_patterns+=("$root/$d/*"); done
lcov --quiet --extract "$info" "${gate_patterns[@]}" --output-file "$build/coverage.gated.info"
rm -rf "$build/html"
genhtml --quiet --prefix "$root" --title "memfix host-mode coverage${san:+ ($san sanitizer build)}" --legend \
        --output-directory "$build/html" "$info"

# Lines found / hit per file from a tracefile: "file LF LH".
per_file() {
  awk -v root="$root/" '/^SF:/ { f = substr($0, 4); sub("^" root, "", f) }
                        /^LF:/ { lf[f] += substr($0, 4) }
                        /^LH:/ { lh[f] += substr($0, 4) }
                        END { for (f in lf) print f, lf[f], lh[f] }' "$1"
}
pct() { awk -v h="$1" -v f="$2" 'BEGIN { printf "%.1f", f ? 100.0 * h / f : 0 }'; }

# Per-area table, then the one-line summary.
read -r all_lf all_lh < <(per_file "$info" | awk '{ lf += $2; lh += $3 } END { print lf + 0, lh + 0 }')
read -r g_lf g_lh < <(per_file "$build/coverage.gated.info" | awk '{ lf += $2; lh += $3 } END { print lf + 0, lh + 0 }')
echo
for d in "${gated[@]}" src/backend tools cudahost; do
  read -r lf lh < <(per_file "$info" | awk -v d="$d/" 'index($1, d) == 1 { lf += $2; lh += $3 } END { print lf + 0, lh + 0 }')
  gate=""; for g in "${gated[@]}"; do [ "$g" = "$d" ] && gate=" (gated)"; done
  printf '  %-14s %6s%%  %5d of %5d lines%s\n' "$d/" "$(pct "$lh" "$lf")" "$lh" "$lf" "$gate"
done
g_pct="$(pct "$g_lh" "$g_lf")"
status=ok
awk -v p="$g_pct" -v m="$min" 'BEGIN { exit !(p + 0 < m + 0) }' && status=FAIL
echo
echo "coverage: ${status}: ${g_pct}% of lines in ${gated[*]} (${g_lh}/${g_lf}; minimum ${min}%);" \
     "all project sources $(pct "$all_lh" "$all_lf")%; report $build/html/index.html${san:+ ($san sanitizer build)}"

if [ "$status" = FAIL ]; then
  echo "ci/coverage.sh: gated line coverage ${g_pct}% < ${min}%; files with the most uncovered lines:" >&2
  per_file "$build/coverage.gated.info" |
    awk -v tot="$g_lf" '{ miss = $2 - $3; if (miss > 0) printf "%d %s %d %d %.1f\n", miss, $1, $3, $2, 100.0 * miss / tot }' |
    sort -rn | head -10 |
    awk '{ printf "  %-34s %5d uncovered (%d of %d hit): costs %.1f points\n", $2, $1, $3, $4, $5 }' >&2
fi
if [ "$test_rc" -ne 0 ]; then
  echo "ci/coverage.sh: tests failed (ctest exit $test_rc)" >&2
  exit "$test_rc"
fi
[ "$status" = ok ]
