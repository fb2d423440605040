#!/usr/bin/env bash
# plot_test.sh MEMFIX PLOT_SH OUTDIR: bench a tiny sweep to CSV, then render it
# with ci/plot.sh. With gnuplot: every chart exists as PNG and SVG and is not
# empty. Without gnuplot: plot.sh must exit 3 and name the missing program.
set -euo pipefail
memfix=$1 plot=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
"$memfix" bench --backend host --op matmul --sizes 8,16 --reps 1 --csv --out "$out/bench.csv" >/dev/null
# linear_attention: two variants with different references (causal cumsum, bidirectional)
"$memfix" bench --backend host --op linear_attention --sizes 16,32 --reps 1 --csv --out "$out/la.csv" >/dev/null
tail -n +2 "$out/la.csv" >> "$out/bench.csv"
if command -v gnuplot >/dev/null 2>&1; then
  bash "$plot" "$out/bench.csv" "$out"
  for op in matmul linear_attention; do
    for kind in memory time; do
      for ext in png svg; do
        f="$out/${op}_$kind.$ext"
        [ -s "$f" ] || { echo "plot_test: $f missing or empty" >&2; exit 1; }
      done
    done
  done
  # Plain-text titles and legends (enhanced text would turn '_e' into a subscript),
  # every distinct reference kept, a shared one drawn once.
  svg="$out/linear_attention_memory.svg"
  for text in '>linear_attention: scratch memory vs size (host)<' '>reference for causal_chunked (host scratch)<' \
              '>reference for bidirectional (host scratch)<' '>causal_chunked (device scratch)<'; do
    grep -qF "$text" "$svg" || { echo "plot_test: $svg lacks '$text'" >&2; exit 1; }
  done
  grep -qF '>reference for causal_chunked<' "$out/linear_attention_time.svg" ||
    { echo "plot_test: the time chart lacks the causal reference" >&2; exit 1; }
  n=$(grep -cF '>reference (host scratch)<' "$out/matmul_memory.svg")
  [ "$n" -eq 1 ] || { echo "plot_test: matmul's shared reference drawn $n times" >&2; exit 1; }
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
