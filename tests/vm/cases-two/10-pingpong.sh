# shellcheck shell=bash
# vm-timeout: 400
# pingpong between two kernels: the server in guest B (rxb on its eth0), the client in guest
# A (rxa), over IPv4, over IPv6 (the fd78:: GIDs, chosen from `rdmactl gids` and by -g auto)
# and through the RDMA CM over IPv6. No same-host trap applies here: each end has its own
# kernel, neighbour table and routes. The link is slow under TCG (a SEND round trip takes
# tens of ms), so the runs are short: this case is about correctness, not timing.

N=20
port=18700
next_port() { port=$((port + 1)); }

# gid_of FILE ADDR: the index of ADDR's GID in `rdmactl -j gids` output.
gid_of() { jq -r --arg a "$2" '[.[] | select(.ip == $a) | .index][0] // empty' "$1"; }

check "A's GID table" "$RDMACTL" -j gids -d "$TWO_DEV"
cp "$LAST_STDOUT" "$RESULTS/gids-a.json"
check "B's GID table" on_b "$RDMACTL" -j gids -d "$TWO_PEER_DEV"
cp "$LAST_STDOUT" "$RESULTS/gids-b.json"
a4=$(gid_of "$RESULTS/gids-a.json" "$TWO_V4")
b4=$(gid_of "$RESULTS/gids-b.json" "$TWO_PEER_V4")
a6=$(gid_of "$RESULTS/gids-a.json" "$TWO_V6")
b6=$(gid_of "$RESULTS/gids-b.json" "$TWO_PEER_V6")
check "IPv4 GIDs: A index '$a4', B index '$b4'" test -n "$a4" -a -n "$b4"
check "IPv6 GIDs: A index '$a6', B index '$b6'" test -n "$a6" -a -n "$b6"

# pair NAME SERVER-ARGS -- CLIENT-ARGS: a native server on B, a client on A; the client's
# JSON in $RESULTS/NAME.json, the server's output in $B_RESULTS/NAME-server.{out,err}.
pair() {
    local name=$1 srv=() cli=()
    shift
    while [[ $1 != -- ]]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    next_port
    bg_b "$name-server" "$RDMACTL" pingpong -d "$TWO_PEER_DEV" -p "$port" "${srv[@]}"
    local spid=$B_PID
    check "$name: B's server listens on $port" on_b wait_listen "$port" 30
    expect_rc 0 "$name: A's client exits 0" "$RDMACTL" -j pingpong -d "$TWO_DEV" -p "$port" -n "$N" "${cli[@]}"
    cp "$LAST_STDOUT" "$RESULTS/$name.json"
    cp "$LAST_STDERR" "$RESULTS/$name.err"
    expect_rc 0 "$name: B's server exits 0 (pid $spid on B)" wait_b "$name-server" 60
}

# ---- IPv4, the IPv4-mapped GIDs; text output on both ends
next_port
bg_b v4-server "$RDMACTL" pingpong -d "$TWO_PEER_DEV" -g "${b4:-1}" -p "$port"
check "IPv4: B's server listens on $port" on_b wait_listen "$port" 30
expect_rc 0 "IPv4: A's client exits 0" "$RDMACTL" pingpong -d "$TWO_DEV" -g "${a4:-1}" -p "$port" -n "$N" "$TWO_PEER_V4"
cp "$LAST_OUT" "$RESULTS/v4-client.txt"
expect_out "IPv4: the client prints its figures per operation" \
    "^send +$N iters in [0-9.]+ seconds = [0-9.]+ usec/iter" cat "$RESULTS/v4-client.txt"
expect_out "IPv4: the client verified the server's READ buffer" \
    "read +verified: read the peer's 4096-byte buffer and it matched" cat "$RESULTS/v4-client.txt"
expect_rc 0 "IPv4: B's server exits 0" wait_b v4-server 60
expect_out "IPv4: the server prints its figures too" \
    "^send +$N iters in [0-9.]+ seconds = [0-9.]+ usec/iter" cat "$B_RESULTS/v4-server.out"
