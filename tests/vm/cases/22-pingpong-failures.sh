# shellcheck shell=bash
# vm-timeout: 420
# pingpong and selftest failures, each asserted on its explanation (why, evidence, fix), not
# only on the exit status: an empty GID slot, -g 1 against -g 0 (native and compat), no
# listener, a garbage handshake, a peer killed mid-run, the netdev taken down mid-run, RTR
# without accept_local, and a non-root user with a tiny memlock.

SERVER_IP=192.168.77.1
port=18700
next_port() { port=$((port + 1)); }

# --- an empty GID slot: found before anything is connected, and index 1 named
expect_rc 3 "-g 7: exits 3 (no such GID)" "$RDMACTL" pingpong -d rxe1 -g 7 -p 18999 "$SERVER_IP"
# Said once, in the one-line "no GID index" error (exit 3), with the cause and the fix.
expect_out "-g 7: explained as an empty slot, naming index 1, in one line" \
    '^rdmactl: no GID index 7 on rxe1/1; GID index 7 on rxe1/1 is an empty slot.*use GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.2 on veth1\)' cat "$LAST_OUT"
check "-g 7: said once" bash -c '[ "$(grep -c "empty slot" "$0")" = 1 ]' "$LAST_OUT"

expect_rc 3 "selftest -g 7: exits 3" "$RDMACTL" selftest -d rxe0 -g 7
expect_out "selftest -g 7: explained as an empty slot, naming index 1" \
    'GID index 7 on rxe0/1 is an empty slot.*use GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.1 on veth0\)' cat "$LAST_OUT"

# --- no -g on RoCE: refused up front (ibv_rc_pingpong would fail at RTR), naming auto's pick
expect_rc 2 "no -g on RoCE: a usage error" "$RDMACTL" pingpong -d rxe1 -p 18999 "$SERVER_IP"
expect_out "no -g on RoCE: says why and which index -g auto would pick" \
    'rxe1/1 is RoCE .* needs a GRH: give a GID index with -g N or -g auto; -g auto would pick 1 \(RoCE v2, IPv4 like the peer 192\.168\.77\.1' \
    cat "$LAST_OUT"

# --- nobody listening: a clear error within the timeout
start=$SECONDS
expect_rc 1 "no listener: the client exits 1" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p 18999 --timeout 3 "$SERVER_IP"
took=$((SECONDS - start))
expect_out "no listener: step, peer and ECONNREFUSED" \
    'connect \(TCP\) failed \(.*peer 192\.168\.77\.1:18999\): ECONNREFUSED' cat "$LAST_OUT"
expect_out "no listener: explained, with the fix" 'why: +nothing listens on 192\.168\.77\.1' cat "$LAST_OUT"
expect_out "no listener: the fix says to start the server with the same -p" 'fix: +start the server first.*same -p' cat "$LAST_OUT"
check "no listener: reported within --timeout plus start-up slack (took $took s)" test "$took" -le 10
expect_rc 1 "no listener, -j: exits 1" "$RDMACTL" -j pingpong -d rxe1 -g 1 -p 18999 --timeout 3 "$SERVER_IP"
json_has "no listener, -j: failure with step, errno and the explanation's code and fix" "$LAST_STDOUT" \
    ok=false step=connect errno=111 errno_name=ECONNREFUSED
json_has "no listener, -j: the explanation" "$LAST_STDOUT" code=no-listener 'fix=start the server first.*'

# --- garbage instead of a handshake: a clear error, no hang
next_port
bg_server garbage-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port"
srv=$BG_PID
wait_listen "$port" 15
bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"; printf "garbage\n" >&3; sleep 1' _ "$port"
wait_pid_timeout "$srv" 10
check "garbage: the server exits 1 within 10 s (got $?)" test $? -eq 1
expect_out "garbage: the server quotes what it got and explains" \
    'why: +the peer.s handshake is not one rdmactl understands: .*"garbage\\n".*neither an rdmactl exchange nor ibv_rc_pingpong' \
    cat "$RESULTS/garbage-server.out"
expect_no_out "garbage: no panic" 'panicked' cat "$RESULTS/garbage-server.out"

# --- -g 1 against -g 0, native: caught from the exchange, before RTR, on both ends
next_port
bg_server mixed-server "$RDMACTL" pingpong -d rxe0 -g 0 -p "$port" -n 10
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "mixed GIDs: the client (-g 1) exits 1" "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 10 "$SERVER_IP"
expect_out "mixed GIDs: the client fails at compare, before RTR" \
    '^rdmactl: compare parameters failed.*GID address families differ' cat "$LAST_OUT"
