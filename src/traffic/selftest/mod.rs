//! `rdmactl selftest`: two RC QPs in one process (on one device, or one on each of two
//! devices), connected to each other, running every verbs step in turn and reporting each:
//! ok or FAIL, how long it took, and for a failure the step value an explainer can read.
//!
//! `setup` connects the two ends, `basic` runs one message of each kind over them,
//! `semantics` the verbs rules by family; `cm` is `selftest --cm`'s loopback through the
//! connection manager.

use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

mod basic;
pub mod cm;
mod report;
mod semantics;
mod setup;

pub use report::SelftestReport;

use crate::cli::{GidIndexArg, SelftestArgs, SelftestStep};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::gather::verbs::qp::{Context, Cq, Mr, Pd, Qp, QpPortAttrs, Wc};
use crate::model::device::GidType;
use crate::model::diagnostic::FailureReport;
use crate::model::facts::QpFacts;
use crate::model::failure::{Cause, Failure, FailureContext, Step};
use crate::model::gid::Gid;
use crate::model::results::StepLine;
use crate::traffic::failure::{self, GidChoice, Known};
use crate::wire::exchange as oob;

/// One end of the loopback.
#[derive(Default)]
struct LoopbackEnd {
    ctx: Option<Rc<Context>>,
    port: Option<QpPortAttrs>,
    gid: Option<(Gid, Option<GidType>)>,
    pd: Option<Rc<Pd>>,
    mr: Option<Mr>,
    cq: Option<Cq>,
    qp: Option<Qp>,
}

// Drop order matters: QP, CQ, MR, PD, context.
impl Drop for LoopbackEnd {
    fn drop(&mut self) {
        self.qp.take();
        self.cq.take();
        self.mr.take();
        self.pd.take();
        self.ctx.take();
    }
}

