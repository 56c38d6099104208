# shellcheck shell=bash
# vm-timeout: 600
# rdmactl against the reference tools, side by side in one VM run (rxe0 server, rxe1 client,
# GID index 1 on both). Each pair runs ROUNDS times, alternating, and the best of each counts:
#   latency:   rdmactl pingpong --op send  vs ibv_rc_pingpong,   4096 B x 2000, usec/iter
#   bandwidth: rdmactl pingpong --op write vs ib_write_bw -F,  65536 B x 2000, MiB/s
# Targets: latency <= 1.05x ibv_rc_pingpong; bandwidth >= 0.95x ib_write_bw.
# For the record, without a target: pingpong --cm --op send against ibv_rc_pingpong (both
# post one SEND at a time) and pingpong --cm --op write against ib_write_bw (same sizes).

SERVER_IP=192.168.77.1
ROUNDS=${BENCH_ROUNDS:-3}
port=18700
next_port() { port=$((port + 1)); }

best_min() { sort -g | head -1; }
best_max() { sort -g | tail -1; }

# Under TCG the guest clock source and the host's load decide most of the noise; record both.
echo "guest clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource), load: $(cut -d' ' -f1-3 /proc/loadavg)" |
    tee "$RESULTS/environment.txt"

lat_rdmactl=() lat_ref=() bw_rdmactl=() bw_ref=() lat_cm=() bw_cm=()
for round in $(seq "$ROUNDS"); do
    next_port
    if bench_pair "$port" "lat-ref-$round" ibv_rc_pingpong -d rxe0 -g 1 -p "$port" -s 4096 -n 2000 -- \
        ibv_rc_pingpong -d rxe1 -g 1 -p "$port" -s 4096 -n 2000 "$SERVER_IP"; then
        lat_ref+=("$(sed -n 's/.* = \([0-9.]*\) usec\/iter.*/\1/p' "$RESULTS/lat-ref-$round.out")")
    fi
    next_port
    if bench_pair "$port" "lat-rdmactl-$round" "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" -s 4096 -n 2000 --op send -- \
        "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -s 4096 -n 2000 --op send "$SERVER_IP"; then
        lat_rdmactl+=("$(jq -r '.ops.send.usec_per_iter * 100 | round / 100' "$RESULTS/lat-rdmactl-$round.out")")
    fi
    next_port
    if bench_pair "$port" "lat-cm-$round" "$RDMACTL" -j pingpong --cm -d rxe0 --bind "$SERVER_IP" -p "$port" -- \
        "$RDMACTL" -j pingpong --cm -d rxe1 -p "$port" -s 4096 -n 2000 --op send "$SERVER_IP"; then
        lat_cm+=("$(jq -r '.ops.send.usec_per_iter * 100 | round / 100' "$RESULTS/lat-cm-$round.out")")
    fi
    next_port
    if bench_pair "$port" "bw-ref-$round" ib_write_bw -d rxe0 -x 1 -F -p "$port" -s 65536 -n 2000 -- \
        ib_write_bw -d rxe1 -x 1 -F -p "$port" -s 65536 -n 2000 "$SERVER_IP"; then
        # The result row: bytes iterations BW-peak BW-average MsgRate.
        bw_ref+=("$(awk '$1 == 65536 && $2 == 2000 && NF >= 5 {print $4; exit}' "$RESULTS/bw-ref-$round.out")")
    fi
    next_port
    if bench_pair "$port" "bw-cm-$round" "$RDMACTL" -j pingpong --cm -d rxe0 --bind "$SERVER_IP" -p "$port" -- \
        "$RDMACTL" -j pingpong --cm -d rxe1 -p "$port" -s 65536 -n 2000 --op write "$SERVER_IP"; then
        bw_cm+=("$(jq -r '.ops.write.mbit_per_sec * 1000000 / 8 / 1048576 * 100 | round / 100' "$RESULTS/bw-cm-$round.out")")
    fi
    next_port
    if bench_pair "$port" "bw-rdmactl-$round" "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" -s 65536 -n 2000 --op write -- \
        "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -s 65536 -n 2000 --op write "$SERVER_IP"; then
        # Mbit/s (10^6 bit) to perftest's MB/sec (2^20 bytes).
        bw_rdmactl+=("$(jq -r '.ops.write.mbit_per_sec * 1000000 / 8 / 1048576 * 100 | round / 100' "$RESULTS/bw-rdmactl-$round.out")")
    fi
