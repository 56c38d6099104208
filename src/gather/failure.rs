//! The facts of a failed pingpong or selftest run. The data path reports a `Failure` (step,
//! cause, the attributes in use); this module gathers what the rules in `diagnose` look at
//! (the port and its GID table from sysfs, the peer's endpoint from the handshake, the
//! route, neighbour and ARP sysctls toward the peer over rtnetlink, the memlock limit), the
//! facts `-g auto` chooses from, and resolves the peer named on the command line. The rules
//! run in `traffic::failure`.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::Path;

use crate::gather::net;
use crate::gather::procfs;
use crate::gather::sysfs::SysfsRoot;
use crate::model::device::{GidEntry, LinkLayer};
use crate::model::facts::{
    DeviceNodeFacts, EndFacts, Facts, MemlockFacts, NetFacts, QpFacts, RouteFacts, Stall,
};
use crate::model::failure::{Endpoint, Failure, FailureContext, Step};
use crate::model::netfilter::FirewallFacts;

/// What the caller knows when a step fails; the rest is read here.
#[derive(Debug, Clone, Default)]
pub struct Known<'a> {
    pub device: &'a str,
    pub port: u32,
    pub gid_index: Option<u32>,
    pub local: Option<&'a Endpoint>,
    pub remote: Option<&'a Endpoint>,
    /// The peer's IP address (from the TCP exchange, or the one given on the command line).
    pub peer: Option<IpAddr>,
    /// The remote endpoint came from ibv_rc_pingpong's exchange: only LID, QPN, PSN, GID.
    pub compat: bool,
    /// Bytes the run registers (MRs), for the memlock rule.
    pub registered_bytes: u64,
    pub requested_mtu: Option<u32>,
    pub message_bytes: Option<u32>,
    pub gid_table_len: Option<u32>,
    /// Receives were posted before the QP reached RTR (None: the run had not got there).
    pub recv_posted_before_rtr: Option<bool>,
    /// What both ends re-read when a completion did not come mid-run.
    pub stall: Option<&'a Stall>,
}

/// The peer address in a failure's context ("192.168.77.1:18515", "[::ffff:1.2.3.4]:5").
pub fn peer_ip_of(text: &str) -> Option<IpAddr> {
    if let Ok(sa) = text.parse::<SocketAddr>() {
        return Some(sa.ip().to_canonical());
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    // host:port with a name: resolve it (the connect already did, so this is quick).
    text.to_socket_addrs()
        .ok()?
        .next()
        .map(|sa| sa.ip().to_canonical())
}

/// The peer's address, resolved before anything is opened: IPv4 first, as RoCE GID tables
/// carry IPv4 far more often. A name that does not resolve is a usage error that says so.
pub fn resolve_peer(host: &str, port: u16) -> crate::error::Result<IpAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip.to_canonical());
    }
    // `fe80::1%eth0`: the scope names an interface, which need not exist here (a captured
    // tree's); the caller takes it from `split_scope`.
    if let (addr, Some(_)) = split_scope(host) {
        if let Ok(ip) = addr.parse::<IpAddr>() {
            return Ok(ip);
        }
    }
    if let Some((addr, _)) = host.split_once('%') {
        if addr.parse::<std::net::Ipv4Addr>().is_ok() {
            return Err(crate::error::Error::Usage(format!(
                "'{host}': a scope (%IFNAME) goes with an IPv6 link-local address only; give {addr}"
            )));
        }
    }
    let addrs: Vec<SocketAddr> = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            return Err(crate::error::Error::Usage(format!(
                "cannot resolve '{host}': {e}; give the peer's IP address, or a name this host resolves (getent hosts {host})"
            )))
        }
    };
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .map(|a| a.ip().to_canonical())
        .ok_or_else(|| {
            crate::error::Error::Usage(format!(
                "'{host}' resolved to no address; give the peer's IP address"
            ))
        })
}

