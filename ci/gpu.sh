#!/usr/bin/env bash
# What a GPU runner calls: build for this runner's GPU architecture, run the
# cuda-labelled tests (the same suites as host mode, on the device backend), in
# parallel with one GPU per test when the runner has several, then run them
# again under compute-sanitizer (memcheck, racecheck, synccheck) when it is
# installed.
#
# Usage: ci/gpu.sh [--dry-run] [extra ctest args for the plain cuda pass]
#   --dry-run  build and run nothing: print the architecture the build would use, the GPUs and the
#              CTest resource spec the plain pass would use, then, from the already configured and
#              built MF_GPU_BUILD_DIR, every cuda-labelled test's command, working directory,
#              environment and resource groups (what the plain pass and the sanitizer pass run).
#              Exit status 1 if there is no cuda test, one has no command (its executable was not
#              built) or one does not ask for a GPU of its own (RESOURCE_GROUPS gpus:1); needs no GPU.
#
# The plain pass runs `ctest -L '^cuda$' -j G --resource-spec-file $MF_GPU_BUILD_DIR/gpus.json`
# with G the number of GPUs: every cuda test asks for one GPU slot (tests/CMakeLists.txt), so CTest
# runs G of them at a time, each on a GPU of its own, which the test process takes as its
# CUDA_VISIBLE_DEVICES (mf_use_ctest_gpu, memfix/memfix.h). The spec lists the GPUs by the ids
# CUDA_VISIBLE_DEVICES can name: the runner's own CUDA_VISIBLE_DEVICES entries when it is set,
# else the indices 0..G-1 of nvidia-smi's GPUs. The sanitizer pass runs one test at a time.
#
# Environment:
#   MF_CUDA_ARCH        CMAKE_CUDA_ARCHITECTURES (default: the runner's GPUs' compute capabilities
#                       from nvidia-smi, e.g. 90, which adds the wgmma kernels' sm_90a code; the
#                       script stops with an error when that query fails; e.g. 80, 90, "80;90")
#   MF_ALLOW_NO_GPU     1: build and run with no GPU visible (the cuda tests report skipped);
#                       otherwise no visible GPU is an error (needs MF_CUDA_ARCH)
#   MF_GPU_BUILD_DIR    build directory (default build/gpu)
#   MF_GPU_COUNT        how many GPUs the plain pass uses at a time (default: all visible ones, the
#                       entries of CUDA_VISIBLE_DEVICES when set, else nvidia-smi's GPUs); with
#                       --dry-run and no GPU, that many fake GPUs 0..N-1 (default 1)
#   MF_SANITIZER_TOOLS  compute-sanitizer tools to run (default "memcheck racecheck synccheck";
#                       empty: skip the sanitizer pass)
#   MF_SANITIZER_TIMEOUT  seconds per test and tool under the sanitizer (default 3600)
#   MF_JOBS             parallel build jobs (default: nproc)
#   CUDA_MODULE_LOADING  exported as EAGER unless set: every module loads when the CUDA context is
#                       created, not inside a measured call (memfix verify's hidden-allocation check)
#   CUDA_DEVICE_ORDER   exported as PCI_BUS_ID unless set: CUDA numbers the GPUs as nvidia-smi does
# Dependencies: checked here (cmake >= 3.25, ninja, a C and C++ compiler, pkg-config, Check,
# cJSON, OpenBLAS, nvcc); only missing ones are installed with apt-get, and only as root or with
# passwordless sudo, else the script lists them and stops.
# Exit status: non-zero if a dependency is missing, the architecture query fails, a build step,
# a cuda test or a sanitizer run fails; a test that exits with its skip code (77, or 3 for
# memfix verify: no device) under the sanitizer is counted as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"

dry_run=0
ctest_args=()
for a in "$@"; do
  case "$a" in
    --dry-run) dry_run=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) ctest_args+=("$a") ;;
  esac
done

