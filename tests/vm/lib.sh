# shellcheck shell=bash
# Helpers for the VM suite's cases, sourced by every case (and by guest.sh for the network
# set-up). A case is a bash script run with `set -u`; these helpers never abort it: each one
# records PASS/FAIL/SKIP in "$RESULTS/checks", and the runner turns that into the case verdict.
#
# Environment (set by guest.sh): RDMACTL (absolute path of the binary under test), RESULTS
# (this case's writable directory on the share), VM_LIB (this file), VM_SUITE (the suite dir).
#
#   check "desc" cmd...               pass when cmd exits 0
#   expect_rc N "desc" cmd...         pass when cmd exits N
#   expect_out "desc" REGEX cmd...    pass when cmd's stdout+stderr has a line matching the
#                                     extended regex (grep -E); the exit status is not judged
#   expect_no_out "desc" REGEX cmd... pass when no line matches (e.g. 'panicked')
#   json_has "desc" FILE PRED...      pass when FILE holds JSON with a record matching PREDs
#   skip "reason"                     record a skip and end the case (exit 0)
#   restore_net                       put rxe0/rxe1, veth0/veth1 and the sysctls back
#   bg_server NAME cmd...             start cmd in the background; sets BG_PID
#   bench_pair PORT NAME SRV... -- CLI... a server in the background and a client; the
#                                     client's output in $RESULTS/NAME.out and .err
#   wait_listen PORT [SECS]           wait until something listens on TCP PORT
#   wait_pid_timeout PID SECS         wait for a background PID; its status, or 124 if killed
#   bg_start NAME cmd...              start cmd itself in the background (no timeout wrapper,
#                                     so BG_PID is the command and signals reach it); stdout
#                                     in $RESULTS/NAME.out, stderr in $RESULTS/NAME.err
#   wait_line FILE REGEX [SECS] [PID] wait until a line of FILE matches; fails early when PID
#                                     has exited
#   one_line FILE                     FILE's lines joined by spaces, for regexes across lines
#   jqf ARGS... FILE                  jq -e that fails on an empty or missing FILE
#
# After check/expect_*: LAST_RC, LAST_STDOUT, LAST_STDERR and LAST_OUT (stdout then stderr)
# describe the command that just ran, so a case can look further at its output.
# A shell function runs in the case's own shell (so wait_pid_timeout can wait for the case's
# children; the per-case timeout still applies); anything else runs as a program under
# `timeout CHECK_TIMEOUT` (default 60 s), so `check "..." test -e X` execs /usr/bin/test.

: "${RESULTS:=/tmp/vm-results}"
: "${CHECK_TIMEOUT:=60}"
: "${FAIL_TAIL:=25}"
mkdir -p "$RESULTS"
_lib_n=0
LAST_RC=0
LAST_OUT=/dev/null
LAST_STDOUT=/dev/null
LAST_STDERR=/dev/null
BG_PID=

