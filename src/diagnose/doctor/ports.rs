//! Each port: its state, the netdev it rides on and its MTU, its GID table, the network
//! namespace it lives in, and GIDs that two ports share.

use super::{finding, short_list};
use crate::diagnose::port_state::{self, NetdevAsked, PortAsked};
use crate::model::codes;
use crate::model::device::{LinkLayer, Netdev, Port, PortState};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::doctor::HostNet;

/// The IB MTU a RoCE port can use over a netdev of this MTU: the largest of 256..4096
/// that fits once the RoCE headers are taken off, as the kernel's iboe_get_mtu does, so
/// a 1500-byte netdev gives 1024 and 9000 gives 4096. None when not even 256 fits.
pub fn roce_mtu_for_netdev(netdev_mtu: u32) -> Option<u32> {
    // GRH 40 + UDP 8 + BTH 12 + XRC ext 4 + AtomicETH 28 + ICRC 4, as iboe_get_mtu counts.
    const ROCE_OVERHEAD: u32 = 96;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|m| m + ROCE_OVERHEAD <= netdev_mtu)
}

/// The RoCE MTU over netdev `nd` of MTU `mtu`, against the port's active MTU when verbs
/// gave it (`why_unknown` says why not). doctor and check judge the MTU with this one rule.
pub fn mtu_finding(nd: &str, mtu: u32, active_mtu: Option<u32>, why_unknown: &str) -> Diagnostic {
    let Some(fits) = roce_mtu_for_netdev(mtu) else {
        return Diagnostic::finding(
            Severity::Fail,
            codes::MTU,
            format!(
                "netdev {nd} MTU {mtu} is too small to carry RoCE (256-byte packets need {})",
                256 + 96
            ),
        )
        .evidence(format!("netdev {nd} MTU {mtu}"))
        .fix(format!("ip link set {nd} mtu 1500"));
    };
    let evidence = format!(
        "netdev {nd} MTU {mtu} (fits RoCE MTU {fits}); active_mtu {}",
        active_mtu.map_or(why_unknown.to_string(), |m| m.to_string())
    );
    match active_mtu {
        Some(a) if a > fits => Diagnostic::finding(Severity::Fail, codes::MTU, format!("active MTU {a} exceeds what the netdev MTU {mtu} carries: large messages will be dropped"))
            .evidence(evidence)
            .fix(format!("raise the netdev MTU (`ip link set {nd} mtu {}`) or use -m {fits}", a + 100)),
        Some(a) if a < fits => Diagnostic::finding(Severity::Warn, codes::MTU, format!("active MTU {a} is below the {fits} the netdev MTU allows"))
            .evidence(evidence)
            .fix("the port did not pick up the MTU change: re-create the rxe link or reload the driver"),
        _ if mtu < 1500 => Diagnostic::finding(Severity::Warn, codes::MTU, format!("netdev {nd} MTU {mtu} limits RoCE to {fits}-byte packets"))
            .evidence(evidence)
            .fix(format!("ip link set {nd} mtu 1500 (or 9000 for 4096-byte RoCE MTU)")),
        _ => Diagnostic::finding(Severity::Ok, codes::MTU, format!("RoCE MTU {fits} over netdev {nd} MTU {mtu}; both peers must agree (rdmactl pingpong uses the smaller)")).evidence(evidence),
    }
}

impl HostNet {
    /// The netdev lives in another network namespace than this process's (the device is
    /// shared into this one, as `rdma system` mode "shared" does by default). This
    /// namespace's own netdev list decides it: inside a container with its own PID
    /// namespace (`podman run --network none`) /proc/1 is the container's init, in the
    /// container's network namespace, so comparing with it says "initial" there.
    fn hides(&self, netdev: &str) -> bool {
        self.visible_netdevs
            .as_ref()
            .is_some_and(|v| !v.iter().any(|n| n == netdev))
    }
}

