//! Work completions that failed and polls that waited in vain: what each IBV_WC status means
//! on this path (the connection manager's completions come here too).

use crate::model::codes;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::errno::{
    WC_LOC_LEN_ERR, WC_LOC_PROT_ERR, WC_LOC_QP_OP_ERR, WC_REM_ACCESS_ERR, WC_REM_INV_REQ_ERR,
    WC_REM_OP_ERR, WC_RETRY_EXC_ERR, WC_RNR_RETRY_EXC_ERR, WC_WR_FLUSH_ERR,
};
use crate::model::facts::Facts;
use crate::model::failure::Cause;

use super::gid::{gid_mismatch, vlan_mismatch};
use super::mtu::mtu_mismatch;
use super::route::{same_host_drop, same_host_ipv6};
use super::{generic, peer_ip, Builder, Rule};

pub(super) fn completion(b: Builder, status: u32) -> Diagnostic {
    let ctx = b.ctx;
    // A QP whose source GID left the table mid-run fails whatever the status (rxe says
    // IBV_WC_LOC_QP_OP_ERR): the table read now against the GID it was connected with.
    if let Some(c) = crate::diagnose::midrun::gid_left(ctx) {
        return b.done(c.code, c.summary, c.seen, c.fix, true);
    }
    // The status's own code (the one table, `status_code`); the rules below add its words.
    let code = super::status_code(status);
    let qp = ctx.qp.clone().unwrap_or_default();
    let request = Request::of(&b.failure.cause);
    match status {
        WC_RETRY_EXC_ERR => {
            // packets never reach the peer.
            let mut ev = Vec::new();
            if let Some(peer) = &ctx.peer {
                if let Some((summary, mev)) = gid_mismatch(&ctx.local, peer) {
                    return b.done(
                        codes::RETRY_EXCEEDED_GID_MISMATCH,
                        format!("the peer never acknowledged: {summary}"),
                        mev,
                        "use the same RoCE version (v2 across subnets) and family on both ends; rdmactl's native exchange compares GID types before the QP, ibv_rc_pingpong's does not".into(),
                        true,
                    );
                }
            }
            if let Some((code, summary, vev, fix)) =
                vlan_mismatch(ctx, "the peer never acknowledged")
            {
                return b.done(code, summary, vev, fix, true);
            }
            if let Some((path, min)) = mtu_mismatch(ctx) {
                ev.push(Seen::new(Source::Qp, format!("path MTU {path}, smaller active MTU of the two ports {min}")));
                return b.done(
                    codes::RETRY_EXCEEDED_MTU,
                    format!("packets of {path} bytes exceed what the path carries ({min}), so they are dropped"),
                    ev,
                    format!("use -m {min} (the smaller active MTU)"),
                    false,
                );
            }
            if let Some(x) = firewall_drop(&b) {
                return x;
            }
            let route = ctx.route.clone().unwrap_or_default();
            // Linux 6.1 resolves a local peer's MAC without ARP, so RTR passes and the
            // packets themselves are dropped: their source address is local too.
            let peer_text = peer_ip(ctx).map(|p| p.to_string()).unwrap_or_else(|| "the peer".into());
            let dev_name = ctx.local.netdev_now().unwrap_or_else(|| "the GID's netdev".into());
            if let Some(x) = same_host_ipv6(ctx, &route, &dev_name) {
                return b.done(x.code, x.message, x.evidence, x.fix.unwrap_or_default(), false);
            }
            if let Some((owner, more, fix)) = same_host_drop(&route, &peer_text, &dev_name) {
                return b.done(
                    codes::SAME_HOST_DROP,
                    format!("same-host test: {owner} drops the RoCE packets from {dev_name} because their source address is local to this host, so nothing is ever acknowledged"),
                    more,
                    fix,
                    false,
                );
            }
            if let Some(flux) = &route.arp_flux {
                return b.done(
                    codes::RETRY_EXCEEDED_ARP_FLUX,
                    format!("no ACK came back, and this host has ARP flux: {dev_name} shares its subnet with other RDMA netdevs that answer ARP for each other's addresses, so {peer_text} may send its packets for this port to another port's MAC, which drops them (its QPs do not know the QPN)"),
                    vec![Seen::new(Source::Route, format!("ARP flux: {}", crate::diagnose::doctor::arp_flux_line(flux)))],
                    format!("{}; then flush the neighbour entries (ip neigh flush all) on both hosts and run again", crate::diagnose::doctor::ARP_FLUX_FIX),
                    false,
                );
            }
            if let (Some(rd), Some(d)) = (&route.route_netdev, ctx.local.netdev_now()) {
                if !route.peer_is_local && *rd != d {
                    ev.push(Seen::new(Source::Route, format!("ip route get {}: dev {rd}; GID netdev {d}", peer_ip(ctx).map(|p| p.to_string()).unwrap_or_default())));
                }
            }
            if let Some(s) = &route.neighbour_state {
                ev.push(Seen::new(Source::Route, format!("neighbour state of the peer: {s}")));
            }
            if let Some(r) = qp.retry_cnt {
                ev.push(Seen::new(Source::Qp, format!("retry_cnt {r}")));
            }
            let counters = format!("`rdma statistic show link {}` before and after a run shows whether packets were retransmitted or dropped", ctx.local.name());
            // What this host's firewall was seen to pass is ruled out; on Soft-RoCE the
            // peer host's firewall is one more place packets are dropped.
            let firewall = ctx.firewall.as_ref();
            ev.extend(firewall.and_then(crate::diagnose::firewall::ruled_out));
            let places = if qp.soft_roce {
                "wrong GID or route, switch filtering, RoCE v1 across L3, a host firewall dropping UDP 4791"
            } else {
                "wrong GID or route, switch filtering, RoCE v1 across L3"
            };
            b.done(
                code.clone(),
                format!("the peer never acknowledged: it died, its QP is gone, or packets are dropped on the way ({places})"),
                ev,
                format!("check that the peer process is alive; use the same GID type on both ends and RoCE v2 across subnets; {counters}"),
                true,
            )
        }
        WC_RNR_RETRY_EXC_ERR => {
            let mut ev = Vec::new();
            if let Some(r) = qp.rnr_retry {
                ev.push(Seen::new(Source::Qp, format!("rnr_retry {r}{}", if r == 0 { " (no retries at all)" } else { "" })));
            }
            if qp.recv_posted_before_rtr == Some(false) {
                ev.push(Seen::new(Source::Qp, "receives were posted after the QP reached RTR"));
            }
            b.done(
                code.clone(),
                "a SEND arrived at the peer when it had no receive posted (receiver not ready), more often than rnr_retry allows".into(),
                ev,
                "post receives before moving the QP to RTR and keep them replenished; set rnr_retry 7 (infinite) and min_rnr_timer 12".into(),
                false,
            )
        }
        WC_LOC_LEN_ERR => {
            let mut ev = Vec::new();
            if let Some(m) = qp.message_bytes {
                ev.push(Seen::new(Source::Qp, format!("message size {m}")));
            }
            if let Some((path, min)) = mtu_mismatch(ctx) {
                let (code, summary, seen, fix) = crate::diagnose::mtu_mismatch::run_path(path, min);
                ev.push(seen);
                return b.done(code, summary, ev, fix, false);
            }
            // Hardware reports the receiving end of a size mismatch here (rxe: LOC_QP_OP_ERR).
            if let Some((code, summary, ev, fix)) = send_larger_than_receive(ctx, request, Request::Receive) {
                return b.done(code, summary, ev, fix, false);
            }
            b.done(
                code.clone(),
                "the received message is larger than the posted receive buffer (or the MTUs of the two ends differ)".into(),
                ev,
                "use the same -s on both ends, and -m no larger than the smaller active MTU".into(),
                false,
            )
        }
        WC_REM_ACCESS_ERR => b.done(
            code.clone(),
            "the peer refused an RDMA READ/WRITE: wrong rkey or address, or its MR lacks the remote access right".into(),
            vec![],
            "use the rkey and address the peer sent; register with IBV_ACCESS_REMOTE_WRITE/READ as the operation needs".into(),
            false,
        ),
        // Hardware reports the sending end of a size mismatch here (rxe: REM_OP_ERR).
        WC_REM_INV_REQ_ERR => {
            if let Some((code, summary, ev, fix)) = send_larger_than_receive(ctx, request, Request::Send) {
                return b.done(code, summary, ev, fix, false);
            }
            b.done(
                code.clone(),
                "the peer rejected the request: the operation is not enabled on its QP, or the message exceeds its limits".into(),
                vec![],
                "enable the operation's access flags on the peer's QP; check message size against max_msg_sz".into(),
                false,
            )
        }
        WC_LOC_PROT_ERR => b.done(
            code.clone(),
            "the work request's buffer is outside the registered MR or its lkey is wrong".into(),
            vec![],
            "post only buffers inside the registered MR, with its lkey".into(),
            false,
        ),
        WC_WR_FLUSH_ERR => b.done(
            code.clone(),
            "the QP was already in the error state: this completion is a consequence of an earlier failure".into(),
            vec![],
            "look at the first failed completion".into(),
            false,
        ),
        WC_LOC_QP_OP_ERR => {
            // rxe's responder fails a receive that a SEND does not fit with this status
            // (hardware: LOC_LEN_ERR).
            if let Some((code, summary, ev, fix)) = send_larger_than_receive(ctx, request, Request::Receive) {
                return b.done(code, summary, ev, fix, false);
            }
            let mut ev: Vec<Seen> = request.iter().map(|r| r.seen()).collect();
            // rxe (kernel 6.1) transmits only from the initial network namespace; it is
            // the cause only where this process is known to be elsewhere.
            let soft_roce = qp.soft_roce;
            if soft_roce && ctx.in_initial_netns == Some(false) {
                ev.push(Seen::new(Source::Host, "/proc/self/ns/net differs from /proc/1/ns/net"));
                return b.done(
                    code.clone(),
                    format!("the local QP could not execute the request: {} is Soft-RoCE, which works only in the initial network namespace, and this process runs in another one", ctx.local.name()),
                    ev,
                    "run in the initial network namespace (where the rxe device and its netdev are)".into(),
                    true,
                );
            }
            let why = match request {
                Some(Request::Receive) => "a receive failed on this end's QP: the peer's message could not be placed in it".to_string(),
                _ if soft_roce => format!("the local QP could not execute the request: {} could not transmit it (no route from the GID's netdev toward the peer, or the netdev went away)", ctx.local.name()),
                _ => "the local QP could not execute the request".to_string(),
            };
            b.done(
                code.clone(),
                why,
                ev,
                "check the GID's netdev and its route toward the peer (rdmactl check --peer IP), and read the peer's explanation".into(),
                true,
            )
        }
        WC_REM_OP_ERR => {
            // The peer's QP could not execute this end's request; for a SEND on rxe, its
            // posted receive was too small (hardware says REM_INV_REQ_ERR).
            if let Some((code, summary, ev, fix)) = send_larger_than_receive(ctx, request, Request::Send) {
                return b.done(code, summary, ev, fix, false);
            }
            b.done(
                code.clone(),
                "the peer's QP could not execute this end's request (its side failed, e.g. a receive it could not complete); the peer's explanation says why".into(),
                request.iter().map(|r| r.seen()).collect(),
                "read the peer's explanation (rdmactl prints it on both ends)".into(),
                false,
            )
        }
        _ => generic(b),
    }
}

