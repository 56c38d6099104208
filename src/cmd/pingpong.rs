//! `rdmactl pingpong`: an RC ping-pong between two hosts.
//!
//! Native mode exchanges a full endpoint description (oob.rs), compares both ends before
//! touching the QP, then runs SEND/RECV ping-pong, RDMA WRITE and RDMA READ; every RDMA
//! phase runs once from each side and the target checks the bytes it got (the seed
//! scenario: the server writes a string into the client's buffer, the client reads the
//! server's). `--compat rc_pingpong` speaks ibv_rc_pingpong's exchange and traffic, so a
//! stock ibv_rc_pingpong can be either end; a server detects that format by itself.
//!
//! Buffer layout (one MR of 2 × size): `[0, size)` is the local scratch (send source, WRITE
//! source, READ destination); `[size, 2 × size)` is the target (receives land here, and it
//! is the only range advertised to the peer).

use std::net::IpAddr;
use std::rc::Rc;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{Compat, GidIndexArg, Op, PingpongArgs};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::gather::failure::{self, GidChoice, Known};
use crate::gather::verbs::qp::{
    ticks, Access, Context, Cq, Mr, PathQos, Pd, Qp, QpCaps, QpPortAttrs, RtrParams, SendOp, Wc,
};
use crate::model::device::{GidType, LinkLayer};
use crate::model::diagnostic::FailureReport;
use crate::model::failure::{
    show_addr, Cause, Endpoint, Failure, FailureContext, Ops, PeerNotice, Step,
};
use crate::model::gid::Gid;
use crate::model::results::{render_ops, OpResult, OpResults};
use crate::output;
use crate::traffic::meter::Meter;
use crate::wire::exchange::{self as oob, Conn, Hello, NativeMsg, RcDest};

/// Receives posted ahead, as ibv_rc_pingpong's default rx depth.
const RX_DEPTH: u32 = 500;
/// RDMA WRITE/READ work requests in flight at once. 128 (perftest's tx depth) once made
/// rxe in the 6.1 kernel NAK a 64 KiB WRITE stream with REM_INV_REQ_ERR; 32 never did.
const WINDOW: u32 = 32;
const MAX_SIZE: u32 = 1 << 30;

const WRID_RECV: u64 = 1;
const WRID_SEND: u64 = 2;

/// The first byte of a --duration client's last SEND: the server answers it and stops.
const LAST_MESSAGE: u8 = 0xff;
/// A --duration run may last 30 days (the exchange carries milliseconds in 32 bits).
const MAX_DURATION_SECS: f64 = 30.0 * 86400.0;
/// Progress lines on a terminal when --interval is not given.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

#[derive(Debug, Serialize)]
struct Report {
    role: &'static str,
    exchange: &'static str,
    /// -m, or the client's when a server follows it.
    #[serde(skip)]
    requested_mtu: Option<u32>,
    device: String,
    port: u32,
    gid_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peer: Option<String>,
    size: u32,
    run: Run,
    qos: Qos,
    #[serde(skip_serializing_if = "Option::is_none")]
    path_mtu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    local: Option<Endpoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    remote: Option<Endpoint>,
    /// What `-g auto` chose, and why it turned the other indices down.
    #[serde(skip_serializing_if = "Option::is_none")]
    gid_selection: Option<GidChoice>,
    ops: OpResults,
    /// With a single operation its figures are also at the top level.
    #[serde(flatten)]
    single: Option<OpResult>,
    /// What moved on each end's port over the traffic, and the counter rules' findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<crate::traffic::counters::RunCounters>,
    ok: bool,
    failure: Option<FailureReport>,
}

/// The QoS this end used: service level, GRH traffic class, P_Key index.
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct Qos {
    sl: u8,
    tclass: u8,
    pkey_index: u16,
}

impl Qos {
    /// ", SL 3, traffic class 96 (DSCP 24), completion events": what was not the default.
    fn describe(&self, events: bool) -> String {
        let mut s = String::new();
        if self.sl != 0 {
            s.push_str(&format!(", SL {}", self.sl));
        }
        if self.tclass != 0 {
            s.push_str(&format!(
                ", traffic class {} (DSCP {})",
                self.tclass,
                self.tclass >> 2
            ));
        }
        if self.pkey_index != 0 {
            s.push_str(&format!(", P_Key index {}", self.pkey_index));
        }
        if events {
            s.push_str(", completion events");
        }
        s
    }
}

/// How the run was measured (`run` in -j; the top level holds a single operation's figures).
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct Run {
    /// -n; absent for a --duration run.
    #[serde(skip_serializing_if = "Option::is_none")]
    iters: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_sec: Option<f64>,
    /// WRITE and READ were measured one at a time (--lat).
    lat: bool,
    /// Completions were waited for asleep (-e).
    events: bool,
    /// A server that took the client's -n, --duration and --lat.
    follows_client: bool,
}

/// How long a run is: a count, a duration, and whether WRITE and READ go one at a time.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Length {
    iters: Option<u32>,
    duration: Option<Duration>,
    lat: bool,
}

impl Length {
    fn of(msg: &NativeMsg) -> Length {
        Length {
            iters: (msg.iters > 0).then_some(msg.iters),
            duration: (msg.duration_ms > 0)
                .then(|| Duration::from_millis(u64::from(msg.duration_ms))),
            lat: msg.lat,
        }
    }

    /// How long an end that waits for the other's turn may wait: a generous 20 ms per
    /// iteration, or the duration and a margin.
    fn passive_wait(&self, timeout: Duration) -> Duration {
        timeout
            + match (self.iters, self.duration) {
                (Some(n), _) => Duration::from_millis(u64::from(n) * 20),
                (None, Some(d)) => d + d / 10,
                (None, None) => Duration::ZERO,
            }
    }
}

/// Everything one end owns, in drop order (QP before CQ before MR before PD).
struct Side {
    qp: Qp,
    cq: Cq,
    mr: Mr,
    _pd: Rc<Pd>,
    ctx: Rc<Context>,
    port: u32,
    port_info: QpPortAttrs,
    gid: Option<(u32, Gid, Option<GidType>)>,
    psn: u32,
    max_rd_atomic: u8,
    size: u32,
}

impl Side {
    fn endpoint(&self) -> Endpoint {
        Endpoint {
            lid: self.port_info.lid,
            qpn: self.qp.qpn(),
            psn: self.psn,
            gid: self.gid.as_ref().map(|g| g.1).unwrap_or(Gid::ZERO),
            gid_index: self.gid.as_ref().map(|g| g.0),
            gid_type: self.gid.as_ref().and_then(|g| g.2.clone()),
            link_layer: self.port_info.link_layer.clone(),
            active_mtu: self.port_info.active_mtu,
            rkey: self.mr.rkey(),
            addr: self.mr.addr() + u64::from(self.size),
            len: self.size,
        }
    }

    fn target(&self) -> usize {
        self.size as usize
    }

    fn fail(&self, step: Step, cause: Cause) -> Failure {
        self.qp.failure(step, cause)
    }
}

/// A random 24-bit PSN, as ibv_rc_pingpong's lrand48() & 0xffffff.
fn random_psn() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut x = t.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    // 20 bits: the offer to an rdmactl server writes the PSN as five hex digits.
    (x & 0xf_ffff) as u32
}