/// Port state and, on RoCE, the netdev it rides on. `active_mtu` comes from verbs when
/// they are available.
pub fn port_findings(port: &Port, active_mtu: Option<u32>, host: &HostNet) -> Vec<Diagnostic> {
    let subject = Subject::Port(port.device.clone(), port.number);
    let mut out = Vec::new();
    let state = port
        .state
        .as_ref()
        .map_or("unknown".to_string(), |s| s.name().to_string());
    let ethernet = port.link_layer == Some(LinkLayer::Ethernet);
    let active = port.state == Some(PortState::Active);
    // The one rule: a RoCE port's netdev state is its evidence and fix, never a second
    // failure (one root cause, one failure).
    let state_finding =
        port_state::port_state(&PortAsked::of_port(port, false)).about(subject.clone());
    if !active {
        let mut state_finding = state_finding;
        if port.link_layer == Some(LinkLayer::InfiniBand) {
            if let Some(lid) = port.lid {
                state_finding = state_finding.evidence(format!(
                    "lid {lid:#x}, sm_lid {:#x}: no usable address while the port is {state}",
                    port.sm_lid.unwrap_or(0)
                ));
            }
        }
        out.push(state_finding);
        if ethernet {
            out.extend(gid_findings(port, &subject));
            out.extend(netns_finding(port, host, subject));
        }
        return out;
    }
    out.push(state_finding);
    if !ethernet {
        if port.link_layer == Some(LinkLayer::InfiniBand) {
            out.extend(lid_finding(port, subject, active));
        }
        return out;
    }
    let Some(netdev) = &port.netdev else {
        out.push(port_state::netdev_note(Severity::Fail, "RoCE port without a netdev: no GID can be formed", Some("for rxe, recreate it on an existing interface: rdma link add rxe0 type rxe netdev <if>".into()))
            .about(subject)
            .evidence("no gid_attrs/ndevs entry and no device/net interface"));
        return out;
    };
    let nd = &netdev.name;
    if host.hides(nd) {
        // Said as it is: the process is elsewhere, the device is not. No netdev-level
        // finding (state, address, MTU) is given for a netdev this namespace cannot see.
        let outside = host.in_init_netns == Some(false);
        let mut f = finding(
            codes::NETNS,
            subject.clone(),
            Severity::Info,
            if outside {
                format!("this process runs outside the initial network namespace, where {nd} lives: its state and addresses are not visible from here; {} itself stays usable (in shared mode, the default: `rdma system` shows the mode)", port.device)
            } else {
                format!("{nd} is not in this process's network namespace (a container's own network: `--network none` or a bridge): its state and addresses are not visible from here; {} itself stays usable (in shared mode, the default: `rdma system` shows the mode)", port.device)
            },
        );
        if outside {
            f = f.evidence("/proc/self/ns/net differs from /proc/1/ns/net");
        }
        out.push(
            f.evidence(format!("{nd} is not among this namespace's netdevs (rtnetlink)"))
            .fix(format!("run doctor where {nd} lives to check it: on the host, or in a container started with `--network host` (`hostNetwork: true` in a Kubernetes pod); with `rdma system set netns exclusive`, move the device in with `rdma dev set {} netns NS`", port.device)),
        );
        out.extend(gid_findings(port, &subject));
        return out;
    }
    let addresses = host
        .addresses
        .as_ref()
        .map(|all| all.get(nd).cloned().unwrap_or_default());
    let name = format!("{}/{}", port.device, port.number);
    out.push(netdev_state(netdev, addresses, &subject, &name));
    out.extend(gid_findings(port, &subject));
    if let (Some(mtu), true) = (netdev.mtu, active) {
        let why_unknown = "unknown (no verbs)";
        out.push(mtu_finding(nd, mtu, active_mtu, why_unknown).about(subject.clone()));
    }
    out.extend(netns_finding(port, host, subject));
    out
}

/// An iWARP port (node type RNIC): its state and its netdev, and how it connects. Its one
/// GID is the netdev's MAC, not an address, and its MTU is TCP's business, so the RoCE
/// rules (IPv4-mapped GID, RoCE MTU, a full GID table) say nothing true about it.
pub fn iwarp_port_findings(port: &Port) -> Vec<Diagnostic> {
    let subject = Subject::Port(port.device.clone(), port.number);
    let active = port.state == Some(PortState::Active);
    let mut out = Vec::new();
    let nd = port.netdev.as_ref().map(|n| n.name.as_str());
    // The one rule, as for RoCE: an iWARP port follows its netdev too.
    out.push(port_state::port_state(&PortAsked::of_port(port, true)).about(subject.clone()));
    if let (Some(netdev), true) = (&port.netdev, active) {
        let now = NetdevAsked::of_netdev(netdev);
        out.push(
            port_state::netdev_down(&now, &format!("{}/{}", port.device, port.number))
                .unwrap_or_else(|| port_state::netdev_ok(&now, ""))
                .about(subject.clone()),
        );
    }
    let gid = port
        .gids
        .first()
        .map(|g| format!("gids/{} = {}", g.index, g.gid))
        .unwrap_or_else(|| "no populated gids/N".into());
    out.push(
        finding(
            codes::IWARP,
            subject,
            Severity::Info,
            format!("iWARP port: it connects only through rdma_cm, by the IP address of {}; its GID is the netdev's MAC, not an address, so no RoCE GID rule applies", nd.unwrap_or("its netdev")),
        )
        .evidence(format!("node type RNIC; {gid}"))
        .fix("use `rdmactl pingpong --cm` and `rdmactl selftest --cm` (without --cm both refuse an iWARP device)"),
    );
    out
}