/// Which work request failed, as the engine named it (`op` in the cause): on an error
/// completion the opcode is not valid (rxe leaves a failed receive's at 0, a SEND).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Request {
    Receive,
    Send,
}

impl Request {
    fn of(cause: &Cause) -> Option<Request> {
        match cause {
            Cause::WcStatus {
                op: Some("RECV"), ..
            } => Some(Request::Receive),
            Cause::WcStatus {
                op: Some("SEND"), ..
            } => Some(Request::Send),
            _ => None,
        }
    }

    fn seen(self) -> Seen {
        Seen::new(
            Source::Failure,
            match self {
                Request::Receive => "the failed work request was a receive",
                Request::Send => "the failed work request was a SEND",
            },
        )
    }
}

/// A SEND larger than the receive posted for it, seen from `end` (the end whose receive
/// failed, or the end whose SEND did), when the failed request is that end's and the sizes
/// can differ: the peer spoke ibv_rc_pingpong's exchange, which carries no -s, or it said
/// a size that does not fit. rdmactl's native exchange compares -s before the QP, so two
/// native ends with equal sizes never get here.
fn send_larger_than_receive(ctx: &Facts, request: Option<Request>, end: Request) -> Option<Rule> {
    if request != Some(end) {
        return None;
    }
    let qp = ctx.qp.as_ref()?;
    let ours = qp.message_bytes;
    let theirs = qp.peer_message_bytes;
    let known_to_differ = match (end, ours, theirs) {
        (Request::Receive, Some(o), Some(t)) => t > o,
        (Request::Send, Some(o), Some(t)) => o > t,
        _ => false,
    };
    if !(qp.peer_stock_exchange || known_to_differ) {
        return None;
    }
    let bytes = |n: Option<u32>| n.map(|n| format!("{n}-byte ")).unwrap_or_default();
    let mut ev = vec![end.seen()];
    if let Some(o) = ours {
        ev.push(Seen::new(
            Source::Qp,
            format!("this end's -s: {o} bytes (each posted receive holds {o})"),
        ));
    }
    if let Some(t) = theirs {
        ev.push(Seen::new(Source::Peer, format!("the peer's -s: {t} bytes")));
    }
    let stock = "the peer speaks ibv_rc_pingpong's exchange, which does not carry -s, so the two sizes were never compared";
    if qp.peer_stock_exchange {
        ev.push(Seen::new(Source::Qp, stock));
    }
    let summary = match end {
        Request::Receive => format!(
            "a {}SEND from the peer was larger than the posted receive here ({}): the receive failed and the QP went to the error state",
            bytes(theirs),
            ours.map(|o| format!("{o} bytes, this end's -s")).unwrap_or_else(|| "this end's -s".into())
        ),
        Request::Send => format!(
            "this end's {}SEND was larger than the posted receive at the peer{}, which could not execute it",
            bytes(ours),
            theirs.map(|t| format!(" ({t} bytes)")).unwrap_or_default()
        ),
    };
    let summary = if qp.peer_stock_exchange {
        format!("{summary}; {stock}")
    } else {
        summary
    };
    Some((
        codes::SEND_LARGER_THAN_RECEIVE,
        summary,
        ev,
        "use the same -s on both ends; ibv_rc_pingpong's exchange does not carry -s".into(),
    ))
}

