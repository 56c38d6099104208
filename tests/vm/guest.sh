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
# The two-VM mode's command channel, a 9p directory both guests mount (tests/vm/init).
CHAN=/tmp/chan
MODE=suite
CASES=
CASE_TIMEOUT=120
# shellcheck source=/dev/null
. "$SHARE/config"
export SHARE VM_SUITE VM_LIB RDMACTL CHAN

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

# The two-VM mode (tests/vm/run --two-vm): this guest is A (runs the cases) or B (serves A's
# commands); one rxe device, rx$TWO_ROLE, on the virtio NIC eth0 that qemu's socket network
# joins to the other guest. $CHAN is the 9p directory both guests mount.
setup_two() {
    mkdir -p /run/rdmactl-vm
    # Two hosts need two names: fabric tells hosts apart by name.
    hostname "vm-$TWO_ROLE"
    modprobe rdma_rxe && modprobe virtio_net && modprobe rdma_ucm || return 1
    ip link set lo up
    local links=(/sys/class/net/*)
    printf '%s\n' "${links[@]##*/}" >/run/rdmactl-vm/baseline-links
    mountpoint -q "$CHAN" || {
        echo "no command channel at $CHAN: tests/vm/init did not mount the chan share" >&2
        return 1
    }
    [[ -e /sys/class/net/eth0 ]] || {
        echo "no eth0 after modprobe virtio_net: qemu gave this guest no NIC" >&2
        return 1
    }
    # shellcheck source=lib.sh
    RESULTS=/run/rdmactl-vm . "$VM_LIB"
    restore_two_net
}

if [[ $MODE == two ]]; then
    say "kernel $(uname -r), $(nproc) cpus, $(free -m | awk '/^Mem:/ {print $2}') MB; guest ${TWO_ROLE^^} of two, setting up rx$TWO_ROLE on eth0"
else
    say "kernel $(uname -r), $(nproc) cpus, $(free -m | awk '/^Mem:/ {print $2}') MB; setting up rxe0/rxe1"
fi
setup_start=$EPOCHREALTIME
if [[ $MODE == two ]]; then setup_fn=setup_two; else setup_fn=setup; fi
if ! $setup_fn; then
    say "SETUP FAILED"
    rdma link show
    ip -br addr
    dmesg | grep -iE 'rxe|rdma|crc32|virtio' | tail -20
    # Guest A waits for B's word: tell it B will not serve.
    [[ $MODE == two && ${TWO_ROLE:-} == b ]] && printf 'failed\n# end\n' >"$CHAN/ready-b"
    exit 2
fi
setup_ms=$(((${EPOCHREALTIME/./} - ${setup_start/./}) / 1000))
say "setup done in ${setup_ms} ms: ${NET_STEPS:-}"
rdma link show
if [[ $MODE == two ]]; then
    ip -br addr show dev eth0
else
    ip -br addr show dev veth0
    ip -br addr show dev veth1
fi

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
    local case_dir=$VM_SUITE/cases is_default=net_is_default restore=restore_net
    if [[ $MODE == two ]]; then
        case_dir=$VM_SUITE/cases-two is_default=two_net_is_default restore=restore_two_net
    fi
    for name in $CASES; do
        file=$case_dir/$name.sh
        export RESULTS=$results/$name CASE_NAME=$name
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
        if ! $is_default; then
            say "case $name left the network changed; restoring it"
            $restore || say "$restore failed; later cases may fail"
        fi
        [[ $MODE == two ]] && two_after_case "$name"
    done
    echo
    echo "VM SUITE: $passed passed, $failed failed, $skipped skipped"
    ((failed == 0))
}

# ---------------------------------------------------------------- two VMs
# Guest A, after each case: B kills what the case left running there and restores its network.
two_after_case() {
    local CASE_NAME=$1 B_RESULTS=$CHAN/results/$1 CHECK_TIMEOUT=60 B_CMD_PREFIX=after
    mkdir -p "$B_RESULTS"
    on_b two_reset "$B_RESULTS" >/dev/null || say "guest B did not clean up after $1"
    if ! on_b two_net_is_default >/dev/null 2>"$RESULTS/b-net.err"; then
        say "case $1 left B's network changed: $(<"$RESULTS/b-net.err"); restoring it"
        on_b restore_two_net >/dev/null || say "B's restore_two_net failed; later cases may fail"
    fi
}

# Guest A: wait for B's word, run the cases, then tell B to stop.
run_two_a() {
    mkdir -p "$CHAN/queue" "$CHAN/results"
    say "waiting for guest B (its word in $CHAN/ready-b)"
    if ! _two_wait_end "$CHAN/ready-b" 300 || [[ $_two_text != ready* ]]; then
        say "guest B never became ready (${_two_text:-no word}); see console-b.log"
        printf 'done\n# end\n' >"$CHAN/done"
        return 2
    fi
    say "guest B is ready: ${_two_text%$'\n'}"
    run_cases
    local rc=$?
    printf 'done\n# end\n' >"$CHAN/done"
    return $rc
}

# Guest B: serve A's requests (see lib.sh) until A (or the host) writes $CHAN/done. Each
# request runs in a subshell of its own, so a long command never holds up the next one.
two_serve() { # two_serve REQUEST_FILE (sourced: kind, secs, base, cmd)
    local kind secs base cmd=() rc
    # shellcheck source=/dev/null
    . "$1"
    mkdir -p "${base%/*}"
    export RESULTS=${base%/*}
    case $kind in
    fg)
        timeout -k 5 "$secs" bash -c '. "$VM_LIB"; "$@"' on_b "${cmd[@]}" \
            >"$base.stdout" 2>"$base.stderr" </dev/null
        rc=$?
        ;;
    bg)
        # setsid: a session of its own, so two_reset can stop the command and its children.
        setsid bash -c '. "$VM_LIB"; exec "$@"' bg_b "${cmd[@]}" >"$base.out" 2>"$base.err" </dev/null &
        local pid=$!
        printf '%s\n# end\n' "$pid" >"$base.pid"
        wait "$pid"
        rc=$?
        ;;
    *) rc=2 ;;
    esac
    printf '%s\n# end\n' "$rc" >"$base.rc"
}

run_two_b() {
    # shellcheck source=lib.sh
    RESULTS=/run/rdmactl-vm . "$VM_LIB"
    local -A seen=()
    local req text up dir
    printf 'ready: %s on eth0, %s and %s\n# end\n' "$TWO_DEV" "$TWO_V4" "$TWO_V6" >"$CHAN/ready-b"
    say "serving guest A's commands from $CHAN/queue"
    while [[ ! -e $CHAN/done ]]; do
        for req in "$CHAN"/queue/*.req; do
            [[ -e $req && -z ${seen[$req]:-} ]] || continue
            IFS= read -r -d '' text <"$req"
            [[ $text == *$'# end\n' ]] || continue
            seen[$req]=1
            read -r up _ </proc/uptime
            echo "$up ${req##*/}: ${text//$'\n'/; }" >>"$CHAN/agent-b.log"
            two_serve "$req" &
        done
        _two_nap 0.05
    done
    for dir in "$CHAN"/results/*; do [[ -d $dir ]] && two_reset "$dir"; done
    say "guest A is done"
    return 0
}

case $MODE in
suite) run_cases ;;
two)
    if [[ $TWO_ROLE == a ]]; then run_two_a; else run_two_b; fi
    ;;
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
