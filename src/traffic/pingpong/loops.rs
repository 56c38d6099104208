//! The measured loops: ibv_rc_pingpong's SEND ping-pong, and the windowed loop of RDMA
//! WRITE and READ that the TCP exchange and the CM share.

use super::plan::{Plan, LAST_MESSAGE, RX_DEPTH, WRID_RECV, WRID_SEND};
use super::side::Side;
use crate::gather::verbs::qp::{ticks, SendOp, Wc};
use crate::model::failure::{Cause, Failure, Step};
use crate::model::results::OpResult;
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
    if is_client {
        last_send = Some(ticks());
        side.qp.post_send(&side.mr, send, WRID_SEND)?;
        pending |= WRID_SEND;
    }
    let progress = |scnt: u64, rcnt: u64, total: Option<u64>| match total {
        Some(t) => format!("after {scnt}/{t} sends and {rcnt}/{t} receives"),
        None => format!("after {scnt} sends and {rcnt} receives"),
    };
    while total.map_or(true, |t| rcnt < t || scnt < t) {
        let n = wait(side, &mut wc, plan, &mut conn)
            .map_err(|f| with_progress(f, side, progress(scnt, rcnt, total)))?;
        // Receives are reposted after the next SEND is posted, and the sample recorded
        // then too: the time between a completion and the next SEND is the round trip's
        // critical path, and RX_DEPTH receives leave ample room for one late repost.
        let mut reposts = 0u32;
        for w in &wc[..n] {
            if !w.ok() {
                return Err(with_progress(
                    side.fail(Step::Completion, w.cause()),
                    side,
                    progress(scnt, rcnt, total),
                ));
            }
            match w.wr_id {
                WRID_SEND => scnt += 1,
                WRID_RECV => {
                    rcnt += 1;
                    if marked_end && !is_client && side.mr.byte(target) == LAST_MESSAGE {
                        total = Some(rcnt);
                    }
                    if total.map_or(true, |t| rcnt + u64::from(RX_DEPTH) <= t + 1) {
                        reposts += 1;
                    }
                }
                _ => {}
            }
            pending &= !w.wr_id;
            if pending == 0 && total.map_or(true, |t| scnt < t) {
                let now = ticks();
                if meter.done(scnt) && marked_end && is_client && total.is_none() {
                    side.mr.fill(0, 1, LAST_MESSAGE);
                    total = Some(scnt + 1);
                }
                side.qp.post_send(&side.mr, send, WRID_SEND)?;
                pending = WRID_RECV | WRID_SEND;
                if let Some(at) = last_send {
                    meter.record(now.saturating_sub(at));
                }
                last_send = Some(now);
            }
        }
        for _ in 0..reposts {
            side.qp.post_recv(&side.mr, target, side.size, WRID_RECV)?;
        }
    }
    if let Some(at) = last_send {
        meter.record(ticks().saturating_sub(at));
    }
    Ok(meter.finish(scnt, u64::from(side.size) * scnt * 2))
}

/// The next completions: busy-polled, or asleep on the completion channel with -e.
pub(super) fn wait(
    side: &mut Side,
    wc: &mut [Wc],
    plan: &Plan,
    conn: &mut Option<&mut Conn>,
) -> std::result::Result<usize, Failure> {
    if plan.events {
        side.cq
            .wait_sleeping(wc, plan.timeout, &mut || stopped(conn))
    } else {
        side.cq
            .wait_watching(wc, plan.timeout, &mut || stopped(conn))
    }
}

/// Asked while a loop waits for completions: a caught SIGINT/SIGTERM, or a peer that
/// closed the out-of-band connection or sent its failure, ends the wait now.
pub(super) fn stopped(conn: &mut Option<&mut Conn>) -> Option<Failure> {
    if let Some(f) = crate::traffic::interrupted_wait() {
        return Some(f);
    }
    let mut f = conn.as_mut()?.peer_stopped()?;
    f.step = Step::Poll;
    Some(f)
}

pub(super) fn with_progress(mut f: Failure, side: &Side, progress: String) -> Failure {
    if matches!(f.cause, Cause::Timeout { .. }) {
        f.context.note = Some(format!(
            "{progress}: the peer stopped answering (killed, or its link went down)"
        ));
    } else {
        f.context.note = Some(progress);
    }
    f.context.device = side.ctx.name().to_string();
    f.context.port = side.port;
    f
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
        let n = queue
            .wait(&mut wc)
            .map_err(|f| queue.stopped_after(f, done, posted, meter.limit()))?;
        let at = ticks();
        for c in &wc[..n] {
            let wr_id = match queue.completed(c) {
                Ok(Some(wr_id)) => wr_id,
                Ok(None) => continue,
                Err(f) => return Err(queue.stopped_after(f, done, posted, meter.limit())),
            };
            if window == 1 {
                meter.record(at.saturating_sub(posted_at[slot(wr_id)]));
            }
            done += 1;
        }
    }
    Ok(meter.finish(done, bytes_each * done))
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
        self.side.qp.post_send(&self.side.mr, self.op, wr_id)
    }

    fn wait(&mut self, into: &mut [Wc]) -> Result<usize, Failure> {
        wait(self.side, into, self.plan, &mut self.conn)
    }

    fn completed(&mut self, w: &Wc) -> Result<Option<u64>, Failure> {
        if !w.ok() {
            return Err(self.side.fail(Step::Completion, w.cause()));
        }
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
