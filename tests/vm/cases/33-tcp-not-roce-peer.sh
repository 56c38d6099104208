# shellcheck shell=bash
# vm-timeout: 300
# The address on the command line carries only the TCP exchange (as ibv_rc_pingpong's
# does); the RoCE path is the two GIDs'. Each part runs the stock tool beside rdmactl where
# the stock tool is the reference: `localhost` works, a link-local address keeps its zone.
# Then a server whose client came over a link-local TCP address suggests a GID from the
# client's GID, and rp_filter=1 gets the command that changes rp_filter.

SERVER_IP=192.168.77.1
port=19330
next_port() { port=$((port + 1)); }

# --- localhost: the exchange over loopback, the QPs over the GIDs
if command -v ibv_rc_pingpong >/dev/null; then
    next_port
    bg_server lo-stock ibv_rc_pingpong -d rxe0 -g 1 -p "$port" -n 20
    wait_listen "$port" 15
    expect_rc 0 "localhost, stock on both ends: works (the reference)" \
        ibv_rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 localhost
    wait_pid_timeout "$BG_PID" 15 >/dev/null
    next_port
    bg_server lo-stock-server ibv_rc_pingpong -d rxe0 -g 1 -p "$port" -n 20
    wait_listen "$port" 15
    expect_rc 0 "localhost, rdmactl client against a stock server: works" \
        "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 localhost
    expect_no_out "localhost, stock server: no loopback refusal" 'loopback' cat "$LAST_OUT"
    wait_pid_timeout "$BG_PID" 15
    check "localhost: the stock server exits 0" test $? -eq 0
fi
next_port
bg_server lo-native "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20
wait_listen "$port" 15
expect_rc 0 "localhost, rdmactl on both ends: works" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 localhost
expect_out "localhost: the run reports its SENDs" '^ *send ' cat "$LAST_STDOUT"
expect_no_out "localhost: no loopback refusal" 'loopback address' cat "$LAST_OUT"
wait_pid_timeout "$BG_PID" 15
check "localhost: the rdmactl server exits 0" test $? -eq 0
# -g auto over localhost chooses as perftest does (IPv4, not link-local), not toward lo.
next_port
bg_server lo-auto "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20
wait_listen "$port" 15
expect_rc 0 "localhost, -g auto: works" \
    "$RDMACTL" pingpong -d rxe1 -g auto -p "$port" -n 20 127.0.0.1
wait_pid_timeout "$BG_PID" 15 >/dev/null
# check --peer and --cm take the RDMA peer's address: loopback is still refused there.
expect_rc 2 "check --peer 127.0.0.1: still refused (its address is the RDMA peer's)" \
    "$RDMACTL" check -d rxe1 --peer 127.0.0.1

# --- a link-local TCP address keeps its zone
wait_gids
ll0=$(ip -6 -o addr show dev veth0 scope link | awk '{print $4}' | cut -d/ -f1 | head -n1)
check "veth0 has a link-local address ($ll0)" test -n "$ll0"
# The reference: the stock client resolves the zone (getaddrinfo) and reaches a server that
# listens on IPv6 (a stock server listens on IPv4 only, so rdmactl's serves here).
if command -v ibv_rc_pingpong >/dev/null; then
    next_port
    bg_server zone-stock "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20
    wait_listen "$port" 15
    expect_rc 0 "zone, a stock client: $ll0%veth1 works (the reference)" \
        ibv_rc_pingpong -d rxe1 -g 1 -p "$port" -n 20 "$ll0%veth1"
    wait_pid_timeout "$BG_PID" 15 >/dev/null
fi
next_port
bg_server zone-native "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20
wait_listen "$port" 15
expect_rc 0 "zone: rdmactl pingpong $ll0%veth1 works" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 "$ll0%veth1"
expect_no_out "zone: the connect is not refused with EINVAL" 'EINVAL' cat "$LAST_OUT"
wait_pid_timeout "$BG_PID" 15
check "zone: the server exits 0" test $? -eq 0
expect_rc 2 "zone: an interface that does not exist is a usage error" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" "$ll0%nosuch0"
expect_out "zone: it names the interfaces that exist" \
    "no interface 'nosuch0' .*interfaces: .*veth1" cat "$LAST_OUT"

# --- a client over a link-local TCP address, GIDs of two families: the server's fix comes
# from the client's GID (IPv4, index 1), not from the TCP address (which would say index 0,
# the one the server already uses).
next_port
bg_start fam-server "$RDMACTL" pingpong -d rxe0 -g 0 -p "$port" -n 20
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "families: the client (IPv4 GID) against a link-local server fails" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 "$ll0%veth1"
expect_out "families: the client names the family mismatch" 'gid-family-mismatch|family' cat "$LAST_OUT"
wait_pid_timeout "$srv" 20 >/dev/null
expect_out "families: the server names the family mismatch" 'gid-family-mismatch|family' \
    cat "$RESULTS/fam-server.out" "$RESULTS/fam-server.err"
expect_out "families: the server's fix names its IPv4 GID, index 1" \
    'GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.1 on veth0\)' \
    cat "$RESULTS/fam-server.out" "$RESULTS/fam-server.err"
expect_no_out "families: the server does not suggest the index it already uses (0)" \
    'use GID index 0' cat "$RESULTS/fam-server.out" "$RESULTS/fam-server.err"

