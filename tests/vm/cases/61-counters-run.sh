# shellcheck shell=bash
# vm-timeout: 300
# Counters around a run: a clean ping-pong reports what moved on both ends' ports and no
# loss; with netem dropping 2% of veth1's packets the run still completes, and the counter
# rules say how unclean it was and on which end. selftest reports its port's counters too.

SERVER_IP=192.168.77.1
port=19300
next_port() { port=$((port + 1)); }

# --- clean
next_port
bg_server clean-server "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" -n 2000 --op send
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "clean: the client succeeds" "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -n 2000 --op send "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/clean.json"
check "clean -j: both ends' counters, sent_pkts moved on this end" \
    jqf '.counters.scope == "port" and .counters.local.device == "rxe1" and .counters.peer.device == "rxe0"
         and any(.counters.local.counters[]; .name == "sent_pkts" and .at_least >= 2000)' "$RESULTS/clean.json"
# rxe under emulation resends a few packets even on a clean link (a stalled vCPU misses
# the ACK timeout), and the counters say so truthfully: the clean rate is kept to compare
# with the lossy run's below.
rate_of() { # rate_of FILE: packets resent per thousand sent (docs/failures.md), 0 when none
    jq -r '.counters.resent_per_mille // 0' "$1"
}
clean_rate=$(rate_of "$RESULTS/clean.json")
check "clean -j: a rate was read (${clean_rate} per thousand)" test -n "$clean_rate"
wait_pid_timeout "$srv" 15 >/dev/null 2>&1
next_port
bg_server clean-text-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 200 --op send
srv=$BG_PID
wait_listen "$port" 15
expect_out "clean text: the counters block names both ends" '^  peer rxe0/1: .*sent_pkts' \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 200 --op send "$SERVER_IP"
wait_pid_timeout "$srv" 15 >/dev/null 2>&1

# --- 2% loss on veth1: still completes, and the loss is explained
if tc qdisc add dev veth1 root netem loss 2% 2>/dev/null; then
    next_port
    bg_server lossy-server "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" -n 3000 --op send --timeout 20
    srv=$BG_PID
    wait_listen "$port" 15
    expect_rc 0 "2% loss: the ping-pong still completes" \
        "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -n 3000 --op send --timeout 20 "$SERVER_IP"
    cp "$LAST_STDOUT" "$RESULTS/lossy.json"
    check "2% loss: a retransmission finding, per thousand packets sent" \
        jqf 'any(.counters.findings[]; .code == "counters-retransmission" and (.message | test("per thousand")))' "$RESULTS/lossy.json"
    lossy_rate=$(rate_of "$RESULTS/lossy.json")
    check "2% loss: resends per thousand (${lossy_rate}) well above the clean run's (${clean_rate})" \
        awk -v l="$lossy_rate" -v c="$clean_rate" 'BEGIN { exit !(l > 2 * c + 5) }'
    check "2% loss: the finding says which end saw what" \
        jqf 'any(.counters.findings[]; .code == "counters-retransmission" and any(.evidence[]; test("this end rxe1/1|the peer rxe0/1")))' "$RESULTS/lossy.json"
    wait_pid_timeout "$srv" 30 >/dev/null 2>&1
    tc qdisc del dev veth1 root
else
    skip_here "no netem (tc qdisc ... netem)"
fi

# --- selftest: its port's counters
expect_rc 0 "selftest -j runs" "$RDMACTL" -j selftest -d rxe0 -g 1
check "selftest -j: the port's counters moved" \
    jqf '.counters.local.device == "rxe0" and (.counters.local.counters | length) > 0' "$LAST_STDOUT"
restore_net
