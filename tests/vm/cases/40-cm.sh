# 40-cm: the RDMA connection manager. pingpong --cm rxe0<->rxe1 for every op, selftest
# --cm, the kernel's GID choice for check --peer, and every CM failure the VM can produce,
# each explained within its timeout. Sourced by the guest runner (set -u, lib.sh loaded).

R=$RDMACTL

# Seconds since an earlier `date +%s.%N`, to assert that failures arrive within the timeout.
elapsed_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
within() { awk -v e="$1" -v lim="$2" 'BEGIN { exit !(e <= lim) }'; }

# rdma_ucm is the CM's user-space interface; rdma-core loads it at boot through systemd,
# which the VM does not run. Without it rdmactl must say so.
if [ ! -e /dev/infiniband/rdma_cm ]; then
  expect_rc 4 "without rdma_ucm: exit 4 (no RDMA stack)" $R pingpong --cm 192.168.77.1 --timeout 2
  expect_out "without rdma_ucm: names the module" 'modprobe rdma_ucm' $R pingpong --cm 192.168.77.1 --timeout 2
  modprobe rdma_ucm
  for _ in 1 2 3 4 5 6 7 8 9 10; do [ -e /dev/infiniband/rdma_cm ] && break; sleep 0.2; done
fi
check "rdma_ucm loaded: /dev/infiniband/rdma_cm exists" test -e /dev/infiniband/rdma_cm

# librdmacm is dlopened: a broken one must be named, with the package (exit 4).
mkdir -p /tmp/nocm && : > /tmp/nocm/librdmacm.so.1
expect_rc 4 "broken librdmacm.so.1: exit 4" env LD_LIBRARY_PATH=/tmp/nocm $R pingpong --cm 192.168.77.1 --timeout 2
expect_out "broken librdmacm.so.1: names librdmacm1" 'librdmacm could not be loaded.*file too short|install librdmacm1' \
  env LD_LIBRARY_PATH=/tmp/nocm $R pingpong --cm 192.168.77.1 --timeout 2

# ---- the kernel's GID choice (check --peer)
# With -d rxe0 the source is rxe0's address, so the kernel resolves 192.168.77.2 from rxe0.
expect_out "check --peer 192.168.77.2 -d rxe0: rxe0/1 GID index 1 (IPv4-mapped, RoCE v2, veth0)" \
  'kernel would use rxe0/1 GID index 1 \(0000:0000:0000:0000:0000:ffff:c0a8:4d01, RoCE v2, veth0\) toward 192.168.77.2 from 192.168.77.1' \
  $R check --peer 192.168.77.2 -d rxe0
expect_out "check --peer 192.168.77.2 -d rxe0 -g 0: warns, index 0 is link-local" \
  'warning: you gave -g 0, the kernel would use index 1 .*link-local.*Use -g 1' \
  $R check --peer 192.168.77.2 -d rxe0 -g 0
expect_out "check --peer 192.168.77.2 -d rxe0 -g 1: agrees" 'same index the kernel picks' \
  $R check --peer 192.168.77.2 -d rxe0 -g 1
$R -j check --peer 192.168.77.2 -d rxe0 -g 0 > "$RESULTS/check-json.txt" 2>&1
check "check --peer -j: kernel.device rxe0, gid_index 1, agrees false" \
  jq -e '.kernel.device == "rxe0" and .kernel.gid_index == 1 and .kernel.netdev == "veth0" and .agrees == false' "$RESULTS/check-json.txt"
# Without a source address both IPs are local to this one kernel: measured, the kernel
# takes the route's local source, i.e. the peer address's own device.
$R check --peer 192.168.77.2 > "$RESULTS/check-nosrc.txt" 2>&1
echo "kernel choice without -d: $(cat "$RESULTS/check-nosrc.txt")"
expect_out "check --peer 192.168.77.2 without -d: the kernel uses rxe1 (the address is local to rxe1)" \
  'kernel would use rxe1/1 GID index 1 .* toward 192.168.77.2' $R check --peer 192.168.77.2

# ---- pingpong --cm, server on rxe0, client on rxe1, every op, JSON checked
port=18600
for op in send write read all; do
  port=$((port + 1))
  $R -j pingpong --cm -d rxe0 --bind 192.168.77.1 -p $port --timeout 10 > "$RESULTS/pp-$op-srv.json" 2> "$RESULTS/pp-$op-srv.err" &
  spid=$!
  sleep 0.5
  timeout 60 $R -j pingpong --cm 192.168.77.1 -p $port -d rxe1 --op $op -n 200 -s 4096 > "$RESULTS/pp-$op-cli.json" 2> "$RESULTS/pp-$op-cli.err"
  crc=$?
  wait_pid_timeout $spid 20; src=$?
  check "pingpong --cm --op $op: client exit 0" test "$crc" = 0
  check "pingpong --cm --op $op: server exit 0" test "$src" = 0
  want='["send"]'; [ $op = write ] && want='["write"]'; [ $op = read ] && want='["read"]'
  [ $op = all ] && want='["send","write","read"]'
  check "pingpong --cm --op $op: JSON has the ops, 200 iters, bytes, rates and latencies" \
    jq -e --argjson want "$want" '([.results[].op] == $want)
      and all(.results[]; .iters == 200 and .bytes > 0 and .seconds > 0 and .mbit_per_sec > 0
              and .usec_per_iter > 0 and .latency_usec.min > 0
              and .latency_usec.min <= .latency_usec.median and .latency_usec.median <= .latency_usec.p99)' \
    "$RESULTS/pp-$op-cli.json"
  check "pingpong --cm --op $op: client on rxe1 (GID index 1), server rxe0" \
    jq -e '.connection.device == "rxe1" and .connection.sgid_index == 1 and .kernel_choice.device == "rxe1"
           and .connection.peer == "192.168.77.1:'$port'"' "$RESULTS/pp-$op-cli.json"
  check "pingpong --cm --op $op: server JSON names rxe0 and the echo count" \
    jq -e '.role == "server" and .connection.device == "rxe0"' "$RESULTS/pp-$op-srv.json"
