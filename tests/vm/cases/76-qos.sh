# vm-timeout: 300
# What rdmactl says about the traffic class is what the wire carries. On rxe the IP TOS byte
# of a RoCE v2 packet (UDP dport 4791) is the QP's GRH traffic class, so tc flower filters on
# veth0's egress count rxe0's packets by DSCP: `pingpong --tclass 0x48` carries 0x48;
# `pingpong --cm` with no traffic class carries rdma_cm's configfs default_roce_tos of rxe0
# (96 here), as stock librdmacm clients do (rping, perftest's `ib_send_bw -R`); a bare rmdir
# of the group leaves the kernel applying 96, writing 0 gives TOS 0 back. Then `rdmactl qos`
# must report the default the wire carries, and veth0's ethtool statistics as `ethtool -S`
# reads them. Leaves no qdisc on veth0, no rdma_cm group and no extra ip rule.

R=$RDMACTL
CFG=/sys/kernel/config
GROUP=$CFG/rdma_cm/rxe0
PORT1=$GROUP/ports/1
PP_PORT=18760

# ---------------------------------------------------------------- clean-up, whatever happens
# via_veth0's rules undone (2c): the local table's rule back at pref 0 before the one at 100
# goes, so there is always one.
via_veth0_undo() {
    [[ $(ip rule show pref 0) == *"lookup local"* ]] || ip rule add pref 0 table local
    ip rule del pref 100 table local 2>/dev/null
    ip rule del pref 50 2>/dev/null
    ip route flush table 77 2>/dev/null
    return 0
}
# The kernel keeps a port's default_roce_tos in rdma_cm's own device state: removing the
# configfs group does not reset it (only removing the device does), so 0 is written first.
qos_cleanup() {
    tc qdisc del dev veth0 clsact 2>/dev/null
    via_veth0_undo
    if [[ -d $GROUP ]]; then
        echo 0 >"$PORT1/default_roce_tos" 2>/dev/null
        rmdir "$GROUP" 2>/dev/null
    fi
    return 0
}
trap qos_cleanup EXIT
trap 'exit 143' TERM

