//! `pingpong --cm` and `selftest --cm`: the same ping-pong as the TCP exchange, but
//! connected through the RDMA connection manager, so the kernel picks device, port and GID
//! from the route to the peer. `check --peer` asks the kernel the same question
//! (`cmd::check_kernel`).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{Op, PingpongArgs};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::verbs::cm::{
    self, CmOp, ConnInfo, ConnectOptions, Listener, Resolution, StepDone,
};
use crate::model::diagnostic::FailureReport;
use crate::model::results::{OpResult, OpResults};
use crate::output;
use crate::render;

mod address;
mod explain;
mod serve;
mod transfer;

pub(crate) use address::{first_device, port_address};
use explain::with_net_evidence;
pub(crate) use explain::{explain_cm, plain_report};
pub(crate) use serve::serve;
pub(crate) use transfer::run_op;

/// How long a server waits for its first client: long enough to walk to the other host,
/// short enough that a forgotten server does not sit there for ever.
pub(crate) const SERVER_WAIT: Duration = Duration::from_secs(600);

/// The TCP exchange's report shape (role, exchange, device, port, gid_index, peer, size,
/// path_mtu, `ops`, a single op's figures repeated at the top level, ok, failure), plus
/// what the CM set up and, on the client, what the kernel chose.
#[derive(Debug, Serialize)]
pub struct CmPingpongReport {
    pub(crate) role: &'static str,
    pub(crate) exchange: &'static str,
    pub(crate) device: String,
    pub(crate) port: u32,
    pub(crate) gid_index: Option<u8>,
    pub(crate) peer: Option<String>,
    pub(crate) size: u32,
    pub(crate) path_mtu: Option<u32>,
    pub(crate) ops: OpResults,
    #[serde(flatten)]
    pub(crate) single: Option<OpResult>,
    /// Server: messages answered, and whether the client was a stock tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) echoed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stock_client: Option<bool>,
    pub(crate) connection: Option<ConnInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kernel_choice: Option<Resolution>,
    /// What moved on this end's port over the transfer (the client's; the CM exchange
    /// carries no counters between the ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) counters: Option<crate::model::results::RunCounters>,
    pub(crate) ok: bool,
    pub(crate) failure: Option<FailureReport>,
}

/// Where a finished report goes (the command prints it; in text, only once connected).
pub type CmShow<'a> = dyn FnMut(&CmPingpongReport) -> Result<()> + 'a;

impl CmPingpongReport {
    pub(crate) fn new(role: &'static str, args: &PingpongArgs) -> CmPingpongReport {
        CmPingpongReport {
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

    /// What the text report shows.
    pub fn view(&self) -> render::pingpong::CmView<'_> {
        let connection = self
            .connection
            .as_ref()
            .map(|c| render::pingpong::CmConnectionView {
                device: &c.device,
                port: c.port,
                local: c.local,
                peer: c.peer,
                qpn: c.qpn,
                remote_qpn: c.remote_qpn,
                sgid_index: c.sgid_index,
                sgid: c.sgid,
                gid_type: c.gid_type.as_ref(),
                netdev: self
                    .kernel_choice
                    .as_ref()
                    .and_then(|k| k.netdev.as_deref()),
                path_mtu: c.path_mtu,
            });
        render::pingpong::CmView {
            role: self.role,
            size: self.size,
            connection,
            ops: &self.ops,
            counters: self.counters.as_ref(),
            echoed: self.echoed,
            stock_client: self.stock_client,
            ok: self.ok,
        }
    }

    pub(crate) fn connected(&mut self, info: &ConnInfo) {
        self.device = info.device.clone();
        self.port = u32::from(info.port);
        self.gid_index = Some(info.sgid_index);
        self.peer = Some(info.peer.to_string());
        self.path_mtu = Some(info.path_mtu);
        self.connection = Some(info.clone());
    }
}

/// The byte every side expects at offset `i` of a test buffer, so data is checked end to end.
pub(crate) fn pattern(i: usize) -> u8 {
    (i % 251) as u8 ^ 0x5a
}

pub(crate) fn fill_pattern(buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(i);
    }
}

pub(crate) fn first_difference(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter().zip(want).position(|(g, w)| g != w)
}

