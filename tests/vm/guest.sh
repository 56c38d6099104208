#!/bin/bash
# Runs inside the VM, in the chroot of the host's read-only root (started by tests/vm/init).
# Builds the default Soft-RoCE state, then does what $SHARE/config asks: run the cases, the
# demo, or the fixture capture. Its exit status becomes the status of tests/vm/run.
set -u
SHARE=${SHARE:-/tmp/share}
VM_SUITE=$SHARE/suite
VM_LIB=$VM_SUITE/lib.sh
# The share is mounted without a page cache, so every exec from it re-reads the whole
# binary over 9p (seconds per run under TCG). Run a copy from the guest's tmpfs instead,
# as an installed binary on local disk would be.
mkdir -p /tmp/rdmactl-bin
cp "$SHARE/bin/rdmactl" /tmp/rdmactl-bin/rdmactl
cp "$SHARE/bin/rdmactl-unit" /tmp/rdmactl-bin/rdmactl-unit
chmod 0755 /tmp/rdmactl-bin /tmp/rdmactl-bin/rdmactl /tmp/rdmactl-bin/rdmactl-unit
RDMACTL=/tmp/rdmactl-bin/rdmactl
MODE=suite
CASES=
CASE_TIMEOUT=120
# shellcheck source=/dev/null
. "$SHARE/config"
export SHARE VM_SUITE VM_LIB RDMACTL

uptime_s() { cut -d' ' -f1 /proc/uptime; }
say() { echo "=== GUEST: $* (uptime $(uptime_s)s)"; }

# ---------------------------------------------------------------- the default state
setup() {
    mkdir -p /run/rdmactl-vm
    modprobe rdma_rxe && modprobe veth || return 1
    # The user-space CM (/dev/infiniband/rdma_cm), which rdma-core's rdma-load-modules
    # loads at boot on a real host; the VM runs no systemd.
    modprobe rdma_ucm || return 1
    ip link set lo up
    # Links that exist before any case: restore_net removes everything else a case adds.
    local links=(/sys/class/net/*)
    printf '%s\n' "${links[@]##*/}" >/run/rdmactl-vm/baseline-links
    # shellcheck source=lib.sh
    RESULTS=/run/rdmactl-vm . "$VM_LIB"
    restore_net
}

say "kernel $(uname -r), $(nproc) cpus, $(free -m | awk '/^Mem:/ {print $2}') MB; setting up rxe0/rxe1"
setup_start=$EPOCHREALTIME
if ! setup; then
    say "SETUP FAILED"
    rdma link show
    ip -br addr
    dmesg | grep -iE 'rxe|rdma|crc32' | tail -20
    exit 2
fi
setup_ms=$(((${EPOCHREALTIME/./} - ${setup_start/./}) / 1000))
say "setup done in ${setup_ms} ms: ${NET_STEPS:-}"
rdma link show
ip -br addr show dev veth0
ip -br addr show dev veth1

