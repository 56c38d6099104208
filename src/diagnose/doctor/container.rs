//! Will a job's RDMA work from inside this container or pod: where doctor runs (the
//! markers seen), the device nodes passed in against the devices sysfs lists, locked memory
//! against what an NCCL or UCX job pins, `rdma system`'s namespace mode and what this
//! namespace sees, the RoCE GIDs of this namespace's netdevs, CmaTotal, a read-only /sys,
//! /etc/nccl.conf, and the NCCL/UCX variables as `check --env` reads them.

use super::{finding, short_list};
use crate::diagnose::device_node::describe_marker;
use crate::diagnose::doctor::host::human_bytes;
use crate::diagnose::env::{self, EnvTarget};
use crate::diagnose::gidselect::{self, Want};
use crate::model::codes;
use crate::model::container::{
    ContainerFacts, DevNode, Marker, NetnsMode, NodeKind, NodeState, RdmaNamespace, RdmaUcm,
};
use crate::model::device::{LinkLayer, PortState};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::doctor::{DoctorFacts, HostFacts};

/// Below this, an NCCL or UCX job fails to register its buffers: see `memlock_finding`.
const JOB_FAILS_BELOW: u64 = 64 << 20;
/// What a multi-GPU NCCL job can pin in host memory (the reasoning is in `job_pins`).
const JOB_MAY_PIN: u64 = 1 << 30;
/// What rdmactl's own tests register by default (`diagnose::doctor::PLANNED_REGISTRATION`).
const RDMACTL_PINS: u64 = 64 << 10;

/// Every container finding, in the order a person checks a pod: where am I, what was
/// passed in, what may I pin, what does my namespace see, what configuration is baked in.
pub fn container_findings(facts: &DoctorFacts, c: &ContainerFacts) -> Vec<Diagnostic> {
    let in_container = !c.markers.is_empty();
    let mut found = vec![where_finding(c)];
    found.extend(nodes_finding(&c.nodes, &c.markers, c.rdma_ucm.as_ref()));
    if let (true, Some(host)) = (in_container, &facts.host) {
        found.push(job_memlock_finding(host));
    }
    if let Some(ns) = &c.rdma_ns {
        found.push(netns_mode_finding(ns, facts, c));
    }
    if let Some(host) = &facts.host {
        found.extend(namespace_gid_findings(facts, host, c));
    }
    found.extend(cma_finding(c.cma_total));
    if in_container && c.sys_read_only == Some(true) {
        found.push(sys_read_only_finding());
    }
    found.extend(nccl_conf_finding(c));
    found.extend(env_findings(facts, c));
    found
}

/// Where doctor runs, with the marker that says so, or what was looked at.
pub fn where_finding(c: &ContainerFacts) -> Diagnostic {
    if c.markers.is_empty() {
        let f = finding(
            codes::CONTAINER,
            Subject::Host,
            Severity::Ok,
            "no container marker seen: judged as a host",
        );
        return c.looked_at.iter().fold(f, |f, l| f.evidence(l.clone()));
    }
    let kind = if c.markers.iter().any(Marker::is_kubernetes) {
        "a Kubernetes pod"
    } else {
        "a container"
    };
    let f = finding(
        codes::CONTAINER,
        Subject::Host,
        Severity::Info,
        format!("running in {kind}: the checks below judge what it was given"),
    );
    c.markers
        .iter()
        .fold(f, |f, m| f.evidence(describe_marker(m)))
}

fn node_line(n: &DevNode) -> String {
    let what = match (n.kind, &n.device) {
        (NodeKind::RdmaCm, _) => "librdmacm's node".to_string(),
        (NodeKind::Uverbs, Some(d)) => format!("verbs of {d}"),
        (NodeKind::Umad, Some(d)) => format!("MADs of {d}"),
        (_, None) => "?".into(),
    };
    match n.state {
        NodeState::Usable => format!("{} ({what}): access(R_OK|W_OK) = 0", n.path),
        NodeState::Missing => format!("{} ({what}): does not exist", n.path),
        NodeState::Denied(errno) => format!(
            "{} ({what}): access(R_OK|W_OK) failed with {}",
            n.path,
            crate::model::errno::errno_text(errno)
        ),
    }
}

