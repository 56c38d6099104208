# With libibverbs.so.1 hidden (bind-mount /dev/null over it in a private mount namespace),
# rdmactl still starts (never 127, which is what a binary linked against it gets from the
# loader) and devices -v says what is missing and why.

lib=$(ldconfig -p | awk '$1 == "libibverbs.so.1" { print $NF; exit }')
lib=$(readlink -f "$lib")
check "libibverbs.so.1 resolves to a file ($lib)" test -f "$lib"

hidden() { unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$lib" "$@"; }

check "the bind mount hides it (ibv_devinfo fails to load)" \
    sh -c '! unshare -m sh -c "mount --bind /dev/null \"$1\" && exec ibv_devinfo -l" sh "$0" >/dev/null 2>&1' "$lib"
expect_rc 4 "devices -v exits 4 (no RDMA stack), not 127" hidden "$RDMACTL" devices -v
expect_out "devices -v names libibverbs and the loader's reason" \
    "libibverbs.so.1 cannot be loaded \(.*(too short|invalid ELF|cannot open)" \
    hidden "$RDMACTL" devices -v
expect_out "devices -v says which fields are missing without verbs" \
    "Without verbs these fields are unavailable: max_\* limits" hidden "$RDMACTL" devices -v
expect_out "devices -v points at the sysfs devices that are still there" \
    "sysfs still lists rxe0, rxe1" hidden "$RDMACTL" devices -v
expect_rc 4 "devices -v -d rxe0 exits 4 too" hidden "$RDMACTL" devices -v -d rxe0

# Provider libraries hidden: libibverbs loads but lists no devices while sysfs has them.
provdir=$(dirname "$lib")/libibverbs
check "the provider directory exists ($provdir)" test -d "$provdir"
noprov() { unshare -m sh -c 'mount -t tmpfs none "$1" && shift && exec "$@"' sh "$provdir" "$@"; }
expect_rc 4 "providers hidden: devices -v exits 4" noprov "$RDMACTL" devices -v
expect_out "providers hidden: devices -v names the provider package" \
    "sysfs lists rxe0, rxe1, so libibverbs has no provider for them: install the provider package \(Debian/Ubuntu: ibverbs-providers" \
    noprov "$RDMACTL" devices -v
expect_rc 4 "providers hidden: devices -v -d rxe0 exits 4" noprov "$RDMACTL" devices -v -d rxe0
expect_out "providers hidden: devices -v -d rxe0 says rxe0 is in sysfs but not in verbs" \
    "rxe0 is in /sys/class/infiniband but libibverbs does not list it" \
    noprov "$RDMACTL" devices -v -d rxe0