#[derive(Clone)]
struct Plan {
    ops: Ops,
    access: Access,
    size: u32,
    /// -m
    mtu: Option<u32>,
    length: Length,
    /// A server given none of -n, --duration and --lat takes the client's.
    follows: bool,
    /// What a server was not given and takes from the client: -s, --op, -m.
    follows_size: bool,
    follows_ops: bool,
    follows_mtu: bool,
    progress: Option<Duration>,
    events: bool,
    qos: PathQos,
    pkey_index: u16,
    timeout: Duration,
    gid_index: Option<u32>,
    /// `-g auto`: a client chooses before it connects, a server once it knows the client.
    auto: bool,
}

fn plan(args: &PingpongArgs) -> Result<Plan> {
    if args.cm {
        return Err(Error::Usage(
            "--cm (librdmacm) is not implemented yet; use the TCP exchange".into(),
        ));
    }
    let gid_index = match args.gid_index {
        Some(GidIndexArg::Index(i)) => Some(i),
        Some(GidIndexArg::Auto) | None => None,
    };
    if args.size() == 0 || args.size() > MAX_SIZE {
        return Err(Error::Usage(format!(
            "-s {}: the message size must be 1 to {MAX_SIZE} bytes",
            args.size()
        )));
    }
    if args.iters == Some(0) {
        return Err(Error::Usage("-n 0: give at least one iteration".into()));
    }
    if let Some(d) = args.duration {
        if !(0.001..=MAX_DURATION_SECS).contains(&d) {
            return Err(Error::Usage(format!(
                "--duration {d}: give 0.001 <= SECS <= {MAX_DURATION_SECS} (30 days)"
            )));
        }
    }
    if let Some(i) = args.interval {
        if !(0.1..=3600.0).contains(&i) {
            return Err(Error::Usage(format!(
                "--interval {i}: give 0.1 <= SECS <= 3600"
            )));
        }
    }
    if args.persist && args.server.is_some() {
        return Err(Error::Usage(
            "--persist is for the server (without SERVER): it serves one client after another"
                .into(),
        ));
    }
    if args.compat.is_some() && (args.duration.is_some() || args.lat) {
        return Err(Error::Usage(
            "--compat rc_pingpong runs -n SEND iterations, as the stock tool: drop --duration and --lat".into(),
        ));
    }
    if args.server.is_some() && args.tcp_port == 0 {
        return Err(Error::Usage(
            "-p 0: a client needs the server's TCP port (a server started with -p 0 prints the one it got)".into(),
        ));
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(Error::Usage(format!(
            "--timeout {}: give 0 < SECS <= 3600",
            args.timeout
        )));
    }
    if let Some(m) = args.mtu {
        oob::path_mtu(0, 0, Some(m)).map_err(Error::Usage)?;
    }
    let op = args.op.unwrap_or(Op::All);
    if args.compat.is_some() && op != Op::Send && op != Op::All {
        return Err(Error::Usage(
            "--compat rc_pingpong does SEND/RECV only; drop --op or use --op send".into(),
        ));
    }
    if args.bind.is_some() && args.server.is_some() {
        return Err(Error::Usage(
            "--bind is for the server (without SERVER)".into(),
        ));
    }
    let ops = match (args.compat, op) {
        (Some(_), _) | (None, Op::Send) => Ops {
            send: true,
            write: false,
            read: false,
        },
        (None, Op::Write) => Ops {
            send: false,
            write: true,
            read: false,
        },
        (None, Op::Read) => Ops {
            send: false,
            write: false,
            read: true,
        },
        (None, Op::All) => Ops {
            send: true,
            write: true,
            read: true,
        },
    };
    let access = access_for(ops);
    use std::io::IsTerminal;
    let progress = match args.interval {
        Some(i) => Some(Duration::from_secs_f64(i)),
        None => std::io::stderr().is_terminal().then_some(DEFAULT_INTERVAL),
    };
    let server = args.server.is_none();
    Ok(Plan {
        ops,
        access,
        size: args.size(),
        mtu: args.mtu,
        follows_size: server && args.size_given.is_none(),
        // A stock client's exchange carries no parameters: the server's own apply.
        follows_ops: server && args.op.is_none(),
        follows_mtu: server && args.mtu.is_none(),
        length: Length {
            iters: args.iterations(),
            duration: args.duration.map(Duration::from_secs_f64),
            lat: args.lat,
        },
        follows: args.server.is_none()
            && args.iters.is_none()
            && args.duration.is_none()
            && !args.lat,
        progress,
        events: args.events,
        qos: PathQos {
            sl: args.sl.unwrap_or(0),
            traffic_class: args.tclass.unwrap_or(0),
        },
        pkey_index: args.pkey_index.unwrap_or(0),
        timeout: Duration::from_secs_f64(args.timeout),
        gid_index,
        auto: args.gid_index == Some(GidIndexArg::Auto),
    })
}

/// The peer may only write or read what the chosen operations need.
fn access_for(ops: Ops) -> Access {
    Access {
        remote_write: ops.write,
        remote_read: ops.read,
        remote_atomic: false,
    }
}

/// Why opening the local side stopped: a usage or lookup error, or a verbs step to explain.
enum Setup {
    Error(Error),
    Failure(Failure),
}

impl From<Error> for Setup {
    fn from(e: Error) -> Setup {
        Setup::Error(e)
    }
}

impl From<Failure> for Setup {
    fn from(f: Failure) -> Setup {
        Setup::Failure(f)
    }
}

/// Turns a local setup failure into the error (and exit code) it deserves.
fn setup_error(f: Failure, avail: Vec<String>) -> Error {
    let c = &f.context;
    match (&f.step, &f.cause) {
        (Step::Open, Cause::Errno { errno, .. }) if *errno == libc::ENODEV && avail.is_empty() => {
            Error::NoRdma {
                path: "/sys/class/infiniband".into(),
            }
        }
        (Step::Open, Cause::Errno { errno, .. }) if *errno == libc::ENODEV => Error::NoSuchDevice {
            name: c.device.clone(),
            available: avail,
        },
        (Step::Open, Cause::Errno { errno, .. })
            if *errno == libc::ENOSYS || *errno == libc::EOPNOTSUPP =>
        {
            Error::NoRdma {
                path: "/sys/class/infiniband".into(),
            }
        }
        (Step::QueryPort, Cause::Errno { errno, .. }) if *errno == libc::EINVAL => {
            Error::NoSuchPort {
                device: c.device.clone(),
                port: c.port,
                available: Vec::new(),
            }
        }
        (Step::QueryGid, Cause::Errno { errno, .. })
            if *errno == libc::EINVAL || *errno == libc::ENODATA =>
        {
            Error::NoSuchGid {
                device: c.device.clone(),
                port: c.port,
                index: c.gid_index.unwrap_or(0),
                hint: if *errno == libc::ENODATA {
                    "the slot is empty (ENODATA); list the populated ones with `rdmactl gids`"
                        .into()
                } else {
                    "the index is past the GID table (EINVAL); list them with `rdmactl gids`".into()
                },
            }
        }
        _ => Error::Failed(f.to_string()),
    }
}

