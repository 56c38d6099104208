//! The inventory commands read: sysfs merged with what only libibverbs reports (MTUs,
//! firmware, GID tables), and the one `-d`/`-i` lookup every command makes.

use std::path::Path;

use crate::cli::PortSelection;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::gather::net;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs;
use crate::model::device::{Device, Port, VerbsStatus};

/// The device and port a command will open, looked up in sysfs before anything is opened,
/// so a wrong `-d` or `-i` is the same one-line error naming what exists (exit 3) in every
/// command. Without `-d`, the first device, as libibverbs' tools take it.
pub fn device_port(sysfs_root: &Path, device: Option<&str>, port: u32) -> Result<String> {
    let sysfs = SysfsRoot::new(sysfs_root);
    let name = match device {
        Some(name) => name.to_string(),
        None => sysfs
            .device_names()?
            .into_iter()
            .next()
            .ok_or_else(|| Error::NoDevices {
                path: sysfs.path().join("class/infiniband"),
            })?,
    };
    sysfs.check_port(&name, port)?;
    Ok(name)
}

/// `device`'s node type from sysfs (`node_type`: CA, RNIC, ...); None when unreadable.
/// A Soft-RoCE (rxe) device, by `model::device::is_soft_roce` on its sysfs directory.
pub fn is_soft_roce(sysfs_root: &Path, device: &str) -> bool {
    crate::gather::sysfs::soft_roce_in(&sysfs_root.join("class/infiniband").join(device), device)
}

pub fn node_type(sysfs_root: &Path, device: &str) -> Option<crate::model::device::NodeType> {
    SysfsRoot::new(sysfs_root)
        .link_layer_only()
        .device(device)
        .ok()
        .and_then(|d| d.node_type)
}

/// Why verbs are not asked on a `--sysfs` tree: they would describe this host, not the one
/// the tree was captured on.
pub fn captured_reason(ctx: &Ctx) -> String {
    format!(
        "--sysfs {} is a captured tree and verbs would describe this host instead, so \
         they are skipped",
        ctx.sysfs.display()
    )
}

/// A device sysfs lists but libibverbs does not: its provider is missing (or its uverbs
/// node is), which is what `doctor` checks.
pub fn not_listed(d: &Device, listed: &[String]) -> String {
    let lists = if listed.is_empty() {
        "which lists no devices".to_string()
    } else {
        format!("which lists {}", listed.join(", "))
    };
    let driver = d
        .driver
        .as_ref()
        .map(|drv| format!(" for driver {drv}"))
        .unwrap_or_default();
    // No device name in the text: devices with the same cause share one note.
    format!(
        "not listed by libibverbs ({lists}): no provider library{driver} is installed \
         (Debian/Ubuntu: ibverbs-providers, RHEL: libibverbs; see /etc/libibverbs.d) or the \
         /dev/infiniband/uverbs node is missing. `rdmactl doctor` checks both"
    )
}

/// Every port's populated GID table: one `ibv_query_gid_table` per device where verbs
/// answer (and every GID's netdev is visible here), else `gids/N` read by read from
/// sysfs. For callers that read sysfs with `netdev_only`, so a host with many devices
/// does not pay a read per slot. Also adds what `inventory_with_verbs` adds.
pub fn add_verbs_facts_and_gids(ctx: &Ctx, devices: &mut [Device], firmware: bool) -> Result<()> {
    let from_verbs = add_verbs(ctx, devices, firmware, true);
    add_sysfs_gids(ctx, devices, &from_verbs)
}

/// The sysfs inventory `read` returns, with what only libibverbs reports: each port's
/// active and max MTU (`ibv_query_port`) and, with `firmware`, the firmware version as
/// `ibv_query_device` gives it, which wins over sysfs (rxe leaves sysfs `fw_ver` empty;
/// ibv_devinfo prints 0.0.0). With `gid_tables`, the GID tables as
/// `add_verbs_facts_and_gids` reads them. Whatever verbs cannot answer keeps its sysfs
/// value, or None, and `verbs` says why; verbs never fail the command, so `ports` works
/// without libibverbs.
///
/// libibverbs' device list and the opening of every device take as long as the sysfs
/// read itself on a host with many devices, so they run in a second thread while this one
/// reads sysfs. `only` is the device the caller selected, if one: the others are not
/// opened.
pub fn inventory_with_verbs(
    ctx: &Ctx,
    only: Option<&str>,
    firmware: bool,
    gid_tables: bool,
    read: impl FnOnce() -> Result<Vec<Device>>,
) -> Result<Vec<Device>> {
    let (devices, opened) = if ctx.captured {
        (read(), Err(captured_reason(ctx)))
    } else {
        let (devices, opened) = std::thread::scope(|scope| {
            let verbs = scope.spawn(move || open_verbs(only));
            let devices = read();
            (devices, verbs.join())
        });
        (
            devices,
            opened.unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        )
    };
    let mut devices = devices?;
    let from_verbs = apply_verbs(&ctx.sysfs, &mut devices, opened, firmware, gid_tables);
    if gid_tables {
        add_sysfs_gids(ctx, &mut devices, &from_verbs)?;
    }
    Ok(devices)
}

