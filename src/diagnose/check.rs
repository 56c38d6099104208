//! `check`'s rules: is GID index N of a port usable toward a peer? Pure over the port's
//! facts and the network facts `gather::check` gathered (sysfs, rtnetlink).

use std::net::IpAddr;

use crate::diagnose::gidselect::{
    self, describe, is_link_local, type_name, Family, Selection, Verdict, Want,
};
use crate::diagnose::link_local;
use crate::diagnose::port_state::{self, NetdevAsked, PortAsked};
use crate::diagnose::route;
use crate::diagnose::same_host;
use crate::model::codes::{self, Code};
use crate::model::device::{GidEntry, GidType, LinkLayer, PortState};
use crate::model::diagnostic::{Diagnostic, Severity};
use crate::model::facts::{NetFacts, PortFacts, RoceNetdev, Route, RouteFacts};

/// What a GID must fit to reach `peer`, from the kernel's route toward it.
pub fn want_for(peer: Option<IpAddr>, net: &NetFacts) -> Want {
    gidselect::want_toward(peer, net.route.as_ref(), None)
}

fn entry_or_auto_text(port: &PortFacts, sel: &Selection) -> String {
    gidselect::suggestion(port.gids(), sel).unwrap_or_else(|| "no GID on this port fits".into())
}

/// Run every check on GID `index` of `port` toward `peer`.
pub fn evaluate(
    port: &PortFacts,
    index: u32,
    peer: Option<IpAddr>,
    net: &NetFacts,
    auto: &Selection,
) -> Vec<Diagnostic> {
    let better = || -> String {
        match auto.chosen {
            Some(i) if i != index => entry_or_auto_text(port, auto),
            Some(_) => String::new(),
            None => "no GID on this port fits the peer".into(),
        }
    };
    let with_better = |fix: String| -> String {
        let b = better();
        if b.is_empty() {
            fix
        } else if fix.is_empty() {
            b
        } else {
            format!("{fix}; {b}")
        }
    };

    // A device being removed cannot be used whatever its GIDs say: that first.
    let mut out: Vec<Diagnostic> = port
        .removal
        .iter()
        .map(|r| crate::diagnose::removal::finding(r))
        .collect();
    out.extend(port_findings(port));
    let entry = match slot(port, index, &with_better) {
        Ok(entry) => entry,
        Err(finding) => {
            out.push(*finding);
            return out;
        }
    };
    out.push(
        Diagnostic::finding(
            Severity::Ok,
            codes::GID_SLOT,
            format!("{} is populated", describe(entry)),
        )
        .evidence(format!("gids/{index} = {}", entry.gid)),
    );

    if port.link_layer == LinkLayer::InfiniBand {
        if let Some(r) = auto.reason(index) {
            out.push(Diagnostic::finding(
                if r.verdict == Verdict::Chosen {
                    Severity::Ok
                } else {
                    Severity::Info
                },
                codes::GID_CHOICE,
                format!("index {index}: {}", r.why),
            ));
        }
        return out;
    }

    out.push(gid_type_finding(entry, index, net, &with_better));
    if let Some(peer) = peer {
        out.push(family_finding(
            entry,
            index,
            peer,
            net.route.as_ref(),
            &with_better,
        ));
    }
    out.extend(netdev_finding(port, entry, index, net, &with_better));

    // Route, neighbour, link-local.
    if let Some(peer) = peer {
        if let Some(why) = &net.route_skipped {
            out.push(Diagnostic::finding(
                Severity::Info,
                codes::ROUTE,
                format!("route to {peer}: {why}"),
            ));
        }
        if let Some(route) = &net.route {
            out.extend(route_findings(
                port,
                entry,
                index,
                peer,
                route,
                net.route_via_gid_netdev.as_ref(),
                &with_better,
            ));
        }
    }
    out.extend(mtu_check(port, net));
    out
}

