#!/usr/bin/env bash
# plot_test.sh MEMFIX PLOT_SH OUTDIR: bench a tiny sweep to CSV, then render it
# with ci/plot.sh. With gnuplot: every chart exists as PNG and SVG and is not
# empty. Without gnuplot: plot.sh must exit 3 and name the missing program.
set -euo pipefail
memfix=$1 plot=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
"$memfix" bench --backend host --op matmul --sizes 8,16 --reps 1 --out "$out/bench.csv" >/dev/null
if command -v gnuplot >/dev/null 2>&1; then
  bash "$plot" "$out/bench.csv" "$out"
  for kind in memory time; do
    for ext in png svg; do
      f="$out/matmul_$kind.$ext"
      [ -s "$f" ] || { echo "plot_test: $f missing or empty" >&2; exit 1; }
    done
  done
  echo "plot_test: charts rendered in $out"
else
  set +e
  msg=$(PATH=/usr/bin:/bin bash "$plot" "$out/bench.csv" "$out" 2>&1)
  rc=$?
  set -e
  [ "$rc" -eq 3 ] || { echo "plot_test: expected exit 3 without gnuplot, got $rc: $msg" >&2; exit 1; }
  grep -q "gnuplot" <<<"$msg" || { echo "plot_test: message does not name gnuplot: $msg" >&2; exit 1; }
  echo "plot_test: gnuplot not installed; plot.sh reported it (exit 3)"
fi
