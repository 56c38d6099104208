# shellcheck shell=bash
# vm-timeout: 300
CHECK_TIMEOUT=120
[[ $(hostname) == "(none)" || -z $(hostname) ]] && hostname vm
DEVS=(-d rxe0 -d rxe1)
N=2
TEST=(--deadline 40)
start_slurm() {
    local d=/tmp/slurm
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
if ! command -v srun >/dev/null || ! command -v munged >/dev/null; then
    skip_here "srun: slurm-wlm or munge is not installed"
elif start_slurm; then
    check "slurm: the one node is up" sinfo
    # The default rendezvous is the first host of the job's node list (localhost), port 18514.
    expect_rc 0 "srun clean: exit 0" srun -n $N --overcommit "$RDMACTL" fabric "${DEVS[@]}" "${TEST[@]}" -n 50
    expect_out "srun: Slurm placed the ranks" '^fabric: 4 of 4 ranks joined \(Slurm\)' cat "$LAST_OUT"
    expect_out "srun: clean verdict" '^verdict: clean' cat "$LAST_OUT"
else
    cp /tmp/slurm/*.log "$RESULTS/" 2>/dev/null
    check "slurm started (slurmctld, slurmd, munged: see their logs in the results)" false
fi


cp /tmp/slurm/*.log "$RESULTS/" 2>/dev/null
pkill slurmd; pkill slurmctld; pkill munged