/// Every node the devices sysfs lists need, against what this process can open. `ucm`:
/// whether rdma_ucm is loaded (`class/misc/rdma_cm`): a missing rdma_cm node is a module
/// to load on the host when it is not, and a node not passed in only when it is. A marker
/// proves only what it is: `/.dockerenv` alone is a file on the root filesystem, which a
/// VM or host built from a container image keeps, so its fix names the host's cause too.
pub fn nodes_finding(
    nodes: &[DevNode],
    markers: &[Marker],
    ucm: Option<&RdmaUcm>,
) -> Option<Diagnostic> {
    if nodes.is_empty() {
        return None;
    }
    let devices: Vec<String> = {
        let mut d: Vec<String> = nodes.iter().filter_map(|n| n.device.clone()).collect();
        d.dedup();
        d
    };
    let bad: Vec<&DevNode> = nodes
        .iter()
        .filter(|n| n.state != NodeState::Usable)
        .collect();
    let evidence = |f: Diagnostic| nodes.iter().fold(f, |f, n| f.evidence(node_line(n)));
    if bad.is_empty() {
        return Some(evidence(finding(
            codes::DEVICE_NODES,
            Subject::Host,
            Severity::Ok,
            format!(
                "every node of the {} device(s) sysfs lists ({}) opens read-write, rdma_cm too",
                devices.len(),
                short_list(&devices, 4)
            ),
        )));
    }
    // A uverbs node that exists and refuses this process is the uverbs finding's: it sets
    // the node's mode and owner against this process's ids. Said here too, it would be a
    // second verdict on one cause (and libibverbs does list such a device: it only stats
    // the node).
    let bad: Vec<&DevNode> = bad
        .into_iter()
        .filter(|n| !(n.kind == NodeKind::Uverbs && matches!(n.state, NodeState::Denied(_))))
        .collect();
    if bad.is_empty() {
        return None;
    }
    let needed: Vec<&&DevNode> = bad.iter().filter(|n| n.kind != NodeKind::Umad).collect();
    let names: Vec<String> = bad.iter().map(|n| n.path.clone()).collect();
    let mut effects = Vec::new();
    // libibverbs stats each device's node and leaves out a device whose node is missing.
    let skipped: Vec<String> = needed
        .iter()
        .filter(|n| n.kind == NodeKind::Uverbs)
        .filter_map(|n| n.device.clone())
        .collect();
    if !skipped.is_empty() {
        effects.push(format!(
            "libibverbs skips {} (sysfs lists it, ibv_get_device_list does not)",
            skipped.join(", ")
        ));
    }
    // rdma_cm's node is missing because rdma_ucm is not loaded: no runtime flag gives a
    // node the kernel never made.
    let unloaded = ucm.filter(|u| !u.loaded).filter(|_| {
        needed
            .iter()
            .any(|n| n.kind == NodeKind::RdmaCm && n.state == NodeState::Missing)
    });
    if needed.iter().any(|n| n.kind == NodeKind::RdmaCm) {
        effects.push(match unloaded {
            Some(u) => format!("rdma_cm connections (librdmacm, `--cm`, UCX's and NCCL's rdma_cm paths) fail: rdma_ucm is not loaded ({} does not exist)", u.path),
            None => "rdma_cm connections (librdmacm, `--cm`, UCX's and NCCL's rdma_cm paths) fail".into(),
        });
    }
    if bad.iter().any(|n| n.kind == NodeKind::Umad) {
        effects.push("ibstat and `rdmactl subnet` cannot send MADs (jobs do not need umad)".into());
    }
    // A host that never loaded rdma_ucm still runs verbs jobs: only a warning there. In a
    // container the node was simply not passed in.
    let severity = if needed.iter().any(|n| n.kind == NodeKind::Uverbs) {
        Severity::Fail
    } else if needed.is_empty() {
        Severity::Info
    } else if markers.is_empty() || unloaded.is_some() {
        Severity::Warn
    } else {
        Severity::Fail
    };
    let missing: Vec<&str> = bad
        .iter()
        .filter(|n| n.state == NodeState::Missing)
        .map(|n| n.path.as_str())
        .collect();
    let denied = bad.iter().any(|n| matches!(n.state, NodeState::Denied(_)));
    let only_rdma_cm = bad.iter().all(|n| n.kind == NodeKind::RdmaCm);
    let weak = !markers.is_empty() && markers.iter().all(|m| matches!(m, Marker::DockerEnv));
    let fix = if let (Some(_), true) = (unloaded, only_rdma_cm) {
        let mut fix = "load rdma_ucm on the host (kernel modules are the host's, for its containers too): `modprobe rdma_ucm`, and list it in /etc/modules-load.d/rdma.conf for the next boot; udev then creates /dev/infiniband/rdma_cm".to_string();
        if !markers.is_empty() {
            fix.push_str(
                "; a container started before that gets it with `--device /dev/infiniband/rdma_cm`",
            );
        }
        fix
    } else if markers.is_empty() {
        "udev creates these nodes (rdma-core's 90-rdma-*.rules): `modprobe ib_uverbs rdma_ucm ib_umad`, then check their modes (0666 for uverbs and rdma_cm)".to_string()
    } else {
        let devices_flags: Vec<String> = if missing.is_empty() {
            nodes
                .iter()
                .filter(|n| n.kind != NodeKind::Umad)
                .map(|n| format!("--device {}", n.path))
                .collect()
        } else {
            missing.iter().map(|p| format!("--device {p}")).collect()
        };
        let mut fix = format!(
            "pass the nodes in: `docker run` or `podman run` with `{}`",
            devices_flags.join(" ")
        );
        if denied {
            fix.push_str(" (a bind mount of /dev/infiniband is not enough: the device cgroup still refuses the open; `--device` allows it, or `--device-cgroup-rule='c 231:* rwm'` for uverbs and umad)");
        }
        if weak {
            fix.push_str("; /.dockerenv is the only sign of a container here, and a host or VM built from a container image keeps it too: on a host, udev creates these nodes (`modprobe ib_uverbs rdma_ucm ib_umad`)");
        }
        if markers.iter().any(Marker::is_kubernetes) {
            fix.push_str("; in Kubernetes request the RDMA device plugin's resource in the pod spec (`resources.limits: {rdma/hca_shared_devices_a: 1}` with k8s-rdma-shared-dev-plugin, named by its config; the SR-IOV device plugin's resource for a VF), which passes the uverbs nodes and rdma_cm of the devices it selects");
        }
        fix
    };
    let evidence = |f: Diagnostic| {
        let f = evidence(f);
        match ucm {
            Some(u) if u.loaded => f.evidence(format!(
                "{} exists{}: rdma_ucm is loaded",
                u.path,
                u.dev
                    .as_deref()
                    .map_or(String::new(), |d| format!(" (dev {d})"))
            )),
            Some(u) => f.evidence(format!("{} does not exist: rdma_ucm is not loaded", u.path)),
            None => f,
        }
    };
    Some(evidence(
        finding(
            codes::DEVICE_NODES,
            Subject::Host,
            severity,
            format!(
                "{} of the {} node(s) the devices sysfs lists need are not usable here ({}): {}",
                bad.len(),
                nodes.len(),
                short_list(&names, 4),
                effects.join("; ")
            ),
        )
        .fix(fix),
    ))
}

