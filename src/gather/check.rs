//! What `check` reads: the port from sysfs (and its active MTU through verbs on a live
//! host), the netdev and the route toward the peer (rtnetlink, or the captured tree), the
//! host's ports and netdevs for `--env`, and the kernel CM's own GID choice.

use std::net::{IpAddr, Ipv6Addr};
use std::path::Path;
use std::time::Duration;

use crate::ctx::Ctx;
use crate::error::Result;
use crate::gather::net;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs;
use crate::gather::verbs::cm;
use crate::model::device::{GidEntry, LinkLayer};
use crate::model::facts::{NetFacts, NetdevFacts, PortFacts, Resolution};
use crate::model::failure::Failure;
use crate::model::gid::{is_link_local, Gid};

/// Address and route resolution toward a live neighbour take milliseconds; an unanswered
/// ARP takes the kernel's own few seconds, which is the answer too.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// Read the port from sysfs and, on a live host, its active MTU through verbs.
pub fn load_port_facts(ctx: &Ctx, device: &str, port: u32) -> Result<PortFacts> {
    let sysfs = SysfsRoot::new(&ctx.sysfs);
    let model = sysfs.port(device, port)?;
    let gid_table_len = sysfs.gid_table_len(device, port)? as u32;
    let mut removal = None;
    let (active_mtu, active_mtu_source) = if ctx.captured {
        (
            None,
            "not read: --sysfs points at a captured tree".to_string(),
        )
    } else {
        match active_mtu_live(device, port) {
            Ok(mtu) => (Some(mtu), "ibv_query_port".to_string()),
            // A device verbs cannot open while sysfs lists it may be on its way out.
            Err(why) => match crate::gather::removal::pending(&ctx.sysfs, device) {
                Some(r) => {
                    removal = Some(Box::new(r));
                    (
                        None,
                        format!("not read: libibverbs no longer lists {device}"),
                    )
                }
                None => (None, format!("not read: {why}")),
            },
        }
    };
    Ok(PortFacts {
        link_layer: model
            .link_layer
            .clone()
            .unwrap_or_else(|| LinkLayer::Other("unknown".into())),
        sysfs: model,
        gid_table_len,
        active_mtu,
        active_mtu_source,
        removal,
    })
}

fn active_mtu_live(device: &str, port: u32) -> std::result::Result<u32, String> {
    let port = u8::try_from(port).map_err(|_| format!("port {port} is not a verbs port number"))?;
    let attrs = verbs::open_device(device)
        .and_then(|d| d.query_port(port))
        .map_err(|e| e.to_string())?;
    attrs.active_mtu_bytes().ok_or_else(|| {
        format!(
            "ibv_query_port gave active_mtu {}, not an MTU",
            attrs.active_mtu
        )
    })
}

/// The netdev as a captured tree records it (class/net/<if>/{operstate,mtu}).
pub fn netdev_from_sysfs(sysfs: &Path, name: &str) -> NetdevFacts {
    match SysfsRoot::new(sysfs).netdev(name) {
        Some(n) => NetdevFacts {
            up: n.carries_traffic(),
            name: n.name,
            exists: true,
            operstate: n.operstate,
            mtu: n.mtu,
        },
        None => NetdevFacts {
            name: name.to_string(),
            ..NetdevFacts::default()
        },
    }
}

/// The firewall on a Soft-RoCE port's RoCE v2 paths with GID `entry` toward `peer` (any
/// peer without one); None on a captured tree, for another device, or a GID with no netdev.
pub fn firewall(
    ctx: &Ctx,
    port: &PortFacts,
    entry: &GidEntry,
    peer: Option<IpAddr>,
    net: &NetFacts,
) -> Option<crate::model::netfilter::FirewallFacts> {
    if ctx.captured || !port.sysfs.soft_roce {
        return None;
    }
    let peer_netdev = net
        .route
        .as_ref()
        .filter(|r| r.peer_is_local)
        .and_then(|r| r.peer_local_netdev.as_deref());
    net::netfilter::roce_firewall(net::netfilter::roce_paths(
        &port.name(),
        entry.netdev.as_deref()?,
        entry.gid.ip(),
        peer,
        peer_netdev,
    ))
}

/// The netdev of `entry` and the route toward `peer` (live, or from the captured tree).
#[cfg(test)]
pub fn net_facts(ctx: &Ctx, entry: Option<&GidEntry>, peer: Option<IpAddr>) -> NetFacts {
    net_facts_scoped(ctx, entry, peer, None)
}

