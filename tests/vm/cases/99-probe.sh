# shellcheck shell=bash
# vm-timeout: 400
P=$RESULTS/probe.log
for i in $(seq 0 7); do ip link add px$i type veth peer name py$i; ip link set px$i up; ip link set py$i up; ip addr add 10.200.$i.1/24 dev px$i; ip addr add 10.201.$i.1/24 dev py$i; done
n=0
for i in $(seq 0 7); do for s in x y; do [ $n -ge 15 ] && break; rdma link add rxe$s$i type rxe netdev p$s$i; n=$((n+1)); done; done
sleep 4
ls /sys/class/infiniband | wc -l >>"$P"
TIMEFORMAT='%R'
t() { local name=$1; shift; for r in 1 2 3; do { time "$@" >/dev/null 2>&1; } 2>>"$RESULTS/t.$name"; done; echo "$name $(tr '\n' ' ' <"$RESULTS/t.$name")" >>"$P"; }
t rdma-link rdma link
t devices $RDMACTL devices
t ports $RDMACTL ports
t ports-j $RDMACTL -j ports
t gids-ip $RDMACTL gids --ip
t gids $RDMACTL gids
t doctor $RDMACTL doctor
t check $RDMACTL check -d rxe1 --peer 192.168.77.1
t ibv_devices ibv_devices
strace -f -c -o "$RESULTS/strace-ports" $RDMACTL ports >/dev/null 2>&1
strace -f -c -o "$RESULTS/strace-gids" $RDMACTL gids --ip >/dev/null 2>&1
strace -f -c -o "$RESULTS/strace-check" $RDMACTL check -d rxe1 --peer 192.168.77.1 >/dev/null 2>&1
strace -f -r -o "$RESULTS/strace-check-r" $RDMACTL check -d rxe1 --peer 192.168.77.1 >/dev/null 2>&1
head -30 "$RESULTS/strace-ports" >>"$P"
head -30 "$RESULTS/strace-gids" >>"$P"
head -30 "$RESULTS/strace-check" >>"$P"
restore_net
check "probe" true