# The command as a reader would type it, in _lib_shown: quoted, with the binary's long path
# shortened. Helpers here avoid $(...) and external programs where they can: under TCG every
# fork+exec over 9p costs a noticeable fraction of a second.
_lib_show() {
    printf -v _lib_shown '%q ' "$@"
    _lib_shown=${_lib_shown% }
    if [[ -n ${RDMACTL:-} ]]; then
        _lib_shown=${_lib_shown//"$RDMACTL"/rdmactl}
    fi
}

_lib_record() { # _lib_record PASS|FAIL|SKIP text
    [[ -d $RESULTS ]] || mkdir -p "$RESULTS"
    printf '%s\t%s\n' "$1" "$2" >>"$RESULTS/checks"
}

# Run "$@" with its output in files; sets LAST_* and _lib_secs.
_lib_run() {
    [[ -d $RESULTS ]] || mkdir -p "$RESULTS"
    _lib_n=$((_lib_n + 1))
    local base
    printf -v base '%s/cmd-%03d' "$RESULTS" "$_lib_n"
    # A check inside a subshell must not overwrite the parent's numbered files.
    ((BASH_SUBSHELL == 0)) || base+=.sub$BASHPID
    LAST_STDOUT=$base.stdout
    LAST_STDERR=$base.stderr
    LAST_OUT=$base.out
    local start=$EPOCHREALTIME
    if ! declare -F "$1" >/dev/null; then
        timeout -k 5 "$CHECK_TIMEOUT" "$@" >"$LAST_STDOUT" 2>"$LAST_STDERR" </dev/null
    else
        "$@" >"$LAST_STDOUT" 2>"$LAST_STDERR" </dev/null
    fi
    LAST_RC=$?
    local out err
    IFS= read -r -d '' out <"$LAST_STDOUT"
    IFS= read -r -d '' err <"$LAST_STDERR"
    printf '%s%s' "$out" "$err" >"$LAST_OUT"
    _lib_elapsed "$start"
}

_lib_elapsed() { # _lib_secs = seconds since $1 (an $EPOCHREALTIME), one decimal
    local now=$EPOCHREALTIME
    local ms=$(((${now/./} - ${1/./}) / 1000))
    printf -v _lib_secs '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# True when a line of FILE matches the extended regex RE (what grep -E would say), without a
# fork: bash's =~ uses the same POSIX ERE engine. The first matching line is in _lib_line.
_lib_grep() { # _lib_grep RE FILE
    local line
    while IFS= read -r line || [[ -n $line ]]; do
        if [[ $line =~ $1 ]]; then
            _lib_line=$line
            return 0
        fi
    done <"$2"
    return 1
}

_lib_pass() { # desc suffix (after the shown command)
    _lib_record PASS "$1"
    printf '  PASS  %s  [%s%s] (%ss)\n' "$1" "$_lib_shown" "$2" "$_lib_secs"
}

_lib_fail() { # desc why (the command is in _lib_shown)
    _lib_record FAIL "$1"
    printf '  FAIL  %s\n        command: %s\n        why: %s (%ss)\n' "$1" "$_lib_shown" "$2" "$_lib_secs"
    if [[ $LAST_RC == 124 || $LAST_RC == 137 ]]; then
        printf '        (exit %s: killed by the %ss check timeout)\n' "$LAST_RC" "$CHECK_TIMEOUT"
    fi
    if [[ -s $LAST_OUT ]]; then
        printf '        last %s lines of stdout+stderr:\n' "$FAIL_TAIL"
        tail -n "$FAIL_TAIL" "$LAST_OUT" | sed 's/^/        | /'
    else
        printf '        (no output)\n'
    fi
}

check() { # check "desc" cmd...
    local desc=$1
    shift
    _lib_run "$@"
    _lib_show "$@"
    if ((LAST_RC == 0)); then
        _lib_pass "$desc" ""
    else
        _lib_fail "$desc" "exit status $LAST_RC, expected 0"
    fi
}

expect_rc() { # expect_rc N "desc" cmd...
    local want=$1 desc=$2
    shift 2
    _lib_run "$@"
    _lib_show "$@"
    if [[ $LAST_RC == "$want" ]]; then
        _lib_pass "$desc" " -> $LAST_RC"
    else
        _lib_fail "$desc" "exit status $LAST_RC, expected $want"
    fi
}

expect_out() { # expect_out "desc" REGEX cmd...
    local desc=$1 re=$2
    shift 2
    _lib_run "$@"
    _lib_show "$@"
    if _lib_grep "$re" "$LAST_OUT"; then
        _lib_pass "$desc" " =~ /$re/"
    else
        _lib_fail "$desc" "no line matches /$re/ (exit status $LAST_RC)"
    fi
}

expect_no_out() { # expect_no_out "desc" REGEX cmd...
    local desc=$1 re=$2
    shift 2
    _lib_run "$@"
    _lib_show "$@"
    if ! _lib_grep "$re" "$LAST_OUT"; then
        _lib_pass "$desc" " !~ /$re/"
    else
        _lib_fail "$desc" "a line matches /$re/: $_lib_line"
    fi
}

# json_has "desc" FILE PRED...
# A record is any JSON object, seen together with the scalar fields of the objects it is nested
# in (so {"device":"rxe0","ports":[{"port":1,"state":"ACTIVE"}]} has a record with device rxe0,
# port 1 and state ACTIVE). PRED is KEY=REGEX: the record's KEY, as text (true/false/null for
# JSON literals), must fully match the Python regex. KEY may list alternatives, a|b, for names
# not settled yet. Passes when one record matches every PRED. Typical use, after
# `check "gids -j runs" "$RDMACTL" -j gids`:
#   json_has "rxe0 GID 1 is IPv4-mapped" "$LAST_STDOUT" device=rxe0 index=1 'gid=::ffff:192\.168\.77\.1'
json_has() {
    local desc=$1 file=$2
    shift 2
    local why start=$EPOCHREALTIME
    why=$(
        python3 - "$file" "$@" <<'PY' 2>&1
import json, re, sys

path, preds = sys.argv[1], sys.argv[2:]
try:
    with open(path) as f:
        doc = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"not JSON: {e}")

def text(v):
    return json.dumps(v) if isinstance(v, bool) or v is None else str(v)

def records(node, inherited):
    if isinstance(node, dict):
        here = dict(inherited)
        here.update({k: v for k, v in node.items() if not isinstance(v, (dict, list))})
        yield here
        for v in node.values():
            if isinstance(v, (dict, list)):
                yield from records(v, here)
    elif isinstance(node, list):
        for v in node:
            yield from records(v, inherited)

def matches(rec, pred):
    keys, _, regex = pred.partition("=")
    return any(k in rec and re.fullmatch(regex, text(rec[k])) for k in keys.split("|"))

recs = list(records(doc, {}))
if any(all(matches(r, p) for p in preds) for r in recs):
    sys.exit(0)
best = max(recs, key=lambda r: sum(matches(r, p) for p in preds), default={})
sys.exit(f"no record matches {' '.join(preds)}; {len(recs)} records; closest: {json.dumps(best)[:400]}")
PY
    )
    LAST_RC=$?
    LAST_OUT=$file
    _lib_elapsed "$start"
    _lib_show json_has "${file##*/}" "$@"
    if ((LAST_RC == 0)); then
        _lib_pass "$desc" ""
    else
        _lib_fail "$desc" "$why"
    fi
}

skip() { # skip "reason": ends the case
    _lib_record SKIP "$1"
    printf '  SKIP  %s\n' "$1"
    exit 0
}

skip_here() { # skip_here "reason": records a SKIP for one part; the case goes on
    _lib_record SKIP "$1"
    printf '  SKIP  %s\n' "$1"
}

# bench_pair PORT NAME SERVER_CMD... -- CLIENT_CMD...: a server (rxe0's side) in the
# background and a client in the foreground, for the bench-* cases. The client's stdout
# lands in $RESULTS/NAME.out, its stderr in NAME.err; the status is the client's. A TCP
# server is ready once it listens on PORT; an rdmactl --cm server, which listens on the CM
# instead, once it says so.
bench_pair() {
    local port=$1 name=$2
    shift 2
    local srv=() cli=()
    while [[ $1 != -- ]]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    bg_server "$name-server" "${srv[@]}"
    local pid=$BG_PID
    if [[ " ${srv[*]} " == *" --cm "* ]]; then
        wait_line "$RESULTS/$name-server.out" '^listening on' 15 "$pid" || return 1
    else
        wait_listen "$port" 15 || return 1
    fi
    timeout "${PAIR_TIMEOUT:-120}" "${cli[@]}" >"$RESULTS/$name.out" 2>"$RESULTS/$name.err"
    local rc=$?
    wait_pid_timeout "$pid" 30 >/dev/null
    return $rc
}

bg_server() { # bg_server NAME cmd... -> BG_PID; output in $RESULTS/NAME.out
    local name=$1
    shift
    timeout -k 5 "${BG_TIMEOUT:-120}" "$@" >"$RESULTS/$name.out" 2>&1 </dev/null &
    BG_PID=$!
    _lib_show "$@"
    printf '  bg    %s: %s (pid %s)\n' "$name" "$_lib_shown" "$BG_PID"
}

wait_listen() { # wait_listen PORT [SECS]: something listens on TCP PORT
    local port=$1 deadline=$((SECONDS + ${2:-10}))
    while ((SECONDS < deadline)); do
        [[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]] && return 0
        sleep 0.1
    done
    echo "nothing listens on TCP port $port after ${2:-10}s" >&2
    return 1
}

wait_catching_int() { # wait_catching_int PID [SECS]: until rdmactl as PID catches SIGINT
    # A command started with & in a non-interactive shell inherits SIGINT as ignored, so a
    # kill -INT that lands before the program installs its own handler is lost. Wait for
    # the handler (SigCgt bit 2), then time the signal from there. The forked shell before
    # its exec shows bash's own SIGINT handler: only rdmactl's counts (its comm).
    local pid=$1 deadline=$((SECONDS + ${2:-10})) mask comm
    while ((SECONDS < deadline)); do
        comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
        mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || return 1
        [[ -n $mask ]] || return 1
        [[ $comm == rdmactl ]] && (((16#$mask >> 1) & 1)) && return 0
        sleep 0.005
    done
    echo "pid $pid ($comm) did not catch SIGINT within ${2:-10}s" >&2
    return 1
}

wait_pid_timeout() { # wait_pid_timeout PID SECS: the PID's exit status, or 124 after killing it
    local pid=$1 deadline=$((SECONDS + $2))
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= deadline)); then
            echo "pid $pid still running after ${2}s; killed" >&2
            kill -TERM "$pid" 2>/dev/null
            sleep 1
            kill -KILL "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            return 124
        fi
        sleep 0.1
    done
    wait "$pid"
}

bg_start() { # bg_start NAME cmd... -> BG_PID (the command's own pid)
    local name=$1
    shift
    "$@" >"$RESULTS/$name.out" 2>"$RESULTS/$name.err" </dev/null &
    BG_PID=$!
    _lib_show "$@"
    printf '  bg    %s: %s (pid %s)\n' "$name" "$_lib_shown" "$BG_PID"
}

wait_line() { # wait_line FILE REGEX [SECS] [PID]
    local file=$1 re=$2 deadline=$((SECONDS + ${3:-15})) pid=${4:-}
    while ((SECONDS < deadline)); do
        grep -Eq -- "$re" "$file" 2>/dev/null && return 0
        if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
            grep -Eq -- "$re" "$file" 2>/dev/null && return 0
            echo "pid $pid exited before $file had a line matching /$re/" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "no line of $file matches /$re/ after ${3:-15}s" >&2
    return 1
}

# lib.sh runs each command with stdin from /dev/null, so the file goes in as an argument.
one_line() { tr '\n' ' ' <"$1"; }

jqf() { # jq -e alone passes on no input
    local f=${*: -1}
    [[ -s $f ]] && jq -e "$@"
}

# ---------------------------------------------------------------- the default network state

VETH_ADDR=([0]=192.168.77.1 [1]=192.168.77.2)

# ipv4_gid ADDR: the sysfs text of the IPv4-mapped GID of ADDR, in _gid, e.g. for 192.168.77.1
# 0000:0000:0000:0000:0000:ffff:c0a8:4d01.
ipv4_gid() {
    local a b c d
    IFS=. read -r a b c d <<<"$1"
    printf -v _gid '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"
}

# The netdev an rxe device is bound to, from `rdma link`.
_rxe_netdev() {
    rdma link show "$1/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p'
}

# True when the default state is in place: what every case may assume at its start. Reads
# sysfs/procfs with builtins and one `ip`; says on stderr what differs.
net_is_default() {
    _net_differs() {
        echo "network not in its default state: $*" >&2
        return 1
    }
    local i value devs=(/sys/class/infiniband/*)
    [[ ${devs[*]} == "/sys/class/infiniband/rxe0 /sys/class/infiniband/rxe1" ]] ||
        _net_differs "RDMA devices are ${devs[*]##*/}, not rxe0 rxe1" || return
    for i in 0 1; do
        local port=/sys/class/infiniband/rxe$i/ports/1
        read -r value <"$port/gid_attrs/ndevs/1" && [[ $value == "veth$i" ]] ||
            _net_differs "rxe$i GID 1 is on '$value', not veth$i" || return
        ipv4_gid "${VETH_ADDR[$i]}"
        read -r value <"$port/gids/1" && [[ $value == "$_gid" ]] ||
            _net_differs "rxe$i GID 1 is $value, not $_gid" || return
        read -r value <"$port/state" && [[ $value == *ACTIVE ]] ||
            _net_differs "rxe$i port 1 is $value" || return
    done
    local f
    for f in all veth0 veth1; do
        read -r value <"/proc/sys/net/ipv4/conf/$f/accept_local" && ((value == 1)) ||
            _net_differs "$f accept_local=$value" || return
        read -r value <"/proc/sys/net/ipv4/conf/$f/rp_filter" && ((value == 0)) ||
            _net_differs "$f rp_filter=$value" || return
    done
    local links=() baseline=() link
    # Netdevs are symlinks; the bonding module adds a plain file, bonding_masters.
    for link in /sys/class/net/*; do [[ -L $link ]] && links+=("$link"); done
    [[ -r /run/rdmactl-vm/baseline-links ]] && mapfile -t baseline </run/rdmactl-vm/baseline-links
    ((${#links[@]} == ${#baseline[@]} + 2)) ||
        _net_differs "links are ${links[*]##*/}; before setup: ${baseline[*]}" || return
    local netns=(/run/netns/*)
    [[ ! -e ${netns[0]} ]] || _net_differs "network namespaces exist: ${netns[*]##*/}" || return
    # Exactly the two test addresses, IPv4 or IPv6, with global scope.
    local dev family addr found=0
    while read -r _ dev family addr _; do
        case "$dev $family $addr" in
        "veth0 inet 192.168.77.1/24" | "veth1 inet 192.168.77.2/24") found=$((found + 1)) ;;
        *) _net_differs "extra address $addr on $dev" || return ;;
        esac
    done < <(ip -o addr show scope global)
    ((found == 2)) || _net_differs "veth0/veth1 lack their 192.168.77.x/24 addresses"
}

