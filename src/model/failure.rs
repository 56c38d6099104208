//! The one failure vocabulary: where a run failed (`Step`), what the failing call or the
//! peer said (`Cause`), and the attributes in use (`FailureContext`). The data path (verbs,
//! the out-of-band exchange, the connection manager) builds a `Failure`; the rules in
//! `diagnose` read it as data and never parse its text. A leaf below both.

use std::fmt;

use serde::Serialize;

use crate::model::device::{GidType, LinkLayer};
use crate::model::errno::{errno_name, strerror, wc_status_name, wc_status_text};
use crate::model::gid::{Gid, GidKind};

/// The RC QP attributes rdmactl uses, on the TCP exchange and the connection manager alike.
/// Defined once here; a failure carries the ones actually set, so an explanation quotes
/// what was used instead of restating a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QpParams {
    /// Local ACK timeout exponent: 4.096 µs × 2^timeout per try.
    pub timeout: u8,
    /// Transport retries. 7 means "forever" on rxe, so a dead peer would never be reported.
    pub retry_cnt: u8,
    /// RNR retries; 7 is infinite (receives are always posted before the peer sends).
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
}

pub const QP_PARAMS: QpParams = QpParams {
    timeout: 14,
    retry_cnt: 6,
    rnr_retry: 7,
    min_rnr_timer: 12,
};

