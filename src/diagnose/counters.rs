//! Counters judged: a run that worked but was not clean (`judge`, on the deltas of a run at
//! one or both ends), and the counters since the last reset (`doctor_finding`). Pure: the
//! deltas and snapshots come from `sysfs::SysfsRoot::port_counters` and
//! `counter::port_delta`.

use crate::model::codes;
use crate::model::counter::{Change, Counter, Flavor, Group, PortCounters, PortDelta, TrafficMix};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::doctor::CounterState;
use crate::model::failure::QP_PARAMS;

/// Every loss and retransmission counter, for the evidence lines: responder side (requests
/// seen again or out of order), requester side (NAKs, timeouts, resends started), and QPs
/// that ran out of retries.
const LOSS: &[&str] = &[
    "duplicate_request",
    "out_of_seq_request",
    "out_of_sequence",
    "rcvd_seq_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "completer_retry_err",
    "retry_exceeded_err",
    "req_transport_retries_exceeded",
];
/// Requester counters of a QP that ran out of retries.
const GAVE_UP: &[&str] = &["retry_exceeded_err", "req_transport_retries_exceeded"];
/// Sequence NAKs a requester received (rxe, mlx5), and mlx5's implied NAKs.
const NAKS: &[&str] = &["rcvd_seq_err", "packet_seq_err", "implied_nak_seq_err"];
/// Gaps a responder saw in the requests' PSNs.
const GAPS: &[&str] = &["out_of_seq_request", "out_of_sequence"];
const RNR: &[&str] = &[
    "rcvd_rnr_err",
    "send_rnr_err",
    "out_of_buffer",
    "rnr_nak_retry_err",
    "req_rnr_retries_exceeded",
    "retry_rnr_exceeded_err",
];
const CONGESTION: &[&str] = &[
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "roce_slow_restart_cnps",
    "port_xmit_wait",
];
const LINK: &[&str] = &[
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "local_link_integrity_errors",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "excessive_buffer_overrun_errors",
];

/// One end of a run: its deltas, how the lines name it, and its loss counters read.
struct RunEnd<'a> {
    delta: &'a PortDelta,
    who: String,
    loss: EndLoss,
    /// This end's port is the peer's too (a same-host run on one port): its counters hold
    /// both ends' packets, and the peer's copy was left out.
    shared_port: bool,
}

impl RunEnd<'_> {
    fn sum(&self, names: &[&str]) -> u64 {
        sum(self.delta, names)
    }

    /// `who: name +N (meaning)` for each of `names` that moved; "+N or more" when the
    /// number is a lower bound.
    fn lines(&self, names: &[&str]) -> Vec<String> {
        names
            .iter()
            .filter_map(|n| self.delta.get(n))
            .filter(|c| c.change.at_least() > 0 || !c.change.is_exact())
            .map(|c| {
                format!(
                    "{}: {}",
                    self.who,
                    describe_change(c.name(), c.change, c.counter.meaning)
                )
            })
            .collect()
    }
}

fn sum(delta: &PortDelta, names: &[&str]) -> u64 {
    names
        .iter()
        .map(|n| delta.at_least(n))
        .fold(0, u64::saturating_add)
}

fn describe_change(name: &str, change: Change, meaning: Option<&str>) -> String {
    let amount = match change {
        Change::Counted { delta, .. } => format!("+{delta}"),
        Change::Saturated { at_least } => {
            format!("+{at_least} or more (saturated, reset with perfquery -R)")
        }
        Change::Reset { at_least } => format!("+{at_least} or more (reset in between)"),
    };
    match meaning {
        Some(m) => format!("{name} {amount} ({m})"),
        None => format!("{name} {amount}"),
    }
}

fn per_thousand(count: u64, messages: u64) -> Option<String> {
    (messages > 0).then(|| format!("{:.2}", count as f64 * 1000.0 / messages as f64))
}

/// One end's loss counters over a run, read the way its driver counts (rxe_comp.c and
/// rxe_resp.c for rxe; mlx5's names otherwise).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndLoss {
    /// Packets this port sent (`sent_pkts`; PMA `port_xmit_packets` where there is no
    /// such hw counter); None when neither was read.
    pub sent: Option<u64>,
    /// Packets it received (`rcvd_pkts`, or PMA `port_rcv_packets`).
    pub received: Option<u64>,
    /// Resends this end started as a requester. rxe counts each in `completer_retry_err`,
    /// whether an ACK timeout or a sequence NAK started it (so its `rcvd_seq_err` is not
    /// added again); mlx5 counts timeouts and NAKs apart.
    pub retries: u64,
    /// Sequence NAKs received: the peer saw a gap in this end's packets.
    pub naks: u64,
    /// ACK timeouts: no answer within the QP's timeout. rxe has no counter of its own for
    /// them: its resends less its NAKs.
    pub ack_timeouts: u64,
    /// Requests received again (`duplicate_request`): the peer resent packets that had
    /// arrived.
    pub duplicates: u64,
    /// Gaps seen in the peer's requests (`out_of_seq_request` once per gap on rxe,
    /// `out_of_sequence` per packet on mlx5). Not resends: the originals dropped after a
    /// lost one.
    pub gaps: u64,
    /// QPs that ran out of retries.
    pub gave_up: u64,
}

impl EndLoss {
    pub fn of(d: &PortDelta) -> EndLoss {
        let first = |names: [&str; 2]| {
            names
                .iter()
                .find_map(|n| d.get(n).map(|c| c.change.at_least()))
        };
        let naks = sum(d, NAKS);
        let (retries, ack_timeouts) = if d.flavor == Flavor::Rxe {
            let started = d.at_least("completer_retry_err");
            (started, started.saturating_sub(naks))
        } else {
            let timeouts = d.at_least("local_ack_timeout_err");
            (naks.saturating_add(timeouts), timeouts)
        };
        // A WireDelta carries only the counters that moved: a port that sent nothing has
        // no sent_pkts in it, which is 0, not unknown, when its other counters came, or
        // when the port has packet counters at all (rxe's hw_counters, counters/): a port
        // where nothing moved (a server that received nothing) sent and received 0.
        let read = !d.counters.is_empty() || d.flavor == Flavor::Rxe || d.has_counters_dir;
        EndLoss {
            sent: first(["sent_pkts", "port_xmit_packets"]).or(read.then_some(0)),
            received: first(["rcvd_pkts", "port_rcv_packets"]).or(read.then_some(0)),
            retries,
            naks,
            ack_timeouts,
            duplicates: d.at_least("duplicate_request"),
            gaps: sum(d, GAPS),
            gave_up: sum(d, GAVE_UP),
        }
    }

    /// Packets this end resent, from its own counters and, when known, its peer's: each
    /// resend this end started sent at least one packet, and the peer counted those it had
    /// already as duplicates, so the larger of the two; plus this end's answers to the
    /// peer's duplicates (an ACK or a READ response sent again), at most one per resend the
    /// peer started. A lower bound: after a sequence NAK, the go-back-N resend of the
    /// packets that followed the lost one is counted once on rxe.
    fn resent(&self, peer: Option<&EndLoss>) -> u64 {
        match peer {
            None => self.retries,
            Some(p) => self
                .retries
                .max(p.duplicates)
                .saturating_add(self.duplicates.min(p.retries)),
        }
    }
}

/// The one loss ratio: packets resent per packet sent, over the ends whose counters were
/// read (docs/failures.md, `counters-retransmission`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resent {
    pub resent: u64,
    pub sent: u64,
}

impl Resent {
    /// Over this end, and the peer when it sent its counters; None when no packet was
    /// counted as sent.
    pub fn of(local: &EndLoss, peer: Option<&EndLoss>) -> Option<Resent> {
        let peer = peer.filter(|p| p.sent.is_some());
        let resent = local.resent(peer) + peer.map_or(0, |p| p.resent(Some(local)));
        let sent = local.sent? + peer.and_then(|p| p.sent).unwrap_or(0);
        (sent > 0).then_some(Resent { resent, sent })
    }

    pub fn per_mille(&self) -> f64 {
        self.resent as f64 * 1000.0 / self.sent as f64
    }
}

/// The ratio of a run from the counters its report carries (fabric's `--resend-limit`).
pub fn resent_per_mille(
    local: &crate::model::counter::WireDelta,
    peer: Option<&crate::model::counter::WireDelta>,
) -> Option<f64> {
    let peer = peer.map(|p| EndLoss::of(&p.to_delta()));
    Resent::of(&EndLoss::of(&local.to_delta()), peer.as_ref()).map(|r| r.per_mille())
}

