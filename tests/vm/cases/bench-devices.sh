# Wall time of `rdmactl devices` against `ibv_devinfo -l`, side by side in one VM run
# (issue 3: at most 1.2x), and of `devices -v -d rxe0` against `ibv_devinfo -v -d rxe0`.
# Results: $RESULTS/devices.{md,json} and devinfo-v.{md,json}; startup.{md,json} splits
# rdmactl's start-up: rdma-mummy-sys dlopens libibverbs (with libnl) and librdmacm from
# constructors before main, for every command, so `gid decode` (no sysfs, no verbs) is timed
# with those libraries loadable and with libibverbs.so.1 hidden (both dlopens then fail).
# vm-timeout: 420

HF=/usr/bin/hyperfine
check "hyperfine is installed" test -x "$HF"

# guest.sh runs rdmactl from the guest's tmpfs (the share has no page cache, which cost
# 0.44 s per exec), as an installed binary on a local disk would be.
check "rdmactl runs from tmpfs" test "${RDMACTL#/tmp/}" != "$RDMACTL"

"$HF" --style basic --shell=none --warmup 3 --runs 20 --export-markdown "$RESULTS/devices.md" \
    --export-json "$RESULTS/devices.json" \
    -n "ibv_devinfo -l" "ibv_devinfo -l" -n "rdmactl devices" "$RDMACTL devices" \
    -n "rdmactl -j devices (reads whole GID tables)" "$RDMACTL -j devices" \
    > "$RESULTS/devices.txt" 2>&1
cat "$RESULTS/devices.txt"

"$HF" --style basic --shell=none --warmup 1 --runs 6 --export-markdown "$RESULTS/devinfo-v.md" \
    --export-json "$RESULTS/devinfo-v.json" \
    -n "ibv_devinfo -v -d rxe0" "ibv_devinfo -v -d rxe0" \
    -n "rdmactl devices -v -d rxe0" "$RDMACTL devices -v -d rxe0" \
    > "$RESULTS/devinfo-v.txt" 2>&1
cat "$RESULTS/devinfo-v.txt"

lib=$(readlink -f "$(ldconfig -p | awk '$1 == "libibverbs.so.1" { print $NF; exit }')")
unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$lib" \
    "$HF" --style basic --shell=none --warmup 3 --runs 15 --export-markdown "$RESULTS/startup.md" \
    --export-json "$RESULTS/startup.json" \
    -n "rdmactl gid decode ::1 (libibverbs hidden)" "$RDMACTL gid decode ::1" \
    -n "rdmactl devices (libibverbs hidden)" "$RDMACTL devices" \
    > "$RESULTS/startup-hidden.txt" 2>&1
"$HF" --style basic --shell=none --warmup 3 --runs 15 --export-json "$RESULTS/startup-live.json" \
    -n "rdmactl gid decode ::1" "$RDMACTL gid decode ::1" \
    > "$RESULTS/startup-live.txt" 2>&1
cat "$RESULTS/startup-hidden.txt" "$RESULTS/startup-live.txt"

# Under TCG on a shared 2-core host, run-to-run noise is as large as the mean (measured
# sigma ~ mean), so the check uses the fastest run of each command, the least disturbed
# estimate of its own cost; mean and median ratios are printed beside it.
ratios() { # ratios JSON: "min median mean" of the second command over the first
    python3 - "$1" <<'PY'
import json, statistics, sys
a, b = json.load(open(sys.argv[1]))["results"][:2]
print("%.3f %.3f %.3f" % (min(b["times"]) / min(a["times"]),
      statistics.median(b["times"]) / statistics.median(a["times"]), b["mean"] / a["mean"]))
PY
}
read -r rmin rmed rmean <<< "$(ratios "$RESULTS/devices.json" 2>/dev/null || echo "inf inf inf")"
echo "rdmactl devices / ibv_devinfo -l: min $rmin, median $rmed, mean $rmean"
check "rdmactl devices takes at most 1.2x ibv_devinfo -l (fastest runs: $rmin; median $rmed)" \
    python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 1.2 else 1)' "$rmin"
read -r rmin rmed rmean <<< "$(ratios "$RESULTS/devinfo-v.json" 2>/dev/null || echo "inf inf inf")"
echo "rdmactl devices -v / ibv_devinfo -v: min $rmin, median $rmed, mean $rmean"
