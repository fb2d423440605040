#!/usr/bin/env bash
# gpu_resource_test.sh BUILD PROBE: ci/gpu.sh's parallel mode, as far as it goes without a GPU.
#  1. ci/gpu.sh --dry-run on BUILD with three fake GPUs (MF_GPU_COUNT=3): its resource spec lists
#     them, the plain pass runs `ctest -j 3 --resource-spec-file`, and every cuda-labelled test of
#     BUILD asks for a GPU of its own (RESOURCE_GROUPS gpus:1).
#  2. CTest itself with that spec, in a scratch test directory: six cuda runs of PROBE (a test
#     program of the harness, MF_TEST_BACKEND=cuda, RESOURCE_GROUPS gpus:1) at -j 6. CTest must
#     accept the spec and give each run one of the three GPUs, which the harness takes as its
#     CUDA_VISIBLE_DEVICES (it says so); without a device each run then skips (exit 77).
set -euo pipefail
build=$1 probe=$2
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/mf_gpu_resource.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "gpu_resource_test: $*" >&2; exit 1; }

MF_GPU_BUILD_DIR="$build" MF_GPU_COUNT=3 "$root/ci/gpu.sh" --dry-run > "$tmp/dry.txt" 2>&1 ||
  { cat "$tmp/dry.txt"; fail "ci/gpu.sh --dry-run failed"; }
grep -q "^gpus: *3 (0 1 2): one cuda test per GPU at a time" "$tmp/dry.txt" || fail "no line for the 3 GPUs"
grep -q -- "-L '^cuda\$' -j 3 --resource-spec-file $build/gpus.json" "$tmp/dry.txt" ||
  fail "the plain pass does not run 3 at a time with the resource spec"
grep -Eq "^ci/gpu.sh --dry-run: [1-9][0-9]* cuda tests, 0 without a command, 0 without a GPU of their own" \
  "$tmp/dry.txt" || { tail -n 3 "$tmp/dry.txt"; fail "a cuda test without RESOURCE_GROUPS gpus:1"; }
sed -n 's/^resource spec ([^)]*): //p' "$tmp/dry.txt" > "$tmp/gpus.json"
grep -q '"gpus": \[{"id": "0", "slots": 1}, {"id": "1", "slots": 1}, {"id": "2", "slots": 1}\]' "$tmp/gpus.json" ||
  fail "unexpected resource spec: $(cat "$tmp/gpus.json")"
echo "gpu_resource_test: ci/gpu.sh --dry-run: 3 fake GPUs, -j 3, every cuda test asks for one"

mkdir "$tmp/ctest"
for i in 1 2 3 4 5 6; do
  cat >> "$tmp/ctest/CTestTestfile.cmake" <<CMAKE
add_test(probe_$i "$probe")
set_tests_properties(probe_$i PROPERTIES ENVIRONMENT "MF_TEST_BACKEND=cuda" LABELS cuda
                     RESOURCE_GROUPS "gpus:1" SKIP_RETURN_CODE 77 TIMEOUT 120)
CMAKE
done
(cd "$tmp/ctest" && ctest -j 6 --resource-spec-file "$tmp/gpus.json" -V) > "$tmp/ctest.txt" 2>&1 ||
  { tail -n 40 "$tmp/ctest.txt"; fail "ctest with the resource spec failed"; }
n=$(grep -cE "mf_test_run: CUDA_VISIBLE_DEVICES=[012] \(CTest's resource allocation\)" "$tmp/ctest.txt" || true)
[ "$n" -eq 6 ] || { tail -n 40 "$tmp/ctest.txt"; fail "$n of 6 runs took a GPU of the spec as CUDA_VISIBLE_DEVICES"; }
grep -q "100% tests passed" "$tmp/ctest.txt" || { tail -n 20 "$tmp/ctest.txt"; fail "a probe run failed"; }
echo "gpu_resource_test: ctest --resource-spec-file: 6 runs, each on one of 3 GPUs"
