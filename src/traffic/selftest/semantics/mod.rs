//! The self-test's semantic steps: the verbs rules RDMA developers get stuck on
//! (unsignalled completions, completion events, solicited events, inline limits, P_Keys,
//! flushing, threads, atomics, SRQ), each on its own QPs so one step's leftovers cannot
//! decide the next one's verdict. A broken rule is `Step::Semantics`: the stack, not the
//! caller, did something the verbs specification says it must not.

mod atomics;
mod completions;
mod limits;
mod srq;
mod threads;

use std::time::{Duration, Instant};

use super::{psn, Tester};
use crate::cli::SelftestStep;
use crate::gather::verbs::qp::{
    Access, Cq, Granted, Mr, Opcode, Qp, QpConfig, RtrParams, SendFlags, WcDetail, WorkRequest,
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
}
