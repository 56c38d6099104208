# shellcheck shell=bash
# vm-timeout: 300
# triage on real failure logs made here by the real tools: rdmactl's own pingpong whose
# packets are dropped (no accept_local: RTR ETIMEDOUT or retries exceeded), Debian's
# ibv_rc_pingpong (rdma-core 44) and ib_send_bw (perftest 4.5) given an empty GID slot, and
# ucx_perftest (UCX 1.13, rc_verbs) toward a server killed mid-run with a small retry count.
# Each log is kept in $RESULTS; triage names the root line, the code and the next command
# with the run's own device and GID index, and never panics.

SERVER_IP=192.168.77.1
triage_of() { # triage_of NAME: triage $RESULTS/NAME.log, text and -j
    expect_no_out "$1: triage does not panic" 'panicked' "$RDMACTL" triage "$RESULTS/$1.log"
    cp "$LAST_OUT" "$RESULTS/$1.triage"
    "$RDMACTL" -j triage "$RESULTS/$1.log" >"$RESULTS/$1.triage.json" 2>&1
}

# --- rdmactl: packets dropped between veth0 and veth1 (as case 22): the client's failure line
for f in all veth0 veth1; do echo 0 >"/proc/sys/net/ipv4/conf/$f/accept_local"; done
ip neigh flush dev veth0
ip neigh flush dev veth1
bg_server rdmactl-server "$RDMACTL" pingpong -d rxe0 -g 1 -p 18801 -n 10 --timeout 5
srv=$BG_PID
wait_listen 18801 15
"$RDMACTL" pingpong -d rxe1 -g 1 -p 18801 -n 10 --timeout 5 "$SERVER_IP" >"$RESULTS/rdmactl.log" 2>&1
wait_pid_timeout "$srv" 15 >/dev/null 2>&1
restore_net
triage_of rdmactl
expect_rc 1 "rdmactl: triage exits 1" "$RDMACTL" triage "$RESULTS/rdmactl.log"
expect_out "rdmactl: retry-exceeded or an RTR transition, rooted at its line" \
    '^FAIL (retry-exceeded|log-qp-transition) +rxe[01]/1 GID 1 +root .*rdmactl\.log:[0-9]+' cat "$RESULTS/rdmactl.triage"
expect_out "rdmactl: the next command carries the run's device, port, index and peer" \
    'next: on the reporting host: rdmactl check -d rxe[01] -i 1 -g 1 --peer 192\.168\.77\.[12]' cat "$RESULTS/rdmactl.triage"
# Both ends ran on this host: the line's remote GID (the server's) is in its tables, so
# triage adds check's lines on that port, read live now.
expect_out "rdmactl: this host holds the peer's GID, so it is the peer" \
    "^  here: the root line's peer ::ffff:192\\.168\\.77\\.[12] is rxe[01]/1 GID index 1 here: this host is the peer" \
    cat "$RESULTS/rdmactl.triage"
expect_out "rdmactl: with the live port state under it" '^    ok +port-state +rxe[01]/1 is ACTIVE' cat "$RESULTS/rdmactl.triage"
expect_out "rdmactl: and the same in -j" '"here": ?true' cat "$RESULTS/rdmactl.triage.json"
expect_no_out "rdmactl: --no-host judges the log alone" '^  here:|added no evidence' \
    "$RDMACTL" triage --no-host "$RESULTS/rdmactl.log"

# --- ibv_rc_pingpong: the client on an empty GID slot sends GID :: and the server's RTR
# fails; the job's log is both ends' output (tests/fixtures/joblogs/vm/ holds one such log)
bg_start rcpp-server ibv_rc_pingpong -d rxe0 -g 1 -p 18802
rcsrv=$BG_PID
wait_listen 18802 15
ibv_rc_pingpong -d rxe1 -g 7 -p 18802 "$SERVER_IP" >"$RESULTS/rc-client.log" 2>&1
wait_pid_timeout "$rcsrv" 10 >/dev/null 2>&1
cat "$RESULTS/rc-client.log" "$RESULTS/rcpp-server.out" "$RESULTS/rcpp-server.err" >"$RESULTS/rc-pingpong.log" 2>/dev/null
triage_of rc-pingpong
expect_out "ibv_rc_pingpong: the server's RTR failure is a log-qp-transition" \
    '^FAIL log-qp-transition .*root .*rc-pingpong\.log:[0-9]+' cat "$RESULTS/rc-pingpong.triage"
