# shellcheck shell=bash
# vm-timeout: 420
# Faults around a fabric run (issue 26, cases 13 and 14, and the Ctrl-C contract), on the
# four "hosts" of 70-fabric (rxe fab0..fab3 on veths e0..e3 bridged, 10.77.0.10-13/24):
# - two fabric runs on one host at once, both with the default --port-base: the second
#   run's pair server finds port 19000 held by the first and moves; both pass, and no pair
#   reaches the other run's server (no "stock ibv_rc_pingpong", no link blamed);
# - a rank stopped with SIGSTOP (its connection open): named hung after one deadline, its
#   pairs not run, no link blamed, and once resumed it is told the run is over;
# - SIGINT on rank 0 and SIGTERM on rank 1 mid-run: rank 0 prints what ran with the rest
#   not run, and every rank exits 130 (143).

N=4
CHECK_TIMEOUT=200
[[ $(hostname) == "(none)" || -z $(hostname) ]] && hostname vm
fabric_endpoints

TEST=(--deadline 60 --parallel 1 --latency-factor 3 --bandwidth-fraction 0.25 --resend-limit 60)
# launch NAME RV SIZE ITERS DEV... : one process per rank (--rank r, the r-th -d), outputs in
# $RESULTS/NAME-r.out; their pids in PIDS.
launch() {
    local name=$1 rv=$2 size=$3 iters=$4 r
    shift 4
    local devs=()
    for d in "$@"; do devs+=(-d "$d"); done
    PIDS=()
    for ((r = 0; r < size; r++)); do
        "$RDMACTL" fabric "${devs[@]}" "${TEST[@]}" -n "$iters" --rank $r --size "$size" --local-rank $r \
            --rendezvous "127.0.0.1:$rv" --token "$name" >"$RESULTS/$name-$r.out" 2>&1 &
        PIDS+=($!)
    done
}
# Until rank 0 has a pingpong child: the pair tests run.
pairs_running() {
    local _
    for _ in $(seq 1 300); do pgrep -P "$1" >/dev/null && return 0; sleep 0.2; done
    return 1
}
no_false_words() { # no_false_words DESC FILE: no link blamed, nothing killed, no stranger's server
    expect_no_out "$1: no link blamed" '[Ll]ink' cat "$2"
    expect_no_out "$1: nothing said killed" 'killed' cat "$2"
    expect_no_out "$1: no pair reached another run's server" 'stock ibv_rc_pingpong|RTR fail' cat "$2"
}

# --- case 13: two runs on one host, both with the default --port-base 19000. Run A's pair
# server holds 19000 while run B starts: B's moves to another port; both pass.
launch run-a 18701 2 3000 fab0 fab1
A=("${PIDS[@]}")
check "run A's pair server listens on the default pair port 19000" wait_listen 19000 60
launch run-b 18702 2 300 fab2 fab3
B=("${PIDS[@]}")
wait_pid_timeout "${B[0]}" 150
rcb=$?
wait_pid_timeout "${A[0]}" 150
rca=$?
wait_pid_timeout "${A[1]}" 20
wait_pid_timeout "${B[1]}" 20
check "two runs: run A passes (exit $rca)" test "$rca" = 0
check "two runs: run B passes (exit $rcb)" test "$rcb" = 0
expect_out "two runs: run A's verdict is clean" '^verdict: clean: 1 pairs of 2 endpoints good' cat "$RESULTS/run-a-0.out"
expect_out "two runs: run B's verdict is clean" '^verdict: clean: 1 pairs of 2 endpoints good' cat "$RESULTS/run-b-0.out"
expect_out "two runs: run B says port 19000 is held by another fabric run, and where it listens instead" \
    'rank 0 \(.*fab2/1\): TCP port 19000 is held by rdmactl \(pid [0-9]+\): another fabric run on this host; this pair test listens on TCP port [0-9]+ instead' \
    cat "$RESULTS/run-b-0.out"
for f in run-a-0 run-a-1 run-b-0 run-b-1; do no_false_words "two runs ($f)" "$RESULTS/$f.out"; done

# Both runs started at once: whichever pair server loses the race for 19000 (its bind
# fails after the probe found the port free) takes the next port; both pass.
launch race-a 18706 2 300 fab0 fab1
RA=("${PIDS[@]}")
launch race-b 18707 2 300 fab2 fab3
RB=("${PIDS[@]}")
for run in RA RB; do
    declare -n ranks=$run
    rc=0
    wait_pid_timeout "${ranks[0]}" 150 || rc=$?
    wait_pid_timeout "${ranks[1]}" 20 >/dev/null 2>&1
    check "two runs at once: $run passes (exit $rc)" test "$rc" = 0
    unset -n ranks
