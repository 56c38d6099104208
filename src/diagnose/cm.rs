//! Why a connection-manager step failed: one rule per failure the CM can report (the stage,
//! the event or errno the kernel gave, and the facts gathered on this host). Work-completion
//! failures on a CM connection go to the data-path rules, so both paths explain a
//! retry-exceeded the same way. Pure, so every rule is unit-tested.

use std::net::SocketAddr;

use crate::diagnose::datapath;
use crate::diagnose::midrun;
use crate::diagnose::port_state;
use crate::diagnose::same_host;
use crate::model::codes::{self, Code};
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::facts::{Facts, StallFacts};
use crate::model::failure::{Cause, EventKind, Failure, Step};

fn why(code: Code, why: impl Into<String>, fix: impl Into<String>) -> Diagnostic {
    Diagnostic::explanation(code, why, fix)
}

/// The rules, one per failure the CM can report. Pure, so every row is unit-tested.
pub fn explain(err: &Failure, facts: &Facts) -> Diagnostic {
    let mut x = rule(err, facts);
    x.evidence.extend(
        facts
            .evidence
            .iter()
            .map(|e| Seen::new(Source::Host, e.clone())),
    );
    x
}

/// What a `--cm` end knows when its run stalled: its own port now and, when the peer
/// answered a probe (or probed this end), the peer's: the port part of the stall facts the
/// TCP exchange trades, judged by the same rule (`diagnose::midrun`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CmStall {
    pub here: StallFacts,
    pub peer: Option<StallFacts>,
    /// Whether the peer answered this end's probe; None: not asked (a server cannot ask).
    pub peer_answered: Option<bool>,
}

impl CmStall {
    fn peer_role(&self) -> &'static str {
        if self.here.role == "server" {
            "client"
        } else {
            "server"
        }
    }

    fn evidence(&self) -> Vec<Seen> {
        let mut out = vec![Seen::new(Source::Local, midrun::port_line(&self.here))];
        let peer = self.peer_role();
        if let Some(there) = &self.peer {
            out.push(Seen::new(
                Source::PeerNotice,
                format!("the {peer} said: {}", midrun::port_line(there)),
            ));
        }
        if self.peer_answered == Some(false) {
            out.push(Seen::new(
                Source::Host,
                format!("the {peer} did not answer a probe (a CM connect request of its own)"),
            ));
        }
        out
    }
}

/// A stalled `--cm` run explained from what both ends re-read: a port changed under the QP
/// on either end names itself (the rule the TCP exchange uses); otherwise the CM rule
/// stands, with what was ruled out in its seen lines.
pub fn explain_stall(err: &Failure, facts: &Facts, stall: &CmStall) -> Diagnostic {
    let ends = std::iter::once((&stall.here, Source::Local))
        .chain(stall.peer.iter().map(|p| (p, Source::PeerNotice)))
        .collect::<Vec<_>>();
    // --cm takes no -m: the CM sets the path MTU from the route.
    let mut x = match midrun::port_changed(&ends, false) {
        Some(c) => Diagnostic::explanation(c.code, c.summary, c.fix),
        None => ruled_out(explain(err, facts), stall),
    };
    x.evidence.extend(stall.evidence());
    x
}

/// No change under the QP: the CM rule's words, and for a transfer timeout what the ports
/// rule out.
fn ruled_out(mut x: Diagnostic, stall: &CmStall) -> Diagnostic {
    if x.code != codes::CM_TRANSFER_TIMEOUT {
        return x;
    }
    let fine = |p: Option<&StallFacts>| p.is_some_and(|p| p.now.unchanged_for(p.path_mtu));
    let peer = stall.peer_role();
    x.message = match (fine(Some(&stall.here)), fine(stall.peer.as_ref()), stall.peer_answered) {
        (true, true, _) => format!(
            "no completion arrived in time, yet both ports are ACTIVE, at the QP's path MTU and with their GIDs, and the {peer}'s process answered a probe: the packets are lost on the way, or the {peer} stopped posting work"
        ),
        (true, _, Some(false)) => format!(
            "no completion arrived in time and the {peer} did not answer a probe: its process is stopped or hung, or its host is unreachable; this end's port is ACTIVE, at the QP's path MTU and with its GID"
        ),
        (true, _, _) => "no completion arrived in time; this end's port is ACTIVE, at the QP's path MTU and with its GID, so the cause is on the way or at the peer".into(),
        _ => return x,
    };
    x
}

