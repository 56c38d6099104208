//! `rdmactl doctor`: pre-flight checks in the order a person debugs an RDMA host.
//! Gathering (sysfs, /dev, /proc, verbs) happens in `gather::doctor`, into
//! `model::doctor::DoctorFacts`; this module holds the pure rules that turn them into
//! findings.

use crate::error::Error;
use crate::model::codes::Code;
use crate::model::device::{Device, Port};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::doctor::NodeAccess;

mod capture;
mod container;
mod host;
mod netdevs;
mod ports;

pub use capture::*;
pub use container::container_findings;
pub use host::*;
pub use netdevs::*;
pub use ports::*;

pub use crate::model::doctor::{DoctorFacts, HostFacts, HostNet};

/// A test buffer plus queues: what `selftest`/`pingpong` register by default.
const PLANNED_REGISTRATION: u64 = 64 << 10;

/// The host has no RDMA device at all (doctor's `kernel` check failed): the exit status
/// every command gives for it, not a failure among others.
pub fn no_rdma_device(findings: &[Diagnostic]) -> bool {
    findings
        .iter()
        .any(|f| f.code == crate::model::codes::KERNEL && f.severity == Severity::Fail)
}

/// Every finding about the host, in the order a person debugs it: the kernel, the uverbs
/// nodes, libibverbs and its providers, the memlock limit, each port, the GID tables, the
/// counters, and what the ports share.
pub fn findings(facts: &DoctorFacts) -> Vec<Diagnostic> {
    if let Some(path) = &facts.no_rdma {
        let e = Error::NoRdma { path: path.clone() };
        let mut found = vec![kernel_finding(
            &facts.class_dir,
            Err(&e),
            &facts.no_device_hint,
        )];
        // Only exclusive mode explains a namespace without devices; otherwise the kernel
        // finding is the whole story.
        if let Some(container) = facts.container.as_ref().filter(|c| {
            matches!(&c.rdma_ns, Some(Ok(ns)) if ns.mode == Some(crate::model::container::NetnsMode::Exclusive))
        }) {
            found.extend(container_findings(facts, container));
        }
        return found;
    }
    let devices = &facts.devices;
    let mut findings = vec![kernel_finding(
        &facts.class_dir,
        Ok(&facts.listed),
        &facts.no_device_hint,
    )];
    if let Some(host) = &facts.host {
        findings.extend(host_findings(devices, host));
    }
    if let Some(capture) = &facts.capture {
        findings.extend(capture_findings(capture, pci_config_short(&facts.pci)));
    }
    let no_net = HostNet::default();
    let net = facts.host.as_ref().map_or(&no_net, |h| &h.net);
    let ports: Vec<&Port> = devices.iter().flat_map(|d| &d.ports).collect();
    // An iWARP port is neither RoCE nor InfiniBand: no RoCE GID or MTU rule applies to it.
    let iwarp: Vec<bool> = devices
        .iter()
        .flat_map(|d| {
            let is = d.node_type.as_ref().is_some_and(|t| t.is_iwarp());
            d.ports.iter().map(move |_| is)
        })
        .collect();
    for (port, &iwarp) in ports.iter().zip(&iwarp) {
        if iwarp {
            findings.extend(iwarp_port_findings(port));
        } else {
            findings.extend(port_findings(port, port.active_mtu, net));
        }
    }
    for ((port, extras), &iwarp) in ports.iter().zip(&facts.ports).zip(&iwarp) {
        if !iwarp {
            findings.extend(gid_table_finding(port, extras.gid_table_len, net));
        }
    }
    // The counters: what grew since the previous run when the run keeps state, else the
    // totals since the last reset as information.
    for extras in &facts.ports {
        if let Some(counters) = &extras.counters {
            findings.extend(crate::diagnose::counters::doctor_finding(
                counters,
                facts.counter_state.as_ref(),
            ));
        }
    }
    // A Soft-RoCE port's RoCE v2 through this host's firewall.
    for (port, extras) in ports.iter().zip(&facts.ports) {
        if let Some(fw) = &extras.firewall {
            findings.push(crate::diagnose::firewall::finding(
                Some(Subject::Port(port.device.clone(), port.number)),
                fw,
            ));
        }
    }
    findings.extend(duplicate_gid_findings(&ports));
    if let Some(host) = &facts.host {
        findings.extend(same_subnet_findings(&host.roce_netdevs));
        findings.extend(arp_flux_findings(&host.roce_netdevs));
    }
    // The PCI side: links, the GPU paths, ACS, IOMMU, GPUDirect RDMA.
    findings.extend(crate::diagnose::gpu_path::findings(&facts.pci));
    if let Some(container) = &facts.container {
        findings.extend(container_findings(facts, container));
    }
    // The QoS chain: only what is wrong; `rdmactl qos` shows the whole chain, and what a
    // host does not expose (a virtual NIC's DCB) is qos's to say, not a doctor warning.
    findings.extend(
        crate::diagnose::qos::findings(&facts.qos)
            .into_iter()
            .filter(|f| f.severity >= Severity::Warn),
    );
    findings
}

