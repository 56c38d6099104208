# shellcheck shell=bash
# vm-timeout: 400
# rdmactl fabric with its ranks in two kernels: rank 0 in guest A, rank 1 in guest B, joined
# with --rank/--size (as pdsh launches them) and a rendezvous on A's address on the virtual
# link. The one pair test crosses the link; it must pass, with figures. The thresholds are
# loose: under TCG a SEND round trip over this link takes tens of ms and rxe resends after
# ACK timeouts (completer_retry_err climbs), which is the emulator, not a fault.

rv_port=18780
CHECK_TIMEOUT=300
TEST=(--size 2 --token two-vm --deadline 120 --timeout 20 -n 20 --parallel 1
    --expect-usec 1000000 --expect-mbit 0.001 --latency-factor 100 --bandwidth-fraction 0.001
    --resend-limit 1000000 --rendezvous "$TWO_V4:$rv_port")

bg_start fabric-rank0 "$RDMACTL" -j fabric -d "$TWO_DEV" --rank 0 "${TEST[@]}"
rank0=$BG_PID
bg_b fabric-rank1 "$RDMACTL" fabric -d "$TWO_PEER_DEV" --rank 1 "${TEST[@]}"
wait_pid_timeout "$rank0" 280
rc=$?
check "rank 0 (A) exits 0 (got $rc)" test "$rc" -eq 0
expect_rc 0 "rank 1 (B) exits 0" wait_b fabric-rank1 60
check "rank 0's report is JSON: 2 ranks, rxa on vm-a and rxb on vm-b, one pair, ok with figures, no suspects" \
    jqf '(.ranks | map(.device) == ["rxa","rxb"]) and (.ranks | map(.host) == ["vm-a","vm-b"]) and (.pairs | length == 1)
         and all(.pairs[]; .ok and .usec_per_iter > 0 and .mbit_per_sec > 0)
         and (.suspects == []) and .ok' "$RESULTS/fabric-rank0.out"
expect_no_out "no rank panicked" 'panicked' cat "$RESULTS/fabric-rank0.err" "$B_RESULTS/fabric-rank1.out" "$B_RESULTS/fabric-rank1.err"
