# shellcheck shell=bash
# vm-timeout: 360
# Issue 36: `rdmactl pingpong --op write` against a stock ibv_rc_pingpong, in both roles. The
# stock tool does SEND only and its exchange carries no operation: rdmactl refuses at the
# handshake, names that cause (and no false one: no "0 iters", no "stuck or gone"), closes
# the TCP connection, which makes the stock tool exit 1, and ends well within --timeout
# (it once printed "send 0 iters in 28.99 seconds" past --timeout 10, until a signal).
# Then a second client while the server is busy with one: told so, at once.

SERVER_IP=192.168.77.1
port=18800
next_port() { port=$((port + 1)); }
# The run must end within --timeout 5; a few seconds more are process starts under TCG.
LIMIT=8

# --- rdmactl server --op write, stock ibv_rc_pingpong client
next_port
bg_server opw-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" --op write --timeout 5
srv=$BG_PID
check "server --op write listens" wait_listen "$port" 15
start=$SECONDS
expect_rc 1 "stock client against a --op write server: exits 1" \
    timeout 30 ibv_rc_pingpong -d rxe1 -g 1 -p "$port" "$SERVER_IP"
cp "$LAST_OUT" "$RESULTS/stock-client.all"
wait_pid_timeout "$srv" 30
rc=$?
took=$((SECONDS - start))
check "server --op write: exits 1 (got $rc)" test "$rc" -eq 1
check "server --op write: both ends done within --timeout (took $took s)" test "$took" -le "$LIMIT"
expect_out "stock client: its server closed the connection before answering" \
    "Couldn't read/write remote address" cat "$RESULTS/stock-client.all"
expect_no_out "stock client: never started a ping-pong" 'iters in' cat "$RESULTS/stock-client.all"
expect_out "server --op write: the true cause, in one line" \
    "why: +the client is a stock ibv_rc_pingpong, which only does SEND; --op write needs an rdmactl client" \
    cat "$RESULTS/opw-server.out"
expect_out "server --op write: says it closed the connection, which makes the stock client exit" \
    "seen: .*closed the connection before answering, which makes the stock client exit" \
    cat "$RESULTS/opw-server.out"
expect_out "server --op write: the fix names an rdmactl client or --op send" \
    "fix: +start the client as .rdmactl pingpong --op write SERVER., or .*--op send" \
    cat "$RESULTS/opw-server.out"
expect_no_out "server --op write: no false cause (no 0 iters, no stuck or gone, no timeout)" \
    ' 0 iters|stuck or gone|no completion|panicked' cat "$RESULTS/opw-server.out"

# --- the same, -j: the code and the cause's kind
next_port
bg_server opw-server-json "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" --op read --timeout 5
srv=$BG_PID
check "server -j --op read listens" wait_listen "$port" 15
expect_rc 1 "stock client against a -j --op read server: exits 1" \
    timeout 30 ibv_rc_pingpong -d rxe1 -g 1 -p "$port" "$SERVER_IP"
wait_pid_timeout "$srv" 30
rc=$?
check "server -j --op read: exits 1 (got $rc)" test "$rc" -eq 1
sed -n '/^{/,/^}$/p' "$RESULTS/opw-server-json.out" >"$RESULTS/opw-server.json"
check "server -j --op read: code stock-peer-send-only, cause stock_peer_send_only (read, client)" \
    jqf -e '.ok == false and .failure.explanation.code == "stock-peer-send-only"
        and .failure.cause.kind == "stock_peer_send_only" and .failure.cause.ops == 4
        and .failure.cause.peer == "client" and .failure.step == "compare"' "$RESULTS/opw-server.json"

# --- stock ibv_rc_pingpong server, rdmactl client --op write
next_port
bg_server stock-server ibv_rc_pingpong -d rxe0 -g 1 -p "$port"
srv=$BG_PID
check "stock server listens" wait_listen "$port" 15
start=$SECONDS
expect_rc 1 "client --op write against a stock server: exits 1" \
    timeout 30 "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --op write --timeout 5 "$SERVER_IP"
took=$((SECONDS - start))
cp "$LAST_OUT" "$RESULTS/opw-client.all"
check "client --op write: done within --timeout (took $took s)" test "$took" -le "$LIMIT"
expect_out "client --op write: the true cause, in one line" \
    "why: +the server is a stock ibv_rc_pingpong, which only does SEND; --op write needs an rdmactl server" \
    cat "$RESULTS/opw-client.all"
