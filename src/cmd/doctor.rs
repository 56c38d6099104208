//! `rdmactl doctor`: gather the host's facts (sysfs, /dev/infiniband, libibverbs,
//! providers, limits, namespaces), let `crate::doctor`'s rules judge them, print.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::DoctorArgs;
use crate::ctx::Ctx;
use crate::diagnose::doctor::{self, HostNet, NodeAccess, ProviderFiles};
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::net;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs;
use crate::model::device::{Device, Port};
use crate::model::diagnostic::{Finding, Severity, Subject};
use crate::render::findings::{self as render, Evidence};

/// A test buffer plus queues: what `selftest`/`pingpong` register by default.
const PLANNED_REGISTRATION: u64 = 64 << 10;
const PROVIDER_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libibverbs",
    "/usr/lib/aarch64-linux-gnu/libibverbs",
    "/usr/lib64/libibverbs",
    "/usr/lib/libibverbs",
    "/usr/local/lib/libibverbs",
];
const PROVIDER_CONF_DIR: &str = "/etc/libibverbs.d";

#[derive(Debug, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub ok: usize,
    pub info: usize,
    pub warn: usize,
    pub fail: usize,
}

pub fn run(ctx: &Ctx, args: &DoctorArgs) -> Result<u8> {
    let report = Report::from(gather(ctx, args.device.as_deref())?);
    let text = if ctx.json {
        crate::output::json(&report)
    } else {
        format!(
            "{}{}",
            render::lines(&report.findings, ctx.style, Evidence::Problems),
            render::tally(&report.findings)
        )
    };
    crate::output::print(&text)?;
    // No RDMA device is exit 4, as every other command says it (the findings say why).
    let no_devices = report
        .findings
        .iter()
        .any(|f| f.code == "kernel" && f.severity == Severity::Fail);
    Ok(if no_devices {
        exit::NO_RDMA
    } else if report.fail > 0 {
        exit::FAILED
    } else {
        exit::OK
    })
}

impl From<Vec<Finding>> for Report {
    fn from(findings: Vec<Finding>) -> Report {
        let count = |v| findings.iter().filter(|f| f.severity == v).count();
        Report {
            ok: count(Severity::Ok),
            info: count(Severity::Info),
            warn: count(Severity::Warn),
            fail: count(Severity::Fail),
            findings,
        }
    }
}

fn gather(ctx: &Ctx, only: Option<&str>) -> Result<Vec<Finding>> {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let class_dir = ctx.sysfs.join("class/infiniband").display().to_string();
    let mut devices = match sysfs.clone().netdev_only().devices() {
        Ok(d) => d,
        Err(e @ Error::NoRdma { .. }) => {
            let hint = no_device_hint(ctx, &sysfs);
            return Ok(vec![doctor::kernel_finding(&class_dir, Err(&e), &hint)]);
        }
        Err(e) => return Err(e),
    };
    let hint = if devices.is_empty() {
        no_device_hint(ctx, &sysfs)
    } else {
        doctor::NoDeviceHint::default()
    };
    let mut findings = vec![doctor::kernel_finding(&class_dir, Ok(&devices), &hint)];
    if let Some(name) = only {
        devices.retain(|d| d.name == name);
        if devices.is_empty() {
            return Err(Error::NoSuchDevice {
                name: name.to_string(),
                available: sysfs.device_names()?,
            });
        }
    }
    // The GID tables: one verbs call per device where it answers, else sysfs.
    crate::gather::inventory::add_verbs_facts_and_gids(ctx, &mut devices, false)?;
    // A captured tree is another host's: its /dev, libraries and limits are not ours.
    let host = !ctx.captured;
    if host {
        for device in &devices {
            findings.push(doctor::uverbs_finding(&device.name, &node_access(device)));
        }
    }
    let verbs_devices = if host {
        let status = verbs::library_status().map_err(|e| e.to_string());
        let loaded = status.is_ok();
        findings.push(doctor::library_finding(status));
        if loaded {
            match verbs::device_names() {
                Ok(names) => Some(names),
                Err(e) => {
                    findings.push(
                        Finding::new(
                            Severity::Fail,
                            "libibverbs",
                            "ibv_get_device_list failed",
                        )
                        .about(Subject::Host)
                        .evidence(e.to_string())
                        .fix("see the evidence; `rdmactl doctor` checks above show the kernel side"),
                    );
                    None
                }
            }
        } else {
            None
        }
    } else {
        None
    };
    if let Some(names) = &verbs_devices {
        for device in &devices {
            let files = provider_files(doctor::provider_for(
                device.driver.as_deref(),
                device.node_desc.as_deref(),
                &device.name,
            ));
            findings.push(doctor::provider_finding(device, names, &files));
        }
    }
    if host {
        let limits = crate::gather::procfs::lock_limits();
        findings.push(doctor::memlock_finding(
            limits.memlock_soft,
            limits.cap_ipc_lock,
            verbs::sys::effective_uid() == 0,
            PLANNED_REGISTRATION,
        ));
    }
    let host_net = if host {
        HostNet {
            in_init_netns: crate::gather::procfs::in_initial_netns(),
            addresses: netdev_addresses(),
            visible_netdevs: net::netdevs()
                .ok()
                .map(|d| d.into_iter().map(|d| d.name).collect()),
        }
    } else {
        HostNet::default()
    };
    // The active MTU came with the GID tables (one open per device, above).
    for port in devices.iter().flat_map(|d| &d.ports) {
        findings.extend(doctor::port_findings(port, port.active_mtu, &host_net));
    }
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    for port in devices.iter().flat_map(|d| &d.ports) {
        let table_len = sysfs.gid_table_len(&port.device, port.number).unwrap_or(0);
        findings.extend(doctor::gid_table_finding(port, table_len, &host_net));
    }
    // The counters since the last reset: error counters that are not zero are a warning.
    for port in devices.iter().flat_map(|d| &d.ports) {
        if let Ok(counters) = sysfs.port_counters(&port.device, port.number) {
            findings.extend(crate::diagnose::counters::doctor_finding(&counters));
        }
    }
    let all_ports: Vec<&Port> = devices.iter().flat_map(|d| &d.ports).collect();
    findings.extend(doctor::duplicate_gid_findings(&all_ports));
    if host {
        let netdevs = crate::gather::inventory::roce_netdevs(&devices);
        findings.extend(doctor::same_subnet_findings(&netdevs));
        findings.extend(doctor::arp_flux_findings(&netdevs));
    }
    Ok(findings)
}

