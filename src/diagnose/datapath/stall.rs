//! A completion that did not come mid-run, judged on what both ends re-read when it did
//! not (`Stall`): this process's own clock, the ports' MTUs against the QP's path MTU,
//! the QPs' GIDs against the tables, the peer's answer to the stall probe and the state
//! of the out-of-band connection. Where nothing decides, the text says what was ruled out
//! and what is unknown; it never guesses the peer's death.

use crate::model::codes;
use crate::model::device::PortState;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::facts::{OobLink, Stall, StallFacts, STOPPED_MS};
use crate::model::failure::{Cause, Failure};

use super::Builder;
use crate::diagnose::midrun::{self, counter_lines, who};

fn secs(ms: u64) -> String {
    format!("{:.1}", ms as f64 / 1000.0)
}

/// Both ends' facts, each with the source its seen lines name.
fn ends(stall: &Stall) -> impl Iterator<Item = (&StallFacts, Source)> {
    std::iter::once((&stall.local, Source::Local))
        .chain(stall.peer.iter().map(|p| (p, Source::Peer)))
}

/// This process did not run for seconds while it waited: whatever the peer then did or
/// said follows from that, so it is named before anything else (and the peer's notice,
/// which calls this end hung, is not relayed as if it were about the peer).
pub(super) fn stopped_here(failure: &Failure, stall: &Stall) -> Option<Diagnostic> {
    let ms = stall.local.stopped_ms;
    if ms < STOPPED_MS {
        return None;
    }
    let mut x = Diagnostic::explanation(
        codes::PROCESS_STOPPED,
        format!(
            "this process was stopped for {} s (SIGSTOP or Ctrl-Z, a debugger, or a paused VM) during the run; the peer gave up waiting for it meanwhile: no fault of the peer or the path",
            secs(ms)
        ),
        "do not stop a process mid-run, or give both ends a longer --timeout; rerun both ends",
    );
    x.evidence.push(Seen::new(
        Source::Local,
        format!(
            "a thread of this process that wakes every 0.25 s overslept by {} s",
            secs(ms)
        ),
    ));
    if let Cause::PeerReported { notice } = &failure.cause {
        x.evidence.push(Seen::new(
            Source::PeerNotice,
            format!(
                "the {} gave up meanwhile ({}): {}",
                notice.role, notice.code, notice.message
            ),
        ));
    }
    Some(x)
}

/// Nothing completed before the deadline. A run that looked at the stall (pingpong's TCP
/// exchange) is judged on what it re-read; otherwise nothing tells why, and the text says
/// so instead of guessing the peer's death.
pub(super) fn poll_timeout(b: Builder, seconds: f64) -> Diagnostic {
    if let Some(x) = super::completion::firewall_drop(&b) {
        return x;
    }
    if let Some(stall) = b.ctx.stall.as_ref() {
        return stalled(b, stall, seconds);
    }
    let qp = b.ctx.qp.clone().unwrap_or_default();
    let mut ev = vec![Seen::new(
        Source::Failure,
        format!("no completion within {seconds} s"),
    )];
    if let Some(r) = qp.retry_cnt {
        ev.push(Seen::new(Source::Qp, format!("retry_cnt {r}")));
    }
    if qp.soft_roce && qp.retry_cnt == Some(7) {
        return b.done(
            codes::RXE_INFINITE_RETRY,
            "Soft-RoCE with retry_cnt 7 retries forever, so an unreachable or dead peer never produces an error completion".into(),
            ev,
            "use retry_cnt 6 or less; the peer is probably dead or unreachable".into(),
            true,
        );
    }
    b.done(
        codes::NO_COMPLETION,
        format!("no completion within {seconds} s, and nothing was re-read to tell why: the peer stopped sending, its QP went to the error state, or the path drops packets"),
        ev,
        "check the peer process and the path (rdmactl check --peer IP on both ends)".into(),
        true,
    )
}

