# vm-timeout: 300
# 40-cm: the RDMA connection manager. pingpong --cm rxe0<->rxe1 for every op, selftest
# --cm, the kernel's GID choice for check --peer, and every CM failure the VM can produce,
# each explained within its timeout. Sourced by the guest runner (set -u, lib.sh loaded).

R=$RDMACTL

# Seconds since an earlier `date +%s.%N`, to assert that failures arrive within the timeout.
elapsed_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
within() { awk -v e="$1" -v lim="$2" 'BEGIN { exit !(e <= lim) }'; }

# rdma_ucm is the CM's user-space interface (/dev/infiniband/rdma_cm; librdmacm makes the
# node itself when /dev lacks it). rdma-core loads it at boot through systemd, which the
# VM does not run; loading rdma_rxe here already brings it in.
[ -d /sys/class/misc/rdma_cm ] || modprobe rdma_ucm
check "rdma_ucm loaded (/sys/class/misc/rdma_cm)" test -d /sys/class/misc/rdma_cm

# Start `rdmactl ARGS` (a pingpong --cm server) in the background as $spid, output in
# $RESULTS/NAME.{out,err}, and wait until it listens (process start-up under TCG is slow).
start_server() {
  local name=$1; shift
  bg_start "$name" $R "$@"
  spid=$BG_PID
  wait_line "$RESULTS/$name.err" '^listening on' 15 $spid
}

# librdmacm is dlopened: a broken one must be named, with the package (exit 4).
mkdir -p /tmp/nocm && : > /tmp/nocm/librdmacm.so.1
expect_rc 4 "broken librdmacm.so.1: exit 4" env LD_LIBRARY_PATH=/tmp/nocm $R pingpong --cm 192.168.77.1 --timeout 2
expect_out "broken librdmacm.so.1: names librdmacm1" 'librdmacm could not be loaded.*file too short|install librdmacm1' \
  env LD_LIBRARY_PATH=/tmp/nocm $R pingpong --cm 192.168.77.1 --timeout 2

# ---- the kernel's GID choice (check --peer)
# check pins the CM source to the checked GID's address, so the kernel resolves
# 192.168.77.2 from rxe0 even though both addresses are local to this one kernel.
expect_out "check --peer 192.168.77.2 -d rxe0: the kernel uses rxe0/1 GID index 1 (RoCE v2, veth0), as auto does" \
  '^ok +kernel-choice +the kernel would use rxe0/1 GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.1 on veth0\) toward 192\.168\.77\.2 from 192\.168\.77\.1: auto chose the same index' \
  $R check --peer 192.168.77.2 -d rxe0
expect_out "check --peer 192.168.77.2 -d rxe0: the evidence names the sgid" \
  'evidence: rdma_resolve_addr \+ rdma_resolve_route toward 192\.168\.77\.2 from 192\.168\.77\.1: rxe0/1, sgid 0000:0000:0000:0000:0000:ffff:c0a8:4d01' \
  cat "$LAST_OUT"
expect_out "check --peer 192.168.77.2 -d rxe0 -g 0: warns, index 0 is link-local" \
  '^warn +kernel-choice +the kernel would use rxe0/1 GID index 1 .*; you gave -g 0: index 0 is link-local' \
  $R check --peer 192.168.77.2 -d rxe0 -g 0
expect_out "check --peer 192.168.77.2 -d rxe0 -g 0: the fix is -g 1, or -g 0 on both ends" \
  'fix: +use -g 1 to match what CM-based tools use; keep -g 0 only if the peer uses its link-local GID too' \
  one_line "$LAST_OUT"
expect_out "check --peer 192.168.77.2 -d rxe0 -g 1: agrees" '^ok +kernel-choice .*: the same index you gave \(-g 1\)' \
  $R check --peer 192.168.77.2 -d rxe0 -g 1
