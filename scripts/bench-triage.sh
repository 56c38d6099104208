#!/usr/bin/env bash
# triage's throughput and peak memory beside `grep -c` on the same log, as medians of
# alternating pairs (triage, grep, triage, grep, ...). The log is the fixture logs of
# tests/fixtures/joblogs (every format triage reads, and lines it skips) repeated to SIZE_MB.
# Usage: scripts/bench-triage.sh [SIZE_MB] [PAIRS]   (defaults: 1024 MB, 5 pairs)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${1:-1024}
pairs=${2:-5}
bin=${RDMACTL_BIN:-target/release/rdmactl}
[[ -x $bin ]] || cargo build --release --locked
log=$(mktemp /tmp/triage-bench.XXXXXX.log)
trap 'rm -f "$log"' EXIT
one=$(mktemp)
cat tests/fixtures/joblogs/*.log tests/fixtures/joblogs/vm/*.log >"$one"
want=$((size_mb * 1024 * 1024))
while (($(stat -c %s "$log") < want)); do
    for _ in $(seq 64); do cat "$one"; done >>"$log"
done
rm -f "$one"
lines=$(wc -l <"$log")
echo "log: $(stat -c %s "$log") bytes, $lines lines"
# One run: wall seconds and peak RSS in KiB, from GNU time.
# Output goes to a file: GNU grep stops at its first match when stdout is /dev/null.
measure() {
    /usr/bin/time -f '%e %M' "$@" >/tmp/triage-bench.out 2>/tmp/triage-bench.time || true
    tail -n 1 /tmp/triage-bench.time
}
declare -a tw tm gw gm ratio
for i in $(seq "$pairs"); do
    read -r s m < <(measure "$bin" triage "$log")
    tw+=("$s"); tm+=("$m")
    read -r s2 m < <(measure grep -c 'NET/IB' "$log")
    gw+=("$s2"); gm+=("$m")
    ratio+=("$(awk -v a="$s" -v b="$s2" 'BEGIN {printf "%.3f", a / (b > 0 ? b : 0.01)}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
t=$(median "${tw[@]}"); g=$(median "${gw[@]}")
echo "rdmactl triage: median ${t} s ($(awk -v l="$lines" -v s="$t" 'BEGIN {printf "%.0f", l / s}') lines/s), peak RSS $(median "${tm[@]}") KiB"
echo "grep -c NET/IB: median ${g} s ($(awk -v l="$lines" -v s="$g" 'BEGIN {printf "%.0f", l / s}') lines/s), peak RSS $(median "${gm[@]}") KiB"
echo "triage/grep wall time, median of the $pairs pairs' ratios: $(median "${ratio[@]}")"