/// Below this many resent packets per thousand sent a run is not called lossy: Soft-RoCE
/// under emulation resends a few on a clean link (a vCPU that stalls past the ACK timeout).
const LOSSY_PER_MILLE: f64 = 1.0;

/// Soft-RoCE's own floor: its ACK timeouts come from the host's scheduling (a vCPU or a
/// tasklet that ran late), about one per 500 packets under emulation on an idle link
/// (measured: 51 resent per 30075 in a default VM run), so a ratio of a few per thousand
/// there says nothing about the path.
const LOSSY_PER_MILLE_SOFT_ROCE: f64 = 5.0;

/// Nor below this many resent packets: a ratio over a short run is one or two events (one
/// ACK timeout in 500 packets is 2 per thousand), which says nothing about the link.
const LOSSY_MIN_RESENT: u64 = 10;

/// Why a run that completed was not clean (or what the counters of a failed one show),
/// from the counter deltas over the run at this end and, when it sent them, the peer's.
/// `mix`: what ran (None for an interval of `counters`, where it is unknown). One finding
/// per kind of trouble, naming the end that saw each counter; nothing when the counters
/// are clean.
///
/// Codes: `counters-retransmission`, `counters-rnr`, `counters-send-errors`,
/// `counters-congestion`, `counters-link-errors`, `counters-saturated`.
pub fn judge(
    local: &PortDelta,
    peer: Option<&PortDelta>,
    mix: Option<TrafficMix>,
) -> Vec<Diagnostic> {
    judge_ends(local, peer, mix, false)
}

/// `judge` for a run whose two ends shared this one port: its counters are judged once,
/// and the direction says why it cannot be told apart.
pub fn judge_shared_port(local: &PortDelta, mix: Option<TrafficMix>) -> Vec<Diagnostic> {
    judge_ends(local, None, mix, true)
}

fn judge_ends(
    local: &PortDelta,
    peer: Option<&PortDelta>,
    mix: Option<TrafficMix>,
    shared_port: bool,
) -> Vec<Diagnostic> {
    let mut ends = vec![RunEnd {
        delta: local,
        who: format!("this end {}", local.label()),
        loss: EndLoss::of(local),
        shared_port,
    }];
    if let Some(p) = peer {
        ends.push(RunEnd {
            delta: p,
            who: format!("the peer {}", p.label()),
            loss: EndLoss::of(p),
            shared_port: false,
        });
    }
    let subject = Subject::Port(local.device.clone(), local.port);
    let mut out = Vec::new();
    out.extend(retransmission(&ends, &subject));
    out.extend(rnr(&ends, mix, &subject));
    out.extend(send_errors(&ends, mix, &subject));
    out.extend(congestion(&ends, &subject));
    out.extend(link_errors(&ends, &subject));
    out.extend(saturated(&ends, &subject));
    out
}

/// How the ends are named in a direction: by device, or by role when both have one name
/// (two hosts' rxe0).
fn names(ends: &[RunEnd]) -> (String, String) {
    let local = &ends[0].delta.device;
    match ends.get(1) {
        Some(p) if p.delta.device != *local => (local.clone(), p.delta.device.clone()),
        Some(p) => (
            format!("this end's {local}"),
            format!("the peer's {}", p.delta.device),
        ),
        None => (format!("this end ({local})"), "the peer".to_string()),
    }
}

/// Which way packets are lost, and the line that shows it. With both ends' counters the
/// packets one end sent and the other received settle it (per port, so other traffic on
/// either port blurs it); else the gaps a responder saw and the NAKs a requester got. ACK
/// timeouts alone cannot tell a lost request from a lost ACK.
fn direction(ends: &[RunEnd]) -> (Option<String>, String) {
    let (me, them) = names(ends);
    let l = &ends[0].loss;
    if let Some(p) = ends.get(1).map(|e| &e.loss) {
        let counted = (l.sent, l.received, p.sent, p.received);
        if let (Some(ls), Some(lr), Some(ps), Some(pr)) = counted {
            let out = ls.saturating_sub(pr);
            let back = ps.saturating_sub(lr);
            let seen = format!(
                "direction: {me} sent {ls} packets and {them} received {pr} ({out} missing); {them} sent {ps} and {me} received {lr} ({back} missing)"
            );
            let way = if out > 0 && out >= 4 * back {
                Some(format!("packets from {me} to {them} are being lost"))
            } else if back > 0 && back >= 4 * out {
                Some(format!("packets from {them} to {me} are being lost"))
            } else if out > 0 && back > 0 {
                Some("packets are being lost both ways".to_string())
            } else {
                None
            };
            if way.is_some() {
                return (way, seen);
            }
        }
        // Gaps a responder saw and NAKs its requester got tell the same direction.
        let into_peer = p.gaps.max(l.naks);
        let into_me = l.gaps.max(p.naks);
        return match (into_peer > 0, into_me > 0) {
            (true, false) => (
                Some(format!("packets from {me} to {them} are being lost")),
                format!("direction: {them} saw gaps in {me}'s packets, or {me} received sequence NAKs"),
            ),
            (false, true) => (
                Some(format!("packets from {them} to {me} are being lost")),
                format!("direction: {me} saw gaps in {them}'s packets, or {them} received sequence NAKs"),
            ),
            _ if matches!(counted, (Some(_), Some(_), Some(_), Some(_))) => (None, "direction: unknown: the packet counts of the two ends match and ACK timeouts alone cannot tell a lost request from a lost ACK".to_string()),
            _ => (None, "direction: unknown: the two ends' packet counts are not both known and ACK timeouts alone cannot tell a lost request from a lost ACK".to_string()),
        };
    }
    match (l.naks > 0, l.gaps > 0) {
        (true, false) => (
            Some(format!("packets from {me} to {them} are being lost")),
            format!("direction: {me} received sequence NAKs: the peer saw gaps in its packets"),
        ),
        (false, true) => (
            Some(format!("packets from {them} to {me} are being lost")),
            format!("direction: {me} saw gaps in the peer's packets"),
        ),
        _ if ends[0].shared_port => (None, "direction: unknown: both ends ran on this port, whose counters hold both directions of the run, counted once".to_string()),
        _ => (None, "direction: unknown from one end's counters (the peer sent none: a stock peer, rdma_cm, or a failed run)".to_string()),
    }
}

fn retransmission(ends: &[RunEnd], subject: &Subject) -> Option<Diagnostic> {
    let evidence: Vec<String> = ends.iter().flat_map(|e| e.lines(LOSS)).collect();
    if evidence.is_empty() {
        return None;
    }
    let ratio = Resent::of(&ends[0].loss, ends.get(1).map(|e| &e.loss));
    let gave_up: u64 = ends.iter().map(|e| e.loss.gave_up).sum();
    let timeouts: u64 = ends.iter().map(|e| e.loss.ack_timeouts).sum();
    let naks: u64 = ends.iter().map(|e| e.loss.naks.max(e.loss.gaps)).sum();
    let threshold = if ends.iter().any(|e| e.delta.flavor == Flavor::Rxe) {
        LOSSY_PER_MILLE_SOFT_ROCE
    } else {
        LOSSY_PER_MILLE
    };
    let lossy = gave_up > 0
        || ratio.map_or(true, |r| {
            r.per_mille() >= threshold && r.resent >= LOSSY_MIN_RESENT
        });
    let (way, direction_line) = direction(ends);
    let rate = match ratio {
        Some(r) => format!(
            "{} packets resent per {} sent ({:.2} per thousand)",
            r.resent,
            r.sent,
            r.per_mille()
        ),
        None => "no packet count to compare with".to_string(),
    };
    let mut message = if lossy {
        format!(
            "{}: {rate}",
            way.as_deref().unwrap_or("packets were lost and resent")
        )
    } else {
        format!("a few packets were resent, too few to matter (a warning takes at least {LOSSY_MIN_RESENT} resent and {threshold} per thousand{}): {rate}", if threshold == LOSSY_PER_MILLE_SOFT_ROCE { " on Soft-RoCE, whose timeouts follow the host's scheduling" } else { "" })
    };
    if gave_up > 0 {
        message.push_str(&format!("; {gave_up} time(s) a QP ran out of retries"));
    }
    let timeout_us = 4.096 * f64::from(1u32 << QP_PARAMS.timeout);
    let mut latency = Vec::new();
    if timeouts > 0 {
        latency.push(format!(
            "each ACK timeout ({timeouts} here) stalls the QP for its local ACK timeout ({:.1} ms at timeout {}) before the resend",
            timeout_us / 1000.0,
            QP_PARAMS.timeout
        ));
    }
    if naks > 0 {
        latency.push(format!("each sequence NAK ({naks} here) costs about a round trip and a go-back-N resend of everything sent after the lost packet"));
    }
    let severity = if lossy {
        Severity::Warn
    } else {
        Severity::Info
    };
    let mut f = Diagnostic::finding(severity, codes::COUNTERS_RETRANSMISSION, message)
        .about(subject.clone());
    for line in evidence {
        f = f.evidence(line);
    }
    f = f.evidence(direction_line);
    if !latency.is_empty() {
        f = f.evidence(format!("latency: {}", latency.join("; ")));
    }
    if !lossy {
        return Some(f.fix("nothing to fix at this rate; watch it grow with `rdmactl counters DEV --interval 1` under load"));
    }
    Some(f.fix(
        "find where packets are dropped: (1) a lossy link: `rdmactl counters` on both ports and the switch ports for symbol errors and receive errors, `ip -s link` on the netdevs; \
         (2) lossless RoCE misconfigured: PFC must be enabled on the RoCE priority on both NICs and every switch port (and the traffic class/DSCP trust must map to it), ECN configured for DCQCN; \
         (3) an MTU that forces fragmentation upstream: RoCE packets cannot be fragmented, so a hop whose MTU is below the RDMA MTU plus headers drops them: compare `rdmactl ports` active MTU with every netdev and switch MTU on the path",
    ))
}