jobs="${MF_JOBS:-$(nproc)}"
build="${MF_GPU_BUILD_DIR:-build/gpu}"
tools="${MF_SANITIZER_TOOLS-memcheck racecheck synccheck}"
san_timeout="${MF_SANITIZER_TIMEOUT:-3600}"
export CUDA_MODULE_LOADING="${CUDA_MODULE_LOADING:-EAGER}"
# CUDA numbers the GPUs as nvidia-smi does (the resource spec's ids are nvidia-smi's indices)
export CUDA_DEVICE_ORDER="${CUDA_DEVICE_ORDER:-PCI_BUS_ID}"

step() { printf '\n==== %s ====\n' "$*"; }
die() { echo "ci/gpu.sh: error: $*" >&2; exit 2; }

# ---- dependencies: what the build needs, nothing more (not ci/setup.sh's coverage and plot tools) ----
missing=()
need() { # need <debian package> <check command...>
  local pkg=$1; shift
  if ! "$@" >/dev/null 2>&1; then
    [[ " ${missing[*]-} " == *" $pkg "* ]] || missing+=("$pkg")
  fi
}
cmake_new_enough() {
  local v
  v="$(cmake --version | sed -n '1s/[^0-9]*\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')"
  read -r major minor <<< "$v"
  [ "${major:-0}" -gt 3 ] || { [ "${major:-0}" -eq 3 ] && [ "${minor:-0}" -ge 25 ]; }
}
need cmake cmake_new_enough
need ninja-build command -v ninja
need build-essential command -v cc
need build-essential command -v c++
need pkg-config command -v pkg-config
need check pkg-config --exists check
need libcjson-dev pkg-config --exists libcjson
need libopenblas-dev pkg-config --exists openblas
if ((${#missing[@]})); then
  if ((dry_run)); then
    echo "ci/gpu.sh: missing (a real run installs them or stops): ${missing[*]}" >&2
  else
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
        die "missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root"
      fi
    fi
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get to install them"
    echo "ci/gpu.sh: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi
if ! command -v nvcc >/dev/null 2>&1; then
  if ((dry_run)); then echo "ci/gpu.sh: nvcc not found (a real run stops here)" >&2
  else die "nvcc not found (on PATH or /usr/local/cuda/bin): install the CUDA toolkit"; fi
fi

# ---- the architecture: the visible GPUs' compute capabilities, or an error ----------------------------
have_gpu=0
gpu_caps=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  have_gpu=1
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader || true
  # 9.0 -> 90; a driver too old for the compute_cap field answers with an error or "[N/A]"
  gpu_caps="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>&1 | tr -d ' .' | sort -u |
              paste -sd';' || true)"
  [[ "$gpu_caps" =~ ^[0-9]+(\;[0-9]+)*$ ]] || gpu_caps=""
fi
if [ -n "${MF_CUDA_ARCH:-}" ]; then
  arch="$MF_CUDA_ARCH"
elif ((have_gpu)) && [ -n "$gpu_caps" ]; then
  arch="$gpu_caps"
elif ((have_gpu)); then
  arch=""
  msg="nvidia-smi sees a GPU but its compute-capability query failed; set MF_CUDA_ARCH (e.g. 80 for an \
A100, 90 for an H100) instead of guessing"
  if ((dry_run)); then echo "ci/gpu.sh: $msg" >&2; else die "$msg"; fi
else
  arch=""
  msg="no GPU visible (nvidia-smi missing or failing): cannot query the compute capability; set MF_CUDA_ARCH \
and MF_ALLOW_NO_GPU=1 to build and run anyway (the cuda tests then report skipped)"
  if ((dry_run)); then echo "ci/gpu.sh: $msg" >&2; else die "$msg"; fi
fi
# ---- the GPUs the plain pass runs tests on, one test per GPU at a time: a CTest resource spec ---------
gpu_ids=()
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=',' read -r -a gpu_ids <<< "$CUDA_VISIBLE_DEVICES"
elif ((have_gpu)); then
  mapfile -t gpu_ids < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ')
fi
if [ -n "${MF_GPU_COUNT:-}" ]; then
  [[ "$MF_GPU_COUNT" =~ ^[1-9][0-9]*$ ]] || die "MF_GPU_COUNT='$MF_GPU_COUNT' is not a count of GPUs (1, 2, ...)"
  if ((${#gpu_ids[@]} == 0)); then
    ((dry_run)) || die "MF_GPU_COUNT=$MF_GPU_COUNT but no GPU is visible"
    for ((g = 0; g < MF_GPU_COUNT; g++)); do gpu_ids+=("$g"); done # fake GPUs for a dry run
  elif ((MF_GPU_COUNT > ${#gpu_ids[@]})); then
    die "MF_GPU_COUNT=$MF_GPU_COUNT but only ${#gpu_ids[@]} GPUs are visible (${gpu_ids[*]})"
  else
    gpu_ids=("${gpu_ids[@]:0:MF_GPU_COUNT}")
  fi
fi
((${#gpu_ids[@]} > 0)) || gpu_ids=(0) # no GPU: one slot (a run with MF_ALLOW_NO_GPU, a dry run)
for id in "${gpu_ids[@]}"; do
  [[ "$id" =~ ^[A-Za-z0-9._-]+$ ]] || die "GPU id '$id' (CUDA_VISIBLE_DEVICES or nvidia-smi) is not an index or UUID"
done
n_gpus=${#gpu_ids[@]}
# resource_spec FILE: CTest's resource spec (version 1.0), one slot per GPU
resource_spec() {
  local sep="" id
  {
    printf '{"version": {"major": 1, "minor": 0}, "local": [{"gpus": ['
    for id in "${gpu_ids[@]}"; do printf '%s{"id": "%s", "slots": 1}' "$sep" "$id"; sep=", "; done
    printf ']}]}\n'
  } > "$1"
}

if ((!have_gpu && !dry_run)) && [ "${MF_ALLOW_NO_GPU:-0}" != 1 ]; then
  die "no GPU visible (nvidia-smi missing or failing); MF_ALLOW_NO_GPU=1 builds and runs anyway (the cuda tests report skipped)"
fi
# A cc 9.0 device runs the wgmma kernels only from sm_90a code: src/CMakeLists.txt adds it when the
# architecture list has 90 in any form (90, 90-real, 90a, native on that device, all, all-major).
if [[ ";$gpu_caps;" == *";90;"* ]] && [ -n "$arch" ] &&
   ! [[ "$arch" =~ (^|\;)(90|native|all|all-major) ]]; then
  echo "ci/gpu.sh: warning: a cc 9.0 GPU but MF_CUDA_ARCH='$arch' builds no sm_90 code: the wgmma paths" \
       "are not built and the tests that force them report skipped" >&2
fi

# ---- each cuda test's command, working directory and environment, from ctest itself -----------------
# list_tests <output tsv> [ctest filter args]: one line per test (ci/ctest_commands.cmake)
list_tests() {
  local out=$1; shift
  ctest --test-dir "$build" -L '^cuda$' "$@" --show-only=json-v1 > "$out.json"
  cmake -DJSON="$out.json" -DOUT="$out" -P ci/ctest_commands.cmake
}
# split_line <line>: fields=(name cwd envs argv skip_rc labels); consecutive tabs are empty fields
# (IFS=$'\t' read would merge them: tab is IFS white space)
split_line() {
  local rest=$1
  fields=()
  while [[ "$rest" == *$'\t'* ]]; do
    fields+=("${rest%%$'\t'*}")
    rest="${rest#*$'\t'}"
  done
  fields+=("$rest")
}

if ((dry_run)); then
  step "dry run: nothing is built or run"
  echo "architecture: ${arch:-(none: a real run stops, see above)} (MF_CUDA_ARCH, else nvidia-smi's compute_cap)"
  echo "configure:    cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMF_CUDA=ON" \
       "-DCMAKE_CUDA_ARCHITECTURES='${arch:-?}'"
  echo "gpus:         $n_gpus (${gpu_ids[*]}): one cuda test per GPU at a time"
  echo "plain pass:   ctest --test-dir $build -L '^cuda\$' -j $n_gpus --resource-spec-file $build/gpus.json" \
       "--output-on-failure ${ctest_args[*]-}"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  resource_spec "$tmp/gpus.json"
  echo "resource spec ($build/gpus.json): $(cat "$tmp/gpus.json")"
  echo "sanitizer:    ${tools:-(none)}: compute-sanitizer --tool T --error-exitcode 86 --print-limit 100" \
       "<command>, in the test's directory and environment + CK_TIMEOUT_MULTIPLIER=20 (not the slow label)"
  echo "environment:  CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING CUDA_DEVICE_ORDER=$CUDA_DEVICE_ORDER (every test)"
  [ -f "$build/CTestTestfile.cmake" ] || die "$build is not a configured build (MF_GPU_BUILD_DIR)"
  list_tests "$tmp/cuda.tsv"
  n=0 n_bad=0 n_shared=0
  while IFS= read -r line; do
    split_line "$line"
    n=$((n + 1))
    name=${fields[0]} cwd=${fields[1]-} envs=${fields[2]-} argv=${fields[3]-} skip=${fields[4]-} labels=${fields[5]-}
    groups=${fields[6]-}
    printf '\n%s%s\n' "$name" "$([[ "$labels" == *slow* ]] && echo ' (slow: plain pass only)')"
    printf '  directory:   %s\n' "$cwd"
    printf '  environment: %s\n' "${envs//$'\x1f'/ }"
    if [ -z "$argv" ]; then
      printf '  command:     (none: executable not built)\n'
      n_bad=$((n_bad + 1))
    else
      printf '  command:     %s\n' "${argv//$'\x1f'/ }"
    fi
    printf '  skip code:   %s\n' "${skip:-(none)}"
    printf '  resources:   %s\n' "${groups:-(none: would share a GPU with the tests running beside it)}"
    [ "$groups" = "gpus:1" ] || n_shared=$((n_shared + 1))
  done < "$tmp/cuda.tsv"
  echo
  echo "ci/gpu.sh --dry-run: $n cuda tests, $n_bad without a command, $n_shared without a GPU of their own" \
       "(RESOURCE_GROUPS gpus:1)"
  ((n > 0)) || { echo "ci/gpu.sh --dry-run: no cuda-labelled test in $build" >&2; exit 1; }
  ((n_bad == 0 && n_shared == 0)) || exit 1
  exit 0
fi

step "configure and build for CUDA architecture '$arch' ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMF_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$arch"
cmake --build "$build" -j "$jobs"

step "cuda-labelled tests ($n_gpus GPU(s): ${gpu_ids[*]}, one test per GPU at a time)"
# The label is a regular expression: anchor it (cudahost's own tests carry 'cudahost').
resource_spec "$build/gpus.json"
ctest --test-dir "$build" -L '^cuda$' -j "$n_gpus" --resource-spec-file "$build/gpus.json" --output-on-failure \
      "${ctest_args[@]}"

# ---- bench: achieved rates and the fraction of the device's peak ------------------------
# Every op's sweep on the device: FLOPs and minimum bytes per call (the op's
# formula), achieved TFLOP/s and GB/s, and their fraction of the device's dense
# bf16 tensor-core peak and HBM bandwidth (memfix bench --help). MF_BENCH_ARGS
# adds options (e.g. "--op attention --sizes 1024,2048"); a failed row fails CI.
if [ "$have_gpu" -eq 1 ]; then
  step "memfix bench on the device (fraction of peak)"
  # shellcheck disable=SC2086
  "$build/bin/memfix" bench --backend cuda --reps 5 ${MF_BENCH_ARGS:-} --csv --out "$build/bench.csv"
  # ok rows only: their message is empty and the quoted shape has no comma, so -F, is exact
  awk -F, 'NR == 1 { next } $16 == "ok" {
      printf "%-17s %-15s %6s %10s %12s %10s %9s %10s %9s\n", $1, $2, $8, $11, $18, $20, $21, $24, $25 }
    BEGIN { printf "%-17s %-15s %6s %10s %12s %10s %9s %10s %9s\n", "op", "variant", "size", "opt_ms",
            "flops", "TFLOP/s", "GB/s", "frac_flops", "frac_bw" }' "$build/bench.csv"
fi

# ---- the performance targets at their full shapes ---------------------------------------
# memfix bench --targets: each target's optimized call at its full shape (the fused
# cross-entropy fwd+bwd at seed 000's shape within 1.5x of the 3-GEMM floor; the NSA forward at
# S = 65536 at least 6x faster than memfix's dense attention), its check after timing, and
# whether the goal is met. A target that fails to run or whose check fails fails CI; an unmet
# goal is reported (met = no), not an error: these are goals, not tests.
if [ "$have_gpu" -eq 1 ]; then
  step "memfix bench --targets (performance goals)"
  "$build/bin/memfix" bench --backend cuda --targets --reps 3 --csv --out "$build/targets.csv"
  awk -F, 'NR == 1 { next } { n = split($0, q, "\""); rest = q[3]; split(rest, c, ",");
      printf "%-9s %-14s %-8s goal %-4s opt_ms %-10s baseline_ms %-10s floor_ms %-10s ratio %-8s met %-4s %s\n",
             $1, $2, c[2], c[3], c[4], c[5], c[6], c[8], c[9], c[10] }' "$build/targets.csv"
fi

# ---- compute-sanitizer ---------------------------------------------------------------
sanitizer="$(command -v compute-sanitizer || true)"
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [ -z "$sanitizer" ] && [ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ]; then
    sanitizer="$d/bin/compute-sanitizer"
  fi
done
if [ -z "$tools" ]; then
  echo "ci/gpu.sh: MF_SANITIZER_TOOLS is empty: sanitizer pass skipped"; exit 0
fi
if [ -z "$sanitizer" ]; then
  echo "ci/gpu.sh: compute-sanitizer not installed: sanitizer pass skipped"; exit 0
fi
if [ "$have_gpu" -eq 0 ]; then
  echo "ci/gpu.sh: no GPU: sanitizer pass skipped"; exit 0
fi

# The slow label is left out: the tools run the kernels 10-100x slower.
list="$build/cuda-tests.tsv"
list_tests "$list" -LE '^slow$'

failed=()
n_pass=0 n_skip=0
for tool in $tools; do
  step "compute-sanitizer --tool $tool"
  log_dir="$build/sanitizer/$tool"
  mkdir -p "$log_dir"
  while IFS= read -r line; do
    split_line "$line"
    name=${fields[0]} cwd=${fields[1]-.} envs=${fields[2]-} argv=${fields[3]-} skip=${fields[4]-77}
    IFS=$'\x1f' read -r -a env_arr <<< "$envs"
    IFS=$'\x1f' read -r -a cmd_arr <<< "$argv"
    if ((${#cmd_arr[@]} == 0)); then
      echo "  $name: no executable (not built)"; failed+=("$tool:$name"); continue
    fi
    log="$log_dir/$name.log"
    rc=0
    # --error-exitcode: any sanitizer report fails the run even when the test
    # itself passes; Check's timeouts are stretched (the tools are slow).
    (cd "$cwd" && env "${env_arr[@]}" CK_TIMEOUT_MULTIPLIER=20 \
       timeout "$san_timeout" "$sanitizer" --tool "$tool" --error-exitcode 86 \
       --print-limit 100 "${cmd_arr[@]}") < /dev/null > "$log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" = "${skip:-77}" ]; then
      echo "  $name: skipped (exit $rc)"; n_skip=$((n_skip + 1)); continue
    fi
    case "$rc" in
      0)  echo "  $name: ok"; n_pass=$((n_pass + 1)) ;;
      86) echo "  $name: $tool REPORTED ERRORS (log: $log)"; failed+=("$tool:$name"); tail -n 40 "$log" ;;
      124) echo "  $name: timed out after ${san_timeout}s (log: $log)"; failed+=("$tool:$name") ;;
      *)  echo "  $name: FAILED, exit $rc (log: $log)"; failed+=("$tool:$name"); tail -n 40 "$log" ;;
    esac
  done < "$list"
done

echo
echo "compute-sanitizer: $n_pass passed, $n_skip skipped, ${#failed[@]} failed (tools: $tools)"
if ((${#failed[@]})); then
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
