# shellcheck shell=bash
# vm-timeout: 300
# A netdev MTU cut mid-run across two kernels (issue 26, case 1): guest B's eth0 goes to MTU
# 700 during a SEND run, so rxb's active MTU (512) falls below the QP's path MTU (1024) and
# B's rxe refuses to transmit (send_err climbs). Both ends must say "below the QP's path MTU"
# (the far end learns it from the peer), and neither killed, link went down nor namespace.

port=18760
FALSE_CAUSES='[Kk]illed|link went down|namespace'
TRUE_CAUSE="below the QP's path MTU"

bg_b mtu-server "$RDMACTL" pingpong -d "$TWO_PEER_DEV" -g auto -p "$port"
check "B's server listens on $port" on_b wait_listen "$port" 30
bg_start mtu-client "$RDMACTL" pingpong -d "$TWO_DEV" -g auto -p "$port" -n 1000000 --op send --interval 1 "$TWO_PEER_V4"
cli=$BG_PID
check "the client's run is under way (a progress line)" wait_line "$RESULTS/mtu-client.err" '^rdmactl: send [0-9]+ iters in' 60 "$cli"
sleep 3
check "B's eth0 cut to MTU 700 mid-run" on_b ip link set eth0 mtu 700
expect_out "B's $TWO_PEER_DEV now has active MTU 512" 'active_mtu:[[:space:]]+512' on_b ibv_devinfo -d "$TWO_PEER_DEV"
on_b ip -s link show eth0 >"$RESULTS/b-eth0-after-cut.txt" 2>&1
wait_pid_timeout "$cli" 90
rc=$?
check "the client gives up on its own with a failure status (exit $rc, not 0, not the 90 s cut)" \
    test "$rc" -ne 0 -a "$rc" -ne 124
wait_b mtu-server 90
rc=$?
check "B's server ends on its own with a failure status (exit $rc, not 0, not the 90 s cut)" \
    test "$rc" -ne 0 -a "$rc" -ne 124
cat "$RESULTS/mtu-client.out" "$RESULTS/mtu-client.err" >"$RESULTS/mtu-client.txt"
cat "$B_RESULTS/mtu-server.out" "$B_RESULTS/mtu-server.err" >"$RESULTS/mtu-server.txt"
expect_out "the client (A) says the MTU fell below the QP's path MTU" "$TRUE_CAUSE" one_line "$RESULTS/mtu-client.txt"
expect_out "the server (B) says the MTU fell below the QP's path MTU" "$TRUE_CAUSE" one_line "$RESULTS/mtu-server.txt"
expect_no_out "the client says neither killed, nor link went down, nor namespace" "$FALSE_CAUSES" \
    cat "$RESULTS/mtu-client.txt"
expect_no_out "the server says neither killed, nor link went down, nor namespace" "$FALSE_CAUSES" \
    cat "$RESULTS/mtu-server.txt"
# Below 1280 the kernel drops eth0's IPv6 addresses (and rxb's fd78:: GID); the runner's
# restore after the case adds them back.
check "B's eth0 back to MTU 1500" on_b ip link set eth0 mtu 1500
