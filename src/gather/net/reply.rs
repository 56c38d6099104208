//! Replies (pure): the kernel's rtnetlink answers parsed into routes, links, addresses and
//! neighbours, tested on captured kernel bytes.

use std::net::IpAddr;

use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoVlan, LinkAttribute, LinkFlags, LinkInfo, LinkMessage, State,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteType};
use netlink_packet_route::RouteNetlinkMessage;

use super::{IfAddr, Neighbour, NetError, NetdevLink};
use crate::model::device::OperState;
use crate::model::facts::Route;

/// Split a buffer of concatenated netlink messages. Stops at NLMSG_DONE; a NLMSG_ERROR with
/// a non-zero code becomes `NetError::Kernel`.
pub fn parse_messages(
    bytes: &[u8],
    what: &str,
) -> Result<(Vec<RouteNetlinkMessage>, bool), NetError> {
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        let msg =
            NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes[offset..]).map_err(|e| {
                NetError::Parse {
                    what: what.to_string(),
                    detail: e.to_string(),
                }
            })?;
        let len = msg.header.length as usize;
        match msg.payload {
            NetlinkPayload::Done(_) => return Ok((out, true)),
            NetlinkPayload::Error(err) => {
                if let Some(code) = err.code {
                    return Err(NetError::Kernel {
                        what: what.to_string(),
                        errno: -code.get(),
                    });
                }
                // An ACK ends a non-dump request.
                return Ok((out, true));
            }
            NetlinkPayload::InnerMessage(inner) => out.push(inner),
            _ => {}
        }
        if len == 0 {
            break;
        }
        // Messages are 4-byte aligned.
        offset += (len + 3) & !3;
    }
    Ok((out, false))
}

fn route_address(addr: &RouteAddress) -> Option<IpAddr> {
    match addr {
        RouteAddress::Inet(a) => Some(IpAddr::V4(*a)),
        RouteAddress::Inet6(a) => Some(IpAddr::V6(*a)),
        _ => None,
    }
}

fn route_kind(kind: RouteType) -> String {
    match kind {
        RouteType::Unicast => "unicast".into(),
        RouteType::Local => "local".into(),
        RouteType::Broadcast => "broadcast".into(),
        RouteType::Anycast => "anycast".into(),
        RouteType::Multicast => "multicast".into(),
        RouteType::BlackHole => "blackhole".into(),
        RouteType::Unreachable => "unreachable".into(),
        RouteType::Prohibit => "prohibit".into(),
        RouteType::Throw => "throw".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// The RTM_NEWROUTE answer to a `route get`.
pub fn parse_route(msg: &RouteMessage, destination: IpAddr) -> Route {
    let mut route = Route {
        destination,
        kind: route_kind(msg.header.kind),
        oif_index: None,
        oif: None,
        gateway: None,
        prefsrc: None,
        table: u32::from(msg.header.table),
    };
    for attr in &msg.attributes {
        match attr {
            RouteAttribute::Oif(i) => route.oif_index = Some(*i),
            RouteAttribute::Gateway(g) => route.gateway = route_address(g),
            RouteAttribute::PrefSource(s) => route.prefsrc = route_address(s),
            RouteAttribute::Destination(d) => {
                if let Some(d) = route_address(d) {
                    route.destination = d;
                }
            }
            RouteAttribute::Table(t) => route.table = *t,
            _ => {}
        }
    }
    route
}

pub fn parse_link(msg: &LinkMessage) -> Option<NetdevLink> {
    let mut name = None;
    let mut mtu = None;
    let mut operstate = OperState::Unknown;
    let mut link = None;
    let mut vlan = None;
    for attr in &msg.attributes {
        match attr {
            LinkAttribute::IfName(n) => name = Some(n.clone()),
            // An 802.1Q netdev (`ip link add ... type vlan id N`) carries its ID here.
            LinkAttribute::LinkInfo(infos) => {
                for info in infos {
                    if let LinkInfo::Data(InfoData::Vlan(data)) = info {
                        vlan = data.iter().find_map(|d| match d {
                            InfoVlan::Id(id) => Some(*id),
                            _ => None,
                        });
                    }
                }
            }
            LinkAttribute::Link(i) => link = Some(*i),
            LinkAttribute::Mtu(m) => mtu = Some(*m),
            LinkAttribute::OperState(s) => operstate = oper_state(*s),
            _ => {}
        }
    }
    Some(NetdevLink {
        index: msg.header.index,
        name: name?,
        operstate,
        admin_up: msg.header.flags.contains(LinkFlags::Up),
        mtu,
        link,
        vlan,
    })
}

/// IFLA_OPERSTATE into the type sysfs `operstate` is read into.
fn oper_state(state: State) -> OperState {
    OperState::from_number(u8::from(state))
}

pub fn parse_address(msg: &AddressMessage) -> Option<IfAddr> {
    // IFA_LOCAL is the interface's own address on point-to-point links; prefer it.
    let mut address = None;
    for attr in &msg.attributes {
        match attr {
            AddressAttribute::Local(a) => address = Some(*a),
            AddressAttribute::Address(a) if address.is_none() => address = Some(*a),
            _ => {}
        }
    }
    Some(IfAddr {
        ifindex: msg.header.index,
        address: address?,
        prefix_len: msg.header.prefix_len,
    })
}

pub fn parse_neighbour(msg: &NeighbourMessage) -> Option<Neighbour> {
    let mut address = None;
    let mut lladdr = None;
    for attr in &msg.attributes {
        match attr {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(a)) => {
                address = Some(IpAddr::V4(*a))
            }
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(a)) => {
                address = Some(IpAddr::V6(*a))
            }
            NeighbourAttribute::LinkLayerAddress(mac) => {
                lladdr = Some(
                    mac.iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join(":"),
                )
            }
            _ => {}
        }
    }
    Some(Neighbour {
        ifindex: msg.header.ifindex,
        address: address?,
        state: neighbour_state_text(msg.header.state),
        lladdr,
    })
}