expect_no_out "IPv4: neither end panics or warns of a same-host trap" 'panicked|same-host|accept_local' \
    cat "$RESULTS/v4-client.txt" "$B_RESULTS/v4-server.out" "$B_RESULTS/v4-server.err"

# ---- IPv6 with the indices from the tables: the TCP exchange over fd78::, the GIDs fd78::
printf -v want_a 'fd78:0000:0000:0000:0000:0000:0000:%04x' "${TWO_V6##*:}"
printf -v want_b 'fd78:0000:0000:0000:0000:0000:0000:%04x' "${TWO_PEER_V6##*:}"
pair v6 -g "${b6:-2}" -- -g "${a6:-2}" "$TWO_PEER_V6"
check "IPv6: the client's JSON: both GIDs fd78::, RoCE v2, the peer an IPv6 address, every op ran $N times" \
    jqf --arg a "$want_a" --arg b "$want_b" --argjson n "$N" \
    '.ok and .local.gid == $a and .remote.gid == $b and .local.gid_type == "RoCE v2"
     and (.peer | startswith("[fd78::"))
     and .ops.send.iters == $n and .ops.write.iters == $n and .ops.read.iters == $n
     and .ops.send.usec_per_iter > 0' "$RESULTS/v6.json"

# ---- IPv6 with -g auto on both ends: the client picks the fd78:: GID toward an fd78:: peer
pair v6-auto -g auto -- -g auto "$TWO_PEER_V6"
check "IPv6 -g auto: the client chose A's fd78:: GID (index ${a6:-?})" \
    jqf --argjson i "${a6:-2}" --arg a "$want_a" \
    '.ok and .gid_index == $i and .gid_selection.chosen == $i and .local.gid == $a' "$RESULTS/v6-auto.json"
expect_no_out "IPv6 -g auto: no same-host-ipv6 between two kernels" 'same-host' \
    cat "$RESULTS/v6-auto.json" "$RESULTS/v6-auto.err" "$B_RESULTS/v6-auto-server.out" "$B_RESULTS/v6-auto-server.err"

# ---- check --peer toward the other VM's IPv6 address: the kernel's choice agrees
expect_out "IPv6 check --peer $TWO_PEER_V6: the kernel would use A's fd78:: GID" \
    "kernel-choice +the kernel would use $TWO_DEV/1 GID index ${a6:-2} " \
    "$RDMACTL" check -d "$TWO_DEV" --peer "$TWO_PEER_V6"

# ---- --cm over IPv6: the kernel resolves fd78::2 and picks the GIDs
next_port
bg_b cm-server "$RDMACTL" pingpong --cm -d "$TWO_PEER_DEV" --bind "$TWO_PEER_V6" -p "$port" --timeout 20
check "--cm IPv6: B's server listens" wait_line "$B_RESULTS/cm-server.err" '^listening on' 30
expect_rc 0 "--cm IPv6: A's client exits 0" \
    "$RDMACTL" pingpong --cm -d "$TWO_DEV" -p "$port" -n "$N" --timeout 20 "$TWO_PEER_V6"
cp "$LAST_OUT" "$RESULTS/cm-client.txt"
expect_out "--cm IPv6: the client prints its figures per operation" \
    "^send +$N iters in [0-9.]+ seconds = [0-9.]+ usec/iter" cat "$RESULTS/cm-client.txt"
expect_rc 0 "--cm IPv6: B's server exits 0" wait_b cm-server 60
expect_out "--cm IPv6: the server answered every message" \
    "^served an rdmactl client: $N messages answered" cat "$B_RESULTS/cm-server.out"
expect_out "--cm IPv6: the connection used the fd78:: GIDs" 'fd78:' cat "$RESULTS/cm-client.txt" "$B_RESULTS/cm-server.out" "$B_RESULTS/cm-server.err"