done
check "pingpong --cm send: the server echoed every SEND" jq -e '.echoed == 200' "$RESULTS/pp-send-srv.json"
check "pingpong --cm write/read: the server saw no SEND" jq -e '.echoed == 0' "$RESULTS/pp-write-srv.json"
# Every size path: one byte and a message larger than the 1024-byte path MTU.
for size in 1 65536; do
  port=$((port + 1))
  $R pingpong --cm --bind 192.168.77.1 -p $port > "$RESULTS/pp-s$size-srv.txt" 2>&1 &
  spid=$!; sleep 0.5
  expect_out "pingpong --cm -s $size (table output)" "send +\| $size +\| 20 .*read +\| $size +\| 20" \
    timeout 60 $R pingpong --cm 192.168.77.1 -p $port --bind 192.168.77.2 -s $size -n 20
  wait_pid_timeout $spid 20
done
# -g does not apply with --cm: the kernel picks the GID.
expect_rc 2 "pingpong --cm -g 0 is refused as a usage error" $R pingpong --cm 192.168.77.1 -g 0

# ---- selftest --cm: one line per step, on one device and between two
expect_out "selftest --cm -d rxe0: every step ok" \
  'ok +server +listen.*ok +client +resolve addr\+route.*ok +server +connect request.*ok +client +established.*ok +client +send/recv.*ok +client +rdma write.*ok +client +rdma read.*ok +client +disconnect' \
  sh -c "$R selftest --cm -d rxe0 | tr '\n' ' '"
expect_rc 0 "selftest --cm -d rxe0 -d rxe1: exit 0" $R selftest --cm -d rxe0 -d rxe1
$R -j selftest --cm -d rxe0 -d rxe1 > "$RESULTS/selftest.json" 2>&1
check "selftest --cm -j: ok, no failed step" jq -e '.ok == true and all(.steps[]; .ok) and (.steps | length) >= 10' "$RESULTS/selftest.json"

# ---- CM failures, each explained within the timeout
t0=$(date +%s.%N)
expect_rc 1 "no listener: exit 1" timeout 20 $R pingpong --cm 192.168.77.1 -p 18999 -d rxe1 --timeout 3
e=$(elapsed_since "$t0"); check "no listener: answered within the 3 s timeout (took ${e}s)" within "$e" 3.5
expect_out "no listener: REJECTED with IB_CM_REJ_INVALID_SERVICE_ID, explained" \
  'connect toward 192.168.77.1:18999 on rxe1: RDMA_CM_EVENT_REJECTED \(status 8: IB_CM_REJ_INVALID_SERVICE_ID\).*nobody listens on 192.168.77.1 port 18999.*start the server first' \
  sh -c "timeout 20 $R pingpong --cm 192.168.77.1 -p 18999 -d rxe1 --timeout 3 2>&1 | tr '\n' ' '"

# No route at all (the VM has no default route): the kernel refuses at once.
t0=$(date +%s.%N)
expect_out "no route to 192.168.99.1: ENETUNREACH explained" \
  'resolve address toward 192.168.99.1:18515: rdma_resolve_addr failed: ENETUNREACH.*no route to 192.168.99.1.*ip route get 192.168.99.1' \
  sh -c "timeout 20 $R pingpong --cm 192.168.99.1 --timeout 3 2>&1 | tr '\n' ' '"
e=$(elapsed_since "$t0"); check "no route: answered within the 3 s timeout (took ${e}s)" within "$e" 3.5

# On-link but nobody there: ARP gets no reply, the CM reports ADDR_ERROR -ETIMEDOUT.
t0=$(date +%s.%N)
expect_out "no neighbour at 192.168.77.99: ADDR_ERROR ETIMEDOUT explained" \
  'resolve address toward 192.168.77.99:18515: RDMA_CM_EVENT_ADDR_ERROR \(status -110: ETIMEDOUT.*no ARP/neighbour reply from 192.168.77.99' \
  sh -c "timeout 20 $R pingpong --cm 192.168.77.99 --timeout 2 2>&1 | tr '\n' ' '"
e=$(elapsed_since "$t0"); check "no neighbour: answered within the timeout (took ${e}s)" within "$e" 3.0
expect_rc 1 "no neighbour: exit 1" timeout 20 $R check --peer 192.168.77.99 -d rxe0

# Binding an address this host does not have.
expect_out "--bind 10.9.9.9 (not local): explained" 'bind.*EADDRNOTAVAIL|not configured' \
  sh -c "timeout 20 $R pingpong --cm --bind 10.9.9.9 --timeout 2 2>&1 | tr '\n' ' '"
