//! A failed RDMA connection-manager step, and why: the stage, the event or errno the kernel
//! gave, and one rule per failure that says what it means and what to change. Pure (the
//! FFI in `verbs::cm` builds these values), so every rule is unit-tested.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

use crate::explain::{errno_name, errno_text, wc_status_name};

/// Where in the connection's life a failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Opening librdmacm and its event channel.
    Setup,
    Bind,
    ResolveAddr,
    ResolveRoute,
    CreateQp,
    Listen,
    Connect,
    Accept,
    Transfer,
    Disconnect,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Setup => "setup",
            Stage::Bind => "bind",
            Stage::ResolveAddr => "resolve address",
            Stage::ResolveRoute => "resolve route",
            Stage::CreateQp => "create QP",
            Stage::Listen => "listen",
            Stage::Connect => "connect",
            Stage::Accept => "accept",
            Stage::Transfer => "transfer",
            Stage::Disconnect => "disconnect",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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

/// What went wrong, with the raw numbers the kernel gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// `librdmacm.so.1` (or a library it needs, like libibverbs) could not be loaded.
    LibraryMissing { loader_error: String },
    /// librdmacm loaded but could not open the kernel's CM (`/dev/infiniband/rdma_cm`).
    NoKernelCm {
        errno: i32,
        device_node_exists: bool,
        devices_present: bool,
    },
    /// A librdmacm or libibverbs call failed synchronously.
    Call { call: &'static str, errno: i32 },
    /// The CM reported an error event; `status` is the event's status (a negative errno,
    /// or for REJECTED on IB/RoCE the IB CM reject reason).
    Event { event: EventKind, status: i32 },
    /// No event within the deadline.
    Timeout {
        waiting_for: &'static str,
        after: Duration,
    },
    /// A work completion with an error status during the transfer.
    Completion {
        op: &'static str,
        status: u32,
        vendor_err: u32,
    },
    /// The peer spoke, but not our private-data layout.
    Protocol(String),
    /// The server accepted, but its accept carries no rdmactl buffer description: another
    /// program (rping -s, rdma_server) listens on that port.
    ForeignServer(String),
    /// The port has no IP address for the CM to bind: neither an IPv4 GID nor an address
    /// on its netdev (`netdev`, when it has one).
    NoAddress { netdev: Option<String> },
    /// An rdmactl server rejected the connection and said why in the reject's private data.
    ServerRejected { status: i32, reason: String },
    /// The transfer completed but the bytes differ from what was sent.
    Corrupted {
        op: &'static str,
        offset: usize,
        len: usize,
    },
}

/// A failed CM step: the peer, the stage, the numbers, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmError {
    pub stage: Stage,
    pub peer: Option<SocketAddr>,
    /// The RDMA device, once the CM had bound the id to one.
    pub device: Option<String>,
    /// The CM had bound an InfiniBand port (so IPoIB and subnet-manager causes apply).
    pub infiniband: bool,
    pub failure: Failure,
    /// Boxed: the error travels in every data-path `Result`.
    pub facts: Box<Facts>,
}

/// What is known besides the failure itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// How long the step ran before the CM reported the failure event.
    pub elapsed: Option<Duration>,
    /// What the caller looked up on this host (the source address's netdev, the route to
    /// the peer): shown as evidence.
    pub evidence: Vec<String>,
    /// The netdev carrying this side's address, when it is down: then that, not the
    /// network, is why the kernel found no way to the peer.
    pub source_netdev_down: Option<String>,
}

impl CmError {
    pub fn new(stage: Stage, peer: Option<SocketAddr>, failure: Failure) -> CmError {
        CmError {
            stage,
            peer,
            device: None,
            infiniband: false,
            failure,
            facts: Box::default(),
        }
    }

    /// The errno behind the failure, positive, when there is one.
    pub fn errno(&self) -> Option<i32> {
        match &self.failure {
            Failure::Call { errno, .. } | Failure::NoKernelCm { errno, .. } => Some(*errno),
            Failure::Event {
                event: EventKind::Rejected,
                ..
            } => None,
            Failure::Event { status, .. } if *status < 0 => Some(-status),
            _ => None,
        }
    }

    /// The exit code class: a missing stack is exit 4, everything else found a failure.
    pub fn is_missing_stack(&self) -> bool {
        matches!(
            self.failure,
            Failure::LibraryMissing { .. } | Failure::NoKernelCm { .. }
        )
    }

    /// One line naming what happened, with the numbers.
    pub fn summary(&self) -> String {
        let peer = self
            .peer
            .map(|p| format!(" toward {p}"))
            .unwrap_or_default();
        let on = self
            .device
            .as_ref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default();
        let what = match &self.failure {
            Failure::LibraryMissing { loader_error } => {
                format!("librdmacm could not be loaded ({loader_error})")
            }
            Failure::NoKernelCm { errno, .. } => {
                format!("cannot open the kernel RDMA CM: {}", errno_text(*errno))
            }
            Failure::Call { call, errno } => format!("{call} failed: {}", errno_text(*errno)),
            Failure::Event {
                event: EventKind::Rejected,
                status,
            } => {
                format!(
                    "{} (status {status}: {})",
                    EventKind::Rejected.name(),
                    reject_reason_name(*status)
                )
            }
            Failure::Event { event, status } if *status < 0 => {
                format!(
                    "{} (status {status}: {})",
                    event.name(),
                    errno_text(-status)
                )
            }
            Failure::Event { event, status } => format!("{} (status {status})", event.name()),
            Failure::Timeout { waiting_for, after } => {
                format!("no {waiting_for} within {:.1} s", after.as_secs_f64())
            }
            Failure::Completion {
                op,
                status,
                vendor_err,
            } => format!(
                "{op} completed with {} ({status}), vendor error {vendor_err:#x}",
                wc_status_name(*status)
            ),
            Failure::Protocol(text) | Failure::ForeignServer(text) => text.clone(),
            Failure::NoAddress { netdev: Some(n) } => {
                format!("no IP address on {n}, the port's netdev")
            }
            Failure::NoAddress { netdev: None } => "no netdev, so no IP address".into(),
            Failure::ServerRejected { status, reason } => format!(
                "{} (status {status}: {}): the server said \"{reason}\"",
                EventKind::Rejected.name(),
                reject_reason_name(*status)
            ),
            Failure::Corrupted { op, offset, len } => {
                format!("{op}: the data arrived corrupted at byte {offset} of {len}")
            }
        };
        let after = self
            .facts
            .elapsed
            .map(|e| format!(" after {:.2} s", e.as_secs_f64()))
            .unwrap_or_default();
        format!("{}{peer}{on}: {what}{after}", self.stage)
    }