/// The port's state (the one rule, `port_state`) and, on InfiniBand, its LID.
fn port_findings(port: &PortFacts) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let name = port.name();
    out.push(port_state::port_state(&PortAsked::of_port(
        &port.sysfs,
        false,
    )));
    if port.link_layer == LinkLayer::InfiniBand {
        let lid = port.sysfs.lid.unwrap_or(0);
        out.push(if lid == 0 || lid == 0xffff {
            Diagnostic::finding(
                Severity::Fail,
                codes::IB_LID,
                format!("{name} has no LID (0x{lid:04x}): no subnet manager configured it"),
            )
            .fix("start a subnet manager (opensm, or the switch's)")
        } else {
            Diagnostic::finding(
                Severity::Ok,
                codes::IB_LID,
                format!("{name} LID 0x{lid:04x}"),
            )
        });
    }
    out
}

/// Slot `index` of the port's GID table: its entry, or why there is none.
fn slot<'a>(
    port: &'a PortFacts,
    index: u32,
    with_better: &dyn Fn(String) -> String,
) -> Result<&'a GidEntry, Box<Diagnostic>> {
    let name = port.name();
    if index >= port.gid_table_len {
        return Err(Box::new(Diagnostic::finding(
            Severity::Fail,
            codes::GID_SLOT,
            format!("GID index {index} is past the end of {name}'s table ({} entries): RTR fails with EINVAL", port.gid_table_len),
        )
        .evidence(populated(port))
        .fix(with_better(String::new()))));
    }
    port.gids()
        .iter()
        .find(|e| e.index == index)
        .ok_or_else(|| {
            Box::new(
                Diagnostic::finding(
                    Severity::Fail,
                    codes::GID_SLOT,
                    format!("GID index {index} on {name} is an empty slot: RTR fails with ENODATA"),
                )
                .evidence(format!(
                    "gids/{index} is all zero; gid_attrs/types/{index} is unreadable"
                ))
                .evidence(populated(port))
                .fix(with_better(String::new())),
            )
        })
}

/// The fix of the `gid-slot` failure among `findings` (what `-g N` past the table or on
/// an empty slot should be instead), for the error that ends the command.
pub fn gid_slot_fix(findings: &[Diagnostic]) -> Option<String> {
    findings
        .iter()
        .find(|f| f.code == codes::GID_SLOT && f.severity == Severity::Fail)
        .and_then(|f| f.fix.clone())
        .filter(|f| !f.is_empty())
}

/// RoCE v2 is routable; v1 frames stay on one L2 segment.
fn gid_type_finding(
    entry: &GidEntry,
    index: u32,
    net: &NetFacts,
    with_better: &dyn Fn(String) -> String,
) -> Diagnostic {
    match &entry.gid_type {
        Some(GidType::RoceV2) => Diagnostic::finding(
            Severity::Ok,
            codes::GID_TYPE,
            format!("index {index} is RoCE v2 (routable over UDP/IP)"),
        ),
        Some(t @ (GidType::RoceV1 | GidType::Ib)) => {
            let off_link = net.route.as_ref().and_then(RouteFacts::on_link) == Some(false);
            Diagnostic::finding(
                if off_link { Severity::Fail } else { Severity::Warn },
                codes::GID_TYPE,
                format!("index {index} is {}: v1 frames stay on one L2 segment, and the peer must use v1 too", type_name(Some(t))),
            )
            .fix(with_better("use RoCE v2 unless every peer speaks v1".into()))
        }
        other => Diagnostic::finding(
            Severity::Warn,
            codes::GID_TYPE,
            format!("index {index} has {}", type_name(other.as_ref())),
        )
        .evidence(format!("gid_attrs/types/{index} is unreadable or unknown"))
        .fix(with_better(String::new())),
    }
}

