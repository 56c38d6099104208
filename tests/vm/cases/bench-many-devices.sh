# Issue 18, item 19: with 17 rxe devices (rxe0, rxe1 and 15 more on veths), `ports` and
# `gids --ip` against `rdma link` (target: at most 2x), with `ibv_devices` (libibverbs'
# own start-up), `rdmactl gid decode` (rdmactl's start-up alone: no sysfs, no verbs),
# `devices`, `doctor` and `check` beside them. Results: $RESULTS/many.{md,json,txt}.
# vm-timeout: 900

HF=/usr/bin/hyperfine
check "hyperfine is installed" test -x "$HF"
check "rdmactl runs from tmpfs" test "${RDMACTL#/tmp/}" != "$RDMACTL"

add_devices() {
    local i
    for i in $(seq 2 16); do
        ip link add "bm$i" type veth peer name "bm${i}p" &&
            ip link set "bm$i" up && ip link set "bm${i}p" up &&
            ip addr add "10.66.$i.1/24" dev "bm$i" &&
            rdma link add "rxe$i" type rxe netdev "bm$i" || return 1
    done
}
check "15 more rxe devices on veths" add_devices
wait_gids 10
for _ in $(seq 50); do
    [[ $(grep -l ACTIVE /sys/class/infiniband/*/ports/1/state | wc -l) == 17 ]] && break
    sleep 0.2
done
expect_out "rdma link lists 17 ports" '^17$' bash -c 'rdma link | wc -l'
expect_out "ports lists 17 ports, each with its RDMA MTU from verbs" '^17$' \
    bash -c '"$0" ports | grep -cE " 1024 +4096 "' "$RDMACTL"

"$HF" --style basic --shell=none --warmup 3 --runs 20 --export-markdown "$RESULTS/many.md" \
    --export-json "$RESULTS/many.json" \
    -n "rdma link" "rdma link" \
    -n "ibv_devices" "ibv_devices" \
    -n "rdmactl gid decode ::1" "$RDMACTL gid decode ::1" \
    -n "rdmactl ports" "$RDMACTL ports" \
    -n "rdmactl gids --ip" "$RDMACTL gids --ip" \
    -n "rdmactl -j ports" "$RDMACTL -j ports" \
    -n "rdmactl devices" "$RDMACTL devices" \
    > "$RESULTS/many.txt" 2>&1
"$HF" --style basic --shell=none --warmup 1 --runs 5 --export-json "$RESULTS/slow.json" \
    -n "rdmactl doctor" "$RDMACTL doctor" \
    -n "rdmactl check -d rxe1 --peer 192.168.77.1" "$RDMACTL check -d rxe1 --peer 192.168.77.1" \
    >> "$RESULTS/many.txt" 2>&1
grep -E "Benchmark|Time|Range" "$RESULTS/many.txt"

check "ports and gids --ip take at most 2x rdma link (fastest runs; medians beside)" python3 -c '
import json, statistics, sys
rows = json.load(open(sys.argv[1]))["results"] + json.load(open(sys.argv[2]))["results"]
best = {r["command"]: min(r["times"]) for r in rows}
med = {r["command"]: statistics.median(r["times"]) for r in rows}
base = "rdma link"
for name in best:
    print("%-42s min %7.1f ms  median %7.1f ms  ratio min %.2f  median %.2f" % (
        name, best[name] * 1e3, med[name] * 1e3, best[name] / best[base], med[name] / med[base]))
worst = max(best["rdmactl ports"], best["rdmactl gids --ip"]) / best[base]
sys.exit(0 if worst <= 2.0 else 1)
' "$RESULTS/many.json" "$RESULTS/slow.json"
cat "$LAST_OUT"
restore_net