    /// Why it happened, as far as the numbers tell.
    pub fn explanation(&self) -> String {
        explain(self).why
    }

    /// What to do next.
    pub fn fix(&self) -> String {
        explain(self).fix
    }

    /// The rule that explained it: stable and kebab-case, as the verbs rules' codes.
    #[cfg(test)]
    pub fn code(&self) -> &'static str {
        explain(self).code
    }
}

impl fmt::Display for CmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Why { why, fix, .. } = explain(self);
        writeln!(f, "{}", self.summary())?;
        writeln!(f, "  why: {why}")?;
        for e in &self.facts.evidence {
            writeln!(f, "  seen: {e}")?;
        }
        write!(f, "  fix: {fix}")
    }
}

impl std::error::Error for CmError {}

/// IB CM reject reasons (IBTA CM REJ, `enum ib_cm_rej_reason`), the status of
/// RDMA_CM_EVENT_REJECTED on InfiniBand and RoCE.
pub fn reject_reason_name(status: i32) -> &'static str {
    match status {
        1 => "IB_CM_REJ_NO_QP",
        2 => "IB_CM_REJ_NO_EEC",
        3 => "IB_CM_REJ_NO_RESOURCES",
        4 => "IB_CM_REJ_TIMEOUT",
        5 => "IB_CM_REJ_UNSUPPORTED",
        6 => "IB_CM_REJ_INVALID_COMM_ID",
        7 => "IB_CM_REJ_INVALID_COMM_INSTANCE",
        8 => "IB_CM_REJ_INVALID_SERVICE_ID",
        9 => "IB_CM_REJ_INVALID_TRANSPORT_TYPE",
        10 => "IB_CM_REJ_STALE_CONN",
        11 => "IB_CM_REJ_RDC_NOT_EXIST",
        12 => "IB_CM_REJ_INVALID_GID",
        13 => "IB_CM_REJ_INVALID_LID",
        14 => "IB_CM_REJ_INVALID_SL",
        15 => "IB_CM_REJ_INVALID_TRAFFIC_CLASS",
        16 => "IB_CM_REJ_INVALID_HOP_LIMIT",
        17 => "IB_CM_REJ_INVALID_PACKET_RATE",
        24 => "IB_CM_REJ_PORT_CM_REDIRECT",
        25 => "IB_CM_REJ_PORT_REDIRECT",
        26 => "IB_CM_REJ_INVALID_MTU",
        27 => "IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES",
        28 => "IB_CM_REJ_CONSUMER_DEFINED",
        29 => "IB_CM_REJ_INVALID_RNR_RETRY",
        30 => "IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID",
        31 => "IB_CM_REJ_INVALID_CLASS_VERSION",
        32 => "IB_CM_REJ_INVALID_FLOW_LABEL",
        33 => "IB_CM_REJ_INVALID_ALT_FLOW_LABEL",
        35 => "IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED",
        -111 => "ECONNREFUSED (iWARP)",
        -110 => "ETIMEDOUT",
        _ => "unknown reject reason",
    }
}

/// One rule's verdict: the stable code, why it happened and what to change.
struct Why {
    code: &'static str,
    why: String,
    fix: String,
}

fn why(code: &'static str, why: impl Into<String>, fix: impl Into<String>) -> Why {
    Why {
        code,
        why: why.into(),
        fix: fix.into(),
    }
}

