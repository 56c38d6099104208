# vm-timeout: 300
# rdmactl check: is a GID index usable, and does it route to the peer? (issue 4, item 3)
# Default guest state: rxe0 on veth0 (192.168.77.1), rxe1 on veth1 (192.168.77.2),
# GID index 0 = fe80 link-local v2, index 1 = ::ffff:192.168.77.x v2, accept_local=1.

IDX1='GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.1 on veth0\)'

# The right index toward the peer passes every check, including the same-host ARP one.
expect_rc 0 "check -g 1 toward the peer passes" \
    "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
expect_out "same-host peer: route leaves through veth0 and veth1 accepts local ARP" \
    'ok +same-host-arp +veth1 accepts ARP' \
    cat "$LAST_OUT"
expect_out "the route check used the live kernel route" \
    'ok +route +192\.168\.77\.2 is an address of this host \(on veth1\)' \
    cat "$LAST_OUT"
expect_rc 0 "the other direction passes too" \
    "$RDMACTL" check -d rxe1 -g 1 --peer 192.168.77.1

# The link-local index toward an IPv4 address: --peer names the peer's address, not the
# GID it will use, and `-g 0` on both ends of one L2 segment works (below, with the stock
# tool). So a warning that says on what it depends and names index 1; no failure.
expect_rc 0 "check -g 0 toward an on-link IPv4 address: a warning, not a failure" \
    "$RDMACTL" check -d rxe0 -g 0 --peer 192.168.77.2
expect_out "-g 0: works only against a peer on its link-local GID" \
    'warn +gid-family +index 0 is link-local IPv6 and the peer.s address 192\.168\.77\.2 is IPv4: this works only against a peer that also uses its link-local GID, on this L2 segment' \
    cat "$LAST_OUT"
expect_out "-g 0: says what check cannot know" 'check cannot see which GID the peer will use' \
    cat "$LAST_OUT"
expect_out "-g 0 names index 1" "fix: .*use $IDX1" \
    cat "$LAST_OUT"
expect_no_out "-g 0: no failure claimed (the false 'both GIDs must be the same family' FAIL)" \
    '^FAIL' cat "$LAST_OUT"
expect_out "-g 0: the kernel's CM would use index 1: a warning that keeps -g 0 for a link-local peer" \
    '^warn +kernel-choice +the kernel would use rxe0/1 GID index 1 .*you gave -g 0: index 0 is link-local' \
    cat "$LAST_OUT"
# The reference: link-local GIDs on both ends of one L2 segment carry a ping-pong, for the
# stock tool and for rdmactl, whatever the TCP address's family.
if command -v ibv_rc_pingpong >/dev/null; then
    bg_server ll-stock ibv_rc_pingpong -d rxe0 -g 0 -p 19091 -n 20
    wait_listen 19091 15
    expect_rc 0 "stock: -g 0 on both ends over an IPv4 TCP address works" \
        ibv_rc_pingpong -d rxe1 -g 0 -p 19091 -n 20 192.168.77.1
    wait_pid_timeout "$BG_PID" 15 >/dev/null
fi
bg_server ll-rdmactl "$RDMACTL" pingpong -d rxe0 -g 0 -p 19092 -n 20
wait_listen 19092 15
expect_rc 0 "rdmactl: -g 0 on both ends over an IPv4 TCP address works" \
    "$RDMACTL" pingpong -d rxe1 -g 0 -p 19092 -n 20 192.168.77.1
wait_pid_timeout "$BG_PID" 15 >/dev/null

# An empty slot: a GID index that does not exist exits 3, as pingpong -g 7 does.
expect_rc 3 "check -g 7 exits 3 (no such GID)" "$RDMACTL" check -d rxe0 -g 7
expect_out "-g 7 is an empty slot" 'FAIL +gid-slot +GID index 7 on rxe0/1 is an empty slot' \
    cat "$LAST_OUT"
expect_out "-g 7 names index 1" "fix: +use $IDX1" cat "$LAST_OUT"
# Past the table: the slot count comes from the live sysfs table.
expect_out "-g 5000 is past the table" \
    'FAIL +gid-slot +GID index 5000 is past the end of rxe0/1.s table \([0-9]+ entries\)' \
    "$RDMACTL" check -d rxe0 -g 5000
