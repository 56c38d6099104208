# shellcheck shell=bash
# vm-timeout: 300
# Issue 12: `rdmactl counters` reads a whole host's counters in one pass with no process
# spawned, and is at least as fast as `rdma statistic show` (iproute2, one netlink dump)
# for the same devices. Also timed: rdmactl's start-up alone (`gid decode ::1`, which reads
# neither sysfs nor verbs), to split the read from the start-up. Results in
# $RESULTS/bench.txt; the figures and what they mean are in docs/benchmarks.md.

check "rdmactl runs from tmpfs" test "${RDMACTL#/tmp/}" != "$RDMACTL"
check "iproute2's rdma is installed" test -x /usr/bin/rdma
check "rdma statistic show answers for rxe0 and rxe1" bash -c 'rdma statistic show | grep -q "rxe1/1"'

# Timed with bash's EPOCHREALTIME (microseconds): no process is spawned per run besides
# the one timed, which under TCG would cost as much as the read itself.
bench() { # bench NAME CMD...: 30 runs after 3 warm-ups; prints min, median, mean in ms
    local i t0 t1 times=()
    for ((i = 0; i < 3; i++)); do "${@:2}" >/dev/null 2>&1; done
    for ((i = 0; i < 30; i++)); do
        t0=${EPOCHREALTIME/./}
        "${@:2}" >/dev/null 2>&1
        t1=${EPOCHREALTIME/./}
        times+=($((t1 - t0)))
    done
    printf '%s\n' "${times[@]}" | python3 -c '
import statistics, sys
t = [int(x) / 1000 for x in sys.stdin]
print("%s: min %.1f ms, median %.1f ms, mean %.1f ms (%d runs)" % (sys.argv[1], min(t), statistics.median(t), statistics.mean(t), len(t)))
' "$1"
}
# Interleaved rounds, so a burst of load on the shared host hits every command alike.
for round in 1 2; do
    {
        bench "rdma statistic show" rdma statistic show
        bench "rdmactl counters --all" "$RDMACTL" counters --all
        bench "rdmactl -j counters" "$RDMACTL" -j counters
        bench "rdmactl gid decode (start-up only)" "$RDMACTL" gid decode ::1
    } | sed "s/^/round $round: /" | tee -a "$RESULTS/bench.txt"
done
check "the benchmark ran" test -s "$RESULTS/bench.txt"
check "rdmactl counters --all is at least as fast as rdma statistic show (fastest runs)" python3 -c '
import re, sys
best = {}
for l in open(sys.argv[1]):
    name = l.split(": ", 1)[1].split(":")[0]
    best[name] = min(best.get(name, 1e9), float(re.search(r"min ([0-9.]+)", l).group(1)))
for k, v in best.items():
    print("%-45s %.1f ms" % (k, v))
r = best["rdmactl counters --all"] / best["rdma statistic show"]
print("ratio rdmactl counters --all / rdma statistic show: %.2f" % r)
sys.exit(0 if r <= 1.0 else 1)
' "$RESULTS/bench.txt"
