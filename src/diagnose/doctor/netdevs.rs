//! What the RoCE netdevs of one host share: an IPv4 subnet (same-subnet ports) and ARP
//! answers for each other's addresses (ARP flux). check, fabric and failed runs use the
//! ARP flux rule too.

use super::finding;
use crate::diagnose::same_host;
use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::facts::{ArpFluxGroup, ArpFluxNetdev, RoceNetdev};

/// RDMA netdevs of this host that share an IPv4 subnet while at least one of them answers
/// ARP for any local address (`arp_ignore` 0): each group as (subnet, its netdevs).
pub fn arp_flux_groups(netdevs: &[RoceNetdev]) -> Vec<(String, Vec<&RoceNetdev>)> {
    let mut groups: Vec<(String, Vec<&RoceNetdev>)> = Vec::new();
    for (i, a) in netdevs.iter().enumerate() {
        for b in &netdevs[i + 1..] {
            if a.netdev == b.netdev || a.paired_with(b) {
                continue;
            }
            let Some(subnet) = shared_subnet(a, b) else {
                continue;
            };
            let group = match groups.iter_mut().find(|(s, _)| *s == subnet) {
                Some(g) => g,
                None => {
                    groups.push((subnet, Vec::new()));
                    groups.last_mut().expect("just pushed")
                }
            };
            for n in [a, b] {
                if !group.1.iter().any(|m| m.netdev == n.netdev) {
                    group.1.push(n);
                }
            }
        }
    }
    groups.retain(|(_, members)| members.iter().any(|n| n.arp_ignore == Some(0)));
    groups
}

/// ARP flux, as a doctor finding: one per subnet.
pub fn arp_flux_findings(netdevs: &[RoceNetdev]) -> Vec<Diagnostic> {
    arp_flux_groups(netdevs)
        .iter()
        .map(|(subnet, members)| arp_flux_finding(subnet, members))
        .collect()
}

