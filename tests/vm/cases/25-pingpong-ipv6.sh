# shellcheck shell=bash
# vm-timeout: 240
# pingpong over IPv6 global GIDs: ULA addresses on veth0/veth1 give each rxe device a RoCE v2
# GID for them. Between the two devices of one kernel rxe carries no IPv6 (no neighbour
# discovery between them: same-host-ipv6, which `check` says); one device to itself does,
# so the ping-pong runs rxe0 to rxe0 on its IPv6 GID, the TCP exchange over fd77::1.

port=18900
next_port() { port=$((port + 1)); }
json_part() { sed -n '/^{/,/^}$/p' "$1"; }

ip addr add fd77::1/64 dev veth0 nodad
ip addr add fd77::2/64 dev veth1 nodad
wait_gids 10
v6_gid=$("$RDMACTL" -j gids -d rxe0 | jq -r '.[] | select(.gid | test("^fd77:")) | .index' | head -1)
check "rxe0 has a RoCE v2 GID for fd77::1 (index '${v6_gid}')" test -n "$v6_gid"
v6_gid=${v6_gid:-2}

# ---- every op, --lat, on the IPv6 GID; the peer address on the TCP exchange is IPv6.
next_port
bg_server v6-server "$RDMACTL" -j pingpong -d rxe0 -g "$v6_gid" -p "$port" --op all
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "IPv6: rxe0 to itself on GID $v6_gid, TCP to fd77::1, --op all --lat exits 0" \
    "$RDMACTL" -j pingpong -d rxe0 -g "$v6_gid" -p "$port" -n 200 --lat --op all fd77::1
cp "$LAST_STDOUT" "$RESULTS/v6-client.json"
wait_pid_timeout "$srv" 30
check "IPv6: the server exits 0" test $? -eq 0
json_part "$RESULTS/v6-server.out" >"$RESULTS/v6-server.json"
check "IPv6: both endpoints carry the fd77::1 GID, the peer is an IPv6 TCP address, every op ran" \
    jqf '.ok and .local.gid == "fd77:0000:0000:0000:0000:0000:0000:0001" and .remote.gid == .local.gid
         and .local.gid_type == "RoCE v2" and (.peer | startswith("[fd77::1]:"))
         and .ops.send.iters == 200 and .ops.write.iters == 200 and .ops.read.iters == 200
         and .ops.read.latency_usec.p50 > 0' "$RESULTS/v6-client.json"
check "IPv6: the server took the client's -n and --lat" \
    jqf '.ok and .run.follows_client and .run.iters == 200 and .run.lat' "$RESULTS/v6-server.json"

# ---- -g auto toward an IPv6 peer picks the IPv6 GID.
next_port
bg_server v6auto-server "$RDMACTL" pingpong -d rxe0 -g auto -p "$port" --op send
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "IPv6 -g auto: the client exits 0" \
    "$RDMACTL" -j pingpong -d rxe0 -g auto -p "$port" -n 50 --op send fd77::1
cp "$LAST_STDOUT" "$RESULTS/v6auto-client.json"
wait_pid_timeout "$srv" 30
check "IPv6 -g auto: the server exits 0" test $? -eq 0
check "IPv6 -g auto: the client chose the fd77::1 GID ($v6_gid)" \
    jqf --argjson i "$v6_gid" '.ok and .gid_index == $i and .gid_selection.chosen == $i' \
    "$RESULTS/v6auto-client.json"

# ---- check toward the other device's IPv6 address: the same-host limit, said as such.
expect_rc 1 "IPv6 check rxe0 -> fd77::2 (rxe1, same kernel) fails" \
    "$RDMACTL" check -d rxe0 -g "$v6_gid" --peer fd77::2
expect_out "IPv6 check names same-host-ipv6" 'FAIL +same-host-ipv6 +same-host IPv6: rxe carries no RoCE v2 traffic over IPv6 between two devices of one kernel \(veth0 to veth1\)' \
    cat "$LAST_OUT"
restore_net
