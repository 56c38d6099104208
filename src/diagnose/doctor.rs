//! `rdmactl doctor`: pre-flight checks in the order a person debugs an RDMA host.
//! Gathering (sysfs, /dev, /proc, verbs) happens in `cmd::doctor`; this module holds the
//! facts it gathered and the pure rules that turn them into findings.

use crate::error::Error;
use crate::model::device::{Device, LinkLayer, PhysState, Port, PortState};
use crate::model::diagnostic::{Finding, Severity, Subject};
use crate::model::facts::RoceNetdev;

/// A doctor finding: every one names its subject (the host, a device, a port).
fn finding(
    code: &str,
    subject: Subject,
    severity: Severity,
    message: impl Into<String>,
) -> Finding {
    Finding::new(severity, code, message).about(subject)
}

/// A list as a person reads it: the first `keep` items and how many more.
fn short_list(items: &[String], keep: usize) -> String {
    if items.len() <= keep + 1 {
        return items.join(", ");
    }
    format!(
        "{} and {} more",
        items[..keep].join(", "),
        items.len() - keep
    )
}

/// The largest whole-page message size that fits `bytes`, as a -s value.
fn largest_size(bytes: u64) -> u64 {
    (bytes / 4096 * 4096).max(8)
}

/// `MemAvailable` from /proc/meminfo, in bytes; None when the line is missing.
pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    })
}

/// `Max locked memory` from /proc/self/limits: None means unlimited.
pub fn parse_memlock_soft_limit(limits: &str) -> Option<Option<u64>> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    let soft = line["Max locked memory".len()..]
        .split_whitespace()
        .next()?;
    if soft == "unlimited" {
        Some(None)
    } else {
        soft.parse().ok().map(Some)
    }
}

/// Whether CapEff in /proc/self/status holds CAP_IPC_LOCK (bit 14).
pub fn parse_has_cap_ipc_lock(status: &str) -> Option<bool> {
    const CAP_IPC_LOCK: u32 = 14;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    u64::from_str_radix(hex, 16)
        .ok()
        .map(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

/// The libibverbs provider that serves a device, from the kernel driver bound to its
/// parent (PCI) device, or, for software devices without one, from the device name.
/// The provider name is what `/etc/libibverbs.d/<name>.driver` and
/// `lib<name>-rdmav*.so` use.
pub fn provider_for(
    kernel_driver: Option<&str>,
    node_desc: Option<&str>,
    device: &str,
) -> Option<&'static str> {
    const BY_DRIVER: &[(&str, &str)] = &[
        ("mlx5_core", "mlx5"),
        ("mlx4_core", "mlx4"),
        ("ib_mthca", "mthca"),
        ("irdma", "irdma"),
        ("i40e", "irdma"),
        ("ice", "irdma"),
        ("bnxt_en", "bnxt_re"),
        ("bnxt_re", "bnxt_re"),
        ("qede", "qedr"),
        ("qedr", "qedr"),
        ("hfi1", "hfi1verbs"),
        ("ib_qib", "ipathverbs"),
        ("efa", "efa"),
        ("cxgb4", "cxgb4"),
        ("hns3", "hns"),
        ("hns_roce_hw_v2", "hns"),
        ("vmw_pvrdma", "vmw_pvrdma"),
        ("ocrdma", "ocrdma"),
        ("be2net", "ocrdma"),
        ("mana", "mana"),
        ("erdma", "erdma"),
    ];
    const BY_NAME_PREFIX: &[(&str, &str)] = &[
        ("rxe", "rxe"),
        ("siw", "siw"),
        ("mlx5_", "mlx5"),
        ("mlx4_", "mlx4"),
        ("mthca", "mthca"),
        ("irdma", "irdma"),
        ("bnxt_re", "bnxt_re"),
        ("qedr", "qedr"),
        ("hfi1_", "hfi1verbs"),
        ("qib", "ipathverbs"),
        ("efa_", "efa"),
        ("cxgb4_", "cxgb4"),
        ("hns_", "hns"),
        ("vmw_pvrdma", "vmw_pvrdma"),
        ("ocrdma", "ocrdma"),
        ("mana_", "mana"),
        ("erdma_", "erdma"),
    ];
    // Software devices have no driver link; rxe keeps node_desc "rxe" when renamed
    // (`rdma dev set rxe0 name roce7`), so it outranks the name.
    const BY_NODE_DESC: &[(&str, &str)] = &[("rxe", "rxe"), ("siw", "siw")];
    kernel_driver
        .and_then(|d| BY_DRIVER.iter().find(|(k, _)| *k == d))
        .or_else(|| {
            let desc = node_desc?.trim();
            BY_NODE_DESC.iter().find(|(p, _)| desc == *p)
        })
        .or_else(|| BY_NAME_PREFIX.iter().find(|(p, _)| device.starts_with(p)))
        .map(|(_, provider)| *provider)
}

pub fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// What the memlock check needs. rdma-core warns at 32 KiB or less; real workloads
/// need far more, so anything under the planned registration is a failure.
pub fn memlock_finding(
    soft_limit: Option<Option<u64>>,
    cap_ipc_lock: Option<bool>,
    euid_root: bool,
    needed: u64,
) -> Finding {
    let subject = Subject::Host;
    let Some(limit) = soft_limit else {
        return finding(
            "memlock",
            subject,
            Severity::Warn,
            "cannot read RLIMIT_MEMLOCK",
        )
        .evidence("no 'Max locked memory' line in /proc/self/limits");
    };
    let shown = limit.map_or("unlimited".to_string(), human_bytes);
    let evidence = format!(
        "RLIMIT_MEMLOCK soft limit {shown}; CAP_IPC_LOCK {}",
        match cap_ipc_lock {
            Some(true) => "held",
            Some(false) => "not held",
            None => "unknown",
        }
    );
    if cap_ipc_lock == Some(true) || euid_root && cap_ipc_lock != Some(false) {
        return finding(
            "memlock",
            subject,
            Severity::Ok,
            "memory registration is not limited (CAP_IPC_LOCK)",
        )
        .evidence(evidence);
    }
    match limit {
        None => finding("memlock", subject, Severity::Ok, "locked memory is unlimited").evidence(evidence),
        Some(bytes) if bytes < needed => finding(
            "memlock",
            subject,
            Severity::Fail,
            format!("locked-memory limit {shown} is below the {} a test registers: ibv_reg_mr will fail with ENOMEM", human_bytes(needed)),
        )
        .evidence(evidence)
        .fix("raise it: `ulimit -l unlimited`, `memlock unlimited` in /etc/security/limits.conf, LimitMEMLOCK=infinity in the systemd unit, or --ulimit memlock=-1 for containers"),
        Some(bytes) if bytes <= 64 << 20 => finding(
            "memlock",
            subject,
            Severity::Warn,
            format!(
                "locked-memory limit {shown} holds rdmactl's default runs (-s 4096), up to about selftest -s {} and pingpong -s {} (they pin 4× and 2× the message size), but it is small for real workloads (MPI, NCCL, storage)",
                largest_size(bytes / 4),
                largest_size(bytes / 2)
            ),
        )
        .evidence(evidence)
        .fix("raise it: `memlock unlimited` in /etc/security/limits.conf or LimitMEMLOCK=infinity in the systemd unit"),
        Some(_) => finding("memlock", subject, Severity::Ok, format!("locked-memory limit {shown}")).evidence(evidence),
    }
}

/// What the fix for "no device" builds on, gathered where the devices are listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoDeviceHint {
    /// Where rdma_rxe was seen loaded (`module/rdma_rxe` under the sysfs root, or
    /// /proc/modules on a live host); None when it is not loaded.
    pub rxe_loaded: Option<String>,
    /// A netdev that is up (not lo), to name in `rdma link add`; else `<if>`.
    pub netdev: Option<String>,
}