/// Where in the connection or the traffic something went wrong: a verbs step, a step of the
/// TCP exchange, or a connection-manager stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// ibv_get_device_list / ibv_open_device
    Open,
    QueryDevice,
    QueryPort,
    QueryGid,
    Pd,
    Mr,
    Cq,
    QpCreate,
    Init,
    Rtr,
    Rts,
    /// ibv_query_qp: reading back an attribute the QP holds.
    QueryQp,
    /// Moving a QP to the error state (to flush its outstanding work requests).
    ToError,
    /// ibv_create_srq
    Srq,
    PostRecv,
    PostSend,
    /// ibv_poll_cq itself failed, or no completion came before the deadline.
    Poll,
    /// A completion arrived with an error status.
    Completion,
    /// TCP connect of the out-of-band exchange.
    Connect,
    /// TCP bind/listen of the out-of-band exchange's server.
    Listen,
    /// TCP accept, then reading or writing the out-of-band messages.
    Exchange,
    /// The two ends' parameters do not fit together (checked before touching the QP).
    Compare,
    /// Data arrived but is not what the peer sent.
    Verify,
    /// The stack broke a verbs rule the self-test checks (a completion, event or refusal
    /// that the specification rules out or requires).
    Semantics,
    /// Connection manager: opening librdmacm and its event channel.
    CmSetup,
    CmBind,
    CmResolveAddr,
    CmResolveRoute,
    CmCreateQp,
    CmListen,
    CmConnect,
    CmAccept,
    /// Traffic on a connection the CM set up.
    CmTransfer,
    CmDisconnect,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::Open => "open device",
            Step::QueryDevice => "query device",
            Step::QueryPort => "query port",
            Step::QueryGid => "query GID",
            Step::Pd => "allocate PD",
            Step::Mr => "register MR",
            Step::Cq => "create CQ",
            Step::QpCreate => "create QP",
            Step::Init => "modify QP to INIT",
            Step::Rtr => "modify QP to RTR",
            Step::Rts => "modify QP to RTS",
            Step::QueryQp => "query QP",
            Step::ToError => "modify QP to ERR",
            Step::Srq => "create SRQ",
            Step::PostRecv => "post receive",
            Step::PostSend => "post send",
            Step::Poll => "poll CQ",
            Step::Completion => "work completion",
            Step::Connect => "connect (TCP)",
            Step::Listen => "listen (TCP)",
            Step::Exchange => "exchange (TCP)",
            Step::Compare => "compare parameters",
            Step::Verify => "verify data",
            Step::Semantics => "check verbs semantics",
            Step::CmSetup => "CM setup",
            Step::CmBind => "CM bind",
            Step::CmResolveAddr => "CM resolve address",
            Step::CmResolveRoute => "CM resolve route",
            Step::CmCreateQp => "CM create QP",
            Step::CmListen => "CM listen",
            Step::CmConnect => "CM connect",
            Step::CmAccept => "CM accept",
            Step::CmTransfer => "transfer",
            Step::CmDisconnect => "CM disconnect",
        }
    }

    /// A connection-manager stage (its failures go to the CM rules).
    pub fn is_cm(self) -> bool {
        matches!(
            self,
            Step::CmSetup
                | Step::CmBind
                | Step::CmResolveAddr
                | Step::CmResolveRoute
                | Step::CmCreateQp
                | Step::CmListen
                | Step::CmConnect
                | Step::CmAccept
                | Step::CmTransfer
                | Step::CmDisconnect
        )
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the failing call, the kernel or the peer said: the raw numbers, never prose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Cause {
    Errno {
        errno: i32,
        /// The library call that returned it, when the step does not say (CM calls).
        #[serde(skip_serializing_if = "Option::is_none")]
        call: Option<&'static str>,
    },
    WcStatus {
        status: u32,
        vendor_err: u32,
        opcode: u32,
        /// The operation as rdmactl names it (SEND, WRITE, READ), when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        op: Option<&'static str>,
    },
    /// Nothing happened before the deadline.
    Timeout {
        waited_ms: u64,
        /// What was awaited (a CM event, a completion), when the step does not say: a
        /// bare noun phrase, as the text puts "no" before it ("no echo of a SEND").
        #[serde(skip_serializing_if = "Option::is_none")]
        waiting_for: Option<&'static str>,
    },
    /// The peer closed the TCP connection: it failed on its side, or died.
    PeerClosed,
    /// The two ends' parameters do not fit together (found from the exchange).
    Mismatch { mismatches: Vec<Mismatch> },
    /// Malformed data or a peer speaking another protocol; the text says which field.
    Invalid { what: String },
    /// `librdmacm.so.1` (or a library it needs) could not be loaded.
    LibraryMissing { loader_error: String },
    /// librdmacm loaded but could not open the kernel's CM (`/dev/infiniband/rdma_cm`).
    NoKernelCm {
        errno: i32,
        device_node_exists: bool,
        devices_present: bool,
    },
    /// The CM reported an error event; `status` is a negative errno, or for REJECTED the IB
    /// CM reject reason.
    CmEvent {
        event: EventKind,
        status: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        reject_reason: Option<&'static str>,
    },
    /// An rdmactl server rejected the connection and said why in the reject's private data.
    ServerRejected {
        status: i32,
        reject_reason: &'static str,
        server_reason: String,
    },
    /// The server accepted but is not an rdmactl server (no buffer description).
    ForeignServer { what: String },
    /// The port has no IP address for the CM to use.
    NoAddress { netdev: Option<String> },
    /// Not attempted: the run would pin more memory than `limit` allows (checked before
    /// allocating, so the OOM killer never gets to end the run without a word).
    WouldPin {
        pinned_bytes: u64,
        /// What the pinned bytes are, e.g. "4 × the 256 MiB message size".
        what: String,
        limit_bytes: u64,
        limit: PinLimit,
    },
    /// SIGINT or SIGTERM stopped the run (a second one ends the process at once).
    Interrupted { signal: i32 },
    /// The peer found the cause on its side and said so over the out-of-band connection.
    PeerReported { notice: Box<PeerNotice> },
    /// Refused at the exchange: the peer speaks ibv_rc_pingpong's exchange (a stock tool,
    /// which does SEND only) and this end was asked for `ops` (bits as `Ops::bits`), which
    /// include WRITE or READ. `peer` is the peer's role, "client" or "server".
    StockPeerSendOnly { ops: u8, peer: &'static str },
    /// Every work request completed, yet the bytes differ from what was sent.
    Corrupted {
        op: &'static str,
        offset: usize,
        len: usize,
    },
}

/// What one end tells the other when it fails while the out-of-band connection is open:
/// its failure line and its explanation, so both ends print the cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PeerNotice {
    /// "client" or "server".
    pub role: String,
    /// The peer's own failure line, e.g. "modify QP to RTR failed (rxe1/1, ...): ETIMEDOUT".
    pub message: String,
    pub code: crate::model::codes::Code,
    pub summary: String,
    pub evidence: Vec<String>,
    pub fix: String,
    /// The notifying end's port counters over the run until it failed, so the other end
    /// prints both ends' deltas; absent from older rdmactl and when they were not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<crate::model::counter::WireDelta>,
}

impl PeerNotice {
    /// The peer's packets went unanswered (its retries ran out, no completion came, or it
    /// found a firewall dropping them): what this end's side of the path may explain.
    pub fn packets_unanswered(&self) -> bool {
        use crate::model::codes;
        [
            codes::RETRY_EXCEEDED,
            codes::NO_COMPLETION,
            codes::RXE_INFINITE_RETRY,
            codes::FIREWALL,
        ]
        .contains(&self.code)
    }
}

/// The name of a signal a run is stopped by.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// What a planned registration is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PinLimit {
    /// RLIMIT_MEMLOCK, for a process without CAP_IPC_LOCK.
    Memlock,
    /// MemAvailable in /proc/meminfo.
    MemAvailable,
}

