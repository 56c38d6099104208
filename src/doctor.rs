//! `rdmactl doctor`: pre-flight checks in the order a person debugs an RDMA host.
//! Gathering (sysfs, /dev, /proc, verbs) happens in `cmd::doctor`; this module holds the
//! facts it gathered and the pure rules that turn them into findings.

use serde::Serialize;

use crate::error::Error;
use crate::model::{Device, LinkLayer, PhysState, Port, PortState};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable identifier of the check, e.g. `memlock`, `port-state`.
    pub check: &'static str,
    /// What was checked: a device, `dev/port`, a netdev, or the host.
    pub subject: String,
    pub verdict: Verdict,
    pub summary: String,
    pub evidence: Vec<String>,
    /// One line saying what to change; None when nothing needs to change.
    pub fix: Option<String>,
}

impl Finding {
    fn new(
        check: &'static str,
        subject: impl Into<String>,
        verdict: Verdict,
        summary: impl Into<String>,
    ) -> Self {
        Finding {
            check,
            subject: subject.into(),
            verdict,
            summary: summary.into(),
            evidence: Vec::new(),
            fix: None,
        }
    }

    fn evidence(mut self, line: impl Into<String>) -> Self {
        self.evidence.push(line.into());
        self
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
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
pub fn provider_for(kernel_driver: Option<&str>, device: &str) -> Option<&'static str> {
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
    kernel_driver
        .and_then(|d| BY_DRIVER.iter().find(|(k, _)| *k == d))
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
    let subject = "host";
    let Some(limit) = soft_limit else {
        return Finding::new(
            "memlock",
            subject,
            Verdict::Warn,
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
        return Finding::new(
            "memlock",
            subject,
            Verdict::Ok,
            "memory registration is not limited (CAP_IPC_LOCK)",
        )
        .evidence(evidence);
    }
    match limit {
        None => Finding::new("memlock", subject, Verdict::Ok, "locked memory is unlimited").evidence(evidence),
        Some(bytes) if bytes < needed => Finding::new(
            "memlock",
            subject,
            Verdict::Fail,
            format!("locked-memory limit {shown} is below the {} a test registers: ibv_reg_mr will fail with ENOMEM", human_bytes(needed)),
        )
        .evidence(evidence)
        .fix("raise it: `ulimit -l unlimited`, `memlock unlimited` in /etc/security/limits.conf, LimitMEMLOCK=infinity in the systemd unit, or --ulimit memlock=-1 for containers"),
        Some(bytes) if bytes <= 64 << 20 => Finding::new(
            "memlock",
            subject,
            Verdict::Warn,
            format!("locked-memory limit {shown} is enough for rdmactl but small for real workloads (MPI, NCCL, storage)"),
        )
        .evidence(evidence)
        .fix("raise it: `memlock unlimited` in /etc/security/limits.conf or LimitMEMLOCK=infinity in the systemd unit"),
        Some(_) => Finding::new("memlock", subject, Verdict::Ok, format!("locked-memory limit {shown}")).evidence(evidence),
    }
}

/// `class/infiniband` and what is in it.
pub fn kernel_finding(sysfs_dir: &str, devices: Result<&[Device], &Error>) -> Finding {
    match devices {
        Ok([]) => Finding::new("kernel", "host", Verdict::Fail, "the RDMA core is loaded but no device is registered")
            .evidence(format!("{sysfs_dir} is empty"))
            .fix("load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...), or for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <if>"),
        Ok(devs) => {
            let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
            Finding::new("kernel", "host", Verdict::Ok, format!("{} RDMA device(s): {}", devs.len(), names.join(", ")))
                .evidence(format!("{sysfs_dir} lists {}", names.join(", ")))
        }
        Err(Error::NoRdma { path }) => Finding::new("kernel", "host", Verdict::Fail, "no RDMA support in the kernel: no driver is loaded")
            .evidence(format!("{} does not exist", path.display()))
            .fix("load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...), or for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <if>"),
        Err(other) => Finding::new("kernel", "host", Verdict::Fail, format!("cannot list RDMA devices: {other}"))
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
    match access {
        NodeAccess::NoMapping => Finding::new(check, device, Verdict::Fail, "no user-space verbs node: the device cannot be used from applications")
            .evidence(format!("no class/infiniband_verbs/uverbsN has ibdev {device}"))
            .fix("load ib_uverbs (modprobe ib_uverbs)"),
        NodeAccess::Missing { path } => Finding::new(check, device, Verdict::Fail, format!("{path} does not exist: libibverbs silently skips the device"))
            .evidence(format!("sysfs maps {device} to {path}, which is not in /dev"))
            .fix("in a container, pass the device in (--device=/dev/infiniband/...); on a host, check udev (rdma-core's 90-rdma-*.rules)"),
        NodeAccess::Denied { path, errno } => Finding::new(check, device, Verdict::Fail, format!("{path} is not accessible: libibverbs silently skips the device"))
            .evidence(format!("access({path}, R_OK|W_OK) failed with {}", crate::verbs::errno_text(*errno)))
            .fix("the kernel creates uverbs nodes 0666: check the container's device cgroup and udev rules, or run as a user that may open it"),
        NodeAccess::Usable { path } => Finding::new(check, device, Verdict::Ok, format!("{path} is readable and writable"))
            .evidence(format!("access({path}, R_OK|W_OK) = 0")),
    }
}

pub fn library_finding(status: Result<(), String>) -> Finding {
    match status {
        Ok(()) => Finding::new("libibverbs", "host", Verdict::Ok, "libibverbs.so.1 is loaded").evidence("dlopen(libibverbs.so.1) succeeded"),
        Err(reason) => Finding::new("libibverbs", "host", Verdict::Fail, "libibverbs.so.1 cannot be loaded: no application can use RDMA")
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
    let provider = provider_for(device.driver.as_deref(), &device.name);
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
            ..Finding::new(
                "provider",
                device.name.clone(),
                Verdict::Ok,
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
        ..Finding::new(
            "provider",
            device.name.clone(),
            Verdict::Fail,
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
/// a 1500-byte netdev gives 1024 and 9000 gives 4096.
pub fn roce_mtu_for_netdev(netdev_mtu: u32) -> u32 {
    // GRH 40 + UDP 8 + BTH 12 + XRC ext 4 + AtomicETH 28 + ICRC 4, as iboe_get_mtu counts.
    const ROCE_OVERHEAD: u32 = 96;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|m| m + ROCE_OVERHEAD <= netdev_mtu)
        .unwrap_or(256)
}

/// Port state and, on RoCE, the netdev it rides on. `active_mtu` comes from verbs when
/// they are available.
pub fn port_findings(
    port: &Port,
    active_mtu: Option<u32>,
    in_init_netns: Option<bool>,
) -> Vec<Finding> {
    let subject = format!("{}/{}", port.device, port.number);
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
        Finding::new("port-state", subject.clone(), Verdict::Ok, "port is ACTIVE")
            .evidence(evidence)
    } else if ethernet {
        let netdev = port.netdev.as_ref();
        let name = netdev.map_or("its netdev".to_string(), |n| n.name.clone());
        let fix = match netdev.and_then(|n| n.operstate.as_deref()) {
            Some("down") => format!("bring the interface up: `ip link set {name} up`"),
            _ => format!("{name} has no carrier: check the cable and the switch port (for veth, the peer end)"),
        };
        Finding::new(
            "port-state",
            subject.clone(),
            Verdict::Fail,
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
        Finding::new("port-state", subject.clone(), Verdict::Fail, format!("port is {state}: {why}"))
            .evidence(evidence)
            .fix(if port.phys_state == Some(PhysState::LinkUp) { "start a subnet manager (`systemctl start opensm`) on one node of the fabric, or check the SM's logs; an SR-IOV VF needs a virtualization-aware SM" } else { "check the cable and the switch port (`ibstat`, `iblinkinfo`)" })
    };
    out.push(state_finding);
    if !ethernet {
        if port.link_layer == Some(LinkLayer::InfiniBand) {
            out.push(match port.lid {
                // An incomplete tree (no `lid` file) proves nothing either way.
                None => return out,
                Some(0) if active => Finding::new("lid", subject, Verdict::Fail, "ACTIVE InfiniBand port with LID 0")
                    .evidence("lid 0x0")
                    .fix("check the subnet manager's logs (`sminfo`, `journalctl -u opensm`)"),
                Some(0) => Finding::new("lid", subject, Verdict::Fail, "LID 0: no subnet manager has assigned an address, so ibv_rc_pingpong says \"Couldn't get local LID\"")
                    .evidence(format!("lid {}, sm_lid {}", port.lid.unwrap_or(0), port.sm_lid.unwrap_or(0)))
                    .fix("start opensm (`systemctl start opensm`) on one node of the fabric"),
                Some(0xffff) => Finding::new("lid", subject, Verdict::Fail, "LID 65535 (permissive): the port has no valid address").evidence("lid 0xffff").fix("check the link and the subnet manager"),
                Some(lid) => Finding::new("lid", subject, Verdict::Ok, format!("LID {lid}, SM LID {}", port.sm_lid.unwrap_or(0))).evidence(format!("lid {lid:#x}")),
            });
        }
        return out;
    }
    let Some(netdev) = &port.netdev else {
        out.push(Finding::new("netdev", subject, Verdict::Fail, "RoCE port without a netdev: no GID can be formed")
            .evidence("no gid_attrs/ndevs entry and no device/net interface")
            .fix("for rxe, recreate it on an existing interface: rdma link add rxe0 type rxe netdev <if>"));
        return out;
    };
    let nd = &netdev.name;
    let oper = netdev.operstate.as_deref().unwrap_or("unknown");
    out.push(if oper == "up" || oper == "unknown" {
        Finding::new("netdev", subject.clone(), Verdict::Ok, format!("netdev {nd} is {oper}")).evidence(format!("class/net/{nd}/operstate {oper}"))
    } else if oper == "lowerlayerdown" || oper == "dormant" {
        Finding::new("netdev", subject.clone(), Verdict::Fail, format!("netdev {nd} is administratively up but has no carrier ({oper})"))
            .evidence(format!("class/net/{nd}/operstate {oper}"))
            .fix("check the cable, the switch port, or the lower device (for veth: the peer end; for a VLAN: its parent)")
    } else {
        Finding::new("netdev", subject.clone(), Verdict::Fail, format!("netdev {nd} is {oper}"))
            .evidence(format!("class/net/{nd}/operstate {oper}"))
            .fix(format!("ip link set {nd} up"))
    });
    let v4 = port.gids.iter().find(|g| g.gid.ipv4().is_some());
    let routable = port
        .gids
        .iter()
        .filter(|g| !g.gid.is_link_local() && !g.gid.is_zero())
        .count();
    out.push(match v4 {
        Some(g) => Finding::new("ipv4-gid", subject.clone(), Verdict::Ok, format!("IPv4-mapped GID at index {} ({})", g.index, g.gid.ip()))
            .evidence(format!("gids/{} = {}", g.index, g.gid)),
        None if routable > 0 => Finding::new("ipv4-gid", subject.clone(), Verdict::Warn, format!("no IPv4 address on {nd}: only IPv6 GIDs, while NCCL and perftest default to IPv4"))
            .evidence(format!("{routable} non-link-local GID(s), none in ::ffff:0:0/96"))
            .fix(format!("add an IPv4 address (`ip addr add <addr>/<len> dev {nd}`), or set NCCL_IB_ADDR_FAMILY=AF_INET6")),
        None => Finding::new("ipv4-gid", subject.clone(), Verdict::Fail, format!("{nd} has no IP address: only the link-local GID exists, which does not route"))
            .evidence("every populated GID is link-local (fe80::/64)")
            .fix(format!("ip addr add <addr>/<len> dev {nd}")),
    });
    if let (Some(mtu), true) = (netdev.mtu, active) {
        let fits = roce_mtu_for_netdev(mtu);
        let evidence = format!(
            "netdev {nd} MTU {mtu} (fits RoCE MTU {fits}); active_mtu {}",
            active_mtu.map_or("unknown (no verbs)".to_string(), |m| m.to_string())
        );
        out.push(match active_mtu {
            Some(a) if a > fits => Finding::new("mtu", subject.clone(), Verdict::Fail, format!("active MTU {a} exceeds what the netdev MTU {mtu} carries: large messages will be dropped"))
                .evidence(evidence)
                .fix(format!("raise the netdev MTU (`ip link set {nd} mtu {}`) or use -m {fits}", a + 100)),
            Some(a) if a < fits => Finding::new("mtu", subject.clone(), Verdict::Warn, format!("active MTU {a} is below the {fits} the netdev MTU allows"))
                .evidence(evidence)
                .fix("the port did not pick up the MTU change: re-create the rxe link or reload the driver"),
            _ if mtu < 1500 => Finding::new("mtu", subject.clone(), Verdict::Warn, format!("netdev MTU {mtu} limits RoCE to {fits}-byte packets"))
                .evidence(evidence)
                .fix(format!("ip link set {nd} mtu 1500 (or 9000 for 4096-byte RoCE MTU)")),
            _ => Finding::new("mtu", subject.clone(), Verdict::Ok, format!("RoCE MTU {fits} over netdev MTU {mtu}; both peers must agree (rdmactl pingpong uses the smaller)")).evidence(evidence),
        });
    }
    if port.device.starts_with("rxe") && in_init_netns == Some(false) {
        out.push(Finding::new("netns", subject, Verdict::Fail, "rxe outside the initial network namespace: QPs fail with \"local QP operation error\"")
            .evidence("/proc/self/ns/net differs from /proc/1/ns/net")
            .fix("create and use rxe devices in the host's network namespace (kernel 6.1 rxe is init_net only)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str =
        "Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              unlimited            unlimited            seconds   \n\
Max locked memory         16384                16384                bytes     \n";

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
            assert_eq!(provider_for(driver, dev), want, "{driver:?} {dev}");
        }
    }

    #[test]
    fn memlock_verdicts() {
        let need = 64 << 10;
        let v = |limit, cap, root| memlock_finding(limit, cap, root, need).verdict;
        assert_eq!(v(Some(Some(16 << 10)), Some(false), false), Verdict::Fail);
        assert_eq!(v(Some(Some(16 << 10)), Some(true), false), Verdict::Ok);
        assert_eq!(v(Some(Some(8 << 20)), Some(false), false), Verdict::Warn);
        assert_eq!(v(Some(None), Some(false), false), Verdict::Ok);
        assert_eq!(v(None, None, false), Verdict::Warn);
        let fail = memlock_finding(Some(Some(16 << 10)), Some(false), false, need);
        assert!(
            fail.summary.contains("16 KiB") && fail.summary.contains("ENOMEM"),
            "{}",
            fail.summary
        );
        assert!(fail.fix.unwrap().contains("limits.conf"));
    }

    #[test]
    fn roce_mtu_follows_the_netdev() {
        for (netdev, want) in [
            (1500, 1024),
            (9000, 4096),
            (4200, 4096),
            (4000, 2048),
            (1100, 512),
            (200, 256),
        ] {
            assert_eq!(roce_mtu_for_netdev(netdev), want, "netdev MTU {netdev}");
        }
    }

    fn roce_port(operstate: &str, mtu: u32) -> Port {
        use crate::gid::Gid;
        use crate::model::{GidEntry, GidType, Netdev};
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
            read_problems: vec![],
        }
    }

    fn verdict_of(findings: &[Finding], check: &str) -> Option<Verdict> {
        findings
            .iter()
            .find(|f| f.check == check)
            .map(|f| f.verdict)
    }

    #[test]
    fn mtu_beyond_the_netdev_fails() {
        let f = port_findings(&roce_port("up", 1500), Some(4096), Some(true));
        assert_eq!(verdict_of(&f, "mtu"), Some(Verdict::Fail));
        let f = port_findings(&roce_port("up", 1500), Some(1024), Some(true));
        assert_eq!(verdict_of(&f, "mtu"), Some(Verdict::Ok));
        let f = port_findings(&roce_port("up", 9000), Some(1024), Some(true));
        assert_eq!(verdict_of(&f, "mtu"), Some(Verdict::Warn));
    }

    #[test]
    fn rxe_outside_init_netns_fails() {
        let f = port_findings(&roce_port("up", 1500), None, Some(false));
        assert_eq!(verdict_of(&f, "netns"), Some(Verdict::Fail));
        let f = port_findings(&roce_port("up", 1500), None, None);
        assert_eq!(verdict_of(&f, "netns"), None);
    }

    #[test]
    fn ipv4_gid_and_netdev() {
        let f = port_findings(&roce_port("up", 1500), None, Some(true));
        assert_eq!(verdict_of(&f, "ipv4-gid"), Some(Verdict::Ok));
        assert_eq!(verdict_of(&f, "netdev"), Some(Verdict::Ok));
        let f = port_findings(&roce_port("down", 1500), None, Some(true));
        assert_eq!(verdict_of(&f, "netdev"), Some(Verdict::Fail));
    }
}