/// The rules, one per failure the CM can report. Pure, so every row is unit-tested.
fn explain(err: &CmError) -> Why {
    let peer = err
        .peer
        .map(|p| p.ip().to_string())
        .unwrap_or_else(|| "the peer".into());
    let port = err
        .peer
        .map(|p| p.port().to_string())
        .unwrap_or_else(|| "the port".into());
    let ib = err.infiniband;
    let finding_the_peer = matches!(
        err.stage,
        Stage::ResolveAddr | Stage::ResolveRoute | Stage::Connect
    );
    if let (Some(dev), true) = (&err.facts.source_netdev_down, finding_the_peer) {
        return why(
            "cm-netdev-down",
            format!("{dev}, the netdev of this side's address, is down: the kernel has no way to {peer} through it"),
            format!("bring it up (`ip link set {dev} up`); if it stays down, check the cable and the switch port (for veth, the peer end); rdmactl ports shows the port state"),
        );
    }
    match (&err.failure, err.stage) {
        (Failure::LibraryMissing { .. }, _) => why(
            "cm-library-missing",
            "librdmacm.so.1 is loaded at run time and is not installed (or a library it needs is missing)",
            "install librdmacm1 (Debian/Ubuntu: apt install librdmacm1; RHEL: dnf install librdmacm), or use the TCP exchange (omit --cm)",
        ),
        (Failure::NoKernelCm { devices_present: false, .. }, _) => why(
            "no-kernel-rdma",
            "there is no RDMA device: /sys/class/infiniband is empty or missing, so no RDMA driver is loaded",
            "load your NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...), or for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <if>",
        ),
        (Failure::NoKernelCm { device_node_exists: false, .. }, _) => why(
            "cm-no-rdma-ucm",
            "/dev/infiniband/rdma_cm does not exist: the kernel's user-space CM module (rdma_ucm) is not loaded",
            "modprobe rdma_ucm (rdma-core's rdma-load-modules@rdma.service does this at boot), or use the TCP exchange (omit --cm)",
        ),
        (Failure::NoKernelCm { errno, .. }, _) if *errno == libc::EACCES || *errno == libc::EPERM => why(
            "cm-device-access",
            "/dev/infiniband/rdma_cm exists but this process may not open it (permissions, or a container without the device)",
            "pass /dev/infiniband/rdma_cm into the container, or check its mode (the kernel creates it 0666)",
        ),
        (Failure::NoKernelCm { .. }, _) => why(
            "cm-no-device",
            "librdmacm found no usable RDMA device (none registered, or libibverbs lists none)",
            "run rdmactl devices and rdmactl doctor; load the NIC's RDMA driver",
        ),
        (Failure::Call { errno, .. }, Stage::Bind) if *errno == libc::EADDRNOTAVAIL || *errno == libc::ENODEV => why(
            "cm-bind-not-local",
            "the address to bind is not configured on an RDMA-capable netdev of this host",
            "give an address shown by `ip -br addr` on the netdev of an RDMA port (rdmactl ports shows the netdev)",
        ),
        (Failure::Call { errno, .. }, Stage::Bind | Stage::Listen) if *errno == libc::EADDRINUSE => why(
            "cm-port-in-use",
            format!("another RDMA CM listener already uses port {port} on that address"),
            "stop the other server, or pick another port with -p",
        ),
        (Failure::Call { .. }, Stage::ResolveAddr)
        | (Failure::Event { event: EventKind::AddrError, .. }, _) => addr_error(err, &peer, ib),
        (Failure::Event { event: EventKind::RouteError, status }, _)
        | (Failure::Call { errno: status, call: "rdma_resolve_route" }, _) => {
            if ib && status.abs() == libc::ETIMEDOUT {
                why(
                    "cm-no-path-record",
                    "the path record query to the subnet administrator timed out: no subnet manager answers, or the peer's GID is unknown to it",
                    "check that opensm (or the switch's SM) runs: sminfo; ibstat shows the SM LID",
                )
            } else {
                why(
                    "cm-no-route",
                    format!("the kernel found no usable route from the RDMA netdev to {peer} (the netdev is down, or the route leaves through another interface)"),
                    format!("check `ip route get {peer}` and the port state (rdmactl ports); RoCE needs the route to use the RDMA port's netdev"),
                )
            }
        }
        (Failure::Event { event: EventKind::Unreachable, .. }, _) => why(
            "cm-unreachable",
            format!("{peer} did not answer the connection request: no RDMA CM there, the host is down, or RoCE packets (UDP 4791) are dropped on the way"),
            format!("check that the server runs on {peer} (rdmactl pingpong --cm on it), that UDP 4791 passes, and that both ends use RoCE v2"),
        ),
        (Failure::Event { event: EventKind::Rejected, status }, _) => match *status {
            8 | -111 => why(
                "cm-no-listener",
                format!("nobody listens on {peer} port {port}: the peer's kernel answered the request with a reject (connection refused)"),
                format!("start the server first (rdmactl pingpong --cm on {peer}), and use the same -p on both sides"),
            ),
            28 => why(
                "cm-rejected-by-server",
                "the server application refused the connection (a consumer-defined reject)",
                "read the server's output; a version or parameter mismatch is the usual cause",
            ),
            26 => why(
                "cm-mtu-mismatch",
                "the two ends disagree on the path MTU",
                "set the same MTU on both netdevs (RoCE active_mtu follows the netdev MTU)",
            ),
            3 | 27 => why(
                "cm-peer-out-of-resources",
                "the server ran out of QPs or responder resources",
                "free resources on the server, or lower the connection count",
            ),
            4 => why(
                "cm-reply-timeout",
                "the server's CM timed out waiting for this side's reply",
                "check for packet loss between the hosts and that this host answers quickly",
            ),
            12 => why(
                "cm-invalid-gid",
                "the server could not use the GID this side sent",
                "check both GID tables (rdmactl gids) and the RoCE type on each end",
            ),
            _ => why(
                "cm-rejected",
                "the peer's CM rejected the connection request",
                "look up the reject reason above; compare both ends' configuration (rdmactl check)",
            ),
        },
        (Failure::Event { event: EventKind::ConnectError, .. }, _) => why(
            "cm-connect-error",
            "the CM exchange got through, but bringing the QP to RTR/RTS or the final handshake failed",
            "run rdmactl check --peer on both ends: GID table, route and MTU",
        ),
        (Failure::Event { event: EventKind::Disconnected, .. }, _) => why(
            "cm-peer-disconnected",
            "the peer closed the connection (its process ended, or it called rdma_disconnect) before this step finished",
            "read the peer's output for its own error",
        ),
        (Failure::Event { event: EventKind::DeviceRemoval, .. }, _) => why(
            "cm-device-removed",
            "the RDMA device was removed under the connection (driver unloaded, `rdma link delete`, or its netdev deleted)",
            "check `rdma link` and dmesg, then restart the test",
        ),
        (Failure::Event { event: EventKind::AddrChange, .. }, _) => why(
            "cm-address-changed",
            "the address of the netdev under the connection changed (bonding fail-over or an address removed)",
            "restart the test once the address is stable",
        ),
        (Failure::Event { .. }, _) => why(
            "cm-unexpected-event",
            "the CM reported an event this step did not expect",
            "rerun; if it repeats, compare with rping against the same peer",
        ),
        (Failure::Timeout { waiting_for, .. }, Stage::ResolveAddr) => why(
            "cm-no-neighbour",
            format!("the kernel gave no answer for {waiting_for}: no ARP/neighbour reply from {peer}"),
            format!("check `ip neigh show {peer}` and `ping {peer}`; on one host with two ports on a veth pair set net.ipv4.conf.all.accept_local=1"),
        ),
        (Failure::Timeout { .. }, Stage::Connect) => why(
            "cm-connect-timeout",
            format!("{peer} did not answer the connection request in time: no server there, the host is down, or RoCE packets (UDP 4791) are dropped"),
            format!("start the server on {peer} first; check the path with rdmactl check --peer {peer}; raise --timeout for slow links"),
        ),
        (Failure::Timeout { .. }, Stage::Accept | Stage::Listen) => why(
            "cm-no-client",
            "no client connected within the time allowed",
            "start the client (rdmactl pingpong --cm SERVER) toward this address and port",
        ),
        (Failure::Timeout { .. }, Stage::Transfer) => why(
            "cm-transfer-timeout",
            "no completion arrived in time: the peer stopped answering, or packets are lost",
            "check the peer's output; rxe retries forever when retry_cnt is 7, rdmactl uses 6",
        ),
        (Failure::Timeout { .. }, _) => why(
            "cm-timeout",
            "the step did not finish in time",
            "raise --timeout, or check the peer",
        ),
        (Failure::Completion { status, .. }, _) => match wc_status_name(*status) {
            "IBV_WC_RETRY_EXC_ERR" => why(
                "retry-exceeded",
                "the packets never reached the peer, or its acknowledgements never came back (peer gone, wrong route, RoCE v1/v2 mismatch)",
                "check the peer is alive; run rdmactl check --peer on both ends",
            ),
            "IBV_WC_RNR_RETRY_EXC_ERR" => why(
                "rnr-retry-exceeded",
                "a SEND arrived while the peer had no receive posted",
                "the peer must post receives before the sender sends",
            ),
            "IBV_WC_REM_ACCESS_ERR" => why(
                "remote-access",
                "the peer refused the remote access: wrong rkey, address out of its buffer, or missing access rights",
                "check the buffer address, rkey and length exchanged in the CM private data",
            ),
            "IBV_WC_WR_FLUSH_ERR" => why(
                "flushed",
                "the QP went to the error state (the connection was torn down) while work was queued",
                "look at the first error before this one, or at the peer's output",
            ),
            _ => why(
                "completion-error",
                "the work request failed",
                "see the completion status; compare with ibv_rc_pingpong",
            ),
        },
        (Failure::NoAddress { netdev }, _) => {
            let dev = netdev.as_deref().unwrap_or("its netdev");
            if ib {
                why(
                    "cm-no-ipoib-address",
                    format!("the CM connects by IP address, and this InfiniBand port's IPoIB interface {dev} has none (failure-modes row 12; the CM would answer ADDR_ERROR -19)"),
                    format!("configure IPoIB: ip addr add ADDR/PREFIX dev {dev} and ip link set {dev} up; or use the TCP exchange (omit --cm)"),
                )
            } else {
                why(
                    "cm-no-address",
                    format!("the CM connects by IP address, and this port has none: no IPv4 GID, and no address on {dev}"),
                    format!("put an address on {dev} (ip addr add ADDR/PREFIX dev {dev}); the RoCE GID table follows it"),
                )
            }
        }
        (Failure::ServerRejected { reason, .. }, _) if reason.starts_with("busy serving") => why(
            "cm-server-busy",
            format!("the rdmactl server serves one client at a time and is {reason}"),
            "wait until that run ends, or start another server with another -p",
        ),
        (Failure::ServerRejected { reason, .. }, _) if reason.contains("larger than") => why(
            "cm-rejected-by-server",
            format!("the rdmactl server refused the connection: {reason}"),
            "lower -s on the client to 256 MiB or less",
        ),
        (Failure::ServerRejected { reason, .. }, _) => why(
            "cm-rejected-by-server",
            format!("the rdmactl server refused the connection: {reason}"),
            "run the same rdmactl version on both ends, and read the server's output",
        ),
        (Failure::ForeignServer(_), _) => why(
            "cm-not-rdmactl-server",
            "the server accepted the connection but is not an rdmactl --cm server: stock servers (rping -s, rdma_server) speak their own protocol and send no buffer description",
            "run rdmactl pingpong --cm on the server; the other way round works: an rdmactl server serves rping -c and rdma_client",
        ),
        (Failure::Protocol(_), _) => why(
            "cm-protocol",
            "the peer is not an rdmactl --cm peer of a compatible version (its private data has another layout)",
            "run the same rdmactl version on both ends",
        ),
        (Failure::Corrupted { .. }, _) => why(
            "data-mismatch",
            "every work request completed successfully, yet the bytes differ: memory corruption on either host, a buggy provider, or a peer that changed its buffer meanwhile",
            "rerun; if it repeats, run rdmactl selftest on each host to find the side that corrupts",
        ),
        (Failure::Call { call, .. }, _) => why(
            "cm-call-failed",
            format!("{call} was refused by the kernel or the provider"),
            "check dmesg and rdmactl doctor",
        ),
    }
}

