# The test bed itself, seen by rdma-core's own tools: if this case fails, every later case is
# suspect. rxe0/rxe1 exist and are ACTIVE, GID index 1 is the IPv4-mapped RoCE v2 GID, and a
# stock ibv_rc_pingpong between them works (so accept_local and DAD are in place).
expect_out "ibv_devices lists rxe0" '^[[:space:]]+rxe0[[:space:]]' ibv_devices
expect_out "ibv_devices lists rxe1" '^[[:space:]]+rxe1[[:space:]]' ibv_devices
for dev in rxe0 rxe1; do
    expect_out "$dev port 1 is PORT_ACTIVE" 'state:[[:space:]]+PORT_ACTIVE \(4\)' ibv_devinfo -d "$dev"
    expect_out "$dev link layer is Ethernet" 'link_layer:[[:space:]]+Ethernet' ibv_devinfo -d "$dev"
done
expect_out "rxe0 GID[0] is the fe80 link-local GID, RoCE v2" \
    'GID\[ *0\]:[[:space:]]+fe80::[0-9a-f:]+, RoCE v2' ibv_devinfo -v -d rxe0
expect_out "rxe0 GID[1] is ::ffff:192.168.77.1, RoCE v2" \
    'GID\[ *1\]:[[:space:]]+::ffff:192\.168\.77\.1, RoCE v2$' ibv_devinfo -v -d rxe0
expect_out "rxe1 GID[1] is ::ffff:192.168.77.2, RoCE v2" \
    'GID\[ *1\]:[[:space:]]+::ffff:192\.168\.77\.2, RoCE v2$' ibv_devinfo -v -d rxe1
expect_out "sysfs: rxe0 gids/1 is the IPv4-mapped GID" '^0000:0000:0000:0000:0000:ffff:c0a8:4d01$' \
    cat /sys/class/infiniband/rxe0/ports/1/gids/1
expect_out "sysfs: rxe0 gid_attrs/ndevs/1 is veth0" '^veth0$' \
    cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1
expect_out "rdma link: rxe0 on veth0, rxe1 on veth1" 'rxe1/1 state ACTIVE .*netdev veth1' rdma link show
check "same-host ARP fix: accept_local=1 on veth1" grep -qx 1 /proc/sys/net/ipv4/conf/veth1/accept_local

# The bed works end to end: RC send/recv through the kernel's UDP/4791 path over the veth pair.
bg_server pingpong-server ibv_rc_pingpong -d rxe0 -g 1 -n 200
check "ibv_rc_pingpong server listens" wait_listen 18515 10
expect_out "ibv_rc_pingpong rxe1 -> rxe0 (-g 1) completes 200 iterations" \
    '^[0-9]+ iters in [0-9.]+ seconds' ibv_rc_pingpong -d rxe1 -g 1 -n 200 192.168.77.1
expect_rc 0 "ibv_rc_pingpong server exits 0" wait_pid_timeout "$BG_PID" 20
check "the veth pair carried the traffic" test "$(cat /sys/class/net/veth1/statistics/rx_packets)" -gt 200