/// An ACTIVE InfiniBand port's LID; None when the tree has no `lid` file (an incomplete
/// tree proves nothing either way).
fn lid_finding(port: &Port, subject: Subject, active: bool) -> Option<Diagnostic> {
    Some(match port.lid {
        None => return None,
        Some(0) if active => finding(codes::LID, subject, Severity::Fail, "ACTIVE InfiniBand port with LID 0")
            .evidence("lid 0x0")
            .fix("check the subnet manager's logs (`sminfo`, `journalctl -u opensm`)"),
        Some(0) => finding(codes::LID, subject, Severity::Fail, "LID 0: no subnet manager has assigned an address, so ibv_rc_pingpong says \"Couldn't get local LID\"")
            .evidence(format!("lid {}, sm_lid {}", port.lid.unwrap_or(0), port.sm_lid.unwrap_or(0)))
            .fix("start opensm (`systemctl start opensm`) on one node of the fabric"),
        Some(0xffff) => finding(codes::LID, subject, Severity::Fail, "LID 65535 (permissive): the port has no valid address").evidence("lid 0xffff").fix("check the link and the subnet manager"),
        Some(lid) => finding(codes::LID, subject, Severity::Ok, format!("LID {lid}, SM LID {}", port.sm_lid.unwrap_or(0))).evidence(format!("lid {lid:#x}")),
    })
}

/// The RoCE port's netdev: carrying traffic with an address, or why not (the one rule,
/// `port_state`).
fn netdev_state(
    netdev: &Netdev,
    addresses: Option<Vec<String>>,
    subject: &Subject,
    port: &str,
) -> Diagnostic {
    let now = NetdevAsked::of_netdev(netdev);
    if let Some(down) = port_state::netdev_down(&now, port) {
        return down.about(subject.clone());
    }
    match addresses {
        None => port_state::netdev_ok(&now, ""),
        Some(a) if a.is_empty() => port_state::netdev_without_address(&now),
        Some(a) => port_state::netdev_ok(&now, &format!(", addresses {}", short_list(&a, 6))),
    }
    .about(subject.clone())
}

/// Whether the RoCE port has an IPv4-mapped GID, or at least a routable one.
fn gid_findings(port: &Port, subject: &Subject) -> Option<Diagnostic> {
    let nd = port
        .netdev
        .as_ref()
        .map_or("its netdev", |n| n.name.as_str());
    let v4 = port.gids.iter().find(|g| g.gid.ipv4().is_some());
    let routable = port
        .gids
        .iter()
        .filter(|g| !g.gid.is_link_local() && !g.gid.is_zero())
        .count();
    Some(match v4 {
        Some(g) => finding(codes::IPV4_GID, subject.clone(), Severity::Ok, format!("IPv4-mapped GID at index {} ({})", g.index, g.gid.ip()))
            .evidence(format!("gids/{} = {}", g.index, g.gid)),
        None if routable > 0 => finding(codes::IPV4_GID, subject.clone(), Severity::Warn, format!("no IPv4 address on {nd}: only IPv6 GIDs, while NCCL and perftest default to IPv4"))
            .evidence(format!("{routable} non-link-local GID(s), none in ::ffff:0:0/96"))
            .fix(format!("add an IPv4 address (`ip addr add <addr>/<len> dev {nd}`), or set NCCL_IB_ADDR_FAMILY=AF_INET6")),
        None => finding(codes::IPV4_GID, subject.clone(), Severity::Fail, format!("{nd} has no IP address: only the link-local GID exists, which does not route"))
            .evidence("every populated GID is link-local (fe80::/64)")
            .fix(format!("ip addr add <addr>/<len> dev {nd}")),
    })
}

