# rdmactl subnet on a RoCE host: there is no subnet to walk, and it says so. Without the
# ib_umad module it says so from the ports' link layers (loading the module would change
# nothing: issue 26); with it, rxe's umad ports are Ethernet and the message points at
# fabric. (The walk itself is tested on ibsim: tests/subnet_ibsim.rs.)

loaded_here=0
if [ ! -d /sys/class/infiniband_mad ] || ! ls /sys/class/infiniband_mad | grep -q '^umad'; then
    expect_rc 1 "no umad device: subnet fails" "$RDMACTL" subnet
    expect_out "no umad device on a RoCE-only host: subnet management is an InfiniBand notion" \
        'no InfiniBand port here \(rxe0/1 \(Ethernet\), rxe1/1 \(Ethernet\)\): subnet management is an InfiniBand notion.*rdmactl fabric' \
        "$RDMACTL" subnet
    expect_no_out "no umad device on a RoCE-only host: no modprobe ib_umad advice" 'modprobe' "$RDMACTL" subnet
    if modprobe ib_umad 2>/dev/null; then
        loaded_here=1
    else
        skip "ib_umad cannot be loaded in this kernel"
    fi
fi

check "ib_umad lists a umad port for rxe0" grep -qx rxe0 /sys/class/infiniband_mad/umad0/ibdev
expect_rc 1 "a RoCE port: subnet fails" "$RDMACTL" subnet
expect_out "a RoCE port: subnet management is an InfiniBand notion, use fabric" \
    'rxe0 port 1 is Ethernet: subnet management is an InfiniBand notion.*rdmactl fabric' \
    "$RDMACTL" subnet
expect_out "-d rxe1 names rxe1" 'rxe1 port 1 is Ethernet' "$RDMACTL" subnet -d rxe1
expect_out "a device that does not exist is named with the ones that do" \
    "no device 'mlx5_9'; devices: rxe0/1, rxe1/1" "$RDMACTL" subnet -d mlx5_9
expect_rc 3 "a device that does not exist is exit 3" "$RDMACTL" subnet -d mlx5_9
expect_no_out "no panic" 'panicked' "$RDMACTL" subnet -j

if [ "$loaded_here" = 1 ]; then
    rmmod ib_umad 2>/dev/null || true
fi
