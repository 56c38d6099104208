# shellcheck shell=bash
# vm-timeout: 480
# Cases an expert tried and got a wrong cause for: each asserts the words that name the
# real cause, and that the false one is gone. A stock server with no flag, a busy port,
# port numbers, names, -p 0, an interrupted run (both ends), the same-host trap seen from
# the server, memory, -g auto on a link-local-only port and toward a VLAN on one host,
# IPv6 on one host (check and --cm -d), and doctor on a same-host rig.

SERVER_IP=192.168.77.1
port=19200
next_port() { port=$((port + 1)); }

# --- 1. a stock ibv_rc_pingpong server, no flag on the client: it just works
if command -v ibv_rc_pingpong >/dev/null; then
    next_port
    bg_server stock ibv_rc_pingpong -d rxe0 -g 1 -p "$port" -n 20
    srv=$BG_PID
    wait_listen "$port" 15
    expect_rc 0 "stock server: an rdmactl client with no flag succeeds" \
        "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 "$SERVER_IP"
    expect_out "stock server: the client says it speaks ibv_rc_pingpong's exchange, SEND only" \
        "the server speaks ibv_rc_pingpong's exchange: SEND only" cat "$LAST_OUT"
    expect_out "stock server: send results" '^ *send ' cat "$LAST_STDOUT"
    wait_pid_timeout "$srv" 15
    check "stock server: ibv_rc_pingpong itself exits 0" test $? -eq 0
    expect_out "stock server: ibv_rc_pingpong reports its transfer" 'bytes in .* seconds' cat "$RESULTS/stock.out"
    next_port
    bg_server stock-write ibv_rc_pingpong -d rxe0 -g 1 -p "$port" -n 20
    srv=$BG_PID
    wait_listen "$port" 15
    expect_rc 1 "stock server, --op write: refused" \
        "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 --op write "$SERVER_IP"
    expect_out "stock server, --op write: says the server does SEND only" \
        'the server is a stock ibv_rc_pingpong, which only does SEND; --op write needs an rdmactl server' cat "$LAST_OUT"
    wait_pid_timeout "$srv" 15 >/dev/null 2>&1
else
    skip_here "ibv_rc_pingpong is not installed"
fi
# rdmactl on both ends: the offer is taken up, and the native exchange runs every op.
next_port
bg_server native-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 20
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "rdmactl both ends: ok" "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 20 "$SERVER_IP"
expect_out "rdmactl both ends: the native exchange" '\(native exchange\)' cat "$LAST_OUT"
expect_out "rdmactl both ends: write ran too" '^ *write ' cat "$LAST_STDOUT"
wait_pid_timeout "$srv" 15
check "rdmactl both ends: the server exits 0" test $? -eq 0

# --- 2. a busy port: refused before the device is opened, the holder named
next_port
bg_start holder "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port"
holder=$BG_PID
wait_listen "$port" 15
expect_rc 1 "busy port: the second server exits 1" "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port"
expect_out "busy port: a listen failed on the port, not a connect" \
    "^rdmactl: listen \\(TCP\\) failed \\(on \\[::\\]:$port\\): EADDRINUSE" cat "$LAST_OUT"
expect_out "busy port: the holder is named" "why: +rdmactl \\(pid $holder\\) already listens on TCP port $port" cat "$LAST_OUT"
expect_out "busy port: the fix is -p" 'fix: +stop it, or give both ends another port with -p' cat "$LAST_OUT"
expect_no_out "busy port: nothing opened before (no QP printed)" 'local address:' cat "$LAST_OUT"
expect_no_out "busy port: no GID claim" 'GID' cat "$LAST_OUT"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

# --- 5. port numbers: one lookup everywhere
expect_rc 3 "selftest -i 2: exits 3" "$RDMACTL" selftest -d rxe0 -i 2
expect_out "selftest -i 2: names the ports that exist" '^rdmactl: no port 2 on rxe0; ports: 1$' cat "$LAST_OUT"
expect_rc 3 "pingpong -i 9: exits 3" "$RDMACTL" pingpong -d rxe1 -i 9 -g 1 "$SERVER_IP"
expect_out "pingpong -i 9: names rxe1's port" '^rdmactl: no port 9 on rxe1; ports: 1$' cat "$LAST_OUT"
expect_rc 3 "pingpong --cm -d rxe1 -i 9: exits 3" "$RDMACTL" pingpong --cm -d rxe1 -i 9 "$SERVER_IP"

# --- 11. names and ports
expect_rc 2 "unresolvable name: a usage error" "$RDMACTL" pingpong -d rxe1 -g 1 nosuchhost.invalid
expect_out "unresolvable name: says it did not resolve" "^rdmactl: cannot resolve 'nosuchhost.invalid'" cat "$LAST_OUT"
expect_no_out "unresolvable name: nothing opened first" 'local address:' cat "$LAST_OUT"
expect_rc 2 "client -p 0: refused" "$RDMACTL" pingpong -d rxe1 -g 1 -p 0 "$SERVER_IP"
expect_out "client -p 0: says why" "^rdmactl: -p 0: a client needs the server's TCP port" cat "$LAST_OUT"
expect_no_out "check --peer takes a host name" 'invalid value' "$RDMACTL" check -d rxe1 --peer localhost

