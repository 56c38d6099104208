#!/usr/bin/env bash
# rank 0 of `rdmactl fabric --simulate --pattern all` with N-1 simulated ranks (threads of a
# second process) on 127.0.0.1: rank 0's wall time and peak RSS (GNU time), and the CSV's
# line count (every pair once). The simulated pair tests answer at once: this is the
# control plane's cost alone.
# Usage: scripts/bench-fabric.sh [N...]   (default: 256 1024 4096)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${RDMACTL_BIN:-target/release/rdmactl}
[[ -x $bin ]] || cargo build --release --locked
dir=$(mktemp -d /tmp/fabric-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
unset SLURM_PROCID OMPI_COMM_WORLD_RANK PMIX_RANK PMI_RANK
for n in "${@:-256 1024 4096}"; do
    for n in $n; do
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        common=(fabric --simulate --size "$n" --token bench --rendezvous "127.0.0.1:$port" --join-timeout 300)
        "$bin" "${common[@]}" --rank 1 --simulate-ranks $((n - 1)) >/dev/null 2>"$dir/others.err" &
        others=$!
        /usr/bin/time -f '%e %M' "$bin" "${common[@]}" --rank 0 --csv "$dir/pairs.csv" \
            >"$dir/out" 2>"$dir/time" || { cat "$dir/out" "$dir/time"; exit 1; }
        wait "$others" || { echo "the simulated ranks failed:"; tail "$dir/others.err"; exit 1; }
        read -r wall rss < <(tail -n 1 "$dir/time")
        pairs=$(($(wc -l <"$dir/pairs.csv") - 1))
        echo "N=$n: $pairs pairs, rank 0 ${wall} s, max RSS $((rss / 1024)) MiB; $(head -n 1 "$dir/out" | cut -d';' -f1)"
        grep '^verdict' "$dir/out"
        rm -f "$dir/pairs.csv"
    done
done