$R -j check --peer 192.168.77.2 -d rxe0 -g 0 > "$RESULTS/check-json.txt"
check "check --peer -j: kernel_choice.kernel.device rxe0, gid_index 1, agrees false; a kernel-choice warning" \
  jqf '.kernel_choice.kernel.device == "rxe0" and .kernel_choice.kernel.gid_index == 1 and .kernel_choice.kernel.netdev == "veth0" and .kernel_choice.agrees == false and .kernel_choice.source == "192.168.77.1" and any(.findings[]; .code == "kernel-choice" and .severity == "warn")' "$RESULTS/check-json.txt"
# From rxe1 the same question resolves on rxe1 (source 192.168.77.2).
expect_out "check --peer 192.168.77.1 -d rxe1: the kernel uses rxe1/1 GID index 1" \
  '^ok +kernel-choice +the kernel would use rxe1/1 GID index 1 .* toward 192\.168\.77\.1 from 192\.168\.77\.2' \
  $R check --peer 192.168.77.1 -d rxe1
# ---- pingpong --cm, server on rxe0, client on rxe1, every op, JSON checked
port=18600
for op in send write read all; do
  port=$((port + 1))
  check "server pp-$op-srv listens" start_server pp-$op-srv -j pingpong --cm -d rxe0 --bind 192.168.77.1 -p $port --timeout 10
  timeout 60 $R -j pingpong --cm 192.168.77.1 -p $port -d rxe1 --op $op -n 200 -s 4096 > "$RESULTS/pp-$op-cli.json" 2> "$RESULTS/pp-$op-cli.err"
  crc=$?
  wait_pid_timeout $spid 20; src=$?
  check "pingpong --cm --op $op: client exit 0" test "$crc" = 0
  check "pingpong --cm --op $op: server exit 0" test "$src" = 0
  want='["send"]'; [ $op = write ] && want='["write"]'; [ $op = read ] && want='["read"]'
  [ $op = all ] && want='["send","write","read"]'
  # Latency only where one operation at a time was measured (SEND); WRITE and READ keep a
  # window in flight and report rates.
  check "pingpong --cm --op $op: JSON has the ops, 200 iters, bytes, rates, and latency for SEND only" \
    jqf --argjson want "$want" '(.ops | keys_unsorted) == $want and .exchange == "cm" and .size == 4096
      and all(.ops[]; .iters == 200 and .bytes > 0 and .seconds > 0 and .mbit_per_sec > 0
              and .usec_per_iter > 0 and .msgs_per_sec > 0)
      and all(.ops | to_entries[]; if .key == "send"
              then .value.window == 1 and .value.latency_usec.min > 0 and .value.latency_usec.min <= .value.latency_usec.p50
                   and .value.latency_usec.p50 <= .value.latency_usec.p99 and .value.latency_usec.p99_9 <= .value.latency_usec.max
              else .value.window > 1 and (.value | has("latency_usec") | not) end)' \
    "$RESULTS/pp-$op-cli.json"
  check "pingpong --cm --op $op: every op's data verified (the echo, the WRITE read back, the READ)" \
    jqf 'all(.ops[]; .verified | test("matched"))' "$RESULTS/pp-$op-cli.json"
  check "pingpong --cm --op $op: client on rxe1 (GID index 1), server rxe0" \
    jqf '.connection.device == "rxe1" and .connection.sgid_index == 1 and .kernel_choice.device == "rxe1"
           and .connection.peer == "192.168.77.1:'$port'"' "$RESULTS/pp-$op-cli.json"
  check "pingpong --cm --op $op: server JSON names rxe0 and the echo count" \
    jqf '.role == "server" and .connection.device == "rxe0" and .ok == true and .failure == null
         and .connection.sgid == "0000:0000:0000:0000:0000:ffff:c0a8:4d01" and .connection.gid_type == "RoCE v2"' "$RESULTS/pp-$op-srv.out"
