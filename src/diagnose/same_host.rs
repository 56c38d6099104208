//! Two ports of one host on one IPv4 subnet: the receiving netdev drops an ARP request
//! whose sender address is one of its own host's unless `accept_local` is set, and strict
//! reverse-path filtering (`rp_filter` 1) drops it too. One wording of the consequence and
//! one command that changes what is wrong, for `check`, `doctor`, a failed run and `--cm`.
//!
//! And IPv6 between two Soft-RoCE devices of one kernel, which carries nothing at all: one
//! rule (`ipv6_between_devices`) with one cause and one fix for `check`, a failed run over
//! the TCP exchange and one under `--cm`.

use std::net::IpAddr;

use crate::model::codes::{self, Code};
use crate::model::diagnostic::{Diagnostic, Seen, Severity, Source, Subject};
use crate::model::facts::RoceNetdev;

/// What the sysctls were read as: `accept_local` (all OR the netdev's) and `rp_filter` (the
/// max of all and the netdev's, as the kernel applies it). None: not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SameHostSysctls {
    pub accept_local: Option<bool>,
    pub rp_filter: Option<u32>,
}

impl SameHostSysctls {
    /// The sysctls drop a same-host ARP request.
    pub fn drops(&self) -> bool {
        self.accept_local == Some(false) || self.rp_filter == Some(1)
    }
}

/// What a dropped same-host ARP request does to a run: the kernel resolves the peer's MAC
/// at RTR, so RTR times out; when a neighbour entry is already cached RTR passes and the
/// packets the peer never answers end in retry-exceeded (measured on rxe).
pub const CONSEQUENCE: &str = "RTR fails with ETIMEDOUT when the kernel must ARP for the peer; with a neighbour entry already cached RTR passes and the run ends in retry-exceeded";

/// The command that changes what the sysctls show on `netdevs` (the ports' netdevs, each
/// named once): `accept_local=1` where it is off or unread, `rp_filter=2` (loose) where the
/// strict mode is in force. The kernel applies the max of `all` and a netdev's rp_filter,
/// so 2 on each netdev is loose whatever `all` holds; it leaves every other netdev as it is.
pub fn fix(netdevs: &[&str], seen: SameHostSysctls) -> String {
    let mut names: Vec<&str> = Vec::new();
    for n in netdevs {
        if !names.contains(n) {
            names.push(n);
        }
    }
    let mut settings = Vec::new();
    if seen.accept_local != Some(true) {
        settings.push("net.ipv4.conf.all.accept_local=1".to_string());
        settings.extend(
            names
                .iter()
                .map(|n| format!("net.ipv4.conf.{n}.accept_local=1")),
        );
    }
    if seen.rp_filter == Some(1) {
        settings.extend(
            names
                .iter()
                .map(|n| format!("net.ipv4.conf.{n}.rp_filter=2")),
        );
    }
    if settings.is_empty() {
        // Nothing read drops it; the caller words why it asks (an unread sysctl).
        return format!(
            "check accept_local and rp_filter on {} (sysctl net.ipv4.conf.{{all,{}}}.accept_local)",
            names.join(" and "),
            names.first().copied().unwrap_or("DEV")
        );
    }
    format!("sysctl -w {}", settings.join(" "))
}

/// The two ends of a same-host IPv6 pair, as the asking command knows them.
pub struct Ipv6Pair<'a> {
    /// The local port, `rxe1/1`.
    pub port: &'a str,
    /// Whether that port is Soft-RoCE (`model::device::is_soft_roce`, decided once).
    pub soft_roce: bool,
    /// The peer's address, an address of this host.
    pub peer: IpAddr,
    /// The netdev that owns it.
    pub owner: &'a str,
    /// This end's netdev (the GID's, or under `--cm` the source address's).
    pub local: &'a str,
}

/// `same-host-ipv6`: rxe carries no RoCE v2 traffic over IPv6 between two devices of one
/// kernel (measured on Linux 6.1: the kernel resolves the local destination without
/// neighbour discovery, and the other device's receive counters do not move), while IPv4
/// between them and IPv6 from a device to itself work. None when that is not the pair.
pub fn ipv6_between_devices(p: &Ipv6Pair) -> Option<Diagnostic> {
    if !p.peer.is_ipv6() || !p.soft_roce || p.owner == p.local {
        return None;
    }
    Some(
        Diagnostic::explanation(
            codes::SAME_HOST_IPV6,
            format!(
                "same-host IPv6: rxe carries no RoCE v2 traffic over IPv6 between two devices of one kernel ({} to {}); IPv4 between them works, and so does IPv6 from a device to itself",
                p.local, p.owner
            ),
            IPV6_FIX,
        )
        .seen(Seen::new(
            Source::Route,
            format!(
                "{} is an address of this host (on {}); this end's address is on {}",
                p.peer, p.owner, p.local
            ),
        ))
        // Carried with the run's QP facts (decided once, when they were gathered).
        .seen(Seen::new(
            Source::Qp,
            format!("{} is Soft-RoCE (rxe)", p.port),
        )),
    )
}

/// The one fix of `same-host-ipv6`, whichever exchange ran.
pub const IPV6_FIX: &str = "test IPv6 between two hosts (or VMs), or use IPv4 for a same-host test (the IPv4-mapped GIDs; with --cm the server's IPv4 address); `rdmactl selftest -d DEV` checks one device by itself";