fn rule(err: &Failure, facts: &Facts) -> Diagnostic {
    let addr: Option<SocketAddr> = err
        .context
        .peer_addr
        .as_deref()
        .and_then(|p| p.parse().ok());
    let peer = addr
        .map(|p| p.ip().to_canonical().to_string())
        .unwrap_or_else(|| "the peer".into());
    let port = addr
        .map(|p| p.port().to_string())
        .unwrap_or_else(|| "the port".into());
    let ib = err.is_infiniband();
    let finding_the_peer = matches!(
        err.step,
        Step::CmResolveAddr | Step::CmResolveRoute | Step::CmConnect
    );
    // A node librdmacm opens on the way (rdma_cm, the source's device's uverbs node) refused
    // this process: the CM passes that on as its own errno (ADDR_ERROR with EPERM), and the
    // route is not the cause.
    if let (Some(node), true) = (&facts.device_node, finding_the_peer) {
        if let Some((code, summary, evidence, fix)) = datapath::node_refused(node, None) {
            return Diagnostic {
                evidence,
                ..Diagnostic::explanation(code, summary, fix)
            };
        }
    }
    // This side's port or the netdev of its address down: the one rule (`port_state`) the
    // TCP exchange, check and doctor ask, so the same fact gets the same code and fix.
    if finding_the_peer {
        let down = port_state::run_port(&facts.local, facts.netdev.as_ref()).or_else(|| {
            let n = port_state::NetdevAsked::of_facts(facts.netdev.as_ref()?);
            port_state::netdev_down(&n, &format!("{}/{}", err.context.device, err.context.port))
        });
        if let Some(x) = down {
            return x;
        }
    }
    let unanswered = matches!(
        err.cause,
        Cause::Timeout { .. }
            | Cause::CmEvent {
                event: EventKind::Unreachable,
                ..
            }
    );
    if let (Step::CmConnect, true) = (err.step, unanswered) {
        if let Some(x) = same_host_ipv6(err, facts) {
            return x;
        }
    }
    match (&err.cause, err.step) {
        (Cause::LibraryMissing { .. }, _) => why(
            codes::CM_LIBRARY_MISSING,
            "librdmacm.so.1 is loaded at run time and is not installed (or a library it needs is missing)",
            "install librdmacm1 (Debian/Ubuntu: apt install librdmacm1; RHEL: dnf install librdmacm), or use the TCP exchange (omit --cm)",
        ),
        (Cause::NoKernelCm { devices_present: false, .. }, _) => why(
            codes::NO_KERNEL_RDMA,
            "there is no RDMA device: /sys/class/infiniband is empty or missing, so no RDMA driver is loaded",
            "load your NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...), or for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <if>",
        ),
        (Cause::NoKernelCm { device_node_exists: false, .. }, _) => why(
            codes::CM_NO_RDMA_UCM,
            "/dev/infiniband/rdma_cm does not exist: the kernel's user-space CM module (rdma_ucm) is not loaded",
            "modprobe rdma_ucm (rdma-core's rdma-load-modules@rdma.service does this at boot), or use the TCP exchange (omit --cm)",
        ),
        (Cause::NoKernelCm { errno, .. }, _) if *errno == libc::EACCES || *errno == libc::EPERM => why(
            codes::CM_DEVICE_ACCESS,
            "/dev/infiniband/rdma_cm exists but this process may not open it (permissions, or a container without the device)",
            "pass /dev/infiniband/rdma_cm into the container, or check its mode (the kernel creates it 0666)",
        ),
        (Cause::NoKernelCm { .. }, _) => why(
            codes::CM_NO_DEVICE,
            "librdmacm found no usable RDMA device (none registered, or libibverbs lists none)",
            "run rdmactl devices and rdmactl doctor; load the NIC's RDMA driver",
        ),
        (Cause::Errno { errno, .. }, Step::CmBind) if *errno == libc::EADDRNOTAVAIL || *errno == libc::ENODEV => why(
            codes::CM_BIND_NOT_LOCAL,
            "the address to bind is not configured on an RDMA-capable netdev of this host",
            "give an address shown by `ip -br addr` on the netdev of an RDMA port (rdmactl ports shows the netdev)",
        ),
        (Cause::Errno { errno, .. }, Step::CmBind | Step::CmListen) if *errno == libc::EADDRINUSE => why(
            codes::CM_PORT_IN_USE,
            format!("another RDMA CM listener already uses port {port} on that address"),
            "stop the other server, or pick another port with -p",
        ),
        (Cause::Errno { .. }, Step::CmResolveAddr)
        | (Cause::CmEvent { event: EventKind::AddrError, .. }, _) => addr_error(err, &peer, ib, facts),
        (Cause::CmEvent { event: EventKind::RouteError, status, .. }, _)
        | (Cause::Errno { errno: status, call: Some("rdma_resolve_route") }, _) => {
            route_error(*status, &peer, ib)
        }
        (Cause::CmEvent { event: EventKind::Unreachable, .. }, _) => why(
            codes::CM_UNREACHABLE,
            format!("{peer} did not answer the connection request: no RDMA CM there, the host is down, or RoCE packets (UDP 4791) are dropped on the way"),
            format!("check that the server runs on {peer} (rdmactl pingpong --cm on it), that UDP 4791 passes, and that both ends use RoCE v2"),
        ),
        (Cause::CmEvent { event: EventKind::Rejected, status, .. }, _) => {
            rejected(*status, &peer, &port)
        }
        (Cause::CmEvent { event: EventKind::ConnectError, .. }, _) => why(
            codes::CM_CONNECT_ERROR,
            "the CM exchange got through, but bringing the QP to RTR/RTS or the final handshake failed",
            "run rdmactl check --peer on both ends: GID table, route and MTU",
        ),
        (Cause::CmEvent { event: EventKind::Disconnected, .. }, _) => why(
            codes::CM_PEER_DISCONNECTED,
            "the peer closed the connection (its process ended, or it called rdma_disconnect) before this step finished",
            "read the peer's output for its own error",
        ),
        (Cause::CmEvent { event: EventKind::DeviceRemoval, .. }, _) => why(
            codes::CM_DEVICE_REMOVED,
            "the RDMA device was removed under the connection (driver unloaded, `rdma link delete`, or its netdev deleted)",
            "check `rdma link` and dmesg, then restart the test",
        ),
        (Cause::CmEvent { event: EventKind::AddrChange, .. }, _) => why(
            codes::CM_ADDRESS_CHANGED,
            "the address of the netdev under the connection changed (bonding fail-over or an address removed)",
            "restart the test once the address is stable",
        ),
        (Cause::CmEvent { .. }, _) => why(
            codes::CM_UNEXPECTED_EVENT,
            "the CM reported an event this step did not expect",
            "rerun; if it repeats, compare with rping against the same peer",
        ),
        (Cause::Timeout { .. }, Step::CmResolveAddr) => no_neighbour(&peer, facts),
        (Cause::Timeout { .. }, Step::CmConnect) => why(
            codes::CM_CONNECT_TIMEOUT,
            format!("{peer} did not answer the connection request in time: no server there, the host is down, or RoCE packets (UDP 4791) are dropped"),
            format!("start the server on {peer} first; check the path with rdmactl check --peer {peer}; raise --timeout for slow links"),
        ),
        (Cause::Timeout { .. }, Step::CmAccept | Step::CmListen) => why(
            codes::CM_NO_CLIENT,
            "no client connected within the time allowed",
            "start the client (rdmactl pingpong --cm SERVER) toward this address and port",
        ),
        (Cause::Timeout { .. }, Step::CmTransfer) => why(
            codes::CM_TRANSFER_TIMEOUT,
            "no completion arrived in time: the peer stopped answering, or packets are lost",
            "check the peer's output; rxe retries forever when retry_cnt is 7, rdmactl uses 6",
        ),
        (Cause::Timeout { .. }, _) => why(
            codes::CM_TIMEOUT,
            "the step did not finish in time",
            "raise --timeout, or check the peer",
        ),
        (Cause::WcStatus { .. }, _) => datapath::explain(err, facts),
        (Cause::NoAddress { netdev }, _) => no_address(netdev.as_deref(), ib),
        (Cause::ServerRejected { server_reason: reason, .. }, _) if reason.starts_with("busy serving") => why(
            codes::CM_SERVER_BUSY,
            format!("the rdmactl server serves one client at a time and is {reason}"),
            "wait until that run ends, or start another server with another -p",
        ),
        (Cause::ServerRejected { server_reason: reason, .. }, _) if reason.contains("larger than") => why(
            codes::CM_REJECTED_BY_SERVER,
            format!("the rdmactl server refused the connection: {reason}"),
            "lower -s on the client to 256 MiB or less",
        ),
        (Cause::ServerRejected { server_reason: reason, .. }, _) => why(
            codes::CM_REJECTED_BY_SERVER,
            format!("the rdmactl server refused the connection: {reason}"),
            "run the same rdmactl version on both ends, and read the server's output",
        ),
        (Cause::ForeignServer { .. }, _) => why(
            codes::CM_NOT_RDMACTL_SERVER,
            "the server accepted the connection but is not an rdmactl --cm server: stock servers (rping -s, rdma_server) speak their own protocol and send no buffer description",
            "run rdmactl pingpong --cm on the server; the other way round works: an rdmactl server serves rping -c and rdma_client",
        ),
        (Cause::Invalid { .. }, _) => why(
            codes::CM_PROTOCOL,
            "the peer is not an rdmactl --cm peer of a compatible version (its private data has another layout)",
            "run the same rdmactl version on both ends",
        ),
        // The data-path rule: the same check on the same bytes.
        (Cause::Corrupted { .. }, _) => datapath::explain(err, facts),
        // The TCP exchange's causes never reach a CM stage; the data-path rules take them.
        (
            Cause::PeerClosed
            | Cause::Mismatch { .. }
            | Cause::WouldPin { .. }
            | Cause::Interrupted { .. }
            | Cause::PeerReported { .. }
            | Cause::StockPeerSendOnly { .. },
            _,
        ) => {
            datapath::explain(err, facts)
        }
        (Cause::Errno { call, .. }, _) => why(
            codes::CM_CALL_FAILED,
            format!("{} was refused by the kernel or the provider", call.unwrap_or("a librdmacm call")),
            "check dmesg and rdmactl doctor",
        ),
    }
}