pub(crate) fn timeout_of(secs: f64) -> Result<Duration> {
    if !(secs.is_finite() && secs > 0.0 && secs < 86_400.0) {
        return Err(Error::Usage(format!(
            "--timeout {secs}: give a number of seconds between 0 and 86400"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub(crate) fn peer_addr(server: &str, port: u16) -> Result<SocketAddr> {
    let ip = crate::gather::failure::resolve_peer(server, port)?;
    crate::gather::failure::refuse_special_peer(ip)?;
    Ok(SocketAddr::new(ip, port))
}

pub(crate) fn quiet(_: StepDone) {}

/// `pingpong --cm`: client with SERVER, server without.
pub fn run(ctx: &Ctx, args: &PingpongArgs, show: &mut CmShow) -> Result<u8> {
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
            let mut report = CmPingpongReport::new("client", args);
            report.peer = Some(peer.to_string());
            let outcome = source().and_then(|src| {
                client(&ctx.sysfs, args, peer, src, timeout, &mut report)
                    .map_err(|e| with_net_evidence(e, src, &ctx.sysfs))
            });
            finish(ctx, show, report, outcome)
        }
        None => {
            let mut report = CmPingpongReport::new("server", args);
            let outcome = source().and_then(|src| server(args, src, timeout, &mut report));
            finish(ctx, show, report, outcome)
        }
    }
}

/// Shows the report, with the failure explained, and turns it into the exit status. A
/// usage error, or a run that failed before the CM could tell anything, shows no report.
pub(crate) fn finish(
    ctx: &Ctx,
    show: &mut CmShow,
    mut report: CmPingpongReport,
    outcome: Result<()>,
) -> Result<u8> {
    let failure = match outcome {
        Ok(()) => None,
        Err(Error::Explained(r)) if r.exit_code() == exit::FAILED => Some(*r),
        Err(Error::Failure(f)) if !f.is_missing_stack() => Some(explain_cm(*f, None, &ctx.sysfs)),
        Err(other) => return Err(other),
    };
    report.ok = failure.is_none();
    report.single = report.ops.single();
    report.failure = failure.clone();
    show(&report)?;
    match failure {
        // The -j report carries it; in text the summary, why and fix go to stderr once.
        Some(r) if ctx.json => Err(Error::Reported(r.exit_code())),
        Some(r) => Err(Error::Explained(Box::new(r))),
        None => Ok(exit::OK),
    }
}

pub(crate) fn client(
    sysfs: &Path,
    args: &PingpongArgs,
    peer: SocketAddr,
    src: Option<IpAddr>,
    timeout: Duration,
    report: &mut CmPingpongReport,
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
    let ops: &[CmOp] = match args.op.unwrap_or(Op::All) {
        Op::Send => &[CmOp::Send],
        Op::Write => &[CmOp::Write],
        Op::Read => &[CmOp::Read],
        Op::All => &[CmOp::Send, CmOp::Write, CmOp::Read],
    };
    // On stderr even with --json, as the server's "listening" line: a long run shows it got
    // this far, and scripts can wait for it before disturbing the connection.
    let names: Vec<&str> = ops.iter().map(|op| op.name()).collect();
    output::note(&render::pingpong::cm_connected(
        peer,
        &ep.info.device,
        ep.info.port,
        ep.info.sgid_index,
        &names,
        iters,
        args.size(),
    ));
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
    report.counters =
        crate::traffic::counters::judge(watch.stop(), None, u64::from(iters) * ops.len() as u64);
    ep.disconnect()?;
    Ok(())
}

pub(crate) fn server(
    args: &PingpongArgs,
    src: Option<IpAddr>,
    timeout: Duration,
    report: &mut CmPingpongReport,
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
    output::note(&render::pingpong::cm_listening(
        listener.local_addr().unwrap_or(addr),
        listener.device().as_deref(),
    ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::device::GidType;
    use crate::model::failure::{Cause, EventKind, Failure, Step};
    use crate::model::results::{op_result, LatencyRecorder};

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
        let mut report = CmPingpongReport::new("client", &args(Some("192.168.77.1")));
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
        let text = render::pingpong::cm(&report.view(), crate::output::Style::plain());
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
        let mut report = CmPingpongReport::new("client", &args(Some("192.168.77.1")));
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
        let mut report = CmPingpongReport::new("server", &args(None));
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
        let text = render::pingpong::cm(&report.view(), crate::output::Style::plain());
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
}
