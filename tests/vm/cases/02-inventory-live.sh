# Inventory on a live kernel: devices, ports and gids read the real rxe sysfs (symlinked
# class entries, 1024-slot tables whose empty slots fail with EINVAL) and agree with
# `rdma link` and with the suite's setup: GID 0 = fe80 link-local, GID 1 = the
# IPv4-mapped address, both RoCE v2.
B=("$RDMACTL" --color never)

expect_out "devices: rxe0 on veth0, ACTIVE, with its uverbs node" \
  'rxe0 +CA/InfiniBand +[0-9a-f:]{19} +- +1 +Ethernet +ACTIVE +veth0 +uverbs[0-9]' "${B[@]}" devices
expect_out "ports rxe1/1: ACTIVE, LINK_UP, veth1 up" \
  'rxe1/1 +ACTIVE +LINK_UP +10 Gb/sec \(1X FDR10\) +Ethernet +- +- +- +veth1 +[0-9]+ +up' "${B[@]}" ports rxe1/1
expect_out "gids: index 1 of rxe0 is 192.168.77.1, RoCE v2 on veth0" \
  'rxe0 +1 +1 +0000:0000:0000:0000:0000:ffff:c0a8:4d01 +RoCE v2 +veth0 +192\.168\.77\.1' "${B[@]}" gids --ip
expect_out "gids: index 0 of rxe1 is its link-local GID, marked" \
  'rxe1 +1 +0 +fe80:0000:0000:0000:[0-9a-f:]+ +RoCE v2 +veth1 +fe80::[0-9a-f:]+ \(link-local\)' "${B[@]}" gids --ip
expect_out "gids -j: the decoded IPv4 of rxe1" '"ip": "192\.168\.77\.2"' "${B[@]}" gids -j rxe1/1
check "gids --all lists every one of the 1024 slots of rxe0/1" \
  bash -c '[ "$("$0" --color never gids --all rxe0/1 | wc -l)" = 1025 ]' "$RDMACTL"
check "gids without --all skips the empty slots (EINVAL on their type files)" \
  bash -c '[ "$("$0" --color never gids rxe0/1 | wc -l)" -lt 20 ]' "$RDMACTL"
check "ports -j state and netdev agree with rdma link for every port" bash -c '
  rdma link show | while read -r _ dp _ state _ phys _ nd; do
    j=$("$0" -j ports "$dp") || exit 1
    grep -q "\"state\": \"$state\"" <<<"$j" || { echo "$dp: state $state"; exit 1; }
    grep -q "\"physical_state\": \"$phys\"" <<<"$j" || { echo "$dp: phys $phys"; exit 1; }
    grep -q "\"netdev\": \"$nd\"" <<<"$j" || { echo "$dp: netdev $nd"; exit 1; }
  done' "$RDMACTL"
expect_rc 3 "unknown device exits 3" "${B[@]}" devices -d mlx5_9
expect_out "unknown device names the real ones" "no device 'mlx5_9'; devices: rxe0, rxe1" "${B[@]}" devices -d mlx5_9
expect_rc 3 "unknown port exits 3" "${B[@]}" ports rxe0/2

ip link set veth1 down
sleep 1
expect_out "a downed netdev shows as DOWN / DISABLED / down" \
  'rxe1/1 +DOWN +DISABLED .* veth1 +[0-9]+ +down' "${B[@]}" ports rxe1/1
restore_net