/// A connect request from one rxe device to an IPv6 address of another device of this
/// host goes unanswered (the server is there; the request never reaches it): the one rule,
/// `same_host`'s, as the TCP exchange and check say it.
fn same_host_ipv6(err: &Failure, facts: &Facts) -> Option<Diagnostic> {
    let route = facts.route.as_ref()?;
    if !route.peer_is_local {
        return None;
    }
    same_host::ipv6_between_devices(&same_host::Ipv6Pair {
        port: &err.context.device,
        // Decided once, by `model::device::is_soft_roce` when the facts were gathered.
        soft_roce: facts.qp.as_ref().is_some_and(|q| q.soft_roce),
        peer: route.peer?,
        owner: route.peer_local_netdev.as_deref()?,
        local: &facts.netdev.as_ref()?.name,
    })
}

/// The peer's CM rejected the request: the IB CM reject reason (or the kernel's errno for
/// a refused connection) says why.
fn rejected(status: i32, peer: &str, port: &str) -> Diagnostic {
    match status {
        8 | -111 => why(
            codes::CM_NO_LISTENER,
            format!("nobody listens on {peer} port {port}: the peer's kernel answered the request with a reject (connection refused)"),
            format!("start the server first (rdmactl pingpong --cm on {peer}), and use the same -p on both sides"),
        ),
        28 => why(
            codes::CM_REJECTED_BY_SERVER,
            "the server application refused the connection (a consumer-defined reject)",
            "read the server's output; a version or parameter mismatch is the usual cause",
        ),
        26 => why(
            codes::CM_MTU_MISMATCH,
            "the two ends disagree on the path MTU",
            "set the same MTU on both netdevs (RoCE active_mtu follows the netdev MTU)",
        ),
        3 | 27 => why(
            codes::CM_PEER_OUT_OF_RESOURCES,
            "the server ran out of QPs or responder resources",
            "free resources on the server, or lower the connection count",
        ),
        4 => why(
            codes::CM_REPLY_TIMEOUT,
            "the server's CM timed out waiting for this side's reply",
            "check for packet loss between the hosts and that this host answers quickly",
        ),
        12 => why(
            codes::CM_INVALID_GID,
            "the server could not use the GID this side sent",
            "check both GID tables (rdmactl gids) and the RoCE type on each end",
        ),
        _ => why(
            codes::CM_REJECTED,
            "the peer's CM rejected the connection request",
            "look up the reject reason above; compare both ends' configuration (rdmactl check)",
        ),
    }
}

/// Resolving the route failed: on InfiniBand a path record query that timed out means no
/// subnet manager answers.
fn route_error(status: i32, peer: &str, ib: bool) -> Diagnostic {
    if ib && status.abs() == libc::ETIMEDOUT {
        why(
            codes::CM_NO_PATH_RECORD,
            "the path record query to the subnet administrator timed out: no subnet manager answers, or the peer's GID is unknown to it",
            "check that opensm (or the switch's SM) runs: sminfo; ibstat shows the SM LID",
        )
    } else {
        why(
            codes::CM_NO_ROUTE,
            format!("the kernel found no usable route from the RDMA netdev to {peer} (the netdev is down, or the route leaves through another interface)"),
            format!("check `ip route get {peer}` and the port state (rdmactl ports); RoCE needs the route to use the RDMA port's netdev"),
        )
    }
}

/// The CM connects by IP address, and this port has none.
fn no_address(netdev: Option<&str>, ib: bool) -> Diagnostic {
    let dev = netdev.unwrap_or("its netdev");
    if ib {
        why(
            codes::CM_NO_IPOIB_ADDRESS,
            format!("the CM connects by IP address, and this InfiniBand port's IPoIB interface {dev} has none (the CM would answer ADDR_ERROR -19)"),
            format!("configure IPoIB: ip addr add ADDR/PREFIX dev {dev} and ip link set {dev} up; or use the TCP exchange (omit --cm)"),
        )
    } else {
        why(
            codes::CM_NO_ADDRESS,
            format!("the CM connects by IP address, and this port has none: no IPv4 GID, and no address on {dev}"),
            format!("put an address on {dev} (ip addr add ADDR/PREFIX dev {dev}); the RoCE GID table follows it"),
        )
    }
}