expect_out "-g 5000 names index 1" "fix: +use $IDX1" cat "$LAST_OUT"
expect_rc 3 "check -g 5000 exits 3 (no such GID)" "$RDMACTL" check -d rxe0 -g 5000
expect_out "-g 5000: stderr says it once, with what exists" \
    '^rdmactl: no GID index 5000 on rxe0/1; past the table; populated indices: 0, 1' cat "$LAST_STDERR"

# On the live host the port's active MTU comes from verbs (ibv_query_port), judged as doctor does.
expect_out "the MTU check uses verbs' active_mtu" \
    'ok +mtu +RoCE MTU 1024 over netdev veth0 MTU 1500' "$RDMACTL" check -d rxe0 -g 1
expect_out "active_mtu came from ibv_query_port" 'evidence: active_mtu from ibv_query_port' \
    cat "$LAST_OUT"

# auto picks index 1 and says why it rejected index 0.
expect_rc 0 "check -g auto toward the peer passes" \
    "$RDMACTL" check -d rxe0 -g auto --peer 192.168.77.2
expect_out "auto chooses index 1" '^auto: chose index 1$' \
    cat "$LAST_OUT"
expect_out "auto rejects index 0 as link-local IPv6" \
    'index 0 +rejected +it is link-local IPv6 and the peer 192\.168\.77\.2 is IPv4' \
    cat "$LAST_OUT"
expect_out "auto in JSON" '"chosen": 1' \
    "$RDMACTL" --json check -d rxe0 -g auto --peer 192.168.77.2

# --env: NCCL_IB_GID_INDEX=0 is flagged and the fix names index 1.
expect_rc 1 "--env with NCCL_IB_GID_INDEX=0 fails" \
    env NCCL_IB_GID_INDEX=0 "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2 --env
expect_out "--env flags NCCL_IB_GID_INDEX=0 and names 1" \
    'fix: +set NCCL_IB_GID_INDEX=1: use GID index 1' \
    cat "$LAST_OUT"
expect_rc 0 "--env with NCCL_IB_GID_INDEX=1 and NCCL_IB_HCA=rxe passes" \
    env NCCL_IB_GID_INDEX=1 NCCL_IB_HCA=rxe UCX_IB_GID_INDEX=auto "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2 --env
expect_out "--env flags an NCCL_IB_HCA that selects nothing" \
    'FAIL +env-nccl-ib-hca +NCCL_IB_HCA=mlx5 selects no device' \
    env NCCL_IB_HCA=mlx5 "$RDMACTL" check -d rxe0 -g 1 --env
# As NCCL and UCX read them: strtoll's 0x1 is 1; a UCX port that is not here fails.
expect_out "--env reads NCCL_IB_GID_INDEX=0x1 as NCCL does" \
    'ok +env-nccl-ib-gid-index +NCCL_IB_GID_INDEX=0x1 selects GID index 1' \
    env NCCL_IB_GID_INDEX=0x1 "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2 --env
expect_out "--env flags a UCX_NET_DEVICES port that is not here" \
    'FAIL +env-ucx-net-devices +UCX_NET_DEVICES=mlx5_0:1 names no device on this host' \
    env UCX_NET_DEVICES=mlx5_0:1 "$RDMACTL" check -d rxe0 -g 1 --env

# Without accept_local the same-host ARP is dropped: check predicts the RTR ETIMEDOUT.
sysctl -q -w net.ipv4.conf.all.accept_local=0 net.ipv4.conf.veth0.accept_local=0 net.ipv4.conf.veth1.accept_local=0
expect_rc 1 "without accept_local, check -g 1 fails" \
    "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
expect_out "without accept_local, the fix is the sysctl" \
    'FAIL +same-host-arp +same-host test: veth1 drops the ARP request from veth0' \
    cat "$LAST_OUT"
restore_net

# A netdev taken down: the port goes DOWN and the port-state check says so (one failure,
# the netdev its cause).
ip link set veth1 down
sleep 1
expect_rc 1 "with veth1 down, check on rxe1 fails" "$RDMACTL" check -d rxe1 -g 1
expect_out "with veth1 down, the port-state check says so, naming veth1" 'FAIL +port-state +rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down' \
    cat "$LAST_OUT"
restore_net