/// This host's firewall drops the run's RoCE v2: the cause, with the rule and its counter.
pub(super) fn firewall_drop(b: &Builder) -> Option<Diagnostic> {
    b.ctx
        .firewall
        .as_ref()
        .and_then(crate::diagnose::firewall::explanation)
}

#[cfg(test)]
mod tests {
    use super::super::explain;
    use super::super::tests::{gathered, rxe_ctx, text};
    use crate::model::errno::{
        WC_LOC_LEN_ERR, WC_LOC_QP_OP_ERR, WC_REM_INV_REQ_ERR, WC_REM_OP_ERR,
    };
    use crate::model::facts::{Facts, QpFacts};
    use crate::model::failure::{Cause, Failure, Step};

    /// What a failed ping-pong completion looks like: the status, and which request failed.
    fn wc(status: u32, op: &'static str) -> Failure {
        Failure::new(
            Step::Completion,
            Cause::WcStatus {
                status,
                vendor_err: 0,
                // rxe leaves a failed receive's opcode at 0 (IBV_WC_SEND): not to be read.
                opcode: 0,
                op: Some(op),
            },
            Default::default(),
        )
    }

    /// rxe0 in the VM, this end's -s and what the peer said about its own.
    fn run(ours: u32, theirs: Option<u32>, stock: bool) -> Facts {
        let mut facts = rxe_ctx(Some(1), "::ffff:192.168.77.2");
        facts.qp = Some(QpFacts {
            retry_cnt: Some(6),
            rnr_retry: Some(7),
            message_bytes: Some(ours),
            peer_message_bytes: theirs,
            peer_stock_exchange: stock,
            soft_roce: true,
            ..QpFacts::default()
        });
        facts
    }

