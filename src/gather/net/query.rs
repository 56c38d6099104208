//! Live queries in this network namespace: the only part that touches a socket.

use std::net::IpAddr;

use netlink_packet_core::NLM_F_DUMP;
use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::neighbour::NeighbourMessage;
use netlink_packet_route::RouteNetlinkMessage;

use super::reply::{parse_address, parse_link, parse_messages, parse_neighbour, parse_route};
use super::request::{dump_request, family_of, route_get_request};
use super::{IfAddr, Neighbour, NetError, NetdevLink};
use crate::model::facts::Route;

/// Send one request and collect the replies. The kernel answers rtnetlink requests
/// synchronously from its own tables, so a blocking read cannot hang waiting on the network.
pub(super) fn query(request: &[u8], what: &str) -> Result<Vec<RouteNetlinkMessage>, NetError> {
    use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
    let mut socket = Socket::new(NETLINK_ROUTE).map_err(NetError::Socket)?;
    socket.bind_auto().map_err(NetError::Socket)?;
    socket
        .connect(&SocketAddr::new(0, 0))
        .map_err(NetError::Socket)?;
    socket.send(request, 0).map_err(NetError::Socket)?;
    let mut all = Vec::new();
    loop {
        let (bytes, _) = socket.recv_from_full().map_err(NetError::Socket)?;
        if bytes.is_empty() {
            return Ok(all);
        }
        let (msgs, done) = parse_messages(&bytes, what)?;
        all.extend(msgs);
        // A non-dump request gets exactly one reply message.
        if done || !request_is_dump(request) {
            return Ok(all);
        }
    }
}

pub(super) fn request_is_dump(request: &[u8]) -> bool {
    // nlmsg_flags sits at bytes 6..8, host order.
    request.len() >= 8 && u16::from_ne_bytes([request[6], request[7]]) & NLM_F_DUMP == NLM_F_DUMP
}

/// Every netdev in this network namespace (`ip link`).
pub fn netdevs() -> Result<Vec<NetdevLink>, NetError> {
    let msgs = query(
        &dump_request(RouteNetlinkMessage::GetLink(LinkMessage::default())),
        "link dump",
    )?;
    Ok(msgs
        .iter()
        .filter_map(|m| match m {
            RouteNetlinkMessage::NewLink(l) => parse_link(l),
            _ => None,
        })
        .collect())
}

/// The netdev named `name`, if it exists in this network namespace. A GID whose netdev is
/// in another namespace (a pod) is unusable here: ENODEV at RTR.
pub fn netdev(name: &str) -> Result<Option<NetdevLink>, NetError> {
    Ok(netdevs()?.into_iter().find(|d| d.name == name))
}

/// Every address of every netdev (`ip addr`).
pub fn addresses() -> Result<Vec<IfAddr>, NetError> {
    let msgs = query(
        &dump_request(RouteNetlinkMessage::GetAddress(AddressMessage::default())),
        "address dump",
    )?;
    Ok(msgs
        .iter()
        .filter_map(|m| match m {
            RouteNetlinkMessage::NewAddress(a) => parse_address(a),
            _ => None,
        })
        .collect())
}

/// The netdev that carries `address` (`ip -br addr`), if any.
pub fn address_owner(address: IpAddr) -> Result<Option<NetdevLink>, NetError> {
    let Some(owner) = addresses()?.into_iter().find(|a| a.address == address) else {
        return Ok(None);
    };
    Ok(netdevs()?.into_iter().find(|d| d.index == owner.ifindex))
}

/// `ip route get DST [oif DEV]`. With `oif`, note that the kernel assumes the peer is
/// on-link through DEV when no route matches, so the answer says "this is what would be
/// tried", not "this works": compare with the plain lookup.
pub fn route_get(destination: IpAddr, oif: Option<&str>) -> Result<Route, NetError> {
    let devs = netdevs()?;
    let oif_index = match oif {
        Some(name) => Some(
            devs.iter()
                .find(|d| d.name == name)
                .map(|d| d.index)
                .ok_or_else(|| NetError::NoSuchNetdev(name.to_string()))?,
        ),
        None => None,
    };
    let what = match oif {
        Some(dev) => format!("route get {destination} oif {dev}"),
        None => format!("route get {destination}"),
    };
    let msgs = query(&route_get_request(destination, oif_index), &what)?;
    let mut route = msgs
        .iter()
        .find_map(|m| match m {
            RouteNetlinkMessage::NewRoute(r) => Some(parse_route(r, destination)),
            _ => None,
        })
        .ok_or_else(|| NetError::Parse {
            what: what.clone(),
            detail: "no route in the reply".into(),
        })?;
    route.oif = route
        .oif_index
        .and_then(|i| devs.iter().find(|d| d.index == i))
        .map(|d| d.name.clone());
    Ok(route)
}

/// The neighbour entry for `address` on netdev `ifindex`, if the kernel has one.
pub fn neighbour(address: IpAddr, ifindex: u32) -> Result<Option<Neighbour>, NetError> {
    let mut req = NeighbourMessage::default();
    req.header.family = family_of(address);
    let msgs = query(
        &dump_request(RouteNetlinkMessage::GetNeighbour(req)),
        "neighbour dump",
    )?;
    Ok(find_neighbour(&msgs, address, ifindex))
}

pub fn find_neighbour(
    msgs: &[RouteNetlinkMessage],
    address: IpAddr,
    ifindex: u32,
) -> Option<Neighbour> {
    msgs.iter()
        .filter_map(|m| match m {
            RouteNetlinkMessage::NewNeighbour(n) => parse_neighbour(n),
            _ => None,
        })
        .find(|n| n.address == address && n.ifindex == ifindex)
}
