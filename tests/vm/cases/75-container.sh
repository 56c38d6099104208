# vm-timeout: 480
# doctor inside a container: each fault a runtime plants is named with the runtime's fix,
# and a healthy container is all ok.
#
# The container is built the way runc and crun build one, step by step, rather than with
# podman: a private mount namespace (`unshare -m`); a fresh tmpfs on /dev/infiniband that
# holds only the nodes passed in, each bind-mounted from the real one (what `--device` does
# for a rootless or a bind-mounting runtime); a fresh /run with Podman's marker
# /run/.containerenv; a fresh sysfs mounted read-only (unprivileged containers get that);
# RLIMIT_MEMLOCK set soft and hard (`--ulimit memlock=`, or the runtime's inherited default);
# CAP_IPC_LOCK out of the bounding set (Docker's default capabilities lack it, and root's
# effective set is recomputed from the bounding set at exec). The network namespace stays
# the initial one (`--network host`): rxe on 6.1 works only there. Building it by hand lets
# each fault be planted alone, and needs no image store in the guest's read-only root.

CTR=/tmp/ctr.sh
cat >"$CTR" <<'EOF'
#!/bin/bash
# Run "$@" as a container runtime would start it; see 75-container.sh. Settings come from
# CTR_NODES (nodes to pass in), CTR_MEMLOCK (bytes or unlimited), CTR_IPC_LOCK (1 keeps
# the capability) and CTR_NCCL_CONF (the image's /etc/nccl.conf).
set -eu
mount --make-rprivate /
saved=/tmp/ctr-ib.$$
mkdir -p "$saved"
mount --bind /dev/infiniband "$saved"
mount -t tmpfs -o mode=755,nosuid ctr-dev /dev/infiniband
for n in ${CTR_NODES-}; do
    touch "/dev/infiniband/$n"
    mount --bind "$saved/$n" "/dev/infiniband/$n"
done
umount "$saved"
mount -t tmpfs -o mode=755 ctr-run /run
printf 'engine="podman-emulated"\n' >/run/.containerenv
# A runtime mounts a fresh sysfs ro in the container's own network namespace; in the initial
# one the kernel refuses a second sysfs mount (EBUSY), so this one is made read-only in place.
mount -o remount,bind,ro /sys
if [[ -n ${CTR_NCCL_CONF-} ]]; then
    # The image's /etc: the host's, with the image's nccl.conf over it.
    mkdir -p /tmp/ctr-etc.$$/upper /tmp/ctr-etc.$$/work
    printf '%s\n' "$CTR_NCCL_CONF" >/tmp/ctr-etc.$$/upper/nccl.conf
    mount -t overlay ctr-etc -o lowerdir=/etc,upperdir=/tmp/ctr-etc.$$/upper,workdir=/tmp/ctr-etc.$$/work /etc
fi
cmd=(prlimit "--memlock=${CTR_MEMLOCK:-unlimited}:${CTR_MEMLOCK:-unlimited}" "$@")
if [[ ${CTR_IPC_LOCK-0} != 1 ]]; then
    cmd=(capsh --drop=cap_ipc_lock -- -c 'exec "$@"' ctr "${cmd[@]}")
fi
exec "${cmd[@]}"
EOF
chmod +x "$CTR"

# Fresh rxe devices: earlier cases take veth0 down and leave link_downed and resend counters
# that doctor rightly warns about; the healthy container here starts from zero counters.
rdma link delete rxe0 && rdma link delete rxe1
check "fresh rxe0 and rxe1" restore_net
for _port in rxe0 rxe1; do
    for ((_i = 0; _i < 100; _i++)); do
        [[ $(</sys/class/infiniband/$_port/ports/1/state) == *ACTIVE ]] && break
        sleep 0.2
    done
done
check "rxe0/1 and rxe1/1 ACTIVE again" bash -c '[[ $(</sys/class/infiniband/rxe0/ports/1/state) == *ACTIVE &&
    $(</sys/class/infiniband/rxe1/ports/1/state) == *ACTIVE ]]'

