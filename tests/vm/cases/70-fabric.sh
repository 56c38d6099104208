# shellcheck shell=bash
# vm-timeout: 1200
# rdmactl fabric on four "hosts": rxe devices fab0..fab3 on veths e0..e3, their peers on one
# Linux bridge (10.77.0.10-13/24; arp_ignore=1 and arp_announce=2, without which the
# bridge's ARP flux breaks them). Launched by mpirun, pdsh -R exec and srun (a one-node
# Slurm started here); then planted faults, each found and named: a lower netdev MTU
# (drift, and the smaller path MTU it forces), netem delay (the slow endpoint), netem loss
# (the lossy endpoint, from its counters), a rank killed mid-run, and ARP flux.

N=4
BASE_IP=10.77.0
# A fabric run is several pair tests of two process starts each: minutes under TCG.
CHECK_TIMEOUT=300
# Open MPI needs a host name it can parse; the guest boots with none.
[[ $(hostname) == "(none)" || -z $(hostname) ]] && hostname vm
fabric_endpoints

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Short pair tests keep TCG runs to seconds; the devices are named, one per local rank.
# Under TCG every endpoint shares two emulated CPUs: pairs run one at a time, and the
# thresholds allow for what a busy emulator does to a clean pair (a stalled vCPU misses
# rxe's ACK timer now and then: a few retransmissions per thousand, bandwidth that varies
# by 2x). The planted faults below are far outside them.
DEVS=(-d fab0 -d fab1 -d fab2 -d fab3)
TEST=(--deadline 40 --parallel 1 --latency-factor 3 --bandwidth-fraction 0.25 --resend-limit 60)
rv_port=18600
next_rv() { rv_port=$((rv_port + 1)); }
mpi() { # mpi NAME fabric-args...: 4 ranks under mpirun, rank 0's report in $RESULTS/NAME.out
    local name=$1
    shift
    next_rv
    mpirun --oversubscribe -np $N --bind-to none \
        "$RDMACTL" fabric "${DEVS[@]}" "${TEST[@]}" -n 200 --rendezvous "127.0.0.1:$rv_port" "$@"
}

# --- a clean fabric under mpirun: exit 0, no suspects, every pair ok
expect_rc 0 "mpirun clean: exit 0" mpi clean
cp "$LAST_OUT" "$RESULTS/clean.txt"
expect_out "mpirun clean: Open MPI placed the ranks" '^fabric: 4 of 4 ranks joined \(Open MPI\), pattern all: 3 round\(s\), 6 pair\(s\)' cat "$RESULTS/clean.txt"
expect_out "mpirun clean: the verdict is clean" '^verdict: clean: 6 pairs of 4 endpoints good' cat "$RESULTS/clean.txt"
expect_no_out "mpirun clean: no suspects" '^suspects:' cat "$RESULTS/clean.txt"
next_rv
expect_rc 0 "mpirun clean -j: exit 0" mpirun --oversubscribe -np $N --bind-to none \
    "$RDMACTL" -j fabric "${DEVS[@]}" "${TEST[@]}" -n 200 --rendezvous "127.0.0.1:$rv_port" --csv "$RESULTS/clean.csv" --svg "$RESULTS/clean.svg"
cp "$LAST_STDOUT" "$RESULTS/clean.json"
check "-j: 4 ranks on fab0..fab3, 6 ok pairs with figures, no suspects, no drift" \
    jqf '(.ranks | map(.device) == ["fab0","fab1","fab2","fab3"]) and (.pairs | length == 6)
         and all(.pairs[]; .ok and .usec_per_iter > 0 and .mbit_per_sec > 0 and .path_mtu == 1024)
         and (.suspects == []) and (.drift == []) and .ok' "$RESULTS/clean.json"
check "--csv: a header and 6 pairs" bash -c '[ "$(wc -l <"$1")" -eq 7 ]' _ "$RESULTS/clean.csv"
check "--svg: 16 cells" bash -c '[ "$(grep -c "<rect" "$1")" -eq 16 ]' _ "$RESULTS/clean.svg"

# --- pdsh -R exec: --rank %n, no launcher environment
pdsh_run() { # pdsh_run fabric-args...
    next_rv
    PDSH_RCMD_TYPE=exec pdsh -S -R exec -w "n[0-3]" \
        "$RDMACTL" fabric "${DEVS[@]}" "${TEST[@]}" -n 200 --rank %n --size $N --local-rank %n \
        --rendezvous "127.0.0.1:$rv_port" --token pdsh-test "$@"
}
expect_rc 0 "pdsh clean: exit 0" pdsh_run
expect_out "pdsh clean: ranks from --rank %n" '^n0: fabric: 4 of 4 ranks joined \(--rank/--size\)' cat "$LAST_OUT"
expect_out "pdsh clean: clean verdict" '^n0: verdict: clean' cat "$LAST_OUT"