/// The verbs loopback: every step in turn, each reported. The report says which failed
/// (`ok`); a usage problem (a missing device or GID) is an error instead.
pub fn run(ctx: &Ctx, args: &SelftestArgs) -> Result<SelftestReport> {
    let fixed_index = match args.on.gid_index {
        GidIndexArg::Auto => None,
        GidIndexArg::Index(i) => Some(i),
    };
    if args.devices.len() > 2 {
        return Err(Error::Usage("give at most two devices (-d A -d B)".into()));
    }
    if args.size < 8 || args.size > 1 << 30 {
        return Err(Error::Usage(format!(
            "-s {}: the size must be 8 to {} bytes",
            args.size,
            1u32 << 30
        )));
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(Error::Usage(format!(
            "--timeout {}: give 0 < SECS <= 3600",
            args.timeout
        )));
    }
    // Both devices and the port are looked up before anything is opened: a wrong -d or -i
    // is one line naming what exists, not a failed step.
    let wanted: [Option<&str>; 2] = match args.devices.as_slice() {
        [] => [None, None],
        [a] => [Some(a.as_str()), Some(a.as_str())],
        [a, b, ..] => [Some(a.as_str()), Some(b.as_str())],
    };
    let resolved = [
        crate::gather::inventory::device_port(&ctx.sysfs, wanted[0], args.on.port)?,
        crate::gather::inventory::device_port(&ctx.sysfs, wanted[1], args.on.port)?,
    ];
    for device in &resolved {
        crate::traffic::failure::refuse_iwarp_without_cm(&ctx.sysfs, device, "selftest")?;
    }
    let names: [Option<&str>; 2] = [Some(resolved[0].as_str()), Some(resolved[1].as_str())];
    let mut t = Tester {
        ends: [LoopbackEnd::default(), LoopbackEnd::default()],
        port: args.on.port,
        fixed_index,
        gid_index: [0; 2],
        choices: Vec::new(),
        sysfs: ctx.sysfs.clone(),
        size: args.size,
        timeout: Duration::from_secs_f64(args.timeout),
        steps: Vec::new(),
        stopped: false,
        open_error: None,
        wanted: args.steps.clone(),
        messages: 0,
        flushed: false,
    };
    // A first Ctrl-C ends the test at its next wait or step, with the steps so far
    // (`cmd::selftest` starts catching before the lookups above; this keeps the engine
    // safe to call on its own).
    crate::interrupt::catch();
    let watches: Vec<crate::traffic::counters::CounterWatch> = {
        let mut distinct = vec![resolved[0].as_str()];
        if resolved[1] != resolved[0] {
            distinct.push(resolved[1].as_str());
        }
        distinct
            .iter()
            .map(|d| crate::traffic::counters::CounterWatch::start(&ctx.sysfs, d, args.on.port))
            .collect()
    };
    t.run_all(names);
    let mut deltas = watches
        .iter()
        .map(crate::traffic::counters::CounterWatch::stop);
    // selftest's steps are mostly SENDs, and one of them READs; its flush step holds a SEND
    // outstanding with RNR NAKs on purpose (its line says so).
    let mix = crate::model::counter::TrafficMix {
        sends: t.messages,
        reads: true,
        rnr_on_purpose: t.flushed,
    };
    let counters =
        crate::traffic::counters::judge(deltas.next().flatten(), deltas.next().flatten(), mix);
    let [device, peer_device] = t
        .ends
        .each_ref()
        .map(|e| e.ctx.as_ref().map(|c| c.name().to_string()));
    if let Some(mut err) = t.open_error.take() {
        // An empty slot or an index past the table: say so with the rules' words, which
        // name the index that would work.
        if let Error::NoSuchGid { hint, .. } = &mut err {
            if let Some(x) = t.steps.iter().find_map(|s| s.failure.as_ref()) {
                *hint = format!("{}; {}", x.explanation.message, x.explanation.fix_text());
            }
        }
        return Err(err);
    }
    // Asked last: a signal caught anywhere in the run (between waits, in a step that
    // failed for another reason, after the last step) stops it; the report names it.
    let signal = crate::interrupt::caught();
    let ok = t.steps.iter().all(|s| s.ok) && !t.stopped && signal.is_none();
    Ok(SelftestReport {
        mode: "verbs",
        device,
        peer_device,
        port: args.on.port,
        server_address: None,
        client_address: None,
        gid_index: Some(t.gid_index[0]),
        gid_selection: std::mem::take(&mut t.choices),
        size: args.size,
        steps: std::mem::take(&mut t.steps),
        counters,
        signal,
        ok,
    })
}

struct Tester {
    ends: [LoopbackEnd; 2],
    port: u32,
    /// `-g N`; None is `-g auto`, chosen per device.
    fixed_index: Option<u32>,
    gid_index: [u32; 2],
    choices: Vec<GidChoice>,
    sysfs: PathBuf,
    size: u32,
    timeout: Duration,
    steps: Vec<StepLine>,
    stopped: bool,
    /// A missing device or GID is a usage problem, not a test result.
    open_error: Option<Error>,
    /// `--steps`; empty is every step.
    wanted: Vec<SelftestStep>,
    /// Messages the steps sent, for judging the port counters against.
    messages: u64,
    /// The flush step ran (it provokes RNR NAKs on purpose).
    flushed: bool,
}

type StepResult = std::result::Result<String, Failure>;

impl Tester {
    fn step(&mut self, name: &'static str, f: impl FnOnce(&mut Tester) -> StepResult) {
        // A signal caught between two steps (or in one that had no wait to notice it)
        // ends the test before the next one.
        if self.stopped || crate::interrupt::caught().is_some() {
            self.stopped = true;
            return;
        }
        let start = Instant::now();
        let result = f(self);
        let elapsed_us = start.elapsed().as_secs_f64() * 1e6;
        let (ok, detail, failure) = match result {
            Ok(detail) => (true, detail, None),
            Err(f) => {
                self.stopped = true;
                (false, String::new(), Some(self.explain(f)))
            }
        };
        self.steps.push(StepLine {
            side: None,
            step: name.to_string(),
            ok,
            elapsed_us,
            detail,
            failure,
        });
    }

    fn wants(&self, step: SelftestStep) -> bool {
        self.wanted.is_empty() || self.wanted.contains(&step)
    }

