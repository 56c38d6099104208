//! Choosing a GID index, and saying why.
//!
//! The ranking follows what perftest, NCCL and UCX do (the peer's address family, IPv4 by
//! default; not link-local; RoCE v2 over v1), and adds the check none of them makes: when
//! the kernel's route to the peer is known, the GID must belong to the netdev that route
//! leaves through, because the kernel resolves the peer's MAC through the source GID's
//! netdev (`rdma_resolve_ip`). A GID on any other netdev times out at RTR.

// Parts of this API serve pingpong and selftest, which call it once the phases merge.

use std::net::IpAddr;

use serde::Serialize;

use crate::model::device::{GidEntry, GidType, LinkLayer};
use crate::model::gid::Gid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Family {
    #[serde(rename = "IPv4")]
    V4,
    #[serde(rename = "IPv6")]
    V6,
}

impl Family {
    pub fn of(ip: IpAddr) -> Family {
        match ip {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }

    pub fn of_gid(gid: &Gid) -> Family {
        if gid.ipv4().is_some() {
            Family::V4
        } else {
            Family::V6
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
}

/// What the caller knows about the peer. Every field is optional: with nothing known the
/// choice is perftest's (IPv4, not link-local, v2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Want {
    /// The address family to use; defaults to the peer's, else IPv4.
    pub family: Option<Family>,
    /// The peer's IP address.
    pub peer: Option<IpAddr>,
    /// The netdev the kernel's route to the peer leaves through (`ip route get PEER`).
    pub route_netdev: Option<String>,
    /// False when the route goes through a gateway: a link-local GID cannot reach it.
    pub peer_on_link: Option<bool>,
    /// The peer's GID type, when a handshake told us: both ends must agree.
    pub peer_gid_type: Option<GidType>,
    /// This host's addresses in the peer's subnet: the GID holding one faces the peer (a
    /// VLAN's own GID rather than the untagged one, a /31's rather than the primary),
    /// local route or not.
    pub subnet_addresses: Vec<IpAddr>,
    /// The route's source toward the peer (`ip route get PEER`'s `src`): the address the
    /// kernel, and rdma_cm, send from. The GID holding it breaks every tie.
    pub route_source: Option<IpAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Chosen,
    /// Would work, but ranks below the chosen one.
    Usable,
    Rejected,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    pub index: u32,
    pub verdict: Verdict,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Selection {
    pub chosen: Option<u32>,
    /// One entry per populated slot, in index order.
    pub reasons: Vec<Reason>,
}

impl Selection {
    pub fn reason(&self, index: u32) -> Option<&Reason> {
        self.reasons.iter().find(|r| r.index == index)
    }
}

pub use crate::model::gid::is_link_local;

/// What a GID must fit to reach `peer`, given the kernel's route toward it (`ip route get`).
/// Toward a local address the route says "lo", and a link-local peer has no single route
/// (every link has its own fe80::/64, and the kernel names just the first): the GID's own
/// netdev is then what matters, so the route's netdev is not required.
pub fn want_toward(
    peer: Option<IpAddr>,
    route: Option<&crate::model::facts::RouteFacts>,
    peer_gid_type: Option<GidType>,
) -> Want {
    let peer_link_local = peer
        .or(route.and_then(|r| r.peer))
        .is_some_and(|p| is_link_local(&Gid::from_ip(p)));
    Want {
        family: None,
        peer,
        route_netdev: route
            .filter(|r| !r.peer_is_local && !r.no_route && !peer_link_local)
            .and_then(|r| r.route_netdev.clone()),
        peer_on_link: route.and_then(crate::model::facts::RouteFacts::on_link),
        peer_gid_type,
        subnet_addresses: route
            .map(|r| r.subnet_addresses.clone())
            .unwrap_or_default(),
        // Toward an address of this host the source is the peer's own address: no hint.
        route_source: route
            .filter(|r| !r.peer_is_local && !r.no_route)
            .and_then(|r| r.prefsrc),
    }
}

/// A GID type as messages name it, as `gids` does: the kernel's shared "IB/RoCE v1" is
/// already `RoceV1` on Ethernet, so `Ib` is an InfiniBand GID.
pub fn type_name(t: Option<&GidType>) -> String {
    match t {
        Some(other) => other.to_string(),
        None => "type unknown".into(),
    }
}

/// `GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)`: how every message names a GID.
pub fn describe(entry: &GidEntry) -> String {
    let addr = match entry.gid.ipv4() {
        Some(v4) => format!("::ffff:{v4}"),
        None => entry.gid.ipv6().to_string(),
    };
    match &entry.netdev {
        Some(dev) => format!(
            "GID index {} ({}, {addr} on {dev})",
            entry.index,
            type_name(entry.gid_type.as_ref())
        ),
        None => format!(
            "GID index {} ({}, {addr})",
            entry.index,
            type_name(entry.gid_type.as_ref())
        ),
    }
}

fn is_v2(t: Option<&GidType>) -> bool {
    matches!(t, Some(GidType::RoceV2))
}

fn is_v1(t: Option<&GidType>) -> bool {
    matches!(t, Some(GidType::RoceV1) | Some(GidType::Ib))
}

/// Why `entry` cannot be used toward the wanted peer, or None when it can.
fn rejection(entry: &GidEntry, want: &Want, family: Family) -> Option<String> {
    let gid = &entry.gid;
    if gid.is_zero() {
        return Some("the slot is empty (all-zero GID)".into());
    }
    if gid.0[0] == 0xff {
        return Some("a multicast GID cannot be a source address".into());
    }
    let entry_family = Family::of_gid(gid);
    let link_local = is_link_local(gid);
    let peer_link_local = want.peer.is_some_and(|p| is_link_local(&Gid::from_ip(p)));
    if entry_family != family {
        let what = if link_local {
            "link-local IPv6"
        } else {
            entry_family.name()
        };
        let whose = match want.peer {
            Some(p) => format!("the peer {p} is {}", family.name()),
            None => format!(
                "the wanted family is {} (the default, as perftest and NCCL)",
                family.name()
            ),
        };
        return Some(format!(
            "it is {what} and {whose}: both ends of a RoCE v2 connection must use the same family"
        ));
    }
    if link_local && want.peer_on_link == Some(false) {
        return Some(format!(
            "it is link-local and the peer {} is behind a router: link-local addresses never cross one",
            want.peer.map(|p| p.to_string()).unwrap_or_default()
        ));
    }
    if link_local && want.peer.is_some() && !peer_link_local && want.peer_on_link.is_none() {
        return Some("it is link-local and the peer's address is not: the kernel cannot resolve a routed peer from it".into());
    }
    if let (Some(route_dev), Some(dev)) = (&want.route_netdev, &entry.netdev) {
        if route_dev != dev {
            return Some(format!(
                "it belongs to {dev}, but the kernel routes to {} through {route_dev}: the peer's MAC is resolved through the GID's netdev, so RTR would time out",
                want.peer.map(|p| p.to_string()).unwrap_or_else(|| "the peer".into())
            ));
        }
    }
    if let Some(peer_type) = &want.peer_gid_type {
        let mismatch = (is_v2(Some(peer_type)) && !is_v2(entry.gid_type.as_ref()))
            || (is_v1(Some(peer_type)) && !is_v1(entry.gid_type.as_ref()));
        if mismatch {
            return Some(format!(
                "it is {} and the peer uses {}: both ends must use the same RoCE version",
                type_name(entry.gid_type.as_ref()),
                type_name(Some(peer_type))
            ));
        }
    }
    None
}

/// Higher is better; the ranking of perftest's `get_best_gid_index` with the family already
/// enforced, plus a preference for entries whose type is readable.
fn score(entry: &GidEntry, peer_link_local: bool, want: &Want) -> u32 {
    let link_local = is_link_local(&entry.gid);
    let mut s = 0;
    if link_local == peer_link_local {
        s += 10;
    }
    if want.subnet_addresses.contains(&entry.gid.ip()) {
        s += 5;
    }
    if want.route_source.is_some_and(|src| entry.gid.ip() == src) {
        s += 7;
    }
    s += match entry.gid_type {
        Some(GidType::RoceV2) => 2,
        Some(GidType::RoceV1) | Some(GidType::Ib) => 1,
        _ => 0,
    };
    s
}

/// Pick the GID index to use on a port whose GID table is `table`.
pub fn select_gid(table: &[GidEntry], link_layer: &LinkLayer, want: &Want) -> Selection {
    let mut entries: Vec<&GidEntry> = table.iter().collect();
    entries.sort_by_key(|e| e.index);

    if *link_layer == LinkLayer::InfiniBand {
        // The port GID (subnet prefix + port GUID) is index 0; the others are alias GIDs.
        let chosen = entries
            .iter()
            .find(|e| e.index == 0 && !e.gid.is_zero())
            .map(|e| e.index);
        let reasons = entries
            .iter()
            .filter(|e| !e.gid.is_zero())
            .map(|e| match (e.index, chosen) {
                (0, Some(_)) => Reason {
                    index: 0,
                    verdict: Verdict::Chosen,
                    why: "InfiniBand: index 0 is the port GID (subnet prefix + port GUID), as NCCL and perftest use".into(),
                },
                _ => Reason {
                    index: e.index,
                    verdict: Verdict::Usable,
                    why: "InfiniBand alias GID; index 0 is the port's own".into(),
                },
            })
            .collect();
        return Selection { chosen, reasons };
    }

    let family = want
        .family
        .or(want.peer.map(Family::of))
        .unwrap_or(Family::V4);
    let peer_link_local = want.peer.is_some_and(|p| is_link_local(&Gid::from_ip(p)));
    let mut reasons = Vec::new();
    let mut best: Option<(&GidEntry, u32)> = None;
    for entry in entries.iter().filter(|e| !e.gid.is_zero()) {
        match rejection(entry, want, family) {
            Some(why) => reasons.push(Reason {
                index: entry.index,
                verdict: Verdict::Rejected,
                why,
            }),
            None => {
                let s = score(entry, peer_link_local, want);
                if best.map_or(true, |(_, b)| s > b) {
                    best = Some((entry, s));
                }
                reasons.push(Reason {
                    index: entry.index,
                    verdict: Verdict::Usable,
                    why: String::new(),
                });
            }
        }
    }
    let chosen = best.map(|(e, _)| e);
    for reason in reasons.iter_mut().filter(|r| r.verdict == Verdict::Usable) {
        let entry = entries
            .iter()
            .find(|e| e.index == reason.index)
            .expect("reason for a table entry");
        reason.why = match chosen {
            Some(c) if c.index == entry.index => {
                reason.verdict = Verdict::Chosen;
                chosen_why(entry, family, want)
            }
            Some(c) => ranked_lower_why(entry, c, peer_link_local, want),
            None => unreachable!("a usable entry implies a choice"),
        };
    }
    Selection {
        chosen: chosen.map(|e| e.index),
        reasons,
    }
}

fn chosen_why(entry: &GidEntry, family: Family, want: &Want) -> String {
    let mut parts = vec![format!("{}", type_name(entry.gid_type.as_ref()))];
    parts.push(match want.peer {
        Some(p) => format!("{} like the peer {p}", family.name()),
        None => format!(
            "{} (the default family, as perftest and NCCL)",
            family.name()
        ),
    });
    if !is_link_local(&entry.gid) {
        parts.push("not link-local".into());
    }
    if want.route_source.is_some_and(|src| entry.gid.ip() == src) {
        parts.push(format!(
            "its address is the route's source toward the peer (`ip route get {}`)",
            want.peer
                .map(|p| p.to_string())
                .unwrap_or_else(|| "PEER".into())
        ));
    }
    if let (Some(dev), Some(_)) = (&entry.netdev, &want.route_netdev) {
        parts.push(format!(
            "on {dev}, the netdev the kernel routes the peer through"
        ));
    } else if want.subnet_addresses.contains(&entry.gid.ip()) {
        parts.push(format!(
            "its address {} is on the peer's subnet{}",
            entry.gid.ip(),
            entry
                .netdev
                .as_ref()
                .map(|d| format!(" (on {d})"))
                .unwrap_or_default()
        ));
    }
    parts.join(", ")
}

fn ranked_lower_why(
    entry: &GidEntry,
    chosen: &GidEntry,
    peer_link_local: bool,
    want: &Want,
) -> String {
    let in_subnet = |e: &GidEntry| want.subnet_addresses.contains(&e.gid.ip());
    let is_source = |e: &GidEntry| want.route_source.is_some_and(|src| e.gid.ip() == src);
    if is_source(chosen) && !is_source(entry) {
        return format!(
            "usable, but the route to the peer leaves from {} (index {}), not from this address",
            chosen.gid.ip(),
            chosen.index
        );
    }
    if in_subnet(chosen) && !in_subnet(entry) {
        return format!(
            "usable, but its address is not on the peer's subnet; index {}'s ({}) is",
            chosen.index,
            chosen.gid.ip()
        );
    }
    if is_link_local(&entry.gid) != peer_link_local && is_link_local(&chosen.gid) == peer_link_local
    {
        return if is_link_local(&entry.gid) {
            format!("usable, but link-local; index {} is not", chosen.index)
        } else {
            format!(
                "usable, but the peer is link-local and this GID is not; index {} is link-local like it",
                chosen.index
            )
        };
    }
    if is_v1(entry.gid_type.as_ref()) && is_v2(chosen.gid_type.as_ref()) {
        return format!(
            "usable, but RoCE v1 (not routable across subnets); index {} is v2",
            chosen.index
        );
    }
    if entry.gid_type.is_none() {
        return format!(
            "its type is unreadable; index {} has a known type",
            chosen.index
        );
    }
    format!(
        "usable; index {} is equally good and comes first",
        chosen.index
    )
}

/// One line for error messages: "use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)".
pub fn suggestion(table: &[GidEntry], selection: &Selection) -> Option<String> {
    let index = selection.chosen?;
    table
        .iter()
        .find(|e| e.index == index)
        .map(|e| format!("use {}", describe(e)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn entry(index: u32, gid: &str, t: Option<GidType>, dev: Option<&str>) -> GidEntry {
        GidEntry {
            index,
            gid: Gid::parse(gid).unwrap(),
            gid_type: t,
            netdev: dev.map(String::from),
        }
    }

    /// rxe0 in the test VM: link-local and IPv4-mapped, both v2, on veth0.
    pub fn rxe0() -> Vec<GidEntry> {
        vec![
            entry(
                0,
                "fe80::fcc2:10ff:fefe:2b7e",
                Some(GidType::RoceV2),
                Some("veth0"),
            ),
            entry(
                1,
                "::ffff:192.168.77.1",
                Some(GidType::RoceV2),
                Some("veth0"),
            ),
        ]
    }

    /// An mlx5 port: v1 and v2 for each address, plus a VLAN address and an IPv6 global.
    pub fn mlx5() -> Vec<GidEntry> {
        use GidType::*;
        vec![
            entry(0, "fe80::ba59:9fff:fe12:3456", Some(RoceV1), Some("ens1f0")),
            entry(1, "fe80::ba59:9fff:fe12:3456", Some(RoceV2), Some("ens1f0")),
            entry(2, "::ffff:10.0.0.5", Some(RoceV1), Some("ens1f0")),
            entry(3, "::ffff:10.0.0.5", Some(RoceV2), Some("ens1f0")),
            entry(4, "2001:db8::5", Some(RoceV1), Some("ens1f0")),
            entry(5, "2001:db8::5", Some(RoceV2), Some("ens1f0")),
            entry(6, "::ffff:10.100.0.5", Some(RoceV1), Some("ens1f0.100")),
            entry(7, "::ffff:10.100.0.5", Some(RoceV2), Some("ens1f0.100")),
        ]
    }

    fn peer(ip: &str, dev: Option<&str>, on_link: Option<bool>) -> Want {
        Want {
            peer: Some(ip.parse().unwrap()),
            route_netdev: dev.map(String::from),
            peer_on_link: on_link,
            ..Want::default()
        }
    }

    /// A VLAN on the same host: the route to the peer says "local", so the peer's subnet
    /// decides, and the VLAN netdev's GID is chosen over the untagged one.
    /// Several addresses on one port: the GID holding the route's source toward the peer
    /// wins the tie, and the others say why they lost.
    #[test]
    fn the_routes_source_breaks_ties() {
        let v2 = Some(GidType::RoceV2);
        let table = vec![
            entry(1, "::ffff:192.168.77.1", v2.clone(), Some("veth0")),
            entry(2, "::ffff:10.90.0.1", v2.clone(), Some("veth0")),
            entry(3, "::ffff:10.91.0.0", v2.clone(), Some("veth0")),
        ];
        let want = Want {
            peer: Some("10.91.0.1".parse().unwrap()),
            route_netdev: Some("veth0".into()),
            route_source: Some("10.91.0.0".parse().unwrap()),
            ..Want::default()
        };
        let sel = select_gid(&table, &LinkLayer::Ethernet, &want);
        assert_eq!(sel.chosen, Some(3), "{sel:?}");
        assert!(sel
            .reason(3)
            .unwrap()
            .why
            .contains("the route's source toward the peer"));
        let r1 = &sel.reason(1).unwrap().why;
        assert!(
            r1.contains("the route to the peer leaves from 10.91.0.0 (index 3)"),
            "{r1}"
        );
    }

    /// Toward a link-local peer the link-local GID is chosen, and the global one is not
    /// called link-local.
    #[test]
    fn link_local_peer_wording() {
        let v2 = Some(GidType::RoceV2);
        let table = vec![
            entry(0, "fe80::1", v2.clone(), Some("veth0")),
            entry(2, "2001:db8::1", v2.clone(), Some("veth0")),
        ];
        let want = Want {
            peer: Some("fe80::2".parse().unwrap()),
            peer_on_link: Some(true),
            ..Want::default()
        };
        let sel = select_gid(&table, &LinkLayer::Ethernet, &want);
        assert_eq!(sel.chosen, Some(0), "{sel:?}");
        let r2 = &sel.reason(2).unwrap().why;
        assert!(
            r2.contains("the peer is link-local and this GID is not"),
            "{r2}"
        );
        assert!(!r2.contains("usable, but link-local"), "{r2}");
    }

    #[test]
    fn the_peers_subnet_picks_the_vlan_gid() {
        let v2 = Some(GidType::RoceV2);
        let table = vec![
            entry(0, "fe80::dcf5:45ff:fefa:4609", v2.clone(), Some("veth1")),
            entry(1, "::ffff:192.168.77.2", v2.clone(), Some("veth1")),
            entry(2, "::ffff:192.168.10.2", v2.clone(), Some("veth1.10")),
            entry(3, "fe80::dcf5:45ff:fefa:4609", v2.clone(), Some("veth1.10")),
        ];
        let want = Want {
            peer: Some("192.168.10.1".parse().unwrap()),
            subnet_addresses: vec!["192.168.10.2".parse().unwrap()],
            ..Want::default()
        };
        let sel = select_gid(&table, &LinkLayer::Ethernet, &want);
        assert_eq!(sel.chosen, Some(2), "{sel:?}");
        let r1 = sel.reason(1).unwrap();
        assert!(
            r1.why.contains("its address is not on the peer's subnet"),
            "{r1:?}"
        );
        assert!(sel
            .reason(2)
            .unwrap()
            .why
            .contains("its address 192.168.10.2 is on the peer's subnet (on veth1.10)"));
        // Without the subnet fact, the first one wins, as before.
        let plain = Want {
            subnet_addresses: Vec::new(),
            ..want
        };
        assert_eq!(
            select_gid(&table, &LinkLayer::Ethernet, &plain).chosen,
            Some(1)
        );
    }

    #[test]
    fn selection_table() {
        use GidType::*;
        let ib = vec![
            entry(0, "fe80::2:c903:a:1", Some(Ib), None),
            entry(1, "fe80::2:c903:a:99", Some(Ib), None),
        ];
        type Case = (&'static str, Vec<GidEntry>, LinkLayer, Want, Option<u32>);
        let cases: Vec<Case> = vec![
            (
                "rxe, nothing known: IPv4 by default",
                rxe0(),
                LinkLayer::Ethernet,
                Want::default(),
                Some(1),
            ),
            (
                "rxe, same-host peer via veth0",
                rxe0(),
                LinkLayer::Ethernet,
                peer("192.168.77.2", Some("veth0"), Some(true)),
                Some(1),
            ),
            (
                "rxe, IPv6 link-local peer on-link",
                rxe0(),
                LinkLayer::Ethernet,
                peer("fe80::ec2c:c7ff:fe05:b79a", Some("veth0"), Some(true)),
                Some(0),
            ),
            (
                "rxe, peer routed through another netdev",
                rxe0(),
                LinkLayer::Ethernet,
                peer("10.1.1.1", Some("eth0"), Some(false)),
                None,
            ),
            (
                "mlx5 default: v2 IPv4 over v1",
                mlx5(),
                LinkLayer::Ethernet,
                Want::default(),
                Some(3),
            ),
            (
                "mlx5, peer on the VLAN",
                mlx5(),
                LinkLayer::Ethernet,
                peer("10.100.0.9", Some("ens1f0.100"), Some(true)),
                Some(7),
            ),
            (
                "mlx5, routed IPv6 peer",
                mlx5(),
                LinkLayer::Ethernet,
                peer("2001:db8:99::1", Some("ens1f0"), Some(false)),
                Some(5),
            ),
            (
                "mlx5, peer speaks v1",
                mlx5(),
                LinkLayer::Ethernet,
                Want {
                    peer_gid_type: Some(RoceV1),
                    ..peer("10.0.0.6", Some("ens1f0"), Some(true))
                },
                Some(2),
            ),
            (
                "InfiniBand: index 0",
                ib,
                LinkLayer::InfiniBand,
                Want::default(),
                Some(0),
            ),
            (
                "empty table",
                vec![],
                LinkLayer::Ethernet,
                Want::default(),
                None,
            ),
        ];
        for (name, table, ll, want, chosen) in cases {
            let sel = select_gid(&table, &ll, &want);
            assert_eq!(sel.chosen, chosen, "{name}: {sel:#?}");
            assert_eq!(
                sel.reasons.len(),
                table.iter().filter(|e| !e.gid.is_zero()).count(),
                "{name}"
            );
            for r in &sel.reasons {
                assert!(!r.why.is_empty(), "{name}: index {} has no reason", r.index);
            }
        }
    }

    #[test]
    fn reasons_name_the_cause() {
        let sel = select_gid(
            &rxe0(),
            &LinkLayer::Ethernet,
            &peer("192.168.77.2", Some("veth0"), Some(true)),
        );
        let r0 = sel.reason(0).unwrap();
        assert_eq!(r0.verdict, Verdict::Rejected);
        assert!(
            r0.why.contains("IPv6") && r0.why.contains("IPv4"),
            "{}",
            r0.why
        );
        assert!(sel.reason(1).unwrap().why.contains("RoCE v2"));

        let sel = select_gid(
            &rxe0(),
            &LinkLayer::Ethernet,
            &peer("10.1.1.1", Some("eth0"), Some(false)),
        );
        assert!(
            sel.reason(1).unwrap().why.contains("through eth0"),
            "{sel:?}"
        );

        let sel = select_gid(&mlx5(), &LinkLayer::Ethernet, &Want::default());
        assert!(sel.reason(2).unwrap().why.contains("RoCE v1"), "{sel:?}");
        assert!(sel.reason(1).unwrap().why.contains("IPv6"), "{sel:?}");

        // fe80 v6 toward a routed v6 peer: rejected as link-local (NVIDIA/nccl#769).
        let sel = select_gid(
            &mlx5(),
            &LinkLayer::Ethernet,
            &peer("2001:db8:99::1", Some("ens1f0"), Some(false)),
        );
        assert!(sel.reason(1).unwrap().why.contains("link-local"), "{sel:?}");
    }

    #[test]
    fn link_local_ranges() {
        for (g, ll) in [
            ("fe80::1", true),
            ("febf::1", true),
            ("fec0::1", false),
            ("::ffff:169.254.3.4", true),
            ("::ffff:192.168.77.1", false),
            ("2001:db8::1", false),
        ] {
            assert_eq!(is_link_local(&Gid::parse(g).unwrap()), ll, "{g}");
        }
    }

    #[test]
    fn describe_names_type_address_and_netdev() {
        assert_eq!(
            describe(&rxe0()[1]),
            "GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)"
        );
    }
}
