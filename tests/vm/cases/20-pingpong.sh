# shellcheck shell=bash
# vm-timeout: 420
# rdmactl pingpong between rxe0 (server, 192.168.77.1) and rxe1 (client): every --op in the
# native exchange, both directions against a stock ibv_rc_pingpong, and the failures that
# must be reported quickly and clearly: garbage handshake, no listener, peer killed mid-run.

SERVER_IP=192.168.77.1
ITERS=200
port=18600
next_port() { port=$((port + 1)); }
# A background server's output file has its stderr notes around the JSON document.
json_part() { sed -n '/^{/,/^}$/p' "$1"; }

# A server on rxe0 and a client on rxe1, both with -g 1 and --json; checks both results.
native_pair() { # native_pair OP
    local op=$1
    next_port
    bg_server "server-$op" "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" -n "$ITERS" --op "$op"
    local srv=$BG_PID
    wait_listen "$port" 15
    expect_rc 0 "native --op $op: client rxe1 -> server rxe0 exits 0" \
        "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -n "$ITERS" --op "$op" "$SERVER_IP"
    cp "$LAST_STDOUT" "$RESULTS/client-$op.json"
    wait_pid_timeout "$srv" 30
    local src=$?
    check "native --op $op: server exits 0 (got $src)" test "$src" -eq 0
    json_part "$RESULTS/server-$op.out" >"$RESULTS/server-$op.json"
    local names=$op
    [[ $op == all ]] && names="send write read"
    local n
    for n in $names; do
        check "native --op $op: client JSON has $n with iters $ITERS, bytes > 0, latency" \
            jq -e --arg n "$n" --argjson it "$ITERS" \
            '.ok == true and .ops[$n].iters == $it and .ops[$n].bytes > 0 and .ops[$n].seconds > 0
             and .ops[$n].mbit_per_sec > 0 and .ops[$n].usec_per_iter > 0
             and .ops[$n].latency_usec.min > 0 and .ops[$n].latency_usec.median >= .ops[$n].latency_usec.min
             and .ops[$n].latency_usec.p99 >= .ops[$n].latency_usec.median' "$RESULTS/client-$op.json"
        check "native --op $op: server JSON has $n with iters $ITERS" \
            jq -e --arg n "$n" --argjson it "$ITERS" '.ok == true and .ops[$n].iters == $it and .ops[$n].bytes > 0' \
            "$RESULTS/server-$op.json"
    done
    if [[ $op != all ]]; then
        check "native --op $op: single-op figures also at the top level" \
            jq -e --argjson it "$ITERS" '.iters == $it and .bytes > 0 and (.latency_usec | has("p99"))' \
            "$RESULTS/client-$op.json"
    fi
}

for op in send write read all; do
    native_pair "$op"
done

# The seed scenario in text form: both ends say what they verified.
next_port
bg_server server-text "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 50
srv=$BG_PID
wait_listen "$port" 15
expect_out "text output: the client verified the server's READ buffer" \
    "read +verified: read the peer's 4096-byte buffer and it matched" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 50 "$SERVER_IP"
expect_out "text output: per-op lines like ibv_rc_pingpong's" \
    "^send +50 iters in [0-9.]+ seconds = [0-9.]+ usec/iter" cat "$LAST_STDOUT"
wait_pid_timeout "$srv" 30
check "text output: server exits 0" test $? -eq 0

# --- ibv_rc_pingpong as the server, rdmactl as the client
next_port
bg_server stock-server ibv_rc_pingpong -d rxe0 -g 1 -p "$port" -n "$ITERS"
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "compat: rdmactl client against a stock ibv_rc_pingpong server exits 0" \
    "$RDMACTL" -j pingpong --compat rc_pingpong -d rxe1 -g 1 -p "$port" -n "$ITERS" "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/compat-client.json"
check "compat: client JSON reports $ITERS send iterations" \
    jq -e --argjson it "$ITERS" '.exchange == "rc_pingpong" and .ops.send.iters == $it and .bytes > 0' \
    "$RESULTS/compat-client.json"
wait_pid_timeout "$srv" 30
check "compat: the stock server exits 0 (got $?)" test $? -eq 0
expect_out "compat: the stock server completed $ITERS iterations" "^$ITERS iters in" cat "$RESULTS/stock-server.out"

# --- rdmactl as the server (format detected), ibv_rc_pingpong as the client
next_port
bg_server detect-server "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" -n "$ITERS"
srv=$BG_PID
wait_listen "$port" 15
expect_out "compat: a stock ibv_rc_pingpong client against an rdmactl server completes" \
    "^$ITERS iters in" ibv_rc_pingpong -d rxe1 -g 1 -p "$port" -n "$ITERS" "$SERVER_IP"
