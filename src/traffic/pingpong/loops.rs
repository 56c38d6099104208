//! The measured loops: ibv_rc_pingpong's SEND ping-pong, and the windowed loop of RDMA
//! WRITE and READ that the TCP exchange and the CM share.

use super::plan::{Plan, LAST_MESSAGE, RX_DEPTH, WRID_RECV, WRID_SEND};
use super::side::Side;
use crate::gather::verbs::qp::{ticks, SendOp, Wc};
use crate::model::failure::{Cause, Failure, Step};
use crate::model::results::{OpResult, OpResults};
use crate::traffic::meter::Meter;
use crate::wire::exchange::Conn;

/// ibv_rc_pingpong's traffic: the client sends first; each end sends its next message once
/// its previous send and a receive both completed. The run ends after the meter's count;
/// with `marked_end` (a --duration run) the client ends it when its meter says so, by
/// marking its last message, and the server stops after answering that one. Each sample is
/// the time between two of this end's sends (a round trip); nothing allocates in the loop.
pub(super) fn pingpong_loop(
    side: &mut Side,
    is_client: bool,
    meter: &mut Meter,
    marked_end: bool,
    plan: &Plan,
    mut conn: Option<&mut Conn>,
) -> std::result::Result<OpResult, Failure> {
    let send = SendOp::Send {
        offset: 0,
        len: side.size,
    };
    let target = side.target();
    let mut total = (!marked_end).then(|| meter.limit()).flatten();
    if marked_end && is_client {
        side.mr.fill(0, 1, 0);
    }
    let mut wc = [Wc::default(); 2];
    let (mut rcnt, mut scnt) = (0u64, 0u64);
    let mut pending = WRID_RECV;
    let mut last_send: Option<u64> = None;
    side.stall.begin();
    if is_client {
        last_send = Some(ticks());
        side.qp.post_send(&side.mr, send, WRID_SEND)?;
        side.stall.posted += 1;
        pending |= WRID_SEND;
    }
    let progress = |scnt: u64, rcnt: u64, total: Option<u64>| match total {
        Some(t) => format!("after {scnt}/{t} sends and {rcnt}/{t} receives"),
        None => format!("after {scnt} sends and {rcnt} receives"),
    };
    let depth = u64::from(RX_DEPTH);
    let size = u64::from(side.size);
    let bytes = move |scnt: u64| size * scnt * 2;
    while total.map_or(true, |t| rcnt < t || scnt < t) {
        // Asked every iteration, not only when a wait goes idle: on hardware the next
        // completion is always there within the wait's idle count, so a Ctrl-C would never
        // be seen there (an atomic load, no system call).
        if let Some(f) = crate::traffic::interrupted_wait() {
            meter.stopped_at(scnt, bytes(scnt));
            return Err(with_progress(f, side, progress(scnt, rcnt, total)));
        }
        let n = wait(side, &mut wc, plan, &mut conn).map_err(|f| {
            meter.stopped_at(scnt, bytes(scnt));
            with_progress(f, side, progress(scnt, rcnt, total))
        })?;
        // Receives are reposted in a batch when one is left (as ibv_rc_pingpong does: each
        // end has at most one message in flight toward it), after the next SEND is posted;
        // the sample is recorded after the post too. The time between a completion and the
        // next SEND is the round trip's critical path.
        let mut repost = false;
        for w in &wc[..n] {
            if !w.ok() {
                meter.stopped_at(scnt, bytes(scnt));
                return Err(with_progress(
                    side.fail(Step::Completion, failed_request(w)),
                    side,
                    progress(scnt, rcnt, total),
                ));
            }
            match w.wr_id {
                WRID_SEND => {
                    scnt += 1;
                    side.stall.completed += 1;
                }
                WRID_RECV => {
                    rcnt += 1;
                    side.stall.received += 1;
                    if marked_end && !is_client && side.mr.byte(target) == LAST_MESSAGE {
                        total = Some(rcnt);
                    }
                    repost |= side.recvs_posted.saturating_sub(rcnt) <= 1;
                }
                _ => {}
            }
            pending &= !w.wr_id;
            if pending == 0 && total.map_or(true, |t| scnt < t) {
                let now = ticks();
                // The round trip's one clock read tells the stall look this process ran.
                side.stall.completion(now);
                if meter.done(scnt) && marked_end && is_client && total.is_none() {
                    side.mr.fill(0, 1, LAST_MESSAGE);
                    total = Some(scnt + 1);
                }
                side.qp.post_send(&side.mr, send, WRID_SEND)?;
                side.stall.posted += 1;
                pending = WRID_RECV | WRID_SEND;
                if let Some(at) = last_send {
                    meter.record(now.saturating_sub(at));
                }
                last_send = Some(now);
            }
        }
        if repost {
            // As many as fit the receive queue, and no more than messages can still come
            // (`-n N` runs post N + 1 in all, as at set-up).
            let wanted = total.map_or(rcnt + depth, |t| (t + 1).min(rcnt + depth));
            while side.recvs_posted < wanted {
                side.qp.post_recv(&side.mr, target, side.size, WRID_RECV)?;
                side.recvs_posted += 1;
            }
        }
    }
    if let Some(at) = last_send {
        meter.record(ticks().saturating_sub(at));
    }
    Ok(meter.finish(scnt, bytes(scnt)))
}