/// Why a job needs far more than rdmactl's tests: NCCL's proxy registers per peer and per
/// channel one buffer per protocol (Simple NCCL_BUFFSIZE 4 MiB, LL128 120*640*8*8 bytes, about
/// 4.7 MiB, LL 8*512*8*16 bytes, 512 KiB): about 9 MiB a connection, and a ring (2) and a
/// tree (up to 3 more) over 16 to 32 channels make 30 to 160 connections. They are
/// charged to RLIMIT_MEMLOCK when they sit in host memory (no GPUDirect RDMA), and UCX's
/// registration cache pins each user buffer as it is first sent. An honest figure is
/// "several hundred MiB to over a GiB per process", not one number.
fn job_pins() -> String {
    format!(
        "an NCCL job registers per peer and channel a buffer per protocol (Simple: NCCL_BUFFSIZE, 4 MiB by default; LL128 about 4.7 MiB; LL 512 KiB), about 9 MiB a connection; a ring and a tree over 16 to 32 channels make 30 to 160 connections, several hundred MiB to over a GiB of host memory when the buffers are not in GPU memory (no GPUDirect RDMA); UCX pins each buffer it sends (its registration cache); rdmactl's own tests pin {} by default",
        human_bytes(RDMACTL_PINS)
    )
}

/// Locked memory against what a real job pins, in a container: the runtime decides the
/// limit (the kernel's default since 5.16 is 8 MiB, and containerd and Docker pass on their
/// own unit's limit), and only CAP_IPC_LOCK lifts it.
pub fn job_memlock_finding(host: &HostFacts) -> Diagnostic {
    let cap = match host.cap_ipc_lock {
        Some(true) => "CapEff holds CAP_IPC_LOCK (bit 14)",
        Some(false) => "CapEff lacks CAP_IPC_LOCK (bit 14)",
        None => "CapEff unreadable",
    };
    let limit = match host.memlock_soft {
        None => "RLIMIT_MEMLOCK unreadable".to_string(),
        Some(None) => "RLIMIT_MEMLOCK unlimited".to_string(),
        Some(Some(b)) => format!("RLIMIT_MEMLOCK soft limit {}", human_bytes(b)),
    };
    let base = |severity, message: String| {
        finding(codes::JOB_MEMLOCK, Subject::Host, severity, message)
            .evidence(limit.clone())
            .evidence(cap)
            .evidence(job_pins())
    };
    let fix = "run the container with `--ulimit memlock=-1:-1` (docker, podman) or `--cap-add IPC_LOCK`; in Kubernetes add `securityContext: {capabilities: {add: [IPC_LOCK]}}` to the container, or raise the runtime's limit (LimitMEMLOCK=infinity in containerd's or dockerd's systemd unit, which its containers inherit)";
    if host.cap_ipc_lock == Some(true) || host.root && host.cap_ipc_lock.is_none() {
        return base(
            Severity::Ok,
            "CAP_IPC_LOCK is held: memory registration is not charged against RLIMIT_MEMLOCK"
                .into(),
        );
    }
    match host.memlock_soft {
        None => base(
            Severity::Warn,
            "cannot read the locked-memory limit a job would run under".into(),
        ),
        Some(None) => base(
            Severity::Ok,
            "locked memory is unlimited: a job's registrations fit".into(),
        ),
        Some(Some(b)) if b < JOB_FAILS_BELOW => base(
            Severity::Fail,
            format!(
                "locked-memory limit {} without CAP_IPC_LOCK: enough for rdmactl's tests, but an NCCL or UCX job fails in ibv_reg_mr with ENOMEM (\"Cannot allocate memory\") while it sets up",
                human_bytes(b)
            ),
        )
        .fix(fix),
        Some(Some(b)) if b < JOB_MAY_PIN => base(
            Severity::Warn,
            format!(
                "locked-memory limit {} without CAP_IPC_LOCK: a small job fits, a multi-GPU NCCL job may not (ENOMEM in ibv_reg_mr)",
                human_bytes(b)
            ),
        )
        .fix(fix),
        Some(Some(b)) => base(
            Severity::Ok,
            format!("locked-memory limit {}", human_bytes(b)),
        ),
    }
}