impl Cause {
    pub fn errno(errno: i32) -> Cause {
        Cause::Errno { errno, call: None }
    }

    pub fn invalid(what: impl Into<String>) -> Cause {
        Cause::Invalid { what: what.into() }
    }

    pub fn foreign_server(what: impl Into<String>) -> Cause {
        Cause::ForeignServer { what: what.into() }
    }

    pub fn call(call: &'static str, errno: i32) -> Cause {
        Cause::Errno {
            errno,
            call: Some(call),
        }
    }

    pub fn cm_event(event: EventKind, status: i32) -> Cause {
        Cause::CmEvent {
            event,
            status,
            reject_reason: (event == EventKind::Rejected)
                .then(|| crate::model::errno::reject_reason_name(status)),
        }
    }

    /// The errno behind the cause, positive, when there is one (a REJECTED status is a
    /// reject reason, not an errno).
    pub fn errno_value(&self) -> Option<i32> {
        match self {
            Cause::Errno { errno, .. } | Cause::NoKernelCm { errno, .. } => Some(*errno),
            Cause::CmEvent {
                event: EventKind::Rejected,
                ..
            } => None,
            Cause::CmEvent { status, .. } if *status < 0 => Some(-status),
            _ => None,
        }
    }

    pub fn wc_status(&self) -> Option<u32> {
        match self {
            Cause::WcStatus { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Errno { errno, call } => {
                if let Some(call) = call {
                    write!(f, "{call}: ")?;
                }
                write!(f, "{} ({errno}: {})", errno_name(*errno), strerror(*errno))
            }
            Cause::WcStatus {
                status,
                vendor_err,
                op,
                ..
            } => {
                if let Some(op) = op {
                    write!(f, "{op}: ")?;
                }
                write!(
                    f,
                    "{} (status {status}: {}",
                    wc_status_name(*status),
                    wc_status_text(*status)
                )?;
                if *vendor_err != 0 {
                    write!(f, ", vendor err 0x{vendor_err:x}")?;
                }
                f.write_str(")")
            }
            Cause::Timeout {
                waited_ms,
                waiting_for,
            } => write!(
                f,
                "no {} within {:.1} s",
                waiting_for.unwrap_or("answer"),
                *waited_ms as f64 / 1000.0
            ),
            Cause::PeerClosed => f.write_str("the peer closed the connection"),
            Cause::Mismatch { mismatches } => {
                let texts: Vec<String> = mismatches.iter().map(|m| m.to_string()).collect();
                f.write_str(&texts.join("; "))
            }
            Cause::Invalid { what } | Cause::ForeignServer { what } => f.write_str(what),
            Cause::LibraryMissing { loader_error } => {
                write!(f, "librdmacm could not be loaded ({loader_error})")
            }
            Cause::NoKernelCm { errno, .. } => write!(
                f,
                "cannot open the kernel RDMA CM: {}",
                crate::model::errno::errno_text(*errno)
            ),
            Cause::CmEvent {
                event,
                status,
                reject_reason,
            } => match reject_reason {
                Some(r) => write!(f, "{} (status {status}: {r})", event.name()),
                None if *status < 0 => write!(
                    f,
                    "{} (status {status}: {})",
                    event.name(),
                    crate::model::errno::errno_text(-status)
                ),
                None => write!(f, "{} (status {status})", event.name()),
            },
            Cause::ServerRejected {
                status,
                reject_reason,
                server_reason,
            } => write!(
                f,
                "{} (status {status}: {reject_reason}): the server said \"{server_reason}\"",
                EventKind::Rejected.name()
            ),
            Cause::NoAddress { netdev: Some(n) } => {
                write!(f, "no IP address on {n}, the port's netdev")
            }
            Cause::NoAddress { netdev: None } => f.write_str("no netdev, so no IP address"),
            Cause::WouldPin {
                pinned_bytes,
                what,
                limit_bytes,
                limit,
            } => write!(
                f,
                "not attempted: the run would pin {pinned_bytes} bytes ({what}), above {} of {limit_bytes} bytes",
                match limit {
                    PinLimit::Memlock => "the locked-memory limit",
                    PinLimit::MemAvailable => "the available memory",
                }
            ),
            Cause::Interrupted { signal } => {
                write!(f, "interrupted by {}", signal_name(*signal))
            }
            Cause::PeerReported { notice } => {
                write!(f, "the {} failed: {}", notice.role, notice.message)
            }
            Cause::StockPeerSendOnly { ops, peer } => write!(
                f,
                "--op {}: the {peer} speaks ibv_rc_pingpong's exchange (a stock ibv_rc_pingpong), which does SEND only",
                ops_name(*ops)
            ),
            Cause::Corrupted { op, offset, len } => {
                write!(
                    f,
                    "{op}: the data arrived corrupted at byte {offset} of {len}"
                )
            }
        }
    }
}

/// The attributes in use when a step failed. Fields stay None when the step came before them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FailureContext {
    pub device: String,
    pub port: u32,
    pub gid_index: Option<u32>,
    pub sgid: Option<Gid>,
    pub dgid: Option<Gid>,
    pub dest_lid: Option<u16>,
    pub dest_qpn: Option<u32>,
    pub dest_psn: Option<u32>,
    pub path_mtu: Option<u32>,
    pub link_layer: Option<LinkLayer>,
    /// The peer's address (TCP exchange or CM), as `ss` prints it: `192.168.77.1:18515`.
    #[serde(rename = "peer")]
    pub peer_addr: Option<String>,
    /// The local address a listen tried to bind, as `ss` prints it: `[::]:18515`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind_addr: Option<String>,
    /// The MR length or other size the step used.
    pub bytes: Option<u64>,
    /// The local and remote endpoints, once the exchange happened.
    pub local: Option<Endpoint>,
    pub remote: Option<Endpoint>,
    /// What the run had done when it failed, e.g. "after 347/1000 sends".
    pub note: Option<String>,
    /// The QP attributes set on the QP, once it existed.
    pub qp: Option<QpParams>,
    /// How long the step ran before the failure was reported (a CM event's wait).
    pub elapsed_ms: Option<u64>,
}

