//! The kernel's own answer for `check --peer`: the RDMA CM resolves address and route
//! toward the peer (what rping, rdma_cm applications and NCCL's RDMA CM path do), and the
//! device, port and GID index it picks are compared with the index being checked.
//!
//! The caller asks the CM (`gather::check::kernel_gid_choice`) through the `ask` it hands
//! to `judge`; everything here is pure.

use std::net::{IpAddr, Ipv6Addr};

use serde::Serialize;

use crate::diagnose::device_node;
use crate::diagnose::gidselect::{describe, is_link_local, Family};
use crate::model::codes::{self, Code};
use crate::model::device::{GidEntry, GidType};
use crate::model::diagnostic::{Diagnostic, Seen, Severity};
use crate::model::facts::{DeviceNodeFacts, Resolution};
use crate::model::failure::Failure;

/// What `check -j` reports under `kernel_choice`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelChoice {
    pub peer: IpAddr,
    /// The source address given to the CM: the checked GID's address, so the kernel answers
    /// for the checked device even when both ends' addresses are local to this host.
    pub source: Option<IpAddr>,
    /// What the kernel picked; None when it was not asked or could not resolve.
    pub kernel: Option<Resolution>,
    /// Whether the kernel's GID index is the one checked; None when there is nothing to
    /// compare.
    pub agrees: Option<bool>,
}

/// The device and GID the comparison is about.
#[derive(Debug, Clone, Copy)]
pub struct Checked<'a> {
    pub device: &'a str,
    pub port: u32,
    /// The index checked (given with -g, or chosen by auto); None when auto found none.
    pub index: Option<u32>,
    /// True when the index came from `-g auto`.
    pub auto: bool,
    /// Populated slots of the checked port.
    pub gids: &'a [GidEntry],
    /// The port's own netdev.
    pub port_netdev: Option<&'a str>,
}

/// The CM source address. Toward a remote peer: none, as an application that binds no
/// source, so the kernel answers from its routing table and can disagree with the index
/// checked. Toward an address of this host the routing table's source would be the peer's
/// own address (the kernel would loop back to the peer's device), so the source is this
/// port's address on the peer's subnet, else on the port's own netdev: chosen from the
/// port and the peer, never from the index being checked.
pub fn source_for(
    peer: IpAddr,
    checked: &Checked,
    route: Option<&crate::model::facts::RouteFacts>,
) -> Option<IpAddr> {
    let route = route?;
    if !route.peer_is_local {
        return None;
    }
    let usable: Vec<&GidEntry> = checked
        .gids
        .iter()
        .filter(|e| {
            Family::of_gid(&e.gid) == Family::of(peer)
                && !is_link_local(&e.gid)
                && !e.gid.is_zero()
                && e.gid.ip() != peer
        })
        .collect();
    let on = |dev: &str| {
        usable
            .iter()
            .find(|e| e.netdev.as_deref() == Some(dev))
            .map(|e| e.gid.ip())
    };
    usable
        .iter()
        .map(|e| e.gid.ip())
        .find(|ip| route.subnet_addresses.contains(ip))
        .or_else(|| checked.port_netdev.and_then(on))
        .or_else(|| usable.first().map(|e| e.gid.ip()))
}