/// Opens the device and builds the QP. With `-g auto` a client chooses its GID here (it
/// knows the server's address); a server leaves `gid` empty until a client connects.
fn open_side(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    device: &str,
    peer: Option<IpAddr>,
    report: &mut Report,
) -> std::result::Result<Side, Setup> {
    let vctx = Context::open(Some(device)).map_err(|(f, avail)| setup_error(f, avail))?;
    report.device = vctx.name().to_string();
    let port = args.port;
    let port_info = vctx
        .query_port(port)
        .map_err(|f| setup_error(f, Vec::new()))?;
    if !port_info.is_active() {
        return Err(Setup::Failure(Failure::new(
            Step::QueryPort,
            Cause::Invalid {
                what: format!(
                    "port state {} is not ACTIVE (4): no link, or no subnet manager on InfiniBand",
                    port_info.state
                ),
            },
            FailureContext {
                device: vctx.name().to_string(),
                port,
                link_layer: Some(port_info.link_layer.clone()),
                ..Default::default()
            },
        )));
    }
    let mut gid_index = plan.gid_index;
    if plan.auto && args.server.is_some() {
        let choice = failure::choose_gid(&ctx.sysfs, vctx.name(), port, peer)?;
        gid_index = Some(
            choice
                .selection
                .chosen
                .ok_or_else(|| Error::Failed(choice.none_fits()))?,
        );
        announce(ctx, &choice);
        report.gid_selection = Some(choice);
    }
    report.gid_index = gid_index;
    if port_info.link_layer == LinkLayer::Ethernet && gid_index.is_none() && !plan.auto {
        // ibv_rc_pingpong without -g sends no GRH, which RoCE rejects at RTR: refuse now.
        let pick = failure::choose_gid(&ctx.sysfs, vctx.name(), port, peer)
            .ok()
            .and_then(|c| {
                let i = c.selection.chosen?;
                Some(format!(
                    "; -g auto would pick {} ({})",
                    i,
                    c.selection
                        .reason(i)
                        .map(|r| r.why.clone())
                        .unwrap_or_default()
                ))
            })
            .unwrap_or_default();
        return Err(Setup::Error(Error::Usage(format!(
            "{}/{port} is RoCE (Ethernet link layer), which needs a GRH: give a GID index with -g N or -g auto{pick} \
             (`rdmactl gids {}` lists them)",
            vctx.name(),
            vctx.name()
        ))));
    }
    let gid = match gid_index {
        Some(i) => {
            let (g, t) = vctx.query_gid(port, i)?;
            Some((i, g, t))
        }
        None => None,
    };
    let (rd_atom, init_rd_atom) = vctx.rd_atomic_limits()?;
    let max_rd_atomic = rd_atom.min(init_rd_atom).clamp(1, 16) as u8;
    let pinned = 2 * u64::from(plan.size);
    if let Some(cause) =
        failure::pin_check(pinned, format!("2 × the {}-byte message size", plan.size))
    {
        let mut f = Failure::new(Step::Mr, cause, FailureContext::default());
        f.context.device = vctx.name().to_string();
        f.context.port = port;
        f.context.bytes = Some(pinned);
        return Err(Setup::Failure(f));
    }
    let pd = Pd::alloc(&vctx)?;
    let mr = Mr::register(&pd, 2 * plan.size as usize, plan.access)?;
    let cq = if plan.events {
        Cq::create_notifying(&vctx, RX_DEPTH + WINDOW + 8)?
    } else {
        Cq::create(&vctx, RX_DEPTH + WINDOW + 8)?
    };
    let qp = Qp::create_rc(
        &pd,
        &cq,
        QpCaps {
            max_send_wr: WINDOW,
            max_recv_wr: RX_DEPTH,
        },
        port,
        gid_index,
    )?;
    qp.to_init_pkey(plan.access, plan.pkey_index)?;
    let side = Side {
        qp,
        cq,
        mr,
        _pd: pd,
        ctx: vctx,
        port,
        port_info,
        gid,
        psn: random_psn(),
        max_rd_atomic,
        size: plan.size,
    };
    // Receives go up before RTR, so the peer's first SEND always finds one.
    if plan.ops.send {
        let wanted = match (plan.follows, plan.length.iters) {
            (false, Some(n)) => n.saturating_add(1),
            _ => RX_DEPTH,
        };
        for _ in 0..RX_DEPTH.min(wanted) {
            side.qp
                .post_recv(&side.mr, side.target(), side.size, WRID_RECV)?;
        }
    }
    Ok(side)
}

/// `-g auto`'s choice goes to stderr in table mode (stdout is the result) and into the JSON.
fn announce(ctx: &Ctx, choice: &GidChoice) {
    if !ctx.json {
        eprint!("rdmactl: {}", choice.render());
    }
}

/// A server with `-g auto` picks its GID once it knows the client's address.
fn choose_for_client(
    ctx: &Ctx,
    side: &mut Side,
    report: &mut Report,
    client: IpAddr,
) -> std::result::Result<(), Failure> {
    let choice = failure::choose_gid(&ctx.sysfs, side.ctx.name(), side.port, Some(client))
        .map_err(|e| {
            side.fail(
                Step::QueryGid,
                Cause::Invalid {
                    what: e.to_string(),
                },
            )
        })?;
    let Some(i) = choice.selection.chosen else {
        return Err(side.fail(
            Step::QueryGid,
            Cause::Invalid {
                what: choice.none_fits(),
            },
        ));
    };
    let (g, t) = side.ctx.query_gid(side.port, i)?;
    side.gid = Some((i, g, t));
    announce(ctx, &choice);
    report.gid_index = Some(i);
    report.gid_selection = Some(choice);
    report.local = Some(side.endpoint());
    Ok(())
}

pub fn run(ctx: &Ctx, args: &PingpongArgs) -> Result<u8> {
    if args.cm {
        return super::pingpong_cm::run(ctx, args);
    }
    let plan = plan(args)?;
    // Everything that can be refused is refused before the device is opened: the peer's
    // name, the device and port, and (server) the TCP port.
    let peer = match args.server.as_deref() {
        Some(host) => {
            let ip = failure::resolve_peer(host, args.tcp_port)?;
            failure::refuse_special_peer(ip)?;
            Some(ip)
        }
        None => None,
    };
    let device =
        crate::gather::inventory::device_port(&ctx.sysfs, args.device.as_deref(), args.port)?;
    let listener = match peer {
        Some(_) => None,
        None => match oob::listen(args.bind, args.tcp_port) {
            Ok(l) => Some(l),
            Err(f) => {
                let report = new_report(args, &plan, &device);
                return finish(ctx, report, Some(f), peer, None, plan.ops.send, None);
            }
        },
    };
    match (listener, peer) {
        (Some(l), _) if args.persist => serve_persistently(ctx, args, &plan, &device, &l),
        (Some(l), _) => one_run(ctx, args, &plan, &device, Role::Server(&l)),
        (None, Some(ip)) => one_run(ctx, args, &plan, &device, Role::Client(ip)),
        (None, None) => unreachable!("a run without a peer listens"),
    }
}

