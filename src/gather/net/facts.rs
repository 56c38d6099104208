//! Facts for the explanation rules (check, pingpong, selftest): the netdev, the route
//! toward the peer and its neighbour.

use std::net::IpAddr;
use std::path::Path;

use super::query::{address_owner, addresses, neighbour, netdev, route_get};
use super::NetError;
use crate::model::facts::{NetdevFacts, Route, RouteFacts};
use crate::model::gid::{is_link_local, Gid};

/// A netdev as the QP sees it: present in this namespace, up, its MTU.
pub fn netdev_facts(name: &str) -> Result<NetdevFacts, NetError> {
    Ok(match netdev(name)? {
        Some(d) => NetdevFacts {
            name: d.name.clone(),
            exists: true,
            up: d.is_up(),
            operstate: Some(d.operstate.clone()),
            mtu: d.mtu,
        },
        None => NetdevFacts {
            name: name.to_string(),
            exists: false,
            ..NetdevFacts::default()
        },
    })
}

/// The kernel's way to `peer`, as seen from the GID's netdev `gid_netdev`: the route, whether
/// the peer is an address of this host (and the ARP sysctls of the netdev that owns it), and
/// the neighbour state on the GID's netdev. The second value is the route through that netdev
/// when the peer is local.
/// Where the address `ip` sits on `netdev`: the netdev's VLAN (None: untagged) and the
/// address's prefix there. None when the netdev is not in this namespace or netlink fails.
pub fn segment(netdev: &str, ip: IpAddr) -> Option<crate::model::failure::Segment> {
    let link = self::netdev(netdev).ok()??;
    let prefix_len = addresses().ok().and_then(|addrs| {
        addrs
            .iter()
            .find(|a| a.ifindex == link.index && a.address.to_canonical() == ip.to_canonical())
            .map(|a| a.prefix_len)
    });
    Some(crate::model::failure::Segment {
        vlan: link.vlan,
        prefix_len,
    })
}

pub fn route_facts(
    peer: IpAddr,
    gid_netdev: Option<&str>,
) -> Result<(RouteFacts, Option<Route>), NetError> {
    let mut facts = RouteFacts {
        peer: Some(peer),
        ..RouteFacts::default()
    };
    let peer_link_local = is_link_local(&Gid::from_ip(peer));
    // An IPv6 link-local peer is only meaningful on a given link: ask through the GID's netdev.
    let mut plain = if peer_link_local {
        route_get_soft(peer, gid_netdev)?
    } else {
        route_get_soft(peer, None)?
    };
    // A netdev in a VRF routes through the VRF's table, which a lookup without the
    // device never sees (`ip route get vrf NAME PEER`); so do policy rules keyed on it.
    // Asking through the GID's netdev is what a QP on that netdev gets; a table other than
    // main and local says it is such a route, not the kernel's "assume on-link" guess.
    if plain.is_none() && !peer_link_local {
        if let Some(dev) = gid_netdev {
            // Table 0 is the kernel's "assume on-link through oif" answer: no route at all.
            let own_table =
                |r: &Route| r.table != 0 && r.table != MAIN_TABLE && r.table != LOCAL_TABLE;
            plain = route_get_soft(peer, Some(dev))?.filter(own_table);
            // `ip route get vrf NAME` asks through the VRF device itself.
            if plain.is_none() {
                if let Some(master) = master_of(dev) {
                    plain = route_get_soft(peer, Some(&master))?.filter(own_table);
                }
            }
        }
    }
    let Some(route) = plain else {
        facts.no_route = true;
        return Ok((facts, None));
    };
    if route.table != 0 && route.table != MAIN_TABLE && route.table != LOCAL_TABLE {
        facts.table = Some(route.table);
    }
    facts.route_netdev = route.oif.clone();
    facts.gateway = route.gateway;
    facts.prefsrc = route.prefsrc;
    facts.peer_is_local = route.is_local();
    facts.subnet_addresses = subnet_addresses(peer)?;
    let mut via_gid = None;
    if facts.peer_is_local {
        // Two ports of one host: the RDMA path leaves through the GID's netdev and the
        // peer's netdev must accept an ARP request whose sender address is local.
        let owner = address_owner(peer)?.map(|d| d.name);
        if let Some(owner) = &owner {
            let sysctls = crate::gather::procfs::netdev_arp_sysctls(owner);
            facts.accept_local = sysctls.accept_local;
            facts.rp_filter = sysctls.rp_filter;
        }
        facts.peer_local_netdev = owner;
        if let Some(dev) = gid_netdev {
            via_gid = route_get_soft(peer, Some(dev))?;
            if let Some(r) = &via_gid {
                facts.gateway = r.gateway;
            }
        }
    }
    // The neighbour the kernel ARPs for, on the GID's netdev.
    if let Some(dev) = gid_netdev {
        if let Some(d) = netdev(dev)? {
            let hop = facts.gateway.unwrap_or(peer);
            facts.neighbour_state = neighbour(hop, d.index)?.map(|n| n.state);
        }
    }
    Ok((facts, via_gid))
}

/// The device a netdev is enslaved to (a VRF, a bond, a bridge), from sysfs.
fn master_of(netdev: &str) -> Option<String> {
    let link = std::fs::read_link(Path::new("/sys/class/net").join(netdev).join("master")).ok()?;
    Some(link.file_name()?.to_str()?.to_string())
}

/// RT_TABLE_MAIN and RT_TABLE_LOCAL.
const MAIN_TABLE: u32 = 254;

const LOCAL_TABLE: u32 = 255;

/// This host's addresses whose prefix holds the peer, except the peer's own address.
fn subnet_addresses(peer: IpAddr) -> Result<Vec<IpAddr>, NetError> {
    Ok(addresses()?
        .into_iter()
        .filter(|a| a.address != peer && prefix_holds(a.address, a.prefix_len, peer))
        .map(|a| a.address)
        .collect())
}

pub use crate::model::gid::prefix_holds;

/// A route lookup where "no route" is an answer, not an error.
pub fn route_get_soft(peer: IpAddr, oif: Option<&str>) -> Result<Option<Route>, NetError> {
    match route_get(peer, oif) {
        Ok(r) if matches!(r.kind.as_str(), "unreachable" | "prohibit" | "blackhole") => Ok(None),
        Ok(r) => Ok(Some(r)),
        Err(NetError::Kernel { errno, .. })
            if errno == libc::ENETUNREACH
                || errno == libc::EHOSTUNREACH
                || errno == libc::EACCES
                || errno == libc::EINVAL =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_hold_their_subnet() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(prefix_holds(ip("192.168.10.2"), 24, ip("192.168.10.1")));
        assert!(!prefix_holds(ip("192.168.77.2"), 24, ip("192.168.10.1")));
        assert!(!prefix_holds(ip("192.168.10.2"), 32, ip("192.168.10.1")));
        assert!(prefix_holds(ip("2001:db8::2"), 64, ip("2001:db8::1")));
        assert!(!prefix_holds(ip("2001:db8:1::2"), 64, ip("2001:db8::1")));
        assert!(!prefix_holds(ip("192.168.10.2"), 24, ip("2001:db8::1")));
        assert!(prefix_holds(ip("10.0.0.1"), 0, ip("192.168.1.1")));
    }
}