/// The next completions: busy-polled, or asleep on the completion channel with -e. A wait
/// that runs out while packets still arrive goes on (one large message can take longer
/// than --timeout); one that does not is a stall, looked at before it is reported.
pub(super) fn wait(
    side: &mut Side,
    wc: &mut [Wc],
    plan: &Plan,
    conn: &mut Option<&mut Conn>,
) -> std::result::Result<usize, Failure> {
    use super::stall::{Flow, SECOND_LOOK};
    // How long this wait has run, summed from the waits that ran out: no clock is read per
    // call (this runs once per round trip, and under emulation a clock read can be a system
    // call and an emulated timer, several microseconds of the round trip ibv_rc_pingpong
    // does not spend).
    let mut waited = std::time::Duration::ZERO;
    let mut timeout = plan.timeout;
    loop {
        let mut watch = || stopped(conn);
        let res = if plan.events {
            side.cq.wait_sleeping(wc, timeout, &mut watch)
        } else {
            side.cq.wait_watching(wc, timeout, &mut watch)
        };
        let f = match res {
            Ok(n) => return Ok(n),
            Err(f) => f,
        };
        let probed = conn.as_ref().is_some_and(|c| c.was_probed());
        if let Cause::Timeout { waited_ms, .. } = f.cause {
            waited += std::time::Duration::from_millis(waited_ms);
        }
        if matches!(f.cause, Cause::Timeout { .. }) && !probed {
            match side.stall.flow(waited, plan.timeout, side.size) {
                Flow::FirstLook => {
                    timeout = SECOND_LOOK.min(plan.timeout);
                    continue;
                }
                Flow::Moving => {
                    timeout = plan.timeout;
                    continue;
                }
                Flow::Still => {}
            }
        }
        let end = super::stall::StalledEnd {
            ctx: &side.ctx,
            port: side.port,
            gid: side.gid.as_ref(),
            size: side.size,
        };
        return Err(super::stall::look(
            &mut side.stall,
            &end,
            plan.timeout,
            conn,
            f,
        ));
    }
}

/// Asked while a loop waits for completions: a caught SIGINT/SIGTERM, or a peer that
/// closed the out-of-band connection, sent its failure or probed a stall, ends the wait now.
pub(super) fn stopped(conn: &mut Option<&mut Conn>) -> Option<Failure> {
    if let Some(f) = crate::traffic::interrupted_wait() {
        return Some(f);
    }
    let mut f = conn.as_mut()?.peer_stopped()?;
    f.step = Step::Poll;
    Some(f)
}

/// What a loop measured before a signal stopped it (this end's, or the peer's it was told
/// of) goes into the report under `name`, so a Ctrl-C still prints the figures; the
/// failure is passed on.
pub(super) fn keep_partial(
    ops: &mut OpResults,
    name: &str,
    meter: &Meter,
    res: Result<OpResult, Failure>,
) -> Result<OpResult, Failure> {
    if let Err(f) = &res {
        if stopped_by_a_signal(f) {
            if let Some(partial) = meter.partial() {
                ops.insert(name, partial);
            }
        }
    }
    res
}

/// SIGINT or SIGTERM here, or the peer's notice that one stopped it.
fn stopped_by_a_signal(f: &Failure) -> bool {
    match &f.cause {
        Cause::Interrupted { .. } => true,
        Cause::PeerReported { notice } => notice.code == crate::model::codes::INTERRUPTED,
        _ => false,
    }
}

pub(super) fn with_progress(mut f: Failure, side: &Side, progress: String) -> Failure {
    if let Some(note) = progress_note(&f.cause, progress) {
        f.context.note = Some(note);
    }
    f.context.device = side.ctx.name().to_string();
    f.context.port = side.port;
    f
}

