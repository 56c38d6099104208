# shellcheck shell=bash
# vm-timeout: 240
# res: the kernel's RDMA resources of running processes, read over the RDMA netlink.
# ibv_rc_pingpong's two ends list their RC QPs in RTS with PSNs that iproute2's
# `rdma res show qp` agrees with; a SIGSTOPped end's QP is stalled (its process stopped)
# and its running peer's QP only "not moving"; a survivor whose peer was killed while its
# writes were in flight has its QP in ERR while it lives; an rdmactl pingpong --cm run's
# rdma_cm IDs show their addresses; a process holding nothing is called out; a PID that
# does not exist is an error naming it.

SERVER_IP=192.168.77.1
[ -d /sys/class/misc/rdma_cm ] || modprobe rdma_ucm

# --- ibv_rc_pingpong running: both ends' RC QPs in RTS, with their processes
bg_start rc-server ibv_rc_pingpong -d rxe0 -g 1 -p 18911 -n 100000000
srv=$BG_PID
wait_listen 18911 15
bg_start rc-client ibv_rc_pingpong -d rxe1 -g 1 -p 18911 -n 100000000 "$SERVER_IP"
cli=$BG_PID
# Its address lines sit in a full stdio buffer until it exits: give the pair time instead.
sleep 3
check "both ibv_rc_pingpong ends still run" kill -0 "$srv" "$cli"
expect_no_out "res does not panic" 'panicked' "$RDMACTL" res
cp "$LAST_OUT" "$RESULTS/res-running.txt"
expect_rc 0 "res -j: exit 0 with every QP healthy" "$RDMACTL" -j res
cp "$LAST_STDOUT" "$RESULTS/res-running.json"
json_has "the server's RC QP in RTS on rxe0/1 with PSNs" "$RESULTS/res-running.json" \
    device=rxe0 port=1 type=RC state=RTS "pid=$srv" 'sq_psn=[0-9]+' 'rq_psn=[0-9]+' 'rqpn=[0-9]+'
json_has "the client's RC QP in RTS on rxe1/1" "$RESULTS/res-running.json" \
    device=rxe1 port=1 type=RC state=RTS "pid=$cli"
json_has "the server process with its command, state and MRs" "$RESULTS/res-running.json" \
    "pid=$srv" comm=ibv_rc_pingpong 'state=[RS]' 'qps=[1-9][0-9]*' 'mrs=[1-9][0-9]*' 'mr_bytes=[1-9][0-9]*'
expect_out "the text lists the server's QP as rdma res show qp does" \
    "^rxe0/1 +[0-9]+ +RC +RTS +[0-9]+ +0x[0-9a-f]+ +0x[0-9a-f]+ +$srv +ibv_rc_pingpong" cat "$RESULTS/res-running.txt"

# --- the client stopped: its QP is stalled, and the server's (waiting for it) only still
kill -STOP "$cli"
sleep 0.5
expect_rc 1 "res --interval 1 with a stopped end: exit 1" "$RDMACTL" res --interval 1
cp "$LAST_OUT" "$RESULTS/res-stopped.txt"
expect_out "the stopped client's QP is stalled, named with its process" \
    "^warn +qp-stalled +rxe1/1 +QP [0-9]+ of pid $cli \(ibv_rc_pingpong\) is stalled: its process is stopped" cat "$RESULTS/res-stopped.txt"
expect_out "the evidence is the process state T" "evidence: pid $cli \(ibv_rc_pingpong\): state T \(stopped by a signal\)" cat "$RESULTS/res-stopped.txt"
expect_out "the running server's QP: not moving, idle or stalled not decided" \
    "^info +qp-no-progress +rxe0/1 +QP [0-9]+ of pid $srv \(ibv_rc_pingpong\) moved no packet .*idle or stalled, not decided" cat "$RESULTS/res-stopped.txt"
expect_no_out "the running server is never called stalled" "qp-stalled .*pid $srv " cat "$RESULTS/res-stopped.txt"

# The same QP read by iproute2 (both ends still: the PSNs stand): QPNs, state and PSNs agree.
"$RDMACTL" -j res --pid "$srv" >"$RESULTS/res-srv.json" 2>&1
rdma -j res show qp link rxe0/1 >"$RESULTS/rdma-qp.json" 2>&1
lq=$(jq -r '.qps[0].lqpn' "$RESULTS/res-srv.json")
ours=$(jq -r '.qps[0] | "\(.rqpn) \(.type) \(.state) \(.sq_psn) \(.rq_psn) \(.pid)"' "$RESULTS/res-srv.json")
theirs=$(jq -r -s --argjson q "${lq:-0}" \
    '[.[] | if type == "array" then .[] else . end] | .[] | select(.lqpn == $q) | "\(.rqpn) \(.type) \(.state) \(."sq-psn") \(."rq-psn") \(.pid)"' \
    "$RESULTS/rdma-qp.json")
