//! Completion semantics: unsignalled SENDs, completion events, solicited events, and
//! the flush of a QP moved to ERR.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{send, PairSpec, QUIET_WAIT, SIGNALED};
use crate::gather::verbs::qp::{Cq, SendFlags, WcDetail};
use crate::model::failure::{Failure, Step};
use crate::traffic::selftest::{pattern, StepResult, Tester};

impl Tester {
    /// A run of SENDs with only every k-th signalled. Only the signalled ones complete,
    /// and the sender never has more requests outstanding than the send queue holds: an
    /// unsignalled request's slot is free only once a later signalled one has completed
    /// and been polled.
    pub(super) fn unsignaled(&mut self) -> StepResult {
        const EVERY: usize = 4;
        let mut p = self.pair(PairSpec {
            send_wr: 8,
            recv_wr: 64,
            cq_entries: 128,
            ..PairSpec::default()
        })?;
        let depth = p.granted[0].max_send_wr.clamp(EVERY as u32, 64) as usize;
        // Four send queues' worth: the slots must be reused to get through.
        let total = (4 * depth / EVERY) * EVERY;
        let total = total.min(64);
        let len = 16u32;
        for m in 0..total {
            p.qps[1].post_recv(&p.mrs[1], m * len as usize, len, m as u64)?;
            p.mrs[0].write(m * len as usize, &pattern(&format!("u{m}"), len as usize));
        }
        let mut completed: Vec<u64> = Vec::new();
        // Requests posted but not yet known to be done (their slots are still taken).
        let mut outstanding = 0usize;
        let mut most_outstanding = 0usize;
        for m in 0..total {
            if outstanding == depth {
                let wc = self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
                completed.push(wc.wc.wr_id);
                // The signalled request and every unsignalled one before it are done.
                outstanding -= EVERY;
            }
            let signaled = (m + 1) % EVERY == 0;
            let flags = SendFlags {
                signaled,
                ..SendFlags::default()
            };
            p.qps[0].post(&p.mrs[0], &send(m as u64, m * len as usize, len, flags))?;
            outstanding += 1;
            most_outstanding = most_outstanding.max(outstanding);
        }
        while completed.len() < total / EVERY {
            let wc = self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
            completed.push(wc.wc.wr_id);
        }
        let stray = Self::stray_completions(&mut p.cqs[0])?;
        let want: Vec<u64> = (0..total)
            .filter(|m| (m + 1) % EVERY == 0)
            .map(|m| m as u64)
            .collect();
        if completed != want || !stray.is_empty() {
            let mut all = completed.clone();
            all.extend(stray.iter().map(|w| w.wc.wr_id));
            return Err(self.broken(
                0,
                format!(
                    "with every {EVERY}th of {total} SENDs signalled, the send CQ gave completions for wr_id {all:?}, expected {want:?}"
                ),
            ));
        }
        for m in 0..total {
            let wc = self.next_ok(1, &mut p.cqs[1], &p.qps[1])?;
            let slot = wc.wc.wr_id as usize;
            if wc.wc.byte_len != len
                || p.mrs[1].read(slot * len as usize, len as usize)
                    != pattern(&format!("u{slot}"), len as usize)
            {
                return Err(self.invalid(1, format!("unsignalled SEND {m}: the data differs")));
            }
        }
        self.messages += total as u64;
        Ok(format!(
            "{total} SENDs, every {EVERY}th signalled: {} completions, as signalled; at most {most_outstanding} outstanding on a send queue of {depth}; {total} receives checked",
            completed.len()
        ))
    }

    /// Completions through a completion channel: arm, post, sleep in the event wait, take
    /// and acknowledge the event, poll, re-arm.
    pub(super) fn events(&mut self) -> StepResult {
        const MESSAGES: usize = 8;
        let mut p = self.pair(PairSpec {
            notifying_receiver: true,
            ..PairSpec::default()
        })?;
        let len = 32u32;
        for m in 0..MESSAGES {
            p.qps[1].post_recv(&p.mrs[1], m * len as usize, len, m as u64)?;
        }
        let mut events = 0;
        for m in 0..MESSAGES {
            p.cqs[1].arm()?;
            p.qps[0].post(&p.mrs[0], &send(m as u64, 0, len, SIGNALED))?;
            self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
            if !p.cqs[1].wait_event(self.timeout)? {
                return Err(self.broken(
                    1,
                    format!(
                        "no completion event within {:.1} s for SEND {m} on an armed CQ",
                        self.timeout.as_secs_f64()
                    ),
                ));
            }
            events += 1;
            let wc = self.next_ok(1, &mut p.cqs[1], &p.qps[1])?;
            if wc.wc.wr_id != m as u64 {
                return Err(self.invalid(1, format!("expected receive {m}, got {}", wc.wc.wr_id)));
            }
        }
        self.messages += MESSAGES as u64;
        Ok(format!(
            "{MESSAGES} SENDs, {events} events taken from the channel and acknowledged, CQ re-armed each time"
        ))
    }

