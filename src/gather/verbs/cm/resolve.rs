//! The kernel's choice: which device, port and source GID the CM picks to reach a peer.

use std::ffi::CStr;
use std::net::{IpAddr, SocketAddr};
use std::ptr;
use std::time::Duration;

use rdma_mummy_sys as sys;

use super::channel::{expect_event, Channel, Id};
use super::cm_err;
use super::sockaddr::to_sockaddr;
use crate::gather::verbs::qp::link_layer_from;
use crate::gather::verbs::{last_errno, query};
use crate::model::device::{GidType, LinkLayer};
use crate::model::failure::{Cause, EventKind, Failure, Step};
use crate::model::gid::Gid;

pub use crate::model::facts::Resolution;

/// Ask the kernel which device, port and source GID it would use toward `peer`, by
/// resolving address and route with the CM without connecting.
pub fn resolve(
    peer: IpAddr,
    src: Option<IpAddr>,
    timeout: Duration,
) -> Result<Resolution, Failure> {
    let channel = Channel::open(Some(SocketAddr::new(peer, 0)))?;
    let id = channel.create_id(Some(SocketAddr::new(peer, 0)))?;
    resolve_on(&channel, &id, SocketAddr::new(peer, 0), src, timeout)
}

/// The kernel's GID choice toward a peer, for `check --peer`. `src` pins the source
/// address (use the address of the device the user named); without it the kernel picks
/// the source from the routing table, which on a host where the peer address is local
/// means the peer's own device.
pub fn kernel_gid_choice(
    peer: IpAddr,
    src: Option<IpAddr>,
    timeout: Duration,
) -> Result<Resolution, Failure> {
    resolve(peer, src, timeout)
}

/// As `kernel_gid_choice`, toward an IPv6 link-local peer on the interface `scope_id`
/// (`fe80::1%veth0`): the CM needs the scope to know which link the peer is on.
pub fn kernel_gid_choice_scoped(
    peer: std::net::Ipv6Addr,
    scope_id: u32,
    timeout: Duration,
) -> Result<Resolution, Failure> {
    let dst = SocketAddr::V6(std::net::SocketAddrV6::new(peer, 0, 0, scope_id));
    let channel = Channel::open(Some(dst))?;
    let id = channel.create_id(Some(dst))?;
    resolve_on(&channel, &id, dst, None, timeout)
}

pub(super) fn resolve_on(
    channel: &Channel,
    id: &Id,
    peer: SocketAddr,
    src: Option<IpAddr>,
    timeout: Duration,
) -> Result<Resolution, Failure> {
    let some_peer = Some(peer);
    let mut src_storage = src.map(|ip| to_sockaddr(SocketAddr::new(ip, 0)));
    let mut dst_storage = to_sockaddr(peer);
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: the sockaddrs live across the call; librdmacm copies them.
    let ret = unsafe {
        sys::rdma_resolve_addr(
            id.ptr(),
            src_storage
                .as_mut()
                .map_or(ptr::null_mut(), |s| s as *mut _ as *mut libc::sockaddr),
            &mut dst_storage as *mut _ as *mut libc::sockaddr,
            ms,
        )
    };
    if ret != 0 {
        let errno = last_errno();
        let stage = if src.is_some() && errno == libc::EADDRNOTAVAIL {
            Step::CmBind
        } else {
            Step::CmResolveAddr
        };
        return Err(cm_err(
            stage,
            some_peer,
            Cause::call("rdma_resolve_addr", errno),
        ));
    }
    // The kernel reports its own timeout as ADDR_ERROR -ETIMEDOUT; our deadline only
    // catches a kernel that never answers.
    let grace = timeout + Duration::from_millis(500);
    expect_event(
        channel,
        EventKind::AddrResolved,
        "address resolution",
        Step::CmResolveAddr,
        some_peer,
        grace,
    )?;
    let annotate = |mut e: Failure| {
        e.context.device = id.device_name().unwrap_or_default();
        e.context.link_layer = port_link_layer(id.verbs(), id.port_num());
        e
    };
    // SAFETY: the id is resolved and alive.
    if unsafe { sys::rdma_resolve_route(id.ptr(), ms) } != 0 {
        return Err(annotate(cm_err(
            Step::CmResolveRoute,
            some_peer,
            Cause::call("rdma_resolve_route", last_errno()),
        )));
    }
    expect_event(
        channel,
        EventKind::RouteResolved,
        "route resolution",
        Step::CmResolveRoute,
        some_peer,
        grace,
    )
    .map_err(annotate)?;
    describe(id, peer.ip())
}

fn port_link_layer(verbs: *mut sys::ibv_context, port: u8) -> Option<LinkLayer> {
    if verbs.is_null() {
        return None;
    }
    // SAFETY: verbs is the id's open context.
    let attr = unsafe { query::port_attrs(verbs, port) }.ok()?;
    Some(link_layer_from(attr.link_layer))
}

fn describe(id: &Id, peer: IpAddr) -> Result<Resolution, Failure> {
    let verbs = id.verbs();
    let port = id.port_num();
    let device = id.device_name().ok_or_else(|| {
        cm_err(
            Step::CmResolveAddr,
            Some(SocketAddr::new(peer, 0)),
            Cause::invalid("the CM resolved the address but bound no RDMA device"),
        )
    })?;
    let link_layer = port_link_layer(verbs, port).unwrap_or(LinkLayer::Other("unknown".into()));
    let sgid = id.sgid();
    let slots = find_gid(verbs, port, &sgid);
    let (roce_mode, roce_mode_set) = match link_layer {
        LinkLayer::InfiniBand => (None, false),
        _ => match default_roce_mode(&device, port) {
            Some(mode) => (Some(mode), true),
            None => (Some(GidType::RoceV2), false),
        },
    };
    let (gid_index, gid_type, netdev, other_indices) =
        pick_cm_slot(&slots, &link_layer, roce_mode.as_ref());
    Ok(Resolution {
        peer,
        source: id.local_addr().map(|a| a.ip()),
        device,
        port,
        link_layer,
        sgid,
        gid_index,
        gid_type,
        netdev,
        other_indices,
        default_roce_mode: roce_mode,
        default_roce_mode_set: roce_mode_set,
    })
}