/// A full GID table: an address added after the table filled has no GID, and RDMA to or
/// from it fails with nothing in the table to say so. `table_len` counts the slots.
pub fn gid_table_finding(port: &Port, table_len: usize, host: &HostNet) -> Option<Diagnostic> {
    let populated = port.gids.len();
    if table_len == 0 || populated < table_len {
        return None;
    }
    let in_table: std::collections::HashSet<std::net::IpAddr> =
        port.gids.iter().map(|e| e.gid.ip()).collect();
    let mut missing = 0usize;
    if let Some(all) = &host.addresses {
        for dev in &port.gid_netdevs {
            for a in all.get(dev).into_iter().flatten() {
                let ip = a
                    .split('/')
                    .next()
                    .and_then(|ip| ip.parse::<std::net::IpAddr>().ok());
                if ip.is_some_and(|ip| !in_table.contains(&ip.to_canonical())) {
                    missing += 1;
                }
            }
        }
    }
    let subject = Subject::Port(port.device.clone(), port.number);
    let lost = if missing > 0 {
        format!(
            ": {missing} address(es) of {} have no GID, and RDMA to or from them fails",
            port.gid_netdevs.join(", ")
        )
    } else {
        ": the next address added gets no GID".into()
    };
    Some(
        finding(
            codes::GID_TABLE,
            subject,
            Severity::Warn,
            format!("the GID table is full ({populated} of {table_len} slots){lost}"),
        )
        .evidence(format!("{populated} populated gids/N of {table_len}"))
        .fix("remove addresses the RDMA traffic does not use (each address takes one slot per RoCE type), or spread them over more ports"),
    )
}

/// The same GID on two devices (rxe on a bond and on one of its slaves): the kernel maps
/// an address to one device, so traffic for the GID can land on either.
pub fn duplicate_gid_findings(ports: &[&Port]) -> Vec<Diagnostic> {
    use std::collections::BTreeMap;
    let mut owners: BTreeMap<crate::model::gid::Gid, Vec<(String, u32)>> = BTreeMap::new();
    for p in ports {
        for e in &p.gids {
            if e.gid.is_zero() {
                continue;
            }
            let who = format!("{}/{}", p.device, p.number);
            let list = owners.entry(e.gid).or_default();
            // v1 and v2 twins on one port are one claim.
            if !list.iter().any(|(w, _)| *w == who) {
                list.push((who, e.index));
            }
        }
    }
    // One finding per set of ports sharing GIDs, with the count and an example.
    type Claims = Vec<(crate::model::gid::Gid, Vec<(String, u32)>)>;
    let mut by_ports: BTreeMap<Vec<String>, Claims> = BTreeMap::new();
    for (gid, list) in owners.into_iter().filter(|(_, l)| l.len() > 1) {
        let key: Vec<String> = list.iter().map(|(w, _)| w.clone()).collect();
        by_ports.entry(key).or_default().push((gid, list));
    }
    by_ports
        .into_iter()
        .map(|(ports, gids)| {
            let (gid, list) = &gids[0];
            let where_: Vec<String> = list
                .iter()
                .map(|(w, i)| format!("{w} index {i}"))
                .collect();
            finding(
                codes::DUPLICATE_GID,
                Subject::Host,
                Severity::Fail,
                format!(
                    "{} claim the same GID{}: {} ({}); the kernel maps an address to one device, so RoCE traffic for it can land on either",
                    ports.join(" and "),
                    if gids.len() > 1 { format!(" and {} more", gids.len() - 1) } else { String::new() },
                    gid.ip(),
                    where_.join(", ")
                ),
            )
            .evidence(format!("{} GID(s) in both tables", gids.len()))
            .fix("keep one RDMA device per netdev address: for rxe on a bond, create it on the bond only, not on its slaves (rdma link delete DEV)")
        })
        .collect()
}