/// Both GIDs of a connection must be the same family. `--peer` names the peer's address,
/// not the GID it will use: a link-local GID against an IPv4 address works when the peer
/// uses its link-local GID too, on the same L2 segment (measured on rxe, with rdmactl and
/// ibv_rc_pingpong, `-g 0` on both ends). Only what the address decides is said to fail.
fn family_finding(
    entry: &GidEntry,
    index: u32,
    peer: IpAddr,
    route: Option<&RouteFacts>,
    with_better: &dyn Fn(String) -> String,
) -> Diagnostic {
    let gid_family = Family::of_gid(&entry.gid);
    let peer_family = Family::of(peer);
    if gid_family == peer_family {
        return Diagnostic::finding(
            Severity::Ok,
            codes::GID_FAMILY,
            format!(
                "index {index} and the peer {peer} are both {}",
                gid_family.name()
            ),
        );
    }
    let unknown_peer_gid = "check cannot see which GID the peer will use: --peer gives its address, and the GID is the peer's own -g";
    if is_link_local(&entry.gid) {
        // Off-link, the link-local rule says why it cannot work; this line does not say it twice.
        let on_link = route.and_then(RouteFacts::on_link) != Some(false);
        return Diagnostic::finding(
            if on_link { Severity::Warn } else { Severity::Info },
            codes::GID_FAMILY,
            format!(
                "index {index} is link-local {} and the peer's address {peer} is {}: this works only against a peer that also uses its link-local GID{}; against the peer's {} GID RTR fails with EINVAL (both GIDs of a connection must be one family)",
                gid_family.name(),
                peer_family.name(),
                if on_link { ", on this L2 segment" } else { "" },
                peer_family.name(),
            ),
        )
        .evidence(unknown_peer_gid)
        .fix(with_better(
            "use the same family on both ends: a link-local GID on both (one L2 segment only), or the routable GID on both".into(),
        ));
    }
    Diagnostic::finding(
        Severity::Fail,
        codes::GID_FAMILY,
        format!(
            "index {index} is {} but the peer's address {peer} is {}: against the peer's GID of that address RTR fails with EINVAL (both GIDs of a connection must be one family)",
            gid_family.name(),
            peer_family.name()
        ),
    )
    .evidence(unknown_peer_gid)
    .fix(with_better(String::new()))
}

/// The GID's netdev: present in this namespace and carrying traffic (the one rule,
/// `port_state`). While the port itself is not ACTIVE its netdev's state is that failure's
/// evidence and fix, not a second failure.
fn netdev_finding(
    port: &PortFacts,
    entry: &GidEntry,
    index: u32,
    net: &NetFacts,
    with_better: &dyn Fn(String) -> String,
) -> Option<Diagnostic> {
    let port_active = port.sysfs.state.as_ref().is_some_and(PortState::is_active);
    Some(match (&entry.netdev, &net.netdev) {
        (None, _) => port_state::netdev_note(
            Severity::Fail,
            format!("index {index} has no netdev (gid_attrs/ndevs/{index} unreadable): RTR fails with ENODEV"),
            Some(with_better(String::new())),
        ),
        (Some(dev), None) => port_state::netdev_note(Severity::Info, format!("{dev}: not checked"), None),
        (Some(dev), Some(n)) => {
            let now = NetdevAsked::of_facts(n);
            match port_state::netdev_down(&now, &port.name()) {
                Some(_) if !port_active && n.exists => return None,
                // A netdev gone from this namespace: a GID whose netdev is here is the way.
                Some(mut f) if !n.exists => {
                    f.fix = Some(with_better(f.fix.take().unwrap_or_default()));
                    f.evidence(format!("gid_attrs/ndevs/{index} = {dev}"))
                }
                Some(f) => f.evidence(format!("gid_attrs/ndevs/{index} = {dev}")),
                None => port_state::netdev_ok(&now, "")
                    .evidence(format!("looked up in {}", net.netdev_source)),
            }
        }
    })
}

/// The MTU: the same rule as doctor's.
fn mtu_check(port: &PortFacts, net: &NetFacts) -> Option<Diagnostic> {
    let (n, mtu) = net.netdev.as_ref().and_then(|n| n.mtu.map(|m| (n, m)))?;
    let why_unknown = format!(
        "{}; the RoCE MTU is derived from the netdev MTU",
        port.active_mtu_source
    );
    let mut f = crate::diagnose::doctor::mtu_finding(&n.name, mtu, port.active_mtu, &why_unknown);
    if port.active_mtu.is_some() {
        f = f.evidence(format!("active_mtu from {}", port.active_mtu_source));
    }
    Some(f)
}

pub fn populated(port: &PortFacts) -> String {
    let list: Vec<String> = port.gids().iter().map(|e| e.index.to_string()).collect();
    if list.is_empty() {
        "no populated GID slot".into()
    } else {
        format!("populated indices: {}", list.join(", "))
    }
}

