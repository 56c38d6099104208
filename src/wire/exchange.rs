//! The out-of-band exchange over TCP that tells each end the other's QP number, PSN, GID,
//! MTU and buffer, in two wire formats:
//!
//! - native: `RDMX`, version, flags, a big-endian u16 payload length, then a fixed binary
//!   payload. The length is checked against a cap before anything is read, so a peer can
//!   neither make us allocate nor wait for more than a few bytes.
//! - ibv_rc_pingpong's: `"%04x:%06x:%06x:%s"` (LID:QPN:PSN:32 hex digits of GID) plus its NUL,
//!   52 bytes; the client sends first, the server answers, the client ends with `"done\0"`.
//!
//! A server tells the two apart by the first byte: native starts with `R`, which is never a
//! hex digit. Every read and write has a deadline.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::model::counter::WireDelta;
use crate::model::device::{GidType, LinkLayer};
use crate::model::failure::{
    Cause, Endpoint, Failure, FailureContext, Mismatch, Ops, PeerNotice, Step,
};
use crate::model::gid::{Gid, GidKind};

pub const NATIVE_MAGIC: [u8; 4] = *b"RDMX";
/// Version 2 added the run's length (`--duration`), `--lat` and the server's "I follow".
pub const NATIVE_VERSION: u8 = 2;
/// Payload length of version 2.
pub const NATIVE_LEN: usize = 68;
/// Larger announced lengths are refused before reading them.
pub const NATIVE_MAX_LEN: usize = 1024;
/// `sizeof "0000:000000:000000:00000000000000000000000000000000"` in rc_pingpong.c.
pub const RC_PINGPONG_LEN: usize = 52;
/// What the rc_pingpong client writes after reading the server's address.
pub const RC_PINGPONG_DONE: &[u8; 5] = b"done\0";

const SYNC_MAGIC: [u8; 4] = *b"RDMS";
/// A failing end's last word: its failure and explanation (length-prefixed JSON), so the
/// other end prints the cause instead of "the peer closed the connection".
const NOTICE_MAGIC: [u8; 4] = *b"RDMF";
const FRAME_MAX_LEN: usize = 64 * 1024;
/// Each end's port counter changes over the run, sent after the last sync.
const COUNTERS_MAGIC: [u8; 4] = *b"RDMC";

/// A JSON frame: the magic, the length (4 bytes, big-endian), the JSON. A body over the
/// limit is not sent at all: cut short it would not parse.
fn json_frame(magic: [u8; 4], json: serde_json::Result<Vec<u8>>) -> Option<Vec<u8>> {
    let json = json.ok().filter(|j| j.len() <= FRAME_MAX_LEN)?;
    let mut frame = Vec::with_capacity(8 + json.len());
    frame.extend_from_slice(&magic);
    frame.extend_from_slice(&(json.len() as u32).to_be_bytes());
    frame.extend_from_slice(&json);
    Some(frame)
}

/// The native message: one endpoint plus the run's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeMsg {
    pub endpoint: Endpoint,
    pub ops: Ops,
    pub size: u32,
    /// 0 with a `duration_ms`: the run lasts that long instead.
    pub iters: u32,
    pub duration_ms: u32,
    /// WRITE and READ one at a time, for their latency.
    pub lat: bool,
    /// A server given none of -n, --duration, --lat: it takes the client's.
    pub follows: bool,
    /// -m; 0 when not given.
    pub mtu: u16,
}

const FLAG_LAT: u8 = 1;
const FLAG_FOLLOWS: u8 = 2;

impl NativeMsg {
    /// How long the run is, as the flags that set it: "-n 1000", "--duration 10 --lat".
    pub fn length(&self) -> String {
        let mut s = if self.duration_ms > 0 {
            format!("--duration {}", f64::from(self.duration_ms) / 1000.0)
        } else {
            format!("-n {}", self.iters)
        };
        if self.lat {
            s.push_str(" --lat");
        }
        s
    }
}

/// ibv_rc_pingpong's `struct pingpong_dest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcDest {
    pub lid: u16,
    pub qpn: u32,
    pub psn: u32,
    pub gid: Gid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hello {
    Native(NativeMsg),
    /// A stock ibv_rc_pingpong (or `--compat rc_pingpong`).
    RcPingpong(RcDest),
    /// An rdmactl client's opening: ibv_rc_pingpong's message, offering the native exchange.
    RdmactlOffer(RcDest),
}

/// Why bytes from the peer are not a valid message. The text quotes what came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

fn perr(text: impl Into<String>) -> ParseError {
    ParseError(text.into())
}

/// Printable excerpt of untrusted bytes for error messages.
pub fn quote(bytes: &[u8]) -> String {
    let shown: String = bytes
        .iter()
        .take(24)
        .flat_map(|b| std::ascii::escape_default(*b))
        .map(char::from)
        .collect();
    if bytes.len() > 24 {
        format!("\"{shown}\"... ({} bytes)", bytes.len())
    } else {
        format!("\"{shown}\"")
    }
}

// ---------------------------------------------------------------------------------------
// Native format

fn gid_type_code(t: &Option<GidType>) -> u8 {
    match t {
        Some(GidType::Ib) => 0,
        Some(GidType::RoceV1) => 1,
        Some(GidType::RoceV2) => 2,
        _ => 255,
    }
}

fn link_layer_code(l: &LinkLayer) -> u8 {
    match l {
        LinkLayer::InfiniBand => 1,
        LinkLayer::Ethernet => 2,
        LinkLayer::Other(_) => 0,
    }
}

