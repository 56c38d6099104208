//! The RDMA netlink (NETLINK_RDMA, the nldev client `rdma` of iproute2 speaks): the
//! subsystem's network-namespace mode (`rdma system show`) and the devices this network
//! namespace sees (`rdma dev show`). Requests are built and replies parsed by pure
//! functions, tested on bytes laid out as the kernel writes them; `rdma_namespace` alone
//! touches a socket.

use crate::model::container::{NetnsMode, RdmaNamespace};

/// include/uapi/rdma/rdma_netlink.h: the nldev client and its commands and attributes.
const RDMA_NL_NLDEV: u16 = 5;
const RDMA_NLDEV_CMD_GET: u16 = 1;
const RDMA_NLDEV_CMD_SYS_GET: u16 = 6;
const RDMA_NLDEV_ATTR_DEV_NAME: u16 = 2;
const RDMA_NLDEV_SYS_ATTR_NETNS_MODE: u16 = 66;

const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const HEADER: usize = 16;

/// RDMA_NL_GET_TYPE(client, op): the client in the bits above the tenth.
fn nldev_type(op: u16) -> u16 {
    (RDMA_NL_NLDEV << 10) + op
}

/// A bare nldev request: the netlink header and no attribute (neither command needs one).
pub fn request(op: u16, dump: bool, seq: u32) -> Vec<u8> {
    let flags = NLM_F_REQUEST | if dump { NLM_F_DUMP } else { 0 };
    message(nldev_type(op), flags, seq, &[])
}

/// A netlink message to the kernel: the header (length, type, flags, sequence, port 0)
/// and `body`, whatever the family puts there (NETLINK_NETFILTER: `nfgenmsg` and attributes).
pub(super) fn message(msg_type: u16, flags: u16, seq: u32, body: &[u8]) -> Vec<u8> {
    let len = HEADER + body.len();
    let mut msg = Vec::with_capacity(len);
    msg.extend_from_slice(&(len as u32).to_ne_bytes());
    msg.extend_from_slice(&msg_type.to_ne_bytes());
    msg.extend_from_slice(&flags.to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(body);
    msg
}

/// One reply message: its type and its attributes (type, payload).
#[derive(Debug, PartialEq, Eq)]
pub struct Reply {
    pub msg_type: u16,
    /// The family's fixed header before the attributes (nfnetlink's `nfgenmsg`); empty for
    /// the RDMA netlink, which has none.
    pub fixed: Vec<u8>,
    pub attrs: Vec<(u16, Vec<u8>)>,
}

/// What a buffer of replies holds: the messages, whether NLMSG_DONE ended them, or the
/// kernel's errno.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Messages { replies: Vec<Reply>, done: bool },
    Errno(i32),
}

/// Split a buffer into netlink messages; a truncated message or attribute ends the walk
/// with an error, never a panic.
pub fn parse(buf: &[u8]) -> Result<Parsed, String> {
    parse_with_header(buf, 0)
}

/// `parse` for a netlink family whose messages carry `fixed` bytes before the attributes.
pub(super) fn parse_with_header(buf: &[u8], fixed: usize) -> Result<Parsed, String> {
    let mut replies = Vec::new();
    let mut at = 0;
    while at + HEADER <= buf.len() {
        let len = u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap()) as usize;
        let msg_type = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
        if len < HEADER || at + len > buf.len() {
            return Err(format!(
                "message of {len} bytes at offset {at} in {} bytes",
                buf.len()
            ));
        }
        let body = &buf[at + HEADER..at + len];
        match msg_type {
            NLMSG_DONE => {
                return Ok(Parsed::Messages {
                    replies,
                    done: true,
                })
            }
            NLMSG_ERROR => {
                let errno = body
                    .get(..4)
                    .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
                    .ok_or("NLMSG_ERROR without its errno")?;
                // An ack (errno 0) ends a request without NLM_F_DUMP.
                if errno == 0 {
                    return Ok(Parsed::Messages {
                        replies,
                        done: true,
                    });
                }
                return Ok(Parsed::Errno(-errno));
            }
            _ => {
                let head = body.get(..fixed).ok_or_else(|| {
                    format!("message of {len} bytes without its {fixed}-byte header")
                })?;
                replies.push(Reply {
                    msg_type,
                    fixed: head.to_vec(),
                    attrs: attributes(&body[fixed..])?,
                })
            }
        }
        at += (len + 3) & !3;
    }
    Ok(Parsed::Messages {
        replies,
        done: false,
    })
}