expect_no_out "client --op write: no false cause (no 0 iters, no stuck or gone, no timeout)" \
    ' 0 iters|stuck or gone|no completion|panicked' cat "$RESULTS/opw-client.all"
wait_pid_timeout "$srv" 20
rc=$?
check "stock server: exits 1 once the client closed (got $rc)" test "$rc" -eq 1
expect_out "stock server: its client closed before 'done'" \
    "Couldn't send/recv local address" cat "$RESULTS/stock-server.out"
expect_no_out "stock server: never started a ping-pong" 'iters in' cat "$RESULTS/stock-server.out"

# --- without --op, both roles still run the stock SEND ping-pong (nothing refused)
next_port
bg_server send-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20
srv=$BG_PID
check "server without --op listens" wait_listen "$port" 15
expect_out "stock client against a server without --op completes" \
    '^20 iters in' timeout 30 ibv_rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 "$SERVER_IP"
wait_pid_timeout "$srv" 30
check "server without --op: exits 0 (got $?)" test $? -eq 0

# --- a second client while the server is busy with one
next_port
bg_server busy-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port"
srv=$BG_PID
check "busy server listens" wait_listen "$port" 15
bg_start first-client "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --duration 12 --op write "$SERVER_IP"
first=$BG_PID
check "the server took the first client" wait_line "$RESULTS/busy-server.out" 'following the client' 20 "$srv"
start=$SECONDS
expect_rc 1 "second rdmactl client: exits 1" \
    timeout 30 "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --timeout 5 "$SERVER_IP"
took=$((SECONDS - start))
cp "$LAST_OUT" "$RESULTS/second-client.all"
check "second rdmactl client: told within --timeout (took $took s)" test "$took" -le "$LIMIT"
expect_out "second rdmactl client: the server is busy with a client from its address" \
    'the server is busy with a client from 192\.168\.77\.[12]:[0-9]+' cat "$RESULTS/second-client.all"
expect_no_out "second rdmactl client: no false cause" \
    'stuck or gone|not rdmactl|no answer|panicked' cat "$RESULTS/second-client.all"
expect_rc 1 "stock client against the busy server: exits 1" \
    timeout 30 ibv_rc_pingpong -d rxe1 -g 1 -p "$port" "$SERVER_IP"
expect_out "stock client against the busy server: the connection closed before an answer" \
    "Couldn't read/write remote address" cat "$LAST_OUT"
wait_pid_timeout "$first" 60
check "the first client's run was not disturbed: exits 0 (got $?)" test $? -eq 0
wait_pid_timeout "$srv" 30
check "the busy server exits 0 after the first client's run (got $?)" test $? -eq 0
expect_out "the first client measured WRITE" '^write +[0-9]+ iters in' cat "$RESULTS/first-client.out"

# --- the same with --persist: busy while it serves one client, free again afterwards
next_port
bg_start persist-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" --persist
srv=$BG_PID
check "--persist server listens" wait_listen "$port" 15
bg_start persist-first "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --duration 10 --op write "$SERVER_IP"
first=$BG_PID
check "--persist: the server took the first client" wait_line "$RESULTS/persist-server.err" 'following the client' 20 "$srv"
start=$SECONDS
expect_rc 1 "--persist, second rdmactl client: exits 1" \
    timeout 30 "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --timeout 5 "$SERVER_IP"
took=$((SECONDS - start))
cp "$LAST_OUT" "$RESULTS/persist-second.all"
check "--persist, second rdmactl client: told within --timeout (took $took s)" test "$took" -le "$LIMIT"
expect_out "--persist, second rdmactl client: the server is busy with a client from its address" \
    'why: +the server found the cause: the server is busy with a client from 192\.168\.77\.[12]:[0-9]+' \
    cat "$RESULTS/persist-second.all"
expect_no_out "--persist, second rdmactl client: no false cause" \
    'stuck or gone|not rdmactl|no answer|panicked' cat "$RESULTS/persist-second.all"
wait_pid_timeout "$first" 60
check "--persist: the first client's run was not disturbed: exits 0 (got $?)" test $? -eq 0
expect_rc 0 "--persist: once free, the next client is served" \
    timeout 30 "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 --timeout 5 "$SERVER_IP"
kill -INT "$srv"
wait_pid_timeout "$srv" 15
check "--persist: the server ends on SIGINT between clients (got $?)" test $? -eq 130
expect_no_out "--persist: the server explained no failure (the busy answer is not one of its runs)" \
    'why:|panicked' cat "$RESULTS/persist-server.err"
