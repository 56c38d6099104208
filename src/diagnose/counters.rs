//! Counters judged: a run that worked but was not clean (`judge`, on the deltas of a run at
//! one or both ends), and the counters since the last reset (`doctor_finding`). Pure: the
//! deltas and snapshots come from `sysfs::SysfsRoot::port_counters` and
//! `counter::port_delta`.

use crate::model::codes;
use crate::model::counter::{Change, Counter, Group, PortCounters, PortDelta};
use crate::model::diagnostic::{Diagnostic, Severity, Subject};
use crate::model::failure::QP_PARAMS;

/// Responder-side counters that say a request came again or out of order.
const RESPONDER_LOSS: &[&str] = &["duplicate_request", "out_of_seq_request", "out_of_sequence"];
/// Requester-side counters of a retransmission it made (a NAK, an implied NAK, a timeout).
const REQUESTER_RETRANSMIT: &[&str] = &[
    "rcvd_seq_err",
    "completer_retry_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
];
/// Requester counters of a QP that ran out of retries.
const GAVE_UP: &[&str] = &["retry_exceeded_err", "req_transport_retries_exceeded"];
const ACK_TIMEOUTS: &[&str] = &["local_ack_timeout_err", "completer_retry_err"];
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

/// One end of a run: its deltas and how the lines name it.
struct RunEnd<'a> {
    delta: &'a PortDelta,
    who: String,
}