/// `--persist`: one run per client, each with its own QP and report, until a signal. A
/// client's failure is explained and the server goes on; a signal ends it (130/143).
fn serve_persistently(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    device: &str,
    listener: &std::net::TcpListener,
) -> Result<u8> {
    loop {
        eprintln!("rdmactl: {} (--persist)", waiting_line(args, listener));
        // Between clients a first Ctrl-C ends the server, with no report: nobody was served.
        let conn = match oob::accept_watching(listener, plan.timeout) {
            Ok(Some(conn)) => conn,
            Ok(None) => {
                let signal = crate::interrupt::caught().unwrap_or(libc::SIGINT);
                return Ok(128 + signal as u8);
            }
            Err(f) => {
                let report = new_report(args, plan, device);
                return finish(ctx, report, Some(f), None, None, plan.ops.send, None);
            }
        };
        match one_run(ctx, args, plan, device, Role::Accepted(conn)) {
            Ok(_) | Err(Error::Reported(_)) => {}
            Err(Error::Explained(x)) => eprint!(
                "rdmactl: {}\n{}",
                x.message,
                crate::render::explanation::body(&x.explanation, "")
            ),
            Err(e) => return Err(e),
        }
        if let Some(signal) = crate::interrupt::caught() {
            return Ok(128 + signal as u8);
        }
    }
}

fn new_report(args: &PingpongArgs, plan: &Plan, device: &str) -> Report {
    Report {
        role: if args.server.is_some() {
            "client"
        } else {
            "server"
        },
        exchange: "native",
        requested_mtu: plan.mtu,
        device: device.to_string(),
        port: args.port,
        gid_index: plan.gid_index,
        peer: None,
        size: plan.size,
        run: Run {
            iters: plan.length.iters,
            duration_sec: args.duration,
            lat: args.lat,
            events: args.events,
            follows_client: false,
        },
        qos: Qos {
            sl: plan.qos.sl,
            tclass: plan.qos.traffic_class,
            pkey_index: plan.pkey_index,
        },
        path_mtu: None,
        local: None,
        remote: None,
        gid_selection: None,
        ops: OpResults::default(),
        single: None,
        ok: false,
        counters: None,
        failure: None,
    }
}

/// One run toward one peer: open the device, connect, measure, report.
fn one_run(ctx: &Ctx, args: &PingpongArgs, plan: &Plan, device: &str, role: Role) -> Result<u8> {
    let mut report = new_report(args, plan, device);
    let peer = match role {
        Role::Client(ip) => Some(ip),
        Role::Server(_) | Role::Accepted(_) => None,
    };
    let mut side = match open_side(ctx, args, plan, device, peer, &mut report) {
        Ok(side) => side,
        Err(Setup::Error(e)) => return Err(e),
        Err(Setup::Failure(f)) => {
            return finish(ctx, report, Some(f), peer, None, plan.ops.send, None)
        }
    };
    report.local = Some(side.endpoint());
    let mut conn = None;
    let outcome = drive(ctx, args, plan, &mut side, &mut report, role, &mut conn);
    let gid_table_len = Some(side.port_info.gid_tbl_len);
    finish(
        ctx,
        report,
        outcome.err(),
        peer,
        gid_table_len,
        plan.ops.send,
        conn,
    )
}

/// Explains the failure, if any, prints the report and turns it into the exit status.
/// While the out-of-band connection is still open (`conn`), the cause this end found goes
/// to the peer too, so both ends print it (a peer that spoke first is not answered back).
#[allow(clippy::too_many_arguments)]
fn finish(
    ctx: &Ctx,
    mut report: Report,
    failure: Option<Failure>,
    peer: Option<IpAddr>,
    gid_table_len: Option<u32>,
    plan_sends: bool,
    conn: Option<Conn>,
) -> Result<u8> {
    report.ok = failure.is_none();
    report.single = report.ops.single();
    if let Some(mut f) = failure {
        // Fill in what the step did not know but the run did; a listen happens before the
        // device is opened, so it has no device context.
        let opened = f.step != Step::Listen;
        if f.context.device.is_empty() && opened {
            f.context.device = report.device.clone();
        }
        // Device-level verbs (PD, MR, CQ) know no port; the run does.
        if f.context.port == 0 && f.context.device == report.device && opened {
            f.context.port = report.port;
        }
        if opened {
            f.context.gid_index = f.context.gid_index.or(report.gid_index);
        }
        f.context.local = f.context.local.take().or_else(|| report.local.clone());
        f.context.remote = f.context.remote.take().or_else(|| report.remote.clone());
        f.context.path_mtu = f.context.path_mtu.or(report.path_mtu);
        f.context.peer_addr = f.context.peer_addr.take().or_else(|| report.peer.clone());
        let known = Known {
            device: &report.device,
            port: report.port,
            gid_index: report.gid_index,
            local: report.local.as_ref(),
            remote: report.remote.as_ref(),
            // A server learns its client's address from the client's GID: on one host the
            // TCP source address is the server's own.
            peer: peer
                .or_else(|| {
                    report
                        .remote
                        .as_ref()
                        .map(|r| r.gid)
                        .filter(|g| !g.is_zero() && !crate::model::gid::is_link_local(g))
                        .map(|g| g.ip())
                })
                .or_else(|| report.peer.as_deref().and_then(failure::peer_ip_of)),
            compat: report.exchange == "rc_pingpong",
            registered_bytes: 2 * u64::from(report.size),
            requested_mtu: report.requested_mtu,
            message_bytes: Some(report.size),
            gid_table_len,
            // open_side posts them before RTR when the run sends; WRITE and READ need none.
            recv_posted_before_rtr: plan_sends.then_some(true),
        };
        let x = failure::explain_failure(&ctx.sysfs, &known, &f);
        let from_peer = matches!(f.cause, Cause::PeerClosed | Cause::PeerReported { .. });
        if let (Some(mut conn), false, "native") = (conn, from_peer, report.exchange) {
            conn.send_notice(&PeerNotice {
                role: report.role.to_string(),
                message: x.message.clone(),
                code: x.explanation.code.clone(),
                summary: x.explanation.summary.clone(),
                evidence: x
                    .explanation
                    .evidence
                    .iter()
                    .map(|e| e.text.clone())
                    .collect(),
                fix: x.explanation.fix.clone(),
            });
        }
        report.failure = Some(x);
    }
    let text = if ctx.json {
        output::json(&report)
    } else {
        render(&report, ctx.style)
    };
    output::print(&text)?;
    match report.failure {
        None => Ok(crate::exit::OK),
        Some(x) => {
            let bad_index = x.step == Step::QueryGid
                && matches!(x.cause, Cause::Errno { errno, .. } if errno == libc::ENODATA || errno == libc::EINVAL);
            if bad_index {
                return Err(Error::NoSuchGid {
                    device: report.device.clone(),
                    port: report.port,
                    index: x.context.gid_index.unwrap_or(0),
                    hint: format!("{}; {}", x.explanation.summary, x.explanation.fix),
                });
            }
            // Said once: in -j the report carries it; in text, on stderr with why/seen/fix.
            if ctx.json {
                Err(Error::Reported(x.exit_code()))
            } else {
                Err(Error::Explained(Box::new(x)))
            }
        }
    }
}

