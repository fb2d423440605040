#!/usr/bin/env bash
# ci/plot.sh BENCH.csv [OUTDIR]
#
# Renders the CSV written by `memfix bench --csv --out BENCH.csv` as charts, one pair
# per op that has a size sweep (rows with timed=separate):
#   OUTDIR/<op>_memory.{png,svg}  peak scratch vs size n, both axes logarithmic, the scratch in
#                                 the unit of the op's largest value (B, KiB, MiB or GiB): each
#                                 distinct reference (one per variant when they differ, e.g.
#                                 linear_attention's causal cumsum and bidirectional state),
#                                 each optimized variant and its ceiling
#   OUTDIR/<op>_time.{png,svg}    mean ms per call vs n, both axes logarithmic: each optimized
#                                 variant and the reference timed beside it (one reference line
#                                 per variant: each variant's row times its own reference run);
#                                 the y label names the timer (host-wall: CPU time of host
#                                 execution mode, not GPU time)
# The axes span the op's data (the x tics are its sizes), the key stands right of the chart, a
# variant's lines share a colour (its ceiling dashed); a series that is 0 B at every size,
# which a logarithmic axis cannot draw, is listed in the key as such. Rows timed through run_case
# (ops without a sweep) and failed rows are skipped. Titles and legends are plain text
# (noenhanced: '_' stays '_').
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

# One data file per (op, variant): size ref_peak opt_peak ceiling ref_ms opt_ms, a byte count of 0
# as NaN (a logarithmic axis has no 0). The quoted fields (shape, message) may hold commas: each
# line is split on the commas outside quotes.
awk -v dir="$tmp" '
  function split_csv(line, f,    n, i, c, q, cell) {
    n = 0; q = 0; cell = ""
    for (i = 1; i <= length(line); i++) {
      c = substr(line, i, 1)
      if (c == "\"") q = !q
      else if (c == "," && !q) { f[++n] = cell; cell = "" }
      else cell = cell c
    }
    f[++n] = cell
    return n
  }
  function num(x) { return x == "" ? "NaN" : x }
  function bytes(x) { return (x == "" || x + 0 == 0) ? "NaN" : x }
  NR > 1 {
    split_csv($0, f)
    if (f[5] != "separate" || f[16] != "ok") next
    file = dir "/" f[1] "@" f[2] ".dat"
    print f[8], bytes(f[12]), bytes(f[13]), bytes(f[14]), num(f[10]), num(f[11]) >> file
    timer[f[1]] = f[4]; backend[f[1]] = f[3]
  }
  END { for (op in timer) print op, timer[op], backend[op] > (dir "/ops.txt") }' "$csv"

if [ ! -s "$tmp/ops.txt" ]; then
  echo "ci/plot.sh: no plottable rows (timed=separate, status=ok) in '$csv'" >&2
  exit 1
fi

if gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo; then png_term='pngcairo size 1100,560'; else png_term='png size 1100,560'; fi

# has_data FILE COLUMN: whether the column holds a number (not NaN) on some line
has_data() { awk -v c="$2" '$c != "NaN" { found = 1 } END { exit !found }' "$1"; }
# range FILES... COLUMNS: "min max" of the numbers in those columns ("" when none)
range() {
  local cols=$1; shift
  awk -v cols="$cols" 'BEGIN { n = split(cols, c, ",") }
    { for (i = 1; i <= n; i++) if ($c[i] != "NaN") {
        v = $c[i] + 0; if (!seen || v < lo) lo = v; if (!seen || v > hi) hi = v; seen = 1 } }
    END { if (seen) print lo, hi }' "$@"
}

# series FILE COLUMN STYLE TITLE: appends the memory chart's clause for the column (in the op's
# unit), or a key entry when it is 0 B at every size
series() {
  if has_data "$1" "$2"; then
    mem_plot+="'$1' using 1:(\$$2/$scale) $3 title '$4', "
  else
    mem_plot+="NaN $3 title '$4: 0 B at every size', "
    zero=1
  fi
}

