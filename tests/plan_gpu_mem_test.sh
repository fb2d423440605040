#!/usr/bin/env bash
# plan_gpu_mem_test.sh MEMFIX: `memfix plan --gpu-mem SIZE` with a malformed SIZE exits 2, prints
# nothing on standard output, and says on standard error what is wrong with the value.
set -uo pipefail
memfix=$1
failed=0
check() { # check VALUE MESSAGE
  local out err rc
  err=$("$memfix" plan --preset 000 --gpu-mem "$1" 2>&1 >/dev/null)
  out=$("$memfix" plan --preset 000 --gpu-mem "$1" 2>/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || [ -n "$out" ] || [[ "$err" != *"$2"* ]]; then
    echo "FAIL --gpu-mem '$1': exit $rc, want 2 and \"$2\"; stderr: $err; stdout: ${out:0:200}" >&2
    failed=1
  else
    echo "ok   --gpu-mem '$1': $err"
  fi
}
check 80XB "memfix plan: --gpu-mem: '80XB' has an unknown unit 'XB'"
check eighty "memfix plan: --gpu-mem: 'eighty' is not a size"
check -80GB "memfix plan: --gpu-mem: '-80GB' is not a size"
check 0GB "memfix plan: --gpu-mem: the size '0GB' is zero bytes"
check 1.5 "memfix plan: --gpu-mem: '1.5' is not a whole number of bytes"
check 80GBs "memfix plan: --gpu-mem: '80GBs' has an unknown unit 'GBs'"
check 1.1234567GB "memfix plan: --gpu-mem: '1.1234567GB' has more than 6 decimals"
check 99999999999999999999 "memfix plan: --gpu-mem: the size '99999999999999999999' does not fit in"
check "" "memfix plan: --gpu-mem needs a size"
exit $failed