done
check "pingpong --cm send: the server echoed every SEND" jqf '.echoed == 200' "$RESULTS/pp-send-srv.out"
check "pingpong --cm write/read: the server saw no SEND" jqf '.echoed == 0' "$RESULTS/pp-write-srv.out"
# Side by side with ibv_rc_pingpong (4096 B x 200, same devices), for the record only:
# TCG timings are noisy, so nothing is asserted on them.
if command -v ibv_rc_pingpong >/dev/null; then
  timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -n 200 > "$RESULTS/ibv-srv.txt" 2>&1 &
  ipid=$!; sleep 1
  timeout 60 ibv_rc_pingpong -d rxe1 -g 1 -n 200 192.168.77.1 > "$RESULTS/ibv-cli.txt" 2>&1
  wait $ipid
  echo "ibv_rc_pingpong 4096 B x 200: $(grep -o '[0-9.]* usec/iter' "$RESULTS/ibv-cli.txt")"
  echo "rdmactl --cm send 4096 B x 200: $(jq -r '.ops.send.usec_per_iter' "$RESULTS/pp-send-cli.json") usec/iter (round trip)"
fi
# Every size path: one byte and a message larger than the 1024-byte path MTU.
for size in 1 65536; do
  port=$((port + 1))
  check "server pp-s$size-srv listens" start_server pp-s$size-srv pingpong --cm --bind 192.168.77.1 -p $port
  expect_out "pingpong --cm -s $size: ibv_rc_pingpong's lines for each op, each verified, then ok" \
    "client rxe1/1 \(cm exchange\), path MTU 1024, $size B messages send +$((2 * size * 20)) bytes in .*send +20 iters in .* usec/iter.*send +verified: .*write +$((size * 20)) bytes in .*write +verified: read the peer's $size-byte buffer back and it matched .*read +verified: .* ok $" \
    sh -c "timeout 60 $R pingpong --cm 192.168.77.1 -p $port --bind 192.168.77.2 -s $size -n 20 2>/dev/null | tr '\n' ' '"
  wait_pid_timeout $spid 20
done
# A server given neither --bind nor -d listens on the IPv6 wildcard, which takes IPv4 clients.
port=$((port + 1))
check "server pp-any-srv (no --bind, no -d) listens on [::]" start_server pp-any-srv -j pingpong --cm -p $port --timeout 10
expect_out "the wildcard server says where it listens" "^listening on \\[::\\]:$port \\(every RDMA device\\)" cat "$RESULTS/pp-any-srv.err"
expect_rc 0 "an IPv4 client reaches the wildcard server" timeout 60 $R pingpong --cm 192.168.77.1 -p $port -d rxe1 -n 20
wait_pid_timeout $spid 20; src=$?
check "the wildcard server served it on rxe0: exit 0" \
  sh -c "test $src = 0 && jq -e '.connection.device == \"rxe0\" and .echoed == 20' '$RESULTS/pp-any-srv.out'"
# -g does not apply with --cm: the kernel picks the GID.
expect_rc 2 "pingpong --cm -g 0 is refused as a usage error" $R pingpong --cm 192.168.77.1 -g 0
# -d and --bind must name the same port.
expect_rc 2 "pingpong --cm server -d rxe1 --bind rxe0's address: a usage error" \
  timeout 20 $R pingpong --cm -d rxe1 --bind 192.168.77.1 -p 18998
expect_out "pingpong --cm server -d rxe1 --bind rxe0's address: names both devices" \
  '^rdmactl: 192\.168\.77\.1:18998 is an address of rxe0, not rxe1: give -d rxe0' cat "$LAST_OUT"

# ---- selftest --cm: one line per step, on one device and between two
expect_out "selftest --cm -d rxe0: every step ok" \
  '^selftest --cm rxe0 port 1, 192\.168\.77\.1 -> 192\.168\.77\.1, 4096 B; the kernel picks the GID \(index 1\) .*ok +[0-9.]+ ms +server listen .*ok +[0-9.]+ ms +client resolve addr\+route .*ok +[0-9.]+ ms +server connect request .*ok +[0-9.]+ ms +client established .*ok +[0-9.]+ ms +client send/recv +every echo matched .*ok +[0-9.]+ ms +client rdma write +read the peer.s 4096-byte buffer back and it matched .*ok +[0-9.]+ ms +client rdma read .*ok +[0-9.]+ ms +client disconnect .*all steps passed $' \
  sh -c "$R selftest --cm -d rxe0 | tr '\n' ' '"