/// A same-host IPv6 peer: no ARP (NDP instead), and on rxe, two devices of one kernel
/// carry no RoCE traffic over IPv6 at all: the one rule, `same_host`'s.
fn same_host_ipv6(port: &PortFacts, owner: &str, gid_dev: &str, peer: IpAddr) -> Diagnostic {
    same_host::ipv6_between_devices(&same_host::Ipv6Pair {
        port: &port.name(),
        soft_roce: port.sysfs.soft_roce,
        peer,
        owner,
        local: gid_dev,
    })
    .unwrap_or_else(|| same_host::ipv6_on_this_host(peer))
}

fn route_findings(
    port: &PortFacts,
    entry: &GidEntry,
    index: u32,
    peer: IpAddr,
    route: &RouteFacts,
    via_gid: Option<&Route>,
    with_better: &dyn Fn(String) -> String,
) -> Vec<Diagnostic> {
    let _ = port;
    let mut out = Vec::new();
    let gid_dev = entry.netdev.clone().unwrap_or_else(|| "?".into());
    // The one route rule (`diagnose::route`) a failed run asks too.
    if route.no_route {
        let mut f = route::no_route(&peer.to_string(), entry.netdev.as_deref())
            .evidence(format!("ip route get {peer}: unreachable"));
        f.fix = f.fix.map(with_better);
        out.push(f);
        return out;
    }
    let route_dev = route.route_netdev.clone().unwrap_or_else(|| "?".into());
    if route.peer_is_local {
        let owner = route
            .peer_local_netdev
            .clone()
            .unwrap_or_else(|| "?".into());
        let mut f = Diagnostic::finding(
            Severity::Ok,
            codes::ROUTE,
            format!("{peer} is an address of this host (on {owner}): a same-host test, sent out through {gid_dev}"),
        )
        .evidence(format!("ip route get {peer}: local, dev {route_dev}"));
        if let Some(r) = via_gid {
            f = f.evidence(format!(
                "ip route get {peer} oif {gid_dev}: dev {}",
                r.oif.clone().unwrap_or_default()
            ));
        }
        out.push(f);
        if peer.is_ipv6() {
            out.push(same_host_ipv6(port, &owner, &gid_dev, peer));
            return out;
        }
        // The one same-host ARP rule, as doctor and a failed run say it.
        let f =
            same_host::arp_toward_local_peer(&owner, &gid_dev, route.accept_local, route.rp_filter);
        out.push(f);
    } else if route_dev == gid_dev {
        let mut f = Diagnostic::finding(
            Severity::Ok,
            codes::ROUTE,
            format!("the kernel routes {peer} through {gid_dev}, the GID's netdev"),
        )
        .evidence(format!("ip route get {peer}: dev {route_dev}"));
        if let Some(gw) = route.gateway {
            f = f.evidence(format!("via {gw}"));
        }
        if let Some(t) = route.table {
            f = f.evidence(format!(
                "from routing table {t}, not main: the netdev's VRF or a policy rule (`ip route get {peer} oif {gid_dev}`)"
            ));
        }
        out.push(f);
    } else {
        let mut f = route::other_netdev(&peer.to_string(), &route_dev, &gid_dev);
        f.fix = f.fix.map(with_better);
        out.push(f);
    }

    // Link-local toward an off-link peer.
    // The one rule, `link_local`'s, that a failed run asks too.
    if is_link_local(&entry.gid) {
        out.push(
            match link_local::routed_peer(&entry.gid, Some(index), &peer.to_string(), route) {
                Some(mut f) => {
                    f.fix = Some(with_better(link_local::FIX.into()));
                    f
                }
                None => link_local::on_link(index, with_better(String::new())),
            },
        );
    }

    // Neighbour.
    let hop = route.gateway.unwrap_or(peer);
    out.push(match route.neighbour_state.as_deref() {
        Some(s @ ("FAILED" | "INCOMPLETE")) => Diagnostic::finding(
            Severity::Fail,
            codes::NEIGHBOUR,
            format!("{hop} on {gid_dev} is {s}: it did not answer ARP/ND, so RTR would time out"),
        )
        .evidence(format!("ip neigh show {hop} dev {gid_dev}: {s}"))
        .fix(format!("check that {hop} is up and on the same segment/VLAN as {gid_dev} (ping -I {gid_dev} {hop})")),
        Some(s) => Diagnostic::finding(Severity::Ok, codes::NEIGHBOUR, format!("{hop} on {gid_dev} is {s}")),
        None => Diagnostic::finding(
            Severity::Info,
            codes::NEIGHBOUR,
            format!("no neighbour entry for {hop} on {gid_dev} yet: the kernel resolves it at RTR (1 s timeout)"),
        ),
    });
    out
}

