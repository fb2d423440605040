#!/usr/bin/env bash
# plot_test.sh MEMFIX PLOT_SH OUTDIR: bench a tiny sweep to CSV, then render it
# with ci/plot.sh. With gnuplot: every chart exists as PNG and SVG and is not
# empty, with log axes, the memory in a unit of bytes that fits the data, a
# reference line per variant in the time charts, a 0 B series named in the key,
# and a shape holding a comma read right. Without gnuplot: plot.sh must exit 3
# and name the missing program.
set -euo pipefail
memfix=$1 plot=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
"$memfix" bench --backend host --op matmul --sizes 8,16 --reps 1 --csv --out "$out/bench.csv" >/dev/null
# linear_attention: two variants with different references (causal cumsum, bidirectional)
"$memfix" bench --backend host --op linear_attention --sizes 16,32 --reps 1 --csv --out "$out/la.csv" >/dev/null
tail -n +2 "$out/la.csv" >> "$out/bench.csv"
# cross_entropy: two variants, each with its own scratch (the fused one's in bytes); a comma in
# one of its shapes (a quoted field) must not shift the columns
"$memfix" bench --backend host --op cross_entropy --sizes 16,32 --reps 1 --csv --out "$out/ce.csv" >/dev/null
tail -n +2 "$out/ce.csv" | sed 's/ mean budget=/ mean, budget=/' >> "$out/bench.csv"
grep -q ' mean, budget=' "$out/bench.csv" || { echo "plot_test: no shape with a comma" >&2; exit 1; }
if command -v gnuplot >/dev/null 2>&1; then
  bash "$plot" "$out/bench.csv" "$out"
  for op in matmul linear_attention cross_entropy; do
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
  for text in '>linear_attention: peak scratch vs size (host; log axes)<' \
              '>reference for causal_chunked (host scratch)<' '>reference for bidirectional (host scratch)<' \
              '>causal_chunked (device scratch): 0 B at every size<' '>causal_chunked ceiling<' '>peak scratch (KiB)<'; do
    grep -qF "$text" "$svg" || { echo "plot_test: $svg lacks '$text'" >&2; exit 1; }
  done
  grep -qF '>reference for causal_chunked<' "$out/linear_attention_time.svg" ||
    { echo "plot_test: the time chart lacks the causal reference" >&2; exit 1; }
  n=$(grep -cF '>reference (host scratch)<' "$out/matmul_memory.svg")
  [ "$n" -eq 1 ] || { echo "plot_test: matmul's shared reference drawn $n times" >&2; exit 1; }
  # each variant's time beside the reference timed with it
  for v in naive tiled cublas; do
    grep -qF ">reference for $v<" "$out/matmul_time.svg" ||
      { echo "plot_test: matmul's time chart lacks the reference timed with $v" >&2; exit 1; }
  done
  grep -qF '>peak scratch (KiB)<' "$out/matmul_memory.svg" || { echo "plot_test: matmul's memory not in KiB" >&2; exit 1; }
  # both cross-entropy variants drawn from their own columns, the chunked one despite the comma
  for text in '>chunked (device scratch)<' '>fused (device scratch)<' '>fused ceiling<' '>reference for fused<'; do
    grep -qF "$text" "$out/cross_entropy_memory.svg" "$out/cross_entropy_time.svg" ||
      { echo "plot_test: the cross_entropy charts lack '$text'" >&2; exit 1; }
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
