//! `pingpong --cm` and `selftest --cm`: the same ping-pong as the TCP exchange, but
//! connected through the RDMA connection manager, so the kernel picks device, port and GID
//! from the route to the peer. `check --peer` asks the kernel the same question
//! (`cmd::check_kernel`).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli::{GidIndexArg, Op as OpArg, PingpongArgs, SelftestArgs};
use crate::ctx::Ctx;
use crate::diagnose;
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::net;
use crate::gather::sysfs::SysfsRoot;
use crate::gather::verbs::cm::{
    self, CmEndpoint as Endpoint, CmOp as Op, ConnInfo, ConnectOptions, Listener, Region,
    Resolution, StepDone, Wake,
};
use crate::gather::verbs::qp::ticks;
use crate::model::device::LinkLayer;
use crate::model::diagnostic::FailureReport;
use crate::model::facts::{Facts, NetdevFacts};
use crate::model::failure::{Cause, EventKind, Failure, Step};
use crate::model::results::{
    ns_per_tick, op_result, render_ops, LatencyRecorder, OpResult, OpResults,
};
use crate::output;

/// How long a server waits for its first client: long enough to walk to the other host,
/// short enough that a forgotten server does not sit there for ever.
const SERVER_WAIT: Duration = Duration::from_secs(600);

/// The TCP exchange's report shape (role, exchange, device, port, gid_index, peer, size,
/// path_mtu, `ops`, a single op's figures repeated at the top level, ok, failure), plus
/// what the CM set up and, on the client, what the kernel chose.
#[derive(Debug, Serialize)]
struct Report {
    role: &'static str,
    exchange: &'static str,
    device: String,
    port: u32,
    gid_index: Option<u8>,
    peer: Option<String>,
    size: u32,
    path_mtu: Option<u32>,
    ops: OpResults,
    #[serde(flatten)]
    single: Option<OpResult>,
    /// Server: messages answered, and whether the client was a stock tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    echoed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stock_client: Option<bool>,
    connection: Option<ConnInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_choice: Option<Resolution>,
    /// What moved on this end's port over the transfer (the client's; the CM exchange
    /// carries no counters between the ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<crate::traffic::counters::RunCounters>,
    ok: bool,
    failure: Option<FailureReport>,
}

impl Report {
    fn new(role: &'static str, args: &PingpongArgs) -> Report {
        Report {
            role,
            exchange: "cm",
            device: args.device.clone().unwrap_or_default(),
            port: args.port,
            gid_index: None,
            peer: None,
            size: args.size(),
            path_mtu: None,
            ops: OpResults::default(),
            single: None,
            echoed: None,
            stock_client: None,
            connection: None,
            kernel_choice: None,
            counters: None,
            ok: false,
            failure: None,
        }
    }

    fn connected(&mut self, info: &ConnInfo) {
        self.device = info.device.clone();
        self.port = u32::from(info.port);
        self.gid_index = Some(info.sgid_index);
        self.peer = Some(info.peer.to_string());
        self.path_mtu = Some(info.path_mtu);
        self.connection = Some(info.clone());
    }
}

/// The byte every side expects at offset `i` of a test buffer, so data is checked end to end.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8 ^ 0x5a
}

fn fill_pattern(buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(i);
    }
}

fn first_difference(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter().zip(want).position(|(g, w)| g != w)
}