/// The address a ping-pong client connects its TCP exchange to: `host` resolved as
/// `resolve_peer` does, with a link-local address's zone (`fe80::1%veth1`, or `%3`) kept as
/// the scope id the connect needs. This address carries only the exchange: the RoCE path is
/// the two GIDs', so loopback (`localhost`) is fine here, as it is for ibv_rc_pingpong.
pub fn tcp_peer(host: &str, port: u16) -> crate::error::Result<SocketAddr> {
    let ip = resolve_peer(host, port)?;
    let (_, scope) = split_scope(host);
    let (IpAddr::V6(v6), Some(scope)) = (ip, scope) else {
        return Ok(SocketAddr::new(ip, port));
    };
    let links = net::netdevs().unwrap_or_default();
    let index = scope
        .parse::<u32>()
        .ok()
        .filter(|i| links.is_empty() || links.iter().any(|l| l.index == *i))
        .or_else(|| links.iter().find(|l| l.name == scope).map(|l| l.index));
    match index {
        Some(index) => Ok(SocketAddr::V6(std::net::SocketAddrV6::new(
            v6, port, 0, index,
        ))),
        None => {
            let names: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
            Err(crate::error::Error::Usage(format!(
                "'{host}': no interface '{scope}' in this network namespace for the scope (interfaces: {})",
                if names.is_empty() { "none read".to_string() } else { names.join(", ") }
            )))
        }
    }
}

/// `ADDR%IFNAME`, as `ping fe80::1%eth0` takes a link-local peer: the address, and the
/// interface its scope names. Only an IPv6 address takes a scope.
pub fn split_scope(host: &str) -> (&str, Option<&str>) {
    match host.split_once('%') {
        Some((addr, scope)) if !scope.is_empty() && addr.parse::<std::net::Ipv6Addr>().is_ok() => {
            (addr, Some(scope))
        }
        _ => (host, None),
    }
}

/// The facts of a failed run: the port and its GID table from sysfs, the peer's endpoint
/// from the handshake, the route, neighbour and ARP sysctls toward the peer over rtnetlink,
/// the memlock limit. `route.arp_flux` is left for the ARP flux rule to word.
pub fn facts(sysfs: &Path, known: &Known, failure: &Failure) -> Facts {
    let c = &failure.context;
    let device = if c.device.is_empty() {
        known.device
    } else {
        &c.device
    };
    let port_no = if c.port == 0 { known.port } else { c.port };
    let gid_index = c.gid_index.or(known.gid_index);
    let local_ep = c.local.as_ref().or(known.local);
    let remote_ep = c.remote.as_ref().or(known.remote);
    // A loopback exchange address (`pingpong localhost`) says nothing about the RoCE path.
    let peer = known
        .peer
        .or_else(|| {
            c.peer_addr
                .as_deref()
                .and_then(peer_ip_of)
                .filter(|ip| !ip.is_loopback())
        })
        .or_else(|| {
            remote_ep
                .map(|r| r.gid)
                .filter(|g| !g.is_zero())
                .map(|g| g.ip())
        });

    let (local, soft_roce) = local_end(sysfs, device, port_no, gid_index, known, local_ep, c);
    let peer_ep = remote_ep.map(|r| peer_end(r, known.compat));

    let live = sysfs == Path::new("/sys");
    let netdev = match (&local.netdev, live) {
        (Some(name), true) => net::netdev_facts(name).ok(),
        _ => None,
    };
    let route = match (peer, live) {
        (Some(p), true) => net::route_facts(p, local.netdev.as_deref())
            .ok()
            .map(|(facts, _)| facts),
        _ => None,
    };
    let firewall = (live && soft_roce)
        .then(|| soft_roce_firewall(failure, &local, peer_ep.as_ref(), route.as_ref(), peer))
        .flatten();
    Facts {
        firewall,
        local,
        peer: peer_ep,
        requested_mtu: known.requested_mtu,
        netdev,
        route,
        memlock: Some(memlock_facts(known.registered_bytes)),
        // The attributes set on the QP, when it had got that far.
        qp: Some(QpFacts {
            retry_cnt: c.qp.map(|q| q.retry_cnt),
            rnr_retry: c.qp.map(|q| q.rnr_retry),
            recv_posted_before_rtr: known.recv_posted_before_rtr,
            message_bytes: known.message_bytes,
            // rdmactl's native exchange sends its -s as the buffer length; the stock one
            // sends none (its length reads 0).
            peer_message_bytes: remote_ep
                .filter(|_| !known.compat)
                .map(|r| r.len)
                .filter(|&len| len > 0),
            peer_stock_exchange: known.compat,
            path_mtu: c.path_mtu,
            soft_roce,
            ..QpFacts::default()
        }),
        // A device that would not open (or register memory): its uverbs node, so the
        // explanation names it (uverbs1, not "uverbsN") and says what was found there.
        device_node: match (failure.step, live) {
            (Step::Open | Step::Mr, true) => device_node_facts(sysfs, device),
            _ => None,
        },
        cm_source: None,
        port_holders: match (failure.step, &c.bind_addr) {
            (Step::Listen, Some(addr)) => addr
                .parse::<SocketAddr>()
                .map(|a| procfs::port_holders(a.port()))
                .unwrap_or_default(),
            _ => Vec::new(),
        },
        evidence: Vec::new(),
        in_initial_netns: live.then(procfs::in_initial_netns).flatten(),
        stall: known.stall.cloned(),
    }
}