# Every node this host has, and rxe1's uverbs node, from sysfs.
ALL_NODES=
for n in /dev/infiniband/*; do ALL_NODES+="${n##*/} "; done
RXE1_UVERBS=
for d in /sys/class/infiniband_verbs/uverbs*; do
    [[ $(<"$d/ibdev") == rxe1 ]] && RXE1_UVERBS=${d##*/}
done
check "rxe1 has a uverbs node" test -n "$RXE1_UVERBS"
check "rdma_cm exists on the host" test -c /dev/infiniband/rdma_cm
SOME_NODES=${ALL_NODES/$RXE1_UVERBS /}

ctr() { # ctr NAME VAR=VALUE... -- rdmactl args: output in $RESULTS/NAME.out, status returned
    local name=$1
    shift
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" unshare -m "$CTR" "$@" >"$RESULTS/$name.out" 2>"$RESULTS/$name.err"
}
# A saved output read back in the case's shell: under TCG a `cat` costs seconds.
show() {
    local l
    local f=$RESULTS/$1.out
    [[ $1 == *-err ]] && f=$RESULTS/${1%-err}.err
    while IFS= read -r l || [[ -n $l ]]; do printf '%s\n' "$l"; done <"$f"
}
saw() { expect_out "$1" "$2" show "$3"; }
never() { expect_no_out "$1" "$2" show "$3"; }

# A healthy container: every node, memlock unlimited, no IPC_LOCK (Docker's default set).
expect_rc 0 "healthy container: doctor passes" ctr healthy "CTR_NODES=$ALL_NODES" -- "$RDMACTL" doctor
saw "healthy: the marker is named" '^info +container +host +running in a container' healthy
saw "healthy: every node opens" '^ok +device-nodes +host +every node of the 2 device\(s\) sysfs lists \(rxe0, rxe1\) opens read-write, rdma_cm too' healthy
saw "healthy: memlock unlimited fits a job" '^ok +job-memlock +host +locked memory is unlimited' healthy
saw "healthy: RDMA netns mode shared" '^ok +rdma-netns +host +RDMA namespace mode shared: every network namespace sees every device \(rxe0, rxe1\)' healthy
saw "healthy: rxe0's GIDs are on this namespace's veth0" '^ok +namespace-gids +rxe0/1 +GIDs of rxe0/1 on this namespace.s netdevs: GID index 0 \(RoCE v2, fe80::[0-9a-f:]+ on veth0\), GID index 1 \(RoCE v2, ::ffff:192\.168\.77\.1 on veth0\)' healthy
saw "healthy: read-only /sys is said, as info" '^info +sys-read-only +host' healthy
never "healthy: no failure or warning" '^(FAIL|warn) ' healthy
expect_rc 0 "healthy, -j" ctr healthy-j "CTR_NODES=$ALL_NODES" -- "$RDMACTL" -j doctor
json_has "healthy -j: no failure" "$RESULTS/healthy-j.out" fail=0
saw "healthy -j: the marker seen is the evidence" 'run/.containerenv exists \(engine podman-emulated\)' healthy-j
never "healthy -j: no Kubernetes marker claimed" 'KUBERNETES_SERVICE_HOST is set|Kubernetes pod' healthy-j
# The guest's root is the build host's / over 9p; where that is itself a Docker container,
# /.dockerenv is really there and doctor must say so, not hide it.
if [[ -e /.dockerenv ]]; then
    saw "healthy -j: the root's /.dockerenv is named too" '/\.dockerenv exists \(Docker\)' healthy-j
else
    never "healthy -j: no Docker marker claimed" 'dockerenv exists' healthy-j
fi

# rxe1's uverbs node not passed in: named, with --device for it and only it; the provider
# is not blamed.
expect_rc 1 "uverbs1 missing: doctor fails" ctr nouverbs "CTR_NODES=$SOME_NODES" -- "$RDMACTL" doctor
saw "uverbs1 missing: device-nodes names it and its effect" "^FAIL +device-nodes +host +1 of the [0-9]+ node\(s\) the devices sysfs lists need are not usable here \(/dev/infiniband/$RXE1_UVERBS\): libibverbs skips rxe1" nouverbs
saw "uverbs1 missing: the fix passes it in" "fix: pass the nodes in: .docker run. or .podman run. with .--device /dev/infiniband/$RXE1_UVERBS." nouverbs
never "uverbs1 missing: the nodes that are there are not in the fix" "--device /dev/infiniband/(rdma_cm|uverbs[^${RXE1_UVERBS#uverbs}])" nouverbs
saw "uverbs1 missing: the uverbs finding agrees" "^FAIL +uverbs +rxe1 +/dev/infiniband/$RXE1_UVERBS does not exist" nouverbs
never "uverbs1 missing: no provider failure (a wrong cause)" '^FAIL +provider' nouverbs
never "uverbs1 missing: rxe0 is not called missing" '^FAIL +uverbs +rxe0' nouverbs

# rdma_cm not passed in.
expect_rc 1 "rdma_cm missing: doctor fails" ctr nocm "CTR_NODES=${ALL_NODES/rdma_cm /}" -- "$RDMACTL" doctor
saw "rdma_cm missing: named with what breaks" '^FAIL +device-nodes +host +1 of .*\(/dev/infiniband/rdma_cm\): rdma_cm connections' nocm
saw "rdma_cm missing: --device rdma_cm" 'fix: .*--device /dev/infiniband/rdma_cm' nocm

# The runtime's default memlock (8 MiB) without CAP_IPC_LOCK.
expect_rc 1 "8 MiB memlock: doctor fails" ctr memlock "CTR_NODES=$ALL_NODES" CTR_MEMLOCK=8388608 -- "$RDMACTL" doctor
saw "8 MiB memlock: job-memlock names the limit and ENOMEM" '^FAIL +job-memlock +host +locked-memory limit 8 MiB without CAP_IPC_LOCK: enough for rdmactl.s tests, but an NCCL or UCX job fails in ibv_reg_mr with ENOMEM' memlock
saw "8 MiB memlock: evidence reads CapEff" 'evidence: CapEff lacks CAP_IPC_LOCK \(bit 14\)' memlock
saw "8 MiB memlock: the fix is --ulimit memlock=-1 or IPC_LOCK" 'fix: run the container with .--ulimit memlock=-1:-1.' memlock
saw "8 MiB memlock: what a job pins is stated" 'NCCL_BUFFSIZE, 4 MiB by default' memlock
never "8 MiB memlock: the nodes are fine" '^FAIL +device-nodes' memlock
# The finding is true: a real 16 MiB registration there fails (ibv_rc_pingpong registers its
# buffer before it waits for a client).
ctr memlock-reg "CTR_NODES=$ALL_NODES" CTR_MEMLOCK=8388608 -- ibv_rc_pingpong -d rxe0 -g 1 -s 16777216
saw "8 MiB memlock: ibv_reg_mr of 16 MiB really fails" "Couldn't register MR" memlock-reg-err
# The same limit with IPC_LOCK added: registration is not charged.
expect_rc 0 "8 MiB with IPC_LOCK: doctor passes" ctr memlock-cap "CTR_NODES=$ALL_NODES" CTR_MEMLOCK=8388608 CTR_IPC_LOCK=1 -- "$RDMACTL" doctor
saw "8 MiB with IPC_LOCK: ok, and why" '^ok +job-memlock +host +CAP_IPC_LOCK is held' memlock-cap
never "8 MiB with IPC_LOCK: no ENOMEM claimed" 'ENOMEM' memlock-cap
# With the capability the same registration succeeds: the server then waits for a client
# until the timeout ends it (124; a failed registration exits 1 at once). Its stdout is a
# buffered file lost to the kill, so the status is the evidence.
expect_rc 124 "8 MiB with IPC_LOCK: the 16 MiB registration succeeds and the server waits" \
    ctr memlock-cap-reg "CTR_NODES=$ALL_NODES" CTR_MEMLOCK=8388608 CTR_IPC_LOCK=1 -- timeout 4 ibv_rc_pingpong -d rxe0 -g 1 -s 16777216
never "8 MiB with IPC_LOCK: no registration failure" "Couldn't register MR" memlock-cap-reg-err

# An image's stale /etc/nccl.conf naming another host's HCA, then the environment winning.
if ctr conf "CTR_NODES=$ALL_NODES" "CTR_NCCL_CONF=NCCL_IB_HCA=mlx5_3" -- "$RDMACTL" doctor; [[ $(<"$RESULTS/conf.out") == *"nccl-conf"* ]]; then
    saw "nccl.conf: the baked-in NCCL_IB_HCA is named" '^warn +nccl-conf +host +/etc/nccl.conf sets NCCL_IB_HCA=mlx5_3' conf
    saw "nccl.conf: check --env's rule judges it" '^FAIL +env-nccl-ib-hca .*NCCL_IB_HCA=mlx5_3 selects no device on this host' conf
    expect_rc 0 "nccl.conf overridden by NCCL_IB_HCA=rxe0: doctor passes" ctr conf-env "CTR_NODES=$ALL_NODES" "CTR_NCCL_CONF=NCCL_IB_HCA=mlx5_3" -- env NCCL_IB_HCA=rxe0 "$RDMACTL" -j doctor
    saw "nccl.conf overridden: said so" 'NCCL_IB_HCA=mlx5_3, overridden by the environment.s NCCL_IB_HCA=rxe0' conf-env
    json_has "nccl.conf overridden: env-nccl-ib-hca ok" "$RESULTS/conf-env.out" code=env-nccl-ib-hca severity=ok
else
    skip_here "overlayfs over the 9p /etc did not mount: $(<"$RESULTS/conf.err")"
fi

# On the host: no marker, and what was looked at.
expect_rc 0 "host: doctor passes" "$RDMACTL" doctor
if [[ -e /.dockerenv ]]; then
    expect_out "host: the root's /.dockerenv is the only marker" '^info +container +host +running in a container' "$RDMACTL" doctor
    cp "$LAST_STDOUT" "$RESULTS/host.out"
    saw "host: /.dockerenv named" 'evidence: /\.dockerenv exists \(Docker\)' host
    never "host: no Podman marker outside the built container" 'containerenv exists' host
else
    expect_out "host: no container marker" '^ok +container +host +no container marker seen: judged as a host' "$RDMACTL" doctor
fi

# A pod's own network namespace in shared mode: the devices are seen, their GIDs' netdevs
# are not: no usable GID there.
check "add a pod namespace" ip netns add ctrpod
expect_rc 1 "pod netns: doctor fails" ip netns exec ctrpod "$RDMACTL" doctor
cp "$LAST_OUT" "$RESULTS/podns.out" # one copy, then read in the shell
saw "pod netns: shared mode still shows both devices" '^ok +rdma-netns +host +RDMA namespace mode shared: every network namespace sees every device \(rxe0, rxe1\)' podns
saw "pod netns: no usable GID for rxe0, named with its netdev" '^FAIL +namespace-gids +rxe0/1 +no usable GID here: every GID of rxe0/1 belongs to veth0, which this network namespace does not have' podns
check "delete the pod namespace" ip netns delete ctrpod

# `podman run --network none`: the container's own network AND PID namespaces, so /proc/1
# is the container's init, in the container's network namespace ("initial" by /proc/1),
# and a sysfs of that namespace. namespace-gids fails; no netdev finding is given about
# veth0, which this namespace cannot see; the fix names --network host.
expect_rc 1 "own network and PID namespace: doctor fails" env "CTR_NODES=$ALL_NODES" \
    unshare -m -n -p -f --mount-proc bash -c 'mount -t sysfs sysfs /sys && exec "$@"' ctr "$CTR" "$RDMACTL" doctor
cp "$LAST_OUT" "$RESULTS/nonet.out"
saw "network none: no usable GID for rxe0" '^FAIL +namespace-gids +rxe0/1 +no usable GID here: every GID of rxe0/1 belongs to veth0' nonet
saw "network none: the fix names --network host" 'fix: .*`podman run --network host`' nonet
saw "network none: veth0 said as not in this namespace" "^info +netns +rxe0/1 +veth0 is not in this process's network namespace" nonet
never "network none: no netdev finding about veth0" '^(warn|FAIL) +netdev ' nonet
never "network none: no 'ip addr add' for a netdev it cannot see" 'ip addr add <addr>/<len> dev veth0' nonet

# Exclusive mode: the host namespace owns both devices; a new namespace owns none.
set_mode() { # set_mode shared|exclusive: retries while a deleted namespace is still torn down
    local i
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        rdma system set netns "$1" 2>/dev/null && return 0
        sleep 0.5
    done
    rdma system set netns "$1"
}
if check "exclusive mode" set_mode exclusive; then
    expect_out "exclusive: the host namespace owns both" '^ok +rdma-netns +host +RDMA namespace mode exclusive: this network namespace owns rxe0, rxe1' "$RDMACTL" doctor
    check "add a pod namespace (exclusive)" ip netns add ctrpod
    expect_out "exclusive, nothing moved: named as a failure" '^FAIL +rdma-netns +host +RDMA namespace mode exclusive and no RDMA device was moved into this network namespace' \
        ip netns exec ctrpod "$RDMACTL" doctor
    cp "$LAST_OUT" "$RESULTS/exclusive.out"
    saw "exclusive: the fix moves a device into ctrpod" 'fix: on the host, move a device in: .rdma dev set <dev> netns ctrpod.' exclusive
    never "exclusive: shared is not claimed" 'namespace mode shared' exclusive
    check "delete the pod namespace (exclusive)" ip netns delete ctrpod
fi
check "shared mode restored" set_mode shared
expect_out "rdma system shows shared" 'netns shared' rdma system show
restore_net