fn addr_error(err: &Failure, peer: &str, ib: bool, facts: &Facts) -> Diagnostic {
    let errno = match &err.cause {
        Cause::Errno { errno, .. } => *errno,
        Cause::CmEvent { status, .. } => status.abs(),
        _ => 0,
    };
    match errno {
        libc::ENODEV if ib => why(
            codes::CM_NO_IPOIB_ADDRESS,
            format!("the route to {peer} leaves through an IPoIB interface without an IP address, or through a netdev that has no RDMA port"),
            "configure an IP address on the port's IPoIB interface (ip addr add ... dev ib0), or use the TCP exchange (omit --cm)",
        ),
        libc::ENODEV => why(
            codes::CM_NO_RDMA_NETDEV,
            format!("the route to {peer} leaves through a netdev with no RDMA device on it (e.g. a plain NIC), or on InfiniBand an IPoIB interface without an address"),
            format!("give the peer's address on the RDMA network, or bind the source to the RDMA netdev's address (--bind); `ip route get {peer}` shows the netdev"),
        ),
        libc::ENETUNREACH => why(
            codes::CM_NO_ROUTE,
            format!("there is no route to {peer} (or the netdev that carried it is down)"),
            format!("check `ip route get {peer}` and `ip -br link`: bring the RDMA port's netdev up, add a route, or use the peer's address on the RDMA subnet"),
        ),
        libc::EHOSTUNREACH | libc::ETIMEDOUT => no_neighbour(peer, facts),
        libc::EADDRNOTAVAIL => why(
            codes::CM_BIND_NOT_LOCAL,
            "the source address is not configured on this host",
            "give a local address with --bind (ip -br addr lists them)",
        ),
        libc::EINVAL => bad_address(err, peer, facts),
        _ => why(
            codes::CM_RESOLVE_FAILED,
            format!("the kernel could not map {peer} to an RDMA device and a destination MAC/GID"),
            format!("check `ip route get {peer}` and rdmactl check --peer {peer}"),
        ),
    }
}
/// Address resolution got no answer: name the neighbour that did not answer (the gateway
/// for a routed peer), and the same-host ARP drop only for an address of this host.
fn no_neighbour(peer: &str, facts: &Facts) -> Diagnostic {
    let route = facts.route.as_ref();
    match (
        route.and_then(|r| r.gateway),
        route.is_some_and(|r| r.peer_is_local),
    ) {
        (Some(gw), _) => {
            let mut x = why(
                codes::CM_NO_NEIGHBOUR,
                format!("no ARP/neighbour reply from the gateway {gw}, through which the route to {peer} goes: the gateway is down, absent, or not on that subnet"),
                format!("check `ping {gw}` and `ip neigh show {gw}`, and the route (`ip route get {peer}`)"),
            );
            x.evidence.push(Seen::new(
                Source::Route,
                format!("ip route get {peer}: via {gw}"),
            ));
            x
        }
        (None, true) => why(
            codes::CM_NO_NEIGHBOUR,
            format!("no ARP reply from {peer}, an address of this host on another netdev: it drops ARP requests whose sender address is local"),
            same_host::fix(
                &[route.and_then(|r| r.route_netdev.as_deref()), route.and_then(|r| r.peer_local_netdev.as_deref())]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>(),
                same_host::SameHostSysctls {
                    accept_local: route.and_then(|r| r.accept_local),
                    rp_filter: route.and_then(|r| r.rp_filter),
                },
            ),
        ),
        (None, false) => why(
            codes::CM_NO_NEIGHBOUR,
            format!("no ARP/neighbour reply from {peer} through the netdev the route picks: the host is down or not on that subnet, or ARP is filtered"),
            format!("check `ping {peer}` and `ip neigh show {peer}`"),
        ),
    }
}