/// rxe outside the initial network namespace cannot carry a QP on kernel 6.1.
fn netns_finding(port: &Port, host: &HostNet, subject: Subject) -> Option<Diagnostic> {
    // Only when the rxe's netdev is in this (non-initial) namespace was it created here.
    let here = port.netdev.as_ref().is_some_and(|n| !host.hides(&n.name));
    (port.soft_roce && host.in_init_netns == Some(false) && here).then(|| {
        finding(codes::NETNS, subject, Severity::Fail, "rxe outside the initial network namespace: QPs fail with \"local QP operation error\"")
            .evidence("/proc/self/ns/net differs from /proc/1/ns/net")
            .fix("create and use rxe devices in the host's network namespace (kernel 6.1 rxe is init_net only)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::{OperState, PhysState};

    #[test]
    fn roce_mtu_follows_the_netdev() {
        for (netdev, want) in [
            (1500, Some(1024)),
            (9000, Some(4096)),
            (4200, Some(4096)),
            (4000, Some(2048)),
            (2200, Some(2048)),
            (1100, Some(512)),
            (352, Some(256)),
            (300, None),
        ] {
            assert_eq!(roce_mtu_for_netdev(netdev), want, "netdev MTU {netdev}");
        }
    }

    fn roce_port(operstate: &str, mtu: u32) -> Port {
        use crate::model::device::{GidEntry, GidType, Netdev};
        use crate::model::gid::Gid;
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
                operstate: Some(OperState::parse(operstate)),
                admin_up: None,
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
            active_mtu: None,
            max_mtu: None,
            soft_roce: true,
            verbs: crate::model::device::VerbsStatus::not_asked(),
            read_problems: vec![],
        }
    }

    /// rxe on a bond and on its slave: one GID, two devices, one failure naming both.
    #[test]
    fn one_gid_on_two_devices_is_flagged() {
        let a = roce_port("up", 1500);
        let mut b = roce_port("up", 1500);
        b.device = "rxe1".into();
        let f = duplicate_gid_findings(&[&a, &b]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "duplicate-gid");
        assert_eq!(f[0].severity, Severity::Fail);
        assert!(
            f[0].message
                .contains("rxe0/1 and rxe1/1 claim the same GID: 192.168.77.1"),
            "{}",
            f[0].message
        );
        assert!(duplicate_gid_findings(&[&a]).is_empty());
    }

    /// A full table warns, and counts the netdev's addresses that got no GID.
    #[test]
    fn a_full_gid_table_counts_the_addresses_left_out() {
        let port = roce_port("up", 1500);
        let host = HostNet {
            addresses: Some(
                [(
                    "veth0".to_string(),
                    vec![
                        "192.168.77.1/24".into(),
                        "10.0.0.7/24".into(),
                        "10.0.0.8/24".into(),
                    ],
                )]
                .into_iter()
                .collect(),
            ),
            ..HostNet::default()
        };
        let f = gid_table_finding(&port, 1, &host).expect("full");
        assert_eq!(f.severity, Severity::Warn);
        assert!(
            f.message
                .contains("full (1 of 1 slots): 2 address(es) of veth0 have no GID"),
            "{}",
            f.message
        );
        assert!(gid_table_finding(&port, 1024, &host).is_none());
    }

    /// In another network namespace, with the netdev not visible from it: said as it is,
    /// not as an rxe created outside the initial namespace.
    #[test]
    fn another_namespace_is_said_as_it_is() {
        let host = HostNet {
            in_init_netns: Some(false),
            visible_netdevs: Some(vec!["lo".into()]),
            ..HostNet::default()
        };
        let f = port_findings(&roce_port("unknown", 1500), None, &host);
        let ns = f.iter().find(|f| f.code == "netns").expect("netns finding");
        assert_eq!(ns.severity, Severity::Info, "{ns:?}");
        assert!(
            ns.message
                .contains("this process runs outside the initial network namespace"),
            "{}",
            ns.message
        );
        assert!(!f.iter().any(|f| f.code == "netdev"), "{f:?}");
        assert!(!f.iter().any(|f| f.severity == Severity::Fail), "{f:?}");
    }

    /// `podman run --network none`: the container has its own PID namespace, so /proc/1 is
    /// in its network namespace and "initial" compares equal; this namespace's netdevs
    /// still decide. No "has no IP address; fix: ip addr add" about a netdev it cannot see.
    #[test]
    fn a_netdev_this_namespace_cannot_see_gets_no_netdev_finding() {
        let host = HostNet {
            in_init_netns: Some(true),
            addresses: Some(Default::default()),
            visible_netdevs: Some(vec!["lo".into()]),
        };
        let f = port_findings(&roce_port("up", 1500), None, &host);
        assert!(!f.iter().any(|f| f.code == "netdev"), "{f:#?}");
        assert!(!f.iter().any(|f| f.code == "mtu"), "{f:#?}");
        let all: String = f.iter().map(|f| format!("{f:?}")).collect();
        assert!(
            !all.contains("ip addr add") && !all.contains("no IP address"),
            "{all}"
        );
        let ns = f.iter().find(|f| f.code == "netns").expect("netns finding");
        assert_eq!(ns.severity, Severity::Info);
        assert!(
            ns.message
                .contains("veth0 is not in this process's network namespace"),
            "{}",
            ns.message
        );
        assert!(!format!("{ns:?}").contains("/proc/1/ns/net"), "{ns:?}");
        assert!(ns.fix.as_deref().unwrap().contains("`--network host`"));
    }

    fn netns(in_init_netns: Option<bool>) -> HostNet {
        HostNet {
            in_init_netns,
            addresses: None,
            visible_netdevs: Some(vec!["veth0".into()]),
        }
    }

    #[test]
    fn netdev_addresses_are_named() {
        let with = |list: &[&str]| HostNet {
            in_init_netns: Some(true),
            addresses: Some(
                [(
                    "veth0".to_string(),
                    list.iter().map(|a| a.to_string()).collect(),
                )]
                .into_iter()
                .collect(),
            ),
            visible_netdevs: None,
        };
        let f = port_findings(&roce_port("up", 1500), None, &with(&["192.168.77.1/24"]));
        let netdev = f.iter().find(|f| f.code == "netdev").unwrap();
        assert_eq!(netdev.severity, Severity::Ok);
        assert!(
            netdev.message.contains("addresses 192.168.77.1/24"),
            "{netdev:?}"
        );
        let f = port_findings(&roce_port("up", 1500), None, &with(&[]));
        let netdev = f.iter().find(|f| f.code == "netdev").unwrap();
        assert_eq!(netdev.severity, Severity::Warn);
        assert!(netdev.message.contains("no IP address"), "{netdev:?}");
        let f = port_findings(&roce_port("up", 300), Some(256), &netns(Some(true)));
        assert_eq!(verdict_of(&f, "mtu"), Some(Severity::Fail));
    }

    fn verdict_of(findings: &[Diagnostic], check: &str) -> Option<Severity> {
        findings
            .iter()
            .find(|f| f.code == check)
            .map(|f| f.severity)
    }

    /// An iWARP port whose netdev is down: the port-state failure names the netdev, and
    /// no RoCE rule (IPv4 GID, RoCE MTU) speaks.
    #[test]
    fn a_down_iwarp_port_is_checked_without_roce_rules() {
        let mut port = roce_port("down", 1500);
        port.state = Some(PortState::Down);
        let f = iwarp_port_findings(&port);
        assert_eq!(verdict_of(&f, "port-state"), Some(Severity::Fail));
        // One root cause, one failure: the netdev is the port-state failure's evidence.
        assert_eq!(verdict_of(&f, "netdev"), None);
        assert_eq!(verdict_of(&f, "iwarp"), Some(Severity::Info));
        let state = f.iter().find(|x| x.code == "port-state").unwrap();
        assert!(
            state.fix_text().contains("ip link set veth0 up"),
            "{state:?}"
        );
        for roce in ["ipv4-gid", "mtu", "gid-table"] {
            assert_eq!(verdict_of(&f, roce), None, "{roce}");
        }
        assert!(
            state.evidence.iter().any(|e| e.contains("operstate down")),
            "{state:?}"
        );
        // Only the iwarp finding names RoCE, to say its rules do not apply.
        assert!(
            !f.iter()
                .any(|x| x.code != "iwarp" && x.message.contains("RoCE")),
            "{f:?}"
        );
    }

    #[test]
    fn mtu_beyond_the_netdev_fails() {
        let f = port_findings(&roce_port("up", 1500), Some(4096), &netns(Some(true)));
        assert_eq!(verdict_of(&f, "mtu"), Some(Severity::Fail));
        let f = port_findings(&roce_port("up", 1500), Some(1024), &netns(Some(true)));
        assert_eq!(verdict_of(&f, "mtu"), Some(Severity::Ok));
        let f = port_findings(&roce_port("up", 9000), Some(1024), &netns(Some(true)));
        assert_eq!(verdict_of(&f, "mtu"), Some(Severity::Warn));
    }

    #[test]
    fn rxe_outside_init_netns_fails() {
        let f = port_findings(&roce_port("up", 1500), None, &netns(Some(false)));
        assert_eq!(verdict_of(&f, "netns"), Some(Severity::Fail));
        let f = port_findings(&roce_port("up", 1500), None, &netns(None));
        assert_eq!(verdict_of(&f, "netns"), None);
    }

    #[test]
    fn ipv4_gid_and_netdev() {
        let f = port_findings(&roce_port("up", 1500), None, &netns(Some(true)));
        assert_eq!(verdict_of(&f, "ipv4-gid"), Some(Severity::Ok));
        assert_eq!(verdict_of(&f, "netdev"), Some(Severity::Ok));
        let f = port_findings(&roce_port("down", 1500), None, &netns(Some(true)));
        assert_eq!(verdict_of(&f, "netdev"), Some(Severity::Fail));
    }
}