/// Ask the kernel through `ask` (live host only; the caller skips captured trees), unless
/// the route or a missing scope already answers, and judge its answer. `ask` gets the
/// link-local peer with its interface index when scoped, and the CM source address.
/// `nodes` are the /dev/infiniband nodes librdmacm opens on the way (rdma_cm, the checked
/// device's uverbs node) as this process found them. Returns the finding and the JSON
/// record.
pub fn judge(
    peer: IpAddr,
    checked: &Checked,
    route: Option<&crate::model::facts::RouteFacts>,
    scope_ifindex: Option<u32>,
    nodes: &[DeviceNodeFacts],
    ask: impl FnOnce(Option<(Ipv6Addr, u32)>, Option<IpAddr>) -> Result<Resolution, Failure>,
) -> (Diagnostic, KernelChoice) {
    let mut choice = KernelChoice {
        peer,
        source: source_for(peer, checked, route),
        kernel: None,
        agrees: None,
    };
    // No route: rdma_resolve_addr answers ENETUNREACH at once, as rping does; say so
    // without waiting for a neighbour that cannot be asked.
    if route.is_some_and(|r| r.no_route) {
        let f = Diagnostic::finding(
            Severity::Fail,
            CODE,
            format!("the kernel has no route to {peer}: rdma_resolve_addr fails with ENETUNREACH (Network is unreachable), as rping -c -a {peer} does"),
        )
        .evidence(format!("ip route get {peer}: unreachable"))
        .fix(format!("add a route to {peer}, or use the peer's address on the RDMA subnet"));
        return (f, choice);
    }
    let link_local = is_link_local(&crate::model::gid::Gid::from_ip(peer));
    let scoped = match (peer, scope_ifindex) {
        (IpAddr::V6(v6), Some(ifindex)) if link_local => Some((v6, ifindex)),
        _ => None,
    };
    if link_local && scoped.is_none() {
        let f = skipped(
            Severity::Info,
            format!("not asked: a link-local peer ({peer}) needs an interface scope: give --peer {peer}%IFNAME"),
        );
        return (f, choice);
    }
    let answer = ask(scoped, choice.source);
    // A node the CM needs refuses this process: that is what stopped the answer, not the
    // route (the CM passes the open's failure on under its own errno).
    if let (Err(e), Some(r)) = (&answer, device_node::first_refusal(nodes)) {
        let mut step = e.clone();
        step.context.peer_addr = None;
        let f = r.evidence.into_iter().fold(
            Diagnostic::finding(
                Severity::Fail,
                CODE,
                format!(
                    "the kernel's GID choice could not be asked ({step}): {}",
                    r.message
                ),
            ),
            |f, e| f.evidence(e),
        );
        return (f.fix(r.fix), choice);
    }
    let finding = match answer {
        Ok(res) => {
            let f = compare(&res, checked, choice.source);
            choice.agrees = checked.index.zip(res.gid_index).map(|(a, b)| a == b);
            choice.kernel = Some(res);
            f
        }
        Err(e) if e.is_missing_stack() => {
            let x = crate::diagnose::explain(&e, &crate::model::facts::Facts::default());
            skipped(Severity::Warn, format!("not asked: {e}"))
                .evidence(x.message)
                .fix(x.fix.unwrap_or_default())
        }
        Err(e) => {
            let facts = crate::model::facts::Facts {
                route: route.cloned(),
                cm_source: choice.source,
                ..crate::model::facts::Facts::default()
            };
            let x = crate::diagnose::explain(&e, &facts);
            // The message names the peer already; the CM's own line would add it as `IP:0`.
            let mut step = e.clone();
            step.context.peer_addr = None;
            Diagnostic::finding(
                Severity::Fail,
                CODE,
                format!(
                    "the kernel cannot resolve a path to {peer}{}: {}",
                    from(choice.source),
                    step
                ),
            )
            .evidence(x.message)
            .fix(x.fix.unwrap_or_default())
        }
    };
    (finding, choice)
}

pub const CODE: Code = codes::KERNEL_CHOICE;

/// The kernel-choice finding when the kernel is not asked (captured tree, no librdmacm).
pub fn skipped(severity: Severity, why: impl Into<String>) -> Diagnostic {
    Diagnostic::finding(
        severity,
        CODE,
        format!("kernel's GID choice {}", why.into()),
    )
}

fn from(source: Option<IpAddr>) -> String {
    source.map(|s| format!(" from {s}")).unwrap_or_default()
}

/// How the kernel's choice reads: `rxe0/1 GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)`.
fn kernel_text(res: &Resolution) -> String {
    let entry = res.gid_index.map(|index| GidEntry {
        index,
        gid: res.sgid,
        gid_type: res.gid_type.clone(),
        netdev: res.netdev.clone(),
    });
    match entry {
        Some(e) => format!("{}/{} {}", res.device, res.port, describe(&e)),
        None => format!(
            "{}/{} source GID {} (in no GID table slot)",
            res.device,
            res.port,
            res.sgid.ip()
        ),
    }
}