/// What a stall's facts show, in the order that decides: a port whose MTU or GID changed
/// under its QP, a peer that is hung, a stock peer that stopped at its own -n, and
/// otherwise what was ruled out.
pub(super) fn stalled(b: Builder, stall: &Stall, seconds: f64) -> Diagnostic {
    if let Some(c) = midrun::port_changed(&ends(stall).collect::<Vec<_>>(), true) {
        return b.done(c.code, c.summary, c.seen, c.fix, c.here);
    }
    let local = &stall.local;
    let acked_line = |e: &StallFacts| {
        match e.own_requests_acked {
        Some(true) => Some(format!(
            "every request {} posted completed ({} completions, {} messages received); the last completion {} s ago",
            who(e),
            e.completed,
            e.received,
            secs(e.since_last_completion_ms)
        )),
        Some(false) => Some(format!(
            "{}: a request is still outstanding ({} completions, {} messages received); the last completion {} s ago",
            who(e),
            e.completed,
            e.received,
            secs(e.since_last_completion_ms)
        )),
        None => None,
    }
    };
    let mut seen = vec![Seen::new(Source::Local, midrun::port_line(local))];
    seen.extend(acked_line(local).map(|l| Seen::new(Source::Local, l)));
    seen.extend(counter_lines(local, Source::Local));
    let waited = stall.probe_waited_ms.map(secs).unwrap_or_default();
    if stall.peer.is_none() && stall.probe_acked_by_kernel() {
        let hca = if local.own_requests_acked == Some(true) {
            " and its HCA acknowledged every request of this end"
        } else {
            ""
        };
        seen.insert(
            0,
            Seen::new(
                Source::Failure,
                format!(
                    "a stall probe went over the open out-of-band connection: no answer within {waited} s, yet the peer's kernel acknowledged it (TCP_INFO: nothing unacknowledged)"
                ),
            ),
        );
        return b.done(
            codes::PEER_HUNG,
            format!(
                "the peer's process is hung: it did not answer the stall probe within {waited} s, yet it is alive (its connection is open, its kernel acknowledged the probe{hca}) and this end's port is up; it neither polls its completions nor reads its connection"
            ),
            seen,
            "look at the peer's process on its host: ps -o pid,stat,wchan -p PID (T: stopped, kill -CONT PID resumes it; D: blocked in the kernel; a debugger holds it too)".into(),
            false,
        );
    }
    if stall.link == OobLink::None
        && !local.peer_knows_iterations
        && local.own_requests_acked == Some(true)
        && local.received > 0
        && local.iterations.is_some_and(|n| local.received < n)
    {
        let n = local.iterations.unwrap_or_default();
        seen.insert(
            0,
            Seen::new(
                Source::Failure,
                format!(
                    "{} of {n} messages came, then none for {} s; every SEND of this end was acknowledged",
                    local.received,
                    secs(local.since_last_completion_ms)
                ),
            ),
        );
        return b.done(
            codes::PEER_FINISHED_EARLY,
            format!(
                "the peer probably ran a smaller -n and stopped after {}: every SEND of this end was acknowledged and {} of {n} messages came, then silence; a stock ibv_rc_pingpong's exchange does not carry -n, and it closed its connection after the exchange",
                local.received, local.received
            ),
            seen,
            format!("use the same -n on both ends (this end ran -n {n})"),
            false,
        );
    }
    not_decided(b, stall, seconds, seen)
}