/// Whether rdma_rxe is loaded (its `module/rdma_rxe` under the sysfs root, so a captured
/// tree answers for its host; on a live host /proc/modules too), and an up netdev to name.
fn no_device_hint(ctx: &Ctx, sysfs: &SysfsRoot) -> doctor::NoDeviceHint {
    let module = ctx.sysfs.join("module/rdma_rxe");
    let rxe_loaded = if module.is_dir() {
        Some(format!("{} exists", module.display()))
    } else if !ctx.captured && crate::gather::procfs::module_loaded("rdma_rxe") {
        Some("/proc/modules lists rdma_rxe".to_string())
    } else {
        None
    };
    let netdev = sysfs.netdev_names().into_iter().find(|n| {
        n != "lo"
            && sysfs
                .netdev(n)
                .is_some_and(|d| d.operstate.as_deref() == Some("up"))
    });
    doctor::NoDeviceHint { rxe_loaded, netdev }
}

fn node_access(device: &Device) -> NodeAccess {
    let Some(node) = &device.uverbs else {
        return NodeAccess::NoMapping;
    };
    let path = Path::new("/dev/infiniband").join(node);
    let shown = path.display().to_string();
    if !path.exists() {
        return NodeAccess::Missing { path: shown };
    }
    match verbs::sys::access_read_write(&path) {
        Ok(()) => NodeAccess::Usable { path: shown },
        Err(errno) => NodeAccess::Denied { path: shown, errno },
    }
}

fn provider_files(provider: Option<&str>) -> ProviderFiles {
    let Some(name) = provider else {
        return ProviderFiles::default();
    };
    let prefix = format!("lib{name}-rdmav");
    let library = PROVIDER_DIRS.iter().find_map(|dir| {
        std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            // A zero-length or dangling file does not load; count only real ones.
            (file.starts_with(&prefix) && e.path().metadata().is_ok_and(|m| m.len() > 0))
                .then(|| e.path().display().to_string())
        })
    });
    let driver_file = PathBuf::from(PROVIDER_CONF_DIR).join(format!("{name}.driver"));
    ProviderFiles {
        library,
        driver_file: driver_file
            .exists()
            .then(|| driver_file.display().to_string()),
    }
}

/// Every netdev's addresses, by name, from rtnetlink; None when it cannot be asked.
fn netdev_addresses() -> Option<BTreeMap<String, Vec<String>>> {
    let names: BTreeMap<u32, String> = net::netdevs()
        .ok()?
        .into_iter()
        .map(|d| (d.index, d.name))
        .collect();
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in net::addresses().ok()? {
        if let Some(name) = names.get(&a.ifindex) {
            by_name
                .entry(name.clone())
                .or_default()
                .push(format!("{}/{}", a.address, a.prefix_len));
        }
    }
    Some(by_name)
}
