# shellcheck shell=bash
# vm-timeout: 180
# check --env predicts the GID index UCX takes under UCX_IB_GID_INDEX=auto, and the real
# UCX (Debian's ucx-utils, 1.13) agrees. Each port gets a second address, 10.93.0.x/24, after
# 192.168.77.x: UCX's rule takes the first RoCE v2 IPv4 GID (index 1) whatever the peer, so
# toward 10.93.0.2 rdmactl must say that UCX under auto uses index 1, which is not on the
# peer's subnet. UCX's own choice is read from its debug log of a real ucx_perftest run
# ("rxe0:1 using gid_index N", uct_ib_device_select_gid).

command -v ucx_perftest >/dev/null || {
    # scripts/setup installs ucx-utils: a missing tool is a failure, not a pass.
    check "ucx_perftest is installed (ucx-utils, scripts/setup)" false
    return 0 2>/dev/null || exit 0
}

has_gid() { # has_gid DEV ADDR: DEV's port 1 holds ADDR's IPv4-mapped GID
    local f g
    ipv4_gid "$2"
    for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
        read -r g <"$f" 2>/dev/null && [[ $g == "$_gid" ]] && return 0
    done
    return 1
}
wait_gid() { # wait_gid DEV ADDR yes|no: until ADDR's GID is there (yes) or gone (no), 15 s
    local i
    for ((i = 0; i < 150; i++)); do
        if has_gid "$1" "$2"; then [[ $3 == yes ]] && return 0; else [[ $3 == no ]] && return 0; fi
        sleep 0.1
    done
    return 1
}
ip addr add 10.93.0.1/24 dev veth0
ip addr add 10.93.0.2/24 dev veth1
wait_gid rxe0 10.93.0.1 yes && wait_gid rxe1 10.93.0.2 yes
check "rxe0 and rxe1 hold the GIDs of 10.93.0.1 and 10.93.0.2" test $? = 0

# UCX's choice for each device: a UCT-level run over rc_verbs on it. ucx_perftest's server
# takes the test (transport, device) from the client over its TCP connection, so each run
# opens the client's device at both ends; its debug log names the gid_index.
export UCX_LOG_LEVEL=debug UCX_IB_GID_INDEX=auto
ucx_run() { # ucx_run DEV PEER PORT [TAG]: a ping-pong on DEV toward PEER; log in ucx-DEV[TAG].log
    bg_start "ucx-server-$1" ucx_perftest -p "$3"
    check "ucx_perftest server for $1 listens" wait_listen "$3" 20
    expect_rc 0 "ucx_perftest client over rc_verbs on $1 toward $2 completes" \
        ucx_perftest "$2" -x rc_verbs -d "$1:1" -t am_lat -n 200 -p "$3"
    cp "$LAST_OUT" "$RESULTS/ucx-$1${4:-}.log"
    expect_rc 0 "ucx_perftest server for $1 exits 0" wait_pid_timeout "$BG_PID" 20
}
ucx_run rxe0 10.93.0.2 13337
ucx_run rxe1 10.93.0.1 13338
unset UCX_LOG_LEVEL

ucx_index() { # ucx_index DEV [TAG]: the gid_index UCX logged for DEV:1
    local line re="$1:1 using gid_index ([0-9]+)"
    while IFS= read -r line; do
        [[ $line =~ $re ]] && { echo "${BASH_REMATCH[1]}"; return 0; }
    done <"$RESULTS/ucx-$1${2:-}.log"
    return 1
}
ucx0=$(ucx_index rxe0)
ucx1=$(ucx_index rxe1)
check "UCX logged its gid_index for rxe0 ('$ucx0') and rxe1 ('$ucx1')" test -n "$ucx0" -a -n "$ucx1"

predicted() { # predicted DEV PEER: the index rdmactl says UCX under auto will use
    local re='UCX under auto will use GID index ([0-9]+)'
    env UCX_IB_GID_INDEX=auto "$RDMACTL" check -d "$1" --peer "$2" --env >"$RESULTS/predict-$1.out" 2>&1
    [[ $(<"$RESULTS/predict-$1.out") =~ $re ]] && echo "${BASH_REMATCH[1]}"
}
pred0=$(predicted rxe0 10.93.0.2)
pred1=$(predicted rxe1 10.93.0.1)
check "rxe0: rdmactl's prediction ('$pred0') is UCX's choice ('$ucx0')" test -n "$pred0" -a "$pred0" = "$ucx0"
check "rxe1: rdmactl's prediction ('$pred1') is UCX's choice ('$ucx1')" test -n "$pred1" -a "$pred1" = "$ucx1"
check "UCX took index 1 (192.168.77.1), not the peer's subnet" test "$ucx0" = 1
expect_out "auto is judged as index 1 is: not on the peer's subnet" \
    "^warn +env-ucx-ib-gid-index +UCX under auto will use GID index 1 \\(RoCE v2, ::ffff:192\\.168\\.77\\.1 on veth0\\), which is not on the peer's subnet" \
    cat "$RESULTS/predict-rxe0.out"
expect_out "the same warning as an explicit UCX_IB_GID_INDEX=1" \
    "^warn +env-ucx-ib-gid-index +UCX_IB_GID_INDEX=1 selects GID index 1" \
    env UCX_IB_GID_INDEX=1 "$RDMACTL" check -d rxe0 --peer 10.93.0.2 --env
expect_out "unset in a UCX job (UCX_NET_DEVICES set) is auto, judged the same" \
    "^warn +env-ucx-ib-gid-index +UCX under auto will use GID index 1 \\(RoCE v2, ::ffff:192\\.168\\.77\\.1 on veth0\\), which is not on the peer's subnet" \
    env -u UCX_IB_GID_INDEX UCX_NET_DEVICES=rxe0:1 "$RDMACTL" check -d rxe0 --peer 10.93.0.2 --env
expect_out "the fix names the GID on the peer's subnet" \
    "fix: +set UCX_IB_GID_INDEX=[0-9]+: use GID index [0-9]+ \\(RoCE v2, ::ffff:10\\.93\\.0\\.1 on veth0\\)" \
    cat "$RESULTS/predict-rxe0.out"

# Without 192.168.77.1 the first RoCE v2 IPv4 GID of rxe0 is 10.93.0.1's: UCX moves to it,
# and the prediction follows the table, not a fixed index.
ip addr del 192.168.77.1/24 dev veth0
wait_gid rxe0 192.168.77.1 no
check "rxe0's GID of 192.168.77.1 is gone" test $? = 0
export UCX_LOG_LEVEL=debug
ucx_run rxe0 10.93.0.2 13339 -no77
unset UCX_LOG_LEVEL
ucx2=$(ucx_index rxe0 -no77)
pred2=$(predicted rxe0 10.93.0.2)
check "without 192.168.77.1: rdmactl's prediction ('$pred2') is UCX's choice ('$ucx2'), not 1" \
    test -n "$pred2" -a "$pred2" = "$ucx2" -a "$ucx2" != 1
expect_out "and it is judged ok: the GID on the peer's subnet" \
    "^ok +env-ucx-ib-gid-index +UCX under auto will use GID index $ucx2 \\(RoCE v2, ::ffff:10\\.93\\.0\\.1 on veth0\\), as rdmactl would" \
    cat "$RESULTS/predict-rxe0.out"

restore_net