pub(super) fn attributes(mut body: &[u8]) -> Result<Vec<(u16, Vec<u8>)>, String> {
    let mut attrs = Vec::new();
    while body.len() >= 4 {
        let len = u16::from_ne_bytes([body[0], body[1]]) as usize;
        // NLA_F_NESTED and NLA_F_NET_BYTEORDER sit in the top two bits of the type.
        let kind = u16::from_ne_bytes([body[2], body[3]]) & 0x3fff;
        if len < 4 || len > body.len() {
            return Err(format!("attribute {kind} of {len} bytes in {}", body.len()));
        }
        attrs.push((kind, body[4..len].to_vec()));
        body = &body[((len + 3) & !3).min(body.len())..];
    }
    Ok(attrs)
}

/// RDMA_NLDEV_SYS_ATTR_NETNS_MODE of a SYS_GET reply: 1 shared, 0 exclusive.
pub fn netns_mode(replies: &[Reply]) -> Option<NetnsMode> {
    replies
        .iter()
        .filter(|r| r.msg_type == nldev_type(RDMA_NLDEV_CMD_SYS_GET))
        .flat_map(|r| &r.attrs)
        .find(|(kind, _)| *kind == RDMA_NLDEV_SYS_ATTR_NETNS_MODE)
        .and_then(|(_, v)| v.first())
        .map(|&mode| {
            if mode == 0 {
                NetnsMode::Exclusive
            } else {
                NetnsMode::Shared
            }
        })
}

/// The device names of a GET dump, in the kernel's order.
pub fn device_names(replies: &[Reply]) -> Vec<String> {
    replies
        .iter()
        .filter(|r| r.msg_type == nldev_type(RDMA_NLDEV_CMD_GET))
        .filter_map(|r| {
            let (_, name) = r
                .attrs
                .iter()
                .find(|(kind, _)| *kind == RDMA_NLDEV_ATTR_DEV_NAME)?;
            let name = name.split(|b| *b == 0).next()?;
            Some(String::from_utf8_lossy(name).into_owned())
        })
        .collect()
}

/// One request and every reply to it, over a fresh NETLINK_RDMA socket.
fn query(op: u16, dump: bool) -> Result<Result<Vec<Reply>, i32>, String> {
    let fail = |what: &str, e: std::io::Error| format!("RDMA netlink socket: {what}: {e}");
    let socket = super::kernel_socket(netlink_sys::protocols::NETLINK_RDMA, "RDMA netlink")?;
    socket
        .send(&request(op, dump, 1), 0)
        .map_err(|e| fail("send", e))?;
    let mut all = Vec::new();
    loop {
        let (bytes, _) = socket.recv_from_full().map_err(|e| fail("recv", e))?;
        if bytes.is_empty() {
            return Ok(Ok(all));
        }
        match parse(&bytes)? {
            Parsed::Errno(errno) => return Ok(Err(errno)),
            Parsed::Messages { replies, done } => {
                all.extend(replies);
                // The kernel answers SYS_GET with one message and no ack (none was asked).
                if done || !dump {
                    return Ok(Ok(all));
                }
            }
        }
    }
}

/// The devices the kernel's RDMA device dump lists (`rdma dev`), asked in a thread of its
/// own so that a kernel busy removing a device cannot hold the caller past `limit` (the
/// request runs in the sender's context: a handler that blocks blocks `send`).
pub fn device_names_within(limit: std::time::Duration) -> Result<Vec<String>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(query(RDMA_NLDEV_CMD_GET, true));
    });
    match rx.recv_timeout(limit) {
        Ok(answer) => answer?.map(|r| device_names(&r)).map_err(|errno| {
            format!(
                "the kernel answered the RDMA device dump with {}",
                crate::model::errno::errno_text(errno)
            )
        }),
        Err(_) => Err(format!(
            "the RDMA netlink device dump did not answer within {} ms",
            limit.as_millis()
        )),
    }
}