/// The RoCE GID type an administrator set for the CM on DEV/PORT, if any: configfs holds
/// it only once someone made the device's directory there.
fn default_roce_mode(device: &str, port: u8) -> Option<GidType> {
    let path = format!("/sys/kernel/config/rdma_cm/{device}/ports/{port}/default_roce_mode");
    match std::fs::read_to_string(path).ok()?.trim() {
        "RoCE v2" => Some(GidType::RoceV2),
        "IB/RoCE v1" => Some(GidType::RoceV1),
        _ => None,
    }
}

/// One GID table slot holding the GID we look for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    index: u32,
    gid_type: GidType,
    netdev: Option<String>,
}

/// Every slot of `port` holding `gid`, read one index at a time: sideway's table query
/// can panic, and ibv_query_gid_ex answers ENODATA for empty slots, which we skip.
fn find_gid(verbs: *mut sys::ibv_context, port: u8, gid: &Gid) -> Vec<Slot> {
    let mut out = Vec::new();
    if verbs.is_null() || gid.is_zero() {
        return out;
    }
    // SAFETY: verbs is open for the id's lifetime.
    let Ok(attr) = (unsafe { query::port_attrs(verbs, port) }) else {
        return out;
    };
    for index in 0..attr.gid_tbl_len.max(0) as u32 {
        // ibv_query_gid_ex, not query::gid: the entry also names the slot's netdev.
        let mut entry: sys::ibv_gid_entry = unsafe { std::mem::zeroed() };
        if unsafe { sys::ibv_query_gid_ex(verbs, port as u32, index, &mut entry, 0) } != 0 {
            continue;
        }
        // SAFETY: raw view of the union.
        if unsafe { entry.gid.raw } != gid.0 {
            continue;
        }
        let gid_type = match entry.gid_type {
            sys::IBV_GID_TYPE_IB => GidType::Ib,
            sys::IBV_GID_TYPE_ROCE_V1 => GidType::RoceV1,
            sys::IBV_GID_TYPE_ROCE_V2 => GidType::RoceV2,
            n => GidType::Other(n.to_string()),
        };
        out.push(Slot {
            index,
            gid_type,
            netdev: ifname(entry.ndev_ifindex),
        });
    }
    out
}

fn ifname(ifindex: u32) -> Option<String> {
    if ifindex == 0 {
        return None;
    }
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: buf has IF_NAMESIZE bytes as if_indextoname requires.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: if_indextoname wrote a NUL-terminated name into buf.
    Some(
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// The slot the CM uses: on RoCE the port's default RoCE mode, which the kernel sets to
/// RoCE v2 wherever the port supports it (cma_add_one; changeable only through configfs
/// rdma_cm/<dev>/ports/<n>/default_roce_mode); on InfiniBand the IB slot.
fn pick_cm_slot(
    slots: &[Slot],
    link_layer: &LinkLayer,
    roce_mode: Option<&GidType>,
) -> (Option<u32>, Option<GidType>, Option<String>, Vec<u32>) {
    let order: Vec<&GidType> = match link_layer {
        LinkLayer::InfiniBand => vec![&GidType::Ib],
        _ => roce_mode
            .into_iter()
            .chain([&GidType::RoceV2, &GidType::RoceV1, &GidType::Ib])
            .collect(),
    };
    let chosen = order
        .iter()
        .find_map(|t| slots.iter().find(|s| &s.gid_type == *t))
        .or(slots.first());
    match chosen {
        Some(c) => (
            Some(c.index),
            Some(c.gid_type.clone()),
            c.netdev.clone(),
            slots
                .iter()
                .filter(|s| s.index != c.index)
                .map(|s| s.index)
                .collect(),
        ),
        None => (None, None, None, Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(index: u32, gid_type: GidType) -> Slot {
        Slot {
            index,
            gid_type,
            netdev: Some("eth0".into()),
        }
    }

    #[test]
    fn cm_slot_choice() {
        // mlx5 on RoCE lists each address twice: v1 then v2; the CM uses v2.
        let both = [slot(2, GidType::RoceV1), slot(3, GidType::RoceV2)];
        assert_eq!(pick_cm_slot(&both, &LinkLayer::Ethernet, None).0, Some(3));
        assert_eq!(pick_cm_slot(&both, &LinkLayer::Ethernet, None).3, vec![2]);
        // An administrator's default_roce_mode "IB/RoCE v1" makes the CM use the v1 slot.
        let v1 = Some(&GidType::RoceV1);
        assert_eq!(pick_cm_slot(&both, &LinkLayer::Ethernet, v1).0, Some(2));
        let v1_only = [slot(0, GidType::RoceV1)];
        assert_eq!(
            pick_cm_slot(&v1_only, &LinkLayer::Ethernet, None).0,
            Some(0)
        );
        let ib = [slot(0, GidType::Ib)];
        assert_eq!(
            pick_cm_slot(&ib, &LinkLayer::InfiniBand, None).1,
            Some(GidType::Ib)
        );
        assert_eq!(
            pick_cm_slot(&[], &LinkLayer::Ethernet, None),
            (None, None, None, vec![])
        );
    }
}
