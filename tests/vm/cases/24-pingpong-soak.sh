# shellcheck shell=bash
# vm-timeout: 420
# pingpong for long runs (issue 14, part 2), rxe0 server and rxe1 client, GID index 1:
# constant memory over a --duration run and with -n 10^9; a server that follows its client
# (and one that insists on its own -n); --lat; progress lines; -e; --sl/--tclass.

SERVER_IP=192.168.77.1
port=18800
next_port() { port=$((port + 1)); }
json_part() { sed -n '/^{/,/^}$/p' "$1"; }
rss_kib() { # rss_kib PID: VmRSS in KiB, from /proc (bash builtins only)
    local key value _
    while read -r key value _; do
        [[ $key == VmRSS: ]] && { echo "$value"; return 0; }
    done <"/proc/$1/status"
    return 1
}

# ---- Constant memory: RSS of a --duration client, early and late. One timestamp per
# iteration (the old code) grows 8 bytes an iteration; the histogram grows by nothing.
next_port
bg_server mem-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -s 64 --op send
srv=$BG_PID
wait_listen "$port" 15
bg_start mem-client "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -s 64 --op send \
    --duration 12 --interval 1 "$SERVER_IP"
cli=$BG_PID
check "memory: the client is running (its first progress line)" \
    wait_line "$RESULTS/mem-client.err" '^rdmactl: send [0-9]+ iters' 30 "$cli"
sleep 2
rss_early=$(rss_kib "$cli")
sleep 7
rss_late=$(rss_kib "$cli")
wait_pid_timeout "$cli" 40
crc=$?
wait_pid_timeout "$srv" 20
src=$?
check "memory: client and server exit 0 (got $crc, $src)" test "$crc$src" = 00
iters=$(jq -r '.ops.send.iters' "$RESULTS/mem-client.out")
echo "memory: VmRSS ${rss_early} KiB after ~3 s, ${rss_late} KiB after ~10 s; $iters iterations in 12 s" |
    tee "$RESULTS/memory.txt"
# Under TCG on a busy host a round trip can take 10 ms; a few hundred is enough to see growth.
check "memory: the run did hundreds of iterations ($iters)" test "${iters:-0}" -ge 500
# Page-granular RSS: a 64 KiB slack, well below what -n 10^9 below would need were it kept
# per iteration.
check "memory: VmRSS grew by at most 64 KiB over 7 s ($rss_early -> $rss_late KiB)" \
    test "$((rss_late - rss_early))" -le 64
check "memory: -j output is one JSON document with no progress lines in it" \
    jqf '.ok and .run.duration_sec == 12 and .ops.send.seconds >= 12 and .ops.send.seconds < 20' \
    "$RESULTS/mem-client.out"
expect_out "memory: progress lines carry the rate and the latency percentiles (stderr)" \
    '^rdmactl: send [0-9]+ iters in [0-9.]+ s; last [0-9.]+ s: [0-9]+ msg/sec, latency usec p50 [0-9.]+, p90 [0-9.]+, p99 [0-9.]+, p99\.9 [0-9.]+, max [0-9.]+$' \
    cat "$RESULTS/mem-client.err"
expect_out "memory: the server followed the client's --duration and said so" \
    '^rdmactl: following the client: --duration 12 ' cat "$RESULTS/mem-server.out"

# -n 10^9 used to reserve 8 GB up front and abort both ends; now it starts at once. Stop it
# with SIGINT after its first progress line: exit 130 with what it measured.
next_port
bg_server huge-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" --op send -n 1000000000
srv=$BG_PID
wait_listen "$port" 15
bg_start huge-client "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" --op send -n 1000000000 \
    --interval 1 "$SERVER_IP"
cli=$BG_PID
check "-n 10^9: the client runs (a progress line)" \
    wait_line "$RESULTS/huge-client.err" '^rdmactl: send [0-9]+ iters' 30 "$cli"
