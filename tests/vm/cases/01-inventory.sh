# The inventory commands on real rxe devices: devices, ports and gids --ip, as tables and as
# JSON (-j). The device is `device` in every command; port keys follow iproute2's `rdma -j`
# (port, state, netdev) and GID keys the model's GidEntry (index, gid in sysfs form, type,
# netdev); where a name is not settled, json_has accepts alternatives (a|b). Device names in
# the text tables are checked loosely.
expect_out "devices lists rxe0" '(^|[[:space:]])rxe0([[:space:]]|$)' "$RDMACTL" devices
expect_out "devices lists rxe1" '(^|[[:space:]])rxe1([[:space:]]|$)' "$RDMACTL" devices
check "devices -j runs" "$RDMACTL" -j devices
json_has "devices -j has rxe0" "$LAST_STDOUT" device=rxe0
json_has "devices -j has rxe1" "$LAST_STDOUT" device=rxe1

expect_out "ports: a row for rxe0 says ACTIVE" 'rxe0.*ACTIVE' "$RDMACTL" ports
expect_out "ports: a row for rxe1 says ACTIVE" 'rxe1.*ACTIVE' "$RDMACTL" ports
check "ports -j runs" "$RDMACTL" -j ports
json_has "ports -j: rxe0 port 1 ACTIVE on veth0" "$LAST_STDOUT" \
    device=rxe0 'port=1' 'state=(\d+: )?ACTIVE' 'netdev=veth0'
json_has "ports -j: rxe1 port 1 ACTIVE on veth1" "$LAST_STDOUT" \
    device=rxe1 'port=1' 'state=(\d+: )?ACTIVE' 'netdev=veth1'

# The tables may print a device once per group, so the text checks stay loose; the JSON
# checks below tie index, GID, type, netdev and address together.
expect_out "gids --ip shows 192.168.77.1 as RoCE v2" '192\.168\.77\.1.*RoCE v2|RoCE v2.*192\.168\.77\.1' \
    "$RDMACTL" gids --ip
expect_out "gids --ip shows 192.168.77.2" '192\.168\.77\.2' "$RDMACTL" gids --ip
expect_out "gids --ip shows rxe1" 'rxe1' "$RDMACTL" gids --ip
check "gids --ip -j runs" "$RDMACTL" -j gids --ip
json_has "gids -j: rxe0 index 1 is ::ffff:192.168.77.1 RoCE v2 on veth0" "$LAST_STDOUT" \
    device=rxe0 'index=1' \
    'gid=::ffff:192\.168\.77\.1|0000:0000:0000:0000:0000:ffff:c0a8:4d01' 'type=RoCE v2' 'netdev=veth0' \
    'ip|ipv4|address=192\.168\.77\.1'
json_has "gids -j: rxe0 index 0 is fe80 link-local" "$LAST_STDOUT" \
    device=rxe0 'index=0' 'gid=fe80:.*'
json_has "gids -j: rxe1 index 1 is 192.168.77.2" "$LAST_STDOUT" \
    device=rxe1 'index=1' 'ip|ipv4|address=192\.168\.77\.2'