fn render(r: &Report, style: crate::output::Style) -> String {
    let mut out = String::new();
    let ep = |e: &Endpoint| {
        let mut s = format!(
            "LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
            e.lid, e.qpn, e.psn, e.gid
        );
        if let Some(i) = e.gid_index {
            s.push_str(&format!(" (index {i}"));
            match &e.gid_type {
                Some(GidType::RoceV2) => s.push_str(", RoCE v2"),
                Some(GidType::RoceV1) => s.push_str(", RoCE v1"),
                Some(GidType::Ib) => s.push_str(", IB"),
                _ => {}
            }
            s.push(')');
        }
        s
    };
    if let Some(l) = &r.local {
        out.push_str(&format!("  local address:  {}\n", ep(l)));
    }
    if let Some(rem) = &r.remote {
        out.push_str(&format!("  remote address: {}\n", ep(rem)));
    }
    if let Some(m) = r.path_mtu {
        out.push_str(&format!(
            "  {} {}/{} ({} exchange), path MTU {m}, {} B messages{}\n",
            r.role,
            r.device,
            r.port,
            r.exchange,
            r.size,
            r.qos.describe(r.run.events)
        ));
    }
    out.push_str(&render_ops(&r.ops));
    if let Some(c) = &r.counters {
        out.push_str(&c.render(style));
    }
    if r.ok {
        out.push_str("ok\n");
    }
    out
}

/// A client knows its server's address; a server has bound its port before opening the
/// device, so a busy port is found before anything else is done.
enum Role<'a> {
    Client(IpAddr),
    Server(&'a std::net::TcpListener),
    /// A `--persist` server's next client, already accepted.
    Accepted(Conn),
}

fn waiting_line(args: &PingpongArgs, listener: &std::net::TcpListener) -> String {
    format!(
        "waiting for a client on {} (ibv_rc_pingpong clients welcome)",
        listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| args.tcp_port.to_string())
    )
}

fn drive(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    side: &mut Side,
    report: &mut Report,
    role: Role,
    conn_slot: &mut Option<Conn>,
) -> std::result::Result<(), Failure> {
    let is_client = matches!(role, Role::Client(_));
    let conn = conn_slot.insert(match role {
        Role::Client(ip) => oob::connect(&ip.to_string(), args.tcp_port, plan.timeout)?,
        Role::Server(listener) => {
            eprintln!("rdmactl: {}", waiting_line(args, listener));
            // One client per run: the listener closes when the run ends.
            oob::accept_one(listener, plan.timeout)?
        }
        Role::Accepted(conn) => conn,
    });
    report.peer = Some(show_addr(conn.peer));
    // From here on a first Ctrl-C stops the run with what it measured, and tells the peer.
    crate::interrupt::catch();
    let local = side.endpoint();
    let me = RcDest {
        lid: local.lid,
        qpn: local.qpn,
        psn: local.psn,
        gid: local.gid,
    };
    if is_client {
        if args.compat == Some(Compat::RcPingpong) {
            conn.send_rc(&me)?;
        } else {
            conn.send_offer(&me)?;
        }
        // A stock server connects its QP before it answers: a close here is its RTR failing.
        let reply = conn.read_hello().map_err(|mut f| {
            if f.cause == Cause::PeerClosed {
                f.context.note = Some(
                    "the server closed the connection without answering (a stock ibv_rc_pingpong does when its RTR fails)".into(),
                );
            }
            f
        })?;
        return match reply {
            // The server's first message says it speaks native; its last one, sent once it
            // has our parameters (and taken those it was not given), is what it will run.
            Hello::Native(_) if args.compat.is_none() => {
                let mine = native_msg(plan, &local);
                conn.send_native(&mine)?;
                let remote = conn.read_native()?;
                native_run(ctx, plan, side, report, conn, mine, remote, true)
            }
            Hello::RcPingpong(dest) => {
                report.exchange = "rc_pingpong";
                stock_server(ctx, args, plan, side, report, conn, dest)?;
                *conn_slot = None;
                Ok(())
            }
            _ => Err(side.fail(
                Step::Exchange,
                Cause::Invalid {
                    what: "the server answered with a message a server never sends".into(),
                },
            )),
        };
    }
    let hello = conn.read_hello()?;
    if side.gid.is_none() && plan.auto {
        // The client's GID says where it is better than the TCP source address, which on
        // one host is the server's own.
        let gid = match &hello {
            Hello::RcPingpong(d) | Hello::RdmactlOffer(d) => d.gid,
            Hello::Native(m) => m.endpoint.gid,
        };
        let client = if gid.is_zero() {
            conn.peer.ip().to_canonical()
        } else {
            gid.ip()
        };
        choose_for_client(ctx, side, report, client)?;
    }
    match hello {
        Hello::RcPingpong(dest) => {
            report.exchange = "rc_pingpong";
            serve_rc_pingpong(plan, side, report, conn, dest)
        }
        // An rdmactl client: take up its offer, learn its parameters, take those this
        // server was not given, and tell it what this end will run.
        Hello::RdmactlOffer(_) => {
            conn.send_native(&native_msg(plan, &side.endpoint()))?;
            let remote = conn.read_native()?;
            let plan = follow_client(ctx, args, plan, side, report, &remote)?;
            let mine = native_msg(&plan, &side.endpoint());
            conn.send_native(&mine)?;
            native_run(ctx, &plan, side, report, conn, mine, remote, false)
        }
        Hello::Native(remote) => {
            let plan = follow_client(ctx, args, plan, side, report, &remote)?;
            let mine = native_msg(&plan, &side.endpoint());
            conn.send_native(&mine)?;
            native_run(ctx, &plan, side, report, conn, mine, remote, false)
        }
    }
}

/// A server takes what it was not given from its client (as iperf3's server does): -n,
/// --duration and --lat, -s, --op and -m, and says so. A new size or set of operations
/// needs a new buffer and QP: this end is rebuilt on the same GID before anything is
/// connected.
fn follow_client(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    side: &mut Side,
    report: &mut Report,
    client: &NativeMsg,
) -> std::result::Result<Plan, Failure> {
    let mut p = plan.clone();
    let mut taken = Vec::new();
    if plan.follows {
        p.length = Length::of(client);
        taken.push(client.length());
    }
    if plan.follows_size && client.size != plan.size {
        p.size = client.size;
        taken.push(format!("-s {}", client.size));
    }
    if plan.follows_ops && client.ops != plan.ops {
        p.ops = client.ops;
        p.access = access_for(client.ops);
        taken.push(format!(
            "--op {}",
            crate::model::failure::ops_name(client.ops.bits())
        ));
    }
    if plan.follows_mtu && client.mtu != 0 {
        p.mtu = Some(u32::from(client.mtu));
        taken.push(format!("-m {}", client.mtu));
    }
    if p.size != plan.size || p.ops != plan.ops {
        let rebuilt = Plan {
            gid_index: side.gid.as_ref().map(|g| g.0),
            auto: false,
            ..p.clone()
        };
        let device = report.device.clone();
        let gid_selection = report.gid_selection.take();
        *side = open_side(ctx, args, &rebuilt, &device, None, report).map_err(|e| match e {
            Setup::Failure(f) => f,
            Setup::Error(e) => side.fail(
                Step::Compare,
                Cause::Invalid {
                    what: format!("taking the client's -s {} and --op: {e}", client.size),
                },
            ),
        })?;
        report.gid_selection = gid_selection;
        report.local = Some(side.endpoint());
    }
    if !taken.is_empty() {
        report.run.follows_client = true;
        report.run.iters = p.length.iters;
        report.run.duration_sec = p.length.duration.map(|d| d.as_secs_f64());
        report.run.lat = p.length.lat;
        report.size = p.size;
        report.requested_mtu = p.mtu;
        if !ctx.json {
            eprintln!(
                "rdmactl: following the client: {} (give the server -n/--duration/--lat, -s, --op or -m to insist on its own)",
                taken.join(", ")
            );
        }
    }
    Ok(p)
}

