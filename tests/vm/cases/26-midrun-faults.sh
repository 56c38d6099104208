# shellcheck shell=bash
# vm-timeout: 300
# 26-midrun-faults: faults during a running ping-pong (TCP exchange), each named by its true
# cause on both ends, never "killed" or "link went down" or "namespace": the netdev's MTU cut
# under the QP, the QP's source GID removed, a hung peer (SIGSTOP), a stopped client that is
# resumed, a stock ibv_rc_pingpong client with a smaller -n, and one message longer than
# --timeout. Server `pingpong -d rxe1 -g 1`, client `pingpong -d rxe0 -g 1 -n 100000000
# --op send`, as issue 26 reproduced them.

R=$RDMACTL
SERVER_IP=192.168.77.2
FALSE='killed|link went down|namespace'

# A running pair, both with -j: $spid/$cpid, output in $RESULTS/NAME-{srv,cli}.{out,err}.
# Returns once the client has run a few seconds, so what the caller breaks next breaks a
# running transfer.
start_pair() {
    local name=$1 port=$2 tcp_to=${3:-$SERVER_IP}
    bg_start "$name-srv" $R -j pingpong -d rxe1 -g 1 -p "$port"
    spid=$BG_PID
    wait_listen "$port" 15 || return 1
    bg_start "$name-cli" $R -j pingpong -d rxe0 -g 1 -n 100000000 --op send -p "$port" "$tcp_to"
    cpid=$BG_PID
    sleep 3
    kill -0 "$cpid" && kill -0 "$spid"
}

# says NAME END DESC CODE REGEX: END's report (srv or cli) names CODE with REGEX in its
# summary (its own finding, or the peer's relayed), and no false cause anywhere in it.
says() {
    local name=$1 end=$2 desc=$3 code=$4 re=$5
    check "$desc: the $end names $code, /$re/" \
        jqf --arg c "$code" --arg re "$re" \
        '.failure.explanation.code == $c and (.failure.explanation.summary | test($re))' \
        "$RESULTS/$name-$end.out"
    expect_no_out "$desc: the $end says nothing false" "$FALSE" \
        cat "$RESULTS/$name-$end.out" "$RESULTS/$name-$end.err"
}

# --- 1. the server's netdev MTU cut below the QP's path MTU mid-run
check "mtu cut: the pair is running" start_pair mtu 19601
ip link set veth1 mtu 700
wait_pid_timeout "$cpid" 40; crc=$?
wait_pid_timeout "$spid" 40; src=$?
check "mtu cut: both ends exit 1 (client $crc, server $src)" test "$crc$src" = 11
says mtu srv "mtu cut" mtu-cut-midrun "rxe1/1 \\(the server\\): its active MTU 512 is below the QP's path MTU 1024"
says mtu cli "mtu cut" mtu-cut-midrun "rxe1/1 \\(the server\\): its active MTU 512 is below the QP's path MTU 1024"
# Debian 12's rxe counts the refused packets in completer_retry_err, not send_err: the
# evidence is the port's MTU itself.
check "mtu cut: the server's evidence names its active MTU now" \
    grep -q "active MTU 512 now, below the QP's path MTU 1024" "$RESULTS/mtu-srv.out"
restore_net
check "mtu cut: the network is back" wait_gids 20

# --- 2. the server's source GID removed mid-run (its address moved to .3). On one host the
# TCP connection to .2 dies with the address (its segments are no longer delivered), so
# the out-of-band connection here goes to the client's own .1, where the server listens
# too, as on a cluster whose out-of-band network is not the RoCE one.
check "gid removed: the pair is running" start_pair gid 19602 192.168.77.1
ip addr del 192.168.77.2/24 dev veth1
ip addr add 192.168.77.3/24 dev veth1
wait_pid_timeout "$cpid" 40; crc=$?
wait_pid_timeout "$spid" 40; src=$?
check "gid removed: both ends exit 1 (client $crc, server $src)" test "$crc$src" = 11
says gid srv "gid removed" gid-removed-midrun "GID index 1 \\(::ffff:192\\.168\\.77\\.2\\) of rxe1/1 \\((this end|the server)\\) left the GID table"
says gid cli "gid removed" gid-removed-midrun "left the GID table"
restore_net
check "gid removed: the network is back" wait_gids 20