/// No fact decides: say what the facts rule out and what stays unknown.
fn not_decided(b: Builder, stall: &Stall, seconds: f64, mut seen: Vec<Seen>) -> Diagnostic {
    let local = &stall.local;
    let mut ruled_out = Vec::new();
    let mut unknown = Vec::new();
    let mut lead = None;
    for (e, _) in ends(stall) {
        match &e.now.port_state {
            Some(PortState::Active) => ruled_out.push(format!(
                "{} is ACTIVE with its MTU and GID unchanged",
                who(e)
            )),
            Some(s) => {
                lead = Some(format!(
                    "{}'s port is not ACTIVE (state {s}): its link went down",
                    who(e)
                ))
            }
            None => {}
        }
    }
    if let Some(peer) = &stall.peer {
        seen.push(Seen::new(
            Source::Peer,
            format!("the peer answered the stall probe: {}", who(peer)),
        ));
        seen.extend(counter_lines(peer, Source::Peer));
        ruled_out.push("a dead or hung peer (it answered the stall probe and waits too)".into());
        unknown.push("where the packets between the two ports are lost (compare rdmactl counters on both hosts)".to_string());
    }
    match stall.link {
        OobLink::Closed => {
            lead = lead.or(Some(
                "the peer's process is gone: it closed the out-of-band connection while this end waited (killed, or crashed)".into(),
            ))
        }
        OobLink::Open {
            unacked,
            last_ack_ms,
        } if stall.peer.is_none() && !stall.probe_acked_by_kernel() => {
            let tcp = match (unacked, last_ack_ms) {
                (Some(n), Some(ms)) => {
                    format!(" (TCP_INFO: {n} segments unacknowledged, the last ACK {ms} ms ago)")
                }
                _ => String::new(),
            };
            unknown.push(format!(
                "why the peer's host did not acknowledge the stall probe within {} s{tcp}: the host, or the network between the two hosts' addresses, is down or overloaded",
                stall.probe_waited_ms.map(secs).unwrap_or_default()
            ))
        }
        OobLink::Open { .. } => {}
        OobLink::None => unknown.push(
            "whether the peer still runs (a stock ibv_rc_pingpong closes its connection after the exchange, so it cannot be asked)".into(),
        ),
    }
    if let Some(needs) = local.message_needs_ms.filter(|n| *n > local.timeout_ms) {
        lead = Some(format!(
            "one {}-byte message needs about {} s here, more than --timeout {}",
            local.message_bytes,
            secs(needs),
            secs(local.timeout_ms)
        ));
    }
    if unknown.is_empty() {
        unknown.push("whether packets between the two ports are dropped".into());
    }
    let mut summary = format!("no completion within {seconds} s");
    if let Some(lead) = lead {
        summary = format!("{summary}: {lead}");
    }
    if !ruled_out.is_empty() {
        summary = format!("{summary}; ruled out: {}", ruled_out.join("; "));
    }
    summary = format!("{summary}; unknown: {}", unknown.join("; "));
    seen.insert(
        0,
        Seen::new(Source::Failure, format!("no completion within {seconds} s")),
    );
    b.done(
        codes::NO_COMPLETION,
        summary,
        seen,
        "run rdmactl check --peer IP on both ends, and compare rdmactl counters on both hosts before and after a run".into(),
        true,
    )
}

