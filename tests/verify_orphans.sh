#!/usr/bin/env bash
# memfix verify leaves nothing running however it is stopped: SIGTERM (`timeout`), SIGINT (Ctrl-C) and SIGKILL
# while a candidate hangs. Each run is marked by a variable in its environment, which its workers inherit; a second
# after verify is stopped, no process may carry the mark.
#   verify_orphans.sh MEMFIX LIB
set -u
memfix="$1"
lib="$2"
marked() { grep -lsz "^MF_ORPHAN_MARK=$1\$" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3; }
fail=0
for sig in TERM INT KILL; do
  mark="run-$$-$sig-$RANDOM"
  # SIGINT as a terminal delivers it: a background job of a script starts with SIGINT ignored, so restore it
  MF_ORPHAN_MARK="$mark" env --default-signal=INT "$memfix" verify --op matmul --symbol matmul_candidate \
    --backend host --seed 1 --cases 1 --timeout 600 --lib "$lib" >/dev/null 2>&1 &
  pid=$!
  workers=""
  for _ in $(seq 1 600); do  # until a worker runs (up to 60 s)
    workers="$(marked "$mark" | grep -vx "$pid" || true)"
    [[ -n "$workers" ]] && break
    sleep 0.1
  done
  if [[ -z "$workers" ]]; then
    echo "FAIL SIG$sig: no worker of verify (pid $pid) appeared"
    kill -KILL "$pid" 2>/dev/null
    fail=1
    continue
  fi
  sleep 2  # the candidate is in its endless loop (the first case hangs)
  kill -"$sig" "$pid"
  wait "$pid" 2>/dev/null
  sleep 1
  left="$(marked "$mark")"
  if [[ -n "$left" ]]; then
    echo "FAIL SIG$sig: processes of the run alive 1 s after verify was stopped: $left"
    for p in $left; do echo "  $p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; kill -KILL "$p" 2>/dev/null; done
    fail=1
  else
    echo "ok SIG$sig: worker(s) $workers gone with verify (pid $pid)"
  fi
done
exit $fail