# --- srun from a one-node Slurm (slurmctld + slurmd + munged started here)
if ! command -v srun >/dev/null || ! command -v munged >/dev/null; then
    skip_here "srun: slurm-wlm or munge is not installed"
elif start_slurm; then
    check "slurm: the one node is up" sinfo
    # The default rendezvous is the first host of the job's node list (localhost), port 18514.
    expect_rc 0 "srun clean: exit 0" srun -n $N --overcommit "$RDMACTL" fabric "${DEVS[@]}" "${TEST[@]}" -n 200
    expect_out "srun: Slurm placed the ranks" '^fabric: 4 of 4 ranks joined \(Slurm\)' cat "$LAST_OUT"
    expect_out "srun: clean verdict" '^verdict: clean' cat "$LAST_OUT"
else
    cp /tmp/slurm/*.log "$RESULTS/" 2>/dev/null
    check "slurm started (slurmctld, slurmd, munged: see their logs in the results)" false
fi

# --- drift: e2's MTU 1000 gives fab2 a RoCE MTU of 512; every pair with it runs at 512
ip link set e2 mtu 1000
for _ in $(seq 1 20); do [[ $(cat /sys/class/net/e2/mtu) == 1000 ]] && break; sleep 0.2; done
next_rv
expect_rc 1 "drift: exit 1" mpirun --oversubscribe -np $N --bind-to none \
    "$RDMACTL" -j fabric "${DEVS[@]}" "${TEST[@]}" -n 200 --rendezvous "127.0.0.1:$rv_port"
cp "$LAST_STDOUT" "$RESULTS/drift.json"
check "drift: netdev_mtu 1000 on fab2 against a majority of 1500" \
    jqf 'any(.drift[]; .attribute == "netdev_mtu" and .majority == "1500" and any(.values[]; .value == "1000" and .ranks == [2]))' "$RESULTS/drift.json"
check "drift: roce_mtu 512 on fab2" \
    jqf 'any(.drift[]; .attribute == "roce_mtu" and any(.values[]; .value == "512" and .ranks == [2]))' "$RESULTS/drift.json"
check "drift's effect: the pairs with fab2 ran at path MTU 512, the others at 1024" \
    jqf 'all(.pairs[]; if (.a == 2 or .b == 2) then .path_mtu == 512 else .path_mtu == 1024 end)' "$RESULTS/drift.json"
ip link set e2 mtu 1500

# --- delay: netem on e3 makes fab3 the slow endpoint (a delay this long also makes rxe
# resend: then the counters call it lossy, and that is the explanation given)
tc qdisc add dev e3 root netem delay 10ms
next_rv
expect_rc 1 "delay: exit 1" mpirun --oversubscribe -np $N --bind-to none \
    "$RDMACTL" -j fabric "${DEVS[@]}" "${TEST[@]}" -n 200 --rendezvous "127.0.0.1:$rv_port"
cp "$LAST_STDOUT" "$RESULTS/delay.json"
check "delay: fab3 is the one endpoint blamed, bad with all 3 partners" \
    jqf '[.suspects[] | select(.kind == "endpoint") | .rank] == [3]
         and any(.suspects[]; .rank == 3 and (.code | test("^fabric-endpoint-(slow|lossy)$")) and (.reason | test("with 3 of 3 partners")))' "$RESULTS/delay.json"
check "delay: where to look names e3's qdisc" \
    jqf 'any(.suspects[]; .rank == 3 and (.explanation.fix | test("tc qdisc show dev e3")))' "$RESULTS/delay.json"
check "delay: the baseline says how it was found" \
    jqf '.baseline.how | test("^the median over 4 endpoints")' "$RESULTS/delay.json"
tc qdisc del dev e3 root

# --- loss: netem on e1 makes fab1 lossy, from its counters. 5% loss gives fab1's pairs
# 38 to 60 resent per thousand (go-back-N), too close to the other runs' limit of 60 to
# decide the same way every time; the clean pairs resend at most 1 per thousand, so a limit
# of 20 tells them apart with room on both sides.
tc qdisc add dev e1 root netem loss 5%
next_rv
LOSS_TEST=("${TEST[@]}")
LOSS_TEST[-1]=20
expect_rc 1 "loss: exit 1" mpirun --oversubscribe -np $N --bind-to none \
    "$RDMACTL" -j fabric "${DEVS[@]}" "${LOSS_TEST[@]}" -n 200 --rendezvous "127.0.0.1:$rv_port"
cp "$LAST_STDOUT" "$RESULTS/loss.json"
check "loss: fab1 is the lossy endpoint" \
    jqf 'any(.suspects[]; .code == "fabric-endpoint-lossy" and .rank == 1 and .device == "fab1")' "$RESULTS/loss.json"
check "loss: its explanation is the counters', with the direction (from fab1)" \
    jqf 'any(.suspects[]; .rank == 1 and (.explanation.summary | test("packets from fab1 to fab[023] are being lost")))
         and all(.suspects[]; (.explanation.summary // "") | test("packets from fab[023] to fab1") | not)' "$RESULTS/loss.json"
check "loss: no other endpoint is blamed" \
    jqf '[.suspects[] | select(.kind == "endpoint") | .rank] == [1]' "$RESULTS/loss.json"
tc qdisc del dev e1 root

# --- a rank killed mid-run: named, and the others finish
next_rv
pids=()
for r in 0 1 2 3; do
    "$RDMACTL" fabric "${DEVS[@]}" "${TEST[@]}" -n 2000 --rank $r --size $N --local-rank $r \
        --rendezvous "127.0.0.1:$rv_port" >"$RESULTS/kill-$r.out" 2>&1 &
    pids+=($!)
done
# Kill rank 2 once the pair tests run (its first pingpong child exists).
for _ in $(seq 1 100); do pgrep -P "${pids[2]}" >/dev/null && break; sleep 0.2; done
kill -9 "${pids[2]}"
wait_pid_timeout "${pids[0]}" 240 2>/dev/null
rc0=$?
check "killed rank: rank 0 finishes with exit 1 (got $rc0)" test "$rc0" = 1
expect_out "killed rank: named as having left" 'fabric-rank-left .*rank 2' cat "$RESULTS/kill-0.out"
expect_out "killed rank: pairs without it still ran (0-1 and 0-3 or 1-3 ok)" '^verdict: .*suspect' cat "$RESULTS/kill-0.out"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
wait 2>/dev/null

# --- ARP flux: arp_ignore 0 on the bridge's ports
for i in all e0 e1 e2 e3; do sysctl -qw "net.ipv4.conf.$i.arp_ignore=0" "net.ipv4.conf.$i.arp_announce=0"; done
ip neigh flush all
expect_out "arp flux: doctor warns, naming the subnet" '^warn +arp-flux +host +.*share 10\.77\.0\.0/24 and answer ARP' "$RDMACTL" doctor
expect_out "arp flux: doctor's fix" 'fix: sysctl -w net.ipv4.conf.all.arp_ignore=1' "$RDMACTL" doctor
expect_out "arp flux: check warns too" 'warn +arp-flux' "$RDMACTL" check -d fab0 -g 1 --peer "$BASE_IP.13"
next_rv
expect_rc 1 "arp flux: fabric exits 1" mpirun --oversubscribe -np $N --bind-to none \
    "$RDMACTL" -j fabric "${DEVS[@]}" "${TEST[@]}" -n 50 --rendezvous "127.0.0.1:$rv_port"
cp "$LAST_STDOUT" "$RESULTS/flux.json"
check "arp flux: in the drift report, naming e0..e3" \
    jqf 'any(.drift[]; .attribute == "arp_flux" and (.values[0].value | test("e0, e1, e2, e3 on 10\\.77\\.0\\.0/24")))' "$RESULTS/flux.json"
# Which MAC answers first is up to the kernel: pairs may fail or get lucky. Whatever failed
# is explained by the flux.
check "arp flux: every failed pair's own explanation is retry-exceeded-arp-flux" \
    jqf 'all(.pairs[] | select(.state == "failed"); .failure.explanation.code == "retry-exceeded-arp-flux")' "$RESULTS/flux.json"
check "arp flux: each suspect's fix starts with the sysctls" \
    jqf 'all(.suspects[] | select(.kind == "endpoint" or .kind == "link"); .explanation.fix | startswith("on each of those netdevs (and all): sysctl -w"))' "$RESULTS/flux.json"
for i in all e0 e1 e2 e3; do sysctl -qw "net.ipv4.conf.$i.arp_ignore=1" "net.ipv4.conf.$i.arp_announce=2"; done

# --- usage errors name what exists
expect_rc 2 "no launcher, no --rank: a usage error" "$RDMACTL" fabric
expect_out "no launcher: says how to launch" 'srun or mpirun, or give --rank N --size N' cat "$LAST_OUT"
expect_rc 2 "--rank without a rendezvous: a usage error" "$RDMACTL" fabric --rank 1 --size 2
expect_out "no rendezvous: names the options" 'give --rendezvous HOST:PORT' cat "$LAST_OUT"

for i in all e0 e1 e2 e3; do sysctl -qw "net.ipv4.conf.$i.arp_ignore=0" "net.ipv4.conf.$i.arp_announce=0" 2>/dev/null; done
[[ -n ${SLURM_CONF:-} ]] && { pkill slurmd; pkill slurmctld; pkill munged; }
restore_net
