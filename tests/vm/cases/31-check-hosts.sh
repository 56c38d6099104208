# shellcheck shell=bash
# vm-timeout: 600
# check and doctor on the hosts operators have: several addresses on one port (/31,
# secondary, /32), a VLAN, a second RDMA device on another route, a VRF, a gateway that
# does not answer, no route, peers that cannot be RC peers, another network namespace, a
# full GID table, one GID on two devices, and a renamed device. Each check asserts the
# cause the finding names; kernel-choice is shown to fail when the kernel would choose
# differently.

# --- several addresses on veth0, a VLAN on both ends
ip addr add 10.90.0.1/32 dev veth0
ip addr add 10.91.0.0/31 dev veth0
ip link add link veth0 name veth0.100 type vlan id 100
ip link add link veth1 name veth1.100 type vlan id 100
ip addr add 10.100.0.1/24 dev veth0.100
ip addr add 10.100.0.2/24 dev veth1.100
ip link set veth0.100 up
ip link set veth1.100 up
for i in veth0/100 veth1/100; do sysctl -qw "net.ipv4.conf.$i.accept_local=1" "net.ipv4.conf.$i.rp_filter=0"; done
wait_gids 15
gid_of() { # gid_of DEV ADDR: the index of ADDR's IPv4-mapped GID on DEV
    "$RDMACTL" -j gids -d "$1" | jq -r --arg a "$2" '.[] | select(.gid | endswith($a)) | .index' | head -1
}
hex() { local a b c d; IFS=. read -r a b c d <<<"$1"; printf '%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"; }
i31=$(gid_of rxe0 "$(hex 10.91.0.0)")
i100=$(gid_of rxe0 "$(hex 10.100.0.1)")
check "rxe0 has GIDs for 10.91.0.0 (index '$i31') and 10.100.0.1 (index '$i100')" test -n "$i31" -a -n "$i100"

# -g auto toward a peer behind the /31 (not configured anywhere): the route's source.
expect_out "/31: -g auto picks the GID of the route's source 10.91.0.0" "^check rxe0/1 GID index $i31 toward 10\\.91\\.0\\.1" \
    "$RDMACTL" check -d rxe0 -g auto --peer 10.91.0.1
expect_out "/31: and says it is the route's source" "its address is the route's source toward the peer" cat "$LAST_OUT"
expect_out "/31: index 1 lost, with the reason" "index 1 .*the route to the peer leaves from 10\\.91\\.0\\.0" cat "$LAST_OUT"

# kernel-choice toward the VLAN peer 10.100.0.2 (rxe1's, on this host), checking index 1:
# the kernel answers from the port's address on the peer's subnet, so it disagrees.
expect_rc 1 "kernel-choice: -g 1 toward the VLAN peer fails" "$RDMACTL" check -d rxe0 -g 1 --peer 10.100.0.2
expect_out "kernel-choice: names the index the kernel would use" \
    "FAIL +kernel-choice +the kernel would use rxe0/1 GID index $i100 .*; you gave -g 1" cat "$LAST_OUT"
expect_out "kernel-choice: the fix is that index" "fix: use -g $i100" cat "$LAST_OUT"
expect_rc 0 "kernel-choice: -g auto toward the VLAN peer agrees" "$RDMACTL" check -d rxe0 -g auto --peer 10.100.0.2
expect_out "kernel-choice: auto chose the kernel's index" "ok +kernel-choice .*auto chose the same index" cat "$LAST_OUT"
for i in 2 3 4 5 6; do
    "$RDMACTL" check -d rxe0 -g "$i" --peer 10.100.0.2 >"$RESULTS/every-$i.out" 2>&1
done
check "kernel-choice: agrees with at most one index of 2..6 (the kernel's)" \
    bash -c '[ "$(cat "$0"/every-*.out | grep -c "ok  *kernel-choice")" -le 1 ]' "$RESULTS"

# --- another RDMA device on another route: the kernel would use it, not rxe0
ip netns add far
ip link add vfar0 type veth peer name vfar1
ip link set vfar1 netns far
ip addr add 10.70.0.1/24 dev vfar0
ip link set vfar0 up
ip netns exec far ip addr add 10.70.0.2/24 dev vfar1
ip netns exec far ip link set vfar1 up
ip netns exec far ip link set lo up
rdma link add rxefar type rxe netdev vfar0
wait_gids 10
expect_rc 1 "other device: check -d rxe0 toward 10.70.0.2 fails" "$RDMACTL" check -d rxe0 -g 1 --peer 10.70.0.2
expect_out "other device: the kernel would use rxefar, not rxe0" \
    'FAIL +kernel-choice +the kernel would use rxefar/1 .*, not rxe0/1' cat "$LAST_OUT"

# A link-local peer with its scope: the CM is asked on that link.
sleep 2
ll=$(ip netns exec far ip -6 -o addr show dev vfar1 scope link | awk '{print $4}' | cut -d/ -f1)
check "far end has a link-local address ('$ll')" test -n "$ll"
expect_out "scoped link-local peer: the kernel is asked, on rxefar" \
    'ok +kernel-choice +the kernel would use rxefar/1 GID index 0 ' "$RDMACTL" check -d rxefar -g auto --peer "$ll%vfar0"

# --- VRF: the route is in the VRF's table
if modprobe vrf 2>/dev/null; then
    ip link add vrf-blue type vrf table 10
    ip link set vrf-blue up
    ip link add vrfa type veth peer name vrfb
    ip link set vrfa master vrf-blue
    ip addr add 10.80.0.1/24 dev vrfa
    ip link set vrfa up
    ip link set vrfb up
    rdma link add rxevr type rxe netdev vrfa
    wait_gids 10
    expect_no_out "VRF: the route is found in the VRF's table" 'no-route +this host has no route to 10\.80\.0\.9' \
        "$RDMACTL" check -d rxevr -g auto --peer 10.80.0.9
    expect_out "VRF: through vrfa, from table 10" 'from routing table 10, not main' cat "$LAST_OUT"
else
    skip_here "no vrf module"
fi

# --- a gateway that does not answer: it is named, and accept_local is not
ip route add 10.50.0.0/16 via 192.168.77.254 dev veth1
expect_rc 1 "gateway: check fails" "$RDMACTL" check -d rxe1 -g auto --peer 10.50.1.1
expect_out "gateway: the gateway is named" 'gateway 192\.168\.77\.254' cat "$LAST_OUT"
expect_no_out "gateway: no accept_local advice for a remote peer" 'accept_local' cat "$LAST_OUT"
ip route del 10.50.0.0/16

# --- no route: ENETUNREACH at once
start=$EPOCHREALTIME
expect_rc 1 "no route: check fails" "$RDMACTL" check -d rxe1 -g auto --peer 10.99.0.5
expect_out "no route: ENETUNREACH, as rping says" 'ENETUNREACH \(Network is unreachable\)' cat "$LAST_OUT"
expect_no_out "no route: not an ARP timeout" 'no ARP|ETIMEDOUT' cat "$LAST_OUT"
expect_out "no route: under the code a failed run gives it" '(FAIL|fail) +no-route +this host has no route to 10\.99\.0\.5' cat "$LAST_OUT"
expect_no_out "no route: said once, not also as check's own route code" '(FAIL|fail) +route ' cat "$LAST_OUT"

# --- peers that cannot be RC peers: usage errors that say why
for p in 127.0.0.1:loopback 0.0.0.0:unspecified 192.168.77.255:broadcast 224.0.0.1:multicast; do
    expect_rc 2 "peer ${p%%:*}: refused" "$RDMACTL" check -d rxe1 --peer "${p%%:*}"
    expect_out "peer ${p%%:*}: says it is ${p##*:}" "^rdmactl: peer ${p%%:*} is (an?|the) ${p##*:} address" cat "$LAST_OUT"
done
restore_net

# --- another network namespace: said as it is
ip netns add ns1
expect_no_out "netns: doctor does not claim rxe lives outside the initial namespace" 'FAIL +netns' \
    ip netns exec ns1 "$RDMACTL" doctor
expect_out "netns: doctor says this process is elsewhere" 'info +netns .*this process runs outside the initial network namespace' cat "$LAST_OUT"
expect_out "netns: ports says why MTU and state are unknown" 'not in this network namespace' \
    ip netns exec ns1 "$RDMACTL" ports
ip netns delete ns1

# --- one GID on two devices: rxe on a bond and on its slave
if modprobe bonding 2>/dev/null; then
    ip link add bond0 type bond mode active-backup
    ip link add vb0 type veth peer name vb1
    ip link set vb0 master bond0
    ip addr add 10.60.0.1/24 dev bond0
    ip link set bond0 up
    ip link set vb1 up
    rdma link add rxebond type rxe netdev bond0
    rdma link add rxeslave type rxe netdev vb0 2>/dev/null
    wait_gids 10
    if "$RDMACTL" -j gids -d rxeslave 2>/dev/null | jq -e '.[] | select(.gid | endswith("0a3c:0001"))' >/dev/null; then
        expect_out "duplicate GID: doctor fails naming both devices" \
            'FAIL +duplicate-gid +host +rxebond/1 and rxeslave/1 claim the same GID' "$RDMACTL" doctor
    else
        skip_here "the slave's rxe did not take the bond's GID on this kernel"
    fi
    restore_net
else
    skip_here "no bonding module"
fi

# --- a renamed device keeps its provider
rdma dev set rxe0 name roce7
expect_out "renamed: doctor names the provider" 'libibverbs sees roce7 \(provider rxe\)' "$RDMACTL" doctor
rdma dev set roce7 name rxe0

# --- a full GID table: a warning, with the addresses left out
for i in $(seq 1 1100); do echo "address add 2001:db8:1::$i/64 dev veth1 nodad"; done | ip -batch -
sleep 3
wait_gids 20
expect_out "full table: doctor warns, counting the addresses without a GID" \
    'warn +gid-table +rxe1/1 +the GID table is full \(1024 of 1024 slots\): [0-9]+ address\(es\) of veth1 have no GID' "$RDMACTL" doctor
expect_no_out "full table: the netdev line does not list every address" '2001:db8:1::900' cat "$LAST_OUT"
ip -6 addr flush dev veth1 scope global
restore_net
