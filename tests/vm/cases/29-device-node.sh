# vm-timeout: 300
# A device node this user may not open (issue 36, item 7): rxe0's uverbs node chmod 000,
# then check, doctor, pingpong (and pingpong --cm, where the CM passes the refusal on as
# EPERM) and selftest run as nobody. Each names the node's mode and owner, the user it runs
# as, and EACCES; none blames the route, none says libibverbs skips the device (it lists
# it), and none guesses a container's cgroup or a udev rule where the mode explains the
# refusal (the guest's root has a /.dockerenv: doctor's own container finding says so).
# Then rdma_cm chmod 000 for check's kernel-choice path. The modes are
# put back at the end.

node=
for d in /sys/class/infiniband_verbs/uverbs*; do
    [[ $(<"$d/ibdev") == rxe0 ]] && node=/dev/infiniband/${d##*/}
done
[[ -c $node ]] || skip "no uverbs node for rxe0"
command -v setpriv >/dev/null || skip "no setpriv"
mode=$(stat -c %a "$node")
cm_mode=$(stat -c %a /dev/infiniband/rdma_cm)
# Later cases need both nodes as they were, whatever stops this one.
trap 'chgrp root "$node"; chmod "$mode" "$node"; chmod "$cm_mode" /dev/infiniband/rdma_cm' EXIT
# nobody, with the memlock limit lifted (root may raise the hard limit) so that nothing but
# the node can stop a run.
as_nobody() { (ulimit -l unlimited && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }
qnode=${node//\//\\/}
WHO='this process runs as uid 65534 \(nobody\), gid 65534 \(nogroup\), groups none'
NODE0="$qnode is mode 0000 owner root:root; $WHO"
# The guesses the old words made (issue 36): none holds where the mode explains the refusal.
GUESS='cgroup|container|udev rule is blocking|or a udev rule'

check "chmod 000 $node" chmod 000 "$node"

# --- check: the kernel-choice part names the node, not the route
expect_rc 1 "check as nobody fails" \
    as_nobody "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
cp "$LAST_OUT" "$RESULTS/check.txt"
expect_out "check: kernel-choice names the node's mode, owner, user and EACCES" \
    "^FAIL +kernel-choice +the kernel's GID choice could not be asked .*: $NODE0 .*open read-write fails with EACCES" \
    cat "$RESULTS/check.txt"
expect_out "check: the fix changes the mode" "fix: +\`chmod 0666 $qnode\`" cat "$RESULTS/check.txt"
expect_no_out "check: no route blamed" 'cannot resolve a path|check .?ip route get' cat "$RESULTS/check.txt"
expect_no_out "check: no cgroup, container or udev guess" "$GUESS" cat "$RESULTS/check.txt"

# --- doctor: one finding for the node, and no "skips"
expect_rc 1 "doctor as nobody fails" as_nobody "$RDMACTL" doctor
cp "$LAST_OUT" "$RESULTS/doctor.txt"
expect_out "doctor: the uverbs finding names mode, owner, user and EACCES" \
    "^FAIL +uverbs +rxe0 +$NODE0 .*open read-write fails with EACCES: libibverbs lists rxe0" \
    cat "$RESULTS/doctor.txt"
expect_out "doctor: the evidence is the stat, the ids and the open" \
    "evidence: +stat $qnode: mode 0000, owner 0 \\(root\\), group 0 \\(root\\)" cat "$RESULTS/doctor.txt"
expect_no_out "doctor: never 'libibverbs skips' a device it lists" 'skips rxe0|silently skips' cat "$RESULTS/doctor.txt"
# (doctor's own container finding may say the VM's root is a container's: /.dockerenv)
expect_no_out "doctor: no device cgroup or udev-rule guess" 'device cgroup|udev rule is blocking|or a udev rule' cat "$RESULTS/doctor.txt"
expect_out "doctor: one root cause, one failure" ', 1 failure\(s\)$' cat "$RESULTS/doctor.txt"

# --- pingpong: the server on rxe1 as root, the client on rxe0 as nobody
port=18529
bg_server server "$RDMACTL" pingpong -d rxe1 -g 1 -p "$port" -n 5
srv=$BG_PID
check "pingpong server listens" wait_listen "$port"
expect_rc 1 "pingpong client as nobody fails" \
    as_nobody "$RDMACTL" pingpong -d rxe0 -g 1 -p "$port" -n 5 --timeout 5 192.168.77.2
cp "$LAST_OUT" "$RESULTS/pingpong.txt"
expect_out "pingpong: why names mode, owner, user and EACCES" \
    "why: +$NODE0 .*open read-write fails with EACCES" cat "$RESULTS/pingpong.txt"
expect_out "pingpong: seen the open's errno" \
    "seen: +open\\($qnode, O_RDWR\\) failed with EACCES" cat "$RESULTS/pingpong.txt"
expect_out "pingpong: the fix changes the mode" "fix: +\`chmod 0666 $qnode\`" cat "$RESULTS/pingpong.txt"
expect_no_out "pingpong: no cgroup, container or udev guess" "$GUESS" cat "$RESULTS/pingpong.txt"
kill "$srv" 2>/dev/null
wait_pid_timeout "$srv" 10 >/dev/null 2>&1

# --- pingpong --cm: librdmacm opens the node on the way and the CM passes EPERM on
# (RDMA_CM_EVENT_ADDR_ERROR): the node is named, not the route
port=18530
bg_server cmserver "$RDMACTL" pingpong --cm -d rxe1 -p "$port" -n 5
srv=$BG_PID
check "pingpong --cm server listens" wait_line "$RESULTS/cmserver.out" 'listening on' 15 "$srv"
expect_rc 1 "pingpong --cm client as nobody fails" \
    as_nobody "$RDMACTL" pingpong --cm -d rxe0 -p "$port" -n 5 192.168.77.2
cp "$LAST_OUT" "$RESULTS/pingpong-cm.txt"
expect_out "pingpong --cm: why names mode, owner, user and EACCES" \
    "why: +$NODE0 .*open read-write fails with EACCES" cat "$RESULTS/pingpong-cm.txt"
expect_no_out "pingpong --cm: no route blamed" 'could not map|fix: .*ip route get' cat "$RESULTS/pingpong-cm.txt"
expect_no_out "pingpong --cm: no cgroup, container or udev guess" "$GUESS" cat "$RESULTS/pingpong-cm.txt"
kill "$srv" 2>/dev/null
wait_pid_timeout "$srv" 10 >/dev/null 2>&1

# --- selftest
expect_rc 1 "selftest as nobody fails" as_nobody "$RDMACTL" selftest -d rxe0 -g 1
cp "$LAST_OUT" "$RESULTS/selftest.txt"
expect_out "selftest: fails at open with EACCES" '^  FAIL +[0-9.]+ ms  open .*EACCES' cat "$RESULTS/selftest.txt"
expect_out "selftest: names mode, owner, user and EACCES" \
    "$NODE0 .*open read-write fails with EACCES" cat "$RESULTS/selftest.txt"
expect_no_out "selftest: no cgroup, container or udev guess" "$GUESS" cat "$RESULTS/selftest.txt"

# --- a node whose group may open it: the fix adds the user to that group
if getent group rdma >/dev/null; then
    check "chgrp rdma, chmod 660 $node" bash -c "chgrp rdma $node && chmod 660 $node"
    expect_out "doctor: group-readable node: add nobody to group rdma" \
        'fix: +add nobody to group rdma \(`usermod -aG rdma nobody`' as_nobody "$RDMACTL" doctor -d rxe0
    check "chgrp root $node" chgrp root "$node"
else
    skip_here "no rdma group: the group fix is not tried"
fi
check "restore $node's mode" chmod "$mode" "$node"

# --- rdma_cm refused: check's kernel choice names it
check "chmod 000 rdma_cm" chmod 000 /dev/infiniband/rdma_cm
expect_rc 1 "check as nobody with rdma_cm 000 fails" \
    as_nobody "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
expect_out "check: kernel-choice names rdma_cm's mode, owner and user" \
    "^FAIL +kernel-choice .*/dev/infiniband/rdma_cm is mode 0000 owner root:root; $WHO" cat "$LAST_OUT"
expect_no_out "check (rdma_cm): no cgroup or container guess" 'cgroup|container' cat "$LAST_OUT"
check "restore rdma_cm's mode" chmod "$cm_mode" /dev/infiniband/rdma_cm

# --- restored: nobody opens both again
expect_rc 0 "modes restored: check as nobody passes" \
    as_nobody "$RDMACTL" check -d rxe0 -g 1 --peer 192.168.77.2