    /// The explanation's words, with the rules every explanation keeps: each seen line
    /// was gathered, and no false cause is named.
    fn explained(failure: &Failure, facts: &Facts) -> (String, String) {
        let x = explain(failure, facts);
        let words = text(&x);
        for seen in &x.evidence {
            assert!(
                gathered(facts, failure, seen),
                "{seen:?} not gathered:\n{words}"
            );
        }
        (x.code.to_string(), words)
    }

    fn assert_no_false_cause(words: &str) {
        for false_cause in ["namespace", "killed", "link went down"] {
            assert!(!words.contains(false_cause), "{false_cause:?} in\n{words}");
        }
    }

    /// Case 3 of issue 26, as rxe reports it: `ibv_rc_pingpong -s 8192` against an rdmactl
    /// server of -s 4096. The server's receive fails with LOC_QP_OP_ERR.
    #[test]
    fn the_receiving_end_of_a_stock_size_mismatch_names_the_sizes() {
        let (code, words) = explained(&wc(WC_LOC_QP_OP_ERR, "RECV"), &run(4096, None, true));
        assert_eq!(code, "send-larger-than-receive", "{words}");
        for want in [
            "larger than the posted receive",
            "4096 bytes, this end's -s",
            "ibv_rc_pingpong's exchange, which does not carry -s",
            "the failed work request was a receive",
            "use the same -s on both ends; ibv_rc_pingpong's exchange does not carry -s",
        ] {
            assert!(words.contains(want), "{want:?} not in\n{words}");
        }
        assert_no_false_cause(&words);
    }

