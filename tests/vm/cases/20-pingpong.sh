# shellcheck shell=bash
# vm-timeout: 420
# rdmactl pingpong between rxe0 (server, 192.168.77.1) and rxe1 (client): every --op in the
# native exchange, -g auto, and both directions against a stock ibv_rc_pingpong. The
# failures are in 22-pingpong-failures.

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
        # Latency only for SEND (one at a time); WRITE and READ keep a window: rates only.
        check "native --op $op: client JSON has $n with iters $ITERS, bytes > 0, rates; latency for send only" \
            jq -e --arg n "$n" --argjson it "$ITERS" \
            '.ok == true and .ops[$n].iters == $it and .ops[$n].bytes > 0 and .ops[$n].seconds > 0
             and .ops[$n].mbit_per_sec > 0 and .ops[$n].usec_per_iter > 0 and .ops[$n].msgs_per_sec > 0
             and (if $n == "send"
                  then .ops[$n].window == 1 and .ops[$n].latency_usec.min > 0
                       and .ops[$n].latency_usec.p50 >= .ops[$n].latency_usec.min
                       and .ops[$n].latency_usec.p99 >= .ops[$n].latency_usec.p50
                       and .ops[$n].latency_usec.max >= .ops[$n].latency_usec.p99_9
                  else .ops[$n].window > 1 and (.ops[$n] | has("latency_usec") | not) end)' "$RESULTS/client-$op.json"
        check "native --op $op: server JSON has $n with iters $ITERS" \
            jq -e --arg n "$n" --argjson it "$ITERS" '.ok == true and .ops[$n].iters == $it and .ops[$n].bytes > 0' \
            "$RESULTS/server-$op.json"
    done
    if [[ $op != all ]]; then
        check "native --op $op: single-op figures also at the top level" \
            jq -e --argjson it "$ITERS" '.iters == $it and .bytes > 0 and .msgs_per_sec > 0' \
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

# --- -g auto on both ends, every op: each end picks index 1 (IPv4, RoCE v2) and says why
next_port
bg_server auto-server "$RDMACTL" pingpong -d rxe0 -g auto -p "$port" -n 50 --op all
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "-g auto: client and server (--op all) exit 0" \
    "$RDMACTL" -j pingpong -d rxe1 -g auto -p "$port" -n 50 --op all "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/auto-client.json"
check "-g auto: the client chose index 1, rejected index 0, and ran send, write and read" \
    jq -e '.ok and .gid_index == 1 and .gid_selection.chosen == 1
           and (.gid_selection.reasons[] | select(.index == 0) | .verdict == "rejected")
           and .ops.send.iters == 50 and .ops.write.iters == 50 and .ops.read.iters == 50' \
    "$RESULTS/auto-client.json"
wait_pid_timeout "$srv" 30
check "-g auto: the server exits 0" test $? -eq 0
expect_out "-g auto: the server prints its choice and the reason on stderr" \
    '^rdmactl: -g auto on rxe0/1 toward 192\.168\.77\.2: chose GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.1 on veth0\): RoCE v2, IPv4 like the peer' \
    cat "$RESULTS/auto-server.out"
expect_out "-g auto: the server says why index 0 was rejected" \
    '^  index 0 rejected: it is link-local IPv6' cat "$RESULTS/auto-server.out"

# --- -a on both ends: every size from 2 B to 8 MiB, one run each, one table (perftest's -a)
next_port
bg_server sweep-server "$RDMACTL" pingpong -a -d rxe0 -g 1 -p "$port" -n 5 --op write --report-gbits
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "-a: a sweeping client (--op write -n 5) exits 0" \
    "$RDMACTL" -j pingpong -a -d rxe1 -g 1 -p "$port" -n 5 --op write "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/sweep-client.json"
check "-a: one report per size, 2 B to 8 MiB doubling, each 5 WRITEs, all ok" \
    jq -e '.ok and .role == "client" and ([.sweep[].size] == [range(1; 24) | pow(2; .)])
           and all(.sweep[]; .ok and .ops.write.iters == 5 and .ops.write.mbit_per_sec > 0)' \
    "$RESULTS/sweep-client.json"
wait_pid_timeout "$srv" 60
check "-a: the server exits 0 after the client's last size" test $? -eq 0
expect_out "-a: the server's table says 23 sizes" '^server, -a sweep: 23 sizes$' cat "$RESULTS/sweep-server.out"
expect_out "-a --report-gbits: the server's table is in Gbit/sec" '^ *bytes +iters +write Gbit/sec +write msg/sec +write usec/iter$' \
    cat "$RESULTS/sweep-server.out"
expect_out "-a: the server's table has the 2 B row" '^ +2 +5 +[0-9.]+ +[0-9.]+ +[0-9.]+$' cat "$RESULTS/sweep-server.out"
check "-a: the server says it waits once, and does not announce each size it takes" \
    bash -c "[[ \$(grep -c 'waiting for a client' '$RESULTS/sweep-server.out') == 1 ]] && ! grep -q 'following the client' '$RESULTS/sweep-server.out'"
expect_out "-a: the server's table has the 8 MiB row" '^ *8388608 +5 +[0-9.]+ +[0-9.]+ +[0-9.]+$' cat "$RESULTS/sweep-server.out"