rss=$(rss_kib "$cli")
check "-n 10^9: VmRSS is small while it runs ($rss KiB <= 32768)" test "${rss:-999999}" -le 32768
kill -INT "$cli"
wait_pid_timeout "$cli" 20
crc=$?
wait_pid_timeout "$srv" 20 >/dev/null
check "-n 10^9: SIGINT stops the client with 130 (got $crc)" test "$crc" = 130
# Issue 26, contract 12: what was measured before the signal is reported, not "ops":{}.
check "-n 10^9: the client's -j report has the SENDs measured before SIGINT" \
    jqf '(.ok | not) and .ops.send.iters > 0 and .ops.send.bytes > 0 and .ops.send.latency_usec.p50 > 0
         and .failure.cause.kind == "interrupted" and .failure.cause.signal == 2' "$RESULTS/huge-client.out"
expect_out "-n 10^9: the server prints the SENDs it answered before the client's SIGINT" \
    '^send +[0-9]+ iters in [0-9.]+ seconds' cat "$RESULTS/huge-server.out"
expect_out "-n 10^9: the server relays the client's SIGINT" \
    'the client failed: .*interrupted by SIGINT; after [0-9]+/1000000000 sends' cat "$RESULTS/huge-server.out"
expect_no_out "-n 10^9: the relay says 'after ...' once, not the server's count beside the client's" \
    'the client failed: .*after [0-9]+/1000000000 sends.*; after [0-9]+/1000000000 sends' \
    cat "$RESULTS/huge-server.out"
expect_no_out "-n 10^9: no allocation failure on either end" 'memory allocation|panicked' \
    cat "$RESULTS/huge-client.err" "$RESULTS/huge-server.out"

# ---- The same in text, on WRITE: the client's figures on stdout, the signal on stderr.
next_port
bg_server int-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" --op write -n 1000000000
srv=$BG_PID
wait_listen "$port" 15
bg_start int-client "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --op write -n 1000000000 \
    --interval 1 "$SERVER_IP"
cli=$BG_PID
check "text SIGINT: the WRITE client runs (a progress line)" \
    wait_line "$RESULTS/int-client.err" '^rdmactl: write [0-9]+ iters' 30 "$cli"
kill -INT "$cli"
wait_pid_timeout "$cli" 20
crc=$?
wait_pid_timeout "$srv" 20 >/dev/null
check "text SIGINT: the client exits 130 (got $crc)" test "$crc" = 130
expect_out "text SIGINT: the client prints the WRITEs it measured" \
    '^write [0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter' cat "$RESULTS/int-client.out"
expect_out "text SIGINT: the client names the signal" 'interrupted by SIGINT; after [0-9]+/1000000000 completions' \
    cat "$RESULTS/int-client.err"
expect_no_out "text SIGINT: the client says no 'ok' and blames no peer" '^ok$|killed|link went down' \
    cat "$RESULTS/int-client.out" "$RESULTS/int-client.err"

# ---- A server without -n/--duration/--lat follows the client: here -n 300 --lat, every op.
# --lat: WRITE and READ one at a time, so they report latency percentiles.
next_port
bg_server lat-server "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" --op all
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "--lat: client -n 300 --lat --op all exits 0" \
    "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -n 300 --lat --op all "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/lat-client.json"
wait_pid_timeout "$srv" 30
check "--lat: the server exits 0" test $? -eq 0
json_part "$RESULTS/lat-server.out" >"$RESULTS/lat-server.json"
check "--lat: every op ran 300 times one at a time, with p50 <= p90 <= p99 <= p99.9 <= max" \
    jqf '.ok and .run.lat and all(.ops[]; .iters == 300 and .window == 1
         and .latency_usec.min > 0 and .latency_usec.min <= .latency_usec.p50
         and .latency_usec.p50 <= .latency_usec.p90 and .latency_usec.p90 <= .latency_usec.p99
         and .latency_usec.p99 <= .latency_usec.p99_9 and .latency_usec.p99_9 <= .latency_usec.max)
         and (.ops | keys_unsorted) == ["send","write","read"]' "$RESULTS/lat-client.json"
check "--lat: the server took -n 300 and --lat from the client (follows_client)" \
    jqf '.ok and .run.follows_client and .run.iters == 300 and .run.lat
         and .ops.write.iters == 300 and .ops.write.window == 1 and (.ops.write.latency_usec.p99 > 0)' \
    "$RESULTS/lat-server.json"

# ---- The server takes -s, --op and -m too: it was started with none of them.
next_port
bg_server follow-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port"
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "follow: a client with -s 65536 --op write -m 512 -n 50 against a bare server exits 0" \
    "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -s 65536 --op write -m 512 -n 50 "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/follow-client.json"