/// This end of a failed run: its port and GID table from sysfs, what the exchange said of
/// it, the netdev its GID sits on; and whether it is Soft-RoCE.
fn local_end(
    sysfs: &Path,
    device: &str,
    port_no: u32,
    gid_index: Option<u32>,
    known: &Known,
    local_ep: Option<&Endpoint>,
    c: &FailureContext,
) -> (EndFacts, bool) {
    let mut local = EndFacts {
        device: device.to_string(),
        port: port_no,
        gid_index,
        gid_table_len: known.gid_table_len,
        ..EndFacts::default()
    };
    let mut port_netdev = None;
    // Read with the port; asked on its own only when the port could not be read.
    let mut soft_roce = None;
    if let Ok(p) = SysfsRoot::new(sysfs).port(device, port_no) {
        port_netdev = p.netdev.as_ref().map(|n| n.name.clone());
        soft_roce = Some(p.soft_roce);
        local.link_layer = p.link_layer.clone();
        local.port_state = p.state.clone();
        local.phys_state = p.phys_state.clone();
        local.lid = p.lid.and_then(|l| u16::try_from(l).ok());
        local.gid_table = p.gids.clone();
    }
    if let Some(l) = local_ep {
        local.link_layer = local.link_layer.or(Some(l.link_layer.clone()));
        local.active_mtu = (l.active_mtu > 0).then_some(l.active_mtu);
        if local.gid_index.is_some() && !l.gid.is_zero() {
            local.gid = Some(l.gid);
            local.gid_type = l.gid_type.clone();
        }
        local.segment = l.segment;
    }
    if local.link_layer.is_none() {
        local.link_layer = c.link_layer.clone();
    }
    // A GID whose address went away with its link leaves the port's own netdev to name.
    local.netdev = gid_index
        .and_then(|i| {
            local
                .gid_table
                .iter()
                .find(|e| e.index == i)
                .and_then(|e| e.netdev.clone())
        })
        .or(port_netdev.clone());
    local.port_netdev = port_netdev;
    let soft_roce =
        soft_roce.unwrap_or_else(|| crate::gather::inventory::is_soft_roce(sysfs, device));
    (local, soft_roce)
}

/// The peer's end as its endpoint in the exchange described it.
fn peer_end(r: &Endpoint, compat: bool) -> EndFacts {
    let unknown = matches!(r.link_layer, LinkLayer::Other(_));
    EndFacts {
        device: String::new(),
        port: 0,
        link_layer: (!unknown).then(|| r.link_layer.clone()),
        lid: (!compat || r.lid != 0).then_some(r.lid),
        active_mtu: (r.active_mtu > 0).then_some(r.active_mtu),
        // ibv_rc_pingpong does not say which index it used.
        gid_index: if compat { None } else { r.gid_index },
        gid: Some(r.gid),
        gid_type: r.gid_type.clone(),
        segment: r.segment,
        ..EndFacts::default()
    }
}

/// A Soft-RoCE port's firewall (on a live host), when the failure is packets unanswered.
fn soft_roce_firewall(
    failure: &Failure,
    local: &EndFacts,
    peer_ep: Option<&EndFacts>,
    route: Option<&RouteFacts>,
    peer: Option<IpAddr>,
) -> Option<FirewallFacts> {
    // Unanswered packets on Soft-RoCE: this host's firewall sees them (rxe's RoCE v2 is
    // UDP through the IP stack). In a same-host test the peer's netdev is this host's too.
    let unanswered = match &failure.cause {
        crate::model::failure::Cause::PeerReported { notice } => notice.packets_unanswered(),
        crate::model::failure::Cause::Interrupted { .. } => false,
        _ => matches!(failure.step, Step::Poll | Step::Completion),
    };
    match (&local.netdev, local.gid_now()) {
        (Some(dev), Some(gid)) if unanswered && local.is_ethernet() => {
            let peer_netdev = route
                .filter(|r| r.peer_is_local)
                .and_then(|r| r.peer_local_netdev.clone());
            let remote = peer_ep
                .and_then(|p| p.gid)
                .filter(|g| !g.is_zero())
                .map(|g| g.ip())
                .or(peer);
            net::netfilter::roce_firewall(net::netfilter::roce_paths(
                &local.name(),
                dev,
                gid.ip(),
                remote,
                peer_netdev.as_deref(),
            ))
        }
        _ => None,
    }
}