/// Sysfs GID tables for the ports verbs did not fill.
fn add_sysfs_gids(ctx: &Ctx, devices: &mut [Device], from_verbs: &[(String, u32)]) -> Result<()> {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    for d in devices.iter_mut() {
        for p in d.ports.iter_mut() {
            if !from_verbs.contains(&(d.name.clone(), p.number)) {
                p.gids = sysfs.gid_table(&d.name, p.number, false)?;
                p.gid_netdevs = netdevs_of(&p.gids);
            }
        }
    }
    Ok(())
}

/// The distinct netdevs a GID table names, in table order.
fn netdevs_of(gids: &[crate::model::device::GidEntry]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for nd in gids.iter().filter_map(|g| g.netdev.as_ref()) {
        if !out.contains(nd) {
            out.push(nd.clone());
        }
    }
    out
}

/// libibverbs' half of an inventory, gathered apart from sysfs: every listed device
/// opened, or why not. Err when there is no device list at all (no library, no kernel
/// support). One device list for all: each ibv_get_device_list rescans sysfs.
type VerbsOpened = std::result::Result<verbs::EachDevice, String>;

fn open_verbs(only: Option<&str>) -> VerbsOpened {
    verbs::open_each(only).map_err(|e| e.to_string())
}

fn mark_unavailable(devices: &mut [Device], reason: &str) {
    for d in devices.iter_mut() {
        d.verbs = VerbsStatus::unavailable(reason);
        for p in &mut d.ports {
            p.verbs = VerbsStatus::unavailable(reason);
        }
    }
}

/// Returns the ports whose GID table verbs filled in (with `gid_tables`).
fn add_verbs(
    ctx: &Ctx,
    devices: &mut [Device],
    firmware: bool,
    gid_tables: bool,
) -> Vec<(String, u32)> {
    if ctx.captured {
        mark_unavailable(devices, &captured_reason(ctx));
        return Vec::new();
    }
    let only = match devices {
        [one] => Some(one.name.clone()),
        _ => None,
    };
    apply_verbs(
        &ctx.sysfs,
        devices,
        open_verbs(only.as_deref()),
        firmware,
        gid_tables,
    )
}

/// Adds the opened devices' answers to the sysfs inventory; returns the ports whose GID
/// table verbs filled in (with `gid_tables`).
fn apply_verbs(
    sysfs: &Path,
    devices: &mut [Device],
    verbs_opened: VerbsOpened,
    firmware: bool,
    gid_tables: bool,
) -> Vec<(String, u32)> {
    let mut filled = Vec::new();
    // GID netdevs come as ifindexes; each distinct one is named once.
    let mut ifnames = std::collections::HashMap::new();
    let mut opened = match verbs_opened {
        Ok(list) => list,
        Err(reason) => {
            mark_unavailable(devices, &reason);
            return filled;
        }
    };
    let listed: Vec<String> = opened.iter().map(|(n, _)| n.clone()).collect();
    for d in devices.iter_mut() {
        let dev = match opened.iter().position(|(n, _)| *n == d.name) {
            // Without a uverbs node, the kernel may be removing it: not a provider's fault.
            None if d.uverbs.is_none() => match crate::gather::removal::pending(sysfs, &d.name) {
                Some(r) => {
                    d.removal = Some(Box::new(r));
                    Err(format!(
                        "libibverbs no longer lists {}: the kernel is removing it",
                        d.name
                    ))
                }
                None => Err(not_listed(d, &listed)),
            },
            None => Err(not_listed(d, &listed)),
            Some(i) => opened.remove(i).1.map_err(|e| e.to_string()),
        };
        let dev = match dev {
            Ok(dev) => dev,
            Err(reason) => {
                mark_unavailable(std::slice::from_mut(d), &reason);
                continue;
            }
        };
        d.verbs = VerbsStatus::answered();
        if firmware {
            match dev.query_device() {
                // An empty string is "none", as sysfs's empty file is.
                Ok(attrs) => d.fw_ver = Some(attrs.fw_ver).filter(|f| !f.is_empty()),
                Err(e) => d.verbs = VerbsStatus::unavailable(e.to_string()),
            }
        }
        let mut slots = 0usize;
        for p in &mut d.ports {
            let attrs = u8::try_from(p.number)
                .map_err(|_| format!("port {} is not a verbs port number", p.number))
                .and_then(|n| dev.query_port(n).map_err(|e| e.to_string()));
            match attrs {
                Ok(a) => {
                    p.active_mtu = a.active_mtu_bytes();
                    p.max_mtu = a.max_mtu_bytes();
                    p.verbs = VerbsStatus::answered();
                    slots += usize::try_from(a.gid_tbl_len).unwrap_or(0);
                }
                Err(reason) => p.verbs = VerbsStatus::unavailable(reason),
            }
        }
        if gid_tables {
            if let Ok(table) = dev.gid_table(slots) {
                for g in &table {
                    ifnames
                        .entry(g.ndev_ifindex)
                        .or_insert_with(|| verbs::sys::interface_name(g.ndev_ifindex));
                }
                filled.extend(fill_gids(d, &table, &ifnames));
            }
        }
    }
    filled
}