impl NoDeviceHint {
    fn fix(&self) -> String {
        let netdev = self.netdev.as_deref().unwrap_or("<if>");
        match &self.rxe_loaded {
            Some(_) => format!("rdma_rxe is loaded: create a Soft-RoCE device on an up netdev, `rdma link add rxe0 type rxe netdev {netdev}`; or load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...)"),
            None => format!("load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...), or for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev {netdev}"),
        }
    }
}

/// `class/infiniband` and what is in it.
pub fn kernel_finding(
    sysfs_dir: &str,
    devices: Result<&[Device], &Error>,
    hint: &NoDeviceHint,
) -> Finding {
    let rxe = |f: Finding| match &hint.rxe_loaded {
        Some(seen) => f.evidence(format!(
            "rdma_rxe is loaded ({seen}) but no rxe device was added"
        )),
        None => f,
    };
    match devices {
        Ok([]) => rxe(finding(
            "kernel",
            Subject::Host,
            Severity::Fail,
            "the RDMA core is loaded but no device is registered",
        )
        .evidence(format!("{sysfs_dir} is empty")))
        .fix(hint.fix()),
        Ok(devs) => {
            let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
            finding(
                "kernel",
                Subject::Host,
                Severity::Ok,
                format!("{} RDMA device(s): {}", devs.len(), names.join(", ")),
            )
            .evidence(format!("{sysfs_dir} lists {}", names.join(", ")))
        }
        Err(Error::NoRdma { path }) => rxe(finding(
            "kernel",
            Subject::Host,
            Severity::Fail,
            "no RDMA support in the kernel: no driver is loaded",
        )
        .evidence(format!("{} does not exist", path.display())))
        .fix(hint.fix()),
        Err(other) => finding(
            "kernel",
            Subject::Host,
            Severity::Fail,
            format!("cannot list RDMA devices: {other}"),
        )
        .evidence(format!("reading {sysfs_dir}")),
    }
}

/// What doctor learned about one device's `/dev/infiniband/uverbsN` node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeAccess {
    /// `class/infiniband_verbs/*/ibdev` names no node for the device.
    NoMapping,
    Missing {
        path: String,
    },
    Denied {
        path: String,
        errno: i32,
    },
    Usable {
        path: String,
    },
}

pub fn uverbs_finding(device: &str, access: &NodeAccess) -> Finding {
    let check = "uverbs";
    let subject = || Subject::Device(device.to_string());
    match access {
        NodeAccess::NoMapping => finding(check, subject(), Severity::Fail, "no user-space verbs node: the device cannot be used from applications")
            .evidence(format!("no class/infiniband_verbs/uverbsN has ibdev {device}"))
            .fix("load ib_uverbs (modprobe ib_uverbs)"),
        NodeAccess::Missing { path } => finding(check, subject(), Severity::Fail, format!("{path} does not exist: libibverbs silently skips the device"))
            .evidence(format!("sysfs maps {device} to {path}, which is not in /dev"))
            .fix("in a container, pass the device in (--device=/dev/infiniband/...); on a host, check udev (rdma-core's 90-rdma-*.rules)"),
        NodeAccess::Denied { path, errno } => finding(check, subject(), Severity::Fail, format!("{path} is not accessible: libibverbs silently skips the device"))
            .evidence(format!("access({path}, R_OK|W_OK) failed with {}", crate::model::errno::errno_text(*errno)))
            .fix("the kernel creates uverbs nodes 0666: check the container's device cgroup and udev rules, or run as a user that may open it"),
        NodeAccess::Usable { path } => finding(check, subject(), Severity::Ok, format!("{path} is readable and writable"))
            .evidence(format!("access({path}, R_OK|W_OK) = 0")),
    }
}

pub fn library_finding(status: Result<(), String>) -> Finding {
    match status {
        Ok(()) => finding("libibverbs", Subject::Host, Severity::Ok, "libibverbs.so.1 is loaded").evidence("dlopen(libibverbs.so.1) succeeded"),
        Err(reason) => finding("libibverbs", Subject::Host, Severity::Fail, "libibverbs.so.1 cannot be loaded: no application can use RDMA")
            .evidence(reason)
            .fix("install it: Debian/Ubuntu `apt install libibverbs1 ibverbs-providers`, RHEL `dnf install libibverbs`"),
    }
}

/// A sysfs device that `ibv_get_device_list` does not return has no usable provider.
pub fn provider_finding(
    device: &Device,
    verbs_devices: &[String],
    provider_files: &ProviderFiles,
) -> Finding {
    let provider = provider_for(
        device.driver.as_deref(),
        device.node_desc.as_deref(),
        &device.name,
    );
    let name = provider.unwrap_or("?");
    let mut evidence = vec![format!(
        "kernel driver {}; provider {name}",
        device
            .driver
            .as_deref()
            .unwrap_or("(none, software device)")
    )];
    if let Some(lib) = &provider_files.library {
        evidence.push(format!("provider library {lib}"));
    }
    if let Some(driver_file) = &provider_files.driver_file {
        evidence.push(format!("{driver_file} present"));
    }
    if verbs_devices.iter().any(|d| d == &device.name) {
        return Finding {
            evidence,
            ..finding(
                "provider",
                Subject::Device(device.name.clone()),
                Severity::Ok,
                format!("libibverbs sees {} (provider {name})", device.name),
            )
        };
    }
    evidence.insert(
        0,
        format!(
            "in sysfs but not in ibv_get_device_list ({})",
            if verbs_devices.is_empty() {
                "empty".to_string()
            } else {
                verbs_devices.join(", ")
            }
        ),
    );
    let missing = match (&provider_files.library, &provider_files.driver_file) {
        (None, _) => format!("lib{name}-rdmav*.so is not installed"),
        (Some(_), None) => format!("/etc/libibverbs.d/{name}.driver is missing"),
        (Some(_), Some(_)) => "the provider is installed but did not claim the device".to_string(),
    };
    Finding {
        evidence,
        ..finding(
            "provider",
            Subject::Device(device.name.clone()),
            Severity::Fail,
            format!("libibverbs has no provider for {}: {missing}", device.name),
        )
        .fix("install the provider package: Debian/Ubuntu `apt install ibverbs-providers`, RHEL `dnf install libibverbs`; an rdma-core much older than the kernel driver may not know the device")
    }
}

