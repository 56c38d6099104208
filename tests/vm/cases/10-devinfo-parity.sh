# rdmactl devices -v equals ibv_devinfo -v field for field (issue 3): JSON against the
# parsed text for rxe0, rxe1 and all devices at once, and the human layout line by line.

parity_script() {
    local dir
    for dir in "$(dirname "${BASH_SOURCE[0]}")/.." "${VM_LIB:+$(dirname "$VM_LIB")}"; do
        [ -n "$dir" ] && [ -f "$dir/devinfo_parity.py" ] && { echo "$dir/devinfo_parity.py"; return; }
    done
}
PARITY=$(parity_script)
check "devinfo_parity.py is reachable from the guest" test -n "$PARITY"

for dev in rxe0 rxe1; do
    ibv_devinfo -v -d "$dev" > "$RESULTS/$dev-ibv_devinfo-v.txt" 2>&1
    "$RDMACTL" devices -v -d "$dev" -j > "$RESULTS/$dev-rdmactl-v.json" 2> "$RESULTS/$dev-rdmactl-v.err"
    check "$dev: devices -v -j exits 0" test -s "$RESULTS/$dev-rdmactl-v.json"
    check "$dev: every ibv_devinfo -v field equals rdmactl's JSON" \
        python3 "$PARITY" "$RESULTS/$dev-ibv_devinfo-v.txt" "$RESULTS/$dev-rdmactl-v.json"
    "$RDMACTL" devices -v -d "$dev" > "$RESULTS/$dev-rdmactl-v.txt" 2>&1
    # rdmactl adds sysfs lines (driver, uverbs, rate, netdev, gid_netdevs, pkeys) after
    # ibv_devinfo's own; without them the text must be ibv_devinfo's, line for line.
    grep -Ev $'^\t+(driver|uverbs|rate|netdev|gid_netdevs|pkeys):' "$RESULTS/$dev-rdmactl-v.txt" \
        > "$RESULTS/$dev-rdmactl-v-verbs-lines.txt"
    check "$dev: human devices -v, less its sysfs lines, diffs clean against ibv_devinfo -v" \
        diff -u "$RESULTS/$dev-ibv_devinfo-v.txt" "$RESULTS/$dev-rdmactl-v-verbs-lines.txt"
    expect_out "$dev: devices -v adds the port's netdev from sysfs" \
        $'^\t\t\tnetdev:\t+veth[01] \\(up, mtu 1500\\)$' cat "$RESULTS/$dev-rdmactl-v.txt"
done

ibv_devinfo -v > "$RESULTS/all-ibv_devinfo-v.txt" 2>&1
"$RDMACTL" devices -v -j > "$RESULTS/all-rdmactl-v.json" 2> "$RESULTS/all-rdmactl-v.err"
check "all devices: every ibv_devinfo -v field equals rdmactl's JSON" \
    python3 "$PARITY" "$RESULTS/all-ibv_devinfo-v.txt" "$RESULTS/all-rdmactl-v.json"
json_has "JSON merges sysfs: rxe0's port netdev, and GID 1's netdev" "$RESULTS/all-rdmactl-v.json" \
    device=rxe0 port=1 netdev=veth0 netdev_mtu=1500 index=1 'gid=0000:0000:0000:0000:0000:ffff:c0a8:4d01'
json_has "JSON says verbs are available for rxe1" "$RESULTS/all-rdmactl-v.json" \
    device=rxe1 available=true uverbs='uverbs[0-9]+'

expect_rc 3 "devices -v -d on an unknown device exits 3 (not found)" \
    "$RDMACTL" devices -v -d nosuchdev0
expect_out "devices -v -d on an unknown device lists the devices there are" \
    "no device 'nosuchdev0'; devices: rxe0, rxe1" \
    "$RDMACTL" devices -v -d nosuchdev0