pub fn encode_native(msg: &NativeMsg) -> Vec<u8> {
    let e = &msg.endpoint;
    let mut out = Vec::with_capacity(8 + NATIVE_LEN);
    out.extend_from_slice(&NATIVE_MAGIC);
    out.push(NATIVE_VERSION);
    out.push(0);
    out.extend_from_slice(&(NATIVE_LEN as u16).to_be_bytes());
    out.extend_from_slice(&e.lid.to_be_bytes());
    out.extend_from_slice(&e.qpn.to_be_bytes());
    out.extend_from_slice(&e.psn.to_be_bytes());
    out.extend_from_slice(&e.gid.0);
    out.extend_from_slice(&e.gid_index.unwrap_or(u32::MAX).to_be_bytes());
    out.push(gid_type_code(&e.gid_type));
    out.push(link_layer_code(&e.link_layer));
    out.extend_from_slice(&e.active_mtu.to_be_bytes());
    out.extend_from_slice(&e.rkey.to_be_bytes());
    out.extend_from_slice(&e.addr.to_be_bytes());
    out.extend_from_slice(&e.len.to_be_bytes());
    out.push(msg.ops.bits());
    out.extend_from_slice(&msg.size.to_be_bytes());
    out.extend_from_slice(&msg.iters.to_be_bytes());
    out.extend_from_slice(&msg.duration_ms.to_be_bytes());
    let flags = if msg.lat { FLAG_LAT } else { 0 } | if msg.follows { FLAG_FOLLOWS } else { 0 };
    out.push(flags);
    out.extend_from_slice(&msg.mtu.to_be_bytes());
    debug_assert_eq!(out.len(), 8 + NATIVE_LEN);
    out
}

/// Checks the 8-byte header and returns the payload length to read.
pub fn native_header(header: &[u8]) -> Result<usize, ParseError> {
    if header.len() != 8 || header[..4] != NATIVE_MAGIC {
        return Err(perr(format!(
            "not an rdmactl exchange header: {}",
            quote(header)
        )));
    }
    let version = header[4];
    if version != NATIVE_VERSION {
        return Err(perr(format!(
            "the peer speaks rdmactl exchange version {version}, this rdmactl speaks {NATIVE_VERSION}; \
             run the same rdmactl version on both ends"
        )));
    }
    if header[5] != 0 {
        return Err(perr(format!(
            "unknown flags 0x{:02x} in the rdmactl exchange header",
            header[5]
        )));
    }
    let len = u16::from_be_bytes([header[6], header[7]]) as usize;
    if len > NATIVE_MAX_LEN {
        return Err(perr(format!(
            "announced payload of {len} bytes exceeds the limit of {NATIVE_MAX_LEN}"
        )));
    }
    if len != NATIVE_LEN {
        return Err(perr(format!(
            "version 2 payload must be {NATIVE_LEN} bytes, the peer announced {len}"
        )));
    }
    Ok(len)
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        head.try_into().expect("split_at gives N bytes")
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take())
    }
}

pub fn decode_native_payload(payload: &[u8]) -> Result<NativeMsg, ParseError> {
    if payload.len() != NATIVE_LEN {
        return Err(perr(format!(
            "payload is {} bytes, expected {NATIVE_LEN}",
            payload.len()
        )));
    }
    let mut c = Cursor(payload);
    let lid = c.u16();
    let qpn = c.u32();
    let psn = c.u32();
    let gid = Gid(c.take::<16>());
    let gid_index = c.u32();
    let gid_type = c.u8();
    let link_layer = c.u8();
    let active_mtu = c.u32();
    let rkey = c.u32();
    let addr = c.u64();
    let len = c.u32();
    let ops = c.u8();
    let size = c.u32();
    let iters = c.u32();
    let duration_ms = c.u32();
    let flags = c.u8();
    let mtu = c.u16();
    if !matches!(mtu, 0 | 256 | 512 | 1024 | 2048 | 4096) {
        return Err(perr(format!(
            "requested MTU {mtu} is not 0 (none) or a path MTU"
        )));
    }
    if flags & !(FLAG_LAT | FLAG_FOLLOWS) != 0 {
        return Err(perr(format!("unknown run flags 0x{flags:02x}")));
    }
    if qpn > 0xff_ffff || qpn == 0 {
        return Err(perr(format!("QPN 0x{qpn:x} is not a 24-bit QP number")));
    }
    if psn > 0xff_ffff {
        return Err(perr(format!("PSN 0x{psn:x} is not 24 bits")));
    }
    let gid_type = match gid_type {
        0 => Some(GidType::Ib),
        1 => Some(GidType::RoceV1),
        2 => Some(GidType::RoceV2),
        255 => None,
        other => return Err(perr(format!("unknown GID type code {other}"))),
    };
    let link_layer = match link_layer {
        1 => LinkLayer::InfiniBand,
        2 => LinkLayer::Ethernet,
        other => return Err(perr(format!("unknown link layer code {other}"))),
    };
    if !matches!(active_mtu, 256 | 512 | 1024 | 2048 | 4096) {
        return Err(perr(format!(
            "active MTU {active_mtu} is not one of 256, 512, 1024, 2048, 4096"
        )));
    }
    let ops =
        Ops::from_bits(ops).ok_or_else(|| perr(format!("operation set 0x{ops:02x} is invalid")))?;
    if size == 0 || (iters == 0) == (duration_ms == 0) {
        return Err(perr(format!(
            "size {size} must be positive, and exactly one of iterations ({iters}) and duration ({duration_ms} ms)"
        )));
    }
    if u64::from(len) < u64::from(size) {
        return Err(perr(format!(
            "buffer of {len} bytes is smaller than the message size {size}"
        )));
    }
    let endpoint = Endpoint {
        lid,
        qpn,
        psn,
        gid,
        gid_index: (gid_index != u32::MAX).then_some(gid_index),
        gid_type,
        link_layer,
        active_mtu,
        rkey,
        addr,
        len,
    };
    Ok(NativeMsg {
        endpoint,
        ops,
        size,
        iters,
        duration_ms,
        lat: flags & FLAG_LAT != 0,
        follows: flags & FLAG_FOLLOWS != 0,
        mtu,
    })
}

// ---------------------------------------------------------------------------------------
// ibv_rc_pingpong format