/// rdma_resolve_addr's EINVAL: say what the addresses show, never a guess about them.
fn bad_address(err: &Failure, peer: &str, facts: &Facts) -> Diagnostic {
    let peer_ip = err
        .context
        .peer_addr
        .as_deref()
        .and_then(|p| p.parse::<SocketAddr>().ok())
        .map(|p| p.ip().to_canonical());
    let family = |ip: &std::net::IpAddr| if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    let mut x = match (facts.cm_source, peer_ip) {
        (Some(src), Some(dst)) if src.to_canonical().is_ipv4() != dst.is_ipv4() => {
            let mut x = why(
                codes::CM_FAMILY_MISMATCH,
                format!(
                    "the source address {src} is {} and the peer {dst} is {}: the CM connects within one address family",
                    family(&src.to_canonical()),
                    family(&dst)
                ),
                format!(
                    "give a source of the peer's family (--bind ADDR, or -d with a port that has an {} address), or the peer's {} address",
                    family(&dst),
                    family(&src.to_canonical())
                ),
            );
            x.evidence
                .push(Seen::new(Source::Host, format!("source {src}, peer {dst}")));
            x
        }
        (_, Some(std::net::IpAddr::V6(v6))) if (v6.segments()[0] & 0xffc0) == 0xfe80 => why(
            codes::CM_BAD_ADDRESS,
            format!("{peer} is IPv6 link-local, and the CM needs to know which interface it is on"),
            format!("give the peer's global address, or add the scope: {peer}%IFNAME"),
        ),
        (_, Some(dst)) if dst.is_multicast() || dst == std::net::IpAddr::V4(std::net::Ipv4Addr::BROADCAST) => why(
            codes::CM_BAD_ADDRESS,
            format!("{peer} is a multicast or broadcast address; a connection needs the peer's unicast address"),
            "give the peer's unicast address",
        ),
        _ => why(
            codes::CM_BAD_ADDRESS,
            format!("the kernel CM refused to resolve {peer} (EINVAL) from the source it was given"),
            format!("compare the source and the peer (`ip route get {peer}` shows the kernel's source), and rdmactl check --peer {peer}"),
        ),
    };
    if let Some(src) = facts.cm_source {
        if x.code != codes::CM_FAMILY_MISMATCH {
            x.evidence
                .push(Seen::new(Source::Host, format!("source {src}")));
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::datapath::tests::gathered;
    use crate::model::device::{LinkLayer, PortState};
    use crate::model::diagnostic::FailureReport;
    use crate::model::errno::reject_reason_name;
    use crate::model::facts::{NetdevFacts, QpFacts};
    use crate::model::failure::FailureContext;

    /// A CM failure with the facts a caller gathered, and what the rules make of it.
    struct E {
        f: Failure,
        facts: Facts,
    }

    impl E {
        /// The explanation; every seen line in it states a fact this run gathered, as the
        /// data-path rules' table checks for theirs.
        fn x(&self) -> Diagnostic {
            let x = explain(&self.f, &self.facts);
            for seen in &x.evidence {
                assert!(
                    gathered(&self.facts, &self.f, seen),
                    "{}: seen line {:?} claims {:?}, which this run did not gather",
                    x.code,
                    seen.text,
                    seen.from
                );
            }
            x
        }
        fn summary(&self) -> String {
            self.f.to_string()
        }
        fn explanation(&self) -> String {
            self.x().message
        }
        fn fix(&self) -> String {
            self.x().fix_text().to_string()
        }
        fn code(&self) -> String {
            self.x().code.to_string()
        }
        fn errno(&self) -> Option<i32> {
            self.f.cause.errno_value()
        }
        fn is_missing_stack(&self) -> bool {
            self.f.is_missing_stack()
        }
        fn report(&self) -> FailureReport {
            FailureReport::new(&self.f, self.x())
        }
        fn netdev_down(&mut self, name: &str) {
            self.facts.netdev = Some(NetdevFacts {
                name: name.into(),
                exists: true,
                up: false,
                operstate: Some(crate::model::device::OperState::Down),
                ..NetdevFacts::default()
            });
        }
    }

    fn err(step: Step, cause: Cause, ll: Option<LinkLayer>) -> E {
        E {
            f: Failure::new(
                step,
                cause,
                FailureContext {
                    device: "rxe1".into(),
                    peer_addr: Some("192.168.77.1:18515".into()),
                    link_layer: ll,
                    ..FailureContext::default()
                },
            ),
            facts: Facts::default(),
        }
    }

    /// rdma_resolve_addr's EINVAL names what the addresses show: an IPv4 source for an
    /// IPv6 peer is a family mismatch, and a unicast peer is never called multicast.
    #[test]
    fn resolve_addr_einval_says_what_the_addresses_show() {
        let mut e = err(
            Step::CmResolveAddr,
            Cause::call("rdma_resolve_addr", libc::EINVAL),
            Some(LinkLayer::Ethernet),
        );
        e.f.context.peer_addr = Some("[2001:db8::1]:18515".into());
        e.facts.cm_source = Some("192.168.77.2".parse().unwrap());
        let x = e.x();
        assert_eq!(x.code, "cm-family-mismatch");
        assert!(
            x.message
                .contains("192.168.77.2 is IPv4 and the peer 2001:db8::1 is IPv6"),
            "{}",
            x.message
        );
        assert!(
            x.evidence
                .iter()
                .any(|s| s == "source 192.168.77.2, peer 2001:db8::1"),
            "{:?}",
            x.evidence
        );
        assert!(!x.message.contains("multicast"), "{}", x.message);

        e.facts.cm_source = Some("2001:db8::2".parse().unwrap());
        let x = e.x();
        assert_eq!(x.code, "cm-bad-address");
        assert!(!x.message.contains("multicast"), "{}", x.message);
        assert!(
            x.evidence.iter().any(|s| s == "source 2001:db8::2"),
            "{:?}",
            x.evidence
        );

        e.f.context.peer_addr = Some("224.0.0.1:18515".into());
        e.facts.cm_source = None;
        assert!(
            e.x().message.contains("224.0.0.1 is a multicast"),
            "{}",
            e.x().message
        );
    }

    /// The neighbour that does not answer is named: the gateway for a routed peer, the
    /// same-host ARP drop (accept_local) only for an address of this host.
    #[test]
    fn no_neighbour_names_the_hop() {
        let mut e = err(
            Step::CmResolveAddr,
            Cause::cm_event(EventKind::AddrError, -libc::ETIMEDOUT),
            Some(LinkLayer::Ethernet),
        );
        e.f.context.peer_addr = Some("10.50.1.1:0".into());
        e.facts.route = Some(crate::model::facts::RouteFacts {
            peer: Some("10.50.1.1".parse().unwrap()),
            gateway: Some("192.168.77.254".parse().unwrap()),
            route_netdev: Some("veth1".into()),
            ..Default::default()
        });
        let x = e.x();
        assert!(
            x.message.contains("the gateway 192.168.77.254"),
            "{}",
            x.message
        );
        assert!(!x.fix_text().contains("accept_local"), "{}", x.fix_text());
        e.facts.route = Some(crate::model::facts::RouteFacts {
            peer: Some("192.168.77.1".parse().unwrap()),
            peer_is_local: true,
            ..Default::default()
        });
        e.f.context.peer_addr = Some("192.168.77.1:0".into());
        assert!(
            e.x().fix_text().contains("accept_local"),
            "{}",
            e.x().fix_text()
        );
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

    /// Every failure the VM can produce:
    /// (stage, failure, link layer, text the summary must have, text why must have, text fix must have).
    #[test]
    fn explanations() {
        let ev = Cause::cm_event;
        let call = Cause::call;
        let ib = Some(LinkLayer::InfiniBand);
        let eth = Some(LinkLayer::Ethernet);
        type Row = (
            Step,
            Cause,
            Option<LinkLayer>,
            &'static str,
            &'static str,
            &'static str,
        );
        let cases: Vec<Row> = vec![
            (
                Step::CmSetup,
                Cause::LibraryMissing {
                    loader_error: "librdmacm.so.1: cannot open shared object file".into(),
                },
                None,
                "librdmacm could not be loaded",
                "not installed",
                "librdmacm1",
            ),
            (
                Step::CmSetup,
                Cause::NoKernelCm {
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
                Step::CmSetup,
                Cause::NoKernelCm {
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
                Step::CmResolveAddr,
                ev(EventKind::AddrError, -libc::ENODEV),
                ib.clone(),
                "RDMA_CM_EVENT_ADDR_ERROR (status -19: ENODEV",
                "IPoIB interface without an IP address",
                "IPoIB",
            ),
            (
                Step::CmResolveAddr,
                ev(EventKind::AddrError, -libc::ENODEV),
                eth.clone(),
                "status -19",
                "no RDMA device on it",
                "--bind",
            ),
            (
                Step::CmResolveAddr,
                ev(EventKind::AddrError, -libc::ETIMEDOUT),
                eth.clone(),
                "ETIMEDOUT",
                "no ARP/neighbour reply from 192.168.77.1",
                "ip neigh show 192.168.77.1",
            ),
            (
                Step::CmResolveAddr,
                call("rdma_resolve_addr", libc::ENETUNREACH),
                None,
                "rdma_resolve_addr: ENETUNREACH",
                "no route to 192.168.77.1",
                "ip route get 192.168.77.1",
            ),
            (
                Step::CmBind,
                call("rdma_resolve_addr", libc::EADDRNOTAVAIL),
                None,
                "EADDRNOTAVAIL",
                "not configured",
                "ip -br addr",
            ),
            (
                Step::CmResolveRoute,
                ev(EventKind::RouteError, -libc::ETIMEDOUT),
                ib.clone(),
                "RDMA_CM_EVENT_ROUTE_ERROR",
                "subnet administrator",
                "sminfo",
            ),
            (
                Step::CmResolveRoute,
                ev(EventKind::RouteError, -libc::ENETUNREACH),
                eth.clone(),
                "RDMA_CM_EVENT_ROUTE_ERROR",
                "no usable route",
                "ip route get 192.168.77.1",
            ),
            (
                Step::CmConnect,
                ev(EventKind::Rejected, 8),
                eth.clone(),
                "REJECTED (status 8: IB_CM_REJ_INVALID_SERVICE_ID)",
                "nobody listens on 192.168.77.1 port 18515",
                "start the server first",
            ),
            (
                Step::CmConnect,
                ev(EventKind::Rejected, 28),
                eth.clone(),
                "IB_CM_REJ_CONSUMER_DEFINED",
                "server application refused",
                "server's output",
            ),
            (
                Step::CmConnect,
                ev(EventKind::Unreachable, -libc::ETIMEDOUT),
                eth.clone(),
                "RDMA_CM_EVENT_UNREACHABLE (status -110",
                "did not answer",
                "UDP 4791",
            ),
            (
                Step::CmConnect,
                ev(EventKind::ConnectError, -libc::EINVAL),
                eth.clone(),
                "RDMA_CM_EVENT_CONNECT_ERROR",
                "RTR/RTS",
                "check --peer",
            ),
            (
                Step::CmTransfer,
                ev(EventKind::Disconnected, 0),
                eth.clone(),
                "RDMA_CM_EVENT_DISCONNECTED",
                "peer closed",
                "peer's output",
            ),
            (
                Step::CmTransfer,
                ev(EventKind::DeviceRemoval, 0),
                eth.clone(),
                "RDMA_CM_EVENT_DEVICE_REMOVAL",
                "removed",
                "rdma link",
            ),
            (
                Step::CmConnect,
                Cause::Timeout { waited_ms: 5000, waiting_for: Some("answer to the connection request") },
                eth.clone(),
                "no answer to the connection request within 5.0 s",
                "did not answer",
                "start the server",
            ),
            (
                Step::CmResolveAddr,
                Cause::Timeout { waited_ms: 2000, waiting_for: Some("address resolution") },
                eth.clone(),
                "within 2.0 s",
                "no ARP",
                "ip neigh show 192.168.77.1",
            ),
            (
                Step::CmTransfer,
                Cause::WcStatus { status: 12, vendor_err: 0x81, opcode: 0, op: Some("RDMA READ") },
                eth.clone(),
                "IBV_WC_RETRY_EXC_ERR (status 12: transport retry counter exceeded, vendor err 0x81)",
                "never acknowledged",
                "peer process is alive",
            ),
            (
                Step::CmTransfer,
                Cause::WcStatus { status: 10, vendor_err: 0, opcode: 0, op: Some("RDMA WRITE") },
                eth.clone(),
                "IBV_WC_REM_ACCESS_ERR",
                "rkey",
                "rkey and address the peer sent",
            ),
            (
                Step::CmBind,
                call("rdma_bind_addr", libc::EADDRINUSE),
                None,
                "EADDRINUSE",
                "already uses port 18515",
                "-p",
            ),
            (
                Step::CmConnect,
                Cause::ForeignServer { what: "the peer's CM private data starts with [00, 00, 00, 00], not rdmactl's \"RDCT\"".into() },
                None,
                "not rdmactl",
                "not an rdmactl --cm server",
                "run rdmactl pingpong --cm on the server",
            ),
            (
                Step::CmAccept,
                Cause::Invalid { what: "the peer's CM private data starts with [00, 00, 00, 00]".into() },
                None,
                "private data",
                "compatible version",
                "same rdmactl version",
            ),
        ];
        for (step, cause, ll, summary, why, fix) in cases {
            let e = err(step, cause, ll);
            let (s, w, f) = (e.summary(), e.explanation(), e.fix());
            assert!(s.contains(summary), "summary {s:?} lacks {summary:?}");
            assert!(w.contains(why), "why {w:?} lacks {why:?} ({s})");
            assert!(f.contains(fix), "fix {f:?} lacks {fix:?} ({s})");
        }
    }

    #[test]
    fn summary_says_when_the_event_came() {
        let mut e = err(
            Step::CmConnect,
            Cause::cm_event(EventKind::Rejected, 8),
            None,
        );
        e.f.context.elapsed_ms = Some(31);
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
            Step::CmResolveAddr,
            Cause::cm_event(EventKind::AddrError, -110),
            None,
        );
        assert_eq!(e.errno(), Some(110));
        assert!(!e.is_missing_stack());
        let r = err(
            Step::CmConnect,
            Cause::cm_event(EventKind::Rejected, 8),
            None,
        );
        assert_eq!(r.errno(), None);
        let m = err(
            Step::CmSetup,
            Cause::LibraryMissing {
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
                Step::CmConnect,
                Cause::cm_event(EventKind::Rejected, 8),
                "cm-no-listener",
            ),
            (
                Step::CmResolveAddr,
                Cause::call("rdma_resolve_addr", libc::ENETUNREACH),
                "cm-no-route",
            ),
            (
                Step::CmResolveAddr,
                Cause::cm_event(EventKind::AddrError, -libc::ETIMEDOUT),
                "cm-no-neighbour",
            ),
            (
                Step::CmConnect,
                Cause::cm_event(EventKind::Unreachable, -libc::ETIMEDOUT),
                "cm-unreachable",
            ),
            (
                Step::CmTransfer,
                Cause::cm_event(EventKind::Disconnected, 0),
                "cm-peer-disconnected",
            ),
            (
                Step::CmTransfer,
                Cause::cm_event(EventKind::DeviceRemoval, 0),
                "cm-device-removed",
            ),
            (
                Step::CmTransfer,
                Cause::Corrupted {
                    op: "read",
                    offset: 7,
                    len: 64,
                },
                "data-mismatch",
            ),
            (
                Step::CmBind,
                Cause::call("rdma_bind_addr", libc::EADDRNOTAVAIL),
                "cm-bind-not-local",
            ),
        ];
        for (stage, failure, code) in cases {
            let e = err(stage, failure, None);
            assert_eq!(e.code(), code, "{}", e.summary());
        }
        let ib = err(
            Step::CmResolveAddr,
            Cause::cm_event(EventKind::AddrError, -libc::ENODEV),
            Some(LinkLayer::InfiniBand),
        );
        assert_eq!(ib.code(), "cm-no-ipoib-address");
    }

    #[test]
    fn report_has_the_verbs_failure_keys() {
        let mut e = err(
            Step::CmConnect,
            Cause::cm_event(EventKind::Rejected, 8),
            None,
        );
        e.f.context.elapsed_ms = Some(250);
        let v = serde_json::to_value(e.report()).unwrap();
        assert_eq!(v["step"], "cm_connect");
        assert_eq!(v["cause"]["kind"], "cm_event");
        assert_eq!(v["cause"]["event"], "RDMA_CM_EVENT_REJECTED");
        assert_eq!(v["cause"]["reject_reason"], "IB_CM_REJ_INVALID_SERVICE_ID");
        assert_eq!(v["context"]["peer"], "192.168.77.1:18515");
        assert_eq!(v["context"]["device"], "rxe1");
        assert_eq!(v["context"]["elapsed_ms"], 250);
        assert_eq!(v["explanation"]["code"], "cm-no-listener");
        assert!(v["explanation"]["fix"]
            .as_str()
            .unwrap()
            .contains("start the server"));
        assert!(v["errno"].is_null(), "a reject reason is not an errno: {v}");

        let t = err(
            Step::CmResolveAddr,
            Cause::cm_event(EventKind::AddrError, -libc::ETIMEDOUT),
            None,
        );
        let v = serde_json::to_value(t.report()).unwrap();
        assert_eq!(v["errno"], 110);
        assert_eq!(v["errno_name"], "ETIMEDOUT");
        assert!(v["cause"].get("reject_reason").is_none(), "{v}");

        let w = err(
            Step::CmTransfer,
            Cause::WcStatus {
                status: 12,
                vendor_err: 0,
                opcode: 0,
                op: Some("RDMA READ"),
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
        let unreach = Cause::call("rdma_resolve_addr", libc::ENETUNREACH);
        let mut e = err(Step::CmResolveAddr, unreach.clone(), None);
        e.netdev_down("veth0");
        e.facts.evidence =
            vec!["192.168.77.2 is on veth0: operstate down, administratively down".into()];
        // The one netdev rule (`port_state`), as the TCP exchange, check and doctor say it.
        assert_eq!(e.code(), "netdev");
        assert!(e.explanation().starts_with("netdev veth0 is down"));
        assert!(e.fix().contains("ip link set veth0 up"));
        assert_eq!(
            e.x().evidence,
            [
                "netdev veth0 operstate down",
                "192.168.77.2 is on veth0: operstate down, administratively down"
            ]
        );
        let v = serde_json::to_value(e.report()).unwrap();
        assert_eq!(
            v["explanation"]["evidence"][1],
            "192.168.77.2 is on veth0: operstate down, administratively down"
        );
        // Once connected, a down netdev is not this rule's business.
        let mut later = err(
            Step::CmTransfer,
            Cause::cm_event(EventKind::Disconnected, 0),
            None,
        );
        later.netdev_down("veth0");
        assert_eq!(later.code(), "cm-peer-disconnected");
        // And without the fact, the errno's own rule.
        assert_eq!(
            err(Step::CmResolveAddr, unreach, None).code(),
            "cm-no-route"
        );
    }

    fn port(role: &str, name: &str, active_mtu: u32) -> StallFacts {
        let (device, port) = name.split_once('/').unwrap();
        StallFacts {
            role: role.into(),
            device: device.into(),
            port: port.parse().unwrap(),
            now: crate::model::facts::PortNow {
                port_state: Some(PortState::Active),
                active_mtu: Some(active_mtu),
                gid_now: crate::model::facts::GidNow::Same,
            },
            path_mtu: Some(1024),
            gid_index: Some(1),
            ..StallFacts::default()
        }
    }

    fn no_false_cause(text: &str) {
        for false_word in ["killed", "link went down", "namespace"] {
            assert!(!text.contains(false_word), "{false_word:?} in {text}");
        }
    }

    fn stall_text(x: &Diagnostic) -> String {
        let seen: Vec<&str> = x.evidence.iter().map(|s| s.text.as_str()).collect();
        format!("{}\n{}\n{}", x.message, seen.join("\n"), x.fix_text())
    }

    /// Issue 26, case 2 under --cm: the source GID removed mid-run on either end is named
    /// from that end's port, on both ends, before any guess at the peer.
    #[test]
    fn a_gid_removed_midrun_is_named_on_both_ends() {
        let timeout = Cause::Timeout {
            waited_ms: 5000,
            waiting_for: Some("echo of a SEND"),
        };
        let client = err(Step::CmTransfer, timeout, None);
        let mut gone_here = port("client", "rxe1/1", 1024);
        gone_here.now.gid_now = crate::model::facts::GidNow::Gone;
        let mut gone_there = port("server", "rxe0/1", 1024);
        gone_there.now.gid_now = crate::model::facts::GidNow::Gone;
        for (here, peer, whose) in [
            (
                gone_here,
                port("server", "rxe0/1", 1024),
                "of rxe1/1 (the client) left the GID table",
            ),
            (
                port("client", "rxe1/1", 1024),
                gone_there,
                "of rxe0/1 (the server) left the GID table",
            ),
        ] {
            let stall = CmStall {
                here,
                peer: Some(peer),
                peer_answered: Some(true),
            };
            let x = explain_stall(&client.f, &client.facts, &stall);
            let text = stall_text(&x);
            assert_eq!(x.code, codes::GID_REMOVED_MIDRUN, "{text}");
            assert!(text.contains(&format!("GID index 1 {whose}")), "{text}");
            assert!(!text.contains("stopped answering"), "{text}");
            no_false_cause(&text);
        }
    }

    /// Issue 26, case 1 under --cm: the netdev MTU cut below the QP's path MTU mid-run is
    /// named on the end whose port it is, from its own port, and on the other end from
    /// what that end said in the probe; never "the peer stopped answering".
    #[test]
    fn an_mtu_cut_midrun_is_named_on_both_ends() {
        let timeout = Cause::Timeout {
            waited_ms: 5000,
            waiting_for: Some("echo of a SEND"),
        };
        let client = err(Step::CmTransfer, timeout.clone(), None);
        // The cut on the client's own port.
        let stall = CmStall {
            here: port("client", "rxe1/1", 512),
            peer: Some(port("server", "rxe0/1", 1024)),
            peer_answered: Some(true),
        };
        let x = explain_stall(&client.f, &client.facts, &stall);
        let text = stall_text(&x);
        assert_eq!(x.code, codes::MTU_CUT_MIDRUN);
        assert!(
            text.contains(
                "rxe1/1 (the client): its active MTU 512 is below the QP's path MTU 1024"
            ),
            "{text}"
        );
        assert!(text.contains("rxe1/1 (the client): ACTIVE, active MTU 512, the QP's path MTU 1024, GID index 1 still in the table"), "{text}");
        assert!(
            text.contains("the server said: rxe0/1 (the server): ACTIVE, active MTU 1024"),
            "{text}"
        );
        // --cm takes the path MTU from the route: no -m to offer.
        assert!(!x.fix_text().contains("-m "), "{}", x.fix_text());
        assert!(x.fix_text().contains("its MTU back"), "{}", x.fix_text());
        no_false_cause(&text);

        // The server hears of it from the client's probe, then sees the client leave.
        let server = err(
            Step::CmTransfer,
            Cause::cm_event(EventKind::Disconnected, 0),
            None,
        );
        let heard = CmStall {
            here: port("server", "rxe0/1", 1024),
            peer: Some(port("client", "rxe1/1", 512)),
            peer_answered: None,
        };
        let x = explain_stall(&server.f, &server.facts, &heard);
        let text = stall_text(&x);
        assert_eq!(x.code, codes::MTU_CUT_MIDRUN);
        assert!(
            text.contains(
                "rxe1/1 (the client): its active MTU 512 is below the QP's path MTU 1024"
            ),
            "{text}"
        );
        no_false_cause(&text);

        // The cut on the server's port: the client learns it from the probe's answer.
        let answered = CmStall {
            here: port("client", "rxe1/1", 1024),
            peer: Some(port("server", "rxe0/1", 512)),
            peer_answered: Some(true),
        };
        let x = explain_stall(&client.f, &client.facts, &answered);
        let text = stall_text(&x);
        assert_eq!(x.code, codes::MTU_CUT_MIDRUN);
        assert!(
            text.contains(
                "rxe0/1 (the server): its active MTU 512 is below the QP's path MTU 1024"
            ),
            "{text}"
        );
        no_false_cause(&text);
    }

    /// Without a cut, a stalled transfer says what both ports rule out and whether the
    /// peer's process answered, instead of guessing death.
    #[test]
    fn a_stall_without_a_cut_says_what_was_ruled_out() {
        let e = err(
            Step::CmTransfer,
            Cause::Timeout {
                waited_ms: 5000,
                waiting_for: Some("echo of a SEND"),
            },
            None,
        );
        let both_fine = CmStall {
            here: port("client", "rxe1/1", 1024),
            peer: Some(port("server", "rxe0/1", 1024)),
            peer_answered: Some(true),
        };
        let x = explain_stall(&e.f, &e.facts, &both_fine);
        assert_eq!(x.code, codes::CM_TRANSFER_TIMEOUT);
        let text = stall_text(&x);
        assert!(text.contains("both ports are ACTIVE, at the QP's path MTU and with their GIDs, and the server's process answered a probe"), "{text}");
        no_false_cause(&text);
        let silent = CmStall {
            peer: None,
            peer_answered: Some(false),
            ..both_fine
        };
        let x = explain_stall(&e.f, &e.facts, &silent);
        let text = stall_text(&x);
        assert!(text.contains("the server did not answer a probe: its process is stopped or hung, or its host is unreachable"), "{text}");
        assert!(
            text.contains("the server did not answer a probe (a CM connect request of its own)"),
            "{text}"
        );
        no_false_cause(&text);
    }

    /// A server whose client left before its end-of-run message says so, with its own
    /// port's line: it does not print ok.
    #[test]
    fn a_client_that_left_early_is_a_failure_with_the_servers_port() {
        let mut e = err(
            Step::CmTransfer,
            Cause::cm_event(EventKind::Disconnected, 0),
            None,
        );
        e.f.context.note =
            Some("after 812 messages answered, before the client's end-of-run message".into());
        let stall = CmStall {
            here: port("server", "rxe0/1", 1024),
            ..CmStall::default()
        };
        let x = explain_stall(&e.f, &e.facts, &stall);
        assert_eq!(x.code, codes::CM_PEER_DISCONNECTED);
        let text = stall_text(&x);
        assert!(
            text.contains("rxe0/1 (the server): ACTIVE, active MTU 1024"),
            "{text}"
        );
        assert!(
            e.summary()
                .contains("before the client's end-of-run message"),
            "{}",
            e.summary()
        );
        no_false_cause(&text);
        assert_eq!(FailureReport::new(&e.f, x).exit_code(), crate::exit::FAILED);
    }

    /// Same-host IPv6 under --cm: the request from a Soft-RoCE device to an IPv6 address of
    /// veth0 is not answered because rxe carries no IPv6 between two devices of one kernel,
    /// not because no server is there. The gathered fact decides Soft-RoCE, not the name:
    /// a renamed rxe device (`rdma dev set rxe1 name roce7`) is one.
    #[test]
    fn same_host_ipv6_is_named_under_cm() {
        for cause in [
            Cause::Timeout {
                waited_ms: 5000,
                waiting_for: Some("answer to the connection request"),
            },
            Cause::cm_event(EventKind::Unreachable, -libc::ETIMEDOUT),
        ] {
            let mut e = err(Step::CmConnect, cause, Some(LinkLayer::Ethernet));
            e.f.context.device = "roce7".into();
            e.facts.qp = Some(QpFacts {
                soft_roce: true,
                ..QpFacts::default()
            });
            e.f.context.peer_addr = Some("[fd77::1]:18515".into());
            e.facts.cm_source = Some("fd77::2".parse().unwrap());
            e.facts.netdev = Some(NetdevFacts {
                name: "veth1".into(),
                exists: true,
                up: true,
                ..NetdevFacts::default()
            });
            e.facts.route = Some(crate::model::facts::RouteFacts {
                peer: Some("fd77::1".parse().unwrap()),
                peer_is_local: true,
                peer_local_netdev: Some("veth0".into()),
                ..Default::default()
            });
            let x = e.x();
            assert_eq!(x.code, codes::SAME_HOST_IPV6);
            let text = stall_text(&x);
            assert!(text.contains("rxe carries no RoCE v2 traffic over IPv6 between two devices of one kernel (veth1 to veth0)"), "{text}");
            assert!(
                text.contains(
                    "fd77::1 is an address of this host (on veth0); this end's address is on veth1"
                ),
                "{text}"
            );
            assert!(!text.contains("did not answer"), "{text}");
            assert!(!text.contains("no server there"), "{text}");
            no_false_cause(&text);
            // Hardware is not this rule's, whatever its name.
            e.f.context.device = "rxe1".into();
            e.facts.qp.as_mut().unwrap().soft_roce = false;
            assert_ne!(e.x().code, codes::SAME_HOST_IPV6);
            e.facts.qp.as_mut().unwrap().soft_roce = true;
            // IPv4 on one host is not this rule's, and neither is another host.
            e.facts.route.as_mut().unwrap().peer = Some("192.168.77.1".parse().unwrap());
            assert_ne!(e.x().code, codes::SAME_HOST_IPV6);
        }
    }

    /// An rdmactl server's own reject keeps the event and its reason, not a "version" guess.
    #[test]
    fn server_reject_says_what_the_server_said() {
        let e = err(
            Step::CmConnect,
            Cause::ServerRejected {
                status: 28,
                reject_reason: reject_reason_name(28),
                server_reason: "buffer larger than 256 MiB".into(),
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