/// `rdma system`'s mode and the devices this namespace sees through the RDMA netlink.
pub fn netns_mode_finding(
    ns: &Result<RdmaNamespace, String>,
    facts: &DoctorFacts,
    c: &ContainerFacts,
) -> Diagnostic {
    let code = codes::RDMA_NETNS;
    let ns = match ns {
        Ok(ns) => ns,
        Err(e) => {
            return finding(
                code,
                Subject::Host,
                Severity::Info,
                "cannot ask the RDMA netlink for the namespace mode",
            )
            .evidence(e.clone())
        }
    };
    let here = if ns.devices.is_empty() {
        "none".to_string()
    } else {
        ns.devices.join(", ")
    };
    let seen = format!("RDMA_NLDEV_CMD_GET in this network namespace lists: {here}");
    let mode_seen =
        |m: &str| format!("RDMA_NLDEV_CMD_SYS_GET: netns mode {m} (`rdma system show`)");
    let listed: Vec<&str> = facts.listed.iter().map(|d| d.name.as_str()).collect();
    match ns.mode {
        None => finding(
            code,
            Subject::Host,
            Severity::Info,
            format!("the kernel does not report the RDMA namespace mode (before 5.2 every namespace sees every device); this namespace sees {here}"),
        )
        .evidence(seen),
        Some(NetnsMode::Shared) => finding(
            code,
            Subject::Host,
            Severity::Ok,
            format!("RDMA namespace mode shared: every network namespace sees every device ({here})"),
        )
        .evidence(mode_seen("shared"))
        .evidence(seen),
        Some(NetnsMode::Exclusive) if ns.devices.is_empty() => {
            let target = c
                .netns_name
                .clone()
                .unwrap_or_else(|| "<this pod's namespace>".into());
            let mut f = finding(
                code,
                Subject::Host,
                Severity::Fail,
                "RDMA namespace mode exclusive and no RDMA device was moved into this network namespace: no application here can use RDMA",
            )
            .evidence(mode_seen("exclusive"))
            .evidence(seen);
            if !listed.is_empty() {
                f = f.evidence(format!(
                    "sysfs lists {} (mounted from another namespace), which this namespace does not own",
                    listed.join(", ")
                ));
            }
            f.fix(format!("on the host, move a device in: `rdma dev set <dev> netns {target}` (the RDMA CNI does it for a pod with an SR-IOV VF); or, with no other namespace in use, `rdma system set netns shared`"))
        }
        Some(NetnsMode::Exclusive) => {
            let foreign: Vec<&str> = listed
                .iter()
                .copied()
                .filter(|d| !ns.devices.iter().any(|n| n == d))
                .collect();
            let f = finding(
                code,
                Subject::Host,
                Severity::Ok,
                format!("RDMA namespace mode exclusive: this network namespace owns {here}"),
            )
            .evidence(mode_seen("exclusive"))
            .evidence(seen);
            if foreign.is_empty() {
                f
            } else {
                f.evidence(format!(
                    "sysfs also lists {}, which belongs to another namespace",
                    foreign.join(", ")
                ))
            }
        }
    }
}

/// For each RoCE port: the GIDs whose netdev this network namespace has. A pod with a
/// macvlan or an SR-IOV VF netdev whose GIDs were created on another RDMA device has none.
pub fn namespace_gid_findings(
    facts: &DoctorFacts,
    host: &HostFacts,
    c: &ContainerFacts,
) -> Vec<Diagnostic> {
    let Some(visible) = &host.net.visible_netdevs else {
        return Vec::new();
    };
    // In the initial namespace every netdev is here; only a container's view is judged.
    if c.markers.is_empty() && c.in_init_netns != Some(false) {
        return Vec::new();
    }
    let mut found = Vec::new();
    for port in facts.devices.iter().flat_map(|d| &d.ports) {
        if port.link_layer != Some(LinkLayer::Ethernet) || port.gids.is_empty() {
            continue;
        }
        let subject = Subject::Port(port.device.clone(), port.number);
        let here: Vec<String> = port
            .gids
            .iter()
            .filter(|g| g.netdev.as_ref().is_some_and(|n| visible.contains(n)))
            .map(gidselect::describe)
            .collect();
        let mut owners: Vec<String> = port.gids.iter().filter_map(|g| g.netdev.clone()).collect();
        owners.sort();
        owners.dedup();
        let netdevs_here = format!(
            "this network namespace has {}",
            if visible.is_empty() {
                "no netdev".to_string()
            } else {
                visible.join(", ")
            }
        );
        if here.is_empty() {
            found.push(
                finding(
                    codes::NAMESPACE_GIDS,
                    subject,
                    Severity::Fail,
                    format!(
                        "no usable GID here: every GID of {}/{} belongs to {}, which this network namespace does not have (a macvlan or SR-IOV VF netdev gets GIDs only on its own RDMA device)",
                        port.device,
                        port.number,
                        owners.join(", ")
                    ),
                )
                .evidence(format!("gid_attrs/ndevs of {}/{}: {}", port.device, port.number, owners.join(", ")))
                .evidence(netdevs_here)
                .fix(format!("give the container a netdev of this RDMA device: the host's network (`podman run --network host`, `docker run --network host`; `hostNetwork: true` in a Kubernetes pod) where {} lives, or an SR-IOV VF together with the VF's own RDMA device (SR-IOV device plugin and the RDMA CNI); a GID index chosen by hand cannot reach a netdev this namespace lacks", owners.join(", "))),
            );
        } else {
            found.push(
                finding(
                    codes::NAMESPACE_GIDS,
                    subject,
                    Severity::Ok,
                    format!(
                        "GIDs of {}/{} on this namespace's netdevs: {}",
                        port.device,
                        port.number,
                        short_list(&here, 3)
                    ),
                )
                .evidence(netdevs_here),
            );
        }
    }
    found
}

/// CmaTotal 0: an info finding, since only some drivers draw on CMA.
pub fn cma_finding(cma_total: Option<u64>) -> Option<Diagnostic> {
    (cma_total? == 0).then(|| {
        finding(
            codes::CMA,
            Subject::Host,
            Severity::Info,
            "no contiguous memory area (CmaTotal 0): drivers that need large physically contiguous DMA buffers take them from the page allocator, which a fragmented host can refuse",
        )
        .evidence("/proc/meminfo: CmaTotal: 0 kB")
        .fix("only when a driver's log says a contiguous allocation failed: reserve one with `cma=SIZE` on the kernel command line")
    })
}

fn sys_read_only_finding() -> Diagnostic {
    finding(
        codes::SYS_READ_ONLY,
        Subject::Host,
        Severity::Info,
        "/sys is read-only here (runtimes mount it so for unprivileged containers): libibverbs and rdmactl only read it, so verbs work; what writes sysfs (the driver's knobs under class/infiniband, class/net) must run on the host",
    )
    .evidence("/proc/self/mountinfo: /sys mounted ro")
}