/// Where the provider's files were found, if anywhere.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFiles {
    pub library: Option<String>,
    pub driver_file: Option<String>,
}

/// The IB MTU a RoCE port can use over a netdev of this MTU: the largest of 256..4096
/// that fits once the RoCE headers are taken off, as the kernel's iboe_get_mtu does, so
/// a 1500-byte netdev gives 1024 and 9000 gives 4096. None when not even 256 fits.
pub fn roce_mtu_for_netdev(netdev_mtu: u32) -> Option<u32> {
    // GRH 40 + UDP 8 + BTH 12 + XRC ext 4 + AtomicETH 28 + ICRC 4, as iboe_get_mtu counts.
    const ROCE_OVERHEAD: u32 = 96;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|m| m + ROCE_OVERHEAD <= netdev_mtu)
}

/// The RoCE MTU over netdev `nd` of MTU `mtu`, against the port's active MTU when verbs
/// gave it (`why_unknown` says why not). doctor and check judge the MTU with this one rule.
pub fn mtu_finding(nd: &str, mtu: u32, active_mtu: Option<u32>, why_unknown: &str) -> Finding {
    let Some(fits) = roce_mtu_for_netdev(mtu) else {
        return Finding::new(
            Severity::Fail,
            "mtu",
            format!(
                "netdev {nd} MTU {mtu} is too small to carry RoCE (256-byte packets need {})",
                256 + 96
            ),
        )
        .evidence(format!("netdev {nd} MTU {mtu}"))
        .fix(format!("ip link set {nd} mtu 1500"));
    };
    let evidence = format!(
        "netdev {nd} MTU {mtu} (fits RoCE MTU {fits}); active_mtu {}",
        active_mtu.map_or(why_unknown.to_string(), |m| m.to_string())
    );
    match active_mtu {
        Some(a) if a > fits => Finding::new(Severity::Fail, "mtu", format!("active MTU {a} exceeds what the netdev MTU {mtu} carries: large messages will be dropped"))
            .evidence(evidence)
            .fix(format!("raise the netdev MTU (`ip link set {nd} mtu {}`) or use -m {fits}", a + 100)),
        Some(a) if a < fits => Finding::new(Severity::Warn, "mtu", format!("active MTU {a} is below the {fits} the netdev MTU allows"))
            .evidence(evidence)
            .fix("the port did not pick up the MTU change: re-create the rxe link or reload the driver"),
        _ if mtu < 1500 => Finding::new(Severity::Warn, "mtu", format!("netdev {nd} MTU {mtu} limits RoCE to {fits}-byte packets"))
            .evidence(evidence)
            .fix(format!("ip link set {nd} mtu 1500 (or 9000 for 4096-byte RoCE MTU)")),
        _ => Finding::new(Severity::Ok, "mtu", format!("RoCE MTU {fits} over netdev {nd} MTU {mtu}; both peers must agree (rdmactl pingpong uses the smaller)")).evidence(evidence),
    }
}

/// What doctor learned about the host's network, where it looked (not for a captured tree).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostNet {
    /// rxe (kernel 6.1) works only in the initial network namespace.
    pub in_init_netns: Option<bool>,
    /// netdev name → its addresses as `ip addr` prints them (`192.168.77.1/24`); None when
    /// not looked up (a captured tree, or rtnetlink failed).
    pub addresses: Option<std::collections::BTreeMap<String, Vec<String>>>,
    /// The netdevs this process's network namespace shows; None when not looked up.
    pub visible_netdevs: Option<Vec<String>>,
}

impl HostNet {
    /// The netdev lives in another network namespace than this process's (the device is
    /// shared into this one, as `rdma system` mode "shared" does by default).
    fn hides(&self, netdev: &str) -> bool {
        self.in_init_netns == Some(false)
            && self
                .visible_netdevs
                .as_ref()
                .is_some_and(|v| !v.iter().any(|n| n == netdev))
    }
}

/// RDMA netdevs of this host that share an IPv4 subnet while at least one of them answers
/// ARP for any local address (`arp_ignore` 0): each group as (subnet, its netdevs).
pub fn arp_flux_groups(netdevs: &[RoceNetdev]) -> Vec<(String, Vec<&RoceNetdev>)> {
    let mut groups: Vec<(String, Vec<&RoceNetdev>)> = Vec::new();
    for (i, a) in netdevs.iter().enumerate() {
        for b in &netdevs[i + 1..] {
            if a.netdev == b.netdev || a.paired_with(b) {
                continue;
            }
            let Some(subnet) = shared_subnet(a, b) else {
                continue;
            };
            let group = match groups.iter_mut().find(|(s, _)| *s == subnet) {
                Some(g) => g,
                None => {
                    groups.push((subnet, Vec::new()));
                    groups.last_mut().expect("just pushed")
                }
            };
            for n in [a, b] {
                if !group.1.iter().any(|m| m.netdev == n.netdev) {
                    group.1.push(n);
                }
            }
        }
    }
    groups.retain(|(_, members)| members.iter().any(|n| n.arp_ignore == Some(0)));
    groups
}

/// ARP flux, as a doctor finding: one per subnet.
pub fn arp_flux_findings(netdevs: &[RoceNetdev]) -> Vec<Finding> {
    arp_flux_groups(netdevs)
        .iter()
        .map(|(subnet, members)| arp_flux_finding(subnet, members))
        .collect()
}