# --- 12. interrupted: the client prints its counts and exits 130; the server learns why
next_port
bg_start int-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 10000000 --op send --timeout 10
srv=$BG_PID
wait_listen "$port" 15
bg_start int-client "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 10000000 --op send "$SERVER_IP"
cli=$BG_PID
wait_line "$RESULTS/int-client.out" 'client rxe1/1' 20 "$cli"
sleep 2
kill -INT "$cli"
start=$SECONDS
wait_pid_timeout "$cli" 10
check "SIGINT: the client exits 130 (got $?)" test $? -eq 130
expect_out "SIGINT: the client says so, with its counts" \
    'rdmactl: poll CQ failed .*interrupted by SIGINT; after [0-9]+/10000000 sends and [0-9]+/10000000 receives' \
    cat "$RESULTS/int-client.err"
wait_pid_timeout "$srv" 15
check "SIGINT: the server exits 1 (got $?)" test $? -eq 1
took=$((SECONDS - start))
check "SIGINT: the server stops at once, not after its 10 s timeout (took $took s)" test "$took" -le 5
expect_out "SIGINT: the server prints the client's cause" \
    'why: +the client found the cause: the run was stopped by SIGINT' cat "$RESULTS/int-server.err"
# SIGKILL: no word from the client; the closed connection ends the server's wait.
next_port
bg_start kill-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 10000000 --op send --timeout 10
srv=$BG_PID
wait_listen "$port" 15
bg_start kill-client "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 10000000 --op send "$SERVER_IP"
cli=$BG_PID
wait_line "$RESULTS/kill-client.out" 'client rxe1/1' 20 "$cli"
sleep 1
kill -KILL "$cli"
start=$SECONDS
wait_pid_timeout "$srv" 15
check "SIGKILL: the server exits 1 (got $?)" test $? -eq 1
took=$((SECONDS - start))
check "SIGKILL: the server stops at once, not after its 10 s timeout (took $took s)" test "$took" -le 5
expect_out "SIGKILL: the server says the client went away" 'why: +the peer went away mid-run' cat "$RESULTS/kill-server.err"
expect_no_out "SIGKILL: no GID seen line" 'seen: .*GID' cat "$RESULTS/kill-server.err"

# --- 4. the same-host trap seen from the server: it prints the client's cause
for i in all veth0 veth1; do sysctl -qw "net.ipv4.conf.$i.accept_local=0"; done
ip neigh flush dev veth1 2>/dev/null
next_port
bg_start al-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port"
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "accept_local=0: the client fails" "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" "$SERVER_IP"
# Whichever end meets the drop first explains it; the other prints the same cause.
expect_out "accept_local=0: the client names the same-host drop" \
    'why: +(the server found the cause: )?same-host test' cat "$LAST_OUT"
expect_out "accept_local=0: the client names accept_local" 'accept_local' cat "$LAST_OUT"
wait_pid_timeout "$srv" 15
check "accept_local=0: the server exits 1" test $? -eq 1
expect_out "accept_local=0: the server names the same-host drop too" \
    'why: +(the client found the cause: )?same-host test: veth[01] drops .* from veth[01]' cat "$RESULTS/al-server.err"
expect_no_out "accept_local=0: the server names the right netdevs" 'veth0 drops .* from veth0|veth1 drops .* from veth1' cat "$RESULTS/al-server.err"
expect_no_out "accept_local=0: the server does not blame the peer's liveness" 'stopped answering|seen: the GID in use fits' cat "$RESULTS/al-server.err"
# --- 6. doctor sees the same rig
expect_out "doctor: warns that veth0/veth1 share a subnet without accept_local" \
    'warn +same-host-arp +host +rxe0/1 \(veth0\) and rxe1/1 \(veth1\) share 192\.168\.77\.0/24' "$RDMACTL" doctor
restore_net
ip link set veth0 mtu 9000
expect_out "doctor: warns about MTU 9000 against 1500 on one subnet" \
    'warn +mtu-mismatch +host .*netdev MTUs 9000 and 1500' "$RDMACTL" doctor
ip link set veth0 mtu 1500

# --- 13. memory: refused with the numbers, before allocating
expect_rc 1 "selftest -s 1 GiB: refused, not OOM-killed" "$RDMACTL" selftest -d rxe0 -g 1 -s 1073741824
expect_out "selftest -s 1 GiB: says how much it would pin" \
    'seen: +to pin 4294967296 bytes \(4 × the 1073741824-byte message size\)' cat "$LAST_OUT"
