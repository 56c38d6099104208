//! The self-test's semantic steps: the verbs rules RDMA developers get stuck on
//! (unsignalled completions, completion events, solicited events, inline limits, P_Keys,
//! flushing, threads, atomics, SRQ), each on its own QPs so one step's leftovers cannot
//! decide the next one's verdict. A broken rule is `Step::Semantics`: the stack, not the
//! caller, did something the verbs specification says it must not.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{pattern, psn, StepResult, Tester};
use crate::cli::SelftestStep;
use crate::gather::verbs::qp::{
    Access, Cq, Granted, Mr, Opcode, Qp, QpConfig, RtrParams, SendFlags, Srq, WcDetail, WorkRequest,
};
use crate::model::failure::{Cause, Failure, FailureContext, Step};

/// Every semantic step, in the order they run, with its name in the report.
pub(super) const SEMANTIC_STEPS: [(SelftestStep, &str); 10] = [
    (SelftestStep::Unsignaled, "unsignaled"),
    (SelftestStep::Events, "events"),
    (SelftestStep::Solicited, "solicited"),
    (SelftestStep::Inline, "inline"),
    (SelftestStep::Pkey, "pkey"),
    (SelftestStep::Flush, "flush"),
    (SelftestStep::Threads, "threads"),
    (SelftestStep::SharedQp, "shared qp"),
    (SelftestStep::FetchAdd, "fetch-add"),
    (SelftestStep::Srq, "srq"),
];

const ALL_REMOTE: Access = Access {
    remote_write: true,
    remote_read: true,
    remote_atomic: true,
};

/// Each pair's buffers: room for every step's messages (the inline step sizes its own),
/// two pages, so the steps pin little more than the basic walk did (its buffers are gone
/// by then): a 64 KiB memlock limit that fits `-s 16384` fits them too.
const PAIR_MR_BYTES: usize = 8 * 1024;
/// How long a step waits to be sure an event or completion does not come.
const QUIET_WAIT: Duration = Duration::from_millis(300);
/// The largest inline size the search tries; a device that takes this much is reported as
/// "at least" it.
const INLINE_CEILING: u32 = 4096;
/// The threads steps: how many threads, and messages per thread.
const THREADS: usize = 4;
const THREAD_MESSAGES: usize = 16;
const THREAD_MESSAGE_BYTES: u32 = 64;

/// A connected QP on each end with its own CQs and buffers. Fields drop in order: the QPs
/// before the CQs they use.
struct Pair {
    qps: [Qp; 2],
    cqs: [Cq; 2],
    mrs: [Mr; 2],
    granted: [Granted; 2],
}

/// What a pair is built with.
#[derive(Clone, Copy)]
struct PairSpec {
    send_wr: u32,
    recv_wr: u32,
    cq_entries: u32,
    inline: u32,
    /// A completion channel on the second end's CQ (the receiver's), for the event steps.
    notifying_receiver: bool,
    mr_bytes: usize,
}

impl Default for PairSpec {
    fn default() -> Self {
        PairSpec {
            send_wr: 8,
            recv_wr: 8,
            cq_entries: 32,
            inline: 0,
            notifying_receiver: false,
            mr_bytes: PAIR_MR_BYTES,
        }
    }
}

fn send(wr_id: u64, offset: usize, len: u32, flags: SendFlags) -> WorkRequest {
    WorkRequest {
        wr_id,
        op: Opcode::Send,
        flags,
        offset,
        len,
    }
}

const SIGNALED: SendFlags = SendFlags {
    signaled: true,
    solicited: false,
    inline: false,
};

impl Tester {
    pub(super) fn run_semantics(&mut self) {
        for (which, name) in SEMANTIC_STEPS {
            if !self.wants(which) {
                continue;
            }
            self.step(name, |t| match which {
                SelftestStep::Unsignaled => t.unsignaled(),
                SelftestStep::Events => t.events(),
                SelftestStep::Solicited => t.solicited(),
                SelftestStep::Inline => t.inline(),
                SelftestStep::Pkey => t.pkey(),
                SelftestStep::Flush => t.flush(),
                SelftestStep::Threads => t.threads(),
                SelftestStep::SharedQp => t.threads_shared_qp(),
                SelftestStep::FetchAdd => t.fetch_add(),
                SelftestStep::Srq => t.srq(),
                SelftestStep::Basic => unreachable!("basic is the walk before these steps"),
            });
        }
    }