/// Compare the kernel's choice with the checked index and say what a difference means.
pub fn compare(res: &Resolution, checked: &Checked, source: Option<IpAddr>) -> Diagnostic {
    let peer = res.peer;
    let kernel = kernel_text(res);
    let headline = format!(
        "the kernel would use {kernel} toward {peer}{}",
        from(source)
    );
    let mut evidence = vec![format!(
        "rdma_resolve_addr + rdma_resolve_route toward {peer}{}: {}/{}, sgid {}",
        match source {
            Some(s) => format!(" from {s}"),
            None => " (source from the routing table)".into(),
        },
        res.device,
        res.port,
        res.sgid
    )];
    if !res.other_indices.is_empty() {
        let list: Vec<String> = res.other_indices.iter().map(u32::to_string).collect();
        let mode = match (&res.default_roce_mode, res.default_roce_mode_set) {
            (Some(_), true) => format!(
                "default_roce_mode in /sys/kernel/config/rdma_cm/{}",
                res.device
            ),
            (Some(_), false) => "the kernel's default; configfs sets no default_roce_mode".into(),
            (None, _) => "the port's only GID type".into(),
        };
        evidence.push(format!(
            "the same GID also sits at index {} with another type; the CM uses {} ({mode})",
            list.join(", "),
            crate::diagnose::gidselect::type_name(res.gid_type.as_ref())
        ));
    }
    let with_evidence = |mut f: Diagnostic| {
        f.evidence = evidence.iter().map(Seen::gathered).collect();
        f
    };
    let you = match (checked.auto, checked.index) {
        (true, Some(i)) => format!("auto chose index {i}"),
        (false, Some(i)) => format!("you gave -g {i}"),
        (_, None) => "no index was chosen".into(),
    };
    if res.device != checked.device || u32::from(res.port) != checked.port {
        return with_evidence(
            Diagnostic::finding(
                Severity::Fail,
                CODE,
                format!(
                    "{headline}, not {}/{}: CM applications toward {peer} run on {}",
                    checked.device, checked.port, res.device
                ),
            )
            .fix(format!(
                "check {}/{} instead (rdmactl check -d {} -i {} --peer {peer}), or give the checked port an address on the route to {peer}",
                res.device, res.port, res.device, res.port
            )),
        );
    }
    let Some(kernel_index) = res.gid_index else {
        return with_evidence(Diagnostic::finding(
            Severity::Warn,
            CODE,
            format!(
                "{headline}; no slot of {}/{} holds that GID with the type the CM uses",
                res.device, res.port
            ),
        ));
    };
    let Some(index) = checked.index else {
        return with_evidence(Diagnostic::finding(
            Severity::Info,
            CODE,
            format!("{headline}; {you}"),
        ));
    };
    if index == kernel_index {
        let same = if checked.auto {
            "auto chose the same index".to_string()
        } else {
            format!("the same index you gave (-g {index})")
        };
        return with_evidence(Diagnostic::finding(
            Severity::Ok,
            CODE,
            format!("{headline}: {same}"),
        ));
    }
    let given = checked.gids.iter().find(|e| e.index == index);
    let what = match given {
        None => format!("index {index} is an empty slot or past the table"),
        Some(e) if is_link_local(&e.gid) => format!(
            "index {index} is link-local ({}): it reaches {peer} only on the same L2 segment, and the CM (rping, rdma_cm applications) uses the routable GID",
            e.gid.ip()
        ),
        Some(e) if e.gid == res.sgid => format!(
            "index {index} holds the same GID as {}; the CM uses {}",
            crate::diagnose::gidselect::type_name(e.gid_type.as_ref()),
            crate::diagnose::gidselect::type_name(res.gid_type.as_ref())
        ),
        Some(e) => format!(
            "index {index} ({}) is not the address the route to {peer} leaves from",
            e.gid.ip()
        ),
    };
    let peer_v1 = matches!(
        given.and_then(|e| e.gid_type.as_ref()),
        Some(GidType::RoceV1 | GidType::Ib)
    );
    // A link-local index is not what a CM peer uses, but it works against a peer that uses
    // its link-local GID too, on one L2 segment (`-g 0` on both ends, measured): a
    // difference of convention, not a failure. Behind a router `check`'s link-local rule
    // says why it fails.
    if given.is_some_and(|e| is_link_local(&e.gid)) {
        return with_evidence(
            Diagnostic::finding(Severity::Warn, CODE, format!("{headline}; {you}: {what}"))
                .fix(format!(
                    "use -g {kernel_index} to match what CM-based tools use; keep -g {index} only if the peer uses its link-local GID too"
                )),
        );
    }
    with_evidence(
        Diagnostic::finding(Severity::Fail, CODE, format!("{headline}; {you}: {what}")).fix(
            format!(
                "use -g {kernel_index} so this end matches what CM-based tools use{}",
                if peer_v1 {
                    ", unless every peer speaks RoCE v1"
                } else {
                    ""
                }
            ),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::LinkLayer;
    use crate::model::gid::Gid;

    fn resolution(device: &str, index: Option<u32>) -> Resolution {
        Resolution {
            peer: "192.168.77.2".parse().unwrap(),
            source: Some("192.168.77.1".parse().unwrap()),
            device: device.into(),
            port: 1,
            link_layer: LinkLayer::Ethernet,
            sgid: Gid::parse("::ffff:192.168.77.1").unwrap(),
            gid_index: index,
            gid_type: Some(GidType::RoceV2),
            netdev: Some("veth0".into()),
            other_indices: vec![],
            default_roce_mode: Some(GidType::RoceV2),
            default_roce_mode_set: false,
        }
    }

    fn table() -> Vec<GidEntry> {
        let entry = |index, gid: &str, t| GidEntry {
            index,
            gid: Gid::parse(gid).unwrap(),
            gid_type: Some(t),
            netdev: Some("veth0".into()),
        };
        vec![
            entry(0, "fe80::1", GidType::RoceV2),
            entry(1, "::ffff:192.168.77.1", GidType::RoceV2),
            entry(2, "::ffff:192.168.77.1", GidType::RoceV1),
            entry(3, "::ffff:10.0.0.1", GidType::RoceV2),
        ]
    }

    #[test]
    fn comparison_table() {
        let gids = table();
        let checked = |index: Option<u32>, auto: bool| Checked {
            device: "rxe0",
            port: 1,
            index,
            auto,
            gids: &gids,
            port_netdev: Some("veth0"),
        };
        let src = Some("192.168.77.1".parse().unwrap());
        let cases: &[(&str, Resolution, Checked, Severity, &[&str])] = &[
            (
                "same index given",
                resolution("rxe0", Some(1)),
                checked(Some(1), false),
                Severity::Ok,
                &["the kernel would use rxe0/1 GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0) toward 192.168.77.2 from 192.168.77.1", "the same index you gave (-g 1)"],
            ),
            (
                "same index auto",
                resolution("rxe0", Some(1)),
                checked(Some(1), true),
                Severity::Ok,
                &["from 192.168.77.1: auto chose the same index"],
            ),
            (
                "link-local given",
                resolution("rxe0", Some(1)),
                checked(Some(0), false),
                Severity::Warn,
                &[
                    "you gave -g 0: index 0 is link-local (fe80::1)",
                    "use -g 1 to match what CM-based tools use",
                    "keep -g 0 only if the peer uses its link-local GID too",
                ],
            ),
            (
                "v1 twin",
                resolution("rxe0", Some(1)),
                checked(Some(2), false),
                Severity::Fail,
                &["the same GID as RoCE v1; the CM uses RoCE v2", "unless every peer speaks RoCE v1"],
            ),
            (
                "other address",
                resolution("rxe0", Some(1)),
                checked(Some(3), false),
                Severity::Fail,
                &["index 3 (10.0.0.1) is not the address the route"],
            ),
            (
                "empty slot",
                resolution("rxe0", Some(1)),
                checked(Some(9), false),
                Severity::Fail,
                &["index 9 is an empty slot", "use -g 1"],
            ),
            (
                "other device",
                resolution("rxe1", Some(1)),
                checked(Some(1), false),
                Severity::Fail,
                &["not rxe0/1", "rdmactl check -d rxe1 -i 1"],
            ),
            (
                "no slot",
                resolution("rxe0", None),
                checked(Some(1), false),
                Severity::Warn,
                &["in no GID table slot"],
            ),
        ];
        for (name, res, c, severity, says) in cases {
            let f = compare(res, c, src);
            assert_eq!(f.code, CODE);
            assert_eq!(f.severity, *severity, "{name}: {f:?}");
            let text = format!("{} | {}", f.message, f.fix.clone().unwrap_or_default());
            for s in *says {
                assert!(text.contains(s), "{name}: missing {s:?} in {text}");
            }
            assert!(
                f.evidence[0].contains("sgid 0000:0000:0000:0000:0000:ffff:c0a8:4d01"),
                "{name}"
            );
        }
    }

    /// Where the v1/v2 twin is, the evidence says which GID type the CM uses and why.
    #[test]
    fn roce_mode_in_the_evidence() {
        let gids = table();
        let checked = Checked {
            device: "rxe0",
            port: 1,
            index: Some(1),
            auto: false,
            gids: &gids,
            port_netdev: Some("veth0"),
        };
        let mut res = resolution("rxe0", Some(1));
        res.other_indices = vec![2];
        let f = compare(&res, &checked, None);
        assert!(
            f.evidence[1].ends_with(
                "the CM uses RoCE v2 (the kernel's default; configfs sets no default_roce_mode)"
            ),
            "{:?}",
            f.evidence
        );
        res.gid_index = Some(2);
        res.gid_type = Some(GidType::RoceV1);
        res.other_indices = vec![1];
        res.default_roce_mode = Some(GidType::RoceV1);
        res.default_roce_mode_set = true;
        let f = compare(&res, &checked, None);
        assert!(
            f.evidence[1].ends_with(
                "the CM uses RoCE v1 (default_roce_mode in /sys/kernel/config/rdma_cm/rxe0)"
            ),
            "{:?}",
            f.evidence
        );
    }

    /// The source never comes from the index checked: none toward a remote peer (the
    /// kernel's routing table answers), and toward an address of this host the port's
    /// address on the peer's subnet, whatever index is checked.
    #[test]
    fn source_is_not_the_checked_index() {
        let gids = table();
        let c = |index| Checked {
            device: "rxe0",
            port: 1,
            index,
            auto: false,
            gids: &gids,
            port_netdev: Some("veth0"),
        };
        let v4: IpAddr = "192.168.77.2".parse().unwrap();
        let remote = crate::model::facts::RouteFacts {
            peer: Some(v4),
            route_netdev: Some("veth0".into()),
            ..Default::default()
        };
        for i in [Some(0), Some(1), Some(3), None] {
            assert_eq!(source_for(v4, &c(i), Some(&remote)), None, "{i:?}");
        }
        let local = crate::model::facts::RouteFacts {
            peer_is_local: true,
            subnet_addresses: vec!["192.168.77.1".parse().unwrap()],
            ..remote
        };
        for i in [Some(0), Some(1), Some(3), None] {
            assert_eq!(
                source_for(v4, &c(i), Some(&local)),
                Some("192.168.77.1".parse().unwrap()),
                "{i:?}"
            );
        }
        // No routable IPv6 GID on the port: nothing to bind.
        let v6: IpAddr = "2001:db8::2".parse().unwrap();
        assert_eq!(source_for(v6, &c(Some(1)), Some(&local)), None);
    }
}
