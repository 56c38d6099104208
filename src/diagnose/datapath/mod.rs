//! Why a data-path step failed (TCP exchange, verbs setup, QP transitions, completions),
//! as pure rules over the failure (step and cause) and the facts gathered about the run.
//! The work-completion rules serve the connection manager too (`diagnose::cm` defers to
//! them), so a retry-exceeded means the same thing on both paths.
//!
//! Whenever some GID index on the port would work toward the peer, the explanation names
//! it ("use GID index 1 (RoCE v2, ::ffff:192.168.77.1 on veth0)"); the choice comes from
//! `gidselect`, so `-g auto` and the explanations never disagree.

mod completion;
mod exchange;
mod gid;
mod mtu;
mod peers;
mod port;
mod resources;
mod route;
mod rtr;
mod setup;
mod stall;
mod stopped;
#[cfg(test)]
pub(crate) mod tests;
mod verify;

use std::net::IpAddr;

use crate::diagnose::gidselect::{self, Want};
use crate::model::codes::{self, Code};
use crate::model::device::GidEntry;
use crate::model::diagnostic::{Diagnostic, Seen, Source};
use crate::model::facts::{EndFacts, Facts};
use crate::model::failure::{Cause, Failure, PinLimit, Step};

use completion::completion;
pub use exchange::server_busy;
use exchange::{oob_connect, oob_exchange, port_in_use};
use gid::{gid_slot, local_gid_words};
use peers::{compare, stock_send_only};
use port::port_not_active;
pub(crate) use resources::node_refused;
use resources::{device_access, device_gone, memlock, memory_short};
use rtr::rtr_errno;
use setup::{
    init_einval, inline_over, inline_too_large, pkey_past_table, qp_caps, queue_full, rts_einval,
};
pub use stall::message_over_max;
use stall::poll_timeout;
use stopped::{interrupted, peer_gone, peer_reported};
use verify::{data_mismatch, semantics_broken};

/// The GID index that would work toward the peer, and its description.
struct Suggestion {
    index: Option<u32>,
    text: Option<String>,
    /// The current index is itself the suggestion.
    current_is_best: bool,
}

fn peer_ip(ctx: &Facts) -> Option<IpAddr> {
    ctx.route.as_ref().and_then(|r| r.peer).or_else(|| {
        let gid = ctx.peer.as_ref()?.gid?;
        (!gid.is_zero()).then(|| gid.ip())
    })
}

fn want_for(ctx: &Facts) -> Want {
    gidselect::want_toward(
        peer_ip(ctx),
        ctx.route.as_ref(),
        ctx.peer.as_ref().and_then(EndFacts::type_now),
    )
}

fn suggest(ctx: &Facts) -> Suggestion {
    let local = &ctx.local;
    let Some(ll) = &local.link_layer else {
        return Suggestion {
            index: None,
            text: None,
            current_is_best: false,
        };
    };
    // A GID on a netdev that is gone or down cannot be the answer, however well it ranks.
    let dead_netdev = ctx
        .netdev
        .as_ref()
        .filter(|n| !n.exists || !n.up)
        .map(|n| n.name.as_str());
    let table: Vec<GidEntry> = local
        .gid_table
        .iter()
        .filter(|e| dead_netdev.is_none() || e.netdev.as_deref() != dead_netdev)
        .cloned()
        .collect();
    let sel = gidselect::select_gid(&table, ll, &want_for(ctx));
    let text = gidselect::suggestion(&table, &sel);
    Suggestion {
        index: sel.chosen,
        current_is_best: sel.chosen.is_some() && sel.chosen == local.gid_index,
        text,
    }
}

struct Builder<'a> {
    ctx: &'a Facts,
    failure: &'a Failure,
    suggestion: Suggestion,
}