expect_out "selftest -s 1 GiB: and what is available" 'seen: +MemAvailable [0-9]+ bytes \(/proc/meminfo\)' cat "$LAST_OUT"
expect_out "selftest -s 1 GiB: explained as memory-short" 'why: +the run would pin 4 GiB' cat "$LAST_OUT"
as_nobody64() { (ulimit -S -l 64 && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }
expect_rc 0 "memlock 64 KiB: selftest -s 16384 fits, as doctor says" as_nobody64 "$RDMACTL" selftest -d rxe0 -g 1 -s 16384
expect_out "memlock 64 KiB: doctor names the largest sizes" 'up to about selftest -s 16384 and pingpong -s 32768' as_nobody64 "$RDMACTL" doctor

# --- 7. no GID seen line under a memlock failure
expect_no_out "memlock: no GID seen line" 'seen: .*GID' as_nobody64 "$RDMACTL" selftest -d rxe0 -g 1 -s 1048576

# --- 10. -g auto toward a VLAN subnet on this host picks the VLAN's GID
ip link add link veth0 name veth0.10 type vlan id 10
ip link add link veth1 name veth1.10 type vlan id 10
ip addr add 192.168.10.1/24 dev veth0.10
ip addr add 192.168.10.2/24 dev veth1.10
ip link set veth0.10 up
ip link set veth1.10 up
sysctl -qw net.ipv4.conf.veth0/10.accept_local=1 net.ipv4.conf.veth1/10.accept_local=1
wait_gids 10
vlan_gid=$("$RDMACTL" -j gids -d rxe1 | jq -r '.[] | select(.netdev == "veth1.10" and (.gid | test("c0a8:0a02$"))) | .index')
check "VLAN: rxe1 has an IPv4 GID on veth1.10 (index '$vlan_gid')" test -n "$vlan_gid"
expect_out "VLAN: check -g auto picks the VLAN's GID" "^check rxe1/1 GID index $vlan_gid toward 192\\.168\\.10\\.1" \
    "$RDMACTL" check -d rxe1 -g auto --peer 192.168.10.1
expect_out "VLAN: and says why" "its address 192\\.168\\.10\\.2 is on the peer's subnet \\(on veth1\\.10\\)" cat "$LAST_OUT"
next_port
bg_server vlan-server "$RDMACTL" pingpong -d rxe0 -g auto -p "$port" -n 20
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "VLAN: pingpong -g auto over the VLAN works" "$RDMACTL" pingpong -d rxe1 -g auto -p "$port" -n 20 192.168.10.1
wait_pid_timeout "$srv" 15 >/dev/null 2>&1
restore_net

# --- 8. selftest -g auto on a port with only a link-local GID
ip addr flush dev veth0 scope global
wait_gids 10
expect_rc 0 "link-local only: selftest -g auto runs" "$RDMACTL" selftest -d rxe0 -g auto
expect_out "link-local only: says it chose a link-local GID, and why" \
    'no IPv4 GID on rxe0/1, and a loopback test works on any valid GID' cat "$LAST_OUT"
restore_net

# --- 9 and 3. IPv6 on one host
ip addr add 2001:db8::1/64 dev veth0 nodad
ip addr add 2001:db8::2/64 dev veth1 nodad
wait_gids 10
expect_rc 1 "IPv6 same host: check fails" "$RDMACTL" check -d rxe1 -g auto --peer 2001:db8::1
expect_out "IPv6 same host: check names it" 'FAIL +same-host-ipv6 +same-host IPv6: rxe carries no RoCE v2 traffic over IPv6 between two devices of one kernel \(veth1 to veth0\)' cat "$LAST_OUT"
expect_no_out "IPv6 same host: no IPv4 ARP reasoning" 'same-host-arp' cat "$LAST_OUT"
v6_gid=$("$RDMACTL" -j gids -d rxe0 | jq -r '.[] | select(.gid | test("^2001:0db8")) | .index')
next_port
bg_server v6-server "$RDMACTL" pingpong -d rxe0 -g "${v6_gid:-2}" -p "$port" -n 5 --op send
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "IPv6 same host: the native pingpong fails" \
    "$RDMACTL" pingpong -d rxe1 -g auto -p "$port" -n 5 --op send 2001:db8::1
expect_out "IPv6 same host: explained as same-host IPv6" 'why: +same-host IPv6: rxe carries no RoCE v2 traffic over IPv6 between two devices' cat "$LAST_OUT"
wait_pid_timeout "$srv" 15 >/dev/null 2>&1
if command -v rping >/dev/null || true; then
    next_port
    bg_server cm6-server "$RDMACTL" pingpong --cm -p "$port" -n 5
    srv=$BG_PID
    wait_line "$RESULTS/cm6-server.out" 'listening' 15 "$srv"
    expect_no_out "--cm -d over IPv6: no multicast claim" 'multicast|broadcast' \
        "$RDMACTL" pingpong --cm -d rxe1 -p "$port" -n 5 2001:db8::1
    expect_no_out "--cm -d over IPv6: not an IPv4 source" 'source 192\.168' cat "$LAST_OUT"
    check "--cm -d over IPv6: runs like the same run without -d (exit $LAST_RC)" test "$LAST_RC" -eq 0
    wait_pid_timeout "$srv" 15 >/dev/null 2>&1
fi
restore_net