expect_rc 0 "selftest --cm -d rxe0 -d rxe1: exit 0" $R selftest --cm -d rxe0 -d rxe1
$R -j selftest --cm -d rxe0 -d rxe1 > "$RESULTS/selftest.json"
check "selftest --cm -j: ok, no failed step, selftest's keys" \
  jqf '.mode == "cm" and .ok == true and .device == "rxe0" and .peer_device == "rxe1" and .gid_index == 1 and .size == 4096
       and all(.steps[]; .ok and .failure == null and .elapsed_us >= 0) and (.steps | length) >= 10' "$RESULTS/selftest.json"

# ---- CM failures, each explained within the timeout. rdmactl reports when the failure
# event came ("after X s", measured in-process); wall-clock time also counts the slow
# start-up of a process under TCG (seconds, when the host is loaded), so it only guards
# against hangs.
after_of() { sed -n 's/.* after \([0-9.]*\) s$/\1/p' "$1" | head -1; }

t0=$(date +%s.%N)
timeout 30 $R pingpong --cm 192.168.77.1 -p 18999 -d rxe1 --timeout 3 > "$RESULTS/nolistener.txt" 2>&1; rc=$?
echo "no listener: wall clock $(elapsed_since "$t0")s"
check "no listener: exit 1" test "$rc" = 1
expect_out "no listener: REJECTED with IB_CM_REJ_INVALID_SERVICE_ID, explained" \
  'CM connect failed \(rxe1, peer 192.168.77.1:18999\): RDMA_CM_EVENT_REJECTED \(status 8: IB_CM_REJ_INVALID_SERVICE_ID\) after [0-9.]+ s.*nobody listens on 192.168.77.1 port 18999.*start the server first' \
  one_line "$RESULTS/nolistener.txt"
a=$(after_of "$RESULTS/nolistener.txt"); check "no listener: the reject came within the 3 s timeout (after ${a:-?} s)" within "${a:-99}" 3
timeout 30 $R -j pingpong --cm 192.168.77.1 -p 18999 -d rxe1 --timeout 3 > "$RESULTS/nolistener.json" 2> "$RESULTS/nolistener-j.err"; rc=$?
check "no listener -j: exit 1" test "$rc" = 1
check "no listener -j: a report with ok false and the failure explained (step, event, reject reason, code, fix)" \
  jqf '.ok == false and .exchange == "cm" and .connection == null and .failure.step == "cm_connect"
       and .failure.cause.kind == "cm_event" and .failure.cause.event == "RDMA_CM_EVENT_REJECTED"
       and .failure.cause.reject_reason == "IB_CM_REJ_INVALID_SERVICE_ID"
       and .failure.context.peer == "192.168.77.1:18999"
       and .failure.explanation.code == "cm-no-listener" and (.failure.explanation.fix | test("start the server"))' \
  "$RESULTS/nolistener.json"

# No route at all (the VM has no default route): the kernel refuses at once.
t0=$(date +%s.%N)
timeout 30 $R pingpong --cm 192.168.99.1 --timeout 3 > "$RESULTS/noroute.txt" 2>&1; rc=$?
echo "no route: wall clock $(elapsed_since "$t0")s"
check "no route: exit 1, no hang" test "$rc" = 1
expect_out "no route to 192.168.99.1: ENETUNREACH explained" \
  'CM resolve address failed \([^)]*peer 192.168.99.1:18515\): rdma_resolve_addr: ENETUNREACH.*no route to 192.168.99.1.*ip route get 192.168.99.1' \
  one_line "$RESULTS/noroute.txt"

# On-link but nobody there: ARP gets no reply, the CM reports ADDR_ERROR -ETIMEDOUT.
t0=$(date +%s.%N)
timeout 30 $R pingpong --cm 192.168.77.99 --timeout 2 > "$RESULTS/noneigh.txt" 2>&1; rc=$?
echo "no neighbour: wall clock $(elapsed_since "$t0")s"
check "no neighbour: exit 1, no hang" test "$rc" = 1
expect_out "no neighbour at 192.168.77.99: ADDR_ERROR ETIMEDOUT explained" \
  'CM resolve address failed \([^)]*peer 192.168.77.99:18515\): RDMA_CM_EVENT_ADDR_ERROR \(status -110: ETIMEDOUT.*no ARP/neighbour reply from 192.168.77.99' \
  one_line "$RESULTS/noneigh.txt"