/// One failure, as data: an explainer matches on `step` and `cause` and reads `context`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub step: Step,
    pub cause: Cause,
    /// Boxed so that `Result<_, Failure>` stays small on the hot path.
    pub context: Box<FailureContext>,
}

impl Failure {
    pub fn new(step: Step, cause: Cause, context: FailureContext) -> Failure {
        Failure {
            step,
            cause,
            context: Box::new(context),
        }
    }

    /// A failure whose only context is the peer (the TCP exchange, the CM before it bound a
    /// device).
    pub fn toward(step: Step, cause: Cause, peer: Option<String>) -> Failure {
        Failure::new(
            step,
            cause,
            FailureContext {
                peer_addr: peer,
                ..FailureContext::default()
            },
        )
    }

    /// A failure toward a peer given as a socket address.
    pub fn toward_addr(step: Step, peer: Option<std::net::SocketAddr>, cause: Cause) -> Failure {
        Failure::toward(step, cause, peer.map(show_addr))
    }

    /// The failure ended a run because the RDMA stack is missing, not because a test failed.
    pub fn is_missing_stack(&self) -> bool {
        matches!(
            self.cause,
            Cause::LibraryMissing { .. } | Cause::NoKernelCm { .. }
        )
    }

    pub fn is_infiniband(&self) -> bool {
        self.context.link_layer == Some(LinkLayer::InfiniBand)
    }
}