impl Builder<'_> {
    /// The fix, with the working GID index appended when the cause is the GID choice or
    /// when naming it helps; `gid_fix` says whether the GID is the thing to change.
    fn done(
        self,
        code: Code,
        summary: String,
        mut evidence: Vec<Seen>,
        fix: String,
        gid_fix: bool,
    ) -> Diagnostic {
        let s = &self.suggestion;
        let mut fix = fix;
        // Whether the GID fits is evidence only where a GID could have caused the failure:
        // on the wire (RTR, completions, the peer's RTR behind a closed exchange). Under a
        // memlock or MR failure it would be a fact about something else.
        let gid_matters = gid_fix
            || matches!(
                self.failure.step,
                Step::Rtr | Step::Poll | Step::Completion | Step::CmTransfer | Step::Exchange
            );
        match (&s.text, gid_fix) {
            _ if !gid_matters => {}
            (Some(text), true) if !s.current_is_best => fix = format!("{fix}; {text}"),
            (Some(text), _) if s.current_is_best => evidence.push(Seen::new(
                Source::Local,
                format!(
                    "the GID in use fits the peer: {}",
                    text.trim_start_matches("use ")
                ),
            )),
            (Some(text), _) => evidence.push(Seen::new(
                Source::Local,
                format!("the GID index that fits the peer: {text}"),
            )),
            (None, true)
                if self.ctx.local.link_layer.is_some() && !self.ctx.local.gid_table.is_empty() =>
            {
                evidence.push(Seen::new(
                    Source::Local,
                    "no GID on this port fits the peer (family, type, netdev)",
                ))
            }
            _ => {}
        }
        Diagnostic {
            evidence,
            ..Diagnostic::explanation(code, summary, fix)
        }
        .suggest_gid(s.index.filter(|_| gid_matters))
    }
}

/// Milliseconds as the seconds the messages print: "5 s", "0.5 s".
fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Explain why a data-path step failed, given what was gathered about the run.
pub fn explain(failure: &Failure, ctx: &Facts) -> Diagnostic {
    let step = failure.step;
    let b = Builder {
        ctx,
        failure,
        suggestion: suggest(ctx),
    };
    // Said by the user or by the peer: no local rule applies, except that a port of this
    // end that is down explains this end first (the peer only saw its consequence).
    if let Cause::Interrupted { signal } = &failure.cause {
        return interrupted(failure, *signal);
    }
    // A process that was itself stopped mid-run names that first: what the peer then
    // did or said (it gave up, and calls this end hung) follows from it.
    if let Some(x) = ctx
        .stall
        .as_ref()
        .and_then(|s| stall::stopped_here(failure, s))
    {
        return x;
    }
    if let Cause::PeerReported { notice } = &failure.cause {
        // This end's GID left the table: the peer's failure (its retries ran out) is the
        // consequence, whichever end noticed first.
        if let Some(mut c) = crate::diagnose::midrun::gid_left(ctx) {
            c.seen.push(Seen::new(
                Source::PeerNotice,
                format!("the {} said: {}", notice.role, notice.message),
            ));
            return Diagnostic {
                evidence: c.seen,
                ..Diagnostic::explanation(c.code, c.summary, c.fix)
            };
        }
        if let Some((code, summary, mut evidence, fix)) = port_not_active(ctx) {
            evidence.push(Seen::new(
                Source::PeerNotice,
                format!("the {} said: {}", notice.role, notice.message),
            ));
            return Diagnostic {
                evidence,
                ..Diagnostic::explanation(code, summary, fix)
            };
        }
        // The peer's packets went unanswered and this host's firewall drops them: the
        // peer saw only the consequence.
        if notice.packets_unanswered() {
            if let Some(mut x) = ctx
                .firewall
                .as_ref()
                .and_then(crate::diagnose::firewall::explanation)
            {
                x.evidence.push(Seen::new(
                    Source::PeerNotice,
                    format!("the {} said: {}", notice.role, notice.message),
                ));
                return x;
            }
        }
        return peer_reported(notice);
    }
    // A port that is not up explains every later step, whatever the errno.
    if step_needs_active_port(step) {
        if let Some((code, summary, evidence, fix)) = port_not_active(ctx) {
            return b.done(code, summary, evidence, fix, false);
        }
    }
    match (step, &failure.cause) {
        (Step::Open, Cause::Errno { errno: e, .. }) if *e == libc::EACCES || *e == libc::EPERM => {
            device_access(b)
        }
        (Step::Open, Cause::Errno { errno: e, .. })
            if *e == libc::ENODEV || *e == libc::ENXIO || *e == libc::ENOENT =>
        {
            device_gone(b)
        }
        (
            Step::Mr | Step::Cq | Step::QpCreate | Step::Pd | Step::Srq,
            Cause::Errno { errno: e, .. },
        ) if *e == libc::ENOMEM || *e == libc::EAGAIN => memlock(b),
        (
            _,
            Cause::WouldPin {
                limit: PinLimit::Memlock,
                ..
            },
        ) => memlock(b),
        (_, Cause::WouldPin { .. }) => memory_short(b),
        (Step::Mr, Cause::Errno { errno: e, .. }) if *e == libc::EACCES || *e == libc::EPERM => {
            device_access(b)
        }
        (Step::Rtr, Cause::Errno { errno: e, .. }) => rtr_errno(b, *e),
        (Step::Init, Cause::Errno { errno: e, .. }) if *e == libc::EINVAL => {
            pkey_past_table(ctx).unwrap_or_else(|| init_einval(b))
        }
        (Step::QpCreate, Cause::Errno { errno: e, .. }) if *e == libc::EINVAL => qp_caps(b),
        (Step::PostSend, Cause::Errno { errno: e, .. })
            if (*e == libc::EINVAL || *e == libc::ENOMEM) && inline_over(ctx).is_some() =>
        {
            inline_too_large(failure, ctx)
        }
        (Step::PostSend | Step::PostRecv, Cause::Errno { errno: e, .. }) if *e == libc::ENOMEM => {
            queue_full(b)
        }
        (Step::Rts, Cause::Errno { errno: e, .. }) if *e == libc::EINVAL => rts_einval(b),
        (Step::Poll | Step::Completion | Step::CmTransfer, Cause::WcStatus { status, .. }) => {
            completion(b, *status)
        }
        (Step::Poll | Step::Completion, Cause::PeerClosed) => peer_gone(b),
        (Step::Poll | Step::Completion, Cause::Timeout { waited_ms, .. }) => {
            poll_timeout(b, seconds(*waited_ms))
        }
        (Step::QueryGid, Cause::Errno { errno: e, .. }) => gid_slot(b, *e),
        (Step::Listen, Cause::Errno { errno: e, .. }) if *e == libc::EADDRINUSE => {
            port_in_use(failure, ctx)
        }
        (Step::Connect, cause) => oob_connect(b, cause),
        (Step::Exchange, cause) => oob_exchange(b, cause),
        // A check after the run (Verify) or a `--cm` transfer's own check of each message.
        (Step::Verify, _) | (_, Cause::Corrupted { .. }) => data_mismatch(b),
        (Step::Semantics, _) => semantics_broken(failure),
        (_, Cause::StockPeerSendOnly { ops, peer }) => stock_send_only(*ops, peer),
        (Step::Compare, _) => compare(b),
        _ => generic(b),
    }
}

