#!/bin/bash
# Guest side of `tests/vm/run --capture`: copies the sysfs of the default Soft-RoCE state
# (rxe0 on veth0, rxe1 on veth1, see guest.sh) into OUTDIR/rxe-vm-basic, with what the
# reference tools printed at the same moment beside it. The host then moves the tree to
# tests/fixtures/sysfs/rxe-vm-basic. OUTDIR should be on tmpfs: thousands of 9p creates are slow.
#
# Layout, relative to the tree (a sysfs root for `rdmactl --sysfs`):
#   class/infiniband/<dev>/{node_type,node_guid,...}, ports/<n>/{state,...,gids,gid_attrs,pkeys}
#   class/infiniband/<dev>/.link-target  readlink of /sys/class/infiniband/<dev>
#   class/infiniband/<dev>/.driver       name of the bound driver, where there is one
#   class/infiniband_verbs/<uverbsN>/{ibdev,abi_version,dev}
#   class/net/<ifname>/{operstate,mtu,address,ifindex,type,flags,carrier}
# A file the kernel refuses to read (gid_attrs of an empty GID slot: EINVAL) is left out.
# Each GID table has 1024 slots: under TCG a fork per slot takes minutes, so the loops use
# bash builtins only.
set -u
out=${1:?usage: capture.sh OUTDIR}/rxe-vm-basic
rm -rf "$out"
mkdir -p "$out/class/infiniband" "$out/class/infiniband_verbs" "$out/class/net"

copy_attrs() { # copy_attrs SRC_DIR DEST_DIR NAME...: each readable single-line attribute
    local src=$1 dest=$2 name value
    shift 2
    for name in "$@"; do
        if read -r value 2>/dev/null <"$src/$name"; then
            printf '%s\n' "$value" >"$dest/$name"
        fi
    done
}

copy_slots() { # copy_slots SRC_DIR DEST_DIR: numbered entries (gids, gid_attrs/*, pkeys)
    local src=$1 dest=$2 entry value
    mkdir -p "$dest"
    for entry in "$src"/*; do
        if read -r value 2>/dev/null <"$entry"; then
            printf '%s\n' "$value" >"$dest/${entry##*/}"
        fi
    done
}

for dev_dir in /sys/class/infiniband/*; do
    dev=${dev_dir##*/}
    dest=$out/class/infiniband/$dev
    mkdir -p "$dest"
    copy_attrs "$dev_dir" "$dest" node_type node_guid sys_image_guid fw_ver node_desc hca_type board_id hw_rev
    readlink "$dev_dir" >"$dest/.link-target"
    if [[ -e $dev_dir/device/driver ]]; then
        driver=$(readlink "$dev_dir/device/driver")
        printf '%s\n' "${driver##*/}" >"$dest/.driver"
    fi
    for port_dir in "$dev_dir"/ports/*; do
        port=$dest/ports/${port_dir##*/}
        mkdir -p "$port"
        copy_attrs "$port_dir" "$port" state phys_state rate lid sm_lid lid_mask_count sm_sl cap_mask link_layer
        copy_slots "$port_dir/gids" "$port/gids"
        copy_slots "$port_dir/gid_attrs/types" "$port/gid_attrs/types"
        copy_slots "$port_dir/gid_attrs/ndevs" "$port/gid_attrs/ndevs"
        copy_slots "$port_dir/pkeys" "$port/pkeys"
    done
done

copy_attrs /sys/class/infiniband_verbs "$out/class/infiniband_verbs" abi_version
for verbs_dir in /sys/class/infiniband_verbs/uverbs*; do
    dest=$out/class/infiniband_verbs/${verbs_dir##*/}
    mkdir -p "$dest"
    copy_attrs "$verbs_dir" "$dest" ibdev abi_version dev
done

for net_dir in /sys/class/net/*; do
    dest=$out/class/net/${net_dir##*/}
    mkdir -p "$dest"
    copy_attrs "$net_dir" "$dest" operstate mtu address ifindex type flags carrier
done

# Ground truth from the reference tools, taken at the same moment.
ibv_devinfo -v >"$out/ibv_devinfo-v.txt" 2>&1
ibv_devices >"$out/ibv_devices.txt" 2>&1
rdma link show >"$out/rdma-link.txt" 2>&1
rdma -j link show >"$out/rdma-link.json" 2>&1
ip -d addr show >"$out/ip-addr.txt" 2>&1
ip route show >"$out/ip-route.txt" 2>&1
ip -6 route show >"$out/ip6-route.txt" 2>&1
ls -l /dev/infiniband >"$out/dev-infiniband.txt" 2>&1
{
    echo "Captured by tests/vm/capture.sh (tests/vm/run --capture) in the Soft-RoCE VM."
    echo "kernel: $(uname -r)"
    echo "state: rxe0 on veth0 192.168.77.1/24, rxe1 on veth1 192.168.77.2/24, both ACTIVE"
} >"$out/CAPTURED.txt"

gids=$(grep -lv '^0000:0000:0000:0000:0000:0000:0000:0000$' "$out"/class/infiniband/*/ports/*/gids/* | wc -l)
echo "capture: $(find "$out" -type f | wc -l) files, $gids non-empty GID entries in $out"
[[ -s $out/class/infiniband/rxe0/ports/1/gids/1 && -s $out/ibv_devinfo-v.txt ]]