echo "rdmactl: $ours / rdma res show qp: $theirs" >"$RESULTS/compare.txt"
check "rdmactl and rdma res show qp agree on QP $lq ($ours)" test -n "$ours" -a "$ours" = "$theirs"
kill -KILL "$cli" "$srv" 2>/dev/null
wait_pid_timeout "$srv" 5 >/dev/null 2>&1
wait_pid_timeout "$cli" 5 >/dev/null 2>&1

# --- a killed peer: rdmactl's WRITE bandwidth run keeps writes in flight; its server is
# killed and its client stopped at once, so the client's retries (retry_cnt 6) run out in
# the kernel while the client lives: its QP goes to ERR.
bg_start w-server "$RDMACTL" pingpong -d rxe0 -g 1 -p 18912 --op write -s 65536 -n 100000000 --timeout 60
wsrv=$BG_PID
wait_listen 18912 15
bg_start w-client "$RDMACTL" pingpong -d rxe1 -g 1 -p 18912 --op write -s 65536 -n 100000000 --timeout 60 "$SERVER_IP"
wcli=$BG_PID
sleep 3
kill -KILL "$wsrv"; kill -STOP "$wcli"
sleep 4
"$RDMACTL" -j res --pid "$wcli" >"$RESULTS/res-killed.json" 2>&1
if jq -e '.qps[] | select(.state == "ERR")' "$RESULTS/res-killed.json" >/dev/null; then
    expect_rc 1 "res --pid on the survivor: exit 1" "$RDMACTL" res --pid "$wcli"
    cp "$LAST_OUT" "$RESULTS/res-killed.txt"
    expect_out "the survivor's QP in ERR is a dead connection" \
        "^FAIL +qp-error-live +rxe1/1 +QP [0-9]+ of pid $wcli \(rdmactl\) is in ERR while the process lives: a dead connection" cat "$RESULTS/res-killed.txt"
    expect_out "no CM ID: the peer is named by its QPN" 'no rdma_cm ID holds QP [0-9]+: .*its peer is QP [0-9]+ on the other host' cat "$RESULTS/res-killed.txt"
else
    jq -c '.qps' "$RESULTS/res-killed.json" >&2
    skip_here "rxe left the survivor's QP out of ERR 4 s after its peer was killed"
fi
kill -KILL "$wcli" 2>/dev/null
wait_pid_timeout "$wcli" 5 >/dev/null 2>&1

# --- rdma_cm: rdmactl pingpong --cm, both ends' IDs with their addresses
bg_start cm-server "$RDMACTL" pingpong --cm -d rxe0 -p 18913 -n 100000000 --timeout 60
csrv=$BG_PID
check "pingpong --cm server listens" wait_line "$RESULTS/cm-server.err" '^listening on' 15 "$csrv"
bg_start cm-client "$RDMACTL" pingpong --cm -d rxe1 -p 18913 -n 100000000 --timeout 60 "$SERVER_IP"
ccli=$BG_PID
sleep 3
check "res -j with rdma_cm IDs" "$RDMACTL" -j res
cp "$LAST_STDOUT" "$RESULTS/res-cm.json"
json_has "the client's connected ID toward 192.168.77.1:18913" "$RESULTS/res-cm.json" \
    "pid=$ccli" state=CONNECT port_space=TCP 'src=192\.168\.77\.[12]:[0-9]+' 'dst=192\.168\.77\.1:18913' 'lqpn=[0-9]+'
json_has "the server's listening ID on port 18913" "$RESULTS/res-cm.json" "pid=$csrv" state=LISTEN 'src=.*:18913'
"$RDMACTL" res >"$RESULTS/res-cm.txt" 2>&1
expect_out "the text says the TOS is not reported" "does not report an rdma_cm ID's type of service" cat "$RESULTS/res-cm.txt"
kill -KILL "$ccli" "$csrv" 2>/dev/null
wait_pid_timeout "$csrv" 5 >/dev/null 2>&1
wait_pid_timeout "$ccli" 5 >/dev/null 2>&1

# --- a process with no RDMA resource, named; and one that does not exist
sleep 60 &
idle=$!
expect_rc 1 "res --pid on a sleep: exit 1" "$RDMACTL" res --pid "$idle"
expect_out "a process holding nothing is called out" \
    "^warn +no-rdma-resources +pid $idle +pid $idle \(sleep\) holds no QP and no MR: it is not using RDMA" cat "$LAST_OUT"
expect_out "it never opened a uverbs device" 'holds no /dev/infiniband/uverbs device open' cat "$LAST_OUT"
expect_out "the fix says how to confirm a TCP fallback" 'Using network Socket' cat "$LAST_OUT"
expect_rc 1 "res --comm sleep: the same" "$RDMACTL" res --comm sleep
kill "$idle" 2>/dev/null
expect_rc 3 "res --pid of no process: exit 3" "$RDMACTL" res --pid 4000000
expect_out "the error names the PID" 'no process 4000000: /proc/4000000 does not exist' cat "$LAST_OUT"