/// The ARP flux finding of one subnet's group (doctor, and check for a port in it).
pub fn arp_flux_finding(subnet: &str, members: &[&RoceNetdev]) -> Finding {
    let names: Vec<String> = members
        .iter()
        .map(|n| format!("{} ({})", n.port, n.netdev))
        .collect();
    let mut f = finding(
        "arp-flux",
        Subject::Host,
        Severity::Warn,
        format!(
            "{} share {subnet} and answer ARP for each other's addresses (arp_ignore 0): on one switch, a peer may send the RoCE packets meant for one port to another port's MAC, which drops them (its QPs do not know the QPN); pairs crawl through retries or fail with IBV_WC_RETRY_EXC_ERR",
            names.join(", ")
        ),
    );
    for n in members {
        f = f.evidence(format!(
            "{}: arp_ignore (max of all, {}) = {}, arp_announce = {}",
            n.netdev,
            n.netdev,
            n.arp_ignore.map_or("unknown".into(), |v| v.to_string()),
            n.arp_announce.map_or("unknown".into(), |v| v.to_string())
        ));
    }
    f.fix(format!(
        "sysctl -w net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 {}; or source-based policy routing per netdev (ip rule add from ADDR table N); a host whose ports sit on separate links (a veth pair, point-to-point cables) is not affected",
        members
            .iter()
            .map(|n| format!("net.ipv4.conf.{}.arp_ignore=1 net.ipv4.conf.{}.arp_announce=2", n.netdev, n.netdev))
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// One group in a line, as fabric's drift report and the pair explanation quote it:
/// `e0, e1 on 10.0.0.0/24 answer ARP for each other's addresses (e0 arp_ignore 0, e1 arp_ignore 1)`.
pub fn arp_flux_line(subnet: &str, members: &[&RoceNetdev]) -> String {
    let names: Vec<&str> = members.iter().map(|n| n.netdev.as_str()).collect();
    let settings: Vec<String> = members
        .iter()
        .map(|n| {
            format!(
                "{} arp_ignore {}",
                n.netdev,
                n.arp_ignore.map_or("?".into(), |v| v.to_string())
            )
        })
        .collect();
    format!(
        "{} on {subnet} answer ARP for each other's addresses ({})",
        names.join(", "),
        settings.join(", ")
    )
}

/// The ARP flux fix, wherever a failure or a suspect is explained by it.
pub const ARP_FLUX_FIX: &str = "on each of those netdevs (and all): sysctl -w net.ipv4.conf.DEV.arp_ignore=1 net.ipv4.conf.DEV.arp_announce=2, or source-based policy routing per netdev (ip rule add from ADDR table N)";

fn shared_subnet(a: &RoceNetdev, b: &RoceNetdev) -> Option<String> {
    a.ipv4.iter().find_map(|(addr, len)| {
        b.ipv4.iter().find_map(|(other, _)| {
            let bits = u32::from((*len).min(32));
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            (*len < 32 && u32::from(*addr) & mask == u32::from(*other) & mask).then(|| {
                format!(
                    "{}/{len}",
                    std::net::Ipv4Addr::from(u32::from(*addr) & mask)
                )
            })
        })
    })
}

/// Several RoCE netdevs of one host on one subnet: a test between two of them (the usual
/// first test on a new host, or a veth rig) needs each to accept ARP from a local sender,
/// and both ends of one link should carry the same MTU.
pub fn same_subnet_findings(netdevs: &[RoceNetdev]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, a) in netdevs.iter().enumerate() {
        for b in &netdevs[i + 1..] {
            if a.netdev == b.netdev {
                continue;
            }
            let Some(subnet) = shared_subnet(a, b) else {
                continue;
            };
            let pair = format!("{} ({}) and {} ({})", a.port, a.netdev, b.port, b.netdev);
            let refusing: Vec<&RoceNetdev> = [a, b]
                .into_iter()
                .filter(|n| n.accept_local == Some(false) || n.rp_filter == Some(1))
                .collect();
            if !refusing.is_empty() {
                let mut f = finding(
                    "same-host-arp",
                    Subject::Host,
                    Severity::Warn,
                    format!(
                        "{pair} share {subnet} on this host: a ping-pong between them fails at RTR (ETIMEDOUT), because {} drops ARP requests whose sender address is local",
                        refusing.iter().map(|n| n.netdev.as_str()).collect::<Vec<_>>().join(" and ")
                    ),
                );
                for n in [a, b] {
                    f = f.evidence(format!(
                        "{}: accept_local (all or {}) = {}, rp_filter (max of all, {}) = {}",
                        n.netdev,
                        n.netdev,
                        n.accept_local
                            .map_or("unknown".into(), |v| u8::from(v).to_string()),
                        n.netdev,
                        n.rp_filter.map_or("unknown".into(), |v| v.to_string())
                    ));
                }
                f = f.fix(format!(
                    "for tests between them: sysctl -w net.ipv4.conf.all.accept_local=1 net.ipv4.conf.{}.accept_local=1 net.ipv4.conf.{}.accept_local=1, with rp_filter 0 or 2",
                    a.netdev, b.netdev
                ));
                out.push(f);
            }
            if let (Some(ma), Some(mb)) = (a.mtu, b.mtu) {
                if ma != mb {
                    let (ra, rb) = (roce_mtu_for_netdev(ma), roce_mtu_for_netdev(mb));
                    out.push(
                        finding(
                            "mtu-mismatch",
                            Subject::Host,
                            Severity::Warn,
                            format!(
                                "{pair} share {subnet} with netdev MTUs {ma} and {mb}: frames above {} are dropped by the smaller end, and the RoCE MTUs they allow differ ({} and {})",
                                ma.min(mb),
                                ra.map_or("none".into(), |m| m.to_string()),
                                rb.map_or("none".into(), |m| m.to_string())
                            ),
                        )
                        .evidence(format!("{} MTU {ma}", a.netdev))
                        .evidence(format!("{} MTU {mb}", b.netdev))
                        .fix(format!(
                            "give every port on {subnet} the same MTU (ip link set DEV mtu {})",
                            ma.max(mb)
                        )),
                    );
                }
            }
        }
    }
    out
}

/// Port state and, on RoCE, the netdev it rides on. `active_mtu` comes from verbs when
/// they are available.
pub fn port_findings(port: &Port, active_mtu: Option<u32>, host: &HostNet) -> Vec<Finding> {
    let subject = Subject::Port(port.device.clone(), port.number);
    let mut out = Vec::new();
    let state = port
        .state
        .as_ref()
        .map_or("unknown".to_string(), |s| s.name().to_string());
    let phys = port
        .phys_state
        .as_ref()
        .map_or("unknown".to_string(), |s| s.name().to_string());
    let evidence = format!("state {state}, physical state {phys}");
    let ethernet = port.link_layer == Some(LinkLayer::Ethernet);
    let active = port.state == Some(PortState::Active);
    let state_finding = if active {
        finding(
            "port-state",
            subject.clone(),
            Severity::Ok,
            "port is ACTIVE",
        )
        .evidence(evidence)
    } else if ethernet {
        let netdev = port.netdev.as_ref();
        let name = netdev.map_or("its netdev".to_string(), |n| n.name.clone());
        let fix = match netdev.and_then(|n| n.operstate.as_deref()) {
            Some("down") => format!("bring the interface up: `ip link set {name} up`"),
            _ => format!("{name} has no carrier: check the cable and the switch port (for veth, the peer end)"),
        };
        finding(
            "port-state",
            subject.clone(),
            Severity::Fail,
            format!("port is {state}: a RoCE port follows its netdev, so {name} has no link"),
        )
        .evidence(evidence)
        .fix(fix)
    } else {
        let why = match port.phys_state {
            Some(PhysState::LinkUp) => {
                "the link is up but no subnet manager has configured the port"
            }
            Some(PhysState::Polling) => "no physical link: the port is polling for a peer",
            Some(PhysState::Disabled) => "the port is administratively disabled",
            _ => "the port is not usable",
        };
        finding("port-state", subject.clone(), Severity::Fail, format!("port is {state}: {why}"))
            .evidence(evidence)
            .fix(if port.phys_state == Some(PhysState::LinkUp) { "start a subnet manager (`systemctl start opensm`) on one node of the fabric, or check the SM's logs; an SR-IOV VF needs a virtualization-aware SM" } else { "check the cable and the switch port (`ibstat`, `iblinkinfo`)" })
    };
    // One root cause, one failure: what follows from a port that is not ACTIVE (its LID, its
    // netdev's state) is evidence under the port-state failure, not a failure of its own.
    if !active {
        let mut state_finding = state_finding;
        if port.link_layer == Some(LinkLayer::InfiniBand) {
            if let Some(lid) = port.lid {
                state_finding = state_finding.evidence(format!(
                    "lid {lid:#x}, sm_lid {:#x}: no usable address while the port is {state}",
                    port.sm_lid.unwrap_or(0)
                ));
            }
        }
        if let Some(oper) = port.netdev.as_ref().and_then(|n| n.operstate.as_deref()) {
            let nd = &port
                .netdev
                .as_ref()
                .map(|n| n.name.clone())
                .unwrap_or_default();
            state_finding = state_finding.evidence(format!("class/net/{nd}/operstate {oper}"));
        }
        out.push(state_finding);
        if ethernet {
            out.extend(gid_findings(port, &subject));
            out.extend(netns_finding(port, host, subject));
        }
        return out;
    }
    out.push(state_finding);
    if !ethernet {
        if port.link_layer == Some(LinkLayer::InfiniBand) {
            out.push(match port.lid {
                // An incomplete tree (no `lid` file) proves nothing either way.
                None => return out,
                Some(0) if active => finding("lid", subject, Severity::Fail, "ACTIVE InfiniBand port with LID 0")
                    .evidence("lid 0x0")
                    .fix("check the subnet manager's logs (`sminfo`, `journalctl -u opensm`)"),
                Some(0) => finding("lid", subject, Severity::Fail, "LID 0: no subnet manager has assigned an address, so ibv_rc_pingpong says \"Couldn't get local LID\"")
                    .evidence(format!("lid {}, sm_lid {}", port.lid.unwrap_or(0), port.sm_lid.unwrap_or(0)))
                    .fix("start opensm (`systemctl start opensm`) on one node of the fabric"),
                Some(0xffff) => finding("lid", subject, Severity::Fail, "LID 65535 (permissive): the port has no valid address").evidence("lid 0xffff").fix("check the link and the subnet manager"),
                Some(lid) => finding("lid", subject, Severity::Ok, format!("LID {lid}, SM LID {}", port.sm_lid.unwrap_or(0))).evidence(format!("lid {lid:#x}")),
            });
        }
        return out;
    }
    let Some(netdev) = &port.netdev else {
        out.push(finding("netdev", subject, Severity::Fail, "RoCE port without a netdev: no GID can be formed")
            .evidence("no gid_attrs/ndevs entry and no device/net interface")
            .fix("for rxe, recreate it on an existing interface: rdma link add rxe0 type rxe netdev <if>"));
        return out;
    };
    let nd = &netdev.name;
    if host.hides(nd) {
        // Said as it is: the process is elsewhere, the device is not.
        out.push(
            finding(
                "netns",
                subject.clone(),
                Severity::Info,
                format!("this process runs outside the initial network namespace, where {nd} lives: its state and addresses are not visible from here; {} itself stays usable (in shared mode, the default: `rdma system` shows the mode)", port.device),
            )
            .evidence("/proc/self/ns/net differs from /proc/1/ns/net")
            .evidence(format!("{nd} is not among this namespace's netdevs (rtnetlink)"))
            .fix(format!("run doctor in the initial namespace to check {nd}; with `rdma system set netns exclusive`, move the device in with `rdma dev set {} netns NS`", port.device)),
        );
        out.extend(gid_findings(port, &subject));
        return out;
    }
    let oper = netdev.operstate.as_deref().unwrap_or("unknown");
    let addresses = host
        .addresses
        .as_ref()
        .map(|all| all.get(nd).cloned().unwrap_or_default());
    out.push(if oper == "up" || oper == "unknown" {
        match addresses {
            None => finding("netdev", subject.clone(), Severity::Ok, format!("netdev {nd} is {oper}"))
                .evidence(format!("class/net/{nd}/operstate {oper}")),
            Some(a) if a.is_empty() => finding("netdev", subject.clone(), Severity::Warn, format!("netdev {nd} is {oper} but has no IP address: RoCE v2 GIDs come from its addresses"))
                .evidence(format!("class/net/{nd}/operstate {oper}"))
                .evidence(format!("ip addr show dev {nd}: no address"))
                .fix(format!("ip addr add <addr>/<len> dev {nd}")),
            Some(a) => finding("netdev", subject.clone(), Severity::Ok, format!("netdev {nd} is {oper}, addresses {}", short_list(&a, 6)))
                .evidence(format!("class/net/{nd}/operstate {oper}")),
        }
    } else if oper == "lowerlayerdown" || oper == "dormant" {
        finding("netdev", subject.clone(), Severity::Fail, format!("netdev {nd} is administratively up but has no carrier ({oper})"))
            .evidence(format!("class/net/{nd}/operstate {oper}"))
            .fix("check the cable, the switch port, or the lower device (for veth: the peer end; for a VLAN: its parent)")
    } else {
        finding("netdev", subject.clone(), Severity::Fail, format!("netdev {nd} is {oper}"))
            .evidence(format!("class/net/{nd}/operstate {oper}"))
            .fix(format!("ip link set {nd} up"))
    });
    out.extend(gid_findings(port, &subject));
    if let (Some(mtu), true) = (netdev.mtu, active) {
        let why_unknown = "unknown (no verbs)";
        out.push(mtu_finding(nd, mtu, active_mtu, why_unknown).about(subject.clone()));
    }
    out.extend(netns_finding(port, host, subject));
    out
}

/// Whether the RoCE port has an IPv4-mapped GID, or at least a routable one.
fn gid_findings(port: &Port, subject: &Subject) -> Option<Finding> {
    let nd = port
        .netdev
        .as_ref()
        .map_or("its netdev", |n| n.name.as_str());
    let v4 = port.gids.iter().find(|g| g.gid.ipv4().is_some());
    let routable = port
        .gids
        .iter()
        .filter(|g| !g.gid.is_link_local() && !g.gid.is_zero())
        .count();
    Some(match v4 {
        Some(g) => finding("ipv4-gid", subject.clone(), Severity::Ok, format!("IPv4-mapped GID at index {} ({})", g.index, g.gid.ip()))
            .evidence(format!("gids/{} = {}", g.index, g.gid)),
        None if routable > 0 => finding("ipv4-gid", subject.clone(), Severity::Warn, format!("no IPv4 address on {nd}: only IPv6 GIDs, while NCCL and perftest default to IPv4"))
            .evidence(format!("{routable} non-link-local GID(s), none in ::ffff:0:0/96"))
            .fix(format!("add an IPv4 address (`ip addr add <addr>/<len> dev {nd}`), or set NCCL_IB_ADDR_FAMILY=AF_INET6")),
        None => finding("ipv4-gid", subject.clone(), Severity::Fail, format!("{nd} has no IP address: only the link-local GID exists, which does not route"))
            .evidence("every populated GID is link-local (fe80::/64)")
            .fix(format!("ip addr add <addr>/<len> dev {nd}")),
    })
}

/// A full GID table: an address added after the table filled has no GID, and RDMA to or
/// from it fails with nothing in the table to say so. `table_len` counts the slots.
pub fn gid_table_finding(port: &Port, table_len: usize, host: &HostNet) -> Option<Finding> {
    let populated = port.gids.len();
    if table_len == 0 || populated < table_len {
        return None;
    }
    let in_table: std::collections::HashSet<std::net::IpAddr> =
        port.gids.iter().map(|e| e.gid.ip()).collect();
    let mut missing = 0usize;
    if let Some(all) = &host.addresses {
        for dev in &port.gid_netdevs {
            for a in all.get(dev).into_iter().flatten() {
                let ip = a
                    .split('/')
                    .next()
                    .and_then(|ip| ip.parse::<std::net::IpAddr>().ok());
                if ip.is_some_and(|ip| !in_table.contains(&ip.to_canonical())) {
                    missing += 1;
                }
            }
        }
    }
    let subject = Subject::Port(port.device.clone(), port.number);
    let lost = if missing > 0 {
        format!(
            ": {missing} address(es) of {} have no GID, and RDMA to or from them fails",
            port.gid_netdevs.join(", ")
        )
    } else {
        ": the next address added gets no GID".into()
    };
    Some(
        finding(
            "gid-table",
            subject,
            Severity::Warn,
            format!("the GID table is full ({populated} of {table_len} slots){lost}"),
        )
        .evidence(format!("{populated} populated gids/N of {table_len}"))
        .fix("remove addresses the RDMA traffic does not use (each address takes one slot per RoCE type), or spread them over more ports"),
    )
}

/// The same GID on two devices (rxe on a bond and on one of its slaves): the kernel maps
/// an address to one device, so traffic for the GID can land on either.
pub fn duplicate_gid_findings(ports: &[&Port]) -> Vec<Finding> {
    use std::collections::BTreeMap;
    let mut owners: BTreeMap<crate::model::gid::Gid, Vec<(String, u32)>> = BTreeMap::new();
    for p in ports {
        for e in &p.gids {
            if e.gid.is_zero() {
                continue;
            }
            let who = format!("{}/{}", p.device, p.number);
            let list = owners.entry(e.gid).or_default();
            // v1 and v2 twins on one port are one claim.
            if !list.iter().any(|(w, _)| *w == who) {
                list.push((who, e.index));
            }
        }
    }
    // One finding per set of ports sharing GIDs, with the count and an example.
    type Claims = Vec<(crate::model::gid::Gid, Vec<(String, u32)>)>;
    let mut by_ports: BTreeMap<Vec<String>, Claims> = BTreeMap::new();
    for (gid, list) in owners.into_iter().filter(|(_, l)| l.len() > 1) {
        let key: Vec<String> = list.iter().map(|(w, _)| w.clone()).collect();
        by_ports.entry(key).or_default().push((gid, list));
    }
    by_ports
        .into_iter()
        .map(|(ports, gids)| {
            let (gid, list) = &gids[0];
            let where_: Vec<String> = list
                .iter()
                .map(|(w, i)| format!("{w} index {i}"))
                .collect();
            finding(
                "duplicate-gid",
                Subject::Host,
                Severity::Fail,
                format!(
                    "{} claim the same GID{}: {} ({}); the kernel maps an address to one device, so RoCE traffic for it can land on either",
                    ports.join(" and "),
                    if gids.len() > 1 { format!(" and {} more", gids.len() - 1) } else { String::new() },
                    gid.ip(),
                    where_.join(", ")
                ),
            )
            .evidence(format!("{} GID(s) in both tables", gids.len()))
            .fix("keep one RDMA device per netdev address: for rxe on a bond, create it on the bond only, not on its slaves (rdma link delete DEV)")
        })
        .collect()
}

/// rxe outside the initial network namespace cannot carry a QP on kernel 6.1.
fn netns_finding(port: &Port, host: &HostNet, subject: Subject) -> Option<Finding> {
    // Only when the rxe's netdev is in this (non-initial) namespace was it created here.
    let here = port.netdev.as_ref().is_some_and(|n| !host.hides(&n.name));
    (port.device.starts_with("rxe") && host.in_init_netns == Some(false) && here).then(|| {
        finding("netns", subject, Severity::Fail, "rxe outside the initial network namespace: QPs fail with \"local QP operation error\"")
            .evidence("/proc/self/ns/net differs from /proc/1/ns/net")
            .fix("create and use rxe devices in the host's network namespace (kernel 6.1 rxe is init_net only)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roce(port: &str, netdev: &str, addr: &str, mtu: u32, accept_local: bool) -> RoceNetdev {
        RoceNetdev {
            port: port.into(),
            netdev: netdev.into(),
            mtu: Some(mtu),
            ipv4: vec![(addr.parse().unwrap(), 24)],
            accept_local: Some(accept_local),
            rp_filter: Some(0),
            arp_ignore: Some(1),
            arp_announce: Some(2),
            link_peer: None,
        }
    }

    /// Ports on one subnet that answer ARP for each other: one finding per subnet, with
    /// every netdev's setting and the sysctls to set; arp_ignore 1 everywhere is clean.
    #[test]
    fn arp_flux_on_one_subnet() {
        let mut ports = vec![
            roce("rxe0/1", "e0", "10.77.0.10", 1500, true),
            roce("rxe1/1", "e1", "10.77.0.11", 1500, true),
            roce("rxe2/1", "e2", "10.77.0.12", 1500, true),
            roce("rxe3/1", "e3", "10.78.0.1", 1500, true),
        ];
        assert!(arp_flux_findings(&ports).is_empty());
        ports[1].arp_ignore = Some(0);
        let f = arp_flux_findings(&ports);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "arp-flux");
        assert!(
            f[0].message
                .starts_with("rxe0/1 (e0), rxe1/1 (e1), rxe2/1 (e2) share 10.77.0.0/24"),
            "{}",
            f[0].message
        );
        assert!(f[0]
            .evidence
            .contains(&"e1: arp_ignore (max of all, e1) = 0, arp_announce = 2".to_string()));
        assert!(f[0]
            .fix
            .as_deref()
            .unwrap()
            .contains("net.ipv4.conf.e1.arp_ignore=1"));
        assert!(!f[0].message.contains("e3"));
        // The two ends of one veth pair hear only each other.
        let mut pair = vec![
            roce("rxe0/1", "veth0", "192.168.77.1", 1500, true),
            roce("rxe1/1", "veth1", "192.168.77.2", 1500, true),
        ];
        pair[0].arp_ignore = Some(0);
        pair[0].link_peer = Some("veth1".into());
        pair[1].link_peer = Some("veth0".into());
        assert!(arp_flux_findings(&pair).is_empty());
        pair[1].link_peer = None;
        assert_eq!(arp_flux_findings(&pair).len(), 1);
    }

    /// Two ports of one host on one subnet: accept_local 0 is a warning naming the drop
    /// and the sysctl; 9000 against 1500 is one too; other subnets are left alone.
    #[test]
    fn same_subnet_ports_on_one_host() {
        let a = roce("rxe0/1", "veth0", "192.168.77.1", 1500, false);
        let b = roce("rxe1/1", "veth1", "192.168.77.2", 1500, true);
        let f = same_subnet_findings(&[a.clone(), b.clone()]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "same-host-arp");
        assert_eq!(f[0].severity, Severity::Warn);
        assert!(f[0].message.contains("192.168.77.0/24"), "{}", f[0].message);
        assert!(f[0].message.contains("veth0 drops ARP"), "{}", f[0].message);
        assert!(f[0].fix.as_deref().unwrap().contains("accept_local=1"));

        let fine = roce("rxe0/1", "veth0", "192.168.77.1", 9000, true);
        let f = same_subnet_findings(&[fine, b.clone()]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "mtu-mismatch");
        assert!(f[0].message.contains("9000 and 1500"), "{}", f[0].message);

        let elsewhere = roce("rxe0/1", "veth0", "10.0.0.1", 9000, false);
        assert!(same_subnet_findings(&[elsewhere, b]).is_empty());
    }

    const LIMITS: &str =
        "Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              unlimited            unlimited            seconds   \n\
Max locked memory         16384                16384                bytes     \n";

    /// With no device, the fix says what is left to do: with rdma_rxe loaded only the
    /// `rdma link add`, on a netdev that is up.
    #[test]
    fn no_device_fix_follows_what_is_loaded() {
        let none: &[Device] = &[];
        let plain = kernel_finding("/sys/class/infiniband", Ok(none), &NoDeviceHint::default());
        assert!(plain
            .fix
            .as_deref()
            .unwrap()
            .contains("modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <if>"));
        let hint = NoDeviceHint {
            rxe_loaded: Some("/proc/modules lists rdma_rxe".into()),
            netdev: Some("eth0".into()),
        };
        let f = kernel_finding("/sys/class/infiniband", Ok(none), &hint);
        let fix = f.fix.as_deref().unwrap();
        assert!(!fix.contains("modprobe"), "{fix}");
        assert!(
            fix.contains("`rdma link add rxe0 type rxe netdev eth0`"),
            "{fix}"
        );
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("rdma_rxe is loaded (/proc/modules lists rdma_rxe)")));
    }

    #[test]
    fn memlock_limit_forms() {
        assert_eq!(parse_memlock_soft_limit(LIMITS), Some(Some(16384)));
        let unlimited = LIMITS.replace(
            "16384                16384",
            "unlimited            unlimited",
        );
        assert_eq!(parse_memlock_soft_limit(&unlimited), Some(None));
        assert_eq!(parse_memlock_soft_limit("Max cpu time unlimited"), None);
        assert_eq!(parse_memlock_soft_limit("Max locked memory  lots"), None);
    }

    #[test]
    fn cap_ipc_lock_bit() {
        assert_eq!(
            parse_has_cap_ipc_lock("CapEff:\t000001fffeffffff\n"),
            Some(true)
        );
        assert_eq!(
            parse_has_cap_ipc_lock("CapEff:\t0000000000000000\n"),
            Some(false)
        );
        assert_eq!(
            parse_has_cap_ipc_lock("CapEff:\t0000000000004000\n"),
            Some(true)
        );
        assert_eq!(parse_has_cap_ipc_lock("CapPrm:\t0000000000004000\n"), None);
    }

    #[test]
    fn providers() {
        let cases = [
            (Some("mlx5_core"), "mlx5_0", Some("mlx5")),
            (None, "rxe0", Some("rxe")),
            (None, "siw_eth0", Some("siw")),
            (Some("bnxt_en"), "bnxt_re0", Some("bnxt_re")),
            (Some("hfi1"), "hfi1_0", Some("hfi1verbs")),
            (None, "mystery0", None),
        ];
        for (driver, dev, want) in cases {
            assert_eq!(provider_for(driver, None, dev), want, "{driver:?} {dev}");
        }
        // A renamed rxe device: its node_desc still says rxe.
        assert_eq!(provider_for(None, Some("rxe"), "roce7"), Some("rxe"));
        {}
    }

    #[test]
    fn memlock_verdicts() {
        let need = 64 << 10;
        let v = |limit, cap, root| memlock_finding(limit, cap, root, need).severity;
        assert_eq!(v(Some(Some(16 << 10)), Some(false), false), Severity::Fail);
        assert_eq!(v(Some(Some(16 << 10)), Some(true), false), Severity::Ok);
        assert_eq!(v(Some(Some(8 << 20)), Some(false), false), Severity::Warn);
        assert_eq!(v(Some(None), Some(false), false), Severity::Ok);
        assert_eq!(v(None, None, false), Severity::Warn);
        let fail = memlock_finding(Some(Some(16 << 10)), Some(false), false, need);
        assert!(
            fail.message.contains("16 KiB") && fail.message.contains("ENOMEM"),
            "{}",
            fail.message
        );
        assert!(fail.fix.unwrap().contains("limits.conf"));
    }

    #[test]
    fn roce_mtu_follows_the_netdev() {
        for (netdev, want) in [
            (1500, Some(1024)),
            (9000, Some(4096)),
            (4200, Some(4096)),
            (4000, Some(2048)),
            (2200, Some(2048)),
            (1100, Some(512)),
            (352, Some(256)),
            (300, None),
        ] {
            assert_eq!(roce_mtu_for_netdev(netdev), want, "netdev MTU {netdev}");
        }
    }

    fn roce_port(operstate: &str, mtu: u32) -> Port {
        use crate::model::device::{GidEntry, GidType, Netdev};
        use crate::model::gid::Gid;
        Port {
            device: "rxe0".into(),
            number: 1,
            state: Some(PortState::Active),
            phys_state: Some(PhysState::LinkUp),
            rate: None,
            link_layer: Some(LinkLayer::Ethernet),
            lid: Some(0),
            sm_lid: Some(0),
            lmc: Some(0),
            sm_sl: Some(0),
            cap_mask: None,
            netdev: Some(Netdev {
                name: "veth0".into(),
                operstate: Some(operstate.into()),
                mtu: Some(mtu),
                address: None,
            }),
            netdev_source: None,
            gid_netdevs: vec!["veth0".into()],
            gids: vec![GidEntry {
                index: 1,
                gid: Gid::parse("::ffff:192.168.77.1").unwrap(),
                gid_type: Some(GidType::RoceV2),
                netdev: Some("veth0".into()),
            }],
            active_mtu: None,
            max_mtu: None,
            verbs: crate::model::device::VerbsStatus::not_asked(),
            read_problems: vec![],
        }
    }

    /// rxe on a bond and on its slave: one GID, two devices, one failure naming both.
    #[test]
    fn one_gid_on_two_devices_is_flagged() {
        let a = roce_port("up", 1500);
        let mut b = roce_port("up", 1500);
        b.device = "rxe1".into();
        let f = duplicate_gid_findings(&[&a, &b]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "duplicate-gid");
        assert_eq!(f[0].severity, Severity::Fail);
        assert!(
            f[0].message
                .contains("rxe0/1 and rxe1/1 claim the same GID: 192.168.77.1"),
            "{}",
            f[0].message
        );
        assert!(duplicate_gid_findings(&[&a]).is_empty());
    }

    /// A full table warns, and counts the netdev's addresses that got no GID.
    #[test]
    fn a_full_gid_table_counts_the_addresses_left_out() {
        let port = roce_port("up", 1500);
        let host = HostNet {
            addresses: Some(
                [(
                    "veth0".to_string(),
                    vec![
                        "192.168.77.1/24".into(),
                        "10.0.0.7/24".into(),
                        "10.0.0.8/24".into(),
                    ],
                )]
                .into_iter()
                .collect(),
            ),
            ..HostNet::default()
        };
        let f = gid_table_finding(&port, 1, &host).expect("full");
        assert_eq!(f.severity, Severity::Warn);
        assert!(
            f.message
                .contains("full (1 of 1 slots): 2 address(es) of veth0 have no GID"),
            "{}",
            f.message
        );
        assert!(gid_table_finding(&port, 1024, &host).is_none());
    }

    /// In another network namespace, with the netdev not visible from it: said as it is,
    /// not as an rxe created outside the initial namespace.
    #[test]
    fn another_namespace_is_said_as_it_is() {
        let host = HostNet {
            in_init_netns: Some(false),
            visible_netdevs: Some(vec!["lo".into()]),
            ..HostNet::default()
        };
        let f = port_findings(&roce_port("unknown", 1500), None, &host);
        let ns = f.iter().find(|f| f.code == "netns").expect("netns finding");
        assert_eq!(ns.severity, Severity::Info, "{ns:?}");
        assert!(
            ns.message
                .contains("this process runs outside the initial network namespace"),
            "{}",
            ns.message
        );
        assert!(!f.iter().any(|f| f.code == "netdev"), "{f:?}");
        assert!(!f.iter().any(|f| f.severity == Severity::Fail), "{f:?}");
    }

    fn netns(in_init_netns: Option<bool>) -> HostNet {
        HostNet {
            in_init_netns,
            addresses: None,
            visible_netdevs: Some(vec!["veth0".into()]),
        }
    }

    #[test]
    fn netdev_addresses_are_named() {
        let with = |list: &[&str]| HostNet {
            in_init_netns: Some(true),
            addresses: Some(
                [(
                    "veth0".to_string(),
                    list.iter().map(|a| a.to_string()).collect(),
                )]
                .into_iter()
                .collect(),
            ),
            visible_netdevs: None,
        };
        let f = port_findings(&roce_port("up", 1500), None, &with(&["192.168.77.1/24"]));
        let netdev = f.iter().find(|f| f.code == "netdev").unwrap();
        assert_eq!(netdev.severity, Severity::Ok);
        assert!(
            netdev.message.contains("addresses 192.168.77.1/24"),
            "{netdev:?}"
        );
        let f = port_findings(&roce_port("up", 1500), None, &with(&[]));
        let netdev = f.iter().find(|f| f.code == "netdev").unwrap();
        assert_eq!(netdev.severity, Severity::Warn);
        assert!(netdev.message.contains("no IP address"), "{netdev:?}");
        let f = port_findings(&roce_port("up", 300), Some(256), &netns(Some(true)));
        assert_eq!(verdict_of(&f, "mtu"), Some(Severity::Fail));
    }

    fn verdict_of(findings: &[Finding], check: &str) -> Option<Severity> {
        findings
            .iter()
            .find(|f| f.code == check)
            .map(|f| f.severity)
    }

    #[test]
    fn mtu_beyond_the_netdev_fails() {
        let f = port_findings(&roce_port("up", 1500), Some(4096), &netns(Some(true)));
        assert_eq!(verdict_of(&f, "mtu"), Some(Severity::Fail));
        let f = port_findings(&roce_port("up", 1500), Some(1024), &netns(Some(true)));
        assert_eq!(verdict_of(&f, "mtu"), Some(Severity::Ok));
        let f = port_findings(&roce_port("up", 9000), Some(1024), &netns(Some(true)));
        assert_eq!(verdict_of(&f, "mtu"), Some(Severity::Warn));
    }

    #[test]
    fn rxe_outside_init_netns_fails() {
        let f = port_findings(&roce_port("up", 1500), None, &netns(Some(false)));
        assert_eq!(verdict_of(&f, "netns"), Some(Severity::Fail));
        let f = port_findings(&roce_port("up", 1500), None, &netns(None));
        assert_eq!(verdict_of(&f, "netns"), None);
    }

    #[test]
    fn ipv4_gid_and_netdev() {
        let f = port_findings(&roce_port("up", 1500), None, &netns(Some(true)));
        assert_eq!(verdict_of(&f, "ipv4-gid"), Some(Severity::Ok));
        assert_eq!(verdict_of(&f, "netdev"), Some(Severity::Ok));
        let f = port_findings(&roce_port("down", 1500), None, &netns(Some(true)));
        assert_eq!(verdict_of(&f, "netdev"), Some(Severity::Fail));
    }
}
