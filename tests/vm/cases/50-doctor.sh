# vm-timeout: 240
# rdmactl doctor on a real rxe host: healthy, then each broken piece named with its fix.
# Breakage happens in private mount namespaces (unshare -m) or is undone by restore_net.

LIBDIR=/usr/lib/x86_64-linux-gnu
LIBIBVERBS=$(readlink -f "$LIBDIR/libibverbs.so.1")

expect_rc 0 "doctor passes on a healthy host" "$RDMACTL" doctor
expect_out "doctor sees libibverbs and both devices through verbs" \
    '^ok +provider +rxe1 +libibverbs sees rxe1 \(provider rxe\)' "$RDMACTL" doctor
check "doctor -j is JSON with no failures" "$RDMACTL" -j doctor
json_has "JSON counts zero failures" "$LAST_STDOUT" fail=0
json_has "JSON has the IPv4-mapped GID finding for rxe0" "$LAST_STDOUT" code=ipv4-gid device=rxe0 port=1 severity=ok
json_has "JSON: the netdev finding names veth0's address" "$LAST_STDOUT" code=netdev device=rxe0 port=1 severity=ok 'message=netdev veth0 is up, addresses .*192\.168\.77\.1/24.*'
expect_out "doctor names the netdev's addresses" '^ok +netdev +rxe1/1 +netdev veth1 is up, addresses .*192\.168\.77\.2/24' "$RDMACTL" doctor

# Provider libraries hidden: sysfs lists rxe0 but ibv_get_device_list is empty.
expect_rc 1 "hidden providers fail doctor" \
    unshare -m bash -c "mount -t tmpfs none $LIBDIR/libibverbs && exec $RDMACTL doctor"
expect_out "hidden providers: rxe named with the package to install" \
    'FAIL +provider +rxe0 +libibverbs has no provider for rxe0: librxe-rdmav\*\.so is not installed' \
    unshare -m bash -c "mount -t tmpfs none $LIBDIR/libibverbs && exec $RDMACTL doctor"
expect_out "hidden providers: the fix names ibverbs-providers" 'fix: .*apt install ibverbs-providers' \
    unshare -m bash -c "mount -t tmpfs none $LIBDIR/libibverbs && exec $RDMACTL doctor"

# libibverbs.so.1 hidden: rdmactl must still start (never 127) and fall back to sysfs.
expect_rc 1 "hidden libibverbs: doctor runs and fails (not 127)" \
    unshare -m bash -c "mount --bind /dev/null $LIBIBVERBS && exec $RDMACTL doctor"
expect_out "hidden libibverbs: named with its install command" \
    'FAIL +libibverbs +host +libibverbs.so.1 cannot be loaded' \
    unshare -m bash -c "mount --bind /dev/null $LIBIBVERBS && exec $RDMACTL doctor"
expect_rc 0 "hidden libibverbs: devices still lists from sysfs" \
    unshare -m bash -c "mount --bind /dev/null $LIBIBVERBS && exec $RDMACTL devices"
expect_out "hidden libibverbs: devices shows rxe0" '^rxe0 ' \
    unshare -m bash -c "mount --bind /dev/null $LIBIBVERBS && exec $RDMACTL devices"

# Non-root with a 16 KiB memlock limit: registration would fail with ENOMEM.
expect_out "non-root with ulimit -l 16: memlock named with the fix" \
    'FAIL +memlock +host +locked-memory limit 16 KiB .*ENOMEM' \
    bash -c "ulimit -S -l 16 && exec setpriv --reuid=65534 --regid=65534 --clear-groups $RDMACTL doctor"
expect_out "non-root memlock fix names limits.conf" 'fix: .*limits\.conf' \
    bash -c "ulimit -S -l 16 && exec setpriv --reuid=65534 --regid=65534 --clear-groups $RDMACTL doctor"

# The netdev under rxe1 goes down: the rxe port follows.
check "take veth1 down" ip link set veth1 down
for _ in 1 2 3 4 5 6 7 8 9 10; do
    [[ $(<"/sys/class/infiniband/rxe1/ports/1/state") == *DOWN* ]] && break
    sleep 0.3
done
expect_rc 1 "link down fails doctor" "$RDMACTL" doctor -d rxe1
expect_out "link down: rxe1 port DOWN explained" 'FAIL +port-state +rxe1/1 +rxe1/1 is DOWN: a RoCE port follows its netdev, and veth1 is down' \
    "$RDMACTL" doctor -d rxe1
expect_out "link down: the fix brings veth1 up" 'fix: (bring the interface up: )?`?ip link set veth1 up' "$RDMACTL" doctor -d rxe1
expect_out "link down: the netdev's state is evidence of the port failure" 'evidence: netdev veth1 operstate down' "$RDMACTL" doctor -d rxe1
expect_out "link down: one root cause, one failure" ', 1 failure\(s\)$' "$RDMACTL" doctor -d rxe1
restore_net
expect_rc 0 "healthy again after restore_net" "$RDMACTL" doctor

# No device while rdma_rxe stays loaded: exit 4, as every command without a device, and the
# fix is only `rdma link add` on a netdev that is up (not modprobe again).
rdma link delete rxe1
rdma link delete rxe0
expect_rc 4 "no device: doctor exits 4" "$RDMACTL" doctor
# The VM has no network function on its PCI bus (-nic none) and rdma_rxe is loaded: no RDMA
# NIC, and the fix adds a Soft-RoCE device without naming a module to load.
expect_out "no device, rdma_rxe loaded: no RDMA NIC, the fix adds a device" \
    'fix: for Soft-RoCE on [a-z0-9]+ \(rdma_rxe is loaded\): `rdma link add rxe0 type rxe netdev [a-z]' \
    "$RDMACTL" doctor
expect_out "no device: the cause is the PCI bus" \
    'no device is registered: this host has no RDMA NIC \(no PCI network function at all\)' cat "$LAST_STDOUT"
expect_no_out "no device: no module named to load" 'modprobe|load the NIC' cat "$LAST_STDOUT"
restore_net
check "both devices are back" wait_gids 20
