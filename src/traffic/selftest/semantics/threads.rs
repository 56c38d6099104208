//! Threads: QPs per thread sharing a PD and a CQ, and threads sharing one QP.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use super::{send, Pair, PairSpec, SIGNALED, THREADS, THREAD_MESSAGES, THREAD_MESSAGE_BYTES};
use crate::gather::verbs::qp::{Qp, WcDetail};
use crate::model::failure::{Cause, Failure, FailureContext, Step};
use crate::traffic::selftest::{pattern, StepResult, Tester};

impl Tester {
    /// Several threads, each on its own QP pair; all QPs of an end share its PD and one
    /// CQ, which every thread polls (a completion may be another thread's: it is tallied
    /// for its owner). Each message is checked by the thread that sent it.
    pub(super) fn threads(&mut self) -> StepResult {
        let entries = (2 * THREADS * THREAD_MESSAGES) as u32;
        let cqs = [
            self.new_cq(0, entries, false)?,
            self.new_cq(1, entries, false)?,
        ];
        let mut mrs = [self.new_mr(0)?, self.new_mr(1)?];
        let mut qps: Vec<[Qp; 2]> = Vec::new();
        for _ in 0..THREADS {
            let mut made = Vec::new();
            for (i, cq) in cqs.iter().enumerate() {
                let mut cfg = self.config(i, cq, cq);
                cfg.max_send_wr = THREAD_MESSAGES as u32;
                cfg.max_recv_wr = THREAD_MESSAGES as u32;
                let pd = self.ends[i].pd.as_ref().expect("pd");
                made.push(Qp::create_configured(pd, &cfg)?.0);
            }
            let b = made.pop().expect("two");
            let a = made.pop().expect("two");
            self.connect(&a, &b)?;
            qps.push([a, b]);
        }
        let timeout = self.timeout;
        // Per thread: sends and receives completed.
        let tally = Mutex::new(vec![(0usize, 0usize); THREADS]);
        let [mr0, mr1] = &mut mrs;
        let senders = mr0.split_for_threads(THREADS);
        let receivers = mr1.split_for_threads(THREADS);
        std::thread::scope(|s| {
            let handles: Vec<_> = senders
                .into_iter()
                .zip(receivers)
                .zip(&qps)
                .enumerate()
                .map(|(n, ((mut out, mut inbox), pair))| {
                    let (tx, rx) = (pair[0].for_threads(), pair[1].for_threads());
                    let cqs = [cqs[0].for_threads(), cqs[1].for_threads()];
                    let tally = &tally;
                    s.spawn(move || -> Result<(), Failure> {
                        let len = THREAD_MESSAGE_BYTES;
                        for m in 0..THREAD_MESSAGES {
                            let at = m * len as usize;
                            inbox.write(at, &[0; THREAD_MESSAGE_BYTES as usize]);
                            rx.post_recv(&inbox, at, len, tag(n, m))?;
                            out.write(at, &pattern(&format!("thread {n} message {m}"), len as usize));
                            tx.post(&out, &send(tag(n, m), at, len, SIGNALED))?;
                        }
                        let deadline = Instant::now() + timeout;
                        let mut wc = [WcDetail::default(); 16];
                        loop {
                            for (end, cq) in cqs.iter().enumerate() {
                                let got = cq.poll(&mut wc).map_err(|e| poll_failure(e, end))?;
                                let mut t = tally.lock().expect("no thread panics holding it");
                                for w in &wc[..got] {
                                    if !w.wc.ok() {
                                        return Err(Failure::new(
                                            Step::Completion,
                                            w.wc.cause(),
                                            FailureContext::default(),
                                        ));
                                    }
                                    let owner = (w.wc.wr_id >> 32) as usize;
                                    if end == 0 {
                                        t[owner].0 += 1;
                                    } else {
                                        t[owner].1 += 1;
                                    }
                                }
                            }
                            let done = tally.lock().expect("no thread panics holding it")[n];
                            if done == (THREAD_MESSAGES, THREAD_MESSAGES) {
                                break;
                            }
                            if Instant::now() >= deadline {
                                return Err(Failure::new(
                                    Step::Semantics,
                                    Cause::invalid(format!(
                                        "thread {n}: {} of {THREAD_MESSAGES} sends and {} receives completed within {:.1} s",
                                        done.0, done.1, timeout.as_secs_f64()
                                    )),
                                    FailureContext::default(),
                                ));
                            }
                            std::thread::yield_now();
                        }
                        for m in 0..THREAD_MESSAGES {
                            let at = m * len as usize;
                            if inbox.read(at, len as usize)
                                != pattern(&format!("thread {n} message {m}"), len as usize)
                            {
                                return Err(Failure::new(
                                    Step::Verify,
                                    Cause::invalid(format!(
                                        "thread {n} message {m}: the data that arrived differs from what was sent"
                                    )),
                                    FailureContext::default(),
                                ));
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            self.join_threads(handles)
        })?;
        self.messages += (THREADS * THREAD_MESSAGES) as u64;
        drop(qps);
        Ok(format!(
            "{THREADS} threads × {THREAD_MESSAGES} SENDs on their own QPs, one PD and one CQ per end polled by all: every message checked"
        ))
    }

    /// Several threads post SENDs on one QP at once (libibverbs serialises them); every
    /// message arrives exactly once, intact.
    pub(super) fn threads_shared_qp(&mut self) -> StepResult {
        let total = THREADS * THREAD_MESSAGES;
        let mut p = self.pair(PairSpec {
            send_wr: total as u32,
            recv_wr: total as u32,
            cq_entries: 2 * total as u32,
            ..PairSpec::default()
        })?;
        let len = THREAD_MESSAGE_BYTES;
        for slot in 0..total {
            p.qps[1].post_recv(&p.mrs[1], slot * len as usize, len, slot as u64)?;
        }
        let timeout = self.timeout;
        let sent = Mutex::new(vec![0usize; THREADS]);
        let Pair { qps, cqs, mrs, .. } = &mut p;
        let [mr0, _] = mrs;
        let pieces = mr0.split_for_threads(THREADS);
        let tx = qps[0].for_threads();
        let send_cq = cqs[0].for_threads();
        std::thread::scope(|s| {
            let handles: Vec<_> = pieces
                .into_iter()
                .enumerate()
                .map(|(n, mut out)| {
                    let (tx, send_cq, sent) = (&tx, &send_cq, &sent);
                    s.spawn(move || -> Result<(), Failure> {
                        for m in 0..THREAD_MESSAGES {
                            let at = m * len as usize;
                            out.write(at, &pattern(&format!("shared {n} message {m}"), len as usize));
                            tx.post(&out, &send(tag(n, m), at, len, SIGNALED))?;
                        }
                        let deadline = Instant::now() + timeout;
                        let mut wc = [WcDetail::default(); 16];
                        loop {
                            let got = send_cq.poll(&mut wc).map_err(|e| poll_failure(e, 0))?;
                            let mut done = sent.lock().expect("no thread panics holding it");
                            for w in &wc[..got] {
                                if !w.wc.ok() {
                                    return Err(Failure::new(
                                        Step::Completion,
                                        w.wc.cause(),
                                        FailureContext::default(),
                                    ));
                                }
                                done[(w.wc.wr_id >> 32) as usize] += 1;
                            }
                            if done[n] == THREAD_MESSAGES {
                                return Ok(());
                            }
                            drop(done);
                            if Instant::now() >= deadline {
                                return Err(Failure::new(
                                    Step::Semantics,
                                    Cause::invalid(format!(
                                        "thread {n}: its SENDs on the shared QP did not all complete within {:.1} s",
                                        timeout.as_secs_f64()
                                    )),
                                    FailureContext::default(),
                                ));
                            }
                            std::thread::yield_now();
                        }
                    })
                })
                .collect();
            self.join_threads(handles)
        })?;
        // Every message once: the receives filled in arrival order, so look each one up.
        let mut expected: BTreeMap<Vec<u8>, usize> = (0..THREADS)
            .flat_map(|n| (0..THREAD_MESSAGES).map(move |m| (n, m)))
            .map(|(n, m)| (pattern(&format!("shared {n} message {m}"), len as usize), 0))
            .collect();
        for _ in 0..total {
            let wc = self.next_ok(1, &mut p.cqs[1], &p.qps[1])?;
            let got = p.mrs[1].read(wc.wc.wr_id as usize * len as usize, len as usize);
            match expected.get_mut(&got) {
                Some(count) => *count += 1,
                None => {
                    return Err(self.invalid(
                        1,
                        format!("receive {}: a message no thread sent", wc.wc.wr_id),
                    ))
                }
            }
        }
        if let Some((_, n)) = expected.iter().find(|(_, n)| **n != 1) {
            return Err(self.broken(
                1,
                format!("a message sent once on the shared QP arrived {n} times"),
            ));
        }
        self.messages += total as u64;
        Ok(format!(
            "{THREADS} threads × {THREAD_MESSAGES} SENDs posted at once on one QP: all {total} arrived once, intact"
        ))
    }

    /// Waits for every test thread of a step; the first one's failure (in thread order),
    /// with the device and port of end 0. A thread that panicked broke a verbs rule.
    fn join_threads(
        &self,
        handles: Vec<std::thread::ScopedJoinHandle<'_, Result<(), Failure>>>,
    ) -> Result<(), Failure> {
        let results: Vec<Result<(), Failure>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(self.broken(0, "a test thread panicked".into())))
            })
            .collect();
        results
            .into_iter()
            .collect::<Result<(), Failure>>()
            .map_err(|f| self.with_end(0, f))
    }

    /// A failure from a thread, with the device and port of end `i`.
    fn with_end(&self, i: usize, mut f: Failure) -> Failure {
        if f.context.device.is_empty() {
            f.context.device = self.device_name(i);
            f.context.port = self.port;
            f.context.gid_index = Some(self.gid_index[i]);
        }
        f
    }
}

/// A thread's wr_id: the thread in the high half, the message in the low.
fn tag(thread: usize, message: usize) -> u64 {
    ((thread as u64) << 32) | message as u64
}

fn poll_failure(errno: i32, end: usize) -> Failure {
    Failure::new(
        Step::Poll,
        Cause::errno(errno),
        FailureContext {
            note: Some(format!("polling end {}'s shared CQ from a thread", end + 1)),
            ..Default::default()
        },
    )
}
