# shellcheck shell=bash
# vm-timeout: 300
# Health checks on the live rxe host: doctor --save-expect/--expect, --format nagios, nhc and
# junit, rdmactl wait, and contrib/slurm/rdmactl-healthcheck as slurmd's HealthCheckProgram
# under a real one-node Slurm: a planted fault (veth0 down takes rxe0/1, and with its veth
# peer rxe1/1, out of ACTIVE) drains the node with rdmactl's reason, the repair resumes it,
# and a node an admin drained stays drained with the admin's reason.

HC=$SHARE/contrib/slurm/rdmactl-healthcheck
NODE=localhost

# active PORT-DIR yes|no [SECS]: waits until the port's state is (or is not) ACTIVE.
active() {
    local i state
    for ((i = 0; i < ${3:-10} * 5; i++)); do
        read -r state <"/sys/class/infiniband/$1/state"
        if [[ $2 == yes && $state == *ACTIVE ]] || [[ $2 == no && $state != *ACTIVE ]]; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# node_is REGEX [SECS]: waits until `scontrol -o show node` matches (slurmd runs the health
# check every HealthCheckInterval).
node_is() {
    local i
    for ((i = 0; i < ${2:-40}; i++)); do
        [[ $(scontrol -o show node $NODE) =~ $1 ]] && return 0
        sleep 1
    done
    scontrol -o show node $NODE
    return 1
}

xml_ok() { python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$1"; }

# Fresh rxe devices: the suite's earlier cases leave error counters (resends, RNR) that
# doctor rightly warns about; a host that is healthy here starts from zero counters.
rdma link delete rxe0 && rdma link delete rxe1
check "fresh rxe0 and rxe1" restore_net
check "rxe0/1 ACTIVE again" active rxe0/ports/1 yes 20
check "rxe1/1 ACTIVE again" active rxe1/ports/1 yes 20

# --- the manifest: saved on this host it passes; edited to want 400 Gb/s it fails
expect_rc 0 "--save-expect on the live host: exit 0" "$RDMACTL" doctor --save-expect "$RESULTS/expect.toml"
expect_out "the saved manifest has rxe0's IPv4 GID at index 1 and its active MTU from verbs" \
    '^active_mtu = 1024$' cat "$RESULTS/expect.toml"
expect_out "--expect with the saved manifest: every expectation ok" '^[0-9]+ ok, ([0-9]+ info, )?[0-9]+ warning\(s\), 0 failure\(s\)' \
    "$RDMACTL" doctor --expect "$RESULTS/expect.toml"
expect_no_out "--expect with the saved manifest: no expect- failure" '^FAIL' cat "$LAST_OUT"
expect_out "--expect: the active MTU is judged (verbs answer on a live host)" '^ok +expect-mtu +rxe0/1 +active MTU 1024, as expected' cat "$LAST_OUT"
sed 's/^min_rate_gbps = .*/min_rate_gbps = 400/' "$RESULTS/expect.toml" >"$RESULTS/edited.toml"
expect_rc 1 "--expect wanting 400 Gb/s: exit 1" "$RDMACTL" doctor --expect "$RESULTS/edited.toml"
expect_out "--expect wanting 400 Gb/s: expect-port-rate with expected and found" \
    '^FAIL +expect-port-rate +rxe0/1 +rate 10 Gb/sec \(1X FDR10\), expected at least 400 Gb/s' cat "$LAST_OUT"
expect_out "--expect --format nhc: the drain reason names the code" '^rdmactl: rxe0/1 expect-port-rate \(\+1 more\)$' \
    "$RDMACTL" doctor --expect "$RESULTS/edited.toml" --format nhc

# --- the formats on a healthy host
expect_rc 0 "nagios, healthy: exit 0" "$RDMACTL" doctor --format nagios
expect_out "nagios, healthy: OK with the ports as perfdata" '^RDMACTL OK - 2 of 2 port\(s\) ACTIVE, .* \| ports_active=2;;;0;2 ports=2;;;0 failures=0' cat "$LAST_OUT"
expect_rc 0 "nhc, healthy: exit 0" "$RDMACTL" doctor --format nhc
check "nhc, healthy: prints nothing" test ! -s "$LAST_STDOUT"
expect_rc 0 "junit, healthy: exit 0" "$RDMACTL" doctor --format junit
cp "$LAST_STDOUT" "$RESULTS/healthy.xml"
check "junit, healthy: well-formed XML with no failure" xml_ok "$RESULTS/healthy.xml"
expect_no_out "junit, healthy: no <failure>" '<failure' cat "$RESULTS/healthy.xml"
expect_rc 0 "wait, healthy: exit 0 at once" "$RDMACTL" wait --timeout 5
expect_out "wait, healthy: names the ports" '^2 port\(s\) ACTIVE after 0\.[0-9] s: rxe0/1, rxe1/1' cat "$LAST_OUT"

# --- Slurm: slurmd runs the script as its HealthCheckProgram every 5 s
cat >/tmp/rdmactl-hc <<EOF2
#!/bin/bash
export RDMACTL=$RDMACTL RDMACTL_NODE=$NODE RDMACTL_EXPECT=/nonexistent SLURM_CONF=/tmp/slurm/slurm.conf
exec $HC >>$RESULTS/healthcheck.log 2>&1
EOF2
chmod +x /tmp/rdmactl-hc
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    skip_here "slurm: slurm-wlm or munge is not installed"
    slurm=0
elif start_slurm HealthCheckProgram=/tmp/rdmactl-hc HealthCheckInterval=5 HealthCheckNodeState=ANY; then
    slurm=1
    check "slurm: the node is up and not drained" node_is 'State=IDLE ' 20
else
    slurm=0
    cp /tmp/slurm/*.log "$RESULTS/" 2>/dev/null
    check "slurm started (slurmctld, slurmd, munged: see their logs in the results)" false
fi

# --- the fault: veth0 down
ip link set veth0 down
check "veth0 down: rxe0/1 leaves ACTIVE" active rxe0/ports/1 no
expect_rc 1 "wait rxe0/1 --timeout 1, port down: exit 1" "$RDMACTL" wait rxe0/1 --timeout 1
expect_out "wait, port down: gives up saying why" '^gave up after 1\.[0-9] s: 1 of 1 port\(s\) not ACTIVE' cat "$LAST_OUT"
expect_out "wait, port down: doctor's reason, veth0 named" 'FAIL +port-state +rxe0/1 +rxe0/1 is DOWN: a RoCE port follows its netdev, and veth0 is down' cat "$LAST_OUT"
expect_out "wait, port down: the fix" 'fix: bring the interface up: `ip link set veth0 up`' cat "$LAST_OUT"
expect_rc 1 "wait -j, port down: exit 1" "$RDMACTL" -j wait rxe0/1 --timeout 0.5
json_has "wait -j, port down: the port and its finding" "$LAST_STDOUT" ok=false device=rxe0 port=1 active=false
json_has "wait -j, port down: code port-state" "$LAST_STDOUT" code=port-state device=rxe0 severity=fail
expect_rc 2 "nagios, port down: exit 2 (CRITICAL)" "$RDMACTL" doctor --format nagios
expect_out "nagios, port down: CRITICAL naming the port, perfdata" '^RDMACTL CRITICAL - port-state rxe0/1: rxe0/1 is DOWN.* \| ports_active=[01];;;0;2 ' cat "$LAST_OUT"
expect_rc 1 "nhc, port down: exit 1" "$RDMACTL" doctor --format nhc
expect_out "nhc, port down: one short reason" '^rdmactl: rxe0/1 port-state( \(\+[0-9]+ more\))?$' cat "$LAST_OUT"
check "nhc, port down: one line of at most 60 characters" bash -c '[[ $(wc -l <"$1") == 1 && $(wc -c <"$1") -le 61 ]]' _ "$LAST_STDOUT"
expect_rc 1 "junit, port down: exit 1" "$RDMACTL" doctor --format junit
cp "$LAST_STDOUT" "$RESULTS/down.xml"
check "junit, port down: well-formed XML" xml_ok "$RESULTS/down.xml"
expect_out "junit, port down: the port-state failure with its evidence" '<failure type="port-state" message="rxe0/1 is DOWN: a RoCE port follows its netdev, and veth0 is down">' cat "$RESULTS/down.xml"

# Issue 39 item 1: a manifest saved with the port down expects it DOWN: no failure, no drain.
expect_rc 1 "--save-expect with the port down: exit 1 (the port fails), the manifest written" "$RDMACTL" doctor --save-expect "$RESULTS/down-expect.toml"
expect_out "the saved manifest records rxe0/1 DOWN" '^state = "DOWN"$' cat "$RESULTS/down-expect.toml"
expect_rc 0 "--expect with the port expected DOWN: exit 0" "$RDMACTL" doctor --expect "$RESULTS/down-expect.toml"
expect_out "--expect, port expected DOWN: ok, as expected" '^ok +expect-port-state +rxe0/1 +state DOWN, as expected' cat "$LAST_OUT"
expect_out "--expect, port expected DOWN: doctor's port-state is info, with the manifest as evidence" \
    'the manifest expects state DOWN' cat "$LAST_OUT"
expect_no_out "--expect, port expected DOWN: no FAIL" '^FAIL' cat "$LAST_OUT"
expect_rc 0 "--expect --format nhc, port expected DOWN: exit 0, no drain" "$RDMACTL" doctor --expect "$RESULTS/down-expect.toml" --format nhc
expect_rc 2 "the first manifest (ports ACTIVE), port down: nagios CRITICAL still" "$RDMACTL" doctor --expect "$RESULTS/expect.toml" --format nagios

if ((slurm)); then
    check "slurm, port down: slurmd's health check drained the node" node_is 'State=[A-Z+]*DRAIN'
    expect_out "slurm, port down: Reason is rdmactl's" 'Reason=rdmactl: rxe0/1 port-state( \(\+[0-9]+ more\))? \[' scontrol -o show node $NODE
fi

# --- the repair: veth0 up 2 s after wait starts; wait returns 0 once ACTIVE
(sleep 2; ip link set veth0 up) &
expect_rc 0 "wait, veth0 up after 2 s: exit 0" "$RDMACTL" wait --timeout 30
expect_out "wait, veth0 up after 2 s: it waited (at least 1 s: it started a few tenths after the timer)" '^2 port\(s\) ACTIVE after ([1-9]|[1-2][0-9])\.[0-9] s' cat "$LAST_OUT"
wait
if ((slurm)); then
    check "slurm, repaired: the health check resumed the node" node_is 'State=IDLE '
    expect_no_out "slurm, repaired: no drain left" 'DRAIN' scontrol -o show node $NODE

    # --- an admin's drain is never resumed nor overwritten by the script
    scontrol update nodename=$NODE state=drain reason="maintenance: cable swap"
    ip link set veth0 down
    check "admin drain, port down: rxe0/1 leaves ACTIVE" active rxe0/ports/1 no
    expect_rc 1 "admin drain, port down: the script fails" env RDMACTL="$RDMACTL" RDMACTL_NODE=$NODE RDMACTL_EXPECT=/nonexistent "$HC"
    expect_out "admin drain, port down: the admin's reason stays" 'Reason=maintenance: cable swap \[' scontrol -o show node $NODE
    ip link set veth0 up
    check "admin drain, repaired: rxe0/1 ACTIVE again" active rxe0/ports/1 yes 30
    expect_rc 0 "admin drain, repaired: the script passes" env RDMACTL="$RDMACTL" RDMACTL_NODE=$NODE RDMACTL_EXPECT=/nonexistent "$HC"
    expect_out "admin drain, repaired: still drained for the admin" 'State=[A-Z+]*DRAIN.*Reason=maintenance: cable swap \[' scontrol -o show node $NODE
    scontrol update nodename=$NODE state=resume
    cp /tmp/slurm/*.log "$RESULTS/" 2>/dev/null
    for pid in /tmp/slurm/slurmd.pid /tmp/slurm/slurmctld.pid /tmp/munge/munged.pid; do
        [[ -r $pid ]] && kill "$(cat "$pid")" 2>/dev/null
    done
fi

restore_net