# Wait until both ports are ACTIVE and their GID tables settled: index 0 the fe80 link-local
# GID, index 1 the IPv4-mapped GID, and no IPv6 address still tentative (DAD). Polls with
# builtins.
wait_gids() { # wait_gids [SECS]
    local deadline=$((SECONDS + ${1:-20})) i g0 g1 state
    while :; do
        local ok=1
        for i in 0 1; do
            local p=/sys/class/infiniband/rxe$i/ports/1
            g0= g1= state=
            { read -r g0 <"$p/gids/0" && read -r g1 <"$p/gids/1" && read -r state <"$p/state"; } 2>/dev/null
            ipv4_gid "${VETH_ADDR[$i]}"
            [[ $g0 == fe80:* && $g1 == "$_gid" && $state == *ACTIVE ]] || {
                ok=0
                break
            }
        done
        # /proc/net/if_inet6 flags (5th field): 0x40 IFA_F_TENTATIVE.
        if ((ok)); then
            local addr idx plen scope flags name tentative=0
            while read -r addr idx plen scope flags name; do
                (((16#$flags & 0x40) == 0)) || tentative=1
            done </proc/net/if_inet6
            ((tentative)) || return 0
        fi
        if ((SECONDS >= deadline)); then
            echo "GID tables not settled after ${1:-20}s: rxe$i gid0=${g0:-?} gid1=${g1:-?} state=${state:-?}" >&2
            return 1
        fi
        sleep 0.1
    done
}

# Four Soft-RoCE endpoints fab0..fab3 for fabric cases: veths e0..e3 at 10.77.0.10..13/24,
# their peers p0..p3 joined by the bridge br0, with accept_local (one kernel) and
# arp_ignore=1/arp_announce=2 (each netdev answers ARP only for its own address).
# restore_net removes them. Checks that every IPv4 GID appeared.
fabric_endpoints() {
    local i
    sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.all.rp_filter=0 \
        net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
    ip link add br0 type bridge
    ip link set br0 up
    for i in 0 1 2 3; do
        ip link add "e$i" type veth peer name "p$i"
        ip link set "p$i" master br0
        ip link set "p$i" up
        ip addr add "10.77.0.1$i/24" dev "e$i"
        ip link set "e$i" up
        sysctl -qw "net.ipv4.conf.e$i.accept_local=1" "net.ipv4.conf.e$i.rp_filter=0" \
            "net.ipv4.conf.e$i.arp_ignore=1" "net.ipv4.conf.e$i.arp_announce=2"
        rdma link add "fab$i" type rxe netdev "e$i"
    done
    gids_ready() {
        local i
        for i in 0 1 2 3; do
            grep -q "0a4d:000$(printf %x $((10 + i)))" "/sys/class/infiniband/fab$i/ports/1/gids/1" 2>/dev/null || return 1
        done
    }
    for _ in $(seq 1 60); do gids_ready && break; sleep 0.5; done
    check "four endpoints fab0..fab3 have their IPv4 GIDs" gids_ready
}

# Put back the state guest.sh creates: veth0 192.168.77.1/24 <-> veth1 192.168.77.2/24, rxe0 on
# veth0 and rxe1 on veth1, accept_local=1 and rp_filter=0 (two rxe devices in one kernel: without
# accept_local veth1 drops veth0's ARP requests, whose sender address is local, and RTR times
# out). Removes rxe devices, links and network namespaces that cases added. Reads state from
# sysfs and runs every `ip` change in one `ip -batch`: under TCG each process costs dearly.
restore_net() {
    NET_STEPS=
    _net_step_start=$EPOCHREALTIME
    [[ -d /sys/module/rdma_rxe ]] || modprobe rdma_rxe || return 1
    [[ -d /sys/module/veth ]] || modprobe veth || return 1
    _net_step modprobe

    local dev path
    for path in /sys/class/infiniband/*; do
        dev=${path##*/}
        [[ ! -e $path || $dev == rxe0 || $dev == rxe1 ]] || rdma link delete "$dev"
    done
    for path in /run/netns/*; do
        [[ -e $path ]] && ip netns delete "${path##*/}"
    done

    local batch=() baseline=()
    [[ -r /run/rdmactl-vm/baseline-links ]] && mapfile -t baseline </run/rdmactl-vm/baseline-links
    for path in /sys/class/net/*; do
        dev=${path##*/}
        # Netdevs are symlinks; the bonding module adds a plain file, bonding_masters.
        [[ -L $path ]] || continue
        [[ $dev == veth0 || $dev == veth1 || " ${baseline[*]} " == *" $dev "* ]] ||
            batch+=("link delete $dev")
    done
    local recreate=0
    if [[ ! -e /sys/class/net/veth0 || ! -e /sys/class/net/veth1 ]]; then
        recreate=1
        [[ -e /sys/class/net/veth0 ]] && batch+=("link delete veth0")
        [[ -e /sys/class/net/veth1 ]] && batch+=("link delete veth1")
        batch+=("link add veth0 type veth peer name veth1")
    fi
    local have=" " family addr i
    if ((!recreate)); then
        while read -r _ dev family addr _; do
            if [[ $dev == veth0 && $addr == "${VETH_ADDR[0]}/24" ]] || [[ $dev == veth1 && $addr == "${VETH_ADDR[1]}/24" ]]; then
                have+="$dev "
            else
                batch+=("addr del $addr dev $dev")
            fi
        done < <(ip -o addr show scope global)
    fi
    for i in 0 1; do
        [[ $have == *" veth$i "* ]] || batch+=("addr add ${VETH_ADDR[$i]}/24 dev veth$i")
        batch+=("link set dev veth$i mtu 1500 up" "neigh flush dev veth$i")
    done
    batch+=("link set dev lo up")
    # -force: go on past a failure (deleting one end of a veth pair removes the other end too);
    # wait_gids below judges the result.
    printf '%s\n' "${batch[@]}" | ip -force -batch - ||
        echo "restore_net: some of these ip commands failed: ${batch[*]}" >&2
    for dev in all veth0 veth1; do
        echo 1 >"/proc/sys/net/ipv4/conf/$dev/accept_local" &&
            echo 0 >"/proc/sys/net/ipv4/conf/$dev/rp_filter" || return 1
    done
    _net_step veth+sysctl

    for i in 0 1; do
        local netdev=
        read -r netdev 2>/dev/null <"/sys/class/infiniband/rxe$i/ports/1/gid_attrs/ndevs/0"
        if [[ ! -e /sys/class/infiniband/rxe$i ]]; then
            rdma link add "rxe$i" type rxe netdev "veth$i" || return 1
        elif [[ $netdev != "veth$i" && $(_rxe_netdev "rxe$i") != "veth$i" ]]; then
            rdma link delete "rxe$i"
            rdma link add "rxe$i" type rxe netdev "veth$i" || return 1
        fi
    done
    _net_step rxe
    wait_gids 20 || return 1
    _net_step wait-gids
}