/// A peer address as `ss` and `ip` print it: an IPv4 client of a `[::]` listener shows as
/// `192.168.77.1:51296`, not `[::ffff:192.168.77.1]:51296`.
pub fn show_addr(addr: std::net::SocketAddr) -> String {
    std::net::SocketAddr::new(addr.ip().to_canonical(), addr.port()).to_string()
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.context;
        write!(f, "{} failed", self.step.name())?;
        let mut attrs: Vec<String> = Vec::new();
        match (c.device.is_empty(), c.port) {
            (false, 0) => attrs.push(c.device.clone()),
            (false, port) => attrs.push(format!("{}/{port}", c.device)),
            (true, _) => {}
        }
        if let Some(i) = c.gid_index {
            attrs.push(format!("GID index {i}"));
        }
        if let Some(g) = c.dgid {
            attrs.push(format!("dest GID {g}"));
        }
        if let Some(l) = c.dest_lid {
            if l != 0 {
                attrs.push(format!("dest LID 0x{l:04x}"));
            }
        }
        if let Some(q) = c.dest_qpn {
            attrs.push(format!("dest QPN 0x{q:06x}"));
        }
        if let Some(p) = c.dest_psn {
            attrs.push(format!("dest PSN 0x{p:06x}"));
        }
        if let Some(m) = c.path_mtu {
            attrs.push(format!("path MTU {m}"));
        }
        if let Some(p) = &c.peer_addr {
            attrs.push(format!("peer {p}"));
        }
        if let Some(b) = &c.bind_addr {
            attrs.push(format!("on {b}"));
        }
        if !attrs.is_empty() {
            write!(f, " ({})", attrs.join(", "))?;
        }
        write!(f, ": {}", self.cause)?;
        if let Some(note) = &c.note {
            write!(f, "; {note}")?;
        }
        if let Some(ms) = c.elapsed_ms {
            write!(f, " after {:.2} s", ms as f64 / 1000.0)?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

/// What one end tells the other, and what both compare before touching the QP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    pub lid: u16,
    pub qpn: u32,
    pub psn: u32,
    pub gid: Gid,
    pub gid_index: Option<u32>,
    pub gid_type: Option<GidType>,
    pub link_layer: LinkLayer,
    /// Active MTU of the port in bytes; 0 when unknown (ibv_rc_pingpong does not send it).
    pub active_mtu: u32,
    pub rkey: u32,
    pub addr: u64,
    pub len: u32,
    /// The L2 segment and subnet of the GID's netdev (rdmactl's native exchange only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<Segment>,
}

/// Where an endpoint's GID sits on the network: its netdev's 802.1Q VLAN and the prefix of
/// its address there. Two GIDs in different VLANs of one L2 never reach each other, which
/// the GIDs alone do not show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// The VLAN ID of the GID's netdev; None: untagged.
    pub vlan: Option<u16>,
    /// The prefix length of the GID's address on that netdev; None: the address was not
    /// found there (a link-local GID's, or one removed).
    pub prefix_len: Option<u8>,
}

impl Segment {
    /// "VLAN 10" or "untagged".
    pub fn vlan_text(&self) -> String {
        self.vlan
            .map_or_else(|| "untagged".to_string(), |v| format!("VLAN {v}"))
    }
}

/// Which operations a run does; sent so both ends agree before any traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ops {
    pub send: bool,
    pub write: bool,
    pub read: bool,
}

impl Ops {
    pub fn bits(self) -> u8 {
        u8::from(self.send) | (u8::from(self.write) << 1) | (u8::from(self.read) << 2)
    }

    pub fn from_bits(bits: u8) -> Option<Ops> {
        (bits != 0 && bits & !7 == 0).then_some(Ops {
            send: bits & 1 != 0,
            write: bits & 2 != 0,
            read: bits & 4 != 0,
        })
    }
}

/// A reason the two ends cannot talk, found from the exchanged parameters alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Mismatch {
    LinkLayer {
        local: LinkLayer,
        remote: LinkLayer,
    },
    GidType {
        local: Option<GidType>,
        remote: Option<GidType>,
    },
    GidFamily {
        local: GidKind,
        remote: GidKind,
    },
    /// RoCE needs a GRH, so both ends need a GID index.
    NoGid {
        local: bool,
        remote: bool,
    },
    LidZero {
        local: bool,
        remote: bool,
    },
    Size {
        local: u32,
        remote: u32,
    },
    Iters {
        local: u32,
        remote: u32,
    },
    /// Run lengths of different kinds: `-n` against `--duration`, or `--lat` on one end.
    Length {
        local: String,
        remote: String,
    },
    Ops {
        local: u8,
        remote: u8,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |l: bool, r: bool| match (l, r) {
            (true, true) => "both ends",
            (true, false) => "this end",
            _ => "the peer",
        };
        match self {
            Mismatch::LinkLayer { local, remote } => {
                write!(f, "link layers differ: this port is {local:?}, the peer's is {remote:?}")
            }
            Mismatch::GidType { local, remote } => write!(
                f,
                "GID types differ: this end uses {}, the peer {} (RoCE v1 and v2 do not interoperate)",
                type_name(local),
                type_name(remote)
            ),
            Mismatch::GidFamily { local, remote } => write!(
                f,
                "GID address families differ: this end's GID is {}, the peer's is {}",
                kind_name(*local),
                kind_name(*remote)
            ),
            Mismatch::NoGid { local, remote } => {
                write!(f, "{} gave no GID index, but RoCE needs a GRH: pass -g N", side(*local, *remote))
            }
            Mismatch::LidZero { local, remote } => write!(
                f,
                "{} has LID 0 on InfiniBand: the port is not configured by a subnet manager",
                side(*local, *remote)
            ),
            Mismatch::Size { local, remote } => write!(f, "message sizes differ: -s {local} here, -s {remote} on the peer"),
            Mismatch::Iters { local, remote } => write!(f, "iteration counts differ: -n {local} here, -n {remote} on the peer"),
            Mismatch::Length { local, remote } => {
                write!(f, "run lengths differ: {local} here, {remote} on the peer")
            }
            Mismatch::Ops { local, remote } => write!(
                f,
                "operations differ: --op {} here, --op {} on the peer",
                ops_name(*local),
                ops_name(*remote)
            ),
        }
    }
}