expect_out "ibv_rc_pingpong: decided as an empty slot from the client's GID ::" \
    'why: .*empty slot.*shows an end.s own GID as ::' cat "$RESULTS/rc-pingpong.triage"
expect_no_out "ibv_rc_pingpong: no completion status is invented" 'retry-exceeded' cat "$RESULTS/rc-pingpong.triage"

# --- perftest: ib_send_bw's client on an empty GID slot refuses before any QP ("Found
# Incompatibility issue with GID types"): log-gid-family on rxe1's GID index 7 (from the
# banner), and the next command checks that index; no cause of a QP that never existed
bg_start perftest-server ib_send_bw -d rxe0 -x 1 -p 18803
ptsrv=$BG_PID
wait_listen 18803 15
ib_send_bw -d rxe1 -x 7 -p 18803 "$SERVER_IP" >"$RESULTS/perftest.log" 2>&1
kill -KILL "$ptsrv" 2>/dev/null
wait_pid_timeout "$ptsrv" 5 >/dev/null 2>&1
triage_of perftest
expect_out "perftest: the refusal is log-gid-family" '^FAIL log-gid-family' cat "$RESULTS/perftest.triage"
expect_out "perftest: the next command checks rxe1's GID index 7" 'rdmactl check -d rxe1 -g 7' cat "$RESULTS/perftest.triage"
expect_no_out "perftest: no QP transition or completion is invented" 'log-qp-transition|retry-exceeded' cat "$RESULTS/perftest.triage"

# --- UCX 1.13 over rc_verbs: the server killed mid-run, the client's QP retries out
if command -v ucx_perftest >/dev/null; then
    export UCX_IB_GID_INDEX=1 UCX_RC_RETRY_COUNT=2 UCX_RC_TIMEOUT=100ms
    bg_start ucx-server ucx_perftest -p 18804
    usrv=$BG_PID
    wait_listen 18804 20
    bg_start ucx-client ucx_perftest "$SERVER_IP" -x rc_verbs -d rxe1:1 -t am_bw -n 100000000 -p 18804
    ucli=$BG_PID
    sleep 3
    kill -KILL "$usrv" 2>/dev/null
    # rxe has so far never ended UCX's retries here (no error line within 60 s): 15 s
    # keeps the look without spending CI's minute on it.
    wait_pid_timeout "$ucli" 15 >/dev/null 2>&1
    unset UCX_IB_GID_INDEX UCX_RC_RETRY_COUNT UCX_RC_TIMEOUT
    cat "$RESULTS/ucx-client.out" "$RESULTS/ucx-client.err" >"$RESULTS/ucx.log" 2>/dev/null
    triage_of ucx
    # On rxe the client goes on retrying after its server is killed (every run so far):
    # judge the error line when UCX printed one.
    if grep -q 'completion with error\|retry count exceeded' "$RESULTS/ucx.log"; then
        expect_out "UCX: the retries exceeded toward the killed server, rooted at its line" \
            '^FAIL retry-exceeded .*root .*ucx\.log:[0-9]+' cat "$RESULTS/ucx.triage"
        # The peer is the QP's destination GID from UCX's own line, not the address the
        # client connected to: both ends run on this host, and the server's QP may sit on
        # either device (on the first run that printed one it was rxe1, 192.168.77.2).
        dgid=$(grep -o 'dgid=::ffff:[0-9.]*' "$RESULTS/ucx.log" | head -n 1 | sed 's/.*ffff://')
        check "UCX: its peer-info line names the destination GID" test -n "$dgid"
        expect_out "UCX: the peer is the QP's destination (dgid $dgid), as UCX's line says" \
            "peer ${dgid//./\\.}" cat "$RESULTS/ucx.triage"
    else
        skip_here "UCX: the client printed no completion error within 15 s of its server's death"
    fi
else
    check "ucx_perftest is installed (ucx-utils, scripts/setup)" false
fi