    /// The other way round: this end sends 8192 bytes into a stock peer's 4096-byte
    /// receive and its SEND completes with REM_OP_ERR.
    #[test]
    fn the_sending_end_of_a_stock_size_mismatch_names_the_sizes() {
        let (code, words) = explained(&wc(WC_REM_OP_ERR, "SEND"), &run(8192, None, true));
        assert_eq!(code, "send-larger-than-receive", "{words}");
        for want in [
            "this end's 8192-byte SEND was larger than the posted receive at the peer",
            "this end's -s: 8192 bytes",
            "use the same -s on both ends; ibv_rc_pingpong's exchange does not carry -s",
        ] {
            assert!(words.contains(want), "{want:?} not in\n{words}");
        }
        assert_no_false_cause(&words);
    }

    /// Hardware says the same with other statuses: LOC_LEN_ERR on the receive,
    /// REM_INV_REQ_ERR on the SEND.
    #[test]
    fn hardware_statuses_of_a_size_mismatch_get_the_same_cause() {
        let (code, words) = explained(&wc(WC_LOC_LEN_ERR, "RECV"), &run(4096, None, true));
        assert_eq!(code, "send-larger-than-receive", "{words}");
        let (code, words) = explained(&wc(WC_REM_INV_REQ_ERR, "SEND"), &run(8192, None, true));
        assert_eq!(code, "send-larger-than-receive", "{words}");
        assert_no_false_cause(&words);
    }

    /// A peer that said its size: both sizes are named.
    #[test]
    fn known_sizes_are_both_named() {
        let (code, words) = explained(&wc(WC_LOC_QP_OP_ERR, "RECV"), &run(4096, Some(8192), false));
        assert_eq!(code, "send-larger-than-receive", "{words}");
        assert!(words.contains("a 8192-byte SEND from the peer was larger than the posted receive here (4096 bytes"), "{words}");
        assert!(words.contains("the peer's -s: 8192 bytes"), "{words}");
        let (code, words) = explained(&wc(WC_REM_OP_ERR, "SEND"), &run(8192, Some(4096), false));
        assert_eq!(code, "send-larger-than-receive", "{words}");
        assert!(words.contains("at the peer (4096 bytes)"), "{words}");
    }

    /// Native peers with equal sizes (compared before the QP) do not get the size cause:
    /// the statuses keep their own codes, and nothing guesses a namespace.
    #[test]
    fn equal_sizes_keep_the_plain_codes_without_a_namespace_guess() {
        let same = run(4096, Some(4096), false);
        let (code, words) = explained(&wc(WC_REM_OP_ERR, "SEND"), &same);
        assert_eq!(code, "remote-operation", "{words}");
        assert!(words.contains("the peer's explanation"), "{words}");
        assert_no_false_cause(&words);
        let (code, words) = explained(&wc(WC_LOC_QP_OP_ERR, "SEND"), &same);
        assert_eq!(code, "local-qp-operation", "{words}");
        assert!(words.contains("could not transmit it"), "{words}");
        assert_no_false_cause(&words);
        // The namespace could not be read (not root): still never guessed.
        let mut unread = same.clone();
        unread.in_initial_netns = None;
        let (_, words) = explained(&wc(WC_LOC_QP_OP_ERR, "RECV"), &unread);
        assert_no_false_cause(&words);
        // In the initial namespace: not named either.
        let mut initial = same;
        initial.in_initial_netns = Some(true);
        let (_, words) = explained(&wc(WC_LOC_QP_OP_ERR, "SEND"), &initial);
        assert_no_false_cause(&words);
    }

    /// Only the gathered fact names the namespace: rxe, and /proc/self/ns/net differs from
    /// /proc/1/ns/net.
    #[test]
    fn another_namespace_is_named_only_from_the_gathered_fact() {
        let mut facts = run(4096, Some(4096), false);
        facts.in_initial_netns = Some(false);
        let (code, words) = explained(&wc(WC_LOC_QP_OP_ERR, "SEND"), &facts);
        assert_eq!(code, "local-qp-operation", "{words}");
        assert!(words.contains("initial network namespace"), "{words}");
        assert!(
            words.contains("/proc/self/ns/net differs from /proc/1/ns/net"),
            "{words}"
        );
        // Not on hardware, whose devices work in any namespace they are visible in.
        facts.qp.as_mut().unwrap().soft_roce = false;
        let (_, words) = explained(&wc(WC_LOC_QP_OP_ERR, "SEND"), &facts);
        assert!(!words.contains("namespace"), "{words}");
    }
}