/// `same-host-ipv6` as information: an IPv6 peer on this host that is not the rxe pair
/// above; neighbours come from NDP, so the IPv4 ARP sysctls do not apply.
pub fn ipv6_on_this_host(peer: IpAddr) -> Diagnostic {
    Diagnostic::finding(
        Severity::Info,
        codes::SAME_HOST_IPV6,
        format!("{peer} is on this host: IPv6 neighbours come from NDP, so accept_local (an IPv4 ARP setting) does not apply"),
    )
}

/// `same-host-arp` in a failed run: the peer's netdev `owner` dropped the ARP request from
/// `dev` (its sender address is local), so RTR timed out.
pub fn arp_dropped_at_rtr(owner: &str, dev: &str) -> (Code, String) {
    (
        codes::SAME_HOST_ARP,
        format!("same-host test: {owner} drops the ARP request from {dev} because its sender address is local, so the MAC never resolves"),
    )
}

/// `same-host-arp` in check: the peer's address is on this host's `owner`; whether it
/// drops the ARP request from `dev` (its sender address is local), with the sysctls read.
pub fn arp_toward_local_peer(
    owner: &str,
    dev: &str,
    accept_local: Option<bool>,
    rp_filter: Option<u32>,
) -> Diagnostic {
    let seen = SameHostSysctls {
        accept_local,
        rp_filter,
    };
    let mut f = if seen.drops() {
        Diagnostic::finding(
            Severity::Fail,
            codes::SAME_HOST_ARP,
            format!("same-host test: {owner} drops the ARP request from {dev} because its sender address is local: {CONSEQUENCE}"),
        )
        .fix(fix(&[dev, owner], seen))
    } else if accept_local.is_none() {
        Diagnostic::finding(
            Severity::Warn,
            codes::SAME_HOST_ARP,
            format!("cannot read accept_local for {owner}; a same-host ARP needs it set"),
        )
    } else {
        Diagnostic::finding(
            Severity::Ok,
            codes::SAME_HOST_ARP,
            format!("{owner} accepts ARP from a local sender"),
        )
    };
    if let Some(a) = accept_local {
        f = f.evidence(format!("accept_local (all or {owner}) = {}", u8::from(a)));
    }
    if let Some(r) = rp_filter {
        f = f.evidence(format!("rp_filter (max of all, {owner}) = {r}"));
    }
    f
}

/// `same-host-arp` in doctor: two RoCE netdevs of this host share `subnet` and one of them
/// refuses ARP from a local sender, so a test between them would fail. None when neither
/// refuses.
pub fn same_subnet_pair(a: &RoceNetdev, b: &RoceNetdev, subnet: &str) -> Option<Diagnostic> {
    let refusing: Vec<&RoceNetdev> = [a, b]
        .into_iter()
        .filter(|n| n.accept_local == Some(false) || n.rp_filter == Some(1))
        .collect();
    if refusing.is_empty() {
        return None;
    }
    let pair = format!("{} ({}) and {} ({})", a.port, a.netdev, b.port, b.netdev);
    let mut f = Diagnostic::finding(
        Severity::Warn,
        codes::SAME_HOST_ARP,
        format!(
            "{pair} share {subnet} on this host: {} drops ARP requests whose sender address is local, so a ping-pong between them fails ({CONSEQUENCE})",
            refusing.iter().map(|n| n.netdev.as_str()).collect::<Vec<_>>().join(" and "),
        ),
    )
    .about(Subject::Host);
    for n in [a, b] {
        f = f.evidence(format!(
            "{}: accept_local (all or {}) = {}, rp_filter (max of all, {}) = {}",
            n.netdev,
            n.netdev,
            n.accept_local
                .map_or("unknown".into(), |v| u8::from(v).to_string()),
            n.netdev,
            n.rp_filter.map_or("unknown".into(), |v| v.to_string())
        ));
    }
    // One command for both netdevs: what either one shows wrong is changed on both.
    let seen = SameHostSysctls {
        accept_local: [a, b]
            .iter()
            .map(|n| n.accept_local)
            .try_fold(true, |all, v| v.map(|v| all && v)),
        rp_filter: [a, b].iter().filter_map(|n| n.rp_filter).max(),
    };
    Some(f.fix(format!(
        "for tests between them: {}",
        fix(&[a.netdev.as_str(), b.netdev.as_str()], seen)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command changes only what is wrong: rp_filter 1 with accept_local already on
    /// sets rp_filter, not accept_local again.
    #[test]
    fn the_fix_changes_what_the_sysctls_show() {
        let rp = fix(
            &["veth0", "veth1"],
            SameHostSysctls {
                accept_local: Some(true),
                rp_filter: Some(1),
            },
        );
        assert_eq!(
            rp,
            "sysctl -w net.ipv4.conf.veth0.rp_filter=2 net.ipv4.conf.veth1.rp_filter=2"
        );
        assert!(!rp.contains("accept_local"), "{rp}");

        let al = fix(
            &["veth0", "veth1", "veth0"],
            SameHostSysctls {
                accept_local: Some(false),
                rp_filter: Some(0),
            },
        );
        assert_eq!(al, "sysctl -w net.ipv4.conf.all.accept_local=1 net.ipv4.conf.veth0.accept_local=1 net.ipv4.conf.veth1.accept_local=1");
        assert!(!al.contains("rp_filter"), "{al}");

        let both = fix(
            &["veth1"],
            SameHostSysctls {
                accept_local: Some(false),
                rp_filter: Some(1),
            },
        );
        assert!(both.contains("accept_local=1") && both.contains("veth1.rp_filter=2"));
        assert!(SameHostSysctls {
            accept_local: Some(true),
            rp_filter: Some(1)
        }
        .drops());
        assert!(!SameHostSysctls {
            accept_local: Some(true),
            rp_filter: Some(2)
        }
        .drops());
    }
}
