//! `pingpong --cm`: the same ping-pong as the TCP exchange, but connected through the RDMA
//! connection manager, so the kernel picks device, port and GID from the route to the
//! peer. `check --peer` asks the kernel the same question (`diagnose::kernel_choice`). The
//! client and server sessions are here; `selftest --cm` (`traffic::selftest::cm`) uses
//! their parts: the port's address, the transfer, the echo server and the explanation.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use crate::cli::{Op, PingpongArgs};
use crate::ctx::Ctx;
use crate::diagnose::cm::CmStall;
use crate::error::{Error, Result};
use crate::exit;
use crate::gather::verbs::cm::{self, CmEndpoint, CmOp, ConnectOptions, Listener, StepDone};
use crate::model::failure::{Cause, Failure, Step};
use crate::output;
use crate::render;

mod address;
mod explain;
mod notice;
mod report;
mod serve;
mod transfer;

pub(crate) use address::{first_device, port_address};
use explain::with_net_evidence;
pub(crate) use explain::{explain_cm, plain_report};
pub use report::{CmPingpongReport, CmShow};
pub(crate) use serve::{serve, Served};
pub(crate) use transfer::run_op;

/// How long a server waits for its first client: long enough to walk to the other host,
/// short enough that a forgotten server does not sit there for ever.
pub(crate) const SERVER_WAIT: Duration = Duration::from_secs(600);

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
    if args.on.device.is_none() && args.bind.is_none() && args.on.port != 1 {
        return Err(Error::Usage(format!(
            "-i {}: with --cm a port is named with -d (its address is bound); without -d the kernel picks device and port from the route",
            args.on.port
        )));
    }
    // The CM binds an address, not a device: -d stands for its port's address.
    let peer = match &args.server {
        Some(server) => Some(peer_addr(server, args.tcp_port)?),
        None => None,
    };
    if let Some(dev) = &args.on.device {
        crate::gather::inventory::device_port(&ctx.sysfs, Some(dev), args.on.port)?;
    }
    let source = || -> Result<Option<IpAddr>> {
        Ok(match (args.bind, &args.on.device) {
            (Some(ip), _) => Some(ip),
            (None, Some(dev)) => Some(port_address(
                &ctx.sysfs,
                dev,
                args.on.port,
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
            let outcome =
                source().and_then(|src| server(&ctx.sysfs, args, src, timeout, &mut report));
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
        // A run a signal stopped (130, 143) shows its report too, with what it measured.
        Err(Error::Explained(r)) if r.exit_code() == exit::FAILED || r.exit_code() > 128 => {
            Some(*r)
        }
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
    if let Some(dev) = &args.on.device {
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
    )
    .with_qos();
    // From here on a first Ctrl-C stops the run with what it measured, and tells the server.
    crate::interrupt::catch();
    let mut failed = None;
    for op in ops {
        match run_op(
            &mut ep,
            *op,
            iters,
            args.lat,
            &mut peer_image,
            &mut report.ops,
        ) {
            Ok(result) => report.ops.insert(op.name(), result),
            Err(f) => {
                failed = Some(f);
                break;
            }
        }
    }
    // The counters of a failed run too: that is where they help most.
    let mix = crate::model::counter::TrafficMix {
        sends: report
            .ops
            .iter()
            .find(|(n, _)| *n == "send")
            .map_or(0, |(_, r)| 2 * r.iters),
        reads: report.ops.iter().any(|(n, _)| n == "read"),
        rnr_on_purpose: false,
    };
    report.counters = crate::traffic::counters::judge(watch.stop(), None, mix);
    // rdma_cm's default traffic class is not read here (that takes a configfs group).
    crate::traffic::counters::add_qos(&mut report.counters, Some(&watch), None);
    let Some(f) = failed else {
        notice::tell(&mut ep, notice::InBand::Done);
        ep.disconnect()?;
        return Ok(());
    };
    // The server's word may still be in the CQ behind a disconnect seen first.
    let f = match (&f.cause, notice::last_word(&mut ep)) {
        (Cause::CmEvent { .. }, Some(notice::InBand::Interrupted { signal })) => {
            let notice = Box::new(notice::interrupted_notice("server", signal));
            ep.err(Step::CmTransfer, Cause::PeerReported { notice })
        }
        _ => f,
    };
    match f.cause {
        Cause::Interrupted { signal } => {
            notice::tell(&mut ep, notice::InBand::Interrupted { signal });
            Err(f.into())
        }
        // A completion that did not come, or came with an error (rxe's retries ran out):
        // what changed is looked for on both ends.
        Cause::Timeout { .. } | Cause::WcStatus { .. } => Err(stalled(&ep, f, peer, src, sysfs)),
        _ => Err(f.into()),
    }
}

/// A transfer that timed out: this end's port re-read, and the server asked for its own
/// in a probe (which also tells it ours), so the explanation rests on both.
fn stalled(
    ep: &CmEndpoint,
    f: Failure,
    peer: SocketAddr,
    src: Option<IpAddr>,
    sysfs: &Path,
) -> Error {
    let here = notice::port_seen(ep, "client", Some(sysfs));
    let text = notice::encode_port(&here);
    let opts = ConnectOptions {
        src,
        len: 1,
        timeout: notice::PROBE_WAIT,
    };
    let answer = cm::probe(peer, &opts, &text).ok().flatten();
    let stall = CmStall {
        here,
        peer: answer
            .as_deref()
            .and_then(|a| notice::decode_port(a, "server")),
        peer_answered: Some(answer.is_some()),
    };
    let facts = crate::model::facts::Facts {
        cm_source: src,
        ..Default::default()
    };
    Error::Explained(Box::new(notice::explain_stalled(&f, &stall, &facts)))
}

pub(crate) fn server(
    sysfs: &Path,
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
    if let (Some(dev), Some(bound)) = (&args.on.device, listener.device()) {
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
    // From here on a first Ctrl-C stops serving and tells the client; before, one Ctrl-C
    // ends a server that waits.
    crate::interrupt::catch();
    let mut served = Served::default();
    let outcome = serve(&mut ep, &listener, &mut served);
    report.echoed = Some(served.echoed);
    match outcome {
        Ok(()) => {
            ep.disconnect()?;
            Ok(())
        }
        // The client went away before its end of run, or stopped answering: what this
        // end's port looks like now, and what the client said of its own in a probe.
        Err(f)
            if matches!(
                f.cause,
                Cause::CmEvent { .. } | Cause::Timeout { .. } | Cause::WcStatus { .. }
            ) =>
        {
            let here = notice::port_seen(&ep, "server", Some(sysfs));
            if !matches!(f.cause, Cause::CmEvent { .. }) {
                serve::linger(&mut ep, &listener, &mut served);
            }
            let stall = CmStall {
                here,
                peer: served.client_port.take(),
                peer_answered: None,
            };
            let facts = crate::model::facts::Facts {
                cm_source: src,
                ..Default::default()
            };
            Err(Error::Explained(Box::new(notice::explain_stalled(
                &f, &stall, &facts,
            ))))
        }
        Err(f) => Err(f.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