fn step_needs_active_port(step: Step) -> bool {
    matches!(
        step,
        Step::QueryPort | Step::Rtr | Step::Rts | Step::PostSend | Step::Poll | Step::Completion
    )
}

type Rule = (Code, String, Vec<Seen>, String);

/// The code a work completion's status means, whoever reports it: a failed run's
/// completion (`completion`) and a job's log (`diagnose::triage`). A status with no rule
/// of its own is `unexplained`.
pub fn status_code(status: u32) -> Code {
    use crate::model::errno::*;
    match status {
        WC_LOC_LEN_ERR => codes::LOCAL_LENGTH,
        WC_LOC_QP_OP_ERR => codes::LOCAL_QP_OPERATION,
        WC_LOC_PROT_ERR => codes::LOCAL_PROTECTION,
        WC_WR_FLUSH_ERR => codes::FLUSHED,
        WC_REM_INV_REQ_ERR => codes::REMOTE_INVALID_REQUEST,
        WC_REM_ACCESS_ERR => codes::REMOTE_ACCESS,
        WC_REM_OP_ERR => codes::REMOTE_OPERATION,
        WC_RETRY_EXC_ERR => codes::RETRY_EXCEEDED,
        WC_RNR_RETRY_EXC_ERR => codes::RNR_RETRY_EXCEEDED,
        _ => codes::UNEXPLAINED,
    }
}

fn generic(b: Builder) -> Diagnostic {
    let evidence = vec![Seen::new(
        Source::Local,
        format!("local {}", local_gid_words(&b.ctx.local)),
    )];
    let summary = format!(
        "no rule explains {} at this step ({})",
        b.failure.cause,
        b.failure.step.name()
    );
    b.done(
        codes::UNEXPLAINED,
        summary,
        evidence,
        "rerun with rdmactl check --peer IP on both ends to compare".into(),
        true,
    )
}

/// Whether a peer's explanation, arriving after this end explained its own failure, says
/// more: this end's words only name what it saw (no ACK, no completion), the peer named a
/// cause of its own.
pub fn peer_says_more(own: &Code, peer: &Code) -> bool {
    let guesses = [codes::RETRY_EXCEEDED, codes::NO_COMPLETION];
    guesses.contains(own) && !guesses.contains(peer)
}
