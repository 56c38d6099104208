# vm-timeout: 300
# A device being deleted (issue 36, item 8): `rdma link delete rxe1` while a process holds
# rxe1 open blocks in the kernel; every command names the pending removal and the holder,
# and none says "load ib_uverbs" (it is loaded) or "no device 'rxe1'" (sysfs lists it).
#
# Measured here first (Debian 12, kernel 6.1.0-56-amd64, rdma_rxe), with ibv_rc_pingpong
# and an rdmactl pingpong server each holding rxe1 while waiting for a client:
# - `rdma link delete rxe1` blocks in ib_uverbs_remove_one (wchan; stack nldev_dellink →
#   ib_unregister_device_and_put → disable_device → remove_client_context →
#   ib_uverbs_remove_one): rxe has no disassociate, so uverbs waits for every open file.
# - /sys/class/infiniband/rxe1 stays (ports/1/state still "4: ACTIVE"); uverbs1 is gone from
#   /sys/class/infiniband_verbs and /dev/infiniband.
# - `rdma dev`, `rdma link` and `rdma res show` (qp, cq, pd, ctx) list only rxe0 at once:
#   the core clears DEVICE_REGISTERED before it waits, so RDMA netlink's resource tracking,
#   which named both holders (ctx pid 172 ibv_rc_pingpong, pid 173 rdmactl) before the
#   delete, no longer answers for rxe1. Netlink itself stays responsive.
# - The holders' /proc/PID/fd show "/dev/infiniband/uverbs1 (deleted)", and their maps the
#   uverbs1 mmaps "(deleted)".
# - ibv_devices lists rxe0 only; `ibv_devinfo -d rxe1`: "IB device 'rxe1' wasn't found".
# - Before the fix: doctor "FAIL uverbs rxe1 no user-space verbs node … fix: load ib_uverbs
#   (modprobe ib_uverbs)"; selftest/pingpong -d rxe1 "no device 'rxe1'; devices: rxe0"
#   (exit 3); check -d rxe1 blamed the route ("leaves through a netdev with no RDMA
#   device"); ports blamed a missing provider library.
# - Killing the holders ends the delete within 0.3 s; `rdma link add` brings rxe1 back.

command -v ibv_rc_pingpong >/dev/null || skip "no ibv_rc_pingpong"
port=18640
bg_start holder ibv_rc_pingpong -d rxe1 -g 1 -p "$port"
holder=$BG_PID
check "the holder opened rxe1 and listens" wait_listen "$port"

rdma link delete rxe1 >"$RESULTS/delete.out" 2>&1 &
del=$!
# Whatever stops this case, the holder goes, the delete ends and rxe1 comes back as the
# harness made it.
cleanup() {
    kill "$holder" 2>/dev/null
    wait "$del" 2>/dev/null
    [[ -e /sys/class/infiniband/rxe1 ]] || rdma link add rxe1 type rxe netdev veth1
}
trap cleanup EXIT

# The delete has reached uverbs once no uverbs entry names rxe1.
uverbs_dropped() {
    local i d
    for i in {1..100}; do
        local mapped=0
        for d in /sys/class/infiniband_verbs/uverbs*; do
            [[ -r $d/ibdev && $(<"$d/ibdev") == rxe1 ]] && mapped=1
        done
        ((mapped)) || return 0
        sleep 0.1
    done
    return 1
}
check "uverbs dropped rxe1" uverbs_dropped
check "sysfs still lists rxe1" test -d /sys/class/infiniband/rxe1
check "the delete is blocked" kill -0 "$del"

TRUE="rdma link delete / driver unbind pending: rxe1 is being removed; held by pid $holder \\(ibv_rc_pingpong\\); the removal finishes when they exit"
HELD="pid $holder \\(ibv_rc_pingpong, \`ibv_rc_pingpong -d rxe1 -g 1 -p $port\`\\): /proc/$holder/fd/[0-9]+ -> /dev/infiniband/uverbs[0-9]+ \\(deleted\\)"
NETLINK="RDMA netlink's device dump lists rxe0, not rxe1"
FIX="stop the processes holding it \\(\`kill $holder\`\\)"
# The words the device's absence from libibverbs used to suggest.
FALSE="load ib_uverbs|modprobe ib_uverbs|no device 'rxe1'|no provider library|no RDMA device on it|cannot resolve a path"