/// `--peer ADDR%IFNAME`: a link-local peer is reached only on the link its scope names, and
/// the kernel resolves it through the GID's netdev, so the GID must belong to that netdev.
pub fn scope_finding(entry: &GidEntry, peer: IpAddr, scope: &str, port: &PortFacts) -> Diagnostic {
    const CODE: Code = codes::PEER_SCOPE;
    if !is_link_local(&crate::model::gid::Gid::from_ip(peer)) {
        return Diagnostic::finding(
            Severity::Info,
            CODE,
            format!("%{scope} is ignored: a scope matters only for a link-local peer, and {peer} is routed by its address"),
        );
    }
    let index = entry.index;
    match entry.netdev.as_deref() {
        Some(dev) if dev == scope => Diagnostic::finding(
            Severity::Ok,
            CODE,
            format!("the peer {peer}%{scope} is on {scope}, GID index {index}'s netdev"),
        ),
        Some(dev) => {
            // The GID to use instead: link-local (as the peer), on the scope's netdev, v2 first.
            let better = port
                .gids()
                .iter()
                .filter(|e| e.netdev.as_deref() == Some(scope) && is_link_local(&e.gid))
                .max_by_key(|e| {
                    (
                        e.gid_type == Some(GidType::RoceV2),
                        std::cmp::Reverse(e.index),
                    )
                });
            Diagnostic::finding(
                Severity::Fail,
                CODE,
                format!("the peer {peer}%{scope} is on {scope}, but GID index {index} belongs to {dev}: a link-local peer is reached only on the link its scope names, and the kernel resolves it through the GID's netdev"),
            )
            .evidence(format!("gid_attrs/ndevs/{index} = {dev}"))
            .fix(match better {
                Some(e) => format!("use {}", describe(e)),
                None => format!("{} has no link-local GID on {scope}: give the peer's address on {dev} (%{dev}), or check {scope}'s RDMA device", port.name()),
            })
        }
        None => Diagnostic::finding(
            Severity::Info,
            CODE,
            format!("the peer's scope {scope} is not compared: GID index {index} names no netdev"),
        ),
    }
}

/// No GID on the port fits the peer (or perftest's default): the reasons are `auto`'s.
pub fn no_gid_fits(
    device: &str,
    port_no: u32,
    peer: Option<IpAddr>,
    port: &PortFacts,
) -> Diagnostic {
    Diagnostic::finding(
        Severity::Fail,
        codes::GID_CHOICE,
        format!("no GID on {device}/{port_no} fits{}", peer.map(|p| format!(" the peer {p}")).unwrap_or_default()),
    )
    .evidence(populated(port))
    .fix("see the reasons above; give the port an address in the peer's family on the netdev that routes to it")
}

/// ARP flux among this host's ports can send the peer's packets for this port to another
/// port's MAC: said only when the checked port (`device/port`) is one of them.
pub fn arp_flux_for_port(netdevs: &[RoceNetdev], this_port: &str) -> Vec<Diagnostic> {
    crate::diagnose::doctor::arp_flux_groups(netdevs)
        .iter()
        .filter(|(_, members)| members.iter().any(|n| n.port == this_port))
        .map(|(subnet, members)| crate::diagnose::doctor::arp_flux_finding(subnet, members))
        .collect()
}