fn timeout_of(secs: f64) -> Result<Duration> {
    if !(secs.is_finite() && secs > 0.0 && secs < 86_400.0) {
        return Err(Error::Usage(format!(
            "--timeout {secs}: give a number of seconds between 0 and 86400"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The address the CM binds for DEV/PORT, as the CM connects by IP, not by device: the
/// IPv4 address in the port's GID table (RoCE), else an address of the port's netdev (the
/// IPoIB interface on InfiniBand, or an IPv6-only RoCE port). A port with none is
/// explained before the CM is even asked (cm-no-address, cm-no-ipoib-address).
pub fn port_address(sysfs: &Path, device: &str, port: u32, peer: Option<IpAddr>) -> Result<IpAddr> {
    let root = SysfsRoot::new(sysfs);
    // The kernel CM refuses a source and a peer of different families (EINVAL), so the
    // peer's family decides; without a peer, IPv4 first (RoCE tables carry it most).
    let want_v6 = peer.map(|p| p.to_canonical().is_ipv6());
    let family_fits = |ip: &IpAddr| want_v6.map_or(true, |v6| ip.is_ipv6() == v6);
    // A link-local address needs a scope the CM is not given here.
    let usable = |ip: &IpAddr| match ip {
        IpAddr::V4(v4) => !v4.is_unspecified(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80 && !v6.is_unspecified(),
    };
    let from_gids: Vec<IpAddr> = root
        .gid_table(device, port, false)?
        .iter()
        .filter(|e| e.gid_type != Some(crate::model::device::GidType::Ib))
        .map(|e| e.gid.ip())
        .filter(usable)
        .collect();
    let facts = root.port(device, port)?;
    let netdev = facts.netdev.map(|n| n.name);
    let from_netdev: Vec<IpAddr> = netdev
        .as_deref()
        .and_then(netdev_addresses)
        .unwrap_or_default()
        .into_iter()
        .filter(usable)
        .collect();
    let all: Vec<IpAddr> = from_gids.into_iter().chain(from_netdev).collect();
    let pick = all
        .iter()
        .filter(|ip| family_fits(ip))
        .find(|ip| want_v6.is_some() || ip.is_ipv4())
        .or_else(|| all.iter().find(|ip| family_fits(ip)));
    if let Some(ip) = pick {
        return Ok(*ip);
    }
    if let (Some(peer), false) = (peer, all.is_empty()) {
        let listed: Vec<String> = all.iter().map(IpAddr::to_string).collect();
        return Err(Error::Usage(format!(
            "{device}/{port} has no {} address for the peer {peer}: {} has only {}; \
             give the peer's {} address, or add one (ip addr add ADDR/PREFIX dev {})",
            if peer.is_ipv6() { "IPv6" } else { "IPv4" },
            netdev.as_deref().unwrap_or("its netdev"),
            listed.join(", "),
            if peer.is_ipv6() { "IPv4" } else { "IPv6" },
            netdev.as_deref().unwrap_or("DEV"),
        )));
    }
    let mut err = Failure::toward_addr(Step::CmSetup, None, Cause::NoAddress { netdev });
    err.context.device = device.to_string();
    err.context.port = port;
    err.context.link_layer = facts.link_layer.clone();
    Err(err.into())
}

/// The addresses of a netdev in this namespace; None when netlink cannot tell.
fn netdev_addresses(name: &str) -> Option<Vec<IpAddr>> {
    let dev = net::netdev(name).ok()??;
    let all = net::addresses().ok()?;
    Some(
        all.into_iter()
            .filter(|a| a.ifindex == dev.index)
            .map(|a| a.address)
            .collect(),
    )
}

fn first_device(sysfs: &Path) -> Result<String> {
    let root = SysfsRoot::new(sysfs);
    root.device_names()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::NoDevices {
            path: root.path().join("class/infiniband"),
        })
}

fn peer_addr(server: &str, port: u16) -> Result<SocketAddr> {
    let ip = crate::gather::failure::resolve_peer(server, port)?;
    crate::gather::failure::refuse_special_peer(ip)?;
    Ok(SocketAddr::new(ip, port))
}

fn quiet(_: StepDone) {}

/// `pingpong --cm`: client with SERVER, server without.
pub fn run(ctx: &Ctx, args: &PingpongArgs) -> Result<u8> {
    let timeout = timeout_of(args.timeout)?;
    if args.compat.is_some() {
        return Err(Error::Usage(
            "--compat speaks a TCP exchange; it does not combine with --cm".into(),
        ));
    }
    if args.gid_index.is_some() {
        return Err(Error::Usage(
            "-g does not apply with --cm: the kernel picks the GID from the route (rdmactl check --peer shows its choice)".into(),
        ));
    }
    if args.duration.is_some()
        || args.events
        || args.persist
        || args.sl.is_some()
        || args.tclass.is_some()
        || args.pkey_index.is_some()
    {
        return Err(Error::Usage(
            "--duration, -e, --persist, --sl, --tclass and --pkey-index are not implemented with --cm; use the TCP exchange".into(),
        ));
    }
    if args.mtu.is_some() {
        return Err(Error::Usage(
            "-m does not apply with --cm: the CM takes the path MTU from the route (the netdev MTU on RoCE, the path record on InfiniBand)".into(),
        ));
    }
    if args.size() == 0 || args.size() > cm::MAX_BUFFER_LEN {
        return Err(Error::Usage(format!(
            "--size {}: with --cm give 1 to {} bytes (256 MiB, what a server registers at most)",
            args.size(),
            cm::MAX_BUFFER_LEN
        )));
    }
    if args.server.is_some() && args.tcp_port == 0 {
        return Err(Error::Usage(
            "-p 0: a client needs the server's port (a server started with -p 0 prints the one it got)".into(),
        ));
    }
    if args.device.is_none() && args.bind.is_none() && args.port != 1 {
        return Err(Error::Usage(format!(
            "-i {}: with --cm a port is named with -d (its address is bound); without -d the kernel picks device and port from the route",
            args.port
        )));
    }
    // The CM binds an address, not a device: -d stands for its port's address.
    let peer = match &args.server {
        Some(server) => Some(peer_addr(server, args.tcp_port)?),
        None => None,
    };
    if let Some(dev) = &args.device {
        crate::gather::inventory::device_port(&ctx.sysfs, Some(dev), args.port)?;
    }
    let source = || -> Result<Option<IpAddr>> {
        Ok(match (args.bind, &args.device) {
            (Some(ip), _) => Some(ip),
            (None, Some(dev)) => Some(port_address(
                &ctx.sysfs,
                dev,
                args.port,
                peer.map(|p| p.ip()),
            )?),
            (None, None) => None,
        })
    };
    match peer {
        Some(peer) => {
            let mut report = Report::new("client", args);
            report.peer = Some(peer.to_string());
            let outcome = source().and_then(|src| {
                client(&ctx.sysfs, args, peer, src, timeout, &mut report)
                    .map_err(|e| with_net_evidence(e, src, &ctx.sysfs))
            });
            finish(ctx, report, outcome)
        }
        None => {
            let mut report = Report::new("server", args);
            let outcome = source().and_then(|src| server(args, src, timeout, &mut report));
            finish(ctx, report, outcome)
        }
    }
}

/// Explains a CM failure where it happened, with the network facts of this side.
fn with_net_evidence(err: Error, src: Option<IpAddr>, sysfs: &Path) -> Error {
    match err {
        Error::Failure(f) if !f.is_missing_stack() => {
            Error::Explained(Box::new(explain_cm(*f, src, sysfs)))
        }
        other => other,
    }
}

/// Explain a CM failure with what the CM does not say when it cannot find the peer: the
/// state of the netdev that carries this side's address `src`, and the kernel's route
/// toward the peer.
pub fn explain_cm(mut failure: Failure, src: Option<IpAddr>, sysfs: &Path) -> FailureReport {
    let facts = cm_facts(&mut failure, src, sysfs);
    FailureReport::new(&failure, diagnose::explain(&failure, &facts))
}

fn cm_facts(err: &mut Failure, src: Option<IpAddr>, sysfs: &Path) -> Facts {
    let mut facts = Facts {
        cm_source: src,
        ..Facts::default()
    };
    let finding_the_peer = matches!(
        err.step,
        Step::CmResolveAddr | Step::CmResolveRoute | Step::CmConnect
    );
    // A reject or an accept came from the peer: the way there works.
    let peer_answered = matches!(
        err.cause,
        Cause::CmEvent {
            event: EventKind::Rejected,
            ..
        } | Cause::ServerRejected { .. }
            | Cause::ForeignServer { .. }
    );
    if !finding_the_peer || peer_answered {
        return facts;
    }
    // Netlink errors only cost the evidence; the CM's own failure still stands.
    if let Some(src) = src {
        match net::address_owner(src) {
            Ok(Some(dev)) => {
                let admin = if dev.admin_up {
                    ""
                } else {
                    ", administratively down"
                };
                facts.evidence.push(format!(
                    "{src} is on {}: operstate {}{admin}",
                    dev.name, dev.operstate
                ));
                facts.netdev = Some(NetdevFacts {
                    up: dev.is_up(),
                    exists: true,
                    operstate: Some(dev.operstate.clone()),
                    mtu: None,
                    name: dev.name,
                });
            }
            Ok(None) => facts
                .evidence
                .push(format!("{src} is not an address of this host")),
            Err(_) => {}
        }
    }
    let peer = err
        .context
        .peer_addr
        .as_deref()
        .and_then(|p| p.parse::<SocketAddr>().ok())
        .map(|p| p.ip().to_canonical());
    if let Some(peer) = peer {
        // The typed route facts let the rules name the hop that does not answer.
        facts.route = net::route_facts(peer, None).ok().map(|(r, _)| r);
        match net::route_get_soft(peer, None) {
            Ok(Some(r)) if r.is_local() => facts.evidence.push(format!(
                "ip route get {peer}: local (an address of this host)"
            )),
            Ok(Some(r)) => {
                let mut how = format!("ip route get {peer}:");
                if let Some(gw) = r.gateway {
                    how.push_str(&format!(" via {gw}"));
                }
                how.push_str(&format!(" dev {}", r.oif.as_deref().unwrap_or("?")));
                if let Some(src) = r.prefsrc {
                    how.push_str(&format!(" src {src}"));
                }
                facts.evidence.push(how);
            }
            Ok(None) => facts
                .evidence
                .push(format!("ip route get {peer}: no route")),
            Err(_) => {}
        }
    }
    if err.step == Step::CmResolveAddr && err.cause.errno_value() == Some(libc::ENODEV) {
        add_ipoib_evidence(err, &mut facts, sysfs);
    }
    facts
}

/// ENODEV from address resolution: the route leads to no RDMA device. On a host whose RDMA
/// ports are all InfiniBand, their IPoIB interfaces lack addresses.
fn add_ipoib_evidence(err: &mut Failure, facts: &mut Facts, sysfs: &Path) {
    let Ok(devices) = SysfsRoot::new(sysfs).devices() else {
        return;
    };
    let ports: Vec<_> = devices.iter().flat_map(|d| &d.ports).collect();
    let is_ib = |p: &&crate::model::device::Port| p.link_layer == Some(LinkLayer::InfiniBand);
    if ports.is_empty() || !ports.iter().all(is_ib) {
        return;
    }
    err.context.link_layer = Some(LinkLayer::InfiniBand);
    for p in ports {
        let line = match p.netdev.as_ref().map(|n| n.name.as_str()) {
            None => format!("{}/{} is InfiniBand and has no IPoIB interface", p.device, p.number),
            Some(dev) => match netdev_addresses(dev) {
                Some(a) if a.is_empty() => format!(
                    "{}/{} is InfiniBand; its IPoIB interface {dev} has no IP address",
                    p.device, p.number
                ),
                Some(a) => format!(
                    "{}/{} is InfiniBand; its IPoIB interface {dev} has {}",
                    p.device,
                    p.number,
                    a.iter().map(IpAddr::to_string).collect::<Vec<_>>().join(", ")
                ),
                None => format!(
                    "{}/{} is InfiniBand; its IPoIB interface {dev} is not in this network namespace",
                    p.device, p.number
                ),
            },
        };
        facts.evidence.push(line);
    }
}

/// Prints the report, with the failure explained, and turns it into the exit status. A
/// usage error, or a run that failed before the CM could tell anything, prints no report.
fn finish(ctx: &Ctx, mut report: Report, outcome: Result<()>) -> Result<u8> {
    let failure = match outcome {
        Ok(()) => None,
        Err(Error::Explained(r)) if r.exit_code() == exit::FAILED => Some(*r),
        Err(Error::Failure(f)) if !f.is_missing_stack() => Some(explain_cm(*f, None, &ctx.sysfs)),
        Err(other) => return Err(other),
    };
    report.ok = failure.is_none();
    report.single = report.ops.single();
    report.failure = failure.clone();
    if ctx.json {
        output::print(&output::json(&report))?;
    } else if report.connection.is_some() {
        output::print(render(&report, ctx.style).trim_end())?;
    }
    match failure {
        // The -j report carries it; in text the summary, why and fix go to stderr once.
        Some(r) if ctx.json => Err(Error::Reported(r.exit_code())),
        Some(r) => Err(Error::Explained(Box::new(r))),
        None => Ok(exit::OK),
    }
}

fn render(r: &Report, style: crate::output::Style) -> String {
    let mut out = String::new();
    if let Some(c) = &r.connection {
        let at = |a: Option<SocketAddr>| a.map_or("?".to_string(), |a| a.to_string());
        let mut what = vec![format!("index {}", c.sgid_index)];
        what.extend(c.gid_type.as_ref().map(ToString::to_string));
        what.extend(r.kernel_choice.as_ref().and_then(|k| k.netdev.clone()));
        let gid = match c.sgid {
            Some(g) => format!(", GID {g} ({})", what.join(", ")),
            None => format!(", GID {}", what.join(", ")),
        };
        out.push_str(&format!(
            "  local address:  {}, QPN 0x{:06x}{gid}\n",
            at(c.local),
            c.qpn
        ));
        out.push_str(&format!(
            "  remote address: {}, QPN 0x{:06x}\n",
            c.peer, c.remote_qpn
        ));
        out.push_str(&format!(
            "  {} {}/{} (cm exchange), path MTU {}, {} B messages\n",
            r.role, c.device, c.port, c.path_mtu, r.size
        ));
    }
    out.push_str(&render_ops(&r.ops));
    if let Some(c) = &r.counters {
        out.push_str(&c.render(style));
    }
    if let Some(echoed) = r.echoed {
        let who = if r.stock_client == Some(true) {
            "a stock client (rping/rdma_client)"
        } else {
            "an rdmactl client"
        };
        out.push_str(&format!("served {who}: {echoed} messages answered\n"));
    }
    if r.ok {
        out.push_str("ok\n");
    }
    out
}

fn client(
    sysfs: &Path,
    args: &PingpongArgs,
    peer: SocketAddr,
    src: Option<IpAddr>,
    timeout: Duration,
    report: &mut Report,
) -> Result<()> {
    let opts = ConnectOptions {
        src,
        len: args.size(),
        timeout,
    };
    let (mut ep, res) = cm::connect(peer, &opts, &mut quiet)?;
    if let Some(dev) = &args.device {
        if dev != &res.device {
            return Err(Error::Usage(format!(
                "the kernel routes {peer} through {}, not {dev}; give --bind with {dev}'s address",
                res.device
            )));
        }
    }
    report.connected(&ep.info);
    report.kernel_choice = Some(res);
    let iters = args.iterations().unwrap_or(1000);
    let ops: &[Op] = match args.op.unwrap_or(OpArg::All) {
        OpArg::Send => &[Op::Send],
        OpArg::Write => &[Op::Write],
        OpArg::Read => &[Op::Read],
        OpArg::All => &[Op::Send, Op::Write, Op::Read],
    };
    // On stderr even with --json, as the server's "listening" line: a long run shows it got
    // this far, and scripts can wait for it before disturbing the connection.
    eprintln!(
        "connected to {peer} on {}/{} (GID index {}); {} x {} iterations of {} bytes",
        ep.info.device,
        ep.info.port,
        ep.info.sgid_index,
        ops.iter().map(|op| op.name()).collect::<Vec<_>>().join("+"),
        iters,
        args.size()
    );
    // What the server's buffer holds: it fills it with the pattern when it accepts, and
    // every WRITE of ours replaces it.
    let mut peer_image: Vec<u8> = (0..args.size() as usize).map(pattern).collect();
    let watch = crate::traffic::counters::CounterWatch::start(
        sysfs,
        &ep.info.device,
        u32::from(ep.info.port),
    );
    for op in ops {
        let result = run_op(&mut ep, *op, iters, args.lat, &mut peer_image)?;
        report.ops.insert(op.name(), result);
    }
    report.counters = crate::traffic::counters::RunCounters::judge(
        watch.stop(),
        None,
        u64::from(iters) * ops.len() as u64,
    );
    ep.disconnect()?;
    Ok(())
}

/// `iters` times `op`; SEND (and WRITE and READ with `lat`) one at a time, each sample post
/// to completion (for SEND, to both our completion and the echo: a round trip, as
/// ibv_rc_pingpong counts it); WRITE and READ otherwise with a window in flight, for
/// bandwidth. Then the data is checked: the echo, what a WRITE left in the peer's buffer
/// (read back), or what a READ brought.
fn run_op(
    ep: &mut Endpoint,
    op: Op,
    iters: u32,
    lat: bool,
    peer_image: &mut [u8],
) -> std::result::Result<OpResult, Failure> {
    let len = peer_image.len();
    // WRITE sends the inverted pattern, so a WRITE that did nothing cannot pass the check.
    let sent: Vec<u8> = (0..len)
        .map(|i| {
            if op == Op::Write {
                !pattern(i)
            } else {
                pattern(i)
            }
        })
        .collect();
    ep.region(Region::Send)[..len].copy_from_slice(&sent);
    ep.region(Region::Rdma).fill(0);
    let mut samples = LatencyRecorder::new();
    let window = if op == Op::Send || lat {
        1
    } else {
        ep.window(op)
    };
    let waiting_for = match op {
        Op::Send => "the echo of a SEND",
        Op::Write => "an RDMA WRITE completion",
        Op::Read => "an RDMA READ completion",
    };
    // TSC ticks per sample, as the TCP exchange measures (no clock read per iteration).
    let start = Instant::now();
    let start_tick = ticks();
    if op == Op::Send {
        ping_pong(ep, len, iters, &mut samples, waiting_for)?;
    } else {
        windowed(ep, op, len, iters, window, &mut samples, waiting_for)?;
    }
    let elapsed = start.elapsed();
    let scale = ns_per_tick(start_tick, ticks(), elapsed);
    let bytes = len as u64 * u64::from(iters) * if op == Op::Send { 2 } else { 1 };
    let mut result = op_result(
        u64::from(iters),
        bytes,
        elapsed,
        window as u32,
        samples.latency(scale),
    );
    if iters == 0 {
        return Ok(result);
    }
    let (got, want, verified) = match op {
        Op::Send => (
            ep.region(Region::Recv)[..len].to_vec(),
            sent,
            format!("every echo matched the {len}-byte pattern"),
        ),
        Op::Write => {
            ep.post(Op::Read, len, u64::from(iters))?;
            ep.poll("the READ that checks the written data")?;
            peer_image.copy_from_slice(&sent);
            (
                ep.region(Region::Rdma)[..len].to_vec(),
                sent,
                format!("read the peer's {len}-byte buffer back and it matched"),
            )
        }
        Op::Read => (
            ep.region(Region::Rdma)[..len].to_vec(),
            peer_image.to_vec(),
            format!("read the peer's {len}-byte buffer and it matched"),
        ),
    };
    if let Some(offset) = first_difference(&got, &want) {
        let failure = Cause::Corrupted {
            op: op.name(),
            offset,
            len,
        };
        return Err(ep.err(Step::CmTransfer, failure));
    }
    result.verified = Some(verified);
    Ok(result)
}

/// One SEND at a time, each waiting for the peer's echo: a round trip per sample.
fn ping_pong(
    ep: &mut Endpoint,
    len: usize,
    iters: u32,
    samples: &mut LatencyRecorder,
    waiting_for: &'static str,
) -> std::result::Result<(), Failure> {
    for i in 0..iters {
        let t0 = ticks();
        ep.post(Op::Send, len, u64::from(i))?;
        // The echo can complete before our own send completion is polled.
        let (mut sent, mut echoed) = (false, false);
        while !(sent && echoed) {
            let c = ep.poll(waiting_for)?;
            if c.is_recv {
                echoed = true;
                ep.post_recv()?;
            } else {
                sent = true;
            }
        }
        samples.record(ticks().saturating_sub(t0));
    }
    Ok(())
}

/// RDMA WRITEs or READs with up to `window` in flight, as the TCP exchange runs them; each
/// sample is one request, post to completion (latency only when `window` is 1).
fn windowed(
    ep: &mut Endpoint,
    op: Op,
    len: usize,
    iters: u32,
    window: usize,
    samples: &mut LatencyRecorder,
    waiting_for: &'static str,
) -> std::result::Result<(), Failure> {
    let iters = iters as usize;
    // Completions of one send queue come in order: a ring of post times is enough.
    let mut posted_at = vec![0u64; window];
    let (mut posted, mut done) = (0usize, 0usize);
    while done < iters {
        while posted < iters && posted - done < window {
            posted_at[posted % window] = ticks();
            ep.post(op, len, posted as u64)?;
            posted += 1;
        }
        let c = ep.poll(waiting_for)?;
        let at = ticks();
        if c.is_recv {
            // Nothing is sent to us meanwhile; keep the receive queue as it was.
            ep.post_recv()?;
            continue;
        }
        samples.record(at.saturating_sub(posted_at[c.wr_id as usize % window]));
        done += 1;
    }
    Ok(())
}

fn server(
    args: &PingpongArgs,
    src: Option<IpAddr>,
    timeout: Duration,
    report: &mut Report,
) -> Result<()> {
    // The IPv6 wildcard takes IPv4 clients too (unless net.ipv6.bindv6only is set), as
    // the TCP exchange's listener does.
    let addr = SocketAddr::new(
        src.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        args.tcp_port,
    );
    let listener = Listener::bind(addr)?;
    if let (Some(dev), Some(bound)) = (&args.device, listener.device()) {
        if dev != &bound {
            return Err(Error::Usage(format!(
                "{addr} is an address of {bound}, not {dev}: give -d {bound}, or --bind with {dev}'s address"
            )));
        }
    }
    // On stderr even with --json: scripts wait for this line before starting the client.
    eprintln!(
        "listening on {} ({}) for an rdmactl pingpong --cm client",
        listener.local_addr().unwrap_or(addr),
        listener
            .device()
            .unwrap_or_else(|| "every RDMA device".into())
    );
    let mut ep = listener.accept(
        SERVER_WAIT.max(timeout),
        timeout,
        &mut quiet,
        &mut fill_pattern,
    )?;
    report.connected(&ep.info);
    report.stock_client = Some(ep.foreign);
    let mut echoed = 0;
    let served = serve(&mut ep, &listener, &mut echoed);
    report.echoed = Some(echoed);
    served?;
    ep.disconnect()?;
    Ok(())
}

/// Echo every SEND until the client disconnects. The client's READs and WRITEs need no
/// help from this side, only the buffer advertised in the accept.
///
/// A stock client gets its own protocol: rping sends a 16-byte {addr, rkey, len} (all
/// big-endian); the server READs the "ping", answers with a 16-byte go-ahead, gets the
/// sink's {addr, rkey, len}, WRITEs the ping back and sends another go-ahead.
/// rdma_client sends 16 zero bytes and waits for 16 bytes back, which the echo covers.
///
/// A second client meanwhile is turned away with a reject that says so, instead of waiting
/// out its timeout: the listener is looked at every `LOOK_AROUND` without a message (a
/// client's WRITEs and READs give this side no completion) and every 1024 messages.
fn serve(
    ep: &mut Endpoint,
    listener: &Listener,
    served: &mut u64,
) -> std::result::Result<(), Failure> {
    const LOOK_AROUND: Duration = Duration::from_secs(1);
    let waiting_for = "a SEND or a disconnect from the client";
    let mut rping_read_next = true;
    let mut idle = Duration::ZERO;
    loop {
        let wake = match ep.wait(LOOK_AROUND, waiting_for) {
            Err(Failure {
                cause: Cause::Timeout { .. },
                ..
            }) => {
                idle += LOOK_AROUND;
                if idle >= SERVER_WAIT {
                    let cause = Cause::Timeout {
                        waited_ms: SERVER_WAIT.as_millis() as u64,
                        waiting_for: Some(waiting_for),
                    };
                    return Err(ep.err(Step::CmTransfer, cause));
                }
                turn_away_others(ep, listener)?;
                continue;
            }
            other => other?,
        };
        idle = Duration::ZERO;
        if *served % 1024 == 1023 {
            turn_away_others(ep, listener)?;
        }
        match wake {
            Wake::Disconnected => return Ok(()),
            Wake::Completion(c) if c.is_recv => {
                let n = c.byte_len as usize;
                // The client sends its next message only after our answer, so the
                // receive area stays as it is until then.
                ep.post_recv()?;
                let rping = if ep.foreign {
                    rping_info(&ep.region(Region::Recv)[..n])
                } else {
                    None
                };
                match rping {
                    Some(remote) => {
                        let len = (remote.len as usize).min(ep.len());
                        ep.set_remote(remote);
                        if rping_read_next {
                            ep.post(Op::Read, len, WR_READ)?;
                            wait_for(ep, WR_READ)?;
                        } else {
                            // rping writes back the string it read, NUL included.
                            let rdma = ep.region(Region::Rdma)[..len].to_vec();
                            let text_len = rdma.iter().position(|b| *b == 0).map_or(len, |p| p + 1);
                            ep.region(Region::Send)[..text_len].copy_from_slice(&rdma[..text_len]);
                            ep.post(Op::Write, text_len, WR_WRITE)?;
                            wait_for(ep, WR_WRITE)?;
                        }
                        rping_read_next = !rping_read_next;
                        // The client may answer the go-ahead before its send completion
                        // is polled here; the main loop collects it.
                        ep.post(Op::Send, RPING_INFO_LEN, WR_SEND)?;
                    }
                    None => {
                        ep.copy_region(Region::Recv, Region::Send, n);
                        ep.post(Op::Send, n, WR_SEND)?;
                    }
                }
                *served += 1;
            }
            Wake::Completion(_) => {}
        }
    }
}

/// Rejects every client waiting behind the one being served, naming that one.
fn turn_away_others(ep: &Endpoint, listener: &Listener) -> std::result::Result<(), Failure> {
    let reason = format!("busy serving {}", ep.info.peer);
    while let Some(other) = listener.turn_away(&reason)? {
        eprintln!("rdmactl: turned {other} away: {reason}");
    }
    Ok(())
}

const WR_SEND: u64 = 1;
const WR_READ: u64 = 2;
const WR_WRITE: u64 = 3;
const RPING_INFO_LEN: usize = 16;

/// rping's `struct rping_rdma_info`: be64 buf, be32 rkey, be32 size.
fn rping_info(msg: &[u8]) -> Option<cm::RemoteBuffer> {
    if msg.len() != RPING_INFO_LEN {
        return None;
    }
    let addr = u64::from_be_bytes(msg[0..8].try_into().ok()?);
    let rkey = u32::from_be_bytes(msg[8..12].try_into().ok()?);
    let len = u32::from_be_bytes(msg[12..16].try_into().ok()?);
    (addr != 0 && len != 0).then_some(cm::RemoteBuffer { addr, rkey, len })
}

/// Wait for the completion of our READ or WRITE `wr_id`; rping sends nothing until our
/// go-ahead, so a RECV meanwhile breaks its protocol.
fn wait_for(ep: &mut Endpoint, wr_id: u64) -> std::result::Result<(), Failure> {
    loop {
        match ep.wait(ep.timeout(), "the completion of our own work request")? {
            Wake::Completion(c) if !c.is_recv && c.wr_id == wr_id => return Ok(()),
            Wake::Completion(c) if !c.is_recv => {}
            Wake::Completion(_) => {
                let text = "the client sent a message before our answer completed";
                return Err(ep.err(Step::CmTransfer, Cause::invalid(text)));
            }
            Wake::Disconnected => {
                let event = EventKind::Disconnected;
                return Err(ep.err(Step::CmTransfer, Cause::cm_event(event, 0)));
            }
        }
    }
}

// ---------------------------------------------------------------- selftest --cm

/// One step, as `selftest`'s steps, plus the side that ran it.
#[derive(Debug, Clone, Serialize)]
struct StepLine {
    side: &'static str,
    step: String,
    ok: bool,
    /// Rounded to nanoseconds in JSON.
    #[serde(serialize_with = "crate::output::ser_3dp")]
    elapsed_us: f64,
    detail: String,
    failure: Option<FailureReport>,
}

/// `selftest`'s report shape; `gid_index` is the one the kernel chose for the client.
#[derive(Debug, Serialize)]
struct SelftestReport {
    mode: &'static str,
    /// The server's device, and the client's in `peer_device` (the same name on one
    /// device), as `selftest` names its two ends.
    device: Option<String>,
    peer_device: Option<String>,
    port: u32,
    /// The addresses the devices stand for: the server listens on one, the client
    /// connects from the other.
    server_address: Option<IpAddr>,
    client_address: Option<IpAddr>,
    gid_index: Option<u8>,
    size: u32,
    steps: Vec<StepLine>,
    ok: bool,
}

/// The steps of both sides, in the order they finished.
#[derive(Clone, Default)]
struct Steps(Arc<Mutex<Vec<StepLine>>>);

impl Steps {
    fn push(&self, line: StepLine) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }

    fn ok(&self, side: &'static str, step: &str, detail: String, elapsed: Duration) {
        self.push(StepLine {
            side,
            step: step.to_string(),
            ok: true,
            elapsed_us: elapsed.as_secs_f64() * 1e6,
            detail,
            failure: None,
        });
    }

    fn failed(&self, side: &'static str, step: &str, report: FailureReport, elapsed: Duration) {
        self.push(StepLine {
            side,
            step: step.to_string(),
            ok: false,
            elapsed_us: elapsed.as_secs_f64() * 1e6,
            detail: report.message.clone(),
            failure: Some(report),
        });
    }

    fn take(&self) -> Vec<StepLine> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A failure explained by the rules alone, for steps where this host has nothing to add
/// (the peer answered, or the step is not about finding it).
fn plain_report(e: &Failure) -> FailureReport {
    FailureReport::new(e, diagnose::explain(e, &Facts::default()))
}

/// A CM stage as selftest's step column names it ("resolve address", "accept").
fn step_word(step: Step) -> &'static str {
    step.name().trim_start_matches("CM ")
}

/// How long the client waits for the server's own failure once its connect failed: a
/// server that broke first (a QP it could not create) has the root cause; one still
/// waiting for a request that will never come has nothing to add.
const SERVER_GRACE: Duration = Duration::from_secs(1);

/// `selftest --cm`: a loopback through the CM on one device (or between two with two
/// `-d`): listen, resolve, connect, accept, one SEND/RECV, WRITE and READ, disconnect.
pub fn selftest_cm(ctx: &Ctx, args: &SelftestArgs) -> Result<u8> {
    let timeout = timeout_of(args.timeout)?;
    if args.gid_index != GidIndexArg::Auto {
        return Err(Error::Usage(
            "-g does not apply with --cm: the kernel picks the GID from the route".into(),
        ));
    }
    let server_dev = match args.devices.first() {
        Some(d) => d.clone(),
        None => first_device(&ctx.sysfs)?,
    };
    let client_dev = args
        .devices
        .get(1)
        .cloned()
        .unwrap_or_else(|| server_dev.clone());
    let size = args.size.max(1);
    let mut report = SelftestReport {
        mode: "cm",
        device: Some(server_dev.clone()),
        peer_device: Some(client_dev.clone()),
        port: args.port,
        server_address: None,
        client_address: None,
        gid_index: None,
        size,
        steps: Vec::new(),
        ok: false,
    };
    let steps = Steps::default();
    // The CM binds addresses: each device stands for its port's.
    let server_ip = port_address(&ctx.sysfs, &server_dev, args.port, None);
    let client_ip = port_address(
        &ctx.sysfs,
        &client_dev,
        args.port,
        server_ip.as_ref().ok().copied(),
    );
    report.server_address = server_ip.as_ref().ok().copied();
    report.client_address = client_ip.as_ref().ok().copied();
    let failure = match (server_ip, client_ip) {
        (Ok(server_ip), Ok(client_ip)) => {
            let plan = Loopback {
                sysfs: &ctx.sysfs,
                server_dev: &server_dev,
                listen_on: SocketAddr::new(server_ip, 0),
                client_ip,
                size,
                timeout,
            };
            run_selftest(&plan, &steps, &mut report)
        }
        (Err(e), _) => Some(no_address(&steps, "server", e)?),
        (_, Err(e)) => Some(no_address(&steps, "client", e)?),
    };
    report.steps = steps.take();
    report.ok = failure.is_none() && report.steps.iter().all(|s| s.ok);
    if let Some(e) = failure.as_ref().filter(|e| e.is_missing_stack()) {
        return Err(e.clone().into());
    }
    let text = if ctx.json {
        output::json(&report)
    } else {
        render_selftest(&report)
    };
    output::print(&text)?;
    // The failed step and its explanation are in the report just printed.
    match failure {
        None if report.ok => Ok(exit::OK),
        _ => Err(Error::Reported(exit::FAILED)),
    }
}

/// A port without an address is the run's first failed step; other errors (no such
/// device, no RDMA stack) end the run without a report.
fn no_address(steps: &Steps, side: &'static str, err: Error) -> Result<Failure> {
    match err {
        Error::Failure(e) if !e.is_missing_stack() => {
            steps.failed(side, "address", plain_report(&e), Duration::ZERO);
            Ok(*e)
        }
        other => Err(other),
    }
}

/// What `selftest --cm` connects: a listener on the server device's address, a client
/// from the other device's.
struct Loopback<'a> {
    sysfs: &'a Path,
    server_dev: &'a str,
    listen_on: SocketAddr,
    client_ip: IpAddr,
    size: u32,
    timeout: Duration,
}

/// Runs the steps; the first failure, if any.
fn run_selftest(plan: &Loopback, steps: &Steps, report: &mut SelftestReport) -> Option<Failure> {
    let Loopback {
        sysfs,
        server_dev,
        listen_on,
        client_ip,
        size,
        timeout,
    } = *plan;
    let t = Instant::now();
    let listener = match Listener::bind(listen_on) {
        Ok(l) => l,
        Err(e) => {
            steps.failed("server", "listen", plain_report(&e), t.elapsed());
            return Some(e);
        }
    };
    let listen_addr = listener.local_addr().unwrap_or(listen_on);
    let device = listener.device().unwrap_or_else(|| server_dev.to_string());
    steps.ok(
        "server",
        "listen",
        format!("{listen_addr} on {device}"),
        t.elapsed(),
    );

    let (done_tx, done_rx) = mpsc::channel();
    let server_steps = steps.clone();
    // Detached: when the client cannot connect, the server may still be waiting for a
    // request, and the process ends without it.
    std::thread::spawn(move || {
        let mut log = |s: StepDone| server_steps.ok("server", s.step, s.detail, s.elapsed);
        let outcome = listener
            .accept(timeout, timeout, &mut log, &mut fill_pattern)
            .and_then(|mut ep| {
                let t = Instant::now();
                let mut echoed = 0;
                serve(&mut ep, &listener, &mut echoed)?;
                ep.disconnect()?;
                let detail = format!("DISCONNECTED; {echoed} SENDs echoed");
                server_steps.ok("server", "disconnect", detail, t.elapsed());
                Ok(())
            });
        if let Err(e) = &outcome {
            server_steps.failed("server", step_word(e.step), plain_report(e), Duration::ZERO);
        }
        let _ = done_tx.send(outcome);
    });

    let mut client_log = |s: StepDone| steps.ok("client", s.step, s.detail, s.elapsed);
    let opts = ConnectOptions {
        src: Some(client_ip),
        len: size,
        timeout,
    };
    let (mut ep, _) = match cm::connect(listen_addr, &opts, &mut client_log) {
        Ok(connected) => connected,
        Err(e) => {
            let elapsed = Duration::from_millis(e.context.elapsed_ms.unwrap_or_default());
            let step = step_word(e.step);
            steps.failed(
                "client",
                step,
                explain_cm(e.clone(), Some(client_ip), sysfs),
                elapsed,
            );
            return match done_rx.recv_timeout(SERVER_GRACE) {
                Ok(Err(server_err)) if server_err.step != Step::CmAccept => Some(server_err),
                _ => Some(e),
            };
        }
    };
    report.gid_index = Some(ep.info.sgid_index);
    let mut peer_image: Vec<u8> = (0..size as usize).map(pattern).collect();
    let mut first_failure = None;
    for (op, name) in [
        (Op::Send, "send/recv"),
        (Op::Write, "rdma write"),
        (Op::Read, "rdma read"),
    ] {
        let t = Instant::now();
        match run_op(&mut ep, op, 1, false, &mut peer_image) {
            Ok(r) => {
                let verified = r.verified.unwrap_or_default();
                steps.ok("client", name, verified, t.elapsed());
            }
            Err(e) => {
                steps.failed("client", name, plain_report(&e), t.elapsed());
                first_failure = Some(e);
                break;
            }
        }
    }
    let t = Instant::now();
    match ep.disconnect() {
        Ok(()) => steps.ok("client", "disconnect", "DISCONNECTED".into(), t.elapsed()),
        Err(e) => {
            steps.failed("client", "disconnect", plain_report(&e), t.elapsed());
            first_failure.get_or_insert(e);
        }
    }
    // The server ends once it sees our disconnect, within its own timeout.
    match done_rx.recv_timeout(timeout + SERVER_GRACE) {
        Ok(Err(e)) => first_failure.or(Some(e)),
        Ok(Ok(())) => first_failure,
        Err(_) => {
            let e = Failure::toward_addr(
                Step::CmDisconnect,
                Some(listen_addr),
                Cause::Timeout {
                    waited_ms: (timeout + SERVER_GRACE).as_millis() as u64,
                    waiting_for: Some("the server to see the disconnect"),
                },
            );
            steps.failed("server", "disconnect", plain_report(&e), timeout);
            first_failure.or(Some(e))
        }
    }
}

/// `rxe0`, or `rxe0 <-> rxe1` when the two ends are on two devices.
fn ends(r: &SelftestReport) -> String {
    match (&r.device, &r.peer_device) {
        (Some(a), Some(b)) if a != b => format!("{a} <-> {b}"),
        (a, b) => a.as_ref().or(b.as_ref()).cloned().unwrap_or_default(),
    }
}

fn render_selftest(r: &SelftestReport) -> String {
    let at = |ip: Option<IpAddr>| ip.map_or("?".to_string(), |ip| ip.to_string());
    let mut out = format!(
        "selftest --cm {} port {}, {} -> {}, {} B; the kernel picks the GID{}\n",
        ends(r),
        r.port,
        at(r.client_address),
        at(r.server_address),
        r.size,
        r.gid_index
            .map(|i| format!(" (index {i})"))
            .unwrap_or_default()
    );
    for s in &r.steps {
        let status = if s.ok { "ok  " } else { "FAIL" };
        let step = format!("{} {}", s.side, s.step);
        out.push_str(&format!(
            "  {status} {:>9.3} ms  {step:<25} {}\n",
            s.elapsed_us / 1000.0,
            s.detail
        ));
        if let Some(f) = &s.failure {
            out.push_str(&crate::render::explanation::body(&f.explanation, "       "));
        }
    }
    out.push_str(if r.ok {
        "all steps passed\n"
    } else {
        "FAILED\n"
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::GidType;

    fn args(server: Option<&str>) -> PingpongArgs {
        use clap::Parser;
        let mut argv = vec!["rdmactl", "pingpong", "--cm"];
        argv.extend(server);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Pingpong(a) => a,
            other => panic!("{other:?}"),
        }
    }

    fn conn_info() -> ConnInfo {
        ConnInfo {
            device: "rxe1".into(),
            port: 1,
            local: Some("192.168.77.2:40000".parse().unwrap()),
            peer: "192.168.77.1:18515".parse().unwrap(),
            qpn: 0x11,
            remote_qpn: 0x12,
            sgid_index: 1,
            sgid: crate::model::gid::Gid::parse("::ffff:192.168.77.2").ok(),
            gid_type: Some(GidType::RoceV2),
            path_mtu: 1024,
        }
    }

    /// `pingpong --cm -j` has the TCP exchange's keys, so one script reads both.
    #[test]
    fn client_report_has_the_tcp_shape() {
        let mut report = Report::new("client", &args(Some("192.168.77.1")));
        report.connected(&conn_info());
        report.kernel_choice = Some(Resolution {
            peer: "192.168.77.1".parse().unwrap(),
            source: Some("192.168.77.2".parse().unwrap()),
            device: "rxe1".into(),
            port: 1,
            link_layer: crate::model::device::LinkLayer::Ethernet,
            sgid: crate::model::gid::Gid::parse("::ffff:192.168.77.2").unwrap(),
            gid_index: Some(1),
            gid_type: Some(GidType::RoceV2),
            netdev: Some("veth1".into()),
            other_indices: vec![],
            default_roce_mode: Some(GidType::RoceV2),
            default_roce_mode_set: false,
        });
        report.ops.insert(
            "send",
            op_result(10, 81_920, Duration::from_millis(5), 1, {
                let mut r = LatencyRecorder::new();
                (0..10).for_each(|_| r.record(1000));
                r.latency(1.0)
            }),
        );
        report.single = report.ops.single();
        report.ok = true;
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "role",
            "exchange",
            "device",
            "port",
            "gid_index",
            "peer",
            "size",
            "path_mtu",
            "ops",
            "ok",
            "failure",
            "iters",
            "bytes",
            "seconds",
            "mbit_per_sec",
            "usec_per_iter",
            "latency_usec",
        ] {
            assert!(json.get(key).is_some(), "{key} missing in {json}");
        }
        assert_eq!(json["gid_index"], 1);
        assert_eq!(json["device"], "rxe1");
        assert_eq!(json["ops"]["send"]["iters"], 10);
        let shape = crate::json_schema::mismatches("pingpong_cm", &json);
        assert!(shape.is_empty(), "{shape:#?}");
        assert_eq!(json["ops"]["send"]["latency_usec"]["p50"], 1.0);
        assert!(json["ops"].get("write").is_none());
        assert!(json.get("echoed").is_none(), "server-only key: {json}");

        // The text: ibv_rc_pingpong's lines, as the TCP exchange prints them.
        let text = render(&report, crate::output::Style::plain());
        assert!(
            text.starts_with(
                "  local address:  192.168.77.2:40000, QPN 0x000011, GID \
                 0000:0000:0000:0000:0000:ffff:c0a8:4d02 (index 1, RoCE v2, veth1)\n"
            ),
            "{text}"
        );
        assert!(text.contains("  client rxe1/1 (cm exchange), path MTU 1024, 4096 B messages\n"));
        assert!(
            text.contains("send  81920 bytes in 0.01 seconds = 131.07 Mbit/sec\n"),
            "{text}"
        );
        assert!(text.ends_with("ok\n"), "{text}");
    }

    /// A failed run still reports, with `ok: false` and the failure explained.
    #[test]
    fn failed_report_carries_the_explained_failure() {
        let mut report = Report::new("client", &args(Some("192.168.77.1")));
        report.peer = Some("192.168.77.1:18515".into());
        let err = Failure::toward_addr(
            Step::CmConnect,
            "192.168.77.1:18515".parse().ok(),
            Cause::cm_event(EventKind::Rejected, 8),
        );
        report.failure = Some(plain_report(&err));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["ok"], false);
        assert_eq!(json["connection"], serde_json::Value::Null);
        assert_eq!(json["failure"]["step"], "cm_connect");
        assert_eq!(json["failure"]["explanation"]["code"], "cm-no-listener");
        let shape = crate::json_schema::mismatches("pingpong_cm", &json);
        assert!(shape.is_empty(), "{shape:#?}");
    }

    #[test]
    fn server_report_and_text() {
        let mut report = Report::new("server", &args(None));
        let mut info = conn_info();
        (info.local, info.peer) = (Some(info.peer), info.local.unwrap());
        info.sgid = crate::model::gid::Gid::parse("::ffff:192.168.77.1").ok();
        report.connected(&info);
        report.echoed = Some(6);
        report.stock_client = Some(true);
        report.ok = true;
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["role"], "server");
        assert_eq!(json["echoed"], 6);
        assert_eq!(json["stock_client"], true);
        assert!(json.get("kernel_choice").is_none(), "{json}");
        let shape = crate::json_schema::mismatches("pingpong_cm", &json);
        assert!(shape.is_empty(), "{shape:#?}");
        let text = render(&report, crate::output::Style::plain());
        assert!(
            text.contains(
                "  local address:  192.168.77.1:18515, QPN 0x000011, GID \
                 0000:0000:0000:0000:0000:ffff:c0a8:4d01 (index 1, RoCE v2)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("served a stock client (rping/rdma_client): 6 messages answered\nok\n"),
            "{text}"
        );
    }

    #[test]
    fn selftest_text_explains_the_failed_step() {
        let err = Failure::toward_addr(
            Step::CmResolveAddr,
            "192.168.77.1:40000".parse().ok(),
            Cause::call("rdma_resolve_addr", libc::ENETUNREACH),
        );
        let report = SelftestReport {
            mode: "cm",
            device: Some("rxe0".into()),
            peer_device: Some("rxe0".into()),
            port: 1,
            server_address: "192.168.77.1".parse().ok(),
            client_address: "192.168.77.1".parse().ok(),
            gid_index: None,
            size: 4096,
            steps: vec![
                StepLine {
                    side: "server",
                    step: "listen".into(),
                    ok: true,
                    elapsed_us: 1500.0,
                    detail: "192.168.77.1:40000 on rxe0".into(),
                    failure: None,
                },
                StepLine {
                    side: "client",
                    step: "resolve address".into(),
                    ok: false,
                    elapsed_us: 0.0,
                    detail: err.to_string(),
                    failure: Some(plain_report(&err)),
                },
            ],
            ok: false,
        };
        let text = render_selftest(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "selftest --cm rxe0 port 1, 192.168.77.1 -> 192.168.77.1, 4096 B; the kernel picks the GID"
        );
        assert!(
            lines[1].starts_with("  ok       1.500 ms  server listen"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("  FAIL     0.000 ms  client resolve address"),
            "{text}"
        );
        assert!(
            lines[3].contains("why:  there is no route to 192.168.77.1"),
            "{text}"
        );
        assert!(
            lines[4].contains("fix:  check `ip route get 192.168.77.1`"),
            "{text}"
        );
        assert_eq!(lines.last(), Some(&"FAILED"));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json["steps"][1]["failure"]["explanation"]["code"],
            "cm-no-route"
        );
        assert_eq!(json["steps"][1]["failure"]["errno_name"], "ENETUNREACH");
        let shape = crate::json_schema::mismatches("selftest_cm", &json);
        assert!(shape.is_empty(), "{shape:#?}");
    }

    #[test]
    fn rping_info_messages() {
        let mut msg = [0u8; 16];
        msg[0..8].copy_from_slice(&0x5555_0000_1000u64.to_be_bytes());
        msg[8..12].copy_from_slice(&0x1234u32.to_be_bytes());
        msg[12..16].copy_from_slice(&64u32.to_be_bytes());
        assert_eq!(
            rping_info(&msg),
            Some(cm::RemoteBuffer {
                addr: 0x5555_0000_1000,
                rkey: 0x1234,
                len: 64
            })
        );
        // rdma_client's 16 zero bytes are a plain message to echo, not an rping advert.
        assert_eq!(rping_info(&[0u8; 16]), None);
        assert_eq!(rping_info(&msg[..12]), None);
    }

    #[test]
    fn pattern_checks() {
        let mut buf = vec![0u8; 600];
        fill_pattern(&mut buf);
        let want: Vec<u8> = (0..600).map(pattern).collect();
        assert_eq!(first_difference(&buf, &want), None);
        buf[300] ^= 1;
        assert_eq!(first_difference(&buf, &want), Some(300));
        // Not a constant: a buffer of one repeated byte does not pass.
        assert_ne!(first_difference(&[0x5a; 600], &want), None);
    }

    #[test]
    fn port_address_from_fixture() {
        let root =
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/rxe-veth-basic");
        assert_eq!(
            port_address(root, "rxe0", 1, None).unwrap(),
            "192.168.77.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            port_address(root, "rxe1", 1, None).unwrap(),
            "192.168.77.2".parse::<IpAddr>().unwrap()
        );
        assert!(matches!(
            port_address(root, "mlx5_9", 1, None),
            Err(Error::NoSuchDevice { .. })
        ));
        assert!(matches!(
            port_address(root, "rxe0", 2, None),
            Err(Error::NoSuchPort { .. })
        ));
    }

    /// An InfiniBand port has no IPv4 GID: its address is on the IPoIB interface, and
    /// without one the CM cannot work, said before the CM is asked.
    #[test]
    fn port_address_on_infiniband_without_ipoib_address() {
        let root = &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/ib-hca");
        // The address comes from this host's interfaces; a host with a real ib0 answers
        // for itself.
        if matches!(net::netdev("ib0"), Ok(Some(_))) {
            eprintln!("skipped: this host has an ib0 of its own");
            return;
        }
        let Err(Error::Failure(e)) = port_address(root, "mlx5_0", 1, None) else {
            panic!("an IB port without IPoIB address must fail");
        };
        assert!(e.is_infiniband());
        let x = plain_report(&e).explanation;
        assert_eq!(x.code, "cm-no-ipoib-address");
        assert!(
            e.to_string().contains("mlx5_0/1): no IP address on ib0"),
            "{}",
            e
        );
        assert!(
            x.fix.contains("ip addr add ADDR/PREFIX dev ib0"),
            "{}",
            x.fix
        );
    }
}