pub fn encode_rc_pingpong(dest: &RcDest) -> [u8; RC_PINGPONG_LEN] {
    let text = format!(
        "{:04x}:{:06x}:{:06x}:{}",
        dest.lid,
        dest.qpn & 0xff_ffff,
        dest.psn & 0xff_ffff,
        dest.gid.wire_form()
    );
    let mut out = [0u8; RC_PINGPONG_LEN];
    out[..text.len()].copy_from_slice(text.as_bytes());
    out
}

/// rdmactl's client opens with ibv_rc_pingpong's message, so a stock server works with no
/// flag, and marks it as an offer to switch to the native exchange: the PSN field is a space
/// and five hex digits. A stock server's sscanf("%x") skips the space and reads the same
/// PSN (rdmactl's PSNs fit in 20 bits); an rdmactl server sees the mark and answers natively.
pub fn encode_rdmactl_offer(dest: &RcDest) -> [u8; RC_PINGPONG_LEN] {
    let text = format!(
        "{:04x}:{:06x}: {:05x}:{}",
        dest.lid,
        dest.qpn & 0xff_ffff,
        dest.psn & 0xf_ffff,
        dest.gid.wire_form()
    );
    let mut out = [0u8; RC_PINGPONG_LEN];
    out[..text.len()].copy_from_slice(text.as_bytes());
    out
}

/// Strict: exactly `LLLL:QQQQQQ:PPPPPP:` + 32 hex digits + NUL, or rdmactl's offer (PSN
/// ` PPPPP`). sscanf would accept more, but nothing else is what the tools send.
#[cfg(test)]
pub fn parse_rc_pingpong(bytes: &[u8]) -> Result<RcDest, ParseError> {
    parse_rc_message(bytes).map(|(dest, _)| dest)
}

/// The message and whether it is rdmactl's offer.
fn parse_rc_message(bytes: &[u8]) -> Result<(RcDest, bool), ParseError> {
    let bad = |why: &str| {
        perr(format!(
            "{why}; expected ibv_rc_pingpong's 'LLLL:QQQQQQ:PPPPPP:<32 hex GID>\\0', got {}",
            quote(bytes)
        ))
    };
    if bytes.len() != RC_PINGPONG_LEN {
        return Err(bad(&format!(
            "{} bytes instead of {RC_PINGPONG_LEN}",
            bytes.len()
        )));
    }
    if bytes[51] != 0 {
        return Err(bad("no terminating NUL"));
    }
    let text = std::str::from_utf8(&bytes[..51]).map_err(|_| bad("not ASCII"))?;
    let mut fields: Vec<&str> = text.split(':').collect();
    let offer = fields.get(2).is_some_and(|psn| {
        psn.len() == 6 && psn.starts_with(' ') && psn[1..].bytes().all(|b| b.is_ascii_hexdigit())
    });
    if offer {
        fields[2] = &fields[2][1..];
    }
    let widths = [4, 6, if offer { 5 } else { 6 }, 32];
    if fields.len() != 4
        || fields
            .iter()
            .zip(widths)
            .any(|(f, w)| f.len() != w || !f.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(bad("malformed fields"));
    }
    let hex = |s: &str| u32::from_str_radix(s, 16).map_err(|_| bad("malformed number"));
    let gid = Gid::parse(fields[3]).map_err(|_| bad("malformed GID"))?;
    let dest = RcDest {
        lid: hex(fields[0])? as u16,
        qpn: hex(fields[1])?,
        psn: hex(fields[2])?,
        gid,
    };
    Ok((dest, offer))
}

/// Parses a complete first message in either format (what the server would receive).
pub fn parse_hello(bytes: &[u8]) -> Result<Hello, ParseError> {
    match bytes.first() {
        Some(b'R') => {
            if bytes.len() < 8 {
                return Err(perr(format!("truncated rdmactl header: {}", quote(bytes))));
            }
            let len = native_header(&bytes[..8])?;
            if bytes.len() != 8 + len {
                return Err(perr(format!(
                    "message is {} bytes, header announced {}",
                    bytes.len(),
                    8 + len
                )));
            }
            decode_native_payload(&bytes[8..]).map(Hello::Native)
        }
        Some(b) if b.is_ascii_hexdigit() => parse_rc_message(bytes).map(|(dest, offer)| {
            if offer {
                Hello::RdmactlOffer(dest)
            } else {
                Hello::RcPingpong(dest)
            }
        }),
        _ => Err(garbage(bytes)),
    }
}

fn garbage(bytes: &[u8]) -> ParseError {
    perr(format!(
        "the peer sent {}, which is neither an rdmactl exchange nor ibv_rc_pingpong's \
         'LID:QPN:PSN:GID' (is something else listening on this port, or a port scanner?)",
        quote(bytes)
    ))
}

// ---------------------------------------------------------------------------------------
// What both ends compare before touching the QP

/// Everything that would make RTR fail or the traffic hang, from the two messages alone.
pub fn compare(local: &NativeMsg, remote: &NativeMsg) -> Vec<Mismatch> {
    let (l, r) = (&local.endpoint, &remote.endpoint);
    let mut out = Vec::new();
    if l.link_layer != r.link_layer {
        out.push(Mismatch::LinkLayer {
            local: l.link_layer.clone(),
            remote: r.link_layer.clone(),
        });
    }
    let ib = |e: &Endpoint| e.link_layer == LinkLayer::InfiniBand;
    if ib(l) && l.lid == 0 || ib(r) && r.lid == 0 {
        out.push(Mismatch::LidZero {
            local: ib(l) && l.lid == 0,
            remote: ib(r) && r.lid == 0,
        });
    }
    let roce = |e: &Endpoint| e.link_layer == LinkLayer::Ethernet;
    let (l_nogid, r_nogid) = (
        roce(l) && l.gid_index.is_none(),
        roce(r) && r.gid_index.is_none(),
    );
    if l_nogid || r_nogid {
        out.push(Mismatch::NoGid {
            local: l_nogid,
            remote: r_nogid,
        });
    }
    if l.gid_index.is_some() && r.gid_index.is_some() {
        if l.gid_type.is_some() && r.gid_type.is_some() && l.gid_type != r.gid_type {
            out.push(Mismatch::GidType {
                local: l.gid_type.clone(),
                remote: r.gid_type.clone(),
            });
        }
        let family = |k: GidKind| match k {
            GidKind::Global | GidKind::Multicast | GidKind::Loopback => GidKind::Global,
            other => other,
        };
        let (lk, rk) = (family(l.gid.kind()), family(r.gid.kind()));
        if lk != rk {
            out.push(Mismatch::GidFamily {
                local: l.gid.kind(),
                remote: r.gid.kind(),
            });
        }
    }
    if local.size != remote.size {
        out.push(Mismatch::Size {
            local: local.size,
            remote: remote.size,
        });
    }
    // A server that follows has taken the client's length already (see `NativeMsg::follow`).
    let same_length = (local.iters, local.duration_ms, local.lat)
        == (remote.iters, remote.duration_ms, remote.lat);
    if local.follows || remote.follows || same_length {
    } else if local.duration_ms == 0 && remote.duration_ms == 0 && local.lat == remote.lat {
        out.push(Mismatch::Iters {
            local: local.iters,
            remote: remote.iters,
        });
    } else {
        out.push(Mismatch::Length {
            local: local.length(),
            remote: remote.length(),
        });
    }
    if local.ops != remote.ops {
        out.push(Mismatch::Ops {
            local: local.ops.bits(),
            remote: remote.ops.bits(),
        });
    }
    out
}