/// `--env`'s findings, or one line saying that none of the variables is set.
pub fn env_or_unset(found: Vec<Diagnostic>) -> Vec<Diagnostic> {
    if !found.is_empty() {
        return found;
    }
    vec![Diagnostic::finding(
        Severity::Info,
        codes::ENV,
        format!(
            "none of {} is set",
            crate::diagnose::env::VARIABLES.join(", ")
        ),
    )]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ctx::Ctx;
    use crate::diagnose::gidselect;
    use crate::gather::check::{load_port_facts, net_facts, netdev_from_sysfs};
    use crate::gather::net;
    use crate::model::device::GidType;
    use crate::model::diagnostic::Severity;
    use crate::model::gid::Gid;

    fn fixture(name: &str) -> Ctx {
        Ctx::fixture(name)
    }

    fn run_checks(
        fixture_name: &str,
        device: &str,
        index: u32,
        peer: Option<&str>,
        net: NetFacts,
    ) -> Vec<Diagnostic> {
        let ctx = fixture(fixture_name);
        let port = load_port_facts(&ctx, device, 1).unwrap();
        let peer: Option<IpAddr> = peer.map(|p| p.parse().unwrap());
        let auto = gidselect::select_gid(port.gids(), &port.link_layer, &want_for(peer, &net));
        let mut net = net;
        if net.netdev.is_none() {
            let entry = port.gids().iter().find(|e| e.index == index);
            net.netdev = entry
                .and_then(|e| e.netdev.as_deref())
                .map(|n| netdev_from_sysfs(&ctx.sysfs, n));
            net.netdev_source = "the captured tree (class/net)";
        }
        evaluate(&port, index, peer, &net, &auto)
    }

    fn find<'a>(findings: &'a [Diagnostic], code: &str) -> &'a Diagnostic {
        findings
            .iter()
            .find(|f| f.code == code)
            .unwrap_or_else(|| panic!("no {code} in {findings:#?}"))
    }

    fn text(f: &Diagnostic) -> String {
        format!(
            "{} | {} | {}",
            f.message,
            f.evidence.join(" | "),
            f.fix.clone().unwrap_or_default()
        )
    }

    /// The VM's same-host facts toward 192.168.77.2, as `gather::check::net_facts` finds them.
    pub(crate) fn vm_net(accept_local: bool) -> NetFacts {
        NetFacts {
            route: Some(RouteFacts {
                peer: Some("192.168.77.2".parse().unwrap()),
                route_netdev: Some("lo".into()),
                peer_is_local: true,
                peer_local_netdev: Some("veth1".into()),
                accept_local: Some(accept_local),
                rp_filter: Some(0),
                ..RouteFacts::default()
            }),
            ..NetFacts::default()
        }
    }

    #[test]
    fn check_table() {
        struct Case {
            name: &'static str,
            fixture: &'static str,
            device: &'static str,
            index: u32,
            peer: Option<&'static str>,
            net: NetFacts,
            code: &'static str,
            severity: Severity,
            says: &'static [&'static str],
        }
        let routed_elsewhere = NetFacts {
            route: Some(RouteFacts {
                peer: Some("10.9.9.9".parse().unwrap()),
                route_netdev: Some("eth0".into()),
                gateway: Some("192.0.2.1".parse().unwrap()),
                ..RouteFacts::default()
            }),
            ..NetFacts::default()
        };
        let no_route = NetFacts {
            route: Some(RouteFacts {
                peer: Some("10.99.0.5".parse().unwrap()),
                no_route: true,
                ..RouteFacts::default()
            }),
            ..NetFacts::default()
        };
        let cases = vec![
            Case {
                name: "no route: the code and words a failed run gives",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: Some("10.99.0.5"),
                net: no_route,
                code: "no-route",
                severity: Severity::Fail,
                says: &["no route to 10.99.0.5", "ENETUNREACH", "add a route to 10.99.0.5 through veth0"],
            },
            Case {
                name: "index 1 toward the same-host peer",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: Some("192.168.77.2"),
                net: vm_net(true),
                code: "same-host-arp",
                severity: Severity::Ok,
                says: &["veth1"],
            },
            Case {
                name: "without accept_local",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: Some("192.168.77.2"),
                net: vm_net(false),
                code: "same-host-arp",
                severity: Severity::Fail,
                says: &["accept_local=1", "ETIMEDOUT"],
            },
            Case {
                name: "index 0 (link-local) toward an IPv4 peer",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 0,
                peer: Some("192.168.77.2"),
                net: vm_net(true),
                code: "gid-family",
                severity: Severity::Warn,
                says: &[
                    "link-local IPv6",
                    "works only against a peer that also uses its link-local GID, on this L2 segment",
                    "against the peer's IPv4 GID RTR fails with EINVAL",
                    "check cannot see which GID the peer will use",
                    "use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)",
                ],
            },
            Case {
                name: "empty slot 7",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 7,
                peer: None,
                net: NetFacts::default(),
                code: "gid-slot",
                severity: Severity::Fail,
                says: &[
                    "empty slot",
                    "ENODATA",
                    "populated indices: 0, 1",
                    "use GID index 1",
                ],
            },
            Case {
                name: "index past the table",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 5000,
                peer: None,
                net: NetFacts::default(),
                code: "gid-slot",
                severity: Severity::Fail,
                says: &["1024 entries", "use GID index 1"],
            },
            Case {
                name: "routed through another netdev",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: Some("10.9.9.9"),
                net: routed_elsewhere,
                code: "route-other-netdev",
                severity: Severity::Fail,
                says: &["through eth0", "veth0", "times out"],
            },
            Case {
                name: "MTU of veth0",
                fixture: "rxe-veth-basic",
                device: "rxe0",
                index: 1,
                peer: None,
                net: NetFacts::default(),
                code: "mtu",
                severity: Severity::Ok,
                says: &["RoCE MTU 1024 over netdev veth0 MTU 1500", "captured tree"],
            },
            Case {
                name: "port down (veth1 down)",
                fixture: "rxe-veth-vlan-ipv6-down",
                device: "rxe1",
                index: 1,
                peer: None,
                net: NetFacts::default(),
                code: "port-state",
                severity: Severity::Fail,
                says: &["DOWN", "veth1"],
            },
            Case {
                name: "netdev down (captured): the port-state failure names it, once",
                fixture: "rxe-veth-vlan-ipv6-down",
                device: "rxe1",
                index: 1,
                peer: None,
                net: NetFacts::default(),
                code: "port-state",
                severity: Severity::Fail,
                says: &["veth1 is down", "ip link set veth1 up"],
            },
            Case {
                name: "VLAN GID is RoCE v2",
                fixture: "rxe-veth-vlan-ipv6-down",
                device: "rxe0",
                index: 2,
                peer: None,
                net: NetFacts::default(),
                code: "gid-type",
                severity: Severity::Ok,
                says: &["RoCE v2"],
            },
        ];
        for c in cases {
            let findings = run_checks(c.fixture, c.device, c.index, c.peer, c.net);
            let f = find(&findings, c.code);
            assert_eq!(f.severity, c.severity, "{}: {}", c.name, text(f));
            for s in c.says {
                assert!(
                    text(f).contains(s),
                    "{}: missing {s:?} in {}",
                    c.name,
                    text(f)
                );
            }
        }
    }

    /// `-g 0` on both ends of one L2 segment works (measured), so the link-local index
    /// toward an on-link IPv4 address is a warning that says on what it depends, never a
    /// failure; behind a router it fails once, for the router, not again for the family.
    #[test]
    fn a_link_local_index_toward_an_ipv4_address_fails_only_behind_a_router() {
        let findings = run_checks(
            "rxe-veth-basic",
            "rxe0",
            0,
            Some("192.168.77.2"),
            vm_net(true),
        );
        for f in &findings {
            assert!(f.severity < Severity::Fail, "{}", text(f));
            assert!(
                !text(f).contains("but the peer 192.168.77.2 is IPv4"),
                "{}",
                text(f)
            );
        }
        let routed = NetFacts {
            route: Some(RouteFacts {
                peer: Some("10.9.9.9".parse().unwrap()),
                route_netdev: Some("veth0".into()),
                gateway: Some("192.168.77.254".parse().unwrap()),
                ..RouteFacts::default()
            }),
            ..NetFacts::default()
        };
        let findings = run_checks("rxe-veth-basic", "rxe0", 0, Some("10.9.9.9"), routed);
        let fails: Vec<&Diagnostic> = findings
            .iter()
            .filter(|f| f.severity == Severity::Fail)
            .collect();
        assert_eq!(fails.len(), 1, "{findings:#?}");
        assert_eq!(fails[0].code, "link-local-routed-peer");
        assert!(text(fails[0]).contains("behind a router"));
        assert_eq!(find(&findings, "gid-family").severity, Severity::Info);
    }

    #[test]
    fn index_1_toward_the_vm_peer_passes_every_check() {
        let findings = run_checks(
            "rxe-veth-basic",
            "rxe0",
            1,
            Some("192.168.77.2"),
            vm_net(true),
        );
        for f in &findings {
            assert!(f.severity <= Severity::Info, "{}", text(f));
        }
    }

    /// The live path on this host: a GID on the netdev that carries the default route is
    /// routed correctly toward 8.8.8.8, and one on `lo` is not.
    #[test]
    fn live_route_checks_on_this_host() {
        let route = net::route_get("8.8.8.8".parse().unwrap(), None)
            .expect("this test needs a host with a default route (none to 8.8.8.8 here)");
        let dev = route.oif.clone().expect(
            "this test needs a default route through a netdev (the route to 8.8.8.8 has none)",
        );
        let ctx = Ctx {
            captured: false,
            ..fixture("rxe-veth-basic")
        };
        let peer: IpAddr = "8.8.8.8".parse().unwrap();
        let mut sysfs = load_port_facts(&fixture("rxe-veth-basic"), "rxe0", 1)
            .unwrap()
            .sysfs;
        sysfs.device = "fake0".into();
        sysfs.gids = vec![
            GidEntry {
                index: 0,
                gid: Gid::parse("::ffff:127.0.0.1").unwrap(),
                gid_type: Some(GidType::RoceV2),
                netdev: Some("lo".into()),
            },
            GidEntry {
                index: 1,
                gid: Gid::from_ip(route.prefsrc.unwrap_or(IpAddr::from([192, 0, 2, 2]))),
                gid_type: Some(GidType::RoceV2),
                netdev: Some(dev.clone()),
            },
        ];
        let port = PortFacts {
            sysfs,
            link_layer: LinkLayer::Ethernet,
            gid_table_len: 16,
            active_mtu: None,
            active_mtu_source: "not read: a made-up port".into(),
            removal: None,
        };
        let gids = port.gids().to_vec();
        let first = net_facts(&ctx, None, Some(peer));
        let auto =
            gidselect::select_gid(port.gids(), &port.link_layer, &want_for(Some(peer), &first));
        assert_eq!(auto.chosen, Some(1), "{auto:#?}");
        assert!(
            auto.reason(0)
                .unwrap()
                .why
                .contains(&format!("through {dev}")),
            "{auto:#?}"
        );
        let good = evaluate(
            &port,
            1,
            Some(peer),
            &net_facts(&ctx, Some(&gids[1]), Some(peer)),
            &auto,
        );
        assert_eq!(find(&good, "route").severity, Severity::Ok, "{good:#?}");
        assert_eq!(find(&good, "netdev").severity, Severity::Ok, "{good:#?}");
        let bad = evaluate(
            &port,
            0,
            Some(peer),
            &net_facts(&ctx, Some(&gids[0]), Some(peer)),
            &auto,
        );
        let f = find(&bad, "route-other-netdev");
        assert_eq!(f.severity, Severity::Fail, "{bad:#?}");
        assert!(text(f).contains("use GID index 1"), "{}", text(f));
        assert!(
            !bad.iter().any(|f| f.code == "route"),
            "the route's failure is said once, under its own code: {bad:#?}"
        );
    }

    /// Without an interface the kernel answers a link-local lookup with the first link's
    /// fe80::/64 route (veth1 here); that must not reject the fe80 GID on veth0.
    #[test]
    fn link_local_peer_ignores_the_interfaceless_route() {
        let ctx = fixture("rxe-veth-basic");
        let port = load_port_facts(&ctx, "rxe0", 1).unwrap();
        let peer: IpAddr = "fe80::ec2c:c7ff:fe05:b79a".parse().unwrap();
        let net = NetFacts {
            route: Some(RouteFacts {
                peer: Some(peer),
                route_netdev: Some("veth1".into()),
                ..RouteFacts::default()
            }),
            ..NetFacts::default()
        };
        let auto =
            gidselect::select_gid(port.gids(), &port.link_layer, &want_for(Some(peer), &net));
        assert_eq!(auto.chosen, Some(0), "{auto:#?}");
    }
}