/// A failed run whose explanation names where its packets went (a firewall rule, a VLAN,
/// an MTU): the loss its counters show is that failure's, and their list of places to look
/// would only repeat guesses. A guess of a failure (no ACK, no completion) leaves it be.
pub fn defer_to_failure(findings: &mut [Diagnostic], failure_code: &crate::model::codes::Code) {
    let guesses = [
        codes::RETRY_EXCEEDED,
        codes::NO_COMPLETION,
        codes::UNEXPLAINED,
    ];
    if guesses.contains(failure_code) {
        return;
    }
    for f in findings
        .iter_mut()
        .filter(|f| f.code == codes::COUNTERS_RETRANSMISSION && f.severity == Severity::Warn)
    {
        f.fix = Some(format!("the loss is the run's failure ({failure_code}): its explanation says where the packets are dropped"));
    }
}

fn rnr(ends: &[RunEnd], mix: Option<TrafficMix>, subject: &Subject) -> Option<Diagnostic> {
    let evidence: Vec<String> = ends.iter().flat_map(|e| e.lines(RNR)).collect();
    if evidence.is_empty() || mix.is_some_and(|m| m.rnr_on_purpose) {
        return None;
    }
    let naks: u64 = ends.iter().map(|e| e.sum(RNR)).sum();
    // rxe_resp.c answers a READ whose response it cannot build or send (send_err counts
    // the refused send) with an RNR NAK, counted in send_rnr_err like a late receive.
    let refused_reads: Vec<String> = ends
        .iter()
        .filter(|e| e.delta.flavor == Flavor::Rxe && e.delta.at_least("send_rnr_err") > 0)
        .filter(|e| e.delta.at_least("send_err") > 0)
        .map(|e| format!("{} (send_err +{})", e.who, e.delta.at_least("send_err")))
        .collect();
    let read_note = (!refused_reads.is_empty()).then(|| {
        format!(
            "on rxe send_rnr_err also counts the RNR NAKs sent for an RDMA READ whose response could not be built or sent, and the netdev refused packets at {}",
            refused_reads.join(", ")
        )
    });
    let (message, fix) = match mix {
        Some(m) if m.sends == 0 => (
            format!(
                "RNR NAKs in a run without SENDs, so no receive was late: {}",
                if m.reads {
                    "rxe sends an RNR NAK when it cannot build or send an RDMA READ response, and the reader waited its RNR timer each time"
                } else {
                    "the responder could not answer a request in time, and the requester waited its RNR timer each time"
                }
            ),
            "find why the responder could not send: `send_err` counts the packets its netdev refused (an MTU below the packet, a netdev down, a queue drop): compare `ip link show NETDEV` with `rdmactl ports` and look at `tc -s qdisc show dev NETDEV`".to_string(),
        ),
        _ => {
            let rate = mix
                .and_then(|m| per_thousand(naks, m.sends))
                .map(|r| format!(" ({r} per thousand SENDs)"))
                .unwrap_or_default();
            (
                format!("receiver not ready: a SEND arrived before the receiver had a receive posted{rate}; the sender waited its RNR timer each time"),
                "post receives before the peer sends and keep the receive queue deeper than the sends in flight (re-post as each receive completes); \
                 a larger min_rnr_timer or rnr_retry 7 (retry forever) hides the stall but does not remove it".to_string(),
            )
        }
    };
    let mut f =
        Diagnostic::finding(Severity::Warn, codes::COUNTERS_RNR, message).about(subject.clone());
    for line in evidence {
        f = f.evidence(line);
    }
    if let Some(note) = read_note {
        f = f.evidence(note);
    }
    for line in rnr_not_congestion(ends) {
        f = f.evidence(line);
    }
    Some(f.fix(fix))
}

/// The receiver's empty-queue drops (`out_of_buffer`) matching the sender's exhausted RNR
/// retries (`rnr_nak_retry_err`) tie the two ends' counts to one cause; with no ECN mark,
/// CNP or transmit wait on either end, congestion is ruled out (sonic-buildimage #21891).
fn rnr_not_congestion(ends: &[RunEnd]) -> Vec<String> {
    let mut out = Vec::new();
    for receiver in ends {
        for sender in ends {
            let drops = receiver.delta.at_least("out_of_buffer");
            if (std::ptr::eq(receiver, sender) && ends.len() > 1) || drops == 0 {
                continue;
            }
            if drops == sender.delta.at_least("rnr_nak_retry_err") {
                out.push(format!(
                    "{}'s out_of_buffer +{drops} equals {}'s rnr_nak_retry_err +{drops}: each SEND that found no receive posted was NAKed until the sender gave up",
                    receiver.who, sender.who
                ));
            }
        }
    }
    let congestion: u64 = ends.iter().map(|e| e.sum(CONGESTION)).sum();
    let mut read: Vec<&str> = CONGESTION
        .iter()
        .copied()
        .filter(|n| ends.iter().any(|e| e.delta.get(n).is_some()))
        .collect();
    read.dedup();
    if !read.is_empty() && congestion == 0 {
        out.push(format!(
            "not congestion: none of the congestion counters read moved on either end ({}); an empty receive queue is not changed by PFC or ECN settings",
            read.join(", ")
        ));
    }
    out
}

/// rxe's `send_err`: the IP layer or the netdev refused a packet rxe handed it
/// (rxe_net.c, `rxe_xmit_packet`).
fn send_errors(ends: &[RunEnd], mix: Option<TrafficMix>, subject: &Subject) -> Option<Diagnostic> {
    let refusing: Vec<&RunEnd> = ends
        .iter()
        .filter(|e| {
            e.delta.at_least("send_err") > 0
                || e.delta
                    .get("send_err")
                    .is_some_and(|c| !c.change.is_exact())
        })
        .collect();
    if refusing.is_empty() {
        return None;
    }
    let named: Vec<String> = refusing
        .iter()
        .map(|e| format!("{} ({})", e.delta.label(), e.delta.at_least("send_err")))
        .collect();
    let mut f = Diagnostic::finding(
        Severity::Warn,
        codes::COUNTERS_SEND_ERRORS,
        format!(
            "the netdev refused packets the RDMA device handed it (send_err): {}",
            named.join(", ")
        ),
    )
    .about(subject.clone());
    for e in &refusing {
        for line in e.lines(&["send_err"]) {
            f = f.evidence(line);
        }
    }
    f = f.evidence(
        "what refuses a packet: one larger than the netdev's MTU (RoCE packets are never fragmented), a netdev that is down or has no route to the peer, a queue discipline that dropped it",
    );
    let read = if mix.map_or(true, |m| m.reads) {
        "; a refused RDMA READ response becomes an RNR NAK (send_rnr_err)"
    } else {
        ""
    };
    f = f.evidence(format!(
        "what it costs: a refused request packet is tried again, and when every one is refused the QP runs out of retries{read}"
    ));
    Some(f.fix(
        "compare the netdev's MTU (`ip link show NETDEV`) with the port's active MTU in `rdmactl ports` (the netdev needs the RDMA MTU plus about 60 bytes of headers), check that the netdev is up with a route to the peer, and look for drops in `tc -s qdisc show dev NETDEV`",
    ))
}

