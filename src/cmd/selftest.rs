//! `rdmactl selftest`: two RC QPs in one process (on one device, or one on each of two
//! devices), connected to each other, running every verbs step in turn and reporting each:
//! ok or FAIL, how long it took, and for a failure the step value an explainer can read.

use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Serialize;

mod semantics;

use crate::cli::{GidIndexArg, SelftestArgs, SelftestStep};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::failure::{self, GidChoice, Known};
use crate::gather::verbs::qp::{
    Access, Context, Cq, Mr, Pd, Qp, QpCaps, QpPortAttrs, RtrParams, SendOp, Wc,
};
use crate::model::device::GidType;
use crate::model::diagnostic::FailureReport;
use crate::model::facts::QpFacts;
use crate::model::failure::{Cause, Failure, FailureContext, Step};
use crate::model::gid::Gid;
use crate::output;
use crate::wire::exchange as oob;

#[derive(Debug, Serialize)]
struct StepLine {
    step: &'static str,
    ok: bool,
    /// Rounded to nanoseconds in JSON.
    #[serde(serialize_with = "crate::output::ser_3dp")]
    elapsed_us: f64,
    detail: String,
    failure: Option<FailureReport>,
}

#[derive(Debug, Serialize)]
struct Report {
    /// `verbs` here; `cm` for `selftest --cm`.
    mode: &'static str,
    /// The first end's device, once opened; `peer_device` is the second end's (the same
    /// name on one device). `device`, as in every command, not a list.
    device: Option<String>,
    peer_device: Option<String>,
    port: u32,
    gid_index: Option<u32>,
    /// `-g auto`: per device, what was chosen and why the other indices were not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    gid_selection: Vec<GidChoice>,
    size: u32,
    steps: Vec<StepLine>,
    /// What moved on the two ports' counters over the test (`peer`: the second device's,
    /// when it is another one).
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<crate::traffic::counters::RunCounters>,
    ok: bool,
}

/// One end of the loopback.
#[derive(Default)]
struct End {
    ctx: Option<Rc<Context>>,
    port: Option<QpPortAttrs>,
    gid: Option<(Gid, Option<GidType>)>,
    pd: Option<Rc<Pd>>,
    mr: Option<Mr>,
    cq: Option<Cq>,
    qp: Option<Qp>,
}

// Drop order matters: QP, CQ, MR, PD, context.
impl Drop for End {
    fn drop(&mut self) {
        self.qp.take();
        self.cq.take();
        self.mr.take();
        self.pd.take();
        self.ctx.take();
    }
}

const ATOMIC_OLD: u64 = 0x0123_4567_89ab_cdef;
const ATOMIC_NEW: u64 = 0xfeed_face_cafe_beef;