    /// A broken verbs rule, on end `i`'s device.
    fn broken(&self, i: usize, what: String) -> Failure {
        Failure::new(
            Step::Semantics,
            Cause::Invalid { what },
            FailureContext {
                device: self.device_name(i),
                port: self.port,
                gid_index: Some(self.gid_index[i]),
                ..Default::default()
            },
        )
    }

    fn device_name(&self, i: usize) -> String {
        self.ends[i]
            .ctx
            .as_ref()
            .map(|c| c.name().to_string())
            .unwrap_or_default()
    }

    fn config<'a>(&self, i: usize, send_cq: &'a Cq, recv_cq: &'a Cq) -> QpConfig<'a> {
        QpConfig {
            send_cq,
            recv_cq,
            srq: None,
            max_send_wr: 8,
            max_recv_wr: 8,
            max_inline_data: 0,
            port: self.port,
            gid_index: Some(self.gid_index[i]),
        }
    }

    fn new_cq(&self, i: usize, entries: u32, notifying: bool) -> Result<Cq, Failure> {
        let ctx = self.ends[i].ctx.as_ref().expect("opened");
        if notifying {
            Cq::create_notifying(ctx, entries)
        } else {
            Cq::create(ctx, entries)
        }
    }

    fn new_mr(&self, i: usize) -> Result<Mr, Failure> {
        self.new_mr_of(i, PAIR_MR_BYTES)
    }

    fn new_mr_of(&self, i: usize, bytes: usize) -> Result<Mr, Failure> {
        Mr::register(self.ends[i].pd.as_ref().expect("pd"), bytes, ALL_REMOTE)
    }

    /// INIT, RTR and RTS for `a` on end 0 and `b` on end 1, connected to each other.
    fn connect(&self, a: &Qp, b: &Qp) -> Result<(), Failure> {
        let qps = [a, b];
        let mtu = self.path_mtu();
        for qp in qps {
            qp.to_init(ALL_REMOTE)?;
        }
        for i in 0..2 {
            let peer = 1 - i;
            qps[i].to_rtr(&RtrParams {
                path_mtu: mtu,
                dest_qpn: qps[peer].qpn(),
                dest_psn: psn(peer),
                dest_lid: self.ends[peer].port.as_ref().map_or(0, |p| p.lid),
                grh: Some((
                    self.ends[peer].gid.as_ref().expect("gid").0,
                    self.gid_index[i],
                )),
                max_dest_rd_atomic: 1,
            })?;
        }
        for (i, qp) in qps.iter().enumerate() {
            qp.to_rts(psn(i), 1)?;
        }
        Ok(())
    }

    fn pair(&self, spec: PairSpec) -> Result<Pair, Failure> {
        let cqs = [
            self.new_cq(0, spec.cq_entries, false)?,
            self.new_cq(1, spec.cq_entries, spec.notifying_receiver)?,
        ];
        let mrs = [
            self.new_mr_of(0, spec.mr_bytes)?,
            self.new_mr_of(1, spec.mr_bytes)?,
        ];
        let mut made = Vec::new();
        for (i, cq) in cqs.iter().enumerate() {
            let mut cfg = self.config(i, cq, cq);
            cfg.max_send_wr = spec.send_wr;
            cfg.max_recv_wr = spec.recv_wr;
            cfg.max_inline_data = spec.inline;
            made.push(Qp::create_configured(
                self.ends[i].pd.as_ref().expect("pd"),
                &cfg,
            )?);
        }
        let (b, gb) = made.pop().expect("two");
        let (a, ga) = made.pop().expect("two");
        self.connect(&a, &b)?;
        Ok(Pair {
            qps: [a, b],
            cqs,
            mrs,
            granted: [ga, gb],
        })
    }