fn addr_error(err: &CmError, peer: &str, ib: bool) -> Why {
    let errno = match &err.failure {
        Failure::Call { errno, .. } => *errno,
        Failure::Event { status, .. } => status.abs(),
        _ => 0,
    };
    match errno {
        libc::ENODEV if ib => why(
            "cm-no-ipoib-address",
            format!("the route to {peer} leaves through an IPoIB interface without an IP address, or through a netdev that has no RDMA port (failure-modes row 12)"),
            "configure an IP address on the port's IPoIB interface (ip addr add ... dev ib0), or use the TCP exchange (omit --cm)",
        ),
        libc::ENODEV => why(
            "cm-no-rdma-netdev",
            format!("the route to {peer} leaves through a netdev with no RDMA device on it (e.g. a plain NIC), or on InfiniBand an IPoIB interface without an address"),
            format!("give the peer's address on the RDMA network, or bind the source to the RDMA netdev's address (--bind); `ip route get {peer}` shows the netdev"),
        ),
        libc::ENETUNREACH => why(
            "cm-no-route",
            format!("there is no route to {peer} (or the netdev that carried it is down)"),
            format!("check `ip route get {peer}` and `ip -br link`: bring the RDMA port's netdev up, add a route, or use the peer's address on the RDMA subnet"),
        ),
        libc::EHOSTUNREACH | libc::ETIMEDOUT => why(
            "cm-no-neighbour",
            format!("no ARP/neighbour reply from {peer} through the netdev the route picks (the host is down or not on that subnet, or ARP is filtered; on one host with two ports on a veth pair the reply needs accept_local)"),
            format!("check `ping {peer}` and `ip neigh show {peer}`; on one host set net.ipv4.conf.all.accept_local=1 and rp_filter=0"),
        ),
        libc::EADDRNOTAVAIL => why(
            "cm-bind-not-local",
            "the source address is not configured on this host",
            "give a local address with --bind (ip -br addr lists them)",
        ),
        libc::EINVAL => why(
            "cm-bad-address",
            format!("the kernel CM cannot use {peer} (multicast, broadcast, or an address family the port does not support)"),
            "give the peer's unicast address",
        ),
        _ => why(
            "cm-resolve-failed",
            format!("the kernel could not map {peer} to an RDMA device and a destination MAC/GID"),
            format!("check `ip route get {peer}` and rdmactl check --peer {peer}"),
        ),
    }
}