# Where restore_net spent its time, in NET_STEPS ("modprobe 1.2s cleanup 0.3s ...").
_net_step() {
    _lib_elapsed "$_net_step_start"
    NET_STEPS+="$1 ${_lib_secs}s "
    _net_step_start=$EPOCHREALTIME
}

# ---------------------------------------------------------------- two VMs (tests/vm/run --two-vm)
# Two guests, A and B, each with one rxe device on its eth0, joined by qemu's socket network
# (the packets go through the host's loopback). Cases in cases-two/ run in guest A and run
# commands on guest B through a command channel: a 9p directory both guests mount at $CHAN.
# A writes a request file into $CHAN/queue; B's agent (guest.sh) runs it and writes the
# command's stdout, stderr and status next to B's other files of the case, in $B_RESULTS,
# which A reads through the same mount. Every file ends in a "# end" line, so a reader never
# acts on half a file; no step forks more than it must (TCG).
#
#   on_b CMD...           run CMD on guest B (a program or a lib.sh function) under
#                         CHECK_TIMEOUT; its stdout and stderr come out here, its status is
#                         returned (124 when B did not answer in time). Use it under the check
#                         helpers: `expect_out "desc" RE on_b "$RDMACTL" ...`
#   bg_b NAME CMD...      start CMD on B in the background, in a session of its own (no
#                         timeout wrapper: signals reach it); stdout in $B_RESULTS/NAME.out,
#                         stderr in NAME.err; sets B_PID to its pid on B
#   wait_b NAME SECS      the exit status of B's background command NAME, or 124 after
#                         SECS (then it is killed)
#
# Each guest sees: TWO_ROLE (a or b), TWO_DEV / TWO_PEER_DEV (rxa, rxb), TWO_V4 / TWO_PEER_V4
# (192.168.78.1, .2), TWO_V6 / TWO_PEER_V6 (fd78::1, fd78::2), CHAN, B_RESULTS.