a=$(after_of "$RESULTS/noneigh.txt"); check "no neighbour: ADDR_ERROR within the 2 s timeout (+0.5 s kernel slack; after ${a:-?} s)" within "${a:-99}" 2.5
timeout 30 $R -j pingpong --cm 192.168.77.99 --timeout 2 > "$RESULTS/noneigh.json" 2>/dev/null
check "no neighbour -j: ADDR_ERROR ETIMEDOUT, code cm-no-neighbour" \
  jqf '.ok == false and .failure.step == "cm_resolve_addr" and .failure.errno_name == "ETIMEDOUT"
       and .failure.cause.event == "RDMA_CM_EVENT_ADDR_ERROR" and .failure.explanation.code == "cm-no-neighbour"' \
  "$RESULTS/noneigh.json"
expect_rc 1 "check --peer 192.168.77.99: exit 1" timeout 30 $R check --peer 192.168.77.99 -d rxe0
expect_out "check --peer 192.168.77.99: the kernel-choice finding carries the CM's ADDR_ERROR and its fix" \
  '^FAIL +kernel-choice +the kernel cannot resolve a path to 192\.168\.77\.99: .*RDMA_CM_EVENT_ADDR_ERROR \(status -110: ETIMEDOUT' \
  cat "$LAST_OUT"

# Binding an address this host does not have.
expect_out "--bind 10.9.9.9 (not local): explained" 'bind.*EADDRNOTAVAIL|not configured' \
  sh -c "timeout 20 $R pingpong --cm --bind 10.9.9.9 --timeout 2 2>&1 | tr '\n' ' '"

# ---- selftest --cm when the port's netdev is down: the failed step is explained, and the
# run does not wait out the server's timeout for a connection that cannot come.
ip link set veth0 down
t0=$(date +%s.%N)
timeout 60 $R selftest --cm -d rxe0 --timeout 20 > "$RESULTS/st-down.txt" 2>&1; rc=$?
secs=$(elapsed_since "$t0")
check "selftest --cm, veth0 down: exit 1" test "$rc" = 1
check "selftest --cm, veth0 down: over in ${secs}s, well before the 20 s timeout" within "$secs" 10
expect_out "selftest --cm, veth0 down: the resolve step fails with ENETUNREACH, and veth0 being down is named as the cause" \
  'FAIL +[0-9.]+ ms +client resolve address +CM resolve address failed \([^)]*peer 192\.168\.77\.1:[0-9]+\): rdma_resolve_addr: ENETUNREACH.* why: +(rxe0/1 is DOWN: a RoCE port follows its netdev, and veth0 is down|netdev veth0 is down: [^ ]+ cannot send through it).* seen: +192\.168\.77\.1 is on veth0: operstate down, administratively down .* fix: +bring the interface up: `ip link set veth0 up`.* FAILED' \
  one_line "$RESULTS/st-down.txt"
timeout 60 $R -j selftest --cm -d rxe0 --timeout 20 > "$RESULTS/st-down.json" 2>/dev/null
check "selftest --cm -j, veth0 down: the failed step carries port-state (or netdev, before the port caught up) and its evidence" \
  jqf '.ok == false and any(.steps[]; .ok == false and .step == "resolve address" and (.failure.explanation.code == "port-state" or .failure.explanation.code == "netdev")
       and any(.failure.explanation.evidence[]; test("^192\\.168\\.77\\.1 is on veth0: operstate down")))' \
  "$RESULTS/st-down.json"