/// The subsystem's mode and the devices this network namespace sees. A kernel without
/// SYS_GET (before 5.2) answers EOPNOTSUPP or EINVAL: the mode is then unknown.
pub fn rdma_namespace() -> Result<RdmaNamespace, String> {
    let mode = match query(RDMA_NLDEV_CMD_SYS_GET, false)? {
        Ok(replies) => netns_mode(&replies),
        Err(_) => None,
    };
    let devices = query(RDMA_NLDEV_CMD_GET, true)?
        .map(|r| device_names(&r))
        .map_err(|errno| {
            format!(
                "the kernel answered the RDMA device dump with {}",
                crate::model::errno::errno_text(errno)
            )
        })?;
    Ok(RdmaNamespace { mode, devices })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(msg_type: u16, flags: u16, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (kind, payload) in attrs {
            body.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
            body.extend_from_slice(&kind.to_ne_bytes());
            body.extend_from_slice(payload);
            while body.len() % 4 != 0 {
                body.push(0);
            }
        }
        let mut msg = Vec::new();
        msg.extend_from_slice(&((HEADER + body.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&msg_type.to_ne_bytes());
        msg.extend_from_slice(&flags.to_ne_bytes());
        msg.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        msg.extend_from_slice(&body);
        msg
    }

    #[test]
    fn requests_are_bare_nldev_headers() {
        let sys = request(RDMA_NLDEV_CMD_SYS_GET, false, 7);
        assert_eq!(sys.len(), 16);
        assert_eq!(u32::from_ne_bytes(sys[0..4].try_into().unwrap()), 16);
        // RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET) = 5 << 10 | 6 = 0x1406.
        assert_eq!(u16::from_ne_bytes([sys[4], sys[5]]), 0x1406);
        assert_eq!(u16::from_ne_bytes([sys[6], sys[7]]), NLM_F_REQUEST);
        assert_eq!(u32::from_ne_bytes(sys[8..12].try_into().unwrap()), 7);
        let dump = request(RDMA_NLDEV_CMD_GET, true, 1);
        assert_eq!(u16::from_ne_bytes([dump[4], dump[5]]), 0x1401);
        assert_eq!(u16::from_ne_bytes([dump[6], dump[7]]), 0x301);
    }

    #[test]
    fn sys_get_reply_says_the_mode() {
        // The kernel's SYS_GET reply: the mode, then RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK (u8).
        let shared = message(0x1406, 0, &[(66, &[1]), (73, &[1])]);
        let Parsed::Messages { replies, .. } = parse(&shared).unwrap() else {
            panic!("no messages")
        };
        assert_eq!(netns_mode(&replies), Some(NetnsMode::Shared));
        let exclusive = message(0x1406, 0, &[(66, &[0])]);
        let Parsed::Messages { replies, .. } = parse(&exclusive).unwrap() else {
            panic!("no messages")
        };
        assert_eq!(netns_mode(&replies), Some(NetnsMode::Exclusive));
        // A reply of another command carries no mode.
        assert_eq!(
            netns_mode(&[Reply {
                fixed: vec![],
                msg_type: 0x1401,
                attrs: vec![(66, vec![1])]
            }]),
            None
        );
    }

    #[test]
    fn device_dump_names_and_done() {
        let mut buf = message(0x1401, 2, &[(1, &1u32.to_ne_bytes()), (2, b"rxe0\0")]);
        buf.extend(message(
            0x1401,
            2,
            &[(1, &2u32.to_ne_bytes()), (2, b"mlx5_10\0")],
        ));
        buf.extend(message(NLMSG_DONE, 2, &[(0, &0u32.to_ne_bytes())]));
        let Parsed::Messages { replies, done } = parse(&buf).unwrap() else {
            panic!("no messages")
        };
        assert!(done);
        assert_eq!(device_names(&replies), ["rxe0", "mlx5_10"]);
        // An empty namespace (exclusive mode, nothing moved in): only NLMSG_DONE.
        let empty = message(NLMSG_DONE, 2, &[(0, &0u32.to_ne_bytes())]);
        assert_eq!(
            parse(&empty).unwrap(),
            Parsed::Messages {
                replies: vec![],
                done: true
            }
        );
    }

    #[test]
    fn errors_and_truncation() {
        // NLMSG_ERROR with -EOPNOTSUPP (95), then the request's header echoed.
        let mut err = message(NLMSG_ERROR, 0, &[]);
        err.extend_from_slice(&(-95i32).to_ne_bytes());
        err.extend_from_slice(&request(6, false, 1));
        let len = err.len() as u32;
        err[0..4].copy_from_slice(&len.to_ne_bytes());
        assert_eq!(parse(&err).unwrap(), Parsed::Errno(95));
        let whole = message(0x1406, 0, &[(66, &[1])]);
        assert!(parse(&whole[..whole.len() - 4]).is_err());
        let mut bad_attr = whole.clone();
        bad_attr[16..18].copy_from_slice(&200u16.to_ne_bytes());
        assert!(parse(&bad_attr).is_err());
    }
}