CHAN=${CHAN:-/tmp/chan}
if [[ -n ${TWO_ROLE:-} ]]; then
    _two_me=1 _two_peer=2 _two_peer_role=b
    [[ $TWO_ROLE == b ]] && _two_me=2 _two_peer=1 _two_peer_role=a
    TWO_DEV=rx$TWO_ROLE
    TWO_PEER_DEV=rx$_two_peer_role
    TWO_V4=192.168.78.$_two_me
    TWO_PEER_V4=192.168.78.$_two_peer
    TWO_V6=fd78::$_two_me
    TWO_PEER_V6=fd78::$_two_peer
fi
# Where B's files of the running case live (the same path in both guests).
B_RESULTS=$CHAN/results/${CASE_NAME:-none}
_two_seq=0
B_PID=

# _two_nap SECS: sleep without a fork (a read that times out on a pipe nobody writes).
_two_nap() {
    [[ -n ${_two_nap_fd:-} ]] || exec {_two_nap_fd}<> <(:)
    read -r -t "$1" -u "$_two_nap_fd" _
    return 0
}

# _two_wait_end FILE SECS: wait until FILE exists and ends in "# end"; its text before that
# line in _two_text.
_two_wait_end() {
    local deadline=$((SECONDS + $2)) text
    while :; do
        if [[ -e $1 ]]; then
            IFS= read -r -d '' text <"$1"
            if [[ $text == *$'# end\n' ]]; then
                _two_text=${text%$'# end\n'}
                return 0
            fi
        fi
        ((SECONDS < deadline)) || return 1
        _two_nap 0.1
    done
}

