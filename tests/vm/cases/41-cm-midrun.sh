# vm-timeout: 330
# 41-cm-midrun: what breaks a --cm connection after it is up, each named by its CM event:
# the server killed (DISCONNECTED), the client's or the server's device removed
# (DEVICE_REMOVAL), and RoCE packets dropped on the way (the connect times out, and with a
# long enough timeout the CM itself reports UNREACHABLE). Sourced by the guest runner.

R=$RDMACTL
[ -d /sys/class/misc/rdma_cm ] || modprobe rdma_ucm

# A long run between a server on rxe0 and a client on rxe1, both in the background:
# $spid/$cpid, output in $RESULTS/NAME-{srv,cli}.{out,err}. Returns once the client says it
# is connected, so what the caller breaks next breaks a running transfer.
start_pair() {
  local name=$1 port=$2; shift 2
  bg_start "$name-srv" $R pingpong --cm -d rxe0 --bind 192.168.77.1 -p "$port" --timeout 5 "$@"
  spid=$BG_PID
  wait_line "$RESULTS/$name-srv.err" '^listening on' 15 $spid || return 1
  bg_start "$name-cli" $R pingpong --cm 192.168.77.1 -p "$port" -d rxe1 -n 100000000 --timeout 5 "$@"
  cpid=$BG_PID
  wait_line "$RESULTS/$name-cli.err" '^connected to 192\.168\.77\.1' 30 $cpid || return 1
  # Let a few thousand iterations run.
  sleep 1
}

# ---- the server is killed mid-run: its kernel sends a DREQ as the process's CM ids close.
check "killed server: the pair is connected and running" start_pair kill 18701
kill -KILL $spid
wait_pid_timeout $cpid 30; crc=$?
check "killed server: the client exits 1 (not a hang, not a timeout kill)" test "$crc" = 1
expect_out "killed server: the client names DISCONNECTED during the transfer and explains it" \
  'RDMA_CM_EVENT_DISCONNECTED.*the peer closed the connection \(its process ended' \
  one_line "$RESULTS/kill-cli.err"
expect_no_out "killed server: no timeout is blamed" 'did not answer|no completion arrived in time' \
  cat "$RESULTS/kill-cli.err"

# ---- the client is killed mid-run: the server sees the disconnect and reports what it served.
check "killed client: the pair is connected and running" start_pair killcli 18702
kill -KILL $cpid
wait_pid_timeout $spid 30; src=$?
# A client gone before its end-of-run message did not finish its run: the server says so
# and fails (issue 26: never ok after its client failed).
check "killed client: the server exits 1 after the client's early disconnect (got $src)" test "$src" = 1
expect_out "killed client: the server says the client left before its end of run" \
  'RDMA_CM_EVENT_DISCONNECTED.*before the client.s end-of-run message' one_line "$RESULTS/killcli-srv.err"
expect_out "killed client: the server shows its own port as it is now" \
  'seen: +rxe0/1 \(the server\): ACTIVE, active MTU [0-9]+, the QP.s path MTU [0-9]+, GID index [0-9]+ still in the table' \
  cat "$RESULTS/killcli-srv.err"
expect_no_out "killed client: no bare ok" '^ok$' cat "$RESULTS/killcli-srv.out"
expect_out "killed client: the server says how many messages it answered" \
  '^served an rdmactl client: [1-9][0-9]* messages answered' \
  cat "$RESULTS/killcli-srv.out"
expect_out "killed client: the server names the client it served" \
  '^  remote address: 192\.168\.77\.2:[0-9]+, QPN 0x[0-9a-f]{6}$' \
  cat "$RESULTS/killcli-srv.out"

# ---- a second client while the server is busy: turned away at once with a reject that
# says so, not left to time out.
check "busy server: the pair is connected and running" start_pair busy 18706
t0=$(date +%s.%N)
timeout 30 $R -j pingpong --cm 192.168.77.1 -p 18706 -d rxe1 --timeout 5 > "$RESULTS/busy-second.json" 2> "$RESULTS/busy-second.err"; rc=$?
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
check "busy server: the second client exits 1" test "$rc" = 1
check "busy server: turned away in ${secs}s, before its 5 s timeout" awk -v s="$secs" 'BEGIN { exit !(s < 5) }'
check "busy server: code cm-server-busy, the server's reason names the client it serves" \
  jqf '.failure.explanation.code == "cm-server-busy" and .failure.cause.kind == "server_rejected" and .failure.cause.reject_reason == "IB_CM_REJ_CONSUMER_DEFINED"
       and (.failure.cause.server_reason | test("^busy serving 192\\.168\\.77\\.2:[0-9]+$"))' "$RESULTS/busy-second.json"
check "busy server: the report explains it and says what to do; stderr stays quiet under -j" \
  jqf '(.failure.message | test("the server said \"busy serving 192\\.168\\.77\\.2:[0-9]+\""))
       and (.failure.explanation.summary | test("the rdmactl server serves one client at a time"))
       and (.failure.explanation.fix | test("wait until that run ends, or start another server with another -p"))' \
  "$RESULTS/busy-second.json"