/// The path MTU: the smaller active MTU, or the requested one if both ports can carry it.
pub fn path_mtu(
    local_active: u32,
    remote_active: u32,
    requested: Option<u32>,
) -> Result<u32, String> {
    let common = match (local_active, remote_active) {
        (0, r) => r,
        (l, 0) => l,
        (l, r) => l.min(r),
    };
    match requested {
        None => Ok(common),
        Some(m) if !matches!(m, 256 | 512 | 1024 | 2048 | 4096) => {
            Err(format!("-m {m} is not a path MTU; use 256, 512, 1024, 2048 or 4096"))
        }
        Some(m) if common != 0 && m > common => Err(format!(
            "-m {m} exceeds the active MTU of the path (this port {local_active}, peer {}); use -m {common} or less",
            if remote_active == 0 { "unknown".to_string() } else { remote_active.to_string() }
        )),
        Some(m) => Ok(m),
    }
}

// ---------------------------------------------------------------------------------------
// TCP with deadlines

pub struct Conn {
    stream: TcpStream,
    pub peer: SocketAddr,
    timeout: Duration,
}

fn oob_failure(step: Step, cause: Cause, peer: Option<String>) -> Failure {
    Failure::new(
        step,
        cause,
        FailureContext {
            peer_addr: peer,
            ..Default::default()
        },
    )
}

fn io_cause(e: &std::io::Error, waited: Duration) -> Cause {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => Cause::Timeout {
            waited_ms: waited.as_millis() as u64,
            waiting_for: None,
        },
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => {
            Cause::PeerClosed
        }
        _ => Cause::errno(e.raw_os_error().unwrap_or(libc::EIO)),
    }
}

/// Resolves and connects with a deadline over all resolved addresses.
pub fn connect(host: &str, port: u16, timeout: Duration) -> Result<Conn, Failure> {
    let shown = format!("{host}:{port}");
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| {
            oob_failure(
                Step::Connect,
                Cause::Invalid {
                    what: format!("cannot resolve '{host}': {e}"),
                },
                Some(shown.clone()),
            )
        })?
        .collect();
    let start = Instant::now();
    let mut last = Cause::Invalid {
        what: format!("'{host}' resolved to no address"),
    };
    for addr in addrs {
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            last = Cause::Timeout {
                waited_ms: start.elapsed().as_millis() as u64,
                waiting_for: None,
            };
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(Conn {
                    stream,
                    peer: addr,
                    timeout,
                });
            }
            Err(e) => last = io_cause(&e, start.elapsed()),
        }
    }
    Err(oob_failure(Step::Connect, last, Some(shown)))
}

/// Listens on `bind` (default: every address, IPv6 and IPv4). SO_REUSEADDR is std's default.
pub fn listen(bind: Option<IpAddr>, port: u16) -> Result<TcpListener, Failure> {
    let addr = SocketAddr::new(bind.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)), port);
    let no_ipv6 = |e: &std::io::Error| {
        matches!(
            e.raw_os_error(),
            Some(libc::EAFNOSUPPORT) | Some(libc::EADDRNOTAVAIL)
        )
    };
    TcpListener::bind(addr)
        .or_else(|e| match bind {
            // Only a host without IPv6 is a reason to fall back to IPv4 any: a port held
            // by another process stays that error.
            None if no_ipv6(&e) => {
                TcpListener::bind(SocketAddr::new(IpAddr::from([0, 0, 0, 0]), port))
            }
            _ => Err(e),
        })
        .map_err(|e| {
            let mut f = oob_failure(Step::Listen, io_cause(&e, Duration::ZERO), None);
            f.context.bind_addr = Some(addr.to_string());
            f
        })
}

/// Accepts exactly one client. Waiting for a client has no deadline (a server waits, as
/// ibv_rc_pingpong does); everything after the accept does.
pub fn accept_one(listener: &TcpListener, timeout: Duration) -> Result<Conn, Failure> {
    let (stream, peer) = listener
        .accept()
        .map_err(|e| oob_failure(Step::Connect, io_cause(&e, Duration::ZERO), None))?;
    let _ = stream.set_nodelay(true);
    Ok(Conn {
        stream,
        peer,
        timeout,
    })
}