# --- doctor: one finding for rxe1, with the evidence that decided it
expect_rc 1 "doctor fails" "$RDMACTL" doctor
cp "$LAST_OUT" "$RESULTS/doctor.txt"
expect_out "doctor: device-removing names the removal and the holder" \
    "^FAIL +device-removing +rxe1 +$TRUE" cat "$RESULTS/doctor.txt"
expect_out "doctor: the holder's deleted node" "evidence: +$HELD" cat "$RESULTS/doctor.txt"
expect_out "doctor: netlink no longer lists rxe1" "evidence: +$NETLINK" cat "$RESULTS/doctor.txt"
expect_out "doctor: ib_uverbs ruled out" "evidence: +ib_uverbs is loaded .* no /sys/class/infiniband_verbs/\\*/ibdev names rxe1" cat "$RESULTS/doctor.txt"
expect_out "doctor: the fix stops the holder" "fix: +$FIX" cat "$RESULTS/doctor.txt"
expect_no_out "doctor: no false cause" "$FALSE" cat "$RESULTS/doctor.txt"
expect_out "doctor: one failure" ', 1 failure\(s\)$' cat "$RESULTS/doctor.txt"

# --- selftest and pingpong -d rxe1: explained, exit 1 (an unusable device), at once
expect_rc 1 "selftest -d rxe1 exits 1" "$RDMACTL" selftest -d rxe1 --timeout 5
cp "$LAST_OUT" "$RESULTS/selftest.txt"
expect_out "selftest: why names the removal and the holder" "why: +$TRUE" cat "$RESULTS/selftest.txt"
expect_out "selftest: seen the deleted node" "seen: +$HELD" cat "$RESULTS/selftest.txt"
expect_out "selftest: fix" "fix: +$FIX" cat "$RESULTS/selftest.txt"
expect_no_out "selftest: no false cause" "$FALSE" cat "$RESULTS/selftest.txt"

expect_rc 1 "pingpong -d rxe1 exits 1" \
    "$RDMACTL" pingpong -d rxe1 -g 1 --timeout 5 -p 18641 192.168.77.1
cp "$LAST_OUT" "$RESULTS/pingpong.txt"
expect_out "pingpong: why names the removal and the holder" "why: +$TRUE" cat "$RESULTS/pingpong.txt"
expect_no_out "pingpong: no false cause" "$FALSE" cat "$RESULTS/pingpong.txt"

# --- check -d rxe1: the removal first, the kernel's choice not asked (the CM's ENODEV
# would blame the route)
expect_rc 1 "check -d rxe1 fails" "$RDMACTL" check -d rxe1 -g 1 --peer 192.168.77.1
cp "$LAST_OUT" "$RESULTS/check.txt"
expect_out "check: device-removing" "^FAIL +device-removing +rxe1 +$TRUE" cat "$RESULTS/check.txt"
expect_out "check: kernel choice not asked" "^info +kernel-choice +kernel's GID choice not asked: rxe1 is being removed" cat "$RESULTS/check.txt"
expect_no_out "check: no false cause" "$FALSE" cat "$RESULTS/check.txt"

# --- devices and ports: rxe1 listed, with a note naming the removal
expect_out "devices: the note names the removal" "^rdmactl: note: $TRUE" "$RDMACTL" devices
expect_no_out "devices: no false cause" "$FALSE" "$RDMACTL" devices
expect_out "ports: the note names the removal" "^rdmactl: note: $TRUE" "$RDMACTL" ports
expect_out "ports: the MTU note says why" "rxe1/1: ACTIVE MTU and MAX MTU unknown .*: libibverbs no longer lists rxe1: the kernel is removing it" \
    "$RDMACTL" ports
expect_no_out "ports: no false cause" "$FALSE" "$RDMACTL" ports

# --- the holder exits: the delete finishes, rxe1 comes back as the harness made it
kill "$holder"
expect_rc 0 "the delete finishes once the holder exits" wait_pid_timeout "$del" 30
check "rxe1 is gone from sysfs" test ! -e /sys/class/infiniband/rxe1
check "re-add rxe1 on veth1" rdma link add rxe1 type rxe netdev veth1
check "rxe1's GIDs are back" wait_gids 20
expect_no_out "no removal named once it is done" "being removed" "$RDMACTL" doctor
