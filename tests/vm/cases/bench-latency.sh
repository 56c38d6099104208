# shellcheck shell=bash
# vm-timeout: 600
# pingpong --lat against perftest's latency tools, side by side in one VM run (rxe0 server,
# rxe1 client, GID index 1), 64 B x 2000, each pair ROUNDS times, the best median counts:
#   rdmactl pingpong --lat --op write  vs ib_write_lat -F
#   rdmactl pingpong --lat --op read   vs ib_read_lat -F
# What each measures differs (docs/benchmarks.md): ib_read_lat and rdmactl time one
# operation from post to completion; ib_write_lat times a WRITE ping-pong and halves it.
# No target: the figures go into docs/benchmarks.md. The checks are that every run
# produced its figures and that rdmactl's percentiles are ordered.

SERVER_IP=192.168.77.1
ROUNDS=${BENCH_ROUNDS:-3}
SIZE=64
ITERS=2000
port=18950
next_port() { port=$((port + 1)); }

# perftest's result row: bytes iterations t_min t_max t_typical t_avg t_stdev p99 p99.9.
perftest_row() { awk -v s="$SIZE" -v n="$ITERS" '$1 == s && $2 == n && NF >= 9 {print $3, $5, $8, $9, $4; exit}' "$1"; }
rdmactl_row() { jq -r --arg op "$2" '.ops[$op].latency_usec | "\(.min) \(.p50) \(.p99) \(.p99_9) \(.max)"' "$1"; }

echo "guest clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource), load: $(cut -d' ' -f1-3 /proc/loadavg)" |
    tee "$RESULTS/environment.txt"

: >"$RESULTS/rows.txt"
for round in $(seq "$ROUNDS"); do
    for op in write read; do
        next_port
        if bench_pair "$port" "ref-$op-$round" "ib_${op}_lat" -d rxe0 -x 1 -F -p "$port" -s "$SIZE" -n "$ITERS" -- \
            "ib_${op}_lat" -d rxe1 -x 1 -F -p "$port" -s "$SIZE" -n "$ITERS" "$SERVER_IP"; then
            row=$(perftest_row "$RESULTS/ref-$op-$round.out")
            [[ -n $row ]] && echo "ib_${op}_lat $row" >>"$RESULTS/rows.txt"
        fi
        next_port
        if bench_pair "$port" "rdmactl-$op-$round" "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" -s "$SIZE" --op "$op" -- \
            "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -s "$SIZE" -n "$ITERS" --lat --op "$op" "$SERVER_IP"; then
            echo "rdmactl-$op $(rdmactl_row "$RESULTS/rdmactl-$op-$round.out" "$op")" >>"$RESULTS/rows.txt"
            check "rdmactl --lat --op $op round $round: min <= p50 <= p99 <= p99.9 <= max, one at a time" \
                jqf --arg op "$op" '.ops[$op] | .window == 1 and .latency_usec.min <= .latency_usec.p50
                    and .latency_usec.p50 <= .latency_usec.p99 and .latency_usec.p99 <= .latency_usec.p99_9
                    and .latency_usec.p99_9 <= .latency_usec.max' "$RESULTS/rdmactl-$op-$round.out"
        fi
    done
done

# Columns: tool min p50 p99 p99.9 max (usec); the round with the lowest p50 of each tool.
for tool in ib_write_lat rdmactl-write ib_read_lat rdmactl-read; do
    n=$(awk -v t="$tool" '$1 == t' "$RESULTS/rows.txt" | wc -l)
    check "$tool: $ROUNDS runs with figures (got $n)" test "$n" -eq "$ROUNDS"
done
{
    echo "latency $SIZE B x $ITERS (usec; best p50 of $ROUNDS): tool min p50 p99 p99.9 max"
    for tool in ib_write_lat rdmactl-write ib_read_lat rdmactl-read; do
        awk -v t="$tool" '$1 == t' "$RESULTS/rows.txt" | sort -g -k3 | head -1
    done
    echo "all rounds:"
    cat "$RESULTS/rows.txt"
} | tee "$RESULTS/summary.txt"