    /// The failure with the explanation the rules give for it.
    fn explain(&self, f: Failure) -> FailureReport {
        self.explain_with(f, |_| {})
    }

    /// `explain`, with what the step knows beyond the run's settings.
    fn explain_with(&self, f: Failure, add: impl FnOnce(&mut QpFacts)) -> FailureReport {
        let first = self.ends[0].ctx.as_ref().map(|c| c.name().to_string());
        let end = if f.context.device.is_empty() || Some(&f.context.device) == first.as_ref() {
            0
        } else {
            1
        };
        let device = first.clone().unwrap_or_default();
        let known = Known {
            device: &device,
            port: self.port,
            gid_index: Some(self.gid_index[end]),
            // Both MRs, two buffers each.
            registered_bytes: 4 * u64::from(self.size),
            message_bytes: Some(self.size),
            gid_table_len: self.ends[end].port.as_ref().map(|p| p.gid_tbl_len),
            // The "post recv" step comes after "rts": the SENDs wait for it, not RTR.
            recv_posted_before_rtr: Some(false),
            ..Known::default()
        };
        failure::explain_failure_with(&self.sysfs, &known, &f, add)
    }

    fn qp(&self, i: usize) -> &Qp {
        self.ends[i].qp.as_ref().expect("qp created")
    }

    fn mr(&self, i: usize) -> &Mr {
        self.ends[i].mr.as_ref().expect("mr registered")
    }

    fn path_mtu(&self) -> u32 {
        let mtu = |i: usize| self.ends[i].port.as_ref().map_or(1024, |p| p.active_mtu);
        oob::path_mtu(mtu(0), mtu(1), None).unwrap_or(1024)
    }

    fn invalid(&self, i: usize, what: String) -> Failure {
        match &self.ends[i].qp {
            Some(qp) => qp.failure(Step::Verify, Cause::Invalid { what }),
            // The semantic steps run on their own QPs, after the basic walk's are gone.
            None => Failure::new(
                Step::Verify,
                Cause::Invalid { what },
                FailureContext {
                    device: self.ends[i]
                        .ctx
                        .as_ref()
                        .map(|c| c.name().to_string())
                        .unwrap_or_default(),
                    port: self.port,
                    gid_index: Some(self.gid_index[i]),
                    ..Default::default()
                },
            ),
        }
    }

    /// Waits for the completion `wr_id` on end `i`'s CQ; any other completion is a failure.
    fn wait(&mut self, i: usize, wr_id: u64) -> std::result::Result<Wc, Failure> {
        let mut wc = [Wc::default(); 1];
        let cq = self.ends[i].cq.as_mut().expect("cq");
        let link_layer = self.ends[i].port.as_ref().map(|p| p.link_layer.clone());
        let port = self.port;
        let gid_index = self.gid_index[i];
        cq.wait_watching(&mut wc, self.timeout, &mut crate::traffic::interrupted_wait)
            .map_err(|mut f| {
                f.context.port = port;
                f.context.gid_index = Some(gid_index);
                f.context.link_layer = link_layer;
                f
            })?;
        if !wc[0].ok() {
            return Err(self.qp(i).failure(Step::Completion, wc[0].cause()));
        }
        if wc[0].wr_id != wr_id {
            return Err(self.invalid(
                i,
                format!("expected completion {wr_id}, got {}", wc[0].wr_id),
            ));
        }
        Ok(wc[0])
    }

    fn check(
        &self,
        i: usize,
        offset: usize,
        want: &[u8],
        what: &str,
    ) -> std::result::Result<(), Failure> {
        if self.mr(i).read(offset, want.len()) != want {
            return Err(self.invalid(
                i,
                format!("{what}: the data that arrived differs from what was sent"),
            ));
        }
        Ok(())
    }
}

fn psn(i: usize) -> u32 {
    0x1000 + i as u32 * 0x1000
}

fn pattern(op: &str, len: usize) -> Vec<u8> {
    format!("rdmactl selftest {op}; ")
        .bytes()
        .cycle()
        .take(len)
        .collect()
}