fn congestion(ends: &[RunEnd], subject: &Subject) -> Option<Diagnostic> {
    let evidence: Vec<String> = ends.iter().flat_map(|e| e.lines(CONGESTION)).collect();
    if evidence.is_empty() {
        return None;
    }
    let mut f = Diagnostic::finding(
        Severity::Info,
        codes::COUNTERS_CONGESTION,
        "the network signalled congestion (ECN marks, CNPs or transmit waits): senders were slowed down",
    )
    .about(subject.clone());
    for line in evidence {
        f = f.evidence(line);
    }
    f = f.evidence(
        "not covered: PFC pause frames (the netdev's ethtool statistics); `rdmactl qos --interval SECS` counts them per priority while a job runs",
    );
    Some(f.fix(
        "expected under load on a shared fabric; if throughput suffers, find the hot switch queue (its ECN marking and PFC counters) and check that DCQCN is enabled on both NICs",
    ))
}

fn link_errors(ends: &[RunEnd], subject: &Subject) -> Option<Diagnostic> {
    let evidence: Vec<String> = ends.iter().flat_map(|e| e.lines(LINK)).collect();
    if evidence.is_empty() {
        return None;
    }
    let mut f = Diagnostic::finding(
        Severity::Warn,
        codes::COUNTERS_LINK_ERRORS,
        "the physical link had errors (symbol errors, link recovery or link down)",
    )
    .about(subject.clone());
    for line in evidence {
        f = f.evidence(line);
    }
    Some(f.fix(
        "check the cable and transceivers of the port that counted them (reseat, swap, or replace), and the switch port at the other end; `mlxlink -d DEV -m` shows the signal and BER where it is available",
    ))
}

fn saturated(ends: &[RunEnd], subject: &Subject) -> Option<Diagnostic> {
    let names: Vec<String> = ends
        .iter()
        .flat_map(|e| {
            e.delta
                .counters
                .iter()
                .filter(|c| matches!(c.change, Change::Saturated { .. }))
                .map(|c| format!("{}: {} (at {}, all ones)", e.who, c.name(), c.counter.value))
                .collect::<Vec<_>>()
        })
        .collect();
    if names.is_empty() {
        return None;
    }
    let mut f = Diagnostic::finding(
        Severity::Info,
        codes::COUNTERS_SATURATED,
        "some counters are saturated: they stopped counting, so what they counted since the previous read is unknown",
    )
    .about(subject.clone());
    for line in names {
        f = f.evidence(line);
    }
    Some(f.fix("reset them with `perfquery -R` (infiniband-diags) and run again"))
}

/// doctor's counters check. Counters count since the driver loaded or the last reset, and
/// mlx5's `hw_counters/` never clear: a total says nothing about now, and one repaired link
/// flap would warn until a reboot. So the total is judged only as a person's information;
/// a health check (`state`: `doctor --state FILE`) judges what grew since its previous run.
/// - no state: Ok when no error counter is non-zero, else Info with the totals;
/// - state without this port (the first run, a new port, an unusable file): Info, the
///   baseline recorded;
/// - state with this port: Warn on each error counter that grew since (with the delta and
///   the interval), and on a counter that saturated since; else Ok.
///
/// None when the port has neither counter directory.
pub fn doctor_finding(pc: &PortCounters, state: Option<&CounterState>) -> Option<Diagnostic> {
    if !pc.has_counters_dir && !pc.has_hw_counters_dir {
        return None;
    }
    let subject = Subject::Port(pc.device.clone(), pc.port);
    let nonzero: Vec<&Counter> = pc
        .counters
        .iter()
        .filter(|c| (c.group.is_problem() && c.value > 0) || c.is_saturated())
        .collect();
    let no_pma = (!pc.has_counters_dir).then(|| {
        "no counters/ directory (Soft-RoCE and other software devices have no IB performance-management agent): only hw_counters/ is read".to_string()
    });
    let totals: Vec<String> = nonzero.iter().map(|c| total_line(c)).collect();
    let names: Vec<&str> = nonzero.iter().map(|c| c.name.as_str()).collect();
    let watch = format!("rdmactl counters {}/{} --interval 1", pc.device, pc.port);
    let previous = state.and_then(|s| {
        let record = s.previous.as_ref()?;
        Some((record, record.port(&pc.device, pc.port)?))
    });
    let mut f = match (state, previous) {
        (None, _) if nonzero.is_empty() => Diagnostic::finding(
            Severity::Ok,
            codes::COUNTERS,
            format!(
                "no error counters are non-zero ({} counters read)",
                pc.counters.len()
            ),
        ),
        (None, _) => Diagnostic::finding(
            Severity::Info,
            codes::COUNTERS,
            format!(
                "{} error counter{} non-zero since the last reset: {} (totals, not a rate)",
                nonzero.len(),
                if nonzero.len() == 1 { " is" } else { "s are" },
                names.join(", ")
            ),
        )
        .evidences(totals)
        .fix(format!(
            "{}; these count since the driver loaded or the last reset, so watch whether they still grow: `{watch}`; a health check judges the change since its previous run (`rdmactl doctor --state FILE`){}",
            group_fixes(&nonzero),
            saturated_note(&nonzero)
        )),
        (Some(st), None) => {
            let mut f = Diagnostic::finding(
                Severity::Info,
                codes::COUNTERS,
                format!(
                    "baseline of {} counters recorded in {}: the next run warns on an error counter that grows",
                    pc.counters.len(),
                    st.path
                ),
            );
            if let Some(why) = &st.unusable {
                f = f.evidence(format!("the previous state was not used: {why}"));
            } else if st.previous.is_some() {
                f = f.evidence(format!("{} held no record of this port", st.path));
            }
            f.evidences(totals)
        }
        (Some(st), Some((record, port))) => {
            let interval = interval(st.now.saturating_sub(record.taken));
            let grew: Vec<(&Counter, u64, Change)> = pc
                .counters
                .iter()
                .filter_map(|c| {
                    let before = port.value_of(c)?;
                    let was = Counter {
                        value: before,
                        ..c.clone()
                    };
                    // Between two checks minutes apart, an error counter that went down
                    // was reset (a driver reload, `perfquery -R`), not wrapped: 2^32 errors
                    // in one interval is not a port that still passes traffic. What it
                    // counts now is new since.
                    let ch = if c.value < before && c.group.is_problem() {
                        Change::Reset { at_least: c.value }
                    } else {
                        crate::model::counter::change(&was, c)
                    };
                    let error_grew = c.group.is_problem() && ch.at_least() > 0;
                    let saturated_now = c.is_saturated() && before < c.max();
                    (error_grew || saturated_now).then_some((c, before, ch))
                })
                .collect();
            if grew.is_empty() {
                Diagnostic::finding(
                    Severity::Ok,
                    codes::COUNTERS,
                    format!(
                        "no error counter grew in the {interval} since the previous run ({} counters read)",
                        pc.counters.len()
                    ),
                )
                .evidences(totals.into_iter().map(|t| format!("{t} (unchanged)")))
            } else {
                let said: Vec<String> = grew
                    .iter()
                    .map(|(c, _, ch)| describe_change(&c.name, *ch, None))
                    .collect();
                let counters: Vec<&Counter> = grew.iter().map(|g| g.0).collect();
                let mut f = Diagnostic::finding(
                    Severity::Warn,
                    codes::COUNTERS,
                    format!(
                        "{} error counter{} grew in the {interval} since the previous run: {}",
                        grew.len(),
                        if grew.len() == 1 { "" } else { "s" },
                        said.join(", ")
                    ),
                );
                for (c, before, ch) in &grew {
                    f = f.evidence(format!(
                        "{}/{} {before} -> {}{}: {}",
                        c.source.dir(),
                        c.name,
                        c.value,
                        match ch {
                            Change::Saturated { .. } =>
                                " (saturated at all ones, reset with perfquery -R)",
                            Change::Reset { .. } => " (reset in between)",
                            Change::Counted { .. } => "",
                        },
                        c.meaning.unwrap_or("no description")
                    ));
                }
                f.evidence(format!(
                    "previous run: {} seconds ago, recorded in {}",
                    st.now.saturating_sub(record.taken),
                    st.path
                ))
                .fix(format!(
                    "{}; see whether they still grow: `{watch}`{}",
                    group_fixes(&counters),
                    saturated_note(&counters)
                ))
            }
        }
    };
    f = f.about(subject);
    if let Some(n) = no_pma {
        f = f.evidence(n);
    }
    Some(f)
}