/// The ARP flux finding of one subnet's group (doctor, and check for a port in it).
pub fn arp_flux_finding(subnet: &str, members: &[&RoceNetdev]) -> Diagnostic {
    let names: Vec<String> = members
        .iter()
        .map(|n| format!("{} ({})", n.port, n.netdev))
        .collect();
    let mut f = finding(
        codes::ARP_FLUX,
        Subject::Host,
        Severity::Warn,
        format!(
            "{} share {subnet} and answer ARP for each other's addresses (arp_ignore 0): on one switch, a peer may send the RoCE packets meant for one port to another port's MAC, which drops them (its QPs do not know the QPN); pairs crawl through retries or fail with IBV_WC_RETRY_EXC_ERR",
            names.join(", ")
        ),
    );
    for n in members {
        f = f.evidence(format!(
            "{}: arp_ignore (max of all, {}) = {}, arp_announce = {}",
            n.netdev,
            n.netdev,
            n.arp_ignore.map_or("unknown".into(), |v| v.to_string()),
            n.arp_announce.map_or("unknown".into(), |v| v.to_string())
        ));
    }
    f.fix(format!(
        "sysctl -w net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 {}; or source-based policy routing per netdev (ip rule add from ADDR table N); a host whose ports sit on separate links (a veth pair, point-to-point cables) is not affected",
        members
            .iter()
            .map(|n| format!("net.ipv4.conf.{}.arp_ignore=1 net.ipv4.conf.{}.arp_announce=2", n.netdev, n.netdev))
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// This host's ARP flux groups as facts: each subnet's netdevs and their `arp_ignore`, as
/// a fabric rank publishes them and a failed run's route facts hold them.
pub fn arp_flux(netdevs: &[RoceNetdev]) -> Vec<ArpFluxGroup> {
    arp_flux_groups(netdevs)
        .into_iter()
        .map(|(subnet, members)| ArpFluxGroup {
            subnet,
            netdevs: members
                .iter()
                .map(|n| ArpFluxNetdev {
                    netdev: n.netdev.clone(),
                    arp_ignore: n.arp_ignore,
                })
                .collect(),
        })
        .collect()
}

/// One group in a line, as fabric's drift report and the pair explanation quote it:
/// `e0, e1 on 10.0.0.0/24 answer ARP for each other's addresses (e0 arp_ignore 0, e1 arp_ignore 1)`.
pub fn arp_flux_line(group: &ArpFluxGroup) -> String {
    let (subnet, members) = (&group.subnet, &group.netdevs);
    let names: Vec<&str> = members.iter().map(|n| n.netdev.as_str()).collect();
    let settings: Vec<String> = members
        .iter()
        .map(|n| {
            format!(
                "{} arp_ignore {}",
                n.netdev,
                n.arp_ignore.map_or("?".into(), |v| v.to_string())
            )
        })
        .collect();
    format!(
        "{} on {subnet} answer ARP for each other's addresses ({})",
        names.join(", "),
        settings.join(", ")
    )
}

/// The ARP flux fix, wherever a failure or a suspect is explained by it.
pub const ARP_FLUX_FIX: &str = "on each of those netdevs (and all): sysctl -w net.ipv4.conf.DEV.arp_ignore=1 net.ipv4.conf.DEV.arp_announce=2, or source-based policy routing per netdev (ip rule add from ADDR table N)";

fn shared_subnet(a: &RoceNetdev, b: &RoceNetdev) -> Option<String> {
    a.ipv4.iter().find_map(|(addr, len)| {
        b.ipv4.iter().find_map(|(other, _)| {
            let bits = u32::from((*len).min(32));
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            (*len < 32 && u32::from(*addr) & mask == u32::from(*other) & mask).then(|| {
                format!(
                    "{}/{len}",
                    std::net::Ipv4Addr::from(u32::from(*addr) & mask)
                )
            })
        })
    })
}

/// Several RoCE netdevs of one host on one subnet: a test between two of them (the usual
/// first test on a new host, or a veth rig) needs each to accept ARP from a local sender,
/// and both ends of one link should carry the same MTU.
pub fn same_subnet_findings(netdevs: &[RoceNetdev]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, a) in netdevs.iter().enumerate() {
        for b in &netdevs[i + 1..] {
            if a.netdev == b.netdev {
                continue;
            }
            let Some(subnet) = shared_subnet(a, b) else {
                continue;
            };
            let pair = format!("{} ({}) and {} ({})", a.port, a.netdev, b.port, b.netdev);
            out.extend(same_host::same_subnet_pair(a, b, &subnet.to_string()));
            out.extend(crate::diagnose::mtu_mismatch::subnet_pair(
                a,
                b,
                &pair,
                &subnet.to_string(),
            ));
        }
    }
    out
}

/// The ARP flux group the netdev `nd` belongs to, if any.
pub fn arp_flux_around(netdevs: &[RoceNetdev], nd: &str) -> Option<ArpFluxGroup> {
    arp_flux(netdevs)
        .into_iter()
        .find(|g| g.netdevs.iter().any(|n| n.netdev == nd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roce(port: &str, netdev: &str, addr: &str, mtu: u32, accept_local: bool) -> RoceNetdev {
        RoceNetdev {
            port: port.into(),
            netdev: netdev.into(),
            mtu: Some(mtu),
            ipv4: vec![(addr.parse().unwrap(), 24)],
            accept_local: Some(accept_local),
            rp_filter: Some(0),
            arp_ignore: Some(1),
            arp_announce: Some(2),
            link_peer: None,
        }
    }

    /// Ports on one subnet that answer ARP for each other: one finding per subnet, with
    /// every netdev's setting and the sysctls to set; arp_ignore 1 everywhere is clean.
    #[test]
    fn arp_flux_on_one_subnet() {
        let mut ports = vec![
            roce("rxe0/1", "e0", "10.77.0.10", 1500, true),
            roce("rxe1/1", "e1", "10.77.0.11", 1500, true),
            roce("rxe2/1", "e2", "10.77.0.12", 1500, true),
            roce("rxe3/1", "e3", "10.78.0.1", 1500, true),
        ];
        assert!(arp_flux_findings(&ports).is_empty());
        ports[1].arp_ignore = Some(0);
        let f = arp_flux_findings(&ports);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "arp-flux");
        assert!(
            f[0].message
                .starts_with("rxe0/1 (e0), rxe1/1 (e1), rxe2/1 (e2) share 10.77.0.0/24"),
            "{}",
            f[0].message
        );
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e == "e1: arp_ignore (max of all, e1) = 0, arp_announce = 2"));
        assert!(f[0]
            .fix
            .as_deref()
            .unwrap()
            .contains("net.ipv4.conf.e1.arp_ignore=1"));
        assert!(!f[0].message.contains("e3"));
        // The two ends of one veth pair hear only each other.
        let mut pair = vec![
            roce("rxe0/1", "veth0", "192.168.77.1", 1500, true),
            roce("rxe1/1", "veth1", "192.168.77.2", 1500, true),
        ];
        pair[0].arp_ignore = Some(0);
        pair[0].link_peer = Some("veth1".into());
        pair[1].link_peer = Some("veth0".into());
        assert!(arp_flux_findings(&pair).is_empty());
        pair[1].link_peer = None;
        assert_eq!(arp_flux_findings(&pair).len(), 1);
    }

    /// Two ports of one host on one subnet: accept_local 0 is a warning naming the drop
    /// and the sysctl; 9000 against 1500 is one too; other subnets are left alone.
    #[test]
    fn same_subnet_ports_on_one_host() {
        let a = roce("rxe0/1", "veth0", "192.168.77.1", 1500, false);
        let b = roce("rxe1/1", "veth1", "192.168.77.2", 1500, true);
        let f = same_subnet_findings(&[a.clone(), b.clone()]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "same-host-arp");
        assert_eq!(f[0].severity, Severity::Warn);
        assert!(f[0].message.contains("192.168.77.0/24"), "{}", f[0].message);
        assert!(f[0].message.contains("veth0 drops ARP"), "{}", f[0].message);
        assert!(f[0].fix.as_deref().unwrap().contains("accept_local=1"));

        let fine = roce("rxe0/1", "veth0", "192.168.77.1", 9000, true);
        let f = same_subnet_findings(&[fine, b.clone()]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, "mtu-mismatch");
        assert!(f[0].message.contains("9000 and 1500"), "{}", f[0].message);

        let elsewhere = roce("rxe0/1", "veth0", "10.0.0.1", 9000, false);
        assert!(same_subnet_findings(&[elsewhere, b]).is_empty());
    }
}
