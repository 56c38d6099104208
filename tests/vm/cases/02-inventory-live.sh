# Inventory on a live kernel: devices, ports and gids read the real rxe sysfs (symlinked
# class entries, 1024-slot tables whose empty slots fail with EINVAL) and agree with
# `rdma link` and with the suite's setup: GID 0 = fe80 link-local, GID 1 = the
# IPv4-mapped address, both RoCE v2.
B=("$RDMACTL" --color never)

expect_out "devices: rxe0 on veth0, ACTIVE, with its uverbs node and libibverbs' fw_ver" \
  'rxe0 +CA/InfiniBand +[0-9a-f:]{19} +0\.0\.0 +1 +Ethernet +ACTIVE +veth0 +uverbs[0-9]' "${B[@]}" devices
expect_out "ports rxe1/1: ACTIVE, LINK_UP, RDMA MTU 1024 of 4096, veth1 MTU 1500 up" \
  'rxe1/1 +ACTIVE +LINK_UP +10 Gb/sec \(1X FDR10\) +Ethernet +- +- +- +1024 +4096 +veth1 +1500 +up' "${B[@]}" ports rxe1/1
expect_out "ports: the MTU columns are labelled RDMA (ACTIVE/MAX) and netdev apart" \
  '^PORT .* ACTIVE MTU +MAX MTU +NETDEV +NETDEV MTU +OPERSTATE$' "${B[@]}" ports
check "ports -j runs" "$RDMACTL" -j ports
json_has "ports -j: rxe0 active_mtu 1024 and max_mtu 4096 from ibv_query_port, netdev_mtu 1500" \
  "$LAST_STDOUT" device=rxe0 port=1 active_mtu=1024 max_mtu=4096 netdev_mtu=1500 available=true reason=null
check "ports -j agrees with ibv_devinfo's active_mtu and max_mtu for every port" bash -c '
  j=$("$0" -j ports) || exit 1
  ibv_devinfo -v | awk "/^hca_id:/ { d = \$2 } /port:/ { p = \$2 } /max_mtu:/ { print d, p, \"max\", \$2 } /active_mtu:/ { print d, p, \"active\", \$2 }" |
  while read -r d p what mtu; do
    got=$(jq -r --arg d "$d" --argjson p "$p" ".[] | select(.device == \$d and .port == \$p) | .${what}_mtu" <<<"$j")
    [ "$got" = "$mtu" ] || { echo "$d/$p ${what}_mtu: rdmactl $got, ibv_devinfo $mtu"; exit 1; }
  done' "$RDMACTL"
check "fw_ver is the same in devices -j and devices -v -j (libibverbs' value)" bash -c '
  a=$("$0" -j devices | jq -c "[.[] | {device, fw_ver}]") && b=$("$0" -j devices -v | jq -c "[.[] | {device, fw_ver}]") &&
  [ "$a" = "$b" ] && jq -e "all(.[]; .fw_ver == \"0.0.0\")" <<<"$a" >/dev/null || { echo "devices: $a; devices -v: $b"; exit 1; }' "$RDMACTL"

# libibverbs dlopens every provider in /etc/libibverbs.d (17 on Debian 12) unless those
# already registered match every device; rdmactl loads rxe's first (from the device's
# `parent`, rxe having no parent device), so that is the only provider opened.
providers='/libibverbs/lib[a-z0-9_]+-rdmav[0-9]+\.so", O_RDONLY'
expect_out "ports opens the rxe provider" "/libibverbs/librxe-rdmav[0-9]+\\.so\", O_RDONLY" \
  strace -f -e trace=openat "$RDMACTL" ports
expect_no_out "ports opens no other provider" "/libibverbs/lib(mlx5|mlx4|efa|irdma|bnxt_re|siw|hns|qedr|cxgb4|mana|erdma|ocrdma|mthca|vmw_pvrdma|hfi1verbs|ipathverbs)-rdmav" \
  strace -f -e trace=openat "$RDMACTL" ports
check "the strace regex matches a provider open at all (so the check above can fail)" \
  grep -Eq "$providers" "$LAST_OUT"
# librdmacm lists the devices through libibverbs too, on its first event channel.
expect_no_out "check (librdmacm) opens no provider but rxe's" "/libibverbs/lib(mlx5|mlx4|efa|irdma|bnxt_re|siw|hns|qedr|cxgb4|mana|erdma|ocrdma|mthca|vmw_pvrdma|hfi1verbs|ipathverbs)-rdmav" \
  strace -f -e trace=openat "$RDMACTL" check -d rxe1 --peer 192.168.77.1
check "check ran and strace saw the rxe provider" grep -Eq "/libibverbs/librxe-rdmav" "$LAST_OUT"

# Without libibverbs (bind-mounted away, as case 11 does) ports still lists from sysfs and
# says the RDMA MTUs are unknown and why, instead of guessing them from the netdev.
lib=$(readlink -f "$(ldconfig -p | awk '$1 == "libibverbs.so.1" { print $NF; exit }')")
hidden() { unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$lib" "$@"; }
expect_rc 0 "libibverbs hidden: ports exits 0 from sysfs" hidden "${B[@]}" ports rxe0/1
hidden_out=$LAST_STDOUT hidden_err=$LAST_STDERR
expect_out "libibverbs hidden: ports says unknown for both RDMA MTUs, the netdev MTU stays" \
  'rxe0/1 +ACTIVE .* +unknown +unknown +veth0 +1500 +up' cat "$hidden_out"
expect_out "libibverbs hidden: the note on stderr says why (the loader's reason)" \
  '^rdmactl: note: rxe0/1: ACTIVE MTU and MAX MTU unknown .*libibverbs\.so\.1 cannot be loaded' cat "$hidden_err"
check "libibverbs hidden: ports -j runs" hidden "$RDMACTL" -j ports rxe0/1
json_has "libibverbs hidden: ports -j has null MTUs and the reason" "$LAST_STDOUT" \
  device=rxe0 active_mtu=null max_mtu=null netdev_mtu=1500 available=false 'reason=libibverbs\.so\.1 cannot be loaded.*'

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