/// A device's ports' GIDs from `ibv_query_gid_table`; a port whose GIDs name a netdev
/// this namespace does not show keeps its sysfs read (done by the caller).
fn fill_gids(
    d: &mut Device,
    table: &[verbs::TableGid],
    ifnames: &std::collections::HashMap<u32, Option<String>>,
) -> Vec<(String, u32)> {
    let mut filled = Vec::new();
    for p in &mut d.ports {
        let mine: Vec<&verbs::TableGid> = table.iter().filter(|g| g.port == p.number).collect();
        if mine
            .iter()
            .any(|g| g.ndev_ifindex != 0 && !matches!(ifnames.get(&g.ndev_ifindex), Some(Some(_))))
        {
            continue;
        }
        let mut gids: Vec<crate::model::device::GidEntry> = mine
            .iter()
            .filter(|g| !g.gid.is_zero())
            .map(|g| crate::model::device::GidEntry {
                index: g.index,
                gid: g.gid,
                gid_type: Some(g.gid_type.clone()),
                netdev: ifnames.get(&g.ndev_ifindex).cloned().flatten(),
            })
            .collect();
        gids.sort_by_key(|g| g.index);
        p.gid_netdevs = netdevs_of(&gids);
        p.gids = gids;
        filled.push((d.name.clone(), p.number));
    }
    filled
}

/// Every RoCE port's netdev with its IPv4 addresses and ARP sysctls, from this host.
pub fn roce_netdevs(devices: &[Device]) -> Vec<crate::model::facts::RoceNetdev> {
    match (net::netdevs(), net::addresses()) {
        (Ok(links), Ok(addrs)) => roce_netdevs_from(devices, &links, &addrs),
        _ => Vec::new(),
    }
}

/// `roce_netdevs` over a link and an address dump the caller already made.
pub fn roce_netdevs_from(
    devices: &[Device],
    links: &[net::NetdevLink],
    addrs: &[net::IfAddr],
) -> Vec<crate::model::facts::RoceNetdev> {
    let mut out = Vec::new();
    for port in devices.iter().flat_map(|d| &d.ports) {
        if port.link_layer != Some(crate::model::device::LinkLayer::Ethernet) {
            continue;
        }
        let Some(nd) = &port.netdev else { continue };
        let Some(link) = links.iter().find(|l| l.name == nd.name) else {
            continue;
        };
        let ipv4 = addrs
            .iter()
            .filter(|a| a.ifindex == link.index)
            .filter_map(|a| match a.address {
                std::net::IpAddr::V4(v4) => Some((v4, a.prefix_len)),
                std::net::IpAddr::V6(_) => None,
            })
            .collect();
        let arp = crate::gather::procfs::netdev_arp_sysctls(&nd.name);
        out.push(crate::model::facts::RoceNetdev {
            port: format!("{}/{}", port.device, port.number),
            netdev: nd.name.clone(),
            mtu: link.mtu.or(nd.mtu),
            ipv4,
            accept_local: arp.accept_local,
            rp_filter: arp.rp_filter,
            arp_ignore: arp.arp_ignore,
            arp_announce: arp.arp_announce,
            link_peer: link
                .link
                .and_then(|i| links.iter().find(|l| l.index == i))
                .map(|l| l.name.clone()),
        });
    }
    out
}

/// The netdevs the ports name that are absent from this namespace's class/net: this
/// process runs in another network namespace (the device is shared into it), so their MTU
/// and state cannot be read here. Each named once, in port order.
pub fn netdevs_outside_namespace(sysfs: &Path, ports: &[&Port]) -> Vec<String> {
    let mut hidden: Vec<String> = ports
        .iter()
        .filter_map(|p| p.netdev.as_ref())
        .map(|n| n.name.clone())
        .filter(|name| !sysfs.join("class/net").join(name).exists())
        .collect();
    hidden.dedup();
    hidden
}

/// `DEV[/PORT]`, `-d DEV` and `-i PORT` resolved to one (device, port) selection.
pub fn target(select: &PortSelection) -> Result<(Option<String>, Option<u32>)> {
    let positional = select.target.as_ref();
    let device = positional
        .map(|t| t.device.clone())
        .or(select.filter.device.clone());
    let port = match (positional.and_then(|t| t.port), select.filter.port) {
        (Some(a), Some(b)) if a != b => {
            return Err(Error::Usage(format!(
                "port {a} in DEV/PORT and -i {b} disagree; give one"
            )))
        }
        (a, b) => a.or(b),
    };
    if port == Some(0) {
        return Err(Error::Usage(
            "ports count from 1; -i 0 is not a port".into(),
        ));
    }
    Ok((device, port))
}
