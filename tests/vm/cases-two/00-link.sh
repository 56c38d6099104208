# shellcheck shell=bash
# vm-timeout: 120
# The two-VM harness itself: the command channel answers, each guest has its own rxe device
# on eth0, and the virtual link carries IPv4 and IPv6 both ways.

check "the channel runs a command on B and returns its status" on_b true
expect_rc 3 "a command's exit status comes back from B" on_b bash -c 'exit 3'
expect_out "B's stdout comes back" "^$TWO_PEER_DEV\$" on_b bash -c 'ls /sys/class/infiniband'
expect_out "B's stderr comes back" '^to stderr$' on_b bash -c 'echo to stderr >&2'
expect_out "A has its own device $TWO_DEV, on eth0" "^link $TWO_DEV/1 state ACTIVE .*netdev eth0" rdma link show
expect_out "B has its own device $TWO_PEER_DEV, on eth0" "^link $TWO_PEER_DEV/1 state ACTIVE .*netdev eth0" on_b rdma link show
check "B's kernel answers with its boot id" on_b cat /proc/sys/kernel/random/boot_id
read -r b_boot <"$LAST_STDOUT"
read -r a_boot </proc/sys/kernel/random/boot_id
check "two kernels: B's boot id ($b_boot) differs from A's ($a_boot)" test "$b_boot" != "$a_boot"
# The host has no iputils ping; busybox's (the initramfs's) serves.
check "A reaches B over IPv4" busybox ping -c 2 -W 5 "$TWO_PEER_V4"
check "A reaches B over IPv6" busybox ping6 -c 2 -W 5 "$TWO_PEER_V6"
check "B reaches A over IPv4" on_b busybox ping -c 2 -W 5 "$TWO_V4"

# A background command on B: its pid, output and status.
bg_b sleeper bash -c 'echo started; sleep 30'
check "bg_b: B's pid is known" test -n "$B_PID"
check "bg_b: its output arrives" wait_line "$B_RESULTS/sleeper.out" '^started$' 10
check "bg_b: a signal from A reaches it" on_b kill -TERM "$B_PID"
expect_rc 143 "wait_b: its status (killed by SIGTERM)" wait_b sleeper 20
