//! The RDMA netlink's resource dumps (`rdma res show qp|cm_id|mr|cq|pd`): one
//! `RDMA_NLDEV_CMD_RES_*_GET` dump per device index, each reply a table attribute
//! (`RES_QP`) of entry nests (`RES_QP_ENTRY`) of plain attributes. Requests are built and
//! replies parsed by pure functions, tested on bytes laid out as the kernel writes them
//! (drivers/infiniband/core/nldev.c, `res_get_common_dumpit` and the `fill_res_*_entry`
//! functions); `dump` alone touches a socket. An attribute a kernel does not send is a
//! `None`, never an error; a damaged reply is an error, never a panic.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::rdma::{attributes, message, parse, Parsed, Reply};
use crate::model::res::{CmId, CmState, Counted, Owner, QpState, QpType, ResMr, ResQp};

// include/uapi/rdma/rdma_netlink.h (enum rdma_nldev_command, enum rdma_nldev_attr; the
// numbers are ABI: "don't change the order or add anything between").
const RDMA_NL_NLDEV: u16 = 5;
pub const CMD_GET: u16 = 1;
pub const CMD_RES_QP_GET: u16 = 10;
pub const CMD_RES_CM_ID_GET: u16 = 11;
pub const CMD_RES_CQ_GET: u16 = 12;
pub const CMD_RES_MR_GET: u16 = 13;
pub const CMD_RES_PD_GET: u16 = 14;

const ATTR_DEV_INDEX: u16 = 1;
const ATTR_DEV_NAME: u16 = 2;
const ATTR_PORT_INDEX: u16 = 3;
const ATTR_RES_QP: u16 = 19;
const ATTR_RES_QP_ENTRY: u16 = 20;
const ATTR_RES_LQPN: u16 = 21;
const ATTR_RES_RQPN: u16 = 22;
const ATTR_RES_RQ_PSN: u16 = 23;
const ATTR_RES_SQ_PSN: u16 = 24;
const ATTR_RES_TYPE: u16 = 26;
const ATTR_RES_STATE: u16 = 27;
const ATTR_RES_PID: u16 = 28;
const ATTR_RES_KERN_NAME: u16 = 29;
const ATTR_RES_CM_ID: u16 = 30;
const ATTR_RES_CM_ID_ENTRY: u16 = 31;
const ATTR_RES_PS: u16 = 32;
const ATTR_RES_SRC_ADDR: u16 = 33;
const ATTR_RES_DST_ADDR: u16 = 34;
const ATTR_RES_CQ: u16 = 35;
const ATTR_RES_CQ_ENTRY: u16 = 36;
const ATTR_RES_MR: u16 = 40;
const ATTR_RES_MR_ENTRY: u16 = 41;
const ATTR_RES_MRLEN: u16 = 45;
const ATTR_RES_PD: u16 = 46;
const ATTR_RES_PD_ENTRY: u16 = 47;
const ATTR_RES_PDN: u16 = 60;
const ATTR_RES_CQN: u16 = 61;
const ATTR_RES_MRN: u16 = 62;
const ATTR_RES_CM_IDN: u16 = 63;

const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;

/// RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op).
pub fn nldev_type(op: u16) -> u16 {
    (RDMA_NL_NLDEV << 10) + op
}

/// A resource dump of one device: the kernel refuses one without `RDMA_NLDEV_ATTR_DEV_INDEX`
/// (EINVAL), so every device is asked on its own.
pub fn dump_request(op: u16, dev_index: u32, seq: u32) -> Vec<u8> {
    let mut body = Vec::with_capacity(8);
    body.extend_from_slice(&8u16.to_ne_bytes());
    body.extend_from_slice(&ATTR_DEV_INDEX.to_ne_bytes());
    body.extend_from_slice(&dev_index.to_ne_bytes());
    message(nldev_type(op), NLM_F_REQUEST | NLM_F_DUMP, seq, &body)
}