fn type_name(t: &Option<GidType>) -> &'static str {
    match t {
        Some(GidType::Ib) => "IB/RoCE v1",
        Some(GidType::RoceV1) => "RoCE v1",
        Some(GidType::RoceV2) => "RoCE v2",
        _ => "an unknown type",
    }
}

fn kind_name(k: GidKind) -> &'static str {
    match k {
        GidKind::Zero => "empty (::)",
        GidKind::Ipv4Mapped => "IPv4-mapped",
        GidKind::LinkLocal => "link-local (fe80::/10)",
        GidKind::Loopback => "loopback (::1)",
        GidKind::Multicast => "multicast",
        GidKind::Global => "IPv6",
    }
}

pub fn ops_name(bits: u8) -> String {
    match Ops::from_bits(bits) {
        Some(Ops {
            send: true,
            write: true,
            read: true,
        }) => "all".into(),
        Some(o) => {
            let names: Vec<&str> = [(o.send, "send"), (o.write, "write"), (o.read, "read")]
                .into_iter()
                .filter_map(|(on, n)| on.then_some(n))
                .collect();
            names.join("+")
        }
        None => format!("0x{bits:02x}"),
    }
}

/// A CM event type as librdmacm numbers it (`enum rdma_cm_event_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    AddrResolved,
    AddrError,
    RouteResolved,
    RouteError,
    ConnectRequest,
    ConnectResponse,
    ConnectError,
    Unreachable,
    Rejected,
    Established,
    Disconnected,
    DeviceRemoval,
    AddrChange,
    TimewaitExit,
    Other(u32),
}

impl EventKind {
    /// The name rdma-core's `rdma_event_str` prints, so users can grep for it.
    pub fn name(self) -> String {
        let s = match self {
            EventKind::AddrResolved => "RDMA_CM_EVENT_ADDR_RESOLVED",
            EventKind::AddrError => "RDMA_CM_EVENT_ADDR_ERROR",
            EventKind::RouteResolved => "RDMA_CM_EVENT_ROUTE_RESOLVED",
            EventKind::RouteError => "RDMA_CM_EVENT_ROUTE_ERROR",
            EventKind::ConnectRequest => "RDMA_CM_EVENT_CONNECT_REQUEST",
            EventKind::ConnectResponse => "RDMA_CM_EVENT_CONNECT_RESPONSE",
            EventKind::ConnectError => "RDMA_CM_EVENT_CONNECT_ERROR",
            EventKind::Unreachable => "RDMA_CM_EVENT_UNREACHABLE",
            EventKind::Rejected => "RDMA_CM_EVENT_REJECTED",
            EventKind::Established => "RDMA_CM_EVENT_ESTABLISHED",
            EventKind::Disconnected => "RDMA_CM_EVENT_DISCONNECTED",
            EventKind::DeviceRemoval => "RDMA_CM_EVENT_DEVICE_REMOVAL",
            EventKind::AddrChange => "RDMA_CM_EVENT_ADDR_CHANGE",
            EventKind::TimewaitExit => "RDMA_CM_EVENT_TIMEWAIT_EXIT",
            EventKind::Other(n) => return format!("RDMA CM event {n}"),
        };
        s.to_string()
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}