    /// Busy-polls `cq` for one completion (end `i`'s, for the failure's context).
    fn next_completion(&self, i: usize, cq: &mut Cq) -> Result<WcDetail, Failure> {
        let deadline = Instant::now() + self.timeout;
        let mut wc = [WcDetail::default(); 1];
        loop {
            if cq.poll_detailed(&mut wc)? == 1 {
                return Ok(wc[0]);
            }
            if Instant::now() >= deadline {
                let mut f = Failure::new(
                    Step::Poll,
                    Cause::Timeout {
                        waited_ms: self.timeout.as_millis() as u64,
                        waiting_for: Some("completion"),
                    },
                    FailureContext {
                        device: self.device_name(i),
                        port: self.port,
                        gid_index: Some(self.gid_index[i]),
                        ..Default::default()
                    },
                );
                f.context.link_layer = self.ends[i].port.as_ref().map(|p| p.link_layer.clone());
                return Err(f);
            }
            if let Some(stop) = crate::traffic::interrupted_wait() {
                return Err(stop);
            }
            std::thread::yield_now();
        }
    }

    /// The next completion, which must be a success (a failed one is explained as such).
    fn next_ok(&self, i: usize, cq: &mut Cq, qp: &Qp) -> Result<WcDetail, Failure> {
        let wc = self.next_completion(i, cq)?;
        if !wc.wc.ok() {
            return Err(qp.failure(Step::Completion, wc.wc.cause()));
        }
        Ok(wc)
    }

    /// Completions that arrive within `QUIET_WAIT` (there should be none).
    fn stray_completions(cq: &mut Cq) -> Result<Vec<WcDetail>, Failure> {
        let until = Instant::now() + QUIET_WAIT;
        let mut seen = Vec::new();
        let mut wc = [WcDetail::default(); 16];
        while Instant::now() < until {
            let n = cq.poll_detailed(&mut wc)?;
            seen.extend_from_slice(&wc[..n]);
            std::thread::yield_now();
        }
        Ok(seen)
    }

    // ---------------------------------------------------------------------------------
    // unsignaled