// ---------------------------------------------------------------- JSON

/// A CM failure as `-j` prints it: the keys of a verbs failure (`step`, `cause`, `context`,
/// `errno`, `errno_name`, `wc_status`, `explanation`), so scripts read both the same way.
#[derive(Debug, Clone, Serialize)]
pub struct CmFailureReport {
    pub step: Stage,
    /// The one-line summary with the numbers, as printed.
    pub message: String,
    pub cause: Cause,
    pub context: CmContext,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errno: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errno_name: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wc_status: Option<&'static str>,
    pub explanation: CmExplanation,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cause {
    LibraryMissing {
        loader_error: String,
    },
    NoKernelCm {
        errno: i32,
    },
    Errno {
        call: &'static str,
        errno: i32,
    },
    CmEvent {
        event: String,
        status: i32,
        /// For REJECTED: the IB CM reject reason the status stands for.
        #[serde(skip_serializing_if = "Option::is_none")]
        reject_reason: Option<&'static str>,
        /// For REJECTED by an rdmactl server: its reason, from the reject's private data.
        #[serde(skip_serializing_if = "Option::is_none")]
        server_reason: Option<String>,
    },
    Timeout {
        waiting_for: &'static str,
        seconds: f64,
    },
    WcStatus {
        op: &'static str,
        status: u32,
        vendor_err: u32,
    },
    Protocol {
        text: String,
    },
    NoAddress {
        netdev: Option<String>,
    },
    Mismatch {
        op: &'static str,
        offset: usize,
        len: usize,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct CmContext {
    pub device: Option<String>,
    pub peer: Option<String>,
    pub infiniband: bool,
    /// Seconds from the step's start to the failure event, when the CM reported one.
    pub after_seconds: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CmExplanation {
    pub code: &'static str,
    pub summary: String,
    pub evidence: Vec<String>,
    pub fix: String,
    /// The CM picks the GID itself; always null, kept for the verbs failures' shape.
    pub suggested_gid_index: Option<u32>,
}

impl CmError {
    pub fn report(&self) -> CmFailureReport {
        let cause = match &self.failure {
            Failure::LibraryMissing { loader_error } => Cause::LibraryMissing {
                loader_error: loader_error.clone(),
            },
            Failure::NoKernelCm { errno, .. } => Cause::NoKernelCm { errno: *errno },
            Failure::Call { call, errno } => Cause::Errno {
                call,
                errno: *errno,
            },
            Failure::Event { event, status } => Cause::CmEvent {
                event: event.name(),
                status: *status,
                reject_reason: (*event == EventKind::Rejected).then(|| reject_reason_name(*status)),
                server_reason: None,
            },
            Failure::ServerRejected { status, reason } => Cause::CmEvent {
                event: EventKind::Rejected.name(),
                status: *status,
                reject_reason: Some(reject_reason_name(*status)),
                server_reason: Some(reason.clone()),
            },
            Failure::Timeout { waiting_for, after } => Cause::Timeout {
                waiting_for,
                seconds: after.as_secs_f64(),
            },
            Failure::Completion {
                op,
                status,
                vendor_err,
            } => Cause::WcStatus {
                op,
                status: *status,
                vendor_err: *vendor_err,
            },
            Failure::Protocol(text) | Failure::ForeignServer(text) => {
                Cause::Protocol { text: text.clone() }
            }
            Failure::NoAddress { netdev } => Cause::NoAddress {
                netdev: netdev.clone(),
            },
            Failure::Corrupted { op, offset, len } => Cause::Mismatch {
                op,
                offset: *offset,
                len: *len,
            },
        };
        let errno = self.errno();
        let wc_status = match &self.failure {
            Failure::Completion { status, .. } => Some(wc_status_name(*status)),
            _ => None,
        };
        let Why { code, why, fix } = explain(self);
        CmFailureReport {
            step: self.stage,
            message: self.summary(),
            cause,
            context: CmContext {
                device: self.device.clone(),
                peer: self.peer.map(|p| p.to_string()),
                infiniband: self.infiniband,
                after_seconds: self.facts.elapsed.map(|e| e.as_secs_f64()),
            },
            errno,
            errno_name: errno.map(errno_name),
            wc_status,
            explanation: CmExplanation {
                code,
                summary: why,
                evidence: self.facts.evidence.clone(),
                fix,
                suggested_gid_index: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LinkLayer;

    fn err(stage: Stage, failure: Failure, ll: Option<LinkLayer>) -> CmError {
        let mut e = CmError::new(stage, Some("192.168.77.1:18515".parse().unwrap()), failure);
        e.device = Some("rxe1".into());
        e.infiniband = ll == Some(LinkLayer::InfiniBand);
        e
    }

    #[test]
    fn reject_reasons() {
        let cases = [
            (8, "IB_CM_REJ_INVALID_SERVICE_ID"),
            (28, "IB_CM_REJ_CONSUMER_DEFINED"),
            (26, "IB_CM_REJ_INVALID_MTU"),
            (-111, "ECONNREFUSED (iWARP)"),
            (200, "unknown reject reason"),
        ];
        for (status, want) in cases {
            assert_eq!(reject_reason_name(status), want, "{status}");
        }
    }

    /// Every failure the VM can produce, and the rows of failure-modes.md about the CM:
    /// (stage, failure, link layer, text the summary must have, text why must have, text fix must have).
    #[test]
    fn explanations() {
        let ev = |event, status| Failure::Event { event, status };
        let call = |call, errno| Failure::Call { call, errno };
        let ib = Some(LinkLayer::InfiniBand);
        let eth = Some(LinkLayer::Ethernet);
        type Row = (
            Stage,
            Failure,
            Option<LinkLayer>,
            &'static str,
            &'static str,
            &'static str,
        );
        let cases: Vec<Row> = vec![
            (
                Stage::Setup,
                Failure::LibraryMissing {
                    loader_error: "librdmacm.so.1: cannot open shared object file".into(),
                },
                None,
                "librdmacm could not be loaded",
                "not installed",
                "librdmacm1",
            ),
            (
                Stage::Setup,
                Failure::NoKernelCm {
                    errno: libc::ENODEV,
                    device_node_exists: false,
                    devices_present: true,
                },
                None,
                "ENODEV",
                "rdma_ucm",
                "modprobe rdma_ucm",
            ),
            (
                Stage::Setup,
                Failure::NoKernelCm {
                    errno: libc::ENODEV,
                    device_node_exists: false,
                    devices_present: false,
                },
                None,
                "ENODEV",
                "no RDMA device",
                "modprobe rdma_rxe",
            ),
            (
                Stage::ResolveAddr,
                ev(EventKind::AddrError, -libc::ENODEV),
                ib.clone(),
                "RDMA_CM_EVENT_ADDR_ERROR (status -19: ENODEV",
                "IPoIB interface without an IP address",
                "IPoIB",
            ),
            (
                Stage::ResolveAddr,
                ev(EventKind::AddrError, -libc::ENODEV),
                eth.clone(),
                "status -19",
                "no RDMA device on it",
                "--bind",
            ),
            (
                Stage::ResolveAddr,
                ev(EventKind::AddrError, -libc::ETIMEDOUT),
                eth.clone(),
                "ETIMEDOUT",
                "no ARP/neighbour reply from 192.168.77.1",
                "accept_local",
            ),
            (
                Stage::ResolveAddr,
                call("rdma_resolve_addr", libc::ENETUNREACH),
                None,
                "rdma_resolve_addr failed: ENETUNREACH",
                "no route to 192.168.77.1",
                "ip route get 192.168.77.1",
            ),
            (
                Stage::Bind,
                call("rdma_resolve_addr", libc::EADDRNOTAVAIL),
                None,
                "EADDRNOTAVAIL",
                "not configured",
                "ip -br addr",
            ),
            (
                Stage::ResolveRoute,
                ev(EventKind::RouteError, -libc::ETIMEDOUT),
                ib.clone(),
                "RDMA_CM_EVENT_ROUTE_ERROR",
                "subnet administrator",
                "sminfo",
            ),
            (
                Stage::ResolveRoute,
                ev(EventKind::RouteError, -libc::ENETUNREACH),
                eth.clone(),
                "RDMA_CM_EVENT_ROUTE_ERROR",
                "no usable route",
                "ip route get 192.168.77.1",
            ),
            (
                Stage::Connect,
                ev(EventKind::Rejected, 8),
                eth.clone(),
                "REJECTED (status 8: IB_CM_REJ_INVALID_SERVICE_ID)",
                "nobody listens on 192.168.77.1 port 18515",
                "start the server first",
            ),
            (
                Stage::Connect,
                ev(EventKind::Rejected, 28),
                eth.clone(),
                "IB_CM_REJ_CONSUMER_DEFINED",
                "server application refused",
                "server's output",
            ),
            (
                Stage::Connect,
                ev(EventKind::Unreachable, -libc::ETIMEDOUT),
                eth.clone(),
                "RDMA_CM_EVENT_UNREACHABLE (status -110",
                "did not answer",
                "UDP 4791",
            ),
            (
                Stage::Connect,
                ev(EventKind::ConnectError, -libc::EINVAL),
                eth.clone(),
                "RDMA_CM_EVENT_CONNECT_ERROR",
                "RTR/RTS",
                "check --peer",
            ),
            (
                Stage::Transfer,
                ev(EventKind::Disconnected, 0),
                eth.clone(),
                "RDMA_CM_EVENT_DISCONNECTED",
                "peer closed",
                "peer's output",
            ),
            (
                Stage::Transfer,
                ev(EventKind::DeviceRemoval, 0),
                eth.clone(),
                "RDMA_CM_EVENT_DEVICE_REMOVAL",
                "removed",
                "rdma link",
            ),
            (
                Stage::Connect,
                Failure::Timeout {
                    waiting_for: "answer to the connection request",
                    after: Duration::from_secs(5),
                },
                eth.clone(),
                "no answer to the connection request within 5.0 s",
                "did not answer",
                "start the server",
            ),
            (
                Stage::ResolveAddr,
                Failure::Timeout {
                    waiting_for: "address resolution",
                    after: Duration::from_secs(2),
                },
                eth.clone(),
                "within 2.0 s",
                "no ARP",
                "accept_local",
            ),
            (
                Stage::Transfer,
                Failure::Completion {
                    op: "RDMA READ",
                    status: 12, // IBV_WC_RETRY_EXC_ERR
                    vendor_err: 0x81,
                },
                eth.clone(),
                "IBV_WC_RETRY_EXC_ERR (12), vendor error 0x81",
                "never reached",
                "check --peer",
            ),
            (
                Stage::Transfer,
                Failure::Completion {
                    op: "RDMA WRITE",
                    status: 10, // IBV_WC_REM_ACCESS_ERR
                    vendor_err: 0,
                },
                eth.clone(),
                "IBV_WC_REM_ACCESS_ERR",
                "rkey",
                "private data",
            ),
            (
                Stage::Bind,
                call("rdma_bind_addr", libc::EADDRINUSE),
                None,
                "EADDRINUSE",
                "already uses port 18515",
                "-p",
            ),
            (
                Stage::Connect,
                Failure::ForeignServer("the peer's CM private data starts with [00, 00, 00, 00], not rdmactl's \"RDCT\"".into()),
                None,
                "not rdmactl",
                "not an rdmactl --cm server",
                "run rdmactl pingpong --cm on the server",
            ),
            (
                Stage::Accept,
                Failure::Protocol("the peer's CM private data starts with [00, 00, 00, 00]".into()),
                None,
                "private data",
                "compatible version",
                "same rdmactl version",
            ),
        ];
        for (stage, failure, ll, summary, why, fix) in cases {
            let e = err(stage, failure, ll);
            let (s, w, f) = (e.summary(), e.explanation(), e.fix());
            assert!(s.contains(summary), "summary {s:?} lacks {summary:?}");
            assert!(w.contains(why), "why {w:?} lacks {why:?} ({s})");
            assert!(f.contains(fix), "fix {f:?} lacks {fix:?} ({s})");
            let shown = e.to_string();
            assert!(
                shown.contains("\n  why: ") && shown.contains("\n  fix: "),
                "{shown}"
            );
        }
    }

    #[test]
    fn summary_says_when_the_event_came() {
        let mut e = err(
            Stage::Connect,
            Failure::Event {
                event: EventKind::Rejected,
                status: 8,
            },
            None,
        );
        e.facts.elapsed = Some(Duration::from_millis(31));
        assert!(
            e.summary()
                .ends_with("IB_CM_REJ_INVALID_SERVICE_ID) after 0.03 s"),
            "{}",
            e.summary()
        );
    }

    #[test]
    fn errno_and_exit_class() {
        let e = err(
            Stage::ResolveAddr,
            Failure::Event {
                event: EventKind::AddrError,
                status: -110,
            },
            None,
        );
        assert_eq!(e.errno(), Some(110));
        assert!(!e.is_missing_stack());
        let r = err(
            Stage::Connect,
            Failure::Event {
                event: EventKind::Rejected,
                status: 8,
            },
            None,
        );
        assert_eq!(r.errno(), None);
        let m = err(
            Stage::Setup,
            Failure::LibraryMissing {
                loader_error: String::new(),
            },
            None,
        );
        assert!(m.is_missing_stack());
    }

    /// Scripts match on the code: each failure the VM produces has its own.
    #[test]
    fn codes() {
        let cases = [
            (
                Stage::Connect,
                Failure::Event {
                    event: EventKind::Rejected,
                    status: 8,
                },
                "cm-no-listener",
            ),
            (
                Stage::ResolveAddr,
                Failure::Call {
                    call: "rdma_resolve_addr",
                    errno: libc::ENETUNREACH,
                },
                "cm-no-route",
            ),
            (
                Stage::ResolveAddr,
                Failure::Event {
                    event: EventKind::AddrError,
                    status: -libc::ETIMEDOUT,
                },
                "cm-no-neighbour",
            ),
            (
                Stage::Connect,
                Failure::Event {
                    event: EventKind::Unreachable,
                    status: -libc::ETIMEDOUT,
                },
                "cm-unreachable",
            ),
            (
                Stage::Transfer,
                Failure::Event {
                    event: EventKind::Disconnected,
                    status: 0,
                },
                "cm-peer-disconnected",
            ),
            (
                Stage::Transfer,
                Failure::Event {
                    event: EventKind::DeviceRemoval,
                    status: 0,
                },
                "cm-device-removed",
            ),
            (
                Stage::Transfer,
                Failure::Corrupted {
                    op: "read",
                    offset: 7,
                    len: 64,
                },
                "data-mismatch",
            ),
            (
                Stage::Bind,
                Failure::Call {
                    call: "rdma_bind_addr",
                    errno: libc::EADDRNOTAVAIL,
                },
                "cm-bind-not-local",
            ),
        ];
        for (stage, failure, code) in cases {
            let e = err(stage, failure, None);
            assert_eq!(e.code(), code, "{}", e.summary());
        }
        let ib = err(
            Stage::ResolveAddr,
            Failure::Event {
                event: EventKind::AddrError,
                status: -libc::ENODEV,
            },
            Some(LinkLayer::InfiniBand),
        );
        assert_eq!(ib.code(), "cm-no-ipoib-address");
    }

    #[test]
    fn report_has_the_verbs_failure_keys() {
        let mut e = err(
            Stage::Connect,
            Failure::Event {
                event: EventKind::Rejected,
                status: 8,
            },
            None,
        );
        e.facts.elapsed = Some(Duration::from_millis(250));
        let v = serde_json::to_value(e.report()).unwrap();
        assert_eq!(v["step"], "connect");
        assert_eq!(v["cause"]["kind"], "cm_event");
        assert_eq!(v["cause"]["event"], "RDMA_CM_EVENT_REJECTED");
        assert_eq!(v["cause"]["reject_reason"], "IB_CM_REJ_INVALID_SERVICE_ID");
        assert_eq!(v["context"]["peer"], "192.168.77.1:18515");
        assert_eq!(v["context"]["device"], "rxe1");
        assert_eq!(v["context"]["after_seconds"], 0.25);
        assert_eq!(v["explanation"]["code"], "cm-no-listener");
        assert!(v["explanation"]["fix"]
            .as_str()
            .unwrap()
            .contains("start the server"));
        assert!(
            v.get("errno").is_none(),
            "a reject reason is not an errno: {v}"
        );

        let t = err(
            Stage::ResolveAddr,
            Failure::Event {
                event: EventKind::AddrError,
                status: -libc::ETIMEDOUT,
            },
            None,
        );
        let v = serde_json::to_value(t.report()).unwrap();
        assert_eq!(v["errno"], 110);
        assert_eq!(v["errno_name"], "ETIMEDOUT");
        assert!(v["cause"].get("reject_reason").is_none(), "{v}");

        let w = err(
            Stage::Transfer,
            Failure::Completion {
                op: "RDMA READ",
                status: 12,
                vendor_err: 0,
            },
            None,
        );
        let v = serde_json::to_value(w.report()).unwrap();
        assert_eq!(v["wc_status"], "IBV_WC_RETRY_EXC_ERR");
        assert_eq!(v["cause"]["kind"], "wc_status");
    }

    /// A down netdev under this side's address explains "no route" and timeouts toward
    /// the peer better than the network does; the evidence shows in text and JSON.
    #[test]
    fn source_netdev_down_wins_while_finding_the_peer() {
        let unreach = Failure::Call {
            call: "rdma_resolve_addr",
            errno: libc::ENETUNREACH,
        };
        let mut e = err(Stage::ResolveAddr, unreach.clone(), None);
        e.facts.source_netdev_down = Some("veth0".into());
        e.facts.evidence =
            vec!["192.168.77.2 is on veth0: operstate down, administratively down".into()];
        assert_eq!(e.code(), "cm-netdev-down");
        assert!(e
            .explanation()
            .starts_with("veth0, the netdev of this side's address, is down"));
        assert!(e.fix().contains("ip link set veth0 up"));
        let text = e.to_string();
        assert!(
            text.contains("\n  seen: 192.168.77.2 is on veth0: operstate down"),
            "{text}"
        );
        let v = serde_json::to_value(e.report()).unwrap();
        assert_eq!(
            v["explanation"]["evidence"][0],
            "192.168.77.2 is on veth0: operstate down, administratively down"
        );
        // Once connected, a down netdev is not this rule's business.
        let mut later = err(
            Stage::Transfer,
            Failure::Event {
                event: EventKind::Disconnected,
                status: 0,
            },
            None,
        );
        later.facts.source_netdev_down = Some("veth0".into());
        assert_eq!(later.code(), "cm-peer-disconnected");
        // And without the fact, the errno's own rule.
        assert_eq!(err(Stage::ResolveAddr, unreach, None).code(), "cm-no-route");
    }

    /// An rdmactl server's own reject keeps the event and its reason, not a "version" guess.
    #[test]
    fn server_reject_says_what_the_server_said() {
        let e = err(
            Stage::Connect,
            Failure::ServerRejected {
                status: 28,
                reason: "buffer larger than 256 MiB".into(),
            },
            None,
        );
        assert_eq!(e.code(), "cm-rejected-by-server");
        assert!(e.summary().contains(
            "RDMA_CM_EVENT_REJECTED (status 28: IB_CM_REJ_CONSUMER_DEFINED): the server said \"buffer larger than 256 MiB\""
        ), "{}", e.summary());
        assert!(e.fix().contains("256 MiB or less"), "{}", e.fix());
        let v = serde_json::to_value(e.report()).unwrap();
        assert_eq!(v["cause"]["server_reason"], "buffer larger than 256 MiB");
        assert_eq!(v["cause"]["reject_reason"], "IB_CM_REJ_CONSUMER_DEFINED");
    }
}