# --- 3. a hung server (SIGSTOP): the client says so, and that it is alive
check "hung server: the pair is running" start_pair hung 19603
kill -STOP "$spid"
wait_pid_timeout "$cpid" 40; crc=$?
check "hung server: the client exits 1" test "$crc" = 1
says hung cli "hung server" peer-hung "the peer's process is hung"
check "hung server: the client's evidence: the peer's kernel acknowledged the probe" \
    grep -q "the peer's kernel acknowledged it" "$RESULTS/hung-cli.out"
check "hung server: the server is still there (stopped, not dead)" kill -0 "$spid"
kill -KILL "$spid"
kill -CONT "$spid" 2>/dev/null
wait_pid_timeout "$spid" 10 >/dev/null

# --- 4. a stopped client, resumed after the server gave up: it names its own stop
check "stopped client: the pair is running" start_pair stop 19604
kill -STOP "$cpid"
wait_pid_timeout "$spid" 40; src=$?
check "stopped client: the server exits 1" test "$src" = 1
says stop srv "stopped client" peer-hung "the peer's process is hung"
sleep 1
kill -CONT "$cpid"
wait_pid_timeout "$cpid" 40; crc=$?
check "stopped client: the resumed client exits 1" test "$crc" = 1
says stop cli "stopped client" process-stopped "this process was stopped for [0-9.]+ s"
expect_no_out "stopped client: the client does not relay the server's blame" \
    'found the cause' cat "$RESULTS/stop-cli.out"

# --- 5. a stock ibv_rc_pingpong client with -n 100 against an rdmactl server (-n 1000)
if command -v ibv_rc_pingpong >/dev/null; then
    bg_start stock-srv $R -j pingpong -d rxe1 -g 1 -p 19605
    spid=$BG_PID
    wait_listen 19605 15
    expect_rc 0 "stock -n 100 client: it finishes its 100 iterations" \
        ibv_rc_pingpong -d rxe0 -g 1 -n 100 -p 19605 "$SERVER_IP"
    wait_pid_timeout "$spid" 40; src=$?
    check "stock -n 100 client: the server exits 1" test "$src" = 1
    says stock srv "stock -n 100 client" peer-finished-early \
        "the peer probably ran a smaller -n and stopped after 100"
    check "stock -n 100 client: the fix is the same -n" \
        jqf '.failure.explanation.fix | test("use the same -n on both ends")' "$RESULTS/stock-srv.out"
else
    skip_here "ibv_rc_pingpong is not installed"
fi

# --- 6. one message longer than --timeout: packets keep flowing, so the wait goes on
# (100 MB: 2 x 2 buffers fit the VM's memory; under TCG one takes several seconds).
bg_start big-srv $R pingpong -d rxe1 -g 1 -p 19606 --timeout 2
spid=$BG_PID
wait_listen 19606 15
_lib_run $R pingpong -d rxe0 -g 1 -s 100000000 -n 2 --op send --timeout 2 -p 19606 "$SERVER_IP"
bigrc=$LAST_RC
cp "$LAST_OUT" "$RESULTS/big-cli.out"
if [[ $bigrc == 0 ]]; then
    check "big message: -s 100000000 -n 2 with --timeout 2 passes" test "$bigrc" = 0
else
    expect_out "big message: the failure says what one message needs" \
        'one 100000000-byte message needs about [0-9.]+ s here, more than --timeout 2' cat "$RESULTS/big-cli.out"
fi
expect_out "big message: -s above max_msg_sz is warned" \
    "warning: -s 100000000 is larger than rxe0/1's max_msg_sz 8388608" cat "$RESULTS/big-cli.out"
wait_pid_timeout "$spid" 60 >/dev/null
expect_no_out "big message: nothing false on either end" "$FALSE" \
    cat "$RESULTS/big-cli.out" "$RESULTS/big-srv.out" "$RESULTS/big-srv.err"
restore_net
