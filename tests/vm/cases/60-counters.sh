# shellcheck shell=bash
# vm-timeout: 360
# rdmactl counters on real rxe: hw_counters listed and the missing counters/ said; deltas
# and rates with --interval during a ping-pong; doctor's counters check. The time of a
# whole-host read beside `rdma statistic show` is bench-counters.

SERVER_IP=192.168.77.1
PORT=18600

# --- a snapshot: rxe has hw_counters/ and no counters/ (no PMA), said, not failed
expect_rc 0 "counters exits 0 on rxe" "$RDMACTL" counters
expect_out "counters says rxe has no counters/ directory" \
    'no IB PMA counters \(no counters/, or N/A \(no PMA\)\): this device has no IB performance-management agent' cat "$LAST_OUT"
expect_out "counters --all lists rxe's hw_counters by name" '^ +sent_pkts +[0-9]+ +packets sent' \
    "$RDMACTL" counters rxe0/1 --all
expect_out "counters --all lists retry_exceeded_err" '^ +retry_exceeded_err +[0-9]+ ' cat "$LAST_OUT"
check "counters -j" "$RDMACTL" -j counters
json_has "-j: rxe0 sent_pkts from hw_counters, 64 bits, wrapping" "$LAST_STDOUT" \
    device=rxe0 port=1 driver=rxe counters_dir=false hw_counters_dir=true \
    name=sent_pkts source=hw_counters width=64 saturates=false
json_has "-j: rxe1 rcvd_seq_err with its meaning" "$LAST_STDOUT" \
    device=rxe1 name=rcvd_seq_err group=loss 'meaning=requester \(rxe\).*'
expect_no_out "-j: lifespan (a setting) is not listed as a counter" '"lifespan"' cat "$LAST_STDOUT"

# --- --interval during a ping-pong: non-zero packet rates on both ports
bg_server counters-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$PORT" -n 2000000 --op send
server=$BG_PID
check "server listens" wait_listen "$PORT" 15
BG_TIMEOUT=150 bg_server counters-client "$RDMACTL" pingpong -d rxe1 -g 1 -p "$PORT" -n 2000000 --op send "$SERVER_IP"
client=$BG_PID
sleep 2
check "the ping-pong is running" kill -0 "$client"
"$RDMACTL" -j counters --interval 1 --count 3 >"$RESULTS/interval.jsonl" 2>"$RESULTS/interval.err"
check "--interval 1 --count 3 -j exits 0 with three samples" \
    bash -c '[ "$(wc -l <"$0")" = 3 ]' "$RESULTS/interval.jsonl"
check "every sample has non-zero sent_pkts and rcvd_pkts rates on rxe0 and rxe1" python3 -c '
import json, sys
samples = [json.loads(l) for l in open(sys.argv[1])]
assert [s["sample"] for s in samples] == [1, 2, 3], samples
for s in samples:
    assert 0.5 < s["seconds"] < 5, s["seconds"]
    for dev in ("rxe0", "rxe1"):
        p = next(p for p in s["ports"] if p["device"] == dev)
        c = {c["name"]: c for c in p["counters"]}
        for n in ("sent_pkts", "rcvd_pkts"):
            assert c[n]["rate"] > 0 and c[n]["delta"] > 0 and c[n]["state"] == "counted", (dev, n, c[n])
        print(s["sample"], dev, "sent_pkts/s", c["sent_pkts"]["rate"], "rcvd_pkts/s", c["rcvd_pkts"]["rate"])
' "$RESULTS/interval.jsonl"
expect_out "text --interval shows sent_pkts with its delta and rate" \
    '^ +sent_pkts +\+[0-9]+ +[0-9]+\.[0-9] /s' "$RDMACTL" counters rxe1 --interval 1 --count 1

# --- the server killed mid-run: whatever the survivor's QP counted, doctor judges it
target=$(pgrep -P "$server" -x rdmactl || echo "$server")
kill -KILL "$target"
wait_pid_timeout "$client" 20 >/dev/null 2>&1
wait_pid_timeout "$server" 5 >/dev/null 2>&1
"$RDMACTL" counters --all >"$RESULTS/after-kill.txt" 2>&1
errors=0
for f in /sys/class/infiniband/rxe*/ports/1/hw_counters/{retry_exceeded_err,completer_retry_err,rcvd_seq_err,duplicate_request,out_of_seq_request,rcvd_rnr_err,send_rnr_err,send_err}; do
    [[ -r $f ]] || continue
    read -r v <"$f"
    [[ $v != 0 ]] && { errors=1; echo "$f = $v"; }
done
if [[ $errors = 1 ]]; then
    expect_out "doctor shows the live error counters' totals as information" \
        '^info +counters +rxe[01]/1 +[0-9]+ error counters? (is|are) non-zero since the last reset' "$RDMACTL" doctor
    expect_out "doctor's fix says to watch them with --interval" 'rdmactl counters rxe[01]/1 --interval 1' cat "$LAST_OUT"
    expect_no_out "doctor without state does not warn on totals" '^warn +counters ' cat "$LAST_OUT"
    # A health check with state: the first run records the totals, the next one (nothing
    # moved in between) passes the counters.
    state=/tmp/counters-state/doctor.json
    rm -rf /tmp/counters-state
    expect_out "doctor --state, first run: a baseline, said as information" \
        '^info +counters +rxe[01]/1 +baseline of [0-9]+ counters recorded in /tmp/counters-state/doctor.json' \
        "$RDMACTL" doctor --state "$state"
    expect_out "doctor --state, second run: no error counter grew" \
        '^ok +counters +rxe[01]/1 +no error counter grew in the [0-9]+ s since the previous run' \
        "$RDMACTL" doctor --state "$state"
else
    skip_here "the kill left no error counter non-zero on this run (the survivor saw the TCP close first); doctor is checked on a tree below"
fi

# doctor on a tree whose rxe counted a QP that gave up (as after a peer killed mid-send).
tree=/tmp/counters-tree
p=$tree/class/infiniband/rxe0/ports/1
mkdir -p "$p/hw_counters" "$tree/class/net/veth0"
echo "4: ACTIVE" >"$p/state"; echo Ethernet >"$p/link_layer"; echo 1 >"$p/hw_counters/retry_exceeded_err"
echo 500 >"$p/hw_counters/sent_pkts"
expect_out "doctor on a tree: retry_exceeded_err is shown with its meaning" \
    'evidence: hw_counters/retry_exceeded_err 1: requester \(rxe\): retry count exhausted' \
    "$RDMACTL" --sysfs "$tree" doctor
# The same tree with state: recorded, unchanged, then one more QP gives up.
state=/tmp/counters-tree-state.json
rm -f "$state"
expect_out "doctor --state on the tree, first run: the old total is a baseline" \
    '^info +counters +rxe0/1 +baseline of 2 counters recorded in /tmp/counters-tree-state.json' \
    "$RDMACTL" --sysfs "$tree" doctor --state "$state"
expect_out "doctor --state, nothing grew: ok" '^ok +counters +rxe0/1 +no error counter grew' \
    "$RDMACTL" --sysfs "$tree" doctor --state "$state"
echo 2 >"$p/hw_counters/retry_exceeded_err"
expect_out "doctor --state, retry_exceeded_err grew: a warning with the delta" \
    '^warn +counters +rxe0/1 +1 error counter grew in the [0-9]+ s since the previous run: retry_exceeded_err \+1' \
    "$RDMACTL" --sysfs "$tree" doctor --state "$state"
expect_out "the evidence shows both values" 'evidence: hw_counters/retry_exceeded_err 1 -> 2: requester' cat "$LAST_OUT"