# ---------------------------------------------------------------- 1. configfs
# Everything seen is also said in the log, for the record.
had_cm=no had_cfgfs=no mounted=no
[[ -d /sys/module/rdma_cm ]] && had_cm=yes
[[ -d /sys/module/configfs ]] && had_cfgfs=yes
[[ -d /sys/module/rdma_cm ]] || modprobe rdma_cm
check "rdma_cm is loaded" test -d /sys/module/rdma_cm
check "configfs came with it (rdma_cm depends on it)" test -d /sys/module/configfs
is_mounted() {
    local _dev mnt type _
    while read -r _dev mnt type _; do
        [[ $mnt == "$CFG" && $type == configfs ]] && return 0
    done </proc/mounts
    return 1
}
is_mounted && mounted=yes
is_mounted || mount -t configfs none "$CFG"
check "configfs mounted at $CFG" is_mounted
echo "before the case: rdma_cm module loaded: $had_cm; configfs module: $had_cfgfs; configfs mounted at $CFG: $mounted"
check "configfs has rdma_cm's directory" test -d "$CFG/rdma_cm"
entries=("$CFG"/rdma_cm/*)
[[ -e ${entries[0]} ]] || entries=("(empty)")
echo "$CFG/rdma_cm before mkdir: ${entries[*]##*/}"
check "no rxe0 group before mkdir (groups appear only when made)" test ! -e "$GROUP"
check "mkdir $GROUP" mkdir "$GROUP"
entries=("$GROUP"/* "$GROUP"/ports/* "$PORT1"/*)
echo "the group holds: ${entries[*]#"$CFG"/}"
read -r tos0 <"$PORT1/default_roce_tos"
read -r mode0 <"$PORT1/default_roce_mode"
echo "fresh group: default_roce_tos '$tos0', default_roce_mode '$mode0'"
# The number written is what the kernel keeps; a value beyond a byte is refused.
write_tos() { echo "$1" >"$PORT1/default_roce_tos"; }
check "write default_roce_tos 96" write_tos 96
expect_out "default_roce_tos reads back 96" '^96$' cat "$PORT1/default_roce_tos"
expect_out "default_roce_mode reads 'RoCE v2'" '^RoCE v2$' cat "$PORT1/default_roce_mode"
expect_rc 1 "default_roce_tos 256 is refused" write_tos 256
expect_out "... and the 96 stays" '^96$' cat "$PORT1/default_roce_tos"

# ---------------------------------------------------------------- 2. the wire, counted by tc
# veth0's egress carries what rxe0 sends (rxe routes by its own netdev even to an address
# of this kernel). First a u32 filter takes the CM's own packets (BTH destination QP 1, the
# 24 bits at byte 32 of an option-less IPv4 header + UDP) out of the count: the kernel's CM
# answers a duplicate message (a retransmitted DREQ, REP) with an address handle built from
# the received packet, and for RoCE v2 over IPv4 that handle's traffic class is 0
# (ib_init_ah_attr_from_wc reads it from the GRH area, which holds no GRH for IPv4), so
# under a slow guest one such packet can leave with DSCP 0 while every data packet carries
# the class asked for. The QPs the traffic class is about are the data QPs; QP 1's packets
# are counted and logged, not judged. Then four flower filters: the DSCPs 18 (TOS 0x48),
# 24 (TOS 96) and 0, each counting and continuing to the next filter (`action continue`),
# then every other RoCE v2 packet.
tc_arm() {
    tc qdisc del dev veth0 clsact 2>/dev/null
    tc -batch - <<'EOF'
qdisc add dev veth0 clsact
filter add dev veth0 egress pref 5 protocol ip u32 match ip protocol 17 0xff match ip dport 4791 0xffff match u32 0x00000001 0x00ffffff at 32 action pass
filter add dev veth0 egress pref 10 protocol ip flower ip_proto udp dst_port 4791 ip_tos 0x48/0xfc action continue
filter add dev veth0 egress pref 20 protocol ip flower ip_proto udp dst_port 4791 ip_tos 0x60/0xfc action continue
filter add dev veth0 egress pref 30 protocol ip flower ip_proto udp dst_port 4791 ip_tos 0x00/0xfc action continue
filter add dev veth0 egress pref 40 protocol ip flower ip_proto udp dst_port 4791 action pass
EOF
}
# tc_count NAME: the packets each filter counted, in N18 N24 N0 NALL (data QPs) and NQP1 (the
# JSON in tc-NAME.json). A u32 filter shows as two entries of one pref (its hash table, with
# no actions, and the filter), so the counts are summed by pref.
tc_count() {
    N18=- N24=- N0=- NALL=- NQP1=-
    tc -s -j filter show dev veth0 egress >"$RESULTS/tc-$1.json" || return 1
    read -r N18 N24 N0 NALL NQP1 < <(jq -r '[.[] | select(.options)] | group_by(.pref)
        | map({key: (.[0].pref | tostring), value: ([.[].options.actions[]?.stats.packets // 0] | add // 0)})
        | from_entries
        | "\(.["10"] // "-") \(.["20"] // "-") \(.["30"] // "-") \(.["40"] // "-") \(.["5"] // "-")"' "$RESULTS/tc-$1.json")
    echo "tc on veth0 egress after $1: data QPs: DSCP 18: $N18, DSCP 24: $N24, DSCP 0: $N0, every UDP 4791: $NALL; QP 1 (CM): $NQP1"
}
positive() { [[ $1 =~ ^[0-9]+$ ]] && (($1 > 0)); }
# wire NAME DSCP_WANTED: the counts say every data-QP RoCE v2 packet rxe0 sent carried that DSCP.
wire() {
    local name=$1 want=$2 n
    case $want in 18) n=$N18 ;; 24) n=$N24 ;; 0) n=$N0 ;; esac
    check "$name: tc counted RoCE v2 packets on veth0 ($NALL)" positive "$NALL"
    check "$name: every one carried DSCP $want ($n of $NALL)" test "$n" = "$NALL"
    [[ $want == 18 ]] || check "$name: none carried DSCP 18 ($N18)" test "$N18" = 0
    [[ $want == 24 ]] || check "$name: none carried DSCP 24 ($N24)" test "$N24" = 0
    [[ $want == 0 ]] || check "$name: none carried DSCP 0 ($N0)" test "$N0" = 0
}

check "clsact, a QP 1 filter and four flower filters on veth0 egress" tc_arm
tc_count armed
check "the filters start at zero" test "$N18 $N24 $N0 $NALL $NQP1" = "0 0 0 0 0"

# 2a. pingpong --tclass 0x48 (the TCP exchange): server on rxe1, client on rxe0.
PP_PORT=$((PP_PORT + 1))
bg_server tclass-srv "$R" -j pingpong -d rxe1 -g 1 -p "$PP_PORT" -n 20
srv=$BG_PID
check "pingpong server on rxe1 listens" wait_listen "$PP_PORT" 15
expect_rc 0 "pingpong -d rxe0 --tclass 0x48 -n 20: exit 0" \
    "$R" -j pingpong -d rxe0 -g 1 -p "$PP_PORT" -n 20 --tclass 0x48 192.168.77.2
cp "$LAST_STDOUT" "$RESULTS/tclass-cli.json"
check "pingpong --tclass 0x48: the report says tclass 72" jqf '.ok == true and .qos.tclass == 72' "$RESULTS/tclass-cli.json"
wait_pid_timeout "$srv" 30 >/dev/null
tc_count tclass
wire "pingpong --tclass 0x48" 18

# 2b. pingpong --cm with no traffic class: rdma_cm's default for rxe0, 96 from configfs.
# start_cm_server NAME: an rdmactl --cm server on rxe1, in $spid, once it listens.
start_cm_server() {
    PP_PORT=$((PP_PORT + 1))
    bg_start "$1" "$R" -j pingpong --cm -d rxe1 --bind 192.168.77.2 -p "$PP_PORT" --timeout 10
    spid=$BG_PID
    wait_line "$RESULTS/$1.err" '^listening on' 15 "$spid"
}
cm_run() { # cm_run NAME: tc re-armed, a --cm server on rxe1 and a client on rxe0
    check "$1: tc filters re-armed" tc_arm
    check "$1: --cm server on rxe1 listens" start_cm_server "$1-srv"
    expect_rc 0 "$1: pingpong --cm -d rxe0 -n 20 (no --tclass): exit 0" \
        "$R" -j pingpong --cm 192.168.77.2 -p "$PP_PORT" -d rxe0 -n 20
    cp "$LAST_STDOUT" "$RESULTS/$1-cli.json"
    check "$1: the client ran on rxe0" jqf '.ok == true and .connection.device == "rxe0"' "$RESULTS/$1-cli.json"
    wait_pid_timeout "$spid" 20 >/dev/null
    tc_count "$1"
}
cm_run cm-96
wire "pingpong --cm, default_roce_tos 96" 24

# 2c. Stock librdmacm applications, which set no TOS either. Their servers' stdout is a
# buffered file, so readiness is their cm_id in LISTEN (`rdma resource show cm_id`).
wait_cm_listen() {
    local deadline=$((SECONDS + 20))
    until rdma resource show cm_id | grep -Eq "state LISTEN .*src-addr [0-9.]+:$1 "; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}
# rping binds the client to rxe0's address (-I), so its QP is on rxe0 and its packets leave
# through veth0.
if command -v rping >/dev/null; then
    check "rping: tc filters re-armed" tc_arm
    PP_PORT=$((PP_PORT + 1))
    bg_server rping-srv rping -s -a 192.168.77.2 -p "$PP_PORT" -C 10
    rsrv=$BG_PID
    check "rping server on rxe1 listens" wait_cm_listen "$PP_PORT"
    expect_rc 0 "rping -c -I 192.168.77.1 -C 10 -V: exit 0" \
        rping -c -a 192.168.77.2 -I 192.168.77.1 -p "$PP_PORT" -C 10 -V
    wait_pid_timeout "$rsrv" 20 >/dev/null
    tc_count rping
    wire "rping (librdmacm, no TOS), default_roce_tos 96" 24
else
    skip_here "rping (rdmacm-utils) is not installed"
fi
# perftest's rdma_cm mode (-R, no -T). perftest 4.5-0.17 takes --source_ip but does not bind
# its -R cm_id to it, and a cm_id bound to nothing resolves 192.168.77.2, an address of this
# kernel, onto rxe1 itself: both QPs on one GID, which rxe loops back inside the driver (no
# netdev sees a packet). For its run the local table's rule moves from pref 0 to 100, behind
# one that sends this host's own lookups for 192.168.77.2 (iif lo) through veth0 (table 77):
# the CM resolves it onto rxe0, while packets arriving on veth1 still meet the local table.
via_veth0() {
    ip -force -batch - <<'EOF'
route add 192.168.77.2/32 dev veth0 src 192.168.77.1 table 77
rule add pref 50 iif lo to 192.168.77.2/32 table 77
rule add pref 100 table local
rule del pref 0 table local
EOF
}
if command -v ib_send_bw >/dev/null; then
    check "ib_send_bw -R: tc filters re-armed" tc_arm
    check "ib_send_bw -R: this host's lookups for 192.168.77.2 go through veth0" via_veth0
    expect_out "ip route get 192.168.77.2: dev veth0 src 192.168.77.1" 'dev veth0 .*src 192\.168\.77\.1' ip route get 192.168.77.2
    PP_PORT=$((PP_PORT + 1))
    bg_server perftest-srv ib_send_bw -R -d rxe1 -p "$PP_PORT" -n 100 -s 1024
    psrv=$BG_PID
    if check "ib_send_bw -R server listens" wait_cm_listen "$PP_PORT"; then
        expect_rc 0 "ib_send_bw -R -d rxe0 -n 100: exit 0" \
            ib_send_bw -R -d rxe0 -p "$PP_PORT" -n 100 -s 1024 192.168.77.2
        cp "$LAST_OUT" "$RESULTS/perftest-cli.out"
        wait_pid_timeout "$psrv" 20 >/dev/null
        tc_count perftest
        # The first GID line is the client's own.
        expect_out "ib_send_bw -R: the client's QP is on rxe0 (GID ::ffff:192.168.77.1)" \
            '^ *GID: .*:255:255:192:168:77:01 *$' sed -n '0,/GID:/{/GID:/p}' "$RESULTS/perftest-cli.out"
        check "ib_send_bw -R: the client reported a result" grep -Eq '^ *1024 +100 ' "$RESULTS/perftest-cli.out"
        wire "ib_send_bw -R, default_roce_tos 96" 24
    else
        kill "$psrv" 2>/dev/null
    fi
    via_veth0_undo
    expect_out "the rules are back: local at pref 0, no pref 50 or 100, table 77 empty" '^rules ok$' \
        bash -c '[[ $(ip rule show pref 0) == *"lookup local"* && -z $(ip rule show pref 50) && -z $(ip rule show pref 100) && -z $(ip route show table 77) ]] && echo rules ok; ip rule show'
else
    skip_here "ib_send_bw (perftest) is not installed"
fi

# ---------------------------------------------------------------- 3. rdmactl qos
# What `rdmactl qos` must say at each point: qos_96 with the group at 96 (here), qos_rmdir
# after a bare rmdir and qos_default with 0 written and the group removed (2d). Each check is
# a step of its own.
qos_96() {
    expect_rc 0 "qos rxe0/1 -j (default 96): exit 0" "$R" qos rxe0/1 -j
    cp "$LAST_STDOUT" "$RESULTS/qos-96.json"
    check "qos -j: rxe0/1 on veth0, MTU 1500, active MTU 1024" \
        jqf 'any(.ports[]; .device == "rxe0" and .port == 1 and .netdev == "veth0" and .netdev_mtu == 1500 and .active_mtu == 1024)' \
        "$RESULTS/qos-96.json"
    check "qos -j: cm_default of rxe0/1 is TOS 96, RoCE v2, read from configfs" \
        jqf --arg g "$GROUP" 'any(.ports[]; .device == "rxe0" and .port == 1 and .cm_default.state == "read"
            and .cm_default.value.tos == 96 and .cm_default.value.mode == "RoCE v2"
            and (.cm_default.value.source.configfs | type == "string" and startswith($g)))' "$RESULTS/qos-96.json"
    check "qos -j: a chain for rxe0/1 with tclass 96, DSCP 24, from cm_default" \
        jqf 'any(.ports[]; .device == "rxe0" and .port == 1
            and any(.chains[]?; .tclass == 96 and .dscp == 24 and any(.sources[]; . == "cm_default")))' "$RESULTS/qos-96.json"
    check "qos -j: DCB of rxe0/1 is not_exposed (veth has no DCB operations)" \
        jqf 'any(.ports[]; .device == "rxe0" and .port == 1 and .dcb.state == "not_exposed" and (.dcb.value | type == "string" and length > 0))' \
        "$RESULTS/qos-96.json"
    check "qos -j: a qos-not-manageable finding that names rxe0/1" \
        jqf 'any(.findings[]; .code == "qos-not-manageable" and (tostring | test("rxe0")))' "$RESULTS/qos-96.json"
    check "qos -j: no finding is warn or fail on veth" \
        jqf 'all(.findings[]; (.severity // "info") as $s | $s != "warn" and $s != "fail")' "$RESULTS/qos-96.json"

    expect_rc 0 "qos rxe0/1 (text): exit 0" "$R" qos rxe0/1
    cp "$LAST_OUT" "$RESULTS/qos-96.txt"
    expect_out "qos text: rxe0/1's default TOS 96" '(^|[^0-9])96([^0-9]|$)' cat "$RESULTS/qos-96.txt"
    expect_out "qos text: DSCP 24" 'DSCP 24([^0-9]|$)' cat "$RESULTS/qos-96.txt"
    expect_out "qos text: DCB could not be read" 'DCB.*(not (be )?read|cannot be read|could not|not exposed|no DCB)|(not (be )?read|not exposed|no DCB).*DCB' \
        cat "$RESULTS/qos-96.txt"
    expect_no_out "qos text: PFC is never called ok" '^ok .*(PFC|pfc)' cat "$RESULTS/qos-96.txt"

    expect_rc 0 "qos rxe0/1 --tclass 0x48 -j: exit 0" "$R" qos rxe0/1 --tclass 0x48 -j
    cp "$LAST_STDOUT" "$RESULTS/qos-flag.json"
    check "qos --tclass 0x48 -j: a chain with tclass 72, DSCP 18, source flag" \
        jqf 'any(.ports[]; .device == "rxe0" and .port == 1
            and any(.chains[]?; .tclass == 72 and .dscp == 18 and any(.sources[]; . == "flag")))' "$RESULTS/qos-flag.json"

    # The interval view on a veth: pause counts for 8 priorities (none counted), no finding.
    expect_rc 0 "qos rxe0/1 --interval 0.5 -j: exit 0" "$R" qos rxe0/1 --interval 0.5 -j
    cp "$LAST_STDOUT" "$RESULTS/qos-interval.json"
    check "qos --interval -j: rxe0/1 with 8 priorities of pause counts, no finding" \
        jqf '.ports[0].device == "rxe0" and (.ports[0].pauses | length) == 8 and (.findings | length) == 0' \
        "$RESULTS/qos-interval.json"

    # Every port of the plain VM: exit 0, nothing to warn about.
    expect_rc 0 "qos (every port): exit 0" "$R" qos
    cp "$LAST_OUT" "$RESULTS/qos-all.txt"
    expect_no_out "qos (every port): no warn or FAIL line" '^(warn|FAIL) ' cat "$RESULTS/qos-all.txt"
    expect_rc 0 "qos -j (every port): exit 0" "$R" qos -j
    cp "$LAST_STDOUT" "$RESULTS/qos-all.json"
    check "qos -j (every port): rxe0/1 and rxe1/1, no warn or fail finding" \
        jqf '([.ports[] | "\(.device)/\(.port)"] | index("rxe0/1") != null and index("rxe1/1") != null)
            and all(.findings[]; (.severity // "info") as $s | $s != "warn" and $s != "fail")' "$RESULTS/qos-all.json"

    # ethtool parity: every `ethtool -S veth0` statistic is in qos's ethtool stats, by name;
    # a value that did not move between two ethtool reads around qos (peer_ifindex, the XDP
    # counters of a veth without XDP) is equal, one that moved lies between the two reads.
    ethtool -S veth0 >"$RESULTS/ethtool-before.txt"
    "$R" qos rxe0/1 -j >"$RESULTS/qos-ethtool.json"
    ethtool -S veth0 >"$RESULTS/ethtool-after.txt"
    check "qos -j: ethtool of rxe0/1 was read" \
        jqf 'any(.ports[]; .device == "rxe0" and .ethtool.state == "read" and (.ethtool.value.stats | length) > 0)' \
        "$RESULTS/qos-ethtool.json"
    expect_out "qos -j: every ethtool -S veth0 statistic, by name and value" '^parity ok' \
        ethtool_parity "$RESULTS/ethtool-before.txt" "$RESULTS/qos-ethtool.json" "$RESULTS/ethtool-after.txt"
}
# ethtool_parity BEFORE QOS_JSON AFTER: "parity ok" when rxe0/1's ethtool stats in QOS_JSON
# are `ethtool -S`'s (the helpers run commands with stdin from /dev/null: the script is a
# here-document inside this function).
ethtool_parity() {
    python3 - "$@" <<'PY'
import json, sys

def ethtool(path):
    stats = {}
    for line in open(path):
        name, sep, value = line.strip().rpartition(": ")
        if sep and value.lstrip("-").isdigit():
            stats[name] = int(value)
    return stats

before, after = ethtool(sys.argv[1]), ethtool(sys.argv[3])
doc = json.load(open(sys.argv[2]))
port = next(p for p in doc["ports"] if p["device"] == "rxe0" and p["port"] == 1)
ours = {n: v for n, v in port["ethtool"]["value"]["stats"]}
bad = []
if set(before) != set(ours):
    bad.append(f"names differ: only ethtool {sorted(set(before) - set(ours))}, only qos {sorted(set(ours) - set(before))}")
for name, b in before.items():
    a, v = after.get(name, b), ours.get(name)
    if v is None:
        continue
    if (a == b and v != b) or not (min(a, b) <= v <= max(a, b)):
        bad.append(f"{name}: ethtool {b}..{a}, qos {v}")
print(f"{len(before)} statistics: {', '.join(f'{n}={v}' for n, v in before.items())}")
print("parity ok" if not bad else "parity broken: " + "; ".join(bad))
PY
}
qos_default() {
    expect_rc 0 "qos rxe0/1 -j (no group): exit 0" "$R" qos rxe0/1 -j
    cp "$LAST_STDOUT" "$RESULTS/qos-default.json"
    check "qos -j, no configfs group: cm_default of rxe0/1 is TOS 0, read through a group made for the read" \
        jqf 'any(.ports[]; .device == "rxe0" and .port == 1 and .cm_default.state == "read"
            and .cm_default.value.tos == 0 and (.cm_default.value.source.configfs_probed | type == "string"))' "$RESULTS/qos-default.json"
    check "qos removed the group it made" test ! -e "$GROUP"
    check "qos -j, no configfs group: the chain from cm_default is tclass 0, DSCP 0" \
        jqf 'any(.ports[]; .device == "rxe0" and .port == 1
            and any(.chains[]?; .tclass == 0 and .dscp == 0 and any(.sources[]; . == "cm_default")))' "$RESULTS/qos-default.json"
}
# After a bare rmdir the group is gone but the kernel still applies 96 (2d): qos must not
# claim the kernel's default 0 as read, which is what the wire disproves. It may read the
# kept value (making the group reads it), or say it could not be read; either way not 0.
qos_rmdir() {
    expect_rc 0 "qos rxe0/1 -j (bare rmdir): exit 0" "$R" qos rxe0/1 -j
    cp "$LAST_STDOUT" "$RESULTS/qos-rmdir.json"
    check "qos -j after a bare rmdir: cm_default of rxe0/1 is the 96 the kernel kept, read through a group made for the read" \
        jqf 'any(.ports[]; .device == "rxe0" and .port == 1 and .cm_default.state == "read"
            and .cm_default.value.tos == 96 and (.cm_default.value.source.configfs_probed | type == "string"))' "$RESULTS/qos-rmdir.json"
    check "qos removed the group it made" test ! -e "$GROUP"
    expect_out "qos text after a bare rmdir: 96, and how it was read" 'default_roce_tos 96 .*created for the read and removed' "$R" qos rxe0/1
}
qos_96

# ---------------------------------------------------------------- 2d. back to the kernel's default
# Removing the group alone does not give the kernel's default back: the value lives in
# rdma_cm's device state (cma_dev->default_roce_tos), which only removing the RDMA device
# frees. The wire still carries 96 after a bare rmdir, and a group made again reads 96.
check "rmdir $GROUP (default still 96)" rmdir "$GROUP"
check "the group is gone" test ! -e "$GROUP"
cm_run cm-rmdir
wire "pingpong --cm after a bare rmdir: the kernel still applies 96" 24
qos_rmdir
check "mkdir the group again" mkdir "$GROUP"
expect_out "the group made again reads default_roce_tos 96 (what the kernel kept)" '^96$' cat "$PORT1/default_roce_tos"
check "write default_roce_tos 0" write_tos 0
expect_out "default_roce_tos reads back 0" '^0$' cat "$PORT1/default_roce_tos"
check "rmdir $GROUP (default 0)" rmdir "$GROUP"
cm_run cm-0
wire "pingpong --cm, default back at 0" 0

qos_default

# ---------------------------------------------------------------- 4. clean-up
qos_cleanup
check "no qdisc left on veth0's egress" bash -c '! tc qdisc show dev veth0 | grep -q clsact'
check "no rdma_cm group left" test ! -e "$GROUP"