# _two_request KIND SECS BASE CMD...: queue a request for B's agent.
_two_request() {
    local kind=$1 secs=$2 base=$3 text args file
    shift 3
    _two_seq=$((_two_seq + 1))
    mkdir -p "$CHAN/queue" "$B_RESULTS" 2>/dev/null || [[ -d $CHAN/queue ]]
    printf -v file '%s/queue/%s-%04d-%s.req' "$CHAN" "${CASE_NAME:-none}" "$_two_seq" "$BASHPID"
    printf -v args ' %q' "$@"
    printf -v text 'kind=%q\nsecs=%q\nbase=%q\ncmd=(%s )\n# end\n' "$kind" "$secs" "$base" "$args"
    printf '%s' "$text" >"$file"
}

on_b() { # on_b CMD...: run CMD on guest B; its output here, its status returned
    local base
    # B_CMD_PREFIX: the runner's own requests after a case are named apart from the case's.
    printf -v base '%s/%s-%04d' "$B_RESULTS" "${B_CMD_PREFIX:-b}" $((_two_seq + 1))
    ((BASH_SUBSHELL == 0)) || base+=.sub$BASHPID
    _two_request fg "$CHECK_TIMEOUT" "$base" "$@"
    if ! _two_wait_end "$base.rc" $((CHECK_TIMEOUT + 20)); then
        echo "on_b: guest B reported no status for '$*' within $((CHECK_TIMEOUT + 20))s (its agent's log: $CHAN/agent-b.log)" >&2
        return 124
    fi
    local rc=${_two_text%%$'\n'*} out=
    [[ -s $base.stdout ]] && IFS= read -r -d '' out <"$base.stdout"
    printf '%s' "$out"
    out=
    [[ -s $base.stderr ]] && IFS= read -r -d '' out <"$base.stderr"
    printf '%s' "$out" >&2
    return "$rc"
}