/// The server answered in ibv_rc_pingpong's format: a stock server, which has already
/// moved its QP to RTR. It does SEND only, with its own -s and -n.
fn stock_server(
    ctx: &Ctx,
    args: &PingpongArgs,
    plan: &Plan,
    side: &mut Side,
    report: &mut Report,
    conn: &mut Conn,
    dest: RcDest,
) -> std::result::Result<(), Failure> {
    if args.compat.is_none() {
        if let Some(op) = args.op.filter(|op| *op != Op::Send && *op != Op::All) {
            return Err(side.fail(
                Step::Compare,
                Cause::Invalid {
                    what: format!(
                        "--op {}: the server is a stock ibv_rc_pingpong, which does SEND only; use --op send",
                        format!("{op:?}").to_lowercase()
                    ),
                },
            ));
        }
        let Some(iters) = plan.length.iters.filter(|_| !plan.length.lat) else {
            return Err(side.fail(
                Step::Compare,
                Cause::Invalid {
                    what: "the server is a stock ibv_rc_pingpong, which runs -n SEND iterations; drop --duration and --lat".into(),
                },
            ));
        };
        if !ctx.json {
            eprintln!(
                "rdmactl: the server speaks ibv_rc_pingpong's exchange: SEND only, {} B messages, {iters} iterations (give the server the same -s and -n)",
                plan.size
            );
        }
    }
    conn.write_all(oob::RC_PINGPONG_DONE)?;
    report.remote = Some(rc_endpoint(&dest));
    let mtu = compat_mtu(plan, side)?;
    report.path_mtu = Some(mtu);
    connect_rc(side, &dest, mtu, plan.qos)?;
    let watch =
        crate::traffic::counters::CounterWatch::start(&ctx.sysfs, side.ctx.name(), side.port);
    let mut meter = counted_meter("send", plan, 1);
    let r = pingpong_loop(side, true, &mut meter, false, plan, None)?;
    let iters = r.iters;
    report.ops.insert("send", r);
    // A stock peer sends no counters: this end's alone.
    report.counters = crate::traffic::counters::RunCounters::judge(watch.stop(), None, iters);
    Ok(())
}

fn native_msg(plan: &Plan, local: &Endpoint) -> NativeMsg {
    let l = &plan.length;
    NativeMsg {
        endpoint: local.clone(),
        ops: plan.ops,
        size: plan.size,
        mtu: plan.mtu.unwrap_or(0) as u16,
        iters: l.iters.unwrap_or(0),
        duration_ms: l.duration.map_or(0, |d| d.as_millis() as u32),
        lat: l.lat,
        follows: plan.follows,
    }
}

/// A meter for the exchanges where both ends know -n (ibv_rc_pingpong's).
fn counted_meter(name: &'static str, plan: &Plan, window: u32) -> Meter {
    Meter::start(
        name,
        Some(u64::from(plan.length.iters.unwrap_or(1000))),
        None,
        plan.progress,
        window,
    )
}

fn rc_endpoint(d: &RcDest) -> Endpoint {
    Endpoint {
        lid: d.lid,
        qpn: d.qpn,
        psn: d.psn,
        gid: d.gid,
        gid_index: None,
        gid_type: None,
        link_layer: LinkLayer::Other("unknown".into()),
        active_mtu: 0,
        rkey: 0,
        addr: 0,
        len: 0,
    }
}

/// ibv_rc_pingpong uses 1024 unless -m is given; stay within this port's active MTU.
fn compat_mtu(plan: &Plan, side: &Side) -> std::result::Result<u32, Failure> {
    let active = side.port_info.active_mtu;
    let want = plan.mtu.unwrap_or(1024.min(active.max(256)));
    oob::path_mtu(active, 0, Some(want))
        .map_err(|what| side.fail(Step::Compare, Cause::Invalid { what }))
}

/// RTR and RTS toward an ibv_rc_pingpong peer. It sets a GRH only when the peer's GID has
/// a non-zero interface id; on RoCE that means a peer without -g cannot work, so say so.
fn connect_rc(
    side: &Side,
    dest: &RcDest,
    mtu: u32,
    qos: PathQos,
) -> std::result::Result<(), Failure> {
    let interface_id_zero = dest.gid.0[8..] == [0; 8];
    let grh = match &side.gid {
        Some((idx, _, _)) if !interface_id_zero => Some((dest.gid, *idx)),
        _ => None,
    };
    if side.port_info.link_layer == LinkLayer::Ethernet && grh.is_none() {
        return Err(side.fail(
            Step::Compare,
            Cause::Invalid {
                what: format!(
                    "the peer sent GID {}: it runs without -g, but RoCE needs a GRH; run it with -g N",
                    dest.gid
                ),
            },
        ));
    }
    let rtr = RtrParams {
        path_mtu: mtu,
        dest_qpn: dest.qpn,
        dest_psn: dest.psn,
        dest_lid: dest.lid,
        grh,
        max_dest_rd_atomic: 1,
    };
    side.qp.to_rtr_qos(&rtr, qos)?;
    side.qp.to_rts(side.psn, 1)
}