/// `counters/link_downed 1: meaning`, a counter's total since the last reset.
fn total_line(c: &Counter) -> String {
    let value = if c.is_saturated() {
        format!(
            "{} (saturated at all ones, reset with perfquery -R)",
            c.value
        )
    } else {
        c.value.to_string()
    };
    format!(
        "{}/{} {value}: {}",
        c.source.dir(),
        c.name,
        c.meaning.unwrap_or("no description")
    )
}

/// Where to look, by what the counters count.
fn group_fixes(counters: &[&Counter]) -> String {
    let groups: Vec<Group> = Group::ALL
        .into_iter()
        .filter(|g| counters.iter().any(|c| c.group == *g))
        .collect();
    let mut fixes = Vec::new();
    if groups.contains(&Group::Link) {
        fixes.push("physical errors: check the cable and transceivers (reseat or swap)");
    }
    if groups.contains(&Group::Loss) {
        fixes.push("loss: a QP resends when packets or ACKs are lost (check PFC/ECN on the RoCE priority end to end, and the path MTU) or when its peer stops answering (a peer killed mid-run ends in a retry-exceeded count)");
    }
    if groups.contains(&Group::Rnr) {
        fixes.push("RNR: the application posts receives too late");
    }
    if groups.contains(&Group::Errors) || fixes.is_empty() {
        fixes.push("errors: see each counter's meaning");
    }
    fixes.join("; ")
}

fn saturated_note(counters: &[&Counter]) -> &'static str {
    if counters.iter().any(|c| c.is_saturated()) {
        "; saturated counters count nothing more until reset with `perfquery -R`"
    } else {
        ""
    }
}