    /// A CQ armed solicited-only wakes for a SEND with the solicited flag, not for one
    /// without.
    pub(super) fn solicited(&mut self) -> StepResult {
        let mut p = self.pair(PairSpec {
            notifying_receiver: true,
            ..PairSpec::default()
        })?;
        for m in 0..2 {
            p.qps[1].post_recv(&p.mrs[1], m * 64, 64, m as u64)?;
        }
        p.cqs[1].arm_solicited()?;
        p.qps[0].post(&p.mrs[0], &send(0, 0, 16, SIGNALED))?;
        self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
        // The receive completes (polling sees it) but must raise no event.
        self.next_ok(1, &mut p.cqs[1], &p.qps[1])?;
        if p.cqs[1].wait_event(QUIET_WAIT)? {
            return Err(self.broken(
                1,
                "a SEND without the solicited flag raised an event on a CQ armed solicited-only"
                    .into(),
            ));
        }
        let solicited = SendFlags {
            signaled: true,
            solicited: true,
            inline: false,
        };
        p.qps[0].post(&p.mrs[0], &send(1, 0, 16, solicited))?;
        self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
        let started = Instant::now();
        if !p.cqs[1].wait_event(self.timeout)? {
            return Err(self.broken(
                1,
                format!(
                    "no event within {:.1} s for a solicited SEND on a CQ armed solicited-only",
                    self.timeout.as_secs_f64()
                ),
            ));
        }
        let waited = started.elapsed();
        let wc = self.next_ok(1, &mut p.cqs[1], &p.qps[1])?;
        if wc.wc.wr_id != 1 {
            return Err(self.invalid(1, format!("expected receive 1, got {}", wc.wc.wr_id)));
        }
        self.messages += 2;
        Ok(format!(
            "unsolicited SEND: received, no event in {} ms; solicited SEND: event after {:.3} ms",
            QUIET_WAIT.as_millis(),
            waited.as_secs_f64() * 1000.0
        ))
    }

    /// A QP with three receives posted and a SEND outstanding moves to ERR: all four
    /// complete with IBV_WC_WR_FLUSH_ERR. The SEND is held outstanding because the peer
    /// has no receive posted (it answers RNR NAK, retried forever with rnr_retry 7).
    pub(super) fn flush(&mut self) -> StepResult {
        const RECVS: u64 = 3;
        const SEND_ID: u64 = 100;
        let mut p = self.pair(PairSpec::default())?;
        for r in 0..RECVS {
            p.qps[0].post_recv(&p.mrs[0], r as usize * 64, 64, r)?;
        }
        p.qps[0].post(&p.mrs[0], &send(SEND_ID, 4096, 64, SIGNALED))?;
        // Let the SEND reach the peer and be refused at least once.
        std::thread::sleep(Duration::from_millis(20));
        let early = Self::poll_all(&mut p.cqs[0])?;
        if let Some(w) = early.first() {
            return Err(self.broken(
                0,
                format!(
                    "wr_id {} completed ({}) before the QP was moved to ERR, while the peer had no receive posted",
                    w.wc.wr_id,
                    crate::model::errno::wc_status_name(w.wc.status)
                ),
            ));
        }
        p.qps[0].to_error()?;
        let mut flushed: BTreeMap<u64, u32> = BTreeMap::new();
        for _ in 0..=RECVS {
            let wc = self.next_completion(0, &mut p.cqs[0])?;
            if !wc.is_flush() {
                return Err(p.qps[0].failure(Step::Completion, wc.wc.cause()));
            }
            *flushed.entry(wc.wc.wr_id).or_default() += 1;
        }
        let stray = Self::stray_completions(&mut p.cqs[0])?;
        let want: BTreeMap<u64, u32> = (0..RECVS).chain([SEND_ID]).map(|id| (id, 1)).collect();
        if flushed != want || !stray.is_empty() {
            return Err(self.broken(
                0,
                format!(
                    "moving to ERR flushed wr_id {:?} and then {} more, expected each of {:?} once",
                    flushed,
                    stray.len(),
                    want.keys().collect::<Vec<_>>()
                ),
            ));
        }
        self.flushed = true;
        Ok(format!(
            "{RECVS} receives and 1 SEND (held by the peer's RNR NAKs) flushed: {} × IBV_WC_WR_FLUSH_ERR, each once",
            RECVS + 1
        ))
    }

    fn poll_all(cq: &mut Cq) -> Result<Vec<WcDetail>, Failure> {
        let mut wc = [WcDetail::default(); 16];
        let n = cq.poll_detailed(&mut wc)?;
        Ok(wc[..n].to_vec())
    }
}
