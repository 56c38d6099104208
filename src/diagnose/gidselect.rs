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

use crate::finding::{Finding, Severity};
use crate::gid::Gid;
use crate::model::{GidEntry, GidType, LinkLayer};

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

pub use crate::gid::is_link_local;

/// What a GID must fit to reach `peer`, given the kernel's route toward it (`ip route get`).
/// Toward a local address the route says "lo", and a link-local peer has no single route
/// (every link has its own fe80::/64, and the kernel names just the first): the GID's own
/// netdev is then what matters, so the route's netdev is not required.
pub fn want_toward(
    peer: Option<IpAddr>,
    route: Option<&crate::facts::RouteFacts>,
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
        peer_on_link: route.and_then(crate::facts::RouteFacts::on_link),
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

/// A GID type as messages name it: the sysfs text (`IB/RoCE v1` for the shared value,
/// which `GidType`'s Display shortens to `IB` for tables).
pub fn type_name(t: Option<&GidType>) -> String {
    match t {
        Some(GidType::Ib) => "IB/RoCE v1".into(),
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

// ---------------------------------------------------------------------------------------
// The environment variables other stacks read

/// An `NCCL_IB_HCA` filter: `[^][=]name[:port][,name[:port]...]`. `^` excludes, `=` asks for
/// exact names instead of prefixes; both apply to the whole list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcaFilter {
    pub exclude: bool,
    pub exact: bool,
    pub entries: Vec<(String, Option<u32>)>,
}

impl HcaFilter {
    pub fn parse(text: &str) -> Result<HcaFilter, String> {
        let mut rest = text.trim();
        let exclude = rest.starts_with('^');
        if exclude {
            rest = &rest[1..];
        }
        let exact = rest.starts_with('=');
        if exact {
            rest = &rest[1..];
        }
        let mut entries = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, port) = match item.split_once(':') {
                Some((n, p)) => {
                    let port = p.parse::<u32>().ok().filter(|p| *p > 0).ok_or_else(|| {
                        format!("'{item}': '{p}' is not a port number (ports count from 1)")
                    })?;
                    (n, Some(port))
                }
                None => (item, None),
            };
            if name.is_empty() || name.contains(['^', '=']) {
                return Err(format!(
                    "'{item}' is not a device name; '^' and '=' go once at the start of the whole list (e.g. ^=mlx5_1,mlx5_4)"
                ));
            }
            entries.push((name.to_string(), port));
        }
        if entries.is_empty() {
            return Err("the list names no device".into());
        }
        Ok(HcaFilter {
            exclude,
            exact,
            entries,
        })
    }

    /// Whether NCCL would use `device`/`port` under this filter.
    pub fn selects(&self, device: &str, port: u32) -> bool {
        let listed = self.entries.iter().any(|(name, p)| {
            let name_ok = if self.exact {
                device == name
            } else {
                device.starts_with(name.as_str())
            };
            name_ok && p.map_or(true, |p| p == port)
        });
        listed != self.exclude
    }
}

/// What `--env` checks against: this host's port, its GID table, and the automatic choice.
pub struct EnvTarget<'a> {
    pub device: &'a str,
    pub port: u32,
    pub link_layer: &'a LinkLayer,
    pub table: &'a [GidEntry],
    pub auto: &'a Selection,
    /// Every RDMA device on the host, for NCCL_IB_HCA.
    pub devices: &'a [String],
}

/// Check NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX and NCCL_IB_HCA. `lookup` reads a variable
/// (std::env::var in production, a table in tests). Unset variables give no finding.
pub fn validate_env(lookup: impl Fn(&str) -> Option<String>, target: &EnvTarget) -> Vec<Finding> {
    let mut findings = Vec::new();
    if let Some(v) = lookup("NCCL_IB_GID_INDEX") {
        findings.push(check_index_var(
            "NCCL_IB_GID_INDEX",
            &v,
            v.trim() == "-1",
            target,
        ));
    }
    if let Some(v) = lookup("UCX_IB_GID_INDEX") {
        findings.push(check_index_var(
            "UCX_IB_GID_INDEX",
            &v,
            v.trim().eq_ignore_ascii_case("auto"),
            target,
        ));
    }
    if let Some(v) = lookup("NCCL_IB_HCA") {
        findings.push(check_hca(&v, target));
    }
    findings
}