/// `accept_one`, but a caught SIGINT/SIGTERM ends the wait (a `--persist` server between
/// clients, after the first one made signals caught): None then.
pub fn accept_watching(listener: &TcpListener, timeout: Duration) -> Result<Option<Conn>, Failure> {
    let failed = |e: &std::io::Error| oob_failure(Step::Connect, io_cause(e, Duration::ZERO), None);
    listener.set_nonblocking(true).map_err(|e| failed(&e))?;
    let accepted = loop {
        match listener.accept() {
            Ok(pair) => break Ok(Some(pair)),
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if crate::interrupt::caught().is_some() {
                    break Ok(None);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => break Err(failed(&e)),
        }
    };
    listener.set_nonblocking(false).map_err(|e| failed(&e))?;
    let Some((stream, peer)) = accepted? else {
        return Ok(None);
    };
    stream.set_nonblocking(false).map_err(|e| failed(&e))?;
    let _ = stream.set_nodelay(true);
    Ok(Some(Conn {
        stream,
        peer,
        timeout,
    }))
}

impl Conn {
    fn fail(&self, cause: Cause) -> Failure {
        oob_failure(Step::Exchange, cause, Some(self.peer.to_string()))
    }

    /// Fills `buf` before the deadline. Err carries how many bytes did arrive.
    fn read_full(&mut self, buf: &mut [u8], deadline: Instant) -> Result<(), (usize, Failure)> {
        let start = Instant::now();
        let mut got = 0;
        while got < buf.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err((
                    got,
                    self.fail(Cause::Timeout {
                        waited_ms: start.elapsed().as_millis() as u64,
                        waiting_for: None,
                    }),
                ));
            }
            let _ = self.stream.set_read_timeout(Some(left));
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => return Err((got, self.fail(Cause::PeerClosed))),
                Ok(n) => got += n,
                // A caught Ctrl-C interrupts a read with a timeout (no SA_RESTART there).
                Err(e) if e.kind() == ErrorKind::Interrupted => {
                    if let Some(signal) = crate::interrupt::caught() {
                        return Err((got, self.fail(Cause::Interrupted { signal })));
                    }
                }
                Err(e) => return Err((got, self.fail(io_cause(&e, start.elapsed())))),
            }
        }
        Ok(())
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), Failure> {
        let deadline = Instant::now() + self.timeout;
        self.read_full(buf, deadline).map_err(|(_, f)| f)
    }

    pub fn write_all(&mut self, data: &[u8]) -> Result<(), Failure> {
        let _ = self.stream.set_write_timeout(Some(self.timeout));
        let start = Instant::now();
        self.stream
            .write_all(data)
            .map_err(|e| self.fail(io_cause(&e, start.elapsed())))
    }

    /// Reads the first message and detects its format (server side).
    pub fn read_hello(&mut self) -> Result<Hello, Failure> {
        let deadline = Instant::now() + self.timeout;
        let mut buf = vec![0u8; 8];
        let truncated = |got: usize, buf: &[u8], f: Failure| match f.cause {
            Cause::PeerClosed | Cause::Timeout { .. } if got > 0 => Failure {
                cause: Cause::Invalid {
                    what: format!(
                        "{} after {}: {}",
                        f.cause,
                        quote(&buf[..got]),
                        garbage(&buf[..got]).0
                    ),
                },
                ..f
            },
            _ => f,
        };
        // One byte first: a short garbage line must not wait for eight.
        if let Err((got, f)) = self.read_full(&mut buf[..1], deadline) {
            return Err(truncated(got, &buf, f));
        }
        match buf[0] {
            b'R' => {
                if let Err((got, f)) = self.read_full(&mut buf[1..8], deadline) {
                    return Err(truncated(got + 1, &buf, f));
                }
                if buf[..4] == NOTICE_MAGIC {
                    let len_head = buf[4..8].to_vec();
                    return Err(self.read_notice(&len_head, deadline));
                }
                let len =
                    native_header(&buf).map_err(|e| self.fail(Cause::Invalid { what: e.0 }))?;
                buf.resize(8 + len, 0);
                if let Err((_, f)) = self.read_full(&mut buf[8..], deadline) {
                    return Err(f);
                }
            }
            b if b.is_ascii_hexdigit() => {
                buf.resize(RC_PINGPONG_LEN, 0);
                if let Err((got, f)) = self.read_full(&mut buf[1..], deadline) {
                    return Err(truncated(got + 1, &buf, f));
                }
            }
            _ => {
                // Collect what else is there right away, to quote it.
                let _ = self
                    .stream
                    .set_read_timeout(Some(Duration::from_millis(100)));
                let mut more = [0u8; 23];
                if let Ok(n) = self.stream.read(&mut more) {
                    buf.truncate(1);
                    buf.extend_from_slice(&more[..n]);
                } else {
                    buf.truncate(1);
                }
                return Err(self.fail(Cause::Invalid {
                    what: garbage(&buf).0,
                }));
            }
        }
        parse_hello(&buf).map_err(|e| self.fail(Cause::Invalid { what: e.0 }))
    }

    pub fn send_native(&mut self, msg: &NativeMsg) -> Result<(), Failure> {
        self.write_all(&encode_native(msg))
    }

    /// Reads the peer's native message (after the offer was taken up).
    pub fn read_native(&mut self) -> Result<NativeMsg, Failure> {
        match self.read_hello()? {
            Hello::Native(m) => Ok(m),
            Hello::RcPingpong(_) | Hello::RdmactlOffer(_) => Err(self.fail(Cause::Invalid {
                what: "the peer answered in ibv_rc_pingpong's format where rdmactl's was due"
                    .into(),
            })),
        }
    }

    pub fn send_rc(&mut self, dest: &RcDest) -> Result<(), Failure> {
        self.write_all(&encode_rc_pingpong(dest))
    }

    pub fn send_offer(&mut self, dest: &RcDest) -> Result<(), Failure> {
        self.write_all(&encode_rdmactl_offer(dest))
    }

    /// The rc_pingpong client's last word; the server accepts it or a plain close.
    pub fn read_done(&mut self) -> Result<(), Failure> {
        let mut buf = [0u8; RC_PINGPONG_DONE.len()];
        match self.read_exact(&mut buf) {
            Ok(()) if &buf == RC_PINGPONG_DONE => Ok(()),
            Ok(()) => Err(self.fail(Cause::Invalid {
                what: format!("expected \"done\", got {}", quote(&buf)),
            })),
            Err(f) if f.cause == Cause::PeerClosed => Ok(()),
            Err(f) => Err(f),
        }
    }

    /// Tells the peer why this end stops (best effort: the peer may be gone already).
    pub fn send_notice(&mut self, notice: &PeerNotice) {
        let Some(frame) = json_frame(NOTICE_MAGIC, serde_json::to_vec(notice)) else {
            return;
        };
        let _ = self.stream.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = self.stream.write_all(&frame);
    }

    /// The body of a JSON frame whose magic has been read; `len_head` holds the length
    /// bytes already read with it.
    fn read_frame_body(
        &mut self,
        len_head: &[u8],
        deadline: Instant,
        what: &str,
    ) -> Result<Vec<u8>, Failure> {
        let mut len_bytes = [0u8; 4];
        len_bytes[..len_head.len()].copy_from_slice(len_head);
        self.read_full(&mut len_bytes[len_head.len()..], deadline)
            .map_err(|(_, f)| f)?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        if len > FRAME_MAX_LEN {
            return Err(self.fail(Cause::Invalid {
                what: format!("the peer's {what} claims {len} bytes"),
            }));
        }
        let mut body = vec![0u8; len];
        self.read_full(&mut body, deadline).map_err(|(_, f)| f)?;
        Ok(body)
    }

    /// The rest of a notice whose magic has been read, as the failure it reports.
    fn read_notice(&mut self, len_head: &[u8], deadline: Instant) -> Failure {
        let body = match self.read_frame_body(len_head, deadline, "failure notice") {
            Ok(body) => body,
            Err(f) => return f,
        };
        match serde_json::from_slice::<PeerNotice>(&body) {
            Ok(notice) => self.fail(Cause::PeerReported {
                notice: Box::new(notice),
            }),
            Err(e) => self.fail(Cause::Invalid {
                what: format!("the peer's failure notice does not parse: {e}"),
            }),
        }
    }

    /// Without waiting: has the peer gone away, or said why it stopped? A sync or any
    /// other data waiting is not a failure.
    pub fn peer_stopped(&mut self) -> Option<Failure> {
        let mut head = [0u8; 4];
        if self.stream.set_nonblocking(true).is_err() {
            return None;
        }
        let peeked = self.stream.peek(&mut head);
        let _ = self.stream.set_nonblocking(false);
        match peeked {
            Ok(0) => Some(self.fail(Cause::PeerClosed)),
            Ok(4) if head == NOTICE_MAGIC => {
                let mut magic = [0u8; 4];
                let deadline = Instant::now() + Duration::from_secs(1);
                if let Err((_, f)) = self.read_full(&mut magic, deadline) {
                    return Some(f);
                }
                Some(self.read_notice(&[], deadline))
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => Some(self.fail(Cause::PeerClosed)),
            _ => None,
        }
    }

    /// This end's counter changes for the peer (`None`: this end could not read its own).
    pub fn send_counters(&mut self, delta: Option<&WireDelta>) -> Result<(), Failure> {
        let frame = json_frame(COUNTERS_MAGIC, serde_json::to_vec(&delta))
            .or_else(|| json_frame(COUNTERS_MAGIC, Ok(b"null".to_vec())))
            .unwrap_or_default();
        self.write_all(&frame)
    }

    /// The peer's counter changes; a peer that sends none, or a malformed frame, is None
    /// (the run itself succeeded; only the peer's side of the counters is missing).
    pub fn read_counters(&mut self) -> Option<WireDelta> {
        let deadline = Instant::now() + self.timeout;
        let mut head = [0u8; 8];
        self.read_full(&mut head, deadline).ok()?;
        if head[..4] != COUNTERS_MAGIC {
            return None;
        }
        let body = self
            .read_frame_body(&head[4..], deadline, "counters")
            .ok()?;
        serde_json::from_slice::<Option<WireDelta>>(&body)
            .ok()
            .flatten()
    }

    /// Both ends say they reached `tag`, and wait for the other. A peer that failed has
    /// closed the socket, which shows up here as PeerClosed.
    pub fn sync(&mut self, tag: u8) -> Result<(), Failure> {
        self.sync_for(tag, self.timeout)
    }

    pub fn sync_for(&mut self, tag: u8, timeout: Duration) -> Result<(), Failure> {
        let mut frame = [0u8; 5];
        frame[..4].copy_from_slice(&SYNC_MAGIC);
        frame[4] = tag;
        self.write_all(&frame)?;
        let mut got = [0u8; 5];
        let deadline = Instant::now() + timeout;
        self.read_full(&mut got, deadline).map_err(|(_, f)| f)?;
        if got[..4] == NOTICE_MAGIC {
            return Err(self.read_notice(&got[4..], deadline));
        }
        if got[..4] != SYNC_MAGIC || got[4] != tag {
            return Err(self.fail(Cause::Invalid {
                what: format!(
                    "out of step with the peer: expected sync {tag}, got {}",
                    quote(&got)
                ),
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> NativeMsg {
        NativeMsg {
            endpoint: Endpoint {
                lid: 0,
                qpn: 0x11,
                psn: 0xabcdef,
                gid: Gid::parse("::ffff:192.168.77.1").unwrap(),
                gid_index: Some(1),
                gid_type: Some(GidType::RoceV2),
                link_layer: LinkLayer::Ethernet,
                active_mtu: 1024,
                rkey: 0x1234,
                addr: 0x7f00_0000_1000,
                len: 8192,
            },
            ops: Ops {
                send: true,
                write: true,
                read: true,
            },
            size: 4096,
            iters: 1000,
            duration_ms: 0,
            lat: false,
            follows: false,
            mtu: 0,
        }
    }

    #[test]
    fn native_round_trips() {
        let m = sample();
        assert_eq!(parse_hello(&encode_native(&m)), Ok(Hello::Native(m)));
        let soak = NativeMsg {
            iters: 0,
            duration_ms: 3_600_000,
            lat: true,
            follows: true,
            mtu: 1024,
            ..sample()
        };
        assert_eq!(parse_hello(&encode_native(&soak)), Ok(Hello::Native(soak)));
    }

    /// A server given no run length takes the client's; one given a length keeps the
    /// strict check, which names the flags on both ends.
    #[test]
    fn a_server_that_follows_is_not_held_to_its_own_length() {
        let client = NativeMsg {
            iters: 0,
            duration_ms: 2500,
            lat: true,
            ..sample()
        };
        let mut server = NativeMsg {
            follows: true,
            ..sample()
        };
        // A server's message that says it follows compares clean, from either side.
        assert!(compare(&client, &server).is_empty());
        assert!(compare(&server, &client).is_empty());
        server.follows = false;
        assert_eq!(compare(&server, &client).len(), 1);
        let strict = sample();
        assert_eq!(
            compare(&strict, &client),
            vec![Mismatch::Length {
                local: "-n 1000".into(),
                remote: "--duration 2.5 --lat".into()
            }]
        );
        let fewer = NativeMsg {
            iters: 200,
            ..sample()
        };
        assert_eq!(
            compare(&strict, &fewer),
            vec![Mismatch::Iters {
                local: 1000,
                remote: 200
            }]
        );
    }

    #[test]
    fn rc_pingpong_matches_its_sprintf() {
        let d = RcDest {
            lid: 0x12,
            qpn: 0x11,
            psn: 0x4a5b6c,
            gid: Gid::parse("::ffff:192.168.77.1").unwrap(),
        };
        let wire = encode_rc_pingpong(&d);
        assert_eq!(
            &wire[..51],
            b"0012:000011:4a5b6c:00000000000000000000ffffc0a84d01"
        );
        assert_eq!(wire[51], 0);
        assert_eq!(parse_hello(&wire), Ok(Hello::RcPingpong(d)));
    }

    /// The offer is what a stock server's sscanf("%x:%x:%x:%s") reads as the same values
    /// (%x skips the space), and what an rdmactl server recognises.
    #[test]
    fn rdmactl_offer_reads_as_the_stock_message() {
        let d = RcDest {
            lid: 0,
            qpn: 0x11,
            psn: 0x4a5b6,
            gid: Gid::parse("::ffff:192.168.77.2").unwrap(),
        };
        let wire = encode_rdmactl_offer(&d);
        assert_eq!(
            &wire[..51],
            b"0000:000011: 4a5b6:00000000000000000000ffffc0a84d02"
        );
        assert_eq!(wire[51], 0);
        assert_eq!(parse_hello(&wire), Ok(Hello::RdmactlOffer(d)));
        assert_eq!(parse_rc_pingpong(&wire), Ok(d));
        // A space anywhere else is not an offer.
        let mut odd = wire;
        odd[5] = b' ';
        assert!(parse_hello(&odd).is_err());
    }

    #[test]
    fn rejects_bad_input_with_a_reason() {
        let mut v1 = encode_native(&sample());
        v1[4] = 1;
        let mut both_lengths = encode_native(&sample());
        let at = 8 + NATIVE_LEN - 7;
        both_lengths[at..at + 4].copy_from_slice(&10u32.to_be_bytes());
        let mut odd_flags = encode_native(&sample());
        odd_flags[8 + NATIVE_LEN - 3] = 0x80;
        let mut odd_mtu = encode_native(&sample());
        odd_mtu[8 + NATIVE_LEN - 2..].copy_from_slice(&1500u16.to_be_bytes());
        let mut huge = encode_native(&sample());
        huge[6..8].copy_from_slice(&5000u16.to_be_bytes());
        let mut bad_mtu = encode_native(&sample());
        bad_mtu[8 + 2 + 4 + 4 + 16 + 4 + 2..8 + 2 + 4 + 4 + 16 + 4 + 2 + 4]
            .copy_from_slice(&1500u32.to_be_bytes());
        let mut no_nul = encode_rc_pingpong(&RcDest {
            lid: 0,
            qpn: 1,
            psn: 1,
            gid: Gid::ZERO,
        });
        no_nul[51] = b'0';
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", vec![], "neither"),
            ("garbage", b"garbage\n".to_vec(), "neither"),
            ("http", b"GET / HTTP/1.0\r\n\r\n".to_vec(), "neither"),
            ("version 1", v1, "version 1"),
            ("-n and --duration", both_lengths, "exactly one of"),
            ("unknown flags", odd_flags, "unknown run flags 0x80"),
            ("MTU 1500 requested", odd_mtu, "requested MTU 1500"),
            ("huge length", huge, "exceeds the limit"),
            ("MTU 1500", bad_mtu, "active MTU 1500"),
            ("no NUL", no_nul.to_vec(), "NUL"),
            (
                "short rc",
                b"0000:000001:000001:00\0".to_vec(),
                "instead of 52",
            ),
            (
                "uppercase field sep",
                b"0000-000001-000001-00000000000000000000000000000000\0".to_vec(),
                "malformed",
            ),
        ];
        for (name, bytes, want) in cases {
            let err = parse_hello(&bytes).expect_err(name);
            assert!(err.0.contains(want), "{name}: {err}");
        }
    }

    #[test]
    fn compare_finds_what_would_break_rtr() {
        let a = sample();
        assert!(compare(&a, &a).is_empty());
        let mut b = sample();
        b.endpoint.gid = Gid::parse("fe80::5054:ff:fe12:3456").unwrap();
        b.endpoint.gid_index = Some(0);
        b.endpoint.gid_type = Some(GidType::RoceV1);
        let found = compare(&a, &b);
        assert!(
            found
                .iter()
                .any(|m| matches!(m, Mismatch::GidFamily { .. })),
            "{found:?}"
        );
        assert!(
            found.iter().any(|m| matches!(m, Mismatch::GidType { .. })),
            "{found:?}"
        );
        let mut ib = sample();
        ib.endpoint.link_layer = LinkLayer::InfiniBand;
        let found = compare(&ib, &ib);
        assert_eq!(
            found,
            vec![Mismatch::LidZero {
                local: true,
                remote: true
            }]
        );
        let mut nogid = sample();
        nogid.endpoint.gid_index = None;
        nogid.size = 8;
        let found = compare(&a, &nogid);
        assert!(
            found.contains(&Mismatch::NoGid {
                local: false,
                remote: true
            }),
            "{found:?}"
        );
        assert!(
            found.contains(&Mismatch::Size {
                local: 4096,
                remote: 8
            }),
            "{found:?}"
        );
        assert!(found.iter().all(|m| !m.to_string().is_empty()));
    }

    #[test]
    fn path_mtu_is_the_smaller_or_a_valid_request() {
        assert_eq!(path_mtu(1024, 4096, None), Ok(1024));
        assert_eq!(path_mtu(4096, 0, None), Ok(4096));
        assert_eq!(path_mtu(4096, 4096, Some(2048)), Ok(2048));
        assert!(path_mtu(1024, 1024, Some(4096))
            .unwrap_err()
            .contains("use -m 1024"));
        assert!(path_mtu(1024, 1024, Some(1500))
            .unwrap_err()
            .contains("not a path MTU"));
    }

    /// xorshift64*: a fixed seed so a failure reproduces.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn parser_never_panics_on_generated_input() {
        let mut rng = Rng(0x5eed_cafe_f00d_0001);
        let valid_native = encode_native(&sample());
        let valid_rc = encode_rc_pingpong(&RcDest {
            lid: 1,
            qpn: 2,
            psn: 3,
            gid: Gid::parse("fe80::1").unwrap(),
        });
        let alphabet = b"0123456789abcdefABCDEF:RDMX\0 \n";
        let mut accepted = 0;
        for round in 0..200_000u32 {
            let bytes: Vec<u8> = match round % 4 {
                // Random bytes of random length.
                0 => (0..rng.below(120)).map(|_| rng.next() as u8).collect(),
                // Plausible characters, so the rc_pingpong path gets exercised.
                1 => (0..rng.below(60))
                    .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                    .collect(),
                // A valid message with a few bytes flipped, cut or extended.
                _ => {
                    let mut v = if round % 4 == 2 {
                        valid_native.clone()
                    } else {
                        valid_rc.to_vec()
                    };
                    for _ in 0..=rng.below(3) {
                        let i = rng.below(v.len() as u64) as usize;
                        v[i] = rng.next() as u8;
                    }
                    match rng.below(4) {
                        0 => v.truncate(rng.below(v.len() as u64) as usize),
                        1 => v.push(rng.next() as u8),
                        _ => {}
                    }
                    v
                }
            };
            match parse_hello(&bytes) {
                Ok(Hello::Native(m)) => {
                    accepted += 1;
                    // Whatever parses must re-encode to the same bytes.
                    assert_eq!(encode_native(&m), bytes);
                }
                Ok(Hello::RcPingpong(d)) => {
                    accepted += 1;
                    assert_eq!(parse_rc_pingpong(&encode_rc_pingpong(&d)), Ok(d));
                }
                Ok(Hello::RdmactlOffer(d)) => {
                    accepted += 1;
                    assert_eq!(
                        parse_hello(&encode_rdmactl_offer(&d)),
                        Ok(Hello::RdmactlOffer(d))
                    );
                }
                Err(e) => assert!(!e.0.is_empty()),
            }
        }
        // Mutations that only touch free fields (rkey, addr, GID) must still parse.
        assert!(accepted > 1000, "only {accepted} generated inputs parsed");
    }

    /// GID text comes from the exchange (32 hex digits) and from users; neither may panic,
    /// and whatever parses must survive a round trip through its sysfs and wire forms.
    #[test]
    fn gid_text_parser_never_panics_on_generated_input() {
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        let alphabet = b"0123456789abcdefABCDEF:.fx ";
        let seeds = [
            "::ffff:10.11.11.251",
            "fe80::5054:ff:fe12:3456",
            "00000000000000000000ffff0a0b0bfb",
        ];
        let mut accepted = 0;
        for round in 0..100_000u32 {
            let text: String = if round % 2 == 0 {
                (0..rng.below(48))
                    .map(|_| char::from(alphabet[rng.below(alphabet.len() as u64) as usize]))
                    .collect()
            } else {
                let mut t: Vec<u8> = seeds[rng.below(3) as usize].bytes().collect();
                let i = rng.below(t.len() as u64) as usize;
                t[i] = alphabet[rng.below(alphabet.len() as u64) as usize];
                String::from_utf8(t).expect("ASCII")
            };
            if let Ok(g) = Gid::parse(&text) {
                accepted += 1;
                assert_eq!(Gid::parse(&g.to_string()), Ok(g), "{text:?}");
                assert_eq!(Gid::parse(&g.wire_form()), Ok(g), "{text:?}");
            }
        }
        assert!(accepted > 1000, "only {accepted} generated GIDs parsed");
    }

    #[test]
    fn garbage_over_tcp_is_reported_quickly() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"garbage\n").unwrap();
            std::thread::sleep(Duration::from_millis(300));
        });
        let start = Instant::now();
        let mut conn = accept_one(&listener, Duration::from_secs(5)).unwrap();
        let err = conn.read_hello().unwrap_err();
        client.join().unwrap();
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(err.step, Step::Exchange);
        assert!(err.to_string().contains("\"garbage\\n\""), "{err}");
    }

    #[test]
    fn silent_client_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = std::thread::spawn(move || {
            let _s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            std::thread::sleep(Duration::from_millis(800));
        });
        let mut conn = accept_one(&listener, Duration::from_millis(200)).unwrap();
        let err = conn.read_hello().unwrap_err();
        assert!(matches!(err.cause, Cause::Timeout { .. }), "{err}");
        client.join().unwrap();
    }

    #[test]
    fn connect_to_nothing_fails_fast() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let err = connect("127.0.0.1", port, Duration::from_secs(2))
            .err()
            .expect("nothing listens");
        assert_eq!(err.step, Step::Connect);
        assert_eq!(err.cause, Cause::errno(libc::ECONNREFUSED));
    }
}
