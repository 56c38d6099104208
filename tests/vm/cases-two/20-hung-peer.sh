# shellcheck shell=bash
# vm-timeout: 300
# A hung peer across two kernels (issue 26, case 6): the pingpong server in guest B is
# stopped with SIGSTOP mid-run. Its process is alive (its TCP connection stays open), its HCA
# still ACKs (rxe answers in B's kernel), the link is up: the client in A, which waits, must
# name a hung peer, never a killed one, a link that went down or a namespace.

port=18750
FALSE_CAUSES='[Kk]illed|link went down|namespace'

bg_b hung-server "$RDMACTL" pingpong -d "$TWO_PEER_DEV" -g auto -p "$port"
srv=$B_PID
check "B's server listens on $port" on_b wait_listen "$port" 30
# Far more iterations than the run will get through (a SEND round trip takes tens of ms
# here): the run is under way when the server stops.
bg_start hung-client "$RDMACTL" pingpong -d "$TWO_DEV" -g auto -p "$port" -n 1000000 --op send --interval 1 "$TWO_PEER_V4"
cli=$BG_PID
check "the client's run is under way (a progress line)" wait_line "$RESULTS/hung-client.err" '^rdmactl: send [0-9]+ iters in' 60 "$cli"
sleep 3
check "B's server (pid $srv on B) stopped with SIGSTOP mid-run" on_b kill -STOP "$srv"
check "the server is stopped, not gone (state T on B)" on_b bash -c 'grep -q "^State:.*T" /proc/$1/status' _ "$srv"
wait_pid_timeout "$cli" 90
rc=$?
check "the client gives up on its own with a failure status (exit $rc, not 0, not the 90 s cut)" \
    test "$rc" -ne 0 -a "$rc" -ne 124
cat "$RESULTS/hung-client.out" "$RESULTS/hung-client.err" >"$RESULTS/hung-client.txt"
expect_out "the client names the hung peer" 'hung' one_line "$RESULTS/hung-client.txt"
expect_no_out "the client says neither killed, nor link went down, nor namespace" "$FALSE_CAUSES" \
    cat "$RESULTS/hung-client.txt"

# Resumed, the server finds its client gone: whatever it says, the link did not go down and
# no namespace is involved.
check "B's server resumed (SIGCONT)" on_b kill -CONT "$srv"
wait_b hung-server 60
rc=$?
check "the resumed server ends (exit $rc, not the 60 s cut)" test "$rc" -ne 124
expect_no_out "the resumed server blames no link and no namespace" 'link went down|namespace' \
    cat "$B_RESULTS/hung-server.out" "$B_RESULTS/hung-server.err"