n=0
while read -r op timer backend; do
  mlo="" mhi="" tlo="" thi=""
  files=("$tmp/$op@"*.dat)
  for f in "${files[@]}"; do sort -n -k1,1 -o "$f" "$f"; done
  # the x axis: the sizes, a little room on both sides, a tic at each
  read -r xmin xmax < <(range 1 "${files[@]}")
  xtics=$(awk '{ print $1 }' "${files[@]}" | sort -nu | paste -sd, -)
  # the memory axis: the unit of the largest value, from half the smallest to twice the largest
  read -r mlo mhi < <(range 2,3,4 "${files[@]}") || true
  unit=B scale=1
  if [ -n "$mhi" ]; then
    for u in "KiB 1024" "MiB 1048576" "GiB 1073741824"; do
      set -- $u
      if awk -v m="$mhi" -v s="$2" 'BEGIN { exit !(m >= s) }'; then unit=$1 scale=$2; fi
    done
  fi
  read -r tlo thi < <(range 5,6 "${files[@]}") || true

  # Each variant is compared with its own reference. Memory: one line per distinct reference,
  # told apart by its series (linear_attention's causal cumsum and bidirectional state; matmul's
  # variants share one reference: one line). Time: a reference line per variant, the reference
  # run timed beside that variant.
  refs=() ref_vars=()
  for f in "${files[@]}"; do
    v=${f##*@}; v=${v%.dat}
    key=$(awk '{ printf "%s:%s;", $1, $2 }' "$f")
    seen=0
    for k in "${refs[@]}"; do [ "$k" = "$key" ] && seen=1; done
    if [ $seen -eq 0 ]; then refs+=("$key"); ref_vars+=("$v"); fi
  done
  mem_plot="" time_plot="" zero=""
  k=0
  for f in "${files[@]}"; do
    v=${f##*@}; v=${v%.dat}
    k=$((k + 1))
    for r in "${ref_vars[@]}"; do
      [ "$r" = "$v" ] || continue
      if [ ${#ref_vars[@]} -gt 1 ]; then label="reference for $v"; else label="reference"; fi
      series "$f" 2 "with linespoints lw 2 dt 3 pt 6 lc $k" "$label (host scratch)"
    done
    series "$f" 3 "with linespoints lw 2 pt 7 lc $k" "$v (device scratch)"
    series "$f" 4 "with linespoints lw 1 dt 2 pt 2 lc $k" "$v ceiling"
    if [ ${#files[@]} -gt 1 ]; then rlabel="reference for $v"; else rlabel="reference"; fi
    time_plot+="'$f' using 1:5 with linespoints lw 1 dt 3 pt $((k + 3)) lc $k title '$rlabel', "
    time_plot+="'$f' using 1:6 with linespoints lw 2 pt $((k + 3)) lc $k title '$v', "
  done
  # the y axes: from half the smallest value to twice the largest (every series 0 B: any range)
  mem_range="set yrange [0.5:2]" time_range="set yrange [*:*]"
  if [ -n "$mlo" ]; then
    mem_range="set yrange [$(awk -v a="$mlo" -v b="$mhi" -v s="$scale" 'BEGIN { print a / s / 2 ":" b / s * 2 }')]"
  fi
  if [ -n "$tlo" ]; then
    time_range="set yrange [$(awk -v a="$tlo" -v b="$thi" 'BEGIN { print a / 2 ":" b * 2 }')]"
  fi
  for ext in png svg; do
    if [ $ext = png ]; then term=$png_term; else term='svg size 1100,560 dynamic'; fi
    gnuplot <<GP
set terminal $term
set termoption noenhanced
set datafile missing 'NaN'
set key outside right top
set grid
set logscale xy
set xrange [$xmin / 1.25:$xmax * 1.25]
set xtics ($xtics)
set xlabel 'size n (see memfix bench --help)'
set output '$out/${op}_memory.$ext'
set title '$op: peak scratch vs size ($backend; log axes)'
set ylabel 'peak scratch ($unit)'
$mem_range
plot ${mem_plot%, }
set output '$out/${op}_time.$ext'
set title '$op: time per call vs size ($backend, $timer; log axes)'
set ylabel 'ms per call ($timer)'
$time_range
plot ${time_plot%, }
GP
  done
  n=$((n + 1))
  echo "ci/plot.sh: $out/${op}_memory.{png,svg} $out/${op}_time.{png,svg}${zero:+ (a series of 0 B listed in the key)}"
done < "$tmp/ops.txt"
echo "ci/plot.sh: charts for $n ops in $out"