timeout 30 $R -j pingpong --cm 192.168.77.2 -d rxe0 --timeout 3 > "$RESULTS/pp-down.json" 2> "$RESULTS/pp-down.err"; rc=$?
check "pingpong --cm -d rxe0, veth0 down: exit 1" test "$rc" = 1
check "pingpong --cm -j -d rxe0, veth0 down: code port-state (or netdev), evidence names veth0 and the route" \
  jqf '.ok == false and (.failure.explanation.code == "port-state" or .failure.explanation.code == "netdev")
       and any(.failure.explanation.evidence[]; test("is on veth0: operstate down"))
       and any(.failure.explanation.evidence[]; test("^ip route get 192\\.168\\.77\\.2: "))' \
  "$RESULTS/pp-down.json"
check "pingpong --cm -j, veth0 down: said once, in the JSON; stderr stays quiet" test ! -s "$RESULTS/pp-down.err"
timeout 30 $R pingpong --cm 192.168.77.2 -d rxe0 --timeout 3 > "$RESULTS/pp-down.txt" 2> "$RESULTS/pp-down.err"
expect_out "pingpong --cm -d rxe0, veth0 down: stderr says why, what was seen and the fix" \
  'why: +(rxe0/1 is DOWN: a RoCE port follows its netdev, and veth0 is down|netdev veth0 is down: [^ ]+ cannot send through it).* seen: +192\.168\.77\.1 is on veth0: .* fix: +bring the interface up' \
  one_line "$RESULTS/pp-down.err"
check "pingpong --cm -d rxe0, veth0 down: the explanation is said once" \
  bash -c '[ "$(grep -c "why:" "$0")" = 1 ] && ! grep -q "why:" "$1"' "$RESULTS/pp-down.err" "$RESULTS/pp-down.txt"
restore_net
check "veth0 is back" net_is_default

# ---- the CM binds addresses, not devices. A port whose netdev has no usable address (here
# veth1 left with only its fe80:: address) fails before the CM is asked, explained.
ip addr del 192.168.77.2/24 dev veth1
wait_gids 10 >/dev/null 2>&1
timeout 60 $R selftest --cm -d rxe0 -d rxe1 > "$RESULTS/st-noaddr.txt" 2>&1; rc=$?
check "selftest --cm, veth1 without an IPv4 address: exit 1" test "$rc" = 1
expect_out "selftest --cm, veth1 without an IPv4 address: the client's address step fails, explained" \
  'FAIL +[0-9.]+ ms +client address +CM setup failed \(rxe1/1\): no IP address on veth1.* why: +the CM connects by IP address, and this port has none.* fix: +put an address on veth1' \
  one_line "$RESULTS/st-noaddr.txt"
timeout 60 $R -j pingpong --cm -d rxe1 192.168.77.1 > "$RESULTS/pp-noaddr.json" 2>/dev/null
check "pingpong --cm -j -d rxe1, no address: a report with code cm-no-address" \
  jqf '.ok == false and .failure.step == "cm_setup" and .failure.cause.kind == "no_address" and .failure.explanation.code == "cm-no-address"' \
  "$RESULTS/pp-noaddr.json"
restore_net

# A route through a netdev with no RDMA device on it: ADDR_ERROR ENODEV (on an InfiniBand
# host the same error means an IPoIB interface without an address).
ip link add rdmactl-dummy type dummy && ip addr add 10.55.0.1/24 dev rdmactl-dummy && ip link set rdmactl-dummy up
timeout 30 $R -j pingpong --cm 10.55.0.2 --timeout 3 > "$RESULTS/nordma.json" 2> "$RESULTS/nordma.err"; rc=$?
check "route through a non-RDMA netdev: exit 1" test "$rc" = 1
check "route through a non-RDMA netdev: ENODEV at address resolution, code cm-no-rdma-netdev, the route in the evidence" \
  jqf '.failure.step == "cm_resolve_addr" and .failure.errno_name == "ENODEV" and .failure.explanation.code == "cm-no-rdma-netdev"
       and any(.failure.explanation.evidence[]; test("ip route get 10\\.55\\.0\\.2: dev rdmactl-dummy"))' \
  "$RESULTS/nordma.json"
restore_net
check "the default network is back" net_is_default