bg_b() { # bg_b NAME CMD... -> B_PID (the command's pid on B)
    local name=$1
    shift
    rm -f "$B_RESULTS/$name".{out,err,pid,rc}
    _two_request bg 0 "$B_RESULTS/$name" "$@"
    _lib_show "$@"
    B_PID=
    if _two_wait_end "$B_RESULTS/$name.pid" 30; then
        B_PID=${_two_text%%$'\n'*}
        printf '  bg B  %s: %s (pid %s on B)\n' "$name" "$_lib_shown" "$B_PID"
    else
        printf '  bg B  %s: %s: guest B did not start it within 30s\n' "$name" "$_lib_shown"
        return 1
    fi
}

wait_b() { # wait_b NAME SECS: B's background command's status, or 124 after killing it
    if _two_wait_end "$B_RESULTS/$1.rc" "$2"; then
        return "${_two_text%%$'\n'*}"
    fi
    echo "B's $1 still running after ${2}s; killed" >&2
    [[ -s $B_RESULTS/$1.pid ]] && on_b two_kill_session "$(<"$B_RESULTS/$1.pid")" >/dev/null 2>&1
    return 124
}

# On B: stop a background command's whole session (it may have children: fabric's pair tests).
two_kill_session() { # two_kill_session PID
    local pid=${1%%$'\n'*}
    kill -CONT -- "-$pid" 2>/dev/null
    kill -KILL -- "-$pid" 2>/dev/null
    return 0
}

# On B, after each case (guest A asks for it): whatever the case started in the background
# and left running is killed.
two_reset() { # two_reset DIR
    local f pid
    for f in "$1"/*.pid; do
        [[ -e $f && ! -e ${f%.pid}.rc ]] || continue
        IFS= read -r pid <"$f"
        two_kill_session "$pid"
    done
    return 0
}

# The default state of a two-VM guest: the rxe device rx$TWO_ROLE on eth0, port ACTIVE;
# eth0 up at MTU 1500 with exactly $TWO_V4/24 and $TWO_V6/64 (no DAD); GID index 0 the fe80
# link-local GID, the IPv4-mapped and the fd78:: GIDs present; no other RDMA device or link.
two_net_is_default() {
    _net_differs() {
        echo "network not in its default state: $*" >&2
        return 1
    }
    local value devs=(/sys/class/infiniband/*) port=/sys/class/infiniband/$TWO_DEV/ports/1
    [[ ${devs[*]} == "/sys/class/infiniband/$TWO_DEV" ]] ||
        _net_differs "RDMA devices are ${devs[*]##*/}, not $TWO_DEV" || return
    read -r value <"$port/state" && [[ $value == *ACTIVE ]] ||
        _net_differs "$TWO_DEV port 1 is $value" || return
    read -r value <"$port/gid_attrs/ndevs/0" && [[ $value == eth0 ]] ||
        _net_differs "$TWO_DEV GID 0 is on '$value', not eth0" || return
    read -r value </sys/class/net/eth0/mtu && ((value == 1500)) ||
        _net_differs "eth0 MTU $value" || return
    local links=() baseline=() link
    for link in /sys/class/net/*; do [[ -L $link ]] && links+=("$link"); done
    [[ -r /run/rdmactl-vm/baseline-links ]] && mapfile -t baseline </run/rdmactl-vm/baseline-links
    ((${#links[@]} == ${#baseline[@]})) ||
        _net_differs "links are ${links[*]##*/}; before setup: ${baseline[*]}" || return
    local dev family addr found=0
    while read -r _ dev family addr _; do
        case "$dev $family $addr" in
        "eth0 inet $TWO_V4/24" | "eth0 inet6 $TWO_V6/64") found=$((found + 1)) ;;
        *) _net_differs "extra address $addr on $dev" || return ;;
        esac
    done < <(ip -o addr show scope global)
    ((found == 2)) || _net_differs "eth0 lacks $TWO_V4/24 or $TWO_V6/64"
}