/// How far this end got, as the note of its failure; none beside a peer's message, which
/// carries its own "after ..." clause (a second one read as a repetition; this end's count
/// is in its figures).
fn progress_note(cause: &Cause, progress: String) -> Option<String> {
    match cause {
        Cause::PeerReported { .. } => None,
        _ => Some(progress),
    }
}

/// A send queue the windowed loop drives: how a request is posted and how completions
/// come back. The TCP exchange's QP ([`QpQueue`]) and the CM's endpoint are two.
pub(super) trait SendQueue {
    /// What one wait brings back.
    type Completion: Copy;
    /// A slot of the completion buffer before anything is written to it.
    fn empty() -> Self::Completion;
    /// Posts request `wr_id` (the count posted before it).
    fn post(&mut self, wr_id: u64) -> Result<(), Failure>;
    /// Waits for the next completions, into `into`; how many came.
    fn wait(&mut self, into: &mut [Self::Completion]) -> Result<usize, Failure>;
    /// The wr_id of a request of ours that completed; None for a completion that is not
    /// one (dealt with here); a failed request as its failure.
    fn completed(&mut self, c: &Self::Completion) -> Result<Option<u64>, Failure>;
    /// A failure of the loop, with how far it got: `done` of `posted`, toward `limit`.
    fn stopped_after(&self, f: Failure, done: u64, posted: u64, limit: Option<u64>) -> Failure;
}

/// RDMA WRITE or READ with up to `window` in flight until the meter says stop, each
/// moving `bytes_each`. With a window of 1 each sample is one operation's latency, post to
/// completion; with more it would be queueing, so only the rate counts.
pub(super) fn windowed_loop<Q: SendQueue>(
    queue: &mut Q,
    meter: &mut Meter,
    window: u32,
    bytes_each: u64,
) -> Result<OpResult, Failure> {
    // Completions of one send queue come in order: a ring of post times is enough.
    let mut posted_at = vec![0u64; window as usize];
    let slot = |wr_id: u64| (wr_id % u64::from(window)) as usize;
    let mut wc = [Q::empty(); 16];
    let (mut posted, mut done) = (0u64, 0u64);
    let mut stop = false;
    loop {
        // A window in flight always has a completion ready: the wait never goes idle long
        // enough to ask for a Ctrl-C itself, so the loop asks.
        if let Some(f) = crate::traffic::interrupted_wait() {
            meter.stopped_at(done, bytes_each * done);
            return Err(queue.stopped_after(f, done, posted, meter.limit()));
        }
        while !stop && posted - done < u64::from(window) {
            if meter.done(posted) {
                stop = true;
                break;
            }
            posted_at[slot(posted)] = ticks();
            queue.post(posted)?;
            posted += 1;
        }
        if done == posted {
            break;
        }
        let n = queue.wait(&mut wc).map_err(|f| {
            meter.stopped_at(done, bytes_each * done);
            queue.stopped_after(f, done, posted, meter.limit())
        })?;
        let at = ticks();
        for c in &wc[..n] {
            let wr_id = match queue.completed(c) {
                Ok(Some(wr_id)) => wr_id,
                Ok(None) => continue,
                Err(f) => {
                    meter.stopped_at(done, bytes_each * done);
                    return Err(queue.stopped_after(f, done, posted, meter.limit()));
                }
            };
            if window == 1 {
                meter.record(at.saturating_sub(posted_at[slot(wr_id)]));
            }
            done += 1;
        }
    }
    Ok(meter.finish(done, bytes_each * done))
}

/// A failed completion of the SEND ping-pong, naming its work request from its wr_id: on
/// an error completion only wr_id and status are valid, and rxe leaves the opcode of a
/// failed receive at 0 (IBV_WC_SEND). Whether a receive or a SEND failed tells the two
/// ends of a size mismatch apart.
fn failed_request(w: &Wc) -> Cause {
    let mut cause = w.cause();
    if let Cause::WcStatus { op, .. } = &mut cause {
        *op = match w.wr_id {
            WRID_SEND => Some("SEND"),
            WRID_RECV => Some("RECV"),
            _ => None,
        };
    }
    cause
}