check "compat: the stock client exits 0" test "$LAST_RC" -eq 0
wait_pid_timeout "$srv" 30
check "compat: the rdmactl server exits 0" test $? -eq 0
json_part "$RESULTS/detect-server.out" >"$RESULTS/detect-server.json"
check "compat: the server detected the rc_pingpong format and counted $ITERS iterations" \
    jq -e --argjson it "$ITERS" '.exchange == "rc_pingpong" and .ops.send.iters == $it' "$RESULTS/detect-server.json"

# --- garbage instead of a handshake: a clear error, no hang
next_port
bg_server garbage-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port"
srv=$BG_PID
wait_listen "$port" 15
bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"; printf "garbage\n" >&3; sleep 1' _ "$port"
wait_pid_timeout "$srv" 10
check "garbage: the server exits 1 within 10 s (got $?)" test $? -eq 1
expect_out "garbage: the server quotes what it got and says what it expected" \
    'exchange \(TCP\) failed.*"garbage\\n".*neither an rdmactl exchange nor ibv_rc_pingpong' \
    cat "$RESULTS/garbage-server.out"
expect_no_out "garbage: no panic" 'panicked' cat "$RESULTS/garbage-server.out"

# --- -g 1 against -g 0: caught from the exchange, before RTR, on both ends
next_port
bg_server mixed-server "$RDMACTL" pingpong -d rxe0 -g 0 -p "$port" -n 10
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "mixed GIDs: the client (-g 1) exits 1" "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 10 "$SERVER_IP"
expect_out "mixed GIDs: the client says the families differ, before RTR" \
    'compare parameters failed.*GID address families differ: this end.s GID is IPv4-mapped, the peer.s is link-local' \
    cat "$LAST_OUT"
wait_pid_timeout "$srv" 10
check "mixed GIDs: the server (-g 0) exits 1 too" test $? -eq 1
expect_out "mixed GIDs: the server says so as well" 'GID address families differ' cat "$RESULTS/mixed-server.out"

# --- nobody listening: a clear error within the timeout
start=$SECONDS
expect_rc 1 "no listener: the client exits 1" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p 18999 --timeout 3 "$SERVER_IP"
took=$((SECONDS - start))
expect_out "no listener: the error names the step, the peer and ECONNREFUSED" \
    'connect \(TCP\) failed \(.*peer 192\.168\.77\.1:18999\): ECONNREFUSED' cat "$LAST_OUT"
# The bound allows for starting a process in a loaded TCG guest (several seconds at worst).
check "no listener: reported within --timeout plus start-up slack (took $took s)" test "$took" -le 10

# An address nobody answers ARP for: the connect itself must give up at --timeout.
start=$SECONDS
expect_out "silent address: the connect gives up at --timeout 2 (before ARP fails) and says so" \
    'connect \(TCP\) failed \(.*peer 192\.168\.77\.9:[0-9]+\): no answer within' \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p 18999 --timeout 2 192.168.77.9
took=$((SECONDS - start))
check "silent address: exits 1" test "$LAST_RC" -eq 1
check "silent address: reported after about 2 s (took $took s)" test "$took" -ge 2 -a "$took" -le 10

# --- the peer killed with SIGKILL mid-run: reported within 10 s
next_port
bg_server victim-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 1000000 --op send
victim=$BG_PID
wait_listen "$port" 15
BG_TIMEOUT=60 bg_server survivor-client "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 1000000 --op send "$SERVER_IP"
survivor=$BG_PID
sleep 3
check "kill: the ping-pong is running before the kill" kill -0 "$survivor"
# bg_server runs the command under timeout(1): kill the rdmactl process itself.
pkill_target=$(pgrep -P "$victim" -x rdmactl || echo "$victim")
kill -KILL "$pkill_target"
killed_at=$SECONDS
wait_pid_timeout "$survivor" 12
rc=$?
check "kill: the surviving client exits 1 (got $rc)" test "$rc" -eq 1
check "kill: reported within 10 s (took $((SECONDS - killed_at)) s)" test $((SECONDS - killed_at)) -le 10
expect_out "kill: the client names the failed step and status or timeout" \
    'pingpong failed: (poll CQ failed|work completion failed).*(IBV_WC_RETRY_EXC_ERR|stopped answering|no completion)' \
    cat "$RESULTS/survivor-client.out"
wait_pid_timeout "$victim" 5 >/dev/null 2>&1
restore_net