/// `device`'s uverbs node under /dev/infiniband as this process finds it (mode, owner, its
/// own open, who it runs as). None when sysfs maps no node to the device.
pub fn device_node_facts(sysfs: &Path, device: &str) -> Option<DeviceNodeFacts> {
    crate::gather::devnode::uverbs_node(sysfs, device)
}

/// The segment of GID `index` of `device`/`port` (its netdev's VLAN and the prefix of its
/// address there), which rdmactl's exchange carries so the ends can compare them. None on
/// InfiniBand, for a GID with no netdev, or a captured tree.
pub fn gid_segment(
    sysfs: &Path,
    device: &str,
    port: u32,
    index: u32,
) -> Option<crate::model::failure::Segment> {
    if sysfs != Path::new("/sys") {
        return None;
    }
    let entry = SysfsRoot::new(sysfs).gid(device, port, index).ok()?;
    net::segment(entry.netdev.as_deref()?, entry.gid.ip())
}

/// RLIMIT_MEMLOCK and CAP_IPC_LOCK of this process, and what a run of `needed` bytes pins.
pub fn memlock_facts(needed: u64) -> MemlockFacts {
    let limits = procfs::lock_limits();
    MemlockFacts {
        limit_bytes: limits.memlock_soft.flatten(),
        cap_ipc_lock: limits.cap_ipc_lock.unwrap_or(false),
        needed_bytes: needed.div_ceil(4096) * 4096,
    }
}

/// The GID table and link layer of `device`/`port`, and the route toward `peer` from this
/// host's network namespace: what `-g auto` chooses from.
pub fn auto_gid_facts(
    sysfs: &Path,
    device: &str,
    port: u32,
    peer: Option<IpAddr>,
) -> crate::error::Result<(Vec<GidEntry>, LinkLayer, NetFacts)> {
    let p = SysfsRoot::new(sysfs).port(device, port)?;
    let link_layer = p.link_layer.clone().unwrap_or(LinkLayer::Ethernet);
    let net = NetFacts {
        route: peer.and_then(|ip| net::route_facts(ip, None).ok().map(|(facts, _)| facts)),
        ..NetFacts::default()
    };
    Ok((p.gids, link_layer, net))
}

/// Addresses no RC connection can have as its far end, refused with why: loopback (no RDMA
/// device carries it), unspecified, multicast, and broadcast (the limited one, or a
/// directed broadcast of one of this host's subnets). For `check --peer` and `--cm`, where
/// the address is the RDMA peer's.
pub fn refuse_special_peer(peer: IpAddr) -> crate::error::Result<()> {
    if peer.is_loopback() {
        return Err(crate::error::Error::Usage(format!(
            "peer {peer} is a loopback address: no RDMA port carries it; give the peer's address on the RDMA network (on one host: the other port's address)"
        )));
    }
    refuse_special_tcp_peer(peer)
}

/// The addresses a TCP exchange cannot reach one peer at. Loopback can: the exchange runs
/// over it and the QPs over the GIDs, as with `ibv_rc_pingpong localhost`.
pub fn refuse_special_tcp_peer(peer: IpAddr) -> crate::error::Result<()> {
    let why = if peer.is_unspecified() {
        Some("the unspecified address: it names no host")
    } else if peer.is_multicast() {
        Some("a multicast address: an RC connection needs one unicast peer")
    } else if peer == IpAddr::V4(std::net::Ipv4Addr::BROADCAST) || is_subnet_broadcast(peer) {
        Some("a broadcast address: an RC connection needs one unicast peer")
    } else {
        None
    };
    match why {
        Some(why) => Err(crate::error::Error::Usage(format!("peer {peer} is {why}"))),
        None => Ok(()),
    }
}