fn neighbour_state_text(state: NeighbourState) -> String {
    match state {
        NeighbourState::Incomplete => "INCOMPLETE".into(),
        NeighbourState::Reachable => "REACHABLE".into(),
        NeighbourState::Stale => "STALE".into(),
        NeighbourState::Delay => "DELAY".into(),
        NeighbourState::Probe => "PROBE".into(),
        NeighbourState::Failed => "FAILED".into(),
        NeighbourState::Noarp => "NOARP".into(),
        NeighbourState::Permanent => "PERMANENT".into(),
        NeighbourState::None => "NONE".into(),
        other => format!("{other:?}").to_uppercase(),
    }
}

// Live queries (this network namespace)

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The kernel's reply to `ip route get 8.8.8.8` on a host whose default route is
    /// `via 192.0.2.1 dev eth0` (ifindex 4), source 192.0.2.2; captured with `route_get_request`.
    const ROUTE_GET_8888: &str = "700000001800000000000000fc21000002200000fe0000010002000008000f00\
        fe0000000800010008080808080004000400000008000700c000020208000500c0000201080019000000000024\
        000c0002000000ccc00000000000000000000000000000000000000000000000000000";

    #[test]
    fn parses_captured_route_get_reply() {
        let (msgs, _) = parse_messages(&hex(ROUTE_GET_8888), "route get 8.8.8.8").unwrap();
        let RouteNetlinkMessage::NewRoute(msg) = &msgs[0] else {
            panic!("{msgs:?}")
        };
        let route = parse_route(msg, "8.8.8.8".parse().unwrap());
        assert_eq!(route.kind, "unicast");
        assert_eq!(route.oif_index, Some(4));
        assert_eq!(route.gateway, Some("192.0.2.1".parse().unwrap()));
        assert_eq!(route.prefsrc, Some("192.0.2.2".parse().unwrap()));
        assert_eq!(route.table, 254);
    }

    #[test]
    fn kernel_error_is_reported_with_errno() {
        // NLMSG_ERROR, error -101 (ENETUNREACH), then the echoed 16-byte request header.
        let bytes = hex("24000000 0200 0000 01000000 00000000
             9bffffff 2c000000 1a00 0100 01000000 00000000");
        match parse_messages(&bytes, "route get 10.9.9.9") {
            Err(NetError::Kernel { errno, .. }) => assert_eq!(errno, libc::ENETUNREACH),
            other => panic!("{other:?}"),
        }
    }
}