done
for f in race-a-0 race-b-0; do
    expect_out "two runs at once: $f's verdict is clean" '^verdict: clean: 1 pairs of 2 endpoints good' cat "$RESULTS/$f.out"
    no_false_words "two runs at once ($f)" "$RESULTS/$f.out"
done

# --- case 14: rank 2 of four stopped (SIGSTOP) once the pair tests run, --parallel 1
launch hung 18703 $N 2000 fab0 fab1 fab2 fab3
H=("${PIDS[@]}")
check "hung: the pair tests started" pairs_running "${H[0]}"
kill -STOP "${H[2]}"
stopped_at=$SECONDS
wait_pid_timeout "${H[0]}" 200
rc0=$?
took=$((SECONDS - stopped_at))
kill -CONT "${H[2]}"
check "hung: rank 0 finishes with exit 1 (got $rc0), ${took}s after the stop" test "$rc0" = 1
check "hung: within one hang deadline and one pair deadline of the stop (${took}s <= 120)" test "$took" -le 120
expect_out "hung: rank 2 named with fabric-rank-hung" 'fabric-rank-hung .*rank 2\)' cat "$RESULTS/hung-0.out"
expect_out "hung: said hung, its connection open" 'rank 2 \(.*\) is hung in round [0-9]+: its control connection is open but it sent nothing for [0-9]+ s' cat "$RESULTS/hung-0.out"
expect_out "hung: its remaining pairs not run" '^verdict: 1 suspect\(s\): .*is hung.*; [1-3] of 6 pairs not run' cat "$RESULTS/hung-0.out"
expect_no_out "hung: not said to have left" 'fabric-rank-left|left the run' cat "$RESULTS/hung-0.out"
no_false_words "hung" "$RESULTS/hung-0.out"
rc2=0
wait_pid_timeout "${H[2]}" 60 || rc2=$?
check "hung: resumed, rank 2 is told the run is over and exits 1 (got $rc2)" test "$rc2" = 1
for p in "${H[@]}"; do wait_pid_timeout "$p" 30 >/dev/null 2>&1; done

# --- Ctrl-C: SIGINT on rank 0 mid-run
launch int0 18704 $N 2000 fab0 fab1 fab2 fab3
I=("${PIDS[@]}")
check "SIGINT on rank 0: the pair tests started" pairs_running "${I[0]}"
kill -INT "${I[0]}"
int_at=$SECONDS
rc=0
wait_pid_timeout "${I[0]}" 60 || rc=$?
check "SIGINT on rank 0: exit 130 (got $rc) within 30 s ($((SECONDS - int_at)) s)" test "$rc" = 130 -a $((SECONDS - int_at)) -le 30
expect_out "SIGINT on rank 0: the verdict says so, and what ran" '^verdict: interrupted by SIGINT on rank 0 after [0-5] of 6 pairs' cat "$RESULTS/int0-0.out"
expect_out "SIGINT on rank 0: the pairs left are not run" 'of 6 pairs not run' cat "$RESULTS/int0-0.out"
expect_out "SIGINT on rank 0: the matrix marks them" '\?' cat "$RESULTS/int0-0.out"
no_false_words "SIGINT on rank 0" "$RESULTS/int0-0.out"
for r in 1 2 3; do
    rc=0
    wait_pid_timeout "${I[$r]}" 30 || rc=$?
    check "SIGINT on rank 0: rank $r is told and exits 130 (got $rc)" test "$rc" = 130
done

# --- SIGTERM on rank 1 mid-run: told to rank 0, which stops the run
launch term1 18705 $N 2000 fab0 fab1 fab2 fab3
T=("${PIDS[@]}")
check "SIGTERM on rank 1: the pair tests started" pairs_running "${T[0]}"
kill -TERM "${T[1]}"
rc=0
wait_pid_timeout "${T[0]}" 60 || rc=$?
check "SIGTERM on rank 1: rank 0 exits 143 (got $rc)" test "$rc" = 143
expect_out "SIGTERM on rank 1: the verdict names the signal and the rank" '^verdict: interrupted by SIGTERM on rank 1 after [0-5] of 6 pairs' cat "$RESULTS/term1-0.out"
no_false_words "SIGTERM on rank 1" "$RESULTS/term1-0.out"
for r in 1 2 3; do
    rc=0
    wait_pid_timeout "${T[$r]}" 30 || rc=$?
    check "SIGTERM on rank 1: rank $r exits 143 (got $rc)" test "$rc" = 143
done

sysctl -qw net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.all.arp_announce=0
restore_net
