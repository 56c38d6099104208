//! What `doctor` reads: sysfs (devices, ports, GID tables, counters), /dev/infiniband,
//! libibverbs and its provider files, /proc (limits, modules, namespace), rtnetlink.
//! A captured tree is another host's: its /dev, libraries and limits are not read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::gather::net;
use crate::gather::procfs;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs;
use crate::model::device::Device;
use crate::model::doctor::{
    provider_for, CaptureFacts, DoctorFacts, HostFacts, HostNet, NoDeviceHint, NodeAccess,
    PortExtras, ProviderFiles,
};

const PROVIDER_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libibverbs",
    "/usr/lib/aarch64-linux-gnu/libibverbs",
    "/usr/lib64/libibverbs",
    "/usr/lib/libibverbs",
    "/usr/local/lib/libibverbs",
];
const PROVIDER_CONF_DIR: &str = "/etc/libibverbs.d";

/// `gather` with a deadline (`doctor --format nagios|nhc|junit`: a health check must
/// answer, even when a driver's sysfs file blocks): past `limit`, an error naming the reads
/// still in progress.
pub fn gather_within(
    ctx: &Ctx,
    device: Option<&str>,
    limit: std::time::Duration,
) -> Result<DoctorFacts> {
    let (worker_ctx, device) = (ctx.clone(), device.map(str::to_string));
    crate::gather::deadline::within(limit, move || gather(&worker_ctx, device.as_deref()))
        .unwrap_or_else(|late| {
            Err(crate::error::Error::Overdue {
                paths: late.paths.iter().map(|p| p.display().to_string()).collect(),
                secs: limit.as_secs_f64(),
            })
        })
}

/// Read everything doctor judges; `only` keeps one device (an error names the others).
pub fn gather(ctx: &Ctx, only: Option<&str>) -> Result<DoctorFacts> {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let mut facts = DoctorFacts {
        class_dir: ctx.sysfs.join("class/infiniband").display().to_string(),
        capture: ctx.captured.then(|| capture_facts(ctx)),
        ..DoctorFacts::default()
    };
    let mut devices = match sysfs.clone().netdev_only().devices() {
        Ok(d) => d,
        Err(Error::NoRdma { path }) => {
            facts.no_device_hint =
                no_device_hint_at(&ctx.sysfs, ctx.captured, ctx.procfs.as_deref());
            facts.no_rdma = Some(path);
            // A namespace in exclusive mode may see no device at all: say why.
            facts.container =
                (!ctx.captured).then(|| crate::gather::container::gather(&ctx.sysfs, &[]));
            return Ok(facts);
        }
        Err(e) => return Err(e),
    };
    if devices.is_empty() {
        facts.no_device_hint = no_device_hint_at(&ctx.sysfs, ctx.captured, ctx.procfs.as_deref());
    }
    facts.listed = devices.clone();
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
    facts.ports = devices
        .iter()
        .flat_map(|d| &d.ports)
        .map(|port| PortExtras {
            gid_table_len: sysfs.gid_table_len(&port.device, port.number).unwrap_or(0),
            counters: sysfs.port_counters(&port.device, port.number).ok(),
            firewall: None,
        })
        .collect();
    if !ctx.captured {
        firewall_facts(&devices, &mut facts.ports);
    }
    facts.host = (!ctx.captured).then(|| host_facts(&ctx.sysfs, &devices));
    // The kernel command line decides the IOMMU mode where the groups do not say it: this
    // host's, or a captured host's with --procfs.
    let cmdline = match (&ctx.procfs, ctx.captured) {
        (Some(root), _) => std::fs::read_to_string(root.join("cmdline"))
            .ok()
            .map(|c| c.trim().to_string()),
        (None, false) => procfs::cmdline(),
        (None, true) => None,
    };
    facts.pci = crate::gather::pci::gather(&sysfs, &devices, !ctx.captured, cmdline);
    facts.container =
        (!ctx.captured).then(|| crate::gather::container::gather(&ctx.sysfs, &facts.listed));
    let known: Vec<_> = facts
        .ports
        .iter()
        .filter_map(|e| e.counters.as_ref())
        .collect();
    facts.qos = crate::gather::qos::gather(ctx, &devices, None, false, &known);
    facts.devices = devices;
    Ok(facts)
}