# --- no -d on either end: both run on rxe0, whose counters are the run's, counted once
next_port
bg_server shared-server "$RDMACTL" pingpong -g 1 -p "$port" -n 50
wait_listen "$port" 15
"$RDMACTL" -j pingpong -g 1 -p "$port" -n 50 "$SERVER_IP" >"$RESULTS/shared.json" 2>"$RESULTS/shared.err"
check "shared port: the run succeeds" jqf '.ok' "$RESULTS/shared.json"
check "shared port: said, and the port's counters are not counted twice (no peer copy)" \
    jqf '.counters.shared_port == true and .counters.peer == null and .counters.local.device == "rxe0"' "$RESULTS/shared.json"
wait_pid_timeout "$BG_PID" 15 >/dev/null
expect_out "shared port: the server's text says so" 'both ends ran on this port' \
    cat "$RESULTS/shared-server.out"

# --- rp_filter=1 on the peer's netdev, accept_local already 1: the fix changes rp_filter
sysctl -qw net.ipv4.conf.veth1.rp_filter=1
expect_rc 1 "rp_filter=1: check fails on the same-host ARP" \
    "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
expect_out "rp_filter=1: the fix sets rp_filter to 2" \
    'fix: .*sysctl -w .*net\.ipv4\.conf\.veth1\.rp_filter=2' cat "$LAST_OUT"
expect_no_out "rp_filter=1: the fix does not set accept_local (already 1)" \
    'accept_local=1' cat "$LAST_OUT"
expect_out "rp_filter=1: the consequence names both outcomes of a dropped ARP" \
    'RTR fails with ETIMEDOUT when the kernel must ARP for the peer; with a neighbour entry already cached RTR passes and the run ends in retry-exceeded' \
    one_line "$LAST_OUT"
expect_out "rp_filter=1: doctor gives the same command" \
    'sysctl -w .*rp_filter=2' "$RDMACTL" doctor
sysctl -qw net.ipv4.conf.veth1.rp_filter=0

# --- rp_filter=1 on the server's netdev during a run: the client's packets never reach
# rxe0. Both ends say which way they were lost (the server's own counters stood still:
# 0 received, not unknown), and the fix changes rp_filter.
sysctl -qw net.ipv4.conf.veth0.rp_filter=1
next_port
bg_start rp-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 50 --timeout 10
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "rp_filter run: the client fails" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 50 --timeout 10 "$SERVER_IP"
expect_out "rp_filter run: the client names veth0 dropping the packets" \
    'why: +same-host test: veth0 drops the RoCE packets from veth1' cat "$LAST_OUT"
expect_out "rp_filter run: the client's fix sets rp_filter" \
    'fix: +sysctl -w .*net\.ipv4\.conf\.veth0\.rp_filter=2' cat "$LAST_OUT"
expect_no_out "rp_filter run: the client's fix leaves accept_local (already 1)" 'accept_local=1' cat "$LAST_OUT"
wait_pid_timeout "$srv" 30 >/dev/null
expect_out "rp_filter run: the server names the direction from both ends' counts" \
    'packets from rxe1 to rxe0 are being lost' cat "$RESULTS/rp-server.out"
expect_out "rp_filter run: the server's evidence is the counts" \
    'rxe1 sent [0-9]+ and rxe0 received 0 \([0-9]+ missing\)' cat "$RESULTS/rp-server.out"
expect_no_out "rp_filter run: the server does not say the counts match" \
    'counts of the two ends match|no packet count to compare' cat "$RESULTS/rp-server.out"
sysctl -qw net.ipv4.conf.veth0.rp_filter=0

# --- a VLAN GID on one end, an untagged one on the other: the exchange carries each GID's
# VLAN and prefix, and both ends say "different VLAN" instead of a list of guesses.
ip link add link veth0 name veth0.10 type vlan id 10
ip addr add 10.10.0.1/24 dev veth0.10
ip link set veth0.10 up
sysctl -qw net.ipv4.conf.veth0/10.accept_local=1 net.ipv4.conf.veth0/10.rp_filter=0
wait_gids 15
vi=$("$RDMACTL" -j gids -d rxe0 | jq -r '.[] | select(.gid | endswith("0a0a:0001")) | .index' | head -n1)
check "VLAN: rxe0 has a GID for 10.10.0.1 on veth0.10 (index '$vi')" test -n "$vi"
next_port
bg_start vlan-server "$RDMACTL" pingpong -d rxe0 -g "$vi" -p "$port" -n 20 --timeout 10
srv=$BG_PID
wait_listen "$port" 15
"$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -n 20 --timeout 10 "$SERVER_IP" \
    >"$RESULTS/vlan-client.json" 2>"$RESULTS/vlan-client.err"
check "VLAN: the exchange carried both segments (VLAN 10 /24 there, untagged /24 here)" \
    jqf '.ok == false and .remote.segment.vlan == 10 and .remote.segment.prefix_len == 24
         and .local.segment.vlan == null and .local.segment.prefix_len == 24' "$RESULTS/vlan-client.json"
check "VLAN: the client's explanation is the VLAN" \
    jqf '.failure.explanation.code == "vlan-mismatch"' "$RESULTS/vlan-client.json"
wait_pid_timeout "$srv" 30 >/dev/null
expect_out "VLAN: the server says different VLAN (10 here, untagged there)" \
    'different VLAN \(10 here, untagged there\)' cat "$RESULTS/vlan-server.err"
expect_out "VLAN: the server shows the peer's segment" \
    "the peer's GID 192\.168\.77\.2/24: untagged" cat "$RESULTS/vlan-server.err"
expect_no_out "VLAN: no list of guesses on the server (down, another segment, a firewall)" \
    'the peer is down, on another segment or VLAN, or a firewall' cat "$RESULTS/vlan-server.err"
ip link del veth0.10
restore_net
