use crate::model::device::{GidType, LinkLayer};
use crate::model::failure::{Endpoint, Ops, Segment};
use crate::model::gid::Gid;

pub const NATIVE_MAGIC: [u8; 4] = *b"RDMX";

/// Version 2 added the run's length (`--duration`), `--lat` and the server's "I follow";
/// version 3 the GID's segment (its netdev's VLAN and its address's prefix length), so the
/// ends can say "different VLAN" where the GIDs alone cannot.
pub const NATIVE_VERSION: u8 = 3;

/// Payload length of version 3.
pub const NATIVE_LEN: usize = 71;

/// The VLAN field when the segment is unknown (0 is untagged, 1..=4094 a VLAN ID).
const SEGMENT_UNKNOWN: u16 = 0xffff;

/// The prefix field when the GID's address was not found on its netdev.
const PREFIX_UNKNOWN: u8 = 0xff;

/// Larger announced lengths are refused before reading them.
pub const NATIVE_MAX_LEN: usize = 1024;

/// `sizeof "0000:000000:000000:00000000000000000000000000000000"` in rc_pingpong.c.
pub const RC_PINGPONG_LEN: usize = 52;

/// What the rc_pingpong client writes after reading the server's address.
pub const RC_PINGPONG_DONE: &[u8; 5] = b"done\0";

pub(super) const SYNC_MAGIC: [u8; 4] = *b"RDMS";

/// A failing end's last word: its failure and explanation (length-prefixed JSON), so the
/// other end prints the cause instead of "the peer closed the connection".
pub(super) const NOTICE_MAGIC: [u8; 4] = *b"RDMF";

pub(super) const FRAME_MAX_LEN: usize = 64 * 1024;

/// Each end's port counter changes over the run, sent after the last sync.
pub(super) const COUNTERS_MAGIC: [u8; 4] = *b"RDMC";

/// A stall probe: an end whose completion did not come sends what it re-read (JSON
/// `StallFacts`), and a live peer answers with its own from its wait loop.
pub(super) const PROBE_MAGIC: [u8; 4] = *b"RDMP";

/// A probe's facts are a few hundred bytes; more is not a probe.
pub(super) const PROBE_MAX_LEN: usize = 8 * 1024;

/// A JSON frame: the magic, the length (4 bytes, big-endian), the JSON. A body over the
/// limit is not sent at all: cut short it would not parse.
pub(super) fn json_frame(magic: [u8; 4], json: serde_json::Result<Vec<u8>>) -> Option<Vec<u8>> {
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
    let (vlan, prefix) = match e.segment {
        Some(seg) => (
            seg.vlan.unwrap_or(0),
            seg.prefix_len.unwrap_or(PREFIX_UNKNOWN),
        ),
        None => (SEGMENT_UNKNOWN, PREFIX_UNKNOWN),
    };
    out.extend_from_slice(&vlan.to_be_bytes());
    out.push(prefix);
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
            "version {NATIVE_VERSION} payload must be {NATIVE_LEN} bytes, the peer announced {len}"
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
    let vlan = c.u16();
    let prefix = c.u8();
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
    if vlan > 4094 && vlan != SEGMENT_UNKNOWN {
        return Err(perr(format!("VLAN ID {vlan} is not 0 (untagged) to 4094")));
    }
    if prefix > 128 && prefix != PREFIX_UNKNOWN {
        return Err(perr(format!("prefix length {prefix} is over 128")));
    }
    let segment = (vlan != SEGMENT_UNKNOWN).then_some(Segment {
        vlan: (vlan != 0).then_some(vlan),
        prefix_len: (prefix != PREFIX_UNKNOWN).then_some(prefix),
    });
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
        segment,
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

pub(super) fn garbage(bytes: &[u8]) -> ParseError {
    perr(format!(
        "the peer sent {}, which is neither an rdmactl exchange nor ibv_rc_pingpong's \
         'LID:QPN:PSN:GID' (is something else listening on this port, or a port scanner?)",
        quote(bytes)
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> NativeMsg {
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
                segment: Some(Segment {
                    vlan: Some(10),
                    prefix_len: Some(24),
                }),
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
        // The segment: untagged, unknown prefix, and not known at all each come back as sent.
        for segment in [
            Some(Segment {
                vlan: None,
                prefix_len: Some(24),
            }),
            Some(Segment {
                vlan: Some(4094),
                prefix_len: None,
            }),
            None,
        ] {
            let mut m = sample();
            m.endpoint.segment = segment;
            assert_eq!(parse_hello(&encode_native(&m)), Ok(Hello::Native(m)));
        }
        // A VLAN ID past 4094 (other than "unknown") or a prefix past 128 is refused.
        let at = 8 + 2 + 4 + 4 + 16 + 4 + 2 + 4 + 4 + 8 + 4;
        let mut vlan = encode_native(&sample());
        vlan[at..at + 2].copy_from_slice(&4095u16.to_be_bytes());
        assert!(parse_hello(&vlan).unwrap_err().0.contains("VLAN ID 4095"));
        let mut prefix = encode_native(&sample());
        prefix[at + 2] = 129;
        assert!(parse_hello(&prefix)
            .unwrap_err()
            .0
            .contains("prefix length 129"));
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
}