wait_pid_timeout "$srv" 30
check "follow: the server exits 0" test $? -eq 0
check "follow: the client's run is WRITE only, 64 KiB, path MTU 512, the server's buffer 64 KiB" \
    jqf '.ok and .size == 65536 and .path_mtu == 512 and (.ops | keys) == ["write"]
         and .remote.len == 65536 and .ops.write.iters == 50' "$RESULTS/follow-client.json"
expect_out "follow: the server says what it took" \
    '^rdmactl: following the client: -n 50, -s 65536, --op write, -m 512 ' cat "$RESULTS/follow-server.out"
expect_out "follow: the server's report shows the client's size and MTU" \
    '^  server rxe0/1 \(native exchange\), path MTU 512, 65536 B messages$' cat "$RESULTS/follow-server.out"

# ---- --duration for every op: the client keeps the clock, the server stops on its last
# SEND; both count the same SEND iterations.
next_port
bg_server dur-server "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" --op all
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "--duration 1 --op all: the client exits 0" \
    "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" --duration 1 --op all "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/dur-client.json"
wait_pid_timeout "$srv" 30
check "--duration: the server exits 0" test $? -eq 0
json_part "$RESULTS/dur-server.out" >"$RESULTS/dur-server.json"
check "--duration: each op of the client ran about 1 s, WRITE and READ windowed without latency" \
    jqf '.ok and (.run | has("iters") | not) and .run.duration_sec == 1
         and all(.ops[]; .iters > 0 and .seconds >= 1 and .seconds < 4)
         and .ops.write.window > 1 and (.ops.write | has("latency_usec") | not)' "$RESULTS/dur-client.json"
client_sends=$(jq -r '.ops.send.iters' "$RESULTS/dur-client.json")
check "--duration: the server answered exactly the client's $client_sends SENDs" \
    jqf --argjson n "${client_sends:-0}" '.ok and .run.follows_client and .ops.send.iters == $n' \
    "$RESULTS/dur-server.json"

# ---- A server given its own -n keeps the strict check: both ends explain the difference.
next_port
bg_server strict-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 100 --op send
srv=$BG_PID
wait_listen "$port" 15
expect_rc 1 "strict: a client with --duration against a server with -n 100 fails" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --duration 1 --op send "$SERVER_IP"
expect_out "strict: the client names both lengths and the flags to align" \
    'run lengths differ: --duration 1 here, -n 100 on the peer.*fix: +give both ends the same -n, --duration and --lat \(or none of them on the server\)' \
    one_line "$LAST_STDERR"
wait_pid_timeout "$srv" 20
check "strict: the server exits 1 too" test $? -eq 1
expect_out "strict: the server explains it from its side" \
    'run lengths differ: -n 100 here, --duration 1 on the peer' one_line "$RESULTS/strict-server.out"

# ---- -e (sleep on the completion channel) and QoS: --sl and --tclass on both ends.
next_port
bg_server ev-server "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -e --sl 3 --tclass 96 --op all
srv=$BG_PID
wait_listen "$port" 15
# The client writes the TOS byte in hex, as operators do (issue 26): the same class 96.
expect_rc 0 "-e --sl 3 --tclass 0x60: the client exits 0" \
    "$RDMACTL" -j pingpong -d rxe1 -g 1 -p "$port" -e --sl 3 --tclass 0x60 -n 200 --op all "$SERVER_IP"
cp "$LAST_STDOUT" "$RESULTS/ev-client.json"
wait_pid_timeout "$srv" 30
check "-e: the server exits 0" test $? -eq 0
expect_out "-e: the server's text report names the QoS and the events it used" \
    '^  server rxe0/1 \(native exchange\), path MTU [0-9]+, 4096 B messages, SL 3, traffic class 96 \(DSCP 24\), completion events$' \
    cat "$RESULTS/ev-server.out"
check "-e: the client reports events, SL 3 and traffic class 96, and ran every op" \
    jqf '.ok and .run.events and .qos.sl == 3 and .qos.tclass == 96 and .qos.pkey_index == 0
         and .ops.send.iters == 200 and .ops.write.iters == 200 and .ops.read.iters == 200' \
    "$RESULTS/ev-client.json"