done

printf '%s\n' "${lat_ref[@]}" >"$RESULTS/lat-ref.txt"
printf '%s\n' "${lat_rdmactl[@]}" >"$RESULTS/lat-rdmactl.txt"
printf '%s\n' "${bw_ref[@]}" >"$RESULTS/bw-ref.txt"
printf '%s\n' "${bw_rdmactl[@]}" >"$RESULTS/bw-rdmactl.txt"
printf '%s\n' "${lat_cm[@]}" >"$RESULTS/lat-cm.txt"
printf '%s\n' "${bw_cm[@]}" >"$RESULTS/bw-cm.txt"
check "latency: $ROUNDS ibv_rc_pingpong runs" test "${#lat_ref[@]}" -eq "$ROUNDS"
check "latency: $ROUNDS rdmactl runs" test "${#lat_rdmactl[@]}" -eq "$ROUNDS"
check "bandwidth: $ROUNDS ib_write_bw runs" test "${#bw_ref[@]}" -eq "$ROUNDS"
check "bandwidth: $ROUNDS rdmactl runs" test "${#bw_rdmactl[@]}" -eq "$ROUNDS"
check "latency: $ROUNDS rdmactl --cm runs" test "${#lat_cm[@]}" -eq "$ROUNDS"
check "bandwidth: $ROUNDS rdmactl --cm runs" test "${#bw_cm[@]}" -eq "$ROUNDS"

lr=$(best_min <"$RESULTS/lat-ref.txt")
lm=$(best_min <"$RESULTS/lat-rdmactl.txt")
br=$(best_max <"$RESULTS/bw-ref.txt")
bm=$(best_max <"$RESULTS/bw-rdmactl.txt")
lc=$(best_min <"$RESULTS/lat-cm.txt")
bc=$(best_max <"$RESULTS/bw-cm.txt")
bw_cm_ratio=$(awk -v a="$bc" -v b="$br" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')
cm_ratio=$(awk -v a="$lc" -v b="$lr" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')
lat_ratio=$(awk -v a="$lm" -v b="$lr" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')
bw_ratio=$(awk -v a="$bm" -v b="$br" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')
{
    echo "latency 4096 B x 2000 (usec/iter, best of $ROUNDS): ibv_rc_pingpong $lr  rdmactl $lm  ratio $lat_ratio (target <= 1.05)"
    echo "  all runs: ibv_rc_pingpong ${lat_ref[*]} | rdmactl ${lat_rdmactl[*]}"
    echo "latency --cm 4096 B x 2000 (usec/iter, best of $ROUNDS): ibv_rc_pingpong $lr  rdmactl --cm $lc  ratio $cm_ratio (no target)"
    echo "  all runs: rdmactl --cm ${lat_cm[*]}"
    echo "bandwidth RDMA WRITE 65536 B x 2000 (MiB/s, best of $ROUNDS): ib_write_bw $br  rdmactl $bm  ratio $bw_ratio (target >= 0.95)"
    echo "  all runs: ib_write_bw ${bw_ref[*]} | rdmactl ${bw_rdmactl[*]}"
    echo "bandwidth --cm RDMA WRITE 65536 B x 2000 (MiB/s, best of $ROUNDS): ib_write_bw $br  rdmactl --cm $bc  ratio $bw_cm_ratio (no target)"
    echo "  all runs: rdmactl --cm ${bw_cm[*]}"
} | tee "$RESULTS/summary.txt"
check "latency ratio $lat_ratio <= 1.05" awk -v r="$lat_ratio" 'BEGIN { exit !(r != "nan" && r <= 1.05) }'
check "bandwidth ratio $bw_ratio >= 0.95" awk -v r="$bw_ratio" 'BEGIN { exit !(r != "nan" && r >= 0.95) }'
