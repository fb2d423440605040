#!/usr/bin/env bash
# Compiler launcher for the library's nvcc compiles (memfix_cuda's CUDA_COMPILER_LAUNCHER,
# src/CMakeLists.txt): runs the compile it is given with ptxas' verbose report (-Xptxas -v) and
# nvcc's intermediate files kept (-keep), so that the kernel resource budget tests
# (tests/resources.cmake, ci/check_kernel_resources.cmake -DPTXAS_LOG=...) and the PTX checks read
# what the build itself compiled instead of compiling every file again for each architecture.
#
#   nvcc_resource_log.sh <dir> <nvcc> <args...>
#
# For a source <stem>.cu it writes <dir>/<stem>.ptxas.log (ptxas' report for every architecture
# of the compile, each entry tagged "for 'sm_XX'") and keeps the intermediates in <dir>/<stem>.keep
# (the PTX of each architecture as <stem>.compute_XX.ptx). ptxas' report lines go to the log only;
# everything else nvcc prints (warnings, errors) still reaches the build's output. The compile's exit
# status is the launcher's.
set -u
if [[ $# -lt 2 ]]; then
  echo "nvcc_resource_log.sh: usage: nvcc_resource_log.sh <dir> <nvcc> <args...>" >&2
  exit 2
fi
dir="$1"
shift
src=""
for a in "$@"; do
  [[ "$a" == *.cu ]] && src="$a"
done
if [[ -z "$src" ]]; then
  exec "$@"  # not a .cu compile (nothing to record)
fi
stem="$(basename "$src" .cu)"
keep="$dir/$stem.keep"
log="$dir/$stem.ptxas.log"
mkdir -p "$dir"
rm -rf "$keep"
mkdir -p "$keep"
err="$(mktemp "$dir/$stem.stderr.XXXXXX")"
rc=0
"$@" -Xptxas -v -keep -keep-dir "$keep" 2>"$err" || rc=$?
# ptxas' report: its "ptxas info" lines and the indented stack/spill line under each function
grep -E '^ptxas info|^ +[0-9]+ bytes stack frame' "$err" >"$log" || true
grep -vE '^ptxas info|^ +[0-9]+ bytes stack frame' "$err" >&2 || true
rm -f "$err"
# the big preprocessed and front-end files are not needed: only the PTX is read again
find "$keep" -type f ! -name '*.ptx' -delete
exit "$rc"