# Asleep, not spinning: what -e guarantees is that a wait with nothing to poll sleeps on
# the armed completion channel (poll() on an "[infinibandevent]" anon inode, under
# strace -y) and returns through ibv_get_cq_event (a read() of that channel) each time the
# channel woke it. How many of 300 waits had to sleep is the scheduler's business (109
# extra context switches in one clean run, 294 in another; and a traced process is slow
# enough that the pong is often there before it sleeps), so the check counts sleeps and
# the reads that ended them, not a share of the round trips. A busy-polling client
# touches the channel never.
channel_calls() { # channel_calls NAME FLAGS...: a -n 300 client under strace; sets _sleeps _woken _reads
    local name=$1
    shift
    _sleeps= _woken= _reads=
    bg_server "$name-server" "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" "$@" -s 1 --op send
    local pid=$BG_PID
    wait_listen "$port" 15 || return 1
    # -ff: one file per thread, so no call is split across lines by another thread's.
    strace -ff -y -qq --seccomp-bpf -e trace=read,poll -o "$RESULTS/$name.strace" "$RDMACTL" pingpong \
        -d rxe1 -g 1 -p "$port" "$@" -s 1 -n 300 --op send "$SERVER_IP" >"$RESULTS/$name.out" 2>&1 || return 1
    wait_pid_timeout "$pid" 20 >/dev/null || return 1
    cat "$RESULTS/$name.strace".* >"$RESULTS/$name.strace"
    local trace=$RESULTS/$name.strace
    _sleeps=$(grep -c 'poll(\[{fd=[0-9]*<anon_inode:\[infinibandevent\]>' "$trace")
    _woken=$(grep 'poll(\[{fd=[0-9]*<anon_inode:\[infinibandevent\]>' "$trace" | grep -c ') = 1 ')
    _reads=$(grep -c 'read([0-9]*<anon_inode:\[infinibandevent\]>' "$trace")
}
next_port
channel_calls busy-channel
busy="${_sleeps:-?} sleeps, ${_reads:-?} reads"
busy_touch=$((${_sleeps:-1} + ${_reads:-1}))
next_port
channel_calls events-channel -e
echo "completion channel over 300 round trips: busy-polling $busy; -e ${_sleeps:-?} sleeps, ${_woken:-?} woken by the channel, ${_reads:-?} reads" |
    tee "$RESULTS/events-channel.txt"
check "-e: both runs completed under strace" test -n "$_sleeps" -a -n "$_reads"
check "-e: the busy-polling client never touched a completion channel ($busy)" test "$busy_touch" -eq 0
check "-e: the client slept on its armed completion channel (${_sleeps:-?} sleeps)" test "${_sleeps:-0}" -ge 1
check "-e: every wake-up by the channel returned through ibv_get_cq_event (${_woken:-?} woken, ${_reads:-?} reads)" \
    test "${_woken:-x}" = "${_reads:-y}" -a "${_reads:-0}" -ge 1

# ---- --persist: one client after another (each with its own -n, one that does not fit in
# between, explained and survived); Ctrl-C between clients ends the server with 130.
next_port
bg_start persist-server "$RDMACTL" -j pingpong -d rxe0 -g 1 -p "$port" --op send --persist
srv=$BG_PID
wait_listen "$port" 15
expect_rc 0 "--persist: the first client (-n 100) exits 0" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 100 --op send "$SERVER_IP"
expect_rc 1 "--persist: a client with another --op than the server insists on fails" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" --op write "$SERVER_IP"
expect_out "--persist: ... and is told why" 'operations differ: --op write here, --op send on the peer' \
    one_line "$LAST_STDERR"
expect_rc 0 "--persist: the next client (-n 250) still gets served and exits 0" \
    "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 250 --op send "$SERVER_IP"
check "--persist: the server is still running" kill -0 "$srv"
kill -INT "$srv"
wait_pid_timeout "$srv" 10
check "--persist: Ctrl-C between clients ends the server with 130 (got $?)" test $? -eq 130
check "--persist: one -j report per client: 100 and 250 iterations served, the odd one failed" \
    jq -e -s '[.[] | .ok] == [true, false, true] and .[0].ops.send.iters == 100
              and .[2].ops.send.iters == 250 and .[1].failure.explanation.code == "parameters-differ"' \
    "$RESULTS/persist-server.out"
