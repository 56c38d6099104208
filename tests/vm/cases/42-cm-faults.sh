# vm-timeout: 240
# 42-cm-faults: faults during a --cm run named from the evidence on both ends (issue 26):
# the netdev MTU cut below the QP's path MTU on either end (each end re-reads its port; the
# client asks the server for its view in a probe), Ctrl-C on the client and on the server
# (exit 130 with the figures, the peer told), selftest --cm stopped by SIGINT (named in the
# step it stopped), and same-host IPv6 (two rxe devices of one kernel carry no IPv6).
# Sourced by the guest runner.

R=$RDMACTL
[ -d /sys/class/misc/rdma_cm ] || modprobe rdma_ucm
FALSE_CAUSES='killed|link went down|namespace'

# A long SEND run between a server on rxe0 and a client on rxe1, in the background:
# $spid/$cpid, output in $RESULTS/NAME-{srv,cli}.{out,err}. Returns once the client is
# connected and has run a while.
start_pair() {
  local name=$1 port=$2; shift 2
  bg_start "$name-srv" $R pingpong --cm -d rxe0 --bind 192.168.77.1 -p "$port" --timeout 5 "$@"
  spid=$BG_PID
  wait_line "$RESULTS/$name-srv.err" '^listening on' 15 $spid || return 1
  bg_start "$name-cli" $R pingpong --cm 192.168.77.1 -p "$port" -d rxe1 -n 100000000 --op send --timeout 5 "$@"
  cpid=$BG_PID
  wait_line "$RESULTS/$name-cli.err" '^connected to 192\.168\.77\.1' 30 $cpid || return 1
  sleep 1
}

# Both ends of an MTU cut: NAME, the netdev cut, and whose port it is on (as both ends
# name it, in the words of the TCP exchange's rule: one rule for both).
mtu_cut() {
  local name=$1 port=$2 dev=$3 whose=$4
  check "MTU cut on $dev: the pair is connected and running" start_pair "$name" "$port"
  ip link set "$dev" mtu 700
  wait_pid_timeout $cpid 40; crc=$?
  wait_pid_timeout $spid 30; src=$?
  ip link set "$dev" mtu 1500
  check "MTU cut on $dev: the client exits 1 (got $crc)" test "$crc" = 1
  check "MTU cut on $dev: the server exits 1, not 0 (got $src)" test "$src" = 1
  expect_out "MTU cut on $dev: the client names the cut, below the QP's path MTU" \
    "$whose: its active MTU [0-9]+ is below the QP's path MTU 1024" \
    one_line "$RESULTS/$name-cli.err"
  expect_out "MTU cut on $dev: the server names the cut, below the QP's path MTU" \
    "$whose: its active MTU [0-9]+ is below the QP's path MTU 1024" \
    one_line "$RESULTS/$name-srv.err"
  expect_no_out "MTU cut on $dev: no -m in the fix (--cm takes the path MTU from the route)" \
    'rerun with -m' cat "$RESULTS/$name-cli.err" "$RESULTS/$name-srv.err"
  expect_out "MTU cut on $dev: the client shows the ports it re-read" \
    'seen: +rxe1/1 \(the client\): ACTIVE, active MTU [0-9]+, the QP.s path MTU 1024' cat "$RESULTS/$name-cli.err"
  expect_no_out "MTU cut on $dev: the client names no false cause" "$FALSE_CAUSES" cat "$RESULTS/$name-cli.err"
  expect_no_out "MTU cut on $dev: the server names no false cause" "$FALSE_CAUSES" cat "$RESULTS/$name-srv.err"
  expect_no_out "MTU cut on $dev: the server prints no bare ok" '^ok$' cat "$RESULTS/$name-srv.out"
}

# ---- a good run first: the client's end-of-run message, then its disconnect, is a finished
# run, and the server says ok and exits 0.
bg_start good-srv $R pingpong --cm -d rxe0 --bind 192.168.77.1 -p 18800 --timeout 5
spid=$BG_PID
check "good run: the server listens" wait_line "$RESULTS/good-srv.err" '^listening on' 15 $spid
expect_rc 0 "good run: the client exits 0" timeout 60 $R pingpong --cm 192.168.77.1 -p 18800 -d rxe1 -n 200 --timeout 5
wait_pid_timeout $spid 20; src=$?
check "good run: the server exits 0 (got $src)" test "$src" = 0
expect_out "good run: the server says ok" '^ok$' cat "$RESULTS/good-srv.out"

# ---- issue 26 case 1 under --cm: the client's netdev (veth1) cut mid-run, then the server's.
mtu_cut cutcli 18801 veth1 'rxe1/1 \(the client\)'
mtu_cut cutsrv 18802 veth0 'rxe0/1 \(the server\)'
restore_net

# ---- Ctrl-C on the client: exit 130, its figures printed, the server told (exit 1).
check "SIGINT client: the pair is connected and running" start_pair intcli 18803
kill -INT $cpid
wait_pid_timeout $cpid 20; crc=$?
wait_pid_timeout $spid 20; src=$?
check "SIGINT client: the client exits 130 (got $crc)" test "$crc" = 130
expect_out "SIGINT client: the client prints what it measured" \
  '^send +[1-9][0-9]* iters in [0-9.]+ seconds' cat "$RESULTS/intcli-cli.out"