fn check_index_var(name: &str, value: &str, is_auto: bool, target: &EnvTarget) -> Finding {
    let code = format!("env-{}", name.to_lowercase().replace('_', "-"));
    let evidence = vec![format!("{name}={value}")];
    let auto_text = suggestion(target.table, target.auto);
    if is_auto {
        let mut f = Finding::new(
            Severity::Ok,
            &code,
            format!("{name}={value} lets the library choose"),
        );
        f.evidence = evidence;
        if let Some(s) = &auto_text {
            f.evidence.push(format!("rdmactl's own choice: {s}"));
        }
        return f;
    }
    let accepted = if name.starts_with("UCX") {
        "a GID index or 'auto'"
    } else {
        "a GID index, or -1 for automatic selection"
    };
    let Ok(index) = value.trim().parse::<u32>() else {
        let mut f = Finding::new(
            Severity::Fail,
            &code,
            format!("{name}='{value}' is not {accepted}"),
        );
        f.evidence = evidence;
        f.fix = Some(match &auto_text {
            Some(s) => format!(
                "unset it or set {name}={}: {s}",
                target.auto.chosen.unwrap_or(0)
            ),
            None => format!("unset it or give {accepted}"),
        });
        return f;
    };
    let entry = target
        .table
        .iter()
        .find(|e| e.index == index && !e.gid.is_zero());
    let fix_to_auto = |what: &str| match (&auto_text, target.auto.chosen) {
        (Some(s), Some(i)) => format!("set {name}={i}: {s}{what}"),
        _ => "no GID on this port qualifies; check the port's addresses (rdmactl gids)".into(),
    };
    match entry {
        None => {
            let mut f = Finding::new(
                Severity::Fail,
                &code,
                format!(
                    "{name}={index}, but {}/{} has no GID at index {index}",
                    target.device, target.port
                ),
            );
            f.evidence = evidence;
            f.evidence.push(format!(
                "populated indices: {}",
                target
                    .table
                    .iter()
                    .filter(|e| !e.gid.is_zero())
                    .map(|e| e.index.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            f.fix = Some(fix_to_auto(""));
            f
        }
        Some(entry) if target.auto.chosen == Some(index) => {
            let mut f = Finding::new(
                Severity::Ok,
                &code,
                format!("{name}={index} is {}", describe(entry)),
            );
            f.evidence = evidence;
            if let Some(r) = target.auto.reason(index) {
                f.evidence.push(r.why.clone());
            }
            f
        }
        Some(entry) => {
            let reason = target.auto.reason(index);
            let rejected = reason.is_some_and(|r| r.verdict == Verdict::Rejected);
            let mut f = Finding::new(
                if rejected {
                    Severity::Fail
                } else {
                    Severity::Warn
                },
                &code,
                format!("{name}={index} selects {}", describe(entry)),
            );
            f.evidence = evidence;
            if let Some(r) = reason {
                f.evidence.push(format!("index {index}: {}", r.why));
            }
            if *target.link_layer == LinkLayer::Ethernet && is_link_local(&entry.gid) {
                f.evidence.push("a link-local GID reaches only peers on the same L2 segment, and only other link-local GIDs".into());
            }
            f.fix = Some(fix_to_auto(""));
            f
        }
    }
}

fn check_hca(value: &str, target: &EnvTarget) -> Finding {
    let code = "env-nccl-ib-hca";
    let evidence = vec![
        format!("NCCL_IB_HCA={value}"),
        format!("devices: {}", target.devices.join(", ")),
    ];
    let filter = match HcaFilter::parse(value) {
        Ok(f) => f,
        Err(why) => {
            let mut f = Finding::new(
                Severity::Fail,
                code,
                format!("NCCL_IB_HCA={value} does not parse: {why}"),
            );
            f.evidence = evidence;
            f.fix = Some(format!(
                "e.g. NCCL_IB_HCA={}:{}",
                target.device, target.port
            ));
            return f;
        }
    };
    let selected: Vec<&String> = target
        .devices
        .iter()
        .filter(|d| filter.selects(d, target.port))
        .collect();
    let unknown: Vec<&str> = filter
        .entries
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| {
            !target.devices.iter().any(|d| {
                if filter.exact {
                    d == n
                } else {
                    d.starts_with(n)
                }
            })
        })
        .collect();
    let mut f = if selected.is_empty() {
        let mut f = Finding::new(
            Severity::Fail,
            code,
            format!("NCCL_IB_HCA={value} selects no device on this host"),
        );
        f.fix = Some(format!(
            "name an existing device, e.g. NCCL_IB_HCA={}:{}",
            target.device, target.port
        ));
        f
    } else if !filter.selects(target.device, target.port) {
        let mut f = Finding::new(
            Severity::Warn,
            code,
            format!(
                "NCCL_IB_HCA={value} leaves out {}/{} (the port checked here)",
                target.device, target.port
            ),
        );
        f.fix = Some(format!(
            "add {}:{} if NCCL should use it",
            target.device, target.port
        ));
        f
    } else {
        Finding::new(
            Severity::Ok,
            code,
            format!(
                "NCCL_IB_HCA={value} selects {} (port {})",
                selected
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                target.port
            ),
        )
    };
    f.evidence = evidence;
    if !unknown.is_empty() && f.severity != Severity::Fail {
        f.severity = Severity::Warn;
        f.evidence
            .push(format!("no device matches {}", unknown.join(", ")));
        if !filter.exact && !filter.exclude {
            f.evidence
                .push("entries match as prefixes unless the list starts with '='".into());
        }
    }
    f
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

    #[test]
    fn hca_filter_syntax() {
        let cases: &[(&str, &str, u32, Option<bool>)] = &[
            ("mlx5", "mlx5_0", 1, Some(true)),
            ("mlx5", "mlx5_10", 2, Some(true)),
            ("=mlx5_1", "mlx5_10", 1, Some(false)),
            ("=mlx5_1", "mlx5_1", 1, Some(true)),
            ("mlx5_0:1,mlx5_1:1", "mlx5_1", 2, Some(false)),
            ("mlx5_0:1,mlx5_1:1", "mlx5_1", 1, Some(true)),
            ("^mlx5_1", "mlx5_1", 1, Some(false)),
            ("^mlx5_1", "mlx5_0", 1, Some(true)),
            ("^=mlx5_1", "mlx5_10", 1, Some(true)),
            ("mlx5_0:x", "mlx5_0", 1, None),
            ("mlx5_0:0", "mlx5_0", 1, None),
            ("mlx5_0,^mlx5_1", "mlx5_0", 1, None),
            ("", "mlx5_0", 1, None),
        ];
        for (text, dev, port, want) in cases {
            let got = HcaFilter::parse(text).ok().map(|f| f.selects(dev, *port));
            assert_eq!(got, *want, "{text} {dev}:{port}");
        }
    }

    #[test]
    fn env_validation() {
        let table = rxe0();
        let want = peer("192.168.77.2", Some("veth0"), Some(true));
        let auto = select_gid(&table, &LinkLayer::Ethernet, &want);
        let devices = vec!["rxe0".to_string(), "rxe1".to_string()];
        let target = EnvTarget {
            device: "rxe0",
            port: 1,
            link_layer: &LinkLayer::Ethernet,
            table: &table,
            auto: &auto,
            devices: &devices,
        };
        let run = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            validate_env(
                |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
                &target,
            )
        };
        type Vars = &'static [(&'static str, &'static str)];
        let cases: &[(Vars, Severity, &str)] = &[
            (
                &[("NCCL_IB_GID_INDEX", "0")],
                Severity::Fail,
                "set NCCL_IB_GID_INDEX=1",
            ),
            (&[("NCCL_IB_GID_INDEX", "1")], Severity::Ok, "GID index 1"),
            (&[("NCCL_IB_GID_INDEX", "-1")], Severity::Ok, "choose"),
            (
                &[("NCCL_IB_GID_INDEX", "7")],
                Severity::Fail,
                "no GID at index 7",
            ),
            (
                &[("NCCL_IB_GID_INDEX", "three")],
                Severity::Fail,
                "not a GID index",
            ),
            (&[("UCX_IB_GID_INDEX", "auto")], Severity::Ok, "choose"),
            (
                &[("UCX_IB_GID_INDEX", "0")],
                Severity::Fail,
                "UCX_IB_GID_INDEX=1",
            ),
            (&[("NCCL_IB_HCA", "rxe")], Severity::Ok, "rxe0, rxe1"),
            (
                &[("NCCL_IB_HCA", "=rxe1")],
                Severity::Warn,
                "leaves out rxe0/1",
            ),
            (
                &[("NCCL_IB_HCA", "mlx5")],
                Severity::Fail,
                "selects no device",
            ),
            (
                &[("NCCL_IB_HCA", "rxe0,mlx5_0")],
                Severity::Warn,
                "no device matches mlx5_0",
            ),
            (
                &[("NCCL_IB_HCA", "rxe0:x")],
                Severity::Fail,
                "not a port number",
            ),
        ];
        for (vars, severity, text) in cases {
            let findings = run(vars);
            assert_eq!(findings.len(), 1, "{vars:?}");
            let f = &findings[0];
            let all = format!(
                "{} {} {}",
                f.message,
                f.evidence.join(" "),
                f.fix.clone().unwrap_or_default()
            );
            assert_eq!(f.severity, *severity, "{vars:?}: {all}");
            assert!(all.contains(text), "{vars:?}: {all}");
        }
        assert!(run(&[]).is_empty());
    }
}