impl RunEnd<'_> {
    fn sum(&self, names: &[&str]) -> u64 {
        names
            .iter()
            .map(|n| self.delta.at_least(n))
            .fold(0, u64::saturating_add)
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

/// Why a run that completed was not clean, from the counter deltas over the run at this
/// end and, when it sent them, the peer's. `messages`: how many messages the run
/// exchanged (0 when unknown: no per-thousand figure). One finding per kind of trouble,
/// naming the end that saw each counter; nothing when the counters are clean.
///
/// Codes: `counters-retransmission`, `counters-rnr`, `counters-congestion`,
/// `counters-link-errors`, `counters-saturated`.
/// Retransmissions over a run, counted once from both ends' changes as `judge` counts
/// them: the requesters' own counts, or the duplicates the responders saw if more.
pub fn resends(ends: &[&crate::model::counter::WireDelta]) -> u64 {
    let sum = |names: &[&str]| -> u64 {
        ends.iter()
            .flat_map(|e| &e.counters)
            .filter(|c| names.contains(&c.name.as_str()))
            .map(|c| c.at_least)
            .sum()
    };
    sum(REQUESTER_RETRANSMIT).max(sum(RESPONDER_LOSS))
}

pub fn judge(local: &PortDelta, peer: Option<&PortDelta>, messages: u64) -> Vec<Diagnostic> {
    let mut ends = vec![RunEnd {
        delta: local,
        who: format!("this end {}", local.label()),
    }];
    if let Some(p) = peer {
        ends.push(RunEnd {
            delta: p,
            who: format!("the peer {}", p.label()),
        });
    }
    let subject = Subject::Port(local.device.clone(), local.port);
    let mut out = Vec::new();
    out.extend(retransmission(&ends, messages, &subject));
    out.extend(rnr(&ends, messages, &subject));
    out.extend(congestion(&ends, &subject));
    out.extend(link_errors(&ends, &subject));
    out.extend(saturated(&ends, &subject));
    out
}

fn retransmission(ends: &[RunEnd], messages: u64, subject: &Subject) -> Option<Diagnostic> {
    let all: Vec<&str> = RESPONDER_LOSS
        .iter()
        .chain(REQUESTER_RETRANSMIT)
        .chain(GAVE_UP)
        .copied()
        .collect();
    let evidence: Vec<String> = ends.iter().flat_map(|e| e.lines(&all)).collect();
    if evidence.is_empty() {
        return None;
    }
    // Retransmissions counted once: the requester's own count where it has one, else the
    // duplicates the responder saw (the same resends, seen from the other side).
    let resends = ends
        .iter()
        .map(|e| e.sum(REQUESTER_RETRANSMIT))
        .sum::<u64>()
        .max(ends.iter().map(|e| e.sum(RESPONDER_LOSS)).sum::<u64>());
    let gave_up: u64 = ends.iter().map(|e| e.sum(GAVE_UP)).sum();
    let timeouts: u64 = ends.iter().map(|e| e.sum(ACK_TIMEOUTS)).sum();
    let rate = match per_thousand(resends, messages) {
        Some(r) => format!("{resends} retransmissions in {messages} messages ({r} per thousand)"),
        None => format!("{resends} retransmissions"),
    };
    let timeout_us = 4.096 * f64::from(1u32 << QP_PARAMS.timeout);
    let mut message = format!("packets were lost and resent: {rate}");
    if gave_up > 0 {
        message.push_str(&format!("; {gave_up} time(s) a QP ran out of retries"));
    }
    let latency = if timeouts > 0 {
        format!(
            "each ACK timeout stalls the QP for its local ACK timeout ({:.1} ms at timeout {}) before the resend; each sequence NAK costs about a round trip and a go-back-N resend of everything sent after the lost packet",
            timeout_us / 1000.0,
            QP_PARAMS.timeout
        )
    } else {
        "each sequence NAK costs about a round trip and a go-back-N resend of everything sent after the lost packet: latency tails grow by round trips".to_string()
    };
    let mut f = Diagnostic::finding(Severity::Warn, codes::COUNTERS_RETRANSMISSION, message)
        .about(subject.clone());
    for line in evidence {
        f = f.evidence(line);
    }
    Some(f.evidence(format!("latency: {latency}")).fix(
        "find where packets are dropped: (1) a lossy link: `rdmactl counters` on both ports and the switch ports for symbol errors and receive errors, `ip -s link` on the netdevs; \
         (2) lossless RoCE misconfigured: PFC must be enabled on the RoCE priority on both NICs and every switch port (and the traffic class/DSCP trust must map to it), ECN configured for DCQCN; \
         (3) an MTU that forces fragmentation upstream: RoCE packets cannot be fragmented, so a hop whose MTU is below the RDMA MTU plus headers drops them: compare `rdmactl ports` active MTU with every netdev and switch MTU on the path",
    ))
}

fn rnr(ends: &[RunEnd], messages: u64, subject: &Subject) -> Option<Diagnostic> {
    let evidence: Vec<String> = ends.iter().flat_map(|e| e.lines(RNR)).collect();
    if evidence.is_empty() {
        return None;
    }
    let naks: u64 = ends.iter().map(|e| e.sum(RNR)).sum();
    let rate = per_thousand(naks, messages)
        .map(|r| format!(" ({r} per thousand messages)"))
        .unwrap_or_default();
    let mut f = Diagnostic::finding(
        Severity::Warn,
        codes::COUNTERS_RNR,
        format!("receiver not ready: a send arrived before the receiver had a receive posted{rate}; the sender waited its RNR timer each time"),
    )
    .about(subject.clone());
    for line in evidence {
        f = f.evidence(line);
    }
    Some(f.fix(
        "post receives before the peer sends and keep the receive queue deeper than the sends in flight (re-post as each receive completes); \
         a larger min_rnr_timer or rnr_retry 7 (retry forever) hides the stall but does not remove it",
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
        "not covered: PFC pause frames (the netdev's ethtool statistics are not read); check `ethtool -S NETDEV | grep -i pause` on both ends",
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

/// doctor's counters check of one port, from its counters since the last reset: non-zero
/// error, loss and RNR counters (and saturated ones) are a warning with their meaning;
/// Soft-RoCE's missing `counters/` is said, not failed. None when the port has neither
/// directory (nothing to judge).
pub fn doctor_finding(pc: &PortCounters) -> Option<Diagnostic> {
    if !pc.has_counters_dir && !pc.has_hw_counters_dir {
        return None;
    }
    let subject = Subject::Port(pc.device.clone(), pc.port);
    let problems: Vec<&Counter> = pc
        .counters
        .iter()
        .filter(|c| (c.group.is_problem() && c.value > 0) || c.is_saturated())
        .collect();
    let no_pma = (!pc.has_counters_dir).then(|| {
        "no counters/ directory (Soft-RoCE and other software devices have no IB performance-management agent): only hw_counters/ is read".to_string()
    });
    if problems.is_empty() {
        let mut f = Diagnostic::finding(
            Severity::Ok,
            codes::COUNTERS,
            format!(
                "no error counters are non-zero ({} counters read)",
                pc.counters.len()
            ),
        )
        .about(subject);
        if let Some(n) = no_pma {
            f = f.evidence(n);
        }
        return Some(f);
    }
    let saturated = problems.iter().any(|c| c.is_saturated());
    let names: Vec<&str> = problems.iter().map(|c| c.name.as_str()).collect();
    let mut f = Diagnostic::finding(
        Severity::Warn,
        codes::COUNTERS,
        format!(
            "{} error counter{} non-zero since the last reset: {}",
            problems.len(),
            if problems.len() == 1 { " is" } else { "s are" },
            names.join(", ")
        ),
    )
    .about(subject);
    for c in &problems {
        let value = if c.is_saturated() {
            format!(
                "{} (saturated at all ones, reset with perfquery -R)",
                c.value
            )
        } else {
            c.value.to_string()
        };
        f = f.evidence(format!(
            "{}/{} {value}: {}",
            c.source.dir(),
            c.name,
            c.meaning.unwrap_or("no description")
        ));
    }
    if let Some(n) = no_pma {
        f = f.evidence(n);
    }
    let groups: Vec<Group> = Group::ALL
        .into_iter()
        .filter(|g| problems.iter().any(|c| c.group == *g))
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
    if groups.contains(&Group::Errors) {
        fixes.push("errors: see each counter's meaning");
    }
    let reset = if saturated {
        "; saturated counters count nothing more until reset with `perfquery -R`"
    } else {
        ""
    };
    Some(f.fix(format!(
        "{}; these count since the driver loaded or the last reset, so watch whether they still grow: `rdmactl counters {}/{} --interval 1`{reset}",
        fixes.join("; "),
        pc.device,
        pc.port
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::counter::{port_delta, CounterSource as Source, Flavor};

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

    #[test]
    fn a_clean_run_has_no_findings() {
        let d = run(
            "rxe0",
            Flavor::Rxe,
            &[("sent_pkts", HW, 4000), ("rcvd_pkts", HW, 4000)],
        );
        assert!(judge(&d, Some(&d), 2000).is_empty());
    }

    #[test]
    fn retransmission_names_each_end_and_the_rate() {
        let local = run(
            "rxe0",
            Flavor::Rxe,
            &[("rcvd_seq_err", HW, 3), ("sent_pkts", HW, 2000)],
        );
        let peer = run(
            "rxe1",
            Flavor::Rxe,
            &[("duplicate_request", HW, 2), ("out_of_seq_request", HW, 3)],
        );
        let f = judge(&local, Some(&peer), 1000);
        assert_eq!(codes(&f), ["counters-retransmission"]);
        let f = &f[0];
        assert_eq!(f.severity, Severity::Warn);
        assert!(
            f.message
                .contains("5 retransmissions in 1000 messages (5.00 per thousand)"),
            "{}",
            f.message
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e.starts_with("this end rxe0/1: rcvd_seq_err +3")),
            "{:?}",
            f.evidence
        );
        assert!(f
            .evidence
            .iter()
            .any(|e| e.starts_with("the peer rxe1/1: out_of_seq_request +3")));
        assert!(f.evidence.iter().any(|e| e.starts_with("latency:")));
        let fix = f.fix.as_deref().unwrap();
        assert!(fix.contains("PFC") && fix.contains("MTU") && fix.contains("lossy link"));
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
        let f = judge(&d, None, 0);
        assert_eq!(codes(&f), ["counters-retransmission"]);
        assert!(f[0].message.contains("ran out of retries"));
        assert!(!f[0].message.contains("per thousand"));
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.contains("67.1 ms at timeout 14")),
            "{:?}",
            f[0].evidence
        );
    }

    #[test]
    fn rnr_says_the_receiver_was_late() {
        let d = run("rxe0", Flavor::Rxe, &[("rcvd_rnr_err", HW, 4)]);
        let f = judge(&d, None, 2000);
        assert_eq!(codes(&f), ["counters-rnr"]);
        assert!(f[0].message.contains("2.00 per thousand"));
        assert!(f[0].fix.as_deref().unwrap().contains("post receives"));
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
        let f = judge(&d, None, 100);
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
        let f = judge(&d, None, 100);
        assert_eq!(codes(&f), ["counters-link-errors"]);
        assert!(f[0].fix.as_deref().unwrap().contains("cable"));
    }

    #[test]
    fn saturated_counters_are_said_never_negative() {
        let before = snap("mlx4_0", Flavor::Other, &[("port_rcv_errors", PMA, 65_000)]);
        let after = snap("mlx4_0", Flavor::Other, &[("port_rcv_errors", PMA, 65_535)]);
        let f = judge(&port_delta(&before, &after, 1.0), None, 10);
        assert_eq!(codes(&f), ["counters-link-errors", "counters-saturated"]);
        assert!(
            f[0].evidence[0].contains("+535 or more (saturated, reset with perfquery -R)"),
            "{:?}",
            f[0].evidence
        );
        assert!(f[1].fix.as_deref().unwrap().contains("perfquery -R"));
    }

    #[test]
    fn doctor_warns_on_error_counters_with_their_meaning() {
        let pc = snap(
            "rxe0",
            Flavor::Rxe,
            &[("retry_exceeded_err", HW, 2), ("sent_pkts", HW, 100)],
        );
        let f = doctor_finding(&pc).unwrap();
        assert_eq!((f.severity, f.code.as_str()), (Severity::Warn, "counters"));
        assert!(f.message.contains("retry_exceeded_err"));
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
        assert!(f
            .fix
            .as_deref()
            .unwrap()
            .contains("rdmactl counters rxe0/1 --interval 1"));
    }

    #[test]
    fn doctor_warns_on_saturated_counters() {
        let pc = snap(
            "mlx4_0",
            Flavor::Other,
            &[("port_xmit_wait", PMA, u64::from(u32::MAX))],
        );
        let f = doctor_finding(&pc).unwrap();
        assert_eq!(f.severity, Severity::Warn);
        assert!(f.evidence[0].contains("saturated at all ones, reset with perfquery -R"));
    }

    #[test]
    fn doctor_is_ok_on_clean_counters_and_silent_without_any() {
        let pc = snap(
            "mlx5_0",
            Flavor::Mlx5,
            &[("symbol_error", PMA, 0), ("port_xmit_wait", PMA, 9)],
        );
        assert_eq!(doctor_finding(&pc).unwrap().severity, Severity::Ok);
        assert!(doctor_finding(&snap("x", Flavor::Other, &[])).is_none());
    }
}