/// The (index, name) of each device of a `RDMA_NLDEV_CMD_GET` dump.
pub fn devices(replies: &[Reply]) -> Vec<(u32, String)> {
    replies
        .iter()
        .filter(|r| r.msg_type == nldev_type(CMD_GET))
        .filter_map(|r| {
            Some((
                u32_of(&r.attrs, ATTR_DEV_INDEX)?,
                str_of(&r.attrs, ATTR_DEV_NAME)?,
            ))
        })
        .collect()
}

fn find(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<&[u8]> {
    attrs
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, v)| v.as_slice())
}

fn u8_of(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<u8> {
    find(attrs, kind)?.first().copied()
}

fn u32_of(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<u32> {
    let v = find(attrs, kind)?;
    Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
}

fn u64_of(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<u64> {
    let v = find(attrs, kind)?;
    Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?))
}

fn str_of(attrs: &[(u16, Vec<u8>)], kind: u16) -> Option<String> {
    let v = find(attrs, kind)?;
    let text = v.split(|b| *b == 0).next()?;
    Some(String::from_utf8_lossy(text).into_owned())
}

/// The kernel names a user resource's process by PID (in the asker's PID namespace) and a
/// kernel one by name; a process already dead or not visible from here gets neither.
fn owner(attrs: &[(u16, Vec<u8>)]) -> Owner {
    if let Some(pid) = u32_of(attrs, ATTR_RES_PID) {
        Owner::Pid(pid)
    } else if let Some(name) = str_of(attrs, ATTR_RES_KERN_NAME) {
        Owner::Kernel(name)
    } else {
        Owner::Unseen
    }
}

/// One table entry: the device its reply named, and its attributes.
type TableEntry = (String, Vec<(u16, Vec<u8>)>);

/// The entries of one resource table in every reply of a dump: the device each reply
/// names, and each entry's attributes. A damaged nest is an error.
fn entries(replies: &[Reply], op: u16, table: u16, entry: u16) -> Result<Vec<TableEntry>, String> {
    let mut out = Vec::new();
    for r in replies.iter().filter(|r| r.msg_type == nldev_type(op)) {
        let device = str_of(&r.attrs, ATTR_DEV_NAME)
            .or_else(|| u32_of(&r.attrs, ATTR_DEV_INDEX).map(|i| format!("device index {i}")))
            .unwrap_or_else(|| "unnamed device".to_string());
        for (_, nest) in r.attrs.iter().filter(|(k, _)| *k == table) {
            for (kind, body) in attributes(nest)? {
                if kind == entry {
                    out.push((device.clone(), attributes(&body)?));
                }
            }
        }
    }
    Ok(out)
}

/// The QPs of a `RES_QP_GET` dump. An entry without its QPN (never sent so by a kernel)
/// is left out.
pub fn qps(replies: &[Reply]) -> Result<Vec<ResQp>, String> {
    Ok(
        entries(replies, CMD_RES_QP_GET, ATTR_RES_QP, ATTR_RES_QP_ENTRY)?
            .into_iter()
            .filter_map(|(device, a)| {
                Some(ResQp {
                    port: u32_of(&a, ATTR_PORT_INDEX),
                    lqpn: u32_of(&a, ATTR_RES_LQPN)?,
                    rqpn: u32_of(&a, ATTR_RES_RQPN),
                    rq_psn: u32_of(&a, ATTR_RES_RQ_PSN),
                    sq_psn: u32_of(&a, ATTR_RES_SQ_PSN),
                    qp_type: u8_of(&a, ATTR_RES_TYPE).map(QpType::from_kernel),
                    state: u8_of(&a, ATTR_RES_STATE).map(QpState::from_kernel),
                    owner: owner(&a),
                    device,
                })
            })
            .collect(),
    )
}

/// The rdma_cm IDs of a `RES_CM_ID_GET` dump.
pub fn cm_ids(replies: &[Reply]) -> Result<Vec<CmId>, String> {
    Ok(entries(
        replies,
        CMD_RES_CM_ID_GET,
        ATTR_RES_CM_ID,
        ATTR_RES_CM_ID_ENTRY,
    )?
    .into_iter()
    .map(|(device, a)| CmId {
        device: Some(device),
        port: u32_of(&a, ATTR_PORT_INDEX),
        lqpn: u32_of(&a, ATTR_RES_LQPN),
        port_space: u32_of(&a, ATTR_RES_PS),
        state: u8_of(&a, ATTR_RES_STATE).map(CmState::from_kernel),
        src: find(&a, ATTR_RES_SRC_ADDR).and_then(sockaddr),
        dst: find(&a, ATTR_RES_DST_ADDR).and_then(sockaddr),
        id: u32_of(&a, ATTR_RES_CM_IDN),
        owner: owner(&a),
    })
    .collect())
}

/// The MRs of a `RES_MR_GET` dump.
pub fn mrs(replies: &[Reply]) -> Result<Vec<ResMr>, String> {
    Ok(
        entries(replies, CMD_RES_MR_GET, ATTR_RES_MR, ATTR_RES_MR_ENTRY)?
            .into_iter()
            .map(|(device, a)| ResMr {
                length: u64_of(&a, ATTR_RES_MRLEN),
                mrn: u32_of(&a, ATTR_RES_MRN),
                owner: owner(&a),
                device,
            })
            .collect(),
    )
}

/// The CQs of a `RES_CQ_GET` dump.
pub fn cqs(replies: &[Reply]) -> Result<Vec<Counted>, String> {
    counted(
        replies,
        CMD_RES_CQ_GET,
        ATTR_RES_CQ,
        ATTR_RES_CQ_ENTRY,
        ATTR_RES_CQN,
    )
}

/// The PDs of a `RES_PD_GET` dump.
pub fn pds(replies: &[Reply]) -> Result<Vec<Counted>, String> {
    counted(
        replies,
        CMD_RES_PD_GET,
        ATTR_RES_PD,
        ATTR_RES_PD_ENTRY,
        ATTR_RES_PDN,
    )
}

fn counted(
    replies: &[Reply],
    op: u16,
    table: u16,
    entry: u16,
    id: u16,
) -> Result<Vec<Counted>, String> {
    Ok(entries(replies, op, table, entry)?
        .into_iter()
        .map(|(device, a)| Counted {
            id: u32_of(&a, id),
            owner: owner(&a),
            device,
        })
        .collect())
}

/// A `__kernel_sockaddr_storage` as the kernel copies it: the family in host order, then
/// `sockaddr_in` (port and address in network order) or `sockaddr_in6` (port, flow info,
/// address, scope). AF_IB and anything else is not an IP address: `None`.
pub fn sockaddr(b: &[u8]) -> Option<SocketAddr> {
    const AF_INET: u16 = 2;
    const AF_INET6: u16 = 10;
    let family = u16::from_ne_bytes(b.get(..2)?.try_into().ok()?);
    let port = u16::from_be_bytes(b.get(2..4)?.try_into().ok()?);
    match family {
        AF_INET => {
            let a: [u8; 4] = b.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(a)), port))
        }
        AF_INET6 => {
            let a: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(a)), port))
        }
        _ => None,
    }
}