/// A message larger than the port's max_msg_sz: hardware refuses it (rxe reports 8 MiB
/// and does not enforce it). A warning line, before the run.
pub fn message_over_max(device: &str, port: u32, size: u32, max: u32) -> Option<String> {
    (max > 0 && size > max).then(|| {
        format!(
            "warning: -s {size} is larger than {device}/{port}'s max_msg_sz {max} ({max:#x}): hardware refuses such a message (Soft-RoCE does not enforce its limit); use -s {max} or less\n"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::datapath::tests::{gathered, rxe_ctx};
    use crate::model::facts::{GidNow, PortNow};
    use crate::model::failure::{FailureContext, PeerNotice, Step};
    use crate::model::gid::Gid;

    fn facts(role: &str, device: &str) -> StallFacts {
        StallFacts {
            role: role.into(),
            device: device.into(),
            port: 1,
            netdev: Some(if device == "rxe0" { "veth0" } else { "veth1" }.into()),
            now: PortNow {
                port_state: Some(PortState::Active),
                active_mtu: Some(1024),
                gid_now: GidNow::Same,
            },
            path_mtu: Some(1024),
            gid_index: Some(1),
            gid: Some(
                if device == "rxe0" {
                    "::ffff:192.168.77.1"
                } else {
                    "::ffff:192.168.77.2"
                }
                .into(),
            ),
            own_requests_acked: Some(true),
            completed: 25_000,
            received: 25_000,
            iterations: Some(100_000_000),
            peer_knows_iterations: true,
            since_last_completion_ms: 5_000,
            message_bytes: 4096,
            timeout_ms: 5_000,
            ..StallFacts::default()
        }
    }

    fn timeout() -> Failure {
        Failure::new(
            Step::Poll,
            Cause::Timeout {
                waited_ms: 5000,
                waiting_for: None,
            },
            FailureContext::default(),
        )
    }

    /// The explanation's text, checked for the true words and against the false ones.
    fn explained(stall: Stall, failure: &Failure) -> (Diagnostic, String) {
        let mut ctx = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        ctx.stall = Some(stall);
        let x = super::super::explain(failure, &ctx);
        for seen in &x.evidence {
            assert!(gathered(&ctx, failure, seen), "{seen:?} not gathered");
        }
        let text = format!(
            "{}\n{}\n{}",
            x.message,
            x.evidence
                .iter()
                .map(|e| e.text.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            x.fix_text()
        );
        for false_word in ["killed", "link went down", "namespace", "died"] {
            assert!(!text.contains(false_word), "{false_word:?} in\n{text}");
        }
        (x, text)
    }

    /// Case 1, the far end: its own port is fine; the server's probe says rxe1's MTU was
    /// cut, and both ends say so.
    #[test]
    fn an_mtu_cut_on_the_peer_is_named_from_its_probe() {
        let mut server = facts("server", "rxe1");
        server.now.active_mtu = Some(512);
        server.counters = vec![("send_err".into(), 165_931)];
        let stall = Stall {
            local: facts("client", "rxe0"),
            peer: Some(server.clone()),
            probe_waited_ms: Some(30),
            link: OobLink::Open {
                unacked: Some(0),
                last_ack_ms: Some(10),
            },
        };
        let (x, text) = explained(stall, &timeout());
        assert_eq!(x.code, codes::MTU_CUT_MIDRUN, "{text}");
        assert!(
            text.contains(
                "rxe1/1 (the server): its active MTU 512 is below the QP's path MTU 1024"
            ),
            "{text}"
        );
        assert!(text.contains("send_err +165931"), "{text}");
        assert!(text.contains("ip link set veth1 mtu 1500"), "{text}");
        // The server itself, from its own facts, says the same.
        let stall = Stall {
            local: server,
            peer: Some(facts("client", "rxe0")),
            probe_waited_ms: Some(30),
            link: OobLink::Open {
                unacked: Some(0),
                last_ack_ms: Some(10),
            },
        };
        let (x, text) = explained(stall, &timeout());
        assert_eq!(x.code, codes::MTU_CUT_MIDRUN);
        assert!(text.contains("below the QP's path MTU 1024"), "{text}");
    }

    /// Case 2: the QP's GID index now holds another address.
    #[test]
    fn a_gid_that_left_the_table_is_named() {
        let mut server = facts("server", "rxe1");
        server.now.gid_now = GidNow::Changed("::ffff:192.168.77.3".into());
        let stall = Stall {
            local: facts("client", "rxe0"),
            peer: Some(server),
            probe_waited_ms: Some(30),
            link: OobLink::Open {
                unacked: Some(0),
                last_ack_ms: Some(10),
            },
        };
        let (x, text) = explained(stall, &timeout());
        assert_eq!(x.code, codes::GID_REMOVED_MIDRUN, "{text}");
        assert!(
            text.contains(
                "GID index 1 (::ffff:192.168.77.2) of rxe1/1 (the server) left the GID table"
            ),
            "{text}"
        );
        assert!(text.contains("it now holds ::ffff:192.168.77.3"), "{text}");
        assert!(text.contains("put 192.168.77.2 back on veth1"), "{text}");
    }

    /// Case 2 as an error completion: the GID at the QP's index is not the one it was
    /// connected with, whatever the status says.
    #[test]
    fn a_failed_completion_after_the_gid_left_says_so() {
        let mut ctx = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        ctx.local.gid = Some(Gid::parse("::ffff:192.168.77.9").unwrap());
        let failure = Failure::new(
            Step::Completion,
            Cause::WcStatus {
                status: crate::model::errno::WC_LOC_QP_OP_ERR,
                vendor_err: 0,
                opcode: 0,
                op: None,
            },
            FailureContext::default(),
        );
        let x = super::super::explain(&failure, &ctx);
        let text = format!("{} {}", x.message, x.fix_text());
        assert_eq!(x.code, codes::GID_REMOVED_MIDRUN, "{text}");
        assert!(text.contains("left the GID table"), "{text}");
        assert!(!text.contains("namespace"), "{text}");
    }

    /// Case 2 when the peer failed first: its retries ran out (a consequence) and its
    /// notice arrived before this end's own completion failed. The GID that left this end's
    /// table is named, with the peer's words as evidence, not relayed as "it died"; and a
    /// peer's notice that names a cause of its own replaces this end's bare guess.
    #[test]
    fn a_peer_notice_does_not_hide_this_ends_gid_that_left_the_table() {
        let mut ctx = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        ctx.local.gid = Some(Gid::parse("::ffff:192.168.77.9").unwrap());
        let notice = PeerNotice {
            role: "client".into(),
            message: "work completion failed: SEND: IBV_WC_RETRY_EXC_ERR".into(),
            code: codes::RETRY_EXCEEDED,
            summary: "the peer never acknowledged: it died, ...".into(),
            evidence: Vec::new(),
            fix: String::new(),
            counters: None,
        };
        let failure = Failure::new(
            Step::Poll,
            Cause::PeerReported {
                notice: Box::new(notice),
            },
            FailureContext::default(),
        );
        let x = super::super::explain(&failure, &ctx);
        let text = format!("{} {}", x.message, x.fix_text());
        assert_eq!(x.code, codes::GID_REMOVED_MIDRUN, "{text}");
        assert!(text.contains("left the GID table"), "{text}");
        assert!(
            !text.contains("died") && !text.contains("namespace"),
            "{text}"
        );
        assert!(x
            .evidence
            .iter()
            .any(|e| e.text.contains("the client said: work completion failed")));
        use super::super::peer_says_more;
        assert!(peer_says_more(
            &codes::RETRY_EXCEEDED,
            &codes::GID_REMOVED_MIDRUN
        ));
        assert!(peer_says_more(&codes::NO_COMPLETION, &codes::PEER_HUNG));
        assert!(!peer_says_more(
            &codes::GID_REMOVED_MIDRUN,
            &codes::RETRY_EXCEEDED
        ));
        assert!(!peer_says_more(
            &codes::RETRY_EXCEEDED,
            &codes::NO_COMPLETION
        ));
    }

    /// Case 6: no answer, the connection open, the peer's kernel acknowledged the probe.
    #[test]
    fn a_silent_peer_whose_kernel_answers_is_hung() {
        let stall = Stall {
            local: facts("client", "rxe0"),
            peer: None,
            probe_waited_ms: Some(2000),
            link: OobLink::Open {
                unacked: Some(0),
                last_ack_ms: Some(10),
            },
        };
        let (x, text) = explained(stall, &timeout());
        assert_eq!(x.code, codes::PEER_HUNG, "{text}");
        assert!(text.contains("the peer's process is hung"), "{text}");
        assert!(
            text.contains("its HCA acknowledged every request"),
            "{text}"
        );
        assert!(text.contains("kill -CONT"), "{text}");
    }

    /// A silent peer whose kernel does not acknowledge either is not called hung.
    #[test]
    fn a_silent_peer_host_is_not_called_hung() {
        // A segment unacknowledged; or none, but no ACK since long before the probe (a
        // probe that never left: its source address is gone).
        for (unacked, last_ack_ms) in [(1, 10), (0, 9_000)] {
            let stall = Stall {
                local: facts("client", "rxe0"),
                peer: None,
                probe_waited_ms: Some(2000),
                link: OobLink::Open {
                    unacked: Some(unacked),
                    last_ack_ms: Some(last_ack_ms),
                },
            };
            let (x, text) = explained(stall, &timeout());
            assert_eq!(x.code, codes::NO_COMPLETION, "{text}");
            assert!(!text.contains("hung"), "{text}");
            assert!(
                text.contains("did not acknowledge the stall probe"),
                "{text}"
            );
        }
    }

    /// Case 6, the resumed end: its own clock jumped; the peer's notice calling it hung
    /// is not relayed as the peer's fault.
    #[test]
    fn a_process_that_was_stopped_says_so() {
        let mut local = facts("client", "rxe0");
        local.stopped_ms = 21_300;
        let stall = Stall {
            local,
            link: OobLink::Closed,
            ..Stall::default()
        };
        let notice = PeerNotice {
            role: "server".into(),
            message: "poll CQ failed".into(),
            code: codes::PEER_HUNG,
            summary: "the peer's process is hung".into(),
            evidence: Vec::new(),
            fix: String::new(),
            counters: None,
        };
        let relayed = Failure::new(
            Step::Poll,
            Cause::PeerReported {
                notice: Box::new(notice),
            },
            FailureContext::default(),
        );
        for failure in [relayed, timeout()] {
            let (x, text) = explained(stall.clone(), &failure);
            assert_eq!(x.code, codes::PROCESS_STOPPED, "{text}");
            assert!(
                text.contains("this process was stopped for 21.3 s"),
                "{text}"
            );
            assert!(!text.contains("found the cause"), "{text}");
        }
    }

    /// Case 4: a stock client with a smaller -n.
    #[test]
    fn a_stock_peer_that_stopped_at_its_own_n_is_named() {
        let mut local = facts("server", "rxe1");
        local.received = 100;
        local.completed = 100;
        local.iterations = Some(1000);
        local.peer_knows_iterations = false;
        let stall = Stall {
            local,
            ..Stall::default()
        };
        let (x, text) = explained(stall, &timeout());
        assert_eq!(x.code, codes::PEER_FINISHED_EARLY, "{text}");
        assert!(
            text.contains("probably ran a smaller -n and stopped after 100"),
            "{text}"
        );
        assert!(text.contains("use the same -n on both ends"), "{text}");
    }

    /// Case 5: a message slower than --timeout, and a stall nothing decides.
    #[test]
    fn a_slow_message_and_an_undecided_stall_say_what_they_know() {
        let mut local = facts("client", "rxe0");
        local.message_bytes = 200_000_000;
        local.message_needs_ms = Some(11_000);
        let stall = Stall {
            local,
            peer: Some(facts("server", "rxe1")),
            probe_waited_ms: Some(20),
            link: OobLink::Open {
                unacked: Some(0),
                last_ack_ms: Some(10),
            },
        };
        let (x, text) = explained(stall, &timeout());
        assert_eq!(x.code, codes::NO_COMPLETION, "{text}");
        assert!(
            text.contains(
                "one 200000000-byte message needs about 11.0 s here, more than --timeout 5.0"
            ),
            "{text}"
        );
        assert!(text.contains("ruled out:"), "{text}");
        assert!(text.contains("a dead or hung peer"), "{text}");
    }

    #[test]
    fn a_message_over_max_msg_sz_is_warned() {
        let w = message_over_max("rxe0", 1, 200_000_000, 0x80_0000).unwrap();
        assert!(w.contains("max_msg_sz 8388608 (0x800000)"), "{w}");
        assert!(message_over_max("rxe0", 1, 4096, 0x80_0000).is_none());
        assert!(message_over_max("rxe0", 1, 4096, 0).is_none());
    }
}