expect_out "SIGINT client: the client names the signal" 'interrupted by SIGINT' cat "$RESULTS/intcli-cli.err"
check "SIGINT client: the server exits 1 (got $src)" test "$src" = 1
expect_out "SIGINT client: the server was told" \
  'the client found the cause: the run was stopped by SIGINT' one_line "$RESULTS/intcli-srv.err"
expect_out "SIGINT client: the server says what it served" \
  '^served an rdmactl client: [1-9][0-9]* messages answered' cat "$RESULTS/intcli-srv.out"
expect_no_out "SIGINT client: no false cause on either end" "$FALSE_CAUSES" \
  cat "$RESULTS/intcli-cli.err" "$RESULTS/intcli-srv.err"

# ---- Ctrl-C on the server: exit 130 with what it served, the client told (exit 1) and
# printing its figures.
check "SIGINT server: the pair is connected and running" start_pair intsrv 18804
kill -INT $spid
wait_pid_timeout $spid 20; src=$?
wait_pid_timeout $cpid 20; crc=$?
check "SIGINT server: the server exits 130 (got $src)" test "$src" = 130
expect_out "SIGINT server: the server says what it served" \
  '^served an rdmactl client: [1-9][0-9]* messages answered' cat "$RESULTS/intsrv-srv.out"
expect_out "SIGINT server: the server names the signal" 'interrupted by SIGINT' cat "$RESULTS/intsrv-srv.err"
check "SIGINT server: the client exits 1 (got $crc)" test "$crc" = 1
expect_out "SIGINT server: the client was told" \
  'the server found the cause: the run was stopped by SIGINT' one_line "$RESULTS/intsrv-cli.err"
expect_out "SIGINT server: the client prints what it measured" \
  '^send +[1-9][0-9]* iters in [0-9.]+ seconds' cat "$RESULTS/intsrv-cli.out"
expect_no_out "SIGINT server: no false cause on either end" "$FALSE_CAUSES" \
  cat "$RESULTS/intsrv-cli.err" "$RESULTS/intsrv-srv.err"

# ---- SIGTERM on the client, -j: 143 and the figures in the report.
check "SIGTERM client -j: the pair is connected and running" start_pair termcli 18805
kill -TERM $cpid
wait_pid_timeout $cpid 20; crc=$?
wait_pid_timeout $spid 20; src=$?
check "SIGTERM client: exit 143 (got $crc)" test "$crc" = 143

# ---- selftest --cm stopped by SIGINT: 130, the signal named in the step it stopped (or,
# past the last step, in the verdict), never "all steps passed" or a bare FAILED.
landed=0
for delay in 0.05 0.1 0.15 0.2 0.3; do
  bg_start "st-$delay" $R selftest --cm -d rxe0 -d rxe1
  pid=$BG_PID
  # The delay counts from the handler: a SIGINT before it is ignored (see wait_catching_int).
  wait_catching_int "$pid" 10
  sleep "$delay"
  if ! kill -INT "$pid" 2>/dev/null; then
    wait "$pid"
    check "selftest --cm SIGINT at ${delay}s: it ended first, and passed" test $? -eq 0
    continue
  fi
  landed=$((landed + 1))
  wait_pid_timeout "$pid" 30; rc=$?
  out="$RESULTS/st-$delay.out"
  check "selftest --cm SIGINT at ${delay}s: exit 130 (got $rc)" test "$rc" -eq 130
  expect_out "selftest --cm SIGINT at ${delay}s: the verdict names the signal" \
    '^interrupted by SIGINT \(Ctrl-C\) after [0-9]+ steps? passed' tail -n 1 "$out"
  expect_no_out "selftest --cm SIGINT at ${delay}s: no 'all steps passed', no bare FAILED" \
    '^all steps passed$|^FAILED$' cat "$out"
  # Where it landed in a step, that step says so on its own line.
  if grep -q '^  FAIL' "$out"; then
    expect_out "selftest --cm SIGINT at ${delay}s: the stopped step names the signal" \
      '^  FAIL .*interrupted by SIGINT' cat "$out"
  fi
done
echo "selftest --cm: SIGINT landed in $landed of 5 runs"

# ---- same-host IPv6: a server on rxe0's IPv6 address, a client from rxe1's.
ip addr add fd77::1/64 dev veth0 nodad
ip addr add fd77::2/64 dev veth1 nodad
wait_gids 10
bg_start v6-srv $R pingpong --cm -d rxe0 --bind fd77::1 -p 18806 --timeout 5
spid=$BG_PID
check "same-host IPv6: the server listens on fd77::1" wait_line "$RESULTS/v6-srv.err" '^listening on' 15 $spid
expect_rc 1 "same-host IPv6 --cm: the client fails" timeout 60 $R pingpong --cm -d rxe1 -p 18806 -n 5 --timeout 3 fd77::1
cp "$LAST_OUT" "$RESULTS/v6-cli.txt"
expect_out "same-host IPv6 --cm: named as same-host IPv6" \
  'same-host IPv6: rxe carries no RoCE v2 traffic over IPv6 between two devices of one kernel' one_line "$RESULTS/v6-cli.txt"
expect_out "same-host IPv6 --cm: the evidence: both addresses are this host's" \
  'fd77::1 is an address of this host \(on veth0\); this end.s address is on veth1' cat "$RESULTS/v6-cli.txt"
expect_no_out "same-host IPv6 --cm: no 'no server there', no 'host is down'" \
  'no server there|the host is down|did not answer' cat "$RESULTS/v6-cli.txt"
kill $spid 2>/dev/null; wait $spid 2>/dev/null
restore_net