check "busy server: nothing on stderr with -j" test ! -s "$RESULTS/busy-second.err"
check "busy server: the first client is still running" kill -0 $cpid
kill -KILL $cpid
wait_pid_timeout $spid 30; src=$?
check "busy server: the server exits 1 after its killed client, and said whom it turned away" \
  sh -c "test $src = 1 && grep -q '^rdmactl: turned 192\.168\.77\.2:[0-9]* away: busy serving' '$RESULTS/busy-srv.err'"

# ---- the client's device is removed mid-run. rxe cannot detach a process from its device,
# so `rdma link delete` waits until the process lets go: rdmactl must notice the CM's
# DEVICE_REMOVAL, say so, and exit, or the delete hangs with it.
check "removed client device: the pair is connected and running" start_pair rmcli 18703
timeout 60 rdma link delete rxe1; drc=$?
check "removed client device: rdma link delete rxe1 returns (rdmactl let go of the device)" test "$drc" = 0
wait_pid_timeout $cpid 30; crc=$?
check "removed client device: the client exits 1" test "$crc" = 1
expect_out "removed client device: DEVICE_REMOVAL named and explained" \
  'RDMA_CM_EVENT_DEVICE_REMOVAL.*the RDMA device was removed under the connection' \
  one_line "$RESULTS/rmcli-cli.err"
wait_pid_timeout $spid 30; src=$?
# The client's kernel tears its connection down on the way out, so the server sees a
# disconnect before the client's end of run.
check "removed client device: the server exits 1 (got $src)" test "$src" = 1
expect_out "removed client device: the server reports what it served" \
  '^served an rdmactl client: [1-9][0-9]* messages answered' \
  cat "$RESULTS/rmcli-srv.out"
restore_net
check "removed client device: rxe1 is back" wait_gids 20

# ---- the server's device is removed mid-run.
check "removed server device: the pair is connected and running" start_pair rmsrv 18704
timeout 60 rdma link delete rxe0; drc=$?
check "removed server device: rdma link delete rxe0 returns" test "$drc" = 0
wait_pid_timeout $spid 30; src=$?
check "removed server device: the server exits 1" test "$src" = 1
expect_out "removed server device: DEVICE_REMOVAL named and explained" \
  'RDMA_CM_EVENT_DEVICE_REMOVAL.*the RDMA device was removed under the connection' \
  one_line "$RESULTS/rmsrv-srv.err"
wait_pid_timeout $cpid 30; crc=$?
check "removed server device: the client exits 1" test "$crc" = 1
expect_out "removed server device: the client sees DISCONNECTED, explained" \
  'RDMA_CM_EVENT_DISCONNECTED.*the peer closed the connection' \
  one_line "$RESULTS/rmsrv-cli.err"
restore_net
check "removed server device: rxe0 is back" wait_gids 20

# ---- RoCE packets (UDP 4791) from veth1 dropped at veth0: the CM request never arrives.
modprobe -a sch_ingress cls_u32 act_gact
tc qdisc add dev veth0 ingress
tc filter add dev veth0 ingress protocol ip u32 match ip protocol 17 0xff match ip dport 4791 0xffff action drop
bg_start drop-srv $R pingpong --cm -d rxe0 --bind 192.168.77.1 -p 18705 --timeout 200
spid=$BG_PID
check "dropped RoCE: the server listens" wait_line "$RESULTS/drop-srv.err" '^listening on' 15 $spid
expect_rc 1 "dropped RoCE, --timeout 3: exit 1" timeout 60 $R pingpong --cm 192.168.77.1 -p 18705 -d rxe1 --timeout 3
expect_out "dropped RoCE, --timeout 3: the connect times out, and UDP 4791 is named" \
  'CM connect failed \([^)]*peer 192\.168\.77\.1:18705\).*did not answer the connection request in time.*UDP 4791' \
  one_line "$LAST_OUT"
# The CM retries the request itself (15 tries with growing waits): about 100 s on 6.1 rxe.
t0=$EPOCHREALTIME
timeout 200 $R pingpong --cm 192.168.77.1 -p 18705 -d rxe1 --timeout 150 > "$RESULTS/unreach.txt" 2>&1; rc=$?
echo "dropped RoCE, --timeout 150: exit $rc after $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
check "dropped RoCE, --timeout 150: exit 1" test "$rc" = 1
expect_out "dropped RoCE, --timeout 150: the CM gives up with UNREACHABLE, explained" \
  'RDMA_CM_EVENT_UNREACHABLE.*did not answer the connection request.*UDP 4791' \
  one_line "$RESULTS/unreach.txt"
tc qdisc del dev veth0 ingress
kill $spid 2>/dev/null; wait $spid 2>/dev/null
restore_net