/// The directed broadcast of one of this host's IPv4 subnets (192.168.77.255 on a /24).
fn is_subnet_broadcast(peer: IpAddr) -> bool {
    let IpAddr::V4(p) = peer else { return false };
    net::addresses().is_ok_and(|addrs| {
        addrs.iter().any(|a| match a.address {
            IpAddr::V4(v4) if a.prefix_len < 31 => {
                let host_bits = u32::MAX >> a.prefix_len;
                (u32::from(v4) | host_bits) == u32::from(p)
            }
            _ => false,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The uverbs node of the device that would not open, by its name: `uverbs1` for
    /// rxe1, not "uverbsN".
    #[test]
    fn a_refused_device_names_its_uverbs_node() {
        let sysfs =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/rxe-veth-basic");
        let node = device_node_facts(&sysfs, "rxe1").expect("rxe1 has a uverbs node");
        assert_eq!(node.path, "/dev/infiniband/uverbs1");
        assert!(
            node.exists || !node.accessible,
            "a missing node is not accessible"
        );
        assert!(device_node_facts(&sysfs, "nosuch0").is_none());
    }

    #[test]
    fn peers_resolve_from_addresses_scopes_and_names() {
        assert_eq!(split_scope("fe80::1%veth0"), ("fe80::1", Some("veth0")));
        assert_eq!(split_scope("fe80::1"), ("fe80::1", None));
        assert_eq!(split_scope("10.0.0.1%eth0"), ("10.0.0.1%eth0", None));
        assert_eq!(split_scope("fe80::1%"), ("fe80::1%", None));
        // The scope's interface need not exist on this host.
        assert_eq!(
            resolve_peer("fe80::1%no-such-if0", 0).unwrap(),
            "fe80::1".parse::<IpAddr>().unwrap()
        );
        assert!(resolve_peer("localhost", 0).unwrap().is_loopback());
        let e = resolve_peer("10.0.0.1%eth0", 0).unwrap_err();
        assert!(
            e.to_string().contains("IPv6 link-local address only"),
            "{e}"
        );
        let e = resolve_peer("no-such-host.invalid", 0).unwrap_err();
        assert!(
            e.to_string()
                .contains("cannot resolve 'no-such-host.invalid'"),
            "{e}"
        );
    }

    #[test]
    fn peers_that_cannot_be_rc_peers_are_refused_with_why() {
        for (peer, why) in [
            ("127.0.0.1", "loopback"),
            ("::1", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("255.255.255.255", "broadcast"),
        ] {
            let e = refuse_special_peer(peer.parse().unwrap()).unwrap_err();
            assert!(e.to_string().contains(why), "{peer}: {e}");
            assert_eq!(e.exit_code(), crate::exit::USAGE, "{peer}");
        }
        assert!(refuse_special_peer("192.0.2.7".parse().unwrap()).is_ok());
        // The TCP exchange runs over loopback as ibv_rc_pingpong's does; the rest stay refused.
        assert!(refuse_special_tcp_peer("127.0.0.1".parse().unwrap()).is_ok());
        assert!(refuse_special_tcp_peer("::1".parse().unwrap()).is_ok());
        assert!(refuse_special_tcp_peer("224.0.0.1".parse().unwrap()).is_err());
    }

    /// A link-local address keeps its zone as the scope id the connect needs: by name on
    /// `lo` (every host has it), by number, and an unknown name says what exists.
    #[test]
    fn a_tcp_peer_keeps_its_zone() {
        let Ok(SocketAddr::V6(by_name)) = tcp_peer("fe80::1%lo", 18515) else {
            panic!("fe80::1%lo did not resolve to an IPv6 socket address");
        };
        assert_eq!(by_name.port(), 18515);
        assert_ne!(by_name.scope_id(), 0, "{by_name}");
        let Ok(SocketAddr::V6(by_number)) = tcp_peer(&format!("fe80::1%{}", by_name.scope_id()), 1)
        else {
            panic!("a numeric zone did not resolve");
        };
        assert_eq!(by_number.scope_id(), by_name.scope_id());
        let e = tcp_peer("fe80::1%no-such-if0", 1).unwrap_err().to_string();
        assert!(
            e.contains("no interface 'no-such-if0'") && e.contains("lo"),
            "{e}"
        );
        assert_eq!(
            tcp_peer("localhost", 7).unwrap().ip().to_canonical(),
            "127.0.0.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(tcp_peer("192.0.2.7", 7).unwrap().to_string(), "192.0.2.7:7");
    }

    #[test]
    fn peer_addresses_parse_from_failure_text() {
        for (text, want) in [
            ("192.168.77.1:18515", Some("192.168.77.1")),
            ("[::ffff:192.168.77.2]:40000", Some("192.168.77.2")),
            ("[fe80::1]:5", Some("fe80::1")),
            ("10.0.0.1", Some("10.0.0.1")),
        ] {
            assert_eq!(
                peer_ip_of(text),
                want.map(|w| w.parse::<IpAddr>().unwrap()),
                "{text}"
            );
        }
    }
}