expect_out "mixed GIDs: the client explains the family mismatch" \
    'why: +address family mismatch: the local GID is IPv4-mapped and the peer.s is link-local IPv6' cat "$LAST_OUT"
expect_out "mixed GIDs: the client says the peer should change to an IPv4 RoCE v2 GID" \
    'fix: +use a GID like this end.s on the peer \(index 1 \(RoCE v2, IPv4 192\.168\.77\.2\)\)' cat "$LAST_OUT"
wait_pid_timeout "$srv" 10
check "mixed GIDs: the server (-g 0) exits 1 too" test $? -eq 1
expect_out "mixed GIDs: the server's fix names index 1" \
    'fix: .*use GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.1 on veth0\)' cat "$RESULTS/mixed-server.out"

# --- -g 1 against -g 0 with a stock ibv_rc_pingpong: it has no GID types to compare, so
# the QP transition itself fails; the rdmactl end explains it.
next_port
bg_server stock-mixed-server ibv_rc_pingpong -d rxe0 -g 0 -p "$port" -n 10
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "compat mixed: the rdmactl client (-g 1) against a stock -g 0 server exits 1" \
    "$RDMACTL" pingpong --compat rc_pingpong -d rxe1 -g 1 -p "$port" -n 10 --timeout 5 "$SERVER_IP"
expect_out "compat mixed: the client explains why the stock server stopped, naming its IPv4 GID" \
    'fix: .*run it with the index of its IPv4-mapped RoCE v2 GID' cat "$LAST_OUT"
wait_pid_timeout "$srv" 10 >/dev/null
next_port
bg_server compat-mixed-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 10 --timeout 5
srv=$BG_PID
wait_listen "$port" 15
ibv_rc_pingpong -d rxe1 -g 0 -p "$port" -n 10 "$SERVER_IP" >"$RESULTS/stock-mixed-client.out" 2>&1
wait_pid_timeout "$srv" 15
check "compat mixed: the rdmactl server (-g 1) against a stock -g 0 client exits 1 (got $?)" test $? -eq 1
expect_out "compat mixed: the server fails at RTR" 'modify QP to RTR failed' cat "$RESULTS/compat-mixed-server.out"
expect_out "compat mixed: the server explains the mixed families" \
    'why: +address family mismatch: the local GID is IPv4-mapped and the peer.s is link-local' \
    cat "$RESULTS/compat-mixed-server.out"
expect_out "compat mixed: the server's fix says the stock client needs an IPv4 GID like its own" \
    'fix: +run the peer with a GID like this end.s \(index 1 \(RoCE v2, IPv4 192\.168\.77\.1\)\); for ibv_rc_pingpong that is -g with the index of its IPv4-mapped GID' \
    cat "$RESULTS/compat-mixed-server.out"

# --- the peer killed with SIGKILL mid-run: reported within 10 s, explained
next_port
bg_server victim-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 1000000 --op send
victim=$BG_PID
wait_listen "$port" 15
BG_TIMEOUT=60 bg_server survivor-client "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 1000000 --op send "$SERVER_IP"
survivor=$BG_PID
sleep 3
check "kill: the ping-pong is running before the kill" kill -0 "$survivor"
# bg_server runs the command under timeout(1): kill the rdmactl process itself.
target=$(pgrep -P "$victim" -x rdmactl || echo "$victim")
kill -KILL "$target"
killed_at=$SECONDS
wait_pid_timeout "$survivor" 12
rc=$?
check "kill: the surviving client exits 1 (got $rc)" test "$rc" -eq 1
check "kill: reported within 10 s (took $((SECONDS - killed_at)) s)" test $((SECONDS - killed_at)) -le 10
# The closed TCP connection ends the survivor's wait at once: the cause is the peer's death.
expect_out "kill: the client names the failed step and the closed connection" \
    'rdmactl: poll CQ failed .*: the peer closed the connection; after [0-9]+/1000000 sends' cat "$RESULTS/survivor-client.out"
expect_out "kill: explained: the peer went away" 'why: +the peer went away mid-run' cat "$RESULTS/survivor-client.out"
expect_out "kill: the fix says to look at the peer" 'fix: +look at the peer' cat "$RESULTS/survivor-client.out"
expect_no_out "kill: no GID seen line" 'seen: .*GID' cat "$RESULTS/survivor-client.out"
wait_pid_timeout "$victim" 5 >/dev/null 2>&1