/// An interval as a person reads it: `42 s`, `5 min`, `2 h 5 min`, `3 d 4 h`.
fn interval(secs: u64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3_600, secs % 3_600 / 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{secs} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// `counters-state`: the health check's state file could not be written, so the next run
/// has no baseline and a counter that grows goes unseen. Said once, with the path and the
/// errno; the check itself ran and its other findings stand.
/// `asked`: the path was given (`--state FILE`), so failing it is a warning. The health
/// formats' default location may be read-only by design (a diskless node's root): there it
/// is info, so a node is not warned about forever for where it keeps no state.
pub fn state_not_saved(path: &str, why: &str, asked: bool) -> Diagnostic {
    Diagnostic::finding(
        if asked { Severity::Warn } else { Severity::Info },
        codes::COUNTERS_STATE,
        format!("the counters' state was not saved to {path}: {why}"),
    )
    .about(Subject::Host)
    .evidence("without it every run is a first run: an error counter that grows is not seen")
    .fix(format!(
        "let the user that runs the check write there (`install -d -o USER /var/lib/rdmactl`), or name a file it can write: `rdmactl doctor --state FILE`; the previous state stays as it was ({path})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::counter::{port_delta, CounterRecord, CounterSource as Source, Flavor};

    fn snap(device: &str, flavor: Flavor, values: &[(&str, Source, u64)]) -> PortCounters {
        PortCounters {
            device: device.into(),
            port: 1,
            flavor,
            has_counters_dir: values.iter().any(|v| v.1 == Source::Counters),
            has_hw_counters_dir: values.iter().any(|v| v.1 == Source::HwCounters),
            counters: values
                .iter()
                .map(|(n, s, v)| Counter::new(n, *s, flavor, *v, true))
                .collect(),
            problems: Vec::new(),
        }
    }

    /// The delta of a run: every named counter from 0 (or from `from`) to its value.
    fn run(device: &str, flavor: Flavor, after: &[(&str, Source, u64)]) -> PortDelta {
        let before: Vec<(&str, Source, u64)> = after.iter().map(|(n, s, _)| (*n, *s, 0)).collect();
        port_delta(
            &snap(device, flavor, &before),
            &snap(device, flavor, after),
            1.0,
        )
    }

    const HW: Source = Source::HwCounters;
    const PMA: Source = Source::Counters;

    fn codes(f: &[Diagnostic]) -> Vec<&str> {
        f.iter().map(|f| f.code.as_str()).collect()
    }

    /// A SEND ping-pong, as far as the RNR rule is concerned.
    const SENDS: Option<TrafficMix> = Some(TrafficMix {
        sends: 2000,
        reads: false,
        rnr_on_purpose: false,
    });

    #[test]
    fn a_clean_run_has_no_findings() {
        let d = run(
            "rxe0",
            Flavor::Rxe,
            &[("sent_pkts", HW, 4000), ("rcvd_pkts", HW, 4000)],
        );
        assert!(judge(&d, Some(&d), SENDS).is_empty());
    }

    #[test]
    fn retransmission_names_each_end_and_the_ratio_of_packets() {
        // rxe0 resent after 30 sequence NAKs (completer_retry_err counts each once more, so
        // it is not added to rcvd_seq_err); rxe1 saw the 30 gaps and 20 duplicates.
        let local = run(
            "rxe0",
            Flavor::Rxe,
            &[
                ("rcvd_seq_err", HW, 30),
                ("completer_retry_err", HW, 30),
                ("sent_pkts", HW, 6000),
                ("rcvd_pkts", HW, 4000),
            ],
        );
        let peer = run(
            "rxe1",
            Flavor::Rxe,
            &[
                ("duplicate_request", HW, 20),
                ("out_of_seq_request", HW, 30),
                ("sent_pkts", HW, 4000),
                ("rcvd_pkts", HW, 5900),
            ],
        );
        let f = judge(&local, Some(&peer), SENDS);
        assert_eq!(codes(&f), ["counters-retransmission"]);
        let f = &f[0];
        assert_eq!(f.severity, Severity::Warn);
        // 30 resends by rxe0 (more than rxe1's 20 duplicates), and rxe1's 20 answers to the
        // duplicates, over 10000 sent (Soft-RoCE warns from 5 per thousand).
        assert!(
            f.message
                .contains("50 packets resent per 10000 sent (5.00 per thousand)"),
            "{}",
            f.message
        );
        // rxe0 sent 6000, rxe1 received 5900: the direction, in the heading.
        assert!(
            f.message
                .starts_with("packets from rxe0 to rxe1 are being lost"),
            "{}",
            f.message
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e.starts_with("this end rxe0/1: rcvd_seq_err +30")),
            "{:?}",
            f.evidence
        );
        assert!(f
            .evidence
            .iter()
            .any(|e| e.starts_with("the peer rxe1/1: out_of_seq_request +30")));
        assert!(f.evidence.iter().any(|e| e.contains("(100 missing)")));
        let latency = f
            .evidence
            .iter()
            .find(|e| e.starts_with("latency:"))
            .unwrap();
        assert!(latency.contains("sequence NAK"), "{latency}");
        // NAKs only: no ACK timed out, so no timeout stall is claimed.
        assert!(!latency.contains("ACK timeout"), "{latency}");
        let fix = f.fix.as_deref().unwrap();
        assert!(fix.contains("PFC") && fix.contains("MTU") && fix.contains("lossy link"));

        // The same ratio over a tenth of the packets is 5 events: below the floor, it is
        // information, without the fix's list of suspects.
        let short = |name, pairs: &[(&str, u64)]| {
            let v: Vec<(&str, _, u64)> = pairs.iter().map(|(n, c)| (*n, HW, c / 10)).collect();
            run(name, Flavor::Rxe, &v)
        };
        let local = short(
            "rxe0",
            &[
                ("rcvd_seq_err", 30),
                ("completer_retry_err", 30),
                ("sent_pkts", 6000),
                ("rcvd_pkts", 4000),
            ],
        );
        let peer = short(
            "rxe1",
            &[
                ("duplicate_request", 20),
                ("out_of_seq_request", 30),
                ("sent_pkts", 4000),
                ("rcvd_pkts", 5900),
            ],
        );
        let f = judge(&local, Some(&peer), SENDS);
        assert_eq!(f[0].severity, Severity::Info, "{}", f[0].message);
        assert!(
            f[0].message.contains("too few to matter"),
            "{}",
            f[0].message
        );
        assert!(!f[0].fix.as_deref().unwrap_or("").contains("PFC"));
    }

    #[test]
    fn the_ratio_counts_resends_and_answers_once() {
        // One end's ACK timeouts, its peer's duplicates (the same resends, per packet) and
        // the peer's ACKs sent again for them.
        let a = EndLoss {
            sent: Some(1000),
            received: Some(990),
            retries: 10,
            ack_timeouts: 10,
            ..EndLoss::default()
        };
        let b = EndLoss {
            sent: Some(1000),
            received: Some(1000),
            duplicates: 12,
            ..EndLoss::default()
        };
        let r = Resent::of(&a, Some(&b)).unwrap();
        // a resent 12 packets (b's duplicates, more than a's 10 resends), and b answered
        // once per resend of a's: 10 ACKs sent again.
        assert_eq!((r.resent, r.sent), (12 + 10, 2000));
        let r = Resent::of(&b, Some(&a)).unwrap();
        assert_eq!((r.resent, r.sent), (22, 2000), "the same from either end");
        // This end alone: its own resends over its own packets.
        let r = Resent::of(&a, None).unwrap();
        assert_eq!((r.resent, r.sent), (10, 1000));
        // Never above one per packet for resends that each sent a packet.
        assert!(Resent::of(&a, Some(&b)).unwrap().per_mille() <= 1000.0);
        assert_eq!(Resent::of(&EndLoss::default(), None), None);
    }

    // Deltas measured in the VM (tests/vm/cases/62-counters-loss.sh, kernel 6.1, rxe0 on
    // veth0 and rxe1 on veth1, `pingpong -j` on both), as each end's `counters` reported
    // them. With `tc qdisc add dev veth1 root netem loss 5%` only packets from rxe1 to rxe0
    // are dropped. The clean run of the same shape (-n 1000 -s 1000 --op send) sent 2000
    // packets at each end; the lossy one 4170 in all: 170 more, which is what rdmactl
    // counts as resent.
    fn measured_lossy() -> (PortDelta, PortDelta) {
        let rxe1 = run(
            "rxe1",
            Flavor::Rxe,
            &[
                ("completer_retry_err", HW, 58),
                ("duplicate_request", HW, 56),
                ("rcvd_pkts", HW, 2056),
                ("rdma_recvs", HW, 1000),
                ("rdma_sends", HW, 1000),
                ("sent_pkts", HW, 2114),
            ],
        );
        let rxe0 = run(
            "rxe0",
            Flavor::Rxe,
            &[
                ("completer_retry_err", HW, 56),
                ("rcvd_pkts", HW, 2000),
                ("rdma_recvs", HW, 1000),
                ("rdma_sends", HW, 1000),
                ("sent_pkts", HW, 2056),
            ],
        );
        (rxe1, rxe0)
    }

    /// The server of a run whose every packet toward it was dropped (rp_filter, a
    /// firewall): its counters stood still, so its WireDelta carries none, and that is 0
    /// sent and 0 received on an rxe port, not "unknown". Both ends name the direction.
    #[test]
    fn a_port_where_nothing_moved_counts_zero_packets_on_both_ends() {
        let server = run(
            "rxe0",
            Flavor::Rxe,
            &[("rcvd_pkts", HW, 0), ("sent_pkts", HW, 0)],
        );
        let server = crate::model::counter::WireDelta::of(&server).to_delta();
        assert!(server.counters.is_empty(), "{:?}", server.counters);
        let client = run(
            "rxe1",
            Flavor::Rxe,
            &[
                ("completer_retry_err", HW, 6),
                ("retry_exceeded_err", HW, 1),
                ("sent_pkts", HW, 28),
            ],
        );
        let client = crate::model::counter::WireDelta::of(&client).to_delta();
        for (local, peer) in [(&server, &client), (&client, &server)] {
            let f = judge(local, Some(peer), SENDS);
            let f = f
                .iter()
                .find(|f| f.code == "counters-retransmission")
                .unwrap();
            let all = format!("{} {:?}", f.message, f.evidence);
            assert!(
                f.message
                    .starts_with("packets from rxe1 to rxe0 are being lost"),
                "{all}"
            );
            assert!(
                all.contains("rxe1 sent 28 packets and rxe0 received 0")
                    || all.contains("rxe0 received 0"),
                "{all}"
            );
            for false_words in ["counts of the two ends match", "no packet count to compare"] {
                assert!(!all.contains(false_words), "{false_words}: {all}");
            }
        }
    }

    /// Both ends on one port: its counters are judged once, and the direction says why it
    /// is not known, not that the peer sent none.
    #[test]
    fn a_shared_port_is_judged_once_and_says_why_the_direction_is_unknown() {
        let port = run(
            "rxe0",
            Flavor::Rxe,
            &[
                ("completer_retry_err", HW, 40),
                ("duplicate_request", HW, 40),
                ("sent_pkts", HW, 3000),
                ("rcvd_pkts", HW, 3000),
            ],
        );
        let f = judge_shared_port(&port, SENDS);
        let f = f
            .iter()
            .find(|f| f.code == "counters-retransmission")
            .unwrap();
        let all = format!("{} {:?}", f.message, f.evidence);
        assert!(all.contains("both ends ran on this port"), "{all}");
        assert!(!all.contains("the peer sent none"), "{all}");
    }

    #[test]
    fn measured_loss_on_one_direction_is_named_from_both_ends() {
        let (rxe1, rxe0) = measured_lossy();
        let mix = Some(TrafficMix {
            sends: 2000,
            reads: false,
            rnr_on_purpose: false,
        });
        for (local, peer) in [(&rxe1, &rxe0), (&rxe0, &rxe1)] {
            let f = judge(local, Some(peer), mix);
            assert_eq!(codes(&f), ["counters-retransmission"]);
            let f = &f[0];
            assert_eq!(f.severity, Severity::Warn);
            assert!(
                f.message.starts_with(
                    "packets from rxe1 to rxe0 are being lost: 170 packets resent per 4170 sent (40.77 per thousand)"
                ),
                "{}",
                f.message
            );
            let all = format!("{} {:?}", f.message, f.evidence);
            for false_cause in [
                "packets from rxe0 to rxe1",
                "killed",
                "link went down",
                "namespace",
            ] {
                assert!(!all.contains(false_cause), "{false_cause}: {all}");
            }
            // 114 of rxe1's packets never reached rxe0, as sysfs showed in the case.
            assert!(
                all.contains("2114") && all.contains("(114 missing)"),
                "{all}"
            );
            // Timeouts only (rxe counted no sequence NAK): the stall line, no NAK line.
            let latency = f
                .evidence
                .iter()
                .find(|e| e.starts_with("latency:"))
                .unwrap();
            assert!(latency.contains("each ACK timeout (114 here)"), "{latency}");
            assert!(!latency.contains("sequence NAK"), "{latency}");
        }
        // The sysfs reference: 170 packets beyond the clean run's 4000, per 4170 sent.
        let r = Resent::of(&EndLoss::of(&rxe1), Some(&EndLoss::of(&rxe0))).unwrap();
        assert_eq!((r.resent, r.sent), (4170 - 4000, 4170));
    }

    #[test]
    fn measured_multi_packet_loss_stays_a_bounded_lower_bound() {
        // The same loss with 4096-byte messages (four packets at MTU 1024), -n 300: a
        // sequence NAK resends the rest of the message and rxe counts that once, so the
        // ratio (173 of 3332) is below the packets sent beyond a clean run's 10 per
        // iteration (332), within a factor of two.
        let rxe1 = run(
            "rxe1",
            Flavor::Rxe,
            &[
                ("completer_retry_err", HW, 54),
                ("duplicate_request", HW, 48),
                ("rcvd_pkts", HW, 1637),
                ("rcvd_seq_err", HW, 17),
                ("sent_pkts", HW, 1695),
            ],
        );
        let rxe0 = run(
            "rxe0",
            Flavor::Rxe,
            &[
                ("completer_retry_err", HW, 12),
                ("duplicate_request", HW, 59),
                ("out_of_seq_request", HW, 30),
                ("rcvd_pkts", HW, 1624),
                ("sent_pkts", HW, 1637),
            ],
        );
        let r = Resent::of(&EndLoss::of(&rxe0), Some(&EndLoss::of(&rxe1))).unwrap();
        assert_eq!((r.resent, r.sent), (173, 3332));
        assert!(r.per_mille() <= 1000.0 && 2 * r.resent >= 3332 - 3000);
        let f = judge(&rxe0, Some(&rxe1), None);
        assert!(f[0]
            .message
            .starts_with("packets from rxe1 to rxe0 are being lost"));
        // Both kinds of resend happened: both costs are said.
        let latency = f[0]
            .evidence
            .iter()
            .find(|e| e.starts_with("latency:"))
            .unwrap();
        assert!(latency.contains("ACK timeout") && latency.contains("sequence NAK"));
    }

    #[test]
    fn measured_clean_runs_are_not_lossy() {
        // A clean 1000-byte SEND run: nothing but traffic moved.
        let clean = run(
            "rxe1",
            Flavor::Rxe,
            &[
                ("rcvd_pkts", HW, 2000),
                ("rdma_recvs", HW, 1000),
                ("rdma_sends", HW, 1000),
                ("sent_pkts", HW, 2000),
            ],
        );
        assert!(judge(&clean, Some(&clean), None).is_empty());
        // A clean 8 MiB WRITE run (-n 4): rxe under emulation resent a little (the old
        // figure, a packet count over one end's messages, called this 5533 per thousand).
        let rxe1 = run(
            "rxe1",
            Flavor::Rxe,
            &[
                ("duplicate_request", HW, 29),
                ("out_of_seq_request", HW, 4),
                ("rcvd_pkts", HW, 33301),
                ("sent_pkts", HW, 33301),
            ],
        );
        let rxe0 = run(
            "rxe0",
            Flavor::Rxe,
            &[
                ("ack_deferred", HW, 4),
                ("completer_retry_err", HW, 1),
                ("rcvd_pkts", HW, 33301),
                ("rcvd_seq_err", HW, 2),
                ("sent_pkts", HW, 33301),
            ],
        );
        let f = judge(&rxe1, Some(&rxe0), None);
        assert_eq!(codes(&f), ["counters-retransmission"]);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].message
                .contains("30 packets resent per 66602 sent (0.45 per thousand)"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn ack_timeouts_say_what_they_cost() {
        let d = run(
            "mlx5_0",
            Flavor::Mlx5,
            &[
                ("local_ack_timeout_err", HW, 1),
                ("req_transport_retries_exceeded", HW, 1),
            ],
        );
        let f = judge(&d, None, None);
        assert_eq!(codes(&f), ["counters-retransmission"]);
        assert!(f[0].message.contains("ran out of retries"));
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.contains("each ACK timeout (1 here)")
                    && e.contains("67.1 ms at timeout 14")),
            "{:?}",
            f[0].evidence
        );
        // One end, timeouts only: the direction is not claimed.
        assert!(f[0].message.starts_with("packets were lost and resent"));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.starts_with("direction: unknown")));
    }

    #[test]
    fn a_few_resends_are_information() {
        let d = run(
            "rxe0",
            Flavor::Rxe,
            &[("completer_retry_err", HW, 2), ("sent_pkts", HW, 40_000)],
        );
        let f = judge(&d, None, SENDS);
        assert_eq!(codes(&f), ["counters-retransmission"]);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].message.contains("too few to matter"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn rnr_says_the_receiver_was_late() {
        let d = run("rxe0", Flavor::Rxe, &[("rcvd_rnr_err", HW, 4)]);
        let f = judge(&d, None, SENDS);
        assert_eq!(codes(&f), ["counters-rnr"]);
        assert!(f[0].message.contains("2.00 per thousand SENDs"));
        assert!(f[0].fix.as_deref().unwrap().contains("post receives"));
    }

    /// selftest's flush step holds a SEND on RNR NAKs on purpose: they are no finding, while
    /// the same counts from a run that did not ask for them are.
    #[test]
    fn rnr_naks_a_run_asked_for_are_no_finding() {
        let end = run(
            "rxe0",
            Flavor::Rxe,
            &[("rcvd_rnr_err", HW, 3), ("send_rnr_err", HW, 3)],
        );
        let asked = TrafficMix {
            sends: 40,
            reads: true,
            rnr_on_purpose: true,
        };
        assert!(!codes(&judge(&end, None, Some(asked))).contains(&"counters-rnr"));
        let not_asked = TrafficMix {
            rnr_on_purpose: false,
            ..asked
        };
        assert!(codes(&judge(&end, None, Some(not_asked))).contains(&"counters-rnr"));
    }

    #[test]
    fn rnr_without_sends_is_not_a_late_receive() {
        // A READ-only run whose responder's netdev refused its READ responses: rxe answers
        // with RNR NAKs and counts them as send_rnr_err, with send_err beside them.
        let responder = run(
            "rxe1",
            Flavor::Rxe,
            &[("send_rnr_err", HW, 7), ("send_err", HW, 7)],
        );
        let reader = run("rxe0", Flavor::Rxe, &[("rcvd_rnr_err", HW, 7)]);
        let mix = Some(TrafficMix {
            sends: 0,
            reads: true,
            rnr_on_purpose: false,
        });
        let f = judge(&reader, Some(&responder), mix);
        assert_eq!(codes(&f), ["counters-rnr", "counters-send-errors"]);
        assert!(
            f[0].message.contains("no receive was late"),
            "{}",
            f[0].message
        );
        assert!(f[0].message.contains("READ response"), "{}", f[0].message);
        assert!(!f[0]
            .message
            .contains("before the receiver had a receive posted"));
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("the peer rxe1/1 (send_err +7)")));
        assert!(f[0].fix.as_deref().unwrap().contains("send_err"));
    }

    #[test]
    fn send_err_says_the_netdev_refused_packets() {
        let d = run(
            "rxe1",
            Flavor::Rxe,
            &[("send_err", HW, 165_931), ("sent_pkts", HW, 300)],
        );
        let f = judge(&d, None, SENDS);
        assert_eq!(codes(&f), ["counters-send-errors"]);
        assert_eq!(f[0].severity, Severity::Warn);
        assert!(f[0].message.contains("the netdev refused packets"));
        assert!(f[0].message.contains("rxe1/1 (165931)"), "{}", f[0].message);
        assert!(f[0]
            .evidence
            .iter()
            .any(|e| e.contains("larger than the netdev's MTU")));
        let fix = f[0].fix.as_deref().unwrap();
        assert!(fix.contains("ip link show") && fix.contains("tc -s qdisc"));
    }

    /// sonic-buildimage #21891: the receiver's out_of_buffer equals the sender's
    /// rnr_nak_retry_err, and no ECN mark or CNP moved: an empty receive queue.
    #[test]
    fn rnr_matching_the_peers_empty_queue_is_not_congestion() {
        let sender = run(
            "mlx5_0",
            Flavor::Mlx5,
            &[
                ("rnr_nak_retry_err", HW, 1543),
                ("np_ecn_marked_roce_packets", HW, 0),
                ("np_cnp_sent", HW, 0),
            ],
        );
        let receiver = run(
            "mlx5_1",
            Flavor::Mlx5,
            &[
                ("out_of_buffer", HW, 1543),
                ("np_ecn_marked_roce_packets", HW, 0),
                ("np_cnp_sent", HW, 0),
            ],
        );
        let f = judge(&sender, Some(&receiver), SENDS);
        assert_eq!(codes(&f), ["counters-rnr"], "{f:#?}");
        let all = f[0].evidence.join("\n");
        assert!(
            all.contains("out_of_buffer +1543 equals this end mlx5_0/1's rnr_nak_retry_err +1543"),
            "{all}"
        );
        assert!(all.contains("not congestion"), "{all}");
        assert!(!f[0].message.contains("congest"), "{}", f[0].message);
        // With CNPs moving, congestion is not ruled out.
        let receiver = run(
            "mlx5_1",
            Flavor::Mlx5,
            &[("out_of_buffer", HW, 1543), ("np_cnp_sent", HW, 40)],
        );
        let f = judge(&sender, Some(&receiver), SENDS);
        let rnr = f
            .iter()
            .find(|d| d.code.as_str() == "counters-rnr")
            .unwrap();
        assert!(!rnr.evidence.join("\n").contains("not congestion"));
    }

    #[test]
    fn congestion_is_information_and_says_what_is_not_read() {
        let d = run(
            "mlx5_0",
            Flavor::Mlx5,
            &[
                ("np_cnp_sent", HW, 10),
                ("np_ecn_marked_roce_packets", HW, 12),
            ],
        );
        let f = judge(&d, None, None);
        assert_eq!(codes(&f), ["counters-congestion"]);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].evidence.iter().any(|e| e.contains("PFC pause frames")));
    }

    #[test]
    fn link_errors_point_at_the_cable() {
        let d = run(
            "mlx5_0",
            Flavor::Mlx5,
            &[("symbol_error", PMA, 7), ("link_downed", PMA, 1)],
        );
        let f = judge(&d, None, None);
        assert_eq!(codes(&f), ["counters-link-errors"]);
        assert!(f[0].fix.as_deref().unwrap().contains("cable"));
    }

    #[test]
    fn saturated_counters_are_said_never_negative() {
        let before = snap("mlx4_0", Flavor::Other, &[("port_rcv_errors", PMA, 65_000)]);
        let after = snap("mlx4_0", Flavor::Other, &[("port_rcv_errors", PMA, 65_535)]);
        let f = judge(&port_delta(&before, &after, 1.0), None, None);
        assert_eq!(codes(&f), ["counters-link-errors", "counters-saturated"]);
        assert!(
            f[0].evidence[0].contains("+535 or more (saturated, reset with perfquery -R)"),
            "{:?}",
            f[0].evidence
        );
        assert!(f[1].fix.as_deref().unwrap().contains("perfquery -R"));
    }

    /// A person's run (no state): the totals since the last reset are information with
    /// their meaning, never a warning that drains a node.
    #[test]
    fn doctor_without_state_shows_totals_as_information() {
        let pc = snap(
            "rxe0",
            Flavor::Rxe,
            &[("retry_exceeded_err", HW, 2), ("sent_pkts", HW, 100)],
        );
        let f = doctor_finding(&pc, None).unwrap();
        assert_eq!((f.severity, f.code.as_str()), (Severity::Info, "counters"));
        assert!(f.message.contains("retry_exceeded_err"));
        assert!(f.message.contains("totals, not a rate"), "{}", f.message);
        assert!(
            f.evidence
                .iter()
                .any(|e| e.starts_with("hw_counters/retry_exceeded_err 2: requester (rxe)")),
            "{:?}",
            f.evidence
        );
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("no counters/ directory")));
        let fix = f.fix.as_deref().unwrap();
        assert!(
            fix.contains("rdmactl counters rxe0/1 --interval 1"),
            "{fix}"
        );
        assert!(fix.contains("--state FILE"), "{fix}");
        // A saturated counter is information too without state.
        let pc = snap(
            "mlx4_0",
            Flavor::Other,
            &[("port_xmit_wait", PMA, u64::from(u32::MAX))],
        );
        let f = doctor_finding(&pc, None).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(f.evidence[0].contains("saturated at all ones, reset with perfquery -R"));
    }

    fn state(previous: Option<CounterRecord>, now: u64) -> CounterState {
        CounterState {
            path: "/var/lib/rdmactl/doctor-nagios.json".into(),
            now,
            previous,
            unusable: None,
        }
    }

    /// One repaired link flap: the first run records it, the next run with no new flap
    /// passes, a new flap warns with its delta and the interval, and the run after that
    /// passes again.
    #[test]
    fn doctor_with_state_warns_on_growth_not_on_totals() {
        let flap = |n: u64| {
            snap(
                "mlx5_0",
                Flavor::Mlx5,
                &[("link_downed", PMA, n), ("symbol_error", PMA, 0)],
            )
        };
        let first = doctor_finding(&flap(1), Some(&state(None, 1000))).unwrap();
        assert_eq!(first.severity, Severity::Info, "{first:?}");
        assert!(
            first
                .message
                .contains("baseline of 2 counters recorded in /var/lib/rdmactl/doctor-nagios.json"),
            "{}",
            first.message
        );
        assert!(first
            .evidence
            .iter()
            .any(|e| e.starts_with("counters/link_downed 1")));
        let taken = CounterRecord::of(None, &[&flap(1)], 1000);
        let same = doctor_finding(&flap(1), Some(&state(Some(taken.clone()), 1300))).unwrap();
        assert_eq!(same.severity, Severity::Ok, "{same:?}");
        assert!(
            same.message
                .contains("no error counter grew in the 5 min since the previous run"),
            "{}",
            same.message
        );
        assert!(same
            .evidence
            .iter()
            .any(|e| e.contains("link_downed 1") && e.contains("(unchanged)")));
        let again = doctor_finding(&flap(2), Some(&state(Some(taken), 1300))).unwrap();
        assert_eq!(again.severity, Severity::Warn);
        assert!(
            again.message.contains(
                "1 error counter grew in the 5 min since the previous run: link_downed +1"
            ),
            "{}",
            again.message
        );
        assert!(
            again
                .evidence
                .iter()
                .any(|e| e.starts_with("counters/link_downed 1 -> 2")),
            "{:?}",
            again.evidence
        );
        assert!(again.fix.as_deref().unwrap().contains("cable"));
        // A port the record does not hold (a new device) is a baseline, said so.
        let other = CounterRecord::of(
            None,
            &[&snap("mlx5_1", Flavor::Mlx5, &[("link_downed", PMA, 0)])],
            1000,
        );
        let f = doctor_finding(&flap(7), Some(&state(Some(other), 1300))).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(f
            .evidence
            .iter()
            .any(|e| e.contains("held no record of this port")));
    }

    /// A driver reload resets the counters: errors counted since are new (a lower bound);
    /// a PMA counter that saturated since warns once, and stays quiet while it stays there.
    #[test]
    fn doctor_with_state_reads_resets_and_saturation() {
        let hw = |n: u64| snap("mlx5_0", Flavor::Mlx5, &[("out_of_sequence", HW, n)]);
        let taken = CounterRecord::of(None, &[&hw(500)], 0);
        let f = doctor_finding(&hw(3), Some(&state(Some(taken.clone()), 90_000))).unwrap();
        assert_eq!(f.severity, Severity::Warn);
        assert!(f.message.contains("in the 1 d 1 h since"), "{}", f.message);
        assert!(
            f.message
                .contains("out_of_sequence +3 or more (reset in between)"),
            "{}",
            f.message
        );
        let f = doctor_finding(&hw(0), Some(&state(Some(taken), 60))).unwrap();
        assert_eq!(f.severity, Severity::Ok);
        let wait = |n: u64| snap("mlx4_0", Flavor::Other, &[("port_xmit_wait", PMA, n)]);
        let top = u64::from(u32::MAX);
        let taken = CounterRecord::of(None, &[&wait(top - 5)], 0);
        let f = doctor_finding(&wait(top), Some(&state(Some(taken), 60))).unwrap();
        assert_eq!(f.severity, Severity::Warn);
        assert!(f.fix.as_deref().unwrap().contains("perfquery -R"));
        let taken = CounterRecord::of(None, &[&wait(top)], 0);
        let f = doctor_finding(&wait(top), Some(&state(Some(taken), 60))).unwrap();
        assert_eq!(f.severity, Severity::Ok, "{f:?}");
    }

    #[test]
    fn doctor_is_ok_on_clean_counters_and_silent_without_any() {
        let pc = snap(
            "mlx5_0",
            Flavor::Mlx5,
            &[("symbol_error", PMA, 0), ("port_xmit_wait", PMA, 9)],
        );
        assert_eq!(doctor_finding(&pc, None).unwrap().severity, Severity::Ok);
        assert!(doctor_finding(&snap("x", Flavor::Other, &[]), None).is_none());
        assert_eq!(interval(42), "42 s");
        assert_eq!(interval(7_500), "2 h 5 min");
    }

    #[test]
    fn an_unsaved_state_names_the_path_and_errno_and_does_not_fail() {
        let f = state_not_saved(
            "/var/lib/rdmactl/doctor-nhc.json",
            "EACCES (13, Permission denied)",
            true,
        );
        assert_eq!(
            (f.severity, f.code.as_str()),
            (Severity::Warn, "counters-state")
        );
        // The default location on a read-only root: said, not warned about on every run.
        let default = state_not_saved(
            "/var/lib/rdmactl/doctor-nagios.json",
            "EROFS (30, Read-only file system)",
            false,
        );
        assert_eq!(default.severity, Severity::Info);
        assert!(
            f.message
                .contains("/var/lib/rdmactl/doctor-nhc.json: EACCES"),
            "{}",
            f.message
        );
        assert!(f.fix.as_deref().unwrap().contains("--state FILE"));
    }

    /// A failure with a named cause takes the counters' list of places to look away; a
    /// failure that is itself a guess leaves it.
    #[test]
    fn a_named_failure_cause_replaces_the_loss_guesses() {
        let warn = || {
            vec![Diagnostic::finding(
                Severity::Warn,
                codes::COUNTERS_RETRANSMISSION,
                "packets from rxe1 to rxe0 are being lost",
            )
            .fix("find where packets are dropped: (1) a lossy link")]
        };
        let mut f = warn();
        defer_to_failure(&mut f, &codes::FIREWALL);
        assert_eq!(f[0].fix_text(), "the loss is the run's failure (firewall): its explanation says where the packets are dropped");
        let mut f = warn();
        defer_to_failure(&mut f, &codes::RETRY_EXCEEDED);
        assert!(f[0]
            .fix_text()
            .starts_with("find where packets are dropped"));
    }
}