/// Variables whose value chooses a device, a port, a GID or a netdev: a stale one baked into
/// an image sends the job elsewhere.
fn chooses_hardware(name: &str) -> bool {
    env::VARIABLES.contains(&name)
        || name.starts_with("NCCL_IB_")
        || name.starts_with("NCCL_NET")
        || name == "UCX_TLS"
}

/// /etc/nccl.conf: what it sets, and which settings the environment overrides. NCCL reads
/// it with `setenv(name, value, 0)` after ~/.nccl.conf (or NCCL_CONF_FILE), so the
/// environment and the user's file win.
pub fn nccl_conf_finding(c: &ContainerFacts) -> Option<Diagnostic> {
    let conf = c.nccl_conf.as_ref()?;
    let mut in_effect = Vec::new();
    let mut evidence = Vec::new();
    let mut broken = Vec::new();
    for (name, value) in &conf.settings {
        if name != name.trim() || name.is_empty() {
            broken.push(format!("`{name}`"));
            evidence.push(format!(
                "{}: `{name}={value}`: NCCL takes the name with its spaces, so nothing reads it",
                conf.path
            ));
            continue;
        }
        match c.env.iter().find(|(k, _)| k == name) {
            Some((_, env_value)) => evidence.push(format!(
                "{}: {name}={value}, overridden by the environment's {name}={env_value}",
                conf.path
            )),
            None => {
                evidence.push(format!(
                    "{}: {name}={value}, in effect (the environment does not set it)",
                    conf.path
                ));
                in_effect.push((name.clone(), value.clone()));
            }
        }
    }
    let choosing: Vec<String> = in_effect
        .iter()
        .filter(|(k, _)| chooses_hardware(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let (severity, message) = if !choosing.is_empty() {
        (
            Severity::Warn,
            format!(
                "{} sets {}: every NCCL job here uses it unless its environment or ~/.nccl.conf says otherwise; a file baked into an image may name another host's devices (the env-* findings judge the values)",
                conf.path,
                choosing.join(", ")
            ),
        )
    } else if !broken.is_empty() {
        (
            Severity::Warn,
            format!(
                "{} has settings NCCL ignores: {} (spaces around `=` become part of the name)",
                conf.path,
                broken.join(", ")
            ),
        )
    } else {
        (
            Severity::Info,
            format!(
                "{} sets {} variable(s), none of which chooses a device, GID or netdev",
                conf.path,
                conf.settings.len()
            ),
        )
    };
    let f = finding(codes::NCCL_CONF, Subject::Host, severity, message);
    let f = evidence.into_iter().fold(f, |f, e| f.evidence(e));
    Some(if severity == Severity::Warn {
        f.fix(format!("remove the stale lines from {} (or the image's Dockerfile), or set the variables in the job's environment, which wins", conf.path))
    } else {
        f
    })
}

/// `check --env`'s rules on the variables a job here would see: the environment's, else
/// /etc/nccl.conf's, judged against the first ACTIVE port (the first port when none is).
pub fn env_findings(facts: &DoctorFacts, c: &ContainerFacts) -> Vec<Diagnostic> {
    let conf = c.nccl_conf.as_ref();
    let from_conf = |name: &str| -> Option<String> {
        conf?
            .settings
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let lookup = |name: &str| -> Option<String> {
        c.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .or_else(|| from_conf(name))
    };
    if !env::VARIABLES.iter().any(|v| lookup(v).is_some()) {
        return Vec::new();
    }
    let ports: Vec<_> = facts
        .devices
        .iter()
        .flat_map(|d| &d.ports)
        .zip(&facts.ports)
        .collect();
    let Some((port, extras)) = ports
        .iter()
        .find(|(p, _)| p.state == Some(PortState::Active))
        .or(ports.first())
    else {
        return Vec::new();
    };
    let link_layer = port.link_layer.clone().unwrap_or(LinkLayer::Ethernet);
    let want = Want::default();
    let auto = gidselect::select_gid(&port.gids, &link_layer, &want);
    let devices: Vec<String> = facts.listed.iter().map(|d| d.name.clone()).collect();
    let all_ports: Vec<(String, u32)> = facts
        .listed
        .iter()
        .flat_map(|d| d.ports.iter().map(|p| (p.device.clone(), p.number)))
        .collect();
    let target = EnvTarget {
        device: &port.device,
        port: port.number,
        link_layer: &link_layer,
        table: &port.gids,
        table_len: extras.gid_table_len as u32,
        auto: &auto,
        want: &want,
        devices: &devices,
        ports: &all_ports,
        netdevs: &c.netdevs,
    };
    env::validate_env(lookup, &target)
        .into_iter()
        .map(|f| {
            // Each env-* code is the variable's name in kebab case (`env::code_of`).
            let name = env::VARIABLES
                .iter()
                .find(|v| f.code.as_str() == format!("env-{}", v.to_lowercase().replace('_', "-")))
                .copied();
            match name {
                Some(n) if !c.env.iter().any(|(k, _)| k == n) && from_conf(n).is_some() => {
                    let path = conf.map(|c| c.path.as_str()).unwrap_or("/etc/nccl.conf");
                    f.evidence(format!("{n} comes from {path}, not the environment"))
                }
                _ => f,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::container::NcclConf;
    use crate::model::doctor::{HostNet, NodeAccess};

    fn node(path: &str, device: Option<&str>, kind: NodeKind, state: NodeState) -> DevNode {
        DevNode {
            path: path.into(),
            device: device.map(String::from),
            kind,
            state,
        }
    }

    fn host(memlock: Option<Option<u64>>, cap: Option<bool>) -> HostFacts {
        HostFacts {
            node_access: vec![NodeAccess::Usable {
                path: "/dev/infiniband/uverbs0".into(),
            }],
            library: Ok(()),
            verbs_devices: None,
            provider_files: Vec::new(),
            memlock_soft: memlock,
            cap_ipc_lock: cap,
            root: true,
            net: HostNet::default(),
            roce_netdevs: Vec::new(),
        }
    }

    fn text(f: &Diagnostic) -> String {
        format!(
            "{} | {} | {}",
            f.message,
            f.evidence
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
            f.fix.as_deref().unwrap_or("")
        )
    }

    #[test]
    fn where_names_the_marker_or_what_was_looked_at() {
        let host = where_finding(&ContainerFacts {
            looked_at: vec!["/.dockerenv absent".into()],
            ..ContainerFacts::default()
        });
        assert_eq!(host.severity, Severity::Ok);
        assert!(
            text(&host).contains("/.dockerenv absent"),
            "{}",
            text(&host)
        );
        let pod = where_finding(&ContainerFacts {
            markers: vec![
                Marker::Cgroup {
                    runtime: "kubernetes",
                    path: "/kubepods/pod1/abc".into(),
                },
                Marker::KubernetesEnv,
            ],
            ..ContainerFacts::default()
        });
        let t = text(&pod);
        assert!(
            t.contains("a Kubernetes pod") && t.contains("cgroup path /kubepods/pod1/abc"),
            "{t}"
        );
        assert!(!t.contains("Docker"), "{t}");
    }

    #[test]
    fn a_missing_uverbs_node_is_named_with_the_runtime_option() {
        let nodes = [
            node(
                "/dev/infiniband/uverbs0",
                Some("mlx5_0"),
                NodeKind::Uverbs,
                NodeState::Usable,
            ),
            node(
                "/dev/infiniband/uverbs1",
                Some("mlx5_1"),
                NodeKind::Uverbs,
                NodeState::Missing,
            ),
            node(
                "/dev/infiniband/rdma_cm",
                None,
                NodeKind::RdmaCm,
                NodeState::Usable,
            ),
        ];
        let docker = nodes_finding(&nodes, &[Marker::DockerEnv], None).unwrap();
        assert_eq!(docker.severity, Severity::Fail);
        let t = text(&docker);
        assert!(t.contains("/dev/infiniband/uverbs1"), "{t}");
        assert!(t.contains("libibverbs skips mlx5_1"), "{t}");
        assert!(t.contains("--device /dev/infiniband/uverbs1"), "{t}");
        // Only the missing one is named in the fix, and Kubernetes is not mentioned.
        assert!(!t.contains("--device /dev/infiniband/uverbs0"), "{t}");
        assert!(!t.contains("rdma/hca_shared_devices_a"), "{t}");
        assert!(!t.contains("rdma_cm connections"), "{t}");
        let pod = nodes_finding(&nodes, &[Marker::KubernetesEnv], None).unwrap();
        assert!(text(&pod).contains("rdma/hca_shared_devices_a"));
        // On a host the fix is udev, not --device.
        let bare = nodes_finding(&nodes, &[], None).unwrap();
        assert!(!text(&bare).contains("--device"), "{}", text(&bare));
    }

    /// A VM without rdma_ucm loaded and a stray /.dockerenv on its root: rdma_cm's node is
    /// missing because the module is not loaded (no class/misc/rdma_cm), which no runtime
    /// flag changes: load it on the host, a warning. With the module loaded, a node missing
    /// in a container was not passed in; /.dockerenv alone also names the host's cause.
    #[test]
    fn a_missing_rdma_cm_node_tells_a_module_not_loaded_from_a_node_not_passed_in() {
        let nodes = [
            node(
                "/dev/infiniband/uverbs0",
                Some("rxe0"),
                NodeKind::Uverbs,
                NodeState::Usable,
            ),
            node(
                "/dev/infiniband/rdma_cm",
                None,
                NodeKind::RdmaCm,
                NodeState::Missing,
            ),
        ];
        let misc = |loaded| RdmaUcm {
            path: "/sys/class/misc/rdma_cm".into(),
            loaded,
            dev: loaded.then(|| "10:58".to_string()),
        };
        let vm = nodes_finding(&nodes, &[Marker::DockerEnv], Some(&misc(false))).unwrap();
        assert_eq!(vm.severity, Severity::Warn);
        let t = text(&vm);
        assert!(t.contains("rdma_ucm is not loaded"), "{t}");
        assert!(t.contains("/sys/class/misc/rdma_cm does not exist"), "{t}");
        assert!(
            t.contains("`modprobe rdma_ucm`") && t.contains("on the host"),
            "{t}"
        );
        assert!(
            !t.contains("pass the nodes in") && !t.contains("docker run"),
            "{t}"
        );
        // The module loaded: in a container (Podman's marker) the node was not passed in.
        let podman = [Marker::ContainerEnv { engine: None }];
        let f = nodes_finding(&nodes, &podman, Some(&misc(true))).unwrap();
        assert_eq!(f.severity, Severity::Fail);
        let t = text(&f);
        assert!(
            t.contains("pass the nodes in") && t.contains("--device /dev/infiniband/rdma_cm"),
            "{t}"
        );
        assert!(
            t.contains("/sys/class/misc/rdma_cm exists (dev 10:58): rdma_ucm is loaded"),
            "{t}"
        );
        assert!(!t.contains("only sign of a container"), "{t}");
        // /.dockerenv alone weighs no more than a file: the host's cause is named too.
        let f = nodes_finding(&nodes, &[Marker::DockerEnv], Some(&misc(true))).unwrap();
        let t = text(&f);
        assert!(
            t.contains("pass the nodes in") && t.contains("only sign of a container"),
            "{t}"
        );
        // On a host, the module not loaded: the same host fix.
        let host = nodes_finding(&nodes, &[], Some(&misc(false))).unwrap();
        assert_eq!(host.severity, Severity::Warn);
        assert!(text(&host).contains("`modprobe rdma_ucm`"));
    }

    /// A uverbs node that exists and refuses this process is the uverbs finding's alone:
    /// no second verdict here, and never "libibverbs skips" (it lists such a device).
    #[test]
    fn a_denied_uverbs_node_is_left_to_the_uverbs_finding() {
        let denied = node(
            "/dev/infiniband/uverbs0",
            Some("rxe0"),
            NodeKind::Uverbs,
            NodeState::Denied(libc::EACCES),
        );
        let cm = node(
            "/dev/infiniband/rdma_cm",
            None,
            NodeKind::RdmaCm,
            NodeState::Usable,
        );
        assert!(nodes_finding(&[denied.clone(), cm.clone()], &[], None).is_none());
        let umad = node(
            "/dev/infiniband/umad0",
            Some("rxe0"),
            NodeKind::Umad,
            NodeState::Denied(libc::EACCES),
        );
        let f = nodes_finding(&[denied, umad, cm], &[], None).unwrap();
        assert_eq!(f.severity, Severity::Info);
        let t = text(&f);
        assert!(!t.contains("libibverbs skips"), "{t}");
        assert!(t.contains("/dev/infiniband/umad0"), "{t}");
    }

    #[test]
    fn only_umad_missing_is_info_and_all_present_is_ok() {
        let nodes = [
            node(
                "/dev/infiniband/uverbs0",
                Some("rxe0"),
                NodeKind::Uverbs,
                NodeState::Usable,
            ),
            node(
                "/dev/infiniband/umad0",
                Some("rxe0"),
                NodeKind::Umad,
                NodeState::Missing,
            ),
            node(
                "/dev/infiniband/rdma_cm",
                None,
                NodeKind::RdmaCm,
                NodeState::Denied(1),
            ),
        ];
        let f = nodes_finding(&nodes, &[Marker::DockerEnv], None).unwrap();
        assert_eq!(f.severity, Severity::Fail);
        let t = text(&f);
        assert!(
            t.contains("rdma_cm connections") && t.contains("EPERM"),
            "{t}"
        );
        assert!(t.contains("device cgroup"), "{t}");
        let umad_only = nodes_finding(&nodes[..2], &[Marker::DockerEnv], None).unwrap();
        assert_eq!(umad_only.severity, Severity::Info);
        assert!(text(&umad_only).contains("jobs do not need umad"));
        // On a host, rdma_cm alone missing is a warning: verbs jobs still run.
        let cm_only = [
            nodes[0].clone(),
            node(
                "/dev/infiniband/rdma_cm",
                None,
                NodeKind::RdmaCm,
                NodeState::Missing,
            ),
        ];
        assert_eq!(
            nodes_finding(&cm_only, &[], None).unwrap().severity,
            Severity::Warn
        );
        assert_eq!(
            nodes_finding(&cm_only, &[Marker::DockerEnv], None)
                .unwrap()
                .severity,
            Severity::Fail
        );
        let ok = nodes_finding(&nodes[..1], &[], None).unwrap();
        assert_eq!(ok.severity, Severity::Ok);
        assert!(nodes_finding(&[], &[], None).is_none());
    }

    #[test]
    fn job_memlock_takes_cap_ipc_lock_into_account() {
        let mut h = host(Some(Some(8 << 20)), Some(false));
        h.root = true;
        let f = job_memlock_finding(&h);
        assert_eq!(f.severity, Severity::Fail);
        let t = text(&f);
        assert!(
            t.contains("8 MiB") && t.contains("ENOMEM") && t.contains("CapEff lacks CAP_IPC_LOCK"),
            "{t}"
        );
        assert!(
            t.contains("--ulimit memlock=-1") && t.contains("IPC_LOCK"),
            "{t}"
        );
        assert!(t.contains("NCCL_BUFFSIZE") && t.contains("64 KiB"), "{t}");
        // The same limit with the capability: registration is not charged.
        let f = job_memlock_finding(&host(Some(Some(8 << 20)), Some(true)));
        assert_eq!(f.severity, Severity::Ok);
        assert!(!text(&f).contains("ENOMEM"));
        assert_eq!(
            job_memlock_finding(&host(Some(Some(256 << 20)), Some(false))).severity,
            Severity::Warn
        );
        assert_eq!(
            job_memlock_finding(&host(Some(None), Some(false))).severity,
            Severity::Ok
        );
        assert_eq!(
            job_memlock_finding(&host(Some(Some(4 << 30)), Some(false))).severity,
            Severity::Ok
        );
    }

    #[test]
    fn netns_modes() {
        let facts = DoctorFacts::default();
        let c = ContainerFacts {
            netns_name: Some("pod1".into()),
            ..ContainerFacts::default()
        };
        let ns = |mode, devices: &[&str]| -> Result<RdmaNamespace, String> {
            Ok(RdmaNamespace {
                mode,
                devices: devices.iter().map(|d| d.to_string()).collect(),
            })
        };
        let shared = netns_mode_finding(&ns(Some(NetnsMode::Shared), &["rxe0"]), &facts, &c);
        assert_eq!(shared.severity, Severity::Ok);
        assert!(text(&shared).contains("shared") && !text(&shared).contains("exclusive"));
        let empty = netns_mode_finding(&ns(Some(NetnsMode::Exclusive), &[]), &facts, &c);
        assert_eq!(empty.severity, Severity::Fail);
        assert!(
            text(&empty).contains("`rdma dev set <dev> netns pod1`"),
            "{}",
            text(&empty)
        );
        let owned = netns_mode_finding(&ns(Some(NetnsMode::Exclusive), &["rxe0"]), &facts, &c);
        assert_eq!(owned.severity, Severity::Ok);
        assert!(text(&owned).contains("owns rxe0"));
        let old = netns_mode_finding(&ns(None, &["rxe0"]), &facts, &c);
        assert_eq!(old.severity, Severity::Info);
        let err = netns_mode_finding(
            &Err("RDMA netlink socket: socket: EPROTONOSUPPORT".into()),
            &facts,
            &c,
        );
        assert_eq!(err.severity, Severity::Info);
    }

    #[test]
    fn nccl_conf_baked_in() {
        let mut c = ContainerFacts {
            nccl_conf: Some(NcclConf {
                path: "/etc/nccl.conf".into(),
                settings: vec![
                    ("NCCL_IB_HCA".into(), "mlx5_3".into()),
                    ("NCCL_DEBUG".into(), "INFO".into()),
                    ("NCCL_SOCKET_IFNAME ".into(), " eth0".into()),
                ],
            }),
            ..ContainerFacts::default()
        };
        let f = nccl_conf_finding(&c).unwrap();
        assert_eq!(f.severity, Severity::Warn);
        let t = text(&f);
        assert!(t.contains("sets NCCL_IB_HCA=mlx5_3"), "{t}");
        assert!(
            t.contains("`NCCL_SOCKET_IFNAME = eth0`") && t.contains("nothing reads it"),
            "{t}"
        );
        // The environment wins: the file's NCCL_IB_HCA is then only evidence.
        c.env = vec![("NCCL_IB_HCA".into(), "mlx5_0".into())];
        let f = nccl_conf_finding(&c).unwrap();
        let t = text(&f);
        assert!(
            t.contains("overridden by the environment's NCCL_IB_HCA=mlx5_0"),
            "{t}"
        );
        assert!(!f.message.contains("sets NCCL_IB_HCA"), "{t}");
        assert!(nccl_conf_finding(&ContainerFacts::default()).is_none());
    }

    /// An image's NCCL_IB_HCA judged by `check --env`'s rule against a real capture: the
    /// file's value fails and says where it came from; the environment's wins over it.
    #[test]
    fn env_rules_see_what_a_job_would() {
        let facts =
            crate::gather::doctor::gather(&crate::ctx::Ctx::fixture("rxe-veth-basic"), None)
                .unwrap();
        let mut c = ContainerFacts {
            nccl_conf: Some(NcclConf {
                path: "/etc/nccl.conf".into(),
                settings: vec![("NCCL_IB_HCA".into(), "mlx5_3".into())],
            }),
            ..ContainerFacts::default()
        };
        let found = env_findings(&facts, &c);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            (found[0].code.as_str(), found[0].severity),
            ("env-nccl-ib-hca", Severity::Fail)
        );
        let t = text(&found[0]);
        assert!(
            t.contains("mlx5_3") && t.contains("NCCL_IB_HCA comes from /etc/nccl.conf"),
            "{t}"
        );
        c.env = vec![("NCCL_IB_HCA".into(), "rxe0".into())];
        let found = env_findings(&facts, &c);
        assert_eq!(found[0].severity, Severity::Ok, "{found:#?}");
        assert!(
            !text(&found[0]).contains("comes from"),
            "{}",
            text(&found[0])
        );
        // Nothing set anywhere: no env finding at all.
        assert!(env_findings(&facts, &ContainerFacts::default()).is_empty());
    }

    /// A pod whose netdev is not the one the GIDs belong to (a macvlan, a VF): no usable GID.
    #[test]
    fn namespace_gids_against_the_netdevs_here() {
        let facts =
            crate::gather::doctor::gather(&crate::ctx::Ctx::fixture("rxe-veth-basic"), None)
                .unwrap();
        let c = ContainerFacts {
            markers: vec![Marker::DockerEnv],
            ..ContainerFacts::default()
        };
        let mut h = host(Some(None), Some(false));
        h.net.visible_netdevs = Some(vec!["lo".into(), "eth0".into()]);
        let found = namespace_gid_findings(&facts, &h, &c);
        let rxe0 = found
            .iter()
            .find(|f| f.message.contains("rxe0/1"))
            .expect("rxe0's port is judged");
        assert_eq!(rxe0.severity, Severity::Fail);
        let t = text(rxe0);
        assert!(
            t.contains("no usable GID here") && t.contains("belongs to veth0"),
            "{t}"
        );
        assert!(t.contains("this network namespace has lo, eth0"), "{t}");
        assert!(t.contains("--network host"), "{t}");
        h.net.visible_netdevs = Some(vec!["lo".into(), "veth0".into()]);
        let found = namespace_gid_findings(&facts, &h, &c);
        let rxe0 = found.iter().find(|f| f.message.contains("rxe0/1")).unwrap();
        assert_eq!(rxe0.severity, Severity::Ok);
        assert!(rxe0.message.contains("on veth0"), "{}", rxe0.message);
        // On a host in the initial namespace the rule stays quiet.
        let bare = ContainerFacts {
            in_init_netns: Some(true),
            ..ContainerFacts::default()
        };
        assert!(namespace_gid_findings(&facts, &h, &bare).is_empty());
    }

    #[test]
    fn cma_zero_is_info() {
        assert_eq!(cma_finding(Some(0)).unwrap().severity, Severity::Info);
        assert!(cma_finding(Some(64 << 20)).is_none());
        assert!(cma_finding(None).is_none());
    }
}