# --- the netdev under the client's GID taken down mid-run
next_port
bg_server down-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 1000000 --op send --timeout 3
downsrv=$BG_PID
wait_listen "$port" 15
BG_TIMEOUT=60 bg_server down-client "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 1000000 --op send --timeout 3 "$SERVER_IP"
downcli=$BG_PID
sleep 3
check "link down: the ping-pong is running before veth1 goes down" kill -0 "$downcli"
ip link set veth1 down
wait_pid_timeout "$downcli" 12
check "link down: the client exits 1 (got $?)" test $? -eq 1
# The QP may fail before rxe has marked the port DOWN; either way the netdev is named.
expect_out "link down: explained, naming veth1" \
    'why: +(rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down|netdev veth1 is down: rxe1/1 cannot send through it)' cat "$RESULTS/down-client.out"
expect_out "link down: the fix is to bring veth1 up" 'fix: +bring the interface up: `ip link set veth1 up`' cat "$RESULTS/down-client.out"
wait_pid_timeout "$downsrv" 10 >/dev/null 2>&1
restore_net

# --- no accept_local: veth0 drops what comes from a local source address. Linux 6.1
# resolves a local peer's MAC without ARP, so RTR passes and the traffic is dropped
# (retry exceeded); where ARP is used, RTR times out instead. Both are explained alike.
for f in all veth0 veth1; do echo 0 >"/proc/sys/net/ipv4/conf/$f/accept_local"; done
ip neigh flush dev veth0
ip neigh flush dev veth1
next_port
bg_server arp-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 10 --timeout 5
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "no accept_local: the client exits 1" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 10 --timeout 5 "$SERVER_IP"
# Whichever end meets the drop first explains it, and tells the other, which prints it too.
expect_out "no accept_local: RTR ETIMEDOUT or transport retries exceeded, here or at the server" \
    'rdmactl: (.*the server failed: )?(modify QP to RTR failed.*ETIMEDOUT|work completion failed.*IBV_WC_RETRY_EXC_ERR)' cat "$LAST_OUT"
expect_out "no accept_local: explained as a same-host drop between veth0 and veth1" \
    'why: +(the server found the cause: )?same-host test: (veth0 drops the (ARP request|RoCE packets) from veth1|veth1 drops the (ARP request|RoCE packets) from veth0) because (its sender|their source) address is local' cat "$LAST_OUT"
expect_out "no accept_local: the evidence shows the sysctl" 'seen: +(server: )?net\.ipv4\.conf\.\{all,veth[01]\}\.accept_local = 0' cat "$LAST_OUT"
wait_pid_timeout "$srv" 15 >/dev/null 2>&1
restore_net

# --- a non-root user with a 16 KiB memlock: refused before MR registration, explained
as_nobody() { (ulimit -S -l 16 && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }
expect_rc 1 "memlock: pingpong as nobody exits 1" \
    as_nobody "$RDMACTL" pingpong -d rxe1 -g 1 -s 65536 -p 18999 "$SERVER_IP"
expect_out "memlock: refused before registering, with the numbers" \
    'rdmactl: register MR failed \(rxe1/1.*not attempted: the run would pin 131072 bytes \(2 × the 65536-byte message size: a buffer to send from and one for the peer.s SENDs, WRITEs and READs, where ibv_rc_pingpong shares one\), above the locked-memory limit of 16384 bytes' cat "$LAST_OUT"
expect_out "memlock: explained with the limit" \
    'why: +the locked-memory limit \(16 KiB\) is smaller than what register MR needs to pin' cat "$LAST_OUT"
expect_out "memlock: the fix is limits.conf" "fix: +raise memlock: '\\* - memlock unlimited' in /etc/security/limits.conf" cat "$LAST_OUT"
expect_rc 1 "memlock: selftest as nobody exits 1" as_nobody "$RDMACTL" selftest -d rxe0 -g 1 -s 65536
expect_out "memlock: selftest fails at the mr step" '^  FAIL .* mr ' cat "$LAST_OUT"
expect_out "memlock: selftest explains it the same way" 'why: +the locked-memory limit \(16 KiB\)' cat "$LAST_OUT"
expect_out "memlock: selftest names limits.conf" 'limits\.conf' cat "$LAST_OUT"