fn serve_rc_pingpong(
    plan: &Plan,
    side: &mut Side,
    report: &mut Report,
    conn: &mut Conn,
    dest: RcDest,
) -> std::result::Result<(), Failure> {
    report.remote = Some(rc_endpoint(&dest));
    let mtu = compat_mtu(plan, side)?;
    report.path_mtu = Some(mtu);
    // ibv_rc_pingpong's server connects its QP before answering: the client sends right after.
    connect_rc(side, &dest, mtu, plan.qos)?;
    let local = side.endpoint();
    conn.send_rc(&RcDest {
        lid: local.lid,
        qpn: local.qpn,
        psn: local.psn,
        gid: local.gid,
    })?;
    conn.read_done()?;
    let mut meter = counted_meter("send", plan, 1);
    let r = pingpong_loop(side, false, &mut meter, false, plan, None)?;
    report.ops.insert("send", r);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn native_run(
    ctx: &Ctx,
    plan: &Plan,
    side: &mut Side,
    report: &mut Report,
    conn: &mut Conn,
    mine: NativeMsg,
    remote: NativeMsg,
    is_client: bool,
) -> std::result::Result<(), Failure> {
    let sysfs = &ctx.sysfs;
    report.remote = Some(remote.endpoint.clone());
    let length = Length::of(&mine);
    let mismatches = oob::compare(&mine, &remote);
    if !mismatches.is_empty() {
        return Err(side.fail(Step::Compare, Cause::Mismatch { mismatches }));
    }
    let mtu = oob::path_mtu(
        side.port_info.active_mtu,
        remote.endpoint.active_mtu,
        plan.mtu,
    )
    .map_err(|what| side.fail(Step::Compare, Cause::Invalid { what }))?;
    report.path_mtu = Some(mtu);
    let r = &remote.endpoint;
    let grh = side.gid.as_ref().map(|(idx, _, _)| (r.gid, *idx));
    let rtr = RtrParams {
        path_mtu: mtu,
        dest_qpn: r.qpn,
        dest_psn: r.psn,
        dest_lid: r.lid,
        grh,
        max_dest_rd_atomic: side.max_rd_atomic,
    };
    side.qp.to_rtr_qos(&rtr, plan.qos)?;
    side.qp.to_rts(side.psn, side.max_rd_atomic)?;
    conn.sync(1)?;
    let watch = crate::traffic::counters::CounterWatch::start(sysfs, side.ctx.name(), side.port);

    let passive = length.passive_wait(plan.timeout);
    let limit = length.iters.map(u64::from);
    if plan.ops.send {
        // The client keeps the clock of a --duration run and marks its last message.
        let deadline = length.duration.filter(|_| is_client);
        let mut meter = Meter::start("send", limit, deadline, plan.progress, 1);
        let marked_end = limit.is_none();
        let res = pingpong_loop(side, is_client, &mut meter, marked_end, plan, Some(conn))?;
        report.ops.insert("send", res);
        conn.sync(2)?;
    }
    for (op, name, tag) in [
        (plan.ops.write, "write", 10u8),
        (plan.ops.read, "read", 20u8),
    ] {
        if !op {
            continue;
        }
        // The client goes first, then the server; each end measures its own turn.
        for initiator_is_client in [true, false] {
            let me_first = initiator_is_client == is_client;
            let t = tag + if initiator_is_client { 0 } else { 5 };
            if me_first {
                let res = rdma_initiator(side, conn, name, r, plan, length, t)?;
                report.ops.insert(name, res);
            } else {
                rdma_target(side, conn, name, r.qpn, t, passive)?;
            }
        }
    }
    conn.sync_for(99, passive)?;
    // Both ends send their counters, then read the other's: no end waits on the other.
    let local = watch.stop();
    conn.send_counters(
        local
            .as_ref()
            .map(crate::model::counter::WireDelta::of)
            .as_ref(),
    )?;
    let peer = conn.read_counters().map(|w| w.to_delta());
    // Each end measured its own turns; the peer's turns were as long (or as many).
    let iters = report.ops.iter().map(|(_, r)| r.iters).max().unwrap_or(0);
    let ops = [plan.ops.send, plan.ops.write, plan.ops.read]
        .iter()
        .filter(|o| **o)
        .count() as u64;
    report.counters = crate::traffic::counters::RunCounters::judge(local, peer, iters * ops);
    Ok(())
}

/// The bytes one end puts in its buffer, so the other can check exactly what arrived.
fn pattern(op: &str, qpn: u32, len: usize) -> Vec<u8> {
    let unit = format!("rdmactl {op} from QPN 0x{qpn:06x}; ");
    unit.bytes().cycle().take(len).collect()
}

fn rdma_initiator(
    side: &mut Side,
    conn: &mut Conn,
    name: &'static str,
    remote: &Endpoint,
    plan: &Plan,
    length: Length,
    tag: u8,
) -> std::result::Result<OpResult, Failure> {
    let size = side.size as usize;
    let is_write = name == "write";
    if is_write {
        side.mr.write(0, &pattern("write", side.qp.qpn(), size));
    } else {
        side.mr.fill(0, size, 0);
    }
    conn.sync(tag)?;
    let op = if is_write {
        SendOp::Write {
            offset: 0,
            len: side.size,
            remote_addr: remote.addr,
            rkey: remote.rkey,
        }
    } else {
        SendOp::Read {
            offset: 0,
            len: side.size,
            remote_addr: remote.addr,
            rkey: remote.rkey,
        }
    };
    let window = if length.lat {
        1
    } else if is_write {
        WINDOW
    } else {
        WINDOW.min(u32::from(side.max_rd_atomic).max(1) * 2)
    };
    let mut meter = Meter::start(
        name,
        length.iters.map(u64::from),
        length.duration,
        plan.progress,
        window,
    );
    let mut res = windowed_loop(side, op, &mut meter, window, plan, Some(conn))?;
    if !is_write {
        let want = pattern("read", remote.qpn, size);
        if side.mr.read(0, size) != want {
            return Err(side.fail(
                Step::Verify,
                Cause::Invalid {
                    what: format!(
                        "RDMA READ returned data that is not the peer's buffer ({size} bytes)"
                    ),
                },
            ));
        }
        res.verified = Some(format!("read the peer's {size}-byte buffer and it matched"));
    } else {
        res.verified = Some("the peer checks what was written".into());
    }
    conn.sync(tag + 1)?;
    Ok(res)
}

fn rdma_target(
    side: &mut Side,
    conn: &mut Conn,
    name: &str,
    peer_qpn: u32,
    tag: u8,
    passive: Duration,
) -> std::result::Result<(), Failure> {
    let size = side.size as usize;
    let target = side.target();
    if name == "write" {
        side.mr.fill(target, size, 0);
    } else {
        side.mr.write(target, &pattern("read", side.qp.qpn(), size));
    }
    conn.sync(tag)?;
    conn.sync_for(tag + 1, passive)?;
    if name == "write" && side.mr.read(target, size) != pattern("write", peer_qpn, size) {
        return Err(side.fail(
            Step::Verify,
            Cause::Invalid {
                what: format!(
                    "the peer's RDMA WRITE did not leave its {size}-byte string in this buffer"
                ),
            },
        ));
    }
    Ok(())
}

/// ibv_rc_pingpong's traffic: the client sends first; each end sends its next message once
/// its previous send and a receive both completed. The run ends after the meter's count;
/// with `marked_end` (a --duration run) the client ends it when its meter says so, by
/// marking its last message, and the server stops after answering that one. Each sample is
/// the time between two of this end's sends (a round trip); nothing allocates in the loop.
fn pingpong_loop(
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
                        side.qp.post_recv(&side.mr, target, side.size, WRID_RECV)?;
                    }
                }
                _ => {}
            }
            pending &= !w.wr_id;
            if pending == 0 && total.map_or(true, |t| scnt < t) {
                let now = ticks();
                if let Some(at) = last_send {
                    meter.record(now.saturating_sub(at));
                }
                last_send = Some(now);
                if meter.done(scnt) && marked_end && is_client && total.is_none() {
                    side.mr.fill(0, 1, LAST_MESSAGE);
                    total = Some(scnt + 1);
                }
                side.qp.post_send(&side.mr, send, WRID_SEND)?;
                pending = WRID_RECV | WRID_SEND;
            }
        }
    }
    if let Some(at) = last_send {
        meter.record(ticks().saturating_sub(at));
    }
    Ok(meter.finish(scnt, u64::from(side.size) * scnt * 2))
}