/// `scope`: the interface of `--peer ADDR%IFNAME`. A link-local peer is on that link, so
/// the route and neighbour are looked up there.
pub fn net_facts_scoped(
    ctx: &Ctx,
    entry: Option<&GidEntry>,
    peer: Option<IpAddr>,
    scope: Option<&str>,
) -> NetFacts {
    let mut facts = NetFacts {
        netdev_source: "this network namespace (rtnetlink)",
        ..NetFacts::default()
    };
    let netdev_name = entry.and_then(|e| e.netdev.clone());
    if ctx.captured {
        facts.netdev_source = "the captured tree (class/net)";
        facts.netdev = netdev_name
            .as_deref()
            .map(|n| netdev_from_sysfs(&ctx.sysfs, n));
        facts.route_skipped = peer.map(|_| {
            "not checked: --sysfs points at a captured tree, not this host's network".into()
        });
        return facts;
    }
    if let Some(name) = &netdev_name {
        match net::netdev_facts(name) {
            Ok(n) => facts.netdev = Some(n),
            Err(e) => facts.route_skipped = Some(format!("not checked: {e}")),
        }
    }
    if let Some(peer) = peer {
        let scoped = scope.filter(|_| is_link_local(&Gid::from_ip(peer)));
        match net::route_facts(peer, scoped.or(netdev_name.as_deref())) {
            Ok((route, via)) => {
                facts.route = Some(route);
                facts.route_via_gid_netdev = via;
            }
            Err(e) => facts.route_skipped = Some(format!("not checked: {e}")),
        }
    }
    facts
}

/// The interface index of `--peer ADDR%IFNAME`'s scope: the CM gets it as the address's scope.
pub fn scope_ifindex(scope: Option<&str>) -> Option<u32> {
    scope.and_then(|s| net::netdev(s).ok().flatten().map(|d| d.index))
}

/// Ask the kernel's CM which device, port and GID it would use toward `peer` (from
/// `source`), or toward a link-local peer on the interface of `scoped`.
pub fn kernel_gid_choice(
    peer: IpAddr,
    scoped: Option<(Ipv6Addr, u32)>,
    source: Option<IpAddr>,
) -> std::result::Result<Resolution, Failure> {
    match scoped {
        Some((v6, ifindex)) => cm::kernel_gid_choice_scoped(v6, ifindex, RESOLVE_TIMEOUT),
        None => cm::kernel_gid_choice(peer, source, RESOLVE_TIMEOUT),
    }
}

/// What `--env` judges the variables against: the host's devices, every (device, port),
/// and every netdev with its operstate, from the same sysfs root (so a captured tree is
/// judged as its host).
pub struct EnvHost {
    pub devices: Vec<String>,
    pub ports: Vec<(String, u32)>,
    pub netdevs: Vec<(String, Option<crate::model::device::OperState>)>,
}

pub fn env_host(sysfs: &Path) -> Result<EnvHost> {
    let sysfs = SysfsRoot::new(sysfs);
    let devices = sysfs.device_names()?;
    let mut ports = Vec::new();
    for d in &devices {
        for p in sysfs.port_numbers(d)? {
            ports.push((d.clone(), p));
        }
    }
    let netdevs = sysfs
        .netdev_names()
        .into_iter()
        .map(|n| {
            let state = sysfs.netdev(&n).and_then(|d| d.operstate);
            (n, state)
        })
        .collect();
    Ok(EnvHost {
        devices,
        ports,
        netdevs,
    })
}

/// This host's RoCE netdevs, for the ARP flux rule; empty when sysfs lists no device.
pub fn roce_netdevs(sysfs: &Path) -> Vec<crate::model::facts::RoceNetdev> {
    let devices = SysfsRoot::new(sysfs).devices().unwrap_or_default();
    crate::gather::inventory::roce_netdevs(&devices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::gidselect::describe;
    use crate::error::Error;

    fn fixture(name: &str) -> Ctx {
        Ctx::fixture(name)
    }

    #[test]
    fn loads_the_rxe_fixture() {
        let ctx = fixture("rxe-veth-basic");
        assert_eq!(
            crate::gather::inventory::device_port(&ctx.sysfs, None, 1).unwrap(),
            "rxe0"
        );
        let p = load_port_facts(&ctx, "rxe0", 1).unwrap();
        assert_eq!(p.link_layer, LinkLayer::Ethernet);
        assert_eq!(p.sysfs.state, Some(crate::model::device::PortState::Active));
        assert_eq!(p.gid_table_len, 1024);
        assert_eq!(p.gids().len(), 2);
        assert_eq!(p.active_mtu, None);
        assert!(p.active_mtu_source.contains("captured"), "{p:?}");
        assert_eq!(
            describe(&p.gids()[1]),
            "GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)"
        );
        assert!(matches!(
            load_port_facts(&ctx, "rxe0", 2),
            Err(Error::NoSuchPort { .. })
        ));
        assert!(matches!(
            crate::gather::inventory::device_port(&ctx.sysfs, Some("mlx5_0"), 1),
            Err(Error::NoSuchDevice { .. })
        ));
        // One lookup for every command: the device's own ports are named.
        let Err(e) = crate::gather::inventory::device_port(&ctx.sysfs, Some("rxe1"), 9) else {
            panic!("port 9 must not exist");
        };
        assert_eq!(e.to_string(), "no port 9 on rxe1; ports: 1");
    }
}