# ---- the other way round: the rdmactl client against stock servers. They accept, but
# send no buffer description, so the client stops at once and says what listens there.
# Wait until the stock server's cm_id listens on PORT (`rdma resource show cm_id`).
wait_cm_listen() {
  local port=$1 deadline=$((SECONDS + 15))
  until rdma resource show cm_id | grep -Eq "state LISTEN .*src-addr [0-9.]+:$port "; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}
# against_stock TOOL PORT: start TOOL listening on PORT, point the rdmactl client at it.
against_stock() {
  local tool=$1 port=$2 rc stock_pid
  if ! command -v "$tool" >/dev/null; then
    skip_here "$tool (rdmacm-utils) is not installed"
    return
  fi
  case $tool in
  rping) bg_start "stock-$tool" rping -s -a 192.168.77.1 -p "$port" -C 1 ;;
  *) bg_start "stock-$tool" "$tool" -p "$port" ;;
  esac
  stock_pid=$BG_PID
  check "stock $tool listens on $port" wait_cm_listen "$port"
  timeout 30 $R -j pingpong --cm 192.168.77.1 -p "$port" -d rxe1 --timeout 5 \
    > "$RESULTS/vs-$tool.json" 2> "$RESULTS/vs-$tool.err"; rc=$?
  check "rdmactl client against stock $tool: exits 1" test "$rc" = 1
  check "rdmactl client against stock $tool: connect fails, code cm-not-rdmactl-server, no network evidence" \
    jqf '.ok == false and .failure.step == "cm_connect" and .failure.explanation.code == "cm-not-rdmactl-server"
         and .failure.explanation.evidence == []' "$RESULTS/vs-$tool.json"
  check "rdmactl client against stock $tool: the report says what listens there and what to run; stderr stays quiet under -j" \
    jqf '(.failure.explanation.summary | test("the server accepted the connection but is not an rdmactl --cm server"))
         and (.failure.explanation.fix | test("run rdmactl pingpong --cm on the server"))' "$RESULTS/vs-$tool.json"
  check "rdmactl client against stock $tool: nothing on stderr with -j" test ! -s "$RESULTS/vs-$tool.err"
  # rdma_server waits for a message that never comes.
  kill "$stock_pid" 2>/dev/null
  wait_pid_timeout "$stock_pid" 10 >/dev/null 2>&1
}
against_stock rping 7175
against_stock rdma_server 7472

# ---- interoperability: stock librdmacm clients against the rdmactl --cm server
if command -v rping >/dev/null; then
  check "server rping-srv listens" start_server rping-srv -j pingpong --cm --bind 192.168.77.1 -p 7174 --timeout 10
  expect_out "stock rping -c (-V validates the ping written back) against the rdmactl server" \
    'ping data: rdma-ping-0: .*ping data: rdma-ping-1: .*ping data: rdma-ping-2: ' \
    sh -c "timeout 30 rping -c -a 192.168.77.1 -I 192.168.77.2 -p 7174 -v -V -C 3 2>&1 | tr '\n' ' '"
  wait_pid_timeout $spid 20; src=$?
  check "rdmactl server after rping: exit 0" test "$src" = 0
  check "rdmactl server after rping: a stock client, 6 messages (3 pings x read+write adverts)" \
    jqf '.stock_client == true and .echoed == 6' "$RESULTS/rping-srv.out"
else
  skip_here "rping (rdmacm-utils) is not installed"
fi
if command -v rdma_client >/dev/null; then
  check "server rdma_client-srv listens" start_server rdma_client-srv -j pingpong --cm --bind 192.168.77.1 -p 7471 --timeout 10
  expect_out "stock rdma_client against the rdmactl server" 'rdma_client: end 0' \
    timeout 30 rdma_client -s 192.168.77.1 -p 7471
  wait_pid_timeout $spid 20; src=$?
  check "rdmactl server after rdma_client: exit 0, one 16-byte message echoed" \
    sh -c "test $src = 0 && jq -e '.stock_client == true and .echoed == 1' '$RESULTS/rdma_client-srv.out'"
else
  skip_here "rdma_client (rdmacm-utils) is not installed"
fi