# ---------------------------------------------------------------- demo
run_demo() {
    local rdmactl_path=$RDMACTL
    # Demo lines are shell, so they read as a person would type them: `rdmactl devices`.
    rdmactl() { "$rdmactl_path" "$@"; }
    echo
    echo "This VM has no RDMA hardware. It runs Debian's kernel with Soft-RoCE (rdma_rxe):"
    echo "rxe0 sits on veth0 (192.168.77.1) and rxe1 on veth1 (192.168.77.2), the two ends of"
    echo "one virtual Ethernet cable. Everything below is real output of rdmactl on them."
    local line
    while IFS= read -r line; do
        [[ -z $line || $line == \#* ]] && continue
        echo
        echo "\$ $line"
        eval "$line" </dev/null 2>&1
        local rc=$?
        ((rc == 0)) || echo "[exit status $rc]"
    done <"$VM_SUITE/demo-commands"
    echo
    return 0
}

# ---------------------------------------------------------------- cases
# A case passes when it recorded at least one PASS and no FAIL and exited 0 in time; it is
# skipped when it called skip() without any failure; a case that checked nothing fails.
verdict() { # verdict CHECKS_FILE RC -> sets VERDICT, WHY, NPASS, NFAIL
    local file=$1 rc=$2
    NPASS=0 NFAIL=0 WHY=
    local nskip=0 kind rest
    if [[ -f $file ]]; then
        while IFS=$'\t' read -r kind rest; do
            case $kind in
            PASS) NPASS=$((NPASS + 1)) ;;
            FAIL) NFAIL=$((NFAIL + 1)) ;;
            SKIP) nskip=$((nskip + 1)) WHY=$rest ;;
            esac
        done <"$file"
    fi
    if ((rc == 124 || rc == 137)); then
        VERDICT=FAIL WHY="timed out after ${CASE_TIMEOUT_NOW}s"
    elif ((NFAIL)); then
        VERDICT=FAIL WHY="$NFAIL failed checks"
    elif ((rc != 0)); then
        VERDICT=FAIL WHY="case script exited $rc"
    elif ((nskip)); then
        VERDICT=SKIP
    elif ((NPASS == 0)); then
        VERDICT=FAIL WHY="the case checked nothing"
    else
        VERDICT=PASS WHY=
    fi
}

run_cases() {
    local results=$SHARE/results summary=$SHARE/results/summary.tsv
    mkdir -p "$results"
    : >"$summary"
    local passed=0 failed=0 skipped=0 name file
    # shellcheck source=lib.sh
    RESULTS=/run/rdmactl-vm . "$VM_LIB"
    for name in $CASES; do
        file=$VM_SUITE/cases/$name.sh
        export RESULTS=$results/$name
        mkdir -p "$RESULTS"
        CASE_TIMEOUT_NOW=$CASE_TIMEOUT
        local line
        while IFS= read -r line; do
            if [[ $line =~ ^#\ vm-timeout:\ *([0-9]+) ]]; then
                CASE_TIMEOUT_NOW=${BASH_REMATCH[1]}
                break
            fi
        done <"$file"
        echo
        say "CASE $name (timeout ${CASE_TIMEOUT_NOW}s)"
        local start=$EPOCHREALTIME
        # timeout puts the case in its own process group and kills the whole group, so a
        # hung server a case started dies with it.
        timeout -k 5 "$CASE_TIMEOUT_NOW" bash -c 'set -u; . "$VM_LIB"; . "$1"' "$name" "$file" \
            </dev/null 2>&1 | tee "$RESULTS/log"
        local rc=${PIPESTATUS[0]}
        local ms=$(((${EPOCHREALTIME/./} - ${start/./}) / 1000))
        local secs=$((ms / 1000)).$((ms % 1000 / 100))
        verdict "$RESULTS/checks" "$rc"
        case $VERDICT in
        PASS) passed=$((passed + 1)) ;;
        FAIL) failed=$((failed + 1)) ;;
        SKIP) skipped=$((skipped + 1)) ;;
        esac
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$VERDICT" "$secs" "$NPASS" "$NFAIL" "$WHY" >>"$summary"
        say "CASE $name: $VERDICT in ${secs}s ($NPASS checks passed, $NFAIL failed)${WHY:+: $WHY}"
        if ! net_is_default; then
            say "case $name left the network changed; restoring it"
            restore_net || say "restore_net failed; later cases may fail"
        fi
    done
    echo
    echo "VM SUITE: $passed passed, $failed failed, $skipped skipped"
    ((failed == 0))
}

case $MODE in
suite) run_cases ;;
demo) run_demo ;;
capture)
    # Thousands of small files: write them to tmpfs, then hand over one tar through 9p.
    bash "$VM_SUITE/capture.sh" /tmp/capture && tar -C /tmp/capture -cf "$SHARE/capture.tar" rxe-vm-basic
    ;;
*)
    say "unknown MODE=$MODE"
    exit 2
    ;;
esac
rc=$?
say "done, exit status $rc"
exit $rc