pub fn run(ctx: &Ctx, args: &SelftestArgs) -> Result<u8> {
    if args.cm {
        return super::pingpong_cm::selftest_cm(ctx, args);
    }
    let fixed_index = match args.gid_index {
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
        crate::gather::inventory::device_port(&ctx.sysfs, wanted[0], args.port)?,
        crate::gather::inventory::device_port(&ctx.sysfs, wanted[1], args.port)?,
    ];
    let names: [Option<&str>; 2] = [Some(resolved[0].as_str()), Some(resolved[1].as_str())];
    let mut t = Tester {
        ends: [End::default(), End::default()],
        port: args.port,
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
    // A first Ctrl-C ends the test at its next wait, with the steps so far.
    crate::interrupt::catch();
    let watches: Vec<crate::traffic::counters::CounterWatch> = {
        let mut distinct = vec![resolved[0].as_str()];
        if resolved[1] != resolved[0] {
            distinct.push(resolved[1].as_str());
        }
        distinct
            .iter()
            .map(|d| crate::traffic::counters::CounterWatch::start(&ctx.sysfs, d, args.port))
            .collect()
    };
    t.run_all(names);
    let mut deltas = watches
        .iter()
        .map(crate::traffic::counters::CounterWatch::stop);
    let mut counters = crate::traffic::counters::RunCounters::judge(
        deltas.next().flatten(),
        deltas.next().flatten(),
        t.messages,
    );
    if t.flushed {
        // The flush step holds a SEND outstanding with RNR NAKs on purpose (its line says
        // so): they are not a receiver that falls behind.
        if let Some(c) = counters.as_mut() {
            c.findings.retain(|f| f.code != "counters-rnr");
        }
    }
    let [device, peer_device] = t
        .ends
        .each_ref()
        .map(|e| e.ctx.as_ref().map(|c| c.name().to_string()));
    if let Some(mut err) = t.open_error.take() {
        // An empty slot or an index past the table: say so with the rules' words, which
        // name the index that would work.
        if let Error::NoSuchGid { hint, .. } = &mut err {
            if let Some(x) = t.steps.iter().find_map(|s| s.failure.as_ref()) {
                *hint = format!("{}; {}", x.explanation.summary, x.explanation.fix);
            }
        }
        return Err(err);
    }
    let ok = t.steps.iter().all(|s| s.ok) && !t.stopped;
    if !ctx.json {
        for c in &t.choices {
            eprint!("rdmactl: {}", c.render());
        }
    }
    let report = Report {
        mode: "verbs",
        device,
        peer_device,
        port: args.port,
        gid_index: Some(t.gid_index[0]),
        gid_selection: std::mem::take(&mut t.choices),
        size: args.size,
        steps: std::mem::take(&mut t.steps),
        counters,
        ok,
    };
    let text = if ctx.json {
        output::json(&report)
    } else {
        render(&report, ctx.style)
    };
    output::print(&text)?;
    if ok {
        Ok(exit::OK)
    } else {
        // The failed step and its explanation are in the report just printed.
        let code = report
            .steps
            .iter()
            .find_map(|s| s.failure.as_ref().map(|f| f.exit_code()))
            .unwrap_or(exit::FAILED);
        Err(Error::Reported(code))
    }
}

fn render(r: &Report, style: crate::output::Style) -> String {
    let mut out = format!(
        "selftest {} port {} GID index {}, {} B\n",
        [&r.device, &r.peer_device]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join(" <-> "),
        r.port,
        r.gid_index.map_or("?".to_string(), |i| i.to_string()),
        r.size
    );
    for s in &r.steps {
        let status = if s.ok { "ok  " } else { "FAIL" };
        let ms = s.elapsed_us / 1000.0;
        out.push_str(&format!(
            "  {status} {ms:>9.3} ms  {:<16} {}\n",
            s.step, s.detail
        ));
        if let Some(x) = &s.failure {
            out.push_str(&crate::render::explanation::body(&x.explanation, "       "));
        }
    }
    if let Some(c) = &r.counters {
        out.push_str(&c.render(style));
    }
    out.push_str(if r.ok {
        "all steps passed\n"
    } else {
        "FAILED\n"
    });
    out
}

struct Tester {
    ends: [End; 2],
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
        if self.stopped {
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
            step: name,
            ok,
            elapsed_us,
            detail,
            failure,
        });
    }

    fn wants(&self, step: SelftestStep) -> bool {
        self.wanted.is_empty() || self.wanted.contains(&step)
    }

    fn run_all(&mut self, names: [Option<&str>; 2]) {
        self.step("open", |t| {
            let mut detail = Vec::new();
            for (i, name) in names.iter().enumerate() {
                let c = match Context::open(*name) {
                    Ok(c) => c,
                    Err((f, avail)) => {
                        if matches!(f.cause, Cause::Errno { errno, .. } if errno == libc::ENODEV) {
                            t.open_error = Some(if avail.is_empty() {
                                Error::NoRdma { path: "/sys/class/infiniband".into() }
                            } else {
                                Error::NoSuchDevice { name: f.context.device.clone(), available: avail }
                            });
                        }
                        return Err(f);
                    }
                };
                let port = c.query_port(t.port)?;
                if !port.is_active() {
                    return Err(Failure::new(
                        Step::QueryPort,
                        Cause::Invalid { what: format!("port state {} is not ACTIVE (4)", port.state) },
                        FailureContext { device: c.name().into(), port: t.port, ..Default::default() },
                    ));
                }
                let index = match t.fixed_index {
                    Some(i) => i,
                    None => match failure::choose_loopback_gid(&t.sysfs, c.name(), t.port) {
                        Ok(choice) => {
                            let chosen = choice.selection.chosen;
                            if chosen.is_none() {
                                t.open_error = Some(Error::Failed(choice.none_fits()));
                            }
                            if !(i == 1 && names[0] == names[1]) {
                                t.choices.push(choice);
                            }
                            chosen.unwrap_or(0)
                        }
                        Err(e) => {
                            t.open_error = Some(e);
                            0
                        }
                    },
                };
                if t.open_error.is_some() {
                    return Err(Failure::new(
                        Step::QueryGid,
                        Cause::Invalid { what: "-g auto found no GID".into() },
                        FailureContext { device: c.name().into(), port: t.port, ..Default::default() },
                    ));
                }
                t.gid_index[i] = index;
                let gid = c.query_gid(t.port, index).inspect_err(|f| {
                    if matches!(f.cause, Cause::Errno { errno, .. } if errno == libc::ENODATA || errno == libc::EINVAL) {
                        t.open_error = Some(Error::NoSuchGid {
                            device: c.name().into(),
                            port: t.port,
                            index,
                            hint: format!("{}; list them with `rdmactl gids {}`", f.cause, c.name()),
                        });
                    }
                })?;
                detail.push(format!(
                    "{}/{} GID[{}] {} {}, MTU {}",
                    c.name(),
                    t.port,
                    index,
                    gid.0,
                    match &gid.1 {
                        Some(GidType::RoceV2) => "RoCE v2",
                        Some(GidType::RoceV1) => "RoCE v1",
                        Some(GidType::Ib) => "IB",
                        _ => "",
                    },
                    port.active_mtu
                ));
                if i == 1 && names[0] == names[1] {
                    detail.pop();
                }
                let end = &mut t.ends[i];
                end.ctx = Some(c);
                end.port = Some(port);
                end.gid = Some(gid);
            }
            Ok(detail.join("; "))
        });
        self.step("pd", |t| {
            for end in &mut t.ends {
                end.pd = Some(Pd::alloc(end.ctx.as_ref().expect("opened"))?);
            }
            Ok(String::new())
        });
        self.step("mr", |t| {
            let access = Access {
                remote_write: true,
                remote_read: true,
                remote_atomic: true,
            };
            let len = 2 * t.size as usize;
            let pinned = 2 * len as u64;
            if let Some(cause) =
                failure::pin_check(pinned, format!("4 × the {}-byte message size", t.size))
            {
                let mut f = Failure::new(Step::Mr, cause, FailureContext::default());
                f.context.device = t.ends[0]
                    .ctx
                    .as_ref()
                    .map(|c| c.name().to_string())
                    .unwrap_or_default();
                f.context.port = t.port;
                f.context.bytes = Some(pinned);
                return Err(f);
            }
            for end in &mut t.ends {
                end.mr = Some(Mr::register(end.pd.as_ref().expect("pd"), len, access)?);
            }
            Ok(format!(
                "{len} bytes each, local write + remote write/read/atomic"
            ))
        });
        self.step("cq", |t| {
            for end in &mut t.ends {
                end.cq = Some(Cq::create(end.ctx.as_ref().expect("opened"), 16)?);
            }
            Ok(String::new())
        });
        self.step("qp create", |t| {
            let (port, gid_index) = (t.port, t.gid_index);
            for (end, gid_index) in t.ends.iter_mut().zip(gid_index) {
                let caps = QpCaps {
                    max_send_wr: 4,
                    max_recv_wr: 4,
                };
                end.qp = Some(Qp::create_rc(
                    end.pd.as_ref().expect("pd"),
                    end.cq.as_ref().expect("cq"),
                    caps,
                    port,
                    Some(gid_index),
                )?);
            }
            Ok(format!(
                "QPN 0x{:06x} and 0x{:06x}",
                t.qp(0).qpn(),
                t.qp(1).qpn()
            ))
        });
        self.step("init", |t| {
            let access = Access {
                remote_write: true,
                remote_read: true,
                remote_atomic: true,
            };
            for i in 0..2 {
                t.qp(i).to_init(access)?;
            }
            Ok(String::new())
        });
        let mtu = self.path_mtu();
        self.step("rtr", |t| {
            for i in 0..2 {
                let peer = 1 - i;
                let p = RtrParams {
                    path_mtu: mtu,
                    dest_qpn: t.qp(peer).qpn(),
                    dest_psn: psn(peer),
                    dest_lid: t.ends[peer].port.as_ref().map_or(0, |p| p.lid),
                    grh: Some((t.ends[peer].gid.as_ref().expect("gid").0, t.gid_index[i])),
                    max_dest_rd_atomic: 1,
                };
                t.qp(i).to_rtr(&p)?;
            }
            Ok(format!("path MTU {mtu}"))
        });
        self.step("rts", |t| {
            for i in 0..2 {
                t.qp(i).to_rts(psn(i), 1)?;
            }
            Ok(String::new())
        });
        if self.wants(SelftestStep::Basic) {
            self.run_basic();
        }
        // The semantic steps build their own QPs and buffers: unpin the basic walk's first
        // (4 × the message size), so they fit under the same memlock limit.
        for end in &mut self.ends {
            end.qp.take();
            end.cq.take();
            end.mr.take();
        }
        self.run_semantics();
    }

    /// The classic walk on the two QPs just connected: one message of each kind.
    fn run_basic(&mut self) {
        let size = self.size;
        self.step("post recv", |t| {
            let b = &t.ends[1];
            let (qp, mr) = (b.qp.as_ref().expect("qp"), b.mr.as_ref().expect("mr"));
            qp.post_recv(mr, size as usize, size, 1)?;
            qp.post_recv(mr, size as usize, size, 2)?;
            Ok("2 receives on the second QP".into())
        });
        self.step("send", |t| {
            let data = pattern("send", size as usize);
            t.mr(0).write(0, &data);
            t.mr(1).fill(size as usize, size as usize, 0);
            t.qp(0).post_send(
                t.mr(0),
                SendOp::Send {
                    offset: 0,
                    len: size,
                },
                10,
            )?;
            t.wait(0, 10)?;
            let wc = t.wait(1, 1)?;
            if wc.byte_len != size {
                return Err(t.invalid(1, format!("received {} bytes, sent {size}", wc.byte_len)));
            }
            t.check(1, size as usize, &data, "SEND")?;
            Ok(format!("{size} bytes received and checked"))
        });
        self.step("rdma write", |t| {
            let data = pattern("write", size as usize);
            t.mr(0).write(0, &data);
            t.mr(1).fill(size as usize, size as usize, 0);
            let (addr, rkey) = (t.mr(1).addr() + u64::from(size), t.mr(1).rkey());
            t.qp(0).post_send(
                t.mr(0),
                SendOp::Write {
                    offset: 0,
                    len: size,
                    remote_addr: addr,
                    rkey,
                },
                11,
            )?;
            t.wait(0, 11)?;
            t.check(1, size as usize, &data, "RDMA WRITE")?;
            Ok(format!("{size} bytes written and checked"))
        });
        self.step("rdma read", |t| {
            let data = pattern("read", size as usize);
            t.mr(1).write(size as usize, &data);
            t.mr(0).fill(0, size as usize, 0);
            let (addr, rkey) = (t.mr(1).addr() + u64::from(size), t.mr(1).rkey());
            t.qp(0).post_send(
                t.mr(0),
                SendOp::Read {
                    offset: 0,
                    len: size,
                    remote_addr: addr,
                    rkey,
                },
                12,
            )?;
            t.wait(0, 12)?;
            t.check(0, 0, &data, "RDMA READ")?;
            Ok(format!("{size} bytes read and checked"))
        });
        self.step("atomic cas", |t| {
            if let Some(why) = t.without_atomics()? {
                return Ok(why);
            }
            // The remote word sits at the page-aligned start of the second MR.
            t.mr(1).write(0, &ATOMIC_OLD.to_ne_bytes());
            t.mr(0).fill(0, 8, 0);
            let (addr, rkey) = (t.mr(1).addr(), t.mr(1).rkey());
            let op = SendOp::CompareSwap {
                offset: 0,
                remote_addr: addr,
                rkey,
                compare: ATOMIC_OLD,
                swap: ATOMIC_NEW,
            };
            t.qp(0).post_send(t.mr(0), op, 13)?;
            t.wait(0, 13)?;
            let old = u64::from_ne_bytes(t.mr(0).read(0, 8).try_into().expect("8 bytes"));
            let now = u64::from_ne_bytes(t.mr(1).read(0, 8).try_into().expect("8 bytes"));
            if old != ATOMIC_OLD || now != ATOMIC_NEW {
                return Err(t.invalid(
                    0,
                    format!("compare-and-swap returned 0x{old:016x} and left 0x{now:016x}"),
                ));
            }
            Ok(format!("0x{ATOMIC_OLD:016x} -> 0x{ATOMIC_NEW:016x}"))
        });
        self.step("zero-byte send", |t| {
            t.qp(0)
                .post_send(t.mr(0), SendOp::Send { offset: 0, len: 0 }, 14)?;
            t.wait(0, 14)?;
            let wc = t.wait(1, 2)?;
            if wc.byte_len != 0 {
                return Err(t.invalid(
                    1,
                    format!("a zero-byte SEND arrived as {} bytes", wc.byte_len),
                ));
            }
            Ok("completed with 0 bytes".into())
        });
        self.step("poll", |t| {
            for i in 0..2 {
                let mut wc = [Wc::default(); 4];
                let n = t.ends[i].cq.as_mut().expect("cq").poll(&mut wc)?;
                if n > 0 {
                    return Err(t.invalid(
                        i,
                        format!("{n} unexpected completion(s), first wr_id {}", wc[0].wr_id),
                    ));
                }
            }
            Ok("both CQs empty".into())
        });
        self.messages += 5;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The report of a run that stopped at RTR: the documented shape
    /// (tests/json-schema.txt), with `device`/`peer_device` and a rounded `elapsed_us`.
    #[test]
    fn report_has_the_documented_shape() {
        let sysfs = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs/rxe-veth-basic");
        let f = Failure::new(
            Step::Rtr,
            Cause::errno(libc::ETIMEDOUT),
            FailureContext {
                device: "rxe0".into(),
                port: 1,
                gid_index: Some(1),
                path_mtu: Some(1024),
                ..FailureContext::default()
            },
        );
        let report = Report {
            mode: "verbs",
            device: Some("rxe0".into()),
            peer_device: Some("rxe1".into()),
            port: 1,
            gid_index: Some(1),
            gid_selection: vec![failure::choose_gid(&sysfs, "rxe0", 1, None).unwrap()],
            size: 4096,
            steps: vec![
                StepLine {
                    step: "open",
                    ok: true,
                    elapsed_us: 1022.0500000000001,
                    detail: "rxe0/1".into(),
                    failure: None,
                },
                StepLine {
                    step: "rtr",
                    ok: false,
                    elapsed_us: 5.0,
                    detail: String::new(),
                    failure: Some(FailureReport::new(
                        &f,
                        crate::model::diagnostic::Explanation::new("rtr-timeout", "why", "fix"),
                    )),
                },
            ],
            counters: None,
            ok: false,
        };
        let json = serde_json::to_value(&report).unwrap();
        let shape = crate::json_schema::mismatches("selftest", &json);
        assert!(shape.is_empty(), "{shape:#?}\n{json}");
        assert!(serde_json::to_string(&report)
            .unwrap()
            .contains(r#""elapsed_us":1022.05,"#));
        assert!(render(&report, crate::output::Style::plain())
            .starts_with("selftest rxe0 <-> rxe1 port 1 GID index 1"));
    }
}