/// Each Soft-RoCE port's RoCE v2 through this host's firewall, arriving on its netdev and
/// leaving it, from its IPv4 GID's address (else a routable IPv6 one, else its link-local
/// one) to any peer. The firewall is read once, and only when such a port exists.
fn firewall_facts(devices: &[Device], extras: &mut [PortExtras]) {
    let ports = devices.iter().flat_map(|d| &d.ports);
    let mut firewall = None;
    for (port, extra) in ports.zip(extras.iter_mut()) {
        if !port.soft_roce {
            continue;
        }
        let rank = |e: &&crate::model::device::GidEntry| {
            if e.gid.ip().is_ipv4()
                || matches!(e.gid.ip(), std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
            {
                0
            } else if crate::model::gid::is_link_local(&e.gid) {
                2
            } else {
                1
            }
        };
        let Some(entry) = port
            .gids
            .iter()
            .filter(|e| e.netdev.is_some() && !e.gid.is_zero())
            .min_by_key(rank)
        else {
            continue;
        };
        let paths = crate::gather::net::netfilter::roce_paths(
            &format!("{}/{}", port.device, port.number),
            entry.netdev.as_deref().unwrap_or_default(),
            entry.gid.ip(),
            None,
            None,
        );
        if paths.is_empty() {
            continue;
        }
        let firewall = firewall.get_or_insert_with(crate::gather::net::netfilter::firewall);
        extra.firewall = Some(crate::model::netfilter::FirewallFacts {
            firewall: firewall.clone(),
            paths,
            host: None,
        });
    }
}

/// A captured host's /proc, where `--procfs` names one: the `self/` of the process that
/// took the capture (its limits are what a job started the same way would get).
fn capture_facts(ctx: &Ctx) -> CaptureFacts {
    let mut capture = CaptureFacts {
        sysfs: ctx.sysfs.display().to_string(),
        ..CaptureFacts::default()
    };
    if let Some(root) = &ctx.procfs {
        let limits = procfs::lock_limits_in(root);
        capture.procfs = Some(root.display().to_string());
        capture.memlock_soft = limits.memlock_soft;
        capture.cap_ipc_lock = limits.cap_ipc_lock;
        capture.root = procfs::effective_root_in(root);
    }
    capture
}

/// What only this host answers: /dev, libibverbs and its providers, limits, network.
fn host_facts(sysfs_root: &Path, devices: &[Device]) -> HostFacts {
    let node_access = devices.iter().map(|d| node_access(sysfs_root, d)).collect();
    let library = verbs::library_status().map_err(|e| e.to_string());
    let verbs_devices = library
        .is_ok()
        .then(|| verbs::device_names().map_err(|e| e.to_string()));
    let provider_files = match &verbs_devices {
        Some(Ok(_)) => devices
            .iter()
            .map(|d| {
                provider_files(provider_for(
                    d.driver.as_deref(),
                    d.node_desc.as_deref(),
                    &d.name,
                ))
            })
            .collect(),
        _ => Vec::new(),
    };
    let limits = procfs::lock_limits();
    // One link dump and one address dump serve every network fact below.
    let links = net::netdevs().ok();
    let addrs = net::addresses().ok();
    HostFacts {
        node_access,
        library,
        verbs_devices,
        provider_files,
        memlock_soft: limits.memlock_soft,
        cap_ipc_lock: limits.cap_ipc_lock,
        root: verbs::sys::effective_uid() == 0,
        net: HostNet {
            in_init_netns: procfs::in_initial_netns(),
            addresses: links
                .as_deref()
                .zip(addrs.as_deref())
                .map(|(links, addrs)| netdev_addresses(links, addrs)),
            visible_netdevs: links
                .as_deref()
                .map(|d| d.iter().map(|d| d.name.clone()).collect()),
        },
        roce_netdevs: match (&links, &addrs) {
            (Some(links), Some(addrs)) => {
                crate::gather::inventory::roce_netdevs_from(devices, links, addrs)
            }
            _ => Vec::new(),
        },
    }
}

/// What the "no device" rule judges, read under a sysfs root so a captured tree answers
/// for its host: rdma_rxe (`module/rdma_rxe`; on a live host, not `captured`, /proc/modules
/// too; `procfs` is a captured host's /proc), an up netdev to name in `rdma link add`, the
/// RDMA modules loaded (`module/`) and the PCI network functions (`bus/pci/devices`).
pub fn no_device_hint_at(root: &Path, captured: bool, procfs: Option<&Path>) -> NoDeviceHint {
    let sysfs = SysfsRoot::new(root);
    let module = root.join("module/rdma_rxe");
    let rxe_loaded = if module.is_dir() {
        Some(format!("{} exists", module.display()))
    } else if !captured && crate::gather::procfs::module_loaded("rdma_rxe") {
        Some("/proc/modules lists rdma_rxe".to_string())
    } else {
        procfs
            .filter(|r| procfs::module_loaded_in(r, "rdma_rxe"))
            .map(|root| format!("{} lists rdma_rxe", root.join("modules").display()))
    };
    let netdev = sysfs
        .netdev_names()
        .into_iter()
        .find(|n| n != "lo" && sysfs.netdev(n).is_some_and(|d| d.carries_traffic()));
    let module_dir = root.join("module");
    let rdma_modules = module_dir.is_dir().then(|| {
        crate::model::doctor::RDMA_MODULES
            .iter()
            .filter(|m| module_dir.join(m.module).is_dir())
            .map(|m| m.module.to_string())
            .collect()
    });
    let pci_dir = root.join("bus/pci/devices");
    NoDeviceHint {
        rxe_loaded,
        netdev,
        rdma_modules,
        net_functions: pci_dir.is_dir().then(|| net_functions(&pci_dir)),
        module_dir: module_dir.display().to_string(),
        pci_dir: pci_dir.display().to_string(),
    }
}

/// The functions of class 02 (network) and 0c06 (InfiniBand) under `bus/pci/devices`, with
/// their bound driver and netdevs (virtio-net keeps its netdev one level down, under
/// `virtioN/net`).
fn net_functions(bus: &Path) -> Vec<crate::model::doctor::NetFunction> {
    use crate::gather::pci::list as entries;
    let hex = |dir: &Path, attr: &str| {
        crate::gather::sysfs::read_text(&dir.join(attr))
            .ok()
            .and_then(|s| crate::gather::sysfs::parse::hex_u32(&s))
    };
    let names = entries(bus);
    names
        .into_iter()
        .filter_map(|bdf| {
            let dir = bus.join(&bdf);
            let class = hex(&dir, "class")?;
            if class >> 16 != 0x02 && class >> 8 != 0x0c06 {
                return None;
            }
            let mut netdevs = entries(&dir.join("net"));
            for child in entries(&dir).iter().filter(|c| c.starts_with("virtio")) {
                netdevs.extend(entries(&dir.join(child).join("net")));
            }
            Some(crate::model::doctor::NetFunction {
                class,
                vendor: u16::try_from(hex(&dir, "vendor")?).ok()?,
                device: hex(&dir, "device")
                    .and_then(|d| u16::try_from(d).ok())
                    .unwrap_or(0),
                driver: std::fs::read_link(dir.join("driver"))
                    .ok()
                    .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned())),
                netdevs,
                bdf,
            })
        })
        .collect()
}

fn node_access(sysfs_root: &Path, device: &Device) -> NodeAccess {
    let Some(node) = &device.uverbs else {
        return match crate::gather::removal::pending(sysfs_root, &device.name) {
            Some(r) => NodeAccess::Removing(Box::new(r)),
            None => NodeAccess::NoMapping,
        };
    };
    let path = Path::new("/dev/infiniband").join(node);
    let shown = path.display().to_string();
    if !path.exists() {
        return NodeAccess::Missing { path: shown };
    }
    let node = crate::gather::devnode::node_facts(&path);
    if node.accessible {
        NodeAccess::Usable { path: shown }
    } else {
        NodeAccess::Denied(Box::new(node))
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

/// Every netdev's addresses, by name, from rtnetlink's link and address dumps.
fn netdev_addresses(
    links: &[net::NetdevLink],
    addrs: &[net::IfAddr],
) -> BTreeMap<String, Vec<String>> {
    let names: BTreeMap<u32, &str> = links.iter().map(|d| (d.index, d.name.as_str())).collect();
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in addrs {
        if let Some(name) = names.get(&a.ifindex) {
            by_name
                .entry(name.to_string())
                .or_default()
                .push(format!("{}/{}", a.address, a.prefix_len));
        }
    }
    by_name
}
