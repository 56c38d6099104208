//! Requests (pure): the rtnetlink messages `query` sends.

use std::net::IpAddr;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

pub(super) fn family_of(ip: IpAddr) -> AddressFamily {
    match ip {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

fn serialize(payload: RouteNetlinkMessage, flags: u16) -> Vec<u8> {
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    let mut packet = NetlinkMessage::new(header, NetlinkPayload::from(payload));
    packet.finalize();
    let mut buf = vec![0; packet.buffer_len()];
    packet.serialize(&mut buf);
    buf
}

/// `ip route get DST [oif IFINDEX]`.
pub fn route_get_request(destination: IpAddr, oif_index: Option<u32>) -> Vec<u8> {
    let mut msg = RouteMessage::default();
    msg.header.address_family = family_of(destination);
    msg.header.destination_prefix_length = if destination.is_ipv4() { 32 } else { 128 };
    // Without it the kernel reports every answer as table main, hiding a VRF's table.
    msg.header.flags = netlink_packet_route::route::RouteFlags::LookupTable;
    msg.attributes
        .push(RouteAttribute::Destination(RouteAddress::from(destination)));
    if let Some(oif) = oif_index {
        msg.attributes.push(RouteAttribute::Oif(oif));
    }
    serialize(RouteNetlinkMessage::GetRoute(msg), NLM_F_REQUEST)
}

pub(super) fn dump_request(payload: RouteNetlinkMessage) -> Vec<u8> {
    serialize(payload, NLM_F_REQUEST | NLM_F_DUMP)
}

// Replies (pure)

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gather::net::query::request_is_dump;
    use crate::gather::net::reply::parse_messages;
    use netlink_packet_route::link::LinkMessage;

    #[test]
    fn route_request_carries_destination_and_oif() {
        let req = route_get_request("192.168.77.2".parse().unwrap(), Some(3));
        let (msgs, _) = parse_messages(&req, "request").unwrap();
        let RouteNetlinkMessage::GetRoute(r) = &msgs[0] else {
            panic!("{msgs:?}")
        };
        assert_eq!(r.header.address_family, AddressFamily::Inet);
        assert_eq!(r.header.destination_prefix_length, 32);
        assert!(r.attributes.contains(&RouteAttribute::Oif(3)));
        assert!(!request_is_dump(&req));
        assert!(request_is_dump(&dump_request(
            RouteNetlinkMessage::GetLink(LinkMessage::default())
        )));
    }
}