/// Why a dump was not answered: the kernel's errno, or a socket or parse failure.
#[derive(Debug)]
pub enum DumpError {
    Errno(i32),
    Other(String),
}

/// One dump request (`dev_index` for the resource dumps; the device dump takes none) and
/// every reply until NLMSG_DONE, over a fresh NETLINK_RDMA socket.
pub fn dump(op: u16, dev_index: Option<u32>) -> Result<Vec<Reply>, DumpError> {
    let fail = |what: &str, e: std::io::Error| {
        DumpError::Other(format!("RDMA netlink socket: {what}: {e}"))
    };
    let socket = super::kernel_socket(netlink_sys::protocols::NETLINK_RDMA, "RDMA netlink")
        .map_err(DumpError::Other)?;
    let request = match dev_index {
        Some(i) => dump_request(op, i, 1),
        None => super::rdma::request(op, true, 1),
    };
    socket.send(&request, 0).map_err(|e| fail("send", e))?;
    let mut all = Vec::new();
    loop {
        let (bytes, _) = socket.recv_from_full().map_err(|e| fail("recv", e))?;
        if bytes.is_empty() {
            return Ok(all);
        }
        match parse(&bytes).map_err(DumpError::Other)? {
            Parsed::Errno(errno) => return Err(DumpError::Errno(errno)),
            Parsed::Messages { replies, done } => {
                all.extend(replies);
                if done {
                    return Ok(all);
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A netlink attribute as the kernel lays it out: length, type, payload, padding to 4.
    pub fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(payload);
        while a.len() % 4 != 0 {
            a.push(0);
        }
        a
    }

    pub fn u32a(kind: u16, v: u32) -> Vec<u8> {
        attr(kind, &v.to_ne_bytes())
    }

    /// nla_put_u64_64bit: on a 64-bit host whose attribute would not sit 8-aligned the
    /// kernel puts an empty RDMA_NLDEV_ATTR_PAD (0) first; readers skip it by type.
    pub fn u64a(kind: u16, v: u64) -> Vec<u8> {
        let mut a = attr(0, &[]);
        a.extend(attr(kind, &v.to_ne_bytes()));
        a
    }

    pub fn nest(kind: u16, inner: &[Vec<u8>]) -> Vec<u8> {
        attr(kind, &inner.concat())
    }

    /// One dump reply: nlmsghdr (NLM_F_MULTI), the device handle, then the table.
    pub fn reply(op: u16, index: u32, name: &str, table: Vec<u8>) -> Vec<u8> {
        let mut name0 = name.as_bytes().to_vec();
        name0.push(0);
        let body = [
            u32a(ATTR_DEV_INDEX, index),
            attr(ATTR_DEV_NAME, &name0),
            table,
        ]
        .concat();
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&nldev_type(op).to_ne_bytes());
        m.extend_from_slice(&2u16.to_ne_bytes());
        m.extend_from_slice(&1u32.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend(body);
        m
    }

    pub fn done() -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&20u32.to_ne_bytes());
        m.extend_from_slice(&3u16.to_ne_bytes());
        m.extend_from_slice(&2u16.to_ne_bytes());
        m.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        m
    }

    /// An RC QP entry as fill_res_qp_entry orders it: port, LQPN, PDN, PID, then the
    /// queried RQPN, RQ PSN, SQ PSN, path migration state, type and state.
    pub fn rc_qp(lqpn: u32, rqpn: u32, psn: (u32, u32), state: u8, pid: u32) -> Vec<u8> {
        nest(
            ATTR_RES_QP_ENTRY,
            &[
                u32a(ATTR_PORT_INDEX, 1),
                u32a(ATTR_RES_LQPN, lqpn),
                u32a(ATTR_RES_PDN, 3),
                u32a(ATTR_RES_PID, pid),
                u32a(ATTR_RES_RQPN, rqpn),
                u32a(ATTR_RES_RQ_PSN, psn.0),
                u32a(ATTR_RES_SQ_PSN, psn.1),
                attr(25, &[0]),
                attr(ATTR_RES_TYPE, &[2]),
                attr(ATTR_RES_STATE, &[state]),
            ],
        )
    }

    fn replies_of(buf: &[u8]) -> Vec<Reply> {
        match parse(buf).unwrap() {
            Parsed::Messages { replies, done } => {
                assert!(done);
                replies
            }
            Parsed::Errno(e) => panic!("errno {e}"),
        }
    }

    pub fn sockaddr_in(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut s = vec![0u8; 128];
        s[..2].copy_from_slice(&2u16.to_ne_bytes());
        s[2..4].copy_from_slice(&port.to_be_bytes());
        s[4..8].copy_from_slice(&ip);
        s
    }

    #[test]
    fn dump_request_carries_the_device_index() {
        let r = dump_request(CMD_RES_QP_GET, 3, 9);
        assert_eq!(r.len(), 24);
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 24);
        // RDMA_NL_GET_TYPE(5, 10) = 0x140a
        assert_eq!(u16::from_ne_bytes([r[4], r[5]]), 0x140a);
        assert_eq!(u16::from_ne_bytes([r[6], r[7]]), 0x301);
        assert_eq!(u16::from_ne_bytes([r[18], r[19]]), ATTR_DEV_INDEX);
        assert_eq!(u32::from_ne_bytes(r[20..24].try_into().unwrap()), 3);
    }

    #[test]
    fn qp_dump_over_two_messages_with_a_kernel_qp() {
        // The kernel ends a message when it is full and goes on in the next one, each
        // with the device handle and its own RES_QP table.
        let gsi = nest(
            ATTR_RES_QP_ENTRY,
            &[
                u32a(ATTR_PORT_INDEX, 1),
                u32a(ATTR_RES_LQPN, 1),
                attr(ATTR_RES_KERN_NAME, b"ib_core\0"),
                u32a(ATTR_RES_SQ_PSN, 0),
                attr(ATTR_RES_TYPE, &[1]),
                attr(ATTR_RES_STATE, &[3]),
            ],
        );
        let mut buf = reply(
            CMD_RES_QP_GET,
            1,
            "rxe0",
            nest(ATTR_RES_QP, &[gsi, rc_qp(17, 18, (0x10, 0x20), 3, 4242)]),
        );
        buf.extend(reply(
            CMD_RES_QP_GET,
            1,
            "rxe0",
            nest(ATTR_RES_QP, &[rc_qp(19, 20, (5, 6), 6, 4243)]),
        ));
        buf.extend(done());
        let qps = qps(&replies_of(&buf)).unwrap();
        assert_eq!(qps.len(), 3);
        assert_eq!(qps[0].owner, Owner::Kernel("ib_core".into()));
        assert_eq!(qps[0].qp_type, Some(QpType::Gsi));
        assert_eq!(qps[0].rqpn, None);
        let rc = &qps[1];
        assert_eq!(
            (rc.device.as_str(), rc.port, rc.lqpn, rc.rqpn),
            ("rxe0", Some(1), 17, Some(18))
        );
        assert_eq!((rc.rq_psn, rc.sq_psn), (Some(0x10), Some(0x20)));
        assert_eq!(
            (rc.state, rc.owner.clone()),
            (Some(QpState::Rts), Owner::Pid(4242))
        );
        assert_eq!(qps[2].state, Some(QpState::Err));
    }

    #[test]
    fn a_qp_without_pid_or_name_is_unseen_and_missing_attributes_are_none() {
        let bare = nest(ATTR_RES_QP_ENTRY, &[u32a(ATTR_RES_LQPN, 40)]);
        let mut buf = reply(CMD_RES_QP_GET, 2, "rxe1", nest(ATTR_RES_QP, &[bare]));
        buf.extend(done());
        let q = &qps(&replies_of(&buf)).unwrap()[0];
        assert_eq!(q.owner, Owner::Unseen);
        assert_eq!(
            (q.port, q.state, q.qp_type, q.sq_psn),
            (None, None, None, None)
        );
    }

    #[test]
    fn cm_ids_carry_both_addresses() {
        let mut v6 = vec![0u8; 128];
        v6[..2].copy_from_slice(&10u16.to_ne_bytes());
        v6[2..4].copy_from_slice(&18515u16.to_be_bytes());
        v6[8..24].copy_from_slice(&"fe80::1".parse::<Ipv6Addr>().unwrap().octets());
        let id = nest(
            ATTR_RES_CM_ID_ENTRY,
            &[
                u32a(ATTR_PORT_INDEX, 1),
                u32a(ATTR_RES_LQPN, 17),
                attr(ATTR_RES_TYPE, &[2]),
                u32a(ATTR_RES_PS, 0x106),
                attr(ATTR_RES_STATE, &[5]),
                attr(ATTR_RES_SRC_ADDR, &sockaddr_in([192, 168, 77, 1], 18515)),
                attr(ATTR_RES_DST_ADDR, &v6),
                u32a(ATTR_RES_CM_IDN, 4),
                u32a(ATTR_RES_PID, 77),
            ],
        );
        // A listener: no QP, no destination.
        let listen = nest(
            ATTR_RES_CM_ID_ENTRY,
            &[
                u32a(ATTR_RES_PS, 0x106),
                attr(ATTR_RES_STATE, &[8]),
                attr(ATTR_RES_SRC_ADDR, &sockaddr_in([0, 0, 0, 0], 7471)),
                u32a(ATTR_RES_CM_IDN, 5),
                u32a(ATTR_RES_PID, 78),
            ],
        );
        let mut buf = reply(
            CMD_RES_CM_ID_GET,
            1,
            "rxe0",
            nest(ATTR_RES_CM_ID, &[id, listen]),
        );
        buf.extend(done());
        let ids = cm_ids(&replies_of(&buf)).unwrap();
        assert_eq!(ids[0].src, Some("192.168.77.1:18515".parse().unwrap()));
        assert_eq!(ids[0].dst, Some("[fe80::1]:18515".parse().unwrap()));
        assert_eq!(
            (ids[0].lqpn, ids[0].state),
            (Some(17), Some(CmState::Connect))
        );
        assert_eq!((ids[0].port_space, ids[0].id), (Some(0x106), Some(4)));
        assert_eq!((ids[1].lqpn, ids[1].dst), (None, None));
        assert_eq!(ids[1].state, Some(CmState::Listen));
        // AF_IB (27) is no IP address; a short one is nothing.
        let mut ib = vec![0u8; 48];
        ib[..2].copy_from_slice(&27u16.to_ne_bytes());
        assert_eq!(sockaddr(&ib), None);
        assert_eq!(sockaddr(&[2, 0, 1]), None);
    }

    #[test]
    fn mrs_cqs_and_pds_with_their_padding() {
        let mr = nest(
            ATTR_RES_MR_ENTRY,
            &[
                u64a(ATTR_RES_MRLEN, 1 << 20),
                u32a(ATTR_RES_MRN, 9),
                u32a(ATTR_RES_PDN, 3),
                u32a(ATTR_RES_PID, 77),
            ],
        );
        let mut buf = reply(CMD_RES_MR_GET, 1, "rxe0", nest(ATTR_RES_MR, &[mr]));
        buf.extend(done());
        let m = &mrs(&replies_of(&buf)).unwrap()[0];
        assert_eq!(
            (m.length, m.mrn, m.owner.clone()),
            (Some(1 << 20), Some(9), Owner::Pid(77))
        );
        let cq = nest(
            ATTR_RES_CQ_ENTRY,
            &[
                u32a(37, 256),
                u64a(38, 1),
                attr(84, &[0]),
                u32a(ATTR_RES_CQN, 2),
                u32a(ATTR_RES_PID, 77),
            ],
        );
        let mut buf = reply(CMD_RES_CQ_GET, 1, "rxe0", nest(ATTR_RES_CQ, &[cq]));
        buf.extend(done());
        assert_eq!(cqs(&replies_of(&buf)).unwrap()[0].id, Some(2));
        let pd = nest(
            ATTR_RES_PD_ENTRY,
            &[
                u64a(38, 2),
                u32a(ATTR_RES_PDN, 3),
                attr(ATTR_RES_KERN_NAME, b"rdma_cm\0"),
            ],
        );
        let mut buf = reply(CMD_RES_PD_GET, 1, "rxe0", nest(ATTR_RES_PD, &[pd]));
        buf.extend(done());
        let p = &pds(&replies_of(&buf)).unwrap()[0];
        assert_eq!(
            (p.id, p.owner.clone()),
            (Some(3), Owner::Kernel("rdma_cm".into()))
        );
        // A QP dump's replies hold no MR.
        assert!(mrs(&replies_of(
            &[
                reply(CMD_RES_QP_GET, 1, "rxe0", nest(ATTR_RES_QP, &[])),
                done()
            ]
            .concat()
        ))
        .unwrap()
        .is_empty());
    }

    #[test]
    fn device_dump_gives_index_and_name() {
        let mut buf = reply(CMD_GET, 1, "rxe0", Vec::new());
        buf.extend(reply(CMD_GET, 7, "mlx5_1", Vec::new()));
        buf.extend(done());
        assert_eq!(
            devices(&replies_of(&buf)),
            [(1, "rxe0".to_string()), (7, "mlx5_1".to_string())]
        );
    }

    /// Any damage to a reply (a flipped byte, a cut, a length that lies) gives an error or
    /// fewer entries, never a panic: thousands of mutations of a real-shaped dump.
    #[test]
    fn damaged_replies_never_panic() {
        let mut cm = nest(
            ATTR_RES_CM_ID,
            &[nest(
                ATTR_RES_CM_ID_ENTRY,
                &[
                    attr(ATTR_RES_SRC_ADDR, &sockaddr_in([10, 0, 0, 1], 1)),
                    attr(ATTR_RES_DST_ADDR, &sockaddr_in([10, 0, 0, 2], 2)),
                    u32a(ATTR_RES_PID, 5),
                ],
            )],
        );
        cm = reply(CMD_RES_CM_ID_GET, 1, "rxe0", cm);
        let base = [
            reply(
                CMD_RES_QP_GET,
                1,
                "rxe0",
                nest(
                    ATTR_RES_QP,
                    &[rc_qp(17, 18, (1, 2), 3, 9), rc_qp(19, 20, (3, 4), 6, 9)],
                ),
            ),
            cm,
            reply(
                CMD_RES_MR_GET,
                1,
                "rxe0",
                nest(
                    ATTR_RES_MR,
                    &[nest(ATTR_RES_MR_ENTRY, &[u64a(ATTR_RES_MRLEN, 4096)])],
                ),
            ),
            done(),
        ]
        .concat();
        // A small xorshift: the same cases on every run, no dependency.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut parsed = 0;
        for case in 0..20_000 {
            let mut buf = base.clone();
            let r = next() as usize;
            match case % 4 {
                0 => buf.truncate(r % buf.len()),
                1 => {
                    for _ in 0..1 + r % 4 {
                        let at = next() as usize % buf.len();
                        buf[at] = next() as u8;
                    }
                }
                2 => {
                    // A length field that lies: at an attribute-aligned offset.
                    let at = (next() as usize % (buf.len() / 4)) * 4;
                    buf[at..at + 2].copy_from_slice(&(next() as u16).to_ne_bytes());
                }
                _ => {
                    let at = next() as usize % buf.len();
                    buf.insert(at, next() as u8);
                }
            }
            if let Ok(Parsed::Messages { replies, .. }) = parse(&buf) {
                parsed += 1;
                let _ = qps(&replies);
                let _ = cm_ids(&replies);
                let _ = mrs(&replies);
                let _ = cqs(&replies);
                let _ = pds(&replies);
                let _ = devices(&replies);
            }
        }
        // The mutations reach the entry parsers, not only the framing.
        assert!(parsed > 2_000, "{parsed}");
    }
}
