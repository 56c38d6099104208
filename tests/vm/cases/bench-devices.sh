# Wall time of `rdmactl devices` against `ibv_devinfo -l`, side by side in one VM run
# (issue 3: at most 1.2x), and of `devices -v -d rxe0` against `ibv_devinfo -v -d rxe0`.
# Results: $RESULTS/devices.{md,json} and devinfo-v.{md,json}.

HF=/usr/bin/hyperfine
check "hyperfine is installed" test -x "$HF"

"$HF" --style basic --shell=none --warmup 5 --runs 40 --export-markdown "$RESULTS/devices.md" \
    --export-json "$RESULTS/devices.json" \
    -n "ibv_devinfo -l" "ibv_devinfo -l" -n "rdmactl devices" "$RDMACTL devices" \
    > "$RESULTS/devices.txt" 2>&1
cat "$RESULTS/devices.txt"

"$HF" --style basic --shell=none --warmup 3 --runs 20 --export-markdown "$RESULTS/devinfo-v.md" \
    --export-json "$RESULTS/devinfo-v.json" \
    -n "ibv_devinfo -v -d rxe0" "ibv_devinfo -v -d rxe0" \
    -n "rdmactl devices -v -d rxe0" "$RDMACTL devices -v -d rxe0" \
    > "$RESULTS/devinfo-v.txt" 2>&1
cat "$RESULTS/devinfo-v.txt"

ratio() { # ratio JSON: mean of the second command over the first
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print("%.3f" % (r[1]["mean"]/r[0]["mean"]))' "$1"
}
r=$(ratio "$RESULTS/devices.json" 2>/dev/null || echo inf)
echo "rdmactl devices / ibv_devinfo -l = $r"
check "rdmactl devices takes at most 1.2x ibv_devinfo -l (measured $r)" \
    python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 1.2 else 1)' "$r"
r=$(ratio "$RESULTS/devinfo-v.json" 2>/dev/null || echo inf)
echo "rdmactl devices -v / ibv_devinfo -v = $r"