/// What only a live host answers: the uverbs nodes, libibverbs, the providers, memlock.
fn host_findings(devices: &[Device], host: &HostFacts) -> Vec<Diagnostic> {
    let mut findings: Vec<Diagnostic> = devices
        .iter()
        .zip(&host.node_access)
        .map(|(device, access)| uverbs_finding(&device.name, access))
        .collect();
    findings.push(library_finding(host.library.clone()));
    match &host.verbs_devices {
        Some(Ok(names)) => {
            for ((device, files), access) in devices
                .iter()
                .zip(&host.provider_files)
                .zip(&host.node_access)
            {
                // libibverbs skips a device whose uverbs node it cannot open: the uverbs
                // finding names that cause, and blaming the provider would be wrong.
                let unusable = !matches!(access, NodeAccess::Usable { .. });
                if unusable && !names.contains(&device.name) {
                    continue;
                }
                findings.push(provider_finding(device, names, files));
            }
        }
        Some(Err(e)) => findings.push(device_list_failed(e)),
        None => {}
    }
    findings.push(memlock_finding(
        host.memlock_soft,
        host.cap_ipc_lock,
        host.root,
        PLANNED_REGISTRATION,
    ));
    findings
}

/// A doctor finding: every one names its subject (the host, a device, a port).
fn finding(
    code: Code,
    subject: Subject,
    severity: Severity,
    message: impl Into<String>,
) -> Diagnostic {
    Diagnostic::finding(severity, code, message).about(subject)
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

/// Whether a PCI function on an HCA's or GPU's path has a config space cut at 64 bytes (read
/// or captured without root): its link registers and ACS are then not known.
fn pci_config_short(pci: &crate::model::pci::PciFacts) -> bool {
    let paths = pci.hcas.iter().map(|h| &h.path).chain(&pci.gpus);
    paths
        .flat_map(|p| p.bridges.iter().chain(std::iter::once(&p.function)))
        .filter_map(|f| f.config.as_ref())
        .any(|c| c.caps_truncated || c.len <= 64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::doctor::ProviderFiles;
    use crate::model::facts::DeviceNodeFacts;

    /// doctor's facts from a captured tree: the devices, ports and GID tables are read,
    /// the host (this machine's /dev, libraries, limits) is not.
    fn captured(name: &str) -> DoctorFacts {
        crate::gather::doctor::gather(&crate::ctx::Ctx::fixture(name), None).unwrap()
    }

    fn live_host(devices: usize) -> HostFacts {
        HostFacts {
            node_access: vec![
                NodeAccess::Usable {
                    path: "/dev/infiniband/uverbs0".into()
                };
                devices
            ],
            library: Ok(()),
            verbs_devices: Some(Ok(vec!["rxe0".into(), "rxe1".into()])),
            provider_files: vec![ProviderFiles::default(); devices],
            memlock_soft: Some(None),
            cap_ipc_lock: Some(false),
            root: false,
            net: HostNet {
                in_init_netns: Some(true),
                ..HostNet::default()
            },
            roce_netdevs: Vec::new(),
        }
    }

    #[test]
    fn no_rdma_core_is_one_kernel_failure() {
        let facts = captured("no-infiniband");
        assert!(facts.no_rdma.is_some(), "{facts:?}");
        let found = findings(&facts);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            (found[0].code.as_str(), found[0].severity),
            ("kernel", Severity::Fail)
        );
        assert!(found[0].message.contains("no RDMA support"), "{found:#?}");
    }

    #[test]
    fn a_captured_tree_is_judged_without_this_host() {
        let facts = captured("rxe-veth-basic");
        assert!(facts.host.is_none());
        assert_eq!(
            facts.ports.len(),
            facts.devices.iter().map(|d| d.ports.len()).sum::<usize>()
        );
        let found = findings(&facts);
        assert_eq!(verdict_of(&found, "kernel"), Some(Severity::Ok));
        for host_only in ["uverbs", "libibverbs", "provider", "memlock"] {
            assert_eq!(
                verdict_of(&found, host_only),
                None,
                "{host_only}: {found:#?}"
            );
        }
    }

    #[test]
    fn host_facts_are_judged_in_order() {
        let mut facts = captured("rxe-veth-basic");
        let n = facts.devices.len();
        let mut host = live_host(n);
        host.node_access[0] = NodeAccess::Denied(Box::new(DeviceNodeFacts {
            path: "/dev/infiniband/uverbs0".into(),
            exists: true,
            open_errno: Some(libc::EACCES),
            ..DeviceNodeFacts::default()
        }));
        facts.host = Some(host.clone());
        let found = findings(&facts);
        let codes: Vec<&str> = found.iter().map(|f| f.code.as_str()).collect();
        let at = |code: &str| codes.iter().position(|c| *c == code).unwrap();
        assert!(at("kernel") < at("uverbs") && at("uverbs") < at("libibverbs"));
        assert!(at("libibverbs") < at("provider") && at("provider") < at("memlock"));
        assert_eq!(verdict_of(&found, "uverbs"), Some(Severity::Fail));
        // libibverbs lists a device whose node refuses the open: the uverbs finding says the
        // open fails, never that the device is skipped.
        let uverbs = found.iter().find(|f| f.code.as_str() == "uverbs").unwrap();
        assert!(
            uverbs.message.contains("EACCES") && !uverbs.message.contains("skips"),
            "{}",
            uverbs.message
        );
        assert_eq!(verdict_of(&found, "memlock"), Some(Severity::Ok));

        // ibv_get_device_list failing: said once, and no provider is judged.
        host.verbs_devices = Some(Err("ENOSYS".into()));
        facts.host = Some(host.clone());
        let found = findings(&facts);
        let failed = found
            .iter()
            .find(|f| f.message == "ibv_get_device_list failed")
            .expect("the list failure");
        assert_eq!(failed.evidence, ["ENOSYS"]);
        assert_eq!(verdict_of(&found, "provider"), None);

        // No libibverbs: nothing to ask it.
        host.library = Err("libibverbs.so.1: cannot open shared object file".into());
        host.verbs_devices = None;
        facts.host = Some(host);
        let found = findings(&facts);
        assert_eq!(verdict_of(&found, "libibverbs"), Some(Severity::Fail));
        assert_eq!(verdict_of(&found, "provider"), None);
    }

    /// A uverbs node not passed into a container: libibverbs skips the device, and the
    /// uverbs finding says why; the provider is not blamed for it.
    #[test]
    fn a_missing_node_is_not_a_provider_failure() {
        let mut facts = captured("rxe-veth-basic");
        let mut host = live_host(facts.devices.len());
        let second = facts.devices[1].name.clone();
        host.node_access[1] = NodeAccess::Missing {
            path: "/dev/infiniband/uverbs1".into(),
        };
        host.verbs_devices = Some(Ok(vec![facts.devices[0].name.clone()]));
        facts.host = Some(host);
        let found = findings(&facts);
        let about = |code: &str| {
            found
                .iter()
                .filter(|f| f.code == code && f.message.contains(&second))
                .count()
        };
        assert!(found
            .iter()
            .any(|f| f.code == "uverbs" && f.severity == Severity::Fail));
        assert_eq!(about("provider"), 0, "{found:#?}");
    }

    fn verdict_of(findings: &[Diagnostic], check: &str) -> Option<Severity> {
        findings
            .iter()
            .find(|f| f.code == check)
            .map(|f| f.severity)
    }
}