# Wait until this guest's port is ACTIVE with its three GIDs and no address is tentative.
two_wait_gids() { # two_wait_gids [SECS]
    local deadline=$((SECONDS + ${1:-20})) p=/sys/class/infiniband/$TWO_DEV/ports/1
    local g0 state gid v4=0 v6=0 i
    ipv4_gid "$TWO_V4"
    local want4=$_gid want6
    # fd78::1 as sysfs writes it.
    printf -v want6 'fd78:0000:0000:0000:0000:0000:0000:%04x' "${TWO_V6##*:}"
    while :; do
        g0= state= v4=0 v6=0
        { read -r g0 <"$p/gids/0" && read -r state <"$p/state"; } 2>/dev/null
        for i in 1 2 3 4 5; do
            gid=
            read -r gid <"$p/gids/$i" 2>/dev/null
            [[ $gid == "$want4" ]] && v4=1
            [[ $gid == "$want6" ]] && v6=1
        done
        if [[ $g0 == fe80:* && $state == *ACTIVE ]] && ((v4 && v6)); then
            local addr idx plen scope flags name tentative=0
            while read -r addr idx plen scope flags name; do
                (((16#$flags & 0x40) == 0)) || tentative=1
            done </proc/net/if_inet6
            ((tentative)) || return 0
        fi
        if ((SECONDS >= deadline)); then
            echo "$TWO_DEV GIDs not settled after ${1:-20}s: gid0=${g0:-?} state=${state:-?} ipv4 GID $v4 ipv6 GID $v6" >&2
            return 1
        fi
        _two_nap 0.1
    done
}

# Put the two-VM guest's default state back (see two_net_is_default), in one `ip -batch`.
restore_two_net() {
    NET_STEPS=
    _net_step_start=$EPOCHREALTIME
    local path dev batch=() baseline=()
    for path in /sys/class/infiniband/*; do
        dev=${path##*/}
        [[ ! -e $path || $dev == "$TWO_DEV" ]] || rdma link delete "$dev"
    done
    [[ -r /run/rdmactl-vm/baseline-links ]] && mapfile -t baseline </run/rdmactl-vm/baseline-links
    for path in /sys/class/net/*; do
        dev=${path##*/}
        [[ -L $path ]] || continue
        [[ " ${baseline[*]} " == *" $dev "* ]] || batch+=("link delete $dev")
    done
    local have=" " family addr
    while read -r _ dev family addr _; do
        if [[ $dev == eth0 && ($addr == "$TWO_V4/24" || $addr == "$TWO_V6/64") ]]; then
            have+="$addr "
        else
            batch+=("addr del $addr dev $dev")
        fi
    done < <(ip -o addr show scope global)
    batch+=("link set dev eth0 mtu 1500 up" "link set dev lo up")
    [[ $have == *" $TWO_V4/24 "* ]] || batch+=("addr add $TWO_V4/24 dev eth0")
    [[ $have == *" $TWO_V6/64 "* ]] || batch+=("addr add $TWO_V6/64 dev eth0 nodad")
    batch+=("neigh flush dev eth0")
    printf '%s\n' "${batch[@]}" | ip -force -batch - ||
        echo "restore_two_net: some of these ip commands failed: ${batch[*]}" >&2
    _net_step eth0
    if [[ ! -e /sys/class/infiniband/$TWO_DEV ]]; then
        rdma link add "$TWO_DEV" type rxe netdev eth0 || return 1
    fi
    _net_step rxe
    two_wait_gids 30 || return 1
    _net_step wait-gids
}

# start_slurm [CONF-LINE...]: a one-node Slurm (slurmctld, slurmd and munged started here;
# the node is `localhost`, partition `vm`), with extra slurm.conf lines; returns once the
# node is idle. SLURM_CONF is exported; the logs are in /tmp/slurm.
start_slurm() {
    local d=/tmp/slurm line
    mkdir -p "$d/state" "$d/spool" /tmp/munge
    chmod 700 /tmp/munge
    dd if=/dev/urandom of=/tmp/munge/munge.key bs=1024 count=1 status=none
    chmod 400 /tmp/munge/munge.key
    munged --force --key-file /tmp/munge/munge.key --socket /tmp/munge/munge.socket \
        --pid-file /tmp/munge/munged.pid --log-file /tmp/munge/munged.log \
        --seed-file /tmp/munge/seed >"$RESULTS/munged.out" 2>&1 || return 1
    cat >"$d/slurm.conf" <<EOF
ClusterName=vm
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=/tmp/munge/munge.socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=localhost CPUs=$(nproc) State=UNKNOWN
PartitionName=vm Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
    for line in "$@"; do printf '%s\n' "$line" >>"$d/slurm.conf"; done
    # slurmd needs a cgroup v2 tree and, with no systemd in the guest, makes its own.
    mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup || return 1
    mkdir -p /sys/fs/cgroup/system.slice
    printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$d/cgroup.conf"
    export SLURM_CONF=$d/slurm.conf
    slurmctld -f "$SLURM_CONF" >"$RESULTS/slurmctld.out" 2>&1 || return 1
    slurmd -f "$SLURM_CONF" -N localhost >"$RESULTS/slurmd.out" 2>&1 || return 1
    local _
    for _ in $(seq 1 60); do
        sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed)' && return 0
        sleep 1
    done
    return 1
}