/// The next completions: busy-polled, or asleep on the completion channel with -e.
fn wait(
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
fn stopped(conn: &mut Option<&mut Conn>) -> Option<Failure> {
    if let Some(f) = crate::traffic::interrupted_wait() {
        return Some(f);
    }
    let mut f = conn.as_mut()?.peer_stopped()?;
    f.step = Step::Poll;
    Some(f)
}

fn with_progress(mut f: Failure, side: &Side, progress: String) -> Failure {
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

/// RDMA WRITE or READ with up to `window` in flight until the meter says stop. With a
/// window of 1 each sample is one operation's latency, post to completion; with more it
/// would be queueing, so only the rate counts.
fn windowed_loop(
    side: &mut Side,
    op: SendOp,
    meter: &mut Meter,
    window: u32,
    plan: &Plan,
    mut conn: Option<&mut Conn>,
) -> std::result::Result<OpResult, Failure> {
    // Completions of one send queue come in order: a ring of post times is enough.
    let mut posted_at = vec![0u64; window as usize];
    let slot = |wr_id: u64| (wr_id % u64::from(window)) as usize;
    let mut wc = [Wc::default(); 16];
    let (mut posted, mut done) = (0u64, 0u64);
    let mut stop = false;
    loop {
        while !stop && posted - done < u64::from(window) {
            if meter.done(posted) {
                stop = true;
                break;
            }
            posted_at[slot(posted)] = ticks();
            side.qp.post_send(&side.mr, op, posted)?;
            posted += 1;
        }
        if done == posted {
            break;
        }
        let limit = meter.limit();
        let progress = |done: u64, posted: u64| match limit {
            Some(n) => format!("after {done}/{n} completions ({posted} posted)"),
            None => format!("after {done} completions ({posted} posted)"),
        };
        let n = wait(side, &mut wc, plan, &mut conn)
            .map_err(|f| with_progress(f, side, progress(done, posted)))?;
        let at = ticks();
        for w in &wc[..n] {
            if !w.ok() {
                return Err(with_progress(
                    side.fail(Step::Completion, w.cause()),
                    side,
                    progress(done, posted),
                ));
            }
            if window == 1 {
                meter.record(at.saturating_sub(posted_at[slot(w.wr_id)]));
            }
            done += 1;
        }
    }
    Ok(meter.finish(done, u64::from(side.size) * done))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(qpn: u32) -> Endpoint {
        Endpoint {
            lid: 0,
            qpn,
            psn: 0x1234,
            gid: Gid::parse("::ffff:192.168.77.1").unwrap(),
            gid_index: Some(1),
            gid_type: Some(GidType::RoceV2),
            link_layer: LinkLayer::Ethernet,
            active_mtu: 1024,
            rkey: 7,
            addr: 0x5555_0000,
            len: 4096,
        }
    }

    /// The report as a run that got to its single SEND test and then failed prints it:
    /// the documented shape (tests/json-schema.txt), figures rounded.
    #[test]
    fn report_has_the_documented_shape() {
        let sysfs = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysfs/rxe-veth-basic");
        let mut ops = OpResults::default();
        ops.insert(
            "send",
            crate::model::results::op_result(3, 24_576, Duration::from_nanos(3_066_150_123), 1, {
                let mut r = crate::model::results::LatencyRecorder::new();
                r.record(1_022_050);
                r.latency(1.0)
            }),
        );
        let mut context = FailureContext {
            device: "rxe1".into(),
            port: 1,
            gid_index: Some(1),
            local: Some(endpoint(0x11)),
            remote: Some(endpoint(0x12)),
            qp: Some(crate::model::failure::QP_PARAMS),
            ..FailureContext::default()
        };
        context.note = Some("after 3/1000 sends and 2/1000 receives".into());
        let f = Failure::new(
            Step::Completion,
            Cause::WcStatus {
                status: 12,
                vendor_err: 0,
                opcode: 0,
                op: None,
            },
            context,
        );
        let report = Report {
            role: "client",
            exchange: "native",
            requested_mtu: None,
            device: "rxe1".into(),
            port: 1,
            gid_index: Some(1),
            peer: Some("192.168.77.1:18515".into()),
            size: 4096,
            run: Run {
                iters: None,
                duration_sec: Some(3.5),
                lat: true,
                events: true,
                follows_client: false,
            },
            qos: Qos {
                sl: 3,
                tclass: 106,
                pkey_index: 0,
            },
            path_mtu: Some(1024),
            local: Some(endpoint(0x11)),
            remote: Some(endpoint(0x12)),
            gid_selection: Some(
                failure::choose_gid(&sysfs, "rxe1", 1, None).expect("fixture choice"),
            ),
            single: ops.single(),
            ops,
            counters: crate::traffic::counters::RunCounters::judge(
                Some(
                    crate::model::counter::WireDelta {
                        device: "rxe1".into(),
                        port: 1,
                        flavor: crate::model::counter::Flavor::Rxe,
                        has_counters_dir: false,
                        seconds: 0.5,
                        counters: vec![
                            crate::model::counter::WireCount {
                                name: "sent_pkts".into(),
                                source: crate::model::counter::CounterSource::HwCounters,
                                at_least: 2000,
                                exact: true,
                            },
                            crate::model::counter::WireCount {
                                name: "duplicate_request".into(),
                                source: crate::model::counter::CounterSource::HwCounters,
                                at_least: 12,
                                exact: true,
                            },
                        ],
                    }
                    .to_delta(),
                ),
                None,
                1000,
            ),
            ok: false,
            failure: Some(FailureReport::new(
                &f,
                crate::model::diagnostic::Explanation::new("retry-exceeded", "why", "fix"),
            )),
        };
        let json = serde_json::to_value(&report).unwrap();
        let shape = crate::json_schema::mismatches("pingpong", &json);
        assert!(shape.is_empty(), "{shape:#?}\n{json}");
        assert_eq!(json["latency_usec"]["min"], 1021.952);
        assert_eq!(json["run"]["duration_sec"], 3.5);
        assert_eq!(json["qos"]["tclass"], 106);
        assert_eq!(json["msgs_per_sec"], 0.978);
        // The counters block: the moved ones, and a retransmission finding for the
        // duplicates the responder saw.
        assert_eq!(
            json["counters"]["local"]["counters"][1]["name"],
            "duplicate_request"
        );
        assert!(
            json["counters"]["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["code"] == "counters-retransmission"),
            "{json}"
        );
    }

    /// The text report names the QoS that was asked for, and nothing when none was.
    #[test]
    fn qos_is_described_only_when_set() {
        assert_eq!(Qos::default().describe(false), "");
        let q = Qos {
            sl: 3,
            tclass: 96,
            pkey_index: 1,
        };
        assert_eq!(
            q.describe(true),
            ", SL 3, traffic class 96 (DSCP 24), P_Key index 1, completion events"
        );
    }

    #[test]
    fn patterns_differ_per_end_and_fill_exactly() {
        let a = pattern("write", 0x11, 100);
        assert_eq!(a.len(), 100);
        assert!(a.starts_with(b"rdmactl write from QPN 0x000011; rdmactl"));
        assert_ne!(a, pattern("write", 0x12, 100));
    }
}