    /// A run of SENDs with only every k-th signalled. Only the signalled ones complete,
    /// and the sender never has more requests outstanding than the send queue holds: an
    /// unsignalled request's slot is free only once a later signalled one has completed
    /// and been polled.
    fn unsignaled(&mut self) -> StepResult {
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

    // ---------------------------------------------------------------------------------
    // events

    /// Completions through a completion channel: arm, post, sleep in the event wait, take
    /// and acknowledge the event, poll, re-arm.
    fn events(&mut self) -> StepResult {
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

    // ---------------------------------------------------------------------------------
    // solicited

    /// A CQ armed solicited-only wakes for a SEND with the solicited flag, not for one
    /// without.
    fn solicited(&mut self) -> StepResult {
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

    // ---------------------------------------------------------------------------------
    // inline

    /// The largest max_inline_data the first device grants at QP create (a binary search:
    /// too much is refused with EINVAL or ENOMEM).
    fn device_max_inline(&self) -> Result<u32, Failure> {
        let cq = self.new_cq(0, 4, false)?;
        let pd = self.ends[0].pd.as_ref().expect("pd");
        let (mut fits, mut too_big) = (0u32, INLINE_CEILING + 1);
        while too_big - fits > 1 {
            let mid = fits + (too_big - fits) / 2;
            let mut cfg = self.config(0, &cq, &cq);
            cfg.max_inline_data = mid;
            match Qp::create_configured(pd, &cfg) {
                Ok(_) => fits = mid,
                Err(f)
                    if matches!(f.cause, Cause::Errno { errno, .. }
                        if errno == libc::EINVAL || errno == libc::ENOMEM) =>
                {
                    too_big = mid
                }
                Err(f) => return Err(f),
            }
        }
        Ok(fits)
    }

    /// A SEND of exactly max_inline_data bytes inline arrives intact; one byte more is
    /// refused at post, and the refusal is explained.
    fn inline(&mut self) -> StepResult {
        let asked = self.device_max_inline()?;
        let mut p = self.pair(PairSpec {
            inline: asked,
            // The granted size may round the asked one up; a page more covers it.
            mr_bytes: (asked as usize + 4096).next_multiple_of(4096),
            ..PairSpec::default()
        })?;
        let max = p.qps[0].max_inline_data();
        if max == 0 {
            return Ok(format!(
                "not supported by {} (max_inline_data 0)",
                self.device_name(0)
            ));
        }
        let len = max as usize;
        let room = p.mrs[1].size();
        if len + 1 > room {
            return Err(self.invalid(
                0,
                format!("max_inline_data {max} is larger than the test's buffer"),
            ));
        }
        p.qps[1].post_recv(&p.mrs[1], 0, room as u32, 0)?;
        let data = pattern("inline", len + 1);
        p.mrs[0].write(0, &data);
        let inline = SendFlags {
            signaled: true,
            solicited: false,
            inline: true,
        };
        p.qps[0].post(&p.mrs[0], &send(1, 0, max, inline))?;
        // Overwrite the source at once: inline data was copied at post, so what arrives
        // must still be the original.
        p.mrs[0].fill(0, len, 0);
        self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
        let wc = self.next_ok(1, &mut p.cqs[1], &p.qps[1])?;
        if wc.wc.byte_len != max || p.mrs[1].read(0, len) != data[..len] {
            return Err(self.invalid(
                1,
                format!(
                    "the {max}-byte inline SEND arrived as {} bytes or changed",
                    wc.wc.byte_len
                ),
            ));
        }
        p.mrs[0].write(0, &data);
        let refused = match p.qps[0].post(&p.mrs[0], &send(2, 0, max + 1, inline)) {
            Ok(()) => {
                return Err(self.broken(
                    0,
                    format!(
                    "an inline SEND of {} bytes was accepted, above the QP's max_inline_data {max}",
                    max + 1
                ),
                ))
            }
            Err(f) => f,
        };
        let x = self.explain_with(refused.clone(), |k| {
            k.inline_bytes = Some(max + 1);
            k.max_inline_data = Some(max);
        });
        self.messages += 1;
        let ceiling = if asked == INLINE_CEILING {
            format!(" (at least: the search stops at {INLINE_CEILING})")
        } else {
            String::new()
        };
        Ok(format!(
            "max_inline_data {max}{ceiling}: a {max}-byte inline SEND arrived intact; {} bytes refused: {} [{}: {}]",
            max + 1,
            refused.cause,
            x.explanation.code,
            x.explanation.summary
        ))
    }

    // ---------------------------------------------------------------------------------
    // pkey

    /// The port's P_Key table; a QP moved to INIT with the default P_Key's index holds
    /// it; an index past the table is refused at INIT, and the refusal is explained.
    fn pkey(&mut self) -> StepResult {
        let ctx = self.ends[0].ctx.clone().expect("opened");
        let table = ctx.pkey_table(self.port)?;
        // The default P_Key is 0xffff (full member) or 0x7fff (limited member).
        let Some(default) = table.iter().position(|k| k & 0x7fff == 0x7fff) else {
            return Err(self.broken(
                0,
                format!(
                    "the P_Key table of {}/{} has no default P_Key (0xffff or 0x7fff): {}",
                    ctx.name(),
                    self.port,
                    show_pkeys(&table)
                ),
            ));
        };
        let cq = self.new_cq(0, 4, false)?;
        let pd = self.ends[0].pd.clone().expect("pd");
        let (qp, _) = Qp::create_configured(&pd, &self.config(0, &cq, &cq))?;
        qp.to_init_pkey(ALL_REMOTE, default as u16)?;
        let held = qp.pkey_index()?;
        if usize::from(held) != default {
            return Err(self.broken(
                0,
                format!("INIT with P_Key index {default} left the QP at index {held}"),
            ));
        }
        let past = table.len() as u16;
        let (outside, _) = Qp::create_configured(&pd, &self.config(0, &cq, &cq))?;
        let checked = format!(
            "P_Key table {}; INIT with index {default} (0x{:04x}) holds it",
            show_pkeys(&table),
            table[default]
        );
        match outside.to_init_pkey(ALL_REMOTE, past) {
            // Not a broken rule: correct code never gives such an index. But code that
            // does works here and fails on a device that checks, so say so.
            Ok(()) => Ok(format!(
                "{checked}; index {past}, past the table, accepted at INIT by {} (its kernel does not check P_Key indices: a wrong index goes unnoticed here and fails where they are checked)",
                ctx.name()
            )),
            Err(refused) => {
                let x = self.explain_with(refused.clone(), |k| {
                    k.pkey_index = Some(u32::from(past));
                    k.pkey_table_len = Some(table.len() as u32);
                });
                Ok(format!(
                    "{checked}; index {past} refused: {} [{}: {}]",
                    refused.cause, x.explanation.code, x.explanation.summary
                ))
            }
        }
    }

    // ---------------------------------------------------------------------------------
    // flush

    /// A QP with three receives posted and a SEND outstanding moves to ERR: all four
    /// complete with IBV_WC_WR_FLUSH_ERR. The SEND is held outstanding because the peer
    /// has no receive posted (it answers RNR NAK, retried forever with rnr_retry 7).
    fn flush(&mut self) -> StepResult {
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

    // ---------------------------------------------------------------------------------
    // threads

    /// Several threads, each on its own QP pair; all QPs of an end share its PD and one
    /// CQ, which every thread polls (a completion may be another thread's: it is tallied
    /// for its owner). Each message is checked by the thread that sent it.
    fn threads(&mut self) -> StepResult {
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
    fn threads_shared_qp(&mut self) -> StepResult {
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

    // ---------------------------------------------------------------------------------
    // atomics

    /// Names the device without atomics, if one of the two has none.
    pub(super) fn without_atomics(&self) -> Result<Option<String>, Failure> {
        for i in 0..2 {
            let ctx = self.ends[i].ctx.as_ref().expect("opened");
            if !ctx.caps()?.has_atomics() {
                return Ok(Some(format!(
                    "not supported by {} (atomic_cap IBV_ATOMIC_NONE)",
                    ctx.name()
                )));
            }
        }
        Ok(None)
    }

    /// Fetch-and-add returns the old word and adds; compare-and-swap on the sum then
    /// replaces it.
    fn fetch_add(&mut self) -> StepResult {
        if let Some(why) = self.without_atomics()? {
            return Ok(why);
        }
        const START: u64 = 0x0000_0001_0000_0000;
        const ADD: u64 = 0x0000_0000_0000_0042;
        const SWAP: u64 = 0x5555_aaaa_5555_aaaa;
        let mut p = self.pair(PairSpec::default())?;
        p.mrs[1].write(0, &START.to_ne_bytes());
        let (addr, rkey) = (p.mrs[1].addr(), p.mrs[1].rkey());
        let word =
            |mr: &Mr, at: usize| u64::from_ne_bytes(mr.read(at, 8).try_into().expect("8 bytes"));
        let atomic = |wr_id, op| WorkRequest {
            wr_id,
            op,
            flags: SIGNALED,
            offset: 8 * wr_id as usize,
            len: 8,
        };
        let fa = Opcode::FetchAdd {
            remote_addr: addr,
            rkey,
            add: ADD,
        };
        p.qps[0].post(&p.mrs[0], &atomic(1, fa))?;
        self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
        let (old, now) = (word(&p.mrs[0], 8), word(&p.mrs[1], 0));
        if old != START || now != START + ADD {
            return Err(self.broken(
                0,
                format!(
                    "fetch-and-add of 0x{ADD:x} on 0x{START:016x} returned 0x{old:016x} and left 0x{now:016x}"
                ),
            ));
        }
        let cas = Opcode::CompareSwap {
            remote_addr: addr,
            rkey,
            compare: START + ADD,
            swap: SWAP,
        };
        p.qps[0].post(&p.mrs[0], &atomic(2, cas))?;
        self.next_ok(0, &mut p.cqs[0], &p.qps[0])?;
        let (old, now) = (word(&p.mrs[0], 16), word(&p.mrs[1], 0));
        if old != START + ADD || now != SWAP {
            return Err(self.broken(
                0,
                format!(
                    "compare-and-swap after fetch-and-add returned 0x{old:016x} and left 0x{now:016x}"
                ),
            ));
        }
        self.messages += 2;
        Ok(format!(
            "0x{START:016x} + 0x{ADD:x} returned the old word; compare-and-swap on the sum -> 0x{SWAP:016x}"
        ))
    }

    // ---------------------------------------------------------------------------------
    // srq

    /// One shared receive queue on the second end serves two QPs: receives posted once,
    /// consumed by SENDs arriving on either.
    fn srq(&mut self) -> StepResult {
        const PER_QP: usize = 2;
        let ctx = self.ends[1].ctx.clone().expect("opened");
        if ctx.caps()?.max_srq == 0 {
            return Ok(format!("not supported by {} (max_srq 0)", ctx.name()));
        }
        let mut cqs = [self.new_cq(0, 32, false)?, self.new_cq(1, 32, false)?];
        let mrs = [self.new_mr(0)?, self.new_mr(1)?];
        let srq = Srq::create(self.ends[1].pd.as_ref().expect("pd"), 2 * PER_QP as u32)?;
        let mut pairs: Vec<[Qp; 2]> = Vec::new();
        for _ in 0..2 {
            let pd0 = self.ends[0].pd.as_ref().expect("pd");
            let pd1 = self.ends[1].pd.as_ref().expect("pd");
            let a = Qp::create_configured(pd0, &self.config(0, &cqs[0], &cqs[0]))?.0;
            let mut cfg = self.config(1, &cqs[1], &cqs[1]);
            cfg.srq = Some(&srq);
            let b = Qp::create_configured(pd1, &cfg)?.0;
            self.connect(&a, &b)?;
            pairs.push([a, b]);
        }
        let len = 32u32;
        for slot in 0..2 * PER_QP {
            srq.post_recv(&mrs[1], slot * len as usize, len, slot as u64)?;
        }
        let mut sent = Vec::new();
        for (q, pair) in pairs.iter().enumerate() {
            for m in 0..PER_QP {
                let at = (q * PER_QP + m) * len as usize;
                let data = pattern(&format!("srq qp {q} message {m}"), len as usize);
                mrs[0].write(at, &data);
                pair[0].post(&mrs[0], &send(at as u64, at, len, SIGNALED))?;
                sent.push((pair[1].qpn(), data));
            }
        }
        for _ in 0..sent.len() {
            self.next_ok(0, &mut cqs[0], &pairs[0][0])?;
        }
        let mut per_qp: BTreeMap<u32, usize> = BTreeMap::new();
        for _ in 0..sent.len() {
            let wc = self.next_ok(1, &mut cqs[1], &pairs[0][1])?;
            let got = mrs[1].read(wc.wc.wr_id as usize * len as usize, len as usize);
            let Some(k) = sent
                .iter()
                .position(|(qpn, d)| *qpn == wc.qp_num && *d == got)
            else {
                return Err(self.invalid(
                    1,
                    format!(
                        "SRQ receive {} on QPN 0x{:06x}: not a message sent to that QP",
                        wc.wc.wr_id, wc.qp_num
                    ),
                ));
            };
            sent.remove(k);
            *per_qp.entry(wc.qp_num).or_default() += 1;
        }
        drop(pairs);
        self.messages += (2 * PER_QP) as u64;
        Ok(format!(
            "{} receives posted once on one SRQ; {}: each message checked",
            2 * PER_QP,
            per_qp
                .iter()
                .map(|(qpn, n)| format!("{n} SENDs on QPN 0x{qpn:06x}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
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

fn show_pkeys(table: &[u16]) -> String {
    let keys: Vec<String> = table
        .iter()
        .enumerate()
        .map(|(i, k)| format!("[{i}] 0x{k:04x}"))
        .collect();
    keys.join(" ")
}
