#!/usr/bin/env bash
# ci/plot.sh BENCH.csv [OUTDIR]
#
# Renders the CSV written by `memfix bench --out BENCH.csv` as charts, one pair
# per op that has a size sweep (rows with timed=separate):
#   OUTDIR/<op>_memory.{png,svg}  scratch peak (bytes) vs size n: each distinct
#                                 reference (one per variant when they differ,
#                                 e.g. linear_attention's causal cumsum and
#                                 bidirectional state), each optimized variant
#                                 and its ceiling
#   OUTDIR/<op>_time.{png,svg}    mean ms per call vs n (log-log): the reference
#                                 and each optimized variant; the y label names
#                                 the timer (host-wall: CPU time of host
#                                 execution mode, not GPU time)
# Rows timed through run_case (ops without a sweep) and failed rows are skipped.
# Titles and legends are plain text (noenhanced: '_' stays '_').
# OUTDIR defaults to the CSV's directory. Needs gnuplot (Debian: gnuplot-nox);
# without it, exits 3 with a message. Exit 2 on usage errors.
set -euo pipefail

usage() { echo "usage: ci/plot.sh BENCH.csv [OUTDIR]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
csv=$1
[ -r "$csv" ] || { echo "ci/plot.sh: cannot read '$csv'" >&2; exit 2; }
out=${2:-$(dirname "$csv")}
if ! command -v gnuplot >/dev/null 2>&1; then
  echo "ci/plot.sh: gnuplot is not installed (Debian/Ubuntu: apt-get install gnuplot-nox); no charts written" >&2
  exit 3
fi
expected='op,variant,backend,timer,timed,dtype,shape,size,reps,ref_ms,opt_ms,ref_peak_bytes,opt_peak_bytes,ceiling_bytes,max_abs_err,status,message'
header=$(head -n 1 "$csv" | tr -d '\r')
# later columns (flops, rates, peaks) may follow the ones read here
case "$header" in
  "$expected"|"$expected",*) ;;
  *) echo "ci/plot.sh: '$csv' is not a memfix bench CSV (unexpected header)" >&2; exit 2 ;;
esac
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One data file per (op, variant): size ref_peak opt_peak ceiling ref_ms opt_ms.
# Fields 1..15 never hold commas (shape is quoted but comma-free); the message,
# the last field, may, and is not read.
awk -F, -v dir="$tmp" 'NR > 1 && $5 == "separate" && $16 == "ok" {
    f = dir "/" $1 "@" $2 ".dat"
    print $8, ($12 == "" ? "NaN" : $12), ($13 == "" ? "NaN" : $13), ($14 == "" ? "NaN" : $14),
          ($10 == "" ? "NaN" : $10), ($11 == "" ? "NaN" : $11) >> f
    timer[$1] = $4; backend[$1] = $3
  }
  END { for (op in timer) print op, timer[op], backend[op] > (dir "/ops.txt") }' "$csv"

if [ ! -s "$tmp/ops.txt" ]; then
  echo "ci/plot.sh: no plottable rows (timed=separate, status=ok) in '$csv'" >&2
  exit 1
fi

if gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo; then png_term='pngcairo size 900,560'; else png_term='png size 900,560'; fi

n=0
while read -r op timer backend; do
  mem_plot="" time_plot=""
  # Each variant is compared with its own reference (linear_attention: the causal
  # cumsum for causal_chunked, the bidirectional state for bidirectional). One
  # reference line per distinct reference, told apart by its memory series
  # (matmul's variants share one reference: one line).
  refs=() ref_vars=()
  for f in "$tmp/$op@"*.dat; do
    sort -n -k1,1 -o "$f" "$f"
    v=${f##*@}; v=${v%.dat}
    key=$(awk '{ printf "%s:%s;", $1, $2 }' "$f")
    seen=0
    for k in "${refs[@]}"; do [ "$k" = "$key" ] && seen=1; done
    if [ $seen -eq 0 ]; then refs+=("$key"); ref_vars+=("$v"); fi
  done
  for f in "$tmp/$op@"*.dat; do
    v=${f##*@}; v=${v%.dat}
    for r in "${ref_vars[@]}"; do
      [ "$r" = "$v" ] || continue
      if [ ${#ref_vars[@]} -gt 1 ]; then label="reference for $v"; else label="reference"; fi
      mem_plot+="'$f' using 1:2 with linespoints lw 2 dt 3 title '$label (host scratch)', "
      time_plot+="'$f' using 1:5 with linespoints lw 2 dt 3 title '$label', "
    done
    mem_plot+="'$f' using 1:3 with linespoints lw 2 title '$v (device scratch)', "
    mem_plot+="'$f' using 1:4 with lines dt 2 title '$v ceiling', "
    time_plot+="'$f' using 1:6 with linespoints lw 2 title '$v', "
  done
  for ext in png svg; do
    if [ $ext = png ]; then term=$png_term; else term='svg size 900,560 dynamic'; fi
    gnuplot <<GP
set terminal $term
set termoption noenhanced
set datafile missing 'NaN'
set key top left
set grid
set xlabel 'size n (see memfix bench --help)'
set output '$out/${op}_memory.$ext'
set title '$op: scratch memory vs size ($backend)'
set ylabel 'peak scratch (bytes)'
plot ${mem_plot%, }
set output '$out/${op}_time.$ext'
set title '$op: time per call vs size ($backend, $timer)'
set ylabel 'ms per call ($timer)'
set logscale xy
plot ${time_plot%, }
GP
  done
  n=$((n + 1))
  echo "ci/plot.sh: $out/${op}_memory.{png,svg} $out/${op}_time.{png,svg}"
done < "$tmp/ops.txt"
echo "ci/plot.sh: charts for $n ops in $out"