/// The TCP exchange's QP as the windowed loop's queue: `op` posted again and again, the
/// completions waited for as `plan` says, a peer that stops ending the wait.
pub(super) struct QpQueue<'a> {
    pub(super) side: &'a mut Side,
    pub(super) op: SendOp,
    pub(super) plan: &'a Plan,
    pub(super) conn: Option<&'a mut Conn>,
}

impl SendQueue for QpQueue<'_> {
    type Completion = Wc;

    fn empty() -> Wc {
        Wc::default()
    }

    fn post(&mut self, wr_id: u64) -> Result<(), Failure> {
        self.side.qp.post_send(&self.side.mr, self.op, wr_id)?;
        self.side.stall.posted += 1;
        Ok(())
    }

    fn wait(&mut self, into: &mut [Wc]) -> Result<usize, Failure> {
        let n = wait(self.side, into, self.plan, &mut self.conn)?;
        self.side.stall.completion(ticks());
        Ok(n)
    }

    fn completed(&mut self, w: &Wc) -> Result<Option<u64>, Failure> {
        if !w.ok() {
            return Err(self.side.fail(Step::Completion, w.cause()));
        }
        self.side.stall.completed += 1;
        Ok(Some(w.wr_id))
    }

    fn stopped_after(&self, f: Failure, done: u64, posted: u64, limit: Option<u64>) -> Failure {
        let progress = match limit {
            Some(n) => format!("after {done}/{n} completions ({posted} posted)"),
            None => format!("after {done} completions ({posted} posted)"),
        };
        with_progress(f, self.side, progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure::{FailureContext, PeerNotice};

    fn stopped_meter() -> Meter {
        let mut m = Meter::start("send", Some(10_000_000), None, None, 1);
        m.record(2000);
        m.stopped_at(25_000, 25_000 * 2 * 4096);
        m
    }

    fn failed(cause: Cause) -> Result<OpResult, Failure> {
        Err(Failure::new(Step::Poll, cause, FailureContext::default()))
    }

    fn notice(code: &'static str) -> PeerNotice {
        PeerNotice {
            role: "client".into(),
            message: "poll CQ failed: interrupted by SIGINT".into(),
            code: code.into(),
            summary: "the run was stopped by SIGINT".into(),
            evidence: Vec::new(),
            fix: String::new(),
            counters: None,
        }
    }

    /// Ctrl-C: the iterations measured before it are in the report (`-j`: not `"ops":{}`).
    #[test]
    fn a_signal_keeps_what_was_measured() {
        let mut ops = OpResults::default();
        let res = keep_partial(
            &mut ops,
            "send",
            &stopped_meter(),
            failed(Cause::Interrupted {
                signal: libc::SIGINT,
            }),
        );
        assert!(res.is_err(), "the failure is passed on");
        let send = ops.send.clone().expect("the partial figures");
        assert_eq!((send.iters, send.bytes), (25_000, 25_000 * 2 * 4096));
        let json = serde_json::to_string(&ops).unwrap();
        assert!(json.contains(r#""send":{"iters":25000,"#), "{json}");
    }

    /// The server told by its client that a Ctrl-C stopped it keeps its own figures too.
    #[test]
    fn the_peers_signal_keeps_them_too() {
        let mut ops = OpResults::default();
        let cause = Cause::PeerReported {
            notice: Box::new(notice("interrupted")),
        };
        let _ = keep_partial(&mut ops, "write", &stopped_meter(), failed(cause));
        assert_eq!(ops.write.map(|r| r.iters), Some(25_000));
    }

    /// The relay of a peer's failure says "after ..." once: the peer's clause, not this
    /// end's beside it.
    #[test]
    fn a_relayed_failure_has_one_after_clause() {
        let relayed = Cause::PeerReported {
            notice: Box::new(notice("interrupted")),
        };
        assert_eq!(progress_note(&relayed, "after 5 sends".into()), None);
        let here = Cause::Interrupted {
            signal: libc::SIGINT,
        };
        assert_eq!(
            progress_note(&here, "after 5 sends".into()).as_deref(),
            Some("after 5 sends")
        );
    }

    /// A fault is not a measurement: its report stays without figures, as before.
    #[test]
    fn a_fault_keeps_none() {
        let mut ops = OpResults::default();
        let _ = keep_partial(
            &mut ops,
            "send",
            &stopped_meter(),
            failed(Cause::PeerClosed),
        );
        let cause = Cause::PeerReported {
            notice: Box::new(notice("no-completion")),
        };
        let _ = keep_partial(&mut ops, "send", &stopped_meter(), failed(cause));
        assert!(ops.iter().next().is_none());
    }
}
